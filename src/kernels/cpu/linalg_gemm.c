/* paddle.c — hand-written f32 GEMM and GEMV kernels for AVX2/FMA CPUs, used
 * by cpu/linalg.c in place of dnnl_sgemm where they measure faster (the
 * Llama training shapes: M = B*T rows, N and K of a few hundred; and
 * decode, M <= 4).
 *
 * pdi_sgemm: C[M,N] (row stride ldc, unit column stride) = op(A) op(B),
 * beta = 0, for operands given by element strides (rs, cs) of op(X), so
 * 'N' and 'T' layouts (and any other) cost nothing extra: every operand is
 * packed where that pays. BLIS structure: each thread owns a range of
 * columns; per K chunk it packs its part of B~ (16-column micro-panels,
 * zero-padded), then per block of MC rows packs A~ (6-row micro-panels;
 * rows with a unit K stride are read in place instead) and runs a 6x16
 * register-blocked micro-kernel (12 ymm accumulators; each k: two loads of
 * B~, six broadcasts of A, 12 FMAs). The B~ micro-panel (KC x 16) stays in
 * L1 while the A block streams from L2. Chunks after the first accumulate
 * into C. No barrier inside a product (see pdi_sgemm).
 *
 * pdi_sgemv: M <= 4 rows, where a GEMM's packing and oneDNN's per-call
 * set-up dominate: op(B) with unit row stride (the weight W[N, K] of a
 * linear layer, read as dot products of contiguous rows) or unit column
 * stride (B[K, N] read as rows to axpy). A is copied to a small contiguous
 * buffer first. OpenMP over N when the weight is large.
 *
 * Both return 1 when they ran, 0 when they do not apply (no AVX2/FMA at
 * compile time, or a layout they do not take), and a negative status on
 * allocation failure. Buffers are scratch of the call's allocator
 * (pdi_kscratch) and are freed before return; nothing is kept between calls.
 */
#include <string.h>
#include <omp.h>

#include "kernels/cpu/linalg_dnnl.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "kernels/cpu/transpose8.h"

#define MR 6
#define NR 16
#define KC_MAX 384
#define KC_LONG 256
#define MC 144

/* ---- packing ---------------------------------------------------------- */
/* B~ for rows k0..k0+kc of op(B), all N columns: micro-panel p holds
 * columns 16p..16p+15 as kc rows of 16 floats (zeros past N). */
static void pack_b(const float *b, int64_t rs, int64_t cs, int64_t k0, int64_t kc, int64_t n, float *dst, int64_t p0,
                   int64_t p1)
{
    /* op(B) row-major (dX = dY W): the whole panels in one pass along each
     * row of B, which the hardware prefetchers follow (a panel at a time
     * walked B down its columns, one cache miss per row: ~2% of a training
     * step) */
    int64_t pf = cs == 1 ? n / NR : p0; /* panels [p0, pf): whole, packed here */
    pf = pf < p0 ? p0 : pf > p1 ? p1 : pf;
    for (int64_t k = 0; k < kc && pf > p0; k++) {
        const float *s = b + (k0 + k) * rs;
        for (int64_t p = p0; p < pf; p++) {
            float *d = dst + p * kc * NR + k * NR;
            _mm256_store_ps(d, _mm256_loadu_ps(s + p * NR));
            _mm256_store_ps(d + 8, _mm256_loadu_ps(s + p * NR + 8));
        }
    }
    for (int64_t p = pf; p < p1; p++) {
        int64_t j0 = p * NR, w = n - j0 < NR ? n - j0 : NR;
        float *d = dst + p * kc * NR;
        const float *s = b + k0 * rs + j0 * cs;
        if (rs == 1 && w == NR) {
            /* transposed weight (x W^T): column j of op(B) is row j of W;
             * 8 x 8 blocks turned in registers */
            int64_t k = 0;
            for (; k + 8 <= kc; k += 8)
                for (int64_t h = 0; h < NR; h += 8) pdi_transpose8(s + h * cs + k, cs, d + k * NR + h, NR);
            for (; k < kc; k++)
                for (int64_t j = 0; j < NR; j++) d[k * NR + j] = s[j * cs + k];
        } else if (rs == 1) {
            /* the same, a last panel narrower than 16 */
            memset(d, 0, (size_t)(kc * NR) * sizeof(float));
            for (int64_t j = 0; j < w; j++) {
                const float *sj = s + j * cs;
                for (int64_t k = 0; k < kc; k++) d[k * NR + j] = sj[k];
            }
        } else {
            for (int64_t k = 0; k < kc; k++)
                for (int64_t j = 0; j < NR; j++) d[k * NR + j] = j < w ? s[k * rs + j * cs] : 0.0f;
        }
    }
}

