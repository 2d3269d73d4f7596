/* paddle.c — the optimizer, clipping and the loss scaler go through the
 * dispatcher: an observer sees each multi-tensor op (sgd_update,
 * adam_update, grad_sumsq, grad_scale, amp_unscale) with its written set
 * (pdi_call.n_writes), the dispatcher bumps the versions of the written
 * tensors, a replay of each recorded call on copies of its inputs
 * reproduces the same bits, and the reference kernels agree with the CPU
 * kernels on the recorded calls.
 */
#include <math.h>
#include <string.h>

#include "core/internal.h"
#include "pd/amp.h"
#include "pd/debug.h"
#include "pd/optim.h"
#include "pd/profiler.h"
#include "pt.h"

/* ---- the recorder ------------------------------------------------------- */
#define MAX_REC 32
struct rec {
    enum pd_op op;
    struct pdi_attrs a;
    int n_in, n_out, n_writes;
    struct pd_tensor *before[64]; /* the inputs before the kernel ran (copies) */
    struct pd_tensor *after[64];  /* and after it */
    struct pd_tensor *out;        /* output 0 (a copy) or NULL */
};
static struct rec recs[MAX_REC];
static int n_rec, n_seen[PD_OP_COUNT], last_writes[PD_OP_COUNT], recording;

static int is_optim_op(enum pd_op op)
{
    return op == PD_OP_sgd_update || op == PD_OP_adam_update || op == PD_OP_grad_sumsq || op == PD_OP_grad_scale ||
           op == PD_OP_amp_unscale;
}

/* A copy of contiguous t made without dispatching (we run inside one). */
static struct pd_tensor *snap(const struct pd_tensor *t)
{
    struct pd_tensor *s = pdi_tensor_new(t->shape, t->ndim, t->dtype);
    memcpy(pd_tensor_data(s), pd_tensor_data(t), (size_t)pd_tensor_numel(t) * pd_dtype_size(t->dtype));
    return s;
}

static void on_before(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    (void)seq;
    (void)ctx;
    if (!recording || !is_optim_op(c->op) || n_rec == MAX_REC || c->n_in > 64) return;
    struct rec *r = &recs[n_rec];
    memset(r, 0, sizeof *r);
    r->op = c->op;
    r->a = c->a;
    r->n_in = c->n_in;
    r->n_out = c->n_out;
    r->n_writes = c->n_writes;
    for (int i = 0; i < c->n_in; i++) r->before[i] = snap(c->in[i]);
}

static void on_after(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    (void)seq;
    (void)ctx;
    n_seen[c->op]++;
    last_writes[c->op] = c->n_writes;
    if (!recording || !is_optim_op(c->op) || n_rec == MAX_REC || c->n_in > 64) return;
    struct rec *r = &recs[n_rec++];
    PT_CHECK(r->op == c->op && r->n_writes == c->n_writes);
    for (int i = 0; i < c->n_in; i++) r->after[i] = snap(c->in[i]);
    if (c->n_out) r->out = snap(c->out[0]);
}

static void recs_clear(void)
{
    for (int k = 0; k < n_rec; k++) {
        for (int i = 0; i < recs[k].n_in; i++) {
            pd_tensor_release(recs[k].before[i]);
            pd_tensor_release(recs[k].after[i]);
        }
        pd_tensor_release(recs[k].out);
    }
    n_rec = 0;
    memset(n_seen, 0, sizeof n_seen);
}

static double max_rel(struct pd_tensor *a, struct pd_tensor *b)
{
    int64_t n = pd_tensor_numel(a);
    double *x = malloc(sizeof *x * (size_t)(n + 1)), *y = malloc(sizeof *y * (size_t)(n + 1)), m = 0;
    pd_to_buffer(a, x, PD_F64);
    pd_to_buffer(b, y, PD_F64);
    for (int64_t i = 0; i < n; i++) {
        double d = x[i] == y[i] ? 0 : fabs(x[i] - y[i]) / (1e-3 + fabs(y[i]));
        if (!(d <= m)) m = d; /* NaN wins */
    }
    free(x);
    free(y);
    return m;
}

/* Replays record r on copies of its inputs with the default (CPU) kernels
 * and checks the same bits; then with the reference kernels, checks that
 * they agree (tolerance of the tensor's dtype). */
