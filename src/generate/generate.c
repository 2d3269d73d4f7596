/* paddle.c — generation: KV-cache prefill + decode and the sampling rule.
 *
 * Invariants:
 *   - a batch is left-padded to its longest prompt; the pad_mask handed to
 *     pd_llama_forward covers every cached + new position ([B, len + T]) and
 *     is only passed when some row is actually padded;
 *   - each step draws exactly one uniform per row (none when greedy) from the
 *     caller's generator, in both the cached and the recompute path, so the
 *     two paths sample the same tokens from the same generator state;
 *   - a row that has stopped keeps being fed pad_id (the batch stays
 *     rectangular) but its output no longer grows;
 *   - a session's cache holds a prefix of its history (pd_kv_cache_len
 *     tokens); a turn feeds the rest (at least the last token generated,
 *     which no turn feeds) before its own prompt, so the cache never holds
 *     a token the history lacks, and after an error it is emptied if it ran
 *     past the history kept.
 * Ownership: the pd_generation owns its token arrays; every tensor made here
 * lives in a per-step scope; pd_generate's KV cache is created and destroyed
 * within the call, a session's lives as long as the session.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pd/dist.h"
#include "pd/generate.h"

struct pd_generation {
    int rows;
    int *len;
    int *stopped;
    int64_t **tok;
};

void pd_generate_config_default(struct pd_generate_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_new_tokens = 64;
    cfg->temperature = 0;
    cfg->top_k = 0;
    cfg->top_p = 1;
    cfg->pad_id = 0;
    cfg->use_cache = 1;
}

int pd_generate_config_validate(const struct pd_generate_config *cfg)
{
    if (!cfg) return pdi_errorf(PD_ERR_INVALID, "generate: config is NULL");
    if (cfg->max_new_tokens < 0)
        return pdi_errorf(PD_ERR_INVALID, "generate: max_new_tokens must be >= 0 (got %d)", cfg->max_new_tokens);
    if (!(cfg->temperature >= 0) || isinf(cfg->temperature))
        return pdi_errorf(PD_ERR_INVALID, "generate: temperature must be finite and >= 0 (got %g)", cfg->temperature);
    if (cfg->top_k < 0) return pdi_errorf(PD_ERR_INVALID, "generate: top_k must be >= 0 (got %d)", cfg->top_k);
    if (!(cfg->top_p > 0 && cfg->top_p <= 1))
        return pdi_errorf(PD_ERR_INVALID, "generate: top_p must be in (0, 1] (got %g)", cfg->top_p);
    if (cfg->n_stop_tokens < 0 || cfg->n_stop_tokens > PD_GENERATE_MAX_STOP)
        return pdi_errorf(PD_ERR_INVALID, "generate: n_stop_tokens must be in [0, %d] (got %d)", PD_GENERATE_MAX_STOP,
                          cfg->n_stop_tokens);
    if (cfg->max_ctx < 0) return pdi_errorf(PD_ERR_INVALID, "generate: max_ctx must be >= 0 (got %d)", cfg->max_ctx);
    return PD_OK;
}

/* ---- sampling ---------------------------------------------------------- */

struct scored {
    double z;
    int id;
};

/* Descending by score, ties by lower id (deterministic, matches argmax). */
static int cmp_scored(const void *pa, const void *pb)
{
    const struct scored *a = pa, *b = pb;
    if (a->z > b->z) return -1;
    if (a->z < b->z) return 1;
    return (a->id > b->id) - (a->id < b->id);
}

