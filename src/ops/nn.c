/* paddle.c — the neural-network family: softmax, log_softmax, nll_loss,
 * nll_loss_backward, layer_norm, rms_norm, group_norm, norm_backward,
 * embedding, one_hot (rows in ops_nn.def), and the composite public
 * functions built from public ops: cross_entropy,
 * mse_loss, dropout.
 *
 * Invariants:
 *   - infer functions validate everything a kernel relies on, except the
 *     values of index tensors (targets, ids, classes): kernels check those
 *     and fail with the bad value, never reading out of bounds;
 *   - VJP rules use public ops only, so they can be differentiated again;
 *     the norms recompute their statistics from the saved input instead of
 *     saving them (no extra outputs, and the recomputation is what makes
 *     second-order gradients come out right). The one exception is the
 *     norms' plain first-order backward (grad mode off while it runs, i.e.
 *     no create_graph): it calls the fused norm_backward op (one pass per
 *     row instead of ~20 full-size ops); norm_backward itself is not
 *     differentiable, and with create_graph the composed rule runs instead;
 *   - composites own nothing: every tensor they make belongs to the scope.
 */
#include <math.h>
#include <string.h>

#include "core/internal.h"

static int is_int_dtype(enum pd_dtype dt)
{
    return dt == PD_I8 || dt == PD_U8 || dt == PD_I16 || dt == PD_I32 || dt == PD_I64;
}

/* ---- infer ----------------------------------------------------------- */
int pdi_infer_softmax(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    const char *op = pdi_ops[c->op].name;
    int64_t ax = c->a.softmax.axis;
    if (!pd_dtype_is_float(x->dtype))
        return pdi_errorf(PD_ERR_INVALID, "%s: x must be floating point, got %s", op, pd_dtype_name(x->dtype));
    if (x->ndim == 0 ? ax != 0 : (ax < 0 || ax >= x->ndim))
        return pdi_errorf(PD_ERR_INVALID, "%s: axis %lld out of range for a %d-d tensor", op, (long long)ax, x->ndim);
    struct pdi_meta *m = &c->meta[0];
    m->dtype = x->dtype;
    m->ndim = x->ndim;
    memcpy(m->shape, x->shape, sizeof m->shape);
    return PD_OK;
}

/* logp [N, C, d...] with target [N, d...], or logp [C] with a 0-d target. */
static int check_class_target(const char *op, const struct pd_tensor *logp, const struct pd_tensor *target)
{
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    int ok = logp->ndim >= 1 && target->ndim == logp->ndim - 1;
    if (ok && logp->ndim >= 2) {
        ok = target->shape[0] == logp->shape[0];
        for (int k = 1; k < target->ndim && ok; k++) ok = target->shape[k] == logp->shape[k + 1];
    }
    if (!ok)
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: target shape %s does not match input %s (expected input [N, C, d...] with target "
                          "[N, d...], or input [C] with a 0-d target)", op,
                          pdi_shape_str(target->shape, target->ndim, b1, sizeof b1),
                          pdi_shape_str(logp->shape, logp->ndim, b0, sizeof b0));
    return PD_OK;
}

int pdi_infer_nll_loss(struct pdi_call *c)
{
    int has_weight = c->a.nll_loss.has_weight != 0;
    if (c->n_in != 2 + has_weight)
        return pdi_errorf(PD_ERR_INVALID, "nll_loss: expected %d inputs (logp, target%s), got %d", 2 + has_weight,
                          has_weight ? ", weight" : "", c->n_in);
    const struct pd_tensor *lp = c->in[0], *t = c->in[1];
    if (!pd_dtype_is_float(lp->dtype))
        return pdi_errorf(PD_ERR_INVALID, "nll_loss: input must be floating point, got %s", pd_dtype_name(lp->dtype));
    if (!is_int_dtype(t->dtype))
        return pdi_errorf(PD_ERR_INVALID, "nll_loss: target must hold integer class indices, got %s",
                          pd_dtype_name(t->dtype));
    int64_t red = c->a.nll_loss.reduction;   /* in [0, 2]: the attribute range, checked at dispatch */
    int rc = check_class_target("nll_loss", lp, t);
    if (rc) return rc;
    if (has_weight) {
        const struct pd_tensor *w = c->in[2];
        int64_t C = lp->ndim == 1 ? lp->shape[0] : lp->shape[1];
        char b0[PDI_SHAPE_BUF];
        if (w->dtype != lp->dtype)
            return pdi_errorf(PD_ERR_INVALID, "nll_loss: weight dtype %s differs from input dtype %s",
                              pd_dtype_name(w->dtype), pd_dtype_name(lp->dtype));
        if (w->ndim != 1 || w->shape[0] != C)
            return pdi_errorf(PD_ERR_INVALID, "nll_loss: weight shape %s must be [C] = [%lld]",
                              pdi_shape_str(w->shape, w->ndim, b0, sizeof b0), (long long)C);
    }
    struct pdi_meta *m = &c->meta[0];
    m->dtype = lp->dtype;
    m->ndim = red == PD_REDUCTION_NONE ? t->ndim : 0;
    memcpy(m->shape, t->shape, sizeof m->shape);
    return PD_OK;
}

/* nll_loss_backward: logp [N, C, d...] (or [C]) floating, target integer
 * [N, d...] (or []), w of logp's dtype and the target's shape; out logp's
 * dtype and shape. */
int pdi_infer_nll_loss_backward(struct pdi_call *c)
{
    const struct pd_tensor *lp = c->in[0], *t = c->in[1], *w = c->in[2];
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (!pd_dtype_is_float(lp->dtype))
        return pdi_errorf(PD_ERR_INVALID, "nll_loss_backward: input must be floating point, got %s",
                          pd_dtype_name(lp->dtype));
    if (!is_int_dtype(t->dtype))
        return pdi_errorf(PD_ERR_INVALID, "nll_loss_backward: target must hold integer class indices, got %s",
                          pd_dtype_name(t->dtype));
    int rc = check_class_target("nll_loss_backward", lp, t);
    if (rc) return rc;
    if (w->dtype != lp->dtype)
        return pdi_errorf(PD_ERR_INVALID, "nll_loss_backward: w dtype %s differs from input dtype %s",
                          pd_dtype_name(w->dtype), pd_dtype_name(lp->dtype));
    if (w->ndim != t->ndim || memcmp(w->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim))
        return pdi_errorf(PD_ERR_INVALID, "nll_loss_backward: w shape %s differs from target shape %s",
                          pdi_shape_str(w->shape, w->ndim, b0, sizeof b0),
                          pdi_shape_str(t->shape, t->ndim, b1, sizeof b1));
    struct pdi_meta *m = &c->meta[0];
    m->dtype = lp->dtype;
    m->ndim = lp->ndim;
    memcpy(m->shape, lp->shape, sizeof m->shape);
    return PD_OK;
}

/* Checks shared by the norms and norm_backward: x floating, n_norm_axes
 * and eps in range (read through the norm set: norm_backward's set starts
 * with the same fields), and each parameter p[i] (weight first when
 * has_w, then bias) of x's dtype and the normalised (trailing) shape. */