/* A~ for rows i0..i0+mc of op(A), columns k0..k0+kc: micro-panel q holds
 * rows i0+6q.. as kc columns of 6 floats (zeros past the last row). */
static void pack_a(const float *a, int64_t rs, int64_t cs, int64_t i0, int64_t mc, int64_t k0, int64_t kc, float *dst)
{
    for (int64_t q = 0; q * MR < mc; q++) {
        int64_t r0 = i0 + q * MR, h = mc - q * MR < MR ? mc - q * MR : MR;
        float *d = dst + q * kc * MR;
        const float *s = a + r0 * rs + k0 * cs;
        if (cs == 1) {
            for (int64_t r = 0; r < MR; r++) {
                if (r < h) {
                    const float *sr = s + r * rs;
                    for (int64_t k = 0; k < kc; k++) d[k * MR + r] = sr[k];
                } else {
                    for (int64_t k = 0; k < kc; k++) d[k * MR + r] = 0.0f;
                }
            }
        } else if (h == MR && rs == 1) {
            /* dW's A = dY^T: six contiguous floats per k */
            for (int64_t k = 0; k < kc; k++) memcpy(d + k * MR, s + k * cs, MR * sizeof(float));
        } else {
            for (int64_t k = 0; k < kc; k++)
                for (int64_t r = 0; r < MR; r++) d[k * MR + r] = r < h ? s[k * cs + r * rs] : 0.0f;
        }
    }
}

/* ---- micro-kernel ----------------------------------------------------- */
/* c[6 x 16] (row stride ldc) = (acc ? c : 0) + a b~ over kc, where a's
 * element (r, k) is a[r*ar + k*ak]: a packed A~ panel (ar 1, ak 6) or six
 * rows of A in place (ar = row stride, ak 1). Always inlined, so each call
 * site compiles with its strides folded. */
static inline __attribute__((always_inline)) void ukr_s(int64_t kc, const float *restrict a, int64_t ar, int64_t ak,
                                                        const float *restrict b, float *c, int64_t ldc, int acc)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    /* the C tile is read (a later K chunk) or written only after the k loop:
     * asking for its lines now hides their miss behind the loop (C of the
     * Llama's products is 1-3 MB, out of L2; about 2% of the GEMM time) */
    for (int r = 0; r < MR; r++) {
        __builtin_prefetch(c + r * ldc, 1, 3);
        __builtin_prefetch(c + r * ldc + NR - 1, 1, 3);
    }
    for (int64_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), x;
        _mm_prefetch((const char *)(b + 128), _MM_HINT_T0);
        x = _mm256_broadcast_ss(a + 0 * ar); c00 = _mm256_fmadd_ps(x, b0, c00); c01 = _mm256_fmadd_ps(x, b1, c01);
        x = _mm256_broadcast_ss(a + 1 * ar); c10 = _mm256_fmadd_ps(x, b0, c10); c11 = _mm256_fmadd_ps(x, b1, c11);
        x = _mm256_broadcast_ss(a + 2 * ar); c20 = _mm256_fmadd_ps(x, b0, c20); c21 = _mm256_fmadd_ps(x, b1, c21);
        x = _mm256_broadcast_ss(a + 3 * ar); c30 = _mm256_fmadd_ps(x, b0, c30); c31 = _mm256_fmadd_ps(x, b1, c31);
        x = _mm256_broadcast_ss(a + 4 * ar); c40 = _mm256_fmadd_ps(x, b0, c40); c41 = _mm256_fmadd_ps(x, b1, c41);
        x = _mm256_broadcast_ss(a + 5 * ar); c50 = _mm256_fmadd_ps(x, b0, c50); c51 = _mm256_fmadd_ps(x, b1, c51);
        a += ak;
        b += NR;
    }
#define PD_UKR_ROW(r, lo, hi)                                                                                        \
    do {                                                                                                             \
        float *cr = c + (r) * ldc;                                                                                   \
        if (acc) {                                                                                                   \
            lo = _mm256_add_ps(lo, _mm256_loadu_ps(cr));                                                             \
            hi = _mm256_add_ps(hi, _mm256_loadu_ps(cr + 8));                                                         \
        }                                                                                                            \
        _mm256_storeu_ps(cr, lo);                                                                                    \
        _mm256_storeu_ps(cr + 8, hi);                                                                                \
    } while (0)
    PD_UKR_ROW(0, c00, c01);
    PD_UKR_ROW(1, c10, c11);
    PD_UKR_ROW(2, c20, c21);
    PD_UKR_ROW(3, c30, c31);
    PD_UKR_ROW(4, c40, c41);
    PD_UKR_ROW(5, c50, c51);
