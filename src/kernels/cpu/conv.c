/* paddle.c — CPU kernels for conv2d (forward, backward data, backward
 * weight) and pooling, through cached oneDNN primitives.
 *
 * The interface layouts are plain: NCHW activations, OIHW (GOIHW with
 * groups) weights; inputs that are not contiguous are packed first.
 * Convolutions run in the layouts oneDNN picks (reorders cached with the
 * primitive); pooling stays plain (its plain kernels are memory-bound
 * anyway, a reorder would double the traffic). bf16/f16 run natively
 * where oneDNN implements them on this CPU and are otherwise widened to f32
 * (the cache remembers which). f64 has no CPU kernel here: the dispatcher
 * falls back to the reference kernels (f64 is for gradchecks).
 *
 * Max pooling's backward and its transpose (max_pool2d_gather) recompute
 * the argmax of each window in C (first maximum wins, as in the reference
 * kernels), parallel over (n, c) planes, so no workspace has to outlive the
 * forward call.
 */
#include <string.h>

#include "kernels/cpu/linalg_dnnl.h"

enum { K_CONV_FWD = 1, K_CONV_DATA, K_CONV_WEIGHT, K_POOL_FWD, K_POOL_BWD };

struct conv_key {
    int kind, dt, bias, alg;
    int64_t x[4], w[4], y[4];
    struct pdi_attrs_conv2d conv; /* convolutions (zero for pools) */
    struct pdi_attrs_pool2d pool; /* pools (zero for convolutions) */
};

/* ---- convolution ----------------------------------------------------- */
static dnnl_status_t conv_mds(const struct conv_key *k, dnnl_memory_desc_t *x, dnnl_memory_desc_t *w,
                              dnnl_memory_desc_t *b, dnnl_memory_desc_t *y)
{
    dnnl_data_type_t dt = (dnnl_data_type_t)k->dt;
    dnnl_dims_t dx = {k->x[0], k->x[1], k->x[2], k->x[3]}, dy = {k->y[0], k->y[1], k->y[2], k->y[3]};
    int64_t g = k->conv.groups;
    dnnl_status_t st = dnnl_memory_desc_init_by_tag(x, 4, dx, dt, dnnl_nchw);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(y, 4, dy, dt, dnnl_nchw);
    if (st != dnnl_success) return st;
    if (g > 1) {
        dnnl_dims_t dw = {g, k->w[0] / g, k->w[1], k->w[2], k->w[3]};
        st = dnnl_memory_desc_init_by_tag(w, 5, dw, dt, dnnl_goihw);
    } else {
        dnnl_dims_t dw = {k->w[0], k->w[1], k->w[2], k->w[3]};
        st = dnnl_memory_desc_init_by_tag(w, 4, dw, dt, dnnl_oihw);
    }
    if (st != dnnl_success) return st;
    dnnl_dims_t db = {k->w[0]};
    return dnnl_memory_desc_init_by_tag(b, 1, db, dt, dnnl_a);
}

/* Plain NCHW/OIHW at the interface; inside, the layouts oneDNN prefers
 * (format_tag_any: blocked layouts and its direct JIT kernels, ~2.5x the
 * GEMM-based convolution on plain layouts for a ResNet-sized layer even
 * counting the reorders), converted by cached reorder primitives. */
