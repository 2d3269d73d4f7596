/* paddle.c — FlashMask attention, the op front end (rows in
 * ops_flashmask.def; kernels in kernels/cpu/flashmask.c and
 * kernels/ref/flashmask.c; mask builders in flashmask/masks.c).
 *
 * Invariants:
 *   - infer validates everything the kernels rely on, index VALUES
 *     included (int32 in [0, Sq], C allowed by the causal flag), so the
 *     kernels never check; each message names the rule that broke;
 *   - the public wrapper resolves the defaults (scale 1/sqrt(D)), turns a
 *     window into indices (pdi_flashmask_window) and draws the dropout
 *     counter range from the default generator, so that the op's
 *     attributes fully determine its result (the backward replays them);
 *   - the VJP is the fused flashmask_backward for plain first-order
 *     gradients; when the backward is recorded (create_graph) or the
 *     log-sum-exp was handed to the caller (its gradient may be non-zero),
 *     it composes public ops over the dense mask instead (O(Sq Sk) memory:
 *     a path for higher orders and tests, not for long sequences).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "ops/attention.h"
#include "ops/flashmask.h"
#include "pd/flashmask.h"

/* Element (b, h, j, c) of a rank-4 int32 tensor of any strides. */
static int32_t idx_at(const struct pd_tensor *t, int64_t b, int64_t h, int64_t j, int64_t c)
{
    const int32_t *p = (const int32_t *)t->st->data + t->offset;
    return p[b * t->strides[0] + h * t->strides[1] + j * t->strides[2] + c * t->strides[3]];
}

int pdi_flashmask_check_indices(const char *op, const struct pd_tensor *idx, int causal, int64_t B, int64_t Sq,
                                int64_t Sk, int64_t Hk)
{
    char b0[PDI_SHAPE_BUF];
    if (idx->dtype != PD_I32)
        return pdi_errorf(PD_ERR_INVALID, "%s: startend_row_indices must be int32, got %s", op,
                          pd_dtype_name(idx->dtype));
    if (idx->ndim != 4)
        return pdi_errorf(PD_ERR_INVALID, "%s: startend_row_indices must be [B, Hm, Sk, C] (rank 4), got %s", op,
                          pdi_shape_str(idx->shape, idx->ndim, b0, sizeof b0));
    int64_t C = idx->shape[3], Hm = idx->shape[1];
    if (idx->shape[0] != B || idx->shape[2] != Sk)
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: startend_row_indices %s must be [B, Hm, Sk, C] with "
                          "B = %lld and Sk = %lld (one row "
                          "per key position)",
                          op, pdi_shape_str(idx->shape, 4, b0, sizeof b0), (long long)B, (long long)Sk);
    if (Hm != 1 && Hm != Hk)
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: startend_row_indices has %lld mask heads; it must "
                          "be 1 (shared) or the number of key "
                          "heads (%lld)",
                          op, (long long)Hm, (long long)Hk);
    if (causal ? (C != 1 && C != 2) : (C != 2 && C != 4))
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: startend_row_indices has C = %lld columns; causal "
                          "masks take 1 (LTS) or 2 (LTS, LTE), "
                          "non-causal ones 2 (LTS, UTE) or 4 (LTS, LTE, UTS, UTE)",
                          op, (long long)C);
    static const char *names[2][4] = {{"LTS", "UTE", "", ""}, {"LTS", "LTE", "UTS", "UTE"}};
    if (!pdi_host_read(idx, op)) return pd_last_status(); /* the values are checked on the host */
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hm; h++)
            for (int64_t j = 0; j < Sk; j++)
                for (int64_t c = 0; c < C; c++) {
                    int32_t x = idx_at(idx, b, h, j, c);
                    if (x < 0 || x > Sq)
                        return pdi_errorf(PD_ERR_INVALID,
                                          "%s: startend_row_indices[%lld, %lld, %lld, "
                                          "%lld] (%s) = %d is outside "
                                          "[0, Sq = %lld]: row indices name query rows",
                                          op, (long long)b, (long long)h, (long long)j, (long long)c,
                                          C == 4 || causal ? names[1][c] : names[0][c], (int)x, (long long)Sq);
                }
    return PD_OK;
}

/* q [B, Sq, Hq, D], k [B, Sk, Hk, D], v [B, Sk, Hk, Dv], [idx]. */
static int check_inputs(const char *op, struct pdi_call *c)
{
    const struct pdi_attrs *a = &c->a;
    if (!(a->f[0] > 0) || isinf(a->f[0]))
        return pdi_errorf(PD_ERR_INVALID, "%s: scale must be positive and finite, got %g", op, a->f[0]);
    if (!(a->f[1] >= 0 && a->f[1] < 1))
        return pdi_errorf(PD_ERR_INVALID, "%s: dropout must be in [0, 1), got %g", op, a->f[1]);
    const struct pd_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
    int rc = pdi_attention_check_qkv(op, q, k, v, 2, "q [B, Sq, Hq, D], k [B, Sk, Hk, D], v [B, Sk, Hk, Dv]");
    if (rc) return rc;
    int64_t hk = k->shape[2];
    int has_idx = a->i[1] != 0;
    if (!has_idx) return PD_OK;
    return pdi_flashmask_check_indices(op, c->in[3], a->i[0] != 0, q->shape[0], q->shape[1], k->shape[1], hk);
}