#undef PD_UKR_ROW
}

static void ukr(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int acc)
{
    ukr_s(kc, a, 1, MR, b, c, ldc, acc);
}

static void ukr_rows(int64_t kc, const float *a, int64_t lda, const float *b, float *c, int64_t ldc, int acc)
{
    ukr_s(kc, a, lda, 1, b, c, ldc, acc);
}

/* One task: rows i0..i0+mc of C, micro-panels p0..p1 of B~ (chunk k0, kc). */
static void gemm_block(const float *a, int64_t ars, int64_t acs, const float *bp, float *ap, float *c, int64_t ldc,
                       int64_t m, int64_t n, int64_t i0, int64_t mc, int64_t k0, int64_t kc, int64_t p0, int64_t p1,
                       int acc)
{
    (void)m;
    /* rows of A with unit stride along K (x in the forward, dY in dX) are
     * read in place, six row streams at a time: packing them would cost
     * ~5% here; only a last partial panel is packed (zero rows) */
    int direct = acs == 1;
    int64_t full = mc / MR * MR;
    if (!direct)
        pack_a(a, ars, acs, i0, mc, k0, kc, ap);
    else if (full < mc)
        pack_a(a, ars, acs, i0 + full, mc - full, k0, kc, ap + full / MR * kc * MR);
    float edge[MR * NR];
    for (int64_t p = p0; p < p1; p++) {
        int64_t j0 = p * NR, w = n - j0 < NR ? n - j0 : NR;
        const float *bq = bp + p * kc * NR;
        for (int64_t q = 0; q * MR < mc; q++) {
            int64_t r0 = i0 + q * MR, h = mc - q * MR < MR ? mc - q * MR : MR;
            float *cq = c + r0 * ldc + j0;
            if (direct && h == MR) {
                const float *aq = a + r0 * ars + k0;
                if (w == NR) {
                    ukr_rows(kc, aq, ars, bq, cq, ldc, acc);
                    continue;
                }
                ukr_rows(kc, aq, ars, bq, edge, NR, 0);
                for (int64_t r = 0; r < h; r++)
                    for (int64_t j = 0; j < w; j++) cq[r * ldc + j] = (acc ? cq[r * ldc + j] : 0.0f) + edge[r * NR + j];
                continue;
            }
            if (h == MR && w == NR) {
                ukr(kc, ap + q * kc * MR, bq, cq, ldc, acc);
                continue;
            }
            /* edge tile: compute the full 6x16 aside, write the valid part */
            ukr(kc, ap + q * kc * MR, bq, edge, NR, 0);
            for (int64_t r = 0; r < h; r++)
                for (int64_t j = 0; j < w; j++) cq[r * ldc + j] = (acc ? cq[r * ldc + j] : 0.0f) + edge[r * NR + j];
        }
    }
}

