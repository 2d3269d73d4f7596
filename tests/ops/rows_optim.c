/* paddle.c — op test rows: the multi-tensor optimizer ops (sgd_update,
 * adam_update, grad_sumsq, grad_scale, amp_unscale).
 *
 * The ops write their inputs, and a row runs twice on the same inputs (CPU,
 * then the reference): each run writes into clones, and the row's result is
 * every written tensor (and the output) flattened, cast to a common float
 * dtype and concatenated. Updates cover one and two params per call, f32
 * params and bf16/f16 params with f32 masters, SGD with and without
 * momentum (nesterov, the first step), Adam with L2 decay and AdamW with
 * amsgrad, and tensors past one block (2048) and past the parallel grain.
 * Not differentiable: no gradcheck.
 */
#include <math.h>

#include <stdlib.h>

#include "ops/harness.h"

#define F32IN(lo_, hi_, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FIXED, .lo = lo_, .hi = hi_, .dtype = PD_F32}
#define LOWP ((1u << PD_BF16) | (1u << PD_F16))

/* Clones of in[0..n) (the op writes them; the row runs twice). */
static void clones(struct pd_tensor **in, int n, struct pd_tensor **out)
{
    for (int i = 0; i < n; i++) out[i] = pd_clone(in[i]);
}

/* t[0..n) flattened, cast to dt and concatenated. */
static struct pd_tensor *cat(struct pd_tensor *const *t, int n, enum pd_dtype dt)
{
    struct pd_tensor *f[8];
    for (int i = 0; i < n; i++) f[i] = pd_cast(pd_reshape(t[i], (int64_t[]){-1}, 1), dt);
    return pd_concat(f, n, 0);
}

/* Runs op on clones of in[0..n) and returns the written inputs (the first
 * n - n_grads) as one f32 vector. */
static struct pd_tensor *update(enum pd_op op, struct pd_tensor **in, int n, int n_grads, const struct pdi_attrs *a)
{
    struct pd_tensor *c[OPT_MAX_IN];
    clones(in, n, c);
    struct pdi_call call = {.op = op, .n_in = n, .n_out = 0, .in = c, .a = *a};
    if (pdi_dispatch(&call)) return NULL;
    return cat(c, n - n_grads, PD_F32);
}

static struct pd_tensor *f_sgd_plain(struct pd_tensor **in)
{
    struct pdi_attrs a = {.sgd_update = {.lr = 0.1, .weight_decay = 0.01}};
    return update(PD_OP_sgd_update, in, 2, 1, &a);
}
static struct pd_tensor *f_sgd_momentum_2(struct pd_tensor **in)
{
    struct pdi_attrs a = {.sgd_update = {.lr = 0.05, .weight_decay = 0.1, .momentum = 0.9, .dampening = 0.1}};
    return update(PD_OP_sgd_update, in, 6, 2, &a);
}
static struct pd_tensor *f_sgd_nesterov_master(struct pd_tensor **in)
{
    struct pdi_attrs a = {.sgd_update = {.lr = 0.05, .has_master = 1, .momentum = 0.9, .nesterov = 1, .first_step = 1}};
    return update(PD_OP_sgd_update, in, 4, 1, &a);
}

/* Adam's scalars at step `step`, as src/optim/optim.c computes them. */
static struct pdi_attrs adam_attrs(double lr, double wd, int decoupled, int amsgrad, int has_master, int step)
{
    struct pdi_attrs a = {.adam_update = {.lr = lr, .weight_decay = wd, .has_master = has_master, .beta1 = 0.9,
                                          .beta2 = 0.999, .eps = 1e-8, .decoupled_weight_decay = decoupled,
                                          .amsgrad = amsgrad}};
    a.adam_update.step_size = lr / (1 - pow(0.9, step));
    a.adam_update.bias_correction2_rsqrt = 1 / sqrt(1 - pow(0.999, step));
    return a;
}
static struct pd_tensor *f_adamw_amsgrad(struct pd_tensor **in)
{
    struct pdi_attrs a = adam_attrs(1e-2, 0.1, 1, 1, 0, 3);
    return update(PD_OP_adam_update, in, 5, 1, &a);
}
static struct pd_tensor *f_adam_l2_master(struct pd_tensor **in)
{
    struct pdi_attrs a = adam_attrs(1e-3, 0.01, 0, 0, 1, 1);
    return update(PD_OP_adam_update, in, 5, 1, &a);
}
static struct pd_tensor *f_adam_2(struct pd_tensor **in)
{
    struct pdi_attrs a = adam_attrs(3e-3, 0, 0, 0, 0, 10);
    /* planes of two params: p0 p1 | m0 m1 | v0 v1 | g0 g1 (8 tensors from 4:
     * the second param is the first's negation) */
    struct pd_tensor *x[8] = {in[0], pd_neg(in[0]), in[1], pd_neg(in[1]), in[2], pd_scale(in[2], 0.5), in[3], pd_neg(in[3])};
    for (int i = 0; i < 8; i++) x[i] = pd_clone(x[i]);
    struct pdi_call call = {.op = PD_OP_adam_update, .n_in = 8, .n_out = 0, .in = x, .a = a};
    if (pdi_dispatch(&call)) return NULL;
    return cat(x, 6, PD_F32);
}

