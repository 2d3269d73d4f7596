/* paddle.c — mixed precision: autocast dtypes and gradients, policy
 * overrides, an MLP trained under bf16 autocast against f32 training, and
 * the fp16 grad scaler (skip on inf, back-off, growth, checkpoint). */
#include <math.h>
#include <string.h>

#include "pd/amp.h"
#include "pd/optim.h"
#include "pt.h"

static struct pd_tensor *randn(int64_t r, int64_t c, uint64_t seed, double std)
{
    struct pd_generator *g = pd_generator_create(seed);
    struct pd_tensor *t = pd_normal((int64_t[]){r, c}, 2, 0.0, std, PD_F32, g);
    pd_generator_destroy(g);
    return t;
}

static double max_rel(struct pd_tensor *a, struct pd_tensor *b)
{
    double m = 0, s = 0;
    struct pd_tensor *a32 = pd_cast(a, PD_F32), *b32 = pd_cast(b, PD_F32);
    const float *u = pd_tensor_data(a32), *v = pd_tensor_data(b32);
    for (int64_t i = 0; i < pd_tensor_numel(a); i++) {
        m = fmax(m, fabs((double)u[i] - v[i]));
        s = fmax(s, fabs((double)v[i]));
    }
    return m / (s > 0 ? s : 1);
}

static void test_dtypes(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = randn(8, 32, 1, 1.0), *w = pd_requires_grad_(randn(16, 32, 2, 0.2), 1);
    struct pd_tensor *bias = pd_requires_grad_(pd_zeros((int64_t[]){16}, 1, PD_F32), 1);
    struct pd_tensor *ref = pd_linear(x, w, NULL);
    PT_CHECK(pd_autocast_dtype() == -1);
    int tok = pd_autocast_begin(PD_BF16);
    PT_CHECK(tok >= 0 && pd_autocast_dtype() == PD_BF16);
    struct pd_tensor *y = pd_linear(x, w, NULL);
    PT_CHECK(y && pd_tensor_dtype(y) == PD_BF16);                        /* lower list */
    PT_CHECK(max_rel(y, ref) < 2e-2);
    PT_CHECK(pd_tensor_dtype(pd_matmul(x, x, 0, 1)) == PD_BF16);
    PT_CHECK(pd_tensor_dtype(pd_relu(y)) == PD_BF16);                    /* follow */
    PT_CHECK(pd_tensor_dtype(pd_linear(x, w, bias)) == PD_F32);          /* bf16 + f32 promotes */
    PT_CHECK(pd_tensor_dtype(pd_softmax(y, -1)) == PD_F32);              /* f32 list */
    PT_CHECK(pd_tensor_dtype(pd_sum(y, NULL, 0, 0)) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_exp(y)) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_rms_norm(y, 1, NULL, 1e-5)) == PD_F32);
    struct pd_tensor *tgt = pd_zeros((int64_t[]){8}, 1, PD_I64);
    struct pd_tensor *ce = pd_cross_entropy(y, tgt, -100, 0.0, PD_REDUCTION_MEAN);
    PT_CHECK(ce && pd_tensor_dtype(ce) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_matmul(pd_cast(x, PD_F64), pd_cast(x, PD_F64), 0, 1)) == PD_F64); /* f64 untouched */
    /* nesting: an inner f16 region, then back to bf16 */
    int t2 = pd_autocast_begin(PD_F16);
    PT_CHECK(pd_tensor_dtype(pd_linear(x, w, NULL)) == PD_F16);
    pd_autocast_end(t2);
    PT_CHECK(pd_autocast_dtype() == PD_BF16);
    /* gradients reach the f32 parameter through the casts */
    struct pd_tensor *loss = pd_sum(pd_square(pd_linear(x, w, bias)), NULL, 0, 0);
    PT_CHECK(pd_backward(loss, NULL, 0) == PD_OK);
    pd_autocast_end(tok);
    PT_CHECK(pd_autocast_dtype() == -1);
    PT_CHECK(pd_tensor_dtype(pd_linear(x, w, NULL)) == PD_F32);
    struct pd_tensor *gw = pd_tensor_grad(w);
    PT_CHECK(gw && pd_tensor_dtype(gw) == PD_F32);
    struct pd_tensor *w2 = pd_requires_grad_(pd_detach(w), 1);
    pd_backward(pd_sum(pd_square(pd_linear(x, w2, bias)), NULL, 0, 0), NULL, 0);
    PT_CHECK(max_rel(gw, pd_tensor_grad(w2)) < 3e-2);
    /* errors */
    PT_CHECK(pd_autocast_begin(PD_F32) < 0 && strstr(pd_last_error(), "bf16 or f16"));
    PT_CHECK(pd_autocast_dtype() == -1);
    pd_scope_end(scope_tok);
}

