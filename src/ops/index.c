/* paddle.c — the index family, part 1: gather/scatter-like ops, masks,
 * nonzero, sort/topk/unique (rows in ops_index.def), and the composites
 * take_along_axis, masked_fill and argsort. Shape ops (concat, flip, pad,
 * tril/triu, stack, split, tile, roll, ...) live in index_shape.c.
 *
 * Index tensors are int32 or int64; their values are never wrapped: a
 * negative or too large index is an error naming the value, the axis and the
 * size. Range checks are done by the kernels (one pass before any write), so
 * the infer functions stay free of data reads — except for the ops whose
 * output shape depends on the data (nonzero, masked_select, unique, and the
 * count check of masked_scatter): their infer reads the input, which is fine
 * in eager mode and a graph break for tracing.
 *
 * Infer functions normalise axis attributes in place (c->a), so kernels, the
 * recorded GradNode and VJPs always see non-negative axes.
 *
 * VJP rules use public ops (and this family's ops through pdi_call*) only,
 * so they are differentiable again:
 *   gather         -> scatter_add into zeros of x's shape
 *   index_select   -> index_add into zeros
 *   scatter        -> x: scatter(g, index, zeros); src: gather(g, index)
 *   scatter_add    -> x: g;                         src: gather(g, index)
 *   index_add      -> x: g;                         src: index_select(g, index)
 *   masked_select  -> masked_scatter into zeros
 *   masked_scatter -> x: g with the masked positions zeroed; src: masked_select(g)
 *   topk / sort    -> scatter of g into zeros at the (unique) indices
 * When src is larger than the index (torch allows it), the src gradient is
 * zero-padded to src's shape.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* ---- shared checks --------------------------------------------------- */
static int check_index_dtype(const char *op, const struct pd_tensor *idx)
{
    if (idx->dtype != PD_I32 && idx->dtype != PD_I64)
        return pdi_errorf(PD_ERR_INVALID, "%s: index must be int32 or int64, got %s", op, pd_dtype_name(idx->dtype));
    return PD_OK;
}

/* Normalise the axis attribute *axis of c (a field of c->a) against ndim
 * (a 0-d tensor accepts axis 0 and -1, like PyTorch). */
static int norm_axis_attr(const struct pdi_call *c, int64_t *axis, int ndim)
{
    int64_t ax = *axis, n = ndim ? ndim : 1;
    if (ax < -n || ax >= n)
        return pdi_errorf(PD_ERR_INVALID, "%s: axis %lld out of range for a %d-d tensor", pdi_ops[c->op].name,
                          (long long)ax, ndim);
    *axis = ax < 0 ? ax + n : ax;
    return PD_OK;
}

static void set_meta(struct pdi_meta *m, enum pd_dtype dt, const int64_t *shape, int nd)
{
    m->dtype = dt;
    m->ndim = nd;
    if (nd) memcpy(m->shape, shape, sizeof(int64_t) * (size_t)nd);
}

/* Nonzero test on raw bits: floats ignore the sign bit (-0.0 is zero, NaN
 * is not), everything else compares with 0. */
static int is_nonzero(const char *p, size_t es, int fl)
{
    switch (es) {
    case 1: return *(const uint8_t *)p != 0;
    case 2: return (*(const uint16_t *)p & (fl ? 0x7fffu : 0xffffu)) != 0;
    case 4: return (*(const uint32_t *)p & (fl ? 0x7fffffffu : 0xffffffffu)) != 0;
    default: return (*(const uint64_t *)p & (fl ? 0x7fffffffffffffffull : ~0ull)) != 0;
    }
}

struct nz_ctx {
    size_t es;
    int fl;
    int64_t total;
};

static void nz_run(char **p, const int64_t *st, int64_t n, void *ctx)
{
    struct nz_ctx *c = ctx;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) k += is_nonzero(p[0] + i * st[0], c->es, c->fl);
    __atomic_add_fetch(&c->total, k, __ATOMIC_RELAXED);
}

/* Number of nonzero elements of t (any dtype, any strides). Reads data
 * (a host read): used only by the infer of data-dependent shapes. -1 with
 * the error when t has no data (meta). */
static int64_t count_nonzero(const struct pd_tensor *t, const char *op)
{
    if (!pdi_host_read(t, op)) return -1;
    struct pd_kview v;
    pdi_kview_of(t, &v);
    struct pd_kview *ops[1] = {&v};
    struct nz_ctx c = {pd_dtype_size(t->dtype), pd_dtype_is_float(t->dtype), 0};
    pdi_iter(1, ops, v.shape, v.ndim, nz_run, &c);
    return c.total;
}

