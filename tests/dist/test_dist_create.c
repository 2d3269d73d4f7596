/* paddle.c — sharded creation and the selecting views under mpirun (2 and
 * 4 ranks; docs/distributed.md, "How ops are distributed"):
 *   - pd_dtensor_arange, _linspace and _eye in every placement of a 1-D
 *     mesh and of a 2 x 2 mesh, even and uneven, equal the single-process
 *     tensors bit for bit, and no collective runs to make them;
 *   - diagonal keeps a split of rows (columns) when the diagonal has one
 *     element per row (column) and all-gathers only the diagonal's pieces
 *     over the axes of a plane dim it does not keep; slice keeps a split
 *     that fits its pieces; flip keeps an even split with one send and one
 *     receive, an uneven one with a send of each overlap of the flipped
 *     piece with another rank's piece: each is checked for values (bit
 *     for bit), gradients, and for the bytes it moves. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/dist.h"
#include "pd/pd.h"

#include "dist_check.h"

/* a and b hold the same bytes (b plain; a distributed: gathered first). */
static int same(struct pd_tensor *a, struct pd_tensor *b)
{
    if (a && pd_dtensor_is_dist(a)) a = pd_dtensor_full(a);
    if (!a || !b || pd_tensor_ndim(a) != pd_tensor_ndim(b) || pd_tensor_dtype(a) != pd_tensor_dtype(b)) return 0;
    for (int d = 0; d < pd_tensor_ndim(a); d++)
        if (pd_tensor_shape(a)[d] != pd_tensor_shape(b)[d]) return 0;
    struct pd_tensor *ca = pd_contiguous(a), *cb = pd_contiguous(b);
    size_t n = (size_t)pd_tensor_numel(a) * pd_dtype_size(pd_tensor_dtype(a));
    return ca && cb && (n == 0 || !memcmp(pd_tensor_data(ca), pd_tensor_data(cb), n));
}

/* Collectives and sends since the last reset (sends: only those). */
static int64_t comm_calls_of(int sends)
{
    struct pd_comm_stats st;
    pd_comm_stats(&st);
    int64_t n = 0;
    for (int k = 0; k < PD_COMM_COUNT; k++) n += (k == PD_COMM_SEND) == sends ? st.calls[k] : 0;
    return n;
}

static int64_t comm_calls(void) { return comm_calls_of(0) + comm_calls_of(1); }

static char *pl_str(const struct pd_placement *pl, int mdim, char *b)
{
    char *p = b;
    for (int a = 0; a < mdim; a++) {
        if (pl[a].kind == PD_SHARD)
            p += sprintf(p, "%sS%d.%d", a ? "," : "", pl[a].dim, pl[a].order);
        else if (pl[a].kind == PD_PARTIAL)
            p += sprintf(p, "%sP%d", a ? "," : "", (int)pl[a].op);
        else
            p += sprintf(p, "%sR", a ? "," : "");
    }
    return b;
}

/* Every placement of an ndim tensor on mesh m: per axis R, S(d) for each
 * dim (both orders when two axes split one dim), P(sum), P(max) (not
 * both: one reduction per tensor). Returns how many, in out. */
static int all_placements(int ndim, int mdim, struct pd_placement (*out)[PD_MAX_MESH_DIMS])
{
    int opts = 3 + ndim, n = 0, total = mdim == 1 ? opts : opts * opts;
    for (int c = 0; c < total; c++) {
        struct pd_placement pl[PD_MAX_MESH_DIMS];
        for (int a = 0, r = c; a < mdim; a++, r /= opts) {
            int o = r % opts;
            pl[a] = o == 0   ? pd_replicate()
                    : o == 1 ? pd_partial(PD_RED_SUM)
                    : o == 2 ? pd_partial(PD_RED_MAX)
                             : pd_shard(o - 3);
        }
        if (mdim == 2 && pl[0].kind == PD_PARTIAL && pl[1].kind == PD_PARTIAL && pl[0].op != pl[1].op)
            continue; /* refused: one reduction per tensor */
        memcpy(out[n++], pl, sizeof pl);
        if (mdim == 2 && pl[0].kind == PD_SHARD && pl[1].kind == PD_SHARD && pl[0].dim == pl[1].dim) {
            pl[0].order = 1; /* axis 1 outermost */
            memcpy(out[n++], pl, sizeof pl);
        }
    }
    return n;
}

