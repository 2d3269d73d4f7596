/* paddle.c — reshard round trips under mpirun (2 and 4 ranks): every
 * transition on 1-D meshes for every dtype, every pair of placements on a
 * 2 x 2 mesh, co-sharding, uneven and empty pieces, Partial values that
 * differ per rank, the collectives each transition uses, and another mesh.
 * Values are small integers, so every sum, max, min and avg is exact and the
 * comparisons are bitwise. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/dist.h"
#include "pd/pd.h"

#include "dist_check.h"

/* A global tensor of small integers (signed for signed dtypes), the same on every rank. */
static struct pd_tensor *global(const int64_t *shape, int ndim, enum pd_dtype dt, int salt)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    double *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (i * 7 + salt * 3) % 11;
        v[i] = dt == PD_BOOL ? (double)(k % 2) : dt == PD_U8 ? (double)k : (double)(k - 5);
    }
    struct pd_tensor *t = pd_cast(pd_from_buffer(v, shape, ndim, PD_F64), dt);
    free(v);
    return t;
}

static int equal(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b || pd_tensor_ndim(a) != pd_tensor_ndim(b) || pd_tensor_dtype(a) != pd_tensor_dtype(b)) return 0;
    for (int i = 0; i < pd_tensor_ndim(a); i++)
        if (pd_tensor_shape(a)[i] != pd_tensor_shape(b)[i]) return 0;
    size_t n = (size_t)pd_tensor_numel(a) * pd_dtype_size(pd_tensor_dtype(a));
    char *x = malloc(n + 1), *y = malloc(n + 1);
    int ok = pd_to_buffer(a, x, pd_tensor_dtype(a)) == 0 && pd_to_buffer(b, y, pd_tensor_dtype(b)) == 0 && !memcmp(x, y, n);
    free(x), free(y);
    return ok;
}

/* What this rank holds of g under pl: its slice, and for Partial axes off
 * coordinate 0 the identity (pd_shard_tensor's rule). Built independently
 * of the library's reshard: slices by the documented rule. */
static struct pd_tensor *expected(struct pd_tensor *g, struct pd_mesh *m, const struct pd_placement *pl)
{
    int nd = pd_tensor_ndim(g);
    if (!pd_mesh_contains(m)) {
        int64_t z[PD_MAX_DIMS] = {0};
        return pd_empty(z, nd, pd_tensor_dtype(g));
    }
    struct pd_tensor *x = g;
    for (int d = 0; d < nd; d++) {
        int axes[PD_MAX_MESH_DIMS], na = 0;
        for (int o = 0; o < PD_MAX_MESH_DIMS; o++) /* by order, then axis */
            for (int a = 0; a < pd_mesh_ndim(m); a++)
                if (pl[a].kind == PD_SHARD && pl[a].dim == d && pl[a].order == o) axes[na++] = a;
        int pieces = 1, index = 0;
        for (int i = 0; i < na; i++) pieces *= pd_mesh_size(m, axes[i]), index = index * pd_mesh_size(m, axes[i]) + pd_mesh_coord(m, axes[i]);
        int64_t N = pd_tensor_shape(g)[d], c = (N + pieces - 1) / pieces, s = index * c, e = s + c;
        if (s > N) s = N;
        if (e > N) e = N;
        x = pd_slice(x, d, s, e, 1);
    }
    for (int a = 0; a < pd_mesh_ndim(m); a++) {
        if (pl[a].kind != PD_PARTIAL || pd_mesh_coord(m, a) == 0 || pl[a].op == PD_RED_AVG) continue;
        enum pd_dtype dt = pd_tensor_dtype(x);
        int mx = pl[a].op == PD_RED_MAX;
        double v = pl[a].op == PD_RED_SUM ? 0
                   : dt == PD_BOOL        ? !mx
                   : dt == PD_U8          ? (mx ? 0 : 255)
                   : dt == PD_I8          ? (mx ? -128 : 127)
                   : dt == PD_I16         ? (mx ? -32768 : 32767)
                   : dt == PD_I32         ? (mx ? -2147483648.0 : 2147483647.0)
                   : dt == PD_I64         ? (mx ? -9223372036854775808.0 : 9223372036854775807.0)
                                          : (mx ? -1.0 / 0.0 : 1.0 / 0.0);
        x = pd_full_like(x, v);
    }
    return pd_contiguous(x);
}

