/* paddle.c — the sweep's wrapper table: public entry points that resolve
 * arguments themselves (axes lists, shapes, nn modules, optimizer and
 * scaler, state dict, generator, tokenizer, generation, configs), called
 * directly (tests/sweep/sweep.c; docs/reliability.md, the bad-input sweep).
 *
 * Data-driven: each entry has an argument "shape" that says what its case
 * index i means. NUL(n): i picks which of n pointer arguments is NULL
 * (one at a time; an error is due unless the entry says NULL is allowed).
 * INT: i picks an integer from ivals (counts, axes, ids, ndim, dtypes).
 * DBL: i picks a double from dvals (NaN, infinities, negatives, huge).
 * An entry sets *must when an error is due; must stays 0 where either an
 * error or a result is fine (then only crashes, UB and leaks are judged).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep_wrap.h"

/* --- tensor and op wrappers --- */
static int w_reshape_n(int i, int *m, struct pd_tensor **out) { *m = 1; return RES(pd_reshape(NP(0, x234()), NP(1, (const int64_t[]){24}), 1)); }
static int w_view_n(int i, int *m, struct pd_tensor **out) { *m = 1; return RES(pd_view(NP(0, x234()), NP(1, (const int64_t[]){24}), 1)); }
static int w_expand_n(int i, int *m, struct pd_tensor **out) { *m = 1; return RES(pd_expand(NP(0, x234()), NP(1, (const int64_t[]){2, 3, 4}), 3)); }
static int w_permute_n(int i, int *m, struct pd_tensor **out) { *m = 1; return RES(pd_permute(NP(0, x234()), NP(1, (const int[]){2, 1, 0}), 3)); }
static int w_sum_n(int i, int *m, struct pd_tensor **out) { *m = 1; return RES(pd_mean(NP(0, x234()), NP(1, (const int[]){1}), 1, 0)); }
static int w_sts_n(int i, int *m, struct pd_tensor **out) { *m = 1; return RES(pd_sum_to_shape(NP(0, x234()), NP(1, (const int64_t[]){4}), 1)); }
static int w_flip_n(int i, int *m, struct pd_tensor **out) { *m = 1; return RES(pd_flip(NP(0, x234()), NP(1, (const int[]){0}), 1)); }
static int w_zeros_n(int i, int *m, struct pd_tensor **out) { *m = 1; return RES(pd_zeros(NP(0, (const int64_t[]){2}), 1, PD_F32)); }
static int w_rand_n(int i, int *m, struct pd_tensor **out) { *m = 1; return RES(pd_rand(NP(0, (const int64_t[]){2}), 1, PD_F32, NULL)); }
static int w_stats_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor_stats st;
    *m = 1;
    return RC(pd_tensor_stats(NP(0, x234()), NP(1, &st)));
}
static int w_permute_i(int i, int *m, struct pd_tensor **out)
{
    int p[3] = {II, 1, 0};
    *m = !(II == 2 || II == -1);
    return RES(pd_permute(x234(), p, 3));
}
static int w_permute_nd(int i, int *m, struct pd_tensor **out)
{
    int p[PD_MAX_DIMS + 1] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    *m = II != 3;
    return RES(pd_permute(x234(), II > PD_MAX_DIMS + 1 ? NULL : p, II));
}
static int w_axes_i(int i, int *m, struct pd_tensor **out)
{
    int ax[1] = {II};
    *m = II < -3 || II > 2;
    return RES(pd_amax(x234(), ax, 1, 1));
}
static int w_axes_dup(int i, int *m, struct pd_tensor **out)
{
    int ax[2] = {II, 1};
    *m = !(II == 0 || II == -1); /* 1 and -2 are axis 1 again; the rest are out of range */
    return RES(pd_var(x234(), ax, 2, 1, 0));
}
static int w_axes_nax(int i, int *m, struct pd_tensor **out)
{
    int ax[PD_MAX_DIMS + 1] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
    *m = II < 0 || II > 3;
    return RES(pd_logsumexp(x234(), II > PD_MAX_DIMS + 1 ? NULL : ax, II, 0));
}
static int w_flip_i(int i, int *m, struct pd_tensor **out)
{
    int ax[1] = {II};
    *m = II < -3 || II > 2;
    return RES(pd_flip(x234(), ax, 1));
}
static int w_norm_d(int i, int *m, struct pd_tensor **out)
{
    *m = isnan(DV);
    return RES(pd_norm(x234(), DV, NULL, 0, 0));
}
static int w_expand_nd(int i, int *m, struct pd_tensor **out)
{
    int64_t s[PD_MAX_DIMS] = {1, 1, 1, 1, 1, 2, 3, 4};
    *m = II < 3 || II > PD_MAX_DIMS;
    return RES(pd_broadcast_to(x234(), II > PD_MAX_DIMS ? s : s + PD_MAX_DIMS - (II < 0 ? 0 : II), II));
}
static int w_expand_i(int i, int *m, struct pd_tensor **out)
{
    int64_t s[3] = {2, IV, 4};
    *m = IV != 3 && IV != -1;
    return RES(pd_expand(x234(), s, 3));
}
static int w_full_d(int i, int *m, struct pd_tensor **out) { *m = 0; return RES(pd_full((const int64_t[]){2}, 1, DV, PD_I32)); }
static int w_uniform_d(int i, int *m, struct pd_tensor **out)
{
    *m = BAD_D || DV < 0.0;
    return RES(pd_uniform((const int64_t[]){4}, 1, 0.0, DV, PD_F32, NULL));
}
static int w_normal_d(int i, int *m, struct pd_tensor **out)
{
    *m = BAD_D || DV < 0.0;
    return RES(pd_normal((const int64_t[]){4}, 1, 0.0, DV, PD_F32, NULL));
}
static int w_zero_size(int i, int *m, struct pd_tensor **out)
{
    /* i: which reduction over a [0, 4] tensor; any result or error, no crash */
    struct pd_tensor *x = x0();
    int ax[1] = {0};
    *m = 0;
    switch (i % 6) {
    case 0: return RES(pd_sum(x, ax, 1, 0));
    case 1: return RES(pd_amax(x, ax, 1, 0));
    case 2: return RES(pd_var(x, ax, 1, 1, 0));
    case 3: return RES(pd_logsumexp(x, ax, 1, 0));
    case 4: return RES(pd_norm(x, 2.0, NULL, 0, 0));
    default: return RES(pd_reshape(x, (const int64_t[]){-1, 0}, 2));
    }
}

