/* paddle.c — CPU kernels for the reduce family.
 *
 * Geometry: the input's dims (size-1 dims dropped) are split into kept (K)
 * and reduced (R) dims; for order-free reductions they are sorted by stride
 * so the smallest stride is innermost, then neighbours of the same class
 * that are contiguous in memory are merged. Two streaming paths follow:
 *   inner path (innermost dim reduced): each output reduces contiguous runs
 *     in chunks of CHUNK elements with vector-lane accumulators;
 *   outer path (innermost dim kept): rows of the kept run are accumulated
 *     into a vector (column sums), in blocks of rows; f32/f64 rows read in
 *     place are folded ROWS_FUSE at a time (same order, fewer passes over
 *     the accumulator).
 * Floats compute in f32 (f32/bf16/f16, converted in registers or through a
 * small stack buffer) or f64; chunk and row-block partials are combined in
 * double in a fixed order.
 *
 * Determinism: chunk and row-block boundaries depend only on the shape, and
 * partials are always folded in the same order, so the result does not
 * depend on the thread count: threads only decide who computes which
 * partial (per output when there are many outputs, per chunk otherwise).
 *
 * Index reductions (max/min/argmax/argmin), all/any and integer
 * sum/prod/amax/amin use a simpler path that keeps row-major order (the
 * first index wins ties; the first NaN wins): per output over runs (float
 * runs: vectorised extreme, then its first position), or per column chunk
 * over rows when the innermost dim is kept; integers are exact in int64.
 * logsumexp's f32 exp is a vectorised Cephes expf (AVX2), ~1 ulp.
 * Scans (cumsum/cumprod) go line by line, or row-vector by row-vector when
 * the axis is not innermost and the input is contiguous.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "core/kernel.h"

#define CHUNK 4096  /* elements per inner-path partial (and per stack buffer) */
#define COLS 4096   /* kept-run width per outer-path task */
#define MIN_RB 256  /* rows per outer-path block (at least) */
#define MAX_NRB 256 /* row blocks per outer-path task (at most) */

/* ---- geometry -------------------------------------------------------- */
struct rgeom {
    int nk, nr;
    int64_t kn[PD_MAX_DIMS], ksx[PD_MAX_DIMS], kso[PD_MAX_DIMS]; /* size, input bytes, output elements */
    int64_t rn[PD_MAX_DIMS], rsx[PD_MAX_DIMS];
    int64_t nout, nred;
    int inner_red; /* the innermost dim is a reduced one */
};

static uint64_t stride_key(int64_t sx) { return sx == 0 ? UINT64_MAX : (uint64_t)(sx < 0 ? -sx : sx); }

static void rgeom_init(const struct pd_kview *x, unsigned mask, int sort, struct rgeom *g)
{
    int64_t es = (int64_t)pd_dtype_size(x->dtype);
    int64_t n[PD_MAX_DIMS], sx[PD_MAX_DIMS], so[PD_MAX_DIMS];
    int red[PD_MAX_DIMS], nd = 0;
    int64_t ostride = 1;
    g->nout = g->nred = 1;
    for (int d = x->ndim - 1; d >= 0; d--) { /* output strides: contiguous over kept dims */
        int r = (mask >> d) & 1;
        if (r) g->nred *= x->shape[d];
        else g->nout *= x->shape[d];
        if (!r) { so[d] = ostride; ostride *= x->shape[d]; }
        else so[d] = 0;
    }
    for (int d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1) continue;
        n[nd] = x->shape[d];
        sx[nd] = x->strides[d] * es;
        so[nd] = so[d];
        red[nd] = (mask >> d) & 1;
        nd++;
    }
    if (sort) { /* stable insertion sort: largest stride outermost, stride 0 outermost of all */
        for (int i = 1; i < nd; i++) {
            int64_t tn = n[i], ts = sx[i], to = so[i];
            int tr = red[i], j = i;
            for (; j > 0 && stride_key(sx[j - 1]) < stride_key(ts); j--) {
                n[j] = n[j - 1]; sx[j] = sx[j - 1]; so[j] = so[j - 1]; red[j] = red[j - 1];
            }
            n[j] = tn; sx[j] = ts; so[j] = to; red[j] = tr;
        }
    }
    int m = 0;
    for (int i = 0; i < nd; i++) {
        if (m > 0 && red[m - 1] == red[i] && sx[m - 1] == sx[i] * n[i] && (red[i] || so[m - 1] == so[i] * n[i])) {
            n[m - 1] *= n[i];
            sx[m - 1] = sx[i];
            so[m - 1] = so[i];
            continue;
        }
        n[m] = n[i]; sx[m] = sx[i]; so[m] = so[i]; red[m] = red[i];
        m++;
    }
    g->nk = g->nr = 0;
    for (int i = 0; i < m; i++) {
        if (red[i]) { g->rn[g->nr] = n[i]; g->rsx[g->nr++] = sx[i]; }
        else { g->kn[g->nk] = n[i]; g->ksx[g->nk] = sx[i]; g->kso[g->nk++] = so[i]; }
    }
    if (g->nr == 0) { g->rn[0] = 1; g->rsx[0] = 0; g->nr = 1; } /* nothing reduced: runs of one */
    g->inner_red = m == 0 || red[m - 1];
}

/* Input byte offset and output element offset of kept index o over the
 * first nk kept dims. */
static int64_t kept_off(const struct rgeom *g, int nk, int64_t o, int64_t *out_off)
{
    int64_t off = 0, oo = 0;
    for (int d = nk - 1; d >= 0; d--) {
        int64_t i = o % g->kn[d];
        o /= g->kn[d];
        off += i * g->ksx[d];
        oo += i * g->kso[d];
    }
    *out_off = oo;
    return off;
}

/* Input byte offset of reduced index q over the first nr reduced dims. */
static int64_t red_off(const struct rgeom *g, int nr, int64_t q)
{
    int64_t off = 0;
    for (int d = nr - 1; d >= 0; d--) {
        off += (q % g->rn[d]) * g->rsx[d];
        q /= g->rn[d];
    }
    return off;
}

