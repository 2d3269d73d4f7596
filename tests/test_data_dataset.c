/* Text datasets: split sizes, random windows equal the source ids with
 * targets shifted by one, determinism from the generator state, coverage of
 * every start, the sequential evaluation iterator, chunked file reading equal
 * to whole-buffer encoding, scopes, and the error paths. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pd/data.h"
#include "pt.h"

static uint64_t rng_state = 777;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static int write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    fclose(f);
    return w == n ? 0 : -1;
}

/* Does row b of x/y equal a window of the split's ids, targets shifted? */
static int64_t window_start(const int32_t *ids, int64_t n, const int64_t *x, const int64_t *y, int T)
{
    for (int t = 0; t + 1 < T; t++)
        if (y[t] != x[t + 1]) return -2;
    for (int64_t s = 0; s + T < n; s++) {
        int ok = 1;
        for (int t = 0; t < T && ok; t++) ok = ids[s + t] == x[t] && ids[s + t + 1] == y[t];
        if (ok) return s;
    }
    return -1;
}

static void test_memory_and_batches(void)
{
    /* random bytes, so a window identifies its start */
    size_t n = 1000;
    unsigned char *text = malloc(n);
    for (size_t i = 0; i < n; i++) text[i] = (unsigned char)rnd();
    struct pd_text_dataset *ds = pd_text_dataset_from_memory(text, n, NULL, 0.1);
    PT_CHECK(ds != NULL);
    PT_CHECK(pd_text_dataset_vocab_size(ds) == 256);
    PT_CHECK(pd_text_dataset_num_tokens(ds, PD_SPLIT_TRAIN) == 900);
    PT_CHECK(pd_text_dataset_num_tokens(ds, PD_SPLIT_VAL) == 100);
    int32_t train[900], val[100];
    PT_CHECK(pd_text_dataset_ids(ds, PD_SPLIT_TRAIN, 0, 900, train) == 0);
    PT_CHECK(pd_text_dataset_ids(ds, PD_SPLIT_VAL, 0, 100, val) == 0);
    PT_CHECK(train[0] == text[0] && train[899] == text[899] && val[0] == text[900] && val[99] == text[999]);
    PT_CHECK(pd_text_dataset_ids(ds, PD_SPLIT_VAL, 50, 51, val) < 0 && strstr(pd_last_error(), "outside"));

    int B = 8, T = 16;
    struct pd_generator *g = pd_generator_create(42);
    int64_t live0 = pd_live_tensors();
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x, *y;
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_TRAIN, B, T, g, &x, &y) == 0);
    PT_CHECK(x && pd_tensor_dtype(x) == PD_I64 && pd_tensor_ndim(x) == 2 && pd_tensor_dim(x, 0) == B &&
             pd_tensor_dim(x, 1) == T);
    PT_CHECK(y && pd_tensor_dtype(y) == PD_I64 && pd_tensor_dim(y, 0) == B && pd_tensor_dim(y, 1) == T);
    int found = 0;
    const int64_t *xd = pd_tensor_data(x), *yd = pd_tensor_data(y);
    for (int b = 0; b < B; b++) found += window_start(train, 900, xd + b * T, yd + b * T, T) >= 0;
    PT_CHECK(found == B);
    /* validation windows come from the validation ids only */
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_VAL, B, T, g, &x, &y) == 0);
    found = 0;
    xd = pd_tensor_data(x);
    yd = pd_tensor_data(y);
    for (int b = 0; b < B; b++) found += window_start(val, 100, xd + b * T, yd + b * T, T) >= 0;
    PT_CHECK(found == B);
    pd_scope_end(scope_tok);
    PT_CHECK(pd_live_tensors() == live0);

    /* determinism: the same generator state gives the same batch, and the
     * state advances by a fixed amount per call */
    pd_generator_set_state(g, 7, 100);
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_TRAIN, B, T, g, &x, &y) == 0);
    uint64_t seed, off1, off2;
    pd_generator_get_state(g, &seed, &off1);
    struct pd_tensor *x2, *y2, *x3, *y3;
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_TRAIN, B, T, g, &x3, &y3) == 0);
    pd_generator_get_state(g, &seed, &off2);
    PT_CHECK(off1 == 100 + 16 && off2 == off1 + 16);
    pd_generator_set_state(g, 7, 100);
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_TRAIN, B, T, g, &x2, &y2) == 0);
    PT_CHECK(x && x2 && !memcmp(pd_tensor_data(x), pd_tensor_data(x2), (size_t)(B * T) * 8));
    PT_CHECK(y && y2 && !memcmp(pd_tensor_data(y), pd_tensor_data(y2), (size_t)(B * T) * 8));
    PT_CHECK(x3 && memcmp(pd_tensor_data(x), pd_tensor_data(x3), (size_t)(B * T) * 8) != 0);
    pd_tensor_release(x);
    pd_tensor_release(y);
    pd_tensor_release(x2);
    pd_tensor_release(y2);
    pd_tensor_release(x3);
    pd_tensor_release(y3);
    PT_CHECK(pd_live_tensors() == live0);

    /* coverage: every start 0 .. n - T - 1 occurs, nothing beyond */
    const int T2 = 60; /* val has 100 tokens: starts 0..39 */
    int seen[100] = {0};
    int bad = 0;
    scope_tok = pd_scope_begin();
    for (int it = 0; it < 100; it++) {
        PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_VAL, 16, T2, g, &x, &y) == 0);
        xd = pd_tensor_data(x);
        yd = pd_tensor_data(y);
        for (int b = 0; b < 16; b++) {
            int64_t s = window_start(val, 100, xd + b * T2, yd + b * T2, T2);
            if (s < 0 || s > 39) bad++;
            else seen[s]++;
        }
    }
    pd_scope_end(scope_tok);
    int all = 1;
    for (int s = 0; s < 40; s++) all &= seen[s] > 0;
    PT_CHECK(bad == 0 && all);

    /* errors: windows longer than the split, bad sizes, bad split */
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_VAL, 4, 100, g, &x, &y) < 0 && x == NULL && y == NULL);
    PT_CHECK(strstr(pd_last_error(), "validation split has 100 tokens, fewer than seq_len + 1 = 101") != NULL);
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_VAL, 4, 99, g, &x, &y) == 0); /* exactly fits */
    pd_tensor_release(x);
    pd_tensor_release(y);
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_TRAIN, 0, 8, g, &x, &y) < 0 && strstr(pd_last_error(), "positive"));
    PT_CHECK(pd_dataset_batch(ds, (enum pd_split)5, 2, 8, g, &x, &y) < 0 && strstr(pd_last_error(), "split"));
    PT_CHECK(pd_dataset_batch(NULL, PD_SPLIT_TRAIN, 2, 8, g, &x, &y) < 0);

    /* sequential iterator: windows [kT, kT + T], last batch smaller, then 0 */
    const int T3 = 10;
    struct pd_dataset_iter *it = pd_dataset_iter_create(ds, PD_SPLIT_TRAIN, 4, T3);
    PT_CHECK(it && pd_dataset_iter_num_windows(it) == (900 - 1) / T3);
    int64_t rows = 0, mismatch = 0;
    int r, calls = 0, last = 0;
    for (int pass = 0; pass < 2; pass++) {
        rows = 0;
        calls = 0;
        scope_tok = pd_scope_begin();
        while ((r = pd_dataset_iter_next(it, &x, &y)) > 0) {
            calls++;
            last = r;
            xd = pd_tensor_data(x);
            yd = pd_tensor_data(y);
            PT_CHECK(pd_tensor_dim(x, 0) == r && pd_tensor_dim(x, 1) == T3);
            for (int b = 0; b < r; b++, rows++)
                for (int t = 0; t < T3; t++) {
                    mismatch += xd[b * T3 + t] != train[rows * T3 + t];
                    mismatch += yd[b * T3 + t] != train[rows * T3 + t + 1];
                }
        }
        pd_scope_end(scope_tok);
        PT_CHECK(r == 0 && rows == 89 && calls == 23 && last == 1 && mismatch == 0);
        pd_dataset_iter_reset(it);
    }
    pd_dataset_iter_destroy(it);
    PT_CHECK(pd_live_tensors() == live0);
    PT_CHECK(pd_dataset_iter_create(ds, PD_SPLIT_VAL, 4, 100) == NULL && strstr(pd_last_error(), "fewer than"));
    pd_dataset_iter_destroy(NULL);

    pd_generator_destroy(g);
    pd_text_dataset_destroy(ds);
    pd_text_dataset_destroy(NULL);

    /* fraction 0: no validation split */
    ds = pd_text_dataset_from_memory(text, n, NULL, 0);
    PT_CHECK(ds && pd_text_dataset_num_tokens(ds, PD_SPLIT_TRAIN) == 1000 && pd_text_dataset_num_tokens(ds, PD_SPLIT_VAL) == 0);
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_VAL, 1, 4, NULL, &x, &y) < 0 && strstr(pd_last_error(), "has 0 tokens"));
    pd_text_dataset_destroy(ds);
    free(text);
}

