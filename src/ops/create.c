/* paddle.c — creation ops: empty, full (zeros, ones, scalar), arange,
 * linspace, eye and the _like forms, the infer functions of the in-place
 * writes copy_ and fill_ (their wrappers are in src/ops/view.c), and
 * pd_from_buffer (the empty op, then the host-write entry point).
 *
 * Every wrapper checks its arguments with the same function the op's infer
 * runs, before dispatching: a bad call fails with the message it always had
 * ("arange: need finite ..."), and a replayed call with bad attributes fails
 * in infer with the call's name in front. Kernels: src/kernels/{ref,cpu}/
 * create.c.
 */
#include <math.h>
#include <string.h>

#include "core/internal.h"

/* ---- checks shared by the wrappers and infer ------------------------- */
static int arange_check(double start, double stop, double step)
{
    if (step == 0 || !isfinite(start) || !isfinite(stop) || !isfinite(step))
        return pdi_errorf(PD_ERR_INVALID, "arange: need finite start/stop and step != 0 (got %g, %g, %g)", start, stop,
                          step);
    /* the length in double first: (int64_t) of a value past int64 is undefined */
    double nd = ceil((stop - start) / step);
    if (!(nd <= (double)PDI_MAX_NUMEL))
        return pdi_errorf(PD_ERR_INVALID, "arange: (%g, %g, %g) has too many elements (the limit is 2^46)", start, stop,
                          step);
    return PD_OK;
}

/* Elements of arange(start, stop, step) (arguments checked). */
static int64_t arange_len(double start, double stop, double step)
{
    double nd = ceil((stop - start) / step);
    return nd > 0 ? (int64_t)nd : 0;
}

static int linspace_check(int64_t num)
{
    if (num < 0) return pdi_errorf(PD_ERR_INVALID, "linspace: num must be >= 0, got %lld", (long long)num);
    return PD_OK;
}

/* A creation op's output meta from a shape and a dtype (checked). */
static int set_meta(struct pdi_call *c, const int64_t *shape, int64_t ndim, int64_t dt)
{
    if (ndim > PD_MAX_DIMS)
        return pdi_errorf(PD_ERR_INVALID, "%s: shape has %lld dims (at most %d)", pdi_ops[c->op].name, (long long)ndim,
                          PD_MAX_DIMS);
    if (dt < 0 || dt >= PD_DTYPE_COUNT) return pdi_errorf(PD_ERR_INVALID, "tensor: invalid dtype %lld", (long long)dt);
    int rc = pdi_check_new(shape, (int)ndim, (enum pd_dtype)dt);
    if (rc) return rc;
    struct pdi_meta *m = &c->meta[0];
    m->dtype = (enum pd_dtype)dt;
    m->ndim = (int)ndim;
    if (ndim) memcpy(m->shape, shape, sizeof(int64_t) * (size_t)ndim);
    return PD_OK;
}

/* ---- infer ------------------------------------------------------------ */
/* empty and full (full's set begins with empty's fields) */
int pdi_infer_empty(struct pdi_call *c)
{
    const struct pdi_attrs_empty *a = &c->a.empty;
    return set_meta(c, a->shape.v, a->shape.n, a->dtype);
}

/* The meta of a piece of a whole creation output (attribute `piece`,
 * src/ops/ops_create.def): empty, the whole. */
static int piece_meta(struct pdi_call *c, const struct pdi_ints *piece, const int64_t *whole, int nd, int64_t dt)
{
    if (piece->n == 0) return set_meta(c, whole, nd, dt);
    const char *name = pdi_ops[c->op].name;
    if (piece->n != 2 * nd)
        return pdi_errorf(PD_ERR_INVALID, "%s: piece has %lld values (want %d: the starts, then the extents)", name,
                          (long long)piece->n, 2 * nd);
    int rc = pdi_check_shape(name, whole, nd);
    if (rc) return rc;
    int64_t ext[2];
    for (int d = 0; d < nd; d++) {
        int64_t s = piece->v[d], e = piece->v[nd + d];
        if (s < 0 || e < 0 || s > whole[d] || e > whole[d] - s)
            return pdi_errorf(PD_ERR_INVALID, "%s: piece [%lld, %lld + %lld) lies outside dim %d of extent %lld", name,
                              (long long)s, (long long)s, (long long)e, d, (long long)whole[d]);
        ext[d] = e;
    }
    return set_meta(c, ext, nd, dt);
}

