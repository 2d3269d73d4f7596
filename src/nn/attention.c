/* paddle.c — grouped-query attention with RoPE, and the pre-norm decoder
 * block (the Llama layer).
 *
 * Shapes: x [B, T, dim]; q [B, T, Hq, D] and k, v [B, T, Hkv, D] straight
 * from the projections (views, no copy); RoPE on [B, T, H, D]; the
 * transposes to [B, H, T, D] are strided views handed to sdpa as they are.
 * The only copy is sdpa's output back to [B, T, Hq*D] for o_proj.
 * KV cache (optional, owned by the caller): per layer k and v
 * [B, Hkv, max_len, D]; the step writes [past, past+T) with pd_copy_ into a
 * slice view and attends over the slice [0, past+T) — no copy of the cache.
 *
 * Two attention kernels. FlashMask (pd_flashmask_attention) takes q, k, v
 * in the projections' own layout [B, T, H, D], so there is no transpose at
 * all, and its output [B, T, Hq, D] is o_proj's input as it is; its masks
 * are column-wise row ranges (a document mask is O(T), not O(T^2)). sdpa
 * takes [B, H, T, D] and dense masks. FlashMask runs whenever it can: no
 * KV cache (the cache is [B, Hkv, max_len, D], sdpa's layout) and no dense
 * mask (pad masks of batched generation). A FlashMask mask
 * (startend_row_indices) forces FlashMask unless PD_ATTN=sdpa, which turns
 * it into a dense mask for sdpa (the reference path of the tests).
 * PD_ATTN=sdpa|flashmask overrides the choice for the plain causal case;
 * unset, it uses PD_ATTN_DEFAULT below (the faster one on the train bench).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_internal.h"
#include "pd/flashmask.h"
#include "pd/nn.h"
#include "pd/ops.h"

int pdi_nn_attention_init(struct pd_nn_attention *a, int64_t dim, int n_heads, int n_kv_heads, double rope_theta,
                          struct pdi_nn_arena *ar)
{
    memset(a, 0, sizeof *a);
    if (n_heads <= 0 || n_kv_heads <= 0 || dim <= 0 || dim % n_heads || n_heads % n_kv_heads)
        return pdi_errorf(PD_ERR_INVALID,
                          "nn.attention: need dim %% n_heads == 0 and n_heads %% n_kv_heads == 0, got dim %lld, "
                          "n_heads %d, n_kv_heads %d",
                          (long long)dim, n_heads, n_kv_heads);
    if ((dim / n_heads) % 2)
        return pdi_errorf(PD_ERR_INVALID, "nn.attention: head_dim (dim / n_heads = %lld) must be even for RoPE",
                          (long long)(dim / n_heads));
    if (!(rope_theta > 0 && rope_theta < INFINITY)) return pdi_errorf(PD_ERR_INVALID, "nn.attention: rope_theta must be finite and > 0, got %g", rope_theta);
    a->n_heads = n_heads;
    a->n_kv_heads = n_kv_heads;
    a->head_dim = (int)(dim / n_heads);
    a->rope_theta = rope_theta;
    int64_t kvd = (int64_t)n_kv_heads * a->head_dim;
    int st = pdi_nn_linear_init(&a->q_proj, dim, dim, 0, ar);
    if (!st) st = pdi_nn_linear_init(&a->k_proj, dim, kvd, 0, ar);
    if (!st) st = pdi_nn_linear_init(&a->v_proj, dim, kvd, 0, ar);
    if (!st) st = pdi_nn_linear_init(&a->o_proj, dim, dim, 0, ar);
    if (st) pdi_nn_attention_fini(a);
    return st;
}

int pdi_nn_attention_reset(struct pd_nn_attention *a, struct pd_generator *g)
{
    int st = pdi_nn_linear_reset(&a->q_proj, g);
    if (!st) st = pdi_nn_linear_reset(&a->k_proj, g);
    if (!st) st = pdi_nn_linear_reset(&a->v_proj, g);
    if (!st) st = pdi_nn_linear_reset(&a->o_proj, g);
    return st;
}

void pdi_nn_attention_fini(struct pd_nn_attention *a)
{
    pdi_nn_linear_fini(&a->q_proj);
    pdi_nn_linear_fini(&a->k_proj);
    pdi_nn_linear_fini(&a->v_proj);
    pdi_nn_linear_fini(&a->o_proj);
}

struct pd_nn_attention *pd_nn_attention_create(int64_t dim, int n_heads, int n_kv_heads, double rope_theta,
                                               struct pd_generator *g)
{
    struct pd_nn_attention *a = pdi_malloc(sizeof *a);
    if (!a) return pdi_error(PD_ERR_NOMEM, "nn.attention: out of memory");
    if (pdi_nn_attention_init(a, dim, n_heads, n_kv_heads, rope_theta, NULL)) {
        free(a);
        return NULL;
    }
    if (pdi_nn_attention_reset(a, g)) {
        pd_nn_attention_destroy(a);
        return NULL;
    }
    return a;
}

void pd_nn_attention_destroy(struct pd_nn_attention *a)
{
    if (!a) return;
    pdi_nn_attention_fini(a);
    free(a);
}

/* Checks a cache tensor against [B, Hkv, >= need, D]. */
static int check_cache(const struct pd_tensor *c, const char *which, int64_t b, int64_t hkv, int64_t need, int64_t d,
                       enum pd_dtype dt)
{
    if (!c) return pdi_errorf(PD_ERR_INVALID, "nn.attention: %s cache is NULL while the other is given", which);
    if (c->ndim != 4 || c->shape[0] != b || c->shape[1] != hkv || c->shape[3] != d || c->dtype != dt) {
        char s[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_INVALID, "nn.attention: %s cache is %s %s, expected %s [%lld, %lld, max_len, %lld]",
                          which, pd_dtype_name(c->dtype), pdi_shape_str(c->shape, c->ndim, s, sizeof s),
                          pd_dtype_name(dt), (long long)b, (long long)hkv, (long long)d);
    }
    if (need > c->shape[2])
        return pdi_errorf(PD_ERR_INVALID, "nn.attention: %s cache holds %lld positions, %lld needed", which,
                          (long long)c->shape[2], (long long)need);
    return PD_OK;
}

