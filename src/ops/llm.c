/* paddle.c — the transformer-block family: rope, swiglu, sdpa and
 * sdpa_backward (rows in ops_llm.def): infer functions, VJP rules and the
 * public wrappers.
 *
 * Invariants:
 *   - infer validates everything the kernels rely on (ranks, head grouping,
 *     mask broadcast, dtypes, attributes), so kernels never check shapes;
 *   - VJP rules use public ops (and these ops) only: rope's VJP is rope with
 *     the negated angle; swiglu's is the fused swiglu_backward op (composed
 *     from sigmoid/mul under create_graph); sdpa's is the fused
 *     sdpa_backward op for plain first-order gradients, and an explicit
 *     composition of public ops (matmul, softmax-like masking, sums) when
 *     the backward itself is recorded (create_graph) or the float mask wants
 *     a gradient — so higher orders and mask gradients stay exact;
 *   - rope, swiglu and sdpa have decompositions into primitive public ops
 *     (pdi_decomp_*); sdpa's shares the composed attention with the VJP and
 *     with flashmask's (pdi_attention_composed, ops/attention.h);
 *   - sdpa's second output (the per-row log-sum-exp) is internal: pd_sdpa
 *     releases its handle at once; the GradNode keeps it for the backward.
 *     Its incoming gradient is ignored by the fused path (no public API can
 *     reach it) and honoured by the composed one.
 */
#include <math.h>
#include <string.h>

#include "core/internal.h"
#include "ops/attention.h"

static int is_int_dtype(enum pd_dtype dt)
{
    return dt == PD_I8 || dt == PD_U8 || dt == PD_I16 || dt == PD_I32 || dt == PD_I64;
}

static struct pd_tensor *cast_to(struct pd_tensor *t, enum pd_dtype dt)
{
    return t && t->dtype != dt ? pd_cast(t, dt) : t;
}

/* ---- rope ------------------------------------------------------------ */
int pdi_infer_rope(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0], *p = c->in[1];
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (!pd_dtype_is_float(x->dtype))
        return pdi_errorf(PD_ERR_INVALID, "rope: x must be floating point, got %s", pd_dtype_name(x->dtype));
    if (x->ndim != 4 || x->shape[3] % 2)
        return pdi_errorf(PD_ERR_INVALID, "rope: x must be [B, T, H, D] with D even, got %s",
                          pdi_shape_str(x->shape, x->ndim, b0, sizeof b0));
    if (!is_int_dtype(p->dtype))
        return pdi_errorf(PD_ERR_INVALID, "rope: positions must be integers, got %s", pd_dtype_name(p->dtype));
    int ok = (p->ndim == 1 && p->shape[0] == x->shape[1]) ||
             (p->ndim == 2 && p->shape[0] == x->shape[0] && p->shape[1] == x->shape[1]);
    if (!ok)
        return pdi_errorf(PD_ERR_INVALID, "rope: positions %s must be [T] or [B, T] for x %s [B, T, H, D]",
                          pdi_shape_str(p->shape, p->ndim, b0, sizeof b0),
                          pdi_shape_str(x->shape, x->ndim, b1, sizeof b1));
    const struct pdi_attrs_rope *a = &c->a.rope;
    if (!(a->theta > 0) || isinf(a->theta))
        return pdi_errorf(PD_ERR_INVALID, "rope: theta must be positive and finite, got %g", a->theta);
    if (a->sign != 1 && a->sign != -1)
        return pdi_errorf(PD_ERR_INVALID, "rope: sign must be +1 or -1, got %lld", (long long)a->sign);
    struct pdi_meta *m = &c->meta[0];
    m->dtype = x->dtype;
    m->ndim = 4;
    memcpy(m->shape, x->shape, sizeof m->shape);
    return PD_OK;
}

static struct pd_tensor *rope_call(struct pd_tensor *x, struct pd_tensor *positions, double theta, int sign)
{
    struct pdi_attrs a = {.rope = {.theta = theta, .sign = sign}};
    return pdi_call2(PD_OP_rope, x, positions, &a);
}

