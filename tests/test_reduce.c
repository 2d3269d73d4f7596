/* paddle.c — reduce family: values and semantics the op harness cannot see
 * (hand-computed results, PyTorch conventions for NaN/ties/empty sets,
 * error messages), determinism of the CPU kernels across thread counts,
 * accuracy of large f32 and bf16 sums, and gradients at the special points
 * (ties, zeros, the zero vector, a constant row) including a second order.
 */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/internal.h"
#include "pt.h"

static struct pd_tensor *vec(const double *v, int64_t n, enum pd_dtype dt)
{
    struct pd_tensor *t = pd_from_buffer(v, &n, 1, PD_F64);
    return dt == PD_F64 ? t : pd_cast(t, dt);
}

static struct pd_tensor *mat(const double *v, int64_t r, int64_t c, enum pd_dtype dt)
{
    int64_t s[2] = {r, c};
    return pd_reshape(vec(v, r * c, dt), s, 2);
}

static double at(const struct pd_tensor *t, int64_t i)
{
    struct pd_kview v;
    pdi_kview_of(t, &v);
    return pdi_load(pdi_kview_ptr(&v, i), v.dtype);
}

static void test_values(void)
{
    int scope_tok = pd_scope_begin();
    const double d[6] = {1, -2, 3, 4, 5, -6};
    struct pd_tensor *x = mat(d, 2, 3, PD_F32);
    struct pd_tensor *s = pd_sum(x, (int[]){-1}, 1, 0);
    PT_CHECK(s && pd_tensor_ndim(s) == 1 && at(s, 0) == 2 && at(s, 1) == 3);
    s = pd_sum(x, (int[]){0}, 1, 1);
    PT_CHECK(s && pd_tensor_ndim(s) == 2 && pd_tensor_dim(s, 0) == 1 && at(s, 2) == -3);
    /* integers and bool sum to int64 */
    s = pd_sum(mat(d, 2, 3, PD_I32), NULL, 0, 0);
    PT_CHECK(s && pd_tensor_dtype(s) == PD_I64 && at(s, 0) == 5);
    s = pd_sum(pd_gt(x, pd_scalar(0, PD_F32)), NULL, 0, 0);
    PT_CHECK(s && pd_tensor_dtype(s) == PD_I64 && at(s, 0) == 4);
    s = pd_prod(mat(d, 2, 3, PD_I8), NULL, 0, 0);
    PT_CHECK(s && pd_tensor_dtype(s) == PD_I64 && at(s, 0) == 720);
    /* int64 sums stay exact beyond 2^53 */
    const double big[2] = {9007199254740992.0, 1};
    int64_t bi[2] = {(int64_t)big[0], 1}, two = 2;
    s = pd_sum(pd_from_buffer(bi, &two, 1, PD_I64), NULL, 0, 0);
    PT_CHECK(s && *(int64_t *)pd_tensor_data(s) == 9007199254740993LL);
    /* mean of integers: cast to f32 (documented choice) */
    s = pd_mean(mat(d, 2, 3, PD_I32), NULL, 0, 0);
    PT_CHECK(s && pd_tensor_dtype(s) == PD_F32);
    PT_NEAR(at(s, 0), 5.0 / 6, 1e-6);
    /* var/std with correction */
    s = pd_var(x, NULL, 0, 1, 0);
    PT_NEAR(at(s, 0), 521.0 / 30, 1e-6); /* sum of squared deviations 521/6 */
    s = pd_std(x, NULL, 0, 0, 0);
    PT_NEAR(at(s, 0), sqrt(521.0 / 36), 1e-6);
    s = pd_var(x, (int[]){1}, 1, 3, 0); /* correction == N: divisor 0 -> inf */
    PT_CHECK(s && isinf(at(s, 0)));
    s = pd_var(pd_ones((int64_t[]){2, 1}, 2, PD_F32), (int[]){1}, 1, 1, 0); /* 0 / 0 */
    PT_CHECK(s && isnan(at(s, 0)));
    /* max/min with indices; argmax returns the first of ties */
    const double t[6] = {1, 7, 7, 2, 2, 0};
    struct pd_tensor *idx = NULL, *m = pd_max(mat(t, 2, 3, PD_F32), 1, 0, &idx);
    PT_CHECK(m && idx && at(m, 0) == 7 && at(idx, 0) == 1 && at(m, 1) == 2 && at(idx, 1) == 0);
    m = pd_min(mat(t, 2, 3, PD_I32), 0, 1, &idx);
    PT_CHECK(m && idx && pd_tensor_dtype(idx) == PD_I64 && at(m, 2) == 0 && at(idx, 2) == 1);
    s = pd_argmax(mat(t, 2, 3, PD_F64), PD_ALL_AXES, 0);
    PT_CHECK(s && pd_tensor_ndim(s) == 0 && at(s, 0) == 1);
    s = pd_argmin(mat(t, 2, 3, PD_BF16), -1, 1);
    PT_CHECK(s && pd_tensor_dim(s, 1) == 1 && at(s, 0) == 0 && at(s, 1) == 2);
    /* norm */
    const double n3[3] = {3, -4, 0};
    PT_NEAR(at(pd_norm(vec(n3, 3, PD_F32), 2, NULL, 0, 0), 0), 5, 1e-6);
    PT_NEAR(at(pd_norm(vec(n3, 3, PD_F32), 1, NULL, 0, 0), 0), 7, 1e-6);
    PT_NEAR(at(pd_norm(vec(n3, 3, PD_F32), INFINITY, NULL, 0, 0), 0), 4, 1e-6);
    /* any order, as torch.linalg.vector_norm */
    PT_NEAR(at(pd_norm(vec(n3, 3, PD_F32), 3, NULL, 0, 0), 0), cbrt(91), 1e-6);
    PT_NEAR(at(pd_norm(vec(n3, 3, PD_F64), 0, NULL, 0, 0), 0), 2, 0);
    PT_NEAR(at(pd_norm(vec(n3, 3, PD_F64), 0.5, NULL, 0, 0), 0), pow(sqrt(3) + 2, 2), 1e-14);
    PT_NEAR(at(pd_norm(vec(n3 + 0, 2, PD_F64), -INFINITY, NULL, 0, 0), 0), 3, 0);
    PT_NEAR(at(pd_norm(vec(n3, 2, PD_F64), -1, NULL, 0, 0), 0), 1 / (1.0 / 3 + 1.0 / 4), 1e-14);
    PT_CHECK(at(pd_norm(vec(n3, 3, PD_F64), -1, NULL, 0, 0), 0) == 0); /* a zero: 1 / inf */
    PT_CHECK(!pd_norm(vec(n3, 3, PD_F32), NAN, NULL, 0, 0) && strstr(pd_last_error(), "p nan"));
    PT_CHECK(!pd_norm(pd_zeros((int64_t[]){0}, 1, PD_F32), -INFINITY, NULL, 0, 0) &&
             strstr(pd_last_error(), "no identity"));
    /* all/any */
    PT_CHECK(at(pd_all(vec(n3, 3, PD_F32), NULL, 0, 0), 0) == 0);
    PT_CHECK(at(pd_any(vec(n3, 3, PD_I16), NULL, 0, 0), 0) == 1);
    /* scans */
    s = pd_cumsum(vec(n3, 3, PD_I32), 0);
    PT_CHECK(s && pd_tensor_dtype(s) == PD_I64 && at(s, 1) == -1 && at(s, 2) == -1);
    s = pd_cumprod(vec(n3, 3, PD_F32), -1);
    PT_CHECK(s && at(s, 1) == -12 && at(s, 2) == 0);
    /* 0-d input: axis 0 or -1 */
    s = pd_sum(pd_scalar(2.5, PD_F32), (int[]){-1}, 1, 0);
    PT_CHECK(s && pd_tensor_ndim(s) == 0 && at(s, 0) == 2.5);
    PT_CHECK(pd_cumsum(pd_scalar(2.5, PD_F32), -1) != NULL);
    pd_scope_end(scope_tok);
}

