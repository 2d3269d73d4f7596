/* paddle.c — linear algebra and convolution ops: matmul (batched, broadcast,
 * transposed operands), conv2d and its two backward ops, max/avg pooling and
 * their backward ops; the composites over them (pd_matmul with 1-d operands,
 * bmm, linear, outer, dot, conv1d).
 *
 * Invariants:
 *   - every op here takes floating inputs of one dtype (the wrappers promote);
 *   - matmul sees operands of at least 2 dims: pd_matmul turns 1-d operands
 *     into [1, K] / [K, 1] and squeezes the result, as NumPy does;
 *   - conv/pool shapes are checked by one geometry function each, shared by
 *     the forward op and its backward ops, so they can never disagree;
 *   - VJP rules use public ops (and pdi_call* of this family's helper ops)
 *     only, so every rule is itself differentiable. The backward ops are
 *     linear in each input, and their VJPs close the set: conv2d,
 *     conv2d_backward_data and conv2d_backward_weight are each other's
 *     transposes; max_pool2d_backward and max_pool2d_gather likewise.
 */
#include <string.h>

#include "core/internal.h"

static int check_float_same(const char *op, struct pd_tensor *const *in, int n)
{
    for (int i = 0; i < n; i++) {
        if (!pd_dtype_is_float(in[i]->dtype))
            return pdi_errorf(PD_ERR_INVALID, "%s: input %d has dtype %s; expected a floating dtype", op, i,
                              pd_dtype_name(in[i]->dtype));
        if (in[i]->dtype != in[0]->dtype)
            return pdi_errorf(PD_ERR_INVALID, "%s: input %d has dtype %s but input 0 has %s; expected one dtype", op,
                              i, pd_dtype_name(in[i]->dtype), pd_dtype_name(in[0]->dtype));
    }
    return PD_OK;
}

/* ---- matmul ---------------------------------------------------------- */
int pdi_infer_matmul(struct pdi_call *c)
{
    const struct pd_tensor *a = c->in[0], *b = c->in[1];
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (check_float_same("matmul", c->in, 2)) return PD_ERR_INVALID;
    if (a->ndim < 2 || b->ndim < 2)
        return pdi_errorf(PD_ERR_INVALID, "matmul: operands must have at least 2 dims, got %s and %s",
                          pdi_shape_str(a->shape, a->ndim, b0, sizeof b0), pdi_shape_str(b->shape, b->ndim, b1, sizeof b1));
    int64_t ta = c->a.matmul.trans_a, tb = c->a.matmul.trans_b;
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
        return pdi_errorf(PD_ERR_INVALID, "matmul: trans_a/trans_b must be 0 or 1, got %lld and %lld", (long long)ta,
                          (long long)tb);
    int na = a->ndim, nb = b->ndim;
    int64_t m = a->shape[na - 2 + (int)ta], ka = a->shape[na - 1 - (int)ta];
    int64_t kb = b->shape[nb - 2 + (int)tb], n = b->shape[nb - 1 - (int)tb];
    if (ka != kb)
        return pdi_errorf(PD_ERR_INVALID,
                          "matmul: inner dimensions differ: a %s (trans_a=%lld) has %lld columns, b %s (trans_b=%lld) "
                          "has %lld rows", pdi_shape_str(a->shape, na, b0, sizeof b0), (long long)ta, (long long)ka,
                          pdi_shape_str(b->shape, nb, b1, sizeof b1), (long long)tb, (long long)kb);
    struct pdi_meta *o = &c->meta[0];
    int nd = 0;
    if (pdi_broadcast_shapes(a->shape, na - 2, b->shape, nb - 2, o->shape, &nd))
        return pdi_errorf(PD_ERR_INVALID, "matmul: batch dims of %s and %s do not broadcast",
                          pdi_shape_str(a->shape, na, b0, sizeof b0), pdi_shape_str(b->shape, nb, b1, sizeof b1));
    o->shape[nd] = m;
    o->shape[nd + 1] = n;
    o->ndim = nd + 2;
    o->dtype = a->dtype;
    return PD_OK;
}

static struct pd_tensor *mm(struct pd_tensor *a, struct pd_tensor *b, int ta, int tb)
{
    struct pdi_attrs at = {.matmul = {.trans_a = ta, .trans_b = tb}};
    return pdi_call2(PD_OP_matmul, a, b, &at);
}

/* C = op(A) op(B):  dL/dop(A) = G op(B)^T,  dL/dop(B) = op(A)^T G; a
 * transposed operand takes the transpose of that, folded into the flags.
 * Broadcast batch dims are summed back with pd_sum_to_shape. */
