/* paddle.c — FlashMask mask builders and the dense converter
 * (include/pd/flashmask.h). The recipes follow the examples of PaddlePaddle's
 * flashmask_attention docstring; docs/flashmask.md draws each mask. The
 * converter composes public ops (pdi_flashmask_dense in ops/flashmask.c).
 *
 * Each builder fills the C values of every key column j of one [1, 1, S, C]
 * int32 tensor and validates its arguments first (a NULL return with a
 * message naming the builder and the rule). Where a docstring of Paddle
 * shows a list, the builder reproduces it value for value, including the
 * choice among equivalent empty intervals (tests/test_flashmask_masks.c).
 *
 * Padding (positions after the last listed document) must be invisible in
 * both directions: its columns masked from every row, its rows seeing no
 * key. Causal C=1 families use LTS_j = j: rows >= j are cut by the
 * interval, rows < j by causality; a padding row i sees real keys only if
 * their LTS (their document's end, <= the real length <= i) exceeded i.
 * Non-causal C=2 families use LTS_j = 0 (every row) and rely on the same
 * argument for the rows. The in-context blockwise family cannot express it
 * (see pd_flashmask_causal_blockwise below) and asks for no padding.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "ops/flashmask.h"
#include "pd/flashmask.h"

/* The values of a [1, 1, S, C] int32 mask, filled on the host: each
 * builder is a host algorithm over a few ints per key column (the random
 * eviction's one included). mask_done turns them into the tensor through
 * pd_from_buffer (the empty op, then the host-write entry point), so
 * observers see the mask made and written; it frees x. */
static int32_t *new_mask(int64_t S, int64_t C)
{
    int32_t *x = pdi_malloc(sizeof *x * (size_t)(S * C > 0 ? S * C : 1));
    if (!x)
        pdi_error(PD_ERR_NOMEM, "flashmask: out of memory for a [1, 1, %lld, %lld] mask", (long long)S, (long long)C);
    return x;
}

static struct pd_tensor *mask_done(int32_t *x, int64_t S, int64_t C)
{
    struct pd_tensor *t = x ? pd_from_buffer(x, (int64_t[]){1, 1, S, C}, 4, PD_I32) : NULL;
    free(x);
    return t;
}

static int check_len(const char *fn, int64_t S)
{
    if (S < 0) return pdi_errorf(PD_ERR_INVALID, "%s: sequence length S = %lld must be >= 0", fn, (long long)S);
    if (S > INT32_MAX)
        return pdi_errorf(PD_ERR_INVALID, "%s: S = %lld does not fit the int32 row indices", fn, (long long)S);
    return PD_OK;
}

/* S >= 0 and n lengths >= 0 summing to at most S (exactly S when !pad). */
static int check_lens(const char *fn, const char *what, int64_t S, const int64_t *lens, int n, int pad)
{
    int rc = check_len(fn, S);
    if (rc) return rc;
    if (n < 0 || (n > 0 && !lens))
        return pdi_errorf(PD_ERR_INVALID, "%s: %d %s lengths%s; expected a count >= 0 and a list", fn, n, what,
                          n > 0 ? " but no list" : "");
    int64_t sum = 0;
    for (int d = 0; d < n; d++) {
        if (lens[d] < 0)
            return pdi_errorf(PD_ERR_INVALID, "%s: %s length %d is %lld; lengths must be >= 0", fn, what, d,
                              (long long)lens[d]);
        if (lens[d] > S - sum) /* sum <= S: no overflow */
            return pdi_errorf(PD_ERR_INVALID, "%s: the %s lengths sum to more than S = %lld (after %d of them)", fn,
                              what, (long long)S, d + 1);
        sum += lens[d];
    }
    if (!pad && sum != S)
        return pdi_errorf(PD_ERR_INVALID, "%s: the %s lengths sum to %lld; they must cover S = %lld exactly", fn,
                          what, (long long)sum, (long long)S);
    return PD_OK;
}

