/* paddle.c — distributed tensors over MPI: process meshes, placements and
 * reshard (docs/distributed.md).
 *
 * A mesh is an N-d grid of MPI ranks with named axes. A distributed tensor
 * is an ordinary pd_tensor holding this rank's local piece, plus a global
 * shape, a mesh and one placement per mesh axis:
 *   - Replicate: every rank along the axis holds the whole extent;
 *   - Shard(dim): tensor dim `dim` is cut into pieces along the axis;
 *   - Partial(op): every rank holds a full-shape value, and the tensor is the
 *     reduction (sum, avg, max or min) of them along the axis.
 * pd_tensor_shape() of a distributed tensor is its local shape;
 * pd_dtensor_shape() is the global one.
 *
 * Uneven splits, one rule everywhere (the rule of torch.chunk): a dim of
 * extent N split into n pieces (n = the product of the sizes of every mesh
 * axis that shards it) has pieces of ceil(N / n) elements, the last ones
 * shorter or empty. Piece b covers [min(b c, N), min((b + 1) c, N)) with
 * c = ceil(N / n). When several mesh axes shard one dim, b is the mixed-radix
 * number of the ranks' coordinates on those axes, the axis with the lowest
 * `order` (then the lowest axis index) outermost.
 *
 * MPI starts with the first mesh: a program that never makes one never
 * calls MPI_Init and runs without mpirun. Mesh creation and reshard are
 * collective: every rank of MPI_COMM_WORLD calls them with the same
 * arguments (ranks outside a mesh hold an empty local piece). MPI errors are
 * returned (MPI_ERRORS_RETURN) as statuses with a message naming the
 * collective and the mesh axes.
 */
#ifndef PD_DIST_H
#define PD_DIST_H

#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PD_MAX_MESH_DIMS 4

enum pd_placement_kind { PD_REPLICATE = 0, PD_SHARD = 1, PD_PARTIAL = 2 };
enum pd_reduce_op { PD_RED_SUM = 0, PD_RED_AVG = 1, PD_RED_MAX = 2, PD_RED_MIN = 3, PD_RED_COUNT };

struct pd_placement {
    enum pd_placement_kind kind;
    int dim;              /* PD_SHARD: the tensor dim */
    int order;            /* PD_SHARD: nesting among the axes sharding one dim (0: outermost) */
    enum pd_reduce_op op; /* PD_PARTIAL: the reduction */
};
static inline struct pd_placement pd_replicate(void) { return (struct pd_placement){PD_REPLICATE, 0, 0, PD_RED_SUM}; }
static inline struct pd_placement pd_shard(int dim) { return (struct pd_placement){PD_SHARD, dim, 0, PD_RED_SUM}; }
static inline struct pd_placement pd_partial(enum pd_reduce_op op) { return (struct pd_placement){PD_PARTIAL, 0, 0, op}; }

struct pd_mesh;

/* World facts; they start MPI when it has not started (size 1 and rank 0
 * without mpirun). */
int pd_dist_world_size(void);
int pd_dist_world_rank(void);
/* Is MPI running in this process (a mesh or a world query started it)? */
int pd_dist_is_initialized(void);

/* A mesh of shape[0] x ... x shape[ndim-1] ranks, row-major over `ranks`
 * (world ranks, each once; NULL: 0, 1, ... in order), axes named by `names`
 * (NULL: "d0", "d1", ...). Collective over MPI_COMM_WORLD. */
struct pd_mesh *pd_mesh_create(const int *shape, int ndim, const char *const *names, const int *ranks);
void pd_mesh_retain(struct pd_mesh *m);
void pd_mesh_release(struct pd_mesh *m); /* NULL is a no-op */
int pd_mesh_ndim(const struct pd_mesh *m);
int pd_mesh_size(const struct pd_mesh *m, int axis); /* axis -1: all ranks */
int pd_mesh_axis(const struct pd_mesh *m, const char *name); /* -1 if none */
const char *pd_mesh_axis_name(const struct pd_mesh *m, int axis);
/* This rank's coordinate on axis (-1 when it is not in the mesh). */
int pd_mesh_coord(const struct pd_mesh *m, int axis);
int pd_mesh_contains(const struct pd_mesh *m); /* is this rank in it? */

