/* paddle.c — the register-tiled f32 matrix kernel shared by the CPU
 * attention kernels (llm.c: sdpa; flashmask.c), with the f32 panel
 * conversions they pack their operands with.
 *
 * One kernel for every product: C[M][N] (+)= A[M][K] B[K][N] with A read
 * through (row, column) element strides, so that a transposed operand
 * needs no copy, and B a row-major panel whose N is a multiple of 8
 * (callers pad their panels with zeros). GCC vector extensions: 8-wide
 * vectors compile to AVX2/FMA here and to plain code elsewhere.
 * Header-only (static inline) so that each kernel file inlines it.
 */
#ifndef PD_KERNELS_CPU_TILE_GEMM_H
#define PD_KERNELS_CPU_TILE_GEMM_H

#include <stdint.h>
#include <string.h>

#include "core/internal.h"

typedef float v8 __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
static inline v8 ld8(const float *p)
{
    v8 v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void st8(float *p, v8 v) { memcpy(p, &v, sizeof v); }
static inline v8 bc8(float x) { return (v8){x, x, x, x, x, x, x, x}; }
static inline int64_t round8(int64_t n) { return (n + 7) & ~(int64_t)7; }
/* Leading dimension of a panel of rows of n floats (n a multiple of 8):
 * a row stride that is a multiple of 128 bytes maps the rows of a K x 16
 * panel onto a few L1 sets (1 KiB strides: 4 of 64), and the gemm below
 * thrashes on conflict misses; 8 floats more spread them. */
static inline int64_t pad_ld(int64_t n) { return n > 0 && n % 32 == 0 ? n + 8 : n; }

/* ---- conversion to and from f32 panels ------------------------------- */
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
        if (stride == 1) memcpy(dst, f, sizeof *dst * (size_t)n);
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
        if (stride == 1) memcpy(p, src, sizeof *src * (size_t)n);
        else for (int64_t i = 0; i < n; i++) ((float *)p)[i * stride] = src[i];
        break;
    case PD_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i * stride] = pdi_f32_bf16(src[i]); break;
    case PD_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i * stride] = pd_f32_to_f16(src[i]); break;
    case PD_F64: for (int64_t i = 0; i < n; i++) ((double *)p)[i * stride] = src[i]; break;
    default: break;
    }
}

/* ---- the one matrix kernel ------------------------------------------- */
/* Rows per register tile: with AVX-512VL's 32 vector registers 8 x 24
 * tiles (24 accumulators, 3 B vectors, 1 broadcast) load 11 vectors per 24
 * FMAs and reach about the FMA peak (Zen 4, one core: 105-113 GFLOP/s on
 * 64 x 64 x 64 against 65-78 for 4 x 24); 16 registers fit 4 x 24. Every
 * element's sum runs over k in the same order either way: same bits. */
#ifdef __AVX512VL__
#define PDI_GEMM_MR 8
#else
#define PDI_GEMM_MR 4
#endif

/* C[MR][8 NV] (+)= A[MR][K] B[K][8 NV] with A(m, k) = a[m ars + k acs]. */
static inline __attribute__((always_inline)) void tile(int MR, int NV, int64_t K, const float *a, int64_t ars,
                                                      int64_t acs, const float *b, int64_t ldb, float *c,
                                                      int64_t ldc, int acc)
{
    v8 r[PDI_GEMM_MR][3];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NV; j++) r[i][j] = acc ? ld8(c + i * ldc + 8 * j) : bc8(0.0f);
    for (int64_t k = 0; k < K; k++) {
        v8 bv[3];
        for (int j = 0; j < NV; j++) bv[j] = ld8(b + k * ldb + 8 * j);
        for (int i = 0; i < MR; i++) {
            v8 av = bc8(a[i * ars + k * acs]);
            for (int j = 0; j < NV; j++) r[i][j] += av * bv[j];
        }
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NV; j++) st8(c + i * ldc + 8 * j, r[i][j]);
}

/* C[M][N] (+)= A[M][K] B[K][N]; N a multiple of 8, B and C row-major with
 * leading dimensions ldb and ldc. Column panels outside, so that a K x 24
 * panel of B stays in L1 while the rows of A stream past it; MR x 24 tiles
 * keep 12 (or 24) accumulators in flight (FMA latency 4 x 2 ports needs
 * 8+) and use all the vector registers. */
static inline void gemm(int64_t M, int64_t N, int64_t K, const float *a, int64_t ars, int64_t acs, const float *b,
                 int64_t ldb, float *c, int64_t ldc, int acc)
{
    for (int64_t n0 = 0; n0 < N;) {
        int nv = N - n0 >= 24 ? 3 : (int)((N - n0) / 8);
        for (int64_t m0 = 0; m0 < M; m0 += PDI_GEMM_MR) {
            const float *am = a + m0 * ars, *bn = b + n0;
            float *cm = c + m0 * ldc + n0;
            int64_t mr = M - m0 < PDI_GEMM_MR ? M - m0 : PDI_GEMM_MR;
#define TILE(MR)                                                                        \
    case MR:                                                                            \
        if (nv == 3) tile(MR, 3, K, am, ars, acs, bn, ldb, cm, ldc, acc);              \
        else if (nv == 2) tile(MR, 2, K, am, ars, acs, bn, ldb, cm, ldc, acc);         \
        else tile(MR, 1, K, am, ars, acs, bn, ldb, cm, ldc, acc);                      \
        break;
            switch (mr) {
#if PDI_GEMM_MR == 8
                TILE(8)
                TILE(7)
                TILE(6)
                TILE(5)
#endif
                TILE(4)
                TILE(3)
                TILE(2)
                TILE(1)
            }
#undef TILE
        }
        n0 += 8 * nv;
    }
}

#endif
