/* paddle.c — reference kernels for the reduce family: the oracle.
 *
 * Naive and obviously correct: one output at a time, elements visited in
 * row-major order of the reduced axes through any strides; floats
 * accumulate in double (two passes for var/std/logsumexp), integer
 * sum/prod/scans in int64 with wrap-around (as PyTorch), integer max/min in
 * int64 so large int64 values stay exact. Never optimised.
 *
 * Geometry: the input's dims split into kept dims (one output each, in
 * order) and reduced dims (mask from attrs, validated by infer). The output
 * is contiguous in the kept dims (keepdim only adds size-1 dims).
 */
#include <math.h>
#include <string.h>

#include "core/kernel.h"
#include "kernels/common.h"

struct geom {
    int nk, nr;
    int64_t kshape[PD_MAX_DIMS], kstride[PD_MAX_DIMS]; /* bytes */
    int64_t rshape[PD_MAX_DIMS], rstride[PD_MAX_DIMS]; /* bytes */
    int64_t nout, nred;
};

static void geom_init(const struct pd_kview *x, unsigned mask, struct geom *g)
{
    int64_t es = (int64_t)pd_dtype_size(x->dtype);
    g->nk = g->nr = 0;
    g->nout = g->nred = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (mask & (1u << d)) {
            g->rshape[g->nr] = x->shape[d];
            g->rstride[g->nr++] = x->strides[d] * es;
            g->nred *= x->shape[d];
        } else {
            g->kshape[g->nk] = x->shape[d];
            g->kstride[g->nk++] = x->strides[d] * es;
            g->nout *= x->shape[d];
        }
    }
}

static int64_t odometer(const int64_t *shape, const int64_t *stride, int n, int64_t i)
{
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        off += (i % shape[d]) * stride[d];
        i /= shape[d];
    }
    return off;
}

static const char *kept(const struct geom *g, const char *data, int64_t o)
{
    return data + odometer(g->kshape, g->kstride, g->nk, o);
}

static const char *elem(const struct geom *g, const char *base, int64_t r)
{
    return base + odometer(g->rshape, g->rstride, g->nr, r);
}

static void store_i64(char *p, enum pd_dtype dt, int64_t v)
{
    if (dt == PD_I64) *(int64_t *)p = v;
    else pdi_store(p, dt, (double)v);
}

/* Does a beat the current best b? (NaN beats everything and is never
 * beaten, so the first NaN wins; otherwise strict: the first max wins.) */
static int beats_f(double a, double b, int want_max)
{
    if (isnan(b)) return 0;
    if (isnan(a)) return 1;
    return want_max ? a > b : a < b;
}

/* ---- one output ------------------------------------------------------ */
static double reduce_float(enum pd_op op, const struct pdi_attrs *a, const struct geom *g, const char *base,
                           enum pd_dtype dt)
{
    int64_t n = g->nred;
    double s = 0, m;
    switch (op) {
    case PD_OP_sum:
    case PD_OP_mean:
        for (int64_t r = 0; r < n; r++) s += pdi_load(elem(g, base, r), dt);
        return op == PD_OP_mean ? s / (double)n : s;
    case PD_OP_prod:
        s = 1;
        for (int64_t r = 0; r < n; r++) s *= pdi_load(elem(g, base, r), dt);
        return s;
    case PD_OP_amax:
    case PD_OP_amin:
        m = pdi_load(elem(g, base, 0), dt);
        for (int64_t r = 1; r < n; r++) {
            double v = pdi_load(elem(g, base, r), dt);
            if (beats_f(v, m, op == PD_OP_amax)) m = v;
        }
        return m;
    case PD_OP_var:
    case PD_OP_std: {
        double mean = 0;
        for (int64_t r = 0; r < n; r++) mean += pdi_load(elem(g, base, r), dt);
        mean /= (double)n;
        for (int64_t r = 0; r < n; r++) {
            double d = pdi_load(elem(g, base, r), dt) - mean;
            s += d * d;
        }
        double div = (double)n - (double)a->reduce_var.correction;
        double v = s / (div > 0 ? div : 0);
        return op == PD_OP_std ? sqrt(v) : v;
    }
    case PD_OP_logsumexp:
        m = -INFINITY;
        for (int64_t r = 0; r < n; r++) {
            double v = pdi_load(elem(g, base, r), dt);
            if (v > m || isnan(v)) m = v;
            if (isnan(v)) break;
        }
        if (isnan(m)) return m;
        if (isinf(m)) m = 0; /* all -inf gives log(0) = -inf; +inf gives inf */
        for (int64_t r = 0; r < n; r++) s += exp(pdi_load(elem(g, base, r), dt) - m);
        return log(s) + m;
    case PD_OP_norm: { /* p = 0: nonzeros; +-inf: max/min |x|; else (sum |x|^p)^(1/p) */
        double p = a->reduce_norm.p;
        if (p == -INFINITY) s = INFINITY;
        for (int64_t r = 0; r < n; r++) {
            double v = fabs(pdi_load(elem(g, base, r), dt));
            if (p == 1.0) s += v;
            else if (p == 2.0) s += v * v;
            else if (p == 0.0) s += v != 0; /* NaN counts, as torch's x != 0 */
            else if (p == INFINITY) { if (isnan(v) || v > s) s = isnan(s) ? s : v; }
            else if (p == -INFINITY) { if (isnan(v) || v < s) s = isnan(s) ? s : v; }
            else s += pow(v, p);
        }
        return p == 2.0 ? sqrt(s) : p == 1.0 || p == 0.0 || isinf(p) ? s : pow(s, 1.0 / p);
    }
    case PD_OP_all:
        for (int64_t r = 0; r < n; r++)
            if (pdi_load(elem(g, base, r), dt) == 0) return 0;
        return 1;
    case PD_OP_any:
        for (int64_t r = 0; r < n; r++)
            if (pdi_load(elem(g, base, r), dt) != 0) return 1;
        return 0;
    default: return NAN;
    }
}