int64_t pd_sample_logits(const float *logits, int vocab, const struct pd_generate_config *cfg, double u,
                         double *probs)
{
    if (pd_generate_config_validate(cfg)) return -1;
    if (!logits || vocab <= 0) return pdi_errorf(PD_ERR_INVALID, "sample: no logits (vocab %d)", vocab);
    if (!(u >= 0 && u < 1)) return pdi_errorf(PD_ERR_INVALID, "sample: u must be in [0, 1) (got %g)", u);
    int best = -1;
    for (int i = 0; i < vocab; i++) {
        if (isnan(logits[i])) return pdi_errorf(PD_ERR_INVALID, "sample: logit %d is NaN", i);
        if (logits[i] > -INFINITY && (best < 0 || logits[i] > logits[best])) best = i;
    }
    if (best < 0) return pdi_errorf(PD_ERR_INVALID, "sample: every logit is -inf");
    if (probs) memset(probs, 0, sizeof *probs * (size_t)vocab);
    if (cfg->temperature == 0 || cfg->top_k == 1) {
        if (probs) probs[best] = 1;
        return best;
    }
    struct scored *s = pdi_malloc(sizeof *s * (size_t)vocab);
    if (!s) return pdi_errorf(PD_ERR_NOMEM, "sample: out of memory");
    for (int i = 0; i < vocab; i++) s[i] = (struct scored){(double)logits[i] / cfg->temperature, i};
    qsort(s, (size_t)vocab, sizeof *s, cmp_scored);
    int n = vocab;
    if (cfg->top_k > 0 && cfg->top_k < n) n = cfg->top_k;
    while (n > 1 && s[n - 1].z == -INFINITY) n--;
    /* Softmax over the kept prefix, stored back into z as probabilities. */
    double zmax = s[0].z, total = 0;
    for (int i = 0; i < n; i++) total += (s[i].z = exp(s[i].z - zmax));
    for (int i = 0; i < n; i++) s[i].z /= total;
    if (cfg->top_p < 1) {
        /* Nucleus: the smallest prefix whose mass reaches top_p (at least one). */
        double cum = 0;
        int keep = 0;
        while (keep < n) {
            cum += s[keep++].z;
            if (cum >= cfg->top_p) break;
        }
        n = keep;
        for (int i = 0; i < n; i++) s[i].z /= cum;
    }
    double target = u, cum = 0;
    int pick = s[n - 1].id;   /* rounding: u close to 1 falls on the last kept token */
    for (int i = 0; i < n; i++) {
        cum += s[i].z;
        if (target < cum) {
            pick = s[i].id;
            break;
        }
    }
    if (probs)
        for (int i = 0; i < n; i++) probs[s[i].id] = s[i].z;
    free(s);
    return pick;
}

/* ---- results ------------------------------------------------------------ */

void pd_generation_destroy(struct pd_generation *g)
{
    if (!g) return;
    for (int i = 0; i < g->rows; i++) free(g->tok ? g->tok[i] : NULL);
    free(g->tok);
    free(g->len);
    free(g->stopped);
    free(g);
}

int pd_generation_rows(const struct pd_generation *g) { return g ? g->rows : 0; }

int pd_generation_len(const struct pd_generation *g, int row)
{
    return g && row >= 0 && row < g->rows ? g->len[row] : 0;
}

const int64_t *pd_generation_tokens(const struct pd_generation *g, int row)
{
    return g && row >= 0 && row < g->rows ? g->tok[row] : NULL;
}

int pd_generation_stopped(const struct pd_generation *g, int row)
{
    return g && row >= 0 && row < g->rows ? g->stopped[row] : 0;
}

static struct pd_generation *generation_new(int rows, int cap)
{
    struct pd_generation *g = pdi_calloc(1, sizeof *g);
    if (!g) return NULL;
    g->rows = rows;
    g->len = pdi_calloc((size_t)rows, sizeof *g->len);
    g->stopped = pdi_calloc((size_t)rows, sizeof *g->stopped);
    g->tok = pdi_calloc((size_t)rows, sizeof *g->tok);
    if (!g->len || !g->stopped || !g->tok) goto fail;
    for (int i = 0; i < rows; i++)
        if (!(g->tok[i] = pdi_malloc(sizeof **g->tok * (size_t)(cap > 0 ? cap : 1)))) goto fail;
    return g;
fail:
    pd_generation_destroy(g);
    return NULL;
}

/* ---- the decode loop ------------------------------------------------------ */

static int is_stop(const struct pd_generate_config *cfg, int64_t t)
{
    for (int i = 0; i < cfg->n_stop_tokens; i++)
        if (cfg->stop_tokens[i] == t) return 1;
    return 0;
}

/* Last-position logits of x [B, T, V] into out [B * V] (f32). */
static int last_logits(struct pd_tensor *logits, float *out)
{
    if (!logits) return pdi_status_of(NULL, "generate: forward");
    int64_t t = pd_tensor_dim(logits, 1);
    struct pd_tensor *last = pd_slice(logits, 1, t - 1, t, 1);
    if (last && last->dist) last = pd_dtensor_full(last); /* a distributed model's (docs/distributed.md) */
    return pd_to_buffer(last, out, PD_F32);
}

