/* paddle.c — CPU kernels for the nn family: softmax, log_softmax, nll_loss,
 * nll_loss_backward, layer_norm, rms_norm, group_norm, norm_backward,
 * embedding, one_hot.
 *
 * Row ops (softmax over an axis, the norms over trailing dims) share one
 * driver: a "row" is a 1-d strided run of the input; rows are split over
 * OpenMP threads; each row is computed in the compute type (f32 for
 * f32/bf16/f16, f64 for f64) either in place in the output (when it already
 * has that type) or in a per-thread row buffer, so bf16/f16 are widened a
 * row at a time while the row is hot in cache. Sums are accumulated in f32
 * blocks of NN_BLOCK elements added into a double, which keeps long rows
 * accurate at f32 speed. Softmax over a non-last axis of a contiguous f32
 * tensor runs column blocks instead, vectorised across the inner dim.
 * exp is a branch-free Cody-Waite + polynomial exp that vectorises and keeps
 * NaN, inf and subnormal results right (libm's expf does not vectorise).
 * f32 softmax rows run on explicit AVX2/AVX-512 vectors and prefetch the
 * next row during their compute-bound exp pass, which keeps them near
 * memory speed (see softmax_row_vf).
 * Index values are checked before any read; a bad one fails the call.
 * norm_backward computes dx a row at a time (statistics, then one pass) and
 * sums dw/db per fixed chunk of rows (chunks depend on the shape only, are
 * added in chunk order, and each belongs to one thread), so the parameter
 * gradients are bitwise the same whatever the thread count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef __F16C__
#include <immintrin.h>
#endif

#include "core/kernel.h"
#include "kernels/cpu/unary_math.h"

/* FP ops here never trap, so GCC may if-convert the clamps in exp_f32 and
 * vectorise every loop that calls it (with the default -ftrapping-math it
 * refuses to compute the polynomial speculatively). Results are unchanged. */
#pragma GCC optimize("no-trapping-math")

#define NN_BLOCK 256
#define NN_GRAIN 16384 /* elements below which a kernel stays on one thread */

/* exp: the unary family's vectorisable pdi_vexpf (~1 ulp, NaN, inf and
 * subnormal results right; libm's expf does not vectorise). */
#define exp_f32 pdi_vexpf

/* Element offset of linear index lin over dims [d0, d1) of v, skipping dim
 * `skip` (row-major order over the remaining dims). */
static int64_t lin_offset(const struct pd_kview *v, int d0, int d1, int skip, int64_t lin)
{
    int64_t off = 0;
    for (int d = d1 - 1; d >= d0; d--) {
        if (d == skip) continue;
        int64_t sz = v->shape[d];
        off += (lin % sz) * v->strides[d];
        lin /= sz;
    }
    return off;
}

/* ---- row conversions to/from the compute type ------------------------ */
static void load_row(const char *p, int64_t stride, enum pd_dtype dt, void *dst, enum pd_dtype ct, int64_t n)
{
    if (ct == PD_F64) {
        double *d = dst;
        if (dt == PD_F64 && stride == 1) { memcpy(d, p, (size_t)n * sizeof *d); return; }
        int64_t sb = stride * (int64_t)pd_dtype_size(dt);
        for (int64_t i = 0; i < n; i++) d[i] = pdi_load(p + i * sb, dt);
        return;
    }
    float *d = dst;
    if (stride == 1) {
        switch (dt) {
        case PD_F32: memcpy(d, p, (size_t)n * sizeof *d); return;
        case PD_BF16: {
            const uint16_t *s = (const uint16_t *)p;
            for (int64_t i = 0; i < n; i++) d[i] = pdi_bf16_f32(s[i]);
            return;
        }
        case PD_F16: {
            const uint16_t *s = (const uint16_t *)p;
            int64_t i = 0;
#ifdef __F16C__
            for (; i + 8 <= n; i += 8)
                _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
#endif
            for (; i < n; i++) d[i] = pd_f16_to_f32(s[i]);
            return;
        }
        default: break;
        }
    }
    int64_t sb = stride * (int64_t)pd_dtype_size(dt);
    switch (dt) {
    case PD_F32: for (int64_t i = 0; i < n; i++) d[i] = *(const float *)(p + i * sb); break;
    case PD_BF16: for (int64_t i = 0; i < n; i++) d[i] = pdi_bf16_f32(*(const uint16_t *)(p + i * sb)); break;
    default: for (int64_t i = 0; i < n; i++) d[i] = (float)pdi_load(p + i * sb, dt); break;
    }
}

static void store_row(const void *src, enum pd_dtype ct, char *p, int64_t stride, enum pd_dtype dt, int64_t n)
{
    int64_t sb = stride * (int64_t)pd_dtype_size(dt);
    if (ct == PD_F64) {
        const double *s = src;
        if (dt == PD_F64 && stride == 1) { memcpy(p, s, (size_t)n * sizeof *s); return; }
        for (int64_t i = 0; i < n; i++) pdi_store(p + i * sb, dt, s[i]);
        return;
    }
    const float *s = src;
    if (stride == 1 && dt == PD_BF16) {
        uint16_t *d = (uint16_t *)p;
        for (int64_t i = 0; i < n; i++) d[i] = pdi_f32_bf16(s[i]);
        return;
    }
    if (stride == 1 && dt == PD_F16) {
        uint16_t *d = (uint16_t *)p;
        int64_t i = 0;
#ifdef __F16C__
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#endif
        for (; i < n; i++) d[i] = pd_f32_to_f16(s[i]);
        return;
    }
    switch (dt) {
    case PD_F32: for (int64_t i = 0; i < n; i++) *(float *)(p + i * sb) = s[i]; break;
    case PD_BF16: for (int64_t i = 0; i < n; i++) *(uint16_t *)(p + i * sb) = pdi_f32_bf16(s[i]); break;
    default: for (int64_t i = 0; i < n; i++) pdi_store(p + i * sb, dt, s[i]); break;
    }
}

/* ---- row math, in f32 and f64 ---------------------------------------- */
/* One block of the exp pass: bs += e = E(x - m), and y = e unless log_out. */
#define NN_EXP_PASS(T, E)                                                                           \
    do {                                                                                            \
        if (log_out) {                                                                              \
            _Pragma("omp simd reduction(+ : bs)") for (int64_t j = j0; j < j1; j++) bs += E(x[j] - m); \
        } else {                                                                                    \
            _Pragma("omp simd reduction(+ : bs)") for (int64_t j = j0; j < j1; j++) {              \
                T e = E(x[j] - m);                                                                  \
                y[j] = e;                                                                           \
                bs += e;                                                                            \
            }                                                                                       \
        }                                                                                           \
    } while (0)

