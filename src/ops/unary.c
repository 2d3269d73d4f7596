/* paddle.c — the unary elementwise family: public wrappers, infer functions
 * and VJP rules (rows in ops_unary.def).
 *
 * Dtype policy:
 *   - float ops (exp, log, tanh, gelu, ... — infer pdi_infer_float_same) see
 *     only f32/f64/f16/bf16. The public wrappers promote integer and bool
 *     inputs to f32 first (like PyTorch), so kernels never see integers;
 *     the infer rejects them for direct pdi_call users.
 *   - neg/abs/sign/square/relu/clip/scale/add_scalar/floor/ceil/round/trunc
 *     keep any numeric dtype (no bool kernels: "no kernel for dtype bool").
 *   - cast goes between every pair of the 10 dtypes; logical_not and the
 *     is* tests return bool for any input.
 *
 * VJP rules use public ops only, so they are differentiable again
 * (create_graph). The composite ops (gelu, silu, softplus, mish) have
 * decompositions into primitive ops (checked against the op by the
 * harness). Masks (x > 0, lo <= x <= hi, ...) are built from unary
 * ops under no_grad: sign(relu(x)) is 1 where x > 0 and 0 elsewhere, and
 * being computed without history it acts as a constant in higher orders.
 */
#include <math.h>
#include <string.h>

#include "core/internal.h"

/* ---- infer ----------------------------------------------------------- */
int pdi_infer_float_same(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    const char *name = pdi_ops[c->op].name;
    if (!pd_dtype_is_float(x->dtype))
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: expected a floating-point input (f32, f64, f16, bf16), got %s "
                          "(the public pd_%s promotes integers to f32)",
                          name, pd_dtype_name(x->dtype), name);
    if (c->op == PD_OP_gelu && c->a.gelu.approximate != 0 && c->a.gelu.approximate != 1)
        return pdi_errorf(PD_ERR_INVALID, "gelu: approximate must be 0 (erf) or 1 (tanh), got %lld",
                          (long long)c->a.gelu.approximate);
    const struct pdi_attrs_softplus *sp = &c->a.softplus;
    if (c->op == PD_OP_softplus && (sp->beta == 0 || !isfinite(sp->beta) || isnan(sp->threshold)))
        return pdi_errorf(PD_ERR_INVALID, "softplus: beta must be finite and non-zero and threshold not NaN, got "
                          "beta %g, threshold %g", sp->beta, sp->threshold);
    pdi_meta_of(x, &c->meta[0]);
    return PD_OK;
}

int pdi_infer_bool(struct pdi_call *c)
{
    pdi_meta_of(c->in[0], &c->meta[0]);
    c->meta[0].dtype = PD_BOOL;
    return PD_OK;
}

int pdi_infer_cast(struct pdi_call *c)
{
    int64_t dt = c->a.cast.dtype;
    if (dt < 0 || dt >= PD_DTYPE_COUNT)
        return pdi_errorf(PD_ERR_INVALID, "cast: target dtype %lld is not a valid dtype (0..%d)", (long long)dt,
                          PD_DTYPE_COUNT - 1);
    pdi_meta_of(c->in[0], &c->meta[0]);
    c->meta[0].dtype = (enum pd_dtype)dt;
    return PD_OK;
}

/* ---- helpers for VJP rules ------------------------------------------- */
#define RET_GIN(t)                                   \
    do {                                             \
        gin[0] = (t);                                \
        return gin[0] ? PD_OK : pd_last_status();    \
    } while (0)

/* 1 where x > 0, else 0, in x's dtype; no history (a constant). */
static struct pd_tensor *pos_mask(struct pd_tensor *x)
{
    int prev = pd_no_grad_begin();
    struct pd_tensor *m = pd_sign(pd_relu(x));
    pd_grad_mode_end(prev);
    return m;
}

/* 1 - m */
static struct pd_tensor *one_minus(struct pd_tensor *m) { return pd_add_scalar(pd_neg(m), 1.0); }

/* g * d */
static struct pd_tensor *gmul(struct pd_tensor *g, struct pd_tensor *d) { return pd_mul(g, d); }

/* ---- VJP rules ------------------------------------------------------- */
int pdi_vjp_neg(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    PDI_UNUSED(n);
    RET_GIN(pd_neg(g[0]));
}

