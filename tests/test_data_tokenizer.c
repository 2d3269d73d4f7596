/* Tokenizers: byte level, BPE merges checked by hand, encode against a naive
 * rank-by-rank reference, round trips over arbitrary bytes, JSON save/load
 * and its validation errors, special tokens, training speed (printed). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/data_internal.h"
#include "pd/data.h"
#include "pt.h"

static uint64_t rng_state = 12345;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* Pseudo-English: Zipf-ish words over a few syllables, punctuation, newlines. */
static char *make_text(size_t n)
{
    static const char *syl[] = {"th", "e", "an", "re", "in", "on", "at", "er", "s", "ing", "ou", "t", "a", "io", "n", "d"};
    char *s = malloc(n + 64);
    size_t k = 0;
    while (k < n) {
        /* a word id skewed to low ranks (they repeat more), its syllables from a hash */
        uint32_t rank = (rnd() % 30000) * (rnd() % 30000) / 30000;
        uint32_t w = (rank + 1) * 2654435761u;
        int len = 1 + (int)(w >> 28) % 4;
        for (int i = 0; i < len && k < n; i++, w /= 16) {
            const char *p = syl[w % 16];
            while (*p && k < n) s[k++] = *p++;
        }
        uint32_t r = rnd() % 20;
        if (k < n) s[k++] = r == 0 ? '\n' : r == 1 ? ',' : r == 2 ? '.' : ' ';
    }
    s[n] = 0;
    return s;
}

/* Reference encoder: for each piece, apply merge 0, then 1, ... to every
 * occurrence left to right (what BPE means, at O(merges * len)). */
static int64_t naive_encode(const struct pd_tokenizer *tok, const unsigned char *s, size_t n, int32_t *out)
{
    int64_t k = 0;
    int32_t buf[PDI_PIECE_MAX];
    for (size_t i = 0; i < n;) {
        size_t e = pdi_pretok_end(s, n, i);
        int L = (int)(e - i);
        for (int j = 0; j < L; j++) buf[j] = s[i + j];
        for (int r = 0; r < pd_tokenizer_n_merges(tok) && L > 1; r++) {
            int a, b, j = 0;
            pd_tokenizer_merge(tok, r, &a, &b);
            for (int q = 0; q < L;) {
                if (q + 1 < L && buf[q] == a && buf[q + 1] == b) {
                    buf[j++] = 256 + r;
                    q += 2;
                } else {
                    buf[j++] = buf[q++];
                }
            }
            L = j;
        }
        for (int j = 0; j < L; j++) out[k++] = buf[j];
        i = e;
    }
    return k;
}

static int roundtrip(const struct pd_tokenizer *tok, const char *s, size_t n)
{
    int32_t *ids;
    int64_t k = pd_tokenizer_encode(tok, s, n, &ids);
    if (k < 0) return 0;
    size_t m;
    char *d = pd_tokenizer_decode(tok, ids, k, &m);
    int ok = d && m == n && !memcmp(d, s, n);
    free(d);
    free(ids);
    return ok;
}

static void test_byte(void)
{
    struct pd_tokenizer *tok = pd_tokenizer_byte_create();
    PT_CHECK(pd_tokenizer_vocab_size(tok) == 256);
    PT_CHECK(pd_tokenizer_kind(tok) == PD_TOKENIZER_BYTE);
    const char s[] = "hi\0\xff\x80\n";
    int32_t *ids;
    int64_t k = pd_tokenizer_encode(tok, s, 6, &ids);
    PT_CHECK(k == 6);
    if (k == 6) {
        PT_CHECK(ids[0] == 'h' && ids[2] == 0 && ids[3] == 255 && ids[4] == 128 && ids[5] == '\n');
    }
    free(ids);
    PT_CHECK(roundtrip(tok, s, 6));
    PT_CHECK(pd_tokenizer_encode(tok, "", 0, &ids) == 0);
    free(ids);
    int32_t bad[2] = {65, 256};
    PT_CHECK(pd_tokenizer_decode(tok, bad, 2, NULL) == NULL);
    PT_CHECK(strstr(pd_last_error(), "id 256 at position 1") != NULL);
    PT_CHECK(pd_tokenizer_encode(NULL, "a", 1, &ids) < 0 && ids == NULL);
    pd_tokenizer_destroy(tok);
    pd_tokenizer_destroy(NULL);
}