/* --- generator, init --- */
static int w_gen_n(int i, int *m, struct pd_tensor **out)
{
    uint64_t a, b;
    *m = 0;
    *out = NULL;
    pd_generator_set_state(NULL, 1, 2);
    pd_generator_get_state(NULL, &a, &b);
    struct pd_generator *g = pd_generator_create(1);
    pd_generator_get_state(g, NP(0, &a), NP(1, &b));
    pd_generator_destroy(g);
    pd_generator_destroy(NULL);
    return 0;
}
static int w_init_n(int i, int *m, struct pd_tensor **out)
{
    *m = 1;
    *out = NULL;
    switch (i) {
    case 0: return rc_of(pd_init_normal_(NULL, 0, 1, NULL));
    case 1: return rc_of(pd_init_xavier_uniform_(NULL, 1, NULL));
    case 2: return rc_of(pd_init_kaiming_normal_(NULL, 0, PD_INIT_FAN_IN, PD_NL_RELU, NULL));
    case 3: return rc_of(pd_init_orthogonal_(NULL, 1, NULL));
    case 4: return rc_of(pd_init_eye_(NULL));
    case 5: return rc_of(pd_init_constant_(NULL, 1));
    default: { /* either fan may be left out */
        int64_t a, b;
        *m = 0;
        return rc_of(pd_init_fans(x234(), i == 6 ? NULL : &a, i == 6 ? &b : NULL));
    }
    }
}
static int w_init_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *t = pd_zeros((const int64_t[]){4, 4}, 2, PD_F32);
    *m = BAD_D || DV < 0.0;
    return RC(pd_init_normal_(t, 0.0, DV, NULL));
}
static int w_init_u_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *t = pd_zeros((const int64_t[]){4, 4}, 2, PD_F32);
    *m = BAD_D || DV < -1.0;
    return RC(pd_init_uniform_(t, -1.0, DV, NULL));
}
static int w_init_tn_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *t = pd_zeros((const int64_t[]){4, 4}, 2, PD_F32);
    *m = isnan(DV) || DV <= -2.0 || DV == -INFINITY;
    return RC(pd_init_trunc_normal_(t, 0.0, 1.0, -2.0, DV, NULL));
}
static int w_init_gain_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *t = pd_zeros((const int64_t[]){4, 4}, 2, PD_F32);
    *m = BAD_D;
    return RC(i & 1 ? pd_init_xavier_normal_(t, DV, NULL) : pd_init_orthogonal_(t, DV, NULL));
}
static int w_init_kaiming_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *t = pd_zeros((const int64_t[]){4, 4}, 2, PD_F32);
    *m = II < 0 || II >= PD_NONLINEARITY_COUNT;
    int rc = RC(pd_init_kaiming_uniform_(t, 0.0, PD_INIT_FAN_IN, (enum pd_nonlinearity)II, NULL));
    if (rc < 0 || *m) return rc;
    *m = II < 0 || II >= PD_INIT_MODE_COUNT;
    return RC(pd_init_kaiming_normal_(t, 0.0, (enum pd_init_mode)II, PD_NL_RELU, NULL));
}
static int w_init_zero_size(int i, int *m, struct pd_tensor **out)
{
    *m = 0;
    struct pd_tensor *t = x0();
    switch (i % 4) {
    case 0: return RC(pd_init_orthogonal_(t, 1.0, NULL));
    case 1: return RC(pd_init_xavier_uniform_(t, 1.0, NULL));
    case 2: return RC(pd_init_kaiming_normal_(t, 0.0, PD_INIT_FAN_OUT, PD_NL_RELU, NULL));
    default: return RC(pd_init_eye_(t));
    }
}

/* --- nn modules --- */
static int w_nn_n(int i, int *m, struct pd_tensor **out)
{
    /* i / 2: which module, i % 2: NULL module or NULL input */
    struct pd_state_dict *sd = pd_state_dict_create();
    int nulm = i % 2 == 0, rc = 0;
    struct pd_tensor *x = nulm ? x234() : NULL, *r = NULL;
    *m = 1;
    *out = NULL;
    switch (i / 2) {
    case 0: { struct pd_nn_linear *l = nulm ? NULL : pd_nn_linear_create(4, 2, 1, NULL);
        r = pd_nn_linear_forward(l, x); rc = pd_nn_linear_params(l, "l", nulm ? sd : NULL); pd_nn_linear_destroy(l); break; }
    case 1: { struct pd_nn_embedding *e = nulm ? NULL : pd_nn_embedding_create(4, 2, NULL);
        r = pd_nn_embedding_forward(e, nulm ? ids3() : NULL); rc = pd_nn_embedding_params(e, "e", nulm ? sd : NULL); pd_nn_embedding_destroy(e); break; }
    case 2: { struct pd_nn_rmsnorm *n = nulm ? NULL : pd_nn_rmsnorm_create(4, 1e-5);
        r = pd_nn_rmsnorm_forward(n, x); rc = pd_nn_rmsnorm_params(n, "n", nulm ? sd : NULL); pd_nn_rmsnorm_destroy(n); break; }
    case 3: { struct pd_nn_layernorm *n = nulm ? NULL : pd_nn_layernorm_create(4, 1e-5, 1);
        r = pd_nn_layernorm_forward(n, x); rc = pd_nn_layernorm_params(n, "n", nulm ? sd : NULL); pd_nn_layernorm_destroy(n); break; }
    case 4: { struct pd_nn_dropout *d = nulm ? NULL : pd_nn_dropout_create(0.5, 1);
        r = pd_nn_dropout_forward(d, x); rc = -1; pd_nn_dropout_destroy(d); break; }
    case 5: { struct pd_nn_mlp *p = nulm ? NULL : pd_nn_mlp_create(4, 8, NULL);
        r = pd_nn_mlp_forward(p, x); rc = pd_nn_mlp_params(p, "p", nulm ? sd : NULL); pd_nn_mlp_destroy(p); break; }
    case 6: { struct pd_nn_attention *a = nulm ? NULL : pd_nn_attention_create(4, 2, 1, 1e4, NULL);
        r = pd_nn_attention_forward(a, x, NULL, NULL, 1, NULL, NULL, 0); rc = pd_nn_attention_params(a, "a", nulm ? sd : NULL); pd_nn_attention_destroy(a); break; }
    default: { struct pd_nn_block *b = nulm ? NULL : pd_nn_block_create(4, 2, 1, 8, 1e-5, 1e4, NULL);
        r = pd_nn_block_forward(b, x, NULL, NULL, 1, NULL, NULL, 0); rc = pd_nn_block_params(b, "b", nulm ? sd : NULL); pd_nn_block_destroy(b); break; }
    }
    pd_state_dict_destroy(sd);
    if (r || rc >= 0) return 0; /* an accepted NULL */
    return pd_last_status() ? pd_last_status() : -1;
}
static int w_nn_create_i(int i, int *m, struct pd_tensor **out)
{
    /* a size v: modules must refuse v <= 0 (and may run out of memory above) */
    int64_t v = IV;
    *m = v <= 0;
    *out = NULL;
    int ok = 1;
    struct pd_nn_linear *l = pd_nn_linear_create(v, 2, 1, NULL);
    ok &= l != NULL, pd_nn_linear_destroy(l);
    struct pd_nn_embedding *e = pd_nn_embedding_create(2, v, NULL);
    ok &= e != NULL, pd_nn_embedding_destroy(e);
    struct pd_nn_rmsnorm *n = pd_nn_rmsnorm_create(v, 1e-5);
    ok &= n != NULL, pd_nn_rmsnorm_destroy(n);
    struct pd_nn_layernorm *ln = pd_nn_layernorm_create(v, 1e-5, 1);
    ok &= ln != NULL, pd_nn_layernorm_destroy(ln);
    struct pd_nn_mlp *p = pd_nn_mlp_create(4, v, NULL);
    ok &= p != NULL, pd_nn_mlp_destroy(p);
    if (v > 1 << 20) *m = 0; /* may run out of memory or succeed */
    if (*m) return ok ? 0 : -1; /* every one must refuse: a 0 means one accepted */
    return ok ? 0 : -1;
}
static int w_nn_heads_i(int i, int *m, struct pd_tensor **out)
{
    *m = !(II == 1);
    *out = NULL;
    struct pd_nn_attention *a = pd_nn_attention_create(4, II, 1, 1e4, NULL);
    struct pd_nn_block *b = pd_nn_block_create(4, 2, II, 8, 1e-5, 1e4, NULL);
    int ok = (a != NULL) || (b != NULL);
    if (II == 2) *m = 0, ok = 1; /* attention(2, 1) and block(2, 2) are both valid */
    pd_nn_attention_destroy(a);
    pd_nn_block_destroy(b);
    return ok ? 0 : -1;
}
static int w_nn_eps_d(int i, int *m, struct pd_tensor **out)
{
    *m = BAD_D || DV < 0.0;
    *out = NULL;
    struct pd_nn_rmsnorm *n = pd_nn_rmsnorm_create(4, DV);
    struct pd_nn_layernorm *l = pd_nn_layernorm_create(4, DV, 0);
    int ok = n || l;
    pd_nn_rmsnorm_destroy(n);
    pd_nn_layernorm_destroy(l);
    return ok ? 0 : -1;
}
static int w_nn_dropout_d(int i, int *m, struct pd_tensor **out)
{
    *m = !(DV >= 0.0 && DV <= 1.0);
    *out = NULL;
    struct pd_nn_dropout *d = pd_nn_dropout_create(DV, 1);
    pd_nn_dropout_destroy(d);
    return d ? 0 : -1;
}
static int w_nn_theta_d(int i, int *m, struct pd_tensor **out)
{
    *m = BAD_D || DV <= 0.0;
    *out = NULL;
    struct pd_nn_attention *a = pd_nn_attention_create(4, 2, 1, DV, NULL);
    pd_nn_attention_destroy(a);
    return a ? 0 : -1;
}

