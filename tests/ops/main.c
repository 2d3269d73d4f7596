/* paddle.c — runner of the op test harness (see harness.h).
 *
 * For each row and dtype: default backend (CPU kernels where registered)
 * against the reference backend; then one f64 gradcheck per row against
 * central finite differences of L = sum(out * w) for a fixed random w.
 * Finally the coverage check: every op of the op table has a row.
 *
 *   test_backend_ops [--family F] [--op NAME] [--row SUBSTR] [-v] [--no-grad] [--list]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/harness.h"

#define OPT_FAMILY(name) __attribute__((weak)) int opt_rows_##name(const struct opt_row **rows) { *rows = NULL; return 0; }
#include "ops/rows.def"
#undef OPT_FAMILY


static int verbose, no_grad;
static int n_pass, n_fail, n_skip;
static unsigned char decomp_checked[PD_OP_COUNT];

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

/* Compare a (under test) with b (reference). */
static int compare(const char *what, const struct opt_row *r, enum pd_dtype dt, struct pd_tensor *a, struct pd_tensor *b)
{
    char sa[PDI_SHAPE_BUF], sb[PDI_SHAPE_BUF];
    if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) || a->dtype != b->dtype) {
        printf("FAIL %s [%s] %s: shape/dtype %s %s vs reference %s %s\n", r->name, pd_dtype_name(dt), what,
               pdi_shape_str(a->shape, a->ndim, sa, sizeof sa), pd_dtype_name(a->dtype),
               pdi_shape_str(b->shape, b->ndim, sb, sizeof sb), pd_dtype_name(b->dtype));
        return 1;
    }
    int64_t n = pd_tensor_numel(a);
    double *x = malloc(sizeof *x * (size_t)(n + 1)), *y = malloc(sizeof *y * (size_t)(n + 1));
    pd_to_buffer(a, x, PD_F64);
    pd_to_buffer(b, y, PD_F64);
    double tol = tol_for(a->dtype) * (r->tol > 0 ? r->tol : 1);
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i++) {
        if (isnan(x[i]) || isnan(y[i])) { bad = isnan(x[i]) != isnan(y[i]); }
        else if (isinf(x[i]) || isinf(y[i])) { bad = x[i] != y[i]; }
        else bad = fabs(x[i] - y[i]) > tol * (1 + fabs(y[i]));
        if (bad)
            printf("FAIL %s [%s] %s: element %lld is %.9g, reference %.9g (tol %.2g)\n", r->name, pd_dtype_name(dt),
                   what, (long long)i, x[i], y[i], tol);
    }
    free(x);
    free(y);
    return bad;
}

static int run_forward(const struct opt_row *r, enum pd_dtype dt, uint64_t seed)
{
    int fail = 0;
    int scope_tok = pd_scope_begin();
    struct pd_tensor *in[OPT_MAX_IN];
    for (int k = 0; k < r->n_in; k++) in[k] = opt_make_input(&r->in[k], dt, seed, k);
    pdi_force_backend(-1);
    struct pd_tensor *a = r->fn(in);
    if (!a) {
        printf("FAIL %s [%s]: %s\n", r->name, pd_dtype_name(dt), pd_last_error());
        fail = 1;
    } else {
        pdi_force_backend(PDI_BACKEND_REF);
        struct pd_tensor *b = r->fn(in);
        pdi_force_backend(-1);
        if (!b) {
            printf("FAIL %s [%s] reference: %s\n", r->name, pd_dtype_name(dt), pd_last_error());
            fail = 1;
        } else {
            fail = compare("cpu vs ref", r, dt, a, b);
        }
    }
    pdi_force_backend(-1);
    pd_scope_end(scope_tok);
    return fail;
}

