/* paddle.c — the fused transformer ops against their compositions of
 * public ops, on the shapes of bench/train_llama and bench/decode_llama
 * (one JSON line per measurement; the PyTorch peer is
 * bench/llm_ops_torch.py, same shapes).
 *
 *   sdpa     q, k, v [B, H, T, D] = [8, 6, 256, 48], causal, f32 and bf16:
 *            forward, and forward + backward (d q, k, v of sum(out * w));
 *            impl "fused" (pd_sdpa) and "composed" (matmul, causal where,
 *            softmax, matmul: what a framework without the op runs);
 *            for T = S also "flashmask" (pd_flashmask_attention, causal,
 *            on the same data laid out [B, T, H, D] as the Llama passes it).
 *   decode   q [1, 6, 1, 48] against k, v [1, 6, S, 48], S = 128 and 512, and
 *            (op sdpa_decode_cacheview, forward only) S = 16, 64, 256 as
 *            slices of a [1, 6, 1024, 48] cache, the views a KV cache passes.
 *   rope     x [8, 256, 6, 48], positions [256]: GB/s (read x, write y).
 *   swiglu   gate, up [8, 256, 768]: GB/s (two reads, one write), forward and
 *            forward + backward, fused vs silu then mul.
 * Each fused result is compared with the composition before timing (max
 * |difference| is printed, the run fails above 1e-4 in f32).
 * Threads: OpenMP's default (OMP_NUM_THREADS=2 for the published numbers).
 *
 *   bench_llm_ops [quick] [cputime]
 *     quick: fewer iterations (a smoke run); cputime: time with the process
 *     CPU clock instead of the wall clock (for comparisons on a loaded
 *     machine, with OMP_NUM_THREADS=1)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "common.h"
#include "pd/pd.h"

static int quick;
static clockid_t clock_id = CLOCK_MONOTONIC;

/* bench_best with a selectable clock: "cputime" measures process CPU time
 * (robust on a loaded machine; meaningful with OMP_NUM_THREADS=1). */
static double best_of(void (*fn)(void *), void *ctx, int iters, int trials)
{
    double best = 1e30;
    fn(ctx);
    for (int t = 0; t < trials; t++) {
        struct timespec a, b;
        clock_gettime(clock_id, &a);
        for (int i = 0; i < iters; i++) fn(ctx);
        clock_gettime(clock_id, &b);
        double dt = ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec)) / iters;
        if (dt < best) best = dt;
    }
    return best;
}

static struct pd_tensor *composed_sdpa(struct pd_tensor *q, struct pd_tensor *k, struct pd_tensor *v, int causal)
{
    int64_t T = pd_tensor_dim(q, 2), S = pd_tensor_dim(k, 2), D = pd_tensor_dim(q, 3);
    struct pd_tensor *s = pd_scale(pd_matmul(q, k, 0, 1), 1.0 / sqrt((double)D));
    if (causal) {
        int64_t ts[2] = {T, 1}, ss[2] = {1, S};
        struct pd_tensor *ti = pd_reshape(pd_arange(0, (double)T, 1, PD_I64), ts, 2);
        struct pd_tensor *si = pd_reshape(pd_arange(0, (double)S, 1, PD_I64), ss, 2);
        struct pd_tensor *vis = pd_le(si, pd_add_scalar(ti, (double)(S - T)));
        s = pd_where(vis, s, pd_scalar(-INFINITY, pd_tensor_dtype(s)));
    }
    return pd_matmul(pd_softmax(s, -1), v, 0, 0);
}

/* impl: 0 composed, 1 pd_sdpa on [B, H, T, D], 2 pd_flashmask_attention on
 * the same data laid out [B, T, H, D] (qf..wf: what the Llama passes it) */
enum { COMPOSED, SDPA, FLASHMASK, N_IMPL };
static const char *const impl_name[N_IMPL] = {"composed", "fused", "flashmask"};

struct ctx {
    struct pd_tensor *q, *k, *v, *w, *qf, *kf, *vf, *wf;
    int impl, backward, causal;
};

static struct pd_tensor *attend(struct ctx *c, int impl)
{
    switch (impl) {
    case SDPA: return pd_sdpa(c->q, c->k, c->v, NULL, c->causal, 0);
    case FLASHMASK: return pd_flashmask_attention(c->qf, c->kf, c->vf, NULL, c->causal, NULL, 0, 0, NULL);
    default: return composed_sdpa(c->q, c->k, c->v, c->causal);
    }
}

static void run_sdpa(void *p)
{
    struct ctx *c = p;
    int scope_tok = pd_scope_begin();
    struct pd_tensor *y = attend(c, c->impl);
    if (c->backward) {
        int f = c->impl == FLASHMASK;
        struct pd_tensor *L = pd_sum(pd_mul(y, f ? c->wf : c->w), NULL, 0, 0), *g[3];
        struct pd_tensor *in[3] = {f ? c->qf : c->q, f ? c->kf : c->k, f ? c->vf : c->v};
        if (pd_grad(&L, 1, in, 3, g, NULL)) fprintf(stderr, "grad: %s\n", pd_last_error());
    }
    pd_scope_end(scope_tok);
}

