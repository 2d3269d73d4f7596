/* paddle.c — CPU kernels for the index family (semantics fixed by
 * src/kernels/ref/index.c, which these must match).
 *
 * Parallelism only over work that cannot collide, so every result is
 * deterministic whatever the thread count:
 *   - gather / index_select: over all output positions (index_select along
 *     an axis whose inner block is contiguous is a loop of row memcpys);
 *   - scatter / scatter_add / index_add: over every coordinate except the
 *     indexed axis; positions along the axis are visited in order inside one
 *     task, so the last write wins and sums run in a fixed order;
 *   - masked_select / masked_scatter / nonzero: a count pass per row, a
 *     prefix sum, then a write pass per row;
 *   - sort / topk: per row (topk: quickselect then sort of the k, under a
 *     total order that breaks ties by index, so it equals the reference's
 *     stable sort; dtypes whose order fits 32 bits use a radix sort on
 *     order-preserving keys); concat / flip: strided block copies.
 * Index values are validated in one pass before anything is written.
 * bf16/f16 sums accumulate in an f32 buffer; pad_backward sums in double.
 */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/kernel.h"
#include "kernels/index_util.h"

/* ---- helpers --------------------------------------------------------- */
static void byte_strides(const struct pd_kview *v, int64_t *bst)
{
    int64_t es = (int64_t)pd_dtype_size(v->dtype);
    for (int d = 0; d < v->ndim; d++) bst[d] = v->strides[d] * es;
}

/* Byte offset of the r-th (row-major) combination of the dims of shape that
 * are not in `skip`. */
static int64_t row_off(int64_t r, int nd, const int64_t *shape, const int64_t *bst, unsigned skip)
{
    int64_t off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        if (skip & (1u << d)) continue;
        off += (r % shape[d]) * bst[d];
        r /= shape[d];
    }
    return off;
}

static void copy_n(char *dst, const char *src, int64_t n, int64_t sst, size_t es)
{
    if (sst == (int64_t)es) { memcpy(dst, src, (size_t)n * es); return; }
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++) dst[i] = src[i * sst]; break;
    case 2: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = *(const uint16_t *)(src + i * sst); break;
    case 4: for (int64_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = *(const uint32_t *)(src + i * sst); break;
    default: for (int64_t i = 0; i < n; i++) ((uint64_t *)dst)[i] = *(const uint64_t *)(src + i * sst); break;
    }
}

static void fill_n(char *dst, const char *val, int64_t n, size_t es)
{
    for (int64_t i = 0; i < n; i++) memcpy(dst + i * (int64_t)es, val, es);
}

static void copy_run(char **p, const int64_t *st, int64_t n, void *ctx)
{
    size_t es = *(const size_t *)ctx;
    if (st[0] == (int64_t)es) { copy_n(p[0], p[1], n, st[1], es); return; }
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++) p[0][i * st[0]] = p[1][i * st[1]]; break;
    case 2: for (int64_t i = 0; i < n; i++) *(uint16_t *)(p[0] + i * st[0]) = *(const uint16_t *)(p[1] + i * st[1]); break;
    case 4: for (int64_t i = 0; i < n; i++) *(uint32_t *)(p[0] + i * st[0]) = *(const uint32_t *)(p[1] + i * st[1]); break;
    default: for (int64_t i = 0; i < n; i++) *(uint64_t *)(p[0] + i * st[0]) = *(const uint64_t *)(p[1] + i * st[1]); break;
    }
}

/* dst = src (same shape, any strides), parallel block copies. */
static void copy_view(const struct pd_kview *dst, const struct pd_kview *src)
{
    struct pd_kview d = *dst, s = *src;
    struct pd_kview *ops[2] = {&d, &s};
    size_t es = pd_dtype_size(d.dtype);
    pdi_iter(2, ops, d.shape, d.ndim, copy_run, &es);
}

/* fn(ctx, r, scratch) for every row r, each thread with a scratch buffer of
 * its own; no OpenMP region when par is 0 (see PDI_FOR). */
typedef void (*row_fn)(const void *ctx, int64_t r, char *scratch);
static int rows_with_scratch(const struct pdi_kcall *k, int64_t rows, int par, size_t bytes, row_fn fn,
                             const void *ctx)
{
    int nt = par && rows > 1 ? pdi_num_threads() : 1;
    size_t all = bytes * (size_t)nt + 1;
    char *buf = pdi_kscratch(k, all);
    if (!buf) return pdi_errorf(PD_ERR_NOMEM, "out of memory (%zu bytes of scratch)", bytes * (size_t)nt);
    if (nt > 1) {
#pragma omp parallel num_threads(nt)
        {
#ifdef _OPENMP
            char *scratch = buf + bytes * (size_t)omp_get_thread_num();
#else
            char *scratch = buf;
#endif
#pragma omp for schedule(dynamic, 1)
            for (int64_t r = 0; r < rows; r++) fn(ctx, r, scratch);
        }
    } else {
        for (int64_t r = 0; r < rows; r++) fn(ctx, r, buf);
    }
    pdi_kscratch_free(k, buf, all);
    return PD_OK;
}

static int is_nonzero(const char *p, size_t es, int fl)
{
    switch (es) {
    case 1: return *(const uint8_t *)p != 0;
    case 2: return (*(const uint16_t *)p & (fl ? 0x7fffu : 0xffffu)) != 0;
    case 4: return (*(const uint32_t *)p & (fl ? 0x7fffffffu : 0xffffffffu)) != 0;
    default: return (*(const uint64_t *)p & (fl ? 0x7fffffffffffffffull : ~0ull)) != 0;
    }
}

static int lg2(size_t es) { return es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3; }

static int bad_index(const char *op, int64_t ix, int axis, int64_t size)
{
    return pdi_errorf(PD_ERR_INVALID, "%s: index %lld is out of range for axis %d of size %lld%s", op, (long long)ix,
                      axis, (long long)size, ix < 0 ? " (negative indices are not wrapped)" : "");
}

/* Every index value in [0, size)? One parallel min/max pass; on failure a
 * sequential scan names the first bad value (row-major, like the reference). */
static int check_index(const char *op, const struct pd_kview *idx, int64_t size, int axis)
{
    int64_t n = pdi_kview_numel(idx);
    if (n == 0) return PD_OK;
    int nd = idx->ndim, is32 = idx->dtype == PD_I32;
    int64_t bst[PD_MAX_DIMS] = {0}, w = nd ? idx->shape[nd - 1] : 1, rows = n / w;
    byte_strides(idx, bst);
    int64_t st = nd ? bst[nd - 1] : 0, lo = INT64_MAX, hi = INT64_MIN;
    unsigned skip = nd ? 1u << (nd - 1) : 0;
#define MINMAX_ROW(r)                                                                           \
    do {                                                                                        \
        const char *p = idx->data + row_off(r, nd, idx->shape, bst, skip);                     \
        for (int64_t j = 0; j < w; j++) {                                                       \
            int64_t v = is32 ? *(const int32_t *)(p + j * st) : *(const int64_t *)(p + j * st); \
            lo = v < lo ? v : lo;                                                               \
            hi = v > hi ? v : hi;                                                               \
        }                                                                                       \
    } while (0)
    if (n >= PDI_PAR_GRAIN) { /* no OpenMP region for small indices (see PDI_FOR) */
#pragma omp parallel for reduction(min : lo) reduction(max : hi) schedule(static) num_threads(pdi_num_threads())
        for (int64_t r = 0; r < rows; r++) MINMAX_ROW(r);
    } else {
        for (int64_t r = 0; r < rows; r++) MINMAX_ROW(r);
    }
#undef MINMAX_ROW
    if (lo >= 0 && hi < size) return PD_OK;
    for (int64_t i = 0; i < n; i++) {
        const char *p = pdi_kview_ptr(idx, i);
        int64_t v = is32 ? *(const int32_t *)p : *(const int64_t *)p;
        if (v < 0 || v >= size) return bad_index(op, v, axis, size);
    }
    return bad_index(op, lo < 0 ? lo : hi, axis, size);
}

