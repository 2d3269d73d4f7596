/* paddle.c — fuzz target: the tokenizer loader and encode/decode
 * (src/data/tokenizer.c, tokenizer_hf.c, tokenizer_hf_encode.c). The input
 * is tokenizer JSON, paddlec's or Hugging Face's (docs/data.md). When
 * it loads, the target checks the contract of include/pd/data.h:
 * decode(encode(x)) == x for the input's own bytes and a fixed text, every
 * id decodes, ids out of range are refused, and to_json -> from_json ->
 * to_json is a fixed point. Errors must have a one-line message. */
#include "fuzz.h"
#include "pd/data.h"

/* hf: a Hugging Face tokenizer.json, whose file decides what decode gives
 * back (unk tokens, a prepended space): only ids in range and a decode. */
static void roundtrip(const struct pd_tokenizer *tok, const void *text, size_t len, int hf)
{
    int32_t *ids = NULL;
    int64_t n = pd_tokenizer_encode(tok, text, len, &ids);
    FUZZ_CHECK(n >= 0 && (hf || n <= (int64_t)len));
    int vocab = pd_tokenizer_vocab_size(tok);
    for (int64_t i = 0; i < n; i++) FUZZ_CHECK(ids[i] >= 0 && ids[i] < vocab);
    size_t out_len = 0;
    char *out = pd_tokenizer_decode(tok, ids, n, &out_len);
    FUZZ_CHECK(out && (hf || (out_len == len && (!len || !memcmp(out, text, len)))));
    free(out);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *json = fuzz_cstr(data, size);
    struct pd_tokenizer *tok = pd_tokenizer_from_json(json);
    if (!tok) {
        const char *e = pd_last_error();
        FUZZ_CHECK(fuzz_one_line(e));
        free(json);
        return 0;
    }
    static const char sample[] = "Hello, world!  347+589=936\n\n\tcafe\xc3\xa9 \xff\x00 <|endoftext|>";
    int hf = pd_tokenizer_kind(tok) == PD_TOKENIZER_HF;
    roundtrip(tok, sample, sizeof sample - 1, hf);
    roundtrip(tok, data, size < 4096 ? size : 4096, hf);

    int vocab = pd_tokenizer_vocab_size(tok);
    FUZZ_CHECK(vocab >= (hf ? 1 : 256));
    for (int id = 0; id < vocab && id < 65536; id++) {
        size_t len = 0;
        FUZZ_CHECK(pd_tokenizer_token(tok, id, &len) != NULL);
    }
    int32_t bad[2] = {-1, vocab};
    for (int i = 0; i < 2; i++) {
        char *s = pd_tokenizer_decode(tok, &bad[i], 1, NULL);
        FUZZ_CHECK(!s);
    }

    char *j1 = pd_tokenizer_to_json(tok);
    FUZZ_CHECK(j1);
    struct pd_tokenizer *tok2 = pd_tokenizer_from_json(j1);
    FUZZ_CHECK(tok2 && pd_tokenizer_vocab_size(tok2) == vocab);
    char *j2 = pd_tokenizer_to_json(tok2);
    FUZZ_CHECK(j2 && !strcmp(j1, j2));
    free(j1);
    free(j2);
    pd_tokenizer_destroy(tok2);
    pd_tokenizer_destroy(tok);
    free(json);
    return 0;
}
