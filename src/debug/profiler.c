/* paddle.c — the op profiler: wall time per op (forward and backward, per
 * thread), FLOPs and bytes where known, user ranges; exported as a Chrome
 * trace and a summary table.
 *
 * Two dispatcher observers: "before" (outputs allocated, kernel not run yet)
 * pushes (call, start time) on a per-thread stack; "after" pops it and
 * appends one event. An op whose kernel fails never reaches "after": its
 * entry is dropped when a later op pops past it. Time spent in the observers
 * of other tools is included in the op's time; the profiler's own formatting
 * happens after the clock is read.
 *
 * Events live in chunks appended under one mutex (process-wide, in the
 * order they finished). An event keeps raw metadata (op, name counter,
 * shapes) and is formatted only when a report is written; what it points to
 * (call sites, scope names) is interned for the life of the process.
 * Capacity is capped (PD_PROFILER_MAX_EVENTS, default 1,000,000 events of
 * about 400 bytes, allocated as needed); further events are counted as
 * dropped.
 *
 * Definitions (docs/debugging.md): wall = end - begin; op time = the sum of
 * top-level op events (depth 0: not nested inside another op's dispatch;
 * backward ops are dispatched by the engine, not by an op, so they are top
 * level too); gap = wall - op time.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "io/file.h"
#include "pd/profiler.h"

#define CHUNK 4096
#define MAX_STACK 64

enum { EV_OP = 0, EV_RANGE = 1, EV_COMM = 2, EV_WAIT = 3 };
#define COMM_TID 1000 /* the communication track of the Chrome trace */

#define EV_TENSORS 4 /* shapes kept per event: the first inputs, then outputs */

/* Raw metadata of one tensor: formatted only when a report is written, so
 * that the per-op cost is a copy, not a printf. */
struct ev_tensor {
    int8_t dtype, ndim, is_out;
    int64_t shape[PD_MAX_DIMS];
};

struct event {
    int64_t ts_ns, dur_ns; /* since pd_profiler_begin */
    double flops, bytes;
    const char *site;      /* interned or NULL */
    const char *scope;     /* interned call scope or NULL */
    uint32_t n;            /* the call's counter: name = <scope>/<op>_<n> */
    int tid, depth, kind, n_t, n_more;
    int16_t op, bw_op;     /* bw_op: the GradNode's forward op, -1 in forward */
    char bw[64];           /* GradNode name in backward; range name for ranges */
    struct ev_tensor t[EV_TENSORS];
};

struct chunk {
    struct chunk *next;
    int n;
    struct event ev[CHUNK];
};

struct open_op {
    const struct pdi_call *c;
    uint64_t seq;
    int64_t t0;
};

