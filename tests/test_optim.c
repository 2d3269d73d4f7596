/* paddle.c — optimizer behaviour beyond the PyTorch fixtures: bit-exact
 * resume from a state dict, gradient accumulation, global-norm clipping,
 * bf16 parameters with f32 masters, skipped parameters, and error paths
 * (bad input gives a clear error and changes nothing). */
#include <math.h>
#include <string.h>

#include "pd/optim.h"
#include "pt.h"

/* A 2-layer MLP [8 -> 16 -> 4] with fixed weights, data x [8, 8], y [8, 4]. */
struct mlp {
    struct pd_tensor *w1, *b1, *w2, *b2;
    struct pd_state_dict *sd;
};

static struct pd_tensor *param(const int64_t *shape, int nd, uint64_t seed, enum pd_dtype dt)
{
    struct pd_generator *g = pd_generator_create(seed);
    struct pd_tensor *t = pd_normal(shape, nd, 0.0, 0.3, dt, g);
    pd_generator_destroy(g);
    return pd_requires_grad_(t, 1);
}

static void mlp_init(struct mlp *m, enum pd_dtype dt)
{
    m->w1 = param((int64_t[]){16, 8}, 2, 1, dt);
    m->b1 = param((int64_t[]){16}, 1, 2, dt);
    m->w2 = param((int64_t[]){4, 16}, 2, 3, dt);
    m->b2 = param((int64_t[]){4}, 1, 4, dt);
    m->sd = pd_state_dict_create();
    pd_state_dict_add(m->sd, "l1.weight", m->w1);
    pd_state_dict_add(m->sd, "l1.bias", m->b1);
    pd_state_dict_add(m->sd, "l2.weight", m->w2);
    pd_state_dict_add(m->sd, "l2.bias", m->b2);
}

static void mlp_free(struct mlp *m)
{
    pd_state_dict_destroy(m->sd);
    pd_tensor_release(m->w1);
    pd_tensor_release(m->b1);
    pd_tensor_release(m->w2);
    pd_tensor_release(m->b2);
}

static struct pd_tensor *data(int rows, int cols, uint64_t seed)
{
    struct pd_generator *g = pd_generator_create(seed);
    struct pd_tensor *t = pd_normal((int64_t[]){rows, cols}, 2, 0.0, 1.0, PD_F32, g);
    pd_generator_destroy(g);
    return t;
}

/* mean squared error of the MLP on rows [r0, r0 + n) of x, y */
static struct pd_tensor *mlp_loss(struct mlp *m, struct pd_tensor *x, struct pd_tensor *y, int r0, int n)
{
    struct pd_tensor *xs = pd_slice(x, 0, r0, r0 + n, 1), *ys = pd_slice(y, 0, r0, r0 + n, 1);
    struct pd_tensor *h = pd_tanh(pd_linear(xs, m->w1, m->b1));
    return pd_mse_loss(pd_linear(h, m->w2, m->b2), ys, PD_REDUCTION_MEAN);
}

static void train_steps(struct mlp *m, struct pd_optimizer *opt, struct pd_tensor *x, struct pd_tensor *y, int steps)
{
    for (int s = 0; s < steps; s++) {
        int scope_tok = pd_scope_begin();
        pd_backward(mlp_loss(m, x, y, 0, 8), NULL, 0);
        PT_CHECK(pd_optimizer_clip_grad_norm(opt, 0.5) >= 0);
        PT_CHECK(pd_optimizer_step(opt) == PD_OK);
        pd_optimizer_zero_grad(opt);
        pd_scope_end(scope_tok);
    }
}

static int same_bits(struct pd_tensor *a, struct pd_tensor *b)
{
    return pd_tensor_numel(a) == pd_tensor_numel(b) && pd_tensor_dtype(a) == pd_tensor_dtype(b) &&
           !memcmp(pd_tensor_data(a), pd_tensor_data(b), (size_t)pd_tensor_numel(a) * pd_dtype_size(pd_tensor_dtype(a)));
}