static int check_norm(const struct pdi_call *c, const struct pd_tensor *x, struct pd_tensor *const *p, int np,
                      int has_w)
{
    const char *op = pdi_ops[c->op].name;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF], b2[PDI_SHAPE_BUF];
    if (!pd_dtype_is_float(x->dtype))
        return pdi_errorf(PD_ERR_INVALID, "%s: x must be floating point, got %s", op, pd_dtype_name(x->dtype));
    int64_t k = c->a.norm.n_norm_axes;
    if (k < 1 || k > x->ndim)
        return pdi_errorf(PD_ERR_INVALID, "%s: n_norm_axes %lld out of range [1, %d] for x of shape %s", op,
                          (long long)k, x->ndim, pdi_shape_str(x->shape, x->ndim, b0, sizeof b0));
    if (!(c->a.norm.eps >= 0)) return pdi_errorf(PD_ERR_INVALID, "%s: eps must be >= 0, got %g", op, c->a.norm.eps);
    const int64_t *nshape = x->shape + (x->ndim - k);
    for (int i = 0; i < np; i++) {
        const struct pd_tensor *t = p[i];
        const char *what = i == 0 && has_w ? "weight" : "bias";
        if (t->dtype != x->dtype)
            return pdi_errorf(PD_ERR_INVALID, "%s: %s dtype %s differs from x dtype %s", op, what,
                              pd_dtype_name(t->dtype), pd_dtype_name(x->dtype));
        if (t->ndim != k || memcmp(t->shape, nshape, sizeof(int64_t) * (size_t)k))
            return pdi_errorf(PD_ERR_INVALID, "%s: %s shape %s must equal the normalised shape %s of x %s", op, what,
                              pdi_shape_str(t->shape, t->ndim, b0, sizeof b0),
                              pdi_shape_str(nshape, (int)k, b1, sizeof b1),
                              pdi_shape_str(x->shape, x->ndim, b2, sizeof b2));
    }
    return PD_OK;
}

/* layer_norm: x, [w], [b]; rms_norm: x, [w]. Parameters have the shape of
 * the normalised (trailing) dims and x's dtype. */
int pdi_infer_norm(struct pdi_call *c)
{
    const char *op = pdi_ops[c->op].name;
    int has_w = c->a.norm.has_w != 0, has_b = c->op == PD_OP_layer_norm && c->a.norm.has_b != 0;
    if (c->n_in != 1 + has_w + has_b)
        return pdi_errorf(PD_ERR_INVALID, "%s: expected %d inputs (x%s%s), got %d", op, 1 + has_w + has_b,
                          has_w ? ", weight" : "", has_b ? ", bias" : "", c->n_in);
    const struct pd_tensor *x = c->in[0];
    int rc = check_norm(c, x, c->in + 1, c->n_in - 1, has_w);
    if (rc) return rc;
    struct pdi_meta *m = &c->meta[0];
    m->dtype = x->dtype;
    m->ndim = x->ndim;
    memcpy(m->shape, x->shape, sizeof m->shape);
    return PD_OK;
}

/* group_norm: x [N, C, d...], [w [C]], [b [C]] of x's dtype; C divisible
 * by num_groups. */
int pdi_infer_group_norm(struct pdi_call *c)
{
    int has_w = c->a.group_norm.has_w != 0, has_b = c->a.group_norm.has_b != 0;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (c->n_in != 1 + has_w + has_b)
        return pdi_errorf(PD_ERR_INVALID, "group_norm: expected %d inputs (x%s%s), got %d", 1 + has_w + has_b,
                          has_w ? ", weight" : "", has_b ? ", bias" : "", c->n_in);
    const struct pd_tensor *x = c->in[0];
    if (!pd_dtype_is_float(x->dtype))
        return pdi_errorf(PD_ERR_INVALID, "group_norm: x must be floating point, got %s", pd_dtype_name(x->dtype));
    if (x->ndim < 2)
        return pdi_errorf(PD_ERR_INVALID, "group_norm: x must be [N, C, d...] (at least 2 dims), got %s",
                          pdi_shape_str(x->shape, x->ndim, b0, sizeof b0));
    /* num_groups >= 1 and a finite eps >= 0: the attribute ranges, checked at dispatch */
    int64_t G = c->a.group_norm.num_groups, C = x->shape[1];
    if (C % G)
        return pdi_errorf(PD_ERR_INVALID, "group_norm: %lld channels are not divisible into num_groups = %lld",
                          (long long)C, (long long)G);
    for (int i = 1; i < c->n_in; i++) {
        const struct pd_tensor *t = c->in[i];
        const char *what = i == 1 && has_w ? "weight" : "bias";
        if (t->dtype != x->dtype)
            return pdi_errorf(PD_ERR_INVALID, "group_norm: %s dtype %s differs from x dtype %s", what,
                              pd_dtype_name(t->dtype), pd_dtype_name(x->dtype));
        if (t->ndim != 1 || t->shape[0] != C)
            return pdi_errorf(PD_ERR_INVALID, "group_norm: %s shape %s must be [C] = [%lld] for x %s", what,
                              pdi_shape_str(t->shape, t->ndim, b0, sizeof b0), (long long)C,
                              pdi_shape_str(x->shape, x->ndim, b1, sizeof b1));
    }
    pdi_meta_of(x, &c->meta[0]);
    return PD_OK;
}

/* norm_backward: x, g, [w] -> dx, [dw], [db] (see ops_nn.def). */
int pdi_infer_norm_backward(struct pdi_call *c)
{
    int64_t has_w = c->a.norm_backward.has_w, has_b = c->a.norm_backward.has_b, centre = c->a.norm_backward.centre;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if ((has_w | has_b | centre) & ~(int64_t)1)
        return pdi_errorf(PD_ERR_INVALID, "norm_backward: has_w (%lld), has_b (%lld) and centre (%lld) must be 0 or 1",
                          (long long)has_w, (long long)has_b, (long long)centre);
    if (has_b && !centre)
        return pdi_errorf(PD_ERR_INVALID, "norm_backward: a bias needs centre = 1 (layer_norm); rms_norm has none");
    if (c->n_in != 2 + has_w || c->n_out != 1 + has_w + has_b)
        return pdi_errorf(PD_ERR_INVALID, "norm_backward: expected %lld inputs (x, g%s) and %lld outputs, got %d and %d",
                          (long long)(2 + has_w), has_w ? ", weight" : "", (long long)(1 + has_w + has_b), c->n_in,
                          c->n_out);
    const struct pd_tensor *x = c->in[0], *g = c->in[1];
    int rc = check_norm(c, x, c->in + 2, (int)has_w, 1);
    if (rc) return rc;
    if (g->dtype != x->dtype || g->ndim != x->ndim || memcmp(g->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim))
        return pdi_errorf(PD_ERR_INVALID, "norm_backward: g %s %s must have x's shape and dtype %s %s",
                          pdi_shape_str(g->shape, g->ndim, b0, sizeof b0), pd_dtype_name(g->dtype),
                          pdi_shape_str(x->shape, x->ndim, b1, sizeof b1), pd_dtype_name(x->dtype));
    pdi_meta_of(x, &c->meta[0]);
    int k = (int)c->a.norm_backward.n_norm_axes;
    for (int j = 1; j < c->n_out; j++) {
        struct pdi_meta *m = &c->meta[j];
        m->dtype = x->dtype;
        m->ndim = k;
        memcpy(m->shape, x->shape + (x->ndim - k), sizeof(int64_t) * (size_t)k);
    }
    return PD_OK;
}

