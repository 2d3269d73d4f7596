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
/* Start MPI (once; every world query and mesh calls it), the timeout
 * thread and the exit hook (src/dist/comm.c). */
int pdi_dist_start(const char *fn);
/* PD_DIST_TIMEOUT, when set, is a number of seconds >= 0. */
int pdi_comm_check_env(const char *fn);
/* Do placements a and b of n mesh axes say the same? */
static inline int pdi_same_placements(const struct pd_placement *a, const struct pd_placement *b, int n)
{
    for (int k = 0; k < n; k++) {
        if (a[k].kind != b[k].kind) return 0;
        if (a[k].kind == PD_SHARD && (a[k].dim != b[k].dim || a[k].order != b[k].order)) return 0;
        if (a[k].kind == PD_PARTIAL && a[k].op != b[k].op) return 0;
    }
    return 1;
}
/* A copy of a dist, the mesh retained (pdi_dist_hooks.copy). */
void *pdi_dist_copy(const void *dist);
/* Install the distribute stage (spmd.c): called with the first distributed
 * tensor. */
void pdi_spmd_install(void);
/* Inputs whose placements the stage keeps on its stack (sdpa_backward's 7
 * included; a variadic op with more allocates them); a rule that copies
 * the rows keeps that many on its own stack too. */
#define PDI_SPMD_SMALL_IN 8
/* Local functions of the flip and diagonal rules (spmd_rules2.c): the
 * local op, then the pieces exchanged (struct pdi_spmd's local). */
int pdi_flip_local(struct pdi_call *l, const struct pdi_spmd *s);
int pdi_diagonal_gather_local(struct pdi_call *l, const struct pdi_spmd *s);
/* Calls the distribute stage ran, by op, since the last reset (the op
 * harness's distributed mode counts coverage with it). */
void pdi_spmd_stats(int64_t *calls /* [PD_OP_COUNT] */);
void pdi_spmd_stats_reset(void);
/* Finish every attached data-parallel reducer (dp.c); status. */
int pdi_dp_finish_all(void);
void pdi_dp_progress_all(void); /* MPI_Test on the buckets in flight (between backward's nodes) */
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

/* ---- the communication layer (src/dist/comm.c) ---------------------------
 * Every MPI call that waits for other ranks goes through these. Each waits
 * at most the timeout (pd_dist_set_timeout, PD_DIST_TIMEOUT; default 60 s):
 * past it, this rank prints one line (rank, caller, collective, mesh axes,
 * the ranks it waits for) and MPI_Abort ends the job. MPI errors come back
 * as statuses with a pd_last_error() message; after one, or after
 * pdi_comm_skip, this rank is out of step: every later call fails at once
 * and exiting aborts the job (docs/distributed.md, "Failures and timeouts").
 * Call them from the thread that started MPI (MPI_THREAD_FUNNELED). */
struct pdi_comm_on {
    const char *fn;                 /* the caller, as in its error messages ("reshard"); outlives the call */
    struct pd_mesh *mesh;           /* the ranks; NULL: every rank of MPI_COMM_WORLD */
    int naxes;                      /* 0: the whole mesh */
    int axes[PD_MAX_MESH_DIMS];     /* the mesh axes, outermost first (pdi_mesh_sub's order) */
    int quiet;                      /* metadata: not in pd_comm_stats */
};
static inline struct pdi_comm_on pdi_comm_on_axes(const char *fn, struct pd_mesh *m, const int *axes, int naxes)
{
    struct pdi_comm_on on = {fn, m, naxes, {0}, 0};
    for (int i = 0; i < naxes && i < PD_MAX_MESH_DIMS; i++) on.axes[i] = axes[i];
    return on;
}
/* Can MPI reduce dt (f16 and bf16: no, reduce them in f32)? */
int pdi_comm_reducible(enum pd_dtype dt);
/* An MPI count is an int: 1 when n (of `unit`s) fits one message, else 0
 * with the error "<fn>: <what> of <n> <unit> would exceed one MPI message
 * (2^31 - 1 <unit>)". Every layer that forms a message checks with it. */
int pdi_comm_fits(const char *fn, const char *what, int64_t n, const char *unit);
/* Reductions: n elements of dt; PD_RED_AVG sums (the caller divides); send
 * NULL: in place in recv. Byte calls (all-gather, all-to-all, send/recv)
 * take counts and displacements in bytes. Counted in pd_comm_stats as the
 * bytes this rank sends (reduce-scatter: its whole input). */
int pdi_comm_allreduce(const struct pdi_comm_on *on, const void *send, void *recv, int64_t n, enum pd_dtype dt,
                       enum pd_reduce_op op);
int pdi_comm_allgatherv(const struct pdi_comm_on *on, const void *send, int bytes, void *recv, const int *counts,
                        const int *displs);
int pdi_comm_reduce_scatter(const struct pdi_comm_on *on, const void *send, void *recv, const int *counts,
                            enum pd_dtype dt, enum pd_reduce_op op);
int pdi_comm_alltoallv(const struct pdi_comm_on *on, const void *send, const int *scounts, const int *sdispls,
                       void *recv, const int *rcounts, const int *rdispls);
int pdi_comm_barrier(const struct pdi_comm_on *on);
/* Point to point over MPI_COMM_WORLD (peer: a world rank). */
int pdi_comm_send(const char *fn, const void *buf, int bytes, int to, int tag);
int pdi_comm_recv(const char *fn, void *buf, int bytes, int from, int tag);
/* MPI_Comm_split of parent (the message names mesh m's axes; NULL: the
 * world); the new communicator returns errors. */
int pdi_comm_split(const char *fn, struct pd_mesh *m, MPI_Comm parent, int color, int key, MPI_Comm *out);
/* A local error made this rank skip a collective (`what`, e.g. "all-gather")
 * that the others make: this rank is out of step. */
void pdi_comm_skip(const struct pdi_comm_on *on, const char *what);
/* The async all-reduce, for overlapping communication with compute: start
 * it (NULL and the error on failure), then wait once (the timeout runs from
 * the wait; it frees the request). test progresses it (Open MPI moves a
 * non-blocking collective only inside MPI calls) and says whether it is
 * done. send and recv, and the mesh, must live until the wait. */
struct pdi_comm_req;
struct pdi_comm_req *pdi_comm_iallreduce(const struct pdi_comm_on *on, const void *send, void *recv, int64_t n,
                                         enum pd_dtype dt, enum pd_reduce_op op);
int pdi_comm_test(struct pdi_comm_req *q, int *done);
int pdi_comm_wait(struct pdi_comm_req *q);
#endif

#endif
