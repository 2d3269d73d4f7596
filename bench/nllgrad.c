/* paddle.c — cross entropy's backward without a one-hot tensor (issue 14:
 * the nll_loss_backward op, docs/nn.md), one process, logits [N, C] f32
 * (default N = 4096 tokens, C = 32000 classes: a Llama vocabulary). One
 * JSON line per measurement; the PyTorch peer is bench/nllgrad_torch.py
 * (F.cross_entropy's backward, same shapes).
 *
 *   part "d_logp"       the gradient of the mean nll_loss w.r.t. logp
 *                       [N, C] alone, from the target [N] and the per-row
 *                       factor w [N] (-1 / count), grad mode off:
 *                       impl "onehot": one_hot(target, C) cast to f32 times
 *                       w, what nll_loss's VJP ran before the op;
 *                       impl "op": nll_loss_backward.
 *   part "ce_backward"  the whole backward of the mean cross entropy to d
 *                       logits: that d logp, then log_softmax's backward
 *                       (pd_backward(logp, d logp)); the forward is not
 *                       timed. impl "onehot" and "op" as above, and impl
 *                       "paddlec": pd_backward of pd_cross_entropy as the
 *                       library runs it (the op).
 * ms: the best of the trials (each trial one call); peak_mb: the
 * allocator's high-water mark during the timed call above what was live
 * before it (pd_memory_record). max_diff: the largest difference from the
 * "op" result (0: the same bits, as the products one_hot * w are exact).
 *
 *   bench_nllgrad [N] [C] [trials] [cputime]
 *     cputime: time with the process CPU clock instead of the wall clock
 *     (for comparisons on a loaded machine, with OMP_NUM_THREADS=1).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "common.h"
#include "core/internal.h"
#include "pd/pd.h"

static clockid_t clock_id = CLOCK_MONOTONIC;
static int64_t N = 4096, C = 32000;
static int trials = 5;

static double now(void)
{
    struct timespec ts;
    clock_gettime(clock_id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum impl { ONEHOT, OP, LIBRARY };
static const char *const impl_name[] = {"onehot", "op", "paddlec"};

/* w = -1 / (the count of kept targets) at kept targets (all here): the
 * factor nll_loss's VJP computes for the mean with g = 1. */
static struct pd_tensor *mean_factor(struct pd_tensor *target)
{
    struct pd_tensor *w = pd_cast(pd_ne(target, pd_scalar(-100, PD_I64)), PD_F32);
    return pd_neg(pd_div(w, pd_clip(pd_sum(w, NULL, 0, 0), 1.0, INFINITY)));
}

static struct pd_tensor *d_logp(enum impl impl, struct pd_tensor *logp, struct pd_tensor *target,
                                struct pd_tensor *w)
{
    if (impl == ONEHOT) {
        struct pd_tensor *valid = pd_ne(target, pd_scalar(-100, PD_I64));
        struct pd_tensor *safe = pd_where(valid, target, pd_scalar(0, PD_I64));
        return pd_mul(pd_cast(pd_one_hot(safe, C), PD_F32), pd_unsqueeze(w, -1));
    }
    struct pd_tensor *in[3] = {logp, target, w};
    struct pdi_attrs a = {.nll_loss_backward = {.ignore_index = -100}};
    return pdi_calln(PD_OP_nll_loss_backward, in, 3, &a);
}

static double max_diff(struct pd_tensor *a, struct pd_tensor *b)
{
    struct pd_tensor *d = pd_amax(pd_abs(pd_sub(a, b)), NULL, 0, 0);
    return d ? pd_item(d) : INFINITY;
}

static void emit(const char *part, enum impl impl, double best, int64_t peak, double diff)
{
    printf("{\"bench\":\"nllgrad\",%s,\"part\":\"%s\",\"impl\":\"%s\",\"shape\":[%lld,%lld],\"ms\":%.3f,"
           "\"peak_mb\":%.1f,\"max_diff\":%g,\"clock\":\"%s\"}\n",
           bench_tags("f32").s, part, impl_name[impl], (long long)N, (long long)C, best * 1e3, (double)peak / 1048576.0,
           diff, clock_id == CLOCK_MONOTONIC ? "wall" : "cpu");
    fflush(stdout);
}

