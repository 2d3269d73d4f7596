/* paddle.c — nn modules in other dtypes than f32 (pd_nn_set_param_dtype).
 *
 * In f64 every module's parameters are f64, its forward runs in f64, and
 * the gradients of a random projection of its output w.r.t. the input and
 * every parameter element agree with central finite differences (eps 1e-6,
 * within 1e-6 relative; f32 could not be checked this tightly). In bf16 and
 * f16 the modules whose ops support them build and run. A dtype that is not
 * floating point is refused and leaves the setting unchanged.
 */
#include "pt.h"

typedef struct pd_tensor *(*fwd_fn)(void *m, struct pd_tensor *x);

static struct pd_tensor *fwd_linear(void *m, struct pd_tensor *x) { return pd_nn_linear_forward(m, x); }
static struct pd_tensor *fwd_mlp(void *m, struct pd_tensor *x) { return pd_nn_mlp_forward(m, x); }
static struct pd_tensor *fwd_rms(void *m, struct pd_tensor *x) { return pd_nn_rmsnorm_forward(m, x); }
static struct pd_tensor *fwd_ln(void *m, struct pd_tensor *x) { return pd_nn_layernorm_forward(m, x); }
static struct pd_tensor *fwd_attn(void *m, struct pd_tensor *x)
{
    struct pd_tensor *pos = pd_arange(0, (double)pd_tensor_dim(x, 1), 1, PD_I64);
    return pd_nn_attention_forward(m, x, pos, NULL, 1, NULL, NULL, 0);
}
static struct pd_tensor *fwd_block(void *m, struct pd_tensor *x)
{
    struct pd_tensor *pos = pd_arange(0, (double)pd_tensor_dim(x, 1), 1, PD_I64);
    return pd_nn_block_forward(m, x, pos, NULL, 1, NULL, NULL, 0);
}

/* sum(f(x) * w) for the fixed projection w (f64). */
static double loss_of(fwd_fn f, void *m, struct pd_tensor *x, struct pd_tensor *w)
{
    int tok = pd_scope_begin();
    struct pd_tensor *y = f(m, x);
    double r = y ? pd_item(pd_sum(pd_mul(y, w), NULL, 0, 0)) : NAN;
    pd_scope_end(tok);
    return r;
}

/* Element i of t += d, in place under no_grad. */
static void bump(struct pd_tensor *t, int64_t i, double d)
{
    int64_t n = pd_tensor_numel(t);
    double *v = malloc(sizeof(double) * (size_t)n);
    int tok = pd_scope_begin(), ng = pd_no_grad_begin();
    if (v && !pd_to_buffer(t, v, PD_F64)) {
        v[i] += d;
        pd_copy_(t, pd_reshape(pd_from_buffer(v, &n, 1, PD_F64), pd_tensor_shape(t), pd_tensor_ndim(t)));
    }
    pd_grad_mode_end(ng);
    pd_scope_end(tok);
    free(v);
}

/* The analytic gradient of t (x or a parameter) against central differences. */
static void check_tensor(const char *what, fwd_fn f, void *m, struct pd_tensor *x, struct pd_tensor *w,
                         struct pd_tensor *t, struct pd_tensor *grad)
{
    int64_t n = pd_tensor_numel(t);
    double *g = malloc(sizeof(double) * (size_t)n), eps = 1e-6;
    PT_CHECK(g && grad && pd_tensor_dtype(grad) == PD_F64 && !pd_to_buffer(grad, g, PD_F64));
    for (int64_t i = 0; g && grad && i < n; i++) {
        bump(t, i, eps);
        double hi = loss_of(f, m, x, w);
        bump(t, i, -2 * eps);
        double lo = loss_of(f, m, x, w);
        bump(t, i, eps);
        double fd = (hi - lo) / (2 * eps);
        pt_checks++;
        if (!(fabs(g[i] - fd) <= 1e-6 * (1 + fabs(fd)))) {
            pt_fails++;
            printf("%s: element %lld: gradient %.12g, finite difference %.12g\n", what, (long long)i, g[i], fd);
        }
    }
    free(g);
}

/* Builds x [2, 3, dim] in f64, runs the module, checks dtypes and every
 * gradient (x and each parameter of the state dict). */
static void check_module(const char *name, fwd_fn f, void *m, int64_t dim, struct pd_state_dict *sd)
{
    int tok = pd_scope_begin();
    struct pd_generator *gen = pd_generator_create(7);
    struct pd_tensor *x = pd_randn((int64_t[]){2, 3, dim}, 3, PD_F64, gen);
    pd_requires_grad_(x, 1);
    struct pd_tensor *y = f(m, x);
    PT_CHECK(y && pd_tensor_dtype(y) == PD_F64);
    if (!y) goto out;
    struct pd_tensor *w = pd_randn(pd_tensor_shape(y), pd_tensor_ndim(y), PD_F64, gen);
    int np = pd_state_dict_size(sd);
    struct pd_tensor *in[16], *grads[16];
    in[0] = x;
    for (int k = 0; k < np && k < 15; k++) {
        in[k + 1] = pd_state_dict_tensor(sd, k);
        PT_CHECK(pd_tensor_dtype(in[k + 1]) == PD_F64);
    }
    struct pd_tensor *loss = pd_sum(pd_mul(y, w), NULL, 0, 0);
    PT_CHECK(!pd_grad(&loss, 1, in, np + 1, grads, NULL));
    char what[128];
    for (int k = 0; k <= np && k < 16; k++) {
        snprintf(what, sizeof what, "%s %s", name, k ? pd_state_dict_name(sd, k - 1) : "input");
        check_tensor(what, f, m, x, w, in[k], grads[k]);
    }
out:
    pd_generator_destroy(gen);
    pd_scope_end(tok);
}