static void test_bpe_by_hand(void)
{
    /* "aaabdaaabac": aa (4) first; then ab and Za tie at 2 and the smaller
     * pair (a=97, b=98) < (256, 97) wins; then (aa)(ab) twice; then nothing
     * occurs twice. */
    struct pd_tokenizer *tok = pd_bpe_train("aaabdaaabac", 11, 300, NULL);
    PT_CHECK(tok && pd_tokenizer_n_merges(tok) == 3 && pd_tokenizer_vocab_size(tok) == 259);
    int a = -1, b = -1;
    PT_CHECK(pd_tokenizer_merge(tok, 0, &a, &b) == 0 && a == 'a' && b == 'a');
    PT_CHECK(pd_tokenizer_merge(tok, 1, &a, &b) == 0 && a == 'a' && b == 'b');
    PT_CHECK(pd_tokenizer_merge(tok, 2, &a, &b) == 0 && a == 256 && b == 257);
    size_t len;
    const unsigned char *t = pd_tokenizer_token(tok, 258, &len);
    PT_CHECK(t && len == 4 && !memcmp(t, "aaab", 4));
    PT_CHECK(pd_tokenizer_merge(tok, 3, &a, &b) < 0);
    int32_t *ids;
    int64_t k = pd_tokenizer_encode(tok, "aaabdaaabac", 11, &ids);
    int32_t want[] = {258, 'd', 258, 'a', 'c'};
    PT_CHECK(k == 5 && !memcmp(ids, want, sizeof want));
    free(ids);
    pd_tokenizer_destroy(tok);

    /* words: "ab", " ab", " ab" -> (a,b) x3 first, then (' ', ab) x2 */
    tok = pd_bpe_train("ab ab ab", 8, 258, NULL);
    PT_CHECK(tok && pd_tokenizer_n_merges(tok) == 2);
    PT_CHECK(pd_tokenizer_merge(tok, 0, &a, &b) == 0 && a == 'a' && b == 'b');
    PT_CHECK(pd_tokenizer_merge(tok, 1, &a, &b) == 0 && a == ' ' && b == 256);
    k = pd_tokenizer_encode(tok, "ab ab", 5, &ids);
    PT_CHECK(k == 2 && ids[0] == 256 && ids[1] == 257);
    free(ids);
    pd_tokenizer_destroy(tok);

    /* nothing merges across a newline, nor newlines with each other */
    tok = pd_bpe_train("a\na\na\n\n\n\nb\nb\n", 13, 400, NULL);
    PT_CHECK(tok && pd_tokenizer_n_merges(tok) == 0);
    pd_tokenizer_destroy(tok);

    /* digits and symbols are separate pieces: "12+12+12" never merges 2 with + */
    tok = pd_bpe_train("12+12+12", 8, 400, NULL);
    PT_CHECK(tok && pd_tokenizer_n_merges(tok) == 1);
    PT_CHECK(pd_tokenizer_merge(tok, 0, &a, &b) == 0 && a == '1' && b == '2');
    pd_tokenizer_destroy(tok);

    /* min_frequency 3 stops before pairs seen twice */
    struct pd_bpe_options opt = {.min_frequency = 3};
    tok = pd_bpe_train("aaabdaaabac", 11, 300, &opt);
    PT_CHECK(tok && pd_tokenizer_n_merges(tok) == 1);
    pd_tokenizer_destroy(tok);

    PT_CHECK(pd_bpe_train("abc", 3, 100, NULL) == NULL);
    PT_CHECK(strstr(pd_last_error(), "vocab_size 100") != NULL);
}