struct tstate {
    uint64_t epoch; /* recording this stack belongs to */
    int tid;
    int n_ops, n_ranges;
    struct open_op ops[MAX_STACK];
    struct { int64_t t0; int depth; char name[64]; } ranges[MAX_STACK];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int enabled;
static uint64_t epoch;
static int64_t t_begin, t_end;
static struct chunk *head, *tail;
static int64_t n_events, n_dropped, max_events;
static int next_tid;
static PDI_TLS struct tstate *ts;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* This thread's stacks, reset when a new recording started. */
static struct tstate *tstate(void)
{
    if (!ts) {
        ts = pdi_calloc(1, sizeof *ts);
        if (!ts) return NULL;
        ts->epoch = (uint64_t)-1;
    }
    if (ts->epoch != epoch) {
        pthread_mutex_lock(&mu);
        ts->tid = next_tid++;
        pthread_mutex_unlock(&mu);
        ts->epoch = epoch;
        ts->n_ops = ts->n_ranges = 0;
    }
    return ts;
}

static void append(const struct event *e)
{
    pthread_mutex_lock(&mu);
    if (n_events >= max_events) { n_dropped++; pthread_mutex_unlock(&mu); return; }
    if (!tail || tail->n == CHUNK) {
        struct chunk *c = pdi_malloc(sizeof *c);
        if (!c) { n_dropped++; pthread_mutex_unlock(&mu); return; }
        c->next = NULL;
        c->n = 0;
        if (tail) tail->next = c;
        else head = c;
        tail = c;
    }
    tail->ev[tail->n++] = *e;
    n_events++;
    pthread_mutex_unlock(&mu);
}

/* ---- FLOPs and bytes --------------------------------------------------- */
static double numel(const struct pd_tensor *t) { return t ? (double)pdi_numel(t->shape, t->ndim) : 0; }

/* Multiply-adds count 2. Unknown ops: 0 (elementwise ops are memory bound;
 * their bytes say more than a FLOP count would). */
static double op_flops(const struct pdi_call *c)
{
    const struct pd_tensor *o = c->n_out ? c->out[0] : NULL; /* ops may have no outputs (optimizer updates) */
    switch (c->op) {
    case PD_OP_matmul: {
        const struct pd_tensor *a = c->in[0];
        if (!o || a->ndim < 1) return 0;
        int64_t k = a->ndim >= 2 && c->a.matmul.trans_a ? a->shape[a->ndim - 2] : a->shape[a->ndim - 1];
        return 2.0 * numel(o) * (double)k;
    }
    case PD_OP_conv2d:
    case PD_OP_conv2d_backward_data: {
        const struct pd_tensor *w = c->in[1];
        const struct pd_tensor *big = c->op == PD_OP_conv2d ? o : c->in[0]; /* the [N, O, OH, OW] side */
        if (!w || w->ndim != 4 || !w->shape[0]) return 0;
        return 2.0 * numel(big) * numel(w) / (double)w->shape[0];
    }
    case PD_OP_conv2d_backward_weight: {
        if (!o || o->ndim != 4 || !o->shape[0]) return 0;
        return 2.0 * numel(c->in[0]) * numel(o) / (double)o->shape[0];
    }
    case PD_OP_sdpa:
    case PD_OP_sdpa_backward: {
        const struct pd_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
        if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4) return 0;
        double bhts = (double)q->shape[0] * (double)q->shape[1] * (double)q->shape[2] * (double)k->shape[2];
        double d = (double)q->shape[3], dv = (double)v->shape[3];
        /* forward: Q K^T and P V; backward: recompute Q K^T, dV, dP, dQ, dK */
        double f = c->op == PD_OP_sdpa ? 2.0 * bhts * (d + dv) : 2.0 * bhts * (3 * d + 2 * dv);
        return c->a.sdpa.causal ? f / 2 : f; /* causal: half the score matrix */
    }
    default: return 0;
    }
}

static double op_bytes(const struct pdi_call *c)
{
    if (pdi_ops[c->op].kind == PDI_KIND_VIEW) return 0; /* no data moved */
    double b = 0;
    for (int i = 0; i < c->n_in; i++) b += numel(c->in[i]) * (double)pd_dtype_size(c->in[i]->dtype);
    for (int j = 0; j < c->n_out; j++)
        if (c->out[j]) b += numel(c->out[j]) * (double)pd_dtype_size(c->out[j]->dtype);
    return b;
}

/* "f32[2,3] f32[3,4] -> f32[2,3]" */
static void shapes_str(const struct event *e, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    int arrow = 0;
    for (int i = 0; i < e->n_t && k + 1 < n; i++) {
        char sh[PDI_SHAPE_BUF], *w = sh;
        pdi_shape_str(e->t[i].shape, e->t[i].ndim, sh, sizeof sh);
        for (char *r = sh; *r; r++)
            if (*r != ' ') *w++ = *r;
        *w = 0;
        const char *sep = i == 0 ? "" : " ";
        if (e->t[i].is_out && !arrow) { sep = i == 0 ? "-> " : " -> "; arrow = 1; }
        int m = snprintf(buf + k, n - k, "%s%s%s", sep, pd_dtype_name((enum pd_dtype)e->t[i].dtype), sh);
        if (m < 0) break;
        k += (size_t)m;
    }
    if (e->n_more && k + 1 < n) snprintf(buf + k, n - k, " (+%d more)", e->n_more);
}