static int64_t sum_of(const int64_t *lens, int n)
{
    int64_t s = 0;
    for (int d = 0; d < n; d++) s += lens[d];
    return s;
}

struct pd_tensor *pd_flashmask_causal(int64_t S)
{
    int32_t *x;
    if (check_len("pd_flashmask_causal", S)) return NULL;
    x = new_mask(S, 1);
    for (int64_t j = 0; x && j < S; j++) x[j] = (int32_t)S;
    return mask_done(x, S, 1);
}

struct pd_tensor *pd_flashmask_sliding_window(int64_t S, int64_t left, int64_t right, int causal)
{
    if (check_len("pd_flashmask_sliding_window", S)) return NULL;
    if (left < 0 || right < 0)
        return pdi_error(PD_ERR_INVALID, "pd_flashmask_sliding_window: window (left %lld, right %lld) must be >= 0",
                         (long long)left, (long long)right);
    return pdi_flashmask_window(1, S, S, left, right, causal);
}

/* Columns of documents [s, e): lts = e; ute = s (C = 2). Padding after. */
static struct pd_tensor *documents(const char *fn, int64_t S, const int64_t *lens, int n, int causal)
{
    if (check_lens(fn, "document", S, lens, n, 1)) return NULL;
    int32_t *x;
    int64_t C = causal ? 1 : 2, s = 0;
    x = new_mask(S, C);
    if (!x) return NULL;
    for (int d = 0; d < n; s += lens[d++])
        for (int64_t j = s; j < s + lens[d]; j++) {
            x[j * C] = (int32_t)(s + lens[d]);
            if (!causal) x[j * C + 1] = (int32_t)s;
        }
    for (int64_t j = s; j < S; j++) { /* padding */
        x[j * C] = (int32_t)(causal ? j : 0);
        if (!causal) x[j * C + 1] = 0;
    }
    return mask_done(x, S, C);
}

struct pd_tensor *pd_flashmask_causal_document(int64_t S, const int64_t *doc_lens, int n_docs)
{
    return documents("pd_flashmask_causal_document", S, doc_lens, n_docs, 1);
}

struct pd_tensor *pd_flashmask_document(int64_t S, const int64_t *doc_lens, int n_docs)
{
    return documents("pd_flashmask_document", S, doc_lens, n_docs, 0);
}

struct pd_tensor *pd_flashmask_share_question(int64_t S, const int64_t *lens, int n)
{
    const char *fn = "pd_flashmask_share_question";
    if (check_lens(fn, "question/answer", S, lens, n, 1)) return NULL;
    if (n < 1) return pdi_error(PD_ERR_INVALID, "%s: n = %d; lens[0] must be the question", fn, n);
    int32_t *x;
    x = new_mask(S, 1);
    if (!x) return NULL;
    int64_t end = sum_of(lens, n), s = 0;
    for (int d = 0; d < n; s += lens[d++])
        for (int64_t j = s; j < s + lens[d]; j++)
            x[j] = (int32_t)(d == 0 ? end : s + lens[d]); /* the question: seen up to the sample's end */
    for (int64_t j = end; j < S; j++) x[j] = (int32_t)j;
    return mask_done(x, S, 1);
}

struct pd_tensor *pd_flashmask_global_sliding_window(int64_t S, int64_t global, int64_t left, int64_t right)
{
    const char *fn = "pd_flashmask_global_sliding_window";
    if (check_len(fn, S)) return NULL;
    if (global < 0 || global > S || left < 0 || right < 0)
        return pdi_error(PD_ERR_INVALID, "%s: expected 0 <= global <= S = %lld and a window >= 0, got global %lld, "
                         "window (left %lld, right %lld)",
                         fn, (long long)S, (long long)global, (long long)left, (long long)right);
    /* a side past S sees the whole sequence: clamped, j + left + 1 cannot overflow */
    left = pdi_clamp64(left, 0, S);
    right = pdi_clamp64(right, 0, S);
    int32_t *x;
    x = new_mask(S, 4);
    for (int64_t j = 0; x && j < S; j++) {
        int32_t *c = x + 4 * j;
        /* LT: rows past the window (global rows i < global <= j never are);
         * UT: non-global rows before the window, empty written as [0, 0)
         * like Paddle's docstring */
        int64_t lts = j + left + 1 < S ? j + left + 1 : S, ute = j - right;
        c[0] = (int32_t)(j < global ? S : lts);
        c[1] = (int32_t)S;
        c[2] = (int32_t)(j >= global && ute > global ? global : 0);
        c[3] = (int32_t)(j >= global && ute > global ? ute : 0);
    }
    return mask_done(x, S, 4);
}

