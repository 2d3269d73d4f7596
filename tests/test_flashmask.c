/* paddle.c — FlashMask attention against a dense f64 reference written here.
 *
 * The reference (ref_visible, ref_attention) takes the mask straight from
 * the indices by the formula of the spec (section 1.3: bottom-right causal,
 * the four (causal, C) modes, mask head h / (Hq / Hk)) and runs softmax
 * attention and its analytic backward in f64 loops; a row that sees no key
 * gives out 0, lse -inf and no gradient. Everything under test goes through
 * the public API (pd_flashmask_attention, pd_grad, the builders):
 *
 *   matrix: every builder x its causal flag x S in {1, 37, 65, 130} (not
 *     tile multiples) x heads (Hq 4 with Hk 4, 2, 1; one mask or one per key
 *     head, each different) in f32, with subsets in f64 (the reference
 *     kernels), bf16 and f16, and through the composed VJP (lse returned);
 *     out, lse, dq, dk, dv, and pd_flashmask_to_dense against the formula;
 *   head dims 32 to 256 (and D != Dv) in f32 and bf16;
 *   Sq != Sk: random indices in every mode (wild values with empty and
 *     inverted intervals, masked diagonals, rows that see nothing;
 *     structured ones that keep the diagonal; values at tile edges +-1);
 *   equivalences (spec section 5 item 4, bit for bit), item 5, windows;
 *   fully masked rows (out 0, lse -inf, dq 0, no NaN) and columns (dk, dv 0);
 *   tiles: skipping on and off bit-identical, pd_flashmask_last_tiles and
 *     pd_flashmask_count_tiles against the classes of the dense mask;
 *   determinism: backward twice, 1 thread against 2, bit-identical;
 *   dropout: same seed same output, other seed other output, out and
 *     gradients against the reference drawing the op's Philox rule;
 *   central finite differences in f64 on tiny shapes (first order, with and
 *     without the log-sum-exp, with dropout) and second order through
 *     create_graph;
 *   errors: each rule of spec section 5 items 6 and 7 returns NULL with a
 *     message naming it, and leaks nothing.
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "pt.h"

static struct pd_generator *gen;

/* ---- small helpers ---------------------------------------------------- */
static uint64_t rng_state = 0x2545f4914f6cdd1dull;

/* splitmix64: the test's own integer stream for random indices */
static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform integer in [lo, hi] */
static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(next_u64() % (uint64_t)(hi - lo + 1)); }
static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

static struct pd_tensor *randn(enum pd_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t s[4] = {a, b, c, d};
    return pd_cast(pd_randn(s, 4, PD_F64, gen), dt);
}

static struct pd_tensor *leaf(struct pd_tensor *t) { return pd_requires_grad_(pd_detach(t), 1); }

/* A tensor's elements as doubles (malloc'd; the caller frees). */
static double *to_f64(struct pd_tensor *t)
{
    int64_t n = t ? pd_tensor_numel(t) : 0;
    double *x = calloc((size_t)n + 1, sizeof *x);
    if (t) pd_to_buffer(t, x, PD_F64);
    return x;
}

static struct pd_tensor *idx_from(const int32_t *x, int64_t B, int64_t Hm, int64_t Sk, int64_t C)
{
    int64_t s[4] = {B, Hm, Sk, C};
    return pd_from_buffer(x, s, 4, PD_I32);
}

/* ---- the problem and the reference ------------------------------------ */
struct fm_case {
    char name[96];
    int64_t B, Sq, Sk, Hq, Hk, D, Dv;
    int causal;
    struct pd_tensor *idx;   /* int32 [B, Hm, Sk, C] or NULL */
    const int64_t *window;   /* {left, right} or NULL */
    double scale, dropout;   /* scale <= 0: 1/sqrt(D) */
    int transposed;          /* q, k, v are [B, H, S, X] tensors viewed as [B, S, H, X] */
};

/* Spec 1.3: does the index row x (C values of key j) hide the key from
 * query i? (The causal part is separate.) */
static int idx_masked(const int32_t *x, int64_t C, int causal, int64_t i)
{
    if (causal) return C == 1 ? i >= x[0] : (x[0] <= i && i < x[1]);
    if (C == 2) return i >= x[0] || i < x[1];
    return (x[0] <= i && i < x[1]) || (x[2] <= i && i < x[3]);
}

/* vis[((b Hq + h) Sq + i) Sk + j] = may query i of head h see key j. The
 * window rule is the header's: i' = i + Sk - Sq sees [i' - left, i' + right]
 * (right ignored when causal). */
static unsigned char *ref_visible(const struct fm_case *c)
{
    int64_t B = c->B, Sq = c->Sq, Sk = c->Sk, Hq = c->Hq, G = c->Hq / c->Hk, off = c->Sk - c->Sq;
    int64_t Hm = c->idx ? pd_tensor_dim(c->idx, 1) : 0, C = c->idx ? pd_tensor_dim(c->idx, 3) : 0;
    int32_t *x = NULL;
    if (c->idx) {
        x = malloc(sizeof *x * (size_t)(pd_tensor_numel(c->idx) + 1));
        pd_to_buffer(c->idx, x, PD_I32);
    }
    unsigned char *vis = malloc((size_t)(B * Hq * Sq * Sk + 1));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Sq; i++)
                for (int64_t j = 0; j < Sk; j++) {
                    int64_t ia = i + off; /* the key aligned with query i */
                    int ok = !(c->causal && j > ia);
                    if (c->window) ok = ok && j >= ia - c->window[0] && (c->causal || j <= ia + c->window[1]);
                    if (x) {
                        int64_t hm = Hm == 1 ? 0 : h / G;
                        ok = ok && !idx_masked(x + ((b * Hm + hm) * Sk + j) * C, C, c->causal, i);
                    }
                    vis[((b * Hq + h) * Sq + i) * Sk + j] = (unsigned char)ok;
                }
    free(x);
    return vis;
}

/* Dropout multipliers by the op's rule (ops_flashmask.def): weight
 * (b, h, i, j) is kept, scaled by 1/(1-p), iff the Philox word at counter
 * offset + ((b Hq + h) Sq + i) Sk + j is at least p 2^32. */
static double *ref_keep(const struct fm_case *c, uint64_t seed, uint64_t offset)
{
    int64_t n = c->B * c->Hq * c->Sq * c->Sk;
    uint32_t *w = malloc(sizeof *w * (size_t)(n + 1));
    double *z = malloc(sizeof *z * (size_t)(n + 1)), p = c->dropout;
    pd_philox_fill(seed, offset, w, n);
    uint64_t thr = (uint64_t)(p * 4294967296.0);
    for (int64_t i = 0; i < n; i++) z[i] = w[i] >= thr ? 1.0 / (1.0 - p) : 0.0;
    free(w);
    return z;
}

struct fm_ref {
    double *out, *lse, *dq, *dk, *dv;
};

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0;
    for (int64_t d = 0; d < n; d++) s += a[d] * b[d];
    return s;
}

/* Dense attention in f64. q [B, Sq, Hq, D], k [B, Sk, Hk, D], v [B, Sk, Hk,
 * Dv], dout [B, Sq, Hq, Dv] (NULL: forward only), keep [B, Hq, Sq, Sk] or
 * NULL. out = (P o keep) v with P = softmax over the visible keys; lse
 * [B, Hq, Sq] of the undropped scores; dS = P o (dP - rowsum(P o dP)) with
 * dP = (dout v^T) o keep. */