/* --- llama: config, model, cache --- */
static void tiny(struct pd_llama_config *c)
{
    pd_llama_config_default(c);
    c->vocab_size = 16, c->dim = 8, c->n_layers = 1, c->n_heads = 2, c->n_kv_heads = 1, c->hidden_dim = 16,
    c->max_seq_len = 8;
}
static int w_llama_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_llama_config c;
    tiny(&c);
    *m = 1;
    *out = NULL;
    switch (i) {
    case 0: return rc_of(pd_llama_config_validate(NULL));
    case 1: { char *j = pd_llama_config_to_json(NULL); free(j); return j ? 0 : -1; }
    case 2: return rc_of(pd_llama_config_from_json(NULL, "{}"));
    case 3: return rc_of(pd_llama_config_from_json(&c, NULL));
    case 4: { struct pd_llama *l = pd_llama_create(NULL, 1); pd_llama_destroy(l); return l ? 0 : -1; }
    case 5: { struct pd_kv_cache *k = pd_kv_cache_create(NULL, 1, 4); pd_kv_cache_destroy(k); return k ? 0 : -1; }
    case 6: *m = 0; return pd_llama_num_params(NULL) > 0 ? 0 : -1;
    case 7: return pd_llama_get_config(NULL) ? 0 : -1;
    case 8: return pd_llama_state_dict(NULL) ? 0 : -1;
    case 9: *m = 0; pd_llama_train(NULL, 1); pd_kv_cache_reset(NULL); pd_llama_destroy(NULL); pd_kv_cache_destroy(NULL);
        return pd_llama_is_training(NULL) > 0 || pd_kv_cache_len(NULL) > 0 ? 0 : -1;
    case 10: return isnan(pd_llama_flops_per_token(NULL, 4)) || pd_llama_flops_per_token(NULL, 4) < 0 ? -1 : 0;
    default: {
        /* NULL model / ids / targets for forward, loss and the packed forms */
        struct pd_llama *l = pd_llama_create(&c, 1);
        if (!l) return -1;
        int j = i - 11;
        struct pd_tensor *r;
        if (j < 2) r = pd_llama_forward(j == 0 ? NULL : l, j == 0 ? ids3() : NULL, NULL, NULL);
        else if (j < 5) r = pd_llama_loss(j == 2 ? NULL : l, j == 3 ? NULL : ids3(), j == 4 ? NULL : ids3());
        else if (j < 7) r = pd_llama_forward_packed(j == 5 ? NULL : l, j == 6 ? NULL : ids3(), j == 6 ? ids3() : NULL);
        else r = pd_llama_loss_packed(l, ids3(), ids3(), NULL);
        if (j == 6) *m = 1;
        if (j >= 5 && j != 6) *m = 0; /* a NULL doc_ids may mean one document */
        pd_llama_destroy(l);
        return r ? 0 : (pd_last_status() ? pd_last_status() : -1);
    }
    }
}
static int w_llama_cfg_i(int i, int *m, struct pd_tensor **out)
{
    /* each int field at v in turn: validate and create must agree */
    struct pd_llama_config c;
    int bad = 0, acc = 0;
    *out = NULL;
    for (int f = 0; f < 7; f++) {
        tiny(&c);
        int *fld[7] = {&c.vocab_size, &c.dim, &c.n_layers, &c.n_heads, &c.n_kv_heads, &c.hidden_dim, &c.max_seq_len};
        *fld[f] = II;
        if (II <= 0) bad++;
        if (pd_llama_config_validate(&c) == 0) {
            acc += II <= 0;
            if (II > 0 && II <= 16) {
                struct pd_llama *l = pd_llama_create(&c, 1);
                pd_llama_destroy(l);
            }
        } else {
            struct pd_llama *l = pd_llama_create(&c, 1);
            if (l) acc++; /* created from a config that does not validate */
            pd_llama_destroy(l);
        }
    }
    *m = bad > 0;
    return acc ? 0 : -1;
}
static int w_llama_cfg_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_llama_config c;
    int acc = 0;
    *out = NULL;
    for (int f = 0; f < 4; f++) {
        tiny(&c);
        double *fld[4] = {&c.norm_eps, &c.rope_theta, &c.dropout, &c.init_std};
        *fld[f] = DV;
        if (pd_llama_config_validate(&c) == 0) acc += BAD_D || DV < 0.0;
    }
    *m = BAD_D || DV < 0.0;
    return acc ? 0 : -1;
}
static int w_llama_json(int i, int *m, struct pd_tensor **out)
{
    static const char *js[] = {"", "{", "[]", "{\"dim\": -1}", "{\"dim\": 1e400}", "{\"dim\": \"x\"}", "{\"dim\": 99999999999}",
                               "{\"norm_eps\": NaN}", "{\"vocab_size\": 16, \"vocab_size\": 16}", "\xff\xfe", "{\"dim\": 8"};
    struct pd_llama_config c;
    *m = 1;
    *out = NULL;
    pd_llama_config_default(&c);
    int rc = pd_llama_config_from_json(&c, js[i]);
    if (i == 8) *m = 0;
    return rc_of(rc);
}
static int w_flops_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_llama_config c;
    tiny(&c);
    *m = 0;
    *out = NULL;
    double f = pd_llama_flops_per_token(&c, II);
    return isfinite(f) ? 0 : -1;
}

/* --- state dict --- */
static int w_sd_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_state_dict *sd = pd_state_dict_create();
    int rc;
    *m = 1;
    *out = NULL;
    pd_state_dict_set(sd, "a", x234(), 0);
    pd_state_dict_set_meta(sd, "k", "v");
    switch (i) {
    case 0: rc = pd_state_dict_set(NULL, "b", x234(), 0); break;
    case 1: rc = pd_state_dict_set(sd, NULL, x234(), 0); break;
    case 2: rc = pd_state_dict_set(sd, "b", NULL, 0); break;
    case 3: rc = pd_state_dict_add(sd, NULL, x234()); break;
    case 4: rc = pd_state_dict_remove(NULL, "a"); break;
    case 5: rc = pd_state_dict_remove(sd, NULL); break;
    case 6: rc = pd_state_dict_find(sd, NULL) >= 0 ? 0 : -1; break;
    case 7: rc = pd_state_dict_get(sd, NULL) ? 0 : -1; break;
    case 8: rc = pd_state_dict_get(NULL, "a") ? 0 : -1; break;
    case 9: rc = pd_state_dict_set_meta(sd, NULL, "v"); break;
    case 10: rc = pd_state_dict_set_meta(sd, "k", NULL); break;
    case 11: rc = pd_state_dict_set_meta(NULL, "k", "v"); break;
    case 12: rc = pd_state_dict_get_meta(sd, NULL) ? 0 : -1; break;
    case 13: rc = pd_state_dict_size(NULL) > 0 || pd_state_dict_numel(NULL) > 0 || pd_state_dict_meta_size(NULL) > 0 ? 0 : -1; break;
    case 14: rc = pd_state_dict_name(NULL, 0) || pd_state_dict_tensor(NULL, 0) || pd_state_dict_meta_key(NULL, 0) ? 0 : -1; break;
    case 15: rc = pd_state_dict_set(sd, "", x234(), 0); *m = 0; break; /* an empty name may be refused */
    default: rc = pd_state_dict_load(NULL, sd, 1, NULL, 0); break;
    }
    pd_state_dict_destroy(sd);
    return rc_of(rc);
}
static int w_sd_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_state_dict *sd = pd_state_dict_create();
    *out = NULL;
    pd_state_dict_set(sd, "a", x234(), 0);
    pd_state_dict_set_meta(sd, "k", "v");
    *m = II != 0;
    int ok = pd_state_dict_name(sd, II) != NULL;
    ok += pd_state_dict_tensor(sd, II) != NULL;
    ok += pd_state_dict_meta_key(sd, II) != NULL;
    ok += pd_state_dict_meta_value(sd, II) != NULL;
    pd_state_dict_destroy(sd);
    if (*m) return ok ? 0 : -1;
    return ok == 4 ? 0 : -1;
}

