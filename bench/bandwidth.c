/* paddle.c — memory bandwidth of large elementwise and reduction kernels:
 * GB/s on 16M-element f32 tensors (64 MB each), against a memcpy of the
 * same bytes measured in the same run, on 1 thread and on every core (2 on
 * the reference machine; PD_BENCH_THREADS="1 2 ..." overrides; the thread
 * count is set with omp_set_num_threads, whatever OMP_NUM_THREADS says).
 * One JSON line per (op, thread count).
 *
 * Bytes are counted as bytes read + bytes written by an ideal kernel (each
 * input read once, each output written once): add = 2 reads + 1 write =
 * 12 B/element, exp = 8 B/element, cast f32->bf16 = 6 B/element, sum = 4.
 * memcpy is counted the same way (read + write = 2 x 64 MB), so
 * ratio_to_memcpy is the fraction of the copy bandwidth the op reaches.
 * (Hardware also reads each written line first unless stores bypass the
 * cache; that is the same for both sides of the ratio only approximately.)
 *
 * Each call runs inside pd_scope_begin/end, so its output goes back to the
 * caching allocator and the next call reuses the same pages: after warm-up
 * the time is the kernel's, not page faults'. Best of N single calls
 * (N = 20, 50 with PD_BENCH_FULL=1). A memcpy call follows every op call
 * and the memcpy figure is the best of all of them, so the reference and
 * the ops are measured over the same stretch of time.
 * Every op's output is spot-checked against a double computation before it
 * is timed; an op that fails prints an "error" line and the rest go on.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#include "common.h"
#include "pd/pd.h"

#define N_EL (16LL << 20) /* 16M elements, [4096, 4096] for the axis ops */
#define SIDE 4096LL

struct ctx {
    struct pd_tensor *a, *b; /* [16M] f32 randn */
    struct pd_tensor *a2;    /* a viewed as [4096, 4096] */
    struct pd_tensor *c;     /* [16M] f32, target of add_ */
    const float *pa, *pb;
};

enum op { ADD, MUL, SCALE, RELU, EXP, SIGMOID, CAST, SUM, SUM_LAST, SUM_FIRST, SOFTMAX, ADD_, OP_COUNT };

static const char *const op_name[OP_COUNT] = {"add", "mul", "scale", "relu", "exp", "sigmoid", "cast_bf16",
                                              "sum", "sum_last", "sum_first", "softmax_last", "add_"};
/* bytes read + written per call */
static const double op_bytes[OP_COUNT] = {12.0 * N_EL, 12.0 * N_EL, 8.0 * N_EL, 8.0 * N_EL, 8.0 * N_EL,
                                          8.0 * N_EL,  6.0 * N_EL,  4.0 * N_EL + 4, 4.0 * N_EL + 4 * SIDE,
                                          4.0 * N_EL + 4 * SIDE, 8.0 * N_EL, 12.0 * N_EL};

static struct pd_tensor *run_op(struct ctx *c, enum op op)
{
    static const int last = 1, first = 0;
    switch (op) {
    case ADD: return pd_add(c->a, c->b);
    case MUL: return pd_mul(c->a, c->b);
    case SCALE: return pd_scale(c->a, 1.5);
    case RELU: return pd_relu(c->a);
    case EXP: return pd_exp(c->a);
    case SIGMOID: return pd_sigmoid(c->a);
    case CAST: return pd_cast(c->a, PD_BF16);
    case SUM: return pd_sum(c->a, NULL, 0, 0);
    case SUM_LAST: return pd_sum(c->a2, &last, 1, 0);
    case SUM_FIRST: return pd_sum(c->a2, &first, 1, 0);
    case SOFTMAX: return pd_softmax(c->a2, 1);
    case ADD_: return pd_add_(c->c, c->b);
    default: return NULL;
    }
}

/* Spot checks (sampled elements; whole rows/columns for the axis ops) in
 * double. Returns 1 if y is right. add_ is checked on its first call, which
 * turns c (a copy of a) into a + b. */
