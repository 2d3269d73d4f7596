/* paddle.c — the index family, part 2: shape ops. concat, flip, pad,
 * pad_backward, tril/triu (rows in ops_index.def) and the composites stack,
 * split, chunk, tile, repeat_interleave and roll.
 *
 * Composites are built from views where possible: split/chunk return
 * slices (no copy), stack is unsqueeze + concat, tile and repeat_interleave
 * are expand + reshape (one copy), roll is two slices + concat. They need no
 * VJP of their own.
 *
 * VJP rules (public ops only, differentiable again):
 *   concat        -> slices of g (views)
 *   flip          -> flip
 *   pad constant  -> slices of g (or pad with the negated pads if any pad
 *                    crops), reflect/replicate -> pad_backward, whose VJP is
 *                    pad with the same mode
 *   tril/triu     -> tril/triu of g
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* ---- infer ----------------------------------------------------------- */
int pdi_infer_concat(struct pdi_call *c)
{
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (c->n_in < 1) return pdi_errorf(PD_ERR_INVALID, "concat: needs at least one input");
    const struct pd_tensor *x0 = c->in[0];
    if (x0->ndim == 0) return pdi_errorf(PD_ERR_INVALID, "concat: 0-d tensors cannot be concatenated");
    int64_t ax = c->a.concat.axis;
    if (ax < -x0->ndim || ax >= x0->ndim)
        return pdi_errorf(PD_ERR_INVALID, "concat: axis %lld out of range for %d-d tensors", (long long)ax, x0->ndim);
    if (ax < 0) ax += x0->ndim;
    c->a.concat.axis = ax;
    int64_t total = 0;
    for (int i = 0; i < c->n_in; i++) {
        const struct pd_tensor *t = c->in[i];
        if (t->dtype != x0->dtype)
            return pdi_errorf(PD_ERR_INVALID, "concat: input %d has dtype %s but input 0 has %s", i,
                              pd_dtype_name(t->dtype), pd_dtype_name(x0->dtype));
        int ok = t->ndim == x0->ndim;
        for (int d = 0; ok && d < t->ndim; d++) ok = d == ax || t->shape[d] == x0->shape[d];
        if (!ok)
            return pdi_errorf(PD_ERR_INVALID, "concat: input %d has shape %s but input 0 has %s; they may differ only in axis %lld",
                              i, pdi_shape_str(t->shape, t->ndim, b0, sizeof b0),
                              pdi_shape_str(x0->shape, x0->ndim, b1, sizeof b1), (long long)ax);
        total += t->shape[ax];
    }
    struct pdi_meta *m = &c->meta[0];
    pdi_meta_of(x0, m);
    m->shape[ax] = total;
    return PD_OK;
}

/* Writes the mask of normalised axes into the set's mask for the kernels. */
int pdi_infer_flip(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    const struct pdi_ints *axes = &c->a.flip.axes;
    unsigned mask = 0;
    if (axes->n > PD_MAX_DIMS)
        return pdi_errorf(PD_ERR_INVALID, "flip: %lld axes for a %d-d tensor", (long long)axes->n, x->ndim);
    for (int i = 0; i < axes->n; i++) {
        int ax = pdi_norm_axis((int)axes->v[i], x->ndim);
        if (ax < 0 || axes->v[i] != (int)axes->v[i])
            return pdi_errorf(PD_ERR_INVALID, "flip: axis %lld out of range for a %d-d tensor", (long long)axes->v[i],
                              x->ndim);
        if (mask & (1u << ax)) return pdi_errorf(PD_ERR_INVALID, "flip: axis %d repeated", ax);
        mask |= 1u << ax;
    }
    c->a.flip.mask = x->ndim ? mask : 0;
    pdi_meta_of(x, &c->meta[0]);
    return PD_OK;
}

/* Validates pads (torch order) for a tensor of `shape`; writes the padded
 * shape into out. */
