/* paddle.c — op test rows: linear algebra and convolution (matmul in all its
 * forms, linear, outer, dot, bmm, conv1d/conv2d, pools) and every backward
 * helper op, whose gradchecks are the second-order checks of the forward
 * ops. Float inputs stay under ~200 elements except in the no-gradcheck
 * rows that exercise the GEMM paths (threads, batch folding). */
#include <string.h>

#include "ops/harness.h"

#define FLOW OPT_DT_FLOW

/* ---- matmul ---------------------------------------------------------- */
static struct pd_tensor *f_mm(struct pd_tensor **in) { return pd_matmul(in[0], in[1], 0, 0); }
static struct pd_tensor *f_mm_ta(struct pd_tensor **in) { return pd_matmul(in[0], in[1], 1, 0); }
static struct pd_tensor *f_mm_tb(struct pd_tensor **in) { return pd_matmul(in[0], in[1], 0, 1); }
static struct pd_tensor *f_mm_tab(struct pd_tensor **in) { return pd_matmul(in[0], in[1], 1, 1); }
/* a 1-d operand ignores its flag (NumPy) */
static struct pd_tensor *f_mm_vec_flags(struct pd_tensor **in) { return pd_matmul(in[0], in[1], 1, 1); }
static struct pd_tensor *f_bmm(struct pd_tensor **in) { return pd_bmm(in[0], in[1]); }
static struct pd_tensor *f_linear(struct pd_tensor **in) { return pd_linear(in[0], in[1], in[2]); }
static struct pd_tensor *f_linear_nb(struct pd_tensor **in) { return pd_linear(in[0], in[1], NULL); }
static struct pd_tensor *f_outer(struct pd_tensor **in) { return pd_outer(in[0], in[1]); }
static struct pd_tensor *f_dot(struct pd_tensor **in) { return pd_dot(in[0], in[1]); }
/* b expanded over a batch with stride 0 (an operand the dispatcher passes raw) */
static struct pd_tensor *f_mm_expanded(struct pd_tensor **in)
{
    int64_t s[3] = {3, 4, 5};
    return pd_matmul(in[0], pd_expand(in[1], s, 3), 0, 0);
}
/* a row-sliced view of a transposed tensor: unit stride in neither dim */
static struct pd_tensor *f_mm_sliced(struct pd_tensor **in)
{
    return pd_matmul(pd_slice(in[0], 0, 0, 6, 2), pd_slice(in[1], 1, 1, 6, 1), 0, 0);
}

/* ---- conv ------------------------------------------------------------ */
#define CONV_FN(name, s0, s1, p0, p1, d0, d1, g)                                                                      \
    static __attribute__((unused)) struct pd_tensor *f_conv_##name(struct pd_tensor **in)                             \
    {                                                                                                            \
        int s[2] = {s0, s1}, p[2] = {p0, p1}, d[2] = {d0, d1};                                                        \
        return pd_conv2d(in[0], in[1], NULL, s, p, d, g);                                                             \
    }                                                                                                            \
    static __attribute__((unused)) struct pd_tensor *f_convb_##name(struct pd_tensor **in)                            \
    {                                                                                                            \
        int s[2] = {s0, s1}, p[2] = {p0, p1}, d[2] = {d0, d1};                                                        \
        return pd_conv2d(in[0], in[1], in[2], s, p, d, g);                                                            \
    }                                                                                                            \
    static __attribute__((unused)) const struct pdi_attrs_conv2d a_conv_##name = {                                   \
        .stride_h = s0, .stride_w = s1, .pad_h = p0, .pad_w = p1, .dilation_h = d0, .dilation_w = d1, .groups = g};
CONV_FN(basic, 1, 1, 0, 0, 1, 1, 1)
CONV_FN(stride_pad, 2, 1, 1, 0, 1, 1, 1)
CONV_FN(dilation, 1, 2, 1, 2, 2, 2, 1)
CONV_FN(groups, 1, 1, 1, 1, 1, 1, 2)
CONV_FN(depthwise, 2, 2, 1, 1, 1, 1, 3)
CONV_FN(floor, 2, 2, 0, 0, 1, 1, 1)