static void check_creation(struct pd_mesh *m)
{
    int mdim = pd_mesh_ndim(m);
    struct pd_placement pls[64][PD_MAX_MESH_DIMS];
    char b[64];
    /* 1-D: arange (even, uneven, negative step, integers, empty) and
     * linspace (odd, even, one, bf16, none) */
    static const struct {
        int lin; /* linspace (num), else arange (step) */
        double start, stop, step;
        int64_t num;
        enum pd_dtype dt;
    } seqs[] = {{0, 0, 8, 1, 0, PD_F32},      {0, -3.5, 4.1, 0.7, 0, PD_F32}, {0, 5, -5, -1.5, 0, PD_F64},
                {0, -7, 6, 3, 0, PD_I32},     {0, 0, 0, 1, 0, PD_F32},        {1, -1, 1, 0, 9, PD_F32},
                {1, 0.1, 7.3, 0, 13, PD_F64}, {1, 2, 2, 0, 1, PD_F32},        {1, -1, 1, 0, 8, PD_BF16},
                {1, 0, 1, 0, 0, PD_F32}};
    int n1 = all_placements(1, mdim, pls);
    for (int i = 0; i < n1; i++) {
        const struct pd_placement *pl = pls[i];
        int tok = pd_scope_begin();
        for (size_t j = 0; j < sizeof seqs / sizeof seqs[0]; j++) {
            const char *what = seqs[j].lin ? "linspace" : "arange";
            double a = seqs[j].start, z = seqs[j].stop;
            pd_comm_stats_reset();
            struct pd_tensor *d = seqs[j].lin ? pd_dtensor_linspace(a, z, seqs[j].num, seqs[j].dt, m, pl)
                                              : pd_dtensor_arange(a, z, seqs[j].step, seqs[j].dt, m, pl);
            CHECK(d && comm_calls() == 0, "%s %zu [%s]: made with %lld collectives", what, j, pl_str(pl, mdim, b),
                  (long long)comm_calls());
            struct pd_tensor *one =
                seqs[j].lin ? pd_linspace(a, z, seqs[j].num, seqs[j].dt) : pd_arange(a, z, seqs[j].step, seqs[j].dt);
            CHECK(same(d, one), "%s %zu [%s]: values", what, j, pl_str(pl, mdim, b));
        }
        pd_scope_end(tok);
    }
    /* 2-D: eye, square and not, split on either dim or both */
    int n2 = all_placements(2, mdim, pls);
    for (int i = 0; i < n2; i++) {
        const struct pd_placement *pl = pls[i];
        int tok = pd_scope_begin();
        int64_t ey[][2] = {{6, 6}, {5, 7}, {7, 3}, {4, -1}, {1, 5}};
        for (size_t j = 0; j < sizeof ey / sizeof ey[0]; j++) {
            pd_comm_stats_reset();
            struct pd_tensor *d = pd_dtensor_eye(ey[j][0], ey[j][1], j == 2 ? PD_I64 : PD_F32, m, pl);
            CHECK(d && comm_calls() == 0, "eye %zu [%s]: made with %lld collectives", j, pl_str(pl, mdim, b),
                  (long long)comm_calls());
            CHECK(same(d, pd_eye(ey[j][0], ey[j][1], j == 2 ? PD_I64 : PD_F32)), "eye %zu [%s]: values", j,
                  pl_str(pl, mdim, b));
        }
        pd_scope_end(tok);
    }
    /* refusals: the wrappers' messages */
    struct pd_placement r[PD_MAX_MESH_DIMS] = {pd_replicate(), pd_replicate()};
    CHECK(!pd_dtensor_arange(0, 1, 0, PD_F32, m, r) && strstr(pd_last_error(), "step != 0"), "arange step 0");
    CHECK(!pd_dtensor_linspace(0, 1, -1, PD_F32, m, r) && strstr(pd_last_error(), "dtensor_linspace") &&
              strstr(pd_last_error(), "must be >= 0"),
          "linspace -1");
    CHECK(!pd_dtensor_eye(-2, 3, PD_F32, m, r), "eye -2");
    CHECK(!pd_dtensor_eye(2, 3, PD_F32, NULL, r), "eye without a mesh");
}

