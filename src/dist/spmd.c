/* paddle.c — the distribute stage of the dispatcher (docs/design.md §6,
 * docs/distributed.md).
 *
 * A call with a distributed input comes here from pdi_dispatch:
 *   1. every distributed input must live on one mesh (plain inputs count
 *      as replicated on it);
 *   2. attributes are checked and metas inferred on the global shapes (a
 *      distributed tensor's shape is its global shape); under autocast the
 *      inputs are cast here (distributed casts: each rank its piece) and
 *      the call comes back on the cast inputs;
 *   3. the op's SPMD rule (the op table's spmd column, spmd_rules.c) says
 *      which placements the inputs need and which the outputs get;
 *   4. inputs whose placements differ are resharded (collectives);
 *   5. the local call runs through the dispatcher on the local pieces,
 *      with autograd off;
 *   6. the outputs are wrapped as distributed tensors, and autograd records
 *      the op on the distributed tensors. Backward is distributed because
 *      VJP rules are ops: they come back here.
 * An op whose output shape depends on its data (nonzero, unique, ...)
 * cannot be inferred on global shapes; it runs replicated and takes its
 * global shape from the local result.
 * A rule may replace step 5 by a local function (s->local: a vocabulary-
 * parallel lookup), or ask for a decomposition (s->decompose, with its
 * own in s->decomp or the op's). A view whose input had to be resharded
 * is a copy, not an alias: it is marked (view_copy) and in-place writes
 * into it are refused, since they would not reach the base.
 */
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"

static void replicate_all(struct pd_placement *pl, int mdim)
{
    for (int a = 0; a < mdim; a++) pl[a] = pd_replicate();
}

/* A plain input in placements pl: its piece (no communication: every rank
 * holds the whole value). */
static struct pd_tensor *plain_piece(struct pd_tensor *x, struct pd_mesh *m, const struct pd_placement *pl)
{
    int rep = 1;
    for (int a = 0; a < m->ndim; a++) rep &= pl[a].kind == PD_REPLICATE;
    if (rep) return x;
    return pd_dtensor_local(pd_shard_tensor(x, m, pl));
}

/* x's piece for the local call: the handle x keeps for the stage (made on
 * first use; not in a scope), so an op makes no new handle per input. */
static struct pd_tensor *local_of(struct pd_tensor *x)
{
    struct pdi_dist *d = x->dist;
    if (!d->local) d->local = pdi_tensor_alias(x, d->lshape, d->lstrides, d->ndim, d->loffset);
    return d->local;
}

/* The op's decomposition on the distributed inputs (each of its ops comes
 * back through the stage). */
static int run_decomp(struct pdi_call *c, const struct pdi_spmd *s)
{
    const struct pdi_opdef *d = &pdi_ops[c->op];
    if (c->inplace) return pdi_errorf(PD_ERR_UNSUPPORTED, "%s_: in place on a distributed tensor in this placement", d->name);
    struct pd_tensor *out[PDI_SPMD_MAX_OUT] = {0};
    int tok = pd_scope_begin();
    int rc = s->decomp ? s->decomp(c, out) : d->decomp(c, out);
    for (int j = 0; j < c->n_out; j++) c->out[j] = rc ? NULL : pd_keep(out[j]);
    pd_scope_end(tok);
    return rc;
}

/* Record autograd and name the outputs, as dispatch() does for a plain call. */
static int finish(struct pdi_call *c, struct pdi_meta *gmeta)
{
    const struct pdi_opdef *d = &pdi_ops[c->op];
    c->meta = gmeta;
    if (!c->inplace && !(d->flags & PDI_F_NONDIFF) && pdi_grad_enabled()) {
        int rc = pdi_autograd_record(c);
        if (rc) return rc;
    }
    pdi_name_outputs(c);
    return PD_OK;
}

/* An input whose Partial axes the rule reduces, for an op that saves its
 * inputs and needs its gradient: resharded by the recorded reshard op (so
 * that differentiating the VJP again reaches the input), and that value,
 * the one the local call read, is what autograd saves for the VJP
 * (save_resharded). A backward that needs it whole then reads it instead
 * of reducing the Partial input again (docs/distributed.md "Communication
 * per step"). */
