/* paddle.c — FlashMask internals shared by the op front end
 * (ops/flashmask.c) and the mask builders (flashmask/masks.c). */
#ifndef PD_OPS_FLASHMASK_H
#define PD_OPS_FLASHMASK_H

#include "core/internal.h"
#include "kernels/flashmask_rules.h" /* the masked predicate and dropout's keep threshold */

/* Validates startend_row_indices against the attention shapes: int32,
 * [B, Hm, Sk, C] with Hm in {1, Hk}, C in {1, 2} when causal and {2, 4}
 * otherwise, every value in [0, Sq]. The message names `op` and the rule
 * that broke. Status. */
int pdi_flashmask_check_indices(const char *op, const struct pd_tensor *idx, int causal, int64_t B, int64_t Sq,
                                int64_t Sk, int64_t Hk);

/* Indices [B, 1, Sk, C] of a sliding window: query i (aligned to key
 * i + Sk - Sq) sees keys [i' - left, i' + right]; causal: C = 1 (right
 * unused), else C = 2. */
struct pd_tensor *pdi_flashmask_window(int64_t B, int64_t Sq, int64_t Sk, int64_t left, int64_t right, int causal);

/* The dense visibility of startend_row_indices idx [B, Hm, Sk, C] (already
 * validated) for Sq query rows: bool [B, Hm, Sq, Sk], true where query i
 * sees key j (causal included when causal). Composed of public ops (so a
 * decomposition may use it); pd_flashmask_to_dense validates, then calls
 * it. NULL idx gives NULL. */
struct pd_tensor *pdi_flashmask_dense(struct pd_tensor *idx, int causal, int64_t Sq);

#endif