static void ref_attention(const struct fm_case *c, const unsigned char *vis, const double *keep, const double *q,
                          const double *k, const double *v, const double *dout, struct fm_ref *r)
{
    int64_t B = c->B, Sq = c->Sq, Sk = c->Sk, Hq = c->Hq, Hk = c->Hk, D = c->D, Dv = c->Dv, G = Hq / Hk;
    double scale = c->scale > 0 ? c->scale : 1.0 / sqrt((double)D);
    r->out = calloc((size_t)(B * Sq * Hq * Dv + 1), sizeof(double));
    r->lse = calloc((size_t)(B * Hq * Sq + 1), sizeof(double));
    r->dq = calloc((size_t)(B * Sq * Hq * D + 1), sizeof(double));
    r->dk = calloc((size_t)(B * Sk * Hk * D + 1), sizeof(double));
    r->dv = calloc((size_t)(B * Sk * Hk * Dv + 1), sizeof(double));
    double *p = malloc(sizeof *p * (size_t)(Sk + 1)), *dp = malloc(sizeof *dp * (size_t)(Sk + 1));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Sq; i++) {
                int64_t row = (b * Hq + h) * Sq + i, kh = h / G;
                const unsigned char *vr = vis + row * Sk;
                const double *qi = q + ((b * Sq + i) * Hq + h) * D, *z = keep ? keep + row * Sk : NULL;
                double m = -INFINITY, l = 0;
                for (int64_t j = 0; j < Sk; j++) {
                    p[j] = vr[j] ? scale * dot(qi, k + ((b * Sk + j) * Hk + kh) * D, D) : -INFINITY;
                    if (p[j] > m) m = p[j];
                }
                if (m == -INFINITY) {
                    r->lse[row] = -INFINITY;
                    continue;
                }
                for (int64_t j = 0; j < Sk; j++) l += (p[j] = vr[j] ? exp(p[j] - m) : 0);
                for (int64_t j = 0; j < Sk; j++) p[j] /= l;
                r->lse[row] = m + log(l);
                double *oi = r->out + ((b * Sq + i) * Hq + h) * Dv;
                for (int64_t j = 0; j < Sk; j++) {
                    const double *vj = v + ((b * Sk + j) * Hk + kh) * Dv;
                    double w = p[j] * (z ? z[j] : 1);
                    for (int64_t d = 0; d < Dv; d++) oi[d] += w * vj[d];
                }
                if (!dout) continue;
                const double *gi = dout + ((b * Sq + i) * Hq + h) * Dv;
                double Di = 0;
                for (int64_t j = 0; j < Sk; j++) {
                    dp[j] = vr[j] ? dot(gi, v + ((b * Sk + j) * Hk + kh) * Dv, Dv) * (z ? z[j] : 1) : 0;
                    Di += p[j] * dp[j];
                }
                double *dqi = r->dq + ((b * Sq + i) * Hq + h) * D;
                for (int64_t j = 0; j < Sk; j++) {
                    if (!vr[j]) continue;
                    int64_t kj = ((b * Sk + j) * Hk + kh);
                    double ds = scale * p[j] * (dp[j] - Di), w = p[j] * (z ? z[j] : 1);
                    for (int64_t d = 0; d < D; d++) {
                        dqi[d] += ds * k[kj * D + d];
                        r->dk[kj * D + d] += ds * qi[d];
                    }
                    for (int64_t d = 0; d < Dv; d++) r->dv[kj * Dv + d] += w * gi[d];
                }
            }
    free(p);
    free(dp);
}

static void ref_free(struct fm_ref *r)
{
    free(r->out);
    free(r->lse);
    free(r->dq);
    free(r->dk);
    free(r->dv);
}

/* ---- running the op ----------------------------------------------------- */
struct fm_run {
    struct pd_tensor *out, *lse, *dq, *dk, *dv;
    uint64_t seed, offset; /* the default generator before the call */
};

static struct pd_tensor *call(const struct fm_case *c, struct pd_tensor *q, struct pd_tensor *k, struct pd_tensor *v,
                              struct pd_tensor **lse)
{
    return pd_flashmask_attention(q, k, v, c->idx, c->causal, c->window, c->scale, c->dropout, lse);
}

/* out and lse from a forward without grad; dq, dk, dv of sum(out * dout)
 * from a second forward, with the lse requested when `composed` (the VJP
 * then composes public ops) and without (the fused backward). Both draw the
 * same dropout counters. Status. */
static int run_op(const struct fm_case *c, struct pd_tensor *q, struct pd_tensor *k, struct pd_tensor *v,
                  struct pd_tensor *dout, int composed, struct fm_run *r)
{
    struct pd_generator *g = pd_default_generator();
    memset(r, 0, sizeof *r);
    pd_generator_get_state(g, &r->seed, &r->offset);
    int prev = pd_no_grad_begin();
    r->out = call(c, q, k, v, &r->lse);
    pd_grad_mode_end(prev);
    if (!r->out) return -1;
    pd_generator_set_state(g, r->seed, r->offset);
    struct pd_tensor *lse2, *y = call(c, q, k, v, composed ? &lse2 : NULL);
    if (!y) return -1;
    if (!pt_same_bits(y, r->out)) {
        printf("%s: the forward with grad differs from the one without\n", c->name);
        return -1;
    }
    struct pd_tensor *in[3] = {q, k, v}, *gr[3];
    if (pd_grad(&y, 1, in, 3, gr, &(struct pd_grad_options){.grad_outputs = &dout})) return -1;
    r->dq = gr[0];
    r->dk = gr[1];
    r->dv = gr[2];
    return 0;
}

/* Leaves q, k, v and a dout for the case, in dtype dt. */
static void make_inputs(const struct fm_case *c, enum pd_dtype dt, struct pd_tensor **q, struct pd_tensor **k,
                        struct pd_tensor **v, struct pd_tensor **dout)
{
    if (c->transposed) {
        *q = leaf(pd_transpose(randn(dt, c->B, c->Hq, c->Sq, c->D), 1, 2));
        *k = leaf(pd_transpose(randn(dt, c->B, c->Hk, c->Sk, c->D), 1, 2));
        *v = leaf(pd_transpose(randn(dt, c->B, c->Hk, c->Sk, c->Dv), 1, 2));
    } else {
        *q = leaf(randn(dt, c->B, c->Sq, c->Hq, c->D));
        *k = leaf(randn(dt, c->B, c->Sk, c->Hk, c->D));
        *v = leaf(randn(dt, c->B, c->Sk, c->Hk, c->Dv));
    }
    *dout = randn(dt, c->B, c->Sq, c->Hq, c->Dv);
}

static double tol_of(enum pd_dtype dt)
{
    switch (dt) {
    case PD_F64: return 1e-10;
    case PD_F32: return 2e-5;
    case PD_F16: return 1e-2;
    default: return 4e-2;
    }
}

/* Compares t with the reference values: max |a - b| / (1 + |b|), equal
 * infinities agreeing, NaN failing. Prints the worst element on failure. */
static int near_ref(const struct fm_case *c, enum pd_dtype dt, const char *what, struct pd_tensor *t, const double *ref,
                    double tol)
{
    if (!t) {
        printf("%s [%s] %s: missing (%s)\n", c->name, pd_dtype_name(dt), what, pd_last_error());
        return 0;
    }
    int64_t n = pd_tensor_numel(t), worst = -1;
    double *x = to_f64(t), m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(x[i] - ref[i]) / (1 + fabs(ref[i]));
        if (isinf(x[i]) || isinf(ref[i])) d = x[i] == ref[i] ? 0 : INFINITY;
        if (!(d <= m)) m = d, worst = i; /* NaN wins */
    }
    int ok = m <= tol;
    if (!ok)
        printf("%s [%s] %s: rel diff %.3g > %.3g at element %lld: %.9g, reference %.9g\n", c->name,
               pd_dtype_name(dt), what, m, tol, (long long)worst, x[worst], ref[worst]);
    free(x);
    return ok;
}

/* pd_flashmask_to_dense against the formula: [B, Hm, Sq, Sk], mask head hm
 * is the mask of query head hm * Hq / Hm. */
static int dense_matches(const struct fm_case *c, const unsigned char *vis)
{
    int64_t Hm = pd_tensor_dim(c->idx, 1), n = c->B * Hm * c->Sq * c->Sk;
    struct pd_tensor *d = pd_flashmask_to_dense(c->idx, c->causal, c->Sq);
    if (!d || pd_tensor_dtype(d) != PD_BOOL || pd_tensor_numel(d) != n) {
        printf("%s: pd_flashmask_to_dense gave no [B, Hm, Sq, Sk] bool tensor (%s)\n", c->name, pd_last_error());
        return 0;
    }
    unsigned char *m = malloc((size_t)n + 1);
    pd_to_buffer(d, m, PD_BOOL);
    int64_t bad = -1, S2 = c->Sq * c->Sk;
    for (int64_t b = 0; b < c->B && bad < 0; b++)
        for (int64_t hm = 0; hm < Hm && bad < 0; hm++)
            for (int64_t e = 0; e < S2 && bad < 0; e++)
                if (!m[(b * Hm + hm) * S2 + e] != !vis[(b * c->Hq + hm * (c->Hq / Hm)) * S2 + e])
                    bad = (b * Hm + hm) * S2 + e;
    if (bad >= 0)
        printf("%s: pd_flashmask_to_dense differs from the formula at element %lld\n", c->name, (long long)bad);
    free(m);
    return bad < 0;
}