/* softmax / log_softmax of one contiguous row; y may alias x. FEXP is an
 * exp valid where the result is a normal number, used for blocks whose
 * x - max all lie in [-87, 0] (the usual case); EXP for the others. */
#define NN_SOFTMAX_ROW(T, SFX, EXP, FEXP, LOG)                                                      \
    static void softmax_row_##SFX(const T *x, T *y, int64_t n, int log_out)                        \
    {                                                                                               \
        T m = -INFINITY;                                                                            \
        _Pragma("omp simd reduction(max : m)") for (int64_t j = 0; j < n; j++) m = x[j] > m ? x[j] : m; \
        double s = 0;                                                                               \
        for (int64_t j0 = 0; j0 < n; j0 += NN_BLOCK) {                                              \
            int64_t j1 = j0 + NN_BLOCK < n ? j0 + NN_BLOCK : n;                                     \
            T bs = 0;                                                                               \
            int fast = 1;                                                                           \
            _Pragma("omp simd reduction(& : fast)") for (int64_t j = j0; j < j1; j++)              \
                fast &= x[j] - m >= (T)-87;                                                         \
            if (fast) NN_EXP_PASS(T, FEXP);                                                         \
            else NN_EXP_PASS(T, EXP);                                                               \
            s += bs;                                                                                \
        }                                                                                           \
        if (log_out) {                                                                              \
            T ls = (T)LOG(s);                                                                       \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = (x[j] - m) - ls;             \
        } else {                                                                                    \
            T inv = (T)(1.0 / s);                                                                   \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] *= inv;                        \
        }                                                                                           \
    }

/* layer_norm (centre = 1) / rms_norm of one contiguous row: two passes
 * (mean, then the second moment about it); y may alias x. The mean is
 * summed relative to x[0] and subtracted as a head (mu) and tail (mulo)
 * pair, so a large common offset does not cost the f32 path its accuracy
 * (a row 1000 +- 0.01 stays within 1e-5 of the double result). */
/* Mean of one contiguous row, shared by the norm forward and backward rows:
 * sums x - x[0] in T blocks added into double, so a common offset does not
 * swamp the f32 sums. 0 for an empty row. */
#define NN_ROW_MEAN(T, SFX)                                                                         \
    static double row_mean_##SFX(const T *x, int64_t n)                                             \
    {                                                                                               \
        if (n <= 0) return 0;                                                                       \
        T k0 = x[0];                                                                                \
        double mean = 0;                                                                            \
        for (int64_t j0 = 0; j0 < n; j0 += NN_BLOCK) {                                              \
            int64_t j1 = j0 + NN_BLOCK < n ? j0 + NN_BLOCK : n;                                     \
            T bs = 0;                                                                               \
            _Pragma("omp simd reduction(+ : bs)") for (int64_t j = j0; j < j1; j++) bs += x[j] - k0; \
            mean += bs;                                                                             \
        }                                                                                           \
        return (double)k0 + mean / (double)n;                                                       \
    }
NN_ROW_MEAN(float, f32)
NN_ROW_MEAN(double, f64)

/* 1 / sqrt(variance + eps) of a row around mu + mulo (the mean split in two
 * T's for accuracy), summed in blocks: layer norm's and group norm's. */
#define NN_ROW_RSTD(T, SFX)                                                                         \
    static T row_rstd_##SFX(const T *x, int64_t n, T mu, T mulo, double eps)                       \
    {                                                                                               \
        double ss = 0;                                                                              \
        for (int64_t j0 = 0; j0 < n; j0 += NN_BLOCK) {                                              \
            int64_t j1 = j0 + NN_BLOCK < n ? j0 + NN_BLOCK : n;                                     \
            T bs = 0;                                                                               \
            _Pragma("omp simd reduction(+ : bs)") for (int64_t j = j0; j < j1; j++) {              \
                T d = (x[j] - mu) - mulo;                                                           \
                bs += d * d;                                                                        \
            }                                                                                       \
            ss += bs;                                                                               \
        }                                                                                           \
        return (T)(1.0 / sqrt(ss / (double)n + eps));                                              \
    }
NN_ROW_RSTD(float, f32)
NN_ROW_RSTD(double, f64)

#define NN_NORM_ROW(T, SFX)                                                                         \
    static void norm_row_##SFX(const T *x, T *y, int64_t n, const T *w, const T *b, double eps, int centre) \
    {                                                                                               \
        double mean = centre ? row_mean_##SFX(x, n) : 0;                                    \
        T mu = (T)mean, mulo = (T)(mean - (double)mu);                                              \
        T rstd = row_rstd_##SFX(x, n, mu, mulo, eps);                                          \
        if (b) {                                                                                    \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = ((x[j] - mu) - mulo) * rstd * w[j] + b[j]; \
        } else {                                                                                    \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) y[j] = ((x[j] - mu) - mulo) * rstd * w[j]; \
        }                                                                                           \
    }

#ifndef PDI_HAVE_VF
NN_SOFTMAX_ROW(float, f32, exp_f32, pdi_vexpf_normal, log)
#endif
NN_SOFTMAX_ROW(double, f64, exp, exp, log)
NN_NORM_ROW(float, f32)
NN_NORM_ROW(double, f64)

/* norm_backward of one contiguous row (formulas in the reference kernel):
 * with d = x - mean (x for rms_norm) and gh = g w, one statistics pass
 * (sum d^2, sum gh, sum gh d in T blocks added into double), then
 * dx = rstd (gh - centre sum(gh)/n - rstd^2 sum(gh d)/n d), and the row's
 * g d rstd and g are added to the dw / db accumulators (NULL: absent).
 * w is never NULL (ones when the norm has no weight). */
