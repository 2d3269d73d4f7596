/* paddle.c — view ops (reshape, permute, slice, expand, diagonal, ...),
 * copies, detach, and the in-place entry points.
 *
 * A view op's infer computes the output's strides and offset over input 0's
 * storage; the dispatcher then makes an alias instead of running a kernel.
 * reshape returns a view when the strides allow it and a contiguous copy
 * otherwise; pd_view never copies (it fails instead).
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Strides for viewing (shape, strides) as new_shape without a copy, after
 * NumPy's _attempt_nocopy_reshape. Returns 0 on success. */
static int nocopy_strides(const int64_t *shape, const int64_t *strides, int nd, const int64_t *nshape, int nnd,
                          int64_t *nstrides)
{
    int64_t osh[PD_MAX_DIMS], ost[PD_MAX_DIMS];
    int ond = 0;
    for (int i = 0; i < nd; i++)
        if (shape[i] != 1) { osh[ond] = shape[i]; ost[ond] = strides[i]; ond++; }
    if (pdi_numel(shape, nd) == 0) {
        pdi_contiguous_strides(nshape, nnd, nstrides);
        return 0;
    }
    int oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < nnd && oi < ond) {
        int64_t np = nshape[ni], op = osh[oi];
        while (np != op) {
            if (np < op) np *= nshape[nj++];
            else op *= osh[oj++];
        }
        for (int ok = oi; ok < oj - 1; ok++)
            if (ost[ok] != osh[ok + 1] * ost[ok + 1]) return -1;
        nstrides[nj - 1] = ost[oj - 1];
        for (int nk = nj - 1; nk > ni; nk--) nstrides[nk - 1] = nstrides[nk] * nshape[nk];
        ni = nj++;
        oi = oj++;
    }
    for (int k = ni; k < nnd; k++) nstrides[k] = 1; /* trailing 1-dims */
    return 0;
}

/* Resolve a -1 in shape against numel; validates. */
static int resolve_shape(const char *op, const struct pd_tensor *x, const int64_t *shape, int nd, int64_t *out)
{
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (nd < 0 || nd > PD_MAX_DIMS) return pdi_errorf(PD_ERR_INVALID, "%s: ndim %d outside [0, %d]", op, nd, PD_MAX_DIMS);
    if (nd > 0 && !shape) return pdi_errorf(PD_ERR_NULL, "%s: shape is NULL", op);
    int neg = -1;
    int64_t known = 1;
    for (int i = 0; i < nd; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (neg >= 0) return pdi_errorf(PD_ERR_INVALID, "%s: only one dimension can be -1", op);
            neg = i;
        } else if (shape[i] < 0) {
            return pdi_errorf(PD_ERR_INVALID, "%s: invalid dimension %lld", op, (long long)shape[i]);
        } else if (!pdi_mul_ok(known, shape[i], &known) || known > PDI_MAX_NUMEL) {
            return pdi_errorf(PD_ERR_INVALID, "%s: cannot reshape %s (%lld elements) into %s", op,
                              pdi_shape_str(x->shape, x->ndim, b0, sizeof b0), (long long)pd_tensor_numel(x),
                              pdi_shape_str(shape, nd, b1, sizeof b1));
        }
    }
    int64_t n = pd_tensor_numel(x);
    if (neg >= 0) {
        if (known == 0 || n % known)
            return pdi_errorf(PD_ERR_INVALID, "%s: cannot reshape %s (%lld elements) into %s", op,
                              pdi_shape_str(x->shape, x->ndim, b0, sizeof b0), (long long)n,
                              pdi_shape_str(shape, nd, b1, sizeof b1));
        out[neg] = n / known;
        known *= out[neg];
    }
    if (known != n)
        return pdi_errorf(PD_ERR_INVALID, "%s: cannot reshape %s (%lld elements) into %s", op,
                          pdi_shape_str(x->shape, x->ndim, b0, sizeof b0), (long long)n,
                          pdi_shape_str(shape, nd, b1, sizeof b1));
    return PD_OK;
}