/* A [r, c] matrix of distinct values. */
static struct pd_tensor *matrix(const int64_t *shape, int ndim)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return pd_reshape(pd_sin(pd_arange(0, (double)n, 1, PD_F32)), shape, ndim);
}

/* y = f(x placed), compared with f(x) bit for bit, with collectives in the
 * forward call expected (want >= 0: exactly; -1: some) and `sends` sends;
 * then the gradient of sum(y * w) for a fixed w. */
typedef struct pd_tensor *(*view_fn)(struct pd_tensor *x, const int64_t *arg);

/* Returns the bytes the forward call moved on this rank (pd_comm_stats:
 * what it sent). */
static int64_t check_view(const char *name, view_fn f, const int64_t *arg, const int64_t *shape, int ndim,
                          struct pd_mesh *m, const struct pd_placement *pl, int want_calls, int sends)
{
    char b[64];
    int tok = pd_scope_begin();
    struct pd_tensor *x = matrix(shape, ndim), *y1 = f(x, arg);
    struct pd_tensor *xd = pd_requires_grad_(pd_shard_tensor(x, m, pl), 1);
    pd_comm_stats_reset();
    struct pd_tensor *y2 = f(xd, arg);
    int64_t calls = comm_calls_of(0), sent = comm_calls_of(1), moved = 0;
    struct pd_comm_stats st;
    pd_comm_stats(&st);
    for (int k = 0; k < PD_COMM_COUNT; k++) moved += st.bytes[k];
    CHECK(y2 && (want_calls < 0 ? calls > 0 : calls == want_calls) && sent == sends,
          "%s [%s]: %lld collectives and %lld sends, want %s%d and %d", name, pl_str(pl, pd_mesh_ndim(m), b),
          (long long)calls, (long long)sent, want_calls < 0 ? "more than " : "", want_calls < 0 ? 0 : want_calls,
          sends);
    CHECK(same(y2, y1), "%s [%s]: values", name, pl_str(pl, pd_mesh_ndim(m), b));
    /* the gradient: sum(y * w) with w = cos(arange) of y's shape */
    struct pd_tensor *w = pd_reshape(pd_cos(pd_arange(0, (double)pd_tensor_numel(y1), 1, PD_F32)), pd_tensor_shape(y1),
                                     pd_tensor_ndim(y1));
    struct pd_tensor *x1 = pd_requires_grad_(pd_clone(x), 1), *g1 = NULL, *g2 = NULL;
    struct pd_tensor *l1 = pd_sum(pd_mul(f(x1, arg), w), NULL, 0, 0), *l2 = pd_sum(pd_mul(y2, w), NULL, 0, 0);
    CHECK(l1 && pd_grad(&l1, 1, &x1, 1, &g1, NULL) == 0, "%s: single-process gradient", name);
    CHECK(l2 && pd_grad(&l2, 1, &xd, 1, &g2, NULL) == 0, "%s [%s]: gradient", name, pl_str(pl, pd_mesh_ndim(m), b));
    CHECK(g1 && g2 && same(g2, g1), "%s [%s]: gradient values", name, pl_str(pl, pd_mesh_ndim(m), b));
    pd_scope_end(tok);
    return moved;
}

static struct pd_tensor *diag(struct pd_tensor *x, const int64_t *a)
{
    return pd_diagonal(x, a[0], (int)a[1], (int)a[2]);
}
static struct pd_tensor *slice(struct pd_tensor *x, const int64_t *a)
{
    return pd_slice(x, (int)a[0], a[1], a[2], a[3]);
}
static struct pd_tensor *flip(struct pd_tensor *x, const int64_t *a)
{
    int axes[2] = {(int)a[1], (int)a[2]};
    return pd_flip(x, axes, (int)a[0]);
}

/* Flipping a dim of extent n split into np pieces, the piece `me` holds
 * the output indices [n - i1, n - i0) once flipped ([i0, i1): its input
 * piece); each overlap with another piece's range goes to that piece's
 * rank (include/pd/dist.h's uneven rule). *rows: the indices this rank
 * sends, *msgs: to how many ranks. */