/* A file read in 1 MiB chunks gives exactly the ids of encoding it whole. */
static void test_file_chunks(void)
{
    size_t n = (5u << 20) / 2 + 12345; /* 2.5 MiB: crosses chunk boundaries */
    char *text = malloc(n);
    static const char *words[] = {"the", " cat", " sat", "\n", " on", " mat", ",", " 42", "  ", "\xc3\xa9t\xc3\xa9", "\t", " x"};
    size_t k = 0;
    while (k < n) {
        const char *w = words[rnd() % 12];
        while (*w && k < n) text[k++] = *w++;
        if (rnd() % 500 == 0) /* sometimes a long run without boundaries */
            for (int i = 0; i < 3000 && k < n; i++) text[k++] = 'z';
    }
    struct pd_tokenizer *tok = pd_bpe_train(text, 200000, 400, NULL);
    PT_CHECK(tok && pd_tokenizer_n_merges(tok) > 20);
    const char *path = "test_data_dataset.txt";
    PT_CHECK(write_file(path, text, n) == 0);
    struct pd_text_dataset *ds = pd_text_dataset_open(path, tok, 0.25);
    int32_t *ids;
    int64_t m = pd_tokenizer_encode(tok, text, n, &ids);
    PT_CHECK(ds && m > 0 && pd_text_dataset_vocab_size(ds) == pd_tokenizer_vocab_size(tok));
    int64_t ntr = pd_text_dataset_num_tokens(ds, PD_SPLIT_TRAIN), nva = pd_text_dataset_num_tokens(ds, PD_SPLIT_VAL);
    PT_CHECK(ntr + nva == m && nva == (int64_t)floor(m * 0.25));
    int32_t *got = malloc((size_t)m * sizeof *got);
    PT_CHECK(pd_text_dataset_ids(ds, PD_SPLIT_TRAIN, 0, ntr, got) == 0);
    PT_CHECK(pd_text_dataset_ids(ds, PD_SPLIT_VAL, 0, nva, got + ntr) == 0);
    PT_CHECK(!memcmp(got, ids, (size_t)m * sizeof *ids));
    pd_text_dataset_destroy(ds);

    /* byte tokenizer by default */
    ds = pd_text_dataset_open(path, NULL, 0.5);
    PT_CHECK(ds && pd_text_dataset_num_tokens(ds, PD_SPLIT_TRAIN) + pd_text_dataset_num_tokens(ds, PD_SPLIT_VAL) == (int64_t)n);
    pd_text_dataset_destroy(ds);
    free(got);
    free(ids);
    remove(path);

    /* errors */
    PT_CHECK(pd_text_dataset_open("/nonexistent/corpus.txt", NULL, 0.1) == NULL);
    PT_CHECK(strstr(pd_last_error(), "cannot open \"/nonexistent/corpus.txt\"") != NULL);
    PT_CHECK(write_file(path, "", 0) == 0);
    PT_CHECK(pd_text_dataset_open(path, tok, 0.1) == NULL && strstr(pd_last_error(), "is empty"));
    PT_CHECK(write_file(path, "abc", 3) == 0);
    PT_CHECK(pd_text_dataset_open(path, NULL, 1.0) == NULL && strstr(pd_last_error(), "val_fraction"));
    PT_CHECK(pd_text_dataset_open(path, NULL, -0.1) == NULL && strstr(pd_last_error(), "val_fraction"));
    PT_CHECK(pd_text_dataset_open(path, NULL, NAN) == NULL && strstr(pd_last_error(), "val_fraction"));
    ds = pd_text_dataset_open(path, NULL, 0);
    struct pd_tensor *x, *y;
    PT_CHECK(ds && pd_dataset_batch(ds, PD_SPLIT_TRAIN, 1, 3, NULL, &x, &y) < 0 &&
             strstr(pd_last_error(), "train split has 3 tokens, fewer than seq_len + 1 = 4"));
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_TRAIN, 1, 2, NULL, &x, &y) == 0);
    PT_CHECK(x && y && pd_get(x, (int64_t[]){0, 0}) == 'a' && pd_get(y, (int64_t[]){0, 1}) == 'c');
    pd_tensor_release(x);
    pd_tensor_release(y);
    pd_text_dataset_destroy(ds);
    PT_CHECK(pd_text_dataset_from_memory("", 0, NULL, 0.1) == NULL && strstr(pd_last_error(), "empty"));
    remove(path);
    pd_tokenizer_destroy(tok);
    free(text);
}