/* Not representable with padding: a demonstration column would need the
 * rows [e_k, t) and the padding rows masked, two intervals besides the
 * causal one, while causal C=2 has one. Hence the lengths must cover S. */
struct pd_tensor *pd_flashmask_causal_blockwise(int64_t S, const int64_t *block_lens, int n_blocks)
{
    const char *fn = "pd_flashmask_causal_blockwise";
    if (check_lens(fn, "block", S, block_lens, n_blocks, 0)) return NULL;
    if (n_blocks < 1 && S > 0) return pdi_error(PD_ERR_INVALID, "%s: no blocks; the last one is the test block", fn);
    int32_t *x;
    x = new_mask(S, 2);
    if (!x) return NULL;
    int64_t test = S - (n_blocks > 0 ? block_lens[n_blocks - 1] : 0), s = 0;
    for (int d = 0; d < n_blocks; s += block_lens[d++])
        for (int64_t j = s; j < s + block_lens[d]; j++) {
            /* demonstration d hidden from the later ones, [e, test); an
             * empty interval (the test block, the last demonstration) is
             * written [S, S) like Paddle's docstring */
            int64_t e = s + block_lens[d];
            int open = d < n_blocks - 1 && e < test;
            x[2 * j] = (int32_t)(open ? e : S);
            x[2 * j + 1] = (int32_t)(open ? test : S);
        }
    return mask_done(x, S, 2);
}

struct pd_tensor *pd_flashmask_prefix_lm(int64_t S, int64_t prefix)
{
    const char *fn = "pd_flashmask_prefix_lm";
    if (check_len(fn, S)) return NULL;
    if (prefix < 0 || prefix > S)
        return pdi_error(PD_ERR_INVALID, "%s: prefix %lld must be in [0, S = %lld]", fn, (long long)prefix,
                         (long long)S);
    int64_t one = S;
    return pd_flashmask_prefix_document(S, &one, &prefix, S > 0);
}

struct pd_tensor *pd_flashmask_prefix_document(int64_t S, const int64_t *doc_lens, const int64_t *prefix_lens,
                                               int n_docs)
{
    const char *fn = "pd_flashmask_prefix_document";
    if (check_lens(fn, "document", S, doc_lens, n_docs, 1)) return NULL;
    for (int d = 0; d < n_docs; d++)
        if (!prefix_lens || prefix_lens[d] < 0 || prefix_lens[d] > doc_lens[d])
            return pdi_error(PD_ERR_INVALID, "%s: document %d has length %lld and prefix %lld; expected a prefix in "
                             "[0, length]",
                             fn, d, (long long)doc_lens[d], prefix_lens ? (long long)prefix_lens[d] : -1LL);
    int32_t *x;
    x = new_mask(S, 2);
    if (!x) return NULL;
    int64_t s = 0;
    for (int d = 0; d < n_docs; s += doc_lens[d++])
        for (int64_t j = s; j < s + doc_lens[d]; j++) {
            x[2 * j] = (int32_t)(s + doc_lens[d]);
            x[2 * j + 1] = (int32_t)(j < s + prefix_lens[d] ? s : j); /* prefix keys seen from the doc's start */
        }
    for (int64_t j = s; j < S; j++) x[2 * j] = x[2 * j + 1] = 0; /* padding */
    return mask_done(x, S, 2);
}