/* A detached deep copy of sd (tensors and metadata), as a file would hold. */
static struct pd_state_dict *copy_sd(const struct pd_state_dict *sd)
{
    struct pd_state_dict *c = pd_state_dict_create();
    int scope_tok = pd_scope_begin(); /* the state dict keeps the copies */
    for (int i = 0; i < pd_state_dict_size(sd); i++) {
        struct pd_tensor *t = pd_state_dict_tensor(sd, i);
        struct pd_tensor *d = pd_empty(pd_tensor_shape(t), pd_tensor_ndim(t), pd_tensor_dtype(t));
        pd_copy_(d, t);
        pd_state_dict_add(c, pd_state_dict_name(sd, i), d);
    }
    pd_scope_end(scope_tok);
    for (int i = 0; i < pd_state_dict_meta_size(sd); i++)
        pd_state_dict_set_meta(c, pd_state_dict_meta_key(sd, i), pd_state_dict_meta_value(sd, i));
    return c;
}

/* N steps + save + load into a new optimizer + M steps == N + M steps, bit for bit. */
static void test_resume(const struct pd_optim_config *cfg, enum pd_dtype dt)
{
    struct pd_tensor *x = data(8, 8, 10), *y = data(8, 4, 11);
    struct mlp a, b;
    mlp_init(&a, dt);
    mlp_init(&b, dt);
    struct pd_optimizer *oa = pd_optimizer_create_for(cfg, a.sd), *ob = pd_optimizer_create_for(cfg, b.sd);
    PT_CHECK(oa && ob);
    train_steps(&a, oa, x, y, 10);

    train_steps(&b, ob, x, y, 6);
    struct pd_state_dict *live = pd_state_dict_create();
    PT_CHECK(pd_optimizer_state_dict(ob, live, "optim.") == PD_OK);
    if (cfg->kind != PD_OPTIM_SGD) {
        PT_CHECK(pd_state_dict_get(live, "optim.exp_avg.l1.weight") != NULL);
        PT_CHECK(pd_state_dict_get(live, "optim.exp_avg_sq.l2.bias") != NULL);
    } else {
        PT_CHECK(pd_state_dict_get(live, "optim.momentum_buffer.l1.weight") != NULL);
    }
    PT_CHECK((pd_state_dict_get(live, "optim.master.l1.weight") != NULL) == (dt != PD_F32));
    PT_CHECK(pd_state_dict_get_meta(live, "optim.step") && !strcmp(pd_state_dict_get_meta(live, "optim.step"), "6"));
    PT_CHECK(pd_state_dict_get_meta(live, "optim.step.l2.bias") != NULL);
    struct pd_state_dict *saved = copy_sd(live);
    pd_state_dict_destroy(live);
    pd_optimizer_destroy(ob);

    ob = pd_optimizer_create_for(cfg, b.sd);
    PT_CHECK(pd_optimizer_load_state_dict(ob, saved, "optim.") == PD_OK);
    PT_CHECK(pd_optimizer_step_count(ob) == 6);
    pd_state_dict_destroy(saved);
    train_steps(&b, ob, x, y, 4);
    PT_CHECK(pd_optimizer_step_count(ob) == 10);
    PT_CHECK(same_bits(a.w1, b.w1) && same_bits(a.b1, b.b1) && same_bits(a.w2, b.w2) && same_bits(a.b2, b.b2));
    /* and it moved: the check is not vacuous */
    struct mlp c;
    mlp_init(&c, dt);
    PT_CHECK(!same_bits(a.w1, c.w1));
    mlp_free(&c);
    pd_optimizer_destroy(oa);
    pd_optimizer_destroy(ob);
    mlp_free(&a);
    mlp_free(&b);
    pd_tensor_release(x);
    pd_tensor_release(y);
}

