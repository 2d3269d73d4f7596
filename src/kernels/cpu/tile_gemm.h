/* paddle.c — the register-tiled f32 matrix kernel shared by the CPU
 * attention kernels (llm.c: sdpa; flashmask.c), with the f32 panel
 * conversions they pack their operands with.
 *
 * One kernel for every product: C[M][N] (+)= A[M][K] B[K][N] with A read
 * through (row, column) element strides, so that a transposed operand
 * needs no copy, and B a row-major panel whose N is a multiple of the
 * kernel's vector, PDI_GEMM_VW floats: 16 (512-bit) when built with
 * AVX-512, else 8 (AVX2/FMA, or plain code elsewhere). Callers pad their
 * panels with zeros to round_vw and their leading dimensions with pad_ld.
 * GCC vector extensions; header-only (static inline) so that each kernel
 * file inlines it. On the bench machine (AMD EPYC Zen 5, one core) the
 * 16-wide kernel runs the 64 x 64 x 64..128 attention tile products at
 * 200-205 GFLOP/s (the FMA peak is about 207); 8-wide ymm tiles (8 x 24)
 * reached 100-106 there.
 */
#ifndef PD_KERNELS_CPU_TILE_GEMM_H
#define PD_KERNELS_CPU_TILE_GEMM_H

#include <stdint.h>
#include <string.h>

#include "core/kernel.h"

/* 8 floats whatever the ISA: the sdpa decode path's dot products. */
typedef float v8 __attribute__((vector_size(32)));
static inline v8 ld8(const float *p)
{
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void st8(float *p, v8 v) { memcpy(p, &v, sizeof v); }
static inline v8 bc8(float x) { return (v8){x, x, x, x, x, x, x, x}; }

/* ---- conversion to and from f32 panels ------------------------------- */
/* n floats from s to d: rows of one head (tens of floats), copied a few
 * thousand times per attention call, where a call of libc's memcpy per row
 * cost about as much as the copy. */
static inline void copy_f32(float *d, const float *s, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) st8(d + i, ld8(s + i));
    for (; i < n; i++) d[i] = s[i];
}

static inline float ldf(const char *p, enum pd_dtype dt)
{
    switch (dt) {
    case PD_F32: return *(const float *)p;
    case PD_BF16: return pdi_bf16_f32(*(const uint16_t *)p);
    case PD_F16: return pd_f16_to_f32(*(const uint16_t *)p);
    case PD_F64: return (float)*(const double *)p;
    default: return 0.0f;
    }
}

/* n elements at element stride `stride` from p into dst. */
static inline void load_f32(float *dst, const char *p, enum pd_dtype dt, int64_t n, int64_t stride)
{
    if (dt == PD_F32) {
        const float *f = (const float *)p;
        if (stride == 1) copy_f32(dst, f, n);
        else for (int64_t i = 0; i < n; i++) dst[i] = f[i * stride];
    } else if (dt == PD_BF16) {
        const uint16_t *h = (const uint16_t *)p;
        for (int64_t i = 0; i < n; i++) dst[i] = pdi_bf16_f32(h[i * stride]);
    } else {
        int64_t es = (int64_t)pd_dtype_size(dt);
        for (int64_t i = 0; i < n; i++) dst[i] = ldf(p + i * stride * es, dt);
    }
}

/* n elements from src to p at element stride `stride`. */
static inline void store_f32(char *p, enum pd_dtype dt, const float *src, int64_t n, int64_t stride)
{
    switch (dt) {
    case PD_F32:
        if (stride == 1) copy_f32((float *)p, src, n);
        else for (int64_t i = 0; i < n; i++) ((float *)p)[i * stride] = src[i];
        break;
    case PD_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i * stride] = pdi_f32_bf16(src[i]); break;
    case PD_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i * stride] = pd_f32_to_f16(src[i]); break;
    case PD_F64: for (int64_t i = 0; i < n; i++) ((double *)p)[i * stride] = src[i]; break;
    default: break;
    }
}