static int check_pads(const char *op, const int64_t *pads, int64_t np, int64_t mode, const int64_t *shape, int nd,
                      int64_t *out)
{
    if (np < 0 || np % 2 || np > 2 * nd)
        return pdi_errorf(PD_ERR_INVALID, "%s: %lld pad values for a %d-d tensor; expected an even number up to %d", op,
                          (long long)np, nd, 2 * nd);
    if (mode < 0 || mode >= PD_PAD_MODE_COUNT)
        return pdi_errorf(PD_ERR_INVALID, "%s: mode %lld is not constant (0), reflect (1) or replicate (2)", op,
                          (long long)mode);
    if (nd) memcpy(out, shape, sizeof(int64_t) * (size_t)nd);
    for (int p = 0; p < np / 2; p++) {
        int d = nd - 1 - p;
        int64_t b = pads[2 * p], a = pads[2 * p + 1], n = shape[d];
        if (mode != PD_PAD_CONSTANT) {
            if (b < 0 || a < 0)
                return pdi_errorf(PD_ERR_INVALID, "%s: negative padding (%lld, %lld) of dim %d is only allowed in "
                                  "constant mode", op, (long long)b, (long long)a, d);
            if (mode == PD_PAD_REFLECT && (b >= n || a >= n) && (a || b))
                return pdi_errorf(PD_ERR_INVALID, "%s: reflect padding (%lld, %lld) of dim %d must be smaller than "
                                  "its size %lld", op, (long long)b, (long long)a, d, (long long)n);
            if (mode == PD_PAD_REPLICATE && n == 0 && (a || b))
                return pdi_errorf(PD_ERR_INVALID, "%s: replicate padding of dim %d, which is empty", op, d);
        }
        /* a pad may crop at most the whole dim and add at most the element
         * limit: the kernels' index arithmetic (i - before) stays in range */
        if (b < -n || a < -n || b > PDI_MAX_NUMEL || a > PDI_MAX_NUMEL)
            return pdi_errorf(PD_ERR_INVALID, "%s: padding (%lld, %lld) of dim %d (size %lld) is outside [-%lld, 2^46]",
                              op, (long long)b, (long long)a, d, (long long)n, (long long)n);
        out[d] = n + b + a;
        if (out[d] < 0)
            return pdi_errorf(PD_ERR_INVALID, "%s: padding (%lld, %lld) of dim %d (size %lld) leaves a negative size",
                              op, (long long)b, (long long)a, d, (long long)n);
    }
    return PD_OK;
}

int pdi_infer_pad(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    struct pdi_meta *m = &c->meta[0];
    const struct pdi_attrs_pad *a = &c->a.pad;
    if (check_pads("pad", a->pads.v, a->pads.n, a->mode, x->shape, x->ndim, m->shape)) return PD_ERR_INVALID;
    int rc = pdi_check_shape("pad", m->shape, x->ndim);
    if (rc) return rc;
    m->dtype = x->dtype;
    m->ndim = x->ndim;
    return PD_OK;
}

/* in: the gradient of a pad (padded shape); pads and the input shape in the set. */
int pdi_infer_pad_backward(struct pdi_call *c)
{
    const struct pd_tensor *g = c->in[0];
    const struct pdi_attrs_pad_backward *a = &c->a.pad_backward;
    int64_t np = a->pads.n;
    int nd = g->ndim;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (np < 0 || np > 2 * nd || a->input_shape.n != nd)
        return pdi_errorf(PD_ERR_INVALID,
                          "pad_backward: expected up to %d pads and the %d-d input shape, got %lld pads and %lld dims",
                          2 * nd, nd, (long long)np, (long long)a->input_shape.n);
    const int64_t *shape = a->input_shape.v;
    int64_t padded[PD_MAX_DIMS];
    if (check_pads("pad_backward", a->pads.v, np, a->mode, shape, nd, padded)) return PD_ERR_INVALID;
    if (nd && memcmp(padded, g->shape, sizeof(int64_t) * (size_t)nd))
        return pdi_errorf(PD_ERR_INVALID, "pad_backward: gradient %s does not match the padded input shape %s",
                          pdi_shape_str(g->shape, nd, b0, sizeof b0), pdi_shape_str(padded, nd, b1, sizeof b1));
    struct pdi_meta *m = &c->meta[0];
    m->dtype = g->dtype;
    m->ndim = nd;
    if (nd) memcpy(m->shape, shape, sizeof(int64_t) * (size_t)nd);
    return PD_OK;
}

int pdi_infer_tri(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    char b0[PDI_SHAPE_BUF];
    if (x->ndim < 2)
        return pdi_errorf(PD_ERR_INVALID, "%s: expected a tensor with at least 2 dims, got %s", pdi_ops[c->op].name,
                          pdi_shape_str(x->shape, x->ndim, b0, sizeof b0));
    /* a diagonal past the matrix keeps all or nothing: clamped, the kernels'
     * row + diagonal cannot overflow (and the VJP records the same) */
    int64_t R = x->shape[x->ndim - 2], C = x->shape[x->ndim - 1];
    c->a.tri.diagonal = pdi_clamp64(c->a.tri.diagonal, -R - 1, C + 1);
    pdi_meta_of(x, &c->meta[0]);
    return PD_OK;
}

