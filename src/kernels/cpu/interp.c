/* paddle.c — CPU kernels for image resizing: interpolate (nearest,
 * bilinear) and its adjoint interpolate_backward.
 *
 * Work is split over the N * C planes (OpenMP); each plane is read into a
 * per-thread buffer in the compute type (f32 for f32/bf16/f16, f64 for
 * f64; a plain copy for a contiguous f32/f64 plane), resized there with the
 * shared source tables (src/kernels/interp_util.h, PyTorch's positions and
 * rounding) and written out. The backward adds into a zeroed plane in the
 * compute type; a plane belongs to one thread, so results do not depend on
 * the thread count.
 */
#include <string.h>

#include "core/kernel.h"
#include "kernels/interp_util.h"

#define INTERP_GRAIN 16384 /* output elements below which a call stays on one thread */

/* Plane p (= n * C + c) of v into buf (H * W values of ct, row-major). */
static void load_plane(const struct pd_kview *v, int64_t p, void *buf, enum pd_dtype ct)
{
    int64_t C = v->shape[1], H = v->shape[2], W = v->shape[3];
    size_t es = pd_dtype_size(v->dtype);
    const char *base = v->data + ((p / C) * v->strides[0] + (p % C) * v->strides[1]) * (int64_t)es;
    for (int64_t h = 0; h < H; h++) {
        const char *row = base + h * v->strides[2] * (int64_t)es;
        if (v->dtype == ct && v->strides[3] == 1) {
            memcpy((char *)buf + (size_t)(h * W) * es, row, (size_t)W * es);
            continue;
        }
        int64_t sb = v->strides[3] * (int64_t)es;
        if (ct == PD_F64)
            for (int64_t w = 0; w < W; w++) ((double *)buf)[h * W + w] = pdi_load(row + w * sb, v->dtype);
        else
            for (int64_t w = 0; w < W; w++) ((float *)buf)[h * W + w] = (float)pdi_load(row + w * sb, v->dtype);
    }
}

/* n values of ct from buf into the contiguous y at element offset off. */
static void store_plane(const void *buf, enum pd_dtype ct, const struct pd_kview *y, int64_t off, int64_t n)
{
    size_t es = pd_dtype_size(y->dtype);
    char *dst = y->data + off * (int64_t)es;
    if (y->dtype == ct) {
        memcpy(dst, buf, (size_t)n * es);
        return;
    }
    for (int64_t e = 0; e < n; e++) pdi_store(dst + e * (int64_t)es, y->dtype, ((const float *)buf)[e]);
}

/* The resize of one plane, forward (x [H, W] -> y [OH, OW]) or backward
 * (y [OH, OW] -> x [H, W], x zeroed first), in T. */
#define INTERP_PLANE(T, SFX)                                                                        \
    static void fwd_plane_##SFX(const T *x, T *y, int64_t W, int64_t OH, int64_t OW, int bil,       \
                                const struct pdi_interp_tables *t)                                  \
    {                                                                                               \
        for (int64_t i = 0; i < OH; i++) {                                                          \
            const T *r0 = x + t->i0h[i] * W, *r1 = x + t->i1h[i] * W;                               \
            T *yr = y + i * OW;                                                                     \
            if (!bil) {                                                                             \
                for (int64_t j = 0; j < OW; j++) yr[j] = r0[t->i0w[j]];                             \
                continue;                                                                           \
            }                                                                                       \
            T h0 = (T)t->l0h[i], h1 = (T)t->l1h[i];                                                 \
            for (int64_t j = 0; j < OW; j++) {                                                      \
                T w0 = (T)t->l0w[j], w1 = (T)t->l1w[j];                                             \
                T top = r0[t->i0w[j]] * w0 + r0[t->i1w[j]] * w1;                                    \
                T bot = r1[t->i0w[j]] * w0 + r1[t->i1w[j]] * w1;                                    \
                yr[j] = top * h0 + bot * h1;                                                        \
            }                                                                                       \
        }                                                                                           \
    }                                                                                               \
    static void bwd_plane_##SFX(T *dx, const T *g, int64_t H, int64_t W, int64_t OH, int64_t OW, int bil, \
                                const struct pdi_interp_tables *t)                                  \
    {                                                                                               \
        memset(dx, 0, sizeof(T) * (size_t)(H * W));                                                 \
        for (int64_t i = 0; i < OH; i++) {                                                          \
            T *r0 = dx + t->i0h[i] * W, *r1 = dx + t->i1h[i] * W;                                   \
            const T *gr = g + i * OW;                                                               \
            if (!bil) {                                                                             \
                for (int64_t j = 0; j < OW; j++) r0[t->i0w[j]] += gr[j];                            \
                continue;                                                                           \
            }                                                                                       \
            T h0 = (T)t->l0h[i], h1 = (T)t->l1h[i];                                                 \
            for (int64_t j = 0; j < OW; j++) {                                                      \
                T w0 = (T)t->l0w[j], w1 = (T)t->l1w[j], v = gr[j];                                  \
                r0[t->i0w[j]] += h0 * w0 * v;                                                       \
                r0[t->i1w[j]] += h0 * w1 * v;                                                       \
                r1[t->i0w[j]] += h1 * w0 * v;                                                       \
                r1[t->i1w[j]] += h1 * w1 * v;                                                       \
            }                                                                                       \
        }                                                                                           \
    }
