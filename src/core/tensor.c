/* paddle.c — tensors, storages and scopes.
 *
 * Invariants:
 *   - t->refcount counts every owner: the creating scope (if any), nodes that
 *     saved it, .grad fields, the user after pd_keep outside all scopes.
 *   - a storage is freed when its last tensor goes; views share it.
 *   - shape/strides beyond ndim are unused; a 0-d tensor has numel 1.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static int64_t live_tensors;
void (*pdi_tensor_grad_fn_release)(struct pdi_node *);
void (*pdi_tensor_dist_release)(void *dist);
static uint64_t next_id;

int64_t pd_live_tensors(void) { return __atomic_load_n(&live_tensors, __ATOMIC_RELAXED); }

int64_t pdi_numel(const int64_t *shape, int ndim)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

void pdi_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides)
{
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

/* A 0-d tensor accepts axis 0 and -1 (as PyTorch does). */
int pdi_norm_axis(int axis, int ndim)
{
    int n = ndim ? ndim : 1;
    int a = axis < 0 ? axis + n : axis;
    return (a < 0 || a >= n) ? -1 : a;
}

/* Freed tensor handles and storage structs are kept on small thread-local
 * lists: eager mode creates and frees a handle per op, and malloc/free of
 * these small structs was a visible share of dispatch time. */
#ifdef PD_SANITIZE
#define FREELIST_MAX 0 /* let AddressSanitizer see every use after free */
#else
#define FREELIST_MAX 256
#endif
struct freelist {
    void *head;
    int n;
};
static PDI_TLS struct freelist free_tensors, free_storages, free_dists;

static void *fl_get(struct freelist *fl, size_t size)
{
    void *p = fl->head;
    if (!p) return pdi_calloc(1, size);
    fl->head = *(void **)p;
    fl->n--;
    memset(p, 0, size);
    return p;
}

/* A thread's lists are freed when it exits (a key's destructor), so a
 * program that starts and ends threads does not leak them. */
static pthread_key_t fl_key;
static pthread_once_t fl_once = PTHREAD_ONCE_INIT;
static PDI_TLS int fl_keyed;

static void fl_drain(void *unused)
{
    struct freelist *lists[3] = {&free_tensors, &free_storages, &free_dists};
    for (int i = 0; i < 3; i++) {
        while (lists[i]->head) {
            void *p = lists[i]->head;
            lists[i]->head = *(void **)p;
            free(p);
        }
        lists[i]->n = 0;
    }
    fl_keyed = 0; /* a later put (another key's destructor) keys the thread again */
}

static void fl_key_make(void) { pthread_key_create(&fl_key, fl_drain); }

static void fl_put(struct freelist *fl, void *p)
{
    if (fl->n >= FREELIST_MAX) { free(p); return; }
    if (!fl_keyed) {
        pthread_once(&fl_once, fl_key_make);
        pthread_setspecific(fl_key, &fl_keyed); /* any non-NULL value: the destructor runs */
        fl_keyed = 1;
    }
    *(void **)p = fl->head;
    fl->head = p;
    fl->n++;
}

/* struct pdi_dist from the same per-thread lists (src/dist makes one per
 * distributed op's output) */
struct pdi_dist *pdi_dist_new(void) { return fl_get(&free_dists, sizeof(struct pdi_dist)); }
void pdi_dist_delete(struct pdi_dist *d) { if (d) fl_put(&free_dists, d); }

/* ---- live-storage registry ------------------------------------------- */
/* A circular list through a sentinel, under one lock that only tracked
 * storages take (the registry is a debugging aid; eager mode never pays
 * for it beyond the tests of track_on and st->serial). */
static int track_on;
static uint64_t next_serial = 1;
static struct pdi_storage live_head = {.live_prev = &live_head, .live_next = &live_head};
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;

void pdi_storage_track_begin(void) { __atomic_add_fetch(&track_on, 1, __ATOMIC_RELAXED); }
void pdi_storage_track_end(void)
{
    if (__atomic_sub_fetch(&track_on, 1, __ATOMIC_RELAXED) < 0) __atomic_store_n(&track_on, 0, __ATOMIC_RELAXED);
}

uint64_t pdi_storage_serial_next(void)
{
    pthread_mutex_lock(&live_mu);
    uint64_t s = next_serial;
    pthread_mutex_unlock(&live_mu);
    return s;
}

