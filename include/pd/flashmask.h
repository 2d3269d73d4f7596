/* paddle.c — FlashMask attention: column-wise sparse attention masks.
 *
 * A FlashMask mask is O(N) integers per head instead of an N x N matrix:
 * for each KEY position j, one row of C int32 values gives the half-open
 * ranges of QUERY rows that may not see key j. Rows are query positions
 * i in [0, Sq), columns key positions j in [0, Sk).
 *
 *   causal  C  columns               rows masked in column j
 *   yes     1  LTS                   [LTS_j, Sq)            + causal
 *   yes     2  LTS, LTE              [LTS_j, LTE_j)         + causal
 *   no      2  LTS, UTE              [LTS_j, Sq) u [0, UTE_j)
 *   no      4  LTS, LTE, UTS, UTE    [LTS_j, LTE_j) u [UTS_j, UTE_j)
 *
 * causal masks key j from query i when j > i + (Sk - Sq) (bottom-right
 * alignment: the last query sees every key). Values lie in [0, Sq]
 * (anything else is rejected); an interval with end <= start is empty.
 * Rows that see no key give output 0 and log-sum-exp -inf; they add
 * nothing to any gradient (dq of the row is 0).
 *
 * Layout: q [B, Sq, Hq, D], k [B, Sk, Hk, D], v [B, Sk, Hk, Dv] (Hq a
 * multiple of Hk: grouped-query heads), startend_row_indices int32
 * [B, Hm, Sk, C] with Hm = 1 (one mask for all heads) or Hm = Hk (query
 * head h uses mask head h / (Hq / Hk)). Output [B, Sq, Hq, Dv]; the
 * log-sum-exp, when asked for, is [B, Hq, Sq] (f32; f64 for f64 inputs).
 * Inputs f32, bf16, f16 (computed with f32 accumulation) or f64 (the
 * reference kernel).
 */
#ifndef PD_FLASHMASK_H
#define PD_FLASHMASK_H

#include <stdint.h>

#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = softmax(scale q k^T + M) v with M = -inf where masked.
 *   startend_row_indices  the mask, or NULL for none (then `causal` alone,
 *                         or `window`);
 *   causal                adds the causal mask and selects the meaning of
 *                         the columns (table above);
 *   window                NULL, or {left, right}: query i sees keys
 *                         [i' - left, i' + right] with i' = i + Sk - Sq
 *                         (right is ignored when causal). Converted to
 *                         indices; an error together with
 *                         startend_row_indices;
 *   scale                 <= 0 for 1/sqrt(D);
 *   dropout               probability in [0, 1) of zeroing an attention
 *                         weight (the rest scaled by 1/(1-p)); the mask is
 *                         drawn from the default generator's counter, so
 *                         the same seed reproduces it, and the backward
 *                         regenerates it. 0 outside training;
 *   lse                   NULL, or receives the log-sum-exp [B, Hq, Sq].
 * Differentiable in q, k and v (to any order: with create_graph the VJP
 * composes public ops over the dense mask). */
struct pd_tensor *pd_flashmask_attention(struct pd_tensor *q, struct pd_tensor *k, struct pd_tensor *v,
                                         struct pd_tensor *startend_row_indices, int causal, const int64_t *window,
                                         double scale, double dropout, struct pd_tensor **lse);

/* ---- mask builders ------------------------------------------------------
 * Each returns int32 [1, 1, S, C] for S = Sq = Sk (expand or concatenate
 * along dim 0 for a batch, along dim 1 for per-head masks), and is used
 * with the causal flag named in its comment. Document lists are lengths
 * in order; positions after the last document are padding: their columns
 * are masked from every row and their rows see nothing (padding rows give
 * output 0). */

/* causal=1, C=1: plain causal (LTS_j = S); the same as no indices. */
struct pd_tensor *pd_flashmask_causal(int64_t S);
/* Query i sees keys [i - left, i + right]. causal=1: C=1 (right unused);
 * causal=0: C=2. */
