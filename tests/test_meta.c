/* The dispatcher contract: the per-thread mode stack (tokens, strict
 * nesting, per-thread isolation), a plugged executor (autograd and observers
 * still run for the user's call, autocast's rewrite still works), meta
 * tensors (views, host reads and eager kernels fail cleanly, every debug
 * tool copes), the host-read entry point and its observers, and the proof:
 * the tiny Llama and its AdamW optimizer made under the meta executor, whose
 * training step (forward, loss, backward, update) gives the eager run's op
 * sequence and shapes, allocates no tensor data, reads nothing on the host,
 * and reports its peak activation memory. */
#include <pthread.h>
#include <unistd.h>

#include "core/internal.h"
#include "pd/meta.h"
#include "pt.h"
#include "tiny_llama.h"

/* ---- modes ------------------------------------------------------------ */
static void test_mode_stack(void)
{
    int depth = pdi_mode_depth();
    PT_CHECK(pd_is_grad_enabled() && pd_autocast_dtype() == -1);
    int g = pd_no_grad_begin();
    PT_CHECK(g > 0 && !pd_is_grad_enabled());
    int a = pd_autocast_begin(PD_BF16);
    PT_CHECK(a > 0 && a != g && pd_autocast_dtype() == PD_BF16);
    int e = pd_enable_grad_begin();
    PT_CHECK(e > 0 && pd_is_grad_enabled());

    /* ending an outer guard while inner ones are open: an error, nothing popped */
    PT_CHECK(pd_grad_mode_end(g) == PD_ERR_STATE && strstr(pd_last_error(), "not the innermost") &&
             strstr(pd_last_error(), "enable_grad"));
    PT_CHECK(pd_autocast_end(a) == PD_ERR_STATE);
    PT_CHECK(pd_is_grad_enabled() && pd_autocast_dtype() == PD_BF16 && pdi_mode_depth() == depth + 3);
    /* the right token of the wrong kind */
    PT_CHECK(pd_autocast_end(e) == PD_ERR_STATE && strstr(pd_last_error(), "belongs to enable_grad"));
    PT_CHECK(pdi_mode_depth() == depth + 3);

    PT_CHECK(pd_grad_mode_end(e) == PD_OK && !pd_is_grad_enabled());
    /* ended already */
    PT_CHECK(pd_grad_mode_end(e) == PD_ERR_STATE && strstr(pd_last_error(), "not an open mode"));
    PT_CHECK(pd_autocast_end(a) == PD_OK && pd_autocast_dtype() == -1 && !pd_is_grad_enabled());
    /* pd_set_grad_enabled inside a guard: the guard's end restores its own state */
    PT_CHECK(pd_set_grad_enabled(1) == 0 && pd_is_grad_enabled());
    PT_CHECK(pd_grad_mode_end(g) == PD_OK && pd_is_grad_enabled());
    PT_CHECK(pdi_mode_depth() == depth);
    PT_CHECK(pd_grad_mode_end(12345) == PD_ERR_STATE);
    PT_CHECK(pd_autocast_end(-3) == PD_ERR_STATE);

    /* deep nesting grows the stack */
    int toks[100];
    for (int i = 0; i < 100; i++) toks[i] = i % 2 ? pd_no_grad_begin() : pd_enable_grad_begin();
    PT_CHECK(pdi_mode_depth() == depth + 100 && !pd_is_grad_enabled());
    int ok = 1;
    for (int i = 99; i >= 0; i--) ok &= pd_grad_mode_end(toks[i]) == PD_OK;
    PT_CHECK(ok && pd_is_grad_enabled() && pdi_mode_depth() == depth);
}

/* One thread's guards never change another thread's ops. */
struct peer {
    pthread_barrier_t *bar;
    int token;         /* the peer's autocast token */
    int end_from_main; /* pd_autocast_end(peer's token) on the main thread */
    int dtype_seen, grad_seen, y_dtype;
};

