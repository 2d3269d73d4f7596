/* paddle.c — neural-network modules and the Llama model.
 *
 * STATUS: the Llama section below is the contract other parts build on
 * (CLI, generation, PyTorch parity, bench). The nn owner fills in the
 * building-block modules and the init functions in this header.
 *
 * Modules are plain structs holding parameter tensors (leaves that require
 * grad). Each exposes its parameters by name into a pd_state_dict; the Llama
 * model uses the Hugging Face names (model.embed_tokens.weight,
 * model.layers.0.self_attn.q_proj.weight, ..., model.norm.weight,
 * lm_head.weight) so real checkpoints map by name.
 */
#ifndef PD_NN_H
#define PD_NN_H

#include "pd/state.h"
#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Llama ------------------------------------------------------------ */
struct pd_llama_config {
    int vocab_size;      /* 256 for the byte tokenizer */
    int dim;             /* hidden size */
    int n_layers;
    int n_heads;
    int n_kv_heads;      /* grouped-query attention: n_heads % n_kv_heads == 0 */
    int hidden_dim;      /* SwiGLU inner size */
    int max_seq_len;
    double norm_eps;     /* RMSNorm epsilon (1e-5) */
    double rope_theta;   /* 10000 */
    int tie_embeddings;  /* lm_head shares model.embed_tokens.weight (then no lm_head.weight entry) */
    double dropout;      /* applied only in training mode */
    double init_std;     /* normal init std (0.02) */
};
/* Defaults for the built-in data set (small; trains in minutes here). */
void pd_llama_config_default(struct pd_llama_config *cfg);
/* Checks every field; returns PD_OK or PD_ERR_INVALID with a message. */
int pd_llama_config_validate(const struct pd_llama_config *cfg);
/* JSON round trip (the config of checkpoints and of `paddlec train --config`).
 * to_json returns a malloc'd string; from_json starts from the defaults and
 * overrides the keys present; unknown keys are an error. */
char *pd_llama_config_to_json(const struct pd_llama_config *cfg);
int pd_llama_config_from_json(struct pd_llama_config *cfg, const char *json);

struct pd_llama;
/* Parameters initialised from seed (normal(0, init_std), norms to 1,
 * residual output projections scaled by 1/sqrt(2 n_layers)). */
struct pd_llama *pd_llama_create(const struct pd_llama_config *cfg, uint64_t seed);
void pd_llama_destroy(struct pd_llama *m);
const struct pd_llama_config *pd_llama_get_config(const struct pd_llama *m);
/* The model's parameters by Hugging Face name (borrowed; the tensors are the
 * live parameters, f32 leaves requiring grad). */
struct pd_state_dict *pd_llama_state_dict(struct pd_llama *m);
void pd_llama_train(struct pd_llama *m, int training);   /* training mode: dropout on */
int pd_llama_is_training(const struct pd_llama *m);

/* Key/value cache for generation: per layer [batch, n_kv_heads, max_len, head_dim]. */
struct pd_kv_cache;
struct pd_kv_cache *pd_kv_cache_create(const struct pd_llama_config *cfg, int batch, int max_len);
void pd_kv_cache_destroy(struct pd_kv_cache *c);
void pd_kv_cache_reset(struct pd_kv_cache *c);
int pd_kv_cache_len(const struct pd_kv_cache *c);   /* positions filled so far */

/* Forward: ids [B, T] (int64) -> logits [B, T, vocab] (f32).
 * cache == NULL: a plain causal forward over positions 0..T-1 (training).
 * cache != NULL: the T new tokens take positions len..len+T-1, their keys and
 * values are appended, and attention covers everything cached (causal).
 * pad_mask, optional, [B, len+T] bool over all cached + new positions (true =
 * a real token): left-padded batched prompts mask their padding out; row
 * positions for RoPE then count real tokens only. */
struct pd_tensor *pd_llama_forward(struct pd_llama *m, struct pd_tensor *ids, struct pd_kv_cache *cache,
                                   struct pd_tensor *pad_mask);
/* Mean next-token cross-entropy of forward(ids) against targets [B, T]
 * (int64; -1 = ignored). */
struct pd_tensor *pd_llama_loss(struct pd_llama *m, struct pd_tensor *ids, struct pd_tensor *targets);
/* Number of parameters, and model FLOPs per token for a training step
 * (forward + backward, 6N plus attention) at sequence length seq_len. */
int64_t pd_llama_num_params(const struct pd_llama *m);
double pd_llama_flops_per_token(const struct pd_llama_config *cfg, int seq_len);

#ifdef __cplusplus
}
#endif
#endif
