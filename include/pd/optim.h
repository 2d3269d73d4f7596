/* paddle.c — optimizers (SGD, Adam, AdamW), learning-rate schedules,
 * gradient clipping and gradient accumulation.
 *
 * Semantics follow torch.optim (1.13, single-tensor path): a parameter whose
 * .grad is NULL is skipped and its step count is not advanced; Adam adds
 * weight decay to the gradient, AdamW decays the parameter (p *= 1 - lr*wd)
 * before the update; SGD's momentum buffer starts as a copy of the first
 * gradient. Each update is one fused pass over param, grad and moments
 * (OpenMP, f32 arithmetic), not a chain of ops.
 *
 * Parameters are named (they come from a state dict) and organised in
 * groups, each with its own hyperparameters. A bf16/f16 parameter gets an f32
 * master copy: the update runs on the master and the parameter receives its
 * rounding. The optimizer holds references to its parameters; moments and
 * masters are its own.
 *
 * Typical step:
 *     pd_backward(loss, NULL, 0);
 *     pd_clip_grad_norm(params, 1.0);
 *     pd_optimizer_set_lr(opt, -1, pd_lr_schedule_at(&sched, step));
 *     pd_optimizer_step(opt);
 *     pd_optimizer_zero_grad(opt);
 */
#ifndef PD_OPTIM_H
#define PD_OPTIM_H

#include "pd/state.h"
#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values reach checkpoints (metadata "optim.kind"): append only. */
enum pd_optim_kind { PD_OPTIM_SGD = 0, PD_OPTIM_ADAM = 1, PD_OPTIM_ADAMW = 2, PD_OPTIM_KIND_COUNT };

/* Hyperparameters of an optimizer and of each group. Fields that do not
 * apply to the kind are ignored (betas for SGD, momentum for Adam). */
struct pd_optim_config {
    enum pd_optim_kind kind;
    double lr;
    double weight_decay;
    double beta1, beta2, eps; /* Adam, AdamW */
    int amsgrad;              /* Adam, AdamW: keep the max of exp_avg_sq */
    double momentum;          /* SGD */
    double dampening;         /* SGD */
    int nesterov;             /* SGD (needs momentum > 0 and dampening == 0) */
};
/* torch.optim's defaults for kind: lr 1e-3; Adam(W) betas (0.9, 0.999),
 * eps 1e-8, weight_decay 0 (AdamW 1e-2); SGD momentum 0, dampening 0. */
void pd_optim_config_default(struct pd_optim_config *cfg, enum pd_optim_kind kind);
/* Checks ranges (lr >= 0, 0 <= beta < 1, eps >= 0, wd >= 0, nesterov
 * conditions). PD_OK or PD_ERR_INVALID with a message. */
int pd_optim_config_validate(const struct pd_optim_config *cfg);

struct pd_optimizer;
/* An optimizer with no parameters yet; cfg is the default for its groups. */
struct pd_optimizer *pd_optimizer_create(const struct pd_optim_config *cfg);
void pd_optimizer_destroy(struct pd_optimizer *opt);   /* NULL is a no-op */

/* Adds every tensor of params (names are kept; the tensors are referenced,
 * not copied) as one group. group_cfg NULL uses the optimizer's config; its
 * kind must match the optimizer's. Parameters must be contiguous floating
 * point leaves, and a name may be in one group only. Returns the group index
 * or a negative status (nothing added). */
int pd_optimizer_add_group(struct pd_optimizer *opt, const struct pd_state_dict *params,
                           const struct pd_optim_config *group_cfg);
/* The two standard groups (GPT/Llama practice): group 0 decays
 * (weight_decay) every tensor of 2 or more dims (matrices, embeddings);
 * group 1 has weight_decay 0 for 0-d and 1-d tensors (norm weights, biases).
 * Other hyperparameters come from the optimizer's config. An empty group is
 * still created, so indices are stable. Returns PD_OK or a negative status. */
int pd_optimizer_add_decay_groups(struct pd_optimizer *opt, const struct pd_state_dict *params,
                                  double weight_decay);
/* The common case in one call: an optimizer of cfg over the two standard
 * groups (cfg->weight_decay applies to group 0). NULL on error. */
struct pd_optimizer *pd_optimizer_create_for(const struct pd_optim_config *cfg, const struct pd_state_dict *params);

/* One update of every parameter that has a gradient. */
int pd_optimizer_step(struct pd_optimizer *opt);
/* pd_tensor_zero_grad on each parameter (drops .grad, like set_to_none). */
void pd_optimizer_zero_grad(struct pd_optimizer *opt);

