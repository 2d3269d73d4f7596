/* paddle.c — CPU kernels of FlashMask attention (flashmask and
 * flashmask_backward for f32, bf16 and f16, computed in f32; f64 runs the
 * reference kernels), the tile counters of include/pd/flashmask.h and the
 * block-mask variant of kernels/cpu/flashmask.h.
 *
 * The mask. Every mode is normalised once per call to two masked row
 * intervals per key column, LT = [LTS, LTE) and UT = [UTS, UTE): causal is
 * the interval [0, j - (Sk - Sq)) of column j (bottom-right aligned), which
 * fits in the UT slot because causal modes have no UT indices. Per (batch,
 * mask head, key tile) the min/max of the four vectors classify a
 * (query tile, key tile) pair in O(1) when they can: skipped (every element
 * masked), full (none) or uncertain; uncertain pairs are resolved exactly by
 * one pass over the tile's columns (O(cols), against O(rows cols D) for the
 * tile's products), so the counts equal those of the dense mask. Partial
 * tiles write -inf column by column over the masked row runs.
 *
 * Forward: flash attention over tiles of BR x BC (query x key positions)
 * with a running max m, sum l and accumulator O per row; one work unit per
 * (batch, query head, query tile), dynamic schedule (causal tiles are
 * uneven). K^T and V tiles are packed once per call into f32 panels shared
 * by every unit (O(Sk) memory, like the inputs): no Sq x Sk buffer exists
 * anywhere. Skipped tiles are never loaded or multiplied; with tile
 * skipping off they run as partial ones and give the same bits, because an
 * all -inf tile leaves m unchanged (no rescale), adds exact zeros to l and
 * O, and a row whose m is still -inf takes no exp at all.
 *
 * Backward (deterministic on any thread count): D_i = rowsum(dO * O); one
 * unit per (batch, kv head, chunk of key tiles) owns dK/dV of its tiles
 * (summed over the kv head's query group) and a dQ partial for its chunk;
 * the chunk count depends on the shapes only, and the partials are summed
 * in chunk order afterwards. P is recomputed from the saved log-sum-exp.
 *
 * Tile counts are per (batch, query head, query tile, key tile) of the
 * forward (pd_flashmask_last_tiles: thread-local); with skipping off every
 * tile counts as partial. The backward classifies the same pairs.
 *
 * Dropout keeps weight (b, h, i, j) iff the Philox word at counter
 * off + ((b Hq + h) Sq + i) Sk + j is >= p 2^32 (the reference rule); kept
 * weights are scaled by 1/(1-p); the log-sum-exp is the undropped one.
 *
 * Products: the register-tiled gemm of tile_gemm.h (16-wide with
 * AVX-512): panels and rows of S are padded to its vector (round_vw, LDS),
 * and the row helpers (max, exp, scale) sweep the same vectors. Ownership: every
 * buffer is allocated and freed inside a call, from the call's allocator
 * (pdi_kscratch: counted in the memory stats, and with the caching
 * allocator their pages reused from call to call); outputs are the dispatcher's tensors (written through their
 * strides).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernel.h"
#include "kernels/cpu/flashmask.h"
#include "kernels/cpu/tile_gemm.h"
#include "kernels/cpu/transpose8.h"
#include "kernels/cpu/unary_math.h"
#include "kernels/flashmask_rules.h"
#include "pd/flashmask.h"

/* Tile of BR query rows x BC keys: 64 x 64 keeps S, P and dP of a tile
 * (16-20 KiB each) and a K^T panel in L1/L2 while giving the gemm about 10
 * row tiles to amortise each panel load; BC is one panel of the AVX-512
 * kernel (4 vectors of 16). LDS pads the rows of 64 floats by one vector
 * (pad_ld: 80 with AVX-512, 72 with AVX2). */
#define BR 64
#define BC 64
#define LDS (BC + PDI_GEMM_VW)

enum { T_SKIP = 0, T_PART = 1, T_FULL = 2 };

static atomic_int tile_skipping = 1;
static PDI_TLS struct pd_flashmask_tiles last_tiles;

/* ---- the normalised mask ---------------------------------------------- */
struct fm_mask {
    int64_t Bm, Hm, Sq, Sk, nkt; /* Bm = 1 when the mask has no batch (no indices) */
    int32_t *col;                /* [Bm][Hm][Sk][4]: LTS, LTE, UTS, UTE */
    int32_t *mm;                 /* [Bm][Hm][nkt][8]: min, max of each of the four */
    size_t col_bytes, mm_bytes;
    const struct pdi_kcall *kc;  /* whose allocator holds col and mm (NULL: the default) */
};

static void mask_free(struct fm_mask *m)
{
    pdi_kscratch_free(m->kc, m->col, m->col_bytes);
    pdi_kscratch_free(m->kc, m->mm, m->mm_bytes);
}

/* idx: NULL or int32 [B, Hm, Sk, C] (validated by the caller). */
static int mask_build(struct fm_mask *m, const struct pdi_kcall *kc, const struct pd_kview *idx, int causal, int64_t B,
                      int64_t Sq, int64_t Sk)
{
    m->kc = kc;
    m->Bm = idx ? B : 1;
    m->Hm = idx ? idx->shape[1] : 1;
    m->Sq = Sq, m->Sk = Sk, m->nkt = (Sk + BC - 1) / BC;
    int64_t nbh = m->Bm * m->Hm;
    m->col_bytes = sizeof *m->col * (size_t)(nbh * Sk * 4 + 1);
    m->mm_bytes = sizeof *m->mm * (size_t)(nbh * m->nkt * 8 + 1);
    m->col = pdi_kscratch(kc, m->col_bytes);
    m->mm = pdi_kscratch(kc, m->mm_bytes);
    if (!m->col || !m->mm) {
        mask_free(m);
        return pdi_errorf(PD_ERR_NOMEM, "flashmask: out of memory for the mask of %lld keys", (long long)Sk);
    }
    int64_t C = idx ? idx->shape[3] : 0;
    for (int64_t bh = 0; bh < nbh; bh++)
        for (int64_t j = 0; j < Sk; j++) {
            int32_t x[4] = {0, 0, 0, 0}, *c = m->col + (bh * Sk + j) * 4;
            if (idx) {
                const int32_t *p = (const int32_t *)idx->data + (bh / m->Hm) * idx->strides[0] +
                                   (bh % m->Hm) * idx->strides[1] + j * idx->strides[2];
                for (int64_t t = 0; t < C; t++) x[t] = p[t * idx->strides[3]];
            }
            int64_t cb = j - (Sk - Sq); /* causal: rows [0, cb) masked */
            int32_t ute_causal = (int32_t)(cb < 0 ? 0 : cb > Sq ? Sq : cb);
            c[0] = idx ? x[0] : (int32_t)Sq;
            c[1] = idx && (C == 4 || (causal && C == 2)) ? x[1] : (int32_t)Sq;
            c[2] = idx && C == 4 ? x[2] : 0;
            c[3] = causal ? ute_causal : idx && C == 4 ? x[3] : idx ? x[1] : 0;
        }
    for (int64_t bh = 0; bh < nbh; bh++)
        for (int64_t t = 0; t < m->nkt; t++) {
            int32_t *mm = m->mm + (bh * m->nkt + t) * 8;
            for (int v = 0; v < 4; v++) mm[2 * v] = INT32_MAX, mm[2 * v + 1] = INT32_MIN;
            for (int64_t j = t * BC; j < Sk && j < (t + 1) * BC; j++)
                for (int v = 0; v < 4; v++) {
                    int32_t x = m->col[(bh * Sk + j) * 4 + v];
                    mm[2 * v] = x < mm[2 * v] ? x : mm[2 * v];
                    mm[2 * v + 1] = x > mm[2 * v + 1] ? x : mm[2 * v + 1];
                }
        }
    return PD_OK;
}