static double max_diff(struct pd_tensor *a, struct pd_tensor *b)
{
    int64_t n = pd_tensor_numel(a);
    float *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    pd_to_buffer(a, x, PD_F32);
    pd_to_buffer(b, y, PD_F32);
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)x[i] - y[i]));
    free(x);
    free(y);
    return m;
}

/* [B, T, H, D] <-> [B, H, T, D] */
static struct pd_tensor *swap12(struct pd_tensor *x)
{
    static const int perm[4] = {0, 2, 1, 3};
    return pd_contiguous(pd_permute(x, perm, 4));
}

/* Forward and gradients of each fused kernel (flashmask only without a
 * cache view) against the composition; returns the largest difference. */
static double validate(struct ctx *c, int n_impl)
{
    double m = 0;
    int scope_tok = pd_scope_begin();
    struct pd_tensor *g[N_IMPL][3], *y[N_IMPL];
    for (int f = 0; f < n_impl; f++) {
        int fm = f == FLASHMASK;
        struct pd_tensor *in[3] = {fm ? c->qf : c->q, fm ? c->kf : c->k, fm ? c->vf : c->v};
        y[f] = attend(c, f);
        struct pd_tensor *L = pd_sum(pd_mul(y[f], fm ? c->wf : c->w), NULL, 0, 0);
        if (pd_grad(&L, 1, in, 3, g[f], NULL)) return INFINITY;
        if (fm) {
            y[f] = swap12(y[f]);
            for (int i = 0; i < 3; i++) g[f][i] = swap12(g[f][i]);
        }
    }
    for (int f = 1; f < n_impl; f++) {
        m = fmax(m, max_diff(y[0], y[f]));
        for (int i = 0; i < 3; i++) m = fmax(m, max_diff(g[0][i], g[f][i]));
    }
    pd_scope_end(scope_tok);
    return m;
}

/* cache > 0: k and v are the first S positions of a [B, H, cache, D] buffer
 * (the strided views a KV cache passes), forward only. */
static int bench_sdpa(const char *name, int64_t B, int64_t H, int64_t T, int64_t S, int64_t D, enum pd_dtype dt,
                      int64_t cache)
{
    struct pd_generator *gen = pd_generator_create(7);
    int64_t qs[4] = {B, H, T, D}, ks[4] = {B, H, cache ? cache : S, D};
    struct ctx c = {.causal = 1};
    c.q = pd_requires_grad_(pd_cast(pd_randn(qs, 4, PD_F32, gen), dt), 1);
    c.k = pd_requires_grad_(pd_cast(pd_randn(ks, 4, PD_F32, gen), dt), 1);
    c.v = pd_requires_grad_(pd_cast(pd_randn(ks, 4, PD_F32, gen), dt), 1);
    if (cache) {
        struct pd_tensor *k = c.k, *v = c.v;
        c.k = pd_slice(k, 2, 0, S, 1);
        c.v = pd_slice(v, 2, 0, S, 1);
        pd_tensor_release(k);
        pd_tensor_release(v);
    }
    c.w = pd_cast(pd_randn(qs, 4, PD_F32, gen), dt);
    pd_generator_destroy(gen);
    int n_impl = cache || T != S ? 2 : N_IMPL;
    if (n_impl == N_IMPL) { /* the [B, T, H, D] copies outlive the scope that made them */
        int scope_tok = pd_scope_begin();
        c.qf = pd_keep(pd_requires_grad_(swap12(c.q), 1));
        c.kf = pd_keep(pd_requires_grad_(swap12(c.k), 1));
        c.vf = pd_keep(pd_requires_grad_(swap12(c.v), 1));
        c.wf = pd_keep(swap12(c.w));
        pd_scope_end(scope_tok);
    }
    double err = validate(&c, n_impl), tol = dt == PD_F32 ? 1e-4 : 0.25;
    /* causal: about half the score matrix is visible */
    double vis = T == S ? (double)T * (T + 1) / 2 : (double)T * S - (double)T * (T - 1) / 2;
    double flops_f = 4.0 * B * H * vis * D;
    int fail = !(err <= tol);
    for (int bwd = 0; bwd < (cache ? 1 : 2); bwd++) {
        double t[N_IMPL];
        for (int f = 0; f < n_impl; f++) {
            c.impl = f;
            c.backward = bwd;
            int iters = quick ? 2 : (T == 1 ? 2000 : 10);
            t[f] = best_of(run_sdpa, &c, iters, quick ? 1 : 5);
        }
        double flops = flops_f * (bwd ? 3.5 : 1.0); /* backward: 5 products + recomputed scores */
        for (int f = 0; f < n_impl; f++)
            printf("{\"bench\":\"llm_ops\",\"op\":\"%s%s\",\"mode\":\"%s\",\"impl\":\"%s\",%s,"
                   "\"shape\":[%lld,%lld,%lld,%lld,%lld],\"ms\":%.4f,\"gflops\":%.2f,\"speedup_vs_composed\":%.2f,"
                   "\"max_abs_diff\":%.3g}\n",
                   name, cache ? "_cacheview" : "", bwd ? "fwd+bwd" : "forward", impl_name[f],
                   bench_tags(pd_dtype_name(dt)).s, (long long)B,
                   (long long)H, (long long)T, (long long)S, (long long)D, t[f] * 1e3, flops / t[f] * 1e-9,
                   t[0] / t[f], err);
    }
    pd_tensor_release(c.q);
    pd_tensor_release(c.k);
    pd_tensor_release(c.v);
    pd_tensor_release(c.w);
    pd_tensor_release(c.qf);
    pd_tensor_release(c.kf);
    pd_tensor_release(c.vf);
    pd_tensor_release(c.wf);
    if (fail) fprintf(stderr, "sdpa %s %s: fused differs from composed by %g\n", name, pd_dtype_name(dt), err);
    return fail;
}

