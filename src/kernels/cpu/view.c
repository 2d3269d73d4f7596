/* paddle.c — CPU kernels for the view family: strided copy (the kernel
 * behind contiguous/clone/copy_) with memcpy on contiguous runs. */
#include <string.h>

#include "core/internal.h"

static void copy_run(char **p, const int64_t *st, int64_t n, void *ctx)
{
    size_t es = *(const size_t *)ctx;
    if (st[0] == (int64_t)es && st[1] == (int64_t)es) { memcpy(p[0], p[1], (size_t)n * es); return; }
    switch (es) {
    case 4:
        for (int64_t i = 0; i < n; i++) *(uint32_t *)(p[0] + i * st[0]) = *(const uint32_t *)(p[1] + i * st[1]);
        break;
    case 8:
        for (int64_t i = 0; i < n; i++) *(uint64_t *)(p[0] + i * st[0]) = *(const uint64_t *)(p[1] + i * st[1]);
        break;
    case 2:
        for (int64_t i = 0; i < n; i++) *(uint16_t *)(p[0] + i * st[0]) = *(const uint16_t *)(p[1] + i * st[1]);
        break;
    default:
        for (int64_t i = 0; i < n; i++) *(p[0] + i * st[0]) = *(p[1] + i * st[1]);
    }
}

static int cpu_copy(const struct pdi_kcall *k)
{
    struct pd_kview y = k->out[0], x = k->in[0];
    struct pd_kview *ops[2] = {&y, &x};
    size_t es = pd_dtype_size(y.dtype);
    pdi_iter(2, ops, y.shape, y.ndim, copy_run, &es);
    return PD_OK;
}

void pdi_register_cpu_view(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_copy, PDI_DT_ALL, cpu_copy);
}