/* Exact class of rows [r0, r1) x the nc columns at col (r0 < r1, nc >= 1):
 * a column is covered when one interval, or the two chained, span the rows. */
static int classify_exact(const int32_t *col, int64_t r0, int64_t r1, int64_t nc)
{
    int any = 0, all = 1;
    for (int64_t y = 0; y < nc; y++) {
        const int32_t *c = col + 4 * y;
        int64_t a0 = c[0] > r0 ? c[0] : r0, a1 = c[1] < r1 ? c[1] : r1;
        int64_t b0 = c[2] > r0 ? c[2] : r0, b1 = c[3] < r1 ? c[3] : r1;
        int ha = a0 < a1, hb = b0 < b1;
        any |= ha | hb;
        int cov = (ha && a0 == r0 && a1 == r1) || (hb && b0 == r0 && b1 == r1) ||
                  (ha && hb && ((a0 == r0 && b0 <= a1 && b1 == r1) || (b0 == r0 && a0 <= b1 && a1 == r1)));
        all &= cov;
    }
    return all ? T_SKIP : any ? T_PART : T_FULL;
}

/* Class of query rows [r0, r1) x key tile kt of mask (bm, hm): min/max
 * first, the column pass only when they cannot decide. */
static int classify(const struct fm_mask *m, int64_t bm, int64_t hm, int64_t r0, int64_t r1, int64_t kt)
{
    int64_t bh = bm * m->Hm + hm;
    const int32_t *mm = m->mm + (bh * m->nkt + kt) * 8;
    if ((r0 >= mm[1] && r1 <= mm[2]) || (r0 >= mm[5] && r1 <= mm[6])) return T_SKIP;
    if ((r1 <= mm[0] || r0 >= mm[3]) && (r1 <= mm[4] || r0 >= mm[7])) return T_FULL;
    int64_t c0 = kt * BC, nc = m->Sk - c0 < BC ? m->Sk - c0 : BC;
    return classify_exact(m->col + (bh * m->Sk + c0) * 4, r0, r1, nc);
}

/* -inf over the masked runs of each column (S row-major, leading dim LDS). */
static void mask_cols(const int32_t *col, int64_t r0, int64_t r1, int64_t nc, float *S)
{
    for (int64_t y = 0; y < nc; y++) {
        const int32_t *c = col + 4 * y;
        for (int t = 0; t < 4; t += 2) {
            int64_t a = c[t] > r0 ? c[t] : r0, e = c[t + 1] < r1 ? c[t + 1] : r1;
            for (int64_t i = a; i < e; i++) S[(i - r0) * LDS + y] = -INFINITY;
        }
    }
}

/* ---- one call's geometry ----------------------------------------------- */
struct fm {
    int64_t B, Sq, Sk, Hq, Hk, G, D, Dv, Dp, Dvp, nqt, nkt, nch;
    float scale;
    const struct fm_mask *mask;        /* FlashMask indices, or */
    const struct pdi_block_mask *blk;  /* a block mask */
    int skipping;
    /* dropout */
    int drop;
    uint64_t seed, off, thr;
    float keep;
    /* operands */
    struct pd_kview q, k, v, o, lse, dout, dq, dk, dv;
    /* packed panels: forward K^T [B][Hk][nkt][D][LDS] and V [..][BC][Dvp];
     * backward scaled Q [B][Hq][Sq][Dp], dO [..][Dvp], D_i and the lse with
     * -inf replaced by +inf [B][Hq][Sq], dQ partials [nch][B][Hq][Sq][Dp] */
    float *Ktp, *Vrp, *Qp, *dOp, *Drow, *lsep, *dQp;
    const struct pdi_kcall *kc; /* scratch comes from its allocator (NULL: the default) */
};

static inline char *row_ptr(const struct pd_kview *t, int64_t b, int64_t i, int64_t h)
{
    return t->data + (b * t->strides[0] + i * t->strides[1] + h * t->strides[2]) * (int64_t)pd_dtype_size(t->dtype);
}

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Rows of a [B, S, H, D] tensor sit H·D elements apart, and walking one
 * head's rows in turn stalls on a cache miss per row: the hardware
 * prefetchers do not follow it. Loops that copy such rows ask for row
 * i + FM_PREFETCH_AHEAD (for writing when `write`) while they copy row i. */
#define FM_PREFETCH_AHEAD 6
static inline void prefetch_row(const struct pd_kview *t, int64_t b, int64_t i, int64_t h, int64_t n, int write)
{
    if (i >= t->shape[1] || t->strides[3] != 1) return;
    const char *p = row_ptr(t, b, i, h);
    int64_t bytes = n * (int64_t)pd_dtype_size(t->dtype);
    for (int64_t o = 0; o < bytes; o += 64) {
        if (write) __builtin_prefetch(p + o, 1);
        else __builtin_prefetch(p + o, 0);
    }
}

/* Class of (b, query head h, query tile qt, key tile kt). */
static int tile_class(const struct fm *g, int64_t b, int64_t h, int64_t qt, int64_t kt)
{
    int64_t r0 = qt * BR, r1 = min64(r0 + BR, g->Sq);
    if (g->blk) {
        const struct pdi_block_mask *bm = g->blk;
        int64_t bb = bm->B == 1 ? 0 : b, hh = bm->H == 1 ? 0 : h;
        return bm->cls[((bb * bm->H + hh) * bm->nq + qt) * bm->nk + kt];
    }
    const struct fm_mask *m = g->mask;
    return classify(m, m->Bm == 1 ? 0 : b, m->Hm == 1 ? 0 : h / g->G, r0, r1, kt);
}

/* The element masks of a partial tile (rows r0.., nr x nc at S). */
static void tile_mask(const struct fm *g, int64_t b, int64_t h, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                      float *S)
{
    if (g->blk) {
        const struct pdi_block_mask *bm = g->blk;
        int64_t bb = bm->B == 1 ? 0 : b, hh = bm->H == 1 ? 0 : h;
        for (int64_t x = 0; x < nr; x++)
            for (int64_t y = 0; y < nc; y++)
                if (!bm->mask_mod(bm->ctx, bb, hh, r0 + x, c0 + y)) S[x * LDS + y] = -INFINITY;
        return;
    }
    const struct fm_mask *m = g->mask;
    int64_t bh = (m->Bm == 1 ? 0 : b) * m->Hm + (m->Hm == 1 ? 0 : h / g->G);
    mask_cols(m->col + (bh * m->Sk + c0) * 4, r0, r0 + nr, nc, S);
}