static void storage_link(struct pdi_storage *st)
{
    pthread_mutex_lock(&live_mu);
    st->serial = next_serial++;
    st->live_prev = live_head.live_prev;
    st->live_next = &live_head;
    live_head.live_prev->live_next = st;
    live_head.live_prev = st;
    pthread_mutex_unlock(&live_mu);
}

static void storage_unlink(struct pdi_storage *st)
{
    pthread_mutex_lock(&live_mu);
    st->live_prev->live_next = st->live_next;
    st->live_next->live_prev = st->live_prev;
    st->serial = 0;
    pthread_mutex_unlock(&live_mu);
}

int64_t pdi_storage_foreach(pdi_storage_fn fn, void *ctx)
{
    int64_t n = 0;
    pthread_mutex_lock(&live_mu);
    for (struct pdi_storage *st = live_head.live_next; st != &live_head; st = st->live_next, n++)
        if (fn) fn(st, ctx);
    pthread_mutex_unlock(&live_mu);
    return n;
}

static struct pd_tensor *tensor_shell(void)
{
    struct pd_tensor *t = fl_get(&free_tensors, sizeof *t);
    if (!t) return pdi_error(PD_ERR_NOMEM, "out of memory (tensor handle)");
    t->refcount = 1;
    t->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&live_tensors, 1, __ATOMIC_RELAXED);
    if (__builtin_expect(__atomic_load_n(&pdi_live_tracking, __ATOMIC_RELAXED), 0)) pdi_live_add(t);
    return t;
}

int pdi_check_shape(const char *what, const int64_t *shape, int ndim)
{
    char b[PDI_SHAPE_BUF];
    int64_t n;
    if (ndim < 0 || ndim > PD_MAX_DIMS)
        return pdi_errorf(PD_ERR_INVALID, "%s: ndim %d outside [0, %d]", what, ndim, PD_MAX_DIMS);
    if (ndim > 0 && !shape) return pdi_errorf(PD_ERR_INVALID, "%s: NULL shape with ndim %d", what, ndim);
    int rc = pdi_shape_numel(shape, ndim, &n);
    if (rc == -1)
        return pdi_errorf(PD_ERR_INVALID, "%s: negative dimension in shape %s", what,
                          pdi_shape_str(shape, ndim, b, sizeof b));
    if (rc)
        return pdi_errorf(PD_ERR_INVALID, "%s: shape %s has too many elements", what,
                          pdi_shape_str(shape, ndim, b, sizeof b));
    return PD_OK;
}

static int check_shape(const int64_t *shape, int ndim) { return pdi_check_shape("tensor", shape, ndim); }

int pdi_check_new(const int64_t *shape, int ndim, enum pd_dtype dt)
{
    if ((unsigned)dt >= PD_DTYPE_COUNT) return pdi_errorf(PD_ERR_INVALID, "tensor: invalid dtype %d", (int)dt);
    return check_shape(shape, ndim);
}

/* The contiguous tensor of shape over st (both new tensors' last step). */
static inline struct pd_tensor *tensor_over(struct pd_tensor *t, struct pdi_storage *st, const int64_t *shape,
                                            int ndim, enum pd_dtype dt)
{
    t->st = st;
    t->dtype = dt;
    t->ndim = ndim;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    pdi_contiguous_strides(shape, ndim, t->strides);
    return t;
}

struct pd_tensor *pdi_tensor_new_on(const int64_t *shape, int ndim, enum pd_dtype dt, int backend,
                                    const struct pd_allocator *alloc)
{
    if (pdi_check_new(shape, ndim, dt)) return NULL;
    struct pdi_storage *st = fl_get(&free_storages, sizeof *st);
    if (!st) return pdi_error(PD_ERR_NOMEM, "out of memory (storage)");
    int64_t n = pdi_numel(shape, ndim);
    st->nbytes = (size_t)n * pd_dtype_size(dt);
    st->data = pdi_allocator_alloc(alloc, st->nbytes);
    if (!st->data) { fl_put(&free_storages, st); return NULL; }
    st->alloc = alloc;
    st->backend = backend;
    st->refcount = 1;
    struct pd_tensor *t = tensor_shell();
    if (!t) { pdi_allocator_free(alloc, st->data, st->nbytes); fl_put(&free_storages, st); return NULL; }
    if (__builtin_expect(__atomic_load_n(&track_on, __ATOMIC_RELAXED) != 0, 0)) storage_link(st);
    return tensor_over(t, st, shape, ndim, dt);
}

