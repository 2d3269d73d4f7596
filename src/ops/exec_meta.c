/* paddle.c — the meta executor (include/pd/meta.h): stage 4 without data.
 *
 * Under pd_meta_begin the dispatcher still checks and infers every call,
 * runs autocast, records autograd and feeds observers; only the execution is
 * replaced: outputs are meta tensors of the inferred metas (no allocation,
 * no kernel). Views alias their input as in eager mode (a view of a meta
 * tensor shares its meta storage). A call may write (its written set,
 * pdi_call.n_writes: in-place ops, optimizer updates) only into meta
 * tensors: writing a tensor that has data would silently skip the write.
 *
 * Each session (one per begin, the mode's ctx) appends a record per call
 * and tracks the live bytes of meta storages (core/meta.c counts them at
 * creation and free, process-wide); the session resets the global peak at
 * begin and restores the outer high-water mark at end, so nested sessions
 * each see their own peak.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pd/meta.h"

struct session {
    struct pd_meta_report *r;
    int64_t cap_ops;
    int64_t outer_peak; /* the global peak before this session */
};

static int add_record(struct session *s, const struct pdi_call *c)
{
    struct pd_meta_report *r = s->r;
    if (r->n_ops == s->cap_ops) {
        int64_t nc = s->cap_ops ? s->cap_ops * 2 : 256;
        struct pd_meta_op *no = pdi_realloc(r->ops, sizeof *no * (size_t)nc);
        if (!no) return pdi_errorf(PD_ERR_NOMEM, "meta executor: out of memory (report)");
        r->ops = no;
        s->cap_ops = nc;
    }
    struct pd_meta_op *o = &r->ops[r->n_ops++];
    snprintf(o->name, sizeof o->name, "%s", pdi_call_name(c));
    o->op = pdi_ops[c->op].name;
    o->n_out = c->n_out < PD_META_MAX_OUT ? c->n_out : PD_META_MAX_OUT;
    for (int j = 0; j < o->n_out; j++) {
        const struct pd_tensor *t = c->out[j];
        o->out[j].dtype = t->dtype;
        o->out[j].ndim = t->ndim;
        memset(o->out[j].shape, 0, sizeof o->out[j].shape);
        memcpy(o->out[j].shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    }
    pdi_meta_bytes(&o->live_bytes, NULL);
    return PD_OK;
}

static void release_made(struct pdi_call *c)
{
    for (int j = 0; j < c->n_out; j++) {
        if (!(c->inplace && j == 0)) pd_tensor_release(c->out[j]);
        c->out[j] = NULL;
    }
}

static int meta_run(struct pdi_call *c, void *ctx)
{
    struct session *s = ctx;
    const struct pdi_opdef *d = &pdi_ops[c->op];
    for (int i = 0; i < c->n_writes; i++) /* the written set (in-place calls, optimizer updates) */
        if (!pdi_is_meta(c->in[i]))
            return pdi_errorf(PD_ERR_INVALID,
                              "%s%s: under the meta executor an op writes only into meta tensors; input %d has data "
                              "(make it with pd_meta_empty or under pd_meta_begin)",
                              d->name, c->inplace ? "_" : "", i);
    if (d->kind == PDI_KIND_VIEW) {
        const struct pdi_meta *m = &c->meta[0];
        c->out[0] = pdi_tensor_alias(c->in[0], m->shape, m->strides, m->ndim, m->offset);
        if (!c->out[0]) return PD_ERR_NOMEM;
    } else {
        for (int j = 0; j < c->n_out; j++) {
            if (c->inplace && j == 0) {
                c->out[0] = c->in[0];
                continue;
            }
            c->out[j] = pdi_tensor_new_meta(c->meta[j].shape, c->meta[j].ndim, c->meta[j].dtype);
            if (!c->out[j]) {
                release_made(c);
                return pd_last_status();
            }
            s->r->made_bytes += (int64_t)c->out[j]->st->nbytes;
        }
    }
    int rc = add_record(s, c);
    if (rc) release_made(c);
    return rc;
}

static const struct pdi_executor meta_exec = {PDI_EXECUTOR_ABI, "meta", meta_run, NULL, NULL};

int pd_meta_begin(void)
{
    struct session *s = pdi_calloc(1, sizeof *s);
    if (s) s->r = pdi_calloc(1, sizeof *s->r);
    if (!s || !s->r) {
        if (s) free(s);
        return pdi_errorf(PD_ERR_NOMEM, "meta_begin: out of memory");
    }
    int64_t live;
    pdi_meta_bytes(&live, &s->outer_peak);
    int tok = pdi_executor_begin(&meta_exec, s);
    if (tok < 0) {
        free(s->r);
        free(s);
        return tok;
    }
    s->r->start_bytes = live;
    pdi_meta_peak_set(live);
    return tok;
}

int pd_meta_end(int token, struct pd_meta_report **report)
{
    if (report) *report = NULL;
    void *ctx;
    if (pdi_executor_current(&ctx) != &meta_exec)
        return pdi_errorf(PD_ERR_STATE, "meta_end: token %d: the thread's executor is %s, not a meta session", token,
                          pdi_executor_current(NULL)->name);
    int rc = pdi_executor_end(token);
    if (rc) return rc;
    struct session *s = ctx;
    struct pd_meta_report *r = s->r;
    int64_t peak;
    pdi_meta_bytes(&r->end_bytes, &peak);
    r->peak_bytes = peak;
    r->peak_delta_bytes = peak - r->start_bytes;
    pdi_meta_peak_set(peak > s->outer_peak ? peak : s->outer_peak);
    free(s);
    if (report)
        *report = r;
    else
        pd_meta_report_destroy(r);
    return PD_OK;
}

void pd_meta_report_destroy(struct pd_meta_report *r)
{
    if (!r) return;
    free(r->ops);
    free(r);
}

int pd_tensor_is_meta(const struct pd_tensor *t) { return t && t->st->meta; }

struct pd_tensor *pd_meta_empty(const int64_t *shape, int ndim, enum pd_dtype dt)
{
    return pdi_scope_add(pdi_tensor_new_meta(shape, ndim, dt));
}

/* ---- summary ------------------------------------------------------------ */
struct text {
    char *s;
    size_t n, cap;
    int oom;
};

static void put(struct text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *b, const char *fmt, ...)
{
    if (b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if (b->n + (size_t)k + 1 > b->cap) {
        size_t nc = (b->cap + (size_t)k + 1) * 2;
        char *ns = pdi_realloc(b->s, nc);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = nc;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

char *pd_meta_report_summary(const struct pd_meta_report *r, int64_t max_ops)
{
    struct text b = {0};
    if (!r)
        put(&b, "meta report: (none)\n");
    else {
        put(&b, "meta report: %lld ops; live meta bytes: start %lld, peak %lld (+%lld), end %lld; made %lld\n",
            (long long)r->n_ops, (long long)r->start_bytes, (long long)r->peak_bytes, (long long)r->peak_delta_bytes,
            (long long)r->end_bytes, (long long)r->made_bytes);
        int64_t n = max_ops < 0 || max_ops > r->n_ops ? r->n_ops : max_ops;
        for (int64_t i = 0; i < n; i++) {
            const struct pd_meta_op *o = &r->ops[i];
            put(&b, "  %-48s", o->name);
            for (int j = 0; j < o->n_out; j++) {
                char sh[PDI_SHAPE_BUF];
                put(&b, " %s%s %s", j ? ", " : "-> ", pd_dtype_name(o->out[j].dtype),
                    pdi_shape_str(o->out[j].shape, o->out[j].ndim, sh, sizeof sh));
            }
            put(&b, "  (live %lld)\n", (long long)o->live_bytes);
        }
        if (n < r->n_ops) put(&b, "  ... %lld more\n", (long long)(r->n_ops - n));
    }
    if (b.oom) {
        free(b.s);
        return pdi_error(PD_ERR_NOMEM, "meta report: out of memory");
    }
    return b.s;
}
