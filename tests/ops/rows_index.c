/* paddle.c — op test rows: the index family (gather, index_select,
 * scatter, scatter_add, index_add, masks, nonzero, concat, flip, pad,
 * pad_backward, tril/triu, topk, sort, unique) and its composites
 * (take_along_axis, masked_fill, stack, split, chunk, tile,
 * repeat_interleave, roll, argsort).
 *
 * Index inputs are int64 (OPT_IDX); "_i32" rows cast them to int32 in the
 * row function. scatter rows need indices unique along the axis (with
 * repeats the overwritten src entries get no gradient, which the VJP, like
 * PyTorch's, does not model): they are the first rows of an argsort of a
 * random f64 input (OPT_PERM). scatter_add/index_add rows repeat indices on
 * purpose. Integer outputs (indices, nonzero, unique) are compared exactly
 * and have no gradcheck.
 */
#include "ops/harness.h"

#define ALLDT (OPT_DT_ALLNUM | 1u << PD_BOOL)
#define FLOWINT (OPT_DT_FLOW | OPT_DT_INT)
/* random f64 values whose argsort gives a permutation per column */
/* values in [lo, hi) stored transposed (integer dtypes floor them: zeros and repeats) */
#define OPT_FRT(lo_, hi_, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = lo_, .hi = hi_, .layout = OPT_TRANSPOSED}
#define OPT_PERM(...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FIXED, .lo = 0, .hi = 1, .dtype = PD_F64, .no_grad = 1}

static struct pd_tensor *i32(struct pd_tensor *t) { return pd_cast(t, PD_I32); }

/* indices 0..n-1 in random order along axis, first m kept: unique per column */
static struct pd_tensor *uniq_index(struct pd_tensor *perm, int axis, int64_t m)
{
    return pd_slice(pd_argsort(perm, axis, 0), axis, 0, m, 1);
}

/* ---- gather / index_select / take_along_axis ------------------------- */
static struct pd_tensor *f_gather_1(struct pd_tensor **in) { return pd_gather(in[0], 1, in[1]); }
static struct pd_tensor *f_gather_m2_i32(struct pd_tensor **in) { return pd_gather(in[0], -2, i32(in[1])); }
static struct pd_tensor *f_gather_m1(struct pd_tensor **in) { return pd_gather(in[0], -1, in[1]); }
static struct pd_tensor *f_isel_0(struct pd_tensor **in) { return pd_index_select(in[0], 0, in[1]); }
static struct pd_tensor *f_isel_1(struct pd_tensor **in) { return pd_index_select(in[0], 1, in[1]); }
static struct pd_tensor *f_isel_m1_i32(struct pd_tensor **in) { return pd_index_select(in[0], -1, i32(in[1])); }
static struct pd_tensor *f_take_2(struct pd_tensor **in) { return pd_take_along_axis(in[0], 2, in[1]); }
static struct pd_tensor *f_take_0_i32(struct pd_tensor **in) { return pd_take_along_axis(in[0], 0, i32(in[1])); }

/* ---- scatter family -------------------------------------------------- */
static struct pd_tensor *f_scatter_0(struct pd_tensor **in) { return pd_scatter(in[0], 0, uniq_index(in[2], 0, 3), in[1]); }
static struct pd_tensor *f_scatter_1_i32(struct pd_tensor **in)
{
    return pd_scatter(in[0], 1, i32(uniq_index(in[2], 1, 2)), in[1]);
}
static struct pd_tensor *f_scatter_3d(struct pd_tensor **in) { return pd_scatter(in[0], -2, uniq_index(in[2], 1, 2), in[1]); }
static struct pd_tensor *f_sadd_0(struct pd_tensor **in) { return pd_scatter_add(in[0], 0, in[1], in[2]); }
static struct pd_tensor *f_sadd_m1_i32(struct pd_tensor **in) { return pd_scatter_add(in[0], -1, i32(in[1]), in[2]); }
static struct pd_tensor *f_sadd_1(struct pd_tensor **in) { return pd_scatter_add(in[0], 1, in[1], in[2]); }
static struct pd_tensor *f_iadd_0(struct pd_tensor **in) { return pd_index_add(in[0], 0, in[1], in[2]); }
static struct pd_tensor *f_iadd_m1_i32(struct pd_tensor **in) { return pd_index_add(in[0], -1, i32(in[1]), in[2]); }

