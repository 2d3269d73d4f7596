/* paddle.c — REF kernels of FlashMask attention (flashmask,
 * flashmask_backward; kcall layout and attributes in
 * ops/ops_flashmask.def).
 *
 * The oracle: element by element through pdi_kview_ptr (any strides), in
 * double, one query row at a time with an Sk buffer of scores; the masked
 * predicate is pdi_flashmask_masked (kernels/flashmask_rules.h), the rule
 * the dense converter composes. Inputs were validated by infer (index
 * values included). A row that sees no key gives out 0, lse -inf and no
 * gradient. Dropout (dropout_p > 0) keeps weight (b, h, i, j) iff the
 * Philox word at counter dropout_offset + ((b Hq + h) Sq + i) Sk + j of key
 * dropout_seed is >= p 2^32, scaled by
 * 1/(1-p); the lse is that of the undropped softmax, and the backward
 * regenerates the same words. Also the CPU kernels for f64 (the CPU
 * kernels compute in f32 and register the other float dtypes).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernel.h"
#include "kernels/flashmask_rules.h"

static double ld(const struct pd_kview *v, int64_t i) { return pdi_load(pdi_kview_ptr(v, i), v->dtype); }
static void st(const struct pd_kview *v, int64_t i, double x) { pdi_store(pdi_kview_ptr(v, i), v->dtype, x); }

/* Linear index of [a, b, c, d] in a rank-4 view (row-major, as kview_ptr). */
static int64_t at4(const struct pd_kview *v, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return ((a * v->shape[1] + b) * v->shape[2] + c) * v->shape[3] + d;
}

/* q [B, Sq, Hq, D], k [B, Sk, Hk, D], v [B, Sk, Hk, Dv], idx [B, Hm, Sk, C]. */
struct geom {
    const struct pd_kview *q, *k, *v, *idx;
    int64_t B, Sq, Sk, Hq, Hk, G, D, Dv;
    int causal;
    double scale, p;
    uint64_t seed, offset, thr;
};

static void geom_init(struct geom *g, const struct pdi_kcall *kc)
{
    g->q = &kc->in[0];
    g->k = &kc->in[1];
    g->v = &kc->in[2];
    const struct pdi_attrs_flashmask *a = &kc->a->flashmask;
    g->idx = a->has_idx ? &kc->in[3] : NULL;
    g->B = g->q->shape[0];
    g->Sq = g->q->shape[1];
    g->Hq = g->q->shape[2];
    g->D = g->q->shape[3];
    g->Sk = g->k->shape[1];
    g->Hk = g->k->shape[2];
    g->Dv = g->v->shape[3];
    g->G = g->Hk ? g->Hq / g->Hk : 1;
    g->causal = a->causal != 0;
    g->seed = (uint64_t)a->dropout_seed;
    g->offset = (uint64_t)a->dropout_offset;
    g->scale = a->scale;
    g->p = a->dropout_p;
    g->thr = pdi_flashmask_keep_threshold(g->p);
}

static int masked(const struct geom *g, int64_t b, int64_t h, int64_t i, int64_t j)
{
    if (!g->idx) return g->causal && j > i + (g->Sk - g->Sq);
    int64_t C = g->idx->shape[3], hm = g->idx->shape[1] == 1 ? 0 : h / g->G;
    int32_t x[4] = {0};
    for (int64_t c = 0; c < C; c++) x[c] = (int32_t)ld(g->idx, at4(g->idx, b, hm, j, c));
    return pdi_flashmask_masked(x, C, g->causal, i, j, g->Sq, g->Sk);
}

/* Row (b, h, i): the scores sc[j] and visibility vis[j]; returns the log-sum-exp (-inf: no key). With dropout, z[j]
 * receives the multiplier of weight j (0 or 1/(1-p)), else 1. */
static double row(const struct geom *g, int64_t b, int64_t h, int64_t i, double *sc, unsigned char *vis, double *z,
                  uint32_t *w)
{
    int64_t hk = h / g->G;
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < g->Sk; j++) {
        vis[j] = (unsigned char)!masked(g, b, h, i, j);
        if (!vis[j]) continue;
        double acc = 0;
        for (int64_t d = 0; d < g->D; d++) acc += ld(g->q, at4(g->q, b, i, h, d)) * ld(g->k, at4(g->k, b, j, hk, d));
        sc[j] = acc * g->scale;
        if (sc[j] > m) m = sc[j];
    }
    for (int64_t j = 0; j < g->Sk && m > -INFINITY; j++)
        if (vis[j]) sum += exp(sc[j] - m);
    for (int64_t j = 0; j < g->Sk; j++) z[j] = 1.0;
    if (g->p > 0) {
        pd_philox_fill(g->seed, g->offset + (uint64_t)(((b * g->Hq + h) * g->Sq + i) * g->Sk), w, g->Sk);
        for (int64_t j = 0; j < g->Sk; j++) z[j] = w[j] >= g->thr ? 1.0 / (1.0 - g->p) : 0.0;
    }
    return sum > 0 ? m + log(sum) : -INFINITY;
}

/* Scratch of one row: scores, dropout multipliers, Philox words, visibility. */
struct scratch {
    double *sc, *z;
    uint32_t *w;
    unsigned char *vis;
};