/* mask must be bool and broadcast to x's shape exactly. */
static int check_mask(const char *op, const struct pd_tensor *x, const struct pd_tensor *mask)
{
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (mask->dtype != PD_BOOL)
        return pdi_errorf(PD_ERR_INVALID, "%s: mask must be bool, got %s", op, pd_dtype_name(mask->dtype));
    int64_t bs[PD_MAX_DIMS];
    int nb = 0;
    if (pdi_broadcast_shapes(x->shape, x->ndim, mask->shape, mask->ndim, bs, &nb) || nb != x->ndim ||
        (nb && memcmp(bs, x->shape, sizeof(int64_t) * (size_t)nb)))
        return pdi_errorf(PD_ERR_INVALID, "%s: mask %s does not broadcast to x %s", op,
                          pdi_shape_str(mask->shape, mask->ndim, b0, sizeof b0),
                          pdi_shape_str(x->shape, x->ndim, b1, sizeof b1));
    return PD_OK;
}

/* True positions of mask broadcast to x: every mask element is repeated
 * numel(x) / numel(mask) times. */
static int64_t count_mask(const struct pd_tensor *x, const struct pd_tensor *mask, const char *op)
{
    int64_t nm = pd_tensor_numel(mask), nx = pd_tensor_numel(x);
    if (nm == 0 || nx == 0) return 0;
    int64_t k = count_nonzero(mask, op);
    return k < 0 ? -1 : k * (nx / nm);
}

/* ---- infer ----------------------------------------------------------- */
int pdi_infer_gather(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0], *idx = c->in[1];
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (check_index_dtype("gather", idx)) return PD_ERR_INVALID;
    if (idx->ndim != x->ndim)
        return pdi_errorf(PD_ERR_INVALID, "gather: index %s must have as many dims as x %s",
                          pdi_shape_str(idx->shape, idx->ndim, b0, sizeof b0),
                          pdi_shape_str(x->shape, x->ndim, b1, sizeof b1));
    if (norm_axis_attr(c, &c->a.index_axis.axis, x->ndim)) return PD_ERR_INVALID;
    int ax = (int)c->a.index_axis.axis;
    for (int d = 0; d < x->ndim; d++)
        if (d != ax && idx->shape[d] > x->shape[d])
            return pdi_errorf(PD_ERR_INVALID, "gather: index %s is larger than x %s in dim %d (only axis %d may be larger)",
                              pdi_shape_str(idx->shape, idx->ndim, b0, sizeof b0),
                              pdi_shape_str(x->shape, x->ndim, b1, sizeof b1), d, ax);
    set_meta(&c->meta[0], x->dtype, idx->shape, idx->ndim);
    return PD_OK;
}

int pdi_infer_index_select(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0], *idx = c->in[1];
    char b0[PDI_SHAPE_BUF];
    if (check_index_dtype("index_select", idx)) return PD_ERR_INVALID;
    if (idx->ndim > 1)
        return pdi_errorf(PD_ERR_INVALID, "index_select: index must be 1-d, got %s",
                          pdi_shape_str(idx->shape, idx->ndim, b0, sizeof b0));
    if (x->ndim == 0) return pdi_errorf(PD_ERR_INVALID, "index_select: x must have at least one dim, got a 0-d tensor");
    if (norm_axis_attr(c, &c->a.index_axis.axis, x->ndim)) return PD_ERR_INVALID;
    set_meta(&c->meta[0], x->dtype, x->shape, x->ndim);
    c->meta[0].shape[c->a.index_axis.axis] = pd_tensor_numel(idx);
    return PD_OK;
}

/* scatter, scatter_add: x, index, src of the same rank; the index is no
 * larger than src anywhere and no larger than x off the axis. */
