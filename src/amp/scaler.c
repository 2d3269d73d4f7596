/* paddle.c — the fp16 gradient scaler (torch.cuda.amp.GradScaler's rules).
 *
 * State machine per step: scale(loss) -> backward -> [unscale] -> step ->
 * update. unscale multiplies every gradient by the f32 inverse of the scale
 * (as torch does) after checking all of them for inf/NaN; when one is found
 * the gradients are left as they are (the step is skipped anyway). The
 * check and the in-place multiply are one multi-tensor op (amp_unscale,
 * src/ops/ops_optim.def) whose 0-d found_inf is read once on the host. update
 * halves (backoff) on a bad step and resets the run of good steps, or
 * doubles (growth) after growth_interval good steps in a row.
 *
 * The scaler owns nothing but its numbers; it reaches the gradients through
 * the optimizer's parameter list (src/optim/optim_internal.h).
 *
 * On distributed gradients (docs/distributed.md "f16 autocast and the
 * gradient scaler") unscale first finishes the data-parallel reductions in
 * flight, so no gradient is Partial; amp_unscale's SPMD rule then checks
 * each rank's pieces and all-reduces the flag (max) over the mesh, so every
 * rank skips the same steps and keeps the same scale.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "optim/optim_internal.h"
#include "pd/amp.h"

struct pd_grad_scaler {
    struct pd_grad_scaler_config cfg;
    double scale;
    int64_t growth_tracker; /* good steps since the last change */
    int64_t skipped;
    int unscaled;           /* unscale done in this step */
    int found_inf;
};

void pd_grad_scaler_config_default(struct pd_grad_scaler_config *c)
{
    if (!c) return;
    c->init_scale = 65536.0;
    c->growth_factor = 2.0;
    c->backoff_factor = 0.5;
    c->growth_interval = 2000;
}

struct pd_grad_scaler *pd_grad_scaler_create(const struct pd_grad_scaler_config *cfg)
{
    struct pd_grad_scaler_config d;
    pd_grad_scaler_config_default(&d);
    if (!cfg) cfg = &d;
    if (!(cfg->init_scale > 0) || !isfinite(cfg->init_scale))
        return pdi_error(PD_ERR_INVALID, "grad_scaler: init_scale must be a positive number, got %g", cfg->init_scale);
    if (!(cfg->growth_factor > 1) || !isfinite(cfg->growth_factor))
        return pdi_error(PD_ERR_INVALID, "grad_scaler: growth_factor must be > 1, got %g", cfg->growth_factor);
    if (!(cfg->backoff_factor > 0 && cfg->backoff_factor < 1))
        return pdi_error(PD_ERR_INVALID, "grad_scaler: backoff_factor must be in (0, 1), got %g", cfg->backoff_factor);
    if (cfg->growth_interval < 1)
        return pdi_error(PD_ERR_INVALID, "grad_scaler: growth_interval must be >= 1, got %d", cfg->growth_interval);
    struct pd_grad_scaler *s = pdi_calloc(1, sizeof *s);
    if (!s) return pdi_error(PD_ERR_NOMEM, "grad_scaler: out of memory");
    s->cfg = *cfg;
    s->scale = cfg->init_scale;
    return s;
}

void pd_grad_scaler_destroy(struct pd_grad_scaler *s) { free(s); }

struct pd_tensor *pd_grad_scaler_scale(struct pd_grad_scaler *s, struct pd_tensor *loss)
{
    if (!s) return pdi_error(PD_ERR_NULL, "grad_scaler_scale: NULL scaler");
    return pd_scale(loss, s->scale);
}

/* One amp_unscale op over every gradient: the owned ones (pdi_grad_owned)
 * first, scaled in place when all are finite; the others are only checked
 * by the op and, when all are finite, replaced by scaled copies here. */
static int unscale_grads(struct pd_optimizer *o, double inv, int *found)
{
    struct pd_tensor **in = pdi_malloc(sizeof *in * (size_t)(2 * o->n + 1));
    if (!in) return pdi_errorf(PD_ERR_NOMEM, "grad_scaler_unscale: out of memory");
    struct pd_tensor **copy = in + o->n; /* leaves of the checked-only gradients */
    int n_own = 0, n_copy = 0, rc = PD_OK;
    for (int i = 0; i < o->n; i++) {
        struct pd_tensor *g = o->params[i].p->grad;
        if (!g) continue;
        if (pdi_grad_owned(g)) in[n_own++] = g;
        else copy[n_copy++] = o->params[i].p;
    }
    int prev = pd_no_grad_begin();
    int scope_tok = pd_scope_begin(); /* contiguous copies of strided gradients, found_inf */
    int n_in = n_own;
    for (int i = 0; i < n_copy && !rc; i++) {
        struct pd_tensor *g = copy[i]->grad;
        if (!pd_tensor_is_contiguous(g) && !(g = pd_contiguous(g))) rc = pd_last_status();
        in[n_in++] = g;
    }
    *found = 0;
    if (!rc && n_in) {
        struct pd_tensor *out[1];
        struct pdi_call c = {.op = PD_OP_amp_unscale, .n_in = n_in, .n_out = 1, .in = in, .out = out};
        c.a.amp_unscale.inv_scale = inv;
        c.a.amp_unscale.n_inplace = n_own;
        rc = pdi_dispatch(&c);
        double f = 0;
        if (!rc) rc = pdi_host_scalar(out[0], "grad_scaler", &f); /* the one host read */
        *found = f != 0;
    }
    pd_scope_end(scope_tok);
    pd_grad_mode_end(prev);
    for (int i = 0; i < n_copy && !rc && !*found; i++) rc = pdi_grad_scale_copy(copy[i], inv);
    free(in);
    return rc;
}