static int reshard_saved(const struct pdi_call *c, int i, const struct pd_placement *to, int written)
{
    const struct pd_tensor *x = c->in[i];
    const struct pdi_dist *di = x->dist;
    if (!di || written || !x->requires_grad || !pdi_grad_enabled() ||
        (pdi_ops[c->op].flags & (PDI_F_NO_SAVE_IN | PDI_F_NONDIFF)))
        return 0;
    for (int a = 0; a < di->mesh->ndim; a++)
        if (di->pl[a].kind == PD_PARTIAL && !pdi_same_placements(&di->pl[a], &to[a], 1)) return 1;
    return 0;
}

static void save_resharded(struct pdi_call *c, struct pd_tensor *const *rs)
{
    struct pdi_node *n = NULL;
    for (int j = 0; j < c->n_out && !n; j++) n = c->out[j]->grad_fn;
    for (int i = 0; n && n->op == c->op && i < c->n_in; i++) {
        if (!rs[i] || !n->saved_in[i]) continue;
        pd_tensor_release(n->saved_in[i]);
        n->saved_in[i] = rs[i];
        pd_tensor_retain(rs[i]);
        n->saved_ver[i] = rs[i]->st->version;
    }
}

/* pdi_reshard, shown to the profiler: blocking, so in flight and exposed
 * alike, named by the collectives it ran. */
struct pd_tensor *pdi_reshard(struct pd_tensor *x, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (!pd_profiler_enabled()) return pdi_reshard_untimed(x, m, pl);
    static const char *const kind[PD_COMM_COUNT] = {"all-gather", "all-reduce", "reduce-scatter", "all-to-all",
                                                    "send/recv"};
    struct pd_comm_stats a, b;
    pd_comm_stats(&a);
    int64_t t0 = pdi_now_ns();
    struct pd_tensor *y = pdi_reshard_untimed(x, m, pl);
    int64_t t1 = pdi_now_ns();
    pd_comm_stats(&b);
    char name[64] = "reshard";
    double bytes = 0;
    for (int k = 0; k < PD_COMM_COUNT; k++) {
        bytes += (double)(b.bytes[k] - a.bytes[k]);
        if (b.calls[k] > a.calls[k] && strlen(name) + strlen(kind[k]) + 3 < sizeof name)
            strcat(strcat(name, strcmp(name, "reshard") ? "+" : " "), kind[k]);
    }
    if (bytes > 0 || strcmp(name, "reshard")) {
        pdi_profiler_comm(name, t0, t1, bytes, 0);
        pdi_profiler_comm(name, t0, t1, bytes, 1);
    }
    return y;
}

/* ---- the reshard op --------------------------------------------------- */
static void encode_pl(const struct pd_placement *pl, int mdim, struct pdi_ints *v)
{
    v->n = 4 * mdim;
    for (int a = 0; a < mdim; a++) {
        v->v[4 * a] = pl[a].kind;
        v->v[4 * a + 1] = pl[a].dim;
        v->v[4 * a + 2] = pl[a].order;
        v->v[4 * a + 3] = pl[a].op;
    }
}

static int decode_pl(const struct pdi_ints *v, const struct pd_mesh *m, struct pd_placement *pl)
{
    if (v->n != 4 * m->ndim)
        return pdi_errorf(PD_ERR_INVALID, "reshard: %lld placement values for a %d-d mesh (4 per axis)", (long long)v->n,
                          m->ndim);
    for (int a = 0; a < m->ndim; a++) {
        pl[a].kind = (enum pd_placement_kind)v->v[4 * a];
        pl[a].dim = (int)v->v[4 * a + 1];
        pl[a].order = (int)v->v[4 * a + 2];
        pl[a].op = (enum pd_reduce_op)v->v[4 * a + 3];
        if (v->v[4 * a] > PD_PARTIAL || v->v[4 * a + 3] >= PD_RED_COUNT)
            return pdi_errorf(PD_ERR_INVALID, "reshard: placement %d is not one", a);
    }
    return PD_OK;
}

static int reshard_call(struct pdi_call *c)
{
    struct pd_mesh *m = pdi_mesh_by_id(c->a.reshard.mesh, "reshard");
    struct pd_placement pl[PD_MAX_MESH_DIMS];
    if (!m || decode_pl(&c->a.reshard.placements, m, pl)) return pd_last_status();
    struct pd_tensor *x = c->in[0];
    struct pdi_meta gmeta[1];
    pdi_meta_of(x, &gmeta[0]);
    int tok = pd_scope_begin(), gtok = pd_no_grad_begin();
    struct pd_tensor *y = x->dist ? pdi_reshard(x, m, pl) : pd_shard_tensor(x, m, pl);
    pd_grad_mode_end(gtok);
    c->out[0] = y;
    int rc = y ? finish(c, gmeta) : pd_last_status();
    c->out[0] = rc ? NULL : pd_keep(y);
    pd_scope_end(tok);
    return rc;
}

