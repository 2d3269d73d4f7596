/* paddle.c — op test rows: the reduce family (sum, mean, prod, amax/amin,
 * max/min with indices, argmax/argmin, var/std, logsumexp, norm, all/any,
 * cumsum/cumprod).
 *
 * Axis sets: single, multiple, negative, all, keepdim on and off; 0-d,
 * zero-size (reduced and kept), size-1 and odd dims, transposed and strided
 * inputs; f32/f64/bf16/f16 and integers/bool where the op takes them. Large
 * rows (forward only) reach the multi-chunk, multi-row-block and parallel
 * paths of the CPU kernels. Gradcheck rows have distinct values (no ties)
 * for max-type ops; rows with exact zeros take some columns from an
 * all-zero input (lo = hi = 0) through where, which exercises the zero branches of the
 * prod/cumprod rules and the safe denominators of norm p=2 and std.
 */
#include <math.h>

#include "ops/harness.h"

#define RF(name, expr) \
    static struct pd_tensor *f_##name(struct pd_tensor **in) { return expr; }
#define AXES(...) (int[]){__VA_ARGS__}, (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int))

/* x with exact zeros (taken from the all-zero input z, same shape) in
 * columns c0 and c1 (-1: none) of the last axis. Gradients reach z there,
 * so the zero branches of the VJP rules are checked. */
static struct pd_tensor *zero_cols(struct pd_tensor *x, struct pd_tensor *z, int c0, int c1)
{
    if (!x) return NULL;
    struct pd_tensor *col = pd_arange(0, (double)pd_tensor_dim(x, -1), 1, PD_I64);
    struct pd_tensor *keep = pd_ne(col, pd_scalar(c0, PD_I64));
    if (c1 >= 0) keep = pd_logical_and(keep, pd_ne(col, pd_scalar(c1, PD_I64)));
    return pd_where(keep, x, z);
}

/* Reversed scans are only reachable through the op table (VJP direction). */
static struct pd_tensor *scan_rev(enum pd_op op, struct pd_tensor *x, int axis)
{
    struct pdi_attrs a = {.scan = {.axis = axis, .reverse = 1}};
    return pdi_call1(op, x, &a);
}

static struct pd_tensor *max_idx(struct pd_tensor *x, int axis, int keep, int is_min)
{
    struct pd_tensor *idx = NULL;
    struct pd_tensor *v = is_min ? pd_min(x, axis, keep, &idx) : pd_max(x, axis, keep, &idx);
    return v ? idx : NULL;
}

