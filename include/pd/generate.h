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
    int max_ctx;            /* 0 (default): prompt + max_new_tokens must fit the model's max_seq_len
                             * (its training length). > 0: they must fit max_ctx instead, which may
                             * exceed the training length: the KV cache is sized to it and RoPE
                             * positions run past those seen in training (what the model does
                             * there is its own; paddlec generate --ctx warns) */
    /* Called after each token a row emits (tokens: the row's output so far,
     * n >= 1); nonzero ends the row as a stop token does (the token is kept,
     * pd_generation_stopped says 1). NULL: off. For stopping on text
     * (paddlec generate --stop) or streaming. */
    int (*on_token)(void *user, int row, const int64_t *tokens, int n);
    void *on_token_user;
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
 * [0, vocab)). Prompt + max_new_tokens must fit the model's max_seq_len (or
 * cfg->max_ctx). The
 * model runs in eval mode under no_grad (its training flag is restored).
 * rng may be NULL (the default generator); greedy decoding draws nothing.
 * Returns NULL with a message on bad input. */
struct pd_generation *pd_generate(struct pd_llama *m, const int64_t *const *prompts, const int *prompt_lens,
                                  int n_rows, const struct pd_generate_config *cfg, struct pd_generator *rng);

/* Multi-turn generation (a chat; paddlec generate --interactive): one row
 * whose KV cache is kept across turns, so that a turn encodes only its new
 * tokens. The history is every prompt and generated token so far; a turn
 * appends its prompt, generates as pd_generate would on the whole history
 * (the same tokens, up to the rounding of a prefill done in pieces) and
 * appends what it generated. max_ctx: positions the cache holds (0: the
 * model's max_seq_len; larger: as pd_generate_config.max_ctx); history +
 * prompt + max_new_tokens must fit it, and cfg->max_ctx too when that is
 * set (> 0; a larger one cannot widen the cache). The model is borrowed and
 * must outlive the session. */
struct pd_generate_session;
struct pd_generate_session *pd_generate_session_create(struct pd_llama *m, int max_ctx);
void pd_generate_session_destroy(struct pd_generate_session *s);
int pd_generate_session_len(const struct pd_generate_session *s);   /* history tokens */
const int64_t *pd_generate_session_history(const struct pd_generate_session *s);   /* borrowed */
int pd_generate_session_max_ctx(const struct pd_generate_session *s);
/* One turn: ids[0..n) (n >= 0; the first turn needs n >= 1) then up to
 * cfg->max_new_tokens generated ones. Returns the generated tokens (one
 * row), or NULL with a message; after an error the history is as before the
 * call (the cache is rebuilt from it on the next turn). */
struct pd_generation *pd_generate_session_next(struct pd_generate_session *s, const int64_t *ids, int n,
                                               const struct pd_generate_config *cfg, struct pd_generator *rng);

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
