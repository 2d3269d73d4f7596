/* paddle.c — what a Partial input costs (docs/distributed.md "Communication
 * per step"), counted with pd_comm_stats under mpirun (2 and 4 ranks):
 *   - an op that reduces a Partial input for its local call saves the
 *     reduced value for its VJP: log(x) with x Partial(sum) all-reduces x
 *     once in forward and never again in backward;
 *   - a Partial input that a broadcast grows is reduced before it grows:
 *     expand([N, 1] -> [N, C]) against class-split [N, C] logits, and
 *     add([N, 1], [N, C]), all-reduce N floats, not N C;
 *   - flashmask with the batch split, mask indices included (data
 *     parallelism over packed documents): no collective in forward or
 *     backward (its global infer once read the indices' values, was
 *     refused on a distributed tensor, and the stage gathered q, k, v and
 *     the indices and ran the whole batch on every rank);
 *   - the mask helpers that are not ops (pd_flashmask_to_dense,
 *     pd_flashmask_count_tiles) on split rows check and count the whole
 *     indices on every rank;
 *   - an invalid call (shapes that do not match) fails on every rank
 *     before any collective (it once gathered its inputs first, taking the
 *     infer error for a data-dependent shape);
 *   - index_add and scatter_add of split rows into a small replicated x
 *     give a Partial(sum) output with no collective (they gathered index
 *     and src), and the embedding's gradient with split ids is one
 *     all-reduce of the table (data parallelism all-reduces it with the
 *     other gradients); a large
 *     x still gathers the rows (the cheaper of the two);
 *   - scatter/scatter_add with an index of extent 1 on a dim x splits: the
 *     index does not broadcast, so the dim is gathered (each rank wrote
 *     its own first column before).
 * Values and gradients equal the single-process ones. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/dist.h"
#include "pd/pd.h"

#include "dist_check.h"

static struct pd_tensor *values(const int64_t *shape, int ndim, int salt)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = 1.0f + 0.5f * (float)sin(0.37 * (double)i + 1.3 * salt);
    struct pd_tensor *t = pd_from_buffer(v, shape, ndim, PD_F32);
    free(v);
    return t;
}

static int64_t moved(const struct pd_comm_stats *st)
{
    int64_t b = 0;
    for (int k = 0; k < PD_COMM_COUNT; k++) b += st->bytes[k];
    return b;
}

static struct pd_placement *with(struct pd_placement *pl, int mdim, int axis, struct pd_placement p, int other_dim)
{
    for (int a = 0; a < mdim; a++) pl[a] = a == axis ? p : other_dim >= 0 ? pd_shard(other_dim) : pd_replicate();
    return pl;
}

/* log(x), x Partial(sum) on `axis` (rows split on the other axis of a 2-d
 * mesh): one all-reduce of this rank's rows in forward, none in backward. */