/* --- optimizer, schedule, clipping, grad scaler --- */
static struct pd_state_dict *params(void)
{
    struct pd_state_dict *sd = pd_state_dict_create();
    struct pd_tensor *w = pd_ones((const int64_t[]){2, 2}, 2, PD_F32);
    pd_requires_grad_(w, 1);
    pd_state_dict_set(sd, "w", w, 0);
    return sd;
}
static int w_opt_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_optim_config c;
    pd_optim_config_default(&c, PD_OPTIM_ADAMW);
    struct pd_state_dict *sd = params(), *st = pd_state_dict_create();
    struct pd_optimizer *o = pd_optimizer_create_for(&c, sd);
    int rc;
    *m = 1;
    *out = NULL;
    switch (i) {
    case 0: rc = pd_optim_config_validate(NULL); break;
    case 1: { struct pd_optimizer *p = pd_optimizer_create(NULL); rc = p ? 0 : -1; pd_optimizer_destroy(p); break; }
    case 2: { struct pd_optimizer *p = pd_optimizer_create_for(NULL, sd); rc = p ? 0 : -1; pd_optimizer_destroy(p); break; }
    case 3: { struct pd_optimizer *p = pd_optimizer_create_for(&c, NULL); rc = p ? 0 : -1; pd_optimizer_destroy(p); break; }
    case 4: rc = pd_optimizer_add_group(NULL, sd, &c); break;
    case 5: rc = pd_optimizer_add_group(o, NULL, &c); break;
    case 6: rc = pd_optimizer_add_group(o, sd, NULL); *m = 0; break; /* NULL: the default config */
    case 7: rc = pd_optimizer_add_decay_groups(NULL, sd, 0.1); break;
    case 8: rc = pd_optimizer_add_decay_groups(o, NULL, 0.1); break;
    case 9: rc = pd_optimizer_step(NULL); break;
    case 10: rc = pd_optimizer_set_lr(NULL, 0, 0.1); break;
    case 11: rc = isnan(pd_optimizer_get_lr(NULL, 0)) ? -1 : 0; break;
    case 12: rc = pd_optimizer_get_group_config(o, 0, NULL); break;
    case 13: rc = pd_optimizer_set_group_config(o, 0, NULL); break;
    case 14: rc = pd_optimizer_state_dict(o, NULL, "o"); break;
    case 15: rc = pd_optimizer_state_dict(NULL, st, "o"); break;
    case 16: rc = pd_optimizer_load_state_dict(o, NULL, "o"); break;
    case 17: rc = pd_optimizer_load_state_dict(NULL, st, "o"); break;
    case 18: rc = pd_optimizer_accumulate(NULL, 2); break;
    case 19: rc = isnan(pd_clip_grad_norm(NULL, 1.0)) ? -1 : 0; *m = 0; break;
    case 20: rc = pd_clip_grad_norm_tensors(NULL, 2, 1.0) < 0 ? -1 : 0; break;
    case 21: rc = isnan(pd_optimizer_clip_grad_norm(NULL, 1.0)) ? -1 : 0; *m = 0; break;
    case 22: rc = isnan(pd_lr_schedule_at(NULL, 0)) ? -1 : 0; break;
    case 23: rc = pd_lr_schedule_validate(NULL); break;
    default: *m = 0; pd_optimizer_zero_grad(NULL); pd_optimizer_destroy(NULL);
        rc = pd_optimizer_num_groups(NULL) > 0 || pd_optimizer_num_params(NULL) > 0 || pd_optimizer_step_count(NULL) > 0 ? 0 : -1;
        break;
    }
    pd_optimizer_destroy(o);
    pd_state_dict_destroy(sd);
    pd_state_dict_destroy(st);
    return rc_of(rc);
}
static int w_opt_group_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_optim_config c, g;
    pd_optim_config_default(&c, PD_OPTIM_ADAMW);
    struct pd_state_dict *sd = params();
    struct pd_optimizer *o = pd_optimizer_create_for(&c, sd);
    int n = pd_optimizer_num_groups(o), acc = 0;
    *out = NULL;
    *m = II < 0 || II >= n;
    acc += pd_optimizer_set_lr(o, II, 0.1) == 0 && II >= 0; /* a group < 0 sets them all */
    acc += !isnan(pd_optimizer_get_lr(o, II));
    acc += pd_optimizer_get_group_config(o, II, &g) == 0;
    acc += pd_optimizer_set_group_config(o, II, &c) == 0;
    int ra = pd_optimizer_accumulate(o, II); /* k: steps to accumulate; k < 1 is invalid */
    if (II < 1 && ra == 0) acc += 100;
    pd_optimizer_destroy(o);
    pd_state_dict_destroy(sd);
    if (*m) return acc ? 0 : -1;
    return acc >= 3 && acc < 100 ? 0 : -1;
}
static int w_opt_cfg_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_optim_config c;
    int acc = 0;
    *out = NULL;
    for (int f = 0; f < 6; f++) {
        pd_optim_config_default(&c, f < 4 ? PD_OPTIM_ADAMW : PD_OPTIM_SGD);
        double *fld[6] = {&c.lr, &c.weight_decay, &c.beta1, &c.eps, &c.momentum, &c.dampening};
        *fld[f] = DV;
        if (pd_optim_config_validate(&c) == 0) acc += BAD_D || DV < 0.0 || (f == 2 && DV >= 1.0);
        struct pd_optimizer *o = pd_optimizer_create(&c);
        if (o && (BAD_D || DV < 0.0)) acc++;
        pd_optimizer_destroy(o);
    }
    *m = BAD_D || DV < 0.0;
    return acc ? 0 : -1;
}
static int w_opt_lr_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_optim_config c;
    pd_optim_config_default(&c, PD_OPTIM_SGD);
    struct pd_state_dict *sd = params();
    struct pd_optimizer *o = pd_optimizer_create_for(&c, sd);
    *out = NULL;
    *m = BAD_D || DV < 0.0;
    int rc = pd_optimizer_set_lr(o, 0, DV);
    pd_optimizer_destroy(o);
    pd_state_dict_destroy(sd);
    return rc_of(rc);
}
static int w_clip_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_state_dict *sd = params();
    *out = NULL;
    *m = isnan(DV) || DV < 0.0;
    double r = pd_clip_grad_norm(sd, DV);
    pd_state_dict_destroy(sd);
    return r < 0 ? (pd_last_status() ? pd_last_status() : -1) : 0;
}
static int w_clip_n_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *t[2] = {x234(), x234()};
    *out = NULL;
    *m = II < 0;
    if (II > 2) return -1; /* the array has 2: a caller's bug no callee can see */
    double r = pd_clip_grad_norm_tensors(t, II, 1.0);
    return r < 0 ? (pd_last_status() ? pd_last_status() : -1) : 0;
}
static int w_sched_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_lr_schedule s = {0};
    *out = NULL;
    int acc = 0, n = 0;
    for (int k = 0; k < 4; k++) {
        memset(&s, 0, sizeof s);
        s.kind = (enum pd_lr_kind)k;
        s.base_lr = 1.0, s.min_lr = 0.1, s.warmup_steps = 2, s.total_steps = 10, s.step_size = 3, s.gamma = 0.5;
        if (k == 3) s.warmup_steps = IV, s.kind = (enum pd_lr_kind)1;
        if (k == 2) s.total_steps = IV;
        if (k == 1) s.step_size = IV;
        if (k == 0) s.kind = (enum pd_lr_kind)II;
        if (pd_lr_schedule_validate(&s) == 0) {
            double r = pd_lr_schedule_at(&s, IV);
            if (!isfinite(r)) acc++; /* a validated schedule must give a number at any step */
            n++;
        }
    }
    *m = 0;
    return acc ? -1 : 0;
}
static int w_scaler_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_grad_scaler_config c;
    pd_grad_scaler_config_default(&c);
    struct pd_grad_scaler *s = pd_grad_scaler_create(&c);
    struct pd_state_dict *st = pd_state_dict_create();
    int rc;
    *m = 1;
    *out = NULL;
    switch (i) {
    case 0: { struct pd_grad_scaler *p = pd_grad_scaler_create(NULL); rc = p ? 0 : -1; pd_grad_scaler_destroy(p); *m = 0; break; }
    case 1: rc = pd_grad_scaler_scale(NULL, pd_scalar(1, PD_F32)) ? 0 : -1; break;
    case 2: rc = pd_grad_scaler_scale(s, NULL) ? 0 : -1; break;
    case 3: rc = pd_grad_scaler_unscale(s, NULL); break;
    case 4: rc = pd_grad_scaler_step(s, NULL); break;
    case 5: rc = pd_grad_scaler_update(NULL); break;
    case 6: rc = pd_grad_scaler_state_dict(s, NULL, "s"); break;
    case 7: rc = pd_grad_scaler_state_dict(NULL, st, "s"); break;
    case 8: rc = pd_grad_scaler_load_state_dict(s, NULL, "s"); break;
    case 9: rc = pd_grad_scaler_load_state_dict(NULL, st, "s"); break;
    case 10: rc = pd_grad_scaler_load_state_dict(s, st, "s"); break; /* nothing saved under "s" */
    default: *m = 0; pd_grad_scaler_destroy(NULL);
        rc = pd_grad_scaler_get_scale(NULL) > 0 || pd_grad_scaler_found_inf(NULL) > 0 || pd_grad_scaler_skipped_steps(NULL) > 0 ? 0 : -1;
        break;
    }
    pd_grad_scaler_destroy(s);
    pd_state_dict_destroy(st);
    return rc_of(rc);
}
static int w_scaler_cfg_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_grad_scaler_config c;
    int acc = 0;
    *out = NULL;
    for (int f = 0; f < 3; f++) {
        pd_grad_scaler_config_default(&c);
        double *fld[3] = {&c.init_scale, &c.growth_factor, &c.backoff_factor};
        *fld[f] = DV;
        int bad = BAD_D || DV <= 0.0 || (f == 1 && DV < 1.0) || (f == 2 && DV > 1.0);
        struct pd_grad_scaler *s = pd_grad_scaler_create(&c);
        acc += s && bad;
        pd_grad_scaler_destroy(s);
    }
    *m = BAD_D || DV <= 0.0;
    return acc ? 0 : -1;
}
static int w_scaler_scale_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_grad_scaler_config c;
    pd_grad_scaler_config_default(&c);
    struct pd_grad_scaler *s = pd_grad_scaler_create(&c);
    *m = 0; /* a NaN or infinite loss is the scaler's business: it skips the step */
    int rc = RES(pd_grad_scaler_scale(s, pd_scalar(DV, PD_F32)));
    if (!rc) pd_grad_scaler_update(s);
    pd_grad_scaler_destroy(s);
    return rc;
}

