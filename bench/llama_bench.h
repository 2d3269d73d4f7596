/* paddle.c — what bench_train_llama and bench_decode_llama share: the
 * issue's bench model (vocab 256, dim 288, 6 layers, 6 heads, 6 kv heads,
 * hidden 768, context 256, untied lm_head, no dropout — the same as
 * bench/llama_torch.py's CFG) and the runner of that PyTorch peer. */
#ifndef PD_BENCH_LLAMA_H
#define PD_BENCH_LLAMA_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/nn.h"

#define LLAMA_BENCH_VOCAB 256
#define LLAMA_BENCH_CTX 256

static inline void llama_bench_config(struct pd_llama_config *cfg)
{
    pd_llama_config_default(cfg);
    cfg->vocab_size = LLAMA_BENCH_VOCAB;
    cfg->dim = 288;
    cfg->n_layers = 6;
    cfg->n_heads = 6;
    cfg->n_kv_heads = 6;
    cfg->hidden_dim = 768;
    cfg->max_seq_len = LLAMA_BENCH_CTX;
    cfg->norm_eps = 1e-5;
    cfg->rope_theta = 10000.0;
    cfg->tie_embeddings = 0;
    cfg->dropout = 0.0;
    cfg->init_std = 0.02;
}

/* Runs `llama_torch.py <args> $PD_LLAMA_PEER_ARGS` (found beside this
 * header, or at $PD_LLAMA_PEER), echoes its JSON lines to stdout, and returns `key` of its
 * line marked "best": true (NaN if none, with an "error" line). */
static char llama_bench_best_line[4096]; /* the peer's last "best" line */

/* `key` of the peer's last "best" line (NaN if absent). */
static inline double llama_bench_peer_last(const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(llama_bench_best_line, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

static inline double llama_bench_peer(const char *bench, const char *args, const char *key)
{
    char script[1024], cmd[2048], line[4096], pat[64];
    const char *env = getenv("PD_LLAMA_PEER");
    snprintf(script, sizeof script, "%s", env ? env : __FILE__);
    if (!env) {
        char *slash = strrchr(script, '/');
        if (slash) slash[1] = 0; else script[0] = 0;
        strncat(script, "llama_torch.py", sizeof script - strlen(script) - 1);
    }
    const char *extra = getenv("PD_LLAMA_PEER_ARGS");
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' %s %s", script, args, extra ? extra : "");
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    fflush(stdout);
    FILE *f = popen(cmd, "r");
    double v = NAN;
    while (f && fgets(line, sizeof line, f)) {
        fputs(line, stdout);
        if (!strstr(line, "\"best\": true")) continue;
        snprintf(llama_bench_best_line, sizeof llama_bench_best_line, "%s", line);
        const char *p = strstr(line, pat);
        if (p) v = strtod(p + strlen(pat), NULL);
    }
    int rc = f ? pclose(f) : -1;
    if (isnan(v))
        printf("{\"bench\":\"%s\",\"impl\":\"pytorch\",\"error\":\"no result from %s (status %d)\"}\n", bench, script,
               rc);
    fflush(stdout);
    return v;
}
#endif
