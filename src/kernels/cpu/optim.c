/* paddle.c — CPU kernels of the multi-tensor optimizer ops: sgd_update,
 * adam_update, grad_sumsq, grad_scale, amp_unscale (layouts in
 * src/ops/ops_optim.def; inputs are contiguous, validated by the infer
 * functions in src/ops/optim.c).
 *
 * The update of one parameter is one fused pass (update_block) over the
 * weights, the gradient and the moments, split in blocks of BLOCK elements
 * over OpenMP threads. Arithmetic is f32 (the moments are f32 whatever the
 * parameter's dtype); the per-step scalars arrive as double attributes and
 * are rounded once here, as torch does with Python floats. The parameters
 * of one call are updated one after the other.
 *
 * The sum of squares is accumulated in f64 over fixed blocks whose partial
 * sums are added in order, so it does not depend on the thread count; the
 * per-tensor sums are added in input order.
 *
 * Ownership: scratch (the partial sums of a large tensor) is allocated and
 * freed inside a call; the written inputs are the caller's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernel.h"

/* ---- the fused update ------------------------------------------------------ */
#define BLOCK 2048

struct upd {
    int adam, decoupled;
    float lr, wd, b1, b2, c1, c2, eps, step_size, inv_bc2_sqrt, decay_mul, momentum;
    float damp; /* SGD: 1 - dampening */
    int nesterov, first, amsgrad;
    float *w;                 /* f32 weights: the parameter or its master */
    const void *g;            /* gradient, contiguous */
    enum pd_dtype gdt;
    float *m, *v, *vmax;
    void *lowp;               /* bf16/f16 parameter receiving the rounding, or NULL */
    enum pd_dtype ldt;
};

static void to_f32(const void *src, enum pd_dtype dt, float *d, int64_t n)
{
    if (dt == PD_BF16) {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) d[i] = pdi_bf16_f32(s[i]);
    } else {
        pdi_convert(src, dt, d, PD_F32, n);
    }
}

static void from_f32(const float *s, void *dst, enum pd_dtype dt, int64_t n)
{
    if (dt == PD_BF16) {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = pdi_f32_bf16(s[i]);
    } else {
        pdi_convert(s, PD_F32, dst, dt, n);
    }
}

static void adam_block(const struct upd *u, float *restrict w, const float *restrict g, float *restrict m,
                       float *restrict v, float *restrict vmax, int64_t n)
{
    const float b1 = u->b1, b2 = u->b2, c1 = u->c1, c2 = u->c2;
    const float ss = -u->step_size, ibc = u->inv_bc2_sqrt, eps = u->eps, dm = u->decay_mul;
    /* Adam: L2 decay enters the gradient; AdamW: decoupled (dm = 1 - lr wd). */
    const float gwd = u->decoupled ? 0.0f : u->wd;
    if (u->amsgrad) {
        for (int64_t i = 0; i < n; i++) {
            float gi = g[i] + gwd * w[i];
            float mi = m[i] * b1 + c1 * gi;
            float vi = v[i] * b2 + c2 * (gi * gi);
            float vm = vmax[i] > vi ? vmax[i] : vi;
            m[i] = mi;
            v[i] = vi;
            vmax[i] = vm;
            w[i] = w[i] * dm + ss * (mi / (sqrtf(vm) * ibc + eps));
        }
    } else {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float gi = g[i] + gwd * w[i];
            float mi = m[i] * b1 + c1 * gi;
            float vi = v[i] * b2 + c2 * (gi * gi);
            m[i] = mi;
            v[i] = vi;
            w[i] = w[i] * dm + ss * (mi / (sqrtf(vi) * ibc + eps));
        }
    }
}

static void sgd_block(const struct upd *u, float *restrict w, const float *restrict g, float *restrict buf, int64_t n)
{
    const float wd = u->wd, lr = -u->lr, mom = u->momentum, c = u->damp;
    if (!buf) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) w[i] = w[i] + lr * (g[i] + wd * w[i]);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        float d = g[i] + wd * w[i];
        float b = u->first ? d : buf[i] * mom + c * d;
        buf[i] = b;
        d = u->nesterov ? d + mom * b : b;
        w[i] = w[i] + lr * d;
    }
}

