/* paddle.c — matmul throughput: GFLOP/s of pd_matmul (f32) against a direct
 * dnnl_sgemm call on the same input buffers in the same run, and against the
 * machine's FMA peak measured here (one JSON line per measurement).
 *
 * What is measured:
 *   fma_peak   a register-only FMA loop (AVX-512 if the compiler targets it,
 *              else AVX2/FMA), on one thread and on every OpenMP thread
 *              (the sum of each thread's best rate): the ceiling any f32
 *              GEMM can reach on this machine.
 *   matmul     square 256..4096 and the three Llama-7B MLP/attention GEMMs at
 *              2048 tokens ([2048x4096]@[4096x4096], [2048x4096]@[4096x11008],
 *              [2048x11008]@[11008x4096]); pd_matmul f32 and dnnl_sgemm
 *              ('N','N', row-major), with the ratio pd/direct and the fraction
 *              of the all-thread peak. bf16 pd_matmul at 1024/2048 is printed
 *              for information (on CPUs without bf16 instructions it is
 *              widened to f32 inside the kernel).
 *   llama      the bench/train_llama linear layers at M = 2048 rows (batch 8 x
 *              seq 256): forward x W^T, dX = dY W and dW = dY^T X for W of
 *              [288,288], [768,288], [288,768]; and decode (M = 1) against
 *              W [288,288], [768,288], [288,768], [256,288] (the LM head).
 *              pd_matmul with the trans flags pd_linear and its VJP use,
 *              against dnnl_sgemm with the same flags on the same buffers;
 *              GFLOP/s by wall time and per CPU second (the machine is
 *              shared: CPU time is the steadier figure). `bench_matmul llama`
 *              runs only this part; PD_BENCH_ROWS=N sets M (1024: one
 *              data-parallel rank's batch of 4 x 256).
 * Every product is validated before it is timed: sampled elements of
 * pd_matmul's output against dnnl's and against a double dot product.
 *
 * Runtime: each measurement runs once to warm up, then enough calls for
 * ~0.3 s per trial, best of 3 trials, pd and dnnl trials alternating; a
 * product that takes over 1 s gets one timed run by default
 * (PD_BENCH_FULL=1: 3 trials for every shape).
 * Threads: OpenMP's default (OMP_NUM_THREADS); bench/run.sh sets it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <immintrin.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "common.h"
#include "pd/pd.h"

static int full_sweep;

/* M of the llama part: PD_BENCH_ROWS, else 2048 */
static int64_t bench_rows(void)
{
    const char *e = getenv("PD_BENCH_ROWS");
    long v = e ? strtol(e, NULL, 10) : 0;
    return v > 0 ? v : 2048;
}

/* ---- FMA peak -------------------------------------------------------- */
/* 12 independent accumulators cover FMA latency x issue width on current
 * cores (4 cycles x 2 pipes = 8 needed); the multiplier is ~1 so values
 * stay finite over any trip count. Returns flops per second. */
/* ---- timing ---------------------------------------------------------- */
/* Times fn[0] and fn[1] (when not NULL) on ctx: one warm-up call each,
 * then trials alternating between them so both see the same machine load,
 * each trial `iters` calls sized to ~0.3 s; best seconds per call in t[]. */
static void time_pair(void (*const fn[2])(void *), void *ctx, double t[2])
{
    int iters[2] = {1, 1}, trials = 3;
    for (int f = 0; f < 2; f++) {
        t[f] = 1e30;
        if (!fn[f]) continue;
        double t0 = bench_now();
        fn[f](ctx);
        double once = bench_now() - t0;
        iters[f] = once > 0.3 ? 1 : (int)(0.3 / (once > 1e-6 ? once : 1e-6)) + 1;
        if (once > 1.0 && !full_sweep) trials = 1;
    }
    for (int r = 0; r < trials; r++)
        for (int f = 0; f < 2; f++) {
            if (!fn[f]) continue;
            double s = bench_now();
            for (int i = 0; i < iters[f]; i++) fn[f](ctx);
            double dt = (bench_now() - s) / iters[f];
            if (dt < t[f]) t[f] = dt;
        }
}

struct mm {
    struct pd_tensor *a, *b; /* [m, k], [k, n] in the dtype being timed */
    const float *fa, *fb;    /* the f32 buffers (a, b itself for f32) */
    float *c;                /* dnnl output [m, n] */
    int64_t m, n, k;
    int fail;
};

static void run_pd(void *p)
{
    struct mm *x = p;
    int scope_tok = pd_scope_begin();
    if (!pd_matmul(x->a, x->b, 0, 0)) x->fail = 1;
    pd_scope_end(scope_tok);
}