static void *peer_main(void *p)
{
    struct peer *pr = p;
    pr->token = pd_autocast_begin(PD_BF16);
    int g = pd_no_grad_begin();
    pthread_barrier_wait(pr->bar); /* 1: the peer holds autocast and no_grad */
    pthread_barrier_wait(pr->bar); /* 2: the main thread checked its own modes */
    pr->dtype_seen = pd_autocast_dtype();
    pr->grad_seen = pd_is_grad_enabled();
    int sc1 = pd_scope_begin();
    int64_t s[2] = {4, 4};
    struct pd_tensor *x = pd_ones(s, 2, PD_F32);
    struct pd_tensor *y = pd_matmul(x, x, 0, 0);
    pr->y_dtype = y ? (int)pd_tensor_dtype(y) : -1;
    pd_scope_end(sc1);
    pd_grad_mode_end(g);
    pd_autocast_end(pr->token);
    return NULL;
}

static void test_modes_per_thread(void)
{
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    struct peer pr = {.bar = &bar};
    pthread_t th;
    pthread_create(&th, NULL, peer_main, &pr);
    pthread_barrier_wait(&bar);
    int sc2 = pd_scope_begin();
    int64_t s[2] = {4, 4};
    struct pd_tensor *x = pd_requires_grad_(pd_ones(s, 2, PD_F32), 1);
    struct pd_tensor *y = pd_matmul(x, x, 0, 0);
    PT_CHECK(pd_autocast_dtype() == -1 && pd_is_grad_enabled());
    PT_CHECK(y && pd_tensor_dtype(y) == PD_F32 && pd_tensor_grad_fn_name(y)); /* f32, recorded */
    /* the peer's token is not an open mode of this thread */
    PT_CHECK(pd_autocast_end(pr.token) == PD_ERR_STATE && pd_autocast_dtype() == -1);
    pd_scope_end(sc2);
    int ac = pd_autocast_begin(PD_F16); /* ours: the peer must still see its bf16 */
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    PT_CHECK(pd_autocast_end(ac) == PD_OK);
    PT_CHECK(pr.dtype_seen == PD_BF16 && pr.grad_seen == 0 && pr.y_dtype == PD_BF16);
    pthread_barrier_destroy(&bar);
}

/* ---- a plugged executor -------------------------------------------------- */
struct counting {
    int runs, on_begin, on_end;
};

static int counting_run(struct pdi_call *c, void *ctx)
{
    struct counting *k = ctx;
    k->runs++;
    return pdi_exec_eager.run(c, NULL);
}
static int counting_begin(void *ctx)
{
    ((struct counting *)ctx)->on_begin++;
    return PD_OK;
}
static void counting_end(void *ctx) { ((struct counting *)ctx)->on_end++; }

static const struct pdi_executor counting_exec = {PDI_EXECUTOR_ABI, "counting", counting_run, counting_begin,
                                                  counting_end};

struct seen {
    int before, after;
};
static void seen_before(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    PDI_UNUSED(c);
    PDI_UNUSED(seq);
    ((struct seen *)ctx)->before++;
}
static void seen_after(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    PDI_UNUSED(c);
    PDI_UNUSED(seq);
    ((struct seen *)ctx)->after++;
}