static void replay(const struct rec *r)
{
    for (int be = 0; be < 2; be++) {
        int scope_tok = pd_scope_begin();
        struct pd_tensor *x[64], *out[1] = {NULL};
        for (int i = 0; i < r->n_in; i++) x[i] = pd_clone(r->before[i]);
        struct pdi_call c = {.op = r->op, .n_in = r->n_in, .n_out = r->n_out, .in = x, .out = out, .a = r->a};
        pdi_force_backend(be == 0 ? -1 : PDI_BACKEND_REF);
        int rc = pdi_dispatch(&c);
        pdi_force_backend(-1);
        PT_CHECK(rc == PD_OK);
        PT_CHECK(c.n_writes == r->n_writes);
        for (int i = 0; i < r->n_in && !rc; i++) {
            if (be == 0) {
                PT_CHECK(pt_same_bits(x[i], r->after[i]));
            } else {
                double tol = x[i]->dtype == PD_BF16 ? 1e-2 : x[i]->dtype == PD_F16 ? 2e-3 : 1e-5;
                double d = max_rel(x[i], r->after[i]);
                if (!(d <= tol)) printf("%s input %d: reference differs by %g\n", pdi_ops[r->op].name, i, d);
                PT_CHECK(d <= tol);
            }
        }
        if (r->n_out && !rc) {
            if (be == 0) PT_CHECK(pt_same_bits(out[0], r->out));
            else PT_NEAR(pd_item(out[0]), pd_item(r->out), 1e-12);
        }
        pd_scope_end(scope_tok);
    }
}

static void replay_all(void)
{
    for (int k = 0; k < n_rec; k++) replay(&recs[k]);
}

/* ---- updates ------------------------------------------------------------ */
static struct pd_tensor *param(const int64_t *shape, int nd, uint64_t seed, enum pd_dtype dt)
{
    struct pd_generator *g = pd_generator_create(seed);
    struct pd_tensor *t = pd_normal(shape, nd, 0.0, 0.5, dt, g);
    pd_generator_destroy(g);
    return pd_requires_grad_(t, 1);
}

/* sum over params of sum(cast(p, f32)^3 * (k + 1)): every gradient is in
 * its param's dtype; skip leaves one param out (no gradient). */
static struct pd_tensor *loss_of(struct pd_tensor **p, int n, int skip)
{
    struct pd_tensor *l = NULL;
    for (int k = 0; k < n; k++) {
        if (k == skip) continue;
        struct pd_tensor *x = pd_cast(p[k], PD_F32);
        struct pd_tensor *t = pd_scale(pd_sum(pd_mul(pd_square(x), x), NULL, 0, 0), k + 1.0);
        l = l ? pd_add(l, t) : t;
    }
    return l;
}

/* Five params in the decay / no-decay groups: f32 and bf16 matrices, two
 * f32 vectors and an f16 vector. One update call per (group, master-ness,
 * step count): four per step, five on the step after an f32 vector was left
 * out (its step count lags the other's). */
