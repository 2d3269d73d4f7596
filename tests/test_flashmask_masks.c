/* FlashMask mask builders, the dense converter and the reference kernels:
 * every builder against the lists of the examples in PaddlePaddle's
 * flashmask_attention docstring, value for value; every family's dense mask against a
 * definition written as "who sees whom" (padding included: its rows see
 * nothing, its columns are seen by nobody); random eviction's invariants;
 * the argument errors; to_dense on heads and Sq != Sk; the f64 kernels
 * (the oracle) against pd_sdpa over the dense mask, forward and gradients,
 * fully masked rows, and dropout's backward against the composed VJP. */
#include <stdlib.h>
#include <string.h>

#include "pt.h"

static int32_t *values(struct pd_tensor *t)
{
    static int32_t buf[4096];
    if (!t || pd_tensor_numel(t) > 4096) return NULL;
    pd_to_buffer(t, buf, PD_I32);
    return buf;
}

/* Column c of a [1, 1, S, C] mask equals want[0..S). */
static int column_is(struct pd_tensor *t, int c, const int *want)
{
    int32_t *x = values(t);
    if (!x) return 0;
    int64_t S = pd_tensor_dim(t, 2), C = pd_tensor_dim(t, 3);
    for (int64_t j = 0; j < S; j++)
        if (x[j * C + c] != want[j]) {
            printf("  column %d, key %lld: %d, expected %d\n", c, (long long)j, x[j * C + c], want[j]);
            return 0;
        }
    return 1;
}

static void docstring_lists(void)
{
    static const int64_t d433[3] = {4, 3, 3}, d325[3] = {3, 2, 5}, p222[3] = {2, 2, 2};
    static const int all10[10] = {10, 10, 10, 10, 10, 10, 10, 10, 10, 10};
    PT_CHECK(column_is(pd_flashmask_causal(10), 0, all10));
    PT_CHECK(column_is(pd_flashmask_sliding_window(10, 2, 0, 1), 0, (int[]){3, 4, 5, 6, 7, 8, 9, 10, 10, 10}));
    struct pd_tensor *bw = pd_flashmask_sliding_window(10, 1, 2, 0);
    PT_CHECK(column_is(bw, 0, (int[]){2, 3, 4, 5, 6, 7, 8, 9, 10, 10}));
    PT_CHECK(column_is(bw, 1, (int[]){0, 0, 0, 1, 2, 3, 4, 5, 6, 7}));
    PT_CHECK(column_is(pd_flashmask_causal_document(10, d433, 3), 0, (int[]){4, 4, 4, 4, 7, 7, 7, 10, 10, 10}));
    struct pd_tensor *doc = pd_flashmask_document(10, d433, 3);
    PT_CHECK(column_is(doc, 0, (int[]){4, 4, 4, 4, 7, 7, 7, 10, 10, 10}));
    PT_CHECK(column_is(doc, 1, (int[]){0, 0, 0, 0, 4, 4, 4, 7, 7, 7}));
    PT_CHECK(column_is(pd_flashmask_share_question(10, d433, 3), 0, (int[]){10, 10, 10, 10, 7, 7, 7, 10, 10, 10}));
    struct pd_tensor *g = pd_flashmask_global_sliding_window(10, 2, 1, 1);
    PT_CHECK(column_is(g, 0, (int[]){10, 10, 4, 5, 6, 7, 8, 9, 10, 10}));
    PT_CHECK(column_is(g, 1, all10));
    PT_CHECK(column_is(g, 2, (int[]){0, 0, 0, 0, 2, 2, 2, 2, 2, 2}));
    PT_CHECK(column_is(g, 3, (int[]){0, 0, 0, 0, 3, 4, 5, 6, 7, 8}));
    struct pd_tensor *cb = pd_flashmask_causal_blockwise(10, d433, 3);
    PT_CHECK(column_is(cb, 0, (int[]){4, 4, 4, 4, 10, 10, 10, 10, 10, 10}));
    PT_CHECK(column_is(cb, 1, (int[]){7, 7, 7, 7, 10, 10, 10, 10, 10, 10}));
    struct pd_tensor *pl = pd_flashmask_prefix_lm(10, 5);
    PT_CHECK(column_is(pl, 0, all10));
    PT_CHECK(column_is(pl, 1, (int[]){0, 0, 0, 0, 0, 5, 6, 7, 8, 9}));
    struct pd_tensor *pdoc = pd_flashmask_prefix_document(10, d325, p222, 3);
    PT_CHECK(column_is(pdoc, 0, (int[]){3, 3, 3, 5, 5, 10, 10, 10, 10, 10}));
    PT_CHECK(column_is(pdoc, 1, (int[]){0, 0, 2, 3, 3, 5, 5, 7, 8, 9}));
    struct pd_tensor *qk = pd_flashmask_qk_sparse(10, 3, 4);
    PT_CHECK(column_is(qk, 0, (int[]){10, 10, 10, 3, 4, 5, 6, 10, 10, 10}));
    PT_CHECK(column_is(qk, 1, (int[]){10, 10, 10, 7, 7, 7, 7, 10, 10, 10}));
}

