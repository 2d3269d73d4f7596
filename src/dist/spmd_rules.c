/* paddle.c — SPMD rules: the op table's spmd column (docs/design.md §6,
 * docs/distributed.md "How ops are distributed").
 *
 * A rule reads the call on global shapes and the inputs' placements, and
 * writes the placements the inputs must have, the outputs' placements and
 * the local call's attributes (struct pdi_spmd in src/core/internal.h).
 * Rules decide per mesh axis. Shared ideas, as in the einsum notation:
 *   - a sharded dim that is carried to the output stays sharded there; the
 *     first input that shards a dim on an axis wins, and the others follow
 *     it (a broadcast dim of size 1 is replicated);
 *   - a sharded dim that the op sums away makes the output Partial(sum)
 *     (matmul's contraction, sum), max/min make Partial(max/min);
 *   - a Partial input is kept only where the op is linear in it (add, sub,
 *     neg, scale, mul or div by a replicated factor, sum, matmul);
 *     elsewhere it is reduced first (a Partial → Replicate reshard);
 *   - anything a rule cannot keep sharded is replicated: correct for every
 *     deterministic op, at the price of communication and repeated work;
 *   - an op whose sharded dim needs communication inside the op
 *     (softmax over a sharded axis, the mean of a loss) runs its
 *     decomposition instead, whose ops are distributed one by one;
 *   - a split the kernel cannot take as is may run a local function
 *     instead of the op (s->local): the vocabulary-parallel embedding and
 *     nll_loss shift and mask the indices into the local piece, which
 *     makes the output Partial(sum); nll_loss_backward does the same and
 *     its output stays split by classes.
 * Random ops run on the placements of their input with the draw of the
 * whole tensor (bernoulli's slice attribute): each rank draws its slice of
 * the single-process stream.
 */
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"

#define R pd_replicate()

static int is_shard(const struct pd_placement *p) { return p->kind == PD_SHARD; }
static int is_partial(const struct pd_placement *p) { return p->kind == PD_PARTIAL; }
static int is_linear_partial(const struct pd_placement *p)
{
    return p->kind == PD_PARTIAL && (p->op == PD_RED_SUM || p->op == PD_RED_AVG);
}

static void out_all(struct pdi_spmd *s, int k, struct pd_placement p)
{
    for (int j = 0; j < s->n_out; j++) s->out[j][k] = p;
}

/* Every input and output replicated on mesh axis k. */
static void replicate_axis(struct pdi_spmd *s, int k)
{
    for (int i = 0; i < s->n_in; i++) s->in[i][k] = R;
    out_all(s, k, R);
}

/* How many pieces the dim of a tensor sharded on axes of `pl` has. */
static int pieces(const struct pdi_spmd *s, const struct pd_placement *pl, int d)
{
    int n = 1;
    for (int k = 0; k < s->mdim; k++)
        if (is_shard(&pl[k]) && pl[k].dim == d) n *= pd_mesh_size(s->mesh, k);
    return n;
}

/* Input i's own placement on mesh axis k (a plain input: replicated), as
 * the stage handed it to the rule in s->in before the rule rewrote it. */
static struct pd_placement given_pl(const struct pdi_call *g, int i, int k)
{
    const struct pdi_dist *d = g->in[i]->dist;
    return d ? d->pl[k] : R;
}

/* s->in[i] back to input i's own placements. */
static void given_in(const struct pdi_call *g, struct pdi_spmd *s, int i)
{
    for (int k = 0; k < s->mdim; k++) s->in[i][k] = given_pl(g, i, k);
}

/* The replicated rule: every deterministic op, whatever its attributes
 * (the local call is the global one). */
int pdi_spmd_replicate(const struct pdi_call *g, struct pdi_spmd *s)
{
    PDI_UNUSED(g);
    for (int k = 0; k < s->mdim; k++) replicate_axis(s, k);
    return PD_OK;
}

/* Each input keeps its placements, outputs replicated (in-place ops on
 * independent tensors: grad_scale, amp_unscale's flag is a max). */
static int spmd_keep(const struct pdi_call *g, struct pdi_spmd *s)
{
    PDI_UNUSED(g);
    for (int k = 0; k < s->mdim; k++) {
        for (int i = 0; i < s->n_in; i++)
            if (is_partial(&s->in[i][k])) s->in[i][k] = R;
        out_all(s, k, R);
    }
    return PD_OK;
}

/* ---- pointwise: elementwise and broadcasting ops ---------------------- */
enum lin { LIN_NONE, LIN_SUM /* add, sub */, LIN_ONE /* mul: one factor */, LIN_FIRST /* div, neg, scale */ };

static enum lin linearity(const struct pdi_call *g)
{
    switch (g->op) {
    case PD_OP_add: case PD_OP_sub: case PD_OP_copy: return LIN_SUM;
    case PD_OP_mul: return LIN_ONE;
    case PD_OP_div: case PD_OP_neg: return LIN_FIRST;
    case PD_OP_scale: return LIN_FIRST;
    default: return LIN_NONE;
    }
}

/* Some input is Partial on axis k, and each is smaller than output 0 (a
 * broadcast grows it). */
static int only_small_partials(const struct pdi_call *g, const struct pdi_spmd *s, int k)
{
    int64_t out = pdi_numel(g->meta[0].shape, g->meta[0].ndim);
    int any = 0;
    for (int i = 0; i < s->n_in; i++) {
        if (!is_partial(&s->in[i][k])) continue;
        if (pdi_numel(g->in[i]->shape, g->in[i]->ndim) >= out) return 0;
        any = 1;
    }
    return any;
}

static int spmd_pointwise_axis(const struct pdi_call *g, struct pdi_spmd *s, int k, int target)
{
    const struct pdi_meta *o = &g->meta[0];
    int nd = o->ndim, od = -1, order = 0;
    /* the output dim sharded on k: the target input's (in place), else the first input's */
    for (int i = (target >= 0 ? target : 0); i < (target >= 0 ? target + 1 : s->n_in) && od < 0; i++) {
        const struct pd_tensor *x = g->in[i];
        const struct pd_placement *p = &s->in[i][k];
        int sh = nd - x->ndim;
        if (is_shard(p) && sh >= 0 && x->shape[p->dim] == o->shape[p->dim + sh]) od = p->dim + sh, order = p->order;
    }
    if (od >= 0) {
        for (int i = 0; i < s->n_in; i++) {
            const struct pd_tensor *x = g->in[i];
            int d = od - (nd - x->ndim);
            s->in[i][k] = d >= 0 && x->shape[d] == o->shape[od] ? (struct pd_placement){PD_SHARD, d, order, 0} : R;
        }
        for (int j = 0; j < s->n_out; j++)
            s->out[j][k] = g->meta[j].ndim == nd && g->meta[j].shape[od] == o->shape[od]
                               ? (struct pd_placement){PD_SHARD, od, order, 0} : R;
        return PD_OK;
    }
    /* no shard on k: Partial survives a linear op, unless every Partial
     * input is broadcast up: reducing them moves fewer bytes than reducing
     * the grown output later */
    if (only_small_partials(g, s, k)) {
        replicate_axis(s, k);
        return PD_OK;
    }
    enum lin lin = linearity(g);
    int first_p = -1, n_p = 0;
    enum pd_reduce_op op = PD_RED_SUM;
    for (int i = 0; i < s->n_in; i++)
        if (is_partial(&s->in[i][k])) {
            if (first_p < 0) first_p = i, op = s->in[i][k].op;
            n_p++;
        }
    if (target >= 0 && !is_partial(&s->in[target][k])) first_p = -1; /* in place into a non-Partial */
    int ok = first_p >= 0 && is_linear_partial(&s->in[first_p][k]);
    if (ok && lin == LIN_SUM) {
        for (int i = 0; i < s->n_in; i++) /* every term Partial (R → P: no communication) */
            if (!is_partial(&s->in[i][k]) || s->in[i][k].op != op) s->in[i][k] = pd_partial(op);
    } else if (ok && lin == LIN_ONE) {
        for (int i = 0; i < s->n_in; i++)
            if (i != first_p) s->in[i][k] = R;
    } else if (ok && lin == LIN_FIRST && first_p == 0) {
        for (int i = 1; i < s->n_in; i++) s->in[i][k] = R;
    } else {
        if (target >= 0 && is_partial(&s->in[target][k]))
            return pdi_errorf(PD_ERR_UNSUPPORTED, "%s_: cannot write into a Partial tensor in place (reshard it to "
                              "Replicate first)", pdi_ops[g->op].name);
        replicate_axis(s, k);
        return PD_OK;
    }
    out_all(s, k, pd_partial(op));
    (void)n_p;
    return PD_OK;
}

