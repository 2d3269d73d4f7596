/* paddle.c — optimizers: SGD, Adam, AdamW with torch.optim semantics.
 *
 * The update of one parameter is one fused pass (update_block) over the
 * weights, the gradient and the moments, split in blocks of BLOCK elements
 * over OpenMP threads. Arithmetic is f32 (the moments are f32 whatever the
 * parameter's dtype); the per-step scalars (bias corrections, step size) are
 * computed in double and rounded once, as torch does with Python floats.
 *
 * Ownership: the optimizer holds a reference to each parameter, and owns its
 * state tensors (moments, f32 masters of bf16/f16 parameters), created
 * outside any scope with pdi_tensor_new. State is allocated eagerly when a
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
    struct pd_optimizer *o = calloc(1, sizeof *o);
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

/* A zero-filled f32 tensor of t's shape, outside every scope. */
static struct pd_tensor *state_zeros(const struct pd_tensor *t)
{
    struct pd_tensor *s = pdi_tensor_new(t->shape, t->ndim, PD_F32);
    if (s) memset(pd_tensor_data(s), 0, (size_t)pd_tensor_numel(s) * sizeof(float));
    return s;
}

/* Allocate the state tensors the group's config needs and p lacks. */
static int ensure_state(struct pdi_oparam *p, const struct pd_optim_config *c)
{
    if (p->p->dtype != PD_F32 && !p->master) {
        p->master = pdi_tensor_new(p->p->shape, p->p->ndim, PD_F32);
        if (!p->master) return pd_last_status();
        pdi_convert(pd_tensor_data(p->p), p->p->dtype, pd_tensor_data(p->master), PD_F32, pd_tensor_numel(p->p));
    }
    int need_m = c->kind != PD_OPTIM_SGD || c->momentum != 0;
    int need_v = c->kind != PD_OPTIM_SGD;
    int need_vmax = need_v && c->amsgrad;
    if (need_m && !p->m && !(p->m = state_zeros(p->p))) return pd_last_status();
    if (need_v && !p->v && !(p->v = state_zeros(p->p))) return pd_last_status();
    if (need_vmax && !p->vmax && !(p->vmax = state_zeros(p->p))) return pd_last_status();
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
            struct pdi_oparam *np = realloc(o->params, sizeof *np * (size_t)nc);
            if (!np) { rc = pdi_errorf(PD_ERR_NOMEM, "optimizer: out of memory"); goto fail; }
            o->params = np;
            o->cap = nc;
        }
        struct pdi_oparam *p = &o->params[o->n];
        memset(p, 0, sizeof *p);
        p->name = strdup(name);
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
        struct pd_optim_config *ng = realloc(o->groups, sizeof *ng * (size_t)nc);
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

/* ---- the fused update ------------------------------------------------------ */
#define BLOCK 2048

struct upd {
    enum pd_optim_kind kind;
    float lr, wd, b1, b2, c1, c2, eps, step_size, inv_bc2_sqrt, decay_mul, momentum;
    float damp; /* SGD: 1 - dampening */
    int nesterov, first, amsgrad;
    float *w;                 /* f32 weights: the parameter or its master */
    const void *g;            /* gradient, contiguous */
    enum pd_dtype gdt;
    float *m, *v, *vmax;
    void *lowp;               /* bf16/f16 parameter receiving the rounding, or NULL */
    enum pd_dtype ldt;
};

static void to_f32(const void *src, enum pd_dtype dt, float *d, int64_t n)
{
    if (dt == PD_BF16) {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) d[i] = pdi_bf16_f32(s[i]);
    } else {
        pdi_convert(src, dt, d, PD_F32, n);
    }
}

static void from_f32(const float *s, void *dst, enum pd_dtype dt, int64_t n)
{
    if (dt == PD_BF16) {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = pdi_f32_bf16(s[i]);
    } else {
        pdi_convert(s, PD_F32, dst, dt, n);
    }
}

static void adam_block(const struct upd *u, float *restrict w, const float *restrict g, float *restrict m,
                       float *restrict v, float *restrict vmax, int64_t n)
{
    const float b1 = u->b1, b2 = u->b2, c1 = u->c1, c2 = u->c2;
    const float ss = -u->step_size, ibc = u->inv_bc2_sqrt, eps = u->eps, dm = u->decay_mul;
    /* Adam: L2 decay enters the gradient; AdamW: decoupled (dm = 1 - lr wd). */
    const float gwd = u->kind == PD_OPTIM_ADAM ? u->wd : 0.0f;
    if (u->amsgrad) {
        for (int64_t i = 0; i < n; i++) {
            float gi = g[i] + gwd * w[i];
            float mi = m[i] * b1 + c1 * gi;
            float vi = v[i] * b2 + c2 * (gi * gi);
            float vm = vmax[i] > vi ? vmax[i] : vi;
            m[i] = mi;
            v[i] = vi;
            vmax[i] = vm;
            w[i] = w[i] * dm + ss * (mi / (sqrtf(vm) * ibc + eps));
        }
    } else {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            float gi = g[i] + gwd * w[i];
            float mi = m[i] * b1 + c1 * gi;
            float vi = v[i] * b2 + c2 * (gi * gi);
            m[i] = mi;
            v[i] = vi;
            w[i] = w[i] * dm + ss * (mi / (sqrtf(vi) * ibc + eps));
        }
    }
}

static void sgd_block(const struct upd *u, float *restrict w, const float *restrict g, float *restrict buf, int64_t n)
{
    const float wd = u->wd, lr = -u->lr, mom = u->momentum, c = u->damp;
    if (!buf) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) w[i] = w[i] + lr * (g[i] + wd * w[i]);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        float d = g[i] + wd * w[i];
        float b = u->first ? d : buf[i] * mom + c * d;
        buf[i] = b;
        d = u->nesterov ? d + mom * b : b;
        w[i] = w[i] + lr * d;
    }
}

