/* paddle.c — eager autograd: backward, pd_grad, accumulation, broadcasting,
 * higher order (4th derivative, Hessian-vector product), guards, hooks,
 * retain_grad, detach, in-place rules, error paths, and lifetime. */
#include <string.h>

#include "pt.h"

static double at(struct pd_tensor *t, int64_t i) { return pd_get(t, &i); }

static struct pd_tensor *vec(const double *v, int64_t n)
{
    return pd_from_buffer(v, &n, 1, PD_F64);
}

static void test_basic(void)
{
    int scope_tok = pd_scope_begin();
    double xv[] = {-1.5, 0.5, 2.0};
    struct pd_tensor *x = pd_requires_grad_(vec(xv, 3), 1);
    /* L = sum(x*x + 3x) -> dL/dx = 2x + 3 */
    struct pd_tensor *L = pd_sum(pd_add(pd_mul(x, x), pd_scale(x, 3)), NULL, 0, 0);
    PT_CHECK(pd_tensor_requires_grad(L) && !pd_tensor_is_leaf(L) && pd_tensor_grad_fn_name(L));
    PT_CHECK(pd_backward(L, NULL, 1) == 0);
    for (int i = 0; i < 3; i++) PT_NEAR(at(pd_tensor_grad(x), i), 2 * xv[i] + 3, 1e-12);
    /* a second backward accumulates */
    PT_CHECK(pd_backward(L, NULL, 0) == 0);
    for (int i = 0; i < 3; i++) PT_NEAR(at(pd_tensor_grad(x), i), 2 * (2 * xv[i] + 3), 1e-12);
    /* the graph is now freed */
    PT_CHECK(pd_backward(L, NULL, 0) != 0 && strstr(pd_last_error(), "freed"));
    pd_tensor_zero_grad(x);
    PT_CHECK(pd_tensor_grad(x) == NULL);
    pd_scope_end(scope_tok);
}

static void test_broadcast(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *a = pd_requires_grad_(pd_ones((int64_t[]){3, 1}, 2, PD_F64), 1);
    struct pd_tensor *b = pd_requires_grad_(pd_arange(0, 4, 1, PD_F64), 1);
    struct pd_tensor *L = pd_sum(pd_mul(pd_add(a, b), b), NULL, 0, 0); /* sum_ij (a_i + b_j) b_j */
    PT_CHECK(pd_backward(L, NULL, 0) == 0);
    struct pd_tensor *ga = pd_tensor_grad(a), *gb = pd_tensor_grad(b);
    PT_CHECK(ga && pd_tensor_ndim(ga) == 2 && pd_tensor_dim(ga, 0) == 3 && pd_tensor_dim(ga, 1) == 1);
    PT_NEAR(pd_get(ga, (int64_t[]){1, 0}), 0 + 1 + 2 + 3, 1e-12);
    for (int j = 0; j < 4; j++) PT_NEAR(at(gb, j), 3 * (1 + 2.0 * j), 1e-12); /* sum_i (a_i + 2 b_j) */
    pd_scope_end(scope_tok);
}

/* d^4/dx^4 [sin(x) e^x] = -4 sin(x) e^x, through create_graph four times. */
static void test_fourth_order(void)
{
    int scope_tok = pd_scope_begin();
    double xv[] = {-0.7, 0.3, 1.1, 2.5};
    struct pd_tensor *x = pd_requires_grad_(vec(xv, 4), 1);
    struct pd_tensor *y = pd_mul(pd_sin(x), pd_exp(x));
    struct pd_tensor *g = y;
    for (int k = 0; k < 4; k++) {
        struct pd_tensor *s = pd_sum(g, NULL, 0, 0), *d = NULL;
        PT_CHECK(pd_grad(&s, 1, &x, 1, &d, &(struct pd_grad_options){.create_graph = 1, .retain_graph = 1}) == 0);
        g = d;
        if (!g) break;
    }
    for (int i = 0; g && i < 4; i++) PT_NEAR(at(g, i), -4 * sin(xv[i]) * exp(xv[i]), 1e-10);
    /* third derivative: 2 e^x (cos x - sin x) */
    pd_scope_end(scope_tok);
}

/* f = (x.x)^2: H v = 4 (x.x) v + 8 x (x.v) */
static void test_hvp(void)
{
    int scope_tok = pd_scope_begin();
    double xv[] = {0.5, -1.0, 2.0}, vv[] = {1.0, 0.25, -0.5};
    struct pd_tensor *x = pd_requires_grad_(vec(xv, 3), 1), *v = vec(vv, 3);
    struct pd_tensor *xx = pd_sum(pd_mul(x, x), NULL, 0, 0);
    struct pd_tensor *f = pd_mul(xx, xx), *g = NULL, *hv = NULL;
    PT_CHECK(pd_grad(&f, 1, &x, 1, &g, &(struct pd_grad_options){.create_graph = 1, .retain_graph = 1}) == 0);
    struct pd_tensor *gv = pd_sum(pd_mul(g, v), NULL, 0, 0);
    PT_CHECK(pd_grad(&gv, 1, &x, 1, &hv, NULL) == 0);
    double dxx = 0, xdv = 0;
    for (int i = 0; i < 3; i++) { dxx += xv[i] * xv[i]; xdv += xv[i] * vv[i]; }
    for (int i = 0; hv && i < 3; i++) PT_NEAR(at(hv, i), 4 * dxx * vv[i] + 8 * xv[i] * xdv, 1e-12);
    PT_CHECK(pd_tensor_grad(x) == NULL); /* pd_grad never touches .grad */
    pd_scope_end(scope_tok);
}

