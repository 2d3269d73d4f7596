/* paddle.c — reference kernels for the index family. Naive, element by
 * element over multi-indices, sums in double (pdi_load/pdi_store), any
 * strides: the oracle for the CPU kernels. Never optimised.
 *
 * Semantics fixed here (the CPU kernels must match):
 *   - index values are checked before use: out of range (negative included,
 *     never wrapped) is an error naming the value, the axis and the size;
 *   - scatter visits the index positions in row-major order: the last write
 *     wins; scatter_add/index_add sum in double, rounded once;
 *   - sort is stable, NaN sorts as the largest value; topk returns the first
 *     k of the stable sort (ties: lower index first);
 *   - unique: ascending, NaNs form one group, each value is stored with the
 *     bytes of its first occurrence.
 * Outputs are fresh contiguous tensors (the dispatcher allocates them).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernel.h"
#include "kernels/index_util.h"

static void unravel(int64_t i, const int64_t *shape, int nd, int64_t *co)
{
    for (int d = nd - 1; d >= 0; d--) {
        co[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
}

/* Element at multi-index co (co has at least v->ndim entries). */
static char *at(const struct pd_kview *v, const int64_t *co)
{
    int64_t off = 0;
    for (int d = 0; d < v->ndim; d++) off += co[d] * v->strides[d];
    return v->data + off * (int64_t)pd_dtype_size(v->dtype);
}

/* Element of mask broadcast (aligned right, size-1 dims repeated) to an nd-d shape. */
static char *at_bcast(const struct pd_kview *m, const int64_t *co, int nd)
{
    int64_t off = 0;
    for (int d = 0; d < m->ndim; d++)
        if (m->shape[d] != 1) off += co[d + nd - m->ndim] * m->strides[d];
    return m->data + off * (int64_t)pd_dtype_size(m->dtype);
}

static int64_t ld_index(const char *p, enum pd_dtype dt)
{
    return dt == PD_I32 ? *(const int32_t *)p : *(const int64_t *)p;
}

static int bad_index(const char *op, int64_t ix, int axis, int64_t size)
{
    return pdi_errorf(PD_ERR_INVALID, "%s: index %lld is out of range for axis %d of size %lld%s", op, (long long)ix,
                      axis, (long long)size, ix < 0 ? " (negative indices are not wrapped)" : "");
}

static int64_t axis_size(const struct pd_kview *x, int ax) { return x->ndim ? x->shape[ax] : 1; }

/* out[p] = x[p with p[axis] = index[p]] */
static int ref_gather(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *idx = &k->in[1], *y = &k->out[0];
    int ax = (int)k->a->index_axis.axis;
    int64_t size = axis_size(x, ax), n = pdi_kview_numel(y), co[PD_MAX_DIMS] = {0};
    size_t es = pd_dtype_size(y->dtype);
    for (int64_t i = 0; i < n; i++) {
        unravel(i, y->shape, y->ndim, co);
        int64_t ix = ld_index(at(idx, co), idx->dtype);
        if (ix < 0 || ix >= size) return bad_index("gather", ix, ax, size);
        co[ax] = ix;
        memcpy(pdi_kview_ptr(y, i), at(x, co), es);
    }
    return PD_OK;
}

static int ref_index_select(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *idx = &k->in[1], *y = &k->out[0];
    int ax = (int)k->a->index_axis.axis;
    int64_t size = x->shape[ax], n = pdi_kview_numel(y), co[PD_MAX_DIMS] = {0};
    size_t es = pd_dtype_size(y->dtype);
    for (int64_t i = 0; i < n; i++) {
        unravel(i, y->shape, y->ndim, co);
        int64_t j[1] = {co[ax]};
        int64_t ix = ld_index(at(idx, j), idx->dtype);
        if (ix < 0 || ix >= size) return bad_index("index_select", ix, ax, size);
        co[ax] = ix;
        memcpy(pdi_kview_ptr(y, i), at(x, co), es);
    }
    return PD_OK;
}

/* out = x, then for every position p of the index space in row-major order
 * (index_add: src's shape with the index read at p[axis]; scatter: the
 * index's shape): out[p with p[axis] = index] = src[p] (or +=). */