/* L = sum(fn(in) * w), evaluated under no_grad. */
static double eval_loss(const struct opt_row *r, struct pd_tensor **in, struct pd_tensor *w)
{
    int scope_tok = pd_scope_begin();
    int prev = pd_no_grad_begin();
    struct pd_tensor *y = r->fn(in);
    double l = NAN;
    if (y) {
        struct pd_tensor *yc = y->dtype == PD_F64 ? y : pd_cast(y, PD_F64);
        l = pd_item(pd_sum(pd_mul(yc, w), NULL, 0, 0));
    }
    pd_grad_mode_end(prev);
    pd_scope_end(scope_tok);
    return l;
}

#define FD_MAX_ELEMS 400

static int run_gradcheck(const struct opt_row *r, uint64_t seed)
{
    int fail = 0;
    int scope_tok = pd_scope_begin();
    struct pd_tensor *in[OPT_MAX_IN], *gin[OPT_MAX_IN], *g[OPT_MAX_IN];
    int n_g = 0, which[OPT_MAX_IN];
    for (int k = 0; k < r->n_in; k++) {
        in[k] = opt_make_input(&r->in[k], PD_F64, seed, k);
        if (r->in[k].kind == OPT_FLOAT && !r->in[k].no_grad && pd_tensor_numel(in[k]) > 0) {
            /* a leaf sharing the input's storage (views stay views) */
            struct pd_tensor *leaf = pd_detach(in[k]);
            pd_requires_grad_(leaf, 1);
            in[k] = leaf;
            which[n_g] = k;
            gin[n_g++] = leaf;
        }
    }
    if (n_g == 0) { pd_scope_end(scope_tok); return 0; }
    struct pd_tensor *y = r->fn(in);
    if (!y) {
        printf("FAIL %s [grad]: forward: %s\n", r->name, pd_last_error());
        pd_scope_end(scope_tok);
        return 1;
    }
    if (!pd_dtype_is_float(y->dtype) || !y->requires_grad || pd_tensor_numel(y) == 0) {
        if (!y->requires_grad && pd_tensor_numel(y) > 0 && pd_dtype_is_float(y->dtype)) {
            printf("FAIL %s [grad]: output does not require grad\n", r->name);
            fail = 1;
        }
        pd_scope_end(scope_tok);
        return fail;
    }
    struct pd_generator *gen = pd_generator_create(seed);
    struct pd_tensor *w = pd_uniform(y->shape, y->ndim, 0.5, 1.5, PD_F64, gen);
    pd_generator_destroy(gen);
    struct pd_tensor *yc = y->dtype == PD_F64 ? y : pd_cast(y, PD_F64);
    struct pd_tensor *L = pd_sum(pd_mul(yc, w), NULL, 0, 0);
    if (!L || pd_grad(&L, 1, gin, n_g, g, &(struct pd_grad_options){.allow_unused = 1})) {
        printf("FAIL %s [grad]: backward: %s\n", r->name, pd_last_error());
        pd_scope_end(scope_tok);
        return 1;
    }
    double eps = r->fd_eps > 0 ? r->fd_eps : 1e-6;
    for (int q = 0; q < n_g && !fail; q++) {
        struct pd_tensor *x = gin[q];
        struct pd_kview xv;
        pdi_kview_of(x, &xv);
        int64_t n = pd_tensor_numel(x);
        int64_t step = n > FD_MAX_ELEMS ? n / FD_MAX_ELEMS + 1 : 1;
        double *ga = malloc(sizeof *ga * (size_t)n);
        if (g[q]) pd_to_buffer(g[q], ga, PD_F64);
        else memset(ga, 0, sizeof *ga * (size_t)n);
        for (int64_t i = 0; i < n && !fail; i += step) {
            double *p = (double *)pdi_kview_ptr(&xv, i), x0 = *p;
            *p = x0 + eps;
            double lp = eval_loss(r, in, w);
            *p = x0 - eps;
            double lm = eval_loss(r, in, w);
            *p = x0;
            double num = (lp - lm) / (2 * eps);
            double tol = 1e-5 * (r->tol > 0 ? r->tol : 1);
            if (!(fabs(num - ga[i]) <= tol + 1e-4 * fabs(num) * (r->tol > 0 ? r->tol : 1))) {
                printf("FAIL %s [grad]: input %d element %lld: analytic %.10g, numeric %.10g\n", r->name, which[q],
                       (long long)i, ga[i], num);
                fail = 1;
            }
        }
        free(ga);
    }
    pd_scope_end(scope_tok);
    return fail;
}

