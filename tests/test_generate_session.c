/* paddle.c — tests of generation past the training length (max_ctx), the
 * per-token callback (stopping on anything, as paddlec generate --stop
 * does on text) and sessions (include/pd/generate.h): each turn of a session
 * gives the tokens pd_generate gives on the whole history, with and without
 * the cache, within and past the training length.
 */
#include <string.h>

#include "pd/generate.h"
#include "pt.h"
#include "tiny_llama.h"

static struct pd_llama *tiny_model(void) { return pt_tiny_gen_model(24); }

static int same_tokens(const struct pd_generation *a, const int64_t *b, int n)
{
    return pd_generation_len(a, 0) == n && !memcmp(pd_generation_tokens(a, 0), b, sizeof *b * (size_t)n);
}

/* A prompt and its greedy continuation through pd_generate. */
static struct pd_generation *alone(struct pd_llama *m, const int64_t *p, int n, int max_new, int max_ctx, int cache)
{
    struct pd_generate_config c;
    pd_generate_config_default(&c);
    c.max_new_tokens = max_new;
    c.max_ctx = max_ctx;
    c.use_cache = cache;
    return pd_generate(m, &p, &n, 1, &c, NULL);
}

static void test_max_ctx(struct pd_llama *m)
{
    const int64_t p[] = {1, 2, 3, 4, 5, 6, 7};
    /* past max_seq_len 24 without max_ctx: refused, as before */
    PT_CHECK(!alone(m, p, 7, 30, 0, 1) && strstr(pd_last_error(), "max_seq_len (24)"));
    PT_CHECK(!alone(m, p, 7, 30, 36, 1) && strstr(pd_last_error(), "max_ctx (36)"));
    struct pd_generation *c = alone(m, p, 7, 30, 37, 1), *u = alone(m, p, 7, 30, 37, 0), *in = alone(m, p, 7, 17, 0, 1);
    PT_CHECK(c && u && in && pd_generation_len(c, 0) == 30);
    /* the cache and the recomputed forward agree past the training length,
     * and within it the tokens are those of a run that stays inside */
    if (c && u && in) {
        PT_CHECK(same_tokens(u, pd_generation_tokens(c, 0), 30));
        PT_CHECK(same_tokens(in, pd_generation_tokens(c, 0), 17));
    }
    pd_generation_destroy(c);
    pd_generation_destroy(u);
    pd_generation_destroy(in);
    /* the forward: a plain one stops at max_seq_len, a cached one at the cache's size */
    int scope = pd_scope_begin();
    struct pd_tensor *ids = pd_zeros((int64_t[]){1, 30}, 2, PD_I64);
    PT_CHECK(!pd_llama_forward(m, ids, NULL, NULL) && strstr(pd_last_error(), "max_seq_len 24"));
    struct pd_kv_cache *kv = pd_kv_cache_create(pd_llama_get_config(m), 1, 32);
    PT_CHECK(pd_llama_forward(m, ids, kv, NULL) != NULL && pd_kv_cache_len(kv) == 30);
    PT_CHECK(!pd_llama_forward(m, ids, kv, NULL) && strstr(pd_last_error(), "KV cache's max_len 32"));
    pd_kv_cache_destroy(kv);
    pd_scope_end(scope);
    struct pd_generate_config bad;
    pd_generate_config_default(&bad);
    bad.max_ctx = -1;
    PT_CHECK(pd_generate_config_validate(&bad) == PD_ERR_INVALID && strstr(pd_last_error(), "max_ctx"));
}

struct seen {
    int calls, last_row, stop_at;
};

static int on_token(void *user, int row, const int64_t *tokens, int n)
{
    struct seen *s = user;
    (void)tokens;
    s->calls++;
    s->last_row = row;
    return row == 1 && n == s->stop_at;
}

static void test_on_token(struct pd_llama *m)
{
    const int64_t p0[] = {1, 2, 3}, p1[] = {4, 5};
    const int64_t *prompts[] = {p0, p1};
    int lens[] = {3, 2};
    struct seen s = {0, -1, 4};
    struct pd_generate_config c;
    pd_generate_config_default(&c);
    c.max_new_tokens = 6;
    c.on_token = on_token;
    c.on_token_user = &s;
    for (int cache = 0; cache < 2; cache++) {
        c.use_cache = cache;
        s.calls = 0;
        struct pd_generation *g = pd_generate(m, prompts, lens, 2, &c, NULL);
        PT_CHECK(g != NULL);
        if (!g) continue;
        /* row 1 ends after its 4th token (kept), row 0 runs to 6 */
        PT_CHECK(pd_generation_len(g, 0) == 6 && !pd_generation_stopped(g, 0));
        PT_CHECK(pd_generation_len(g, 1) == 4 && pd_generation_stopped(g, 1));
        PT_CHECK(s.calls == 10);
        pd_generation_destroy(g);
    }
}