/* ---- infer ----------------------------------------------------------- */
int pdi_infer_view(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    struct pdi_meta *m = &c->meta[0];
    const struct pdi_ints *s = &c->a.shape.shape;
    if (s->n < 0 || s->n > PD_MAX_DIMS)
        return pdi_errorf(PD_ERR_INVALID, "view: %lld dims, at most %d", (long long)s->n, PD_MAX_DIMS);
    for (int i = 0; i < s->n; i++)
        if (s->v[i] < 0) return pdi_errorf(PD_ERR_INVALID, "view: invalid size %lld for dim %d", (long long)s->v[i], i);
    m->dtype = x->dtype;
    m->ndim = (int)s->n;
    memcpy(m->shape, s->v, sizeof(int64_t) * (size_t)s->n);
    int64_t n = 0;
    if (pdi_shape_numel(m->shape, m->ndim, &n) || n != pd_tensor_numel(x)) {
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_INVALID, "view: cannot view %s as %s", pdi_shape_str(x->shape, x->ndim, b0, sizeof b0),
                          pdi_shape_str(m->shape, m->ndim, b1, sizeof b1));
    }
    if (nocopy_strides(x->shape, x->strides, x->ndim, m->shape, m->ndim, m->strides)) {
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_INVALID,
                          "view: the strides of %s do not allow viewing it as %s without a copy (use pd_reshape)",
                          pdi_shape_str(x->shape, x->ndim, b0, sizeof b0),
                          pdi_shape_str(m->shape, m->ndim, b1, sizeof b1));
    }
    m->offset = x->offset;
    return PD_OK;
}

int pdi_infer_permute(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    struct pdi_meta *m = &c->meta[0];
    const struct pdi_ints *p = &c->a.permute.perm;
    if (p->n != x->ndim)
        return pdi_errorf(PD_ERR_INVALID, "permute: %lld axes given for a %d-d tensor", (long long)p->n, x->ndim);
    unsigned seen = 0;
    m->dtype = x->dtype;
    m->ndim = x->ndim;
    m->offset = x->offset;
    for (int i = 0; i < x->ndim; i++) {
        int a = pdi_norm_axis64(p->v[i], x->ndim);
        if (a < 0 || (seen & (1u << a)))
            return pdi_errorf(PD_ERR_INVALID, "permute: axis %lld is out of range or repeated", (long long)p->v[i]);
        seen |= 1u << a;
        m->shape[i] = x->shape[a];
        m->strides[i] = x->strides[a];
    }
    return PD_OK;
}

int pdi_infer_slice(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    struct pdi_meta *m = &c->meta[0];
    const struct pdi_attrs_slice *s = &c->a.slice;
    int ax = s->axis < 0 || s->axis >= x->ndim ? -1 : (int)s->axis;
    int64_t start = s->start, stop = s->stop, step = s->step;
    if (ax < 0 || step <= 0 || start < 0 || stop < start || stop > x->shape[ax])
        return pdi_errorf(PD_ERR_INVALID, "slice: bad normalised slice (axis %lld, %lld:%lld:%lld)", (long long)s->axis,
                          (long long)start, (long long)stop, (long long)step);
    pdi_meta_of(x, m);
    /* ceil((stop - start) / step) without overflow (step may be INT64_MAX) */
    m->shape[ax] = stop > start ? (stop - start - 1) / step + 1 : 0;
    /* a dim of one element never steps: its stride may stay x's when the
     * product would overflow (with two or more it fits the storage) */
    if (!pdi_mul_ok(x->strides[ax], step, &m->strides[ax])) m->strides[ax] = x->strides[ax];
    m->offset = x->offset + (m->shape[ax] ? start * x->strides[ax] : 0);
    return PD_OK;
}

