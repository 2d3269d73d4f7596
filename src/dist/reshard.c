/* paddle.c — reshard: every placement transition as MPI collectives on the
 * mesh axes it concerns (include/pd/dist.h, docs/distributed.md).
 *
 *   R -> S   local slice           S -> R   all-gather
 *   P -> R   all-reduce            P -> S   reduce-scatter
 *   S(i) -> S(j) on one axis: all-to-all
 *   R -> P   local: coordinate 0 keeps the value, the others the identity
 *   another mesh: all-gather on the source mesh, send/recv, slice
 * Transitions on several axes at once go by steps: Partial axes reduced,
 * then changed shardings gathered (over all the axes of a dim at once), then
 * the target's shardings sliced and its Partial axes filled. Data moves as
 * bytes; reductions run in the dtype (f16 and bf16 move as 2-byte elements,
 * each combination computed in f32: comm.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"

#define FN "reshard"

/* The local piece's shape under pl. */
static void local_shape(const struct pd_mesh *m, const struct pd_placement *pl, const int64_t *gshape, int ndim,
                        int64_t *out)
{
    for (int d = 0; d < ndim; d++) {
        int64_t s, e;
        pdi_dist_range(m, pl, gshape, d, &s, &e);
        out[d] = e - s;
    }
}

static struct pd_tensor *empty_piece(int ndim, enum pd_dtype dt)
{
    int64_t z[PD_MAX_DIMS] = {0};
    return pd_empty(z, ndim, dt);
}

/* Slice x (the whole extent on every dim pl shards) down to this rank's piece. */
static struct pd_tensor *slice_to(struct pd_tensor *x, const struct pd_mesh *m, const struct pd_placement *pl,
                                  const int64_t *gshape)
{
    for (int d = 0; x && d < x->ndim; d++) {
        int axes[PD_MAX_MESH_DIMS];
        if (!pdi_dist_axes_of(m, pl, d, axes)) continue;
        int64_t s, e;
        pdi_dist_range(m, pl, gshape, d, &s, &e);
        x = pd_slice(x, d, s, e, 1);
    }
    return x;
}

/* R -> P on axis a: the identity of the reduction off coordinate 0. */
static struct pd_tensor *fill_partial(struct pd_tensor *x, const struct pd_mesh *m, int a, enum pd_reduce_op op)
{
    if (!x || m->coord[a] == 0 || op == PD_RED_AVG) return x;
    if (op == PD_RED_SUM) return pd_zeros_like(x);
    int is_max = op == PD_RED_MAX;
    double v;
    switch (x->dtype) {
    case PD_BOOL: v = is_max ? 0 : 1; break;
    case PD_U8: v = is_max ? 0 : 255; break;
    case PD_I8: v = is_max ? -128 : 127; break;
    case PD_I16: v = is_max ? -32768 : 32767; break;
    case PD_I32: v = is_max ? -2147483648.0 : 2147483647.0; break;
    case PD_I64: v = is_max ? -9223372036854775808.0 : 9223372036854775807.0; break;
    default: v = is_max ? -INFINITY : INFINITY; break;
    }
    return pd_full_like(x, v);
}

#ifdef PD_HAVE_MPI
/* x with dim d first, contiguous. */
static struct pd_tensor *front(struct pd_tensor *x, int d)
{
    int perm[PD_MAX_DIMS], k = 0;
    perm[k++] = d;
    for (int i = 0; i < x->ndim; i++)
        if (i != d) perm[k++] = i;
    return pd_contiguous(pd_permute(x, perm, x->ndim));
}

/* The inverse of front: y holds [shape[d], the other dims in order]. */
static struct pd_tensor *back(struct pd_tensor *y, int d)
{
    int perm[PD_MAX_DIMS];
    for (int i = 0; i < y->ndim; i++) perm[i] = i < d ? i + 1 : i == d ? 0 : i;
    return pd_contiguous(pd_permute(y, perm, y->ndim));
}

/* Elements per index of dim d (the product of the other dims). */
static int64_t row_elems(const struct pd_tensor *x, int d)
{
    int64_t r = 1;
    for (int i = 0; i < x->ndim; i++)
        if (i != d) r *= x->shape[i];
    return r;
}

