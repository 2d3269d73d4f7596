/* paddle.c — the random ops' element formulas and counter mapping, shared
 * by the reference and CPU kernels (they are the ops' semantics: one
 * definition keeps the two backends bit-identical by construction).
 *
 * Element g (row-major index in the whole draw) of uniform, normal and
 * randint reads the Philox words offset + 2g and offset + 2g + 1; of
 * bernoulli the word offset + g. See src/ops/ops_random.def.
 */
#ifndef PD_KERNELS_RANDOM_UTIL_H
#define PD_KERNELS_RANDOM_UTIL_H

#include <math.h>
#include <string.h>

#include "core/kernel.h"

/* Output rows (along the last dim) and where each starts in the whole draw.
 * Without a slice the output is one row of numel elements. */
struct pdi_rand_map {
    int ndim, sliced;
    int64_t rows, len;
    int64_t shape[PD_MAX_DIMS], start[PD_MAX_DIMS], wstride[PD_MAX_DIMS];
};

static inline void pdi_rand_map_init(struct pdi_rand_map *m, const int64_t *shape, int ndim,
                                     const struct pdi_ints *slice)
{
    memset(m, 0, sizeof *m);
    m->ndim = ndim;
    m->sliced = slice->n != 0 && ndim > 0;
    int64_t n = pdi_numel(shape, ndim);
    if (!m->sliced) {
        m->rows = n > 0;
        m->len = n;
        return;
    }
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        m->shape[d] = shape[d];
        m->start[d] = slice->v[ndim + d];
        m->wstride[d] = s;
        s *= slice->v[d];
    }
    m->len = shape[ndim - 1];
    m->rows = m->len ? n / m->len : 0;
}

/* Whole-draw index of row r's first element. */
static inline int64_t pdi_rand_row(const struct pdi_rand_map *m, int64_t r)
{
    if (!m->sliced) return 0;
    int64_t g = m->start[m->ndim - 1] * m->wstride[m->ndim - 1];
    for (int d = m->ndim - 2; d >= 0; d--) {
        g += (m->start[d] + r % m->shape[d]) * m->wstride[d];
        r /= m->shape[d];
    }
    return g;
}

/* Whole-draw index of output element i (row-major in the output). */
static inline int64_t pdi_rand_index(const struct pdi_rand_map *m, int64_t i)
{
    if (!m->sliced) return i;
    return pdi_rand_row(m, i / m->len) + i % m->len;
}

static inline double pdi_rand_u01_53(uint32_t a, uint32_t b) /* [0, 1) with 53 bits */
{
    return (double)(((uint64_t)a << 21) ^ (b >> 11)) * 0x1p-53;
}

/* randint's former formula: lo and hi rounded to double, the span their
 * rounded difference. 1 (with the integer base lo rounds to and the span)
 * when that is defined (a span in [1, 2^64), a base below 2^63) and keeps
 * every draw inside [lo, hi); 0 otherwise. */
static inline int pdi_randint_double_ok(int64_t lo, int64_t hi, int64_t *base, uint64_t *span)
{
    double lo_d = (double)lo, span_d = (double)hi - lo_d;
    if (!(span_d >= 1 && span_d < 0x1p64 && lo_d < 0x1p63)) return 0;
    *base = (int64_t)lo_d;
    *span = (uint64_t)span_d;
    return *base >= lo && (__int128)*base + (__int128)*span <= (__int128)hi;
}

/* One element of uniform, normal or randint from its two words, stored at
 * dst in dt. */
static inline void pdi_rand_elem(enum pd_op op, const struct pdi_attrs *a, uint32_t w0, uint32_t w1, char *dst,
                                 enum pd_dtype dt)
{
    double v;
    if (op == PD_OP_uniform) {
        double lo = a->uniform.low, hi = a->uniform.high;
        double u = pdi_rand_u01_53(w0, w1);
        v = lo + (hi - lo) * u;
    } else if (op == PD_OP_normal) {
        /* Box-Muller on two 26/27-bit halves of the same pair keeps one
         * pair per element (reproducible per index). */
        double mean = a->normal.mean, std = a->normal.std;
        double u1 = ((double)(w0 >> 5) + 1.0) * 0x1p-27; /* (0, 1] */
        double u2 = (double)(w1 >> 6) * 0x1p-26;
        v = mean + std * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
    } else {
        /* randint: r mod span added to lo. Wherever the former formula in
         * double is defined and stays inside [lo, hi), it is kept bit for bit
         * (its draws are pinned, tests/test_create_random.c): bounds rounded
         * to double, their difference rounded. Elsewhere (a span that rounds
         * to 0, as [INT64_MIN, INT64_MIN + 10) does; a span of 2^64; a lo
         * that rounds to 2^63; bounds that round outside the range) the span
         * is hi - lo exactly, in unsigned 64-bit. The sums are unsigned and
         * wrap back into [lo, hi): no signed overflow either way. */
        uint64_t r = ((uint64_t)w0 << 32) | w1, span;
        int64_t lo = a->randint.low, hi = a->randint.high, base;
        int via_double = pdi_randint_double_ok(lo, hi, &base, &span);
        if (!via_double) {
            base = lo;
            span = (uint64_t)hi - (uint64_t)lo; /* infer checked lo < hi: in [1, 2^64 - 1] */
        }
        int64_t x = (int64_t)((uint64_t)base + r % span); /* two's complement */
        if (dt == PD_I64) {
            *(int64_t *)dst = x;
            return;
        }
        v = via_double ? (double)lo + (double)(r % span) : (double)x; /* other dtypes: stored saturated */
    }
    if (dt == PD_F32)
        *(float *)dst = (float)v;
    else
        pdi_store(dst, dt, v);
}

/* bernoulli's probabilities, checked by the kernel (only it sees values):
 * each in [0, 1]. An expanded p (a scalar broadcast, as dropout's) is read
 * once per distinct element: stride-0 dims are walked as size 1. */
static inline int pdi_rand_check_p(const struct pd_kview *p)
{
    struct pd_kview u = *p;
    for (int d = 0; d < u.ndim; d++)
        if (u.strides[d] == 0) u.shape[d] = 1;
    int64_t n = pdi_kview_numel(&u);
    int f32 = u.dtype == PD_F32 && pdi_kview_contiguous(&u);
    for (int64_t i = 0; i < n; i++) {
        double v = f32 ? (double)((const float *)u.data)[i] : pdi_load(pdi_kview_ptr(&u, i), u.dtype);
        if (!(v >= 0 && v <= 1)) return pdi_errorf(PD_ERR_INVALID, "bernoulli: p must be in [0, 1], got %g", v);
    }
    return PD_OK;
}

/* bernoulli: u = (w + 0.5) / 2^32 in (0, 1), 1 where u < p. */
static inline int pdi_rand_bernoulli(uint32_t w, double p) { return ((double)w + 0.5) * 0x1p-32 < p; }

#endif