int pdi_infer_expand(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    struct pdi_meta *m = &c->meta[0];
    const struct pdi_ints *s = &c->a.shape.shape;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (s->n < 0 || s->n > PD_MAX_DIMS)
        return pdi_errorf(PD_ERR_INVALID, "expand: %lld dims, at most %d", (long long)s->n, PD_MAX_DIMS);
    int nd = (int)s->n, sh = nd - x->ndim;
    if (sh < 0)
        return pdi_errorf(PD_ERR_INVALID, "expand: cannot expand %s to fewer dims %s",
                          pdi_shape_str(x->shape, x->ndim, b0, sizeof b0), pdi_shape_str(s->v, nd, b1, sizeof b1));
    m->dtype = x->dtype;
    m->ndim = nd;
    m->offset = x->offset;
    for (int i = 0; i < nd; i++) {
        int64_t want = s->v[i];
        int64_t have = i < sh ? 1 : x->shape[i - sh];
        if (want == -1) {
            if (i < sh) return pdi_errorf(PD_ERR_INVALID, "expand: -1 is not allowed for a new leading dim");
            want = have;
        }
        if (want < 0) return pdi_errorf(PD_ERR_INVALID, "expand: invalid size %lld for dim %d", (long long)want, i);
        if (have != want && have != 1)
            return pdi_errorf(PD_ERR_INVALID, "expand: cannot expand %s to %s (dim %d is %lld, not 1)",
                              pdi_shape_str(x->shape, x->ndim, b0, sizeof b0), pdi_shape_str(s->v, nd, b1, sizeof b1),
                              i, (long long)have);
        m->shape[i] = want;
        m->strides[i] = (i < sh || have != want) ? 0 : x->strides[i - sh];
    }
    return PD_OK;
}

static int diag_geometry(const struct pdi_attrs_diagonal *a, const int64_t *shape, int nd, int *ax1, int *ax2,
                         int64_t *len, int64_t *start1, int64_t *start2)
{
    /* int64 attributes: range-check before narrowing */
    *ax1 = pdi_norm_axis64(a->axis1, nd);
    *ax2 = pdi_norm_axis64(a->axis2, nd);
    if (nd < 2 || *ax1 < 0 || *ax2 < 0 || *ax1 == *ax2)
        return pdi_errorf(PD_ERR_INVALID, "diagonal: need two different axes of a tensor with at least 2 dims");
    /* an offset past either dim gives an empty diagonal: clamping it keeps
     * the result and the arithmetic below in range (any int64 arrives) */
    int64_t off = pdi_clamp64(a->offset, -shape[*ax1], shape[*ax2]);
    *start1 = off >= 0 ? 0 : -off;
    *start2 = off >= 0 ? off : 0;
    int64_t l1 = shape[*ax1] - *start1, l2 = shape[*ax2] - *start2;
    *len = l1 < l2 ? l1 : l2;
    if (*len < 0) *len = 0;
    return PD_OK;
}

int pdi_infer_diagonal(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    struct pdi_meta *m = &c->meta[0];
    int a1 = 0, a2 = 0;
    int64_t len = 0, s1 = 0, s2 = 0;
    if (diag_geometry(&c->a.diagonal, x->shape, x->ndim, &a1, &a2, &len, &s1, &s2)) return PD_ERR_INVALID;
    c->a.diagonal.offset = s2 - s1; /* clamped: recorded for the VJP */
    m->dtype = x->dtype;
    m->ndim = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i == a1 || i == a2) continue;
        m->shape[m->ndim] = x->shape[i];
        m->strides[m->ndim++] = x->strides[i];
    }
    m->shape[m->ndim] = len;
    m->strides[m->ndim++] = x->strides[a1] + x->strides[a2];
    m->offset = x->offset + (len > 0 ? s1 * x->strides[a1] + s2 * x->strides[a2] : 0);
    return PD_OK;
}

/* Output of shape `shape` (the forward input's shape); check that the
 * forward op fop with attributes fa maps that shape onto the gradient's. */
