/* paddle.c — the profiler on a small MLP training step: top-level op time
 * accounts for the step's measured wall time within 10% (the model is sized
 * so that ops dominate), the FLOPs of a matmul are exact, forward and
 * backward are attributed, user ranges nest, the Chrome trace is valid JSON
 * (checked with python3's json module) and misuse gives clear errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pt.h"
#include "pd/debug.h"
#include "pd/profiler.h"

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static const struct pd_profiler_row *find(const struct pd_profiler_row *r, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(r[i].name, name)) return &r[i];
    return NULL;
}

int main(void)
{
    /* Errors before anything was profiled. */
    struct pd_profiler_totals tot;
    PT_CHECK(pd_profiler_end() == PD_ERR_STATE);
    PT_CHECK(pd_profiler_totals(&tot) == PD_ERR_STATE);
    PT_CHECK(pd_profiler_range_push("ignored") == PD_OK); /* off: a no-op */

    /* 1. FLOPs of one matmul: 2 * M * N * K, also transposed. */
    struct pd_generator *g = pd_generator_create(1);
    int64_t sa[2] = {64, 128}, sb[2] = {128, 32}, sbt[2] = {32, 128};
    struct pd_tensor *a = pd_randn(sa, 2, PD_F32, g), *b = pd_randn(sb, 2, PD_F32, g), *bt = pd_randn(sbt, 2, PD_F32, g);
    PT_CHECK(pd_profiler_begin() == PD_OK);
    PT_CHECK(pd_profiler_begin() == PD_ERR_STATE);
    int scope_tok = pd_scope_begin();
    pd_matmul(a, b, 0, 0);
    pd_matmul(a, bt, 0, 1);
    pd_scope_end(scope_tok);
    PT_CHECK(pd_profiler_end() == PD_OK);
    struct pd_profiler_row *rows;
    int n;
    PT_CHECK(pd_profiler_rows(&rows, &n) == PD_OK);
    const struct pd_profiler_row *mm = find(rows, n, "matmul");
    PT_CHECK(mm && mm->calls == 2);
    if (mm) {
        PT_NEAR(mm->flops, 2 * 2.0 * 64 * 32 * 128, 0);
        PT_NEAR(mm->bytes, 2 * 4.0 * (64 * 128 + 128 * 32 + 64 * 32), 0);
    }
    free(rows);

    /* 2. A training step: x[256,512] -> 3 x (linear 512 + relu) -> mean. */
    int64_t sx[2] = {256, 512}, sw[2] = {512, 512};
    struct pd_tensor *x = pd_randn(sx, 2, PD_F32, g), *w[3];
    for (int i = 0; i < 3; i++) w[i] = pd_requires_grad_(pd_randn(sw, 2, PD_F32, g), 1);
    for (int warm = 0; warm < 2; warm++) { /* warm the allocator cache and oneDNN */
        scope_tok = pd_scope_begin();
        struct pd_tensor *h = x;
        for (int i = 0; i < 3; i++) h = pd_relu(pd_matmul(h, w[i], 0, 0));
        pd_backward(pd_mean(h, NULL, 0, 0), NULL, 0);
        pd_scope_end(scope_tok);
    }
    /* The step is timed until ops cover 90% of it, at most five times: when
     * other processes share the two cores (ctest -j2 in CI), a time slice
     * lost between two ops lands in a gap and once gave 88%. Preemption only
     * lowers the fraction, so one clean attempt in five measures the profiler. */
    double wall = 0, outer = 0;
    for (int attempt = 0; attempt < 5; attempt++) {
        pd_debug_reset_names();
        double outer0 = now_us();
        PT_CHECK(pd_profiler_begin() == PD_OK);
        double t0 = now_us();
        PT_CHECK(pd_profiler_range_push("step") == PD_OK);
        PT_CHECK(pd_profiler_range_push("forward") == PD_OK);
        scope_tok = pd_scope_begin();
        struct pd_tensor *h = x;
        for (int i = 0; i < 3; i++) h = pd_relu(pd_matmul(h, w[i], 0, 0));
        struct pd_tensor *loss = pd_mean(h, NULL, 0, 0);
        PT_CHECK(pd_profiler_range_pop() == PD_OK);
        PT_CHECK(pd_backward(loss, NULL, 0) == PD_OK);
        pd_scope_end(scope_tok);
        PT_CHECK(pd_profiler_range_pop() == PD_OK);
        wall = now_us() - t0;
        PT_CHECK(pd_profiler_end() == PD_OK);
        outer = now_us() - outer0;
        PT_CHECK(pd_profiler_range_pop() == PD_OK); /* off again: a no-op */

        PT_CHECK(pd_profiler_totals(&tot) == PD_OK);
        if (tot.op_us >= 0.9 * wall) break;
    }
    printf("measured %.1f us; profiler wall %.1f us, ops %.1f us, gaps %.1f us\n", wall, tot.wall_us, tot.op_us,
           tot.gap_us);
    PT_CHECK(tot.op_us <= tot.wall_us && tot.op_us <= wall);
    /* ops account for the step. Under sanitizers the allocator caches
     * nothing and every free of a 1 MB block is AddressSanitizer's work
     * between ops (uninstrumented oneDNN makes the ops themselves fast):
     * measured 76% there, so the bound is looser. */
