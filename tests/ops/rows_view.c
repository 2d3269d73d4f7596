/* paddle.c — op test rows: views and copies (reshape, permute, slice,
 * expand, diagonal, squeeze/unsqueeze/flatten, unbind, contiguous). Views
 * are exercised through a copy so the compared result is contiguous data. */
#include "ops/harness.h"

static struct pd_tensor *f_reshape(struct pd_tensor **in)
{
    int64_t s[] = {3, -1};
    return pd_reshape(in[0], s, 2);
}
static struct pd_tensor *f_view(struct pd_tensor **in)
{
    int64_t s[] = {2, 3, 2, 2};
    return pd_contiguous(pd_view(in[0], s, 4));
}
static struct pd_tensor *f_permute(struct pd_tensor **in)
{
    int p[] = {2, 0, 1};
    return pd_contiguous(pd_permute(in[0], p, 3));
}
static struct pd_tensor *f_transpose(struct pd_tensor **in) { return pd_contiguous(pd_transpose(in[0], 0, -1)); }
static struct pd_tensor *f_slice(struct pd_tensor **in) { return pd_contiguous(pd_slice(in[0], 1, 1, -1, 2)); }
static struct pd_tensor *f_slice_neg(struct pd_tensor **in) { return pd_clone(pd_slice(in[0], -1, -3, 100, 1)); }
static struct pd_tensor *f_expand(struct pd_tensor **in)
{
    int64_t s[] = {2, 3, 4};
    return pd_contiguous(pd_expand(in[0], s, 3));
}
static struct pd_tensor *f_broadcast_to(struct pd_tensor **in)
{
    int64_t s[] = {3, 4, 5};
    return pd_contiguous(pd_broadcast_to(in[0], s, 3));
}
static struct pd_tensor *f_sum_to_shape(struct pd_tensor **in)
{
    int64_t s[] = {4, 1};
    return pd_sum_to_shape(in[0], s, 2);
}
static struct pd_tensor *f_inplace(struct pd_tensor **in)
{
    /* out-of-place reference shape for in-place ops on a private copy */
    struct pd_tensor *y = pd_clone(in[0]);
    int prev = pd_no_grad_begin();
    pd_add_(y, in[1]);
    pd_mul_(y, in[1]);
    pd_scale_(y, 0.5);
    pd_grad_mode_end(prev);
    return y;
}
static struct pd_tensor *f_diagonal(struct pd_tensor **in) { return pd_contiguous(pd_diagonal(in[0], 1, 0, 1)); }
static struct pd_tensor *f_diagonal_neg(struct pd_tensor **in) { return pd_contiguous(pd_diagonal(in[0], -1, -1, 0)); }
static struct pd_tensor *f_squeeze(struct pd_tensor **in) { return pd_contiguous(pd_unsqueeze(pd_squeeze(in[0], PD_ALL_AXES), -1)); }
static struct pd_tensor *f_flatten(struct pd_tensor **in) { return pd_contiguous(pd_flatten(in[0], 1, 2)); }
static struct pd_tensor *f_unbind(struct pd_tensor **in)
{
    struct pd_tensor *parts[8];
    int n = pd_unbind(in[0], 1, parts);
    if (n < 2) return NULL;
    return pd_add(parts[0], pd_scale(parts[n - 1], 2.0));
}
static struct pd_tensor *f_clone(struct pd_tensor **in) { return pd_clone(in[0]); }
/* a plain tensor's reshard is itself (distributed: tests/dist) */
static struct pd_tensor *f_reshard(struct pd_tensor **in)
{
    struct pdi_attrs a;
    pdi_attrs_default(PD_OP_reshard, &a);
    return pd_contiguous(pdi_call1(PD_OP_reshard, in[0], &a));
}
static struct pd_tensor *f_slice_backward(struct pd_tensor **in)
{
    struct pdi_attrs a = {.slice_backward = {.axis = 1, .start = 1, .stop = 6, .step = 2, .input_shape = {2, {3, 7}}}};
    return pdi_call1(PD_OP_slice_backward, in[0], &a);
}
static struct pd_tensor *f_diagonal_backward(struct pd_tensor **in)
{
    struct pdi_attrs a = {.diagonal_backward = {.offset = 1, .axis1 = 0, .axis2 = 1, .input_shape = {2, {4, 5}}}};
    return pdi_call1(PD_OP_diagonal_backward, in[0], &a);
}

