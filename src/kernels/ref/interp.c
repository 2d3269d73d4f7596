/* paddle.c — reference kernels for image resizing: interpolate (nearest,
 * bilinear) and its adjoint interpolate_backward.
 *
 * The oracle: element by element through pdi_kview_ptr (any strides), in
 * double; the source positions and weights come from the shared tables
 * (src/kernels/interp_util.h), which follow PyTorch's rounding.
 */
#include <string.h>

#include "core/kernel.h"
#include "kernels/interp_util.h"

static double ld4(const struct pd_kview *v, int64_t p, int64_t h, int64_t w)
{
    return pdi_load(pdi_kview_ptr(v, (p * v->shape[2] + h) * v->shape[3] + w), v->dtype);
}

/* x [N, C, H, W] -> y [N, C, out_h, out_w]. Nearest copies the source
 * pixel (an inf stays inf); bilinear is
 * l0h (l0w x[h0, w0] + l1w x[h0, w1]) + l1h (l0w x[h1, w0] + l1w x[h1, w1]). */
static int ref_interpolate(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int64_t P = x->shape[0] * x->shape[1], OH = y->shape[2], OW = y->shape[3];
    if (P * OH * OW == 0) return PD_OK;
    struct pdi_interp_tables t;
    void *block = pdi_kscratch(k, pdi_interp_tables_bytes(OH, OW));
    if (!block) return pdi_errorf(PD_ERR_NOMEM, "out of memory (interpolate)");
    pdi_interp_tables_fill(&t, block, k->a, x->shape[2], x->shape[3], x->dtype == PD_F64);
    int bil = k->a->interpolate.mode == 1;
    for (int64_t p = 0; p < P; p++)
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                double v;
                if (!bil) {
                    v = ld4(x, p, t.i0h[i], t.i0w[j]);
                } else {
                    double top = ld4(x, p, t.i0h[i], t.i0w[j]) * t.l0w[j] + ld4(x, p, t.i0h[i], t.i1w[j]) * t.l1w[j];
                    double bot = ld4(x, p, t.i1h[i], t.i0w[j]) * t.l0w[j] + ld4(x, p, t.i1h[i], t.i1w[j]) * t.l1w[j];
                    v = top * t.l0h[i] + bot * t.l1h[i];
                }
                pdi_store(pdi_kview_ptr(y, (p * OH + i) * OW + j), y->dtype, v);
            }
    pdi_kscratch_free(k, block, t.bytes);
    return PD_OK;
}

/* g [N, C, out_h, out_w] -> dx [N, C, in_h, in_w]: each g element added at
 * the positions interpolate read for it, times their weights (a double
 * accumulator per plane). */
static int ref_interpolate_backward(const struct pdi_kcall *k)
{
    const struct pd_kview *g = &k->in[0], *dx = &k->out[0];
    int64_t P = g->shape[0] * g->shape[1], OH = g->shape[2], OW = g->shape[3];
    int64_t H = dx->shape[2], W = dx->shape[3];
    if (P * H * W == 0) return PD_OK;
    size_t tb = pdi_interp_tables_bytes(OH, OW), ab = sizeof(double) * (size_t)(H * W);
    void *block = pdi_kscratch(k, tb);
    double *acc = pdi_kscratch(k, ab);
    if (!block || !acc) {
        pdi_kscratch_free(k, block, tb);
        pdi_kscratch_free(k, acc, ab);
        return pdi_errorf(PD_ERR_NOMEM, "out of memory (interpolate_backward)");
    }
    struct pdi_interp_tables t;
    pdi_interp_tables_fill(&t, block, k->a, H, W, g->dtype == PD_F64);
    int bil = k->a->interpolate.mode == 1;
    for (int64_t p = 0; p < P; p++) {
        memset(acc, 0, ab);
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                double v = ld4(g, p, i, j);
                if (!bil) {
                    acc[t.i0h[i] * W + t.i0w[j]] += v;
                    continue;
                }
                acc[t.i0h[i] * W + t.i0w[j]] += t.l0h[i] * t.l0w[j] * v;
                acc[t.i0h[i] * W + t.i1w[j]] += t.l0h[i] * t.l1w[j] * v;
                acc[t.i1h[i] * W + t.i0w[j]] += t.l1h[i] * t.l0w[j] * v;
                acc[t.i1h[i] * W + t.i1w[j]] += t.l1h[i] * t.l1w[j] * v;
            }
        for (int64_t e = 0; e < H * W; e++) pdi_store(pdi_kview_ptr(dx, p * H * W + e), dx->dtype, acc[e]);
    }
    pdi_kscratch_free(k, acc, ab);
    pdi_kscratch_free(k, block, tb);
    return PD_OK;
}

void pdi_register_ref_interp(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_interpolate, PDI_DT_FLOATS, ref_interpolate);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_interpolate_backward, PDI_DT_FLOATS, ref_interpolate_backward);
}
