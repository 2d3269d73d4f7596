/* paddle.c — unary family: semantics the random op rows cannot pin down.
 * Values against hand-computed (PyTorch-checked) results, on both backends
 * (CPU kernels and the reference): round half to even, floor/ceil/trunc
 * signs, every kind of cast (saturation, NaN -> 0, int wrap, bf16/f16
 * rounding and overflow), integer ops that wrap, IEEE special values and
 * NaN propagation, the activations at known points, integer promotion,
 * error messages, gradients at special points (clip bounds, pow 0), higher
 * orders up to the 4th, cast VJP dtype, and the streaming-store path of
 * large in-place outputs (aligned and misaligned). */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pt.h"


/* exact equality that treats NaN == NaN and checks the sign of zero */
static int same(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

#define PT_SAME(a, b)                                                                                     \
    do {                                                                                                  \
        double s_a = (a), s_b = (b);                                                                      \
        pt_checks++;                                                                                      \
        if (!same(s_a, s_b)) {                                                                            \
            pt_fails++;                                                                                   \
            printf("%s:%d: %s = %.17g, expected %.17g (backend %d)\n", __FILE__, __LINE__, #a, s_a, s_b, be); \
        }                                                                                                 \
    } while (0)

static void test_rounding(int be)
{
    pdi_force_backend(be);
    int scope_tok = pd_scope_begin();
    const double x[] = {-2.5, -1.5, -0.5, -0.3, 0.5, 1.5, 2.5, 3.5, 0.7, -0.0};
    const double rnd[] = {-2, -2, -0.0, -0.0, 0, 2, 2, 4, 1, -0.0};
    const double flo[] = {-3, -2, -1, -1, 0, 1, 2, 3, 0, -0.0};
    const double cei[] = {-2, -1, -0.0, -0.0, 1, 2, 3, 4, 1, -0.0};
    const double tru[] = {-2, -1, -0.0, -0.0, 0, 1, 2, 3, 0, -0.0};
    const enum pd_dtype dts[] = {PD_F32, PD_F64, PD_BF16, PD_F16};
    for (int d = 0; d < 4; d++) {
        struct pd_tensor *t = pt_vec(dts[d], 10, x);
        struct pd_tensor *r = pd_round(t), *f = pd_floor(t), *c = pd_ceil(t), *u = pd_trunc(t);
        for (int i = 0; i < 10; i++) {
            if (dts[d] == PD_BF16 && i == 3) continue; /* -0.3 is not exact in bf16; signs still checked below */
            PT_SAME(pt_at(r, i), rnd[i]);
            PT_SAME(pt_at(f, i), flo[i]);
            PT_SAME(pt_at(c, i), cei[i]);
            PT_SAME(pt_at(u, i), tru[i]);
        }
    }
    /* integers: identity */
    const double xi[] = {-7, 0, 9};
    struct pd_tensor *ti = pt_vec(PD_I32, 3, xi);
    for (int i = 0; i < 3; i++) PT_SAME(pt_at(pd_round(ti), i), xi[i]);
    pd_scope_end(scope_tok);
    pdi_force_backend(-1);
}

static void test_cast(int be)
{
    pdi_force_backend(be);
    int scope_tok = pd_scope_begin();
    /* float -> int: truncate toward zero, saturate, NaN -> 0 */
    const double xf[] = {300, -300, 127.9, -128.9, NAN, INFINITY, -INFINITY, -0.9, 3.7};
    const double to_i8[] = {127, -128, 127, -128, 0, 127, -128, 0, 3};
    const double to_u8[] = {255, 0, 127, 0, 0, 255, 0, 0, 3};
    const double to_bool[] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const enum pd_dtype fdts[] = {PD_F32, PD_F64, PD_F16, PD_BF16};
    for (int d = 0; d < 4; d++) {
        struct pd_tensor *t = pt_vec(fdts[d], 9, xf);
        struct pd_tensor *a = pd_cast(t, PD_I8), *b = pd_cast(t, PD_U8), *c = pd_cast(t, PD_BOOL);
        for (int i = 0; i < 9; i++) {
            if (fdts[d] == PD_BF16 && (i == 2 || i == 3)) continue; /* 127.9 rounds to 128 in bf16 */
            PT_SAME(pt_at(a, i), to_i8[i]);
            PT_SAME(pt_at(b, i), to_u8[i]);
            PT_SAME(pt_at(c, i), to_bool[i]);
        }
    }
    const double big[] = {3e9, -3e9, 1e30, NAN};
    struct pd_tensor *tb = pt_vec(PD_F64, 4, big);
    struct pd_tensor *i32 = pd_cast(tb, PD_I32), *i64 = pd_cast(tb, PD_I64);
    PT_SAME(pt_at(i32, 0), 2147483647.0);
    PT_SAME(pt_at(i32, 1), -2147483648.0);
    PT_SAME(pt_at(i32, 3), 0);
    PT_SAME(pt_at(i64, 0), 3e9);
    PT_SAME(pt_at(i64, 3), 0);
    PT_CHECK(pt_at(i64, 2) > 9.2e18);
    /* zeros and NaN to bool */
    const double zb[] = {0, -0.0, 0.5, NAN};
    struct pd_tensor *bz = pd_cast(pt_vec(PD_F32, 4, zb), PD_BOOL);
    PT_SAME(pt_at(bz, 0), 0);
    PT_SAME(pt_at(bz, 1), 0);
    PT_SAME(pt_at(bz, 2), 1);
    PT_SAME(pt_at(bz, 3), 1);
    /* int -> int wraps like C and PyTorch; int -> bool is != 0 */
    const double xi[] = {300, -129, -1, 256, 0};
    struct pd_tensor *ti = pt_vec(PD_I32, 5, xi);
    const double w8[] = {44, 127, -1, 0, 0}, wu8[] = {44, 127, 255, 0, 0};
    struct pd_tensor *c8 = pd_cast(ti, PD_I8), *cu8 = pd_cast(ti, PD_U8), *cb = pd_cast(ti, PD_BOOL);
    for (int i = 0; i < 5; i++) {
        PT_SAME(pt_at(c8, i), w8[i]);
        PT_SAME(pt_at(cu8, i), wu8[i]);
        PT_SAME(pt_at(cb, i), xi[i] != 0);
    }
    /* int64 exactly (beyond 2^53) */
    int64_t s1 = 1, v = ((int64_t)1 << 53) + 1;
    struct pd_tensor *l = pd_from_buffer(&v, &s1, 1, PD_I64);
    int32_t r32 = 0;
    int64_t back = 0;
    pd_to_buffer(pd_cast(l, PD_I32), &r32, PD_I32);
    PT_CHECK(r32 == 1);
    pd_to_buffer(pd_cast(pd_cast(l, PD_I32), PD_I64), &back, PD_I64);
    PT_CHECK(back == 1);
    /* bf16 / f16 rounding: nearest even, overflow to inf */
    const double hb[] = {1.00390625, 1.01171875, 65519, 65520, -70000, 1e-6};
    struct pd_tensor *th = pt_vec(PD_F64, 6, hb), *tf = pt_vec(PD_F32, 6, hb);
    for (int k = 0; k < 2; k++) {
        struct pd_tensor *src = k ? tf : th;
        struct pd_tensor *bf = pd_cast(src, PD_BF16), *hf = pd_cast(src, PD_F16);
        PT_SAME(pt_at(bf, 0), 1.0);
        PT_SAME(pt_at(bf, 1), 1.015625);
        PT_SAME(pt_at(hf, 2), 65504);
        PT_SAME(pt_at(hf, 3), INFINITY);
        PT_SAME(pt_at(hf, 4), -INFINITY);
        PT_NEAR(pt_at(hf, 5), 17 * 0x1p-24, 0); /* subnormal in f16: 16.78 units of 2^-24 */
    }
    /* bool -> float, f16 <-> bf16 */
    const double bb[] = {0, 1};
    struct pd_tensor *tbool = pt_vec(PD_BOOL, 2, bb);
    PT_SAME(pt_at(pd_cast(tbool, PD_F32), 1), 1);
    PT_SAME(pt_at(pd_cast(pd_cast(pt_vec(PD_F16, 1, (double[]){0.333251953125}), PD_BF16), PD_F32), 0), 0.333984375);
    pd_scope_end(scope_tok);
    pdi_force_backend(-1);
}

static void test_int_ops(int be)
{
    pdi_force_backend(be);
    int scope_tok = pd_scope_begin();
    const double x8[] = {-128, 127, -3, 0};
    struct pd_tensor *t8 = pt_vec(PD_I8, 4, x8);
    PT_SAME(pt_at(pd_neg(t8), 0), -128);
    PT_SAME(pt_at(pd_neg(t8), 1), -127);
    PT_SAME(pt_at(pd_abs(t8), 0), -128);
    PT_SAME(pt_at(pd_abs(t8), 2), 3);
    PT_SAME(pt_at(pd_sign(t8), 2), -1);
    PT_SAME(pt_at(pd_sign(t8), 3), 0);
    PT_SAME(pt_at(pd_relu(t8), 2), 0);
    PT_SAME(pt_at(pd_relu(t8), 1), 127);
    const double x16[] = {300, -300};
    PT_SAME(pt_at(pd_square(pt_vec(PD_I16, 2, x16)), 0), 24464); /* 90000 mod 65536 */
    const double x32[] = {7, -7, 2147483647};
    struct pd_tensor *t32 = pt_vec(PD_I32, 3, x32);
    PT_SAME(pt_at(pd_scale(t32, 2.5), 0), 17);               /* through double, truncated */
    PT_SAME(pt_at(pd_scale(t32, 2.5), 1), -17);
    PT_SAME(pt_at(pd_scale(t32, 2.5), 2), 2147483647);       /* saturates */
    PT_SAME(pt_at(pd_scale(t32, 2.0), 2), -2);                /* integral: wraps */
    PT_SAME(pt_at(pd_add_scalar(t32, 1.0), 2), -2147483648.0);
    PT_SAME(pt_at(pd_add_scalar(t32, -0.5), 0), 6);           /* 6.5 truncated */
    const double xu[] = {250, 3};
    struct pd_tensor *tu = pt_vec(PD_U8, 2, xu);
    PT_SAME(pt_at(pd_add_scalar(tu, 10), 0), 4);
    PT_SAME(pt_at(pd_neg(tu), 1), 253);
    const double xc[] = {-5, 0, 9, 7};
    struct pd_tensor *tc = pt_vec(PD_I32, 4, xc), *cl = pd_clip(tc, -1.5, 7.2);
    PT_SAME(pt_at(cl, 0), -1);
    PT_SAME(pt_at(cl, 1), 0);
    PT_SAME(pt_at(cl, 2), 7);
    PT_SAME(pt_at(pd_clip(tc, 1.0, -1.0), 1), -1); /* lo > hi gives hi */
    PT_SAME(pt_at(pd_clip(pt_vec(PD_I8, 1, (double[]){5}), -1000, 1000), 0), 5);
    PT_SAME(pt_at(pd_clip(pt_vec(PD_I64, 1, (double[]){5}), -1e300, 1e300), 0), 5);
    PT_SAME(pt_at(pd_clip(pt_vec(PD_I16, 1, (double[]){5}), -INFINITY, 2), 0), 2);
    PT_SAME(pt_at(pd_scale(t32, 1e300), 0), 2147483647);
    PT_SAME(pt_at(pd_add_scalar(t32, -1e300), 0), -2147483648.0);
    /* bool inputs of numeric ops: no kernel, a clear error */
    PT_CHECK(pd_neg(pt_vec(PD_BOOL, 1, (double[]){1})) == NULL);
    PT_CHECK(strstr(pd_last_error(), "bool") != NULL);
    pd_scope_end(scope_tok);
    pdi_force_backend(-1);
}

static void test_specials(int be)
{
    pdi_force_backend(be);
    int scope_tok = pd_scope_begin();
    const double x[] = {NAN, INFINITY, -INFINITY, 0, -0.0};
    const enum pd_dtype dts[] = {PD_F32, PD_F64, PD_F16, PD_BF16};
    for (int d = 0; d < 4; d++) {
        struct pd_tensor *t = pt_vec(dts[d], 5, x);
        struct pd_tensor *e = pd_exp(t), *l = pd_log(t), *r = pd_relu(t), *c = pd_clip(t, -1, 1), *s = pd_sigmoid(t);
        struct pd_tensor *th = pd_tanh(t), *ef = pd_erf(t), *sg = pd_sign(t), *g = pd_gelu(t, 0), *sq = pd_sqrt(t);
        PT_SAME(pt_at(e, 0), NAN);
        PT_SAME(pt_at(e, 1), INFINITY);
        PT_SAME(pt_at(e, 2), 0);
        PT_SAME(pt_at(e, 3), 1);
        PT_SAME(pt_at(l, 0), NAN);
        PT_SAME(pt_at(l, 1), INFINITY);
        PT_SAME(pt_at(l, 2), NAN);
        PT_SAME(pt_at(l, 3), -INFINITY);
        PT_SAME(pt_at(r, 0), NAN);
        PT_SAME(pt_at(r, 2), 0);
        PT_SAME(pt_at(c, 0), NAN);
        PT_SAME(pt_at(c, 1), 1);
        PT_SAME(pt_at(c, 2), -1);
        PT_SAME(pt_at(s, 1), 1);
        PT_SAME(pt_at(s, 2), 0);
        PT_SAME(pt_at(th, 1), 1);
        PT_SAME(pt_at(th, 2), -1);
        PT_SAME(pt_at(th, 4), -0.0);
        PT_SAME(pt_at(ef, 1), 1);
        PT_SAME(pt_at(ef, 2), -1);
        PT_SAME(pt_at(sg, 0), NAN);
        PT_SAME(pt_at(sg, 1), 1);
        PT_SAME(pt_at(sg, 2), -1);
        PT_SAME(pt_at(g, 1), INFINITY);
        PT_SAME(pt_at(sq, 4), -0.0);
        PT_SAME(pt_at(pd_sin(t), 0), NAN);
        PT_SAME(pt_at(pd_sin(t), 1), NAN);
        PT_SAME(pt_at(pd_cos(t), 2), NAN);
        PT_SAME(pt_at(pd_sin(t), 4), -0.0);
        PT_SAME(pt_at(pd_cos(t), 4), 1.0);
        PT_SAME(pt_at(pd_relu(t), 4), 0.0);
        PT_SAME(pt_at(pd_pow_scalar(t, 0.5), 2), INFINITY);  /* C pow, not sqrt, at -inf */
        PT_SAME(pt_at(pd_pow_scalar(t, -0.5), 2), 0.0);
        PT_SAME(pt_at(pd_pow_scalar(t, -0.5), 4), INFINITY);
        PT_SAME(pt_at(pd_pow_scalar(t, 0.0), 0), 1.0);
        struct pd_tensor *n = pd_isnan(t), *i = pd_isinf(t), *f = pd_isfinite(t), *ln = pd_logical_not(t);
        const double en[] = {1, 0, 0, 0, 0}, ei[] = {0, 1, 1, 0, 0}, ef2[] = {0, 0, 0, 1, 1}, el[] = {0, 0, 0, 1, 1};
        for (int k = 0; k < 5; k++) {
            PT_SAME(pt_at(n, k), en[k]);
            PT_SAME(pt_at(i, k), ei[k]);
            PT_SAME(pt_at(f, k), ef2[k]);
            PT_SAME(pt_at(ln, k), el[k]);
        }
        PT_CHECK(n && pd_tensor_dtype(n) == PD_BOOL);
    }
    /* integer and bool inputs of the tests */
    const double xi[] = {0, 5};
    struct pd_tensor *ti = pt_vec(PD_I64, 2, xi), *tb = pt_vec(PD_BOOL, 2, xi);
    PT_SAME(pt_at(pd_isfinite(ti), 0), 1);
    PT_SAME(pt_at(pd_isnan(ti), 1), 0);
    PT_SAME(pt_at(pd_logical_not(ti), 0), 1);
    PT_SAME(pt_at(pd_logical_not(tb), 1), 0);
    pd_scope_end(scope_tok);
    pdi_force_backend(-1);
}

/* Known values (PyTorch, float64) at a few points, in f64 and f32. */
static void test_values(int be)
{
    pdi_force_backend(be);
    int scope_tok = pd_scope_begin();
    for (int k = 0; k < 2; k++) {
        enum pd_dtype dt = k ? PD_F32 : PD_F64;
        double tol = k ? 3e-7 : 1e-14;
        struct pd_tensor *one = pt_vec(dt, 1, (double[]){1.0}), *half = pt_vec(dt, 1, (double[]){0.5});
        struct pd_tensor *m1 = pt_vec(dt, 1, (double[]){-1.0}), *m2 = pt_vec(dt, 1, (double[]){-2.0});
        struct pd_tensor *two = pt_vec(dt, 1, (double[]){2.0}), *tiny = pt_vec(dt, 1, (double[]){1e-5});
        PT_NEAR(pt_at(pd_gelu(one, 0), 0), 0.8413447460685429, tol);
        PT_NEAR(pt_at(pd_gelu(one, 1), 0), 0.8411919906082768, tol);
        PT_NEAR(pt_at(pd_gelu(pt_vec(dt, 1, (double[]){-3.0}), 0), 0), -0.004049694094890, tol);
        PT_NEAR(pt_at(pd_silu(one), 0), 0.7310585786300049, tol);
        PT_NEAR(pt_at(pd_mish(one), 0), 0.8650983882673103, tol);
        PT_NEAR(pt_at(pd_softplus(one, 1, 20), 0), 1.3132616875182228, tol);
        PT_NEAR(pt_at(pd_softplus(two, 2, 1.5), 0), 2.0, tol);           /* linear above threshold */
        PT_NEAR(pt_at(pd_softplus(half, 2, 1.5), 0), 0.6566308437591114, tol);
        PT_NEAR(pt_at(pd_elu(m1, 1.5), 0), -0.9481808382428365, tol);
        PT_NEAR(pt_at(pd_leaky_relu(m2, 0.1), 0), -0.2, tol);
        PT_NEAR(pt_at(pd_erf(half), 0), 0.5204998778130465, tol);
        PT_NEAR(pt_at(pd_expm1(tiny), 0), 1.000005000016667e-05, tol);
        PT_NEAR(pt_at(pd_log1p(tiny), 0), 9.99995000033333e-06, tol);
        PT_NEAR(pt_at(pd_log2(pt_vec(dt, 1, (double[]){8.0})), 0), 3.0, 0);
        PT_NEAR(pt_at(pd_rsqrt(pt_vec(dt, 1, (double[]){4.0})), 0), 0.5, 0);
        PT_NEAR(pt_at(pd_pow_scalar(two, 2.5), 0), 5.656854249492381, tol);
        PT_NEAR(pt_at(pd_pow_scalar(m2, 3), 0), -8, 0);
        PT_NEAR(pt_at(pd_tan(half), 0), 0.5463024898437905, tol);
        PT_NEAR(pt_at(pd_reciprocal(two), 0), 0.5, 0);
        PT_NEAR(pt_at(pd_sigmoid(pt_vec(dt, 1, (double[]){-20.0})), 0), 2.0611536181902037e-09, tol);
    }
    pd_scope_end(scope_tok);
    pdi_force_backend(-1);
}

static void test_promotion_and_errors(void)
{
    int scope_tok = pd_scope_begin();
    const double xi[] = {1, 4};
    struct pd_tensor *ti = pt_vec(PD_I32, 2, xi), *tb = pt_vec(PD_BOOL, 2, xi);
    struct pd_tensor *e = pd_sqrt(ti);
    PT_CHECK(e && pd_tensor_dtype(e) == PD_F32);
    PT_NEAR(pt_at(e, 1), 2.0, 0);
    PT_CHECK(pd_tensor_dtype(pd_exp(tb)) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_gelu(ti, 0)) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_neg(ti)) == PD_I32);
    /* direct calls bypassing the wrapper are rejected with a message */
    PT_CHECK(pdi_call1(PD_OP_exp, ti, NULL) == NULL);
    PT_CHECK(strstr(pd_last_error(), "floating-point") != NULL);
    struct pd_tensor *tf = pt_vec(PD_F32, 2, xi);
    PT_CHECK(pd_gelu(tf, 2) == NULL);
    PT_CHECK(strstr(pd_last_error(), "approximate") != NULL);
    PT_CHECK(pd_softplus(tf, 0, 20) == NULL);
    PT_CHECK(strstr(pd_last_error(), "beta") != NULL);
    PT_CHECK(pd_clip(tf, NAN, 1) == NULL);
    struct pdi_attrs a = {.cast = {.dtype = 42}};
    PT_CHECK(pdi_call1(PD_OP_cast, tf, &a) == NULL);
    PT_CHECK(strstr(pd_last_error(), "dtype") != NULL);
    PT_CHECK(pd_exp(NULL) == NULL);
    PT_CHECK(pd_cast(NULL, PD_F32) == NULL);
    /* cast to the same dtype is the same tensor */
    PT_CHECK(pd_cast(tf, PD_F32) == tf);
    pd_scope_end(scope_tok);
}