/* Sub-blocks of a partial tile. A partial tile of a causal mask (the
 * diagonal) is half masked, and its products cost as much as a full
 * tile's: its SB x SB sub-blocks are classified too, and the products skip
 * the ones masked everywhere. S and dP are computed per column group over
 * the rows from its first to its last live sub-block; the products that
 * sum over the tile's columns (P V, dS K) give each row tile of the kernel
 * the span of columns of its rows' groups, and those that sum over its
 * rows (P^T dO, dS^T Q) each column tile the span of rows of its columns'
 * groups. An element left out of S or dP is masked: S there is -inf after
 * tile_mask as before, P is an exact zero, and so is dS (taken as zero
 * wherever P is); the sums skip exact zeros only, in the same order: the
 * same bits, up to the sign of an exact zero (x + 0 = x; dQ, dK and dV
 * start at +0, but O can hold a -0 after a rescale by exp(-inf) = 0, and
 * a -0 + +0 left out keeps it -0: whole-tile skipping does the same). A
 * causal diagonal tile does about 40% fewer multiply-adds. */
#define SB 16
#define NSB ((BR > BC ? BR : BC) / SB)
struct spans {
    int64_t nrg, ncg, whole;
    int64_t ca[NSB], ce[NSB]; /* row group i: live columns [ca, ce), ce <= nc (empty: ca = ce) */
    int64_t ra[NSB], re[NSB]; /* column group j: live rows [ra, re), re <= R */
};

static void tile_spans(const struct fm *g, int64_t b, int64_t h, int64_t r0, int64_t R, int64_t c0, int64_t nc,
                       int cls, struct spans *s)
{
    s->nrg = (R + SB - 1) / SB, s->ncg = (nc + SB - 1) / SB;
    /* the block mask's tiles, and every tile with skipping off, run whole */
    s->whole = cls != T_PART || g->blk || !g->skipping;
    for (int64_t i = 0; i < s->nrg; i++) s->ca[i] = s->whole ? 0 : nc, s->ce[i] = s->whole ? nc : 0;
    for (int64_t j = 0; j < s->ncg; j++) s->ra[j] = s->whole ? 0 : R, s->re[j] = s->whole ? R : 0;
    if (s->whole) return;
    const struct fm_mask *m = g->mask;
    int64_t bh = (m->Bm == 1 ? 0 : b) * m->Hm + (m->Hm == 1 ? 0 : h / g->G);
    const int32_t *col = m->col + (bh * m->Sk + c0) * 4;
    for (int64_t i = 0; i < s->nrg; i++) {
        int64_t x0 = i * SB, x1 = min64(x0 + SB, R);
        for (int64_t j = 0; j < s->ncg; j++) {
            int64_t y0 = j * SB, y1 = min64(y0 + SB, nc);
            if (classify_exact(col + 4 * y0, r0 + x0, r0 + x1, y1 - y0) == T_SKIP) continue;
            s->ca[i] = min64(s->ca[i], y0), s->ce[i] = y1;
            s->ra[j] = min64(s->ra[j], x0), s->re[j] = x1;
        }
    }
}

/* S (or dP) = A B of a tile: column group j over rows [ra, re) (A rows of
 * K floats, lda apart; B a K x LDS panel). */
static void gemm_spans_n(const struct spans *s, int64_t R, int64_t nc, int64_t K, const float *a, int64_t lda,
                         const float *b, float *c)
{
    int64_t W = round_vw(nc);
    if (s->whole) {
        gemm(R, W, K, a, lda, 1, b, LDS, c, LDS, 0);
        return;
    }
    for (int64_t j = 0; j < s->ncg; j++) {
        int64_t y0 = j * SB, y1 = min64(y0 + SB, W), x0 = s->ra[j];
        if (s->re[j] > x0) gemm(s->re[j] - x0, y1 - y0, K, a + x0 * lda, lda, 1, b + y0, LDS, c + x0 * LDS + y0, LDS, 0);
    }
}

/* C[M][N] += A B where row m of A is zero outside [lo, hi) of its group of
 * SB (a tile's row or column spans). */
static void gemm_ks(int64_t M, int64_t N, int64_t K, const int64_t *lo, const int64_t *hi, const float *a, int64_t ars,
                    int64_t acs, const float *b, int64_t ldb, float *c, int64_t ldc)
{
    gemm_spans(M, N, K, &(struct pdi_kspans){lo, hi, SB}, a, ars, acs, b, ldb, c, ldc, 1);
}

/* The key tiles query tile qt of (b, h) visits, ascending, as kt << 2 |
 * class; counts every tile's class into cnt. The block mask's lists drive
 * it directly; FlashMask indices are classified tile by tile. */
static int64_t visit_list(const struct fm *g, int64_t b, int64_t h, int64_t qt, int32_t *items, int64_t *cnt)
{
    int64_t n = 0;
    if (!g->skipping) {
        for (int64_t kt = 0; kt < g->nkt; kt++) items[n++] = (int32_t)(kt << 2 | T_PART);
        cnt[T_PART] += g->nkt;
        return n;
    }
    if (g->blk) {
        const struct pdi_block_mask *bm = g->blk;
        int64_t bb = bm->B == 1 ? 0 : b, hh = bm->H == 1 ? 0 : h, r = (bb * bm->H + hh) * bm->nq + qt;
        const int32_t *pi = bm->kv_idx + r * bm->nk, *fi = bm->full_idx + r * bm->nk;
        int64_t np = bm->kv_num[r], nf = bm->full_num[r], a = 0, c = 0;
        while (a < np || c < nf) {
            if (c >= nf || (a < np && pi[a] < fi[c])) items[n++] = pi[a++] << 2 | T_PART;
            else items[n++] = fi[c++] << 2 | T_FULL;
        }
        cnt[T_PART] += np, cnt[T_FULL] += nf, cnt[T_SKIP] += g->nkt - np - nf;
        return n;
    }
    for (int64_t kt = 0; kt < g->nkt; kt++) {
        int c = tile_class(g, b, h, qt, kt);
        cnt[c]++;
        if (c != T_SKIP) items[n++] = (int32_t)(kt << 2 | c);
    }
    return n;
}

/* dst[d][y] = src[y][d] (dst rows LDS apart, src rows ld apart) for the BC
 * rows y and the first D columns d: 8 x 8 blocks in registers with AVX2
 * (transpose8.h), the columns past the last whole block one by one. */
static void transpose_tile(float *dst, const float *src, int64_t ld, int64_t D)
{
    int64_t d0 = 0;
#ifdef __AVX2__
    for (; d0 + 8 <= D; d0 += 8)
        for (int64_t y0 = 0; y0 < BC; y0 += 8) pdi_transpose8(src + y0 * ld + d0, ld, dst + d0 * LDS + y0, LDS);
#endif
    for (int64_t d = d0; d < D; d++)
        for (int64_t y = 0; y < BC; y++) dst[d * LDS + y] = src[y * ld + d];
}

/* Key tile kt of (b, kv head kvh) as f32 panels: kr [BC][Dp] and vr
 * [BC][Dvp] (rows past the sequence and columns past D zero), and when
 * asked kt_ = kr^T [D][LDS], vt = vr^T [Dv][LDS]. */
