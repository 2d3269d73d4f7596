/* paddle.c — op test rows: FlashMask attention (flashmask,
 * flashmask_backward).
 *
 * flashmask rows go through pd_flashmask_attention, q [B, Sq, Hq, D],
 * k [B, Sk, Hk, D], v [B, Sk, Hk, Dv]. The mask indices are the harness's
 * int32 inputs with values uniform in [0, Sq] (every such tensor is a valid
 * mask: random intervals, empty ones, masked diagonals, rows that see
 * nothing) or, for the structured masks, built inside the row from a mask
 * builder. Covered: no mask (plain, causal, causal with Sq > Sk: leading rows
 * see nothing), each (causal, C) mode, a document mask, per-head masks
 * (Hm = Hk) and grouped-query heads, Sq != Sk both ways, windows, a given
 * scale, seeded dropout, Dv != D, single positions, zero-size batches, the
 * log-sum-exp (alone, and with out: its gradient takes the composed VJP),
 * and forward shapes past one kernel tile (S = 150, D = 40). flashmask rows
 * are gradchecked in f64 through the fused backward; flashmask_backward rows
 * compare the CPU backward (dq, dk, dv) with the reference one.
 */
#include <math.h>

#include "ops/harness.h"
#include "pd/flashmask.h"

#define FL OPT_DT_FLOW
#define BIG 1
#define Q(...) OPT_F(__VA_ARGS__)
/* mask indices: int32 uniform in [0, sq] */
#define IDX(sq, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FIXED, .lo = 0, .hi = (sq) + 1, .dtype = PD_I32, .no_grad = 1}

/* Seed of the rows with dropout: reset before each call so that the CPU
 * run, the reference run and every finite-difference evaluation draw the
 * same mask. */
#define DROP_SEED 1234

static struct pd_tensor *attn(struct pd_tensor **in, struct pd_tensor *idx, int causal, const int64_t *window,
                              double scale, double dropout, struct pd_tensor **lse)
{
    if (dropout > 0) pd_manual_seed(DROP_SEED);
    return pd_flashmask_attention(in[0], in[1], in[2], idx, causal, window, scale, dropout, lse);
}

/* A builder's [1, 1, S, C] repeated over the batch of q. */
static struct pd_tensor *over_batch(struct pd_tensor *m, struct pd_tensor *q)
{
    if (!m) return NULL;
    int64_t s[4] = {pd_tensor_dim(q, 0), 1, pd_tensor_dim(m, 2), pd_tensor_dim(m, 3)};
    return pd_contiguous(pd_expand(m, s, 4));
}

static struct pd_tensor *causal_doc(struct pd_tensor *q)
{
    static const int64_t lens[3] = {3, 5, 2}; /* S = 12: two padding positions */
    int64_t S = pd_tensor_dim(q, 1);
    int64_t big[3] = {S / 3, S / 2, S / 8};
    return over_batch(pd_flashmask_causal_document(S, S > 12 ? big : lens, 3), q);
}

static const int64_t win_2_1[2] = {2, 1}, win_3_0[2] = {3, 0};

static struct pd_tensor *f_plain(struct pd_tensor **in) { return attn(in, NULL, 0, NULL, 0, 0, NULL); }
static struct pd_tensor *f_causal(struct pd_tensor **in) { return attn(in, NULL, 1, NULL, 0, 0, NULL); }
static struct pd_tensor *f_idx(struct pd_tensor **in) { return attn(in, in[3], 0, NULL, 0, 0, NULL); }
static struct pd_tensor *f_idx_causal(struct pd_tensor **in) { return attn(in, in[3], 1, NULL, 0, 0, NULL); }
static struct pd_tensor *f_idx_scale(struct pd_tensor **in) { return attn(in, in[3], 0, NULL, 0.7, 0, NULL); }
static struct pd_tensor *f_doc(struct pd_tensor **in) { return attn(in, causal_doc(in[0]), 1, NULL, 0, 0, NULL); }
static struct pd_tensor *f_window(struct pd_tensor **in) { return attn(in, NULL, 0, win_2_1, 0, 0, NULL); }
static struct pd_tensor *f_window_causal(struct pd_tensor **in) { return attn(in, NULL, 1, win_3_0, 0, 0, NULL); }
static struct pd_tensor *f_dropout(struct pd_tensor **in) { return attn(in, in[3], 1, NULL, 0, 0.25, NULL); }
static struct pd_tensor *f_dropout_plain(struct pd_tensor **in) { return attn(in, NULL, 0, NULL, 0, 0.4, NULL); }

