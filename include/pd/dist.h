/* paddle.c — distributed tensors over MPI: process meshes, placements and
 * reshard (docs/distributed.md).
 *
 * A mesh is an N-d grid of MPI ranks with named axes. A distributed tensor
 * is an ordinary pd_tensor that stands for the whole (global) tensor while
 * its storage holds this rank's local piece, with a mesh and one placement
 * per mesh axis:
 *   - Replicate: every rank along the axis holds the whole extent;
 *   - Shard(dim): tensor dim `dim` is cut into pieces along the axis;
 *   - Partial(op): every rank holds a full-shape value, and the tensor is the
 *     reduction (sum, avg, max or min) of them along the axis.
 * pd_tensor_shape() and pd_dtensor_shape() of a distributed tensor are its
 * global shape; pd_dtensor_local() is the piece. Any op takes distributed
 * tensors (the dispatcher's distribute stage, docs/distributed.md).
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
 * collective and the mesh axes. No call waits past a timeout (below).
 */
#ifndef PD_DIST_H
#define PD_DIST_H

#include "pd/data.h"
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

/* Distributed tensors built in place: each rank makes only its piece, with
 * no communication. The random ones draw, on each rank, its block of the
 * single-process stream: the result equals pd_uniform (pd_normal,
 * pd_randint) from the same generator state, placed; the generator (NULL:
 * the default one) advances as for the whole draw. A Partial axis holds the
 * value at coordinate 0 and the reduction's identity elsewhere, as
 * pd_shard_tensor. (pd_dtensor_full, above, gathers: it is not a
 * constructor.) */
struct pd_tensor *pd_dtensor_empty(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_mesh *m,
                                   const struct pd_placement *pl); /* the values are undefined */
struct pd_tensor *pd_dtensor_zeros(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_mesh *m,
                                   const struct pd_placement *pl);
struct pd_tensor *pd_dtensor_ones(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_mesh *m,
                                  const struct pd_placement *pl);
struct pd_tensor *pd_dtensor_constant(const int64_t *shape, int ndim, double value, enum pd_dtype dt,
                                      struct pd_mesh *m, const struct pd_placement *pl);
struct pd_tensor *pd_dtensor_uniform(const int64_t *shape, int ndim, double lo, double hi, enum pd_dtype dt,
                                     struct pd_generator *g, struct pd_mesh *m, const struct pd_placement *pl);
struct pd_tensor *pd_dtensor_normal(const int64_t *shape, int ndim, double mean, double std, enum pd_dtype dt,
                                    struct pd_generator *g, struct pd_mesh *m, const struct pd_placement *pl);
struct pd_tensor *pd_dtensor_randint(const int64_t *shape, int ndim, int64_t lo, int64_t hi, enum pd_dtype dt,
                                     struct pd_generator *g, struct pd_mesh *m, const struct pd_placement *pl);
/* pd_arange, pd_linspace and pd_eye (cols < 0: n) built in place: each
 * element is computed by the single-process formula at its global index,
 * so the values equal the single-process tensor's, bit for bit. */
struct pd_tensor *pd_dtensor_arange(double start, double stop, double step, enum pd_dtype dt, struct pd_mesh *m,
                                    const struct pd_placement *pl);
struct pd_tensor *pd_dtensor_linspace(double start, double stop, int64_t num, enum pd_dtype dt, struct pd_mesh *m,
                                      const struct pd_placement *pl);
struct pd_tensor *pd_dtensor_eye(int64_t n, int64_t cols, enum pd_dtype dt, struct pd_mesh *m,
                                 const struct pd_placement *pl);

int pd_dtensor_is_dist(const struct pd_tensor *t);
const int64_t *pd_dtensor_shape(const struct pd_tensor *t); /* global; NULL if not distributed */
struct pd_mesh *pd_dtensor_mesh(const struct pd_tensor *t);  /* borrowed */
const struct pd_placement *pd_dtensor_placements(const struct pd_tensor *t);

/* Data-parallel gradient reduction in buckets, overlapped with backward.
 * params: distributed leaves (f32/f64, requiring grad) replicated on the
 * mesh axis named `axis`. Autograd then keeps their gradients Partial on
 * that axis and hands each to a hook as soon as it is final; the hook
 * copies it into a bucket (about bucket_bytes; 0: PD_DP_BUCKET_DEFAULT;
 * filled in reverse parameter order), and a full bucket starts a
 * non-blocking all-reduce while backward goes on (backward tests the
 * buckets in flight between its nodes). Buckets still in flight when
 * backward ends are waited for then (the last one always is), so buckets
 * much smaller than the model overlap more. pd_dp_finish waits and makes each
 * gradient the reduced one, Replicate on the axis; pd_optimizer_step and
 * pd_clip_grad_norm call it for every attached reducer. Gradients summed
 * over several backwards need pd_dp_finish after each. Collective over the
 * mesh. */
struct pd_dp;
#define PD_DP_BUCKET_DEFAULT ((size_t)4 << 20) /* docs/distributed.md "Data parallelism" */
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

/* Failures (docs/distributed.md, "Failures and timeouts"). No call waits
 * for other ranks longer than the timeout: past it, the waiting rank prints
 * one line naming itself, the collective, the mesh axes and the ranks it
 * waits for, and MPI_Abort ends every rank. Default 60 s, or the
 * environment variable PD_DIST_TIMEOUT (seconds), read when MPI starts;
 * pd_dist_set_timeout overrides both. 0: no limit. Negative or NaN:
 * PD_ERR_INVALID. Neither call starts MPI. */
