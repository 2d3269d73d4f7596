/* paddle.c — Llama decode throughput with the KV cache, against PyTorch
 * (bench/llama_torch.py decode) in the same run. Same model as
 * bench_train_llama (vocab 256, dim 288, 6 layers, 6 heads, hidden 768,
 * context 256), random init; greedy, batch 1, prompt 16, 240 new tokens.
 *
 * What is timed: prefill of the prompt, then 239 single-token forwards with
 * pd_llama_forward(m, ids, cache, NULL) and a host argmax — the loop every
 * generator runs. tokens_per_s = 240 / (prefill + decode), as the peer.
 * Best of --runs runs (each on a reset cache).
 * Validated before timing: the logits of the first 4 cached steps equal the
 * last position of a cache-free forward over the whole sequence so far
 * (within 1e-4 of the logits' scale); else an "error" line and exit 1.
 *
 *   bench_decode_llama [--runs N] [--threads T] [--no-peer] [--peer-threads 1,2]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#include "common.h"
#include "llama_bench.h"
#include "pd/pd.h"
#include "pd/nn.h"

#define VOCAB LLAMA_BENCH_VOCAB
#define CTX LLAMA_BENCH_CTX
#define PROMPT 16
#define NEW 240

static int64_t argmax_row(const float *x, int n)
{
    int64_t b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Forward of ids[0..n) (at cache positions len..len+n), the last row's logits into out[VOCAB]. */
static int step(struct pd_llama *m, struct pd_kv_cache *cache, const int64_t *ids, int n, float *out)
{
    int st = PD_OK;
    int scope_tok = pd_scope_begin();
    int64_t shape[2] = {1, n};
    struct pd_tensor *x = pd_from_buffer(ids, shape, 2, PD_I64);
    struct pd_tensor *logits = pd_llama_forward(m, x, cache, NULL);
    /* the last position: [1, n, V] -> [V] */
    struct pd_tensor *last = logits ? pd_slice(logits, 1, n - 1, n, 1) : NULL;
    if (!last || pd_to_buffer(last, out, PD_F32)) st = pd_last_status() ? pd_last_status() : PD_ERR_INVALID;
    pd_scope_end(scope_tok); /* frees x, logits, last */
    return st;
}

/* Greedy generation: fills toks[PROMPT + NEW]; returns seconds (prefill in *pre), or -1 on error. */
static double generate(struct pd_llama *m, struct pd_kv_cache *cache, int64_t *toks, double *pre)
{
    float logits[VOCAB];
    pd_kv_cache_reset(cache);
    double t0 = bench_now();
    if (step(m, cache, toks, PROMPT, logits)) return -1;
    *pre = bench_now() - t0;
    toks[PROMPT] = argmax_row(logits, VOCAB);
    for (int i = 1; i < NEW; i++) {
        if (step(m, cache, &toks[PROMPT + i - 1], 1, logits)) return -1;
        toks[PROMPT + i] = argmax_row(logits, VOCAB);
    }
    return bench_now() - t0;
}

