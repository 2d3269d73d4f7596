/* paddle.c — REF kernels of the transformer blocks (rope, swiglu, sdpa,
 * sdpa_backward).
 *
 * The oracle: element by element through pdi_kview_ptr (any strides), in
 * double, written for obviousness and never optimised. Shapes were checked
 * by the infer functions (src/ops/llm.c). Outputs are fresh and contiguous;
 * scratch is malloc'ed per call and freed before returning.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernel.h"

static double ld(const struct pd_kview *v, int64_t i) { return pdi_load(pdi_kview_ptr(v, i), v->dtype); }
static void st(const struct pd_kview *v, int64_t i, double x) { pdi_store(pdi_kview_ptr(v, i), v->dtype, x); }

/* x [B, T, H, D], positions [T] or [B, T]: for i < D/2 with angle
 * a = sign * pos * theta^(-2i/D), (x_i, x_{i+D/2}) -> (x_i cos a - x_{i+D/2} sin a,
 * x_{i+D/2} cos a + x_i sin a). */
static int ref_rope(const struct pdi_kcall *k)
{
    const struct pd_kview *x = &k->in[0], *p = &k->in[1], *y = &k->out[0];
    int64_t B = x->shape[0], T = x->shape[1], H = x->shape[2], D = x->shape[3], h2 = D / 2;
    double theta = k->a->rope.theta, sign = (double)k->a->rope.sign;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            int64_t pi = p->ndim == 1 ? t : b * T + t;
            double pos = (double)pdi_load_int(pdi_kview_ptr(p, pi), p->dtype);
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < h2; i++) {
                    double a = sign * pos * pow(theta, -2.0 * (double)i / (double)D);
                    int64_t base = ((b * T + t) * H + h) * D;
                    double x1 = ld(x, base + i), x2 = ld(x, base + i + h2);
                    st(y, base + i, x1 * cos(a) - x2 * sin(a));
                    st(y, base + i + h2, x2 * cos(a) + x1 * sin(a));
                }
        }
    return PD_OK;
}

static int ref_swiglu(const struct pdi_kcall *k)
{
    const struct pd_kview *g = &k->in[0], *u = &k->in[1], *y = &k->out[0];
    int64_t n = pdi_kview_numel(y);
    for (int64_t i = 0; i < n; i++) {
        double a = ld(g, i);
        st(y, i, a / (1.0 + exp(-a)) * ld(u, i));
    }
    return PD_OK;
}

/* dgate = dout u s (1 + a (1 - s)), dup = dout a s, s = sigmoid(a). */
static int ref_swiglu_backward(const struct pdi_kcall *k)
{
    const struct pd_kview *g = &k->in[0], *u = &k->in[1], *d = &k->in[2];
    int64_t n = pdi_kview_numel(&k->out[0]);
    for (int64_t i = 0; i < n; i++) {
        double a = ld(g, i), s = 1.0 / (1.0 + exp(-a)), dy = ld(d, i);
        st(&k->out[0], i, dy * ld(u, i) * s * (1.0 + a * (1.0 - s)));
        st(&k->out[1], i, dy * a * s);
    }
    return PD_OK;
}

/* Geometry shared by the forward and backward. */
struct geom {
    int64_t B, Hq, Hkv, G, T, S, D, Dv;
    int causal;
    double scale;
    const struct pd_kview *q, *k, *v, *mask;
    int64_t mst[4]; /* mask strides expanded to [B, Hq, T, S] (0 where broadcast) */
};

static void geom_init(struct geom *g, const struct pdi_kcall *k)
{
    g->q = &k->in[0];
    g->k = &k->in[1];
    g->v = &k->in[2];
    g->mask = k->a->sdpa.has_mask ? &k->in[3] : NULL;
    g->B = g->q->shape[0];
    g->Hq = g->q->shape[1];
    g->T = g->q->shape[2];
    g->D = g->q->shape[3];
    g->Hkv = g->k->shape[1];
    g->S = g->k->shape[2];
    g->Dv = g->v->shape[3];
    g->G = g->Hkv ? g->Hq / g->Hkv : 1;
    g->causal = k->a->sdpa.causal != 0;
    g->scale = k->a->sdpa.scale;
    memset(g->mst, 0, sizeof g->mst);
    if (g->mask)
        for (int i = 0; i < g->mask->ndim; i++) {
            int d = 4 - g->mask->ndim + i;
            g->mst[d] = g->mask->shape[i] == 1 ? 0 : g->mask->strides[i];
        }
}

static int64_t idx4(const struct pd_kview *v, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return ((a * v->shape[1] + b) * v->shape[2] + c) * v->shape[3] + d;
}

/* Score of (b, h, t, s) into *out; returns 0 when the key is not visible. */
static int score(const struct geom *g, int64_t b, int64_t h, int64_t t, int64_t s, double *out)
{
    if (g->causal && s > t + g->S - g->T) return 0;
    double add = 0;
    if (g->mask) {
        const char *mp = g->mask->data + (b * g->mst[0] + h * g->mst[1] + t * g->mst[2] + s * g->mst[3]) *
                                             (int64_t)pd_dtype_size(g->mask->dtype);
        if (g->mask->dtype == PD_BOOL) {
            if (!*(const uint8_t *)mp) return 0;
        } else {
            add = pdi_load(mp, g->mask->dtype);
        }
    }
    int64_t hk = h / g->G;
    double acc = 0;
    for (int64_t d = 0; d < g->D; d++) acc += ld(g->q, idx4(g->q, b, h, t, d)) * ld(g->k, idx4(g->k, b, hk, s, d));
    *out = acc * g->scale + add;
    return 1;
}