static struct pd_tensor *lse_of(struct pd_tensor **in, struct pd_tensor *idx, int causal)
{
    struct pd_tensor *lse;
    return attn(in, idx, causal, NULL, 0, 0, &lse) ? lse : NULL;
}
static struct pd_tensor *f_lse_idx(struct pd_tensor **in) { return lse_of(in, in[3], 0); }
static struct pd_tensor *f_lse_idx_causal(struct pd_tensor **in) { return lse_of(in, in[3], 1); }

/* out and lse flattened into one vector: with the log-sum-exp returned the
 * VJP composes public ops and honours the log-sum-exp's gradient. The mask
 * leaves every row a key (a causal document mask without padding). */
static struct pd_tensor *f_out_lse(struct pd_tensor **in)
{
    static const int64_t lens[2] = {4, 3};
    struct pd_tensor *lse, *idx = over_batch(pd_flashmask_causal_document(pd_tensor_dim(in[0], 1), lens, 2), in[0]);
    struct pd_tensor *out = attn(in, idx, 1, NULL, 0, 0, &lse);
    if (!out) return NULL;
    struct pd_tensor *flat[2] = {pd_flatten(out, 0, -1), pd_flatten(lse, 0, -1)};
    return pd_concat(flat, 2, 0);
}

/* flashmask then flashmask_backward through the op table, with the last
 * input as dout; returns dq, dk, dv flattened and concatenated. */
static struct pd_tensor *backward_of(struct pd_tensor **in, int has_idx, int causal, double dropout)
{
    struct pd_tensor *fin[4] = {in[0], in[1], in[2], has_idx ? in[3] : NULL}, *out[2];
    struct pdi_call c = {.op = PD_OP_flashmask, .n_in = 3 + has_idx, .n_out = 2, .in = fin, .out = out};
    c.a.flashmask = (struct pdi_attrs_flashmask){.causal = causal,
                                                 .scale = 1.0 / sqrt((double)pd_tensor_dim(in[0], 3)),
                                                 .has_idx = has_idx,
                                                 .dropout_p = dropout,
                                                 .dropout_seed = DROP_SEED,
                                                 .dropout_offset = 4096};
    if (pdi_dispatch(&c)) return NULL;
    return opt_attention_backward(PD_OP_flashmask_backward, in, has_idx, out, &c.a);
}
static struct pd_tensor *f_bwd(struct pd_tensor **in) { return backward_of(in, 0, 0, 0); }
static struct pd_tensor *f_bwd_causal(struct pd_tensor **in) { return backward_of(in, 0, 1, 0); }
static struct pd_tensor *f_bwd_idx(struct pd_tensor **in) { return backward_of(in, 1, 0, 0); }
static struct pd_tensor *f_bwd_idx_causal(struct pd_tensor **in) { return backward_of(in, 1, 1, 0); }
static struct pd_tensor *f_bwd_dropout(struct pd_tensor **in) { return backward_of(in, 1, 1, 0.3); }