static void test_plugged_executor(void)
{
    int sc3 = pd_scope_begin();
    double v[6] = {0.5, -1, 2, 3, -0.25, 1.5};
    struct pd_tensor *x = pd_requires_grad_(pt_vec(PD_F32, 6, v), 1);
    struct counting k = {0};
    struct seen s = {0};
    PT_CHECK(pdi_observer_add_ex(seen_before, seen_after, &s) == PD_OK);
    int tok = pdi_executor_begin(&counting_exec, &k);
    PT_CHECK(tok > 0 && k.on_begin == 1 && pdi_executor_current(NULL) == &counting_exec);
    struct pd_tensor *y = pd_sum(pd_mul(x, x), NULL, 0, 0);
    PT_CHECK(k.runs == 2 && s.before == 2 && s.after == 2); /* observers saw the user's calls */
    PT_CHECK(y && pd_tensor_grad_fn_name(y));               /* autograd recorded them */
    PT_CHECK(pd_backward(y, NULL, 0) == PD_OK);
    PT_CHECK(k.runs > 2); /* the backward's ops ran through it too */
    /* autocast rewrites the call and dispatches it again: both the casts and
     * the nested matmul run through the executor */
    int runs = k.runs, ac = pd_autocast_begin(PD_BF16);
    struct pd_tensor *m = pd_reshape(x, (int64_t[]){2, 3}, 2);
    struct pd_tensor *mm = pd_matmul(m, m, 0, 1);
    PT_CHECK(mm && pd_tensor_dtype(mm) == PD_BF16);
    PT_CHECK(k.runs - runs == 4); /* reshape, two casts, matmul */
    PT_CHECK(pd_autocast_end(ac) == PD_OK);
    /* ending the executor out of order fails and keeps it */
    int g = pd_no_grad_begin();
    PT_CHECK(pdi_executor_end(tok) == PD_ERR_STATE && pdi_executor_current(NULL) == &counting_exec);
    PT_CHECK(pd_grad_mode_end(g) == PD_OK);
    PT_CHECK(pdi_executor_end(tok) == PD_OK && k.on_end == 1 && pdi_executor_current(NULL) == &pdi_exec_eager);
    pdi_observer_remove_ex(seen_before, seen_after, &s);
    struct pd_tensor *gx = pd_tensor_grad(x);
    for (int i = 0; i < 6; i++) PT_NEAR(pt_at(gx, i), 2 * v[i], 0); /* d/dx sum(x*x) */
    /* a struct of a later ABI, or without run, is refused */
    struct pdi_executor later = counting_exec;
    later.abi_version = PDI_EXECUTOR_ABI + 1;
    PT_CHECK(pdi_executor_begin(&later, &k) == PD_ERR_INVALID && strstr(pd_last_error(), "ABI"));
    later.abi_version = PDI_EXECUTOR_ABI;
    later.run = NULL;
    PT_CHECK(pdi_executor_begin(&later, &k) == PD_ERR_INVALID);
    pd_scope_end(sc3);
}

/* ---- meta tensors and host reads ----------------------------------------- */
struct host_log {
    int n;
    unsigned access;
    const char *what;
    const struct pd_tensor *t;
    void *site;
};

static void host_seen(const struct pd_tensor *t, unsigned access, const char *what, void *site, void *ctx)
{
    struct host_log *l = ctx;
    l->n++;
    l->access = access;
    l->what = what;
    l->t = t;
    l->site = site;
}

static void test_meta_tensors(void)
{
    int sc4 = pd_scope_begin();
    int64_t s[2] = {3, 4};
    struct pd_tensor *m = pd_meta_empty(s, 2, PD_F32);
    PT_CHECK(m && pd_tensor_is_meta(m) && pd_tensor_numel(m) == 12 && pd_tensor_dtype(m) == PD_F32);
    struct pd_tensor *tr = pd_transpose(m, 0, 1); /* a view under the eager executor */
    PT_CHECK(tr && pd_tensor_is_meta(tr) && pd_tensor_dim(tr, 0) == 4 && pd_tensor_strides(tr)[0] == 1);
    struct pd_tensor *r = pd_ones(s, 2, PD_F32);
    PT_CHECK(!pd_tensor_is_meta(r) && !pd_tensor_is_meta(NULL));

    /* host reads fail cleanly */
    PT_CHECK(pd_tensor_data(m) == NULL && strstr(pd_last_error(), "meta") && strstr(pd_last_error(), "[3, 4]"));
    PT_CHECK(isnan(pd_item(pd_meta_empty(NULL, 0, PD_F32))) && strstr(pd_last_error(), "item"));
    float buf[12];
    PT_CHECK(pd_to_buffer(tr, buf, PD_F32) == PD_ERR_INVALID && strstr(pd_last_error(), "to_buffer"));
    PT_CHECK(isnan(pd_get(m, (int64_t[]){0, 0})));
    char hex[33];
    PT_CHECK(pd_md5_tensor(m, PD_MD5_BITWISE, 0, hex) == PD_ERR_INVALID);
    char *str = pd_tensor_to_string(m);
    PT_CHECK(str && strstr(str, "<meta>") && strstr(str, "[3, 4]"));
    free(str);
    /* an eager kernel on a meta input: an error naming the op, not a crash */
    PT_CHECK(pd_add(m, r) == NULL && strstr(pd_last_error(), "add") && strstr(pd_last_error(), "meta tensor"));
    PT_CHECK(pd_add_(r, m) == NULL && strstr(pd_last_error(), "meta"));
    /* wrappers and infers that read values */
    struct pd_tensor *mi = pd_meta_empty((int64_t[]){5}, 1, PD_I64);
    PT_CHECK(pd_one_hot(mi, -1) == NULL && strstr(pd_last_error(), "one_hot"));
    PT_CHECK(pd_nonzero(pd_meta_empty(s, 2, PD_BOOL)) == NULL && strstr(pd_last_error(), "nonzero"));
    PT_CHECK(pd_masked_select(r, pd_meta_empty(s, 2, PD_BOOL)) == NULL && strstr(pd_last_error(), "masked_select"));

    /* the host-read event: tensor, access, what and the caller's site */
    struct host_log l = {0};
    PT_CHECK(pdi_host_observer_add(host_seen, &l) == PD_OK);
    PT_NEAR(pd_item(pd_sum(r, NULL, 0, 0)), 12, 0);
    PT_CHECK(l.n == 1 && l.access == PDI_HOST_READ && !strcmp(l.what, "item"));
    const char *site = l.site ? pdi_site_str(l.site) : NULL;
    PT_CHECK(site && strstr(site, "test_meta"));
    if (site) printf("host read event: %s at %s\n", l.what, site);
    PT_CHECK(pd_tensor_data(r) && l.n == 2 && l.t == r && l.access == (PDI_HOST_READ | PDI_HOST_WRITE));
    int64_t ids_v[3] = {0, 2, 1};
    struct pd_tensor *ids = pd_from_buffer(ids_v, (int64_t[]){3}, 1, PD_I64);
    struct pd_tensor *oh = pd_one_hot(ids, -1);
    PT_CHECK(oh && pd_tensor_dim(oh, 1) == 3 && l.t == ids && !strcmp(l.what, "to_buffer"));
    int n = l.n;
    PT_CHECK(pd_to_buffer(m, buf, PD_F32) == PD_ERR_INVALID && l.n == n + 1 && l.t == m); /* refused, still seen */
    n = l.n;
    pd_add(r, r); /* kernels read through the dispatcher, not the host */
    PT_CHECK(l.n == n);
    pdi_host_observer_remove(host_seen, &l);
    pd_item(r);
    PT_CHECK(l.n == n);
    pd_scope_end(sc4);
}