int pd_dist_set_timeout(double seconds);
double pd_dist_timeout(void);
/* End every rank of the job now: print "rank r of n: <msg>" on stderr (one
 * line) and call MPI_Abort (exit without MPI); code is the exit status (0
 * becomes 1). Does not return. For a rank that fails while the others may
 * be waiting for it in a collective. A rank that exits with a non-zero
 * status after MPI started aborts the job the same way. */
void pd_dist_abort(int code, const char *msg);

/* ---- training in parallel (src/dist/parallel.c; docs/distributed.md) ----
 * A single-process model becomes a parallel one by making its parameters
 * distributed; every op then runs through the distribute stage. */
struct pd_state_dict;
struct pd_optimizer;

/* Make the plain leaf t distributed in place: the same object now holds
 * this rank's piece of its value in placements pl (its own storage), so a
 * module, a state dict and an optimizer that point to it all see the
 * change. Its gradient, if any, is dropped. Collective like pd_shard_tensor. */
int pd_dtensor_distribute_(struct pd_tensor *t, struct pd_mesh *m, const struct pd_placement *pl);

/* What a plan does to a module's parameters on the plan's mesh axis (every
 * other axis: Replicate). Linear weights are [out, in] (torch's layout). */
enum pd_plan_kind {
    PD_PLAN_REPLICATE = 0, /* replicated */
    PD_PLAN_COLWISE,       /* column-parallel: weight Shard(0) (the outputs), bias Shard(0) */
    PD_PLAN_ROWWISE,       /* row-parallel: weight Shard(1) (the inputs), bias replicated */
    PD_PLAN_SHARD,         /* every parameter Shard(dim) */
    PD_PLAN_KIND_COUNT
};
/* Input/output preparation: a reshard of the module's input (before it
 * runs) or output (after) on the plan's axis, the other axes unchanged.
 * Sequence parallelism is two of them: "begin" = an output Shard(1) of
 * activations [B, T, dim] (T split), "end" = Replicate (gathered). */
enum pd_prep { PD_PREP_NONE = 0, PD_PREP_REPLICATE, PD_PREP_SHARD_SEQ, PD_PREP_COUNT };
struct pd_shard_plan {
    const char *module;   /* a module name; '*' matches one dotted part ("model.layers.*.mlp.up_proj") */
    enum pd_plan_kind kind;
    int dim;              /* PD_PLAN_SHARD */
    enum pd_prep in, out; /* applied by the nn modules (Linear, Embedding, RMSNorm) that own a weight */
};
/* Distribute every parameter of `params` on mesh m: a parameter whose
 * module matches a plan (the first match) gets the plan's placement on axis
 * `axis`, all others are replicated (data parallelism: a replicated
 * parameter's gradient is all-reduced over the axes the batch is split on).
 * Preparations stay registered until pd_shard_plans_clear. Collective.
 * Every plan (a module name, a known kind and preparations, dim >= 0) and
 * parameter (a leaf, or distributed on m) is checked first: a refusal
 * converts nothing. */
int pd_shard_layer(struct pd_state_dict *params, struct pd_mesh *m, const char *axis, const struct pd_shard_plan *plan,
                   int n_plan);
void pd_shard_plans_clear(void);
/* The tensor-parallel plan of pd_llama (sp: sequence-parallel too) into
 * out (room for cap, 12 suffice); returns how many, or a status < 0. */
int pd_llama_shard_plan(int sp, struct pd_shard_plan *out, int cap);
/* Put an optimizer's state (moments, masters) in its parameters'
 * placements, keeping the values. An optimizer created after pd_shard_layer
 * needs nothing: its state follows already. */
int pd_shard_optimizer(struct pd_optimizer *o);
/* A batch [B, ...] that every rank drew whole (the same generator stream as
 * one process): each rank keeps its rows, Shard(0) on `axis` (data
 * parallel; NULL: every rank keeps all), replicated on the other axes.
 * For dataset batches, pd_dataset_batch_dist (below) reads only the rows. */
struct pd_tensor *pd_shard_batch(struct pd_tensor *batch, struct pd_mesh *m, const char *axis);
/* The distributed data loader (src/data/dataset.c; docs/distributed.md
 * "Data loading"): each rank reads only its rows of the global batch, the
 * rows the split rule above gives its coordinate on the mesh axis named
 * `axis` (NULL: every rank reads every row), and gets [B, T] distributed
 * tensors, Shard(0) on that axis and Replicate on the others, with no
 * communication. The global batch is pd_dataset_batch's from the same
 * generator state, and the generator advances as for the whole batch, so
 * every rank stays in step and the losses are one process's. A rank outside
 * the mesh reads nothing. Errors as pd_dataset_batch's, and a NULL mesh or
 * an axis the mesh does not have. */
int pd_dataset_batch_dist(const struct pd_text_dataset *ds, enum pd_split split, int batch, int seq_len,
                          struct pd_generator *gen, struct pd_mesh *m, const char *axis, struct pd_tensor **ids,
                          struct pd_tensor **targets);
/* Sequential evaluation over the mesh: pd_dataset_iter_create's windows
 * and batches, each batch of B' windows split over `axis` as above.
 * pd_dataset_iter_next returns B' (the global rows) and this rank's rows
 * as distributed tensors; reset, num_windows and destroy as for the plain
 * iterator (it holds a reference to the mesh). */
struct pd_dataset_iter *pd_dataset_iter_create_dist(const struct pd_text_dataset *ds, enum pd_split split, int batch,
                                                    int seq_len, struct pd_mesh *m, const char *axis);
/* A new state dict with every distributed tensor gathered whole
 * (pd_dtensor_full) under the same names: the single-process layout, for
 * checkpoints, with sd's metadata. Collective. */
struct pd_state_dict *pd_state_dict_gather(const struct pd_state_dict *sd);

#ifdef __cplusplus
}
#endif
#endif
