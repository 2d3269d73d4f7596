/* paddle.c — reduction ops: public wrappers, infer-meta, VJP rules and the
 * decompositions of the composite reductions (mean, var, std, logsumexp,
 * norm).
 *
 * Attributes (see ops_reduce.def): every reduction's set starts with axes
 * (empty: all axes) and keepdim, read through the reduce set (c->a.reduce)
 * by the shared code; var/std add correction, norm adds p; the scans have
 * their own set (axis, reverse). The infer functions validate axes through
 * pdi_axes_mask and are the only place that decides output dtypes; kernels
 * trust them.
 *
 * Choice: mean/var/std/logsumexp/norm are defined on floats only; their
 * public wrappers cast integer and bool input to f32 first (a call through
 * the op table with an integer tensor is an error).
 *
 * VJP rules use public ops only, so they are differentiable again. Exactness
 * notes: prod and cumprod have exact derivatives of every order with zeros
 * in the input (no division by x in a recorded rule; see pdi_vjp_prod and
 * cumprod_vjp_dense). max/min route the gradient to the returned index;
 * amax/amin (and norm p=inf) split it evenly among ties, as PyTorch does.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

/* ---- shared helpers -------------------------------------------------- */
static int64_t mask_count(const int64_t *shape, int ndim, unsigned mask)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        if (mask & (1u << d)) n *= shape[d];
    return n;
}

static const char *axes_str(const struct pdi_ints *axes, char *buf, size_t n)
{
    if (axes->n == 0) { snprintf(buf, n, "all"); return buf; }
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < axes->n && k + 24 < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "[", (long long)axes->v[i]);
    snprintf(buf + k, n - k, "]");
    return buf;
}

/* Fill meta[0..n_out-1] with the reduced shape and dtype dt (indices of
 * max/min are int64). nonempty: the op has no identity element. */
static int reduce_meta(struct pdi_call *c, enum pd_dtype dt, int nonempty)
{
    const struct pd_tensor *x = c->in[0];
    unsigned mask;
    if (pdi_axes_mask(c, x, &mask)) return PD_ERR_INVALID;
    if (nonempty && mask_count(x->shape, x->ndim, mask) == 0) {
        char b0[PDI_SHAPE_BUF], b1[64];
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: cannot reduce %s over axes %s: the reduced set is empty and %s has no identity "
                          "(reduce over non-empty axes)",
                          pdi_ops[c->op].name, pdi_shape_str(x->shape, x->ndim, b0, sizeof b0),
                          axes_str(&c->a.reduce.axes, b1, sizeof b1), pdi_ops[c->op].name);
    }
    int keep = c->a.reduce.keepdim != 0;
    struct pdi_meta m = {.dtype = dt};
    for (int d = 0; d < x->ndim; d++) {
        if (!(mask & (1u << d))) m.shape[m.ndim++] = x->shape[d];
        else if (keep) m.shape[m.ndim++] = 1;
    }
    for (int j = 0; j < c->n_out; j++) {
        c->meta[j] = m;
        if (j > 0) c->meta[j].dtype = PD_I64;
    }
    return PD_OK;
}

static enum pd_dtype accum_dtype(enum pd_dtype dt) { return pd_dtype_is_float(dt) ? dt : PD_I64; }

/* ---- infer ----------------------------------------------------------- */
/* sum, prod (integers -> int64), amax, amin (same dtype, non-empty). */
int pdi_infer_reduce(struct pdi_call *c)
{
    enum pd_dtype dt = c->in[0]->dtype;
    if (c->op == PD_OP_sum || c->op == PD_OP_prod) return reduce_meta(c, accum_dtype(dt), 0);
    return reduce_meta(c, dt, 1);
}

/* mean, var, std, logsumexp, norm. */
int pdi_infer_reduce_float(struct pdi_call *c)
{
    const char *name = pdi_ops[c->op].name;
    enum pd_dtype dt = c->in[0]->dtype;
    if (!pd_dtype_is_float(dt))
        return pdi_errorf(PD_ERR_INVALID, "%s: expects a floating-point tensor, got %s (pd_%s casts to f32 first)",
                          name, pd_dtype_name(dt), name);
    if (c->op == PD_OP_norm) {
        double p = c->a.reduce_norm.p;
        if (isnan(p)) return pdi_errorf(PD_ERR_INVALID, "norm: p must be a number or +-inf, got nan");
        if (p == -INFINITY) return reduce_meta(c, dt, 1); /* min |x| has no identity */
    }
    if ((c->op == PD_OP_var || c->op == PD_OP_std) && c->a.reduce_var.correction < 0)
        return pdi_errorf(PD_ERR_INVALID, "%s: correction must be >= 0, got %lld", name,
                          (long long)c->a.reduce_var.correction);
    return reduce_meta(c, dt, 0);
}