/* y = R(angle) x per pair, so dx = R(angle)^T g = R(-angle) g. */
int pdi_vjp_rope(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (!pdi_node_needs(n, 0)) return PD_OK;
    struct pd_tensor *pos = pdi_node_in(n, 1);
    if (!pos) return pd_last_status();
    gin[0] = rope_call(g[0], pos, n->a.rope.theta, -(int)n->a.rope.sign);
    return pdi_status_of(gin[0], __func__);
}

struct pd_tensor *pd_rope(struct pd_tensor *x, struct pd_tensor *positions, double theta)
{
    return rope_call(x, positions, theta, 1);
}

/* rope from primitive ops: the angles sign pos theta^(-2i/D) in f64 as the
 * kernels form them, their cos and sin in the compute dtype (f64 for f64 x,
 * f32 otherwise), then the rotation of the (i, i + D/2) halves. */
int pdi_decomp_rope(const struct pdi_call *c, struct pd_tensor **out)
{
    const struct pdi_attrs_rope *ra = &c->a.rope;
    struct pd_tensor *x = c->in[0], *pos = c->in[1];
    enum pd_dtype dt = x->dtype, ct = dt == PD_F64 ? PD_F64 : PD_F32;
    int64_t D = x->shape[3], h2 = D / 2;
    struct pd_tensor *ex = pd_div(pd_scale(pd_arange(0, (double)h2, 1, PD_F64), -2.0), pd_scalar((double)D, PD_F64));
    struct pd_tensor *inv = pd_pow(pd_scalar(ra->theta, PD_F64), ex); /* [D/2] */
    struct pd_tensor *ps = pd_scale(pd_cast(pos, PD_F64), (double)ra->sign);
    int64_t as[4] = {pos->ndim == 2 ? x->shape[0] : 1, x->shape[1], 1, h2};
    struct pd_tensor *ang = pd_reshape(pd_mul(pd_unsqueeze(ps, -1), inv), as, 4); /* [B or 1, T, 1, D/2] */
    struct pd_tensor *cs = cast_to(pd_cos(ang), ct), *sn = cast_to(pd_sin(ang), ct), *xc = cast_to(x, ct);
    struct pd_tensor *x1 = pd_slice(xc, 3, 0, h2, 1), *x2 = pd_slice(xc, 3, h2, D, 1);
    struct pd_tensor *y[2] = {pd_sub(pd_mul(x1, cs), pd_mul(x2, sn)), pd_add(pd_mul(x2, cs), pd_mul(x1, sn))};
    out[0] = y[0] && y[1] ? cast_to(pd_concat(y, 2, 3), dt) : NULL;
    return pdi_status_of(out[0], __func__);
}

/* ---- swiglu ---------------------------------------------------------- */
int pdi_infer_swiglu(struct pdi_call *c)
{
    const struct pd_tensor *g = c->in[0], *u = c->in[1];
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (!pd_dtype_is_float(g->dtype) || g->dtype != u->dtype)
        return pdi_errorf(PD_ERR_INVALID, "swiglu: gate and up must share one floating dtype, got %s and %s",
                          pd_dtype_name(g->dtype), pd_dtype_name(u->dtype));
    if (g->ndim != u->ndim || memcmp(g->shape, u->shape, sizeof(int64_t) * (size_t)g->ndim))
        return pdi_errorf(PD_ERR_INVALID, "swiglu: gate %s and up %s must have the same shape",
                          pdi_shape_str(g->shape, g->ndim, b0, sizeof b0),
                          pdi_shape_str(u->shape, u->ndim, b1, sizeof b1));
    struct pdi_meta *m = &c->meta[0];
    m->dtype = g->dtype;
    m->ndim = g->ndim;
    memcpy(m->shape, g->shape, sizeof m->shape);
    return PD_OK;
}

int pdi_infer_swiglu_backward(struct pdi_call *c)
{
    int rc = pdi_infer_swiglu(c); /* gate and up; meta[0] is their shape */
    if (rc) return rc;
    const struct pd_tensor *g = c->in[0], *d = c->in[2];
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (d->dtype != g->dtype || d->ndim != g->ndim || memcmp(d->shape, g->shape, sizeof(int64_t) * (size_t)g->ndim))
        return pdi_errorf(PD_ERR_INVALID, "swiglu_backward: dout %s %s must be gate's %s %s",
                          pdi_shape_str(d->shape, d->ndim, b0, sizeof b0), pd_dtype_name(d->dtype),
                          pdi_shape_str(g->shape, g->ndim, b1, sizeof b1), pd_dtype_name(g->dtype));
    c->meta[1] = c->meta[0];
    return PD_OK;
}

