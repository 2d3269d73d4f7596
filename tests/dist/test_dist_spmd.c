/* paddle.c — the distribute stage under mpirun (2 and 4 ranks): programs
 * written for one process run on distributed tensors, and their values and
 * gradients equal the single-process ones. Each case is a function of some
 * inputs that returns a scalar loss; it runs once on plain tensors and
 * once on tensors placed by the case (data, tensor and mixed parallel, on
 * 1-D and 2-D meshes), and the loss and every input's gradient (gathered
 * with pd_dtensor_full) must agree to f32 rounding. Backward has no rules
 * of its own: the VJPs' ops come through the stage. The grouped-query
 * attention rule, called alone, must allocate nothing. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/dist.h"
#include "pd/pd.h"

#include "dist/dist_internal.h" /* the sdpa rule, called directly */
#include "dist_check.h"

static struct pd_tensor *randn(const int64_t *shape, int ndim, int salt)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (float)sin(0.37 * (double)i + 1.3 * salt) * 0.8f;
    struct pd_tensor *t = pd_from_buffer(v, shape, ndim, PD_F32);
    free(v);
    return t;
}

#define MAX_IN 6
/* bf16 autocast: one process and the mesh round the same f32 sums to bf16
 * at different points (a Partial product is rounded to bf16 on each rank,
 * then summed), so they differ by bf16 roundings, not f32's. The largest
 * difference measured over these cases (2 and 4 ranks, printed at the end)
 * was 4.5e-4 of the values' scale; the tolerance is one bf16 rounding,
 * 2^-8, nine times that. */
#define TOL_BF16 3.9e-3
/* f16 autocast: the same, with f16's rounding (2^-11 relative, 8 times
 * finer than bf16's). The largest difference measured (2 and 4 ranks) was
 * 6.0e-5; the tolerance is one f16 rounding, 2^-11, eight times that. */
#define TOL_F16 4.9e-4
struct dcase {
    const char *name;
    int n_in;
    int64_t shape[MAX_IN][4];
    int ndim[MAX_IN];
    int is_int[MAX_IN]; /* integer input (ids, targets): values in [0, int_hi) */
    int int_hi;
    struct pd_tensor *(*f)(struct pd_tensor **in);
};

static struct pd_tensor *make_input(const struct dcase *c, int i)
{
    struct pd_tensor *t = randn(c->shape[i], c->ndim[i], i + 1);
    if (!c->is_int[i]) return t;
    /* integers in [0, hi): floor((t + 0.8) / 1.6 * hi) */
    return pd_cast(pd_clip(pd_floor(pd_scale(pd_add_scalar(t, 0.8), c->int_hi / 1.6001)), 0, c->int_hi - 1), PD_I64);
}

/* Autocast to this dtype (PD_BF16, PD_F16; -1: off) around both runs
 * (autocast_case): tolerances the dtype's (TOL_BF16, TOL_F16). */
static int autocast_dt = -1;
static double worst_ac[2]; /* the largest difference seen under bf16, f16 autocast, reported */

/* c->f(in), under autocast to autocast_dt when it is set. */
static struct pd_tensor *call_f(const struct dcase *c, struct pd_tensor **in)
{
    int ac = autocast_dt >= 0 ? pd_autocast_begin((enum pd_dtype)autocast_dt) : 0;
    struct pd_tensor *l = c->f(in);
    if (autocast_dt >= 0) pd_autocast_end(ac);
    return l;
}

/* Record a difference seen under autocast. */
static void seen(double d)
{
    if (autocast_dt >= 0) worst_ac[autocast_dt == PD_F16] = fmax(worst_ac[autocast_dt == PD_F16], d);
}