static int scatter_common(const struct pdi_kcall *k, const char *op, int add, int index1d)
{
    const struct pd_kview *x = &k->in[0], *idx = &k->in[1], *src = &k->in[2], *y = &k->out[0];
    int ax = (int)k->a->index_axis.axis;
    int64_t size = axis_size(x, ax), n = pdi_kview_numel(y), co[PD_MAX_DIMS] = {0};
    size_t es = pd_dtype_size(y->dtype);
    double *acc = add ? malloc(sizeof *acc * (size_t)(n + 1)) : NULL;
    if (add && !acc) return pdi_errorf(PD_ERR_NOMEM, "%s: out of memory", op);
    for (int64_t i = 0; i < n; i++) {
        unravel(i, y->shape, y->ndim, co);
        if (add) acc[i] = pdi_load(at(x, co), x->dtype);
        else memcpy(pdi_kview_ptr(y, i), at(x, co), es);
    }
    const struct pd_kview *space = index1d ? src : idx;
    int64_t m = pdi_kview_numel(space);
    for (int64_t i = 0; i < m; i++) {
        unravel(i, space->shape, space->ndim, co);
        int64_t j[1] = {co[ax]};
        int64_t ix = ld_index(at(idx, index1d ? j : co), idx->dtype);
        if (ix < 0 || ix >= size) {
            free(acc);
            return bad_index(op, ix, ax, size);
        }
        const char *s = at(src, co);
        co[ax] = ix;
        int64_t off = 0;
        for (int d = 0; d < y->ndim; d++) off += co[d] * y->strides[d];
        if (add) acc[off] += pdi_load(s, src->dtype);
        else memcpy(y->data + off * (int64_t)es, s, es);
    }
    if (add) {
        for (int64_t i = 0; i < n; i++) pdi_store(pdi_kview_ptr(y, i), y->dtype, acc[i]);
        free(acc);
    }
    return PD_OK;
}

static int ref_scatter(const struct pdi_kcall *k) { return scatter_common(k, "scatter", 0, 0); }
static int ref_scatter_add(const struct pdi_kcall *k) { return scatter_common(k, "scatter_add", 1, 0); }
static int ref_index_add(const struct pdi_kcall *k) { return scatter_common(k, "index_add", 1, 1); }

static int ref_masked_select(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *mask = &k->in[1], *y = &k->out[0];
    int64_t n = pdi_kview_numel(x), cap = pdi_kview_numel(y), j = 0, co[PD_MAX_DIMS] = {0};
    size_t es = pd_dtype_size(x->dtype);
    for (int64_t i = 0; i < n; i++) {
        unravel(i, x->shape, x->ndim, co);
        if (!*(const uint8_t *)at_bcast(mask, co, x->ndim)) continue;
        if (j == cap) return pdi_errorf(PD_ERR_STATE, "masked_select: the mask changed after the output was sized");
        memcpy(y->data + j++ * (int64_t)es, at(x, co), es);
    }
    return PD_OK;
}

static int ref_masked_scatter(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *mask = &k->in[1], *src = &k->in[2], *y = &k->out[0];
    int64_t n = pdi_kview_numel(x), ns = pdi_kview_numel(src), j = 0, co[PD_MAX_DIMS] = {0};
    size_t es = pd_dtype_size(x->dtype);
    for (int64_t i = 0; i < n; i++) {
        unravel(i, x->shape, x->ndim, co);
        const char *s = at(x, co);
        if (*(const uint8_t *)at_bcast(mask, co, x->ndim)) {
            if (j == ns)
                return pdi_errorf(PD_ERR_INVALID, "masked_scatter: src has %lld elements, fewer than the mask selects",
                                  (long long)ns);
            s = pdi_kview_ptr(src, j++);
        }
        memcpy(pdi_kview_ptr(y, i), s, es);
    }
    return PD_OK;
}

static int ref_nonzero(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int64_t n = pdi_kview_numel(x), rows = y->shape[0], j = 0, co[PD_MAX_DIMS] = {0};
    int nd = x->ndim;
    for (int64_t i = 0; i < n; i++) {
        unravel(i, x->shape, nd, co);
        if (pdi_load(at(x, co), x->dtype) == 0.0) continue;
        if (j == rows) return pdi_errorf(PD_ERR_STATE, "nonzero: the input changed after the output was sized");
        for (int d = 0; d < nd; d++) *(int64_t *)(y->data + (j * nd + d) * 8) = co[d];
        j++;
    }
    return PD_OK;
}

static int ref_concat(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    int ax = (int)k->a->concat.axis;
    size_t es = pd_dtype_size(y->dtype);
    int64_t off = 0, co[PD_MAX_DIMS] = {0};
    for (int t = 0; t < k->n_in; t++) {
        const struct pd_kview *x = &k->in[t];
        int64_t n = pdi_kview_numel(x);
        for (int64_t i = 0; i < n; i++) {
            unravel(i, x->shape, x->ndim, co);
            const char *s = at(x, co);
            co[ax] += off;
            memcpy(at(y, co), s, es);
        }
        off += x->shape[ax];
    }
    return PD_OK;
}

