/* paddle.c — the one dispatcher (docs/design.md §1) and the op table (the
 * kernel table and the backends are in src/core/backend.c).
 *
 * pdi_dispatch runs, in order: check + infer meta, autocast, distribute,
 * execute, record autograd, observe. A call with a distributed input
 * leaves here for the distribute stage (src/dist/spmd.c), which infers on
 * global shapes, reshards the inputs its op's SPMD rule asks for, runs the
 * local call through the dispatcher again and records autograd on the
 * distributed tensors; a program that never makes one pays one predictable
 * branch. Autocast and the executor are
 * per-thread modes (core/modes.c): stage 2 runs only while autocast is on,
 * and stage 4 is the thread's executor: the eager one below (`run`,
 * called directly when no other is pushed) or a plugged one such as the
 * meta executor (exec_meta.c). Stages 5 and 6 run here for every call,
 * whichever executor made its outputs. Outputs join the current scope only
 * after every stage succeeded, so a failure leaks nothing.
 *
 * Debug tools (src/debug/) cost one predictable branch per op when off:
 * pdi_debug_flags and n_before are zero, and naming is a counter bump plus
 * four stores per output (the strings are built only when asked for).
 * Failed calls prefix the error with the call's name ("matmul_12: ...").
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pd/amp.h"

#define AMP_FOLLOW PD_AUTOCAST_FOLLOW
#define AMP_LOWER PD_AUTOCAST_LOWER
#define AMP_F32 PD_AUTOCAST_F32
const struct pdi_opdef pdi_ops[PD_OP_COUNT] = {
#define PD_OP(name, kind, n_in, n_out, flags, attrs, amp, dtypes, ident, infer, vjp, spmd, decomp)        \
    [PD_OP_##name] = {#name, PDI_KIND_##kind, n_in, n_out, flags, PDI_AS_##attrs, amp, PDI_DTC_##dtypes, \
                      PDI_##ident, infer, vjp, spmd, decomp},
#include "ops/ops.def"
#undef PD_OP
};
#undef AMP_FOLLOW
#undef AMP_LOWER
#undef AMP_F32

const char *pdi_op_name(enum pd_op op) { return (unsigned)op < PD_OP_COUNT ? pdi_ops[op].name : "?"; }
unsigned pdi_op_dtypes(enum pd_op op) { return (unsigned)op < PD_OP_COUNT ? pdi_ops[op].dtypes : 0u; }

int pdi_decomp_absent(const struct pdi_call *c, struct pd_tensor **out)
{
    PDI_UNUSED(out);
    return pdi_errorf(PD_ERR_UNSUPPORTED, "%s is a primitive: it has no decomposition", pdi_ops[c->op].name);
}

int pdi_vjp_none(struct pdi_node *n, struct pd_tensor *const *gout, struct pd_tensor **gin)
{
    PDI_UNUSED(gout);
    PDI_UNUSED(gin);
    return pdi_errorf(PD_ERR_STATE, "%s is not differentiable", pdi_ops[n->op].name);
}

/* ---- observers -------------------------------------------------------- */
#define MAX_OBSERVERS 16
static struct {
    pdi_observer_fn before, after;
    void *ctx;
} observers[MAX_OBSERVERS];
static int n_observers, n_before;
static PDI_TLS uint64_t op_seq;
/* Any debug tool on (names.c, callsite.c, anomaly.c, log.c, graph.c): the
 * dispatcher tests this once per op and takes the slow path only if set. */
unsigned pdi_debug_flags;

void pdi_debug_flag_set(unsigned bit, int on)
{
    if (on) __atomic_or_fetch(&pdi_debug_flags, bit, __ATOMIC_RELAXED);
    else __atomic_and_fetch(&pdi_debug_flags, ~bit, __ATOMIC_RELAXED);
}