int pdi_infer_embedding(struct pdi_call *c)
{
    const struct pd_tensor *ids = c->in[0], *w = c->in[1];
    char b0[PDI_SHAPE_BUF];
    if (!is_int_dtype(ids->dtype))
        return pdi_errorf(PD_ERR_INVALID, "embedding: ids must be integers, got %s", pd_dtype_name(ids->dtype));
    if (w->ndim != 2)
        return pdi_errorf(PD_ERR_INVALID, "embedding: weight must be 2-d [V, D], got %s",
                          pdi_shape_str(w->shape, w->ndim, b0, sizeof b0));
    if (ids->ndim + 1 > PD_MAX_DIMS)
        return pdi_errorf(PD_ERR_INVALID, "embedding: ids have %d dims; the output would exceed %d", ids->ndim,
                          PD_MAX_DIMS);
    struct pdi_meta *m = &c->meta[0];
    m->dtype = w->dtype;
    m->ndim = ids->ndim + 1;
    memcpy(m->shape, ids->shape, sizeof(int64_t) * (size_t)ids->ndim);
    m->shape[ids->ndim] = w->shape[1];
    return PD_OK;
}

int pdi_infer_one_hot(struct pdi_call *c)
{
    const struct pd_tensor *ids = c->in[0];
    if (!is_int_dtype(ids->dtype))
        return pdi_errorf(PD_ERR_INVALID, "one_hot: ids must be integers, got %s", pd_dtype_name(ids->dtype));
    int64_t nc = c->a.one_hot.num_classes;
    if (nc < 0)
        return pdi_errorf(PD_ERR_INVALID, "one_hot: num_classes must be >= 0 here (got %lld)", (long long)nc);
    if (ids->ndim + 1 > PD_MAX_DIMS)
        return pdi_errorf(PD_ERR_INVALID, "one_hot: ids have %d dims; the output would exceed %d", ids->ndim,
                          PD_MAX_DIMS);
    struct pdi_meta *m = &c->meta[0];
    m->dtype = PD_I64;
    m->ndim = ids->ndim + 1;
    memcpy(m->shape, ids->shape, sizeof(int64_t) * (size_t)ids->ndim);
    m->shape[ids->ndim] = nc;
    return PD_OK;
}

/* ---- VJP rules (public ops only) ------------------------------------- */
/* softmax: dx = y * (g - sum(g * y, axis)). */
int pdi_vjp_softmax(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *y = pdi_node_out(n, 0);
    int ax = (int)n->a.softmax.axis;
    struct pd_tensor *s = pd_sum(pd_mul(g[0], y), &ax, 1, 1);
    gin[0] = pd_mul(y, pd_sub(g[0], s));
    return pdi_status_of(gin[0], __func__);
}

/* log_softmax: dx = g - exp(y) * sum(g, axis). */
int pdi_vjp_log_softmax(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *y = pdi_node_out(n, 0);
    int ax = (int)n->a.softmax.axis;
    gin[0] = pd_sub(g[0], pd_mul(pd_exp(y), pd_sum(g[0], &ax, 1, 1)));
    return pdi_status_of(gin[0], __func__);
}

/* weight[target] where target != ignore_index, else 0, in dt: the weight
 * of each target (1 without class weights) as [N, d...]. */
static struct pd_tensor *target_weights(struct pd_tensor *target, struct pd_tensor *valid, struct pd_tensor *safe,
                                        struct pd_tensor *weight, enum pd_dtype dt)
{
    if (!weight) return pd_cast(valid, dt);
    int64_t cnt = pd_tensor_numel(target);
    struct pd_tensor *flat = pd_reshape(pd_cast(safe, PD_I64), &cnt, 1);
    struct pd_tensor *wt = pd_reshape(pd_index_select(pd_cast(weight, dt), 0, flat), target->shape, target->ndim);
    return pd_where(valid, wt, pd_scalar(0, dt));
}

/* nll_loss: d logp = -g (over the count, or the summed class weights, of
 * kept targets for mean) times w_t = weight[target] (1 without class
 * weights; 0 at ignored targets), written at the target classes of an
 * otherwise zero d logp by nll_loss_backward: no one-hot [N, d..., C]
 * tensor, and under a mesh each rank writes only its own classes
 * (docs/distributed.md). Class weights get no gradient, as in PyTorch. */
int pdi_vjp_nll_loss(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int has_weight = n->a.nll_loss.has_weight != 0;
    if (has_weight && pdi_node_needs(n, 2))
        return pdi_errorf(PD_ERR_INVALID, "nll_loss: the class weights have no gradient (they are constants, as in "
                          "PyTorch); detach them or clear their requires_grad");
    if (!pdi_node_needs(n, 0)) return PD_OK;
    struct pd_tensor *logp = pdi_node_in(n, 0), *target = pdi_node_in(n, 1), *weight = NULL;
    if (!logp || !target || (has_weight && !(weight = pdi_node_in(n, 2)))) return pd_last_status();
    enum pd_dtype dt = n->in_meta[0].dtype;
    int64_t ignore = n->a.nll_loss.ignore_index;
    struct pd_tensor *valid = pd_ne(target, pd_scalar((double)ignore, PD_I64));
    /* ignored targets may hold any value (e.g. -100): point them at class 0, their weight is 0 */
    struct pd_tensor *safe = pd_where(valid, target, pd_scalar(0, target->dtype));
    struct pd_tensor *w = target_weights(target, valid, safe, weight, dt);
    if (n->a.nll_loss.reduction == PD_REDUCTION_MEAN) {
        /* when every target is ignored, w is all 0: divide by 1, not 0 */
        struct pd_tensor *s = pd_sum(w, NULL, 0, 0);
        w = pd_div(w, has_weight ? pd_where(pd_eq(s, pd_scalar(0, dt)), pd_scalar(1, dt), s)
                                 : pd_clip(s, 1.0, INFINITY));
    }
    w = pd_neg(pd_mul(w, g[0]));
    if (!w) return pdi_status_of(NULL, __func__);
    struct pd_tensor *in[3] = {logp, target, w};
    struct pdi_attrs a = {.nll_loss_backward = {.ignore_index = ignore}};
    gin[0] = pdi_calln(PD_OP_nll_loss_backward, in, 3, &a);
    return pdi_status_of(gin[0], __func__);
}

/* nll_loss_backward is linear in w: dw[n, d...] = g[n, target, d...] at
 * kept targets, 0 at ignored ones, which is -nll_loss(g, target) without
 * reduction. logp is read for its meta only: no gradient (zero); the
 * target is an index. */
