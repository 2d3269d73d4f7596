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
 *     a path for higher orders and tests, not for long sequences);
 *   - the decomposition (pdi_decomp_flashmask) and that composed VJP share
 *     one dense mask (pdi_flashmask_dense, also behind
 *     pd_flashmask_to_dense) and one dropout draw (dropout_keep), both
 *     built from public ops and equal to the kernels' decisions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kernels/cpu/flashmask.h"
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
    /* The values are checked on the host, a validation read: the
     * distribute stage's global infer skips it on a distributed idx (the
     * shapes above are checked), and each rank's local call checks its
     * piece's values. */
    const void *data;
    int rc = pdi_host_validate(idx, op, &data);
    if (rc || !data) return rc;
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
    const struct pdi_attrs_flashmask *a = &c->a.flashmask;
    int rc = pdi_attention_check_scale(op, c);
    if (rc) return rc;
    if (!(a->dropout_p >= 0 && a->dropout_p < 1))
        return pdi_errorf(PD_ERR_INVALID, "%s: dropout must be in [0, 1), got %g", op, a->dropout_p);
    const struct pd_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
    rc = pdi_attention_check_qkv(op, q, k, v, 2, "q [B, Sq, Hq, D], k [B, Sk, Hk, D], v [B, Sk, Hk, Dv]");
    if (rc) return rc;
    int64_t hk = k->shape[2];
    int has_idx = a->has_idx != 0;
    if (!has_idx) return PD_OK;
    return pdi_flashmask_check_indices(op, c->in[3], a->causal != 0, q->shape[0], q->shape[1], k->shape[1], hk);
}