int pdi_spmd_pointwise(const struct pdi_call *g, struct pdi_spmd *s)
{
    int target = g->inplace || g->n_writes ? 0 : -1;
    if (s->n_out == 0) return spmd_keep(g, s);
    for (int k = 0; k < s->mdim; k++) {
        int rc = spmd_pointwise_axis(g, s, k, target);
        if (rc) return rc;
    }
    return PD_OK;
}

/* ---- reductions ------------------------------------------------------- */
int pdi_spmd_reduce(const struct pdi_call *g, struct pdi_spmd *s)
{
    if (g->op == PD_OP_grad_sumsq) {
        /* Sum of squares of every input (gradient clipping): a sharded
         * input's pieces add up; a replicated one must count once, so it
         * is zero off coordinate 0 (Replicate → Partial is exactly that);
         * a Partial one is reduced first (its square is not the sum of the
         * squares), and then the whole axis is replicated. */
        for (int k = 0; k < s->mdim; k++) {
            int any_shard = 0, any_partial = 0;
            for (int i = 0; i < s->n_in; i++) {
                any_shard |= is_shard(&s->in[i][k]);
                any_partial |= is_partial(&s->in[i][k]);
            }
            if (any_partial || !any_shard) {
                replicate_axis(s, k);
                continue;
            }
            for (int i = 0; i < s->n_in; i++)
                if (!is_shard(&s->in[i][k])) s->in[i][k] = pd_partial(PD_RED_SUM);
            out_all(s, k, pd_partial(PD_RED_SUM));
        }
        return PD_OK;
    }
    const struct pd_tensor *x = g->in[0];
    unsigned mask;
    int rc = pdi_axes_mask(g, x, &mask);
    if (rc) return rc;
    int keep = g->a.reduce.keepdim != 0;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k];
        if (is_partial(p)) {
            if ((g->op == PD_OP_sum || g->op == PD_OP_mean) && is_linear_partial(p)) out_all(s, k, *p);
            else replicate_axis(s, k);
            continue;
        }
        if (!is_shard(p)) { out_all(s, k, R); continue; }
        int d = p->dim;
        if (!(mask & (1u << d))) { /* carried: the output dim */
            int od = d;
            for (int e = 0; e < d && !keep; e++) od -= (mask >> e) & 1;
            out_all(s, k, (struct pd_placement){PD_SHARD, od, p->order, 0});
            continue;
        }
        enum pd_reduce_op op = PD_RED_COUNT;
        if (g->op == PD_OP_sum) op = PD_RED_SUM;
        else if (g->op == PD_OP_amax) op = PD_RED_MAX;
        else if (g->op == PD_OP_amin) op = PD_RED_MIN;
        else if (g->op == PD_OP_mean && x->shape[d] % pieces(s, s->in[0], d) == 0) op = PD_RED_AVG;
        int n = pieces(s, s->in[0], d);
        int64_t c = n ? (x->shape[d] + n - 1) / n : 0;
        int empty = c == 0 || (x->shape[d] + c - 1) / c < n; /* some rank holds no element: no max of its own */
        if (op == PD_RED_SUM || (op != PD_RED_COUNT && !empty)) {
            out_all(s, k, pd_partial(op));
        } else if (pdi_op_has_decomp(g->op) && (g->op == PD_OP_logsumexp || g->op == PD_OP_var ||
                                                 g->op == PD_OP_std || g->op == PD_OP_norm || g->op == PD_OP_mean)) {
            s->decompose = 1;
            return PD_OK;
        } else {
            replicate_axis(s, k);
        }
    }
    return PD_OK;
}

int pdi_spmd_by_kind(const struct pdi_call *g, struct pdi_spmd *s)
{
    switch (pdi_ops[g->op].kind) {
    case PDI_KIND_ELEMENTWISE:
    case PDI_KIND_BROADCAST: return pdi_spmd_pointwise(g, s);
    case PDI_KIND_REDUCE: return pdi_spmd_reduce(g, s);
    default: return pdi_spmd_replicate(g, s);
    }
}

/* ---- dims carried through: attention, rope, norms, concat ------------- */
/* Dims in `allowed` (a mask over input 0's dims, aligned left across the
 * inputs and outputs of the same rank) may stay sharded; the rest are
 * replicated. */
static int spmd_dims(const struct pdi_call *g, struct pdi_spmd *s, unsigned allowed)
{
    const struct pd_tensor *x0 = g->in[0];
    for (int k = 0; k < s->mdim; k++) {
        int d = -1, order = 0;
        for (int i = 0; i < s->n_in && d < 0; i++) {
            const struct pd_placement *p = &s->in[i][k];
            if (is_shard(p) && (allowed >> p->dim & 1) && g->in[i]->ndim == x0->ndim &&
                g->in[i]->shape[p->dim] == x0->shape[p->dim])
                d = p->dim, order = p->order;
        }
        if (d < 0) { replicate_axis(s, k); continue; }
        struct pd_placement sp = {PD_SHARD, d, order, 0};
        for (int i = 0; i < s->n_in; i++)
            s->in[i][k] = g->in[i]->ndim > d && g->in[i]->shape[d] == x0->shape[d] ? sp : R; /* extent 1 of N: broadcast */
        for (int j = 0; j < s->n_out; j++)
            s->out[j][k] = g->meta[j].ndim > d && g->meta[j].shape[d] == x0->shape[d] ? sp : R;
    }
    return PD_OK;
}

/* sdpa and its backward: batch and heads (dims 0, 1 of [B, H, T, D]).
 * Equal query and key heads split alike, evenly or not. Grouped queries
 * split their heads only when both head counts split evenly (a piece's
 * query heads then map onto its own whole key heads); k and v keep their
 * own head extent. The check is made on the placements spmd_dims chose,
 * not on q's own: the head split may come from any input (dout, out), and
 * a check on q alone let 2 key heads split over 4 ranks, so that the
 * ranks holding none failed the local call while the others went on into
 * the next collective (docs/distributed.md, "The uneven rule"). Dropout
 * draws by global (b, h): then replicated. */
int pdi_spmd_attention(const struct pdi_call *g, struct pdi_spmd *s)
{
    int64_t hq = g->in[0]->shape[1], hk = g->in[1]->shape[1];
    if (hq == hk) return spmd_dims(g, s, 3u);
    int rc = spmd_dims(g, s, 3u);
    int n = pieces(s, s->in[0], 1);
    if (rc == PD_OK && n > 1 && (hk % n != 0 || hq % n != 0)) { /* batch only */
        for (int i = 0; i < s->n_in; i++) given_in(g, s, i);
        return spmd_dims(g, s, 1u);
    }
    for (int k = 0; k < s->mdim && rc == PD_OK; k++)
        if (is_shard(&s->in[0][k]) && s->in[0][k].dim == 1) {
            for (int i = 1; i < s->n_in; i++)
                if (g->in[i]->ndim == 4 && g->in[i]->shape[1] == hk && hk > 1) s->in[i][k] = s->in[0][k];
            for (int j = 0; j < s->n_out; j++)
                if (g->meta[j].ndim >= 2 && g->meta[j].shape[1] == hk) s->out[j][k] = s->in[0][k];
        }
    return rc;
}

/* rope: x [B, T, H, D], positions [T] or [B, T]: batch and heads. */
int pdi_spmd_rope(const struct pdi_call *g, struct pdi_spmd *s)
{
    int rc = spmd_dims(g, s, 1u | 4u);
    for (int k = 0; k < s->mdim && rc == PD_OK; k++) /* positions [T]: dim 0 is T, never the batch */
        if (g->in[1]->ndim == 1) s->in[1][k] = R;
    return rc;
}

/* layer_norm, rms_norm: the leading dims of x; weight and bias replicated. */
int pdi_spmd_norm(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pd_tensor *x = g->in[0];
    int lead = x->ndim - (int)g->a.norm.n_norm_axes;
    int rc = spmd_dims(g, s, lead > 0 ? (1u << lead) - 1 : 0);
    for (int k = 0; k < s->mdim && rc == PD_OK; k++)
        for (int i = 1; i < s->n_in; i++) s->in[i][k] = R;
    return rc;
}