static struct pd_tensor *bwd_data(struct pd_tensor *g, struct pd_tensor *w, const struct pdi_attrs_conv2d *a, int64_t n,
                                  int64_t c, int64_t h, int64_t wd)
{
    struct pdi_attrs r = {.conv2d_backward_data = {.stride_h = a->stride_h, .stride_w = a->stride_w,
                                                   .pad_h = a->pad_h, .pad_w = a->pad_w, .dilation_h = a->dilation_h,
                                                   .dilation_w = a->dilation_w, .groups = a->groups,
                                                   .input_shape = {4, {n, c, h, wd}}}};
    return pdi_call2(PD_OP_conv2d_backward_data, g, w, &r);
}
static struct pd_tensor *bwd_weight(struct pd_tensor *g, struct pd_tensor *x, const struct pdi_attrs_conv2d *a,
                                    int64_t o, int64_t c, int64_t kh, int64_t kw)
{
    struct pdi_attrs r = {.conv2d_backward_weight = {.stride_h = a->stride_h, .stride_w = a->stride_w,
                                                     .pad_h = a->pad_h, .pad_w = a->pad_w,
                                                     .dilation_h = a->dilation_h, .dilation_w = a->dilation_w,
                                                     .groups = a->groups, .weight_shape = {4, {o, c, kh, kw}}}};
    return pdi_call2(PD_OP_conv2d_backward_weight, g, x, &r);
}
/* shapes: see the rows */
static struct pd_tensor *f_bd_basic(struct pd_tensor **in) { return bwd_data(in[0], in[1], &a_conv_basic, 2, 3, 5, 5); }
static struct pd_tensor *f_bd_stride(struct pd_tensor **in) { return bwd_data(in[0], in[1], &a_conv_stride_pad, 1, 2, 6, 7); }
static struct pd_tensor *f_bd_groups(struct pd_tensor **in) { return bwd_data(in[0], in[1], &a_conv_groups, 1, 4, 5, 5); }
static struct pd_tensor *f_bd_floor(struct pd_tensor **in) { return bwd_data(in[0], in[1], &a_conv_floor, 1, 2, 6, 6); }
static struct pd_tensor *f_bd_dil(struct pd_tensor **in) { return bwd_data(in[0], in[1], &a_conv_dilation, 1, 2, 7, 7); }
static struct pd_tensor *f_bw_basic(struct pd_tensor **in) { return bwd_weight(in[0], in[1], &a_conv_basic, 4, 3, 3, 3); }
static struct pd_tensor *f_bw_stride(struct pd_tensor **in) { return bwd_weight(in[0], in[1], &a_conv_stride_pad, 3, 2, 3, 2); }
static struct pd_tensor *f_bw_groups(struct pd_tensor **in) { return bwd_weight(in[0], in[1], &a_conv_groups, 6, 2, 3, 3); }
static struct pd_tensor *f_bw_dil(struct pd_tensor **in) { return bwd_weight(in[0], in[1], &a_conv_dilation, 2, 2, 2, 3); }
static struct pd_tensor *f_bw_empty(struct pd_tensor **in) { return bwd_weight(in[0], in[1], &a_conv_basic, 4, 3, 3, 3); }

static struct pd_tensor *f_conv1d(struct pd_tensor **in) { return pd_conv1d(in[0], in[1], in[2], 2, 1, 1, 1); }
static struct pd_tensor *f_conv1d_dg(struct pd_tensor **in) { return pd_conv1d(in[0], in[1], NULL, 1, 2, 2, 2); }
static struct pd_tensor *f_conv_unbatched(struct pd_tensor **in)
{
    int p[2] = {1, 1};
    return pd_conv2d(in[0], in[1], NULL, NULL, p, NULL, 1);
}

/* ---- pools ----------------------------------------------------------- */
static struct pd_tensor *f_maxp_basic(struct pd_tensor **in)
{
    int k[2] = {2, 2};
    return pd_max_pool2d(in[0], k, NULL, NULL);
}
static struct pd_tensor *f_avgp_basic(struct pd_tensor **in)
{
    int k[2] = {2, 2};
    return pd_avg_pool2d(in[0], k, NULL, NULL);
}
/* kernel 3, stride 2, padding 1 on [.., 7, 6] -> [.., 4, 3] */
#define POOL(kh, kw, sh, sw, ph, pw) \
    .kernel_h = kh, .kernel_w = kw, .stride_h = sh, .stride_w = sw, .pad_h = ph, .pad_w = pw