static void run_dnnl(void *p)
{
    struct mm *x = p;
    if (dnnl_sgemm('N', 'N', x->m, x->n, x->k, 1.0f, x->fa, x->k, x->fb, x->n, 0.0f, x->c, x->n) != dnnl_success)
        x->fail = 1;
}

/* Compares 32 sampled elements (corners included) of pd_matmul's output
 * with dnnl's and with a double dot product over the f32 inputs (bf16
 * inputs are rounded first, as pd's kernel sees them). The bound scales
 * with sum |a_ik b_kj|: f32 accumulation error grows with it, while a wrong
 * element (bad index, stride or transpose) is off by O(that sum). */
static int validate(struct mm *x, int bf16)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *y = pd_matmul(x->a, x->b, 0, 0);
    int ok = y != NULL;
    if (!ok) fprintf(stderr, "matmul: pd_matmul failed: %s\n", pd_last_error());
    if (ok && !bf16) ok = dnnl_sgemm('N', 'N', x->m, x->n, x->k, 1.0f, x->fa, x->k, x->fb, x->n, 0.0f, x->c, x->n) ==
                          dnnl_success;
    for (int s = 0; ok && s < 32; s++) {
        int64_t i = s == 0 ? 0 : s == 1 ? x->m - 1 : (int64_t)((s * 7919LL) % x->m);
        int64_t j = s == 0 ? 0 : s == 1 ? x->n - 1 : (int64_t)((s * 104729LL) % x->n);
        double ref = 0, mag = 0;
        for (int64_t q = 0; q < x->k; q++) {
            double av = x->fa[i * x->k + q], bv = x->fb[q * x->n + j];
            if (bf16) {
                av = pd_bf16_to_f32(pd_f32_to_bf16((float)av));
                bv = pd_bf16_to_f32(pd_f32_to_bf16((float)bv));
            }
            ref += av * bv;
            mag += fabs(av * bv);
        }
        int64_t idx[2] = {i, j};
        double got = pd_get(y, idx), tol = (bf16 ? 1e-2 : 1e-5) * mag + 1e-6;
        double dn = bf16 ? ref : x->c[i * x->n + j];
        if (fabs(got - ref) > tol || fabs(got - dn) > tol) {
            fprintf(stderr, "matmul: mismatch at [%lld,%lld] (M %lld N %lld K %lld): pd %g dnnl %g ref %g\n",
                    (long long)i, (long long)j, (long long)x->m, (long long)x->n, (long long)x->k, got, dn, ref);
            ok = 0;
        }
    }
    pd_scope_end(scope_tok);
    return ok;
}

static void line(const char *impl, const struct mm *x, const char *dt, int nt, double gflops, const char *extra)
{
    printf("{\"bench\":\"matmul\",\"impl\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,%s,\"gflops\":%.1f%s}\n", impl,
           (long long)x->m, (long long)x->n, (long long)x->k, bench_tags_n(nt, dt).s, gflops, extra);
    fflush(stdout);
}

/* One shape: f32 pd vs dnnl, optionally bf16 pd. Returns 0 on failure. */
static int bench_shape(int64_t m, int64_t n, int64_t k, int with_bf16, double peak_all, int nt)
{
    int64_t sa[2] = {m, k}, sb[2] = {k, n};
    int rc = 1;
    struct mm x = {0};
    x.m = m, x.n = n, x.k = k;
    x.a = pd_randn(sa, 2, PD_F32, NULL);
    x.b = pd_randn(sb, 2, PD_F32, NULL);
    x.c = aligned_alloc(64, (size_t)(m * n * sizeof(float) + 63) / 64 * 64);
    if (!x.a || !x.b || !x.c) {
        fprintf(stderr, "matmul: allocation failed for M %lld N %lld K %lld\n", (long long)m, (long long)n,
                (long long)k);
        rc = 0;
        goto out;
    }
    x.fa = pd_tensor_data(x.a);
    x.fb = pd_tensor_data(x.b);
    if (!validate(&x, 0)) {
        printf("{\"bench\":\"matmul\",\"impl\":\"paddle.c\",\"m\":%lld,\"n\":%lld,\"k\":%lld,%s,"
               "\"error\":\"validation failed\"}\n",
               (long long)m, (long long)n, (long long)k, bench_tags_n(nt, "f32").s);
        rc = 0;
        goto out;
    }
    double flop = 2.0 * m * n * k;
    static void (*const both[2])(void *) = {run_pd, run_dnnl};
    double t[2];
    time_pair(both, &x, t);
    if (x.fail) {
        rc = 0;
        goto out;
    }
    double g_pd = flop / t[0] / 1e9, g_dn = flop / t[1] / 1e9;
    char extra[160];
    snprintf(extra, sizeof extra, ",\"frac_of_peak\":%.3f", g_dn * 1e9 / peak_all);
    line("dnnl_sgemm", &x, "f32", nt, g_dn, extra);
    snprintf(extra, sizeof extra, ",\"ratio_to_direct\":%.3f,\"frac_of_peak\":%.3f", g_pd / g_dn,
             g_pd * 1e9 / peak_all);
    line("paddle.c", &x, "f32", nt, g_pd, extra);
    if (with_bf16) {
        struct mm h = x;
        h.a = pd_cast(x.a, PD_BF16);
        h.b = pd_cast(x.b, PD_BF16);
        if (!h.a || !h.b || !validate(&h, 1)) {
            printf("{\"bench\":\"matmul\",\"impl\":\"paddle.c\",\"m\":%lld,\"n\":%lld,\"k\":%lld,%s,"
                   "\"error\":\"%s\"}\n",
                   (long long)m, (long long)n, (long long)k, bench_tags_n(nt, "bf16").s,
                   h.a && h.b ? "validation failed" : "cast failed");
            rc = 0;
        } else {
            static void (*const one[2])(void *) = {run_pd, NULL};
            double th[2];
            time_pair(one, &h, th);
            double g = flop / th[0] / 1e9;
            snprintf(extra, sizeof extra, ",\"ratio_to_f32\":%.3f", g / g_pd);
            if (!h.fail) line("paddle.c", &h, "bf16", nt, g, extra);
        }
        pd_tensor_release(h.a);
        pd_tensor_release(h.b);
    }
out:
    free(x.c);
    pd_tensor_release(x.a);
    pd_tensor_release(x.b);
    return rc;
}


