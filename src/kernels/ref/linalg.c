/* paddle.c — reference kernels for the linalg family: matmul, conv2d and its
 * backward ops, max/avg pooling and their backward ops.
 *
 * The oracle for the CPU kernels: naive loops straight from the definitions,
 * every element read through pdi_load at its strided address (any layout,
 * any floating dtype), sums in double, one rounding when stored. Never
 * optimise these. The backward convolutions walk the forward loop nest and
 * scatter into a double accumulator, so they are the forward's transpose by
 * construction.
 */
#include <string.h>

#include "core/kernel.h"

static double at(const struct pd_kview *v, const int64_t *idx)
{
    int64_t off = 0;
    for (int d = 0; d < v->ndim; d++) off += idx[d] * v->strides[d];
    return pdi_load(v->data + off * (int64_t)pd_dtype_size(v->dtype), v->dtype);
}

static double at4(const struct pd_kview *v, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
    int64_t idx[4] = {i0, i1, i2, i3};
    return at(v, idx);
}

/* Stores a contiguous double buffer (row-major over y's shape) into y. */
static void store_all(const struct pd_kview *y, const double *acc)
{
    int64_t n = pdi_kview_numel(y);
    for (int64_t i = 0; i < n; i++) pdi_store(pdi_kview_ptr(y, i), y->dtype, acc[i]);
}

/* n zeroed doubles of the call's scratch (release frees them). */
static double *zeroed(const struct pdi_kcall *k, int64_t n)
{
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(double);
    double *p = pdi_kscratch_zero(k, bytes);
    if (!p) return pdi_error(PD_ERR_NOMEM, "out of memory (%zu bytes of reference scratch)", bytes);
    return p;
}

static void release(const struct pdi_kcall *k, double *p, int64_t n)
{
    pdi_kscratch_free(k, p, (size_t)(n > 0 ? n : 1) * sizeof(double));
}

/* ---- matmul ---------------------------------------------------------- */
/* y[b..., i, j] = sum_k op(a)[b..., i, k] op(b)[b..., k, j]; a and b are
 * aligned to y's batch dims from the right, size-1 dims broadcast. */
static int ref_matmul(const struct pdi_kcall *k)
{
    const struct pd_kview *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    int ta = (int)k->a->matmul.trans_a, tb = (int)k->a->matmul.trans_b;
    int nd = y->ndim, nbat = nd - 2, ba = a->ndim - 2, bb = b->ndim - 2;
    int64_t m = y->shape[nd - 2], n = y->shape[nd - 1], kk = a->shape[a->ndim - 1 - ta];
    int64_t batch = pdi_numel(y->shape, nbat);
    for (int64_t t = 0; t < batch; t++) {
        int64_t ia[PD_MAX_DIMS] = {0}, ib[PD_MAX_DIMS] = {0}, iy[PD_MAX_DIMS] = {0};
        int64_t rem = t;
        for (int d = nbat - 1; d >= 0; d--) {
            int64_t idx = rem % y->shape[d];
            rem /= y->shape[d];
            iy[d] = idx;
            int da = d - (nbat - ba), db = d - (nbat - bb);
            if (da >= 0) ia[da] = a->shape[da] == 1 ? 0 : idx;
            if (db >= 0) ib[db] = b->shape[db] == 1 ? 0 : idx;
        }
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < kk; p++) {
                    ia[ba + ta] = i;
                    ia[ba + 1 - ta] = p;
                    ib[bb + tb] = p;
                    ib[bb + 1 - tb] = j;
                    s += at(a, ia) * at(b, ib);
                }
                iy[nbat] = i;
                iy[nbat + 1] = j;
                int64_t off = 0;
                for (int d = 0; d < nd; d++) off += iy[d] * y->strides[d];
                pdi_store(y->data + off * (int64_t)pd_dtype_size(y->dtype), y->dtype, s);
            }
        }
    }
    return PD_OK;
}

/* ---- convolution ----------------------------------------------------- */
enum conv_mode { CONV_FWD, CONV_DATA, CONV_WEIGHT };

/* One loop nest for the three convolutions. x/w/y are the views playing
 * input, weight and output (one of them is the result, written from acc). */