static void test_f64(void)
{
    PT_CHECK(pd_nn_set_param_dtype(PD_F64) == PD_F32);
    PT_CHECK(pd_nn_param_dtype() == PD_F64);
    struct pd_generator *g = pd_generator_create(3);
    struct pd_state_dict *sd = pd_state_dict_create();
    struct pd_nn_linear *l = pd_nn_linear_create(4, 3, 1, g);
    PT_CHECK(l && pd_tensor_dtype(l->weight) == PD_F64 && pd_tensor_dtype(l->bias) == PD_F64);
    if (l && !pd_nn_linear_params(l, "", sd)) check_module("linear", fwd_linear, l, 4, sd);
    pd_nn_linear_destroy(l);
    pd_state_dict_destroy(sd);
    sd = pd_state_dict_create();
    struct pd_nn_mlp *mlp = pd_nn_mlp_create(4, 6, g);
    if (mlp && !pd_nn_mlp_params(mlp, "", sd)) check_module("mlp", fwd_mlp, mlp, 4, sd);
    pd_nn_mlp_destroy(mlp);
    pd_state_dict_destroy(sd);
    sd = pd_state_dict_create();
    struct pd_nn_rmsnorm *rn = pd_nn_rmsnorm_create(5, 1e-5);
    if (rn) pd_init_normal_(rn->weight, 1, 0.3, g);
    if (rn && !pd_nn_rmsnorm_params(rn, "", sd)) check_module("rmsnorm", fwd_rms, rn, 5, sd);
    pd_nn_rmsnorm_destroy(rn);
    pd_state_dict_destroy(sd);
    sd = pd_state_dict_create();
    struct pd_nn_layernorm *ln = pd_nn_layernorm_create(5, 1e-5, 1);
    if (ln) pd_init_normal_(ln->weight, 1, 0.3, g), pd_init_normal_(ln->bias, 0, 0.3, g);
    if (ln && !pd_nn_layernorm_params(ln, "", sd)) check_module("layernorm", fwd_ln, ln, 5, sd);
    pd_nn_layernorm_destroy(ln);
    pd_state_dict_destroy(sd);
    sd = pd_state_dict_create();
    struct pd_nn_attention *at = pd_nn_attention_create(8, 2, 1, 10000, g);
    if (at && !pd_nn_attention_params(at, "", sd)) check_module("attention", fwd_attn, at, 8, sd);
    pd_nn_attention_destroy(at);
    pd_state_dict_destroy(sd);
    sd = pd_state_dict_create();
    struct pd_nn_block *bl = pd_nn_block_create(8, 2, 2, 12, 1e-5, 10000, g);
    if (bl && !pd_nn_block_params(bl, "", sd)) check_module("block", fwd_block, bl, 8, sd);
    pd_nn_block_destroy(bl);
    pd_state_dict_destroy(sd);
    sd = pd_state_dict_create();
    int tok = pd_scope_begin();
    struct pd_nn_embedding *em = pd_nn_embedding_create(5, 3, g);
    PT_CHECK(em && pd_tensor_dtype(em->weight) == PD_F64);
    struct pd_tensor *ev = em ? pd_nn_embedding_forward(em, pt_vec(PD_I64, 2, (const double[]){4, 1})) : NULL;
    PT_CHECK(ev && pd_tensor_dtype(ev) == PD_F64);
    pd_nn_embedding_destroy(em);
    pd_scope_end(tok);
    pd_state_dict_destroy(sd);
    pd_generator_destroy(g);
    PT_CHECK(pd_nn_set_param_dtype(PD_F32) == PD_F64);
}

/* bf16 and f16 parameters: the modules build and run on inputs of that dtype. */
static void test_low_precision(void)
{
    const enum pd_dtype dts[2] = {PD_BF16, PD_F16};
    for (int i = 0; i < 2; i++) {
        int tok = pd_scope_begin();
        PT_CHECK(pd_nn_set_param_dtype(dts[i]) == PD_F32);
        struct pd_generator *g = pd_generator_create(5);
        struct pd_nn_linear *l = pd_nn_linear_create(4, 3, 1, g);
        struct pd_nn_rmsnorm *rn = pd_nn_rmsnorm_create(3, 1e-5);
        PT_CHECK(l && rn && pd_tensor_dtype(l->weight) == dts[i] && pd_tensor_dtype(rn->weight) == dts[i]);
        struct pd_tensor *x = pd_cast(pd_randn((int64_t[]){2, 4}, 2, PD_F32, g), dts[i]);
        struct pd_tensor *y = l && rn ? pd_nn_rmsnorm_forward(rn, pd_nn_linear_forward(l, x)) : NULL;
        PT_CHECK(y && pd_tensor_dtype(y) == dts[i]);
        PT_CHECK(y && pd_backward(pd_sum(pd_cast(y, PD_F32), NULL, 0, 0), NULL, 0) == PD_OK);
        PT_CHECK(l && pd_tensor_grad(l->weight) && pd_tensor_dtype(pd_tensor_grad(l->weight)) == dts[i]);
        pd_nn_linear_destroy(l);
        pd_nn_rmsnorm_destroy(rn);
        pd_generator_destroy(g);
        pd_nn_set_param_dtype(PD_F32);
        pd_scope_end(tok);
    }
}

static void test_errors(void)
{
    PT_CHECK(pd_nn_set_param_dtype(PD_I32) == PD_ERR_INVALID && strstr(pd_last_error(), "floating-point"));
    PT_CHECK(pd_nn_set_param_dtype((enum pd_dtype)99) == PD_ERR_INVALID);
    PT_CHECK(pd_nn_param_dtype() == PD_F32);
}

int main(void)
{
    test_f64();
    test_low_precision();
    test_errors();
    PT_DONE();
}