/* ---- masks, nonzero -------------------------------------------------- */
static struct pd_tensor *f_mselect(struct pd_tensor **in) { return pd_masked_select(in[0], in[1]); }
static struct pd_tensor *f_mscatter(struct pd_tensor **in) { return pdi_calln(PD_OP_masked_scatter, in, 3, NULL); }
static struct pd_tensor *f_mfill(struct pd_tensor **in) { return pd_masked_fill(in[0], in[1], 1.5); }
static struct pd_tensor *f_nonzero(struct pd_tensor **in) { return pd_nonzero(in[0]); }

/* ---- concat and composites ------------------------------------------- */
static struct pd_tensor *f_concat_1(struct pd_tensor **in) { return pd_concat(in, 3, 1); }
static struct pd_tensor *f_concat_m2(struct pd_tensor **in) { return pd_concat(in, 3, -2); }
static struct pd_tensor *f_concat_last(struct pd_tensor **in) { return pd_concat(in, 2, -1); }
static struct pd_tensor *f_stack_1(struct pd_tensor **in) { return pd_stack(in, 2, 1); }
static struct pd_tensor *f_stack_last(struct pd_tensor **in) { return pd_stack(in, 3, -1); }
static struct pd_tensor *f_split(struct pd_tensor **in)
{
    struct pd_tensor *p[3];
    if (pd_split(in[0], (const int64_t[]){2, -1, 1}, 3, 1, p) != 3) return NULL;
    struct pd_tensor *r[3] = {p[2], p[0], p[1]};
    return pd_concat(r, 3, 1);
}
static struct pd_tensor *f_chunk(struct pd_tensor **in)
{
    struct pd_tensor *p[3];
    if (pd_chunk(in[0], 3, 0, p) != 3) return NULL;
    struct pd_tensor *r[3] = {p[2], p[1], p[0]};
    return pd_concat(r, 3, 0);
}
static struct pd_tensor *f_tile_prepend(struct pd_tensor **in) { return pd_tile(in[0], (const int64_t[]){2, 1, 3}, 3); }
static struct pd_tensor *f_tile_short(struct pd_tensor **in) { return pd_tile(in[0], (const int64_t[]){2}, 1); }
static struct pd_tensor *f_rep_0(struct pd_tensor **in) { return pd_repeat_interleave(in[0], 2, 0); }
static struct pd_tensor *f_rep_last(struct pd_tensor **in) { return pd_repeat_interleave(in[0], 3, -1); }
static struct pd_tensor *f_rep_flat(struct pd_tensor **in) { return pd_repeat_interleave(in[0], 2, PD_ALL_AXES); }
static struct pd_tensor *f_roll_1(struct pd_tensor **in) { return pd_roll(in[0], 2, 1); }
static struct pd_tensor *f_roll_neg(struct pd_tensor **in) { return pd_roll(in[0], -7, 0); }
static struct pd_tensor *f_roll_flat(struct pd_tensor **in) { return pd_roll(in[0], 4, PD_ALL_AXES); }