int pdi_vjp_swiglu_backward(struct pdi_node *n, struct pd_tensor *const *gout, struct pd_tensor **gin)
{
    PDI_UNUSED(n);
    PDI_UNUSED(gout);
    PDI_UNUSED(gin);
    return pdi_errorf(PD_ERR_UNSUPPORTED, "swiglu_backward is not differentiable: take higher-order gradients of "
                                          "swiglu with create_graph on (its VJP then composes differentiable ops)");
}

/* y = a s(a) u: dy/du = a s(a) = silu(a); dy/da = u s (1 + a (1 - s)).
 * Plain first-order gradients take the fused swiglu_backward (one pass
 * over a, u, g instead of a chain of eight elementwise ops); a recorded
 * backward (create_graph) composes public ops so it can be differentiated. */
int pdi_vjp_swiglu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *a = pdi_node_in(n, 0), *u = pdi_node_in(n, 1);
    if (!a || !u) return pd_last_status();
    if (!pd_is_grad_enabled()) {
        struct pd_tensor *in[3] = {a, u, g[0]}, *out[2];
        struct pdi_call c = {.op = PD_OP_swiglu_backward, .n_in = 3, .n_out = 2, .in = in, .out = out};
        int rc = pdi_dispatch(&c);
        if (rc) return rc;
        for (int i = 0; i < 2; i++)
            if (pdi_node_needs(n, i)) gin[i] = out[i]; /* the other stays in the scope, unused */
        return PD_OK;
    }
    if (pdi_node_needs(n, 0)) {
        struct pd_tensor *s = pd_sigmoid(a);
        struct pd_tensor *ds = pd_add_scalar(pd_mul(a, pd_add_scalar(pd_neg(s), 1.0)), 1.0);
        gin[0] = pd_mul(pd_mul(g[0], u), pd_mul(s, ds));
        if (!gin[0]) return pdi_status_of(NULL, __func__);
    }
    if (pdi_node_needs(n, 1)) {
        gin[1] = pd_mul(g[0], pd_silu(a));
        if (!gin[1]) return pdi_status_of(NULL, __func__);
    }
    return PD_OK;
}

struct pd_tensor *pd_swiglu(struct pd_tensor *gate, struct pd_tensor *up)
{
    return pdi_call2(PD_OP_swiglu, gate, up, NULL);
}

/* swiglu from primitive ops (silu is itself composite: a sigmoid(a)), in
 * f32 for half-precision inputs as the kernels compute it. */
int pdi_decomp_swiglu(const struct pdi_call *c, struct pd_tensor **out)
{
    enum pd_dtype dt = c->in[0]->dtype, ct = dt == PD_F64 ? PD_F64 : PD_F32;
    struct pd_tensor *a = cast_to(c->in[0], ct), *u = cast_to(c->in[1], ct);
    out[0] = cast_to(pd_mul(pd_mul(a, pd_sigmoid(a)), u), dt);
    return pdi_status_of(out[0], __func__);
}

/* ---- sdpa ------------------------------------------------------------ */
/* q, k, v of an attention op: one floating dtype, rank 4, k and v of one
 * [B, ., ., .] frame, shared head dim, query heads a multiple of key heads.
 * head_axis is 1 for [B, H, S, D] (sdpa) and 2 for [B, S, H, D] (flashmask);
 * layout names it in the message. */
