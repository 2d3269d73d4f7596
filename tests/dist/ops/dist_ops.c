/* paddle.c — the op harness's distributed mode (issue 14; docs/distributed.md
 * "How ops are distributed"), run under mpirun with 2 and 4 ranks, and with
 * 3 on a few families (a number of ranks that is not a power of two: uneven
 * pieces everywhere, and Partial(avg) divides by 3).
 *
 * Every row of the op harness (tests/ops/rows_*.c, the same rows and inputs
 * as test_backend_ops) runs twice: on plain tensors, and on the same inputs
 * placed on a mesh with placements drawn per row (Replicate, Shard(d) per
 * mesh axis, uneven and empty pieces included; Partial(sum, avg, max) for
 * floating inputs; a 1-D mesh of every rank, and a 2 x 2 mesh at 4 ranks).
 * The output (gathered with pd_dtensor_full) and the gradient of every
 * floating input must equal the single-process ones: bit for bit for ops
 * that move values without arithmetic across elements (elementwise, views,
 * injective ops: forward), within the harness's tolerance for the others
 * (a sharded reduction adds in another order).
 *
 * Then the coverage check: every op of the op table has an SPMD rule of
 * its own or a generic rule of its kind, and ran through the distribute
 * stage at least once (counted by the stage, so ops run by backward count).
 * Creation and random ops, which have no distributed input, are checked
 * through the sharded constructors (pd_dtensor_constant, pd_dtensor_uniform and friends).
 *
 *   test_dist_ops [--family F[,F...]] [--op NAME] [--row SUBSTR] [--draws N] [--draw T] [--seed S] [-v]
 *
 * --draws N: placements drawn per row (default 1: about a minute at 4 ranks
 * on 2 cores); every rank draws the same. Every rank must make the same
 * calls in the same order (the collectives), so a row fails on all ranks
 * or on none; per-op results are printed by rank 0, a difference by every
 * rank that sees it. --draw T runs draw T alone (a failure's label names
 * it). A run not filtered by row, op or draw also runs the regression draws
 * (struct regression) of its families: draws that once failed.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "dist/dist_internal.h"
#include "ops/harness.h"


static int rank, world, verbose, draws = 1, only_draw = -1;
static uint64_t seed0 = 1;
static int n_fail_local;

struct opstat {
    int rows, runs, fails, exact, inexact, refused; /* inexact: passed within tolerance, not bit for bit */
    double worst;                          /* the largest relative difference seen */
};
static struct opstat stats[PD_OP_COUNT];
static int created[PD_OP_COUNT]; /* creation ops checked through the pd_dtensor_* constructors */

/* ---- placements ---------------------------------------------------------- */
static uint64_t rng;
static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33) % n;
}

/* Partial only where the input is floating (avg needs it) and not written
 * in place (an in-place write into a Partial tensor is refused). */
static int may_be_partial(const struct opt_in *s, enum pd_dtype dt, int written)
{
    return !written && ((s->kind == OPT_FLOAT && pd_dtype_is_float(dt)) ||
                        (s->kind == OPT_FIXED && pd_dtype_is_float(s->dtype)));
}

/* One placement per mesh axis for input s: R, S(d) (any dim, size 0 and 1
 * too: uneven and empty pieces), or Partial for floating inputs (one kind
 * per tensor: the axes of a tensor must agree). */
static void draw_placements(const struct opt_in *s, int partial_ok, int mdim, struct pd_placement *pl)
{
    enum pd_reduce_op pop = (enum pd_reduce_op)rnd(3); /* sum, avg, max */
    for (int a = 0; a < mdim; a++) {
        unsigned r = rnd(8);
        if (r < 2 || s->ndim == 0) {
            pl[a] = r == 0 && partial_ok && rnd(2) ? pd_partial(pop) : pd_replicate();
        } else if (r == 2 && partial_ok) {
            pl[a] = pd_partial(pop);
        } else {
            pl[a] = pd_shard((int)rnd((unsigned)s->ndim));
            for (int b = 0; b < a; b++) /* one dim split by two axes: the later one inside */
                if (pl[b].kind == PD_SHARD && pl[b].dim == pl[a].dim) pl[a].order = pl[b].order + 1;
        }
    }
}

