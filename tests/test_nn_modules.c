/* nn building blocks: init functions (statistics on large tensors,
 * orthogonality, truncation bounds, strided views, determinism, errors),
 * and the modules (Linear, Embedding, RMSNorm, LayerNorm, Dropout, MLP,
 * Attention, DecoderBlock) against their formulas, their parameter names,
 * error paths, no leaks. */
#include <math.h>
#include <string.h>

#include "pt.h"

static double mean_of(struct pd_tensor *t) { return pd_item(pd_mean(pd_cast(t, PD_F64), NULL, 0, 0)); }
static double std_of(struct pd_tensor *t) { return pd_item(pd_std(pd_cast(t, PD_F64), NULL, 0, 0, 0)); }
static double amax_abs(struct pd_tensor *t) { return pd_item(pd_amax(pd_abs(pd_cast(t, PD_F64)), NULL, 0, 0)); }
static double maxdiff(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b) return INFINITY;
    return amax_abs(pd_sub(pd_cast(a, PD_F64), pd_cast(b, PD_F64)));
}
static struct pd_tensor *leaf(const int64_t *shape, int nd)
{
    struct pd_tensor *t = pd_empty(shape, nd, PD_F32);
    return pd_requires_grad_(t, 1);
}

static void test_gain_fans(void)
{
    PT_NEAR(pd_init_calculate_gain(PD_NL_LINEAR, 0), 1.0, 1e-15);
    PT_NEAR(pd_init_calculate_gain(PD_NL_TANH, 0), 5.0 / 3, 1e-15);
    PT_NEAR(pd_init_calculate_gain(PD_NL_RELU, 0), sqrt(2.0), 1e-15);
    PT_NEAR(pd_init_calculate_gain(PD_NL_LEAKY_RELU, -1), sqrt(2.0 / (1 + 1e-4)), 1e-15);
    PT_NEAR(pd_init_calculate_gain(PD_NL_LEAKY_RELU, sqrt(5.0)), sqrt(2.0 / 6), 1e-15);
    PT_NEAR(pd_init_calculate_gain(PD_NL_SELU, 0), 0.75, 1e-15);
    PT_CHECK(isnan(pd_init_calculate_gain(PD_NONLINEARITY_COUNT, 0)));
    int64_t fi, fo;
    struct pd_tensor *w = pd_empty((int64_t[]){4, 3, 5, 5}, 4, PD_F32);
    PT_CHECK(pd_init_fans(w, &fi, &fo) == PD_OK && fi == 75 && fo == 100);
    struct pd_tensor *v = pd_empty((int64_t[]){7}, 1, PD_F32);
    PT_CHECK(pd_init_fans(v, &fi, &fo) == PD_ERR_INVALID && strstr(pd_last_error(), "2 dims"));
}

