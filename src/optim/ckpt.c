/* paddle.c — optimizer checkpoints: export the state into a state dict and
 * restore it exactly.
 *
 * Layout under a prefix P (e.g. "optim."):
 *   tensors   P exp_avg.<param>, P exp_avg_sq.<param>, P max_exp_avg_sq.<param>,
 *             P momentum_buffer.<param>, P master.<param>   (f32, param's shape)
 *   metadata  P kind ("sgd" | "adam" | "adamw"), P step (calls of step),
 *             P accum (accumulate's counter), P lr.<group>,
 *             P step.<param> (updates applied to that parameter)
 * Exported tensors are references to the live state (no copy); loading copies
 * values into the optimizer's own tensors, so a state dict read from a file
 * can be dropped afterwards. Loading validates everything first and writes
 * nothing on error.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/file.h"
#include "core/internal.h"
#include "optim/optim_internal.h"

#define N_SLOTS 4
static const char *slot_names[N_SLOTS + 1] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "master"};

/* The state tensor of p for slot s (s == N_SLOTS: master), or NULL. */
static struct pd_tensor *slot_tensor(const struct pdi_oparam *p, enum pd_optim_kind kind, int s)
{
    switch (s) {
    case 0: return kind != PD_OPTIM_SGD ? p->m : NULL;
    case 1: return p->v;
    case 2: return p->vmax;
    case 3: return kind == PD_OPTIM_SGD ? p->m : NULL;
    default: return p->master;
    }
}

static char *key(const char *prefix, const char *a, const char *b)
{
    size_t n = strlen(prefix) + strlen(a) + (b ? strlen(b) + 1 : 0) + 1;
    char *k = pdi_malloc(n);
    if (!k) return pdi_error(PD_ERR_NOMEM, "optimizer state: out of memory");
    snprintf(k, n, "%s%s%s%s", prefix, a, b ? "." : "", b ? b : "");
    return k;
}

static int set_meta(struct pd_state_dict *sd, const char *prefix, const char *a, const char *b, const char *val)
{
    char *k = key(prefix, a, b);
    if (!k) return PD_ERR_NOMEM;
    int rc = pd_state_dict_set_meta(sd, k, val);
    free(k);
    return rc;
}

int pd_optimizer_state_dict(const struct pd_optimizer *o, struct pd_state_dict *sd, const char *prefix)
{
    if (!o || !sd) return pdi_errorf(PD_ERR_NULL, "optimizer_state_dict: NULL argument");
    if (!prefix) prefix = "";
    char buf[64];
    int rc = set_meta(sd, prefix, "kind", NULL, pdi_optim_kind_name(o->cfg.kind));
    snprintf(buf, sizeof buf, "%" PRId64, o->step_count);
    if (!rc) rc = set_meta(sd, prefix, "step", NULL, buf);
    snprintf(buf, sizeof buf, "%d", o->micro);
    if (!rc) rc = set_meta(sd, prefix, "accum", NULL, buf);
    for (int g = 0; g < o->ng && !rc; g++) {
        char gs[16];
        snprintf(gs, sizeof gs, "%d", g);
        snprintf(buf, sizeof buf, "%.17g", o->groups[g].lr);
        rc = set_meta(sd, prefix, "lr", gs, buf);
    }
    for (int i = 0; i < o->n && !rc; i++) {
        const struct pdi_oparam *p = &o->params[i];
        snprintf(buf, sizeof buf, "%" PRId64, p->step);
        rc = set_meta(sd, prefix, "step", p->name, buf);
        for (int s = 0; s <= N_SLOTS && !rc; s++) {
            struct pd_tensor *t = slot_tensor(p, o->cfg.kind, s);
            if (!t) continue;
            char *k = key(prefix, slot_names[s], p->name);
            if (!k) return PD_ERR_NOMEM;
            rc = pd_state_dict_set(sd, k, t, 1);
            free(k);
        }
    }
    return rc;
}

/* A count in decimal digits, 0 <= value <= max (no sign, no spaces). */
static int parse_count(const char *s, int64_t max, int64_t *out)
{
    if (!s || *s < '0' || *s > '9') return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < 0 || v > max) return -1;
    *out = v;
    return 0;
}

static const char *get_meta(const struct pd_state_dict *sd, const char *prefix, const char *a, const char *b)
{
    char *k = key(prefix, a, b);
    if (!k) return NULL;
    const char *v = pd_state_dict_get_meta(sd, k);
    free(k);
    return v;
}

