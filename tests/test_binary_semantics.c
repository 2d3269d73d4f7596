/* paddle.c — binary family: semantics the random op rows cannot pin down.
 * Values against hand-computed (PyTorch-checked) results: Python-style
 * remainder/floor_divide, defined integer division by zero and MIN / -1,
 * integer pow with negative exponents, NaN propagation of maximum/minimum,
 * dtype promotion (including the 0-d rule), logic on mixed dtypes, in-place
 * add_/mul_ aliasing out == in[0] on the fast paths, the gradient special
 * points (max/min ties split half and half, pow at a == 0 and a < 0, where),
 * second-order gradients of every differentiable op, and error messages
 * for bad calls. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pt.h"


/* Same checks on both backends: the CPU kernels and the reference. */
static void test_python_division(int backend)
{
    pdi_force_backend(backend);
    int scope_tok = pd_scope_begin();
    const double a[] = {7, -7, 7, -7, 0, 5.5, -5.5};
    const double b[] = {2, 2, -2, -2, 3, 2, 2};
    const double rem[] = {1, 1, -1, -1, 0, 1.5, 0.5};
    const double fdv[] = {3, -4, -4, 3, 0, 2, -3};
    for (int f = 0; f < 2; f++) {
        enum pd_dtype dt = f ? PD_F64 : PD_F32;
        struct pd_tensor *x = pt_vec(dt, 7, a), *y = pt_vec(dt, 7, b);
        struct pd_tensor *r = pd_remainder(x, y), *q = pd_floor_divide(x, y);
        for (int i = 0; i < 7; i++) {
            PT_NEAR(pt_at(r, i), rem[i], 0);
            PT_NEAR(pt_at(q, i), fdv[i], 0);
        }
    }
    const enum pd_dtype ints[] = {PD_I8, PD_I16, PD_I32, PD_I64};
    for (int k = 0; k < 4; k++) {
        struct pd_tensor *x = pt_vec(ints[k], 5, a), *y = pt_vec(ints[k], 5, b);
        struct pd_tensor *r = pd_remainder(x, y), *q = pd_floor_divide(x, y);
        PT_CHECK(r && pd_tensor_dtype(r) == ints[k]);
        for (int i = 0; i < 5; i++) {
            PT_NEAR(pt_at(r, i), rem[i], 0);
            PT_NEAR(pt_at(q, i), fdv[i], 0);
        }
        /* division by zero is defined as 0; true division gives inf/nan */
        const double z[] = {5, -5, 0}, zero[] = {0, 0, 0};
        struct pd_tensor *zx = pt_vec(ints[k], 3, z), *zy = pt_vec(ints[k], 3, zero);
        PT_CHECK(pt_at(pd_floor_divide(zx, zy), 0) == 0 && pt_at(pd_remainder(zx, zy), 1) == 0);
        struct pd_tensor *d = pd_div(zx, zy);
        PT_CHECK(d && pd_tensor_dtype(d) == PD_F32);
        PT_CHECK(pt_at(d, 0) == INFINITY && pt_at(d, 1) == -INFINITY && isnan(pt_at(d, 2)));
    }
    /* INT_MIN / -1 must not trap */
    int64_t mn = INT64_MIN, m1 = -1, one = 1;
    struct pd_tensor *x = pd_from_buffer(&mn, &one, 1, PD_I64), *y = pd_from_buffer(&m1, &one, 1, PD_I64);
    struct pd_tensor *q = pd_floor_divide(x, y), *r = pd_remainder(x, y);
    PT_CHECK(q && *(int64_t *)pd_tensor_data(q) == INT64_MIN);
    PT_CHECK(r && *(int64_t *)pd_tensor_data(r) == 0);
    int32_t mn32 = INT32_MIN, m32 = -1;
    q = pd_floor_divide(pd_from_buffer(&mn32, &one, 1, PD_I32), pd_from_buffer(&m32, &one, 1, PD_I32));
    PT_CHECK(q && *(int32_t *)pd_tensor_data(q) == INT32_MIN);
    /* float floor_divide by zero follows IEEE like PyTorch */
    const double fz[] = {1, -1, 0}, zz[] = {0, 0, 0};
    q = pd_floor_divide(pt_vec(PD_F32, 3, fz), pt_vec(PD_F32, 3, zz));
    PT_CHECK(pt_at(q, 0) == INFINITY && pt_at(q, 1) == -INFINITY && isnan(pt_at(q, 2)));
    pd_scope_end(scope_tok);
    pdi_force_backend(-1);
}