/* ---- Llama shapes, with transposed operands ---------------------------- */
struct tmm {
    struct pd_tensor *a, *b; /* a [m,k] or [k,m] (ta); b [k,n] or [n,k] (tb) */
    float *c;
    int64_t m, n, k;
    int ta, tb, fail;
};

static void run_pd_t(void *p)
{
    struct tmm *x = p;
    int scope_tok = pd_scope_begin();
    if (!pd_matmul(x->a, x->b, x->ta, x->tb)) x->fail = 1;
    pd_scope_end(scope_tok);
}

static void run_dnnl_t(void *p)
{
    struct tmm *x = p;
    if (dnnl_sgemm(x->ta ? 'T' : 'N', x->tb ? 'T' : 'N', x->m, x->n, x->k, 1.0f, pd_tensor_data(x->a),
                   x->ta ? x->m : x->k, pd_tensor_data(x->b), x->tb ? x->k : x->n, 0.0f, x->c, x->n) != dnnl_success)
        x->fail = 1;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best wall and best CPU seconds per call over 5 trials of ~0.1 s. */
static void time_cpu(void (*fn)(void *), void *ctx, double *wall, double *cpu)
{
    double t0 = bench_now();
    fn(ctx);
    double once = bench_now() - t0;
    int iters = once > 0.1 ? 1 : (int)(0.1 / (once > 1e-7 ? once : 1e-7)) + 1;
    *wall = *cpu = 1e30;
    for (int r = 0; r < 5; r++) {
        double w = bench_now(), c = cpu_now();
        for (int i = 0; i < iters; i++) fn(ctx);
        double dw = (bench_now() - w) / iters, dc = (cpu_now() - c) / iters;
        if (dw < *wall) *wall = dw;
        if (dc < *cpu) *cpu = dc;
    }
}

/* Every element of pd_matmul's result against dnnl's, with a bound that
 * scales with sqrt(K) times the largest |a| |b| product. */
static int validate_t(struct tmm *x)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *y = pd_matmul(x->a, x->b, x->ta, x->tb);
    run_dnnl_t(x);
    int ok = y && !x->fail;
    if (ok) {
        const float *got = pd_tensor_data(y);
        double amax = 0, bmax = 0, worst = 0;
        const float *pa = pd_tensor_data(x->a), *pb = pd_tensor_data(x->b);
        for (int64_t i = 0; i < x->m * x->k; i++) amax = fmax(amax, fabs(pa[i]));
        for (int64_t i = 0; i < x->k * x->n; i++) bmax = fmax(bmax, fabs(pb[i]));
        for (int64_t i = 0; i < x->m * x->n; i++) worst = fmax(worst, fabs((double)got[i] - x->c[i]));
        double tol = 1e-6 * sqrt((double)x->k) * amax * bmax * 4 + 1e-6;
        if (worst > tol) {
            fprintf(stderr, "matmul: M %lld N %lld K %lld ta %d tb %d: max |pd - dnnl| = %g > %g\n", (long long)x->m,
                    (long long)x->n, (long long)x->k, x->ta, x->tb, worst, tol);
            ok = 0;
        }
    }
    pd_scope_end(scope_tok);
    return ok;
}

