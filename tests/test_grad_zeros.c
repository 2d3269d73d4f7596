/* paddle.c — higher-order gradients of prod and cumprod at zeros.
 *
 * The headers promise gradients to any order (include/pd/autograd.h,
 * create_graph). prod and cumprod are the ops whose natural first-order rule
 * (y / x) breaks at zeros; their rules are written without division
 * (src/ops/reduce.c). Checked here: the hand-computed case of the issue
 * (prod of [2, 0, 3]: d(dy/dx0)/dx = [0, 3, 0]) and central finite
 * differences of the recorded k-th gradient, for the second and third
 * derivatives, with one zero and two zeros in a reduced row. Both ops are
 * multilinear in x, so a central difference along one coordinate is exact up
 * to rounding and the tolerance is tight. The PyTorch values are in the
 * prod_grad / cumprod_grad fixtures (tests/test_torch_parity.c).
 */
#include "pt.h"

typedef struct pd_tensor *(*op_fn)(struct pd_tensor *);

static struct pd_tensor *f_prod_axis1(struct pd_tensor *x) { return pd_prod(x, (int[]){1}, 1, 0); }
static struct pd_tensor *f_prod_all(struct pd_tensor *x) { return pd_prod(x, NULL, 0, 0); }
static struct pd_tensor *f_prod_axes01_keep(struct pd_tensor *x) { return pd_prod(x, (int[]){0, 1}, 2, 1); }
static struct pd_tensor *f_cumprod1(struct pd_tensor *x) { return pd_cumprod(x, 1); }
static struct pd_tensor *f_cumprod0(struct pd_tensor *x) { return pd_cumprod(x, 0); }

/* A fixed weight of t's shape (order j picks another pattern). */
static struct pd_tensor *weight(struct pd_tensor *t, int j)
{
    int64_t n = pd_tensor_numel(t);
    double v[64];
    for (int64_t i = 0; i < n && i < 64; i++) v[i] = 0.25 + 0.5 * sin(1.7 * (double)i + 0.9 * j);
    return pd_reshape(pd_from_buffer(v, &n, 1, PD_F64), pd_tensor_shape(t), pd_tensor_ndim(t));
}

/* g_0 = f(x), g_{j+1} = d sum(g_j * w_j) / dx (recorded). */
static struct pd_tensor *chain(op_fn f, struct pd_tensor *x, int order)
{
    struct pd_tensor *y = f(x);
    for (int j = 0; j < order && y; j++) {
        struct pd_tensor *s = pd_sum(pd_mul(y, weight(y, j)), NULL, 0, 0), *g = NULL;
        if (!s || pd_grad(&s, 1, &x, 1, &g, &(struct pd_grad_options){.retain_graph = 1, .create_graph = 1})) return NULL;
        y = g;
    }
    return y;
}

/* sum(g_k(x) * w_k) at x given as doubles. */
static double objective(op_fn f, const double *xv, const int64_t *shape, int nd, int k)
{
    int tok = pd_scope_begin();
    struct pd_tensor *x = pd_from_buffer(xv, shape, nd, PD_F64);
    pd_requires_grad_(x, 1);
    struct pd_tensor *g = chain(f, x, k);
    double r = g ? pd_item(pd_sum(pd_mul(g, weight(g, k)), NULL, 0, 0)) : NAN;
    pd_scope_end(tok);
    return r;
}

/* The derivative of order k + 1 (contracted with the weights) against the
 * central difference of the order-k objective. */
static void check_fd(const char *what, op_fn f, const double *x0, const int64_t *shape, int nd, int k)
{
    int tok = pd_scope_begin();
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    struct pd_tensor *x = pd_from_buffer(x0, shape, nd, PD_F64);
    pd_requires_grad_(x, 1);
    struct pd_tensor *a = chain(f, x, k + 1);
    PT_CHECK(a != NULL);
    double got[64], xp[64], eps = 1e-3;
    if (a && !pd_to_buffer(a, got, PD_F64)) {
        for (int64_t i = 0; i < n; i++) {
            memcpy(xp, x0, sizeof(double) * (size_t)n);
            xp[i] = x0[i] + eps;
            double hi = objective(f, xp, shape, nd, k);
            xp[i] = x0[i] - eps;
            double lo = objective(f, xp, shape, nd, k);
            double want = (hi - lo) / (2 * eps);
            if (!(fabs(got[i] - want) <= 1e-7 * (1 + fabs(want)))) {
                printf("%s, derivative %d, element %lld: got %.12g, finite difference %.12g\n", what, k + 1,
                       (long long)i, got[i], want);
                pt_fails++;
            }
            pt_checks++;
        }
    }
    pd_scope_end(tok);
}

/* The case: prod of [2, 0, 3]; d(dy/dx0)/dx = [0, 3, 0]; and with
 * two zeros [2, 0, 0]: d(dy/dx1)/dx = [0, 0, 2]. */
static void test_hessian_rows(void)
{
    const double cases[2][3] = {{2, 0, 3}, {2, 0, 0}};
    const double want[2][3] = {{0, 3, 0}, {0, 0, 2}};
    const int row[2] = {0, 1};
    for (int c = 0; c < 2; c++) {
        int tok = pd_scope_begin();
        struct pd_tensor *x = pt_vec(PD_F64, 3, cases[c]), *g1 = NULL, *h = NULL;
        pd_requires_grad_(x, 1);
        struct pd_tensor *y = pd_prod(x, NULL, 0, 0);
        PT_CHECK(!pd_grad(&y, 1, &x, 1, &g1, &(struct pd_grad_options){.retain_graph = 1, .create_graph = 1}));
        struct pd_tensor *gi = pd_sum(pd_slice(g1, 0, row[c], row[c] + 1, 1), NULL, 0, 0);
        PT_CHECK(gi && !pd_grad(&gi, 1, &x, 1, &h, NULL));
        for (int i = 0; i < 3; i++) PT_NEAR(pt_at(h, i), want[c][i], 1e-15);
        pd_scope_end(tok);
    }
}

int main(void)
{
    test_hessian_rows();
    /* rows: one zero, two zeros, none, three zeros */
    const double x34[12] = {1.3, 0, -0.7, 1.1, 0, 0.9, 0, -1.2, 0.8, 1.4, -0.6, 1.05};
    const double x34b[12] = {0, 0, 0.7, 1.1, 1.2, 0.9, -0.5, 1.2, 0, 1.4, 0, 1.05};
    const int64_t s34[2] = {3, 4}, s43[2] = {4, 3}, s223[3] = {2, 2, 3};
    for (int k = 1; k <= 2; k++) { /* second and third derivatives */
        check_fd("prod axis 1", f_prod_axis1, x34, s34, 2, k);
        check_fd("prod axis 1 (b)", f_prod_axis1, x34b, s34, 2, k);
        check_fd("prod all", f_prod_all, (const double[]){2, 0, 3}, (const int64_t[]){3}, 1, k);
        check_fd("prod all two zeros", f_prod_all, (const double[]){2, 0, 0, 1.5}, (const int64_t[]){4}, 1, k);
        check_fd("prod axes 0,1 keepdim", f_prod_axes01_keep, x34b, s223, 3, k);
        check_fd("cumprod axis 1", f_cumprod1, x34, s34, 2, k);
        check_fd("cumprod axis 1 (b)", f_cumprod1, x34b, s34, 2, k);
        check_fd("cumprod axis 0", f_cumprod0, x34b, s43, 2, k);
    }
    PT_DONE();
}