int pdi_sgemm(const struct pdi_kcall *kc, int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs,
              const float *b, int64_t brs, int64_t bcs, float *c, int64_t ldc, int nt)
{
    if (m <= 0 || n <= 0) return 1;
    if (k <= 0) {
        for (int64_t i = 0; i < m; i++) memset(c + i * ldc, 0, (size_t)n * sizeof(float));
        return 1;
    }
    /* K up to KC_MAX in one chunk (no second pass over C); longer K (dW:
     * K = B*T) in equal chunks of at most KC_LONG, so a B~ micro-panel
     * (kc x 16 floats) and an A~ one stay in L1 together */
    int64_t nkc = k <= KC_MAX ? 1 : (k + KC_LONG - 1) / KC_LONG, kcw = (k + nkc - 1) / nkc;
    int64_t np = (n + NR - 1) / NR;
    if ((double)m * n * k < 2e6) nt = 1;
    /* Threads split the columns (micro-panels of B~) statically; each
     * packs its own part of B~ and runs all row blocks and K chunks over
     * it, so there is no barrier inside the product: on a shared machine a
     * barrier waits for a preempted thread (measured: whole scheduler
     * ticks). A~ is packed per thread (or read in place). */
    if (nt > np) nt = (int)np;
    int64_t per = (np + nt - 1) / nt;
    size_t bbytes = (size_t)(per * NR * kcw) * sizeof(float), abytes = (size_t)((MC + MR) * kcw) * sizeof(float);
    /* each thread's part starts on a cache line: the micro-kernels use
     * aligned loads on both packed panels (600 * kcw bytes of A~ is a
     * multiple of 32 only when kcw is one of 4) */
    abytes = (abytes + 63) & ~(size_t)63;
    size_t tbytes = bbytes + abytes, all = tbytes * (size_t)nt;
    char *pool = pdi_kscratch(kc, all);
    if (!pool) return pdi_errorf(PD_ERR_NOMEM, "out of memory (%zu bytes for GEMM packing)", all);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = nt > 1 ? omp_get_thread_num() : 0;
        int64_t p0 = t * per, p1 = p0 + per < np ? p0 + per : np;
        float *bp = (float *)(pool + tbytes * (size_t)t), *ap = (float *)(pool + tbytes * (size_t)t + bbytes);
        for (int64_t k0 = 0; k0 < k && p0 < p1; k0 += kcw) {
            int64_t kc = k - k0 < kcw ? k - k0 : kcw;
            /* B~ panels p0..p1 at bp[(p - p0) * kc * NR] */
            pack_b(b + p0 * NR * bcs, brs, bcs, k0, kc, n - p0 * NR, bp, 0, p1 - p0);
            for (int64_t i0 = 0; i0 < m; i0 += MC) {
                int64_t mc = m - i0 < MC ? m - i0 : MC;
                gemm_block(a, ars, acs, bp, ap, c + p0 * NR, ldc, m, n - p0 * NR, i0, mc, k0, kc, 0, p1 - p0, k0 > 0);
            }
        }
    }
    pdi_kscratch_free(kc, pool, all);
    return 1;
}

/* ---- GEMV (M <= 4) ---------------------------------------------------- */
static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* y[i, j] = x[i, :] . w[j, :] for rows j0..j1 of w (row stride ldw). */
static void gemv_dot(int64_t m, int64_t k, const float *x, const float *w, int64_t ldw, float *y, int64_t ldy,
                     int64_t j0, int64_t j1)
{
    int64_t j = j0;
    if (m == 1) {
        /* decode: eight rows of w per pass share each load of x (9 loads
         * per 8 FMAs instead of 5 per 4) */
        for (; j + 8 <= j1; j += 8) {
            const float *wr = w + j * ldw;
            __m256 s[8];
            for (int r = 0; r < 8; r++) s[r] = _mm256_setzero_ps();
            int64_t q = 0;
            for (; q + 8 <= k; q += 8) {
                __m256 xv = _mm256_loadu_ps(x + q);
                for (int r = 0; r < 8; r++) s[r] = _mm256_fmadd_ps(xv, _mm256_loadu_ps(wr + r * ldw + q), s[r]);
            }
            /* transpose-reduce: lane r of the result is hsum(s[r]) */
            __m256 t0 = _mm256_hadd_ps(s[0], s[1]), t1 = _mm256_hadd_ps(s[2], s[3]);
            __m256 t2 = _mm256_hadd_ps(s[4], s[5]), t3 = _mm256_hadd_ps(s[6], s[7]);
            __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
            __m256 v = _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
            float r8[8];
            _mm256_storeu_ps(r8, v);
            for (; q < k; q++)
                for (int r = 0; r < 8; r++) r8[r] += x[q] * wr[r * ldw + q];
            memcpy(y + j, r8, sizeof r8);
        }
    }
    for (; j + 4 <= j1; j += 4) {
        const float *w0 = w + j * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
        for (int64_t i = 0; i < m; i++) {
            const float *xi = x + i * k;
            __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
            int64_t q = 0;
            for (; q + 8 <= k; q += 8) {
                __m256 xv = _mm256_loadu_ps(xi + q);
                s0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w0 + q), s0);
                s1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w1 + q), s1);
                s2 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w2 + q), s2);
                s3 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(w3 + q), s3);
            }
            float r0 = hsum(s0), r1 = hsum(s1), r2 = hsum(s2), r3 = hsum(s3);
            for (; q < k; q++) {
                r0 += xi[q] * w0[q];
                r1 += xi[q] * w1[q];
                r2 += xi[q] * w2[q];
                r3 += xi[q] * w3[q];
            }
            float *yi = y + i * ldy + j;
            yi[0] = r0;
            yi[1] = r1;
            yi[2] = r2;
            yi[3] = r3;
        }
    }
    for (; j < j1; j++) {
        const float *wj = w + j * ldw;
        for (int64_t i = 0; i < m; i++) {
            const float *xi = x + i * k;
            __m256 s = _mm256_setzero_ps();
            int64_t q = 0;
            for (; q + 8 <= k; q += 8) s = _mm256_fmadd_ps(_mm256_loadu_ps(xi + q), _mm256_loadu_ps(wj + q), s);
            float r = hsum(s);
            for (; q < k; q++) r += xi[q] * wj[q];
            y[i * ldy + j] = r;
        }
    }
}

