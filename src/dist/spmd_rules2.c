/* paddle.c — local functions of SPMD rules that move only the elements
 * they need between ranks (docs/distributed.md, "How ops are
 * distributed"); the rules that name them are in spmd_rules.c:
 *   - flip of a split reversed dim: each rank flips its piece, which then
 *     holds a contiguous range of the output's indices (the mirror of its
 *     own), and sends the parts of it that other ranks' pieces hold under
 *     the uneven-split rule of include/pd/dist.h (point to point; an even
 *     split is one swap with the mirrored rank);
 *   - the diagonal of planes split on both dims (or on a plane dim the
 *     diagonal does not follow): each rank takes the diagonal of its own
 *     piece, and only those diagonal pieces are all-gathered over the mesh
 *     axes that split the plane, never the plane itself.
 * Every count and peer comes from global facts (shapes, placements, the
 * mesh), so every rank of a group computes the same exchange.
 */
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"

#ifdef PD_HAVE_MPI

/* The ranks that differ from this one only on the mesh axes `axes` (n of
 * them, outermost first, pdi_mesh_sub's order): member q has this rank's
 * coordinates but on those axes, where they are q's mixed-radix digits. */
struct group {
    const struct pd_mesh *m;
    int n, axes[PD_MAX_MESH_DIMS], size, me;
};

static void group_of(const struct pd_mesh *m, const int *axes, int n, struct group *g)
{
    g->m = m, g->n = n, g->size = 1, g->me = 0;
    for (int i = 0; i < n; i++) {
        g->axes[i] = axes[i];
        g->size *= m->shape[axes[i]];
        g->me = g->me * m->shape[axes[i]] + m->coord[axes[i]];
    }
}

static void member_coord(const struct group *g, int q, int *coord)
{
    memcpy(coord, g->m->coord, sizeof(int) * (size_t)g->m->ndim);
    for (int i = g->n - 1; i >= 0; i--) {
        int a = g->axes[i];
        coord[a] = q % g->m->shape[a];
        q /= g->m->shape[a];
    }
}

/* The piece [*s, *e) of dim d (of extent n) that the rank at `coord` holds
 * under pl: pdi_dist_range at another rank. */
static void range_at(const struct pd_mesh *m, const struct pd_placement *pl, int64_t n, int d, const int *coord,
                     int64_t *s, int64_t *e)
{
    int axes[PD_MAX_MESH_DIMS], na = pdi_dist_axes_of(m, pl, d, axes), pieces = 1, index = 0;
    for (int i = 0; i < na; i++) pieces *= m->shape[axes[i]], index = index * m->shape[axes[i]] + coord[axes[i]];
    pd_dist_piece(n, pieces, index, s, e);
}

static int member_rank(const struct group *g, int q)
{
    int coord[PD_MAX_MESH_DIMS], idx = 0;
    member_coord(g, q, coord);
    for (int a = 0; a < g->m->ndim; a++) idx = idx * g->m->shape[a] + coord[a];
    return g->m->ranks[idx];
}

static int too_big(const char *fn, int64_t bytes) { return !pdi_comm_fits(fn, "a message", bytes, "bytes"); }

/* Blocking, so in flight and exposed alike, as a reshard. */
static void profile(const char *name, int64_t t0, double bytes)
{
    if (!pd_profiler_enabled() || bytes <= 0) return;
    int64_t t1 = pdi_now_ns();
    for (int exposed = 0; exposed < 2; exposed++) pdi_profiler_comm(name, t0, t1, bytes, exposed);
}

/* ---- flip --------------------------------------------------------------- */
enum { FLIP_TAG = 7301 };

/* An even split: piece b reversed is piece np - 1 - b, so this rank swaps
 * its flipped piece with the rank at the mirrored coordinates on the axes
 * that split reversed dims (the lower rank sends first: no deadlock). */