int pdi_infer_scatter(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0], *idx = c->in[1], *src = c->in[2];
    const char *op = pdi_ops[c->op].name;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF], b2[PDI_SHAPE_BUF];
    if (check_index_dtype(op, idx)) return PD_ERR_INVALID;
    if (src->dtype != x->dtype)
        return pdi_errorf(PD_ERR_INVALID, "%s: src dtype %s differs from x dtype %s", op, pd_dtype_name(src->dtype),
                          pd_dtype_name(x->dtype));
    if (idx->ndim != x->ndim || src->ndim != x->ndim)
        return pdi_errorf(PD_ERR_INVALID, "%s: x %s, index %s and src %s must have the same number of dims", op,
                          pdi_shape_str(x->shape, x->ndim, b0, sizeof b0),
                          pdi_shape_str(idx->shape, idx->ndim, b1, sizeof b1),
                          pdi_shape_str(src->shape, src->ndim, b2, sizeof b2));
    if (norm_axis_attr(c, &c->a.index_axis.axis, x->ndim)) return PD_ERR_INVALID;
    int ax = (int)c->a.index_axis.axis;
    for (int d = 0; d < x->ndim; d++)
        if (idx->shape[d] > src->shape[d] || (d != ax && idx->shape[d] > x->shape[d]))
            return pdi_errorf(PD_ERR_INVALID,
                              "%s: index %s must be no larger than src %s in every dim and no larger than x %s "
                              "off axis %d (dim %d differs)", op,
                              pdi_shape_str(idx->shape, idx->ndim, b0, sizeof b0),
                              pdi_shape_str(src->shape, src->ndim, b1, sizeof b1),
                              pdi_shape_str(x->shape, x->ndim, b2, sizeof b2), ax, d);
    set_meta(&c->meta[0], x->dtype, x->shape, x->ndim);
    return PD_OK;
}

int pdi_infer_index_add(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0], *idx = c->in[1], *src = c->in[2];
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (check_index_dtype("index_add", idx)) return PD_ERR_INVALID;
    if (idx->ndim > 1)
        return pdi_errorf(PD_ERR_INVALID, "index_add: index must be 1-d, got %s",
                          pdi_shape_str(idx->shape, idx->ndim, b0, sizeof b0));
    if (src->dtype != x->dtype)
        return pdi_errorf(PD_ERR_INVALID, "index_add: src dtype %s differs from x dtype %s", pd_dtype_name(src->dtype),
                          pd_dtype_name(x->dtype));
    if (x->ndim == 0) return pdi_errorf(PD_ERR_INVALID, "index_add: x must have at least one dim, got a 0-d tensor");
    if (norm_axis_attr(c, &c->a.index_axis.axis, x->ndim)) return PD_ERR_INVALID;
    int ax = (int)c->a.index_axis.axis;
    int ok = src->ndim == x->ndim;
    for (int d = 0; ok && d < x->ndim; d++)
        ok = src->shape[d] == (d == ax ? pd_tensor_numel(idx) : x->shape[d]);
    if (!ok)
        return pdi_errorf(PD_ERR_INVALID, "index_add: src %s must have x's shape %s with %lld (the index length) in axis %d",
                          pdi_shape_str(src->shape, src->ndim, b0, sizeof b0),
                          pdi_shape_str(x->shape, x->ndim, b1, sizeof b1), (long long)pd_tensor_numel(idx), ax);
    set_meta(&c->meta[0], x->dtype, x->shape, x->ndim);
    return PD_OK;
}

/* Data-dependent output shape: reads the mask (graph break for tracing). */
int pdi_infer_masked_select(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0], *mask = c->in[1];
    if (check_mask("masked_select", x, mask)) return PD_ERR_INVALID;
    int64_t n = count_mask(x, mask, "masked_select");
    if (n < 0) return pd_last_status();
    set_meta(&c->meta[0], x->dtype, &n, 1);
    return PD_OK;
}

int pdi_infer_masked_scatter(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0], *mask = c->in[1], *src = c->in[2];
    if (check_mask("masked_scatter", x, mask)) return PD_ERR_INVALID;
    if (src->dtype != x->dtype)
        return pdi_errorf(PD_ERR_INVALID, "masked_scatter: src dtype %s differs from x dtype %s",
                          pd_dtype_name(src->dtype), pd_dtype_name(x->dtype));
    /* Reads the mask to check src is long enough (graph break for tracing). */
    int64_t n = count_mask(x, mask, "masked_scatter");
    if (n < 0) return pd_last_status();
    if (pd_tensor_numel(src) < n)
        return pdi_errorf(PD_ERR_INVALID, "masked_scatter: src has %lld elements but the mask selects %lld",
                          (long long)pd_tensor_numel(src), (long long)n);
    set_meta(&c->meta[0], x->dtype, x->shape, x->ndim);
    return PD_OK;
}

