/* Llama model: state-dict names and shapes, logits and every gradient against
 * an independent f64 reference written here with basic ops (explicit
 * rotate_half RoPE with host cos/sin, softmax attention, RMSNorm from its
 * formula), a finite-difference directional derivative of the f32 loss,
 * KV-cache decode equivalence, left-padding equivalence, dropout modes,
 * config validation and JSON, error paths, no leaks. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "pt.h"
#include "tiny_llama.h"

static struct pd_llama_config tiny(void) { return pt_tiny_llama_config(); }

static struct pd_tensor *ids_tensor(int b, int t, const int64_t *v)
{
    return pd_from_buffer(v, (int64_t[]){b, t}, 2, PD_I64);
}

/* max |a - b| / (max |b| + tiny) */
static double rel_err(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b) return INFINITY;
    double d = pd_item(pd_amax(pd_abs(pd_sub(pd_cast(a, PD_F64), pd_cast(b, PD_F64))), NULL, 0, 0));
    double m = pd_item(pd_amax(pd_abs(pd_cast(b, PD_F64)), NULL, 0, 0));
    return d / (m + 1e-30);
}

/* ---- the reference (f64, basic ops only) ------------------------------ */
struct ref {
    const struct pd_llama_config *c;
    struct pd_state_dict *p; /* f64 leaves by the model's names */
};

