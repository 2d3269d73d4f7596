/* paddle.c — the public ops.
 *
 * Every function here is a thin wrapper that fills an op call and hands it to
 * the one dispatcher (src/ops/dispatch.c): check + infer meta, autocast,
 * distribute, trace-or-run, record autograd, observe. Each returns a new
 * tensor owned by the innermost scope, or NULL with pd_last_error() set.
 * A NULL input gives a NULL output.
 *
 * Axes may be negative (counted from the end). Binary ops broadcast like
 * NumPy and promote dtypes with pd_promote_types.
 */
#ifndef PD_OPS_H
#define PD_OPS_H

#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pd_tensor;

/* ---- views (share storage where strides allow) ----------------------- */
/* reshape: one entry may be -1. Returns a view when the strides allow it,
 * a contiguous copy otherwise (pd_view never copies and fails instead). */
struct pd_tensor *pd_reshape(struct pd_tensor *x, const int64_t *shape, int ndim);
struct pd_tensor *pd_view(struct pd_tensor *x, const int64_t *shape, int ndim);
struct pd_tensor *pd_permute(struct pd_tensor *x, const int *perm, int ndim);
struct pd_tensor *pd_transpose(struct pd_tensor *x, int dim0, int dim1);
/* x[start:stop:step] along axis; step > 0; start/stop clamp like Python. */
struct pd_tensor *pd_slice(struct pd_tensor *x, int axis, int64_t start, int64_t stop, int64_t step);
/* -1 in shape keeps that dim. */
struct pd_tensor *pd_expand(struct pd_tensor *x, const int64_t *shape, int ndim);
struct pd_tensor *pd_broadcast_to(struct pd_tensor *x, const int64_t *shape, int ndim);
struct pd_tensor *pd_squeeze(struct pd_tensor *x, int axis);      /* axis = PD_ALL_AXES: every 1-dim */
struct pd_tensor *pd_unsqueeze(struct pd_tensor *x, int axis);
struct pd_tensor *pd_flatten(struct pd_tensor *x, int start_axis, int end_axis);
/* Fills out[0..dim(axis)-1]; returns the count or a negative status. */
int pd_unbind(struct pd_tensor *x, int axis, struct pd_tensor **out);
struct pd_tensor *pd_diagonal(struct pd_tensor *x, int64_t offset, int axis1, int axis2);
struct pd_tensor *pd_contiguous(struct pd_tensor *x);
struct pd_tensor *pd_clone(struct pd_tensor *x);
/* Same data, no autograd history. */
struct pd_tensor *pd_detach(struct pd_tensor *x);

#define PD_ALL_AXES 127

/* ---- unary ----------------------------------------------------------- */
struct pd_tensor *pd_neg(struct pd_tensor *x);
struct pd_tensor *pd_abs(struct pd_tensor *x);
struct pd_tensor *pd_sign(struct pd_tensor *x);
struct pd_tensor *pd_exp(struct pd_tensor *x);
struct pd_tensor *pd_expm1(struct pd_tensor *x);
struct pd_tensor *pd_log(struct pd_tensor *x);
struct pd_tensor *pd_log1p(struct pd_tensor *x);
struct pd_tensor *pd_log2(struct pd_tensor *x);
struct pd_tensor *pd_sqrt(struct pd_tensor *x);
struct pd_tensor *pd_rsqrt(struct pd_tensor *x);
struct pd_tensor *pd_square(struct pd_tensor *x);
struct pd_tensor *pd_reciprocal(struct pd_tensor *x);
struct pd_tensor *pd_sin(struct pd_tensor *x);
struct pd_tensor *pd_cos(struct pd_tensor *x);
struct pd_tensor *pd_tan(struct pd_tensor *x);
struct pd_tensor *pd_tanh(struct pd_tensor *x);
struct pd_tensor *pd_sigmoid(struct pd_tensor *x);
struct pd_tensor *pd_relu(struct pd_tensor *x);
struct pd_tensor *pd_leaky_relu(struct pd_tensor *x, double negative_slope);
struct pd_tensor *pd_elu(struct pd_tensor *x, double alpha);
/* approximate = 0: erf form; 1: tanh form. */
struct pd_tensor *pd_gelu(struct pd_tensor *x, int approximate);
struct pd_tensor *pd_silu(struct pd_tensor *x);
struct pd_tensor *pd_softplus(struct pd_tensor *x, double beta, double threshold);
struct pd_tensor *pd_mish(struct pd_tensor *x);
struct pd_tensor *pd_erf(struct pd_tensor *x);
struct pd_tensor *pd_floor(struct pd_tensor *x);
struct pd_tensor *pd_ceil(struct pd_tensor *x);
struct pd_tensor *pd_round(struct pd_tensor *x);   /* half to even */
struct pd_tensor *pd_trunc(struct pd_tensor *x);
struct pd_tensor *pd_clip(struct pd_tensor *x, double lo, double hi);
struct pd_tensor *pd_pow_scalar(struct pd_tensor *x, double exponent);
/* x * s and x + s, keeping x's dtype. */
struct pd_tensor *pd_scale(struct pd_tensor *x, double s);
struct pd_tensor *pd_add_scalar(struct pd_tensor *x, double s);
struct pd_tensor *pd_cast(struct pd_tensor *x, enum pd_dtype dt);