static const char *pl_str(const struct pd_placement *pl, int n, char *b)
{
    char *p = b;
    for (int a = 0; a < n; a++) {
        const struct pd_placement *q = &pl[a];
        p += sprintf(p, "%s", a ? "," : "[");
        if (q->kind == PD_REPLICATE) p += sprintf(p, "R");
        else if (q->kind == PD_SHARD) p += sprintf(p, "S%d%s", q->dim, q->order ? "'" : "");
        else p += sprintf(p, "P%s", (const char *[]){"sum", "avg", "max", "min"}[q->op]);
    }
    sprintf(p, "]");
    return b;
}

/* shard g by `from`, reshard to `to`: both locals as the rule says, and the full value back. */
static void round_trip(struct pd_tensor *g, struct pd_mesh *m, const struct pd_placement *from,
                       const struct pd_placement *to)
{
    int tok = pd_scope_begin();
    char b0[64], b1[64];
    int n = pd_mesh_ndim(m);
    struct pd_tensor *s = pd_shard_tensor(g, m, from);
    CHECK(s && equal(pd_dtensor_local(s), expected(g, m, from)), "shard %s %s", pl_str(from, n, b0),
          pd_dtype_name(pd_tensor_dtype(g)));
    struct pd_tensor *r = pd_reshard(s, m, to);
    CHECK(r && equal(pd_dtensor_local(r), expected(g, m, to)), "reshard %s -> %s, %s, shape [%lld, %lld]",
          pl_str(from, n, b0), pl_str(to, n, b1), pd_dtype_name(pd_tensor_dtype(g)),
          (long long)pd_tensor_shape(g)[0], (long long)pd_tensor_shape(g)[1]);
    if (pd_mesh_contains(m)) CHECK(r && equal(pd_dtensor_full(r), g), "full after %s -> %s", pl_str(from, n, b0), pl_str(to, n, b1));
    pd_scope_end(tok);
}

static void one_d_all_dtypes(void)
{
    struct pd_mesh *m = pd_mesh_create((const int[]){world}, 1, (const char *[]){"x"}, NULL);
    CHECK(m && pd_mesh_size(m, 0) == world && pd_mesh_coord(m, 0) == rank, "1-d mesh");
    struct pd_placement pls[] = {pd_replicate(), pd_shard(0), pd_shard(1), pd_partial(PD_RED_SUM),
                                 pd_partial(PD_RED_MAX), pd_partial(PD_RED_MIN), pd_partial(PD_RED_AVG)};
    int npl = sizeof pls / sizeof pls[0];
    const int64_t shapes[][2] = {{8, 6}, {7, 5}, {3, 1}};
    for (int dt = 0; dt < PD_DTYPE_COUNT; dt++)
        for (int sh = 0; sh < 3; sh++) {
            struct pd_tensor *g = global(shapes[sh], 2, (enum pd_dtype)dt, sh);
            for (int i = 0; i < npl; i++)
                for (int j = 0; j < npl; j++) {
                    int fl = pd_dtype_is_float((enum pd_dtype)dt);
                    if (!fl && (pls[i].op == PD_RED_AVG || pls[j].op == PD_RED_AVG) &&
                        (pls[i].kind == PD_PARTIAL || pls[j].kind == PD_PARTIAL))
                        continue; /* avg needs a float (checked below) */
                    round_trip(g, m, &pls[i], &pls[j]);
                }
        }
    /* avg of integers is refused with a message */
    struct pd_placement avg = pd_partial(PD_RED_AVG);
    CHECK(!pd_shard_tensor(global((const int64_t[]){2, 2}, 2, PD_I32, 0), m, &avg) &&
              strstr(pd_last_error(), "needs a floating dtype"),
          "avg of i32 refused");
    pd_mesh_release(m);
}