/* ---- flip, pad, tril/triu -------------------------------------------- */
static struct pd_tensor *f_flip_02(struct pd_tensor **in) { return pd_flip(in[0], (const int[]){0, 2}, 2); }
static struct pd_tensor *f_flip_last(struct pd_tensor **in) { return pd_flip(in[0], (const int[]){-1}, 1); }
static struct pd_tensor *f_flip_all(struct pd_tensor **in) { return pd_flip(in[0], (const int[]){1, 0}, 2); }
static struct pd_tensor *f_pad_const(struct pd_tensor **in)
{
    return pd_pad(in[0], (const int64_t[]){1, 2, 0, 1}, 4, PD_PAD_CONSTANT, 0.5);
}
static struct pd_tensor *f_pad_crop(struct pd_tensor **in)
{
    return pd_pad(in[0], (const int64_t[]){-1, 2, 1, -2}, 4, PD_PAD_CONSTANT, -1);
}
static struct pd_tensor *f_pad_reflect(struct pd_tensor **in)
{
    return pd_pad(in[0], (const int64_t[]){2, 1, 1, 2}, 4, PD_PAD_REFLECT, 0);
}
static struct pd_tensor *f_pad_replicate(struct pd_tensor **in)
{
    return pd_pad(in[0], (const int64_t[]){3, 0, 1, 1}, 4, PD_PAD_REPLICATE, 0);
}
static struct pd_tensor *f_pad_reflect1(struct pd_tensor **in)
{
    return pd_pad(in[0], (const int64_t[]){4, 3}, 2, PD_PAD_REFLECT, 0);
}
static struct pd_tensor *f_pad_zero(struct pd_tensor **in)
{
    return pd_pad(in[0], (const int64_t[]){1, 1}, 2, PD_PAD_CONSTANT, 2);
}
/* gradients of pads of a [3, 5] (reflect) and a [4, 2] (replicate) input */
static struct pd_tensor *f_padbw_reflect(struct pd_tensor **in)
{
    struct pdi_attrs a = {.pad_backward = {.pads = {4, {2, 1, 1, 1}}, .mode = PD_PAD_REFLECT,
                                           .input_shape = {2, {3, 5}}}};
    return pdi_call1(PD_OP_pad_backward, in[0], &a);
}
static struct pd_tensor *f_padbw_replicate(struct pd_tensor **in)
{
    struct pdi_attrs a = {.pad_backward = {.pads = {4, {3, 0, 1, 1}}, .mode = PD_PAD_REPLICATE,
                                           .input_shape = {2, {4, 2}}}};
    return pdi_call1(PD_OP_pad_backward, in[0], &a);
}
static struct pd_tensor *f_tril_0(struct pd_tensor **in) { return pd_tril(in[0], 0); }
static struct pd_tensor *f_tril_m1(struct pd_tensor **in) { return pd_tril(in[0], -1); }
static struct pd_tensor *f_triu_1(struct pd_tensor **in) { return pd_triu(in[0], 1); }
static struct pd_tensor *f_triu_0(struct pd_tensor **in) { return pd_triu(in[0], 0); }

/* ---- topk, sort, unique ---------------------------------------------- */
static struct pd_tensor *f_topk_3(struct pd_tensor **in) { return pd_topk(in[0], 3, -1, 1, NULL); }
static struct pd_tensor *f_topk_small(struct pd_tensor **in) { return pd_topk(in[0], 2, 0, 0, NULL); }
static struct pd_tensor *f_topk_idx(struct pd_tensor **in)
{
    struct pd_tensor *i = NULL;
    return pd_topk(in[0], 4, 1, 1, &i) ? i : NULL;
}
static struct pd_tensor *f_topk_0(struct pd_tensor **in) { return pd_topk(in[0], 0, 1, 1, NULL); }
static struct pd_tensor *f_topk_select(struct pd_tensor **in) { return pd_topk(in[0], 2, 1, 1, NULL); }
static struct pd_tensor *f_sort_asc(struct pd_tensor **in) { return pd_sort(in[0], -1, 0, NULL); }
static struct pd_tensor *f_sort_desc0(struct pd_tensor **in) { return pd_sort(in[0], 0, 1, NULL); }
static struct pd_tensor *f_sort_idx(struct pd_tensor **in)
{
    struct pd_tensor *i = NULL;
    return pd_sort(in[0], 1, 0, &i) ? i : NULL;
}
static struct pd_tensor *f_argsort(struct pd_tensor **in) { return pd_argsort(in[0], 0, 1); }
static struct pd_tensor *f_unique_values(struct pd_tensor **in) { return pd_unique(in[0], NULL, NULL); }
static struct pd_tensor *f_unique_inverse(struct pd_tensor **in)
{
    struct pd_tensor *inv = NULL;
    return pd_unique(in[0], &inv, NULL) ? inv : NULL;
}
static struct pd_tensor *f_unique_counts(struct pd_tensor **in)
{
    struct pd_tensor *c = NULL;
    return pd_unique(in[0], NULL, &c) ? c : NULL;
}