static void test_random_inits(void)
{
    struct pd_generator *g = pd_generator_create(42);
    struct pd_tensor *w = leaf((int64_t[]){1000, 1000}, 2); /* 1e6 samples: std error ~0.1% */
    PT_CHECK(pd_init_normal_(w, 0.5, 2.0, g) == PD_OK); /* grad mode on: the init guards itself */
    PT_NEAR(mean_of(w), 0.5, 0.01);
    PT_NEAR(std_of(w), 2.0, 0.005);
    PT_CHECK(pd_tensor_requires_grad(w) && pd_tensor_is_leaf(w));

    PT_CHECK(pd_init_uniform_(w, -1, 3, g) == PD_OK);
    PT_NEAR(mean_of(w), 1.0, 0.005);
    PT_NEAR(std_of(w), 4 / sqrt(12.0), 0.005);
    PT_CHECK(pd_item(pd_amin(w, NULL, 0, 0)) >= -1 && pd_item(pd_amax(w, NULL, 0, 0)) <= 3);

    /* truncated normal: bounds exact, moments of the truncated law */
    PT_CHECK(pd_init_trunc_normal_(w, 0, 1, -2, 2, g) == PD_OK);
    PT_CHECK(amax_abs(w) <= 2.0);
    double phi2 = exp(-2.0) / sqrt(2 * M_PI), z = erf(2 / sqrt(2.0));
    PT_NEAR(std_of(w), sqrt(1 - 4 * phi2 / z), 0.005);
    PT_NEAR(mean_of(w), 0, 0.005);
    /* far tail, narrow window */
    struct pd_tensor *s = pd_empty((int64_t[]){20000}, 1, PD_F64);
    PT_CHECK(pd_init_trunc_normal_(s, 0, 1, 3, 3.5, g) == PD_OK);
    PT_CHECK(pd_item(pd_amin(s, NULL, 0, 0)) >= 3 && pd_item(pd_amax(s, NULL, 0, 0)) <= 3.5);
    PT_CHECK(pd_item(pd_amax(s, NULL, 0, 0)) - pd_item(pd_amin(s, NULL, 0, 0)) > 0.4);

    /* xavier / kaiming */
    struct pd_tensor *x = pd_empty((int64_t[]){300, 700}, 2, PD_F32);
    PT_CHECK(pd_init_xavier_uniform_(x, 2.0, g) == PD_OK);
    double xs = 2.0 * sqrt(2.0 / 1000);
    PT_NEAR(std_of(x), xs, 0.01);
    PT_CHECK(amax_abs(x) <= xs * sqrt(3.0) * (1 + 1e-6));
    PT_CHECK(pd_init_xavier_normal_(x, 1.0, g) == PD_OK);
    PT_NEAR(std_of(x), sqrt(2.0 / 1000), 0.01);
    PT_CHECK(pd_init_kaiming_normal_(x, 0, PD_INIT_FAN_OUT, PD_NL_RELU, g) == PD_OK);
    PT_NEAR(std_of(x), sqrt(2.0) / sqrt(300.0), 0.01);
    PT_CHECK(pd_init_kaiming_uniform_(x, sqrt(5.0), PD_INIT_FAN_IN, PD_NL_LEAKY_RELU, g) == PD_OK);
    PT_CHECK(amax_abs(x) <= 1 / sqrt(700.0) * (1 + 1e-6));
    PT_NEAR(std_of(x), 1 / sqrt(700.0) / sqrt(3.0), 0.01);
    PT_CHECK(pd_init_kaiming_uniform_(x, 0, (enum pd_init_mode)7, PD_NL_RELU, g) == PD_ERR_INVALID);

    /* bf16 tensor and a strided view: only the view changes */
    struct pd_tensor *h = pd_zeros((int64_t[]){64, 64}, 2, PD_BF16);
    struct pd_tensor *view = pd_slice(pd_transpose(h, 0, 1), 0, 0, 64, 2); /* every other column of h */
    PT_CHECK(pd_init_normal_(view, 0, 1, g) == PD_OK);
    PT_CHECK(amax_abs(pd_slice(h, 1, 1, 64, 2)) == 0);
    PT_NEAR(std_of(pd_slice(h, 1, 0, 64, 2)), 1.0, 0.05);

    /* determinism: same seed, same values */
    struct pd_generator *g1 = pd_generator_create(7), *g2 = pd_generator_create(7);
    struct pd_tensor *a = pd_empty((int64_t[]){33, 17}, 2, PD_F32), *b = pd_empty((int64_t[]){33, 17}, 2, PD_F32);
    pd_init_orthogonal_(a, 1, g1);
    pd_init_orthogonal_(b, 1, g2);
    PT_CHECK(maxdiff(a, b) == 0);
    pd_generator_destroy(g1);
    pd_generator_destroy(g2);

    /* errors */
    struct pd_tensor *it = pd_zeros((int64_t[]){4}, 1, PD_I32);
    PT_CHECK(pd_init_normal_(it, 0, 1, g) == PD_ERR_INVALID && strstr(pd_last_error(), "floating"));
    PT_CHECK(pd_init_normal_(w, 0, -1, g) == PD_ERR_INVALID);
    PT_CHECK(pd_init_uniform_(w, 2, 1, g) == PD_ERR_INVALID);
    PT_CHECK(pd_init_trunc_normal_(w, 0, 1, 1, -1, g) == PD_ERR_INVALID);
    PT_CHECK(pd_init_zeros_(NULL) == PD_ERR_NULL);
    PT_CHECK(pd_init_orthogonal_(pd_empty((int64_t[]){5}, 1, PD_F32), 1, g) == PD_ERR_INVALID);
    PT_CHECK(pd_init_eye_(pd_empty((int64_t[]){2, 2, 2}, 3, PD_F32)) == PD_ERR_INVALID);
    /* zero-element tensors are a no-op */
    PT_CHECK(pd_init_normal_(pd_empty((int64_t[]){0, 3}, 2, PD_F32), 0, 1, g) == PD_OK);
    pd_generator_destroy(g);
}