/* d/dx f at x (f64, scalar) via pd_grad; order 1..4 by repeated create_graph. */
static double nth_grad(struct pd_tensor *(*f)(struct pd_tensor *), double x0, int order)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = pd_requires_grad_(pt_vec(PD_F64, 1, &x0), 1);
    struct pd_tensor *y = pd_sum(f(x), NULL, 0, 0);
    for (int k = 0; k < order && y; k++) {
        struct pd_tensor *g = NULL;
        if (pd_grad(&y, 1, &x, 1, &g, &(struct pd_grad_options){.create_graph = 1, .retain_graph = 1})) {
            y = NULL;
            break;
        }
        y = pd_sum(g, NULL, 0, 0);
    }
    double r = y ? pd_item(y) : NAN;
    pd_scope_end(scope_tok);
    return r;
}

static struct pd_tensor *g_exp(struct pd_tensor *x) { return pd_exp(x); }
static struct pd_tensor *g_sin(struct pd_tensor *x) { return pd_sin(x); }
static struct pd_tensor *g_tanh(struct pd_tensor *x) { return pd_tanh(x); }
static struct pd_tensor *g_sigmoid(struct pd_tensor *x) { return pd_sigmoid(x); }
static struct pd_tensor *g_gelu(struct pd_tensor *x) { return pd_gelu(x, 0); }
static struct pd_tensor *g_gelu_t(struct pd_tensor *x) { return pd_gelu(x, 1); }
static struct pd_tensor *g_log(struct pd_tensor *x) { return pd_log(x); }
static struct pd_tensor *g_sqrt(struct pd_tensor *x) { return pd_sqrt(x); }
static struct pd_tensor *g_rsqrt(struct pd_tensor *x) { return pd_rsqrt(x); }
static struct pd_tensor *g_erf(struct pd_tensor *x) { return pd_erf(x); }
static struct pd_tensor *g_silu(struct pd_tensor *x) { return pd_silu(x); }
static struct pd_tensor *g_mish(struct pd_tensor *x) { return pd_mish(x); }
static struct pd_tensor *g_softplus(struct pd_tensor *x) { return pd_softplus(x, 2.0, 20.0); }
static struct pd_tensor *g_elu(struct pd_tensor *x) { return pd_elu(x, 1.5); }
static struct pd_tensor *g_reciprocal(struct pd_tensor *x) { return pd_reciprocal(x); }
static struct pd_tensor *g_pow(struct pd_tensor *x) { return pd_pow_scalar(x, 2.5); }

