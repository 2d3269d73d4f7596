/* paddle.c — FlashMask attention (pd_flashmask_attention) on the paper's mask
 * families against (a) the same attention composed from paddle.c ops over a
 * dense bool mask, (b) PyTorch doing the same (bench/flashmask_torch.py, run
 * in the same invocation) and (c) a FlexAttention-style block mask (explicit
 * per-tile lists built by sweeping a mask callback, kernels/cpu/flashmask.h)
 * on the same tile kernels. One JSON line per (mask, S, D, impl).
 *
 * Shapes: q, k, v [B, S, H, D] f32, B = 1, H = 4 (--heads), one mask for all
 * heads; by default D = 64 and S in {1024, 4096} (about a minute); --full: D in
 * {64, 128} and S in {1024, 4096, 8192, 16384}.
 * Masks (builders of pd/flashmask.h; fractions of S, kept when S changes):
 *   causal              plain causal
 *   sliding_window      causal, each query sees the S/8 keys before it and itself
 *   causal_document     4 packed documents of 3/8, 1/8, 2/8, 2/8 S, causal in each
 *   document            the same documents, bidirectional in each
 *   share_question      a question of S/4 and 3 answers of S/4
 *   global_sliding      S/16 global tokens, window S/16 each side
 *   causal_blockwise    3 demonstrations of S/4 and a test block of S/4
 *   prefix_lm           bidirectional prefix of S/2, causal after
 *   prefix_document     the 4 documents, each with a prefix of half its length
 *   qk_sparse           queries [S/4, S/2) see only the keys before S/4
 *   random_eviction     from row S/2 on, one earlier key evicted per row
 * Work counted: only the unmasked (query, key) pairs P (from the indices):
 * forward 4 D flops per pair (q k^T and p v), backward 10 D (recomputed
 * scores, dV, dP, dQ, dK), so fwd+bwd 14 D. eff_gflops = that / time, for
 * every implementation (the dense ones do more work than they are credited
 * with: that is the point). frac_tiles = (partial + full) / all tiles from
 * pd_flashmask_count_tiles. peak_mb: rise of the allocator's peak over a call
 * (pd/memory.h: tensors and the kernels' pdi_alloc scratch; masks built
 * before the call are not in it, their size is mask_bytes); the peer: rise
 * of the resident set.
 * Dense composition: matmul, where(mask, s, -inf), softmax, matmul; forward
 * and backward by autograd. Its cost does not depend on which mask is dense,
 * so by default it (and the peer) is timed on the first mask of each (S, D)
 * and reused for the others ("timed_on"); --per-mask times every mask. Skipped
 * (a line says why) when its score matrices would pass 8 GiB.
 * Block mask: built once per mask (build_ms, not in the times), like
 * FlexAttention's create_block_mask; its callback evaluates the same indices.
 * Checks: at S <= 1024 the FlashMask output and gradients are compared with
 * the dense composition and the block mask with FlashMask (max_abs_diff; the
 * run fails above 1e-3). Goal lines: FlashMask fwd+bwd speedup over dense at
 * S = 8192 >= 0.8 / frac_tiles, and causal fwd+bwd eff_gflops >= 50% of
 * pd_matmul's rate at 1024^3 measured right after it.
 * Timing: a warm-up call (which also gives peak_mb); a call over 0.3 s is
 * repeated until two calls agree within 10% (at most 4 calls, the best
 * kept), shorter ones run in trials of ~0.05 s, best of 3. Threads:
 * OpenMP's default (OMP_NUM_THREADS=2 for the published numbers); the peer
 * runs at 1 and 2 threads and the faster is reported.
 * Run time on an idle 2-core machine: the default under a minute, --full
 * about 10 minutes (S = 16384 dominates; dense and peer skip it), twice that
 * when the machine is shared.
 *
 *   bench_flashmask [--full] [--seq 1024,4096] [--dims 64] [--heads 4] [--per-mask]
 *                   [--masks causal,document,...] [--no-peer] [--no-dense]
 *                   [--no-block] [--peer-threads 1,2]
 * The peer script is found beside this source file (PD_FLASHMASK_PEER
 * overrides); it gets OpenBLAS (PD_PEER_BLAS_DIR) with OPENBLAS_CORETYPE=
 * SkylakeX on AVX-512 CPUs (OpenBLAS 0.3.21 misdetects Zen 4/5 as older
 * cores) and Haswell elsewhere (SkylakeX kernels crash on AVX2-only CPUs),
 * as bench/run.sh does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "kernels/cpu/flashmask.h"
#include "pd/pd.h"
#include "pd/flashmask.h"
#include "pd/memory.h"

#define MAX_LIST 8
#define MAX_RESULTS 256
#define DENSE_LIMIT (8.0 * (1 << 30))
#define CHECK_MAX_S 1024
#define CHECK_TOL 1e-3

enum impl { FLASHMASK, DENSE, BLOCK, IMPL_COUNT };
static const char *impl_names[IMPL_COUNT] = {"flashmask", "dense", "block_mask"};

struct mask_family {
    const char *name;
    int causal;
};
static const struct mask_family families[] = {
    {"causal", 1},          {"sliding_window", 1},   {"causal_document", 1}, {"document", 0},
    {"share_question", 1},  {"global_sliding", 0},   {"causal_blockwise", 1}, {"prefix_lm", 0},
    {"prefix_document", 0}, {"qk_sparse", 1},        {"random_eviction", 1},
};
#define N_FAMILIES ((int)(sizeof families / sizeof families[0]))

/* Indices [1, 1, S, C] of family f at length S (the parameters above). */
static struct pd_tensor *build_mask(int f, int64_t S)
{
    int64_t docs[4] = {3 * S / 8, S / 8, 2 * S / 8, S - 6 * S / 8}, quarters[4] = {S / 4, S / 4, S / 4, S - 3 * S / 4};
    int64_t prefixes[4] = {docs[0] / 2, docs[1] / 2, docs[2] / 2, docs[3] / 2};
    const char *n = families[f].name;
    if (!strcmp(n, "causal")) return pd_flashmask_causal(S);
    if (!strcmp(n, "sliding_window")) return pd_flashmask_sliding_window(S, S / 8, 0, 1);
    if (!strcmp(n, "causal_document")) return pd_flashmask_causal_document(S, docs, 4);
    if (!strcmp(n, "document")) return pd_flashmask_document(S, docs, 4);
    if (!strcmp(n, "share_question")) return pd_flashmask_share_question(S, quarters, 4);
    if (!strcmp(n, "global_sliding")) return pd_flashmask_global_sliding_window(S, S / 16, S / 16, S / 16);
    if (!strcmp(n, "causal_blockwise")) return pd_flashmask_causal_blockwise(S, quarters, 4);
    if (!strcmp(n, "prefix_lm")) return pd_flashmask_prefix_lm(S, S / 2);
    if (!strcmp(n, "prefix_document")) return pd_flashmask_prefix_document(S, docs, prefixes, 4);
    if (!strcmp(n, "qk_sparse")) return pd_flashmask_qk_sparse(S, S / 4, S / 4);
    return pd_flashmask_random_eviction(S, S / 2, 1);
}