static void test_int_pow_and_wrap(int backend)
{
    pdi_force_backend(backend);
    int scope_tok = pd_scope_begin();
    const double base[] = {2, -2, 1, -1, -1, 0, 3, 2};
    const double ex[] = {10, 3, -5, -3, -4, -1, 0, -1};
    const double want[] = {1024, -8, 1, -1, 1, 0, 1, 0};
    struct pd_tensor *p = pd_pow(pt_vec(PD_I32, 8, base), pt_vec(PD_I32, 8, ex));
    PT_CHECK(p && pd_tensor_dtype(p) == PD_I32);
    for (int i = 0; i < 8; i++) PT_NEAR(pt_at(p, i), want[i], 0);
    /* i8 wraps: 100 + 100 = -56, 3^5 = 243 = -13, 16 * 16 = 0 */
    const double a[] = {100, 3, 16}, b[] = {100, 5, 16};
    PT_NEAR(pt_at(pd_add(pt_vec(PD_I8, 3, a), pt_vec(PD_I8, 3, b)), 0), -56, 0);
    PT_NEAR(pt_at(pd_pow(pt_vec(PD_I8, 3, a), pt_vec(PD_I8, 3, b)), 1), -13, 0);
    PT_NEAR(pt_at(pd_mul(pt_vec(PD_I8, 3, a), pt_vec(PD_I8, 3, b)), 2), 0, 0);
    /* bool arithmetic: add is or, mul is and */
    const double t[] = {1, 1, 0, 0}, u[] = {1, 0, 1, 0};
    struct pd_tensor *bo = pd_add(pt_vec(PD_BOOL, 4, t), pt_vec(PD_BOOL, 4, u));
    struct pd_tensor *ba = pd_mul(pt_vec(PD_BOOL, 4, t), pt_vec(PD_BOOL, 4, u));
    PT_CHECK(bo && ba && pd_tensor_dtype(bo) == PD_BOOL);
    for (int i = 0; i < 4; i++) {
        PT_NEAR(pt_at(bo, i), t[i] || u[i], 0);
        PT_NEAR(pt_at(ba, i), t[i] && u[i], 0);
    }
    pd_scope_end(scope_tok);
    pdi_force_backend(-1);
}

static void test_nan_and_logic(int backend)
{
    pdi_force_backend(backend);
    int scope_tok = pd_scope_begin();
    const double a[] = {NAN, 1, -0.0, 2}, b[] = {1, NAN, 0, NAN};
    for (int f = 0; f < 4; f++) {
        enum pd_dtype dt = (enum pd_dtype[]){PD_F32, PD_F64, PD_BF16, PD_F16}[f];
        struct pd_tensor *x = pt_vec(dt, 4, a), *y = pt_vec(dt, 4, b);
        struct pd_tensor *mx = pd_maximum(x, y), *mn = pd_minimum(x, y);
        PT_CHECK(isnan(pt_at(mx, 0)) && isnan(pt_at(mx, 1)) && isnan(pt_at(mn, 0)) && isnan(pt_at(mn, 1)) && isnan(pt_at(mx, 3)));
        struct pd_tensor *eq = pd_eq(x, y), *ne = pd_ne(x, y), *lt = pd_lt(x, y);
        PT_CHECK(pt_at(eq, 0) == 0 && pt_at(ne, 0) == 1 && pt_at(lt, 1) == 0 && pt_at(eq, 2) == 1); /* -0 == 0 */
        /* logic: NaN is true, -0.0 is false */
        struct pd_tensor *land = pd_logical_and(x, y), *lor = pd_logical_or(x, y), *lxor = pd_logical_xor(x, y);
        PT_CHECK(land && pd_tensor_dtype(land) == PD_BOOL);
        PT_CHECK(pt_at(land, 0) == 1 && pt_at(land, 2) == 0 && pt_at(lor, 2) == 0 && pt_at(lxor, 3) == 0 && pt_at(lxor, 0) == 0);
    }
    /* mixed dtypes go through bool: f64 1e-300 stays true against an f32 */
    const double tiny[] = {1e-300, 0}, ones[] = {1, 1};
    struct pd_tensor *l = pd_logical_and(pt_vec(PD_F64, 2, tiny), pt_vec(PD_I32, 2, ones));
    PT_CHECK(l && pt_at(l, 0) == 1 && pt_at(l, 1) == 0);
    pd_scope_end(scope_tok);
    pdi_force_backend(-1);
}

