/* paddle.c — op test rows: the transformer blocks (rope, swiglu, sdpa,
 * sdpa_backward).
 *
 * rope with [T] and [B, T] positions (spread, and packed: repeated
 * values), transposed and strided x, the inverse rotation (sign -1: rope's
 * VJP), int32 positions. swiglu on
 * contiguous, transposed, strided and large inputs. sdpa: plain, causal with
 * S == T, S > T (KV-cache step) and S < T (leading rows see nothing: zeros),
 * grouped-query heads, bool masks (including sparse ones that mask whole
 * rows), float masks broadcast from [T, S] / [B, 1, T, S], -inf rows,
 * non-contiguous q/k/v, Dv != D, decode (T = 1), zero-size batches, and
 * shapes large enough for the CPU kernel's blocking (forward only). Float
 * masks that are differentiated go through the composed VJP, the others
 * through the fused sdpa_backward; sdpa_backward rows compare the fused CPU
 * backward (and the log-sum-exp output) with the reference.
 */
#include <math.h>

#include "ops/harness.h"

#define RF(name, expr) \
    static struct pd_tensor *f_##name(struct pd_tensor **in) { return expr; }

#define FL OPT_DT_FLOW
#define BIG 1
/* bool mask, true with probability p */
#define OPT_BP(p, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_BOOL, .lo = p, .no_grad = 1}
/* float input that is not differentiated (a fixed additive mask) */
#define OPT_FN(lo_, hi_, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = lo_, .hi = hi_, .no_grad = 1}
#define IDS32(lo_, hi_, ...) \
    {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FIXED, .lo = lo_, .hi = hi_, .dtype = PD_I32, .no_grad = 1}

/* rope */
RF(rope, pd_rope(in[0], in[1], 10000.0))
RF(rope_small_theta, pd_rope(in[0], in[1], 7.5))
static struct pd_tensor *f_rope_inverse(struct pd_tensor **in)
{
    struct pdi_attrs a = {.rope = {.theta = 500.0, .sign = -1}};
    return pdi_call2(PD_OP_rope, in[0], in[1], &a);
}
/* x stored [B, H, T, D] and viewed as [B, T, H, D] (what q/k projections
 * look like after a transpose) */
static struct pd_tensor *f_rope_bhtd(struct pd_tensor **in) { return pd_rope(pd_transpose(in[0], 1, 2), in[1], 100.0); }

/* swiglu */
RF(swiglu, pd_swiglu(in[0], in[1]))
/* swiglu_backward: gate, up, dout; one row per output (dgate, dup) */
static struct pd_tensor *swiglu_bwd(struct pd_tensor **in, int which)
{
    struct pd_tensor *out[2];
    struct pdi_call c = {.op = PD_OP_swiglu_backward, .n_in = 3, .n_out = 2, .in = in, .out = out};
    return pdi_dispatch(&c) ? NULL : out[which];
}
RF(swiglu_bwd_dgate, swiglu_bwd(in, 0))
RF(swiglu_bwd_dup, swiglu_bwd(in, 1))

/* sdpa: q, k, v, [mask] */
RF(sdpa, pd_sdpa(in[0], in[1], in[2], NULL, 0, 0))
RF(sdpa_causal, pd_sdpa(in[0], in[1], in[2], NULL, 1, 0))
RF(sdpa_scale, pd_sdpa(in[0], in[1], in[2], NULL, 0, 0.7))
RF(sdpa_mask, pd_sdpa(in[0], in[1], in[2], in[3], 0, 0))
RF(sdpa_mask_causal, pd_sdpa(in[0], in[1], in[2], in[3], 1, 0))
/* q, k, v stored [B, T, H, D] (the projections' layout) and viewed as
 * [B, H, T, D] */
