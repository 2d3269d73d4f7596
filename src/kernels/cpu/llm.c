/* paddle.c — CPU kernels of the transformer blocks (rope, swiglu, sdpa,
 * sdpa_backward) for f32, bf16 and f16 (computed in f32; f64 runs the
 * reference kernels).
 *
 * sdpa is blocked attention: the rows of one key/value head (its G query
 * heads times T queries, ordered (t, g) so that a causal block spans few
 * query positions) are cut in blocks of BQ rows; a block computes its
 * scores against the visible key prefix only (causal: keys beyond the
 * block's last query are skipped), a row-wise softmax whose log-sum-exp is
 * stored, then P V. Scores of one block (BQ x S floats) are the only
 * intermediate: no [T, S] matrix per head exists. The backward recomputes P
 * from the saved log-sum-exp (no second softmax pass) and follows the
 * flash-attention backward with D_i = rowsum(dO * O): one work unit per
 * (batch, kv head) owns dK/dV accumulators, so no atomics are needed.
 *
 * All products are one register-tiled kernel (gemm in tile_gemm.h, shared
 * with the FlashMask kernel) on f32 panels packed per unit from any strides
 * and dtypes, zero-padded to the kernel's vector (round_vw: 16 floats with
 * AVX-512, 8 without), as are the score rows the softmax helpers (vmax,
 * vsum) sweep. Work units run on OpenMP threads (dynamic schedule: causal
 * blocks are uneven) with one scratch allocation per thread; small calls
 * (decode steps, tests) stay on the calling thread.
 *
 * swiglu and its backward run one pass in blocks of 256 with the
 * vectorised sigmoid; contiguous f32 takes a direct path split over threads
 * above 64 K elements. A few query rows per kv head (decode) skip the
 * panels: see "sdpa decode path".
 *
 * Ownership: scratch is allocated and freed inside each call; outputs are
 * the dispatcher's fresh contiguous tensors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernel.h"
#include "kernels/cpu/tile_gemm.h"
#include "kernels/cpu/unary_math.h"

static float vmax(const float *x, int64_t n) /* n a multiple of PDI_GEMM_VW */
{
    vg m = bcg(-INFINITY);
    for (int64_t i = 0; i < n; i += PDI_GEMM_VW) {
        vg v = ldg(x + i);
        vgi gt = v > m; /* all ones where v is larger (NaN: never) */
        m = (vg)(((vgi)v & gt) | ((vgi)m & ~gt));
    }
    float r = -INFINITY;
    for (int i = 0; i < PDI_GEMM_VW; i++) r = m[i] > r ? m[i] : r;
    return r;
}

static float vmax_n(const float *x, int64_t n) /* any n >= 1 */
{
    int64_t nv = n & ~(int64_t)(PDI_GEMM_VW - 1);
    float r = nv ? vmax(x, nv) : -INFINITY;
    for (int64_t i = nv; i < n; i++) r = x[i] > r ? x[i] : r;
    return r;
}

static float vsum(const float *x, int64_t n) /* n a multiple of PDI_GEMM_VW */
{
    vg s = bcg(0.0f);
    for (int64_t i = 0; i < n; i += PDI_GEMM_VW) s += ldg(x + i);
    float r = 0;
    for (int i = 0; i < PDI_GEMM_VW; i++) r += s[i];
    return r;
}

/* ---- rope ------------------------------------------------------------ */
/* cos/sin of angle = sign * pos * theta^(-2i/D) per distinct position, in
 * double (positions reach the thousands; f32 angles would lose digits),
 * then the rotation of each (i, i + D/2) pair in f32. The table covers the
 * positions' range [lo, hi] when that is shorter than the list: packed
 * documents give [B, T] positions that all lie in [0, T), so a training
 * step takes T rows of cos/sin instead of B T (the trig dominated the op).
 * A row's values depend on its position only, so either table gives the
 * same bits. */