static void update_block(const struct upd *u, int64_t off, int64_t n)
{
    float gbuf[BLOCK];
    const float *g;
    if (u->gdt == PD_F32) {
        g = (const float *)u->g + off;
    } else {
        to_f32((const char *)u->g + off * (int64_t)pd_dtype_size(u->gdt), u->gdt, gbuf, n);
        g = gbuf;
    }
    float *w = u->w + off;
    if (u->kind == PD_OPTIM_SGD)
        sgd_block(u, w, g, u->m ? u->m + off : NULL, n);
    else
        adam_block(u, w, g, u->m + off, u->v + off, u->vmax ? u->vmax + off : NULL, n);
    if (u->lowp) from_f32(w, (char *)u->lowp + off * (int64_t)pd_dtype_size(u->ldt), u->ldt, n);
}

static void run_update(const struct upd *u, int64_t numel)
{
    int64_t nb = (numel + BLOCK - 1) / BLOCK;
    PDI_FOR(numel >= PDI_PAR_GRAIN && pdi_num_threads() > 1, b, nb, {
        int64_t off = b * BLOCK;
        update_block(u, off, numel - off < BLOCK ? numel - off : BLOCK);
    });
}

static int step_param(struct pdi_oparam *p, const struct pd_optim_config *c)
{
    struct pd_tensor *g = pd_tensor_grad(p->p);
    if (!g) return PD_OK;
    if (g->ndim != p->p->ndim || memcmp(g->shape, p->p->shape, sizeof(int64_t) * (size_t)g->ndim)) {
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_STATE, "optimizer: gradient of '%s' has shape %s, parameter %s", p->name,
                          pdi_shape_str(g->shape, g->ndim, b0, sizeof b0), pdi_shape_str(p->p->shape, p->p->ndim, b1, sizeof b1));
    }
    if (!pd_dtype_is_float(g->dtype) || g->dtype == PD_F64) {
        /* f64 grads of an f32 parameter: convert (rare; keeps the kernel f32) */
        g = pd_cast(g, PD_F32);
    }
    if (g && !pd_tensor_is_contiguous(g)) g = pd_contiguous(g);
    if (!g) return pd_last_status();

    struct upd u;
    memset(&u, 0, sizeof u);
    u.kind = c->kind;
    p->step++;
    double lr = c->lr, step = (double)p->step;
    u.lr = (float)lr;
    u.wd = (float)c->weight_decay;
    u.b1 = (float)c->beta1;
    u.b2 = (float)c->beta2;
    /* 1 - beta in double, then rounded: 1.0f - 0.999f is 4.7e-5 off 0.001 */
    u.c1 = (float)(1.0 - c->beta1);
    u.c2 = (float)(1.0 - c->beta2);
    u.eps = (float)c->eps;
    if (c->kind != PD_OPTIM_SGD) {
        double bc1 = 1.0 - pow(c->beta1, step), bc2 = 1.0 - pow(c->beta2, step);
        u.step_size = (float)(lr / bc1);
        /* torch divides sqrt(v) by sqrt(bc2); one multiply by its float
         * inverse differs by at most an ulp and vectorises */
        u.inv_bc2_sqrt = (float)(1.0 / sqrt(bc2));
        u.decay_mul = c->kind == PD_OPTIM_ADAMW ? (float)(1.0 - lr * c->weight_decay) : 1.0f;
        u.amsgrad = c->amsgrad;
    } else {
        u.momentum = (float)c->momentum;
        u.damp = (float)(1.0 - c->dampening); /* the factor of the new gradient */
        u.nesterov = c->nesterov;
        u.first = p->step == 1;
    }
    u.w = pd_tensor_data(p->master ? p->master : p->p);
    u.g = pd_tensor_data(g);
    u.gdt = g->dtype;
    u.m = p->m ? pd_tensor_data(p->m) : NULL;
    u.v = p->v ? pd_tensor_data(p->v) : NULL;
    u.vmax = c->kind != PD_OPTIM_SGD && c->amsgrad ? pd_tensor_data(p->vmax) : NULL;
    if (c->kind == PD_OPTIM_SGD && c->momentum == 0) u.m = NULL;
    if (p->master) {
        u.lowp = pd_tensor_data(p->p);
        u.ldt = p->p->dtype;
    }
    run_update(&u, pd_tensor_numel(p->p));
    p->p->st->version++; /* an in-place write: graphs that saved p are stale */
    return PD_OK;
}

int pd_optimizer_step(struct pd_optimizer *o)
{
    if (!o) return pdi_errorf(PD_ERR_NULL, "optimizer_step: NULL optimizer");
    int rc = PD_OK;
    int prev = pd_no_grad_begin();
    pd_scope_begin(); /* temporaries of grads needing a cast or a copy */
    for (int i = 0; i < o->n && !rc; i++) rc = step_param(&o->params[i], &o->groups[o->params[i].group]);
    pd_scope_end();
    pd_grad_mode_end(prev);
    if (!rc) o->step_count++;
    return rc;
}

int pd_optimizer_accumulate(struct pd_optimizer *o, int k)
{
    if (!o) return pdi_errorf(PD_ERR_NULL, "optimizer_accumulate: NULL optimizer");
    if (k < 1) return pdi_errorf(PD_ERR_INVALID, "optimizer_accumulate: k must be >= 1, got %d", k);
    if (++o->micro < k) return 0;
    o->micro = 0;
    int rc = pd_optimizer_step(o);
    if (rc) return rc;
    pd_optimizer_zero_grad(o);
    return 1;
}
