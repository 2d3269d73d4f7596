/* paddle.c — what the attention ops (sdpa in ops/llm.c, flashmask in
 * ops/flashmask.c) share: the composed VJP (public ops only, used when the
 * backward is recorded) and the head expansion for grouped-query heads. */
#ifndef PD_OPS_ATTENTION_H
#define PD_OPS_ATTENTION_H

#include "core/internal.h"

/* Inputs of the composed attention VJP, all in [B, H, S, X] layout:
 * q [B, Hq, T, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv]; visible: bool
 * broadcastable to [B, Hq, T, S] (false = masked) or NULL; add_mask: float
 * added to the scores or NULL; keep: dropout multipliers (0 or 1/(1-p))
 * broadcastable to [B, Hq, T, S] or NULL; gout [B, Hq, T, Dv]; glse
 * [B, Hq, T] or NULL. */
struct pdi_attn_vjp {
    struct pd_tensor *q, *k, *v, *visible, *add_mask, *keep, *gout, *glse;
    double scale;
};

/* Writes the gradients asked for (non-NULL pointers) in the layout and
 * dtype of q, k, v and add_mask. Status. */
int pdi_attention_vjp_composed(const struct pdi_attn_vjp *a, struct pd_tensor **gq, struct pd_tensor **gk,
                               struct pd_tensor **gv, struct pd_tensor **gmask);

/* q, k, v of an attention op: one floating dtype, rank 4, k and v of one
 * shape but the last dim, shared head dim, query heads (at head_axis: 1
 * for [B, H, S, D], 2 for [B, S, H, D]) a multiple of key heads. layout
 * names the expected shapes in the error message. Status. */
int pdi_attention_check_qkv(const char *op, const struct pd_tensor *q, const struct pd_tensor *k,
                            const struct pd_tensor *v, int head_axis, const char *layout);

/* The output metas of an attention forward (out, lse) once its inputs are
 * checked: out q's dtype and shape with v's last dim, lse
 * pdi_attention_lse_dtype [B, H, S] (H at q's head_axis: 1 for
 * [B, H, S, D], 2 for [B, S, H, D]). */
void pdi_attention_infer_outputs(struct pdi_call *c, int head_axis);

/* The rest of an attention backward's infer once q, k, v and the extras
 * are checked: the inputs are q, k, v, n_extra extras (mask or indices),
 * out, lse, dout, which must have the metas pdi_attention_infer_outputs
 * gives; the three outputs (dq, dk, dv) take the metas of q, k, v. Status. */
int pdi_attention_infer_backward(struct pdi_call *c, const char *op, int n_extra, int head_axis);

/* The VJP of an attention backward op (fwd names the forward op): an error
 * that points to create_graph. */
int pdi_attention_backward_not_differentiable(const char *fwd);

/* The log-sum-exp dtype: f64 for f64 inputs, f32 otherwise. */
static inline enum pd_dtype pdi_attention_lse_dtype(enum pd_dtype dt) { return dt == PD_F64 ? PD_F64 : PD_F32; }

/* The fused VJP of an attention node with n_fwd_in inputs and outputs
 * (out, lse): dispatches `backward` on (inputs, out, lse, dout) with the
 * node's attributes and hands out dq, dk, dv where needed. Status. */
int pdi_attention_vjp_fused(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin, enum pd_op backward,
                            int n_fwd_in);

/* The scale of the public wrappers: *scale <= 0 becomes 1/sqrt(D) (D the
 * last dim of q, rank 4); NaN or inf is an error naming op. Status. */
int pdi_attention_scale(const char *op, const struct pd_tensor *q, double *scale);

/* Key s visible from query t, bool [T, S]: causal, bottom-right aligned
 * (s <= t + S - T). */
struct pd_tensor *pdi_attention_causal_visible(int64_t T, int64_t S);

/* k or v [B, Hkv, S, X] repeated over G query heads each: [B, Hkv G, S, X]
 * (a view when possible). */
struct pd_tensor *pdi_expand_heads(struct pd_tensor *x, int64_t G);

#endif