int pdi_observer_add_ex(pdi_observer_fn before, pdi_observer_fn after, void *ctx)
{
    if (!before && !after) return pdi_errorf(PD_ERR_INVALID, "observer: both callbacks are NULL");
    if (n_observers == MAX_OBSERVERS) return pdi_errorf(PD_ERR_INVALID, "too many observers (max %d)", MAX_OBSERVERS);
    observers[n_observers].before = before;
    observers[n_observers].after = after;
    observers[n_observers].ctx = ctx;
    n_observers++;
    if (before) n_before++;
    return PD_OK;
}

int pdi_observer_add(pdi_observer_fn fn, void *ctx) { return pdi_observer_add_ex(NULL, fn, ctx); }

void pdi_observer_remove_ex(pdi_observer_fn before, pdi_observer_fn after, void *ctx)
{
    for (int i = 0; i < n_observers; i++) {
        if (observers[i].before == before && observers[i].after == after && observers[i].ctx == ctx) {
            if (observers[i].before) n_before--;
            memmove(&observers[i], &observers[i + 1], sizeof observers[0] * (size_t)(n_observers - i - 1));
            n_observers--;
            return;
        }
    }
}

void pdi_observer_remove(pdi_observer_fn fn, void *ctx) { pdi_observer_remove_ex(NULL, fn, ctx); }

static void observe_before(struct pdi_call *c)
{
    c->before_seen = 1;
    for (int i = 0; i < n_observers; i++)
        if (observers[i].before) observers[i].before(c, op_seq + 1, observers[i].ctx);
}

uint64_t pdi_op_seq(void) { return op_seq; }

/* ---- infer helpers --------------------------------------------------- */
void pdi_meta_of(const struct pd_tensor *t, struct pdi_meta *m)
{
    m->dtype = t->dtype;
    m->ndim = t->ndim;
    memcpy(m->shape, t->shape, sizeof m->shape);
    memcpy(m->strides, t->strides, sizeof m->strides);
    m->offset = t->offset;
}

int pdi_infer_same(struct pdi_call *c)
{
    pdi_meta_of(c->in[0], &c->meta[0]);
    return PD_OK;
}

int pdi_broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out, int *nout)
{
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : a[i - (n - na)];
        int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1) return -1;
        out[i] = da == 1 ? db : da;
    }
    *nout = n;
    return 0;
}

/* Shapes only: the out dtype is in[0]'s. Families check dtypes first
 * (see pdi_infer_binary). */
int pdi_infer_broadcast(struct pdi_call *c)
{
    int64_t shape[PD_MAX_DIMS];
    int nd = c->in[0]->ndim;
    memcpy(shape, c->in[0]->shape, sizeof shape);
    for (int i = 1; i < c->n_in; i++) {
        int64_t tmp[PD_MAX_DIMS];
        int nt;
        if (pdi_broadcast_shapes(shape, nd, c->in[i]->shape, c->in[i]->ndim, tmp, &nt)) {
            char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
            return pdi_errorf(PD_ERR_INVALID, "%s: shapes %s and %s do not broadcast", pdi_ops[c->op].name,
                              pdi_shape_str(c->in[0]->shape, c->in[0]->ndim, b0, sizeof b0),
                              pdi_shape_str(c->in[i]->shape, c->in[i]->ndim, b1, sizeof b1));
        }
        memcpy(shape, tmp, sizeof shape);
        nd = nt;
    }
    int rc = pdi_check_shape(pdi_ops[c->op].name, shape, nd);
    if (rc) return rc;
    struct pdi_meta *m = &c->meta[0];
    m->dtype = c->in[0]->dtype;
    m->ndim = nd;
    memcpy(m->shape, shape, sizeof shape);
    return PD_OK;
}