static int cpu_rope(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *p = &k->in[1], *y = &k->out[0];
    int64_t B = x->shape[0], T = x->shape[1], H = x->shape[2], D = x->shape[3], h2 = D / 2;
    int64_t np = pdi_kview_numel(p), rows = B * T;
    if (rows * H * D == 0) return PD_OK;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t r = 0; r < np; r++) {
        int64_t v = pdi_load_int(pdi_kview_ptr(p, r), p->dtype);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    /* by value when the range is shorter than the list (hi - lo cannot
     * overflow a comparison against np this way) */
    int by_value = hi >= lo && (uint64_t)hi - (uint64_t)lo < (uint64_t)np;
    int64_t nt = by_value ? hi - lo + 1 : np;
    double sign = (double)k->a->rope.sign, theta = k->a->rope.theta;
    size_t ib = sizeof(double) * (size_t)h2, cb = sizeof(float) * (size_t)(nt * h2 * 2);
    double *inv = pdi_kscratch(k, ib);
    float *cs = pdi_kscratch(k, cb);
    if (!inv || !cs) {
        pdi_kscratch_free(k, inv, ib), pdi_kscratch_free(k, cs, cb);
        return pdi_errorf(PD_ERR_NOMEM, "rope: out of memory");
    }
    for (int64_t i = 0; i < h2; i++) inv[i] = pow(theta, -2.0 * (double)i / (double)D);
    int par = rows * H * D >= PDI_PAR_GRAIN;
    PDI_FOR(par && nt * h2 >= 4096, r, nt, {
        double pos = sign * (double)(by_value ? lo + r : pdi_load_int(pdi_kview_ptr(p, r), p->dtype));
        float *c = cs + r * h2 * 2;
        for (int64_t i = 0; i < h2; i++) {
            double a = pos * inv[i];
            c[i] = (float)cos(a);
            c[h2 + i] = (float)sin(a);
        }
    });
    size_t es = pd_dtype_size(x->dtype);
    PDI_FOR(par, r, rows, {
        int64_t b = r / T, t = r % T, pr = p->ndim == 1 ? t : r;
        if (by_value) pr = pdi_load_int(pdi_kview_ptr(p, pr), p->dtype) - lo;
        const float *c = cs + pr * h2 * 2, *s = c + h2;
        for (int64_t h = 0; h < H; h++) {
            const char *xp = x->data + (b * x->strides[0] + t * x->strides[1] + h * x->strides[2]) * (int64_t)es;
            char *yp = y->data + ((r * H + h) * D) * (int64_t)es;
            for (int64_t i0 = 0; i0 < h2; i0 += 128) {
                int64_t n = h2 - i0 < 128 ? h2 - i0 : 128;
                float x1[128], x2[128], y1[128], y2[128];
                load_f32(x1, xp + i0 * x->strides[3] * (int64_t)es, x->dtype, n, x->strides[3]);
                load_f32(x2, xp + (h2 + i0) * x->strides[3] * (int64_t)es, x->dtype, n, x->strides[3]);
                for (int64_t i = 0; i < n; i++) {
                    y1[i] = x1[i] * c[i0 + i] - x2[i] * s[i0 + i];
                    y2[i] = x2[i] * c[i0 + i] + x1[i] * s[i0 + i];
                }
                store_f32(yp + i0 * (int64_t)es, y->dtype, y1, n, 1);
                store_f32(yp + (h2 + i0) * (int64_t)es, y->dtype, y2, n, 1);
            }
        }
    });
    pdi_kscratch_free(k, inv, ib);
    pdi_kscratch_free(k, cs, cb);
    return PD_OK;
}

/* ---- swiglu ---------------------------------------------------------- */
/* One pass: y = a sigmoid(a) u in blocks of 256 (the vectorised sigmoid
 * run, then one multiply), so gate and up are read once and nothing but y
 * is written. */
#define SWIGLU_BLOCK 256

/* y[0..m) = silu(a) u for f32 blocks, m <= SWIGLU_BLOCK; y may alias a or u. */
static inline void swiglu_block(float *y, const float *a, const float *u, int64_t m)
{
    float s[SWIGLU_BLOCK];
    pdi_vsigmoidf_run(s, a, m);
    for (int64_t i = 0; i < m; i++) y[i] = a[i] * s[i] * u[i];
}

struct swiglu_ctx {
    enum pd_dtype dt;
};

static void swiglu_run(char **p, const int64_t *st, int64_t n, void *ctx)
{
    enum pd_dtype dt = ((const struct swiglu_ctx *)ctx)->dt;
    int64_t es = (int64_t)pd_dtype_size(dt);
    for (int64_t i0 = 0; i0 < n; i0 += SWIGLU_BLOCK) {
        int64_t m = n - i0 < SWIGLU_BLOCK ? n - i0 : SWIGLU_BLOCK;
        float a[SWIGLU_BLOCK], u[SWIGLU_BLOCK];
        load_f32(a, p[1] + i0 * st[1], dt, m, st[1] / es);
        load_f32(u, p[2] + i0 * st[2], dt, m, st[2] / es);
        swiglu_block(a, a, u, m);
        store_f32(p[0] + i0 * st[0], dt, a, m, st[0] / es);
    }
}

/* Contiguous f32 chunks handed to threads: 16 K elements (192 KiB of
 * traffic) amortise a chunk's scheduling; below 64 K elements one thread
 * is faster than waking the others (a memory-bound kernel). */
#define SWIGLU_CHUNK 16384
#define SWIGLU_PAR_MIN 65536

static int cpu_swiglu(const struct pdi_kcall *k)
{
    struct pd_kview y = k->out[0], a = k->in[0], u = k->in[1];
    int64_t n = pdi_kview_numel(&y);
    if (y.dtype == PD_F32 && pdi_kview_contiguous(&a) && pdi_kview_contiguous(&u)) {
        float *yp = (float *)y.data;
        const float *ap = (const float *)a.data, *up = (const float *)u.data;
        int64_t nc = (n + SWIGLU_CHUNK - 1) / SWIGLU_CHUNK;
        PDI_FOR(n >= SWIGLU_PAR_MIN && pdi_num_threads() > 1, c, nc, {
            int64_t e = (c + 1) * SWIGLU_CHUNK < n ? (c + 1) * SWIGLU_CHUNK : n;
            for (int64_t i = c * SWIGLU_CHUNK; i < e; i += SWIGLU_BLOCK)
                swiglu_block(yp + i, ap + i, up + i, e - i < SWIGLU_BLOCK ? e - i : SWIGLU_BLOCK);
        });
        return PD_OK;
    }
    struct pd_kview *ops[3] = {&y, &a, &u};
    struct swiglu_ctx c = {y.dtype};
    pdi_iter(3, ops, y.shape, y.ndim, swiglu_run, &c);
    return PD_OK;
}