/* argmax, argmin: one axis or all (flattened index). */
int pdi_infer_reduce_index(struct pdi_call *c)
{
    if (c->a.reduce.axes.n > 1)
        return pdi_errorf(PD_ERR_INVALID, "%s: takes one axis (or none for the flattened tensor), got %d",
                          pdi_ops[c->op].name, (int)c->a.reduce.axes.n);
    if (c->in[0]->dtype == PD_BOOL)
        return pdi_errorf(PD_ERR_INVALID, "%s: bool input is not supported (cast it first)", pdi_ops[c->op].name);
    return reduce_meta(c, PD_I64, 1);
}

/* max, min along one axis: values and int64 indices. */
int pdi_infer_reduce_index2(struct pdi_call *c)
{
    if (c->a.reduce.axes.n != 1)
        return pdi_errorf(PD_ERR_INVALID, "%s: takes exactly one axis, got %d", pdi_ops[c->op].name,
                          (int)c->a.reduce.axes.n);
    if (c->in[0]->dtype == PD_BOOL)
        return pdi_errorf(PD_ERR_INVALID, "%s: bool input is not supported (cast it first)", pdi_ops[c->op].name);
    return reduce_meta(c, c->in[0]->dtype, 1);
}

/* all, any. */
int pdi_infer_reduce_bool(struct pdi_call *c) { return reduce_meta(c, PD_BOOL, 0); }

/* cumsum, cumprod: same shape; integers -> int64. */
int pdi_infer_scan(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    int64_t ax = c->a.scan.axis;
    if (x->ndim == 0 ? ax != 0 : (ax < 0 || ax >= x->ndim))
        return pdi_errorf(PD_ERR_INVALID, "%s: axis %lld out of range for a %d-d tensor", pdi_ops[c->op].name,
                          (long long)ax, x->ndim);
    pdi_meta_of(x, &c->meta[0]);
    c->meta[0].dtype = accum_dtype(x->dtype);
    return PD_OK;
}

/* ---- public wrappers ------------------------------------------------- */
static int fill_axes(const char *op, struct pdi_ints *l, const int *axes, int n_axes)
{
    if (n_axes < 0 || n_axes > PDI_MAX_ATTR_INTS)
        return pdi_errorf(PD_ERR_INVALID, "%s: %d axes given (at most %d)", op, n_axes, PDI_MAX_ATTR_INTS);
    if (n_axes && !axes) return pdi_errorf(PD_ERR_INVALID, "%s: axes is NULL but n_axes is %d", op, n_axes);
    for (int i = 0; i < n_axes; i++) l->v[i] = axes[i];
    l->n = n_axes;
    return PD_OK;
}

/* A 0-d tensor takes axis 0 or -1 (as PyTorch); pdi_norm_axis only accepts
 * 0 there, so -1 is rewritten. */
static void axes_0d(struct pdi_ints *l, const struct pd_tensor *x)
{
    if (x->ndim == 0)
        for (int i = 0; i < l->n; i++)
            if (l->v[i] == -1) l->v[i] = 0;
}

/* Calls op with its own attribute set: axes and keepdim, plus correction
 * for var/std and p for norm (ignored by the other reductions). The fields
 * are written through the op's own set. */
static struct pd_tensor *reduce_call(enum pd_op op, struct pd_tensor *x, const int *axes, int n_axes, int keepdim,
                                     int64_t correction, double p)
{
    if (!x) return NULL;
    struct pdi_attrs a = {0};
    struct pdi_ints *l;
    int64_t *keep;
    switch (pdi_ops[op].attrs) {
    case PDI_AS_reduce_var:
        l = &a.reduce_var.axes, keep = &a.reduce_var.keepdim;
        a.reduce_var.correction = correction;
        break;
    case PDI_AS_reduce_norm:
        l = &a.reduce_norm.axes, keep = &a.reduce_norm.keepdim;
        a.reduce_norm.p = p;
        break;
    default: l = &a.reduce.axes, keep = &a.reduce.keepdim; break;
    }
    if (fill_axes(pdi_ops[op].name, l, axes, n_axes)) return NULL;
    axes_0d(l, x);
    *keep = keepdim != 0;
    return pdi_call1(op, x, &a);
}

static struct pd_tensor *reduce_plain(enum pd_op op, struct pd_tensor *x, const int *axes, int n_axes, int keepdim)
{
    return reduce_call(op, x, axes, n_axes, keepdim, 0, 0);
}

