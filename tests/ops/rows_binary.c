/* paddle.c — op test rows: the binary family (arithmetic, comparisons,
 * logic, where). Covers broadcasting both ways ([3,1,5] with [4,5], 0-d
 * with a matrix), transposed and strided inputs, zero-size and odd sizes,
 * one large row per hot path (multi-threaded pdi_iter), dtype promotion,
 * and every dtype the op supports. Gradcheck rows keep away from the
 * non-differentiable points: pow bases > 0 (or integer exponents for
 * negative bases), no max/min ties in f64, remainder in the open intervals.
 * Integer inputs are floor(U[lo, hi)), so [-2, 2) gives -2..1 (zeros in
 * divisors exercise the defined integer division by zero).
 */
#include "ops/harness.h"

#define F2(name, expr) \
    static struct pd_tensor *f_##name(struct pd_tensor **in) { return expr; }

F2(add, pd_add(in[0], in[1]))
F2(sub, pd_sub(in[0], in[1]))
F2(mul, pd_mul(in[0], in[1]))
F2(div, pd_div(in[0], in[1]))
F2(pow, pd_pow(in[0], in[1]))
F2(pow_intexp, pd_pow(in[0], pd_floor(in[1])))
F2(maximum, pd_maximum(in[0], in[1]))
F2(minimum, pd_minimum(in[0], in[1]))
F2(remainder, pd_remainder(in[0], in[1]))
F2(floor_divide, pd_floor_divide(in[0], in[1]))
F2(atan2, pd_atan2(in[0], in[1]))
F2(eq, pd_eq(in[0], in[1]))
F2(ne, pd_ne(in[0], in[1]))
F2(lt, pd_lt(in[0], in[1]))
F2(le, pd_le(in[0], in[1]))
F2(gt, pd_gt(in[0], in[1]))
F2(ge, pd_ge(in[0], in[1]))
/* Half the pairs tie: b' = max(a, b) equals a wherever a >= b. */
F2(eq_ties, pd_eq(in[0], pd_maximum(in[0], in[1])))
F2(ne_ties, pd_ne(in[0], pd_maximum(in[0], in[1])))
F2(lt_ties, pd_lt(in[0], pd_maximum(in[0], in[1])))
F2(le_ties, pd_le(in[0], pd_maximum(in[0], in[1])))
F2(gt_ties, pd_gt(in[0], pd_minimum(in[0], in[1])))
F2(ge_ties, pd_ge(in[0], pd_minimum(in[0], in[1])))
F2(logical_and, pd_logical_and(in[0], in[1]))
F2(logical_or, pd_logical_or(in[0], in[1]))
F2(logical_xor, pd_logical_xor(in[0], in[1]))
F2(where, pd_where(in[0], in[1], in[2]))
/* cond from a comparison of the data itself */
F2(where_cmp, pd_where(pd_gt(in[0], in[1]), in[0], in[1]))
/* chains: mul(add) and a broadcasting sub into div (divisor >= 0.5) */
F2(chain, pd_div(pd_mul(pd_add(in[0], in[1]), in[0]), pd_sub(in[2], pd_mul(in[1], pd_sub(in[1], in[1])))))

#define NUM OPT_DT_ALLNUM
#define ALL (OPT_DT_ALLNUM | 1u << PD_BOOL)
#define F32 (1u << PD_F32)
#define INTS (1u << PD_I8 | 1u << PD_U8 | 1u << PD_I16 | OPT_DT_INT)
#define FIX(dt_, lo_, hi_, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FIXED, .lo = lo_, .hi = hi_, .dtype = dt_, .no_grad = 1}
#define POS(...) OPT_FR(0.5, 2, __VA_ARGS__)
#define NEG(...) OPT_FR(-2, -0.5, __VA_ARGS__)