/* Data-dependent output shape [count, ndim]: reads x (graph break for tracing). */
int pdi_infer_nonzero(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    int64_t shape[2] = {count_nonzero(x, "nonzero"), x->ndim};
    if (shape[0] < 0) return pd_last_status();
    set_meta(&c->meta[0], PD_I64, shape, 2);
    return PD_OK;
}

/* Bits identifying the value of element p under unique's equality: int64
 * as is, every other dtype through double (exact) with -0 == +0 and one NaN. */
static uint64_t unique_key(const char *p, enum pd_dtype dt)
{
    if (dt == PD_I64) return *(const uint64_t *)p;
    union { double d; uint64_t u; } v = {pdi_load(p, dt)};
    if (v.d != v.d) return 0x7ff8000000000000ull;
    if (v.d == 0) return 0;
    return v.u;
}

/* Number of distinct values of x, with an open-addressing hash set (O(n)).
 * Data-dependent output shape: reads x (graph break for tracing). */
static int count_unique(const struct pd_tensor *x, int64_t *u)
{
    int64_t n = pd_tensor_numel(x), cap = 16;
    *u = 0;
    if (n == 0) return PD_OK;
    if (!pdi_host_read(x, "unique")) return pd_last_status();
    while (cap < 2 * n) cap *= 2;
    uint64_t *keys = pdi_malloc(sizeof *keys * (size_t)cap);
    unsigned char *used = pdi_calloc((size_t)cap, 1);
    if (!keys || !used) {
        free(keys);
        free(used);
        return pdi_errorf(PD_ERR_NOMEM, "unique: out of memory (%lld elements)", (long long)n);
    }
    struct pd_kview v;
    pdi_kview_of(x, &v);
    int contig = pdi_kview_contiguous(&v);
    size_t es = pd_dtype_size(x->dtype);
    int shift = 64;
    for (int64_t c = cap; c > 1; c >>= 1) shift--;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        const char *p = contig ? v.data + i * (int64_t)es : pdi_kview_ptr(&v, i);
        uint64_t key = unique_key(p, x->dtype);
        uint64_t h = (key * 0x9e3779b97f4a7c15ull) >> shift;
        while (used[h] && keys[h] != key) h = (h + 1) & (uint64_t)(cap - 1);
        if (!used[h]) {
            used[h] = 1;
            keys[h] = key;
            k++;
        }
    }
    free(keys);
    free(used);
    *u = k;
    return PD_OK;
}

int pdi_infer_unique(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    int64_t u = 0;
    if (count_unique(x, &u)) return pd_last_status();
    set_meta(&c->meta[0], x->dtype, &u, 1);
    set_meta(&c->meta[1], PD_I64, x->shape, x->ndim);
    set_meta(&c->meta[2], PD_I64, &u, 1);
    return PD_OK;
}

int pdi_infer_sort(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    if (norm_axis_attr(c, &c->a.sort.axis, x->ndim)) return PD_ERR_INVALID;
    c->a.sort.descending = c->a.sort.descending != 0;
    set_meta(&c->meta[0], x->dtype, x->shape, x->ndim);
    set_meta(&c->meta[1], PD_I64, x->shape, x->ndim);
    return PD_OK;
}

int pdi_infer_topk(struct pdi_call *c)
{
    const struct pd_tensor *x = c->in[0];
    if (norm_axis_attr(c, &c->a.topk.axis, x->ndim)) return PD_ERR_INVALID;
    int ax = (int)c->a.topk.axis;
    int64_t n = x->ndim ? x->shape[ax] : 1, k = c->a.topk.k;
    if (k < 0 || k > n)
        return pdi_errorf(PD_ERR_INVALID, "topk: k = %lld out of range [0, %lld] for axis %d", (long long)k,
                          (long long)n, ax);
    if (x->ndim == 0 && k != 1) return pdi_errorf(PD_ERR_INVALID, "topk: k must be 1 for a 0-d tensor, got %lld", (long long)k);
    c->a.topk.largest = c->a.topk.largest != 0;
    set_meta(&c->meta[0], x->dtype, x->shape, x->ndim);
    if (x->ndim) c->meta[0].shape[ax] = k;
    set_meta(&c->meta[1], PD_I64, c->meta[0].shape, x->ndim);
    return PD_OK;
}

/* ---- VJP rules (public ops only) ------------------------------------- */
static struct pd_tensor *zeros_of(const struct pdi_meta *m) { return pd_zeros(m->shape, m->ndim, m->dtype); }