static char *pl_str(const struct pd_placement *pl, int mdim, char *b)
{
    char *p = b;
    *p++ = '[';
    for (int a = 0; a < mdim; a++) {
        const char *sep = a ? "," : "";
        if (pl[a].kind == PD_SHARD) p += sprintf(p, "%sS%d", sep, pl[a].dim);
        else if (pl[a].kind == PD_PARTIAL) p += sprintf(p, "%sP%s", sep, (const char *[]){"sum", "avg", "max", "min"}[pl[a].op]);
        else p += sprintf(p, "%sR", sep);
    }
    strcpy(p, "]");
    return b;
}

/* ---- comparison ---------------------------------------------------------- */
static double tol_for(enum pd_dtype dt)
{
    switch (dt) {
    case PD_F64: return 1e-10;
    case PD_F32: return 2e-5;
    case PD_F16: return 4e-3;
    case PD_BF16: return 3e-2;
    default: return 0;
    }
}

/* 0: bit for bit, 1: within tolerance, 2: different (printed). *worst: the
 * largest |a - b| / (1 + |b|). */
static int compare(const char *what, const char *label, struct pd_tensor *a, struct pd_tensor *b, double tol,
                   double *worst)
{
    char sa[PDI_SHAPE_BUF], sb[PDI_SHAPE_BUF];
    if (!a || !b || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) ||
        a->dtype != b->dtype) {
        if (rank == 0)
            printf("FAIL %s %s: shape/dtype %s %s, single process %s %s\n", label, what,
                   a ? pdi_shape_str(a->shape, a->ndim, sa, sizeof sa) : "NULL", a ? pd_dtype_name(a->dtype) : "",
                   b ? pdi_shape_str(b->shape, b->ndim, sb, sizeof sb) : "NULL", b ? pd_dtype_name(b->dtype) : "");
        return 2;
    }
    int64_t n = pd_tensor_numel(a);
    double *x = malloc(sizeof *x * (size_t)(n + 1)), *y = malloc(sizeof *y * (size_t)(n + 1));
    pd_to_buffer(a, x, PD_F64);
    pd_to_buffer(b, y, PD_F64);
    int res = 0;
    for (int64_t i = 0; i < n && res < 2; i++) {
        if (isnan(x[i]) && isnan(y[i])) continue;
        if (x[i] == y[i] && signbit(x[i]) == signbit(y[i])) continue;
        double d = isinf(x[i]) || isinf(y[i]) || isnan(x[i]) || isnan(y[i]) ? INFINITY : fabs(x[i] - y[i]) / (1 + fabs(y[i]));
        if (d > *worst && isfinite(d)) *worst = d;
        res = d <= tol ? 1 : 2;
        if (res == 2) /* on every rank: the gathered values may differ between ranks */
            printf("FAIL %s %s (rank %d): element %lld is %.9g, single process %.9g (tol %.2g)\n", label, what, rank,
                   (long long)i, x[i], y[i], tol);
    }
    free(x);
    free(y);
    return res;
}

/* The whole value of a result: gathered when distributed. */
static struct pd_tensor *whole(struct pd_tensor *t)
{
    if (!t || !pd_dtensor_is_dist(t)) return t;
    struct pd_tensor *f = pd_dtensor_full(t);
    if (!f) {
        char b1[PDI_SHAPE_BUF];
        struct pd_tensor *l = pd_dtensor_local(t);
        printf("rank %d: gathering a result (piece %s): %s\n", rank, pdi_shape_str(l->shape, l->ndim, b1, sizeof b1), pd_last_error());
    }
    return f;
}

/* ---- one row, one draw ------------------------------------------------- */
/* Ops that only move values (views, injective ops) must be bit for bit.
 * Arithmetic may not be: a kernel's vector body and scalar tail can round
 * differently, and a piece puts elements in other lanes. index_add and
 * scatter_add are injective in the op table but add: split rows summed as
 * a Partial output (pdi_spmd_index) add duplicate targets in another order. */
static int has_kind_exact(enum pd_op op)
{
    if ((unsigned)op >= PD_OP_COUNT || op == PD_OP_index_add || op == PD_OP_scatter_add) return 0;
    enum pdi_kind k = pdi_ops[op].kind;
    return k == PDI_KIND_VIEW || k == PDI_KIND_INJECTIVE;
}