/* The collectives each single-axis transition uses (counts, not times). */
static void collectives(void)
{
    struct pd_mesh *m = pd_mesh_create((const int[]){world}, 1, NULL, NULL);
    struct pd_tensor *g = global((const int64_t[]){8, 4}, 2, PD_F32, 1);
    struct pd_placement R = pd_replicate(), S0 = pd_shard(0), S1 = pd_shard(1), P = pd_partial(PD_RED_SUM);
    struct {
        struct pd_placement *a, *b;
        enum pd_comm_kind k; /* PD_COMM_COUNT: none */
    } t[] = {{&R, &S0, PD_COMM_COUNT}, {&S0, &R, PD_COMM_ALLGATHER}, {&P, &R, PD_COMM_ALLREDUCE},
             {&P, &S1, PD_COMM_REDUCE_SCATTER}, {&S0, &S1, PD_COMM_ALLTOALL}, {&R, &P, PD_COMM_COUNT}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int tok = pd_scope_begin();
        struct pd_tensor *s = pd_shard_tensor(g, m, t[i].a);
        struct pd_comm_stats st;
        pd_comm_stats_reset();
        struct pd_tensor *r = pd_reshard(s, m, t[i].b);
        pd_comm_stats(&st);
        int64_t total = 0;
        for (int k = 0; k < PD_COMM_COUNT; k++) total += st.calls[k];
        if (t[i].k == PD_COMM_COUNT) CHECK(r && total == 0, "transition %zu: no communication, got %lld calls", i, (long long)total);
        else CHECK(r && total == 1 && st.calls[t[i].k] == 1, "transition %zu: one collective of kind %d", i, (int)t[i].k);
        pd_scope_end(tok);
    }
    /* all-gather volume: this rank sends its piece once */
    int tok = pd_scope_begin();
    struct pd_tensor *s = pd_shard_tensor(g, m, &S0);
    struct pd_comm_stats st;
    pd_comm_stats_reset();
    pd_reshard(s, m, &R);
    pd_comm_stats(&st);
    CHECK(st.bytes[PD_COMM_ALLGATHER] == pd_tensor_numel(pd_dtensor_local(s)) * 4, "all-gather bytes %lld",
          (long long)st.bytes[PD_COMM_ALLGATHER]);
    pd_scope_end(tok);
    pd_mesh_release(m);
}

/* Partial values that differ per rank, through pd_dtensor_from_local. */
static void partial_values(void)
{
    struct pd_mesh *m = pd_mesh_create((const int[]){world}, 1, NULL, NULL);
    enum pd_dtype dts[] = {PD_F32, PD_I64, PD_BF16};
    for (int k = 0; k < 3; k++) {
        int tok = pd_scope_begin();
        struct pd_tensor *g = global((const int64_t[]){5, 3}, 2, dts[k], 2);
        struct pd_tensor *mine = pd_cast(pd_scale(pd_cast(g, PD_F64), rank + 1), dts[k]);
        struct pd_placement P = pd_partial(PD_RED_SUM), R = pd_replicate(), S0 = pd_shard(0), MX = pd_partial(PD_RED_MAX);
        struct pd_tensor *d = pd_dtensor_from_local(mine, pd_tensor_shape(g), m, &P);
        struct pd_tensor *want = pd_cast(pd_scale(pd_cast(g, PD_F64), world * (world + 1) / 2), dts[k]);
        CHECK(equal(pd_dtensor_local(pd_reshard(d, m, &R)), want), "P(sum) -> R, per-rank values, %s", pd_dtype_name(dts[k]));
        CHECK(equal(pd_dtensor_local(pd_reshard(d, m, &S0)), expected(want, m, &S0)), "P(sum) -> S0 (reduce-scatter), %s",
              pd_dtype_name(dts[k]));
        struct pd_tensor *plus = pd_cast(pd_add_scalar(pd_cast(g, PD_F64), rank), dts[k]);
        struct pd_tensor *dm = pd_dtensor_from_local(plus, NULL, m, &MX);
        CHECK(equal(pd_dtensor_full(dm), pd_cast(pd_add_scalar(pd_cast(g, PD_F64), world - 1), dts[k])), "P(max) -> R, %s",
              pd_dtype_name(dts[k]));
        pd_scope_end(tok);
    }
    /* from_local: the global shape from the pieces, and a piece that breaks the rule */
    int tok = pd_scope_begin();
    struct pd_placement S0 = pd_shard(0);
    struct pd_tensor *g = global((const int64_t[]){7, 2}, 2, PD_F32, 3);
    struct pd_tensor *piece = expected(g, m, &S0);
    struct pd_tensor *d = pd_dtensor_from_local(piece, NULL, m, &S0);
    CHECK(d && pd_dtensor_shape(d)[0] == 7 && equal(pd_dtensor_full(d), g), "from_local infers [7, 2]");
    struct pd_tensor *bad = pd_dtensor_from_local(g, (const int64_t[]){7, 2}, m, &S0);
    CHECK(world == 1 || (!bad && strstr(pd_last_error(), "the split rule gives it")), "from_local refuses a wrong piece");
    pd_scope_end(tok);
    pd_mesh_release(m);
}

