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
 *     decomposition instead, whose ops are distributed one by one.
 * Random ops run on the placements of their input with the draw of the
 * whole tensor (bernoulli's slice attribute): each rank draws its slice of
 * the single-process stream.
 */
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
    /* no shard on k: Partial survives a linear op */
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
            s->in[i][k] = g->in[i]->ndim > d && g->in[i]->shape[d] == x0->shape[d] && g->in[i]->shape[d] > 1 ? sp : R;
        for (int j = 0; j < s->n_out; j++)
            s->out[j][k] = g->meta[j].ndim > d && g->meta[j].shape[d] == x0->shape[d] ? sp : R;
    }
    return PD_OK;
}

/* sdpa, flashmask and their backwards: batch and heads (dims 0, 1 of
 * [B, H, T, D]); heads only when the key heads split evenly too (grouped
 * queries map onto whole key heads); dropout draws by global (b, h): then
 * replicated. */
int pdi_spmd_attention(const struct pdi_call *g, struct pdi_spmd *s)
{
    if ((g->op == PD_OP_flashmask || g->op == PD_OP_flashmask_backward) && g->a.flashmask.dropout_p > 0)
        return pdi_spmd_replicate(g, s);
    unsigned allowed = 1u;
    int64_t hq = g->in[0]->shape[1], hk = g->in[1]->shape[1];
    int heads_ok = 1;
    for (int k = 0; k < s->mdim; k++)
        if (is_shard(&s->in[0][k]) && s->in[0][k].dim == 1)
            heads_ok &= hk % pieces(s, s->in[0], 1) == 0 && hq % pieces(s, s->in[0], 1) == 0;
    if (heads_ok && hq == hk) allowed |= 2u;
    else if (heads_ok) { /* grouped: k and v keep their own head extent */
        allowed |= 2u;
        int rc = spmd_dims(g, s, allowed);
        for (int k = 0; k < s->mdim && rc == PD_OK; k++)
            if (is_shard(&s->in[0][k]) && s->in[0][k].dim == 1)
                for (int i = 1; i < s->n_in; i++)
                    if (g->in[i]->ndim == 4 && g->in[i]->shape[1] == hk && hk > 1) s->in[i][k] = s->in[0][k];
        for (int k = 0; k < s->mdim && rc == PD_OK; k++)
            if (is_shard(&s->in[0][k]) && s->in[0][k].dim == 1)
                for (int j = 0; j < s->n_out; j++)
                    if (g->meta[j].ndim >= 2 && g->meta[j].shape[1] == hk) s->out[j][k] = s->in[0][k];
        return rc;
    }
    return spmd_dims(g, s, allowed);
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
 * decomposition (its max and sum become Partial, then all-reduced). */
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

/* nll_loss: logp [N, C, d...], target [N, d...], [weight [C]]. Classes
 * replicated; the rows stay sharded: reduction none keeps them, sum makes
 * Partial(sum), mean (a ratio of two sums) runs the decomposition. */
int pdi_spmd_nll_loss(const struct pdi_call *g, struct pdi_spmd *s)
{
    int red = (int)g->a.nll_loss.reduction, any = 0;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k], *t = &s->in[1][k];
        int d = -1, order = 0; /* a row dim of logp (dim 1 is the class) */
        if (is_shard(p) && p->dim != 1 && g->in[0]->ndim > 1) d = p->dim, order = p->order;
        else if (is_shard(t) && g->in[0]->ndim > 1) d = t->dim ? t->dim + 1 : 0, order = t->order;
        if (d < 0) { replicate_axis(s, k); continue; }
        any = 1;
        *p = (struct pd_placement){PD_SHARD, d, order, 0};
        *t = (struct pd_placement){PD_SHARD, d ? d - 1 : 0, order, 0};
        for (int i = 2; i < s->n_in; i++) s->in[i][k] = R;
        if (red == PD_REDUCTION_NONE) s->out[0][k] = (struct pd_placement){PD_SHARD, d ? d - 1 : 0, order, 0};
        else s->out[0][k] = pd_partial(PD_RED_SUM);
    }
    if (any && red == PD_REDUCTION_MEAN) s->decompose = 1;
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
/* ids [...], weight [V, D] → [..., D]: the ids' dims carried; weight
 * split by columns (D) gives a split last dim. A vocabulary split (rows)
 * is gathered (the local lookup would need shifted ids). */
int pdi_spmd_embedding(const struct pdi_call *g, struct pdi_spmd *s)
{
    int ni = g->in[0]->ndim;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *pi = &s->in[0][k], *pw = &s->in[1][k];
        if (is_shard(pi)) {
            *pw = R;
            s->out[0][k] = *pi;
        } else if (is_shard(pw) && pw->dim == 1) {
            *pi = R;
            s->out[0][k] = (struct pd_placement){PD_SHARD, ni, pw->order, 0};
        } else {
            replicate_axis(s, k);
        }
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

/* expand: dims aligned right; an expanded dim was of size 1 (replicated). */
int pdi_spmd_expand(const struct pdi_call *g, struct pdi_spmd *s)
{
    const struct pd_tensor *x = g->in[0];
    const struct pdi_meta *o = &g->meta[0];
    int sh = o->ndim - x->ndim;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k];
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

/* slice: the sliced axis replicated, the others carried. */
int pdi_spmd_slice(const struct pdi_call *g, struct pdi_spmd *s)
{
    int ax = (int)g->a.slice.axis;
    for (int k = 0; k < s->mdim; k++) {
        struct pd_placement *p = &s->in[0][k];
        if (is_shard(p) && p->dim == ax) replicate_axis(s, k);
        else s->out[0][k] = *p; /* a slice is linear: Partial stays */
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
