/* paddle.c — reference kernels of the creation ops and of the in-place
 * writes copy_ and fill_: element by element through double. */
#include <string.h>

#include "core/kernel.h"

static int ref_empty(const struct pdi_kcall *k)
{
    PDI_UNUSED(k); /* uninitialised by definition */
    return PD_OK;
}

/* full (value) and fill_ (value, into a strided view) */
static int ref_fill(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    double v = k->op == PD_OP_full ? k->a->full.value : k->a->fill.value;
    int64_t n = pdi_kview_numel(y);
    for (int64_t i = 0; i < n; i++) pdi_store(pdi_kview_ptr(y, i), y->dtype, v);
    return PD_OK;
}

static int ref_arange(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    double start = k->a->arange.start, step = k->a->arange.step;
    int64_t n = pdi_kview_numel(y), o = k->a->arange.piece.n ? k->a->arange.piece.v[0] : 0;
    for (int64_t i = 0; i < n; i++) pdi_store(pdi_kview_ptr(y, i), y->dtype, start + (double)(o + i) * step);
    return PD_OK;
}

static int ref_linspace(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    double start = k->a->linspace.start, stop = k->a->linspace.stop;
    int64_t n = pdi_kview_numel(y);
    const struct pdi_ints *p = &k->a->linspace.piece;
    int64_t o = p->n ? p->v[0] : 0, num = p->n ? k->a->linspace.num : n;
    double step = num > 1 ? (stop - start) / (double)(num - 1) : 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t g = o + i;
        double v = g < num / 2 ? start + step * (double)g : stop - step * (double)(num - 1 - g);
        pdi_store(pdi_kview_ptr(y, i), y->dtype, v);
    }
    return PD_OK;
}

static int ref_eye(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    int64_t n = pdi_kview_numel(y), m = y->shape[1];
    const struct pdi_ints *p = &k->a->eye.piece; /* a piece: its row and column starts */
    int64_t r0 = p->n ? p->v[0] : 0, c0 = p->n ? p->v[1] : 0;
    for (int64_t i = 0; i < n; i++) pdi_store(pdi_kview_ptr(y, i), y->dtype, r0 + i / m == c0 + i % m ? 1.0 : 0.0);
    return PD_OK;
}

/* copy_: in[1] (dst's shape and dtype) into out[0] (= in[0]) */
static int ref_copy_(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[1], *y = &k->out[0];
    int64_t n = pdi_kview_numel(y);
    size_t es = pd_dtype_size(y->dtype);
    for (int64_t i = 0; i < n; i++) memcpy(pdi_kview_ptr(y, i), pdi_kview_ptr(x, i), es);
    return PD_OK;
}

void pdi_register_ref_create(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_empty, PDI_DT_ALL, ref_empty);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_full, PDI_DT_ALL, ref_fill);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_arange, PDI_DT_ALL, ref_arange);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_linspace, PDI_DT_ALL, ref_linspace);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_eye, PDI_DT_ALL, ref_eye);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_copy_, PDI_DT_ALL, ref_copy_);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_fill_, PDI_DT_ALL, ref_fill);
}
