/* A tour of paddle.c autograd: backward, pd_grad, higher order, hooks. */
#include <math.h>
#include <stdio.h>

#include "pd/pd.h"

static struct pd_tensor *clip_hook(struct pd_tensor *g, void *ctx)
{
    (void)ctx;
    return pd_clip(g, -1.0, 1.0); /* replace the gradient flowing into x */
}

int main(void)
{
    int scope_tok = pd_scope_begin();
    double xs[] = {0.5, 1.0, 2.0};
    struct pd_tensor *x = pd_from_buffer(xs, (int64_t[]){3}, 1, PD_F64);
    pd_requires_grad_(x, 1);

    /* 1. backward: L = sum(x^2 * sin(x)) */
    struct pd_tensor *L = pd_sum(pd_mul(pd_square(x), pd_sin(x)), NULL, 0, 0);
    pd_backward(L, NULL, 0);
    printf("dL/dx    = ");
    pd_tensor_print(pd_tensor_grad(x)); /* 2x sin x + x^2 cos x */

    /* 2. pd_grad with create_graph, four times: d^4/dx^4 sin(x) e^x = -4 sin(x) e^x */
    struct pd_tensor *g = pd_mul(pd_sin(x), pd_exp(x));
    for (int k = 0; k < 4; k++) {
        struct pd_tensor *s = pd_sum(g, NULL, 0, 0);
        pd_grad(&s, 1, &x, 1, &g, &(struct pd_grad_options){.create_graph = 1, .retain_graph = 1});
    }
    printf("d4/dx4   = ");
    pd_tensor_print(g);
    printf("analytic = [%.4f, %.4f, %.4f]\n", -4 * sin(0.5) * exp(0.5), -4 * sin(1.0) * exp(1.0),
           -4 * sin(2.0) * exp(2.0));

    /* 3. no_grad: nothing is recorded */
    int ng = pd_no_grad_begin();
    struct pd_tensor *y = pd_mul(x, x);
    pd_grad_mode_end(ng);
    printf("under no_grad requires_grad = %d\n", pd_tensor_requires_grad(y));

    /* 4. a hook clips the gradient arriving at x */
    pd_tensor_zero_grad(x);
    pd_tensor_register_hook(x, clip_hook, NULL);
    pd_backward(pd_sum(pd_scale(x, 5.0), NULL, 0, 0), NULL, 0);
    printf("clipped  = ");
    pd_tensor_print(pd_tensor_grad(x));

    /* 5. errors are messages, not crashes */
    if (pd_backward(L, NULL, 0) != 0) printf("second backward: %s\n", pd_last_error());
    pd_scope_end(scope_tok); /* frees x, its gradient and every intermediate */
    return 0;
}