static int bench_llama_shape(const char *what, int64_t m, int64_t n, int64_t k, int ta, int tb, int nt)
{
    struct tmm x = {0};
    int64_t sa[2] = {ta ? k : m, ta ? m : k}, sb[2] = {tb ? n : k, tb ? k : n};
    x.m = m, x.n = n, x.k = k, x.ta = ta, x.tb = tb;
    x.a = pd_randn(sa, 2, PD_F32, NULL);
    x.b = pd_randn(sb, 2, PD_F32, NULL);
    x.c = malloc((size_t)(m * n) * sizeof(float));
    int ok = x.a && x.b && x.c && validate_t(&x);
    if (ok) {
        double w[2], c[2], flop = 2.0 * m * n * k;
        time_cpu(run_pd_t, &x, &w[0], &c[0]);
        time_cpu(run_dnnl_t, &x, &w[1], &c[1]);
        ok = !x.fail;
        for (int f = 0; ok && f < 2; f++)
            printf("{\"bench\":\"matmul_llama\",\"case\":\"%s\",\"impl\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,"
                   "\"trans_a\":%d,\"trans_b\":%d,%s,\"us\":%.2f,\"gflops\":%.1f,\"gflops_per_cpu_s\":%.1f%s}\n",
                   what, f ? "dnnl_sgemm" : "paddle.c", (long long)m, (long long)n, (long long)k, ta, tb,
                   bench_tags_n(nt, "f32").s, w[f] * 1e6,
                   flop / w[f] / 1e9, flop / c[f] / 1e9, f ? "" : ",\"vs\":\"dnnl_sgemm\"");
        fflush(stdout);
    } else {
        printf("{\"bench\":\"matmul_llama\",\"case\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,%s,\"error\":\"%s\"}\n",
               what, (long long)m, (long long)n, (long long)k, bench_tags_n(nt, "f32").s, x.a && x.b && x.c ? "validation failed" : "allocation failed");
    }
    free(x.c);
    pd_tensor_release(x.a);
    pd_tensor_release(x.b);
    return ok;
}

/* The train_llama linear layers (W [out, in]) and decode. */
static int bench_llama(int nt)
{
    static const int64_t w[3][2] = {{288, 288}, {768, 288}, {288, 768}};
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        int64_t o = w[i][0], in = w[i][1], rows = bench_rows();
        bad |= !bench_llama_shape("fwd", rows, o, in, 0, 1, nt); /* x [M,in] W^T */
        bad |= !bench_llama_shape("dX", rows, in, o, 0, 0, nt);  /* dY [M,out] W */
        bad |= !bench_llama_shape("dW", o, in, rows, 1, 0, nt);  /* dY^T X */
    }
    static const int64_t d[4][2] = {{288, 288}, {768, 288}, {288, 768}, {256, 288}};
    for (int i = 0; i < 4; i++) bad |= !bench_llama_shape("decode", 1, d[i][0], d[i][1], 0, 1, nt);
    return bad;
}

int main(int argc, char **argv)
{
    const char *f = getenv("PD_BENCH_FULL");
    full_sweep = f && f[0] == '1';
    (void)bench_best; /* common.h's helper; this bench sizes its own iterations */
    int nt = pd_get_num_threads(); /* the kernels' threads; the FMA peak runs as many */
    if (argc > 1 && !strcmp(argv[1], "llama")) return bench_llama(nt);
    /* 2M trips x 12 FMAs: ~3 ms at 2 FMA/cycle and 4 GHz; 100 trials. */
    long peak_iters = 2000000;
    double peak1 = bench_fma_peak(1, peak_iters, 100), peak_all = nt > 1 ? bench_fma_peak(nt, peak_iters, 100) : peak1;
    printf("{\"bench\":\"fma_peak\",\"impl\":\"%s\",%s,\"gflops\":%.1f}\n", BENCH_PEAK_ISA, bench_tags_n(1, "f32").s,
           peak1 / 1e9);
    if (nt > 1)
        printf("{\"bench\":\"fma_peak\",\"impl\":\"%s\",%s,\"gflops\":%.1f}\n", BENCH_PEAK_ISA,
               bench_tags_n(nt, "f32").s, peak_all / 1e9);
    fflush(stdout);

    int bad = 0;
    static const int sq[] = {256, 512, 1024, 2048, 4096};
    for (int i = 0; i < 5; i++) bad |= !bench_shape(sq[i], sq[i], sq[i], sq[i] == 1024 || sq[i] == 2048, peak_all, nt);
    /* Llama-7B at 2048 tokens: QKV/O projection, MLP up/gate, MLP down. */
    bad |= !bench_shape(2048, 4096, 4096, 0, peak_all, nt);
    bad |= !bench_shape(2048, 11008, 4096, 0, peak_all, nt);
    bad |= !bench_shape(2048, 4096, 11008, 0, peak_all, nt);
    bad |= bench_llama(nt);
    return bad;
}