/* The whole comparison of one case in dtype dt. */
static void check_case(const struct fm_case *c, enum pd_dtype dt, int composed)
{
    double tol = tol_of(dt);
    int scope_tok = pd_scope_begin();
    struct pd_tensor *q, *k, *v, *dout;
    make_inputs(c, dt, &q, &k, &v, &dout);
    struct fm_run r;
    int rc = run_op(c, q, k, v, dout, composed, &r);
    if (rc) printf("%s [%s]: %s\n", c->name, pd_dtype_name(dt), pd_last_error());
    PT_CHECK(rc == 0);
    if (rc) {
        pd_scope_end(scope_tok);
        return;
    }
    double *qd = to_f64(q), *kd = to_f64(k), *vd = to_f64(v), *gd = to_f64(dout);
    unsigned char *vis = ref_visible(c);
    double *keep = c->dropout > 0 ? ref_keep(c, r.seed, r.offset) : NULL;
    struct fm_ref ref;
    ref_attention(c, vis, keep, qd, kd, vd, gd, &ref);
    PT_CHECK(near_ref(c, dt, "out", r.out, ref.out, tol));
    PT_CHECK(near_ref(c, dt, "lse", r.lse, ref.lse, dt == PD_F64 ? tol : 2e-5)); /* f32 for low precision too */
    PT_CHECK(near_ref(c, dt, "dq", r.dq, ref.dq, tol));
    PT_CHECK(near_ref(c, dt, "dk", r.dk, ref.dk, tol));
    PT_CHECK(near_ref(c, dt, "dv", r.dv, ref.dv, tol));
    if (c->idx) PT_CHECK(dense_matches(c, vis));
    free(qd), free(kd), free(vd), free(gd), free(vis), free(keep);
    ref_free(&ref);
    pd_scope_end(scope_tok);
}

/* ---- masks ---------------------------------------------------------------- */
enum fam {
    FAM_CAUSAL,
    FAM_SLIDING_CAUSAL,
    FAM_SLIDING,
    FAM_CAUSAL_DOC,
    FAM_DOC,
    FAM_SHARE_QUESTION,
    FAM_GLOBAL_SLIDING,
    FAM_BLOCKWISE,
    FAM_PREFIX_LM,
    FAM_PREFIX_DOC,
    FAM_QK_SPARSE,
    FAM_EVICTION,
    FAM_COUNT
};
static const char *fam_name[FAM_COUNT] = {"causal", "sliding_causal", "sliding", "causal_document", "document",
                                          "share_question", "global_sliding", "causal_blockwise", "prefix_lm",
                                          "prefix_document", "qk_sparse", "random_eviction"};
static const int fam_causal[FAM_COUNT] = {1, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1};

/* Up to three uneven documents over S positions; odd variants leave padding
 * at the end. Returns the count. */
static int doc_lens(int64_t S, int variant, int64_t *lens)
{
    int64_t avail = S - (variant & 1 ? S / 8 : 0);
    lens[0] = avail / 3 + variant % 3 + 1;
    if (lens[0] >= avail) {
        lens[0] = avail;
        return 1;
    }
    lens[1] = avail / 4 + 1;
    if (lens[0] + lens[1] >= avail) {
        lens[1] = avail - lens[0];
        return 2;
    }
    lens[2] = avail - lens[0] - lens[1];
    return 3;
}

/* One [1, 1, S, C] mask of the family; variants differ (per-head masks). */
static struct pd_tensor *build_one(enum fam f, int64_t S, int variant)
{
    int64_t lens[3], pre[3];
    int n = doc_lens(S, variant, lens);
    switch (f) {
    case FAM_CAUSAL: return pd_flashmask_causal(S);
    case FAM_SLIDING_CAUSAL: return pd_flashmask_sliding_window(S, 2 + variant, 0, 1);
    case FAM_SLIDING: return pd_flashmask_sliding_window(S, 2 + variant, 1 + 2 * variant, 0);
    case FAM_CAUSAL_DOC: return pd_flashmask_causal_document(S, lens, n);
    case FAM_DOC: return pd_flashmask_document(S, lens, n);
    case FAM_SHARE_QUESTION: return pd_flashmask_share_question(S, lens, n);
    case FAM_GLOBAL_SLIDING: return pd_flashmask_global_sliding_window(S, clamp64(1 + variant, 0, S), 3, 1 + variant);
    case FAM_BLOCKWISE: /* no padding allowed: the test block takes the rest */
        lens[n - 1] += S - (lens[0] + (n > 1 ? lens[1] : 0) + (n > 2 ? lens[2] : 0));
        return pd_flashmask_causal_blockwise(S, lens, n);
    case FAM_PREFIX_LM: return pd_flashmask_prefix_lm(S, clamp64(S / 3 + variant, 0, S));
    case FAM_PREFIX_DOC:
        for (int d = 0; d < n; d++) pre[d] = clamp64((lens[d] + variant) / 2, 0, lens[d]);
        return pd_flashmask_prefix_document(S, lens, pre, n);
    case FAM_QK_SPARSE: return pd_flashmask_qk_sparse(S, 1 + S / 4 + variant % 3, S / 3);
    case FAM_EVICTION: return pd_flashmask_random_eviction(S, S / 2, 17 + (uint64_t)variant);
    default: return NULL;
    }
}

/* qk_sparse needs a segment after its offset */
static int fam_fits(enum fam f, int64_t S) { return f != FAM_QK_SPARSE || S >= 8; }

/* [B, Hm, S, C]: a different variant for each (batch, mask head). */
static struct pd_tensor *family_mask(enum fam f, int64_t S, int64_t B, int64_t Hm)
{
    struct pd_tensor *heads[8], *batch[8];
    for (int64_t b = 0; b < B; b++) {
        for (int64_t h = 0; h < Hm; h++)
            if (!(heads[h] = build_one(f, S, (int)(b * Hm + h)))) return NULL;
        batch[b] = Hm == 1 ? heads[0] : pd_concat(heads, (int)Hm, 1);
    }
    return B == 1 ? batch[0] : pd_concat(batch, (int)B, 0);
}

enum idx_style { STYLE_WILD, STYLE_DIAG, STYLE_EDGES, STYLE_COUNT };
static const char *style_name[STYLE_COUNT] = {"wild", "diag", "edges"};

/* A value for the edge style: near multiples of the tile rows, or the ends. */
static int64_t edge_value(int64_t Sq)
{
    int64_t R, Ct;
    pd_flashmask_tile_size(&R, &Ct);
    int64_t v = rnd(0, 4) == 0 ? (rnd(0, 1) ? Sq : 0) : rnd(0, Sq / R + 1) * R + rnd(-1, 1);
    return clamp64(v, 0, Sq);
}

/* Random int32 [B, Hm, Sk, C]. wild: values uniform in [0, Sq] (inverted
 * and empty intervals, masked diagonals, rows that see nothing); diag: the
 * aligned diagonal (query j - (Sk - Sq) for key j) is never masked; edges:
 * values at tile-row multiples +-1 and at 0 and Sq. */
static struct pd_tensor *random_idx(int64_t B, int64_t Hm, int64_t Sq, int64_t Sk, int64_t C, int causal,
                                    enum idx_style style)
{
    int64_t n = B * Hm * Sk * C, off = Sk - Sq;
    int32_t *x = malloc(sizeof *x * (size_t)(n + 1));
    for (int64_t r = 0; r < B * Hm * Sk; r++) {
        int32_t *e = x + r * C;
        int64_t diag = r % Sk - off; /* the query aligned with this key */
        for (int64_t c = 0; c < C; c++)
            e[c] = (int32_t)(style == STYLE_EDGES ? edge_value(Sq) : rnd(0, Sq));
        if (style != STYLE_DIAG) continue;
        int64_t lo = clamp64(diag + 1, 0, Sq), hi = clamp64(diag, 0, Sq);
        int64_t lts = rnd(lo, Sq);
        e[0] = (int32_t)lts;
        if (causal && C == 2) e[1] = (int32_t)(rnd(0, 1) ? lts + (lts < Sq) : Sq);
        if (!causal && C == 2) e[1] = (int32_t)rnd(0, hi);
        if (C == 4) {
            e[1] = (int32_t)rnd(lts, Sq);
            e[3] = (int32_t)rnd(0, hi);
            e[2] = (int32_t)rnd(0, e[3]);
        }
    }
    struct pd_tensor *t = idx_from(x, B, Hm, Sk, C);
    free(x);
    return t;
}

/* ---- the matrix ------------------------------------------------------------ */
struct heads {
    int64_t hk, hm; /* hm: 1 (shared) or hk */
};
static const struct heads head_cfg[5] = {{4, 1}, {4, 4}, {2, 1}, {2, 2}, {1, 1}};

static void family_case(struct fm_case *c, enum fam f, int64_t S, struct heads hc)
{
    *c = (struct fm_case){.B = 2, .Sq = S, .Sk = S, .Hq = 4, .Hk = hc.hk, .D = S == 37 ? 12 : 16,
                          .Dv = S == 65 ? 8 : 16, .causal = fam_causal[f]};
    c->idx = family_mask(f, S, c->B, hc.hm);
    snprintf(c->name, sizeof c->name, "%s S=%lld Hk=%lld Hm=%lld", fam_name[f], (long long)S, (long long)hc.hk,
             (long long)hc.hm);
}