int pdi_attention_check_qkv(const char *op, const struct pd_tensor *q, const struct pd_tensor *k,
                            const struct pd_tensor *v, int head_axis, const char *layout)
{
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF], b2[PDI_SHAPE_BUF];
    if (!pd_dtype_is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
        return pdi_errorf(PD_ERR_INVALID, "%s: q, k and v must share one floating dtype, got %s, %s and %s", op,
                          pd_dtype_name(q->dtype), pd_dtype_name(k->dtype), pd_dtype_name(v->dtype));
    int ok = q->ndim == 4 && k->ndim == 4 && v->ndim == 4 && k->shape[0] == q->shape[0] && v->shape[0] == q->shape[0] &&
             k->shape[1] == v->shape[1] && k->shape[2] == v->shape[2] && k->shape[3] == q->shape[3];
    if (!ok)
        return pdi_errorf(PD_ERR_INVALID, "%s: expected %s, got q %s, k %s, v %s", op, layout,
                          pdi_shape_str(q->shape, q->ndim, b0, sizeof b0),
                          pdi_shape_str(k->shape, k->ndim, b1, sizeof b1),
                          pdi_shape_str(v->shape, v->ndim, b2, sizeof b2));
    int64_t hq = q->shape[head_axis], hkv = k->shape[head_axis];
    if (hkv == 0 ? hq != 0 : hq % hkv != 0)
        return pdi_errorf(PD_ERR_INVALID, "%s: %lld query heads are not a multiple of %lld key/value heads", op,
                          (long long)hq, (long long)hkv);
    return PD_OK;
}

/* out: q's shape with v's last dim; lse [B, H, S], H at q's head_axis. */
static void attention_shapes(const struct pd_tensor *q, const struct pd_tensor *v, int head_axis, int64_t *oshape,
                             int64_t *lshape)
{
    int64_t o[4] = {q->shape[0], q->shape[1], q->shape[2], v->shape[3]};
    int64_t l[3] = {q->shape[0], q->shape[head_axis], q->shape[3 - head_axis]};
    memcpy(oshape, o, sizeof o);
    memcpy(lshape, l, sizeof l);
}

void pdi_attention_infer_outputs(struct pdi_call *c, int head_axis)
{
    const struct pd_tensor *q = c->in[0];
    struct pdi_meta *o = &c->meta[0], *l = &c->meta[1];
    o->dtype = q->dtype;
    o->ndim = 4;
    l->dtype = pdi_attention_lse_dtype(q->dtype);
    l->ndim = 3;
    attention_shapes(q, c->in[2], head_axis, o->shape, l->shape);
}

int pdi_attention_infer_backward(struct pdi_call *c, const char *op, int n_extra, int head_axis)
{
    const struct pd_tensor *q = c->in[0];
    const struct pd_tensor *o = c->in[3 + n_extra], *lse = c->in[4 + n_extra], *dout = c->in[5 + n_extra];
    enum pd_dtype dt = q->dtype, lt = pdi_attention_lse_dtype(dt);
    int64_t oshape[4], lshape[3];
    attention_shapes(q, c->in[2], head_axis, oshape, lshape);
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    for (int i = 0; i < 2; i++) {
        const struct pd_tensor *t = i ? dout : o;
        if (t->dtype != dt || t->ndim != 4 || memcmp(t->shape, oshape, sizeof oshape))
            return pdi_errorf(PD_ERR_INVALID, "%s: %s %s %s must be %s %s", op, i ? "dout" : "out",
                              pdi_shape_str(t->shape, t->ndim, b0, sizeof b0), pd_dtype_name(t->dtype),
                              pdi_shape_str(oshape, 4, b1, sizeof b1), pd_dtype_name(dt));
    }
    if (lse->dtype != lt || lse->ndim != 3 || memcmp(lse->shape, lshape, sizeof lshape))
        return pdi_errorf(PD_ERR_INVALID, "%s: lse %s %s must be %s %s", op,
                          pdi_shape_str(lse->shape, lse->ndim, b0, sizeof b0), pd_dtype_name(lse->dtype),
                          pdi_shape_str(lshape, 3, b1, sizeof b1), pd_dtype_name(lt));
    for (int i = 0; i < 3; i++) pdi_meta_of(c->in[i], &c->meta[i]);
    return PD_OK;
}

int pdi_attention_backward_not_differentiable(const char *fwd)
{
    return pdi_errorf(PD_ERR_UNSUPPORTED, "%s_backward is not differentiable: take higher-order gradients of %s "
                                          "with create_graph on (its VJP then composes differentiable ops)",
                      fwd, fwd);
}