/* ---- the one matrix kernel ------------------------------------------- */
/* The kernel's vector: 16 floats (one zmm) with AVX-512, 8 (one ymm, or
 * plain code) otherwise; panels are padded to round_vw. Tiles of MR rows x
 * NV vectors keep MR NV accumulators, NV B vectors and one broadcast in
 * registers. With AVX-512's 32 registers 6 x 4 (24 accumulators, 10 loads
 * per 24 FMAs) suits the 64-wide panels of the attention tiles, and each
 * narrower panel takes more rows (8 x 3, 12 x 2, 12 x 1). AVX2 has 16
 * registers: 6 x 2 (12 accumulators, 8 loads per 12 FMAs) and 8 x 1 for a
 * last single vector. 4 x 3 needed all 16 and GCC folded the B loads into
 * the FMAs (16 loads per 12 FMAs: load-bound; the attention kernels ran
 * about 12% faster on Zen 3 after the change). FMA latency 4 x 2 ports
 * needs 8+ accumulators either way. Every
 * element's sum runs over k in the same order whatever its tile: same
 * bits for any M, N and tile shape. */
#ifdef __AVX512F__
#define PDI_GEMM_VW 16
#define PDI_GEMM_NV 4
#else
#define PDI_GEMM_VW 8
#define PDI_GEMM_NV 2
#endif
#define PDI_GEMM_MR 12 /* the most rows of any tile */