static void test_special(void)
{
    int scope_tok = pd_scope_begin();
    /* NaN propagates through amax/max; argmax points at the first NaN */
    const double v[5] = {1, NAN, 9, NAN, 2};
    struct pd_tensor *x = vec(v, 5, PD_F32), *idx = NULL;
    PT_CHECK(isnan(at(pd_amax(x, NULL, 0, 0), 0)));
    PT_CHECK(isnan(at(pd_amin(x, NULL, 0, 0), 0)));
    PT_CHECK(isnan(at(pd_max(x, 0, 0, &idx), 0)) && at(idx, 0) == 1);
    PT_CHECK(at(pd_argmin(x, 0, 0), 0) == 1);
    PT_CHECK(isnan(at(pd_norm(x, INFINITY, NULL, 0, 0), 0)));
    /* logsumexp: stable for large magnitudes; an all -inf set gives -inf */
    const double l[3] = {1000, 1000, -INFINITY};
    PT_NEAR(at(pd_logsumexp(vec(l, 3, PD_F32), NULL, 0, 0), 0), 1000 + log(2), 1e-6);
    const double ni[2] = {-INFINITY, -INFINITY};
    struct pd_tensor *r = pd_logsumexp(vec(ni, 2, PD_F32), NULL, 0, 0);
    PT_CHECK(r && isinf(at(r, 0)) && at(r, 0) < 0);
    /* empty sets */
    int64_t es[2] = {0, 3};
    struct pd_tensor *e = pd_zeros(es, 2, PD_F32);
    PT_CHECK(at(pd_sum(e, NULL, 0, 0), 0) == 0);
    PT_CHECK(at(pd_prod(e, NULL, 0, 0), 0) == 1);
    PT_CHECK(isnan(at(pd_mean(e, NULL, 0, 0), 0)));
    PT_CHECK(at(pd_all(e, NULL, 0, 0), 0) == 1 && at(pd_any(e, NULL, 0, 0), 0) == 0);
    PT_CHECK(pd_tensor_numel(pd_amax(e, (int[]){1}, 1, 0)) == 0); /* kept axis empty: fine */
    PT_CHECK(!pd_amax(e, (int[]){0}, 1, 0) && strstr(pd_last_error(), "empty"));
    PT_CHECK(!pd_argmax(e, PD_ALL_AXES, 0) && strstr(pd_last_error(), "argmax"));
    PT_CHECK(!pd_max(e, 0, 0, NULL));
    /* bad axes */
    PT_CHECK(!pd_sum(e, (int[]){2}, 1, 0) && strstr(pd_last_error(), "out of range"));
    PT_CHECK(!pd_sum(e, (int[]){1, -1}, 2, 0) && strstr(pd_last_error(), "repeated"));
    PT_CHECK(!pd_cumsum(e, 2));
    pd_scope_end(scope_tok);
}