struct pd_tensor *pd_reshard(struct pd_tensor *x, struct pd_mesh *m, const struct pd_placement *pl)
{
    if (!x) return NULL;
    if (!x->dist) return pdi_error(PD_ERR_INVALID, "reshard: not a distributed tensor (use pd_shard_tensor)");
    const struct pdi_dist *d = x->dist;
    if (pdi_dist_check_placements("reshard", m, pl, d->ndim, x->dtype)) return NULL;
    struct pdi_attrs a;
    pdi_attrs_default(PD_OP_reshard, &a);
    a.reshard.mesh = pdi_mesh_id(m);
    a.reshard.src_mesh = pdi_mesh_id(d->mesh);
    encode_pl(pl, m->ndim, &a.reshard.placements);
    encode_pl(d->pl, d->mesh->ndim, &a.reshard.src_placements);
    return pdi_call1(PD_OP_reshard, x, &a);
}

/* The gradient of a reshard is the same global value: it goes back to the
 * input's placements (a Partial input's gradient is replicated there). */
int pdi_vjp_reshard(struct pdi_node *n, struct pd_tensor *const *gout, struct pd_tensor **gin)
{
    if (!gout[0]->dist) { /* a plain tensor's reshard is itself */
        gin[0] = pd_detach(gout[0]);
        return gin[0] ? PD_OK : pd_last_status();
    }
    struct pd_mesh *m = pdi_mesh_by_id(n->a.reshard.src_mesh, "reshard backward");
    struct pd_placement pl[PD_MAX_MESH_DIMS];
    if (!m || decode_pl(&n->a.reshard.src_placements, m, pl)) return pd_last_status();
    for (int a = 0; a < m->ndim; a++)
        if (pl[a].kind == PD_PARTIAL) pl[a] = pd_replicate();
    gin[0] = pd_reshard(gout[0], m, pl);
    return gin[0] ? PD_OK : pd_last_status();
}

/* ---- the stage -------------------------------------------------------- */
static int64_t stage_calls[PD_OP_COUNT];

void pdi_spmd_stats(int64_t *calls) { memcpy(calls, stage_calls, sizeof stage_calls); }
void pdi_spmd_stats_reset(void) { memset(stage_calls, 0, sizeof stage_calls); }

