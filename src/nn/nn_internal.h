/* paddle.c — internals shared by the nn files (not installed).
 *
 * Modules are composed by value (a block holds its attention and MLP
 * structs), so each module has an _init/_fini pair working on caller memory;
 * the public _create/_destroy wrap them with malloc/free. Parameters come
 * from an arena: either each one its own storage (arena NULL) or views into
 * one flat f32 buffer (the Llama model), which optimizers and checkpoints
 * can treat as one block. Either way a parameter is a leaf that requires
 * grad, owned by its module (one reference), in no scope.
 */
#ifndef PD_NN_INTERNAL_H
#define PD_NN_INTERNAL_H

#include "core/internal.h"

/* Views are carved in order, each aligned to PDI_NN_ALIGN floats (64 bytes). */
#define PDI_NN_ALIGN 16
struct pdi_nn_arena {
    struct pd_tensor *flat; /* 1-d f32, owned by the arena's owner */
    int64_t used;
};
/* A new parameter (uninitialised), or NULL with the error set. */
struct pd_tensor *pdi_nn_param(struct pdi_nn_arena *ar, const int64_t *shape, int ndim);
/* A shard plan's input/output preparation of the module whose weight is
 * `weight` (where 0: its input, 1: its output); set by src/dist/parallel.c
 * when a plan has one, NULL otherwise (the modules then pay one test). */
extern struct pd_tensor *(*pdi_nn_prepare)(const struct pd_tensor *weight, int where, struct pd_tensor *x);
static inline struct pd_tensor *pdi_nn_prep(const struct pd_tensor *weight, int where, struct pd_tensor *x)
{
    struct pd_tensor *(*f)(const struct pd_tensor *, int, struct pd_tensor *) =
        __atomic_load_n(&pdi_nn_prepare, __ATOMIC_ACQUIRE);
    return f && x ? f(weight, where, x) : x;
}
/* A zero-filled f32 tensor owned by the caller (one reference, in no scope),
 * made by the creation op: under the meta executor it has no data. */
struct pd_tensor *pdi_nn_zeros_owned(const int64_t *shape, int ndim);
/* "prefix.name" (or "name" when prefix is empty) added to sd. */
/* prefix.name into buf (sub-module prefixes for nested _params); returns buf. */
const char *pdi_nn_join(char *buf, size_t n, const char *prefix, const char *name);
int pdi_nn_add(struct pd_state_dict *sd, const char *prefix, const char *name, struct pd_tensor *t);

int pdi_nn_linear_init(struct pd_nn_linear *l, int64_t in, int64_t out, int bias, struct pdi_nn_arena *ar);
int pdi_nn_linear_reset(struct pd_nn_linear *l, struct pd_generator *g); /* PyTorch default values */
void pdi_nn_linear_fini(struct pd_nn_linear *l);
int pdi_nn_embedding_init(struct pd_nn_embedding *e, int64_t num, int64_t dim, struct pdi_nn_arena *ar);
int pdi_nn_rmsnorm_init(struct pd_nn_rmsnorm *n, int64_t dim, double eps, struct pdi_nn_arena *ar);
void pdi_nn_rmsnorm_fini(struct pd_nn_rmsnorm *n);
int pdi_nn_mlp_init(struct pd_nn_mlp *m, int64_t dim, int64_t hidden, struct pdi_nn_arena *ar);
int pdi_nn_mlp_reset(struct pd_nn_mlp *m, struct pd_generator *g);
void pdi_nn_mlp_fini(struct pd_nn_mlp *m);
int pdi_nn_attention_init(struct pd_nn_attention *a, int64_t dim, int n_heads, int n_kv_heads, double rope_theta,
                          struct pdi_nn_arena *ar);
int pdi_nn_attention_reset(struct pd_nn_attention *a, struct pd_generator *g);
void pdi_nn_attention_fini(struct pd_nn_attention *a);
int pdi_nn_block_init(struct pd_nn_block *b, int64_t dim, int n_heads, int n_kv_heads, int64_t hidden,
                      double norm_eps, double rope_theta, struct pdi_nn_arena *ar);
int pdi_nn_block_reset(struct pd_nn_block *b, struct pd_generator *g);
void pdi_nn_block_fini(struct pd_nn_block *b);
/* The public forwards plus a FlashMask mask: startend_row_indices int32
 * [B, 1 or n_kv_heads, T, C] (include/pd/flashmask.h; with `causal`
 * choosing the meaning of its columns), or NULL. It excludes mask and the
 * KV cache (attention over the T new tokens only). */
struct pd_tensor *pdi_nn_attention_forward(struct pd_nn_attention *a, struct pd_tensor *x, struct pd_tensor *positions,
                                           struct pd_tensor *mask, struct pd_tensor *startend_row_indices, int causal,
                                           struct pd_tensor *k_cache, struct pd_tensor *v_cache, int64_t past_len);
struct pd_tensor *pdi_nn_block_forward(struct pd_nn_block *b, struct pd_tensor *x, struct pd_tensor *positions,
                                       struct pd_tensor *mask, struct pd_tensor *startend_row_indices, int causal,
                                       struct pd_tensor *k_cache, struct pd_tensor *v_cache, int64_t past_len);

/* x as a JSON number that reads back bit-identical (llama.c; null when not
 * finite). */
struct cJSON;
struct cJSON *pdi_json_double(double x);

#endif