int pdi_vjp_nll_loss_backward(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (!pdi_node_needs(n, 2)) return PD_OK;
    struct pd_tensor *target = pdi_node_in(n, 1);
    if (!target) return pd_last_status();
    gin[2] = pd_neg(pd_nll_loss(g[0], target, n->a.nll_loss_backward.ignore_index, PD_REDUCTION_NONE));
    return pdi_status_of(gin[2], __func__);
}

/* The dtype half-precision work is computed in: f32 for f16 and bf16. */
static enum pd_dtype compute_dtype(enum pd_dtype dt) { return dt == PD_F16 || dt == PD_BF16 ? PD_F32 : dt; }

static struct pd_tensor *cast_to(struct pd_tensor *t, enum pd_dtype dt)
{
    return t && t->dtype != dt ? pd_cast(t, dt) : t;
}

/* Shared backward of layer_norm (centre = 1) and rms_norm (centre = 0).
 * With xm = x - mean (or x), rstd = 1/sqrt(mean(xm^2) + eps), xhat = xm * rstd
 * and gh = g * w:
 *   dx = rstd * (gh - [mean(gh)] - xhat * mean(gh * xhat))
 *   dw = sum_lead(g * xhat), db = sum_lead(g).
 * bf16/f16 are computed in f32 and cast back. */
static int norm_vjp(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin, int centre)
{
    struct pd_tensor *x = pdi_node_in(n, 0);
    if (!x) return pd_last_status();
    int has_w = n->a.norm.has_w != 0, has_b = centre && n->a.norm.has_b != 0;
    struct pd_tensor *w = NULL;
    if (has_w && !(w = pdi_node_in(n, 1))) return pd_last_status();
    enum pd_dtype dt = x->dtype, ct = compute_dtype(dt);
    int k = (int)n->a.norm.n_norm_axes, nd = x->ndim, lead = nd - k;
    int axes[PD_MAX_DIMS], lax[PD_MAX_DIMS];
    for (int i = 0; i < k; i++) axes[i] = lead + i;
    for (int i = 0; i < lead; i++) lax[i] = i;

    struct pd_tensor *xc = cast_to(x, ct), *gc = cast_to(g[0], ct);
    struct pd_tensor *xm = centre ? pd_sub(xc, pd_mean(xc, axes, k, 1)) : xc;
    struct pd_tensor *rstd = pd_rsqrt(pd_add_scalar(pd_mean(pd_square(xm), axes, k, 1), n->a.norm.eps));
    struct pd_tensor *xhat = pd_mul(xm, rstd);
    struct pd_tensor *gh = has_w ? pd_mul(gc, cast_to(w, ct)) : gc;
    if (pdi_node_needs(n, 0)) {
        struct pd_tensor *inner = pd_sub(gh, pd_mul(xhat, pd_mean(pd_mul(gh, xhat), axes, k, 1)));
        if (centre) inner = pd_sub(inner, pd_mean(gh, axes, k, 1));
        gin[0] = cast_to(pd_mul(rstd, inner), dt);
        if (!gin[0]) return pdi_status_of(NULL, __func__);
    }
    /* parameter gradients sum over the leading (batch) dims */
    struct pd_tensor *gp[2] = {has_w ? pd_mul(gc, xhat) : NULL, has_b ? gc : NULL};
    for (int j = 0, slot = 1; j < 2; j++) {
        if (!(j == 0 ? has_w : has_b)) continue;
        if (pdi_node_needs(n, slot)) {
            struct pd_tensor *r = lead ? pd_sum(gp[j], lax, lead, 0) : gp[j];
            gin[slot] = cast_to(r, dt);
            if (!gin[slot]) return pdi_status_of(NULL, __func__);
        }
        slot++;
    }
    return PD_OK;
}

/* The first-order backward as one fused norm_backward call. Outputs nobody
 * asked for (dw when only dx is needed, ...) stay in the scope unused: they
 * cost one [M] accumulation, not a pass. */
static int norm_vjp_fused(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin, int centre)
{
    int has_w = n->a.norm.has_w != 0, has_b = centre && n->a.norm.has_b != 0;
    struct pd_tensor *in[3], *out[3];
    if (!(in[0] = pdi_node_in(n, 0))) return pd_last_status();
    if (!(in[1] = cast_to(g[0], in[0]->dtype))) return pdi_status_of(NULL, __func__);
    if (has_w && !(in[2] = pdi_node_in(n, 1))) return pd_last_status();
    struct pdi_call c = {.op = PD_OP_norm_backward, .n_in = 2 + has_w, .n_out = 1 + has_w + has_b, .in = in,
                         .out = out};
    c.a.norm_backward = (struct pdi_attrs_norm_backward){.n_norm_axes = n->a.norm.n_norm_axes, .eps = n->a.norm.eps,
                                                         .has_w = has_w, .has_b = has_b, .centre = centre};
    int rc = pdi_dispatch(&c);
    if (rc) return rc;
    for (int i = 0; i < c.n_out; i++)
        if (pdi_node_needs(n, i)) gin[i] = out[i];
    return PD_OK;
}

/* Fused when the backward is not itself recorded; composed (differentiable)
 * under create_graph. */
int pdi_vjp_layer_norm(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    return pd_is_grad_enabled() ? norm_vjp(n, g, gin, 1) : norm_vjp_fused(n, g, gin, 1);
}

int pdi_vjp_rms_norm(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    return pd_is_grad_enabled() ? norm_vjp(n, g, gin, 0) : norm_vjp_fused(n, g, gin, 0);
}

/* group_norm's shapes: x [N, C, d...] seen as [N, G, M] (M = C / G times
 * the d... sizes), and [1, C, 1...] for a parameter along x's channels. */
static void group_shapes(const struct pdi_meta *x, int64_t G, int64_t grp[3], int64_t chan[PD_MAX_DIMS])
{
    int64_t numel = pdi_numel(x->shape, x->ndim);
    grp[0] = x->shape[0];
    grp[1] = G;
    grp[2] = x->shape[0] && G ? numel / (x->shape[0] * G) : 0;
    for (int d = 0; d < x->ndim; d++) chan[d] = d == 1 ? x->shape[1] : 1;
}

/* group_norm: with xr = x as [N, G, M], xhat = (xr - mean) rstd over M and
 * gh = (g w) as [N, G, M]:
 *   dx = rstd (gh - mean(gh) - xhat mean(gh xhat)),
 *   dw = sum over N and d... of g xhat, db = the same of g.
 * Public ops only (differentiable again); bf16/f16 in f32. */