static void saved_reshard(struct pd_mesh *m, int axis)
{
    int tok = pd_scope_begin(), mdim = pd_mesh_ndim(m);
    const int64_t N = 8, C = 6;
    struct pd_tensor *x = values((int64_t[]){N, C}, 2, 1), *w = values((int64_t[]){N, C}, 2, 2);
    struct pd_placement pl[PD_MAX_MESH_DIMS];
    struct pd_tensor *xd = pd_requires_grad_(pd_shard_tensor(x, m, with(pl, mdim, axis, pd_partial(PD_RED_SUM), 0)), 1);
    struct pd_tensor *xp = pd_requires_grad_(pd_detach(x), 1);
    pd_comm_stats_reset();
    struct pd_tensor *y = pd_log(xd);
    struct pd_comm_stats st;
    pd_comm_stats(&st);
    int64_t rows = mdim == 2 ? N / 2 : N;
    CHECK(y && st.calls[PD_COMM_ALLREDUCE] == 1 && st.bytes[PD_COMM_ALLREDUCE] == rows * C * 4 && moved(&st) == rows * C * 4,
          "log(Partial x) forward: %lld all-reduces, %lld bytes moved (want 1 of %lld)",
          (long long)st.calls[PD_COMM_ALLREDUCE], (long long)moved(&st), (long long)(rows * C * 4));
    struct pd_tensor *l2 = pd_sum(pd_mul(y, w), NULL, 0, 0), *l1 = pd_sum(pd_mul(pd_log(xp), w), NULL, 0, 0);
    pd_comm_stats_reset();
    int rc = l2 ? pd_backward(l2, NULL, 0) : -1;
    pd_comm_stats(&st);
    CHECK(rc == 0 && st.calls[PD_COMM_ALLREDUCE] == 0 && st.calls[PD_COMM_REDUCE_SCATTER] == 0,
          "log(Partial x) backward: %lld all-reduces, %lld reduce-scatters (the forward reduced x already)",
          (long long)st.calls[PD_COMM_ALLREDUCE], (long long)st.calls[PD_COMM_REDUCE_SCATTER]);
    CHECK(pd_backward(l1, NULL, 0) == 0 && dist_diff(pd_dtensor_full(l2), l1) <= 1e-6 &&
              dist_diff(pd_dtensor_full(pd_tensor_grad(xd)), pd_tensor_grad(xp)) <= 1e-6,
          "log(Partial x): loss or gradient differs from one process");
    /* differentiable again: the saved value is a recorded reshard of x */
    struct pd_tensor *x2 = pd_requires_grad_(pd_shard_tensor(x, m, pl), 1), *x1 = pd_requires_grad_(pd_detach(x), 1);
    struct pd_tensor *g2 = NULL, *g1 = NULL, *h2 = NULL, *h1 = NULL;
    struct pd_tensor *s2 = pd_sum(pd_log(x2), NULL, 0, 0), *s1 = pd_sum(pd_log(x1), NULL, 0, 0);
    const struct pd_grad_options cg = {.create_graph = 1};
    int ok = pd_grad(&s2, 1, &x2, 1, &g2, &cg) == 0 && pd_grad(&s1, 1, &x1, 1, &g1, &cg) == 0;
    struct pd_tensor *t2 = ok ? pd_sum(g2, NULL, 0, 0) : NULL, *t1 = ok ? pd_sum(g1, NULL, 0, 0) : NULL;
    ok = ok && pd_grad(&t2, 1, &x2, 1, &h2, NULL) == 0 && pd_grad(&t1, 1, &x1, 1, &h1, NULL) == 0;
    CHECK(ok && dist_diff(pd_dtensor_full(h2), h1) <= 1e-6, "log(Partial x): second derivative differs from one process");
    pd_scope_end(tok);
}

/* A Partial(sum) [N, 1] against logits [N, C] split by classes on `axis`. */
static void growing(struct pd_mesh *m, int axis)
{
    int tok = pd_scope_begin(), mdim = pd_mesh_ndim(m);
    const int64_t N = 8, C = 37;
    struct pd_tensor *r = values((int64_t[]){N, 1}, 2, 3), *z = values((int64_t[]){N, C}, 2, 4);
    struct pd_placement pp[PD_MAX_MESH_DIMS], cs[PD_MAX_MESH_DIMS], rep[PD_MAX_MESH_DIMS];
    with(pp, mdim, axis, pd_partial(PD_RED_SUM), -1);
    with(cs, mdim, axis, pd_shard(1), -1);
    with(rep, mdim, axis, pd_replicate(), -1);
    struct pd_tensor *rd = pd_shard_tensor(r, m, pp), *zd = pd_shard_tensor(z, m, cs), *zr = pd_shard_tensor(z, m, rep);
    struct pd_comm_stats st;
    /* expand, then a pointwise op with the split logits */
    pd_comm_stats_reset();
    struct pd_tensor *y = pd_sub(zd, pd_expand(rd, (int64_t[]){N, C}, 2));
    pd_comm_stats(&st);
    CHECK(y && st.calls[PD_COMM_REDUCE_SCATTER] == 0 && moved(&st) == N * 4,
          "expand of a Partial [N, 1] to [N, C]: %lld bytes moved (%lld reduce-scatters), want %lld", (long long)moved(&st),
          (long long)st.calls[PD_COMM_REDUCE_SCATTER], (long long)(N * 4));
    CHECK(dist_diff(pd_dtensor_full(y), pd_sub(z, pd_expand(r, (int64_t[]){N, C}, 2))) == 0, "expand: values differ");
    /* a broadcasting add with a replicated [N, C], then the whole value */
    pd_comm_stats_reset();
    struct pd_tensor *a = pd_add(rd, zr), *af = a ? pd_dtensor_full(a) : NULL;
    pd_comm_stats(&st);
    CHECK(af && moved(&st) == N * 4, "add of a Partial [N, 1] to a replicated [N, C], made whole: %lld bytes moved, want %lld",
          (long long)moved(&st), (long long)(N * 4));
    CHECK(dist_diff(af, pd_add(r, z)) == 0, "add: values differ");
    pd_scope_end(tok);
}