static void pack_tile(const struct fm *g, int64_t b, int64_t kvh, int64_t kt, float *kr, float *vr, float *kt_,
                      float *vt)
{
    int64_t c0 = kt * BC, nc = min64(BC, g->Sk - c0);
    /* zeros only where the rows do not write: past the sequence and past D */
    if (nc < BC || g->D < g->Dp) memset(kr, 0, sizeof *kr * (size_t)(BC * g->Dp));
    if (nc < BC || g->Dv < g->Dvp) memset(vr, 0, sizeof *vr * (size_t)(BC * g->Dvp));
    for (int64_t y = 0; y < nc; y++) {
        prefetch_row(&g->k, b, c0 + y + FM_PREFETCH_AHEAD, kvh, g->D, 0);
        prefetch_row(&g->v, b, c0 + y + FM_PREFETCH_AHEAD, kvh, g->Dv, 0);
        load_f32(kr + y * g->Dp, row_ptr(&g->k, b, c0 + y, kvh), g->k.dtype, g->D, g->k.strides[3]);
        load_f32(vr + y * g->Dvp, row_ptr(&g->v, b, c0 + y, kvh), g->v.dtype, g->Dv, g->v.strides[3]);
    }
    if (kt_) transpose_tile(kt_, kr, g->Dp, g->D);
    if (vt) transpose_tile(vt, vr, g->Dvp, g->Dv);
}

/* Dropout: words of row i of (b, h) for the nc keys from c0; keeps or zeroes
 * x[0..nc) (kept ones times 1/(1-p)). */
static void drop_row(const struct fm *g, int64_t b, int64_t h, int64_t i, int64_t c0, int64_t nc, uint32_t *w,
                     float *x)
{
    pd_philox_fill(g->seed, g->off + (uint64_t)(((b * g->Hq + h) * g->Sq + i) * g->Sk + c0), w, nc);
    for (int64_t y = 0; y < nc; y++) x[y] = w[y] >= g->thr ? x[y] * g->keep : 0.0f;
}

/* ---- vector helpers (n a multiple of PDI_GEMM_VW) ----------------------- */
/* Inlined into the tile loops like exp_row: the rows are short (64), so
 * per-call constants and a lane-by-lane reduction would cost as much as the
 * row. NaN never wins the select, so the lanes hold no NaN and the tree's
 * vmaxps gives the exact max. */
static inline __attribute__((always_inline)) float row_max(const float *x, int64_t n)
{
    vg m = bcg(-INFINITY);
    for (int64_t i = 0; i < n; i += PDI_GEMM_VW) {
        vg v = ldg(x + i);
        vgi gt = v > m;
        m = (vg)(((vgi)v & gt) | ((vgi)m & ~gt));
    }
#ifdef __AVX512F__
    return _mm512_reduce_max_ps(m);
#else
    float r = -INFINITY;
    for (int i = 0; i < PDI_GEMM_VW; i++) r = m[i] > r ? m[i] : r;
    return r;
#endif
}

/* x = exp(x - mx) in place, 0 where x - mx < -87 (masked -inf included:
 * the fast formula needs normal results); returns the sum lane by lane, so
 * that the forward keeps l as a vector per row and reduces it once at the
 * end instead of once per tile (the reduction's shuffles cost about as
 * much as a 64-float row's exps). Vectors of the native width
 * (unary_math.h); without AVX2 the gemm's vectors, lane by lane. */
static inline __attribute__((always_inline)) vg exp_row(float *x, float mx, int64_t n)
{
    int64_t i = 0;
    vg s = bcg(0.0f);
#ifdef PDI_HAVE_VF /* pdi_vf is then a vg */
    for (; i + PDI_VW <= n; i += PDI_VW) {
        pdi_vf a = pdi_vf_load(x + i) - mx;
        pdi_vf e = pdi_vf_expf_normal(pdi_vf_max(a, pdi_vf_splat(-87.0f)));
        e = (pdi_vf)((pdi_vi)e & (a >= pdi_vf_splat(-87.0f)));
        pdi_vf_store(x + i, e);
        s += (vg)e;
    }
#endif
    for (; i < n; i += PDI_GEMM_VW) {
        vg a = ldg(x + i) - mx, e;
        for (int t = 0; t < PDI_GEMM_VW; t++) e[t] = pdi_vexpf_normal(a[t] < -87.0f ? -87.0f : a[t]);
        e = (vg)((vgi)e & (a >= bcg(-87.0f)));
        stg(x + i, e);
        s += e;
    }
    return s;
}

static void scale_row(float *x, float f, int64_t n)
{
    for (int64_t i = 0; i < n; i += PDI_GEMM_VW) stg(x + i, ldg(x + i) * f);
}

/* ---- work units ---------------------------------------------------------- */
typedef void (*unit_fn)(const struct fm *g, int64_t u, float *w, int64_t *cnt);

/* Runs n units over the threads, each with `scratch` floats of its own;
 * cnt[3] receives the units' tile counts (integer sums: order-free). */
static int run_units(const char *op, const struct fm *g, int64_t n, size_t scratch, unit_fn fn, int par,
                     int64_t *cnt)
{
    int err = 0;
    size_t bytes = (scratch * sizeof(float) + 63) & ~(size_t)63;
    if (par && n > 1 && pdi_num_threads() > 1) {
#pragma omp parallel num_threads(pdi_num_threads())
        {
            float *w = pdi_kscratch(g->kc, bytes);
            int64_t c[3] = {0, 0, 0};
            if (!w) {
#pragma omp atomic write
                err = 1;
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t u = 0; u < n; u++)
                if (w) fn(g, u, w, c);
            pdi_kscratch_free(g->kc, w, bytes);
            for (int t = 0; t < 3; t++) {
#pragma omp atomic
                cnt[t] += c[t];
            }
        }
    } else {
        float *w = pdi_kscratch(g->kc, bytes);
        if (!w) err = 1;
        for (int64_t u = 0; u < n && w; u++) fn(g, u, w, cnt);
        pdi_kscratch_free(g->kc, w, bytes);
    }
    return err ? pdi_errorf(PD_ERR_NOMEM, "%s: out of memory for %zu bytes of scratch per thread", op, bytes) : PD_OK;
}

/* Enough work to share: about 256 K multiply-adds. */
static int worth_threads(const struct fm *g)
{
    return (double)g->B * (double)g->Hq * (double)g->Sq * (double)g->Sk * (double)(g->D + g->Dv) > 262144.0;
}

/* ---- forward ----------------------------------------------------------- */
static void pack_fwd_unit(const struct fm *g, int64_t u, float *w, int64_t *cnt)
{
    PDI_UNUSED(cnt);
    int64_t kt = u % g->nkt, bk = u / g->nkt; /* bk = b Hk + kvh */
    float *kr = w, *vr = g->Vrp + u * BC * g->Dvp;
    pack_tile(g, bk / g->Hk, bk % g->Hk, kt, kr, vr, g->Ktp + u * g->D * LDS, NULL);
}

static size_t fwd_scratch(const struct fm *g)
{
    return (size_t)(BR * g->D + BR * LDS + BR * g->Dvp + BR * PDI_GEMM_VW + BR + BC + g->nkt + 16);
}

/* Query tile qt of (b, h): online softmax over the visited key tiles; the
 * running sum of row x is the vector L[x] (exp_row), reduced at the end. */