static enum pd_dtype wide(enum pd_dtype dt) { return dt == PD_F64 ? PD_F64 : PD_F32; }

static struct pd_tensor *f_sumsq(struct pd_tensor **in)
{
    struct pd_tensor *out[1];
    struct pdi_call call = {.op = PD_OP_grad_sumsq, .n_in = 3, .n_out = 1, .in = in, .out = out};
    return pdi_dispatch(&call) ? NULL : out[0];
}
static struct pd_tensor *f_scale(struct pd_tensor **in)
{
    struct pd_tensor *c[3];
    clones(in, 3, c);
    struct pdi_call call = {.op = PD_OP_grad_scale, .n_in = 3, .n_out = 0, .in = c, .a = {.grad_scale = {.scale = 0.37}}};
    return pdi_dispatch(&call) ? NULL : cat(c, 3, wide(in[0]->dtype));
}
/* amp_unscale on clones (input 2 only checked; with inf, its element 1 is
 * +inf); the result is found_inf then the three inputs. */
static struct pd_tensor *unscale(struct pd_tensor **in, int inf)
{
    struct pd_tensor *c[4], *out[1];
    clones(in, 3, c);
    if (inf) { /* element 1 becomes +inf, by an op (the inputs may be distributed: tests/dist/ops) */
        int64_t n = pd_tensor_numel(c[2]);
        double *v = calloc((size_t)n, sizeof *v);
        v[1] = INFINITY;
        struct pd_tensor *d = pd_cast(pd_from_buffer(v, c[2]->shape, c[2]->ndim, PD_F64), c[2]->dtype);
        free(v);
        c[2] = pd_add(c[2], d);
    }
    struct pdi_call call = {.op = PD_OP_amp_unscale, .n_in = 3, .n_out = 1, .in = c, .out = out,
                            .a = {.amp_unscale = {.inv_scale = 1.0 / 1024, .n_inplace = 2}}};
    if (pdi_dispatch(&call)) return NULL;
    c[3] = c[2];
    c[2] = c[1];
    c[1] = c[0];
    c[0] = out[0];
    return cat(c, 4, wide(in[0]->dtype));
}
static struct pd_tensor *f_unscale(struct pd_tensor **in) { return unscale(in, 0); }
static struct pd_tensor *f_unscale_inf(struct pd_tensor **in) { return unscale(in, 1); }

#define ONE (1u << PD_F32)
static const struct opt_row rows[] = {
    {"sgd_update/plain", PD_OP_sgd_update, 2, {OPT_F(3, 5), OPT_F(3, 5)}, f_sgd_plain, ONE, .no_gradcheck = 1},
    {"sgd_update/momentum_2params", PD_OP_sgd_update, 6,
     {OPT_F(3, 5), OPT_F(7), OPT_F(3, 5), OPT_F(7), OPT_F(3, 5), OPT_F(7)}, f_sgd_momentum_2, ONE, .no_gradcheck = 1},
    {"sgd_update/nesterov_master_big", PD_OP_sgd_update, 4,
     {OPT_F(200, 200), F32IN(-2, 2, 200, 200), F32IN(-2, 2, 200, 200), OPT_F(200, 200)}, f_sgd_nesterov_master, LOWP,
     .no_gradcheck = 1},
    {"adam_update/adamw_amsgrad_blocks", PD_OP_adam_update, 5,
     {OPT_F(5000), OPT_F(5000), OPT_FR(0, 1, 5000), OPT_FR(0, 2, 5000), OPT_F(5000)}, f_adamw_amsgrad, ONE,
     .no_gradcheck = 1},
    {"adam_update/adam_l2_master_big", PD_OP_adam_update, 5,
     {OPT_F(40000), F32IN(-2, 2, 40000), F32IN(-1, 1, 40000), F32IN(0, 1, 40000), OPT_F(40000)}, f_adam_l2_master,
     LOWP, .no_gradcheck = 1},
    {"adam_update/2params", PD_OP_adam_update, 4, {OPT_F(4, 6), OPT_F(4, 6), OPT_FR(0, 1, 4, 6), OPT_F(4, 6)}, f_adam_2,
     ONE, .no_gradcheck = 1},
    {"grad_sumsq/three", PD_OP_grad_sumsq, 3, {OPT_F(3, 5), OPT_F(70000), OPT_F0}, f_sumsq, OPT_DT_FLOW,
     .no_gradcheck = 1},
    {"grad_scale/three", PD_OP_grad_scale, 3, {OPT_F(3, 5), OPT_F(40000), OPT_F0}, f_scale, OPT_DT_FLOW,
     .no_gradcheck = 1},
    {"amp_unscale/finite", PD_OP_amp_unscale, 3, {OPT_F(3, 5), OPT_F(9000), OPT_F(4)}, f_unscale, OPT_DT_FLOW,
     .no_gradcheck = 1},
    {"amp_unscale/inf", PD_OP_amp_unscale, 3, {OPT_F(3, 5), OPT_F(9000), OPT_F(4)}, f_unscale_inf, OPT_DT_FLOW,
     .no_gradcheck = 1},
};

int opt_rows_optim(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