/* Integer/bool input of a float-only reduction is cast to f32 (documented). */
static struct pd_tensor *float_input(struct pd_tensor *x)
{
    if (!x || pd_dtype_is_float(x->dtype)) return x;
    return pd_cast(x, PD_F32);
}

struct pd_tensor *pd_sum(struct pd_tensor *x, const int *axes, int n_axes, int keepdim)
{
    return reduce_plain(PD_OP_sum, x, axes, n_axes, keepdim);
}

struct pd_tensor *pd_mean(struct pd_tensor *x, const int *axes, int n_axes, int keepdim)
{
    return reduce_plain(PD_OP_mean, float_input(x), axes, n_axes, keepdim);
}

struct pd_tensor *pd_prod(struct pd_tensor *x, const int *axes, int n_axes, int keepdim)
{
    return reduce_plain(PD_OP_prod, x, axes, n_axes, keepdim);
}

struct pd_tensor *pd_amax(struct pd_tensor *x, const int *axes, int n_axes, int keepdim)
{
    return reduce_plain(PD_OP_amax, x, axes, n_axes, keepdim);
}

struct pd_tensor *pd_amin(struct pd_tensor *x, const int *axes, int n_axes, int keepdim)
{
    return reduce_plain(PD_OP_amin, x, axes, n_axes, keepdim);
}

static struct pd_tensor *maxmin(enum pd_op op, struct pd_tensor *x, int axis, int keepdim, struct pd_tensor **indices)
{
    if (indices) *indices = NULL;
    if (!x) return NULL;
    struct pd_tensor *in[1] = {x}, *out[2];
    struct pdi_call c = {.op = op, .n_in = 1, .n_out = 2, .in = in, .out = out};
    c.a.reduce = (struct pdi_attrs_reduce){.axes = {.n = 1, .v = {axis}}, .keepdim = keepdim != 0};
    axes_0d(&c.a.reduce.axes, x);
    if (pdi_dispatch(&c)) return NULL;
    if (indices) *indices = out[1];
    else if (pd_scope_depth() == 0) pd_tensor_release(out[1]); /* nobody else owns it */
    return out[0];
}

struct pd_tensor *pd_max(struct pd_tensor *x, int axis, int keepdim, struct pd_tensor **indices)
{
    return maxmin(PD_OP_max, x, axis, keepdim, indices);
}

struct pd_tensor *pd_min(struct pd_tensor *x, int axis, int keepdim, struct pd_tensor **indices)
{
    return maxmin(PD_OP_min, x, axis, keepdim, indices);
}

/* axis == PD_ALL_AXES: index into the flattened tensor. */
static struct pd_tensor *argmaxmin(enum pd_op op, struct pd_tensor *x, int axis, int keepdim)
{
    return reduce_plain(op, x, &axis, axis == PD_ALL_AXES ? 0 : 1, keepdim);
}

struct pd_tensor *pd_argmax(struct pd_tensor *x, int axis, int keepdim) { return argmaxmin(PD_OP_argmax, x, axis, keepdim); }
struct pd_tensor *pd_argmin(struct pd_tensor *x, int axis, int keepdim) { return argmaxmin(PD_OP_argmin, x, axis, keepdim); }

struct pd_tensor *pd_var(struct pd_tensor *x, const int *axes, int n_axes, int correction, int keepdim)
{
    return reduce_call(PD_OP_var, float_input(x), axes, n_axes, keepdim, correction, 0);
}

struct pd_tensor *pd_std(struct pd_tensor *x, const int *axes, int n_axes, int correction, int keepdim)
{
    return reduce_call(PD_OP_std, float_input(x), axes, n_axes, keepdim, correction, 0);
}

struct pd_tensor *pd_logsumexp(struct pd_tensor *x, const int *axes, int n_axes, int keepdim)
{
    return reduce_plain(PD_OP_logsumexp, float_input(x), axes, n_axes, keepdim);
}

struct pd_tensor *pd_norm(struct pd_tensor *x, double p, const int *axes, int n_axes, int keepdim)
{
    return reduce_call(PD_OP_norm, float_input(x), axes, n_axes, keepdim, 0, p);
}

struct pd_tensor *pd_all(struct pd_tensor *x, const int *axes, int n_axes, int keepdim)
{
    return reduce_plain(PD_OP_all, x, axes, n_axes, keepdim);
}

struct pd_tensor *pd_any(struct pd_tensor *x, const int *axes, int n_axes, int keepdim)
{
    return reduce_plain(PD_OP_any, x, axes, n_axes, keepdim);
}