/* The indices of one mask head read back to the host: idx[j * C + c]. */
struct host_mask {
    int32_t *idx;
    int64_t S, C;
    int causal;
};

/* Length of [a0, a1) n [b0, b1). */
static int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

/* The masked row intervals of key column j (table in pd/flashmask.h); the
 * second is empty when C has only one family. */
static void column_intervals(const struct host_mask *m, int64_t j, int64_t iv[4])
{
    const int32_t *c = m->idx + j * m->C;
    int64_t S = m->S;
    if (m->C == 1) iv[0] = c[0], iv[1] = S, iv[2] = iv[3] = 0;
    else if (m->causal) iv[0] = c[0], iv[1] = c[1], iv[2] = iv[3] = 0;
    else if (m->C == 2) iv[0] = c[0], iv[1] = S, iv[2] = 0, iv[3] = c[1];
    else iv[0] = c[0], iv[1] = c[1], iv[2] = c[2], iv[3] = c[3];
}

/* Unmasked (query, key) pairs of one head: per column, the rows the causal
 * bound leaves minus the union of the two masked intervals. O(S). */
static double unmasked_pairs(const struct host_mask *m)
{
    double n = 0;
    for (int64_t j = 0; j < m->S; j++) {
        int64_t iv[4], lo = m->causal ? j : 0, hi = m->S;
        column_intervals(m, j, iv);
        int64_t both = overlap(lo, hi, iv[0] > iv[2] ? iv[0] : iv[2], iv[1] < iv[3] ? iv[1] : iv[3]);
        n += (double)(hi - lo - overlap(lo, hi, iv[0], iv[1]) - overlap(lo, hi, iv[2], iv[3]) + both);
    }
    return n;
}

/* FlexAttention's mask_mod over the same indices (true = attend). */
static int mask_mod(void *ctx, int64_t b, int64_t h, int64_t qi, int64_t kj)
{
    (void)b, (void)h;
    const struct host_mask *m = ctx;
    int64_t iv[4];
    if (m->causal && kj > qi) return 0;
    column_intervals(m, kj, iv);
    return !(qi >= iv[0] && qi < iv[1]) && !(qi >= iv[2] && qi < iv[3]);
}

/* ---- the three implementations ----------------------------------------- */

struct run {
    struct pd_tensor *q, *k, *v, *dout; /* [B, S, H, D]; q, k, v require grad */
    struct pd_tensor *idx, *dense;      /* indices; bool [1, 1, S, S] (dense only) */
    struct pdi_block_mask *bm;
    int causal, backward;
    enum impl impl;
    struct pd_tensor *out, *grads[3];   /* of the last run_call, alive until its scope ends */
};

