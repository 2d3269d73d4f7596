/* paddle.c — eager autograd.
 *
 * Ops record GradNodes when grad mode is on and an input requires grad. The
 * VJP rule of every op is written with public ops, so backward runs through
 * the same dispatcher and can itself be differentiated (create_graph), to any
 * order.
 */
#ifndef PD_AUTOGRAD_H
#define PD_AUTOGRAD_H

#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a leaf as requiring grad (stop_gradient = !requires_grad). Setting it
 * on a non-leaf is an error. Returns t. */
struct pd_tensor *pd_requires_grad_(struct pd_tensor *t, int requires_grad);
int pd_tensor_requires_grad(const struct pd_tensor *t);
int pd_tensor_is_leaf(const struct pd_tensor *t);
/* The accumulated gradient of a leaf (borrowed; NULL if none yet). */
struct pd_tensor *pd_tensor_grad(const struct pd_tensor *t);
void pd_tensor_zero_grad(struct pd_tensor *t);      /* drops .grad */
/* Keep .grad on a non-leaf too. */
int pd_retain_grad(struct pd_tensor *t);
/* Name of the GradNode that produced t ("matmul_12.grad"), NULL for leaves. */
const char *pd_tensor_grad_fn_name(const struct pd_tensor *t);

/* Options of pd_grad and pd_backward_ex; NULL (or a zeroed struct) means
 * the defaults, which are PyTorch's:
 *   retain_graph  keep the graph's saved tensors so it can be run again;
 *   create_graph  record the backward ops, so the gradients can themselves
 *                 be differentiated (to any order); implies retain_graph;
 *   allow_unused  pd_grad only: an input the outputs do not depend on gets
 *                 NULL instead of failing the call;
 *   grad_outputs  one gradient per output (NULL entries or a NULL array:
 *                 ones, for scalar outputs only). */
struct pd_grad_options {
    int retain_graph;
    int create_graph;
    int allow_unused;
    struct pd_tensor *const *grad_outputs;
};

/* Backward from a scalar (or with an explicit grad of loss's shape).
 * Accumulates into the .grad of every leaf that requires grad.
 * pd_backward(loss, grad, r) is pd_backward_ex(loss, &opts) with
 * opts = {.retain_graph = r, .grad_outputs = &grad}. */
int pd_backward(struct pd_tensor *loss, struct pd_tensor *grad, int retain_graph);
/* pd_backward with options: with create_graph the accumulated .grad fields
 * carry a graph, so a second backward (or pd_grad) through them gives
 * second derivatives. allow_unused is ignored. */
int pd_backward_ex(struct pd_tensor *loss, const struct pd_grad_options *opts);

/* Gradients of sum(outputs[i] * grad_outputs[i]) w.r.t. inputs, written to
 * grads[n_in] (new tensors in the current scope). .grad fields are not
 * touched. opts may be NULL (defaults above); for example
 *
 *     pd_grad(&y, 1, &x, 1, &dx, &(struct pd_grad_options){.create_graph = 1});
 */
int pd_grad(struct pd_tensor *const *outputs, int n_out, struct pd_tensor *const *inputs, int n_in,
            struct pd_tensor **grads, const struct pd_grad_options *opts);

/* Grad mode (per thread). The guards are entries of the thread's mode stack
 * (shared with autocast and the executor): begin returns a token (> 0; a
 * negative status if the stack cannot grow), end takes it and restores the
 * mode the begin replaced. Guards nest strictly: end fails with PD_ERR_STATE,
 * popping nothing, when its token is not the innermost open mode (a guard
 * begun later is still open, or the token was ended already).
 *
 *     int tok = pd_no_grad_begin();
 *     ...                                  // ops record no graph
 *     pd_grad_mode_end(tok);
 *
 * pd_set_grad_enabled changes the current mode without a guard (returns the
 * previous one); the innermost open guard's end restores its own state. */
int pd_is_grad_enabled(void);
int pd_set_grad_enabled(int enabled);
int pd_no_grad_begin(void);
int pd_enable_grad_begin(void);
int pd_grad_mode_end(int token);

/* Hook on the gradient flowing into t. It may return a replacement (a new
 * tensor) or NULL to keep the gradient as it is. */
typedef struct pd_tensor *(*pd_grad_hook_fn)(struct pd_tensor *grad, void *ctx);
int pd_tensor_register_hook(struct pd_tensor *t, pd_grad_hook_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