int pdi_vjp_matmul(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int ta = (int)n->a.matmul.trans_a, tb = (int)n->a.matmul.trans_b;
    struct pd_tensor *a = pdi_node_in(n, 0), *b = pdi_node_in(n, 1);
    if (!a || !b) return pd_last_status();
    const struct pdi_meta *ma = &n->in_meta[0], *mb = &n->in_meta[1];
    if (pdi_node_needs(n, 0)) {
        struct pd_tensor *r = ta ? mm(b, g[0], tb, 1) : mm(g[0], b, 0, !tb);
        gin[0] = pd_sum_to_shape(r, ma->shape, ma->ndim);
        if (!gin[0]) return pd_last_status();
    }
    if (pdi_node_needs(n, 1)) {
        struct pd_tensor *r;
        if (mb->ndim == 2 && ma->ndim > 2 && !ta) {
            /* 2-d weight under a batched a (linear layers): one GEMM over
             * the flattened rows instead of a batch of GEMMs and a sum. */
            int64_t sa[2] = {-1, ma->shape[ma->ndim - 1]}, sg[2] = {-1, g[0]->shape[g[0]->ndim - 1]};
            struct pd_tensor *a2 = pd_reshape(a, sa, 2), *g2 = pd_reshape(g[0], sg, 2);
            r = tb ? mm(g2, a2, 1, 0) : mm(a2, g2, 1, 0);
        } else {
            r = tb ? mm(g[0], a, 1, ta) : mm(a, g[0], !ta, 0);
        }
        gin[1] = pd_sum_to_shape(r, mb->shape, mb->ndim);
        if (!gin[1]) return pd_last_status();
    }
    return PD_OK;
}

/* Same dtype for both operands (promoted like the binary ops). */
static int promote_pair(const char *op, struct pd_tensor **a, struct pd_tensor **b)
{
    if ((*a)->dtype == (*b)->dtype) return PD_OK;
    enum pd_dtype dt = pd_promote_types((*a)->dtype, (*b)->dtype);
    if (!pd_dtype_is_float(dt))
        return pdi_errorf(PD_ERR_INVALID, "%s: dtypes %s and %s; expected floating point", op,
                          pd_dtype_name((*a)->dtype), pd_dtype_name((*b)->dtype));
    if ((*a)->dtype != dt) *a = pd_cast(*a, dt);
    if ((*b)->dtype != dt) *b = pd_cast(*b, dt);
    return *a && *b ? PD_OK : pd_last_status();
}

struct pd_tensor *pd_matmul(struct pd_tensor *a, struct pd_tensor *b, int trans_a, int trans_b)
{
    if (!a || !b) return NULL;
    if (a->ndim == 0 || b->ndim == 0)
        return pdi_error(PD_ERR_INVALID, "matmul: operands must be at least 1-d, got %d-d and %d-d", a->ndim, b->ndim);
    if (promote_pair("matmul", &a, &b)) return NULL;
    /* NumPy: a 1-d a is a row [1, K], a 1-d b a column [K, 1]; the added
     * dim is removed from the result. Transposing a vector is a no-op. */
    int va = a->ndim == 1, vb = b->ndim == 1;
    struct pd_tensor *a2 = va ? pd_unsqueeze(a, 0) : a;
    struct pd_tensor *b2 = vb ? pd_unsqueeze(b, 1) : b;
    struct pd_tensor *r = mm(a2, b2, va ? 0 : trans_a != 0, vb ? 0 : trans_b != 0);
    if (vb) r = pd_squeeze(r, -1);
    if (va) r = pd_squeeze(r, vb ? -1 : -2);
    return r;
}

struct pd_tensor *pd_bmm(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b) return NULL;
    if (a->ndim != 3 || b->ndim != 3 || a->shape[0] != b->shape[0]) {
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        return pdi_error(PD_ERR_INVALID, "bmm: expected [B, M, K] and [B, K, N], got %s and %s",
                         pdi_shape_str(a->shape, a->ndim, b0, sizeof b0), pdi_shape_str(b->shape, b->ndim, b1, sizeof b1));
    }
    return pd_matmul(a, b, 0, 0);
}

struct pd_tensor *pd_linear(struct pd_tensor *x, struct pd_tensor *w, struct pd_tensor *bias)
{
    if (!x || !w) return NULL;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (w->ndim != 2 || x->ndim < 1 || x->shape[x->ndim - 1] != w->shape[1])
        return pdi_error(PD_ERR_INVALID, "linear: x %s and weight %s; expected x [..., in] and weight [out, in]",
                         pdi_shape_str(x->shape, x->ndim, b0, sizeof b0), pdi_shape_str(w->shape, w->ndim, b1, sizeof b1));
    if (bias && !(bias->ndim == 0 || (bias->ndim == 1 && (bias->shape[0] == w->shape[0] || bias->shape[0] == 1))))
        return pdi_error(PD_ERR_INVALID, "linear: bias %s; expected [%lld]",
                         pdi_shape_str(bias->shape, bias->ndim, b0, sizeof b0), (long long)w->shape[0]);
    struct pd_tensor *y = pd_matmul(x, w, 0, 1);
    return bias ? pd_add(y, bias) : y;
}