INTERP_PLANE(float, f32)
INTERP_PLANE(double, f64)

/* Forward (bwd = 0): in x, out y; backward: in g, out dx. Either way the
 * tables map the forward's output positions to its input positions. */
static int interp_run(const struct pdi_kcall *k, int bwd)
{
    const struct pd_kview *in = &k->in[0], *out = &k->out[0];
    const struct pd_kview *big = bwd ? out : in, *small = bwd ? in : out; /* forward input / output sides */
    int64_t P = in->shape[0] * in->shape[1], H = big->shape[2], W = big->shape[3];
    int64_t OH = small->shape[2], OW = small->shape[3];
    if (P == 0 || H * W == 0 || OH * OW == 0) return PD_OK; /* each product is one tensor's: no overflow */
    enum pd_dtype ct = in->dtype == PD_F64 ? PD_F64 : PD_F32;
    size_t ces = pd_dtype_size(ct), tb = pdi_interp_tables_bytes(OH, OW);
    void *block = pdi_kscratch(k, tb);
    if (!block) return pdi_errorf(PD_ERR_NOMEM, "out of memory (%s)", pdi_op_name(k->op));
    struct pdi_interp_tables t;
    pdi_interp_tables_fill(&t, block, k->a, H, W, ct == PD_F64);
    int bil = k->a->interpolate.mode == 1, failed = 0;
    int64_t in_n = in->shape[2] * in->shape[3], out_n = out->shape[2] * out->shape[3];
    size_t bbytes = ces * (size_t)(in_n + out_n);
    int par = P > 1 && P * out_n >= INTERP_GRAIN;
#pragma omp parallel if (par) reduction(| : failed) num_threads(pdi_num_threads())
    {
        char *buf = pdi_kscratch(k, bbytes);
        if (!buf) failed = 1;
#pragma omp for schedule(static)
        for (int64_t p = 0; p < P; p++) {
            if (!buf) continue;
            char *ob = buf + ces * (size_t)in_n;
            load_plane(in, p, buf, ct);
            if (ct == PD_F64) {
                if (bwd) bwd_plane_f64((double *)ob, (const double *)buf, H, W, OH, OW, bil, &t);
                else fwd_plane_f64((const double *)buf, (double *)ob, W, OH, OW, bil, &t);
            } else {
                if (bwd) bwd_plane_f32((float *)ob, (const float *)buf, H, W, OH, OW, bil, &t);
                else fwd_plane_f32((const float *)buf, (float *)ob, W, OH, OW, bil, &t);
            }
            store_plane(ob, ct, out, p * out_n, out_n);
        }
        pdi_kscratch_free(k, buf, bbytes);
    }
    pdi_kscratch_free(k, block, tb);
    return failed ? pdi_errorf(PD_ERR_NOMEM, "out of memory (%s plane buffers)", pdi_op_name(k->op)) : PD_OK;
}

static int cpu_interpolate(const struct pdi_kcall *k) { return interp_run(k, 0); }
static int cpu_interpolate_backward(const struct pdi_kcall *k) { return interp_run(k, 1); }

void pdi_register_cpu_interp(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_interpolate, PDI_DT_FLOATS, cpu_interpolate);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_interpolate_backward, PDI_DT_FLOATS, cpu_interpolate_backward);
}