/* ---- loaders: n elements at byte stride sb into a compute buffer ----- */
static const float *load_f32(const char *p, int64_t sb, enum pd_dtype dt, float *buf, int64_t n)
{
    if (dt == PD_F32) {
        if (sb == 4) return (const float *)p;
        for (int64_t i = 0; i < n; i++) buf[i] = *(const float *)(p + i * sb);
    } else if (dt == PD_BF16) {
        if (sb == 2) {
            const uint16_t *h = (const uint16_t *)p;
            uint32_t *u = (uint32_t *)buf;
            for (int64_t i = 0; i < n; i++) u[i] = (uint32_t)h[i] << 16;
        } else {
            for (int64_t i = 0; i < n; i++) buf[i] = pd_bf16_to_f32(*(const uint16_t *)(p + i * sb));
        }
    } else if (dt == PD_F16) {
        int64_t i = 0;
#ifdef __F16C__
        if (sb == 2)
            for (; i + 8 <= n; i += 8)
                _mm256_storeu_ps(buf + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + i * 2))));
#endif
        for (; i < n; i++) buf[i] = pd_f16_to_f32(*(const uint16_t *)(p + i * sb));
    } else {
        for (int64_t i = 0; i < n; i++) buf[i] = (float)pdi_load(p + i * sb, dt);
    }
    return buf;
}

static const double *load_f64(const char *p, int64_t sb, enum pd_dtype dt, double *buf, int64_t n)
{
    if (dt == PD_F64 && sb == 8) return (const double *)p;
    for (int64_t i = 0; i < n; i++) buf[i] = pdi_load(p + i * sb, dt);
    return buf;
}

static void load_i64(const char *p, int64_t sb, enum pd_dtype dt, int64_t *buf, int64_t n)
{
    switch (dt) {
    case PD_I8: for (int64_t i = 0; i < n; i++) buf[i] = *(const int8_t *)(p + i * sb); break;
    case PD_U8: for (int64_t i = 0; i < n; i++) buf[i] = *(const uint8_t *)(p + i * sb); break;
    case PD_BOOL: for (int64_t i = 0; i < n; i++) buf[i] = *(const uint8_t *)(p + i * sb) != 0; break;
    case PD_I16: for (int64_t i = 0; i < n; i++) buf[i] = *(const int16_t *)(p + i * sb); break;
    case PD_I32: for (int64_t i = 0; i < n; i++) buf[i] = *(const int32_t *)(p + i * sb); break;
    case PD_I64: for (int64_t i = 0; i < n; i++) buf[i] = *(const int64_t *)(p + i * sb); break;
    default: for (int64_t i = 0; i < n; i++) buf[i] = (int64_t)pdi_load(p + i * sb, dt); break;
    }
}

/* ---- hot loops: map then combine ------------------------------------- */
enum rmap { M_ID, M_ABS, M_SQ, M_SQD, M_EXPD, M_COUNT };
enum rcomb { C_ADD, C_MUL, C_MAX, C_MIN, C_COUNT };

#define MAP_ID(v, s, ABS, EXP) (v)
#define MAP_ABS(v, s, ABS, EXP) ABS(v)
#define MAP_SQ(v, s, ABS, EXP) ((v) * (v))
#define MAP_SQD(v, s, ABS, EXP) (((v) - (s)) * ((v) - (s)))
#define MAP_EXPD(v, s, ABS, EXP) EXP((v) - (s))
#define COMB_ADD(a, v) ((a) + (v))
#define COMB_MUL(a, v) ((a) * (v))
/* NaN-propagating: a NaN value wins, a NaN accumulator stays. */
#define COMB_MAX(a, v) (((v) > (a) || (v) != (v)) ? (v) : (a))
#define COMB_MIN(a, v) (((v) < (a) || (v) != (v)) ? (v) : (a))

typedef double (*chunk_fn)(const void *x, int64_t n, double shift);
typedef void (*rows_fn)(void *acc, const void *x, int64_t w, const void *shift);
typedef void (*rowsn_fn)(void *acc, const void *const *x, int64_t w, const void *shift);

/* A contiguous chunk reduced with L independent lanes (vectorised), lanes
 * folded pairwise. */
#define DEF_CHUNK(name, T, L, MAP, COMB, IDENT, ABS, EXP)                                      \
    static double name(const void *xp, int64_t n, double shift_d)                              \
    {                                                                                          \
        const T *x = xp;                                                                       \
        T s = (T)shift_d, acc[L], tail = IDENT;                                                \
        (void)s;                                                                               \
        int64_t i = 0;                                                                         \
        if (n < L) { /* short run: the lanes would stay at IDENT */                            \
            for (; i < n; i++) tail = COMB(tail, MAP(x[i], s, ABS, EXP));                      \
            return (double)COMB(IDENT, tail);                                                  \
        }                                                                                      \
        for (int j = 0; j < L; j++) acc[j] = IDENT;                                            \
        for (; i + L <= n; i += L)                                                             \
            for (int j = 0; j < L; j++) acc[j] = COMB(acc[j], MAP(x[i + j], s, ABS, EXP));     \
        for (; i < n; i++) tail = COMB(tail, MAP(x[i], s, ABS, EXP));                          \
        for (int w = L / 2; w > 0; w /= 2)                                                     \
            for (int j = 0; j < w; j++) acc[j] = COMB(acc[j], acc[j + w]);                     \
        return (double)COMB(acc[0], tail);                                                     \
    }

/* acc[j] = comb(acc[j], map(x[j])) over a row of a column reduction. */
#define DEF_ROWS(name, T, MAP, COMB, ABS, EXP)                                                 \
    static void name(void *accp, const void *xp, int64_t w, const void *shp)                  \
    {                                                                                          \
        T *restrict acc = accp;                                                                \
        const T *restrict x = xp;                                                              \
        const T *restrict sh = shp;                                                            \
        (void)sh;                                                                              \
        for (int64_t j = 0; j < w; j++) acc[j] = COMB(acc[j], MAP(x[j], sh[j], ABS, EXP));     \
    }

/* The same over ROWS_FUSE rows at once (x[0..ROWS_FUSE), each w long), folded
 * into each acc[j] in row order, so the result is bitwise that of
 * ROWS_FUSE calls of the one-row form. One load and store of acc per
 * ROWS_FUSE rows instead of per row: with a 16 KB acc the one-row form
 * spends its time on acc in L1 (0.75 of memcpy for the column sum of
 * [4096, 4096] f32 on one thread, 1.05 with 8 rows fused). */