int pdi_vjp_group_norm(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0), *w = NULL;
    if (!x) return pd_last_status();
    int has_w = n->a.group_norm.has_w != 0, has_b = n->a.group_norm.has_b != 0;
    if (has_w && !(w = pdi_node_in(n, 1))) return pd_last_status();
    enum pd_dtype dt = x->dtype, ct = compute_dtype(dt);
    const struct pdi_meta *xm = &n->in_meta[0];
    int64_t grp[3], chan[PD_MAX_DIMS];
    group_shapes(xm, n->a.group_norm.num_groups, grp, chan);
    int ax2 = 2, nd = xm->ndim, pax[PD_MAX_DIMS], np = 0;
    for (int d = 0; d < nd; d++)
        if (d != 1) pax[np++] = d;
    struct pd_tensor *xr = pd_reshape(cast_to(x, ct), grp, 3), *gc = cast_to(g[0], ct);
    struct pd_tensor *xc = pd_sub(xr, pd_mean(xr, &ax2, 1, 1));
    struct pd_tensor *rstd = pd_rsqrt(pd_add_scalar(pd_mean(pd_square(xc), &ax2, 1, 1), n->a.group_norm.eps));
    struct pd_tensor *xhat = pd_mul(xc, rstd);
    if (pdi_node_needs(n, 0)) {
        struct pd_tensor *gh = pd_reshape(has_w ? pd_mul(gc, pd_reshape(cast_to(w, ct), chan, nd)) : gc, grp, 3);
        struct pd_tensor *inner = pd_sub(pd_sub(gh, pd_mean(gh, &ax2, 1, 1)),
                                         pd_mul(xhat, pd_mean(pd_mul(gh, xhat), &ax2, 1, 1)));
        gin[0] = cast_to(pd_reshape(pd_mul(rstd, inner), xm->shape, nd), dt);
        if (!gin[0]) return pdi_status_of(NULL, __func__);
    }
    if (has_w && pdi_node_needs(n, 1)) {
        gin[1] = cast_to(pd_sum(pd_mul(gc, pd_reshape(xhat, xm->shape, nd)), pax, np, 0), dt);
        if (!gin[1]) return pdi_status_of(NULL, __func__);
    }
    if (has_b && pdi_node_needs(n, 1 + has_w)) {
        gin[1 + has_w] = cast_to(pd_sum(gc, pax, np, 0), dt);
        if (!gin[1 + has_w]) return pdi_status_of(NULL, __func__);
    }
    return PD_OK;
}

int pdi_vjp_norm_backward(struct pdi_node *n, struct pd_tensor *const *gout, struct pd_tensor **gin)
{
    PDI_UNUSED(n);
    PDI_UNUSED(gout);
    PDI_UNUSED(gin);
    return pdi_errorf(PD_ERR_UNSUPPORTED, "norm_backward is not differentiable: take higher-order gradients of "
                                          "layer_norm/rms_norm with create_graph on (their VJP then composes "
                                          "differentiable ops)");
}

/* embedding: d weight = scatter-add of the rows of g at ids. index_add when
 * the index family provides it (memory O(V*D)); otherwise
 * one_hot(ids)^T @ g (memory O(n*V)). ids get no gradient. */
int pdi_vjp_embedding(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (!pdi_node_needs(n, 1)) return PD_OK;
    struct pd_tensor *ids = pdi_node_in(n, 0);
    if (!ids) return pd_last_status();
    const struct pdi_meta *wm = &n->in_meta[1];
    enum pd_dtype dt = wm->dtype;
    int64_t V = wm->shape[0], D = wm->shape[1], cnt = pd_tensor_numel(ids);
    int64_t s1[1] = {cnt}, s2[2] = {cnt, D};
    struct pd_tensor *flat = pd_reshape(ids, s1, 1);
    if (flat && flat->dtype != PD_I64 && flat->dtype != PD_I32) flat = pd_cast(flat, PD_I64);
    struct pd_tensor *g2 = pd_reshape(g[0], s2, 2);
    if (pdi_kernel_lookup(PDI_BACKEND_REF, PD_OP_index_add, dt))
        gin[1] = pd_index_add(pd_zeros(wm->shape, 2, dt), 0, flat, g2);
    else
        gin[1] = pd_matmul(pd_cast(pd_one_hot(flat, V), dt), g2, 1, 0);
    return pdi_status_of(gin[1], __func__);
}

/* ---- decompositions (primitive public ops) ---------------------------- */
/* Compute dtype of the decompositions: bf16/f16 in f32 and cast back, as
 * the fused kernels do. */

/* x - max(x, axis) (kept dims), in the compute dtype. The max is a
 * constant shift (softmax is invariant to it), so it is detached; an empty
 * x has no max to take and needs no shift. A 0-d x is a row of one. */
static struct pd_tensor *shifted(struct pd_tensor *x, int ax)
{
    struct pd_tensor *xc = cast_to(x, compute_dtype(x->dtype));
    if (xc && xc->ndim == 0) {
        int64_t one = 1;
        xc = pd_reshape(xc, &one, 1);
    }
    if (!xc || pd_tensor_numel(xc) == 0) return xc;
    return pd_sub(xc, pd_detach(pd_amax(xc, &ax, 1, 1)));
}

/* Back to x's dtype and, for a 0-d x, to 0-d. */
static struct pd_tensor *finish(struct pd_tensor *y, const struct pd_tensor *x)
{
    if (y && x->ndim == 0) y = pd_reshape(y, NULL, 0);
    return cast_to(y, x->dtype);
}

/* softmax = exp(x - max) / sum(exp(x - max)). */
int pdi_decomp_softmax(const struct pdi_call *c, struct pd_tensor **out)
{
    int ax = (int)c->a.softmax.axis;
    struct pd_tensor *e = pd_exp(shifted(c->in[0], ax));
    out[0] = finish(pd_div(e, pd_sum(e, &ax, 1, 1)), c->in[0]);
    return pdi_status_of(out[0], __func__);
}

/* log_softmax = (x - max) - log(sum(exp(x - max))). */
int pdi_decomp_log_softmax(const struct pdi_call *c, struct pd_tensor **out)
{
    int ax = (int)c->a.softmax.axis;
    struct pd_tensor *z = shifted(c->in[0], ax);
    out[0] = finish(pd_sub(z, pd_log(pd_sum(pd_exp(z), &ax, 1, 1))), c->in[0]);
    return pdi_status_of(out[0], __func__);
}

/* nll_loss: l = -logp[target] * weight[target] where target !=
 * ignore_index, else 0 (gathers along the class axis and from the
 * weights); sum, or mean over the kept targets' weights (their count
 * without class weights; 0/0 = NaN when every target is ignored, as the
 * kernels give). */
int pdi_decomp_nll_loss(const struct pdi_call *c, struct pd_tensor **out)
{
    struct pd_tensor *lp = c->in[0], *t = c->in[1];
    enum pd_dtype ct = compute_dtype(lp->dtype);
    int cax = lp->ndim == 1 ? 0 : 1;
    int64_t red = c->a.nll_loss.reduction;
    struct pd_tensor *valid = pd_ne(t, pd_scalar((double)c->a.nll_loss.ignore_index, PD_I64));
    /* ignored targets may hold any value (e.g. -100): gather class 0 there and drop it */
    struct pd_tensor *safe = cast_to(pd_where(valid, t, pd_scalar(0, t->dtype)), PD_I64);
    struct pd_tensor *picked = pd_squeeze(pd_gather(cast_to(lp, ct), cax, pd_unsqueeze(safe, cax)), cax);
    struct pd_tensor *wt = target_weights(t, valid, safe, c->a.nll_loss.has_weight ? c->in[2] : NULL, ct);
    if (c->a.nll_loss.has_weight) picked = pd_mul(picked, wt);
    struct pd_tensor *l = pd_where(valid, pd_neg(picked), pd_scalar(0, ct));
    if (red == PD_REDUCTION_SUM) l = pd_sum(l, NULL, 0, 0);
    if (red == PD_REDUCTION_MEAN) l = pd_div(pd_sum(l, NULL, 0, 0), pd_sum(wt, NULL, 0, 0));
    out[0] = cast_to(l, lp->dtype);
    return pdi_status_of(out[0], __func__);
}