/* The op's call name, or "<GradNode>/<call name>" in backward; a range's name. */
static void event_name(const struct event *e, char *buf, size_t n)
{
    if (e->kind != EV_OP) { snprintf(buf, n, "%s", e->bw); return; }
    struct pdi_call c = {.op = (enum pd_op)e->op, .dbg_scope = e->scope, .dbg_n = e->n};
    snprintf(buf, n, "%s%s%s", e->bw_op >= 0 ? e->bw : "", e->bw_op >= 0 ? "/" : "", pdi_call_name(&c));
}

static void keep_tensors(const struct pdi_call *c, struct event *e)
{
    e->n_t = e->n_more = 0;
    for (int i = 0; i < c->n_in + c->n_out; i++) {
        const struct pd_tensor *t = i < c->n_in ? c->in[i] : c->out[i - c->n_in];
        if (!t) continue;
        /* keep room for the first output */
        if (e->n_t == EV_TENSORS || (i < c->n_in && e->n_t == EV_TENSORS - 1)) { e->n_more++; continue; }
        struct ev_tensor *et = &e->t[e->n_t++];
        et->dtype = (int8_t)t->dtype;
        et->ndim = (int8_t)t->ndim;
        et->is_out = i >= c->n_in;
        memcpy(et->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    }
}

/* ---- observers --------------------------------------------------------- */
static void prof_before(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    PDI_UNUSED(ctx);
    struct tstate *s = tstate();
    if (!s || s->n_ops == MAX_STACK) return;
    s->ops[s->n_ops++] = (struct open_op){c, seq, now_ns()};
}

static void prof_after(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    PDI_UNUSED(ctx);
    int64_t t1 = now_ns();
    struct tstate *s = tstate();
    if (!s) return;
    /* pop to this call; entries above it are ops whose kernel failed */
    int i = s->n_ops - 1;
    while (i >= 0 && !(s->ops[i].c == c && s->ops[i].seq == seq)) i--;
    if (i < 0) return; /* began before the profiler was on */
    s->n_ops = i;
    struct event e;
    e.ts_ns = s->ops[i].t0 - t_begin;
    e.dur_ns = t1 - s->ops[i].t0;
    e.flops = op_flops(c);
    e.bytes = op_bytes(c);
    e.site = pdi_call_site(c);
    e.tid = s->tid;
    e.depth = i;
    e.kind = EV_OP;
    e.op = (int16_t)c->op;
    e.scope = c->dbg_scope;
    e.n = c->dbg_n;
    const struct pdi_node *node = pdi_backward_node();
    e.bw_op = node ? (int16_t)node->op : -1;
    if (node) snprintf(e.bw, sizeof e.bw, "%s", pdi_backward_node_name());
    keep_tensors(c, &e);
    append(&e);
}

int pd_profiler_begin(void)
{
    if (enabled) return pdi_errorf(PD_ERR_STATE, "pd_profiler_begin: the profiler is already on");
    pthread_mutex_lock(&mu);
    while (head) {
        struct chunk *n = head->next;
        free(head);
        head = n;
    }
    tail = NULL;
    n_events = n_dropped = 0;
    next_tid = 0;
    const char *s = getenv("PD_PROFILER_MAX_EVENTS");
    max_events = s && atoll(s) > 0 ? atoll(s) : 1000000;
    epoch++;
    t_begin = now_ns();
    t_end = 0;
    pthread_mutex_unlock(&mu);
    int rc = pdi_observer_add_ex(prof_before, prof_after, NULL);
    if (rc) return rc;
    enabled = 1;
    return PD_OK;
}

int pd_profiler_end(void)
{
    if (!enabled) return pdi_errorf(PD_ERR_STATE, "pd_profiler_end: the profiler is not on");
    pdi_observer_remove_ex(prof_before, prof_after, NULL);
    enabled = 0;
    t_end = now_ns();
    return PD_OK;
}

int pd_profiler_enabled(void) { return enabled; }

int pd_profiler_range_push(const char *name)
{
    if (!name) return pdi_errorf(PD_ERR_INVALID, "pd_profiler_range_push: name is NULL");
    if (!enabled) return PD_OK;
    struct tstate *s = tstate();
    if (!s) return pdi_errorf(PD_ERR_NOMEM, "pd_profiler_range_push: out of memory");
    if (s->n_ranges == MAX_STACK)
        return pdi_errorf(PD_ERR_STATE, "pd_profiler_range_push: ranges nested deeper than %d", MAX_STACK);
    s->ranges[s->n_ranges].t0 = now_ns();
    s->ranges[s->n_ranges].depth = s->n_ranges;
    snprintf(s->ranges[s->n_ranges].name, sizeof s->ranges[0].name, "%s", name);
    s->n_ranges++;
    return PD_OK;
}

int pd_profiler_range_pop(void)
{
    if (!enabled) return PD_OK;
    struct tstate *s = tstate();
    if (!s || !s->n_ranges) return pdi_errorf(PD_ERR_STATE, "pd_profiler_range_pop: no range open on this thread");
    s->n_ranges--;
    struct event e = {0};
    e.ts_ns = s->ranges[s->n_ranges].t0 - t_begin;
    e.dur_ns = now_ns() - s->ranges[s->n_ranges].t0;
    e.tid = s->tid;
    e.depth = s->n_ranges;
    e.kind = EV_RANGE;
    e.op = e.bw_op = -1;
    snprintf(e.bw, sizeof e.bw, "%s", s->ranges[s->n_ranges].name);
    append(&e);
    return PD_OK;
}

int64_t pdi_now_ns(void) { return now_ns(); }

/* A collective in flight over [t0, t1) (EV_COMM, on the communication
 * track) or a wait for one on the calling thread (EV_WAIT: exposed). */
void pdi_profiler_comm(const char *name, int64_t t0, int64_t t1, double bytes, int exposed)
{
    if (!enabled) return;
    struct tstate *s = tstate();
    if (!s) return;
    struct event e = {0};
    e.ts_ns = t0 - t_begin;
    e.dur_ns = t1 - t0;
    e.tid = exposed ? s->tid : COMM_TID;
    e.depth = s->n_ops;
    e.kind = exposed ? EV_WAIT : EV_COMM;
    e.op = e.bw_op = -1;
    e.bytes = bytes;
    snprintf(e.bw, sizeof e.bw, "%s", name);
    append(&e);
}

/* ---- reports ----------------------------------------------------------- */
static int64_t wall_ns(void) { return (enabled || !t_end ? now_ns() : t_end) - t_begin; }

int pd_profiler_totals(struct pd_profiler_totals *out)
{
    if (!out) return pdi_errorf(PD_ERR_NULL, "pd_profiler_totals: out is NULL");
    if (!epoch) return pdi_errorf(PD_ERR_STATE, "pd_profiler_totals: nothing was profiled");
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&mu);
    for (struct chunk *c = head; c; c = c->next)
        for (int i = 0; i < c->n; i++) {
            const struct event *e = &c->ev[i];
            if (e->kind == EV_COMM || e->kind == EV_WAIT) {
                if (e->kind == EV_WAIT) out->exposed_us += (double)e->dur_ns / 1e3;
                else out->comm_us += (double)e->dur_ns / 1e3, out->comm_bytes += e->bytes;
                continue;
            }
            if (e->kind != EV_OP) continue;
            if (e->depth == 0) out->op_us += (double)e->dur_ns / 1e3;
            out->flops += e->flops;
            out->bytes += e->bytes;
        }
    out->n_events = n_events;
    out->n_dropped = n_dropped;
    pthread_mutex_unlock(&mu);
    out->wall_us = (double)wall_ns() / 1e3;
    out->gap_us = out->wall_us - out->op_us;
    return PD_OK;
}