static struct pd_tensor *f_sdpa_bthd(struct pd_tensor **in)
{
    return pd_sdpa(pd_transpose(in[0], 1, 2), pd_transpose(in[1], 1, 2), pd_transpose(in[2], 1, 2), NULL, 1, 0);
}
/* a float mask of -inf where a bool mask is false (torch's additive form) */
static struct pd_tensor *f_sdpa_neginf(struct pd_tensor **in)
{
    struct pd_tensor *m = pd_where(in[3], pd_scalar(0, in[0]->dtype), pd_scalar(-INFINITY, in[0]->dtype));
    return pd_sdpa(in[0], in[1], in[2], m, 0, 0);
}

/* the raw op: both outputs (out, lse) */
static int sdpa_raw(struct pd_tensor **in, int has_mask, int causal, struct pd_tensor **out)
{
    struct pd_tensor *ins[4] = {in[0], in[1], in[2], has_mask ? in[3] : NULL};
    struct pdi_call c = {.op = PD_OP_sdpa, .n_in = 3 + has_mask, .n_out = 2, .in = ins, .out = out};
    c.a.sdpa =
        (struct pdi_attrs_sdpa){.causal = causal, .scale = 1.0 / sqrt((double)in[0]->shape[3]), .has_mask = has_mask};
    return pdi_dispatch(&c);
}

static struct pd_tensor *lse_of(struct pd_tensor **in, int has_mask, int causal)
{
    struct pd_tensor *out[2];
    return sdpa_raw(in, has_mask, causal, out) ? NULL : out[1];
}
RF(lse_causal, lse_of(in, 0, 1))
RF(lse_mask, lse_of(in, 1, 0))

/* sdpa then sdpa_backward with dout = the last input; returns dq, dk, dv
 * flattened and concatenated */
static struct pd_tensor *backward_of(struct pd_tensor **in, int has_mask, int causal)
{
    struct pd_tensor *out[2];
    if (sdpa_raw(in, has_mask, causal, out)) return NULL;
    struct pdi_attrs a = {
        .sdpa = {.causal = causal, .scale = 1.0 / sqrt((double)in[0]->shape[3]), .has_mask = has_mask}};
    return opt_attention_backward(PD_OP_sdpa_backward, in, has_mask, out, &a);
}
RF(bwd, backward_of(in, 0, 0))
RF(bwd_causal, backward_of(in, 0, 1))
RF(bwd_mask, backward_of(in, 1, 0))
RF(bwd_mask_causal, backward_of(in, 1, 1))

#define Q(...) OPT_F(__VA_ARGS__)