static void test_policies(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = randn(4, 8, 3, 1.0);
    PT_CHECK(pd_autocast_get_op_policy("matmul") == PD_AUTOCAST_LOWER);
    PT_CHECK(pd_autocast_get_op_policy("log_softmax") == PD_AUTOCAST_F32);
    PT_CHECK(pd_autocast_get_op_policy("add") == PD_AUTOCAST_FOLLOW);
    PT_CHECK(pd_autocast_get_op_policy("no_such_op") < 0 && strstr(pd_last_error(), "no_such_op"));
    PT_CHECK(pd_autocast_set_op_policy("no_such_op", PD_AUTOCAST_F32) == PD_ERR_INVALID);
    PT_CHECK(pd_autocast_set_op_policy("matmul", (enum pd_autocast_policy)7) == PD_ERR_INVALID);
    PT_CHECK(pd_autocast_set_op_policy("matmul", PD_AUTOCAST_FOLLOW) == PD_OK);
    PT_CHECK(pd_autocast_set_op_policy("tanh", PD_AUTOCAST_LOWER) == PD_OK);
    int tok = pd_autocast_begin(PD_BF16);
    PT_CHECK(pd_tensor_dtype(pd_matmul(x, x, 0, 1)) == PD_F32);
    PT_CHECK(pd_tensor_dtype(pd_tanh(x)) == PD_BF16);
    pd_autocast_reset_policies();
    PT_CHECK(pd_tensor_dtype(pd_matmul(x, x, 0, 1)) == PD_BF16);
    PT_CHECK(pd_tensor_dtype(pd_tanh(x)) == PD_F32);
    pd_autocast_end(tok);
    pd_scope_end(scope_tok);
    /* outside any scope the hook's casts are released (no leak) */
    int64_t live = pd_live_tensors();
    struct pd_tensor *a = randn(4, 8, 4, 1.0);
    tok = pd_autocast_begin(PD_BF16);
    struct pd_tensor *y = pd_matmul(a, a, 0, 1);
    pd_autocast_end(tok);
    PT_CHECK(y && pd_tensor_dtype(y) == PD_BF16);
    pd_tensor_release(y);
    pd_tensor_release(a);
    PT_CHECK(pd_live_tensors() == live);
}

/* MLP 16 -> 64 -> 4 classifying points labelled by a random teacher. */
struct net {
    struct pd_tensor *w1, *b1, *w2, *b2;
    struct pd_state_dict *sd;
};

/* Called inside a scope, which owns the tensors; the state dict lists them. */
static void net_init(struct net *n)
{
    n->w1 = pd_requires_grad_(randn(64, 16, 30, 0.25), 1);
    n->b1 = pd_requires_grad_(pd_zeros((int64_t[]){64}, 1, PD_F32), 1);
    n->w2 = pd_requires_grad_(randn(4, 64, 31, 0.12), 1);
    n->b2 = pd_requires_grad_(pd_zeros((int64_t[]){4}, 1, PD_F32), 1);
    n->sd = pd_state_dict_create();
    pd_state_dict_add(n->sd, "w1", n->w1);
    pd_state_dict_add(n->sd, "b1", n->b1);
    pd_state_dict_add(n->sd, "w2", n->w2);
    pd_state_dict_add(n->sd, "b2", n->b2);
}