/* A meta storage has a size but no data; it is marked external too, so that
 * releasing a storage tests one flag on the common path. Its bytes are
 * counted in the meta statistics instead of the allocator's. */
struct pd_tensor *pdi_tensor_new_meta(const int64_t *shape, int ndim, enum pd_dtype dt)
{
    if (pdi_check_new(shape, ndim, dt)) return NULL;
    struct pdi_storage *st = fl_get(&free_storages, sizeof *st);
    if (!st) return pdi_error(PD_ERR_NOMEM, "out of memory (storage)");
    struct pd_tensor *t = tensor_shell();
    if (!t) { fl_put(&free_storages, st); return NULL; }
    st->nbytes = (size_t)pdi_numel(shape, ndim) * pd_dtype_size(dt);
    st->refcount = 1;
    st->external = st->meta = 1;
    st->backend = -1; /* no device: shapes only */
    pdi_meta_account((int64_t)st->nbytes);
    return tensor_over(t, st, shape, ndim, dt);
}

struct pd_tensor *pdi_tensor_new(const int64_t *shape, int ndim, enum pd_dtype dt)
{
    return pdi_tensor_new_on(shape, ndim, dt, PDI_BACKEND_CPU, pdi_backend_allocator(PDI_BACKEND_CPU));
}

struct pd_tensor *pdi_tensor_alias(const struct pd_tensor *base, const int64_t *shape, const int64_t *strides,
                                   int ndim, int64_t offset)
{
    struct pd_tensor *t = tensor_shell();
    if (!t) return NULL;
    t->st = base->st;
    t->st->refcount++;
    t->dtype = base->dtype;
    t->ndim = ndim;
    if (ndim) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
        memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    }
    t->offset = offset;
    return t;
}

const struct pdi_dist_hooks *pdi_dist_hooks;

struct pd_tensor *pdi_tensor_alias_same(const struct pd_tensor *t)
{
    struct pd_tensor *a = pdi_tensor_alias(t, t->shape, t->strides, t->ndim, t->offset);
    if (a && t->dist) {
        a->dist = pdi_dist_hooks->copy(t->dist);
        if (!a->dist) { pd_tensor_release(a); return NULL; }
    }
    return a;
}

static void storage_release(struct pdi_storage *st)
{
    if (!st || --st->refcount > 0) return;
    if (__builtin_expect(st->serial != 0, 0)) storage_unlink(st);
    if (!st->external) pdi_allocator_free(st->alloc, st->data, st->nbytes); /* the allocator that made it */
    else if (st->meta) pdi_meta_account(-(int64_t)st->nbytes);
    fl_put(&free_storages, st);
}

void pd_tensor_retain(struct pd_tensor *t)
{
    if (t) t->refcount++;
}

void pd_tensor_release(struct pd_tensor *t)
{
    if (!t || --t->refcount > 0) return;
    if (t->retains_grad && t->grad_fn && t->grad_fn->retained) t->grad_fn->retained[t->out_nr] = NULL;
    storage_release(t->st);
    pd_tensor_release(t->grad);
    if (t->grad_fn) __atomic_load_n(&pdi_tensor_grad_fn_release, __ATOMIC_RELAXED)(t->grad_fn); /* set by any thread */
    for (struct pdi_hook *h = t->hooks, *nx; h; h = nx) { nx = h->next; free(h); }
    if (t->dist) __atomic_load_n(&pdi_tensor_dist_release, __ATOMIC_RELAXED)(t->dist);
    __atomic_sub_fetch(&live_tensors, 1, __ATOMIC_RELAXED);
    if (__builtin_expect(t->dbg_tracked, 0)) pdi_live_remove(t);
    fl_put(&free_tensors, t);
}

/* ---- scopes ---------------------------------------------------------- */
struct scope {
    struct pd_tensor **items;
    int n, cap;
    int token;
};
static PDI_TLS struct scope *scopes;
static PDI_TLS int n_scopes, cap_scopes;

/* Tokens are a per-thread serial number, so an end that names any scope
 * but the innermost (one ended twice, or in the wrong order) is caught. */
static PDI_TLS int scope_serial;