/* Sessions: meta outputs from real inputs, nesting, strict ends, writes. */
static void test_meta_sessions(void)
{
    int sc5 = pd_scope_begin();
    int64_t s[2] = {8, 16};
    struct pd_tensor *r = pd_ones(s, 2, PD_F32);
    int64_t live0;
    pdi_meta_bytes(&live0, NULL);
    int t1 = pd_meta_begin();
    PT_CHECK(t1 > 0);
    struct pd_tensor *x = pd_add(r, r); /* real inputs, meta output */
    PT_CHECK(x && pd_tensor_is_meta(x) && pd_tensor_dim(x, 1) == 16);
    struct pd_tensor *v = pd_reshape(r, (int64_t[]){128}, 1); /* a view of real data stays a view of it */
    PT_CHECK(v && !pd_tensor_is_meta(v) && pd_tensor_shares_storage(v, r));
    PT_CHECK(pd_add_(r, x) == NULL && strstr(pd_last_error(), "only into meta"));
    PT_CHECK(pd_add_(x, r) == x); /* into a meta tensor: fine */
    int t2 = pd_meta_begin();
    struct pd_tensor *y = pd_matmul(x, x, 0, 1); /* [8, 8] */
    PT_CHECK(y && pd_tensor_is_meta(y) && pd_tensor_dim(y, 0) == 8);
    struct pd_meta_report *rep = NULL;
    PT_CHECK(pd_meta_end(t1, &rep) == PD_ERR_STATE && !rep && strstr(pd_last_error(), "innermost"));
    PT_CHECK(pd_meta_end(t2, &rep) == PD_OK && rep && rep->n_ops == 1 && !strcmp(rep->ops[0].op, "matmul"));
    PT_CHECK(rep && rep->made_bytes == 8 * 8 * 4 && rep->peak_delta_bytes == 8 * 8 * 4);
    pd_meta_report_destroy(rep);
    struct pd_tensor *z = pd_exp(x);
    PT_CHECK(z && pd_tensor_is_meta(z)); /* back in the outer session */
    PT_CHECK(pd_meta_end(t1, &rep) == PD_OK && rep && rep->n_ops == 4 && rep->start_bytes == live0);
    PT_CHECK(rep && rep->made_bytes == 2 * 8 * 16 * 4 && rep->peak_bytes >= live0 + 8 * 16 * 4 * 2 + 8 * 8 * 4);
    pd_meta_report_destroy(rep);
    PT_CHECK(pd_meta_end(t1, NULL) == PD_ERR_STATE); /* no meta session open */
    PT_CHECK(pd_copy_(x, r) == NULL && strstr(pd_last_error(), "meta"));
    PT_CHECK(pd_copy_(r, x) == NULL && strstr(pd_last_error(), "meta"));
    pd_scope_end(sc5);
}