static void test_promotion(void)
{
    int scope_tok = pd_scope_begin();
    int64_t s[] = {2, 3};
    struct pd_tensor *f32 = pd_ones(s, 2, PD_F32), *bf = pd_ones(s, 2, PD_BF16), *i32 = pd_ones(s, 2, PD_I32);
    struct pd_tensor *u8 = pd_ones(s, 2, PD_U8), *i8 = pd_ones(s, 2, PD_I8), *bo = pd_ones(s, 2, PD_BOOL);
    PT_CHECK(pd_tensor_dtype(pd_add(f32, i32)) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_add(u8, i8)) == PD_I16);
    PT_CHECK(pd_tensor_dtype(pd_add(bo, u8)) == PD_U8);
    PT_CHECK(pd_tensor_dtype(pd_mul(bf, pd_ones(s, 2, PD_F16))) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_div(i32, i32)) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_atan2(i32, u8)) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_floor_divide(i32, i32)) == PD_I32);
    /* 0-d operands do not widen a dimensioned one of the same category */
    PT_CHECK(pd_tensor_dtype(pd_mul(f32, pd_scalar(2, PD_F64))) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_mul(bf, pd_scalar(2, PD_F32))) == PD_BF16);
    PT_CHECK(pd_tensor_dtype(pd_add(i8, pd_scalar(2, PD_I64))) == PD_I8);
    /* ... but a higher category still promotes */
    PT_CHECK(pd_tensor_dtype(pd_add(i32, pd_scalar(0.5, PD_F64))) == PD_F64);
    PT_CHECK(pd_tensor_dtype(pd_add(pd_scalar(1, PD_F64), pd_scalar(1, PD_F32))) == PD_F64);
    struct pd_tensor *w = pd_where(pd_gt(f32, pd_scalar(0, PD_F32)), i32, pd_scalar(0.5, PD_F64));
    PT_CHECK(w && pd_tensor_dtype(w) == PD_F64 && pt_at(pd_flatten(w, 0, -1), 0) == 1);
    w = pd_where(f32, i8, u8); /* cond cast to bool */
    PT_CHECK(w && pd_tensor_dtype(w) == PD_I16);
    PT_CHECK(pd_tensor_dtype(pd_eq(f32, i32)) == PD_BOOL);
    pd_scope_end(scope_tok);
}

/* pd_add_/pd_mul_ write into in[0] through the fast (contiguous, scalar,
 * row broadcast) and the half-precision block paths. */
static void test_inplace_alias(void)
{
    int scope_tok = pd_scope_begin();
    const enum pd_dtype dts[] = {PD_F32, PD_F64, PD_BF16, PD_F16, PD_I32};
    for (int k = 0; k < 5; k++) {
        enum pd_dtype dt = dts[k];
        int64_t s[] = {300, 257}, r[] = {257};
        struct pd_tensor *x = pd_arange(0, 300 * 257, 1, dt);
        x = pd_reshape(x, s, 2);
        struct pd_tensor *row = pd_arange(0, 257, 1, dt);
        struct pd_tensor *ref = pd_add(pd_mul(x, pd_scalar(3, dt)), pd_reshape(row, r, 1));
        PT_CHECK(pd_add_(pd_mul_(x, pd_scalar(3, dt)), row) == x);
        int64_t n = 300 * 257;
        double *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
        pd_to_buffer(x, a, PD_F64);
        pd_to_buffer(ref, b, PD_F64);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) bad += a[i] != b[i];
        PT_CHECK(bad == 0);
        /* x += x (b aliases out at the same index) */
        pd_to_buffer(pd_add(ref, ref), b, PD_F64);
        pd_add_(x, x);
        pd_to_buffer(x, a, PD_F64);
        bad = 0;
        for (int64_t i = 0; i < n; i++) bad += a[i] != b[i];
        PT_CHECK(bad == 0);
        free(a);
        free(b);
    }
    pd_scope_end(scope_tok);
}

static struct pd_tensor *leaf(const double *v, int n)
{
    struct pd_tensor *t = pt_vec(PD_F64, n, v);
    return pd_requires_grad_(t, 1);
}

static void grads2(struct pd_tensor *y, struct pd_tensor *a, struct pd_tensor *b, struct pd_tensor **g)
{
    struct pd_tensor *in[2] = {a, b}, *L = pd_sum(y, NULL, 0, 0);
    g[0] = g[1] = NULL;
    PT_CHECK(L && pd_grad(&L, 1, in, 2, g, &(struct pd_grad_options){.allow_unused = 1}) == 0);
}