static struct pd_tensor *scan(enum pd_op op, struct pd_tensor *x, int axis, int reverse)
{
    if (!x) return NULL;
    int ax = x->ndim == 0 && (axis == 0 || axis == -1) ? 0 : pdi_norm_axis(axis, x->ndim);
    if (ax < 0)
        return pdi_error(PD_ERR_INVALID, "%s: axis %d out of range for a %d-d tensor", pdi_ops[op].name, axis, x->ndim);
    struct pdi_attrs a = {.scan = {.axis = ax, .reverse = reverse}};
    return pdi_call1(op, x, &a);
}

struct pd_tensor *pd_cumsum(struct pd_tensor *x, int axis) { return scan(PD_OP_cumsum, x, axis, 0); }
struct pd_tensor *pd_cumprod(struct pd_tensor *x, int axis) { return scan(PD_OP_cumprod, x, axis, 0); }

/* ---- VJP rules (public ops only) ------------------------------------- */

/* The node's axes as an int list for pd_sum & co (count 0 = all axes). */
static int node_axes(const struct pdi_node *n, int *axes)
{
    const struct pdi_ints *l = &n->a.reduce.axes;
    for (int i = 0; i < l->n; i++) axes[i] = (int)l->v[i];
    return (int)l->n;
}

/* A reduced tensor (or gradient) viewed with size-1 dims at the reduced
 * axes, so that it broadcasts against the input. */
static struct pd_tensor *unreduce(const struct pdi_node *n, struct pd_tensor *t)
{
    const struct pdi_meta *im = &n->in_meta[0];
    if (!t || n->a.reduce.keepdim || im->ndim == 0) return t;
    unsigned mask = pdi_attrs_axes_mask(&n->a, im->ndim);
    int64_t shape[PD_MAX_DIMS];
    for (int d = 0; d < im->ndim; d++) shape[d] = mask & (1u << d) ? 1 : im->shape[d];
    return pd_reshape(t, shape, im->ndim);
}

static struct pd_tensor *expand_to_input(const struct pdi_node *n, struct pd_tensor *t)
{
    return pd_expand(unreduce(n, t), n->in_meta[0].shape, n->in_meta[0].ndim);
}

static struct pd_tensor *scalar_like(const struct pd_tensor *t, double v)
{
    return t ? pd_scalar(v, t->dtype) : NULL;
}

int pdi_vjp_sum(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    gin[0] = expand_to_input(n, g[0]);
    return pdi_status_of(gin[0], __func__);
}

int pdi_vjp_mean(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    const struct pdi_meta *im = &n->in_meta[0];
    int64_t cnt = mask_count(im->shape, im->ndim, pdi_attrs_axes_mask(&n->a, im->ndim));
    gin[0] = expand_to_input(n, pd_scale(g[0], 1.0 / (double)cnt));
    return pdi_status_of(gin[0], __func__);
}

static struct pd_tensor *scan_dir(enum pd_op op, struct pd_tensor *x, int64_t axis, int64_t reverse)
{
    struct pdi_attrs a = {.scan = {.axis = axis, .reverse = reverse}};
    return x ? pdi_call1(op, x, &a) : NULL;
}

/* d prod / d x_i = the product of the others, computed as PyTorch does from
 * exclusive scans over the reduced elements (permuted to the end and
 * flattened to one axis of K): before_i = x_0 ... x_{i-1} and
 * after_i = x_{i+1} ... x_{K-1}. There is no division by x, so the rule is
 * exact with any number of zeros, and so is its own VJP (cumprod's), at
 * every order. */
int pdi_vjp_prod(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0);
    if (!x) return pd_last_status();
    const struct pdi_meta *im = &n->in_meta[0];
    int nd = im->ndim;
    unsigned mask = pdi_attrs_axes_mask(&n->a, nd);
    int64_t K = mask_count(im->shape, nd, mask);
    if (nd == 0 || K <= 1) { /* the others' product is empty: 1 */
        gin[0] = expand_to_input(n, g[0]);
        return pdi_status_of(gin[0], __func__);
    }
    int perm[PD_MAX_DIMS], inv[PD_MAX_DIMS], nk = 0;
    int64_t pshape[PD_MAX_DIMS], fshape[PD_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        if (!(mask & (1u << d))) { perm[nk] = d; fshape[nk] = im->shape[d]; nk++; }
    for (int d = 0, k = nk; d < nd; d++)
        if (mask & (1u << d)) perm[k++] = d;
    for (int d = 0; d < nd; d++) { pshape[d] = im->shape[perm[d]]; inv[perm[d]] = d; }
    fshape[nk] = 1;
    struct pd_tensor *ones = pd_ones(fshape, nk + 1, x->dtype);
    fshape[nk] = K;
    struct pd_tensor *xt = pd_reshape(pd_permute(x, perm, nd), fshape, nk + 1);
    struct pd_tensor *lo[2] = {ones, scan_dir(PD_OP_cumprod, pd_slice(xt, nk, 0, K - 1, 1), nk, 0)};
    struct pd_tensor *hi[2] = {scan_dir(PD_OP_cumprod, pd_slice(xt, nk, 1, K, 1), nk, 1), ones};
    struct pd_tensor *others = pd_mul(pd_concat(lo, 2, nk), pd_concat(hi, 2, nk));
    others = pd_permute(pd_reshape(others, pshape, nd), inv, nd);
    gin[0] = pd_mul(others, unreduce(n, g[0]));
    return pdi_status_of(gin[0], __func__);
}