int pd_optimizer_num_groups(const struct pd_optimizer *opt);
int pd_optimizer_num_params(const struct pd_optimizer *opt);
/* group < 0 sets every group. */
int pd_optimizer_set_lr(struct pd_optimizer *opt, int group, double lr);
double pd_optimizer_get_lr(const struct pd_optimizer *opt, int group);   /* NaN on a bad index */
/* Read or replace a group's hyperparameters (kind cannot change). */
int pd_optimizer_get_group_config(const struct pd_optimizer *opt, int group, struct pd_optim_config *cfg);
int pd_optimizer_set_group_config(struct pd_optimizer *opt, int group, const struct pd_optim_config *cfg);
/* Calls of pd_optimizer_step so far (restored by load_state_dict). */
int64_t pd_optimizer_step_count(const struct pd_optimizer *opt);

/* Checkpoints. Adds to sd, under prefix (e.g. "optim."):
 *   <prefix>exp_avg.<param>, <prefix>exp_avg_sq.<param>,
 *   <prefix>max_exp_avg_sq.<param> (amsgrad), <prefix>momentum_buffer.<param>
 *   (SGD with momentum), <prefix>master.<param> (bf16/f16 parameters) —
 * references to the live f32 state tensors, not copies — and metadata
 * <prefix>kind ("sgd", "adam", "adamw"), <prefix>step (calls of step),
 * <prefix>accum (accumulate's counter), <prefix>lr.<group> and
 * <prefix>step.<param> (updates applied to that parameter). Existing
 * entries of the same names are replaced. */
int pd_optimizer_state_dict(const struct pd_optimizer *opt, struct pd_state_dict *sd, const char *prefix);
/* Restores what state_dict wrote, exactly (bit-exact resume). Everything is
 * checked before anything is written: a missing, misshapen or out-of-range
 * entry is an error and leaves the optimizer unchanged. Accepted: step and
 * step.<param> decimal integers in [0, PD_OPTIM_MAX_STEP]; accum a decimal
 * integer in [0, INT_MAX - 1] (a counter below accumulate's k); lr.<group> a
 * finite number >= 0 (docs/reliability.md). */
#define PD_OPTIM_MAX_STEP ((int64_t)1 << 53) /* steps stay exact as the double of Adam's bias correction */
int pd_optimizer_load_state_dict(struct pd_optimizer *opt, const struct pd_state_dict *sd, const char *prefix);

/* Gradient accumulation over k micro-batches, in one line per micro-batch:
 *     pd_backward(pd_scale(loss, 1.0 / k), NULL, 0);
 *     pd_optimizer_accumulate(opt, k);
 * Counts calls; on every k-th it steps and zeroes the gradients (a counter
 * already at k - 1 or beyond, e.g. restored with a larger k, steps at once).
 * Returns 1 when it stepped, 0 when it only accumulated, negative on error. */
int pd_optimizer_accumulate(struct pd_optimizer *opt, int k);

/* ---- gradient clipping -------------------------------------------------- */
/* Global L2 norm of the gradients of the tensors in params (those without a
 * gradient are skipped), accumulated in f64. If it exceeds max_norm every
 * gradient is scaled by max_norm / (norm + 1e-6) (torch's formula). Returns
 * the norm before clipping; a non-finite norm is returned as is, with the
 * gradients left untouched (the caller should skip the step).
 * Negative max_norm or a NULL argument: returns -1 with an error set. */
double pd_clip_grad_norm(const struct pd_state_dict *params, double max_norm);
double pd_clip_grad_norm_tensors(struct pd_tensor *const *params, int n, double max_norm);
/* Over the optimizer's parameters. */
double pd_optimizer_clip_grad_norm(struct pd_optimizer *opt, double max_norm);

/* ---- learning-rate schedules ------------------------------------------ */
enum pd_lr_kind {
    PD_LR_CONSTANT = 0,      /* base_lr */
    PD_LR_WARMUP_COSINE = 1, /* linear warmup, then cosine from base_lr to min_lr at total_steps */
    PD_LR_WARMUP_LINEAR = 2, /* linear warmup, then linear from base_lr to min_lr at total_steps */
    PD_LR_STEP = 3,          /* base_lr * gamma^floor(step / step_size) */
    PD_LR_KIND_COUNT
};
struct pd_lr_schedule {
    enum pd_lr_kind kind;
    double base_lr;
    double min_lr;         /* floor of the decays (cosine, linear) */
    int64_t warmup_steps;  /* step s < warmup_steps: base_lr * (s + 1) / warmup_steps */
    int64_t total_steps;   /* end of the decay; min_lr from there on */
    int64_t step_size;     /* PD_LR_STEP */
    double gamma;          /* PD_LR_STEP */
};
/* The learning rate for optimizer step `step` (0-based: the first step
 * uses pd_lr_schedule_at(s, 0)). Matches torch's LinearLR(1/W, 1, W-1)
 * followed by CosineAnnealingLR(T-W, min_lr) or LinearLR(1, min/base, T-W),
 * and StepLR. NaN for an invalid schedule (see validate). */
double pd_lr_schedule_at(const struct pd_lr_schedule *s, int64_t step);
int pd_lr_schedule_validate(const struct pd_lr_schedule *s);

#ifdef __cplusplus
}
#endif
#endif