static void net_free(struct net *n) { pd_state_dict_destroy(n->sd); }

static struct pd_tensor *net_loss(struct net *n, struct pd_tensor *x, struct pd_tensor *labels)
{
    struct pd_tensor *h = pd_gelu(pd_linear(x, n->w1, n->b1), 1);
    return pd_cross_entropy(pd_linear(h, n->w2, n->b2), labels, -100, 0.0, PD_REDUCTION_MEAN);
}

static double train(enum pd_dtype amp, int steps)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = randn(256, 16, 40, 1.0);
    struct pd_tensor *teacher = randn(16, 4, 41, 1.0);
    struct pd_tensor *labels = pd_argmax(pd_matmul(x, teacher, 0, 0), 1, 0);
    struct net n;
    net_init(&n);
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, PD_OPTIM_ADAMW);
    cfg.lr = 1e-2;
    struct pd_optimizer *opt = pd_optimizer_create_for(&cfg, n.sd);
    double final = NAN;
    for (int s = 0; s < steps; s++) {
        int scope_tok2 = pd_scope_begin();
        int tok = amp == PD_F32 ? -1 : pd_autocast_begin(amp);
        struct pd_tensor *loss = net_loss(&n, x, labels);
        if (tok >= 0) pd_autocast_end(tok);
        PT_CHECK(loss && pd_tensor_dtype(loss) == PD_F32);
        pd_backward(loss, NULL, 0);
        pd_optimizer_step(opt);
        pd_optimizer_zero_grad(opt);
        final = pd_item(loss);
        if (s % 50 == 0) printf("%s step %d loss %.6f\n", amp == PD_F32 ? "f32" : "bf16", s, final);
        pd_scope_end(scope_tok2);
    }
    pd_optimizer_destroy(opt);
    net_free(&n);
    pd_scope_end(scope_tok);
    return final;
}

/* Documented tolerance (docs/optim.md): after 300 AdamW steps the bf16
 * autocast loss is within 0.02 + 10% of the f32 loss. */
static void test_bf16_training(void)
{
    double l32 = train(PD_F32, 300), l16 = train(PD_BF16, 300);
    printf("final loss: f32 %.5f, bf16 autocast %.5f\n", l32, l16);
    PT_CHECK(l32 < 0.3); /* it learned */
    PT_CHECK(fabs(l16 - l32) <= 0.02 + 0.1 * l32);
}

static int same_bits(struct pd_tensor *a, struct pd_tensor *b)
{
    return !memcmp(pd_tensor_data(a), pd_tensor_data(b), (size_t)pd_tensor_numel(a) * pd_dtype_size(pd_tensor_dtype(a)));
}