/* Ties share the gradient evenly (mask / count). */
static int vjp_amaxmin(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0), *out = pdi_node_out(n, 0);
    if (!x || !out) return pd_last_status();
    int axes[PDI_MAX_ATTR_INTS], na = node_axes(n, axes);
    struct pd_tensor *m = pd_cast(pd_eq(x, unreduce(n, out)), x->dtype);
    struct pd_tensor *cnt = pd_sum(m, axes, na, 1);
    gin[0] = pd_mul(m, pd_div(unreduce(n, g[0]), cnt));
    return pdi_status_of(gin[0], __func__);
}

int pdi_vjp_amax(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { return vjp_amaxmin(n, g, gin); }
int pdi_vjp_amin(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { return vjp_amaxmin(n, g, gin); }

/* The gradient goes to the returned index: where(arange == index, g, 0). */
static int vjp_maxmin(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    const struct pdi_meta *im = &n->in_meta[0];
    if (im->ndim == 0) { gin[0] = g[0]; return PD_OK; }
    struct pd_tensor *idx = pd_detach(pdi_node_out(n, 1));
    if (!idx) return pd_last_status();
    int ax = pdi_norm_axis((int)n->a.reduce.axes.v[0], im->ndim);
    int64_t shape[PD_MAX_DIMS];
    for (int d = 0; d < im->ndim; d++) shape[d] = d == ax ? im->shape[d] : 1;
    struct pd_tensor *ar = pd_reshape(pd_arange(0, (double)im->shape[ax], 1, PD_I64), shape, im->ndim);
    struct pd_tensor *hit = pd_eq(ar, unreduce(n, idx));
    gin[0] = pd_where(hit, unreduce(n, g[0]), scalar_like(g[0], 0));
    return pdi_status_of(gin[0], __func__);
}

int pdi_vjp_max(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { return vjp_maxmin(n, g, gin); }
int pdi_vjp_min(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { return vjp_maxmin(n, g, gin); }

/* Divisor of var/std: max(0, N - correction), like PyTorch. */
static double var_divisor(const struct pdi_node *n)
{
    const struct pdi_meta *im = &n->in_meta[0];
    double d = (double)mask_count(im->shape, im->ndim, pdi_attrs_axes_mask(&n->a, im->ndim)) -
               (double)n->a.reduce_var.correction;
    return d > 0 ? d : 0;
}

/* x - mean(x) over the reduced axes, kept dims. */
static struct pd_tensor *centered(struct pdi_node *n, struct pd_tensor *x)
{
    int axes[PDI_MAX_ATTR_INTS], na = node_axes(n, axes);
    return pd_sub(x, pd_mean(x, axes, na, 1));
}

/* d var / d x = 2 (x - mean) / divisor. */
int pdi_vjp_var(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0);
    if (!x) return pd_last_status();
    gin[0] = pd_mul(centered(n, x), pd_scale(unreduce(n, g[0]), 2.0 / var_divisor(n)));
    return pdi_status_of(gin[0], __func__);
}

/* d std / d x = (x - mean) / (divisor * std); where std == 0 every x equals
 * the mean, and dividing by 1 instead keeps the result 0 (not NaN). */
int pdi_vjp_std(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0), *out = pdi_node_out(n, 0);
    if (!x || !out) return pd_last_status();
    struct pd_tensor *so = unreduce(n, out);
    struct pd_tensor *safe = pd_where(pd_eq(so, scalar_like(so, 0)), scalar_like(so, 1), so);
    struct pd_tensor *r = pd_div(unreduce(n, g[0]), pd_scale(safe, var_divisor(n)));
    gin[0] = pd_mul(centered(n, x), r);
    return pdi_status_of(gin[0], __func__);
}

/* d lse / d x = exp(x - lse) (softmax). */
int pdi_vjp_logsumexp(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0), *out = pdi_node_out(n, 0);
    if (!x || !out) return pd_last_status();
    gin[0] = pd_mul(pd_exp(pd_sub(x, unreduce(n, out))), unreduce(n, g[0]));
    return pdi_status_of(gin[0], __func__);
}

/* PyTorch's rules, with its subgradient 0 at the kinks. p = 0: 0 (the
 * count is piecewise constant); p = 1: sign(x); p = 2: x / norm (0 at the
 * zero vector, through a safe denominator so no NaN appears at any order);
 * p = +-inf: sign(x) on the ties of |x| == norm, split evenly; other p:
 * sign(x) |x|^(p-1) / norm^(p-1), which is 0 where x == 0 for p < 1 and
 * where norm == 0 for p > 1 (safe operands again: no inf * 0). */
int pdi_vjp_norm(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0), *out = pdi_node_out(n, 0);
    if (!x || !out) return pd_last_status();
    double p = n->a.reduce_norm.p;
    struct pd_tensor *gu = unreduce(n, g[0]), *ou = unreduce(n, out), *r;
    struct pd_tensor *zero = scalar_like(x, 0), *one = scalar_like(x, 1);
    if (p == 0.0) {
        r = pd_zeros(n->in_meta[0].shape, n->in_meta[0].ndim, x->dtype);
    } else if (p == 1.0) {
        r = pd_sign(x);
    } else if (p == 2.0) {
        struct pd_tensor *safe = pd_where(pd_eq(ou, scalar_like(ou, 0)), scalar_like(ou, 1), ou);
        r = pd_div(x, safe);
    } else if (isinf(p)) {
        int axes[PDI_MAX_ATTR_INTS], na = node_axes(n, axes);
        struct pd_tensor *m = pd_cast(pd_eq(pd_abs(x), ou), x->dtype);
        struct pd_tensor *cnt = pd_sum(m, axes, na, 1);
        r = pd_div(pd_mul(pd_sign(x), m), cnt);
    } else if (p < 1.0) { /* sign(x) |x|^(p-1) (0 at x == 0) times norm^(1-p) */
        struct pd_tensor *xz = pd_eq(x, zero);
        struct pd_tensor *xs = pd_mul(pd_sign(x), pd_pow_scalar(pd_where(xz, one, pd_abs(x)), p - 1.0));
        r = pd_mul(pd_where(xz, zero, xs), pd_pow_scalar(ou, 1.0 - p));
    } else { /* sign(x) |x|^(p-1) / norm^(p-1) (0 where norm == 0) */
        struct pd_tensor *oz = pd_eq(ou, scalar_like(ou, 0));
        struct pd_tensor *scale = pd_where(oz, scalar_like(ou, 0),
                                           pd_pow_scalar(pd_where(oz, scalar_like(ou, 1), ou), 1.0 - p));
        r = pd_mul(pd_mul(pd_sign(x), pd_pow_scalar(pd_abs(x), p - 1.0)), scale);
    }
    gin[0] = pd_mul(r, gu);
    return pdi_status_of(gin[0], __func__);
}

