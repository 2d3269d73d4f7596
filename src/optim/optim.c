/* paddle.c — optimizers: SGD, Adam, AdamW with torch.optim semantics.
 *
 * A step is one fused multi-tensor op (sgd_update or adam_update, see
 * src/ops/ops_optim.def) per set of parameters sharing a group and a step
 * count, dispatched like every other op: observers and tracers see it, and
 * the dispatcher bumps the versions of the tensors it writes. Arithmetic is
 * f32 (the moments are f32 whatever the parameter's dtype); the per-step
 * scalars (bias corrections, step size) are computed here in double and
 * passed as attributes, which the kernels round once, as torch does with
 * Python floats (kernels: src/kernels/{cpu,ref}/optim.c).
 *
 * Ownership: the optimizer holds a reference to each parameter, and owns its
 * state tensors (moments, f32 masters of bf16/f16 parameters), created
 * outside any scope by ops (zeros, cast). State is allocated eagerly when a
 * group is added (or when set_group_config turns amsgrad/momentum on), so the
 * set of state tensors is known before the first step and a checkpoint of a
 * fresh optimizer has the same entries as one of a trained optimizer.
 *
 * Invariants: every parameter is a contiguous floating-point (f32, bf16,
 * f16) leaf; a parameter name is in one group only; per-parameter step
 * counts advance only when the parameter had a gradient (torch semantics).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "optim/optim_internal.h"

/* ---- configs ------------------------------------------------------------ */
static const char *kind_names[PD_OPTIM_KIND_COUNT] = {"sgd", "adam", "adamw"};

void pd_optim_config_default(struct pd_optim_config *cfg, enum pd_optim_kind kind)
{
    if (!cfg) return;
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->lr = 1e-3;
    cfg->beta1 = 0.9;
    cfg->beta2 = 0.999;
    cfg->eps = 1e-8;
    cfg->weight_decay = kind == PD_OPTIM_ADAMW ? 1e-2 : 0.0;
}

int pd_optim_config_validate(const struct pd_optim_config *c)
{
    if (!c) return pdi_errorf(PD_ERR_NULL, "optimizer: NULL config");
    if ((unsigned)c->kind >= PD_OPTIM_KIND_COUNT)
        return pdi_errorf(PD_ERR_INVALID, "optimizer: unknown kind %d", (int)c->kind);
    if (!(c->lr >= 0) || !isfinite(c->lr)) return pdi_errorf(PD_ERR_INVALID, "optimizer: invalid lr %g", c->lr);
    if (!(c->weight_decay >= 0) || !isfinite(c->weight_decay))
        return pdi_errorf(PD_ERR_INVALID, "optimizer: invalid weight_decay %g", c->weight_decay);
    if (c->kind == PD_OPTIM_SGD) {
        if (!(c->momentum >= 0) || !isfinite(c->momentum))
            return pdi_errorf(PD_ERR_INVALID, "sgd: invalid momentum %g", c->momentum);
        if (!(c->dampening >= 0 && c->dampening <= 1))
            return pdi_errorf(PD_ERR_INVALID, "sgd: invalid dampening %g (expected 0..1)", c->dampening);
        if (c->nesterov && (c->momentum <= 0 || c->dampening != 0))
            return pdi_errorf(PD_ERR_INVALID, "sgd: nesterov needs momentum > 0 and dampening 0");
    } else {
        if (!(c->beta1 >= 0 && c->beta1 < 1)) return pdi_errorf(PD_ERR_INVALID, "%s: invalid beta1 %g (expected [0, 1))", kind_names[c->kind], c->beta1);
        if (!(c->beta2 >= 0 && c->beta2 < 1)) return pdi_errorf(PD_ERR_INVALID, "%s: invalid beta2 %g (expected [0, 1))", kind_names[c->kind], c->beta2);
        if (!(c->eps >= 0) || !isfinite(c->eps)) return pdi_errorf(PD_ERR_INVALID, "%s: invalid eps %g", kind_names[c->kind], c->eps);
    }
    return PD_OK;
}

const char *pdi_optim_kind_name(enum pd_optim_kind k)
{
    return (unsigned)k < PD_OPTIM_KIND_COUNT ? kind_names[k] : "?";
}

/* ---- lifetime ------------------------------------------------------------ */
struct pd_optimizer *pd_optimizer_create(const struct pd_optim_config *cfg)
{
    if (pd_optim_config_validate(cfg)) return NULL;
    struct pd_optimizer *o = pdi_calloc(1, sizeof *o);
    if (!o) return pdi_error(PD_ERR_NOMEM, "optimizer: out of memory");
    o->cfg = *cfg;
    return o;
}