static dnnl_status_t build_conv(const void *key, struct pdi_dnnl_entry *e)
{
    const struct conv_key *k = key;
    dnnl_memory_desc_t x, w, b, y, xa, wa, ya;
    dnnl_status_t st = conv_mds(k, &x, &w, &b, &y);
    if (st != dnnl_success) return st;
    xa = x, wa = w, ya = y;
    st = dnnl_memory_desc_init_by_tag(&xa, x.ndims, x.dims, x.data_type, dnnl_format_tag_any);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&wa, w.ndims, w.dims, w.data_type, dnnl_format_tag_any);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&ya, y.ndims, y.dims, y.data_type, dnnl_format_tag_any);
    if (st != dnnl_success) return st;
    const struct pdi_attrs_conv2d *p = &k->conv;
    dnnl_dims_t strides = {p->stride_h, p->stride_w}, pad = {p->pad_h, p->pad_w};
    dnnl_dims_t dil = {p->dilation_h - 1, p->dilation_w - 1};
    dnnl_convolution_desc_t fd, bd;
    st = dnnl_dilated_convolution_forward_desc_init(&fd, dnnl_forward_training, dnnl_convolution_direct, &xa, &wa,
                                                     k->kind == K_CONV_FWD && k->bias ? &b : NULL, &ya, strides, dil,
                                                     pad, pad);
    if (st != dnnl_success) return st;
    dnnl_primitive_attr_t attr = pdi_dnnl_user_scratchpad();
    if (k->kind == K_CONV_FWD) {
        st = dnnl_primitive_desc_create(&e->pd, &fd, attr, pdi_dnnl_engine(), NULL);
    } else {
        dnnl_primitive_desc_t hint = NULL;
        st = dnnl_primitive_desc_create(&hint, &fd, NULL, pdi_dnnl_engine(), NULL);
        if (st == dnnl_success) {
            if (k->kind == K_CONV_DATA)
                st = dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &xa, &wa, &ya,
                                                                      strides, dil, pad, pad);
            else
                st = dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, &xa, &wa, NULL,
                                                                         &ya, strides, dil, pad, pad);
        }
        if (st == dnnl_success) st = dnnl_primitive_desc_create(&e->pd, &bd, attr, pdi_dnnl_engine(), hint);
        if (hint) dnnl_primitive_desc_destroy(hint);
    }
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) return st;
    /* slots: 0 x, 1 w, 2 bias, 3 y */
    e->md[2] = e->imd[2] = b;
    if (k->kind == K_CONV_FWD) {
        st = pdi_dnnl_layout(e, 0, &x, dnnl_query_src_md, 0);
        if (st == dnnl_success) st = pdi_dnnl_layout(e, 1, &w, dnnl_query_weights_md, 0);
        if (st == dnnl_success) st = pdi_dnnl_layout(e, 3, &y, dnnl_query_dst_md, 1);
    } else if (k->kind == K_CONV_DATA) {
        st = pdi_dnnl_layout(e, 3, &y, dnnl_query_diff_dst_md, 0);
        if (st == dnnl_success) st = pdi_dnnl_layout(e, 1, &w, dnnl_query_weights_md, 0);
        if (st == dnnl_success) st = pdi_dnnl_layout(e, 0, &x, dnnl_query_diff_src_md, 1);
    } else {
        st = pdi_dnnl_layout(e, 3, &y, dnnl_query_diff_dst_md, 0);
        if (st == dnnl_success) st = pdi_dnnl_layout(e, 0, &x, dnnl_query_src_md, 0);
        if (st == dnnl_success) st = pdi_dnnl_layout(e, 1, &w, dnnl_query_diff_weights_md, 1);
    }
    return st;
}

/* Geometry (x, w, y views by role) of a conv call. */
static void conv_roles(const struct pdi_kcall *k, int kind, const struct pd_kview **x, const struct pd_kview **w,
                       const struct pd_kview **y)
{
    const struct pd_kview *res = &k->out[0];
    if (kind == K_CONV_FWD) { *x = &k->in[0]; *w = &k->in[1]; *y = res; }
    else if (kind == K_CONV_DATA) { *y = &k->in[0]; *w = &k->in[1]; *x = res; }
    else { *y = &k->in[0]; *x = &k->in[1]; *w = res; }
}

/* An empty reduction (C/groups = 0, a zero-size N for the weight gradient,
 * ...): the result is the bias, or zeros. */
static void empty_reduction(const struct pdi_kcall *k, int kind)
{
    const struct pd_kview *r = &k->out[0];
    int64_t n = pdi_kview_numel(r);
    memset(r->data, 0, (size_t)n * pd_dtype_size(r->dtype));
    if (kind != K_CONV_FWD || k->n_in < 3) return;
    int64_t plane = r->shape[2] * r->shape[3];
    for (int64_t i = 0; i < n; i++) {
        int64_t o = (i / plane) % r->shape[1];
        pdi_store(pdi_kview_ptr(r, i), r->dtype, pdi_load(pdi_kview_ptr(&k->in[2], o), k->in[2].dtype));
    }
}

