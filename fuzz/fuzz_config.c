/* paddle.c — fuzz target: the model config readers (pd_llama_config_from_json,
 * src/nn/llama.c, the config of checkpoints; pd_llama_config_from_hf,
 * src/nn/hf.c, Hugging Face config.json, with the same invariants through
 * pd_llama_config_to_hf).
 * Invariants: an accepted config validates, and to_json -> from_json gives
 * the same config (doubles written with enough digits to round-trip) and the
 * same text; a refused one leaves the struct untouched and has a one-line
 * message. */
#include "fuzz.h"
#include "pd/hf.h"

static int same(const struct pd_llama_config *a, const struct pd_llama_config *b)
{
    return a->vocab_size == b->vocab_size && a->dim == b->dim && a->n_layers == b->n_layers &&
           a->n_heads == b->n_heads && a->n_kv_heads == b->n_kv_heads && a->hidden_dim == b->hidden_dim &&
           a->max_seq_len == b->max_seq_len && a->tie_embeddings == b->tie_embeddings &&
           !memcmp(&a->norm_eps, &b->norm_eps, sizeof(double)) &&
           !memcmp(&a->rope_theta, &b->rope_theta, sizeof(double)) &&
           !memcmp(&a->dropout, &b->dropout, sizeof(double)) &&
           !memcmp(&a->init_std, &b->init_std, sizeof(double));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *json = fuzz_cstr(data, size);
    struct pd_llama_config c, before;
    memset(&c, 0x5a, sizeof c);
    before = c;
    if (pd_llama_config_from_json(&c, json)) {
        const char *e = pd_last_error();
        FUZZ_CHECK(fuzz_one_line(e));
        FUZZ_CHECK(!memcmp(&c, &before, sizeof c));
    } else {
        FUZZ_CHECK(pd_llama_config_validate(&c) == PD_OK);
        char *j1 = pd_llama_config_to_json(&c);
        FUZZ_CHECK(j1);
        struct pd_llama_config c2;
        FUZZ_CHECK(pd_llama_config_from_json(&c2, j1) == PD_OK);
        FUZZ_CHECK(same(&c, &c2));
        char *j2 = pd_llama_config_to_json(&c2);
        FUZZ_CHECK(j2 && !strcmp(j1, j2));
        free(j1);
        free(j2);
    }
    memset(&c, 0x5a, sizeof c);
    if (pd_llama_config_from_hf(&c, json)) {
        FUZZ_CHECK(fuzz_one_line(pd_last_error()));
        FUZZ_CHECK(!memcmp(&c, &before, sizeof c));
    } else {
        FUZZ_CHECK(pd_llama_config_validate(&c) == PD_OK);
        char *j1 = pd_llama_config_to_hf(&c, PD_BF16);
        FUZZ_CHECK(j1);
        struct pd_llama_config c2;
        FUZZ_CHECK(pd_llama_config_from_hf(&c2, j1) == PD_OK);
        FUZZ_CHECK(same(&c, &c2));
        free(j1);
    }
    free(json);
    return 0;
}