static void test_updates(const struct pd_optim_config *cfg, enum pd_op op, int state_planes)
{
    int scope_tok = pd_scope_begin();
    enum { NP = 5 };
    struct pd_tensor *p[NP] = {param((int64_t[]){16, 8}, 2, 1, PD_F32), param((int64_t[]){4, 300}, 2, 2, PD_BF16),
                               param((int64_t[]){16}, 1, 3, PD_F32), param((int64_t[]){40}, 1, 4, PD_F16),
                               param((int64_t[]){9}, 1, 5, PD_F32)};
    struct pd_state_dict *sd = pd_state_dict_create();
    const char *names[NP] = {"w1", "w2", "b1", "b2", "b3"};
    for (int k = 0; k < NP; k++) pd_state_dict_add(sd, names[k], p[k]);
    struct pd_optimizer *o = pd_optimizer_create_for(cfg, sd);
    PT_CHECK(o != NULL);
    int expected_calls[3] = {4, 4, 5};
    for (int step = 0; step < 3; step++) {
        int scope_tok2 = pd_scope_begin();
        PT_CHECK(pd_backward(loss_of(p, NP, step == 1 ? 2 : -1), NULL, 0) == PD_OK);
        uint64_t ver[NP];
        for (int k = 0; k < NP; k++) ver[k] = p[k]->st->version;
        recording = 1;
        PT_CHECK(pd_optimizer_step(o) == PD_OK);
        recording = 0;
        PT_CHECK(n_seen[op] == expected_calls[step]);
        PT_CHECK(n_rec == expected_calls[step]);
        for (int k = 0; k < NP; k++) PT_CHECK(p[k]->st->version > ver[k] || (step == 1 && k == 2));
        PT_CHECK(step != 1 || p[2]->st->version == ver[2]);
        int n_params = 0;
        for (int r = 0; r < n_rec; r++) {
            const struct rec *rc = &recs[r];
            int hm = op == PD_OP_sgd_update ? (int)rc->a.sgd_update.has_master : (int)rc->a.adam_update.has_master;
            int planes = 2 + hm + state_planes;
            PT_CHECK(rc->op == op && rc->n_in % planes == 0);
            PT_CHECK(rc->n_writes == rc->n_in / planes * (planes - 1)); /* all but the grads */
            PT_CHECK(hm == (rc->before[0]->dtype != PD_F32));
            n_params += rc->n_in / planes;
        }
        PT_CHECK(n_params == (step == 1 ? NP - 1 : NP));
        replay_all();
        recs_clear();
        pd_optimizer_zero_grad(o);
        pd_scope_end(scope_tok2);
    }
    pd_optimizer_destroy(o);
    pd_state_dict_destroy(sd);
    pd_scope_end(scope_tok);
}

/* ---- clipping and the scaler --------------------------------------------- */
static void test_clip(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *a = param((int64_t[]){3000}, 1, 7, PD_F32), *b = param((int64_t[]){5}, 1, 8, PD_F32);
    struct pd_tensor *c = param((int64_t[]){6}, 1, 9, PD_BF16);
    struct pd_state_dict *sd = pd_state_dict_create();
    pd_state_dict_add(sd, "a", a);
    pd_state_dict_add(sd, "b", b);
    pd_state_dict_add(sd, "c", c);
    /* b's gradient is a broadcast (scaled by a copy), c's is bf16 (a copy too) */
    struct pd_tensor *l = pd_add(pd_add(pd_sum(pd_square(a), NULL, 0, 0), pd_scale(pd_sum(b, NULL, 0, 0), 3.0)),
                                 pd_sum(pd_square(pd_cast(c, PD_F32)), NULL, 0, 0));
    PT_CHECK(pd_backward(l, NULL, 0) == PD_OK);
    struct pd_tensor *ga = pd_tensor_grad(a);
    uint64_t va = ga->st->version;
    recording = 1;
    double n = pd_clip_grad_norm(sd, 0.1);
    recording = 0;
    PT_CHECK(n > 0.1);
    PT_CHECK(n_seen[PD_OP_grad_sumsq] == 1 && n_seen[PD_OP_grad_scale] == 1);
    PT_CHECK(last_writes[PD_OP_grad_scale] == 1); /* a's gradient only: the others are copies */
    PT_CHECK(pd_tensor_grad(a) == ga && ga->st->version > va);
    PT_CHECK(n_rec == 2 && recs[0].op == PD_OP_grad_sumsq && recs[0].n_writes == 0);
    PT_NEAR(sqrt(pd_item(recs[0].out)), n, 0);
    replay_all();
    recs_clear();
    PT_NEAR(pd_clip_grad_norm(sd, 100.0), 0.1, 1e-5); /* below max: no grad_scale */
    pd_state_dict_destroy(sd);
    pd_scope_end(scope_tok);
}