/* ---- the gather/scatter walk ----------------------------------------- */
/* Positions p over `shape`. The index is read at p; the "position" operand
 * (gather: out, scatter: src) is addressed at p; the "indexed" operand
 * (gather: x, scatter: out) at p with p[axis] replaced by the index value.
 * Strides in bytes. Tasks split the coordinates off the axis (and, for
 * gather, the axis too); the last dim is the inner loop. */
struct walk {
    int nd, axis, par_axis;
    int64_t shape[PD_MAX_DIMS];
    int64_t is[PD_MAX_DIMS], ps[PD_MAX_DIMS], qs[PD_MAX_DIMS];
    const char *ip, *pp;
    char *qp;
};

#define WALK_BODY(I, STMT)                                                                                     \
    do {                                                                                                       \
        int nd = w->nd, ax = w->axis, kd = ax == nd - 1 ? -1 : nd - 1;                                        \
        int64_t J = w->shape[ax], K = kd >= 0 ? w->shape[kd] : 1;                                              \
        int64_t isk = kd >= 0 ? w->is[kd] : 0, psk = kd >= 0 ? w->ps[kd] : 0, qsk = kd >= 0 ? w->qs[kd] : 0; \
        int64_t isj = w->is[ax], psj = w->ps[ax], qsj = w->qs[ax];                                            \
        unsigned skip = (1u << ax) | (kd >= 0 ? 1u << kd : 0u);                                               \
        int64_t total = pdi_numel(w->shape, nd);                                                               \
        if (total == 0) return;                                                                                \
        int64_t outer = total / (J * K), jc = 1, kc = 1;                                                       \
        int nt = total >= PDI_PAR_GRAIN ? pdi_num_threads() : 1;                                               \
        if (nt > 1 && outer < 4 * nt) {                                                                        \
            int64_t want = (4 * nt + outer - 1) / outer;                                                       \
            if (w->par_axis) {                                                                                 \
                jc = want < J ? want : J;                                                                      \
                want = (want + jc - 1) / jc;                                                                   \
            }                                                                                                  \
            kc = want < K ? want : K;                                                                          \
        }                                                                                                      \
        int64_t jsz = (J + jc - 1) / jc, ksz = (K + kc - 1) / kc, ntask = outer * jc * kc;                     \
        PDI_FOR(nt > 1, t, ntask, {                                                                            \
            int64_t o = t / (jc * kc), rr = t % (jc * kc);                                                     \
            int64_t j0 = (rr / kc) * jsz, j1 = j0 + jsz < J ? j0 + jsz : J;                                    \
            int64_t k0 = (rr % kc) * ksz, k1 = k0 + ksz < K ? k0 + ksz : K;                                    \
            const char *ib = w->ip + row_off(o, nd, w->shape, w->is, skip);                                    \
            const char *pb = w->pp + row_off(o, nd, w->shape, w->ps, skip);                                    \
            char *qb = w->qp + row_off(o, nd, w->shape, w->qs, skip);                                          \
            for (int64_t j = j0; j < j1; j++) {                                                                \
                const char *ij = ib + j * isj;                                                                 \
                const char *pj = pb + j * psj;                                                                 \
                if (isk == 0) { /* index constant along the inner dim (index_select/index_add): one row */    \
                    char *qj = qb + *(const I *)ij * qsj;                                                      \
                    for (int64_t kk = k0; kk < k1; kk++) {                                                     \
                        char *p = (char *)(pj + kk * psk), *q = qj + kk * qsk;                                 \
                        STMT;                                                                                  \
                    }                                                                                          \
                    continue;                                                                                  \
                }                                                                                              \
                for (int64_t kk = k0; kk < k1; kk++) {                                                         \
                    int64_t ix = *(const I *)(ij + kk * isk);                                                  \
                    char *p = (char *)(pj + kk * psk);                                                         \
                    char *q = qb + ix * qsj + kk * qsk;                                                        \
                    STMT;                                                                                      \
                }                                                                                              \
            }                                                                                                  \
        });                                                                                                    \
    } while (0)

typedef void (*walk_fn)(const struct walk *w);
#define DEF_WALK(NAME, I, STMT) \
    static void NAME(const struct walk *w) { WALK_BODY(I, STMT); }