#define ROWS_FUSE 8
_Static_assert(ROWS_FUSE == 8, "DEF_ROWSN unrolls 8 rows");
#define DEF_ROWSN(name, T, MAP, COMB, ABS, EXP)                                                \
    static void name(void *accp, const void *const *xp, int64_t w, const void *shp)           \
    {                                                                                          \
        T *restrict acc = accp;                                                                \
        const T *restrict sh = shp;                                                            \
        const T *restrict x0 = xp[0], *restrict x1 = xp[1], *restrict x2 = xp[2];              \
        const T *restrict x3 = xp[3], *restrict x4 = xp[4], *restrict x5 = xp[5];              \
        const T *restrict x6 = xp[6], *restrict x7 = xp[7];                                    \
        (void)sh;                                                                              \
        for (int64_t j = 0; j < w; j++) {                                                      \
            T a = acc[j];                                                                      \
            a = COMB(a, MAP(x0[j], sh[j], ABS, EXP));                                          \
            a = COMB(a, MAP(x1[j], sh[j], ABS, EXP));                                          \
            a = COMB(a, MAP(x2[j], sh[j], ABS, EXP));                                          \
            a = COMB(a, MAP(x3[j], sh[j], ABS, EXP));                                          \
            a = COMB(a, MAP(x4[j], sh[j], ABS, EXP));                                          \
            a = COMB(a, MAP(x5[j], sh[j], ABS, EXP));                                          \
            a = COMB(a, MAP(x6[j], sh[j], ABS, EXP));                                          \
            a = COMB(a, MAP(x7[j], sh[j], ABS, EXP));                                          \
            acc[j] = a;                                                                        \
        }                                                                                      \
    }

#define DEF_PAIR(sfx, MAP, COMB, IDENTF, IDENTD)                                               \
    DEF_CHUNK(chunk_f_##sfx, float, 32, MAP, COMB, IDENTF, fabsf, expf)                        \
    DEF_CHUNK(chunk_d_##sfx, double, 16, MAP, COMB, IDENTD, fabs, exp)                         \
    DEF_ROWS(rows_f_##sfx, float, MAP, COMB, fabsf, expf)                                      \
    DEF_ROWS(rows_d_##sfx, double, MAP, COMB, fabs, exp)                                       \
    DEF_ROWSN(rowsn_f_##sfx, float, MAP, COMB, fabsf, expf)                                    \
    DEF_ROWSN(rowsn_d_##sfx, double, MAP, COMB, fabs, exp)

DEF_PAIR(sum, MAP_ID, COMB_ADD, 0.0f, 0.0)
DEF_PAIR(prod, MAP_ID, COMB_MUL, 1.0f, 1.0)
DEF_PAIR(max, MAP_ID, COMB_MAX, -INFINITY, -INFINITY)
DEF_PAIR(min, MAP_ID, COMB_MIN, INFINITY, INFINITY)
DEF_PAIR(asum, MAP_ABS, COMB_ADD, 0.0f, 0.0)
DEF_PAIR(sqsum, MAP_SQ, COMB_ADD, 0.0f, 0.0)
DEF_PAIR(amaxabs, MAP_ABS, COMB_MAX, -INFINITY, -INFINITY)
DEF_PAIR(sqdsum, MAP_SQD, COMB_ADD, 0.0f, 0.0)
DEF_CHUNK(chunk_d_expdsum, double, 16, MAP_EXPD, COMB_ADD, 0.0, fabs, exp)
DEF_ROWS(rows_d_expdsum, double, MAP_EXPD, COMB_ADD, fabs, exp)

/* y[i] = exp(x[i] - s[i]) (s == NULL: the scalar s0). libm's expf does not
 * vectorise without -ffast-math, so with AVX2 it is Cephes' expf on 8 lanes:
 * n = round(x log2 e), r = x - n ln 2 in two parts, a degree-5 polynomial,
 * 2^n through the exponent bits (~1 ulp). Arguments are clamped to
 * [-87.3, 88.3]: -inf gives ~1e-38, lost against the max's own term 1, and a
 * NaN argument only occurs when the max (the shift) is NaN, which makes the
 * result NaN anyway. */
static void exp_shift_f32(float *y, const float *x, const float *s, float s0, int64_t n)
{
    int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
    const __m256 lo = _mm256_set1_ps(-87.3f), hi = _mm256_set1_ps(88.3f);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_sub_ps(_mm256_loadu_ps(x + i), s ? _mm256_loadu_ps(s + i) : _mm256_set1_ps(s0));
        v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
        __m256 k = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), v);
        r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
        __m256 p = _mm256_set1_ps(1.9875691500e-4f);
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
        p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
        __m256 e = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0f));
        __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(e, _mm256_castsi256_ps(bits)));
    }
#endif
    for (; i < n; i++) y[i] = expf(x[i] - (s ? s[i] : s0));
}

static double chunk_f_expdsum(const void *xp, int64_t n, double shift)
{
    float e[CHUNK];
    exp_shift_f32(e, xp, NULL, (float)shift, n);
    return chunk_f_sum(e, n, 0);
}

static void rows_f_expdsum(void *accp, const void *xp, int64_t w, const void *shp)
{
    float e[CHUNK];
    for (int64_t j = 0; j < w; j += CHUNK) {
        int64_t m = w - j < CHUNK ? w - j : CHUNK;
        exp_shift_f32(e, (const float *)xp + j, (const float *)shp + j, 0, m);
        rows_f_sum((float *)accp + j, e, m, NULL);
    }
}

/* One pass of the float engine; rowsn_f/rowsn_d may be NULL (one row at a time). */
struct pass {
    chunk_fn chunk_f, chunk_d;
    rows_fn rows_f, rows_d;
    rowsn_fn rowsn_f, rowsn_d;
    enum rcomb comb;
};

#define PASS(sfx, c) {chunk_f_##sfx, chunk_d_##sfx, rows_f_##sfx, rows_d_##sfx, rowsn_f_##sfx, rowsn_d_##sfx, c}
enum pass_id { P_SUM, P_PROD, P_MAX, P_MIN, P_ASUM, P_SQSUM, P_AMAXABS, P_SQDSUM, P_EXPDSUM, P_COUNT };
static const struct pass passes[P_COUNT] = {
    PASS(sum, C_ADD), PASS(prod, C_MUL), PASS(max, C_MAX), PASS(min, C_MIN), PASS(asum, C_ADD),
    PASS(sqsum, C_ADD), PASS(amaxabs, C_MAX), PASS(sqdsum, C_ADD),
    {chunk_f_expdsum, chunk_d_expdsum, rows_f_expdsum, rows_d_expdsum, NULL, NULL, C_ADD},
};

