/* paddle.c — the parallel APIs over the distribute stage
 * (docs/distributed.md "Training in parallel"): parameters made
 * distributed in place, shard plans (column-, row- and sequence-parallel,
 * input/output preparation), optimizer state in its parameter's
 * placements, data-parallel batches, and gathered state dicts for
 * checkpoints.
 *
 * Parameters are converted in place: the pd_tensor a module, a state dict
 * and an optimizer point to stays the same object and becomes a distributed
 * tensor holding this rank's piece (its own storage: a view into a model's
 * flat arena is left behind, unused). So every holder keeps working.
 *
 * Module hooks: a plan's input/output preparation is keyed by the module's
 * weight tensor (the same object before and after the conversion). The nn
 * module forwards (src/nn/modules.c) call pdi_nn_prepare, which is a NULL
 * test until a plan with a preparation is applied. The registry holds a
 * reference to each weight and mesh until pd_shard_plans_clear.
 */
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"
#include "io/file.h"
#include "nn/nn_internal.h"
#include "optim/optim_internal.h"
#include "pd/state.h"

/* ---- in-place conversion ------------------------------------------------ */
int pd_dtensor_distribute_(struct pd_tensor *t, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (!t || !m || !pl) return pdi_errorf(PD_ERR_NULL, "dtensor_distribute_: NULL argument");
    if (t->dist) return pdi_errorf(PD_ERR_INVALID, "dtensor_distribute_: the tensor is distributed already");
    if (t->grad_fn) return pdi_errorf(PD_ERR_INVALID, "dtensor_distribute_: the tensor is not a leaf");
    if (pdi_dist_check_placements("dtensor_distribute_", m, pl, t->ndim, t->dtype)) return pd_last_status();
    int tok = pd_scope_begin(), gtok = pd_no_grad_begin();
    struct pd_tensor *d = pd_shard_tensor(t, m, pl);
    pd_grad_mode_end(gtok);
    if (!d) {
        pd_scope_end(tok);
        return pd_last_status();
    }
    /* t takes d's storage and distribution; d leaves with t's old view */
    struct pd_tensor tmp = *t;
    t->st = d->st, t->offset = d->offset, t->dist = d->dist;
    memcpy(t->shape, d->shape, sizeof t->shape);
    memcpy(t->strides, d->strides, sizeof t->strides);
    d->st = tmp.st, d->offset = tmp.offset, d->dist = NULL;
    memcpy(d->shape, tmp.shape, sizeof d->shape);
    memcpy(d->strides, tmp.strides, sizeof d->strides);
    pd_tensor_release(t->grad); /* a plain gradient no longer fits */
    t->grad = NULL;
    pd_scope_end(tok);
    return PD_OK;
}

/* ---- names -------------------------------------------------------------- */
/* Does name match pattern? '*' matches one or more characters other than
 * '.' (one part of a dotted name). */
static int match(const char *p, const char *s)
{
    if (!*p) return !*s;
    if (*p == '*') {
        if (!*s || *s == '.') return 0;
        for (const char *e = s + 1;; e++) {
            if (match(p + 1, e)) return 1;
            if (!*e || *e == '.') return 0;
        }
    }
    return *p == *s && match(p + 1, s + 1);
}

/* The plan whose module name is a prefix of param (module "." rest). */
static const struct pd_shard_plan *plan_of(const struct pd_shard_plan *plan, int n, const char *param, char *leaf,
                                           size_t cap)
{
    const char *dot = strrchr(param, '.');
    size_t len = dot ? (size_t)(dot - param) : 0;
    char mod[512];
    if (len >= sizeof mod) return NULL;
    memcpy(mod, param, len);
    mod[len] = 0;
    snprintf(leaf, cap, "%s", dot ? dot + 1 : param);
    for (int i = 0; i < n; i++)
        if (plan[i].module && match(plan[i].module, mod)) return &plan[i];
    return NULL;
}

/* ---- module hooks ----------------------------------------------------- */
struct hook {
    struct pd_tensor *weight;
    struct pd_mesh *mesh;
    int axis;
    enum pd_prep in, out;
};
static struct hook *hooks;
static int n_hooks, cap_hooks;