int pd_grad_scaler_unscale(struct pd_grad_scaler *s, struct pd_optimizer *o)
{
    if (!s || !o) return pdi_errorf(PD_ERR_NULL, "grad_scaler_unscale: NULL argument");
    if (s->unscaled)
        return pdi_errorf(PD_ERR_STATE, "grad_scaler_unscale: already called since the last update");
    /* reductions in flight (pd_dp_attach) first, as the optimizer's step
     * and clipping do: the gradients are then the reduced sums (never
     * Partial), each unscaled once and checked whole; unscaling the pieces
     * before would be undone when the reduction replaces them */
    if (pdi_dist_hooks && pdi_dist_hooks->sync_grads()) return pd_last_status();
    int found = 0;
    double inv = (double)(float)(1.0 / s->scale); /* torch: the f32 reciprocal */
    int rc = unscale_grads(o, inv, &found);
    if (rc) return rc;
    s->found_inf = found;
    s->unscaled = 1;
    return PD_OK;
}

int pd_grad_scaler_step(struct pd_grad_scaler *s, struct pd_optimizer *o)
{
    if (!s || !o) return pdi_errorf(PD_ERR_NULL, "grad_scaler_step: NULL argument");
    if (!s->unscaled) {
        int rc = pd_grad_scaler_unscale(s, o);
        if (rc) return rc;
    }
    if (s->found_inf) return 0;
    int rc = pd_optimizer_step(o);
    return rc ? rc : 1;
}

int pd_grad_scaler_update(struct pd_grad_scaler *s)
{
    if (!s) return pdi_errorf(PD_ERR_NULL, "grad_scaler_update: NULL scaler");
    if (!s->unscaled)
        return pdi_errorf(PD_ERR_STATE, "grad_scaler_update: no unscale or step since the last update");
    if (s->found_inf) {
        s->scale *= s->cfg.backoff_factor;
        s->growth_tracker = 0;
        s->skipped++;
    } else if (++s->growth_tracker >= s->cfg.growth_interval) { /* >=: a restored tracker may exceed it */
        s->scale *= s->cfg.growth_factor;
        s->growth_tracker = 0;
    }
    s->unscaled = 0;
    s->found_inf = 0;
    return PD_OK;
}

double pd_grad_scaler_get_scale(const struct pd_grad_scaler *s) { return s ? s->scale : NAN; }
int pd_grad_scaler_found_inf(const struct pd_grad_scaler *s) { return s ? s->found_inf : 0; }
int64_t pd_grad_scaler_skipped_steps(const struct pd_grad_scaler *s) { return s ? s->skipped : 0; }

static int meta_key(char *buf, size_t n, const char *prefix, const char *k)
{
    int w = snprintf(buf, n, "%s%s", prefix ? prefix : "", k);
    return w < 0 || (size_t)w >= n ? pdi_errorf(PD_ERR_INVALID, "grad_scaler: prefix too long") : PD_OK;
}

int pd_grad_scaler_state_dict(const struct pd_grad_scaler *s, struct pd_state_dict *sd, const char *prefix)
{
    if (!s || !sd) return pdi_errorf(PD_ERR_NULL, "grad_scaler_state_dict: NULL argument");
    char k[256], v[64];
    int rc = meta_key(k, sizeof k, prefix, "scale");
    snprintf(v, sizeof v, "%.17g", s->scale);
    if (!rc) rc = pd_state_dict_set_meta(sd, k, v);
    if (!rc) rc = meta_key(k, sizeof k, prefix, "growth_tracker");
    snprintf(v, sizeof v, "%" PRId64, s->growth_tracker);
    if (!rc) rc = pd_state_dict_set_meta(sd, k, v);
    if (!rc) rc = meta_key(k, sizeof k, prefix, "skipped");
    snprintf(v, sizeof v, "%" PRId64, s->skipped);
    if (!rc) rc = pd_state_dict_set_meta(sd, k, v);
    return rc;
}

/* A count in decimal digits, 0 <= value <= 2^53 (no sign, no spaces, no
 * exponent: a double such as 1e300 is refused, never cast). */
static int parse_count(const char *v, int64_t *out)
{
    if (!v || *v < '0' || *v > '9') return -1;
    errno = 0;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < 0 || x > PD_GRAD_SCALER_MAX_COUNT) return -1;
    *out = x;
    return 0;
}

int pd_grad_scaler_load_state_dict(struct pd_grad_scaler *s, const struct pd_state_dict *sd, const char *prefix)
{
    if (!s || !sd) return pdi_errorf(PD_ERR_NULL, "grad_scaler_load_state_dict: NULL argument");
    static const char *names[3] = {"scale", "growth_tracker", "skipped"};
    double scale = NAN;
    int64_t count[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        char k[256], *end = NULL;
        if (meta_key(k, sizeof k, prefix, names[i])) return PD_ERR_INVALID;
        const char *v = pd_state_dict_get_meta(sd, k);
        int bad;
        if (i == 0) {
            scale = v && *v ? strtod(v, &end) : NAN;
            bad = !v || !*v || *end || !isfinite(scale) || !(scale > 0);
        } else {
            bad = parse_count(v, &count[i]);
        }
        if (bad)
            return pdi_errorf(PD_ERR_INVALID, "grad_scaler_load_state_dict: missing or bad '%s' (%s)", k,
                              i == 0 ? "a finite number > 0" : "an integer in [0, 2^53]");
    }
    s->scale = scale;
    s->growth_tracker = count[1];
    s->skipped = count[2];
    s->unscaled = 0;
    s->found_inf = 0;
    return PD_OK;
}