int pdi_vjp_abs(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    /* sign is NONDIFF: a constant in higher orders (PyTorch: sgn(x)). */
    RET_GIN(gmul(g[0], pd_sign(pdi_node_in(n, 0))));
}

int pdi_vjp_exp(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(gmul(g[0], pdi_node_out(n, 0)));
}

int pdi_vjp_expm1(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(gmul(g[0], pd_add_scalar(pdi_node_out(n, 0), 1.0)));
}

int pdi_vjp_log(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(pd_div(g[0], pdi_node_in(n, 0)));
}

int pdi_vjp_log1p(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(pd_div(g[0], pd_add_scalar(pdi_node_in(n, 0), 1.0)));
}

int pdi_vjp_log2(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(pd_div(g[0], pd_scale(pdi_node_in(n, 0), M_LN2)));
}

int pdi_vjp_sqrt(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    /* d sqrt(x) = 1 / (2 y) */
    RET_GIN(pd_div(pd_scale(g[0], 0.5), pdi_node_out(n, 0)));
}

int pdi_vjp_rsqrt(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    /* d x^-1/2 = -1/2 x^-3/2 = -1/2 y^3 */
    struct pd_tensor *y = pdi_node_out(n, 0);
    RET_GIN(gmul(g[0], pd_scale(pd_mul(y, pd_square(y)), -0.5)));
}

int pdi_vjp_square(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(gmul(g[0], pd_scale(pdi_node_in(n, 0), 2.0)));
}

int pdi_vjp_reciprocal(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(gmul(pd_neg(g[0]), pd_square(pdi_node_out(n, 0))));
}

int pdi_vjp_sin(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(gmul(g[0], pd_cos(pdi_node_in(n, 0))));
}

int pdi_vjp_cos(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(gmul(pd_neg(g[0]), pd_sin(pdi_node_in(n, 0))));
}

int pdi_vjp_tan(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(gmul(g[0], pd_add_scalar(pd_square(pdi_node_out(n, 0)), 1.0)));
}

int pdi_vjp_tanh(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(gmul(g[0], one_minus(pd_square(pdi_node_out(n, 0)))));
}

int pdi_vjp_sigmoid(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *y = pdi_node_out(n, 0);
    RET_GIN(gmul(g[0], pd_mul(y, one_minus(y))));
}

int pdi_vjp_relu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(gmul(g[0], pos_mask(pdi_node_in(n, 0))));
}

int pdi_vjp_leaky_relu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    /* slope + (1 - slope) * [x > 0] */
    double s = n->a.leaky_relu.negative_slope;
    RET_GIN(gmul(g[0], pd_add_scalar(pd_scale(pos_mask(pdi_node_in(n, 0)), 1.0 - s), s)));
}

int pdi_vjp_elu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    /* [x > 0] + [x <= 0] * alpha * exp(x * [x <= 0]); the exp argument is
     * masked so that large positive x cannot overflow. */
    struct pd_tensor *x = pdi_node_in(n, 0);
    struct pd_tensor *pos = pos_mask(x), *negm = one_minus(pos);
    struct pd_tensor *e = pd_scale(pd_exp(pd_mul(x, negm)), n->a.elu.alpha);
    RET_GIN(gmul(g[0], pd_add(pos, pd_mul(negm, e))));
}

int pdi_vjp_gelu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0), *d;
    if (n->a.gelu.approximate == 0) {
        /* Phi(x) + x phi(x) */
        struct pd_tensor *cdf = pd_add_scalar(pd_scale(pd_erf(pd_scale(x, M_SQRT1_2)), 0.5), 0.5);
        struct pd_tensor *pdf = pd_scale(pd_exp(pd_scale(pd_square(x), -0.5)), 0.5 * M_2_SQRTPI * M_SQRT1_2);
        d = pd_add(cdf, pd_mul(x, pdf));
    } else {
        /* y = x/2 (1 + t), t = tanh(k (x + c x^3)):
         * dy = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 c x^2) */
        const double k = M_2_SQRTPI * M_SQRT1_2, c = 0.044715;
        struct pd_tensor *x2 = pd_square(x);
        struct pd_tensor *t = pd_tanh(pd_scale(pd_add(x, pd_scale(pd_mul(x, x2), c)), k));
        struct pd_tensor *a = pd_add_scalar(pd_scale(t, 0.5), 0.5);
        struct pd_tensor *b = pd_mul(pd_mul(x, one_minus(pd_square(t))), pd_add_scalar(pd_scale(x2, 3 * c), 1.0));
        d = pd_add(a, pd_scale(b, 0.5 * k));
    }
    RET_GIN(gmul(g[0], d));
}

