/* paddle.c — op test rows: the unary family (ops_unary.def).
 *
 * Every op on f32/f64 plus bf16/f16 (and the integer dtypes where the op
 * keeps them), contiguous, transposed and strided, zero-size, 0-d and odd
 * sizes; one large row per kind of run so the OpenMP split and the vector
 * bodies of the CPU kernels are compared with the reference too. Inputs
 * stay away from singularities (log > 0, tan inside (-pi/2, pi/2), ...).
 * Exact semantics (round half to even, cast saturation and wrapping, NaN
 * handling) are asserted value by value in tests/test_unary_semantics.c.
 */
#include "ops/harness.h"

#define FN(name, expr) \
    static struct pd_tensor *name(struct pd_tensor **in) { struct pd_tensor *x = in[0]; return (expr); }

FN(f_neg, pd_neg(x))
FN(f_abs, pd_abs(x))
FN(f_sign, pd_sign(x))
FN(f_exp, pd_exp(x))
FN(f_expm1, pd_expm1(x))
FN(f_log, pd_log(x))
FN(f_log1p, pd_log1p(x))
FN(f_log2, pd_log2(x))
FN(f_sqrt, pd_sqrt(x))
FN(f_rsqrt, pd_rsqrt(x))
FN(f_square, pd_square(x))
FN(f_reciprocal, pd_reciprocal(x))
FN(f_sin, pd_sin(x))
FN(f_cos, pd_cos(x))
FN(f_tan, pd_tan(x))
FN(f_tanh, pd_tanh(x))
FN(f_sigmoid, pd_sigmoid(x))
FN(f_relu, pd_relu(x))
FN(f_leaky_relu, pd_leaky_relu(x, 0.1))
FN(f_elu, pd_elu(x, 1.5))
FN(f_gelu_erf, pd_gelu(x, 0))
FN(f_gelu_tanh, pd_gelu(x, 1))
FN(f_silu, pd_silu(x))
FN(f_softplus, pd_softplus(x, 2.0, 1.5))
FN(f_softplus_default, pd_softplus(x, 1.0, 20.0))
FN(f_mish, pd_mish(x))
FN(f_erf, pd_erf(x))
FN(f_floor, pd_floor(x))
FN(f_ceil, pd_ceil(x))
FN(f_round, pd_round(x))
FN(f_trunc, pd_trunc(x))
FN(f_clip, pd_clip(x, -0.5, 0.8))
FN(f_clip_int, pd_clip(x, -1.5, 7.2))
FN(f_clip_inverted, pd_clip(x, 1.0, -1.0))
FN(f_pow_2_5, pd_pow_scalar(x, 2.5))
FN(f_pow_3, pd_pow_scalar(x, 3.0))
FN(f_pow_m1, pd_pow_scalar(x, -1.0))
FN(f_pow_0, pd_pow_scalar(x, 0.0))
FN(f_scale, pd_scale(x, -1.75))
FN(f_scale_int, pd_scale(x, 3.0))
FN(f_add_scalar, pd_add_scalar(x, 0.625))
FN(f_add_scalar_int, pd_add_scalar(x, -7.0))
FN(f_logical_not, pd_logical_not(x))
/* NaN where x < 0: */
FN(f_isnan, pd_isnan(pd_log(x)))
/* inf where x > ~0.9 (overflow) and where round(x) == 0 (1/0): */
FN(f_isinf, pd_isinf(pd_add(pd_exp(pd_scale(x, 100.0)), pd_reciprocal(pd_round(x)))))
FN(f_isfinite, pd_isfinite(pd_add(pd_exp(pd_scale(x, 100.0)), pd_log(x))))
FN(f_isnan_plain, pd_isnan(x))
FN(f_isinf_plain, pd_isinf(x))
FN(f_isfinite_plain, pd_isfinite(x))
FN(f_cast_f32, pd_cast(x, PD_F32))
FN(f_cast_f64, pd_cast(x, PD_F64))
FN(f_cast_f16, pd_cast(x, PD_F16))
FN(f_cast_bf16, pd_cast(x, PD_BF16))
FN(f_cast_i8, pd_cast(x, PD_I8))
FN(f_cast_u8, pd_cast(x, PD_U8))
FN(f_cast_i16, pd_cast(x, PD_I16))
FN(f_cast_i32, pd_cast(x, PD_I32))
FN(f_cast_i64, pd_cast(x, PD_I64))
FN(f_cast_bool, pd_cast(x, PD_BOOL))
/* gradient through a cast to f32 and back (fd_eps large: f32 rounding) */
FN(f_cast_roundtrip, pd_cast(pd_square(pd_cast(x, PD_F32)), PD_F64))
/* a composition: VJPs of several ops chained */
FN(f_chain, pd_sigmoid(pd_gelu(pd_tanh(pd_exp(pd_scale(x, 0.5))), 0)))