static int check(struct ctx *c, enum op op, struct pd_tensor *y)
{
    const float *pa = c->pa, *pb = c->pb;
    int ok = 1;
    if (op == SUM || op == SUM_LAST || op == SUM_FIRST) {
        int64_t idx[2] = {0, 0};
        int64_t outs[2] = {0, op == SUM ? 0 : SIDE - 1};
        for (int s = 0; s < (op == SUM ? 1 : 2); s++) {
            double ref = 0, mag = 0;
            int64_t o = outs[s];
            for (int64_t i = 0; i < (op == SUM ? N_EL : SIDE); i++) {
                double v = op == SUM ? pa[i] : op == SUM_LAST ? pa[o * SIDE + i] : pa[i * SIDE + o];
                ref += v;
                mag += fabs(v);
            }
            idx[0] = o;
            double got = op == SUM ? pd_item(y) : pd_get(y, idx);
            if (fabs(got - ref) > 1e-5 * mag + 1e-6) ok = 0;
        }
        return ok;
    }
    if (op == SOFTMAX) {
        for (int64_t r = 0; r < SIDE; r += SIDE - 1) {
            double mx = -INFINITY, z = 0;
            for (int64_t j = 0; j < SIDE; j++) mx = fmax(mx, pa[r * SIDE + j]);
            for (int64_t j = 0; j < SIDE; j++) z += exp(pa[r * SIDE + j] - mx);
            for (int64_t j = 0; j < SIDE; j += 511) {
                int64_t idx[2] = {r, j};
                double ref = exp(pa[r * SIDE + j] - mx) / z;
                if (fabs(pd_get(y, idx) - ref) > 1e-5 * ref + 1e-9) ok = 0;
            }
        }
        return ok;
    }
    for (int s = 0; s < 64; s++) {
        int64_t i = s == 0 ? 0 : s == 1 ? N_EL - 1 : (s * 2654435761LL) % N_EL;
        double x = pa[i], w = pb[i], ref;
        switch (op) {
        case ADD: case ADD_: ref = x + w; break;
        case MUL: ref = x * w; break;
        case SCALE: ref = 1.5 * x; break;
        case RELU: ref = x > 0 ? x : 0; break;
        case EXP: ref = exp(x); break;
        case SIGMOID: ref = 1 / (1 + exp(-x)); break;
        case CAST: ref = pd_bf16_to_f32(pd_f32_to_bf16((float)x)); break;
        default: return 0;
        }
        /* f32 math: a few ulp (exp 1, sigmoid 2.8 by unary_math.h);
         * the bf16 cast rounds like pd_f32_to_bf16, so it is exact */
        if (fabs(pd_get(y, &i) - ref) > 1e-6 * fabs(ref) + 1e-30) ok = 0;
    }
    return ok;
}

/* memcpy of 64 MB split over the current OpenMP threads (plain memcpy on
 * one thread). */
static double memcpy_once(float *dst, const float *src)
{
    double t0 = bench_now();
#pragma omp parallel
    {
        int id = omp_get_thread_num(), n = omp_get_num_threads();
        int64_t lo = N_EL * id / n, hi = N_EL * (id + 1) / n;
        memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(float));
    }
    return bench_now() - t0;
}

/* Best single call of op over `trials` (after two warm-up calls, which fill
 * the allocator's cache). A memcpy runs after each call and *mc keeps the
 * best memcpy time: the reference is measured in the same time window as
 * the ops, which matters when the machine is shared. */
static double best_seconds(struct ctx *c, enum op op, int trials, int *fail, float *dst, double *mc)
{
    double best = 1e30;
    for (int t = -2; t < trials; t++) {
        int scope_tok = pd_scope_begin();
        double t0 = bench_now();
        struct pd_tensor *y = run_op(c, op);
        double dt = bench_now() - t0;
        pd_scope_end(scope_tok);
        if (!y) *fail = 1;
        if (t >= 0 && dt < best) best = dt;
        double m = memcpy_once(dst, c->pa);
        if (t >= 0 && m < *mc) *mc = m;
    }
    return best;
}