/* Every rank's ok, so that all ranks take the same branch (collectives
 * follow). */
static int agree(int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* A row that hangs (one rank in a collective the others skipped) ends the
 * run with its name instead of waiting for CTest's timeout. */
static char current[512];
static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_dist_ops: a row took over 120 s (a rank waits in a collective): ";
    if (write(2, msg, sizeof msg - 1) < 0 || write(2, current, strlen(current)) < 0 || write(2, "\n", 1) < 0) _exit(3);
    _exit(3);
}

/* Returns 0 pass bitwise, 1 pass within tolerance, 2 fail, 3 refused. */
static int run_draw(const struct opt_row *r, enum pd_dtype dt, uint64_t seed, struct pd_mesh *m,
                    struct pd_placement pl[][PD_MAX_MESH_DIMS], const char *label, double *worst)
{
    int tok = pd_scope_begin();
    struct pd_tensor *in1[OPT_MAX_IN], *in2[OPT_MAX_IN], *leaf1[OPT_MAX_IN], *leaf2[OPT_MAX_IN];
    int which[OPT_MAX_IN], n_g = 0, res = 0;
    int want_grad = !r->no_gradcheck;
    for (int k = 0; k < r->n_in; k++) {
        in1[k] = opt_make_input(&r->in[k], dt, seed, k);
        in2[k] = pd_shard_tensor(opt_make_input(&r->in[k], dt, seed, k), m, pl[k]);
        if (!in1[k] || !in2[k]) {
            if (rank == 0) printf("FAIL %s: input %d: %s\n", label, k, pd_last_error());
            pd_scope_end(tok);
            return 2;
        }
        if (want_grad && r->in[k].kind == OPT_FLOAT && !r->in[k].no_grad && pd_tensor_numel(in1[k]) > 0 &&
            pd_dtype_is_float(in1[k]->dtype)) {
            leaf1[n_g] = in1[k] = pd_detach(in1[k]);
            leaf2[n_g] = in2[k];
            pd_requires_grad_(in1[k], 1);
            pd_requires_grad_(in2[k], 1);
            which[n_g++] = k;
        }
    }
    struct pd_tensor *y1 = r->fn(in1);
    if (!y1) { /* the row fails on one process too: test_backend_ops reports it */
        pd_scope_end(tok);
        return 0;
    }
    pd_clear_error();
    struct pd_tensor *y2 = r->fn(in2);
    if (!agree(y2 != NULL)) {
        /* a documented refusal on every rank (an in-place write the
         * placements cannot take) is not a wrong result: counted apart */
        int refused = agree(!y2 && pd_last_status() == PD_ERR_UNSUPPORTED);
        if (rank == 0 || !refused)
            printf("%s %s (rank %d): %s\n", refused ? "REFUSED" : "FAIL", label, rank,
                   y2 ? "failed on another rank" : pd_last_error());
        pd_scope_end(tok);
        return refused ? 3 : 2;
    }
    double tol = tol_for(y1->dtype) * (r->tol > 0 ? r->tol : 1);
    int exact = has_kind_exact(r->op);
    int c = compare("forward", label, whole(y2), y1, tol, worst);
    if (c == 1 && exact) {
        if (rank == 0) printf("FAIL %s forward: not bit for bit (largest difference %.3g)\n", label, *worst);
        c = 2;
    }
    MPI_Allreduce(&c, &res, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD); /* one branch on every rank */
    if (res < 2 && n_g && y1->requires_grad && pd_dtype_is_float(y1->dtype) && pd_tensor_numel(y1) > 0) {
        struct pd_generator *gen = pd_generator_create(seed);
        struct pd_tensor *w = pd_uniform(y1->shape, y1->ndim, 0.5, 1.5, y1->dtype, gen);
        pd_generator_destroy(gen);
        struct pd_tensor *l1 = pd_sum(pd_mul(y1, w), NULL, 0, 0), *l2 = pd_sum(pd_mul(y2, w), NULL, 0, 0);
        struct pd_tensor *g1[OPT_MAX_IN] = {0}, *g2[OPT_MAX_IN] = {0};
        const struct pd_grad_options o = {.allow_unused = 1};
        int ok1 = l1 && pd_grad(&l1, 1, leaf1, n_g, g1, &o) == 0;
        if (!ok1) pd_clear_error(); /* no gradient on one process: nothing to compare */
        int ok2 = ok1 && l2 && pd_grad(&l2, 1, leaf2, n_g, g2, &o) == 0;
        if (!ok1) {
        } else if (!agree(ok2)) {
            printf("FAIL %s backward (rank %d): %s\n", label, rank, ok2 ? "failed on another rank" : pd_last_error());
            res = 2;
        } else {
            for (int q = 0; q < n_g && res < 2; q++) {
                char what[32];
                snprintf(what, sizeof what, "gradient of input %d", which[q]);
                if (!g1[q] && !g2[q]) continue;
                struct pd_tensor *a = g2[q] ? whole(g2[q]) : NULL, *b = g1[q];
                if (!b) b = pd_zeros(leaf1[q]->shape, leaf1[q]->ndim, leaf1[q]->dtype);
                if (!a) a = pd_zeros(leaf1[q]->shape, leaf1[q]->ndim, leaf1[q]->dtype);
                int cg = compare(what, label, a, b, 4 * tol, worst);
                if (cg > res) res = cg;
            }
        }
    }
    pd_scope_end(tok);
    return res;
}