#define ALLDT (OPT_DT_FLOW | OPT_DT_INT | 1u << PD_U8)

static const struct opt_row rows[] = {
    {"reshape/copy_path", PD_OP_view, 1, {OPT_FT(4, 6)}, f_reshape, ALLDT},
    {"reshape/contig", PD_OP_view, 1, {OPT_F(2, 3, 4)}, f_reshape, OPT_DT_F},
    {"view/4d", PD_OP_view, 1, {OPT_F(6, 4)}, f_view, ALLDT},
    {"reshard/plain", PD_OP_reshard, 1, {OPT_FS(2, 3, 5)}, f_reshard, ALLDT},
    {"permute/3d", PD_OP_permute, 1, {OPT_F(2, 3, 5)}, f_permute, ALLDT},
    {"permute/strided", PD_OP_permute, 1, {OPT_FS(2, 3, 5)}, f_permute, OPT_DT_F},
    {"transpose/2d_T", PD_OP_permute, 1, {OPT_FT(5, 3)}, f_transpose, OPT_DT_F},
    {"slice/step2", PD_OP_slice, 1, {OPT_F(3, 9)}, f_slice, ALLDT},
    {"slice/neg_clamp", PD_OP_slice, 1, {OPT_FS(4, 5)}, f_slice_neg, OPT_DT_F},
    {"slice/zero_size", PD_OP_slice, 1, {OPT_F(0, 5)}, f_slice_neg, OPT_DT_F},
    {"expand/lead_and_1", PD_OP_expand, 1, {OPT_F(3, 1)}, f_expand, ALLDT},
    {"broadcast_to", PD_OP_expand, 1, {OPT_F(4, 1)}, f_broadcast_to, OPT_DT_FLOW},
    {"sum_to_shape/T", PD_OP_COUNT, 1, {OPT_FT(3, 4, 5)}, f_sum_to_shape, OPT_DT_FLOW},
    {"inplace_add_mul_scale/bcast", PD_OP_COUNT, 2, {OPT_FT(3, 4), OPT_F(4)}, f_inplace, OPT_DT_FLOW, .no_gradcheck = 1},
    {"diagonal/offset1", PD_OP_diagonal, 1, {OPT_F(4, 5, 2)}, f_diagonal, OPT_DT_FLOW},
    {"diagonal/neg_T", PD_OP_diagonal, 1, {OPT_FT(5, 4)}, f_diagonal_neg, OPT_DT_F},
    {"squeeze_unsqueeze", PD_OP_COUNT, 1, {OPT_F(1, 3, 1, 4)}, f_squeeze, OPT_DT_F},
    {"flatten/T", PD_OP_COUNT, 1, {OPT_FT(2, 3, 4)}, f_flatten, OPT_DT_F},
    {"unbind", PD_OP_COUNT, 1, {OPT_F(3, 4, 2)}, f_unbind, OPT_DT_F},
    {"copy/strided", PD_OP_copy, 1, {OPT_FS(7, 13)}, f_clone, ALLDT | 1u << PD_BOOL},
    {"copy/odd_T", PD_OP_copy, 1, {OPT_FT(7, 13)}, f_clone, OPT_DT_FLOW},
    {"copy/zero_size", PD_OP_copy, 1, {OPT_F(3, 0, 2)}, f_clone, OPT_DT_F},
    {"copy/0d", PD_OP_copy, 1, {OPT_F0}, f_clone, OPT_DT_F},
    {"slice_backward", PD_OP_slice_backward, 1, {OPT_F(3, 3)}, f_slice_backward, ALLDT},
    {"diagonal_backward", PD_OP_diagonal_backward, 1, {OPT_F(4)}, f_diagonal_backward, ALLDT},
};

int opt_rows_view(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
