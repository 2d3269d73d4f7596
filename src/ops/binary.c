/* paddle.c — broadcasting binary ops (add ... atan2, comparisons, logic,
 * where): public wrappers, infer functions and VJP rules.
 *
 * Invariants: kernels of this family always see inputs of one dtype
 * (where: a bool cond plus a and b of one dtype). The wrappers establish it
 * by casting with pd_cast to the result type; the infer functions check it,
 * so a direct pdi_call2 with mixed dtypes is an error, never a misread.
 *
 * Result type: pd_promote_types, refined like PyTorch's result_type so that
 * a 0-d tensor does not widen a dimensioned operand of the same or a higher
 * category (bool < integer < float): f32 [N] * f64 0-d stays f32, which is
 * what VJP rules and user code multiplying by pd_scalar(...) expect.
 * Integer / integer and atan2 of integers give f32 (true division).
 *
 * VJP rules use only public ops (so they are differentiable again) and
 * reduce each gradient back to its input's shape with pd_sum_to_shape.
 */
#include <string.h>

#include "core/internal.h"

/* ---- dtype rules ------------------------------------------------------ */
static int category(enum pd_dtype dt) { return dt == PD_BOOL ? 0 : pd_dtype_is_float(dt) ? 2 : 1; }

static enum pd_dtype result_type(const struct pd_tensor *a, const struct pd_tensor *b)
{
    if ((a->ndim == 0) != (b->ndim == 0)) {
        const struct pd_tensor *dim = a->ndim ? a : b, *zero = a->ndim ? b : a;
        if (category(zero->dtype) <= category(dim->dtype)) return dim->dtype;
    }
    return pd_promote_types(a->dtype, b->dtype);
}

static struct pd_tensor *as(struct pd_tensor *x, enum pd_dtype dt)
{
    return x->dtype == dt ? x : pd_cast(x, dt);
}

/* ---- infer ------------------------------------------------------------ */
static int check_same_dtype(const struct pdi_call *c, int i, int j)
{
    enum pd_dtype a = c->in[i]->dtype, b = c->in[j]->dtype;
    if (a != b)
        return pdi_errorf(PD_ERR_INVALID, "%s: inputs have dtypes %s and %s; the kernels need one dtype (pd_%s casts to the "
                          "promoted type)", pdi_ops[c->op].name, pd_dtype_name(a), pd_dtype_name(b), pdi_ops[c->op].name);
    return PD_OK;
}

int pdi_infer_binary(struct pdi_call *c)
{
    int rc = check_same_dtype(c, 0, 1);
    if (rc) return rc;
    enum pd_dtype dt = c->in[0]->dtype;
    unsigned accepted = pdi_ops[c->op].dtypes; /* the op table's dtype class */
    if (!(accepted & (1u << dt))) {
        const char *hint = accepted == PDI_DT_FLOATS ? " (pd_div/pd_atan2 cast integers to f32)" : "";
        return pdi_errorf(PD_ERR_INVALID, "%s: not defined for dtype %s%s", pdi_ops[c->op].name, pd_dtype_name(dt), hint);
    }
    return pdi_infer_broadcast(c);
}

int pdi_infer_compare(struct pdi_call *c)
{
    int rc = check_same_dtype(c, 0, 1);
    if (!rc) rc = pdi_infer_broadcast(c);
    if (rc) return rc;
    c->meta[0].dtype = PD_BOOL;
    return PD_OK;
}

int pdi_infer_where(struct pdi_call *c)
{
    if (c->in[0]->dtype != PD_BOOL)
        return pdi_errorf(PD_ERR_INVALID, "where: cond must be bool, got %s (pd_where casts it)",
                          pd_dtype_name(c->in[0]->dtype));
    int rc = check_same_dtype(c, 1, 2);
    if (!rc) rc = pdi_infer_broadcast(c);
    if (rc) return rc;
    c->meta[0].dtype = c->in[1]->dtype;
    return PD_OK;
}

/* ---- public wrappers -------------------------------------------------- */
/* float_out: integer (and bool) results are computed in f32 instead. */
static struct pd_tensor *binary(enum pd_op op, struct pd_tensor *a, struct pd_tensor *b, int float_out)
{
    if (!a || !b) return NULL;
    enum pd_dtype dt = result_type(a, b);
    if (float_out && !pd_dtype_is_float(dt)) dt = PD_F32;
    return pdi_call2(op, as(a, dt), as(b, dt), NULL);
}