int pdi_infer_arange(struct pdi_call *c)
{
    const struct pdi_attrs_arange *a = &c->a.arange;
    int rc = arange_check(a->start, a->stop, a->step);
    if (rc) return rc;
    int64_t n = arange_len(a->start, a->stop, a->step);
    return piece_meta(c, &a->piece, &n, 1, a->dtype);
}

int pdi_infer_linspace(struct pdi_call *c)
{
    const struct pdi_attrs_linspace *a = &c->a.linspace;
    int rc = linspace_check(a->num);
    if (rc) return rc;
    return piece_meta(c, &a->piece, &a->num, 1, a->dtype);
}

int pdi_infer_eye(struct pdi_call *c)
{
    const struct pdi_attrs_eye *a = &c->a.eye;
    int64_t shape[2] = {a->n, a->m};
    return piece_meta(c, &a->piece, shape, 2, a->dtype);
}

/* copy_ and fill_ write into input 0: a call must say so. */
static int check_inplace(const struct pdi_call *c)
{
    if (!c->inplace)
        return pdi_errorf(PD_ERR_INVALID, "%s: writes into its input: dispatch it in place", pdi_ops[c->op].name);
    return PD_OK;
}

/* copy_: src must already have dst's dtype and shape (pd_copy_ casts and
 * expands it). */
int pdi_infer_copy_(struct pdi_call *c)
{
    int rc = check_inplace(c);
    if (rc) return rc;
    const struct pd_tensor *d = c->in[0], *s = c->in[1];
    if (s->dtype != d->dtype || s->ndim != d->ndim || memcmp(s->shape, d->shape, sizeof(int64_t) * (size_t)d->ndim)) {
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_INVALID, "copy_: src %s %s does not match dst %s %s (cast and expand it first)",
                          pdi_shape_str(s->shape, s->ndim, b0, sizeof b0), pd_dtype_name(s->dtype),
                          pdi_shape_str(d->shape, d->ndim, b1, sizeof b1), pd_dtype_name(d->dtype));
    }
    pdi_meta_of(d, &c->meta[0]);
    return PD_OK;
}

int pdi_infer_fill_(struct pdi_call *c)
{
    int rc = check_inplace(c);
    if (rc) return rc;
    pdi_meta_of(c->in[0], &c->meta[0]);
    return PD_OK;
}

/* ---- wrappers --------------------------------------------------------- */
/* Dispatch a creation call built in place (no attribute copy: creation ops
 * are small and frequent, as the zeros of missing gradients are). */
static struct pd_tensor *create(struct pdi_call *c)
{
    struct pd_tensor *out[1];
    c->n_out = 1;
    c->out = out;
    return pdi_dispatch(c) ? NULL : out[0];
}

static void set_shape(struct pdi_ints *l, const int64_t *shape, int ndim)
{
    l->n = ndim;
    if (ndim) memcpy(l->v, shape, sizeof(int64_t) * (size_t)ndim);
}

struct pd_tensor *pd_empty(const int64_t *shape, int ndim, enum pd_dtype dt)
{
    if (pdi_check_new(shape, ndim, dt)) return NULL;
    struct pdi_call c = {.op = PD_OP_empty, .a = {.empty = {.dtype = dt}}};
    set_shape(&c.a.empty.shape, shape, ndim);
    return create(&c);
}

struct pd_tensor *pd_full(const int64_t *shape, int ndim, double value, enum pd_dtype dt)
{
    if (pdi_check_new(shape, ndim, dt)) return NULL;
    struct pdi_call c = {.op = PD_OP_full, .a = {.full = {.dtype = dt, .value = value}}};
    set_shape(&c.a.full.shape, shape, ndim);
    return create(&c);
}