/* A new tensor of `shape` from host bytes (the received data). */
static struct pd_tensor *from_bytes(const void *buf, const int64_t *shape, int ndim, enum pd_dtype dt)
{
    struct pd_tensor *t = pdi_from_host(buf, shape, ndim, dt, FN);
    return t ? pdi_scope_add(t) : NULL;
}

static struct pd_tensor *divide(struct pd_tensor *x, int n)
{
    return pd_div(x, pd_full(NULL, 0, (double)n, x->dtype));
}

/* The dtype a Partial(op) tensor of dt is reduced in over n ranks. Most
 * reductions run in the dtype (f16 and bf16 as 2-byte elements: comm.c).
 * An average over a number of ranks that is not a power of two sums in a
 * wider dtype (f32 in f64, f16 and bf16 in f32) and divides there, rounding
 * once to dt: in dt, n equal values summed and divided by n need not give
 * the value back ((x + x + x) / 3 != x for about one f32 in seven), and R ->
 * P(avg) holds the value on every rank. The wider sum of n equal values is
 * exact, so such a tensor comes back bit for bit. Dividing by a power of two
 * is exact, so 2 and 4 ranks move dt as before. f64 has no wider dtype. */
static enum pd_dtype reduce_dtype(enum pd_dtype dt, enum pd_reduce_op op, int n)
{
    if (op == PD_RED_AVG && (n & (n - 1)) != 0) {
        if (dt == PD_F32) return PD_F64;
        if (dt == PD_F16 || dt == PD_BF16) return PD_F32;
    }
    return pdi_comm_reducible(dt) ? dt : PD_F32;
}

/* S -> R over the axes sharding dim d: an all-gather (uneven pieces by the rule). */
static struct pd_tensor *gather_dim(struct pd_tensor *x, struct pd_mesh *m, const int *axes, int na, int d,
                                    int64_t extent)
{
    struct pdi_comm_on on = pdi_comm_on_axes(FN, m, axes, na);
    int n = 1;
    for (int i = 0; i < na; i++) n *= m->shape[axes[i]];
    struct pd_tensor *f = front(x, d);
    size_t es = pd_dtype_size(x->dtype);
    int64_t row = f ? row_elems(x, d) * (int64_t)es : 0;
    int *counts = f ? pdi_calloc((size_t)n * 2, sizeof *counts) : NULL, *displs = counts ? counts + n : NULL;
    void *out = counts ? pdi_malloc((size_t)(extent * row) + 1) : NULL;
    int rc = out ? PD_OK : f ? pdi_errorf(PD_ERR_NOMEM, FN ": out of memory (all-gather)") : pd_last_status();
    int64_t off = 0;
    for (int i = 0; i < n && !rc; i++) {
        int64_t s, e;
        pd_dist_piece(extent, n, i, &s, &e);
        if (!pdi_comm_fits(FN, "a piece", (e - s) * row, "bytes") || !pdi_comm_fits(FN, "a gathered tensor", off, "bytes")) rc = PD_ERR_INVALID;
        counts[i] = (int)((e - s) * row), displs[i] = (int)off, off += (e - s) * row;
    }
    int64_t mine = f ? f->shape[0] * row : 0;
    const void *src = rc ? NULL : pdi_host_read(f, FN);
    if (!rc && !src && mine) rc = pd_last_status();
    if (!rc) rc = pdi_comm_allgatherv(&on, src, (int)mine, out, counts, displs);
    else pdi_comm_skip(&on, "all-gather");
    struct pd_tensor *y = NULL;
    if (!rc) {
        int64_t shape[PD_MAX_DIMS];
        memcpy(shape, f->shape, sizeof shape);
        shape[0] = extent;
        y = back(from_bytes(out, shape, x->ndim, x->dtype), d);
    }
    free(out);
    free(counts);
    return y;
}