static int ref_flip(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    unsigned mask = (unsigned)k->a->flip.mask;
    int64_t n = pdi_kview_numel(y), co[PD_MAX_DIMS] = {0};
    size_t es = pd_dtype_size(y->dtype);
    for (int64_t i = 0; i < n; i++) {
        unravel(i, y->shape, y->ndim, co);
        for (int d = 0; d < y->ndim; d++)
            if (mask & (1u << d)) co[d] = y->shape[d] - 1 - co[d];
        memcpy(pdi_kview_ptr(y, i), at(x, co), es);
    }
    return PD_OK;
}

/* Maps padded coordinates co (in place) to x's; 0 if it reads the constant. */
static int pad_map(int64_t *co, const int64_t *before, const int64_t *shape, int nd, int64_t mode)
{
    for (int d = 0; d < nd; d++) {
        co[d] = pdi_pad_src(co[d], before[d], shape[d], mode);
        if (co[d] < 0) return 0;
    }
    return 1;
}

static int ref_pad(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int nd = y->ndim;
    int64_t before[PD_MAX_DIMS], co[PD_MAX_DIMS] = {0}, n = pdi_kview_numel(y);
    const struct pdi_attrs_pad *a = &k->a->pad;
    pdi_pads_before(a->pads.v, (int)a->pads.n, nd, before);
    size_t es = pd_dtype_size(y->dtype);
    for (int64_t i = 0; i < n; i++) {
        unravel(i, y->shape, nd, co);
        if (pad_map(co, before, x->shape, nd, a->mode)) memcpy(pdi_kview_ptr(y, i), at(x, co), es);
        else pdi_store(pdi_kview_ptr(y, i), y->dtype, a->value);
    }
    return PD_OK;
}

/* out (x's shape) = sum of g over the padded positions that read each element. */
static int ref_pad_backward(const struct pdi_kcall *k)
{
    const struct pd_kview *g = &k->in[0], *y = &k->out[0];
    int nd = y->ndim;
    int64_t before[PD_MAX_DIMS], co[PD_MAX_DIMS] = {0}, n = pdi_kview_numel(y), m = pdi_kview_numel(g);
    const struct pdi_attrs_pad_backward *a = &k->a->pad_backward;
    pdi_pads_before(a->pads.v, (int)a->pads.n, nd, before);
    double *acc = calloc((size_t)(n + 1), sizeof *acc);
    if (!acc) return pdi_errorf(PD_ERR_NOMEM, "pad_backward: out of memory");
    for (int64_t i = 0; i < m; i++) {
        unravel(i, g->shape, nd, co);
        double v = pdi_load(at(g, co), g->dtype);
        if (!pad_map(co, before, y->shape, nd, a->mode)) continue;
        int64_t off = 0;
        for (int d = 0; d < nd; d++) off += co[d] * y->strides[d];
        acc[off] += v;
    }
    for (int64_t i = 0; i < n; i++) pdi_store(pdi_kview_ptr(y, i), y->dtype, acc[i]);
    free(acc);
    return PD_OK;
}

static int tri_common(const struct pdi_kcall *k, int lower)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int nd = y->ndim;
    int64_t n = pdi_kview_numel(y), diag = k->a->tri.diagonal, co[PD_MAX_DIMS] = {0};
    size_t es = pd_dtype_size(y->dtype);
    for (int64_t i = 0; i < n; i++) {
        unravel(i, y->shape, nd, co);
        int64_t c = co[nd - 1] - co[nd - 2];
        if (lower ? c <= diag : c >= diag) memcpy(pdi_kview_ptr(y, i), at(x, co), es);
        else memset(pdi_kview_ptr(y, i), 0, es);
    }
    return PD_OK;
}

static int ref_tril(const struct pdi_kcall *k) { return tri_common(k, 1); }
static int ref_triu(const struct pdi_kcall *k) { return tri_common(k, 0); }

/* a strictly before b in ascending order; NaN is the largest. int64 compares
 * as integers, every other dtype exactly through double. */
static int lt(const char *a, const char *b, enum pd_dtype dt)
{
    if (dt == PD_I64) return *(const int64_t *)a < *(const int64_t *)b;
    double x = pdi_load(a, dt), y = pdi_load(b, dt);
    return x < y || (!isnan(x) && isnan(y));
}