static int ref_conv(const struct pdi_kcall *k, enum conv_mode mode)
{
    const struct pd_kview *x, *w, *y, *res = &k->out[0];
    if (mode == CONV_FWD) { x = &k->in[0]; w = &k->in[1]; y = res; }
    else if (mode == CONV_DATA) { y = &k->in[0]; w = &k->in[1]; x = res; }
    else { y = &k->in[0]; x = &k->in[1]; w = res; }
    const struct pdi_attrs_conv2d *p = &k->a->conv2d; /* the backward ops' sets begin with conv2d's */
    int64_t sh = p->stride_h, sw = p->stride_w, ph = p->pad_h, pw = p->pad_w, dh = p->dilation_h, dw = p->dilation_w;
    int64_t groups = p->groups;
    int64_t nn = x->shape[0], hh = x->shape[2], ww = x->shape[3];
    int64_t oc = w->shape[0], cg = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    int64_t oh = y->shape[2], ow = y->shape[3], og = oc / groups;
    int64_t total = pdi_kview_numel(res);
    double *acc = zeroed(k, total);
    if (!acc) return PD_ERR_NOMEM;
    for (int64_t n = 0; n < nn; n++)
    for (int64_t o = 0; o < oc; o++)
    for (int64_t i = 0; i < oh; i++)
    for (int64_t j = 0; j < ow; j++) {
        double s = 0;
        double gy = mode == CONV_FWD ? 0 : at4(y, n, o, i, j);
        for (int64_t c = 0; c < cg; c++) {
            int64_t ci = (o / og) * cg + c;
            for (int64_t a = 0; a < kh; a++) {
                int64_t h = i * sh - ph + a * dh;
                if (h < 0 || h >= hh) continue;
                for (int64_t b = 0; b < kw; b++) {
                    int64_t v = j * sw - pw + b * dw;
                    if (v < 0 || v >= ww) continue;
                    if (mode == CONV_FWD) s += at4(x, n, ci, h, v) * at4(w, o, c, a, b);
                    else if (mode == CONV_DATA) acc[((n * x->shape[1] + ci) * hh + h) * ww + v] += gy * at4(w, o, c, a, b);
                    else acc[((o * cg + c) * kh + a) * kw + b] += gy * at4(x, n, ci, h, v);
                }
            }
        }
        if (mode == CONV_FWD) {
            if (k->n_in == 3) s += at(&k->in[2], &o);
            acc[((n * oc + o) * oh + i) * ow + j] = s;
        }
    }
    store_all(res, acc);
    release(k, acc, total);
    return PD_OK;
}

static int ref_conv2d(const struct pdi_kcall *k) { return ref_conv(k, CONV_FWD); }
static int ref_conv2d_backward_data(const struct pdi_kcall *k) { return ref_conv(k, CONV_DATA); }
static int ref_conv2d_backward_weight(const struct pdi_kcall *k) { return ref_conv(k, CONV_WEIGHT); }

/* ---- pooling --------------------------------------------------------- */
/* Window (i, j) of plane (n, c) of x: first position of the maximum in
 * row-major window order, padding excluded. */
static void window_argmax(const struct pd_kview *x, const struct pdi_attrs_pool2d *p, int64_t n, int64_t c, int64_t i,
                          int64_t j, int64_t *bh, int64_t *bw)
{
    double best = 0;
    int found = 0;
    for (int64_t a = 0; a < p->kernel_h; a++) {
        int64_t h = i * p->stride_h - p->pad_h + a;
        if (h < 0 || h >= x->shape[2]) continue;
        for (int64_t b = 0; b < p->kernel_w; b++) {
            int64_t v = j * p->stride_w - p->pad_w + b;
            if (v < 0 || v >= x->shape[3]) continue;
            double e = at4(x, n, c, h, v);
            if (!found || e > best) { best = e; *bh = h; *bw = v; found = 1; }
        }
    }
}

/* The divisor of window (i, j): its input elements, or with
 * count_include_pad the window clipped to the padded input (the whole
 * window unless ceil_mode let it hang past the right padding; PyTorch's
 * rule). */
static int64_t window_count(const struct pdi_attrs_avg_pool2d *p, int64_t hh, int64_t ww, int64_t i, int64_t j)
{
    int64_t h0 = i * p->stride_h - p->pad_h, v0 = j * p->stride_w - p->pad_w;
    int64_t he = p->count_include_pad ? hh + p->pad_h : hh, we = p->count_include_pad ? ww + p->pad_w : ww;
    int64_t h1 = h0 + p->kernel_h < he ? h0 + p->kernel_h : he, v1 = v0 + p->kernel_w < we ? v0 + p->kernel_w : we;
    if (h0 < 0 && !p->count_include_pad) h0 = 0;
    if (v0 < 0 && !p->count_include_pad) v0 = 0;
    return (h1 - h0) * (v1 - v0);
}

enum pool_mode { POOL_MAX, POOL_AVG, POOL_MAX_BWD, POOL_AVG_BWD, POOL_MAX_GATHER };