/* ---- dense masks against "who sees whom" ------------------------------ */
enum { S = 16 };
static const int64_t docs[3] = {5, 4, 4}; /* + 3 padding positions */
static int doc_of(int64_t j) { return j < 5 ? 0 : j < 9 ? 1 : j < 13 ? 2 : -1; }
static int64_t doc_start(int d) { return d == 0 ? 0 : d == 1 ? 5 : 9; }

static int see_causal_doc(int64_t i, int64_t j) { return doc_of(i) >= 0 && doc_of(i) == doc_of(j) && j <= i; }
static int see_doc(int64_t i, int64_t j) { return doc_of(i) >= 0 && doc_of(i) == doc_of(j); }
/* question 5, answers 4 and 4, padding 3 */
static int see_share(int64_t i, int64_t j)
{
    return doc_of(i) >= 0 && doc_of(j) >= 0 && j <= i && (doc_of(j) == 0 || doc_of(j) == doc_of(i));
}
static int see_window(int64_t i, int64_t j) { return j >= i - 3 && j <= i + 2; }
static int see_causal_window(int64_t i, int64_t j) { return j >= i - 3 && j <= i; }
static int see_global(int64_t i, int64_t j) { return i < 2 || j < 2 || (j >= i - 2 && j <= i + 1); }
/* demonstrations 5, 4 then the test block of 7 */
static int see_blockwise(int64_t i, int64_t j)
{
    int bi = i < 5 ? 0 : i < 9 ? 1 : 2, bj = j < 5 ? 0 : j < 9 ? 1 : 2;
    return j <= i && (bi == bj || bi == 2);
}
static int see_prefix(int64_t i, int64_t j) { return j <= i || j < 6; }
/* prefixes 2, 0, 3 */
static int see_prefix_doc(int64_t i, int64_t j)
{
    static const int64_t pre[3] = {2, 0, 3};
    int d = doc_of(i);
    return d >= 0 && d == doc_of(j) && (j <= i || j < doc_start(d) + pre[d]);
}
/* offset 4, len 5 */
static int see_qk(int64_t i, int64_t j) { return j <= i && !(i >= 4 && i < 9 && j >= 4); }

static void dense_is(struct pd_tensor *idx, int causal, int (*see)(int64_t, int64_t), const char *name)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *d = pd_flashmask_to_dense(idx, causal, S);
    PT_CHECK(d && pd_tensor_dtype(d) == PD_BOOL && pd_tensor_dim(d, 2) == S && pd_tensor_dim(d, 3) == S);
    if (d) {
        uint8_t m[S * S];
        pd_to_buffer(d, m, PD_BOOL);
        int bad = 0;
        for (int64_t i = 0; i < S; i++)
            for (int64_t j = 0; j < S; j++)
                if (!m[i * S + j] != !see(i, j) && !bad++)
                    printf("  %s: query %lld key %lld is %d\n", name, (long long)i, (long long)j, m[i * S + j]);
        PT_CHECK(bad == 0);
    }
    pd_scope_end(scope_tok);
}