/* Draws [t0, t1) of row r under --seed s0 (every draw of a row is drawn from
 * the row's name, s0 and t alone). */
static void run_draws(const struct opt_row *r, struct pd_mesh *line, struct pd_mesh *grid, uint64_t s0, int t0, int t1)
{
    uint64_t seed = opt_row_seed(r->name);
    unsigned mask = r->dtypes ? r->dtypes : OPT_DT_F;
    enum pd_dtype dt = PD_F32;
    if (!(mask & (1u << PD_F32)))
        for (int d = 0; d < PD_DTYPE_COUNT; d++)
            if (mask & (1u << d)) { dt = (enum pd_dtype)d; break; }
    struct opstat *st = (unsigned)r->op < PD_OP_COUNT ? &stats[r->op] : NULL;
    if (st) st->rows++;
    for (int t = t0; t < t1; t++) {
        rng = seed ^ (s0 * 0x9E3779B97F4A7C15ull) ^ (uint64_t)t * 0xBF58476D1CE4E5B9ull;
        struct pd_mesh *m = grid && rnd(2) ? grid : line;
        struct pd_placement pl[OPT_MAX_IN][PD_MAX_MESH_DIMS];
        char label[512], b[64];
        int n = snprintf(label, sizeof label, "%s [%s] (seed %llu draw %d) on %s:", r->name, pd_dtype_name(dt),
                         (unsigned long long)s0, t, m == grid ? "2x2" : "1-d");
        int upd = r->op == PD_OP_sgd_update || r->op == PD_OP_adam_update;
        for (int k = 0; k < r->n_in; k++) {
            int written = k == 0 && (unsigned)r->op < PD_OP_COUNT && (pdi_ops[r->op].flags & PDI_F_INPLACE);
            draw_placements(&r->in[k], may_be_partial(&r->in[k], dt, written), pd_mesh_ndim(m), pl[k]);
            /* optimizer state lives in its parameter's placements (written in place) */
            for (int q = 0; upd && q < k; q++)
                if (r->in[q].ndim == r->in[k].ndim && !memcmp(r->in[q].shape, r->in[k].shape, sizeof r->in[q].shape)) {
                    memcpy(pl[k], pl[q], sizeof pl[k]);
                    for (int a = 0; a < pd_mesh_ndim(m); a++)
                        if (pl[k][a].kind == PD_PARTIAL) pl[q][a] = pl[k][a] = pd_replicate();
                    break;
                }
            if (n < (int)sizeof label - 64) n += snprintf(label + n, sizeof label - (size_t)n, " %s", pl_str(pl[k], pd_mesh_ndim(m), b));
        }
        double worst = 0;
        pd_clear_error();
        snprintf(current, sizeof current, "%s", label);
        alarm(120);
        int res = run_draw(r, dt, seed, m, pl, label, &worst);
        alarm(0);
        pd_clear_error();
        if (res == 2) n_fail_local++;
        else if (verbose && rank == 0 && res < 3) printf("ok   %s%s\n", label, res ? " (within tolerance)" : "");
        if (st) {
            st->runs++;
            st->fails += res == 2;
            st->exact += res == 0;
            st->inexact += res == 1;
            st->refused += res == 3;
            if (worst > st->worst && isfinite(worst)) st->worst = worst;
        }
    }
}

