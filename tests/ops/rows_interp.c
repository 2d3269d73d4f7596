/* paddle.c — op test rows: image resizing (interpolate and its adjoint
 * interpolate_backward).
 *
 * Nearest and bilinear (align_corners on and off), up and down, by size
 * and by scale factor (the 1 / scale mapping), bilinear's out == in
 * identity and a nearest scale factor that gives out == in, one-pixel
 * outputs, transposed and strided inputs, a zero-size batch, and a large
 * call that reaches the CPU kernel's parallel path. The adjoint is also
 * called directly, once with a scale that disagrees with the sizes.
 */
#include "ops/harness.h"

#define RF(name, expr) \
    static struct pd_tensor *f_##name(struct pd_tensor **in) { return expr; }

#define FL OPT_DT_FLOW
#define NEAR PD_INTERP_NEAREST
#define BIL PD_INTERP_BILINEAR

static struct pd_tensor *by_size(struct pd_tensor *x, int64_t h, int64_t w, enum pd_interp_mode m, int al)
{
    return pd_interpolate(x, (int64_t[]){h, w}, NULL, m, al);
}

static struct pd_tensor *by_scale(struct pd_tensor *x, double sh, double sw, enum pd_interp_mode m, int al)
{
    return pd_interpolate(x, NULL, (double[]){sh, sw}, m, al);
}

RF(near_up, by_size(in[0], 5, 7, NEAR, 0))
RF(near_down, by_size(in[0], 2, 3, NEAR, 0))
RF(near_x2, by_scale(in[0], 2, 2, NEAR, 0))
RF(near_s17, by_scale(in[0], 1.7, 0.6, NEAR, 0))
RF(near_same_h, by_scale(in[0], 1.1, 2.5, NEAR, 0))
RF(near_1px, by_size(in[0], 1, 1, NEAR, 0))
RF(bil_up, by_size(in[0], 5, 7, BIL, 0))
RF(bil_down, by_size(in[0], 2, 3, BIL, 0))
RF(bil_up_al, by_size(in[0], 5, 7, BIL, 1))
RF(bil_down_al, by_size(in[0], 2, 3, BIL, 1))
RF(bil_s15, by_scale(in[0], 1.5, 2.3, BIL, 0))
RF(bil_s07_al, by_scale(in[0], 0.7, 1.3, BIL, 1))
RF(bil_same, by_scale(in[0], 1.1, 1.0, BIL, 0))
RF(bil_1px_al, by_size(in[0], 1, 1, BIL, 1))
RF(bil_large, by_size(in[0], 96, 80, BIL, 0))
RF(near_large, by_scale(in[0], 1.5, 1.5, NEAR, 0))

/* interpolate_backward called directly: g [N, C, oh, ow] -> [N, C, h, w] */
static struct pd_tensor *adjoint(struct pd_tensor *g, int64_t h, int64_t w, enum pd_interp_mode m, int al, double sh,
                                 double sw)
{
    struct pdi_attrs a = {.interpolate_backward = {.mode = m, .align_corners = al, .out_h = pd_tensor_shape(g)[2],
                                                   .out_w = pd_tensor_shape(g)[3], .scale_h = sh, .scale_w = sw,
                                                   .in_h = h, .in_w = w}};
    return pdi_call1(PD_OP_interpolate_backward, g, &a);
}
RF(adj_near, adjoint(in[0], 3, 4, NEAR, 0, 0, 0))
RF(adj_bil, adjoint(in[0], 3, 4, BIL, 0, 0, 0))
RF(adj_bil_al, adjoint(in[0], 4, 6, BIL, 1, 0, 0))
/* a scale that disagrees with the sizes (the wrapper never makes one): reads stay inside x */
RF(adj_bil_scale, adjoint(in[0], 3, 3, BIL, 0, 1.5, 2.0))