/* Run c on plain tensors and on tensors in placements pl[i] on m. */
static void run_case(const struct dcase *c, struct pd_mesh *m, struct pd_placement pl[][PD_MAX_MESH_DIMS],
                     const char *label)
{
    int tok = pd_scope_begin();
    struct pd_tensor *plain[MAX_IN], *dist[MAX_IN];
    for (int i = 0; i < c->n_in; i++) {
        plain[i] = make_input(c, i);
        if (!c->is_int[i]) pd_requires_grad_(plain[i], 1);
        dist[i] = pd_shard_tensor(make_input(c, i), m, pl[i]);
        CHECK(dist[i] != NULL, "%s %s: shard input %d", c->name, label, i);
        if (!dist[i]) { pd_scope_end(tok); return; }
        if (!c->is_int[i]) pd_requires_grad_(dist[i], 1);
    }
    struct pd_tensor *l1 = call_f(c, plain), *l2 = call_f(c, dist);
    double tol = autocast_dt == PD_BF16 ? TOL_BF16 : autocast_dt == PD_F16 ? TOL_F16 : 2e-5;
    CHECK(l1 && l2, "%s %s: loss", c->name, label);
    if (!l1 || !l2) { pd_scope_end(tok); return; }
    double v1 = pd_item(l1), v2 = pd_item(l2);
    seen(fabs(v1 - v2) / (1 + fabs(v1)));
    CHECK(fabs(v1 - v2) <= tol * (1 + fabs(v1)), "%s %s: loss %.9g, single process %.9g", c->name, label, v2, v1);
    CHECK(pd_backward(l1, NULL, 0) == 0, "%s: backward (single)", c->name);
    CHECK(pd_backward(l2, NULL, 0) == 0, "%s %s: backward", c->name, label);
    for (int i = 0; i < c->n_in; i++) {
        if (c->is_int[i]) continue;
        struct pd_tensor *g1 = pd_tensor_grad(plain[i]), *g2 = pd_tensor_grad(dist[i]);
        CHECK(g2 != NULL, "%s %s: no gradient for input %d", c->name, label, i);
        if (!g2 || !g1) continue;
        const struct pd_placement *gp = pd_dtensor_placements(g2);
        for (int a = 0; gp && a < pd_mesh_ndim(m); a++)
            CHECK(gp[a].kind == (pl[i][a].kind == PD_PARTIAL ? PD_REPLICATE : pl[i][a].kind) && /* a Partial leaf's: R */
                      (gp[a].kind != PD_SHARD || gp[a].dim == pl[i][a].dim),
                  "%s %s: input %d's gradient is not in the input's placements (axis %d)", c->name, label, i, a);
        double d = dist_diff(pd_dtensor_full(g2), g1);
        seen(d);
        CHECK(d <= tol, "%s %s: gradient of input %d differs by %.3g", c->name, label, i, d);
        CHECK(pd_tensor_dtype(g2) == pd_tensor_dtype(plain[i]), "%s %s: gradient %d is %s", c->name, label, i,
              pd_dtype_name(pd_tensor_dtype(g2)));
    }
    pd_scope_end(tok);
}