/* Checks q, k, v (and the mask) of an sdpa or sdpa_backward call. */
static int check_qkv(const char *op, struct pd_tensor *const *in, int has_mask)
{
    const struct pd_tensor *q = in[0], *k = in[1], *v = in[2];
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    int ok, rc = pdi_attention_check_qkv(op, q, k, v, 1, "q [B, Hq, T, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv]");
    if (rc) return rc;
    int64_t hq = q->shape[1];
    if (has_mask) {
        const struct pd_tensor *m = in[3];
        int64_t full[4] = {q->shape[0], hq, q->shape[2], k->shape[2]};
        if (m->dtype != PD_BOOL && !pd_dtype_is_float(m->dtype))
            return pdi_errorf(PD_ERR_INVALID, "%s: mask must be bool (true = attend) or floating (added), got %s", op,
                              pd_dtype_name(m->dtype));
        ok = m->ndim <= 4;
        for (int i = 0; i < m->ndim && ok; i++) {
            int64_t d = m->shape[m->ndim - 1 - i];
            ok = d == 1 || d == full[3 - i];
        }
        if (!ok)
            return pdi_errorf(PD_ERR_INVALID, "%s: mask %s does not broadcast to [B, Hq, T, S] = %s", op,
                              pdi_shape_str(m->shape, m->ndim, b0, sizeof b0), pdi_shape_str(full, 4, b1, sizeof b1));
    }
    return PD_OK;
}

int pdi_attention_check_scale(const char *op, const struct pdi_call *c)
{
    double scale = c->a.sdpa.scale; /* flashmask's set starts the same way */
    if (!(scale > 0) || isinf(scale))
        return pdi_errorf(PD_ERR_INVALID, "%s: scale must be positive and finite, got %g", op, scale);
    return PD_OK;
}

int pdi_infer_sdpa(struct pdi_call *c)
{
    int has_mask = c->a.sdpa.has_mask != 0, rc = pdi_attention_check_scale("sdpa", c);
    if (rc) return rc;
    if (c->n_in != 3 + has_mask || c->n_out != 2)
        return pdi_errorf(PD_ERR_INVALID, "sdpa: expected %d inputs and 2 outputs, got %d and %d", 3 + has_mask,
                          c->n_in, c->n_out);
    rc = check_qkv("sdpa", c->in, has_mask);
    if (rc) return rc;
    pdi_attention_infer_outputs(c, 1);
    return PD_OK;
}

int pdi_infer_sdpa_backward(struct pdi_call *c)
{
    int has_mask = c->a.sdpa.has_mask != 0, rc = pdi_attention_check_scale("sdpa_backward", c);
    if (rc) return rc;
    if (c->n_in != 6 + has_mask || c->n_out != 3)
        return pdi_errorf(PD_ERR_INVALID, "sdpa_backward: expected %d inputs and 3 outputs, got %d and %d",
                          6 + has_mask, c->n_in, c->n_out);
    rc = check_qkv("sdpa_backward", c->in, has_mask);
    if (rc) return rc;
    return pdi_attention_infer_backward(c, "sdpa_backward", has_mask, 1);
}

int pdi_vjp_sdpa_backward(struct pdi_node *n, struct pd_tensor *const *gout, struct pd_tensor **gin)
{
    PDI_UNUSED(n);
    PDI_UNUSED(gout);
    PDI_UNUSED(gin);
    return pdi_attention_backward_not_differentiable("sdpa");
}

/* Visibility of key s from query t as a bool [T, S] (causal, bottom-right
 * aligned: s <= t + S - T). */
struct pd_tensor *pdi_attention_causal_visible(int64_t T, int64_t S)
{
    int64_t st[2] = {T, 1}, ss[2] = {1, S};
    struct pd_tensor *t = pd_reshape(pd_arange(0, (double)T, 1, PD_I64), st, 2);
    struct pd_tensor *s = pd_reshape(pd_arange(0, (double)S, 1, PD_I64), ss, 2);
    return pd_le(s, pd_add_scalar(t, (double)(S - T)));
}