static void test_grad_special_points(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *g[2];
    /* maximum/minimum: ties split half and half */
    const double av[] = {1, 2, 3}, bv[] = {1, 1, 5};
    struct pd_tensor *a = leaf(av, 3), *b = leaf(bv, 3);
    grads2(pd_maximum(a, b), a, b, g);
    PT_CHECK(pt_at(g[0], 0) == 0.5 && pt_at(g[1], 0) == 0.5 && pt_at(g[0], 1) == 1 && pt_at(g[1], 1) == 0 && pt_at(g[1], 2) == 1);
    grads2(pd_minimum(a, b), a, b, g);
    PT_CHECK(pt_at(g[0], 0) == 0.5 && pt_at(g[1], 0) == 0.5 && pt_at(g[0], 1) == 0 && pt_at(g[1], 1) == 1 && pt_at(g[0], 2) == 1);
    /* pow: a = 0 and a < 0 give a finite (zero) exponent gradient; b = 0 at
     * a = 0 gives a zero base gradient instead of 0 * inf */
    const double pa[] = {0, 0, -2, 2}, pb[] = {0, 2, 3, 3};
    a = leaf(pa, 4);
    b = leaf(pb, 4);
    grads2(pd_pow(a, b), a, b, g);
    PT_CHECK(pt_at(g[0], 0) == 0 && pt_at(g[0], 1) == 0 && pt_at(g[0], 2) == 12 && pt_at(g[0], 3) == 12);
    PT_CHECK(pt_at(g[1], 0) == 0 && pt_at(g[1], 1) == 0 && pt_at(g[1], 2) == 0);
    PT_NEAR(pt_at(g[1], 3), 8 * log(2.0), 1e-12);
    /* where: g goes to the chosen side; broadcast b is summed */
    const double cv[] = {1, 0, 1}, sv[] = {7};
    struct pd_tensor *c = pt_vec(PD_BOOL, 3, cv);
    a = leaf(av, 3);
    b = leaf(sv, 1);
    grads2(pd_where(c, a, b), a, b, g);
    PT_CHECK(pt_at(g[0], 0) == 1 && pt_at(g[0], 1) == 0 && pt_at(g[0], 2) == 1 && pt_at(g[1], 0) == 1);
    /* broadcasting reduces back: a [2, 3] * b [3] */
    int64_t s23[] = {2, 3};
    const double m6[] = {1, 2, 3, 4, 5, 6};
    a = pd_requires_grad_(pd_reshape(pt_vec(PD_F64, 6, m6), s23, 2), 1);
    b = leaf(bv, 3);
    grads2(pd_mul(a, b), a, b, g);
    PT_CHECK(g[1] && pd_tensor_ndim(g[1]) == 1 && pt_at(g[1], 0) == 5 && pt_at(g[1], 2) == 9);
    /* second order: d2/da2 of a^3 / b at (a, b) = (2, 4) is 6a/b = 3 */
    const double two[] = {2}, four[] = {4};
    a = leaf(two, 1);
    b = leaf(four, 1);
    struct pd_tensor *y = pd_div(pd_pow(a, pd_scalar(3, PD_F64)), b), *ga[1], *gaa[1];
    PT_CHECK(pd_grad(&y, 1, &a, 1, ga, &(struct pd_grad_options){.create_graph = 1, .retain_graph = 1}) == 0);
    PT_NEAR(pt_at(ga[0], 0), 3, 1e-12);
    PT_CHECK(pd_grad(ga, 1, &a, 1, gaa, NULL) == 0);
    PT_NEAR(pt_at(gaa[0], 0), 3, 1e-12);
    pd_scope_end(scope_tok);
}

/* ---- second order: d/dx_j (df/dx_i) by autograd (create_graph) against
 * central differences of the first-order autograd gradient. */
typedef struct pd_tensor *(*bin_fn)(struct pd_tensor *, struct pd_tensor *);

static double grad1(bin_fn f, double a, double b, int i)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *in[2] = {leaf(&a, 1), leaf(&b, 1)}, *y = f(in[0], in[1]), *g[2] = {NULL, NULL};
    double r = NAN;
    if (y && pd_grad(&y, 1, in, 2, g, &(struct pd_grad_options){.allow_unused = 1}) == 0) r = g[i] ? pt_at(g[i], 0) : 0;
    pd_scope_end(scope_tok);
    return r;
}