int pdi_axes_mask(const struct pdi_call *c, const struct pd_tensor *x, unsigned *mask)
{
    const struct pdi_ints *l = &c->a.reduce.axes;
    *mask = 0;
    if (l->n < 0 || l->n > PDI_MAX_ATTR_INTS)
        return pdi_errorf(PD_ERR_INVALID, "%s: %lld axes given (at most %d)", pdi_ops[c->op].name, (long long)l->n,
                          PDI_MAX_ATTR_INTS);
    if (l->n == 0) {
        *mask = x->ndim ? (1u << x->ndim) - 1 : 0;
        return PD_OK;
    }
    for (int i = 0; i < l->n; i++) {
        int ax = pdi_norm_axis64(l->v[i], x->ndim);
        if (ax < 0 || (x->ndim == 0 && l->v[i] != 0 && l->v[i] != -1))
            return pdi_errorf(PD_ERR_INVALID, "%s: axis %lld out of range for a %d-d tensor", pdi_ops[c->op].name,
                              (long long)l->v[i], x->ndim);
        if (x->ndim == 0) {
            /* no bit to set: 0 and -1 name the one axis, given once */
            if (i > 0) return pdi_errorf(PD_ERR_INVALID, "%s: axis %d repeated", pdi_ops[c->op].name, ax);
            continue;
        }
        if (*mask & (1u << ax))
            return pdi_errorf(PD_ERR_INVALID, "%s: axis %d repeated", pdi_ops[c->op].name, ax);
        *mask |= 1u << ax;
    }
    return PD_OK;
}

/* ---- the dispatcher -------------------------------------------------- */
#define MAX_OUT 4

static void release_outs(struct pdi_call *c)
{
    for (int j = 0; j < c->n_out; j++) {
        if (!(c->inplace && j == 0)) pd_tensor_release(c->out[j]);
        c->out[j] = NULL;
    }
}

/* A kernel must not see a meta input (or write into a meta tensor): its
 * data pointer is NULL. Off the fast path: called only when a storage has
 * no data. */
static int meta_operand(const struct pdi_call *c, int i)
{
    return pdi_errorf(PD_ERR_INVALID, "%s: input %d is a meta tensor (no data): the eager executor cannot run a "
                      "kernel on it (run the op under pd_meta_begin, or give it real tensors)", pdi_ops[c->op].name, i);
}

/* Stage 4, the eager executor: allocate the outputs and run the kernel.
 * Inlined into dispatch (the fast path) and wrapped as pdi_exec_eager. */
static inline __attribute__((always_inline)) int run(struct pdi_call *c)
{
    const struct pdi_opdef *d = &pdi_ops[c->op];
    if (d->kind == PDI_KIND_VIEW) { /* no kernel: a view of a meta tensor is meta */
        struct pdi_meta *m = &c->meta[0];
        c->out[0] = pdi_tensor_alias(c->in[0], m->shape, m->strides, m->ndim, m->offset);
        if (!c->out[0]) return PD_ERR_NOMEM;
        if (__builtin_expect(n_before != 0, 0)) observe_before(c);
        return PD_OK;
    }
    for (int i = 0; i < c->n_in; i++)
        if (__builtin_expect(c->in[i]->st->data == NULL, 0) && c->in[i]->st->meta) return meta_operand(c, i);
    /* the kernel is chosen by the first data input's dtype; its backend's
     * allocator makes the outputs and the kernel's scratch */
    enum pd_dtype key = c->n_in ? c->in[(d->flags & PDI_F_KEY_IN1) ? 1 : 0]->dtype : c->meta[0].dtype;
    const struct pdi_kentry *ke = pdi_kernel_find(c->op, key);
    pdi_kernel_fn fn = ke->fn;
    if (!fn) return pdi_kernel_missing(c->op, key);
    int be = ke->backend;
    const struct pd_allocator *alloc = pdi_backend_allocator(be);
    for (int j = 0; j < c->n_out; j++) {
        if (c->inplace && j == 0) {
            c->out[0] = c->in[0];
            continue;
        }
        c->out[j] = pdi_tensor_new_on(c->meta[j].shape, c->meta[j].ndim, c->meta[j].dtype, be, alloc);
        if (!c->out[j]) { release_outs(c); return pd_last_status(); }
    }
    struct pd_kview inv_small[8], outv[MAX_OUT];
    struct pd_kview *inv = c->n_in <= 8 ? inv_small : pdi_malloc(sizeof *inv * (size_t)c->n_in);
    if (!inv) { release_outs(c); return pdi_errorf(PD_ERR_NOMEM, "out of memory"); }
    for (int j = 0; j < c->n_out; j++) pdi_kview_of(c->out[j], &outv[j]);
    for (int i = 0; i < c->n_in; i++) {
        pdi_kview_of(c->in[i], &inv[i]);
        if (d->kind == PDI_KIND_BROADCAST) {
            /* Expand to the out shape: aligned right, stride 0 where broadcast. */
            struct pd_kview e = inv[i];
            int nd = outv[0].ndim, sh = nd - inv[i].ndim;
            e.ndim = nd;
            for (int k = 0; k < nd; k++) {
                int src = k - sh;
                e.shape[k] = outv[0].shape[k];
                e.strides[k] = (src < 0 || inv[i].shape[src] == 1) ? 0 : inv[i].strides[src];
            }
            inv[i] = e;
        }
    }
    struct pdi_kcall k = {c->op, c->n_in, c->n_out, inv, outv, &c->a, alloc, be};
    if (__builtin_expect(n_before != 0, 0)) observe_before(c);
    int rc = fn(&k);
    if (inv != inv_small) free(inv);
    if (rc) {
        release_outs(c);
        if (pd_last_status() == 0) pdi_errorf(rc, "%s: kernel failed", d->name);
        return rc;
    }
    return PD_OK;
}

