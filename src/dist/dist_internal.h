/* paddle.c — what the distributed files share (src/dist; include/pd/dist.h). */
#ifndef PD_DIST_INTERNAL_H
#define PD_DIST_INTERNAL_H

#include "core/internal.h"
#include "pd/dist.h"

#ifdef PD_HAVE_MPI
#include <mpi.h>
#else
typedef int MPI_Comm;
#endif

#define PDI_MESH_COMMS 64 /* cached sub-communicators per mesh */

struct pd_mesh {
    int refcount;
    int ndim, n;                          /* n: ranks in the mesh */
    int shape[PD_MAX_MESH_DIMS];
    char names[PD_MAX_MESH_DIMS][32];
    int *ranks;                           /* world rank of each mesh index, row-major */
    int index;                            /* this rank's mesh index, -1 outside */
    int coord[PD_MAX_MESH_DIMS];
    MPI_Comm comm;                        /* over the members, in index order */
    struct { int key; MPI_Comm comm; } sub[PDI_MESH_COMMS]; /* by ordered axis list */
    int n_sub;
    int id; /* pdi_mesh_id */
};
/* A mesh's id (1..) and back: ops name meshes in their attributes by id. */
int pdi_mesh_id(const struct pd_mesh *m);
struct pd_mesh *pdi_mesh_by_id(int64_t id, const char *fn);

/* The axes that shard dim d under pl, outermost first; returns how many. */
int pdi_dist_axes_of(const struct pd_mesh *m, const struct pd_placement *pl, int d, int *axes);
/* This rank's piece of dim d (pieces and index from the sharding axes). */
void pdi_dist_range(const struct pd_mesh *m, const struct pd_placement *pl, const int64_t *gshape, int d, int64_t *start,
                    int64_t *stop);
/* A new tensor (scoped like an op's result) with t's data and dist. */
struct pd_tensor *pdi_dist_wrap(struct pd_tensor *local, struct pd_mesh *m, const int64_t *gshape, int ndim,
                                const struct pd_placement *pl);
int pdi_dist_check_placements(const char *fn, const struct pd_mesh *m, const struct pd_placement *pl, int ndim,
                              enum pd_dtype dt);
int pdi_dist_start(const char *fn);
/* A copy of a dist, the mesh retained (pdi_dist_hooks.copy). */
void *pdi_dist_copy(const void *dist);
/* Install the distribute stage (spmd.c): called with the first distributed
 * tensor. */
void pdi_spmd_install(void);
/* Finish every attached data-parallel reducer (dp.c); status. */
int pdi_dp_finish_all(void);
/* Reshard without autograd (pd_reshard records the op around it), shown
 * to the profiler (spmd.c); _untimed: the collectives alone (reshard.c). */
struct pd_tensor *pdi_reshard(struct pd_tensor *x, struct pd_mesh *m, const struct pd_placement *pl);
struct pd_tensor *pdi_reshard_untimed(struct pd_tensor *x, struct pd_mesh *m, const struct pd_placement *pl);

#ifdef PD_HAVE_MPI
/* The communicator over the mesh axes `axes` (n of them, outermost first):
 * ranks that share the coordinates on every other axis, ordered by the
 * mixed-radix number of their coordinates on `axes`. Cached. */
int pdi_mesh_sub(struct pd_mesh *m, const int *axes, int n, MPI_Comm *out);
int pdi_mpi_error(int rc, const char *fn, const char *what);
void pdi_comm_count(enum pd_comm_kind k, int64_t bytes);
#endif

#endif