/* Every debug tool on while meta ops run: shapes are logged, graphed,
 * profiled and checksummed as "meta"; nothing reads data. */
static void sink(const char *module, int level, const char *line, void *ctx)
{
    PDI_UNUSED(module);
    PDI_UNUSED(level);
    PDI_UNUSED(line);
    ++*(int *)ctx;
}

static void test_meta_debug_tools(void)
{
    int lines = 0;
    char md5_path[] = "/tmp/test_meta_md5_XXXXXX";
    int fd = mkstemp(md5_path);
    PT_CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    pd_log_set_sink(sink, &lines);
    pd_set_log_level("dispatch", 4);
    int cs = pd_debug_set_callsites(1), an = pd_anomaly_mode(1);
    PT_CHECK(pd_profiler_begin() == PD_OK && pd_md5_begin(md5_path, PD_MD5_BITWISE, 0) == PD_OK);
    PT_CHECK(pd_graph_capture_begin() == PD_OK);
    int sc6 = pd_scope_begin();
    int tok = pd_meta_begin();
    struct pd_tensor *w = pd_requires_grad_(pd_meta_empty((int64_t[]){6, 5}, 2, PD_F32), 1);
    struct pd_tensor *y = pd_softmax(pd_matmul(pd_meta_empty((int64_t[]){4, 6}, 2, PD_F32), w, 0, 0), -1);
    struct pd_tensor *loss = pd_sum(pd_square(y), NULL, 0, 0);
    PT_CHECK(loss && pd_backward(loss, NULL, 0) == PD_OK);
    PT_CHECK(pd_tensor_grad(w) && pd_tensor_is_meta(pd_tensor_grad(w)) && pd_tensor_dim(pd_tensor_grad(w), 1) == 5);
    PT_CHECK(pd_meta_end(tok, NULL) == PD_OK);
    pd_scope_end(sc6);
    struct pd_graph *g = pd_graph_capture_end();
    PT_CHECK(g && pd_graph_num_nodes(g) >= 4);
    pd_graph_destroy(g);
    PT_CHECK(pd_md5_end() == PD_OK);
    struct pd_profiler_totals tot;
    PT_CHECK(pd_profiler_end() == PD_OK && pd_profiler_totals(&tot) == PD_OK);
    pd_anomaly_mode(an);
    pd_debug_set_callsites(cs);
    pd_set_log_level("dispatch", 0);
    pd_log_set_sink(NULL, NULL);
    PT_CHECK(lines > 8);
    FILE *f = fopen(md5_path, "r");
    char line[512];
    int n = 0, meta = 0;
    while (f && fgets(line, sizeof line, f)) {
        n++;
        meta += strstr(line, " meta\n") != NULL;
    }
    if (f) fclose(f);
    remove(md5_path);
    PT_CHECK(n >= 4 && meta == n);
}

/* ---- the meta executor on the tiny Llama --------------------------------- */
struct oprec {
    int op, n_out;
    struct pd_meta_out out[PD_META_MAX_OUT];
};
struct oplog {
    struct oprec *r;
    int n, cap;
};

static void log_op(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    PDI_UNUSED(seq);
    struct oplog *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->r = realloc(l->r, sizeof *l->r * (size_t)l->cap);
    }
    struct oprec *o = &l->r[l->n++];
    memset(o, 0, sizeof *o);
    o->op = c->op;
    o->n_out = c->n_out;
    for (int j = 0; j < c->n_out && j < PD_META_MAX_OUT; j++) {
        o->out[j].dtype = c->out[j]->dtype;
        o->out[j].ndim = c->out[j]->ndim;
        memcpy(o->out[j].shape, c->out[j]->shape, sizeof(int64_t) * (size_t)c->out[j]->ndim);
    }
}

/* One training step: loss, backward, the optimizer's update (when opt);
 * returns the loss (in the current scope). */