/* k micro-batches of b rows with loss/k equal one batch of k*b rows. */
static void test_accumulation(void)
{
    struct pd_tensor *x = data(8, 8, 20), *y = data(8, 4, 21);
    struct mlp a, b;
    mlp_init(&a, PD_F32);
    mlp_init(&b, PD_F32);
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, PD_OPTIM_SGD);
    cfg.lr = 0.1;
    cfg.momentum = 0.9;
    struct pd_optimizer *oa = pd_optimizer_create_for(&cfg, a.sd), *ob = pd_optimizer_create_for(&cfg, b.sd);
    for (int step = 0; step < 3; step++) {
        int scope_tok = pd_scope_begin();
        pd_backward(mlp_loss(&a, x, y, 0, 8), NULL, 0);
        pd_optimizer_step(oa);
        pd_optimizer_zero_grad(oa);
        const int k = 4;
        for (int i = 0; i < k; i++) {
            pd_backward(pd_scale(mlp_loss(&b, x, y, 2 * i, 2), 1.0 / k), NULL, 0);
            int r = pd_optimizer_accumulate(ob, k);
            PT_CHECK(r == (i == k - 1));
        }
        PT_CHECK(pd_tensor_grad(b.w1) == NULL); /* zeroed after the step */
        pd_scope_end(scope_tok);
    }
    PT_CHECK(pd_optimizer_step_count(ob) == 3);
    double maxd = 0;
    struct pd_tensor *pa[4] = {a.w1, a.b1, a.w2, a.b2}, *pb[4] = {b.w1, b.b1, b.w2, b.b2};
    for (int t = 0; t < 4; t++) {
        const float *u = pd_tensor_data(pa[t]), *v = pd_tensor_data(pb[t]);
        for (int64_t i = 0; i < pd_tensor_numel(pa[t]); i++) maxd = fmax(maxd, fabs((double)u[i] - v[i]));
    }
    PT_CHECK(maxd < 1e-6);
    PT_CHECK(pd_optimizer_accumulate(ob, 0) == PD_ERR_INVALID);
    pd_optimizer_destroy(oa);
    pd_optimizer_destroy(ob);
    mlp_free(&a);
    mlp_free(&b);
    pd_tensor_release(x);
    pd_tensor_release(y);
}

static void test_clip(void)
{
    int scope_tok = pd_scope_begin();
    double av[] = {1, 2, 3}, cv[] = {3, 0, 4}, dv[] = {12, 0, 0};
    struct pd_tensor *p = pd_requires_grad_(pt_vec(PD_F32, 3, av), 1);
    struct pd_tensor *q = pd_requires_grad_(pd_zeros((int64_t[]){4}, 1, PD_F32), 1);
    struct pd_tensor *r = pd_requires_grad_(pd_zeros((int64_t[]){2}, 1, PD_F32), 1); /* no grad */
    struct pd_state_dict *sd = pd_state_dict_create();
    pd_state_dict_add(sd, "p", p);
    pd_state_dict_add(sd, "q", q);
    pd_state_dict_add(sd, "r", r);
    /* grad p = (3, 0, 4); grad q = 12 * (1, 1, 1, 1) (q's grad is a broadcast) */
    pd_backward(pd_add(pd_sum(pd_mul(p, pt_vec(PD_F32, 3, cv)), NULL, 0, 0), pd_scale(pd_sum(q, NULL, 0, 0), 12.0)), NULL, 0);
    double norm0 = sqrt(9.0 + 16 + 4 * 144);
    PT_NEAR(pd_clip_grad_norm(sd, 100.0), norm0, 1e-12); /* below max: untouched */
    PT_NEAR(pt_at(pd_tensor_grad(p), 2), 4.0, 1e-7);
    double n = pd_clip_grad_norm(sd, 2.0);
    PT_NEAR(n, norm0, 1e-12);
    double coef = 2.0 / (norm0 + 1e-6);
    PT_NEAR(pt_at(pd_tensor_grad(p), 0), 3 * coef, 1e-6);
    PT_NEAR(pt_at(pd_tensor_grad(p), 2), 4 * coef, 1e-6);
    for (int i = 0; i < 4; i++) PT_NEAR(pt_at(pd_tensor_grad(q), i), 12 * coef, 1e-6);
    PT_NEAR(pd_clip_grad_norm(sd, 100.0), 2.0, 1e-5); /* the norm is now max_norm */
    PT_CHECK(pd_tensor_grad(r) == NULL);

    /* non-finite: reported, gradients untouched */
    pd_tensor_zero_grad(p);
    dv[1] = INFINITY;
    pd_backward(pd_sum(pd_mul(p, pt_vec(PD_F32, 3, dv)), NULL, 0, 0), NULL, 0);
    double ninf = pd_clip_grad_norm(sd, 1.0);
    PT_CHECK(isinf(ninf));
    PT_NEAR(pt_at(pd_tensor_grad(p), 0), 12.0, 1e-7);
    /* errors */
    PT_CHECK(pd_clip_grad_norm(sd, -1.0) == -1 && strstr(pd_last_error(), "max_norm"));
    PT_CHECK(pd_clip_grad_norm(NULL, 1.0) == -1);
    pd_state_dict_destroy(sd);
    pd_scope_end(scope_tok);
}