/* k or v [B, Hkv, S, X] repeated over the query groups: [B, Hq, S, X]. */
struct pd_tensor *pdi_expand_heads(struct pd_tensor *x, int64_t G)
{
    if (!x || G == 1) return x;
    const int64_t *s = x->shape;
    int64_t e[5] = {s[0], s[1], G, s[2], s[3]}, r[4] = {s[0], s[1] * G, s[2], s[3]};
    return pd_reshape(pd_expand(pd_unsqueeze(x, 2), e, 5), r, 4);
}

/* [B, Hq, S, X] summed over each group back to [B, Hkv, S, X]. */
static struct pd_tensor *sum_heads(struct pd_tensor *x, int64_t G)
{
    if (!x || G == 1) return x;
    const int64_t *s = x->shape;
    int64_t r[5] = {s[0], s[1] / G, G, s[2], s[3]};
    int ax = 2;
    return pd_sum(pd_reshape(x, r, 5), &ax, 1, 0);
}

/* The composed attention (public ops only, so differentiable again; shared
 * with flashmask through ops/attention.h): the forward's P and the row
 * statistics that the forward and the VJP both start from. */
struct attn_soft {
    enum pd_dtype ct;                 /* compute dtype: f64 for f64, f32 otherwise */
    int64_t G;                        /* query heads per key/value head */
    struct pd_tensor *qc, *kc, *vc;   /* in ct; k and v repeated over the query groups */
    struct pd_tensor *m, *z, *zs, *p; /* row max (0 where -inf), row sum of exps (keepdim), z with 0 -> 1, P */
};

static void attention_softmax(const struct pdi_attn *a, struct attn_soft *r)
{
    struct pd_tensor *q = a->q, *k = a->k, *v = a->v, *mask = a->add_mask;
    enum pd_dtype ct = r->ct = q->dtype == PD_F64 ? PD_F64 : PD_F32;
    int64_t G = r->G = k->shape[1] ? q->shape[1] / k->shape[1] : 1;
    struct pd_tensor *qc = r->qc = cast_to(q, ct), *kc = r->kc = pdi_expand_heads(cast_to(k, ct), G);
    r->vc = pdi_expand_heads(cast_to(v, ct), G);
    struct pd_tensor *s = pd_scale(pd_matmul(qc, kc, 0, 1), a->scale); /* [B, Hq, T, S] */
    if (mask) s = pd_add(s, cast_to(mask, ct));
    if (a->visible) s = pd_where(a->visible, s, pd_scalar(-INFINITY, ct));
    int ax = -1;
    /* The row max is a constant shift (softmax is invariant to it): detached,
     * it adds nothing to the gradient; -inf (no visible key) becomes 0 so
     * that the row's exps are all 0 and P is 0 there. Without keys (S = 0)
     * amax has nothing to reduce: the empty sum gives the 0 rows. */
    struct pd_tensor *m = pd_detach(k->shape[2] ? pd_amax(s, &ax, 1, 1) : pd_sum(s, &ax, 1, 1));
    m = r->m = pd_where(pd_isfinite(m), m, pd_scalar(0, ct));
    struct pd_tensor *e = pd_exp(pd_sub(s, m));
    struct pd_tensor *z = r->z = pd_sum(e, &ax, 1, 1);
    r->zs = pd_where(pd_gt(z, pd_scalar(0, ct)), z, pd_scalar(1, ct));
    r->p = pd_div(e, r->zs);
}

/* out = (P Z) V and lse = m + log z (-inf where no key is visible: z = 0;
 * the where keeps the log off 0, so that the gradient stays finite). */
int pdi_attention_composed(const struct pdi_attn *a, struct pd_tensor **out, struct pd_tensor **lse)
{
    if (!a->q || !a->k || !a->v) return pdi_status_of(NULL, __func__); /* a view that failed (out of memory) */
    struct attn_soft r;
    attention_softmax(a, &r);
    enum pd_dtype ct = r.ct;
    struct pd_tensor *pz = a->keep ? pd_mul(r.p, cast_to(a->keep, ct)) : r.p;
    *out = cast_to(pd_matmul(pz, r.vc, 0, 0), a->q->dtype);
    struct pd_tensor *l = pd_add(r.m, pd_log(r.zs));
    *lse = pd_squeeze(pd_where(pd_gt(r.z, pd_scalar(0, ct)), l, pd_scalar(-INFINITY, ct)), -1);
    return *out && *lse ? PD_OK : pdi_status_of(NULL, __func__);
}

