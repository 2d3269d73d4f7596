/* TEMPORARY weak stubs so that families build independently; removed when every family is implemented. */
#include "core/internal.h"
__attribute__((weak)) int pdi_infer_avg_pool2d_backward(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_bool(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_broadcast(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_cast(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_compare(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_concat(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_conv2d(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_conv2d_backward_data(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_conv2d_backward_weight(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_diagonal(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_diagonal_backward(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_embedding(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_expand(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_float_same(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_gather(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_index_add(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_index_select(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_masked_scatter(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_masked_select(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_matmul(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_max_pool2d_backward(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_nll_loss(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_nonzero(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_norm(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_one_hot(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_pad(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_pad_backward(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_permute(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_pool2d(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_reduce(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_reduce_bool(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_reduce_float(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_reduce_index(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_reduce_index2(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_same(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_scatter(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_slice(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_slice_backward(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_sort(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_topk(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_unique(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_view(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_infer_where(struct pdi_call *c) { return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: not implemented yet", pdi_ops[c->op].name); }
__attribute__((weak)) int pdi_vjp_abs(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_add(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_add_scalar(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_amax(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_amin(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_atan2(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_avg_pool2d(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_avg_pool2d_backward(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_cast(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_clip(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_concat(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_conv2d(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_conv2d_backward_data(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_conv2d_backward_weight(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_copy(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_cos(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_cumprod(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_cumsum(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_diagonal(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_diagonal_backward(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_div(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_elu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_embedding(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_erf(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_exp(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_expand(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_expm1(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_flip(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_gather(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_gelu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_index_add(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_index_select(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_layer_norm(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_leaky_relu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_log(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_log1p(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_log2(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_log_softmax(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_logsumexp(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_masked_scatter(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_masked_select(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_matmul(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_max(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_max_pool2d(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_max_pool2d_backward(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_maximum(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_mean(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_min(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_minimum(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_mish(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_mul(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_neg(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_nll_loss(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_none(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_norm(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_pad(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_pad_backward(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_permute(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_pow(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_pow_scalar(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_prod(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_reciprocal(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_relu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_remainder(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_rms_norm(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_rsqrt(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_scale(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_scatter(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_scatter_add(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_sigmoid(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_silu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_sin(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_slice(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_slice_backward(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_softmax(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_softplus(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_sort(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_sqrt(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_square(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_std(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_sub(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_sum(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_tan(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_tanh(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_topk(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_tril(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_triu(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_var(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_view(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) int pdi_vjp_where(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin) { (void)g; (void)gin; return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: VJP not implemented yet", pdi_ops[n->op].name); }
__attribute__((weak)) void pdi_register_ref_view(void) {}
__attribute__((weak)) void pdi_register_cpu_view(void) {}
__attribute__((weak)) void pdi_register_ref_unary(void) {}
__attribute__((weak)) void pdi_register_cpu_unary(void) {}
__attribute__((weak)) void pdi_register_ref_binary(void) {}
__attribute__((weak)) void pdi_register_cpu_binary(void) {}
__attribute__((weak)) void pdi_register_ref_reduce(void) {}
__attribute__((weak)) void pdi_register_cpu_reduce(void) {}
__attribute__((weak)) void pdi_register_ref_linalg(void) {}
__attribute__((weak)) void pdi_register_cpu_linalg(void) {}
__attribute__((weak)) void pdi_register_ref_nn(void) {}
__attribute__((weak)) void pdi_register_cpu_nn(void) {}
__attribute__((weak)) void pdi_register_ref_index(void) {}
__attribute__((weak)) void pdi_register_cpu_index(void) {}