/* Draws one uniform per row (the same count whichever path runs). */
static int draw_uniforms(const struct pd_generate_config *cfg, struct pd_generator *rng, int rows, double *u)
{
    if (cfg->temperature == 0 || cfg->top_k == 1) {
        for (int i = 0; i < rows; i++) u[i] = 0;
        return PD_OK;
    }
    struct pd_tensor *r = pd_rand((int64_t[]){rows}, 1, PD_F64, rng);
    if (!r) return pd_last_status();
    return pd_to_buffer(r, u, PD_F64);
}

/* One decision per live row; returns 1 when every row has stopped. */
static int sample_rows(struct pd_generation *g, const struct pd_generate_config *cfg, const float *logits, int vocab,
                       const double *u, int64_t *next, int *err)
{
    int all_done = 1;
    for (int b = 0; b < g->rows; b++) {
        if (g->stopped[b]) {
            next[b] = cfg->pad_id;
            continue;
        }
        int64_t t = pd_sample_logits(logits + (size_t)b * (size_t)vocab, vocab, cfg, u[b], NULL);
        if (t < 0) {
            *err = pd_last_status();
            return 1;
        }
        g->tok[b][g->len[b]++] = t;
        next[b] = t;
        if (is_stop(cfg, t) || (cfg->on_token && cfg->on_token(cfg->on_token_user, b, g->tok[b], g->len[b])))
            g->stopped[b] = 1;
        else
            all_done = 0;
    }
    return all_done;
}

/* The checks pd_generate and a session's turn share. */

/* what (a prompt, or a session's history and prompt: `len` tokens) +
 * max_new must fit max_ctx, or the model's max_seq_len when it is 0. */
static int check_room(const struct pd_llama_config *mc, const char *what, int len, int max_new, int max_ctx)
{
    if ((int64_t)len + max_new <= (max_ctx > 0 ? max_ctx : mc->max_seq_len)) return PD_OK;
    if (max_ctx > 0)
        return pdi_errorf(PD_ERR_INVALID, "generate: %s (%d tokens) + max_new_tokens (%d) exceeds max_ctx (%d)", what,
                          len, max_new, max_ctx);
    return pdi_errorf(PD_ERR_INVALID, "generate: %s (%d tokens) + max_new_tokens (%d) exceeds the model's max_seq_len (%d)",
                      what, len, max_new, mc->max_seq_len);
}

/* The model and the config (its ranges, a pad_id in the vocabulary). */
static int check_setup(struct pd_llama *m, const struct pd_generate_config *cfg)
{
    if (!m) return pdi_errorf(PD_ERR_INVALID, "generate: model is NULL");
    if (pd_generate_config_validate(cfg)) return PD_ERR_INVALID;
    int64_t v = pd_llama_get_config(m)->vocab_size;
    if (cfg->pad_id < 0 || cfg->pad_id >= v)
        return pdi_errorf(PD_ERR_INVALID, "generate: pad_id %lld outside the vocabulary [0, %lld)",
                          (long long)cfg->pad_id, (long long)v);
    return PD_OK;
}

/* Prompt `row`'s n ids, each in the vocabulary [0, v). */
static int check_tokens(const int64_t *p, int n, int64_t v, int row)
{
    for (int i = 0; i < n; i++)
        if (p[i] < 0 || p[i] >= v)
            return pdi_errorf(PD_ERR_INVALID, "generate: prompt %d token %d = %lld outside the vocabulary [0, %lld)", row,
                              i, (long long)p[i], (long long)v);
    return PD_OK;
}