static struct pd_tensor *masked_scatter(struct pd_tensor *x, struct pd_tensor *mask, struct pd_tensor *src)
{
    struct pd_tensor *in[3] = {x, mask, src};
    return pdi_calln(PD_OP_masked_scatter, in, 3, NULL);
}

/* Zero-pad t (shape `have`) at the end of each dim up to meta's shape. */
static struct pd_tensor *pad_to(struct pd_tensor *t, const struct pdi_meta *m)
{
    if (!t) return NULL;
    int64_t pads[2 * PD_MAX_DIMS];
    int grow = 0, nd = m->ndim;
    for (int d = 0; d < nd; d++) {
        pads[2 * (nd - 1 - d)] = 0;
        pads[2 * (nd - 1 - d) + 1] = m->shape[d] - t->shape[d];
        grow |= m->shape[d] != t->shape[d];
    }
    return grow ? pd_pad(t, pads, 2 * nd, PD_PAD_CONSTANT, 0.0) : t;
}

#define SET_GIN(i, expr)                                  \
    do {                                                  \
        gin[i] = (expr);                                  \
        if (!gin[i]) return pd_last_status();             \
    } while (0)

int pdi_vjp_gather(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (!pdi_node_needs(n, 0)) return PD_OK;
    struct pd_tensor *idx = pdi_node_in(n, 1);
    if (!idx) return pd_last_status();
    SET_GIN(0, pd_scatter_add(zeros_of(&n->in_meta[0]), (int)n->a.index_axis.axis, idx, g[0]));
    return PD_OK;
}

int pdi_vjp_index_select(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (!pdi_node_needs(n, 0)) return PD_OK;
    struct pd_tensor *idx = pdi_node_in(n, 1);
    if (!idx) return pd_last_status();
    SET_GIN(0, pd_index_add(zeros_of(&n->in_meta[0]), (int)n->a.index_axis.axis, idx, g[0]));
    return PD_OK;
}

/* src gradient of scatter/scatter_add: gather(g, index) padded to src's shape. */
static int scatter_src_grad(struct pdi_node *n, struct pd_tensor *g, struct pd_tensor *idx, struct pd_tensor **gin)
{
    if (!pdi_node_needs(n, 2)) return PD_OK;
    SET_GIN(2, pad_to(pd_gather(g, (int)n->a.index_axis.axis, idx), &n->in_meta[2]));
    return PD_OK;
}

int pdi_vjp_scatter(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *idx = pdi_node_in(n, 1);
    if (!idx) return pd_last_status();
    if (pdi_node_needs(n, 0)) {
        /* the overwritten positions of x get no gradient */
        struct pd_tensor *z = pd_zeros(idx->shape, idx->ndim, g[0]->dtype);
        SET_GIN(0, pd_scatter(g[0], (int)n->a.index_axis.axis, idx, z));
    }
    return scatter_src_grad(n, g[0], idx, gin);
}

int pdi_vjp_scatter_add(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (pdi_node_needs(n, 0)) gin[0] = g[0];
    if (!pdi_node_needs(n, 2)) return PD_OK;
    struct pd_tensor *idx = pdi_node_in(n, 1);
    if (!idx) return pd_last_status();
    return scatter_src_grad(n, g[0], idx, gin);
}

int pdi_vjp_index_add(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (pdi_node_needs(n, 0)) gin[0] = g[0];
    if (!pdi_node_needs(n, 2)) return PD_OK;
    struct pd_tensor *idx = pdi_node_in(n, 1);
    if (!idx) return pd_last_status();
    SET_GIN(2, pd_index_select(g[0], (int)n->a.index_axis.axis, idx));
    return PD_OK;
}

int pdi_vjp_masked_select(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (!pdi_node_needs(n, 0)) return PD_OK;
    struct pd_tensor *mask = pdi_node_in(n, 1);
    if (!mask) return pd_last_status();
    SET_GIN(0, masked_scatter(zeros_of(&n->in_meta[0]), mask, g[0]));
    return PD_OK;
}