static double comb_ident(enum rcomb c)
{
    return c == C_ADD ? 0.0 : c == C_MUL ? 1.0 : c == C_MAX ? -INFINITY : INFINITY;
}

static double comb_d(enum rcomb c, double a, double v)
{
    switch (c) {
    case C_ADD: return a + v;
    case C_MUL: return a * v;
    case C_MAX: return COMB_MAX(a, v);
    default: return COMB_MIN(a, v);
    }
}

/* ---- the float engine ------------------------------------------------ */
struct engine {
    const struct pdi_kcall *k; /* scratch comes from its allocator */
    const struct pd_kview *x;
    const struct rgeom *g;
    const struct pass *p;
    int dbl;             /* compute in double (f64 input) */
    const double *shift; /* per output (output element offsets) or NULL */
    double *res;         /* per output */
};

static int parallel_ok(int64_t work) { return work >= PDI_PAR_GRAIN && pdi_num_threads() > 1; }

/* Inner path: partial of chunk c of run q of output o. */
static double inner_partial(const struct engine *e, const char *base, int64_t q, int64_t c, double shift)
{
    const struct rgeom *g = e->g;
    int64_t L = g->rn[g->nr - 1], sx = g->rsx[g->nr - 1];
    int64_t c0 = c * CHUNK, n = L - c0 < CHUNK ? L - c0 : CHUNK;
    const char *p = base + red_off(g, g->nr - 1, q) + c0 * sx;
    if (e->dbl) {
        double buf[CHUNK];
        return e->p->chunk_d(load_f64(p, sx, e->x->dtype, buf, n), n, shift);
    }
    float buf[CHUNK];
    return e->p->chunk_f(load_f32(p, sx, e->x->dtype, buf, n), n, shift);
}

static int engine_inner(const struct engine *e)
{
    const struct rgeom *g = e->g;
    int64_t L = g->rn[g->nr - 1], nq = g->nred / L, nc = (L + CHUNK - 1) / CHUNK, per = nq * nc;
    int64_t nout = g->nout;
    int par = parallel_ok(nout * g->nred);
    if (nout >= 4 * pdi_num_threads() || per == 1 || !par) {
PDI_FOR(par, o, nout, {
            int64_t oo;
            const char *base = e->x->data + kept_off(g, g->nk, o, &oo);
            double sh = e->shift ? e->shift[oo] : 0, acc = comb_ident(e->p->comb);
            for (int64_t t = 0; t < per; t++) acc = comb_d(e->p->comb, acc, inner_partial(e, base, t / nc, t % nc, sh));
            e->res[oo] = acc;
        });
        return PD_OK;
    }
    /* Few outputs: every chunk is a task; fold the partials in order. */
    size_t pbytes = sizeof(double) * (size_t)(nout * per);
    double *part = pdi_kscratch(e->k, pbytes);
    if (!part) return pdi_errorf(PD_ERR_NOMEM, "reduce: out of memory for partials");
#pragma omp parallel for schedule(static) num_threads(pdi_num_threads())
    for (int64_t t = 0; t < nout * per; t++) {
        int64_t o = t / per, r = t % per, oo;
        const char *base = e->x->data + kept_off(g, g->nk, o, &oo);
        part[t] = inner_partial(e, base, r / nc, r % nc, e->shift ? e->shift[oo] : 0);
    }
    for (int64_t o = 0; o < nout; o++) {
        int64_t oo;
        kept_off(g, g->nk, o, &oo);
        double acc = comb_ident(e->p->comb);
        for (int64_t r = 0; r < per; r++) acc = comb_d(e->p->comb, acc, part[o * per + r]);
        e->res[oo] = acc;
    }
    pdi_kscratch_free(e->k, part, pbytes);
    return PD_OK;
}

/* Outer path: rows [r0, r1) of task (group gi, column chunk ci) folded into
 * part[0..cw) (double). */
static void outer_block(const struct engine *e, int64_t gi, int64_t ci, int64_t r0, int64_t r1, double *part)
{
    const struct rgeom *g = e->g;
    int64_t W = g->kn[g->nk - 1], sw = g->ksx[g->nk - 1], sow = g->kso[g->nk - 1];
    int64_t j0 = ci * COLS, cw = W - j0 < COLS ? W - j0 : COLS, oo;
    const char *base = e->x->data + kept_off(g, g->nk - 1, gi, &oo) + j0 * sw;
    oo += j0 * sow;
    union { float f[COLS]; double d[COLS]; } acc, sh, buf;
    for (int64_t j = 0; j < cw; j++) {
        double s = e->shift ? e->shift[oo + j * sow] : 0;
        if (e->dbl) { sh.d[j] = s; acc.d[j] = comb_ident(e->p->comb); }
        else { sh.f[j] = (float)s; acc.f[j] = (float)comb_ident(e->p->comb); }
    }
    /* rows read in place (no conversion): fold ROWS_FUSE of them per sweep of acc */
    rowsn_fn rn = e->dbl ? e->p->rowsn_d : e->p->rowsn_f;
    int64_t q = r0;
    if (rn && (e->dbl ? e->x->dtype == PD_F64 && sw == 8 : e->x->dtype == PD_F32 && sw == 4)) {
        void *a = e->dbl ? (void *)acc.d : (void *)acc.f;
        const void *s = e->dbl ? (const void *)sh.d : (const void *)sh.f;
        for (; q + ROWS_FUSE <= r1; q += ROWS_FUSE) {
            const void *xs[ROWS_FUSE];
            for (int k = 0; k < ROWS_FUSE; k++) xs[k] = base + red_off(g, g->nr, q + k);
            rn(a, xs, cw, s);
        }
    }
    for (; q < r1; q++) {
        const char *p = base + red_off(g, g->nr, q);
        if (e->dbl) e->p->rows_d(acc.d, load_f64(p, sw, e->x->dtype, buf.d, cw), cw, sh.d);
        else e->p->rows_f(acc.f, load_f32(p, sw, e->x->dtype, buf.f, cw), cw, sh.f);
    }
    for (int64_t j = 0; j < cw; j++) part[j] = e->dbl ? acc.d[j] : (double)acc.f[j];
}