static void test_families(void)
{
    static const int64_t lengths[4] = {1, 37, 65, 130};
    for (int f = 0; f < FAM_COUNT; f++)
        for (int si = 0; si < 4; si++)
            for (int hi = 0; hi < 5; hi++) {
                if (!fam_fits((enum fam)f, lengths[si])) continue;
                int scope_tok = pd_scope_begin();
                struct fm_case c;
                family_case(&c, (enum fam)f, lengths[si], head_cfg[hi]);
                if (!c.idx) printf("%s: builder failed: %s\n", c.name, pd_last_error());
                PT_CHECK(c.idx != NULL);
                if (c.idx) {
                    check_case(&c, PD_F32, 0);
                    if (si == 1 && hi == 3) {
                        check_case(&c, PD_F64, 0); /* the reference kernels */
                        check_case(&c, PD_F64, 1); /* the composed VJP */
                        check_case(&c, PD_F32, 1);
                        check_case(&c, PD_F16, 0);
                    }
                    if (si == 2 && hi == 3) check_case(&c, PD_BF16, 0);
                }
                pd_scope_end(scope_tok);
            }
}

/* The head dims the kernel is built for (32 to 256, and D != Dv), f32 and
 * bf16, on a document mask and on plain causal with grouped heads. */
static void test_head_dims(void)
{
    static const int64_t dims[6][2] = {{32, 32}, {64, 64}, {96, 80}, {128, 128}, {200, 136}, {256, 256}};
    for (int di = 0; di < 6; di++)
        for (int causal_only = 0; causal_only < 2; causal_only++) {
            int scope_tok = pd_scope_begin();
            struct fm_case c = {.B = 1, .Sq = 97, .Sk = 97, .Hq = 2, .Hk = causal_only ? 1 : 2, .D = dims[di][0],
                                .Dv = dims[di][1], .causal = 1};
            if (!causal_only) c.idx = family_mask(FAM_CAUSAL_DOC, 97, 1, 1);
            snprintf(c.name, sizeof c.name, "head dims D=%lld Dv=%lld %s", (long long)c.D, (long long)c.Dv,
                     causal_only ? "causal GQA" : "causal_document");
            check_case(&c, PD_F32, 0);
            check_case(&c, PD_BF16, 0);
            pd_scope_end(scope_tok);
        }
}

/* No indices (causal or not), and every (causal, C) mode with random
 * indices, for square and non-square shapes. */
static void test_random_masks(void)
{
    static const int64_t shapes[7][2] = {{37, 65}, {65, 37}, {1, 37}, {37, 1}, {130, 129}, {129, 130}, {12, 100}};
    static const int modes[4][2] = {{1, 1}, {1, 2}, {0, 2}, {0, 4}}; /* causal, C */
    for (int si = 0; si < 7; si++) {
        int64_t Sq = shapes[si][0], Sk = shapes[si][1];
        for (int causal = 0; causal < 2; causal++) {
            struct fm_case c = {.B = 2, .Sq = Sq, .Sk = Sk, .Hq = 4, .Hk = 2, .D = 16, .Dv = 12, .causal = causal};
            snprintf(c.name, sizeof c.name, "no indices causal=%d %lldx%lld", causal, (long long)Sq, (long long)Sk);
            check_case(&c, PD_F32, 0);
        }
        for (int m = 0; m < 4; m++)
            for (int st = 0; st < STYLE_COUNT; st++)
                for (int hi = 3; hi < 5; hi++) {
                    int scope_tok = pd_scope_begin();
                    struct heads hc = head_cfg[hi];
                    struct fm_case c = {.B = 2, .Sq = Sq, .Sk = Sk, .Hq = 4, .Hk = hc.hk, .D = 8, .Dv = 8,
                                        .causal = modes[m][0]};
                    c.idx = random_idx(2, hc.hm, Sq, Sk, modes[m][1], c.causal, (enum idx_style)st);
                    snprintf(c.name, sizeof c.name, "random %s causal=%d C=%d %lldx%lld Hk=%lld Hm=%lld",
                             style_name[st], c.causal, modes[m][1], (long long)Sq, (long long)Sk, (long long)hc.hk,
                             (long long)hc.hm);
                    check_case(&c, PD_F32, 0);
                    if (si == 0 && hi == 3) check_case(&c, PD_F64, 0);
                    pd_scope_end(scope_tok);
                }
    }
    /* a given scale, Dv != D, non-contiguous q, k, v and an index tensor
     * expanded over the batch (stride 0) */
    int scope_tok = pd_scope_begin();
    int64_t es[4] = {3, 1, 40, 2};
    struct fm_case c = {.B = 3, .Sq = 40, .Sk = 40, .Hq = 2, .Hk = 2, .D = 8, .Dv = 5, .scale = 0.3, .transposed = 1};
    c.idx = pd_expand(random_idx(1, 1, 40, 40, 2, 0, STYLE_DIAG), es, 4);
    snprintf(c.name, sizeof c.name, "views: transposed q/k/v, expanded indices, scale 0.3");
    check_case(&c, PD_F32, 0);
    check_case(&c, PD_F64, 0);
    pd_scope_end(scope_tok);
}

/* ---- equivalences ----------------------------------------------------------- */
static int runs_identical(const char *what, struct fm_run *a, struct fm_run *b)
{
    const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
    struct pd_tensor *x[5] = {a->out, a->lse, a->dq, a->dk, a->dv}, *y[5] = {b->out, b->lse, b->dq, b->dk, b->dv};
    int ok = 1;
    for (int i = 0; i < 5; i++)
        if (!pt_same_bits(x[i], y[i])) {
            printf("%s: %s differs\n", what, names[i]);
            ok = 0;
        }
    return ok;
}

static int runs_close(const char *what, struct fm_run *a, struct fm_run *b, double tol)
{
    const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
    struct pd_tensor *x[5] = {a->out, a->lse, a->dq, a->dk, a->dv}, *y[5] = {b->out, b->lse, b->dq, b->dk, b->dv};
    struct fm_case c = {.Sq = 0};
    snprintf(c.name, sizeof c.name, "%s", what);
    int ok = 1;
    for (int i = 0; i < 5; i++) {
        double *yd = to_f64(y[i]);
        ok &= near_ref(&c, pd_tensor_dtype(x[i]), names[i], x[i], yd, tol);
        free(yd);
    }
    return ok;
}

/* Runs both cases on the same f32 inputs: bit-identical results (tol 0) or
 * within tol. */
static void check_pair(const char *what, const struct fm_case *a, const struct fm_case *b, double tol)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *q, *k, *v, *dout;
    make_inputs(a, PD_F32, &q, &k, &v, &dout);
    struct fm_run ra, rb;
    int rc = run_op(a, q, k, v, dout, 0, &ra) || run_op(b, q, k, v, dout, 0, &rb);
    PT_CHECK(rc == 0);
    if (!rc) PT_CHECK(tol > 0 ? runs_close(what, &ra, &rb, tol) : runs_identical(what, &ra, &rb));
    pd_scope_end(scope_tok);
}