static const struct pdi_attrs a_pool = {.pool2d = {POOL(3, 3, 2, 2, 1, 1)}};
static const struct pdi_attrs a_pool_rect = {.pool2d = {POOL(2, 3, 1, 2, 1, 0)}};
static const struct pdi_attrs a_avg = {.avg_pool2d = {POOL(3, 3, 2, 2, 1, 1), .count_include_pad = 0}};
static const struct pdi_attrs a_avg_incl = {.avg_pool2d = {POOL(3, 3, 2, 2, 1, 1), .count_include_pad = 1}};
static const struct pdi_attrs a_avg_rect = {.avg_pool2d = {POOL(2, 3, 1, 2, 1, 0), .count_include_pad = 0}};
static struct pd_tensor *f_maxp_pad(struct pd_tensor **in) { return pdi_call1(PD_OP_max_pool2d, in[0], &a_pool); }
static struct pd_tensor *f_maxp_rect(struct pd_tensor **in) { return pdi_call1(PD_OP_max_pool2d, in[0], &a_pool_rect); }
static struct pd_tensor *f_avgp_pad(struct pd_tensor **in) { return pdi_call1(PD_OP_avg_pool2d, in[0], &a_avg); }
static struct pd_tensor *f_avgp_incl(struct pd_tensor **in) { return pdi_call1(PD_OP_avg_pool2d, in[0], &a_avg_incl); }
static struct pd_tensor *f_avgp_rect(struct pd_tensor **in) { return pdi_call1(PD_OP_avg_pool2d, in[0], &a_avg_rect); }
static struct pd_tensor *f_maxp_bwd(struct pd_tensor **in) { return pdi_call2(PD_OP_max_pool2d_backward, in[0], in[1], &a_pool); }
static struct pd_tensor *f_maxp_gather(struct pd_tensor **in) { return pdi_call2(PD_OP_max_pool2d_gather, in[0], in[1], &a_pool); }
static struct pd_tensor *avgp_bwd(struct pd_tensor *g, const struct pdi_attrs *a)
{
    struct pdi_attrs r;
    memset(&r, 0, sizeof r);
    r.avg_pool2d = a->avg_pool2d; /* avg_pool2d_backward's set begins with avg_pool2d's */
    r.avg_pool2d_backward.input_shape = (struct pdi_ints){4, {1, 2, 7, 6}};
    return pdi_call1(PD_OP_avg_pool2d_backward, g, &r);
}
/* ceil_mode: k3 s2 p1 on [.., 7, 6] -> [.., 4, 4], the last column's window
 * hangs past the right padding */
static const struct pdi_attrs a_pool_ceil = {.pool2d = {POOL(3, 3, 2, 2, 1, 1), .ceil_mode = 1}};
static const struct pdi_attrs a_avg_ceil_incl = {.avg_pool2d = {POOL(3, 3, 2, 2, 1, 1), .ceil_mode = 1,
                                                                .count_include_pad = 1}};
#undef POOL
static struct pd_tensor *f_maxp_bwd_ceil(struct pd_tensor **in)
{
    return pdi_call2(PD_OP_max_pool2d_backward, in[0], in[1], &a_pool_ceil);
}
static struct pd_tensor *f_avgp_bwd_ceil(struct pd_tensor **in) { return avgp_bwd(in[0], &a_avg_ceil_incl); }
/* the public options: ceil_mode, exclusive */
static struct pd_tensor *f_maxp_ceil(struct pd_tensor **in)
{
    return pd_max_pool2d_ex(in[0], (int[]){3, 3}, (int[]){2, 2}, (int[]){1, 1}, 1);
}
static struct pd_tensor *f_maxp_ceil_k2(struct pd_tensor **in)
{
    return pd_max_pool2d_ex(in[0], (int[]){2, 2}, NULL, NULL, 1);
}
static struct pd_tensor *f_avgp_ceil_excl(struct pd_tensor **in)
{
    return pd_avg_pool2d_ex(in[0], (int[]){3, 3}, (int[]){2, 2}, (int[]){1, 1}, 1, 1);
}
static struct pd_tensor *f_avgp_ceil_incl(struct pd_tensor **in)
{
    return pd_avg_pool2d_ex(in[0], (int[]){3, 3}, (int[]){2, 2}, (int[]){1, 1}, 1, 0);
}
/* k2 s2 p1 on 5: ceil gives 4 windows, but the 4th would start at 5, past
 * the input and the left padding: 3 */