#define NN_NORM_BWD_ROW(T, SFX)                                                                     \
    static void norm_bwd_row_##SFX(const void *xv, const void *gv, const void *wv, void *dxv, void *dwv, \
                                   void *dbv, int64_t n, double eps, int centre)                    \
    {                                                                                               \
        const T *x = xv, *g = gv, *w = wv;                                                          \
        T *dx = dxv, *dwa = dwv, *dba = dbv;                                                        \
        double mean = centre ? row_mean_##SFX(x, n) : 0, ss = 0, sgh = 0, sghd = 0;                 \
        T mu = (T)mean, mulo = (T)(mean - (double)mu);                                              \
        for (int64_t j0 = 0; j0 < n; j0 += NN_BLOCK) {                                              \
            int64_t j1 = j0 + NN_BLOCK < n ? j0 + NN_BLOCK : n;                                     \
            T b1 = 0, b2 = 0, b3 = 0;                                                               \
            _Pragma("omp simd reduction(+ : b1, b2, b3)") for (int64_t j = j0; j < j1; j++) {      \
                T d = (x[j] - mu) - mulo, gh = g[j] * w[j];                                         \
                b1 += d * d;                                                                        \
                b2 += gh;                                                                           \
                b3 += gh * d;                                                                       \
            }                                                                                       \
            ss += b1;                                                                               \
            sgh += b2;                                                                              \
            sghd += b3;                                                                             \
        }                                                                                           \
        double rstd = 1.0 / sqrt(ss / (double)n + eps);                                             \
        /* the cancellation happens before the scaling by rstd (a row of one    \
         * element gives dx = 0 exactly, not rstd-sized rounding noise) */      \
        T c1 = (T)rstd, c2 = (T)(rstd * rstd * sghd / (double)n);                                  \
        T c3 = (T)(centre ? sgh / (double)n : 0.0);                                                 \
        _Pragma("omp simd") for (int64_t j = 0; j < n; j++) {                                      \
            T d = (x[j] - mu) - mulo;                                                               \
            dx[j] = c1 * ((g[j] * w[j] - c3) - c2 * d);                                             \
        }                                                                                           \
        if (dwa) {                                                                                  \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) dwa[j] += g[j] * (((x[j] - mu) - mulo) * c1); \
        }                                                                                           \
        if (dba) {                                                                                  \
            _Pragma("omp simd") for (int64_t j = 0; j < n; j++) dba[j] += g[j];                    \
        }                                                                                           \
    }

NN_NORM_BWD_ROW(float, f32)
NN_NORM_BWD_ROW(double, f64)

/* ---- the row driver -------------------------------------------------- */
/* Row r starts at lin_offset(v, 0, nlead, skip, r) and has len elements at
 * element stride xs (ys in y). */
struct nn_rows {
    const struct pd_kview *x, *y;
    int64_t nrows, len, xs, ys;
    int nlead, skip;
    enum pd_dtype ct; /* compute type: PD_F32 or PD_F64 */
};

/* Contiguous rows in the compute type; y may be x. */
typedef void (*nn_row_fn)(const void *x, void *y, int64_t n, const void *ctx);

/* Row buffers are scratch of k's allocator. */
static int run_rows(const struct pdi_kcall *k, const struct nn_rows *R, nn_row_fn fn, const void *ctx)
{
    const struct pd_kview *x = R->x, *y = R->y;
    size_t ces = pd_dtype_size(R->ct), xes = pd_dtype_size(x->dtype), yes = pd_dtype_size(y->dtype);
    /* direct: compute into y's row (y in the compute type, contiguous along
     * the row); from x's row too when x is as well, else from a copy in y */
    int direct = y->dtype == R->ct && R->ys == 1, x_direct = direct && x->dtype == R->ct && R->xs == 1;
    int failed = 0;
    int par = R->nrows > 1 && R->nrows * R->len >= NN_GRAIN;
    size_t bbytes = ces * (size_t)R->len + 1;
#pragma omp parallel if (par) reduction(| : failed) num_threads(pdi_num_threads())
    {
        void *buf = direct ? NULL : pdi_kscratch(k, bbytes);
        if (!direct && !buf) failed = 1;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < R->nrows; r++) {
            if (!direct && !buf) continue;
            const char *xp = x->data + lin_offset(x, 0, R->nlead, R->skip, r) * (int64_t)xes;
            char *yp = y->data + lin_offset(y, 0, R->nlead, R->skip, r) * (int64_t)yes;
            if (x_direct) {
                fn(xp, yp, R->len, ctx);
                continue;
            }
            void *row = direct ? (void *)yp : buf;
            load_row(xp, R->xs, x->dtype, row, R->ct, R->len);
            fn(row, row, R->len, ctx);
            if (!direct) store_row(row, R->ct, yp, R->ys, y->dtype, R->len);
        }
        pdi_kscratch_free(k, buf, bbytes);
    }
    return failed ? pdi_errorf(PD_ERR_NOMEM, "out of memory (nn row buffer)") : PD_OK;
}

/* ---- softmax / log_softmax ------------------------------------------- */
/* Longest row whose successor is prefetched: beyond it the current row no
 * longer stays in L2 between the passes and the prefetched lines would be
 * evicted before use (measured: no gain at 65536). */
#define NN_PREFETCH_ROW 16384

struct softmax_ctx {
    int log_out;
    int next_row; /* rows are f32 and back to back in x: prefetch row r + 1 while computing row r */
};

#ifdef PDI_HAVE_VF
/* f32 softmax / log_softmax of one contiguous row on explicit vectors
 * (unary_math.h). Three passes, only the first from memory: max; exp (the
 * fast exp unless a vector holds x - max < -87, NaN or inf) written to y,
 * summed in f32 lanes per NN_BLOCK and then in double; y / sum (or
 * (x - max) - log sum). The row stays in L1/L2 between the passes, so the
 * exp pass is pure computation; to keep memory busy meanwhile, it prefetches
 * `next` (the next row's x, NULL if unknown) one cache line per vector, and
 * the next max pass then runs from the cache. Overlapping the two this way
 * took the kernel from ~0.7 to ~0.9 of memcpy on one thread when it was
 * written; the later full runs (docs/benchmarks.md, runs C and D) measured
 * 0.68-0.78: y's lines are read before they are written, so the kernel
 * moves 12 bytes per element against the 8 the ratio credits. y may alias
 * x. */