static int check_inputs(struct pd_llama *m, const int64_t *const *prompts, const int *lens, int rows,
                        const struct pd_generate_config *cfg, int *max_len)
{
    if (check_setup(m, cfg)) return PD_ERR_INVALID;
    if (rows <= 0 || !prompts || !lens)
        return pdi_errorf(PD_ERR_INVALID, "generate: need at least one prompt (got %d)", rows);
    const struct pd_llama_config *mc = pd_llama_get_config(m);
    *max_len = 0;
    for (int b = 0; b < rows; b++) {
        if (!prompts[b] || lens[b] < 1)
            return pdi_errorf(PD_ERR_INVALID, "generate: prompt %d is empty (a prompt needs at least one token)", b);
        if (check_tokens(prompts[b], lens[b], mc->vocab_size, b)) return PD_ERR_INVALID;
        if (lens[b] > *max_len) *max_len = lens[b];
    }
    return check_room(mc, "prompt", *max_len, cfg->max_new_tokens, cfg->max_ctx);
}

/* Decoding with a KV cache that already holds pd_kv_cache_len(cache)
 * positions: the first step feeds ids [rows, t0] (the prefill), each later
 * one the tokens just sampled. mask, NULL or [rows, total] over every cache
 * position (0 = padding), is handed to the forward when given. */
static int run_cached(struct pd_llama *m, struct pd_kv_cache *cache, const int64_t *ids, int t0, const uint8_t *mask,
                      int total, const struct pd_generate_config *cfg, struct pd_generator *rng, struct pd_generation *g,
                      float *logits, double *u, int64_t *next)
{
    int rows = g->rows, vocab = pd_llama_get_config(m)->vocab_size, err = PD_OK;
    uint8_t *mcols = mask ? pdi_malloc((size_t)rows * (size_t)total) : NULL;
    if (mask && !mcols) return pdi_errorf(PD_ERR_NOMEM, "generate: out of memory");
    int pos = pd_kv_cache_len(cache);   /* positions in the cache */
    for (int step = 0; step < cfg->max_new_tokens && !err; step++) {
        int t = step == 0 ? t0 : 1;
        const int64_t *in = step == 0 ? ids : next;
        int scope_tok = pd_scope_begin();
        struct pd_tensor *x = pd_from_buffer(in, (int64_t[]){rows, t}, 2, PD_I64), *pm = NULL;
        if (mask) {
            for (int b = 0; b < rows; b++) memcpy(mcols + (size_t)b * (pos + t), mask + (size_t)b * total, (size_t)(pos + t));
            pm = pd_from_buffer(mcols, (int64_t[]){rows, pos + t}, 2, PD_BOOL);
        }
        /* a mask that could not be made is an error, not "no padding" */
        err = mask && !pm ? pd_last_status() : last_logits(pd_llama_forward(m, x, cache, pm), logits);
        if (!err) err = draw_uniforms(cfg, rng, rows, u);
        pd_scope_end(scope_tok);
        pos += t;
        if (err) break;
        if (sample_rows(g, cfg, logits, vocab, u, next, &err)) break;
    }
    free(mcols);
    return err;
}

/* pd_generate's cached path: prefill the left-padded batch into a cache of
 * its own, then one token per step. */
static int generate_cached(struct pd_llama *m, const int64_t *const *prompts, const int *lens, int max_len,
                           const struct pd_generate_config *cfg, struct pd_generator *rng, struct pd_generation *g,
                           float *logits, double *u, int64_t *next)
{
    int rows = g->rows, total = max_len + cfg->max_new_tokens;
    int padded = 0;
    for (int b = 0; b < rows; b++) padded |= lens[b] != max_len;
    struct pd_kv_cache *cache = pd_kv_cache_create(pd_llama_get_config(m), rows, total);
    int64_t *ids = pdi_malloc(sizeof *ids * (size_t)rows * (size_t)max_len);
    uint8_t *mask = pdi_malloc((size_t)rows * (size_t)total);
    int err = PD_OK;
    if (!cache || !ids || !mask) {
        err = cache ? pdi_errorf(PD_ERR_NOMEM, "generate: out of memory") : pd_last_status();
        goto done;
    }
    memset(mask, 1, (size_t)rows * (size_t)total);
    for (int b = 0; b < rows; b++) {
        int pad = max_len - lens[b];
        for (int i = 0; i < max_len; i++) ids[(size_t)b * max_len + i] = i < pad ? cfg->pad_id : prompts[b][i - pad];
        memset(mask + (size_t)b * total, 0, (size_t)pad);
    }
    err = run_cached(m, cache, ids, max_len, padded ? mask : NULL, total, cfg, rng, g, logits, u, next);
done:
    pd_kv_cache_destroy(cache);
    free(ids);
    free(mask);
    return err;
}