struct pd_tensor *pd_outer(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b) return NULL;
    if (a->ndim != 1 || b->ndim != 1)
        return pdi_error(PD_ERR_INVALID, "outer: expected two 1-d tensors, got %d-d and %d-d", a->ndim, b->ndim);
    return pd_matmul(pd_unsqueeze(a, 1), pd_unsqueeze(b, 0), 0, 0);
}

struct pd_tensor *pd_dot(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b) return NULL;
    if (a->ndim != 1 || b->ndim != 1 || a->shape[0] != b->shape[0])
        return pdi_error(PD_ERR_INVALID, "dot: expected two 1-d tensors of one length, got %d-d [%lld] and %d-d [%lld]",
                         a->ndim, a->ndim ? (long long)a->shape[0] : 0LL, b->ndim, b->ndim ? (long long)b->shape[0] : 0LL);
    return pd_matmul(a, b, 0, 0);
}

/* ---- conv2d ---------------------------------------------------------- */
/* Validates a conv2d geometry (x [N,C,H,W], w [O,C/g,KH,KW], attrs) and
 * gives the output shape [N,O,OH,OW]. The attributes are read as conv2d's
 * set, which the backward ops' sets begin with. */
static int conv_geom(const char *op, const int64_t *xs, const int64_t *ws, const struct pdi_attrs *a, int64_t *ys)
{
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    const struct pdi_attrs_conv2d *p = &a->conv2d;
    if (p->stride_h < 1 || p->stride_w < 1 || p->pad_h < 0 || p->pad_w < 0 || p->dilation_h < 1 ||
        p->dilation_w < 1 || p->groups < 1)
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: stride (%lld, %lld) and dilation (%lld, %lld) must be >= 1, padding (%lld, %lld) >= 0, "
                          "groups %lld >= 1", op, (long long)p->stride_h, (long long)p->stride_w,
                          (long long)p->dilation_h, (long long)p->dilation_w, (long long)p->pad_h,
                          (long long)p->pad_w, (long long)p->groups);
    int64_t g = p->groups;
    if (ws[0] % g || xs[1] % g || ws[1] * g != xs[1] || ws[2] < 1 || ws[3] < 1)
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: input %s and weight %s with groups %lld; expected weight [O, C/groups, KH, KW] with O "
                          "and C divisible by groups and KH, KW >= 1", op, pdi_shape_str(xs, 4, b0, sizeof b0),
                          pdi_shape_str(ws, 4, b1, sizeof b1), (long long)g);
    /* extreme attributes (replayed calls) must not overflow: checked */
    int64_t eh, ew, hp, wp;
    if (__builtin_mul_overflow(p->dilation_h, ws[2] - 1, &eh) || __builtin_add_overflow(eh, 1, &eh) ||
        __builtin_mul_overflow(p->dilation_w, ws[3] - 1, &ew) || __builtin_add_overflow(ew, 1, &ew) ||
        __builtin_mul_overflow(p->pad_h, 2, &hp) || __builtin_add_overflow(hp, xs[2], &hp) ||
        __builtin_mul_overflow(p->pad_w, 2, &wp) || __builtin_add_overflow(wp, xs[3], &wp))
        return pdi_errorf(PD_ERR_INVALID, "%s: padding (%lld, %lld) or dilation (%lld, %lld) too large", op,
                          (long long)p->pad_h, (long long)p->pad_w, (long long)p->dilation_h, (long long)p->dilation_w);
    if (hp < eh || wp < ew)
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: padded input %lldx%lld is smaller than the dilated kernel %lldx%lld (input %s, weight %s)",
                          op, (long long)hp, (long long)wp, (long long)eh, (long long)ew, pdi_shape_str(xs, 4, b0, sizeof b0),
                          pdi_shape_str(ws, 4, b1, sizeof b1));
    ys[0] = xs[0];
    ys[1] = ws[0];
    ys[2] = (hp - eh) / p->stride_h + 1;
    ys[3] = (wp - ew) / p->stride_w + 1;
    return PD_OK;
}

static int want_4d(const char *op, const char *what, const struct pd_tensor *t)
{
    if (t->ndim == 4) return PD_OK;
    char b0[PDI_SHAPE_BUF];
    return pdi_errorf(PD_ERR_INVALID, "%s: %s must be 4-d, got %s", op, what, pdi_shape_str(t->shape, t->ndim, b0, sizeof b0));
}