int main(void)
{
    (void)bench_best; /* common.h's helper; this bench times single calls */
    int trials = 20;
    const char *full = getenv("PD_BENCH_FULL");
    if (full && full[0] == '1') trials = 50;
    int threads[8], n_th = 0;
    const char *ts = getenv("PD_BENCH_THREADS");
    if (ts) {
        char *end;
        for (long v = strtol(ts, &end, 10); end != ts && n_th < 8; v = strtol(ts, &end, 10)) {
            if (v > 0) threads[n_th++] = (int)v;
            ts = end;
        }
    }
    if (n_th == 0) {
        threads[n_th++] = 1;
        if (omp_get_num_procs() > 1) threads[n_th++] = omp_get_num_procs();
    }

    struct ctx c;
    int64_t n = N_EL, sh2[2] = {SIDE, SIDE};
    c.a = pd_randn(&n, 1, PD_F32, NULL);
    c.b = pd_randn(&n, 1, PD_F32, NULL);
    c.a2 = c.a ? pd_view(c.a, sh2, 2) : NULL;
    c.c = c.a ? pd_from_buffer(pd_tensor_data(c.a), &n, 1, PD_F32) : NULL; /* a copy of a */
    float *dst = aligned_alloc(64, N_EL * sizeof(float));
    if (!c.a || !c.b || !c.a2 || !c.c || !dst) {
        fprintf(stderr, "bandwidth: setup failed: %s\n", pd_last_error());
        return 1;
    }
    c.pa = pd_tensor_data(c.a);
    c.pb = pd_tensor_data(c.b);
    memset(dst, 0, N_EL * sizeof(float)); /* fault the pages in once */

    /* Validate every op once before any timing. */
    int valid[OP_COUNT];
    for (int op = 0; op < OP_COUNT; op++) {
        int scope_tok = pd_scope_begin();
        struct pd_tensor *y = run_op(&c, (enum op)op); /* add_: c = a + b from c = a */
        valid[op] = y && check(&c, (enum op)op, y);
        if (!valid[op])
            printf("{\"bench\":\"bandwidth\",\"impl\":\"paddle.c\",%s,\"op\":\"%s\",\"numel\":%lld,\"error\":\"%s\"}\n",
                   bench_tags("f32").s, op_name[op], N_EL, y ? "validation failed" : "op failed");
        pd_scope_end(scope_tok);
    }

    for (int ti = 0; ti < n_th; ti++) {
        int nt = threads[ti];
        omp_set_num_threads(nt);
        double mc = 1e30, sec[OP_COUNT];
        int fail[OP_COUNT] = {0};
        for (int i = 0; i < 2; i++) memcpy_once(dst, c.pa); /* warm up the threads */
        for (int op = 0; op < OP_COUNT; op++)
            if (valid[op]) sec[op] = best_seconds(&c, (enum op)op, trials, &fail[op], dst, &mc);
        double mgb = 2.0 * N_EL * sizeof(float) / mc / 1e9;
        printf("{\"bench\":\"bandwidth\",\"impl\":\"memcpy\",\"op\":\"memcpy\",\"numel\":%lld,%s,"
               "\"bytes\":%.0f,\"gbps\":%.2f}\n",
               N_EL, bench_tags_n(nt, "f32").s, 2.0 * N_EL * sizeof(float), mgb);
        for (int op = 0; op < OP_COUNT; op++) {
            if (!valid[op]) continue;
            if (fail[op]) {
                printf("{\"bench\":\"bandwidth\",\"impl\":\"paddle.c\",\"op\":\"%s\",%s,"
                       "\"error\":\"op failed while timing\"}\n",
                       op_name[op], bench_tags("f32").s);
                continue;
            }
            double g = op_bytes[op] / sec[op] / 1e9;
            printf("{\"bench\":\"bandwidth\",\"impl\":\"paddle.c\",\"op\":\"%s\",\"numel\":%lld,%s,"
                   "\"bytes\":%.0f,\"gbps\":%.2f,\"ratio_to_memcpy\":%.3f}\n",
                   op_name[op], N_EL, bench_tags("f32").s, op_bytes[op], g, g / mgb);
        }
        fflush(stdout);
    }
    free(dst);
    pd_tensor_release(c.c);
    pd_tensor_release(c.a2);
    pd_tensor_release(c.a);
    pd_tensor_release(c.b);
    return 0;
}