static int engine_outer(const struct engine *e)
{
    const struct rgeom *g = e->g;
    int64_t W = g->kn[g->nk - 1], sow = g->kso[g->nk - 1];
    int64_t ngroups = g->nout / W, ncol = (W + COLS - 1) / COLS, ntask = ngroups * ncol;
    int64_t nq = g->nred;
    int64_t rb = (nq + MAX_NRB - 1) / MAX_NRB;
    if (rb < MIN_RB) rb = MIN_RB;
    int64_t nrb = (nq + rb - 1) / rb;
    int par = parallel_ok(g->nout * g->nred);
    enum rcomb cb = e->p->comb;
    if (ntask >= 2 * pdi_num_threads() || nrb == 1 || !par) {
PDI_FOR(par, t, ntask, {
            int64_t gi = t / ncol, ci = t % ncol, oo, cw = W - ci * COLS < COLS ? W - ci * COLS : COLS;
            double part[COLS], acc[COLS];
            for (int64_t j = 0; j < cw; j++) acc[j] = comb_ident(cb);
            for (int64_t b = 0; b < nrb; b++) {
                outer_block(e, gi, ci, b * rb, (b + 1) * rb < nq ? (b + 1) * rb : nq, part);
                for (int64_t j = 0; j < cw; j++) acc[j] = comb_d(cb, acc[j], part[j]);
            }
            kept_off(g, g->nk - 1, gi, &oo);
            oo += ci * COLS * sow;
            for (int64_t j = 0; j < cw; j++) e->res[oo + j * sow] = acc[j];
        });
        return PD_OK;
    }
    /* Few column tasks: row blocks are tasks too; fold them in order. */
    int64_t pw = W < COLS ? W : COLS; /* partial row width */
    size_t pbytes = sizeof(double) * (size_t)(ntask * nrb * pw);
    double *part = pdi_kscratch(e->k, pbytes);
    if (!part) return pdi_errorf(PD_ERR_NOMEM, "reduce: out of memory for partials");
#pragma omp parallel for schedule(static) num_threads(pdi_num_threads())
    for (int64_t t = 0; t < ntask * nrb; t++) {
        int64_t task = t / nrb, b = t % nrb;
        outer_block(e, task / ncol, task % ncol, b * rb, (b + 1) * rb < nq ? (b + 1) * rb : nq, part + t * pw);
    }
    for (int64_t task = 0; task < ntask; task++) {
        int64_t gi = task / ncol, ci = task % ncol, oo, cw = W - ci * COLS < COLS ? W - ci * COLS : COLS;
        kept_off(g, g->nk - 1, gi, &oo);
        oo += ci * COLS * sow;
        double acc[COLS];
        for (int64_t j = 0; j < cw; j++) acc[j] = comb_ident(cb);
        for (int64_t b = 0; b < nrb; b++) {
            const double *pb = part + (task * nrb + b) * pw;
            for (int64_t j = 0; j < cw; j++) acc[j] = comb_d(cb, acc[j], pb[j]);
        }
        for (int64_t j = 0; j < cw; j++) e->res[oo + j * sow] = acc[j];
    }
    pdi_kscratch_free(e->k, part, pbytes);
    return PD_OK;
}

/* res[output offset] = fold of the pass over each output's reduced set. */
static int engine_run(const struct pdi_kcall *k, const struct rgeom *g, enum pass_id pid, const double *shift,
                      double *res)
{
    const struct pd_kview *x = &k->in[0];
    struct engine e = {k, x, g, &passes[pid], x->dtype == PD_F64, shift, res};
    if (g->nout == 0) return PD_OK;
    if (g->nred == 0) {
        for (int64_t o = 0; o < g->nout; o++) res[o] = comb_ident(e.p->comb);
        return PD_OK;
    }
    return g->inner_red ? engine_inner(&e) : engine_outer(&e);
}

/* ---- float reductions ------------------------------------------------ */
static void store_all(const struct pd_kview *y, const double *res, int64_t n)
{
    char *d = y->data;
    switch (y->dtype) {
    case PD_F32: for (int64_t i = 0; i < n; i++) ((float *)d)[i] = (float)res[i]; break;
    case PD_F64: memcpy(d, res, sizeof *res * (size_t)n); break;
    case PD_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i] = pd_f64_to_bf16(res[i]); break;
    case PD_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)d)[i] = pd_f64_to_f16(res[i]); break;
    default: for (int64_t i = 0; i < n; i++) pdi_store(d + i * (int64_t)pd_dtype_size(y->dtype), y->dtype, res[i]);
    }
}