/* Central difference of the (order-1)-th analytic derivative. */
static double fd_of(struct pd_tensor *(*f)(struct pd_tensor *), double x0, int order)
{
    const double h = 1e-5;
    return (nth_grad(f, x0 + h, order - 1) - nth_grad(f, x0 - h, order - 1)) / (2 * h);
}

static void test_grads(void)
{
    /* closed forms */
    PT_NEAR(nth_grad(g_exp, 0.3, 4), exp(0.3), 1e-12);
    PT_NEAR(nth_grad(g_sin, 0.3, 4), sin(0.3), 1e-12);
    PT_NEAR(nth_grad(g_sin, 0.3, 3), -cos(0.3), 1e-12);
    double t = tanh(0.7);
    PT_NEAR(nth_grad(g_tanh, 0.7, 2), -2 * t * (1 - t * t), 1e-12);
    PT_NEAR(nth_grad(g_log, 1.7, 3), 2 / (1.7 * 1.7 * 1.7), 1e-12);
    PT_NEAR(nth_grad(g_gelu, 0.3, 1), 0.5 * (1 + erf(0.3 / sqrt(2))) + 0.3 * exp(-0.045) / sqrt(2 * M_PI), 1e-12);
    PT_NEAR(nth_grad(g_softplus, 0.4, 1), 1 / (1 + exp(-0.8)), 1e-12);
    PT_NEAR(nth_grad(g_softplus, 11.0, 1), 1.0, 0);  /* linear region */
    PT_NEAR(nth_grad(g_elu, -0.5, 1), 1.5 * exp(-0.5), 1e-12);
    PT_NEAR(nth_grad(g_elu, 50.0, 2), 0.0, 0);       /* no overflow in the masked exp */
    /* higher orders against finite differences of the order below */
    struct pd_tensor *(*fs[])(struct pd_tensor *) = {g_tanh, g_sigmoid, g_gelu, g_gelu_t, g_sqrt, g_rsqrt, g_erf,
                                                      g_silu, g_mish, g_softplus, g_elu, g_reciprocal, g_pow};
    const char *names[] = {"tanh", "sigmoid", "gelu", "gelu_tanh", "sqrt", "rsqrt", "erf",
                           "silu", "mish", "softplus", "elu", "reciprocal", "pow"};
    for (unsigned i = 0; i < sizeof fs / sizeof fs[0]; i++) {
        for (int order = 1; order <= 3; order++) {
            double x0 = i == 10 ? -0.6 : 0.8;
            double a = nth_grad(fs[i], x0, order), n = fd_of(fs[i], x0, order);
            pt_checks++;
            if (!(fabs(a - n) <= 1e-5 * (1 + fabs(n)))) {
                pt_fails++;
                printf("grad %s order %d at %g: analytic %.10g, numeric %.10g (%s)\n", names[i], order, x0, a, n,
                       pd_last_error());
            }
        }
    }
    /* clip: gradient 1 on the closed interval, 0 outside; pow 0: zero */
    int scope_tok = pd_scope_begin();
    const double xc[] = {-0.5, 0.8, 1.0, 0.0, -2.0};
    struct pd_tensor *x = pd_requires_grad_(pt_vec(PD_F64, 5, xc), 1), *g = NULL;
    struct pd_tensor *y = pd_sum(pd_clip(x, -0.5, 0.8), NULL, 0, 0);
    PT_CHECK(pd_grad(&y, 1, &x, 1, &g, NULL) == 0);
    const double eg[] = {1, 1, 0, 1, 0};
    for (int i = 0; i < 5; i++) PT_NEAR(pt_at(g, i), eg[i], 0);
    y = pd_sum(pd_pow_scalar(x, 0.0), NULL, 0, 0);
    PT_CHECK(pd_grad(&y, 1, &x, 1, &g, NULL) == 0);
    for (int i = 0; i < 5; i++) PT_NEAR(pt_at(g, i), 0, 0);
    /* relu, abs, leaky_relu */
    y = pd_sum(pd_add(pd_relu(x), pd_add(pd_abs(x), pd_leaky_relu(x, 0.1))), NULL, 0, 0);
    PT_CHECK(pd_grad(&y, 1, &x, 1, &g, NULL) == 0);
    PT_NEAR(pt_at(g, 1), 1 + 1 + 1, 0);
    PT_NEAR(pt_at(g, 4), 0 - 1 + 0.1, 1e-15);
    /* cast: the gradient comes back in the input's dtype */
    struct pd_tensor *y32 = pd_sum(pd_scale(pd_cast(x, PD_F32), 3.0), NULL, 0, 0);
    PT_CHECK(pd_grad(&y32, 1, &x, 1, &g, NULL) == 0);
    PT_CHECK(g && pd_tensor_dtype(g) == PD_F64);
    PT_NEAR(pt_at(g, 2), 3.0, 0);
    /* non-differentiable ops do not record */
    PT_CHECK(!pd_tensor_requires_grad(pd_round(x)));
    PT_CHECK(!pd_tensor_requires_grad(pd_sign(x)));
    PT_CHECK(pd_tensor_requires_grad(pd_cast(x, PD_BF16)));
    pd_scope_end(scope_tok);
}

