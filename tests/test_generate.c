/* paddle.c — tests of generation (include/pd/generate.h): the sampling rule
 * on hand-made distributions, and the decode loop on a tiny random Llama:
 * cached == recomputed, batched == alone, top-k 1 == greedy, temperature
 * near 0 == greedy, stop tokens per row, reproducible sampling, bad input.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pd/generate.h"
#include "pt.h"
#include "tiny_llama.h"

static void test_sampling_rule(void)
{
    struct pd_generate_config c;
    pd_generate_config_default(&c);
    const double p[5] = {0.5, 0.2, 0.15, 0.1, 0.05};
    float lg[5];
    for (int i = 0; i < 5; i++) lg[i] = (float)log(p[i]) + 3.0f;   /* a shift changes nothing */
    double q[5];
    /* Greedy: argmax, one-hot distribution. */
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.99, q) == 0);
    PT_NEAR(q[0], 1, 0);
    /* Temperature 1, no filter: the distribution itself. */
    c.temperature = 1;
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.0, q) == 0);
    for (int i = 0; i < 5; i++) PT_NEAR(q[i], p[i], 1e-6);
    /* u walks the cumulative distribution in probability order. */
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.49, NULL) == 0);
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.51, NULL) == 1);
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.86, NULL) == 3);
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.999, NULL) == 4);
    /* Top-p 0.6: {0.5, 0.2} renormalised. */
    c.top_p = 0.6;
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.0, q) == 0);
    PT_NEAR(q[0], 0.5 / 0.7, 1e-6);
    PT_NEAR(q[1], 0.2 / 0.7, 1e-6);
    PT_CHECK(q[2] == 0 && q[3] == 0 && q[4] == 0);
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.9, NULL) == 1);
    /* Top-p 0.8: three tokens (0.85 >= 0.8); top-p 0.4: the first alone. */
    c.top_p = 0.8;
    pd_sample_logits(lg, 5, &c, 0.0, q);
    PT_NEAR(q[2], 0.15 / 0.85, 1e-6);
    PT_CHECK(q[3] == 0);
    c.top_p = 0.4;
    pd_sample_logits(lg, 5, &c, 0.9, q);
    PT_NEAR(q[0], 1, 1e-12);
    /* Top-k 2 with temperature 2: softmax(log p / 2) over the two best. */
    c.top_p = 1;
    c.top_k = 2;
    c.temperature = 2;
    pd_sample_logits(lg, 5, &c, 0.0, q);
    double a = sqrt(0.5), b = sqrt(0.2);
    PT_NEAR(q[0], a / (a + b), 1e-6);
    PT_NEAR(q[1], b / (a + b), 1e-6);
    PT_CHECK(q[2] == 0);
    /* Top-k 1 is greedy whatever u. */
    c.top_k = 1;
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.999, NULL) == 0);
    /* A grid of u reproduces the distribution (temperature 0.5). */
    c.top_k = 0;
    c.temperature = 0.5;
    int counts[5] = {0};
    const int N = 10000;
    for (int i = 0; i < N; i++) counts[pd_sample_logits(lg, 5, &c, (i + 0.5) / N, NULL)]++;
    double z = 0;
    for (int i = 0; i < 5; i++) z += p[i] * p[i];
    for (int i = 0; i < 5; i++) PT_NEAR(counts[i] / (double)N, p[i] * p[i] / z, 2.0 / N);
    /* Temperature -> 0 concentrates on the argmax. */
    c.temperature = 1e-3;
    pd_sample_logits(lg, 5, &c, 0.0, q);
    PT_CHECK(q[0] > 0.999999);
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.999999, NULL) == 0);
    /* -inf logits are never drawn; NaN and all -inf are errors. */
    float m[3] = {-INFINITY, 1.0f, -INFINITY};
    c.temperature = 1;
    PT_CHECK(pd_sample_logits(m, 3, &c, 0.999, NULL) == 1);
    m[1] = -INFINITY;
    PT_CHECK(pd_sample_logits(m, 3, &c, 0.5, NULL) == -1 && strstr(pd_last_error(), "-inf"));
    m[1] = NAN;
    PT_CHECK(pd_sample_logits(m, 3, &c, 0.5, NULL) == -1 && strstr(pd_last_error(), "NaN"));
    /* Bad configs. */
    c.top_p = 0;
    PT_CHECK(pd_sample_logits(lg, 5, &c, 0.5, NULL) == -1 && strstr(pd_last_error(), "top_p"));
    c.top_p = 1;
    c.temperature = -1;
    PT_CHECK(pd_generate_config_validate(&c) == PD_ERR_INVALID && strstr(pd_last_error(), "temperature"));
    c.temperature = 1;
    PT_CHECK(pd_sample_logits(lg, 5, &c, 1.0, NULL) == -1 && strstr(pd_last_error(), "u must"));
}