int pdi_vjp_masked_scatter(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    struct pd_tensor *mask = pdi_node_in(n, 1);
    if (!mask) return pd_last_status();
    const struct pdi_meta *ms = &n->in_meta[2];
    if (pdi_node_needs(n, 0)) SET_GIN(0, masked_scatter(g[0], mask, zeros_of(ms)));
    if (pdi_node_needs(n, 2)) {
        struct pd_tensor *s = pd_masked_select(g[0], mask);
        if (!s) return pd_last_status();
        int64_t len = pdi_numel(ms->shape, ms->ndim), pads[2] = {0, len - s->shape[0]};
        if (pads[1]) s = pd_pad(s, pads, 2, PD_PAD_CONSTANT, 0.0); /* src entries past the count were unused */
        SET_GIN(2, pd_reshape(s, ms->shape, ms->ndim));
    }
    return PD_OK;
}

/* topk/sort: the output came from x at unique indices along the axis. */
static int sorted_grad(struct pdi_node *n, struct pd_tensor *g, int axis, struct pd_tensor **gin)
{
    if (!pdi_node_needs(n, 0)) return PD_OK;
    struct pd_tensor *idx = pd_detach(pdi_node_out(n, 1)); /* integer: carries no gradient */
    if (!idx) return pd_last_status();
    SET_GIN(0, pd_scatter(zeros_of(&n->in_meta[0]), axis, idx, g));
    return PD_OK;
}

int pdi_vjp_topk(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    return sorted_grad(n, g[0], (int)n->a.topk.axis, gin);
}

int pdi_vjp_sort(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    return sorted_grad(n, g[0], (int)n->a.sort.axis, gin);
}

/* ---- public wrappers ------------------------------------------------- */
/* scatter-like ops take src in x's dtype (a differentiable cast). */
static struct pd_tensor *call_xis(enum pd_op op, struct pd_tensor *x, int axis, struct pd_tensor *index,
                                  struct pd_tensor *src)
{
    if (!x || !index || !src) return NULL;
    if (src->dtype != x->dtype) src = pd_cast(src, x->dtype);
    struct pd_tensor *in[3] = {x, index, src};
    struct pdi_attrs a = {.index_axis = {.axis = axis}};
    return pdi_calln(op, in, 3, &a);
}

struct pd_tensor *pd_gather(struct pd_tensor *x, int axis, struct pd_tensor *index)
{
    struct pdi_attrs a = {.index_axis = {.axis = axis}};
    return pdi_call2(PD_OP_gather, x, index, &a);
}

struct pd_tensor *pd_index_select(struct pd_tensor *x, int axis, struct pd_tensor *index)
{
    struct pdi_attrs a = {.index_axis = {.axis = axis}};
    return pdi_call2(PD_OP_index_select, x, index, &a);
}

struct pd_tensor *pd_scatter(struct pd_tensor *x, int axis, struct pd_tensor *index, struct pd_tensor *src)
{
    return call_xis(PD_OP_scatter, x, axis, index, src);
}

struct pd_tensor *pd_scatter_add(struct pd_tensor *x, int axis, struct pd_tensor *index, struct pd_tensor *src)
{
    return call_xis(PD_OP_scatter_add, x, axis, index, src);
}

struct pd_tensor *pd_index_add(struct pd_tensor *x, int axis, struct pd_tensor *index, struct pd_tensor *src)
{
    return call_xis(PD_OP_index_add, x, axis, index, src);
}

/* NumPy's take_along_axis: x and index have the same rank and broadcast
 * against each other off the axis; then a gather. Indices are not wrapped. */
struct pd_tensor *pd_take_along_axis(struct pd_tensor *x, int axis, struct pd_tensor *index)
{
    if (!x || !index) return NULL;
    char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
    if (x->ndim != index->ndim)
        return pdi_error(PD_ERR_INVALID, "take_along_axis: x %s and index %s must have the same number of dims",
                         pdi_shape_str(x->shape, x->ndim, b0, sizeof b0),
                         pdi_shape_str(index->shape, index->ndim, b1, sizeof b1));
    int ax = pdi_norm_axis(axis, x->ndim);
    if (ax < 0) return pdi_error(PD_ERR_INVALID, "take_along_axis: axis %d out of range for a %d-d tensor", axis, x->ndim);
    int64_t xs[PD_MAX_DIMS], is[PD_MAX_DIMS];
    int bx = 0, bi = 0;
    for (int d = 0; d < x->ndim; d++) {
        xs[d] = x->shape[d];
        is[d] = index->shape[d];
        if (d == ax || xs[d] == is[d]) continue;
        if (xs[d] == 1) { xs[d] = is[d]; bx = 1; }
        else if (is[d] == 1) { is[d] = xs[d]; bi = 1; }
        else
            return pdi_error(PD_ERR_INVALID, "take_along_axis: x %s and index %s do not broadcast off axis %d (dim %d)",
                             pdi_shape_str(x->shape, x->ndim, b0, sizeof b0),
                             pdi_shape_str(index->shape, index->ndim, b1, sizeof b1), ax, d);
    }
    if (bx) x = pd_expand(x, xs, x->ndim);
    if (bi) index = pd_expand(index, is, index->ndim);
    return pd_gather(x, ax, index);
}