/* flashmask, q k v [B, S, H, D] and the document mask [B, 1, S, 1] all
 * split by rows (Shard(0)): each rank attends its own sequences. */
static void flashmask_batch(struct pd_mesh *m)
{
    int tok = pd_scope_begin();
    const int64_t B = 4, S = 8, H = 2, D = 4;
    int64_t shp[4] = {B, S, H, D};
    struct pd_tensor *q = values(shp, 4, 1), *k = values(shp, 4, 2), *v = values(shp, 4, 3);
    struct pd_tensor *one = pd_flashmask_causal_document(S, (int64_t[]){3, 5}, 2);
    struct pd_tensor *idx = pd_contiguous(pd_expand(one, (int64_t[]){B, 1, S, 1}, 4));
    struct pd_placement pl[1] = {pd_shard(0)};
    struct pd_tensor *qd = pd_requires_grad_(pd_shard_tensor(q, m, pl), 1), *kd = pd_shard_tensor(k, m, pl);
    struct pd_tensor *vd = pd_shard_tensor(v, m, pl), *idxd = pd_shard_tensor(idx, m, pl);
    struct pd_tensor *qp = pd_requires_grad_(pd_detach(q), 1);
    pd_comm_stats_reset();
    struct pd_tensor *y = pd_flashmask_attention(qd, kd, vd, idxd, 1, NULL, 0.5, 0, NULL);
    CHECK(y && pd_backward(pd_sum(y, NULL, 0, 0), NULL, 0) == PD_OK, "flashmask on split rows");
    struct pd_comm_stats st;
    pd_comm_stats(&st);
    /* the loss's sum is Partial; pd_backward seeds it without a collective */
    CHECK(st.calls[PD_COMM_ALLGATHER] == 0 && moved(&st) == 0,
          "flashmask on split rows: %lld all-gathers, %lld bytes moved (want none)",
          (long long)st.calls[PD_COMM_ALLGATHER], (long long)moved(&st));
    struct pd_tensor *yp = pd_flashmask_attention(qp, k, v, idx, 1, NULL, 0.5, 0, NULL);
    CHECK(yp && pd_backward(pd_sum(yp, NULL, 0, 0), NULL, 0) == PD_OK, "flashmask, one process");
    CHECK(dist_diff(pd_dtensor_full(y), yp) == 0, "flashmask on split rows: value");
    CHECK(dist_diff(pd_dtensor_full(pd_tensor_grad(qd)), pd_tensor_grad(qp)) < 1e-6, "flashmask on split rows: dq");
    pd_scope_end(tok);
}

