/* paddle.c — gradient clipping by global norm, and the two gradient passes
 * it shares with the fp16 grad scaler (src/amp/scaler.c): the sum of squares
 * of the gradients, and scaling the gradients in place.
 *
 * Both are multi-tensor ops (grad_sumsq, grad_scale; src/ops/ops_optim.def)
 * over every gradient at once, so observers and tracers see them; the norm
 * reaches the host through one read of grad_sumsq's 0-d result. The sum of
 * squares is accumulated in f64 over fixed blocks whose partial sums are
 * added in order, so the norm does not depend on the thread count.
 *
 * Scaling writes into a gradient's memory only when the gradient owns it
 * (pdi_grad_owned); otherwise the leaf's .grad is replaced by a scaled copy
 * (pd_scale), so a gradient that aliases another tensor (or is a broadcast
 * view with stride 0) is never written through.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "optim/optim_internal.h"

int pdi_grad_owned(const struct pd_tensor *g)
{
    return pd_tensor_is_contiguous(g) && g->st->refcount == 1 && g->refcount == 1 &&
           (g->dtype == PD_F32 || g->dtype == PD_F64);
}

int pdi_grad_scale_copy(struct pd_tensor *leaf, double coef)
{
    int prev = pd_no_grad_begin();
    int scope_tok = pd_scope_begin();
    struct pd_tensor *ng = pd_scale(leaf->grad, coef);
    if (ng) {
        pd_tensor_retain(ng);
        pd_tensor_release(leaf->grad);
        leaf->grad = ng;
    }
    pd_scope_end(scope_tok);
    pd_grad_mode_end(prev);
    return ng ? PD_OK : pd_last_status();
}

/* Sum of squares of the gradients of params[0..n) (those that have one),
 * through one grad_sumsq op; -1 with the error set on failure. */
static double grads_sumsq(struct pd_tensor *const *params, int n)
{
    struct pd_tensor **g = pdi_malloc(sizeof *g * (size_t)(n + 1));
    if (!g) { pdi_errorf(PD_ERR_NOMEM, "clip_grad_norm: out of memory"); return -1; }
    int ng = 0, rc = PD_OK;
    double ss = 0;
    int prev = pd_no_grad_begin();
    int scope_tok = pd_scope_begin(); /* contiguous copies of strided gradients, the result */
    for (int i = 0; i < n && !rc; i++) {
        struct pd_tensor *t = params[i]->grad;
        if (!t) continue;
        if (!pd_tensor_is_contiguous(t) && !(t = pd_contiguous(t))) rc = pd_last_status();
        g[ng++] = t;
    }
    if (!rc && ng) {
        struct pd_tensor *out[1];
        struct pdi_call c = {.op = PD_OP_grad_sumsq, .n_in = ng, .n_out = 1, .in = g, .out = out};
        rc = pdi_dispatch(&c);
        if (!rc) rc = pdi_host_scalar(out[0], "clip_grad_norm", &ss); /* the one host read */
    }
    pd_scope_end(scope_tok);
    pd_grad_mode_end(prev);
    free(g);
    return rc ? -1 : ss;
}

/* Every gradient of params[0..n) times coef: the owned ones in place by one
 * grad_scale op, the others by pdi_grad_scale_copy; status. */
static int grads_scale_(struct pd_tensor *const *params, int n, double coef)
{
    /* owned gradients first, then the leaves whose gradient is replaced by
     * a scaled copy (bf16/f16, views, shared storage); both lists are made
     * before anything changes */
    struct pd_tensor **g = pdi_malloc(sizeof *g * (size_t)(2 * n + 1));
    if (!g) return pdi_errorf(PD_ERR_NOMEM, "clip_grad_norm: out of memory");
    struct pd_tensor **copy = g + n;
    int ng = 0, nc = 0, rc = PD_OK;
    for (int i = 0; i < n; i++) {
        if (!params[i]->grad) continue;
        if (pdi_grad_owned(params[i]->grad)) g[ng++] = params[i]->grad;
        else copy[nc++] = params[i];
    }
    if (ng) {
        int prev = pd_no_grad_begin();
        struct pdi_call c = {.op = PD_OP_grad_scale, .n_in = ng, .n_out = 0, .in = g};
        c.a.grad_scale.scale = coef;
        rc = pdi_dispatch(&c);
        pd_grad_mode_end(prev);
    }
    for (int i = 0; i < nc && !rc; i++) rc = pdi_grad_scale_copy(copy[i], coef);
    free(g);
    return rc;
}

double pd_clip_grad_norm_tensors(struct pd_tensor *const *params, int n, double max_norm)
{
    if (n < 0) { pdi_errorf(PD_ERR_INVALID, "clip_grad_norm: negative count %d", n); return -1; }
    if (!params && n > 0) { pdi_errorf(PD_ERR_NULL, "clip_grad_norm: NULL parameter list"); return -1; }
    if (!(max_norm >= 0)) { pdi_errorf(PD_ERR_INVALID, "clip_grad_norm: max_norm must be >= 0, got %g", max_norm); return -1; }
    for (int i = 0; i < n; i++)
        if (!params[i]) { pdi_errorf(PD_ERR_NULL, "clip_grad_norm: parameter %d is NULL", i); return -1; }
    if (pdi_dist_hooks && pdi_dist_hooks->sync_grads()) return -1; /* reductions in flight */
    double ss = grads_sumsq(params, n);
    if (ss < 0) return -1;
    double norm = sqrt(ss);
    if (!isfinite(norm)) return norm; /* grads untouched: the caller skips the step */
    double coef = max_norm / (norm + 1e-6);
    if (coef < 1 && grads_scale_(params, n, coef)) return -1;
    return norm;
}

double pd_clip_grad_norm(const struct pd_state_dict *params, double max_norm)
{
    if (!params) { pdi_errorf(PD_ERR_NULL, "clip_grad_norm: NULL state dict"); return -1; }
    int n = pd_state_dict_size(params);
    struct pd_tensor **t = pdi_malloc(sizeof *t * (size_t)(n + 1));
    if (!t) { pdi_errorf(PD_ERR_NOMEM, "clip_grad_norm: out of memory"); return -1; }
    for (int i = 0; i < n; i++) t[i] = pd_state_dict_tensor(params, i);
    double r = pd_clip_grad_norm_tensors(t, n, max_norm);
    free(t);
    return r;
}

double pd_optimizer_clip_grad_norm(struct pd_optimizer *o, double max_norm)
{
    if (!o) { pdi_errorf(PD_ERR_NULL, "clip_grad_norm: NULL optimizer"); return -1; }
    struct pd_tensor **t = pdi_malloc(sizeof *t * (size_t)(o->n + 1));
    if (!t) { pdi_errorf(PD_ERR_NOMEM, "clip_grad_norm: out of memory"); return -1; }
    for (int i = 0; i < o->n; i++) t[i] = o->params[i].p;
    double r = pd_clip_grad_norm_tensors(t, o->n, max_norm);
    free(t);
    return r;
}