struct pd_tensor *pd_flashmask_sliding_window(int64_t S, int64_t left, int64_t right, int causal);
/* causal=1, C=1: packed documents, causal inside each, none across. */
struct pd_tensor *pd_flashmask_causal_document(int64_t S, const int64_t *doc_lens, int n_docs);
/* causal=0, C=2: packed documents, bidirectional inside each. */
struct pd_tensor *pd_flashmask_document(int64_t S, const int64_t *doc_lens, int n_docs);
/* causal=1, C=1: samples of one question followed by answers that all see
 * the question but not each other (DPO / reward models). lens[0] is the
 * question, lens[1..n-1] the answers of one sample. */
struct pd_tensor *pd_flashmask_share_question(int64_t S, const int64_t *lens, int n);
/* causal=0, C=4: the first `global` tokens see and are seen by all; the
 * others see a window [i - left, i + right] (BigBird-like). */
struct pd_tensor *pd_flashmask_global_sliding_window(int64_t S, int64_t global, int64_t left, int64_t right);
/* causal=1, C=2: demonstration blocks lens[0..n-2] (each causal, unseen by
 * later demonstrations) and a final test block lens[n-1] that sees them
 * all (in-context learning). The lengths must sum to S (no padding: it
 * would need a second masked interval per column). */
struct pd_tensor *pd_flashmask_causal_blockwise(int64_t S, const int64_t *block_lens, int n_blocks);
/* causal=0, C=2: a bidirectional prefix of `prefix` tokens, causal after. */
struct pd_tensor *pd_flashmask_prefix_lm(int64_t S, int64_t prefix);
/* causal=0, C=2: packed documents, each a bidirectional prefix of
 * prefix_lens[d] tokens then causal; none across documents. */
struct pd_tensor *pd_flashmask_prefix_document(int64_t S, const int64_t *doc_lens, const int64_t *prefix_lens,
                                               int n_docs);
/* causal=1, C=2: queries in [offset, offset + len) see only the keys
 * before offset; the keys of the segment are seen again by the queries
 * from offset + len on (Reformer-style QK sparsity). offset >= 1. */
struct pd_tensor *pd_flashmask_qk_sparse(int64_t S, int64_t offset, int64_t len);
/* causal=1, C=1: from query row `start` on, each row evicts one earlier key
 * chosen by the seeded generator (never the row's own key). start >= 0. */
struct pd_tensor *pd_flashmask_random_eviction(int64_t S, int64_t start, uint64_t seed);

/* The dense mask: bool [B, Hm, Sq, Sk], true where query i may attend to
 * key j (causal included). For tests and pictures; O(Sq Sk) memory. */
struct pd_tensor *pd_flashmask_to_dense(struct pd_tensor *startend_row_indices, int causal, int64_t Sq);

/* ---- tiles --------------------------------------------------------------
 * The kernel cuts each (batch, query head) score matrix in tiles of
 * rows x cols (query x key positions; the last ones ragged) and classes
 * each tile from the indices: skipped (every element masked: not
 * computed), partial (some masked: element masks applied) or full (none
 * masked: no mask work). */
struct pd_flashmask_tiles {
    int64_t rows, cols;                /* tile size */
    int64_t skipped, partial, full;    /* counts over B x Hq x tiles */
};
/* The kernel's tile size. */
void pd_flashmask_tile_size(int64_t *rows, int64_t *cols);
/* Counts the kernel's forward will see for this mask and these shapes
 * (Hq query heads, Hk key heads), without running it. 0 or a status. */
int pd_flashmask_count_tiles(struct pd_tensor *startend_row_indices, int causal, int64_t B, int64_t Sq,
                             int64_t Sk, int64_t Hq, int64_t Hk, struct pd_flashmask_tiles *out);
/* Counts of the last forward run on the calling thread. */
struct pd_flashmask_tiles pd_flashmask_last_tiles(void);
/* Tile skipping on (default) or off: off, every tile is computed as a
 * partial one (element masks everywhere), which must give bit-identical
 * results. Returns the previous setting. Process-wide. */
int pd_flashmask_set_tile_skipping(int on);

#ifdef __cplusplus
}
#endif

#endif