static void fwd_unit(const struct fm *g, int64_t u, float *w, int64_t *cnt)
{
    int64_t qt = u % g->nqt, h = (u / g->nqt) % g->Hq, b = u / (g->nqt * g->Hq), kvh = h / g->G;
    int64_t r0 = qt * BR, R = min64(BR, g->Sq - r0), D = g->D, Dvp = g->Dvp;
    float *Qb = w, *S = Qb + BR * D, *O = S + BR * LDS, *L = O + BR * Dvp, *m = L + BR * PDI_GEMM_VW;
    uint32_t *words = (uint32_t *)(m + BR);
    int32_t *items = (int32_t *)(words + BC);
    for (int64_t x = 0; x < R; x++) {
        prefetch_row(&g->q, b, r0 + x + FM_PREFETCH_AHEAD, h, D, 0);
        load_f32(Qb + x * D, row_ptr(&g->q, b, r0 + x, h), g->q.dtype, D, g->q.strides[3]);
        for (int64_t d = 0; d < D; d++) Qb[x * D + d] *= g->scale;
        m[x] = -INFINITY;
        stg(L + x * PDI_GEMM_VW, bcg(0.0f));
    }
    memset(O, 0, sizeof *O * (size_t)(R * Dvp));
    int64_t n = visit_list(g, b, h, qt, items, cnt);
    for (int64_t it = 0; it < n; it++) {
        int64_t kt = items[it] >> 2, c0 = kt * BC, nc = min64(BC, g->Sk - c0), W = round_vw(nc);
        int64_t pu = (b * g->Hk + kvh) * g->nkt + kt;
        struct spans sp;
        tile_spans(g, b, h, r0, R, c0, nc, items[it] & 3, &sp);
        gemm_spans_n(&sp, R, nc, D, Qb, D, g->Ktp + pu * D * LDS, S);
        if ((items[it] & 3) == T_PART) tile_mask(g, b, h, r0, R, c0, nc, S);
        for (int64_t x = 0; x < R; x++) {
            float *s = S + x * LDS;
            for (int64_t y = nc; y < W; y++) s[y] = -INFINITY;
            float mo = m[x], mt = row_max(s, W), mn = mt > mo ? mt : mo;
            if (mn == -INFINITY) { /* nothing seen yet: P = 0, no exp */
                memset(s, 0, sizeof *s * (size_t)W);
                continue;
            }
            float *lx = L + x * PDI_GEMM_VW;
            vg sum = exp_row(s, mn, W);
            if (mn != mo) {
                float al = mo == -INFINITY ? 0.0f : pdi_vexpf(mo - mn);
                stg(lx, ldg(lx) * al + sum);
                scale_row(O + x * Dvp, al, Dvp);
                m[x] = mn;
            } else {
                stg(lx, ldg(lx) + sum);
            }
            if (g->drop) drop_row(g, b, h, r0 + x, c0, nc, words, s);
        }
        gemm_ks(R, Dvp, nc, sp.ca, sp.ce, S, LDS, 1, g->Vrp + pu * BC * Dvp, Dvp, O, Dvp);
    }
    float *lse = (float *)g->lse.data;
    for (int64_t x = 0; x < R; x++) {
        float *o = O + x * Dvp, lv = -INFINITY, l = 0;
        vg lx = ldg(L + x * PDI_GEMM_VW);
        prefetch_row(&g->o, b, r0 + x + FM_PREFETCH_AHEAD, h, g->Dv, 1);
        for (int t = 0; t < PDI_GEMM_VW; t++) l += lx[t];
        if (l > 0) {
            scale_row(o, 1.0f / l, Dvp);
            lv = m[x] + logf(l);
        } else {
            memset(o, 0, sizeof *o * (size_t)Dvp);
        }
        store_f32(row_ptr(&g->o, b, r0 + x, h), g->o.dtype, o, g->Dv, g->o.strides[3]);
        lse[b * g->lse.strides[0] + h * g->lse.strides[1] + (r0 + x) * g->lse.strides[2]] = lv;
    }
}

static int fwd_run(struct fm *g, int64_t *cnt)
{
    int64_t np = g->B * g->Hk * g->nkt;
    if (g->B * g->Hq * g->Sq == 0) return PD_OK;
    size_t kb = sizeof(float) * (size_t)(np * g->D * LDS + 1), vb = sizeof(float) * (size_t)(np * BC * g->Dvp + 1);
    g->Ktp = pdi_kscratch(g->kc, kb);
    g->Vrp = pdi_kscratch(g->kc, vb);
    int rc = PD_OK, par = worth_threads(g);
    if (!g->Ktp || !g->Vrp)
        rc = pdi_errorf(PD_ERR_NOMEM, "flashmask: out of memory for the packed keys and values (%lld tiles)",
                        (long long)np);
    if (!rc) rc = run_units("flashmask", g, np, (size_t)(BC * g->Dp + 16), pack_fwd_unit, par, cnt);
    if (!rc)
        rc = run_units("flashmask", g, g->B * g->Hq * g->nqt, fwd_scratch(g), fwd_unit, par, cnt);
    pdi_kscratch_free(g->kc, g->Ktp, kb), pdi_kscratch_free(g->kc, g->Vrp, vb);
    g->Ktp = g->Vrp = NULL;
    return rc;
}

/* ---- backward ---------------------------------------------------------- */
/* Scaled Q, dO, D_i and the usable lse of rows [i0, i0 + FM_PREP_ROWS) of
 * batch b, all heads: unit u = b nblk + block. Rows are visited in memory
 * order (query row, then head), which the hardware prefetchers follow; one
 * head's rows in turn stall on a miss each (on one thread at the Llama
 * bench shape: 2.0 ms of a 9.5 ms backward that way, 0.6-0.9 ms this way). */
#define FM_PREP_ROWS 16
static void prep_bwd_unit(const struct fm *g, int64_t u, float *w, int64_t *cnt)
{
    PDI_UNUSED(cnt);
    int64_t nblk = (g->Sq + FM_PREP_ROWS - 1) / FM_PREP_ROWS, b = u / nblk, i0 = u % nblk * FM_PREP_ROWS;
    int64_t i1 = min64(i0 + FM_PREP_ROWS, g->Sq), Dp = g->Dp, Dvp = g->Dvp;
    const float *lse = (const float *)g->lse.data;
    for (int64_t i = i0; i < i1; i++)
        for (int64_t h = 0; h < g->Hq; h++) {
            int64_t r = (b * g->Hq + h) * g->Sq + i;
            float *qp = g->Qp + r * Dp, *dop = g->dOp + r * Dvp;
            if (g->D < Dp) memset(qp + g->D, 0, sizeof *qp * (size_t)(Dp - g->D));
            if (g->Dv < Dvp) {
                memset(dop + g->Dv, 0, sizeof *dop * (size_t)(Dvp - g->Dv));
                memset(w + g->Dv, 0, sizeof *w * (size_t)(Dvp - g->Dv));
            }
            load_f32(qp, row_ptr(&g->q, b, i, h), g->q.dtype, g->D, g->q.strides[3]);
            for (int64_t d = 0; d < g->D; d++) qp[d] *= g->scale;
            load_f32(dop, row_ptr(&g->dout, b, i, h), g->dout.dtype, g->Dv, g->dout.strides[3]);
            load_f32(w, row_ptr(&g->o, b, i, h), g->o.dtype, g->Dv, g->o.strides[3]);
            vg s = bcg(0.0f);
            for (int64_t d = 0; d < Dvp; d += PDI_GEMM_VW) s += ldg(dop + d) * ldg(w + d);
            float di = 0;
            for (int t = 0; t < PDI_GEMM_VW; t++) di += s[t];
            g->Drow[r] = di;
            float lv = lse[b * g->lse.strides[0] + h * g->lse.strides[1] + i * g->lse.strides[2]];
            g->lsep[r] = lv == -INFINITY ? INFINITY : lv; /* a row that sees nothing: P = exp(-inf) = 0 */
        }
}