int pdi_infer_flashmask(struct pdi_call *c)
{
    int has_idx = c->a.flashmask.has_idx != 0;
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
    int has_idx = c->a.flashmask.has_idx != 0;
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

/* The dropout multipliers of the op as a dense [B, Hq, Sq, Sk] tensor of
 * dtype dt (0 or 1/(1-p), formed in f64), by the kernels' rule: weight
 * (b, h, i, j) is kept iff the Philox word w at counter
 * dropout_offset + ((b Hq + h) Sq + i) Sk + j of key dropout_seed is at
 * least thr = pdi_flashmask_keep_threshold(p). Drawn with public ops: a
 * Bernoulli draw of probability thr 2^-32 from a generator at (key,
 * counter base) uses that word for element (b, h, i, j) and draws 1 iff
 * (w + 1/2) 2^-32 < thr 2^-32, that is iff w < thr: exactly the dropped
 * weights (thr 2^-32 and (w + 1/2) 2^-32 are exact in f64). */
static struct pd_tensor *dropout_keep(const struct pdi_attrs_flashmask *a, int64_t B, int64_t Hq, int64_t Sq,
                                      int64_t Sk, enum pd_dtype dt)
{
    int64_t shape[4] = {B, Hq, Sq, Sk};
    double p = a->dropout_p, kept = 1.0 / (1.0 - p);
    double thr = (double)pdi_flashmask_keep_threshold(p) * 0x1p-32;
    struct pd_generator *g = pd_generator_create((uint64_t)a->dropout_seed);
    if (!g) return NULL;
    pd_generator_set_state(g, (uint64_t)a->dropout_seed, (uint64_t)a->dropout_offset);
    struct pd_tensor *drop = pd_bernoulli(pd_expand(pd_scalar(thr, PD_F64), shape, 4), g);
    pd_generator_destroy(g);
    struct pd_tensor *z = pd_scale(pd_add_scalar(pd_neg(drop), 1.0), kept);
    return z && dt != PD_F64 ? pd_cast(z, dt) : z;
}

struct pd_tensor *pdi_flashmask_dense(struct pd_tensor *idx, int causal, int64_t Sq)
{
    if (!idx) return NULL;
    int64_t Sk = idx->shape[2], C = idx->shape[3], rs[2] = {Sq, 1};
    struct pd_tensor *col[4] = {NULL, NULL, NULL, NULL};
    for (int64_t c = 0; c < C && c < 4; c++) col[c] = pd_transpose(pd_slice(idx, 3, c, c + 1, 1), 2, 3);
    struct pd_tensor *i = pd_reshape(pd_arange(0, (double)Sq, 1, PD_I32), rs, 2); /* query rows [Sq, 1] */
    /* rows masked in column j: [LTS, LTE) u [UTS, UTE), an absent LTE being
     * Sq and absent UTS, UTE 0 (kernels/flashmask_rules.h) */
    struct pd_tensor *m = pd_ge(i, col[0]);
    if (causal ? C == 2 : C == 4) m = pd_logical_and(m, pd_lt(i, col[1]));
    if (!causal && C == 2) m = pd_logical_or(m, pd_lt(i, col[1]));
    if (C == 4) m = pd_logical_or(m, pd_logical_and(pd_ge(i, col[2]), pd_lt(i, col[3])));
    struct pd_tensor *vis = pd_logical_not(m);
    return causal ? pd_logical_and(vis, pdi_attention_causal_visible(Sq, Sk)) : vis;
}

/* Visible keys as bool broadcastable to [B, Hq, Sq, Sk]: the dense mask
 * with its heads repeated over the query groups, or causal alone. */
static struct pd_tensor *visible_of(struct pd_tensor *idx, int causal, int64_t Sq, int64_t Sk, int64_t G)
{
    if (idx) {
        struct pd_tensor *d = pdi_flashmask_dense(idx, causal, Sq);
        return d && d->shape[1] > 1 ? pdi_expand_heads(d, G) : d;
    }
    return causal ? pdi_attention_causal_visible(Sq, Sk) : NULL;
}

static int vjp_composed(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    const struct pdi_attrs_flashmask *fa = &n->a.flashmask;
    int has_idx = fa->has_idx != 0, causal = fa->causal != 0;
    struct pd_tensor *q = pdi_node_in(n, 0), *k = pdi_node_in(n, 1), *v = pdi_node_in(n, 2);
    struct pd_tensor *idx = has_idx ? pdi_node_in(n, 3) : NULL;
    if (!q || !k || !v || (has_idx && !idx)) return pd_last_status();
    int64_t B = q->shape[0], Sq = q->shape[1], Hq = q->shape[2], Sk = k->shape[1], Hk = k->shape[2];
    struct pd_tensor *vis = visible_of(idx, causal, Sq, Sk, Hk ? Hq / Hk : 1);
    if ((idx || causal) && !vis) return pd_last_status();
    struct pd_tensor *keep = NULL;
    if (fa->dropout_p > 0 && !(keep = dropout_keep(fa, B, Hq, Sq, Sk, q->dtype))) return pd_last_status();
    struct pdi_attn a = {.q = bhsd(q),
                         .k = bhsd(k),
                         .v = bhsd(v),
                         .visible = vis,
                         .keep = keep,
                         .gout = bhsd(g[0]),
                         .glse = g[1],
                         .scale = fa->scale};
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
    if (pd_is_grad_enabled() || n->a.flashmask.lse_returned) return vjp_composed(n, g, gin);
    return pdi_attention_vjp_fused(n, g, gin, PD_OP_flashmask_backward);
}

/* flashmask from primitive ops: the mask made dense (pdi_flashmask_dense),
 * the dropout multipliers drawn as the kernels draw them (dropout_keep),
 * then the composed softmax attention in [B, H, S, X] layout. */
int pdi_decomp_flashmask(const struct pdi_call *c, struct pd_tensor **out)
{
    const struct pdi_attrs_flashmask *fa = &c->a.flashmask;
    struct pd_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2], *idx = fa->has_idx ? c->in[3] : NULL;
    int64_t B = q->shape[0], Sq = q->shape[1], Hq = q->shape[2], Sk = k->shape[1], Hk = k->shape[2];
    struct pd_tensor *vis = visible_of(idx, fa->causal != 0, Sq, Sk, Hk ? Hq / Hk : 1), *keep = NULL, *o;
    if ((idx || fa->causal) && !vis) return pdi_status_of(NULL, "flashmask decomposition");
    if (fa->dropout_p > 0 && !(keep = dropout_keep(fa, B, Hq, Sq, Sk, pdi_attention_lse_dtype(q->dtype))))
        return pdi_status_of(NULL, "flashmask decomposition");
    struct pdi_attn a = {.q = bhsd(q), .k = bhsd(k), .v = bhsd(v), .visible = vis, .keep = keep, .scale = fa->scale};
    int rc = pdi_attention_composed(&a, &o, &out[1]);
    if (rc) return rc;
    out[0] = pd_contiguous(bhsd(o)); /* [B, Sq, Hq, Dv] */
    return pdi_status_of(out[0], "flashmask decomposition");
}

