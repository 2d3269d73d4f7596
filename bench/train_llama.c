/* paddle.c — Llama training throughput against PyTorch (bench/llama_torch.py)
 * in the same run, at the bench config: vocab 256, dim 288, 6 layers,
 * 6 heads (6 kv heads), hidden 768, seq 256, batch 8, AdamW, fp32.
 *
 * One step = pd_llama_loss (forward + cross-entropy) + pd_backward +
 * pd_optimizer_step + zero_grad, inside one scope, on a fixed random batch
 * (the data pipeline is not measured; PyTorch does the same).
 * Before timing, the run is validated: the first loss must be near ln(vocab)
 * (random init, std 0.02) and the loss must fall over the warm-up steps on
 * that batch; otherwise an "error" line and exit status 1.
 *
 * Prints JSON lines: fma_peak (measured here, all threads), train_llama
 * (tokens/s, median step time, GFLOP/s, MFU against that peak, peak
 * allocator memory, median CPU seconds per step), the peer's lines and a
 * ratio line (wall time, and CPU time when both ran on 1 thread). --profile adds a
 * per-op time table (a dispatcher observer; see profile_* below).
 *
 *   bench_train_llama [--steps N] [--warmup W] [--threads T] [--bf16]
 *                     [--no-peer] [--peer-threads 1,2] [--profile] [--peak GFLOPS]
 * --bf16: the forward under pd_autocast_begin(PD_BF16) (matmuls in bf16),
 * the peer under torch.autocast("cpu", bfloat16).
 * Threads: --threads, else OpenMP's default (OMP_NUM_THREADS).
 * The peer script is found beside this source file (PD_LLAMA_PEER overrides).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#include "common.h"
#include "llama_bench.h"
#include "core/internal.h"
#include "pd/pd.h"
#include "pd/nn.h"
#include "pd/optim.h"
#include "pd/amp.h"

#define VOCAB LLAMA_BENCH_VOCAB
#define BATCH 8
#define SEQ LLAMA_BENCH_CTX

struct opts {
    int steps, warmup, threads, bf16, peer, profile;
    const char *peer_threads;
    double peak_gflops;
};

/* ---- per-op profile --------------------------------------------------- */
/* A stage-6 observer sees every dispatched op right after it ran; the time
 * since the previous observation (or since the phase began) is charged to
 * that op: its meta inference, output allocation, kernel and autograd
 * recording, plus whatever host code ran in between. Per phase (forward,
 * backward, optimizer), the time after the last op is the phase's "tail"
 * (engine bookkeeping, the optimizer's fused update, which is no op). */
enum phase { PH_FWD, PH_BWD, PH_OPT, PH_COUNT };
static const char *phase_name[PH_COUNT] = {"forward", "backward", "optimizer"};

struct op_stat {
    double sec, flops;
    long calls;
};
/* Matmuls by shape signature: "[a]x[b]", "^T" where the op transposes an
 * operand (attrs), "T" where an operand is a strided view whose last dim is
 * not contiguous. */
#define MM_SHAPES 48
struct mm_stat {
    char sig[96];
    int phase;
    struct op_stat st;
};
static struct prof {
    int on;
    enum phase ph;
    double last;
    struct op_stat op[PH_COUNT][PD_OP_COUNT + 1]; /* + batched (>= 4-d) matmuls: attention */
    double phase_sec[PH_COUNT], tail_sec[PH_COUNT];
    struct mm_stat mm[MM_SHAPES];
    int n_mm;
} prof;

static int shape_str(const struct pd_tensor *t, char *b, size_t n)
{
    int k = snprintf(b, n, "[");
    for (int i = 0; i < pd_tensor_ndim(t) && k < (int)n; i++)
        k += snprintf(b + k, n - (size_t)k, i ? ",%lld" : "%lld", (long long)pd_tensor_dim(t, i));
    int nd = pd_tensor_ndim(t);
    int tr = nd >= 2 && pd_tensor_strides(t)[nd - 1] != 1;
    if (k < (int)n) k += snprintf(b + k, n - (size_t)k, "]%s", tr ? "T" : "");
    return k;
}