static struct pd_tensor *W(struct ref *r, const char *fmt, ...)
{
    char name[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    struct pd_tensor *t = pd_state_dict_get(r->p, name);
    if (!t) printf("reference: missing %s\n", name);
    return t;
}

static struct pd_tensor *rms(struct pd_tensor *x, struct pd_tensor *w, double eps)
{
    int ax = -1;
    struct pd_tensor *ms = pd_mean(pd_mul(x, x), &ax, 1, 1);
    return pd_mul(pd_mul(x, pd_rsqrt(pd_add_scalar(ms, eps))), w);
}

/* x [B, T, H, D]; pos [B, T] (int64 host values) */
static struct pd_tensor *rope(struct pd_tensor *x, const int64_t *pos, double theta)
{
    int64_t b = pd_tensor_dim(x, 0), t = pd_tensor_dim(x, 1), d = pd_tensor_dim(x, 3), h2 = d / 2;
    double *cs = malloc(sizeof(double) * b * t * d), *sn = malloc(sizeof(double) * b * t * d);
    for (int64_t i = 0; i < b * t; i++)
        for (int64_t j = 0; j < d; j++) {
            double ang = pos[i] * pow(theta, -2.0 * (double)(j % h2) / (double)d);
            cs[i * d + j] = cos(ang);
            sn[i * d + j] = sin(ang);
        }
    struct pd_tensor *c = pd_from_buffer(cs, (int64_t[]){b, t, 1, d}, 4, PD_F64);
    struct pd_tensor *s = pd_from_buffer(sn, (int64_t[]){b, t, 1, d}, 4, PD_F64);
    free(cs);
    free(sn);
    struct pd_tensor *parts[2] = {pd_neg(pd_slice(x, 3, h2, d, 1)), pd_slice(x, 3, 0, h2, 1)};
    return pd_add(pd_mul(x, c), pd_mul(pd_concat(parts, 2, 3), s));
}

/* logits [B, T, V] f64. keymask [B, T] (1 = real) may be NULL; pos [B, T]. */
static struct pd_tensor *ref_forward(struct ref *r, struct pd_tensor *ids, const int64_t *pos, const int *keymask)
{
    const struct pd_llama_config *c = r->c;
    int64_t b = pd_tensor_dim(ids, 0), t = pd_tensor_dim(ids, 1), hd = c->dim / c->n_heads;
    /* additive mask [B, 1, T, T]: causal and padding */
    double *mk = malloc(sizeof(double) * b * t * t);
    for (int64_t i = 0; i < b; i++)
        for (int64_t q = 0; q < t; q++)
            for (int64_t k = 0; k < t; k++)
                mk[(i * t + q) * t + k] = (k <= q && (!keymask || keymask[i * t + k])) ? 0.0 : -1e300;
    struct pd_tensor *mask = pd_from_buffer(mk, (int64_t[]){b, 1, t, t}, 4, PD_F64);
    free(mk);
    struct pd_tensor *h = pd_embedding(ids, W(r, "model.embed_tokens.weight"));
    for (int l = 0; l < c->n_layers; l++) {
        struct pd_tensor *x = rms(h, W(r, "model.layers.%d.input_layernorm.weight", l), c->norm_eps);
        struct pd_tensor *q = pd_reshape(pd_matmul(x, W(r, "model.layers.%d.self_attn.q_proj.weight", l), 0, 1),
                                         (int64_t[]){b, t, c->n_heads, hd}, 4);
        struct pd_tensor *k = pd_reshape(pd_matmul(x, W(r, "model.layers.%d.self_attn.k_proj.weight", l), 0, 1),
                                         (int64_t[]){b, t, c->n_kv_heads, hd}, 4);
        struct pd_tensor *v = pd_reshape(pd_matmul(x, W(r, "model.layers.%d.self_attn.v_proj.weight", l), 0, 1),
                                         (int64_t[]){b, t, c->n_kv_heads, hd}, 4);
        q = pd_transpose(rope(q, pos, c->rope_theta), 1, 2);
        k = pd_repeat_interleave(pd_transpose(rope(k, pos, c->rope_theta), 1, 2), c->n_heads / c->n_kv_heads, 1);
        v = pd_repeat_interleave(pd_transpose(v, 1, 2), c->n_heads / c->n_kv_heads, 1);
        struct pd_tensor *s = pd_add(pd_scale(pd_matmul(q, k, 0, 1), 1.0 / sqrt((double)hd)), mask);
        struct pd_tensor *o = pd_matmul(pd_softmax(s, -1), v, 0, 0);
        o = pd_reshape(pd_transpose(o, 1, 2), (int64_t[]){b, t, c->dim}, 3);
        h = pd_add(h, pd_matmul(o, W(r, "model.layers.%d.self_attn.o_proj.weight", l), 0, 1));
        x = rms(h, W(r, "model.layers.%d.post_attention_layernorm.weight", l), c->norm_eps);
        struct pd_tensor *g = pd_matmul(x, W(r, "model.layers.%d.mlp.gate_proj.weight", l), 0, 1);
        struct pd_tensor *u = pd_matmul(x, W(r, "model.layers.%d.mlp.up_proj.weight", l), 0, 1);
        h = pd_add(h, pd_matmul(pd_mul(pd_mul(g, pd_sigmoid(g)), u), W(r, "model.layers.%d.mlp.down_proj.weight", l),
                                0, 1));
    }
    h = rms(h, W(r, "model.norm.weight"), c->norm_eps);
    struct pd_tensor *head = c->tie_embeddings ? W(r, "model.embed_tokens.weight") : W(r, "lm_head.weight");
    return pd_matmul(h, head, 0, 1);
}

static struct pd_state_dict *f64_copy(struct pd_state_dict *sd)
{
    struct pd_state_dict *out = pd_state_dict_create();
    for (int i = 0; i < pd_state_dict_size(sd); i++) {
        struct pd_tensor *t = pd_detach(pd_cast(pd_state_dict_tensor(sd, i), PD_F64));
        pd_requires_grad_(t, 1);
        pd_state_dict_add(out, pd_state_dict_name(sd, i), t);
    }
    return out;
}

static void test_names(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_llama_config c = tiny();
    struct pd_llama *m = pd_llama_create(&c, 1);
    PT_CHECK(m != NULL);
    struct pd_state_dict *sd = pd_llama_state_dict(m);
    PT_CHECK(pd_state_dict_size(sd) == 2 + 9 * c.n_layers + 1);
    const char *expect[] = {"model.embed_tokens.weight",
                            "model.layers.0.self_attn.q_proj.weight",
                            "model.layers.0.self_attn.k_proj.weight",
                            "model.layers.0.self_attn.v_proj.weight",
                            "model.layers.0.self_attn.o_proj.weight",
                            "model.layers.0.mlp.gate_proj.weight",
                            "model.layers.0.mlp.up_proj.weight",
                            "model.layers.0.mlp.down_proj.weight",
                            "model.layers.0.input_layernorm.weight",
                            "model.layers.0.post_attention_layernorm.weight"};
    for (int i = 0; i < 10; i++) PT_CHECK(!strcmp(pd_state_dict_name(sd, i), expect[i]));
    PT_CHECK(!strcmp(pd_state_dict_name(sd, 19), "model.norm.weight"));
    PT_CHECK(!strcmp(pd_state_dict_name(sd, 20), "lm_head.weight"));
    struct pd_tensor *k = pd_state_dict_get(sd, "model.layers.1.self_attn.k_proj.weight");
    PT_CHECK(k && pd_tensor_dim(k, 0) == 16 && pd_tensor_dim(k, 1) == 32); /* [n_kv * head_dim, dim] */
    struct pd_tensor *dn = pd_state_dict_get(sd, "model.layers.1.mlp.down_proj.weight");
    PT_CHECK(dn && pd_tensor_dim(dn, 0) == 32 && pd_tensor_dim(dn, 1) == 48);
    int64_t n = 37 * 32 * 2 + 2 * (32 * 32 * 2 + 16 * 32 * 2 + 48 * 32 * 3 + 64) + 32;
    PT_CHECK(pd_llama_num_params(m) == n);
    /* all leaves requiring grad, one flat storage, 64-byte aligned */
    struct pd_tensor *t0 = pd_state_dict_tensor(sd, 0);
    for (int i = 0; i < pd_state_dict_size(sd); i++) {
        struct pd_tensor *t = pd_state_dict_tensor(sd, i);
        PT_CHECK(pd_tensor_is_leaf(t) && pd_tensor_requires_grad(t) && pd_tensor_dtype(t) == PD_F32);
        PT_CHECK(pd_tensor_shares_storage(t, t0) && ((uintptr_t)pd_tensor_data(t) % 64) == 0);
    }
    /* init: norms 1, residual projections with the smaller std */
    PT_NEAR(pd_item(pd_mean(pd_state_dict_get(sd, "model.norm.weight"), NULL, 0, 0)), 1.0, 1e-12);
    double sq = pd_item(pd_std(pd_state_dict_get(sd, "model.layers.0.mlp.gate_proj.weight"), NULL, 0, 0, 0));
    double sd_ = pd_item(pd_std(dn, NULL, 0, 0, 0));
    PT_NEAR(sq, 0.2, 0.08);
    PT_NEAR(sd_, 0.1, 0.08); /* 0.2 / sqrt(2 * 2) */
    pd_llama_destroy(m);

    c.tie_embeddings = 1;
    m = pd_llama_create(&c, 1);
    sd = pd_llama_state_dict(m);
    PT_CHECK(pd_state_dict_size(sd) == 2 + 9 * c.n_layers && !pd_state_dict_get(sd, "lm_head.weight"));
    PT_CHECK(pd_llama_num_params(m) == n - 37 * 32);
    pd_llama_destroy(m);
    /* FLOPs: 6 N_matmul + 12 L d T */
    double f = pd_llama_flops_per_token(&c, 10);
    double nm = 2 * (32 * 32 * 2 + 16 * 32 * 2 + 48 * 32 * 3) + 37 * 32;
    PT_NEAR(f, 6 * nm + 12.0 * 2 * 32 * 10, 1e-12);
    PT_CHECK(pd_llama_flops_per_token(&c, 0) < 0);
    pd_scope_end(scope_tok);
}

/* Logits and all gradients against the f64 reference. */
static void test_reference(int tie)
{
    int scope_tok = pd_scope_begin();
    struct pd_llama_config c = tiny();
    c.tie_embeddings = tie;
    struct pd_llama *m = pd_llama_create(&c, 7);
    int64_t idv[2 * 9], tgv[2 * 9], pos[2 * 9];
    for (int i = 0; i < 18; i++) {
        idv[i] = (i * 7 + 3) % 37;
        tgv[i] = i == 4 ? -1 : (i * 5 + 1) % 37;
        pos[i] = i % 9;
    }
    struct pd_tensor *ids = ids_tensor(2, 9, idv), *tg = ids_tensor(2, 9, tgv);
    struct pd_tensor *logits = pd_llama_forward(m, ids, NULL, NULL);
    PT_CHECK(logits && pd_tensor_ndim(logits) == 3 && pd_tensor_dim(logits, 2) == 37);
    struct ref r = {&c, f64_copy(pd_llama_state_dict(m))};
    struct pd_tensor *rl = ref_forward(&r, ids, pos, NULL);
    PT_CHECK(rel_err(logits, rl) < 2e-5);

    struct pd_tensor *loss = pd_llama_loss(m, ids, tg);
    int64_t n = 18;
    struct pd_tensor *rloss =
        pd_cross_entropy(pd_reshape(rl, (int64_t[]){n, 37}, 2), pd_reshape(tg, &n, 1), -1, 0, PD_REDUCTION_MEAN);
    PT_NEAR(pd_item(loss), pd_item(rloss), 1e-5);
    PT_CHECK(pd_backward(loss, NULL, 0) == PD_OK);
    PT_CHECK(pd_backward(rloss, NULL, 0) == PD_OK);
    struct pd_state_dict *sd = pd_llama_state_dict(m);
    double worst = 0;
    for (int i = 0; i < pd_state_dict_size(sd); i++) {
        struct pd_tensor *g = pd_tensor_grad(pd_state_dict_tensor(sd, i));
        struct pd_tensor *rg = pd_tensor_grad(pd_state_dict_tensor(r.p, i));
        double e = rel_err(g, rg);
        if (e > worst) worst = e;
        if (!(e < 1e-4)) printf("grad of %s: rel err %g\n", pd_state_dict_name(sd, i), e);
    }
    PT_CHECK(worst < 1e-4);

    /* finite-difference directional derivative of the f32 loss itself */
    struct pd_generator *gen = pd_generator_create(3);
    double dot = 0;
    struct pd_tensor **dirs = calloc((size_t)pd_state_dict_size(sd), sizeof *dirs);
    for (int i = 0; i < pd_state_dict_size(sd); i++) {
        struct pd_tensor *p = pd_state_dict_tensor(sd, i);
        dirs[i] = pd_randn(pd_tensor_shape(p), pd_tensor_ndim(p), PD_F32, gen);
        dot += pd_item(pd_sum(pd_mul(pd_cast(dirs[i], PD_F64), pd_cast(pd_tensor_grad(p), PD_F64)), NULL, 0, 0));
    }
    double eps = 1e-3, lp, lm;
    int mode = pd_no_grad_begin();
    for (int i = 0; i < pd_state_dict_size(sd); i++) pd_add_(pd_state_dict_tensor(sd, i), pd_scale(dirs[i], eps));
    lp = pd_item(pd_llama_loss(m, ids, tg));
    for (int i = 0; i < pd_state_dict_size(sd); i++) pd_add_(pd_state_dict_tensor(sd, i), pd_scale(dirs[i], -2 * eps));
    lm = pd_item(pd_llama_loss(m, ids, tg));
    pd_grad_mode_end(mode);
    PT_NEAR((lp - lm) / (2 * eps), dot, 2e-2);
    free(dirs);
    pd_generator_destroy(gen);
    pd_state_dict_destroy(r.p);
    pd_llama_destroy(m);
    pd_scope_end(scope_tok);
}

/* Prefill then one token at a time == one full forward. */
static void test_kv_cache(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_llama_config c = tiny();
    struct pd_llama *m = pd_llama_create(&c, 11);
    pd_llama_train(m, 0);
    int64_t idv[2 * 10];
    for (int i = 0; i < 20; i++) idv[i] = (i * 11 + 5) % 37;
    struct pd_tensor *ids = ids_tensor(2, 10, idv);
    struct pd_tensor *full = pd_llama_forward(m, ids, NULL, NULL);
    struct pd_kv_cache *kv = pd_kv_cache_create(&c, 2, 12);
    PT_CHECK(kv && pd_kv_cache_len(kv) == 0);
    struct pd_tensor *pre = pd_llama_forward(m, pd_slice(ids, 1, 0, 4, 1), kv, NULL);
    PT_CHECK(pd_kv_cache_len(kv) == 4);
    PT_CHECK(rel_err(pre, pd_slice(full, 1, 0, 4, 1)) < 1e-5);
    double worst = 0;
    for (int t = 4; t < 10; t++) {
        struct pd_tensor *step = pd_llama_forward(m, pd_slice(ids, 1, t, t + 1, 1), kv, NULL);
        PT_CHECK(step && pd_tensor_dim(step, 1) == 1);
        double e = rel_err(step, pd_slice(full, 1, t, t + 1, 1));
        if (e > worst) worst = e;
    }
    PT_CHECK(worst < 1e-5);
    PT_CHECK(pd_kv_cache_len(kv) == 10);
    /* overflow: clear error, the cache is untouched */
    PT_CHECK(pd_llama_forward(m, pd_slice(ids, 1, 0, 3, 1), kv, NULL) == NULL);
    PT_CHECK(strstr(pd_last_error(), "max_len") != NULL);
    PT_CHECK(pd_kv_cache_len(kv) == 10);
    /* batch mismatch, bad ids, bad pad mask */
    PT_CHECK(pd_llama_forward(m, pd_slice(ids, 0, 0, 1, 1), kv, NULL) == NULL);
    pd_kv_cache_reset(kv);
    PT_CHECK(pd_kv_cache_len(kv) == 0);
    int64_t bad[2] = {3, 37};
    PT_CHECK(pd_llama_forward(m, ids_tensor(2, 1, bad), kv, NULL) == NULL && pd_kv_cache_len(kv) == 0);
    PT_CHECK(pd_llama_forward(m, pd_slice(ids, 1, 0, 2, 1), kv, pd_ones((int64_t[]){2, 3}, 2, PD_BOOL)) == NULL);
    PT_CHECK(strstr(pd_last_error(), "pad_mask") != NULL && pd_kv_cache_len(kv) == 0);
    /* reset and reuse gives the same logits */
    struct pd_tensor *again = pd_llama_forward(m, ids, kv, NULL);
    PT_CHECK(rel_err(again, full) < 1e-5);
    /* a cache made for another config */
    struct pd_llama_config c2 = c;
    c2.n_layers = 1;
    struct pd_kv_cache *kv2 = pd_kv_cache_create(&c2, 2, 12);
    PT_CHECK(pd_llama_forward(m, ids, kv2, NULL) == NULL);
    PT_CHECK(pd_kv_cache_create(&c, 0, 12) == NULL && pd_kv_cache_create(&c, 1, -1) == NULL);
    pd_kv_cache_destroy(kv2);
    pd_kv_cache_destroy(kv);
    pd_kv_cache_destroy(NULL);
    pd_llama_destroy(m);
    pd_scope_end(scope_tok);
}

/* Left-padded batch == each prompt alone, at the prompt's last position and
 * for the next decoded token. */
static void test_pad_mask(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_llama_config c = tiny();
    struct pd_llama *m = pd_llama_create(&c, 5);
    pd_llama_train(m, 0);
    int64_t a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {7, 8, 9}, nxt[2] = {10, 11};
    int64_t batch[12] = {1, 2, 3, 4, 5, 6, 0, 0, 0, 7, 8, 9};
    uint8_t mk[12] = {1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1};
    struct pd_tensor *mask = pd_from_buffer(mk, (int64_t[]){2, 6}, 2, PD_BOOL);
    struct pd_tensor *la = pd_llama_forward(m, ids_tensor(1, 6, a), NULL, NULL);
    struct pd_tensor *lb = pd_llama_forward(m, ids_tensor(1, 3, b), NULL, NULL);
    /* without a cache */
    struct pd_tensor *lab = pd_llama_forward(m, ids_tensor(2, 6, batch), NULL, mask);
    PT_CHECK(rel_err(pd_slice(pd_slice(lab, 0, 0, 1, 1), 1, 5, 6, 1), pd_slice(la, 1, 5, 6, 1)) < 1e-5);
    PT_CHECK(rel_err(pd_slice(pd_slice(lab, 0, 1, 2, 1), 1, 3, 6, 1), lb) < 1e-5);
    /* with a cache, then one decode step (mask grows by a real token) */
    struct pd_kv_cache *kv = pd_kv_cache_create(&c, 2, 16);
    lab = pd_llama_forward(m, ids_tensor(2, 6, batch), kv, mask);
    PT_CHECK(rel_err(pd_slice(pd_slice(lab, 0, 1, 2, 1), 1, 5, 6, 1), pd_slice(lb, 1, 2, 3, 1)) < 1e-5);
    struct pd_tensor *parts[2] = {mask, pd_ones((int64_t[]){2, 1}, 2, PD_BOOL)};
    struct pd_tensor *step = pd_llama_forward(m, ids_tensor(2, 1, nxt), kv, pd_concat(parts, 2, 1));
    int64_t a2[7] = {1, 2, 3, 4, 5, 6, 10}, b2[4] = {7, 8, 9, 11};
    struct pd_tensor *la2 = pd_llama_forward(m, ids_tensor(1, 7, a2), NULL, NULL);
    struct pd_tensor *lb2 = pd_llama_forward(m, ids_tensor(1, 4, b2), NULL, NULL);
    PT_CHECK(rel_err(pd_slice(step, 0, 0, 1, 1), pd_slice(la2, 1, 6, 7, 1)) < 1e-5);
    PT_CHECK(rel_err(pd_slice(step, 0, 1, 2, 1), pd_slice(lb2, 1, 3, 4, 1)) < 1e-5);
    pd_kv_cache_destroy(kv);
    pd_llama_destroy(m);
    pd_scope_end(scope_tok);
}

static void test_dropout(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_llama_config c = tiny();
    c.dropout = 0.3;
    struct pd_llama *m = pd_llama_create(&c, 9);
    c.dropout = 0;
    struct pd_llama *m0 = pd_llama_create(&c, 9);
    int64_t idv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct pd_tensor *ids = ids_tensor(1, 8, idv);
    PT_CHECK(pd_llama_is_training(m) == 1);
    struct pd_tensor *t1 = pd_llama_forward(m, ids, NULL, NULL), *t2 = pd_llama_forward(m, ids, NULL, NULL);
    struct pd_tensor *ref = pd_llama_forward(m0, ids, NULL, NULL);
    PT_CHECK(rel_err(t1, t2) > 1e-3 && rel_err(t1, ref) > 1e-3);
    pd_llama_train(m, 0);
    PT_CHECK(pd_llama_is_training(m) == 0);
    struct pd_tensor *e1 = pd_llama_forward(m, ids, NULL, NULL);
    PT_CHECK(rel_err(e1, ref) == 0); /* same seed, same weights; eval mode is exact */
    pd_llama_destroy(m);
    pd_llama_destroy(m0);
    pd_scope_end(scope_tok);
}

/* field by field: memcmp would read the struct's padding */
static int cfg_eq(const struct pd_llama_config *a, const struct pd_llama_config *b)
{
    return a->vocab_size == b->vocab_size && a->dim == b->dim && a->n_layers == b->n_layers &&
           a->n_heads == b->n_heads && a->n_kv_heads == b->n_kv_heads && a->hidden_dim == b->hidden_dim &&
           a->max_seq_len == b->max_seq_len && a->norm_eps == b->norm_eps && a->rope_theta == b->rope_theta &&
           a->tie_embeddings == b->tie_embeddings && a->dropout == b->dropout && a->init_std == b->init_std;
}

static void test_config(void)
{
    struct pd_llama_config c, d;
    pd_llama_config_default(&c);
    PT_CHECK(pd_llama_config_validate(&c) == PD_OK);
    PT_CHECK(c.n_heads % c.n_kv_heads == 0 && c.dim % c.n_heads == 0);
    d = c; d.n_kv_heads = 3;
    PT_CHECK(pd_llama_config_validate(&d) == PD_ERR_INVALID && strstr(pd_last_error(), "n_kv_heads"));
    d = c; d.dim = 130;
    PT_CHECK(pd_llama_config_validate(&d) == PD_ERR_INVALID && strstr(pd_last_error(), "divisible"));
    d = c; d.dim = 12; d.n_heads = 4; d.n_kv_heads = 4;
    PT_CHECK(pd_llama_config_validate(&d) == PD_ERR_INVALID && strstr(pd_last_error(), "even"));
    d = c; d.vocab_size = 0;
    PT_CHECK(pd_llama_config_validate(&d) == PD_ERR_INVALID && strstr(pd_last_error(), "vocab_size"));
    d = c; d.dropout = 1;
    PT_CHECK(pd_llama_config_validate(&d) == PD_ERR_INVALID && strstr(pd_last_error(), "dropout"));
    d = c; d.norm_eps = 0;
    PT_CHECK(pd_llama_config_validate(&d) == PD_ERR_INVALID);
    d = c; d.rope_theta = NAN;
    PT_CHECK(pd_llama_config_validate(&d) == PD_ERR_INVALID);
    d = c; d.init_std = -1;
    PT_CHECK(pd_llama_config_validate(&d) == PD_ERR_INVALID);
    d = c; d.tie_embeddings = 2;
    PT_CHECK(pd_llama_config_validate(&d) == PD_ERR_INVALID);
    PT_CHECK(pd_llama_create(&d, 0) == NULL && strstr(pd_last_error(), "tie_embeddings"));
    PT_CHECK(pd_llama_config_validate(NULL) == PD_ERR_NULL);

    /* JSON round trip */
    d = c; d.dim = 64; d.dropout = 0.125; d.tie_embeddings = 1; d.rope_theta = 500000;
    char *js = pd_llama_config_to_json(&d);
    PT_CHECK(js && strstr(js, "\"n_kv_heads\""));
    struct pd_llama_config e;
    pd_llama_config_default(&e);
    PT_CHECK(pd_llama_config_from_json(&e, js) == PD_OK);
    PT_CHECK(cfg_eq(&e, &d));
    free(js);
    /* partial: starts from defaults */
    memset(&e, 0, sizeof e);
    PT_CHECK(pd_llama_config_from_json(&e, "{\"n_layers\": 2, \"tie_embeddings\": true}") == PD_OK);
    PT_CHECK(e.n_layers == 2 && e.tie_embeddings == 1 && e.dim == c.dim && e.norm_eps == c.norm_eps);
    /* errors leave the config unchanged */
    struct pd_llama_config keep = e;
    PT_CHECK(pd_llama_config_from_json(&e, "{\"n_layer\": 2}") == PD_ERR_INVALID && strstr(pd_last_error(), "n_layer"));
    PT_CHECK(pd_llama_config_from_json(&e, "{\"dim\": 12.5}") == PD_ERR_INVALID && strstr(pd_last_error(), "integer"));
    PT_CHECK(pd_llama_config_from_json(&e, "{\"dim\": \"64\"}") == PD_ERR_INVALID);
    PT_CHECK(pd_llama_config_from_json(&e, "{\"n_heads\": 5}") == PD_ERR_INVALID);
    PT_CHECK(pd_llama_config_from_json(&e, "[1, 2]") == PD_ERR_INVALID);
    PT_CHECK(pd_llama_config_from_json(&e, "{\"dim\": ") == PD_ERR_INVALID && strstr(pd_last_error(), "JSON"));
    PT_CHECK(cfg_eq(&e, &keep));
}

static void test_errors(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_llama_config c = tiny();
    struct pd_llama *m = pd_llama_create(&c, 1);
    int64_t idv[4] = {1, 2, 3, 4};
    PT_CHECK(pd_llama_forward(m, pd_cast(ids_tensor(1, 4, idv), PD_I32), NULL, NULL) == NULL);
    PT_CHECK(strstr(pd_last_error(), "int64") != NULL);
    PT_CHECK(pd_llama_forward(m, pd_reshape(ids_tensor(1, 4, idv), (int64_t[]){4}, 1), NULL, NULL) == NULL);
    PT_CHECK(pd_llama_forward(NULL, ids_tensor(1, 4, idv), NULL, NULL) == NULL);
    PT_CHECK(pd_llama_forward(m, NULL, NULL, NULL) == NULL);
    PT_CHECK(pd_llama_loss(m, ids_tensor(1, 4, idv), ids_tensor(2, 2, idv)) == NULL);
    PT_CHECK(strstr(pd_last_error(), "targets") != NULL);
    int64_t big[4] = {1, 2, 99, 4};
    PT_CHECK(pd_llama_forward(m, ids_tensor(1, 4, big), NULL, NULL) == NULL);
    PT_CHECK(strstr(pd_last_error(), "range") != NULL);
    /* all targets ignored but one: loss is that token's cross-entropy */
    int64_t tg[4] = {-1, -1, 5, -1};
    struct pd_tensor *l = pd_llama_loss(m, ids_tensor(1, 4, idv), ids_tensor(1, 4, tg));
    struct pd_tensor *lg = pd_log_softmax(pd_llama_forward(m, ids_tensor(1, 4, idv), NULL, NULL), -1);
    PT_NEAR(pd_item(l), -pd_get(lg, (int64_t[]){0, 2, 5}), 1e-5);
    pd_llama_destroy(m);
    pd_llama_destroy(NULL);
    pd_scope_end(scope_tok);
}

int main(void)
{
    int64_t live = pd_live_tensors();
    test_names();
    test_reference(0);
    test_reference(1);
    test_kv_cache();
    test_pad_mask();
    test_dropout();
    test_config();
    test_errors();
    PT_CHECK(pd_live_tensors() == live);
    PT_DONE();
}
