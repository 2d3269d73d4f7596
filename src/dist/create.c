/* paddle.c — distributed tensors built in place (docs/distributed.md "How
 * ops are distributed"): creation and random ops on a mesh.
 *
 * Each rank makes only its piece, with no communication. A constant is
 * the piece filled; a random draw is the piece's block of the
 * single-process stream: the op runs with its `slice` attribute (the whole
 * shape, then the piece's start; src/ops/ops_random.def), so the result is
 * what pd_uniform (and friends) would draw on one process with the same
 * generator state, and the generator advances as for the whole draw.
 * A Partial axis holds the value at coordinate 0 and the reduction's
 * identity elsewhere (avg: everywhere), as pd_shard_tensor does; it is
 * made replicated, then moved to Partial (a local step).
 */
#include <math.h>
#include <string.h>

#include "dist/dist_internal.h"

enum kind { K_EMPTY, K_CONST, K_UNIFORM, K_NORMAL, K_RANDINT };

static struct pd_tensor *build(const char *fn, enum kind k, const int64_t *shape, int ndim, enum pd_dtype dt, double p0,
                               double p1, int64_t i0, int64_t i1, struct pd_generator *g, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (!m || !pl) return pdi_error(PD_ERR_NULL, "%s: mesh and placements are required", fn);
    if (ndim < 0 || ndim > PD_MAX_DIMS || (ndim && !shape))
        return pdi_error(PD_ERR_INVALID, "%s: %d dims (0 to %d, with a shape)", fn, ndim, PD_MAX_DIMS);
    if ((unsigned)dt >= PD_DTYPE_COUNT) return pdi_error(PD_ERR_INVALID, "%s: invalid dtype %d", fn, (int)dt);
    if (pdi_check_shape(fn, shape, ndim)) return NULL;
    if (pdi_dist_check_placements(fn, m, pl, ndim, dt)) return NULL;
    struct pd_placement base[PD_MAX_MESH_DIMS];
    int partial = 0;
    for (int a = 0; a < m->ndim; a++) {
        partial |= pl[a].kind == PD_PARTIAL;
        base[a] = pl[a].kind == PD_PARTIAL ? pd_replicate() : pl[a];
    }
    int64_t lshape[PD_MAX_DIMS] = {0}, start[PD_MAX_DIMS] = {0};
    for (int d = 0; d < ndim && m->index >= 0; d++) {
        int64_t s, e;
        pdi_dist_range(m, base, shape, d, &s, &e);
        start[d] = s, lshape[d] = e - s;
    }
    int tok = pd_scope_begin();
    struct pd_tensor *x;
    if (k == K_EMPTY) {
        x = pd_empty(lshape, ndim, dt);
    } else if (k == K_CONST) {
        x = pd_full(lshape, ndim, p0, dt);
    } else {
        struct pdi_attrs a;
        enum pd_op op = k == K_UNIFORM ? PD_OP_uniform : k == K_NORMAL ? PD_OP_normal : PD_OP_randint;
        pdi_attrs_default(op, &a);
        if (k == K_UNIFORM) a.uniform.low = p0, a.uniform.high = p1;
        else if (k == K_NORMAL) a.normal.mean = p0, a.normal.std = p1;
        else a.randint.low = i0, a.randint.high = i1;
        struct pdi_attrs_uniform *u = &a.uniform; /* the sets share their first fields */
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
        x = pdi_calln(op, NULL, 0, &a);
    }
    struct pd_tensor *t = x ? pdi_dist_wrap(x, m, shape, ndim, base) : NULL;
    if (t && partial) t = pdi_reshard(t, m, pl);
    t = t ? pd_keep(t) : NULL;
    pd_scope_end(tok);
    return t;
}

struct pd_tensor *pd_dtensor_constant(const int64_t *shape, int ndim, double value, enum pd_dtype dt,
                                      struct pd_mesh *m, const struct pd_placement *pl)
{
    return build("dtensor_constant", K_CONST, shape, ndim, dt, value, 0, 0, 0, NULL, m, pl);
}

struct pd_tensor *pd_dtensor_empty(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_mesh *m,
                                   const struct pd_placement *pl)
{
    return build("dtensor_empty", K_EMPTY, shape, ndim, dt, 0, 0, 0, 0, NULL, m, pl);
}

struct pd_tensor *pd_dtensor_zeros(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_mesh *m,
                                   const struct pd_placement *pl)
{
    return build("dtensor_zeros", K_CONST, shape, ndim, dt, 0, 0, 0, 0, NULL, m, pl);
}

struct pd_tensor *pd_dtensor_ones(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_mesh *m,
                                  const struct pd_placement *pl)
{
    return build("dtensor_ones", K_CONST, shape, ndim, dt, 1, 0, 0, 0, NULL, m, pl);
}

struct pd_tensor *pd_dtensor_uniform(const int64_t *shape, int ndim, double lo, double hi, enum pd_dtype dt,
                                     struct pd_generator *g, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (!pd_dtype_is_float(dt))
        return pdi_error(PD_ERR_INVALID, "dtensor_uniform: dtype must be floating, got %s", pd_dtype_name(dt));
    if (!(isfinite(lo) && isfinite(hi) && lo <= hi && isfinite(hi - lo)))
        return pdi_error(PD_ERR_INVALID, "dtensor_uniform: need finite bounds with lo <= hi, got [%g, %g)", lo, hi);
    return build("dtensor_uniform", K_UNIFORM, shape, ndim, dt, lo, hi, 0, 0, g, m, pl);
}

struct pd_tensor *pd_dtensor_normal(const int64_t *shape, int ndim, double mean, double std, enum pd_dtype dt,
                                    struct pd_generator *g, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (!pd_dtype_is_float(dt))
        return pdi_error(PD_ERR_INVALID, "dtensor_normal: dtype must be floating, got %s", pd_dtype_name(dt));
    if (!(std >= 0 && isfinite(std) && isfinite(mean)))
        return pdi_error(PD_ERR_INVALID, "dtensor_normal: need a finite mean and a finite std >= 0, got %g, %g", mean,
                          std);
    return build("dtensor_normal", K_NORMAL, shape, ndim, dt, mean, std, 0, 0, g, m, pl);
}

struct pd_tensor *pd_dtensor_randint(const int64_t *shape, int ndim, int64_t lo, int64_t hi, enum pd_dtype dt,
                                     struct pd_generator *g, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (hi <= lo)
        return pdi_error(PD_ERR_INVALID, "dtensor_randint: need lo < hi, got [%lld, %lld)", (long long)lo,
                          (long long)hi);
    if ((unsigned)dt >= PD_DTYPE_COUNT || pd_dtype_is_float(dt) || dt == PD_BOOL)
        return pdi_error(PD_ERR_INVALID, "dtensor_randint: dtype must be an integer type");
    return build("dtensor_randint", K_RANDINT, shape, ndim, dt, 0, 0, lo, hi, g, m, pl);
}
