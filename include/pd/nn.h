/* paddle.c — neural-network modules, parameter init, and the Llama model.
 *
 * The Llama section is the contract other parts build on (CLI, generation,
 * PyTorch parity, bench); its signatures do not change.
 *
 * Modules are plain structs holding parameter tensors (leaves that require
 * grad; f32 unless pd_nn_set_param_dtype chose another float dtype). The module owns one reference to each parameter; the
 * tensors are never in a scope, so a module may be created anywhere and
 * lives until its _destroy. Each module exposes its parameters by name into
 * a pd_state_dict with `_params(module, prefix, sd)` (prefix "" or e.g.
 * "model.layers.0.mlp"; names are prefix + "." + field). Forward functions
 * are ordinary ops: their results belong to the innermost scope.
 * The Llama model is built from these same modules and uses the Hugging
 * Face names (model.embed_tokens.weight, model.layers.0.self_attn.q_proj.weight,
 * ..., model.norm.weight, lm_head.weight) so real checkpoints map by name.
 */
#ifndef PD_NN_H
#define PD_NN_H

#include "pd/state.h"
#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- parameter initialisation ------------------------------------------
 * In place, under no_grad, on any floating tensor (any strides, any float
 * dtype; drawn in f32, f64 for f64 tensors, then cast; trunc_normal_ and
 * orthogonal_ compute in f64). Zero-element tensors are a no-op.
 * g == NULL uses the default
 * generator. Return PD_OK or a negative status with pd_last_error() set.
 * Fans follow PyTorch: fan_in = size(1) * receptive field, fan_out =
 * size(0) * receptive field, receptive field = product of dims 2.. */
enum pd_init_mode { PD_INIT_FAN_IN = 0, PD_INIT_FAN_OUT = 1, PD_INIT_MODE_COUNT };
enum pd_nonlinearity {
    PD_NL_LINEAR = 0, PD_NL_CONV = 1, PD_NL_SIGMOID = 2, PD_NL_TANH = 3,
    PD_NL_RELU = 4, PD_NL_LEAKY_RELU = 5, PD_NL_SELU = 6, PD_NONLINEARITY_COUNT
};
/* torch.nn.init.calculate_gain; param is leaky_relu's negative slope (< 0: 0.01). */
double pd_init_calculate_gain(enum pd_nonlinearity nl, double param);
/* Needs >= 2 dims. */
int pd_init_fans(const struct pd_tensor *t, int64_t *fan_in, int64_t *fan_out);
int pd_init_normal_(struct pd_tensor *t, double mean, double std, struct pd_generator *g);
int pd_init_uniform_(struct pd_tensor *t, double lo, double hi, struct pd_generator *g);
/* Normal(mean, std) restricted to [a, b] (inverse-CDF sampling as PyTorch). */
int pd_init_trunc_normal_(struct pd_tensor *t, double mean, double std, double a, double b, struct pd_generator *g);
int pd_init_xavier_uniform_(struct pd_tensor *t, double gain, struct pd_generator *g);
int pd_init_xavier_normal_(struct pd_tensor *t, double gain, struct pd_generator *g);
/* a: leaky_relu slope used by the gain (PyTorch's Linear default is
 * kaiming_uniform_(a = sqrt(5), fan_in, leaky_relu)). */
int pd_init_kaiming_uniform_(struct pd_tensor *t, double a, enum pd_init_mode mode, enum pd_nonlinearity nl,
                             struct pd_generator *g);
int pd_init_kaiming_normal_(struct pd_tensor *t, double a, enum pd_init_mode mode, enum pd_nonlinearity nl,
                            struct pd_generator *g);
int pd_init_zeros_(struct pd_tensor *t);
int pd_init_ones_(struct pd_tensor *t);
int pd_init_constant_(struct pd_tensor *t, double value);
/* (Semi-)orthogonal rows or columns (QR of a normal matrix in f64, signs
 * fixed by diag(R)), times gain; dims 1.. are flattened. Needs >= 2 dims. */