static struct pd_llama *tiny_model(void) { return pt_tiny_gen_model(40); }

static int same_row(const struct pd_generation *a, int ra, const struct pd_generation *b, int rb)
{
    int n = pd_generation_len(a, ra);
    return n == pd_generation_len(b, rb) &&
           !memcmp(pd_generation_tokens(a, ra), pd_generation_tokens(b, rb), sizeof(int64_t) * (size_t)n);
}

static void test_decode(void)
{
    struct pd_llama *m = tiny_model();
    PT_CHECK(m != NULL);
    if (!m) return;
    const int64_t p0[] = {1, 2, 3, 4, 5, 6, 7}, p1[] = {9, 8}, p2[] = {30, 31, 32, 33};
    const int64_t *prompts[] = {p0, p1, p2};
    int lens[] = {7, 2, 4};
    struct pd_generate_config c;
    pd_generate_config_default(&c);
    c.max_new_tokens = 12;
    int64_t live0 = pd_live_tensors();

    /* Greedy with the cache == greedy recomputing the full forward. */
    struct pd_generation *cached = pd_generate(m, prompts, lens, 3, &c, NULL);
    c.use_cache = 0;
    struct pd_generation *plain = pd_generate(m, prompts, lens, 3, &c, NULL);
    c.use_cache = 1;
    PT_CHECK(cached && plain);
    if (!cached || !plain) return;
    PT_CHECK(pd_generation_rows(cached) == 3);
    for (int r = 0; r < 3; r++) {
        PT_CHECK(pd_generation_len(cached, r) == 12 && !pd_generation_stopped(cached, r));
        PT_CHECK(same_row(cached, r, plain, r));
    }
    /* The rows differ (the model is not degenerate). */
    PT_CHECK(!same_row(cached, 0, cached, 1) || !same_row(cached, 0, cached, 2));
    /* Batched left-padded prompts == each prompt alone. */
    for (int r = 0; r < 3; r++) {
        struct pd_generation *alone = pd_generate(m, &prompts[r], &lens[r], 1, &c, NULL);
        PT_CHECK(alone && same_row(cached, r, alone, 0));
        pd_generation_destroy(alone);
    }
    /* Top-k 1 at temperature 1 == greedy; so does temperature 1e-6. */
    struct pd_generator *g = pd_generator_create(5);
    c.temperature = 1;
    c.top_k = 1;
    struct pd_generation *k1 = pd_generate(m, prompts, lens, 3, &c, g);
    c.top_k = 0;
    c.temperature = 1e-6;
    struct pd_generation *cold = pd_generate(m, prompts, lens, 3, &c, g);
    for (int r = 0; r < 3; r++) PT_CHECK(k1 && cold && same_row(cached, r, k1, r) && same_row(cached, r, cold, r));
    pd_generation_destroy(k1);
    pd_generation_destroy(cold);

    /* Sampling: reproducible from the generator state, identical with and
     * without the cache, and (at temperature 3) different from greedy. */
    c.temperature = 3;
    pd_generator_set_state(g, 11, 0);
    struct pd_generation *s1 = pd_generate(m, prompts, lens, 3, &c, g);
    pd_generator_set_state(g, 11, 0);
    c.use_cache = 0;
    struct pd_generation *s2 = pd_generate(m, prompts, lens, 3, &c, g);
    c.use_cache = 1;
    pd_generator_set_state(g, 12, 0);
    struct pd_generation *s3 = pd_generate(m, prompts, lens, 3, &c, g);
    int differs_greedy = 0, differs_seed = 0;
    for (int r = 0; r < 3; r++) {
        PT_CHECK(s1 && s2 && same_row(s1, r, s2, r));
        differs_greedy |= !same_row(s1, r, cached, r);
        differs_seed |= !same_row(s1, r, s3, r);
    }
    PT_CHECK(differs_greedy && differs_seed);
    pd_generation_destroy(s1);
    pd_generation_destroy(s2);
    pd_generation_destroy(s3);

    /* Stop tokens end each row at its first occurrence (inclusive). */
    c.temperature = 0;
    int64_t stop = pd_generation_tokens(cached, 0)[3];
    c.stop_tokens[c.n_stop_tokens++] = stop;
    struct pd_generation *st = pd_generate(m, prompts, lens, 3, &c, NULL);
    PT_CHECK(st != NULL);
    for (int r = 0; st && r < 3; r++) {
        const int64_t *full = pd_generation_tokens(cached, r);
        int first = -1;
        for (int i = 0; i < 12 && first < 0; i++)
            if (full[i] == stop) first = i;
        int want = first < 0 ? 12 : first + 1;
        PT_CHECK(pd_generation_len(st, r) == want);
        PT_CHECK(pd_generation_stopped(st, r) == (first >= 0));
        PT_CHECK(!memcmp(pd_generation_tokens(st, r), full, sizeof(int64_t) * (size_t)want));
    }
    PT_CHECK(st && pd_generation_len(st, 0) <= 4 && pd_generation_stopped(st, 0));
    pd_generation_destroy(st);
    c.n_stop_tokens = 0;

    /* max_new_tokens 0 gives empty rows. */
    c.max_new_tokens = 0;
    struct pd_generation *none = pd_generate(m, prompts, lens, 3, &c, NULL);
    PT_CHECK(none && pd_generation_len(none, 1) == 0);
    pd_generation_destroy(none);

    /* Bad input: a clear error, nothing allocated. */
    c.max_new_tokens = 34;   /* 7 + 34 > 40 */
    PT_CHECK(!pd_generate(m, prompts, lens, 3, &c, NULL) && strstr(pd_last_error(), "max_seq_len"));
    c.max_new_tokens = 4;
    const int64_t bad[] = {1, 50};
    const int64_t *pb = bad;
    int two = 2, zero = 0;
    PT_CHECK(!pd_generate(m, &pb, &two, 1, &c, NULL) && strstr(pd_last_error(), "outside the vocabulary"));
    PT_CHECK(!pd_generate(m, &pb, &zero, 1, &c, NULL) && strstr(pd_last_error(), "empty"));
    PT_CHECK(!pd_generate(m, prompts, lens, 0, &c, NULL) && strstr(pd_last_error(), "at least one prompt"));
    PT_CHECK(!pd_generate(NULL, prompts, lens, 3, &c, NULL));
    c.pad_id = -1;
    PT_CHECK(!pd_generate(m, prompts, lens, 3, &c, NULL) && strstr(pd_last_error(), "pad_id"));
    pd_generation_destroy(NULL);
    PT_CHECK(pd_generation_len(NULL, 0) == 0 && pd_generation_tokens(cached, 7) == NULL);

    pd_generation_destroy(cached);
    pd_generation_destroy(plain);
    pd_generator_destroy(g);
    PT_CHECK(pd_live_tensors() == live0);   /* no tensor leaked by the decode loop */
    /* The model's training flag is restored. */
    pd_llama_train(m, 1);
    c.pad_id = 0;
    struct pd_generation *t = pd_generate(m, prompts, lens, 1, &c, NULL);
    PT_CHECK(t && pd_llama_is_training(m) == 1);
    pd_generation_destroy(t);
    pd_llama_destroy(m);
}

int main(void)
{
    test_sampling_rule();
    test_decode();
    PT_DONE();
}