#ifdef PD_SANITIZE
    PT_CHECK(tot.op_us >= 0.5 * wall);
#else
    PT_CHECK(tot.op_us >= 0.9 * wall);
#endif
    PT_CHECK(tot.wall_us >= wall && tot.wall_us <= outer); /* begin/end bracket the step */
    PT_CHECK(tot.n_dropped == 0);
    /* forward 3 matmuls, backward 2 per layer except dx of the first (x needs no grad) */
    PT_CHECK(pd_profiler_rows(&rows, &n) == PD_OK);
    const struct pd_profiler_row *fw = find(rows, n, "matmul"), *bw = find(rows, n, "matmul.grad:matmul");
    const struct pd_profiler_row *rs = find(rows, n, "[range] step"), *rf = find(rows, n, "[range] forward");
    PT_CHECK(fw && fw->calls == 3 && bw && bw->calls == 5);
    if (fw) PT_NEAR(fw->flops, 3 * 2.0 * 256 * 512 * 512, 0);
    PT_CHECK(rs && rs->calls == 1 && rf && rf->calls == 1);
    if (rs && rf) PT_CHECK(rf->total_us < rs->total_us && rs->total_us <= wall);
    for (int i = 1; i < n; i++) PT_CHECK(rows[i - 1].total_us >= rows[i].total_us);
    free(rows);
    char *sum = pd_profiler_summary(12);
    PT_CHECK(sum && strstr(sum, "matmul.grad:matmul") && strstr(sum, "GFLOP/s"));
    if (sum) printf("%s", sum);
    free(sum);

    /* Chrome trace: valid JSON, X events with the fields Perfetto needs. */
    PT_CHECK(pd_profiler_write_chrome_trace("prof_trace.json") == PD_OK);
    int rc = system("python3 -c \"import json,sys; d=json.load(open('prof_trace.json')); "
                    "ev=[e for e in d['traceEvents'] if e['ph']=='X']; "
                    "assert all(k in e for e in ev for k in ('ts','dur','pid','tid','name','args')); "
                    "names=[e['args']['name'] for e in ev]; "
                    "assert 'matmul_1' in names and 'matmul_3.grad/matmul_4' in names, names; "
                    "assert any(e['cat']=='range' and e['name']=='step' for e in ev); "
                    "assert any(e['args'].get('flops')==2*256*512*512 for e in ev); "
                    "sys.exit(0)\"");
    PT_CHECK(rc == 0);
    PT_CHECK(pd_profiler_write_chrome_trace("/nonexistent-dir/t.json") == PD_ERR_IO);

    /* Misuse while on. */
    PT_CHECK(pd_profiler_begin() == PD_OK);
    PT_CHECK(pd_profiler_range_pop() == PD_ERR_STATE);
    PT_CHECK(strstr(pd_last_error(), "no range open") != NULL);
    PT_CHECK(pd_profiler_range_push(NULL) == PD_ERR_INVALID);
    PT_CHECK(pd_profiler_end() == PD_OK);

    pd_tensor_release(a);
    pd_tensor_release(b);
    pd_tensor_release(bt);
    pd_tensor_release(x);
    for (int i = 0; i < 3; i++) pd_tensor_release(w[i]);
    pd_generator_destroy(g);
    PT_DONE();
}