static void softmax_row_vf(const float *x, float *y, int64_t n, int log_out, const float *next)
{
    pdi_vf m0 = pdi_vf_splat(-INFINITY), m1 = m0;
    int64_t j = 0;
    for (; j + 2 * PDI_VW <= n; j += 2 * PDI_VW) {
        m0 = pdi_vf_max(pdi_vf_load(x + j), m0);
        m1 = pdi_vf_max(pdi_vf_load(x + j + PDI_VW), m1);
    }
    m0 = pdi_vf_max(m1, m0);
    float m = -INFINITY;
    for (int i = 0; i < PDI_VW; i++) m = m0[i] > m ? m0[i] : m;
    for (; j < n; j++) m = x[j] > m ? x[j] : m;

    double s = 0;
    for (int64_t j0 = 0; j0 < n; j0 += NN_BLOCK) {
        int64_t j1 = j0 + NN_BLOCK < n ? j0 + NN_BLOCK : n;
        pdi_vf acc = pdi_vf_splat(0.0f);
        for (j = j0; j + PDI_VW <= j1; j += PDI_VW) {
            if (next) _mm_prefetch((const char *)(next + j), _MM_HINT_T0);
            pdi_vf d = pdi_vf_load(x + j) - m;
            pdi_vf e = pdi_vf_all_ge(d, -87.0f) ? pdi_vf_expf_normal(d) : pdi_vf_expf_full(d);
            if (!log_out) pdi_vf_store(y + j, e);
            acc += e;
        }
        float bs = pdi_vf_hsum(acc);
        for (; j < j1; j++) {
            float e = exp_f32(x[j] - m);
            if (!log_out) y[j] = e;
            bs += e;
        }
        s += bs;
    }

    if (log_out) {
        float ls = (float)log(s);
        for (j = 0; j + PDI_VW <= n; j += PDI_VW) pdi_vf_store(y + j, (pdi_vf_load(x + j) - m) - ls);
        for (; j < n; j++) y[j] = (x[j] - m) - ls;
    } else {
        float inv = (float)(1.0 / s);
        for (j = 0; j + PDI_VW <= n; j += PDI_VW) pdi_vf_store(y + j, pdi_vf_load(y + j) * inv);
        for (; j < n; j++) y[j] *= inv;
    }
}
#endif

static void softmax_fn_f32(const void *x, void *y, int64_t n, const void *ctx)
{
    const struct softmax_ctx *c = ctx;
#ifdef PDI_HAVE_VF
    /* past the last row this prefetches beyond x, which is harmless: prefetches never fault */
    softmax_row_vf(x, y, n, c->log_out, c->next_row && n <= NN_PREFETCH_ROW ? (const float *)x + n : NULL);
#else
    softmax_row_f32(x, y, n, c->log_out);
#endif
}

static void softmax_fn_f64(const void *x, void *y, int64_t n, const void *ctx)
{
    softmax_row_f64(x, y, n, ((const struct softmax_ctx *)ctx)->log_out);
}

/* Contiguous f32 [outer, len, inner], inner > 1: blocks of up to NN_BLOCK
 * columns, each pass vectorised across the columns. */
static void softmax_cols_f32(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, int log_out)
{
    int64_t nb = (inner + NN_BLOCK - 1) / NN_BLOCK, tasks = outer * nb;
    int par = tasks > 1 && outer * len * inner >= NN_GRAIN;
#pragma omp parallel for schedule(static) if (par) num_threads(pdi_num_threads())
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / nb, c0 = (t % nb) * NN_BLOCK, nc = inner - c0 < NN_BLOCK ? inner - c0 : NN_BLOCK;
        const float *xo = x + o * len * inner + c0;
        float *yo = y + o * len * inner + c0;
        float m[NN_BLOCK], fs[NN_BLOCK];
        double ds[NN_BLOCK];
        for (int64_t c = 0; c < nc; c++) { m[c] = -INFINITY; fs[c] = 0; ds[c] = 0; }
        for (int64_t a = 0; a < len; a++) {
            const float *xr = xo + a * inner;
#pragma omp simd
            for (int64_t c = 0; c < nc; c++) m[c] = xr[c] > m[c] ? xr[c] : m[c];
        }
        for (int64_t a = 0; a < len; a++) {
            const float *xr = xo + a * inner;
            float *yr = yo + a * inner;
            if (log_out) {
#pragma omp simd
                for (int64_t c = 0; c < nc; c++) fs[c] += exp_f32(xr[c] - m[c]);
            } else {
#pragma omp simd
                for (int64_t c = 0; c < nc; c++) {
                    float e = exp_f32(xr[c] - m[c]);
                    yr[c] = e;
                    fs[c] += e;
                }
            }
            if ((a + 1) % NN_BLOCK == 0 || a + 1 == len) /* flush f32 partial sums into double */
                for (int64_t c = 0; c < nc; c++) { ds[c] += fs[c]; fs[c] = 0; }
        }
        /* reuse fs as the per-column factor: 1/sum or log(sum) */
        for (int64_t c = 0; c < nc; c++) fs[c] = log_out ? (float)log(ds[c]) : (float)(1.0 / ds[c]);
        for (int64_t a = 0; a < len; a++) {
            const float *xr = xo + a * inner;
            float *yr = yo + a * inner;
            if (log_out) {
#pragma omp simd
                for (int64_t c = 0; c < nc; c++) yr[c] = (xr[c] - m[c]) - fs[c];
            } else {
#pragma omp simd
                for (int64_t c = 0; c < nc; c++) yr[c] *= fs[c];
            }
        }
    }
}

static int cpu_softmax(const struct pdi_kcall *k)
{
    struct pd_kview x = k->in[0], y = k->out[0];
    int log_out = k->op == PD_OP_log_softmax;
    int ax = (int)k->a->softmax.axis;
    if (x.ndim == 0) { /* one element: a row of length 1 */
        x.ndim = y.ndim = 1;
        x.shape[0] = y.shape[0] = 1;
        x.strides[0] = y.strides[0] = 1;
        ax = 0;
    }
    int64_t len = x.shape[ax], outer = pdi_numel(x.shape, ax), inner = pdi_numel(x.shape + ax + 1, x.ndim - ax - 1);
    if (outer * len * inner == 0) return PD_OK;
    if (inner > 1 && x.dtype == PD_F32 && pdi_kview_contiguous(&x) && pdi_kview_contiguous(&y)) {
        softmax_cols_f32((const float *)x.data, (float *)y.data, outer, len, inner, log_out);
        return PD_OK;
    }
    struct nn_rows R = {&x, &y, outer * inner, len, x.strides[ax], y.strides[ax], x.ndim, ax,
                        x.dtype == PD_F64 ? PD_F64 : PD_F32};
    /* rows back to back in x, each computed in place in y (run_rows' direct path) */
    struct softmax_ctx c = {log_out, x.dtype == PD_F32 && y.dtype == PD_F32 && R.ys == 1 && inner == 1 &&
                                         pdi_kview_contiguous(&x)};
    return run_rows(k, &R, R.ct == PD_F64 ? softmax_fn_f64 : softmax_fn_f32, &c);
}

/* ---- layer_norm / rms_norm ------------------------------------------- */
struct norm_ctx {
    const void *w, *b; /* contiguous [M] in the compute type; w never NULL */
    double eps;
    int centre;
};

