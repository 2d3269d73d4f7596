/* paddle.c — random ops: uniform (rand), normal (randn), randint and
 * bernoulli (dropout's mask).
 *
 * A wrapper reads (seed, offset) from its generator (the thread's default
 * when NULL), reserves the counters its draw reads and dispatches the op
 * with both as attributes: a replay of the recorded call draws the same
 * numbers, and the `slice` attribute lets a sharded replay draw its block
 * of the same stream (see src/ops/ops_random.def). Offsets stay 4-aligned
 * so that two calls never share a Philox block. Kernels:
 * src/kernels/{ref,cpu}/random.c.
 */
#include <math.h>
#include <string.h>

#include "core/internal.h"

/* ---- infer ------------------------------------------------------------ */
/* Checks the slice attribute of an output of `ndim` dims and `shape`. */
static int check_slice(const struct pdi_call *c, const struct pdi_ints *sl, const int64_t *shape, int ndim)
{
    const char *op = pdi_ops[c->op].name;
    if (sl->n == 0) return PD_OK;
    if (sl->n != 2 * ndim)
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: slice has %lld values, expected 0 or %d (the whole shape, then the start)", op,
                          (long long)sl->n, 2 * ndim);
    double total = 1;
    for (int d = 0; d < ndim; d++) {
        int64_t whole = sl->v[d], start = sl->v[ndim + d];
        if (whole < 0 || start < 0 || start > whole || shape[d] > whole - start)
            return pdi_errorf(PD_ERR_INVALID, "%s: slice: dim %d: [%lld, %lld + %lld) is not inside [0, %lld)", op, d,
                              (long long)start, (long long)start, (long long)shape[d], (long long)whole);
        total *= (double)whole;
    }
    if (total > 0x1p46) return pdi_errorf(PD_ERR_INVALID, "%s: slice: the whole draw has too many elements", op);
    return PD_OK;
}

/* The distribution's parameters, shared by the wrappers and infer: finite
 * bounds with lo <= hi (and hi - lo finite) for uniform, a finite mean and
 * a finite std >= 0 for normal, lo < hi for randint (values past a narrower
 * dtype's range are stored saturated, as they always were). */
static int check_params(enum pd_op op, const struct pdi_attrs *a)
{
    if (op == PD_OP_uniform) {
        double lo = a->uniform.low, hi = a->uniform.high;
        if (!(isfinite(lo) && isfinite(hi) && lo <= hi && isfinite(hi - lo)))
            return pdi_errorf(PD_ERR_INVALID, "uniform: need finite bounds with lo <= hi, got [%g, %g)", lo, hi);
    } else if (op == PD_OP_normal) {
        double mean = a->normal.mean, std = a->normal.std;
        if (!(std >= 0)) return pdi_errorf(PD_ERR_INVALID, "normal: std must be >= 0, got %g", std);
        if (!(isfinite(std) && isfinite(mean)))
            return pdi_errorf(PD_ERR_INVALID, "normal: need a finite mean and std, got mean %g, std %g", mean, std);
    } else if (op == PD_OP_randint) {
        int64_t lo = a->randint.low, hi = a->randint.high;
        if (hi <= lo)
            return pdi_errorf(PD_ERR_INVALID, "randint: need lo < hi, got [%lld, %lld)", (long long)lo, (long long)hi);
    }
    return PD_OK;
}

/* uniform, normal, randint (their sets begin with uniform's fields) */
int pdi_infer_random(struct pdi_call *c)
{
    const struct pdi_attrs_uniform *a = &c->a.uniform;
    const char *op = pdi_ops[c->op].name;
    if (a->shape.n > PD_MAX_DIMS)
        return pdi_errorf(PD_ERR_INVALID, "%s: shape has %lld dims (at most %d)", op, (long long)a->shape.n,
                          PD_MAX_DIMS);
    if (a->dtype < 0 || a->dtype >= PD_DTYPE_COUNT || !(pdi_ops[c->op].dtypes & (1u << a->dtype)))
        return pdi_errorf(PD_ERR_INVALID, "%s: dtype %s is not supported", op,
                          a->dtype >= 0 && a->dtype < PD_DTYPE_COUNT ? pd_dtype_name((enum pd_dtype)a->dtype) : "?");
    int rc = check_params(c->op, &c->a);
    if (rc) return rc;
    rc = pdi_check_new(a->shape.v, (int)a->shape.n, (enum pd_dtype)a->dtype);
    if (rc) return rc;
    rc = check_slice(c, &a->slice, a->shape.v, (int)a->shape.n);
    if (rc) return rc;
    struct pdi_meta *m = &c->meta[0];
    m->dtype = (enum pd_dtype)a->dtype;
    m->ndim = (int)a->shape.n;
    memcpy(m->shape, a->shape.v, sizeof(int64_t) * (size_t)a->shape.n);
    return PD_OK;
}

