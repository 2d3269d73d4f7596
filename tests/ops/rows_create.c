/* paddle.c — op test rows: creation (empty, full, arange, linspace, eye),
 * random (uniform, normal, randint, bernoulli) and the in-place writes
 * copy_ and fill_.
 *
 * Creation rows have no inputs: each fixes its dtype in the function (the
 * row's dtype mask only repeats it). Random rows draw from a generator
 * seeded in the function, so the CPU and the reference runs read the same
 * counters; the sliced rows dispatch the op with a `slice` attribute.
 * copy_ and fill_ write into a clone of input 0 (the harness runs each row
 * twice on the same inputs). None of these ops is differentiable.
 */
#include <math.h>

#include "ops/harness.h"

#define RF(name, expr)                                                                                                 \
    static struct pd_tensor *f_##name(struct pd_tensor **in)                                                           \
    {                                                                                                                  \
        PDI_UNUSED(in);                                                                                                \
        return expr;                                                                                                   \
    }

#define ONE (1u << PD_F32) /* no float inputs: run the row once */
#define ALL (OPT_DT_ALLNUM | 1u << PD_BOOL)

static const int64_t s23[] = {2, 3}, s0[] = {3, 0, 2}, sbig[] = {5, 3001};

/* empty: the data is undefined, so the row fills it (fill_ over empty) */
RF(empty_f32, pd_fill_(pd_empty(s23, 2, PD_F32), 1.5))
RF(empty_i16, pd_fill_(pd_empty(s23, 2, PD_I16), -3))
RF(empty_zero, pd_empty(s0, 3, PD_BF16))
/* full */
RF(full_f32, pd_full(s23, 2, 3.7, PD_F32))
RF(full_f64_neg0, pd_full(s23, 2, -0.0, PD_F64))
RF(full_bf16, pd_full(s23, 2, 0.1, PD_BF16))
RF(full_f16_inf, pd_full(s23, 2, -INFINITY, PD_F16))
RF(full_i8_sat, pd_full(s23, 2, 300, PD_I8))
RF(full_u8, pd_full(s23, 2, 7, PD_U8))
RF(full_i64, pd_full(s23, 2, -1e12, PD_I64))
RF(full_bool, pd_full(s23, 2, 0.5, PD_BOOL))
RF(zeros_i32, pd_zeros(s23, 2, PD_I32))
RF(ones_f32_big, pd_ones(sbig, 2, PD_F32))
RF(scalar_f64, pd_scalar(2.25, PD_F64))
RF(full_zero_size, pd_full(s0, 3, 1, PD_F32))
/* arange */
RF(arange_f32, pd_arange(0.1, 2.3, 0.07, PD_F32))
RF(arange_neg_step, pd_arange(5, -3.3, -0.3, PD_F64))
RF(arange_i64, pd_arange(-4, 9, 2, PD_I64))
RF(arange_i32_frac, pd_arange(0, 5, 0.5, PD_I32))
RF(arange_empty, pd_arange(5, 1, 1, PD_F32))
RF(arange_bf16_big, pd_arange(-3.1, 70000.2, 0.77, PD_BF16))
/* linspace */
RF(linspace_f32, pd_linspace(-2.5, 7.1, 10, PD_F32))
RF(linspace_f64_odd, pd_linspace(0, 1, 7, PD_F64))
RF(linspace_num1, pd_linspace(3, -1, 1, PD_F32))
RF(linspace_num0, pd_linspace(3, -1, 0, PD_F32))
RF(linspace_i16, pd_linspace(-100, 100, 9, PD_I16))
RF(linspace_big, pd_linspace(-1.3, 1e4, 100001, PD_F64))
/* eye */
RF(eye_sq, pd_eye(4, -1, PD_F32))
RF(eye_wide, pd_eye(2, 5, PD_I64))
RF(eye_tall, pd_eye(5, 2, PD_BOOL))
RF(eye_zero, pd_eye(0, 3, PD_F32))

/* random: a generator per call with a fixed state */
static struct pd_generator *gen(void)
{
    struct pd_generator *g = pd_generator_create(4321);
    pd_generator_set_state(g, 4321, 1000);
    return g;
}
#define DRAW(name, expr)                                                                                               \
    static struct pd_tensor *f_##name(struct pd_tensor **in)                                                           \
    {                                                                                                                  \
        PDI_UNUSED(in);                                                                                                \
        struct pd_generator *g = gen();                                                                                \
        struct pd_tensor *r = expr;                                                                                    \
        pd_generator_destroy(g);                                                                                       \
        return r;                                                                                                      \
    }