static void update_block(const struct upd *u, int64_t off, int64_t n)
{
    float gbuf[BLOCK];
    const float *g;
    if (u->gdt == PD_F32) {
        g = (const float *)u->g + off;
    } else {
        to_f32((const char *)u->g + off * (int64_t)pd_dtype_size(u->gdt), u->gdt, gbuf, n);
        g = gbuf;
    }
    float *w = u->w + off;
    if (!u->adam)
        sgd_block(u, w, g, u->m ? u->m + off : NULL, n);
    else
        adam_block(u, w, g, u->m + off, u->v + off, u->vmax ? u->vmax + off : NULL, n);
    if (u->lowp) from_f32(w, (char *)u->lowp + off * (int64_t)pd_dtype_size(u->ldt), u->ldt, n);
}

static void run_update(const struct upd *u, int64_t numel)
{
    int64_t nb = (numel + BLOCK - 1) / BLOCK;
    PDI_FOR(numel >= PDI_PAR_GRAIN && pdi_num_threads() > 1, b, nb, {
        int64_t off = b * BLOCK;
        update_block(u, off, numel - off < BLOCK ? numel - off : BLOCK);
    });
}

/* Runs u over each of the call's n params: plane s of param j is input
 * s * n + j; the state planes start at plane 1 + has_master. */
static void update_params(const struct pdi_kcall *k, struct upd *u, int has_master, int n_state)
{
    int planes = 2 + has_master + n_state, n = k->n_in / planes, s0 = 1 + has_master;
    for (int j = 0; j < n; j++) {
        const struct pd_kview *p = &k->in[j], *g = &k->in[(planes - 1) * n + j];
        u->w = (float *)(has_master ? k->in[n + j].data : p->data);
        u->lowp = has_master ? p->data : NULL;
        u->ldt = p->dtype;
        u->g = g->data;
        u->gdt = g->dtype;
        u->m = n_state > 0 ? (float *)k->in[s0 * n + j].data : NULL;
        u->v = n_state > 1 ? (float *)k->in[(s0 + 1) * n + j].data : NULL;
        u->vmax = n_state > 2 ? (float *)k->in[(s0 + 2) * n + j].data : NULL;
        run_update(u, pdi_kview_numel(p));
    }
}

static int cpu_sgd_update(const struct pdi_kcall *k)
{
    const struct pdi_attrs_sgd_update *a = &k->a->sgd_update;
    struct upd u;
    memset(&u, 0, sizeof u);
    u.lr = (float)a->lr;
    u.wd = (float)a->weight_decay;
    u.momentum = (float)a->momentum;
    u.damp = (float)(1.0 - a->dampening); /* the factor of the new gradient */
    u.nesterov = (int)a->nesterov;
    u.first = (int)a->first_step;
    update_params(k, &u, a->has_master != 0, a->momentum != 0);
    return PD_OK;
}

static int cpu_adam_update(const struct pdi_kcall *k)
{
    const struct pdi_attrs_adam_update *a = &k->a->adam_update;
    struct upd u;
    memset(&u, 0, sizeof u);
    u.adam = 1;
    u.decoupled = a->decoupled_weight_decay != 0;
    u.lr = (float)a->lr;
    u.wd = (float)a->weight_decay;
    u.b1 = (float)a->beta1;
    u.b2 = (float)a->beta2;
    /* 1 - beta in double, then rounded: 1.0f - 0.999f is 4.7e-5 off 0.001 */
    u.c1 = (float)(1.0 - a->beta1);
    u.c2 = (float)(1.0 - a->beta2);
    u.eps = (float)a->eps;
    u.step_size = (float)a->step_size;
    /* torch divides sqrt(v) by sqrt(bc2); one multiply by its float
     * inverse differs by at most an ulp and vectorises */
    u.inv_bc2_sqrt = (float)a->bias_correction2_rsqrt;
    u.decay_mul = u.decoupled ? (float)(1.0 - a->lr * a->weight_decay) : 1.0f;
    u.amsgrad = a->amsgrad != 0;
    update_params(k, &u, a->has_master != 0, 2 + u.amsgrad);
    return PD_OK;
}

/* ---- sums of squares ------------------------------------------------------- */
#define SQ_BLOCK 4096