/* concat: every dim but the joined one. */
int pdi_spmd_concat(const struct pdi_call *g, struct pdi_spmd *s)
{
    int ax = (int)g->a.concat.axis;
    if (ax < 0) ax += g->in[0]->ndim;
    unsigned all = (1u << g->in[0]->ndim) - 1;
    /* inputs differ along the axis: spmd_dims compares extents, which are
     * equal off the axis */
    return spmd_dims(g, s, all & ~(1u << ax));
}

/* softmax, log_softmax: off the axis as pointwise; a sharded axis runs the
 * decomposition (its max and sum become Partial, then all-reduced; the
 * stage saves the reduced sum for log's backward, src/dist/spmd.c
 * save_resharded, so backward does not reduce it again). */
int pdi_spmd_softmax(const struct pdi_call *g, struct pdi_spmd *s)
{
    int ax = (int)g->a.softmax.axis;
    for (int k = 0; k < s->mdim; k++)
        if (is_shard(&s->in[0][k]) && s->in[0][k].dim == ax) {
            s->decompose = 1;
            return PD_OK;
        }
    unsigned all = g->in[0]->ndim ? (1u << g->in[0]->ndim) - 1 : 0;
    return spmd_dims(g, s, all & ~(1u << ax));
}

/* nll_loss on this rank's classes [c0, c0 + C_local): a target outside
 * them (or ignored) becomes -1, which the local call ignores, so the
 * ranks' losses sum to the loss (Partial(sum)): each rank reads only its
 * picked logit, as Megatron's vocabulary-parallel cross entropy. */
static int nll_local(struct pdi_call *l, const struct pdi_spmd *s)
{
    struct pd_tensor *lp = l->in[0], *t = l->in[1];
    int cax = lp->ndim == 1 ? 0 : 1;
    if (lp->shape[cax] == 0) { /* no class here: no loss */
        int none = l->a.nll_loss.reduction == PD_REDUCTION_NONE;
        l->out[0] = pd_zeros(t->shape, none ? t->ndim : 0, lp->dtype);
        return l->out[0] ? PD_OK : pd_last_status();
    }
    struct pd_tensor *sh = pd_sub(t, pd_scalar((double)s->local_arg[0], t->dtype));
    struct pd_tensor *valid = pd_logical_and(pd_ne(t, pd_scalar((double)l->a.nll_loss.ignore_index, t->dtype)),
                                             pd_logical_and(pd_ge(sh, pd_scalar(0, t->dtype)),
                                                            pd_lt(sh, pd_scalar((double)lp->shape[cax], t->dtype))));
    struct pd_tensor *in[3] = {lp, pd_where(valid, sh, pd_scalar(-1, t->dtype)), l->n_in > 2 ? l->in[2] : NULL};
    if (!in[1]) return pd_last_status();
    struct pdi_call c = *l;
    c.in = in;
    c.a.nll_loss.ignore_index = -1;
    return pdi_dispatch(&c);
}

/* The mean over classes split: sum / the targets' total weight (the sum
 * comes back to the rule: the local path above). */
static int nll_mean_split(const struct pdi_call *c, struct pd_tensor **out)
{
    struct pd_tensor *t = c->in[1], *w = c->a.nll_loss.has_weight ? c->in[2] : NULL;
    struct pdi_attrs a = c->a;
    a.nll_loss.reduction = PD_REDUCTION_SUM;
    struct pd_tensor *num = pdi_calln(PD_OP_nll_loss, c->in, c->n_in, &a);
    struct pd_tensor *valid = pd_ne(t, pd_scalar((double)c->a.nll_loss.ignore_index, t->dtype));
    struct pd_tensor *wt = pd_cast(valid, num ? num->dtype : PD_F32);
    if (w) {
        struct pd_tensor *safe = pd_where(valid, t, pd_scalar(0, t->dtype));
        int64_t n = pd_tensor_numel(safe);
        struct pd_tensor *pick = pd_index_select(w, 0, pd_reshape(safe, &n, 1));
        wt = pd_mul(wt, pd_reshape(pd_cast(pick, wt->dtype), t->shape, t->ndim));
    }
    out[0] = pd_div(num, pd_sum(wt, NULL, 0, 0));
    return out[0] ? PD_OK : pd_last_status();
}

/* nll_loss: logp [N, C, d...] (or [C]), target [N, d...], [weight [C]].
 * Rows split: they stay split; reduction none keeps them, sum makes
 * Partial(sum). Classes split (vocabulary-parallel logits): the local
 * lookup above, Partial(sum) for every reduction but mean, whose ratio
 * runs nll_mean_split. Mean over split rows runs the decomposition. */
int pdi_spmd_nll_loss(const struct pdi_call *g, struct pdi_spmd *s)
{
    int red = (int)g->a.nll_loss.reduction, rows = 0, classes = 0;
    int nd = g->in[0]->ndim, cax = nd == 1 ? 0 : 1;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k], *t = &s->in[1][k];
        for (int i = 2; i < s->n_in; i++) s->in[i][k] = R;
        if (is_shard(p) && p->dim == cax) { /* vocabulary-parallel */
            classes = 1;
            *t = R;
            for (int i = 2; i < s->n_in; i++) s->in[i][k] = (struct pd_placement){PD_SHARD, 0, p->order, 0};
            s->out[0][k] = pd_partial(PD_RED_SUM);
            continue;
        }
        int d = -1, order = 0; /* a row dim of logp */
        if (is_shard(p) && nd > 1) d = p->dim, order = p->order;
        else if (is_shard(t) && nd > 1) d = t->dim ? t->dim + 1 : 0, order = t->order;
        if (d < 0) { replicate_axis(s, k); continue; }
        rows = 1;
        *p = (struct pd_placement){PD_SHARD, d, order, 0};
        *t = (struct pd_placement){PD_SHARD, d ? d - 1 : 0, order, 0};
        if (red == PD_REDUCTION_NONE) s->out[0][k] = (struct pd_placement){PD_SHARD, d ? d - 1 : 0, order, 0};
        else s->out[0][k] = pd_partial(PD_RED_SUM);
    }
    if (classes && red == PD_REDUCTION_MEAN) {
        s->decompose = 1;
        s->decomp = nll_mean_split;
    } else if (rows && red == PD_REDUCTION_MEAN) {
        s->decompose = 1;
    } else if (classes) {
        int64_t c0, c1;
        pdi_dist_range(s->mesh, s->in[0], g->in[0]->shape, cax, &c0, &c1);
        s->local = nll_local;
        s->local_arg[0] = c0;
    }
    return PD_OK;
}

/* nll_loss_backward's local call: logp is read for its shape and dtype
 * only (the kernel zeroes the output and writes w at the targets), so
 * when the rule left it in other placements than the output's it is
 * replaced by a zero of the output's local shape, expanded (no storage):
 * local_arg[1] is the output's local class extent (-1: logp as it is).
 * With the classes split (local_arg[0] >= 0: the piece's first class), a
 * target outside them (or ignored) becomes -1, which the local call
 * ignores, so each rank writes its own columns of d logp and nothing
 * else. */
static int nllb_local(struct pdi_call *l, const struct pdi_spmd *s)
{
    struct pd_tensor *lp = l->in[0], *t = l->in[1], *in[3] = {lp, t, l->in[2]};
    struct pdi_call c = *l;
    c.in = in;
    if (s->local_arg[1] >= 0) {
        int64_t shape[PD_MAX_DIMS];
        int nd = t->ndim + 1;
        shape[0] = s->local_arg[1];
        if (lp->ndim > 1) {
            shape[0] = t->shape[0], shape[1] = s->local_arg[1];
            memcpy(shape + 2, t->shape + 1, sizeof(int64_t) * (size_t)(t->ndim - 1));
        }
        in[0] = lp = pd_expand(pd_scalar(0, lp->dtype), shape, nd);
        if (!lp) return pd_last_status();
    }
    if (s->local_arg[0] < 0) return pdi_dispatch(&c);
    t = pd_cast(t, PD_I64);
    int64_t cl = lp->shape[lp->ndim == 1 ? 0 : 1];
    struct pd_tensor *sh = pd_sub(t, pd_scalar((double)s->local_arg[0], PD_I64));
    struct pd_tensor *valid =
        pd_logical_and(pd_ne(t, pd_scalar((double)l->a.nll_loss_backward.ignore_index, PD_I64)),
                       pd_logical_and(pd_ge(sh, pd_scalar(0, PD_I64)), pd_lt(sh, pd_scalar((double)cl, PD_I64))));
    in[1] = pd_where(valid, sh, pd_scalar(-1, PD_I64));
    if (!in[1]) return pd_last_status();
    c.a.nll_loss_backward.ignore_index = -1;
    return pdi_dispatch(&c);
}