/* dgate = g u s (1 + a (1 - s)), dup = g a s for f32 blocks, m <= SWIGLU_BLOCK. */
static inline void swiglu_bwd_block(float *da, float *du, const float *a, const float *u, const float *g, int64_t m)
{
    float s[SWIGLU_BLOCK];
    pdi_vsigmoidf_run(s, a, m);
    for (int64_t i = 0; i < m; i++) {
        float gs = g[i] * s[i], ai = a[i];
        da[i] = gs * u[i] * (1.0f + ai * (1.0f - s[i]));
        du[i] = gs * ai;
    }
}

/* operands: dgate, dup, gate, up, dout */
static void swiglu_bwd_run(char **p, const int64_t *st, int64_t n, void *ctx)
{
    enum pd_dtype dt = ((const struct swiglu_ctx *)ctx)->dt;
    int64_t es = (int64_t)pd_dtype_size(dt);
    for (int64_t i0 = 0; i0 < n; i0 += SWIGLU_BLOCK) {
        int64_t m = n - i0 < SWIGLU_BLOCK ? n - i0 : SWIGLU_BLOCK;
        float a[SWIGLU_BLOCK], u[SWIGLU_BLOCK], g[SWIGLU_BLOCK], da[SWIGLU_BLOCK], du[SWIGLU_BLOCK];
        load_f32(a, p[2] + i0 * st[2], dt, m, st[2] / es);
        load_f32(u, p[3] + i0 * st[3], dt, m, st[3] / es);
        load_f32(g, p[4] + i0 * st[4], dt, m, st[4] / es);
        swiglu_bwd_block(da, du, a, u, g, m);
        store_f32(p[0] + i0 * st[0], dt, da, m, st[0] / es);
        store_f32(p[1] + i0 * st[1], dt, du, m, st[1] / es);
    }
}

static int cpu_swiglu_backward(const struct pdi_kcall *k)
{
    struct pd_kview da = k->out[0], du = k->out[1], a = k->in[0], u = k->in[1], g = k->in[2];
    int64_t n = pdi_kview_numel(&da);
    if (da.dtype == PD_F32 && pdi_kview_contiguous(&a) && pdi_kview_contiguous(&u) && pdi_kview_contiguous(&g)) {
        float *dap = (float *)da.data, *dup = (float *)du.data;
        const float *ap = (const float *)a.data, *up = (const float *)u.data, *gp = (const float *)g.data;
        int64_t nc = (n + SWIGLU_CHUNK - 1) / SWIGLU_CHUNK;
        PDI_FOR(n >= SWIGLU_PAR_MIN && pdi_num_threads() > 1, c, nc, {
            int64_t e = (c + 1) * SWIGLU_CHUNK < n ? (c + 1) * SWIGLU_CHUNK : n;
            for (int64_t i = c * SWIGLU_CHUNK; i < e; i += SWIGLU_BLOCK) {
                int64_t m = e - i < SWIGLU_BLOCK ? e - i : SWIGLU_BLOCK;
                swiglu_bwd_block(dap + i, dup + i, ap + i, up + i, gp + i, m);
            }
        });
        return PD_OK;
    }
    struct pd_kview *ops[5] = {&da, &du, &a, &u, &g};
    struct swiglu_ctx c = {da.dtype};
    pdi_iter(5, ops, da.shape, da.ndim, swiglu_bwd_run, &c);
    return PD_OK;
}

/* ---- sdpa ------------------------------------------------------------ */
#define BQ_MAX 64

struct sd {
    int64_t B, Hq, Hkv, G, T, S, D, Dv, Dp, Dvp, Sp;
    int64_t rows, bq, nblk; /* rows = G T per kv head, in blocks of bq */
    int64_t fwd_per;        /* row blocks per forward unit: nblk or 1 */
    int causal;
    float scale;
    const struct pd_kview *q, *k, *v, *mask;
    int64_t mst[4]; /* mask strides on [B, Hq, T, S] (0 where broadcast) */
    size_t esz, msz;
    /* forward outputs / backward inputs and outputs */
    const struct pd_kview *o, *lse, *dout, *dq, *dk, *dv;
    const struct pdi_kcall *call; /* per-thread scratch comes from its allocator */
};

