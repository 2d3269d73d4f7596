/* paddle.c — the multi-tensor ops of the optimizers, gradient clipping and
 * the loss scaler: sgd_update, adam_update, grad_sumsq, grad_scale,
 * amp_unscale (rows and input layouts in src/ops/ops_optim.def).
 *
 * Only infer functions live here: they validate everything the kernels
 * rely on (dtypes, shapes, contiguity, the plane layout of the updates) and
 * declare the written inputs (c->n_writes, a prefix of the inputs). The
 * callers are src/optim/optim.c, src/optim/clip.c and src/amp/scaler.c.
 */
#include <string.h>

#include "core/internal.h"

static int same_shape(const struct pd_tensor *a, const struct pd_tensor *b)
{
    return a->ndim == b->ndim && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
}

static int check_float_inputs(const struct pdi_call *c)
{
    const char *op = pdi_ops[c->op].name;
    if (c->n_in < 1) return pdi_errorf(PD_ERR_INVALID, "%s: needs at least one tensor", op);
    for (int i = 0; i < c->n_in; i++) {
        const struct pd_tensor *t = c->in[i];
        if (!pd_dtype_is_float(t->dtype))
            return pdi_errorf(PD_ERR_INVALID, "%s: input %d has dtype %s; expected a float dtype", op, i,
                              pd_dtype_name(t->dtype));
        if (!pd_tensor_is_contiguous(t)) return pdi_errorf(PD_ERR_INVALID, "%s: input %d is not contiguous", op, i);
    }
    return PD_OK;
}

/* An update's inputs are planes of N tensors: params, [masters], n_state
 * state planes, grads. Checks the layout and declares every plane but the
 * grads written. */
static int infer_update(struct pdi_call *c, int has_master, int n_state)
{
    const char *op = pdi_ops[c->op].name;
    int k = 2 + has_master + n_state;
    if (c->n_in < k || c->n_in % k)
        return pdi_errorf(PD_ERR_INVALID, "%s: expected N params, %sN per state plane (%d) and N grads: %d inputs is not a multiple of %d",
                          op, has_master ? "N masters, " : "", n_state, c->n_in, k);
    int n = c->n_in / k;
    for (int j = 0; j < n; j++) {
        const struct pd_tensor *p = c->in[j], *g = c->in[(k - 1) * n + j];
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        if (has_master ? p->dtype != PD_BF16 && p->dtype != PD_F16 : p->dtype != PD_F32)
            return pdi_errorf(PD_ERR_INVALID, "%s: param %d has dtype %s; expected %s", op, j, pd_dtype_name(p->dtype),
                              has_master ? "bf16 or f16 (has_master)" : "f32");
        if (g->dtype != PD_F32 && g->dtype != PD_BF16 && g->dtype != PD_F16)
            return pdi_errorf(PD_ERR_INVALID, "%s: grad %d has dtype %s; expected f32, bf16 or f16", op, j,
                              pd_dtype_name(g->dtype));
        for (int s = 0; s < k; s++) {
            const struct pd_tensor *t = c->in[s * n + j];
            if (!pd_tensor_is_contiguous(t))
                return pdi_errorf(PD_ERR_INVALID, "%s: input %d (plane %d of param %d) is not contiguous", op, s * n + j, s, j);
            if (!same_shape(t, p))
                return pdi_errorf(PD_ERR_INVALID, "%s: input %d (plane %d) has shape %s, param %d %s", op, s * n + j, s,
                                  pdi_shape_str(t->shape, t->ndim, b0, sizeof b0), j,
                                  pdi_shape_str(p->shape, p->ndim, b1, sizeof b1));
            if (s > 0 && s < k - 1 && t->dtype != PD_F32)
                return pdi_errorf(PD_ERR_INVALID, "%s: input %d (plane %d of param %d) has dtype %s; masters and state are f32",
                                  op, s * n + j, s, j, pd_dtype_name(t->dtype));
            /* one param's tensors are distinct memory: the kernel reads a
             * block of each before it writes */
            for (int r = 0; r < s; r++)
                if (c->in[r * n + j]->st == t->st)
                    return pdi_errorf(PD_ERR_INVALID, "%s: inputs %d and %d share storage", op, r * n + j, s * n + j);
        }
    }
    c->n_writes = (k - 1) * n;
    return PD_OK;
}

int pdi_infer_sgd_update(struct pdi_call *c)
{
    const struct pdi_attrs_sgd_update *a = &c->a.sgd_update;
    return infer_update(c, a->has_master != 0, a->momentum != 0);
}

int pdi_infer_adam_update(struct pdi_call *c)
{
    const struct pdi_attrs_adam_update *a = &c->a.adam_update;
    return infer_update(c, a->has_master != 0, 2 + (a->amsgrad != 0));
}

int pdi_infer_grad_sumsq(struct pdi_call *c)
{
    int rc = check_float_inputs(c);
    if (rc) return rc;
    c->meta[0].dtype = PD_F64;
    c->meta[0].ndim = 0;
    return PD_OK;
}

int pdi_infer_grad_scale(struct pdi_call *c)
{
    int rc = check_float_inputs(c);
    if (rc) return rc;
    c->n_writes = c->n_in;
    return PD_OK;
}

int pdi_infer_amp_unscale(struct pdi_call *c)
{
    int rc = check_float_inputs(c);
    if (rc) return rc;
    int64_t k = c->a.amp_unscale.n_inplace;
    if (k < 0 || k > c->n_in)
        return pdi_errorf(PD_ERR_INVALID, "amp_unscale: n_inplace %lld out of range for %d inputs", (long long)k, c->n_in);
    c->n_writes = (int)k;
    c->meta[0].dtype = PD_F32;
    c->meta[0].ndim = 0;
    return PD_OK;
}