static void test_bpe_text(void)
{
    size_t n = 1 << 20;
    char *text = make_text(n);
    const char *sp[] = {"<|endoftext|>"};
    struct pd_bpe_options opt = {.n_special = 1, .special = sp};
    clock_t c0 = clock();
    struct pd_tokenizer *tok = pd_bpe_train(text, n, 2000, &opt);
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
    PT_CHECK(tok != NULL);
    if (!tok) {
        free(text);
        return;
    }
    printf("bpe_train: 1 MiB, vocab 2000, %.2f s (CPU)\n", secs);
    PT_CHECK(pd_tokenizer_vocab_size(tok) == 2000);
    int eot = pd_tokenizer_special_id(tok, "<|endoftext|>");
    PT_CHECK(eot == 1999);
    PT_CHECK(pd_tokenizer_special_id(tok, "<|nope|>") == -1);

    /* the training text compresses */
    int32_t *ids, *ref = malloc(n * sizeof *ref);
    c0 = clock();
    int64_t k = pd_tokenizer_encode(tok, text, n, &ids);
    printf("encode: 1 MiB in %.3f s, %lld tokens (%.2f bytes/token)\n", (double)(clock() - c0) / CLOCKS_PER_SEC,
           (long long)k, (double)n / (double)k);
    PT_CHECK(k > 0 && k < (int64_t)n / 2);
    /* fast encoder == naive rank-by-rank encoder (on a prefix: the naive one is slow) */
    size_t pre = 20000;
    int32_t *ids_pre;
    int64_t kp = pd_tokenizer_encode(tok, text, pre, &ids_pre);
    int64_t kr = naive_encode(tok, (const unsigned char *)text, pre, ref);
    PT_CHECK(kp == kr && !memcmp(ids_pre, ref, (size_t)kr * sizeof *ref));
    free(ids_pre);
    /* and no special id comes out of encode, even for the special's text */
    int32_t *e2;
    int64_t k2 = pd_tokenizer_encode(tok, "<|endoftext|>", 13, &e2);
    int has_eot = 0;
    for (int64_t i = 0; i < k2; i++) has_eot |= e2[i] == eot;
    PT_CHECK(k2 > 1 && !has_eot);
    free(e2);
    size_t dl;
    char *d = pd_tokenizer_decode(tok, &eot, 1, &dl);
    PT_CHECK(d && dl == 13 && !strcmp(d, "<|endoftext|>"));
    free(d);

    /* round trips over arbitrary bytes: NULs, invalid UTF-8, long runs */
    PT_CHECK(roundtrip(tok, text, n));
    int ok = 1;
    char buf[4096];
    for (int trial = 0; trial < 200; trial++) {
        size_t m = rnd() % sizeof buf;
        int mode = trial % 4;
        for (size_t i = 0; i < m; i++)
            buf[i] = mode == 0 ? (char)rnd() : mode == 1 ? "ab \n\0\xc3\xff"[rnd() % 7] : mode == 2 ? 'x' : text[(i * 7) % n];
        ok &= roundtrip(tok, buf, m);
        /* and the reference encoder agrees on all of them */
        int32_t *f;
        int64_t kf = pd_tokenizer_encode(tok, buf, m, &f);
        int64_t kn = naive_encode(tok, (unsigned char *)buf, m, ref);
        ok &= kf == kn && !memcmp(f, ref, (size_t)kn * sizeof *ref);
        free(f);
    }
    PT_CHECK(ok);

    /* save + load: same vocabulary, identical encodings */
    const char *path = "test_data_tokenizer.json";
    PT_CHECK(pd_tokenizer_save(tok, path) == 0);
    struct pd_tokenizer *back = pd_tokenizer_load(path);
    PT_CHECK(back && pd_tokenizer_vocab_size(back) == 2000 && pd_tokenizer_n_merges(back) == pd_tokenizer_n_merges(tok));
    PT_CHECK(back && pd_tokenizer_special_id(back, "<|endoftext|>") == eot);
    int32_t *ids2 = NULL;
    int64_t kb = back ? pd_tokenizer_encode(back, text, n, &ids2) : -1;
    PT_CHECK(kb == k && !memcmp(ids, ids2, (size_t)k * sizeof *ids));
    free(ids2);
    pd_tokenizer_destroy(back);
    remove(path);
    free(ids);
    free(ref);
    pd_tokenizer_destroy(tok);
    free(text);
}

static void expect_json_error(const char *json, const char *needle)
{
    struct pd_tokenizer *tok = pd_tokenizer_from_json(json);
    PT_CHECK(tok == NULL);
    if (!strstr(pd_last_error(), needle)) {
        printf("  json %s\n  error \"%s\" lacks \"%s\"\n", json, pd_last_error(), needle);
        PT_CHECK(0);
    }
    pd_tokenizer_destroy(tok);
}