int pdi_infer_flashmask(struct pdi_call *c)
{
    int has_idx = c->a.i[1] != 0;
    if (c->n_in != 3 + has_idx || c->n_out != 2)
        return pdi_errorf(PD_ERR_INVALID, "flashmask: expected %d inputs and 2 outputs, got %d and %d", 3 + has_idx,
                          c->n_in, c->n_out);
    int rc = check_inputs("flashmask", c);
    if (rc) return rc;
    pdi_attention_infer_outputs(c, 2);
    return PD_OK;
}

int pdi_infer_flashmask_backward(struct pdi_call *c)
{
    int has_idx = c->a.i[1] != 0;
    if (c->n_in != 6 + has_idx || c->n_out != 3)
        return pdi_errorf(PD_ERR_INVALID, "flashmask_backward: expected %d inputs and 3 outputs, got %d and %d",
                          6 + has_idx, c->n_in, c->n_out);
    int rc = check_inputs("flashmask_backward", c);
    if (rc) return rc;
    return pdi_attention_infer_backward(c, "flashmask_backward", has_idx, 2);
}

int pdi_vjp_flashmask_backward(struct pdi_node *n, struct pd_tensor *const *gout, struct pd_tensor **gin)
{
    PDI_UNUSED(n);
    PDI_UNUSED(gout);
    PDI_UNUSED(gin);
    return pdi_attention_backward_not_differentiable("flashmask");
}

/* [B, S, H, X] <-> [B, H, S, X] (a view). */
static struct pd_tensor *bhsd(struct pd_tensor *x) { return x ? pd_transpose(x, 1, 2) : NULL; }

/* The dropout multipliers of the op as a dense [B, Hq, Sq, Sk] tensor
 * (0 or 1/(1-p)), by the kernels' rule: weight (b, h, i, j) is kept iff the
 * Philox word at counter offset + ((b Hq + h) Sq + i) Sk + j is at least
 * p 2^32. */
static struct pd_tensor *dropout_keep(const struct pdi_attrs *a, int64_t B, int64_t Hq, int64_t Sq, int64_t Sk,
                                      enum pd_dtype dt)
{
    int64_t shape[4] = {B, Hq, Sq, Sk}, n = B * Hq * Sq * Sk;
    double p = a->f[1], kept = 1.0 / (1.0 - p);
    uint64_t thr = pdi_flashmask_keep_threshold(p);
    uint32_t *w = malloc(sizeof *w * (size_t)(n ? n : 1));
    double *z = malloc(sizeof *z * (size_t)(n ? n : 1));
    if (!w || !z) {
        free(w), free(z);
        return pdi_error(PD_ERR_NOMEM, "flashmask: out of memory for the dropout mask of %lld weights", (long long)n);
    }
    pd_philox_fill((uint64_t)a->i[2], (uint64_t)a->i[3], w, n);
    for (int64_t i = 0; i < n; i++) z[i] = w[i] >= thr ? kept : 0.0;
    struct pd_tensor *t = pd_from_buffer(z, shape, 4, PD_F64);
    free(w), free(z);
    return t && dt != PD_F64 ? pd_cast(t, dt) : t;
}

/* Visible keys as bool broadcastable to [B, Hq, Sq, Sk]: the dense mask
 * with its heads repeated over the query groups, or causal alone. */
static struct pd_tensor *visible_of(struct pd_tensor *idx, int causal, int64_t Sq, int64_t Sk, int64_t G)
{
    if (idx) {
        struct pd_tensor *d = pd_flashmask_to_dense(idx, causal, Sq);
        return d && d->shape[1] > 1 ? pdi_expand_heads(d, G) : d;
    }
    return causal ? pdi_attention_causal_visible(Sq, Sk) : NULL;
}

static int vjp_composed(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int has_idx = n->a.i[1] != 0, causal = n->a.i[0] != 0;
    struct pd_tensor *q = pdi_node_in(n, 0), *k = pdi_node_in(n, 1), *v = pdi_node_in(n, 2);
    struct pd_tensor *idx = has_idx ? pdi_node_in(n, 3) : NULL;
    if (!q || !k || !v || (has_idx && !idx)) return pd_last_status();
    int64_t B = q->shape[0], Sq = q->shape[1], Hq = q->shape[2], Sk = k->shape[1], Hk = k->shape[2];
    struct pd_tensor *vis = visible_of(idx, causal, Sq, Sk, Hk ? Hq / Hk : 1);
    if ((idx || causal) && !vis) return pd_last_status();
    struct pd_tensor *keep = NULL;
    if (n->a.f[1] > 0 && !(keep = dropout_keep(&n->a, B, Hq, Sq, Sk, q->dtype))) return pd_last_status();
    struct pdi_attn_vjp a = {.q = bhsd(q),
                             .k = bhsd(k),
                             .v = bhsd(v),
                             .visible = vis,
                             .keep = keep,
                             .gout = bhsd(g[0]),
                             .glse = g[1],
                             .scale = n->a.f[0]};
    struct pd_tensor *gq = NULL, *gk = NULL, *gv = NULL;
    int rc = pdi_attention_vjp_composed(&a, pdi_node_needs(n, 0) ? &gq : NULL, pdi_node_needs(n, 1) ? &gk : NULL,
                                        pdi_node_needs(n, 2) ? &gv : NULL, NULL);
    if (rc) return rc;
    gin[0] = bhsd(gq);
    gin[1] = bhsd(gk);
    gin[2] = bhsd(gv);
    return PD_OK;
}