/* The VJP of a scan is the scan of g in the other direction. */
int pdi_vjp_cumsum(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    gin[0] = scan_dir(PD_OP_cumsum, g[0], n->a.scan.axis, !n->a.scan.reverse);
    return pdi_status_of(gin[0], __func__);
}

/* Recorded (create_graph) form of cumprod's VJP, exact at zeros at every
 * order: with the axis moved last, M[i, j] = d y_j / d x_i is the scan of x
 * with x_i replaced by 1, at j, for j at or after i in scan order (0
 * before), and gin_i = sum_j M[i, j] g_j. Only where, cumprod, mul and sum,
 * at n^2 elements per scanned row (PyTorch's recorded form is O(n^2) too). */
static struct pd_tensor *cumprod_vjp_dense(struct pd_tensor *x, struct pd_tensor *g, int ax, int rev)
{
    int nd = pd_tensor_ndim(x), last = nd - 1;
    int64_t len = pd_tensor_dim(x, ax), shape[PD_MAX_DIMS];
    struct pd_tensor *xt = pd_transpose(x, ax, last);
    for (int d = 0; d < nd; d++) shape[d] = pd_tensor_dim(xt, d);
    shape[nd] = len;
    shape[last] = len;
    struct pd_tensor *X = pd_expand(pd_unsqueeze(xt, last), shape, nd + 1);
    struct pd_tensor *sq = pd_ones((int64_t[]){len, len}, 2, x->dtype);
    struct pd_tensor *diag = pd_ne(pd_eye(len, len, x->dtype), scalar_like(x, 0));
    struct pd_tensor *M = scan_dir(PD_OP_cumprod, pd_where(diag, scalar_like(x, 1), X), nd, rev);
    M = pd_mul(M, rev ? pd_tril(sq, 0) : pd_triu(sq, 0));
    struct pd_tensor *gi = pd_sum(pd_mul(M, pd_unsqueeze(pd_transpose(g, ax, last), last)), (int[]){nd}, 1, 0);
    return pd_transpose(gi, ax, last);
}