/* Packs the inputs to contiguous dt as needed, runs e, converts the result. */
struct run_io {
    int n_in;
    int arg_in[3];
    int md_in[3];
    int arg_out, md_out;
};

static int run_packed(const struct pdi_kcall *k, struct pdi_dnnl_entry *e, enum pd_dtype cd, const struct run_io *io)
{
    struct pdi_dnnl_arg args[4];
    struct pd_kview pk[3], ov;
    void *buf[3] = {NULL, NULL, NULL}, *obuf = NULL;
    const struct pd_kview *res = &k->out[0];
    int rc = PD_OK, n = 0;
    for (int i = 0; i < io->n_in; i++) {
        const struct pd_kview *v = &k->in[i];
        void *p = v->data;
        if (v->dtype != cd || !pdi_kview_contiguous(v)) {
            if (!(buf[i] = pdi_linalg_pack(k, v, cd, &pk[i]))) { rc = pd_last_status(); goto out; }
            p = buf[i];
        }
        args[n++] = (struct pdi_dnnl_arg){io->arg_in[i], io->md_in[i], 0, p};
    }
    void *op = res->data;
    if (res->dtype != cd) {
        size_t bytes = (size_t)pdi_kview_numel(res) * pd_dtype_size(cd);
        if (!(obuf = pdi_kscratch(k, bytes))) {
            rc = pdi_errorf(PD_ERR_NOMEM, "out of memory (%zu bytes)", bytes);
            goto out;
        }
        pdi_linalg_contig_view(res, cd, obuf, &ov);
        op = obuf;
    }
    args[n++] = (struct pdi_dnnl_arg){io->arg_out, io->md_out, 1, op};
    rc = pdi_dnnl_run(k, e, n, args);
    if (!rc && obuf) pdi_linalg_copy(res, &ov);
out:
    for (int i = 0; i < io->n_in; i++) pdi_linalg_unpack_free(k, buf[i], &pk[i]);
    if (obuf) pdi_linalg_unpack_free(k, obuf, &ov);
    return rc;
}

/* The primitive for key k in the result's dtype if oneDNN has it, else in
 * f32 (*cd tells which). */
static struct pdi_dnnl_entry *get_native_or_f32(struct conv_key *k, enum pd_dtype dt, enum pd_dtype *cd,
                                                pdi_dnnl_build_fn build)
{
    *cd = dt;
    k->dt = pdi_dnnl_dt(dt);
    struct pdi_dnnl_entry *e = pdi_dnnl_get(k, sizeof *k, build);
    if (!e || e->prim) return e;
    pdi_dnnl_put(e);
    if (dt == PD_F32) return pdi_error(PD_ERR_UNSUPPORTED, "oneDNN: no f32 implementation for this problem");
    *cd = PD_F32;
    k->dt = dnnl_f32;
    e = pdi_dnnl_get(k, sizeof *k, build);
    if (e && !e->prim) {
        pdi_dnnl_put(e);
        return pdi_error(PD_ERR_UNSUPPORTED, "oneDNN: no f32 implementation for this problem");
    }
    return e;
}