/* nll_loss_backward, as nll_loss's VJP wrote it before the op existed:
 * one_hot(target) [N, d..., C] cast to w's dtype times w (zero at ignored
 * targets), moved to the [N, C, d...] layout. The op harness checks the
 * op against it on every row (values and the gradient in w). */
int pdi_decomp_nll_loss_backward(const struct pdi_call *c, struct pd_tensor **out)
{
    struct pd_tensor *lp = c->in[0], *t = c->in[1], *w = c->in[2];
    int64_t C = lp->ndim == 1 ? lp->shape[0] : lp->shape[1];
    if (C == 0) { /* no class: nothing to point the ignored targets at */
        out[0] = pd_zeros_like(lp);
        return pdi_status_of(out[0], __func__);
    }
    struct pd_tensor *valid = pd_ne(t, pd_scalar((double)c->a.nll_loss_backward.ignore_index, PD_I64));
    struct pd_tensor *safe = pd_where(valid, t, pd_scalar(0, t->dtype));
    struct pd_tensor *wk = pd_where(valid, w, pd_scalar(0, w->dtype));
    struct pd_tensor *grad = pd_mul(pd_cast(pd_one_hot(safe, C), w->dtype), pd_unsqueeze(wk, -1));
    if (grad && lp->ndim >= 2) {
        int perm[PD_MAX_DIMS], nd = lp->ndim;
        perm[0] = 0;
        perm[1] = nd - 1;
        for (int i = 2; i < nd; i++) perm[i] = i - 1;
        grad = pd_permute(grad, perm, nd);
    }
    out[0] = grad;
    return pdi_status_of(out[0], __func__);
}

/* layer_norm (centre = 1) and rms_norm (centre = 0) over the trailing
 * n_norm_axes dims: xm = x - mean (or x), y = xm / sqrt(mean(xm^2) + eps),
 * times the weight, plus the bias. */
static int norm_decomp(const struct pdi_call *c, struct pd_tensor **out, int centre)
{
    struct pd_tensor *x = c->in[0];
    int has_w = c->a.norm.has_w != 0, has_b = centre && c->a.norm.has_b != 0;
    enum pd_dtype ct = compute_dtype(x->dtype);
    int k = (int)c->a.norm.n_norm_axes, axes[PD_MAX_DIMS];
    for (int i = 0; i < k; i++) axes[i] = x->ndim - k + i;
    /* mean is itself a composite: sum times 1/M, M the normalised size */
    double inv_m = 1.0;
    for (int i = 0; i < k; i++) inv_m /= (double)(x->shape[x->ndim - k + i] ? x->shape[x->ndim - k + i] : 1);
    struct pd_tensor *xc = cast_to(x, ct);
    struct pd_tensor *xm = centre ? pd_sub(xc, pd_scale(pd_sum(xc, axes, k, 1), inv_m)) : xc;
    struct pd_tensor *var = pd_scale(pd_sum(pd_square(xm), axes, k, 1), inv_m);
    struct pd_tensor *y = pd_mul(xm, pd_rsqrt(pd_add_scalar(var, c->a.norm.eps)));
    if (has_w) y = pd_mul(y, cast_to(c->in[1], ct));
    if (has_b) y = pd_add(y, cast_to(c->in[1 + has_w], ct));
    out[0] = cast_to(y, x->dtype);
    return pdi_status_of(out[0], __func__);
}

int pdi_decomp_layer_norm(const struct pdi_call *c, struct pd_tensor **out) { return norm_decomp(c, out, 1); }

/* group_norm: x as [N, G, M], centred and scaled over M (means as sums
 * times 1/M), back to x's shape, times w and plus b along the channels. */
int pdi_decomp_group_norm(const struct pdi_call *c, struct pd_tensor **out)
{
    struct pd_tensor *x = c->in[0];
    int has_w = c->a.group_norm.has_w != 0, has_b = c->a.group_norm.has_b != 0, ax2 = 2;
    enum pd_dtype ct = compute_dtype(x->dtype);
    struct pdi_meta xm;
    pdi_meta_of(x, &xm);
    int64_t grp[3], chan[PD_MAX_DIMS];
    group_shapes(&xm, c->a.group_norm.num_groups, grp, chan);
    double inv_m = 1.0 / (double)(grp[2] ? grp[2] : 1);
    struct pd_tensor *xr = pd_reshape(cast_to(x, ct), grp, 3);
    struct pd_tensor *xc = pd_sub(xr, pd_scale(pd_sum(xr, &ax2, 1, 1), inv_m));
    struct pd_tensor *var = pd_scale(pd_sum(pd_square(xc), &ax2, 1, 1), inv_m);
    struct pd_tensor *y = pd_reshape(pd_mul(xc, pd_rsqrt(pd_add_scalar(var, c->a.group_norm.eps))), x->shape, x->ndim);
    if (has_w) y = pd_mul(y, pd_reshape(cast_to(c->in[1], ct), chan, x->ndim));
    if (has_b) y = pd_add(y, pd_reshape(cast_to(c->in[1 + has_w], ct), chan, x->ndim));
    out[0] = cast_to(y, x->dtype);
    return pdi_status_of(out[0], __func__);
}
int pdi_decomp_rms_norm(const struct pdi_call *c, struct pd_tensor **out) { return norm_decomp(c, out, 0); }

/* ---- public wrappers ------------------------------------------------- */
static struct pd_tensor *softmax_call(enum pd_op op, struct pd_tensor *x, int axis)
{
    if (!x) return NULL;
    int ax = x->ndim == 0 ? (axis == 0 || axis == -1 ? 0 : -1) : pdi_norm_axis(axis, x->ndim);
    if (ax < 0)
        return pdi_error(PD_ERR_INVALID, "%s: axis %d out of range for a %d-d tensor", pdi_ops[op].name, axis,
                         x->ndim);
    struct pdi_attrs a = {.softmax = {.axis = ax}};
    return pdi_call1(op, x, &a);
}

struct pd_tensor *pd_softmax(struct pd_tensor *x, int axis) { return softmax_call(PD_OP_softmax, x, axis); }
struct pd_tensor *pd_log_softmax(struct pd_tensor *x, int axis) { return softmax_call(PD_OP_log_softmax, x, axis); }

struct pd_tensor *pd_nll_loss(struct pd_tensor *logp, struct pd_tensor *target, int64_t ignore_index,
                              enum pd_reduction reduction)
{
    struct pdi_attrs a = {.nll_loss = {.ignore_index = ignore_index, .reduction = (int64_t)reduction}};
    return pdi_call2(PD_OP_nll_loss, logp, target, &a);
}