static void flip_sends(int64_t n, int np, int me, int64_t *rows, int *msgs)
{
    int64_t i0, i1;
    pd_dist_piece(n, np, me, &i0, &i1);
    *rows = 0, *msgs = 0;
    for (int q = 0; q < np; q++) {
        int64_t q0, q1;
        pd_dist_piece(n, np, q, &q0, &q1);
        int64_t lo = n - i1 > q0 ? n - i1 : q0, hi = n - i0 < q1 ? n - i0 : q1;
        if (q != me && hi > lo) *rows += hi - lo, ++*msgs;
    }
}

/* The diagonal elements (i, i + off) of a piece holding rows [r0, r1) and
 * columns [c0, c1). */
static int64_t diag_count(int64_t off, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    int64_t a = r0 > c0 - off ? r0 : c0 - off, b = r1 < c1 - off ? r1 : c1 - off;
    return b > a ? b - a : 0;
}

/* The diagonal of x [rows, cols] (batch `b` elements before the plane),
 * rows split into nr pieces (this rank: ir) and columns into nc (ic): one
 * all-gather of this rank's diagonal elements, b of them each, and nothing
 * else (before, the columns or the rows were gathered whole). */
static void check_diag_moves(const char *name, const int64_t *arg, const int64_t *shape, int ndim, struct pd_mesh *m,
                             const struct pd_placement *pl, int nr, int ir, int nc, int ic)
{
    int64_t rows = shape[arg[1]], cols = shape[arg[2]], b = 1, r0, r1, c0, c1;
    for (int d = 0; d < ndim; d++) b *= d == arg[1] || d == arg[2] ? 1 : shape[d];
    pd_dist_piece(rows, nr, ir, &r0, &r1);
    pd_dist_piece(cols, nc, ic, &c0, &c1);
    int64_t want = diag_count(arg[0], r0, r1, c0, c1) * b * 4;
    int64_t moved = check_view(name, diag, arg, shape, ndim, m, pl, 1, 0);
    CHECK(moved == want, "%s: moved %lld bytes, want this rank's diagonal, %lld", name, (long long)moved,
          (long long)want);
}

static void check_flip_moves(const char *name, int64_t n, int64_t cols, struct pd_mesh *m,
                             const struct pd_placement *pl, int np, int me)
{
    int64_t rows;
    int msgs;
    flip_sends(n, np, me, &rows, &msgs);
    int64_t moved = check_view(name, flip, (int64_t[]){1, 0, 0}, (int64_t[]){n, cols}, 2, m, pl, 0, msgs);
    CHECK(moved == rows * cols * 4, "%s: sent %lld bytes, want %lld", name, (long long)moved,
          (long long)(rows * cols * 4));
}