static struct pd_tensor *double_it(struct pd_tensor *g, void *ctx)
{
    (*(int *)ctx)++;
    return pd_scale(g, 2.0);
}

/* pd_backward_ex with create_graph: .grad carries a graph, so a second
 * backward through it gives second derivatives. f = sum(x^3 * y):
 * df/dx = 3x^2 y; d/dx sum(df/dx) = 6xy, d/dy sum(df/dx) = 3x^2. */
static void test_backward_create_graph(void)
{
    int scope_tok = pd_scope_begin();
    double xv[] = {-1.5, 0.5, 2.0}, yv[] = {2.0, -3.0, 0.25};
    struct pd_tensor *x = pd_requires_grad_(vec(xv, 3), 1), *y = pd_requires_grad_(vec(yv, 3), 1);
    struct pd_tensor *f = pd_sum(pd_mul(pd_mul(pd_mul(x, x), x), y), NULL, 0, 0);
    PT_CHECK(pd_backward_ex(f, &(struct pd_grad_options){.create_graph = 1}) == 0);
    struct pd_tensor *gx = pd_tensor_grad(x);
    PT_CHECK(gx && pd_tensor_requires_grad(gx) && pd_tensor_grad_fn_name(gx));
    for (int i = 0; gx && i < 3; i++) PT_NEAR(at(gx, i), 3 * xv[i] * xv[i] * yv[i], 1e-12);
    /* second order through the .grad field (pd_grad leaves .grad alone) */
    struct pd_tensor *s = pd_sum(gx, NULL, 0, 0), *ins[2] = {x, y}, *h[2] = {NULL, NULL};
    PT_CHECK(pd_grad(&s, 1, ins, 2, h, NULL) == 0 && h[0] && h[1]);
    for (int i = 0; h[0] && h[1] && i < 3; i++) {
        PT_NEAR(at(h[0], i), 6 * xv[i] * yv[i], 1e-12);
        PT_NEAR(at(h[1], i), 3 * xv[i] * xv[i], 1e-12);
    }
    /* without create_graph (NULL options) .grad has no history */
    pd_tensor_zero_grad(x);
    pd_tensor_zero_grad(y);
    f = pd_sum(pd_mul(pd_mul(pd_mul(x, x), x), y), NULL, 0, 0);
    PT_CHECK(pd_backward_ex(f, NULL) == 0 && pd_tensor_grad(x) && !pd_tensor_requires_grad(pd_tensor_grad(x)));
    /* the graph was freed (retain_graph defaults to 0) */
    PT_CHECK(pd_backward_ex(f, NULL) != 0 && strstr(pd_last_error(), "freed"));
    pd_tensor_zero_grad(x);
    pd_tensor_zero_grad(y);
    pd_scope_end(scope_tok);
}

static void test_guards_hooks(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = pd_requires_grad_(pd_full((int64_t[]){2}, 1, 3.0, PD_F64), 1);
    int prev = pd_no_grad_begin();
    struct pd_tensor *y = pd_mul(x, x);
    PT_CHECK(!pd_tensor_requires_grad(y));
    int inner = pd_enable_grad_begin();
    PT_CHECK(pd_tensor_requires_grad(pd_mul(x, x)));
    pd_grad_mode_end(inner);
    pd_grad_mode_end(prev);
    PT_CHECK(pd_is_grad_enabled());

    /* hooks on a leaf and on an intermediate, and retain_grad */
    int calls = 0;
    struct pd_tensor *h = pd_mul(x, x);
    PT_CHECK(pd_tensor_register_hook(h, double_it, &calls) == 0);
    PT_CHECK(pd_tensor_register_hook(x, double_it, &calls) == 0);
    PT_CHECK(pd_retain_grad(h) == 0);
    PT_CHECK(pd_backward(pd_sum(h, NULL, 0, 0), NULL, 0) == 0);
    PT_CHECK(calls == 2);
    PT_NEAR(at(pd_tensor_grad(x), 0), 2 * (2 * 2 * 3.0), 1e-12); /* 2 * (2 * dh * x), dh = 2 */
    PT_CHECK(pd_tensor_grad(h) && at(pd_tensor_grad(h), 1) == 2.0);

    /* detach stops the gradient (x's hook still doubles what arrives) */
    pd_tensor_zero_grad(x);
    struct pd_tensor *z = pd_mul(pd_detach(x), x);
    PT_CHECK(pd_backward(pd_sum(z, NULL, 0, 0), NULL, 0) == 0);
    PT_NEAR(at(pd_tensor_grad(x), 0), 2 * 3.0, 1e-12);
    pd_scope_end(scope_tok);
}