static void check_second_order(const char *name, bin_fn f, double a, double b)
{
    for (int i = 0; i < 2; i++) {
        int scope_tok = pd_scope_begin();
        struct pd_tensor *in[2] = {leaf(&a, 1), leaf(&b, 1)}, *y = f(in[0], in[1]), *g[2] = {NULL, NULL};
        struct pd_tensor *h[2] = {NULL, NULL};
        PT_CHECK(y && pd_grad(&y, 1, in, 2, g,
                              &(struct pd_grad_options){.create_graph = 1, .retain_graph = 1, .allow_unused = 1}) == 0);
        if (g[i] && pd_tensor_requires_grad(g[i]))
            PT_CHECK(pd_grad(&g[i], 1, in, 2, h, &(struct pd_grad_options){.allow_unused = 1}) == 0);
        for (int j = 0; j < 2; j++) {
            const double eps = 1e-6;
            double da = j == 0 ? eps : 0, db = j == 1 ? eps : 0;
            double num = (grad1(f, a + da, b + db, i) - grad1(f, a - da, b - db, i)) / (2 * eps);
            double ana = h[j] ? pt_at(h[j], 0) : 0;
            if (!(fabs(ana - num) <= 1e-5 * (1 + fabs(num))))
                printf("%s: d2/dx%d dx%d analytic %.10g numeric %.10g\n", name, i, j, ana, num);
            PT_NEAR(ana, num, 1e-5);
        }
        pd_scope_end(scope_tok);
    }
}

static struct pd_tensor *where_gt(struct pd_tensor *a, struct pd_tensor *b)
{
    return pd_where(pd_gt(a, b), pd_mul(a, b), pd_div(a, b));
}

static void test_second_order(void)
{
    check_second_order("add", pd_add, 0.7, -1.3);
    check_second_order("sub", pd_sub, 0.7, -1.3);
    check_second_order("mul", pd_mul, 0.7, -1.3);
    check_second_order("div", pd_div, 0.7, -1.3);
    check_second_order("pow", pd_pow, 1.7, -1.3);
    check_second_order("pow_small_base", pd_pow, 0.3, 2.5);
    check_second_order("maximum", pd_maximum, 0.7, -1.3);
    check_second_order("minimum", pd_minimum, 0.7, -1.3);
    check_second_order("remainder", pd_remainder, 2.7, -1.3);
    check_second_order("atan2", pd_atan2, 0.7, -1.3);
    check_second_order("where", where_gt, 0.7, -1.3);
}

static void test_errors(void)
{
    int scope_tok = pd_scope_begin();
    int64_t s1[] = {2, 3}, s2[] = {4};
    struct pd_tensor *x = pd_ones(s1, 2, PD_F32), *y = pd_ones(s2, 1, PD_F32);
    PT_CHECK(pd_add(x, y) == NULL && strstr(pd_last_error(), "broadcast"));
    PT_CHECK(pd_add(x, NULL) == NULL);
    /* direct calls with mixed dtypes are refused, not misread */
    PT_CHECK(pdi_call2(PD_OP_add, x, pd_ones(s1, 2, PD_F64), NULL) == NULL && strstr(pd_last_error(), "dtype"));
    PT_CHECK(pdi_call2(PD_OP_div, pd_ones(s1, 2, PD_I32), pd_ones(s1, 2, PD_I32), NULL) == NULL);
    PT_CHECK(pdi_call2(PD_OP_sub, pd_ones(s1, 2, PD_BOOL), pd_ones(s1, 2, PD_BOOL), NULL) == NULL);
    struct pd_tensor *in[3] = {x, x, x};
    PT_CHECK(pdi_calln(PD_OP_where, in, 3, NULL) == NULL && strstr(pd_last_error(), "bool"));
    PT_CHECK(pd_where(pd_ones(s2, 1, PD_BOOL), x, x) == NULL);
    pd_scope_end(scope_tok);
}

int main(void)
{
    for (int be = 0; be < 2; be++) {
        test_python_division(be);
        test_int_pow_and_wrap(be);
        test_nan_and_logic(be);
    }
    test_promotion();
    test_inplace_alias();
    test_grad_special_points();
    test_second_order();
    test_errors();
    PT_CHECK(pd_live_tensors() == 0); /* every op result was released by its scope */
    PT_DONE();
}