/* nll_loss_backward: logp [N, C, d...] (or [C]), target and w [N, d...];
 * out takes logp's layout. Classes split (vocabulary-parallel logits):
 * target and w replicated, out split like logp, each rank writing its
 * class range (nllb_local): no collective and no replicated [N, C]. Rows
 * split (in logp, target or w): all three split alike. Otherwise a
 * Partial(sum|avg) w stays Partial in out (the op is linear in w). logp's
 * values are never read: it keeps its placements whatever they are (a
 * Partial logp beside split rows is not reduce-scattered), and the local
 * call gets a stand-in of the output's local shape (nllb_local). */
int pdi_spmd_nll_loss_backward(const struct pdi_call *g, struct pdi_spmd *s)
{
    int nd = g->in[0]->ndim, cax = nd == 1 ? 0 : 1, classes = 0;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k], *t = &s->in[1][k], *w = &s->in[2][k];
        if (is_shard(p) && p->dim == cax) { /* vocabulary-parallel */
            classes = 1;
            *t = R, *w = R;
            s->out[0][k] = *p;
            continue;
        }
        int d = -1, order = 0; /* a row dim of logp */
        if (is_shard(p) && nd > 1) d = p->dim, order = p->order;
        else if (is_shard(t) && nd > 1) d = t->dim ? t->dim + 1 : 0, order = t->order;
        else if (is_shard(w) && nd > 1) d = w->dim ? w->dim + 1 : 0, order = w->order;
        if (d >= 0) {
            *p = (struct pd_placement){PD_SHARD, d, order, 0};
            *t = *w = (struct pd_placement){PD_SHARD, d ? d - 1 : 0, order, 0};
            s->out[0][k] = *p;
            continue;
        }
        *t = R;
        *p = R;
        if (is_linear_partial(w)) s->out[0][k] = *w;
        else *w = R, s->out[0][k] = R;
    }
    int64_t c0 = 0, c1 = 0;
    pdi_dist_range(s->mesh, s->out[0], g->in[0]->shape, cax, &c0, &c1);
    s->local_arg[0] = classes ? c0 : -1;
    s->local_arg[1] = -1;
    struct pd_placement asked[PD_MAX_MESH_DIMS];
    memcpy(asked, s->in[0], sizeof asked);
    given_in(g, s, 0);
    if (!pdi_same_placements(asked, s->in[0], s->mdim)) s->local_arg[1] = c1 - c0; /* logp stays: a stand-in */
    if (classes || s->local_arg[1] >= 0) s->local = nllb_local;
    return PD_OK;
}

/* ---- matmul ----------------------------------------------------------- */
/* a [..., m, k] (or [..., k, m] transposed), b [..., k, n]: batch dims
 * aligned right and broadcast, m and n carried, k summed away. */
int pdi_spmd_matmul(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pd_tensor *a = g->in[0], *b = g->in[1];
    int ta = (int)g->a.matmul.trans_a, tb = (int)g->a.matmul.trans_b;
    int na = a->ndim, nb = b->ndim, no = g->meta[0].ndim;
    int am = ta ? na - 1 : na - 2, ak = ta ? na - 2 : na - 1;
    int bk = tb ? nb - 1 : nb - 2, bn = tb ? nb - 2 : nb - 1;
    const int64_t *os = g->meta[0].shape;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *pa = &s->in[0][k], *pb = &s->in[1][k], *po = &s->out[0][k];
        int da = is_shard(pa) ? pa->dim : -1, db = is_shard(pb) ? pb->dim : -1;
        struct pd_placement sa = R, sb = R, so = R;
        if (da >= 0 && da < na - 2 && a->shape[da] == os[da + no - na]) { /* a batch dim */
            int ob = da + no - na, dbb = ob - (no - nb);
            sa = *pa;
            so = (struct pd_placement){PD_SHARD, ob, pa->order, 0};
            sb = dbb >= 0 && b->shape[dbb] == os[ob] ? (struct pd_placement){PD_SHARD, dbb, pa->order, 0} : R;
        } else if (da == am) {
            sa = *pa;
            so = (struct pd_placement){PD_SHARD, no - 2, pa->order, 0};
        } else if (da == ak || (da < 0 && db == bk)) { /* the contraction: both sharded on k */
            int order = da == ak ? pa->order : pb->order;
            sa = (struct pd_placement){PD_SHARD, ak, order, 0};
            sb = (struct pd_placement){PD_SHARD, bk, order, 0};
            so = pd_partial(PD_RED_SUM);
        } else if (db == bn) {
            sb = *pb;
            so = (struct pd_placement){PD_SHARD, no - 1, pb->order, 0};
        } else if (db >= 0 && db < nb - 2 && b->shape[db] == os[db + no - nb]) {
            int ob = db + no - nb, dab = ob - (no - na);
            sb = *pb;
            so = (struct pd_placement){PD_SHARD, ob, pb->order, 0};
            sa = dab >= 0 && a->shape[dab] == os[ob] ? (struct pd_placement){PD_SHARD, dab, pb->order, 0} : R;
        } else if (is_linear_partial(pa) && !is_partial(pb)) {
            sa = *pa, so = *pa; /* linear in a */
        } else if (is_linear_partial(pb) && !is_partial(pa)) {
            sb = *pb, so = *pb;
        }
        *pa = sa, *pb = sb, *po = so;
    }
    return PD_OK;
}

/* ---- embedding -------------------------------------------------------- */
/* A vocabulary-parallel lookup on this rank's rows [v0, v0 + V_local) of
 * the table: ids outside them read row 0 and are zeroed, so the ranks'
 * results sum to the lookup (Partial(sum); docs/distributed.md). */
static int embedding_local(struct pdi_call *l, const struct pdi_spmd *s)
{
    struct pd_tensor *ids = l->in[0], *w = l->in[1];
    int64_t nv = w->shape[0], shape[PD_MAX_DIMS];
    memcpy(shape, ids->shape, sizeof(int64_t) * (size_t)ids->ndim);
    shape[ids->ndim] = w->shape[1];
    if (nv == 0) { /* an empty piece of the table */
        l->out[0] = pd_zeros(shape, ids->ndim + 1, w->dtype);
        return l->out[0] ? PD_OK : pd_last_status();
    }
    struct pd_tensor *sh = pd_sub(ids, pd_scalar((double)s->local_arg[0], ids->dtype));
    struct pd_tensor *valid = pd_logical_and(pd_ge(sh, pd_scalar(0, ids->dtype)), pd_lt(sh, pd_scalar((double)nv, ids->dtype)));
    struct pd_tensor *e = pd_embedding(pd_where(valid, sh, pd_scalar(0, ids->dtype)), w);
    l->out[0] = pd_where(pd_unsqueeze(valid, -1), e, pd_scalar(0, w->dtype));
    return l->out[0] ? PD_OK : pd_last_status();
}

/* ids [...], weight [V, D] → [..., D]: the ids' dims carried; the weight
 * split by columns (D) gives a split last dim; split by rows (the
 * vocabulary) gives Partial(sum) by the masked local lookup above; a
 * Partial weight stays Partial (the lookup is linear in it). */
int pdi_spmd_embedding(const struct pdi_call *g, struct pdi_spmd *s)
{
    int ni = g->in[0]->ndim, vocab = 0;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *pi = &s->in[0][k], *pw = &s->in[1][k];
        if (is_shard(pi)) {
            *pw = R;
            s->out[0][k] = *pi;
        } else if (is_shard(pw) && pw->dim == 1) {
            *pi = R;
            s->out[0][k] = (struct pd_placement){PD_SHARD, ni, pw->order, 0};
        } else if (is_shard(pw)) {
            *pi = R;
            s->out[0][k] = pd_partial(PD_RED_SUM);
            vocab = 1;
        } else if (is_linear_partial(pw)) {
            *pi = R;
            s->out[0][k] = *pw;
        } else {
            replicate_axis(s, k);
        }
    }
    if (vocab) {
        int64_t v0, v1;
        pdi_dist_range(s->mesh, s->in[1], g->in[1]->shape, 0, &v0, &v1);
        s->local = embedding_local;
        s->local_arg[0] = v0;
    }
    return PD_OK;
}