/* The mask helpers that are not ops, on split rows: they check (and
 * count) the whole indices on every rank. pd_flashmask_count_tiles once
 * counted this rank's piece as if it were the whole tensor (a read past the
 * piece: a heap overflow under ASan), and pd_flashmask_to_dense took any
 * values (flashmask's check returned early on every distributed idx, not
 * only in the distribute stage's global infer). */
static void flashmask_helpers(struct pd_mesh *m)
{
    int tok = pd_scope_begin();
    const int64_t B = 4, S = 8, H = 2;
    struct pd_tensor *one = pd_flashmask_causal_document(S, (int64_t[]){3, 5}, 2);
    struct pd_tensor *idx = pd_contiguous(pd_expand(one, (int64_t[]){B, 1, S, 1}, 4));
    struct pd_placement pl[1] = {pd_shard(0)};
    struct pd_tensor *idxd = pd_shard_tensor(idx, m, pl);
    struct pd_flashmask_tiles t1, t2;
    memset(&t1, 0, sizeof t1), memset(&t2, 1, sizeof t2);
    CHECK(pd_flashmask_count_tiles(idx, 1, B, S, S, H, H, &t1) == PD_OK, "count_tiles, one process");
    int rc = pd_flashmask_count_tiles(idxd, 1, B, S, S, H, H, &t2);
    CHECK(rc == PD_OK && !memcmp(&t1, &t2, sizeof t1),
          "count_tiles on split rows: status %d, skipped %lld partial %lld full %lld (one process: %lld %lld %lld)", rc,
          (long long)t2.skipped, (long long)t2.partial, (long long)t2.full, (long long)t1.skipped,
          (long long)t1.partial, (long long)t1.full);
    struct pd_tensor *dense = pd_flashmask_to_dense(idxd, 1, S);
    CHECK(dense && pd_dtensor_is_dist(dense) && dist_diff(pd_dtensor_full(dense), pd_flashmask_to_dense(idx, 1, S)) == 0,
          "to_dense on split rows");
    /* an index outside [0, S] in the last batch row (the last rank's piece) */
    int32_t *v = malloc(sizeof *v * (size_t)(B * S));
    pd_to_buffer(idx, v, PD_I32);
    v[B * S - 1] = (int32_t)S + 1;
    struct pd_tensor *bad = pd_shard_tensor(pd_from_buffer(v, (int64_t[]){B, 1, S, 1}, 4, PD_I32), m, pl);
    free(v);
    pd_clear_error();
    struct pd_tensor *bd = pd_flashmask_to_dense(bad, 1, S);
    CHECK(!bd && strstr(pd_last_error(), "outside [0, Sq = 8]"), "to_dense of an index out of range on split rows: %s",
          bd ? "accepted" : "refused with another message");
    pd_clear_error();
    rc = pd_flashmask_count_tiles(bad, 1, B, S, S, H, H, &t2);
    CHECK(rc != PD_OK && strstr(pd_last_error(), "outside [0, Sq = 8]"),
          "count_tiles of an index out of range on split rows: status %d", rc);
    pd_scope_end(tok);
}

static void invalid_call(struct pd_mesh *m)
{
    int tok = pd_scope_begin();
    struct pd_placement pl[1] = {pd_shard(0)};
    struct pd_tensor *a = pd_shard_tensor(values((int64_t[]){4, 3}, 2, 1), m, pl);
    struct pd_tensor *b = pd_shard_tensor(values((int64_t[]){5, 2}, 2, 2), m, pl);
    pd_comm_stats_reset();
    struct pd_tensor *y = pd_matmul(a, b, 0, 0);
    struct pd_comm_stats st;
    pd_comm_stats(&st);
    CHECK(!y && strstr(pd_last_error(), "matmul") && moved(&st) == 0 && st.calls[PD_COMM_ALLGATHER] == 0,
          "matmul [4,3] x [5,2] on split rows: refused with %lld all-gathers, %lld bytes moved (want an error, none)",
          (long long)st.calls[PD_COMM_ALLGATHER], (long long)moved(&st));
    /* a data-dependent shape still runs (whole): nonzero of a split tensor */
    struct pd_tensor *nz = pd_nonzero(a);
    CHECK(nz && pd_tensor_dim(nz, 0) == 12, "nonzero of a split tensor: %lld rows", nz ? (long long)pd_tensor_dim(nz, 0) : -1LL);
    pd_scope_end(tok);
}