/* --- tokenizer, data set --- */
static int w_tok_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_tokenizer *t = pd_tokenizer_byte_create();
    int32_t *ids = NULL, one[2] = {65, 66};
    size_t len;
    int rc, a, b;
    *m = 1;
    *out = NULL;
    switch (i) {
    case 0: rc = (int)pd_tokenizer_encode(NULL, "ab", 2, &ids); break;
    case 1: rc = (int)pd_tokenizer_encode(t, NULL, 2, &ids); break;
    case 2: rc = (int)pd_tokenizer_encode(t, "ab", 2, NULL); break;
    case 3: { char *s = pd_tokenizer_decode(NULL, one, 2, &len); rc = s ? 0 : -1; free(s); break; }
    case 4: { char *s = pd_tokenizer_decode(t, NULL, 2, &len); rc = s ? 0 : -1; free(s); break; }
    case 5: { char *s = pd_tokenizer_decode(t, one, 2, NULL); rc = s ? 0 : -1; free(s); *m = 0; break; }
    case 6: rc = pd_tokenizer_add_special(t, NULL); break;
    case 7: rc = pd_tokenizer_add_special(NULL, "<s>"); break;
    case 8: rc = pd_tokenizer_special_id(t, NULL) >= 0 ? 0 : -1; break;
    case 9: { struct pd_tokenizer *p = pd_tokenizer_from_json(NULL); rc = p ? 0 : -1; pd_tokenizer_destroy(p); break; }
    case 10: { char *s = pd_tokenizer_to_json(NULL); rc = s ? 0 : -1; free(s); break; }
    case 11: rc = pd_tokenizer_merge(t, 0, NULL, &b); break;
    case 12: rc = pd_tokenizer_token(t, 65, NULL) ? 0 : -1; *m = 0; break;
    case 13: { struct pd_tokenizer *p = pd_bpe_train(NULL, 10, 260, NULL); rc = p ? 0 : -1; pd_tokenizer_destroy(p); break; }
    case 14: rc = pd_tokenizer_save(t, NULL); break;
    case 15: rc = pd_tokenizer_save(NULL, "/tmp/pd-sweep-never-written.json"); break;
    case 16: { struct pd_tokenizer *p = pd_tokenizer_load(NULL); rc = p ? 0 : -1; pd_tokenizer_destroy(p); break; }
    case 17: { struct pd_text_dataset *d = pd_text_dataset_from_memory(NULL, 10, t, 0.1); rc = d ? 0 : -1; pd_text_dataset_destroy(d); break; }
    case 18: { struct pd_text_dataset *d = pd_text_dataset_open(NULL, t, 0.1); rc = d ? 0 : -1; pd_text_dataset_destroy(d); break; }
    case 19: rc = pd_dataset_batch(NULL, PD_SPLIT_TRAIN, 1, 2, NULL, NULL, NULL); break;
    case 20: { struct pd_dataset_iter *it = pd_dataset_iter_create(NULL, PD_SPLIT_TRAIN, 1, 2); rc = it ? 0 : -1; pd_dataset_iter_destroy(it); break; }
    case 21: { struct pd_tensor *x, *y; rc = pd_dataset_iter_next(NULL, &x, &y); break; }
    case 22: { struct pd_tokenizer *p = pd_tokenizer_load_gpt2(NULL, "vocab.bpe"); rc = p ? 0 : -1; pd_tokenizer_destroy(p); break; }
    case 23: { struct pd_tokenizer *p = pd_tokenizer_load_gpt2("encoder.json", NULL); rc = p ? 0 : -1; pd_tokenizer_destroy(p); break; }
    case 24: { char *s = pd_tokenizer_decode_continuation(NULL, one, 2, &len); rc = s ? 0 : -1; free(s); break; }
    case 25: { char *s = pd_tokenizer_to_hf_json(NULL); rc = s ? 0 : -1; free(s); break; }
    case 26: rc = pd_tokenizer_save_hf(t, NULL); break;
    default: *m = 0; pd_tokenizer_destroy(NULL); pd_text_dataset_destroy(NULL); pd_dataset_iter_destroy(NULL);
        pd_dataset_iter_reset(NULL);
        rc = pd_tokenizer_vocab_size(NULL) > 0 || pd_tokenizer_n_merges(NULL) > 0 || pd_text_dataset_vocab_size(NULL) > 0 ||
             pd_text_dataset_num_tokens(NULL, PD_SPLIT_TRAIN) > 0 || pd_dataset_iter_num_windows(NULL) > 0 ||
             pd_tokenizer_bos_id(NULL) >= 0 ? 0 : -1;
        (void)a;
        break;
    }
    free(ids);
    pd_tokenizer_destroy(t);
    return rc_of(rc);
}
static int w_tok_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_tokenizer *t = pd_tokenizer_byte_create();
    int32_t ids[2] = {65, II};
    size_t len;
    int a, b, acc = 0;
    *out = NULL;
    *m = II < 0 || II >= 256;
    acc += pd_tokenizer_token(t, II, &len) != NULL;
    char *s = pd_tokenizer_decode(t, ids, 2, &len);
    acc += s != NULL;
    free(s);
    if (pd_tokenizer_merge(t, II, &a, &b) == 0) acc += 100; /* the byte tokenizer has no merges */
    s = pd_tokenizer_decode(t, ids, IV < 0 ? IV : 0, &len); /* n < 0 */
    if (s && IV < 0) acc += 100;
    free(s);
    pd_tokenizer_destroy(t);
    if (*m) return acc ? 0 : -1;
    return acc == 2 ? 0 : -1;
}
static int w_tok_encode_i(int i, int *m, struct pd_tensor **out)
{
    /* a huge len over a short buffer is the caller's bug and cannot be caught; only the
     * sizes that overflow or exceed what a tokenizer can return must be refused */
    struct pd_tokenizer *t = pd_tokenizer_byte_create();
    int32_t *ids = NULL;
    *out = NULL;
    *m = 0;
    int64_t n = pd_tokenizer_encode(t, "abc", IV == 1 || IV == 3 || IV == 0 ? (size_t)IV : 0, &ids);
    free(ids);
    pd_tokenizer_destroy(t);
    return n < 0 ? (int)n : 0;
}
static int w_tok_json(int i, int *m, struct pd_tensor **out)
{
    static const char *js[] = {"", "{", "{}", "[]", "{\"kind\": \"bpe\", \"merges\": [[1e400, 2]]}", "{\"kind\": \"byte\", \"specials\": [1]}",
                               "{\"kind\": \"bpe\", \"merges\": [[-1, 2]]}", "{\"kind\": \"bpe\", \"merges\": [[1, 99999]]}", "\xff",
                               "{\"kind\": \"bpe\", \"merges\": [[0, 0], [256, 300]]}", "null"};
    *m = 1;
    *out = NULL;
    struct pd_tokenizer *t = pd_tokenizer_from_json(js[i]);
    if (i == 2 || i == 5) *m = 0;
    pd_tokenizer_destroy(t);
    return t ? 0 : -1;
}
static const char text[] = "the quick brown fox jumps over the lazy dog, again and again and again.";
static int w_ds_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_text_dataset *ds = pd_text_dataset_from_memory(text, sizeof text - 1, NULL, 0.25);
    int32_t buf[8];
    int acc = 0;
    *out = NULL;
    if (!ds) return -1;
    int64_t nt = pd_text_dataset_num_tokens(ds, PD_SPLIT_TRAIN);
    *m = IV < 0 || IV > nt - 4;
    acc += pd_text_dataset_ids(ds, PD_SPLIT_TRAIN, IV, 4, buf) == 0;
    if (pd_text_dataset_ids(ds, PD_SPLIT_TRAIN, 0, IV < 0 ? IV : 0, buf) == 0 && IV < 0) acc += 100;
    if (pd_text_dataset_num_tokens(ds, (enum pd_split)II) >= 0 && (II < 0 || II > 1)) acc += 100;
    struct pd_dataset_iter *it = pd_dataset_iter_create(ds, (enum pd_split)(II >= 0 && II <= 1 ? II : 0), II, 4);
    if (it && II < 1) acc += 100;
    pd_dataset_iter_destroy(it);
    it = pd_dataset_iter_create(ds, (enum pd_split)II, 1, 4);
    if (it && (II < 0 || II > 1)) acc += 100;
    pd_dataset_iter_destroy(it);
    struct pd_tensor *x, *y;
    if (II <= 64 && pd_dataset_batch(ds, PD_SPLIT_TRAIN, II, 4, NULL, &x, &y) == 0 && II < 1) acc += 100; /* huge: only slow */
    pd_text_dataset_destroy(ds);
    if (*m) return acc ? 0 : -1;
    return acc == 1 ? 0 : -1;
}
static int w_ds_d(int i, int *m, struct pd_tensor **out)
{
    *out = NULL;
    *m = !(DV >= 0.0 && DV < 1.0);
    struct pd_text_dataset *ds = pd_text_dataset_from_memory(text, sizeof text - 1, NULL, DV);
    pd_text_dataset_destroy(ds);
    return ds ? 0 : -1;
}
static int w_arith_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_arith_config c;
    pd_arith_config_default(&c);
    *out = NULL;
    struct pd_arith_task *t = pd_arith_task_create(&c, 1, 4);
    if (!t) return -1;
    *m = II < 0 || II >= pd_arith_task_size(t);
    int acc = (pd_arith_task_prompt(t, II) != NULL) + (pd_arith_task_answer(t, II) != NULL);
    acc += pd_arith_task_score(t, II, "1", 1) > 0 || !*m; /* out of range scores 0 */
    pd_arith_task_destroy(t);
    struct pd_arith_task *u = pd_arith_task_create(&c, 1, II > 64 ? -1 : II);
    if (u && II < 0) acc += 100;
    pd_arith_task_destroy(u);
    if (*m) return acc ? 0 : -1;
    return acc == 3 ? 0 : -1;
}
static int w_arith_fmt_i(int i, int *m, struct pd_tensor **out)
{
    char p[24], a[24];
    *m = 0;
    *out = NULL;
    pd_arith_format(NULL, PD_ARITH_ADD, INT64_MAX, IV, p, a); /* overflowed (UB) before */
    pd_arith_format(NULL, PD_ARITH_SUB, INT64_MIN, IV, p, a);
    return 0;
}
static int w_arith_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_arith_config c;
    char p[64], a[64];
    size_t len;
    pd_arith_config_default(&c);
    *m = 1;
    *out = NULL;
    switch (i) {
    case 0: return rc_of(pd_arith_config_validate(NULL));
    case 1: { *m = 0; struct pd_arith_task *t = pd_arith_task_create(NULL, 1, 4); /* NULL: the defaults */ pd_arith_task_destroy(t); return t ? 0 : -1; }
    case 2: return pd_arith_score(NULL, "1", 1) > 0 ? 0 : -1;
    case 3: return pd_arith_score("1", NULL, 1) > 0 ? 0 : -1;
    case 4: { char *s = pd_builtin_text(1, 4, NULL, &len); free(s); *m = 0; return s ? 0 : -1; }
    case 5: *m = 0; pd_arith_format(&c, (enum pd_arith_op)0, 1, 2, p, NULL); (void)a; return 0;
    default: *m = 0; pd_arith_task_destroy(NULL);
        return pd_arith_task_size(NULL) > 0 || pd_arith_task_prompt(NULL, 0) || pd_arith_task_score(NULL, 0, "1", 1) > 0 ? 0 : -1;
    }
}