enum attn_kernel { ATTN_SDPA, ATTN_FLASHMASK };
/* FlashMask: on the train bench (2 threads, Zen 5, f32) 0.290-0.301 s per
 * step against sdpa's 0.323-0.347 (two runs each, docs/benchmarks.md); it
 * takes [B, T, H, D] as the projections give it, sdpa needs transposes. */
#define PD_ATTN_DEFAULT ATTN_FLASHMASK

/* PD_ATTN, read once (a process-wide knob like PD_GEMM); unknown values
 * fall back to the default. Read under pthread_once: models on several
 * threads ask at the same time (a lazily set static was a data race). */
static enum attn_kernel attn_kernel_value = PD_ATTN_DEFAULT;
static pthread_once_t attn_kernel_once = PTHREAD_ONCE_INIT;

static void attn_kernel_read(void)
{
    const char *s = getenv("PD_ATTN");
    attn_kernel_value = s && !strcmp(s, "sdpa") ? ATTN_SDPA : s && !strcmp(s, "flashmask") ? ATTN_FLASHMASK
                                                                                           : PD_ATTN_DEFAULT;
}

static enum attn_kernel attn_kernel(void)
{
    pthread_once(&attn_kernel_once, attn_kernel_read);
    return attn_kernel_value;
}

struct pd_tensor *pdi_nn_attention_forward(struct pd_nn_attention *a, struct pd_tensor *x, struct pd_tensor *positions,
                                           struct pd_tensor *mask, struct pd_tensor *startend_row_indices, int causal,
                                           struct pd_tensor *k_cache, struct pd_tensor *v_cache, int64_t past_len)
{
    if (!a) return pdi_error(PD_ERR_NULL, "nn.attention: module is NULL");
    if (!x || !positions) return NULL;
    int64_t dim = a->q_proj.in_features, hd = a->head_dim, hq = a->n_heads, hkv = a->n_kv_heads;
    if (x->ndim != 3 || x->shape[2] != dim) {
        char s[PDI_SHAPE_BUF];
        return pdi_error(PD_ERR_INVALID, "nn.attention: x is %s, expected [B, T, %lld]",
                         pdi_shape_str(x->shape, x->ndim, s, sizeof s), (long long)dim);
    }
    int64_t b = x->shape[0], t = x->shape[1];
    if (startend_row_indices && (mask || k_cache || v_cache))
        return pdi_error(PD_ERR_INVALID, "nn.attention: a FlashMask mask (startend_row_indices) cannot be combined "
                                         "with a dense mask or a KV cache");
    if (k_cache || v_cache) {
        if (past_len < 0) return pdi_error(PD_ERR_INVALID, "nn.attention: past_len must be >= 0, got %lld", (long long)past_len);
        enum pd_dtype cdt = a->q_proj.weight->dtype; /* the module's parameter dtype */
        if (check_cache(k_cache, "k", b, hkv, past_len + t, hd, cdt) ||
            check_cache(v_cache, "v", b, hkv, past_len + t, hd, cdt))
            return NULL;
    }
    struct pd_tensor *q = pd_view(pd_nn_linear_forward(&a->q_proj, x), (int64_t[]){b, t, hq, hd}, 4);
    struct pd_tensor *k = pd_view(pd_nn_linear_forward(&a->k_proj, x), (int64_t[]){b, t, hkv, hd}, 4);
    struct pd_tensor *v = pd_view(pd_nn_linear_forward(&a->v_proj, x), (int64_t[]){b, t, hkv, hd}, 4);
    q = pd_rope(q, positions, a->rope_theta); /* [B, T, Hq, D] */
    k = pd_rope(k, positions, a->rope_theta); /* [B, T, Hkv, D] */
    double scale = 1.0 / sqrt((double)hd);
    enum attn_kernel kern = attn_kernel();
    int flash = !mask && !k_cache && (startend_row_indices ? kern != ATTN_SDPA : kern == ATTN_FLASHMASK);
    struct pd_tensor *o;
    if (flash) {
        o = pd_flashmask_attention(q, k, v, startend_row_indices, causal, NULL, scale, 0.0, NULL); /* [B, T, Hq, D] */
    } else {
        if (startend_row_indices) /* PD_ATTN=sdpa: the same mask, dense, [B, 1, T, T] */
            mask = pd_flashmask_to_dense(startend_row_indices, causal, t);
        q = pd_transpose(q, 1, 2); /* [B, Hq, T, D] strided */
        k = pd_transpose(k, 1, 2); /* [B, Hkv, T, D] */
        v = pd_transpose(v, 1, 2);
        if (k_cache) {
            if (!pd_copy_(pd_slice(k_cache, 2, past_len, past_len + t, 1), k) ||
                !pd_copy_(pd_slice(v_cache, 2, past_len, past_len + t, 1), v))
                return NULL;
            k = pd_slice(k_cache, 2, 0, past_len + t, 1);
            v = pd_slice(v_cache, 2, 0, past_len + t, 1);
        }
        o = pd_transpose(pd_sdpa(q, k, v, mask, causal, scale), 1, 2); /* [B, T, Hq, D] */
    }
    return pd_nn_linear_forward(&a->o_proj, pd_reshape(o, (int64_t[]){b, t, hq * hd}, 3));
}