static void norm_fn_f32(const void *x, void *y, int64_t n, const void *ctx)
{
    const struct norm_ctx *c = ctx;
    norm_row_f32(x, y, n, c->w, c->b, c->eps, c->centre);
}

static void norm_fn_f64(const void *x, void *y, int64_t n, const void *ctx)
{
    const struct norm_ctx *c = ctx;
    norm_row_f64(x, y, n, c->w, c->b, c->eps, c->centre);
}

/* A parameter (any strides) as a contiguous array of M values in ct
 * (param_bytes of k's scratch); ones (fill = 1) or NULL when absent. */
static size_t param_bytes(int64_t M, enum pd_dtype ct) { return pd_dtype_size(ct) * (size_t)M + 1; }
static void *param_buf(const struct pdi_kcall *k, const struct pd_kview *p, int64_t M, enum pd_dtype ct, int fill_ones)
{
    if (!p && !fill_ones) return NULL;
    void *buf = pdi_kscratch(k, param_bytes(M, ct));
    if (!buf) return NULL;
    for (int64_t j = 0; j < M; j++) {
        double v = p ? pdi_load(pdi_kview_ptr(p, j), p->dtype) : 1.0;
        if (ct == PD_F64) ((double *)buf)[j] = v;
        else ((float *)buf)[j] = (float)v;
    }
    return buf;
}

static void copy_run(char **p, const int64_t *st, int64_t n, void *ctx)
{
    size_t es = *(const size_t *)ctx;
    for (int64_t i = 0; i < n; i++) memcpy(p[0] + i * st[0], p[1] + i * st[1], es);
}

/* The trailing dims of x from `lead` on (size-1 dims aside) as one strided
 * run: returns its element stride, or makes *x a contiguous copy (stride 1;
 * *copy: n elements of k's scratch, to be freed) when they do not form one.
 * rows * M > 0. */
static int norm_row_layout(const struct pdi_kcall *k, struct pd_kview *x, int lead, int64_t n, const char *op,
                           int64_t *stride, void **copy)
{
    int64_t xs = 1, expect = 0;
    int merged = 1, first = 1;
    for (int d = x->ndim - 1; d >= lead; d--) {
        if (x->shape[d] == 1) continue;
        if (!first && x->strides[d] != expect) merged = 0;
        if (first) xs = x->strides[d];
        first = 0;
        expect = x->strides[d] * x->shape[d];
    }
    *copy = NULL;
    *stride = xs;
    if (merged) return PD_OK;
    size_t es = pd_dtype_size(x->dtype);
    *copy = pdi_kscratch(k, es * (size_t)n);
    if (!*copy) return pdi_errorf(PD_ERR_NOMEM, "out of memory (%s input copy)", op);
    struct pd_kview c = *x;
    c.data = *copy;
    pdi_contiguous_strides(c.shape, c.ndim, c.strides);
    struct pd_kview *ops[2] = {&c, x};
    pdi_iter(2, ops, x->shape, x->ndim, copy_run, &es);
    *x = c;
    *stride = 1;
    return PD_OK;
}

static int cpu_norm(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    struct pd_kview x = k->in[0];
    int centre = k->op == PD_OP_layer_norm;
    int has_w = k->a->norm.has_w != 0, has_b = centre && k->a->norm.has_b != 0;
    int nk = (int)k->a->norm.n_norm_axes, lead = x.ndim - nk;
    int64_t M = 1;
    for (int d = lead; d < x.ndim; d++) M *= x.shape[d];
    int64_t rows = pdi_numel(x.shape, lead);
    if (rows * M == 0) return PD_OK;
    int64_t xs;
    void *copy;
    if (norm_row_layout(k, &x, lead, rows * M, pdi_op_name(k->op), &xs, &copy)) return PD_ERR_NOMEM;
    enum pd_dtype ct = x.dtype == PD_F64 ? PD_F64 : PD_F32;
    struct norm_ctx c = {param_buf(k, has_w ? &k->in[1] : NULL, M, ct, 1),
                         param_buf(k, has_b ? &k->in[1 + has_w] : NULL, M, ct, 0), k->a->norm.eps, centre};
    int rc;
    if (!c.w || (has_b && !c.b)) {
        rc = pdi_errorf(PD_ERR_NOMEM, "out of memory (%s parameters)", pdi_op_name(k->op));
    } else {
        struct nn_rows R = {&x, y, rows, M, xs, 1, lead, -1, ct};
        rc = run_rows(k, &R, ct == PD_F64 ? norm_fn_f64 : norm_fn_f32, &c);
    }
    pdi_kscratch_free(k, (void *)c.w, param_bytes(M, ct));
    pdi_kscratch_free(k, (void *)c.b, param_bytes(M, ct));
    pdi_kscratch_free(k, copy, pd_dtype_size(x.dtype) * (size_t)(rows * M));
    return rc;
}

/* ---- group_norm ------------------------------------------------------ */
/* One group of one sample: cg channels of S elements, contiguous in ct, in
 * place; w, b: this group's cg parameters (w never NULL, b may be). The
 * statistics as the norms' rows (mean relative to x[0], then the second
 * moment about it, in T blocks added into double). */
#define NN_GROUP_ROW(T, SFX)                                                                        \
    static void group_row_##SFX(T *x, int64_t cg, int64_t S, const T *w, const T *b, double eps)   \
    {                                                                                               \
        int64_t n = cg * S;                                                                         \
        double mean = row_mean_##SFX(x, n);                                                 \
        T mu = (T)mean, mulo = (T)(mean - (double)mu);                                              \
        T rstd = row_rstd_##SFX(x, n, mu, mulo, eps);                                          \
        for (int64_t c = 0; c < cg; c++) {                                                          \
            T *xc = x + c * S, sc = rstd * w[c], sh = b ? b[c] : (T)0;                              \
            _Pragma("omp simd") for (int64_t j = 0; j < S; j++) xc[j] = ((xc[j] - mu) - mulo) * sc + sh; \
        }                                                                                           \
    }
NN_GROUP_ROW(float, f32)
NN_GROUP_ROW(double, f64)

/* x [N, C, d...] as N * G rows of M = C / G * S elements: the dims after
 * the first form one strided run (or a contiguous copy), so row r starts at
 * (r / G) * stride0 + (r % G) * M * xs. Each row is widened into a
 * per-thread buffer in the compute type, normalised there and stored into
 * y (contiguous). Rows are split over threads; each row's result does not
 * depend on the split. */