int pd_flashmask_count_tiles(struct pd_tensor *idx, int causal, int64_t B, int64_t Sq, int64_t Sk, int64_t Hq,
                             int64_t Hk, struct pd_flashmask_tiles *out)
{
    if (!out) return pdi_errorf(PD_ERR_INVALID, "pd_flashmask_count_tiles: out is NULL");
    if (B < 0 || Sq < 0 || Sk < 0 || Hq < 0 || Hk < 0 || (Hk == 0 ? Hq != 0 : Hq % Hk != 0))
        return pdi_errorf(PD_ERR_INVALID,
                          "pd_flashmask_count_tiles: B = %lld, Sq = %lld, Sk = %lld must be >= 0 and Hq = %lld a "
                          "multiple of Hk = %lld",
                          (long long)B, (long long)Sq, (long long)Sk, (long long)Hq, (long long)Hk);
    /* Row indices are int32, and the counts (up to B * Hq * Sq * Sk, the
     * attention's score elements) must fit an int64. */
    int64_t bh, bhq, cells;
    if (Sq > INT32_MAX || Sk > INT32_MAX || !pdi_mul_ok(B, Hq, &bh) || !pdi_mul_ok(bh, Sq, &bhq) ||
        !pdi_mul_ok(bhq, Sk, &cells))
        return pdi_errorf(PD_ERR_INVALID,
                          "pd_flashmask_count_tiles: B = %lld, Hq = %lld, Sq = %lld, Sk = %lld are too large "
                          "(Sq, Sk <= 2^31 - 1; B * Hq * Sq * Sk must fit an int64)",
                          (long long)B, (long long)Hq, (long long)Sq, (long long)Sk);
    /* Not an op: a distributed idx is counted whole on every rank (an
     * all-gather of the indices), never its piece as if it were whole. */
    int tok = pd_scope_begin();
    struct pd_tensor *whole = idx && idx->dist && pdi_dist_hooks ? pdi_dist_hooks->full(idx) : idx;
    int rc = idx && !whole ? pd_last_status() : PD_OK;
    if (!rc && whole) rc = pdi_flashmask_check_indices("pd_flashmask_count_tiles", whole, causal != 0, B, Sq, Sk, Hk);
    struct pd_kview iv;
    if (!rc && whole) pdi_kview_of(whole, &iv);
    if (!rc) rc = pdi_flashmask_count_tiles(whole ? &iv : NULL, causal, B, Sq, Sk, Hq, out);
    pd_scope_end(tok);
    return rc;
}

struct pd_tensor *pdi_flashmask_window(int64_t B, int64_t Sq, int64_t Sk, int64_t left, int64_t right, int causal)
{
    if (B < 0 || Sq < 0 || Sk < 0 || left < 0 || right < 0)
        return pdi_error(PD_ERR_INVALID,
                         "flashmask: a window needs sizes and (left, right) >= 0, "
                         "got B %lld, Sq %lld, Sk %lld, "
                         "window (%lld, %lld)",
                         (long long)B, (long long)Sq, (long long)Sk, (long long)left, (long long)right);
    if (Sq > INT32_MAX || Sk > INT32_MAX)
        return pdi_error(PD_ERR_INVALID,
                         "flashmask: a window needs Sq, Sk <= 2^31 - 1 (int32 row indices), got %lld, %lld",
                         (long long)Sq, (long long)Sk);
    /* a side longer than both sequences sees them whole: clamped, the
     * index arithmetic below stays in range (any int64 arrives here) */
    left = pdi_clamp64(left, 0, Sq + Sk);
    right = pdi_clamp64(right, 0, Sq + Sk);
    int64_t C = causal ? 1 : 2, shape[4] = {B, 1, Sk, C}, off = Sk - Sq;
    int32_t *x = pdi_malloc(sizeof *x * (size_t)(Sk * C + 1));
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
    int scope_tok = pd_scope_begin();
    struct pd_tensor *idx = startend_row_indices;
    if (window && q->ndim == 4 && k->ndim == 4 &&
        !(idx = pdi_flashmask_window(q->shape[0], q->shape[1], k->shape[1], window[0], window[1], causal))) {
        pd_scope_end(scope_tok);
        return NULL;
    }
    struct pd_tensor *in[4] = {q, k, v, idx}, *out[2];
    struct pdi_call c = {.op = PD_OP_flashmask, .n_in = idx ? 4 : 3, .n_out = 2, .in = in, .out = out};
    struct pdi_attrs_flashmask *a = &c.a.flashmask;
    *a = (struct pdi_attrs_flashmask){.causal = causal != 0,
                                      .scale = scale,
                                      .has_idx = idx != NULL,
                                      .dropout_p = dropout,
                                      .lse_returned = lse != NULL};
    if (dropout > 0 && q->ndim == 4 && k->ndim == 4) {
        /* one counter per (b, h, i, j), taken from the default generator */
        struct pd_generator *g = pd_default_generator();
        uint64_t seed, offset, n = (uint64_t)(q->shape[0] * q->shape[2] * q->shape[1] * k->shape[1]);
        pd_generator_get_state(g, &seed, &offset);
        pd_generator_set_state(g, seed, offset + ((n + 3) & ~(uint64_t)3));
        a->dropout_seed = (int64_t)seed;
        a->dropout_offset = (int64_t)offset;
    }
    /* The inner scope drops the handles not returned and moves the results
     * out (to the caller's scope, or to the caller outside any). */
    struct pd_tensor *r = NULL;
    if (!pdi_dispatch(&c)) {
        r = pd_keep(out[0]);
        if (lse) *lse = pd_keep(out[1]);
    }
    pd_scope_end(scope_tok);
    return r;
}