static size_t bwd_scratch(const struct fm *g)
{
    return (size_t)(2 * BC * g->Dp + 2 * BC * g->Dvp + (g->D + g->Dv) * LDS + 3 * BR * LDS + BC + 16);
}

/* One tile pair: S, P, dP, then dV, dK (unit's accumulators) and dQ. */
static void bwd_pair(const struct fm *g, int64_t b, int64_t h, int64_t qt, int64_t kt, int cls, int64_t ch, float *w)
{
    int64_t D = g->D, Dp = g->Dp, Dv = g->Dv, Dvp = g->Dvp;
    float *kr = w, *vr = kr + BC * Dp, *ktp = vr + BC * Dvp, *vt = ktp + D * LDS, *dK = vt + Dv * LDS;
    float *dV = dK + BC * Dp, *S = dV + BC * Dvp, *dP = S + BR * LDS, *Pd = dP + BR * LDS;
    uint32_t *words = (uint32_t *)(Pd + BR * LDS);
    int64_t r0 = qt * BR, R = min64(BR, g->Sq - r0), c0 = kt * BC, nc = min64(BC, g->Sk - c0), W = round_vw(nc);
    int64_t row = (b * g->Hq + h) * g->Sq + r0;
    const float *Q = g->Qp + row * Dp, *dO = g->dOp + row * Dvp;
    struct spans sp;
    tile_spans(g, b, h, r0, R, c0, nc, cls, &sp);
    gemm_spans_n(&sp, R, nc, D, Q, Dp, ktp, S);
    if (cls == T_PART) tile_mask(g, b, h, r0, R, c0, nc, S);
    gemm_spans_n(&sp, R, nc, Dv, dO, Dvp, vt, dP);
    const float *P = g->drop ? Pd : S;
    for (int64_t x = 0; x < R; x++) {
        float *s = S + x * LDS, *dp = dP + x * LDS;
        for (int64_t y = nc; y < W; y++) s[y] = -INFINITY;
        exp_row(s, g->lsep[row + x], W);
        if (g->drop) { /* Pd = P Z / (1-p) for dV; dP := dP Z / (1-p) for dS */
            float *pd = Pd + x * LDS;
            memcpy(pd, s, sizeof *pd * (size_t)W);
            drop_row(g, b, h, r0 + x, c0, nc, words, pd);
            for (int64_t y = 0; y < nc; y++) dp[y] = words[y] >= g->thr ? dp[y] * g->keep : 0.0f;
        }
    }
    gemm_ks(nc, Dvp, R, sp.ra, sp.re, P, 1, LDS, dO, Dvp, dV, Dvp);
    for (int64_t x = 0; x < R; x++) { /* dS = P (dP - D_i), into dP; 0 where P is (dP may be unset there) */
        float *s = S + x * LDS, *dp = dP + x * LDS;
        vg di = bcg(g->Drow[row + x]);
        for (int64_t y = 0; y < W; y += PDI_GEMM_VW) {
            vg p = ldg(s + y);
            stg(dp + y, (vg)((vgi)(p * (ldg(dp + y) - di)) & (p != bcg(0.0f))));
        }
    }
    gemm_ks(nc, Dp, R, sp.ra, sp.re, dP, 1, LDS, Q, Dp, dK, Dp);
    float *dQ = g->dQp + (ch * g->B * g->Hq * g->Sq + row) * Dp;
    gemm_ks(R, Dp, nc, sp.ca, sp.ce, dP, LDS, 1, kr, Dp, dQ, Dp);
}

/* Key tiles [kt0, kt1) of (b, kv head): unit u = (b Hk + kvh) nch + chunk. */
static void bwd_unit(const struct fm *g, int64_t u, float *w, int64_t *cnt)
{
    PDI_UNUSED(cnt);
    int64_t ch = u % g->nch, bk = u / g->nch, b = bk / g->Hk, kvh = bk % g->Hk;
    int64_t kt0 = ch * g->nkt / g->nch, kt1 = (ch + 1) * g->nkt / g->nch, Dp = g->Dp, Dvp = g->Dvp;
    float *kr = w, *vr = kr + BC * Dp, *ktp = vr + BC * Dvp, *vt = ktp + g->D * LDS, *dK = vt + g->Dv * LDS;
    float *dV = dK + BC * Dp;
    for (int64_t h = kvh * g->G; h < (kvh + 1) * g->G; h++)
        memset(g->dQp + ((ch * g->B + b) * g->Hq + h) * g->Sq * Dp, 0, sizeof(float) * (size_t)(g->Sq * Dp));
    for (int64_t kt = kt0; kt < kt1; kt++) {
        pack_tile(g, b, kvh, kt, kr, vr, ktp, vt);
        memset(dK, 0, sizeof *dK * (size_t)(BC * Dp));
        memset(dV, 0, sizeof *dV * (size_t)(BC * Dvp));
        for (int64_t h = kvh * g->G; h < (kvh + 1) * g->G; h++)
            for (int64_t qt = 0; qt < g->nqt; qt++) {
                int c = g->skipping ? tile_class(g, b, h, qt, kt) : T_PART;
                if (c != T_SKIP) bwd_pair(g, b, h, qt, kt, c, ch, w);
            }
        int64_t c0 = kt * BC, nc = min64(BC, g->Sk - c0);
        for (int64_t y = 0; y < nc; y++) {
            prefetch_row(&g->dk, b, c0 + y + FM_PREFETCH_AHEAD, kvh, g->D, 1);
            prefetch_row(&g->dv, b, c0 + y + FM_PREFETCH_AHEAD, kvh, g->Dv, 1);
            store_f32(row_ptr(&g->dk, b, c0 + y, kvh), g->dk.dtype, dK + y * Dp, g->D, g->dk.strides[3]);
            store_f32(row_ptr(&g->dv, b, c0 + y, kvh), g->dv.dtype, dV + y * Dvp, g->Dv, g->dv.strides[3]);
        }
    }
}

/* dq = scale * (sum of the chunks' partials, in chunk order), per (b, h). */
static void dq_unit(const struct fm *g, int64_t u, float *w, int64_t *cnt)
{
    PDI_UNUSED(cnt);
    int64_t b = u / g->Hq, h = u % g->Hq, Dp = g->Dp, stride = g->B * g->Hq * g->Sq * Dp;
    for (int64_t i = 0; i < g->Sq; i++) {
        const float *p = g->dQp + (u * g->Sq + i) * Dp;
        for (int64_t d = 0; d < Dp; d += PDI_GEMM_VW) {
            vg s = ldg(p + d);
            for (int64_t ch = 1; ch < g->nch; ch++) s += ldg(p + ch * stride + d);
            stg(w + d, s * g->scale);
        }
        prefetch_row(&g->dq, b, i + FM_PREFETCH_AHEAD, h, g->D, 1);
        store_f32(row_ptr(&g->dq, b, i, h), g->dq.dtype, w, g->D, g->dq.strides[3]);
    }
}