/* The composed gradients: with P the masked softmax of the scores and Z
 * the dropout multipliers (1 without dropout),
 *   dV = (P Z)^T dO, dP = (dO V^T) Z, dS = P (dP - rowsum(dP P) + g_lse),
 *   dQ = scale dS K, dK = scale dS^T Q, dmask = dS (float masks). */
int pdi_attention_vjp_composed(const struct pdi_attn *a, struct pd_tensor **gq, struct pd_tensor **gk,
                               struct pd_tensor **gv, struct pd_tensor **gmask)
{
    if (!a->q || !a->k || !a->v) return pdi_status_of(NULL, __func__); /* a view that failed (out of memory) */
    struct attn_soft r;
    attention_softmax(a, &r);
    enum pd_dtype dt = a->q->dtype, ct = r.ct;
    int64_t G = r.G;
    struct pd_tensor *qc = r.qc, *kc = r.kc, *vc = r.vc, *p = r.p, *mask = a->add_mask;
    int ax = -1;
    struct pd_tensor *keep = a->keep ? cast_to(a->keep, ct) : NULL;
    struct pd_tensor *dout = cast_to(a->gout, ct);
    struct pd_tensor *dp = pd_matmul(dout, vc, 0, 1);
    if (keep) dp = pd_mul(dp, keep);
    struct pd_tensor *inner = pd_sub(dp, pd_sum(pd_mul(dp, p), &ax, 1, 1));
    if (a->glse) inner = pd_add(inner, pd_unsqueeze(cast_to(a->glse, ct), -1));
    struct pd_tensor *ds = pd_mul(p, inner);
    if (!ds) return pdi_status_of(NULL, __func__);
    if (gq && !(*gq = cast_to(pd_scale(pd_matmul(ds, kc, 0, 0), a->scale), dt))) return pdi_status_of(NULL, __func__);
    if (gk && !(*gk = cast_to(sum_heads(pd_scale(pd_matmul(ds, qc, 1, 0), a->scale), G), dt)))
        return pdi_status_of(NULL, __func__);
    if (gv && !(*gv = cast_to(sum_heads(pd_matmul(keep ? pd_mul(p, keep) : p, dout, 1, 0), G), dt)))
        return pdi_status_of(NULL, __func__);
    if (gmask && !(*gmask = cast_to(pd_sum_to_shape(ds, mask->shape, mask->ndim), mask->dtype)))
        return pdi_status_of(NULL, __func__);
    return PD_OK;
}

/* Keys visible to sdpa's queries as bool broadcastable to [B, Hq, T, S]:
 * causal and a bool mask combined, or NULL when neither applies (a float
 * mask is added to the scores instead). Sets *err on failure. */
static struct pd_tensor *sdpa_visible(const struct pd_tensor *q, const struct pd_tensor *k, struct pd_tensor *mask,
                                      int causal, int *err)
{
    struct pd_tensor *vis = causal ? pdi_attention_causal_visible(q->shape[2], k->shape[2]) : NULL;
    *err = causal && !vis;
    if (mask && mask->dtype == PD_BOOL) vis = vis ? pd_logical_and(vis, mask) : mask;
    return vis;
}

static int sdpa_vjp_composed(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int has_mask = n->a.sdpa.has_mask != 0, causal = n->a.sdpa.causal != 0, err;
    struct pd_tensor *q = pdi_node_in(n, 0), *k = pdi_node_in(n, 1), *v = pdi_node_in(n, 2);
    struct pd_tensor *mask = has_mask ? pdi_node_in(n, 3) : NULL;
    if (!q || !k || !v || (has_mask && !mask)) return pd_last_status();
    struct pd_tensor *vis = sdpa_visible(q, k, mask, causal, &err);
    if (err) return pdi_status_of(NULL, __func__);
    int bool_mask = mask && mask->dtype == PD_BOOL;
    struct pdi_attn a = {.q = q,
                         .k = k,
                         .v = v,
                         .visible = vis,
                         .add_mask = bool_mask ? NULL : mask,
                         .scale = n->a.sdpa.scale,
                         .gout = g[0],
                         .glse = g[1]};
    return pdi_attention_vjp_composed(&a, pdi_node_needs(n, 0) ? &gin[0] : NULL, pdi_node_needs(n, 1) ? &gin[1] : NULL,
                                      pdi_node_needs(n, 2) ? &gin[2] : NULL,
                                      mask && !bool_mask && pdi_node_needs(n, 3) ? &gin[3] : NULL);
}