/* --- generation, sampling --- */
static int w_gen_cfg_d(int i, int *m, struct pd_tensor **out)
{
    struct pd_generate_config c;
    int acc = 0;
    float logits[4] = {1, 2, 3, 4};
    double probs[4];
    *out = NULL;
    for (int f = 0; f < 2; f++) {
        pd_generate_config_default(&c);
        if (f == 0) c.temperature = DV;
        else c.top_p = DV;
        int bad = BAD_D || DV < 0.0 || (f == 1 && (DV <= 0.0 || DV > 1.0));
        if (pd_generate_config_validate(&c) == 0 && bad) acc++;
    }
    pd_generate_config_default(&c);
    c.temperature = 1.0;
    int64_t t = pd_sample_logits(logits, 4, &c, DV, probs); /* u outside [0, 1) */
    if (t >= 0 && !(DV >= 0.0 && DV < 1.0)) acc++;
    if (t >= 4) acc += 100;
    *m = BAD_D || DV < 0.0 || DV >= 1.0;
    return acc ? 0 : -1;
}
static int w_generate_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_llama_config c;
    struct pd_generate_config g;
    float logits[4] = {1, 2, 3, 4};
    tiny(&c);
    pd_generate_config_default(&g);
    g.max_new_tokens = 2;
    int64_t row[2] = {1, 2};
    const int64_t *prompts[1] = {row};
    int lens[1] = {2};
    *m = 1;
    *out = NULL;
    if (i == 6) return pd_sample_logits(NULL, 4, &g, 0.5, NULL) >= 0 ? 0 : -1;
    if (i == 7) return pd_sample_logits(logits, 4, NULL, 0.5, NULL) >= 0 ? 0 : -1;
    if (i == 8) return rc_of(pd_generate_config_validate(NULL));
    if (i == 9) {
        *m = 0;
        pd_generation_destroy(NULL);
        return pd_generation_rows(NULL) > 0 || pd_generation_len(NULL, 0) > 0 || pd_generation_tokens(NULL, 0) ||
               pd_generation_stopped(NULL, 0) > 0 ? 0 : -1;
    }
    struct pd_llama *l = pd_llama_create(&c, 1);
    if (!l) return -1;
    struct pd_generation *r = i < 4 ? pd_generate(NP(0, l), NP(1, prompts), NP(2, lens), 1, NP(3, &g), NULL) : NULL;
    if (i == 4) { /* rows of a good generation at a bad index */
        r = pd_generate(l, prompts, lens, 1, &g, NULL);
        int bad = r && (pd_generation_tokens(r, 1) || pd_generation_tokens(r, -1) || pd_generation_len(r, 5) > 0);
        pd_generation_destroy(r);
        pd_llama_destroy(l);
        return bad ? 0 : -1;
    }
    if (i == 5) { /* a prompt id out of the vocabulary */
        int64_t badrow[2] = {1, 99};
        const int64_t *bp[1] = {badrow};
        r = pd_generate(l, bp, lens, 1, &g, NULL);
    }
    pd_generation_destroy(r);
    pd_llama_destroy(l);
    return r ? 0 : (pd_last_status() ? pd_last_status() : -1);
}
static int w_generate_i(int i, int *m, struct pd_tensor **out)
{
    /* n_rows, prompt length, max_new_tokens, top_k and the stop count at v */
    struct pd_llama_config c;
    struct pd_generate_config g;
    tiny(&c);
    int64_t row[2] = {1, 2};
    const int64_t *prompts[2] = {row, row};
    int lens[2] = {2, 2}, acc = 0;
    *out = NULL;
    struct pd_llama *l = pd_llama_create(&c, 1);
    if (!l) return -1;
    for (int f = 0; f < 5; f++) {
        pd_generate_config_default(&g);
        g.max_new_tokens = 2;
        int rows = 1, bad = 0;
        int lens2[2] = {2, 2};
        if (f == 0) rows = II, bad = II < 1, acc += 0;
        if (f == 1) lens2[0] = II, bad = II < 1 || II > 2;
        if (f == 2) g.max_new_tokens = II, bad = II < 0;
        if (f == 3) g.top_k = II, bad = II < 0;
        if (f == 4) g.n_stop_tokens = II, bad = II < 0 || II > PD_GENERATE_MAX_STOP;
        if (f == 0 && II > 2) continue;   /* the arrays hold 2 rows */
        if (f == 1 && II > 2) continue;   /* a length past the row is the caller's bug */
        if (f == 2 && II > 4) continue;   /* long generations: slow, and limited by max_seq_len */
        struct pd_generation *r = pd_generate(l, prompts, f == 1 ? lens2 : lens, rows, &g, NULL);
        if (r && bad) acc++;
        pd_generation_destroy(r);
    }
    (void)lens;
    pd_llama_destroy(l);
    *m = II < 0 || (II > PD_GENERATE_MAX_STOP && II <= 2);
    return acc ? 0 : -1;
}