static int cpu_conv(const struct pdi_kcall *k, int kind)
{
    const struct pd_kview *x, *w, *y;
    conv_roles(k, kind, &x, &w, &y);
    if (pdi_kview_numel(&k->out[0]) == 0) return PD_OK;
    for (int i = 0; i < k->n_in; i++) {
        if (pdi_kview_numel(&k->in[i]) == 0) {
            empty_reduction(k, kind);
            return PD_OK;
        }
    }
    struct conv_key key;
    memset(&key, 0, sizeof key);
    key.kind = kind;
    key.bias = kind == K_CONV_FWD && k->n_in == 3;
    memcpy(key.x, x->shape, sizeof key.x);
    memcpy(key.w, w->shape, sizeof key.w);
    memcpy(key.y, y->shape, sizeof key.y);
    key.conv = k->a->conv2d; /* the backward ops' sets begin with conv2d's */
    enum pd_dtype cd;
    struct pdi_dnnl_entry *e = get_native_or_f32(&key, k->out[0].dtype, &cd, build_conv);
    if (!e) return pd_last_status();
    /* md slots: 0 x, 1 w, 2 bias, 3 y */
    static const struct run_io io[4] = {
        [0] = {3, {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS}, {0, 1, 2}, DNNL_ARG_DST, 3},
        [1] = {2, {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS}, {3, 1}, DNNL_ARG_DIFF_SRC, 0},
        [2] = {2, {DNNL_ARG_DIFF_DST, DNNL_ARG_SRC}, {3, 0}, DNNL_ARG_DIFF_WEIGHTS, 1},
    };
    struct run_io r = io[kind - K_CONV_FWD];
    if (kind == K_CONV_FWD) r.n_in = k->n_in;
    int rc = run_packed(k, e, cd, &r);
    pdi_dnnl_put(e);
    return rc;
}

static int cpu_conv2d(const struct pdi_kcall *k) { return cpu_conv(k, K_CONV_FWD); }
static int cpu_conv2d_backward_data(const struct pdi_kcall *k) { return cpu_conv(k, K_CONV_DATA); }
static int cpu_conv2d_backward_weight(const struct pdi_kcall *k) { return cpu_conv(k, K_CONV_WEIGHT); }

/* ---- pooling through oneDNN (max/avg forward, avg backward) ----------- */
/* The right padding that makes the last of `out` windows fit: pad, or more
 * under ceil_mode. */
static int64_t right_pad(int64_t in, int64_t out, int64_t k, int64_t s, int64_t pad)
{
    int64_t r = (out - 1) * s + k - in - pad;
    return r > pad ? r : pad;
}

/* With count_include_pad, a window past the right padding (ceil_mode)
 * divides by its part inside the padded input (PyTorch); oneDNN's
 * include-padding average would count the whole window. */
static int avg_past_padding(const struct pdi_kcall *k, const struct pd_kview *x, const struct pd_kview *y)
{
    const struct pdi_attrs_avg_pool2d *p = &k->a->avg_pool2d;
    return p->count_include_pad && (right_pad(x->shape[2], y->shape[2], p->kernel_h, p->stride_h, p->pad_h) > p->pad_h ||
                                    right_pad(x->shape[3], y->shape[3], p->kernel_w, p->stride_w, p->pad_w) > p->pad_w);
}

static dnnl_status_t build_pool(const void *key, struct pdi_dnnl_entry *e)
{
    const struct conv_key *k = key;
    dnnl_data_type_t dt = (dnnl_data_type_t)k->dt;
    dnnl_memory_desc_t x, y;
    dnnl_dims_t dx = {k->x[0], k->x[1], k->x[2], k->x[3]}, dy = {k->y[0], k->y[1], k->y[2], k->y[3]};
    dnnl_status_t st = dnnl_memory_desc_init_by_tag(&x, 4, dx, dt, dnnl_nchw);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&y, 4, dy, dt, dnnl_nchw);
    if (st != dnnl_success) return st;
    const struct pdi_attrs_pool2d *p = &k->pool;
    dnnl_dims_t kern = {p->kernel_h, p->kernel_w}, strides = {p->stride_h, p->stride_w}, pad = {p->pad_h, p->pad_w};
    /* ceil_mode: the last window may reach past the right padding */
    dnnl_dims_t pad_r = {right_pad(k->x[2], k->y[2], p->kernel_h, p->stride_h, p->pad_h),
                         right_pad(k->x[3], k->y[3], p->kernel_w, p->stride_w, p->pad_w)};
    dnnl_pooling_desc_t fd, bd;
    dnnl_alg_kind_t alg = (dnnl_alg_kind_t)k->alg;
    dnnl_prop_kind_t prop = k->kind == K_POOL_FWD ? dnnl_forward_inference : dnnl_forward_training;
    st = dnnl_pooling_forward_desc_init(&fd, prop, alg, &x, &y, strides, kern, pad, pad_r);
    if (st != dnnl_success) return st;
    dnnl_primitive_attr_t attr = pdi_dnnl_user_scratchpad();
    if (k->kind == K_POOL_FWD) {
        st = dnnl_primitive_desc_create(&e->pd, &fd, attr, pdi_dnnl_engine(), NULL);
    } else {
        dnnl_primitive_desc_t hint = NULL;
        st = dnnl_primitive_desc_create(&hint, &fd, NULL, pdi_dnnl_engine(), NULL);
        if (st == dnnl_success) st = dnnl_pooling_backward_desc_init(&bd, alg, &x, &y, strides, kern, pad, pad_r);
        if (st == dnnl_success) st = dnnl_primitive_desc_create(&e->pd, &bd, attr, pdi_dnnl_engine(), hint);
        if (hint) dnnl_primitive_desc_destroy(hint);
    }
    dnnl_primitive_attr_destroy(attr);
    e->md[0] = e->imd[0] = x;
    e->md[3] = e->imd[3] = y;
    return st;
}