/* Dense masked attention from public ops, in the [B, S, H, D] layout. */
static struct pd_tensor *dense_attention(struct run *r)
{
    int perm[4] = {0, 2, 1, 3};
    double scale = 1.0 / sqrt((double)pd_tensor_dim(r->q, 3));
    struct pd_tensor *q = pd_scale(pd_permute(r->q, perm, 4), scale), *k = pd_permute(r->k, perm, 4);
    struct pd_tensor *s = pd_matmul(q, k, 0, 1); /* [B, H, S, S] */
    s = pd_where(r->dense, s, pd_scalar(-INFINITY, PD_F32));
    return pd_permute(pd_matmul(pd_softmax(s, -1), pd_permute(r->v, perm, 4), 0, 0), perm, 4);
}

/* The block-mask kernels on the raw buffers (contiguous f32). */
static struct pd_tensor *block_attention(struct run *r, struct pd_tensor **grads)
{
    int64_t B = pd_tensor_dim(r->q, 0), S = pd_tensor_dim(r->q, 1), H = pd_tensor_dim(r->q, 2);
    int64_t D = pd_tensor_dim(r->q, 3), ls[3] = {B, H, S};
    struct pd_tensor *out = pd_empty_like(r->q), *lse = pd_empty(ls, 3, PD_F32);
    const float *q = pd_tensor_data(r->q), *k = pd_tensor_data(r->k), *v = pd_tensor_data(r->v);
    if (pdi_block_mask_attention_fwd(r->bm, B, H, S, S, D, q, k, v, 0, pd_tensor_data(out), pd_tensor_data(lse)))
        fprintf(stderr, "block mask forward: %s\n", pd_last_error());
    if (grads) {
        for (int i = 0; i < 3; i++) grads[i] = pd_empty_like(r->q);
        if (pdi_block_mask_attention_bwd(r->bm, B, H, S, S, D, q, k, v, pd_tensor_data(out), pd_tensor_data(lse),
                                         pd_tensor_data(r->dout), 0, pd_tensor_data(grads[0]),
                                         pd_tensor_data(grads[1]), pd_tensor_data(grads[2])))
            fprintf(stderr, "block mask backward: %s\n", pd_last_error());
    }
    return out;
}

/* One call of r's implementation; the output and gradients stay in the
 * caller's scope. The forward runs without autograd (inference). */
static void run_call(struct run *r)
{
    struct pd_tensor *in[3] = {r->q, r->k, r->v};
    if (r->impl == BLOCK) {
        r->out = block_attention(r, r->backward ? r->grads : NULL);
        return;
    }
    int mode = r->backward ? pd_enable_grad_begin() : pd_no_grad_begin();
    r->out = r->impl == FLASHMASK ? pd_flashmask_attention(r->q, r->k, r->v, r->idx, r->causal, NULL, 0, 0, NULL)
                                  : dense_attention(r);
    pd_grad_mode_end(mode);
    if (!r->out) fprintf(stderr, "%s: %s\n", impl_names[r->impl], pd_last_error());
    else if (r->backward && pd_grad(&r->out, 1, in, 3, r->grads, &(struct pd_grad_options){.grad_outputs = &r->dout}))
        fprintf(stderr, "%s backward: %s\n", impl_names[r->impl], pd_last_error());
}

static void run_scoped(void *p)
{
    int scope_tok = pd_scope_begin();
    run_call(p);
    pd_scope_end(scope_tok);
}

/* Seconds per call (the policy in the header comment); *mb gets the rise of
 * the allocator's peak over the warm-up call, MiB. */
static double seconds(void (*fn)(void *), void *ctx, double *mb)
{
    struct pd_memory_stats m0, m1;
    pd_memory_stats(&m0);
    pd_memory_reset_peak();
    double t0 = bench_now();
    fn(ctx);
    double once = bench_now() - t0;
    pd_memory_stats(&m1);
    *mb = (double)(m1.peak_allocated_bytes - m0.allocated_bytes) / (1 << 20);
    if (once > 0.3) { /* until two calls agree within 10%, at most 4 */
        double best = once;
        for (int i = 0; i < 3; i++) {
            t0 = bench_now();
            fn(ctx);
            double t = bench_now() - t0, agree = fabs(t - best) <= 0.1 * fmin(t, best);
            best = fmin(best, t);
            if (agree) break;
        }
        return best;
    }
    int iters = (int)(0.05 / fmax(once, 1e-6)) + 1;
    double best = 1e30;
    for (int t = 0; t < 3; t++) {
        t0 = bench_now();
        for (int i = 0; i < iters; i++) fn(ctx);
        best = fmin(best, (bench_now() - t0) / iters);
    }
    return best;
}

static double max_diff(struct pd_tensor *a, struct pd_tensor *b)
{
    int64_t n = pd_tensor_numel(a);
    float *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    double m = 0;
    if (x && y && !pd_to_buffer(a, x, PD_F32) && !pd_to_buffer(b, y, PD_F32))
        for (int64_t i = 0; i < n; i++) {
            double d = fabs((double)x[i] - y[i]);
            if (!(d <= m)) m = isnan(d) ? INFINITY : d; /* a NaN on one side only is a failure */
        }
    else m = INFINITY;
    free(x);
    free(y);
    return m;
}

/* Largest difference of output and gradients between r's implementation and
 * `ref`'s; INFINITY when either failed or one gave NaN. */
