/* Weighted cross-entropy, group normalisation and image resizing, as
 * PyTorch's F.cross_entropy(weight=...), nn.GroupNorm and F.interpolate.
 * Usage: example_nn_ops_tour   (any arguments are ignored) */
#include <stdio.h>

#include "pd/pd.h"

static void show(const char *what, struct pd_tensor *t)
{
    double v[64];
    int64_t n = pd_tensor_numel(t);
    pd_to_buffer(t, v, PD_F64);
    printf("%s:", what);
    for (int64_t i = 0; i < n && i < 64; i++) printf(" %.4f", v[i]);
    printf("\n");
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int scope = pd_scope_begin();

    /* 3 samples, 4 classes; class 3 counts double, target -100 is ignored */
    double lv[12] = {2, 0.5, -1, 0, 0.1, 0.2, 3, -2, 1, 1, 1, 1};
    int64_t tv[3] = {0, 2, -100}, ls[2] = {3, 4}, n3 = 3, n4 = 4;
    double wv[4] = {1, 1, 1, 2};
    struct pd_tensor *logits = pd_requires_grad_(pd_from_buffer(lv, ls, 2, PD_F64), 1);
    struct pd_tensor *target = pd_from_buffer(tv, &n3, 1, PD_I64);
    struct pd_tensor *weight = pd_from_buffer(wv, &n4, 1, PD_F64);
    struct pd_tensor *loss = pd_cross_entropy_weighted(logits, target, weight, -100, 0.1, PD_REDUCE_MEAN);
    if (!loss || pd_backward(loss, NULL, 0)) {
        fprintf(stderr, "cross_entropy: %s\n", pd_last_error());
        return 1;
    }
    show("weighted cross-entropy", loss);
    show("d loss / d logits", pd_tensor_grad(logits));

    /* GroupNorm: 4 channels in 2 groups, each group normalised over its channels and pixels */
    struct pd_nn_groupnorm *gn = pd_nn_groupnorm_create(2, 4, 1e-5, 1);
    struct pd_tensor *x = pd_arange(0, 16, 1, PD_F32);
    struct pd_tensor *y = gn ? pd_nn_groupnorm_forward(gn, pd_reshape(x, (int64_t[]){1, 4, 2, 2}, 4)) : NULL;
    if (!y) {
        fprintf(stderr, "group_norm: %s\n", pd_last_error());
        return 1;
    }
    show("group_norm", y);
    pd_nn_groupnorm_destroy(gn);

    /* a 2 x 2 image to 4 x 4: nearest, bilinear, bilinear with align_corners */
    double iv[4] = {0, 1, 2, 3};
    struct pd_tensor *img = pd_from_buffer(iv, (int64_t[]){1, 1, 2, 2}, 4, PD_F64);
    int64_t size[2] = {4, 4};
    show("nearest 4x4", pd_interpolate(img, size, NULL, PD_INTERP_NEAREST, 0));
    show("bilinear 4x4", pd_interpolate(img, size, NULL, PD_INTERP_BILINEAR, 0));
    show("bilinear 4x4 align_corners", pd_interpolate(img, size, NULL, PD_INTERP_BILINEAR, 1));
    show("scale 1.5 nearest", pd_interpolate(img, NULL, (double[]){1.5, 1.5}, PD_INTERP_NEAREST, 0));

    pd_scope_end(scope);
    return 0;
}