int pd_init_orthogonal_(struct pd_tensor *t, double gain, struct pd_generator *g);
/* Identity on a 2-d tensor (ones on the diagonal of a non-square one). */
int pd_init_eye_(struct pd_tensor *t);

/* ---- building-block modules ---------------------------------------------
 * Every module: _create (parameters initialised like PyTorch's defaults from
 * g, NULL = default generator), _destroy (NULL is a no-op), _forward, and
 * _params. Parameters are created in the calling thread's parameter dtype:
 * f32 unless pd_nn_set_param_dtype chose another (inputs must then have
 * that dtype too). */

/* The dtype new module parameters get (as torch.set_default_dtype does for
 * modules): PD_F32 by default, PD_F64 for checking and science work,
 * PD_BF16/PD_F16 where the ops support them. Per thread; the Llama model's
 * parameters stay f32. Returns the previous dtype, or PD_ERR_INVALID for a
 * dtype that is not floating point (the setting is then unchanged). */
int pd_nn_set_param_dtype(enum pd_dtype dt);
enum pd_dtype pd_nn_param_dtype(void);

/* y = x W^T + b; W [out, in], b [out]. Init: kaiming_uniform_(a = sqrt 5),
 * bias U(-1/sqrt(in), 1/sqrt(in)). */
struct pd_nn_linear {
    struct pd_tensor *weight, *bias; /* bias NULL when created without */
    int64_t in_features, out_features;
};
struct pd_nn_linear *pd_nn_linear_create(int64_t in_features, int64_t out_features, int bias, struct pd_generator *g);
void pd_nn_linear_destroy(struct pd_nn_linear *l);
struct pd_tensor *pd_nn_linear_forward(struct pd_nn_linear *l, struct pd_tensor *x);   /* [..., in] -> [..., out] */
int pd_nn_linear_params(struct pd_nn_linear *l, const char *prefix, struct pd_state_dict *sd);

/* weight [num, dim], init N(0, 1). */
struct pd_nn_embedding {
    struct pd_tensor *weight;
    int64_t num_embeddings, dim;
};
struct pd_nn_embedding *pd_nn_embedding_create(int64_t num_embeddings, int64_t dim, struct pd_generator *g);
void pd_nn_embedding_destroy(struct pd_nn_embedding *e);
struct pd_tensor *pd_nn_embedding_forward(struct pd_nn_embedding *e, struct pd_tensor *ids); /* int [...] -> [..., dim] */
int pd_nn_embedding_params(struct pd_nn_embedding *e, const char *prefix, struct pd_state_dict *sd);

/* x * rsqrt(mean(x^2) + eps) * weight over the last dim; weight init 1. */
struct pd_nn_rmsnorm {
    struct pd_tensor *weight;
    int64_t dim;
    double eps;
};
struct pd_nn_rmsnorm *pd_nn_rmsnorm_create(int64_t dim, double eps);
void pd_nn_rmsnorm_destroy(struct pd_nn_rmsnorm *n);
struct pd_tensor *pd_nn_rmsnorm_forward(struct pd_nn_rmsnorm *n, struct pd_tensor *x);
int pd_nn_rmsnorm_params(struct pd_nn_rmsnorm *n, const char *prefix, struct pd_state_dict *sd);

/* LayerNorm over the last dim; affine: weight 1, bias 0 (both NULL without). */
struct pd_nn_layernorm {
    struct pd_tensor *weight, *bias;
    int64_t dim;
    double eps;
};
struct pd_nn_layernorm *pd_nn_layernorm_create(int64_t dim, double eps, int affine);
void pd_nn_layernorm_destroy(struct pd_nn_layernorm *n);
struct pd_tensor *pd_nn_layernorm_forward(struct pd_nn_layernorm *n, struct pd_tensor *x);
int pd_nn_layernorm_params(struct pd_nn_layernorm *n, const char *prefix, struct pd_state_dict *sd);

/* GroupNorm (pd_group_norm) over x [N, num_channels, ...] in num_groups
 * groups; affine: per-channel weight 1 and bias 0 (both NULL without), as
 * torch.nn.GroupNorm. */