/* --- autocast, io, misc --- */
static int w_autocast_i(int i, int *m, struct pd_tensor **out)
{
    *out = NULL;
    *m = II < 0 || II >= PD_DTYPE_COUNT;
    int tok = pd_autocast_begin((enum pd_dtype)II);
    if (tok >= 0) pd_autocast_end(tok);
    int bad_end = pd_autocast_end(II) == 0; /* no autocast is open: any token is wrong */
    if (bad_end) return 0;
    if (pd_autocast_set_op_policy("matmul", (enum pd_autocast_policy)II) == 0 && (II < 0 || II > 2)) {
        pd_autocast_reset_policies();
        return 0;
    }
    pd_autocast_reset_policies();
    if (*m) return tok >= 0 ? 0 : -1;
    return tok >= 0 ? 0 : -1;
}
static int w_io_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_state_dict *sd = params();
    char rep[64], buf[16];
    size_t len;
    int rc;
    *m = 1;
    *out = NULL;
    switch (i) {
    case 0: { struct pd_state_dict *r = pd_safetensors_load(NULL); rc = r ? 0 : -1; pd_state_dict_destroy(r); break; }
    case 1: rc = pd_safetensors_save(NULL, sd); break;
    case 2: rc = pd_safetensors_save("/tmp/pd-sweep-never-written.st", NULL); break;
    case 3: { struct pd_safetensors_info *r = pd_safetensors_info(NULL); rc = r ? 0 : -1; pd_safetensors_info_destroy(r); break; }
    case 4: rc = pd_state_dict_load(sd, NULL, 1, rep, sizeof rep); break;
    case 5: rc = pd_state_dict_save_file(NULL, sd); break;
    case 6: rc = pd_state_dict_load_file(NULL, "/nonexistent", 1, rep, sizeof rep); break;
    case 7: rc = pd_state_dict_load_file(sd, NULL, 1, rep, sizeof rep); break;
    case 8: { char *s = pd_file_read(NULL, 10, &len); rc = s ? 0 : -1; free(s); break; }
    case 9: rc = pd_file_write(NULL, "x", 1); break;
    case 10: rc = pd_file_write("/tmp/pd-sweep-never-written", NULL, 1); break;
    case 11: *m = 0; rc = pd_quote(NULL, buf, sizeof buf) ? 0 : -1; break;
    case 12: *m = 0; rc = pd_quote("abc", NULL, 0) ? 0 : -1; break;
    case 13: *m = 0; rc = pd_safetensors_dtype_name((enum pd_dtype)-1) ? -1 : 0; pd_safetensors_info_destroy(NULL); break;
    case 14: rc = pd_format_double(0.1, NULL, 64) ? 0 : -1; break;
    case 15: rc = pd_format_double(0.1, buf, sizeof buf) ? 0 : -1; break; /* 16 bytes: too small */
    default: rc = pd_state_dict_load(sd, sd, 1, NULL, 64); *m = 0; break;
    }
    pd_state_dict_destroy(sd);
    return rc_of(rc);
}