int pd_scope_begin(void)
{
    if (n_scopes == cap_scopes) {
        int nc = cap_scopes ? cap_scopes * 2 : 8;
        struct scope *ns = pdi_realloc(scopes, sizeof *ns * (size_t)nc);
        if (!ns) return pdi_errorf(PD_ERR_NOMEM, "scope_begin: out of memory (%d scopes open)", n_scopes);
        scopes = ns;
        cap_scopes = nc;
    }
    scope_serial = scope_serial == INT_MAX ? 1 : scope_serial + 1;
    scopes[n_scopes++] = (struct scope){.token = scope_serial};
    return scope_serial;
}

int pd_scope_end(int token)
{
    if (n_scopes == 0)
        return pdi_errorf(PD_ERR_STATE, "scope_end(%d): no scope is open on this thread", token);
    struct scope *s = &scopes[n_scopes - 1];
    if (token != s->token)
        return pdi_errorf(PD_ERR_STATE,
                          "scope_end(%d): the innermost open scope is %d; scopes end in reverse order of begin "
                          "(nothing was released)",
                          token, s->token);
    n_scopes--;
    /* Release newest first: outputs go before the inputs they saved. */
    for (int i = s->n - 1; i >= 0; i--) pd_tensor_release(s->items[i]);
    free(s->items);
    if (n_scopes == 0) {
        free(scopes);
        scopes = NULL;
        cap_scopes = 0;
    }
    return PD_OK;
}

int pd_scope_depth(void) { return n_scopes; }

static int scope_push(struct scope *s, struct pd_tensor *t)
{
    if (s->n == s->cap) {
        int nc = s->cap ? s->cap * 2 : 64;
        struct pd_tensor **ni = pdi_realloc(s->items, sizeof *ni * (size_t)nc);
        if (!ni) return -1;
        s->items = ni;
        s->cap = nc;
    }
    s->items[s->n++] = t;
    return 0;
}

struct pd_tensor *pdi_scope_add(struct pd_tensor *t)
{
    if (t && n_scopes > 0 && scope_push(&scopes[n_scopes - 1], t)) {
        pd_tensor_release(t);
        return pdi_error(PD_ERR_NOMEM, "out of memory (scope)");
    }
    return t;
}

struct pd_tensor *pd_keep(struct pd_tensor *t)
{
    if (!t || n_scopes == 0) return t;
    struct scope *s = &scopes[n_scopes - 1];
    for (int i = s->n - 1; i >= 0; i--) {
        if (s->items[i] == t) {
            s->items[i] = s->items[--s->n];
            if (n_scopes > 1 && scope_push(&scopes[n_scopes - 2], t)) return NULL;
            return t;
        }
    }
    /* Not owned by this scope (a parameter, or kept already): give the
     * caller a reference of its own in the enclosing scope. */
    t->refcount++;
    if (n_scopes > 1 && scope_push(&scopes[n_scopes - 2], t)) return NULL;
    return t;
}

/* ---- metadata -------------------------------------------------------- */
int pd_tensor_ndim(const struct pd_tensor *t) { return t ? t->ndim : -1; }
int64_t pd_tensor_dim(const struct pd_tensor *t, int axis)
{
    if (!t) return -1;
    int a = pdi_norm_axis(axis, t->ndim);
    if (a < 0 || t->ndim == 0)
        return pdi_errorf(PD_ERR_INVALID, "tensor_dim: axis %d out of range for a %d-d tensor", axis, t->ndim);
    return t->shape[a];
}
const int64_t *pd_tensor_shape(const struct pd_tensor *t) { return t ? t->shape : NULL; }
const int64_t *pd_tensor_strides(const struct pd_tensor *t) { return t ? t->strides : NULL; }
int64_t pd_tensor_offset(const struct pd_tensor *t) { return t ? t->offset : 0; }
int64_t pd_tensor_numel(const struct pd_tensor *t) { return t ? pdi_numel(t->shape, t->ndim) : 0; }
enum pd_dtype pd_tensor_dtype(const struct pd_tensor *t) { return t ? t->dtype : PD_DTYPE_COUNT; }
int pd_tensor_shares_storage(const struct pd_tensor *a, const struct pd_tensor *b)
{
    return a && b && a->st == b->st;
}
void *pd_tensor_data(const struct pd_tensor *t)
{
    return t ? pdi_host_access(t, PDI_HOST_READ | PDI_HOST_WRITE, "tensor_data") : NULL;
}