static const struct opt_row rows[] = {
    /* add: every dtype and every layout */
    {"add/same", PD_OP_add, 2, {OPT_F(3, 4), OPT_F(3, 4)}, f_add, NUM},
    {"add/bcast_3x1x5_4x5", PD_OP_add, 2, {OPT_F(3, 1, 5), OPT_F(4, 5)}, f_add, NUM},
    {"add/bcast_4x5_3x1x5", PD_OP_add, 2, {OPT_F(4, 5), OPT_F(3, 1, 5)}, f_add, NUM},
    {"add/0d_mat", PD_OP_add, 2, {OPT_F0, OPT_F(4, 3)}, f_add, NUM},
    {"add/mat_0d", PD_OP_add, 2, {OPT_F(4, 3), OPT_F0}, f_add, NUM},
    {"add/0d_0d", PD_OP_add, 2, {OPT_F0, OPT_F0}, f_add, NUM},
    {"add/col_bcast", PD_OP_add, 2, {OPT_F(5, 7), OPT_F(5, 1)}, f_add, NUM},
    {"add/T_S", PD_OP_add, 2, {OPT_FT(5, 3), OPT_FS(5, 3)}, f_add, NUM},
    {"add/S_bcast_T", PD_OP_add, 2, {OPT_FS(2, 3, 4), OPT_FT(3, 4)}, f_add, NUM},
    {"add/odd", PD_OP_add, 2, {OPT_F(7, 13), OPT_F(13)}, f_add, NUM},
    {"add/zero_size", PD_OP_add, 2, {OPT_F(0, 3), OPT_F(3)}, f_add, NUM},
    {"add/zero_size_bcast", PD_OP_add, 2, {OPT_F(2, 0, 1), OPT_F(3)}, f_add, OPT_DT_F},
    {"add/bool", PD_OP_add, 2, {OPT_B(3, 5), OPT_B(5)}, f_add, F32, .no_gradcheck = 1},
    {"add/large", PD_OP_add, 2, {OPT_F(256, 160), OPT_F(256, 160)}, f_add, OPT_DT_FLOW | OPT_DT_INT, .no_gradcheck = 1},
    {"add/large_row_bcast", PD_OP_add, 2, {OPT_F(300, 129), OPT_F(129)}, f_add, OPT_DT_FLOW | OPT_DT_INT, .no_gradcheck = 1},
    {"add/large_scalar", PD_OP_add, 2, {OPT_FT(181, 200), OPT_F0}, f_add, OPT_DT_FLOW, .no_gradcheck = 1},
    {"add/promote_f_i32", PD_OP_add, 2, {OPT_F(3, 4), FIX(PD_I32, -5, 5, 4)}, f_add, OPT_DT_FLOW},
    {"add/promote_i8_u8", PD_OP_add, 2, {FIX(PD_I8, -100, 100, 6), FIX(PD_U8, 0, 250, 2, 6)}, f_add, F32, .no_gradcheck = 1},
    {"add/promote_f16_bf16", PD_OP_add, 2, {FIX(PD_F16, -2, 2, 3, 4), FIX(PD_BF16, -2, 2, 4)}, f_add, F32, .no_gradcheck = 1},
    {"add/int_wrap", PD_OP_add, 2, {OPT_FR(60, 127, 9), OPT_FR(60, 127, 9)}, f_add, 1u << PD_I8 | 1u << PD_U8, .no_gradcheck = 1},
    /* sub */
    {"sub/bcast", PD_OP_sub, 2, {OPT_F(3, 1, 5), OPT_F(4, 5)}, f_sub, NUM},
    {"sub/0d_T", PD_OP_sub, 2, {OPT_F0, OPT_FT(4, 3)}, f_sub, NUM},
    {"sub/S_odd", PD_OP_sub, 2, {OPT_FS(3, 7), OPT_F(7)}, f_sub, NUM},
    {"sub/zero_size", PD_OP_sub, 2, {OPT_F(4, 0), OPT_F(1)}, f_sub, OPT_DT_F},
    {"sub/large_col_bcast", PD_OP_sub, 2, {OPT_F(181, 199), OPT_F(181, 1)}, f_sub, OPT_DT_FLOW, .no_gradcheck = 1},
    /* mul */
    {"mul/same", PD_OP_mul, 2, {OPT_F(3, 4), OPT_F(3, 4)}, f_mul, NUM},
    {"mul/bcast_3x1x5_4x5", PD_OP_mul, 2, {OPT_F(3, 1, 5), OPT_F(4, 5)}, f_mul, NUM},
    {"mul/mat_0d", PD_OP_mul, 2, {OPT_FT(4, 3), OPT_F0}, f_mul, NUM},
    {"mul/T_S", PD_OP_mul, 2, {OPT_FT(6, 5), OPT_FS(6, 5)}, f_mul, NUM},
    {"mul/zero_size", PD_OP_mul, 2, {OPT_F(0), OPT_F(0)}, f_mul, OPT_DT_F},
    {"mul/bool", PD_OP_mul, 2, {OPT_B(4, 3), OPT_B(4, 1)}, f_mul, F32, .no_gradcheck = 1},
    {"mul/large", PD_OP_mul, 2, {OPT_F(200, 201), OPT_F(200, 201)}, f_mul, OPT_DT_FLOW | OPT_DT_INT, .no_gradcheck = 1},
    {"mul/int_wrap", PD_OP_mul, 2, {OPT_FR(-128, 127, 9), OPT_FR(-128, 127, 9)}, f_mul, INTS, .no_gradcheck = 1},
    /* div: floats; integers go through f32 (true division, /0 -> inf/nan) */
    {"div/same", PD_OP_div, 2, {OPT_F(3, 4), POS(3, 4)}, f_div, OPT_DT_FLOW},
    {"div/bcast_neg", PD_OP_div, 2, {OPT_F(3, 1, 5), NEG(4, 5)}, f_div, OPT_DT_FLOW},
    {"div/0d_T", PD_OP_div, 2, {OPT_FR(0.5, 2), OPT_FT(4, 3)}, f_div, OPT_DT_FLOW, .tol = 5},
    {"div/S_0d", PD_OP_div, 2, {OPT_FS(3, 5), OPT_FR(-2, -0.5)}, f_div, OPT_DT_FLOW},
    {"div/int", PD_OP_div, 2, {OPT_FR(-5, 5, 4, 6), OPT_FR(-3, 3, 6)}, f_div, INTS, .no_gradcheck = 1},
    {"div/zero_size", PD_OP_div, 2, {OPT_F(0, 2), POS(2)}, f_div, OPT_DT_F},
    /* pow: base > 0 for the exponent gradient; integer exponents for a < 0 */
    {"pow/pos_base", PD_OP_pow, 2, {POS(3, 4), OPT_F(3, 4)}, f_pow, OPT_DT_FLOW},
    {"pow/bcast", PD_OP_pow, 2, {POS(3, 1, 5), OPT_F(4, 5)}, f_pow, OPT_DT_FLOW},
    {"pow/0d_exp", PD_OP_pow, 2, {POS(4, 3), OPT_F0}, f_pow, OPT_DT_FLOW, .tol = 5},
    {"pow/neg_base_int_exp", PD_OP_pow, 2, {NEG(3, 4), {OPT_SHAPE(4), .kind = OPT_FLOAT, .lo = -2, .hi = 4, .no_grad = 1}},
     f_pow_intexp, OPT_DT_FLOW},
    {"pow/int", PD_OP_pow, 2, {OPT_FR(-3, 4, 4, 5), OPT_FR(0, 5, 5)}, f_pow, INTS, .no_gradcheck = 1},
    {"pow/int_neg_exp", PD_OP_pow, 2, {OPT_FR(-2, 3, 4, 5), OPT_FR(-3, 1, 4, 5)}, f_pow, OPT_DT_INT, .no_gradcheck = 1},
    {"pow/zero_size", PD_OP_pow, 2, {POS(0, 3), OPT_F(3)}, f_pow, OPT_DT_F},
    /* maximum / minimum: random f64 values never tie */
    {"maximum/same", PD_OP_maximum, 2, {OPT_F(3, 4), OPT_F(3, 4)}, f_maximum, ALL},
    {"maximum/bcast", PD_OP_maximum, 2, {OPT_F(3, 1, 5), OPT_FT(4, 5)}, f_maximum, NUM},
    {"maximum/0d", PD_OP_maximum, 2, {OPT_FS(4, 3), OPT_F0}, f_maximum, NUM},
    {"maximum/bool", PD_OP_maximum, 2, {OPT_B(4, 3), OPT_B(3)}, f_maximum, F32, .no_gradcheck = 1},
    {"minimum/same", PD_OP_minimum, 2, {OPT_F(3, 4), OPT_F(3, 4)}, f_minimum, ALL},
    {"minimum/bcast", PD_OP_minimum, 2, {OPT_FT(4, 5), OPT_F(3, 1, 5)}, f_minimum, NUM},
    {"minimum/0d", PD_OP_minimum, 2, {OPT_F0, OPT_FS(4, 3)}, f_minimum, NUM},
    {"minimum/bool", PD_OP_minimum, 2, {OPT_B(4, 3), OPT_B(3)}, f_minimum, F32, .no_gradcheck = 1},
    /* remainder: sign of the divisor */
    {"remainder/pos_div", PD_OP_remainder, 2, {OPT_FR(-4, 4, 3, 4), POS(3, 4)}, f_remainder, OPT_DT_FLOW},
    {"remainder/neg_div_bcast", PD_OP_remainder, 2, {OPT_FR(-4, 4, 3, 1, 5), NEG(4, 5)}, f_remainder, OPT_DT_FLOW},
    {"remainder/T_0d", PD_OP_remainder, 2, {OPT_FT(4, 3), OPT_FR(0.7, 0.9)}, f_remainder, OPT_DT_FLOW},
    {"remainder/int", PD_OP_remainder, 2, {OPT_FR(-9, 9, 5, 6), OPT_FR(-4, 4, 6)}, f_remainder, INTS, .no_gradcheck = 1},
    {"remainder/zero_size", PD_OP_remainder, 2, {OPT_F(0), POS(1)}, f_remainder, OPT_DT_F},
    /* floor_divide: not differentiable */
    {"floor_divide/float", PD_OP_floor_divide, 2, {OPT_FR(-4, 4, 3, 4), OPT_F(3, 4)}, f_floor_divide, OPT_DT_FLOW,
     .no_gradcheck = 1},
    {"floor_divide/bcast_T", PD_OP_floor_divide, 2, {OPT_FR(-6, 6, 3, 1, 5), OPT_FT(4, 5)}, f_floor_divide, OPT_DT_FLOW,
     .no_gradcheck = 1},
    {"floor_divide/int", PD_OP_floor_divide, 2, {OPT_FR(-9, 9, 5, 6), OPT_FR(-4, 4, 6)}, f_floor_divide, INTS,
     .no_gradcheck = 1},
    {"floor_divide/int_S", PD_OP_floor_divide, 2, {OPT_FS(3, 6), OPT_F0}, f_floor_divide, INTS, .no_gradcheck = 1},
    /* atan2 */
    {"atan2/same", PD_OP_atan2, 2, {OPT_F(3, 4), OPT_F(3, 4)}, f_atan2, OPT_DT_FLOW},
    {"atan2/bcast_0d", PD_OP_atan2, 2, {OPT_F(3, 1, 5), OPT_F0}, f_atan2, OPT_DT_FLOW},
    {"atan2/T_S", PD_OP_atan2, 2, {OPT_FT(4, 3), OPT_FS(4, 3)}, f_atan2, OPT_DT_FLOW},
    {"atan2/int", PD_OP_atan2, 2, {OPT_F(3, 4), OPT_F(4)}, f_atan2, OPT_DT_INT, .no_gradcheck = 1},
    /* comparisons: every dtype; *_ties makes half of the pairs equal */
    {"eq/ties", PD_OP_eq, 2, {OPT_F(5, 7), OPT_F(5, 7)}, f_eq_ties, ALL, .no_gradcheck = 1},
    {"eq/bcast", PD_OP_eq, 2, {OPT_F(3, 1, 5), OPT_F(4, 5)}, f_eq, NUM, .no_gradcheck = 1},
    {"eq/bool", PD_OP_eq, 2, {OPT_B(3, 4), OPT_B(4)}, f_eq, F32, .no_gradcheck = 1},
    {"ne/ties", PD_OP_ne, 2, {OPT_F(5, 7), OPT_F(5, 7)}, f_ne_ties, ALL, .no_gradcheck = 1},
    {"ne/0d_T", PD_OP_ne, 2, {OPT_F0, OPT_FT(4, 3)}, f_ne, NUM, .no_gradcheck = 1},
    {"lt/ties", PD_OP_lt, 2, {OPT_F(5, 7), OPT_F(5, 7)}, f_lt_ties, ALL, .no_gradcheck = 1},
    {"lt/S_bcast", PD_OP_lt, 2, {OPT_FS(4, 5), OPT_F(3, 1, 5)}, f_lt, NUM, .no_gradcheck = 1},
    {"lt/promote", PD_OP_lt, 2, {OPT_F(3, 4), FIX(PD_I64, -2, 2, 4)}, f_lt, OPT_DT_FLOW, .no_gradcheck = 1},
    {"le/ties", PD_OP_le, 2, {OPT_F(5, 7), OPT_F(5, 7)}, f_le_ties, ALL, .no_gradcheck = 1},
    {"le/zero_size", PD_OP_le, 2, {OPT_F(0, 4), OPT_F(4)}, f_le, NUM, .no_gradcheck = 1},
    {"gt/ties", PD_OP_gt, 2, {OPT_F(5, 7), OPT_F(5, 7)}, f_gt_ties, ALL, .no_gradcheck = 1},
    {"gt/mat_0d", PD_OP_gt, 2, {OPT_FT(6, 5), OPT_F0}, f_gt, NUM, .no_gradcheck = 1},
    {"gt/large", PD_OP_gt, 2, {OPT_F(190, 190), OPT_F(190)}, f_gt, OPT_DT_FLOW | OPT_DT_INT, .no_gradcheck = 1},
    {"ge/ties", PD_OP_ge, 2, {OPT_F(5, 7), OPT_F(5, 7)}, f_ge_ties, ALL, .no_gradcheck = 1},
    {"ge/bool", PD_OP_ge, 2, {OPT_B(3, 4), OPT_B(3, 1)}, f_ge, F32, .no_gradcheck = 1},
    /* logic: nonzero is true; mixed dtypes go through bool */
    {"logical_and/num", PD_OP_logical_and, 2, {OPT_F(5, 7), OPT_F(5, 7)}, f_logical_and, ALL, .no_gradcheck = 1},
    {"logical_and/bool_bcast", PD_OP_logical_and, 2, {OPT_B(3, 1, 5), OPT_B(4, 5)}, f_logical_and, F32, .no_gradcheck = 1},
    {"logical_and/mixed", PD_OP_logical_and, 2, {OPT_FT(4, 5), FIX(PD_I32, -1, 2, 5)}, f_logical_and, OPT_DT_FLOW,
     .no_gradcheck = 1},
    {"logical_or/num_S", PD_OP_logical_or, 2, {OPT_FS(5, 7), OPT_F(7)}, f_logical_or, ALL, .no_gradcheck = 1},
    {"logical_or/bool_0d", PD_OP_logical_or, 2, {OPT_B(4, 3), {.ndim = 0, .kind = OPT_BOOL, .no_grad = 1}},
     f_logical_or, F32, .no_gradcheck = 1},
    {"logical_xor/num", PD_OP_logical_xor, 2, {OPT_F(3, 1, 5), OPT_F(4, 5)}, f_logical_xor, ALL, .no_gradcheck = 1},
    {"logical_xor/bool", PD_OP_logical_xor, 2, {OPT_B(6, 7), OPT_B(6, 7)}, f_logical_xor, F32, .no_gradcheck = 1},
    {"logical_xor/large", PD_OP_logical_xor, 2, {OPT_F(200, 200), OPT_F(200, 200)}, f_logical_xor, OPT_DT_FLOW | INTS,
     .no_gradcheck = 1},
    /* where: cond bool, a and b promoted; grads to a and b */
    {"where/same", PD_OP_where, 3, {OPT_B(3, 4), OPT_F(3, 4), OPT_F(3, 4)}, f_where, ALL},
    {"where/bcast3", PD_OP_where, 3, {OPT_B(3, 1), OPT_F(1, 4), OPT_F0}, f_where, ALL},
    {"where/bcast_3x1x5", PD_OP_where, 3, {OPT_B(4, 5), OPT_F(3, 1, 5), OPT_FT(4, 5)}, f_where, NUM},
    {"where/S_0d_a", PD_OP_where, 3, {OPT_B(4, 6), OPT_F0, OPT_FS(4, 6)}, f_where, NUM},
    {"where/zero_size", PD_OP_where, 3, {OPT_B(0, 3), OPT_F(0, 3), OPT_F(3)}, f_where, OPT_DT_F},
    {"where/promote", PD_OP_where, 3, {OPT_B(4), OPT_F(3, 4), FIX(PD_I32, -3, 3, 4)}, f_where, OPT_DT_FLOW},
    {"where/cmp", PD_OP_where, 3, {OPT_F(3, 5), OPT_F(3, 5), OPT_F(1)}, f_where_cmp, NUM},
    {"where/large", PD_OP_where, 3, {OPT_B(256, 150), OPT_F(256, 150), OPT_F(150)}, f_where, ALL, .no_gradcheck = 1},
    /* composites: several binary VJPs chained, with broadcasting */
    {"binary/chain", PD_OP_COUNT, 3, {OPT_F(3, 4), OPT_F(4), POS(3, 1)}, f_chain, OPT_DT_FLOW, .tol = 5},
};

int opt_rows_binary(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