static void dense_families(void)
{
    static const int64_t pre[3] = {2, 0, 3}, blocks[3] = {5, 4, 7};
    dense_is(pd_flashmask_causal_document(S, docs, 3), 1, see_causal_doc, "causal_document");
    dense_is(pd_flashmask_document(S, docs, 3), 0, see_doc, "document");
    dense_is(pd_flashmask_share_question(S, docs, 3), 1, see_share, "share_question");
    dense_is(pd_flashmask_sliding_window(S, 3, 2, 0), 0, see_window, "sliding_window");
    dense_is(pd_flashmask_sliding_window(S, 3, 2, 1), 1, see_causal_window, "sliding_window causal");
    dense_is(pd_flashmask_global_sliding_window(S, 2, 2, 1), 0, see_global, "global_sliding_window");
    dense_is(pd_flashmask_causal_blockwise(S, blocks, 3), 1, see_blockwise, "causal_blockwise");
    dense_is(pd_flashmask_prefix_lm(S, 6), 0, see_prefix, "prefix_lm");
    dense_is(pd_flashmask_prefix_document(S, docs, pre, 3), 0, see_prefix_doc, "prefix_document");
    dense_is(pd_flashmask_qk_sparse(S, 4, 5), 1, see_qk, "qk_sparse");
}

static void eviction(void)
{
    int scope_tok = pd_scope_begin();
    int64_t n = 64, start = 8;
    struct pd_tensor *a = pd_flashmask_random_eviction(n, start, 7), *b = pd_flashmask_random_eviction(n, start, 7);
    struct pd_tensor *c = pd_flashmask_random_eviction(n, start, 8);
    int32_t xa[64], xb[64], xc[64];
    PT_CHECK(a && b && c && !pd_to_buffer(a, xa, PD_I32) && !pd_to_buffer(b, xb, PD_I32) &&
             !pd_to_buffer(c, xc, PD_I32));
    PT_CHECK(memcmp(xa, xb, sizeof xa) == 0); /* the seed decides */
    PT_CHECK(memcmp(xa, xc, sizeof xa) != 0);
    struct pd_tensor *d = pd_flashmask_to_dense(a, 1, n);
    uint8_t m[64 * 64];
    PT_CHECK(d && !pd_to_buffer(d, m, PD_BOOL));
    int bad = 0, evicted_per_row[64] = {0};
    for (int64_t j = 0; j < n; j++)
        if (xa[j] < n) evicted_per_row[xa[j]]++, bad += xa[j] <= j; /* one key per row, always an earlier one */
    for (int64_t i = 0; i < n; i++) {
        int64_t seen = 0;
        for (int64_t j = 0; j < n; j++) seen += m[i * n + j];
        bad += !m[i * n + i];                                  /* the diagonal stays */
        bad += seen != (i < start ? i + 1 : start);            /* row r >= start sees `start` keys */
        bad += evicted_per_row[i] != (i >= start);
    }
    PT_CHECK(bad == 0);
    /* start 0: row 0 has nothing to evict, every later row keeps one key: its own */
    struct pd_tensor *z = pd_flashmask_to_dense(pd_flashmask_random_eviction(8, 0, 3), 1, 8);
    struct pd_tensor *eye = pd_eye(8, 8, PD_BOOL);
    PT_CHECK(z && pd_item(pd_sum(z, NULL, 0, 0)) == 8 && pd_item(pd_sum(pd_mul(z, eye), NULL, 0, 0)) == 8);
    pd_scope_end(scope_tok);
}

static void errors(void)
{
    static const int64_t neg[2] = {3, -1}, big[2] = {8, 9}, short2[2] = {4, 4}, pre_big[2] = {5, 0};
    int scope_tok = pd_scope_begin();
    PT_CHECK(!pd_flashmask_causal(-1) && strstr(pd_last_error(), "pd_flashmask_causal"));
    PT_CHECK(!pd_flashmask_causal_document(16, neg, 2) && strstr(pd_last_error(), ">= 0"));
    PT_CHECK(!pd_flashmask_document(16, big, 2) && strstr(pd_last_error(), "sum to more than S"));
    PT_CHECK(!pd_flashmask_document(16, NULL, 2));
    PT_CHECK(!pd_flashmask_sliding_window(16, -1, 0, 1) && strstr(pd_last_error(), "window"));
    PT_CHECK(!pd_flashmask_global_sliding_window(16, 17, 1, 1));
    PT_CHECK(!pd_flashmask_share_question(16, NULL, 0));
    PT_CHECK(!pd_flashmask_causal_blockwise(16, short2, 2) && strstr(pd_last_error(), "exactly"));
    PT_CHECK(!pd_flashmask_prefix_lm(16, 17));
    PT_CHECK(!pd_flashmask_prefix_document(16, short2, pre_big, 2) && strstr(pd_last_error(), "prefix"));
    PT_CHECK(!pd_flashmask_qk_sparse(16, 0, 4) && strstr(pd_last_error(), "offset >= 1"));
    PT_CHECK(!pd_flashmask_qk_sparse(16, 14, 4));
    PT_CHECK(!pd_flashmask_random_eviction(16, -1, 1));
    struct pd_tensor *c1 = pd_flashmask_causal(8);
    PT_CHECK(!pd_flashmask_to_dense(c1, 0, 8) && strstr(pd_last_error(), "C = 1")); /* C=1 is causal only */
    PT_CHECK(!pd_flashmask_to_dense(c1, 1, 7) && strstr(pd_last_error(), "outside")); /* 8 > Sq */
    PT_CHECK(!pd_flashmask_to_dense(pd_cast(c1, PD_I64), 1, 8) && strstr(pd_last_error(), "int32"));
    PT_CHECK(!pd_flashmask_to_dense(pd_reshape(c1, (int64_t[]){8, 1}, 2), 1, 8) && strstr(pd_last_error(), "rank"));
    PT_CHECK(!pd_flashmask_to_dense(NULL, 1, 8));
    pd_scope_end(scope_tok);
}