int pd_tensor_is_contiguous(const struct pd_tensor *t)
{
    if (!t) return 0;
    /* a distributed tensor: its piece's layout */
    const int64_t *shape = t->dist ? ((const struct pdi_dist *)t->dist)->lshape : t->shape;
    const int64_t *strides = t->dist ? ((const struct pdi_dist *)t->dist)->lstrides : t->strides;
    if (pdi_numel(shape, t->ndim) == 0) return 1; /* nothing to lay out */
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (shape[i] != 1 && strides[i] != s) return 0;
        s *= shape[i];
    }
    return 1;
}

/* Whether two different indices of t may reach the same element: a dim of
 * size > 1 with stride 0 (an expanded view), or, with the dims of size > 1
 * sorted by stride, a stride not larger than the span of the dims below it.
 * Sufficient, not exact: strides that interleave without meeting (2 and 3
 * over sizes 3 and 3) are refused too; slices, permutes, reshapes and
 * diagonals of a contiguous tensor never make such strides. */
int pdi_self_overlaps(const struct pd_tensor *t)
{
    int64_t st[PD_MAX_DIMS], sz[PD_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 0) return 0; /* no elements */
        if (t->shape[i] == 1) continue;
        int64_t s = t->strides[i] < 0 ? -t->strides[i] : t->strides[i];
        if (s == 0) return 1;
        int k = n++; /* insertion sort by stride */
        while (k > 0 && st[k - 1] > s) {
            st[k] = st[k - 1];
            sz[k] = sz[k - 1];
            k--;
        }
        st[k] = s;
        sz[k] = t->shape[i];
    }
    int64_t span = 0; /* largest offset reached by the dims below */
    for (int k = 0; k < n; k++) {
        if (st[k] <= span) return 1;
        span += (sz[k] - 1) * st[k]; /* a valid view's offsets fit int64 */
    }
    return 0;
}

/* For kernels (through the dispatcher): no host event. A meta tensor's view
 * has data NULL. */
void pdi_kview_of(const struct pd_tensor *t, struct pd_kview *v)
{
    v->data = t->st->data ? (char *)t->st->data + t->offset * (int64_t)pd_dtype_size(t->dtype) : NULL;
    v->dtype = t->dtype;
    v->ndim = t->ndim;
    memcpy(v->shape, t->shape, sizeof v->shape);
    memcpy(v->strides, t->strides, sizeof v->strides);
}

int pdi_kview_contiguous(const struct pd_kview *v)
{
    int64_t s = 1;
    for (int i = v->ndim - 1; i >= 0; i--) {
        if (v->shape[i] != 1 && v->strides[i] != s) return 0;
        s *= v->shape[i];
    }
    return 1;
}

int64_t pdi_kview_numel(const struct pd_kview *v) { return pdi_numel(v->shape, v->ndim); }

char *pdi_kview_ptr(const struct pd_kview *v, int64_t i)
{
    int64_t off = 0;
    for (int d = v->ndim - 1; d >= 0; d--) {
        int64_t n = v->shape[d];
        off += (i % n) * v->strides[d];
        i /= n;
    }
    return v->data + off * (int64_t)pd_dtype_size(v->dtype);
}

/* ---- host data ------------------------------------------------------ */
/* Creation ops (empty, full, arange, ...) and pd_from_buffer (the empty op
 * and the host-write entry point, pdi_host_write) live in src/ops/create.c. */
int pd_to_buffer(const struct pd_tensor *t, void *buf, enum pd_dtype dt)
{
    if (!t) return pdi_null_tensor("to_buffer");
    if ((unsigned)dt >= PD_DTYPE_COUNT) return pdi_errorf(PD_ERR_INVALID, "to_buffer: invalid dtype");
    if (!buf && pd_tensor_numel(t) > 0) return pdi_errorf(PD_ERR_INVALID, "to_buffer: NULL buffer");
    if (!pdi_host_read(t, "to_buffer")) return pd_last_status();
    if (pd_tensor_numel(t) == 0) return PD_OK; /* nothing to write (buf may be NULL) */
    struct pd_kview v;
    pdi_kview_of(t, &v);
    int64_t n = pdi_kview_numel(&v);
    size_t ds = pd_dtype_size(dt);
    if (pdi_kview_contiguous(&v)) {
        pdi_convert(v.data, t->dtype, buf, dt, n);
        return PD_OK;
    }
    for (int64_t i = 0; i < n; i++) pdi_convert(pdi_kview_ptr(&v, i), t->dtype, (char *)buf + i * (int64_t)ds, dt, 1);
    return PD_OK;
}

