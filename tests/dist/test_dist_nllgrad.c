/* paddle.c — the vocabulary-parallel cross entropy's backward makes no
 * [N, C] tensor on any rank (issue 14; docs/distributed.md, "How ops are
 * distributed": nll_loss_backward), under mpirun with 2 and 4 ranks.
 *
 * Logits [N, C] split by classes over every rank of a 1-D mesh (and, at 4
 * ranks, rows over dp and classes over tp on a 2 x 2 mesh); targets
 * replicated (or split by rows with the logits), some ignored. Forward and
 * backward run with a counting allocator as the default: every block any
 * storage or kernel scratch asks for is seen, and the largest must not
 * exceed this rank's piece of the logits, rows_local x ceil(C / tp) x 4
 * bytes. nll_loss's backward used to build one_hot(target, C), an int64
 * [N, C] on every rank (twice the f32 logits), then products of that size.
 * The backward must add no collective beyond log_softmax's per-row sum,
 * and every gradient must equal the single-process one. nll_loss_backward
 * called alone with a Partial logp (which it never reads) beside split
 * targets must run no collective.
 */
#include <math.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/dist.h"
#include "pd/memory.h"
#include "pd/pd.h"

#include "dist/dist_internal.h" /* pdi_calln: nll_loss_backward called directly */
#include "dist_check.h"

/* ---- the counting allocator: the host one, plus the largest block ---- */
static const struct pd_allocator *host;
static _Atomic int64_t biggest;

static void *big_alloc(void *ctx, size_t nbytes)
{
    (void)ctx;
    int64_t n = (int64_t)nbytes, cur = atomic_load(&biggest);
    while (n > cur && !atomic_compare_exchange_weak(&biggest, &cur, n)) {
    }
    return host->alloc(host->ctx, nbytes);
}

static void big_free(void *ctx, void *p, size_t nbytes)
{
    (void)ctx;
    host->free(host->ctx, p, nbytes);
}

static struct pd_allocator counting = {.abi_version = PD_ALLOCATOR_ABI, .name = "largest-block",
                                       .alloc = big_alloc, .free = big_free};

static struct pd_tensor *values(const int64_t *shape, int ndim, int salt, int classes)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = classes ? (float)((i * 7919 + salt) % classes) : (float)sin(0.37 * (double)i + 1.3 * salt) * 2.0f;
    if (classes)
        for (int64_t i = 0; i < n; i += 5) v[i] = -1; /* ignored */
    struct pd_tensor *t = pd_from_buffer(v, shape, ndim, PD_F32);
    free(v);
    return classes ? pd_cast(t, PD_I64) : t;
}

/* One forward + backward of cross_entropy on logits placed by lpl and
 * targets by tpl; tp and dp: how many pieces the classes and rows have. */
static void run(struct pd_mesh *m, const struct pd_placement *lpl, const struct pd_placement *tpl, int tp, int dp,
                int red, const char *what)
{
    enum { N = 64, C = 1001 };
    int tok = pd_scope_begin();
    struct pd_tensor *logits = values((int64_t[]){N, C}, 2, 3, 0), *target = values((int64_t[]){N}, 1, 1, C);
    struct pd_tensor *x1 = pd_detach(logits);
    pd_requires_grad_(x1, 1);
    struct pd_tensor *l1 = pd_cross_entropy(x1, target, -1, 0.0, (enum pd_reduction)red);
    CHECK(l1 && pd_backward(pd_sum(l1, NULL, 0, 0), NULL, 0) == PD_OK, "%s: single-process backward", what);

    struct pd_tensor *xd = pd_shard_tensor(logits, m, lpl), *td = pd_shard_tensor(target, m, tpl);
    pd_requires_grad_(xd, 1);
    atomic_store(&biggest, 0);
    CHECK(pd_allocator_set_default(&counting) == PD_OK, "%s: allocator", what);
    struct pd_tensor *l2 = pd_cross_entropy(xd, td, -1, 0.0, (enum pd_reduction)red);
    int64_t fwd = atomic_load(&biggest);
    atomic_store(&biggest, 0);
    pd_comm_stats_reset();
    int rc = l2 ? pd_backward(pd_sum(l2, NULL, 0, 0), NULL, 0) : -1;
    struct pd_comm_stats st;
    pd_comm_stats(&st);
    int64_t bwd = atomic_load(&biggest);
    pd_allocator_set_default(NULL);
    CHECK(rc == PD_OK, "%s: distributed backward", what);

    int64_t piece = (N + dp - 1) / dp * ((C + tp - 1) / tp) * 4, whole = (int64_t)N * C * 4;
    CHECK(fwd <= piece, "%s: forward allocated a block of %lld bytes (this rank's logits: %lld, all: %lld)", what,
          (long long)fwd, (long long)piece, (long long)whole);
    CHECK(bwd <= piece, "%s: backward allocated a block of %lld bytes (this rank's logits: %lld, all: %lld)", what,
          (long long)bwd, (long long)piece, (long long)whole);
    /* log_softmax's backward all-reduces its per-row sum (N floats); nll_loss's adds nothing */
    CHECK(st.calls[PD_COMM_ALLGATHER] + st.calls[PD_COMM_REDUCE_SCATTER] + st.calls[PD_COMM_ALLTOALL] == 0 &&
              st.bytes[PD_COMM_ALLREDUCE] <= (int64_t)N * 4,
          "%s: backward moved %lld all-gather, %lld all-reduce, %lld reduce-scatter, %lld all-to-all bytes", what,
          (long long)st.bytes[PD_COMM_ALLGATHER], (long long)st.bytes[PD_COMM_ALLREDUCE],
          (long long)st.bytes[PD_COMM_REDUCE_SCATTER], (long long)st.bytes[PD_COMM_ALLTOALL]);
    struct pd_tensor *g2 = pd_tensor_grad(xd);
    const struct pd_placement *gp = g2 ? pd_dtensor_placements(g2) : NULL;
    int same = gp != NULL;
    for (int a = 0; same && a < pd_mesh_ndim(m); a++) same = gp[a].kind == lpl[a].kind && gp[a].dim == lpl[a].dim;
    CHECK(same, "%s: the gradient is not in the logits' placements", what);
    CHECK(dist_diff(pd_dtensor_full(l2), l1) <= 2e-6, "%s: loss differs", what);
    CHECK(dist_diff(pd_dtensor_full(g2), pd_tensor_grad(x1)) <= 2e-6, "%s: gradient differs by %.3g", what,
          dist_diff(pd_dtensor_full(g2), pd_tensor_grad(x1)));
    if (rank == 0)
        printf("%s: largest block forward %lld, backward %lld bytes (this rank's logits %lld, all %lld); backward "
               "all-reduce %lld bytes\n", what, (long long)fwd, (long long)bwd, (long long)piece, (long long)whole,
               (long long)st.bytes[PD_COMM_ALLREDUCE]);
    pd_scope_end(tok);
}