static double compare(struct run *r, enum impl ref)
{
    struct run a = *r, b = *r;
    a.backward = b.backward = 1;
    b.impl = ref;
    int scope_tok = pd_scope_begin();
    run_call(&a);
    run_call(&b);
    double m = a.out && b.out ? max_diff(a.out, b.out) : INFINITY;
    for (int i = 0; i < 3 && isfinite(m); i++) m = fmax(m, max_diff(a.grads[i], b.grads[i]));
    pd_scope_end(scope_tok);
    return m;
}

/* ---- results ------------------------------------------------------------ */

struct result {
    int family;
    int64_t S, D;
    double pairs, frac;                      /* unmasked pairs (all heads), tile fraction */
    double matmul_gflops;                    /* causal only: pd_matmul's rate right after FlashMask's */
    double ms[IMPL_COUNT][2];                /* fwd, fwd_bwd; NaN: not run */
    double torch_ms[2], torch_mb[2];
    int torch_threads;                       /* 0: not timed by the peer (another mask's times are shown) */
    char torch_skip[160];
};

static struct result results[MAX_RESULTS];
static int n_results;
static char torch_version[32] = "?"; /* the peer's, from its lines */

struct opts {
    int64_t seq[MAX_LIST], dims[MAX_LIST];
    int n_seq, n_dims, heads, per_mask, peer, dense, block;
    int masks[N_FAMILIES], n_masks;
    const char *peer_threads;
};

/* A JSON number, null for what was not measured. */
static void print_num(double v)
{
    if (isfinite(v)) printf("%.4g", v);
    else printf("null");
}

/* ,"key":{"fwd":v0,"fwd_bwd":v1} */
static void print_pair(const char *key, const double v[2])
{
    printf(",\"%s\":{\"fwd\":", key);
    print_num(v[0]);
    printf(",\"fwd_bwd\":");
    print_num(v[1]);
    printf("}");
}

/* The line of one implementation; `extra` is appended inside the object. */
static void emit(const struct result *res, const char *impl, const double ms[2], const double mb[2], int H,
                 const char *extra)
{
    double eff[2], speed[2];
    for (int m = 0; m < 2; m++) {
        eff[m] = res->pairs * (m ? 14.0 : 4.0) * (double)res->D / (ms[m] * 1e-3) * 1e-9;
        speed[m] = res->ms[DENSE][m] / ms[m];
    }
    int peer = !strcmp(impl, "pytorch"); /* the peer's threads come in `extra` */
    printf("{\"bench\":\"flashmask\",\"mask\":\"%s\",\"S\":%lld,\"D\":%lld,\"B\":1,\"H\":%d,\"impl\":\"%s\"%s%s",
           families[res->family].name, (long long)res->S, (long long)res->D, H, impl, peer ? "" : ",",
           peer ? "" : bench_tags("f32").s);
    print_pair("time_ms", ms);
    printf(",\"frac_tiles\":");
    print_num(res->frac);
    printf(",\"unmasked_frac\":%.4f", res->pairs / ((double)H * (double)res->S * (double)res->S));
    print_pair("eff_gflops", eff);
    print_pair("peak_mb", mb);
    print_pair("speedup_vs_dense", speed);
    printf("%s}\n", extra ? extra : "");
}

/* ---- the PyTorch peer ----------------------------------------------------- */

static char tmpdir[64];

/* $PD_FLASHMASK_PEER, or flashmask_torch.py beside this source file. */
static const char *peer_script(char *buf, size_t n)
{
    const char *env = getenv("PD_FLASHMASK_PEER");
    snprintf(buf, n, "%s", env ? env : __FILE__);
    if (!env) {
        char *slash = strrchr(buf, '/');
        if (slash) slash[1] = 0; else buf[0] = 0;
        strncat(buf, "flashmask_torch.py", n - strlen(buf) - 1);
    }
    return buf;
}

/* The file of res's indices for the peer (one per mask and S). */
static const char *index_path(char *buf, size_t n, const struct result *res)
{
    snprintf(buf, n, "%s/%s_%lld.i32", tmpdir, families[res->family].name, (long long)res->S);
    return buf;
}

/* Adds one configuration to the peer's manifest (the indices to a file). */
static void peer_add(FILE *manifest, const struct result *res, const struct host_mask *m, int H)
{
    char path[128];
    if (access(index_path(path, sizeof path, res), R_OK)) {
        FILE *f = fopen(path, "wb");
        if (f) {
            fwrite(m->idx, sizeof *m->idx, (size_t)(m->S * m->C), f);
            fclose(f);
        }
    }
    fprintf(manifest, "{\"mask\":\"%s\",\"S\":%lld,\"D\":%lld,\"B\":1,\"H\":%d,\"causal\":%d,\"C\":%lld,"
            "\"indices\":\"%s\"}\n", families[res->family].name, (long long)res->S, (long long)res->D, H,
            m->causal, (long long)m->C, path);
}

static double json_num(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(line, pat);
    return p && strncmp(p + strlen(pat), "null", 4) ? strtod(p + strlen(pat), NULL) : NAN;
}