static const struct opt_row rows[] = {
    /* flashmask: q [B, Sq, Hq, D], k [B, Sk, Hk, D], v [B, Sk, Hk, Dv], [idx [B, Hm, Sk, C]] */
    {"flashmask/plain", PD_OP_flashmask, 3, {Q(2, 5, 2, 4), Q(2, 7, 2, 4), Q(2, 7, 2, 4)}, f_plain, FL},
    {"flashmask/causal", PD_OP_flashmask, 3, {Q(2, 6, 2, 4), Q(2, 6, 2, 4), Q(2, 6, 2, 4)}, f_causal, FL},
    {"flashmask/causal_sq_gt_sk", PD_OP_flashmask, 3, {Q(1, 7, 2, 4), Q(1, 4, 2, 4), Q(1, 4, 2, 4)}, f_causal, FL},
    {"flashmask/causal_sq_lt_sk", PD_OP_flashmask, 3, {Q(1, 3, 2, 4), Q(1, 8, 2, 4), Q(1, 8, 2, 4)}, f_causal, FL},
    {"flashmask/causal_c1", PD_OP_flashmask, 4, {Q(2, 6, 2, 4), Q(2, 6, 2, 4), Q(2, 6, 2, 4), IDX(6, 2, 1, 6, 1)},
     f_idx_causal, FL},
    {"flashmask/causal_c1_document", PD_OP_flashmask, 3, {Q(2, 12, 2, 4), Q(2, 12, 2, 4), Q(2, 12, 2, 4)}, f_doc,
     FL},
    {"flashmask/causal_c2", PD_OP_flashmask, 4, {Q(2, 6, 2, 4), Q(2, 6, 2, 4), Q(2, 6, 2, 4), IDX(6, 2, 1, 6, 2)},
     f_idx_causal, FL},
    {"flashmask/c2", PD_OP_flashmask, 4, {Q(2, 6, 2, 4), Q(2, 6, 2, 4), Q(2, 6, 2, 4), IDX(6, 2, 1, 6, 2)}, f_idx,
     FL},
    {"flashmask/c4", PD_OP_flashmask, 4, {Q(2, 6, 2, 4), Q(2, 6, 2, 4), Q(2, 6, 2, 4), IDX(6, 2, 1, 6, 4)}, f_idx,
     FL},
    {"flashmask/c4_per_head", PD_OP_flashmask, 4, {Q(1, 7, 3, 4), Q(1, 7, 3, 4), Q(1, 7, 3, 4), IDX(7, 1, 3, 7, 4)},
     f_idx, FL},
    {"flashmask/gqa_hm_hk", PD_OP_flashmask, 4, {Q(2, 5, 4, 4), Q(2, 5, 2, 4), Q(2, 5, 2, 4), IDX(5, 2, 2, 5, 2)},
     f_idx, FL},
    {"flashmask/gqa_causal_hm1", PD_OP_flashmask, 4,
     {Q(1, 6, 4, 4), Q(1, 6, 1, 4), Q(1, 6, 1, 4), IDX(6, 1, 1, 6, 2)}, f_idx_causal, FL},
    {"flashmask/sq_lt_sk_causal_c1", PD_OP_flashmask, 4,
     {Q(1, 5, 2, 4), Q(1, 9, 2, 4), Q(1, 9, 2, 4), IDX(5, 1, 1, 9, 1)}, f_idx_causal, FL},
    {"flashmask/sq_gt_sk_c4", PD_OP_flashmask, 4, {Q(1, 9, 2, 4), Q(1, 5, 2, 4), Q(1, 5, 2, 4), IDX(9, 1, 2, 5, 4)},
     f_idx, FL},
    {"flashmask/dv_ne_d_scale", PD_OP_flashmask, 4,
     {Q(1, 5, 2, 3), Q(1, 6, 2, 3), Q(1, 6, 2, 5), IDX(5, 1, 1, 6, 2)}, f_idx_scale, FL},
    {"flashmask/single_position", PD_OP_flashmask, 4,
     {Q(2, 1, 2, 4), Q(2, 1, 2, 4), Q(2, 1, 2, 4), IDX(1, 2, 1, 1, 1)}, f_idx_causal, FL},
    {"flashmask/window", PD_OP_flashmask, 3, {Q(1, 8, 2, 4), Q(1, 8, 2, 4), Q(1, 8, 2, 4)}, f_window, FL},
    {"flashmask/window_causal_sq_lt_sk", PD_OP_flashmask, 3, {Q(1, 5, 2, 4), Q(1, 9, 2, 4), Q(1, 9, 2, 4)},
     f_window_causal, FL},
    {"flashmask/dropout", PD_OP_flashmask, 4, {Q(2, 6, 2, 4), Q(2, 6, 2, 4), Q(2, 6, 2, 4), IDX(6, 2, 1, 6, 1)},
     f_dropout, FL},
    {"flashmask/dropout_gqa", PD_OP_flashmask, 3, {Q(1, 5, 4, 4), Q(1, 7, 2, 4), Q(1, 7, 2, 4)}, f_dropout_plain,
     FL},
    {"flashmask/zero_batch", PD_OP_flashmask, 4, {Q(0, 5, 2, 4), Q(0, 5, 2, 4), Q(0, 5, 2, 4), IDX(5, 0, 1, 5, 2)},
     f_idx, FL},
    {"flashmask/zero_batch_causal", PD_OP_flashmask, 3, {Q(0, 5, 2, 4), Q(0, 5, 2, 4), Q(0, 5, 2, 4)}, f_causal, FL},
    {"flashmask/lse_c4", PD_OP_flashmask, 4, {Q(2, 7, 2, 4), Q(2, 6, 2, 4), Q(2, 6, 2, 4), IDX(7, 2, 2, 6, 4)},
     f_lse_idx, FL, .no_gradcheck = 1},
    {"flashmask/lse_causal_c2_gqa", PD_OP_flashmask, 4,
     {Q(1, 6, 4, 4), Q(1, 6, 2, 4), Q(1, 6, 2, 4), IDX(6, 1, 2, 6, 2)}, f_lse_idx_causal, FL, .no_gradcheck = 1},
    {"flashmask/out_and_lse", PD_OP_flashmask, 3, {Q(2, 7, 4, 4), Q(2, 7, 2, 4), Q(2, 7, 2, 4)}, f_out_lse, FL},
    {"flashmask/large_causal_document", PD_OP_flashmask, 3,
     {Q(1, 150, 4, 40), Q(1, 150, 2, 40), Q(1, 150, 2, 40)}, f_doc, FL, .no_gradcheck = BIG},
    {"flashmask/large_c4", PD_OP_flashmask, 4,
     {Q(1, 150, 2, 40), Q(1, 170, 2, 40), Q(1, 170, 2, 24), IDX(150, 1, 2, 170, 4)}, f_idx, FL,
     .no_gradcheck = BIG},
    {"flashmask/large_causal_c1", PD_OP_flashmask, 4,
     {Q(2, 150, 2, 40), Q(2, 150, 2, 40), Q(2, 150, 2, 40), IDX(150, 2, 1, 150, 1)}, f_idx_causal, FL,
     .no_gradcheck = BIG},
    {"flashmask/large_lse", PD_OP_flashmask, 4,
     {Q(1, 150, 2, 40), Q(1, 130, 1, 40), Q(1, 130, 1, 40), IDX(150, 1, 1, 130, 2)}, f_lse_idx, FL,
     .no_gradcheck = 1},
    /* flashmask_backward: q, k, v, [idx], dout */
    {"flashmask_backward/plain", PD_OP_flashmask_backward, 4,
     {Q(2, 5, 2, 4), Q(2, 6, 2, 4), Q(2, 6, 2, 4), Q(2, 5, 2, 4)}, f_bwd, FL, .no_gradcheck = 1},
    {"flashmask_backward/causal_gqa_dv", PD_OP_flashmask_backward, 4,
     {Q(1, 7, 4, 4), Q(1, 5, 2, 4), Q(1, 5, 2, 6), Q(1, 7, 4, 6)}, f_bwd_causal, FL, .no_gradcheck = 1},
    {"flashmask_backward/causal_c1", PD_OP_flashmask_backward, 5,
     {Q(2, 6, 2, 4), Q(2, 6, 2, 4), Q(2, 6, 2, 4), IDX(6, 2, 1, 6, 1), Q(2, 6, 2, 4)}, f_bwd_idx_causal, FL,
     .no_gradcheck = 1},
    {"flashmask_backward/c2_sq_lt_sk", PD_OP_flashmask_backward, 5,
     {Q(1, 4, 2, 4), Q(1, 9, 2, 4), Q(1, 9, 2, 4), IDX(4, 1, 1, 9, 2), Q(1, 4, 2, 4)}, f_bwd_idx, FL,
     .no_gradcheck = 1},
    {"flashmask_backward/c4_per_head_gqa", PD_OP_flashmask_backward, 5,
     {Q(2, 7, 4, 4), Q(2, 7, 2, 4), Q(2, 7, 2, 4), IDX(7, 2, 2, 7, 4), Q(2, 7, 4, 4)}, f_bwd_idx, FL,
     .no_gradcheck = 1},
    {"flashmask_backward/dropout", PD_OP_flashmask_backward, 5,
     {Q(1, 6, 2, 4), Q(1, 6, 2, 4), Q(1, 6, 2, 4), IDX(6, 1, 1, 6, 1), Q(1, 6, 2, 4)}, f_bwd_dropout, FL,
     .no_gradcheck = 1},
    {"flashmask_backward/zero_batch", PD_OP_flashmask_backward, 5,
     {Q(0, 5, 2, 4), Q(0, 5, 2, 4), Q(0, 5, 2, 4), IDX(5, 0, 1, 5, 1), Q(0, 5, 2, 4)}, f_bwd_idx_causal, FL,
     .no_gradcheck = 1},
    {"flashmask_backward/large_causal_c2", PD_OP_flashmask_backward, 5,
     {Q(1, 150, 4, 40), Q(1, 150, 2, 40), Q(1, 150, 2, 40), IDX(150, 1, 2, 150, 2), Q(1, 150, 4, 40)},
     f_bwd_idx_causal, FL, .no_gradcheck = 1},
    {"flashmask_backward/large_c4_sq_ne_sk", PD_OP_flashmask_backward, 5,
     {Q(1, 130, 2, 40), Q(1, 150, 2, 40), Q(1, 150, 2, 24), IDX(130, 1, 1, 150, 4), Q(1, 130, 2, 24)}, f_bwd_idx,
     FL, .no_gradcheck = 1},
};

int opt_rows_flashmask(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
