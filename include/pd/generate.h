/* paddle.c — text generation with a Llama model: KV-cache prefill + decode,
 * greedy or sampled (temperature, top-k, top-p), stop tokens, batched prompts
 * of different lengths (left-padded, masked per nn.h's pad_mask contract).
 *
 * Sampling draws one uniform number per row per step from a pd_generator
 * (Philox), so a run is reproducible from the generator's (seed, offset).
 */
#ifndef PD_GENERATE_H
#define PD_GENERATE_H

#include <stdint.h>

#include "pd/nn.h"
#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PD_GENERATE_MAX_STOP 16

struct pd_generate_config {
    int max_new_tokens;     /* >= 0 */
    double temperature;     /* 0 = greedy (argmax); > 0 divides the logits */
    int top_k;              /* 0 = off; keep the k most likely tokens */
    double top_p;           /* 1 = off; in (0, 1]: smallest set whose mass reaches top_p */
    int64_t stop_tokens[PD_GENERATE_MAX_STOP]; /* a row stops after emitting one of these */
    int n_stop_tokens;
    int64_t pad_id;         /* token fed for padding and for rows that have stopped */
    int use_cache;          /* 1 (default): KV cache; 0: recompute the whole forward per step
                             * (one row at a time; the reference the cache is tested against) */
};
/* max_new_tokens 64, greedy, top_k 0, top_p 1, no stop tokens, pad_id 0, use_cache 1. */
void pd_generate_config_default(struct pd_generate_config *cfg);
/* Checks the ranges above; PD_OK or PD_ERR_INVALID with a message. */
int pd_generate_config_validate(const struct pd_generate_config *cfg);

/* The generated tokens of each row (the prompt is not included; a stop token
 * that ended a row is). */
struct pd_generation;
void pd_generation_destroy(struct pd_generation *g);
int pd_generation_rows(const struct pd_generation *g);
int pd_generation_len(const struct pd_generation *g, int row);
const int64_t *pd_generation_tokens(const struct pd_generation *g, int row);   /* borrowed */
/* 1 if the row ended on a stop token, 0 if it ran to max_new_tokens. */
int pd_generation_stopped(const struct pd_generation *g, int row);

/* Generates for n_rows prompts (prompts[i] has prompt_lens[i] >= 1 ids in
 * [0, vocab)). Prompt + max_new_tokens must fit the model's max_seq_len. The
 * model runs in eval mode under no_grad (its training flag is restored).
 * rng may be NULL (the default generator); greedy decoding draws nothing.
 * Returns NULL with a message on bad input. */
struct pd_generation *pd_generate(struct pd_llama *m, const int64_t *const *prompts, const int *prompt_lens,
                                  int n_rows, const struct pd_generate_config *cfg, struct pd_generator *rng);

/* One sampling decision over a row of logits[vocab] (the building block of
 * pd_generate, public for tests and custom loops). probs, if not NULL,
 * receives the final distribution sampled from (vocab entries, zeros for
 * filtered tokens; one-hot for greedy). u is a uniform number in [0, 1).
 * Returns the token id, or -1 with a message (bad config, no finite logit). */
int64_t pd_sample_logits(const float *logits, int vocab, const struct pd_generate_config *cfg, double u,
                         double *probs);

#ifdef __cplusplus
}
#endif
#endif