/* ---- the cases ------------------------------------------------------- */
static struct pd_tensor *f_pointwise(struct pd_tensor **in)
{
    struct pd_tensor *y = pd_add(pd_mul(pd_exp(in[0]), in[1]), pd_tanh(in[0]));
    return pd_sum(pd_mul(y, y), NULL, 0, 0);
}
static struct pd_tensor *f_reduce(struct pd_tensor **in)
{
    int ax1[1] = {1}, ax0[1] = {0};
    struct pd_tensor *a = pd_sum(in[0], ax1, 1, 0), *b = pd_amax(in[0], ax0, 1, 1), *c = pd_mean(in[0], ax0, 1, 0);
    return pd_add(pd_add(pd_sum(pd_mul(a, a), NULL, 0, 0), pd_sum(pd_exp(b), NULL, 0, 0)),
                  pd_sum(pd_mul(c, c), NULL, 0, 0));
}
static struct pd_tensor *f_mlp(struct pd_tensor **in) /* x [B, T, D] @ W1 [D, H], relu, @ W2 [H, D] */
{
    struct pd_tensor *h = pd_relu(pd_matmul(in[0], in[1], 0, 0));
    struct pd_tensor *y = pd_matmul(h, in[2], 0, 0);
    return pd_mean(pd_mul(y, y), NULL, 0, 0);
}
static struct pd_tensor *f_matmul(struct pd_tensor **in) /* x [4, 6] @ w [6, 8] */
{
    struct pd_tensor *y = pd_cast(pd_matmul(in[0], in[1], 0, 0), PD_F32);
    return pd_mean(pd_mul(y, y), NULL, 0, 0);
}
static const struct dcase mm_case = {"matmul", 2, {{4, 6}, {6, 8}}, {2, 2}, {0}, 0, f_matmul};
static struct pd_tensor *f_softmax(struct pd_tensor **in)
{
    struct pd_tensor *p = pd_softmax(in[0], -1), *q = pd_log_softmax(in[0], 0);
    return pd_add(pd_sum(pd_mul(p, in[1]), NULL, 0, 0), pd_sum(pd_mul(q, q), NULL, 0, 0));
}
static struct pd_tensor *f_views(struct pd_tensor **in) /* [4, 6, 8] */
{
    int64_t s1[3] = {4, 48, 1}, s2[2] = {24, 8};
    struct pd_tensor *a = pd_reshape(in[0], s1, 3);
    struct pd_tensor *b = pd_reshape(pd_transpose(in[0], 1, 2), s1, 3);
    struct pd_tensor *c = pd_slice(pd_reshape(in[0], s2, 2), 1, 2, 7, 2);
    struct pd_tensor *e = pd_expand(pd_unsqueeze(in[0], 1), (int64_t[]){4, 3, 6, 8}, 4);
    return pd_add(pd_add(pd_sum(pd_mul(a, b), NULL, 0, 0), pd_sum(pd_mul(c, c), NULL, 0, 0)),
                  pd_sum(pd_exp(e), NULL, 0, 0));
}
static struct pd_tensor *f_norms(struct pd_tensor **in) /* x [4, 6, 8], w [8] */
{
    struct pd_tensor *a = pd_rms_norm(in[0], 1, in[1], 1e-5), *b = pd_layer_norm(in[0], 1, in[1], NULL, 1e-5);
    return pd_sum(pd_mul(pd_add(a, b), in[0]), NULL, 0, 0);
}
static struct pd_tensor *f_ce(struct pd_tensor **in) /* logits [8, 10], targets [8] */
{
    return pd_cross_entropy(in[0], in[1], -100, 0.0, PD_REDUCTION_MEAN);
}
static struct pd_tensor *f_embed(struct pd_tensor **in) /* ids [4, 6], table [10, 8] */
{
    struct pd_tensor *e = pd_embedding(in[0], in[1]);
    return pd_sum(pd_mul(e, pd_sin(e)), NULL, 0, 0);
}
static struct pd_tensor *f_attn(struct pd_tensor **in) /* q, k, v [2, 4, 6, 8] */
{
    struct pd_tensor *o = pd_sdpa(in[0], in[1], in[2], NULL, 1, 0);
    return pd_sum(pd_mul(o, o), NULL, 0, 0);
}

static const struct dcase cases[] = {
    {"pointwise", 2, {{8, 6}, {8, 6}}, {2, 2}, {0}, 0, f_pointwise},
    {"reduce", 1, {{8, 6}}, {2}, {0}, 0, f_reduce},
    {"mlp", 3, {{4, 3, 8}, {8, 12}, {12, 8}}, {3, 2, 2}, {0}, 0, f_mlp},
    {"softmax", 2, {{8, 6}, {8, 6}}, {2, 2}, {0}, 0, f_softmax},
    {"views", 1, {{4, 6, 8}}, {3}, {0}, 0, f_views},
    {"norms", 2, {{4, 6, 8}, {8}}, {3, 1}, {0}, 0, f_norms},
    {"cross_entropy", 2, {{8, 10}, {8}}, {2, 1}, {0, 1}, 10, f_ce},
    {"embedding", 2, {{4, 6}, {10, 8}}, {2, 2}, {1, 0}, 10, f_embed},
    {"sdpa", 3, {{2, 4, 6, 8}, {2, 4, 6, 8}, {2, 4, 6, 8}}, {4, 4, 4}, {0}, 0, f_attn},
};