/* d y_j / d x_i = prod_{k <= j, k != i} x_k for i <= j (forward scan).
 * Recorded (create_graph): cumprod_vjp_dense. Otherwise, in O(n):
 * before the first zero (in scan order) x_i != 0 and the gradient is
 * rcumsum(g y)_i / x_i. At the first zero it is rcumsum(g y1)_i where y1 is
 * the scan of x with that zero replaced by 1. After it every product holds
 * the first zero: 0. */
int pdi_vjp_cumprod(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0), *y = pdi_node_out(n, 0);
    if (!x || !y) return pd_last_status();
    int64_t ax = n->a.scan.axis, rev = n->a.scan.reverse;
    if (x->ndim == 0) {
        gin[0] = g[0];
        return PD_OK;
    }
    if (pd_is_grad_enabled()) {
        gin[0] = cumprod_vjp_dense(x, g[0], (int)ax, (int)rev);
        return pdi_status_of(gin[0], __func__);
    }
    struct pd_tensor *zero = scalar_like(x, 0), *one = scalar_like(x, 1);
    struct pd_tensor *z = pd_eq(x, zero);
    struct pd_tensor *cnt = scan_dir(PD_OP_cumsum, z, ax, rev); /* int64 zeros so far */
    struct pd_tensor *before = pd_eq(cnt, pd_scalar(0, PD_I64));
    struct pd_tensor *first = pd_logical_and(z, pd_eq(cnt, pd_scalar(1, PD_I64)));
    struct pd_tensor *a = pd_div(scan_dir(PD_OP_cumsum, pd_mul(g[0], y), ax, !rev), pd_where(z, one, x));
    struct pd_tensor *y1 = scan_dir(PD_OP_cumprod, pd_where(first, one, x), ax, rev);
    struct pd_tensor *b = scan_dir(PD_OP_cumsum, pd_mul(g[0], y1), ax, !rev);
    gin[0] = pd_where(before, a, pd_where(first, b, zero));
    return pdi_status_of(gin[0], __func__);
}

/* ---- decompositions (primitive public ops only) ---------------------- */
/* A reduction call as the public ops take it. f16/bf16 input is computed
 * in f32 and rounded once at the end, as the kernels do. The parts are
 * computed with kept dims (they broadcast against x) and squeezed last. */
struct rdec {
    struct pd_tensor *x; /* in the compute dtype */
    enum pd_dtype dt;    /* the op's (input and output) dtype */
    int axes[PDI_MAX_ATTR_INTS], na, keep, ndim;
    int64_t count;                /* elements per output */
    int64_t shape[PD_MAX_DIMS];   /* the output shape without kept dims */
    int nout;
};

static void rdec_init(const struct pdi_call *c, struct rdec *r)
{
    const struct pd_tensor *x = c->in[0];
    const struct pdi_ints *l = &c->a.reduce.axes;
    unsigned mask = pdi_attrs_axes_mask(&c->a, x->ndim);
    r->dt = x->dtype;
    r->x = x->dtype == PD_F16 || x->dtype == PD_BF16 ? pd_cast(c->in[0], PD_F32) : c->in[0];
    r->na = (int)l->n;
    for (int i = 0; i < r->na; i++) r->axes[i] = (int)l->v[i];
    r->keep = c->a.reduce.keepdim != 0;
    r->ndim = x->ndim;
    r->count = mask_count(x->shape, x->ndim, mask);
    r->nout = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!(mask & (1u << d))) r->shape[r->nout++] = x->shape[d];
}

static struct pd_tensor *rdec_scalar(const struct rdec *r, double v)
{
    return r->x ? pd_scalar(v, r->x->dtype) : NULL;
}

/* sum over the reduced axes, dims kept */
static struct pd_tensor *rdec_sum(const struct rdec *r, struct pd_tensor *t) { return pd_sum(t, r->axes, r->na, 1); }

/* t (reduced with kept dims) as the op's output: squeezed unless keepdim,
 * in the op's dtype. */
static int rdec_out(const struct rdec *r, struct pd_tensor *t, struct pd_tensor **out)
{
    if (t && !r->keep && r->ndim > 0) t = pd_reshape(t, r->shape, r->nout);
    if (t && t->dtype != r->dt) t = pd_cast(t, r->dt);
    out[0] = t;
    return pdi_status_of(t, __func__);
}

/* sqrt(t) with a zero gradient where t == 0 (as the ops' VJPs: no NaN at
 * the zero vector or a constant row). */