static void test_errors_inplace(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = pd_requires_grad_(pd_full((int64_t[]){3}, 1, 2.0, PD_F64), 1);
    /* a non-differentiable path */
    struct pd_tensor *c = pd_sum(pd_cast(pd_gt(x, pd_scalar(1, PD_F64)), PD_F64), NULL, 0, 0);
    PT_CHECK(pd_backward(c, NULL, 0) != 0 && strstr(pd_last_error(), "does not require grad"));
    /* non-scalar output without a gradient */
    PT_CHECK(pd_backward(pd_mul(x, x), NULL, 0) != 0 && strstr(pd_last_error(), "not a scalar"));
    /* in-place on a leaf that requires grad */
    PT_CHECK(pd_add_(x, pd_scalar(1, PD_F64)) == NULL && strstr(pd_last_error(), "leaf"));
    /* in-place on a non-leaf rebases its history: y = 2x; y *= x -> dy/dx = 4x */
    struct pd_tensor *y = pd_scale(x, 2.0);
    PT_CHECK(pd_mul_(y, x) == y);
    PT_NEAR(at(y, 0), 8.0, 1e-12);
    PT_CHECK(pd_backward(pd_sum(y, NULL, 0, 0), NULL, 0) == 0);
    PT_NEAR(at(pd_tensor_grad(x), 0), 8.0, 1e-12);
    /* modifying a tensor saved for backward is detected */
    struct pd_tensor *w = pd_scale(x, 1.0);
    struct pd_tensor *u = pd_mul(w, w);
    int prev = pd_no_grad_begin();
    pd_add_(w, pd_scalar(1, PD_F64));
    pd_grad_mode_end(prev);
    PT_CHECK(pd_backward(pd_sum(u, NULL, 0, 0), NULL, 0) != 0 && strstr(pd_last_error(), "in-place"));
    /* pd_grad: unused inputs */
    struct pd_tensor *q = pd_requires_grad_(pd_ones((int64_t[]){2}, 1, PD_F64), 1), *gr[2];
    struct pd_tensor *L = pd_sum(pd_mul(x, x), NULL, 0, 0), *ins[2] = {x, q};
    PT_CHECK(pd_grad(&L, 1, ins, 2, gr, &(struct pd_grad_options){.retain_graph = 1}) != 0 &&
             strstr(pd_last_error(), "not used"));
    PT_CHECK(pd_grad(&L, 1, ins, 2, gr, &(struct pd_grad_options){.retain_graph = 1, .allow_unused = 1}) == 0 &&
             gr[1] == NULL && gr[0] && at(gr[0], 2) == 4.0);
    /* gradient w.r.t. an intermediate */
    struct pd_tensor *m = pd_scale(x, 3.0), *L2 = pd_sum(pd_mul(m, m), NULL, 0, 0), *gm = NULL;
    PT_CHECK(pd_grad(&L2, 1, &m, 1, &gm, NULL) == 0 && gm && at(gm, 0) == 12.0);
    /* NULL propagates through ops and is refused by backward */
    PT_CHECK(pd_mul(NULL, x) == NULL && pd_backward(NULL, NULL, 0) != 0);
    pd_scope_end(scope_tok);
}

/* A training-style loop leaks nothing and a deep graph frees without
 * recursion. */
static void test_lifetime(void)
{
    int64_t live0 = pd_live_tensors();
    struct pd_tensor *w = pd_requires_grad_(pd_full((int64_t[]){4}, 1, 0.5, PD_F32), 1);
    for (int step = 0; step < 20; step++) {
        int scope_tok = pd_scope_begin();
        struct pd_tensor *xx = pd_randn((int64_t[]){8, 4}, 2, PD_F32, NULL);
        struct pd_tensor *pred = pd_sum(pd_mul(xx, w), (int[]){1}, 1, 0);
        struct pd_tensor *loss = pd_mean(pd_square(pd_sub(pred, pd_scalar(1.0, PD_F32))), NULL, 0, 0);
        pd_backward(loss, NULL, 0);
        int prev = pd_no_grad_begin();
        pd_add_(w, pd_scale(pd_tensor_grad(w), -0.01));
        pd_grad_mode_end(prev);
        pd_tensor_zero_grad(w);
        pd_scope_end(scope_tok);
    }
    pd_tensor_release(w);
    PT_CHECK(pd_live_tensors() == live0);

    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = pd_requires_grad_(pd_ones((int64_t[]){2}, 1, PD_F64), 1), *y = x;
    for (int i = 0; i < 20000; i++) y = pd_scale(y, 1.0);
    PT_CHECK(pd_backward(pd_sum(y, NULL, 0, 0), NULL, 0) == 0 && at(pd_tensor_grad(x), 1) == 1.0);
    pd_scope_end(scope_tok);
    PT_CHECK(pd_live_tensors() == live0);
}

int main(void)
{
    test_basic();
    test_broadcast();
    test_fourth_order();
    test_hvp();
    test_backward_create_graph();
    test_guards_hooks();
    test_errors_inplace();
    test_lifetime();
    PT_DONE();
}
