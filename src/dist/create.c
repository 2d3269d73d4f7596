/* paddle.c — distributed tensors built in place (docs/distributed.md "How
 * ops are distributed"): creation and random ops on a mesh.
 *
 * Each rank makes only its piece, with no communication. A constant is
 * the piece filled; arange, linspace and eye run with their `piece`
 * attribute (src/ops/ops_create.def), so each element is computed by the
 * whole output's formula at its whole index; a random draw is the piece's block of the
 * single-process stream: the op runs with its `slice` attribute (the whole
 * shape, then the piece's start; src/ops/ops_random.def), so the result is
 * what pd_uniform (and friends) would draw on one process with the same
 * generator state, and the generator advances as for the whole draw.
 * A Partial axis holds the value at coordinate 0 and the reduction's
 * identity elsewhere (avg: everywhere), as pd_shard_tensor does; it is
 * made replicated, then moved to Partial (a local step).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dist/dist_internal.h"

/* The piece of op's whole output `shape` (attributes a: the shape, the
 * draw's slice, the piece are filled in here) in placements pl on m. */
static struct pd_tensor *build(const char *fn, enum pd_op op, struct pdi_attrs *a, const int64_t *shape, int ndim,
                               enum pd_dtype dt, struct pd_generator *g, struct pd_mesh *m,
                               const struct pd_placement *pl)
{
    if (!m || !pl) return pdi_error(PD_ERR_NULL, "%s: mesh and placements are required", fn);
    if (ndim < 0 || ndim > PD_MAX_DIMS || (ndim && !shape))
        return pdi_error(PD_ERR_INVALID, "%s: %d dims (0 to %d, with a shape)", fn, ndim, PD_MAX_DIMS);
    if ((unsigned)dt >= PD_DTYPE_COUNT) return pdi_error(PD_ERR_INVALID, "%s: invalid dtype %d", fn, (int)dt);
    if (pdi_check_shape(fn, shape, ndim)) return NULL;
    if (pdi_dist_check_placements(fn, m, pl, ndim, dt)) return NULL;
    struct pd_placement base[PD_MAX_MESH_DIMS];
    int partial = 0;
    for (int ax = 0; ax < m->ndim; ax++) {
        partial |= pl[ax].kind == PD_PARTIAL;
        base[ax] = pl[ax].kind == PD_PARTIAL ? pd_replicate() : pl[ax];
    }
    int64_t lshape[PD_MAX_DIMS] = {0}, start[PD_MAX_DIMS] = {0};
    for (int d = 0; d < ndim && m->index >= 0; d++) {
        int64_t s, e;
        pdi_dist_range(m, base, shape, d, &s, &e);
        start[d] = s, lshape[d] = e - s;
    }
    int tok = pd_scope_begin();
    struct pd_tensor *x;
    struct pdi_ints *piece = op == PD_OP_arange ? &a->arange.piece : op == PD_OP_linspace ? &a->linspace.piece
                             : op == PD_OP_eye ? &a->eye.piece : NULL;
    if (op == PD_OP_empty) {
        x = pd_empty(lshape, ndim, dt);
    } else if (op == PD_OP_full) {
        x = pd_full(lshape, ndim, a->full.value, dt);
    } else if (piece) { /* the piece's elements by the whole's formula */
        piece->n = 2 * ndim;
        for (int d = 0; d < ndim; d++) piece->v[d] = start[d], piece->v[ndim + d] = lshape[d];
        x = pdi_calln(op, NULL, 0, a);
    } else {
        struct pdi_attrs_uniform *u = &a->uniform; /* the random sets share their first fields */
        u->shape.n = ndim;
        u->slice.n = 2 * ndim;
        for (int d = 0; d < ndim; d++) {
            u->shape.v[d] = lshape[d];
            u->slice.v[d] = shape[d];
            u->slice.v[ndim + d] = start[d];
        }
        u->dtype = dt;
        /* the whole draw's counters, as src/ops/random.c reserves them */
        if (!g) g = pd_default_generator();
        uint64_t seed, off, n = 2 * (uint64_t)pdi_numel(shape, ndim);
        pd_generator_get_state(g, &seed, &off);
        pd_generator_set_state(g, seed, off + ((n + 3) & ~(uint64_t)3));
        u->seed = (int64_t)seed, u->offset = (int64_t)off;
        x = pdi_calln(op, NULL, 0, a);
    }
    struct pd_tensor *t = x ? pdi_dist_wrap(x, m, shape, ndim, base) : NULL;
    if (t && partial) t = pdi_reshard(t, m, pl);
    t = t ? pd_keep(t) : NULL;
    pd_scope_end(tok);
    return t;
}

/* A constant (full; empty when fill is 0). */
static struct pd_tensor *constant(const char *fn, int fill, double value, const int64_t *shape, int ndim,
                                  enum pd_dtype dt, struct pd_mesh *m, const struct pd_placement *pl)
{
    struct pdi_attrs a;
    pdi_attrs_default(fill ? PD_OP_full : PD_OP_empty, &a);
    a.full.value = value;
    return build(fn, fill ? PD_OP_full : PD_OP_empty, &a, shape, ndim, dt, NULL, m, pl);
}

struct pd_tensor *pd_dtensor_constant(const int64_t *shape, int ndim, double value, enum pd_dtype dt,
                                      struct pd_mesh *m, const struct pd_placement *pl)
{
    return constant("dtensor_constant", 1, value, shape, ndim, dt, m, pl);
}

struct pd_tensor *pd_dtensor_empty(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_mesh *m,
                                   const struct pd_placement *pl)
{
    return constant("dtensor_empty", 0, 0, shape, ndim, dt, m, pl);
}

