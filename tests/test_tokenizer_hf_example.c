/* The Hugging Face tokenizer example of docs/data.md: load a tokenizer.json
 * (by default the small Llama 3 style one of tests/fixtures/tokenizer/; pass
 * a model directory's tokenizer.json instead), encode a text with a special
 * token in it, stream the tokens' bytes, decode. Returns non-zero on a
 * mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/data.h"
#include "pd/pd.h"

int main(int argc, char **argv)
{
    char path[4096];
    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
    } else { /* the fixture next to this file */
        const char *src = __FILE__, *slash = strrchr(src, '/');
        snprintf(path, sizeof path, "%.*sfixtures/tokenizer/llama3.json", slash ? (int)(slash - src + 1) : 0, src);
    }
    struct pd_tokenizer *tok = pd_tokenizer_load(path);
    if (!tok) {
        fprintf(stderr, "error: %s\n", pd_last_error());
        return 1;
    }
    const char *text = "Hello, world! It's 2026: naïve café, 你好 😀<|eot_id|>";
    int32_t *ids;
    int64_t n = pd_tokenizer_encode(tok, text, strlen(text), &ids);
    printf("vocab %d, BOS %d, <|eot_id|> = %d; %lld ids:", pd_tokenizer_vocab_size(tok), pd_tokenizer_bos_id(tok),
           pd_tokenizer_special_id(tok, "<|eot_id|>"), (long long)n);
    for (int64_t i = 0; i < n; i++) printf(" %d", ids[i]);
    printf("\n");

    /* streaming: each token's bytes, concatenated (a token may hold part of
     * a UTF-8 character) */
    for (int64_t i = 0; i < n; i++) {
        size_t len;
        const unsigned char *b = pd_tokenizer_token(tok, ids[i], &len);
        fwrite(b, 1, len, stdout);
    }
    printf("\n");

    char *back = pd_tokenizer_decode(tok, ids, n, NULL);
    int ok = back && strcmp(back, text) == 0;
    printf("decode(encode(text)) == text: %s\n", ok ? "yes" : "no");
    free(back);
    free(ids);
    pd_tokenizer_destroy(tok);
    return ok ? 0 : 1;
}