static int infer_backward_of_view(struct pdi_call *c, const struct pdi_ints *shape, enum pd_op fop,
                                  const struct pdi_attrs *fa, int (*forward_infer)(struct pdi_call *))
{
    const struct pd_tensor *g = c->in[0];
    struct pdi_meta *m = &c->meta[0];
    if (shape->n < 0 || shape->n > PD_MAX_DIMS)
        return pdi_errorf(PD_ERR_INVALID, "%s: shape has %lld dims", pdi_ops[c->op].name, (long long)shape->n);
    int nd = (int)shape->n;
    for (int i = 0; i < nd; i++)
        if (shape->v[i] < 0) return pdi_errorf(PD_ERR_INVALID, "%s: negative dim in shape", pdi_ops[c->op].name);
    /* the element limit before any stride is formed from the shape */
    int rc = pdi_check_shape(pdi_ops[c->op].name, shape->v, nd);
    if (rc) return rc;
    /* run the forward infer on a shape-only stand-in of the input */
    struct pd_tensor x = {0};
    x.dtype = g->dtype;
    x.ndim = nd;
    memcpy(x.shape, shape->v, sizeof(int64_t) * (size_t)nd);
    pdi_contiguous_strides(x.shape, x.ndim, x.strides);
    struct pd_tensor *xin[1] = {&x};
    struct pdi_meta fm;
    struct pdi_call fc = {.op = fop, .n_in = 1, .n_out = 1, .in = xin, .a = *fa, .meta = &fm};
    if (forward_infer(&fc)) return PD_ERR_INVALID;
    if (fm.ndim != g->ndim || memcmp(fm.shape, g->shape, sizeof(int64_t) * (size_t)g->ndim)) {
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_INVALID, "%s: gradient of shape %s does not match the view's shape %s",
                          pdi_ops[c->op].name, pdi_shape_str(g->shape, g->ndim, b0, sizeof b0),
                          pdi_shape_str(fm.shape, fm.ndim, b1, sizeof b1));
    }
    m->dtype = g->dtype;
    m->ndim = nd;
    memcpy(m->shape, shape->v, sizeof(int64_t) * (size_t)nd);
    return PD_OK;
}

/* The forward attributes of a slice/diagonal backward, and back. */
static struct pdi_attrs slice_of(const struct pdi_attrs_slice_backward *b)
{
    return (struct pdi_attrs){.slice = {.axis = b->axis, .start = b->start, .stop = b->stop, .step = b->step}};
}

static struct pdi_attrs slice_backward_of(const struct pdi_attrs_slice *s, const struct pdi_meta *in)
{
    struct pdi_attrs a = {.slice_backward = {.axis = s->axis, .start = s->start, .stop = s->stop, .step = s->step}};
    a.slice_backward.input_shape.n = in->ndim;
    memcpy(a.slice_backward.input_shape.v, in->shape, sizeof(int64_t) * (size_t)in->ndim);
    return a;
}

static struct pdi_attrs diagonal_of(const struct pdi_attrs_diagonal_backward *b)
{
    return (struct pdi_attrs){.diagonal = {.offset = b->offset, .axis1 = b->axis1, .axis2 = b->axis2}};
}

static struct pdi_attrs diagonal_backward_of(const struct pdi_attrs_diagonal *d, const struct pdi_meta *in)
{
    struct pdi_attrs a = {.diagonal_backward = {.offset = d->offset, .axis1 = d->axis1, .axis2 = d->axis2}};
    a.diagonal_backward.input_shape.n = in->ndim;
    memcpy(a.diagonal_backward.input_shape.v, in->shape, sizeof(int64_t) * (size_t)in->ndim);
    return a;
}

int pdi_infer_slice_backward(struct pdi_call *c)
{
    struct pdi_attrs fa = slice_of(&c->a.slice_backward);
    return infer_backward_of_view(c, &c->a.slice_backward.input_shape, PD_OP_slice, &fa, pdi_infer_slice);
}

int pdi_infer_diagonal_backward(struct pdi_call *c)
{
    struct pdi_attrs_diagonal_backward *b = &c->a.diagonal_backward;
    struct pdi_attrs fa = diagonal_of(b);
    int rc = infer_backward_of_view(c, &b->input_shape, PD_OP_diagonal, &fa, pdi_infer_diagonal);
    if (rc) return rc;
    /* the kernel steps by the offset: clamp it as the forward did */
    int nd = (int)b->input_shape.n, a1 = pdi_norm_axis64(b->axis1, nd), a2 = pdi_norm_axis64(b->axis2, nd);
    b->offset = pdi_clamp64(b->offset, -b->input_shape.v[a1], b->input_shape.v[a2]);
    return PD_OK;
}