static int dist_call(struct pdi_call *c)
{
    const struct pdi_opdef *d = &pdi_ops[c->op];
    __atomic_add_fetch(&stage_calls[c->op], 1, __ATOMIC_RELAXED);
    if (c->op == PD_OP_reshard) return reshard_call(c);
    int ni = c->n_in, no = c->n_out;
    struct pd_mesh *m = NULL;
    int first = -1;
    for (int i = 0; i < ni; i++) {
        const struct pdi_dist *di = c->in[i]->dist;
        if (!di) continue;
        if (!m) m = di->mesh, first = i;
        else if (di->mesh != m)
            return pdi_errorf(PD_ERR_INVALID, "%s: inputs %d and %d live on different meshes (reshard one first)",
                              d->name, first, i);
    }
    if (m->index < 0) /* this rank holds nothing of the call's tensors */
        return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: rank %d is outside the mesh of its inputs", d->name,
                          pd_dist_world_rank());

    /* 1. attributes and metas on the global shapes */
    struct pdi_meta gmeta[PDI_SPMD_MAX_OUT];
    memset(gmeta, 0, sizeof gmeta);
    /* on the call itself, as on a plain call: autograd records the
     * attributes infer leaves (axes normalised); an op with attributes
     * gets them back if infer fails (a data-dependent shape, below) */
    struct pdi_attrs a0;
    int has_attrs = d->attrs != PDI_AS_none;
    if (has_attrs) a0 = c->a;
    c->meta = gmeta;
    c->n_writes = 0;
    int rc = has_attrs ? pdi_attrs_check(c) : PD_OK;
    if (rc) return rc;
    unsigned refusals = pdi_host_dist_refusals;
    pdi_global_infer++; /* validation reads of distributed inputs are skipped (pdi_host_validate) */
    rc = d->infer(c);
    pdi_global_infer--;
    int have_meta = rc == PD_OK;
    if (!have_meta) {
        if (has_attrs) c->a = a0;
        /* an infer that did not ask for values refused the inputs: the
         * error, on every rank alike (global facts), before any gathering */
        if (pdi_host_dist_refusals == refusals) return rc;
        pd_clear_error(); /* a data-dependent shape: the op runs whole, below */
        rc = PD_OK;
    }
    for (int i = 0; i < ni; i++) {
        const struct pdi_dist *di = c->in[i]->dist;
        if ((i < c->n_writes || (c->inplace && i == 0)) && di && di->view_copy)
            return pdi_errorf(PD_ERR_UNSUPPORTED, "%s_: input %d is a view of a distributed tensor that had to be "
                              "resharded (a copy): the write would not reach its base", d->name, i);
    }
    /* autocast (the dispatcher's stage 2, which comes after this stage on a
     * plain call): its casts are distributed ops (each rank casts its piece),
     * and the call comes back here on the cast inputs, so the rule sees their
     * dtype and autograd records the casts. The local call (or decomposition)
     * is the op itself: it runs with autocast off, as the nested call of a
     * plain op does. */
    int ac_off = 0;
    if (pdi_modes.autocast >= 0) {
        rc = pdi_autocast_stage(c);
        if (rc) return rc < 0 ? rc : PD_OK;
        ac_off = pdi_mode_begin(PDI_MODE_AUTOCAST, -1, NULL, NULL);
        if (ac_off < 0) return ac_off;
    }

    /* 2. the rule */
    struct pd_placement pl_small[PDI_SPMD_SMALL_IN][PD_MAX_MESH_DIMS], (*pl)[PD_MAX_MESH_DIMS] = pl_small;
    struct pd_tensor *loc_small[2 * PDI_SPMD_SMALL_IN] = {0}, **loc = loc_small;
    if (ni > PDI_SPMD_SMALL_IN) { /* variadic ops (concat, stack, ...) */
        pl = pdi_malloc(sizeof *pl * (size_t)ni);
        loc = pdi_calloc((size_t)2 * (size_t)ni, sizeof *loc);
        if (!pl || !loc) {
            rc = pdi_errorf(PD_ERR_NOMEM, "%s: out of memory", d->name);
            goto out;
        }
    }
    struct pd_tensor **rs = loc + ni; /* the inputs resharded by a recorded reshard, saved for the VJP */
    for (int i = 0; i < ni; i++) {
        const struct pdi_dist *di = c->in[i]->dist;
        if (di) memcpy(pl[i], di->pl, sizeof pl[i]);
        else replicate_all(pl[i], m->ndim);
    }
    struct pdi_spmd s = {.mesh = m, .mdim = m->ndim, .n_in = ni, .n_out = no, .in = pl, .a = c->a, .g = c};
    if (have_meta) {
        rc = d->spmd(c, &s);
    } else { /* a data-dependent shape: replicated */
        for (int i = 0; i < ni; i++) replicate_all(pl[i], m->ndim);
        for (int j = 0; j < no; j++) replicate_all(s.out[j], m->ndim);
    }
    if (rc) goto out;
    if (s.decompose) {
        rc = run_decomp(c, &s);
        goto out;
    }

    /* 3. the inputs in the placements the rule asks for; 4. the local call */
    int tok = pd_scope_begin();
    for (int i = 0; i < ni && rc == PD_OK; i++)
        if (reshard_saved(c, i, pl[i], i < c->n_writes || (c->inplace && i == 0)) &&
            !(rs[i] = pd_reshard(c->in[i], m, pl[i])))
            rc = pd_last_status();
    int gtok = pd_no_grad_begin();
    int copied = 0; /* a view of a copy: see struct pdi_dist's view_copy */
    for (int i = 0; i < ni && rc == PD_OK; i++) {
        struct pd_tensor *x = c->in[i];
        const struct pdi_dist *di = x->dist;
        copied |= !di || di->view_copy || !pdi_same_placements(di->pl, pl[i], m->ndim);
        if (rs[i]) {
            loc[i] = local_of(rs[i]);
        } else if (!di) {
            loc[i] = plain_piece(x, m, pl[i]);
        } else if (pdi_same_placements(di->pl, pl[i], m->ndim)) {
            loc[i] = local_of(x);
        } else if (i < c->n_writes || (c->inplace && i == 0)) {
            rc = pdi_errorf(PD_ERR_UNSUPPORTED, "%s_: input %d is written in place, but the op needs it in other "
                            "placements (reshard it first)", d->name, i);
        } else {
            struct pd_tensor *y = pdi_reshard(x, m, pl[i]);
            loc[i] = y ? local_of(y) : NULL;
        }
        if (rc == PD_OK && !loc[i]) rc = pd_last_status();
    }
    struct pd_tensor *lout[PDI_SPMD_MAX_OUT] = {0};
    if (rc == PD_OK) {
        if (c->op == PD_OP_view) { /* the piece may be a strided view */
            struct pd_tensor *cc = pd_contiguous(loc[0]);
            copied |= cc && loc[0] && cc->st != loc[0]->st;
            loc[0] = cc;
        }
        struct pdi_call l = {.op = c->op, .n_in = ni, .n_out = no, .in = loc, .out = lout, .a = s.a,
                             .inplace = c->inplace};
        /* its outputs join the scope */
        rc = loc[0] || !ni ? (s.local ? s.local(&l, &s) : pdi_dispatch(&l)) : pd_last_status();
    }
    pd_grad_mode_end(gtok);

    /* 5. the outputs, distributed; autograd on them */
    for (int j = 0; j < no && rc == PD_OK; j++) {
        if (c->inplace && j == 0) {
            c->out[0] = c->in[0];
            continue;
        }
        const int64_t *gs = have_meta ? gmeta[j].shape : lout[j]->shape;
        if (!have_meta) pdi_meta_of(lout[j], &gmeta[j]);
        c->out[j] = pdi_dist_wrap(lout[j], m, gs, lout[j]->ndim, s.out[j]);
        if (!c->out[j]) {
            rc = pd_last_status();
            break;
        }
        struct pdi_dist *dj = c->out[j]->dist;
        if (d->kind == PDI_KIND_VIEW) dj->view_copy = copied || s.local; /* a local function makes new tensors */
        int user = 0; /* a plain input passed through is the caller's handle: not the stage's to keep */
        for (int i = 0; i < ni; i++) user |= lout[j] == c->in[i];
        if (!user) pd_tensor_retain(dj->local = lout[j]);
    }
    if (rc == PD_OK) rc = finish(c, gmeta);
    if (rc == PD_OK) save_resharded(c, rs);
    for (int j = 0; j < no; j++) {
        if (c->inplace && j == 0) continue;
        c->out[j] = rc ? NULL : pd_keep(c->out[j]);
    }
    pd_scope_end(tok);