/* Summary key of an event: "matmul", "matmul.grad:matmul", "[range] step". */
static void row_key(const struct event *e, char *k, size_t n)
{
    if (e->kind == EV_RANGE) snprintf(k, n, "[range] %s", e->bw);
    else if (e->kind == EV_COMM) snprintf(k, n, "[comm] %s", e->bw);
    else if (e->kind == EV_WAIT) snprintf(k, n, "[wait] %s", e->bw);
    else if (e->bw_op >= 0) snprintf(k, n, "%s.grad:%s", pdi_ops[e->bw_op].name, pdi_ops[e->op].name);
    else snprintf(k, n, "%s", pdi_ops[e->op].name);
}

static int cmp_rows(const void *a, const void *b)
{
    const struct pd_profiler_row *x = a, *y = b;
    return x->total_us < y->total_us ? 1 : x->total_us > y->total_us ? -1 : strcmp(x->name, y->name);
}

int pd_profiler_rows(struct pd_profiler_row **rows, int *n_rows)
{
    if (!rows || !n_rows) return pdi_errorf(PD_ERR_NULL, "pd_profiler_rows: NULL output");
    if (!epoch) return pdi_errorf(PD_ERR_STATE, "pd_profiler_rows: nothing was profiled");
    int cap = 64, n = 0;
    struct pd_profiler_row *r = pdi_calloc((size_t)cap, sizeof *r);
    if (!r) return pdi_errorf(PD_ERR_NOMEM, "pd_profiler_rows: out of memory");
    pthread_mutex_lock(&mu);
    for (struct chunk *c = head; c; c = c->next)
        for (int i = 0; i < c->n; i++) {
            const struct event *e = &c->ev[i];
            char key[64];
            row_key(e, key, sizeof key);
            int j = 0;
            while (j < n && strcmp(r[j].name, key)) j++; /* a few hundred keys at most */
            if (j == n) {
                if (n == cap) {
                    struct pd_profiler_row *g = pdi_realloc(r, sizeof *r * (size_t)cap * 2);
                    if (!g) { pthread_mutex_unlock(&mu); free(r); return pdi_errorf(PD_ERR_NOMEM, "pd_profiler_rows: out of memory"); }
                    memset(g + cap, 0, sizeof *r * (size_t)cap);
                    r = g;
                    cap *= 2;
                }
                snprintf(r[n].name, sizeof r[n].name, "%s", key);
                n++;
            }
            r[j].calls++;
            r[j].total_us += (double)e->dur_ns / 1e3;
            r[j].flops += e->flops;
            r[j].bytes += e->bytes;
        }
    pthread_mutex_unlock(&mu);
    double wall = (double)wall_ns() / 1e3;
    for (int j = 0; j < n; j++) {
        r[j].mean_us = r[j].total_us / (double)r[j].calls;
        r[j].gflops_per_s = r[j].total_us > 0 ? r[j].flops / (r[j].total_us * 1e3) : 0;
        r[j].share = wall > 0 ? r[j].total_us / wall : 0;
    }
    qsort(r, (size_t)n, sizeof *r, cmp_rows);
    *rows = r;
    *n_rows = n;
    return PD_OK;
}