static int all_partial(const struct pd_tensor *t, int mdim, int axis)
{
    const struct pd_placement *p = t ? pd_dtensor_placements(t) : NULL;
    return p && p[axis].kind == PD_PARTIAL && p[axis].op == PD_RED_SUM && (mdim >= 1);
}

/* Rows split on `axis` (1-d mesh: the only one; 2 x 2: the other axis
 * replicates everything). */
static void split_sums(struct pd_mesh *m, int axis)
{
    int tok = pd_scope_begin(), mdim = pd_mesh_ndim(m);
    const int64_t V = 6, D = 5, N = 24;
    struct pd_placement rows[PD_MAX_MESH_DIMS], rep[PD_MAX_MESH_DIMS];
    with(rows, mdim, axis, pd_shard(0), -1);
    with(rep, mdim, axis, pd_replicate(), -1);
    int64_t iv[24];
    for (int64_t i = 0; i < N; i++) iv[i] = (i * 7 + 3) % V;
    struct pd_tensor *ids = pd_from_buffer(iv, (int64_t[]){N}, 1, PD_I64), *src = values((int64_t[]){N, D}, 2, 5);
    struct pd_tensor *x = values((int64_t[]){V, D}, 2, 6);
    struct pd_tensor *idsd = pd_shard_tensor(ids, m, rows), *srcd = pd_shard_tensor(src, m, rows);
    struct pd_tensor *xd = pd_shard_tensor(x, m, rep);
    struct pd_comm_stats st;
    /* index_add: 2 |x| = 240 bytes <= |src| + |index| = 672 */
    pd_comm_stats_reset();
    struct pd_tensor *y = pd_index_add(xd, 0, idsd, srcd);
    pd_comm_stats(&st);
    CHECK(y && moved(&st) == 0 && all_partial(y, mdim, axis),
          "index_add of split rows into a small x: %lld bytes moved, output %s (want none, Partial(sum))",
          (long long)moved(&st), all_partial(y, mdim, axis) ? "Partial(sum)" : "not Partial(sum)");
    CHECK(dist_diff(pd_dtensor_full(y), pd_index_add(x, 0, ids, src)) < 1e-6, "index_add of split rows: values differ");
    /* scatter_add along dim 0 with a [N, D] index */
    struct pd_tensor *ix2 = pd_contiguous(pd_expand(pd_unsqueeze(ids, 1), (int64_t[]){N, D}, 2));
    struct pd_tensor *ix2d = pd_shard_tensor(ix2, m, rows);
    pd_comm_stats_reset();
    struct pd_tensor *z = pd_scatter_add(xd, 0, ix2d, srcd);
    pd_comm_stats(&st);
    CHECK(z && moved(&st) == 0 && all_partial(z, mdim, axis),
          "scatter_add of split rows into a small x: %lld bytes moved (want none, Partial(sum))", (long long)moved(&st));
    CHECK(dist_diff(pd_dtensor_full(z), pd_scatter_add(x, 0, ix2, src)) < 1e-6, "scatter_add of split rows: values differ");
    /* a large x: gathering the rows moves less than reducing x would */
    struct pd_tensor *big = values((int64_t[]){200, D}, 2, 7), *bigd = pd_shard_tensor(big, m, rep);
    struct pd_tensor *b = pd_index_add(bigd, 0, idsd, srcd);
    CHECK(b && !all_partial(b, mdim, axis) && dist_diff(pd_dtensor_full(b), pd_index_add(big, 0, ids, src)) < 1e-6,
          "index_add of split rows into a large x: want the rows gathered (a replicated output), the same values");
    /* the embedding's gradient: Partial, nothing moved in backward */
    struct pd_tensor *w = pd_requires_grad_(pd_detach(x), 1), *wd = pd_requires_grad_(pd_shard_tensor(x, m, rep), 1);
    struct pd_tensor *e = pd_embedding(idsd, wd), *ep = pd_embedding(ids, w);
    struct pd_tensor *c = pd_shard_tensor(src, m, rows);
    struct pd_tensor *l = e ? pd_sum(pd_mul(e, c), NULL, 0, 0) : NULL, *lp = pd_sum(pd_mul(ep, src), NULL, 0, 0);
    pd_comm_stats_reset();
    CHECK(l && pd_backward(l, NULL, 0) == PD_OK && pd_backward(lp, NULL, 0) == PD_OK, "embedding backward");
    pd_comm_stats(&st);
    struct pd_tensor *gw = pd_tensor_grad(wd);
    /* the leaf's gradient is replicated as the leaf is: one all-reduce of
     * V D floats (the ids and rows were gathered: N 8 + N D 4 bytes) */
    CHECK(moved(&st) == V * D * 4 && st.calls[PD_COMM_ALLGATHER] == 0 && st.calls[PD_COMM_ALLREDUCE] == 1,
          "embedding gradient of split ids: %lld bytes moved in backward, %lld all-gathers (want one all-reduce of "
          "%lld bytes)", (long long)moved(&st), (long long)st.calls[PD_COMM_ALLGATHER], (long long)(V * D * 4));
    CHECK(gw && dist_diff(pd_dtensor_full(gw), pd_tensor_grad(w)) < 1e-5, "embedding gradient: values differ");
    pd_scope_end(tok);
}