static int cpu_group_norm(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    struct pd_kview x = k->in[0];
    int has_w = k->a->group_norm.has_w != 0, has_b = k->a->group_norm.has_b != 0;
    int64_t G = k->a->group_norm.num_groups, C = x.shape[1], S = pdi_numel(x.shape + 2, x.ndim - 2);
    int64_t rows = x.shape[0] * G, cg = C / G, M = cg * S;
    if (rows * M == 0) return PD_OK;
    int64_t xs;
    void *copy;
    if (norm_row_layout(k, &x, 1, rows * M, "group_norm", &xs, &copy)) return PD_ERR_NOMEM;
    enum pd_dtype ct = x.dtype == PD_F64 ? PD_F64 : PD_F32;
    size_t ces = pd_dtype_size(ct), xes = pd_dtype_size(x.dtype), yes = pd_dtype_size(y->dtype);
    void *w = param_buf(k, has_w ? &k->in[1] : NULL, C, ct, 1);
    void *b = param_buf(k, has_b ? &k->in[1 + has_w] : NULL, C, ct, 0);
    double eps = k->a->group_norm.eps;
    const int params_ok = w && (!has_b || b);
    int failed = !params_ok, par = params_ok && rows > 1 && rows * M >= NN_GRAIN;
    size_t bbytes = ces * (size_t)M + 1;
#pragma omp parallel if (par) reduction(| : failed) num_threads(pdi_num_threads())
    {
        void *buf = params_ok ? pdi_kscratch(k, bbytes) : NULL;
        if (!buf) failed = 1;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            if (!buf) continue;
            int64_t n = r / G, g = r % G;
            load_row(x.data + (n * x.strides[0] + g * M * xs) * (int64_t)xes, xs, x.dtype, buf, ct, M);
            if (ct == PD_F64)
                group_row_f64(buf, cg, S, (const double *)w + g * cg, b ? (const double *)b + g * cg : NULL, eps);
            else
                group_row_f32(buf, cg, S, (const float *)w + g * cg, b ? (const float *)b + g * cg : NULL, eps);
            store_row(buf, ct, y->data + r * M * (int64_t)yes, 1, y->dtype, M);
        }
        pdi_kscratch_free(k, buf, bbytes);
    }
    pdi_kscratch_free(k, w, param_bytes(C, ct));
    pdi_kscratch_free(k, b, param_bytes(C, ct));
    pdi_kscratch_free(k, copy, xes * (size_t)(rows * M));
    return failed ? pdi_errorf(PD_ERR_NOMEM, "out of memory (group_norm)") : PD_OK;
}

/* ---- norm_backward --------------------------------------------------- */
#define NB_MAX_CHUNKS 64
#define NB_MAX_PARTIAL (1 << 18) /* chunk partial sums kept: chunks * M doubles, per parameter */
#define NB_FLUSH 32              /* rows summed in the compute type before going into double */

typedef void (*nb_row_fn)(const void *x, const void *g, const void *w, void *dx, void *dwa, void *dba, int64_t n,
                          double eps, int centre);

struct nb_job {
    struct pd_kview x, g;     /* rows at stride xs / gs along the row */
    const struct pd_kview *dx; /* contiguous */
    int64_t xs, gs, rows, M, chunk;
    int lead, centre;
    enum pd_dtype ct;         /* compute type */
    nb_row_fn fn;
    const void *w;            /* [M] in ct (ones when absent) */
    double eps;
    double *pw, *pb;          /* [chunks][M] partial dw / db, or NULL */
    const struct pdi_kcall *k; /* row buffers are its scratch */
};

/* dst[j] += src[j] (src in ct), then src = 0. */
static void nb_flush(double *dst, void *src, enum pd_dtype ct, int64_t M)
{
    if (ct == PD_F64) {
        double *s = src;
        for (int64_t j = 0; j < M; j++) dst[j] += s[j];
    } else {
        float *s = src;
        for (int64_t j = 0; j < M; j++) dst[j] += s[j];
    }
    memset(src, 0, pd_dtype_size(ct) * (size_t)M);
}

/* Chunks [c0, c1): rows from the views (direct when already contiguous in
 * ct), dx written in place when dx is ct, through row buffers otherwise. */
static int nb_chunks(const struct nb_job *J, int64_t c0, int64_t c1)
{
    int64_t M = J->M;
    size_t ces = pd_dtype_size(J->ct), xes = pd_dtype_size(J->x.dtype), yes = pd_dtype_size(J->dx->dtype);
    int xd = J->x.dtype == J->ct && J->xs == 1, gd = J->g.dtype == J->ct && J->gs == 1;
    int yd = J->dx->dtype == J->ct;
    size_t bbytes = ces * (size_t)M * 5 + 1;
    char *buf = pdi_kscratch(J->k, bbytes); /* x, g, dx rows; dw, db accumulators */
    if (!buf) return 1;
    void *xb = buf, *gb = buf + ces * (size_t)M, *yb = buf + 2 * ces * (size_t)M;
    void *dwa = J->pw ? buf + 3 * ces * (size_t)M : NULL, *dba = J->pb ? buf + 4 * ces * (size_t)M : NULL;
    memset(buf + 3 * ces * (size_t)M, 0, 2 * ces * (size_t)M);
    for (int64_t c = c0; c < c1; c++) {
        int64_t r0 = c * J->chunk, r1 = r0 + J->chunk < J->rows ? r0 + J->chunk : J->rows;
        for (int64_t r = r0; r < r1; r++) {
            const char *xp = J->x.data + lin_offset(&J->x, 0, J->lead, -1, r) * (int64_t)xes;
            const char *gp = J->g.data + lin_offset(&J->g, 0, J->lead, -1, r) * (int64_t)xes;
            char *yp = J->dx->data + r * M * (int64_t)yes;
            if (!xd) load_row(xp, J->xs, J->x.dtype, xb, J->ct, M);
            if (!gd) load_row(gp, J->gs, J->g.dtype, gb, J->ct, M);
            J->fn(xd ? xp : xb, gd ? gp : gb, J->w, yd ? (void *)yp : yb, dwa, dba, M, J->eps, J->centre);
            if (!yd) store_row(yb, J->ct, yp, 1, J->dx->dtype, M);
            if ((r - r0 + 1) % NB_FLUSH == 0 || r + 1 == r1) {
                if (dwa) nb_flush(J->pw + c * M, dwa, J->ct, M);
                if (dba) nb_flush(J->pb + c * M, dba, J->ct, M);
            }
        }
    }
    pdi_kscratch_free(J->k, buf, bbytes);
    return 0;
}