/* bf16 parameters: the update runs on an f32 master, the parameter is its rounding. */
static void test_low_precision_params(void)
{
    int scope_tok = pd_scope_begin();
    double wv[] = {0.5, -0.25, 1.0, 2.0};
    struct pd_tensor *w = pd_requires_grad_(pd_detach(pt_vec(PD_BF16, 4, wv)), 1);
    struct pd_tensor *w32 = pd_requires_grad_(pd_detach(pt_vec(PD_F32, 4, wv)), 1);
    struct pd_state_dict *s1 = pd_state_dict_create(), *s2 = pd_state_dict_create();
    pd_state_dict_add(s1, "w", w);
    pd_state_dict_add(s2, "w", w32);
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, PD_OPTIM_SGD);
    cfg.lr = 1e-3; /* updates far below bf16's resolution at 1.0: only a master keeps them */
    struct pd_optimizer *o1 = pd_optimizer_create(&cfg), *o2 = pd_optimizer_create(&cfg);
    PT_CHECK(pd_optimizer_add_group(o1, s1, NULL) == 0 && pd_optimizer_add_group(o2, s2, NULL) == 0);
    for (int s = 0; s < 20; s++) {
        int scope_tok2 = pd_scope_begin();
        pd_backward(pd_sum(w, NULL, 0, 0), NULL, 0); /* grad = 1 */
        pd_backward(pd_sum(w32, NULL, 0, 0), NULL, 0);
        pd_optimizer_step(o1);
        pd_optimizer_step(o2);
        pd_optimizer_zero_grad(o1);
        pd_optimizer_zero_grad(o2);
        pd_scope_end(scope_tok2);
    }
    struct pd_state_dict *st = pd_state_dict_create();
    pd_optimizer_state_dict(o1, st, "o.");
    struct pd_tensor *master = pd_state_dict_get(st, "o.master.w");
    PT_CHECK(master && pd_tensor_dtype(master) == PD_F32);
    for (int i = 0; i < 4; i++) {
        PT_NEAR(pt_at(master, i), pt_at(w32, i), 1e-7);                      /* f32 trajectory kept */
        PT_CHECK(pt_at(w, i) == (double)pd_bf16_to_f32(pd_f32_to_bf16((float)pt_at(master, i)))); /* param = rounding */
    }
    PT_CHECK(pt_at(w, 2) == 0.98046875); /* 1 - 0.02 in bf16: moved although each step was below an ulp */
    pd_state_dict_destroy(st);
    pd_optimizer_destroy(o1);
    pd_optimizer_destroy(o2);
    pd_state_dict_destroy(s1);
    pd_state_dict_destroy(s2);
    pd_scope_end(scope_tok);
}