struct pd_nn_groupnorm {
    struct pd_tensor *weight, *bias;
    int64_t num_groups, num_channels;
    double eps;
};
struct pd_nn_groupnorm *pd_nn_groupnorm_create(int64_t num_groups, int64_t num_channels, double eps, int affine);
void pd_nn_groupnorm_destroy(struct pd_nn_groupnorm *n);
struct pd_tensor *pd_nn_groupnorm_forward(struct pd_nn_groupnorm *n, struct pd_tensor *x);
int pd_nn_groupnorm_params(struct pd_nn_groupnorm *n, const char *prefix, struct pd_state_dict *sd);

/* Dropout with probability p, active only while training (created in
 * training mode). It owns its generator, seeded at create. */
struct pd_nn_dropout {
    double p;
    int training;
    struct pd_generator *gen;
};
struct pd_nn_dropout *pd_nn_dropout_create(double p, uint64_t seed);
void pd_nn_dropout_destroy(struct pd_nn_dropout *d);
struct pd_tensor *pd_nn_dropout_forward(struct pd_nn_dropout *d, struct pd_tensor *x);

/* SwiGLU MLP: down_proj(silu(gate_proj(x)) * up_proj(x)), no biases. */
struct pd_nn_mlp {
    struct pd_nn_linear gate_proj, up_proj, down_proj;
};
struct pd_nn_mlp *pd_nn_mlp_create(int64_t dim, int64_t hidden_dim, struct pd_generator *g);
void pd_nn_mlp_destroy(struct pd_nn_mlp *m);
struct pd_tensor *pd_nn_mlp_forward(struct pd_nn_mlp *m, struct pd_tensor *x);
int pd_nn_mlp_params(struct pd_nn_mlp *m, const char *prefix, struct pd_state_dict *sd);

/* Multi-head attention with grouped-query heads and rotary positions:
 * q_proj [n_heads*head_dim, dim], k_proj/v_proj [n_kv_heads*head_dim, dim],
 * o_proj [dim, n_heads*head_dim], no biases; scale 1/sqrt(head_dim). */
struct pd_nn_attention {
    struct pd_nn_linear q_proj, k_proj, v_proj, o_proj;
    int n_heads, n_kv_heads, head_dim;
    double rope_theta;
};
struct pd_nn_attention *pd_nn_attention_create(int64_t dim, int n_heads, int n_kv_heads, double rope_theta,
                                               struct pd_generator *g);
void pd_nn_attention_destroy(struct pd_nn_attention *a);
/* x [B, T, dim]; positions int64 [T] or [B, T] (RoPE); mask optional,
 * broadcastable to [B, n_heads, T, S] (bool, true = attend, or additive
 * float); causal: key s visible to query t when s <= t + S - T.
 * k_cache/v_cache, optional [B, n_kv_heads, max_len, head_dim]: the new keys
 * and values are written at [past_len, past_len + T) and attention covers
 * [0, past_len + T) (S = past_len + T; run it under no_grad). Without a
 * cache S = T. Returns [B, T, dim]. */
struct pd_tensor *pd_nn_attention_forward(struct pd_nn_attention *a, struct pd_tensor *x, struct pd_tensor *positions,
                                          struct pd_tensor *mask, int causal, struct pd_tensor *k_cache,
                                          struct pd_tensor *v_cache, int64_t past_len);
int pd_nn_attention_params(struct pd_nn_attention *a, const char *prefix, struct pd_state_dict *sd);

/* Pre-norm decoder block: h = x + drop(attn(input_layernorm(x)));
 * out = h + drop(mlp(post_attention_layernorm(h))). */
struct pd_nn_block {
    struct pd_nn_rmsnorm input_layernorm, post_attention_layernorm;
    struct pd_nn_attention self_attn;
    struct pd_nn_mlp mlp;
    struct pd_nn_dropout *dropout; /* borrowed (the owner's), may be NULL */
};
struct pd_nn_block *pd_nn_block_create(int64_t dim, int n_heads, int n_kv_heads, int64_t hidden_dim,
                                       double norm_eps, double rope_theta, struct pd_generator *g);