/* Outputs over 16 MB (they once took a non-temporal store path, whose
 * misaligned head the in-place view with a 4-byte offset exercised): large
 * and misaligned runs must still be exact. */
static void test_streaming(void)
{
    int scope_tok = pd_scope_begin();
    int64_t n = (int64_t)5 << 20; /* 20 MB of f32 */
    struct pd_tensor *x = pd_arange(0, (double)n, 1, PD_F32);
    struct pd_tensor *y = pd_scale(x, 0.5), *r = pd_relu(pd_add_scalar(x, -100));
    const float *py = pd_tensor_data(y), *pr = pd_tensor_data(r);
    int bad = 0;
    for (int64_t i = 0; i < n; i += 997) bad += py[i] != (float)i * 0.5f || pr[i] != (i < 100 ? 0.0f : (float)(i - 100));
    bad += py[n - 1] != (float)(n - 1) * 0.5f;
    PT_CHECK(bad == 0);
    struct pd_tensor *v = pd_slice(x, 0, 1, n, 1);
    PT_CHECK(pd_scale_(v, 2.0) == v);
    const float *px = pd_tensor_data(x);
    bad = px[0] != 0.0f;
    for (int64_t i = 1; i < n; i += 991) bad += px[i] != (float)i * 2.0f;
    bad += px[1] != 2.0f || px[2] != 4.0f || px[n - 1] != (float)(n - 1) * 2.0f;
    PT_CHECK(bad == 0);
    pd_scope_end(scope_tok);
}

int main(void)
{
    const int backends[] = {-1 /* default: CPU kernels */, PDI_BACKEND_REF};
    for (int b = 0; b < 2; b++) {
        int be = backends[b];
        test_rounding(be);
        test_cast(be);
        test_int_ops(be);
        test_specials(be);
        test_values(be);
    }
    test_promotion_and_errors();
    test_grads();
    test_streaming();
    PT_DONE();
}