/* dst = sum over chunks of part (in chunk order), stored into out [M]. */
static void nb_reduce(const double *part, int64_t nch, int64_t M, const struct pd_kview *out, double *tot)
{
    memset(tot, 0, sizeof *tot * (size_t)M);
    for (int64_t c = 0; c < nch; c++)
        for (int64_t j = 0; j < M; j++) tot[j] += part[c * M + j];
    store_row(tot, PD_F64, out->data, 1, out->dtype, M);
}

static int cpu_norm_backward(const struct pdi_kcall *k)
{
    const struct pdi_attrs_norm_backward *a = &k->a->norm_backward;
    int has_w = a->has_w != 0, has_b = a->has_b != 0;
    struct nb_job J = {.x = k->in[0], .g = k->in[1], .dx = &k->out[0], .centre = a->centre != 0, .eps = a->eps, .k = k};
    J.lead = J.x.ndim - (int)a->n_norm_axes;
    J.M = pdi_numel(J.x.shape + J.lead, J.x.ndim - J.lead);
    J.rows = pdi_numel(J.x.shape, J.lead);
    J.ct = J.x.dtype == PD_F64 ? PD_F64 : PD_F32;
    J.fn = J.ct == PD_F64 ? norm_bwd_row_f64 : norm_bwd_row_f32;
    if (J.M == 0) return PD_OK;
    /* chunks: a function of the shape only, so the sums do not depend on threads */
    int64_t nch = J.rows < NB_MAX_CHUNKS ? J.rows : NB_MAX_CHUNKS;
    if (nch * J.M > NB_MAX_PARTIAL) nch = NB_MAX_PARTIAL / J.M > 1 ? NB_MAX_PARTIAL / J.M : 1;
    J.chunk = nch ? (J.rows + nch - 1) / nch : 1;
    nch = (J.rows + J.chunk - 1) / J.chunk;
    void *xcopy = NULL, *gcopy = NULL, *w = NULL;
    double *part = NULL;
    size_t pbytes = 0;
    int rc = PD_OK;
    if (J.rows > 0 && (norm_row_layout(k, &J.x, J.lead, J.rows * J.M, "norm_backward", &J.xs, &xcopy) ||
                       norm_row_layout(k, &J.g, J.lead, J.rows * J.M, "norm_backward", &J.gs, &gcopy)))
        goto out_err;
    w = param_buf(k, has_w ? &k->in[2] : NULL, J.M, J.ct, 1);
    pbytes = sizeof *part * (size_t)((has_w + has_b) * nch * J.M + J.M + 1);
    part = pdi_kscratch_zero(k, pbytes); /* partials, then a total */
    if (!w || !part) {
        rc = pdi_errorf(PD_ERR_NOMEM, "out of memory (norm_backward)");
        goto out;
    }
    J.w = w;
    J.pw = has_w ? part : NULL;
    J.pb = has_b ? part + has_w * nch * J.M : NULL;
    int failed = 0;
    int par = nch > 1 && J.rows * J.M >= NN_GRAIN && pdi_num_threads() > 1;
    if (par) {
#pragma omp parallel reduction(| : failed) num_threads(pdi_num_threads())
        {
#ifdef _OPENMP
            int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
            int64_t t = 0, nt = 1;
#endif
            failed |= nb_chunks(&J, nch * t / nt, nch * (t + 1) / nt);
        }
    } else if (nch > 0) {
        failed = nb_chunks(&J, 0, nch);
    }
    if (failed) {
        rc = pdi_errorf(PD_ERR_NOMEM, "out of memory (norm_backward row buffers)");
        goto out;
    }
    double *tot = part + (has_w + has_b) * nch * J.M;
    if (has_w) nb_reduce(J.pw, nch, J.M, &k->out[1], tot);
    if (has_b) nb_reduce(J.pb, nch, J.M, &k->out[1 + has_w], tot);
    goto out;
out_err:
    rc = pdi_status_of(NULL, "norm_backward");
out:
    pdi_kscratch_free(k, part, pbytes);
    pdi_kscratch_free(k, w, param_bytes(J.M, J.ct));
    pdi_kscratch_free(k, gcopy, pd_dtype_size(J.g.dtype) * (size_t)(J.rows * J.M));
    pdi_kscratch_free(k, xcopy, pd_dtype_size(J.x.dtype) * (size_t)(J.rows * J.M));
    return rc;
}

/* ---- nll_loss -------------------------------------------------------- */
/* One gather per target; serial with a double sum so the result does not
 * depend on the thread count (the work is O(targets), not O(logits)). */
static int cpu_nll_loss(const struct pdi_kcall *k)
{
    const struct pd_kview *lp = &k->in[0], *t = &k->in[1], *y = &k->out[0];
    const struct pd_kview *w = k->a->nll_loss.has_weight ? &k->in[2] : NULL;
    int64_t ignore = k->a->nll_loss.ignore_index, reduction = k->a->nll_loss.reduction;
    int64_t N = 1, C = lp->shape[0], D = 1;
    if (lp->ndim >= 2) {
        N = lp->shape[0];
        C = lp->shape[1];
        for (int d = 2; d < lp->ndim; d++) D *= lp->shape[d];
    }
    size_t les = pd_dtype_size(lp->dtype), tes = pd_dtype_size(t->dtype), yes = pd_dtype_size(y->dtype);
    int64_t cstride = lp->ndim >= 2 ? lp->strides[1] : lp->strides[0], nstride = lp->ndim >= 2 ? lp->strides[0] : 0;
    double sum = 0, count = 0; /* count: the kept targets' weights (1 each without weights) */
    for (int64_t n = 0; n < N; n++) {
        for (int64_t d = 0; d < D; d++) {
            int64_t ti = n * D + d;
            int64_t c = pdi_load_int(t->data + lin_offset(t, 0, t->ndim, -1, ti) * (int64_t)tes, t->dtype);
            double v = 0;
            if (c != ignore) {
                if (c < 0 || c >= C)
                    return pdi_errorf(PD_ERR_INVALID, "nll_loss: target %lld at position %lld out of range [0, %lld)",
                                      (long long)c, (long long)ti, (long long)C);
                int64_t off = n * nstride + c * cstride + (lp->ndim > 2 ? lin_offset(lp, 2, lp->ndim, -1, d) : 0);
                double wc = w ? pdi_load(w->data + c * w->strides[0] * (int64_t)les, w->dtype) : 1.0;
                v = -pdi_load(lp->data + off * (int64_t)les, lp->dtype) * wc;
                sum += v;
                count += wc;
            }
            if (reduction == PD_REDUCTION_NONE) pdi_store(y->data + ti * (int64_t)yes, y->dtype, v);
        }
    }
    if (reduction == PD_REDUCTION_SUM) pdi_store(y->data, y->dtype, sum);
    if (reduction == PD_REDUCTION_MEAN) pdi_store(y->data, y->dtype, sum / count); /* 0/0: NaN, as torch */
    return PD_OK;
}