static int64_t reduce_int(enum pd_op op, const struct geom *g, const char *base, enum pd_dtype dt)
{
    int64_t n = g->nred;
    uint64_t s;
    int64_t m;
    switch (op) {
    case PD_OP_sum:
        s = 0;
        for (int64_t r = 0; r < n; r++) s += (uint64_t)pdi_load_int(elem(g, base, r), dt);
        return (int64_t)s;
    case PD_OP_prod:
        s = 1;
        for (int64_t r = 0; r < n; r++) s *= (uint64_t)pdi_load_int(elem(g, base, r), dt);
        return (int64_t)s;
    case PD_OP_amax:
    case PD_OP_amin:
        m = pdi_load_int(elem(g, base, 0), dt);
        for (int64_t r = 1; r < n; r++) {
            int64_t v = pdi_load_int(elem(g, base, r), dt);
            if (op == PD_OP_amax ? v > m : v < m) m = v;
        }
        return m;
    default: return 0;
    }
}

/* Index of the first max/min (first NaN for floats). */
static int64_t arg_best(const struct geom *g, const char *base, enum pd_dtype dt, int want_max)
{
    int64_t best = 0;
    if (pd_dtype_is_float(dt)) {
        double m = pdi_load(elem(g, base, 0), dt);
        for (int64_t r = 1; r < g->nred; r++) {
            double v = pdi_load(elem(g, base, r), dt);
            if (beats_f(v, m, want_max)) { m = v; best = r; }
        }
    } else {
        int64_t m = pdi_load_int(elem(g, base, 0), dt);
        for (int64_t r = 1; r < g->nred; r++) {
            int64_t v = pdi_load_int(elem(g, base, r), dt);
            if (want_max ? v > m : v < m) { m = v; best = r; }
        }
    }
    return best;
}

static int ref_reduce(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    struct geom g;
    geom_init(x, pdi_attrs_axes_mask(k->a, x->ndim), &g);
    enum pd_op op = k->op;
    int int_path = !pd_dtype_is_float(x->dtype) && (op == PD_OP_sum || op == PD_OP_prod || op == PD_OP_amax ||
                                                     op == PD_OP_amin);
    for (int64_t o = 0; o < g.nout; o++) {
        const char *base = kept(&g, x->data, o);
        char *dst = pdi_kview_ptr(y, o);
        if (op == PD_OP_max || op == PD_OP_min || op == PD_OP_argmax || op == PD_OP_argmin) {
            int64_t i = arg_best(&g, base, x->dtype, op == PD_OP_max || op == PD_OP_argmax);
            if (op == PD_OP_argmax || op == PD_OP_argmin) { *(int64_t *)dst = i; continue; }
            memcpy(dst, elem(&g, base, i), pd_dtype_size(x->dtype));
            *(int64_t *)pdi_kview_ptr(&k->out[1], o) = i;
        } else if (int_path) {
            store_i64(dst, y->dtype, reduce_int(op, &g, base, x->dtype));
        } else {
            pdi_store(dst, y->dtype, reduce_float(op, k->a, &g, base, x->dtype));
        }
    }
    return PD_OK;
}

/* Scans: each line along the axis, forward or reversed. */
static int ref_scan(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *y = &k->out[0];
    unsigned mask = x->ndim ? 1u << k->a->scan.axis : 0;
    struct geom gx, gy;
    geom_init(x, mask, &gx);
    geom_init(y, mask, &gy);
    int rev = k->a->scan.reverse != 0, prod = k->op == PD_OP_cumprod;
    int ints = !pd_dtype_is_float(y->dtype);
    int64_t n = gx.nred;
    for (int64_t o = 0; o < gx.nout; o++) {
        const char *xb = kept(&gx, x->data, o);
        char *yb = (char *)kept(&gy, y->data, o);
        double s = prod;
        uint64_t si = (uint64_t)prod;
        for (int64_t t = 0; t < n; t++) {
            int64_t r = rev ? n - 1 - t : t;
            const char *src = elem(&gx, xb, r);
            char *dst = (char *)elem(&gy, yb, r);
            if (ints) {
                uint64_t v = (uint64_t)pdi_load_int(src, x->dtype);
                si = prod ? si * v : si + v;
                store_i64(dst, y->dtype, (int64_t)si);
            } else {
                double v = pdi_load(src, x->dtype);
                s = prod ? s * v : s + v;
                pdi_store(dst, y->dtype, s);
            }
        }
    }
    return PD_OK;
}

/* Every dtype of each op's class (the op table's dtypes column). */
void pdi_register_ref_reduce(void)
{
    for (size_t i = 0; i < PDI_COUNT_OF(pdi_reduce_ops); i++) {
        enum pd_op op = pdi_reduce_ops[i];
        pdi_kernel_fn fn = op == PD_OP_cumsum || op == PD_OP_cumprod ? ref_scan : ref_reduce;
        pdi_register_by_class(PDI_BACKEND_REF, op, fn, fn, fn);
    }
}