/* A backward op's shape attribute (field name: what) into s[4]. */
static int shape_attr(const char *op, const char *what, const struct pdi_ints *a, int64_t *s)
{
    if (a->n != 4)
        return pdi_errorf(PD_ERR_INVALID, "%s: attribute %s must hold a 4-d shape, has %lld entries", op, what,
                          (long long)a->n);
    for (int i = 0; i < 4; i++) {
        if (a->v[i] < 0) return pdi_errorf(PD_ERR_INVALID, "%s: negative dimension in shape attribute", op);
        s[i] = a->v[i];
    }
    return PD_OK;
}

static int same_shape(const char *op, const char *what, const int64_t *want, const struct pd_tensor *t)
{
    if (t->ndim == 4 && !memcmp(want, t->shape, 4 * sizeof(int64_t))) return PD_OK;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    return pdi_errorf(PD_ERR_INVALID, "%s: %s has shape %s; expected %s", op, what,
                      pdi_shape_str(t->shape, t->ndim, b0, sizeof b0), pdi_shape_str(want, 4, b1, sizeof b1));
}

static void set_meta4(struct pdi_meta *m, const int64_t *s, enum pd_dtype dt)
{
    m->dtype = dt;
    m->ndim = 4;
    memcpy(m->shape, s, 4 * sizeof(int64_t));
}

int pdi_infer_conv2d(struct pdi_call *c)
{
    if (c->n_in != 2 && c->n_in != 3) return pdi_errorf(PD_ERR_INVALID, "conv2d: expected 2 or 3 inputs, got %d", c->n_in);
    if (c->n_out != 1) return pdi_errorf(PD_ERR_INVALID, "conv2d: expected 1 output");
    if (check_float_same("conv2d", c->in, c->n_in) || want_4d("conv2d", "input", c->in[0]) ||
        want_4d("conv2d", "weight", c->in[1]))
        return PD_ERR_INVALID;
    int64_t ys[4];
    if (conv_geom("conv2d", c->in[0]->shape, c->in[1]->shape, &c->a, ys)) return PD_ERR_INVALID;
    if (c->n_in == 3) {
        const struct pd_tensor *bias = c->in[2];
        if (bias->ndim != 1 || bias->shape[0] != ys[1]) {
            char b0[PDI_SHAPE_BUF];
            return pdi_errorf(PD_ERR_INVALID, "conv2d: bias %s; expected [%lld]",
                              pdi_shape_str(bias->shape, bias->ndim, b0, sizeof b0), (long long)ys[1]);
        }
    }
    set_meta4(&c->meta[0], ys, c->in[0]->dtype);
    return PD_OK;
}

int pdi_infer_conv2d_backward_data(struct pdi_call *c)
{
    const char *op = "conv2d_backward_data";
    int64_t xs[4], ys[4];
    if (check_float_same(op, c->in, 2) || want_4d(op, "weight", c->in[1]) ||
        shape_attr(op, "input_shape", &c->a.conv2d_backward_data.input_shape, xs) ||
        conv_geom(op, xs, c->in[1]->shape, &c->a, ys) || same_shape(op, "gout", ys, c->in[0]))
        return PD_ERR_INVALID;
    set_meta4(&c->meta[0], xs, c->in[0]->dtype);
    return PD_OK;
}

int pdi_infer_conv2d_backward_weight(struct pdi_call *c)
{
    const char *op = "conv2d_backward_weight";
    int64_t ws[4], ys[4];
    if (check_float_same(op, c->in, 2) || want_4d(op, "input", c->in[1]) ||
        shape_attr(op, "weight_shape", &c->a.conv2d_backward_weight.weight_shape, ws) ||
        conv_geom(op, c->in[1]->shape, ws, &c->a, ys) || same_shape(op, "gout", ys, c->in[0]))
        return PD_ERR_INVALID;
    set_meta4(&c->meta[0], ws, c->in[0]->dtype);
    return PD_OK;
}

/* A 4-d shape as a list attribute. */
static struct pdi_ints ints4(const int64_t *s)
{
    struct pdi_ints r = {.n = 4};
    memcpy(r.v, s, 4 * sizeof(int64_t));
    return r;
}

/* The conv ops' attributes from any conv set a (read as conv2d's, which
 * every conv set begins with), with the backward ops' shape. */
static struct pdi_attrs conv_attrs(enum pd_op op, const struct pdi_attrs *a, const int64_t *shape)
{
    struct pdi_attrs r;
    memset(&r, 0, sizeof r);
    r.conv2d = a->conv2d;
    if (op == PD_OP_conv2d_backward_data) r.conv2d_backward_data.input_shape = ints4(shape);
    if (op == PD_OP_conv2d_backward_weight) r.conv2d_backward_weight.weight_shape = ints4(shape);
    return r;
}

static struct pd_tensor *conv_fwd(struct pd_tensor *x, struct pd_tensor *w, const struct pdi_attrs *a)
{
    struct pdi_attrs r = conv_attrs(PD_OP_conv2d, a, NULL);
    return pdi_call2(PD_OP_conv2d, x, w, &r);
}