static const struct sw_wrap wraps[] = {
    {"pd_reshape(NULL x | shape)", NUL, 2, w_reshape_n}, {"pd_view(NULL x | shape)", NUL, 2, w_view_n},
    {"pd_expand(NULL x | shape)", NUL, 2, w_expand_n}, {"pd_permute(NULL x | perm)", NUL, 2, w_permute_n},
    {"pd_mean(NULL x | axes)", NUL, 2, w_sum_n}, {"pd_sum_to_shape(NULL x | shape)", NUL, 2, w_sts_n},
    {"pd_flip(NULL x | axes)", NUL, 2, w_flip_n}, {"pd_zeros(NULL shape)", NUL, 1, w_zeros_n},
    {"pd_rand(NULL shape)", NUL, 1, w_rand_n}, {"pd_tensor_stats(NULL)", NUL, 2, w_stats_n},
    {"pd_permute(x, {v, 1, 0})", INT, 0, w_permute_i}, {"pd_permute(x, perm, ndim v)", INT, 0, w_permute_nd},
    {"pd_amax(x, {v})", INT, 0, w_axes_i}, {"pd_var(x, {v, 1})", INT, 0, w_axes_dup},
    {"pd_logsumexp(x, axes, n v)", INT, 0, w_axes_nax}, {"pd_flip(x, {v})", INT, 0, w_flip_i},
    {"pd_broadcast_to(x, s, ndim v)", INT, 0, w_expand_nd}, {"pd_expand(x, {2, v, 4})", INT, 0, w_expand_i},
    {"pd_norm(x, p v)", DBL, 0, w_norm_d}, {"pd_full(I32, v)", DBL, 0, w_full_d},
    {"pd_uniform(0, v)", DBL, 0, w_uniform_d}, {"pd_normal(0, std v)", DBL, 0, w_normal_d},
    {"reductions of a [0, 4] tensor", NUL, 6, w_zero_size},
    {"pd_generator_*(NULL)", NUL, 2, w_gen_n}, {"pd_init_*(NULL)", NUL, 8, w_init_n},
    {"pd_init_normal_(std v)", DBL, 0, w_init_d}, {"pd_init_uniform_(-1, v)", DBL, 0, w_init_u_d},
    {"pd_init_trunc_normal_(b v)", DBL, 0, w_init_tn_d}, {"pd_init_xavier_normal_/orthogonal_(gain v)", DBL, 0, w_init_gain_d},
    {"pd_init_kaiming_*(nl/mode v)", INT, 0, w_init_kaiming_i}, {"pd_init_* of a [0, 4] tensor", NUL, 4, w_init_zero_size},
    {"pd_nn_*_forward/params(NULL)", NUL, 16, w_nn_n}, {"pd_nn_*_create(size v)", INT, 0, w_nn_create_i},
    {"pd_nn_attention/block_create(heads v)", INT, 0, w_nn_heads_i}, {"pd_nn_rms/layernorm_create(eps v)", DBL, 0, w_nn_eps_d},
    {"pd_nn_dropout_create(p v)", DBL, 0, w_nn_dropout_d}, {"pd_nn_attention_create(theta v)", DBL, 0, w_nn_theta_d},
    {"pd_llama_*(NULL)", NUL, 19, w_llama_n}, {"pd_llama_config int field v", INT, 0, w_llama_cfg_i},
    {"pd_llama_config double field v", DBL, 0, w_llama_cfg_d}, {"pd_llama_config_from_json(bad)", NUL, 11, w_llama_json},
    {"pd_llama_flops_per_token(seq v)", INT, 0, w_flops_i},
    {"pd_state_dict_*(NULL)", NUL, 17, w_sd_n}, {"pd_state_dict_name/tensor/meta(i v)", INT, 0, w_sd_i},
    {"pd_optimizer_*(NULL)", NUL, 25, w_opt_n}, {"pd_optimizer_*(group v)", INT, 0, w_opt_group_i},
    {"pd_optim_config field v", DBL, 0, w_opt_cfg_d}, {"pd_optimizer_set_lr(0, v)", DBL, 0, w_opt_lr_d},
    {"pd_clip_grad_norm(max v)", DBL, 0, w_clip_d}, {"pd_clip_grad_norm_tensors(n v)", INT, 0, w_clip_n_i},
    {"pd_lr_schedule_at/validate(v)", INT, 0, w_sched_i},
    {"pd_grad_scaler_*(NULL)", NUL, 12, w_scaler_n}, {"pd_grad_scaler_config field v", DBL, 0, w_scaler_cfg_d},
    {"pd_grad_scaler_scale(loss v)", DBL, 0, w_scaler_scale_d},
    {"pd_tokenizer_*/dataset_*(NULL)", NUL, 28, w_tok_n}, {"pd_tokenizer_token/decode/merge(id v)", INT, 0, w_tok_i},
    {"pd_tokenizer_encode(len v)", INT, 0, w_tok_encode_i}, {"pd_tokenizer_from_json(bad)", NUL, 11, w_tok_json},
    {"pd_text_dataset_*/dataset_iter(v)", INT, 0, w_ds_i}, {"pd_text_dataset_from_memory(val v)", DBL, 0, w_ds_d},
    {"pd_arith_task_*(i v)", INT, 0, w_arith_i}, {"pd_arith_*(NULL)", NUL, 7, w_arith_n},
    {"pd_arith_format(extremes, v)", INT, 0, w_arith_fmt_i},
    {"pd_generate_config/sample_logits(v)", DBL, 0, w_gen_cfg_d}, {"pd_generate/sample_logits(NULL)", NUL, 10, w_generate_n},
    {"pd_generate(rows/len/max/top_k/stops v)", INT, 0, w_generate_i},
    {"pd_autocast_*(v)", INT, 0, w_autocast_i}, {"pd_safetensors/state_dict_*file/pd_file_*(NULL)", NUL, 17, w_io_n},
};
#define N_WRAP ((int)(sizeof wraps / sizeof wraps[0]))

/* Entry e of both tables, the first then sweep_more.c's. */
static const struct sw_wrap *row(int e) { return e < N_WRAP ? &wraps[e] : &sw_more[e - N_WRAP]; }
static int n_of(int e) { return row(e)->shape == INT ? NI : row(e)->shape == DBL ? ND : row(e)->n; }

int sw_wrap_count(void)
{
    int n = 0;
    for (int e = 0; e < N_WRAP + sw_n_more; e++) n += n_of(e);
    return n;
}

static const struct sw_wrap *locate(int k, int *i)
{
    int e = 0;
    while (e < N_WRAP + sw_n_more && k >= n_of(e)) k -= n_of(e), e++;
    *i = k;
    return row(e);
}

void sw_run_wrap_case(int k, int judge_k)
{
    int i, must = 0;
    const struct sw_wrap *w = locate(k, &i);
    struct pd_tensor *out = NULL;
    pd_clear_error();
    int rc = w->fn(i, &must, &out);
    /* A NULL tensor input propagates without a new message (include/pd/tensor.h
     * "Errors"), and a wrapper that checks several calls returns -1 without a
     * status when it found nothing to judge. Elsewhere a failure where an error
     * was due needs a status and a good message: a silent one is a bad message. */
    int quiet = rc < 0 && !pd_last_status() && (w->shape == NUL || !must);
    sw_judge(judge_k, quiet ? PD_ERR_NULL : rc, must, w->shape == NUL || quiet, &out, out ? 1 : 0);
}

void sw_describe_wrap(int k, char *buf, size_t n)
{
    int i;
    const struct sw_wrap *w = locate(k, &i);
    if (w->shape == INT) snprintf(buf, n, "%s with v = %lld", w->name, (long long)ivals[i]);
    else if (w->shape == DBL) snprintf(buf, n, "%s with v = %g", w->name, dvals[i]);
    else snprintf(buf, n, "%s case %d", w->name, i);
}
