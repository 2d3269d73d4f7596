/* paddle.c — reference kernels for the nn family: softmax, log_softmax,
 * nll_loss, nll_loss_backward, layer_norm, rms_norm, group_norm,
 * norm_backward, embedding, one_hot.
 *
 * The oracle: element by element through pdi_kview_ptr (any strides), in
 * double, written for obviousness and never optimised. Index values (targets,
 * ids, classes) are checked before use; a bad one fails the call with its
 * value and the valid range.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernel.h"

/* x viewed as [outer, len, inner] around axis (a 0-d x is one element). */
static void split_axis(const struct pd_kview *x, int ax, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = 1;
    *len = 1;
    *inner = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (d < ax) *outer *= x->shape[d];
        else if (d == ax) *len = x->shape[d];
        else *inner *= x->shape[d];
    }
}

/* softmax = exp(x - max) / sum; log_softmax = (x - max) - log(sum).
 * An all -inf row gives NaN (as PyTorch); NaN anywhere in a row spreads. */
static int ref_softmax(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int log_out = k->op == PD_OP_log_softmax;
    int64_t outer, len, inner;
    split_axis(x, (int)k->a->softmax.axis, &outer, &len, &inner);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            double m = -INFINITY, s = 0;
            for (int64_t a = 0; a < len; a++) {
                double v = pdi_load(pdi_kview_ptr(x, (o * len + a) * inner + i), x->dtype);
                if (v > m) m = v;
            }
            for (int64_t a = 0; a < len; a++)
                s += exp(pdi_load(pdi_kview_ptr(x, (o * len + a) * inner + i), x->dtype) - m);
            for (int64_t a = 0; a < len; a++) {
                int64_t li = (o * len + a) * inner + i;
                double v = pdi_load(pdi_kview_ptr(x, li), x->dtype) - m;
                pdi_store(pdi_kview_ptr(y, li), y->dtype, log_out ? v - log(s) : exp(v) / s);
            }
        }
    }
    return PD_OK;
}

/* logp [N, C, D...] (or [C]), target [N, D...] (or []), [weight [C]]. */
static int ref_nll_loss(const struct pdi_kcall *k)
{
    const struct pd_kview *lp = &k->in[0], *t = &k->in[1], *y = &k->out[0];
    const struct pd_kview *w = k->a->nll_loss.has_weight ? &k->in[2] : NULL;
    int64_t ignore = k->a->nll_loss.ignore_index, reduction = k->a->nll_loss.reduction;
    int64_t N = 1, C = lp->shape[0], D = 1;
    if (lp->ndim >= 2) {
        N = lp->shape[0];
        C = lp->shape[1];
        for (int d = 2; d < lp->ndim; d++) D *= lp->shape[d];
    }
    double sum = 0, count = 0; /* count: the kept targets' weights (1 each without weights) */
    for (int64_t n = 0; n < N; n++) {
        for (int64_t d = 0; d < D; d++) {
            int64_t ti = n * D + d, c = pdi_load_int(pdi_kview_ptr(t, ti), t->dtype);
            double v = 0;
            if (c != ignore) {
                if (c < 0 || c >= C)
                    return pdi_errorf(PD_ERR_INVALID, "nll_loss: target %lld at position %lld out of range [0, %lld)",
                                      (long long)c, (long long)ti, (long long)C);
                double wc = w ? pdi_load(pdi_kview_ptr(w, c), w->dtype) : 1.0;
                v = -pdi_load(pdi_kview_ptr(lp, (n * C + c) * D + d), lp->dtype) * wc;
                sum += v;
                count += wc;
            }
            if (reduction == PD_REDUCTION_NONE) pdi_store(pdi_kview_ptr(y, ti), y->dtype, v);
        }
    }
    if (reduction == PD_REDUCTION_SUM) pdi_store(y->data, y->dtype, sum);
    if (reduction == PD_REDUCTION_MEAN) pdi_store(y->data, y->dtype, sum / count); /* 0/0: NaN, as torch */
    return PD_OK;
}

/* nll_loss_backward: logp [N, C, D...] (or [C]; its meta only), target
 * [N, D...], w [N, D...]; out[n, c, d] = w[n, d] at c == target[n, d]
 * (not ignored), else 0. */