static void check_views(struct pd_mesh *line, struct pd_mesh *grid)
{
    int n = world;
    struct pd_placement s0[1] = {pd_shard(0)}, s1[1] = {pd_shard(1)}, s2[1] = {pd_shard(2)};
    /* diagonal: rows split, one element per row: kept (no collective) */
    check_view("diagonal rows", diag, (int64_t[]){0, 0, 1}, (int64_t[]){6, 9}, 2, line, s0, 0, 0);
    check_view("diagonal rows, offset 3", diag, (int64_t[]){3, 0, 1}, (int64_t[]){6, 9}, 2, line, s0, 0, 0);
    check_view("diagonal rows, uneven", diag, (int64_t[]){1, 0, 1}, (int64_t[]){5, 9}, 2, line, s0, 0, 0);
    check_view("diagonal columns", diag, (int64_t[]){-2, 0, 1}, (int64_t[]){9, 6}, 2, line, s1, 0, 0);
    check_view("diagonal, axes swapped", diag, (int64_t[]){0, 1, 0}, (int64_t[]){6, 9}, 2, line, s0, 0, 0);
    check_view("diagonal batch", diag, (int64_t[]){1, 1, 2}, (int64_t[]){4, 5, 5}, 3, line, s0, 0, 0);
    check_view("diagonal batch last", diag, (int64_t[]){0, 0, 1}, (int64_t[]){5, 5, 4}, 3, line, s2, 0, 0);
    /* the diagonal misses rows: its pieces gathered, not the rows */
    int me = pd_mesh_coord(line, 0);
    check_diag_moves("diagonal rows, offset -1", (int64_t[]){-1, 0, 1}, (int64_t[]){6, 9}, 2, line, s0, n, me, 1, 0);
    check_diag_moves("diagonal rows, short", (int64_t[]){0, 0, 1}, (int64_t[]){9, 6}, 2, line, s0, n, me, 1, 0);
    check_diag_moves("diagonal batch, short", (int64_t[]){1, 1, 2}, (int64_t[]){3, 7, 5}, 3, line, s1, n, me, 1, 0);
    /* slice: a trimmed tail and an even stride fit; a shifted start does not */
    check_view("slice tail", slice, (int64_t[]){0, 0, 4 * n - 1, 1}, (int64_t[]){4 * n, 3}, 2, line, s0, 0, 0);
    check_view("slice stride", slice, (int64_t[]){0, 0, 4 * n, 2}, (int64_t[]){4 * n, 3}, 2, line, s0, 0, 0);
    check_view("slice shifted", slice, (int64_t[]){0, 1, 4 * n, 1}, (int64_t[]){4 * n, 3}, 2, line, s0, -1, 0);
    /* a step past the end: one element, rank 0's; the fit check once overflowed on it */
    check_view("slice huge step", slice, (int64_t[]){0, 0, 4 * n, INT64_MAX}, (int64_t[]){4 * n, 3}, 2, line, s0, 0, 0);
    check_view("slice other dim", slice, (int64_t[]){1, 1, 3, 1}, (int64_t[]){4 * n, 3}, 2, line, s0, 0, 0);
    /* flip: an even split swaps pieces (one send per rank that moves); uneven gathers */
    check_view("flip even", flip, (int64_t[]){1, 0, 0}, (int64_t[]){2 * n, 3}, 2, line, s0, 0, 1);
    /* uneven: each rank sends the overlaps of its flipped piece with the
     * others' pieces, and nothing is gathered (9 rows over 4: an empty piece) */
    int64_t flip_n[] = {2 * n + 1, 7, 9, 1, 3 * n - 1};
    for (size_t i = 0; i < sizeof flip_n / sizeof flip_n[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "flip uneven, %lld rows", (long long)flip_n[i]);
        check_flip_moves(name, flip_n[i], 3, line, s0, n, me);
    }
    check_view("flip other dim", flip, (int64_t[]){1, 1, 0}, (int64_t[]){2 * n, 3}, 2, line, s0, 0, 0);
    /* the exchange is on the profiler's communication track, with its bytes */
    {
        int tok = pd_scope_begin();
        struct pd_tensor *x = pd_shard_tensor(matrix((int64_t[]){2 * n, 3}, 2), line, s0);
        struct pd_profiler_totals t = {0};
        CHECK(pd_profiler_begin() == 0, "profiler");
        struct pd_tensor *y = pd_flip(x, (int[]){0}, 1);
        CHECK(pd_profiler_end() == 0 && pd_profiler_totals(&t) == 0, "profiler totals");
        CHECK(y && t.comm_bytes == 2 * 3 * 4 && t.comm_us >= 0, "flip on the profiler: %g bytes, want 24",
              t.comm_bytes);
        pd_scope_end(tok);
    }
    if (grid) {
        struct pd_placement rc[2] = {pd_shard(0), pd_shard(1)}, rr[2] = {pd_shard(0), pd_shard(0)};
        struct pd_placement rr1[2] = {{PD_SHARD, 0, 1, PD_RED_SUM}, {PD_SHARD, 0, 0, PD_RED_SUM}};
        struct pd_placement bp[2] = {pd_shard(0), pd_partial(PD_RED_SUM)};
        check_view("diagonal rows nested", diag, (int64_t[]){0, 0, 1}, (int64_t[]){8, 9}, 2, grid, rr, 0, 0);
        check_view("diagonal rows, order 1", diag, (int64_t[]){1, 0, 1}, (int64_t[]){7, 9}, 2, grid, rr1, 0, 0);
        /* rows and columns split: the rows (columns) kept when the diagonal
         * follows them, and only the diagonal's pieces gathered on the other axis */
        int c0 = pd_mesh_coord(grid, 0), c1 = pd_mesh_coord(grid, 1);
        struct pd_placement cr[2] = {pd_shard(1), pd_shard(0)}, b12[2] = {pd_shard(1), pd_shard(2)};
        check_diag_moves("diagonal rows and columns", (int64_t[]){0, 0, 1}, (int64_t[]){6, 9}, 2, grid, rc, 2, c0, 2, c1);
        check_diag_moves("diagonal columns and rows", (int64_t[]){-2, 0, 1}, (int64_t[]){9, 6}, 2, grid, rc, 2, c0, 2, c1);
        check_diag_moves("diagonal, neither kept", (int64_t[]){-1, 0, 1}, (int64_t[]){7, 7}, 2, grid, cr, 2, c1, 2, c0);
        check_diag_moves("diagonal batch, both", (int64_t[]){1, 1, 2}, (int64_t[]){3, 5, 9}, 3, grid, b12, 2, c0, 2, c1);
        check_diag_moves("diagonal, axes swapped", (int64_t[]){0, 1, 0}, (int64_t[]){9, 6}, 2, grid, rc, 2, c1, 2, c0);
        { /* the gathered diagonal is a copy: writing into it is refused */
            int tok = pd_scope_begin();
            struct pd_tensor *x = pd_shard_tensor(matrix((int64_t[]){6, 9}, 2), grid, rc);
            struct pd_tensor *y = pd_diagonal(x, 0, 0, 1);
            CHECK(y && !pd_add_(y, pd_scalar(1, PD_F32)) && strstr(pd_last_error(), "copy"),
                  "diagonal of rows and columns: a write into it must be refused");
            pd_scope_end(tok);
        }
        check_view("diagonal, partial", diag, (int64_t[]){0, 1, 2}, (int64_t[]){4, 5, 5}, 3, grid, bp, 0, 0);
        check_view("slice nested", slice, (int64_t[]){0, 0, 16, 2}, (int64_t[]){16, 3}, 2, grid, rr, 0, 0);
        check_view("flip both dims", flip, (int64_t[]){2, 0, 1}, (int64_t[]){4, 6}, 2, grid, rc, 0, 1);
        check_view("flip nested", flip, (int64_t[]){1, 0, 0}, (int64_t[]){8, 3}, 2, grid, rr1, 0, 1);
        /* uneven on a grid: nested (piece index tp * 2 + dp), and both dims
         * reversed (one exchange per dim: rows over dp, then columns over tp) */
        check_flip_moves("flip nested, uneven", 7, 3, grid, rr1, 4, c1 * 2 + c0);
        int64_t rows0, cols1, r0, r1, k0, k1;
        int m0, m1;
        flip_sends(5, 2, c0, &rows0, &m0);
        flip_sends(7, 2, c1, &cols1, &m1);
        pd_dist_piece(5, 2, c0, &r0, &r1);
        pd_dist_piece(7, 2, c1, &k0, &k1);
        int64_t moved = check_view("flip both dims, uneven", flip, (int64_t[]){2, 0, 1}, (int64_t[]){5, 7}, 2, grid, rc, 0,
                                   m0 + m1);
        CHECK(moved == (rows0 * (k1 - k0) + cols1 * (r1 - r0)) * 4, "flip both dims, uneven: sent %lld bytes",
              (long long)moved);
    }
}

int main(void)
{
    rank = pd_dist_world_rank();
    world = pd_dist_world_size();
    struct pd_mesh *line = pd_mesh_create((int[]){world}, 1, (const char *const[]){"x"}, NULL);
    struct pd_mesh *grid =
        world == 4 ? pd_mesh_create((int[]){2, 2}, 2, (const char *const[]){"dp", "tp"}, NULL) : NULL;
    CHECK(line && (world != 4 || grid), "meshes");
    if (line) check_creation(line);
    if (grid) check_creation(grid);
    if (line) check_views(line, grid);
    pd_mesh_release(line);
    pd_mesh_release(grid);
    int all = dist_check_total();
    if (rank == 0) printf("test_dist_create: %d checks on rank 0, %d failures over %d ranks\n", checks, all, world);
    return all != 0;
}