/* P -> R on axis a: an all-reduce. */
static struct pd_tensor *reduce_axis(struct pd_tensor *x, struct pd_mesh *m, int a, enum pd_reduce_op op)
{
    struct pdi_comm_on on = pdi_comm_on_axes(FN, m, &a, 1);
    enum pd_dtype dt = x->dtype, rt = reduce_dtype(dt, op, m->shape[a]);
    struct pd_tensor *w = pd_contiguous(rt != dt ? pd_cast(x, rt) : x);
    int64_t n = w ? pd_tensor_numel(w) : 0;
    size_t bytes = w ? (size_t)n * pd_dtype_size(w->dtype) : 0;
    const void *src = w && pdi_comm_fits(FN, "an all-reduce", n, "elements") ? pdi_host_read(w, FN) : NULL;
    void *out = src || (w && !n) ? pdi_malloc(bytes + 1) : NULL;
    struct pd_tensor *y = NULL;
    if (!out) {
        if (src || (w && !n)) pdi_errorf(PD_ERR_NOMEM, FN ": out of memory (all-reduce)");
        pdi_comm_skip(&on, "all-reduce");
        return NULL;
    }
    if (!pdi_comm_allreduce(&on, n ? src : NULL, out, n, w->dtype, op)) y = from_bytes(out, w->shape, w->ndim, w->dtype);
    free(out);
    if (y && op == PD_RED_AVG) y = divide(y, m->shape[a]);
    return y && y->dtype != dt ? pd_cast(y, dt) : y;
}

/* P -> S(d) on axis a, when only a shards d: a reduce-scatter. */
static struct pd_tensor *reduce_scatter(struct pd_tensor *x, struct pd_mesh *m, int a, enum pd_reduce_op op, int d)
{
    struct pdi_comm_on on = pdi_comm_on_axes(FN, m, &a, 1);
    enum pd_dtype dt = x->dtype, rt = reduce_dtype(dt, op, m->shape[a]);
    struct pd_tensor *f = front(rt != dt ? pd_cast(x, rt) : x, d);
    int n = m->shape[a];
    int64_t row = f ? row_elems(f, 0) : 0, extent = f ? f->shape[0] : 0, s, e;
    int *counts = f ? pdi_calloc((size_t)n, sizeof *counts) : NULL;
    if (f && !counts) pdi_errorf(PD_ERR_NOMEM, FN ": out of memory (reduce-scatter)");
    int ok = counts && pdi_comm_fits(FN, "a reduce-scatter", extent * row, "elements");
    for (int i = 0; i < n && ok; i++) pd_dist_piece(extent, n, i, &s, &e), counts[i] = (int)((e - s) * row);
    pd_dist_piece(extent, n, m->coord[a], &s, &e);
    int64_t shape[PD_MAX_DIMS];
    if (f) memcpy(shape, f->shape, sizeof shape);
    shape[0] = e - s;
    size_t bytes = f ? (size_t)((e - s) * row) * pd_dtype_size(f->dtype) : 0;
    void *dst = ok ? pdi_malloc(bytes + 1) : NULL;
    const void *src = dst && extent * row != 0 ? pdi_host_read(f, FN) : NULL;
    struct pd_tensor *y = NULL;
    if (ok && !dst) pdi_errorf(PD_ERR_NOMEM, FN ": out of memory (reduce-scatter)");
    if (dst && (src || extent * row == 0)) {
        if (!pdi_comm_reduce_scatter(&on, src, dst, counts, f->dtype, op)) y = from_bytes(dst, shape, f->ndim, f->dtype);
    } else {
        pdi_comm_skip(&on, "reduce-scatter");
    }
    free(dst);
    free(counts);
    if (y && op == PD_RED_AVG) y = divide(y, n);
    y = y ? back(y, d) : NULL;
    return y && y->dtype != dt ? pd_cast(y, dt) : y;
}