int pdi_vjp_silu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    /* s (1 + x (1 - s)) */
    struct pd_tensor *x = pdi_node_in(n, 0), *s = pd_sigmoid(x);
    RET_GIN(gmul(g[0], pd_mul(s, pd_add_scalar(pd_mul(x, one_minus(s)), 1.0))));
}

int pdi_vjp_softplus(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    /* sigmoid(beta x) where beta x <= threshold, 1 where it is linear. */
    double beta = n->a.softplus.beta, thr = n->a.softplus.threshold;
    struct pd_tensor *x = pdi_node_in(n, 0);
    struct pd_tensor *bx = pd_scale(x, beta);
    struct pd_tensor *lin = pos_mask(pd_add_scalar(bx, -thr));
    struct pd_tensor *s = pd_sigmoid(bx);
    RET_GIN(gmul(g[0], pd_add(pd_mul(s, one_minus(lin)), lin)));
}

int pdi_vjp_mish(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    /* tanh(sp) + x (1 - tanh(sp)^2) sigmoid(x), sp = softplus(x) */
    struct pd_tensor *x = pdi_node_in(n, 0);
    struct pd_tensor *t = pd_tanh(pd_softplus(x, 1.0, 20.0));
    struct pd_tensor *d = pd_add(t, pd_mul(pd_mul(x, one_minus(pd_square(t))), pd_sigmoid(x)));
    RET_GIN(gmul(g[0], d));
}

int pdi_vjp_erf(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0);
    RET_GIN(gmul(g[0], pd_scale(pd_exp(pd_neg(pd_square(x))), M_2_SQRTPI)));
}

int pdi_vjp_clip(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    /* Gradient flows where lo <= x <= hi (inclusive, like PyTorch):
     * relu(1 - [lo - x > 0] - [x - hi > 0]). */
    double lo = n->a.clip.lo, hi = n->a.clip.hi;
    struct pd_tensor *x = pdi_node_in(n, 0);
    int prev = pd_no_grad_begin();
    struct pd_tensor *below = pos_mask(pd_add_scalar(pd_neg(x), lo));
    struct pd_tensor *above = pos_mask(pd_add_scalar(x, -hi));
    struct pd_tensor *m = pd_relu(one_minus(pd_add(below, above)));
    pd_grad_mode_end(prev);
    RET_GIN(gmul(g[0], m));
}

int pdi_vjp_pow_scalar(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    double p = n->a.pow_scalar.exponent;
    struct pd_tensor *x = pdi_node_in(n, 0);
    if (p == 0) RET_GIN(x ? pd_zeros_like(x) : NULL);
    RET_GIN(gmul(g[0], pd_scale(pd_pow_scalar(x, p - 1.0), p)));
}

int pdi_vjp_scale(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    RET_GIN(pd_scale(g[0], n->a.scale.s));
}

int pdi_vjp_add_scalar(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    PDI_UNUSED(n);
    gin[0] = g[0];
    return PD_OK;
}

int pdi_vjp_cast(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    /* The gradient goes back to the input's dtype (only float inputs can
     * require grad; an integer output's gradient is zeros). */
    enum pd_dtype dt = n->in_meta[0].dtype;
    if (!pd_dtype_is_float(dt)) return PD_OK;
    RET_GIN(pd_cast(g[0], dt));
}

/* ---- decompositions (primitive public ops only) ---------------------- */
/* f16/bf16 inputs are computed in f32 and rounded once at the end, as the
 * kernels do; f32 and f64 in their own dtype. */
static struct pd_tensor *decomp_in(struct pd_tensor *x)
{
    return x->dtype == PD_F16 || x->dtype == PD_BF16 ? pd_cast(x, PD_F32) : x;
}

static int decomp_out(struct pd_tensor *y, enum pd_dtype dt, struct pd_tensor **out)
{
    out[0] = y && y->dtype != dt ? pd_cast(y, dt) : y;
    return pdi_status_of(out[0], "decomposition");
}

/* log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): exp never overflows. */
static struct pd_tensor *softplus1(struct pd_tensor *x)
{
    return pd_add(pd_relu(x), pd_log1p(pd_exp(pd_neg(pd_abs(x)))));
}