/* ---- views ------------------------------------------------------------ */
/* The local shape of a global shape under pl (this rank's pieces). */
static void local_shape(const struct pdi_spmd *s, const struct pd_placement *pl, const int64_t *gshape, int nd,
                        int64_t *out)
{
    for (int d = 0; d < nd; d++) {
        int64_t a, b;
        pdi_dist_range(s->mesh, pl, gshape, d, &a, &b);
        out[d] = b - a;
    }
}

/* view (reshape): dims group into runs of equal products; a sharded dim
 * stays sharded when it is the first of its run and both the input's dim
 * and the output's first dim of the run split evenly (then the pieces
 * cover the same elements), or when the run maps one dim to one dim. */
int pdi_spmd_view(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pd_tensor *x = g->in[0];
    const struct pdi_meta *o = &g->meta[0];
    int ni = x->ndim, no = o->ndim;
    int map[PD_MAX_DIMS], one[PD_MAX_DIMS]; /* input dim → output dim (-1: none), 1:1 run */
    for (int d = 0; d < ni; d++) map[d] = -1, one[d] = 0;
    int i = 0, j = 0;
    while (i < ni && j < no) {
        int i0 = i, j0 = j;
        int64_t pi = x->shape[i], pj = o->shape[j];
        while (pi != pj) {
            if (pi < pj && i + 1 < ni) pi *= x->shape[++i];
            else if (j + 1 < no) pj *= o->shape[++j];
            else break;
        }
        map[i0] = j0;
        one[i0] = i == i0 && j == j0;
        i++, j++;
    }
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k];
        if (is_partial(p)) { out_all(s, k, *p); continue; } /* a view is linear */
        if (!is_shard(p)) { s->out[0][k] = R; continue; }
        int d = p->dim, od = map[d], n = pieces(s, s->in[0], d);
        if (od >= 0 && (one[d] || (x->shape[d] % n == 0 && o->shape[od] % n == 0)))
            s->out[0][k] = (struct pd_placement){PD_SHARD, od, p->order, 0};
        else
            replicate_axis(s, k);
    }
    int64_t ls[PD_MAX_DIMS];
    local_shape(s, s->out[0], o->shape, no, ls);
    s->a.shape.shape.n = no;
    for (int d = 0; d < no; d++) s->a.shape.shape.v[d] = ls[d];
    return PD_OK;
}

/* expand: dims aligned right; an expanded dim was of size 1 (replicated).
 * A Partial input stays Partial when the expand does not grow it; one that
 * grows is reduced first (its N values, not the N C of the output). */
int pdi_spmd_expand(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pd_tensor *x = g->in[0];
    const struct pdi_meta *o = &g->meta[0];
    int sh = o->ndim - x->ndim;
    int grows = pdi_numel(o->shape, o->ndim) > pdi_numel(x->shape, x->ndim);
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k];
        if (is_partial(p) && grows) { replicate_axis(s, k); continue; }
        if (is_partial(p)) { s->out[0][k] = *p; continue; }
        if (is_shard(p) && x->shape[p->dim] == o->shape[p->dim + sh])
            s->out[0][k] = (struct pd_placement){PD_SHARD, p->dim + sh, p->order, 0};
        else
            replicate_axis(s, k);
    }
    int64_t ls[PD_MAX_DIMS];
    local_shape(s, s->out[0], o->shape, o->ndim, ls);
    s->a.shape.shape.n = o->ndim;
    for (int d = 0; d < o->ndim; d++) s->a.shape.shape.v[d] = ls[d];
    return PD_OK;
}

/* permute: a sharded dim moves with its data. */
int pdi_spmd_permute(const struct pdi_call *g, struct pdi_spmd *s)
{
    int nd = g->in[0]->ndim;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k];
        s->out[0][k] = *p;
        if (!is_shard(p)) continue;
        for (int o = 0; o < nd; o++) {
            int64_t q = g->a.permute.perm.v[o];
            if ((q < 0 ? q + nd : q) == p->dim) s->out[0][k].dim = o;
        }
    }
    return PD_OK;
}

/* A slice [start, start + step * len) of a dim of extent n split into
 * `np` pieces keeps it split when each piece of the input holds exactly
 * the elements of the same piece of the output (the uneven-split rule of
 * include/pd/dist.h on both sides): no element crosses ranks. That holds
 * for a tail trimmed within the last piece, or a step that divides an even
 * piece, from 0; any other start shifts the elements across piece
 * boundaries, and the dim is gathered (docs/distributed.md, "How ops are
 * distributed", says why that is the common choice). */
static int slice_fits(int64_t n, int np, int64_t start, int64_t step, int64_t len)
{
    int64_t c = (n + np - 1) / np, co = (len + np - 1) / np;
    for (int b = 0; b <= np; b++) {
        int64_t in0 = b * c < n ? b * c : n; /* the first output index at or past in0 */
        int64_t lo = in0 <= start ? 0 : (in0 - start - 1) / step + 1; /* ceil((in0 - start) / step), no overflow for any step */
        if (lo > len) lo = len;
        if (lo != (b * co < len ? b * co : len)) return 0;
    }
    return 1;
}

/* The local slice of a piece that fits: this rank's output piece [o0, o1)
 * of the slice, from its input piece starting at i0. */
static void local_slice(int64_t i0, int64_t o0, int64_t o1, int64_t *start, int64_t *stop, const int64_t *step)
{
    *start = o1 > o0 ? *start + *step * o0 - i0 : 0;
    *stop = o1 > o0 ? *start + *step * (o1 - o0 - 1) + 1 : 0;
}

/* slice: the other dims carried; the sliced dim stays split when the
 * pieces fit (slice_fits), else it is gathered. */
int pdi_spmd_slice(const struct pdi_call *g, struct pdi_spmd *s)
{
    int ax = (int)g->a.slice.axis;
    const struct pd_tensor *x = g->in[0];
    int np = pieces(s, s->in[0], ax);
    int fits = np > 1 && slice_fits(x->shape[ax], np, g->a.slice.start, g->a.slice.step, g->meta[0].shape[ax]);
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k];
        if (is_shard(p) && p->dim == ax && !fits) replicate_axis(s, k);
        else s->out[0][k] = *p; /* a slice is linear: Partial stays */
    }
    if (fits) {
        int64_t i0, i1, o0, o1;
        pdi_dist_range(s->mesh, s->in[0], x->shape, ax, &i0, &i1);
        pdi_dist_range(s->mesh, s->out[0], g->meta[0].shape, ax, &o0, &o1);
        local_slice(i0, o0, o1, &s->a.slice.start, &s->a.slice.stop, &s->a.slice.step);
    }
    return PD_OK;
}

/* ---- random, optimizers ----------------------------------------------- */
/* bernoulli: the input's placements; the local call draws its slice of the
 * whole draw (attribute slice: the global shape, then the piece's start). */
int pdi_spmd_bernoulli(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pd_tensor *x = g->in[0];
    for (int k = 0; k < s->mdim; k++) {
        if (is_partial(&s->in[0][k])) s->in[0][k] = R;
        s->out[0][k] = s->in[0][k];
    }
    if (g->a.bernoulli.slice.n) return pdi_spmd_replicate(g, s); /* a slice of a slice: whole */
    struct pdi_ints *sl = &s->a.bernoulli.slice;
    sl->n = 2 * x->ndim;
    for (int d = 0; d < x->ndim; d++) {
        int64_t a, b;
        pdi_dist_range(s->mesh, s->in[0], x->shape, d, &a, &b);
        sl->v[d] = x->shape[d];
        sl->v[x->ndim + d] = a;
    }
    if (2 * x->ndim > PDI_MAX_ATTR_INTS) return pdi_spmd_replicate(g, s);
    return PD_OK;
}

/* sgd_update, adam_update: inputs are planes of n tensors (params, then
 * masters and moments, then gradients: infer_update in src/ops/optim.c);
 * every plane of param j in param j's placements (the written ones must
 * be already), so the gradient follows its parameter. */
int pdi_spmd_update(const struct pdi_call *g, struct pdi_spmd *s)
{
    int n = s->n_in - g->n_writes; /* n params; n_writes = (planes - 1) n */
    if (n <= 0 || s->n_in % n) return pdi_spmd_replicate(g, s);
    for (int k = 0; k < s->mdim; k++) {
        for (int j = 0; j < n; j++) {
            struct pd_placement want = is_partial(&s->in[j][k]) ? R : s->in[j][k];
            for (int i = j; i < s->n_in; i += n) s->in[i][k] = want;
        }
        out_all(s, k, R);
    }
    return PD_OK;
}