/* ---- nll_loss_backward ----------------------------------------------- */
/* logp [N, C, D...] (meta only), target and w [N, D...]: out[n, :, :] is
 * zeroed and w's bytes are copied at each kept target (no arithmetic: any
 * float dtype, bit for bit). Targets are checked first, serially; the rows
 * n are then split over threads, each writing its own [C, D] block. */
static int cpu_nll_loss_backward(const struct pdi_kcall *k)
{
    const struct pd_kview *lp = &k->in[0], *t = &k->in[1], *w = &k->in[2], *y = &k->out[0];
    int64_t ignore = k->a->nll_loss_backward.ignore_index;
    int64_t N = 1, C = lp->shape[0], D = 1;
    if (lp->ndim >= 2) {
        N = lp->shape[0];
        C = lp->shape[1];
        for (int d = 2; d < lp->ndim; d++) D *= lp->shape[d];
    }
    size_t es = pd_dtype_size(y->dtype), tes = pd_dtype_size(t->dtype);
    size_t cbytes = sizeof(int64_t) * (size_t)(N * D) + 1;
    int64_t *cls = pdi_kscratch(k, cbytes);
    if (!cls) return pdi_errorf(PD_ERR_NOMEM, "out of memory (nll_loss_backward)");
    for (int64_t i = 0; i < N * D; i++) {
        int64_t c = pdi_load_int(t->data + lin_offset(t, 0, t->ndim, -1, i) * (int64_t)tes, t->dtype);
        if (c != ignore && (c < 0 || c >= C)) {
            pdi_kscratch_free(k, cls, cbytes);
            return pdi_errorf(PD_ERR_INVALID, "nll_loss_backward: target %lld at position %lld out of range [0, %lld)",
                              (long long)c, (long long)i, (long long)C);
        }
        cls[i] = c == ignore ? -1 : c;
    }
    int par = N > 1 && N * C * D >= NN_GRAIN;
    PDI_FOR(par, n, N, {
        char *blk = y->data + n * C * D * (int64_t)es;
        memset(blk, 0, (size_t)(C * D) * es);
        for (int64_t d = 0; d < D; d++) {
            int64_t i = n * D + d;
            if (cls[i] >= 0)
                memcpy(blk + (cls[i] * D + d) * (int64_t)es, w->data + lin_offset(w, 0, w->ndim, -1, i) * (int64_t)es,
                       es);
        }
    });
    pdi_kscratch_free(k, cls, cbytes);
    return PD_OK;
}

/* ---- embedding ------------------------------------------------------- */
static int cpu_embedding(const struct pdi_kcall *k)
{
    const struct pd_kview *ids = &k->in[0], *w = &k->in[1], *y = &k->out[0];
    int64_t n = pdi_kview_numel(ids), V = w->shape[0], D = w->shape[1];
    size_t es = pd_dtype_size(w->dtype), ies = pd_dtype_size(ids->dtype);
    size_t rbytes = sizeof(int64_t) * (size_t)n + 1;
    int64_t *rows = pdi_kscratch(k, rbytes);
    if (!rows) return pdi_errorf(PD_ERR_NOMEM, "out of memory (embedding)");
    int contig_ids = pdi_kview_contiguous(ids);
    for (int64_t i = 0; i < n; i++) {
        const char *p = ids->data + (contig_ids ? i : lin_offset(ids, 0, ids->ndim, -1, i)) * (int64_t)ies;
        rows[i] = pdi_load_int(p, ids->dtype);
        if (rows[i] < 0 || rows[i] >= V) {
            int64_t bad = rows[i];
            pdi_kscratch_free(k, rows, rbytes);
            return pdi_errorf(PD_ERR_INVALID, "embedding: id %lld at position %lld is out of range for a weight of "
                              "V = %lld rows (valid ids are 0..%lld)", (long long)bad, (long long)i, (long long)V,
                              (long long)V - 1);
        }
    }
    int par = n > 1 && n * D >= NN_GRAIN;
    int64_t s0 = w->strides[0] * (int64_t)es, s1 = w->strides[1] * (int64_t)es;
PDI_FOR(par, i, n, {
        char *dst = y->data + i * D * (int64_t)es;
        const char *src = w->data + rows[i] * s0;
        if (s1 == (int64_t)es) memcpy(dst, src, (size_t)D * es);
        else for (int64_t j = 0; j < D; j++) memcpy(dst + j * (int64_t)es, src + j * s1, es);
    });
    pdi_kscratch_free(k, rows, rbytes);
    return PD_OK;
}

/* ---- one_hot --------------------------------------------------------- */
static int cpu_one_hot(const struct pdi_kcall *k)
{
    const struct pd_kview *ids = &k->in[0], *y = &k->out[0];
    int64_t n = pdi_kview_numel(ids), C = k->a->one_hot.num_classes;
    size_t ies = pd_dtype_size(ids->dtype);
    int64_t *out = (int64_t *)y->data;
    memset(out, 0, sizeof *out * (size_t)(n * C));
    for (int64_t i = 0; i < n; i++) {
        int64_t c = pdi_load_int(ids->data + lin_offset(ids, 0, ids->ndim, -1, i) * (int64_t)ies, ids->dtype);
        if (c < 0 || c >= C)
            return pdi_errorf(PD_ERR_INVALID, "one_hot: class value %lld at position %lld out of range [0, %lld)",
                              (long long)c, (long long)i, (long long)C);
        out[i * C + c] = 1;
    }
    return PD_OK;
}

void pdi_register_cpu_nn(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_softmax, PDI_DT_FLOATS, cpu_softmax);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_log_softmax, PDI_DT_FLOATS, cpu_softmax);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_nll_loss, PDI_DT_FLOATS, cpu_nll_loss);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_nll_loss_backward, PDI_DT_FLOATS, cpu_nll_loss_backward);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_layer_norm, PDI_DT_FLOATS, cpu_norm);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_rms_norm, PDI_DT_FLOATS, cpu_norm);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_norm_backward, PDI_DT_FLOATS, cpu_norm_backward);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_group_norm, PDI_DT_FLOATS, cpu_group_norm);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_embedding, PDI_DT_ALL, cpu_embedding);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_one_hot, PDI_DT_INTS, cpu_one_hot);
}
