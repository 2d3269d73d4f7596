/* paddle.c — one path, tested (issue 11): every byte a training step (or
 * model construction, loading, generation, a dataset batch, a mask build)
 * changes is written by a dispatched op or by the host-write entry point.
 *
 * A tiny Llama with dropout, AdamW, a gradient scaler and clipping by global
 * norm (in f32, then with the forward under f16 autocast, the scaler's real
 * use) runs one warm-up step, then one step under a recorder:
 *   - the live-storage registry (pdi_storage_foreach) lists every storage;
 *     each one's bytes are hashed (FNV-1a) before the step;
 *   - a dispatch observer records every call: after the kernel, the hash of
 *     each storage the call made (its outputs) or wrote (its written
 *     inputs); before the kernel, it checks that the call's inputs still
 *     hold the bytes that the snapshot or their last recorded write left;
 *   - after each part of the step (zero_grad, forward, scale, backward,
 *     unscale, clip, optimizer step, scaler update, scope end) every live
 *     storage is compared with the bytes it should hold.
 * Reported, each with the storage's tensor name, size and the part of the
 * step: bytes that changed where no recorded op wrote them (since the last
 * recorded write), and storages that no op made. A storage freed during the
 * step is compared only when an op reads it; one that no op made is still
 * found (serials are dense: a serial that no op made and no check saw was
 * made around the dispatcher and freed unread). Storage granularity: the
 * model's parameters share one arena storage.
 *
 * Bytes that enter through the host-write entry point (pdi_host_write,
 * reported to a host observer after the copy) count as recorded writes.
 *
 * The recorder checks itself: a write through pd_tensor_data, a storage
 * made with pdi_tensor_new and one made and freed unread must all be
 * reported, and a pdi_host_write must not be.
 *
 * Then the paths outside a training step are recorded the same way (model
 * construction and every init function, optimizer state with fp32 masters
 * and its load, a checkpoint load, a KV-cache generation, dataset batches,
 * FlashMask masks). Before they went through
 * ops or the host-write entry point, this part failed 78 checks, the reports
 * naming each of them. */
#include <inttypes.h>
#include <stdarg.h>

#include "core/internal.h"
#include "pd/amp.h"
#include "pd/autograd.h"
#include "pd/data.h"
#include "pd/debug.h"
#include "pd/flashmask.h"
#include "pd/generate.h"
#include "pd/io.h"
#include "pd/optim.h"
#include "pt.h"
#include "tiny_llama.h"

/* ---- what the recorder knows about each storage (indexed by serial) ---- */
struct tname { /* a tensor's debug-name fields (formatted when reported) */
    const char *scope;
    uint32_t n;
    int16_t op;
    uint8_t out, user;
    uint64_t id;
    int set;
};

struct srec {
    uint64_t hash; /* the bytes it should hold */
    size_t nbytes;
    int known;         /* hash is set: snapshot, or made/written by a recorded op */
    int made_by_op;    /* during the recorded step */
    int last_write;    /* op log index of its last recorded write, or -1 */
    const char *label; /* the test's name for it (interned), or NULL */
    int n_params;      /* parameters viewing it (label_known) */
    struct tname tn;   /* the first tensor an op showed on it */
};

struct oplog { /* one recorded call, or a host write (op -1) */
    const char *scope; /* a host write: what wrote it ("from_buffer") */
    uint32_t n;
    int16_t op;
    const char *phase;
    uint64_t serial_next; /* the registry's next serial after the call */
};

static struct srec *recs;
static uint64_t n_recs;
static struct oplog *ops;
static int n_ops, cap_ops;
static int recording;              /* 1 during the measured step */
static const char *phase = "";     /* the part of the step now running */
static const char *case_name = ""; /* "f32", "f16 autocast" */
static int n_reported;             /* violations found */
static int expect_reports;         /* self-check: violations are expected, not failures */
static int n_random_ops;           /* recorded ops flagged PDI_F_RANDOM */
static int n_host_writes;          /* recorded host writes (pdi_host_write) */
static int part_first_op;          /* ops[] index where the current part began */
static struct part {               /* the parts of the step, in order */
    const char *name;
    uint64_t first_serial; /* the registry's next serial when it began */
    int first_op;
} parts[32];
static int n_parts;

static void part_begin(const char *name)
{
    phase = name;
    part_first_op = n_ops;
    if (n_parts < 32) parts[n_parts++] = (struct part){name, pdi_storage_serial_next(), n_ops};
}

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t st_hash(const struct pdi_storage *st) { return st->data ? fnv1a(st->data, st->nbytes) : 0; }