DRAW(uniform_f32, pd_uniform(s23, 2, -2, 3, PD_F32, g))
DRAW(uniform_bf16_big, pd_rand(sbig, 2, PD_BF16, g))
DRAW(normal_f64, pd_normal(s23, 2, 1, 0.5, PD_F64, g))
DRAW(normal_f32_big, pd_randn(sbig, 2, PD_F32, g))
DRAW(normal_0d, pd_randn(NULL, 0, PD_F16, g))
DRAW(randint_i64, pd_randint(s23, 2, -5, 100, PD_I64, g))
DRAW(randint_u8_big, pd_randint(sbig, 2, 0, 256, PD_U8, g))
DRAW(randint_empty, pd_randint(s0, 3, 0, 3, PD_I32, g))
DRAW(bernoulli, pd_bernoulli(in[0], g))

/* the [1:4, 7:2999] block of a [5, 3001] draw, through the slice attribute */
static struct pd_tensor *sliced(enum pd_op op, struct pd_tensor *p)
{
    struct pdi_attrs a = {0};
    struct pdi_ints sl = {4, {5, 3001, 1, 7}}, sh = {2, {3, 2992}};
    if (op == PD_OP_uniform)
        a.uniform = (struct pdi_attrs_uniform){
            .shape = sh, .slice = sl, .dtype = PD_F32, .seed = 7, .offset = 4, .low = -1, .high = 1};
    if (op == PD_OP_normal)
        a.normal =
            (struct pdi_attrs_normal){.shape = sh, .slice = sl, .dtype = PD_F64, .seed = 7, .offset = 4, .std = 2};
    if (op == PD_OP_randint)
        a.randint = (struct pdi_attrs_randint){
            .shape = sh, .slice = sl, .dtype = PD_I64, .seed = 7, .offset = 4, .low = -9, .high = 9};
    if (op == PD_OP_bernoulli) a.bernoulli = (struct pdi_attrs_bernoulli){.slice = sl, .seed = 7, .offset = 4};
    return p ? pdi_call1(op, p, &a) : pdi_calln(op, NULL, 0, &a);
}
/* a piece of arange, linspace (across its halves) and eye, through the
 * piece attribute (a sharded tensor's, src/dist/create.c) */
static struct pd_tensor *piece(enum pd_op op)
{
    struct pdi_attrs a = {0};
    if (op == PD_OP_arange)
        a.arange = (struct pdi_attrs_arange){-3.1, 70000.2, 0.77, PD_F32, {2, {40000, 30000}}};
    if (op == PD_OP_linspace) a.linspace = (struct pdi_attrs_linspace){-1.3, 1e4, 100001, PD_F64, {2, {30000, 50000}}};
    if (op == PD_OP_eye) a.eye = (struct pdi_attrs_eye){7, 9, PD_F32, {4, {2, 3, 4, 5}}};
    return pdi_calln(op, NULL, 0, &a);
}
RF(arange_piece, piece(PD_OP_arange))
RF(linspace_piece, piece(PD_OP_linspace))
RF(eye_piece, piece(PD_OP_eye))
RF(uniform_slice, sliced(PD_OP_uniform, NULL))
RF(normal_slice, sliced(PD_OP_normal, NULL))
RF(randint_slice, sliced(PD_OP_randint, NULL))
RF(bernoulli_slice, sliced(PD_OP_bernoulli, in[0]))

/* copy_ and fill_ into a clone of in[0] */
static struct pd_tensor *copy_into_clone(struct pd_tensor *dst, struct pd_tensor *src)
{
    struct pd_tensor *d = pd_clone(dst);
    return pd_copy_(d, src) ? d : NULL;
}
RF(copy, copy_into_clone(in[0], in[1]))
static struct pd_tensor *f_copy_strided_dst(struct pd_tensor **in)
{
    struct pd_tensor *d = pd_clone(in[0]);
    return pd_copy_(pd_slice(d, 1, 1, 4, 2), in[1]) ? d : NULL;
}
static struct pd_tensor *f_fill_strided(struct pd_tensor **in)
{
    struct pd_tensor *d = pd_clone(in[0]);
    return pd_fill_(pd_transpose(d, 0, 1), -1.5) ? d : NULL;
}
RF(fill, pd_fill_(pd_clone(in[0]), 2.5))
RF(fill_zero, pd_fill_(pd_clone(in[0]), 0.0))