struct pd_tensor *pd_flashmask_qk_sparse(int64_t S, int64_t offset, int64_t len)
{
    const char *fn = "pd_flashmask_qk_sparse";
    if (check_len(fn, S)) return NULL;
    /* offset 0 would leave the rows [0, len) with no key at all */
    if (offset < 1 || len < 0 || offset > S || len > S - offset) /* offset + len <= S, without overflow */
        return pdi_error(PD_ERR_INVALID, "%s: expected offset >= 1, len >= 0 and offset + len <= S = %lld, got "
                         "offset %lld, len %lld",
                         fn, (long long)S, (long long)offset, (long long)len);
    int32_t *x;
    x = new_mask(S, 2);
    for (int64_t j = 0; x && j < S; j++) {
        int in = j >= offset && j < offset + len;
        x[2 * j] = (int32_t)(in ? j : S);
        x[2 * j + 1] = (int32_t)(in ? offset + len : S);
    }
    return mask_done(x, S, 2);
}

/* Row r (r >= start) evicts the (w_r mod c)-th of its c earlier keys not
 * yet evicted, w the Philox stream of `seed` from counter 0 (c = start, or
 * 1 when start is 0 and r > 0; row 0 has none and evicts nothing). LTS = r
 * > key keeps every diagonal visible. */
struct pd_tensor *pd_flashmask_random_eviction(int64_t S, int64_t start, uint64_t seed)
{
    const char *fn = "pd_flashmask_random_eviction";
    if (check_len(fn, S)) return NULL;
    if (start < 0) return pdi_error(PD_ERR_INVALID, "%s: start = %lld must be >= 0", fn, (long long)start);
    uint32_t *w = pdi_malloc(sizeof *w * (size_t)(S + 1));
    if (!w) return pdi_error(PD_ERR_NOMEM, "%s: out of memory for S = %lld", fn, (long long)S);
    int32_t *x;
    x = new_mask(S, 1);
    if (!x) {
        free(w);
        return NULL;
    }
    /* Host Philox words, not a random op: they steer a sequential host
     * algorithm (each pick depends on the earlier ones) and never become
     * tensor data themselves; the mask enters through mask_done. */
    pd_philox_fill(seed, 0, w, S);
    for (int64_t j = 0; j < S; j++) x[j] = (int32_t)S;
    for (int64_t r = start, gone = 0; r < S; r++) {
        if (r == gone) continue; /* no earlier key left: only row 0, when start is 0 */
        int64_t pick = (int64_t)(w[r] % (uint64_t)(r - gone++));
        for (int64_t j = 0; j < r; j++)
            if (x[j] == S && pick-- == 0) {
                x[j] = (int32_t)r;
                break;
            }
    }
    free(w);
    return mask_done(x, S, 1);
}

struct pd_tensor *pd_flashmask_to_dense(struct pd_tensor *idx, int causal, int64_t Sq)
{
    const char *fn = "pd_flashmask_to_dense";
    if (!idx) return NULL;
    if (Sq < 0) return pdi_error(PD_ERR_INVALID, "%s: Sq = %lld must be >= 0", fn, (long long)Sq);
    int r4 = idx->ndim == 4;
    /* public ops, shared with the decomposition; the inner scope frees the
     * intermediate [B, Hm, Sq, Sk] masks at once. Not an op: a distributed
     * idx is checked whole on every rank (an all-gather of the indices),
     * so every rank refuses alike, and the mask is made from its pieces. */
    int scope_tok = pd_scope_begin();
    struct pd_tensor *whole = idx->dist && pdi_dist_hooks ? pdi_dist_hooks->full(idx) : idx;
    if (!whole || pdi_flashmask_check_indices(fn, whole, causal != 0, r4 ? idx->shape[0] : 0, Sq,
                                              r4 ? idx->shape[2] : 0, r4 ? idx->shape[1] : 0)) {
        pd_scope_end(scope_tok);
        return NULL;
    }
    struct pd_tensor *d = pd_keep(pdi_flashmask_dense(idx, causal != 0, Sq));
    pd_scope_end(scope_tok);
    return d;
}