static int scratch_alloc(struct scratch *s, int64_t Sk, const char *op)
{
    size_t n = (size_t)Sk + 1;
    s->sc = malloc(sizeof *s->sc * n), s->z = malloc(sizeof *s->z * n);
    s->w = malloc(sizeof *s->w * n), s->vis = malloc(n);
    if (s->sc && s->z && s->w && s->vis) return PD_OK;
    free(s->sc), free(s->z), free(s->w), free(s->vis);
    return pdi_errorf(PD_ERR_NOMEM, "%s: out of memory for a row of %lld keys", op, (long long)Sk);
}

static void scratch_free(struct scratch *s) { free(s->sc), free(s->z), free(s->w), free(s->vis); }

/* out_i = sum_j z_j p_j v_j with p_j = exp(s_j - lse_i) (0 for a masked key). */
static int ref_flashmask(const struct pdi_kcall *kc)
{
    struct geom g;
    geom_init(&g, kc);
    const struct pd_kview *o = &kc->out[0], *lse = &kc->out[1];
    struct scratch s;
    if (scratch_alloc(&s, g.Sk, "flashmask")) return pd_last_status();
    for (int64_t b = 0; b < g.B; b++)
        for (int64_t h = 0; h < g.Hq; h++)
            for (int64_t i = 0; i < g.Sq; i++) {
                double l = row(&g, b, h, i, s.sc, s.vis, s.z, s.w);
                for (int64_t j = 0; j < g.Sk; j++) s.sc[j] = s.vis[j] && l > -INFINITY ? exp(s.sc[j] - l) * s.z[j] : 0;
                for (int64_t d = 0; d < g.Dv; d++) {
                    double acc = 0;
                    for (int64_t j = 0; j < g.Sk; j++) acc += s.sc[j] * ld(g.v, at4(g.v, b, j, h / g.G, d));
                    st(o, at4(o, b, i, h, d), acc);
                }
                st(lse, (b * g.Hq + h) * g.Sq + i, l);
            }
    scratch_free(&s);
    return PD_OK;
}

/* With p_j = exp(s_j - lse_i), the dropped weights z_j p_j and
 * D_i = dout_i . out_i: dv_j += z_j p_j dout_i, dp_j = z_j (dout_i . v_j),
 * ds_j = p_j (dp_j - D_i), dq_i += scale ds_j k_j, dk_j += scale ds_j q_i. */
static int ref_flashmask_backward(const struct pdi_kcall *kc)
{
    struct geom g;
    geom_init(&g, kc);
    int hi = g.idx != NULL;
    const struct pd_kview *o = &kc->in[3 + hi], *lse = &kc->in[4 + hi], *dout = &kc->in[5 + hi];
    const struct pd_kview *dqv = &kc->out[0], *dkv = &kc->out[1], *dvv = &kc->out[2];
    int64_t nq = pdi_kview_numel(dqv), nk = pdi_kview_numel(dkv), nv = pdi_kview_numel(dvv);
    double *dq = calloc((size_t)nq + 1, sizeof *dq), *dk = calloc((size_t)nk + 1, sizeof *dk);
    double *dv = calloc((size_t)nv + 1, sizeof *dv);
    struct scratch s = {0};
    if (!dq || !dk || !dv || scratch_alloc(&s, g.Sk, "flashmask_backward")) {
        free(dq), free(dk), free(dv);
        return dq && dk && dv ? pd_last_status() : pdi_errorf(PD_ERR_NOMEM, "flashmask_backward: out of memory");
    }
    for (int64_t b = 0; b < g.B; b++)
        for (int64_t h = 0; h < g.Hq; h++)
            for (int64_t i = 0; i < g.Sq; i++) {
                /* the saved lse, as a fused kernel would use it */
                double l = ld(lse, (b * g.Hq + h) * g.Sq + i), Di = 0;
                row(&g, b, h, i, s.sc, s.vis, s.z, s.w);
                if (!(l > -INFINITY)) continue;
                int64_t hk = h / g.G;
                for (int64_t d = 0; d < g.Dv; d++) Di += ld(dout, at4(dout, b, i, h, d)) * ld(o, at4(o, b, i, h, d));
                for (int64_t j = 0; j < g.Sk; j++) {
                    if (!s.vis[j]) continue;
                    double p = exp(s.sc[j] - l), dp = 0;
                    for (int64_t d = 0; d < g.Dv; d++) {
                        double go = ld(dout, at4(dout, b, i, h, d));
                        dp += go * ld(g.v, at4(g.v, b, j, hk, d));
                        dv[at4(dvv, b, j, hk, d)] += s.z[j] * p * go;
                    }
                    double ds = p * (s.z[j] * dp - Di) * g.scale;
                    for (int64_t d = 0; d < g.D; d++) {
                        dq[at4(dqv, b, i, h, d)] += ds * ld(g.k, at4(g.k, b, j, hk, d));
                        dk[at4(dkv, b, j, hk, d)] += ds * ld(g.q, at4(g.q, b, i, h, d));
                    }
                }
            }
    for (int64_t x = 0; x < nq; x++) st(dqv, x, dq[x]);
    for (int64_t x = 0; x < nk; x++) st(dkv, x, dk[x]);
    for (int64_t x = 0; x < nv; x++) st(dvv, x, dv[x]);
    free(dq), free(dk), free(dv);
    scratch_free(&s);
    return PD_OK;
}

void pdi_register_ref_flashmask(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_flashmask, PDI_DT_FLOATS, ref_flashmask);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_flashmask_backward, PDI_DT_FLOATS, ref_flashmask_backward);
    /* f64 on the CPU backend is this oracle (the CPU kernels compute in f32) */
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_flashmask, 1u << PD_F64, ref_flashmask);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_flashmask_backward, 1u << PD_F64, ref_flashmask_backward);
}