static int mixed(const struct pd_placement *p)
{
    return p[0].kind == PD_PARTIAL && p[1].kind == PD_PARTIAL && p[0].op != p[1].op;
}

static void two_d(void)
{
    if (world != 4) return;
    struct pd_mesh *m = pd_mesh_create((const int[]){2, 2}, 2, (const char *[]){"dp", "tp"}, NULL);
    CHECK(m && pd_mesh_axis(m, "tp") == 1 && pd_mesh_coord(m, 0) == rank / 2 && pd_mesh_coord(m, 1) == rank % 2, "2x2 mesh");
    struct pd_placement one[] = {pd_replicate(), pd_shard(0), pd_shard(1), pd_partial(PD_RED_SUM), pd_partial(PD_RED_MAX)};
    int n1 = sizeof one / sizeof one[0];
    const int64_t shapes[][2] = {{4, 6}, {7, 5}};
    enum pd_dtype dts[] = {PD_F32, PD_I32};
    for (int k = 0; k < 2; k++)
        for (int sh = 0; sh < 2; sh++) {
            struct pd_tensor *g = global(shapes[sh], 2, dts[k], sh + 5);
            for (int i = 0; i < n1 * n1; i++)
                for (int j = 0; j < n1 * n1; j++) {
                    struct pd_placement a[2] = {one[i / n1], one[i % n1]}, b[2] = {one[j / n1], one[j % n1]};
                    if (mixed(a) || mixed(b)) continue; /* refused: checked in errors() */
                    round_trip(g, m, a, b);
                }
            /* co-sharding: one dim split by both axes, in either order */
            struct pd_placement c0[2] = {pd_shard(0), pd_shard(0)}, c1[2] = {pd_shard(0), pd_shard(0)};
            c1[0].order = 1;
            struct pd_placement others[][2] = {{pd_replicate(), pd_replicate()}, {pd_shard(1), pd_shard(0)},
                                               {pd_partial(PD_RED_SUM), pd_shard(1)}};
            for (int o = 0; o < 3; o++) {
                round_trip(g, m, c0, others[o]), round_trip(g, m, others[o], c0);
                round_trip(g, m, c1, others[o]), round_trip(g, m, others[o], c1);
            }
            round_trip(g, m, c0, c1);
        }
    /* Partial(sum) and Partial(avg) on different axes commute (both linear):
     * accepted, and reduced axis by axis (a group_norm backward made them) */
    struct pd_placement lin[] = {pd_replicate(), pd_shard(0), pd_partial(PD_RED_SUM), pd_partial(PD_RED_AVG)};
    struct pd_placement sa[2] = {pd_partial(PD_RED_SUM), pd_partial(PD_RED_AVG)}, as[2] = {sa[1], sa[0]};
    for (int sh = 0; sh < 2; sh++) {
        struct pd_tensor *g = global(shapes[sh], 2, PD_F32, sh + 2);
        for (int i = 0; i < 16; i++) {
            struct pd_placement b[2] = {lin[i / 4], lin[i % 4]};
            round_trip(g, m, sa, b), round_trip(g, m, b, sa), round_trip(g, m, as, b), round_trip(g, m, b, as);
        }
    }
    int tok = pd_scope_begin(); /* values that differ per rank: sum over dp of the avg over tp of g (rank + 1) = 5 g */
    struct pd_tensor *g = global((const int64_t[]){4, 6}, 2, PD_F32, 1);
    struct pd_tensor *d = pd_dtensor_from_local(pd_scale(g, rank + 1), pd_tensor_shape(g), m, sa);
    struct pd_placement rs[2] = {pd_replicate(), pd_shard(1)}, ps[2] = {pd_partial(PD_RED_SUM), pd_replicate()};
    CHECK(d && equal(pd_dtensor_full(d), pd_scale(g, 5)), "P(sum),P(avg) with per-rank values -> R");
    CHECK(d && equal(pd_dtensor_local(pd_reshard(d, m, rs)), expected(pd_scale(g, 5), m, rs)),
          "P(sum),P(avg) with per-rank values -> R,S1");
    CHECK(d && equal(pd_dtensor_full(pd_reshard(d, m, ps)), pd_scale(g, 5)), "P(sum),P(avg) -> P(sum),R -> R");
    pd_scope_end(tok);
    pd_mesh_release(m);
}