/* Where [start, stop) of a dim of extent n lies for a piece; see the rule above. */
void pd_dist_piece(int64_t extent, int pieces, int index, int64_t *start, int64_t *stop);

/* A distributed tensor from the global value, which every rank passes
 * whole; each keeps its piece (no communication). Partial: the rank at
 * coordinate 0 keeps the value and the others hold the reduction's identity
 * (0 for sum, -inf/+inf for max/min), except avg, where every rank keeps it. */
struct pd_tensor *pd_shard_tensor(struct pd_tensor *global, struct pd_mesh *m, const struct pd_placement *pl);
/* Wrap this rank's local piece. global_shape NULL: computed from the local
 * shapes of the ranks (an all-gather), which must then follow the rule. */
struct pd_tensor *pd_dtensor_from_local(struct pd_tensor *local, const int64_t *global_shape, struct pd_mesh *m,
                                        const struct pd_placement *pl);
/* Move to other placements, on the same mesh or another one. */
struct pd_tensor *pd_reshard(struct pd_tensor *x, struct pd_mesh *m, const struct pd_placement *pl);
/* The whole global value on every rank of the mesh (a plain tensor). */
struct pd_tensor *pd_dtensor_full(struct pd_tensor *x);
/* The local piece as a plain tensor (shares storage). */
struct pd_tensor *pd_dtensor_local(struct pd_tensor *x);

int pd_dtensor_is_dist(const struct pd_tensor *t);
const int64_t *pd_dtensor_shape(const struct pd_tensor *t); /* global; NULL if not distributed */
struct pd_mesh *pd_dtensor_mesh(const struct pd_tensor *t);  /* borrowed */
const struct pd_placement *pd_dtensor_placements(const struct pd_tensor *t);

/* Data-parallel gradient reduction in buckets, overlapped with backward.
 * params: distributed leaves (f32/f64, requiring grad) replicated on the
 * mesh axis named `axis`. Autograd then keeps their gradients Partial on
 * that axis and hands each to a hook as soon as it is final; the hook
 * copies it into a bucket (about bucket_bytes; 0: 25 MiB, filled in
 * reverse parameter order), and a full bucket starts a non-blocking
 * all-reduce while backward goes on. pd_dp_finish waits and makes each
 * gradient the reduced one, Replicate on the axis; pd_optimizer_step and
 * pd_clip_grad_norm call it for every attached reducer. Gradients summed
 * over several backwards need pd_dp_finish after each. Collective over the
 * mesh. */
struct pd_dp;
struct pd_dp *pd_dp_attach(struct pd_tensor *const *params, int n, struct pd_mesh *m, const char *axis,
                           size_t bucket_bytes);
int pd_dp_finish(struct pd_dp *dp);
void pd_dp_detach(struct pd_dp *dp); /* waits for what is in flight; NULL is a no-op */

/* Bytes this rank sent and collectives it joined since the last reset, by
 * kind (all-gather, all-reduce, reduce-scatter, all-to-all, send). */
enum pd_comm_kind { PD_COMM_ALLGATHER, PD_COMM_ALLREDUCE, PD_COMM_REDUCE_SCATTER, PD_COMM_ALLTOALL, PD_COMM_SEND, PD_COMM_COUNT };
struct pd_comm_stats {
    int64_t calls[PD_COMM_COUNT];
    int64_t bytes[PD_COMM_COUNT];
};
void pd_comm_stats(struct pd_comm_stats *out);
void pd_comm_stats_reset(void);

#ifdef __cplusplus
}
#endif
#endif