static int bwd_run(struct fm *g)
{
    int64_t rows = g->B * g->Hq * g->Sq, cnt[3] = {0, 0, 0};
    if (g->B * g->Hk == 0) return PD_OK;
    /* Chunks of key tiles: about 16 units for the threads of any machine,
     * while the dQ partials stay under 256 MiB; fixed by the shapes alone so
     * that the sums never depend on the thread count. Sk = 0 keeps one
     * chunk: its units zero dq. */
    int64_t want = (16 + g->B * g->Hk - 1) / (g->B * g->Hk), fit = ((int64_t)1 << 26) / (rows * g->Dp + 1);
    want = want < fit ? want : fit;
    g->nch = g->nkt < want ? g->nkt : want;
    g->nch = g->nch > 0 ? g->nch : 1;
    size_t qb = sizeof(float) * (size_t)(rows * g->Dp + 1), ob = sizeof(float) * (size_t)(rows * g->Dvp + 1);
    size_t rb = sizeof(float) * (size_t)(rows + 1), pb = sizeof(float) * (size_t)(g->nch * rows * g->Dp + 1);
    g->Qp = pdi_kscratch(g->kc, qb);
    g->dOp = pdi_kscratch(g->kc, ob);
    g->Drow = pdi_kscratch(g->kc, rb);
    g->lsep = pdi_kscratch(g->kc, rb);
    g->dQp = pdi_kscratch(g->kc, pb);
    int rc = PD_OK, par = worth_threads(g);
    if (!g->Qp || !g->dOp || !g->Drow || !g->lsep || !g->dQp)
        rc = pdi_errorf(PD_ERR_NOMEM, "flashmask_backward: out of memory for %lld query rows x %lld chunks",
                        (long long)rows, (long long)g->nch);
    if (!rc) rc = run_units("flashmask_backward", g, g->B * ((g->Sq + FM_PREP_ROWS - 1) / FM_PREP_ROWS),
                                (size_t)g->Dvp + 16, prep_bwd_unit, par, cnt);
    if (!rc)
        rc = run_units("flashmask_backward", g, g->B * g->Hk * g->nch, bwd_scratch(g), bwd_unit, par, cnt);
    if (!rc) rc = run_units("flashmask_backward", g, g->B * g->Hq, (size_t)g->Dp + 16, dq_unit, par, cnt);
    pdi_kscratch_free(g->kc, g->Qp, qb), pdi_kscratch_free(g->kc, g->dOp, ob);
    pdi_kscratch_free(g->kc, g->Drow, rb), pdi_kscratch_free(g->kc, g->lsep, rb);
    pdi_kscratch_free(g->kc, g->dQp, pb);
    g->Qp = g->dOp = g->Drow = g->lsep = g->dQp = NULL;
    return rc;
}

/* ---- the kernels --------------------------------------------------------- */
/* Geometry from q [B, Sq, Hq, D], k [B, Sk, Hk, D], v [B, Sk, Hk, Dv]. */
static void fm_init(struct fm *g, const struct pd_kview *q, const struct pd_kview *k, const struct pd_kview *v,
                    double scale)
{
    memset(g, 0, sizeof *g);
    g->q = *q, g->k = *k, g->v = *v;
    g->B = q->shape[0], g->Sq = q->shape[1], g->Hq = q->shape[2], g->D = q->shape[3];
    g->Sk = k->shape[1], g->Hk = k->shape[2], g->Dv = v->shape[3];
    g->G = g->Hk ? g->Hq / g->Hk : 1;
    g->Dp = round_vw(g->D), g->Dvp = round_vw(g->Dv);
    g->nqt = (g->Sq + BR - 1) / BR, g->nkt = (g->Sk + BC - 1) / BC;
    g->scale = (float)(scale > 0 ? scale : 1.0 / sqrt((double)(g->D > 0 ? g->D : 1)));
    g->skipping = atomic_load(&tile_skipping);
}

/* The geometry, dropout and normalised mask of a flashmask or
 * flashmask_backward call (inputs q, k, v, [indices], ...). Status; on
 * success the caller frees m. */
static int fm_open(struct fm *g, struct fm_mask *m, const struct pdi_kcall *kc)
{
    const struct pdi_attrs_flashmask *a = &kc->a->flashmask;
    double p = a->dropout_p;
    fm_init(g, &kc->in[0], &kc->in[1], &kc->in[2], a->scale);
    g->drop = p > 0;
    g->seed = (uint64_t)a->dropout_seed, g->off = (uint64_t)a->dropout_offset;
    g->thr = pdi_flashmask_keep_threshold(p);
    g->keep = (float)(1.0 / (1.0 - p));
    g->mask = m;
    g->kc = kc;
    return mask_build(m, kc, a->has_idx ? &kc->in[3] : NULL, a->causal != 0, g->B, g->Sq, g->Sk);
}

static int cpu_flashmask(const struct pdi_kcall *kc)
{
    struct fm g;
    struct fm_mask m;
    int rc = fm_open(&g, &m, kc);
    if (rc) return rc;
    g.o = kc->out[0], g.lse = kc->out[1];
    int64_t cnt[3] = {0, 0, 0};
    rc = fwd_run(&g, cnt);
    mask_free(&m);
    last_tiles = (struct pd_flashmask_tiles){BR, BC, cnt[T_SKIP], cnt[T_PART], cnt[T_FULL]};
    return rc;
}

static int cpu_flashmask_backward(const struct pdi_kcall *kc)
{
    int hi = kc->a->flashmask.has_idx != 0;
    struct fm g;
    struct fm_mask m;
    int rc = fm_open(&g, &m, kc);
    if (rc) return rc;
    g.o = kc->in[3 + hi], g.lse = kc->in[4 + hi], g.dout = kc->in[5 + hi];
    g.dq = kc->out[0], g.dk = kc->out[1], g.dv = kc->out[2];
    rc = bwd_run(&g);
    mask_free(&m);
    return rc;
}

void pdi_register_cpu_flashmask(void)
{
    unsigned dts = (1u << PD_F32) | (1u << PD_BF16) | (1u << PD_F16);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_flashmask, dts, cpu_flashmask);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_flashmask_backward, dts, cpu_flashmask_backward);
}

/* ---- tiles (include/pd/flashmask.h) -------------------------------------- */
void pd_flashmask_tile_size(int64_t *rows, int64_t *cols)
{
    if (rows) *rows = BR;
    if (cols) *cols = BC;
}

int pdi_flashmask_count_tiles(const struct pd_kview *idx, int causal, int64_t B, int64_t Sq, int64_t Sk, int64_t Hq,
                              struct pd_flashmask_tiles *out)
{
    struct fm_mask m;
    int rc = mask_build(&m, NULL, idx, causal != 0, B, Sq, Sk); /* host code: the default allocator */
    if (rc) return rc;
    /* Every query head of a mask head (and, without indices, every batch)
     * sees the same tiles. */
    int64_t heads = m.Hm == 1 ? Hq : Hq / m.Hm, reps = heads * (m.Bm == 1 ? B : 1);
    int64_t nqt = (Sq + BR - 1) / BR, c[3] = {0, 0, 0};
    for (int64_t bm = 0; bm < m.Bm; bm++)
        for (int64_t hm = 0; hm < m.Hm; hm++)
            for (int64_t qt = 0; qt < nqt; qt++)
                for (int64_t kt = 0; kt < m.nkt; kt++) c[classify(&m, bm, hm, qt * BR, min64(qt * BR + BR, Sq), kt)]++;
    mask_free(&m);
    *out = (struct pd_flashmask_tiles){BR, BC, c[T_SKIP] * reps, c[T_PART] * reps, c[T_FULL] * reps};
    return PD_OK;
}