struct pd_tensor *pd_dtensor_zeros(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_mesh *m,
                                   const struct pd_placement *pl)
{
    return constant("dtensor_zeros", 1, 0, shape, ndim, dt, m, pl);
}

struct pd_tensor *pd_dtensor_ones(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_mesh *m,
                                  const struct pd_placement *pl)
{
    return constant("dtensor_ones", 1, 1, shape, ndim, dt, m, pl);
}

struct pd_tensor *pd_dtensor_uniform(const int64_t *shape, int ndim, double lo, double hi, enum pd_dtype dt,
                                     struct pd_generator *g, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (!pd_dtype_is_float(dt))
        return pdi_error(PD_ERR_INVALID, "dtensor_uniform: dtype must be floating, got %s", pd_dtype_name(dt));
    if (!(isfinite(lo) && isfinite(hi) && lo <= hi && isfinite(hi - lo)))
        return pdi_error(PD_ERR_INVALID, "dtensor_uniform: need finite bounds with lo <= hi, got [%g, %g)", lo, hi);
    struct pdi_attrs a;
    pdi_attrs_default(PD_OP_uniform, &a);
    a.uniform.low = lo, a.uniform.high = hi;
    return build("dtensor_uniform", PD_OP_uniform, &a, shape, ndim, dt, g, m, pl);
}

struct pd_tensor *pd_dtensor_normal(const int64_t *shape, int ndim, double mean, double std, enum pd_dtype dt,
                                    struct pd_generator *g, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (!pd_dtype_is_float(dt))
        return pdi_error(PD_ERR_INVALID, "dtensor_normal: dtype must be floating, got %s", pd_dtype_name(dt));
    if (!(std >= 0 && isfinite(std) && isfinite(mean)))
        return pdi_error(PD_ERR_INVALID, "dtensor_normal: need a finite mean and a finite std >= 0, got %g, %g", mean,
                          std);
    struct pdi_attrs a;
    pdi_attrs_default(PD_OP_normal, &a);
    a.normal.mean = mean, a.normal.std = std;
    return build("dtensor_normal", PD_OP_normal, &a, shape, ndim, dt, g, m, pl);
}

struct pd_tensor *pd_dtensor_randint(const int64_t *shape, int ndim, int64_t lo, int64_t hi, enum pd_dtype dt,
                                     struct pd_generator *g, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (hi <= lo)
        return pdi_error(PD_ERR_INVALID, "dtensor_randint: need lo < hi, got [%lld, %lld)", (long long)lo,
                          (long long)hi);
    if ((unsigned)dt >= PD_DTYPE_COUNT || pd_dtype_is_float(dt) || dt == PD_BOOL)
        return pdi_error(PD_ERR_INVALID, "dtensor_randint: dtype must be an integer type");
    struct pdi_attrs a;
    pdi_attrs_default(PD_OP_randint, &a);
    a.randint.low = lo, a.randint.high = hi;
    return build("dtensor_randint", PD_OP_randint, &a, shape, ndim, dt, g, m, pl);
}

/* arange (start, stop, step), linspace (start, stop, num) and eye (num
 * rows, cols): the whole output's shape by the op's own infer (it checks
 * the attributes as pd_arange does), then each rank's piece. */
static struct pd_tensor *sequence(enum pd_op op, double start, double stop, double step, int64_t num, int64_t cols,
                                  enum pd_dtype dt, struct pd_mesh *m, const struct pd_placement *pl)
{
    struct pdi_attrs a;
    pdi_attrs_default(op, &a);
    if (op == PD_OP_arange) a.arange.start = start, a.arange.stop = stop, a.arange.step = step, a.arange.dtype = dt;
    if (op == PD_OP_linspace)
        a.linspace.start = start, a.linspace.stop = stop, a.linspace.num = num, a.linspace.dtype = dt;
    if (op == PD_OP_eye) a.eye.n = num, a.eye.m = cols < 0 ? num : cols, a.eye.dtype = dt;
    const char *fn = op == PD_OP_arange ? "dtensor_arange" : op == PD_OP_linspace ? "dtensor_linspace" : "dtensor_eye";
    struct pdi_meta meta;
    struct pdi_call c = {.op = op, .n_out = 1, .a = a, .meta = &meta};
    if ((unsigned)dt >= PD_DTYPE_COUNT) return pdi_error(PD_ERR_INVALID, "%s: invalid dtype %d", fn, (int)dt);
    int rc = pdi_attrs_check(&c);
    if (!rc) rc = pdi_ops[op].infer(&c);
    if (rc) { /* the op's message, named after the function the caller called */
        char msg[256];
        snprintf(msg, sizeof msg, "%s", pd_last_error());
        return pdi_error(rc, "%s: %s", fn, msg);
    }
    return build(fn, op, &a, meta.shape, meta.ndim, dt, NULL, m, pl);
}

struct pd_tensor *pd_dtensor_arange(double start, double stop, double step, enum pd_dtype dt, struct pd_mesh *m,
                                    const struct pd_placement *pl)
{
    return sequence(PD_OP_arange, start, stop, step, 0, 0, dt, m, pl);
}

struct pd_tensor *pd_dtensor_linspace(double start, double stop, int64_t num, enum pd_dtype dt, struct pd_mesh *m,
                                      const struct pd_placement *pl)
{
    return sequence(PD_OP_linspace, start, stop, 0, num, 0, dt, m, pl);
}

struct pd_tensor *pd_dtensor_eye(int64_t n, int64_t cols, enum pd_dtype dt, struct pd_mesh *m,
                                 const struct pd_placement *pl)
{
    return sequence(PD_OP_eye, 0, 0, 0, n, cols, dt, m, pl);
}