static void mm_record(const struct pdi_call *c, double sec, double flops)
{
    char sig[96];
    int k = shape_str(c->in[0], sig, sizeof sig);
    k += snprintf(sig + k, sizeof sig - (size_t)k, "%sx", c->a.matmul.trans_a ? "^T" : "");
    if (k < (int)sizeof sig) k += shape_str(c->in[1], sig + k, sizeof sig - (size_t)k);
    if (k < (int)sizeof sig) snprintf(sig + k, sizeof sig - (size_t)k, "%s", c->a.matmul.trans_b ? "^T" : "");
    int i = 0;
    while (i < prof.n_mm && (prof.mm[i].phase != (int)prof.ph || strcmp(prof.mm[i].sig, sig))) i++;
    if (i == prof.n_mm) {
        if (i == MM_SHAPES) return;
        prof.n_mm++;
        snprintf(prof.mm[i].sig, sizeof prof.mm[i].sig, "%s", sig);
        prof.mm[i].phase = (int)prof.ph;
    }
    prof.mm[i].st.sec += sec;
    prof.mm[i].st.flops += flops;
    prof.mm[i].st.calls++;
}

static void prof_observer(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    (void)seq;
    (void)ctx;
    double now = bench_now();
    int slot = c->op;
    if (c->op == PD_OP_matmul && c->out[0] && pd_tensor_ndim(c->out[0]) >= 4) slot = PD_OP_COUNT;
    struct op_stat *s = &prof.op[prof.ph][slot];
    s->sec += now - prof.last;
    s->calls++;
    if (c->op == PD_OP_matmul && c->out[0]) {
        /* 2 * numel(out) * K (trans_a: K is a's second-to-last dim) */
        double k = (double)pd_tensor_dim(c->in[0], c->a.matmul.trans_a ? -2 : -1);
        double f = 2.0 * (double)pd_tensor_numel(c->out[0]) * k;
        s->flops += f;
        mm_record(c, now - prof.last, f);
    }
    prof.last = now;
}

static void prof_phase_begin(enum phase ph)
{
    prof.ph = ph;
    prof.last = bench_now();
}

static void prof_phase_end(double t0)
{
    double now = bench_now();
    prof.phase_sec[prof.ph] += now - t0;
    prof.tail_sec[prof.ph] += now - prof.last;
}