int pdi_spmd_keep(const struct pdi_call *g, struct pdi_spmd *s) { return spmd_keep(g, s); }

/* amp_unscale: found_inf must be the whole tensors' flag before anything
 * is written. Each rank checks its pieces (nothing written), the flags
 * are all-reduced (max) over the mesh through the communication layer (so
 * a rank that never arrives ends the job within the timeout, and a rank
 * whose check failed is out of step), and if none is set the written
 * inputs are scaled as the op scales them (grad_scale's arithmetic). */
static int unscale_local(struct pdi_call *l, const struct pdi_spmd *s)
{
    struct pdi_call chk = *l;
    chk.a.amp_unscale.n_inplace = 0;
    int rc = pdi_dispatch(&chk);
    struct pd_tensor *flag = rc ? NULL : pd_contiguous(chk.out[0]);
    float *f = flag ? (float *)pd_tensor_data(flag) : NULL;
#ifdef PD_HAVE_MPI
    /* the mesh caches its communicators: not const to the communication layer */
    struct pdi_comm_on on = pdi_comm_on_axes("grad_scaler", (struct pd_mesh *)s->mesh, NULL, 0);
    if (!f) pdi_comm_skip(&on, "all-reduce");
    else rc = pdi_comm_allreduce(&on, NULL, f, 1, PD_F32, PD_RED_MAX);
#else
    PDI_UNUSED(s);
#endif
    if (!f) return rc ? rc : pd_last_status();
    if (rc) return rc;
    l->out[0] = flag;
    if (*f != 0 || l->a.amp_unscale.n_inplace == 0) return PD_OK;
    struct pdi_call sc = {.op = PD_OP_grad_scale, .n_in = (int)l->a.amp_unscale.n_inplace, .n_out = 0, .in = l->in};
    sc.a.grad_scale.scale = l->a.amp_unscale.inv_scale;
    return pdi_dispatch(&sc);
}

/* amp_unscale: each input keeps its placements (the written ones must);
 * the flag is replicated, made whole by unscale_local. */
int pdi_spmd_amp_unscale(const struct pdi_call *g, struct pdi_spmd *s)
{
    int rc = spmd_keep(g, s);
    s->local = unscale_local;
    return rc;
}

/* ---- dims carried, checked: index, scan, sort, pad, pool, conv ------- */
/* Dims of input 0 in `allowed` may stay sharded. Every input with input
 * 0's rank follows it: one with input 0's extent on the dim is sharded
 * with it, one of extent 1 there (a broadcast) is replicated, and another
 * extent (a gather's smaller index) keeps the dim whole. Inputs of
 * another rank are replicated; so are Partial inputs (reduced first).
 * Outputs of at least input 0's rank with its extent on the dim follow;
 * the others are replicated (callers fix outputs that are sums). */
static int dim_follows(const struct pdi_call *g, int d, unsigned follow)
{
    const struct pd_tensor *x0 = g->in[0];
    for (int i = 1; i < g->n_in; i++) {
        const struct pd_tensor *x = g->in[i];
        if ((follow >> i & 1) && x->ndim == x0->ndim && x->shape[d] != x0->shape[d] && x->shape[d] != 1) return 0;
    }
    for (int j = 0; j < g->n_out; j++)
        if (g->meta[j].ndim >= x0->ndim && g->meta[j].shape[d] != x0->shape[d]) return 0;
    return 1;
}

/* follow: a mask of the inputs that follow input 0 (the others, such as
 * a convolution's weight, stay replicated whatever their rank). */
static int spmd_aligned_in(const struct pdi_call *g, struct pdi_spmd *s, unsigned allowed, unsigned follow)
{
    const struct pd_tensor *x0 = g->in[0];
    follow |= 1u;
    for (int k = 0; k < s->mdim; k++) {
        int d = -1, order = 0;
        for (int i = 0; i < s->n_in && d < 0; i++) {
            const struct pd_placement *p = &s->in[i][k];
            if ((follow >> i & 1) && is_shard(p) && g->in[i]->ndim == x0->ndim && (allowed >> p->dim & 1) &&
                g->in[i]->shape[p->dim] == x0->shape[p->dim] && dim_follows(g, p->dim, follow))
                d = p->dim, order = p->order;
        }
        if (d < 0) { replicate_axis(s, k); continue; }
        struct pd_placement sp = {PD_SHARD, d, order, 0};
        for (int i = 0; i < s->n_in; i++)
            s->in[i][k] = (follow >> i & 1) && g->in[i]->ndim == x0->ndim && g->in[i]->shape[d] == x0->shape[d] ? sp : R;
        for (int j = 0; j < s->n_out; j++)
            s->out[j][k] = g->meta[j].ndim >= x0->ndim && g->meta[j].shape[d] == x0->shape[d] ? sp : R;
    }
    return PD_OK;
}

static int spmd_aligned(const struct pdi_call *g, struct pdi_spmd *s, unsigned allowed)
{
    return spmd_aligned_in(g, s, allowed, ~0u);
}

static unsigned all_dims(int ndim) { return ndim > 0 ? (1u << ndim) - 1 : 0; }

/* An `input_shape` attribute holding output 0's global shape: the local one. */
static void local_out_shape(struct pdi_spmd *s, const struct pdi_meta *o, struct pdi_ints *v)
{
    int64_t ls[PD_MAX_DIMS];
    local_shape(s, s->out[0], o->shape, o->ndim, ls);
    v->n = o->ndim;
    for (int d = 0; d < o->ndim; d++) v->v[d] = ls[d];
}

static int64_t bytes_of(const struct pd_tensor *t) { return pd_tensor_numel(t) * (int64_t)pd_dtype_size(t->dtype); }

/* index_add and scatter_add whose added rows are split: the sums of each
 * rank's rows make a Partial(sum) output, x turned Partial too (R -> P: x
 * on coordinate 0, zeros elsewhere), instead of gathering index and src.
 * Taken on mesh axis k when src is split along the indexed dim there (the
 * index with it: index_add's 1-d index on its dim 0, scatter_add's on the
 * indexed dim with src's extent), x is replicated or Partial(sum) there,
 * and the Partial output, reduced once later, moves less than the gather
 * would: 2 |x| <= |src| + |index| (an all-reduce moves about twice its
 * buffer, an all-gather the whole). The embedding's gradient is this
 * index_add: data parallelism then all-reduces it with the other
 * gradients (docs/distributed.md "Communication per step"). The inputs'
 * own placements (given_pl): the aligned rule has replicated axis k. */
static void index_add_partial(const struct pdi_call *g, struct pdi_spmd *s)
{
    int ax = (int)g->a.index_axis.axis, idim = g->op == PD_OP_index_add ? 0 : ax;
    const struct pd_tensor *x = g->in[0], *idx = g->in[1], *src = g->in[2];
    if (g->op == PD_OP_scatter_add && idx->shape[ax] != src->shape[ax]) return;
    if (2 * bytes_of(x) > bytes_of(src) + bytes_of(idx)) return;
    struct pd_placement psum = pd_partial(PD_RED_SUM);
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement ps = given_pl(g, 2, k), px = given_pl(g, 0, k);
        if (!is_shard(&ps) || ps.dim != ax || pd_mesh_size(s->mesh, k) == 1) continue;
        if (!(px.kind == PD_REPLICATE || (is_partial(&px) && px.op == PD_RED_SUM))) continue;
        /* the aligned rule kept nothing split on axis k: it replicated it */
        if (s->out[0][k].kind != PD_REPLICATE) continue;
        s->in[0][k] = psum;
        s->in[1][k] = (struct pd_placement){PD_SHARD, idim, ps.order, PD_RED_SUM};
        s->in[2][k] = ps;
        s->out[0][k] = psum;
    }
}

/* gather, index_select, scatter, scatter_add, index_add: every dim but the
 * indexed one (an index of input 0's rank must match x there); the sums of
 * split rows stay Partial (index_add_partial). */
