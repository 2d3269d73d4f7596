/* paddle.c — CPU kernels of the creation ops and of the in-place writes
 * copy_ and fill_. full and fill_ store one converted value (memset for
 * +0.0) over the strided walk, split over threads for large outputs;
 * copy_ runs the CPU copy kernel (tiled transposes, memcpy runs). */
#include <string.h>

#include "core/kernel.h"

static int cpu_empty(const struct pdi_kcall *k)
{
    PDI_UNUSED(k); /* uninitialised by definition */
    return PD_OK;
}

struct fill_ctx {
    char one[8]; /* the value in the output dtype */
    size_t es;
    int zero; /* every byte of one is 0 */
};

static void fill_run(char **p, const int64_t *st, int64_t n, void *ctx)
{
    const struct fill_ctx *f = ctx;
    char *d = p[0];
    int64_t s = st[0];
    if (f->zero && s == (int64_t)f->es) {
        memset(d, 0, (size_t)n * f->es);
        return;
    }
    switch (f->es) {
    case 8: {
        uint64_t v;
        memcpy(&v, f->one, 8);
        for (int64_t i = 0; i < n; i++) *(uint64_t *)(d + i * s) = v;
        break;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, f->one, 4);
        for (int64_t i = 0; i < n; i++) *(uint32_t *)(d + i * s) = v;
        break;
    }
    case 2: {
        uint16_t v;
        memcpy(&v, f->one, 2);
        for (int64_t i = 0; i < n; i++) *(uint16_t *)(d + i * s) = v;
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++) d[i * s] = f->one[0];
        break;
    }
}

#define FILL_CHUNK 65536

static void fill_view(const struct pd_kview *y, double value)
{
    struct fill_ctx f = {.es = pd_dtype_size(y->dtype)};
    pdi_store(f.one, y->dtype, value);
    f.zero = 1;
    for (size_t i = 0; i < f.es; i++) f.zero &= f.one[i] == 0;
    if (pdi_kview_contiguous(y)) { /* one run (every creation output): no walk to plan */
        int64_t n = pdi_kview_numel(y), es = (int64_t)f.es, nc = (n + FILL_CHUNK - 1) / FILL_CHUNK;
        PDI_FOR(n >= PDI_PAR_GRAIN, c, nc, {
            char *p = y->data + c * FILL_CHUNK * es;
            int64_t len = n - c * FILL_CHUNK < FILL_CHUNK ? n - c * FILL_CHUNK : FILL_CHUNK;
            fill_run(&p, &es, len, &f);
        });
        return;
    }
    struct pd_kview v = *y;
    struct pd_kview *ops[1] = {&v};
    pdi_iter(1, ops, v.shape, v.ndim, fill_run, &f);
}

/* full and fill_ */
static int cpu_fill(const struct pdi_kcall *k)
{
    fill_view(&k->out[0], k->op == PD_OP_full ? k->a->full.value : k->a->fill.value);
    return PD_OK;
}

static int cpu_arange(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    double start = k->a->arange.start, step = k->a->arange.step;
    int64_t n = pdi_kview_numel(y), es = (int64_t)pd_dtype_size(y->dtype);
    int64_t o = k->a->arange.piece.n ? k->a->arange.piece.v[0] : 0; /* a piece: its start in the whole */
    enum pd_dtype dt = y->dtype;
    char *d = y->data;
    PDI_FOR(n >= PDI_PAR_GRAIN, i, n, { pdi_store(d + i * es, dt, start + (double)(o + i) * step); });
    return PD_OK;
}

static int cpu_linspace(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    double start = k->a->linspace.start, stop = k->a->linspace.stop;
    int64_t n = pdi_kview_numel(y), es = (int64_t)pd_dtype_size(y->dtype);
    /* a piece: element i is element o + i of the whole draw of num */
    const struct pdi_ints *p = &k->a->linspace.piece;
    int64_t o = p->n ? p->v[0] : 0, num = p->n ? k->a->linspace.num : n;
    double step = num > 1 ? (stop - start) / (double)(num - 1) : 0;
    enum pd_dtype dt = y->dtype;
    char *d = y->data;
    PDI_FOR(n >= PDI_PAR_GRAIN, i, n, {
        /* symmetric formula: exact end points */
        int64_t g = o + i;
        double v = g < num / 2 ? start + step * (double)g : stop - step * (double)(num - 1 - g);
        pdi_store(d + i * es, dt, v);
    });
    return PD_OK;
}

static int cpu_eye(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    int64_t r = y->shape[0], c = y->shape[1], es = (int64_t)pd_dtype_size(y->dtype);
    const struct pdi_ints *p = &k->a->eye.piece; /* a piece from row r0, column c0: the diagonal j = i + r0 - c0 */
    int64_t sh = p->n ? p->v[0] - p->v[1] : 0;
    fill_view(y, 0.0);
    for (int64_t i = sh < 0 ? -sh : 0; i < r && i + sh < c; i++)
        pdi_store(y->data + (i * c + i + sh) * es, y->dtype, 1.0);
    return PD_OK;
}

/* copy_: the copy kernel with in[1] as its input and out[0] (= in[0]) */
static int cpu_copy_(const struct pdi_kcall *k)
{
    pdi_kernel_fn fn = pdi_kernel_lookup(PDI_BACKEND_CPU, PD_OP_copy, k->out[0].dtype);
    if (!fn) fn = pdi_kernel_lookup(PDI_BACKEND_REF, PD_OP_copy, k->out[0].dtype);
    if (!fn) return pdi_errorf(PD_ERR_UNSUPPORTED, "copy_: no copy kernel for %s", pd_dtype_name(k->out[0].dtype));
    struct pdi_kcall c = {PD_OP_copy, 1, 1, &k->in[1], k->out, NULL, k->alloc, k->backend};
    return fn(&c);
}

void pdi_register_cpu_create(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_empty, PDI_DT_ALL, cpu_empty);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_full, PDI_DT_ALL, cpu_fill);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_arange, PDI_DT_ALL, cpu_arange);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_linspace, PDI_DT_ALL, cpu_linspace);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_eye, PDI_DT_ALL, cpu_eye);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_copy_, PDI_DT_ALL, cpu_copy_);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_fill_, PDI_DT_ALL, cpu_fill);
}