static int json_str(const char *line, const char *key, char *out, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(line, pat);
    if (!p) return 0;
    p += strlen(pat);
    size_t len = strcspn(p, "\"");
    snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), p);
    return 1;
}

/* Runs the peer at each thread count over the manifest and keeps, per
 * configuration, the faster fwd+bwd. */
static void peer_run(const char *manifest, const char *threads)
{
    char script[1024], cmd[2048], line[4096], list[64];
    const char *blas = getenv("PD_PEER_BLAS_DIR");
    char libpath[512] = "";
    if (!blas) blas = "/usr/lib/x86_64-linux-gnu/openblas-pthread";
    snprintf(list, sizeof list, "%s", threads);
    if (access(blas, R_OK) == 0) snprintf(libpath, sizeof libpath, "LD_LIBRARY_PATH='%s' ", blas);
    else fprintf(stderr, "bench_flashmask: no OpenBLAS in %s: the peer's matmul uses the reference BLAS\n", blas);
    const char *core = __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell";
    for (char *th = strtok(list, ","); th; th = strtok(NULL, ",")) {
        snprintf(cmd, sizeof cmd,
                 "env -u OMP_NUM_THREADS %sOPENBLAS_NUM_THREADS=%d OPENBLAS_CORETYPE=%s "
                 "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296 "
                 "/usr/bin/python3 '%s' '%s' %d",
                 libpath, atoi(th), core, peer_script(script, sizeof script), manifest, atoi(th));
        fflush(stdout);
        FILE *f = popen(cmd, "r");
        while (f && fgets(line, sizeof line, f)) {
            char mask[64];
            json_str(line, "torch", torch_version, sizeof torch_version);
            if (!json_str(line, "mask", mask, sizeof mask)) continue;
            int64_t S = (int64_t)json_num(line, "S"), D = (int64_t)json_num(line, "D");
            for (int i = 0; i < n_results; i++) {
                struct result *r = &results[i];
                if (r->S != S || r->D != D || strcmp(families[r->family].name, mask)) continue;
                if (json_str(line, "skipped", r->torch_skip, sizeof r->torch_skip)) continue;
                double fb = json_num(line, "fwd_bwd_ms");
                if (isfinite(fb) && !(fb >= r->torch_ms[1])) { /* the first, or faster */
                    r->torch_ms[0] = json_num(line, "fwd_ms");
                    r->torch_ms[1] = fb;
                    r->torch_mb[0] = json_num(line, "peak_mb_fwd");
                    r->torch_mb[1] = json_num(line, "peak_mb_fwd_bwd");
                    r->torch_threads = atoi(th);
                }
            }
        }
        int rc = f ? pclose(f) : -1;
        if (rc) printf("{\"bench\":\"flashmask\",\"impl\":\"pytorch\",\"threads\":%d,\"dtype\":\"f32\",\"error\":"
                       "\"peer exited with status %d\"}\n", atoi(th), rc);
    }
}

/* ---- one (mask, S, D) ----------------------------------------------------- */

struct mm {
    struct pd_tensor *a, *b;
};

static void run_matmul(void *p)
{
    struct mm *m = p;
    int scope_tok = pd_scope_begin();
    pd_matmul(m->a, m->b, 0, 0);
    pd_scope_end(scope_tok);
}

/* pd_matmul's f32 rate at 1024^3, GFLOP/s. */
static double matmul_rate(void)
{
    int64_t s[2] = {1024, 1024};
    struct pd_generator *g = pd_generator_create(1);
    struct mm m = {pd_randn(s, 2, PD_F32, g), pd_randn(s, 2, PD_F32, g)};
    double mb, t = seconds(run_matmul, &m, &mb);
    pd_tensor_release(m.a);
    pd_tensor_release(m.b);
    pd_generator_destroy(g);
    return 2.0 * 1024 * 1024 * 1024 / t * 1e-9;
}

/* fwd and fwd_bwd of r under impl: ms per call and peak MiB. */
static void time_modes(struct run *r, enum impl impl, double ms[2], double mb[2])
{
    r->impl = impl;
    for (int m = 0; m < 2; m++) {
        r->backward = m;
        ms[m] = seconds(run_scoped, r, &mb[m]) * 1e3;
    }
}

/* Appends ,"max_abs_diff_vs_<ref>":d to extra[len..]; 1 when d passes the
 * tolerance. */
static int check(struct run *r, enum impl impl, enum impl ref, char *extra, size_t size, const char *what)
{
    r->impl = impl;
    double d = compare(r, ref);
    size_t len = strlen(extra);
    if (isfinite(d)) snprintf(extra + len, size - len, ",\"max_abs_diff_vs_%s\":%.3g", impl_names[ref], d);
    else snprintf(extra + len, size - len, ",\"max_abs_diff_vs_%s\":null", impl_names[ref]); /* failed or NaN */
    if (d <= CHECK_TOL) return 0;
    fprintf(stderr, "bench_flashmask: %s: %s differs from %s by %g\n", what, impl_names[impl], impl_names[ref], d);
    return 1;
}