/* Two mask heads and a batch of 2; Sq != Sk (bottom-right causal). */
static void dense_shapes(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *h[2] = {pd_flashmask_causal_document(S, docs, 3), pd_flashmask_causal(S)};
    struct pd_tensor *heads = pd_concat(h, 2, 1), *two[2] = {heads, heads};
    struct pd_tensor *d = pd_flashmask_to_dense(pd_concat(two, 2, 0), 1, S);
    PT_CHECK(d && pd_tensor_dim(d, 0) == 2 && pd_tensor_dim(d, 1) == 2);
    PT_CHECK(d && pd_get(d, (int64_t[]){1, 0, 7, 2}) == 0 && pd_get(d, (int64_t[]){1, 1, 7, 2}) == 1);
    /* Sk = 4 keys, Sq = 6 rows: query i sees key j <= i - 2 */
    struct pd_tensor *r = pd_flashmask_to_dense(pd_full((int64_t[]){1, 1, 4, 1}, 4, 6, PD_I32), 1, 6);
    int bad = !r;
    for (int64_t i = 0; r && i < 6; i++)
        for (int64_t j = 0; j < 4; j++) bad += pd_get(r, (int64_t[]){0, 0, i, j}) != (j <= i - 2);
    PT_CHECK(bad == 0);
    pd_scope_end(scope_tok);
}

/* ---- the reference kernels (f64 runs them on the CPU backend) ---------- */
static double max_diff(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b || pd_tensor_numel(a) != pd_tensor_numel(b)) return INFINITY;
    int64_t n = pd_tensor_numel(a);
    double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n), m = 0;
    pd_to_buffer(a, x, PD_F64);
    pd_to_buffer(b, y, PD_F64);
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(x[i] - y[i]));
    free(x), free(y);
    return m;
}

/* flashmask (GQA: Hq 4, Hk 2, per-head masks) against pd_sdpa on the
 * dense mask, out and gradients; rows 13..15 are padding (out 0, lse -inf,
 * dq 0). */
