/* Tokenizer encode speed: MB/s of text in (one thread; encoding is serial),
 * one JSON line per (tokenizer, text). The peers, on the same texts and
 * vocabulary, are in bench/tokenizer_peer.py (Hugging Face `tokenizers` and
 * the Node.js reference encoder of tests/fixtures/tokenizer/).
 *
 *   build/bench_tokenizer [FIXTURE_DIR]   (default: tests/fixtures/tokenizer
 *                                          beside this file)
 * Texts: "mixed" (mixed.txt: accents, CJK, emoji, RTL, digits; 110 KB) and
 * "docs" (the docs/ pages *.md of this repository, concatenated in name order).
 * Tokenizers: GPT-2's vocabulary through pd_tokenizer_load_gpt2 (the
 * Hugging Face code path), and paddlec's own byte-level BPE (vocab 50,257,
 * trained on the docs text) for comparison. Best of N runs (N = 5,
 * PD_BENCH_FULL=1: 20). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "pd/data.h"
#include "pd/pd.h"

/* Encoding is serial and makes int32 ids, whatever the library's threads. */
#define TOKENIZER_TAGS bench_tags_n(1, "i32").s

/* The whole file (the library's reader; NULL when it cannot be read). */
static char *slurp(const char *path, size_t *len) { return pd_file_read(path, (size_t)1 << 30, len); }

/* CPU seconds of this process: on a shared machine, closer to the work done
 * than the wall clock. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The .md files of docs/ in name order, concatenated (bench/tokenizer_peer.py
 * reads the same). */
static char *docs_text(const char *docs, size_t *len)
{
    DIR *d = opendir(docs);
    if (!d) return NULL;
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > 3 && !strcmp(e->d_name + l - 3, ".md")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    char *all = NULL;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        char path[8192];
        size_t l;
        snprintf(path, sizeof path, "%.4000s/%.4000s", docs, names[i]);
        char *s = slurp(path, &l);
        if (s) {
            all = realloc(all, total + l + 1);
            memcpy(all + total, s, l);
            total += l;
            all[total] = 0;
            free(s);
        }
        free(names[i]);
    }
    *len = total;
    return all;
}

static void report(const char *tokname, const char *textname, struct pd_tokenizer *tok, const char *text, size_t len,
                   int runs)
{
    int32_t *ids = NULL;
    double best = 1e30, best_cpu = 1e30;
    int64_t n = 0;
    for (int r = 0; r < runs; r++) {
        double t0 = bench_now(), c0 = cpu_now();
        n = pd_tokenizer_encode(tok, text, len, &ids);
        double dt = bench_now() - t0, dc = cpu_now() - c0;
        free(ids);
        if (dt < best) best = dt;
        if (dc < best_cpu) best_cpu = dc;
    }
    if (n < 0) {
        printf("{\"bench\":\"tokenizer\",\"impl\":\"paddle.c\",%s,\"tokenizer\":\"%s\",\"text\":\"%s\",\"error\":\"%s\"}\n",
               TOKENIZER_TAGS, tokname, textname, pd_last_error());
        return;
    }
    printf("{\"bench\":\"tokenizer\",\"impl\":\"paddle.c\",%s,\"tokenizer\":\"%s\",\"text\":\"%s\",\"bytes\":%zu,"
           "\"tokens\":%lld,\"runs\":%d,\"seconds\":%.6f,\"mb_per_s\":%.3f,\"cpu_mb_per_s\":%.3f}\n",
           TOKENIZER_TAGS, tokname, textname, len, (long long)n, runs, best, (double)len / best / 1e6, (double)len / best_cpu / 1e6);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *src = __FILE__, *slash = strrchr(src, '/');
    char fx[4096], docs[4096], p1[4200], p2[4200];
    int root = slash ? (int)(slash - src) : 0;
    if (argc > 1) snprintf(fx, sizeof fx, "%s", argv[1]);
    else snprintf(fx, sizeof fx, "%.*s/../tests/fixtures/tokenizer", root, src);
    snprintf(docs, sizeof docs, "%.*s/../docs", root, src);
    int runs = getenv("PD_BENCH_FULL") ? 20 : 5;

    snprintf(p1, sizeof p1, "%s/gpt2/encoder.json", fx);
    snprintf(p2, sizeof p2, "%s/gpt2/vocab.bpe", fx);
    double t0 = bench_now();
    struct pd_tokenizer *gpt2 = pd_tokenizer_load_gpt2(p1, p2);
    if (!gpt2) {
        printf("{\"bench\":\"tokenizer\",\"impl\":\"paddle.c\",%s,\"error\":\"%s\"}\n", TOKENIZER_TAGS, pd_last_error());
        return 1;
    }
    printf("{\"bench\":\"tokenizer\",\"impl\":\"paddle.c\",%s,\"tokenizer\":\"gpt2\",\"load_seconds\":%.4f}\n",
           TOKENIZER_TAGS, bench_now() - t0);
    size_t mlen, dlen;
    snprintf(p1, sizeof p1, "%s/mixed.txt", fx);
    char *mixed = slurp(p1, &mlen), *doc = docs_text(docs, &dlen);
    if (mixed) report("gpt2", "mixed", gpt2, mixed, mlen, runs);
    if (doc) report("gpt2", "docs", gpt2, doc, dlen, runs);
    if (doc) { /* paddlec's own BPE of the same vocabulary size */
        struct pd_tokenizer *own = pd_bpe_train(doc, dlen, 50257, NULL);
        if (own) {
            report("paddlec-bpe", "docs", own, doc, dlen, runs);
            if (mixed) report("paddlec-bpe", "mixed", own, mixed, mlen, runs);
        }
        pd_tokenizer_destroy(own);
    }
    free(mixed);
    free(doc);
    pd_tokenizer_destroy(gpt2);
    return 0;
}