double pd_item(const struct pd_tensor *t)
{
    if (!t) return NAN;
    if (pd_tensor_numel(t) == 0) return pdi_errorf(PD_ERR_INVALID, "item: the tensor has no elements"), NAN;
    double v;
    return pdi_host_first(t, "item", &v) ? NAN : v;
}

double pd_get(const struct pd_tensor *t, const int64_t *index)
{
    if (!t) return NAN;
    if (!index && t->ndim > 0) return pdi_errorf(PD_ERR_NULL, "get: index is NULL"), NAN;
    if (!pdi_host_read(t, "get")) return NAN;
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (index[d] < 0 || index[d] >= t->shape[d])
            return pdi_errorf(PD_ERR_INVALID, "get: index %lld out of range for dim %d of size %lld", (long long)index[d], d,
                              (long long)t->shape[d]),
                   NAN;
        off += index[d] * t->strides[d];
    }
    return pdi_load((char *)t->st->data + off * (int64_t)pd_dtype_size(t->dtype), t->dtype);
}

/* ---- printing -------------------------------------------------------- */
struct sbuf {
    char *s;
    size_t n, cap;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->s && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
        size_t nc = (b->cap + (size_t)k + 1) * 2;
        char *ns = pdi_realloc(b->s, nc);
        if (!ns) return;
        b->s = ns;
        b->cap = nc;
    }
}

#define PRINT_EDGE 3    /* items shown at each end of an elided dim */
#define PRINT_LIMIT 1000 /* elide when numel exceeds this */

static void print_rec(struct sbuf *b, const struct pd_tensor *t, int d, int64_t off, int elide, int indent)
{
    size_t es = pd_dtype_size(t->dtype);
    if (d == t->ndim) {
        double v = pdi_load((char *)t->st->data + off * (int64_t)es, t->dtype);
        if (t->dtype == PD_BOOL) sb_printf(b, v != 0 ? "True" : "False");
        else if (!pd_dtype_is_float(t->dtype)) sb_printf(b, "%lld", (long long)v);
        else if (isnan(v)) sb_printf(b, "nan");
        else if (isinf(v)) sb_printf(b, v > 0 ? "inf" : "-inf");
        else if (v != 0 && (fabs(v) >= 1e6 || fabs(v) < 1e-4)) sb_printf(b, "%.4e", v);
        else sb_printf(b, "%.4f", v);
        return;
    }
    sb_printf(b, "[");
    int64_t n = t->shape[d];
    for (int64_t i = 0; i < n; i++) {
        if (elide && n > 2 * PRINT_EDGE && i == PRINT_EDGE) {
            sb_printf(b, d == t->ndim - 1 ? "..., " : "...,\n%*s", d == t->ndim - 1 ? 0 : indent + d + 1, "");
            i = n - PRINT_EDGE;
        }
        print_rec(b, t, d + 1, off + i * t->strides[d], elide, indent);
        if (i + 1 < n) {
            if (d == t->ndim - 1) sb_printf(b, ", ");
            else sb_printf(b, ",\n%*s", indent + d + 1, "");
        }
    }
    sb_printf(b, "]");
}

char *pd_tensor_to_string(const struct pd_tensor *t)
{
    struct sbuf b = {0};
    if (!t) { sb_printf(&b, "tensor(NULL)"); return b.s; }
    char sh[PDI_SHAPE_BUF];
    sb_printf(&b, "tensor(");
    if (t->st->meta) sb_printf(&b, "<meta>"); /* no data to show, and no error: shapes are what it has */
    else if (!pdi_host_read(t, "print")) sb_printf(&b, "<unreadable>");
    else print_rec(&b, t, 0, t->offset, pd_tensor_numel(t) > PRINT_LIMIT, 7);
    sb_printf(&b, ", shape=%s, dtype=%s%s)", pdi_shape_str(t->shape, t->ndim, sh, sizeof sh), pd_dtype_name(t->dtype),
              t->requires_grad ? ", requires_grad" : (t->grad_fn ? ", grad_fn" : ""));
    return b.s;
}

void pd_tensor_print(const struct pd_tensor *t)
{
    char *s = pd_tensor_to_string(t);
    if (s) { puts(s); free(s); }
}
