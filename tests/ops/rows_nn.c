/* paddle.c — op test rows: the nn family (softmax, log_softmax, nll_loss,
 * nll_loss_backward, layer_norm, rms_norm, norm_backward, embedding,
 * one_hot) and the composite functions built on them (cross_entropy, mse_loss, dropout: op PD_OP_COUNT).
 *
 * Softmax over axis 0/1/-1, 0-d, length-1 rows, zero-size batches,
 * transposed and strided inputs; large rows (forward only) reach the
 * blocked sums, the column path and the parallel paths of the CPU kernels.
 * Cross-entropy with class indices and probabilities, ignore_index (both a
 * negative sentinel and a real class), label smoothing and each reduction,
 * on [N, C] and [N, C, d1, d2] logits. Norms with and without weight/bias,
 * over 1 and 2 trailing axes and over all axes. Embedding with repeated ids
 * of several integer dtypes.
 */
#include "ops/harness.h"

#define RF(name, expr) \
    static struct pd_tensor *f_##name(struct pd_tensor **in) { return expr; }

#define FL OPT_DT_FLOW
#define NUM OPT_DT_ALLNUM
#define BIG 1
#define ONE (1u << PD_F32) /* the dtype of float inputs does not matter */
/* integer ids of a fixed dtype, values in [lo, hi) */
#define IDS(dt, lo_, hi_, ...) \
    {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FIXED, .lo = lo_, .hi = hi_, .dtype = dt, .no_grad = 1}
/* class weights [C] in [0.2, 2): constants, never differentiated */
#define WGT(c) {OPT_SHAPE(c), .kind = OPT_FLOAT, .lo = 0.2, .hi = 2, .no_grad = 1}
#define WGT_S(c) {OPT_SHAPE(c), .kind = OPT_FLOAT, .lo = 0.2, .hi = 2, .layout = OPT_STRIDED, .no_grad = 1}
/* logp for nll_loss_backward: read for its shape, never differentiated */
#define LP(...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = -2, .hi = 2, .no_grad = 1}
#define LP_S(...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = -2, .hi = 2, .layout = OPT_STRIDED, .no_grad = 1}
/* a 0-d int64 class index */
#define IDX0(lo_, hi_) {.ndim = 0, .kind = OPT_INDEX, .lo = lo_, .hi = hi_, .no_grad = 1}

enum { NONE = PD_REDUCTION_NONE, MEAN = PD_REDUCTION_MEAN, SUM = PD_REDUCTION_SUM };

/* softmax / log_softmax */
RF(sm_last, pd_softmax(in[0], -1))
RF(sm_ax0, pd_softmax(in[0], 0))
RF(sm_ax1, pd_softmax(in[0], 1))
RF(lsm_last, pd_log_softmax(in[0], -1))
RF(lsm_ax0, pd_log_softmax(in[0], 0))
RF(lsm_ax1, pd_log_softmax(in[0], 1))

/* nll_loss */
RF(nll_none, pd_nll_loss(in[0], in[1], -100, PD_REDUCTION_NONE))
RF(nll_mean, pd_nll_loss(in[0], in[1], -100, PD_REDUCTION_MEAN))
RF(nll_sum, pd_nll_loss(in[0], in[1], -100, PD_REDUCTION_SUM))
RF(nll_ign_mean, pd_nll_loss(in[0], in[1], -1, PD_REDUCTION_MEAN))
RF(nll_ign_none, pd_nll_loss(in[0], in[1], -1, PD_REDUCTION_NONE))
RF(nll_ign2_sum, pd_nll_loss(in[0], in[1], 2, PD_REDUCTION_SUM))
/* every target ignored: mean is NaN (0/0), the gradient is 0 */
RF(nll_all_ign_sum, pd_nll_loss(in[0], in[1], 0, PD_REDUCTION_SUM))

/* nll_loss_backward called directly: logp (meta only), target, w */
static struct pd_tensor *nll_bwd(struct pd_tensor **in, int64_t ignore)
{
    struct pdi_attrs a = {.nll_loss_backward = {.ignore_index = ignore}};
    return pdi_calln(PD_OP_nll_loss_backward, in, 3, &a);
}
RF(nllb, nll_bwd(in, -100))
RF(nllb_ign, nll_bwd(in, -1))
RF(nllb_ign2, nll_bwd(in, 2))

/* nll_loss with class weights in[2] */
RF(nllw_none, pd_nll_loss_weighted(in[0], in[1], in[2], -100, PD_REDUCE_NONE))
RF(nllw_ign_mean, pd_nll_loss_weighted(in[0], in[1], in[2], -1, PD_REDUCE_MEAN))
RF(nllw_sum, pd_nll_loss_weighted(in[0], in[1], in[2], 2, PD_REDUCE_SUM))