static void test_orthogonal_and_constants(void)
{
    int64_t shapes[3][4] = {{50, 80}, {80, 50}, {6, 4, 3, 3}};
    int nds[3] = {2, 2, 4};
    for (int i = 0; i < 3; i++) {
        struct pd_tensor *q = pd_empty(shapes[i], nds[i], PD_F64);
        PT_CHECK(pd_init_orthogonal_(q, 1.5, NULL) == PD_OK);
        struct pd_tensor *m = pd_reshape(q, (int64_t[]){shapes[i][0], -1}, 2);
        int wide = pd_tensor_dim(m, 0) <= pd_tensor_dim(m, 1);
        /* rows orthonormal when wide, columns when tall; times gain^2 */
        struct pd_tensor *gram = wide ? pd_matmul(m, m, 0, 1) : pd_matmul(m, m, 1, 0);
        int64_t n = pd_tensor_dim(gram, 0);
        PT_CHECK(maxdiff(gram, pd_scale(pd_eye(n, n, PD_F64), 2.25)) < 1e-12);
    }
    struct pd_tensor *e = pd_full((int64_t[]){3, 5}, 2, 7, PD_F32);
    PT_CHECK(pd_init_eye_(e) == PD_OK && maxdiff(e, pd_eye(3, 5, PD_F32)) == 0);
    PT_CHECK(pd_init_constant_(e, 2.5) == PD_OK && mean_of(e) == 2.5 && std_of(e) == 0);
    PT_CHECK(pd_init_ones_(e) == PD_OK && mean_of(e) == 1);
    PT_CHECK(pd_init_zeros_(e) == PD_OK && amax_abs(e) == 0);
}