static void sd_init(struct sd *g, const struct pdi_kcall *k)
{
    memset(g, 0, sizeof *g);
    g->call = k;
    g->q = &k->in[0];
    g->k = &k->in[1];
    g->v = &k->in[2];
    g->mask = k->a->sdpa.has_mask ? &k->in[3] : NULL;
    g->B = g->q->shape[0];
    g->Hq = g->q->shape[1];
    g->T = g->q->shape[2];
    g->D = g->q->shape[3];
    g->Hkv = g->k->shape[1];
    g->S = g->k->shape[2];
    g->Dv = g->v->shape[3];
    g->G = g->Hkv ? g->Hq / g->Hkv : 1;
    g->Dp = pad_ld(round_vw(g->D));
    g->Dvp = pad_ld(round_vw(g->Dv));
    g->Sp = pad_ld(round_vw(g->S));
    g->causal = k->a->sdpa.causal != 0;
    g->scale = (float)k->a->sdpa.scale;
    g->esz = pd_dtype_size(g->q->dtype);
    if (g->mask) {
        g->msz = pd_dtype_size(g->mask->dtype);
        for (int i = 0; i < g->mask->ndim; i++) {
            int d = 4 - g->mask->ndim + i;
            g->mst[d] = g->mask->shape[i] == 1 ? 0 : g->mask->strides[i];
        }
    }
    g->rows = g->G * g->T;
    /* a block's scores (bq x Sp floats) stay within 128 KiB */
    int64_t bq = g->Sp ? 32768 / g->Sp : BQ_MAX;
    bq = bq > BQ_MAX ? BQ_MAX : bq < 4 ? 4 : bq & ~(int64_t)3;
    g->bq = bq;
    g->nblk = (g->rows + bq - 1) / bq;
}

/* Keys visible from query t: a prefix of length vis(t). */
static int64_t vis_len(const struct sd *g, int64_t t)
{
    if (!g->causal) return g->S;
    int64_t n = t + g->S - g->T + 1;
    return n < 0 ? 0 : n > g->S ? g->S : n;
}

static const char *at(const struct pd_kview *v, size_t es, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return v->data + (a * v->strides[0] + b * v->strides[1] + c * v->strides[2] + d * v->strides[3]) * (int64_t)es;
}

/* Scores row of (b, h, t) over n visible keys: x = x * scale + mask; keys
 * n..np-1 are set to -inf. A bool mask adds 0 or -inf. */
static void finish_scores(const struct sd *g, float *x, float *mrow, int64_t b, int64_t h, int64_t t, int64_t n,
                          int64_t np)
{
    for (int64_t j = 0; j < n; j++) x[j] *= g->scale;
    if (g->mask) {
        const char *mp = g->mask->data + (b * g->mst[0] + h * g->mst[1] + t * g->mst[2]) * (int64_t)g->msz;
        if (g->mask->dtype == PD_BOOL) {
            for (int64_t j = 0; j < n; j++) mrow[j] = mp[j * g->mst[3]] ? 0.0f : -INFINITY;
        } else {
            load_f32(mrow, mp, g->mask->dtype, n, g->mst[3]);
        }
        for (int64_t j = 0; j < n; j++) x[j] += mrow[j];
    }
    for (int64_t j = n; j < np; j++) x[j] = -INFINITY;
}

/* p = exp(x - m) over the n visible entries, exactly 0 where x = -inf
 * and for entries n..np-1. m >= every x, so x - m <= 0: clamped at -87,
 * the normal-range exp is exact to its ulp or underflows to ~0 anyway. */
static void exp_shift(float *x, int64_t n, int64_t np, float m)
{
    for (int64_t j = 0; j < n; j++) {
        float y = x[j] - m;
        float e = pdi_vexpf_normal(pdi_vsel(y < -87.0f, -87.0f, y));
        x[j] = pdi_vsel(y < -87.0f, 0.0f, e);
    }
    for (int64_t j = n; j < np; j++) x[j] = 0.0f;
}

/* Key/value panels of (b, hk) for keys [0, n), zero-padded to np:
 * Kt [D][np] (scores), and optionally Kp [np][Dp], Vp [np][Dvp], Vt [Dv][np]. */
static void pack_kv(const struct sd *g, int64_t b, int64_t hk, int64_t n, int64_t np, float *Kt, float *Kp, float *Vp,
                    float *Vt)
{
    const struct pd_kview *K = g->k, *V = g->v;
    enum pd_dtype dt = K->dtype;
    for (int64_t d = 0; d < g->D; d++) {
        load_f32(Kt + d * np, at(K, g->esz, b, hk, 0, d), dt, n, K->strides[2]);
        memset(Kt + d * np + n, 0, sizeof(float) * (size_t)(np - n));
    }
    if (Vt)
        for (int64_t d = 0; d < g->Dv; d++) {
            load_f32(Vt + d * np, at(V, g->esz, b, hk, 0, d), dt, n, V->strides[2]);
            memset(Vt + d * np + n, 0, sizeof(float) * (size_t)(np - n));
        }
    if (Kp) {
        memset(Kp, 0, sizeof(float) * (size_t)(np * g->Dp));
        for (int64_t s = 0; s < n; s++) load_f32(Kp + s * g->Dp, at(K, g->esz, b, hk, s, 0), dt, g->D, K->strides[3]);
    }
    if (Vp) {
        memset(Vp, 0, sizeof(float) * (size_t)(np * g->Dvp));
        for (int64_t s = 0; s < n; s++)
            load_f32(Vp + s * g->Dvp, at(V, g->esz, b, hk, s, 0), dt, g->Dv, V->strides[3]);
    }
}