int pdi_spmd_index(const struct pdi_call *g, struct pdi_spmd *s)
{
    int ax = (int)g->a.index_axis.axis;
    int sums = (g->op == PD_OP_index_add || g->op == PD_OP_scatter_add) && g->n_in == 3;
    unsigned allowed = all_dims(g->in[0]->ndim) & ~(1u << ax);
    /* scatter's index does not broadcast: an index of extent 1 on a dim
     * that x has longer writes only x's first slice there, which a split x
     * would take as each piece's first slice; such a dim stays whole */
    if (g->op == PD_OP_scatter || g->op == PD_OP_scatter_add)
        for (int d = 0; d < g->in[0]->ndim; d++)
            if (g->in[1]->ndim == g->in[0]->ndim && g->in[1]->shape[d] != g->in[0]->shape[d]) allowed &= ~(1u << d);
    int rc = spmd_aligned(g, s, allowed);
    if (rc == PD_OK && sums) index_add_partial(g, s);
    return rc;
}

/* cumsum, cumprod, topk, sort: every dim but the scanned (sorted) one. */
int pdi_spmd_along_axis(const struct pdi_call *g, struct pdi_spmd *s)
{
    int ax = (int)(g->op == PD_OP_topk ? g->a.topk.axis : g->op == PD_OP_sort ? g->a.sort.axis : g->a.scan.axis);
    if (g->in[0]->ndim == 0) return pdi_spmd_replicate(g, s);
    return spmd_aligned(g, s, all_dims(g->in[0]->ndim) & ~(1u << ax));
}

/* flip: every dim stays split, reversed ones included: each rank flips its
 * piece, which then holds a contiguous range of the output's indices, and
 * the pieces are exchanged point to point (pdi_flip_local, spmd_rules2.c):
 * an even split swaps piece b with piece np - 1 - b (one send and one
 * receive with the rank at the mirrored coordinates); an uneven one sends
 * each overlap of a flipped piece with another rank's piece under the
 * uneven rule (at most two per rank and dim). A Partial input stays (a
 * permutation commutes with the reduction). */
int pdi_spmd_flip(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pd_tensor *x = g->in[0];
    unsigned mask = (unsigned)g->a.flip.mask;
    int swap = 0, even = 1;
    for (int k = 0; k < s->mdim; k++) {
        const struct pd_placement *p = &s->in[0][k];
        s->out[0][k] = *p;
        if (is_shard(p) && (mask >> p->dim & 1) && s->mesh->shape[k] > 1) {
            swap = 1;
            even &= x->shape[p->dim] % pieces(s, s->in[0], p->dim) == 0;
        }
    }
    if (swap) s->local = pdi_flip_local, s->local_arg[0] = even;
    return PD_OK;
}

/* pad, pad_backward: the dims without padding. */
int pdi_spmd_pad(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pdi_ints *pads = g->op == PD_OP_pad ? &g->a.pad.pads : &g->a.pad_backward.pads;
    int nd = g->in[0]->ndim;
    unsigned allowed = all_dims(nd);
    for (int q = 0; 2 * q + 1 < pads->n; q++)
        if (pads->v[2 * q] || pads->v[2 * q + 1]) allowed &= ~(1u << (nd - 1 - q));
    int rc = spmd_aligned(g, s, allowed);
    if (rc == PD_OK && g->op == PD_OP_pad_backward) local_out_shape(s, &g->meta[0], &s->a.pad_backward.input_shape);
    return rc;
}

/* tril, triu: every dim; a rank holding rows from r0 and columns from c0
 * keeps the diagonal diagonal + r0 - c0 of its piece. */
int pdi_spmd_tri(const struct pdi_call *g, struct pdi_spmd *s)
{
    int nd = g->in[0]->ndim;
    int rc = spmd_aligned(g, s, all_dims(nd));
    if (rc || nd < 2) return rc;
    int64_t r0, r1, c0, c1;
    pdi_dist_range(s->mesh, s->out[0], g->meta[0].shape, nd - 2, &r0, &r1);
    pdi_dist_range(s->mesh, s->out[0], g->meta[0].shape, nd - 1, &c0, &c1);
    s->a.tri.diagonal += r0 - c0;
    return PD_OK;
}

/* one_hot: the ids' dims (the class dim is new, whole). */
int pdi_spmd_one_hot(const struct pdi_call *g, struct pdi_spmd *s) { return spmd_aligned(g, s, all_dims(g->in[0]->ndim)); }

/* interpolate, the pools and their backwards: batch and channels of
 * [N, C, H, W] (of an unbatched [C, H, W]: the channels). */
int pdi_spmd_batch_channels(const struct pdi_call *g, struct pdi_spmd *s)
{
    int nd = g->in[0]->ndim;
    int rc = spmd_aligned(g, s, nd == 4 ? 3u : nd == 3 ? 1u : 0u);
    if (rc == PD_OK && g->op == PD_OP_avg_pool2d_backward)
        local_out_shape(s, &g->meta[0], &s->a.avg_pool2d_backward.input_shape);
    return rc;
}

/* conv2d, conv2d_backward_data: the batch (weight and bias whole);
 * conv2d_backward_weight (gout, x): a split batch sums away: Partial. */
int pdi_spmd_conv(const struct pdi_call *g, struct pdi_spmd *s)
{
    int batched = g->in[g->op == PD_OP_conv2d_backward_weight ? 1 : 0]->ndim == 4; /* else [C, H, W] */
    if (!batched) return pdi_spmd_replicate(g, s);
    if (g->op != PD_OP_conv2d_backward_weight) {
        int rc = spmd_aligned_in(g, s, 1u, 1u); /* weight, bias: never the batch */
        if (rc == PD_OK && g->op == PD_OP_conv2d_backward_data)
            local_out_shape(s, &g->meta[0], &s->a.conv2d_backward_data.input_shape);
        return rc;
    }
    for (int k = 0; k < s->mdim; k++) {
        const struct pd_placement *p0 = &s->in[0][k], *p1 = &s->in[1][k];
        const struct pd_placement *p = is_shard(p0) && p0->dim == 0 ? p0 : is_shard(p1) && p1->dim == 0 ? p1 : NULL;
        if (!p) { replicate_axis(s, k); continue; }
        struct pd_placement sp = {PD_SHARD, 0, p->order, 0};
        s->in[0][k] = s->in[1][k] = sp;
        s->out[0][k] = pd_partial(PD_RED_SUM);
    }
    return PD_OK;
}

/* group_norm: the batch; weight and bias whole. */
int pdi_spmd_group_norm(const struct pdi_call *g, struct pdi_spmd *s) { return spmd_aligned_in(g, s, 1u, 1u); }

/* norm_backward (x, gout, [w]) → dx, [dw], [db]: the leading dims of x
 * carry to dx; dw and db sum over them, so they are Partial(sum) on the
 * axes that split a leading dim. */
int pdi_spmd_norm_backward(const struct pdi_call *g, struct pdi_spmd *s)
{
    int nd = g->in[0]->ndim, lead = nd - (int)g->a.norm_backward.n_norm_axes;
    int rc = spmd_aligned_in(g, s, lead > 0 ? (1u << lead) - 1 : 0, 3u); /* the weight: replicated */
    for (int k = 0; k < s->mdim && rc == PD_OK; k++)
        for (int j = 1; j < s->n_out; j++)
            s->out[j][k] = is_shard(&s->out[0][k]) ? pd_partial(PD_RED_SUM) : R;
    return rc;
}

/* diagonal of the planes (axis1, axis2): the other (batch) dims carried.
 * A plane dim split by rows stays split when every row holds a diagonal
 * element and the diagonal has one per row (offset >= 0 and rows + offset
 * <= columns: the diagonal's pieces are then the rows' pieces, and a piece
 * from row r0 holds the local diagonal offset + r0); columns alike. The
 * input stays as it is on the other axes that split a plane dim: each rank
 * takes the diagonal of its piece (offset + r0 - c0), and only those
 * pieces of the diagonal are all-gathered over those axes
 * (pdi_diagonal_gather_local, spmd_rules2.c), never the plane. */
struct diag_geom {
    int a1, a2, nb;       /* the plane dims; the diagonal's dim in the output (the batch dims before it) */
    int64_t off;          /* clamped by infer */
    int rows_ok, cols_ok; /* a split of rows (columns) maps onto the diagonal's pieces */
};

static struct diag_geom diag_geom(const int64_t *shape, int nd, int64_t off, int64_t ax1, int64_t ax2)
{
    struct diag_geom d = {pdi_norm_axis64(ax1, nd), pdi_norm_axis64(ax2, nd), nd - 2, off, 0, 0};
    int64_t r = shape[d.a1], c = shape[d.a2];
    d.rows_ok = off >= 0 && r <= c - off;
    d.cols_ok = off <= 0 && c <= r + off;
    return d;
}