/* cross_entropy */
RF(ce_mean, pd_cross_entropy(in[0], in[1], -100, 0, PD_REDUCTION_MEAN))
RF(ce_sum, pd_cross_entropy(in[0], in[1], -100, 0, PD_REDUCTION_SUM))
RF(ce_none, pd_cross_entropy(in[0], in[1], -100, 0, PD_REDUCTION_NONE))
RF(ce_ign_mean, pd_cross_entropy(in[0], in[1], -1, 0, PD_REDUCTION_MEAN))
RF(ce_ign2_none, pd_cross_entropy(in[0], in[1], 2, 0, PD_REDUCTION_NONE))
RF(ce_ls_mean, pd_cross_entropy(in[0], in[1], -1, 0.1, PD_REDUCTION_MEAN))
RF(ce_ls_sum, pd_cross_entropy(in[0], in[1], -1, 0.2, PD_REDUCTION_SUM))
RF(ce_ls_none, pd_cross_entropy(in[0], in[1], -1, 0.15, PD_REDUCTION_NONE))
RF(ce_p_mean, pd_cross_entropy(in[0], in[1], -100, 0, PD_REDUCTION_MEAN))
RF(ce_p_sum, pd_cross_entropy(in[0], in[1], -100, 0, PD_REDUCTION_SUM))
RF(ce_p_none, pd_cross_entropy(in[0], in[1], -100, 0, PD_REDUCTION_NONE))
RF(ce_p_ls_mean, pd_cross_entropy(in[0], in[1], -100, 0.1, PD_REDUCTION_MEAN))

/* cross_entropy with class weights in[2] */
RF(cew_mean, pd_cross_entropy_weighted(in[0], in[1], in[2], -100, 0, PD_REDUCE_MEAN))
RF(cew_ls_ign_mean, pd_cross_entropy_weighted(in[0], in[1], in[2], -1, 0.1, PD_REDUCE_MEAN))
RF(cew_ls_ign_sum, pd_cross_entropy_weighted(in[0], in[1], in[2], -1, 0.2, PD_REDUCE_SUM))
RF(cew_ls_none, pd_cross_entropy_weighted(in[0], in[1], in[2], 1, 0.15, PD_REDUCE_NONE))
RF(cew_p_ls_mean, pd_cross_entropy_weighted(in[0], in[1], in[2], -100, 0.1, PD_REDUCE_MEAN))
RF(cew_p_none, pd_cross_entropy_weighted(in[0], in[1], in[2], -100, 0, PD_REDUCE_NONE))

/* mse_loss */
RF(mse_mean, pd_mse_loss(in[0], in[1], PD_REDUCTION_MEAN))
RF(mse_sum, pd_mse_loss(in[0], in[1], PD_REDUCTION_SUM))
RF(mse_none, pd_mse_loss(in[0], in[1], PD_REDUCTION_NONE))

/* layer_norm / rms_norm (eps 1e-5) */
RF(ln1, pd_layer_norm(in[0], 1, NULL, NULL, 1e-5))
RF(ln1_wb, pd_layer_norm(in[0], 1, in[1], in[2], 1e-5))
RF(ln1_w, pd_layer_norm(in[0], 1, in[1], NULL, 1e-5))
RF(ln1_b, pd_layer_norm(in[0], 1, NULL, in[1], 1e-5))
RF(ln2_wb, pd_layer_norm(in[0], 2, in[1], in[2], 1e-5))
RF(ln2, pd_layer_norm(in[0], 2, NULL, NULL, 1e-5))
RF(ln2_w, pd_layer_norm(in[0], 2, in[1], NULL, 0.1))
RF(rms1, pd_rms_norm(in[0], 1, NULL, 1e-5))
RF(rms1_w, pd_rms_norm(in[0], 1, in[1], 1e-6))
RF(rms2_w, pd_rms_norm(in[0], 2, in[1], 1e-5))
RF(rms2, pd_rms_norm(in[0], 2, NULL, 1e-5))

/* group_norm */
RF(gn3_wb, pd_group_norm(in[0], 3, in[1], in[2], 1e-5))
RF(gn1_wb, pd_group_norm(in[0], 1, in[1], in[2], 1e-5))
RF(gn2, pd_group_norm(in[0], 2, NULL, NULL, 1e-5))
RF(gn2_w, pd_group_norm(in[0], 2, in[1], NULL, 0.1))
RF(gn2_b, pd_group_norm(in[0], 2, NULL, in[1], 1e-5))
RF(gn4_wb, pd_group_norm(in[0], 4, in[1], in[2], 1e-5))
RF(gn8_wb, pd_group_norm(in[0], 8, in[1], in[2], 1e-5))

/* norm_backward called directly: x, g, [w]; returns dx, [dw], [db]
 * flattened and concatenated (the norms' rows above reach it through their
 * gradcheck, which runs the fused first-order backward) */