RF(sum_all, pd_sum(in[0], NULL, 0, 0))
RF(sum_all_keep, pd_sum(in[0], NULL, 0, 1))
RF(sum_ax1, pd_sum(in[0], AXES(1), 0))
RF(sum_ax0, pd_sum(in[0], AXES(0), 0))
RF(sum_axlast, pd_sum(in[0], AXES(-1), 0))
RF(sum_ax0_neg1_keep, pd_sum(in[0], AXES(0, -1), 1))
RF(sum_ax2_0, pd_sum(in[0], AXES(2, 0), 0))
RF(sum_ax1_3, pd_sum(in[0], AXES(1, 3), 0))
RF(sum_ax0_2, pd_sum(in[0], AXES(0, 2), 1))
RF(mean_all, pd_mean(in[0], NULL, 0, 0))
RF(mean_ax1, pd_mean(in[0], AXES(1), 0))
RF(mean_ax0_neg1_keep, pd_mean(in[0], AXES(0, -1), 1))
RF(mean_ax0, pd_mean(in[0], AXES(0), 0))
RF(mean_axlast, pd_mean(in[0], AXES(-1), 1))
RF(prod_all, pd_prod(in[0], NULL, 0, 0))
RF(prod_ax1, pd_prod(in[0], AXES(1), 0))
RF(prod_ax0_keep, pd_prod(in[0], AXES(0), 1))
RF(prod_axlast, pd_prod(in[0], AXES(-1), 0))
RF(prod_zero1, pd_prod(zero_cols(in[0], in[1], 2, -1), AXES(1), 0))
RF(prod_zero2, pd_prod(zero_cols(in[0], in[1], 1, 3), AXES(1), 0))
RF(prod_zero1_all, pd_prod(zero_cols(in[0], in[1], 1, -1), NULL, 0, 0))
RF(prod_zero_ax0, pd_prod(zero_cols(in[0], in[1], 0, 3), AXES(0), 0))
RF(amax_all, pd_amax(in[0], NULL, 0, 0))
RF(amax_ax1, pd_amax(in[0], AXES(1), 0))
RF(amax_ax0_2_keep, pd_amax(in[0], AXES(0, 2), 1))
RF(amax_axlast, pd_amax(in[0], AXES(-1), 0))
RF(amin_all, pd_amin(in[0], NULL, 0, 0))
RF(amin_ax1, pd_amin(in[0], AXES(1), 1))
RF(amin_ax0, pd_amin(in[0], AXES(0), 0))
RF(amax_ax0, pd_amax(in[0], AXES(0), 0))
RF(amax_ties, pd_amax(pd_floor(in[0]), AXES(1), 0))
RF(max_ax1, pd_max(in[0], 1, 0, NULL))
RF(max_ax0_keep, pd_max(in[0], 0, 1, NULL))
RF(max_axlast, pd_max(in[0], -1, 0, NULL))
RF(max_0d, pd_max(in[0], 0, 0, NULL))
RF(max_idx1, max_idx(in[0], 1, 0, 0))
RF(max_idx0_keep, max_idx(in[0], 0, 1, 0))
RF(min_ax1, pd_min(in[0], 1, 0, NULL))
RF(min_ax0_keep, pd_min(in[0], 0, 1, NULL))
RF(min_idx1, max_idx(in[0], -1, 0, 1))
RF(argmax_ax1, pd_argmax(in[0], 1, 0))
RF(argmax_ax0_keep, pd_argmax(in[0], 0, 1))
RF(argmax_all, pd_argmax(in[0], PD_ALL_AXES, 0))
RF(argmax_ties, pd_argmax(pd_floor(in[0]), -1, 0))
RF(argmin_ax1, pd_argmin(in[0], -1, 0))
RF(argmin_all_keep, pd_argmin(in[0], PD_ALL_AXES, 1))
RF(var_all, pd_var(in[0], NULL, 0, 1, 0))
RF(var_ax1_c0, pd_var(in[0], AXES(1), 0, 0))
RF(var_ax0_neg1_keep, pd_var(in[0], AXES(0, -1), 1, 1))
RF(var_ax0, pd_var(in[0], AXES(0), 1, 0))
RF(var_c_ge_n, pd_var(in[0], AXES(1), 5, 0))
RF(std_all, pd_std(in[0], NULL, 0, 1, 0))
RF(std_ax1, pd_std(in[0], AXES(1), 1, 1))
RF(std_ax0_c0, pd_std(in[0], AXES(0), 0, 0))
RF(std_const, pd_std(in[0], AXES(1), 1, 0))
RF(lse_all, pd_logsumexp(in[0], NULL, 0, 0))
RF(lse_ax1, pd_logsumexp(in[0], AXES(1), 0))
RF(lse_ax0_2_keep, pd_logsumexp(in[0], AXES(0, 2), 1))
RF(lse_ax0, pd_logsumexp(in[0], AXES(0), 0))
RF(lse_neg_inf, pd_logsumexp(pd_log(in[0]), AXES(1), 0))
RF(norm1_all, pd_norm(in[0], 1, NULL, 0, 0))
RF(norm1_ax1, pd_norm(in[0], 1, AXES(1), 0))
RF(norm2_all, pd_norm(in[0], 2, NULL, 0, 0))
RF(norm2_ax0_keep, pd_norm(in[0], 2, AXES(0), 1))
RF(norm2_axlast, pd_norm(in[0], 2, AXES(-1), 0))
RF(norminf_all, pd_norm(in[0], INFINITY, NULL, 0, 0))
RF(norminf_ax1, pd_norm(in[0], INFINITY, AXES(1), 0))
RF(norm0_axes, pd_norm(in[0], 0, AXES(0, 2), 0))
RF(norm3_axes_keep, pd_norm(in[0], 3, AXES(0, 2), 1))
RF(norm_half_ax1, pd_norm(in[0], 0.5, AXES(1), 0))
RF(norm_1p5_all, pd_norm(in[0], 1.5, NULL, 0, 0))
RF(norm_neg1_all, pd_norm(in[0], -1, NULL, 0, 0))
RF(norm_neg2p5_axlast, pd_norm(in[0], -2.5, AXES(-1), 1))
RF(normninf_ax1, pd_norm(in[0], -INFINITY, AXES(1), 0))
RF(norm1p5_zero_rows, pd_norm(pd_where(pd_gt(pd_arange(0, 4, 1, PD_I64), pd_scalar(1, PD_I64)), in[0], in[1]), 1.5, AXES(0), 0))
RF(norm2_zero_rows, pd_norm(pd_where(pd_gt(pd_arange(0, 4, 1, PD_I64), pd_scalar(1, PD_I64)), in[0], in[1]), 2, AXES(0), 0))
RF(all_all, pd_all(in[0], NULL, 0, 0))
RF(all_ax1, pd_all(in[0], AXES(1), 0))
RF(all_ax0_keep, pd_all(in[0], AXES(0), 1))
RF(any_all, pd_any(in[0], NULL, 0, 0))
RF(any_ax1, pd_any(in[0], AXES(-1), 0))
RF(any_ax0_2, pd_any(in[0], AXES(0, 2), 1))
RF(cumsum_ax0, pd_cumsum(in[0], 0))
RF(cumsum_ax1, pd_cumsum(in[0], 1))
RF(cumsum_axlast, pd_cumsum(in[0], -1))
RF(cumsum_rev0, scan_rev(PD_OP_cumsum, in[0], 0))
RF(cumsum_rev1, scan_rev(PD_OP_cumsum, in[0], 1))
RF(cumprod_ax0, pd_cumprod(in[0], 0))
RF(cumprod_ax1, pd_cumprod(in[0], 1))
RF(cumprod_axlast, pd_cumprod(in[0], -1))
RF(cumprod_rev1, scan_rev(PD_OP_cumprod, in[0], 1))
RF(cumprod_zero1, pd_cumprod(zero_cols(in[0], in[1], 2, -1), 1))
RF(cumprod_zero2, pd_cumprod(zero_cols(in[0], in[1], 1, 4), 1))
RF(cumprod_zero1_rev, scan_rev(PD_OP_cumprod, zero_cols(in[0], in[1], 3, -1), 1))
RF(cumprod_zero_ax0, pd_cumprod(pd_transpose(zero_cols(in[0], in[1], 2, -1), 0, 1), 0))