static const struct opt_row rows[] = {
    /* rope: x [B, T, H, D] */
    {"rope/positions_T", PD_OP_rope, 2, {OPT_F(2, 5, 3, 8), OPT_IDX(0, 40, 5)}, f_rope, FL},
    {"rope/positions_BT", PD_OP_rope, 2, {OPT_F(2, 4, 2, 6), OPT_IDX(0, 1000, 2, 4)}, f_rope, FL},
    /* positions whose range is shorter than their list (packed documents):
     * the kernel tables cos/sin by position value */
    {"rope/packed_positions", PD_OP_rope, 2, {OPT_F(3, 6, 2, 6), OPT_IDX(0, 5, 3, 6)}, f_rope, FL},
    {"rope/repeated_T", PD_OP_rope, 2, {OPT_F(2, 7, 2, 4), OPT_IDX(-2, 3, 7)}, f_rope_inverse, FL},
    {"rope/small_theta", PD_OP_rope, 2, {OPT_F(1, 3, 2, 10), OPT_IDX(0, 9, 3)}, f_rope_small_theta, FL},
    {"rope/inverse", PD_OP_rope, 2, {OPT_F(2, 3, 2, 4), OPT_IDX(-5, 20, 2, 3)}, f_rope_inverse, FL},
    {"rope/transposed", PD_OP_rope, 2, {OPT_FT(2, 3, 4, 6), OPT_IDX(0, 30, 3)}, f_rope, FL},
    {"rope/strided", PD_OP_rope, 2, {OPT_FS(1, 4, 2, 8), OPT_IDX(0, 30, 4)}, f_rope, FL},
    {"rope/bhtd_view", PD_OP_rope, 2, {OPT_F(2, 3, 5, 4), OPT_IDX(0, 30, 2, 5)}, f_rope_bhtd, FL},
    {"rope/int32_positions", PD_OP_rope, 2, {OPT_F(1, 4, 1, 4), IDS32(0, 60, 4)}, f_rope, FL},
    {"rope/d2", PD_OP_rope, 2, {OPT_F(1, 3, 1, 2), OPT_IDX(0, 9, 3)}, f_rope, FL},
    {"rope/zero_batch", PD_OP_rope, 2, {OPT_F(0, 3, 2, 4), OPT_IDX(0, 9, 3)}, f_rope, FL},
    {"rope/large", PD_OP_rope, 2, {OPT_F(4, 64, 6, 48), OPT_IDX(0, 4096, 4, 64)}, f_rope, FL, .no_gradcheck = BIG},
    {"rope/large_shared_positions", PD_OP_rope, 2, {OPT_FT(4, 64, 6, 48), OPT_IDX(0, 4096, 64)}, f_rope, FL,
     .no_gradcheck = BIG},
    /* swiglu */
    {"swiglu/plain", PD_OP_swiglu, 2, {OPT_FR(-6, 6, 4, 7), OPT_F(4, 7)}, f_swiglu, FL},
    {"swiglu/transposed", PD_OP_swiglu, 2, {OPT_FT(5, 6), OPT_F(5, 6)}, f_swiglu, FL},
    {"swiglu/strided", PD_OP_swiglu, 2, {OPT_F(3, 5), OPT_FS(3, 5)}, f_swiglu, FL},
    {"swiglu/wide_values", PD_OP_swiglu, 2, {OPT_FR(-120, 120, 3, 9), OPT_F(3, 9)}, f_swiglu, FL},
    {"swiglu/0d", PD_OP_swiglu, 2, {OPT_F0, OPT_F0}, f_swiglu, FL},
    /* swiglu_backward: gate, up, dout */
    {"swiglu_backward/dgate", PD_OP_swiglu_backward, 3, {OPT_FR(-6, 6, 4, 7), OPT_F(4, 7), OPT_F(4, 7)},
     f_swiglu_bwd_dgate, FL, .no_gradcheck = 1},
    {"swiglu_backward/dup_strided", PD_OP_swiglu_backward, 3, {OPT_FT(5, 6), OPT_FS(5, 6), OPT_F(5, 6)},
     f_swiglu_bwd_dup, FL, .no_gradcheck = 1},
    {"swiglu_backward/dgate_wide_large", PD_OP_swiglu_backward, 3,
     {OPT_FR(-120, 120, 300, 260), OPT_F(300, 260), OPT_F(300, 260)}, f_swiglu_bwd_dgate, FL, .no_gradcheck = 1},
    {"swiglu_backward/dup_large", PD_OP_swiglu_backward, 3, {OPT_F(300, 260), OPT_F(300, 260), OPT_F(300, 260)},
     f_swiglu_bwd_dup, FL, .no_gradcheck = 1},
    {"swiglu/zero_size", PD_OP_swiglu, 2, {OPT_F(0, 4), OPT_F(0, 4)}, f_swiglu, FL},
    {"swiglu/large", PD_OP_swiglu, 2, {OPT_FR(-10, 10, 300, 771), OPT_F(300, 771)}, f_swiglu, FL,
     .no_gradcheck = BIG},
    {"swiglu/large_transposed", PD_OP_swiglu, 2, {OPT_FT(200, 301), OPT_F(200, 301)}, f_swiglu, FL,
     .no_gradcheck = BIG},
    /* sdpa: q [B, Hq, T, D], k/v [B, Hkv, S, D] */
    {"sdpa/plain", PD_OP_sdpa, 3, {Q(2, 2, 3, 4), Q(2, 2, 5, 4), Q(2, 2, 5, 4)}, f_sdpa, FL},
    {"sdpa/scale", PD_OP_sdpa, 3, {Q(1, 2, 3, 4), Q(1, 2, 4, 4), Q(1, 2, 4, 4)}, f_sdpa_scale, FL},
    {"sdpa/causal_square", PD_OP_sdpa, 3, {Q(2, 2, 4, 3), Q(2, 2, 4, 3), Q(2, 2, 4, 3)}, f_sdpa_causal, FL},
    {"sdpa/causal_S_gt_T", PD_OP_sdpa, 3, {Q(1, 2, 3, 4), Q(1, 2, 6, 4), Q(1, 2, 6, 4)}, f_sdpa_causal, FL},
    {"sdpa/causal_S_lt_T", PD_OP_sdpa, 3, {Q(1, 2, 5, 4), Q(1, 2, 3, 4), Q(1, 2, 3, 4)}, f_sdpa_causal, FL},
    {"sdpa/gqa", PD_OP_sdpa, 3, {Q(2, 6, 3, 4), Q(2, 2, 5, 4), Q(2, 2, 5, 4)}, f_sdpa, FL},
    {"sdpa/gqa_causal", PD_OP_sdpa, 3, {Q(1, 4, 4, 4), Q(1, 1, 4, 4), Q(1, 1, 4, 4)}, f_sdpa_causal, FL},
    {"sdpa/dv_ne_d", PD_OP_sdpa, 3, {Q(1, 2, 3, 4), Q(1, 2, 5, 4), Q(1, 2, 5, 6)}, f_sdpa_causal, FL},
    {"sdpa/decode", PD_OP_sdpa, 3, {Q(2, 4, 1, 8), Q(2, 2, 7, 8), Q(2, 2, 7, 8)}, f_sdpa_causal, FL},
    {"sdpa/transposed", PD_OP_sdpa, 3, {OPT_FT(1, 2, 3, 4), OPT_FT(1, 2, 5, 4), OPT_FS(1, 2, 5, 4)}, f_sdpa_causal,
     FL},
    {"sdpa/bthd_views", PD_OP_sdpa, 3, {Q(2, 4, 2, 4), Q(2, 4, 1, 4), Q(2, 4, 1, 4)}, f_sdpa_bthd, FL},
    {"sdpa/bool_mask", PD_OP_sdpa, 4, {Q(2, 2, 3, 4), Q(2, 2, 5, 4), Q(2, 2, 5, 4), OPT_B(2, 2, 3, 5)}, f_sdpa_mask,
     FL},
    {"sdpa/bool_mask_sparse", PD_OP_sdpa, 4, {Q(2, 2, 6, 4), Q(2, 2, 5, 4), Q(2, 2, 5, 4), OPT_BP(0.15, 6, 5)},
     f_sdpa_mask, FL},
    {"sdpa/bool_mask_causal_gqa", PD_OP_sdpa, 4, {Q(1, 4, 3, 4), Q(1, 2, 5, 4), Q(1, 2, 5, 4), OPT_B(1, 1, 3, 5)},
     f_sdpa_mask_causal, FL},
    {"sdpa/float_mask_TS", PD_OP_sdpa, 4, {Q(2, 2, 3, 4), Q(2, 2, 5, 4), Q(2, 2, 5, 4), OPT_FN(-3, 3, 3, 5)},
     f_sdpa_mask, FL},
    {"sdpa/float_mask_grad", PD_OP_sdpa, 4, {Q(2, 2, 3, 4), Q(2, 2, 5, 4), Q(2, 2, 5, 4), OPT_F(2, 1, 3, 5)},
     f_sdpa_mask_causal, FL},
    {"sdpa/float_mask_grad_full", PD_OP_sdpa, 4, {Q(1, 2, 3, 4), Q(1, 1, 4, 4), Q(1, 1, 4, 4), OPT_F(1, 2, 3, 4)},
     f_sdpa_mask, FL},
    {"sdpa/neg_inf_mask", PD_OP_sdpa, 4, {Q(2, 2, 4, 4), Q(2, 2, 5, 4), Q(2, 2, 5, 4), OPT_BP(0.2, 2, 1, 4, 5)},
     f_sdpa_neginf, FL},
    {"sdpa/zero_batch", PD_OP_sdpa, 3, {Q(0, 2, 3, 4), Q(0, 2, 5, 4), Q(0, 2, 5, 4)}, f_sdpa, FL},
    {"sdpa/zero_keys", PD_OP_sdpa, 3, {Q(1, 2, 3, 4), Q(1, 2, 0, 4), Q(1, 2, 0, 4)}, f_sdpa, FL},
    {"sdpa/large_causal_gqa", PD_OP_sdpa, 3, {Q(1, 4, 100, 32), Q(1, 2, 100, 32), Q(1, 2, 100, 32)}, f_sdpa_causal,
     FL, .no_gradcheck = BIG},
    {"sdpa/large_mask", PD_OP_sdpa, 4,
     {Q(2, 3, 70, 20), Q(2, 3, 90, 20), Q(2, 3, 90, 20), OPT_BP(0.7, 2, 1, 70, 90)}, f_sdpa_mask_causal, FL,
     .no_gradcheck = BIG},
    {"sdpa/large_decode", PD_OP_sdpa, 3, {Q(2, 6, 1, 48), Q(2, 6, 300, 48), Q(2, 6, 300, 48)}, f_sdpa_causal, FL,
     .no_gradcheck = BIG},
    {"sdpa/lse_causal", PD_OP_sdpa, 3, {Q(2, 4, 5, 4), Q(2, 2, 3, 4), Q(2, 2, 3, 4)}, f_lse_causal, FL,
     .no_gradcheck = 1},
    {"sdpa/lse_mask", PD_OP_sdpa, 4, {Q(1, 2, 9, 8), Q(1, 2, 70, 8), Q(1, 2, 70, 8), OPT_FN(-40, 3, 9, 70)},
     f_lse_mask, FL, .no_gradcheck = 1},
    /* sdpa_backward: q, k, v, [mask], dout */
    {"sdpa_backward/plain", PD_OP_sdpa_backward, 4, {Q(2, 2, 3, 4), Q(2, 2, 5, 4), Q(2, 2, 5, 4), Q(2, 2, 3, 4)},
     f_bwd, FL, .no_gradcheck = 1},
    {"sdpa_backward/causal_gqa", PD_OP_sdpa_backward, 4,
     {Q(1, 4, 5, 4), Q(1, 2, 3, 4), Q(1, 2, 3, 6), Q(1, 4, 5, 6)}, f_bwd_causal, FL, .no_gradcheck = 1},
    {"sdpa_backward/bool_mask", PD_OP_sdpa_backward, 5,
     {Q(2, 2, 4, 4), Q(2, 2, 5, 4), Q(2, 2, 5, 4), OPT_BP(0.3, 2, 1, 4, 5), Q(2, 2, 4, 4)}, f_bwd_mask, FL,
     .no_gradcheck = 1},
    {"sdpa_backward/float_mask_causal", PD_OP_sdpa_backward, 5,
     {OPT_FT(1, 2, 4, 4), Q(1, 2, 6, 4), OPT_FS(1, 2, 6, 4), OPT_FN(-2, 2, 4, 6), Q(1, 2, 4, 4)}, f_bwd_mask_causal,
     FL, .no_gradcheck = 1},
    {"sdpa_backward/large_causal_gqa", PD_OP_sdpa_backward, 4,
     {Q(1, 4, 100, 32), Q(1, 2, 100, 32), Q(1, 2, 100, 32), Q(1, 4, 100, 32)}, f_bwd_causal, FL, .no_gradcheck = 1},
    {"sdpa_backward/large_mask", PD_OP_sdpa_backward, 5,
     {Q(1, 3, 70, 20), Q(1, 3, 90, 20), Q(1, 3, 90, 12), OPT_BP(0.6, 70, 90), Q(1, 3, 70, 12)}, f_bwd_mask_causal, FL,
     .no_gradcheck = 1},
};

int opt_rows_llm(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