/* nll_loss_backward reads logp for its shape and dtype only, so a Partial
 * logp beside targets split by rows must not be reduced: no collective at
 * all (it was reduce-scattered, N C floats, before). lpl, tpl: logp's and
 * the targets' (and w's) placements. The values equal one process's. */
static void partial_logp(struct pd_mesh *m, const struct pd_placement *lpl, const struct pd_placement *tpl,
                         const char *what)
{
    enum { N = 9, C = 7 };
    int tok = pd_scope_begin();
    struct pd_tensor *logp = values((int64_t[]){N, C}, 2, 2, 0), *target = values((int64_t[]){N}, 1, 5, C);
    struct pd_tensor *w = values((int64_t[]){N}, 1, 4, 0);
    struct pdi_attrs a;
    pdi_attrs_default(PD_OP_nll_loss_backward, &a);
    a.nll_loss_backward.ignore_index = -1;
    struct pd_tensor *y1 = pdi_calln(PD_OP_nll_loss_backward, (struct pd_tensor *[]){logp, target, w}, 3, &a);
    struct pd_tensor *in[3] = {pd_shard_tensor(logp, m, lpl), pd_shard_tensor(target, m, tpl), pd_shard_tensor(w, m, tpl)};
    pd_comm_stats_reset();
    struct pd_tensor *y2 = pdi_calln(PD_OP_nll_loss_backward, in, 3, &a);
    struct pd_comm_stats st;
    pd_comm_stats(&st);
    int64_t calls = 0, bytes = 0;
    for (int k = 0; k < PD_COMM_COUNT; k++) calls += st.calls[k], bytes += st.bytes[k];
    CHECK(y2 && calls == 0, "%s: %lld collectives (%lld bytes) for a logp it never reads", what, (long long)calls,
          (long long)bytes);
    CHECK(y1 && y2 && dist_diff(pd_dtensor_full(y2), y1) == 0, "%s: values differ", what);
    pd_scope_end(tok);
}

int main(void)
{
    rank = pd_dist_world_rank();
    world = pd_dist_world_size();
    host = pd_allocator_host();
    struct pd_mesh *line = pd_mesh_create((int[]){world}, 1, (const char *const[]){"tp"}, NULL);
    CHECK(line != NULL, "mesh");
    const char *names[3] = {"none", "mean", "sum"};
    char what[64];
    for (int red = 0; red < 3; red++) {
        snprintf(what, sizeof what, "tp=%d, reduction %s", world, names[red]);
        run(line, (struct pd_placement[]){pd_shard(1)}, (struct pd_placement[]){pd_replicate()}, world, 1, red, what);
    }
    partial_logp(line, (struct pd_placement[]){pd_partial(PD_RED_SUM)}, (struct pd_placement[]){pd_shard(0)},
                 "Partial logp, rows split");
    partial_logp(line, (struct pd_placement[]){pd_shard(0)}, (struct pd_placement[]){pd_replicate()},
                 "logp split by rows, targets replicated");
    if (world == 4) {
        struct pd_mesh *grid = pd_mesh_create((int[]){2, 2}, 2, (const char *const[]){"dp", "tp"}, NULL);
        for (int red = 0; red < 3; red++) {
            snprintf(what, sizeof what, "dp=2 x tp=2, reduction %s", names[red]);
            run(grid, (struct pd_placement[]){pd_shard(0), pd_shard(1)},
                (struct pd_placement[]){pd_shard(0), pd_replicate()}, 2, 2, red, what);
        }
        partial_logp(grid, (struct pd_placement[]){pd_partial(PD_RED_SUM), pd_shard(1)},
                     (struct pd_placement[]){pd_shard(0), pd_replicate()}, "Partial logp on dp, classes on tp");
        partial_logp(grid, (struct pd_placement[]){pd_partial(PD_RED_MAX), pd_shard(0)},
                     (struct pd_placement[]){pd_replicate(), pd_shard(0)}, "Partial(max) logp on dp, rows on tp");
        pd_mesh_release(grid);
    }
    pd_mesh_release(line);
    int all = dist_check_total();
    if (rank == 0) printf("test_dist_nllgrad: %d checks on rank 0, %d failures over %d ranks\n", checks, all, world);
    return all != 0;
}