/* The output dim of batch dim d of the diagonal's input. */
static int diag_batch_dim(const struct diag_geom *dg, int d) { return d - (d > dg->a1) - (d > dg->a2); }

/* The plane dim whose split the diagonal keeps (-1: none) under pl. */
static int diag_plane(const struct pdi_spmd *s, const struct pd_placement *pl, const struct diag_geom *dg)
{
    for (int k = 0; k < s->mdim; k++)
        if (is_shard(&pl[k]) && pl[k].dim == dg->a1 && dg->rows_ok) return dg->a1;
    for (int k = 0; k < s->mdim; k++)
        if (is_shard(&pl[k]) && pl[k].dim == dg->a2 && dg->cols_ok) return dg->a2;
    return -1;
}

int pdi_spmd_diagonal(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pd_tensor *x = g->in[0];
    const struct pdi_attrs_diagonal *a = &g->a.diagonal;
    struct diag_geom dg = diag_geom(x->shape, x->ndim, a->offset, a->axis1, a->axis2);
    int keep = diag_plane(s, s->in[0], &dg), gather = 0;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k];
        if (!is_shard(p)) s->out[0][k] = *p; /* a selection: Partial stays */
        else if (p->dim == keep) s->out[0][k] = (struct pd_placement){PD_SHARD, dg.nb, p->order, 0};
        else if (p->dim == dg.a1 || p->dim == dg.a2) s->out[0][k] = R, gather |= s->mesh->shape[k] > 1;
        else s->out[0][k] = (struct pd_placement){PD_SHARD, diag_batch_dim(&dg, p->dim), p->order, 0};
    }
    if (gather) s->local = pdi_diagonal_gather_local;
    int64_t r0, r1, c0, c1;
    pdi_dist_range(s->mesh, s->in[0], x->shape, dg.a1, &r0, &r1);
    pdi_dist_range(s->mesh, s->in[0], x->shape, dg.a2, &c0, &c1);
    s->a.diagonal.offset = a->offset + r0 - c0;
    return PD_OK;
}

/* diagonal_backward (the diagonal's gradient → zeros of the input's shape
 * with it on the diagonal): the same maps backwards. A linear Partial
 * stays (zeros off the diagonal); max and min are reduced first. */
int pdi_spmd_diagonal_backward(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pdi_attrs_diagonal_backward *a = &g->a.diagonal_backward;
    const struct pdi_meta *o = &g->meta[0];
    struct diag_geom dg = diag_geom(o->shape, o->ndim, a->offset, a->axis1, a->axis2);
    int plane = dg.rows_ok ? dg.a1 : dg.cols_ok ? dg.a2 : -1;
    int bdim[PD_MAX_DIMS]; /* the output dim of each batch dim of the gradient */
    for (int d = 0, b = 0; d < o->ndim; d++)
        if (d != dg.a1 && d != dg.a2) bdim[b++] = d;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k];
        if (is_partial(p) && !is_linear_partial(p)) replicate_axis(s, k);
        else if (!is_shard(p)) s->out[0][k] = *p;
        else if (p->dim < dg.nb) s->out[0][k] = (struct pd_placement){PD_SHARD, bdim[p->dim], p->order, 0};
        else if (plane >= 0) s->out[0][k] = (struct pd_placement){PD_SHARD, plane, p->order, 0};
        else replicate_axis(s, k);
    }
    int64_t r0, r1, c0, c1;
    pdi_dist_range(s->mesh, s->out[0], o->shape, dg.a1, &r0, &r1);
    pdi_dist_range(s->mesh, s->out[0], o->shape, dg.a2, &c0, &c1);
    s->a.diagonal_backward.offset = a->offset + r0 - c0;
    local_out_shape(s, o, &s->a.diagonal_backward.input_shape);
    return PD_OK;
}

/* slice_backward: every dim but the sliced one, which stays split when
 * the pieces fit as for slice (the output is the sliced tensor's shape:
 * its local piece). */
int pdi_spmd_slice_backward(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pdi_attrs_slice_backward *a = &g->a.slice_backward;
    int nd = g->in[0]->ndim, ax = (int)a->axis;
    if (ax < 0) ax += nd;
    const int64_t *os = g->meta[0].shape;
    int np = ax >= 0 && ax < nd ? pieces(s, s->in[0], ax) : 1;
    int fits = np > 1 && slice_fits(os[ax], np, a->start, a->step, g->in[0]->shape[ax]);
    struct pd_placement in0[PD_MAX_MESH_DIMS];
    memcpy(in0, s->in[0], sizeof in0);
    int rc = spmd_aligned(g, s, all_dims(nd) & ~(1u << ax)); /* the extents differ on ax: kept below */
    if (rc) return rc;
    for (int k = 0; k < s->mdim && fits; k++)
        if (is_shard(&in0[k]) && in0[k].dim == ax) s->in[0][k] = s->out[0][k] = in0[k];
    local_out_shape(s, &g->meta[0], &s->a.slice_backward.input_shape);
    if (fits) {
        int64_t i0, i1, o0, o1; /* the slice's input is this op's output */
        pdi_dist_range(s->mesh, s->out[0], os, ax, &i0, &i1);
        pdi_dist_range(s->mesh, s->in[0], g->in[0]->shape, ax, &o0, &o1);
        s->a.slice_backward.axis = ax;
        local_slice(i0, o0, o1, &s->a.slice_backward.start, &s->a.slice_backward.stop, &s->a.slice_backward.step);
    }
    return PD_OK;
}

/* Creation ops have no input, so the stage never runs them: the
 * pd_dtensor_* constructors (src/dist/create.c) build sharded tensors
 * directly. Data-dependent results (nonzero, unique, masked_select,
 * masked_scatter: an element's place depends on the elements before it)
 * run replicated. */
int pdi_spmd_creation(const struct pdi_call *g, struct pdi_spmd *s) { return pdi_spmd_replicate(g, s); }

/* flashmask and its backward, laid out [B, S, H, D] (idx [B, Hm, Sk, C],
 * lse [B, Hq, Sq]): the batch, or the heads when query and key heads
 * split alike (equal counts, or both even over the pieces for grouped
 * queries) and the mask is per head or shared. Dropout draws by global
 * (b, h): then replicated. */
int pdi_spmd_flashmask(const struct pdi_call *g, struct pdi_spmd *s)
{
    if (g->a.flashmask.dropout_p > 0) return pdi_spmd_replicate(g, s);
    int has_idx = g->a.flashmask.has_idx != 0, bwd = g->op == PD_OP_flashmask_backward;
    int64_t hq = g->in[0]->shape[2], hk = g->in[1]->shape[2];
    int hdim_in[8], n = s->n_in; /* each input's head dim (-1: none) */
    for (int i = 0; i < n && i < 8; i++) hdim_in[i] = 2;
    if (has_idx) hdim_in[3] = g->in[3]->shape[1] == hk ? 1 : -1;
    if (bwd) hdim_in[3 + has_idx + 1] = 1; /* lse */
    for (int k = 0; k < s->mdim; k++) {
        int batch = 0, heads = 0, order = 0;
        for (int i = 0; i < n && i < 8; i++) {
            const struct pd_placement *p = &s->in[i][k];
            if (!is_shard(p)) continue;
            if (p->dim == 0) { batch = 1, order = p->order; break; }
            if (p->dim == hdim_in[i] && !heads) heads = 1, order = p->order;
        }
        if (!batch && heads) {
            struct pd_placement tmp[PD_MAX_MESH_DIMS];
            memcpy(tmp, s->in[0], sizeof tmp);
            tmp[k] = (struct pd_placement){PD_SHARD, 2, order, 0};
            int np = pieces(s, tmp, 2);
            heads = hq == hk || (hq % np == 0 && hk % np == 0);
        }
        if (!batch && !heads) { replicate_axis(s, k); continue; }
        for (int i = 0; i < n && i < 8; i++) {
            int d = batch ? 0 : hdim_in[i];
            s->in[i][k] = d >= 0 && g->in[i]->shape[d] == (batch ? g->in[0]->shape[0] : g->in[i]->shape[d])
                              ? (struct pd_placement){PD_SHARD, d, order, 0} : R;
        }
        for (int j = 0; j < s->n_out; j++) /* out, lse; or dq, dk, dv */
            s->out[j][k] = (struct pd_placement){PD_SHARD, batch ? 0 : (!bwd && j == 1 ? 1 : 2), order, 0};
    }
    return PD_OK;
}
