/* paddle.c — an 8 x 8 f32 block transposed in AVX registers, shared by the
 * packing loops of the GEMM (linalg_gemm.c: a transposed weight into B~
 * panels) and of FlashMask (flashmask.c: K and V tiles into K^T, V^T
 * panels), where an element-by-element transpose cost about half of the
 * packing. Only with AVX2; callers keep a scalar loop for the rest. */
#ifndef PD_KERNELS_CPU_TRANSPOSE8_H
#define PD_KERNELS_CPU_TRANSPOSE8_H

#ifdef __AVX2__
#include <immintrin.h>
#include <stdint.h>

/* dst[c][r] = src[r][c] for r, c < 8 (src rows ls floats apart, dst rows
 * ld floats apart; no alignment needed). */
static inline void pdi_transpose8(const float *src, int64_t ls, float *dst, int64_t ld)
{
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ls), r2 = _mm256_loadu_ps(src + 2 * ls);
    __m256 r3 = _mm256_loadu_ps(src + 3 * ls), r4 = _mm256_loadu_ps(src + 4 * ls), r5 = _mm256_loadu_ps(src + 5 * ls);
    __m256 r6 = _mm256_loadu_ps(src + 6 * ls), r7 = _mm256_loadu_ps(src + 7 * ls);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + ld, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * ld, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * ld, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * ld, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * ld, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * ld, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * ld, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

#endif