static void test_equivalences(void)
{
    int64_t S = 70, Sk = 90;
    for (int sq = 0; sq < 2; sq++) {
        int64_t Sq = sq ? S : Sk; /* square, then Sq < Sk */
        int scope_tok = pd_scope_begin();
        int32_t a[2 * 2 * 90 * 2], b[2 * 2 * 90 * 4];
        struct fm_case base = {.B = 2, .Sq = Sq, .Sk = Sk, .Hq = 4, .Hk = 2, .D = 16, .Dv = 16};
        struct fm_case x = base, y = base;
        /* causal C=1 with LTS = Sq == causal without indices */
        for (int64_t e = 0; e < 2 * Sk; e++) a[e] = (int32_t)Sq;
        x.causal = y.causal = 1;
        x.idx = idx_from(a, 2, 1, Sk, 1);
        check_pair("causal C=1 LTS=Sq vs plain causal", &x, &y, 0);
        /* causal C=2 with LTE = Sq == causal C=1 */
        for (int64_t e = 0; e < 2 * Sk; e++) {
            a[e] = (int32_t)rnd(0, Sq);
            b[2 * e] = a[e];
            b[2 * e + 1] = (int32_t)Sq;
        }
        x.idx = idx_from(a, 2, 1, Sk, 1);
        y.idx = idx_from(b, 2, 1, Sk, 2);
        check_pair("causal C=2 LTE=Sq vs C=1", &y, &x, 0);
        /* non-causal C=4 with LTE = Sq, UTS = 0 == C=2 */
        x.causal = y.causal = 0;
        for (int64_t e = 0; e < 2 * 2 * Sk; e++) {
            int64_t lts = rnd(0, Sq), ute = rnd(0, Sq);
            a[2 * e] = (int32_t)lts;
            a[2 * e + 1] = (int32_t)ute;
            int32_t *r = b + 4 * e;
            r[0] = (int32_t)lts, r[1] = (int32_t)Sq, r[2] = 0, r[3] = (int32_t)ute;
        }
        x.idx = idx_from(a, 2, 2, Sk, 2);
        y.idx = idx_from(b, 2, 2, Sk, 4);
        check_pair("non-causal C=4 LTE=Sq UTS=0 vs C=2", &y, &x, 0);
        /* non-causal C=2 with LTS = Sq, UTE = 0 == no mask */
        for (int64_t e = 0; e < 2 * Sk; e++) a[2 * e] = (int32_t)Sq, a[2 * e + 1] = 0;
        x.idx = idx_from(a, 2, 1, Sk, 2);
        y.idx = NULL;
        check_pair("non-causal C=2 LTS=Sq UTE=0 vs no mask", &x, &y, 0);
        /* a window alone == its indices (the header's rule, aligned) */
        static const int64_t w[2][2] = {{3, 0}, {2, 5}};
        for (int causal = 0; causal < 2; causal++) {
            int64_t C = causal ? 1 : 2, o = Sk - Sq;
            for (int64_t j = 0; j < Sk; j++) {
                a[j * C] = (int32_t)clamp64(j - o + w[causal][0] + 1, 0, Sq);
                if (!causal) a[j * C + 1] = (int32_t)clamp64(j - o - w[causal][1], 0, Sq);
            }
            int64_t es[4] = {2, 1, Sk, C};
            x = base, y = base;
            x.causal = y.causal = causal;
            x.window = w[causal];
            y.idx = pd_contiguous(pd_expand(idx_from(a, 1, 1, Sk, C), es, 4));
            check_pair(causal ? "causal window vs indices" : "window vs indices", &x, &y, 0);
            check_case(&x, PD_F32, 0);
            if (Sq == Sk) { /* and the builder */
                y.idx = pd_contiguous(pd_expand(pd_flashmask_sliding_window(Sq, w[causal][0], w[causal][1], causal),
                                                es, 4));
                check_pair("window vs pd_flashmask_sliding_window", &x, &y, 0);
            }
        }
        /* spec item 5: causal C=1 with LTS_j < j == non-causal C=2 (LTS,
         * UTE = j - off): the same mask by another mode */
        for (int64_t e = 0; e < 2 * Sk; e++) {
            int64_t j = e % Sk, o = Sk - Sq;
            a[e] = (int32_t)rnd(0, Sq);
            b[2 * e] = a[e];
            b[2 * e + 1] = (int32_t)clamp64(j - o, 0, Sq);
        }
        x = base, y = base;
        x.causal = 1;
        x.idx = idx_from(a, 2, 1, Sk, 1);
        y.idx = idx_from(b, 2, 1, Sk, 2);
        snprintf(x.name, sizeof x.name, "item 5: causal C=1 %lldx%lld", (long long)Sq, (long long)Sk);
        snprintf(y.name, sizeof y.name, "item 5: non-causal C=2 as causal %lldx%lld", (long long)Sq, (long long)Sk);
        check_case(&x, PD_F32, 0);
        check_pair(y.name, &x, &y, 1e-6);
        pd_scope_end(scope_tok);
    }
}

/* ---- fully masked rows and columns ------------------------------------------ */
/* Rows that see no key: out 0, lse -inf, dq 0; key positions no query of
 * their group sees: dk = dv = 0; no NaN anywhere. Exact zeros. */
static void check_fully_masked(const struct fm_case *c)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *q, *k, *v, *dout;
    make_inputs(c, PD_F32, &q, &k, &v, &dout);
    struct fm_run r;
    int rc = run_op(c, q, k, v, dout, 0, &r);
    PT_CHECK(rc == 0);
    if (rc) {
        pd_scope_end(scope_tok);
        return;
    }
    int64_t B = c->B, Sq = c->Sq, Sk = c->Sk, Hq = c->Hq, Hk = c->Hk, D = c->D, Dv = c->Dv, G = Hq / Hk;
    unsigned char *vis = ref_visible(c);
    double *out = to_f64(r.out), *lse = to_f64(r.lse), *dq = to_f64(r.dq), *dk = to_f64(r.dk), *dv = to_f64(r.dv);
    int64_t rows = 0, cols = 0, bad = 0, nan = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Sq; i++) {
                int64_t row = (b * Hq + h) * Sq + i, any = 0;
                for (int64_t j = 0; j < Sk; j++) any |= vis[row * Sk + j];
                if (any) continue;
                rows++;
                bad += !(lse[row] == -INFINITY);
                for (int64_t d = 0; d < Dv; d++) bad += out[((b * Sq + i) * Hq + h) * Dv + d] != 0;
                for (int64_t d = 0; d < D; d++) bad += dq[((b * Sq + i) * Hq + h) * D + d] != 0;
            }
    for (int64_t b = 0; b < B; b++)
        for (int64_t kh = 0; kh < Hk; kh++)
            for (int64_t j = 0; j < Sk; j++) {
                int64_t any = 0;
                for (int64_t h = kh * G; h < (kh + 1) * G; h++)
                    for (int64_t i = 0; i < Sq; i++) any |= vis[((b * Hq + h) * Sq + i) * Sk + j];
                if (any) continue;
                cols++;
                for (int64_t d = 0; d < D; d++) bad += dk[((b * Sk + j) * Hk + kh) * D + d] != 0;
                for (int64_t d = 0; d < Dv; d++) bad += dv[((b * Sk + j) * Hk + kh) * Dv + d] != 0;
            }
    double *all[5] = {out, lse, dq, dk, dv};
    int64_t n[5] = {B * Sq * Hq * Dv, B * Hq * Sq, B * Sq * Hq * D, B * Sk * Hk * D, B * Sk * Hk * Dv};
    for (int t = 0; t < 5; t++)
        for (int64_t e = 0; e < n[t]; e++) nan += isnan(all[t][e]);
    if (bad || nan || !rows || !cols)
        printf("%s: %lld empty rows, %lld empty columns, %lld non-zero values in them, %lld NaN\n", c->name,
               (long long)rows, (long long)cols, (long long)bad, (long long)nan);
    PT_CHECK(rows > 0 && cols > 0);
    PT_CHECK(bad == 0 && nan == 0);
    free(vis), free(out), free(lse), free(dq), free(dk), free(dv);
    pd_scope_end(scope_tok);
    check_case(c, PD_F32, 0);
}

static void test_fully_masked(void)
{
    int scope_tok = pd_scope_begin();
    /* the docstring example: causal, per-head LTS = 8 and 5 (S = 10): rows
     * >= 8 resp. >= 5 see nothing, and no query sees keys >= 8 resp. >= 5 */
    int32_t x[2 * 2 * 130 * 4];
    for (int j = 0; j < 10; j++) x[j] = 8, x[10 + j] = 5;
    struct fm_case c = {.B = 1, .Sq = 10, .Sk = 10, .Hq = 4, .Hk = 2, .D = 8, .Dv = 8, .causal = 1};
    c.idx = idx_from(x, 1, 2, 10, 1);
    snprintf(c.name, sizeof c.name, "docstring example: rows >= 8 and >= 5 empty");
    check_fully_masked(&c);
    /* non-causal C=4 over several tiles: rows [70, 130) masked in every
     * column, and every seventh column masked from all rows */
    for (int64_t e = 0; e < 2 * 130; e++) {
        int32_t *r = x + 4 * e;
        int col_gone = e % 130 % 7 == 0;
        r[0] = 70, r[1] = 130, r[2] = 0, r[3] = col_gone ? 130 : (int32_t)rnd(0, 40);
    }
    c = (struct fm_case){.B = 2, .Sq = 130, .Sk = 130, .Hq = 4, .Hk = 1, .D = 8, .Dv = 8};
    c.idx = idx_from(x, 2, 1, 130, 4);
    snprintf(c.name, sizeof c.name, "empty row tiles and empty columns, C=4");
    check_fully_masked(&c);
    /* causal with Sq > Sk: the first Sq - Sk rows see nothing; columns with
     * LTS = 0 are masked from all rows */
    for (int64_t e = 0; e < 2 * 40; e++) x[e] = e % 5 == 0 ? 0 : 100;
    c = (struct fm_case){.B = 2, .Sq = 100, .Sk = 40, .Hq = 2, .Hk = 2, .D = 8, .Dv = 8, .causal = 1};
    c.idx = idx_from(x, 2, 1, 40, 1);
    snprintf(c.name, sizeof c.name, "causal Sq > Sk, LTS = 0 columns");
    check_fully_masked(&c);
    pd_scope_end(scope_tok);
}

/* ---- tiles --------------------------------------------------------------------- */
/* The classes of every (b, query head, tile) from the dense mask: no
 * visible element = skipped, all visible = full, else partial; ragged last
 * tiles hold only the positions that exist. */