/* scatter and scatter_add whose index has extent 1 on a dim that x and src
 * split: the index does not broadcast (only x's first column is written),
 * so that dim must not stay split (each rank wrote its piece's first
 * column). */
static void scatter_narrow_index(struct pd_mesh *m)
{
    int tok = pd_scope_begin();
    struct pd_placement cols[1] = {pd_shard(1)}, rep[1] = {pd_replicate()};
    struct pd_tensor *x = values((int64_t[]){4, 4}, 2, 8), *src = values((int64_t[]){2, 4}, 2, 9);
    struct pd_tensor *idx = pd_from_buffer((int64_t[]){3, 1}, (int64_t[]){2, 1}, 2, PD_I64);
    struct pd_tensor *xd = pd_shard_tensor(x, m, cols), *sd = pd_shard_tensor(src, m, cols);
    struct pd_tensor *id = pd_shard_tensor(idx, m, rep);
    struct pd_tensor *y = pd_scatter(xd, 0, id, sd), *z = pd_scatter_add(xd, 0, id, sd);
    CHECK(y && dist_diff(pd_dtensor_full(y), pd_scatter(x, 0, idx, src)) == 0,
          "scatter with an index of extent 1 on a split dim: values differ from one process");
    CHECK(z && dist_diff(pd_dtensor_full(z), pd_scatter_add(x, 0, idx, src)) == 0,
          "scatter_add with an index of extent 1 on a split dim: values differ from one process");
    pd_scope_end(tok);
}

int main(void)
{
    struct pd_mesh *line, *grid;
    dist_meshes(&line, &grid);
    CHECK(line != NULL, "mesh");
    saved_reshard(line, 0);
    growing(line, 0);
    flashmask_batch(line);
    flashmask_helpers(line);
    invalid_call(line);
    split_sums(line, 0);
    scatter_narrow_index(line);
    if (grid) {
        split_sums(grid, 1);
        saved_reshard(grid, 1);
        growing(grid, 1);
    }
    pd_mesh_release(line);
    pd_mesh_release(grid);
    int all = dist_check_total();
    if (rank == 0) printf("test_dist_partial: %d checks on rank 0, %d failures over %d ranks\n", checks, all, world);
    return all != 0;
}