static int flip_swap(struct pdi_call *l, const struct pdi_spmd *s)
{
    const struct pd_mesh *m = s->mesh;
    int idx = 0, rc = PD_OK;
    for (int k = 0; k < m->ndim; k++) {
        const struct pd_placement *p = &s->in[0][k];
        int c = m->coord[k], mirror = p->kind == PD_SHARD && (s->a.flip.mask >> p->dim & 1);
        idx = idx * m->shape[k] + (mirror ? m->shape[k] - 1 - c : c);
    }
    int peer = m->ranks[idx], me = m->ranks[m->index];
    if (peer == me) return PD_OK;
    struct pd_tensor *mine = pd_contiguous(l->out[0]), *theirs = mine ? pd_empty_like(mine) : NULL;
    int64_t bytes = mine ? pd_tensor_numel(mine) * (int64_t)pd_dtype_size(mine->dtype) : 0;
    if (!theirs || too_big("flip", bytes)) {
        struct pdi_comm_on on = {.fn = "flip"};
        pdi_comm_skip(&on, "send/recv");
        return pd_last_status();
    }
    int64_t t0 = pdi_now_ns();
    for (int turn = 0; turn < 2 && rc == PD_OK; turn++)
        rc = (me < peer) == (turn == 0) ? pdi_comm_send("flip", pd_tensor_data(mine), (int)bytes, peer, FLIP_TAG)
                                        : pdi_comm_recv("flip", pd_tensor_data(theirs), (int)bytes, peer, FLIP_TAG);
    profile("flip send/recv", t0, (double)bytes);
    l->out[0] = theirs;
    return rc;
}

/* One reversed dim d of extent n, split over the axes of group G into
 * np pieces by the uneven rule: member q's flipped piece holds the output
 * indices [n - i1(q), n - i0(q)) in order, where [i0, i1) is its input
 * piece; this rank's output piece is [o0, o1) = its own input piece's
 * range. Each pair of members exchanges the overlaps of what one holds and
 * the other's output piece (at most two on each side: the mirrored pieces
 * have the same chunk size), the pairs taken in increasing order of
 * (lower member, higher member) on every rank, the lower one sending
 * first: the first pending pair is always first on both of its ranks, so
 * the blocking calls cannot deadlock. The received parts are joined in
 * output order. *y: the piece of dim d redistributed. */
static int flip_exchange(struct pd_tensor **y, const struct pdi_spmd *s, int d, int64_t n, const int *axes, int na)
{
    struct group g;
    group_of(s->mesh, axes, na, &g);
    struct pd_tensor *x = *y, *part[4] = {0};
    int64_t lo_of[4] = {0}, row = 1, t0 = pdi_now_ns(), moved = 0;
    int np = 0, rc = PD_OK;
    for (int i = 0; i < x->ndim; i++) row *= i == d ? 1 : x->shape[i];
    row *= (int64_t)pd_dtype_size(x->dtype);
    int64_t h0, h1, o0, o1; /* what this rank holds; what it must hold */
    pd_dist_piece(n, g.size, g.me, &o0, &o1);
    h0 = n - o1, h1 = n - o0;
    for (int q = 0; q < g.size && rc == PD_OK; q++) {
        int64_t q0, q1;
        pd_dist_piece(n, g.size, q, &q0, &q1);
        /* q holds [n - q1, n - q0) and must hold [q0, q1) */
        int64_t r0 = n - q1 > o0 ? n - q1 : o0, r1 = n - q0 < o1 ? n - q0 : o1; /* from q to this rank */
        int64_t s0 = h0 > q0 ? h0 : q0, s1 = h1 < q1 ? h1 : q1;                /* from this rank to q */
        struct pd_tensor *got = NULL;
        if (q == g.me) {
            if (r1 > r0) got = pd_slice(x, d, r0 - h0, r1 - h0, 1);
        } else {
            int peer = member_rank(&g, q), lower = g.me < q;
            struct pd_tensor *out = s1 > s0 ? pd_contiguous(pd_slice(x, d, s0 - h0, s1 - h0, 1)) : NULL;
            if (r1 > r0) {
                int64_t shape[PD_MAX_DIMS];
                memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
                shape[d] = r1 - r0;
                got = pd_empty(shape, x->ndim, x->dtype);
            }
            if ((s1 > s0 && (!out || too_big("flip", (s1 - s0) * row))) || (r1 > r0 && (!got || too_big("flip", (r1 - r0) * row)))) {
                struct pdi_comm_on on = {.fn = "flip"};
                pdi_comm_skip(&on, "send/recv");
                return pd_last_status();
            }
            for (int turn = 0; turn < 2 && rc == PD_OK; turn++) {
                if (lower == (turn == 0) && s1 > s0)
                    rc = pdi_comm_send("flip", pd_tensor_data(out), (int)((s1 - s0) * row), peer, FLIP_TAG);
                else if (lower != (turn == 0) && r1 > r0)
                    rc = pdi_comm_recv("flip", pd_tensor_data(got), (int)((r1 - r0) * row), peer, FLIP_TAG);
            }
            moved += s1 > s0 ? (s1 - s0) * row : 0;
        }
        if (r1 > r0 && rc == PD_OK) {
            if (!got || np == 4) return got ? pdi_errorf(PD_ERR_STATE, "flip: more than 4 parts") : pd_last_status();
            lo_of[np] = r0, part[np++] = got;
        }
    }
    profile("flip send/recv", t0, (double)moved);
    if (rc) return rc;
    for (int i = 1; i < np; i++) /* in output order */
        for (int j = i; j > 0 && lo_of[j - 1] > lo_of[j]; j--) {
            int64_t t = lo_of[j];
            struct pd_tensor *p = part[j];
            lo_of[j] = lo_of[j - 1], part[j] = part[j - 1];
            lo_of[j - 1] = t, part[j - 1] = p;
        }
    *y = np == 0 ? x : np == 1 ? part[0] : pd_concat(part, np, d);
    return *y ? PD_OK : pd_last_status();
}

