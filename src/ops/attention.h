/* paddle.c — what the attention ops (sdpa in ops/llm.c, flashmask in
 * ops/flashmask.c) share: the composed forward and VJP (public ops only:
 * the decompositions, and the VJP used when the backward is recorded), the
 * checks and metas, and the head expansion for grouped-query heads.
 *
 * Attributes: the sets sdpa and flashmask begin with the same fields
 * (causal, scale, then has_mask / has_idx), so code shared by both ops
 * reads either op's attributes through the sdpa member (C's common initial
 * sequence); the assertions below keep the two sets in step. */
#ifndef PD_OPS_ATTENTION_H
#define PD_OPS_ATTENTION_H

#include <stddef.h>

#include "core/internal.h"

_Static_assert(offsetof(struct pdi_attrs_sdpa, causal) == offsetof(struct pdi_attrs_flashmask, causal) &&
                   offsetof(struct pdi_attrs_sdpa, scale) == offsetof(struct pdi_attrs_flashmask, scale) &&
                   offsetof(struct pdi_attrs_sdpa, has_mask) == offsetof(struct pdi_attrs_flashmask, has_idx),
               "sdpa and flashmask attribute sets must share their first fields");

/* Inputs of the composed attention (forward and VJP), all in [B, H, S, X]
 * layout: q [B, Hq, T, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv]; visible:
 * bool broadcastable to [B, Hq, T, S] (false = masked) or NULL; add_mask:
 * float added to the scores or NULL; keep: dropout multipliers (0 or
 * 1/(1-p)) broadcastable to [B, Hq, T, S] or NULL; for the VJP only, gout
 * [B, Hq, T, Dv] and glse [B, Hq, T] or NULL. */
struct pdi_attn {
    struct pd_tensor *q, *k, *v, *visible, *add_mask, *keep, *gout, *glse;
    double scale;
};

/* The forward: out [B, Hq, T, Dv] in q's dtype and the log-sum-exp of each
 * score row [B, Hq, T] (pdi_attention_lse_dtype; -inf for a row with no
 * visible key, whose out is 0). Dropout (keep) scales P, not the
 * log-sum-exp. Status. */
int pdi_attention_composed(const struct pdi_attn *a, struct pd_tensor **out, struct pd_tensor **lse);

/* The VJP: writes the gradients asked for (non-NULL pointers) in the layout
 * and dtype of q, k, v and add_mask. Status. */
int pdi_attention_vjp_composed(const struct pdi_attn *a, struct pd_tensor **gq, struct pd_tensor **gk,
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

/* The fused VJP of an attention node (inputs q, k, v and, when
 * has_mask / has_idx, the mask; outputs out, lse): dispatches `backward`
 * on (inputs, out, lse, dout) with the node's attributes and hands out
 * dq, dk, dv where needed. Status. */
int pdi_attention_vjp_fused(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin,
                            enum pd_op backward);

/* The scale attribute of an sdpa or flashmask call (forward or backward)
 * must be positive and finite; the message names op. Status. */
int pdi_attention_check_scale(const char *op, const struct pdi_call *c);

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