static struct pd_tensor *conv_bwd_data(struct pd_tensor *g, struct pd_tensor *w, const struct pdi_attrs *a,
                                       const int64_t *xshape)
{
    struct pdi_attrs r = conv_attrs(PD_OP_conv2d_backward_data, a, xshape);
    return pdi_call2(PD_OP_conv2d_backward_data, g, w, &r);
}

static struct pd_tensor *conv_bwd_weight(struct pd_tensor *g, struct pd_tensor *x, const struct pdi_attrs *a,
                                         const int64_t *wshape)
{
    struct pdi_attrs r = conv_attrs(PD_OP_conv2d_backward_weight, a, wshape);
    return pdi_call2(PD_OP_conv2d_backward_weight, g, x, &r);
}

/* y = conv(x, w) + b:  gx = conv_bwd_data(g, w),  gw = conv_bwd_weight(g, x),
 * gb = sum of g over N, H, W. */
int pdi_vjp_conv2d(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (pdi_node_needs(n, 0)) {
        struct pd_tensor *w = pdi_node_in(n, 1);
        if (!w || !(gin[0] = conv_bwd_data(g[0], w, &n->a, n->in_meta[0].shape))) return pd_last_status();
    }
    if (pdi_node_needs(n, 1)) {
        struct pd_tensor *x = pdi_node_in(n, 0);
        if (!x || !(gin[1] = conv_bwd_weight(g[0], x, &n->a, n->in_meta[1].shape))) return pd_last_status();
    }
    if (n->n_in == 3 && pdi_node_needs(n, 2)) {
        int axes[3] = {0, 2, 3};
        if (!(gin[2] = pd_sum(g[0], axes, 3, 0))) return pd_last_status();
    }
    return PD_OK;
}

/* gx = D(g, w) is bilinear; with gg of x's shape:
 * <gg, D(g, w)> = <conv(gg, w), g> = <conv_bwd_weight(g, gg), w>. */
int pdi_vjp_conv2d_backward_data(struct pdi_node *n, struct pd_tensor *const *gg, struct pd_tensor **gin)
{
    if (pdi_node_needs(n, 0)) {
        struct pd_tensor *w = pdi_node_in(n, 1);
        if (!w || !(gin[0] = conv_fwd(gg[0], w, &n->a))) return pd_last_status();
    }
    if (pdi_node_needs(n, 1)) {
        struct pd_tensor *g = pdi_node_in(n, 0);
        if (!g || !(gin[1] = conv_bwd_weight(g, gg[0], &n->a, n->in_meta[1].shape))) return pd_last_status();
    }
    return PD_OK;
}

/* gw = W(g, x); with gg of w's shape:
 * <gg, W(g, x)> = <conv(x, gg), g> = <conv_bwd_data(g, gg), x>. */
int pdi_vjp_conv2d_backward_weight(struct pdi_node *n, struct pd_tensor *const *gg, struct pd_tensor **gin)
{
    if (pdi_node_needs(n, 0)) {
        struct pd_tensor *x = pdi_node_in(n, 1);
        if (!x || !(gin[0] = conv_fwd(x, gg[0], &n->a))) return pd_last_status();
    }
    if (pdi_node_needs(n, 1)) {
        struct pd_tensor *g = pdi_node_in(n, 0);
        if (!g || !(gin[1] = conv_bwd_data(g, gg[0], &n->a, n->in_meta[1].shape))) return pd_last_status();
    }
    return PD_OK;
}

/* Accepts an unbatched input ([C, ...]) by adding and removing N = 1. */
static struct pd_tensor *batched(struct pd_tensor *x, int want, int *added)
{
    *added = x->ndim == want - 1;
    return *added ? pd_unsqueeze(x, 0) : x;
}

static struct pd_tensor *conv2d_call(struct pd_tensor *x, struct pd_tensor *w, struct pd_tensor *bias,
                                     const int64_t *s, const int64_t *p, const int64_t *d, int groups)
{
    struct pdi_attrs a = {.conv2d = {.stride_h = s[0], .stride_w = s[1], .pad_h = p[0], .pad_w = p[1],
                                     .dilation_h = d[0], .dilation_w = d[1], .groups = groups}};
    struct pd_tensor *in[3] = {x, w, bias};
    return pdi_calln(PD_OP_conv2d, in, bias ? 3 : 2, &a);
}

/* Bias/weight promoted to x's dtype family. */
static int promote_conv(const char *op, struct pd_tensor **x, struct pd_tensor **w, struct pd_tensor **bias)
{
    if (promote_pair(op, x, w)) return pd_last_status();
    if (*bias && (*bias)->dtype != (*x)->dtype) {
        if (!pd_dtype_is_float((*bias)->dtype))
            return pdi_errorf(PD_ERR_INVALID, "%s: bias has dtype %s; expected floating point", op,
                              pd_dtype_name((*bias)->dtype));
        *bias = pd_cast(*bias, (*x)->dtype);
        if (!*bias) return pd_last_status();
    }
    return PD_OK;
}