/* (c) the block mask of hm on r's tensors. Status. */
static int bench_block(struct run *r, struct result *res, struct host_mask *hm, int H, const char *what)
{
    struct pdi_block_mask bm;
    double t0 = bench_now();
    if (pdi_block_mask_build(&bm, 1, 1, res->S, res->S, mask_mod, hm)) {
        printf("{\"bench\":\"flashmask\",\"mask\":\"%s\",\"S\":%lld,\"D\":%lld,\"impl\":\"block_mask\",%s,"
               "\"error\":\"build: %s\"}\n", families[res->family].name, (long long)res->S, (long long)res->D,
               bench_tags("f32").s, pd_last_error());
        return 1;
    }
    double build_ms = (bench_now() - t0) * 1e3, mb[2], visited = 0;
    for (int64_t i = 0; i < bm.nq; i++) visited += bm.kv_num[i] + bm.full_num[i];
    r->bm = &bm;
    time_modes(r, BLOCK, res->ms[BLOCK], mb);
    /* kv_num, full_num [nq]; kv_idx, full_idx [nq][nk] int32; cls [nq][nk] bytes */
    char extra[256];
    snprintf(extra, sizeof extra, ",\"build_ms\":%.4g,\"block_frac_tiles\":%.4f,\"mask_bytes\":%.0f", build_ms,
             visited / ((double)bm.nq * (double)bm.nk), (double)bm.nq * (8 + 9 * (double)bm.nk));
    int fail = res->S <= CHECK_MAX_S && check(r, BLOCK, FLASHMASK, extra, sizeof extra, what);
    emit(res, "block_mask", res->ms[BLOCK], mb, H, extra);
    pdi_block_mask_free(&bm);
    r->bm = NULL;
    return fail;
}

/* The dense composition's times, shared by the masks of one (S, D). */
struct shared_dense {
    int64_t S, D;
    double ms[2], mb[2];
    int family;
};

static int bench_one(const struct opts *o, int f, int64_t S, int64_t D, struct shared_dense *dense, FILE *manifest)
{
    int H = o->heads, fail = 0;
    char what[96];
    snprintf(what, sizeof what, "%s S=%lld D=%lld", families[f].name, (long long)S, (long long)D);
    struct run r = {.causal = families[f].causal, .idx = build_mask(f, S)};
    if (!r.idx) {
        printf("{\"bench\":\"flashmask\",\"mask\":\"%s\",\"S\":%lld,%s,\"error\":\"builder: %s\"}\n",
               families[f].name, (long long)S, bench_tags("f32").s, pd_last_error());
        return 1;
    }
    struct result *res = &results[n_results++];
    *res = (struct result){.family = f, .S = S, .D = D, .torch_ms = {NAN, NAN}, .torch_mb = {NAN, NAN}};
    for (int i = 0; i < IMPL_COUNT; i++) res->ms[i][0] = res->ms[i][1] = NAN;

    struct host_mask hm = {.S = S, .C = pd_tensor_dim(r.idx, 3), .causal = r.causal};
    hm.idx = malloc(sizeof *hm.idx * (size_t)(S * hm.C));
    pd_to_buffer(r.idx, hm.idx, PD_I32);
    res->pairs = unmasked_pairs(&hm) * H;
    struct pd_flashmask_tiles tiles = {0};
    if (pd_flashmask_count_tiles(r.idx, r.causal, 1, S, S, H, H, &tiles))
        fprintf(stderr, "bench_flashmask: count_tiles: %s\n", pd_last_error());
    double n_tiles = (double)(tiles.skipped + tiles.partial + tiles.full);
    res->frac = n_tiles > 0 ? (double)(tiles.partial + tiles.full) / n_tiles : NAN;

    struct pd_generator *gen = pd_generator_create(7);
    int64_t shape[4] = {1, S, H, D};
    r.q = pd_requires_grad_(pd_randn(shape, 4, PD_F32, gen), 1);
    r.k = pd_requires_grad_(pd_randn(shape, 4, PD_F32, gen), 1);
    r.v = pd_requires_grad_(pd_randn(shape, 4, PD_F32, gen), 1);
    r.dout = pd_randn(shape, 4, PD_F32, gen);
    pd_generator_destroy(gen);

    /* (a) dense, timed on the first mask of (S, D) unless --per-mask. The size
     * estimate counts the score-sized f32 tensors alive at the end of the
     * backward (scope-owned: scores, masked, softmax, their gradients and
     * the attention weights' ops) plus the bool mask. */
    double dense_bytes = 7.0 * 4 * H * (double)S * S + (double)S * S;
    int fits = o->dense && dense_bytes <= DENSE_LIMIT, checked = S <= CHECK_MAX_S;
    int time_dense = fits && (o->per_mask || dense->S != S || dense->D != D);
    if (fits && (checked || time_dense)) r.dense = pd_flashmask_to_dense(r.idx, r.causal, S);
    if (time_dense) {
        time_modes(&r, DENSE, dense->ms, dense->mb);
        dense->S = S, dense->D = D, dense->family = f;
    }
    if (fits) memcpy(res->ms[DENSE], dense->ms, sizeof dense->ms);

    double mb[2];
    time_modes(&r, FLASHMASK, res->ms[FLASHMASK], mb);
    /* the causal goal's yardstick, measured now: on a shared machine the
     * rate drifts over a run */
    if (!strcmp(families[f].name, "causal")) res->matmul_gflops = matmul_rate();
    char extra[512];
    snprintf(extra, sizeof extra, ",\"tiles\":{\"rows\":%lld,\"cols\":%lld,\"skipped\":%lld,\"partial\":%lld,"
             "\"full\":%lld},\"mask_bytes\":%lld", (long long)tiles.rows, (long long)tiles.cols,
             (long long)tiles.skipped, (long long)tiles.partial, (long long)tiles.full, (long long)(S * hm.C * 4));
    if (r.dense && checked) fail |= check(&r, FLASHMASK, DENSE, extra, sizeof extra, what);
    emit(res, "flashmask", res->ms[FLASHMASK], mb, H, extra);

    if (o->block) fail |= bench_block(&r, res, &hm, H, what);

    if (fits) {
        snprintf(extra, sizeof extra, ",\"timed_on\":\"%s\",\"mask_bytes\":%lld", families[dense->family].name,
                 (long long)(S * S));
        emit(res, "dense", res->ms[DENSE], dense->mb, H, extra);
    } else if (o->dense) {
        printf("{\"bench\":\"flashmask\",\"mask\":\"%s\",\"S\":%lld,\"D\":%lld,\"impl\":\"dense\",%s,\"skipped\":"
               "\"needs ~%.1f GiB of score matrices (> 8 GiB)\"}\n", families[f].name, (long long)S, (long long)D,
               bench_tags("f32").s, dense_bytes / (1 << 30));
    }

    /* (b) the peer: every mask with --per-mask, else the first of each (S, D) */
    if (manifest && (o->per_mask || !(n_results > 1 && res[-1].S == S && res[-1].D == D)))
        peer_add(manifest, res, &hm, H);

    free(hm.idx);
    pd_tensor_release(r.dense);
    pd_tensor_release(r.idx);
    pd_tensor_release(r.q);
    pd_tensor_release(r.k);
    pd_tensor_release(r.v);
    pd_tensor_release(r.dout);
    return fail;
}