/* Stable insertion sort of each row along axis; writes the first kk. */
static int sort_rows(const struct pdi_kcall *k, int ax, int desc, int64_t kk)
{
    const struct pd_kview *x = &k->in[0], *yv = &k->out[0], *yi = &k->out[1];
    int nd = x->ndim;
    int64_t n = axis_size(x, ax), rshape[PD_MAX_DIMS], co[PD_MAX_DIMS] = {0};
    if (nd) memcpy(rshape, x->shape, sizeof(int64_t) * (size_t)nd);
    if (nd) rshape[ax] = 1;
    int64_t rows = n ? pdi_kview_numel(x) / n : 0;
    size_t es = pd_dtype_size(x->dtype);
    int64_t *perm = malloc(sizeof *perm * (size_t)(n + 1));
    if (!perm) return pdi_errorf(PD_ERR_NOMEM, "%s: out of memory", pdi_op_name(k->op));
    for (int64_t r = 0; r < rows; r++) {
        unravel(r, rshape, nd, co);
        for (int64_t i = 0; i < n; i++) {
            int64_t p = i, j = i;
            co[ax] = p;
            char *pp = at(x, co);
            while (j > 0) {
                co[ax] = perm[j - 1];
                char *q = at(x, co);
                if (!(desc ? lt(q, pp, x->dtype) : lt(pp, q, x->dtype))) break;
                perm[j] = perm[j - 1];
                j--;
            }
            perm[j] = p;
        }
        for (int64_t j = 0; j < kk; j++) {
            co[ax] = perm[j];
            char *s = at(x, co);
            co[ax] = j;
            memcpy(at(yv, co), s, es);
            *(int64_t *)at(yi, co) = perm[j];
        }
    }
    free(perm);
    return PD_OK;
}

static int ref_sort(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0];
    int ax = (int)k->a->sort.axis;
    return sort_rows(k, ax, (int)k->a->sort.descending, axis_size(x, ax));
}

static int ref_topk(const struct pdi_kcall *k)
{
    const struct pdi_attrs_topk *a = &k->a->topk;
    return sort_rows(k, (int)a->axis, (int)a->largest, a->k);
}

static int ref_unique(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *yv = &k->out[0], *yinv = &k->out[1], *yc = &k->out[2];
    int64_t n = pdi_kview_numel(x), u = 0, cap = pdi_kview_numel(yv);
    enum pd_dtype dt = x->dtype;
    int64_t *first = malloc(sizeof *first * (size_t)(n + 1)), *cnt = malloc(sizeof *cnt * (size_t)(n + 1));
    if (!first || !cnt) {
        free(first);
        free(cnt);
        return pdi_errorf(PD_ERR_NOMEM, "unique: out of memory");
    }
    /* distinct values by first occurrence, then an insertion sort of them */
    for (int64_t i = 0; i < n; i++) {
        const char *p = pdi_kview_ptr(x, i);
        int64_t g = 0;
        while (g < u) {
            const char *q = pdi_kview_ptr(x, first[g]);
            if (!lt(p, q, dt) && !lt(q, p, dt)) break;
            g++;
        }
        if (g == u) { first[u] = i; cnt[u++] = 0; }
        cnt[g]++;
    }
    for (int64_t i = 1; i < u; i++) {
        int64_t f = first[i], c = cnt[i], j = i;
        while (j > 0 && lt(pdi_kview_ptr(x, f), pdi_kview_ptr(x, first[j - 1]), dt)) {
            first[j] = first[j - 1];
            cnt[j] = cnt[j - 1];
            j--;
        }
        first[j] = f;
        cnt[j] = c;
    }
    int rc = PD_OK;
    if (u != cap) rc = pdi_errorf(PD_ERR_STATE, "unique: the input changed after the output was sized");
    for (int64_t g = 0; g < u && !rc; g++) {
        memcpy(yv->data + g * (int64_t)pd_dtype_size(dt), pdi_kview_ptr(x, first[g]), pd_dtype_size(dt));
        ((int64_t *)yc->data)[g] = cnt[g];
    }
    for (int64_t i = 0; i < n && !rc; i++) {
        const char *p = pdi_kview_ptr(x, i);
        int64_t g = 0;
        while (g < u) {
            const char *q = pdi_kview_ptr(x, first[g]);
            if (!lt(p, q, dt) && !lt(q, p, dt)) break;
            g++;
        }
        *(int64_t *)pdi_kview_ptr(yinv, i) = g;
    }
    free(first);
    free(cnt);
    return rc;
}

void pdi_register_ref_index(void)
{
    const unsigned all = PDI_DT_ALL, num = PDI_DT_FLOATS | PDI_DT_INTS;
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_gather, all, ref_gather);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_index_select, all, ref_index_select);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_scatter, all, ref_scatter);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_scatter_add, num, ref_scatter_add);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_index_add, num, ref_index_add);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_masked_select, all, ref_masked_select);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_masked_scatter, all, ref_masked_scatter);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_nonzero, all, ref_nonzero);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_concat, all, ref_concat);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_flip, all, ref_flip);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_pad, all, ref_pad);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_pad_backward, PDI_DT_FLOATS, ref_pad_backward);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_tril, all, ref_tril);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_triu, all, ref_triu);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_sort, all, ref_sort);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_topk, all, ref_topk);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_unique, all, ref_unique);
}