/* ---- VJP rules ------------------------------------------------------- */
int pdi_vjp_concat(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int ax = (int)n->a.concat.axis;
    int64_t off = 0;
    for (int i = 0; i < n->n_in; i++) {
        int64_t len = n->in_meta[i].shape[ax];
        if (pdi_node_needs(n, i)) {
            gin[i] = pd_slice(g[0], ax, off, off + len, 1);
            if (!gin[i]) return pd_last_status();
        }
        off += len;
    }
    return PD_OK;
}

int pdi_vjp_flip(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    gin[0] = pdi_call1(PD_OP_flip, g[0], &n->a);
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_pad(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    const struct pdi_meta *m = &n->in_meta[0];
    const struct pdi_attrs_pad *pa = &n->a.pad;
    int np = (int)pa->pads.n, nd = m->ndim;
    if (pa->mode == PD_PAD_CONSTANT) {
        int crop = 0;
        for (int p = 0; p < np; p++) crop |= pa->pads.v[p] < 0;
        if (crop) {
            /* some pad removed elements: their gradient is 0, so pad back */
            int64_t neg[2 * PD_MAX_DIMS];
            for (int p = 0; p < np; p++) neg[p] = -pa->pads.v[p];
            gin[0] = pd_pad(g[0], neg, np, PD_PAD_CONSTANT, 0.0);
        } else {
            struct pd_tensor *t = g[0];
            for (int p = 0; p < np / 2 && t; p++) {
                int d = nd - 1 - p;
                int64_t b = pa->pads.v[2 * p];
                if (b || pa->pads.v[2 * p + 1]) t = pd_slice(t, d, b, b + m->shape[d], 1);
            }
            gin[0] = t;
        }
    } else {
        struct pdi_attrs a = {.pad_backward = {.pads = pa->pads, .mode = pa->mode}};
        a.pad_backward.input_shape.n = nd;
        memcpy(a.pad_backward.input_shape.v, m->shape, sizeof(int64_t) * (size_t)nd);
        gin[0] = pdi_call1(PD_OP_pad_backward, g[0], &a);
    }
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_pad_backward(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pdi_attrs a = {.pad = {.pads = n->a.pad_backward.pads, .mode = n->a.pad_backward.mode}};
    gin[0] = pdi_call1(PD_OP_pad, g[0], &a);
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_tril(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    gin[0] = pd_tril(g[0], n->a.tri.diagonal);
    return gin[0] ? PD_OK : pd_last_status();
}

int pdi_vjp_triu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    gin[0] = pd_triu(g[0], n->a.tri.diagonal);
    return gin[0] ? PD_OK : pd_last_status();
}

/* ---- public wrappers ------------------------------------------------- */
/* Inputs are promoted to a common dtype (like torch.cat). 1-d empty
 * tensors are skipped when other inputs have another rank (torch's legacy
 * rule, which lets code start from an empty accumulator). */
struct pd_tensor *pd_concat(struct pd_tensor *const *xs, int n, int axis)
{
    if (n <= 0 || !xs) return pdi_error(PD_ERR_INVALID, "concat: needs at least one input");
    int other_rank = 0;
    enum pd_dtype dt = PD_BOOL;
    for (int i = 0; i < n; i++) {
        if (!xs[i]) return NULL;
        other_rank |= xs[i]->ndim != 1;
        dt = i == 0 ? xs[0]->dtype : pd_promote_types(dt, xs[i]->dtype);
    }
    struct pd_tensor *small[16], **in = n <= 16 ? small : pdi_malloc(sizeof *in * (size_t)n);
    if (!in) return pdi_error(PD_ERR_NOMEM, "concat: out of memory");
    int m = 0;
    for (int i = 0; i < n; i++) {
        struct pd_tensor *t = xs[i];
        if (other_rank && t->ndim == 1 && t->shape[0] == 0) continue;
        in[m++] = t->dtype == dt ? t : pd_cast(t, dt);
        if (!in[m - 1]) break;
    }
    struct pd_tensor *r = NULL;
    if (m > 0 && in[m - 1]) {
        struct pdi_attrs a = {.concat = {.axis = axis}};
        r = pdi_calln(PD_OP_concat, in, m, &a);
    }
    if (in != small) free(in);
    return r;
}

struct pd_tensor *pd_stack(struct pd_tensor *const *xs, int n, int axis)
{
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (n <= 0 || !xs) return pdi_error(PD_ERR_INVALID, "stack: needs at least one input");
    for (int i = 0; i < n; i++) if (!xs[i]) return NULL;
    int nd = xs[0]->ndim;
    int ax = axis < 0 ? axis + nd + 1 : axis;
    if (ax < 0 || ax > nd || nd >= PD_MAX_DIMS)
        return pdi_error(PD_ERR_INVALID, "stack: axis %d out of range for %d-d inputs", axis, nd);
    for (int i = 1; i < n; i++)
        if (xs[i]->ndim != nd || memcmp(xs[i]->shape, xs[0]->shape, sizeof(int64_t) * (size_t)nd))
            return pdi_error(PD_ERR_INVALID, "stack: input %d has shape %s but input 0 has %s", i,
                             pdi_shape_str(xs[i]->shape, xs[i]->ndim, b0, sizeof b0),
                             pdi_shape_str(xs[0]->shape, nd, b1, sizeof b1));
    struct pd_tensor *small[16], **in = n <= 16 ? small : pdi_malloc(sizeof *in * (size_t)n);
    if (!in) return pdi_error(PD_ERR_NOMEM, "stack: out of memory");
    int ok = 1;
    for (int i = 0; i < n && ok; i++) ok = (in[i] = pd_unsqueeze(xs[i], ax)) != NULL;
    struct pd_tensor *r = ok ? pd_concat(in, n, ax) : NULL;
    if (in != small) free(in);
    return r;
}

static int split_axis(const char *op, const struct pd_tensor *x, int axis)
{
    int ax = pdi_norm_axis(axis, x->ndim);
    if (ax < 0 || x->ndim == 0)
        return pdi_errorf(PD_ERR_INVALID, "%s: axis %d out of range for a %d-d tensor", op, axis, x->ndim);
    return ax;
}

/* Views (slices) of x; one size may be -1 (the rest). Returns n_sections. */
int pd_split(struct pd_tensor *x, const int64_t *sizes, int n_sections, int axis, struct pd_tensor **out)
{
    if (!x) return PD_ERR_NULL;
    int ax = split_axis("split", x, axis);
    if (ax < 0) return ax;
    if (n_sections <= 0 || !sizes || !out)
        return pdi_errorf(PD_ERR_INVALID, "split: needs at least one section size and an output array");
    int64_t dim = x->shape[ax], sum = 0, s[1024];
    int rest = -1;
    if (n_sections > 1024) return pdi_errorf(PD_ERR_INVALID, "split: at most 1024 sections, got %d", n_sections);
    for (int i = 0; i < n_sections; i++) {
        s[i] = sizes[i];
        if (s[i] == -1 && rest < 0) { rest = i; continue; }
        if (s[i] < 0) return pdi_errorf(PD_ERR_INVALID, "split: section %d has size %lld", i, (long long)s[i]);
        if (s[i] > dim - sum) /* sum <= dim: no overflow */
            return pdi_errorf(PD_ERR_INVALID,
                              "split: section sizes add up to more than axis %d's size %lld (past "
                              "section %d)",
                              ax, (long long)dim, i);
        sum += s[i];
    }
    if (rest >= 0) s[rest] = dim - sum;
    if ((rest >= 0 && s[rest] < 0) || (rest < 0 && sum != dim))
        return pdi_errorf(PD_ERR_INVALID, "split: section sizes add up to %lld but axis %d has size %lld",
                          (long long)sum, ax, (long long)dim);
    int64_t off = 0;
    for (int i = 0; i < n_sections; i++) {
        out[i] = pd_slice(x, ax, off, off + s[i], 1);
        if (!out[i]) return pd_last_status();
        off += s[i];
    }
    return n_sections;
}

/* Like torch.chunk: pieces of ceil(dim / chunks), so there may be fewer
 * than `chunks` pieces; an empty axis gives `chunks` empty pieces. out must
 * hold `chunks` tensors. Returns the number of pieces. */
int pd_chunk(struct pd_tensor *x, int chunks, int axis, struct pd_tensor **out)
{
    if (!x) return PD_ERR_NULL;
    int ax = split_axis("chunk", x, axis);
    if (ax < 0) return ax;
    if (chunks <= 0 || !out) return pdi_errorf(PD_ERR_INVALID, "chunk: chunks must be positive, got %d", chunks);
    int64_t dim = x->shape[ax];
    int64_t size = (dim + chunks - 1) / chunks;
    int count = size ? (int)((dim + size - 1) / size) : chunks;
    for (int i = 0; i < count; i++) {
        int64_t start = size * i, stop = start + size < dim ? start + size : dim;
        out[i] = pd_slice(x, ax, start, stop, 1);
        if (!out[i]) return pd_last_status();
    }
    return count;
}

/* Like torch.tile / numpy.tile: reps shorter than x's rank are padded with
 * leading 1s, x is viewed with leading 1-dims when reps is longer. */
struct pd_tensor *pd_tile(struct pd_tensor *x, const int64_t *reps, int n_reps)
{
    if (!x) return NULL;
    if (n_reps < 0 || n_reps > PD_MAX_DIMS || (n_reps && !reps))
        return pdi_error(PD_ERR_INVALID, "tile: %d repetitions (at most %d)", n_reps, PD_MAX_DIMS);
    int nd = x->ndim > n_reps ? x->ndim : n_reps, extra = 0;
    int64_t r[PD_MAX_DIMS] = {0}, s[PD_MAX_DIMS] = {0}, fs[PD_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) {
        int dr = d - (nd - n_reps), dx = d - (nd - x->ndim);
        r[d] = dr < 0 ? 1 : reps[dr];
        s[d] = dx < 0 ? 1 : x->shape[dx];
        if (r[d] < 0) return pdi_error(PD_ERR_INVALID, "tile: negative repetition %lld", (long long)r[d]);
        if (!pdi_mul_ok(r[d], s[d], &fs[d]))
            fs[d] = -1; /* past any limit: refused below */
        else if (fs[d] == 0 && r[d] > PDI_MAX_NUMEL)
            fs[d] = -1;
        extra += r[d] != 1;
    }
    /* the result's shape, checked before any expand or allocation */
    for (int d = 0; d < nd; d++)
        if (fs[d] < 0)
            return pdi_error(PD_ERR_INVALID, "tile: %lld repetitions of a dim of size %lld are too many elements",
                             (long long)r[d], (long long)s[d]);
    if (pdi_check_shape("tile", fs, nd)) return NULL;
    struct pd_tensor *t = pd_reshape(x, s, nd);
    if (extra == 0) return pd_clone(t);
    if (nd + extra <= PD_MAX_DIMS) {
        /* [.., s_d, ..] -> [.., 1, s_d, ..] -> expand [.., r_d, s_d, ..] -> [.., r_d * s_d, ..] */
        int64_t us[PD_MAX_DIMS], es[PD_MAX_DIMS];
        int k = 0;
        for (int d = 0; d < nd; d++) {
            if (r[d] != 1) { us[k] = 1; es[k++] = r[d]; }
            us[k] = s[d];
            es[k++] = s[d];
        }
        return pd_reshape(pd_expand(pd_reshape(t, us, k), es, k), fs, nd);
    }
    /* rank too high for the extra axes: concatenate copies dim by dim */
    for (int d = 0; d < nd && t; d++) {
        if (r[d] == 1) continue;
        if (r[d] == 0) { s[d] = 0; t = pd_zeros(s, nd, x->dtype); continue; }
        if (r[d] > 65536) /* one concat input per copy */
            return pdi_error(PD_ERR_INVALID,
                             "tile: %lld repetitions of a tensor of rank %d (at most 65536 at this rank)",
                             (long long)r[d], nd);
        struct pd_tensor **xs = pdi_malloc(sizeof *xs * (size_t)r[d]);
        if (!xs) return pdi_error(PD_ERR_NOMEM, "tile: out of memory");
        for (int64_t i = 0; i < r[d]; i++) xs[i] = t;
        t = pd_concat(xs, (int)r[d], d);
        free(xs);
        s[d] *= r[d];
    }
    return t;
}

/* Each element repeated `repeats` times along axis (PD_ALL_AXES: of the
 * flattened x): unsqueeze, expand, reshape. */
struct pd_tensor *pd_repeat_interleave(struct pd_tensor *x, int64_t repeats, int axis)
{
    if (!x) return NULL;
    if (repeats < 0) return pdi_error(PD_ERR_INVALID, "repeat_interleave: negative repeats %lld", (long long)repeats);
    if (axis == PD_ALL_AXES) {
        x = pd_flatten(x, 0, -1);
        axis = 0;
        if (!x) return NULL;
    }
    int ax = split_axis("repeat_interleave", x, axis);
    if (ax < 0) return NULL;
    int nd = x->ndim;
    int64_t fs[PD_MAX_DIMS];
    memcpy(fs, x->shape, sizeof(int64_t) * (size_t)nd);
    if (repeats > PDI_MAX_NUMEL || !pdi_mul_ok(fs[ax], repeats, &fs[ax]))
        return pdi_error(PD_ERR_INVALID, "repeat_interleave: %lld repeats of a dim of size %lld are too many elements",
                         (long long)repeats, (long long)x->shape[ax]);
    if (pdi_check_shape("repeat_interleave", fs, nd)) return NULL;
    if (nd < PD_MAX_DIMS) {
        int64_t es[PD_MAX_DIMS];
        for (int d = 0, k = 0; d <= nd; d++) es[d] = d == ax + 1 ? repeats : x->shape[k++];
        return pd_reshape(pd_expand(pd_unsqueeze(x, ax + 1), es, nd + 1), fs, nd);
    }
    /* no room for the extra axis: index_select with [0 x r, 1 x r, ...] */
    int64_t n = fs[ax];
    int64_t *ix = pdi_malloc(sizeof *ix * (size_t)(n + 1));
    if (!ix) return pdi_error(PD_ERR_NOMEM, "repeat_interleave: out of memory");
    for (int64_t i = 0; i < n; i++) ix[i] = i / repeats;
    struct pd_tensor *index = pd_from_buffer(ix, &n, 1, PD_I64);
    free(ix);
    return pd_index_select(x, ax, index);
}

/* Elements shifted by `shift` along axis, wrapping around (PD_ALL_AXES: of
 * the flattened x, shape kept): two slices and a concat. */
struct pd_tensor *pd_roll(struct pd_tensor *x, int64_t shift, int axis)
{
    if (!x) return NULL;
    if (axis == PD_ALL_AXES) {
        struct pd_tensor *r = pd_roll(pd_flatten(x, 0, -1), shift, 0);
        return r ? pd_reshape(r, x->shape, x->ndim) : NULL;
    }
    int ax = split_axis("roll", x, axis);
    if (ax < 0) return NULL;
    int64_t n = x->shape[ax];
    int64_t s = n ? ((shift % n) + n) % n : 0;
    if (s == 0) return pd_clone(x);
    struct pd_tensor *parts[2] = {pd_slice(x, ax, n - s, n, 1), pd_slice(x, ax, 0, n - s, 1)};
    return pd_concat(parts, 2, ax);
}

struct pd_tensor *pd_flip(struct pd_tensor *x, const int *axes, int n_axes)
{
    if (!x) return NULL;
    if (n_axes < 0 || n_axes > PD_MAX_DIMS || (n_axes && !axes))
        return pdi_error(PD_ERR_INVALID, "flip: %d axes for a %d-d tensor", n_axes, x->ndim);
    struct pdi_attrs a = {.flip = {.axes = {.n = n_axes}}};
    for (int i = 0; i < n_axes; i++) a.flip.axes.v[i] = axes[i];
    return pdi_call1(PD_OP_flip, x, &a);
}

struct pd_tensor *pd_pad(struct pd_tensor *x, const int64_t *pads, int n_pads, enum pd_pad_mode mode, double value)
{
    if (!x) return NULL;
    if (n_pads < 0 || n_pads > 2 * PD_MAX_DIMS || (n_pads && !pads))
        return pdi_error(PD_ERR_INVALID, "pad: %d pad values for a %d-d tensor", n_pads, x->ndim);
    struct pdi_attrs a = {.pad = {.pads = {.n = n_pads}, .mode = mode, .value = value}};
    if (n_pads) memcpy(a.pad.pads.v, pads, sizeof(int64_t) * (size_t)n_pads);
    return pdi_call1(PD_OP_pad, x, &a);
}

struct pd_tensor *pd_tril(struct pd_tensor *x, int64_t diagonal)
{
    struct pdi_attrs a = {.tri = {.diagonal = diagonal}};
    return pdi_call1(PD_OP_tril, x, &a);
}

struct pd_tensor *pd_triu(struct pd_tensor *x, int64_t diagonal)
{
    struct pdi_attrs a = {.tri = {.diagonal = diagonal}};
    return pdi_call1(PD_OP_triu, x, &a);
}