/* Same bits with 1, 2 and 3 threads, and CPU within tolerance of REF. */
static void test_determinism(void)
{
#ifdef _OPENMP
    int scope_tok = pd_scope_begin();
    struct { int64_t shape[3]; int nd; int axes[2]; int na; } cases[] = {
        {{1 << 21}, 1, {0}, 0},         /* full: chunk-parallel */
        {{3, 300001}, 2, {1}, 1},       /* few long rows */
        {{100000, 3}, 2, {0}, 1},       /* column sums: row-block parallel */
        {{512, 1000}, 2, {0}, 1},       /* column sums: task parallel */
        {{40, 300, 50}, 3, {0, 2}, 2},  /* mixed */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct pd_generator *g = pd_generator_create(7 + c);
        struct pd_tensor *x = pd_uniform(cases[c].shape, cases[c].nd, -1, 3, PD_F32, g);
        pd_generator_destroy(g);
        enum pd_op ops[4] = {PD_OP_sum, PD_OP_var, PD_OP_logsumexp, PD_OP_amax};
        for (int k = 0; k < 4; k++) {
            struct pd_tensor *res[3];
            for (int nt = 1; nt <= 3; nt++) {
                pd_set_num_threads(nt);
                const int *ax = cases[c].axes;
                int na = cases[c].na;
                res[nt - 1] = ops[k] == PD_OP_sum ? pd_sum(x, ax, na, 0)
                              : ops[k] == PD_OP_var ? pd_var(x, ax, na, 1, 0)
                              : ops[k] == PD_OP_logsumexp ? pd_logsumexp(x, ax, na, 0)
                                                          : pd_amax(x, ax, na, 0);
            }
            pd_set_num_threads(0);
            int64_t n = pd_tensor_numel(res[0]);
            PT_CHECK(!memcmp(pd_tensor_data(res[0]), pd_tensor_data(res[1]), (size_t)n * 4));
            PT_CHECK(!memcmp(pd_tensor_data(res[0]), pd_tensor_data(res[2]), (size_t)n * 4));
            pdi_force_backend(PDI_BACKEND_REF);
            struct pd_tensor *ref = pd_cast(ops[k] == PD_OP_sum ? pd_sum(pd_cast(x, PD_F64), cases[c].axes, cases[c].na, 0)
                                                                : res[0], PD_F32);
            pdi_force_backend(-1);
            if (ops[k] == PD_OP_sum) {
                double worst = 0;
                for (int64_t i = 0; i < n; i++) {
                    double a = at(res[0], i), b = at(ref, i), e = fabs(a - b) / (1 + fabs(b));
                    if (e > worst) worst = e;
                }
                PT_CHECK(worst < 1e-5);
            }
        }
    }
    pd_scope_end(scope_tok);
#endif
}