char *pd_profiler_summary(int max_rows)
{
    struct pd_profiler_row *r;
    int n;
    struct pd_profiler_totals t;
    if (pd_profiler_rows(&r, &n) || pd_profiler_totals(&t)) return NULL;
    int shown = max_rows > 0 && max_rows < n ? max_rows : n;
    size_t cap = (size_t)(shown + 8) * 120;
    char *s = pdi_malloc(cap);
    if (!s) { free(r); return pdi_error(PD_ERR_NOMEM, "pd_profiler_summary: out of memory"); }
    size_t k = 0;
#define OUT(...) (k += (size_t)snprintf(s + k, cap - k, __VA_ARGS__))
    OUT("%-40s %8s %11s %11s %9s %7s\n", "op", "calls", "total ms", "mean us", "GFLOP/s", "share");
    for (int j = 0; j < shown; j++) {
        char g[16];
        if (r[j].flops > 0) snprintf(g, sizeof g, "%9.1f", r[j].gflops_per_s);
        else snprintf(g, sizeof g, "%9s", "-");
        OUT("%-40.40s %8lld %11.3f %11.2f %s %6.1f%%\n", r[j].name, (long long)r[j].calls, r[j].total_us / 1e3,
            r[j].mean_us, g, 100 * r[j].share);
    }
    if (shown < n) OUT("... %d more rows\n", n - shown);
    OUT("wall %.3f ms = ops %.3f ms (%.1f%%) + gaps %.3f ms; %lld events%s\n", t.wall_us / 1e3, t.op_us / 1e3,
        t.wall_us > 0 ? 100 * t.op_us / t.wall_us : 0.0, t.gap_us / 1e3, (long long)t.n_events,
        t.n_dropped ? " (some dropped: raise PD_PROFILER_MAX_EVENTS)" : "");
#undef OUT
    free(r);
    return s;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

int pd_profiler_write_chrome_trace(const char *path)
{
    if (!path || !*path) return pdi_errorf(PD_ERR_INVALID, "pd_profiler_write_chrome_trace: no path");
    if (!epoch) return pdi_errorf(PD_ERR_STATE, "pd_profiler_write_chrome_trace: nothing was profiled");
    struct pdi_wfile w; /* atomic: a temporary, fsync, rename (src/io/file.h) */
    FILE *f = pdi_wfile_begin(&w, path, "pd_profiler_write_chrome_trace");
    if (!f) return pd_last_status();
    int pid = (int)getpid(), first = 1;
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    pthread_mutex_lock(&mu);
    for (int t = 0; t < next_tid; t++) {
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"paddle.c thread %d\"}}",
                first ? "" : ",\n", pid, t, t);
        first = 0;
    }
    fprintf(f, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"communication\"}}",
            first ? "" : ",\n", pid, COMM_TID);
    first = 0;
    for (struct chunk *c = head; c; c = c->next)
        for (int i = 0; i < c->n; i++) {
            const struct event *e = &c->ev[i];
            static const char *const cat[] = {"forward", "range", "communication", "communication wait"};
            fprintf(f, "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", first ? "" : ",\n",
                    e->kind != EV_OP ? cat[e->kind] : e->bw_op >= 0 ? "backward" : "forward");
            first = 0;
            char name[2 * PDI_NAME_BUF], shapes[512];
            event_name(e, name, sizeof name);
            json_str(f, e->kind != EV_OP ? e->bw : pdi_ops[e->op].name);
            fprintf(f, ",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", (double)e->ts_ns / 1e3,
                    (double)e->dur_ns / 1e3, pid, e->tid);
            json_str(f, name);
            if (e->kind == EV_COMM || e->kind == EV_WAIT) fprintf(f, ",\"bytes\":%.0f", e->bytes);
            if (e->kind == EV_OP) {
                shapes_str(e, shapes, sizeof shapes);
                fprintf(f, ",\"shapes\":");
                json_str(f, shapes);
                if (e->flops > 0) fprintf(f, ",\"flops\":%.0f", e->flops);
                fprintf(f, ",\"bytes\":%.0f", e->bytes);
                if (e->site) {
                    fprintf(f, ",\"site\":");
                    json_str(f, e->site);
                }
            }
            fprintf(f, "}}");
        }
    pthread_mutex_unlock(&mu);
    fprintf(f, "\n]}\n");
    return pdi_wfile_commit(&w);
}
