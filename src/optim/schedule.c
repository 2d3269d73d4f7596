/* paddle.c — learning-rate schedules: a plain struct evaluated at a step.
 *
 * Step s is 0-based (the lr of the (s+1)-th optimizer step). Warmup is
 * base * (s + 1) / W for s < W — torch's LinearLR(start_factor = 1/W,
 * total_iters = W - 1) — so the first step is not wasted at lr 0, and the
 * decay then starts from base at s = W and reaches min_lr at s = total_steps
 * (CosineAnnealingLR(T_max = T - W, eta_min) or LinearLR(1, min/base, T - W)),
 * staying at min_lr after that.
 */
#include <math.h>

#include "core/internal.h"
#include "pd/optim.h"

int pd_lr_schedule_validate(const struct pd_lr_schedule *s)
{
    if (!s) return pdi_errorf(PD_ERR_NULL, "lr_schedule: NULL schedule");
    if ((unsigned)s->kind >= PD_LR_KIND_COUNT) return pdi_errorf(PD_ERR_INVALID, "lr_schedule: unknown kind %d", (int)s->kind);
    if (!(s->base_lr >= 0) || !isfinite(s->base_lr))
        return pdi_errorf(PD_ERR_INVALID, "lr_schedule: invalid base_lr %g", s->base_lr);
    if (s->kind == PD_LR_WARMUP_COSINE || s->kind == PD_LR_WARMUP_LINEAR) {
        if (!(s->min_lr >= 0 && s->min_lr <= s->base_lr))
            return pdi_errorf(PD_ERR_INVALID, "lr_schedule: min_lr %g must be in [0, base_lr %g]", s->min_lr, s->base_lr);
        if (s->warmup_steps < 0 || s->total_steps < s->warmup_steps)
            return pdi_errorf(PD_ERR_INVALID, "lr_schedule: need 0 <= warmup_steps (%lld) <= total_steps (%lld)",
                              (long long)s->warmup_steps, (long long)s->total_steps);
    }
    if (s->kind == PD_LR_STEP) {
        if (s->step_size < 1) return pdi_errorf(PD_ERR_INVALID, "lr_schedule: step_size must be >= 1, got %lld", (long long)s->step_size);
        if (!(s->gamma > 0) || !isfinite(s->gamma)) return pdi_errorf(PD_ERR_INVALID, "lr_schedule: invalid gamma %g", s->gamma);
    }
    return PD_OK;
}

double pd_lr_schedule_at(const struct pd_lr_schedule *s, int64_t step)
{
    if (pd_lr_schedule_validate(s)) return NAN;
    if (step < 0) {
        pdi_errorf(PD_ERR_INVALID, "lr_schedule: negative step %lld", (long long)step);
        return NAN;
    }
    switch (s->kind) {
    case PD_LR_CONSTANT: return s->base_lr;
    case PD_LR_STEP: return s->base_lr * pow(s->gamma, (double)(step / s->step_size));
    default: break;
    }
    int64_t w = s->warmup_steps, t = s->total_steps;
    if (step < w) return s->base_lr * (double)(step + 1) / (double)w;
    if (step >= t) return t > w ? s->min_lr : s->base_lr;
    double progress = (double)(step - w) / (double)(t - w);
    double f = s->kind == PD_LR_WARMUP_COSINE ? 0.5 * (1.0 + cos(M_PI * progress)) : 1.0 - progress;
    return s->min_lr + (s->base_lr - s->min_lr) * f;
}