static int eager_run(struct pdi_call *c, void *ctx)
{
    PDI_UNUSED(ctx);
    return run(c);
}

const struct pdi_executor pdi_exec_eager = {PDI_EXECUTOR_ABI, "eager", eager_run, NULL, NULL};

/* Stage 4 through a plugged executor: the `before` observers see its call
 * once it made the outputs, unless it ran the eager executor on it (which
 * calls them between allocation and kernel). */
static int run_plugged(struct pdi_call *c)
{
    int rc = pdi_modes.exec->run(c, pdi_modes.exec_ctx);
    if (rc) return rc;
    if (__builtin_expect(n_before != 0, 0) && !c->before_seen) observe_before(c);
    return PD_OK;
}

/* Debug tools after the kernel (and autograd) ran: logs, anomaly check,
 * graph capture. A non-zero return fails the op. */
static int debug_after(struct pdi_call *c)
{
    unsigned f = pdi_debug_flags;
    if ((f & PDI_DBG_LOG) && pdi_log_enabled("dispatch", 3)) {
        const char *site = pdi_call_site(c);
        const char *bw = pdi_backward_node_name();
        char nb[PDI_NAME_BUF];
        snprintf(nb, sizeof nb, "%s", pdi_call_name(c));
        char at[512];
        pdi_attrs_format(c->op, &c->a, at, sizeof at); /* rms_norm(n_norm_axes=1, eps=1e-05, ...) */
        pdi_log("dispatch", 3, "%s %s%s%s%s%s", nb, at, bw ? " in " : "", bw ? bw : "", site ? " at " : "",
                site ? site : "");
        if (pdi_log_enabled("dispatch", 4)) {
            for (int i = 0; i < c->n_in; i++) {
                char b[PDI_SHAPE_BUF], tn[PDI_NAME_BUF];
                pdi_log("dispatch", 4, "%s   in%d %s %s %s", nb, i, pdi_tensor_name_buf(c->in[i], tn, sizeof tn),
                        pd_dtype_name(c->in[i]->dtype), pdi_shape_str(c->in[i]->shape, c->in[i]->ndim, b, sizeof b));
            }
            for (int j = 0; j < c->n_out; j++) {
                char b[PDI_SHAPE_BUF], tn[PDI_NAME_BUF];
                pdi_log("dispatch", 4, "%s   out%d %s %s %s", nb, j, pdi_tensor_name_buf(c->out[j], tn, sizeof tn),
                        pd_dtype_name(c->out[j]->dtype), pdi_shape_str(c->out[j]->shape, c->out[j]->ndim, b, sizeof b));
            }
        }
    }
    if (f & PDI_DBG_ANOMALY) {
        int rc = pdi_anomaly_check(c);
        if (rc) return rc;
    }
    if (f & PDI_DBG_GRAPH) pdi_graph_record(c);
    return PD_OK;
}

