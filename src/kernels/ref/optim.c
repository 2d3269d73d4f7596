/* paddle.c — reference kernels of the multi-tensor optimizer ops (layouts
 * in src/ops/ops_optim.def): one element at a time through pdi_load /
 * pdi_store, no blocks, no threads. The updates follow torch.optim's
 * formulas in f32 as the CPU kernels do, so the two agree to rounding; the
 * sums of squares are plain sequential f64 sums.
 */
#include <math.h>

#include "core/kernel.h"

/* Element i of input s * n + j (plane s of param j) as float. */
static float ld(const struct pdi_kcall *k, int s, int n, int j, int64_t i)
{
    const struct pd_kview *v = &k->in[s * n + j];
    return (float)pdi_load(v->data + i * (int64_t)pd_dtype_size(v->dtype), v->dtype);
}

static void st(const struct pdi_kcall *k, int s, int n, int j, int64_t i, float x)
{
    const struct pd_kview *v = &k->in[s * n + j];
    pdi_store(v->data + i * (int64_t)pd_dtype_size(v->dtype), v->dtype, x);
}

static int ref_sgd_update(const struct pdi_kcall *k)
{
    const struct pdi_attrs_sgd_update *a = &k->a->sgd_update;
    int hm = a->has_master != 0, mom = a->momentum != 0, planes = 2 + hm + mom, n = k->n_in / planes;
    int ws = hm ? 1 : 0, bs = 1 + hm, gs = planes - 1; /* planes of the f32 weights, the buffer, the grads */
    float lr = (float)a->lr, wd = (float)a->weight_decay, mu = (float)a->momentum, damp = (float)(1.0 - a->dampening);
    for (int j = 0; j < n; j++) {
        int64_t numel = pdi_kview_numel(&k->in[j]);
        for (int64_t i = 0; i < numel; i++) {
            float w = ld(k, ws, n, j, i);
            float d = ld(k, gs, n, j, i) + wd * w;
            if (mom) {
                float b = a->first_step ? d : ld(k, bs, n, j, i) * mu + damp * d;
                st(k, bs, n, j, i, b);
                d = a->nesterov ? d + mu * b : b;
            }
            w = w - lr * d;
            st(k, ws, n, j, i, w);
            if (hm) st(k, 0, n, j, i, w); /* the param: the master's rounding */
        }
    }
    return PD_OK;
}

static int ref_adam_update(const struct pdi_kcall *k)
{
    const struct pdi_attrs_adam_update *a = &k->a->adam_update;
    int hm = a->has_master != 0, ams = a->amsgrad != 0, planes = 4 + hm + ams, n = k->n_in / planes;
    int ws = hm ? 1 : 0, ms = 1 + hm, vs = ms + 1, xs = vs + 1, gs = planes - 1;
    float b1 = (float)a->beta1, b2 = (float)a->beta2, eps = (float)a->eps;
    float c1 = (float)(1.0 - a->beta1), c2 = (float)(1.0 - a->beta2);
    float step_size = (float)a->step_size, rbc2 = (float)a->bias_correction2_rsqrt;
    float l2 = a->decoupled_weight_decay ? 0.0f : (float)a->weight_decay;
    float decay = a->decoupled_weight_decay ? (float)(1.0 - a->lr * a->weight_decay) : 1.0f;
    for (int j = 0; j < n; j++) {
        int64_t numel = pdi_kview_numel(&k->in[j]);
        for (int64_t i = 0; i < numel; i++) {
            float w = ld(k, ws, n, j, i);
            float g = ld(k, gs, n, j, i) + l2 * w;
            float m = b1 * ld(k, ms, n, j, i) + c1 * g;
            float v = b2 * ld(k, vs, n, j, i) + c2 * (g * g);
            st(k, ms, n, j, i, m);
            st(k, vs, n, j, i, v);
            if (ams) {
                float vmax = ld(k, xs, n, j, i);
                v = vmax > v ? vmax : v;
                st(k, xs, n, j, i, v);
            }
            w = w * decay - step_size * (m / (sqrtf(v) * rbc2 + eps));
            st(k, ws, n, j, i, w);
            if (hm) st(k, 0, n, j, i, w);
        }
    }
    return PD_OK;
}

static double sumsq(const struct pd_kview *v)
{
    double s = 0;
    int64_t n = pdi_kview_numel(v);
    for (int64_t i = 0; i < n; i++) {
        double x = pdi_load(v->data + i * (int64_t)pd_dtype_size(v->dtype), v->dtype);
        s += x * x;
    }
    return s;
}

static void scale(const struct pd_kview *v, double coef)
{
    int64_t n = pdi_kview_numel(v);
    size_t es = pd_dtype_size(v->dtype);
    for (int64_t i = 0; i < n; i++) {
        char *p = v->data + i * (int64_t)es;
        double x = pdi_load(p, v->dtype);
        pdi_store(p, v->dtype, v->dtype == PD_F64 ? x * coef : (double)((float)x * (float)coef));
    }
}

static int ref_grad_sumsq(const struct pdi_kcall *k)
{
    double total = 0;
    for (int i = 0; i < k->n_in; i++) total += sumsq(&k->in[i]);
    *(double *)k->out[0].data = total;
    return PD_OK;
}

static int ref_grad_scale(const struct pdi_kcall *k)
{
    for (int i = 0; i < k->n_in; i++) scale(&k->in[i], k->a->grad_scale.scale);
    return PD_OK;
}

static int ref_amp_unscale(const struct pdi_kcall *k)
{
    int found = 0;
    for (int i = 0; i < k->n_in; i++) found |= !isfinite(sumsq(&k->in[i]));
    if (!found)
        for (int64_t i = 0; i < k->a->amp_unscale.n_inplace; i++) scale(&k->in[i], k->a->amp_unscale.inv_scale);
    *(float *)k->out[0].data = (float)found;
    return PD_OK;
}

void pdi_register_ref_optim(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_sgd_update, PDI_DT_FLOATS, ref_sgd_update);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_adam_update, PDI_DT_FLOATS, ref_adam_update);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_grad_sumsq, PDI_DT_FLOATS, ref_grad_sumsq);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_grad_scale, PDI_DT_FLOATS, ref_grad_scale);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_amp_unscale, PDI_DT_FLOATS, ref_amp_unscale);
}