static const struct opt_row rows[] = {
    {"empty/fill_f32", PD_OP_empty, 0, {{0}}, f_empty_f32, ONE, .no_gradcheck = 1},
    {"empty/fill_i16", PD_OP_empty, 0, {{0}}, f_empty_i16, ONE, .no_gradcheck = 1},
    {"empty/zero_size", PD_OP_empty, 0, {{0}}, f_empty_zero, ONE, .no_gradcheck = 1},
    {"full/f32", PD_OP_full, 0, {{0}}, f_full_f32, ONE, .no_gradcheck = 1},
    {"full/f64_neg_zero", PD_OP_full, 0, {{0}}, f_full_f64_neg0, ONE, .no_gradcheck = 1},
    {"full/bf16", PD_OP_full, 0, {{0}}, f_full_bf16, ONE, .no_gradcheck = 1},
    {"full/f16_neg_inf", PD_OP_full, 0, {{0}}, f_full_f16_inf, ONE, .no_gradcheck = 1},
    {"full/i8_saturates", PD_OP_full, 0, {{0}}, f_full_i8_sat, ONE, .no_gradcheck = 1},
    {"full/u8", PD_OP_full, 0, {{0}}, f_full_u8, ONE, .no_gradcheck = 1},
    {"full/i64", PD_OP_full, 0, {{0}}, f_full_i64, ONE, .no_gradcheck = 1},
    {"full/bool", PD_OP_full, 0, {{0}}, f_full_bool, ONE, .no_gradcheck = 1},
    {"full/zeros_i32", PD_OP_full, 0, {{0}}, f_zeros_i32, ONE, .no_gradcheck = 1},
    {"full/ones_large", PD_OP_full, 0, {{0}}, f_ones_f32_big, ONE, .no_gradcheck = 1},
    {"full/scalar", PD_OP_full, 0, {{0}}, f_scalar_f64, ONE, .no_gradcheck = 1},
    {"full/zero_size", PD_OP_full, 0, {{0}}, f_full_zero_size, ONE, .no_gradcheck = 1},
    {"arange/f32", PD_OP_arange, 0, {{0}}, f_arange_f32, ONE, .no_gradcheck = 1},
    {"arange/negative_step", PD_OP_arange, 0, {{0}}, f_arange_neg_step, ONE, .no_gradcheck = 1},
    {"arange/i64", PD_OP_arange, 0, {{0}}, f_arange_i64, ONE, .no_gradcheck = 1},
    {"arange/i32_fractional_step", PD_OP_arange, 0, {{0}}, f_arange_i32_frac, ONE, .no_gradcheck = 1},
    {"arange/empty", PD_OP_arange, 0, {{0}}, f_arange_empty, ONE, .no_gradcheck = 1},
    {"arange/bf16_large", PD_OP_arange, 0, {{0}}, f_arange_bf16_big, ONE, .no_gradcheck = 1},
    {"linspace/f32", PD_OP_linspace, 0, {{0}}, f_linspace_f32, ONE, .no_gradcheck = 1},
    {"linspace/f64_odd", PD_OP_linspace, 0, {{0}}, f_linspace_f64_odd, ONE, .no_gradcheck = 1},
    {"linspace/num1", PD_OP_linspace, 0, {{0}}, f_linspace_num1, ONE, .no_gradcheck = 1},
    {"linspace/num0", PD_OP_linspace, 0, {{0}}, f_linspace_num0, ONE, .no_gradcheck = 1},
    {"linspace/i16", PD_OP_linspace, 0, {{0}}, f_linspace_i16, ONE, .no_gradcheck = 1},
    {"linspace/large", PD_OP_linspace, 0, {{0}}, f_linspace_big, ONE, .no_gradcheck = 1},
    {"eye/square", PD_OP_eye, 0, {{0}}, f_eye_sq, ONE, .no_gradcheck = 1},
    {"eye/wide_i64", PD_OP_eye, 0, {{0}}, f_eye_wide, ONE, .no_gradcheck = 1},
    {"eye/tall_bool", PD_OP_eye, 0, {{0}}, f_eye_tall, ONE, .no_gradcheck = 1},
    {"eye/zero_rows", PD_OP_eye, 0, {{0}}, f_eye_zero, ONE, .no_gradcheck = 1},
    {"arange/piece", PD_OP_arange, 0, {{0}}, f_arange_piece, ONE, .no_gradcheck = 1},
    {"linspace/piece", PD_OP_linspace, 0, {{0}}, f_linspace_piece, ONE, .no_gradcheck = 1},
    {"eye/piece", PD_OP_eye, 0, {{0}}, f_eye_piece, ONE, .no_gradcheck = 1},
    {"uniform/f32", PD_OP_uniform, 0, {{0}}, f_uniform_f32, ONE, .no_gradcheck = 1},
    {"uniform/bf16_large", PD_OP_uniform, 0, {{0}}, f_uniform_bf16_big, ONE, .no_gradcheck = 1},
    {"uniform/slice", PD_OP_uniform, 0, {{0}}, f_uniform_slice, ONE, .no_gradcheck = 1},
    {"normal/f64", PD_OP_normal, 0, {{0}}, f_normal_f64, ONE, .no_gradcheck = 1},
    {"normal/f32_large", PD_OP_normal, 0, {{0}}, f_normal_f32_big, ONE, .no_gradcheck = 1},
    {"normal/0d_f16", PD_OP_normal, 0, {{0}}, f_normal_0d, ONE, .no_gradcheck = 1},
    {"normal/slice", PD_OP_normal, 0, {{0}}, f_normal_slice, ONE, .no_gradcheck = 1},
    {"randint/i64", PD_OP_randint, 0, {{0}}, f_randint_i64, ONE, .no_gradcheck = 1},
    {"randint/u8_large", PD_OP_randint, 0, {{0}}, f_randint_u8_big, ONE, .no_gradcheck = 1},
    {"randint/zero_size", PD_OP_randint, 0, {{0}}, f_randint_empty, ONE, .no_gradcheck = 1},
    {"randint/slice", PD_OP_randint, 0, {{0}}, f_randint_slice, ONE, .no_gradcheck = 1},
    {"bernoulli/plain", PD_OP_bernoulli, 1, {OPT_FR(0, 1, 4, 6)}, f_bernoulli, OPT_DT_FLOW, .no_gradcheck = 1},
    {"bernoulli/transposed",
     PD_OP_bernoulli,
     1,
     {{OPT_SHAPE(7, 5), .lo = 0, .hi = 1, .layout = OPT_TRANSPOSED}},
     f_bernoulli,
     OPT_DT_FLOW,
     .no_gradcheck = 1},
    {"bernoulli/large", PD_OP_bernoulli, 1, {OPT_FR(0, 1, 70, 1001)}, f_bernoulli, OPT_DT_F, .no_gradcheck = 1},
    {"bernoulli/slice", PD_OP_bernoulli, 1, {OPT_FR(0, 1, 3, 2992)}, f_bernoulli_slice, OPT_DT_F, .no_gradcheck = 1},
    {"copy_/same_shape", PD_OP_copy_, 2, {OPT_F(3, 5), OPT_F(3, 5)}, f_copy, ALL, .no_gradcheck = 1},
    {"copy_/transposed_src", PD_OP_copy_, 2, {OPT_F(12, 10), OPT_FT(12, 10)}, f_copy, ALL, .no_gradcheck = 1},
    {"copy_/broadcast_src", PD_OP_copy_, 2, {OPT_F(4, 5), OPT_F(5)}, f_copy, ALL, .no_gradcheck = 1},
    {"copy_/strided_dst", PD_OP_copy_, 2, {OPT_F(3, 6), OPT_FS(3, 2)}, f_copy_strided_dst, ALL, .no_gradcheck = 1},
    {"copy_/zero_size", PD_OP_copy_, 2, {OPT_F(0, 4), OPT_F(0, 4)}, f_copy, OPT_DT_F, .no_gradcheck = 1},
    {"fill_/plain", PD_OP_fill_, 1, {OPT_F(3, 5)}, f_fill, ALL, .no_gradcheck = 1},
    {"fill_/zero", PD_OP_fill_, 1, {OPT_F(3, 5)}, f_fill_zero, ALL, .no_gradcheck = 1},
    {"fill_/transposed", PD_OP_fill_, 1, {OPT_F(40, 33)}, f_fill_strided, ALL, .no_gradcheck = 1},
};

int opt_rows_create(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