/* Op name -> the categories of the report. */
static const char *category(const char *op)
{
    static const struct { const char *prefix, *cat; } map[] = {
        {"matmul_4d", "matmul (attention, batched)"}, {"matmul", "matmul (linear)"}, {"sdpa", "attention (sdpa)"},
        {"flashmask", "attention (flashmask)"}, {"rope", "rope"}, {"swiglu", "swiglu"},
        {"rms_norm", "rmsnorm"}, {"embedding", "embedding"}, {"index_add", "embedding"},
        {"scatter_add", "embedding"}, {"log_softmax", "cross entropy"}, {"nll_loss", "cross entropy"},
        {"copy", "copies (contiguous)"}, {"view", "views"}, {"permute", "views"}, {"slice", "views"},
        {"expand", "views"}, {"sum", "reductions"}, {"mean", "reductions"}, {"cast", "casts"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(op, map[i].prefix) || !strncmp(op, map[i].prefix, strlen(map[i].prefix))) return map[i].cat;
    return "elementwise/other";
}

static void prof_report(int steps, double peak, const char *dt)
{
    double total = 0;
    for (int p = 0; p < PH_COUNT; p++) total += prof.phase_sec[p];
    for (int p = 0; p < PH_COUNT; p++) {
        for (int o = 0; o <= PD_OP_COUNT; o++) {
            struct op_stat *s = &prof.op[p][o];
            if (!s->calls) continue;
            const char *name = o < PD_OP_COUNT ? pdi_ops[o].name : "matmul_4d";
            printf("{\"bench\":\"train_llama_profile\",\"impl\":\"paddle.c\",%s,\"phase\":\"%s\",\"op\":\"%s\","
                   "\"category\":\"%s\",\"calls_per_step\":%.1f,\"ms_per_step\":%.2f,\"share\":%.4f",
                   bench_tags(dt).s, phase_name[p], name, category(name), (double)s->calls / steps,
                   1e3 * s->sec / steps, s->sec / total);
            if (s->flops > 0)
                printf(",\"gflop_per_step\":%.2f,\"gflops\":%.1f,\"frac_of_peak\":%.3f", s->flops / steps / 1e9,
                       s->flops / s->sec / 1e9, s->flops / s->sec / peak);
            printf("}\n");
        }
        printf("{\"bench\":\"train_llama_profile\",\"impl\":\"paddle.c\",%s,\"phase\":\"%s\",\"op\":\"(outside ops)\","
               "\"category\":\"tail\",\"ms_per_step\":%.2f,\"share\":%.4f,\"phase_ms_per_step\":%.2f}\n",
               bench_tags(dt).s, phase_name[p], 1e3 * prof.tail_sec[p] / steps, prof.tail_sec[p] / total,
               1e3 * prof.phase_sec[p] / steps);
    }
    for (int i = 0; i < prof.n_mm; i++) {
        struct mm_stat *m = &prof.mm[i];
        printf("{\"bench\":\"train_llama_matmul\",\"impl\":\"paddle.c\",%s,\"phase\":\"%s\",\"shapes\":\"%s\","
               "\"calls_per_step\":%.1f,\"ms_per_step\":%.2f,\"gflops\":%.1f,\"frac_of_peak\":%.3f}\n",
               bench_tags(dt).s, phase_name[m->phase], m->sig, (double)m->st.calls / steps, 1e3 * m->st.sec / steps,
               m->st.flops / m->st.sec / 1e9, m->st.flops / m->st.sec / peak);
    }
    fflush(stdout);
}

/* ---- the model and one step -------------------------------------------- */
/* Model FLOPs per token, the same formula as llama_torch.py's: 6 x the
 * matmul weights (the embedding is a gather, not counted) + attention's
 * QK^T and PV, 12 x layers x seq x dim (full square, forward + backward). */
static double flops_per_token(const struct pd_llama_config *c)
{
    double hd = (double)c->dim / c->n_heads, kv = c->n_kv_heads * hd;
    double n = c->n_layers * (2.0 * c->dim * c->dim + 2.0 * c->dim * kv + 3.0 * c->dim * c->hidden_dim) +
               (double)c->dim * c->vocab_size;
    return 6.0 * n + 12.0 * c->n_layers * (double)SEQ * c->dim;
}

struct run {
    struct pd_llama *model;
    struct pd_optimizer *opt;
    struct pd_tensor *ids, *targets;
    int bf16;
};

/* One training step; returns the loss, NaN on error (message in pd_last_error). */
static double train_step(struct run *r)
{
    double loss_v = NAN;
    double t0 = bench_now();
    int scope_tok = pd_scope_begin();
    if (prof.on) prof_phase_begin(PH_FWD);
    /* the forward (and loss) under autocast, the backward outside, as torch.autocast */
    int ag = r->bf16 ? pd_autocast_begin(PD_BF16) : -1;
    if (r->bf16 && ag < 0) {
        pd_scope_end(scope_tok);
        return NAN;
    }
    struct pd_tensor *loss = pd_llama_loss(r->model, r->ids, r->targets);
    if (ag >= 0) pd_autocast_end(ag);
    if (prof.on) {
        prof_phase_end(t0);
        t0 = bench_now();
        prof_phase_begin(PH_BWD);
    }
    if (loss && pd_backward(loss, NULL, 0) == PD_OK) {
        if (prof.on) {
            prof_phase_end(t0);
            t0 = bench_now();
            prof_phase_begin(PH_OPT);
        }
        if (pd_optimizer_step(r->opt) == PD_OK) loss_v = pd_item(loss);
        pd_optimizer_zero_grad(r->opt);
        if (prof.on) prof_phase_end(t0);
    }
    pd_scope_end(scope_tok);
    return loss_v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n) /* sorts x */
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Process CPU seconds (all threads): on a shared machine, at 1 thread, a
 * step's CPU time is the figure other guests disturb least (wall time counts
 * the time slices they took). */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.steps = 10, .warmup = 3, .threads = 0, .peer = 1, .peer_threads = "1,2"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--steps") && has_val) o->steps = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && has_val) o->warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--threads") && has_val) o->threads = atoi(argv[++i]);
        else if (!strcmp(a, "--peer-threads") && has_val) o->peer_threads = argv[++i];
        else if (!strcmp(a, "--peak") && has_val) o->peak_gflops = atof(argv[++i]);
        else if (!strcmp(a, "--bf16")) o->bf16 = 1;
        else if (!strcmp(a, "--no-peer")) o->peer = 0;
        else if (!strcmp(a, "--profile")) o->profile = 1;
        else {
            fprintf(stderr, "bench_train_llama: unknown or incomplete option '%s'\n"
                            "usage: bench_train_llama [--steps N] [--warmup W] [--threads T] [--bf16] [--no-peer]"
                            " [--peer-threads 1,2] [--profile] [--peak GFLOPS]\n", a);
            return -1;
        }
    }
    if (o->steps < 1 || o->warmup < 2 || o->threads < 0) {
        fprintf(stderr, "bench_train_llama: need --steps >= 1, --warmup >= 2 (the loss must fall), --threads >= 0\n");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_args(argc, argv, &o)) return 2;
    if (o.threads) pd_set_num_threads(o.threads);
    int nt = pd_get_num_threads();
    const char *dt = o.bf16 ? "bf16-autocast" : "f32";

    double peak = o.peak_gflops > 0 ? o.peak_gflops * 1e9 : bench_fma_peak(nt, 1000000, 40);
    printf("{\"bench\":\"fma_peak\",\"impl\":\"%s\",%s,\"gflops\":%.1f%s}\n", BENCH_PEAK_ISA,
           bench_tags_n(nt, "f32").s, peak / 1e9, o.peak_gflops > 0 ? ",\"given\":true" : "");

    struct pd_llama_config cfg;
    llama_bench_config(&cfg);
    struct run r = {.bf16 = o.bf16};
    r.model = pd_llama_create(&cfg, 1234);
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    oc.lr = 3e-4;
    oc.beta1 = 0.9;
    oc.beta2 = 0.95;
    oc.weight_decay = 0.1;
    struct pd_state_dict *params = r.model ? pd_llama_state_dict(r.model) : NULL;
    r.opt = params ? pd_optimizer_create_for(&oc, params) : NULL;
    if (!r.opt) {
        printf("{\"bench\":\"train_llama\",\"impl\":\"paddle.c\",%s,\"error\":\"setup: %s\"}\n", bench_tags(dt).s,
               pd_last_error());
        pd_llama_destroy(r.model);
        return 1;
    }

    /* a fixed random batch: tokens from a 64-bit LCG; targets = next token */
    int64_t *buf = malloc(sizeof(int64_t) * BATCH * (SEQ + 1));
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < BATCH * (SEQ + 1); i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (int64_t)((s >> 33) % VOCAB);
    }
    int64_t *ib = malloc(sizeof(int64_t) * BATCH * SEQ), *tb = malloc(sizeof(int64_t) * BATCH * SEQ);
    for (int b = 0; b < BATCH; b++)
        for (int t = 0; t < SEQ; t++) {
            ib[b * SEQ + t] = buf[b * (SEQ + 1) + t];
            tb[b * SEQ + t] = buf[b * (SEQ + 1) + t + 1];
        }
    int64_t shape[2] = {BATCH, SEQ};
    r.ids = pd_from_buffer(ib, shape, 2, PD_I64);
    r.targets = pd_from_buffer(tb, shape, 2, PD_I64);
    free(buf);
    free(ib);
    free(tb);

    /* validate: first loss ~ ln(256) = 5.545, then falling on this batch */
    int bad = 0;
    double first = NAN, last = NAN;
    for (int i = 0; i < o.warmup && !bad; i++) {
        last = train_step(&r);
        if (i == 0) first = last;
        if (isnan(last)) {
            printf("{\"bench\":\"train_llama\",\"impl\":\"paddle.c\",%s,\"error\":\"step failed: %s\"}\n",
                   bench_tags(dt).s, pd_last_error());
            bad = 1;
        }
    }
    if (!bad && (fabs(first - log((double)VOCAB)) > 0.3 || !(last < first))) {
        printf("{\"bench\":\"train_llama\",\"impl\":\"paddle.c\",%s,\"error\":\"validation: first loss %.4f (want "
               "ln 256 = 5.545 +- 0.3), loss after %d warm-up steps %.4f (must fall)\"}\n",
               bench_tags(dt).s, first, o.warmup, last);
        bad = 1;
    }

    double med = NAN, tps = NAN, cpu_step = NAN;
    if (!bad) {
        double *ts = malloc(sizeof(double) * 2 * (size_t)o.steps), *cs = ts + o.steps;
        pd_memory_reset_peak();
        for (int i = 0; i < o.steps && !bad; i++) {
            double t0 = bench_now(), c0 = cpu_now();
            last = train_step(&r);
            ts[i] = bench_now() - t0;
            cs[i] = cpu_now() - c0;
            if (isnan(last)) bad = 1;
        }
        if (bad) {
            printf("{\"bench\":\"train_llama\",\"impl\":\"paddle.c\",%s,\"error\":\"step failed: %s\"}\n",
                   bench_tags(dt).s, pd_last_error());
        } else {
            struct pd_memory_stats ms;
            pd_memory_stats(&ms);
            double tmin = ts[0];
            for (int i = 1; i < o.steps; i++) tmin = ts[i] < tmin ? ts[i] : tmin;
            med = median(ts, o.steps);
            double cmed = median(cs, o.steps);
            cpu_step = cmed;
            tps = BATCH * SEQ / med;
            double fl = flops_per_token(&cfg) * BATCH * SEQ / med;
            printf("{\"bench\":\"train_llama\",\"impl\":\"paddle.c\",%s,\"batch\":%d,"
                   "\"seq\":%d,\"params\":%lld,\"steps\":%d,\"warmup\":%d,\"step_s\":%.4f,\"step_s_min\":%.4f,"
                   "\"tokens_per_s\":%.1f,\"cpu_s\":%.4f,\"gflops\":%.1f,\"mfu\":%.3f,\"peak_allocated_mb\":%.1f,"
                   "\"reserved_mb\":%.1f,\"loss\":%.4f,\"pd_flops_per_token\":%.0f,\"flops_per_token\":%.0f}\n",
                   bench_tags(dt).s, BATCH, SEQ, (long long)pd_llama_num_params(r.model),
                   o.steps, o.warmup, med, tmin, tps, cmed, fl / 1e9, fl / peak, ms.peak_allocated_bytes / 1048576.0,
                   ms.reserved_bytes / 1048576.0, last, pd_llama_flops_per_token(&cfg, SEQ), flops_per_token(&cfg));
            fflush(stdout);
        }
        free(ts);
    }

    if (!bad && o.profile) {
        /* separate steps with the observer on, so the timed figures above carry no observer cost */
        int psteps = o.steps < 5 ? o.steps : 5;
        memset(&prof, 0, sizeof prof);
        prof.on = 1;
        if (pdi_observer_add(prof_observer, NULL) == PD_OK) {
            for (int i = 0; i < psteps && !bad; i++) bad = isnan(train_step(&r));
            pdi_observer_remove(prof_observer, NULL);
            if (!bad) prof_report(psteps, peak, dt);
        }
        prof.on = 0;
    }

    if (!bad && o.peer) {
        char args[256];
        snprintf(args, sizeof args, "train --threads %s --steps %d%s", o.peer_threads, o.steps, o.bf16 ? " --bf16" : "");
        double peer_tps = llama_bench_peer("train_llama", args, "tokens_per_s");
        if (!isnan(peer_tps) && nt == 1 && !strcmp(o.peer_threads, "1")) {
            double peer_cpu = llama_bench_peer_last("cpu_s");
            printf("{\"bench\":\"train_llama\",\"impl\":\"paddle.c/pytorch\",%s,\"pd_cpu_s\":%.4f,"
                   "\"pytorch_cpu_s\":%.4f,\"cpu_ratio\":%.3f}\n", bench_tags(dt).s, cpu_step, peer_cpu, peer_cpu / cpu_step);
        }
        if (!isnan(peer_tps))
            printf("{\"bench\":\"train_llama\",\"impl\":\"paddle.c/pytorch\",%s,\"pd_tokens_per_s\":%.1f,"
                   "\"pytorch_tokens_per_s\":%.1f,\"ratio\":%.3f,\"goal\":1.3,\"met\":%s}\n",
                   bench_tags(dt).s, tps, peer_tps, tps / peer_tps, tps / peer_tps >= 1.3 ? "true" : "false");
    }

    pd_tensor_release(r.ids);
    pd_tensor_release(r.targets);
    pd_optimizer_destroy(r.opt);
    pd_llama_destroy(r.model);
    return bad;
}