struct pd_tensor *pd_masked_fill(struct pd_tensor *x, struct pd_tensor *mask, double value)
{
    if (!x || !mask) return NULL;
    if (mask->dtype != PD_BOOL)
        return pdi_error(PD_ERR_INVALID, "masked_fill: mask must be bool, got %s", pd_dtype_name(mask->dtype));
    return pd_where(mask, pd_scalar(value, x->dtype), x);
}

/* x and mask broadcast against each other (like PyTorch); the op itself
 * takes a mask that broadcasts to x, so x is expanded (a view) if needed. */
struct pd_tensor *pd_masked_select(struct pd_tensor *x, struct pd_tensor *mask)
{
    if (!x || !mask) return NULL;
    int64_t bs[PD_MAX_DIMS];
    int nb = 0;
    if (pdi_broadcast_shapes(x->shape, x->ndim, mask->shape, mask->ndim, bs, &nb) == 0 &&
        (nb != x->ndim || memcmp(bs, x->shape, sizeof(int64_t) * (size_t)nb)))
        x = pd_expand(x, bs, nb);
    return pdi_call2(PD_OP_masked_select, x, mask, NULL);
}

struct pd_tensor *pd_nonzero(struct pd_tensor *x) { return pdi_call1(PD_OP_nonzero, x, NULL); }

/* Multi-output calls: outputs the caller did not ask for are dropped (they
 * belong to the current scope if there is one, else to us). */
static int call_multi(enum pd_op op, struct pd_tensor *x, const struct pdi_attrs *a, struct pd_tensor **out, int n_out)
{
    struct pd_tensor *in[1] = {x};
    struct pdi_call c = {.op = op, .n_in = 1, .n_out = n_out, .in = in, .out = out, .a = *a};
    return pdi_dispatch(&c);
}

static void drop(struct pd_tensor *t)
{
    if (pd_scope_depth() == 0) pd_tensor_release(t);
}

struct pd_tensor *pd_topk(struct pd_tensor *x, int64_t k, int axis, int largest, struct pd_tensor **indices)
{
    if (indices) *indices = NULL;
    if (!x) return NULL;
    struct pdi_attrs a = {.topk = {.k = k, .axis = axis, .largest = largest != 0}};
    struct pd_tensor *out[2];
    if (call_multi(PD_OP_topk, x, &a, out, 2)) return NULL;
    if (indices) *indices = out[1];
    else drop(out[1]);
    return out[0];
}

struct pd_tensor *pd_sort(struct pd_tensor *x, int axis, int descending, struct pd_tensor **indices)
{
    if (indices) *indices = NULL;
    if (!x) return NULL;
    struct pdi_attrs a = {.sort = {.axis = axis, .descending = descending != 0}};
    struct pd_tensor *out[2];
    if (call_multi(PD_OP_sort, x, &a, out, 2)) return NULL;
    if (indices) *indices = out[1];
    else drop(out[1]);
    return out[0];
}

struct pd_tensor *pd_argsort(struct pd_tensor *x, int axis, int descending)
{
    struct pd_tensor *idx = NULL;
    int prev = pd_no_grad_begin(); /* indices only: no graph */
    struct pd_tensor *v = pd_sort(x, axis, descending, &idx);
    pd_grad_mode_end(prev);
    if (!v) return NULL;
    drop(v);
    return idx;
}

struct pd_tensor *pd_unique(struct pd_tensor *x, struct pd_tensor **inverse, struct pd_tensor **counts)
{
    if (inverse) *inverse = NULL;
    if (counts) *counts = NULL;
    if (!x) return NULL;
    struct pdi_attrs a = {0};
    struct pd_tensor *out[3];
    if (call_multi(PD_OP_unique, x, &a, out, 3)) return NULL;
    if (inverse) *inverse = out[1];
    else drop(out[1]);
    if (counts) *counts = out[2];
    else drop(out[2]);
    return out[0];
}
