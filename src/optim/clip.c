/* paddle.c — gradient clipping by global norm, and the two gradient passes
 * it shares with the fp16 grad scaler (src/amp/scaler.c): the sum of squares
 * of a gradient, and scaling a gradient in place.
 *
 * The sum of squares is accumulated in f64 over fixed blocks whose partial
 * sums are added in order, so the norm does not depend on the thread count.
 * Scaling writes into the gradient's memory only when the gradient owns it
 * (contiguous, storage not shared); otherwise the leaf's .grad is replaced by
 * a scaled copy, so a gradient that aliases another tensor (or is a
 * broadcast view with stride 0) is never written through.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "optim/optim_internal.h"

#define SQ_BLOCK 4096

static double block_sumsq(const void *data, enum pd_dtype dt, int64_t off, int64_t n)
{
    double acc = 0;
    if (dt == PD_F32) {
        const float *x = (const float *)data + off;
        /* 4 lanes of f64: vectorises, and bounds the rounding of long sums */
        double a[4] = {0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 4 <= n; i += 4)
            for (int k = 0; k < 4; k++) a[k] += (double)x[i + k] * x[i + k];
        for (; i < n; i++) acc += (double)x[i] * x[i];
        return acc + (a[0] + a[1]) + (a[2] + a[3]);
    }
    if (dt == PD_F64) {
        const double *x = (const double *)data + off;
        for (int64_t i = 0; i < n; i++) acc += x[i] * x[i];
        return acc;
    }
    float buf[256];
    for (int64_t s = 0; s < n; s += 256) {
        int64_t m = n - s < 256 ? n - s : 256;
        pdi_convert((const char *)data + (off + s) * (int64_t)pd_dtype_size(dt), dt, buf, PD_F32, m);
        for (int64_t i = 0; i < m; i++) acc += (double)buf[i] * buf[i];
    }
    return acc;
}

double pdi_grad_sumsq(struct pd_tensor *g)
{
    if (!g) return 0;
    pd_scope_begin();
    if (!pd_tensor_is_contiguous(g)) g = pd_contiguous(g);
    double total = NAN;
    if (g) {
        int64_t n = pd_tensor_numel(g), nb = (n + SQ_BLOCK - 1) / SQ_BLOCK;
        const void *data = pd_tensor_data(g);
        enum pd_dtype dt = g->dtype;
        double small[64], *part = nb <= 64 ? small : malloc(sizeof *part * (size_t)nb);
        if (part) {
            PDI_FOR(n >= PDI_PAR_GRAIN && pdi_num_threads() > 1, b, nb, {
                int64_t off = b * SQ_BLOCK;
                part[b] = block_sumsq(data, dt, off, n - off < SQ_BLOCK ? n - off : SQ_BLOCK);
            });
            total = 0;
            for (int64_t b = 0; b < nb; b++) total += part[b];
            if (part != small) free(part);
        } else {
            pdi_errorf(PD_ERR_NOMEM, "clip_grad_norm: out of memory");
        }
    }
    pd_scope_end();
    return total;
}

int pdi_grad_scale_(struct pd_tensor *leaf, double coef)
{
    struct pd_tensor *g = leaf->grad;
    if (!g) return PD_OK;
    int64_t n = pd_tensor_numel(g);
    if (pd_tensor_is_contiguous(g) && g->st->refcount == 1 && g->refcount == 1 &&
        (g->dtype == PD_F32 || g->dtype == PD_F64)) {
        if (g->dtype == PD_F32) {
            float *x = pd_tensor_data(g), c = (float)coef;
            PDI_FOR(n >= PDI_PAR_GRAIN && pdi_num_threads() > 1, i, n, { x[i] *= c; });
        } else {
            double *x = pd_tensor_data(g);
            PDI_FOR(n >= PDI_PAR_GRAIN && pdi_num_threads() > 1, i, n, { x[i] *= coef; });
        }
        g->st->version++;
        return PD_OK;
    }
    /* bf16/f16, views, shared storage: a fresh scaled gradient */
    int prev = pd_no_grad_begin();
    pd_scope_begin();
    struct pd_tensor *ng = pd_scale(g, coef);
    if (ng) {
        pd_tensor_retain(ng);
        pd_tensor_release(leaf->grad);
        leaf->grad = ng;
    }
    pd_scope_end();
    pd_grad_mode_end(prev);
    return ng ? PD_OK : pd_last_status();
}

double pd_clip_grad_norm_tensors(struct pd_tensor *const *params, int n, double max_norm)
{
    if (!params && n > 0) { pdi_errorf(PD_ERR_NULL, "clip_grad_norm: NULL parameter list"); return -1; }
    if (!(max_norm >= 0)) { pdi_errorf(PD_ERR_INVALID, "clip_grad_norm: max_norm must be >= 0, got %g", max_norm); return -1; }
    double ss = 0;
    for (int i = 0; i < n; i++) {
        if (!params[i]) { pdi_errorf(PD_ERR_NULL, "clip_grad_norm: parameter %d is NULL", i); return -1; }
        struct pd_tensor *g = params[i]->grad;
        if (!g) continue;
        double s = pdi_grad_sumsq(g);
        if (isnan(s) && pd_last_status() == PD_ERR_NOMEM) return -1;
        ss += s;
    }
    double norm = sqrt(ss);
    if (!isfinite(norm)) return norm; /* grads untouched: the caller skips the step */
    double coef = max_norm / (norm + 1e-6);
    if (coef < 1)
        for (int i = 0; i < n; i++)
            if (pdi_grad_scale_(params[i], coef)) return -1;
    return norm;
}

double pd_clip_grad_norm(const struct pd_state_dict *params, double max_norm)
{
    if (!params) { pdi_errorf(PD_ERR_NULL, "clip_grad_norm: NULL state dict"); return -1; }
    int n = pd_state_dict_size(params);
    struct pd_tensor **t = malloc(sizeof *t * (size_t)(n + 1));
    if (!t) { pdi_errorf(PD_ERR_NOMEM, "clip_grad_norm: out of memory"); return -1; }
    for (int i = 0; i < n; i++) t[i] = pd_state_dict_tensor(params, i);
    double r = pd_clip_grad_norm_tensors(t, n, max_norm);
    free(t);
    return r;
}

double pd_optimizer_clip_grad_norm(struct pd_optimizer *o, double max_norm)
{
    if (!o) { pdi_errorf(PD_ERR_NULL, "clip_grad_norm: NULL optimizer"); return -1; }
    struct pd_tensor **t = malloc(sizeof *t * (size_t)(o->n + 1));
    if (!t) { pdi_errorf(PD_ERR_NOMEM, "clip_grad_norm: out of memory"); return -1; }
    for (int i = 0; i < o->n; i++) t[i] = o->params[i].p;
    double r = pd_clip_grad_norm_tensors(t, o->n, max_norm);
    free(t);
    return r;
}