#define HDR "{\"format\":\"paddlec-tokenizer\",\"version\":1,"
static void test_json(void)
{
    struct pd_tokenizer *tok = pd_tokenizer_from_json(HDR "\"type\":\"bpe\",\"vocab_size\":258,\"merges\":[[97,98],[256,99]]}");
    PT_CHECK(tok && pd_tokenizer_vocab_size(tok) == 258);
    int32_t *ids;
    PT_CHECK(tok && pd_tokenizer_encode(tok, "abcab", 5, &ids) == 2 && ids[0] == 257 && ids[1] == 256);
    free(ids);
    /* byte tokenizer round trip, with a special token */
    struct pd_tokenizer *b = pd_tokenizer_byte_create();
    PT_CHECK(pd_tokenizer_add_special(b, "<eot>") == 256);
    PT_CHECK(pd_tokenizer_add_special(b, "<eot>") < 0 && strstr(pd_last_error(), "already"));
    PT_CHECK(pd_tokenizer_add_special(b, "") < 0);
    char *js = pd_tokenizer_to_json(b);
    struct pd_tokenizer *b2 = pd_tokenizer_from_json(js);
    PT_CHECK(b2 && pd_tokenizer_kind(b2) == PD_TOKENIZER_BYTE && pd_tokenizer_vocab_size(b2) == 257 &&
             pd_tokenizer_special_id(b2, "<eot>") == 256);
    free(js);
    pd_tokenizer_destroy(b);
    pd_tokenizer_destroy(b2);

    expect_json_error("not json", "parse error");
    expect_json_error("[1,2]", "not an object");
    expect_json_error("{\"format\":\"other\"}", "\"format\"");
    expect_json_error(HDR "\"type\":\"wordpiece\",\"vocab_size\":256}", "\"type\"");
    expect_json_error(HDR "\"type\":\"bpe\"}", "vocab_size");
    expect_json_error(HDR "\"type\":\"bpe\",\"vocab_size\":257,\"merges\":[[97,300]]}", "does not exist");
    expect_json_error(HDR "\"type\":\"bpe\",\"vocab_size\":257,\"merges\":[[256,97]]}", "does not exist");
    expect_json_error(HDR "\"type\":\"bpe\",\"vocab_size\":258,\"merges\":[[97,98],[97,98]]}", "duplicates merge 0");
    expect_json_error(HDR "\"type\":\"bpe\",\"vocab_size\":258,\"merges\":[[97,98]]}", "\"vocab_size\" is 258");
    expect_json_error(HDR "\"type\":\"bpe\",\"vocab_size\":257,\"merges\":[[97]]}", "merge 0 is not a pair");
    expect_json_error(HDR "\"type\":\"bpe\",\"vocab_size\":257,\"merges\":[[97,-1]]}", "does not exist");
    expect_json_error(HDR "\"type\":\"bpe\",\"vocab_size\":257,\"merges\":[[97,1.5]]}", "not a pair");
    expect_json_error(HDR "\"type\":\"bpe\",\"vocab_size\":257,\"merges\":[[97,1e30]]}", "not a pair");
    expect_json_error(HDR "\"type\":\"byte\",\"vocab_size\":257,\"merges\":[[97,98]]}", "has merges");
    expect_json_error(HDR "\"type\":\"byte\",\"vocab_size\":257,\"special\":[{\"id\":300,\"text\":\"x\"}]}", "expected 256");
    expect_json_error(HDR "\"type\":\"byte\",\"vocab_size\":258,\"special\":[{\"id\":256,\"text\":\"x\"},{\"id\":257,\"text\":\"x\"}]}",
                      "already");
    expect_json_error(HDR "\"type\":\"bpe\",\"pretokenizer\":\"gpt2\",\"vocab_size\":256}", "pretokenizer");
    PT_CHECK(pd_tokenizer_load("/nonexistent/tok.json") == NULL && strstr(pd_last_error(), "/nonexistent/tok.json"));
    FILE *f = fopen("test_data_bad_tok.json", "w");
    fputs(HDR "\"type\":\"bpe\",\"vocab_size\":300}", f);
    fclose(f);
    PT_CHECK(pd_tokenizer_load("test_data_bad_tok.json") == NULL && strstr(pd_last_error(), "test_data_bad_tok.json") &&
             strstr(pd_last_error(), "vocab_size"));
    remove("test_data_bad_tok.json");
    pd_tokenizer_destroy(tok);
}

int main(void)
{
    test_byte();
    test_bpe_by_hand();
    test_bpe_text();
    test_json();
    PT_DONE();
}