/* Reference path: the whole sequence of each live row through a plain
 * forward at every step (no cache, no padding). */
static int run_uncached(struct pd_llama *m, const int64_t *const *prompts, const int *lens, int max_len,
                        const struct pd_generate_config *cfg, struct pd_generator *rng, struct pd_generation *g,
                        float *logits, double *u, int64_t *next)
{
    int rows = g->rows, vocab = pd_llama_get_config(m)->vocab_size, err = PD_OK;
    int max_seq = pd_llama_get_config(m)->max_seq_len;
    int64_t *seq = pdi_malloc(sizeof *seq * (size_t)(max_len + cfg->max_new_tokens));
    if (!seq) return pdi_errorf(PD_ERR_NOMEM, "generate: out of memory");
    for (int step = 0; step < cfg->max_new_tokens && !err; step++) {
        int scope_tok = pd_scope_begin();
        for (int b = 0; b < rows && !err; b++) {
            if (g->stopped[b]) continue;
            int n = lens[b];
            memcpy(seq, prompts[b], sizeof *seq * (size_t)n);
            memcpy(seq + n, g->tok[b], sizeof *seq * (size_t)g->len[b]);
            n += g->len[b];
            struct pd_tensor *x = pd_from_buffer(seq, (int64_t[]){1, n}, 2, PD_I64);
            /* past the training length (max_ctx) the plain forward refuses: a
             * cache of this step's own, filled in one go, is the same forward */
            struct pd_kv_cache *c = n > max_seq ? pd_kv_cache_create(pd_llama_get_config(m), 1, n) : NULL;
            err = n > max_seq && !c ? pd_last_status() : last_logits(pd_llama_forward(m, x, c, NULL), logits + (size_t)b * vocab);
            pd_kv_cache_destroy(c);
        }
        if (!err) err = draw_uniforms(cfg, rng, rows, u);
        pd_scope_end(scope_tok);
        if (err) break;
        if (sample_rows(g, cfg, logits, vocab, u, next, &err)) break;
    }
    free(seq);
    return err;
}

/* What one call decodes: prompts (pd_generate), or a session's cache and
 * the chunk of its history not yet in it. */
struct job {
    const int64_t *const *prompts;
    const int *lens;
    int rows, max_len;
    struct pd_kv_cache *cache;
    const int64_t *chunk;
    int chunk_len;
};

/* Buffers, eval mode and no_grad around one decode; NULL on error. */
static struct pd_generation *decode(struct pd_llama *m, const struct job *j, const struct pd_generate_config *cfg,
                                    struct pd_generator *rng)
{
    int vocab = pd_llama_get_config(m)->vocab_size, rows = j->rows;
    struct pd_generation *g = generation_new(rows, cfg->max_new_tokens);
    float *logits = pdi_malloc(sizeof *logits * (size_t)rows * (size_t)vocab);
    double *u = pdi_malloc(sizeof *u * (size_t)rows);
    int64_t *next = pdi_malloc(sizeof *next * (size_t)rows);
    int err = PD_OK;
    if (!g || !logits || !u || !next) {
        err = pdi_errorf(PD_ERR_NOMEM, "generate: out of memory");
    } else {
        int was_training = pd_llama_is_training(m);
        pd_llama_train(m, 0);
        int prev = pd_no_grad_begin();
        if (j->cache && cfg->use_cache)
            err = run_cached(m, j->cache, j->chunk, j->chunk_len, NULL, 0, cfg, rng, g, logits, u, next);
        else
            err = (cfg->use_cache ? generate_cached : run_uncached)(m, j->prompts, j->lens, j->max_len, cfg, rng, g,
                                                                    logits, u, next);
        pd_grad_mode_end(prev);
        pd_llama_train(m, was_training);
    }
    free(logits);
    free(u);
    free(next);
    if (err) {
        pd_generation_destroy(g);
        return NULL;
    }
    return g;
}

struct pd_generation *pd_generate(struct pd_llama *m, const int64_t *const *prompts, const int *prompt_lens,
                                  int n_rows, const struct pd_generate_config *cfg, struct pd_generator *rng)
{
    int max_len = 0;
    if (check_inputs(m, prompts, prompt_lens, n_rows, cfg, &max_len)) return NULL;
    struct job j = {.prompts = prompts, .lens = prompt_lens, .rows = n_rows, .max_len = max_len};
    return decode(m, &j, cfg, rng);
}