struct pd_tensor *pd_zeros(const int64_t *shape, int ndim, enum pd_dtype dt) { return pd_full(shape, ndim, 0.0, dt); }
struct pd_tensor *pd_ones(const int64_t *shape, int ndim, enum pd_dtype dt) { return pd_full(shape, ndim, 1.0, dt); }
struct pd_tensor *pd_scalar(double value, enum pd_dtype dt) { return pd_full(NULL, 0, value, dt); }

struct pd_tensor *pd_empty_like(const struct pd_tensor *t) { return t ? pd_empty(t->shape, t->ndim, t->dtype) : NULL; }
struct pd_tensor *pd_zeros_like(const struct pd_tensor *t) { return t ? pd_zeros(t->shape, t->ndim, t->dtype) : NULL; }
struct pd_tensor *pd_ones_like(const struct pd_tensor *t) { return t ? pd_ones(t->shape, t->ndim, t->dtype) : NULL; }
struct pd_tensor *pd_full_like(const struct pd_tensor *t, double v)
{
    return t ? pd_full(t->shape, t->ndim, v, t->dtype) : NULL;
}

struct pd_tensor *pd_arange(double start, double stop, double step, enum pd_dtype dt)
{
    if (arange_check(start, stop, step)) return NULL;
    int64_t n = arange_len(start, stop, step);
    if (pdi_check_new(&n, 1, dt)) return NULL;
    struct pdi_call c = {.op = PD_OP_arange,
                         .a = {.arange = {.start = start, .stop = stop, .step = step, .dtype = dt}}};
    return create(&c);
}

struct pd_tensor *pd_linspace(double start, double stop, int64_t num, enum pd_dtype dt)
{
    if (linspace_check(num) || pdi_check_new(&num, 1, dt)) return NULL;
    struct pdi_call c = {.op = PD_OP_linspace,
                         .a = {.linspace = {.start = start, .stop = stop, .num = num, .dtype = dt}}};
    return create(&c);
}

struct pd_tensor *pd_eye(int64_t n, int64_t m, enum pd_dtype dt)
{
    int64_t shape[2] = {n, m < 0 ? n : m};
    if (pdi_check_new(shape, 2, dt)) return NULL;
    struct pdi_call c = {.op = PD_OP_eye, .a = {.eye = {.n = n, .m = shape[1], .dtype = dt}}};
    return create(&c);
}

/* ---- host data -------------------------------------------------------- */
struct pd_tensor *pdi_empty_eager(const int64_t *shape, int ndim, enum pd_dtype dt)
{
    int ex = pdi_modes.exec ? pdi_executor_begin(&pdi_exec_eager, NULL) : 0;
    struct pd_tensor *t = ex >= 0 ? pd_empty(shape, ndim, dt) : NULL;
    if (ex > 0) pdi_executor_end(ex);
    return t;
}

/* Host bytes cannot be an op's attribute: the tensor is made by the empty
 * op (so observers see it made) and the bytes enter through the host-write
 * entry point (so they see them written). Under another executor the empty
 * call runs eager: host data always has bytes. */
struct pd_tensor *pdi_from_host(const void *data, const int64_t *shape, int ndim, enum pd_dtype dt, const char *what)
{
    if (pdi_check_new(shape, ndim, dt)) return NULL;
    if (!data && pdi_numel(shape, ndim)) return pdi_error(PD_ERR_INVALID, "%s: NULL data", what);
    int sc = pd_scope_begin();
    if (sc < 0) return NULL;
    struct pd_tensor *t = pdi_empty_eager(shape, ndim, dt);
    pd_tensor_retain(t); /* ours once the scope drops its reference */
    pd_scope_end(sc);
    if (t && pdi_host_write(t, data, what)) {
        pd_tensor_release(t);
        return NULL;
    }
    return t;
}

struct pd_tensor *pd_from_buffer(const void *data, const int64_t *shape, int ndim, enum pd_dtype dt)
{
    struct pd_tensor *t = pdi_from_host(data, shape, ndim, dt, "from_buffer");
    return t ? pdi_scope_add(t) : NULL;
}