/* ---- binary (broadcasting) ------------------------------------------ */
struct pd_tensor *pd_add(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_sub(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_mul(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_div(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_pow(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_maximum(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_minimum(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_remainder(struct pd_tensor *a, struct pd_tensor *b);     /* sign of b, like Python */
struct pd_tensor *pd_floor_divide(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_atan2(struct pd_tensor *a, struct pd_tensor *b);
/* Comparisons and logic return PD_BOOL. */
struct pd_tensor *pd_eq(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_ne(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_lt(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_le(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_gt(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_ge(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_logical_and(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_logical_or(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_logical_xor(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_logical_not(struct pd_tensor *x);
struct pd_tensor *pd_isnan(struct pd_tensor *x);
struct pd_tensor *pd_isinf(struct pd_tensor *x);
struct pd_tensor *pd_isfinite(struct pd_tensor *x);
/* cond ? a : b, all three broadcast. */
struct pd_tensor *pd_where(struct pd_tensor *cond, struct pd_tensor *a, struct pd_tensor *b);

/* In-place (write through views; the tensor's storage version is bumped).
 * Allowed on tensors that do not require grad, or under no_grad. */
struct pd_tensor *pd_add_(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_mul_(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_scale_(struct pd_tensor *a, double s);
struct pd_tensor *pd_fill_(struct pd_tensor *a, double value);
/* Copy src (broadcast, cast) into dst's memory. */
struct pd_tensor *pd_copy_(struct pd_tensor *dst, struct pd_tensor *src);

/* ---- reductions ------------------------------------------------------ */
/* axes == NULL or n_axes == 0 reduces every axis. */
struct pd_tensor *pd_sum(struct pd_tensor *x, const int *axes, int n_axes, int keepdim);
struct pd_tensor *pd_mean(struct pd_tensor *x, const int *axes, int n_axes, int keepdim);
struct pd_tensor *pd_prod(struct pd_tensor *x, const int *axes, int n_axes, int keepdim);
struct pd_tensor *pd_amax(struct pd_tensor *x, const int *axes, int n_axes, int keepdim);
struct pd_tensor *pd_amin(struct pd_tensor *x, const int *axes, int n_axes, int keepdim);
/* max/min along one axis: values, and (if indices != NULL) int64 indices. */
struct pd_tensor *pd_max(struct pd_tensor *x, int axis, int keepdim, struct pd_tensor **indices);
struct pd_tensor *pd_min(struct pd_tensor *x, int axis, int keepdim, struct pd_tensor **indices);
struct pd_tensor *pd_argmax(struct pd_tensor *x, int axis, int keepdim);
struct pd_tensor *pd_argmin(struct pd_tensor *x, int axis, int keepdim);
struct pd_tensor *pd_var(struct pd_tensor *x, const int *axes, int n_axes, int correction, int keepdim);
struct pd_tensor *pd_std(struct pd_tensor *x, const int *axes, int n_axes, int correction, int keepdim);
struct pd_tensor *pd_logsumexp(struct pd_tensor *x, const int *axes, int n_axes, int keepdim);
/* The vector p-norm over axes, as torch.linalg.vector_norm: any p (not
 * NaN). p = 0 counts the nonzeros, INFINITY / -INFINITY take max / min |x|,
 * other p (negative and fractional too) give (sum |x|^p)^(1/p). Gradients
 * follow PyTorch's, with subgradient 0 at x == 0 (docs/autograd.md). */
struct pd_tensor *pd_norm(struct pd_tensor *x, double p, const int *axes, int n_axes, int keepdim);
struct pd_tensor *pd_all(struct pd_tensor *x, const int *axes, int n_axes, int keepdim);
struct pd_tensor *pd_any(struct pd_tensor *x, const int *axes, int n_axes, int keepdim);
struct pd_tensor *pd_cumsum(struct pd_tensor *x, int axis);
struct pd_tensor *pd_cumprod(struct pd_tensor *x, int axis);
/* Sum x down to shape (the inverse of broadcasting; used by VJP rules). */
struct pd_tensor *pd_sum_to_shape(struct pd_tensor *x, const int64_t *shape, int ndim);

/* ---- linear algebra -------------------------------------------------- */
/* Batched matmul with broadcasting over leading dims; 1-d operands act as
 * in NumPy. trans_a/trans_b transpose the last two dims first. */
struct pd_tensor *pd_matmul(struct pd_tensor *a, struct pd_tensor *b, int trans_a, int trans_b);
struct pd_tensor *pd_bmm(struct pd_tensor *a, struct pd_tensor *b);
/* y = x W^T + b, W is [out, in] (bias may be NULL). */
struct pd_tensor *pd_linear(struct pd_tensor *x, struct pd_tensor *w, struct pd_tensor *bias);
struct pd_tensor *pd_outer(struct pd_tensor *a, struct pd_tensor *b);
struct pd_tensor *pd_dot(struct pd_tensor *a, struct pd_tensor *b);

/* ---- nn -------------------------------------------------------------- */
struct pd_tensor *pd_softmax(struct pd_tensor *x, int axis);
struct pd_tensor *pd_log_softmax(struct pd_tensor *x, int axis);

enum pd_reduction { PD_REDUCTION_NONE = 0, PD_REDUCTION_MEAN = 1, PD_REDUCTION_SUM = 2, PD_REDUCTION_COUNT };
/* Deprecated spellings (before the names matched the type); kept so old code
 * compiles. */
#define PD_REDUCE_NONE PD_REDUCTION_NONE
#define PD_REDUCE_MEAN PD_REDUCTION_MEAN
#define PD_REDUCE_SUM PD_REDUCTION_SUM
/* logits [N, C] (or [N, C, d...]); target int64 class indices [N] ([N, d...])
 * or, when target is floating point with the logits' shape, probabilities. */
struct pd_tensor *pd_cross_entropy(struct pd_tensor *logits, struct pd_tensor *target, int64_t ignore_index,
                                   double label_smoothing, enum pd_reduction reduction);
struct pd_tensor *pd_nll_loss(struct pd_tensor *logp, struct pd_tensor *target, int64_t ignore_index,
                              enum pd_reduction reduction);
/* With class weights weight [C] (NULL: none), as PyTorch's weight=: each
 * target's loss is scaled by weight[target], and mean divides by the sum of
 * the weights of the targets that are not ignore_index. label_smoothing's
 * term is weighted the same way. The weights are constants: they get no
 * gradient (a backward that asks for one fails). */
struct pd_tensor *pd_cross_entropy_weighted(struct pd_tensor *logits, struct pd_tensor *target,
                                            struct pd_tensor *weight, int64_t ignore_index, double label_smoothing,
                                            enum pd_reduction reduction);
struct pd_tensor *pd_nll_loss_weighted(struct pd_tensor *logp, struct pd_tensor *target, struct pd_tensor *weight,
                                       int64_t ignore_index, enum pd_reduction reduction);
struct pd_tensor *pd_mse_loss(struct pd_tensor *x, struct pd_tensor *y, enum pd_reduction reduction);
/* Normalise over the last n_norm_axes dims; weight/bias may be NULL. */
struct pd_tensor *pd_layer_norm(struct pd_tensor *x, int n_norm_axes, struct pd_tensor *weight,
                                struct pd_tensor *bias, double eps);
struct pd_tensor *pd_rms_norm(struct pd_tensor *x, int n_norm_axes, struct pd_tensor *weight, double eps);
/* x [N, C, d...]: the C channels of each sample in num_groups groups (C
 * divisible by it), each group normalised over its channels and d...
 * (biased variance, eps added), then y * weight[c] + bias[c]; weight and
 * bias [C] may be NULL. As torch.nn.functional.group_norm. */
struct pd_tensor *pd_group_norm(struct pd_tensor *x, int64_t num_groups, struct pd_tensor *weight,
                                struct pd_tensor *bias, double eps);
/* Counter-based: the same generator state gives the same mask. */
struct pd_tensor *pd_dropout(struct pd_tensor *x, double p, int training, struct pd_generator *g);
struct pd_tensor *pd_embedding(struct pd_tensor *ids, struct pd_tensor *weight);
struct pd_tensor *pd_one_hot(struct pd_tensor *ids, int64_t num_classes);
/* Resize x [N, C, H, W] to [N, C, size[0], size[1]] (scale NULL) or, with
 * size NULL, to floor(H * scale[0]) x floor(W * scale[1]), where positions
 * then map with 1 / scale (torch.nn.functional.interpolate with
 * recompute_scale_factor off). Nearest picks floor(dst * in / out) (the
 * legacy 'nearest' of PyTorch, not 'nearest-exact'); bilinear blends the
 * 4 neighbours, with align_corners (1) aligning the corner pixels' centres
 * (nearest takes 0). Differentiable to any order. */
enum pd_interp_mode { PD_INTERP_NEAREST = 0, PD_INTERP_BILINEAR = 1 };
struct pd_tensor *pd_interpolate(struct pd_tensor *x, const int64_t *size, const double *scale,
                                 enum pd_interp_mode mode, int align_corners);
/* x [N, C_in, L], w [C_out, C_in/groups, K]. */
struct pd_tensor *pd_conv1d(struct pd_tensor *x, struct pd_tensor *w, struct pd_tensor *bias, int stride,
                            int padding, int dilation, int groups);
/* x [N, C_in, H, W], w [C_out, C_in/groups, KH, KW]; stride/padding/dilation are {h, w}. */
struct pd_tensor *pd_conv2d(struct pd_tensor *x, struct pd_tensor *w, struct pd_tensor *bias, const int *stride,
                            const int *padding, const int *dilation, int groups);
/* Pools: kernel, stride and padding are {h, w}; stride NULL is the kernel
 * (PyTorch's default), padding NULL is 0. */
struct pd_tensor *pd_max_pool2d(struct pd_tensor *x, const int *kernel, const int *stride, const int *padding);
struct pd_tensor *pd_avg_pool2d(struct pd_tensor *x, const int *kernel, const int *stride, const int *padding);
/* The pools with Paddle's options. ceil_mode: the output size rounds up, the
 * last window may hang over the end but must start inside the input or the
 * left padding (PyTorch's rule). exclusive (avg): 1 divides each window's sum
 * by its input elements (Paddle's default, and pd_avg_pool2d's); 0 also
 * counts the padding, as PyTorch's default count_include_pad=True (with
 * ceil_mode, not the part past the right padding, as PyTorch). */
struct pd_tensor *pd_max_pool2d_ex(struct pd_tensor *x, const int *kernel, const int *stride, const int *padding,
                                   int ceil_mode);
struct pd_tensor *pd_avg_pool2d_ex(struct pd_tensor *x, const int *kernel, const int *stride, const int *padding,
                                   int ceil_mode, int exclusive);

/* ---- indexing and shape --------------------------------------------- */
struct pd_tensor *pd_gather(struct pd_tensor *x, int axis, struct pd_tensor *index);     /* torch.gather */
struct pd_tensor *pd_index_select(struct pd_tensor *x, int axis, struct pd_tensor *index);
struct pd_tensor *pd_take_along_axis(struct pd_tensor *x, int axis, struct pd_tensor *index); /* broadcasts */
struct pd_tensor *pd_scatter(struct pd_tensor *x, int axis, struct pd_tensor *index, struct pd_tensor *src);
struct pd_tensor *pd_scatter_add(struct pd_tensor *x, int axis, struct pd_tensor *index, struct pd_tensor *src);
struct pd_tensor *pd_index_add(struct pd_tensor *x, int axis, struct pd_tensor *index, struct pd_tensor *src);
struct pd_tensor *pd_masked_fill(struct pd_tensor *x, struct pd_tensor *mask, double value);
struct pd_tensor *pd_masked_select(struct pd_tensor *x, struct pd_tensor *mask);   /* 1-d result */
struct pd_tensor *pd_nonzero(struct pd_tensor *x);                                 /* [n, ndim] int64 */
struct pd_tensor *pd_concat(struct pd_tensor *const *xs, int n, int axis);
struct pd_tensor *pd_stack(struct pd_tensor *const *xs, int n, int axis);
/* Splits into pieces of the given sizes; fills out[n_sections]. */
int pd_split(struct pd_tensor *x, const int64_t *sizes, int n_sections, int axis, struct pd_tensor **out);
int pd_chunk(struct pd_tensor *x, int chunks, int axis, struct pd_tensor **out);
struct pd_tensor *pd_tile(struct pd_tensor *x, const int64_t *reps, int n_reps);
struct pd_tensor *pd_repeat_interleave(struct pd_tensor *x, int64_t repeats, int axis);
struct pd_tensor *pd_flip(struct pd_tensor *x, const int *axes, int n_axes);
struct pd_tensor *pd_roll(struct pd_tensor *x, int64_t shift, int axis);
enum pd_pad_mode { PD_PAD_CONSTANT = 0, PD_PAD_REFLECT = 1, PD_PAD_REPLICATE = 2, PD_PAD_MODE_COUNT };
/* pads = {before_last, after_last, before_second_last, after_second_last, ...} as torch.nn.functional.pad. */
struct pd_tensor *pd_pad(struct pd_tensor *x, const int64_t *pads, int n_pads, enum pd_pad_mode mode, double value);
struct pd_tensor *pd_tril(struct pd_tensor *x, int64_t diagonal);
struct pd_tensor *pd_triu(struct pd_tensor *x, int64_t diagonal);
/* values, and indices (int64) if indices != NULL. */
struct pd_tensor *pd_topk(struct pd_tensor *x, int64_t k, int axis, int largest, struct pd_tensor **indices);
struct pd_tensor *pd_sort(struct pd_tensor *x, int axis, int descending, struct pd_tensor **indices);
struct pd_tensor *pd_argsort(struct pd_tensor *x, int axis, int descending);
/* Sorted unique values of the flattened x; inverse (int64, x's shape) and counts if asked. */
struct pd_tensor *pd_unique(struct pd_tensor *x, struct pd_tensor **inverse, struct pd_tensor **counts);

/* ---- transformer blocks (fused kernels, each one op with its own VJP) -- */
/* Rotary position embedding, Hugging Face Llama convention (rotate_half:
 * element i pairs with i + D/2). x [B, T, H, D] (any strides, D even);
 * positions int64 [T] or [B, T]; angle = pos * theta^(-2i/D). */
struct pd_tensor *pd_rope(struct pd_tensor *x, struct pd_tensor *positions, double theta);
/* silu(gate) * up, same shapes. */
struct pd_tensor *pd_swiglu(struct pd_tensor *gate, struct pd_tensor *up);
/* Scaled dot-product attention. q [B, Hq, T, D], k and v [B, Hkv, S, D]
 * (any strides; Hq % Hkv == 0: grouped-query heads share k/v).
 * causal: query t sees keys s <= t + (S - T) (bottom-right aligned, so a
 * KV-cache step works). mask, optional, broadcastable to [B, Hq, T, S]: bool
 * (true = attend) or floating (added to the scores). scale <= 0 means
 * 1/sqrt(D). A row with no visible key gives zeros. Returns [B, Hq, T, D]. */
struct pd_tensor *pd_sdpa(struct pd_tensor *q, struct pd_tensor *k, struct pd_tensor *v, struct pd_tensor *mask,
                          int causal, double scale);

#ifdef __cplusplus
}
#endif
#endif