/* To another mesh: the two halves of the world, and the world to a half. */
static void cross_mesh(void)
{
    if (world < 2) return;
    int h = world / 2, lo[4] = {0, 1, 2, 3}, hi[4] = {2, 3, 0, 1};
    if (world == 2) hi[0] = 1;
    struct pd_mesh *a = pd_mesh_create((const int[]){h}, 1, NULL, lo), *b = pd_mesh_create((const int[]){h}, 1, NULL, hi);
    struct pd_mesh *w = pd_mesh_create((const int[]){world}, 1, NULL, NULL);
    struct pd_placement S0 = pd_shard(0), S1 = pd_shard(1), R = pd_replicate(), P = pd_partial(PD_RED_SUM);
    const struct pd_placement *from[] = {&S0, &R, &P, &S1}, *to[] = {&S1, &S0, &R, &P};
    for (int k = 0; k < 4; k++) {
        int tok = pd_scope_begin();
        struct pd_tensor *g = global((const int64_t[]){5, 3}, 2, PD_F32, k);
        struct pd_tensor *x = pd_shard_tensor(g, a, from[k]);
        struct pd_tensor *y = pd_reshard(x, b, to[k]);
        CHECK(y && equal(pd_dtensor_local(y), expected(g, b, to[k])), "cross-mesh %d: a -> b", k);
        struct pd_tensor *z = pd_reshard(pd_shard_tensor(g, w, from[k]), a, to[k]);
        CHECK(z && equal(pd_dtensor_local(z), expected(g, a, to[k])), "cross-mesh %d: world -> a", k);
        pd_scope_end(tok);
    }
    pd_mesh_release(a), pd_mesh_release(b), pd_mesh_release(w);
}