void pdi_name_outputs(struct pdi_call *c)
{
    for (int j = 0; j < c->n_out; j++) {
        if (c->inplace && j == 0) continue;
        struct pd_tensor *o = c->out[j];
        o->dbg_scope = c->dbg_scope;
        o->dbg_n = c->dbg_n;
        o->dbg_op = (int16_t)c->op;
        o->dbg_out = (uint8_t)j;
    }
}

/* Written inputs changed: graphs that saved them must notice. */
static void bump_written(struct pdi_call *c)
{
    for (int i = 0; i < c->n_writes; i++) c->in[i]->st->version++;
}

static int dispatch(struct pdi_call *c)
{
    const struct pdi_opdef *d = &pdi_ops[c->op];

    /* 1. check and infer meta */
    struct pdi_meta meta[MAX_OUT];
    memset(meta, 0, sizeof meta[0] * (size_t)c->n_out);
    c->meta = meta;
    c->n_writes = 0;
    /* every attribute in its declared range (one branch for ops without) */
    if (d->attrs != PDI_AS_none) {
        int rc = pdi_attrs_check(c);
        if (rc) return rc;
    }
    int rc = d->infer(c);
    if (rc) return rc;
    if (__builtin_expect(c->n_writes != 0, 0) &&
        (c->n_writes < 0 || c->n_writes > c->n_in || !(d->flags & PDI_F_INPLACE)))
        return pdi_errorf(PD_ERR_STATE, "%s: infer declared %d written inputs of %d", d->name, c->n_writes, c->n_in);
    if (d->kind == PDI_KIND_VIEW) {
        /* a view has no allocation to check its shape: the same limit as a
         * new tensor's (an expand of a scalar to [2^32]^3 would wrap numel) */
        rc = pdi_check_shape(d->name, meta[0].shape, meta[0].ndim);
        if (rc) return rc;
    }
    if (c->inplace && (d->kind == PDI_KIND_VIEW || c->n_out < 1))
        return pdi_errorf(PD_ERR_INVALID, "%s: cannot run in place (a view, or no output)", d->name);
    if (c->inplace && !c->n_writes) c->n_writes = 1;
    for (int i = 0; i < c->n_writes; i++) {
        /* threads would race on (and the op would apply twice to) an element
         * two indices reach */
        if (__builtin_expect(pdi_self_overlaps(c->in[i]), 0)) {
            char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
            return pdi_errorf(PD_ERR_INVALID,
                              "%s: cannot write in place into input %d of shape %s and strides %s: "
                              "some of its elements overlap (an expanded view); write into a contiguous copy",
                              d->name, i, pdi_shape_str(c->in[i]->shape, c->in[i]->ndim, b0, sizeof b0),
                              pdi_shape_str(c->in[i]->strides, c->in[i]->ndim, b1, sizeof b1));
        }
    }
    if (c->inplace) {
        const struct pd_tensor *x = c->in[0];
        if (meta[0].ndim != x->ndim || memcmp(meta[0].shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) ||
            meta[0].dtype != x->dtype) {
            char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
            return pdi_errorf(PD_ERR_INVALID, "%s_: result %s %s cannot be written into %s %s in place", d->name,
                              pdi_shape_str(meta[0].shape, meta[0].ndim, b0, sizeof b0), pd_dtype_name(meta[0].dtype),
                              pdi_shape_str(x->shape, x->ndim, b1, sizeof b1), pd_dtype_name(x->dtype));
        }
    }

    /* 2. autocast: may rewrite the call and dispatch it again (then the
     * nested dispatch did stages 4-6). Stage 3 (distribute) ran before this
     * function: see pdi_dispatch; a distributed call is cast there
     * (src/dist/spmd.c). */
    if (__builtin_expect(pdi_modes.autocast >= 0, 0)) {
        rc = pdi_autocast_stage(c);
        if (rc < 0) return rc;
        if (rc == 1) return PD_OK;
    }

    /* 4. execute: the thread's executor (eager unless one was pushed) */
    rc = __builtin_expect(pdi_modes.exec == NULL, 1) ? run(c) : run_plugged(c);
    if (rc) return rc;

    /* 5. record autograd */
    if (!c->inplace && !(d->flags & PDI_F_NONDIFF) && pdi_grad_enabled()) {
        rc = pdi_autograd_record(c);
        if (rc) { release_outs(c); return rc; }
    }

    /* 6. observe: name the outputs, run the debug tools, feed observers */
    pdi_name_outputs(c);
    if (__builtin_expect(pdi_debug_flags != 0, 0)) {
        rc = debug_after(c);
        if (rc) {
            bump_written(c); /* the write happened: saved copies must notice */
            release_outs(c);
            return rc;
        }
    }
    op_seq++;
    for (int i = 0; i < n_observers; i++)
        if (observers[i].after) observers[i].after(c, op_seq, observers[i].ctx);
    bump_written(c);
    for (int j = 0; j < c->n_out; j++) {
        if (c->inplace && j == 0) continue;
        if (!pdi_scope_add(c->out[j])) {
            for (int k = j + 1; k < c->n_out; k++) pd_tensor_release(c->out[k]);
            return PD_ERR_NOMEM;
        }
    }
    return PD_OK;
}