static int ref_nll_loss_backward(const struct pdi_kcall *k)
{
    const struct pd_kview *lp = &k->in[0], *t = &k->in[1], *w = &k->in[2], *y = &k->out[0];
    int64_t ignore = k->a->nll_loss_backward.ignore_index;
    int64_t N = 1, C = lp->shape[0], D = 1;
    if (lp->ndim >= 2) {
        N = lp->shape[0];
        C = lp->shape[1];
        for (int d = 2; d < lp->ndim; d++) D *= lp->shape[d];
    }
    for (int64_t n = 0; n < N; n++) {
        for (int64_t d = 0; d < D; d++) {
            int64_t ti = n * D + d, tc = pdi_load_int(pdi_kview_ptr(t, ti), t->dtype);
            if (tc != ignore && (tc < 0 || tc >= C))
                return pdi_errorf(PD_ERR_INVALID,
                                  "nll_loss_backward: target %lld at position %lld out of range [0, %lld)",
                                  (long long)tc, (long long)ti, (long long)C);
            double wv = pdi_load(pdi_kview_ptr(w, ti), w->dtype);
            for (int64_t c = 0; c < C; c++)
                pdi_store(pdi_kview_ptr(y, (n * C + c) * D + d), y->dtype, c == tc && tc != ignore ? wv : 0.0);
        }
    }
    return PD_OK;
}

/* Row r of x [rows, M]: mean (0 without centring) and 1/sqrt(var + eps), in
 * double; shared by norm forward and norm_backward. */
static void row_stats(const struct pd_kview *x, int64_t r, int64_t M, int centre, double eps, double *mean,
                      double *rstd)
{
    double mu = 0, var = 0;
    if (centre) {
        for (int64_t j = 0; j < M; j++) mu += pdi_load(pdi_kview_ptr(x, r * M + j), x->dtype);
        mu /= (double)M;
    }
    for (int64_t j = 0; j < M; j++) {
        double v = pdi_load(pdi_kview_ptr(x, r * M + j), x->dtype) - mu;
        var += v * v;
    }
    *mean = mu;
    *rstd = 1.0 / sqrt(var / (double)M + eps);
}

/* x [rows, M] (M = the trailing n_norm_axes dims), params [M]. */
static int ref_norm(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int centre = k->op == PD_OP_layer_norm;
    int has_w = k->a->norm.has_w != 0, has_b = centre && k->a->norm.has_b != 0;
    const struct pd_kview *w = has_w ? &k->in[1] : NULL, *b = has_b ? &k->in[1 + has_w] : NULL;
    double eps = k->a->norm.eps;
    int64_t M = 1;
    for (int d = x->ndim - (int)k->a->norm.n_norm_axes; d < x->ndim; d++) M *= x->shape[d];
    int64_t rows = M ? pdi_kview_numel(x) / M : 0;
    for (int64_t r = 0; r < rows; r++) {
        double mean, rstd;
        row_stats(x, r, M, centre, eps, &mean, &rstd);
        for (int64_t j = 0; j < M; j++) {
            double v = (pdi_load(pdi_kview_ptr(x, r * M + j), x->dtype) - mean) * rstd;
            if (w) v *= pdi_load(pdi_kview_ptr(w, j), w->dtype);
            if (b) v += pdi_load(pdi_kview_ptr(b, j), b->dtype);
            pdi_store(pdi_kview_ptr(y, r * M + j), y->dtype, v);
        }
    }
    return PD_OK;
}

/* norm_backward: x, g [rows, M], [w] [M] -> dx [rows, M], [dw], [db] [M].
 * With xm = x - mean (centre) or x, rstd = 1/sqrt(mean(xm^2) + eps),
 * xhat = xm rstd and gh = g w:
 *   dx = rstd (gh - centre mean(gh) - xhat mean(gh xhat)),
 *   dw = sum_rows g xhat, db = sum_rows g. */
static int ref_norm_backward(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *g = &k->in[1], *dx = &k->out[0];
    const struct pdi_attrs_norm_backward *a = &k->a->norm_backward;
    int centre = a->centre != 0, has_w = a->has_w != 0, has_b = a->has_b != 0;
    const struct pd_kview *w = has_w ? &k->in[2] : NULL;
    const struct pd_kview *dw = has_w ? &k->out[1] : NULL, *db = has_b ? &k->out[1 + has_w] : NULL;
    double eps = a->eps;
    int64_t M = 1;
    for (int d = x->ndim - (int)a->n_norm_axes; d < x->ndim; d++) M *= x->shape[d];
    int64_t rows = M ? pdi_kview_numel(x) / M : 0;
    size_t abytes = sizeof(double) * (size_t)(2 * M + 1);
    double *acc = pdi_kscratch_zero(k, abytes); /* dw sums, then db sums */
    if (!acc) return pdi_errorf(PD_ERR_NOMEM, "out of memory (norm_backward)");
    for (int64_t r = 0; r < rows; r++) {
        double mean, rstd, sgh = 0, sghx = 0;
        row_stats(x, r, M, centre, eps, &mean, &rstd);
        for (int64_t j = 0; j < M; j++) {
            double xh = (pdi_load(pdi_kview_ptr(x, r * M + j), x->dtype) - mean) * rstd;
            double gv = pdi_load(pdi_kview_ptr(g, r * M + j), g->dtype);
            double gh = w ? gv * pdi_load(pdi_kview_ptr(w, j), w->dtype) : gv;
            sgh += gh;
            sghx += gh * xh;
            acc[j] += gv * xh;
            acc[M + j] += gv;
        }
        for (int64_t j = 0; j < M; j++) {
            double xh = (pdi_load(pdi_kview_ptr(x, r * M + j), x->dtype) - mean) * rstd;
            double gv = pdi_load(pdi_kview_ptr(g, r * M + j), g->dtype);
            double gh = w ? gv * pdi_load(pdi_kview_ptr(w, j), w->dtype) : gv;
            double v = rstd * (gh - xh * sghx / (double)M - (centre ? sgh / (double)M : 0));
            pdi_store(pdi_kview_ptr(dx, r * M + j), dx->dtype, v);
        }
    }
    for (int64_t j = 0; j < M; j++) {
        if (dw) pdi_store(pdi_kview_ptr(dw, j), dw->dtype, acc[j]);
        if (db) pdi_store(pdi_kview_ptr(db, j), db->dtype, acc[M + j]);
    }
    pdi_kscratch_free(k, acc, abytes);
    return PD_OK;
}