static void param_free(struct pdi_oparam *p)
{
    free(p->name);
    pd_tensor_release(p->p);
    pd_tensor_release(p->master);
    pd_tensor_release(p->m);
    pd_tensor_release(p->v);
    pd_tensor_release(p->vmax);
}

void pd_optimizer_destroy(struct pd_optimizer *o)
{
    if (!o) return;
    for (int i = 0; i < o->n; i++) param_free(&o->params[i]);
    free(o->params);
    free(o->groups);
    free(o);
}

/* An f32 tensor of t's shape outside every scope (ours): zeros, or t's
 * values when copy. Made by ops, so observers see the state's creation. */
static struct pd_tensor *state_new(struct pd_tensor *t, int copy)
{
    int prev = pd_no_grad_begin();
    int scope_tok = pd_scope_begin();
    struct pd_tensor *s = copy ? pd_cast(t, PD_F32) : pd_zeros(t->shape, t->ndim, PD_F32);
    if (s) pd_tensor_retain(s);
    pd_scope_end(scope_tok);
    pd_grad_mode_end(prev);
    return s;
}

/* Allocate the state tensors the group's config needs and p lacks. */
static int ensure_state(struct pdi_oparam *p, const struct pd_optim_config *c)
{
    if (p->p->dtype != PD_F32 && !p->master && !(p->master = state_new(p->p, 1))) return pd_last_status();
    int need_m = c->kind != PD_OPTIM_SGD || c->momentum != 0;
    int need_v = c->kind != PD_OPTIM_SGD;
    int need_vmax = need_v && c->amsgrad;
    if (need_m && !p->m && !(p->m = state_new(p->p, 0))) return pd_last_status();
    if (need_v && !p->v && !(p->v = state_new(p->p, 0))) return pd_last_status();
    if (need_vmax && !p->vmax && !(p->vmax = state_new(p->p, 0))) return pd_last_status();
    return PD_OK;
}

static int find_param(const struct pd_optimizer *o, const char *name)
{
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->params[i].name, name)) return i;
    return -1;
}

static int check_param(const struct pd_optimizer *o, const char *name, const struct pd_tensor *t)
{
    if (!t) return pdi_errorf(PD_ERR_NULL, "optimizer: parameter '%s' is NULL", name);
    if (t->dtype != PD_F32 && t->dtype != PD_BF16 && t->dtype != PD_F16)
        return pdi_errorf(PD_ERR_INVALID, "optimizer: parameter '%s' has dtype %s; expected f32, bf16 or f16", name,
                          pd_dtype_name(t->dtype));
    if (!pd_tensor_is_contiguous(t))
        return pdi_errorf(PD_ERR_INVALID, "optimizer: parameter '%s' is not contiguous", name);
    if (t->grad_fn) return pdi_errorf(PD_ERR_INVALID, "optimizer: parameter '%s' is not a leaf", name);
    if (find_param(o, name) >= 0)
        return pdi_errorf(PD_ERR_INVALID, "optimizer: parameter '%s' is already in a group", name);
    return PD_OK;
}

/* Adds the entries of params selected by filter (NULL: all) as group g. */
static int add_params(struct pd_optimizer *o, const struct pd_state_dict *params, int g, int (*filter)(const struct pd_tensor *))
{
    int n = pd_state_dict_size(params), first = o->n;
    for (int i = 0; i < n; i++) {
        const char *name = pd_state_dict_name(params, i);
        struct pd_tensor *t = pd_state_dict_tensor(params, i);
        if (filter && t && !filter(t)) continue;
        int rc = check_param(o, name, t);
        if (rc) goto fail;
        if (o->n == o->cap) {
            int nc = o->cap ? 2 * o->cap : 16;
            struct pdi_oparam *np = pdi_realloc(o->params, sizeof *np * (size_t)nc);
            if (!np) { rc = pdi_errorf(PD_ERR_NOMEM, "optimizer: out of memory"); goto fail; }
            o->params = np;
            o->cap = nc;
        }
        struct pdi_oparam *p = &o->params[o->n];
        memset(p, 0, sizeof *p);
        p->name = pdi_strdup(name);
        p->group = g;
        p->p = t;
        pd_tensor_retain(t);
        o->n++;
        if (!p->name) { rc = pdi_errorf(PD_ERR_NOMEM, "optimizer: out of memory"); goto fail; }
        if ((rc = ensure_state(p, &o->groups[g]))) goto fail;
        continue;
    fail:
        while (o->n > first) param_free(&o->params[--o->n]);
        return rc;
    }
    return PD_OK;
}