/* y[i, j0:j1] = sum_q x[i, q] b[q, j0:j1] (b row stride ldb, unit columns);
 * columns in blocks of 32 held in registers across the whole K loop. */
static void gemv_axpy(int64_t m, int64_t k, const float *x, const float *b, int64_t ldb, float *y, int64_t ldy,
                      int64_t j0, int64_t j1)
{
    for (int64_t i = 0; i < m; i++) {
        const float *xi = x + i * k;
        float *yi = y + i * ldy;
        int64_t j = j0;
        for (; j + 32 <= j1; j += 32) {
            __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
            const float *bj = b + j;
            for (int64_t q = 0; q < k; q++) {
                __m256 xv = _mm256_broadcast_ss(xi + q);
                const float *bq = bj + q * ldb;
                s0 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(bq), s0);
                s1 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(bq + 8), s1);
                s2 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(bq + 16), s2);
                s3 = _mm256_fmadd_ps(xv, _mm256_loadu_ps(bq + 24), s3);
            }
            _mm256_storeu_ps(yi + j, s0);
            _mm256_storeu_ps(yi + j + 8, s1);
            _mm256_storeu_ps(yi + j + 16, s2);
            _mm256_storeu_ps(yi + j + 24, s3);
        }
        for (; j < j1; j++) {
            float r = 0;
            for (int64_t q = 0; q < k; q++) r += xi[q] * b[q * ldb + j];
            yi[j] = r;
        }
    }
}

int pdi_sgemv(const struct pdi_kcall *kc, int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs,
              const float *b, int64_t brs, int64_t bcs, float *c, int64_t ldc, int nt)
{
    if (m < 1 || m > PDI_GEMV_MAX_M || n <= 0 || k <= 0) return 0;
    int dot = brs == 1 || k == 1; /* op(B) columns are rows of W[N, K] */
    int axpy = bcs == 1 || n == 1;
    if (!dot && !axpy) return 0;
    /* x: op(A) as m contiguous rows of k */
    float xs[PDI_GEMV_MAX_M * 1024], *x = xs;
    size_t xbytes = (size_t)(m * k) * sizeof(float);
    if (m * k > (int64_t)(sizeof xs / sizeof xs[0]) && !(x = pdi_kscratch(kc, xbytes)))
        return pdi_errorf(PD_ERR_NOMEM, "out of memory (GEMV operand)");
    for (int64_t i = 0; i < m; i++)
        for (int64_t q = 0; q < k; q++) x[i * k + q] = a[i * ars + q * acs];
    /* one core streams a weight of a few MB from L2/L3 about as fast as
     * two (measured: waking a second thread costs more below that) */
    if ((double)n * k < 4194304.0) nt = 1;
    /* blocks of 32 outputs (a multiple of both kernels' widths) */
    int64_t nblk = (n + 31) / 32;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int64_t t = 0; t < nblk; t++) {
        int64_t j0 = t * 32, j1 = j0 + 32 < n ? j0 + 32 : n;
        if (dot)
            gemv_dot(m, k, x, b, bcs, c, ldc, j0, j1);
        else
            gemv_axpy(m, k, x, b, brs, c, ldc, j0, j1);
    }
    if (x != xs) pdi_kscratch_free(kc, x, xbytes);
    return 1;
}

#else /* no AVX2/FMA at compile time: cpu/linalg.c keeps dnnl_sgemm */

int pdi_sgemm(const struct pdi_kcall *kc, int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs,
              const float *b, int64_t brs, int64_t bcs, float *c, int64_t ldc, int nt)
{
    (void)kc, (void)m, (void)n, (void)k, (void)a, (void)ars, (void)acs, (void)b, (void)brs, (void)bcs, (void)c;
    (void)ldc, (void)nt;
    return 0;
}

int pdi_sgemv(const struct pdi_kcall *kc, int64_t m, int64_t n, int64_t k, const float *a, int64_t ars, int64_t acs,
              const float *b, int64_t brs, int64_t bcs, float *c, int64_t ldc, int nt)
{
    return pdi_sgemm(kc, m, n, k, a, ars, acs, b, brs, bcs, c, ldc, nt);
}
#endif