/* sdpa from primitive ops: out and the log-sum-exp (pdi_attention_composed). */
int pdi_decomp_sdpa(const struct pdi_call *c, struct pd_tensor **out)
{
    const struct pdi_attrs_sdpa *sa = &c->a.sdpa;
    struct pd_tensor *q = c->in[0], *k = c->in[1], *mask = sa->has_mask ? c->in[3] : NULL;
    int err;
    struct pd_tensor *vis = sdpa_visible(q, k, mask, sa->causal != 0, &err);
    if (err) return pdi_status_of(NULL, __func__);
    struct pdi_attn a = {.q = q,
                         .k = k,
                         .v = c->in[2],
                         .visible = vis,
                         .add_mask = mask && mask->dtype != PD_BOOL ? mask : NULL,
                         .scale = sa->scale};
    return pdi_attention_composed(&a, &out[0], &out[1]);
}

int pdi_vjp_sdpa(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int has_mask = n->a.sdpa.has_mask != 0;
    if (pd_is_grad_enabled() || (has_mask && pdi_node_needs(n, 3))) return sdpa_vjp_composed(n, g, gin);
    return pdi_attention_vjp_fused(n, g, gin, PD_OP_sdpa_backward);
}

int pdi_attention_vjp_fused(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin, enum pd_op backward)
{
    /* q, k, v and the extra input (mask or indices) when has_mask/has_idx,
     * which both sets keep third (read through the sdpa member) */
    int n_fwd_in = 3 + (n->a.sdpa.has_mask != 0);
    struct pd_tensor *in[7];
    int ni = 0;
    for (int i = 0; i < n_fwd_in; i++)
        if (!(in[ni++] = pdi_node_in(n, i))) return pd_last_status();
    for (int j = 0; j < 2; j++)
        if (!(in[ni++] = pdi_node_out(n, j))) return pd_last_status();
    in[ni++] = g[0];
    struct pd_tensor *out[3];
    struct pdi_call c = {.op = backward, .n_in = ni, .n_out = 3, .in = in, .out = out, .a = n->a};
    int rc = pdi_dispatch(&c);
    if (rc) return rc;
    for (int i = 0; i < 3; i++)
        if (pdi_node_needs(n, i)) gin[i] = out[i]; /* the others stay in the scope, unused */
    return PD_OK;
}

int pdi_attention_scale(const char *op, const struct pd_tensor *q, double *scale)
{
    if (isnan(*scale) || isinf(*scale))
        return pdi_errorf(PD_ERR_INVALID, "%s: scale must be finite (<= 0 for 1/sqrt(D)), got %g", op, *scale);
    if (*scale <= 0) {
        int64_t D = q->ndim == 4 ? q->shape[3] : 0;
        *scale = D > 0 ? 1.0 / sqrt((double)D) : 1.0;
    }
    return PD_OK;
}

struct pd_tensor *pd_sdpa(struct pd_tensor *q, struct pd_tensor *k, struct pd_tensor *v, struct pd_tensor *mask,
                          int causal, double scale)
{
    if (!q || !k || !v || pdi_attention_scale("sdpa", q, &scale)) return NULL;
    struct pd_tensor *in[4] = {q, k, v, mask}, *out[2];
    struct pdi_call c = {.op = PD_OP_sdpa, .n_in = mask ? 4 : 3, .n_out = 2, .in = in, .out = out};
    c.a.sdpa = (struct pdi_attrs_sdpa){.causal = causal != 0, .scale = scale, .has_mask = mask != NULL};
    /* An inner scope drops the log-sum-exp handle right away and moves the
     * result out (to the caller's scope, or to the caller outside any). */
    int scope_tok = pd_scope_begin();
    struct pd_tensor *r = pdi_dispatch(&c) ? NULL : pd_keep(out[0]);
    pd_scope_end(scope_tok);
    return r;
}
