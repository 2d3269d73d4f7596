/* paddle.c — helpers shared by the bench programs: a monotonic clock and
 * best-of-N timing. Benches print one JSON line per measurement. */
#ifndef PD_BENCH_COMMON_H
#define PD_BENCH_COMMON_H
#include <stdio.h>
#include <time.h>

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
#endif