int pdi_decomp_gelu(const struct pdi_call *c, struct pd_tensor **out)
{
    struct pd_tensor *x = decomp_in(c->in[0]), *y;
    if (c->a.gelu.approximate == 0) {
        /* x/2 (1 + erf(x / sqrt(2))) */
        y = pd_mul(pd_scale(x, 0.5), pd_add_scalar(pd_erf(pd_scale(x, M_SQRT1_2)), 1.0));
    } else {
        /* x/2 (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3):
         * the sigmoid form has no cancellation in the negative tail */
        struct pd_tensor *u = pd_add(x, pd_scale(pd_mul(x, pd_square(x)), 0.044715));
        y = pd_mul(x, pd_sigmoid(pd_scale(u, 2.0 * M_2_SQRTPI * M_SQRT1_2)));
    }
    return decomp_out(y, c->in[0]->dtype, out);
}

int pdi_decomp_silu(const struct pdi_call *c, struct pd_tensor **out)
{
    struct pd_tensor *x = decomp_in(c->in[0]);
    return decomp_out(pd_mul(x, pd_sigmoid(x)), c->in[0]->dtype, out);
}

/* softplus1(beta x) / beta, and x itself where beta x > threshold. */
int pdi_decomp_softplus(const struct pdi_call *c, struct pd_tensor **out)
{
    double beta = c->a.softplus.beta, thr = c->a.softplus.threshold;
    struct pd_tensor *x = decomp_in(c->in[0]);
    struct pd_tensor *bx = pd_scale(x, beta);
    struct pd_tensor *linear = bx ? pd_gt(bx, pd_scalar(thr, bx->dtype)) : NULL;
    return decomp_out(pd_where(linear, x, pd_scale(softplus1(bx), 1.0 / beta)), c->in[0]->dtype, out);
}

/* x tanh(softplus(x)) */
int pdi_decomp_mish(const struct pdi_call *c, struct pd_tensor **out)
{
    struct pd_tensor *x = decomp_in(c->in[0]);
    return decomp_out(pd_mul(x, pd_tanh(softplus1(x))), c->in[0]->dtype, out);
}

/* ---- public wrappers ------------------------------------------------- */
static struct pd_tensor *un(enum pd_op op, struct pd_tensor *x, const struct pdi_attrs *a)
{
    return pdi_call1(op, x, a);
}

/* Float ops: integer and bool inputs are promoted to f32 first. */
static struct pd_tensor *unf(enum pd_op op, struct pd_tensor *x, const struct pdi_attrs *a)
{
    if (!x) return NULL;
    if (!pd_dtype_is_float(x->dtype)) {
        x = pd_cast(x, PD_F32);
        if (!x) return NULL;
    }
    return pdi_call1(op, x, a);
}

struct pd_tensor *pd_neg(struct pd_tensor *x) { return un(PD_OP_neg, x, NULL); }
struct pd_tensor *pd_abs(struct pd_tensor *x) { return un(PD_OP_abs, x, NULL); }
struct pd_tensor *pd_sign(struct pd_tensor *x) { return un(PD_OP_sign, x, NULL); }
struct pd_tensor *pd_exp(struct pd_tensor *x) { return unf(PD_OP_exp, x, NULL); }
struct pd_tensor *pd_expm1(struct pd_tensor *x) { return unf(PD_OP_expm1, x, NULL); }
struct pd_tensor *pd_log(struct pd_tensor *x) { return unf(PD_OP_log, x, NULL); }
struct pd_tensor *pd_log1p(struct pd_tensor *x) { return unf(PD_OP_log1p, x, NULL); }
struct pd_tensor *pd_log2(struct pd_tensor *x) { return unf(PD_OP_log2, x, NULL); }
struct pd_tensor *pd_sqrt(struct pd_tensor *x) { return unf(PD_OP_sqrt, x, NULL); }
struct pd_tensor *pd_rsqrt(struct pd_tensor *x) { return unf(PD_OP_rsqrt, x, NULL); }
struct pd_tensor *pd_square(struct pd_tensor *x) { return un(PD_OP_square, x, NULL); }
struct pd_tensor *pd_reciprocal(struct pd_tensor *x) { return unf(PD_OP_reciprocal, x, NULL); }
struct pd_tensor *pd_sin(struct pd_tensor *x) { return unf(PD_OP_sin, x, NULL); }
struct pd_tensor *pd_cos(struct pd_tensor *x) { return unf(PD_OP_cos, x, NULL); }
struct pd_tensor *pd_tan(struct pd_tensor *x) { return unf(PD_OP_tan, x, NULL); }
struct pd_tensor *pd_tanh(struct pd_tensor *x) { return unf(PD_OP_tanh, x, NULL); }
struct pd_tensor *pd_sigmoid(struct pd_tensor *x) { return unf(PD_OP_sigmoid, x, NULL); }
struct pd_tensor *pd_relu(struct pd_tensor *x) { return un(PD_OP_relu, x, NULL); }