/* The cache against a full recompute for the first 4 decode steps. */
static int validate(struct pd_llama *m, struct pd_kv_cache *cache, const int64_t *toks)
{
    float a[VOCAB], b[VOCAB];
    pd_kv_cache_reset(cache);
    if (step(m, cache, toks, PROMPT, a)) return -1;
    for (int i = 0; i < 4; i++) {
        if (i > 0 && step(m, cache, &toks[PROMPT + i - 1], 1, a)) return -1;
        if (step(m, NULL, toks, PROMPT + i, b)) return -1;
        double scale = 0, diff = 0;
        for (int j = 0; j < VOCAB; j++) {
            scale = fmax(scale, fabs(b[j]));
            diff = fmax(diff, fabs((double)a[j] - b[j]));
        }
        if (!(diff <= 1e-4 * fmax(scale, 1.0))) {
            printf("{\"bench\":\"decode_llama\",\"impl\":\"paddle.c\",%s,\"error\":\"cached logits differ from a full "
                   "forward at decode step %d: max diff %.3g (scale %.3g)\"}\n", bench_tags("f32").s, i, diff, scale);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int runs = 3, threads = 0, peer = 1;
    const char *peer_threads = "1,2";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--peer-threads") && i + 1 < argc) peer_threads = argv[++i];
        else if (!strcmp(argv[i], "--no-peer")) peer = 0;
        else {
            fprintf(stderr, "bench_decode_llama: unknown or incomplete option '%s'\n"
                            "usage: bench_decode_llama [--runs N] [--threads T] [--no-peer] [--peer-threads 1,2]\n",
                    argv[i]);
            return 2;
        }
    }
    if (runs < 1 || threads < 0) {
        fprintf(stderr, "bench_decode_llama: need --runs >= 1 and --threads >= 0\n");
        return 2;
    }
    if (threads) pd_set_num_threads(threads);

    struct pd_llama_config cfg;
    llama_bench_config(&cfg);
    struct pd_llama *m = pd_llama_create(&cfg, 1234);
    struct pd_kv_cache *cache = m ? pd_kv_cache_create(&cfg, 1, CTX) : NULL;
    if (!cache) {
        printf("{\"bench\":\"decode_llama\",\"impl\":\"paddle.c\",%s,\"error\":\"setup: %s\"}\n", bench_tags("f32").s,
               pd_last_error());
        pd_llama_destroy(m);
        return 1;
    }
    pd_llama_train(m, 0);
    int64_t toks[PROMPT + NEW];
    uint64_t s = 42;
    for (int i = 0; i < PROMPT; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        toks[i] = (int64_t)((s >> 33) % VOCAB);
    }

    int bad = 0;
    double best = 1e30, best_pre = 0, pre;
    int64_t first[PROMPT + NEW];
    for (int r = 0; r <= runs && !bad; r++) { /* run 0 warms up and gives the tokens to validate with */
        double t = generate(m, cache, toks, &pre);
        if (t < 0) {
            printf("{\"bench\":\"decode_llama\",\"impl\":\"paddle.c\",%s,\"error\":\"generate: %s\"}\n",
                   bench_tags("f32").s, pd_last_error());
            bad = 1;
        } else if (r == 0) {
            memcpy(first, toks, sizeof first);
            bad = validate(m, cache, toks);
            if (bad < 0)
                printf("{\"bench\":\"decode_llama\",\"impl\":\"paddle.c\",%s,\"error\":\"validate: %s\"}\n",
                       bench_tags("f32").s, pd_last_error());
        } else {
            if (memcmp(first, toks, sizeof first)) {
                printf("{\"bench\":\"decode_llama\",\"impl\":\"paddle.c\",%s,\"error\":\"greedy tokens differ between "
                       "runs\"}\n", bench_tags("f32").s);
                bad = 1;
            }
            if (t < best) { best = t; best_pre = pre; }
        }
    }
    double tps = NAN;
    if (!bad) {
        tps = NEW / best;
        printf("{\"bench\":\"decode_llama\",\"impl\":\"paddle.c\",%s,\"batch\":1,"
               "\"prompt\":%d,\"new_tokens\":%d,\"runs\":%d,\"prefill_s\":%.5f,\"total_s\":%.4f,\"tokens_per_s\":%.1f,"
               "\"decode_tokens_per_s\":%.1f,\"first_tokens\":[%lld,%lld,%lld,%lld]}\n",
               bench_tags("f32").s, PROMPT, NEW, runs, best_pre, best, tps, (NEW - 1) / (best - best_pre),
               (long long)first[PROMPT], (long long)first[PROMPT + 1], (long long)first[PROMPT + 2],
               (long long)first[PROMPT + 3]);
        fflush(stdout);
    }
    pd_kv_cache_destroy(cache);
    pd_llama_destroy(m);

    if (!bad && peer) {
        char args[256];
        snprintf(args, sizeof args, "decode --threads %s --prompt %d --new %d", peer_threads, PROMPT, NEW);
        double ptps = llama_bench_peer("decode_llama", args, "tokens_per_s");
        if (!isnan(ptps))
            printf("{\"bench\":\"decode_llama\",\"impl\":\"paddle.c/pytorch\",%s,\"pd_tokens_per_s\":%.1f,"
                   "\"pytorch_tokens_per_s\":%.1f,\"ratio\":%.3f}\n", bench_tags("f32").s, tps, ptps, tps / ptps);
    }
    return bad != 0;
}