struct pd_tensor *pd_conv2d(struct pd_tensor *x, struct pd_tensor *w, struct pd_tensor *bias, const int *stride,
                            const int *padding, const int *dilation, int groups)
{
    if (!x || !w) return NULL;
    if (promote_conv("conv2d", &x, &w, &bias)) return NULL;
    int added;
    x = batched(x, 4, &added);
    int64_t s[2] = {stride ? stride[0] : 1, stride ? stride[1] : 1};
    int64_t p[2] = {padding ? padding[0] : 0, padding ? padding[1] : 0};
    int64_t d[2] = {dilation ? dilation[0] : 1, dilation ? dilation[1] : 1};
    struct pd_tensor *y = conv2d_call(x, w, bias, s, p, d, groups);
    return added ? pd_squeeze(y, 0) : y;
}

/* conv1d is conv2d over [N, C, 1, L] with a [O, C/g, 1, K] kernel. */
struct pd_tensor *pd_conv1d(struct pd_tensor *x, struct pd_tensor *w, struct pd_tensor *bias, int stride,
                            int padding, int dilation, int groups)
{
    if (!x || !w) return NULL;
    if (promote_conv("conv1d", &x, &w, &bias)) return NULL;
    int added;
    x = batched(x, 3, &added);
    if (x && (x->ndim != 3 || w->ndim != 3)) {
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        return pdi_error(PD_ERR_INVALID, "conv1d: expected input [N, C, L] and weight [O, C/groups, K], got %s and %s",
                         pdi_shape_str(x->shape, x->ndim, b0, sizeof b0), pdi_shape_str(w->shape, w->ndim, b1, sizeof b1));
    }
    int64_t s[2] = {1, stride}, p[2] = {0, padding}, d[2] = {1, dilation};
    struct pd_tensor *y = pd_squeeze(conv2d_call(pd_unsqueeze(x, 2), pd_unsqueeze(w, 2), bias, s, p, d, groups), 2);
    return added ? pd_squeeze(y, 0) : y;
}

/* ---- pools ----------------------------------------------------------- */
static int is_avg_pool(enum pd_op op) { return op == PD_OP_avg_pool2d || op == PD_OP_avg_pool2d_backward; }

/* Pooled size of one dim: floor((n + 2 pad - k) / s) + 1; with ceil_mode
 * rounded up instead, less one if that last window would start past the
 * input and the left padding (PyTorch's rule). span = n + 2 pad - k >= 0. */
static int64_t pool_out_size(int64_t n, int64_t k, int64_t s, int64_t pad, int64_t ceil)
{
    int64_t span = n + 2 * pad - k, o = span / s + 1;
    if (ceil && span % s) o++;
    if (ceil && o - 1 > (n + pad - 1) / s) o--; /* (o - 1) s >= n + pad, without overflow (n >= 1) */
    return o;
}

/* Validates a pooling geometry (attributes read as pool2d's set, which the
 * avg sets begin with) and gives the pooled shape. */
static int pool_geom(enum pd_op opid, const int64_t *xs, const struct pdi_attrs *a, int64_t *ys)
{
    const char *op = pdi_ops[opid].name;
    const struct pdi_attrs_pool2d *p = &a->pool2d;
    char b0[PDI_SHAPE_BUF];
    if (p->kernel_h < 1 || p->kernel_w < 1 || p->stride_h < 1 || p->stride_w < 1 || p->pad_h < 0 || p->pad_w < 0 ||
        p->pad_h > p->kernel_h / 2 || p->pad_w > p->kernel_w / 2)
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: kernel (%lld, %lld) and stride (%lld, %lld) must be >= 1 and padding (%lld, %lld) "
                          "between 0 and half the kernel", op, (long long)p->kernel_h, (long long)p->kernel_w,
                          (long long)p->stride_h, (long long)p->stride_w, (long long)p->pad_h, (long long)p->pad_w);
    int64_t cip = is_avg_pool(opid) ? a->avg_pool2d.count_include_pad : 0;
    if (cip != 0 && cip != 1)
        return pdi_errorf(PD_ERR_INVALID, "%s: count_include_pad must be 0 or 1, got %lld", op, (long long)cip);
    /* H, W >= 1 with p <= k/2 guarantees no window is all padding */
    int64_t hp, wp; /* 2 pad <= kernel: no overflow there; the sums are checked */
    if (__builtin_add_overflow(xs[2], 2 * p->pad_h, &hp) || __builtin_add_overflow(xs[3], 2 * p->pad_w, &wp))
        return pdi_errorf(PD_ERR_INVALID, "%s: padding (%lld, %lld) too large", op, (long long)p->pad_h,
                          (long long)p->pad_w);
    if (xs[2] < 1 || xs[3] < 1 || hp < p->kernel_h || wp < p->kernel_w)
        return pdi_errorf(PD_ERR_INVALID, "%s: padded input %lldx%lld (input %s) is smaller than the kernel %lldx%lld", op,
                          (long long)hp, (long long)wp, pdi_shape_str(xs, 4, b0, sizeof b0), (long long)p->kernel_h,
                          (long long)p->kernel_w);
    if (p->ceil_mode != 0 && p->ceil_mode != 1)
        return pdi_errorf(PD_ERR_INVALID, "%s: ceil_mode must be 0 or 1, got %lld", op, (long long)p->ceil_mode);
    ys[0] = xs[0];
    ys[1] = xs[1];
    ys[2] = pool_out_size(xs[2], p->kernel_h, p->stride_h, p->pad_h, p->ceil_mode);
    ys[3] = pool_out_size(xs[3], p->kernel_w, p->stride_w, p->pad_w, p->ceil_mode);
    return PD_OK;
}