static struct pd_tensor *prepare(struct pd_tensor *x, struct pd_mesh *m, int axis, enum pd_prep prep)
{
    if (!x || prep == PD_PREP_NONE) return x;
    struct pd_placement pl[PD_MAX_MESH_DIMS];
    const struct pd_placement *cur = pd_dtensor_placements(x);
    for (int a = 0; a < pd_mesh_ndim(m); a++) pl[a] = cur && pd_dtensor_mesh(x) == m ? cur[a] : pd_replicate();
    struct pd_placement want = prep == PD_PREP_REPLICATE ? pd_replicate() : pd_shard(1);
    /* a sequence shorter than the axis (decoding one token) stays whole */
    if (prep == PD_PREP_SHARD_SEQ && (pd_tensor_ndim(x) < 2 || pd_tensor_dim(x, 1) < pd_mesh_size(m, axis))) return x;
    if (cur && pl[axis].kind == want.kind && (want.kind != PD_SHARD || pl[axis].dim == want.dim)) return x;
    pl[axis] = want;
    return x->dist ? pd_reshard(x, m, pl) : pd_shard_tensor(x, m, pl);
}

/* pdi_nn_prepare's implementation: where 0 before the module, 1 after. */
static struct pd_tensor *nn_prepare(const struct pd_tensor *weight, int where, struct pd_tensor *x)
{
    for (int i = 0; i < n_hooks; i++)
        if (hooks[i].weight == weight)
            return prepare(x, hooks[i].mesh, hooks[i].axis, where ? hooks[i].out : hooks[i].in);
    return x;
}

static int add_hook(struct pd_tensor *w, struct pd_mesh *m, int axis, enum pd_prep in, enum pd_prep out)
{
    for (int i = 0; i < n_hooks; i++)
        if (hooks[i].weight == w) {
            if (in) hooks[i].in = in;
            if (out) hooks[i].out = out;
            return PD_OK;
        }
    if (n_hooks == cap_hooks) {
        int nc = cap_hooks ? 2 * cap_hooks : 16;
        struct hook *nh = pdi_realloc(hooks, sizeof *nh * (size_t)nc);
        if (!nh) return pdi_errorf(PD_ERR_NOMEM, "shard_layer: out of memory");
        hooks = nh, cap_hooks = nc;
    }
    pd_tensor_retain(w);
    pd_mesh_retain(m);
    hooks[n_hooks++] = (struct hook){w, m, axis, in, out};
    __atomic_store_n(&pdi_nn_prepare, nn_prepare, __ATOMIC_RELEASE);
    return PD_OK;
}

void pd_shard_plans_clear(void)
{
    __atomic_store_n(&pdi_nn_prepare, NULL, __ATOMIC_RELEASE);
    for (int i = 0; i < n_hooks; i++) {
        pd_tensor_release(hooks[i].weight);
        pd_mesh_release(hooks[i].mesh);
    }
    free(hooks);
    hooks = NULL;
    n_hooks = cap_hooks = 0;
}

/* ---- shard_layer -------------------------------------------------------- */
/* p's placements on the plan's axis (k) for a parameter named leaf. */
static struct pd_placement param_placement(const struct pd_shard_plan *p, const char *leaf, int ndim)
{
    if (!p) return pd_replicate();
    switch (p->kind) {
    case PD_PLAN_COLWISE: return pd_shard(0); /* weight [out, in] and bias [out]: out */
    case PD_PLAN_ROWWISE: return !strcmp(leaf, "weight") && ndim == 2 ? pd_shard(1) : pd_replicate();
    case PD_PLAN_SHARD: return p->dim < ndim ? pd_shard(p->dim) : pd_replicate();
    default: return pd_replicate();
    }
}

