/* paddle.c — process meshes and distributed tensors (include/pd/dist.h).
 * MPI starts with the first mesh or world query, never before
 * (pdi_dist_start, src/dist/comm.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"

static struct pd_comm_stats comm_stats;

void pd_comm_stats(struct pd_comm_stats *out)
{
    if (out) *out = comm_stats;
}
void pd_comm_stats_reset(void) { memset(&comm_stats, 0, sizeof comm_stats); }

#ifdef PD_HAVE_MPI
void pdi_comm_count(enum pd_comm_kind k, int64_t bytes)
{
    comm_stats.calls[k]++;
    comm_stats.bytes[k] += bytes;
}

int pdi_mpi_error(int rc, const char *fn, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(rc, s, &n) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error %d", rc);
    for (int i = 0; i < n && s[i]; i++)
        if (s[i] == '\n') s[i] = ' ';
    return pdi_errorf(PD_ERR_IO, "%s: %s failed on rank %d: %s", fn, what, pd_dist_world_rank(), s);
}

int pd_dist_is_initialized(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

int pd_dist_world_size(void)
{
    int n = 1;
    if (pdi_dist_start("dist_world_size") == PD_OK) MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

int pd_dist_world_rank(void)
{
    int r = 0;
    if (pdi_dist_start("dist_world_rank") == PD_OK) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}
#else
int pd_dist_is_initialized(void) { return 0; }
int pd_dist_world_size(void) { return 1; }
int pd_dist_world_rank(void) { return 0; }
#endif

/* ---- meshes ------------------------------------------------------------ */
/* Meshes by id: an op's attributes name a mesh by its id (pdi_mesh_id). */
#define MAX_MESHES 256
static struct pd_mesh *meshes[MAX_MESHES];

static int mesh_register(struct pd_mesh *m)
{
    for (int i = 0; i < MAX_MESHES; i++)
        if (!meshes[i]) {
            meshes[i] = m;
            m->id = i + 1;
            return PD_OK;
        }
    return pdi_errorf(PD_ERR_INVALID, "mesh_create: more than %d meshes alive", MAX_MESHES);
}

int pdi_mesh_id(const struct pd_mesh *m) { return m->id; }

struct pd_mesh *pdi_mesh_by_id(int64_t id, const char *fn)
{
    if (id < 1 || id > MAX_MESHES || !meshes[id - 1])
        return pdi_error(PD_ERR_INVALID, "%s: no mesh with id %lld", fn, (long long)id);
    return meshes[id - 1];
}