int pdi_vjp_flashmask(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    int has_idx = n->a.i[1] != 0;
    if (pd_is_grad_enabled() || n->a.i[4]) return vjp_composed(n, g, gin);
    return pdi_attention_vjp_fused(n, g, gin, PD_OP_flashmask_backward, 3 + has_idx);
}

struct pd_tensor *pdi_flashmask_window(int64_t B, int64_t Sq, int64_t Sk, int64_t left, int64_t right, int causal)
{
    if (B < 0 || Sq < 0 || Sk < 0 || left < 0 || right < 0)
        return pdi_error(PD_ERR_INVALID,
                         "flashmask: a window needs sizes and (left, right) >= 0, "
                         "got B %lld, Sq %lld, Sk %lld, "
                         "window (%lld, %lld)",
                         (long long)B, (long long)Sq, (long long)Sk, (long long)left, (long long)right);
    int64_t C = causal ? 1 : 2, shape[4] = {B, 1, Sk, C}, off = Sk - Sq;
    int32_t *x = malloc(sizeof *x * (size_t)(Sk * C + 1));
    if (!x) return pdi_error(PD_ERR_NOMEM, "flashmask: out of memory for window indices");
    for (int64_t j = 0; j < Sk; j++) {
        /* query i (aligned to key i + off) sees key j iff i + off - left <= j <= i
         * + off + right */
        int64_t lts = j - off + left + 1, ute = j - off - right;
        lts = lts < 0 ? 0 : lts > Sq ? Sq : lts;
        ute = ute < 0 ? 0 : ute > Sq ? Sq : ute;
        x[j * C] = (int32_t)lts;
        if (!causal) x[j * C + 1] = (int32_t)ute;
    }
    int64_t one[4] = {1, 1, Sk, C};
    struct pd_tensor *t = pd_expand(pd_from_buffer(x, one, 4, PD_I32), shape, 4);
    free(x);
    return pd_contiguous(t);
}

struct pd_tensor *pd_flashmask_attention(struct pd_tensor *q, struct pd_tensor *k, struct pd_tensor *v,
                                         struct pd_tensor *startend_row_indices, int causal, const int64_t *window,
                                         double scale, double dropout, struct pd_tensor **lse)
{
    if (lse) *lse = NULL;
    if (!q || !k || !v) return NULL;
    if (window && startend_row_indices)
        return pdi_error(PD_ERR_INVALID, "flashmask: give a window or startend_row_indices, not both");
    if (pdi_attention_scale("flashmask", q, &scale)) return NULL;
    if (!(dropout >= 0 && dropout < 1))
        return pdi_error(PD_ERR_INVALID, "flashmask: dropout must be in [0, 1), got %g", dropout);
    pd_scope_begin();
    struct pd_tensor *idx = startend_row_indices;
    if (window && q->ndim == 4 && k->ndim == 4 &&
        !(idx = pdi_flashmask_window(q->shape[0], q->shape[1], k->shape[1], window[0], window[1], causal))) {
        pd_scope_end();
        return NULL;
    }
    struct pd_tensor *in[4] = {q, k, v, idx}, *out[2];
    struct pdi_call c = {.op = PD_OP_flashmask, .n_in = idx ? 4 : 3, .n_out = 2, .in = in, .out = out};
    c.a.i[0] = causal != 0;
    c.a.i[1] = idx != NULL;
    c.a.i[4] = lse != NULL;
    c.a.f[0] = scale;
    c.a.f[1] = dropout;
    if (dropout > 0 && q->ndim == 4 && k->ndim == 4) {
        /* one counter per (b, h, i, j), taken from the default generator */
        struct pd_generator *g = pd_default_generator();
        uint64_t seed, offset, n = (uint64_t)(q->shape[0] * q->shape[2] * q->shape[1] * k->shape[1]);
        pd_generator_get_state(g, &seed, &offset);
        pd_generator_set_state(g, seed, offset + ((n + 3) & ~(uint64_t)3));
        c.a.i[2] = (int64_t)seed;
        c.a.i[3] = (int64_t)offset;
    }
    /* The inner scope drops the handles not returned and moves the results
     * out (to the caller's scope, or to the caller outside any). */
    struct pd_tensor *r = NULL;
    if (!pdi_dispatch(&c)) {
        r = pd_keep(out[0]);
        if (lse) *lse = pd_keep(out[1]);
    }
    pd_scope_end();
    return r;
}