int pdi_infer_bernoulli(struct pdi_call *c)
{
    const struct pd_tensor *p = c->in[0];
    if (!pd_dtype_is_float(p->dtype))
        return pdi_errorf(PD_ERR_INVALID, "bernoulli: p must be floating, got %s", pd_dtype_name(p->dtype));
    int rc = check_slice(c, &c->a.bernoulli.slice, p->shape, p->ndim);
    if (rc) return rc;
    pdi_infer_same(c);
    return PD_OK;
}

/* ---- wrappers --------------------------------------------------------- */
/* The generator's state, then reserve n words (4-aligned). */
static void take(struct pd_generator *g, int64_t n, int64_t *seed, int64_t *offset)
{
    uint64_t s, o;
    if (!g) g = pd_default_generator();
    pd_generator_get_state(g, &s, &o);
    pd_generator_set_state(g, s, o + (((uint64_t)n + 3) & ~(uint64_t)3));
    *seed = (int64_t)s;
    *offset = (int64_t)o;
}

/* Shared by uniform, normal and randint: a, b are the op's two parameters. */
static struct pd_tensor *draw(enum pd_op op, const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_generator *g,
                              struct pdi_attrs *a)
{
    if (pdi_check_new(shape, ndim, dt)) return NULL;
    struct pdi_attrs_uniform *u = &a->uniform;
    u->shape.n = ndim;
    if (ndim) memcpy(u->shape.v, shape, sizeof(int64_t) * (size_t)ndim);
    u->dtype = dt;
    take(g, 2 * pdi_numel(shape, ndim), &u->seed, &u->offset);
    return pdi_calln(op, NULL, 0, a);
}

struct pd_tensor *pd_uniform(const int64_t *shape, int ndim, double lo, double hi, enum pd_dtype dt,
                             struct pd_generator *g)
{
    if (!pd_dtype_is_float(dt))
        return pdi_error(PD_ERR_INVALID, "uniform: dtype must be floating, got %s", pd_dtype_name(dt));
    struct pdi_attrs a = {.uniform = {.low = lo, .high = hi}};
    if (check_params(PD_OP_uniform, &a)) return NULL;
    return draw(PD_OP_uniform, shape, ndim, dt, g, &a);
}

struct pd_tensor *pd_rand(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_generator *g)
{
    return pd_uniform(shape, ndim, 0.0, 1.0, dt, g);
}

struct pd_tensor *pd_normal(const int64_t *shape, int ndim, double mean, double std, enum pd_dtype dt,
                            struct pd_generator *g)
{
    if (!pd_dtype_is_float(dt))
        return pdi_error(PD_ERR_INVALID, "normal: dtype must be floating, got %s", pd_dtype_name(dt));
    struct pdi_attrs a = {.normal = {.mean = mean, .std = std}};
    if (check_params(PD_OP_normal, &a)) return NULL;
    return draw(PD_OP_normal, shape, ndim, dt, g, &a);
}

struct pd_tensor *pd_randn(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_generator *g)
{
    return pd_normal(shape, ndim, 0.0, 1.0, dt, g);
}

struct pd_tensor *pd_randint(const int64_t *shape, int ndim, int64_t lo, int64_t hi, enum pd_dtype dt,
                             struct pd_generator *g)
{
    if (hi <= lo)
        return pdi_error(PD_ERR_INVALID, "randint: need lo < hi, got [%lld, %lld)", (long long)lo, (long long)hi);
    if ((unsigned)dt >= PD_DTYPE_COUNT || pd_dtype_is_float(dt) || dt == PD_BOOL)
        return pdi_error(PD_ERR_INVALID, "randint: dtype must be an integer type, got %s",
                         (unsigned)dt < PD_DTYPE_COUNT ? pd_dtype_name(dt) : "?");
    struct pdi_attrs a = {.randint = {.low = lo, .high = hi}};
    if (check_params(PD_OP_randint, &a)) return NULL;
    return draw(PD_OP_randint, shape, ndim, dt, g, &a);
}

struct pd_tensor *pd_bernoulli(const struct pd_tensor *p, struct pd_generator *g)
{
    if (!p) return NULL;
    if (!pd_dtype_is_float(p->dtype))
        return pdi_error(PD_ERR_INVALID, "bernoulli: p must be floating, got %s", pd_dtype_name(p->dtype));
    struct pdi_attrs a = {.bernoulli = {.seed = 0}};
    take(g, pdi_numel(p->shape, p->ndim), &a.bernoulli.seed, &a.bernoulli.offset);
    return pdi_call1(PD_OP_bernoulli, (struct pd_tensor *)p, &a);
}