static void test_modules(void)
{
    struct pd_generator *g = pd_generator_create(1);
    struct pd_tensor *x = pd_randn((int64_t[]){2, 5, 8}, 3, PD_F32, g);

    /* Linear */
    struct pd_nn_linear *l = pd_nn_linear_create(8, 3, 1, g);
    PT_CHECK(l && pd_tensor_dim(l->weight, 0) == 3 && pd_tensor_dim(l->weight, 1) == 8 && l->bias);
    PT_CHECK(amax_abs(l->weight) <= 1 / sqrt(8.0) && amax_abs(l->bias) <= 1 / sqrt(8.0));
    struct pd_tensor *y = pd_nn_linear_forward(l, x);
    PT_CHECK(maxdiff(y, pd_add(pd_matmul(x, l->weight, 0, 1), l->bias)) < 1e-6);
    PT_CHECK(pd_nn_linear_forward(l, pd_randn((int64_t[]){2, 7}, 2, PD_F32, g)) == NULL);
    PT_CHECK(strstr(pd_last_error(), "in_features") != NULL);
    struct pd_state_dict *sd = pd_state_dict_create();
    PT_CHECK(pd_nn_linear_params(l, "fc", sd) == PD_OK && pd_state_dict_size(sd) == 2);
    PT_CHECK(pd_state_dict_get(sd, "fc.weight") == l->weight && pd_state_dict_get(sd, "fc.bias") == l->bias);
    PT_CHECK(pd_nn_linear_params(l, "fc", sd) == PD_ERR_INVALID); /* duplicate names */
    struct pd_nn_linear *nb = pd_nn_linear_create(8, 3, 0, g);
    PT_CHECK(nb && !nb->bias && pd_nn_linear_params(nb, "", sd) == PD_OK && pd_state_dict_get(sd, "weight"));
    PT_CHECK(pd_nn_linear_create(0, 3, 1, g) == NULL);
    /* gradient flows to the module's leaves */
    PT_CHECK(pd_backward(pd_sum(pd_nn_linear_forward(l, x), NULL, 0, 0), NULL, 0) == PD_OK);
    PT_CHECK(maxdiff(pd_tensor_grad(l->bias), pd_full((int64_t[]){3}, 1, 10, PD_F32)) < 1e-5);

    /* Embedding */
    struct pd_nn_embedding *em = pd_nn_embedding_create(11, 4, g);
    PT_NEAR(std_of(em->weight), 1.0, 0.5);
    int64_t idv[3] = {10, 0, 10};
    struct pd_tensor *ids = pd_from_buffer(idv, (int64_t[]){3}, 1, PD_I64);
    struct pd_tensor *ev = pd_nn_embedding_forward(em, ids);
    PT_CHECK(maxdiff(ev, pd_index_select(em->weight, 0, ids)) == 0);
    PT_CHECK(pd_nn_embedding_params(em, "tok", sd) == PD_OK && pd_state_dict_get(sd, "tok.weight"));

    /* RMSNorm, LayerNorm */
    struct pd_nn_rmsnorm *rn = pd_nn_rmsnorm_create(8, 1e-5);
    pd_init_uniform_(rn->weight, 0.5, 1.5, g);
    int ax = -1;
    struct pd_tensor *ms = pd_mean(pd_mul(x, x), &ax, 1, 1);
    struct pd_tensor *rref = pd_mul(pd_mul(x, pd_rsqrt(pd_add_scalar(ms, 1e-5))), rn->weight);
    PT_CHECK(maxdiff(pd_nn_rmsnorm_forward(rn, x), rref) < 1e-5);
    PT_CHECK(pd_nn_rmsnorm_create(8, -1) == NULL);
    struct pd_nn_layernorm *ln = pd_nn_layernorm_create(8, 1e-5, 1);
    PT_CHECK(mean_of(ln->weight) == 1 && amax_abs(ln->bias) == 0);
    struct pd_tensor *mu = pd_mean(x, &ax, 1, 1);
    struct pd_tensor *var = pd_var(x, &ax, 1, 0, 1);
    struct pd_tensor *lref = pd_mul(pd_sub(x, mu), pd_rsqrt(pd_add_scalar(var, 1e-5)));
    PT_CHECK(maxdiff(pd_nn_layernorm_forward(ln, x), lref) < 1e-5);
    PT_CHECK(pd_nn_layernorm_params(ln, "ln", sd) == PD_OK && pd_state_dict_get(sd, "ln.bias"));
    struct pd_nn_layernorm *ln0 = pd_nn_layernorm_create(8, 1e-5, 0);
    PT_CHECK(ln0 && !ln0->weight && maxdiff(pd_nn_layernorm_forward(ln0, x), lref) < 1e-5);

    /* Dropout: only in training mode, survivors scaled by 1/(1-p) */
    struct pd_nn_dropout *d = pd_nn_dropout_create(0.25, 3);
    struct pd_tensor *ones = pd_ones((int64_t[]){100000}, 1, PD_F32);
    struct pd_tensor *dz = pd_nn_dropout_forward(d, ones);
    double zero_frac = 1 - pd_item(pd_mean(pd_cast(pd_ne(dz, pd_scalar(0, PD_F32)), PD_F64), NULL, 0, 0));
    PT_NEAR(zero_frac, 0.25, 0.01);
    PT_NEAR(pd_item(pd_amax(dz, NULL, 0, 0)), 1 / 0.75, 1e-6);
    d->training = 0;
    PT_CHECK(maxdiff(pd_nn_dropout_forward(d, ones), ones) == 0);
    PT_CHECK(pd_nn_dropout_create(1.0, 0) == NULL && strstr(pd_last_error(), "dropout"));

    /* MLP */
    struct pd_nn_mlp *mlp = pd_nn_mlp_create(8, 12, g);
    struct pd_tensor *gt = pd_matmul(x, mlp->gate_proj.weight, 0, 1), *up = pd_matmul(x, mlp->up_proj.weight, 0, 1);
    struct pd_tensor *mref = pd_matmul(pd_mul(pd_silu(gt), up), mlp->down_proj.weight, 0, 1);
    PT_CHECK(maxdiff(pd_nn_mlp_forward(mlp, x), mref) < 1e-5);

    /* Attention (non-causal, no rope effect check here: positions all 0
     * make RoPE the identity, so it is plain GQA softmax attention) */
    struct pd_nn_attention *at = pd_nn_attention_create(8, 4, 2, 10000, g);
    PT_CHECK(at && at->head_dim == 2 && pd_tensor_dim(at->k_proj.weight, 0) == 4);
    struct pd_tensor *pos0 = pd_zeros((int64_t[]){5}, 1, PD_I64);
    struct pd_tensor *ao = pd_nn_attention_forward(at, x, pos0, NULL, 0, NULL, NULL, 0);
    struct pd_tensor *q = pd_transpose(pd_reshape(pd_matmul(x, at->q_proj.weight, 0, 1), (int64_t[]){2, 5, 4, 2}, 4), 1, 2);
    struct pd_tensor *k = pd_transpose(pd_reshape(pd_matmul(x, at->k_proj.weight, 0, 1), (int64_t[]){2, 5, 2, 2}, 4), 1, 2);
    struct pd_tensor *v = pd_transpose(pd_reshape(pd_matmul(x, at->v_proj.weight, 0, 1), (int64_t[]){2, 5, 2, 2}, 4), 1, 2);
    k = pd_repeat_interleave(k, 2, 1);
    v = pd_repeat_interleave(v, 2, 1);
    struct pd_tensor *p = pd_softmax(pd_scale(pd_matmul(q, k, 0, 1), 1 / sqrt(2.0)), -1);
    struct pd_tensor *o = pd_reshape(pd_transpose(pd_matmul(p, v, 0, 0), 1, 2), (int64_t[]){2, 5, 8}, 3);
    PT_CHECK(maxdiff(ao, pd_matmul(o, at->o_proj.weight, 0, 1)) < 1e-5);
    PT_CHECK(pd_nn_attention_create(8, 3, 1, 10000, g) == NULL && strstr(pd_last_error(), "n_heads"));
    PT_CHECK(pd_nn_attention_create(8, 8, 8, 10000, g) == NULL && strstr(pd_last_error(), "even"));
    PT_CHECK(pd_nn_attention_forward(at, pd_randn((int64_t[]){2, 5}, 2, PD_F32, g), pos0, NULL, 0, NULL, NULL, 0) == NULL);
    struct pd_tensor *kc = pd_zeros((int64_t[]){2, 2, 4, 2}, 4, PD_F32);
    PT_CHECK(pd_nn_attention_forward(at, x, pos0, NULL, 1, kc, kc, 0) == NULL && strstr(pd_last_error(), "positions"));
    PT_CHECK(pd_nn_attention_forward(at, x, pos0, NULL, 1, kc, NULL, 0) == NULL);

    /* DecoderBlock = x + attn(norm(x)), then + mlp(norm(h)) with its own submodules */
    struct pd_nn_block *bl = pd_nn_block_create(8, 4, 2, 12, 1e-5, 10000, g);
    struct pd_tensor *pos = pd_arange(0, 5, 1, PD_I64);
    struct pd_tensor *bo = pd_nn_block_forward(bl, x, pos, NULL, 1, NULL, NULL, 0);
    struct pd_tensor *h = pd_add(x, pd_nn_attention_forward(&bl->self_attn, pd_nn_rmsnorm_forward(&bl->input_layernorm, x),
                                                            pos, NULL, 1, NULL, NULL, 0));
    struct pd_tensor *bref = pd_add(h, pd_nn_mlp_forward(&bl->mlp, pd_nn_rmsnorm_forward(&bl->post_attention_layernorm, h)));
    PT_CHECK(maxdiff(bo, bref) < 1e-6);
    struct pd_state_dict *bsd = pd_state_dict_create();
    PT_CHECK(pd_nn_block_params(bl, "layers.3", bsd) == PD_OK && pd_state_dict_size(bsd) == 9);
    PT_CHECK(pd_state_dict_get(bsd, "layers.3.self_attn.o_proj.weight") == bl->self_attn.o_proj.weight);
    PT_CHECK(pd_state_dict_get(bsd, "layers.3.mlp.up_proj.weight") == bl->mlp.up_proj.weight);
    PT_CHECK(pd_state_dict_get(bsd, "layers.3.post_attention_layernorm.weight") != NULL);
    pd_state_dict_destroy(bsd);

    pd_state_dict_destroy(sd);
    pd_nn_linear_destroy(l);
    pd_nn_linear_destroy(nb);
    pd_nn_embedding_destroy(em);
    pd_nn_rmsnorm_destroy(rn);
    pd_nn_layernorm_destroy(ln);
    pd_nn_layernorm_destroy(ln0);
    pd_nn_dropout_destroy(d);
    pd_nn_mlp_destroy(mlp);
    pd_nn_attention_destroy(at);
    pd_nn_block_destroy(bl);
    pd_nn_linear_destroy(NULL);
    pd_nn_block_destroy(NULL);
    pd_generator_destroy(g);
}