struct pd_mesh *pd_mesh_create(const int *shape, int ndim, const char *const *names, const int *ranks)
{
    const char *fn = "mesh_create";
    if (!shape) return pdi_error(PD_ERR_NULL, "%s: shape is NULL", fn);
    if (ndim < 1 || ndim > PD_MAX_MESH_DIMS)
        return pdi_error(PD_ERR_INVALID, "%s: ndim %d outside [1, %d]", fn, ndim, PD_MAX_MESH_DIMS);
    if (pdi_dist_start(fn) || pdi_comm_check_env(fn)) return NULL;
    int world = pd_dist_world_size(), me = pd_dist_world_rank();
    int64_t n = 1;
    for (int a = 0; a < ndim; a++) {
        if (shape[a] < 1) return pdi_error(PD_ERR_INVALID, "%s: axis %d has size %d", fn, a, shape[a]);
        n *= shape[a];
        if (n > world)
            return pdi_error(PD_ERR_INVALID, "%s: the mesh needs more than the %d ranks of the world", fn, world);
    }
    for (int a = 0; names && a < ndim; a++) {
        if (!names[a] || !names[a][0] || strlen(names[a]) >= 32)
            return pdi_error(PD_ERR_INVALID, "%s: axis %d needs a name of 1 to 31 bytes", fn, a);
        for (int b = 0; b < a; b++)
            if (!strcmp(names[a], names[b])) return pdi_error(PD_ERR_INVALID, "%s: two axes named %s", fn, names[a]);
    }
    struct pd_mesh *m = pdi_calloc(1, sizeof *m);
    int *rk = m ? pdi_calloc((size_t)n, sizeof *rk) : NULL;
    char *seen = rk ? pdi_calloc((size_t)world, 1) : NULL;
    if (!seen) {
        free(rk), free(m);
        return pdi_error(PD_ERR_NOMEM, "%s: out of memory", fn);
    }
    m->refcount = 1, m->ndim = ndim, m->n = (int)n, m->ranks = rk, m->index = -1;
    for (int i = 0; i < n; i++) {
        rk[i] = ranks ? ranks[i] : i;
        if (rk[i] < 0 || rk[i] >= world || seen[rk[i]]) {
            free(seen);
            pd_mesh_release(m);
            return pdi_error(PD_ERR_INVALID, "%s: rank %d is outside [0, %d) or given twice", fn, ranks ? ranks[i] : i,
                             world);
        }
        seen[rk[i]] = 1;
        if (rk[i] == me) m->index = i;
    }
    free(seen);
    if (mesh_register(m)) {
        pd_mesh_release(m);
        return NULL;
    }
    for (int a = 0; a < ndim; a++) {
        m->shape[a] = shape[a];
        if (names) snprintf(m->names[a], sizeof m->names[a], "%s", names[a]);
        else snprintf(m->names[a], sizeof m->names[a], "d%d", a);
    }
    for (int a = ndim - 1, r = m->index; a >= 0 && m->index >= 0; a--) m->coord[a] = r % shape[a], r /= shape[a];
    for (int a = 0; a < ndim && m->index < 0; a++) m->coord[a] = -1;
#ifdef PD_HAVE_MPI
    m->comm = MPI_COMM_NULL;
    if (pdi_comm_split(fn, NULL, MPI_COMM_WORLD, m->index >= 0 ? 0 : MPI_UNDEFINED, m->index, &m->comm)) {
        pd_mesh_release(m);
        return NULL;
    }
#endif
    return m;
}

void pd_mesh_retain(struct pd_mesh *m)
{
    if (m) m->refcount++;
}