int pd_optimizer_load_state_dict(struct pd_optimizer *o, const struct pd_state_dict *sd, const char *prefix)
{
    if (!o || !sd) return pdi_errorf(PD_ERR_NULL, "optimizer_load_state_dict: NULL argument");
    if (!prefix) prefix = "";
    const char *kind = get_meta(sd, prefix, "kind", NULL);
    if (!kind) return pdi_errorf(PD_ERR_INVALID, "optimizer_load_state_dict: no '%skind' metadata", prefix);
    if (strcmp(kind, pdi_optim_kind_name(o->cfg.kind))) {
        char q[PDI_QUOTE_BUF]; /* the file's text: quoted, so the message stays one line */
        return pdi_errorf(PD_ERR_INVALID, "optimizer_load_state_dict: checkpoint is for %s, optimizer is %s",
                          pdi_quote(kind, q, sizeof q), pdi_optim_kind_name(o->cfg.kind));
    }
    int64_t step, accum;
    if (parse_count(get_meta(sd, prefix, "step", NULL), PD_OPTIM_MAX_STEP, &step))
        return pdi_errorf(PD_ERR_INVALID, "optimizer_load_state_dict: missing or bad '%sstep' (an integer in [0, 2^53])",
                          prefix);
    if (parse_count(get_meta(sd, prefix, "accum", NULL), INT_MAX - 1, &accum))
        return pdi_errorf(PD_ERR_INVALID,
                          "optimizer_load_state_dict: missing or bad '%saccum' (an integer in [0, 2^31 - 2])", prefix);
    double *lrs = pdi_calloc((size_t)o->ng + 1, sizeof *lrs);
    int64_t *steps = pdi_calloc((size_t)o->n + 1, sizeof *steps);
    struct pd_tensor **src = pdi_calloc((size_t)o->n * (N_SLOTS + 1) + 1, sizeof *src);
    int rc = PD_OK;
    if (!lrs || !steps || !src) { rc = pdi_errorf(PD_ERR_NOMEM, "optimizer_load_state_dict: out of memory"); goto out; }
    for (int g = 0; g < o->ng && !rc; g++) {
        char gs[16];
        snprintf(gs, sizeof gs, "%d", g);
        const char *v = get_meta(sd, prefix, "lr", gs);
        char *end = NULL;
        lrs[g] = v ? strtod(v, &end) : -1;
        if (!v || !*v || *end || !(lrs[g] >= 0) || !isfinite(lrs[g]))
            rc = pdi_errorf(PD_ERR_INVALID, "optimizer_load_state_dict: missing or bad '%slr.%d' (a finite number >= 0)",
                            prefix, g);
    }
    /* check every entry before writing anything */
    for (int i = 0; i < o->n && !rc; i++) {
        const struct pdi_oparam *p = &o->params[i];
        if (parse_count(get_meta(sd, prefix, "step", p->name), PD_OPTIM_MAX_STEP, &steps[i])) {
            rc = pdi_errorf(PD_ERR_INVALID, "optimizer_load_state_dict: missing or bad '%sstep.%s' (an integer in [0, 2^53])",
                            prefix, p->name);
            break;
        }
        for (int s = 0; s <= N_SLOTS && !rc; s++) {
            struct pd_tensor *t = slot_tensor(p, o->cfg.kind, s);
            if (!t) continue;
            char *k = key(prefix, slot_names[s], p->name);
            if (!k) { rc = PD_ERR_NOMEM; break; }
            struct pd_tensor *x = pd_state_dict_get(sd, k);
            char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
            if (!x)
                rc = pdi_errorf(PD_ERR_INVALID, "optimizer_load_state_dict: missing '%s'", k);
            else if (x->ndim != t->ndim || memcmp(x->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim))
                rc = pdi_errorf(PD_ERR_INVALID, "optimizer_load_state_dict: '%s' has shape %s, expected %s", k,
                                pdi_shape_str(x->shape, x->ndim, b0, sizeof b0), pdi_shape_str(t->shape, t->ndim, b1, sizeof b1));
            else if (!pd_dtype_is_float(x->dtype))
                rc = pdi_errorf(PD_ERR_INVALID, "optimizer_load_state_dict: '%s' has dtype %s, expected a float type", k,
                                pd_dtype_name(x->dtype));
            src[i * (N_SLOTS + 1) + s] = x;
            free(k);
        }
    }
    if (rc) goto out;
    for (int i = 0; i < o->n; i++) {
        struct pdi_oparam *p = &o->params[i];
        p->step = steps[i];
        for (int s = 0; s <= N_SLOTS; s++) {
            struct pd_tensor *t = slot_tensor(p, o->cfg.kind, s), *x = src[i * (N_SLOTS + 1) + s];
            if (!t || x == t) continue; /* x == t: our own export, nothing to copy */
            int prev = pd_no_grad_begin();
            struct pd_tensor *ok = pd_copy_(t, x); /* an op: converts the dtype, bumps the version */
            pd_grad_mode_end(prev);
            if (!ok) { rc = pd_last_status(); goto out; }
        }
    }
    for (int g = 0; g < o->ng; g++) o->groups[g].lr = lrs[g];
    o->step_count = step;
    o->micro = (int)accum;
out:
    free(lrs);
    free(steps);
    free(src);
    return rc;
}