out:
    if (pl != pl_small) free(pl);
    if (loc != loc_small) free(loc);
    if (ac_off > 0) pdi_mode_end(PDI_MODE_AUTOCAST, ac_off, "autocast"); /* the innermost again */
    return rc;
}

/* ---- what autograd borrows ---------------------------------------------- */
static struct pd_tensor *dist_zeros(const void *dist, const struct pdi_meta *m)
{
    const struct pdi_dist *d = dist;
    struct pd_placement rep[PD_MAX_MESH_DIMS];
    replicate_all(rep, d->mesh->ndim);
    return pd_dtensor_zeros(m->shape, m->ndim, m->dtype, d->mesh, rep); /* each rank makes its piece */
}

static struct pd_tensor *leaf_grad(struct pd_tensor *leaf, struct pd_tensor *g)
{
    const struct pdi_dist *dl = leaf->dist, *dg = g->dist;
    struct pd_placement want[PD_MAX_MESH_DIMS];
    memcpy(want, dl->pl, sizeof want);
    for (int a = 0; a < dl->mesh->ndim; a++)
        if (want[a].kind == PD_PARTIAL) want[a] = pd_replicate();
    int da = dl->dp_axis - 1; /* pd_dp_attach reduces it there (dp.c) */
    if (da >= 0 && dg->mesh == dl->mesh && dg->pl[da].kind == PD_PARTIAL && dg->pl[da].op == PD_RED_SUM)
        want[da] = dg->pl[da];
    if (dg->mesh == dl->mesh && pdi_same_placements(dg->pl, want, dl->mesh->ndim)) return g;
    return pd_reshard(g, dl->mesh, want);
}

static const struct pdi_dist_hooks hooks = {dist_call, pdi_dist_copy, dist_zeros, leaf_grad, pd_dtensor_full,
                                           pdi_dp_finish_all, pdi_dp_progress_all};

void pdi_spmd_install(void) { __atomic_store_n(&pdi_dist_hooks, &hooks, __ATOMIC_RELEASE); }