/* Every input's placements drawn from: replicated, or sharded on one of
 * its dims, per mesh axis (seeded; every rank draws the same). */
static unsigned rng_state = 12345;
static unsigned rnd(void) { return rng_state = rng_state * 1103515245u + 12345u, (rng_state >> 16) & 0x7fff; }

static void random_placements(const struct dcase *c, struct pd_mesh *m, struct pd_placement pl[][PD_MAX_MESH_DIMS])
{
    for (int i = 0; i < c->n_in; i++)
        for (int a = 0; a < pd_mesh_ndim(m); a++) {
            int r = (int)(rnd() % (unsigned)(c->ndim[i] + 1));
            pl[i][a] = r == c->ndim[i] ? pd_replicate() : pd_shard(r);
            for (int b = 0; b < a; b++) /* one dim split by two axes: the later one inside */
                if (pl[i][b].kind == PD_SHARD && pl[i][a].kind == PD_SHARD && pl[i][b].dim == pl[i][a].dim)
                    pl[i][a].order = pl[i][b].order + 1;
        }
}

static const char *pl_str(const struct dcase *c, struct pd_mesh *m, struct pd_placement pl[][PD_MAX_MESH_DIMS], char *b)
{
    char *p = b;
    for (int i = 0; i < c->n_in; i++) {
        p += sprintf(p, "%s[", i ? " " : "");
        for (int a = 0; a < pd_mesh_ndim(m); a++)
            p += pl[i][a].kind == PD_SHARD ? sprintf(p, "%sS%d", a ? "," : "", pl[i][a].dim)
                                            : sprintf(p, "%s%s", a ? "," : "", pl[i][a].kind == PD_PARTIAL ? "P" : "R");
        p += sprintf(p, "]");
    }
    return b;
}

/* Bytes sent since before (every kind). */
static int64_t bytes_since(const struct pd_comm_stats *before)
{
    struct pd_comm_stats now;
    pd_comm_stats(&now);
    int64_t n = 0;
    for (int k = 0; k < PD_COMM_COUNT; k++) n += now.bytes[k] - before->bytes[k];
    return n;
}

/* y = x @ w on x [4, 6], w [6, 8] in placements pl (under autocast to ac when
 * ac >= 0), then whole: the bytes both moved. */
static int64_t matmul_bytes(struct pd_mesh *m, struct pd_placement pl[][PD_MAX_MESH_DIMS], int ac, struct pd_tensor **y)
{
    struct pd_tensor *x = pd_shard_tensor(randn((int64_t[]){4, 6}, 2, 1), m, pl[0]);
    struct pd_tensor *w = pd_shard_tensor(randn((int64_t[]){6, 8}, 2, 2), m, pl[1]);
    struct pd_comm_stats before;
    pd_comm_stats(&before);
    int tok = ac >= 0 ? pd_autocast_begin((enum pd_dtype)ac) : 0;
    *y = pd_matmul(x, w, 0, 0);
    if (ac >= 0) pd_autocast_end(tok);
    pd_dtensor_full(*y);
    return bytes_since(&before);
}

/* bf16 or f16 (dt) autocast on a distributed matmul (docs/distributed.md
 * "bf16 autocast", "f16 autocast and the gradient scaler"), x [4, 6] @ w
 * [6, 8] in every placement of R, S0, S1 per mesh axis, and Partial(sum)
 * too on a 1-D mesh: the product is dt, its piece too (the casts ran on the
 * pieces); without a Partial input, the matmul and gathering its result
 * move exactly half the bytes of the same program in f32 (the same
 * collectives, on 2-byte elements: nothing gathered to cast, a Partial
 * product reduced in dt; a Partial f32 input is summed in f32 before its
 * cast, as one process casts the whole value); it, and the f32 gradients in
 * the inputs' placements, equal one process's autocast within dt's
 * rounding (TOL_BF16, TOL_F16). */