static int new_group(struct pd_optimizer *o, const struct pd_optim_config *c)
{
    if (o->ng == o->capg) {
        int nc = o->capg ? 2 * o->capg : 4;
        struct pd_optim_config *ng = pdi_realloc(o->groups, sizeof *ng * (size_t)nc);
        if (!ng) return pdi_errorf(PD_ERR_NOMEM, "optimizer: out of memory");
        o->groups = ng;
        o->capg = nc;
    }
    o->groups[o->ng] = *c;
    return o->ng++;
}

static int check_group_cfg(const struct pd_optimizer *o, const struct pd_optim_config *c)
{
    if (pd_optim_config_validate(c)) return pd_last_status();
    if (c->kind != o->cfg.kind)
        return pdi_errorf(PD_ERR_INVALID, "optimizer: group config is %s but the optimizer is %s",
                          pdi_optim_kind_name(c->kind), pdi_optim_kind_name(o->cfg.kind));
    return PD_OK;
}

int pd_optimizer_add_group(struct pd_optimizer *o, const struct pd_state_dict *params, const struct pd_optim_config *gc)
{
    if (!o || !params) return pdi_errorf(PD_ERR_NULL, "optimizer_add_group: NULL argument");
    if (!gc) gc = &o->cfg;
    if (check_group_cfg(o, gc)) return pd_last_status();
    int g = new_group(o, gc);
    if (g < 0) return g;
    int rc = add_params(o, params, g, NULL);
    if (rc) { o->ng--; return rc; }
    return g;
}

static int is_matrix(const struct pd_tensor *t) { return t->ndim >= 2; }
static int is_vector(const struct pd_tensor *t) { return t->ndim < 2; }

int pd_optimizer_add_decay_groups(struct pd_optimizer *o, const struct pd_state_dict *params, double weight_decay)
{
    if (!o || !params) return pdi_errorf(PD_ERR_NULL, "optimizer_add_decay_groups: NULL argument");
    struct pd_optim_config d = o->cfg, nd = o->cfg;
    d.weight_decay = weight_decay;
    nd.weight_decay = 0;
    if (check_group_cfg(o, &d)) return pd_last_status();
    int ng0 = o->ng, n0 = o->n;
    int g0 = new_group(o, &d);
    if (g0 < 0) return g0;
    int rc = add_params(o, params, g0, is_matrix);
    if (rc) { o->ng = ng0; return rc; }
    int g1 = new_group(o, &nd);
    if (g1 < 0) rc = g1;
    else rc = add_params(o, params, g1, is_vector);
    if (rc) {
        while (o->n > n0) param_free(&o->params[--o->n]);
        o->ng = ng0;
        return rc;
    }
    return PD_OK;
}

struct pd_optimizer *pd_optimizer_create_for(const struct pd_optim_config *cfg, const struct pd_state_dict *params)
{
    struct pd_optimizer *o = pd_optimizer_create(cfg);
    if (!o) return NULL;
    if (pd_optimizer_add_decay_groups(o, params, cfg->weight_decay)) {
        pd_optimizer_destroy(o);
        return NULL;
    }
    return o;
}

/* ---- accessors ----------------------------------------------------------- */
int pd_optimizer_num_groups(const struct pd_optimizer *o) { return o ? o->ng : 0; }
int pd_optimizer_num_params(const struct pd_optimizer *o) { return o ? o->n : 0; }
int64_t pd_optimizer_step_count(const struct pd_optimizer *o) { return o ? o->step_count : 0; }

int pd_optimizer_set_lr(struct pd_optimizer *o, int group, double lr)
{
    if (!o) return pdi_errorf(PD_ERR_NULL, "optimizer_set_lr: NULL optimizer");
    if (group >= o->ng) return pdi_errorf(PD_ERR_INVALID, "optimizer_set_lr: group %d of %d", group, o->ng);
    if (!(lr >= 0) || !isfinite(lr)) return pdi_errorf(PD_ERR_INVALID, "optimizer_set_lr: invalid lr %g", lr);
    for (int g = 0; g < o->ng; g++)
        if (group < 0 || g == group) o->groups[g].lr = lr;
    return PD_OK;
}

double pd_optimizer_get_lr(const struct pd_optimizer *o, int group)
{
    if (!o || group < 0 || group >= o->ng) {
        pdi_errorf(PD_ERR_INVALID, "optimizer_get_lr: no group %d", group);
        return NAN;
    }
    return o->groups[group].lr;
}