static void run_row(const struct opt_row *r, struct pd_mesh *line, struct pd_mesh *grid)
{
    run_draws(r, line, grid, seed0, only_draw >= 0 ? only_draw : 0, only_draw >= 0 ? only_draw + 1 : draws);
}

/* Is name one of the comma-separated names of list? */
static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

/* Draws that failed once (found with more draws than the default run
 * makes), run by every unfiltered run: row, --seed, draw, ranks. */
static const struct regression {
    const char *row;
    uint64_t seed;
    int draw, world;
} regressions[] = {
    {"group_norm/2d", 1, 1, 4}, /* P(sum) and P(avg) on the two axes of a 2x2 mesh (mesh.c) */
    {"sdpa_backward/causal_gqa", 1, 3, 4}, /* heads split by dout, not q: 2 key heads over 4 ranks (a hang) */
    {"var/correction_ge_n", 1, 3, 3}, /* S / 0 on a rank whose piece is empty: NaN, not inf (reduce.c, rdec_var) */
};

/* Runs the regression draws of this number of ranks in the families
 * selected (families NULL: all). */
static int run_regressions(struct pd_mesh *line, struct pd_mesh *grid, const char *families)
{
    int n = 0;
    for (size_t q = 0; q < sizeof regressions / sizeof regressions[0]; q++) {
        const struct regression *g = &regressions[q];
        if (g->world != world) continue;
        for (int fi = 0; fi < opt_n_families; fi++) {
            if (families && !in_list(families, opt_families[fi].name)) continue;
            const struct opt_row *rows;
            int nr = opt_families[fi].get(&rows);
            for (int i = 0; i < nr; i++)
                if (!strcmp(rows[i].name, g->row)) run_draws(&rows[i], line, grid, g->seed, g->draw, g->draw + 1), n++;
        }
    }
    return n;
}