static void autocast_matmul(struct pd_mesh *m, enum pd_dtype dt)
{
    int nd = pd_mesh_ndim(m), n_codes = 1, n_kinds = nd == 1 ? 4 : 3; /* Partial on 1-D meshes (time) */
    for (int a = 0; a < nd; a++) n_codes *= n_kinds * n_kinds;
    for (int code = 0; code < n_codes; code++) {
        struct pd_placement pl[2][PD_MAX_MESH_DIMS];
        int partial = 0;
        for (int a = 0, k = code; a < nd; a++)
            for (int i = 0; i < 2; i++, k /= n_kinds) {
                int kind = k % n_kinds;
                pl[i][a] = kind == 3 ? pd_partial(PD_RED_SUM) : kind == 2 ? pd_replicate() : pd_shard(kind);
                partial |= kind == 3;
                for (int b = 0; b < a; b++) /* one dim split by two axes: the later one inside */
                    if (pl[i][b].kind == PD_SHARD && pl[i][a].kind == PD_SHARD && pl[i][b].dim == pl[i][a].dim)
                        pl[i][a].order = pl[i][b].order + 1;
            }
        char label[128];
        pl_str(&mm_case, m, pl, label);
        int tok = pd_scope_begin();
        struct pd_tensor *y16, *y32;
        int64_t b16 = matmul_bytes(m, pl, (int)dt, &y16), b32 = matmul_bytes(m, pl, -1, &y32);
        CHECK(y16 && pd_tensor_dtype(y16) == dt && pd_tensor_dtype(pd_dtensor_local(y16)) == dt,
              "autocast matmul %s: not %s", label, pd_dtype_name(dt));
        CHECK(partial || b32 == 2 * b16, "autocast matmul %s: %lld bytes moved, f32 %lld", label, (long long)b16, (long long)b32);
        pd_scope_end(tok);
        autocast_dt = (int)dt;
        run_case(&mm_case, m, pl, label);
        autocast_dt = -1;
    }
}

/* Vocabulary parallelism (docs/distributed.md "How ops are distributed"):
 * a table split by rows gives a Partial lookup without gathering the
 * table, and logits split by classes give the loss without gathering the
 * logits: the forward's collectives carry per-row values only. */