int pd_optimizer_get_group_config(const struct pd_optimizer *o, int group, struct pd_optim_config *cfg)
{
    if (!o || !cfg) return pdi_errorf(PD_ERR_NULL, "optimizer_get_group_config: NULL argument");
    if (group < 0 || group >= o->ng) return pdi_errorf(PD_ERR_INVALID, "optimizer_get_group_config: no group %d", group);
    *cfg = o->groups[group];
    return PD_OK;
}

int pd_optimizer_set_group_config(struct pd_optimizer *o, int group, const struct pd_optim_config *cfg)
{
    if (!o || !cfg) return pdi_errorf(PD_ERR_NULL, "optimizer_set_group_config: NULL argument");
    if (group < 0 || group >= o->ng) return pdi_errorf(PD_ERR_INVALID, "optimizer_set_group_config: no group %d", group);
    if (check_group_cfg(o, cfg)) return pd_last_status();
    for (int i = 0; i < o->n; i++)
        if (o->params[i].group == group) {
            int rc = ensure_state(&o->params[i], cfg);
            if (rc) return rc; /* what was allocated stays (zeros; harmless) */
        }
    o->groups[group] = *cfg;
    return PD_OK;
}

void pd_optimizer_zero_grad(struct pd_optimizer *o)
{
    if (!o) return;
    for (int i = 0; i < o->n; i++) pd_tensor_zero_grad(o->params[i].p);
}

/* ---- the step: multi-tensor update ops --------------------------------------- */
/* A parameter with a gradient in this step. */
struct pending {
    struct pdi_oparam *p;
    struct pd_tensor *g; /* f32, bf16 or f16, contiguous (a step-scope temporary if converted) */
    int done;            /* 1: updated; -1: in the batch update_batch is building */
};

/* p's gradient as the update ops take it; NULL when p has none (*rc stays
 * 0) or on an error (*rc set). */
static struct pd_tensor *step_grad(struct pdi_oparam *p, int *rc)
{
    struct pd_tensor *g = pd_tensor_grad(p->p);
    if (!g) return NULL;
    if (g->ndim != p->p->ndim || memcmp(g->shape, p->p->shape, sizeof(int64_t) * (size_t)g->ndim)) {
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        *rc = pdi_errorf(PD_ERR_STATE, "optimizer: gradient of '%s' has shape %s, parameter %s", p->name,
                         pdi_shape_str(g->shape, g->ndim, b0, sizeof b0), pdi_shape_str(p->p->shape, p->p->ndim, b1, sizeof b1));
        return NULL;
    }
    if (!pd_dtype_is_float(g->dtype) || g->dtype == PD_F64) {
        /* f64 grads of an f32 parameter: convert (rare; keeps the kernel f32) */
        g = pd_cast(g, PD_F32);
    }
    if (g && !pd_tensor_is_contiguous(g)) g = pd_contiguous(g);
    if (!g) *rc = pd_last_status();
    return g;
}

/* The update op's attributes for the params of group config c at step
 * count step; the per-step scalars are computed in double and rounded once
 * by the kernel, as torch does with Python floats. */
static struct pdi_attrs update_attrs(const struct pd_optim_config *c, int64_t step, int has_master)
{
    struct pdi_attrs a;
    memset(&a, 0, sizeof a);
    if (c->kind == PD_OPTIM_SGD) {
        a.sgd_update.lr = c->lr;
        a.sgd_update.weight_decay = c->weight_decay;
        a.sgd_update.has_master = has_master;
        a.sgd_update.momentum = c->momentum;
        a.sgd_update.dampening = c->dampening;
        a.sgd_update.nesterov = c->nesterov != 0;
        a.sgd_update.first_step = step == 1;
    } else {
        double bc1 = 1.0 - pow(c->beta1, (double)step), bc2 = 1.0 - pow(c->beta2, (double)step);
        a.adam_update.lr = c->lr;
        a.adam_update.weight_decay = c->weight_decay;
        a.adam_update.has_master = has_master;
        a.adam_update.beta1 = c->beta1;
        a.adam_update.beta2 = c->beta2;
        a.adam_update.eps = c->eps;
        a.adam_update.decoupled_weight_decay = c->kind == PD_OPTIM_ADAMW;
        a.adam_update.amsgrad = c->amsgrad != 0;
        a.adam_update.step_size = c->lr / bc1;
        a.adam_update.bias_correction2_rsqrt = 1.0 / sqrt(bc2);
    }
    return a;
}