/* Turns of a session against pd_generate on the whole history. */
static void session_turns(struct pd_llama *m, int max_ctx, int cache, int max_new)
{
    static const int64_t t0[] = {1, 2, 3, 4, 5}, t1[] = {7, 8}, t3[] = {30, 31, 32};
    const int64_t *turn[] = {t0, t1, NULL, t3};
    const int n[] = {5, 2, 0, 3};
    struct pd_generate_session *s = pd_generate_session_create(m, max_ctx);
    PT_CHECK(s != NULL);
    if (!s) return;
    struct pd_generate_config c;
    pd_generate_config_default(&c);
    c.max_new_tokens = max_new;
    c.use_cache = cache;
    int64_t hist[128];
    int len = 0;
    for (int i = 0; i < 4; i++) {
        if (n[i]) memcpy(hist + len, turn[i], sizeof *hist * (size_t)n[i]);
        len += n[i];
        struct pd_generation *a = pd_generate_session_next(s, turn[i], n[i], &c, NULL);
        struct pd_generation *b = alone(m, hist, len, max_new, max_ctx, 1);
        PT_CHECK(a && b);
        if (a && b) PT_CHECK(same_tokens(a, pd_generation_tokens(b, 0), pd_generation_len(b, 0)));
        if (b) memcpy(hist + len, pd_generation_tokens(b, 0), sizeof *hist * (size_t)pd_generation_len(b, 0));
        len += pd_generation_len(b, 0);
        PT_CHECK(pd_generate_session_len(s) == len &&
                 !memcmp(pd_generate_session_history(s), hist, sizeof *hist * (size_t)len));
        pd_generation_destroy(a);
        pd_generation_destroy(b);
    }
    /* a turn that does not fit, a bad token: refused, the history kept */
    c.max_new_tokens = pd_generate_session_max_ctx(s);
    PT_CHECK(!pd_generate_session_next(s, t1, 2, &c, NULL) && strstr(pd_last_error(), "exceeds max_ctx"));
    c.max_new_tokens = 1;
    const int64_t bad[] = {3, 50};
    PT_CHECK(!pd_generate_session_next(s, bad, 2, &c, NULL) && strstr(pd_last_error(), "outside the vocabulary"));
    PT_CHECK(pd_generate_session_len(s) == len);
    struct pd_generation *again = pd_generate_session_next(s, NULL, 0, &c, NULL);
    PT_CHECK(again && pd_generate_session_len(s) == len + 1);
    pd_generation_destroy(again);
    pd_generate_session_destroy(s);
}

static void test_session(struct pd_llama *m)
{
    session_turns(m, 0, 1, 3);    /* within the training length (24) */
    session_turns(m, 0, 0, 3);    /* the recomputing path */
    session_turns(m, 60, 1, 9);   /* past it: 5+9+2+9+9+3+9 = 46 positions */
    session_turns(m, 60, 0, 9);
    /* the first turn needs a token; NULL and negative counts are refused */
    struct pd_generate_session *s = pd_generate_session_create(m, 0);
    struct pd_generate_config c;
    pd_generate_config_default(&c);
    PT_CHECK(s && pd_generate_session_max_ctx(s) == 24);
    PT_CHECK(!pd_generate_session_next(s, NULL, 0, &c, NULL) && strstr(pd_last_error(), "empty"));
    PT_CHECK(!pd_generate_session_next(s, NULL, 2, &c, NULL) && strstr(pd_last_error(), "NULL"));
    PT_CHECK(!pd_generate_session_next(NULL, NULL, 0, &c, NULL));
    PT_CHECK(!pd_generate_session_create(NULL, 0) && !pd_generate_session_create(m, -1));
    pd_generate_session_destroy(s);
    /* cfg->max_ctx holds a turn below the session's cache (it was ignored) */
    static const int64_t p[] = {1, 2, 3, 4, 5};
    s = pd_generate_session_create(m, 60);
    c.max_new_tokens = 9;
    c.max_ctx = 20;
    struct pd_generation *g = s ? pd_generate_session_next(s, p, 5, &c, NULL) : NULL;   /* 5 + 9 <= 20 */
    PT_CHECK(g && pd_generate_session_len(s) == 14);
    pd_generation_destroy(g);
    PT_CHECK(!pd_generate_session_next(s, p, 2, &c, NULL) && strstr(pd_last_error(), "history + prompt (16 tokens)") &&
             strstr(pd_last_error(), "exceeds max_ctx (20)") && pd_generate_session_len(s) == 14);
    c.max_ctx = 100;   /* larger than the cache: the session's 60 */
    c.max_new_tokens = 50;
    PT_CHECK(!pd_generate_session_next(s, p, 2, &c, NULL) && strstr(pd_last_error(), "exceeds max_ctx (60)"));
    c.max_ctx = 0;
    c.max_new_tokens = 9;
    g = pd_generate_session_next(s, p, 2, &c, NULL);   /* 16 + 9 <= 60 */
    PT_CHECK(g && pd_generate_session_len(s) == 25);
    pd_generation_destroy(g);
    c.pad_id = 1000;   /* the checks pd_generate makes */
    PT_CHECK(!pd_generate_session_next(s, p, 1, &c, NULL) && strstr(pd_last_error(), "pad_id 1000 outside"));
    pd_generate_session_destroy(s);
    pd_generate_session_destroy(NULL);
}

int main(void)
{
    struct pd_llama *m = tiny_model();
    PT_CHECK(m != NULL);
    if (!m) PT_DONE();
    int64_t live0 = pd_live_tensors();
    test_max_ctx(m);
    test_on_token(m);
    test_session(m);
    PT_CHECK(pd_live_tensors() == live0);   /* no tensor leaked */
    pd_llama_destroy(m);
    PT_DONE();
}