/* Per row: visible scores s_j, m = max, out = sum_j exp(s_j - m) v_j / sum,
 * lse = m + log(sum); no visible key (or every score -inf): zeros, -inf. */
static int ref_sdpa(const struct pdi_kcall *k)
{
    struct geom g;
    geom_init(&g, k);
    const struct pd_kview *o = &k->out[0], *lse = &k->out[1];
    double *sc = malloc(sizeof *sc * (size_t)(g.S + 1)), *acc = malloc(sizeof *acc * (size_t)(g.Dv + 1));
    unsigned char *vis = malloc((size_t)g.S + 1);
    if (!sc || !acc || !vis) {
        free(sc), free(acc), free(vis);
        return pdi_errorf(PD_ERR_NOMEM, "sdpa: out of memory");
    }
    for (int64_t b = 0; b < g.B; b++)
        for (int64_t h = 0; h < g.Hq; h++)
            for (int64_t t = 0; t < g.T; t++) {
                double m = -INFINITY, sum = 0;
                for (int64_t s = 0; s < g.S; s++) {
                    vis[s] = (unsigned char)score(&g, b, h, t, s, &sc[s]);
                    if (vis[s] && sc[s] > m) m = sc[s];
                }
                memset(acc, 0, sizeof *acc * (size_t)g.Dv);
                if (m > -INFINITY) {
                    for (int64_t s = 0; s < g.S; s++) {
                        if (!vis[s]) continue;
                        double e = exp(sc[s] - m);
                        sum += e;
                        for (int64_t d = 0; d < g.Dv; d++) acc[d] += e * ld(g.v, idx4(g.v, b, h / g.G, s, d));
                    }
                }
                for (int64_t d = 0; d < g.Dv; d++) st(o, idx4(o, b, h, t, d), sum > 0 ? acc[d] / sum : 0.0);
                st(lse, (b * g.Hq + h) * g.T + t, sum > 0 ? m + log(sum) : -INFINITY);
            }
    free(sc), free(acc), free(vis);
    return PD_OK;
}

/* With p_j = exp(s_j - lse) (0 for invisible keys or lse = -inf) and
 * D = dout . out: dv_j += p_j dout, ds_j = p_j (dout . v_j - D),
 * dq += scale ds_j k_j, dk_j += scale ds_j q. */
static int ref_sdpa_backward(const struct pdi_kcall *k)
{
    struct geom g;
    geom_init(&g, k);
    int hm = k->a->sdpa.has_mask != 0;
    const struct pd_kview *o = &k->in[3 + hm], *lse = &k->in[4 + hm], *dout = &k->in[5 + hm];
    const struct pd_kview *dqv = &k->out[0], *dkv = &k->out[1], *dvv = &k->out[2];
    int64_t nq = pdi_kview_numel(dqv), nk = pdi_kview_numel(dkv), nv = pdi_kview_numel(dvv);
    double *dq = calloc((size_t)nq + 1, sizeof *dq), *dk = calloc((size_t)nk + 1, sizeof *dk);
    double *dv = calloc((size_t)nv + 1, sizeof *dv);
    if (!dq || !dk || !dv) {
        free(dq), free(dk), free(dv);
        return pdi_errorf(PD_ERR_NOMEM, "sdpa_backward: out of memory");
    }
    for (int64_t b = 0; b < g.B; b++)
        for (int64_t h = 0; h < g.Hq; h++)
            for (int64_t t = 0; t < g.T; t++) {
                double l = ld(lse, (b * g.Hq + h) * g.T + t), Di = 0;
                if (!(l > -INFINITY)) continue;
                int64_t hk = h / g.G;
                for (int64_t d = 0; d < g.Dv; d++)
                    Di += ld(dout, idx4(dout, b, h, t, d)) * ld(o, idx4(o, b, h, t, d));
                for (int64_t s = 0; s < g.S; s++) {
                    double sc;
                    if (!score(&g, b, h, t, s, &sc)) continue;
                    double p = exp(sc - l), dp = 0;
                    for (int64_t d = 0; d < g.Dv; d++) {
                        double go = ld(dout, idx4(dout, b, h, t, d));
                        dp += go * ld(g.v, idx4(g.v, b, hk, s, d));
                        dv[idx4(dvv, b, hk, s, d)] += p * go;
                    }
                    double ds = p * (dp - Di) * g.scale;
                    for (int64_t d = 0; d < g.D; d++) {
                        dq[idx4(dqv, b, h, t, d)] += ds * ld(g.k, idx4(g.k, b, hk, s, d));
                        dk[idx4(dkv, b, hk, s, d)] += ds * ld(g.q, idx4(g.q, b, h, t, d));
                    }
                }
            }
    for (int64_t i = 0; i < nq; i++) st(dqv, i, dq[i]);
    for (int64_t i = 0; i < nk; i++) st(dkv, i, dk[i]);
    for (int64_t i = 0; i < nv; i++) st(dvv, i, dv[i]);
    free(dq), free(dk), free(dv);
    return PD_OK;
}

void pdi_register_ref_llm(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_rope, PDI_DT_FLOATS, ref_rope);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_swiglu, PDI_DT_FLOATS, ref_swiglu);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_swiglu_backward, PDI_DT_FLOATS, ref_swiglu_backward);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_sdpa, PDI_DT_FLOATS, ref_sdpa);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_sdpa_backward, PDI_DT_FLOATS, ref_sdpa_backward);
}
