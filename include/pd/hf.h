/* paddle.c — Hugging Face Llama directories (docs/hf.md).
 *
 * A Hugging Face LlamaForCausalLM directory holds config.json and the
 * weights, either model.safetensors or shards listed by
 * model.safetensors.index.json ({"weight_map": {tensor name: shard file}}).
 * The tensor names are the ones pd_llama_state_dict already uses
 * (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, ...,
 * model.norm.weight, lm_head.weight), and the model computes what
 * transformers' LlamaForCausalLM computes: RoPE rotates the two halves of
 * each head (rotate_half), so q_proj/k_proj load as they are, with no
 * permutation (tests/test_llama_parity.c and tests/test_hf.c check it).
 *
 * Conventions honoured on load:
 *   - weights in F32, BF16, F16 or F64 are converted to the model's f32;
 *   - tie_word_embeddings: lm_head is the embedding; a lm_head.weight the
 *     file may still carry is ignored; rotary_emb.inv_freq buffers of older
 *     exports are ignored;
 *   - rms_norm_eps, rope_theta (or rope_parameters.rope_theta, transformers
 *     5), num_key_value_heads (grouped-query
 *     attention), max_position_embeddings (the model's max_seq_len);
 *   - what the model cannot compute is refused with a one-line error:
 *     rope_scaling or rope_parameters other than null or the default RoPE
 *     (the scaled variants: "llama3", "linear", "dynamic", "yarn", ...),
 *     hidden_act other than "silu",
 *     attention_bias / mlp_bias true, a head_dim other than
 *     hidden_size / num_attention_heads, sliding_window, a model_type other
 *     than "llama", quantization_config.
 * The tokenizer (tokenizer.json) is not read here: pd_tokenizer_load
 * (include/pd/data.h) reads it. Files are untrusted input: shard names must
 * be plain file names inside the directory.
 */
#ifndef PD_HF_H
#define PD_HF_H

#include "pd/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cfg from the text of a Hugging Face config.json (the keys above; keys the
 * model does not depend on, such as bos_token_id or torch_dtype, are
 * ignored). initializer_range becomes init_std; dropout is 0. Status. */
int pd_llama_config_from_hf(struct pd_llama_config *cfg, const char *json);
/* config.json text for cfg (malloc'd; free()), architectures
 * ["LlamaForCausalLM"], torch_dtype naming dtype (PD_F32, PD_BF16, PD_F16). */
char *pd_llama_config_to_hf(const struct pd_llama_config *cfg, enum pd_dtype dtype);

/* The model of a Hugging Face directory (config.json + model.safetensors or
 * model.safetensors.index.json and its shards). NULL on error. */
struct pd_llama *pd_llama_from_hf(const char *dir);
/* The weights of dir into an existing model of the same config (strict:
 * every parameter present, every tensor known, shapes equal). Status. */
int pd_llama_load_hf_weights(struct pd_llama *m, const char *dir);

/* Writes m to dir (created if missing, one level): config.json and
 * model.safetensors in dtype (PD_F32, PD_BF16 or PD_F16; metadata
 * {"format": "pt"}), both atomically; a tied model has no lm_head.weight
 * entry, as transformers saves it. Status. */
int pd_llama_save_hf(struct pd_llama *m, const char *dir, enum pd_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