static void run_row(const struct opt_row *r)
{
    uint64_t seed = opt_row_seed(r->name);
    unsigned mask = r->dtypes ? r->dtypes : OPT_DT_F;
    for (int d = 0; d < PD_DTYPE_COUNT; d++) {
        if (!(mask & (1u << d))) continue;
        pd_clear_error();
        int f = run_forward(r, (enum pd_dtype)d, seed);
        if (f) n_fail++;
        else n_pass++;
        if (verbose && !f) printf("ok   %s [%s]\n", r->name, pd_dtype_name((enum pd_dtype)d));
    }
    pd_clear_error();
    int fd = opt_check_decomp(r, seed, !no_grad);
    if (fd >= 0) {
        decomp_checked[r->op] = 1;
        if (fd) n_fail++;
        else n_pass++;
        if (verbose && !fd) printf("ok   %s [decomposition]\n", r->name);
    }
    if (r->no_gradcheck || no_grad || !(mask & (1u << PD_F64))) return;
    pd_clear_error();
    int f = run_gradcheck(r, seed);
    if (f) n_fail++;
    else n_pass++;
    if (verbose && !f) printf("ok   %s [grad]\n", r->name);
}

int main(int argc, char **argv)
{
    const char *only_family = NULL, *only_row = NULL, *only_op = NULL;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--family") && i + 1 < argc) only_family = argv[++i];
        else if (!strcmp(argv[i], "--row") && i + 1 < argc) only_row = argv[++i];
        else if (!strcmp(argv[i], "--op") && i + 1 < argc) only_op = argv[++i];
        else if (!strcmp(argv[i], "-v")) verbose = 1;
        else if (!strcmp(argv[i], "--no-grad")) no_grad = 1;
        else if (!strcmp(argv[i], "--list")) list = 1;
        else {
            printf("usage: %s [--family F] [--op NAME] [--row SUBSTR] [-v] [--no-grad] [--list]\n", argv[0]);
            return !!strcmp(argv[i], "--help");
        }
    }
    unsigned char covered[PD_OP_COUNT] = {0};
    int n_rows = 0;
    for (int fi = 0; fi < opt_n_families; fi++) {
        const struct opt_row *rows;
        int n = opt_families[fi].get(&rows);
        for (int i = 0; i < n; i++) {
            const struct opt_row *r = &rows[i];
            if ((unsigned)r->op < PD_OP_COUNT) covered[r->op] = 1;
            if (only_family && strcmp(only_family, opt_families[fi].name)) continue;
            if (only_row && !strstr(r->name, only_row)) continue;
            if (only_op && pdi_op_lookup(only_op) != (int)r->op) continue;
            n_rows++;
            if (list) { printf("%s/%s\n", opt_families[fi].name, r->name); continue; }
            run_row(r);
        }
    }
    if (list) return 0;
    /* coverage: every op of the table has a row */
    int uncovered = 0;
    for (int i = 0; i < PD_OP_COUNT; i++) {
        if (!covered[i]) {
            printf("FAIL coverage: op '%s' has no row in the op test table\n", pdi_ops[i].name);
            uncovered++;
        }
    }
    if (uncovered) n_fail++;
    else n_pass++;
    if (!only_family && !only_row && !only_op) {
        int bad = opt_check_table(decomp_checked);
        if (bad) n_fail++;
        else n_pass++;
    }
    printf("test_backend_ops: %d rows, %d ops in the table, %d without a row\n", n_rows, PD_OP_COUNT, uncovered);
    printf("%d passed, %d failed, %d skipped\n", n_pass, n_fail, n_skip);
    return n_fail ? 1 : 0;
}