typedef float vg __attribute__((vector_size(PDI_GEMM_VW * 4)));
typedef int32_t vgi __attribute__((vector_size(PDI_GEMM_VW * 4)));
static inline vg ldg(const float *p)
{
    vg v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void stg(float *p, vg v) { memcpy(p, &v, sizeof v); }
/* Listed lanes, not {0} + x: that is a scalar add (0 + -0 is +0) and a
 * register broadcast, where this is one broadcast load. */
#if PDI_GEMM_VW == 16
static inline vg bcg(float x) { return (vg){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
#else
static inline vg bcg(float x) { return (vg){x, x, x, x, x, x, x, x}; }
#endif
static inline int64_t round_vw(int64_t n) { return (n + PDI_GEMM_VW - 1) & ~(int64_t)(PDI_GEMM_VW - 1); }
/* Leading dimension of a panel of rows of n floats (n a multiple of the
 * vector): a row stride that is a multiple of 128 bytes maps the rows of a
 * K x NV-vector panel onto a few L1 sets (1 KiB strides: 4 of 64), and the
 * gemm thrashes on conflict misses; one vector more spreads them and keeps
 * rows as aligned as the vectors (a zmm load across two lines costs two). */
static inline int64_t pad_ld(int64_t n) { return n > 0 && n % 32 == 0 ? n + PDI_GEMM_VW : n; }

/* C[MR][VW NV] (+)= A[MR][K] B[K][VW NV] with A(m, k) = a[m ars + k acs]. */
static inline __attribute__((always_inline)) void tile(int MR, int NV, int64_t K, const float *a, int64_t ars,
                                                      int64_t acs, const float *b, int64_t ldb, float *c,
                                                      int64_t ldc, int acc)
{
    vg r[PDI_GEMM_MR][PDI_GEMM_NV];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NV; j++) r[i][j] = acc ? ldg(c + i * ldc + PDI_GEMM_VW * j) : bcg(0.0f);
    for (int64_t k = 0; k < K; k++) {
        vg bv[PDI_GEMM_NV];
        for (int j = 0; j < NV; j++) bv[j] = ldg(b + k * ldb + PDI_GEMM_VW * j);
        for (int i = 0; i < MR; i++) {
            vg av = bcg(a[i * ars + k * acs]);
            for (int j = 0; j < NV; j++) r[i][j] += av * bv[j];
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NV; j++) stg(c + i * ldc + PDI_GEMM_VW * j, r[i][j]);
}

/* Rows of A that are zero outside a range of k: row m of group m / group
 * sums over [lo, hi) of its group only (the FlashMask kernels' masked
 * sub-blocks). A kernel tile sums over the union of its rows' ranges, in
 * the same order, so only exact-zero terms are left out; a tile whose rows
 * all have an empty range is left as it is (use with acc = 1). NULL: every
 * row over [0, K). */
struct pdi_kspans {
    const int64_t *lo, *hi;
    int64_t group;
};

static inline __attribute__((always_inline)) int pdi_kspan(const struct pdi_kspans *ks, int64_t K, int64_t m0,
                                                          int64_t r, int64_t *k0, int64_t *k1)
{
    if (!ks) {
        *k0 = 0, *k1 = K;
        return 1;
    }
    *k0 = INT64_MAX, *k1 = 0;
    for (int64_t q = m0 / ks->group; q <= (m0 + r - 1) / ks->group; q++)
        if (ks->hi[q] > ks->lo[q]) {
            *k0 = ks->lo[q] < *k0 ? ks->lo[q] : *k0;
            *k1 = ks->hi[q] > *k1 ? ks->hi[q] : *k1;
        }
    return *k1 > *k0;
}

/* The M rows of one column panel of NV vectors: tiles of MR rows, then the
 * remainder (< MR rows) as tiles of 8, 4, 2 and 1; each tile over its k
 * range (pdi_kspan). */
static inline __attribute__((always_inline)) void panel(int MR, int NV, int64_t M, int64_t K,
                                                       const struct pdi_kspans *ks, const float *a, int64_t ars,
                                                       int64_t acs, const float *b, int64_t ldb, float *c, int64_t ldc,
                                                       int acc)
{
    int64_t m0 = 0, k0, k1;
#define PDI_GEMM_TILE(R)                                                                                            \
    do {                                                                                                            \
        if (pdi_kspan(ks, K, m0, R, &k0, &k1))                                                                      \
            tile(R, NV, k1 - k0, a + m0 * ars + k0 * acs, ars, acs, b + k0 * ldb, ldb, c + m0 * ldc, ldc, acc);     \
        m0 += R;                                                                                                    \
    } while (0)
    while (m0 + MR <= M) PDI_GEMM_TILE(MR);
    if (8 < MR && M - m0 >= 8) PDI_GEMM_TILE(8);
    if (4 < MR && M - m0 >= 4) PDI_GEMM_TILE(4);
    if (2 < MR && M - m0 >= 2) PDI_GEMM_TILE(2);
    if (M - m0 >= 1) PDI_GEMM_TILE(1);
#undef PDI_GEMM_TILE
}

/* Columns [n0, N) of C (+)= A B element by element: the last N % VW
 * columns of a caller that did not pad N (the attention kernels pad their
 * panels, so it is never their path), so that any N is computed. */
static inline void gemm_cols_plain(int64_t M, int64_t N, int64_t n0, int64_t K, const float *a, int64_t ars,
                                   int64_t acs, const float *b, int64_t ldb, float *c, int64_t ldc, int acc)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = n0; j < N; j++) {
            float s = acc ? c[i * ldc + j] : 0.0f;
            for (int64_t k = 0; k < K; k++) s += a[i * ars + k * acs] * b[k * ldb + j];
            c[i * ldc + j] = s;
        }
}

/* C[M][N] (+)= A[M][K] B[K][N], row m of A over its k range (ks; NULL:
 * all of K); B and C row-major with leading dimensions ldb and ldc; N a
 * multiple of PDI_GEMM_VW for the kernel's speed (a rest goes through
 * gemm_cols_plain, over all of K). Column panels outside, so that a K x
 * NV-vector panel of B stays in L1 while the rows of A stream past it. */
static inline void gemm_spans(int64_t M, int64_t N, int64_t K, const struct pdi_kspans *ks, const float *a,
                              int64_t ars, int64_t acs, const float *b, int64_t ldb, float *c, int64_t ldc, int acc)
{
    for (int64_t n0 = 0; n0 < N;) {
        int64_t nv = (N - n0) / PDI_GEMM_VW;
        nv = nv < PDI_GEMM_NV ? nv : PDI_GEMM_NV;
        if (nv == 0) {
            gemm_cols_plain(M, N, n0, K, a, ars, acs, b, ldb, c, ldc, acc);
            return;
        }
        const float *bn = b + n0;
        float *cn = c + n0;
#ifdef __AVX512F__
        if (nv == 4) panel(6, 4, M, K, ks, a, ars, acs, bn, ldb, cn, ldc, acc);
        else if (nv == 3) panel(8, 3, M, K, ks, a, ars, acs, bn, ldb, cn, ldc, acc);
        else if (nv == 2) panel(12, 2, M, K, ks, a, ars, acs, bn, ldb, cn, ldc, acc);
        else panel(12, 1, M, K, ks, a, ars, acs, bn, ldb, cn, ldc, acc);
#else
        if (nv == 2) panel(6, 2, M, K, ks, a, ars, acs, bn, ldb, cn, ldc, acc);
        else panel(8, 1, M, K, ks, a, ars, acs, bn, ldb, cn, ldc, acc);
#endif
        n0 += PDI_GEMM_VW * nv;
    }
}

static inline void gemm(int64_t M, int64_t N, int64_t K, const float *a, int64_t ars, int64_t acs, const float *b,
                        int64_t ldb, float *c, int64_t ldc, int acc)
{
    gemm_spans(M, N, K, NULL, a, ars, acs, b, ldb, c, ldc, acc);
}

#endif
