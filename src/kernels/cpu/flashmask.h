/* paddle.c — internals of the CPU FlashMask kernels (kernels/cpu/flashmask.c)
 * shared with the op front end (the tile counter behind
 * pd_flashmask_count_tiles) and with the benchmark: a FlexAttention-style
 * block mask.
 *
 * A block mask lists, per query tile, the key tiles to visit (partial ones,
 * masked element by element through a callback, and full ones, not masked
 * at all); every other tile is skipped. It costs O(Sq Sk / (rows cols))
 * memory and an O(Sq Sk) sweep of the callback to build, which is what
 * FlashMask's O(Sk) column intervals avoid: the bench compares the two on
 * the same tile loop (tile size pd_flashmask_tile_size). Not public API.
 */
#ifndef PD_KERNELS_CPU_FLASHMASK_H
#define PD_KERNELS_CPU_FLASHMASK_H

#include <stdint.h>

#include "pd/flashmask.h"

struct pd_kview;

/* The tile classes of pd_flashmask_count_tiles (which validates its
 * arguments, then calls this): idx a view of valid int32 indices
 * [B, Hm, Sk, C], or NULL for causal alone. Status. */
int pdi_flashmask_count_tiles(const struct pd_kview *idx, int causal, int64_t B, int64_t Sq, int64_t Sk, int64_t Hq,
                              struct pd_flashmask_tiles *out);

/* 1 when query qi of (batch b, head h) may attend to key kj (FlexAttention's
 * polarity: true = keep). Called from several threads at once. */
typedef int (*pdi_mask_mod_fn)(void *ctx, int64_t b, int64_t h, int64_t qi, int64_t kj);

struct pdi_block_mask {
    int64_t B, H;                  /* 1 = shared by every batch / head */
    int64_t Sq, Sk, nq, nk;        /* lengths and tile counts */
    int32_t *kv_num, *kv_idx;      /* [B][H][nq], [B][H][nq][nk]: partial key tiles, ascending */
    int32_t *full_num, *full_idx;  /* the same for the unmasked key tiles */
    uint8_t *cls;                  /* [B][H][nq][nk]: 0 skipped, 1 partial, 2 full (the backward's lookup) */
    pdi_mask_mod_fn mask_mod;
    void *ctx;
};

/* Evaluates mask_mod over the whole B x H x Sq x Sk grid (in parallel) and
 * fills bm. B or H may be 1 (the mask is then shared). Status; on failure
 * bm holds nothing to free. */
int pdi_block_mask_build(struct pdi_block_mask *bm, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                         pdi_mask_mod_fn mask_mod, void *ctx);
void pdi_block_mask_free(struct pdi_block_mask *bm); /* NULL or already freed: no-op */

/* Attention under bm on contiguous f32 tensors: q, out [B, Sq, H, D],
 * k, v [B, Sk, H, D] (one head count for queries and keys, value dim D),
 * lse [B, H, Sq] (-inf for a row that sees no key), scale <= 0 for
 * 1/sqrt(D). The backward takes the forward's out and lse and writes dq,
 * dk, dv (shapes of q, k, v). Same kernels as flashmask: the lists replace
 * the column-interval classification. Status. */
int pdi_block_mask_attention_fwd(const struct pdi_block_mask *bm, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                                 int64_t D, const float *q, const float *k, const float *v, double scale, float *out,
                                 float *lse);
int pdi_block_mask_attention_bwd(const struct pdi_block_mask *bm, int64_t B, int64_t H, int64_t Sq, int64_t Sk,
                                 int64_t D, const float *q, const float *k, const float *v, const float *out,
                                 const float *lse, const float *dout, double scale, float *dq, float *dk, float *dv);

#endif
