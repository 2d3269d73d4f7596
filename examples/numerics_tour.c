/* PyTorch's conventions where they differ from the obvious: pooling options,
 * the p-norm for any p, a second derivative of prod at a zero, and an f64
 * module. Prints the values; exit status 1 if one differs from PyTorch's.
 * Usage: example_numerics_tour */
#include <math.h>
#include <stdio.h>

#include "pd/pd.h"

static int near(const char *what, double got, double want)
{
    printf("%-40s %10.6f (PyTorch %10.6f)\n", what, got, want);
    return fabs(got - want) <= 1e-6 * (1 + fabs(want)) ? 0 : 1;
}

int main(void)
{
    int bad = 0, scope = pd_scope_begin();
    /* a 1x1x5x5 image 0..24; 2x2 windows, stride 2, padding 1 */
    struct pd_tensor *img = pd_reshape(pd_arange(0, 25, 1, PD_F32), (int64_t[]){1, 1, 5, 5}, 4);
    int k[2] = {2, 2}, s[2] = {2, 2}, p[2] = {1, 1};
    /* exclusive (Paddle's default, pd_avg_pool2d): the corner window holds
     * one input element: 0 / 1 */
    struct pd_tensor *ex = pd_avg_pool2d_ex(img, k, s, p, 0, 1);
    /* exclusive = 0 is torch's default count_include_pad=True: 0 / 4 at the
     * corner; (1 + 2) / 4 next to it */
    struct pd_tensor *in = pd_avg_pool2d_ex(img, k, s, p, 0, 0);
    bad += near("avg_pool2d exclusive, window (0, 1)", pd_get(ex, (int64_t[]){0, 0, 0, 1}), 1.5);
    bad += near("avg_pool2d count padding, window (0, 1)", pd_get(in, (int64_t[]){0, 0, 0, 1}), 0.75);
    /* ceil_mode: 5 in windows of 2 (stride 2) gives 2 windows by floor; with
     * ceil_mode 3, the last one starting at 4 (inside the input) and
     * holding one row and column */
    struct pd_tensor *mc = pd_max_pool2d_ex(img, (int[]){2, 2}, NULL, NULL, 1);
    printf("max_pool2d 2x2 ceil_mode on 5x5: %lldx%lld\n", (long long)pd_tensor_dim(mc, 2),
           (long long)pd_tensor_dim(mc, 3));
    bad += near("max_pool2d ceil_mode, last window", pd_get(mc, (int64_t[]){0, 0, 2, 2}), 24);
    /* the vector norm for any p */
    struct pd_tensor *v = pd_from_buffer((const double[]){3, -4, 0}, (int64_t[]){3}, 1, PD_F64);
    bad += near("norm p=0 (nonzeros)", pd_item(pd_norm(v, 0, NULL, 0, 0)), 2);
    bad += near("norm p=3", pd_item(pd_norm(v, 3, NULL, 0, 0)), cbrt(91));
    bad += near("norm p=-inf (min |x|)", pd_item(pd_norm(v, -INFINITY, NULL, 0, 0)), 0);
    /* prod of [2, 0, 3]: d(dy/dx0)/dx1 = x2 = 3, exact at the zero */
    struct pd_tensor *x = pd_from_buffer((const double[]){2, 0, 3}, (int64_t[]){3}, 1, PD_F64), *g1, *h;
    pd_requires_grad_(x, 1);
    struct pd_tensor *y = pd_prod(x, NULL, 0, 0);
    pd_grad(&y, 1, &x, 1, &g1, &(struct pd_grad_options){.retain_graph = 1, .create_graph = 1}); /* create_graph */
    struct pd_tensor *g10 = pd_sum(pd_slice(g1, 0, 0, 1, 1), NULL, 0, 0);
    pd_grad(&g10, 1, &x, 1, &h, NULL);
    bad += near("prod [2, 0, 3]: d(dy/dx0)/dx1", pd_get(h, (int64_t[]){1}), 3);
    /* a Linear module in f64 */
    pd_nn_set_param_dtype(PD_F64);
    struct pd_nn_linear *lin = pd_nn_linear_create(3, 2, 1, NULL);
    pd_nn_set_param_dtype(PD_F32);
    struct pd_tensor *out = pd_nn_linear_forward(lin, pd_unsqueeze(v, 0));
    printf("f64 Linear: weight %s, output %s\n", pd_dtype_name(pd_tensor_dtype(lin->weight)),
           pd_dtype_name(pd_tensor_dtype(out)));
    bad += pd_tensor_dtype(out) != PD_F64;
    pd_nn_linear_destroy(lin);
    pd_scope_end(scope);
    printf("%s\n", bad ? "MISMATCH" : "all as PyTorch");
    return bad ? 1 : 0;
}