static void test_scaler(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *a = param((int64_t[]){50, 40}, 2, 11, PD_F32), *b = param((int64_t[]){7}, 1, 12, PD_F32);
    struct pd_state_dict *sd = pd_state_dict_create();
    pd_state_dict_add(sd, "a", a);
    pd_state_dict_add(sd, "b", b);
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, PD_OPTIM_SGD);
    struct pd_optimizer *o = pd_optimizer_create_for(&cfg, sd);
    struct pd_grad_scaler *s = pd_grad_scaler_create(NULL);
    for (int inf = 0; inf < 2; inf++) {
        int scope_tok2 = pd_scope_begin();
        struct pd_tensor *l = pd_add(pd_sum(pd_square(a), NULL, 0, 0), pd_scale(pd_sum(b, NULL, 0, 0), 2.0));
        PT_CHECK(pd_backward(pd_grad_scaler_scale(s, l), NULL, 0) == PD_OK);
        if (inf) ((float *)pd_tensor_data(pd_tensor_grad(a)))[17] = NAN;
        recording = 1;
        PT_CHECK(pd_grad_scaler_unscale(s, o) == PD_OK);
        recording = 0;
        PT_CHECK(pd_grad_scaler_found_inf(s) == inf);
        PT_CHECK(n_rec == 1 && recs[0].op == PD_OP_amp_unscale);
        PT_CHECK(recs[0].n_writes == 1); /* a's gradient; b's is a broadcast, checked only */
        PT_CHECK(pd_item(recs[0].out) == inf);
        /* the written gradient: unscaled, or untouched with found_inf */
        PT_CHECK(pt_same_bits(recs[0].after[0], inf ? recs[0].before[0] : pd_scale(recs[0].before[0], 1.0 / 65536)));
        replay_all();
        recs_clear();
        PT_CHECK(pd_grad_scaler_update(s) == PD_OK);
        pd_optimizer_zero_grad(o);
        pd_scope_end(scope_tok2);
    }
    pd_grad_scaler_destroy(s);
    pd_optimizer_destroy(o);
    pd_state_dict_destroy(sd);
    pd_scope_end(scope_tok);
}

/* ---- the written set of other in-place calls, and errors ------------------- */
static void test_written_set(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = pd_zeros((int64_t[]){3}, 1, PD_F32), *y = pd_ones((int64_t[]){3}, 1, PD_F32);
    uint64_t v = x->st->version;
    PT_CHECK(pd_add_(x, y) == x);
    PT_CHECK(last_writes[PD_OP_add] == 1 && x->st->version == v + 1);
    PT_CHECK(pd_add(x, y) != NULL && last_writes[PD_OP_add] == 0);

    /* sgd_update's layout: N params, N grads (no momentum) */
    struct pd_tensor *in3[3] = {x, y, y};
    struct pdi_call c = {.op = PD_OP_sgd_update, .n_in = 3, .in = in3, .a = {.sgd_update = {.lr = 0.1}}};
    PT_CHECK(pdi_dispatch(&c) == PD_ERR_INVALID && strstr(pd_last_error(), "multiple of 2"));
    struct pd_tensor *in2[2] = {x, x};
    c.in = in2;
    c.n_in = 2;
    PT_CHECK(pdi_dispatch(&c) == PD_ERR_INVALID && strstr(pd_last_error(), "share storage"));
    struct pd_tensor *z = pd_zeros((int64_t[]){4}, 1, PD_F32);
    struct pd_tensor *in2b[2] = {x, z};
    c.in = in2b;
    PT_CHECK(pdi_dispatch(&c) == PD_ERR_INVALID && strstr(pd_last_error(), "shape"));
    struct pd_tensor *in1[1] = {pd_zeros((int64_t[]){3}, 1, PD_I32)};
    struct pd_tensor *out[1];
    struct pdi_call s = {.op = PD_OP_grad_sumsq, .n_in = 1, .n_out = 1, .in = in1, .out = out};
    PT_CHECK(pdi_dispatch(&s) == PD_ERR_INVALID && strstr(pd_last_error(), "float"));
    struct pdi_call u = {.op = PD_OP_amp_unscale, .n_in = 1, .n_out = 1, .in = in2, .out = out,
                         .a = {.amp_unscale = {.inv_scale = 0.5, .n_inplace = 2}}};
    PT_CHECK(pdi_dispatch(&u) == PD_ERR_INVALID && strstr(pd_last_error(), "n_inplace"));
    char buf[256];
    pdi_attrs_format(PD_OP_adam_update, &(struct pdi_attrs){.adam_update = {.lr = 0.5, .amsgrad = 1}}, buf, sizeof buf);
    PT_CHECK(strstr(buf, "adam_update(lr=0.5") && strstr(buf, "amsgrad=1"));
    pd_scope_end(scope_tok);
}