static const struct opt_row rows[] = {
    {"interpolate/nearest_up", PD_OP_interpolate, 1, {OPT_F(2, 3, 3, 4)}, f_near_up, FL},
    {"interpolate/nearest_down", PD_OP_interpolate, 1, {OPT_F(1, 2, 5, 7)}, f_near_down, FL},
    {"interpolate/nearest_scale2", PD_OP_interpolate, 1, {OPT_F(1, 2, 3, 4)}, f_near_x2, FL},
    {"interpolate/nearest_scale_mixed", PD_OP_interpolate, 1, {OPT_F(2, 1, 4, 6)}, f_near_s17, FL},
    {"interpolate/nearest_same_height", PD_OP_interpolate, 1, {OPT_F(1, 2, 4, 3)}, f_near_same_h, FL},
    {"interpolate/nearest_1px", PD_OP_interpolate, 1, {OPT_F(2, 2, 3, 4)}, f_near_1px, FL},
    {"interpolate/bilinear_up", PD_OP_interpolate, 1, {OPT_F(2, 3, 3, 4)}, f_bil_up, FL},
    {"interpolate/bilinear_down", PD_OP_interpolate, 1, {OPT_F(1, 2, 5, 7)}, f_bil_down, FL},
    {"interpolate/bilinear_up_align", PD_OP_interpolate, 1, {OPT_F(2, 3, 3, 4)}, f_bil_up_al, FL},
    {"interpolate/bilinear_down_align", PD_OP_interpolate, 1, {OPT_F(1, 2, 5, 7)}, f_bil_down_al, FL},
    {"interpolate/bilinear_scale", PD_OP_interpolate, 1, {OPT_F(2, 2, 3, 3)}, f_bil_s15, FL},
    {"interpolate/bilinear_scale_align", PD_OP_interpolate, 1, {OPT_F(1, 3, 5, 4)}, f_bil_s07_al, FL},
    {"interpolate/bilinear_same_size", PD_OP_interpolate, 1, {OPT_F(1, 2, 4, 5)}, f_bil_same, FL},
    {"interpolate/bilinear_1px_align", PD_OP_interpolate, 1, {OPT_F(1, 2, 3, 4)}, f_bil_1px_al, FL},
    {"interpolate/bilinear_transposed", PD_OP_interpolate, 1, {OPT_FT(2, 2, 4, 3)}, f_bil_up, FL},
    {"interpolate/nearest_strided", PD_OP_interpolate, 1, {OPT_FS(2, 2, 3, 4)}, f_near_up, FL},
    {"interpolate/bilinear_strided_align", PD_OP_interpolate, 1, {OPT_FS(1, 3, 4, 3)}, f_bil_up_al, FL},
    {"interpolate/zero_batch", PD_OP_interpolate, 1, {OPT_F(0, 3, 3, 4)}, f_bil_up, FL},
    {"interpolate/bilinear_large", PD_OP_interpolate, 1, {OPT_F(2, 16, 48, 40)}, f_bil_large, FL, .no_gradcheck = 1},
    {"interpolate/nearest_large", PD_OP_interpolate, 1, {OPT_F(2, 16, 48, 40)}, f_near_large, FL, .no_gradcheck = 1},
    {"interpolate_backward/nearest", PD_OP_interpolate_backward, 1, {OPT_F(2, 2, 5, 7)}, f_adj_near, FL},
    {"interpolate_backward/bilinear", PD_OP_interpolate_backward, 1, {OPT_F(2, 2, 5, 7)}, f_adj_bil, FL},
    {"interpolate_backward/bilinear_align_down", PD_OP_interpolate_backward, 1, {OPT_F(1, 3, 2, 3)}, f_adj_bil_al, FL},
    {"interpolate_backward/bilinear_scale_disagrees", PD_OP_interpolate_backward, 1, {OPT_FT(1, 2, 6, 4)}, f_adj_bil_scale, FL},
};

int opt_rows_interp(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