#endif

int pdi_flip_local(struct pdi_call *l, const struct pdi_spmd *s)
{
    int rc = pdi_dispatch(l);
    if (rc) return rc;
#ifdef PD_HAVE_MPI
    if (s->local_arg[0]) return flip_swap(l, s);
    const struct pd_tensor *x = s->g->in[0];
    struct pd_tensor *y = l->out[0];
    for (int d = 0; d < x->ndim && rc == PD_OK; d++) {
        int axes[PD_MAX_MESH_DIMS], na = pdi_dist_axes_of(s->mesh, s->in[0], d, axes);
        if (na && (s->a.flip.mask >> d & 1)) rc = flip_exchange(&y, s, d, x->shape[d], axes, na);
    }
    l->out[0] = rc ? NULL : y;
    return rc;
#else
    PDI_UNUSED(s);
    return PD_OK;
#endif
}

/* ---- diagonal ----------------------------------------------------------- */
/* The diagonal's element t is (t + max(0, -off), t + max(0, off)) of the
 * plane (rows: axis1, columns: axis2). A piece holding rows [r0, r1) and
 * columns [c0, c1) holds the elements of rows [max(r0, c0 - off),
 * min(r1, c1 - off)), which its local diagonal at offset off + r0 - c0
 * returns in order: *t0 is the first one's index, *cnt their number. */
#ifdef PD_HAVE_MPI
static void diag_piece(int64_t off, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t *t0, int64_t *cnt)
{
    int64_t a = r0 > c0 - off ? r0 : c0 - off, b = r1 < c1 - off ? r1 : c1 - off;
    *t0 = a - (off < 0 ? -off : 0);
    *cnt = b > a ? b - a : 0;
}
#endif