/* ---- goals and main ------------------------------------------------------- */

/* The peer's lines, now that its times are known, and the goal checks. */
static void report(const struct opts *o)
{
    for (int i = 0; i < n_results && o->peer; i++) {
        struct result *r = &results[i];
        const struct result *t = r; /* where the peer's times come from: r, or the first mask of (S, D) */
        while (t > results && !t->torch_threads && !t->torch_skip[0] && t[-1].S == r->S && t[-1].D == r->D) t--;
        if (t->torch_skip[0])
            printf("{\"bench\":\"flashmask\",\"mask\":\"%s\",\"S\":%lld,\"D\":%lld,\"impl\":\"pytorch\","
                   "\"dtype\":\"f32\",\"torch\":\"%s\",\"skipped\":\"%s\"}\n", families[r->family].name, (long long)r->S,
                   (long long)r->D, torch_version, t->torch_skip);
        if (isnan(t->torch_ms[1])) continue;
        memcpy(r->torch_ms, t->torch_ms, sizeof r->torch_ms);
        char extra[160];
        snprintf(extra, sizeof extra, ",\"threads\":%d,\"dtype\":\"f32\",\"torch\":\"%s\",\"timed_on\":\"%s\"",
                 t->torch_threads, torch_version, families[t->family].name);
        emit(r, "pytorch", r->torch_ms, t->torch_mb, o->heads, extra);
    }
    /* FlashMask's speedups over the others, per (mask, S, D) */
    for (int i = 0; i < n_results; i++) {
        struct result *r = &results[i];
        printf("{\"bench\":\"flashmask\",\"summary\":\"speedup_of_flashmask\",%s,\"mask\":\"%s\",\"S\":%lld,"
               "\"D\":%lld", bench_tags("f32").s, families[r->family].name, (long long)r->S, (long long)r->D);
        const double *vs[3] = {r->ms[DENSE], r->ms[BLOCK], r->torch_ms};
        const char *names[3] = {"vs_dense", "vs_block_mask", "vs_pytorch"};
        for (int k = 0; k < 3; k++) {
            double sp[2] = {vs[k][0] / r->ms[FLASHMASK][0], vs[k][1] / r->ms[FLASHMASK][1]};
            print_pair(names[k], sp);
        }
        printf("}\n");
    }
    for (int i = 0; i < n_results; i++) {
        struct result *r = &results[i];
        if (r->S == 8192) {
            double sp = r->ms[DENSE][1] / r->ms[FLASHMASK][1], target = 0.8 / r->frac;
            printf("{\"bench\":\"flashmask\",\"goal\":\"speedup_8k\",%s,\"mask\":\"%s\",\"S\":8192,\"D\":%lld,"
                   "\"speedup_fwd_bwd\":", bench_tags("f32").s, families[r->family].name, (long long)r->D);
            print_num(sp);
            printf(",\"target\":%.3g,\"pass\":%s}\n", target, isnan(sp) ? "null" : sp >= target ? "true" : "false");
        }
        if (!strcmp(families[r->family].name, "causal")) {
            double eff = r->pairs * 14.0 * (double)r->D / (r->ms[FLASHMASK][1] * 1e-3) * 1e-9;
            printf("{\"bench\":\"flashmask\",\"goal\":\"causal_eff\",%s,\"S\":%lld,\"D\":%lld,\"eff_gflops_fwd_bwd\":%.4g,"
                   "\"matmul_gflops\":%.4g,\"ratio\":%.3f,\"pass\":%s}\n", bench_tags("f32").s, (long long)r->S, (long long)r->D, eff,
                   r->matmul_gflops, eff / r->matmul_gflops, eff >= 0.5 * r->matmul_gflops ? "true" : "false");
        }
    }
}