int pd_shard_layer(struct pd_state_dict *params, struct pd_mesh *m, const char *axis, const struct pd_shard_plan *plan,
                   int n_plan)
{
    if (!params || !m) return pdi_errorf(PD_ERR_NULL, "shard_layer: NULL argument");
    if (n_plan < 0 || (n_plan && !plan)) return pdi_errorf(PD_ERR_INVALID, "shard_layer: %d plans", n_plan);
    int k = -1;
    if (n_plan) {
        k = axis ? pd_mesh_axis(m, axis) : -1;
        if (k < 0) {
            char qb[PDI_QUOTE_BUF];
            return pdi_errorf(PD_ERR_INVALID, "shard_layer: the mesh has no axis %s",
                              pdi_quote(axis ? axis : "(null)", qb, sizeof qb));
        }
    }
    /* everything is checked before the first parameter changes: a refusal converts nothing */
    for (int i = 0; i < n_plan; i++) {
        const struct pd_shard_plan *p = &plan[i];
        if (!p->module || !*p->module) return pdi_errorf(PD_ERR_INVALID, "shard_layer: plan %d has no module name", i);
        if ((unsigned)p->kind >= PD_PLAN_KIND_COUNT)
            return pdi_errorf(PD_ERR_INVALID, "shard_layer: plan %d has kind %d (0 to %d)", i, (int)p->kind, PD_PLAN_KIND_COUNT - 1);
        if (p->kind == PD_PLAN_SHARD && p->dim < 0)
            return pdi_errorf(PD_ERR_INVALID, "shard_layer: plan %d shards dim %d", i, p->dim);
        if ((unsigned)p->in >= PD_PREP_COUNT || (unsigned)p->out >= PD_PREP_COUNT)
            return pdi_errorf(PD_ERR_INVALID, "shard_layer: plan %d has preparations %d, %d (0 to %d)", i, (int)p->in,
                              (int)p->out, PD_PREP_COUNT - 1);
    }
    for (int i = 0; i < pd_state_dict_size(params); i++) {
        const struct pd_tensor *t = pd_state_dict_tensor(params, i);
        if (!t) return pdi_errorf(PD_ERR_NULL, "shard_layer: parameter %d is NULL", i);
        if (t->dist && pd_dtensor_mesh(t) != m)
            return pdi_errorf(PD_ERR_INVALID, "shard_layer: parameter %d lives on another mesh", i);
        if (!t->dist && t->grad_fn) return pdi_errorf(PD_ERR_INVALID, "shard_layer: parameter %d is not a leaf", i);
    }
    for (int i = 0; i < pd_state_dict_size(params); i++) {
        struct pd_tensor *t = pd_state_dict_tensor(params, i);
        const char *name = pd_state_dict_name(params, i);
        char leaf[128];
        const struct pd_shard_plan *p = n_plan ? plan_of(plan, n_plan, name, leaf, sizeof leaf) : NULL;
        struct pd_placement pl[PD_MAX_MESH_DIMS];
        for (int a = 0; a < pd_mesh_ndim(m); a++) pl[a] = pd_replicate();
        if (p) pl[k] = param_placement(p, leaf, pd_tensor_ndim(t));
        if (t->dist) continue; /* tied or converted before (on m: checked above) */
        int rc = pd_dtensor_distribute_(t, m, pl);
        if (rc) return rc;
        if (p && (p->in || p->out) && !strcmp(leaf, "weight") && (rc = add_hook(t, m, k, p->in, p->out))) return rc;
    }
    return PD_OK;
}

/* The standard plan for pd_llama (Hugging Face names): attention q/k/v and
 * the MLP's gate/up column-parallel, o_proj and down_proj row-parallel, the
 * lm_head column-parallel (vocabulary-parallel logits); the embedding and
 * the norms replicated. Without sp, the row-parallel outputs are
 * all-reduced (Replicate). With sp, activations between the blocks' matmuls
 * stay split on the sequence (dim 1 of [B, T, dim]): the embedding's output
 * and the row-parallel outputs are Shard(1) (a reduce-scatter), and the
 * norms' outputs are gathered (Replicate) before the column-parallel
 * matmuls that read them. */
int pd_llama_shard_plan(int sp, struct pd_shard_plan *out, int cap)
{
    enum pd_prep row_out = sp ? PD_PREP_SHARD_SEQ : PD_PREP_REPLICATE;
    const struct pd_shard_plan p[] = {
        {"model.layers.*.self_attn.q_proj", PD_PLAN_COLWISE, 0, PD_PREP_NONE, PD_PREP_NONE},
        {"model.layers.*.self_attn.k_proj", PD_PLAN_COLWISE, 0, PD_PREP_NONE, PD_PREP_NONE},
        {"model.layers.*.self_attn.v_proj", PD_PLAN_COLWISE, 0, PD_PREP_NONE, PD_PREP_NONE},
        {"model.layers.*.self_attn.o_proj", PD_PLAN_ROWWISE, 0, PD_PREP_NONE, row_out},
        {"model.layers.*.mlp.gate_proj", PD_PLAN_COLWISE, 0, PD_PREP_NONE, PD_PREP_NONE},
        {"model.layers.*.mlp.up_proj", PD_PLAN_COLWISE, 0, PD_PREP_NONE, PD_PREP_NONE},
        {"model.layers.*.mlp.down_proj", PD_PLAN_ROWWISE, 0, PD_PREP_NONE, row_out},
        {"lm_head", PD_PLAN_COLWISE, 0, PD_PREP_NONE, PD_PREP_NONE},
        /* sequence parallel: begin after the embedding, end at the norms' outputs */
        {"model.embed_tokens", PD_PLAN_REPLICATE, 0, PD_PREP_NONE, PD_PREP_SHARD_SEQ},
        {"model.layers.*.input_layernorm", PD_PLAN_REPLICATE, 0, PD_PREP_NONE, PD_PREP_REPLICATE},
        {"model.layers.*.post_attention_layernorm", PD_PLAN_REPLICATE, 0, PD_PREP_NONE, PD_PREP_REPLICATE},
        {"model.norm", PD_PLAN_REPLICATE, 0, PD_PREP_NONE, PD_PREP_REPLICATE},
    };
    int n = (int)(sizeof p / sizeof p[0]) - (sp ? 0 : 4);
    if (!out || cap < n) return pdi_errorf(PD_ERR_INVALID, "llama_shard_plan: room for %d plans, %d needed", cap, n);
    memcpy(out, p, sizeof *out * (size_t)n);
    return n;
}