/* CPU and REF agree bit for bit on values and indices with NaNs and ties
 * in long rows (vectorised chunk search) and along a leading axis (column
 * path). */
static void test_nan_paths(void)
{
    int scope_tok = pd_scope_begin();
    int64_t shape[2] = {67, 45};
    double *v = malloc(sizeof *v * 67 * 45);
    for (int i = 0; i < 67 * 45; i++) v[i] = (double)((i * 7919) % 23) - 11; /* many ties */
    v[5 * 45 + 40] = NAN;
    v[9 * 45 + 3] = NAN;
    v[60 * 45 + 3] = NAN;
    struct pd_tensor *x64 = pd_reshape(vec(v, 67 * 45, PD_F64), shape, 2);
    free(v);
    enum pd_dtype dts[3] = {PD_F32, PD_F64, PD_BF16};
    for (int d = 0; d < 3; d++) {
        struct pd_tensor *x = pd_cast(x64, dts[d]);
        for (int ax = -1; ax < 2; ax++) {
            struct pd_tensor *r[2][8];
            for (int be = 0; be < 2; be++) {
                pdi_force_backend(be ? PDI_BACKEND_REF : PDI_BACKEND_CPU);
                int axes[1] = {ax}, na = ax < 0 ? 0 : 1;
                struct pd_tensor *idx = NULL;
                r[be][0] = pd_amax(x, axes, na, 0);
                r[be][1] = pd_amin(x, axes, na, 0);
                r[be][2] = pd_argmax(x, ax < 0 ? PD_ALL_AXES : ax, 0);
                r[be][3] = pd_argmin(x, ax < 0 ? PD_ALL_AXES : ax, 0);
                r[be][4] = pd_logsumexp(x, axes, na, 0);
                r[be][5] = pd_norm(x, INFINITY, axes, na, 0);
                r[be][6] = pd_max(x, ax < 0 ? 0 : ax, 0, &idx);
                r[be][7] = idx;
            }
            pdi_force_backend(-1);
            for (int k = 0; k < 8; k++) {
                PT_CHECK(r[0][k] && r[1][k]);
                if (!r[0][k] || !r[1][k]) continue;
                int64_t n = pd_tensor_numel(r[0][k]);
                int same = pd_tensor_numel(r[1][k]) == n;
                for (int64_t i = 0; i < n && same; i++) {
                    double a = at(r[0][k], i), b = at(r[1][k], i);
                    same = (isnan(a) && isnan(b)) || a == b || (k == 4 && fabs(a - b) < 1e-2 * (1 + fabs(b)));
                }
                if (!same) printf("nan paths: dtype %d axis %d result %d differs\n", (int)dts[d], ax, k);
                PT_CHECK(same);
            }
        }
    }
    pd_scope_end(scope_tok);
}

static void test_accuracy(void)
{
    int scope_tok = pd_scope_begin();
    int64_t n = 1 << 20;
    struct pd_tensor *x = pd_uniform(&n, 1, 0, 1, PD_F32, NULL);
    double cpu = at(pd_sum(x, NULL, 0, 0), 0);
    pdi_force_backend(PDI_BACKEND_REF);
    double ref = at(pd_sum(x, NULL, 0, 0), 0);
    pdi_force_backend(-1);
    PT_NEAR(cpu, ref, 1e-6);
    /* bf16 accumulates in f32: 4096 ones is exact (a bf16 accumulator stops at 256) */
    int64_t m = 4096;
    PT_CHECK(at(pd_sum(pd_ones(&m, 1, PD_BF16), NULL, 0, 0), 0) == 4096);
    PT_CHECK(at(pd_sum(pd_ones(&m, 1, PD_F16), NULL, 0, 0), 0) == 4096);
    PT_CHECK(at(pd_cumsum(pd_ones(&m, 1, PD_BF16), 0), 4095) == 4096);
    pd_scope_end(scope_tok);
}