/* ---- creation: the sharded constructors ---------------------------------- */
static int check_creation(struct pd_mesh *m)
{
    int fails = 0, mdim = pd_mesh_ndim(m);
    int64_t shape[3] = {5, 3, 7};
    for (int t = 0; t < 6; t++) {
        int tok = pd_scope_begin();
        struct pd_placement pl[PD_MAX_MESH_DIMS];
        struct opt_in spec = {OPT_SHAPE(5, 3, 7), .kind = OPT_INDEX};
        rng = 77 + (uint64_t)t;
        draw_placements(&spec, 0, mdim, pl);
        char b[64], label[128];
        snprintf(label, sizeof label, "creation on %s %s", mdim == 2 ? "2x2" : "1-d", pl_str(pl, mdim, b));
        struct pd_generator *g1 = pd_generator_create(99), *g2 = pd_generator_create(99);
        struct pd_tensor *pairs[][2] = {
            {pd_full(shape, 3, 2.5, PD_F32), pd_dtensor_constant(shape, 3, 2.5, PD_F32, m, pl)},
            {pd_zeros(shape, 3, PD_I64), pd_dtensor_zeros(shape, 3, PD_I64, m, pl)},
            {pd_uniform(shape, 3, -1, 2, PD_F32, g1), pd_dtensor_uniform(shape, 3, -1, 2, PD_F32, g2, m, pl)},
            {pd_normal(shape, 3, 0.5, 2, PD_F64, g1), pd_dtensor_normal(shape, 3, 0.5, 2, PD_F64, g2, m, pl)},
            {pd_randint(shape, 3, -3, 9, PD_I32, g1), pd_dtensor_randint(shape, 3, -3, 9, PD_I32, g2, m, pl)},
        };
        pd_generator_destroy(g1);
        pd_generator_destroy(g2);
        /* arange, linspace (1-D) and eye (2-D), in placements of their own */
        struct pd_placement p1[PD_MAX_MESH_DIMS], p2[PD_MAX_MESH_DIMS];
        struct opt_in s1 = {OPT_SHAPE(7), .kind = OPT_INDEX}, s2 = {OPT_SHAPE(5, 6), .kind = OPT_INDEX};
        draw_placements(&s1, 0, mdim, p1);
        draw_placements(&s2, 0, mdim, p2);
        struct pd_tensor *seqs[][2] = {
            {pd_arange(-2, 5, 0.7, PD_F32), pd_dtensor_arange(-2, 5, 0.7, PD_F32, m, p1)},
            {pd_linspace(-1, 3, 7, PD_F64), pd_dtensor_linspace(-1, 3, 7, PD_F64, m, p1)},
            {pd_eye(5, 6, PD_F32), pd_dtensor_eye(5, 6, PD_F32, m, p2)},
        };
        static const enum pd_op seq_op[] = {PD_OP_arange, PD_OP_linspace, PD_OP_eye};
        for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
            double worst = 0;
            if (!seqs[i][1] && rank == 0) printf("FAIL %s: %s: %s\n", label, pdi_ops[seq_op[i]].name, pd_last_error());
            int bad = compare("value", label, whole(seqs[i][1]), seqs[i][0], 0, &worst) != 0;
            fails += bad;
            created[seq_op[i]] += !bad;
        }
        static const enum pd_op made[] = {PD_OP_full, PD_OP_full, PD_OP_uniform, PD_OP_normal, PD_OP_randint};
        for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
            double worst = 0;
            if (!pairs[i][1] && rank == 0) printf("FAIL %s: constructor %zu: %s\n", label, i, pd_last_error());
            int bad = compare("value", label, whole(pairs[i][1]), pairs[i][0], 0, &worst) != 0;
            fails += bad;
            created[made[i]] += !bad;
        }
        /* empty: only its placements and shape are defined */
        struct pd_tensor *e = pd_dtensor_empty(shape, 3, PD_F32, m, pl);
        const int64_t *es = e ? pd_dtensor_shape(e) : NULL;
        int bad = !es || memcmp(es, shape, sizeof shape) || pd_dtensor_placements(e)[0].kind != pl[0].kind;
        if (bad && rank == 0) printf("FAIL %s: pd_dtensor_empty: %s\n", label, pd_last_error());
        fails += bad;
        created[PD_OP_empty] += !bad;
        /* the reshard op (the stage reshards without it; pd_reshard records
         * it): a round trip with its gradient */
        struct pd_placement to[PD_MAX_MESH_DIMS];
        draw_placements(&spec, 0, mdim, to);
        struct pd_tensor *x0 = pd_randn(shape, 3, PD_F32, NULL), *x = pd_shard_tensor(x0, m, pl);
        pd_requires_grad_(x, 1);
        struct pd_tensor *y = pd_reshard(x, m, to), *gx = NULL;
        struct pd_tensor *l = pd_sum(pd_mul(y, y), NULL, 0, 0);
        bad = !l || pd_grad(&l, 1, &x, 1, &gx, NULL) != 0;
        double worst = 0;
        bad = bad || compare("reshard", label, whole(y), x0, 0, &worst) ||
              compare("reshard gradient", label, whole(gx), pd_scale(x0, 2), 0, &worst);
        if (bad && rank == 0) printf("FAIL %s: reshard: %s\n", label, pd_last_error());
        fails += bad;
        pd_scope_end(tok);
    }
    return fails;
}

/* ---- coverage ------------------------------------------------------------ */
/* A rule of its own, or a generic rule of its kind (pdi_spmd_by_kind has
 * one for elementwise, broadcast and reduce ops). */
static int has_rule(enum pd_op op)
{
    const struct pdi_opdef *d = &pdi_ops[op];
    if (d->spmd != PDI_SPMD_BY_KIND) return 1;
    return d->kind == PDI_KIND_ELEMENTWISE || d->kind == PDI_KIND_BROADCAST || d->kind == PDI_KIND_REDUCE;
}