static int cpu_float_reduce(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    double np = k->op == PD_OP_norm ? k->a->reduce_norm.p : 1.0;
    if (np != 1.0 && np != 2.0 && np != INFINITY) { /* norm's other orders: the reference kernel */
        pdi_kernel_fn ref = pdi_kernel_lookup(PDI_BACKEND_REF, k->op, x->dtype);
        return ref ? ref(k) : pdi_errorf(PD_ERR_UNSUPPORTED, "norm: no kernel for p = %g", np);
    }
    struct rgeom g;
    rgeom_init(x, pdi_attrs_axes_mask(k->a, x->ndim), 1, &g);
    int64_t nout = g.nout;
    double nred = (double)g.nred;
    /* results, a second pass's shifts, logsumexp's maxima: on the stack
     * for few outputs (a full reduction), else scratch */
    double small[3 * 16];
    size_t rbytes = sizeof(double) * (size_t)(nout ? 3 * nout : 1);
    double *res = rbytes <= sizeof small ? small : pdi_kscratch(k, rbytes);
    if (!res) return pdi_errorf(PD_ERR_NOMEM, "%s: out of memory", pdi_op_name(k->op));
    double *tmp = res + nout;
    int rc = PD_OK;
    switch (k->op) {
    case PD_OP_sum: rc = engine_run(k, &g, P_SUM, NULL, res); break;
    case PD_OP_mean:
        rc = engine_run(k, &g, P_SUM, NULL, res);
        for (int64_t o = 0; o < nout; o++) res[o] /= nred;
        break;
    case PD_OP_prod: rc = engine_run(k, &g, P_PROD, NULL, res); break;
    case PD_OP_amax: rc = engine_run(k, &g, P_MAX, NULL, res); break;
    case PD_OP_amin: rc = engine_run(k, &g, P_MIN, NULL, res); break;
    case PD_OP_norm: {
        double p = k->a->reduce_norm.p;
        rc = engine_run(k, &g, p == 1.0 ? P_ASUM : p == 2.0 ? P_SQSUM : P_AMAXABS, NULL, res);
        if (p == 2.0)
            for (int64_t o = 0; o < nout; o++) res[o] = sqrt(res[o]);
        if (isinf(p))
            for (int64_t o = 0; o < nout; o++) res[o] = nred == 0 ? 0 : res[o];
        break;
    }
    case PD_OP_var:
    case PD_OP_std: { /* two passes: the mean, then squared deviations from it */
        rc = engine_run(k, &g, P_SUM, NULL, tmp);
        for (int64_t o = 0; o < nout; o++) tmp[o] /= nred;
        if (!rc) rc = engine_run(k, &g, P_SQDSUM, tmp, res);
        double div = nred - (double)k->a->reduce_var.correction;
        if (div < 0) div = 0;
        for (int64_t o = 0; o < nout; o++) {
            res[o] /= div;
            if (k->op == PD_OP_std) res[o] = sqrt(res[o]);
        }
        break;
    }
    case PD_OP_logsumexp: { /* max, then sum exp(x - max); an infinite max is the result */
        double *mx = res + 2 * nout;
        rc = engine_run(k, &g, P_MAX, NULL, mx);
        for (int64_t o = 0; o < nout; o++) tmp[o] = isinf(mx[o]) ? 0 : mx[o];
        if (!rc) rc = engine_run(k, &g, P_EXPDSUM, tmp, res);
        for (int64_t o = 0; o < nout; o++) res[o] = isinf(mx[o]) ? mx[o] : log(res[o]) + tmp[o];
        break;
    }
    default: rc = pdi_errorf(PD_ERR_UNSUPPORTED, "%s: no CPU float kernel", pdi_op_name(k->op));
    }
    if (!rc) store_all(y, res, nout);
    if (res != small) pdi_kscratch_free(k, res, rbytes);
    return rc;
}

/* ---- simple path: integers, indices, all/any ------------------------- */
/* Runs state for one output: visits the reduced elements in row-major order
 * in chunks converted to int64 or float/double. */
enum svalk { SV_I64, SV_F32, SV_F64 };

struct sstate {
    enum pd_op op;
    enum svalk vk;
    int64_t acc_i, best_i;        /* int64 accumulator / best index */
    double best_d;                /* best float value */
    int any_seen, done;
};

static void sstate_begin(struct sstate *s)
{
    s->acc_i = s->op == PD_OP_prod ? 1 : 0;
    s->best_i = -1;
    s->best_d = 0;
    s->any_seen = 0;
    s->done = 0;
    if (s->op == PD_OP_all) s->acc_i = 1;
}

static int is_maxop(enum pd_op op) { return op == PD_OP_max || op == PD_OP_argmax || op == PD_OP_amax; }

/* Consume n converted values whose first has reduced index r0. */
static void sstate_feed(struct sstate *s, const void *v, int64_t n, int64_t r0)
{
    enum pd_op op = s->op;
    int want_max = is_maxop(op);
    if (s->vk == SV_I64) {
        const int64_t *a = v;
        switch (op) {
        case PD_OP_sum: { uint64_t t = (uint64_t)s->acc_i; for (int64_t i = 0; i < n; i++) t += (uint64_t)a[i]; s->acc_i = (int64_t)t; break; }
        case PD_OP_prod: { uint64_t t = (uint64_t)s->acc_i; for (int64_t i = 0; i < n; i++) t *= (uint64_t)a[i]; s->acc_i = (int64_t)t; break; }
        case PD_OP_all: for (int64_t i = 0; i < n; i++) if (!a[i]) { s->acc_i = 0; s->done = 1; break; } break;
        case PD_OP_any: for (int64_t i = 0; i < n; i++) if (a[i]) { s->acc_i = 1; s->done = 1; break; } break;
        default: /* max/min family */
            for (int64_t i = 0; i < n; i++) {
                if (!s->any_seen || (want_max ? a[i] > s->acc_i : a[i] < s->acc_i)) {
                    s->acc_i = a[i];
                    s->best_i = r0 + i;
                    s->any_seen = 1;
                }
            }
        }
        return;
    }
    /* floats (f32 buffer or f64 buffer) */
    int f32 = s->vk == SV_F32;
    const float *vf = v;
    const double *vd = v;
#define VAL(i) (f32 ? (double)vf[i] : vd[i])
    if (op == PD_OP_all || op == PD_OP_any) {
        for (int64_t i = 0; i < n; i++)
            if ((VAL(i) != 0) == (op == PD_OP_any)) { s->acc_i = op == PD_OP_any; s->done = 1; return; }
        return;
    }
    /* max family: the chunk's extreme (vectorised, NaN-propagating), then
     * its first position; strict comparison keeps earlier chunks' ties. */
    const struct pass *p = &passes[want_max ? P_MAX : P_MIN];
    double m = f32 ? p->chunk_f(v, n, 0) : p->chunk_d(v, n, 0);
    if (s->any_seen && !isnan(m) && !(want_max ? m > s->best_d : m < s->best_d)) return;
    int64_t i = 0;
    if (isnan(m)) while (!isnan(VAL(i))) i++;
    else while (VAL(i) != m) i++;
    s->best_d = m;
    s->best_i = r0 + i;
    s->any_seen = 1;
    if (isnan(m)) s->done = 1; /* the first NaN is final */
#undef VAL
}

static void simple_one(const struct pd_kview *x, const struct rgeom *g, struct sstate *s, const char *base)
{
    int64_t L = g->rn[g->nr - 1], sx = g->rsx[g->nr - 1], nq = g->nred / (L ? L : 1);
    union { int64_t i[CHUNK]; float f[CHUNK]; double d[CHUNK]; } buf;
    sstate_begin(s);
    for (int64_t q = 0; q < nq && !s->done; q++) {
        const char *p = base + red_off(g, g->nr - 1, q);
        for (int64_t c0 = 0; c0 < L && !s->done; c0 += CHUNK) {
            int64_t n = L - c0 < CHUNK ? L - c0 : CHUNK;
            const void *v;
            if (s->vk == SV_I64) { load_i64(p + c0 * sx, sx, x->dtype, buf.i, n); v = buf.i; }
            else if (s->vk == SV_F32) v = load_f32(p + c0 * sx, sx, x->dtype, buf.f, n);
            else v = load_f64(p + c0 * sx, sx, x->dtype, buf.d, n);
            sstate_feed(s, v, n, q * L + c0);
        }
    }
}