static struct srec *rec_of(const struct pdi_storage *st)
{
    if (!st->serial) return NULL; /* made before tracking began */
    if (st->serial >= n_recs) {
        uint64_t nn = n_recs ? n_recs : 1024;
        while (nn <= st->serial) nn *= 2;
        struct srec *nr = realloc(recs, sizeof *nr * nn);
        if (!nr) {
            printf("one path: out of memory\n");
            exit(2);
        }
        memset(nr + n_recs, 0, sizeof *nr * (nn - n_recs));
        for (uint64_t i = n_recs; i < nn; i++) nr[i].last_write = -1;
        recs = nr;
        n_recs = nn;
    }
    struct srec *r = &recs[st->serial];
    r->nbytes = st->nbytes;
    return r;
}

static void see_tensor(const struct pd_tensor *t)
{
    struct srec *r = rec_of(t->st);
    if (!r || (r->tn.set && (r->tn.user || r->tn.n))) return; /* keep the first op or user name */
    if (r->tn.set && !t->dbg_user && !t->dbg_n) return;       /* "tensor_<id>" only while none is better */
    r->tn = (struct tname){t->dbg_scope, t->dbg_n, t->dbg_op, t->dbg_out, t->dbg_user, t->id, 1};
}

static void label(const struct pd_tensor *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void label(const struct pd_tensor *t, const char *fmt, ...)
{
    if (!t) return;
    struct srec *r = rec_of(t->st);
    if (!r) return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->label = pdi_intern(buf);
}

static const char *op_str(const struct oplog *o, char *buf, size_t n)
{
    if (o->op < 0) {
        snprintf(buf, n, "host write '%s'", o->scope);
        return buf;
    }
    snprintf(buf, n, "%s%s%s_%u", o->scope ? o->scope : "", o->scope ? "/" : "", pdi_op_name(o->op), (unsigned)o->n);
    return buf;
}

/* "param:model.norm.weight [add_12.out0] (128 bytes)" */
static const char *rec_str(const struct srec *r, uint64_t serial, char *buf, size_t n)
{
    char tn[PDI_NAME_BUF] = "";
    if (r->tn.set) {
        struct pd_tensor t = {0};
        t.dbg_scope = r->tn.scope;
        t.dbg_n = r->tn.n;
        t.dbg_op = r->tn.op;
        t.dbg_out = r->tn.out;
        t.dbg_user = r->tn.user;
        t.id = r->tn.id;
        pdi_tensor_name_buf(&t, tn, sizeof tn);
    }
    if (r->label && *tn && strcmp(r->label, tn))
        snprintf(buf, n, "%s [%s] (%zu bytes)", r->label, tn, r->nbytes);
    else if (r->label || *tn)
        snprintf(buf, n, "%s (%zu bytes)", r->label ? r->label : tn, r->nbytes);
    else
        snprintf(buf, n, "unnamed storage #%" PRIu64 " (%zu bytes)", serial, r->nbytes);
    return buf;
}

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    n_reported++;
    pt_checks++;
    if (!expect_reports) pt_fails++;
    va_list ap;
    va_start(ap, fmt);
    printf("one path (%s%s): [%s] ", case_name, expect_reports ? ", self-check: expected" : "", phase);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* "after <the last recorded op>", or that this part recorded none. */
static const char *last_op_str(char *buf, size_t n)
{
    if (n_ops == part_first_op) return "no op recorded in this part";
    char ob[PDI_NAME_BUF];
    snprintf(buf, n, "after %s", op_str(&ops[n_ops - 1], ob, sizeof ob));
    return buf;
}

static const char *write_str(const struct srec *r, char *buf, size_t n)
{
    if (r->last_write < 0) return r->made_by_op ? "made by a recorded op, never written since" : "none in this step";
    char ob[PDI_NAME_BUF];
    snprintf(buf, n, "%s during %s", op_str(&ops[r->last_write], ob, sizeof ob), ops[r->last_write].phase);
    return buf;
}

/* st must still hold what the recorder expects; report it otherwise. */
static void check_storage(struct pdi_storage *st, const char *where)
{
    struct srec *r = rec_of(st);
    if (!r) return;
    char nb[512], wb[PDI_NAME_BUF * 2], ob[PDI_NAME_BUF + 8];
    uint64_t h = st_hash(st);
    if (!r->known) {
        report("made by no op: %s, %s (%s)", rec_str(r, st->serial, nb, sizeof nb), where, last_op_str(ob, sizeof ob));
    } else if (h != r->hash) {
        report("bytes changed, no recorded op wrote them: %s, %s (%s; last recorded write: %s)",
               rec_str(r, st->serial, nb, sizeof nb), where, last_op_str(ob, sizeof ob), write_str(r, wb, sizeof wb));
    } else {
        return;
    }
    r->known = 1; /* reported once per change */
    r->hash = h;
}

/* ---- the observer ------------------------------------------------------ */
/* The written set: in[0..n_writes), set by infer (at least 1 for .inplace). */
static int n_written(const struct pdi_call *c) { return c->n_writes; }

static void before(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    PDI_UNUSED(seq);
    PDI_UNUSED(ctx);
    if (!recording) return;
    for (int i = 0; i < c->n_in; i++) {
        see_tensor(c->in[i]);
        char where[PDI_NAME_BUF + 32];
        snprintf(where, sizeof where, "seen as input %d of %s", i, pdi_call_name(c));
        check_storage(c->in[i]->st, where);
    }
}

static void wrote(struct pdi_storage *st, int made)
{
    struct srec *r = rec_of(st);
    if (!r) return;
    r->known = 1;
    r->hash = st_hash(st);
    if (made)
        r->made_by_op = 1;
    else
        r->last_write = n_ops - 1;
}

static void after(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    PDI_UNUSED(seq);
    PDI_UNUSED(ctx);
    int view = pdi_ops[c->op].kind == PDI_KIND_VIEW;
    for (int i = 0; i < c->n_in; i++) see_tensor(c->in[i]);
    for (int j = 0; j < c->n_out; j++) see_tensor(c->out[j]);
    if (!recording) return;
    if (n_ops == cap_ops) {
        cap_ops = cap_ops ? 2 * cap_ops : 4096;
        ops = realloc(ops, sizeof *ops * (size_t)cap_ops);
        if (!ops) {
            printf("one path: out of memory\n");
            exit(2);
        }
    }
    ops[n_ops++] = (struct oplog){c->dbg_scope, c->dbg_n, (int16_t)c->op, phase, pdi_storage_serial_next()};
    if (pdi_ops[c->op].flags & PDI_F_RANDOM) n_random_ops++;
    if (view) return; /* an alias of in[0]: nothing written */
    for (int j = 0; j < c->n_out; j++)
        if (!(c->inplace && j == 0)) wrote(c->out[j]->st, 1);
    for (int i = 0; i < n_written(c); i++) wrote(c->in[i]->st, 0);
}

/* The host-write entry point's events (after the copy: the bytes are in):
 * a write, like an op's written input. A host read or a pointer handed out
 * (pd_tensor_data) writes nothing: a write through that pointer is a
 * change no recorded write explains. */
static void host_event(const struct pd_tensor *t, unsigned access, const char *what, void *site, void *ctx)
{
    PDI_UNUSED(ctx);
    if (!recording || !(access & PDI_HOST_COPY_IN)) return;
    PT_CHECK(access & PDI_HOST_WRITE);
    if (!site) report("host write '%s' reported without a call site", what);
    if (n_ops == cap_ops) {
        cap_ops = cap_ops ? 2 * cap_ops : 4096;
        ops = realloc(ops, sizeof *ops * (size_t)cap_ops);
        if (!ops) {
            printf("one path: out of memory\n");
            exit(2);
        }
    }
    ops[n_ops++] = (struct oplog){pdi_intern(what), 0, -1, phase, pdi_storage_serial_next()};
    n_host_writes++;
    see_tensor(t);
    wrote(t->st, 0);
}

/* ---- snapshots and checkpoints ----------------------------------------- */
/* Storages are collected first and checked after the registry's lock is
 * released (the checks do not make storages, but keep the callback small). */
struct collect {
    struct pdi_storage **st;
    int64_t n, cap;
};

static void collect_one(struct pdi_storage *st, void *ctx)
{
    struct collect *c = ctx;
    if (c->n < c->cap) c->st[c->n] = st;
    c->n++;
}

/* Every live storage (valid until the next storage is made or freed). */
static int64_t live_storages(struct collect *c)
{
    for (;;) {
        c->n = 0;
        pdi_storage_foreach(collect_one, c);
        if (c->n <= c->cap) return c->n;
        c->cap = c->n * 2;
        free(c->st);
        c->st = malloc(sizeof *c->st * (size_t)c->cap);
        if (!c->st) {
            printf("one path: out of memory\n");
            exit(2);
        }
    }
}

static struct collect live;

static void snapshot(void)
{
    int64_t n = live_storages(&live);
    for (int64_t i = 0; i < n; i++) {
        struct srec *r = rec_of(live.st[i]);
        r->known = 1;
        r->made_by_op = 0;
        r->last_write = -1;
        r->hash = st_hash(live.st[i]);
    }
}

static void checkpoint(void)
{
    int64_t n = live_storages(&live);
    for (int64_t i = 0; i < n; i++) check_storage(live.st[i], "live at the end of this part");
}

/* Serials are dense: every storage made in [first, end) that no op made
 * and no check saw was made around the dispatcher and freed unread. */
static void unseen_storages(uint64_t first, uint64_t end)
{
    const char *saved = phase;
    int k = 0, p = 0;
    for (uint64_t s = first; s < end; s++) {
        if (s < n_recs && (recs[s].made_by_op || recs[s].known)) continue;
        while (k < n_ops && ops[k].serial_next <= s) k++;
        while (p + 1 < n_parts && parts[p + 1].first_serial <= s) p++;
        char ob[PDI_NAME_BUF], where[PDI_NAME_BUF + 16] = "no op recorded before it in this part";
        if (k > parts[p].first_op) snprintf(where, sizeof where, "made after %s", op_str(&ops[k - 1], ob, sizeof ob));
        phase = parts[p].name;
        report("made by no op: storage #%" PRIu64 " (%s), freed before any op read it", s, where);
    }
    phase = saved;
}

/* ---- names for the storages the test knows ------------------------------- */
static void label_known(struct pd_state_dict *params, struct pd_optimizer *opt)
{
    int np = pd_state_dict_size(params);
    for (int i = 0; i < np; i++) {
        struct srec *r = rec_of(pd_state_dict_tensor(params, i)->st);
        if (r) r->n_params = 0;
    }
    for (int i = 0; i < np; i++) {
        struct srec *r = rec_of(pd_state_dict_tensor(params, i)->st);
        if (r) r->n_params++;
    }
    for (int i = 0; i < np; i++) {
        struct pd_tensor *p = pd_state_dict_tensor(params, i);
        struct srec *r = rec_of(p->st);
        int shared = r ? r->n_params : 0;
        if (shared > 1)
            label(p, "parameter arena (%d parameters)", shared);
        else
            label(p, "param:%s", pd_state_dict_name(params, i));
        label(pd_tensor_grad(p), "grad of %s", pd_state_dict_name(params, i));
    }
    struct pd_state_dict *os = pd_state_dict_create();
    if (os && !pd_optimizer_state_dict(opt, os, "optim."))
        for (int i = 0; i < pd_state_dict_size(os); i++)
            label(pd_state_dict_tensor(os, i), "%s", pd_state_dict_name(os, i));
    pd_state_dict_destroy(os);
}

/* ---- the training step ----------------------------------------------------- */
struct run {
    struct pd_llama *m;
    struct pd_state_dict *params;
    struct pd_optimizer *opt;
    struct pd_grad_scaler *scaler;
    struct pd_tensor *ids, *tgt;
    double max_norm;
    int autocast; /* forward under pd_autocast_begin(autocast), or -1 */
};

#define PART(name, stmt)                                                                                               \
    do {                                                                                                               \
        if (recording) part_begin(name);                                                                               \
        stmt;                                                                                                          \
        if (recording) {                                                                                               \
            label_known(r->params, r->opt);                                                                            \
            checkpoint();                                                                                              \
        }                                                                                                              \
    } while (0)

/* One step; returns the loss (NaN on failure). */
static double step(struct run *r)
{
    double loss_v = NAN, gnorm = NAN;
    int stepped = -1, rc = PD_OK;
    struct pd_tensor *loss = NULL, *scaled = NULL;
    int scope = pd_scope_begin();
    PART("zero_grad", pd_optimizer_zero_grad(r->opt));
    int ac = r->autocast >= 0 ? pd_autocast_begin((enum pd_dtype)r->autocast) : -1;
    PART("forward", loss = pd_llama_loss(r->m, r->ids, r->tgt));
    if (r->autocast >= 0) pd_autocast_end(ac);
    PART("scale", scaled = pd_grad_scaler_scale(r->scaler, loss));
    PART("backward", rc = pd_backward(scaled, NULL, 0));
    PT_CHECK(loss && scaled && rc == PD_OK);
    PART("unscale", rc = pd_grad_scaler_unscale(r->scaler, r->opt));
    PT_CHECK(rc == PD_OK && !pd_grad_scaler_found_inf(r->scaler));
    PART("clip", gnorm = pd_optimizer_clip_grad_norm(r->opt, r->max_norm));
    PT_CHECK(gnorm > r->max_norm); /* so that clipping scales the gradients */
    PART("optimizer step", stepped = pd_grad_scaler_step(r->scaler, r->opt));
    PT_CHECK(stepped == 1);
    PART("scaler update", rc = pd_grad_scaler_update(r->scaler));
    PT_CHECK(rc == PD_OK);
    loss_v = loss ? pd_item(loss) : NAN;
    PART("scope end", rc = pd_scope_end(scope));
    PT_CHECK(scope >= 0 && rc == PD_OK);
    return loss_v;
}

/* The registry itself: nesting, serials, untracked storages, unlinking
 * after tracking ended. Runs first, while nothing else is tracked. */
static void test_registry(void)
{
    int64_t shape[1] = {4};
    PT_CHECK(pdi_storage_foreach(NULL, NULL) == 0);
    struct pd_tensor *off = pdi_tensor_new(shape, 1, PD_F32);
    uint64_t s0 = pdi_storage_serial_next();
    pdi_storage_track_begin();
    pdi_storage_track_begin(); /* nests */
    struct pd_tensor *a = pdi_tensor_new(shape, 1, PD_F32), *b = pdi_tensor_new(shape, 1, PD_I64);
    struct pd_tensor *va = pdi_tensor_alias(a, shape, a->strides, 1, 0); /* a view: no new storage */
    pdi_storage_track_end();
    struct pd_tensor *c = pdi_tensor_new(shape, 1, PD_F32); /* still on: one begin left */
    pdi_storage_track_end();
    struct pd_tensor *d = pdi_tensor_new(shape, 1, PD_F32); /* off */
    PT_CHECK(off->st->serial == 0 && d->st->serial == 0);
    PT_CHECK(a->st->serial == s0 && b->st->serial == s0 + 1 && c->st->serial == s0 + 2 && va->st == a->st);
    struct collect cl = {0};
    PT_CHECK(live_storages(&cl) == 3 && cl.st[0] == a->st && cl.st[1] == b->st && cl.st[2] == c->st);
    pd_tensor_release(b);
    PT_CHECK(live_storages(&cl) == 2 && cl.st[0] == a->st && cl.st[1] == c->st);
    pd_tensor_release(a);
    PT_CHECK(live_storages(&cl) == 2); /* the view keeps a's storage */
    pd_tensor_release(va);
    pd_tensor_release(c);
    PT_CHECK(live_storages(&cl) == 0);
    /* a recycled storage struct is tracked afresh, with a new serial */
    pdi_storage_track_begin();
    struct pd_tensor *e = pdi_tensor_new(shape, 1, PD_F32);
    PT_CHECK(e->st->serial == s0 + 3 && pdi_storage_foreach(NULL, NULL) == 1);
    pdi_storage_track_end();
    pd_tensor_release(e);
    pd_tensor_release(d);
    pd_tensor_release(off);
    PT_CHECK(pdi_storage_foreach(NULL, NULL) == 0);
    free(cl.st);
}

/* One case: a fresh model, a warm-up step, the recorded step, its checks
 * (and the recorder's self-check when self_check). */
static void run_case(const char *name, int autocast, int self_check)
{
    case_name = name;
    n_ops = n_parts = n_random_ops = n_reported = 0;
    struct pd_llama_config cfg = pt_tiny_llama_config();
    cfg.dropout = 0.25;
    struct run r = {0};
    r.autocast = autocast;
    r.m = pd_llama_create(&cfg, 7);
    PT_CHECK(r.m != NULL);
    if (!r.m) return;
    pd_llama_train(r.m, 1);
    r.params = pd_llama_state_dict(r.m);
    PT_CHECK(pd_debug_name_params(r.params) == PD_OK);
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    oc.lr = 1e-2;
    oc.weight_decay = 0.1;
    r.opt = pd_optimizer_create_for(&oc, r.params);
    struct pd_grad_scaler_config sc;
    pd_grad_scaler_config_default(&sc);
    sc.init_scale = 1024;
    r.scaler = pd_grad_scaler_create(&sc);
    PT_CHECK(r.opt && r.scaler);
    r.max_norm = 0.05;

    enum { B = 2, T = 12 };
    int64_t idv[B * T], tgv[B * T];
    for (int i = 0; i < B * T; i++) {
        idv[i] = (i * 7 + 3) % cfg.vocab_size;
        tgv[i] = (i * 5 + 1) % cfg.vocab_size;
    }
    tgv[5] = -1; /* an ignored target */
    r.ids = pd_from_buffer(idv, (int64_t[]){B, T}, 2, PD_I64);
    r.tgt = pd_from_buffer(tgv, (int64_t[]){B, T}, 2, PD_I64);
    PT_CHECK(r.ids && r.tgt);

    /* Warm-up: the optimizer's state exists before the measured step. */
    double l0 = step(&r);
    PT_CHECK(isfinite(l0));

    label_known(r.params, r.opt);
    snapshot();
    uint64_t first_serial = pdi_storage_serial_next();
    struct pd_tensor *arena = pd_state_dict_tensor(r.params, 0);
    uint64_t arena_before = st_hash(arena->st);
    recording = 1;
    double l1 = step(&r);
    recording = 0;
    PT_CHECK(isfinite(l1));
    unseen_storages(first_serial, pdi_storage_serial_next());
    printf("one path (%s): %d ops recorded in the step (%d random), %d reports; by part:", name, n_ops, n_random_ops,
           n_reported);
    for (int p = 0; p < n_parts; p++) {
        int end = p + 1 < n_parts ? parts[p + 1].first_op : n_ops;
        printf(" %s %d%s", parts[p].name, end - parts[p].first_op, p + 1 < n_parts ? "," : "\n");
    }
    /* The parts that change tensors did it through ops (zero_grad drops the
     * gradients; the scaler's update and the scope's end touch no bytes). */
    for (int p = 0; p < n_parts; p++) {
        int end = p + 1 < n_parts ? parts[p + 1].first_op : n_ops;
        int quiet = !strcmp(parts[p].name, "zero_grad") || !strcmp(parts[p].name, "scaler update") ||
                    !strcmp(parts[p].name, "scope end");
        if (!quiet && end == parts[p].first_op) {
            pt_fails++;
            printf("one path (%s): [%s] recorded no op\n", name, parts[p].name);
        }
    }
    PT_CHECK(n_ops > 100);
    PT_CHECK(st_hash(arena->st) != arena_before); /* the step changed the parameters */
    if (!n_random_ops) {
        pt_fails++;
        printf("one path (%s): no random op was recorded: dropout drew its mask around the dispatcher\n", name);
    }

    if (self_check) {
        /* A write through the host pointer, a storage made around the
         * dispatcher and one made and freed unread are all reported. */
        int before_self = n_reported;
        expect_reports = 1;
        recording = 1;
        part_begin("self-check");
        float *w = pd_tensor_data(arena);
        w[0] += 1.0f;
        struct pd_tensor *raw = pdi_tensor_new((int64_t[]){3}, 1, PD_F32);
        /* ... but not bytes that came in through the host-write entry point */
        int hw = n_host_writes;
        struct pd_tensor *z = pd_zeros((int64_t[]){2}, 1, PD_F32);
        PT_CHECK(z && pdi_host_write(z, (float[]){1.5f, -2.0f}, "self-check") == PD_OK);
        PT_CHECK(z && pd_get(z, (int64_t[]){1}) == -2);
        PT_CHECK(n_host_writes == hw + 1);
        checkpoint();
        pd_tensor_release(z);
        uint64_t s_gone = pdi_storage_serial_next();
        pd_tensor_release(pdi_tensor_new((int64_t[]){5}, 1, PD_F32));
        unseen_storages(s_gone, pdi_storage_serial_next());
        recording = 0;
        expect_reports = 0;
        PT_CHECK(n_reported - before_self == 3);
        pd_tensor_release(raw);
    }

    pd_grad_scaler_destroy(r.scaler);
    pd_optimizer_destroy(r.opt);
    pd_llama_destroy(r.m);
    pd_tensor_release(r.ids);
    pd_tensor_release(r.tgt);
}

/* ---- the paths outside a training step ------------------------------------ */
/* Each scenario is recorded like the step: snapshot, parts, checks. */
static uint64_t scen_first_serial;

static void scen_begin(const char *name)
{
    case_name = name;
    n_ops = n_parts = n_random_ops = n_reported = n_host_writes = 0;
    snapshot();
    scen_first_serial = pdi_storage_serial_next();
    recording = 1;
}

/* Ends the scenario; checks it recorded ops (and host writes when
 * host_data: the scenario brings host bytes in). */
static void scen_end(int host_data)
{
    recording = 0;
    unseen_storages(scen_first_serial, pdi_storage_serial_next());
    printf("one path (%s): %d ops (%d random) and %d host writes recorded, %d reports; by part:", case_name,
           n_ops - n_host_writes, n_random_ops, n_host_writes, n_reported);
    for (int p = 0; p < n_parts; p++) {
        int end = p + 1 < n_parts ? parts[p + 1].first_op : n_ops;
        printf(" %s %d%s", parts[p].name, end - parts[p].first_op, p + 1 < n_parts ? "," : "\n");
    }
    for (int p = 0; p < n_parts; p++) {
        int end = p + 1 < n_parts ? parts[p + 1].first_op : n_ops;
        if (end == parts[p].first_op) {
            pt_fails++;
            printf("one path (%s): [%s] recorded no op and no host write\n", case_name, parts[p].name);
        }
    }
    if (host_data && !n_host_writes) {
        pt_fails++;
        printf("one path (%s): no host write was recorded: host bytes entered around the entry point\n", case_name);
    }
}

#define STEP(name, ...)                                                                                                \
    do {                                                                                                               \
        part_begin(name);                                                                                              \
        __VA_ARGS__;                                                                                                   \
        checkpoint();                                                                                                  \
    } while (0)

/* Model construction and every init function, a checkpoint load, a
 * KV-cache generation, dataset batches and FlashMask masks: every byte they
 * change is written by a dispatched op or by the host-write entry point. */
static void test_paths(void)
{
    struct pd_llama_config cfg = pt_tiny_llama_config();
    int rc = PD_OK, scope = pd_scope_begin();

    scen_begin("construction");
    struct pd_llama *m = NULL;
    STEP("llama create + init", m = pd_llama_create(&cfg, 11));
    PT_CHECK(m != NULL);
    struct pd_generator *g = pd_generator_create(5);
    struct pd_nn_linear *lin = NULL;
    STEP("linear create (kaiming, uniform)", lin = pd_nn_linear_create(6, 4, 1, g));
    PT_CHECK(lin != NULL);
    STEP("init functions", {
        rc |= pd_init_orthogonal_(lin->weight, 1.0, g);
        rc |= pd_init_trunc_normal_(lin->weight, 0, 0.5, -0.4, 0.4, g);
        rc |= pd_init_xavier_normal_(lin->weight, 1.0, g);
        rc |= pd_init_kaiming_normal_(lin->weight, 0, PD_INIT_FAN_OUT, PD_NL_RELU, g);
        rc |= pd_init_eye_(lin->weight);
        rc |= pd_init_constant_(lin->bias, 0.25);
    });
    PT_CHECK(rc == PD_OK);
    /* an optimizer over a bf16 parameter: its fp32 master and moments are
     * made on the first step; then its state round-trips through a dict */
    struct pd_tensor *pb = pd_requires_grad_(pd_full((int64_t[]){4, 3}, 2, 0.5, PD_BF16), 1);
    struct pd_state_dict *psd = pd_state_dict_create(), *osd = pd_state_dict_create();
    PT_CHECK(pb && psd && osd && pd_state_dict_add(psd, "pb", pb) == PD_OK);
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    struct pd_optimizer *opt = pd_optimizer_create_for(&oc, psd);
    PT_CHECK(opt != NULL);
    STEP("optimizer step (bf16 param, fp32 master)", {
        rc = pd_backward(pd_sum(pd_mul(pb, pb), NULL, 0, 0), NULL, 0);
        if (!rc) rc = pd_optimizer_step(opt);
    });
    PT_CHECK(rc == PD_OK);
    struct pd_optimizer *opt2 = pd_optimizer_create_for(&oc, psd);
    PT_CHECK(opt2 && pd_optimizer_state_dict(opt, osd, "optim.") == PD_OK);
    STEP("optimizer state load", rc = pd_optimizer_load_state_dict(opt2, osd, "optim."));
    PT_CHECK(rc == PD_OK);
    scen_end(1);
    pd_optimizer_destroy(opt2);
    pd_optimizer_destroy(opt);
    pd_state_dict_destroy(osd);
    pd_state_dict_destroy(psd);
    pd_nn_linear_destroy(lin);
    if (!m) return;

    /* a checkpoint of m, loaded into a second model */
    const char *path = "test_one_path.safetensors";
    PT_CHECK(pd_safetensors_save(path, pd_llama_state_dict(m)) == PD_OK);
    struct pd_llama *m2 = pd_llama_create(&cfg, 12);
    PT_CHECK(m2 != NULL);
    struct pd_state_dict *sd = NULL;
    scen_begin("checkpoint load");
    STEP("safetensors load", sd = pd_safetensors_load(path));
    PT_CHECK(sd != NULL);
    STEP("state dict load", rc = sd && m2 ? pd_state_dict_load(pd_llama_state_dict(m2), sd, 1, NULL, 0) : -1);
    PT_CHECK(rc == PD_OK);
    STEP("state dict load file", rc = m2 ? pd_state_dict_load_file(pd_llama_state_dict(m2), path, 1, NULL, 0) : -1);
    PT_CHECK(rc == PD_OK);
    scen_end(1);
    pd_state_dict_destroy(sd);
    pd_llama_destroy(m2);
    remove(path);

    /* a KV-cache generation of a few tokens, two prompts of different lengths */
    int64_t p0[] = {1, 2, 3}, p1[] = {4, 5, 6, 7, 8};
    const int64_t *prompts[] = {p0, p1};
    int lens[] = {3, 5};
    struct pd_generate_config gc;
    pd_generate_config_default(&gc);
    gc.max_new_tokens = 4;
    gc.temperature = 0.8;
    struct pd_generation *gen = NULL;
    scen_begin("generate");
    STEP("generate (KV cache)", gen = pd_generate(m, prompts, lens, 2, &gc, g));
    PT_CHECK(gen && pd_generation_len(gen, 0) == 4 && pd_generation_len(gen, 1) == 4);
    scen_end(1);
    pd_generation_destroy(gen);

    /* dataset batches, random and sequential */
    static const char text[] = "the one path: every byte is written by an op or comes in through one entry point. ";
    struct pd_text_dataset *ds = pd_text_dataset_from_memory(text, sizeof text - 1, NULL, 0.2);
    struct pd_dataset_iter *it = ds ? pd_dataset_iter_create(ds, PD_SPLIT_VAL, 2, 4) : NULL;
    PT_CHECK(ds && it);
    struct pd_tensor *x = NULL, *y = NULL;
    scen_begin("dataset");
    STEP("dataset batch", rc = pd_dataset_batch(ds, PD_SPLIT_TRAIN, 3, 8, g, &x, &y));
    PT_CHECK(rc == PD_OK && x && y);
    STEP("dataset iter", rc = it ? pd_dataset_iter_next(it, &x, &y) : -1);
    PT_CHECK(rc > 0);
    scen_end(1);
    pd_dataset_iter_destroy(it);
    pd_text_dataset_destroy(ds);

    /* FlashMask masks, and one dense conversion */
    struct pd_tensor *mk[10] = {0};
    scen_begin("flashmask masks");
    STEP("mask builders", {
        int64_t docs[] = {3, 4, 2}, pre[] = {1, 2, 0};
        mk[0] = pd_flashmask_causal(10);
        mk[1] = pd_flashmask_sliding_window(10, 2, 1, 0);
        mk[2] = pd_flashmask_causal_document(10, docs, 3);
        mk[3] = pd_flashmask_document(10, docs, 3);
        mk[4] = pd_flashmask_share_question(10, docs, 3);
        mk[5] = pd_flashmask_global_sliding_window(10, 2, 2, 1);
        mk[6] = pd_flashmask_causal_blockwise(9, docs, 3);
        mk[7] = pd_flashmask_prefix_document(10, docs, pre, 3);
        mk[8] = pd_flashmask_qk_sparse(10, 2, 4);
        mk[9] = pd_flashmask_random_eviction(10, 3, 77);
    });
    for (int i = 0; i < 10; i++) PT_CHECK(mk[i] != NULL);
    struct pd_tensor *dense = NULL;
    STEP("to_dense", dense = pd_flashmask_to_dense(mk[2], 1, 10));
    PT_CHECK(dense != NULL);
    scen_end(1);

    pd_generator_destroy(g);
    pd_llama_destroy(m);
    PT_CHECK(pd_scope_end(scope) == PD_OK);
}

int main(void)
{
    test_registry();
    pdi_storage_track_begin(); /* before anything is made: every storage is listed */
    PT_CHECK(pdi_observer_add_ex(before, after, NULL) == PD_OK);
    PT_CHECK(pdi_host_observer_add(host_event, NULL) == PD_OK);
    run_case("f32", -1, 1);
    run_case("f16 autocast", PD_F16, 0); /* the scaler's real use: casts are ops too */
    test_paths();
    pdi_host_observer_remove(host_event, NULL);
    pdi_observer_remove_ex(before, after, NULL);
    pdi_storage_track_end();
    PT_CHECK(pdi_storage_foreach(NULL, NULL) == 0); /* everything freed left the registry */
    free(live.st);
    free(recs);
    free(ops);
    PT_DONE();
}