static double block_sumsq(const void *data, enum pd_dtype dt, int64_t off, int64_t n)
{
    double acc = 0;
    if (dt == PD_F32) {
        const float *x = (const float *)data + off;
        /* 4 lanes of f64: vectorises, and bounds the rounding of long sums */
        double a[4] = {0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 4 <= n; i += 4)
            for (int k = 0; k < 4; k++) a[k] += (double)x[i + k] * x[i + k];
        for (; i < n; i++) acc += (double)x[i] * x[i];
        return acc + (a[0] + a[1]) + (a[2] + a[3]);
    }
    if (dt == PD_F64) {
        const double *x = (const double *)data + off;
        for (int64_t i = 0; i < n; i++) acc += x[i] * x[i];
        return acc;
    }
    float buf[256];
    for (int64_t s = 0; s < n; s += 256) {
        int64_t m = n - s < 256 ? n - s : 256;
        pdi_convert((const char *)data + (off + s) * (int64_t)pd_dtype_size(dt), dt, buf, PD_F32, m);
        for (int64_t i = 0; i < m; i++) acc += (double)buf[i] * buf[i];
    }
    return acc;
}

/* Sum of squares of one contiguous tensor into *out; status. */
static int tensor_sumsq(const struct pd_kview *v, double *out)
{
    int64_t n = pdi_kview_numel(v), nb = (n + SQ_BLOCK - 1) / SQ_BLOCK;
    const void *data = v->data;
    enum pd_dtype dt = v->dtype;
    double small[64], *part = nb <= 64 ? small : malloc(sizeof *part * (size_t)nb);
    if (!part) return pdi_errorf(PD_ERR_NOMEM, "sum of squares: out of memory");
    PDI_FOR(n >= PDI_PAR_GRAIN && pdi_num_threads() > 1, b, nb, {
        int64_t off = b * SQ_BLOCK;
        part[b] = block_sumsq(data, dt, off, n - off < SQ_BLOCK ? n - off : SQ_BLOCK);
    });
    double total = 0;
    for (int64_t b = 0; b < nb; b++) total += part[b];
    if (part != small) free(part);
    *out = total;
    return PD_OK;
}

static int cpu_grad_sumsq(const struct pdi_kcall *k)
{
    double total = 0;
    for (int i = 0; i < k->n_in; i++) {
        double s;
        int rc = tensor_sumsq(&k->in[i], &s);
        if (rc) return rc;
        total += s;
    }
    *(double *)k->out[0].data = total;
    return PD_OK;
}

/* ---- scaling ----------------------------------------------------------- */
static void scale_tensor(const struct pd_kview *v, double coef)
{
    int64_t n = pdi_kview_numel(v);
    int par = n >= PDI_PAR_GRAIN && pdi_num_threads() > 1;
    if (v->dtype == PD_F32) {
        float *x = (float *)v->data, c = (float)coef;
        PDI_FOR(par, i, n, { x[i] *= c; });
    } else if (v->dtype == PD_F64) {
        double *x = (double *)v->data;
        PDI_FOR(par, i, n, { x[i] *= coef; });
    } else {
        float c = (float)coef;
        size_t es = pd_dtype_size(v->dtype);
        int64_t nb = (n + 255) / 256;
        PDI_FOR(par, b, nb, {
            float buf[256];
            int64_t m = n - b * 256 < 256 ? n - b * 256 : 256;
            char *p = v->data + b * 256 * (int64_t)es;
            to_f32(p, v->dtype, buf, m);
            for (int64_t i = 0; i < m; i++) buf[i] *= c;
            from_f32(buf, p, v->dtype, m);
        });
    }
}

static int cpu_grad_scale(const struct pdi_kcall *k)
{
    for (int i = 0; i < k->n_in; i++) scale_tensor(&k->in[i], k->a->grad_scale.scale);
    return PD_OK;
}

static int cpu_amp_unscale(const struct pdi_kcall *k)
{
    int found = 0;
    for (int i = 0; i < k->n_in && !found; i++) {
        double s;
        int rc = tensor_sumsq(&k->in[i], &s);
        if (rc) return rc;
        found = !isfinite(s);
    }
    if (!found)
        for (int64_t i = 0; i < k->a->amp_unscale.n_inplace; i++) scale_tensor(&k->in[i], k->a->amp_unscale.inv_scale);
    *(float *)k->out[0].data = (float)found;
    return PD_OK;
}

void pdi_register_cpu_optim(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_sgd_update, PDI_DT_FLOATS, cpu_sgd_update);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_adam_update, PDI_DT_FLOATS, cpu_adam_update);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_grad_sumsq, PDI_DT_FLOATS, cpu_grad_sumsq);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_grad_scale, PDI_DT_FLOATS, cpu_grad_scale);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_amp_unscale, PDI_DT_FLOATS, cpu_amp_unscale);
}