static struct pd_tensor *norm_bwd(struct pd_tensor **in, int k, int centre, int has_w, int has_b, double eps)
{
    struct pd_tensor *out[3], *flat[3];
    struct pdi_call c = {.op = PD_OP_norm_backward, .n_in = 2 + has_w, .n_out = 1 + has_w + has_b, .in = in,
                         .out = out};
    c.a.norm_backward =
        (struct pdi_attrs_norm_backward){.n_norm_axes = k, .eps = eps, .has_w = has_w, .has_b = has_b, .centre = centre};
    if (pdi_dispatch(&c)) return NULL;
    for (int i = 0; i < c.n_out; i++) flat[i] = pd_flatten(out[i], 0, -1);
    return pd_concat(flat, c.n_out, 0);
}
RF(nb_rms, norm_bwd(in, 1, 0, 0, 0, 1e-5))
RF(nb_rms_w, norm_bwd(in, 1, 0, 1, 0, 1e-6))
RF(nb_rms2_w, norm_bwd(in, 2, 0, 1, 0, 1e-5))
RF(nb_ln, norm_bwd(in, 1, 1, 0, 0, 1e-5))
RF(nb_ln_wb, norm_bwd(in, 1, 1, 1, 1, 1e-5))
RF(nb_ln_b, norm_bwd(in, 1, 1, 0, 1, 1e-5))
RF(nb_ln2_wb, norm_bwd(in, 2, 1, 1, 1, 0.1))

/* embedding / one_hot */
RF(emb, pd_embedding(in[0], in[1]))
RF(oh5, pd_one_hot(in[0], 5))
RF(oh_infer, pd_one_hot(in[0], -1))
RF(oh7, pd_one_hot(in[0], 7))

/* dropout: a fresh generator with a fixed seed per call, so every run of
 * the row (cpu, ref, each finite difference) draws the same mask */
static struct pd_tensor *dropout_seeded(struct pd_tensor *x, double p, int training)
{
    struct pd_generator *g = pd_generator_create(1234);
    struct pd_tensor *y = pd_dropout(x, p, training, g);
    pd_generator_destroy(g);
    return y;
}
RF(drop_train, dropout_seeded(in[0], 0.3, 1))
RF(drop_train_p0, dropout_seeded(in[0], 0.0, 1))
RF(drop_eval, dropout_seeded(in[0], 0.5, 0))
RF(drop_p1, dropout_seeded(in[0], 1.0, 1))