static struct pd_flashmask_tiles exact_tiles(const struct fm_case *c, const unsigned char *vis)
{
    struct pd_flashmask_tiles t = {0};
    pd_flashmask_tile_size(&t.rows, &t.cols);
    for (int64_t bh = 0; bh < c->B * c->Hq; bh++)
        for (int64_t r0 = 0; r0 < c->Sq; r0 += t.rows)
            for (int64_t c0 = 0; c0 < c->Sk; c0 += t.cols) {
                int64_t r1 = r0 + t.rows < c->Sq ? r0 + t.rows : c->Sq, c1 = c0 + t.cols < c->Sk ? c0 + t.cols : c->Sk;
                int64_t seen = 0;
                for (int64_t i = r0; i < r1; i++)
                    for (int64_t j = c0; j < c1; j++) seen += vis[(bh * c->Sq + i) * c->Sk + j];
                if (seen == 0) t.skipped++;
                else if (seen == (r1 - r0) * (c1 - c0)) t.full++;
                else t.partial++;
            }
    return t;
}

static int tiles_equal(struct pd_flashmask_tiles a, struct pd_flashmask_tiles b)
{
    return a.rows == b.rows && a.cols == b.cols && a.skipped == b.skipped && a.partial == b.partial && a.full == b.full;
}

static void print_tiles(const char *name, const char *what, struct pd_flashmask_tiles t)
{
    printf("%s: %s tiles %lldx%lld: %lld skipped, %lld partial, %lld full\n", name, what, (long long)t.rows,
           (long long)t.cols, (long long)t.skipped, (long long)t.partial, (long long)t.full);
}

/* Tile counts of a forward against the dense mask (exactly, or for masks
 * with inverted intervals at least no tile wrongly skipped or wrongly
 * full), against pd_flashmask_count_tiles, and skipping on vs off
 * bit-identical. */
static void check_tiles(const struct fm_case *c, int exact)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *q, *k, *v, *dout;
    make_inputs(c, PD_F32, &q, &k, &v, &dout);
    int prev = pd_no_grad_begin(), old = pd_flashmask_set_tile_skipping(1);
    struct pd_tensor *y = call(c, q, k, v, NULL);
    struct pd_flashmask_tiles last = pd_flashmask_last_tiles();
    pd_grad_mode_end(prev);
    PT_CHECK(y != NULL);
    unsigned char *vis = ref_visible(c);
    struct pd_flashmask_tiles ex = exact_tiles(c, vis);
    free(vis);
    int64_t total = c->B * c->Hq * ((c->Sq + ex.rows - 1) / ex.rows) * ((c->Sk + ex.cols - 1) / ex.cols);
    int ok = last.skipped + last.partial + last.full == total &&
             (exact ? tiles_equal(last, ex) : last.skipped <= ex.skipped && last.full <= ex.full);
    if (c->idx) {
        struct pd_flashmask_tiles cnt;
        int rc = pd_flashmask_count_tiles(c->idx, c->causal, c->B, c->Sq, c->Sk, c->Hq, c->Hk, &cnt);
        PT_CHECK(rc == 0);
        if (!rc && !tiles_equal(cnt, last)) {
            print_tiles(c->name, "pd_flashmask_count_tiles", cnt);
            ok = 0;
        }
    }
    if (!ok) {
        print_tiles(c->name, "last forward", last);
        print_tiles(c->name, exact ? "dense mask" : "dense mask (upper bounds)", ex);
    }
    PT_CHECK(ok);
    struct fm_run on, off;
    int rc = run_op(c, q, k, v, dout, 0, &on);
    pd_flashmask_set_tile_skipping(0);
    rc = rc || run_op(c, q, k, v, dout, 0, &off);
    struct pd_flashmask_tiles none = pd_flashmask_last_tiles();
    PT_CHECK(pd_flashmask_set_tile_skipping(old) == 0);
    PT_CHECK(rc == 0);
    if (!rc) {
        char what[160];
        snprintf(what, sizeof what, "%s: skipping on vs off", c->name);
        PT_CHECK(runs_identical(what, &on, &off));
    }
    if (none.partial != total) print_tiles(c->name, "skipping off (all partial expected)", none);
    PT_CHECK(none.partial == total && none.skipped == 0 && none.full == 0);
    pd_scope_end(scope_tok);
}

static void test_tiles(void)
{
    int64_t R, C;
    pd_flashmask_tile_size(&R, &C);
    PT_CHECK(R > 0 && C > 0);
    for (int f = 0; f < FAM_COUNT; f++) {
        int scope_tok = pd_scope_begin();
        struct fm_case c;
        family_case(&c, (enum fam)f, 130, head_cfg[3]);
        if (c.idx) check_tiles(&c, 1);
        family_case(&c, (enum fam)f, 2 * R + 1, head_cfg[4]);
        if (c.idx && fam_fits((enum fam)f, 2 * R + 1)) check_tiles(&c, 1);
        pd_scope_end(scope_tok);
    }
    static const int modes[4][2] = {{1, 1}, {1, 2}, {0, 2}, {0, 4}};
    static const int64_t shapes[3][2] = {{130, 129}, {129, 130}, {70, 150}};
    for (int s = 0; s < 3; s++) {
        struct fm_case c = {.B = 2, .Sq = shapes[s][0], .Sk = shapes[s][1], .Hq = 4, .Hk = 2, .D = 8, .Dv = 8};
        for (int causal = 0; causal < 2; causal++) {
            c.causal = causal;
            c.idx = NULL;
            snprintf(c.name, sizeof c.name, "tiles, no indices, causal=%d %lldx%lld", causal, (long long)c.Sq,
                     (long long)c.Sk);
            check_tiles(&c, 1);
        }
        for (int m = 0; m < 4; m++)
            for (int st = 0; st < STYLE_COUNT; st++) {
                int scope_tok = pd_scope_begin();
                c.causal = modes[m][0];
                c.idx = random_idx(2, 2, c.Sq, c.Sk, modes[m][1], c.causal, (enum idx_style)st);
                snprintf(c.name, sizeof c.name, "tiles, %s causal=%d C=%d %lldx%lld", style_name[st], c.causal,
                         modes[m][1], (long long)c.Sq, (long long)c.Sk);
                check_tiles(&c, st == STYLE_DIAG);
                pd_scope_end(scope_tok);
            }
    }
    static const int64_t win[2] = {20, 3};
    struct fm_case c = {.B = 1, .Sq = 200, .Sk = 200, .Hq = 2, .Hk = 1, .D = 8, .Dv = 8, .window = win};
    snprintf(c.name, sizeof c.name, "tiles, window (20, 3)");
    check_tiles(&c, 1);
}

/* ---- determinism ------------------------------------------------------------------ */
static void check_determinism(const struct fm_case *c)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *q, *k, *v, *dout;
    make_inputs(c, PD_F32, &q, &k, &v, &dout);
    struct fm_run a, b, one;
    pd_set_num_threads(2);
    pd_manual_seed(31); /* the same dropout mask in each run */
    int rc = run_op(c, q, k, v, dout, 0, &a);
    pd_manual_seed(31);
    rc = rc || run_op(c, q, k, v, dout, 0, &b);
    pd_set_num_threads(1);
    pd_manual_seed(31);
    rc = rc || run_op(c, q, k, v, dout, 0, &one);
    pd_set_num_threads(0);
    PT_CHECK(rc == 0);
    if (!rc) {
        char what[160];
        snprintf(what, sizeof what, "%s: two runs", c->name);
        PT_CHECK(runs_identical(what, &a, &b));
        snprintf(what, sizeof what, "%s: 2 threads vs 1", c->name);
        PT_CHECK(runs_identical(what, &a, &one));
    }
    pd_scope_end(scope_tok);
}

static void test_determinism(void)
{
    int scope_tok = pd_scope_begin();
    struct fm_case c;
    family_case(&c, FAM_CAUSAL_DOC, 200, head_cfg[3]);
    check_determinism(&c);
    c = (struct fm_case){.B = 2, .Sq = 150, .Sk = 170, .Hq = 4, .Hk = 1, .D = 24, .Dv = 16};
    c.idx = random_idx(2, 1, 150, 170, 4, 0, STYLE_WILD);
    snprintf(c.name, sizeof c.name, "determinism, wild C=4 150x170");
    check_determinism(&c);
    c.idx = NULL;
    c.causal = 1;
    c.dropout = 0.2;
    snprintf(c.name, sizeof c.name, "determinism, causal with dropout");
    check_determinism(&c);
    pd_scope_end(scope_tok);
}