static void vocab_parallel(struct pd_mesh *m, int axis)
{
    int tok = pd_scope_begin();
    int mdim = pd_mesh_ndim(m);
    struct pd_placement vs[PD_MAX_MESH_DIMS], rows[PD_MAX_MESH_DIMS];
    for (int a = 0; a < mdim; a++) vs[a] = rows[a] = pd_replicate();
    vs[axis] = pd_shard(0); /* the table's rows, the logits' classes below */
    if (mdim == 2) rows[1 - axis] = pd_shard(0), vs[1 - axis] = pd_replicate();
    const int64_t N = 12, C = 37, D = 8; /* 37 classes: uneven pieces */
    const struct dcase ce = {"ce", 2, {{N, C}, {N}}, {2, 1}, {0, 1}, (int)C, NULL};
    struct pd_tensor *ids = make_input(&ce, 1), *table = randn((int64_t[]){C, D}, 2, 3);
    /* embedding: a Partial(sum) result, the table never moved */
    struct pd_tensor *td = pd_shard_tensor(table, m, vs), *idd = pd_shard_tensor(ids, m, rows);
    pd_comm_stats_reset();
    struct pd_tensor *e = pd_embedding(idd, td);
    struct pd_comm_stats st;
    pd_comm_stats(&st);
    CHECK(e && pd_dtensor_placements(e)[axis].kind == PD_PARTIAL, "vocab-parallel embedding: not Partial");
    CHECK(st.bytes[PD_COMM_ALLGATHER] == 0 && st.bytes[PD_COMM_ALLREDUCE] == 0,
          "vocab-parallel embedding moved %lld bytes", (long long)(st.bytes[PD_COMM_ALLGATHER] + st.bytes[PD_COMM_ALLREDUCE]));
    CHECK(dist_diff(pd_dtensor_full(e), pd_embedding(ids, table)) == 0, "vocab-parallel embedding: values differ");
    /* cross entropy on class-split logits, every reduction */
    struct pd_placement cs[PD_MAX_MESH_DIMS];
    memcpy(cs, vs, sizeof cs);
    cs[axis] = pd_shard(1);
    if (mdim == 2) cs[1 - axis] = pd_shard(0);
    struct pd_tensor *logits = randn((int64_t[]){N, C}, 2, 5);
    for (int red = 0; red < 3; red++) {
        struct pd_tensor *ld = pd_shard_tensor(logits, m, cs), *idd2 = pd_shard_tensor(ids, m, rows);
        pd_requires_grad_(ld, 1);
        struct pd_tensor *lp = pd_detach(logits);
        pd_requires_grad_(lp, 1);
        pd_comm_stats_reset();
        struct pd_tensor *l2 = pd_cross_entropy(ld, idd2, 3, 0.0, (enum pd_reduction)red);
        struct pd_tensor *f2 = l2 ? pd_dtensor_full(l2) : NULL;
        pd_comm_stats(&st);
        struct pd_tensor *l1 = pd_cross_entropy(lp, ids, 3, 0.0, (enum pd_reduction)red);
        CHECK(f2 && dist_diff(f2, l1) <= 2e-6, "vocab-parallel cross entropy (reduction %d) differs by %.3g", red, dist_diff(f2, l1));
        /* per row: the max, the sum, the picked logit (and the loss gathered) */
        CHECK(st.bytes[PD_COMM_ALLGATHER] + st.bytes[PD_COMM_ALLREDUCE] <= 8 * N * (int64_t)sizeof(float),
              "vocab-parallel cross entropy (reduction %d) moved %lld bytes (the logits are %lld)", red,
              (long long)(st.bytes[PD_COMM_ALLGATHER] + st.bytes[PD_COMM_ALLREDUCE]), (long long)(N * C * 4));
        struct pd_tensor *w = pd_cast(randn(pd_tensor_shape(l1), pd_tensor_ndim(l1), 7), PD_F32);
        struct pd_tensor *s1 = pd_sum(pd_mul(l1, w), NULL, 0, 0), *s2 = pd_sum(pd_mul(l2, w), NULL, 0, 0);
        CHECK(pd_backward(s1, NULL, 0) == 0 && pd_backward(s2, NULL, 0) == 0, "vocab-parallel backward");
        CHECK(dist_diff(pd_dtensor_full(pd_tensor_grad(ld)), pd_tensor_grad(lp)) <= 2e-6,
              "vocab-parallel cross entropy (reduction %d): gradients differ", red);
    }
    pd_scope_end(tok);
}

/* The grouped-query sdpa rule allocates nothing (pd_fault_count counts
 * every allocation the library makes): it copied the placements into a
 * pdi_malloc'd block on every call. q [2, 4, 5, 8] split by heads, k and
 * v [2, 2, 5, 8]: at 2 ranks the heads stay split; at 4 they cannot (2
 * key heads), and q is replicated. */