/* ---- the debug tools on ops without outputs -------------------------------- */
static int log_saw_update;
static void log_sink(const char *module, int level, const char *line, void *ctx)
{
    (void)module;
    (void)level;
    (void)ctx;
    if (strstr(line, "adam_update")) log_saw_update = 1;
}

/* Profiler, anomaly mode, dispatch logs, graph capture, checksums and call
 * sites all on around a scaled, clipped AdamW step. */
static void test_debug_tools(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *a = param((int64_t[]){6, 5}, 2, 21, PD_F32), *b = param((int64_t[]){5}, 1, 22, PD_BF16);
    struct pd_state_dict *sd = pd_state_dict_create();
    pd_state_dict_add(sd, "a", a);
    pd_state_dict_add(sd, "b", b);
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, PD_OPTIM_ADAMW);
    struct pd_optimizer *o = pd_optimizer_create_for(&cfg, sd);
    struct pd_grad_scaler *s = pd_grad_scaler_create(NULL);
    PT_CHECK(pd_backward(pd_grad_scaler_scale(s, loss_of((struct pd_tensor *[]){a, b}, 2, -1)), NULL, 0) == PD_OK);
    pd_log_set_sink(log_sink, NULL);
    PT_CHECK(pd_set_log_level("dispatch", 4) == PD_OK);
    PT_CHECK(pd_profiler_begin() == PD_OK);
    PT_CHECK(pd_anomaly_mode(1) == PD_OK);
    PT_CHECK(pd_debug_set_callsites(1) == PD_OK);
    PT_CHECK(pd_graph_capture_begin() == PD_OK);
    PT_CHECK(pd_md5_begin("/dev/null", PD_MD5_BITWISE, 0) == PD_OK);
    PT_CHECK(pd_grad_scaler_unscale(s, o) == PD_OK);
    PT_CHECK(pd_optimizer_clip_grad_norm(o, 1e-3) > 0);
    PT_CHECK(pd_grad_scaler_step(s, o) == 1);
    PT_CHECK(pd_md5_end() == PD_OK);
    struct pd_graph *g = pd_graph_capture_end();
    PT_CHECK(g && pd_graph_num_nodes(g) > 0);
    pd_graph_destroy(g);
    pd_debug_set_callsites(0);
    pd_anomaly_mode(0);
    PT_CHECK(pd_profiler_end() == PD_OK);
    pd_set_log_level("dispatch", 0);
    pd_log_set_sink(NULL, NULL);
    PT_CHECK(log_saw_update);
    char *sum = pd_profiler_summary(0);
    PT_CHECK(sum && strstr(sum, "adam_update") && strstr(sum, "amp_unscale") && strstr(sum, "grad_sumsq") &&
             strstr(sum, "grad_scale"));
    free(sum);
    pd_grad_scaler_destroy(s);
    pd_optimizer_destroy(o);
    pd_state_dict_destroy(sd);
    pd_scope_end(scope_tok);
    recs_clear();
}

int main(void)
{
    PT_CHECK(pdi_observer_add_ex(on_before, on_after, NULL) == PD_OK);
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, PD_OPTIM_ADAMW);
    cfg.amsgrad = 1;
    test_updates(&cfg, PD_OP_adam_update, 3);
    pd_optim_config_default(&cfg, PD_OPTIM_ADAM);
    cfg.weight_decay = 0.01;
    test_updates(&cfg, PD_OP_adam_update, 2);
    pd_optim_config_default(&cfg, PD_OPTIM_SGD);
    cfg.lr = 0.05;
    cfg.momentum = 0.9;
    cfg.nesterov = 1;
    test_updates(&cfg, PD_OP_sgd_update, 1);
    cfg.momentum = 0;
    cfg.nesterov = 0;
    cfg.weight_decay = 0.1;
    test_updates(&cfg, PD_OP_sgd_update, 0);
    test_clip();
    test_scaler();
    test_written_set();
    test_debug_tools();
    pdi_observer_remove_ex(on_before, on_after, NULL);
    PT_CHECK(pd_live_tensors() == 0);
    PT_DONE();
}
