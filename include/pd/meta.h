/* paddle.c — meta tensors and the meta executor: a step's shapes and memory
 * without its data.
 *
 * A meta tensor has a shape, a dtype and strides but no bytes. Between
 * pd_meta_begin and pd_meta_end every op on this thread runs its checks and
 * shape inference only and returns meta tensors; autograd records as usual,
 * so backward and an optimizer step run meta too. Views of a meta tensor are
 * meta; a view of a tensor with data stays a (free) view of that data.
 * Reading a meta tensor (pd_tensor_data, pd_item, pd_get, pd_to_buffer, an
 * op that needs values such as nonzero) fails with PD_ERR_INVALID, and so
 * does an eager op given one: never a crash. Under the meta executor an
 * in-place op may write only into meta tensors.
 *
 * The session's report lists every op that ran with its outputs' shapes, and
 * the bytes of live meta tensors (sizes as requested, before the allocator's
 * rounding): peak_bytes is the most alive at once, peak_delta_bytes the part
 * made during the session (the step's activations, gradients and optimizer
 * state above what existed at begin).
 *
 *     int tok = pd_meta_begin();
 *     struct pd_tensor *loss = pd_llama_loss(model, ids, targets);
 *     pd_backward(loss, NULL, 0);
 *     struct pd_meta_report *r = NULL;
 *     pd_meta_end(tok, &r);
 *     printf("%lld ops, peak %lld bytes\n", (long long)r->n_ops, (long long)r->peak_delta_bytes);
 *     pd_meta_report_destroy(r);
 */
#ifndef PD_META_H
#define PD_META_H

#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if t has no data (a meta tensor or a view of one). */
int pd_tensor_is_meta(const struct pd_tensor *t);
/* A new meta tensor (contiguous strides) in the current scope, under any
 * executor; NULL with an error for a bad shape or dtype. */
struct pd_tensor *pd_meta_empty(const int64_t *shape, int ndim, enum pd_dtype dt);

#define PD_META_MAX_OUT 4
struct pd_meta_out {
    enum pd_dtype dtype;
    int ndim;
    int64_t shape[PD_MAX_DIMS];
};
struct pd_meta_op {
    char name[128]; /* the call's debug name: "model.layers.0.mlp/matmul_12" */
    const char *op; /* op table name: "matmul" (static) */
    int n_out;
    struct pd_meta_out out[PD_META_MAX_OUT];
    int64_t live_bytes; /* live meta bytes after the op ran */
};
struct pd_meta_report {
    int64_t n_ops;
    struct pd_meta_op *ops;   /* n_ops, in execution order (owned by the report) */
    int64_t start_bytes;      /* live meta bytes at pd_meta_begin */
    int64_t peak_bytes;       /* most live meta bytes at once during the session */
    int64_t peak_delta_bytes; /* peak_bytes - start_bytes */
    int64_t end_bytes;        /* live meta bytes at pd_meta_end */
    int64_t made_bytes;       /* sum of the sizes of every meta output made */
};

/* Make the meta executor this thread's executor. Returns a token (> 0) for
 * pd_meta_end, or a negative status. The session is an entry of the
 * thread's mode stack (with grad mode and autocast); sessions nest, each
 * reporting its own ops. */
int pd_meta_begin(void);
/* End the session of token, which must be the innermost open mode
 * (PD_ERR_STATE otherwise, and nothing ends). report (may be NULL) receives
 * the session's report, owned by the caller. Returns status. */
int pd_meta_end(int token, struct pd_meta_report **report);
void pd_meta_report_destroy(struct pd_meta_report *r); /* NULL is a no-op */
/* The report as text: totals, then up to max_ops ops (-1: all) with their
 * output shapes. malloc'd: free() it; NULL only when out of memory. */
char *pd_meta_report_summary(const struct pd_meta_report *r, int64_t max_ops);

#ifdef __cplusplus
}
#endif
#endif