static const struct opt_row rows[] = {
    /* softmax */
    {"softmax/last", PD_OP_softmax, 1, {OPT_F(3, 7)}, f_sm_last, FL},
    {"softmax/axis0", PD_OP_softmax, 1, {OPT_F(4, 5)}, f_sm_ax0, FL},
    {"softmax/axis1_3d", PD_OP_softmax, 1, {OPT_F(2, 5, 3)}, f_sm_ax1, FL},
    {"softmax/transposed_last", PD_OP_softmax, 1, {OPT_FT(5, 6)}, f_sm_last, FL},
    {"softmax/transposed_axis0", PD_OP_softmax, 1, {OPT_FT(5, 6)}, f_sm_ax0, FL},
    {"softmax/strided", PD_OP_softmax, 1, {OPT_FS(3, 5)}, f_sm_last, FL},
    {"softmax/0d", PD_OP_softmax, 1, {OPT_F0}, f_sm_last, FL},
    {"softmax/len1", PD_OP_softmax, 1, {OPT_F(3, 1)}, f_sm_last, FL},
    {"softmax/zero_batch", PD_OP_softmax, 1, {OPT_F(0, 5)}, f_sm_last, FL},
    {"softmax/zero_batch_axis0", PD_OP_softmax, 1, {OPT_F(0, 5)}, f_sm_ax0, FL},
    {"softmax/wide_values", PD_OP_softmax, 1, {OPT_FR(-30, 30, 4, 9)}, f_sm_last, FL},
    {"softmax/large_last", PD_OP_softmax, 1, {OPT_FR(-8, 8, 67, 1001)}, f_sm_last, FL, .no_gradcheck = BIG},
    {"softmax/large_axis0", PD_OP_softmax, 1, {OPT_FR(-8, 8, 300, 259)}, f_sm_ax0, FL, .no_gradcheck = BIG},
    {"softmax/large_axis1", PD_OP_softmax, 1, {OPT_FR(-8, 8, 5, 301, 70)}, f_sm_ax1, FL, .no_gradcheck = BIG},
    {"softmax/large_transposed", PD_OP_softmax, 1, {OPT_FT(200, 300)}, f_sm_last, FL, .no_gradcheck = BIG},
    /* log_softmax */
    {"log_softmax/last", PD_OP_log_softmax, 1, {OPT_F(3, 7)}, f_lsm_last, FL},
    {"log_softmax/axis0", PD_OP_log_softmax, 1, {OPT_F(4, 5)}, f_lsm_ax0, FL},
    {"log_softmax/axis1_3d", PD_OP_log_softmax, 1, {OPT_F(2, 5, 3)}, f_lsm_ax1, FL},
    {"log_softmax/transposed", PD_OP_log_softmax, 1, {OPT_FT(5, 6)}, f_lsm_last, FL},
    {"log_softmax/strided_axis0", PD_OP_log_softmax, 1, {OPT_FS(3, 5)}, f_lsm_ax0, FL},
    {"log_softmax/0d", PD_OP_log_softmax, 1, {OPT_F0}, f_lsm_last, FL},
    {"log_softmax/zero_batch", PD_OP_log_softmax, 1, {OPT_F(0, 5)}, f_lsm_last, FL},
    {"log_softmax/wide_values", PD_OP_log_softmax, 1, {OPT_FR(-30, 30, 4, 9)}, f_lsm_last, FL},
    {"log_softmax/large_last", PD_OP_log_softmax, 1, {OPT_FR(-8, 8, 67, 1001)}, f_lsm_last, FL, .no_gradcheck = BIG},
    {"log_softmax/large_axis0", PD_OP_log_softmax, 1, {OPT_FR(-8, 8, 300, 259)}, f_lsm_ax0, FL, .no_gradcheck = BIG},
    /* group_norm: G = 1 (over all of C and d...), G = C (instance norm), with
     * and without weight/bias, [N, C] input, transposed and strided inputs
     * (the CPU kernel's copy path), zero-size batch, a large shape that
     * reaches the parallel path */
    {"group_norm/g3_affine", PD_OP_group_norm, 3, {OPT_F(2, 6, 3, 2), OPT_F(6), OPT_F(6)}, f_gn3_wb, FL},
    {"group_norm/g1_affine", PD_OP_group_norm, 3, {OPT_F(2, 4, 5), OPT_F(4), OPT_F(4)}, f_gn1_wb, FL},
    {"group_norm/instance", PD_OP_group_norm, 3, {OPT_F(3, 4, 5), OPT_F(4), OPT_F(4)}, f_gn4_wb, FL},
    {"group_norm/plain", PD_OP_group_norm, 1, {OPT_F(2, 4, 3, 3)}, f_gn2, FL},
    {"group_norm/weight", PD_OP_group_norm, 2, {OPT_F(2, 4, 3), OPT_F(4)}, f_gn2_w, FL},
    {"group_norm/bias", PD_OP_group_norm, 2, {OPT_F(2, 4, 3), OPT_F(4)}, f_gn2_b, FL},
    {"group_norm/2d", PD_OP_group_norm, 3, {OPT_F(5, 6), OPT_F(6), OPT_F(6)}, f_gn3_wb, FL},
    {"group_norm/transposed", PD_OP_group_norm, 3, {OPT_FT(2, 6, 4), OPT_F(6), OPT_FS(6)}, f_gn3_wb, FL},
    {"group_norm/strided", PD_OP_group_norm, 1, {OPT_FS(3, 4, 4)}, f_gn2, FL},
    {"group_norm/zero_batch", PD_OP_group_norm, 3, {OPT_F(0, 6, 2), OPT_F(6), OPT_F(6)}, f_gn3_wb, FL},
    {"group_norm/large", PD_OP_group_norm, 3, {OPT_F(4, 32, 24, 24), OPT_F(32), OPT_F(32)}, f_gn8_wb, FL,
     .no_gradcheck = BIG},
    /* nll_loss: inputs need not be log-probabilities */
    {"nll_loss/none", PD_OP_nll_loss, 2, {OPT_F(5, 4), OPT_IDX(0, 4, 5)}, f_nll_none, FL},
    {"nll_loss/mean", PD_OP_nll_loss, 2, {OPT_F(5, 4), OPT_IDX(0, 4, 5)}, f_nll_mean, FL},
    {"nll_loss/sum", PD_OP_nll_loss, 2, {OPT_F(5, 4), OPT_IDX(0, 4, 5)}, f_nll_sum, FL},
    {"nll_loss/ignore_mean", PD_OP_nll_loss, 2, {OPT_F(8, 4), OPT_IDX(-1, 4, 8)}, f_nll_ign_mean, FL},
    {"nll_loss/ignore_none", PD_OP_nll_loss, 2, {OPT_F(8, 4), OPT_IDX(-1, 4, 8)}, f_nll_ign_none, FL},
    {"nll_loss/ignore_class_sum", PD_OP_nll_loss, 2, {OPT_F(8, 4), OPT_IDX(0, 4, 8)}, f_nll_ign2_sum, FL},
    {"nll_loss/all_ignored_sum", PD_OP_nll_loss, 2, {OPT_F(3, 4), OPT_IDX(0, 1, 3)}, f_nll_all_ign_sum, FL},
    {"nll_loss/all_ignored_mean_nan", PD_OP_nll_loss, 2, {OPT_F(3, 4), OPT_IDX(-1, 0, 3)}, f_nll_ign_mean, FL,
     .no_gradcheck = 1},
    {"nll_loss/spatial_mean", PD_OP_nll_loss, 2, {OPT_F(2, 4, 3, 2), OPT_IDX(-1, 4, 2, 3, 2)}, f_nll_ign_mean, FL},
    {"nll_loss/spatial_none", PD_OP_nll_loss, 2, {OPT_F(2, 3, 5), OPT_IDX(0, 3, 2, 5)}, f_nll_none, FL},
    {"nll_loss/1d", PD_OP_nll_loss, 2, {OPT_F(5), IDX0(0, 5)}, f_nll_sum, FL},
    {"nll_loss/transposed", PD_OP_nll_loss, 2, {OPT_FT(6, 4), OPT_IDX(0, 4, 6)}, f_nll_mean, FL},
    {"nll_loss/strided_spatial", PD_OP_nll_loss, 2, {OPT_FS(2, 3, 4), OPT_IDX(0, 3, 2, 4)}, f_nll_none, FL},
    {"nll_loss/int32_target", PD_OP_nll_loss, 2, {OPT_F(6, 4), IDS(PD_I32, 0, 4, 6)}, f_nll_mean, FL},
    {"nll_loss/zero_batch", PD_OP_nll_loss, 2, {OPT_F(0, 4), OPT_IDX(0, 4, 0)}, f_nll_sum, FL},
    {"nll_loss/large", PD_OP_nll_loss, 2, {OPT_F(3000, 10), OPT_IDX(-1, 10, 3000)}, f_nll_ign_mean, FL,
     .no_gradcheck = BIG},
    /* nll_loss_backward: logp is read for its shape only (no gradient);
     * the gradient in w is checked by finite differences, and every row
     * against the one-hot decomposition */
    {"nll_loss_backward/plain", PD_OP_nll_loss_backward, 3, {LP(5, 4), OPT_IDX(0, 4, 5), OPT_F(5)}, f_nllb, FL},
    {"nll_loss_backward/ignore", PD_OP_nll_loss_backward, 3, {LP(8, 4), OPT_IDX(-1, 4, 8), OPT_F(8)}, f_nllb_ign,
     FL},
    {"nll_loss_backward/ignore_class", PD_OP_nll_loss_backward, 3, {LP(8, 4), OPT_IDX(0, 4, 8), OPT_F(8)},
     f_nllb_ign2, FL},
    {"nll_loss_backward/spatial", PD_OP_nll_loss_backward, 3,
     {LP(2, 4, 3, 2), OPT_IDX(-1, 4, 2, 3, 2), OPT_F(2, 3, 2)}, f_nllb_ign, FL},
    {"nll_loss_backward/1d", PD_OP_nll_loss_backward, 3, {LP(5), IDX0(0, 5), OPT_F0}, f_nllb, FL},
    {"nll_loss_backward/strided", PD_OP_nll_loss_backward, 3,
     {LP_S(3, 5, 4), IDS(PD_I32, -1, 5, 3, 4), OPT_FT(3, 4)}, f_nllb_ign, FL},
    {"nll_loss_backward/zero_batch", PD_OP_nll_loss_backward, 3, {LP(0, 4), OPT_IDX(0, 4, 0), OPT_F(0)}, f_nllb, FL},
    {"nll_loss_backward/no_class", PD_OP_nll_loss_backward, 3, {LP(3, 0), OPT_IDX(-1, 0, 3), OPT_F(3)}, f_nllb_ign,
     FL},
    {"nll_loss_backward/large", PD_OP_nll_loss_backward, 3, {LP(300, 97), OPT_IDX(-1, 97, 300), OPT_F(300)},
     f_nllb_ign, FL, .no_gradcheck = BIG},
    /* nll_loss with class weights */
    {"nll_loss/weight_none", PD_OP_nll_loss, 3, {OPT_F(5, 4), OPT_IDX(0, 4, 5), WGT(4)}, f_nllw_none, FL},
    {"nll_loss/weight_ignore_mean", PD_OP_nll_loss, 3, {OPT_F(8, 4), OPT_IDX(-1, 4, 8), WGT(4)}, f_nllw_ign_mean, FL},
    {"nll_loss/weight_ignore_class_sum", PD_OP_nll_loss, 3, {OPT_F(8, 4), OPT_IDX(0, 4, 8), WGT(4)}, f_nllw_sum, FL},
    {"nll_loss/weight_spatial_mean", PD_OP_nll_loss, 3, {OPT_F(2, 4, 3, 2), OPT_IDX(-1, 4, 2, 3, 2), WGT(4)},
     f_nllw_ign_mean, FL},
    {"nll_loss/weight_transposed_strided", PD_OP_nll_loss, 3, {OPT_FT(6, 4), OPT_IDX(-1, 4, 6), WGT_S(4)},
     f_nllw_ign_mean, FL},
    {"nll_loss/weight_1d", PD_OP_nll_loss, 3, {OPT_F(5), IDX0(0, 5), WGT(5)}, f_nllw_sum, FL},
    {"nll_loss/weight_large", PD_OP_nll_loss, 3, {OPT_F(3000, 10), OPT_IDX(-1, 10, 3000), WGT(10)}, f_nllw_ign_mean,
     FL, .no_gradcheck = BIG},
    /* cross_entropy (composite): class indices */
    {"cross_entropy/mean", PD_OP_COUNT, 2, {OPT_F(6, 5), OPT_IDX(0, 5, 6)}, f_ce_mean, FL},
    {"cross_entropy/sum", PD_OP_COUNT, 2, {OPT_F(6, 5), OPT_IDX(0, 5, 6)}, f_ce_sum, FL},
    {"cross_entropy/none", PD_OP_COUNT, 2, {OPT_F(6, 5), OPT_IDX(0, 5, 6)}, f_ce_none, FL},
    {"cross_entropy/ignore_mean", PD_OP_COUNT, 2, {OPT_F(8, 5), OPT_IDX(-1, 5, 8)}, f_ce_ign_mean, FL},
    {"cross_entropy/ignore_class_none", PD_OP_COUNT, 2, {OPT_F(8, 5), OPT_IDX(0, 5, 8)}, f_ce_ign2_none, FL},
    {"cross_entropy/smooth_ignore_mean", PD_OP_COUNT, 2, {OPT_F(8, 5), OPT_IDX(-1, 5, 8)}, f_ce_ls_mean, FL},
    {"cross_entropy/smooth_ignore_sum", PD_OP_COUNT, 2, {OPT_F(8, 5), OPT_IDX(-1, 5, 8)}, f_ce_ls_sum, FL},
    {"cross_entropy/smooth_ignore_none", PD_OP_COUNT, 2, {OPT_F(8, 5), OPT_IDX(-1, 5, 8)}, f_ce_ls_none, FL},
    {"cross_entropy/spatial_smooth_mean", PD_OP_COUNT, 2, {OPT_F(2, 4, 3, 2), OPT_IDX(-1, 4, 2, 3, 2)}, f_ce_ls_mean,
     FL},
    {"cross_entropy/spatial_none", PD_OP_COUNT, 2, {OPT_F(2, 4, 5), OPT_IDX(0, 4, 2, 5)}, f_ce_none, FL},
    {"cross_entropy/1d", PD_OP_COUNT, 2, {OPT_F(5), IDX0(0, 5)}, f_ce_mean, FL},
    {"cross_entropy/transposed", PD_OP_COUNT, 2, {OPT_FT(7, 4), OPT_IDX(0, 4, 7)}, f_ce_ls_mean, FL},
    {"cross_entropy/wide_logits", PD_OP_COUNT, 2, {OPT_FR(-40, 40, 6, 5), OPT_IDX(0, 5, 6)}, f_ce_mean, FL},
    {"cross_entropy/zero_batch_sum", PD_OP_COUNT, 2, {OPT_F(0, 4), OPT_IDX(0, 4, 0)}, f_ce_ls_sum, FL},
    /* cross_entropy: probabilities */
    {"cross_entropy/probs_mean", PD_OP_COUNT, 2, {OPT_F(6, 5), OPT_FR(0, 1, 6, 5)}, f_ce_p_mean, FL},
    {"cross_entropy/probs_sum", PD_OP_COUNT, 2, {OPT_F(6, 5), OPT_FR(0, 1, 6, 5)}, f_ce_p_sum, FL},
    {"cross_entropy/probs_none", PD_OP_COUNT, 2, {OPT_F(6, 5), OPT_FR(0, 1, 6, 5)}, f_ce_p_none, FL},
    {"cross_entropy/probs_smooth_mean", PD_OP_COUNT, 2, {OPT_F(6, 5), OPT_FR(0, 1, 6, 5)}, f_ce_p_ls_mean, FL},
    {"cross_entropy/probs_spatial_mean", PD_OP_COUNT, 2, {OPT_F(2, 4, 3), OPT_FR(0, 1, 2, 4, 3)}, f_ce_p_mean, FL},
    /* cross_entropy with class weights */
    {"cross_entropy/weight_mean", PD_OP_COUNT, 3, {OPT_F(6, 5), OPT_IDX(0, 5, 6), WGT(5)}, f_cew_mean, FL},
    {"cross_entropy/weight_smooth_ignore_mean", PD_OP_COUNT, 3, {OPT_F(8, 5), OPT_IDX(-1, 5, 8), WGT(5)},
     f_cew_ls_ign_mean, FL},
    {"cross_entropy/weight_smooth_ignore_sum", PD_OP_COUNT, 3, {OPT_F(8, 5), OPT_IDX(-1, 5, 8), WGT(5)},
     f_cew_ls_ign_sum, FL},
    {"cross_entropy/weight_smooth_none", PD_OP_COUNT, 3, {OPT_F(8, 5), OPT_IDX(0, 5, 8), WGT(5)}, f_cew_ls_none, FL},
    {"cross_entropy/weight_spatial_smooth_mean", PD_OP_COUNT, 3, {OPT_F(2, 4, 3, 2), OPT_IDX(-1, 4, 2, 3, 2), WGT(4)},
     f_cew_ls_ign_mean, FL},
    {"cross_entropy/weight_probs_smooth_mean", PD_OP_COUNT, 3, {OPT_F(6, 5), OPT_FR(0, 1, 6, 5), WGT(5)},
     f_cew_p_ls_mean, FL},
    {"cross_entropy/weight_probs_spatial_none", PD_OP_COUNT, 3, {OPT_F(2, 4, 3), OPT_FR(0, 1, 2, 4, 3), WGT(4)},
     f_cew_p_none, FL},
    /* mse_loss (composite) */
    {"mse_loss/mean", PD_OP_COUNT, 2, {OPT_F(4, 5), OPT_F(4, 5)}, f_mse_mean, FL},
    {"mse_loss/sum", PD_OP_COUNT, 2, {OPT_F(4, 5), OPT_FT(4, 5)}, f_mse_sum, FL},
    {"mse_loss/none_broadcast", PD_OP_COUNT, 2, {OPT_F(4, 5), OPT_F(5)}, f_mse_none, FL},
    {"mse_loss/zero_size", PD_OP_COUNT, 2, {OPT_F(0, 5), OPT_F(0, 5)}, f_mse_sum, FL},
    /* dropout (composite) */
    {"dropout/train", PD_OP_COUNT, 1, {OPT_F(6, 7)}, f_drop_train, FL},
    {"dropout/train_strided", PD_OP_COUNT, 1, {OPT_FS(4, 5)}, f_drop_train, FL},
    {"dropout/train_p0", PD_OP_COUNT, 1, {OPT_F(3, 4)}, f_drop_train_p0, FL},
    {"dropout/eval", PD_OP_COUNT, 1, {OPT_F(3, 4)}, f_drop_eval, FL},
    {"dropout/p1", PD_OP_COUNT, 1, {OPT_F(3, 4)}, f_drop_p1, FL},
    /* layer_norm */
    {"layer_norm/plain", PD_OP_layer_norm, 1, {OPT_F(4, 6)}, f_ln1, FL},
    {"layer_norm/weight_bias", PD_OP_layer_norm, 3, {OPT_F(4, 6), OPT_F(6), OPT_F(6)}, f_ln1_wb, FL},
    {"layer_norm/weight", PD_OP_layer_norm, 2, {OPT_F(3, 2, 5), OPT_F(5)}, f_ln1_w, FL},
    {"layer_norm/bias", PD_OP_layer_norm, 2, {OPT_F(4, 5), OPT_F(5)}, f_ln1_b, FL},
    {"layer_norm/axes2_weight_bias", PD_OP_layer_norm, 3, {OPT_F(3, 4, 5), OPT_F(4, 5), OPT_F(4, 5)}, f_ln2_wb, FL},
    {"layer_norm/axes2_all", PD_OP_layer_norm, 1, {OPT_F(4, 5)}, f_ln2, FL},
    {"layer_norm/axes2_transposed", PD_OP_layer_norm, 2, {OPT_FT(2, 4, 5), OPT_FT(4, 5)}, f_ln2_w, FL},
    {"layer_norm/transposed", PD_OP_layer_norm, 3, {OPT_FT(6, 5), OPT_F(5), OPT_FS(5)}, f_ln1_wb, FL},
    {"layer_norm/strided", PD_OP_layer_norm, 1, {OPT_FS(4, 5)}, f_ln1, FL},
    {"layer_norm/odd_len1", PD_OP_layer_norm, 3, {OPT_F(3, 1), OPT_F(1), OPT_F(1)}, f_ln1_wb, FL},
    {"layer_norm/zero_batch", PD_OP_layer_norm, 3, {OPT_F(0, 6), OPT_F(6), OPT_F(6)}, f_ln1_wb, FL},
    {"layer_norm/large", PD_OP_layer_norm, 3, {OPT_F(67, 1001), OPT_F(1001), OPT_F(1001)}, f_ln1_wb, FL,
     .no_gradcheck = BIG},
    {"layer_norm/large_offset", PD_OP_layer_norm, 1, {OPT_FR(99, 101, 16, 4099)}, f_ln1, FL, .no_gradcheck = BIG},
    /* rms_norm */
    {"rms_norm/plain", PD_OP_rms_norm, 1, {OPT_F(4, 6)}, f_rms1, FL},
    {"rms_norm/weight", PD_OP_rms_norm, 2, {OPT_F(3, 2, 5), OPT_F(5)}, f_rms1_w, FL},
    {"rms_norm/axes2_weight", PD_OP_rms_norm, 2, {OPT_F(3, 4, 5), OPT_F(4, 5)}, f_rms2_w, FL},
    {"rms_norm/axes2_all", PD_OP_rms_norm, 1, {OPT_F(4, 5)}, f_rms2, FL},
    {"rms_norm/transposed", PD_OP_rms_norm, 2, {OPT_FT(6, 5), OPT_FS(5)}, f_rms1_w, FL},
    {"rms_norm/axes2_transposed", PD_OP_rms_norm, 2, {OPT_FT(3, 4, 5), OPT_F(4, 5)}, f_rms2_w, FL},
    {"rms_norm/strided", PD_OP_rms_norm, 1, {OPT_FS(4, 5)}, f_rms1, FL},
    {"rms_norm/zero_batch", PD_OP_rms_norm, 2, {OPT_F(0, 6), OPT_F(6)}, f_rms1_w, FL},
    {"rms_norm/large", PD_OP_rms_norm, 2, {OPT_F(67, 1001), OPT_F(1001)}, f_rms1_w, FL, .no_gradcheck = BIG},
    /* norm_backward (fused first-order backward of the norms): x, g, [w] */
    {"norm_backward/rms", PD_OP_norm_backward, 2, {OPT_F(4, 6), OPT_F(4, 6)}, f_nb_rms, FL, .no_gradcheck = 1},
    {"norm_backward/rms_weight", PD_OP_norm_backward, 3, {OPT_F(3, 2, 5), OPT_F(3, 2, 5), OPT_F(5)}, f_nb_rms_w, FL,
     .no_gradcheck = 1},
    {"norm_backward/rms_axes2_transposed", PD_OP_norm_backward, 3, {OPT_FT(3, 4, 5), OPT_FS(3, 4, 5), OPT_FT(4, 5)},
     f_nb_rms2_w, FL, .no_gradcheck = 1},
    {"norm_backward/layer", PD_OP_norm_backward, 2, {OPT_FT(6, 5), OPT_F(6, 5)}, f_nb_ln, FL, .no_gradcheck = 1},
    {"norm_backward/layer_weight_bias", PD_OP_norm_backward, 3, {OPT_F(4, 6), OPT_FS(4, 6), OPT_FS(6)}, f_nb_ln_wb,
     FL, .no_gradcheck = 1},
    {"norm_backward/layer_bias", PD_OP_norm_backward, 2, {OPT_F(5, 3), OPT_F(5, 3)}, f_nb_ln_b, FL,
     .no_gradcheck = 1},
    {"norm_backward/layer_axes2", PD_OP_norm_backward, 3, {OPT_F(3, 4, 5), OPT_F(3, 4, 5), OPT_F(4, 5)}, f_nb_ln2_wb,
     FL, .no_gradcheck = 1},
    {"norm_backward/len1", PD_OP_norm_backward, 3, {OPT_F(3, 1), OPT_F(3, 1), OPT_F(1)}, f_nb_ln_wb, FL,
     .no_gradcheck = 1},
    {"norm_backward/zero_batch", PD_OP_norm_backward, 3, {OPT_F(0, 6), OPT_F(0, 6), OPT_F(6)}, f_nb_ln_wb, FL,
     .no_gradcheck = 1},
    {"norm_backward/large_rms", PD_OP_norm_backward, 3, {OPT_F(300, 289), OPT_F(300, 289), OPT_F(289)}, f_nb_rms_w,
     FL, .no_gradcheck = 1},
    {"norm_backward/large_layer", PD_OP_norm_backward, 3, {OPT_F(67, 1001), OPT_FT(67, 1001), OPT_F(1001)},
     f_nb_ln_wb, FL, .no_gradcheck = 1},
    {"norm_backward/large_offset", PD_OP_norm_backward, 2, {OPT_FR(99, 101, 16, 4099), OPT_F(16, 4099)}, f_nb_ln,
     FL, .no_gradcheck = 1},
    /* embedding: 12 ids from 5 rows repeat */
    {"embedding/repeated_ids", PD_OP_embedding, 2, {OPT_IDX(0, 5, 12), OPT_F(5, 4)}, f_emb, FL},
    {"embedding/ids_2d", PD_OP_embedding, 2, {OPT_IDX(0, 7, 3, 4), OPT_F(7, 3)}, f_emb, FL},
    {"embedding/int32_ids", PD_OP_embedding, 2, {IDS(PD_I32, 0, 6, 9), OPT_F(6, 3)}, f_emb, FL},
    {"embedding/int8_ids", PD_OP_embedding, 2, {IDS(PD_I8, 0, 6, 2, 5), OPT_F(6, 3)}, f_emb, FL},
    {"embedding/uint8_ids", PD_OP_embedding, 2, {IDS(PD_U8, 0, 4, 7), OPT_F(4, 2)}, f_emb, FL},
    {"embedding/transposed_weight", PD_OP_embedding, 2, {OPT_IDX(0, 6, 8), OPT_FT(6, 4)}, f_emb, FL},
    {"embedding/strided_weight", PD_OP_embedding, 2, {OPT_IDX(0, 6, 8), OPT_FS(6, 4)}, f_emb, FL},
    {"embedding/integer_weight", PD_OP_embedding, 2, {OPT_IDX(0, 6, 8), OPT_FR(-50, 50, 6, 4)}, f_emb, NUM,
     .no_gradcheck = 1},
    {"embedding/zero_ids", PD_OP_embedding, 2, {OPT_IDX(0, 6, 0), OPT_F(6, 4)}, f_emb, FL},
    {"embedding/0d_id", PD_OP_embedding, 2, {IDX0(0, 6), OPT_F(6, 4)}, f_emb, FL},
    {"embedding/large", PD_OP_embedding, 2, {OPT_IDX(0, 100, 5000), OPT_F(100, 64)}, f_emb, FL, .no_gradcheck = BIG},
    /* one_hot (int64 out, not differentiable) */
    {"one_hot/classes5", PD_OP_one_hot, 1, {OPT_IDX(0, 5, 9)}, f_oh5, ONE, .no_gradcheck = 1},
    {"one_hot/inferred", PD_OP_one_hot, 1, {OPT_IDX(0, 6, 3, 4)}, f_oh_infer, ONE, .no_gradcheck = 1},
    {"one_hot/int32_ids", PD_OP_one_hot, 1, {IDS(PD_I32, 0, 7, 2, 3)}, f_oh7, ONE, .no_gradcheck = 1},
    {"one_hot/int16_ids", PD_OP_one_hot, 1, {IDS(PD_I16, 0, 5, 6)}, f_oh5, ONE, .no_gradcheck = 1},
    {"one_hot/zero_size", PD_OP_one_hot, 1, {OPT_IDX(0, 5, 0)}, f_oh5, ONE, .no_gradcheck = 1},
};

int opt_rows_nn(const struct opt_row **r)
{
    *r = rows;
    return (int)(sizeof rows / sizeof rows[0]);
}