static struct pd_tensor *rdec_safe_sqrt(const struct rdec *r, struct pd_tensor *t)
{
    struct pd_tensor *zero = pd_eq(t, rdec_scalar(r, 0));
    return pd_where(zero, rdec_scalar(r, 0), pd_sqrt(pd_where(zero, rdec_scalar(r, 1), t)));
}

/* sum / count (an empty set gives 0 / 0 = NaN) */
int pdi_decomp_mean(const struct pdi_call *c, struct pd_tensor **out)
{
    struct rdec r;
    rdec_init(c, &r);
    return rdec_out(&r, pd_div(rdec_sum(&r, r.x), rdec_scalar(&r, (double)r.count)), out);
}

/* sum((x - sum(x) / N)^2) / max(0, N - correction) */
static struct pd_tensor *rdec_var(const struct pdi_call *c, const struct rdec *r)
{
    struct pd_tensor *mean = pd_div(rdec_sum(r, r->x), rdec_scalar(r, (double)r->count));
    double div = (double)r->count - (double)c->a.reduce_var.correction;
    struct pd_tensor *ss = rdec_sum(r, pd_square(pd_sub(r->x, mean)));
    /* S / 0 is not the sum of its parts over 0 (a part of 0 gives NaN where
     * S / 0 is inf): abs, the identity on S >= 0, is not linear, so a
     * distributed S that is Partial over a split axis is reduced first */
    if (!(div > 0)) ss = pd_abs(ss);
    return pd_div(ss, rdec_scalar(r, div > 0 ? div : 0));
}

int pdi_decomp_var(const struct pdi_call *c, struct pd_tensor **out)
{
    struct rdec r;
    rdec_init(c, &r);
    return rdec_out(&r, rdec_var(c, &r), out);
}

int pdi_decomp_std(const struct pdi_call *c, struct pd_tensor **out)
{
    struct rdec r;
    rdec_init(c, &r);
    return rdec_out(&r, rdec_safe_sqrt(&r, rdec_var(c, &r)), out);
}

/* m + log(sum(exp(x - m))) with m the max, or 0 where the max is infinite
 * (all -inf gives log(0) = -inf, a +inf gives inf); an empty set gives
 * log(0) = -inf directly (amax has no identity). */
int pdi_decomp_logsumexp(const struct pdi_call *c, struct pd_tensor **out)
{
    struct rdec r;
    rdec_init(c, &r);
    if (r.count == 0) return rdec_out(&r, pd_log(rdec_sum(&r, pd_exp(r.x))), out);
    struct pd_tensor *m = pd_amax(r.x, r.axes, r.na, 1);
    m = pd_where(pd_isinf(m), rdec_scalar(&r, 0), m);
    return rdec_out(&r, pd_add(pd_log(rdec_sum(&r, pd_exp(pd_sub(r.x, m)))), m), out);
}

/* p = 1: sum |x|; p = 2: sqrt(sum x^2); p = 0: the count of x != 0;
 * p = inf: max |x| (0 for an empty set, the sum of nothing); p = -inf:
 * min |x| (infer refuses an empty set); other p: (sum |x|^p)^(1/p). */
int pdi_decomp_norm(const struct pdi_call *c, struct pd_tensor **out)
{
    struct rdec r;
    rdec_init(c, &r);
    double p = c->a.reduce_norm.p;
    struct pd_tensor *y;
    if (p == 2.0) y = rdec_safe_sqrt(&r, rdec_sum(&r, pd_square(r.x)));
    else if (p == 1.0 || (p == INFINITY && r.count == 0)) y = rdec_sum(&r, pd_abs(r.x));
    else if (p == 0.0) y = rdec_sum(&r, pd_cast(pd_ne(r.x, rdec_scalar(&r, 0)), r.x ? r.x->dtype : PD_F32));
    else if (p == INFINITY) y = pd_amax(pd_abs(r.x), r.axes, r.na, 1);
    else if (p == -INFINITY) y = pd_amin(pd_abs(r.x), r.axes, r.na, 1);
    else if (p < 0) y = pd_pow_scalar(rdec_sum(&r, pd_pow_scalar(pd_abs(r.x), p)), 1.0 / p);
    else { /* the root through a safe operand, as rdec_safe_sqrt: gradient 0 at the zero vector */
        struct pd_tensor *t = rdec_sum(&r, pd_pow_scalar(pd_abs(r.x), p)), *z = pd_eq(t, rdec_scalar(&r, 0));
        y = pd_where(z, rdec_scalar(&r, 0), pd_pow_scalar(pd_where(z, rdec_scalar(&r, 1), t), 1.0 / p));
    }
    return rdec_out(&r, y, out);
}