int pdi_diagonal_gather_local(struct pdi_call *l, const struct pdi_spmd *s)
{
    int rc = pdi_dispatch(l);
    if (rc) return rc;
#ifdef PD_HAVE_MPI
    const struct pd_mesh *m = s->mesh;
    const struct pd_tensor *x = s->g->in[0];
    int nd = x->ndim, a1 = pdi_norm_axis64(s->a.diagonal.axis1, nd), a2 = pdi_norm_axis64(s->a.diagonal.axis2, nd);
    int nb = nd - 2, axes[PD_MAX_MESH_DIMS], na = 0;
    for (int k = 0; k < m->ndim; k++) { /* the axes whose plane split the output does not keep */
        const struct pd_placement *p = &s->in[0][k];
        if (p->kind == PD_SHARD && (p->dim == a1 || p->dim == a2) && s->out[0][k].kind != PD_SHARD) axes[na++] = k;
    }
    struct group g;
    group_of(m, axes, na, &g);
    if (g.size == 1) return PD_OK;
    int64_t r0, r1, c0, c1, o0, o1;
    pdi_dist_range(m, s->in[0], x->shape, a1, &r0, &r1);
    pdi_dist_range(m, s->in[0], x->shape, a2, &c0, &c1);
    pdi_dist_range(m, s->out[0], s->g->meta[0].shape, nb, &o0, &o1);
    int64_t off = s->a.diagonal.offset - r0 + c0; /* the global (clamped) offset */
    struct pd_tensor *seg = l->out[0];
    /* [seg, batch...]: the diagonal first, so each member's part is one block */
    int perm[PD_MAX_DIMS], back[PD_MAX_DIMS];
    perm[0] = nb, back[nb] = 0;
    for (int i = 0; i < nb; i++) perm[i + 1] = i, back[i] = i + 1;
    struct pd_tensor *f = pd_contiguous(pd_permute(seg, perm, nb + 1));
    int64_t row = (int64_t)pd_dtype_size(seg->dtype), shape[PD_MAX_DIMS];
    for (int i = 0; i < nb; i++) row *= seg->shape[i];
    memcpy(shape + 1, seg->shape, sizeof(int64_t) * (size_t)nb);
    shape[0] = o1 - o0;
    int *counts = f ? pdi_calloc(2 * (size_t)g.size, sizeof *counts) : NULL, *displs = counts ? counts + g.size : NULL;
    struct pd_tensor *y = counts ? pd_empty(shape, nb + 1, seg->dtype) : NULL;
    int bad = !y || too_big("diagonal", (o1 - o0) * row);
    if (f && !counts) pdi_errorf(PD_ERR_NOMEM, "diagonal: out of memory");
    for (int q = 0; q < g.size && !bad; q++) {
        int coord[PD_MAX_MESH_DIMS];
        int64_t qr0, qr1, qc0, qc1, t0, cnt;
        member_coord(&g, q, coord);
        range_at(m, s->in[0], x->shape[a1], a1, coord, &qr0, &qr1);
        range_at(m, s->in[0], x->shape[a2], a2, coord, &qc0, &qc1);
        diag_piece(off, qr0, qr1, qc0, qc1, &t0, &cnt);
        if (cnt && (t0 < o0 || t0 + cnt > o1)) {
            bad = 1;
            pdi_errorf(PD_ERR_STATE, "diagonal: a piece's diagonal [%lld, %lld) is outside the output's [%lld, %lld)",
                       (long long)t0, (long long)(t0 + cnt), (long long)o0, (long long)o1);
        }
        counts[q] = (int)(cnt * row), displs[q] = cnt ? (int)((t0 - o0) * row) : 0;
    }
    struct pdi_comm_on on = pdi_comm_on_axes("diagonal", (struct pd_mesh *)m, axes, na);
    const void *src = bad ? NULL : pdi_host_read(f, "diagonal");
    if (bad || (!src && counts[g.me])) {
        pdi_comm_skip(&on, "all-gather");
        free(counts);
        return pd_last_status();
    }
    int64_t t0 = pdi_now_ns();
    rc = pdi_comm_allgatherv(&on, src, counts[g.me], pd_tensor_data(y), counts, displs);
    profile("diagonal all-gather", t0, (double)counts[g.me]);
    free(counts);
    if (rc) return rc;
    l->out[0] = pd_contiguous(pd_permute(y, back, nb + 1));
    return l->out[0] ? PD_OK : pd_last_status();
#else
    PDI_UNUSED(s);
    return PD_OK; /* one process: every piece is whole */
#endif
}