/* Rows [r0, r0 + nr) of a kv head: row r is query t = r / G of head
 * hk G + r % G. Loads them from x ([B, Hq, T, X]) into dst [nr][ld]. */
static void load_rows(const struct sd *g, const struct pd_kview *x, int64_t b, int64_t hk, int64_t r0, int64_t nr,
                      int64_t X, float *dst, int64_t ld)
{
    for (int64_t i = 0; i < nr; i++) {
        int64_t r = r0 + i, t = r / g->G, h = hk * g->G + r % g->G;
        load_f32(dst + i * ld, at(x, g->esz, b, h, t, 0), x->dtype, X, x->strides[3]);
        memset(dst + i * ld + X, 0, sizeof(float) * (size_t)(ld - X));
    }
}

/* Writes rows to a contiguous [B, Hq, T, X] output. */
static void store_rows(const struct sd *g, const struct pd_kview *y, int64_t b, int64_t hk, int64_t r0, int64_t nr,
                       int64_t X, const float *src, int64_t ld)
{
    for (int64_t i = 0; i < nr; i++) {
        int64_t r = r0 + i, t = r / g->G, h = hk * g->G + r % g->G;
        char *p = y->data + (((b * g->Hq + h) * g->T + t) * X) * (int64_t)g->esz;
        store_f32(p, y->dtype, src + i * ld, X, 1);
    }
}

/* forward scratch: Kt, Vp, Qb, Sc, Ob, mrow */
static size_t fwd_scratch(const struct sd *g)
{
    return (size_t)(g->D * g->Sp + g->Sp * g->Dvp + g->bq * (g->Dp + g->Sp + g->Dvp) + g->Sp + 64);
}

/* A unit is a range of row blocks of one (b, kv head): all of them (keys
 * packed once) when there are enough (b, kv head) pairs to share out,
 * else one block each (g->fwd_per = 1). */
static void fwd_unit(const struct sd *g, int64_t u, float *w)
{
    int64_t nper = g->nblk / g->fwd_per, bh = u / nper, b = bh / g->Hkv, hk = bh % g->Hkv;
    int64_t blk0 = (u % nper) * g->fwd_per, blk1 = blk0 + g->fwd_per;
    int64_t rend = blk1 * g->bq < g->rows ? blk1 * g->bq : g->rows;
    int64_t nall = vis_len(g, (rend - 1) / g->G), np = pad_ld(round_vw(nall));
    float *Kt = w, *Vp = Kt + g->D * np, *Qb = Vp + np * g->Dvp, *Sc = Qb + g->bq * g->Dp;
    float *Ob = Sc + g->bq * np, *mrow = Ob + g->bq * g->Dvp;
    float inv[BQ_MAX], lse[BQ_MAX];
    pack_kv(g, b, hk, nall, np, Kt, NULL, Vp, NULL);
    for (int64_t r0 = blk0 * g->bq; r0 < rend; r0 += g->bq) {
        int64_t nr = rend - r0 < g->bq ? rend - r0 : g->bq;
        int64_t nmax = vis_len(g, (r0 + nr - 1) / g->G), npb = round_vw(nmax);
        load_rows(g, g->q, b, hk, r0, nr, g->D, Qb, g->Dp);
        gemm(nr, npb, g->D, Qb, g->Dp, 1, Kt, np, Sc, np, 0);
        for (int64_t i = 0; i < nr; i++) {
            int64_t r = r0 + i, t = r / g->G, h = hk * g->G + r % g->G, n = vis_len(g, t);
            float *x = Sc + i * np;
            finish_scores(g, x, mrow, b, h, t, n, n);
            float m = n ? vmax_n(x, n) : -INFINITY;
            if (!(m > -INFINITY)) { /* nothing visible: zeros */
                memset(x, 0, sizeof *x * (size_t)npb);
                inv[i] = 0;
                lse[i] = -INFINITY;
                continue;
            }
            exp_shift(x, n, npb, m);
            float s = vsum(x, npb);
            inv[i] = 1.0f / s;
            lse[i] = m + logf(s);
        }
        gemm(nr, g->Dvp, nmax, Sc, np, 1, Vp, g->Dvp, Ob, g->Dvp, 0);
        for (int64_t i = 0; i < nr; i++)
            for (int64_t d = 0; d < g->Dv; d++) Ob[i * g->Dvp + d] *= inv[i];
        store_rows(g, g->o, b, hk, r0, nr, g->Dv, Ob, g->Dvp);
        for (int64_t i = 0; i < nr; i++) {
            int64_t r = r0 + i, t = r / g->G, h = hk * g->G + r % g->G;
            store_f32(g->lse->data + ((b * g->Hq + h) * g->T + t) * (int64_t)pd_dtype_size(g->lse->dtype),
                      g->lse->dtype, &lse[i], 1, 1);
        }
    }
}

/* ---- sdpa decode path -------------------------------------------------- */
/* A few query rows per (b, kv head) — a decode step (T = 1) or a short
 * chunk — do about D multiply-adds per key, as much work as packing the key
 * would cost: so no panels here. The rows stream over the K and V rows in
 * place (any strides; f32 rows with unit inner stride are read directly,
 * others converted one row at a time), scores go to a [rows][S] buffer, the
 * softmax runs on it as in the blocked path, then the V rows are added in
 * with their weights. Each K and V row is read once for all the rows. */