void pd_mesh_release(struct pd_mesh *m)
{
    if (!m || --m->refcount > 0) return;
    if (m->id) meshes[m->id - 1] = NULL;
#ifdef PD_HAVE_MPI
    int fin = 0;
    MPI_Finalized(&fin);
    for (int i = 0; i < m->n_sub && !fin; i++)
        if (m->sub[i].comm != MPI_COMM_NULL) MPI_Comm_free(&m->sub[i].comm);
    if (!fin && m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
#endif
    free(m->ranks);
    free(m);
}

int pd_mesh_ndim(const struct pd_mesh *m) { return m ? m->ndim : PD_ERR_NULL; }
int pd_mesh_size(const struct pd_mesh *m, int axis)
{
    if (!m) return PD_ERR_NULL;
    if (axis == -1) return m->n;
    if (axis < 0 || axis >= m->ndim) return pdi_errorf(PD_ERR_INVALID, "mesh_size: axis %d outside [0, %d)", axis, m->ndim);
    return m->shape[axis];
}
int pd_mesh_axis(const struct pd_mesh *m, const char *name)
{
    for (int a = 0; m && name && a < m->ndim; a++)
        if (!strcmp(m->names[a], name)) return a;
    return -1;
}
const char *pd_mesh_axis_name(const struct pd_mesh *m, int axis)
{
    return m && axis >= 0 && axis < m->ndim ? m->names[axis] : NULL;
}
int pd_mesh_coord(const struct pd_mesh *m, int axis)
{
    return m && axis >= 0 && axis < m->ndim ? m->coord[axis] : -1;
}
int pd_mesh_contains(const struct pd_mesh *m) { return m && m->index >= 0; }

#ifdef PD_HAVE_MPI
int pdi_mesh_sub(struct pd_mesh *m, const int *axes, int n, MPI_Comm *out)
{
    int key = 1;
    for (int i = 0; i < n; i++) key = key * (PD_MAX_MESH_DIMS + 1) + axes[i] + 1;
    for (int i = 0; i < m->n_sub; i++)
        if (m->sub[i].key == key) return *out = m->sub[i].comm, PD_OK;
    if (m->n_sub == PDI_MESH_COMMS) return pdi_errorf(PD_ERR_STATE, "mesh: more than %d axis groups", PDI_MESH_COMMS);
    int color = 0, order = 0, in[PD_MAX_MESH_DIMS] = {0};
    for (int i = 0; i < n; i++) in[axes[i]] = 1, order = order * m->shape[axes[i]] + m->coord[axes[i]];
    for (int a = 0; a < m->ndim; a++)
        if (!in[a]) color = color * m->shape[a] + m->coord[a];
    MPI_Comm c;
    int rc = pdi_comm_split("mesh", m, m->comm, color, order, &c);
    if (rc) return rc;
    m->sub[m->n_sub].key = key, m->sub[m->n_sub].comm = c, m->n_sub++;
    *out = c;
    return PD_OK;
}
#endif

/* ---- placements and pieces -------------------------------------------- */
void pd_dist_piece(int64_t extent, int pieces, int index, int64_t *start, int64_t *stop)
{
    int64_t c = pieces > 0 ? (extent + pieces - 1) / pieces : extent;
    int64_t s = index < 0 ? 0 : (int64_t)index * c, e = s + c;
    if (s > extent) s = extent;
    if (e > extent) e = extent;
    if (start) *start = s;
    if (stop) *stop = e;
}

int pdi_dist_axes_of(const struct pd_mesh *m, const struct pd_placement *pl, int d, int *axes)
{
    int n = 0;
    for (int a = 0; a < m->ndim; a++) {
        if (pl[a].kind != PD_SHARD || pl[a].dim != d) continue;
        int k = n++; /* insertion by (order, axis) */
        while (k > 0 && pl[axes[k - 1]].order > pl[a].order) axes[k] = axes[k - 1], k--;
        axes[k] = a;
    }
    return n;
}

void pdi_dist_range(const struct pd_mesh *m, const struct pd_placement *pl, const int64_t *gshape, int d, int64_t *start,
                    int64_t *stop)
{
    int axes[PD_MAX_MESH_DIMS], n = pdi_dist_axes_of(m, pl, d, axes), pieces = 1, index = 0;
    for (int i = 0; i < n; i++) pieces *= m->shape[axes[i]], index = index * m->shape[axes[i]] + m->coord[axes[i]];
    if (m->index < 0) { /* outside the mesh: nothing */
        *start = *stop = 0;
        return;
    }
    pd_dist_piece(gshape[d], pieces, index, start, stop);
}

int pdi_dist_check_placements(const char *fn, const struct pd_mesh *m, const struct pd_placement *pl, int ndim,
                              enum pd_dtype dt)
{
    if (!m || !pl) return pdi_errorf(PD_ERR_NULL, "%s: %s is NULL", fn, m ? "placements" : "mesh");
    int partial = -1;
    for (int a = 0; a < m->ndim; a++) {
        const struct pd_placement *p = &pl[a];
        /* a tensor is the reduction over its Partial axes: one reduction, or
         * the order of the axes would matter */
        if (p->kind == PD_PARTIAL && partial >= 0 && pl[partial].op != p->op)
            return pdi_errorf(PD_ERR_INVALID, "%s: mesh axes %s and %s are Partial with different reductions", fn,
                              m->names[partial], m->names[a]);
        if (p->kind == PD_PARTIAL) partial = a;
        if (p->kind == PD_SHARD && (p->dim < 0 || p->dim >= ndim))
            return pdi_errorf(PD_ERR_INVALID, "%s: mesh axis %s shards dim %d of a %d-d tensor", fn, m->names[a], p->dim,
                              ndim);
        if (p->kind == PD_PARTIAL && ((unsigned)p->op >= PD_RED_COUNT))
            return pdi_errorf(PD_ERR_INVALID, "%s: mesh axis %s: reduction %d is not sum, avg, max or min", fn,
                              m->names[a], (int)p->op);
        if (p->kind == PD_PARTIAL && p->op == PD_RED_AVG && !pd_dtype_is_float(dt))
            return pdi_errorf(PD_ERR_INVALID, "%s: mesh axis %s: Partial(avg) needs a floating dtype, not %s", fn,
                              m->names[a], pd_dtype_name(dt));
        if ((unsigned)p->kind > PD_PARTIAL)
            return pdi_errorf(PD_ERR_INVALID, "%s: mesh axis %s: placement kind %d", fn, m->names[a], (int)p->kind);
    }
    return PD_OK;
}

/* ---- distributed tensors ---------------------------------------------- */
static void dist_free(void *p)
{
    struct pdi_dist *d = p;
    pd_mesh_release(d->mesh);
    pd_tensor_release(d->local);
    pdi_dist_delete(d);
}

struct pd_tensor *pdi_dist_wrap(struct pd_tensor *local, struct pd_mesh *m, const int64_t *gshape, int ndim,
                                const struct pd_placement *pl)
{
    if (!local) return NULL;
    if (local->dist) return pdi_error(PD_ERR_STATE, "dist: wrapping a distributed tensor");
    struct pdi_dist *d = pdi_dist_new();
    int64_t st[PD_MAX_DIMS];
    pdi_contiguous_strides(gshape, ndim, st);
    /* a new handle on the same storage, shaped as the global tensor */
    struct pd_tensor *t = d ? pdi_tensor_alias(local, gshape, st, ndim, 0) : NULL;
    if (!t) {
        pdi_dist_delete(d);
        return d ? NULL : pdi_error(PD_ERR_NOMEM, "dist: out of memory");
    }
    d->mesh = m, d->ndim = ndim;
    pd_mesh_retain(m);
    memcpy(d->gshape, gshape, sizeof(int64_t) * (size_t)ndim);
    memcpy(d->pl, pl, sizeof *pl * (size_t)m->ndim);
    memcpy(d->lshape, local->shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(d->lstrides, local->strides, sizeof(int64_t) * (size_t)ndim);
    d->loffset = local->offset;
    __atomic_store_n(&pdi_tensor_dist_release, dist_free, __ATOMIC_RELAXED);
    pdi_spmd_install();
    t->dist = d;
    return pdi_scope_add(t);
}

void *pdi_dist_copy(const void *p)
{
    struct pdi_dist *d = pdi_dist_new();
    if (!d) return pdi_error(PD_ERR_NOMEM, "dist: out of memory");
    memcpy(d, p, sizeof *d);
    d->local = NULL; /* the stage's handle stays with the original */
    pd_mesh_retain(d->mesh);
    return d;
}

int pd_dtensor_is_dist(const struct pd_tensor *t) { return t && t->dist; }
const int64_t *pd_dtensor_shape(const struct pd_tensor *t)
{
    return t && t->dist ? ((const struct pdi_dist *)t->dist)->gshape : NULL;
}
struct pd_mesh *pd_dtensor_mesh(const struct pd_tensor *t)
{
    return t && t->dist ? ((const struct pdi_dist *)t->dist)->mesh : NULL;
}
const struct pd_placement *pd_dtensor_placements(const struct pd_tensor *t)
{
    return t && t->dist ? ((const struct pdi_dist *)t->dist)->pl : NULL;
}

struct pd_tensor *pd_dtensor_local(struct pd_tensor *x)
{
    if (!x) return NULL;
    if (!x->dist) return pdi_error(PD_ERR_INVALID, "dtensor_local: not a distributed tensor");
    const struct pdi_dist *d = x->dist;
    return pdi_scope_add(pdi_tensor_alias(x, d->lshape, d->lstrides, d->ndim, d->loffset));
}