/* x [N, C, d...] as rows [N * G, M] (M = C / G times the d... sizes: a
 * group's elements are consecutive in x's logical order); element j of a
 * row is channel (row % G) * C / G + j / S, S the d... size. */
static int ref_group_norm(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int has_w = k->a->group_norm.has_w != 0, has_b = k->a->group_norm.has_b != 0;
    const struct pd_kview *w = has_w ? &k->in[1] : NULL, *b = has_b ? &k->in[1 + has_w] : NULL;
    int64_t G = k->a->group_norm.num_groups, C = x->shape[1], S = 1;
    for (int d = 2; d < x->ndim; d++) S *= x->shape[d];
    int64_t rows = x->shape[0] * G, M = C / G * S;
    for (int64_t r = 0; r < rows; r++) {
        double mean, rstd;
        row_stats(x, r, M, 1, k->a->group_norm.eps, &mean, &rstd);
        for (int64_t j = 0; j < M; j++) {
            int64_t c = (r % G) * (C / G) + j / S;
            double v = (pdi_load(pdi_kview_ptr(x, r * M + j), x->dtype) - mean) * rstd;
            if (w) v *= pdi_load(pdi_kview_ptr(w, c), w->dtype);
            if (b) v += pdi_load(pdi_kview_ptr(b, c), b->dtype);
            pdi_store(pdi_kview_ptr(y, r * M + j), y->dtype, v);
        }
    }
    return PD_OK;
}

/* out[i, :] = weight[ids[i], :] (bytes copied: any dtype). */
static int ref_embedding(const struct pdi_kcall *k)
{
    const struct pd_kview *ids = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    int64_t n = pdi_kview_numel(ids), V = w->shape[0], D = w->shape[1];
    size_t es = pd_dtype_size(w->dtype);
    for (int64_t i = 0; i < n; i++) {
        int64_t id = pdi_load_int(pdi_kview_ptr(ids, i), ids->dtype);
        if (id < 0 || id >= V)
            return pdi_errorf(PD_ERR_INVALID, "embedding: id %lld at position %lld is out of range for a weight of "
                              "V = %lld rows (valid ids are 0..%lld)", (long long)id, (long long)i, (long long)V,
                              (long long)V - 1);
        for (int64_t j = 0; j < D; j++) memcpy(pdi_kview_ptr(y, i * D + j), pdi_kview_ptr(w, id * D + j), es);
    }
    return PD_OK;
}

static int ref_one_hot(const struct pdi_kcall *k)
{
    const struct pd_kview *ids = &k->in[0], *y = &k->out[0];
    int64_t n = pdi_kview_numel(ids), C = k->a->one_hot.num_classes;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = pdi_load_int(pdi_kview_ptr(ids, i), ids->dtype);
        if (c < 0 || c >= C)
            return pdi_errorf(PD_ERR_INVALID, "one_hot: class value %lld at position %lld out of range [0, %lld)",
                              (long long)c, (long long)i, (long long)C);
        for (int64_t j = 0; j < C; j++) pdi_store(pdi_kview_ptr(y, i * C + j), PD_I64, j == c ? 1.0 : 0.0);
    }
    return PD_OK;
}

void pdi_register_ref_nn(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_softmax, PDI_DT_FLOATS, ref_softmax);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_log_softmax, PDI_DT_FLOATS, ref_softmax);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_nll_loss, PDI_DT_FLOATS, ref_nll_loss);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_nll_loss_backward, PDI_DT_FLOATS, ref_nll_loss_backward);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_layer_norm, PDI_DT_FLOATS, ref_norm);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_rms_norm, PDI_DT_FLOATS, ref_norm);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_norm_backward, PDI_DT_FLOATS, ref_norm_backward);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_group_norm, PDI_DT_FLOATS, ref_group_norm);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_embedding, PDI_DT_ALL, ref_embedding);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_one_hot, PDI_DT_INTS, ref_one_hot);
}