static void errors(void)
{
    struct pd_mesh *m = pd_mesh_create((const int[]){world}, 1, NULL, NULL);
    struct pd_placement bad = pd_shard(2);
    CHECK(!pd_shard_tensor(global((const int64_t[]){2, 2}, 2, PD_F32, 0), m, &bad) &&
              strstr(pd_last_error(), "shards dim 2 of a 2-d tensor"),
          "shard of a dim the tensor lacks");
    CHECK(!pd_mesh_create((const int[]){world + 1}, 1, NULL, NULL) && strstr(pd_last_error(), "ranks of the world"),
          "a mesh larger than the world");
    CHECK(!pd_mesh_create((const int[]){1, 1}, 2, (const char *[]){"a", "a"}, NULL) && strstr(pd_last_error(), "two axes named"),
          "two axes with one name");
    struct pd_mesh *m2 = pd_mesh_create((const int[]){1, 1}, 2, NULL, NULL);
    struct pd_placement mix[2] = {pd_partial(PD_RED_SUM), pd_partial(PD_RED_MAX)};
    CHECK(!pd_shard_tensor(global((const int64_t[]){2, 2}, 2, PD_F32, 0), m2, mix) &&
              strstr(pd_last_error(), "Partial with reductions that do not commute (sum and max)"),
          "Partial axes with reductions that do not commute");
    struct pd_placement mix2[2] = {pd_partial(PD_RED_MIN), pd_partial(PD_RED_MAX)};
    CHECK(!pd_shard_tensor(global((const int64_t[]){2, 2}, 2, PD_F32, 0), m2, mix2) &&
              strstr(pd_last_error(), "(min and max)"), "Partial(min) and Partial(max) refused");
    pd_mesh_release(m2);
    /* the rest of the API with NULLs and values out of range (the bad-input sweep
     * runs single-process and does not start MPI: these are its rows) */
    struct pd_tensor *g = global((const int64_t[]){2, 2}, 2, PD_F32, 0), *d = pd_shard_tensor(g, m, &bad);
    struct pd_placement r = pd_replicate(), badop = pd_partial((enum pd_reduce_op)9), badkind = {(enum pd_placement_kind)7, 0, 0, 0};
    d = pd_shard_tensor(g, m, &r);
    CHECK(!pd_mesh_create(NULL, 1, NULL, NULL) && !pd_mesh_create((const int[]){1}, 0, NULL, NULL) &&
              !pd_mesh_create((const int[]){1}, PD_MAX_MESH_DIMS + 1, NULL, NULL) && !pd_mesh_create((const int[]){0}, 1, NULL, NULL) &&
              !pd_mesh_create((const int[]){1}, 1, NULL, (const int[]){world}) && !pd_mesh_create((const int[]){1}, 1, (const char *[]){""}, NULL),
          "mesh_create refuses NULL, ndim, sizes, ranks and names");
    CHECK(!pd_shard_tensor(NULL, m, &r) && !pd_shard_tensor(g, NULL, &r) && !pd_shard_tensor(g, m, NULL) &&
              !pd_shard_tensor(g, m, &badop) && !pd_shard_tensor(g, m, &badkind) && !pd_shard_tensor(d, m, &r),
          "shard_tensor refuses NULLs, bad placements and a distributed input");
    CHECK(!pd_reshard(NULL, m, &r) && !pd_reshard(d, NULL, &r) && !pd_reshard(d, m, NULL) && !pd_reshard(d, m, &badop),
          "reshard refuses NULLs and bad placements");
    CHECK(!pd_dtensor_from_local(NULL, NULL, m, &r) && !pd_dtensor_from_local(g, NULL, NULL, &r) && !pd_dtensor_from_local(d, NULL, m, &r),
          "from_local refuses NULLs and a distributed input");
    CHECK(!pd_dtensor_full(NULL) && !pd_dtensor_full(g) && !pd_dtensor_local(g) && !pd_dtensor_is_dist(g) && !pd_dtensor_shape(g) &&
              !pd_dtensor_mesh(NULL) && !pd_dtensor_placements(g) && pd_dtensor_is_dist(d),
          "accessors of plain tensors and NULL");
    CHECK(pd_mesh_ndim(NULL) < 0 && pd_mesh_size(NULL, 0) < 0 && pd_mesh_size(m, 5) < 0 && pd_mesh_size(m, -1) == world &&
              pd_mesh_axis(m, NULL) == -1 && pd_mesh_axis(NULL, "x") == -1 && !pd_mesh_axis_name(m, 3) && pd_mesh_coord(m, -2) == -1 &&
              !pd_mesh_contains(NULL) && pd_dist_is_initialized(),
          "mesh accessors out of range");
    int64_t s0 = -1, s1 = -1;
    pd_dist_piece(10, 0, 0, &s0, &s1), pd_dist_piece(10, 3, 99, &s0, &s1), pd_dist_piece(10, 3, -1, NULL, NULL);
    CHECK(s0 == 10 && s1 == 10, "a piece past the end is empty");
    struct pd_comm_stats st;
    pd_comm_stats(NULL), pd_comm_stats(&st), pd_comm_stats_reset(), pd_mesh_retain(NULL), pd_mesh_release(NULL);
    CHECK(!pd_reshard(global((const int64_t[]){2}, 1, PD_F32, 0), m, &bad) && strstr(pd_last_error(), "not a distributed"),
          "reshard of a plain tensor");
    pd_mesh_release(m);
}

int main(void)
{
    world = pd_dist_world_size(), rank = pd_dist_world_rank();
    int tok = pd_scope_begin();
    one_d_all_dtypes();
    collectives();
    partial_values();
    two_d();
    cross_mesh();
    errors();
    pd_scope_end(tok);
    int total = dist_check_total();
    if (rank == 0) printf("test_dist_reshard: %d ranks, %d checks per rank, %d failed\n", world, checks, total);
    return total ? 1 : 0;
}