struct pd_tensor *pd_nll_loss_weighted(struct pd_tensor *logp, struct pd_tensor *target, struct pd_tensor *weight,
                                       int64_t ignore_index, enum pd_reduction reduction)
{
    if (!weight) return pd_nll_loss(logp, target, ignore_index, reduction);
    if (!logp || !target) return NULL;
    /* the weights follow logp's dtype, as the norms' parameters follow x */
    struct pd_tensor *in[3] = {logp, target, pd_dtype_is_float(weight->dtype) ? cast_to(weight, logp->dtype) : weight};
    struct pdi_attrs a = {.nll_loss = {.ignore_index = ignore_index, .reduction = (int64_t)reduction, .has_weight = 1}};
    return pdi_calln(PD_OP_nll_loss, in, 3, &a);
}

static struct pd_tensor *reduce_loss(struct pd_tensor *l, enum pd_reduction r)
{
    if (r == PD_REDUCTION_SUM) return pd_sum(l, NULL, 0, 0);
    if (r == PD_REDUCTION_MEAN) return pd_mean(l, NULL, 0, 0);
    return l;
}

/* The class weights [C] shaped to broadcast along logp's class axis. */
static struct pd_tensor *weight_along(struct pd_tensor *w, const struct pd_tensor *logp, int cax)
{
    int64_t shape[PD_MAX_DIMS];
    for (int d = 0; d < logp->ndim; d++) shape[d] = d == cax ? logp->shape[cax] : 1;
    return pd_reshape(w, shape, logp->ndim);
}

/* Probability targets (torch semantics): loss = -sum_c w_c t_c log_softmax(x)_c
 * with t smoothed to t (1 - eps) + eps / C and w the class weights (1
 * without); mean divides by numel / C, whatever the weights. */
static struct pd_tensor *cross_entropy_probs(struct pd_tensor *logp, struct pd_tensor *target, struct pd_tensor *w,
                                             int cax, int64_t C, double ls, enum pd_reduction reduction)
{
    struct pd_tensor *t = cast_to(target, logp->dtype);
    if (ls > 0) t = pd_add_scalar(pd_scale(t, 1.0 - ls), ls / (double)C);
    struct pd_tensor *lt = pd_mul(logp, t);
    if (w) lt = pd_mul(lt, weight_along(w, logp, cax));
    struct pd_tensor *l = pd_neg(pd_sum(lt, &cax, 1, 0));
    if (reduction != PD_REDUCTION_MEAN) return reduce_loss(l, reduction);
    int64_t rows = C > 0 ? pd_tensor_numel(logp) / C : 0;
    return pd_scale(pd_sum(l, NULL, 0, 0), rows ? 1.0 / (double)rows : NAN);
}

/* Class targets: (1 - eps) * nll + eps / C * smooth, where smooth is
 * -sum_c w_c logp_c (w the class weights, 1 without; 0 at ignored targets)
 * reduced like nll (mean: over the kept targets' weights, their count
 * without class weights), as PyTorch's cross_entropy. */
static struct pd_tensor *cross_entropy_classes(struct pd_tensor *logp, struct pd_tensor *target, struct pd_tensor *w,
                                               int cax, int64_t C, int64_t ignore_index, double ls,
                                               enum pd_reduction reduction)
{
    struct pd_tensor *nll = pd_nll_loss_weighted(logp, target, w, ignore_index, reduction);
    if (!(ls > 0)) return nll;
    struct pd_tensor *valid = pd_ne(target, pd_scalar((double)ignore_index, PD_I64));
    struct pd_tensor *lw = w ? pd_mul(logp, weight_along(w, logp, cax)) : logp;
    struct pd_tensor *smooth = pd_where(valid, pd_neg(pd_sum(lw, &cax, 1, 0)), pd_scalar(0, logp->dtype));
    struct pd_tensor *s = reduce_loss(smooth, reduction == PD_REDUCTION_MEAN ? PD_REDUCTION_SUM : reduction);
    if (reduction == PD_REDUCTION_MEAN) {
        struct pd_tensor *safe = w ? pd_where(valid, target, pd_scalar(0, target->dtype)) : NULL;
        s = pd_div(s, pd_sum(target_weights(target, valid, safe, w, logp->dtype), NULL, 0, 0));
    }
    return pd_add(pd_scale(nll, 1.0 - ls), pd_scale(s, ls / (double)C));
}

struct pd_tensor *pd_cross_entropy(struct pd_tensor *logits, struct pd_tensor *target, int64_t ignore_index,
                                   double label_smoothing, enum pd_reduction reduction)
{
    return pd_cross_entropy_weighted(logits, target, NULL, ignore_index, label_smoothing, reduction);
}

struct pd_tensor *pd_cross_entropy_weighted(struct pd_tensor *logits, struct pd_tensor *target,
                                            struct pd_tensor *weight, int64_t ignore_index, double label_smoothing,
                                            enum pd_reduction reduction)
{
    if (!logits || !target) return NULL;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (!pd_dtype_is_float(logits->dtype))
        return pdi_error(PD_ERR_INVALID, "cross_entropy: logits must be floating point, got %s",
                         pd_dtype_name(logits->dtype));
    if (logits->ndim < 1) return pdi_error(PD_ERR_INVALID, "cross_entropy: logits must have at least 1 dim (classes)");
    if ((unsigned)reduction >= PD_REDUCTION_COUNT)
        return pdi_error(PD_ERR_INVALID, "cross_entropy: reduction %d is not none (0), mean (1) or sum (2)",
                         (int)reduction);
    if (!(label_smoothing >= 0 && label_smoothing <= 1))
        return pdi_error(PD_ERR_INVALID, "cross_entropy: label_smoothing must be in [0, 1], got %g", label_smoothing);
    int cax = logits->ndim == 1 ? 0 : 1;
    int64_t C = logits->shape[cax];
    if (weight) {
        if (!pd_dtype_is_float(weight->dtype) || weight->ndim != 1 || weight->shape[0] != C)
            return pdi_error(PD_ERR_INVALID, "cross_entropy: weight must be floating point of shape [C] = [%lld], "
                             "got %s %s", (long long)C, pd_dtype_name(weight->dtype),
                             pdi_shape_str(weight->shape, weight->ndim, b0, sizeof b0));
        weight = cast_to(weight, logits->dtype);
    }
    if (pd_dtype_is_float(target->dtype)) {
        if (target->ndim != logits->ndim ||
            memcmp(target->shape, logits->shape, sizeof(int64_t) * (size_t)logits->ndim))
            return pdi_error(PD_ERR_INVALID,
                             "cross_entropy: floating-point target %s must be class probabilities with the logits' "
                             "shape %s (class indices must be integers)",
                             pdi_shape_str(target->shape, target->ndim, b0, sizeof b0),
                             pdi_shape_str(logits->shape, logits->ndim, b1, sizeof b1));
        if (ignore_index >= 0)
            return pdi_error(PD_ERR_INVALID,
                             "cross_entropy: ignore_index (%lld) is not supported with probability targets",
                             (long long)ignore_index);
        return cross_entropy_probs(pd_log_softmax(logits, cax), target, weight, cax, C, label_smoothing, reduction);
    }
    if (!is_int_dtype(target->dtype))
        return pdi_error(PD_ERR_INVALID, "cross_entropy: target must be integer class indices or float "
                         "probabilities, got %s", pd_dtype_name(target->dtype));
    if (check_class_target("cross_entropy", logits, target)) return NULL;
    return cross_entropy_classes(pd_log_softmax(logits, cax), target, weight, cax, C, ignore_index,
                                 label_smoothing, reduction);
}