int pdi_infer_pool2d(struct pdi_call *c)
{
    const char *op = pdi_ops[c->op].name;
    int64_t ys[4];
    if (check_float_same(op, c->in, 1) || want_4d(op, "input", c->in[0]) ||
        pool_geom(c->op, c->in[0]->shape, &c->a, ys))
        return PD_ERR_INVALID;
    set_meta4(&c->meta[0], ys, c->in[0]->dtype);
    return PD_OK;
}

/* max_pool2d_backward (gout, x) -> x's shape. */
int pdi_infer_max_pool2d_backward(struct pdi_call *c)
{
    const char *op = "max_pool2d_backward";
    int64_t ys[4];
    if (check_float_same(op, c->in, 2) || want_4d(op, "input", c->in[1]) ||
        pool_geom(c->op, c->in[1]->shape, &c->a, ys) || same_shape(op, "gout", ys, c->in[0]))
        return PD_ERR_INVALID;
    set_meta4(&c->meta[0], c->in[1]->shape, c->in[0]->dtype);
    return PD_OK;
}

/* max_pool2d_gather (g, x), g of x's shape -> the pooled shape. */
int pdi_infer_max_pool2d_gather(struct pdi_call *c)
{
    const char *op = "max_pool2d_gather";
    int64_t ys[4];
    if (check_float_same(op, c->in, 2) || want_4d(op, "input", c->in[1]) ||
        pool_geom(c->op, c->in[1]->shape, &c->a, ys) || same_shape(op, "g", c->in[1]->shape, c->in[0]))
        return PD_ERR_INVALID;
    set_meta4(&c->meta[0], ys, c->in[0]->dtype);
    return PD_OK;
}

int pdi_infer_avg_pool2d_backward(struct pdi_call *c)
{
    const char *op = "avg_pool2d_backward";
    int64_t xs[4], ys[4];
    if (check_float_same(op, c->in, 1) || shape_attr(op, "input_shape", &c->a.avg_pool2d_backward.input_shape, xs) ||
        pool_geom(c->op, xs, &c->a, ys) || same_shape(op, "gout", ys, c->in[0]))
        return PD_ERR_INVALID;
    set_meta4(&c->meta[0], xs, c->in[0]->dtype);
    return PD_OK;
}

/* The attributes of pool op `op` from those of another pool op (a, read
 * as pool2d's set and, between avg ops, avg_pool2d's), with
 * avg_pool2d_backward's input shape. */
static struct pdi_attrs pool_attrs(enum pd_op op, const struct pdi_attrs *a, const int64_t *shape)
{
    struct pdi_attrs r;
    memset(&r, 0, sizeof r);
    if (is_avg_pool(op)) r.avg_pool2d = a->avg_pool2d;
    else r.pool2d = a->pool2d;
    if (op == PD_OP_avg_pool2d_backward) r.avg_pool2d_backward.input_shape = ints4(shape);
    return r;
}

static struct pd_tensor *zeros_meta(const struct pdi_meta *m)
{
    return pd_zeros(m->shape, m->ndim, m->dtype);
}

int pdi_vjp_max_pool2d(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *x = pdi_node_in(n, 0);
    struct pdi_attrs a = pool_attrs(PD_OP_max_pool2d_backward, &n->a, NULL);
    if (!x || !(gin[0] = pdi_call2(PD_OP_max_pool2d_backward, g[0], x, &a))) return pd_last_status();
    return PD_OK;
}

/* Linear in gout (its transpose is the gather at the argmax positions);
 * piecewise constant in x, so x's gradient is zero. */