struct pd_tensor *pd_nn_attention_forward(struct pd_nn_attention *a, struct pd_tensor *x, struct pd_tensor *positions,
                                          struct pd_tensor *mask, int causal, struct pd_tensor *k_cache,
                                          struct pd_tensor *v_cache, int64_t past_len)
{
    return pdi_nn_attention_forward(a, x, positions, mask, NULL, causal, k_cache, v_cache, past_len);
}

int pd_nn_attention_params(struct pd_nn_attention *a, const char *prefix, struct pd_state_dict *sd)
{
    if (!a) return pdi_errorf(PD_ERR_NULL, "nn.attention: module is NULL");
    char b[512];
    int st = pd_nn_linear_params(&a->q_proj, pdi_nn_join(b, sizeof b, prefix, "q_proj"), sd);
    if (!st) st = pd_nn_linear_params(&a->k_proj, pdi_nn_join(b, sizeof b, prefix, "k_proj"), sd);
    if (!st) st = pd_nn_linear_params(&a->v_proj, pdi_nn_join(b, sizeof b, prefix, "v_proj"), sd);
    if (!st) st = pd_nn_linear_params(&a->o_proj, pdi_nn_join(b, sizeof b, prefix, "o_proj"), sd);
    return st;
}

/* ---- decoder block ---------------------------------------------------- */