/* One update op over pend[first] and every later pending param sharing its
 * group, step count and master-ness (so its per-step scalars); marks them
 * done on success. Inputs are planes: params, [masters], state, grads. */
static int update_batch(struct pd_optimizer *o, struct pending *pend, int n_pend, int first)
{
    const struct pdi_oparam *p0 = pend[first].p;
    const struct pd_optim_config *c = &o->groups[p0->group];
    int hm = p0->master != NULL, adam = c->kind != PD_OPTIM_SGD;
    int n_state = adam ? 2 + (c->amsgrad != 0) : c->momentum != 0, planes = 2 + hm + n_state;
    int n = 0;
    for (int i = first; i < n_pend; i++) {
        const struct pdi_oparam *p = pend[i].p;
        if (pend[i].done || p->group != p0->group || p->step != p0->step || (p->master != NULL) != hm) continue;
        pend[i].done = -1; /* in this batch */
        n++;
    }
    struct pd_tensor **in = pdi_malloc(sizeof *in * (size_t)(planes * n));
    if (!in) {
        for (int i = first; i < n_pend; i++) pend[i].done = pend[i].done > 0;
        return pdi_errorf(PD_ERR_NOMEM, "optimizer: out of memory");
    }
    int rc = PD_OK;
    for (int i = first, j = 0; i < n_pend; i++) {
        if (pend[i].done != -1) continue;
        struct pdi_oparam *p = pend[i].p;
        struct pd_tensor *state[3] = {p->m, p->v, p->vmax};
        in[j] = p->p;
        if (hm) in[n + j] = p->master;
        for (int s = 0; s < n_state; s++) {
            in[(1 + hm + s) * n + j] = state[s];
            if (!state[s]) rc = pdi_errorf(PD_ERR_STATE, "optimizer: parameter '%s' has no state tensor %d", p->name, s);
        }
        in[(planes - 1) * n + j] = pend[i].g;
        j++;
    }
    if (!rc) {
        struct pdi_call call = {.op = adam ? PD_OP_adam_update : PD_OP_sgd_update, .n_in = planes * n, .n_out = 0,
                                .in = in, .a = update_attrs(c, p0->step, hm)};
        rc = pdi_dispatch(&call);
    }
    free(in);
    for (int i = first; i < n_pend; i++)
        if (pend[i].done == -1) pend[i].done = rc == PD_OK;
    return rc;
}

int pd_optimizer_step(struct pd_optimizer *o)
{
    if (!o) return pdi_errorf(PD_ERR_NULL, "optimizer_step: NULL optimizer");
    if (pdi_dist_hooks && pdi_dist_hooks->sync_grads()) return pd_last_status(); /* reductions in flight */
    struct pending *pend = pdi_malloc(sizeof *pend * (size_t)(o->n + 1));
    if (!pend) return pdi_errorf(PD_ERR_NOMEM, "optimizer: out of memory");
    int rc = PD_OK, n_pend = 0;
    int prev = pd_no_grad_begin();
    int scope_tok = pd_scope_begin(); /* temporaries of grads needing a cast or a copy */
    for (int i = 0; i < o->n && !rc; i++) {
        struct pd_tensor *g = step_grad(&o->params[i], &rc);
        if (!g) continue;
        o->params[i].step++;
        pend[n_pend++] = (struct pending){&o->params[i], g, 0};
    }
    /* The params before a failing one are updated, as when they were
     * updated one at a time; a param left out keeps its step count. */
    for (int i = 0; i < n_pend; i++) {
        if (pend[i].done) continue;
        int brc = update_batch(o, pend, n_pend, i);
        if (brc) {
            if (!rc) rc = brc;
            break;
        }
    }
    for (int i = 0; i < n_pend; i++)
        if (!pend[i].done) pend[i].p->step--;
    pd_scope_end(scope_tok);
    pd_grad_mode_end(prev);
    free(pend);
    if (!rc) o->step_count++;
    return rc;
}

int pd_optimizer_accumulate(struct pd_optimizer *o, int k)
{
    if (!o) return pdi_errorf(PD_ERR_NULL, "optimizer_accumulate: NULL optimizer");
    if (k < 1) return pdi_errorf(PD_ERR_INVALID, "optimizer_accumulate: k must be >= 1, got %d", k);
    if (o->micro < k - 1) { /* never past INT_MAX - 1: no overflow */
        o->micro++;
        return 0;
    }
    o->micro = 0;
    int rc = pd_optimizer_step(o);
    if (rc) return rc;
    pd_optimizer_zero_grad(o);
    return 1;
}