static const struct opt_row rows[] = {
    /* gather */
    {"gather/axis1", PD_OP_gather, 2, {OPT_F(3, 5), OPT_IDX(0, 5, 3, 4)}, f_gather_1, ALLDT},
    {"gather/axis-2_i32", PD_OP_gather, 2, {OPT_F(4, 3), OPT_IDX(0, 4, 6, 2)}, f_gather_m2_i32, OPT_DT_FLOW},
    {"gather/T_last", PD_OP_gather, 2, {OPT_FT(4, 5), OPT_IDX(0, 5, 4, 7)}, f_gather_m1, OPT_DT_F},
    {"gather/3d_strided", PD_OP_gather, 2, {OPT_FS(2, 3, 4), OPT_IDX(0, 3, 2, 5, 4)}, f_gather_1, OPT_DT_FLOW},
    {"gather/zero_size", PD_OP_gather, 2, {OPT_F(3, 0), OPT_IDX(0, 1, 3, 0)}, f_gather_1, OPT_DT_F},
    /* index_select (axis 0 of a contiguous matrix: row memcpys for 4+ byte dtypes) */
    {"index_select/axis0_rows", PD_OP_index_select, 2, {OPT_F(5, 8), OPT_IDX(0, 5, 7)}, f_isel_0, ALLDT},
    {"index_select/axis-1_T_i32", PD_OP_index_select, 2, {OPT_FT(4, 5), OPT_IDX(0, 5, 3)}, f_isel_m1_i32, OPT_DT_FLOW},
    {"index_select/3d_strided", PD_OP_index_select, 2, {OPT_FS(2, 4, 3), OPT_IDX(0, 4, 5)}, f_isel_1, OPT_DT_F},
    {"index_select/empty_index", PD_OP_index_select, 2, {OPT_F(3, 4), OPT_IDX(0, 4, 0)}, f_isel_1, OPT_DT_F},
    {"take_along_axis/broadcast", PD_OP_COUNT, 2, {OPT_F(3, 1, 4), OPT_IDX(0, 4, 1, 5, 2)}, f_take_2, OPT_DT_FLOW},
    {"take_along_axis/axis0_i32", PD_OP_COUNT, 2, {OPT_FT(4, 3), OPT_IDX(0, 4, 2, 1)}, f_take_0_i32, OPT_DT_F},
    /* scatter: unique indices along the axis */
    {"scatter/axis0", PD_OP_scatter, 3, {OPT_F(5, 4), OPT_F(3, 4), OPT_PERM(5, 4)}, f_scatter_0, ALLDT},
    {"scatter/axis1_big_src_i32", PD_OP_scatter, 3, {OPT_FT(3, 6), OPT_F(4, 5), OPT_PERM(3, 6)}, f_scatter_1_i32,
     OPT_DT_FLOW},
    {"scatter/3d_strided", PD_OP_scatter, 3, {OPT_FS(2, 4, 3), OPT_F(2, 2, 3), OPT_PERM(2, 4, 3)}, f_scatter_3d, OPT_DT_F},
    /* scatter_add / index_add: repeated indices */
    {"scatter_add/repeated", PD_OP_scatter_add, 3, {OPT_F(4, 3), OPT_IDX(0, 4, 6, 3), OPT_F(6, 3)}, f_sadd_0,
     OPT_DT_ALLNUM},
    {"scatter_add/axis-1_strided_i32", PD_OP_scatter_add, 3, {OPT_FS(3, 5), OPT_IDX(0, 5, 3, 7), OPT_F(3, 7)},
     f_sadd_m1_i32, OPT_DT_FLOW},
    {"scatter_add/3d_big_src_T", PD_OP_scatter_add, 3, {OPT_F(2, 4, 3), OPT_IDX(0, 4, 2, 2, 3), OPT_FT(2, 3, 3)},
     f_sadd_1, OPT_DT_F},
    {"index_add/axis0_repeated", PD_OP_index_add, 3, {OPT_F(4, 3), OPT_IDX(0, 4, 6), OPT_F(6, 3)}, f_iadd_0,
     OPT_DT_ALLNUM},
    {"index_add/axis-1_T_i32", PD_OP_index_add, 3, {OPT_FT(3, 5), OPT_IDX(0, 5, 4), OPT_F(3, 4)}, f_iadd_m1_i32,
     OPT_DT_FLOW},
    {"index_add/empty", PD_OP_index_add, 3, {OPT_F(3, 2), OPT_IDX(0, 3, 0), OPT_F(0, 2)}, f_iadd_0, OPT_DT_F},
    /* masks */
    {"masked_select/same_shape", PD_OP_masked_select, 2, {OPT_F(3, 5), OPT_B(3, 5)}, f_mselect, ALLDT},
    {"masked_select/bcast_mask_T", PD_OP_masked_select, 2, {OPT_FT(4, 3), OPT_B(3)}, f_mselect, OPT_DT_FLOW},
    {"masked_select/mutual_bcast", PD_OP_masked_select, 2, {OPT_F(3, 1), OPT_B(3, 4)}, f_mselect, OPT_DT_F},
    {"masked_scatter/basic", PD_OP_masked_scatter, 3, {OPT_F(3, 4), OPT_B(3, 4), OPT_F(12)}, f_mscatter, ALLDT},
    {"masked_scatter/bcast_strided", PD_OP_masked_scatter, 3, {OPT_FS(2, 5), OPT_B(5), OPT_FT(3, 4)}, f_mscatter,
     OPT_DT_FLOW},
    {"masked_fill/bcast", PD_OP_COUNT, 2, {OPT_F(3, 4), OPT_B(4)}, f_mfill, OPT_DT_FLOW},
    {"nonzero/2d", PD_OP_nonzero, 1, {OPT_FR(-1, 2, 3, 4)}, f_nonzero, OPT_DT_ALLNUM, .no_gradcheck = 1},
    {"nonzero/3d_T", PD_OP_nonzero, 1, {OPT_FRT(-1, 2, 2, 3, 4)}, f_nonzero, OPT_DT_INT, .no_gradcheck = 1},
    {"nonzero/bool", PD_OP_nonzero, 1, {OPT_B(5, 3)}, f_nonzero, OPT_DT_F, .no_gradcheck = 1},
    {"nonzero/zero_size", PD_OP_nonzero, 1, {OPT_F(0, 3)}, f_nonzero, OPT_DT_F, .no_gradcheck = 1},
    /* concat and its composites */
    {"concat/axis1", PD_OP_concat, 3, {OPT_F(2, 3), OPT_FT(2, 4), OPT_F(2, 1)}, f_concat_1, ALLDT},
    {"concat/axis-2_strided_empty", PD_OP_concat, 3, {OPT_FS(2, 3), OPT_F(1, 3), OPT_F(0, 3)}, f_concat_m2, OPT_DT_FLOW},
    {"concat/3d_last", PD_OP_concat, 2, {OPT_F(2, 2, 3), OPT_FS(2, 2, 2)}, f_concat_last, OPT_DT_F},
    {"stack/axis1", PD_OP_COUNT, 2, {OPT_F(3, 4), OPT_FT(3, 4)}, f_stack_1, OPT_DT_FLOW},
    {"stack/last", PD_OP_COUNT, 3, {OPT_F(2, 3), OPT_F(2, 3), OPT_FS(2, 3)}, f_stack_last, OPT_DT_F},
    {"split/views", PD_OP_COUNT, 1, {OPT_F(4, 7)}, f_split, OPT_DT_F},
    {"chunk/uneven_T", PD_OP_COUNT, 1, {OPT_FT(7, 3)}, f_chunk, OPT_DT_F},
    {"tile/prepend", PD_OP_COUNT, 1, {OPT_F(2, 3)}, f_tile_prepend, OPT_DT_FLOW},
    {"tile/short_reps_T", PD_OP_COUNT, 1, {OPT_FT(3, 2)}, f_tile_short, OPT_DT_F},
    {"repeat_interleave/axis0", PD_OP_COUNT, 1, {OPT_F(3, 2)}, f_rep_0, OPT_DT_FLOW},
    {"repeat_interleave/last_T", PD_OP_COUNT, 1, {OPT_FT(2, 3)}, f_rep_last, OPT_DT_F},
    {"repeat_interleave/flat", PD_OP_COUNT, 1, {OPT_F(2, 2)}, f_rep_flat, OPT_DT_F},
    {"roll/axis1", PD_OP_COUNT, 1, {OPT_F(3, 5)}, f_roll_1, OPT_DT_FLOW},
    {"roll/neg_wrap_T", PD_OP_COUNT, 1, {OPT_FT(4, 3)}, f_roll_neg, OPT_DT_F},
    {"roll/flat", PD_OP_COUNT, 1, {OPT_F(2, 3)}, f_roll_flat, OPT_DT_F},
    /* flip */
    {"flip/axes02", PD_OP_flip, 1, {OPT_F(2, 3, 4)}, f_flip_02, ALLDT},
    {"flip/last_T", PD_OP_flip, 1, {OPT_FT(4, 5)}, f_flip_last, OPT_DT_FLOW},
    {"flip/all_strided", PD_OP_flip, 1, {OPT_FS(3, 4)}, f_flip_all, OPT_DT_F},
    /* pad */
    {"pad/constant_2d", PD_OP_pad, 1, {OPT_F(3, 4)}, f_pad_const, OPT_DT_ALLNUM},
    {"pad/constant_crop_T", PD_OP_pad, 1, {OPT_FT(4, 5)}, f_pad_crop, OPT_DT_F},
    {"pad/reflect_3d", PD_OP_pad, 1, {OPT_F(2, 3, 4)}, f_pad_reflect, OPT_DT_FLOW | OPT_DT_INT},
    {"pad/replicate_strided", PD_OP_pad, 1, {OPT_FS(3, 4)}, f_pad_replicate, OPT_DT_FLOW},
    {"pad/reflect_1d_strided", PD_OP_pad, 1, {OPT_FS(5)}, f_pad_reflect1, OPT_DT_F},
    {"pad/zero_size", PD_OP_pad, 1, {OPT_F(0, 3)}, f_pad_zero, OPT_DT_F},
    {"pad_backward/reflect", PD_OP_pad_backward, 1, {OPT_F(5, 8)}, f_padbw_reflect, OPT_DT_FLOW},
    {"pad_backward/replicate_T", PD_OP_pad_backward, 1, {OPT_FT(6, 5)}, f_padbw_replicate, OPT_DT_FLOW},
    /* tril / triu */
    {"tril/0", PD_OP_tril, 1, {OPT_F(4, 5)}, f_tril_0, ALLDT},
    {"tril/-1_batch_T", PD_OP_tril, 1, {OPT_FT(2, 5, 4)}, f_tril_m1, OPT_DT_FLOW},
    {"triu/1_strided", PD_OP_triu, 1, {OPT_FS(2, 4, 3)}, f_triu_1, OPT_DT_FLOW},
    {"triu/0", PD_OP_triu, 1, {OPT_F(5, 3)}, f_triu_0, ALLDT},
    /* topk / sort: random f64 inputs are distinct, so gradcheck is smooth */
    {"topk/largest_last", PD_OP_topk, 1, {OPT_F(4, 7)}, f_topk_3, FLOWINT},
    {"topk/smallest_axis0_T", PD_OP_topk, 1, {OPT_FT(6, 3)}, f_topk_small, OPT_DT_F},
    {"topk/indices", PD_OP_topk, 1, {OPT_FR(-3, 3, 5, 9)}, f_topk_idx, OPT_DT_ALLNUM, .no_gradcheck = 1},
    {"topk/k0", PD_OP_topk, 1, {OPT_F(3, 4)}, f_topk_0, OPT_DT_F},
    {"topk/quickselect", PD_OP_topk, 1, {OPT_F(3, 40)}, f_topk_select, FLOWINT},
    {"sort/asc_last", PD_OP_sort, 1, {OPT_F(4, 6)}, f_sort_asc, FLOWINT},
    {"sort/desc_axis0_strided", PD_OP_sort, 1, {OPT_FS(5, 3)}, f_sort_desc0, OPT_DT_FLOW},
    {"sort/indices_ties", PD_OP_sort, 1, {OPT_FR(-3, 3, 4, 9)}, f_sort_idx, ALLDT, .no_gradcheck = 1},
    {"argsort/desc_T", PD_OP_COUNT, 1, {OPT_FT(5, 4)}, f_argsort, OPT_DT_ALLNUM, .no_gradcheck = 1},
    /* unique (integer dtypes and bf16 give repeats) */
    {"unique/values", PD_OP_unique, 1, {OPT_FR(-3, 3, 4, 5)}, f_unique_values, ALLDT, .no_gradcheck = 1},
    {"unique/inverse_T", PD_OP_unique, 1, {OPT_FRT(-2, 2, 3, 4)}, f_unique_inverse, OPT_DT_ALLNUM, .no_gradcheck = 1},
    {"unique/counts_strided", PD_OP_unique, 1, {OPT_FS(9)}, f_unique_counts, OPT_DT_ALLNUM, .no_gradcheck = 1},
    {"unique/zero_size", PD_OP_unique, 1, {OPT_F(0, 2)}, f_unique_values, OPT_DT_F, .no_gradcheck = 1},
};

int opt_rows_index(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