struct pd_tensor *pd_mse_loss(struct pd_tensor *x, struct pd_tensor *y, enum pd_reduction reduction)
{
    if (!x || !y) return NULL;
    if ((unsigned)reduction >= PD_REDUCTION_COUNT)
        return pdi_error(PD_ERR_INVALID, "mse_loss: reduction %d is not none (0), mean (1) or sum (2)",
                         (int)reduction);
    return reduce_loss(pd_square(pd_sub(x, y)), reduction);
}

static struct pd_tensor *norm_call(enum pd_op op, struct pd_tensor *x, int n_norm_axes, struct pd_tensor *w,
                                   struct pd_tensor *b, double eps)
{
    if (!x) return NULL;
    struct pd_tensor *in[3] = {x, NULL, NULL};
    int n = 1;
    /* Mixed precision (bf16 x, f32 weight) is accepted: parameters follow x. */
    if (w) in[n++] = pd_dtype_is_float(w->dtype) ? cast_to(w, x->dtype) : w;
    if (b) in[n++] = pd_dtype_is_float(b->dtype) ? cast_to(b, x->dtype) : b;
    struct pdi_attrs a = {.norm = {.n_norm_axes = n_norm_axes, .eps = eps, .has_w = w != NULL, .has_b = b != NULL}};
    return pdi_calln(op, in, n, &a);
}

struct pd_tensor *pd_layer_norm(struct pd_tensor *x, int n_norm_axes, struct pd_tensor *weight,
                                struct pd_tensor *bias, double eps)
{
    return norm_call(PD_OP_layer_norm, x, n_norm_axes, weight, bias, eps);
}

struct pd_tensor *pd_rms_norm(struct pd_tensor *x, int n_norm_axes, struct pd_tensor *weight, double eps)
{
    return norm_call(PD_OP_rms_norm, x, n_norm_axes, weight, NULL, eps);
}

struct pd_tensor *pd_group_norm(struct pd_tensor *x, int64_t num_groups, struct pd_tensor *weight,
                                struct pd_tensor *bias, double eps)
{
    if (!x) return NULL;
    struct pd_tensor *in[3] = {x, NULL, NULL};
    int n = 1;
    /* mixed precision (bf16 x, f32 weight) is accepted: parameters follow x */
    if (weight) in[n++] = pd_dtype_is_float(weight->dtype) ? cast_to(weight, x->dtype) : weight;
    if (bias) in[n++] = pd_dtype_is_float(bias->dtype) ? cast_to(bias, x->dtype) : bias;
    struct pdi_attrs a = {.group_norm = {.num_groups = num_groups, .eps = eps, .has_w = weight != NULL,
                                         .has_b = bias != NULL}};
    return pdi_calln(PD_OP_group_norm, in, n, &a);
}

/* x * mask * 1/(1-p) with mask ~ Bernoulli(1 - p) from g: the gradient comes
 * from mul/scale, and the same generator state reproduces the mask. */
struct pd_tensor *pd_dropout(struct pd_tensor *x, double p, int training, struct pd_generator *g)
{
    if (!x) return NULL;
    if (!(p >= 0 && p <= 1)) return pdi_error(PD_ERR_INVALID, "dropout: p must be in [0, 1], got %g", p);
    if (!pd_dtype_is_float(x->dtype))
        return pdi_error(PD_ERR_INVALID, "dropout: x must be floating point, got %s", pd_dtype_name(x->dtype));
    if (!training || p == 0) {
        pd_tensor_retain(x); /* x itself, one more owner in this scope */
        return pdi_scope_add(x);
    }
    if (p == 1) return pd_mul(x, pd_scalar(0, x->dtype)); /* as torch: zeros, NaN stays NaN */
    enum pd_dtype pdt = x->dtype == PD_F64 ? PD_F64 : PD_F32;
    struct pd_tensor *keep = pd_full(x->shape, x->ndim, 1.0 - p, pdt);
    struct pd_tensor *mask = cast_to(pd_bernoulli(keep, g), x->dtype);
    return pd_scale(pd_mul(x, mask), 1.0 / (1.0 - p));
}

struct pd_tensor *pd_embedding(struct pd_tensor *ids, struct pd_tensor *weight)
{
    return pdi_call2(PD_OP_embedding, ids, weight, NULL);
}

struct pd_tensor *pd_one_hot(struct pd_tensor *ids, int64_t num_classes)
{
    if (!ids) return NULL;
    if (!is_int_dtype(ids->dtype))
        return pdi_error(PD_ERR_INVALID, "one_hot: ids must be integers, got %s", pd_dtype_name(ids->dtype));
    if (num_classes < -1)
        return pdi_error(PD_ERR_INVALID, "one_hot: num_classes must be -1 (infer) or >= 0, got %lld",
                         (long long)num_classes);
    if (num_classes == -1) {
        /* Inferred from the data: a host read (as in torch's one_hot),
         * through the public pd_to_buffer so that it is a host read like a
         * user's (the host-read entry point observes those). */
        int64_t n = pd_tensor_numel(ids), mx = -1;
        if (n == 0) return pdi_error(PD_ERR_INVALID, "one_hot: cannot infer num_classes from an empty tensor");
        size_t bytes = (size_t)n * sizeof(int64_t);
        int64_t *cls = pdi_alloc(bytes);
        if (!cls) return pdi_error(PD_ERR_NOMEM, "one_hot: out of memory (%zu bytes)", bytes);
        /* a distributed tensor: its whole value (collective, every rank reads) */
        struct pd_tensor *all = ids->dist && pdi_dist_hooks ? pdi_dist_hooks->full(ids) : ids;
        int rc = all ? pd_to_buffer(all, cls, PD_I64) : pd_last_status(); /* integer to int64: exact */
        for (int64_t i = 0; !rc && i < n; i++) {
            if (cls[i] < 0)
                rc = pdi_errorf(PD_ERR_INVALID, "one_hot: class value %lld at position %lld is negative",
                                (long long)cls[i], (long long)i);
            if (cls[i] > mx) mx = cls[i];
        }
        pdi_free(cls, bytes);
        if (rc) {
            pdi_error_prefix("one_hot"); /* "one_hot: to_buffer: ... is meta" */
            return NULL;
        }
        if (mx == INT64_MAX)
            return pdi_error(PD_ERR_INVALID, "one_hot: class value %lld leaves no room for a count", (long long)mx);
        num_classes = mx + 1;
    }
    struct pdi_attrs a = {.one_hot = {.num_classes = num_classes}};
    return pdi_call1(PD_OP_one_hot, ids, &a);
}
