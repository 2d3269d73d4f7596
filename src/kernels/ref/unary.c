/* paddle.c — reference kernels of the unary family: the oracle.
 *
 * Naive and obviously correct, never optimised: one element at a time
 * through pdi_kview_ptr (any strides). Floats are computed in double with
 * libm and rounded once into the output dtype by pdi_store. Integers are
 * computed exactly in int64 and wrap on store (neg(int8 -128) = -128, like
 * PyTorch), except scale/add_scalar by a non-integral scalar and clip
 * bounds, which go through double (truncate toward zero, saturate).
 * cast: integer/bool <-> integer/bool exactly (wrapping, bool is != 0);
 * anything involving a float through double (float -> int truncates toward
 * zero and saturates, NaN -> 0).
 */
#include <math.h>
#include <string.h>

#include "core/kernel.h"
#include "kernels/common.h"

/* ---- the float semantics, in double ---------------------------------- */
double pdi_unary_ref_op(enum pd_op op, double v, const struct pdi_attrs *a)
{
    switch (op) {
    case PD_OP_neg: return -v;
    case PD_OP_abs: return fabs(v);
    case PD_OP_sign: return v > 0 ? 1.0 : v < 0 ? -1.0 : v; /* keeps +-0 and NaN */
    case PD_OP_exp: return exp(v);
    case PD_OP_expm1: return expm1(v);
    case PD_OP_log: return log(v);
    case PD_OP_log1p: return log1p(v);
    case PD_OP_log2: return log2(v);
    case PD_OP_sqrt: return sqrt(v);
    case PD_OP_rsqrt: return 1.0 / sqrt(v);
    case PD_OP_square: return v * v;
    case PD_OP_reciprocal: return 1.0 / v;
    case PD_OP_sin: return sin(v);
    case PD_OP_cos: return cos(v);
    case PD_OP_tan: return tan(v);
    case PD_OP_tanh: return tanh(v);
    case PD_OP_sigmoid: return 1.0 / (1.0 + exp(-v));
    case PD_OP_relu: return v > 0 || isnan(v) ? v : 0.0;
    case PD_OP_leaky_relu: return v > 0 ? v : v * a->leaky_relu.negative_slope;
    case PD_OP_elu: return v > 0 ? v : a->elu.alpha * expm1(v);
    case PD_OP_gelu:
        if (a->gelu.approximate == 0) return 0.5 * v * erfc(-v * M_SQRT1_2);
        /* PyTorch's x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written
         * as x / (1 + exp(-2u)) (the same function) to avoid 1 + tanh(u)
         * cancelling for negative x */
        return v / (1.0 + exp(-2.0 * M_2_SQRTPI * M_SQRT1_2 * (v + 0.044715 * v * v * v)));
    case PD_OP_silu: return v / (1.0 + exp(-v));
    case PD_OP_softplus: {
        double beta = a->softplus.beta, bv = beta * v;
        return bv > a->softplus.threshold ? v : log1p(exp(bv)) / beta;
    }
    case PD_OP_mish: return v * tanh(log1p(exp(v)));
    case PD_OP_erf: return erf(v);
    case PD_OP_floor: return floor(v);
    case PD_OP_ceil: return ceil(v);
    case PD_OP_round: return nearbyint(v); /* default mode: half to even */
    case PD_OP_trunc: return trunc(v);
    case PD_OP_clip: {
        double lo = a->clip.lo, hi = a->clip.hi;
        double r = v < lo ? lo : v;
        return r > hi ? hi : r; /* lo > hi gives hi, like PyTorch */
    }
    case PD_OP_pow_scalar: return pow(v, a->pow_scalar.exponent);
    case PD_OP_scale: return v * a->scale.s;
    case PD_OP_add_scalar: return v + a->add_scalar.value;
    case PD_OP_logical_not: return v == 0;
    case PD_OP_isnan: return isnan(v);
    case PD_OP_isinf: return isinf(v);
    case PD_OP_isfinite: return isfinite(v);
    default: return NAN;
    }
}

/* Floats (and every dtype for the bool-valued ops: exact for those). */
static int ref_float(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int64_t n = pdi_kview_numel(y);
    for (int64_t i = 0; i < n; i++)
        pdi_store(pdi_kview_ptr(y, i), y->dtype, pdi_unary_ref_op(k->op, pdi_load(pdi_kview_ptr(x, i), x->dtype), k->a));
    return PD_OK;
}