/* ---- VJP rules (public ops only) ------------------------------------- */
int pdi_vjp_view(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    gin[0] = pd_reshape(g[0], n->in_meta[0].shape, n->in_meta[0].ndim);
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_permute(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int inv[PD_MAX_DIMS];
    int nd = n->in_meta[0].ndim;
    for (int i = 0; i < nd; i++) inv[pdi_norm_axis((int)n->a.permute.perm.v[i], nd)] = i;
    gin[0] = pd_permute(g[0], inv, nd);
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_slice(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pdi_attrs a = slice_backward_of(&n->a.slice, &n->in_meta[0]);
    gin[0] = pdi_call1(PD_OP_slice_backward, g[0], &a);
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_slice_backward(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pdi_attrs a = slice_of(&n->a.slice_backward);
    gin[0] = pdi_call1(PD_OP_slice, g[0], &a);
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_expand(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    gin[0] = pd_sum_to_shape(g[0], n->in_meta[0].shape, n->in_meta[0].ndim);
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_diagonal(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pdi_attrs a = diagonal_backward_of(&n->a.diagonal, &n->in_meta[0]);
    gin[0] = pdi_call1(PD_OP_diagonal_backward, g[0], &a);
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_diagonal_backward(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pdi_attrs a = diagonal_of(&n->a.diagonal_backward);
    gin[0] = pdi_call1(PD_OP_diagonal, g[0], &a);
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_copy(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    PDI_UNUSED(n);
    gin[0] = g[0];
    return PD_OK;
}

/* ---- public wrappers ------------------------------------------------- */
struct pd_tensor *pd_view(struct pd_tensor *x, const int64_t *shape, int ndim)
{
    if (!x) return NULL;
    struct pdi_attrs a = {.shape = {.shape = {.n = ndim}}};
    if (resolve_shape("view", x, shape, ndim, a.shape.shape.v)) return NULL;
    return pdi_call1(PD_OP_view, x, &a);
}

struct pd_tensor *pd_reshape(struct pd_tensor *x, const int64_t *shape, int ndim)
{
    if (!x) return NULL;
    struct pdi_attrs a = {.shape = {.shape = {.n = ndim}}};
    if (resolve_shape("reshape", x, shape, ndim, a.shape.shape.v)) return NULL;
    int64_t st[PD_MAX_DIMS];
    if (nocopy_strides(x->shape, x->strides, x->ndim, a.shape.shape.v, ndim, st) == 0)
        return pdi_call1(PD_OP_view, x, &a);
    struct pd_tensor *c = pd_contiguous(x);
    return c ? pdi_call1(PD_OP_view, c, &a) : NULL;
}

struct pd_tensor *pd_permute(struct pd_tensor *x, const int *perm, int ndim)
{
    if (!x) return NULL;
    if (ndim < 0 || ndim > PD_MAX_DIMS || (ndim && !perm)) return pdi_error(PD_ERR_INVALID, "permute: bad permutation");
    struct pdi_attrs a = {.permute = {.perm = {.n = ndim}}};
    for (int i = 0; i < ndim; i++) a.permute.perm.v[i] = perm[i];
    return pdi_call1(PD_OP_permute, x, &a);
}

struct pd_tensor *pd_transpose(struct pd_tensor *x, int d0, int d1)
{
    if (!x) return NULL;
    int a0 = pdi_norm_axis(d0, x->ndim), a1 = pdi_norm_axis(d1, x->ndim);
    if (a0 < 0 || a1 < 0 || x->ndim == 0)
        return pdi_error(PD_ERR_INVALID, "transpose: axes %d, %d out of range for a %d-d tensor", d0, d1, x->ndim);
    int perm[PD_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) perm[i] = i;
    perm[a0] = a1;
    perm[a1] = a0;
    return pd_permute(x, perm, x->ndim);
}

struct pd_tensor *pd_slice(struct pd_tensor *x, int axis, int64_t start, int64_t stop, int64_t step)
{
    if (!x) return NULL;
    int ax = pdi_norm_axis(axis, x->ndim);
    if (ax < 0 || x->ndim == 0)
        return pdi_error(PD_ERR_INVALID, "slice: axis %d out of range for a %d-d tensor", axis, x->ndim);
    if (step <= 0) return pdi_error(PD_ERR_INVALID, "slice: step must be positive, got %lld", (long long)step);
    int64_t n = x->shape[ax];
    if (start < 0) start += n;
    if (stop < 0) stop += n;
    start = start < 0 ? 0 : start > n ? n : start;
    stop = stop < start ? start : stop > n ? n : stop;
    struct pdi_attrs a = {.slice = {.axis = ax, .start = start, .stop = stop, .step = step}};
    return pdi_call1(PD_OP_slice, x, &a);
}

struct pd_tensor *pd_expand(struct pd_tensor *x, const int64_t *shape, int ndim)
{
    if (!x) return NULL;
    if (ndim < 0 || ndim > PD_MAX_DIMS) return pdi_error(PD_ERR_INVALID, "expand: ndim %d outside [0, %d]", ndim, PD_MAX_DIMS);
    if (ndim > 0 && !shape) return pdi_error(PD_ERR_NULL, "expand: shape is NULL");
    struct pdi_attrs a = {.shape = {.shape = {.n = ndim}}};
    memcpy(a.shape.shape.v, shape, sizeof(int64_t) * (size_t)ndim);
    return pdi_call1(PD_OP_expand, x, &a);
}

struct pd_tensor *pd_broadcast_to(struct pd_tensor *x, const int64_t *shape, int ndim)
{
    return pd_expand(x, shape, ndim);
}

struct pd_tensor *pd_squeeze(struct pd_tensor *x, int axis)
{
    if (!x) return NULL;
    int64_t shape[PD_MAX_DIMS];
    int nd = 0;
    int ax = axis == PD_ALL_AXES ? -1 : pdi_norm_axis(axis, x->ndim);
    if (axis != PD_ALL_AXES && (ax < 0 || x->ndim == 0))
        return pdi_error(PD_ERR_INVALID, "squeeze: axis %d out of range for a %d-d tensor", axis, x->ndim);
    for (int i = 0; i < x->ndim; i++)
        if (!(x->shape[i] == 1 && (ax < 0 || ax == i))) shape[nd++] = x->shape[i];
    return pd_view(x, shape, nd);
}

struct pd_tensor *pd_unsqueeze(struct pd_tensor *x, int axis)
{
    if (!x) return NULL;
    int ax = axis < 0 ? axis + x->ndim + 1 : axis;
    if (ax < 0 || ax > x->ndim || x->ndim >= PD_MAX_DIMS)
        return pdi_error(PD_ERR_INVALID, "unsqueeze: axis %d out of range for a %d-d tensor", axis, x->ndim);
    int64_t shape[PD_MAX_DIMS];
    for (int i = 0, k = 0; i <= x->ndim; i++) shape[i] = i == ax ? 1 : x->shape[k++];
    return pd_view(x, shape, x->ndim + 1);
}

struct pd_tensor *pd_flatten(struct pd_tensor *x, int start_axis, int end_axis)
{
    if (!x) return NULL;
    if (x->ndim == 0) {
        /* a 0-d tensor has the one axis 0 (or -1), as everywhere */
        if (pdi_norm_axis(start_axis, 0) < 0 || pdi_norm_axis(end_axis, 0) < 0)
            return pdi_error(PD_ERR_INVALID, "flatten: bad axes %d..%d for a 0-d tensor", start_axis, end_axis);
        int64_t one = 1;
        return pd_reshape(x, &one, 1);
    }
    int s = pdi_norm_axis(start_axis, x->ndim), e = pdi_norm_axis(end_axis, x->ndim);
    if (s < 0 || e < 0 || s > e)
        return pdi_error(PD_ERR_INVALID, "flatten: bad axes %d..%d for a %d-d tensor", start_axis, end_axis, x->ndim);
    int64_t shape[PD_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < s; i++) shape[nd++] = x->shape[i];
    int64_t m = 1;
    for (int i = s; i <= e; i++) m *= x->shape[i];
    shape[nd++] = m;
    for (int i = e + 1; i < x->ndim; i++) shape[nd++] = x->shape[i];
    return pd_reshape(x, shape, nd);
}

int pd_unbind(struct pd_tensor *x, int axis, struct pd_tensor **out)
{
    if (!x) return PD_ERR_NULL;
    if (!out) return pdi_errorf(PD_ERR_NULL, "unbind: out is NULL");
    int ax = pdi_norm_axis(axis, x->ndim);
    if (ax < 0 || x->ndim == 0)
        return pdi_errorf(PD_ERR_INVALID, "unbind: axis %d out of range for a %d-d tensor", axis, x->ndim);
    int64_t n = x->shape[ax];
    for (int64_t i = 0; i < n; i++) {
        out[i] = pd_squeeze(pd_slice(x, ax, i, i + 1, 1), ax);
        if (!out[i]) return pd_last_status();
    }
    return (int)n;
}

struct pd_tensor *pd_diagonal(struct pd_tensor *x, int64_t offset, int axis1, int axis2)
{
    struct pdi_attrs a = {.diagonal = {.offset = offset, .axis1 = axis1, .axis2 = axis2}};
    return pdi_call1(PD_OP_diagonal, x, &a);
}

struct pd_tensor *pd_clone(struct pd_tensor *x) { return pdi_call1(PD_OP_copy, x, NULL); }

struct pd_tensor *pd_contiguous(struct pd_tensor *x)
{
    if (!x) return NULL;
    if (pd_tensor_is_contiguous(x)) {
        /* same tensor, one more owner in this scope */
        pd_tensor_retain(x);
        return pdi_scope_add(x);
    }
    return pd_clone(x);
}

struct pd_tensor *pd_detach(struct pd_tensor *x)
{
    if (!x) return NULL;
    return pdi_scope_add(pdi_tensor_alias_same(x));
}

struct pd_tensor *pd_sum_to_shape(struct pd_tensor *x, const int64_t *shape, int ndim)
{
    if (!x) return NULL;
    if (ndim < 0 || ndim > PD_MAX_DIMS || (ndim > 0 && !shape))
        return pdi_error(PD_ERR_INVALID, "sum_to_shape: ndim %d outside [0, %d] (or a NULL shape)", ndim, PD_MAX_DIMS);
    int lead = x->ndim - ndim;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (lead < 0)
        return pdi_error(PD_ERR_INVALID, "sum_to_shape: cannot sum %s to more dims %s",
                         pdi_shape_str(x->shape, x->ndim, b0, sizeof b0), pdi_shape_str(shape, ndim, b1, sizeof b1));
    int axes[PD_MAX_DIMS], na = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i < lead) { axes[na++] = i; continue; }
        int64_t want = shape[i - lead];
        if (want == x->shape[i]) continue;
        if (want != 1)
            return pdi_error(PD_ERR_INVALID, "sum_to_shape: %s does not broadcast from %s",
                             pdi_shape_str(x->shape, x->ndim, b0, sizeof b0), pdi_shape_str(shape, ndim, b1, sizeof b1));
        axes[na++] = i;
    }
    if (na == 0) { pd_tensor_retain(x); return pdi_scope_add(x); }
    struct pd_tensor *s = pd_sum(x, axes, na, 1);
    return pd_reshape(s, shape, ndim);
}

/* ---- in-place -------------------------------------------------------- */
/* Running an op in place is safe for autograd only when nothing recorded
 * can observe the overwrite; otherwise compute out of place and rebase. */
static struct pd_tensor *inplace_check(struct pd_tensor *a, const char *op)
{
    if (!a) return NULL;
    if (pd_is_grad_enabled() && a->requires_grad && !a->grad_fn)
        return pdi_error(PD_ERR_INVALID, "%s: a leaf that requires grad cannot be modified in place (use no_grad)", op);
    return a;
}

static int needs_rebase(struct pd_tensor *a, struct pd_tensor *b)
{
    return pd_is_grad_enabled() && (a->requires_grad || (b && b->requires_grad));
}

/* out-of-place result r written into a's memory, a takes r's history. */
static struct pd_tensor *rebase(struct pd_tensor *a, struct pd_tensor *r, const char *op)
{
    if (!r) return NULL;
    if (a->st->refcount > 1)
        return pdi_error(PD_ERR_INVALID,
                         "%s: in-place update of a tensor that shares storage with a view, with autograd on, is not "
                         "supported; clone it first", op);
    int mode = pd_no_grad_begin();
    struct pd_tensor *ok = mode < 0 ? NULL : pd_copy_(a, r);
    if (mode >= 0 && pd_grad_mode_end(mode)) ok = NULL;
    if (!ok) return NULL;
    if (r->grad_fn) {
        pdi_node_retain(r->grad_fn);
        if (a->grad_fn) pdi_node_release(a->grad_fn);
        a->grad_fn = r->grad_fn;
        a->out_nr = r->out_nr;
        a->requires_grad = 1;
    }
    return a;
}

static struct pd_tensor *binary_inplace(enum pd_op op, struct pd_tensor *a, struct pd_tensor *b,
                                        struct pd_tensor *(*outofplace)(struct pd_tensor *, struct pd_tensor *),
                                        const char *name)
{
    if (!inplace_check(a, name) || !b) return NULL;
    if (needs_rebase(a, b)) {
        struct pd_tensor *old = pd_clone(a);
        return rebase(a, outofplace(old, b), name);
    }
    if (b->dtype != a->dtype) b = pd_cast(b, a->dtype);
    if (!b) return NULL;
    /* b reading memory that a writes at other positions (x += x.T) would see
     * half-updated values: read from a copy. The identical view is safe. */
    if (b->st == a->st && !(b->offset == a->offset && b->ndim == a->ndim &&
                            !memcmp(b->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim) &&
                            !memcmp(b->strides, a->strides, sizeof(int64_t) * (size_t)a->ndim)))
        b = pd_clone(b);
    if (!b) return NULL;
    struct pd_tensor *in[2] = {a, b}, *out[1];
    struct pdi_call c = {.op = op, .n_in = 2, .n_out = 1, .in = in, .out = out, .inplace = 1};
    return pdi_dispatch(&c) ? NULL : a;
}

struct pd_tensor *pd_add_(struct pd_tensor *a, struct pd_tensor *b) { return binary_inplace(PD_OP_add, a, b, pd_add, "add_"); }
struct pd_tensor *pd_mul_(struct pd_tensor *a, struct pd_tensor *b) { return binary_inplace(PD_OP_mul, a, b, pd_mul, "mul_"); }

struct pd_tensor *pd_scale_(struct pd_tensor *a, double s)
{
    if (!inplace_check(a, "scale_")) return NULL;
    if (needs_rebase(a, NULL)) return rebase(a, pd_scale(pd_clone(a), s), "scale_");
    struct pd_tensor *in[1] = {a}, *out[1];
    struct pdi_call c = {.op = PD_OP_scale, .n_in = 1, .n_out = 1, .in = in, .out = out, .inplace = 1};
    c.a.scale.s = s;
    return pdi_dispatch(&c) ? NULL : a;
}

/* The temporaries (cast, clone, expand) live in a scope of their own so that
 * a call outside any scope leaks nothing. The write itself is the op copy_
 * (in place: out[0] is dst). */
static int copy_into(struct pd_tensor *dst, struct pd_tensor *src)
{
    struct pd_tensor *s = src->dtype == dst->dtype ? src : pd_cast(src, dst->dtype);
    if (s && s->st == dst->st) s = pd_clone(s); /* overlapping source: copy it first */
    s = pd_expand(s, dst->shape, dst->ndim);
    if (!s) return pd_last_status();
    struct pd_tensor *in[2] = {dst, s}, *out[1];
    struct pdi_call c = {.op = PD_OP_copy_, .n_in = 2, .n_out = 1, .in = in, .out = out, .inplace = 1};
    return pdi_dispatch(&c);
}

struct pd_tensor *pd_copy_(struct pd_tensor *dst, struct pd_tensor *src)
{
    if (!inplace_check(dst, "copy_") || !src) return NULL;
    if (pd_is_grad_enabled() && src->requires_grad)
        return pdi_error(PD_ERR_INVALID, "copy_: src requires grad; copy under no_grad or use an out-of-place op");
    int scope_tok = pd_scope_begin();
    int rc = copy_into(dst, src);
    pd_scope_end(scope_tok);
    return rc ? NULL : dst;
}

/* The op fill_ (in place). The leaf check names copy_, as it always has. */
struct pd_tensor *pd_fill_(struct pd_tensor *a, double value)
{
    if (!inplace_check(a, "fill_")) return NULL;
    struct pd_tensor *in[1] = {a}, *out[1];
    struct pdi_call c = {.op = PD_OP_fill_, .n_in = 1, .n_out = 1, .in = in, .out = out, .inplace = 1};
    c.a.fill.value = value;
    return pdi_dispatch(&c) ? NULL : a;
}