/* ---- optimizer ------------------------------------------------------------ */
/* s in t's placements (s plain, t distributed): the same values. */
static int follow(struct pd_tensor **s, struct pd_tensor *t)
{
    if (!*s || (*s)->dist || !t->dist) return PD_OK;
    int tok = pd_scope_begin();
    struct pd_tensor *d = pd_shard_tensor(*s, pd_dtensor_mesh(t), pd_dtensor_placements(t));
    if (d) pd_tensor_retain(d);
    pd_scope_end(tok);
    if (!d) return pd_last_status();
    pd_tensor_release(*s);
    *s = d;
    return PD_OK;
}

int pd_shard_optimizer(struct pd_optimizer *o)
{
    if (!o) return pdi_errorf(PD_ERR_NULL, "shard_optimizer: NULL optimizer");
    for (int i = 0; i < o->n; i++) {
        struct pdi_oparam *p = &o->params[i];
        int rc = follow(&p->master, p->p);
        if (!rc) rc = follow(&p->m, p->p);
        if (!rc) rc = follow(&p->v, p->p);
        if (!rc) rc = follow(&p->vmax, p->p);
        if (rc) return rc;
    }
    return PD_OK;
}

/* ---- data --------------------------------------------------------------- */
struct pd_tensor *pd_shard_batch(struct pd_tensor *batch, struct pd_mesh *m, const char *axis)
{
    if (!batch || !m) return pdi_error(PD_ERR_NULL, "shard_batch: NULL argument");
    struct pd_placement pl[PD_MAX_MESH_DIMS];
    for (int a = 0; a < pd_mesh_ndim(m); a++) pl[a] = pd_replicate();
    int k = axis ? pd_mesh_axis(m, axis) : -1;
    if (axis && k < 0) {
        char qb[PDI_QUOTE_BUF];
        return pdi_error(PD_ERR_INVALID, "shard_batch: the mesh has no axis %s", pdi_quote(axis, qb, sizeof qb));
    }
    if (batch->dist) return pdi_error(PD_ERR_INVALID, "shard_batch: the batch is distributed already");
    if (k >= 0 && batch->ndim < 1) return pdi_error(PD_ERR_INVALID, "shard_batch: a 0-d batch has no rows to split");
    if (k >= 0) pl[k] = pd_shard(0);
    return pd_shard_tensor(batch, m, pl);
}

/* ---- checkpoints -------------------------------------------------------- */
struct pd_state_dict *pd_state_dict_gather(const struct pd_state_dict *sd)
{
    if (!sd) return pdi_error(PD_ERR_NULL, "state_dict_gather: NULL state dict");
    struct pd_state_dict *out = pd_state_dict_create();
    if (!out) return NULL;
    for (int i = 0; i < pd_state_dict_size(sd); i++) {
        struct pd_tensor *t = pd_state_dict_tensor(sd, i);
        int tok = pd_scope_begin();
        struct pd_tensor *f = t && t->dist ? pd_dtensor_full(t) : t;
        int rc = f ? pd_state_dict_add(out, pd_state_dict_name(sd, i), f) : pd_last_status();
        pd_scope_end(tok);
        if (rc) {
            pd_state_dict_destroy(out);
            return NULL;
        }
    }
    for (int i = 0; i < pd_state_dict_meta_size(sd); i++)
        if (pd_state_dict_set_meta(out, pd_state_dict_meta_key(sd, i), pd_state_dict_meta_value(sd, i))) {
            pd_state_dict_destroy(out);
            return NULL;
        }
    return out;
}