static void test_scaler(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = randn(32, 16, 50, 1.0);
    struct pd_tensor *labels = pd_argmax(pd_matmul(x, randn(16, 4, 51, 1.0), 0, 0), 1, 0);
    struct net n;
    net_init(&n);
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, PD_OPTIM_ADAMW);
    struct pd_optimizer *opt = pd_optimizer_create_for(&cfg, n.sd);
    struct pd_grad_scaler_config sc;
    pd_grad_scaler_config_default(&sc);
    PT_CHECK(sc.init_scale == 65536 && sc.growth_factor == 2 && sc.backoff_factor == 0.5 && sc.growth_interval == 2000);
    sc.growth_interval = 3;
    struct pd_grad_scaler *s = pd_grad_scaler_create(&sc);

    /* unscaled gradients equal those of the plain loss */
    int tok = pd_autocast_begin(PD_F16);
    struct pd_tensor *loss = net_loss(&n, x, labels);
    pd_autocast_end(tok);
    pd_backward(loss, NULL, 1);
    struct pd_tensor *g_plain = pd_clone(pd_tensor_grad(n.w1));
    pd_optimizer_zero_grad(opt);
    pd_backward(pd_grad_scaler_scale(s, loss), NULL, 0);
    PT_CHECK(pd_grad_scaler_unscale(s, opt) == PD_OK);
    /* not bit-equal: in f16 the unscaled backward loses small values the
     * scaled one keeps (the point of scaling) */
    double d = max_rel(pd_tensor_grad(n.w1), g_plain);
    if (!(d < 1e-2)) printf("unscaled vs plain f16 grads: max rel diff %g\n", d);
    PT_CHECK(d < 1e-2);
    PT_CHECK(pd_grad_scaler_unscale(s, opt) == PD_ERR_STATE && strstr(pd_last_error(), "already"));
    PT_CHECK(pd_grad_scaler_step(s, opt) == 1);
    PT_CHECK(pd_grad_scaler_update(s) == PD_OK);
    pd_optimizer_zero_grad(opt);
    PT_CHECK(pd_grad_scaler_get_scale(s) == 65536);

    for (int step = 0; step < 6; step++) {
        int scope_tok2 = pd_scope_begin();
        tok = pd_autocast_begin(PD_F16);
        loss = net_loss(&n, x, labels);
        pd_autocast_end(tok);
        pd_backward(pd_grad_scaler_scale(s, loss), NULL, 0);
        struct pd_tensor *before = pd_clone(n.w1);
        if (step == 1) ((float *)pd_tensor_data(pd_tensor_grad(n.b2)))[1] = INFINITY; /* an overflowed gradient */
        int r = pd_grad_scaler_step(s, opt);
        PT_CHECK(r == (step == 1 ? 0 : 1));
        PT_CHECK(pd_grad_scaler_found_inf(s) == (step == 1));
        PT_CHECK(same_bits(before, n.w1) == (step == 1)); /* skipped: nothing moved */
        PT_CHECK(pd_grad_scaler_update(s) == PD_OK);
        pd_optimizer_zero_grad(opt);
        /* step 0 is the 2nd good step in a row (growth at 3); 1 backs off;
         * 2, 3, 4 are good -> growth after 4; 5 is one good step after */
        double want = step == 0 ? 65536 : step <= 3 ? 32768 : 65536;
        PT_NEAR(pd_grad_scaler_get_scale(s), want, 0);
        pd_scope_end(scope_tok2);
    }
    PT_CHECK(pd_grad_scaler_skipped_steps(s) == 1);
    PT_CHECK(pd_optimizer_step_count(opt) == 6);

    /* checkpoint round trip */
    struct pd_state_dict *sd = pd_state_dict_create();
    PT_CHECK(pd_grad_scaler_state_dict(s, sd, "scaler.") == PD_OK);
    struct pd_grad_scaler *s2 = pd_grad_scaler_create(NULL);
    PT_CHECK(pd_grad_scaler_load_state_dict(s2, sd, "scaler.") == PD_OK);
    PT_CHECK(pd_grad_scaler_get_scale(s2) == 65536 && pd_grad_scaler_skipped_steps(s2) == 1);
    PT_CHECK(pd_grad_scaler_load_state_dict(s2, sd, "x.") == PD_ERR_INVALID && strstr(pd_last_error(), "x.scale"));
    /* errors */
    PT_CHECK(pd_grad_scaler_update(s2) == PD_ERR_STATE);
    sc.backoff_factor = 1.5;
    PT_CHECK(pd_grad_scaler_create(&sc) == NULL && strstr(pd_last_error(), "backoff"));
    PT_CHECK(pd_grad_scaler_scale(NULL, loss) == NULL);
    pd_grad_scaler_destroy(NULL);

    pd_state_dict_destroy(sd);
    pd_grad_scaler_destroy(s);
    pd_grad_scaler_destroy(s2);
    pd_optimizer_destroy(opt);
    net_free(&n);
    pd_scope_end(scope_tok);
}

int main(void)
{
    test_dtypes();
    test_policies();
    test_bf16_training();
    test_scaler();
    PT_CHECK(pd_live_tensors() == 0);
    PT_DONE();
}