struct ew {
    struct pd_tensor *a, *b;
    int op;
};

static void run_ew(void *p)
{
    struct ew *e = p;
    int scope_tok = pd_scope_begin();
    struct pd_tensor *y;
    if (e->op == 0) y = pd_rope(e->a, e->b, 10000.0);
    else if (e->op % 2) y = pd_swiglu(e->a, e->b);
    else y = pd_mul(pd_silu(e->a), e->b);
    if (e->op >= 3) { /* fwd+bwd: gradients of sum(y) w.r.t. gate and up */
        struct pd_tensor *L = pd_sum(y, NULL, 0, 0), *in[2] = {e->a, e->b}, *g[2];
        if (pd_grad(&L, 1, in, 2, g, NULL)) fprintf(stderr, "grad: %s\n", pd_last_error());
    }
    pd_scope_end(scope_tok);
}

static void bench_elementwise(void)
{
    struct pd_generator *gen = pd_generator_create(3);
    int64_t xs[4] = {8, 256, 6, 48}, hs[3] = {8, 256, 768};
    struct ew e = {pd_randn(xs, 4, PD_F32, gen), pd_arange(0, 256, 1, PD_I64), 0};
    double t = best_of(run_ew, &e, quick ? 2 : 200, quick ? 1 : 5);
    double bytes = 2.0 * 4 * pd_tensor_numel(e.a);
    printf("{\"bench\":\"llm_ops\",\"op\":\"rope\",\"mode\":\"forward\",\"impl\":\"fused\",%s,"
           "\"shape\":[8,256,6,48],\"ms\":%.4f,\"gbps\":%.2f}\n", bench_tags("f32").s, t * 1e3, bytes / t * 1e-9);
    pd_tensor_release(e.a);
    pd_tensor_release(e.b);
    e.a = pd_randn(hs, 3, PD_F32, gen);
    e.b = pd_randn(hs, 3, PD_F32, gen);
    bytes = 3.0 * 4 * pd_tensor_numel(e.a);
    pd_requires_grad_(e.a, 1);
    pd_requires_grad_(e.b, 1);
    /* 1, 2: forward fused / composed; 3, 4: forward + backward (traffic:
     * forward 3 arrays, backward reads gate, up, dout and writes 2) */
    for (int op = 1; op < 5; op++) {
        e.op = op;
        t = best_of(run_ew, &e, quick ? 2 : (op < 3 ? 200 : 50), quick ? 1 : 5);
        double by = op < 3 ? bytes : bytes * 8.0 / 3.0;
        printf("{\"bench\":\"llm_ops\",\"op\":\"swiglu\",\"mode\":\"%s\",\"impl\":\"%s\",%s,"
               "\"shape\":[8,256,768],\"ms\":%.4f,\"gbps\":%.2f}\n", op < 3 ? "forward" : "fwd+bwd",
               op % 2 ? "fused" : "composed", bench_tags("f32").s, t * 1e3, by / t * 1e-9);
    }
    pd_tensor_release(e.a);
    pd_tensor_release(e.b);
    pd_generator_destroy(gen);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "quick")) quick = 1;
        else if (!strcmp(argv[i], "cputime")) clock_id = CLOCK_PROCESS_CPUTIME_ID;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int fail = 0;
    const char *only = getenv("PD_BENCH_ONLY"); /* "train", "decode" or "ew": one group */
    if (!only || !strcmp(only, "train")) {
        fail |= bench_sdpa("sdpa", 8, 6, 256, 256, 48, PD_F32, 0);
        fail |= bench_sdpa("sdpa", 8, 6, 256, 256, 48, PD_BF16, 0);
    }
    if (!only || !strcmp(only, "decode")) {
        fail |= bench_sdpa("sdpa_decode", 1, 6, 1, 128, 48, PD_F32, 0);
        fail |= bench_sdpa("sdpa_decode", 1, 6, 1, 512, 48, PD_F32, 0);
        for (int64_t S = 16; S <= 512; S *= 4)
            fail |= bench_sdpa("sdpa_decode", 1, 6, 1, S, 48, PD_F32, 1024);
    }
    if (!only || !strcmp(only, "ew")) bench_elementwise();
    return fail;
}