/* Simple path, innermost dim kept: rows of a column chunk update per-column
 * state in row order (row index = reduced index, so ties keep the first). */
#define SCOLS 256
static void simple_outer(const struct pdi_kcall *k, const struct rgeom *g, enum svalk vk)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    enum pd_op op = k->op;
    int want_max = is_maxop(op);
    int64_t W = g->kn[g->nk - 1], sw = g->ksx[g->nk - 1], sow = g->kso[g->nk - 1];
    int64_t ncol = (W + SCOLS - 1) / SCOLS, ntask = g->nout / W * ncol;
    int64_t es = (int64_t)pd_dtype_size(x->dtype), ys = (int64_t)pd_dtype_size(y->dtype);
    int par = parallel_ok(g->nout * g->nred);
PDI_FOR(par, t, ntask, {
        int64_t gi = t / ncol, j0 = t % ncol * SCOLS, cw = W - j0 < SCOLS ? W - j0 : SCOLS, oo;
        const char *base = x->data + kept_off(g, g->nk - 1, gi, &oo) + j0 * sw;
        oo += j0 * sow;
        int64_t acc[SCOLS], bidx[SCOLS];
        double bd[SCOLS];
        union { int64_t i[SCOLS]; float f[SCOLS]; double d[SCOLS]; } buf;
        for (int64_t j = 0; j < cw; j++) {
            acc[j] = op == PD_OP_prod || op == PD_OP_all;
            bidx[j] = 0;
        }
        for (int64_t q = 0; q < g->nred; q++) {
            const char *p = base + red_off(g, g->nr, q);
            if (vk == SV_I64) {
                load_i64(p, sw, x->dtype, buf.i, cw);
                const int64_t *v = buf.i;
                switch (op) {
                case PD_OP_sum: for (int64_t j = 0; j < cw; j++) acc[j] = (int64_t)((uint64_t)acc[j] + (uint64_t)v[j]); break;
                case PD_OP_prod: for (int64_t j = 0; j < cw; j++) acc[j] = (int64_t)((uint64_t)acc[j] * (uint64_t)v[j]); break;
                case PD_OP_all: for (int64_t j = 0; j < cw; j++) acc[j] &= v[j] != 0; break;
                case PD_OP_any: for (int64_t j = 0; j < cw; j++) acc[j] |= v[j] != 0; break;
                default:
                    for (int64_t j = 0; j < cw; j++)
                        if (q == 0 || (want_max ? v[j] > acc[j] : v[j] < acc[j])) { acc[j] = v[j]; bidx[j] = q; }
                }
            } else {
                const float *vf = vk == SV_F32 ? load_f32(p, sw, x->dtype, buf.f, cw) : NULL;
                const double *vd = vk == SV_F64 ? load_f64(p, sw, x->dtype, buf.d, cw) : NULL;
                for (int64_t j = 0; j < cw; j++) {
                    double v = vf ? (double)vf[j] : vd[j];
                    if (op == PD_OP_all) acc[j] &= v != 0;
                    else if (op == PD_OP_any) acc[j] |= v != 0;
                    else if (q == 0 || (!isnan(bd[j]) && (isnan(v) || (want_max ? v > bd[j] : v < bd[j])))) {
                        bd[j] = v;
                        bidx[j] = q;
                    }
                }
            }
        }
        for (int64_t j = 0; j < cw; j++) {
            char *dst = y->data + (oo + j * sow) * ys;
            switch (op) {
            case PD_OP_all:
            case PD_OP_any: *(uint8_t *)dst = acc[j] != 0; break;
            case PD_OP_sum:
            case PD_OP_prod: *(int64_t *)dst = acc[j]; break;
            case PD_OP_argmax:
            case PD_OP_argmin: *(int64_t *)dst = bidx[j]; break;
            default:
                memcpy(dst, base + red_off(g, g->nr, bidx[j]) + j * sw, (size_t)es);
                if (op == PD_OP_max || op == PD_OP_min) ((int64_t *)k->out[1].data)[oo + j * sow] = bidx[j];
            }
        }
    });
}

static int cpu_simple_reduce(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    struct rgeom g;
    rgeom_init(x, pdi_attrs_axes_mask(k->a, x->ndim), 0, &g); /* no sort: index order matters */
    enum pd_op op = k->op;
    enum svalk vk = !pd_dtype_is_float(x->dtype) ? SV_I64 : x->dtype == PD_F64 ? SV_F64 : SV_F32;
    int64_t es = (int64_t)pd_dtype_size(x->dtype);
    if (g.nout == 0) return PD_OK;
    if (!g.inner_red) {
        simple_outer(k, &g, vk);
        return PD_OK;
    }
    int par = parallel_ok(g.nout * g.nred);
PDI_FOR(par, o, g.nout, {
        int64_t oo;
        const char *base = x->data + kept_off(&g, g.nk, o, &oo);
        struct sstate s = {.op = op, .vk = vk};
        simple_one(x, &g, &s, base);
        char *dst = y->data + oo * (int64_t)pd_dtype_size(y->dtype);
        switch (op) {
        case PD_OP_all:
        case PD_OP_any: *(uint8_t *)dst = s.acc_i != 0; break;
        case PD_OP_sum:
        case PD_OP_prod: *(int64_t *)dst = s.acc_i; break;
        case PD_OP_argmax:
        case PD_OP_argmin: *(int64_t *)dst = s.best_i; break;
        default: { /* amax/amin (ints), max/min: copy the winning element */
            int64_t r = s.best_i, L = g.rn[g.nr - 1];
            const char *src = base + red_off(&g, g.nr - 1, r / L) + (r % L) * g.rsx[g.nr - 1];
            memcpy(dst, src, (size_t)es);
            if (op == PD_OP_max || op == PD_OP_min) ((int64_t *)k->out[1].data)[oo] = r;
        }
        }
    });
    return PD_OK;
}