#define FLOW OPT_DT_FLOW
#define NUM OPT_DT_ALLNUM
#define INTS (1u << PD_I8 | 1u << PD_U8 | 1u << PD_I16 | OPT_DT_INT)
#define ALL (OPT_DT_ALLNUM | 1u << PD_BOOL)
#define NOGRAD .no_gradcheck = 1

/* Input shorthands with a value range. */
#define IN(lo_, hi_, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = lo_, .hi = hi_}
#define INT_(lo_, hi_, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = lo_, .hi = hi_, .layout = OPT_TRANSPOSED}
#define INS(lo_, hi_, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = lo_, .hi = hi_, .layout = OPT_STRIDED}

/* Four rows per float op: contiguous (all float dtypes), transposed odd
 * size, strided, and a large contiguous row (vector body + threads). */
#define FOUR(op, fn, lo, hi)                                                              \
    {#op "/contig", PD_OP_##op, 1, {IN(lo, hi, 3, 5)}, fn, FLOW},                          \
    {#op "/odd_T", PD_OP_##op, 1, {INT_(lo, hi, 7, 13)}, fn, FLOW},                        \
    {#op "/strided", PD_OP_##op, 1, {INS(lo, hi, 4, 9)}, fn, FLOW},                        \
    {#op "/large", PD_OP_##op, 1, {IN(lo, hi, 181, 233)}, fn, FLOW, NOGRAD}
/* The same for non-differentiable ops (no gradcheck). */
#define FOUR_ND(op, fn, lo, hi)                                                           \
    {#op "/contig", PD_OP_##op, 1, {IN(lo, hi, 3, 5)}, fn, FLOW, NOGRAD},                  \
    {#op "/odd_T", PD_OP_##op, 1, {INT_(lo, hi, 7, 13)}, fn, FLOW, NOGRAD},                \
    {#op "/strided", PD_OP_##op, 1, {INS(lo, hi, 4, 9)}, fn, FLOW, NOGRAD},                \
    {#op "/large", PD_OP_##op, 1, {IN(lo, hi, 181, 233)}, fn, FLOW, NOGRAD}

static const struct opt_row rows[] = {
    /* neg/abs/sign/square/relu: numeric, integers wrap like the reference */
    FOUR(neg, f_neg, -2, 2),
    {"neg/ints", PD_OP_neg, 1, {IN(-130, 130, 5, 7)}, f_neg, INTS, NOGRAD},
    {"neg/zero_size", PD_OP_neg, 1, {IN(-2, 2, 0, 5)}, f_neg, NUM},
    {"neg/0d", PD_OP_neg, 1, {OPT_F0}, f_neg, FLOW},
    FOUR(abs, f_abs, -2, 2),
    {"abs/ints_T", PD_OP_abs, 1, {INT_(-130, 130, 7, 13)}, f_abs, INTS, NOGRAD},
    FOUR_ND(sign, f_sign, -2, 2),
    {"sign/ints_S", PD_OP_sign, 1, {INS(-3, 3, 4, 9)}, f_sign, INTS, NOGRAD},
    FOUR(square, f_square, -2, 2),
    {"square/ints_wrap", PD_OP_square, 1, {IN(-300, 300, 6, 9)}, f_square, INTS, NOGRAD},
    FOUR(relu, f_relu, -2, 2),
    {"relu/ints_S", PD_OP_relu, 1, {INS(-50, 50, 4, 9)}, f_relu, INTS, NOGRAD},
    {"relu/zero_size", PD_OP_relu, 1, {IN(-2, 2, 3, 0)}, f_relu, NUM},
    /* exp/log family */
    FOUR(exp, f_exp, -3, 3),
    {"exp/wide_range", PD_OP_exp, 1, {IN(-110, 95, 40, 50)}, f_exp, FLOW, NOGRAD},
    {"exp/int_promote", PD_OP_exp, 1, {IN(-5, 5, 3, 4)}, f_exp, INTS, NOGRAD},
    {"exp/0d", PD_OP_exp, 1, {OPT_F0}, f_exp, FLOW},
    {"exp/zero_size", PD_OP_exp, 1, {IN(-2, 2, 0, 3)}, f_exp, FLOW},
    FOUR(expm1, f_expm1, -2, 2),
    {"expm1/small", PD_OP_expm1, 1, {IN(-1e-3, 1e-3, 5, 5)}, f_expm1, FLOW},
    FOUR(log, f_log, 0.05, 4),
    {"log/wide_range", PD_OP_log, 1, {IN(1e-30, 1e30, 40, 50)}, f_log, OPT_DT_F, NOGRAD},
    {"log/int_promote", PD_OP_log, 1, {IN(1, 100, 3, 4)}, f_log, INTS, NOGRAD},
    FOUR(log1p, f_log1p, -0.6, 3),
    {"log1p/small", PD_OP_log1p, 1, {IN(-1e-4, 1e-4, 5, 5)}, f_log1p, FLOW},
    FOUR(log2, f_log2, 0.05, 8),
    FOUR(sqrt, f_sqrt, 0.1, 4),
    {"sqrt/int_promote", PD_OP_sqrt, 1, {IN(0, 1000, 3, 4)}, f_sqrt, INTS, NOGRAD},
    FOUR(rsqrt, f_rsqrt, 0.1, 4),
    FOUR(reciprocal, f_reciprocal, 0.3, 3),
    {"reciprocal/negative", PD_OP_reciprocal, 1, {IN(-3, -0.3, 3, 5)}, f_reciprocal, FLOW},
    /* trigonometric */
    FOUR(sin, f_sin, -4, 4),
    FOUR(cos, f_cos, -4, 4),
    FOUR(tan, f_tan, -1.2, 1.2),
    {"sin/wide_range", PD_OP_sin, 1, {IN(-9000, 9000, 40, 50)}, f_sin, OPT_DT_F | 1u << PD_BF16, NOGRAD},
    {"cos/huge_args", PD_OP_cos, 1, {IN(-1e6, 1e6, 40, 50)}, f_cos, OPT_DT_F, NOGRAD},
    {"tan/wide_range", PD_OP_tan, 1, {IN(-100, 100, 40, 50)}, f_tan, OPT_DT_F, NOGRAD, .tol = 10},
    /* activations */
    FOUR(tanh, f_tanh, -3, 3),
    {"tanh/wide_range", PD_OP_tanh, 1, {IN(-30, 30, 40, 50)}, f_tanh, FLOW, NOGRAD},
    FOUR(sigmoid, f_sigmoid, -4, 4),
    {"sigmoid/wide_range", PD_OP_sigmoid, 1, {IN(-100, 100, 40, 50)}, f_sigmoid, FLOW, NOGRAD},
    FOUR(leaky_relu, f_leaky_relu, -2, 2),
    FOUR(elu, f_elu, -2, 2),
    {"elu/wide_range", PD_OP_elu, 1, {IN(-100, 100, 40, 50)}, f_elu, FLOW, NOGRAD},
    FOUR(gelu, f_gelu_erf, -3, 3),
    {"gelu/tanh_contig", PD_OP_gelu, 1, {IN(-3, 3, 3, 5)}, f_gelu_tanh, FLOW},
    {"gelu/tanh_odd_T", PD_OP_gelu, 1, {INT_(-3, 3, 7, 13)}, f_gelu_tanh, FLOW},
    {"gelu/tanh_large", PD_OP_gelu, 1, {IN(-12, 12, 181, 233)}, f_gelu_tanh, FLOW, NOGRAD},
    {"gelu/erf_wide_range", PD_OP_gelu, 1, {IN(-12, 12, 40, 50)}, f_gelu_erf, FLOW, NOGRAD},
    FOUR(silu, f_silu, -4, 4),
    {"silu/wide_range", PD_OP_silu, 1, {IN(-100, 100, 40, 50)}, f_silu, FLOW, NOGRAD},
    FOUR(softplus, f_softplus, -2, 2),
    {"softplus/default_wide", PD_OP_softplus, 1, {IN(-40, 40, 40, 50)}, f_softplus_default, FLOW, NOGRAD},
    {"softplus/default_grad", PD_OP_softplus, 1, {IN(-3, 3, 4, 5)}, f_softplus_default, OPT_DT_F},
    FOUR(mish, f_mish, -3, 3),
    {"mish/wide_range", PD_OP_mish, 1, {IN(-60, 60, 40, 50)}, f_mish, FLOW, NOGRAD},
    FOUR(erf, f_erf, -2.5, 2.5),
    {"erf/wide_range", PD_OP_erf, 1, {IN(-8, 8, 40, 50)}, f_erf, FLOW, NOGRAD},
    {"chain/composed", PD_OP_COUNT, 1, {IN(-2, 2, 3, 4)}, f_chain, OPT_DT_F},
    /* rounding: non-differentiable */
    FOUR_ND(floor, f_floor, -5, 5),
    {"floor/ints", PD_OP_floor, 1, {INT_(-50, 50, 5, 7)}, f_floor, NUM, NOGRAD},
    FOUR_ND(ceil, f_ceil, -5, 5),
    {"ceil/ints", PD_OP_ceil, 1, {INS(-50, 50, 5, 7)}, f_ceil, NUM, NOGRAD},
    FOUR_ND(round, f_round, -5, 5),
    {"round/ints", PD_OP_round, 1, {IN(-50, 50, 5, 7)}, f_round, NUM, NOGRAD},
    FOUR_ND(trunc, f_trunc, -5, 5),
    {"trunc/ints", PD_OP_trunc, 1, {IN(-50, 50, 5, 7)}, f_trunc, NUM, NOGRAD},
    /* clip, pow, scale, add_scalar */
    FOUR(clip, f_clip, -2, 2),
    {"clip/ints", PD_OP_clip, 1, {INT_(-20, 20, 7, 13)}, f_clip_int, NUM, NOGRAD},
    {"clip/inverted_bounds", PD_OP_clip, 1, {IN(-2, 2, 3, 5)}, f_clip_inverted, NUM},
    FOUR(pow_scalar, f_pow_2_5, 0.2, 2),
    {"pow_scalar/cube_negative", PD_OP_pow_scalar, 1, {INT_(-2, 2, 7, 13)}, f_pow_3, FLOW},
    {"pow_scalar/reciprocal", PD_OP_pow_scalar, 1, {IN(0.3, 3, 3, 5)}, f_pow_m1, FLOW},
    {"pow_scalar/zero", PD_OP_pow_scalar, 1, {IN(-2, 2, 3, 5)}, f_pow_0, FLOW},
    {"pow_scalar/int_promote", PD_OP_pow_scalar, 1, {IN(0, 9, 3, 5)}, f_pow_2_5, INTS, NOGRAD},
    FOUR(scale, f_scale, -2, 2),
    {"scale/ints_fractional", PD_OP_scale, 1, {INT_(-100, 100, 7, 13)}, f_scale, NUM, NOGRAD},
    {"scale/ints_integral", PD_OP_scale, 1, {INS(-100, 100, 5, 7)}, f_scale_int, NUM, NOGRAD},
    {"scale/large_ints", PD_OP_scale, 1, {IN(-100, 100, 181, 233)}, f_scale_int, OPT_DT_INT, NOGRAD},
    FOUR(add_scalar, f_add_scalar, -2, 2),
    {"add_scalar/ints_fractional", PD_OP_add_scalar, 1, {IN(-100, 100, 5, 7)}, f_add_scalar, NUM, NOGRAD},
    {"add_scalar/ints_integral", PD_OP_add_scalar, 1, {INT_(-100, 100, 7, 13)}, f_add_scalar_int, NUM, NOGRAD},
    /* cast: from every dtype (the row's) to each target */
    {"cast/to_f32", PD_OP_cast, 1, {INT_(-300, 300, 7, 13)}, f_cast_f32, ALL, NOGRAD},
    {"cast/to_f64", PD_OP_cast, 1, {IN(-300, 300, 5, 7)}, f_cast_f64, ALL, NOGRAD},
    {"cast/to_f16", PD_OP_cast, 1, {INS(-300, 300, 5, 7)}, f_cast_f16, ALL, NOGRAD},
    {"cast/to_f16_overflow", PD_OP_cast, 1, {IN(-1e5, 1e5, 5, 7)}, f_cast_f16, OPT_DT_F | 1u << PD_I32, NOGRAD},
    {"cast/to_bf16", PD_OP_cast, 1, {INT_(-300, 300, 7, 13)}, f_cast_bf16, ALL, NOGRAD},
    {"cast/to_i8", PD_OP_cast, 1, {IN(-300, 300, 5, 7)}, f_cast_i8, ALL, NOGRAD},
    {"cast/to_u8", PD_OP_cast, 1, {INS(-300, 300, 5, 7)}, f_cast_u8, ALL, NOGRAD},
    {"cast/to_i16", PD_OP_cast, 1, {IN(-4e4, 4e4, 5, 7)}, f_cast_i16, ALL, NOGRAD},
    {"cast/to_i32", PD_OP_cast, 1, {INT_(-3e9, 3e9, 7, 13)}, f_cast_i32, ALL, NOGRAD},
    {"cast/to_i64", PD_OP_cast, 1, {IN(-3e9, 3e9, 5, 7)}, f_cast_i64, ALL, NOGRAD},
    {"cast/to_bool", PD_OP_cast, 1, {INS(-2, 2, 5, 7)}, f_cast_bool, ALL, NOGRAD},
    {"cast/large_to_bf16", PD_OP_cast, 1, {IN(-3, 3, 181, 233)}, f_cast_bf16, OPT_DT_FLOW, NOGRAD},
    {"cast/large_to_f16", PD_OP_cast, 1, {IN(-3, 3, 181, 233)}, f_cast_f16, OPT_DT_FLOW, NOGRAD},
    {"cast/large_to_f32", PD_OP_cast, 1, {IN(-3, 3, 181, 233)}, f_cast_f32, OPT_DT_FLOW | OPT_DT_INT, NOGRAD},
    {"cast/zero_size", PD_OP_cast, 1, {IN(-3, 3, 0, 4)}, f_cast_i32, ALL, NOGRAD},
    {"cast/grad_roundtrip", PD_OP_cast, 1, {IN(-2, 2, 3, 5)}, f_cast_roundtrip, OPT_DT_F, .tol = 10, .fd_eps = 1e-2},
    /* bool-valued tests on every dtype */
    {"logical_not/all", PD_OP_logical_not, 1, {INT_(-2, 2, 7, 13)}, f_logical_not, ALL, NOGRAD},
    {"logical_not/strided", PD_OP_logical_not, 1, {INS(-2, 2, 4, 9)}, f_logical_not, ALL, NOGRAD},
    {"isnan/log_of_negative", PD_OP_isnan, 1, {INT_(-1, 1, 7, 13)}, f_isnan, FLOW, NOGRAD},
    {"isnan/all", PD_OP_isnan, 1, {INS(-2, 2, 4, 9)}, f_isnan_plain, ALL, NOGRAD},
    {"isinf/overflow_and_div0", PD_OP_isinf, 1, {IN(-1, 1, 7, 13)}, f_isinf, OPT_DT_F | 1u << PD_F16, NOGRAD},
    {"isinf/all", PD_OP_isinf, 1, {IN(-2, 2, 4, 9)}, f_isinf_plain, ALL, NOGRAD},
    {"isfinite/mixed", PD_OP_isfinite, 1, {INS(-1, 1, 7, 13)}, f_isfinite, FLOW, NOGRAD},
    {"isfinite/all", PD_OP_isfinite, 1, {INT_(-2, 2, 7, 13)}, f_isfinite_plain, ALL, NOGRAD},
    {"isfinite/large", PD_OP_isfinite, 1, {IN(-2, 2, 181, 233)}, f_isfinite, FLOW, NOGRAD},
};

int opt_rows_unary(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