static int cpu_pool(const struct pdi_kcall *k, int kind, dnnl_alg_kind_t alg)
{
    const struct pd_kview *res = &k->out[0];
    const struct pd_kview *x = kind == K_POOL_FWD ? &k->in[0] : res, *y = kind == K_POOL_FWD ? res : &k->in[0];
    if (pdi_kview_numel(res) == 0) return PD_OK;
    if (alg == dnnl_pooling_avg_include_padding && avg_past_padding(k, x, y)) {
        pdi_kernel_fn ref = pdi_kernel_lookup(PDI_BACKEND_REF, k->op, res->dtype);
        if (ref) return ref(k);
    }
    struct conv_key key;
    memset(&key, 0, sizeof key);
    key.kind = kind;
    key.alg = (int)alg;
    memcpy(key.x, x->shape, sizeof key.x);
    memcpy(key.y, y->shape, sizeof key.y);
    key.pool = k->a->pool2d; /* the avg sets begin with pool2d's */
    enum pd_dtype cd;
    struct pdi_dnnl_entry *e = get_native_or_f32(&key, res->dtype, &cd, build_pool);
    if (!e) return pd_last_status();
    struct run_io io = kind == K_POOL_FWD ? (struct run_io){1, {DNNL_ARG_SRC}, {0}, DNNL_ARG_DST, 3}
                                          : (struct run_io){1, {DNNL_ARG_DIFF_DST}, {3}, DNNL_ARG_DIFF_SRC, 0};
    int rc = run_packed(k, e, cd, &io);
    pdi_dnnl_put(e);
    return rc;
}

static dnnl_alg_kind_t avg_alg(const struct pdi_kcall *k)
{
    return k->a->avg_pool2d.count_include_pad ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
}

static int cpu_max_pool2d(const struct pdi_kcall *k) { return cpu_pool(k, K_POOL_FWD, dnnl_pooling_max); }
static int cpu_avg_pool2d(const struct pdi_kcall *k) { return cpu_pool(k, K_POOL_FWD, avg_alg(k)); }
static int cpu_avg_pool2d_backward(const struct pdi_kcall *k) { return cpu_pool(k, K_POOL_BWD, avg_alg(k)); }

/* ---- max pooling backward and its transpose, in C --------------------- */
/* x, g: contiguous f32 planes. scatter: gx[argmax] += gy (gx zeroed);
 * else (gather): gy = g[argmax]. One (n, c) plane per task. */