static void reference_kernels(void)
{
    int scope_tok = pd_scope_begin();
    int64_t B = 1, Hq = 4, Hk = 2, D = 8;
    struct pd_tensor *q = pd_requires_grad_(pd_randn((int64_t[]){B, S, Hq, D}, 4, PD_F64, NULL), 1);
    struct pd_tensor *k = pd_requires_grad_(pd_randn((int64_t[]){B, S, Hk, D}, 4, PD_F64, NULL), 1);
    struct pd_tensor *v = pd_requires_grad_(pd_randn((int64_t[]){B, S, Hk, D}, 4, PD_F64, NULL), 1);
    struct pd_tensor *w = pd_randn((int64_t[]){B, S, Hq, D}, 4, PD_F64, NULL);
    struct pd_tensor *h[2] = {pd_flashmask_causal_document(S, docs, 3), pd_flashmask_sliding_window(S, 3, 0, 1)};
    struct pd_tensor *idx = pd_concat(h, 2, 1), *lse = NULL;
    struct pd_tensor *out = pd_flashmask_attention(q, k, v, idx, 1, NULL, 0, 0, &lse);
    PT_CHECK(out && lse);
    /* query head h uses mask head h / 2: the dense mask repeated per group */
    struct pd_tensor *dense = pd_flashmask_to_dense(idx, 1, S), *hd[4];
    for (int i = 0; i < 4; i++) hd[i] = pd_slice(dense, 1, i / 2, i / 2 + 1, 1);
    struct pd_tensor *mask = pd_concat(hd, 4, 1);
    struct pd_tensor *kr = pd_transpose(k, 1, 2), *vr = pd_transpose(v, 1, 2);
    struct pd_tensor *ref = pd_transpose(pd_sdpa(pd_transpose(q, 1, 2), kr, vr, mask, 0, 0), 1, 2);
    PT_CHECK(max_diff(out, ref) < 1e-12);
    PT_CHECK(pd_get(lse, (int64_t[]){0, 0, 14}) == -INFINITY && pd_get(lse, (int64_t[]){0, 2, 14}) > -INFINITY);
    PT_CHECK(pd_get(out, (int64_t[]){0, 14, 0, 3}) == 0);
    /* gradients: the fused backward (no lse handed out) against sdpa's */
    struct pd_tensor *o2 = pd_flashmask_attention(q, k, v, idx, 1, NULL, 0, 0, NULL);
    PT_CHECK(!pd_backward(pd_sum(pd_mul(o2, w), NULL, 0, 0), NULL, 0));
    struct pd_tensor *g1[3] = {pd_clone(pd_tensor_grad(q)), pd_clone(pd_tensor_grad(k)), pd_clone(pd_tensor_grad(v))};
    pd_tensor_zero_grad(q), pd_tensor_zero_grad(k), pd_tensor_zero_grad(v);
    PT_CHECK(!pd_backward(pd_sum(pd_mul(ref, w), NULL, 0, 0), NULL, 0));
    PT_CHECK(max_diff(g1[0], pd_tensor_grad(q)) < 1e-12);
    PT_CHECK(max_diff(g1[1], pd_tensor_grad(k)) < 1e-12);
    PT_CHECK(max_diff(g1[2], pd_tensor_grad(v)) < 1e-12);
    PT_CHECK(pd_get(g1[0], (int64_t[]){0, 14, 0, 1}) == 0);
    pd_tensor_zero_grad(q), pd_tensor_zero_grad(k), pd_tensor_zero_grad(v);

    /* dropout: the fused backward against the composed VJP (taken when the
     * lse is handed out), both replaying the forward's Philox counters */
    struct pd_generator *gen = pd_default_generator();
    uint64_t seed, off;
    pd_generator_get_state(gen, &seed, &off);
    struct pd_tensor *od = pd_flashmask_attention(q, k, v, idx, 1, NULL, 0, 0.3, NULL);
    PT_CHECK(od && max_diff(od, out) > 1e-3); /* some weights dropped */
    PT_CHECK(!pd_backward(pd_sum(pd_mul(od, w), NULL, 0, 0), NULL, 0));
    struct pd_tensor *g2[3] = {pd_clone(pd_tensor_grad(q)), pd_clone(pd_tensor_grad(k)), pd_clone(pd_tensor_grad(v))};
    pd_tensor_zero_grad(q), pd_tensor_zero_grad(k), pd_tensor_zero_grad(v);
    pd_generator_set_state(gen, seed, off);
    struct pd_tensor *l2 = NULL, *oc = pd_flashmask_attention(q, k, v, idx, 1, NULL, 0, 0.3, &l2);
    PT_CHECK(max_diff(od, oc) == 0 && max_diff(l2, lse) < 1e-12); /* same mask; lse of the undropped softmax */
    PT_CHECK(!pd_backward(pd_sum(pd_mul(oc, w), NULL, 0, 0), NULL, 0));
    PT_CHECK(max_diff(g2[0], pd_tensor_grad(q)) < 1e-12);
    PT_CHECK(max_diff(g2[1], pd_tensor_grad(k)) < 1e-12);
    PT_CHECK(max_diff(g2[2], pd_tensor_grad(v)) < 1e-12);
    pd_scope_end(scope_tok);
}

int main(void)
{
    int scope_tok = pd_scope_begin(); /* the builders' tensors of the first two */
    docstring_lists();
    dense_families();
    pd_scope_end(scope_tok);
    eviction();
    errors();
    dense_shapes();
    reference_kernels();
    PT_DONE();
}