static void int_range(enum pd_dtype dt, double *lo, double *hi)
{
    switch (dt) {
    case PD_I8: *lo = -128; *hi = 127; break;
    case PD_U8: *lo = 0; *hi = 255; break;
    case PD_I16: *lo = -32768; *hi = 32767; break;
    case PD_I32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    default: *lo = -9223372036854775808.0; *hi = 9223372036854774784.0; break;
    }
}

/* Wrapping int64 arithmetic without undefined behaviour. */
static int64_t wrap(uint64_t u) { int64_t r; memcpy(&r, &u, sizeof r); return r; }

/* Is s an integer small enough that x*s / x+s can be done in int64? */
static int integral_scalar(double s) { return s == floor(s) && fabs(s) <= 0x1p62; }

static int ref_int(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int64_t n = pdi_kview_numel(y);
    double s = k->op == PD_OP_scale ? k->a->scale.s : k->op == PD_OP_add_scalar ? k->a->add_scalar.value : 0;
    double dlo, dhi;
    int_range(y->dtype, &dlo, &dhi);
    /* clip bounds: the nearest integers inside [lo, hi], within the dtype */
    double clo = 0, chi = 0;
    if (k->op == PD_OP_clip) {
        clo = fmin(fmax(ceil(k->a->clip.lo), dlo), dhi);
        chi = fmax(fmin(floor(k->a->clip.hi), dhi), dlo);
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t v = pdi_load_int(pdi_kview_ptr(x, i), x->dtype), r = v;
        char *out = pdi_kview_ptr(y, i);
        switch (k->op) {
        case PD_OP_neg: r = wrap(0u - (uint64_t)v); break;
        case PD_OP_abs: r = v < 0 ? wrap(0u - (uint64_t)v) : v; break;
        case PD_OP_sign: r = (v > 0) - (v < 0); break;
        case PD_OP_square: r = wrap((uint64_t)v * (uint64_t)v); break;
        case PD_OP_relu: r = v > 0 ? v : 0; break;
        case PD_OP_clip:
            r = (double)v < clo ? (int64_t)clo : v;
            r = (double)r > chi ? (int64_t)chi : r;
            break;
        case PD_OP_scale:
        case PD_OP_add_scalar:
            if (!integral_scalar(s)) {
                pdi_store(out, y->dtype, k->op == PD_OP_scale ? (double)v * s : (double)v + s);
                continue;
            }
            r = k->op == PD_OP_scale ? wrap((uint64_t)v * (uint64_t)(int64_t)s) : wrap((uint64_t)v + (uint64_t)(int64_t)s);
            break;
        default: break; /* floor, ceil, round, trunc: identity on integers */
        }
        pdi_store_int(out, y->dtype, r);
    }
    return PD_OK;
}

/* ---- cast ------------------------------------------------------------ */
static int ref_cast(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int64_t n = pdi_kview_numel(y);
    int exact = !pd_dtype_is_float(x->dtype) && !pd_dtype_is_float(y->dtype);
    for (int64_t i = 0; i < n; i++) {
        const char *p = pdi_kview_ptr(x, i);
        char *q = pdi_kview_ptr(y, i);
        if (exact) pdi_store_int(q, y->dtype, pdi_load_int(p, x->dtype));
        else pdi_store(q, y->dtype, pdi_load(p, x->dtype));
    }
    return PD_OK;
}

/* From the op table's dtypes column: the float formula on float dtypes, the
 * exact integer one on integer dtypes; the tests read every dtype through
 * double (exact for them); cast has its own kernel. */
void pdi_register_ref_unary(void)
{
    for (size_t i = 0; i < PDI_COUNT_OF(pdi_unary_ops); i++) {
        enum pd_op op = pdi_unary_ops[i];
        if (op == PD_OP_cast) pdi_register_by_class(PDI_BACKEND_REF, op, ref_cast, ref_cast, ref_cast);
        else if (pdi_unary_is_test(op)) pdi_register_by_class(PDI_BACKEND_REF, op, ref_float, ref_float, ref_float);
        else pdi_register_by_class(PDI_BACKEND_REF, op, ref_float, ref_int, NULL);
    }
}