/* S(i) -> S(j) on axis a, when only a shards i before and j after: an all-to-all. */
static struct pd_tensor *all_to_all(struct pd_tensor *x, struct pd_mesh *m, int a, int i, int j, const int64_t *gshape)
{
    struct pdi_comm_on on = pdi_comm_on_axes(FN, m, &a, 1);
    int n = m->shape[a];
    size_t es = pd_dtype_size(x->dtype);
    struct pd_tensor *f = front(x, j); /* [Nj, ...], dim i (at i + (i < j)) holds this rank's piece */
    if (!f) return pdi_comm_skip(&on, "all-to-all"), NULL;
    int64_t row = row_elems(f, 0) * (int64_t)es, s, e, my_s, my_e;
    pd_dist_piece(gshape[j], n, m->coord[a], &my_s, &my_e);
    int64_t my_rows = my_e - my_s, in_i = i < j ? i + 1 : i; /* dim i's place in f */
    int64_t other = 1; /* elements per index pair (row of j, index of i) */
    for (int k = 1; k < f->ndim; k++)
        if (k != in_i) other *= f->shape[k];
    int *cnt = pdi_calloc((size_t)n * 4, sizeof *cnt);
    if (!cnt) return pdi_comm_skip(&on, "all-to-all"), pdi_error(PD_ERR_NOMEM, FN ": out of memory (all-to-all)");
    int *sd = cnt + n, *rc_ = cnt + 2 * n, *rd = cnt + 3 * n;
    int64_t so = 0, ro = 0;
    int ok = 1;
    for (int k = 0; k < n; k++) {
        pd_dist_piece(gshape[j], n, k, &s, &e);
        int64_t ks, ke;
        pd_dist_piece(gshape[i], n, k, &ks, &ke);
        int64_t sb = (e - s) * row, rb = my_rows * other * (ke - ks) * (int64_t)es;
        ok = ok && pdi_comm_fits(FN, "an all-to-all", so + sb, "bytes") && pdi_comm_fits(FN, "an all-to-all", ro + rb, "bytes");
        cnt[k] = (int)sb, sd[k] = (int)so, rc_[k] = (int)rb, rd[k] = (int)ro, so += sb, ro += rb;
    }
    void *out = ok ? pdi_malloc((size_t)ro + 1) : NULL;
    const void *src = out ? pdi_host_read(f, FN) : NULL;
    struct pd_tensor *y = NULL;
    if (out && (src || !so)) {
        int rc = pdi_comm_alltoallv(&on, src, cnt, sd, out, rc_, rd);
        /* block k is [my_rows, ..., piece k of dim i, ...] in f's order: back, then concatenate along i */
        struct pd_tensor **parts = rc ? NULL : pdi_calloc((size_t)n, sizeof *parts);
        if (!rc && !parts) pdi_errorf(PD_ERR_NOMEM, FN ": out of memory (all-to-all)");
        int good = parts != NULL;
        for (int k = 0; k < n && good; k++) {
            int64_t ks, ke, shape[PD_MAX_DIMS];
            pd_dist_piece(gshape[i], n, k, &ks, &ke);
            memcpy(shape, f->shape, sizeof shape);
            shape[0] = my_rows, shape[in_i] = ke - ks;
            parts[k] = back(from_bytes((char *)out + rd[k], shape, f->ndim, f->dtype), j);
            good = parts[k] != NULL;
        }
        if (good) y = pd_concat(parts, n, i);
        free(parts);
    } else {
        if (ok && !out) pdi_errorf(PD_ERR_NOMEM, FN ": out of memory (all-to-all)");
        pdi_comm_skip(&on, "all-to-all");
    }
    free(out);
    free(cnt);
    return y;
}

/* One transition on one mesh. x: the local piece under `from`. */
static struct pd_tensor *reshard_same(struct pd_tensor *x, struct pd_mesh *m, const struct pd_placement *from,
                                      const struct pd_placement *to, const int64_t *gshape)
{
    if (m->index < 0) return empty_piece(x->ndim, x->dtype);
    struct pd_placement cur[PD_MAX_MESH_DIMS];
    memcpy(cur, from, sizeof *cur * (size_t)m->ndim);
    int diff = -1, n_diff = 0;
    for (int a = 0; a < m->ndim; a++)
        if (!pdi_same_placements(&cur[a], &to[a], 1)) diff = a, n_diff++;
    if (!n_diff) return x;
    int ax[PD_MAX_MESH_DIMS];
    if (n_diff == 1) { /* the direct paths: one axis, dims no other axis shards */
        int a = diff;
        if (cur[a].kind == PD_PARTIAL && to[a].kind == PD_SHARD && !pdi_dist_axes_of(m, cur, to[a].dim, ax))
            return reduce_scatter(x, m, a, cur[a].op, to[a].dim);
        if (cur[a].kind == PD_SHARD && to[a].kind == PD_SHARD && cur[a].dim != to[a].dim &&
            pdi_dist_axes_of(m, cur, cur[a].dim, ax) == 1 && !pdi_dist_axes_of(m, cur, to[a].dim, ax))
            return all_to_all(x, m, a, cur[a].dim, to[a].dim, gshape);
    }
    /* 1. reduce the Partial axes the target does not keep */
    for (int a = 0; x && a < m->ndim; a++)
        if (cur[a].kind == PD_PARTIAL && !pdi_same_placements(&cur[a], &to[a], 1)) x = reduce_axis(x, m, a, cur[a].op), cur[a] = pd_replicate();
    /* 2. gather every dim whose sharding changes */
    for (int d = 0; x && d < x->ndim; d++) {
        int na = pdi_dist_axes_of(m, cur, d, ax), tb[PD_MAX_MESH_DIMS], nb = pdi_dist_axes_of(m, to, d, tb);
        if (!na || (na == nb && !memcmp(ax, tb, sizeof *ax * (size_t)na))) continue;
        x = gather_dim(x, m, ax, na, d, gshape[d]);
        for (int i = 0; i < na; i++) cur[ax[i]] = pd_replicate();
    }
    /* 3. slice to the target's shards, 4. fill its new Partial axes */
    struct pd_placement sl[PD_MAX_MESH_DIMS];
    for (int a = 0; a < m->ndim; a++)
        sl[a] = to[a].kind == PD_SHARD && cur[a].kind == PD_REPLICATE ? to[a] : pd_replicate();
    x = x ? slice_to(x, m, sl, gshape) : NULL;
    for (int a = 0; x && a < m->ndim; a++)
        if (to[a].kind == PD_PARTIAL && cur[a].kind != PD_PARTIAL) x = fill_partial(x, m, a, to[a].op);
    return x;
}