static struct pd_tensor *step(struct pd_llama *m, struct pd_optimizer *opt, struct pd_tensor *ids,
                              struct pd_tensor *tgt)
{
    struct pd_tensor *loss = pd_llama_loss(m, ids, tgt);
    if (!loss || pd_backward(loss, NULL, 0)) return NULL;
    if (opt && pd_optimizer_step(opt)) return NULL;
    return loss;
}

static struct pd_optimizer *adamw(struct pd_llama *m)
{
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    return pd_optimizer_create_for(&oc, pd_llama_state_dict(m));
}

/* dropout > 0: the training step draws masks (random ops, meta too). */
static void test_llama_meta(double dropout)
{
    struct pd_llama_config cfg = pt_tiny_llama_config();
    cfg.dropout = dropout;
    printf("-- tiny Llama, dropout %g\n", dropout);
    enum { B = 2, T = 16 };
    int64_t idv[B * T], tgv[B * T];
    for (int i = 0; i < B * T; i++) {
        idv[i] = (i * 7 + 3) % cfg.vocab_size;
        tgv[i] = (i * 5 + 1) % cfg.vocab_size;
    }
    int sc7 = pd_scope_begin();
    struct pd_tensor *ids = pd_from_buffer(idv, (int64_t[]){B, T}, 2, PD_I64);
    struct pd_tensor *tgt = pd_from_buffer(tgv, (int64_t[]){B, T}, 2, PD_I64);

    /* eager: every op's outputs */
    struct pd_llama *em = pd_llama_create(&cfg, 5);
    struct pd_optimizer *eopt = adamw(em);
    struct oplog el = {0};
    pdi_observer_add(log_op, &el);
    int sc8 = pd_scope_begin();
    struct pd_tensor *eloss = step(em, eopt, ids, tgt);
    PT_CHECK(eloss != NULL);
    pd_scope_end(sc8);
    pdi_observer_remove(log_op, &el);

    /* meta: the same model and optimizer made under the meta executor (no
     * data anywhere), then the step in a session of its own */
    struct pd_memory_record mr;
    pd_memory_record_begin();
    int setup = pd_meta_begin();
    struct pd_llama *mm = pd_llama_create(&cfg, 5);
    struct pd_optimizer *mopt = adamw(mm);
    PT_CHECK(mm && mopt && pd_meta_end(setup, NULL) == PD_OK);
    pd_memory_record_end(&mr);
    PT_CHECK(mr.n_allocs == 0); /* creating the model allocated no tensor data */
    struct pd_state_dict *msd = pd_llama_state_dict(mm), *esd = pd_llama_state_dict(em);
    int all_meta = 1;
    for (int i = 0; i < pd_state_dict_size(msd); i++) all_meta &= pd_tensor_is_meta(pd_state_dict_tensor(msd, i));
    PT_CHECK(all_meta && pd_state_dict_size(msd) == pd_state_dict_size(esd));
    struct oplog ml = {0};
    pdi_observer_add(log_op, &ml);
    struct host_log hl = {0};
    pdi_host_observer_add(host_seen, &hl);
    pd_memory_record_begin();
    int tok = pd_meta_begin();
    PT_CHECK(tok > 0);
    int sc9 = pd_scope_begin();
    struct pd_tensor *mloss = step(mm, mopt, ids, tgt);
    PT_CHECK(mloss && pd_tensor_is_meta(mloss) && pd_tensor_ndim(mloss) == 0);
    pd_scope_end(sc9);
    struct pd_meta_report *rep = NULL;
    PT_CHECK(pd_meta_end(tok, &rep) == PD_OK && rep);
    pd_memory_record_end(&mr);
    pdi_observer_remove(log_op, &ml);
    pdi_host_observer_remove(host_seen, &hl);
    PT_CHECK(hl.n == 0); /* the step reads no tensor data on the host */
    if (hl.n) printf("host reads during the step: %d, the last: %s\n", hl.n, hl.what);

    /* the same ops with the same output shapes and dtypes, in the same order */
    PT_CHECK(el.n > 100 && ml.n == el.n && rep && rep->n_ops == el.n);
    int same = 1, first_diff = -1;
    for (int i = 0; i < el.n && i < ml.n && rep && i < rep->n_ops; i++) {
        const struct oprec *a = &el.r[i], *b = &ml.r[i];
        int ok = a->op == b->op && a->n_out == b->n_out && !strcmp(rep->ops[i].op, pdi_ops[a->op].name) &&
                 rep->ops[i].n_out == a->n_out;
        for (int j = 0; ok && j < a->n_out && j < PD_META_MAX_OUT; j++)
            ok = !memcmp(&a->out[j], &b->out[j], sizeof a->out[j]) &&
                 !memcmp(&a->out[j], &rep->ops[i].out[j], sizeof a->out[j]);
        if (!ok && same) first_diff = i;
        same &= ok;
    }
    PT_CHECK(same);
    if (first_diff >= 0) printf("first differing op: %d (%s)\n", first_diff, pdi_ops[el.r[first_diff].op].name);
    /* every parameter got a meta gradient of the eager one's shape */
    int grads = 1;
    for (int i = 0; i < pd_state_dict_size(esd); i++) {
        struct pd_tensor *ge = pd_tensor_grad(pd_state_dict_tensor(esd, i));
        struct pd_tensor *gm = pd_tensor_grad(pd_state_dict_tensor(msd, i));
        grads &= ge && gm && pd_tensor_is_meta(gm) && !pd_tensor_is_meta(ge) &&
                 pd_tensor_ndim(ge) == pd_tensor_ndim(gm) &&
                 !memcmp(pd_tensor_shape(ge), pd_tensor_shape(gm), sizeof(int64_t) * (size_t)pd_tensor_ndim(ge)) &&
                 pd_tensor_dtype(ge) == pd_tensor_dtype(gm);
    }
    PT_CHECK(grads);
    /* no tensor data was allocated during the meta step */
    PT_CHECK(mr.n_allocs == 0 && mr.allocated_bytes == 0);
    if (mr.n_allocs)
        printf("meta step: %lld allocations, %lld bytes\n", (long long)mr.n_allocs, (long long)mr.allocated_bytes);
    /* the activations' peak: more than the logits, less than all outputs made */
    int64_t logits = (int64_t)B * T * cfg.vocab_size * 4;
    PT_CHECK(rep && rep->peak_delta_bytes > logits && rep->peak_delta_bytes <= rep->made_bytes);
    PT_CHECK(rep && rep->start_bytes >= pd_llama_num_params(mm) * 4 * 3);              /* parameters, m, v */
    PT_CHECK(rep && rep->end_bytes == rep->start_bytes + pd_llama_num_params(mm) * 4); /* + the gradients */
    if (rep) {
        printf("meta step: %lld ops, peak activation memory %lld bytes (%.1f KiB, gradients included) above %lld "
               "bytes of parameters and AdamW state; %lld bytes made in all\n",
               (long long)rep->n_ops, (long long)rep->peak_delta_bytes, rep->peak_delta_bytes / 1024.0,
               (long long)rep->start_bytes, (long long)rep->made_bytes);
        char *sum = pd_meta_report_summary(rep, 12);
        PT_CHECK(sum && strstr(sum, "embedding"));
        if (sum) fputs(sum, stdout);
        free(sum);
    }
    /* clipping reads the norm on the host (its coefficient depends on the
     * value): under the meta executor that is a clean error */
    tok = pd_meta_begin();
    PT_CHECK(pd_optimizer_clip_grad_norm(mopt, 1.0) < 0 && strstr(pd_last_error(), "meta"));
    PT_CHECK(pd_meta_end(tok, NULL) == PD_OK);
    pd_meta_report_destroy(rep);
    pd_optimizer_destroy(mopt);
    pd_optimizer_destroy(eopt);
    free(el.r);
    free(ml.r);
    pd_llama_destroy(mm);
    pd_llama_destroy(em);
    pd_scope_end(sc7);
}

int main(void)
{
    int64_t live = pd_live_tensors();
    test_mode_stack();
    test_modes_per_thread();
    test_plugged_executor();
    test_meta_tensors();
    test_meta_sessions();
    test_meta_debug_tools();
    test_llama_meta(0.0);
    test_llama_meta(0.1);
    PT_CHECK(pdi_mode_depth() == 0);
    PT_CHECK(pd_live_tensors() == live);
    int64_t meta_live;
    pdi_meta_bytes(&meta_live, NULL);
    PT_CHECK(meta_live == 0);
    PT_DONE();
}