struct pd_tensor *pd_leaky_relu(struct pd_tensor *x, double negative_slope)
{
    struct pdi_attrs a = {.leaky_relu = {.negative_slope = negative_slope}};
    return unf(PD_OP_leaky_relu, x, &a);
}

struct pd_tensor *pd_elu(struct pd_tensor *x, double alpha)
{
    struct pdi_attrs a = {.elu = {.alpha = alpha}};
    return unf(PD_OP_elu, x, &a);
}

struct pd_tensor *pd_gelu(struct pd_tensor *x, int approximate)
{
    struct pdi_attrs a = {.gelu = {.approximate = approximate}};
    return unf(PD_OP_gelu, x, &a);
}

struct pd_tensor *pd_silu(struct pd_tensor *x) { return unf(PD_OP_silu, x, NULL); }

struct pd_tensor *pd_softplus(struct pd_tensor *x, double beta, double threshold)
{
    struct pdi_attrs a = {.softplus = {.beta = beta, .threshold = threshold}};
    return unf(PD_OP_softplus, x, &a);
}

struct pd_tensor *pd_mish(struct pd_tensor *x) { return unf(PD_OP_mish, x, NULL); }
struct pd_tensor *pd_erf(struct pd_tensor *x) { return unf(PD_OP_erf, x, NULL); }
struct pd_tensor *pd_floor(struct pd_tensor *x) { return un(PD_OP_floor, x, NULL); }
struct pd_tensor *pd_ceil(struct pd_tensor *x) { return un(PD_OP_ceil, x, NULL); }
struct pd_tensor *pd_round(struct pd_tensor *x) { return un(PD_OP_round, x, NULL); }
struct pd_tensor *pd_trunc(struct pd_tensor *x) { return un(PD_OP_trunc, x, NULL); }

struct pd_tensor *pd_clip(struct pd_tensor *x, double lo, double hi)
{
    if (!x) return NULL;
    if (isnan(lo) || isnan(hi)) return pdi_error(PD_ERR_INVALID, "clip: bounds must not be NaN (got %g, %g)", lo, hi);
    struct pdi_attrs a = {.clip = {.lo = lo, .hi = hi}};
    return un(PD_OP_clip, x, &a);
}

struct pd_tensor *pd_pow_scalar(struct pd_tensor *x, double exponent)
{
    struct pdi_attrs a = {.pow_scalar = {.exponent = exponent}};
    return unf(PD_OP_pow_scalar, x, &a);
}

struct pd_tensor *pd_scale(struct pd_tensor *x, double s)
{
    struct pdi_attrs a = {.scale = {.s = s}};
    return un(PD_OP_scale, x, &a);
}

struct pd_tensor *pd_add_scalar(struct pd_tensor *x, double s)
{
    struct pdi_attrs a = {.add_scalar = {.value = s}};
    return un(PD_OP_add_scalar, x, &a);
}

struct pd_tensor *pd_cast(struct pd_tensor *x, enum pd_dtype dt)
{
    if (!x) return NULL;
    if (x->dtype == dt) {
        /* like PyTorch's .to(): the same tensor, one more owner in this scope */
        pd_tensor_retain(x);
        return pdi_scope_add(x);
    }
    struct pdi_attrs a = {.cast = {.dtype = dt}};
    return un(PD_OP_cast, x, &a);
}

struct pd_tensor *pd_logical_not(struct pd_tensor *x) { return un(PD_OP_logical_not, x, NULL); }
struct pd_tensor *pd_isnan(struct pd_tensor *x) { return un(PD_OP_isnan, x, NULL); }
struct pd_tensor *pd_isinf(struct pd_tensor *x) { return un(PD_OP_isinf, x, NULL); }
struct pd_tensor *pd_isfinite(struct pd_tensor *x) { return un(PD_OP_isfinite, x, NULL); }