#define DEF_MOVE(E, SUF)                                              \
    DEF_WALK(gather_##SUF##_i32, int32_t, *(E *)p = *(const E *)q)   \
    DEF_WALK(gather_##SUF##_i64, int64_t, *(E *)p = *(const E *)q)   \
    DEF_WALK(scatter_##SUF##_i32, int32_t, *(E *)q = *(const E *)p)  \
    DEF_WALK(scatter_##SUF##_i64, int64_t, *(E *)q = *(const E *)p)
DEF_MOVE(uint8_t, 1)
DEF_MOVE(uint16_t, 2)
DEF_MOVE(uint32_t, 4)
DEF_MOVE(uint64_t, 8)

static const walk_fn gather_fns[4][2] = {{gather_1_i32, gather_1_i64}, {gather_2_i32, gather_2_i64},
                                         {gather_4_i32, gather_4_i64}, {gather_8_i32, gather_8_i64}};
static const walk_fn scatter_fns[4][2] = {{scatter_1_i32, scatter_1_i64}, {scatter_2_i32, scatter_2_i64},
                                          {scatter_4_i32, scatter_4_i64}, {scatter_8_i32, scatter_8_i64}};

/* Sums: q is the accumulator (f32 for bf16/f16), p the src element.
 * Integers wrap (two's complement through unsigned types). */
#define DEF_ADD(SUF, STMT)                         \
    DEF_WALK(add_##SUF##_i32, int32_t, STMT)       \
    DEF_WALK(add_##SUF##_i64, int64_t, STMT)
DEF_ADD(f32, *(float *)q += *(const float *)p)
DEF_ADD(f64, *(double *)q += *(const double *)p)
DEF_ADD(bf16, *(float *)q += pdi_bf16_f32(*(const uint16_t *)p))
DEF_ADD(f16, *(float *)q += pd_f16_to_f32(*(const uint16_t *)p))
DEF_ADD(u8, *(uint8_t *)q += *(const uint8_t *)p)
DEF_ADD(u16, *(uint16_t *)q += *(const uint16_t *)p)
DEF_ADD(u32, *(uint32_t *)q += *(const uint32_t *)p)
DEF_ADD(u64, *(uint64_t *)q += *(const uint64_t *)p)

static walk_fn add_fn(enum pd_dtype dt, int i64)
{
    switch (dt) {
    case PD_F32: return i64 ? add_f32_i64 : add_f32_i32;
    case PD_F64: return i64 ? add_f64_i64 : add_f64_i32;
    case PD_BF16: return i64 ? add_bf16_i64 : add_bf16_i32;
    case PD_F16: return i64 ? add_f16_i64 : add_f16_i32;
    case PD_I8: case PD_U8: return i64 ? add_u8_i64 : add_u8_i32;
    case PD_I16: return i64 ? add_u16_i64 : add_u16_i32;
    case PD_I32: return i64 ? add_u32_i64 : add_u32_i32;
    case PD_I64: return i64 ? add_u64_i64 : add_u64_i32;
    default: return NULL;
    }
}

/* Index space of `nd` dims (0-d becomes [1]); operands' byte strides. */
static void walk_init(struct walk *w, const int64_t *shape, int nd, int axis, int par_axis)
{
    memset(w, 0, sizeof *w);
    w->nd = nd ? nd : 1;
    w->shape[0] = 1;
    if (nd) memcpy(w->shape, shape, sizeof(int64_t) * (size_t)nd);
    w->axis = axis;
    w->par_axis = par_axis;
}

/* ---- gather, index_select -------------------------------------------- */
static int cpu_gather(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *idx = &k->in[1], *y = &k->out[0];
    int ax = (int)k->a->index_axis.axis;
    int64_t size = x->ndim ? x->shape[ax] : 1;
    if (check_index("gather", idx, size, ax)) return PD_ERR_INVALID;
    struct walk w;
    walk_init(&w, y->shape, y->ndim, ax, 1);
    byte_strides(idx, w.is);
    byte_strides(y, w.ps);
    byte_strides(x, w.qs);
    w.ip = idx->data;
    w.pp = y->data;
    w.qp = x->data;
    gather_fns[lg2(pd_dtype_size(y->dtype))][idx->dtype == PD_I64](&w);
    return PD_OK;
}

static int cpu_index_select(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *idx = &k->in[1], *y = &k->out[0];
    int ax = (int)k->a->index_axis.axis, nd = x->ndim, is32 = idx->dtype == PD_I32;
    int64_t size = x->shape[ax];
    if (check_index("index_select", idx, size, ax)) return PD_ERR_INVALID;
    int64_t n = pdi_kview_numel(y), len = pdi_kview_numel(idx), inner = 1, ist = idx->ndim ? idx->strides[0] : 0;
    if (n == 0) return PD_OK;
    size_t es = pd_dtype_size(y->dtype);
    int contig = 1;
    for (int d = nd - 1; d > ax; d--) {
        contig &= x->shape[d] == 1 || x->strides[d] == inner;
        inner *= x->shape[d];
    }
    if (contig && inner * (int64_t)es >= 32) {
        /* rows of `inner` contiguous elements: one memcpy each */
        int64_t xbst[PD_MAX_DIMS], outer = n / (len * inner), xsa = x->strides[ax] * (int64_t)es;
        unsigned skip = ~0u << ax; /* dims before the axis only */
        byte_strides(x, xbst);
        PDI_FOR(n >= PDI_PAR_GRAIN, t, outer * len, {
            int64_t o = t / len, i = t % len;
            int64_t ix = is32 ? ((const int32_t *)idx->data)[i * ist] : ((const int64_t *)idx->data)[i * ist];
            const char *src = x->data + row_off(o, nd, x->shape, xbst, skip) + ix * xsa;
            memcpy(y->data + t * inner * (int64_t)es, src, (size_t)inner * es);
        });
        return PD_OK;
    }
    struct walk w;
    walk_init(&w, y->shape, y->ndim, ax, 1);
    w.is[ax] = ist * (int64_t)pd_dtype_size(idx->dtype); /* the index broadcast over the other dims */
    byte_strides(y, w.ps);
    byte_strides(x, w.qs);
    w.ip = idx->data;
    w.pp = y->data;
    w.qp = x->data;
    gather_fns[lg2(es)][!is32](&w);
    return PD_OK;
}

/* ---- scatter, scatter_add, index_add --------------------------------- */
static int scatter_common(const struct pdi_kcall *k, const char *op, int add, int index1d)
{
    const struct pd_kview *x = &k->in[0], *idx = &k->in[1], *src = &k->in[2], *y = &k->out[0];
    int ax = (int)k->a->index_axis.axis;
    int64_t size = x->ndim ? x->shape[ax] : 1, n = pdi_kview_numel(y);
    if (check_index(op, idx, size, ax)) return PD_ERR_INVALID;
    copy_view(y, x);
    const struct pd_kview *space = index1d ? src : idx;
    struct walk w;
    walk_init(&w, space->shape, space->ndim, ax, 0);
    if (index1d) w.is[ax] = (idx->ndim ? idx->strides[0] : 0) * (int64_t)pd_dtype_size(idx->dtype);
    else byte_strides(idx, w.is);
    byte_strides(src, w.ps);
    w.ip = idx->data;
    w.pp = src->data;
    int i64 = idx->dtype == PD_I64, low = y->dtype == PD_BF16 || y->dtype == PD_F16;
    if (!add) {
        byte_strides(y, w.qs);
        w.qp = y->data;
        scatter_fns[lg2(pd_dtype_size(y->dtype))][i64](&w);
        return PD_OK;
    }
    walk_fn fn = add_fn(y->dtype, i64);
    if (!fn) return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: no CPU kernel for %s", op, pd_dtype_name(y->dtype));
    if (!low) {
        byte_strides(y, w.qs);
        w.qp = y->data;
        fn(&w);
        return PD_OK;
    }
    /* bf16/f16: sum into an f32 copy, round once at the end */
    size_t abytes = sizeof(float) * (size_t)(n + 1);
    float *acc = pdi_kscratch(k, abytes);
    if (!acc) return pdi_errorf(PD_ERR_NOMEM, "%s: out of memory", op);
    const uint16_t *h = (const uint16_t *)y->data;
    if (y->dtype == PD_BF16)
        for (int64_t i = 0; i < n; i++) acc[i] = pdi_bf16_f32(h[i]);
    else
        for (int64_t i = 0; i < n; i++) acc[i] = pd_f16_to_f32(h[i]);
    for (int d = 0; d < y->ndim; d++) w.qs[d] = y->strides[d] * (int64_t)sizeof(float);
    w.qp = (char *)acc;
    fn(&w);
    uint16_t *o = (uint16_t *)y->data;
    if (y->dtype == PD_BF16)
        for (int64_t i = 0; i < n; i++) o[i] = pd_f32_to_bf16(acc[i]);
    else
        for (int64_t i = 0; i < n; i++) o[i] = pd_f32_to_f16(acc[i]);
    pdi_kscratch_free(k, acc, abytes);
    return PD_OK;
}

static int cpu_scatter(const struct pdi_kcall *k) { return scatter_common(k, "scatter", 0, 0); }
static int cpu_scatter_add(const struct pdi_kcall *k) { return scatter_common(k, "scatter_add", 1, 0); }
static int cpu_index_add(const struct pdi_kcall *k) { return scatter_common(k, "index_add", 1, 1); }

/* ---- masked_select, masked_scatter, nonzero -------------------------- */
/* v viewed with m broadcast (aligned right, stride 0 on size-1 dims) to x's shape. */
static void bcast_view(const struct pd_kview *m, const struct pd_kview *x, struct pd_kview *out)
{
    *out = *m;
    out->ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++) {
        int s = d - (x->ndim - m->ndim);
        out->shape[d] = x->shape[d];
        out->strides[d] = (s < 0 || m->shape[s] == 1) ? 0 : m->strides[s];
    }
}

/* Rows of a view: all dims but the last (a 0-d view is one row of 1). */
struct rows {
    int nd;
    int64_t n, w, st;
    int64_t bst[PD_MAX_DIMS];
    unsigned skip;
};

static void rows_of(const struct pd_kview *v, struct rows *r)
{
    r->nd = v->ndim;
    r->w = v->ndim ? v->shape[v->ndim - 1] : 1;
    int64_t n = pdi_kview_numel(v);
    r->n = r->w ? n / r->w : 0;
    memset(r->bst, 0, sizeof r->bst);
    byte_strides(v, r->bst);
    r->st = v->ndim ? r->bst[v->ndim - 1] : 0;
    r->skip = v->ndim ? 1u << (v->ndim - 1) : 0;
}

static const char *row_ptr(const struct pd_kview *v, const struct rows *r, int64_t i)
{
    return v->data + row_off(i, r->nd, v->shape, r->bst, r->skip);
}

/* Exclusive prefix sums of the nonzero count of each row of v (length
 * rows + 1; the last entry is the total): k's scratch, freed with
 * row_starts_free. NULL when out of memory. */
static int64_t *row_starts(const struct pdi_kcall *k, const struct pd_kview *v, const struct rows *r)
{
    int64_t *s = pdi_kscratch(k, sizeof *s * (size_t)(r->n + 1));
    if (!s) return NULL;
    size_t es = pd_dtype_size(v->dtype);
    int fl = pd_dtype_is_float(v->dtype);
    PDI_FOR(r->n * r->w >= PDI_PAR_GRAIN, i, r->n, {
        const char *p = row_ptr(v, r, i);
        int64_t c = 0;
        for (int64_t j = 0; j < r->w; j++) c += is_nonzero(p + j * r->st, es, fl);
        s[i + 1] = c;
    });
    s[0] = 0;
    for (int64_t i = 0; i < r->n; i++) s[i + 1] += s[i];
    return s;
}

static void row_starts_free(const struct pdi_kcall *k, int64_t *s, const struct rows *r)
{
    pdi_kscratch_free(k, s, sizeof *s * (size_t)(r->n + 1));
}

static int cpu_masked_select(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    struct pd_kview m;
    bcast_view(&k->in[1], x, &m);
    struct rows rm, rx;
    rows_of(&m, &rm);
    rows_of(x, &rx);
    int64_t *s = row_starts(k, &m, &rm);
    if (!s) return pdi_errorf(PD_ERR_NOMEM, "masked_select: out of memory");
    if (s[rm.n] != pdi_kview_numel(y)) {
        row_starts_free(k, s, &rm);
        return pdi_errorf(PD_ERR_STATE, "masked_select: the mask changed after the output was sized");
    }
    size_t es = pd_dtype_size(x->dtype);
    PDI_FOR(rx.n * rx.w >= PDI_PAR_GRAIN, i, rx.n, {
        const char *mp = row_ptr(&m, &rm, i), *xp = row_ptr(x, &rx, i);
        char *dst = y->data + s[i] * (int64_t)es;
        for (int64_t j = 0; j < rx.w; j++)
            if (mp[j * rm.st]) { memcpy(dst, xp + j * rx.st, es); dst += es; }
    });
    row_starts_free(k, s, &rm);
    return PD_OK;
}

static int cpu_masked_scatter(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *src = &k->in[2], *y = &k->out[0];
    struct pd_kview m;
    bcast_view(&k->in[1], x, &m);
    struct rows rm, ry;
    rows_of(&m, &rm);
    rows_of(y, &ry);
    int64_t *s = row_starts(k, &m, &rm);
    if (!s) return pdi_errorf(PD_ERR_NOMEM, "masked_scatter: out of memory");
    int64_t total = s[rm.n];
    if (total > pdi_kview_numel(src)) {
        row_starts_free(k, s, &rm);
        return pdi_errorf(PD_ERR_INVALID, "masked_scatter: src has %lld elements but the mask selects %lld",
                          (long long)pdi_kview_numel(src), (long long)total);
    }
    copy_view(y, x);
    size_t es = pd_dtype_size(x->dtype);
    int sc = pdi_kview_contiguous(src);
    PDI_FOR(ry.n * ry.w >= PDI_PAR_GRAIN, i, ry.n, {
        const char *mp = row_ptr(&m, &rm, i);
        char *yp = y->data + i * ry.w * (int64_t)es; /* y is contiguous */
        int64_t c = s[i];
        for (int64_t j = 0; j < ry.w; j++) {
            if (!mp[j * rm.st]) continue;
            const char *sp = sc ? src->data + c * (int64_t)es : pdi_kview_ptr(src, c);
            memcpy(yp + j * (int64_t)es, sp, es);
            c++;
        }
    });
    row_starts_free(k, s, &rm);
    return PD_OK;
}

static int cpu_nonzero(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int nd = x->ndim;
    if (nd == 0) return PD_OK; /* [n, 0]: nothing to write */
    struct rows r;
    rows_of(x, &r);
    int64_t *s = row_starts(k, x, &r);
    if (!s) return pdi_errorf(PD_ERR_NOMEM, "nonzero: out of memory");
    if (s[r.n] != y->shape[0]) {
        row_starts_free(k, s, &r);
        return pdi_errorf(PD_ERR_STATE, "nonzero: the input changed after the output was sized");
    }
    size_t es = pd_dtype_size(x->dtype);
    int fl = pd_dtype_is_float(x->dtype);
    int64_t *out = (int64_t *)y->data;
    PDI_FOR(r.n * r.w >= PDI_PAR_GRAIN, i, r.n, {
        const char *p = row_ptr(x, &r, i);
        int64_t co[PD_MAX_DIMS], rem = i, c = s[i];
        for (int d = nd - 2; d >= 0; d--) {
            co[d] = rem % x->shape[d];
            rem /= x->shape[d];
        }
        for (int64_t j = 0; j < r.w; j++) {
            if (!is_nonzero(p + j * r.st, es, fl)) continue;
            co[nd - 1] = j;
            memcpy(out + c * nd, co, sizeof(int64_t) * (size_t)nd);
            c++;
        }
    });
    row_starts_free(k, s, &r);
    return PD_OK;
}

/* ---- concat, flip ---------------------------------------------------- */
static int cpu_concat(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    int ax = (int)k->a->concat.axis;
    int64_t off = 0, es = (int64_t)pd_dtype_size(y->dtype);
    for (int t = 0; t < k->n_in; t++) {
        struct pd_kview dst = *y;
        memcpy(dst.shape, k->in[t].shape, sizeof dst.shape);
        dst.data += off * y->strides[ax] * es;
        copy_view(&dst, &k->in[t]);
        off += k->in[t].shape[ax];
    }
    return PD_OK;
}

static int cpu_flip(const struct pdi_kcall *k)
{
    struct pd_kview s = k->in[0];
    unsigned mask = (unsigned)k->a->flip.mask;
    int64_t es = (int64_t)pd_dtype_size(s.dtype);
    if (pdi_kview_numel(&s) == 0) return PD_OK;
    for (int d = 0; d < s.ndim; d++) {
        if (!(mask & (1u << d))) continue;
        s.data += (s.shape[d] - 1) * s.strides[d] * es;
        s.strides[d] = -s.strides[d];
    }
    copy_view(&k->out[0], &s);
    return PD_OK;
}

static int cpu_pad(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    int nd = y->ndim;
    const struct pdi_attrs_pad *a = &k->a->pad;
    int64_t mode = a->mode, n = pdi_kview_numel(y), before[PD_MAX_DIMS], xbst[PD_MAX_DIMS] = {0};
    size_t es = pd_dtype_size(y->dtype);
    char fill[8];
    pdi_store(fill, y->dtype, a->value);
    if (n == 0) return PD_OK;
    if (nd == 0) { memcpy(y->data, x->data, es); return PD_OK; }
    pdi_pads_before(a->pads.v, (int)a->pads.n, nd, before);
    byte_strides(x, xbst);
    int64_t W = y->shape[nd - 1], rows = n / W, nl = x->shape[nd - 1], bl = before[nd - 1], sl = xbst[nd - 1];
    /* the middle of each row copies a run of x; the edges map element by element */
    int64_t m0 = bl < 0 ? 0 : bl > W ? W : bl, m1 = bl + nl < m0 ? m0 : bl + nl > W ? W : bl + nl;
    PDI_FOR(n >= PDI_PAR_GRAIN, r, rows, {
        char *dst = y->data + r * W * (int64_t)es;
        int64_t rem = r, off = 0;
        int constant = 0;
        for (int d = nd - 2; d >= 0; d--) {
            int64_t s = pdi_pad_src(rem % y->shape[d], before[d], x->shape[d], mode);
            rem /= y->shape[d];
            if (s < 0) constant = 1;
            else off += s * xbst[d];
        }
        if (constant) { fill_n(dst, fill, W, es); continue; }
        const char *src = x->data + off;
        if (m1 > m0) copy_n(dst + m0 * (int64_t)es, src + (m0 - bl) * sl, m1 - m0, sl, es);
        for (int64_t j = 0; j < W; j++) {
            if (j == m0) j = m1;
            if (j >= W) break;
            int64_t s = pdi_pad_src(j, bl, nl, mode);
            memcpy(dst + j * (int64_t)es, s < 0 ? fill : src + s * sl, es);
        }
    });
    return PD_OK;
}

static void load_row(double *dst, const char *src, int64_t n, int64_t st, enum pd_dtype dt)
{
    switch (dt) {
    case PD_F32: for (int64_t i = 0; i < n; i++) dst[i] = *(const float *)(src + i * st); break;
    case PD_F64: for (int64_t i = 0; i < n; i++) dst[i] = *(const double *)(src + i * st); break;
    case PD_BF16: for (int64_t i = 0; i < n; i++) dst[i] = pdi_bf16_f32(*(const uint16_t *)(src + i * st)); break;
    default: for (int64_t i = 0; i < n; i++) dst[i] = pdi_load(src + i * st, dt); break;
    }
}

static void store_row(char *dst, const double *src, int64_t n, enum pd_dtype dt)
{
    switch (dt) {
    case PD_F32: for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = (float)src[i]; break;
    case PD_F64: memcpy(dst, src, sizeof(double) * (size_t)n); break;
    default: for (int64_t i = 0; i < n; i++) pdi_store(dst + i * (int64_t)pd_dtype_size(dt), dt, src[i]); break;
    }
}

/* For each input element, the sum of g over the padded positions that read
 * it. Per dim, the preimage lists (CSR: pre[d][start[d][i] .. start[d][i+1]])
 * give those positions; a row of the input sums the g rows of the product of
 * its outer preimages, each mapped through the last dim's lists. Each output
 * row is owned by one task: deterministic. */
struct padbw {
    const struct pd_kview *g, *y;
    int nd;
    int64_t W, Wg, gbst[PD_MAX_DIMS];
    int64_t *start[PD_MAX_DIMS], *pre[PD_MAX_DIMS];
};

static void padbw_row(const void *ctx, int64_t r, char *scratch)
{
    const struct padbw *c = ctx;
    const struct pd_kview *g = c->g, *y = c->y;
    int nd = c->nd;
    double *acc = (double *)scratch, *row = acc + c->W;
    int64_t co[PD_MAX_DIMS], pos[PD_MAX_DIMS], rem = r;
    for (int d = nd - 2; d >= 0; d--) {
        co[d] = rem % y->shape[d];
        rem /= y->shape[d];
    }
    memset(acc, 0, sizeof *acc * (size_t)c->W);
    int empty = 0;
    for (int d = 0; d < nd - 1; d++) {
        pos[d] = c->start[d][co[d]];
        empty |= pos[d] == c->start[d][co[d] + 1];
    }
    const int64_t *ls = c->start[nd - 1], *lp = c->pre[nd - 1];
    while (!empty) {
        int64_t off = 0;
        for (int d = 0; d < nd - 1; d++) off += c->pre[d][pos[d]] * c->gbst[d];
        load_row(row, g->data + off, c->Wg, c->gbst[nd - 1], g->dtype);
        for (int64_t j = 0; j < c->W; j++)
            for (int64_t q = ls[j]; q < ls[j + 1]; q++) acc[j] += row[lp[q]];
        int d = nd - 2; /* odometer over the outer preimages */
        for (; d >= 0; d--) {
            if (++pos[d] < c->start[d][co[d] + 1]) break;
            pos[d] = c->start[d][co[d]];
        }
        if (d < 0) break;
    }
    store_row(y->data + r * c->W * (int64_t)pd_dtype_size(y->dtype), acc, c->W, y->dtype);
}

static int cpu_pad_backward(const struct pdi_kcall *k)
{
    const struct pd_kview *g = &k->in[0], *y = &k->out[0];
    int nd = y->ndim;
    const struct pdi_attrs_pad_backward *a = &k->a->pad_backward;
    int64_t mode = a->mode, n = pdi_kview_numel(y), before[PD_MAX_DIMS];
    if (n == 0) return PD_OK;
    if (nd == 0) { copy_view(y, g); return PD_OK; }
    struct padbw c = {.g = g, .y = y, .nd = nd, .W = y->shape[nd - 1], .Wg = g->shape[nd - 1]};
    pdi_pads_before(a->pads.v, (int)a->pads.n, nd, before);
    byte_strides(g, c.gbst);
    int64_t tot = 0;
    for (int d = 0; d < nd; d++) tot += y->shape[d] + 1 + g->shape[d];
    size_t mbytes = sizeof(int64_t) * (size_t)(tot + 1);
    int64_t *mem = pdi_kscratch(k, mbytes), *p = mem;
    if (!mem) return pdi_errorf(PD_ERR_NOMEM, "pad_backward: out of memory");
    for (int d = 0; d < nd; d++) {
        int64_t ny = y->shape[d], ng = g->shape[d], *st = p, *pre = p + ny + 1;
        c.start[d] = st;
        c.pre[d] = pre;
        p += ny + 1 + ng;
        memset(st, 0, sizeof(int64_t) * (size_t)(ny + 1));
        for (int64_t o = 0; o < ng; o++) {
            int64_t s = pdi_pad_src(o, before[d], ny, mode);
            if (s >= 0) st[s + 1]++;
        }
        for (int64_t i = 0; i < ny; i++) st[i + 1] += st[i];
        for (int64_t o = 0; o < ng; o++) {
            int64_t s = pdi_pad_src(o, before[d], ny, mode);
            if (s >= 0) pre[st[s]++] = o;
        }
        /* filling advanced start[s] to the old start[s + 1]: shift back */
        for (int64_t i = ny; i > 0; i--) st[i] = st[i - 1];
        st[0] = 0;
    }
    int rc = rows_with_scratch(k, n / c.W, n >= PDI_PAR_GRAIN, sizeof(double) * (size_t)(c.W + c.Wg), padbw_row, &c);
    pdi_kscratch_free(k, mem, mbytes);
    return rc;
}

/* ---- tril, triu ------------------------------------------------------ */
static int tri_common(const struct pdi_kcall *k, int lower)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    struct rows r;
    rows_of(x, &r);
    int64_t R = x->shape[x->ndim - 2], C = r.w, diag = k->a->tri.diagonal;
    size_t es = pd_dtype_size(y->dtype);
    PDI_FOR(r.n * r.w >= PDI_PAR_GRAIN, i, r.n, {
        int64_t row = i % R, lim = row + diag;
        /* kept columns [c0, c1): tril c <= row + diag, triu c >= row + diag */
        int64_t c0 = lower ? 0 : lim < 0 ? 0 : lim > C ? C : lim;
        int64_t c1 = lower ? (lim + 1 < 0 ? 0 : lim + 1 > C ? C : lim + 1) : C;
        char *dst = y->data + i * C * (int64_t)es;
        const char *src = row_ptr(x, &r, i);
        memset(dst, 0, (size_t)(C * (int64_t)es));
        if (c1 > c0) copy_n(dst + c0 * (int64_t)es, src + c0 * r.st, c1 - c0, r.st, es);
    });
    return PD_OK;
}

static int cpu_tril(const struct pdi_kcall *k) { return tri_common(k, 1); }
static int cpu_triu(const struct pdi_kcall *k) { return tri_common(k, 0); }

/* ---- sort, topk, unique ---------------------------------------------- */
/* Items (key, index) under a total order: the key order (ascending or
 * descending, NaN the largest) and then the index. Under it the merge sort
 * is the reference's stable sort and a quickselect picks the same top k.
 * Keys are double (exact for every dtype but int64) or int64. */
static inline int d_before(double a, double b, int desc)
{
    int an = a != a, bn = b != b;
    if (an | bn) return desc ? an && !bn : !an && bn;
    return desc ? a > b : a < b;
}
static inline int l_before(int64_t a, int64_t b, int desc) { return desc ? a > b : a < b; }

#define DEF_SORT(SUF, KT, BEFORE)                                                                              \
    struct item_##SUF {                                                                                        \
        KT k;                                                                                                  \
        int64_t i;                                                                                             \
    };                                                                                                         \
    static inline int less_##SUF(const struct item_##SUF *a, const struct item_##SUF *b, int desc)             \
    {                                                                                                          \
        if (BEFORE(a->k, b->k, desc)) return 1;                                                                \
        if (BEFORE(b->k, a->k, desc)) return 0;                                                                \
        return a->i < b->i;                                                                                    \
    }                                                                                                          \
    /* bottom-up merge sort: insertion-sorted runs of 16, then merges */                                     \
    static void msort_##SUF(struct item_##SUF *a, struct item_##SUF *tmp, int64_t n, int desc)                 \
    {                                                                                                          \
        for (int64_t r0 = 0; r0 < n; r0 += 16) {                                                               \
            int64_t r1 = r0 + 16 < n ? r0 + 16 : n;                                                            \
            for (int64_t i = r0 + 1; i < r1; i++) {                                                            \
                struct item_##SUF v = a[i];                                                                    \
                int64_t j = i;                                                                                 \
                while (j > r0 && less_##SUF(&v, &a[j - 1], desc)) { a[j] = a[j - 1]; j--; }                   \
                a[j] = v;                                                                                      \
            }                                                                                                  \
        }                                                                                                      \
        struct item_##SUF *src = a, *dst = tmp;                                                                \
        for (int64_t w = 16; w < n; w *= 2) {                                                                  \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                                        \
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;                   \
                int64_t i = lo, j = mid, o = lo;                                                               \
                while (i < mid && j < hi) dst[o++] = less_##SUF(&src[j], &src[i], desc) ? src[j++] : src[i++]; \
                while (i < mid) dst[o++] = src[i++];                                                           \
                while (j < hi) dst[o++] = src[j++];                                                            \
            }                                                                                                  \
            struct item_##SUF *t = src;                                                                        \
            src = dst;                                                                                         \
            dst = t;                                                                                           \
        }                                                                                                      \
        if (src != a) memcpy(a, src, sizeof *a * (size_t)n);                                                   \
    }                                                                                                          \
    /* a[0..k) become the k first items (in some order); after too many                                     \
     * rounds (adversarial input) it falls back to sorting everything */                                     \
    static void select_##SUF(struct item_##SUF *a, struct item_##SUF *tmp, int64_t n, int64_t k, int desc)     \
    {                                                                                                          \
        int64_t lo = 0, hi = n - 1, rounds = 0;                                                                \
        while (lo < hi) {                                                                                      \
            if (++rounds > 64) { msort_##SUF(a, tmp, n, desc); return; }                                        \
            struct item_##SUF x = a[lo], y = a[(lo + hi) / 2], z = a[hi], p;                                   \
            if (less_##SUF(&x, &y, desc)) p = less_##SUF(&y, &z, desc) ? y : less_##SUF(&x, &z, desc) ? z : x; \
            else p = less_##SUF(&x, &z, desc) ? x : less_##SUF(&y, &z, desc) ? z : y;                          \
            int64_t i = lo, j = hi;                                                                            \
            while (i <= j) {                                                                                   \
                while (less_##SUF(&a[i], &p, desc)) i++;                                                       \
                while (less_##SUF(&p, &a[j], desc)) j--;                                                       \
                if (i <= j) {                                                                                  \
                    struct item_##SUF t = a[i];                                                                \
                    a[i++] = a[j];                                                                             \
                    a[j--] = t;                                                                                \
                }                                                                                              \
            }                                                                                                  \
            if (k - 1 <= j) hi = j;                                                                            \
            else if (k - 1 >= i) lo = i;                                                                       \
            else break;                                                                                        \
        }                                                                                                      \
    }
DEF_SORT(d, double, d_before)
DEF_SORT(l, int64_t, l_before)

/* The fast path for dtypes whose order fits 32 bits (all but f64/i64):
 * item = key32 << 32 | position, where unsigned key order is the reference
 * order (ascending, NaN the largest and all NaNs equal, -0 == +0; inverted
 * for descending). Plain integer order of the items is then the total order
 * above, a stable LSD radix sort on the key bits sorts them, and a
 * quickselect on them picks the same top k. */
static inline uint32_t key_f32(float f)
{
    union { float f; uint32_t u; } v = {f};
    if (f != f) return 0xffffffffu;
    if (f == 0) return 0x80000000u;
    return (v.u & 0x80000000u) ? ~v.u : v.u | 0x80000000u;
}

static int has_key32(enum pd_dtype dt) { return dt != PD_F64 && dt != PD_I64; }

static void load_keys32(uint64_t *it, const char *p, int64_t n, int64_t st, enum pd_dtype dt, int desc, uint64_t base)
{
    uint32_t inv = desc ? 0xffffffffu : 0u;
#define KEYS32(EXPR)                                                                        \
    for (int64_t j = 0; j < n; j++) {                                                       \
        const char *e = p + j * st;                                                         \
        it[j] = ((uint64_t)((EXPR) ^ inv) << 32) | (uint64_t)(base + (uint64_t)j);          \
    }
    switch (dt) {
    case PD_F32: KEYS32(key_f32(*(const float *)e)) break;
    case PD_BF16: KEYS32(key_f32(pdi_bf16_f32(*(const uint16_t *)e))) break;
    case PD_F16: KEYS32(key_f32(pd_f16_to_f32(*(const uint16_t *)e))) break;
    case PD_I32: KEYS32((uint32_t)*(const int32_t *)e ^ 0x80000000u) break;
    case PD_I16: KEYS32((uint32_t)(int32_t)*(const int16_t *)e ^ 0x80000000u) break;
    case PD_I8: KEYS32((uint32_t)(int32_t)*(const int8_t *)e ^ 0x80000000u) break;
    default: KEYS32((uint32_t)*(const uint8_t *)e) break; /* u8, bool */
    }
#undef KEYS32
}

/* Sorts by the whole item; only the key bits need passes because the low
 * bits (positions) arrive in order and LSD radix passes are stable. */
static void radix_sort_u64(uint64_t *a, uint64_t *tmp, int64_t n)
{
    if (n <= 64) {
        for (int64_t i = 1; i < n; i++) {
            uint64_t v = a[i];
            int64_t j = i;
            while (j > 0 && a[j - 1] > v) { a[j] = a[j - 1]; j--; }
            a[j] = v;
        }
        return;
    }
    uint64_t *src = a, *dst = tmp;
    for (int shift = 32; shift < 64; shift += 8) {
        int64_t cnt[257] = {0};
        for (int64_t i = 0; i < n; i++) cnt[((src[i] >> shift) & 255) + 1]++;
        int trivial = 0;
        for (int b = 1; b <= 256; b++) trivial |= cnt[b] == n;
        if (trivial) continue; /* one digit value: the pass is the identity */
        for (int b = 0; b < 256; b++) cnt[b + 1] += cnt[b];
        for (int64_t i = 0; i < n; i++) dst[cnt[(src[i] >> shift) & 255]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, sizeof *a * (size_t)n);
}

/* a[0..k) become the k smallest items (any order). */
static void select_u64(uint64_t *a, uint64_t *tmp, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1, rounds = 0;
    while (lo < hi) {
        if (++rounds > 64) { radix_sort_u64(a, tmp, n); return; }
        uint64_t x = a[lo], y = a[(lo + hi) / 2], z = a[hi];
        uint64_t p = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < p) i++;
            while (p < a[j]) j--;
            if (i <= j) {
                uint64_t t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (k - 1 <= j) hi = j;
        else if (k - 1 >= i) lo = i;
        else break;
    }
}

/* Keys of n elements at byte stride st, as double. */
static void load_keys_d(struct item_d *it, const char *p, int64_t n, int64_t st, enum pd_dtype dt)
{
    switch (dt) {
    case PD_F32: for (int64_t j = 0; j < n; j++) it[j] = (struct item_d){*(const float *)(p + j * st), j}; break;
    case PD_F64: for (int64_t j = 0; j < n; j++) it[j] = (struct item_d){*(const double *)(p + j * st), j}; break;
    case PD_BF16: for (int64_t j = 0; j < n; j++) it[j] = (struct item_d){pdi_bf16_f32(*(const uint16_t *)(p + j * st)), j}; break;
    case PD_I32: for (int64_t j = 0; j < n; j++) it[j] = (struct item_d){*(const int32_t *)(p + j * st), j}; break;
    default: for (int64_t j = 0; j < n; j++) it[j] = (struct item_d){pdi_load(p + j * st, dt), j}; break;
    }
}

struct sortc {
    const struct pd_kview *x, *yv, *yi;
    int nd, desc, k32, is64, sel;
    int64_t n, kk, xs, vs, is, xb[PD_MAX_DIMS], vb[PD_MAX_DIMS], ib[PD_MAX_DIMS];
    unsigned skip;
    size_t es, isz;
};

/* One row along the axis: keys, (select,) sort, write the first kk. */
static void sort_row(const void *ctx, int64_t r, char *scratch)
{
    const struct sortc *c = ctx;
    int nd = c->nd, desc = c->desc;
    int64_t n = c->n, kk = c->kk, xs = c->xs, vs = c->vs, is = c->is;
    size_t es = c->es;
    const char *xp = c->x->data + (nd ? row_off(r, nd, c->x->shape, c->xb, c->skip) : 0);
    char *vp = c->yv->data + (nd ? row_off(r, nd, c->yv->shape, c->vb, c->skip) : 0);
    char *ip = c->yi->data + (nd ? row_off(r, nd, c->yi->shape, c->ib, c->skip) : 0);
    char *items = scratch, *tmp = scratch + c->isz * (size_t)n;
    if (c->k32) {
        uint64_t *it = (uint64_t *)items;
        load_keys32(it, xp, n, xs, c->x->dtype, desc, 0);
        if (c->sel) select_u64(it, (uint64_t *)tmp, n, kk);
        radix_sort_u64(it, (uint64_t *)tmp, c->sel ? kk : n);
        for (int64_t j = 0; j < kk; j++) {
            int64_t src = (int64_t)(it[j] & 0xffffffffu);
            memcpy(vp + j * vs, xp + src * xs, es);
            *(int64_t *)(ip + j * is) = src;
        }
    } else if (c->is64) {
        struct item_l *it = (struct item_l *)items;
        for (int64_t j = 0; j < n; j++) it[j] = (struct item_l){*(const int64_t *)(xp + j * xs), j};
        if (c->sel) select_l(it, (struct item_l *)tmp, n, kk, desc);
        msort_l(it, (struct item_l *)tmp, c->sel ? kk : n, desc);
        for (int64_t j = 0; j < kk; j++) {
            memcpy(vp + j * vs, xp + it[j].i * xs, es);
            *(int64_t *)(ip + j * is) = it[j].i;
        }
    } else {
        struct item_d *it = (struct item_d *)items;
        load_keys_d(it, xp, n, xs, c->x->dtype);
        if (c->sel) select_d(it, (struct item_d *)tmp, n, kk, desc);
        msort_d(it, (struct item_d *)tmp, c->sel ? kk : n, desc);
        for (int64_t j = 0; j < kk; j++) {
            memcpy(vp + j * vs, xp + it[j].i * xs, es);
            *(int64_t *)(ip + j * is) = it[j].i;
        }
    }
}

static int sort_common(const struct pdi_kcall *k, int ax, int desc, int64_t kk, int partial)
{
    const struct pd_kview *x = &k->in[0], *yv = &k->out[0], *yi = &k->out[1];
    if (pdi_kview_numel(yv) == 0) return PD_OK;
    struct sortc c = {.x = x, .yv = yv, .yi = yi, .nd = x->ndim, .desc = desc, .kk = kk};
    c.n = c.nd ? x->shape[ax] : 1;
    c.is64 = x->dtype == PD_I64;
    c.k32 = has_key32(x->dtype) && c.n < ((int64_t)1 << 32);
    c.sel = partial && kk < c.n && kk * 4 < c.n;
    byte_strides(x, c.xb);
    byte_strides(yv, c.vb);
    byte_strides(yi, c.ib);
    c.xs = c.nd ? c.xb[ax] : 0;
    c.vs = c.nd ? c.vb[ax] : 0;
    c.is = c.nd ? c.ib[ax] : 0;
    c.skip = 1u << ax;
    c.es = pd_dtype_size(x->dtype);
    c.isz = c.k32 ? sizeof(uint64_t) : c.is64 ? sizeof(struct item_l) : sizeof(struct item_d);
    int64_t rows = pdi_kview_numel(x) / c.n;
    return rows_with_scratch(k, rows, rows * c.n >= 4096, c.isz * (size_t)(2 * c.n), sort_row, &c);
}

static int cpu_sort(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0];
    int ax = (int)k->a->sort.axis;
    return sort_common(k, ax, (int)k->a->sort.descending, x->ndim ? x->shape[ax] : 1, 0);
}

static int cpu_topk(const struct pdi_kcall *k)
{
    const struct pdi_attrs_topk *a = &k->a->topk;
    return sort_common(k, (int)a->axis, (int)a->largest, a->k, 1);
}

/* Sort (key, flat position) pairs of the whole tensor, then one scan. */
static int cpu_unique(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *yv = &k->out[0], *yinv = &k->out[1], *yc = &k->out[2];
    int64_t n = pdi_kview_numel(x);
    if (n == 0) return PD_OK;
    int is64 = x->dtype == PD_I64, k32 = has_key32(x->dtype) && n < ((int64_t)1 << 32);
    size_t es = pd_dtype_size(x->dtype), isz = k32 ? sizeof(uint64_t) : is64 ? sizeof(struct item_l) : sizeof(struct item_d);
    size_t bbytes = isz * (size_t)(2 * n);
    char *buf = pdi_kscratch(k, bbytes);
    if (!buf) return pdi_errorf(PD_ERR_NOMEM, "unique: out of memory");
    struct rows r;
    rows_of(x, &r);
    for (int64_t i = 0; i < r.n; i++) {
        const char *p = row_ptr(x, &r, i);
        if (k32) {
            load_keys32((uint64_t *)buf + i * r.w, p, r.w, r.st, x->dtype, 0, (uint64_t)(i * r.w));
        } else if (is64) {
            struct item_l *it = (struct item_l *)buf + i * r.w;
            for (int64_t j = 0; j < r.w; j++) it[j] = (struct item_l){*(const int64_t *)(p + j * r.st), i * r.w + j};
        } else {
            struct item_d *it = (struct item_d *)buf + i * r.w;
            load_keys_d(it, p, r.w, r.st, x->dtype);
            for (int64_t j = 0; j < r.w; j++) it[j].i += i * r.w;
        }
    }
    int64_t *inv = (int64_t *)yinv->data, *cnt = (int64_t *)yc->data, u = pdi_kview_numel(yv), g = -1, first = 0;
    if (k32) radix_sort_u64((uint64_t *)buf, (uint64_t *)(buf + isz * (size_t)n), n);
    else if (is64) msort_l((struct item_l *)buf, (struct item_l *)(buf + isz * (size_t)n), n, 0);
    else msort_d((struct item_d *)buf, (struct item_d *)(buf + isz * (size_t)n), n, 0);
    for (int64_t t = 0; t < n; t++) {
        int same;
        if (k32) {
            const uint64_t *it = (const uint64_t *)buf;
            same = t > 0 && (it[t] >> 32) == (it[t - 1] >> 32);
            first = (int64_t)(it[t] & 0xffffffffu);
        } else if (is64) {
            const struct item_l *it = (const struct item_l *)buf;
            same = t > 0 && it[t].k == it[t - 1].k;
            first = it[t].i;
        } else {
            const struct item_d *it = (const struct item_d *)buf;
            same = t > 0 && !d_before(it[t - 1].k, it[t].k, 0);
            first = it[t].i;
        }
        if (!same) {
            if (++g == u) break;
            memcpy(yv->data + g * (int64_t)es, pdi_kview_ptr(x, first), es);
            cnt[g] = 0;
        }
        cnt[g]++;
        inv[first] = g;
    }
    pdi_kscratch_free(k, buf, bbytes);
    if (g + 1 != u) return pdi_errorf(PD_ERR_STATE, "unique: the input changed after the output was sized");
    return PD_OK;
}

void pdi_register_cpu_index(void)
{
    const unsigned all = PDI_DT_ALL, num = PDI_DT_FLOATS | PDI_DT_INTS;
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_gather, all, cpu_gather);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_index_select, all, cpu_index_select);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_scatter, all, cpu_scatter);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_scatter_add, num, cpu_scatter_add);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_index_add, num, cpu_index_add);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_masked_select, all, cpu_masked_select);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_masked_scatter, all, cpu_masked_scatter);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_nonzero, all, cpu_nonzero);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_concat, all, cpu_concat);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_flip, all, cpu_flip);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_pad, all, cpu_pad);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_pad_backward, PDI_DT_FLOATS, cpu_pad_backward);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_tril, all, cpu_tril);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_triu, all, cpu_triu);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_sort, all, cpu_sort);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_topk, all, cpu_topk);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_unique, all, cpu_unique);
}
