/* paddle.c — checked int64 arithmetic and the element limit of a shape.
 *
 * Attributes (slice bounds, diagonals, pads, repetitions, windows) reach
 * shape arithmetic straight from callers, so any int64 may arrive there:
 * sums and products of them go through these helpers, never through plain
 * + and *, whose overflow is undefined behaviour (docs/reliability.md, "Op
 * input validation"). Header-only, so that kernels may include it too.
 *
 * The element limit: a shape may describe at most PDI_MAX_NUMEL elements,
 * counting a 0 dim as 1 (so the contiguous strides of a zero-size shape
 * fit as well). With every tensor and view inside the limit, numel, strides
 * and element offsets of valid tensors never overflow, and the unchecked
 * pdi_numel is safe on them.
 */
#ifndef PD_CORE_CHECKED_H
#define PD_CORE_CHECKED_H

#include <stdint.h>

#define PDI_MAX_NUMEL ((int64_t)1 << 46)

/* 1 and *r = a op b when the result fits int64_t; 0 (and *r unspecified)
 * when it overflows. */
static inline int pdi_add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline int pdi_sub_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_sub_overflow(a, b, r); }
static inline int pdi_mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* v clamped to [lo, hi] (lo <= hi). */
static inline int64_t pdi_clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The one checked shape product: 0 and *numel when every dim is >= 0 and
 * the product of max(dim, 1) is at most PDI_MAX_NUMEL; -1 for a negative
 * dim, -2 past the limit (then *numel is unspecified). No message: callers
 * name their op (pdi_check_numel in core/internal.h writes one). */
static inline int pdi_shape_numel(const int64_t *shape, int ndim, int64_t *numel)
{
    int64_t n = 1, extent = 1;
    for (int i = 0; i < ndim; i++) {
        int64_t d = shape[i];
        if (d < 0) return -1;
        if (d > PDI_MAX_NUMEL || !pdi_mul_ok(extent, d ? d : 1, &extent) || extent > PDI_MAX_NUMEL) return -2;
        n = d ? n * d : 0; /* <= extent: cannot overflow */
    }
    *numel = n;
    return 0;
}

#endif