#define DEC_ROWS 4

/* sum of each of 4 vectors, as a vector of 4 floats in r[0..3] */
static inline void hsum4(v8 a0, v8 a1, v8 a2, v8 a3, float *r)
{
#ifdef __AVX2__
    __m256 h01 = _mm256_hadd_ps((__m256)a0, (__m256)a1), h23 = _mm256_hadd_ps((__m256)a2, (__m256)a3);
    __m256 h = _mm256_hadd_ps(h01, h23); /* [a0 a1 a2 a3 | a0 a1 a2 a3] partial sums per 128-bit half */
    _mm_storeu_ps(r, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
#else
    v8 a[4] = {a0, a1, a2, a3};
    for (int j = 0; j < 4; j++) {
        float s = 0;
        for (int l = 0; l < 8; l++) s += a[j][l];
        r[j] = s;
    }
#endif
}

/* x[j] = q . k_j for the 4 keys k_j = kp[j] (D floats each; q zero-padded
 * to a multiple of 8 is not enough since the keys are not: the tail runs
 * scalar). */
static inline void dot4(const float *q, const float *const *kp, int64_t D, float *x)
{
    v8 a0 = bc8(0.0f), a1 = a0, a2 = a0, a3 = a0;
    int64_t d = 0;
    for (; d + 8 <= D; d += 8) {
        v8 qv = ld8(q + d);
        a0 += qv * ld8(kp[0] + d);
        a1 += qv * ld8(kp[1] + d);
        a2 += qv * ld8(kp[2] + d);
        a3 += qv * ld8(kp[3] + d);
    }
    hsum4(a0, a1, a2, a3, x);
    for (; d < D; d++)
        for (int j = 0; j < 4; j++) x[j] += q[d] * kp[j][d];
}

/* Pointer to row s of a K or V view ([B, Hkv, S, X]) as f32: the view's
 * own memory when it is f32 with unit inner stride, else tmp converted. */
static inline const float *row_f32(const struct sd *g, const struct pd_kview *x, int64_t b, int64_t hk, int64_t s,
                                   int64_t X, float *tmp)
{
    const char *p = at(x, g->esz, b, hk, s, 0);
    if (x->dtype == PD_F32 && x->strides[3] == 1) return (const float *)p;
    load_f32(tmp, p, x->dtype, X, x->strides[3]);
    return tmp;
}

/* decode scratch: Qr, Sc, Ob (DEC_ROWS rows each), mrow, 5 converted rows */
static size_t dec_scratch(const struct sd *g)
{
    return (size_t)(DEC_ROWS * (g->Dp + g->Sp + g->Dvp) + g->Sp + 4 * g->Dp + g->Dvp + 64);
}

static void dec_unit(const struct sd *g, int64_t u, float *w)
{
    int64_t b = u / g->Hkv, hk = u % g->Hkv, nr = g->rows, Dp = g->Dp, Dvp = g->Dvp, np = g->Sp;
    float *Qr = w, *Sc = Qr + DEC_ROWS * Dp, *Ob = Sc + DEC_ROWS * np, *mrow = Ob + DEC_ROWS * Dvp;
    float *kt = mrow + np, *vt = kt + 4 * Dp;
    float inv[DEC_ROWS], lse[DEC_ROWS];
    int64_t n[DEC_ROWS];
    load_rows(g, g->q, b, hk, 0, nr, g->D, Qr, Dp);
    int64_t nmax = vis_len(g, (nr - 1) / g->G);
    /* scores: keys 4 at a time, each row against the same 4 keys */
    int64_t s = 0;
    for (; s + 4 <= nmax; s += 4) {
        const float *kp[4];
        for (int j = 0; j < 4; j++) kp[j] = row_f32(g, g->k, b, hk, s + j, g->D, kt + j * Dp);
        for (int64_t i = 0; i < nr; i++) dot4(Qr + i * Dp, kp, g->D, Sc + i * np + s);
    }
    for (; s < nmax; s++) {
        const float *kp = row_f32(g, g->k, b, hk, s, g->D, kt);
        for (int64_t i = 0; i < nr; i++) {
            float acc = 0;
            for (int64_t d = 0; d < g->D; d++) acc += Qr[i * Dp + d] * kp[d];
            Sc[i * np + s] = acc;
        }
    }
    /* softmax of each row over its visible keys; p = 0 beyond them */
    for (int64_t i = 0; i < nr; i++) {
        int64_t t = i / g->G, h = hk * g->G + i % g->G;
        float *x = Sc + i * np;
        n[i] = vis_len(g, t);
        finish_scores(g, x, mrow, b, h, t, n[i], n[i]);
        float m = n[i] ? vmax_n(x, n[i]) : -INFINITY;
        if (!(m > -INFINITY)) { /* nothing visible: zeros */
            memset(x, 0, sizeof *x * (size_t)round_vw(nmax));
            n[i] = 0;
            inv[i] = 0;
            lse[i] = -INFINITY;
            continue;
        }
        exp_shift(x, n[i], round_vw(nmax), m);
        float z = vsum(x, round_vw(nmax));
        inv[i] = 1.0f / z;
        lse[i] = m + logf(z);
    }
    /* O = P V: each V row once, added to every row that sees it */
    memset(Ob, 0, sizeof(float) * (size_t)(nr * Dvp));
    int64_t dv8 = g->Dv & ~(int64_t)7;
    for (s = 0; s < nmax; s++) {
        const float *vp = row_f32(g, g->v, b, hk, s, g->Dv, vt);
        for (int64_t i = 0; i < nr; i++) {
            float p = Sc[i * np + s];
            float *o = Ob + i * Dvp;
            v8 pv = bc8(p);
            for (int64_t d = 0; d < dv8; d += 8) st8(o + d, ld8(o + d) + pv * ld8(vp + d));
            for (int64_t d = dv8; d < g->Dv; d++) o[d] += p * vp[d];
        }
    }
    for (int64_t i = 0; i < nr; i++)
        for (int64_t d = 0; d < g->Dv; d++) Ob[i * Dvp + d] *= inv[i];
    store_rows(g, g->o, b, hk, 0, nr, g->Dv, Ob, Dvp);
    for (int64_t i = 0; i < nr; i++) {
        int64_t t = i / g->G, h = hk * g->G + i % g->G;
        store_f32(g->lse->data + ((b * g->Hq + h) * g->T + t) * (int64_t)pd_dtype_size(g->lse->dtype),
                  g->lse->dtype, &lse[i], 1, 1);
    }
}

/* backward scratch: Kt, Vt, Kp, dK, dV, Qb, dOb, Ob, P, dS, dQb, mrow */
static size_t bwd_scratch(const struct sd *g)
{
    return (size_t)(g->D * g->Sp + g->Dv * g->Sp + 2 * g->Sp * g->Dp + g->Sp * g->Dvp +
                    g->bq * (2 * g->Dp + 2 * g->Dvp + 2 * g->Sp) + g->Sp + 64);
}

static void bwd_unit(const struct sd *g, int64_t u, float *w)
{
    int64_t b = u / g->Hkv, hk = u % g->Hkv, np = g->Sp, Dp = g->Dp, Dvp = g->Dvp;
    float *Kt = w, *Vt = Kt + g->D * np, *Kp = Vt + g->Dv * np, *dK = Kp + np * Dp, *dV = dK + np * Dp;
    float *Qb = dV + np * Dvp, *dOb = Qb + g->bq * Dp, *Ob = dOb + g->bq * Dvp, *P = Ob + g->bq * Dvp;
    float *dS = P + g->bq * np, *dQb = dS + g->bq * np, *mrow = dQb + g->bq * Dp;
    float Di[BQ_MAX], lse[BQ_MAX];
    pack_kv(g, b, hk, g->S, np, Kt, Kp, NULL, Vt);
    memset(dK, 0, sizeof(float) * (size_t)(np * Dp));
    memset(dV, 0, sizeof(float) * (size_t)(np * Dvp));
    for (int64_t r0 = 0; r0 < g->rows; r0 += g->bq) {
        int64_t nr = g->rows - r0 < g->bq ? g->rows - r0 : g->bq;
        int64_t nmax = vis_len(g, (r0 + nr - 1) / g->G), npb = round_vw(nmax);
        if (nmax == 0) { /* no row of the block sees a key: dq = 0 */
            memset(dQb, 0, sizeof(float) * (size_t)(nr * Dp));
            store_rows(g, g->dq, b, hk, r0, nr, g->D, dQb, Dp);
            continue;
        }
        load_rows(g, g->q, b, hk, r0, nr, g->D, Qb, Dp);
        load_rows(g, g->dout, b, hk, r0, nr, g->Dv, dOb, Dvp);
        load_rows(g, g->o, b, hk, r0, nr, g->Dv, Ob, Dvp);
        for (int64_t i = 0; i < nr; i++) {
            int64_t r = r0 + i, t = r / g->G, h = hk * g->G + r % g->G;
            lse[i] = ldf(g->lse->data + ((b * g->Hq + h) * g->T + t) * (int64_t)pd_dtype_size(g->lse->dtype),
                         g->lse->dtype);
            float acc = 0;
            for (int64_t d = 0; d < g->Dv; d++) acc += dOb[i * Dvp + d] * Ob[i * Dvp + d];
            Di[i] = acc;
        }
        gemm(nr, npb, g->D, Qb, Dp, 1, Kt, np, P, np, 0);
        gemm(nr, npb, g->Dv, dOb, Dvp, 1, Vt, np, dS, np, 0);
        for (int64_t i = 0; i < nr; i++) {
            int64_t r = r0 + i, t = r / g->G, h = hk * g->G + r % g->G;
            float *x = P + i * np, *ds = dS + i * np;
            if (!(lse[i] > -INFINITY)) {
                memset(x, 0, sizeof *x * (size_t)npb);
            } else {
                int64_t n = vis_len(g, t);
                finish_scores(g, x, mrow, b, h, t, n, n);
                exp_shift(x, n, npb, lse[i]);
            }
            float di = Di[i], sc = g->scale;
            for (int64_t j = 0; j < npb; j++) ds[j] = x[j] * (ds[j] - di) * sc;
        }
        gemm(nr, Dp, nmax, dS, np, 1, Kp, Dp, dQb, Dp, 0);
        store_rows(g, g->dq, b, hk, r0, nr, g->D, dQb, Dp);
        gemm(nmax, Dp, nr, dS, 1, np, Qb, Dp, dK, Dp, 1);
        gemm(nmax, Dvp, nr, P, 1, np, dOb, Dvp, dV, Dvp, 1);
    }
    for (int64_t s = 0; s < g->S; s++) {
        char *pk = g->dk->data + (((b * g->Hkv + hk) * g->S + s) * g->D) * (int64_t)g->esz;
        char *pv = g->dv->data + (((b * g->Hkv + hk) * g->S + s) * g->Dv) * (int64_t)g->esz;
        store_f32(pk, g->dk->dtype, dK + s * Dp, g->D, 1);
        store_f32(pv, g->dv->dtype, dV + s * Dvp, g->Dv, 1);
    }
}

typedef void (*unit_fn)(const struct sd *g, int64_t u, float *scratch);

/* Runs n units over the threads, each thread with its own scratch. */
static int run_units(const char *op, const struct sd *g, int64_t n, size_t scratch, unit_fn fn, int par)
{
    int err = 0;
    size_t bytes = (scratch * sizeof(float) + 63) & ~(size_t)63;
    if (par && n > 1 && pdi_num_threads() > 1) {
#pragma omp parallel num_threads(pdi_num_threads())
        {
            float *w = pdi_kscratch(g->call, bytes);
            if (!w) {
#pragma omp atomic write
                err = 1;
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t u = 0; u < n; u++)
                if (w) fn(g, u, w);
            pdi_kscratch_free(g->call, w, bytes);
        }
    } else {
        float *w = pdi_kscratch(g->call, bytes);
        if (!w) err = 1;
        for (int64_t u = 0; u < n && w; u++) fn(g, u, w);
        pdi_kscratch_free(g->call, w, bytes);
    }
    return err ? pdi_errorf(PD_ERR_NOMEM, "%s: out of memory for %zu bytes of scratch per thread", op, bytes) : PD_OK;
}

/* Enough work to share: about 256 K multiply-adds. */
static int worth_threads(const struct sd *g)
{
    return (double)g->B * (double)g->Hq * (double)g->T * (double)g->S * (double)(g->D + g->Dv) > 262144.0;
}

/* The decode path does ~D + Dv multiply-adds per key and row, streaming:
 * a parallel region (a few microseconds to wake the threads) pays off only
 * from a few hundred thousand of them per thread. */
static int worth_threads_dec(const struct sd *g)
{
    double macs = (double)g->B * (double)g->Hq * (double)g->T * (double)g->S * (double)(g->D + g->Dv);
    return g->B * g->Hkv > 1 && macs > 1048576.0;
}

static int cpu_sdpa(const struct pdi_kcall *k)
{
    struct sd g;
    sd_init(&g, k);
    g.o = &k->out[0];
    g.lse = &k->out[1];
    if (g.B * g.Hkv * g.rows == 0) return PD_OK;
    int par = worth_threads(&g);
    if (g.rows <= DEC_ROWS)
        return run_units("sdpa", &g, g.B * g.Hkv, dec_scratch(&g), dec_unit, par && worth_threads_dec(&g));
    /* keys packed once per (b, kv head) unless that leaves threads idle */
    g.fwd_per = par && g.B * g.Hkv < 4 * pdi_num_threads() ? 1 : g.nblk;
    return run_units("sdpa", &g, g.B * g.Hkv * (g.nblk / g.fwd_per), fwd_scratch(&g), fwd_unit, par);
}

static int cpu_sdpa_backward(const struct pdi_kcall *k)
{
    struct sd g;
    sd_init(&g, k);
    int hm = g.mask != NULL;
    g.o = &k->in[3 + hm];
    g.lse = &k->in[4 + hm];
    g.dout = &k->in[5 + hm];
    g.dq = &k->out[0];
    g.dk = &k->out[1];
    g.dv = &k->out[2];
    if (g.B * g.Hkv == 0) return PD_OK;
    if (g.rows == 0) { /* no queries: dk = dv = 0 */
        memset(g.dk->data, 0, (size_t)pdi_kview_numel(g.dk) * g.esz);
        memset(g.dv->data, 0, (size_t)pdi_kview_numel(g.dv) * g.esz);
        return PD_OK;
    }
    return run_units("sdpa_backward", &g, g.B * g.Hkv, bwd_scratch(&g), bwd_unit, worth_threads(&g));
}

void pdi_register_cpu_llm(void)
{
    unsigned low = (1u << PD_F32) | (1u << PD_BF16) | (1u << PD_F16);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_rope, low, cpu_rope);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_swiglu, low, cpu_swiglu);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_swiglu_backward, low, cpu_swiglu_backward);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_sdpa, low, cpu_sdpa);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_sdpa_backward, low, cpu_sdpa_backward);
}
