/* paddle.c — index helpers shared by the reference and CPU kernels of the
 * index family (the mapping itself is semantics, not an optimisation: one
 * definition keeps the two backends agreeing by construction). */
#ifndef PD_KERNELS_INDEX_UTIL_H
#define PD_KERNELS_INDEX_UTIL_H

#include <stdint.h>

/* Per-dim padding before each dim, from pads in torch order. */
static inline void pdi_pads_before(const int64_t *pads, int np, int nd, int64_t *before)
{
    for (int d = 0; d < nd; d++) before[d] = 0;
    for (int p = 0; p < np / 2; p++) before[nd - 1 - p] = pads[2 * p];
}

/* Coordinate of x read by padded coordinate o (dim of size n, `before`
 * padding), or -1 for the constant. Reflect pads are smaller than n, so one
 * reflection suffices. */
static inline int64_t pdi_pad_src(int64_t o, int64_t before, int64_t n, int64_t mode)
{
    int64_t s = o - before;
    if (s >= 0 && s < n) return s;
    if (mode == PD_PAD_CONSTANT) return -1;
    if (mode == PD_PAD_REPLICATE) return s < 0 ? 0 : n - 1;
    return s < 0 ? -s : 2 * (n - 1) - s;
}

#endif