static int coverage(const int64_t *stage_calls)
{
    int bad = 0;
    if (rank == 0)
        printf("\n%-22s %-8s %5s %5s %6s %5s %7s %5s %9s %10s\n", "op", "rule", "rows", "runs", "exact", "tol", "refused",
               "fail", "worst", "dist calls");
    for (int i = 0; i < PD_OP_COUNT; i++) {
        const struct opstat *s = &stats[i];
        const struct pdi_opdef *d = &pdi_ops[i];
        int rule = has_rule((enum pd_op)i), ran = stage_calls[i] > 0 || created[i] > 0;
        const char *rk = !rule ? "NONE" : d->spmd == PDI_SPMD_BY_KIND ? "by kind" : "own";
        if (rank == 0)
            printf("%-22s %-8s %5d %5d %6d %5d %7d %5d %9.2g %10lld%s\n", d->name, rk, s->rows, s->runs, s->exact,
                   s->inexact, s->refused, s->fails, s->worst, (long long)stage_calls[i],
                   !rule ? "  FAIL: no SPMD rule" : !ran ? "  FAIL: never ran distributed"
                   : created[i] ? "  (sharded constructor)" : "");
        bad += !rule || !ran;
    }
    return bad;
}

int main(int argc, char **argv)
{
    const char *only_family = NULL, *only_row = NULL, *only_op = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--family") && i + 1 < argc) only_family = argv[++i];
        else if (!strcmp(argv[i], "--row") && i + 1 < argc) only_row = argv[++i];
        else if (!strcmp(argv[i], "--op") && i + 1 < argc) only_op = argv[++i];
        else if (!strcmp(argv[i], "--draws") && i + 1 < argc) draws = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed0 = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--draw") && i + 1 < argc) only_draw = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-v")) verbose = 1;
        else {
            printf("usage: %s [--family F[,F...]] [--op NAME] [--row SUBSTR] [--draws N] [--draw T] [--seed S] [-v]\n", argv[0]);
            return !!strcmp(argv[i], "--help");
        }
    }
    signal(SIGALRM, on_alarm);
    rank = pd_dist_world_rank();
    world = pd_dist_world_size();
    struct pd_mesh *line = pd_mesh_create((int[]){world}, 1, (const char *const[]){"x"}, NULL);
    struct pd_mesh *grid = world == 4 ? pd_mesh_create((int[]){2, 2}, 2, (const char *const[]){"dp", "tp"}, NULL) : NULL;
    if (!line || (world == 4 && !grid)) {
        printf("test_dist_ops: mesh: %s\n", pd_last_error());
        return 1;
    }
    pdi_spmd_stats_reset();
    int n_rows = 0;
    for (int fi = 0; fi < opt_n_families; fi++) {
        const struct opt_row *rows;
        int n = opt_families[fi].get(&rows);
        for (int i = 0; i < n; i++) {
            const struct opt_row *r = &rows[i];
            if (only_family && !in_list(only_family, opt_families[fi].name)) continue;
            if (only_row && !strstr(r->name, only_row)) continue;
            if (only_op && pdi_op_lookup(only_op) != (int)r->op) continue;
            /* creation rows have no input to place (the constructors below);
             * the reshard row names no mesh (reshard runs under every row) */
            if (r->n_in == 0 || r->op == PD_OP_reshard) continue;
            n_rows++;
            run_row(r, line, grid);
        }
    }
    int filtered = only_family || only_row || only_op || only_draw >= 0;
    if (!only_row && !only_op && only_draw < 0) n_rows += run_regressions(line, grid, only_family);
    if (!filtered) {
        n_fail_local += check_creation(line);
        if (grid) n_fail_local += check_creation(grid);
    }
    int64_t calls[PD_OP_COUNT];
    pdi_spmd_stats(calls);
    int bad_cov = coverage(calls);
    if (!filtered && bad_cov) n_fail_local++;
    pd_mesh_release(line);
    pd_mesh_release(grid);
    int all = 0;
    MPI_Allreduce(&n_fail_local, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_dist_ops: %d rows x %d draws on %d ranks, %d failures (rank 0), %d ops without a rule or a "
               "distributed run%s\n",
               n_rows, draws, world, n_fail_local, bad_cov, filtered ? " (filtered: coverage not enforced)" : "");
    return all != 0;
}