/* xv: the view with the input's geometry (x, or the result for AVG_BWD);
 * yv: the view with the pooled geometry. */
static int ref_pool(const struct pdi_kcall *k, enum pool_mode mode)
{
    const struct pd_kview *res = &k->out[0];
    const struct pd_kview *xv = mode == POOL_AVG_BWD ? res : mode == POOL_MAX_BWD || mode == POOL_MAX_GATHER ? &k->in[1] : &k->in[0];
    const struct pd_kview *yv = mode == POOL_MAX || mode == POOL_AVG || mode == POOL_MAX_GATHER ? res : &k->in[0];
    /* max ops read pool2d's set; the avg sets begin with it */
    const struct pdi_attrs_pool2d *p = &k->a->pool2d;
    int64_t nn = xv->shape[0], cc = xv->shape[1], hh = xv->shape[2], ww = xv->shape[3];
    int64_t oh = yv->shape[2], ow = yv->shape[3];
    int64_t total = pdi_kview_numel(res);
    double *acc = zeroed(k, total);
    if (!acc) return PD_ERR_NOMEM;
    for (int64_t n = 0; n < nn; n++)
    for (int64_t c = 0; c < cc; c++)
    for (int64_t i = 0; i < oh; i++)
    for (int64_t j = 0; j < ow; j++) {
        int64_t yi = ((n * cc + c) * oh + i) * ow + j;
        if (mode == POOL_MAX || mode == POOL_MAX_BWD || mode == POOL_MAX_GATHER) {
            int64_t bh = 0, bw = 0;
            window_argmax(xv, p, n, c, i, j, &bh, &bw);
            int64_t xi = ((n * cc + c) * hh + bh) * ww + bw;
            if (mode == POOL_MAX) acc[yi] = at4(xv, n, c, bh, bw);
            else if (mode == POOL_MAX_BWD) acc[xi] += at4(yv, n, c, i, j);
            else acc[yi] = at4(&k->in[0], n, c, bh, bw);
            continue;
        }
        double cnt = (double)window_count(&k->a->avg_pool2d, hh, ww, i, j);
        double gy = mode == POOL_AVG_BWD ? at4(yv, n, c, i, j) / cnt : 0, s = 0;
        for (int64_t a = 0; a < p->kernel_h; a++) {
            int64_t h = i * p->stride_h - p->pad_h + a;
            if (h < 0 || h >= hh) continue;
            for (int64_t b = 0; b < p->kernel_w; b++) {
                int64_t v = j * p->stride_w - p->pad_w + b;
                if (v < 0 || v >= ww) continue;
                if (mode == POOL_AVG) s += at4(xv, n, c, h, v);
                else acc[((n * cc + c) * hh + h) * ww + v] += gy;
            }
        }
        if (mode == POOL_AVG) acc[yi] = s / cnt;
    }
    store_all(res, acc);
    release(k, acc, total);
    return PD_OK;
}

static int ref_max_pool2d(const struct pdi_kcall *k) { return ref_pool(k, POOL_MAX); }
static int ref_avg_pool2d(const struct pdi_kcall *k) { return ref_pool(k, POOL_AVG); }
static int ref_max_pool2d_backward(const struct pdi_kcall *k) { return ref_pool(k, POOL_MAX_BWD); }
static int ref_avg_pool2d_backward(const struct pdi_kcall *k) { return ref_pool(k, POOL_AVG_BWD); }
static int ref_max_pool2d_gather(const struct pdi_kcall *k) { return ref_pool(k, POOL_MAX_GATHER); }

void pdi_register_ref_linalg(void)
{
    static const struct {
        enum pd_op op;
        pdi_kernel_fn fn;
    } tab[] = {
        {PD_OP_matmul, ref_matmul},
        {PD_OP_conv2d, ref_conv2d},
        {PD_OP_conv2d_backward_data, ref_conv2d_backward_data},
        {PD_OP_conv2d_backward_weight, ref_conv2d_backward_weight},
        {PD_OP_max_pool2d, ref_max_pool2d},
        {PD_OP_avg_pool2d, ref_avg_pool2d},
        {PD_OP_max_pool2d_backward, ref_max_pool2d_backward},
        {PD_OP_max_pool2d_gather, ref_max_pool2d_gather},
        {PD_OP_avg_pool2d_backward, ref_avg_pool2d_backward},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        pdi_kernel_register_mask(PDI_BACKEND_REF, tab[i].op, PDI_DT_FLOATS, tab[i].fn);
}