int pdi_dispatch(struct pdi_call *c)
{
    const struct pdi_opdef *d = &pdi_ops[c->op];
    pdi_kernels_init();
    for (int j = 0; j < c->n_out; j++) c->out[j] = NULL;
    for (int i = 0; i < c->n_in; i++)
        if (!c->in[i]) return PD_ERR_NULL; /* keep the earlier op's message */
    if (!(d->flags & PDI_F_VARIADIC) && (c->n_in != d->n_in || c->n_out != d->n_out))
        return pdi_errorf(PD_ERR_INVALID, "%s: expected %d inputs and %d outputs, got %d and %d", d->name, d->n_in,
                          d->n_out, c->n_in, c->n_out);
    if (c->n_out > MAX_OUT) return pdi_errorf(PD_ERR_INVALID, "%s: too many outputs", d->name);
    /* Every call gets its name (a counter bump); the call site only when
     * capture is on (a backtrace costs microseconds). */
    pdi_name_call(c);
    if (__builtin_expect((pdi_debug_flags & PDI_DBG_CALLSITE) != 0, 0)) c->dbg_site = pdi_capture_site();
    /* 3. distribute (before the rest: infer sees global shapes, kernels
     * local pieces): a call with a distributed input goes to src/dist,
     * which runs the local call through here again. */
    int rc = __builtin_expect(pdi_dist_hooks != NULL, 0) && pdi_call_has_dist(c) ? pdi_dist_hooks->call(c) : dispatch(c);
    if (__builtin_expect(rc != 0, 0) && rc != PD_ERR_NULL && pd_last_status()) {
        /* "matmul_12: matmul: ..." — the op's name first, so the message
         * can be matched with logs, graphs and checksum files. */
        pdi_error_prefix(pdi_call_name(c));
        const char *site = pdi_call_site(c);
        if (site && !strstr(pd_last_error(), site)) pdi_error_append("[at %s]", site);
    }
    return rc;
}

struct pd_tensor *pdi_calln(enum pd_op op, struct pd_tensor *const *in, int n_in, const struct pdi_attrs *a)
{
    struct pd_tensor *out[MAX_OUT];
    struct pdi_call c = {.op = op, .n_in = n_in, .n_out = 1, .in = in, .out = out};
    if (a) c.a = *a;
    return pdi_dispatch(&c) ? NULL : out[0];
}

struct pd_tensor *pdi_call1(enum pd_op op, struct pd_tensor *x, const struct pdi_attrs *a)
{
    struct pd_tensor *in[1] = {x};
    return pdi_calln(op, in, 1, a);
}

struct pd_tensor *pdi_call2(enum pd_op op, struct pd_tensor *x, struct pd_tensor *y, const struct pdi_attrs *a)
{
    struct pd_tensor *in[2] = {x, y};
    return pdi_calln(op, in, 2, a);
}