/* d logp alone; ref: the op's result (NULL while computing it). */
static struct pd_tensor *bench_dlogp(enum impl impl, struct pd_tensor *logp, struct pd_tensor *target,
                                     struct pd_tensor *w, struct pd_tensor *ref)
{
    double best = 1e30;
    int64_t peak = 0;
    struct pd_tensor *kept = NULL;
    int ng = pd_no_grad_begin();
    for (int t = 0; t <= trials; t++) { /* trial 0 warms up */
        int tok = pd_scope_begin();
        struct pd_memory_record r;
        pd_memory_record_begin();
        double t0 = now();
        struct pd_tensor *d = d_logp(impl, logp, target, w);
        double dt = now() - t0;
        pd_memory_record_end(&r);
        if (!d) {
            fprintf(stderr, "bench_nllgrad: %s: %s\n", impl_name[impl], pd_last_error());
            exit(1);
        }
        if (t > 0 && dt < best) best = dt;
        if (r.peak_delta_bytes > peak) peak = r.peak_delta_bytes;
        if (t == trials) kept = pd_keep(d);
        pd_scope_end(tok);
    }
    emit("d_logp", impl, best, peak, ref ? max_diff(kept, ref) : 0);
    pd_grad_mode_end(ng);
    return kept;
}

/* The whole cross-entropy backward to d x; returns the last d x. */
static struct pd_tensor *bench_ce(enum impl impl, struct pd_tensor *x, struct pd_tensor *target,
                                  struct pd_tensor *ref)
{
    double best = 1e30;
    int64_t peak = 0;
    struct pd_tensor *kept = NULL;
    for (int t = 0; t <= trials; t++) {
        int tok = pd_scope_begin();
        pd_tensor_zero_grad(x);
        struct pd_tensor *logp = NULL, *loss = NULL, *w = NULL;
        if (impl == LIBRARY) {
            loss = pd_cross_entropy(x, target, -100, 0.0, PD_REDUCTION_MEAN);
        } else {
            logp = pd_log_softmax(x, 1);
            int ng = pd_no_grad_begin();
            w = mean_factor(target);
            pd_grad_mode_end(ng);
        }
        struct pd_memory_record r;
        pd_memory_record_begin();
        double t0 = now();
        int rc;
        if (impl == LIBRARY) {
            rc = pd_backward(loss, NULL, 0);
        } else {
            int ng = pd_no_grad_begin();
            struct pd_tensor *d = d_logp(impl, logp, target, w);
            pd_grad_mode_end(ng);
            rc = d ? pd_backward(logp, d, 0) : -1;
        }
        double dt = now() - t0;
        pd_memory_record_end(&r);
        if (rc) {
            fprintf(stderr, "bench_nllgrad: %s backward: %s\n", impl_name[impl], pd_last_error());
            exit(1);
        }
        if (t > 0 && dt < best) best = dt;
        if (r.peak_delta_bytes > peak) peak = r.peak_delta_bytes;
        if (t == trials) kept = pd_keep(pd_detach(pd_tensor_grad(x)));
        pd_scope_end(tok);
    }
    emit("ce_backward", impl, best, peak, ref ? max_diff(kept, ref) : 0);
    return kept;
}

int main(int argc, char **argv)
{
    int pos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "cputime")) clock_id = CLOCK_PROCESS_CPUTIME_ID;
        else if (pos == 0) N = atoll(argv[i]), pos++;
        else if (pos == 1) C = atoll(argv[i]), pos++;
        else trials = atoi(argv[i]);
    }
    if (N < 1 || C < 1 || trials < 1) {
        fprintf(stderr, "usage: bench_nllgrad [N] [C] [trials] [cputime]\n");
        return 2;
    }
    int tok = pd_scope_begin();
    struct pd_generator *gen = pd_generator_create(7);
    struct pd_tensor *x = pd_randn((int64_t[]){N, C}, 2, PD_F32, gen);
    struct pd_tensor *target = pd_randint((int64_t[]){N}, 1, 0, C, PD_I64, gen);
    pd_requires_grad_(x, 1);
    struct pd_tensor *logp = pd_detach(pd_log_softmax(x, 1));
    int ng = pd_no_grad_begin();
    struct pd_tensor *w = mean_factor(target);
    pd_grad_mode_end(ng);
    struct pd_tensor *ref = bench_dlogp(OP, logp, target, w, NULL);
    bench_dlogp(ONEHOT, logp, target, w, ref);
    ref = bench_ce(OP, x, target, NULL);
    bench_ce(ONEHOT, x, target, ref);
    bench_ce(LIBRARY, x, target, ref);
    pd_generator_destroy(gen);
    pd_scope_end(tok);
    return 0;
}