static void test_api_and_errors(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, PD_OPTIM_ADAMW);
    PT_CHECK(cfg.lr == 1e-3 && cfg.weight_decay == 1e-2 && cfg.beta2 == 0.999);
    cfg.beta1 = 1.0;
    PT_CHECK(pd_optimizer_create(&cfg) == NULL && strstr(pd_last_error(), "beta1"));
    pd_optim_config_default(&cfg, PD_OPTIM_SGD);
    cfg.nesterov = 1;
    PT_CHECK(pd_optimizer_create(&cfg) == NULL && strstr(pd_last_error(), "nesterov"));
    cfg.nesterov = 0;
    cfg.lr = -1;
    PT_CHECK(pd_optimizer_create(&cfg) == NULL && strstr(pd_last_error(), "lr"));
    PT_CHECK(pd_optimizer_create(NULL) == NULL);

    pd_optim_config_default(&cfg, PD_OPTIM_ADAM);
    struct pd_optimizer *o = pd_optimizer_create(&cfg);
    struct pd_tensor *a = pd_requires_grad_(pd_ones((int64_t[]){2, 3}, 2, PD_F32), 1);
    struct pd_tensor *b = pd_requires_grad_(pd_ones((int64_t[]){3}, 1, PD_F32), 1);
    struct pd_tensor *ints = pd_zeros((int64_t[]){3}, 1, PD_I64);
    struct pd_state_dict *good = pd_state_dict_create(), *bad = pd_state_dict_create();
    pd_state_dict_add(good, "a", a);
    pd_state_dict_add(good, "b", b);
    pd_state_dict_add(bad, "c", b); /* fine on its own ... */
    pd_state_dict_add(bad, "i", ints); /* ... but this one is not a float */
    PT_CHECK(pd_optimizer_add_group(o, bad, NULL) == PD_ERR_INVALID && strstr(pd_last_error(), "'i'"));
    PT_CHECK(pd_optimizer_num_params(o) == 0 && pd_optimizer_num_groups(o) == 0); /* nothing added */
    PT_CHECK(pd_optimizer_add_decay_groups(o, good, 0.1) == PD_OK);
    PT_CHECK(pd_optimizer_num_params(o) == 2 && pd_optimizer_num_groups(o) == 2);
    struct pd_optim_config g0, g1;
    pd_optimizer_get_group_config(o, 0, &g0);
    pd_optimizer_get_group_config(o, 1, &g1);
    PT_CHECK(g0.weight_decay == 0.1 && g1.weight_decay == 0.0);
    PT_CHECK(pd_optimizer_add_group(o, good, NULL) == PD_ERR_INVALID && strstr(pd_last_error(), "already"));
    struct pd_optim_config sgd;
    pd_optim_config_default(&sgd, PD_OPTIM_SGD);
    PT_CHECK(pd_optimizer_set_group_config(o, 0, &sgd) == PD_ERR_INVALID && strstr(pd_last_error(), "sgd"));
    PT_CHECK(pd_optimizer_set_lr(o, 5, 0.1) == PD_ERR_INVALID);
    PT_CHECK(pd_optimizer_set_lr(o, -1, 0.25) == PD_OK);
    PT_CHECK(pd_optimizer_get_lr(o, 0) == 0.25 && pd_optimizer_get_lr(o, 1) == 0.25);
    PT_CHECK(isnan(pd_optimizer_get_lr(o, 2)));
    PT_CHECK(pd_optimizer_set_lr(o, 1, 0.5) == PD_OK && pd_optimizer_get_lr(o, 1) == 0.5);

    /* a parameter without a gradient is skipped: value and step count stay */
    pd_backward(pd_sum(a, NULL, 0, 0), NULL, 0);
    PT_CHECK(pd_optimizer_step(o) == PD_OK);
    PT_CHECK(pt_at(b, 0) == 1.0);
    /* Adam, first step: lr * m_hat / (sqrt(v_hat) + eps) with g = 1 + 0.1 * 1 (L2) */
    PT_NEAR(pd_get(a, (int64_t[]){0, 0}), 1.0 - 0.25 * 1.1 / (1.1 + 1e-8), 1e-7);
    pd_optimizer_zero_grad(o);
    PT_CHECK(pd_tensor_grad(a) == NULL);
    struct pd_state_dict *st = pd_state_dict_create();
    PT_CHECK(pd_optimizer_state_dict(o, st, "opt.") == PD_OK);
    PT_CHECK(!strcmp(pd_state_dict_get_meta(st, "opt.step.b"), "0") && !strcmp(pd_state_dict_get_meta(st, "opt.step.a"), "1"));
    PT_CHECK(!strcmp(pd_state_dict_get_meta(st, "opt.kind"), "adam"));

    /* load: a missing entry, a wrong shape, a wrong kind — errors, nothing changed */
    struct pd_state_dict *c = copy_sd(st);
    float before = *(float *)pd_tensor_data(pd_state_dict_get(st, "opt.exp_avg.a"));
    pd_fill_(pd_state_dict_get(c, "opt.exp_avg.a"), 7.0);
    pd_state_dict_remove(c, "opt.exp_avg_sq.b");
    PT_CHECK(pd_optimizer_load_state_dict(o, c, "opt.") == PD_ERR_INVALID && strstr(pd_last_error(), "opt.exp_avg_sq.b"));
    PT_CHECK(*(float *)pd_tensor_data(pd_state_dict_get(st, "opt.exp_avg.a")) == before);
    struct pd_tensor *wrong = pd_zeros((int64_t[]){4}, 1, PD_F32);
    pd_state_dict_add(c, "opt.exp_avg_sq.b", wrong);
    PT_CHECK(pd_optimizer_load_state_dict(o, c, "opt.") == PD_ERR_INVALID && strstr(pd_last_error(), "shape"));
    pd_state_dict_set_meta(c, "opt.kind", "sgd");
    PT_CHECK(pd_optimizer_load_state_dict(o, c, "opt.") == PD_ERR_INVALID && strstr(pd_last_error(), "sgd"));
    PT_CHECK(pd_optimizer_load_state_dict(o, c, "other.") == PD_ERR_INVALID && strstr(pd_last_error(), "other.kind"));
    PT_CHECK(*(float *)pd_tensor_data(pd_state_dict_get(st, "opt.exp_avg.a")) == before);
    PT_CHECK(pd_optimizer_step_count(o) == 1);
    PT_CHECK(pd_optimizer_step(NULL) == PD_ERR_NULL);
    pd_optimizer_destroy(NULL);
    pd_optimizer_zero_grad(NULL);

    pd_state_dict_destroy(c);
    pd_state_dict_destroy(st);
    pd_state_dict_destroy(good);
    pd_state_dict_destroy(bad);
    pd_optimizer_destroy(o);
    pd_scope_end(scope_tok);
}

#define LEAKS(what) do { if (pd_live_tensors()) printf("%s: %lld live tensors\n", what, (long long)pd_live_tensors()); } while (0)

int main(void)
{
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, PD_OPTIM_ADAMW);
    cfg.lr = 1e-2;
    cfg.weight_decay = 0.1;
    test_resume(&cfg, PD_F32);
    cfg.amsgrad = 1;
    test_resume(&cfg, PD_F32);
    test_resume(&cfg, PD_BF16);
    pd_optim_config_default(&cfg, PD_OPTIM_SGD);
    cfg.lr = 0.05;
    cfg.momentum = 0.9;
    cfg.nesterov = 1;
    test_resume(&cfg, PD_F32);
    pd_optim_config_default(&cfg, PD_OPTIM_ADAM);
    test_resume(&cfg, PD_F16);
    LEAKS("resume");
    test_accumulation();
    LEAKS("test_accumulation");
    test_clip();
    LEAKS("test_clip");
    test_low_precision_params();
    LEAKS("test_low_precision_params");
    test_api_and_errors();
    LEAKS("test_api_and_errors");
    PT_CHECK(pd_live_tensors() == 0);
    PT_DONE();
}