#define FL OPT_DT_FLOW
#define NUM OPT_DT_ALLNUM
#define ALL (OPT_DT_ALLNUM | 1u << PD_BOOL)
#define F32 (1u << PD_F32)
#define ZERO(...) OPT_FR(0, 0, __VA_ARGS__)
#define POS(...) OPT_FR(0.5, 1.5, __VA_ARGS__)
#define BIGN 1

static const struct opt_row rows[] = {
    /* sum: every dtype (integers and bool give int64) and layout */
    {"sum/all", PD_OP_sum, 1, {OPT_F(3, 4, 5)}, f_sum_all, ALL},
    {"sum/all_keep", PD_OP_sum, 1, {OPT_F(3, 4, 5)}, f_sum_all_keep, FL},
    {"sum/axis1", PD_OP_sum, 1, {OPT_F(3, 4, 5)}, f_sum_ax1, ALL},
    {"sum/axes_0_neg1_keep", PD_OP_sum, 1, {OPT_F(3, 4, 5)}, f_sum_ax0_neg1_keep, NUM},
    {"sum/axes_2_0", PD_OP_sum, 1, {OPT_F(3, 4, 5)}, f_sum_ax2_0, FL},
    {"sum/odd_size1_dims", PD_OP_sum, 1, {OPT_F(1, 7, 1, 3)}, f_sum_ax1_3, FL},
    {"sum/0d", PD_OP_sum, 1, {OPT_F0}, f_sum_all, NUM},
    {"sum/0d_axis", PD_OP_sum, 1, {OPT_F0}, f_sum_axlast, FL},
    {"sum/zero_size_reduced", PD_OP_sum, 1, {OPT_F(0, 3)}, f_sum_ax0, NUM},
    {"sum/zero_size_kept", PD_OP_sum, 1, {OPT_F(0, 3)}, f_sum_axlast, FL},
    {"sum/zero_size_all", PD_OP_sum, 1, {OPT_F(2, 0, 3)}, f_sum_all, FL},
    {"sum/transposed_ax0", PD_OP_sum, 1, {OPT_FT(6, 7)}, f_sum_ax0, FL},
    {"sum/transposed_ax1", PD_OP_sum, 1, {OPT_FT(6, 7)}, f_sum_ax1, NUM},
    {"sum/transposed_3d", PD_OP_sum, 1, {OPT_FT(2, 5, 6)}, f_sum_ax0_2, FL},
    {"sum/strided_last", PD_OP_sum, 1, {OPT_FS(4, 5)}, f_sum_axlast, NUM},
    {"sum/strided_first", PD_OP_sum, 1, {OPT_FS(4, 5)}, f_sum_ax0, FL},
    {"sum/large_all", PD_OP_sum, 1, {OPT_F(3, 70001)}, f_sum_all, NUM, .no_gradcheck = BIGN},
    {"sum/large_last", PD_OP_sum, 1, {OPT_F(3, 70001)}, f_sum_axlast, FL, .no_gradcheck = BIGN},
    {"sum/large_first", PD_OP_sum, 1, {OPT_F(30001, 5)}, f_sum_ax0, FL, .no_gradcheck = BIGN},
    {"sum/large_first_wide", PD_OP_sum, 1, {OPT_F(100, 2500)}, f_sum_ax0, FL, .no_gradcheck = BIGN},
    {"sum/large_many_rows", PD_OP_sum, 1, {OPT_F(5000, 13)}, f_sum_axlast, NUM, .no_gradcheck = BIGN},
    {"sum/large_middle", PD_OP_sum, 1, {OPT_F(7, 3000, 9)}, f_sum_ax1, FL, .no_gradcheck = BIGN},
    {"sum/large_transposed", PD_OP_sum, 1, {OPT_FT(300, 200)}, f_sum_ax0, FL, .no_gradcheck = BIGN},
    /* mean: floats; integer input is cast to f32 by pd_mean */
    {"mean/all", PD_OP_mean, 1, {OPT_F(3, 4, 5)}, f_mean_all, NUM},
    {"mean/axis1", PD_OP_mean, 1, {OPT_F(3, 4, 5)}, f_mean_ax1, FL},
    {"mean/axes_0_neg1_keep", PD_OP_mean, 1, {OPT_F(3, 4, 5)}, f_mean_ax0_neg1_keep, FL},
    {"mean/transposed", PD_OP_mean, 1, {OPT_FT(5, 6)}, f_mean_ax0, FL},
    {"mean/strided", PD_OP_mean, 1, {OPT_FS(3, 7)}, f_mean_axlast, FL},
    {"mean/0d", PD_OP_mean, 1, {OPT_F0}, f_mean_all, FL},
    {"mean/zero_size_nan", PD_OP_mean, 1, {OPT_F(0, 3)}, f_mean_ax0, FL},
    {"mean/large_last", PD_OP_mean, 1, {OPT_F(4, 50001)}, f_mean_axlast, FL, .no_gradcheck = BIGN},
    /* prod: values near 1 keep large products finite */
    {"prod/all", PD_OP_prod, 1, {POS(3, 4, 5)}, f_prod_all, FL},
    {"prod/axis1", PD_OP_prod, 1, {OPT_F(3, 4, 5)}, f_prod_ax1, NUM},
    {"prod/axis0_keep", PD_OP_prod, 1, {OPT_FT(4, 6)}, f_prod_ax0_keep, FL},
    {"prod/strided", PD_OP_prod, 1, {OPT_FS(3, 5)}, f_prod_axlast, FL},
    {"prod/0d", PD_OP_prod, 1, {OPT_F0}, f_prod_all, NUM},
    {"prod/zero_size", PD_OP_prod, 1, {OPT_F(0, 3)}, f_prod_ax0_keep, NUM},
    {"prod/one_zero_per_row", PD_OP_prod, 2, {OPT_F(3, 5), ZERO(3, 5)}, f_prod_zero1, OPT_DT_F},
    {"prod/two_zeros_per_row", PD_OP_prod, 2, {OPT_F(3, 5), ZERO(3, 5)}, f_prod_zero2, OPT_DT_F},
    {"prod/one_zero_all", PD_OP_prod, 2, {OPT_F(2, 3), ZERO(2, 3)}, f_prod_zero1_all, OPT_DT_F},
    {"prod/zeros_axis0", PD_OP_prod, 2, {OPT_F(3, 5), ZERO(3, 5)}, f_prod_zero_ax0, OPT_DT_F},
    {"prod/large", PD_OP_prod, 1, {OPT_FR(0.999, 1.001, 3, 40000)}, f_prod_axlast, FL, .no_gradcheck = BIGN},
    /* amax/amin: distinct values in gradcheck rows; ties forward only */
    {"amax/all", PD_OP_amax, 1, {OPT_F(3, 4, 5)}, f_amax_all, NUM},
    {"amax/axis1", PD_OP_amax, 1, {OPT_F(3, 4, 5)}, f_amax_ax1, NUM},
    {"amax/axes_0_2_keep", PD_OP_amax, 1, {OPT_F(3, 4, 5)}, f_amax_ax0_2_keep, FL},
    {"amax/transposed", PD_OP_amax, 1, {OPT_FT(5, 6)}, f_amax_axlast, FL},
    {"amax/strided", PD_OP_amax, 1, {OPT_FS(5, 6)}, f_amax_axlast, NUM},
    {"amax/0d", PD_OP_amax, 1, {OPT_F0}, f_amax_all, FL},
    {"amax/ties", PD_OP_amax, 1, {OPT_F(4, 9)}, f_amax_ties, FL, .no_gradcheck = 1},
    {"amax/large", PD_OP_amax, 1, {OPT_F(2, 80000)}, f_amax_axlast, FL, .no_gradcheck = BIGN},
    {"amax/large_first", PD_OP_amax, 1, {OPT_F(20000, 3)}, f_amax_ax0, FL, .no_gradcheck = BIGN},
    {"amin/all", PD_OP_amin, 1, {OPT_F(3, 4, 5)}, f_amin_all, NUM},
    {"amin/axis1_keep", PD_OP_amin, 1, {OPT_F(3, 4, 5)}, f_amin_ax1, FL},
    {"amin/axis0", PD_OP_amin, 1, {OPT_FT(4, 5)}, f_amin_ax0, NUM},
    /* max/min along an axis: values (gradcheck) and int64 indices */
    {"max/axis1", PD_OP_max, 1, {OPT_F(3, 4, 5)}, f_max_ax1, NUM},
    {"max/axis0_keep", PD_OP_max, 1, {OPT_F(3, 4, 5)}, f_max_ax0_keep, FL},
    {"max/transposed", PD_OP_max, 1, {OPT_FT(5, 6)}, f_max_axlast, FL},
    {"max/strided", PD_OP_max, 1, {OPT_FS(5, 6)}, f_max_axlast, NUM},
    {"max/0d", PD_OP_max, 1, {OPT_F0}, f_max_0d, FL},
    {"max/indices", PD_OP_max, 1, {OPT_F(3, 4, 5)}, f_max_idx1, NUM, .no_gradcheck = 1},
    {"max/indices_keep", PD_OP_max, 1, {OPT_FT(6, 5)}, f_max_idx0_keep, FL, .no_gradcheck = 1},
    {"max/zero_size_kept", PD_OP_max, 1, {OPT_F(0, 4)}, f_max_axlast, FL},
    {"max/large", PD_OP_max, 1, {OPT_F(3, 30000)}, f_max_axlast, FL, .no_gradcheck = BIGN},
    {"min/axis1", PD_OP_min, 1, {OPT_F(3, 4, 5)}, f_min_ax1, NUM},
    {"min/axis0_keep", PD_OP_min, 1, {OPT_FS(4, 5)}, f_min_ax0_keep, FL},
    {"min/indices", PD_OP_min, 1, {OPT_F(3, 4, 5)}, f_min_idx1, NUM, .no_gradcheck = 1},
    /* argmax/argmin: first index of the best; ties from floor() */
    {"argmax/axis1", PD_OP_argmax, 1, {OPT_F(3, 4, 5)}, f_argmax_ax1, NUM},
    {"argmax/axis0_keep", PD_OP_argmax, 1, {OPT_FT(4, 5)}, f_argmax_ax0_keep, FL},
    {"argmax/all", PD_OP_argmax, 1, {OPT_F(3, 4, 5)}, f_argmax_all, NUM},
    {"argmax/ties", PD_OP_argmax, 1, {OPT_F(6, 7)}, f_argmax_ties, FL},
    {"argmax/strided", PD_OP_argmax, 1, {OPT_FS(4, 6)}, f_argmax_ax1, FL},
    {"argmax/large", PD_OP_argmax, 1, {OPT_F(40000, 3)}, f_argmax_ax0_keep, FL},
    {"argmin/axis_last", PD_OP_argmin, 1, {OPT_F(3, 4, 5)}, f_argmin_ax1, NUM},
    {"argmin/all_keep", PD_OP_argmin, 1, {OPT_FT(4, 5)}, f_argmin_all_keep, FL},
    /* var/std: correction 0, 1 and >= N (inf/NaN like PyTorch) */
    {"var/all", PD_OP_var, 1, {OPT_F(3, 4, 5)}, f_var_all, FL},
    {"var/axis1_c0", PD_OP_var, 1, {OPT_F(3, 4, 5)}, f_var_ax1_c0, FL},
    {"var/axes_0_neg1_keep", PD_OP_var, 1, {OPT_F(3, 4, 5)}, f_var_ax0_neg1_keep, FL},
    {"var/transposed", PD_OP_var, 1, {OPT_FT(5, 6)}, f_var_ax0, FL},
    {"var/int_input", PD_OP_var, 1, {OPT_F(4, 6)}, f_var_ax0, OPT_DT_INT, .no_gradcheck = 1},
    {"var/correction_ge_n", PD_OP_var, 1, {OPT_F(3, 4)}, f_var_c_ge_n, FL, .no_gradcheck = 1},
    {"var/zero_size", PD_OP_var, 1, {OPT_F(0, 3)}, f_var_ax0, FL},
    {"var/large", PD_OP_var, 1, {OPT_FR(100, 102, 200, 300)}, f_var_ax0, FL, .no_gradcheck = BIGN},
    {"std/all", PD_OP_std, 1, {OPT_F(3, 4, 5)}, f_std_all, FL},
    {"std/axis1_keep", PD_OP_std, 1, {OPT_F(3, 4, 5)}, f_std_ax1, FL},
    {"std/axis0_c0_strided", PD_OP_std, 1, {OPT_FS(4, 5)}, f_std_ax0_c0, FL},
    {"std/constant_rows", PD_OP_std, 1, {ZERO(3, 4)}, f_std_const, OPT_DT_F},
    {"std/large_last", PD_OP_std, 1, {OPT_F(3, 40000)}, f_std_ax1, FL, .no_gradcheck = BIGN},
    /* logsumexp: stable for large magnitudes; all -inf gives -inf */
    {"logsumexp/all", PD_OP_logsumexp, 1, {OPT_F(3, 4, 5)}, f_lse_all, FL},
    {"logsumexp/axis1", PD_OP_logsumexp, 1, {OPT_F(3, 4, 5)}, f_lse_ax1, FL},
    {"logsumexp/axes_0_2_keep", PD_OP_logsumexp, 1, {OPT_FT(3, 4, 5)}, f_lse_ax0_2_keep, FL},
    {"logsumexp/large_magnitude", PD_OP_logsumexp, 1, {OPT_FR(500, 1000, 4, 6)}, f_lse_ax1, FL, .tol = 5},
    {"logsumexp/large_negative", PD_OP_logsumexp, 1, {OPT_FR(-1000, -500, 4, 6)}, f_lse_ax0, FL, .tol = 5},
    {"logsumexp/all_neg_inf", PD_OP_logsumexp, 1, {ZERO(3, 4)}, f_lse_neg_inf, FL, .no_gradcheck = 1},
    {"logsumexp/zero_size", PD_OP_logsumexp, 1, {OPT_F(0, 3)}, f_lse_ax0, FL},
    {"logsumexp/large", PD_OP_logsumexp, 1, {OPT_F(3000, 20)}, f_lse_ax0, FL, .no_gradcheck = BIGN},
    /* norm: p = 1, 2, inf (CPU passes); the zero vector has a finite (0) gradient */
    {"norm/p1_all", PD_OP_norm, 1, {OPT_F(3, 4, 5)}, f_norm1_all, FL},
    {"norm/p1_axis1", PD_OP_norm, 1, {OPT_FT(4, 5)}, f_norm1_ax1, FL},
    {"norm/p2_all", PD_OP_norm, 1, {OPT_F(3, 4, 5)}, f_norm2_all, FL},
    {"norm/p2_axis0_keep", PD_OP_norm, 1, {OPT_FS(4, 5)}, f_norm2_ax0_keep, FL},
    {"norm/p2_int_input", PD_OP_norm, 1, {OPT_F(4, 5)}, f_norm2_axlast, OPT_DT_INT, .no_gradcheck = 1},
    {"norm/pinf_all", PD_OP_norm, 1, {OPT_F(3, 4, 5)}, f_norminf_all, FL},
    {"norm/pinf_axis1", PD_OP_norm, 1, {OPT_F(3, 4, 5)}, f_norminf_ax1, FL},
    {"norm/p2_zero_vector", PD_OP_norm, 2, {OPT_F(3, 4), ZERO(3, 4)}, f_norm2_zero_rows, OPT_DT_F},
    {"norm/p2_large", PD_OP_norm, 1, {OPT_F(3, 50000)}, f_norm2_axlast, FL, .no_gradcheck = BIGN},
    /* any other p (the CPU kernel hands these to the reference one) */
    {"norm/p0_axes", PD_OP_norm, 1, {OPT_F(3, 4, 5)}, f_norm0_axes, FL, .no_gradcheck = 1}, /* 0: the fixtures */
    {"norm/p3_axes_keep", PD_OP_norm, 1, {OPT_FT(3, 4, 5)}, f_norm3_axes_keep, FL},
    {"norm/p0.5_axis1", PD_OP_norm, 1, {OPT_FR(0.3, 2, 3, 4)}, f_norm_half_ax1, FL},
    {"norm/p1.5_all", PD_OP_norm, 1, {OPT_FS(4, 5)}, f_norm_1p5_all, FL},
    {"norm/p-1_all", PD_OP_norm, 1, {OPT_FR(0.3, 2, 3, 4)}, f_norm_neg1_all, FL},
    {"norm/p-2.5_axis_last", PD_OP_norm, 1, {OPT_FR(-2, -0.3, 3, 4)}, f_norm_neg2p5_axlast, FL},
    {"norm/p-inf_axis1", PD_OP_norm, 1, {OPT_F(3, 4, 5)}, f_normninf_ax1, FL},
    {"norm/p1.5_zero_vector", PD_OP_norm, 2, {OPT_F(3, 4), ZERO(3, 4)}, f_norm1p5_zero_rows, OPT_DT_F},
    /* all/any: any dtype in, bool out */
    {"all/all", PD_OP_all, 1, {OPT_F(3, 4, 5)}, f_all_all, ALL},
    {"all/axis1", PD_OP_all, 1, {OPT_F(3, 4, 5)}, f_all_ax1, ALL},
    {"all/axis0_keep_bool", PD_OP_all, 1, {OPT_B(5, 3)}, f_all_ax0_keep},
    {"all/zero_size", PD_OP_all, 1, {OPT_F(0, 3)}, f_all_ax0_keep, FL},
    {"any/all", PD_OP_any, 1, {OPT_B(3, 4)}, f_any_all},
    {"any/axis_last", PD_OP_any, 1, {OPT_F(3, 4, 5)}, f_any_ax1, ALL},
    {"any/axes_0_2_strided", PD_OP_any, 1, {OPT_FS(3, 4, 5)}, f_any_ax0_2, NUM},
    {"any/zero_size", PD_OP_any, 1, {OPT_F(2, 0)}, f_any_all, FL},
    /* cumsum/cumprod: each axis, reversed (the VJP direction), integers */
    {"cumsum/axis0", PD_OP_cumsum, 1, {OPT_F(3, 4, 5)}, f_cumsum_ax0, NUM},
    {"cumsum/axis1", PD_OP_cumsum, 1, {OPT_F(3, 4, 5)}, f_cumsum_ax1, FL},
    {"cumsum/axis_last", PD_OP_cumsum, 1, {OPT_F(3, 4, 5)}, f_cumsum_axlast, ALL},
    {"cumsum/reverse0", PD_OP_cumsum, 1, {OPT_F(4, 5)}, f_cumsum_rev0, NUM},
    {"cumsum/reverse1_transposed", PD_OP_cumsum, 1, {OPT_FT(4, 5)}, f_cumsum_rev1, FL},
    {"cumsum/strided", PD_OP_cumsum, 1, {OPT_FS(4, 5)}, f_cumsum_axlast, FL},
    {"cumsum/0d", PD_OP_cumsum, 1, {OPT_F0}, f_cumsum_ax0, NUM},
    {"cumsum/zero_size", PD_OP_cumsum, 1, {OPT_F(0, 3)}, f_cumsum_ax0, FL},
    {"cumsum/large", PD_OP_cumsum, 1, {OPT_F(300, 300)}, f_cumsum_ax0, FL, .no_gradcheck = BIGN},
    {"cumprod/axis0", PD_OP_cumprod, 1, {OPT_F(3, 4, 5)}, f_cumprod_ax0, NUM},
    {"cumprod/axis1", PD_OP_cumprod, 1, {OPT_F(3, 4, 5)}, f_cumprod_ax1, FL},
    {"cumprod/axis_last_transposed", PD_OP_cumprod, 1, {OPT_FT(4, 5)}, f_cumprod_axlast, FL},
    {"cumprod/reverse1", PD_OP_cumprod, 1, {OPT_F(4, 5)}, f_cumprod_rev1, NUM},
    {"cumprod/0d", PD_OP_cumprod, 1, {OPT_F0}, f_cumprod_ax0, FL},
    {"cumprod/one_zero", PD_OP_cumprod, 2, {OPT_F(3, 6), ZERO(3, 6)}, f_cumprod_zero1, OPT_DT_F},
    {"cumprod/two_zeros", PD_OP_cumprod, 2, {OPT_F(3, 6), ZERO(3, 6)}, f_cumprod_zero2, OPT_DT_F},
    {"cumprod/one_zero_reverse", PD_OP_cumprod, 2, {OPT_F(3, 6), ZERO(3, 6)}, f_cumprod_zero1_rev, OPT_DT_F},
    {"cumprod/one_zero_axis0", PD_OP_cumprod, 2, {OPT_F(3, 6), ZERO(3, 6)}, f_cumprod_zero_ax0, OPT_DT_F},
    {"cumprod/large", PD_OP_cumprod, 1, {OPT_FR(0.99, 1.01, 200, 300)}, f_cumprod_ax1, FL, .no_gradcheck = BIGN},
};

int opt_rows_reduce(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