/* To another mesh: whole on the source mesh, then rank i of the target gets
 * it from rank i mod n of the source, then slices. */
static struct pd_tensor *reshard_cross(struct pd_tensor *x, struct pd_mesh *src, const struct pd_placement *from,
                                       struct pd_mesh *dst, const struct pd_placement *to, const int64_t *gshape, int ndim)
{
    struct pd_placement rep[PD_MAX_MESH_DIMS];
    for (int a = 0; a < PD_MAX_MESH_DIMS; a++) rep[a] = pd_replicate();
    struct pdi_comm_on world = {.fn = FN};
    struct pd_tensor *full = src->index >= 0 ? reshard_same(x, src, from, rep, gshape) : NULL;
    full = full ? pd_contiguous(full) : NULL;
    size_t bytes = (size_t)pdi_numel(gshape, ndim) * pd_dtype_size(x->dtype);
    if (!pdi_comm_fits(FN, "a send", (int64_t)bytes, "bytes")) return NULL;
    int me = pd_dist_world_rank(), rc = PD_OK;
    struct pd_tensor *got = NULL;
    if (src->index >= 0) { /* send to the target ranks this rank serves */
        const void *p = full ? pdi_host_read(full, FN) : NULL;
        if (!p && bytes) return pdi_comm_skip(&world, "send"), NULL;
        for (int i = src->index; i < dst->n && !rc; i += src->n)
            if (dst->ranks[i] != me) rc = pdi_comm_send(FN, p, (int)bytes, dst->ranks[i], 7301);
    }
    if (rc) return NULL;
    if (dst->index < 0) return empty_piece(ndim, x->dtype);
    int from_rank = src->ranks[dst->index % src->n];
    if (from_rank == me) {
        got = full;
    } else {
        void *rbuf = pdi_malloc(bytes + 1);
        if (!rbuf) return pdi_comm_skip(&world, "recv"), pdi_error(PD_ERR_NOMEM, FN ": out of memory (receive)");
        if (!pdi_comm_recv(FN, rbuf, (int)bytes, from_rank, 7301)) got = from_bytes(rbuf, gshape, ndim, x->dtype);
        free(rbuf);
    }
    got = got ? slice_to(got, dst, to, gshape) : NULL;
    for (int a = 0; got && a < dst->ndim; a++)
        if (to[a].kind == PD_PARTIAL) got = fill_partial(got, dst, a, to[a].op);
    return got;
}
#endif

struct pd_tensor *pd_shard_tensor(struct pd_tensor *global, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (!global) return NULL;
    if (global->dist) return pdi_error(PD_ERR_INVALID, "shard_tensor: the tensor is distributed already (use pd_reshard)");
    if (pdi_dist_check_placements("shard_tensor", m, pl, global->ndim, global->dtype)) return NULL;
    int tok = pd_scope_begin();
    struct pd_tensor *x = m->index < 0 ? empty_piece(global->ndim, global->dtype) : slice_to(global, m, pl, global->shape);
    for (int a = 0; x && m->index >= 0 && a < m->ndim; a++)
        if (pl[a].kind == PD_PARTIAL) x = fill_partial(x, m, a, pl[a].op);
    x = x ? pd_clone(x) : NULL; /* its own storage, not a view of the caller's tensor */
    struct pd_tensor *t = pd_keep(pdi_dist_wrap(x, m, global->shape, global->ndim, pl));
    pd_scope_end(tok);
    return t;
}