static int parse_list(const char *s, int64_t *out)
{
    int n = 0;
    for (char *end; *s && n < MAX_LIST; s = *end ? end + 1 : end) out[n++] = strtoll(s, &end, 10);
    return n;
}

static int parse_masks(const char *s, struct opts *o)
{
    o->n_masks = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int f = 0;
        while (f < N_FAMILIES && strcmp(families[f].name, t)) f++;
        if (f == N_FAMILIES) return fprintf(stderr, "bench_flashmask: unknown mask %s\n", t), 1;
        o->masks[o->n_masks++] = f;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {.seq = {1024, 4096}, .n_seq = 2, .dims = {64}, .n_dims = 1, .heads = 4, .peer = 1,
                     .dense = 1, .block = 1, .peer_threads = "1,2", .n_masks = N_FAMILIES};
    int full = 0, seq_given = 0, dims_given = 0;
    for (int f = 0; f < N_FAMILIES; f++) o.masks[f] = f;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--full")) full = 1;
        else if (!strcmp(a, "--per-mask")) o.per_mask = 1;
        else if (!strcmp(a, "--seq") && has) o.n_seq = parse_list(argv[++i], o.seq), seq_given = 1;
        else if (!strcmp(a, "--dims") && has) o.n_dims = parse_list(argv[++i], o.dims), dims_given = 1;
        else if (!strcmp(a, "--heads") && has) o.heads = atoi(argv[++i]);
        else if (!strcmp(a, "--masks") && has) { if (parse_masks(argv[++i], &o)) return 2; }
        else if (!strcmp(a, "--peer-threads") && has) o.peer_threads = argv[++i];
        else if (!strcmp(a, "--no-peer")) o.peer = 0;
        else if (!strcmp(a, "--no-dense")) o.dense = 0;
        else if (!strcmp(a, "--no-block")) o.block = 0;
        else {
            fprintf(stderr, "usage: bench_flashmask [--full] [--seq 1024,4096] [--dims 64] [--heads 4] [--per-mask] "
                            "[--masks causal,...] [--no-peer] [--no-dense] [--no-block] [--peer-threads 1,2]\n");
            return 2;
        }
    }
    if (full && !seq_given) {
        int64_t all[4] = {1024, 4096, 8192, 16384};
        memcpy(o.seq, all, sizeof all);
        o.n_seq = 4;
    }
    if (full && !dims_given) o.dims[1] = 128, o.n_dims = 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int64_t rows, cols;
    pd_flashmask_tile_size(&rows, &cols);
    double mm = matmul_rate(), peak = bench_fma_peak(pd_get_num_threads(), 20000000, 3) * 1e-9;
    printf("{\"bench\":\"flashmask\",\"impl\":\"machine\",%s,\"matmul_gflops_1024\":%.4g,"
           "\"fma_peak_gflops\":%.4g,\"fma_peak_isa\":\"%s\",\"tile\":[%lld,%lld]}\n", bench_tags("f32").s, mm, peak,
           BENCH_PEAK_ISA, (long long)rows, (long long)cols);

    FILE *manifest = NULL;
    char manifest_path[96];
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bench_flashmask.XXXXXX");
    if (o.peer && mkdtemp(tmpdir)) {
        snprintf(manifest_path, sizeof manifest_path, "%s/manifest.jsonl", tmpdir);
        manifest = fopen(manifest_path, "w");
    }
    int fail = 0;
    for (int si = 0; si < o.n_seq; si++)
        for (int di = 0; di < o.n_dims; di++) {
            struct shared_dense dense = {0};
            for (int mi = 0; mi < o.n_masks && n_results < MAX_RESULTS; mi++)
                fail |= bench_one(&o, o.masks[mi], o.seq[si], o.dims[di], &dense, manifest);
        }
    if (manifest) {
        fclose(manifest);
        peer_run(manifest_path, o.peer_threads);
        remove(manifest_path);
        for (int i = 0; i < n_results; i++) {
            char path[128];
            remove(index_path(path, sizeof path, &results[i]));
        }
        rmdir(tmpdir);
    }
    report(&o);
    return fail;
}