/* ---- dropout ------------------------------------------------------------------------ */
static void test_dropout(void)
{
    int scope_tok = pd_scope_begin();
    struct fm_case c = {.B = 2, .Sq = 37, .Sk = 45, .Hq = 4, .Hk = 2, .D = 8, .Dv = 8, .causal = 1, .dropout = 0.3};
    c.idx = random_idx(2, 2, 37, 45, 1, 1, STYLE_DIAG);
    snprintf(c.name, sizeof c.name, "dropout 0.3, causal C=1 37x45");
    struct pd_tensor *q, *k, *v, *dout;
    make_inputs(&c, PD_F32, &q, &k, &v, &dout);
    int prev = pd_no_grad_begin();
    pd_manual_seed(5);
    struct pd_tensor *y1 = call(&c, q, k, v, NULL), *y3 = call(&c, q, k, v, NULL);
    pd_manual_seed(5);
    struct pd_tensor *y2 = call(&c, q, k, v, NULL);
    pd_manual_seed(6);
    struct pd_tensor *y4 = call(&c, q, k, v, NULL);
    PT_CHECK(y1 && pt_same_bits(y1, y2));  /* same seed, same mask */
    PT_CHECK(y3 && !pt_same_bits(y1, y3)); /* the generator moved on */
    PT_CHECK(y4 && !pt_same_bits(y1, y4)); /* another seed */
    /* p = 0 draws nothing: the result does not depend on the generator */
    struct fm_case c0 = c;
    c0.dropout = 0;
    struct pd_tensor *z1 = call(&c0, q, k, v, NULL);
    pd_manual_seed(77);
    struct pd_tensor *z2 = call(&c0, q, k, v, NULL);
    PT_CHECK(z1 && pt_same_bits(z1, z2));
    /* the CPU kernel (f32) against the reference kernel (f64), same state */
    struct pd_generator *g = pd_default_generator();
    uint64_t seed, offset;
    pd_generator_get_state(g, &seed, &offset);
    struct pd_tensor *a = call(&c, q, k, v, NULL);
    pd_generator_set_state(g, seed, offset);
    struct pd_tensor *b = call(&c, pd_cast(q, PD_F64), pd_cast(k, PD_F64), pd_cast(v, PD_F64), NULL);
    double *bd = to_f64(b);
    PT_CHECK(near_ref(&c, PD_F32, "out, f32 vs f64 kernels", a, bd, 2e-5));
    free(bd);
    pd_grad_mode_end(prev);
    /* out and gradients against the reference drawing the op's counters */
    check_case(&c, PD_F32, 0);
    check_case(&c, PD_F64, 0);
    check_case(&c, PD_F32, 1);
    check_case(&c, PD_BF16, 0);
    c = (struct fm_case){.B = 1, .Sq = 70, .Sk = 70, .Hq = 4, .Hk = 1, .D = 16, .Dv = 8, .dropout = 0.5};
    c.idx = random_idx(1, 1, 70, 70, 4, 0, STYLE_WILD);
    snprintf(c.name, sizeof c.name, "dropout 0.5, wild C=4, Hk=1");
    check_case(&c, PD_F32, 0);
    check_case(&c, PD_F64, 1);
    pd_scope_end(scope_tok);
}

/* ---- finite differences ------------------------------------------------------------- */
/* sum(out * w) (+ sum(lse * w2)) under no grad; dropout cases reseed so
 * every evaluation draws the same mask. */
static double fd_loss(const struct fm_case *c, struct pd_tensor *q, struct pd_tensor *k, struct pd_tensor *v,
                      const double *w, const double *w2)
{
    int scope_tok = pd_scope_begin();
    int prev = pd_no_grad_begin();
    if (c->dropout > 0) pd_manual_seed(99);
    struct pd_tensor *lse, *y = call(c, q, k, v, w2 ? &lse : NULL);
    double L = NAN;
    if (y) {
        double *o = to_f64(y), *l = w2 ? to_f64(lse) : NULL;
        L = 0;
        for (int64_t i = 0; i < pd_tensor_numel(y); i++) L += o[i] * w[i];
        for (int64_t i = 0; w2 && i < pd_tensor_numel(lse); i++) L += l[i] * w2[i];
        free(o), free(l);
    }
    pd_grad_mode_end(prev);
    pd_scope_end(scope_tok);
    return L;
}

/* Gradients in f64 (fused backward; composed with the lse) against central
 * differences of every element of q, k and v. */
static void check_fd(const struct fm_case *c, int with_lse)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *q = leaf(randn(PD_F64, c->B, c->Sq, c->Hq, c->D));
    struct pd_tensor *k = leaf(randn(PD_F64, c->B, c->Sk, c->Hk, c->D));
    struct pd_tensor *v = leaf(randn(PD_F64, c->B, c->Sk, c->Hk, c->Dv));
    struct pd_tensor *W = randn(PD_F64, c->B, c->Sq, c->Hq, c->Dv), *W2 = randn(PD_F64, 1, c->B, c->Hq, c->Sq);
    double *w = to_f64(W), *w2 = with_lse ? to_f64(W2) : NULL;
    if (c->dropout > 0) pd_manual_seed(99);
    struct pd_tensor *lse, *y = call(c, q, k, v, with_lse ? &lse : NULL), *in[3] = {q, k, v}, *g[3];
    PT_CHECK(y != NULL);
    if (!y) {
        pd_scope_end(scope_tok);
        return;
    }
    struct pd_tensor *L = pd_sum(pd_mul(y, W), NULL, 0, 0);
    if (with_lse) L = pd_add(L, pd_sum(pd_mul(lse, pd_reshape(W2, pd_tensor_shape(lse), 3)), NULL, 0, 0));
    PT_CHECK(pd_grad(&L, 1, in, 3, g, NULL) == 0);
    double eps = 1e-6;
    int64_t bad = 0;
    for (int t = 0; t < 3; t++) {
        double *x = pd_tensor_data(in[t]), *ga = to_f64(g[t]);
        for (int64_t e = 0; e < pd_tensor_numel(in[t]); e++) {
            double x0 = x[e];
            x[e] = x0 + eps;
            double lp = fd_loss(c, q, k, v, w, w2);
            x[e] = x0 - eps;
            double lm = fd_loss(c, q, k, v, w, w2), num = (lp - lm) / (2 * eps);
            x[e] = x0;
            if (!(fabs(num - ga[e]) <= 1e-6 + 1e-5 * fabs(num)) && bad++ < 3)
                printf("%s: d%c[%lld] analytic %.10g, numeric %.10g\n", c->name, "qkv"[t], (long long)e, ga[e], num);
        }
        free(ga);
    }
    PT_CHECK(bad == 0);
    free(w), free(w2);
    pd_scope_end(scope_tok);
}

static void test_finite_differences(void)
{
    int scope_tok = pd_scope_begin();
    static const int64_t docs[3] = {3, 4, 1}, docs_full[2] = {5, 4};
    struct fm_case c = {.B = 1, .Sq = 9, .Sk = 9, .Hq = 2, .Hk = 1, .D = 4, .Dv = 3, .causal = 1};
    c.idx = pd_flashmask_causal_document(9, docs, 3); /* one padding position */
    snprintf(c.name, sizeof c.name, "fd causal document with padding");
    check_fd(&c, 0);
    c.idx = pd_flashmask_causal_document(9, docs_full, 2);
    snprintf(c.name, sizeof c.name, "fd causal document, with lse");
    check_fd(&c, 1);
    c = (struct fm_case){.B = 2, .Sq = 7, .Sk = 9, .Hq = 2, .Hk = 2, .D = 5, .Dv = 4};
    c.idx = random_idx(2, 2, 7, 9, 4, 0, STYLE_WILD);
    snprintf(c.name, sizeof c.name, "fd wild C=4 7x9");
    check_fd(&c, 0);
    c = (struct fm_case){.B = 1, .Sq = 12, .Sk = 12, .Hq = 2, .Hk = 1, .D = 6, .Dv = 6};
    c.idx = pd_flashmask_global_sliding_window(12, 2, 2, 1);
    snprintf(c.name, sizeof c.name, "fd global + sliding window");
    check_fd(&c, 0);
    check_fd(&c, 1);
    c.idx = pd_flashmask_prefix_lm(12, 5);
    snprintf(c.name, sizeof c.name, "fd prefix LM, with lse");
    check_fd(&c, 1);
    c = (struct fm_case){.B = 1, .Sq = 8, .Sk = 8, .Hq = 2, .Hk = 1, .D = 4, .Dv = 4, .causal = 1, .dropout = 0.3};
    c.idx = random_idx(1, 1, 8, 8, 2, 1, STYLE_DIAG);
    snprintf(c.name, sizeof c.name, "fd dropout, causal C=2");
    check_fd(&c, 0);
    c = (struct fm_case){.B = 1, .Sq = 5, .Sk = 8, .Hq = 2, .Hk = 2, .D = 4, .Dv = 4, .causal = 1};
    snprintf(c.name, sizeof c.name, "fd causal 5x8, no indices, with lse");
    check_fd(&c, 1);
    pd_scope_end(scope_tok);
}