int pdi_vjp_max_pool2d_backward(struct pdi_node *n, struct pd_tensor *const *gg, struct pd_tensor **gin)
{
    struct pdi_attrs a = pool_attrs(PD_OP_max_pool2d_gather, &n->a, NULL);
    if (pdi_node_needs(n, 0)) {
        struct pd_tensor *x = pdi_node_in(n, 1);
        if (!x || !(gin[0] = pdi_call2(PD_OP_max_pool2d_gather, gg[0], x, &a))) return pd_last_status();
    }
    if (pdi_node_needs(n, 1) && !(gin[1] = zeros_meta(&n->in_meta[1]))) return pd_last_status();
    return PD_OK;
}

int pdi_vjp_max_pool2d_gather(struct pdi_node *n, struct pd_tensor *const *gg, struct pd_tensor **gin)
{
    struct pdi_attrs a = pool_attrs(PD_OP_max_pool2d_backward, &n->a, NULL);
    if (pdi_node_needs(n, 0)) {
        struct pd_tensor *x = pdi_node_in(n, 1);
        if (!x || !(gin[0] = pdi_call2(PD_OP_max_pool2d_backward, gg[0], x, &a))) return pd_last_status();
    }
    if (pdi_node_needs(n, 1) && !(gin[1] = zeros_meta(&n->in_meta[1]))) return pd_last_status();
    return PD_OK;
}

int pdi_vjp_avg_pool2d(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pdi_attrs a = pool_attrs(PD_OP_avg_pool2d_backward, &n->a, n->in_meta[0].shape);
    gin[0] = pdi_call1(PD_OP_avg_pool2d_backward, g[0], &a);
    return gin[0] ? PD_OK : pd_last_status();
}

/* avg_pool2d_backward is the transpose of avg_pool2d (each window's weight
 * depends only on the output position), so its VJP is avg_pool2d. */
int pdi_vjp_avg_pool2d_backward(struct pdi_node *n, struct pd_tensor *const *gg, struct pd_tensor **gin)
{
    struct pdi_attrs a = pool_attrs(PD_OP_avg_pool2d, &n->a, NULL);
    gin[0] = pdi_call1(PD_OP_avg_pool2d, gg[0], &a);
    return gin[0] ? PD_OK : pd_last_status();
}

static struct pd_tensor *pool_call(enum pd_op op, struct pd_tensor *x, const int *kernel, const int *stride,
                                   const int *padding, int ceil_mode, int exclusive)
{
    if (!x) return NULL;
    if (!kernel) return pdi_error(PD_ERR_INVALID, "%s: kernel size is required", pdi_ops[op].name);
    int added;
    x = batched(x, 4, &added);
    /* stride defaults to the kernel size (PyTorch, Paddle) */
    int64_t kh = kernel[0], kw = kernel[1], sh = stride ? stride[0] : kh, sw = stride ? stride[1] : kw;
    int64_t ph = padding ? padding[0] : 0, pw = padding ? padding[1] : 0;
    struct pdi_attrs a;
    memset(&a, 0, sizeof a);
    if (op == PD_OP_avg_pool2d)
        a.avg_pool2d = (struct pdi_attrs_avg_pool2d){.kernel_h = kh, .kernel_w = kw, .stride_h = sh, .stride_w = sw,
                                                     .pad_h = ph, .pad_w = pw, .ceil_mode = ceil_mode,
                                                     .count_include_pad = !exclusive};
    else
        a.pool2d = (struct pdi_attrs_pool2d){.kernel_h = kh, .kernel_w = kw, .stride_h = sh, .stride_w = sw,
                                             .pad_h = ph, .pad_w = pw, .ceil_mode = ceil_mode};
    struct pd_tensor *y = pdi_call1(op, x, &a);
    return added ? pd_squeeze(y, 0) : y;
}

struct pd_tensor *pd_max_pool2d(struct pd_tensor *x, const int *kernel, const int *stride, const int *padding)
{
    return pool_call(PD_OP_max_pool2d, x, kernel, stride, padding, 0, 1);
}

struct pd_tensor *pd_avg_pool2d(struct pd_tensor *x, const int *kernel, const int *stride, const int *padding)
{
    return pool_call(PD_OP_avg_pool2d, x, kernel, stride, padding, 0, 1);
}

struct pd_tensor *pd_max_pool2d_ex(struct pd_tensor *x, const int *kernel, const int *stride, const int *padding,
                                   int ceil_mode)
{
    return pool_call(PD_OP_max_pool2d, x, kernel, stride, padding, ceil_mode != 0, 1);
}

struct pd_tensor *pd_avg_pool2d_ex(struct pd_tensor *x, const int *kernel, const int *stride, const int *padding,
                                   int ceil_mode, int exclusive)
{
    return pool_call(PD_OP_avg_pool2d, x, kernel, stride, padding, ceil_mode != 0, exclusive != 0);
}