static void max_route(const float *x, float *gplane_x, float *gplane_y, int64_t planes, int64_t hh, int64_t ww,
                      int64_t oh, int64_t ow, const struct pdi_attrs_pool2d *p, int scatter)
{
PDI_FOR(planes * oh * ow * p->kernel_h * p->kernel_w > 32768, pl, planes, {
        const float *xp = x + pl * hh * ww;
        float *gx = gplane_x + pl * hh * ww, *gy = gplane_y + pl * oh * ow;
        if (scatter) memset(gx, 0, sizeof(float) * (size_t)(hh * ww));
        for (int64_t i = 0; i < oh; i++) {
            int64_t h0 = i * p->stride_h - p->pad_h;
            int64_t a0 = h0 < 0 ? -h0 : 0, a1 = h0 + p->kernel_h > hh ? hh - h0 : p->kernel_h;
            for (int64_t j = 0; j < ow; j++) {
                int64_t v0 = j * p->stride_w - p->pad_w;
                int64_t b0 = v0 < 0 ? -v0 : 0, b1 = v0 + p->kernel_w > ww ? ww - v0 : p->kernel_w;
                int64_t best = (h0 + a0) * ww + v0 + b0;
                float bv = xp[best];
                for (int64_t a = a0; a < a1; a++) {
                    const float *row = xp + (h0 + a) * ww + v0;
                    for (int64_t b = b0; b < b1; b++)
                        if (row[b] > bv) { bv = row[b]; best = (h0 + a) * ww + v0 + b; }
                }
                if (scatter) gx[best] += gy[i * ow + j];
                else gy[i * ow + j] = gx[best];
            }
        }
    });
}

/* max_pool2d_backward: in gy, x -> gx;  max_pool2d_gather: in g, x -> gy. */
static int cpu_max_route(const struct pdi_kcall *k, int scatter)
{
    const struct pd_kview *res = &k->out[0], *g = &k->in[0], *x = &k->in[1];
    if (pdi_kview_numel(res) == 0) return PD_OK;
    int64_t nc = x->shape[0] * x->shape[1], hh = x->shape[2], ww = x->shape[3];
    const struct pd_kview *yv = scatter ? g : res;
    int64_t oh = yv->shape[2], ow = yv->shape[3];
    struct pd_kview px, pg, pr;
    void *bx = NULL, *bg = NULL, *br = NULL;
    int rc = PD_OK;
    const float *xf = (const float *)x->data, *gf = (const float *)g->data;
    float *rf = (float *)res->data;
    if (x->dtype != PD_F32 || !pdi_kview_contiguous(x)) {
        if (!(bx = pdi_linalg_pack(k, x, PD_F32, &px))) return pd_last_status();
        xf = bx;
    }
    if (g->dtype != PD_F32 || !pdi_kview_contiguous(g)) {
        if (!(bg = pdi_linalg_pack(k, g, PD_F32, &pg))) { rc = pd_last_status(); goto out; }
        gf = bg;
    }
    if (res->dtype != PD_F32) {
        size_t bytes = (size_t)pdi_kview_numel(res) * sizeof(float);
        if (!(br = pdi_kscratch(k, bytes))) {
            rc = pdi_errorf(PD_ERR_NOMEM, "out of memory (%zu bytes)", bytes);
            goto out;
        }
        pdi_linalg_contig_view(res, PD_F32, br, &pr);
        rf = br;
    }
    if (scatter) max_route(xf, rf, (float *)gf, nc, hh, ww, oh, ow, &k->a->pool2d, 1);
    else max_route(xf, (float *)gf, rf, nc, hh, ww, oh, ow, &k->a->pool2d, 0);
    if (br) pdi_linalg_copy(res, &pr);
out:
    pdi_linalg_unpack_free(k, bx, &px);
    pdi_linalg_unpack_free(k, bg, &pg);
    pdi_linalg_unpack_free(k, br, &pr);
    return rc;
}

static int cpu_max_pool2d_backward(const struct pdi_kcall *k) { return cpu_max_route(k, 1); }
static int cpu_max_pool2d_gather(const struct pdi_kcall *k) { return cpu_max_route(k, 0); }

void pdi_register_cpu_conv(void)
{
    const unsigned low = (1u << PD_F32) | (1u << PD_BF16) | (1u << PD_F16);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_conv2d, low, cpu_conv2d);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_conv2d_backward_data, low, cpu_conv2d_backward_data);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_conv2d_backward_weight, low, cpu_conv2d_backward_weight);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_max_pool2d, low, cpu_max_pool2d);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_avg_pool2d, low, cpu_avg_pool2d);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_avg_pool2d_backward, low, cpu_avg_pool2d_backward);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_max_pool2d_backward, low, cpu_max_pool2d_backward);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_max_pool2d_gather, low, cpu_max_pool2d_gather);
}