/* ---- sessions: one row, the cache kept across turns ----------------------- */

struct pd_generate_session {
    struct pd_llama *m;
    struct pd_kv_cache *cache;   /* holds hist[0 .. pd_kv_cache_len) */
    int max_ctx, len;
    int64_t *hist;               /* max_ctx entries */
};

struct pd_generate_session *pd_generate_session_create(struct pd_llama *m, int max_ctx)
{
    if (!m) return pdi_error(PD_ERR_NULL, "generate session: model is NULL");
    const struct pd_llama_config *mc = pd_llama_get_config(m);
    if (max_ctx < 0) return pdi_error(PD_ERR_INVALID, "generate session: max_ctx must be >= 0 (got %d)", max_ctx);
    struct pd_generate_session *s = pdi_calloc(1, sizeof *s);
    if (!s) return pdi_error(PD_ERR_NOMEM, "generate session: out of memory");
    s->m = m;
    s->max_ctx = max_ctx > 0 ? max_ctx : mc->max_seq_len;
    s->hist = pdi_malloc(sizeof *s->hist * (size_t)s->max_ctx);
    s->cache = s->hist ? pd_kv_cache_create(mc, 1, s->max_ctx) : NULL;
    if (!s->cache) {
        if (!s->hist) pdi_errorf(PD_ERR_NOMEM, "generate session: out of memory");
        pd_generate_session_destroy(s);
        return NULL;
    }
    return s;
}

void pd_generate_session_destroy(struct pd_generate_session *s)
{
    if (!s) return;
    pd_kv_cache_destroy(s->cache);
    free(s->hist);
    free(s);
}

int pd_generate_session_len(const struct pd_generate_session *s) { return s ? s->len : 0; }
const int64_t *pd_generate_session_history(const struct pd_generate_session *s) { return s ? s->hist : NULL; }
int pd_generate_session_max_ctx(const struct pd_generate_session *s) { return s ? s->max_ctx : 0; }

struct pd_generation *pd_generate_session_next(struct pd_generate_session *s, const int64_t *ids, int n,
                                               const struct pd_generate_config *cfg, struct pd_generator *rng)
{
    if (!s) return pdi_error(PD_ERR_NULL, "generate session: session is NULL");
    if (check_setup(s->m, cfg)) return NULL;
    if (n < 0 || (n > 0 && !ids))
        return pdi_error(PD_ERR_INVALID, "generate session: need n >= 0 prompt ids (got %d%s)", n, ids ? "" : ", NULL");
    if (s->len + n < 1)
        return pdi_error(PD_ERR_INVALID, "generate session: the first turn's prompt is empty (it needs a token)");
    /* the turn fits cfg->max_ctx when it is set, and the cache (the session's max_ctx) always */
    int limit = cfg->max_ctx > 0 && cfg->max_ctx < s->max_ctx ? cfg->max_ctx : s->max_ctx;
    if (check_tokens(ids, n, pd_llama_get_config(s->m)->vocab_size, 0) ||
        check_room(pd_llama_get_config(s->m), "history + prompt", s->len + n, cfg->max_new_tokens, limit))
        return NULL;
    int old = s->len, len = s->len + n, in_cache = pd_kv_cache_len(s->cache);
    if (n) memcpy(s->hist + old, ids, sizeof *ids * (size_t)n);
    const int64_t *hist = s->hist;
    struct job j = {.prompts = &hist, .lens = &len, .rows = 1, .max_len = len, .cache = s->cache,
                    .chunk = s->hist + in_cache, .chunk_len = len - in_cache};
    struct pd_generation *g = decode(s->m, &j, cfg, rng);
    if (!g) {
        /* the cache may hold this turn's prompt: rebuilt from the history next time */
        if (pd_kv_cache_len(s->cache) > old) pd_kv_cache_reset(s->cache);
        return NULL;
    }
    memcpy(s->hist + len, g->tok[0], sizeof *s->hist * (size_t)g->len[0]);
    s->len = len + g->len[0];
    return g;
}