/* d/dx of sum(f(x) * w) for a leaf x. */
static struct pd_tensor *grad_of(struct pd_tensor *y, struct pd_tensor *x)
{
    struct pd_tensor *g = NULL;
    if (!y || pd_grad(&y, 1, &x, 1, &g, NULL)) return NULL;
    return g;
}

static void test_grads(void)
{
    int scope_tok = pd_scope_begin();
    /* amax splits among ties, max picks the index */
    const double t[3] = {1, 3, 3};
    struct pd_tensor *x = pd_requires_grad_(vec(t, 3, PD_F64), 1);
    struct pd_tensor *g = grad_of(pd_amax(x, NULL, 0, 0), x);
    PT_CHECK(g && at(g, 0) == 0 && at(g, 1) == 0.5 && at(g, 2) == 0.5);
    g = grad_of(pd_max(x, 0, 0, NULL), x);
    PT_CHECK(g && at(g, 0) == 0 && at(g, 1) == 1 && at(g, 2) == 0);
    g = grad_of(pd_norm(x, INFINITY, NULL, 0, 0), x);
    PT_CHECK(g && at(g, 1) == 0.5 && at(g, 2) == 0.5);
    /* prod with one and two zeros */
    const double z1[4] = {2, 0, 3, 5}, z2[4] = {2, 0, 0, 5};
    x = pd_requires_grad_(vec(z1, 4, PD_F64), 1);
    g = grad_of(pd_prod(x, NULL, 0, 0), x);
    PT_CHECK(g && at(g, 0) == 0 && at(g, 1) == 30 && at(g, 2) == 0 && at(g, 3) == 0);
    struct pd_tensor *x2 = pd_requires_grad_(vec(z2, 4, PD_F64), 1);
    g = grad_of(pd_prod(x2, NULL, 0, 0), x2);
    PT_CHECK(g && at(g, 0) == 0 && at(g, 1) == 0 && at(g, 2) == 0 && at(g, 3) == 0);
    /* cumprod with a zero: d(sum cumprod)/dx for x = [2, 0, 3, 5]:
     * y = [2, 0, 0, 0]; dx0 = 1 + 0.. = 1 (only y0 nonzero beyond), dx1 = 2 + 2*3 + 2*3*5 = 38, dx2 = dx3 = 0 */
    g = grad_of(pd_sum(pd_cumprod(x, 0), NULL, 0, 0), x);
    PT_CHECK(g && at(g, 0) == 1 && at(g, 1) == 38 && at(g, 2) == 0 && at(g, 3) == 0);
    /* norm p=2 and std at a constant/zero vector: 0, not NaN */
    x = pd_requires_grad_(pd_zeros((int64_t[]){3}, 1, PD_F64), 1);
    g = grad_of(pd_norm(x, 2, NULL, 0, 0), x);
    PT_CHECK(g && at(g, 0) == 0 && at(g, 2) == 0);
    g = grad_of(pd_std(x, NULL, 0, 1, 0), x);
    PT_CHECK(g && at(g, 0) == 0 && !isnan(at(g, 1)));
    /* second order: d2/dx2 of logsumexp(x) summed = diag(p) - p p^T, row sums 0 */
    const double l[3] = {0.5, -1, 2};
    x = pd_requires_grad_(vec(l, 3, PD_F64), 1);
    struct pd_tensor *y = pd_logsumexp(x, NULL, 0, 0), *g1 = NULL, *g2 = NULL;
    PT_CHECK(!pd_grad(&y, 1, &x, 1, &g1, &(struct pd_grad_options){.create_graph = 1, .retain_graph = 1}));
    struct pd_tensor *w = vec((const double[]){1, 0, 0}, 3, PD_F64);
    struct pd_tensor *s = pd_sum(pd_mul(g1, w), NULL, 0, 0);
    PT_CHECK(s && !pd_grad(&s, 1, &x, 1, &g2, NULL));
    double p0 = exp(0.5) / (exp(0.5) + exp(-1) + exp(2));
    PT_CHECK(g2 != NULL);
    if (g2) {
        PT_NEAR(at(g2, 0), p0 - p0 * p0, 1e-12);
        PT_NEAR(at(g2, 0) + at(g2, 1) + at(g2, 2), 0, 1e-12);
    }
    pd_scope_end(scope_tok);
}

int main(void)
{
    test_values();
    test_special();
    test_determinism();
    test_nan_paths();
    test_accuracy();
    test_grads();
    PT_CHECK(pd_live_tensors() == 0);
    PT_DONE();
}