/* Second order: d/dk and d/dv of sum(dq * w2), dq = d/dq sum(out * w) taken
 * with create_graph, against central differences of the first-order
 * (fused) dq. */
static void test_second_order(void)
{
    int scope_tok = pd_scope_begin();
    static const int64_t docs[2] = {2, 3};
    struct fm_case c = {.B = 1, .Sq = 6, .Sk = 6, .Hq = 2, .Hk = 1, .D = 4, .Dv = 3, .causal = 1};
    c.idx = pd_flashmask_causal_document(6, docs, 2);
    struct pd_tensor *q = leaf(randn(PD_F64, 1, 6, 2, 4)), *k = leaf(randn(PD_F64, 1, 6, 1, 4));
    struct pd_tensor *v = leaf(randn(PD_F64, 1, 6, 1, 3));
    struct pd_tensor *w = randn(PD_F64, 1, 6, 2, 3), *w2 = randn(PD_F64, 1, 6, 2, 4), *dq, *g2[2], *kv[2] = {k, v};
    struct pd_tensor *L = pd_sum(pd_mul(call(&c, q, k, v, NULL), w), NULL, 0, 0);
    PT_CHECK(pd_grad(&L, 1, &q, 1, &dq, &(struct pd_grad_options){.create_graph = 1}) == 0);
    struct pd_tensor *L2 = pd_sum(pd_mul(dq, w2), NULL, 0, 0);
    PT_CHECK(pd_grad(&L2, 1, kv, 2, g2, NULL) == 0);
    double eps = 1e-6;
    for (int t = 0; t < 2; t++) {
        double *x = pd_tensor_data(kv[t]), *ga = to_f64(g2[t]);
        for (int64_t e = 0; e < pd_tensor_numel(kv[t]); e++) {
            double l[2], x0 = x[e];
            for (int s = 0; s < 2; s++) {
                x[e] = x0 + (s ? -eps : eps);
                int scope_tok2 = pd_scope_begin();
                struct pd_tensor *qq = leaf(q), *d;
                struct pd_tensor *ll = pd_sum(pd_mul(call(&c, qq, k, v, NULL), w), NULL, 0, 0);
                pd_grad(&ll, 1, &qq, 1, &d, NULL);
                l[s] = pd_item(pd_sum(pd_mul(d, w2), NULL, 0, 0));
                pd_scope_end(scope_tok2);
            }
            x[e] = x0;
            PT_NEAR(ga[e], (l[0] - l[1]) / (2 * eps), 1e-6);
        }
        free(ga);
    }
    pd_scope_end(scope_tok);
}

/* ---- errors ----------------------------------------------------------------------- */
static void expect_error(struct pd_tensor *r, const char *needle)
{
    PT_CHECK(r == NULL);
    const char *e = pd_last_error();
    int ok = e && strstr(e, "flashmask") && strstr(e, needle);
    if (!ok) printf("  expected a flashmask error mentioning '%s', got: %s\n", needle, e ? e : "(none)");
    PT_CHECK(ok);
    pd_clear_error();
}

static void test_errors(void)
{
    int scope_tok = pd_scope_begin();
    int64_t live = pd_live_tensors();
    struct pd_tensor *q = randn(PD_F32, 2, 6, 4, 8), *k = randn(PD_F32, 2, 6, 2, 8), *v = randn(PD_F32, 2, 6, 2, 8);
    int32_t z[2 * 3 * 6 * 4] = {0};
    struct pd_tensor *c2 = idx_from(z, 2, 1, 6, 2), *lse = q;
    int64_t win[2] = {1, 1}, bad_win[2] = {-1, 0}, r3[3] = {2, 6, 2};
    expect_error(pd_flashmask_attention(q, k, v, pd_cast(c2, PD_I64), 0, NULL, 0, 0, NULL), "int32");
    expect_error(pd_flashmask_attention(q, k, v, pd_from_buffer(z, r3, 3, PD_I32), 0, NULL, 0, 0, NULL), "rank 4");
    expect_error(pd_flashmask_attention(q, k, v, idx_from(z, 1, 1, 6, 2), 0, NULL, 0, 0, NULL), "B = 2");
    expect_error(pd_flashmask_attention(q, k, v, idx_from(z, 2, 1, 5, 2), 0, NULL, 0, 0, NULL), "Sk = 6");
    expect_error(pd_flashmask_attention(q, k, v, idx_from(z, 2, 3, 6, 2), 0, NULL, 0, 0, NULL), "mask heads");
    expect_error(pd_flashmask_attention(q, k, v, idx_from(z, 2, 4, 6, 2), 0, NULL, 0, 0, NULL), "mask heads");
    expect_error(pd_flashmask_attention(q, k, v, idx_from(z, 2, 1, 6, 4), 1, NULL, 0, 0, NULL), "causal masks take");
    expect_error(pd_flashmask_attention(q, k, v, idx_from(z, 2, 1, 6, 1), 0, NULL, 0, 0, NULL), "C = 1");
    expect_error(pd_flashmask_attention(q, k, v, idx_from(z, 2, 1, 6, 3), 0, NULL, 0, 0, NULL), "C = 3");
    z[7] = -1;
    expect_error(pd_flashmask_attention(q, k, v, idx_from(z, 2, 1, 6, 2), 0, NULL, 0, 0, NULL), "outside [0, Sq");
    z[7] = 7;
    expect_error(pd_flashmask_attention(q, k, v, idx_from(z, 2, 1, 6, 2), 0, NULL, 0, 0, NULL), "outside [0, Sq");
    z[7] = 0;
    expect_error(pd_flashmask_attention(q, k, v, c2, 0, win, 0, 0, NULL), "not both");
    expect_error(pd_flashmask_attention(q, k, v, NULL, 0, bad_win, 0, 0, NULL), "window");
    expect_error(pd_flashmask_attention(randn(PD_F32, 2, 6, 3, 8), k, v, NULL, 1, NULL, 0, 0, NULL),
                 "not a multiple");
    expect_error(pd_flashmask_attention(pd_cast(q, PD_F64), k, v, NULL, 1, NULL, 0, 0, NULL), "dtype");
    expect_error(pd_flashmask_attention(pd_cast(q, PD_I32), pd_cast(k, PD_I32), pd_cast(v, PD_I32), NULL, 1, NULL, 0,
                                        0, NULL),
                 "floating");
    expect_error(pd_flashmask_attention(pd_flatten(q, 2, 3), k, v, NULL, 1, NULL, 0, 0, NULL), "[B, Sq, Hq, D]");
    expect_error(pd_flashmask_attention(q, randn(PD_F32, 2, 6, 2, 4), v, NULL, 1, NULL, 0, 0, NULL), "[B, Sq, Hq, D]");
    expect_error(pd_flashmask_attention(q, k, randn(PD_F32, 2, 5, 2, 8), NULL, 1, NULL, 0, 0, NULL), "[B, Sq, Hq, D]");
    expect_error(pd_flashmask_attention(q, k, v, NULL, 1, NULL, 0, 1.0, NULL), "dropout");
    expect_error(pd_flashmask_attention(q, k, v, NULL, 1, NULL, 0, -0.1, NULL), "dropout");
    expect_error(pd_flashmask_attention(q, k, v, NULL, 1, NULL, NAN, 0, NULL), "scale");
    PT_CHECK(pd_flashmask_attention(NULL, k, v, NULL, 1, NULL, 0, 0, &lse) == NULL && lse == NULL);
    struct pd_flashmask_tiles t;
    PT_CHECK(pd_flashmask_count_tiles(idx_from(z, 2, 1, 6, 4), 1, 2, 6, 6, 4, 2, &t) != 0);
    pd_clear_error();
    pd_scope_end(scope_tok);
    PT_CHECK(pd_live_tensors() == live);

    /* outside any scope the caller gets exactly the tensors returned */
    scope_tok = pd_scope_begin();
    struct pd_tensor *qq = pd_keep(randn(PD_F32, 1, 3, 2, 4)), *kk = pd_keep(randn(PD_F32, 1, 3, 1, 4));
    pd_scope_end(scope_tok);
    live = pd_live_tensors();
    struct pd_tensor *l = NULL, *y = pd_flashmask_attention(qq, kk, kk, NULL, 1, NULL, 0, 0, &l);
    PT_CHECK(y != NULL && l != NULL && pd_live_tensors() == live + 2);
    pd_tensor_release(y);
    pd_tensor_release(l);
    pd_tensor_release(qq);
    pd_tensor_release(kk);
}

int main(void)
{
    gen = pd_generator_create(2026);
    test_families();
    test_head_dims();
    test_random_masks();
    test_equivalences();
    test_fully_masked();
    test_tiles();
    test_determinism();
    test_dropout();
    test_finite_differences();
    test_second_order();
    test_errors();
    pd_generator_destroy(gen);
    PT_DONE();
}