int pdi_nn_block_init(struct pd_nn_block *b, int64_t dim, int n_heads, int n_kv_heads, int64_t hidden,
                      double norm_eps, double rope_theta, struct pdi_nn_arena *ar)
{
    memset(b, 0, sizeof *b);
    /* Hugging Face's state-dict order (attention, mlp, then the norms), so
     * a flat buffer lies in the same order as the names. */
    int st = pdi_nn_attention_init(&b->self_attn, dim, n_heads, n_kv_heads, rope_theta, ar);
    if (!st) st = pdi_nn_mlp_init(&b->mlp, dim, hidden, ar);
    if (!st) st = pdi_nn_rmsnorm_init(&b->input_layernorm, dim, norm_eps, ar);
    if (!st) st = pdi_nn_rmsnorm_init(&b->post_attention_layernorm, dim, norm_eps, ar);
    if (st) pdi_nn_block_fini(b);
    return st;
}

int pdi_nn_block_reset(struct pd_nn_block *b, struct pd_generator *g)
{
    int st = pdi_nn_attention_reset(&b->self_attn, g);
    return st ? st : pdi_nn_mlp_reset(&b->mlp, g);
}

void pdi_nn_block_fini(struct pd_nn_block *b)
{
    pdi_nn_rmsnorm_fini(&b->input_layernorm);
    pdi_nn_attention_fini(&b->self_attn);
    pdi_nn_rmsnorm_fini(&b->post_attention_layernorm);
    pdi_nn_mlp_fini(&b->mlp);
}

struct pd_nn_block *pd_nn_block_create(int64_t dim, int n_heads, int n_kv_heads, int64_t hidden_dim,
                                       double norm_eps, double rope_theta, struct pd_generator *g)
{
    struct pd_nn_block *b = pdi_malloc(sizeof *b);
    if (!b) return pdi_error(PD_ERR_NOMEM, "nn.block: out of memory");
    if (pdi_nn_block_init(b, dim, n_heads, n_kv_heads, hidden_dim, norm_eps, rope_theta, NULL)) {
        free(b);
        return NULL;
    }
    if (pdi_nn_block_reset(b, g)) {
        pd_nn_block_destroy(b);
        return NULL;
    }
    return b;
}

void pd_nn_block_destroy(struct pd_nn_block *b)
{
    if (!b) return;
    pdi_nn_block_fini(b);
    free(b);
}

static struct pd_tensor *drop(struct pd_nn_block *b, struct pd_tensor *x)
{
    return b->dropout ? pd_nn_dropout_forward(b->dropout, x) : x;
}

struct pd_tensor *pdi_nn_block_forward(struct pd_nn_block *b, struct pd_tensor *x, struct pd_tensor *positions,
                                       struct pd_tensor *mask, struct pd_tensor *startend_row_indices, int causal,
                                       struct pd_tensor *k_cache, struct pd_tensor *v_cache, int64_t past_len)
{
    if (!b) return pdi_error(PD_ERR_NULL, "nn.block: module is NULL");
    struct pd_tensor *a = pdi_nn_attention_forward(&b->self_attn, pd_nn_rmsnorm_forward(&b->input_layernorm, x),
                                                   positions, mask, startend_row_indices, causal, k_cache, v_cache,
                                                   past_len);
    struct pd_tensor *h = pd_add(x, drop(b, a));
    struct pd_tensor *m = pd_nn_mlp_forward(&b->mlp, pd_nn_rmsnorm_forward(&b->post_attention_layernorm, h));
    return pd_add(h, drop(b, m));
}

struct pd_tensor *pd_nn_block_forward(struct pd_nn_block *b, struct pd_tensor *x, struct pd_tensor *positions,
                                      struct pd_tensor *mask, int causal, struct pd_tensor *k_cache,
                                      struct pd_tensor *v_cache, int64_t past_len)
{
    return pdi_nn_block_forward(b, x, positions, mask, NULL, causal, k_cache, v_cache, past_len);
}

int pd_nn_block_params(struct pd_nn_block *b, const char *prefix, struct pd_state_dict *sd)
{
    if (!b) return pdi_errorf(PD_ERR_NULL, "nn.block: module is NULL");
    char s[512];
    int st = pd_nn_attention_params(&b->self_attn, pdi_nn_join(s, sizeof s, prefix, "self_attn"), sd);
    if (!st) st = pd_nn_mlp_params(&b->mlp, pdi_nn_join(s, sizeof s, prefix, "mlp"), sd);
    if (!st) st = pd_nn_rmsnorm_params(&b->input_layernorm, pdi_nn_join(s, sizeof s, prefix, "input_layernorm"), sd);
    if (!st)
        st = pd_nn_rmsnorm_params(&b->post_attention_layernorm,
                                  pdi_nn_join(s, sizeof s, prefix, "post_attention_layernorm"), sd);
    return st;
}