struct pd_tensor *pd_add(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_add, a, b, 0); }
struct pd_tensor *pd_sub(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_sub, a, b, 0); }
struct pd_tensor *pd_mul(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_mul, a, b, 0); }
struct pd_tensor *pd_div(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_div, a, b, 1); }
struct pd_tensor *pd_pow(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_pow, a, b, 0); }
struct pd_tensor *pd_maximum(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_maximum, a, b, 0); }
struct pd_tensor *pd_minimum(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_minimum, a, b, 0); }
struct pd_tensor *pd_remainder(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_remainder, a, b, 0); }
struct pd_tensor *pd_floor_divide(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_floor_divide, a, b, 0); }
struct pd_tensor *pd_atan2(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_atan2, a, b, 1); }
struct pd_tensor *pd_eq(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_eq, a, b, 0); }
struct pd_tensor *pd_ne(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_ne, a, b, 0); }
struct pd_tensor *pd_lt(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_lt, a, b, 0); }
struct pd_tensor *pd_le(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_le, a, b, 0); }
struct pd_tensor *pd_gt(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_gt, a, b, 0); }
struct pd_tensor *pd_ge(struct pd_tensor *a, struct pd_tensor *b) { return binary(PD_OP_ge, a, b, 0); }

/* Logic only asks "nonzero?": equal dtypes go straight to the kernel (every
 * dtype has one); mixed dtypes are cast to bool rather than promoted, so no
 * value can round to zero on the way (f64 1e-300 -> f32 would). */
static struct pd_tensor *logical(enum pd_op op, struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b) return NULL;
    if (a->dtype != b->dtype) {
        a = as(a, PD_BOOL);
        b = as(b, PD_BOOL);
    }
    return pdi_call2(op, a, b, NULL);
}

struct pd_tensor *pd_logical_and(struct pd_tensor *a, struct pd_tensor *b) { return logical(PD_OP_logical_and, a, b); }
struct pd_tensor *pd_logical_or(struct pd_tensor *a, struct pd_tensor *b) { return logical(PD_OP_logical_or, a, b); }
struct pd_tensor *pd_logical_xor(struct pd_tensor *a, struct pd_tensor *b) { return logical(PD_OP_logical_xor, a, b); }

struct pd_tensor *pd_where(struct pd_tensor *cond, struct pd_tensor *a, struct pd_tensor *b)
{
    if (!cond || !a || !b) return NULL;
    enum pd_dtype dt = result_type(a, b);
    struct pd_tensor *in[3] = {as(cond, PD_BOOL), as(a, dt), as(b, dt)};
    return pdi_calln(PD_OP_where, in, 3, NULL);
}

/* ---- VJP rules (public ops only) -------------------------------------- */
/* gin[i] = g summed back to input i's shape (undoes broadcasting). */
static int reduce_to(struct pdi_node *n, int i, struct pd_tensor *g, struct pd_tensor **gin)
{
    if (!g) return pdi_status_of(NULL, __func__);
    gin[i] = pd_sum_to_shape(g, n->in_meta[i].shape, n->in_meta[i].ndim);
    return pdi_status_of(gin[i], __func__);
}

/* Saved input i, or NULL (error set) if it cannot be had. */
#define SAVED(var, i)                                          \
    struct pd_tensor *var = pdi_node_in(n, i);                 \
    if (!var) return pdi_status_of(NULL, "saved input")

static struct pd_tensor *scalar_like(const struct pd_tensor *t, double v)
{
    return t ? pd_scalar(v, t->dtype) : NULL;
}

int pdi_vjp_add(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int rc = PD_OK;
    if (pdi_node_needs(n, 0)) rc = reduce_to(n, 0, g[0], gin);
    if (!rc && pdi_node_needs(n, 1)) rc = reduce_to(n, 1, g[0], gin);
    return rc;
}

int pdi_vjp_sub(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int rc = PD_OK;
    if (pdi_node_needs(n, 0)) rc = reduce_to(n, 0, g[0], gin);
    if (!rc && pdi_node_needs(n, 1)) rc = reduce_to(n, 1, pd_neg(g[0]), gin);
    return rc;
}

/* (g * b, g * a) */
int pdi_vjp_mul(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int rc = PD_OK;
    if (pdi_node_needs(n, 0)) {
        SAVED(b, 1);
        rc = reduce_to(n, 0, pd_mul(g[0], b), gin);
    }
    if (!rc && pdi_node_needs(n, 1)) {
        SAVED(a, 0);
        rc = reduce_to(n, 1, pd_mul(g[0], a), gin);
    }
    return rc;
}

/* (g / b, -(g / b) * (a / b)) */
int pdi_vjp_div(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    SAVED(b, 1);
    struct pd_tensor *gb = pd_div(g[0], b);
    int rc = PD_OK;
    if (pdi_node_needs(n, 0)) rc = reduce_to(n, 0, gb, gin);
    if (!rc && pdi_node_needs(n, 1)) {
        SAVED(a, 0);
        rc = reduce_to(n, 1, pd_neg(pd_mul(gb, pd_div(a, b))), gin);
    }
    return rc;
}

