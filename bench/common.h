/* paddle.c — helpers shared by the bench programs: a monotonic clock,
 * best-of-N timing and the fields every line states. Benches print one JSON
 * line per measurement. */
#ifndef PD_BENCH_COMMON_H
#define PD_BENCH_COMMON_H
#include <stdio.h>
#include <time.h>
#include <omp.h>
#include "pd/runtime.h"

/* What every bench line states about how it ran, as the JSON fields
 * `"threads":N,"dtype":"f32","isa":"avx2"` (no comma either side):
 *   printf("{\"bench\":\"x\",%s,...}\n", bench_tags("f32").s);
 * bench_tags takes the threads the library's next kernel uses
 * (pd_get_num_threads); bench_tags_n states another count, for loops that
 * set their own (the FMA peak, a single-threaded encoder). The ISA is the
 * one the kernels were compiled for (pd_kernel_isa). The string lives until
 * the end of the statement that calls it. */
struct bench_tags {
    char s[96];
};

static inline struct bench_tags bench_tags_n(int threads, const char *dtype)
{
    struct bench_tags t;
    snprintf(t.s, sizeof t.s, "\"threads\":%d,\"dtype\":\"%.16s\",\"isa\":\"%.16s\"", threads, dtype,
             pd_kernel_isa());
    return t;
}

static inline struct bench_tags bench_tags(const char *dtype) { return bench_tags_n(pd_get_num_threads(), dtype); }

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs fn(ctx) `iters` times per trial, returns the best seconds per call. */
static inline double bench_best(void (*fn)(void *), void *ctx, int iters, int trials)
{
    double best = 1e30;
    fn(ctx); /* warm up */
    for (int t = 0; t < trials; t++) {
        double t0 = bench_now();
        for (int i = 0; i < iters; i++) fn(ctx);
        double dt = (bench_now() - t0) / iters;
        if (dt < best) best = dt;
    }
    return best;
}

/* ---- FMA peak: the f32 ceiling of the machine ------------------------ */
/* A register-only loop of 12 independent FMA chains (AVX-512 when the
 * compiler targets it, else AVX2; GCC vector extensions, contracted to FMA by
 * -march=native/-mfma). */
#ifdef __AVX512F__
typedef float bench_fvec __attribute__((vector_size(64)));
#define BENCH_PEAK_ISA "avx512-fma"
#else
typedef float bench_fvec __attribute__((vector_size(32)));
#define BENCH_PEAK_ISA "avx2-fma"
#endif
#define BENCH_FLANES ((int)(sizeof(bench_fvec) / sizeof(float)))
static volatile float bench_peak_sink;

static inline float bench_fma_loop(long iters)
{
    bench_fvec acc[12], m, c;
    for (int l = 0; l < BENCH_FLANES; l++) {
        m[l] = 0.999999f;
        c[l] = 1e-7f;
        for (int j = 0; j < 12; j++) acc[j][l] = 1.0f + 0.001f * (float)j;
    }
    for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
        for (int j = 0; j < 12; j++) acc[j] = acc[j] * m + c;
    }
    float s = 0;
    for (int j = 0; j < 12; j++)
        for (int l = 0; l < BENCH_FLANES; l++) s += acc[j][l];
    return s;
}

/* Peak of nt threads (0: OpenMP's default) in flops/s: each thread times
 * its own short runs of `iters` loop trips and keeps its best rate over
 * `trials` (trial 0 warms the clocks up); the peak is the sum of the
 * threads' best rates. Short per-thread trials let each best fall inside an
 * uninterrupted time slice when the machine is shared. */
static inline double bench_fma_peak(int nt, long iters, int trials)
{
    double sum = 0;
#pragma omp parallel num_threads(nt > 0 ? nt : omp_get_max_threads()) reduction(+ : sum)
    {
        double best = 0;
        for (int t = 0; t <= trials; t++) {
            double t0 = bench_now();
            float r = bench_fma_loop(iters);
            double f = (double)iters * 12 * BENCH_FLANES * 2 / (bench_now() - t0);
            if (t > 0 && f > best) best = f;
#pragma omp atomic
            bench_peak_sink += r;
        }
        sum += best;
    }
    return sum;
}

#endif