static struct pd_tensor *f_avgp_ceil_drop(struct pd_tensor **in)
{
    return pd_avg_pool2d_ex(in[0], (int[]){2, 2}, (int[]){2, 2}, (int[]){1, 1}, 1, 0);
}
static struct pd_tensor *f_avgp_incl_pub(struct pd_tensor **in)
{
    return pd_avg_pool2d_ex(in[0], (int[]){3, 2}, (int[]){2, 1}, (int[]){1, 1}, 0, 0);
}
static struct pd_tensor *f_avgp_bwd(struct pd_tensor **in) { return avgp_bwd(in[0], &a_avg); }
static struct pd_tensor *f_avgp_bwd_incl(struct pd_tensor **in) { return avgp_bwd(in[0], &a_avg_incl); }
/* max pool through its backward (second order through the gather) */
static struct pd_tensor *f_maxp_unbatched(struct pd_tensor **in)
{
    int k[2] = {3, 2}, s[2] = {2, 2}, p[2] = {1, 1};
    return pd_max_pool2d(in[0], k, s, p);
}

static const struct opt_row rows[] = {
    /* matmul */
    {"matmul/2d", PD_OP_matmul, 2, {OPT_F(3, 4), OPT_F(4, 5)}, f_mm, FLOW},
    {"matmul/odd", PD_OP_matmul, 2, {OPT_F(7, 5), OPT_F(5, 3)}, f_mm, FLOW},
    {"matmul/batched", PD_OP_matmul, 2, {OPT_F(2, 3, 4), OPT_F(2, 4, 5)}, f_mm, FLOW},
    {"matmul/broadcast_batch", PD_OP_matmul, 2, {OPT_F(2, 1, 3, 4), OPT_F(5, 4, 6)}, f_mm, FLOW},
    {"matmul/broadcast_a", PD_OP_matmul, 2, {OPT_F(3, 4), OPT_F(2, 4, 5)}, f_mm, FLOW},
    {"matmul/fold_batch", PD_OP_matmul, 2, {OPT_F(2, 3, 4), OPT_F(4, 5)}, f_mm, FLOW},
    {"matmul/trans_a", PD_OP_matmul, 2, {OPT_F(4, 3), OPT_F(4, 5)}, f_mm_ta, FLOW},
    {"matmul/trans_b", PD_OP_matmul, 2, {OPT_F(3, 4), OPT_F(5, 4)}, f_mm_tb, FLOW},
    {"matmul/trans_ab_batched", PD_OP_matmul, 2, {OPT_F(2, 4, 3), OPT_F(1, 5, 4)}, f_mm_tab, FLOW},
    {"matmul/trans_b_fold", PD_OP_matmul, 2, {OPT_F(2, 3, 4), OPT_F(5, 4)}, f_mm_tb, FLOW},
    {"matmul/transposed_inputs", PD_OP_matmul, 2, {OPT_FT(3, 4), OPT_FT(2, 4, 5)}, f_mm, FLOW},
    {"matmul/transposed_trans", PD_OP_matmul, 2, {OPT_FT(4, 3), OPT_FT(5, 4)}, f_mm_tab, FLOW},
    {"matmul/strided_inputs", PD_OP_matmul, 2, {OPT_FS(3, 4), OPT_FS(4, 5)}, f_mm, FLOW},
    {"matmul/strided_batched", PD_OP_matmul, 2, {OPT_FS(2, 3, 4), OPT_FT(3, 5)}, f_mm_ta, FLOW},
    {"matmul/expanded_b", PD_OP_matmul, 2, {OPT_F(3, 2, 4), OPT_F(1, 4, 5)}, f_mm_expanded, FLOW},
    {"matmul/sliced_T", PD_OP_matmul, 2, {OPT_FT(6, 5), OPT_F(5, 7)}, f_mm_sliced, FLOW},
    {"matmul/vec_mat", PD_OP_matmul, 2, {OPT_F(4), OPT_F(4, 5)}, f_mm, FLOW},
    {"matmul/mat_vec", PD_OP_matmul, 2, {OPT_F(3, 4), OPT_F(4)}, f_mm, FLOW},
    {"matmul/vec_vec", PD_OP_matmul, 2, {OPT_F(6), OPT_F(6)}, f_mm, FLOW},
    {"matmul/vec_flags", PD_OP_matmul, 2, {OPT_F(4), OPT_F(2, 3, 4)}, f_mm_vec_flags, OPT_DT_F},
    {"matmul/batched_vec", PD_OP_matmul, 2, {OPT_F(2, 3, 4), OPT_F(4)}, f_mm, OPT_DT_F},
    {"matmul/k0_zeros", PD_OP_matmul, 2, {OPT_F(3, 0), OPT_F(0, 4)}, f_mm, FLOW},
    {"matmul/m0", PD_OP_matmul, 2, {OPT_F(0, 4), OPT_F(4, 3)}, f_mm, OPT_DT_F},
    {"matmul/empty_batch", PD_OP_matmul, 2, {OPT_F(0, 3, 4), OPT_F(4, 5)}, f_mm, OPT_DT_F},
    {"matmul/medium", PD_OP_matmul, 2, {OPT_F(67, 96), OPT_F(96, 81)}, f_mm, FLOW, .no_gradcheck = 1},
    {"matmul/medium_T", PD_OP_matmul, 2, {OPT_FT(67, 96), OPT_F(81, 96)}, f_mm_tb, FLOW, .no_gradcheck = 1},
    {"matmul/many_small", PD_OP_matmul, 2, {OPT_F(24, 8, 9), OPT_F(24, 9, 7)}, f_mm, FLOW, .no_gradcheck = 1},
    {"matmul/many_small_bcast", PD_OP_matmul, 2, {OPT_F(6, 1, 8, 9), OPT_FT(4, 9, 7)}, f_mm, FLOW, .no_gradcheck = 1},
    {"linear/bias", PD_OP_COUNT, 3, {OPT_F(2, 3, 4), OPT_F(5, 4), OPT_F(5)}, f_linear, FLOW},
    {"linear/no_bias", PD_OP_COUNT, 2, {OPT_F(3, 4), OPT_F(5, 4)}, f_linear_nb, FLOW},
    {"linear/1d_input", PD_OP_COUNT, 3, {OPT_F(4), OPT_F(5, 4), OPT_F(5)}, f_linear, OPT_DT_F},
    {"linear/T_weight", PD_OP_COUNT, 3, {OPT_FS(2, 3, 4), OPT_FT(5, 4), OPT_F(5)}, f_linear, OPT_DT_F},
    {"outer", PD_OP_COUNT, 2, {OPT_F(3), OPT_F(4)}, f_outer, FLOW},
    {"dot", PD_OP_COUNT, 2, {OPT_F(7), OPT_FS(7)}, f_dot, FLOW},
    {"bmm", PD_OP_COUNT, 2, {OPT_F(2, 3, 4), OPT_FT(2, 4, 5)}, f_bmm, FLOW},
    /* conv2d */
    {"conv2d/basic_bias", PD_OP_conv2d, 3, {OPT_F(2, 3, 5, 5), OPT_F(4, 3, 3, 3), OPT_F(4)}, f_convb_basic, FLOW},
    {"conv2d/basic", PD_OP_conv2d, 2, {OPT_F(2, 3, 5, 5), OPT_F(4, 3, 3, 3)}, f_conv_basic, FLOW},
    {"conv2d/stride_pad", PD_OP_conv2d, 3, {OPT_F(1, 2, 6, 7), OPT_F(3, 2, 3, 2), OPT_F(3)}, f_convb_stride_pad, FLOW},
    {"conv2d/dilation", PD_OP_conv2d, 2, {OPT_F(1, 2, 7, 7), OPT_F(2, 2, 2, 3)}, f_conv_dilation, FLOW},
    {"conv2d/groups", PD_OP_conv2d, 3, {OPT_F(1, 4, 5, 5), OPT_F(6, 2, 3, 3), OPT_F(6)}, f_convb_groups, FLOW},
    {"conv2d/depthwise", PD_OP_conv2d, 2, {OPT_F(1, 3, 6, 5), OPT_F(3, 1, 3, 3)}, f_conv_depthwise, FLOW},
    {"conv2d/floor_rows", PD_OP_conv2d, 2, {OPT_F(1, 2, 6, 6), OPT_F(2, 2, 3, 3)}, f_conv_floor, FLOW},
    {"conv2d/strided_input", PD_OP_conv2d, 2, {OPT_FS(1, 2, 5, 4), OPT_FT(3, 2, 3, 3)}, f_conv_stride_pad, FLOW},
    {"conv2d/unbatched", PD_OP_conv2d, 2, {OPT_F(2, 4, 5), OPT_F(3, 2, 3, 3)}, f_conv_unbatched, OPT_DT_F},
    {"conv2d/empty_batch", PD_OP_conv2d, 3, {OPT_F(0, 3, 5, 5), OPT_F(4, 3, 3, 3), OPT_F(4)}, f_convb_basic, OPT_DT_F},
    {"conv2d/zero_channels", PD_OP_conv2d, 3, {OPT_F(1, 0, 4, 4), OPT_F(2, 0, 3, 3), OPT_F(2)}, f_convb_basic, OPT_DT_F},
    {"conv2d/medium", PD_OP_conv2d, 3, {OPT_F(2, 8, 12, 12), OPT_F(16, 8, 3, 3), OPT_F(16)}, f_convb_stride_pad, FLOW,
     .no_gradcheck = 1},
    {"conv1d/bias", PD_OP_COUNT, 3, {OPT_F(2, 3, 8), OPT_F(4, 3, 3), OPT_F(4)}, f_conv1d, FLOW},
    {"conv1d/dil_groups", PD_OP_COUNT, 2, {OPT_F(1, 4, 9), OPT_F(4, 2, 2)}, f_conv1d_dg, FLOW},
    {"conv2d_backward_data/basic", PD_OP_conv2d_backward_data, 2, {OPT_F(2, 4, 3, 3), OPT_F(4, 3, 3, 3)}, f_bd_basic, FLOW},
    {"conv2d_backward_data/stride_pad", PD_OP_conv2d_backward_data, 2, {OPT_F(1, 3, 3, 6), OPT_F(3, 2, 3, 2)}, f_bd_stride,
     FLOW},
    {"conv2d_backward_data/groups", PD_OP_conv2d_backward_data, 2, {OPT_F(1, 6, 5, 5), OPT_FT(6, 2, 3, 3)}, f_bd_groups,
     FLOW},
    {"conv2d_backward_data/floor_rows", PD_OP_conv2d_backward_data, 2, {OPT_F(1, 2, 2, 2), OPT_F(2, 2, 3, 3)}, f_bd_floor,
     FLOW},
    {"conv2d_backward_data/dilation", PD_OP_conv2d_backward_data, 2, {OPT_FS(1, 2, 7, 4), OPT_F(2, 2, 2, 3)}, f_bd_dil,
     FLOW},
    {"conv2d_backward_weight/basic", PD_OP_conv2d_backward_weight, 2, {OPT_F(2, 4, 3, 3), OPT_F(2, 3, 5, 5)}, f_bw_basic,
     FLOW},
    {"conv2d_backward_weight/stride_pad", PD_OP_conv2d_backward_weight, 2, {OPT_F(1, 3, 3, 6), OPT_FT(1, 2, 6, 7)},
     f_bw_stride, FLOW},
    {"conv2d_backward_weight/groups", PD_OP_conv2d_backward_weight, 2, {OPT_F(1, 6, 5, 5), OPT_F(1, 4, 5, 5)}, f_bw_groups,
     FLOW},
    {"conv2d_backward_weight/dilation", PD_OP_conv2d_backward_weight, 2, {OPT_F(1, 2, 7, 4), OPT_FS(1, 2, 7, 7)},
     f_bw_dil, FLOW},
    {"conv2d_backward_weight/empty_batch", PD_OP_conv2d_backward_weight, 2, {OPT_F(0, 4, 3, 3), OPT_F(0, 3, 5, 5)},
     f_bw_empty, OPT_DT_F},
    /* pools */
    {"max_pool2d/basic", PD_OP_max_pool2d, 1, {OPT_F(2, 2, 6, 6)}, f_maxp_basic, FLOW},
    {"max_pool2d/stride_pad", PD_OP_max_pool2d, 1, {OPT_F(1, 2, 7, 6)}, f_maxp_pad, FLOW},
    {"max_pool2d/rect", PD_OP_max_pool2d, 1, {OPT_FT(2, 1, 5, 7)}, f_maxp_rect, FLOW},
    {"max_pool2d/strided_input", PD_OP_max_pool2d, 1, {OPT_FS(1, 2, 7, 6)}, f_maxp_pad, FLOW},
    {"max_pool2d/unbatched", PD_OP_max_pool2d, 1, {OPT_F(2, 5, 6)}, f_maxp_unbatched, OPT_DT_F},
    {"max_pool2d/empty", PD_OP_max_pool2d, 1, {OPT_F(0, 2, 4, 4)}, f_maxp_basic, OPT_DT_F},
    {"avg_pool2d/basic", PD_OP_avg_pool2d, 1, {OPT_F(2, 2, 6, 6)}, f_avgp_basic, FLOW},
    {"avg_pool2d/exclusive_pad", PD_OP_avg_pool2d, 1, {OPT_F(1, 2, 7, 6)}, f_avgp_pad, FLOW},
    {"avg_pool2d/include_pad", PD_OP_avg_pool2d, 1, {OPT_FT(1, 2, 7, 6)}, f_avgp_incl, FLOW},
    {"avg_pool2d/rect_strided", PD_OP_avg_pool2d, 1, {OPT_FS(2, 1, 5, 7)}, f_avgp_rect, FLOW},
    {"max_pool2d_backward", PD_OP_max_pool2d_backward, 2, {OPT_F(1, 2, 4, 3), OPT_F(1, 2, 7, 6)}, f_maxp_bwd, FLOW},
    {"max_pool2d_backward/strided", PD_OP_max_pool2d_backward, 2, {OPT_FT(1, 2, 4, 3), OPT_FS(1, 2, 7, 6)}, f_maxp_bwd,
     FLOW},
    {"max_pool2d_gather", PD_OP_max_pool2d_gather, 2, {OPT_F(1, 2, 7, 6), OPT_F(1, 2, 7, 6)}, f_maxp_gather, FLOW},
    {"avg_pool2d_backward", PD_OP_avg_pool2d_backward, 1, {OPT_F(1, 2, 4, 3)}, f_avgp_bwd, FLOW},
    {"avg_pool2d_backward/include_pad", PD_OP_avg_pool2d_backward, 1, {OPT_FS(1, 2, 4, 3)}, f_avgp_bwd_incl, FLOW},
    {"max_pool2d/ceil", PD_OP_max_pool2d, 1, {OPT_F(2, 2, 7, 6)}, f_maxp_ceil, FLOW},
    {"max_pool2d/ceil_k2", PD_OP_max_pool2d, 1, {OPT_FT(2, 1, 7, 5)}, f_maxp_ceil_k2, FLOW},
    {"avg_pool2d/ceil_exclusive", PD_OP_avg_pool2d, 1, {OPT_F(2, 2, 7, 6)}, f_avgp_ceil_excl, FLOW},
    {"avg_pool2d/ceil_include_pad", PD_OP_avg_pool2d, 1, {OPT_F(2, 2, 7, 6)}, f_avgp_ceil_incl, FLOW},
    {"avg_pool2d/ceil_rule", PD_OP_avg_pool2d, 1, {OPT_FS(1, 2, 5, 5)}, f_avgp_ceil_drop, FLOW},
    {"avg_pool2d/include_pad_public", PD_OP_avg_pool2d, 1, {OPT_F(1, 3, 6, 5)}, f_avgp_incl_pub, FLOW},
    {"max_pool2d_backward/ceil", PD_OP_max_pool2d_backward, 2, {OPT_F(1, 2, 4, 4), OPT_F(1, 2, 7, 6)},
     f_maxp_bwd_ceil, FLOW},
    {"avg_pool2d_backward/ceil_include_pad", PD_OP_avg_pool2d_backward, 1, {OPT_F(1, 2, 4, 4)}, f_avgp_bwd_ceil,
     FLOW},
};

int opt_rows_linalg(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
