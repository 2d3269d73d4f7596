/* paddle.c — mixed precision: autocast and the fp16 gradient scaler.
 *
 * Autocast (per thread). Between pd_autocast_begin(PD_BF16) and
 * pd_autocast_end, the dispatcher's autocast stage casts each op's floating
 * inputs (f64 is left alone) by the op's policy:
 *   LOWER  to the autocast dtype; the op runs and returns in bf16 (f16):
 *          matmul (so linear, bmm, dot, outer), conv2d, sdpa
 *   F32    to f32; the op returns f32: softmax, log_softmax, nll_loss (so
 *          cross_entropy), layer_norm, rms_norm, group_norm, sum, mean, prod, cumsum,
 *          cumprod, norm, var, std, logsumexp, exp, expm1, log, log1p, log2,
 *          pow, pow_scalar, reciprocal, rsqrt, tan, softplus
 *   FOLLOW no cast: the op promotes its inputs as usual (bf16 + f32 -> f32)
 * In-place ops are never cast. The casts are ordinary pd_cast ops, so
 * autograd carries the gradients back to the f32 parameters (whose .grad is
 * f32). Policies are global and may be overridden by op name. On
 * distributed tensors each rank casts its own piece, before the op's SPMD
 * rule (docs/distributed.md, "bf16 autocast").
 *
 * Gradient scaler (for f16, whose range is small): scale the loss, unscale
 * the gradients before clipping, skip the step when a gradient is inf/NaN
 * and back the scale off, grow it after growth_interval good steps —
 * torch.cuda.amp.GradScaler's rules.
 *
 *     struct pd_tensor *loss = ...;                  // forward under autocast
 *     pd_backward(pd_grad_scaler_scale(sc, loss), NULL, 0);
 *     pd_grad_scaler_unscale(sc, opt);               // before clipping
 *     pd_optimizer_clip_grad_norm(opt, 1.0);
 *     pd_grad_scaler_step(sc, opt);                  // skipped on inf/NaN
 *     pd_grad_scaler_update(sc);
 *     pd_optimizer_zero_grad(opt);
 */
#ifndef PD_AMP_H
#define PD_AMP_H

#include "pd/optim.h"
#include "pd/state.h"
#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- autocast ----------------------------------------------------------- */
enum pd_autocast_policy {
    PD_AUTOCAST_FOLLOW = 0,
    PD_AUTOCAST_LOWER = 1,
    PD_AUTOCAST_F32 = 2,
    PD_AUTOCAST_POLICY_COUNT
};
/* Turns autocast to dt (PD_BF16 or PD_F16) on this thread. Returns a token
 * (> 0) for pd_autocast_end, which restores the previous state; a negative
 * status for another dtype. The guard is an entry of the thread's mode
 * stack (shared with grad mode and the executor): guards nest strictly, and
 * pd_autocast_end fails with PD_ERR_STATE, popping nothing, when its token
 * is not the innermost open mode. Returns status. */
int pd_autocast_begin(enum pd_dtype dt);
int pd_autocast_end(int token);
/* The current autocast dtype, or -1 when off. */
int pd_autocast_dtype(void);
/* Override the policy of an op by its table name ("matmul", "softmax"...).
 * PD_ERR_INVALID for an unknown name or policy. Affects every thread. */
int pd_autocast_set_op_policy(const char *op, enum pd_autocast_policy policy);
/* The policy of an op, or a negative status for an unknown name. */
int pd_autocast_get_op_policy(const char *op);
/* Back to the documented lists. */
void pd_autocast_reset_policies(void);

/* ---- gradient scaler ---------------------------------------------------- */
struct pd_grad_scaler_config {
    double init_scale;     /* 65536 (2^16) */
    double growth_factor;  /* 2 */
    double backoff_factor; /* 0.5 */
    int growth_interval;   /* 2000 good steps between growths */
};
void pd_grad_scaler_config_default(struct pd_grad_scaler_config *cfg);

struct pd_grad_scaler;
/* cfg NULL: the defaults. NULL with an error on an invalid config. */
struct pd_grad_scaler *pd_grad_scaler_create(const struct pd_grad_scaler_config *cfg);
void pd_grad_scaler_destroy(struct pd_grad_scaler *s);   /* NULL is a no-op */
/* loss * scale (a new tensor in the current scope). */
struct pd_tensor *pd_grad_scaler_scale(struct pd_grad_scaler *s, struct pd_tensor *loss);
/* Divides the gradients of opt's parameters by the scale and records whether
 * any is inf/NaN. At most once between two updates (PD_ERR_STATE). */
int pd_grad_scaler_unscale(struct pd_grad_scaler *s, struct pd_optimizer *opt);
/* Unscales if not done yet; steps opt unless a gradient was inf/NaN.
 * Returns 1 if it stepped, 0 if it skipped, negative on error. */
int pd_grad_scaler_step(struct pd_grad_scaler *s, struct pd_optimizer *opt);
/* After each step: back off on inf/NaN, grow after growth_interval good steps. */
int pd_grad_scaler_update(struct pd_grad_scaler *s);
double pd_grad_scaler_get_scale(const struct pd_grad_scaler *s);
int pd_grad_scaler_found_inf(const struct pd_grad_scaler *s);   /* in the current step */
int64_t pd_grad_scaler_skipped_steps(const struct pd_grad_scaler *s);
/* Checkpoints: metadata <prefix>scale, <prefix>growth_tracker, <prefix>skipped.
 * load accepts a scale that is a finite number > 0 and counts that are
 * decimal integers in [0, PD_GRAD_SCALER_MAX_COUNT]; anything else is
 * PD_ERR_INVALID and leaves the scaler unchanged (docs/reliability.md). */
#define PD_GRAD_SCALER_MAX_COUNT ((int64_t)1 << 53)
int pd_grad_scaler_state_dict(const struct pd_grad_scaler *s, struct pd_state_dict *sd, const char *prefix);
int pd_grad_scaler_load_state_dict(struct pd_grad_scaler *s, const struct pd_state_dict *sd, const char *prefix);

#ifdef __cplusplus
}
#endif
#endif
