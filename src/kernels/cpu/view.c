/* paddle.c — CPU kernels for the view family: strided copy (the kernel
 * behind contiguous/clone/copy_) with memcpy on contiguous runs. */
#include <string.h>

#include "core/kernel.h"

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

/* Copy of a batch of transposed matrices (input's last dim strided, its
 * second-to-last unit-stride) into a contiguous output, in 32x32 tiles so
 * both sides stay in cache; an element-by-element walk would miss on
 * every read. */
#define TILE 32
#define TCOPY(T)                                                                          \
    for (int64_t r = r0; r < r1; r++)                                                     \
        for (int64_t c = c0; c < c1; c++)                                                 \
            ((T *)yb)[r * C + c] = *(const T *)(xb + (r * xs0 + c * xs1) * (int64_t)es);

static void copy_tiled(const struct pd_kview *x, const struct pd_kview *y)
{
    int nd = y->ndim;
    int64_t R = y->shape[nd - 2], C = y->shape[nd - 1], xs0 = x->strides[nd - 2], xs1 = x->strides[nd - 1];
    int64_t batch = pdi_kview_numel(y) / (R * C), nbr = (R + TILE - 1) / TILE, nbc = (C + TILE - 1) / TILE;
    size_t es = pd_dtype_size(y->dtype);
    int64_t tasks = batch * nbr * nbc;
    PDI_FOR(R * C * batch >= PDI_PAR_GRAIN, t, tasks, {
        int64_t b = t / (nbr * nbc), tr = (t / nbc) % nbr, tc = t % nbc;
        int64_t off = 0, rem = b;
        for (int d = nd - 3; d >= 0; d--) {
            off += (rem % x->shape[d]) * x->strides[d];
            rem /= x->shape[d];
        }
        const char *xb = x->data + off * (int64_t)es;
        char *yb = y->data + b * R * C * (int64_t)es;
        int64_t r0 = tr * TILE, r1 = r0 + TILE < R ? r0 + TILE : R;
        int64_t c0 = tc * TILE, c1 = c0 + TILE < C ? c0 + TILE : C;
        switch (es) {
        case 8: TCOPY(uint64_t) break;
        case 4: TCOPY(uint32_t) break;
        case 2: TCOPY(uint16_t) break;
        default: TCOPY(uint8_t) break;
        }
    });
}

static int cpu_copy(const struct pdi_kcall *k)
{
    struct pd_kview y = k->out[0], x = k->in[0];
    int nd = y.ndim;
    if (nd >= 2 && pdi_kview_contiguous(&y) && x.strides[nd - 2] == 1 && x.strides[nd - 1] != 1 &&
        y.shape[nd - 2] >= 8 && y.shape[nd - 1] >= 8) {
        copy_tiled(&x, &y);
        return PD_OK;
    }
    struct pd_kview *ops[2] = {&y, &x};
    size_t es = pd_dtype_size(y.dtype);
    pdi_iter(2, ops, y.shape, y.ndim, copy_run, &es);
    return PD_OK;
}

void pdi_register_cpu_view(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_copy, PDI_DT_ALL, cpu_copy);
}