void pd_nn_block_destroy(struct pd_nn_block *b);
/* Arguments as pd_nn_attention_forward. */
struct pd_tensor *pd_nn_block_forward(struct pd_nn_block *b, struct pd_tensor *x, struct pd_tensor *positions,
                                      struct pd_tensor *mask, int causal, struct pd_tensor *k_cache,
                                      struct pd_tensor *v_cache, int64_t past_len);
int pd_nn_block_params(struct pd_nn_block *b, const char *prefix, struct pd_state_dict *sd);

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
/* The generator the model's dropout draws from (borrowed; NULL when
 * cfg.dropout is 0 or m is NULL). A checkpoint that is to resume bit for bit
 * saves its state (pd_generator_get_state) and restores it
 * (pd_generator_set_state), as `paddlec train` does. */
struct pd_generator *pd_llama_dropout_generator(struct pd_llama *m);

/* Key/value cache for generation: per layer [batch, n_kv_heads, max_len, head_dim]. */
struct pd_kv_cache;
struct pd_kv_cache *pd_kv_cache_create(const struct pd_llama_config *cfg, int batch, int max_len);
void pd_kv_cache_destroy(struct pd_kv_cache *c);
void pd_kv_cache_reset(struct pd_kv_cache *c);
int pd_kv_cache_len(const struct pd_kv_cache *c);   /* positions filled so far */

/* Forward: ids [B, T] (int64) -> logits [B, T, vocab] (f32).
 * cache == NULL: a plain causal forward over positions 0..T-1 (training);
 * T <= max_seq_len.
 * cache != NULL: the T new tokens take positions len..len+T-1, their keys and
 * values are appended, and attention covers everything cached (causal);
 * len + T <= the cache's max_len, which may exceed max_seq_len (a context
 * longer than the training length: RoPE extrapolates).
 * pad_mask, optional, [B, len+T] bool over all cached + new positions (true =
 * a real token): left-padded batched prompts mask their padding out; row
 * positions for RoPE then count real tokens only. */
struct pd_tensor *pd_llama_forward(struct pd_llama *m, struct pd_tensor *ids, struct pd_kv_cache *cache,
                                   struct pd_tensor *pad_mask);
/* Mean next-token cross-entropy of forward(ids) against targets [B, T]
 * (int64; -1 and -100, Hugging Face's ignore index, are ignored). */
struct pd_tensor *pd_llama_loss(struct pd_llama *m, struct pd_tensor *ids, struct pd_tensor *targets);
/* Packed documents (several per sequence, as in Paddle's packed SFT):
 * doc_ids int64 [B, T] numbers each token's document; a document is a run
 * of equal values along T (only changes matter, not the values). Each
 * token attends causally within its own document and to nothing before it
 * (a FlashMask causal document mask), and RoPE positions restart at 0 in
 * each document, so a document's logits are those of running it alone
 * (up to rounding). No KV cache, no pad mask. Training path: the
 * attention is pd_flashmask_attention (PD_ATTN=sdpa: sdpa with the same
 * mask made dense, for comparisons). On a mesh, doc_ids may be plain
 * (whole on every rank) or distributed and split by rows like the batch
 * (Shard(0) or Replicate on each axis; include/pd/dist.h's loader): each
 * rank then builds the positions and the mask of its rows alone. */
struct pd_tensor *pd_llama_forward_packed(struct pd_llama *m, struct pd_tensor *ids, struct pd_tensor *doc_ids);
/* pd_llama_loss over pd_llama_forward_packed: the loss counts every target
 * that is not -1 or -100, across all documents. */
struct pd_tensor *pd_llama_loss_packed(struct pd_llama *m, struct pd_tensor *ids, struct pd_tensor *targets,
                                       struct pd_tensor *doc_ids);
/* Number of parameters, and model FLOPs per token for a training step
 * (forward + backward, 6N plus attention) at sequence length seq_len. */
int64_t pd_llama_num_params(const struct pd_llama *m);
double pd_llama_flops_per_token(const struct pd_llama_config *cfg, int seq_len);

#ifdef __cplusplus
}
#endif
#endif