/* d/da = g * b * a^(b-1), 0 where b == 0 (avoids 0 * inf at a == 0).
 * d/db = g * a^b * log(a) where a > 0, else 0 (PyTorch masks a == 0; we also
 * mask a < 0, where the real power is not differentiable in b). The log
 * reads a where()-guarded base so that its own derivative stays finite. */
int pdi_vjp_pow(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    SAVED(a, 0);
    SAVED(b, 1);
    struct pd_tensor *zero = scalar_like(a, 0.0), *one = scalar_like(a, 1.0);
    int rc = PD_OK;
    if (pdi_node_needs(n, 0)) {
        struct pd_tensor *d = pd_mul(g[0], pd_mul(b, pd_pow(a, pd_sub(b, one))));
        rc = reduce_to(n, 0, pd_where(pd_eq(b, zero), zero, d), gin);
    }
    if (!rc && pdi_node_needs(n, 1)) {
        struct pd_tensor *pos = pd_gt(a, zero);
        struct pd_tensor *loga = pd_log(pd_where(pos, a, one));
        struct pd_tensor *d = pd_mul(g[0], pd_mul(pd_pow(a, b), loga));
        rc = reduce_to(n, 1, pd_where(pos, d, zero), gin);
    }
    return rc;
}

/* Ties split the gradient half and half, like PyTorch. `wins` is gt for
 * maximum and lt for minimum: weight of a = 1 where a wins, 0.5 on ties. */
static int vjp_extremum(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin,
                        struct pd_tensor *(*wins)(struct pd_tensor *, struct pd_tensor *))
{
    SAVED(a, 0);
    SAVED(b, 1);
    struct pd_tensor *one = scalar_like(a, 1.0);
    struct pd_tensor *w = pd_where(wins(a, b), one, pd_where(pd_eq(a, b), scalar_like(a, 0.5), scalar_like(a, 0.0)));
    int rc = PD_OK;
    if (pdi_node_needs(n, 0)) rc = reduce_to(n, 0, pd_mul(g[0], w), gin);
    if (!rc && pdi_node_needs(n, 1)) rc = reduce_to(n, 1, pd_mul(g[0], pd_sub(one, w)), gin);
    return rc;
}

int pdi_vjp_maximum(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    return vjp_extremum(n, g, gin, pd_gt);
}

int pdi_vjp_minimum(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    return vjp_extremum(n, g, gin, pd_lt);
}

/* remainder(a, b) = a - b * floor(a / b): (g, -g * floor_divide(a, b)). */
int pdi_vjp_remainder(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int rc = PD_OK;
    if (pdi_node_needs(n, 0)) rc = reduce_to(n, 0, g[0], gin);
    if (!rc && pdi_node_needs(n, 1)) {
        SAVED(a, 0);
        SAVED(b, 1);
        rc = reduce_to(n, 1, pd_neg(pd_mul(g[0], pd_floor_divide(a, b))), gin);
    }
    return rc;
}

/* atan2(a, b): (g * b / (a^2 + b^2), -g * a / (a^2 + b^2)) */
int pdi_vjp_atan2(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    SAVED(a, 0);
    SAVED(b, 1);
    struct pd_tensor *den = pd_add(pd_mul(a, a), pd_mul(b, b));
    int rc = PD_OK;
    if (pdi_node_needs(n, 0)) rc = reduce_to(n, 0, pd_mul(g[0], pd_div(b, den)), gin);
    if (!rc && pdi_node_needs(n, 1)) rc = reduce_to(n, 1, pd_neg(pd_mul(g[0], pd_div(a, den))), gin);
    return rc;
}

/* (0 for cond, g where cond else 0, 0 where cond else g) */
int pdi_vjp_where(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int rc = PD_OK;
    if (pdi_node_needs(n, 0)) {
        gin[0] = pd_zeros(n->in_meta[0].shape, n->in_meta[0].ndim, n->in_meta[0].dtype);
        if (!gin[0]) return pd_last_status();
    }
    if (!pdi_node_needs(n, 1) && !pdi_node_needs(n, 2)) return PD_OK;
    SAVED(cond, 0);
    struct pd_tensor *zero = scalar_like(g[0], 0.0);
    if (pdi_node_needs(n, 1)) rc = reduce_to(n, 1, pd_where(cond, g[0], zero), gin);
    if (!rc && pdi_node_needs(n, 2)) rc = reduce_to(n, 2, pd_where(cond, zero, g[0]), gin);
    return rc;
}
