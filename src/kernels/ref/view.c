/* paddle.c — reference kernels for the view family (copies, slice and
 * diagonal backward). Naive, element by element through double: the oracle. */
#include <string.h>

#include "core/kernel.h"

static int ref_copy(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int64_t n = pdi_kview_numel(y);
    size_t es = pd_dtype_size(y->dtype);
    for (int64_t i = 0; i < n; i++) memcpy(pdi_kview_ptr(y, i), pdi_kview_ptr(x, i), es);
    return PD_OK;
}

/* Zero the output, then write the gradient where the slice came from. */
static int ref_slice_backward(const struct pdi_kcall *k)
{
    const struct pd_kview *g = &k->in[0], *y = &k->out[0];
    int64_t n = pdi_kview_numel(y);
    size_t es = pd_dtype_size(y->dtype);
    memset(y->data, 0, (size_t)n * es);
    struct pd_kview dst = *y;
    const struct pdi_attrs_slice_backward *a = &k->a->slice_backward;
    int ax = (int)a->axis;
    int64_t start = a->start, step = a->step;
    dst.shape[ax] = g->shape[ax];
    dst.data += start * y->strides[ax] * (int64_t)es;
    /* overflows only when the slice has one element (infer checked it): then it never steps */
    if (!pdi_mul_ok(y->strides[ax], step, &dst.strides[ax])) dst.strides[ax] = y->strides[ax];
    int64_t m = pdi_kview_numel(g);
    for (int64_t i = 0; i < m; i++) memcpy(pdi_kview_ptr(&dst, i), pdi_kview_ptr(g, i), es);
    return PD_OK;
}

static int ref_diagonal_backward(const struct pdi_kcall *k)
{
    const struct pd_kview *g = &k->in[0], *y = &k->out[0];
    int64_t n = pdi_kview_numel(y);
    size_t es = pd_dtype_size(y->dtype);
    memset(y->data, 0, (size_t)n * es);
    int nd = y->ndim;
    const struct pdi_attrs_diagonal_backward *a = &k->a->diagonal_backward;
    int a1 = pdi_norm_axis((int)a->axis1, nd), a2 = pdi_norm_axis((int)a->axis2, nd);
    int64_t off = a->offset;
    int64_t s1 = off >= 0 ? 0 : -off, s2 = off >= 0 ? off : 0;
    struct pd_kview dst = {.data = y->data, .dtype = y->dtype, .ndim = 0};
    for (int i = 0; i < nd; i++) {
        if (i == a1 || i == a2) continue;
        dst.shape[dst.ndim] = y->shape[i];
        dst.strides[dst.ndim++] = y->strides[i];
    }
    dst.shape[dst.ndim] = g->shape[g->ndim - 1];
    dst.strides[dst.ndim++] = y->strides[a1] + y->strides[a2];
    dst.data += (s1 * y->strides[a1] + s2 * y->strides[a2]) * (int64_t)es;
    int64_t m = pdi_kview_numel(g);
    for (int64_t i = 0; i < m; i++) memcpy(pdi_kview_ptr(&dst, i), pdi_kview_ptr(g, i), es);
    return PD_OK;
}

void pdi_register_ref_view(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_copy, PDI_DT_ALL, ref_copy);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_slice_backward, PDI_DT_ALL, ref_slice_backward);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_diagonal_backward, PDI_DT_ALL, ref_diagonal_backward);
}