struct pd_tensor *pd_dtensor_from_local(struct pd_tensor *local, const int64_t *global_shape, struct pd_mesh *m,
                                        const struct pd_placement *pl)
{
    const char *fn = "dtensor_from_local";
    if (!local) return NULL;
    if (local->dist) return pdi_error(PD_ERR_INVALID, "%s: the tensor is distributed already", fn);
    if (pdi_dist_check_placements(fn, m, pl, local->ndim, local->dtype)) return NULL;
    int64_t g[PD_MAX_DIMS], want[PD_MAX_DIMS];
    if (global_shape) {
        memcpy(g, global_shape, sizeof(int64_t) * (size_t)local->ndim);
    } else {
        memcpy(g, local->shape, sizeof g);
#ifdef PD_HAVE_MPI
        for (int d = 0; d < local->ndim && m->index >= 0; d++) {
            int ax[PD_MAX_MESH_DIMS], na = pdi_dist_axes_of(m, pl, d, ax);
            if (!na) continue;
            struct pdi_comm_on on = pdi_comm_on_axes(fn, m, ax, na);
            on.quiet = 1; /* metadata, not counted */
            if (pdi_comm_allreduce(&on, &local->shape[d], &g[d], 1, PD_I64, PD_RED_SUM)) return NULL;
        }
#endif
    }
    if (m->index >= 0) {
        local_shape(m, pl, g, local->ndim, want);
        for (int d = 0; d < local->ndim; d++)
            if (want[d] != local->shape[d])
                return pdi_error(PD_ERR_INVALID,
                                 "%s: rank %d holds %lld along dim %d; the split rule gives it %lld of %lld "
                                 "(include/pd/dist.h)",
                                 fn, pd_dist_world_rank(), (long long)local->shape[d], d, (long long)want[d],
                                 (long long)g[d]);
    }
    return pdi_dist_wrap(local, m, g, local->ndim, pl);
}

struct pd_tensor *pdi_reshard_untimed(struct pd_tensor *x, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (!x) return NULL;
    if (!x->dist) return pdi_error(PD_ERR_INVALID, FN ": not a distributed tensor (use pd_shard_tensor)");
    struct pdi_dist *d = x->dist;
    if (pdi_dist_check_placements(FN, m, pl, d->ndim, x->dtype)) return NULL;
#ifdef PD_HAVE_MPI
    int tok = pd_scope_begin();
    struct pd_tensor *plain = pd_dtensor_local(x), *y;
    if (m == d->mesh) y = reshard_same(plain, m, d->pl, pl, d->gshape);
    else y = reshard_cross(plain, d->mesh, d->pl, m, pl, d->gshape, d->ndim);
    y = y ? pd_contiguous(y) : NULL;
    struct pd_tensor *t = pd_keep(pdi_dist_wrap(y, m, d->gshape, d->ndim, pl));
    pd_scope_end(tok);
    /* failed after the checks every rank makes alike: the others may have
     * gone on (or wait for this rank), so the ranks are out of step */
    if (!t) pdi_comm_skip(&(struct pdi_comm_on){.fn = FN}, "reshard");
    return t;
#else
    return pdi_error(PD_ERR_STATE, FN ": paddle.c was built without MPI");
#endif
}

struct pd_tensor *pd_dtensor_full(struct pd_tensor *x)
{
    if (!x) return NULL;
    if (!x->dist) return pdi_error(PD_ERR_INVALID, "dtensor_full: not a distributed tensor");
    struct pdi_dist *d = x->dist;
    struct pd_placement rep[PD_MAX_MESH_DIMS];
    for (int a = 0; a < PD_MAX_MESH_DIMS; a++) rep[a] = pd_replicate();
    int tok = pd_scope_begin();
    struct pd_tensor *r = pdi_reshard(x, d->mesh, rep);
    struct pd_tensor *t = pd_keep(pd_dtensor_local(r));
    pd_scope_end(tok);
    return t;
}