/* GroupNorm: weight 1 / bias 0 at create, the op's result, named
 * parameters, bad sizes refused, a wrong channel count named. */
static void test_groupnorm(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_nn_groupnorm *gn = pd_nn_groupnorm_create(2, 4, 1e-5, 1);
    PT_CHECK(gn && mean_of(gn->weight) == 1 && amax_abs(gn->bias) == 0);
    struct pd_tensor *x = pd_randn((int64_t[]){3, 4, 5}, 3, PD_F32, NULL);
    if (gn) {
        pd_init_uniform_(gn->weight, 0.5, 1.5, NULL);
        pd_init_uniform_(gn->bias, -1, 1, NULL);
        PT_CHECK(maxdiff(pd_nn_groupnorm_forward(gn, x), pd_group_norm(x, 2, gn->weight, gn->bias, 1e-5)) == 0);
        struct pd_state_dict *sd = pd_state_dict_create();
        PT_CHECK(pd_nn_groupnorm_params(gn, "gn", sd) == PD_OK && pd_state_dict_get(sd, "gn.weight") &&
                 pd_state_dict_get(sd, "gn.bias"));
        pd_state_dict_destroy(sd);
        PT_CHECK(!pd_nn_groupnorm_forward(gn, pd_randn((int64_t[]){3, 6, 5}, 3, PD_F32, NULL)) &&
                 strstr(pd_last_error(), "[N, 4, ...]"));
    }
    struct pd_nn_groupnorm *plain = pd_nn_groupnorm_create(4, 4, 1e-5, 0);
    PT_CHECK(plain && !plain->weight &&
             maxdiff(pd_nn_groupnorm_forward(plain, x), pd_group_norm(x, 4, NULL, NULL, 1e-5)) == 0);
    PT_CHECK(!pd_nn_groupnorm_create(3, 4, 1e-5, 1) && strstr(pd_last_error(), "dividing"));
    pd_nn_groupnorm_destroy(gn);
    pd_nn_groupnorm_destroy(plain);
    pd_scope_end(scope_tok);
}

int main(void)
{
    int64_t live = pd_live_tensors();
    int scope_tok = pd_scope_begin();
    test_gain_fans();
    test_random_inits();
    test_orthogonal_and_constants();
    test_modules();
    test_groupnorm();
    pd_scope_end(scope_tok);
    PT_CHECK(pd_live_tensors() == live);
    /* modules created outside any scope own their parameters: no leak */
    struct pd_nn_block *b = pd_nn_block_create(16, 4, 4, 24, 1e-5, 10000, NULL);
    PT_CHECK(b != NULL);
    pd_nn_block_destroy(b);
    PT_CHECK(pd_live_tensors() == live);
    PT_DONE();
}