/* A vocabulary past 65,536 ids: the dataset keeps int32 ids. */
static void test_large_vocab(void)
{
    /* 65,300 merges of byte pairs, the last one (q, z) -> id 65555 */
    size_t cap = 65300 * 12 + 256, k = 0;
    char *js = malloc(cap);
    k += (size_t)snprintf(js + k, cap - k, "{\"format\":\"paddlec-tokenizer\",\"version\":1,\"type\":\"bpe\","
                                           "\"vocab_size\":65556,\"merges\":[");
    int r = 0;
    for (int a = 0; a < 256 && r < 65299; a++)
        for (int b = 0; b < 256 && r < 65299; b++) {
            if (a == 'q' && b == 'z') continue;
            k += (size_t)snprintf(js + k, cap - k, "[%d,%d],", a, b);
            r++;
        }
    k += (size_t)snprintf(js + k, cap - k, "[%d,%d]]}", 'q', 'z');
    struct pd_tokenizer *tok = pd_tokenizer_from_json(js);
    free(js);
    PT_CHECK(tok && pd_tokenizer_vocab_size(tok) == 65556);
    const char *text = "qz\nqz\nab qz\n";
    struct pd_text_dataset *ds = pd_text_dataset_from_memory(text, strlen(text), tok, 0);
    int32_t *ids, got[16];
    int64_t n = pd_tokenizer_encode(tok, text, strlen(text), &ids);
    PT_CHECK(ds && n > 0 && n <= 16 && pd_text_dataset_num_tokens(ds, PD_SPLIT_TRAIN) == n);
    PT_CHECK(n > 0 && ids[0] == 65555 && pd_text_dataset_ids(ds, PD_SPLIT_TRAIN, 0, n, got) == 0 &&
             !memcmp(got, ids, (size_t)n * sizeof *ids));
    struct pd_tensor *x, *y;
    PT_CHECK(pd_dataset_batch(ds, PD_SPLIT_TRAIN, 1, (int)n - 1, NULL, &x, &y) == 0);
    PT_CHECK(x && pd_get(x, (int64_t[]){0, 0}) == 65555);
    pd_tensor_release(x);
    pd_tensor_release(y);
    free(ids);
    pd_text_dataset_destroy(ds);
    pd_tokenizer_destroy(tok);
}

int main(void)
{
    test_large_vocab();
    test_memory_and_batches();
    test_file_chunks();
    PT_DONE();
}