static void gqa_rule_allocs(struct pd_mesh *m)
{
    int tok = pd_scope_begin();
    struct pd_tensor *in[3] = {pd_zeros((int64_t[]){2, 4, 5, 8}, 4, PD_F32), pd_zeros((int64_t[]){2, 2, 5, 8}, 4, PD_F32),
                               pd_zeros((int64_t[]){2, 2, 5, 8}, 4, PD_F32)};
    struct pdi_meta meta[PDI_SPMD_MAX_OUT];
    struct pdi_call g = {.op = PD_OP_sdpa, .n_in = 3, .n_out = 2, .in = in, .meta = meta};
    pdi_attrs_default(PD_OP_sdpa, &g.a);
    CHECK(pdi_ops[PD_OP_sdpa].infer(&g) == PD_OK, "sdpa: infer");
    struct pd_placement pl[3][PD_MAX_MESH_DIMS];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < pd_mesh_ndim(m); k++) pl[i][k] = i == 0 && k == 0 ? pd_shard(1) : pd_replicate();
    struct pdi_spmd s = {.mesh = m, .mdim = pd_mesh_ndim(m), .n_in = 3, .n_out = 2, .in = pl, .a = g.a};
    pd_fault_inject(INT64_MAX, 0);
    int rc = pdi_ops[PD_OP_sdpa].spmd(&g, &s);
    int64_t allocs = pd_fault_count();
    pd_fault_inject(0, 0);
    CHECK(rc == PD_OK && allocs == 0, "sdpa grouped-query rule: %lld allocations per call", (long long)allocs);
    int heads = world == 2; /* 2 key heads split evenly over 2 ranks, not over 4 */
    CHECK(pl[0][0].kind == (heads ? PD_SHARD : PD_REPLICATE) && pl[1][0].kind == pl[0][0].kind,
          "sdpa grouped-query rule: the heads split at 2 ranks only");
    pd_scope_end(tok);
}

int main(void)
{
    struct pd_mesh *line, *grid;
    dist_meshes(&line, &grid);
    CHECK(line != NULL, "mesh");
    int n_cases = (int)(sizeof cases / sizeof cases[0]);
    for (int ci = 0; ci < n_cases; ci++) {
        const struct dcase *c = &cases[ci];
        struct pd_placement pl[MAX_IN][PD_MAX_MESH_DIMS];
        char b[256];
        /* every input replicated, then sharded on each dim in turn (1-D) */
        for (int d = -1; d < 4; d++) {
            for (int i = 0; i < c->n_in; i++) pl[i][0] = d >= 0 && d < c->ndim[i] ? pd_shard(d) : pd_replicate();
            run_case(c, line, pl, pl_str(c, line, pl, b));
        }
        for (int t = 0; t < 6; t++) { /* random placements */
            random_placements(c, line, pl);
            run_case(c, line, pl, pl_str(c, line, pl, b));
            if (grid) {
                random_placements(c, grid, pl);
                run_case(c, grid, pl, pl_str(c, grid, pl, b));
            }
        }
    }
    gqa_rule_allocs(line);
    vocab_parallel(line, 0);
    if (grid) vocab_parallel(grid, 1);
    for (int k = 0; k < 2; k++) { /* bf16, then f16 */
        enum pd_dtype dt = k ? PD_F16 : PD_BF16;
        autocast_matmul(line, dt);
        if (grid) autocast_matmul(grid, dt);
        /* the MLP under autocast, sharded on each dim in turn, then random placements */
        const struct dcase *c = &cases[2];
        struct pd_placement pl[MAX_IN][PD_MAX_MESH_DIMS];
        char b[256];
        autocast_dt = (int)dt;
        for (int d = -1; d < 3; d++) {
            for (int i = 0; i < c->n_in; i++) pl[i][0] = d >= 0 && d < c->ndim[i] ? pd_shard(d) : pd_replicate();
            run_case(c, line, pl, pl_str(c, line, pl, b));
        }
        for (int t = 0; t < 4 && grid; t++) {
            random_placements(c, grid, pl);
            run_case(c, grid, pl, pl_str(c, grid, pl, b));
        }
        autocast_dt = -1;
    }
    if (rank == 0)
        printf("autocast: largest difference from one process %.3g under bf16 (tolerance %.3g), %.3g under f16 "
               "(tolerance %.3g)\n", worst_ac[0], TOL_BF16, worst_ac[1], TOL_F16);
    pd_mesh_release(line);
    pd_mesh_release(grid);
    int all = dist_check_total();
    if (rank == 0) printf("test_dist_spmd: %d checks on rank 0, %d failures over %d ranks\n", checks, all, world);
    return all != 0;
}