/* ---- scans ----------------------------------------------------------- */
/* Contiguous input, axis not innermost: out rows are prev row (+|*) x row. */
static void scan_rows(const struct pd_kview *x, const struct pd_kview *y, int ax, int prod, int rev)
{
    int64_t outer = 1, inner = 1, n = x->shape[ax];
    for (int d = 0; d < ax; d++) outer *= x->shape[d];
    for (int d = ax + 1; d < x->ndim; d++) inner *= x->shape[d];
    int dbl = x->dtype == PD_F64;
    int par = parallel_ok(outer * n * inner);
PDI_FOR(par, o, outer, {
        for (int64_t t = 0; t < n; t++) {
            int64_t r = rev ? n - 1 - t : t, pr = rev ? r + 1 : r - 1;
            int64_t off = (o * n + r) * inner, poff = (o * n + pr) * inner;
            if (dbl) {
                const double *a = (const double *)x->data + off;
                double *b = (double *)y->data + off, *pb = (double *)y->data + poff;
                if (t == 0) memcpy(b, a, sizeof *a * (size_t)inner);
                else if (prod) for (int64_t i = 0; i < inner; i++) b[i] = pb[i] * a[i];
                else for (int64_t i = 0; i < inner; i++) b[i] = pb[i] + a[i];
            } else {
                const float *a = (const float *)x->data + off;
                float *b = (float *)y->data + off, *pb = (float *)y->data + poff;
                if (t == 0) memcpy(b, a, sizeof *a * (size_t)inner);
                else if (prod) for (int64_t i = 0; i < inner; i++) b[i] = pb[i] * a[i];
                else for (int64_t i = 0; i < inner; i++) b[i] = pb[i] + a[i];
            }
        }
    });
}

static int cpu_scan(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int ax = (int)k->a->scan.axis, rev = k->a->scan.reverse != 0, prod = k->op == PD_OP_cumprod;
    if (pdi_kview_numel(x) == 0) return PD_OK;
    if ((x->dtype == PD_F32 || x->dtype == PD_F64) && x->ndim > 0 && ax < x->ndim - 1 && pdi_kview_contiguous(x)) {
        scan_rows(x, y, ax, prod, rev);
        return PD_OK;
    }
    int64_t n = x->ndim ? x->shape[ax] : 1, es = (int64_t)pd_dtype_size(x->dtype);
    int64_t sx = x->ndim ? x->strides[ax] * es : 0, sy = x->ndim ? y->strides[ax] * (int64_t)pd_dtype_size(y->dtype) : 0;
    struct pd_kview xl = *x, yl = *y; /* the other dims: one line each */
    if (x->ndim) { xl.shape[ax] = 1; yl.shape[ax] = 1; }
    int64_t nlines = pdi_kview_numel(&xl);
    int ints = !pd_dtype_is_float(y->dtype);
    int par = parallel_ok(nlines * n);
#pragma omp parallel for schedule(dynamic, 16) if (par) num_threads(pdi_num_threads())
    for (int64_t l = 0; l < nlines; l++) {
        const char *xp = pdi_kview_ptr(&xl, l);
        char *yp = pdi_kview_ptr(&yl, l);
        if (ints) {
            uint64_t acc = (uint64_t)prod;
            for (int64_t t = 0; t < n; t++) {
                int64_t r = rev ? n - 1 - t : t, v;
                load_i64(xp + r * sx, 0, x->dtype, &v, 1);
                acc = prod ? acc * (uint64_t)v : acc + (uint64_t)v;
                *(int64_t *)(yp + r * sy) = (int64_t)acc;
            }
        } else if (x->dtype == PD_F64) {
            double acc = prod;
            for (int64_t t = 0; t < n; t++) {
                int64_t r = rev ? n - 1 - t : t;
                double v = *(const double *)(xp + r * sx);
                acc = prod ? acc * v : acc + v;
                *(double *)(yp + r * sy) = acc;
            }
        } else if (x->dtype == PD_F32) { /* walk backwards by negating the strides */
            const char *xs = rev ? xp + (n - 1) * sx : xp;
            char *ys = rev ? yp + (n - 1) * sy : yp;
            int64_t dx = rev ? -sx : sx, dy = rev ? -sy : sy;
            float acc = (float)prod;
            if (prod)
                for (int64_t t = 0; t < n; t++) *(float *)(ys + t * dy) = acc *= *(const float *)(xs + t * dx);
            else
                for (int64_t t = 0; t < n; t++) *(float *)(ys + t * dy) = acc += *(const float *)(xs + t * dx);
        } else { /* bf16, f16: accumulate in f32 */
            float acc = (float)prod, v;
            for (int64_t t = 0; t < n; t++) {
                int64_t r = rev ? n - 1 - t : t;
                load_f32(xp + r * sx, 0, x->dtype, &v, 1);
                acc = prod ? acc * v : acc + v;
                pdi_store(yp + r * sy, y->dtype, acc);
            }
        }
    }
    return PD_OK;
}

void pdi_register_cpu_reduce(void)
{
    static const enum pd_op float_ops[] = {PD_OP_sum, PD_OP_mean, PD_OP_prod, PD_OP_amax, PD_OP_amin,
                                           PD_OP_var, PD_OP_std, PD_OP_logsumexp, PD_OP_norm};
    static const enum pd_op simple_ops[] = {PD_OP_max, PD_OP_min, PD_OP_argmax, PD_OP_argmin, PD_OP_all, PD_OP_any};
    static const enum pd_op int_ops[] = {PD_OP_sum, PD_OP_prod, PD_OP_amax, PD_OP_amin};
    for (size_t i = 0; i < sizeof float_ops / sizeof float_ops[0]; i++)
        pdi_kernel_register_mask(PDI_BACKEND_CPU, float_ops[i], PDI_DT_FLOATS, cpu_float_reduce);
    for (size_t i = 0; i < sizeof simple_ops / sizeof simple_ops[0]; i++)
        pdi_kernel_register_mask(PDI_BACKEND_CPU, simple_ops[i], PDI_DT_ALL, cpu_simple_reduce);
    for (size_t i = 0; i < sizeof int_ops / sizeof int_ops[0]; i++)
        pdi_kernel_register_mask(PDI_BACKEND_CPU, int_ops[i], PDI_DT_INTS | (1u << PD_BOOL), cpu_simple_reduce);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_cumsum, PDI_DT_ALL, cpu_scan);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_cumprod, PDI_DT_ALL, cpu_scan);
}