struct pd_flashmask_tiles pd_flashmask_last_tiles(void) { return last_tiles; }

int pd_flashmask_set_tile_skipping(int on) { return atomic_exchange(&tile_skipping, on != 0); }

/* ---- the block mask (kernels/cpu/flashmask.h) ------------------------------ */
void pdi_block_mask_free(struct pdi_block_mask *bm)
{
    if (!bm) return;
    size_t rows = (size_t)(bm->B * bm->H * bm->nq), cells = rows * (size_t)bm->nk;
    pdi_free(bm->kv_num, sizeof(int32_t) * (rows + 1)), pdi_free(bm->full_num, sizeof(int32_t) * (rows + 1));
    pdi_free(bm->kv_idx, sizeof(int32_t) * (cells + 1)), pdi_free(bm->full_idx, sizeof(int32_t) * (cells + 1));
    pdi_free(bm->cls, cells + 1);
    bm->kv_num = bm->kv_idx = bm->full_num = bm->full_idx = NULL;
    bm->cls = NULL;
}

int pdi_block_mask_build(struct pdi_block_mask *bm, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                         pdi_mask_mod_fn mask_mod, void *ctx)
{
    if (!bm || !mask_mod || B < 1 || H < 1 || Sq < 0 || Sk < 0)
        return pdi_errorf(PD_ERR_INVALID, "block_mask: needs a mask_mod, B, H >= 1 and Sq, Sk >= 0");
    memset(bm, 0, sizeof *bm);
    bm->B = B, bm->H = H, bm->Sq = Sq, bm->Sk = Sk, bm->mask_mod = mask_mod, bm->ctx = ctx;
    bm->nq = (Sq + BR - 1) / BR, bm->nk = (Sk + BC - 1) / BC;
    size_t rows = (size_t)(B * H * bm->nq), cells = rows * (size_t)bm->nk;
    /* pdi_alloc: the lists count in the memory stats (the bench compares). */
    bm->kv_num = pdi_alloc(sizeof(int32_t) * (rows + 1));
    bm->full_num = pdi_alloc(sizeof(int32_t) * (rows + 1));
    bm->kv_idx = pdi_alloc(sizeof(int32_t) * (cells + 1));
    bm->full_idx = pdi_alloc(sizeof(int32_t) * (cells + 1));
    bm->cls = pdi_alloc(cells + 1);
    if (!bm->kv_num || !bm->full_num || !bm->kv_idx || !bm->full_idx || !bm->cls) {
        pdi_block_mask_free(bm);
        return pdi_errorf(PD_ERR_NOMEM, "block_mask: out of memory for %zu tiles", cells);
    }
    int64_t nk = bm->nk;
    PDI_FOR(pdi_num_threads() > 1 && (double)B * H * Sq * Sk > 65536.0, r, (int64_t)rows, {
        int64_t qt = r % bm->nq, h = (r / bm->nq) % H, b = r / (bm->nq * H);
        int64_t r0 = qt * BR, r1 = min64(r0 + BR, Sq);
        int32_t np = 0, nf = 0;
        for (int64_t kt = 0; kt < nk; kt++) {
            int64_t c0 = kt * BC, c1 = min64(c0 + BC, Sk), kept = 0;
            for (int64_t i = r0; i < r1; i++)
                for (int64_t j = c0; j < c1; j++) kept += mask_mod(ctx, b, h, i, j) != 0;
            int c = kept == 0 ? T_SKIP : kept == (r1 - r0) * (c1 - c0) ? T_FULL : T_PART;
            bm->cls[r * nk + kt] = (uint8_t)c;
            if (c == T_PART) bm->kv_idx[r * nk + np++] = (int32_t)kt;
            if (c == T_FULL) bm->full_idx[r * nk + nf++] = (int32_t)kt;
        }
        bm->kv_num[r] = np, bm->full_num[r] = nf;
    });
    return PD_OK;
}

/* Contiguous f32 [d0, d1, d2, d3] as a kernel view. */
static struct pd_kview f32_view(const float *p, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int ndim)
{
    struct pd_kview v = {.data = (char *)p, .dtype = PD_F32, .ndim = ndim};
    int64_t s[4] = {d0, d1, d2, d3};
    memcpy(v.shape, s, sizeof s);
    pdi_contiguous_strides(v.shape, ndim, v.strides);
    return v;
}

/* The call geometry of a block-mask attention on contiguous f32 tensors. */
static int block_call(struct fm *g, const struct pdi_block_mask *bm, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                      int64_t D, const float *q, const float *k, const float *v, double scale, const float *out,
                      const float *lse)
{
    if (!bm || (bm->B != 1 && bm->B != B) || (bm->H != 1 && bm->H != H) || bm->Sq != Sq || bm->Sk != Sk)
        return pdi_errorf(PD_ERR_INVALID,
                          "block_mask attention: the mask (B %lld, H %lld, Sq %lld, Sk %lld) does not fit B %lld, "
                          "H %lld, Sq %lld, Sk %lld",
                          bm ? (long long)bm->B : 0LL, bm ? (long long)bm->H : 0LL, bm ? (long long)bm->Sq : 0LL,
                          bm ? (long long)bm->Sk : 0LL, (long long)B, (long long)H, (long long)Sq, (long long)Sk);
    struct pd_kview qv = f32_view(q, B, Sq, H, D, 4), kv = f32_view(k, B, Sk, H, D, 4);
    struct pd_kview vv = f32_view(v, B, Sk, H, D, 4);
    fm_init(g, &qv, &kv, &vv, scale);
    g->blk = bm;
    g->o = f32_view(out, B, Sq, H, D, 4), g->lse = f32_view(lse, B, H, Sq, 1, 3);
    return PD_OK;
}

int pdi_block_mask_attention_fwd(const struct pdi_block_mask *bm, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                                 int64_t D, const float *q, const float *k, const float *v, double scale, float *out,
                                 float *lse)
{
    struct fm g;
    int64_t cnt[3] = {0, 0, 0};
    int rc = block_call(&g, bm, B, H, Sq, Sk, D, q, k, v, scale, out, lse);
    return rc ? rc : fwd_run(&g, cnt);
}

int pdi_block_mask_attention_bwd(const struct pdi_block_mask *bm, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                                 int64_t D, const float *q, const float *k, const float *v, const float *out,
                                 const float *lse, const float *dout, double scale, float *dq, float *dk, float *dv)
{
    struct fm g;
    int rc = block_call(&g, bm, B, H, Sq, Sk, D, q, k, v, scale, out, lse);
    if (rc) return rc;
    g.dout = f32_view(dout, B, Sq, H, D, 4);
    g.dq = f32_view(dq, B, Sq, H, D, 4), g.dk = f32_view(dk, B, Sk, H, D, 4), g.dv = f32_view(dv, B, Sk, H, D, 4);
    return bwd_run(&g);
}
