/* paddle.c — the backward engine.
 *
 * Nodes reachable from the roots run in decreasing creation order, which is
 * a topological order (a consumer is always created after its producers).
 * Each node runs in a scope of its own, so intermediate gradients are freed
 * as soon as their consumer has run. With create_graph the VJP rules run
 * with grad mode on, recording the backward ops for higher-order gradients.
 * While a VJP runs, pdi_backward_node() names its node, and a failure is
 * reported with the node's name and its forward op's call site.
 */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

struct target {              /* pd_grad: where a requested gradient is caught */
    struct pdi_node *fn;
    int nr;
    struct pd_tensor *leaf;
    struct pd_tensor *grad;  /* accumulated (owned reference) */
};

struct leaf_grad {           /* a leaf's gradient summed over this run */
    struct pd_tensor *leaf, *grad;
    int pending;             /* edges into it from nodes still to run */
    int flushed;             /* its hooks ran and .grad has it */
};

struct run {
    struct leaf_grad *leaves; /* in the order the run first met them */
    int n_leaves, cap_leaves;
    int *slot_of;             /* open addressing by leaf address: index + 1, 0 empty */
    int hcap;                 /* a power of two, > 2 * cap_leaves */
    int *ready, n_ready;      /* leaves waiting for nothing, not yet flushed (after leaves' block) */
    int any_ready;            /* one of them got its last contribution (flush_ready) */
    int64_t work;             /* hash probes and ready leaves visited (pdi_backward_leaf_work) */
    struct pdi_node **nodes;
    int n, cap;
    uint64_t epoch;
    struct pd_tensor ***buf;  /* per node, per output: accumulated gradient */
    unsigned char *needed;
    struct target *targets;   /* NULL: accumulate into leaves' .grad */
    int n_targets;
    int create_graph, retain_graph;
    int any_dist; /* a node of the graph is distributed: this is MPI's thread (MPI_THREAD_FUNNELED) */
};

static uint64_t run_epoch;
static int64_t leaf_work; /* pdi_backward_leaf_work */

int64_t pdi_backward_leaf_work(void) { return __atomic_load_n(&leaf_work, __ATOMIC_RELAXED); }
/* The node whose VJP runs on this thread (ops dispatched inside a VJP are
 * attributed to it by observers). */
static PDI_TLS const struct pdi_node *cur_node;

const struct pdi_node *pdi_backward_node(void) { return cur_node; }
const char *pdi_backward_node_name(void) { return cur_node ? pdi_node_name(cur_node) : NULL; }

static int add_node(struct run *r, struct pdi_node *n)
{
    if (!n || n->epoch == r->epoch) return 0;
    if (r->n == r->cap) {
        int nc = r->cap ? r->cap * 2 : 64;
        struct pdi_node **nn = pdi_realloc(r->nodes, sizeof *nn * (size_t)nc);
        if (!nn) return -1;
        r->nodes = nn;
        r->cap = nc;
    }
    n->epoch = r->epoch;
    r->nodes[r->n++] = n;
    r->any_dist |= n->dist != NULL;
    return 0;
}

static int by_seq_desc(const void *a, const void *b)
{
    const struct pdi_node *x = *(struct pdi_node *const *)a, *y = *(struct pdi_node *const *)b;
    return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

/* Sum g into *slot (slot owns a reference). */
static int accumulate(struct pd_tensor **slot, struct pd_tensor *g, int create_graph)
{
    if (!*slot) {
        pd_tensor_retain(g);
        *slot = g;
        return PD_OK;
    }
    struct pd_tensor *s;
    /* (a distributed slot may be a view of a resharded copy, into which the
     * distribute stage refuses writes: summed out of place) */
    if (!create_graph && (*slot)->refcount == 1 && !(*slot)->grad_fn && (*slot)->st->refcount == 1 &&
        pd_tensor_is_contiguous(*slot) && !(*slot)->dist) {
        s = pd_add_(*slot, g); /* our private buffer: add in place */
        return s ? PD_OK : pd_last_status();
    }
    s = pd_add(*slot, g);
    if (!s) return pd_last_status();
    pd_tensor_retain(s);
    pd_tensor_release(*slot);
    *slot = s;
    return PD_OK;
}

static struct pd_tensor *run_hooks(struct pdi_hook *h, struct pd_tensor *g)
{
    for (; h && g; h = h->next) {
        struct pd_tensor *r = h->fn(g, h->ctx);
        if (r) g = r;
    }
    return g;
}

static struct target *find_leaf_target(struct run *r, struct pd_tensor *leaf)
{
    for (int i = 0; i < r->n_targets; i++)
        if (r->targets[i].leaf == leaf) return &r->targets[i];
    return NULL;
}

static unsigned leaf_hash(const struct pd_tensor *leaf, int hcap)
{
    uint64_t h = (uint64_t)(uintptr_t)leaf * 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> 32) & (unsigned)(hcap - 1);
}

/* The hash slot holding leaf, or the empty one where it goes. */
static int *leaf_probe(struct run *r, const struct pd_tensor *leaf)
{
    unsigned h = leaf_hash(leaf, r->hcap), n = 1;
    for (;; h = (h + 1) & (unsigned)(r->hcap - 1), n++) {
        int k = r->slot_of[h];
        if (!k || r->leaves[k - 1].leaf == leaf) {
            r->work += n;
            return &r->slot_of[h];
        }
    }
}

/* Room for more leaves (and their ready list, in the same block); past 16
 * (found by a scan), a hash table finds them. */
static int leaves_grow(struct run *r)
{
    int nc = r->cap_leaves ? r->cap_leaves * 2 : 16, hc = 4 * nc;
    struct leaf_grad *nl = pdi_realloc(r->leaves, (sizeof *nl + sizeof *r->ready) * (size_t)nc);
    if (!nl) return pdi_errorf(PD_ERR_NOMEM, "out of memory (backward)");
    int *rd = (int *)(nl + nc);
    if (r->n_ready) memmove(rd, (int *)(nl + r->cap_leaves), sizeof *rd * (size_t)r->n_ready);
    r->leaves = nl, r->ready = rd, r->cap_leaves = nc;
    if (nc == 16) return PD_OK;
    int *h = pdi_calloc((size_t)hc, sizeof *h);
    if (!h) return pdi_errorf(PD_ERR_NOMEM, "out of memory (backward)");
    free(r->slot_of);
    r->slot_of = h, r->hcap = hc;
    for (int i = 0; i < r->n_leaves; i++) *leaf_probe(r, r->leaves[i].leaf) = i + 1;
    return PD_OK;
}

/* A new slot for leaf (k: its empty hash slot, NULL while scanning). */
static __attribute__((noinline)) struct leaf_grad *leaf_new(struct run *r, struct pd_tensor *leaf, int *k)
{
    if (r->n_leaves == r->cap_leaves) {
        if (leaves_grow(r)) return NULL;
        k = r->hcap ? leaf_probe(r, leaf) : NULL;
    }
    if (k) *k = r->n_leaves + 1;
    r->leaves[r->n_leaves] = (struct leaf_grad){leaf, NULL, 0, 0};
    return &r->leaves[r->n_leaves++];
}

/* The run's slot for leaf, made on first sight (O(1) expected). */
static struct leaf_grad *leaf_slot(struct run *r, struct pd_tensor *leaf)
{
    if (r->hcap) {
        int *k = leaf_probe(r, leaf);
        return *k ? &r->leaves[*k - 1] : leaf_new(r, leaf, k);
    }
    int i = 0;
    while (i < r->n_leaves && r->leaves[i].leaf != leaf) i++;
    r->work += i + 1;
    return i < r->n_leaves ? &r->leaves[i] : leaf_new(r, leaf, NULL);
}

/* Sum a leaf's incoming gradients over the run; hooks and .grad see the
 * total once (flush_leaves), as PyTorch's AccumulateGrad does. */
static int deliver_leaf(struct run *r, struct pd_tensor *leaf, struct pd_tensor *g)
{
    if (r->targets) {
        struct target *t = find_leaf_target(r, leaf);
        return t ? accumulate(&t->grad, g, r->create_graph) : PD_OK;
    }
    struct leaf_grad *l = leaf_slot(r, leaf);
    return l ? accumulate(&l->grad, g, r->create_graph) : pd_last_status();
}

static int flush_leaf(struct run *r, struct pd_tensor *leaf, struct pd_tensor *g)
{
    if (leaf->dist && g->dist) { /* in the leaf's placements: a Partial sum is reduced here */
        g = pdi_dist_hooks->leaf_grad(leaf, g);
        if (!g) return pd_last_status();
    }
    g = run_hooks(leaf->hooks, g);
    if (!g) return pdi_status_of(NULL, "backward: leaf hook");
    if (!r->create_graph && g->grad_fn) g = pd_detach(g);
    if (!leaf->grad && !r->create_graph && g->refcount > 1) {
        /* g may be shared (e.g. the same tensor delivered to two leaves):
         * give .grad its own buffer so later in-place accumulation is safe. */
        g = pd_clone(g);
        if (!g) return pd_last_status();
    }
    return accumulate(&leaf->grad, g, r->create_graph);
}

static int leaf_edge_done(struct run *r, struct pd_tensor *leaf)
{
    struct leaf_grad *l = leaf_slot(r, leaf);
    if (!l) return pd_last_status();
    if (--l->pending == 0) r->ready[r->n_ready++] = (int)(l - r->leaves), r->any_ready = 1;
    return PD_OK;
}

static int by_index(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Flush the leaves whose contributions all came, in the order the run met
 * them (after the node's scope closed, so a gradient nobody else holds is
 * not copied). A leaf that was a root and nothing else waited from the
 * start: it goes with the first batch. */
static int flush_ready(struct run *r)
{
    int rc = PD_OK;
    r->any_ready = 0;
    if (r->n_ready > 1) qsort(r->ready, (size_t)r->n_ready, sizeof *r->ready, by_index);
    for (int i = 0; i < r->n_ready && rc == PD_OK; i++) {
        r->work++;
        struct leaf_grad *l = &r->leaves[r->ready[i]];
        if (l->flushed || !l->grad) continue;
        l->flushed = 1;
        int scope_tok = pd_scope_begin();
        rc = flush_leaf(r, l->leaf, l->grad);
        pd_scope_end(scope_tok);
    }
    r->n_ready = 0;
    return rc;
}

static int check_grad(struct pdi_node *n, int i, struct pd_tensor *g)
{
    const struct pdi_meta *m = &n->in_meta[i];
    if (g->ndim != m->ndim || memcmp(g->shape, m->shape, sizeof(int64_t) * (size_t)m->ndim)) {
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_STATE, "%s: VJP returned a gradient of shape %s for input %d of shape %s", pdi_node_name(n),
                          pdi_shape_str(g->shape, g->ndim, b0, sizeof b0), i,
                          pdi_shape_str(m->shape, m->ndim, b1, sizeof b1));
    }
    return PD_OK;
}

static int run_node(struct run *r, int k)
{
    struct pdi_node *n = r->nodes[k];
    struct pd_tensor *gout_small[4], **gout = n->n_out <= 4 ? gout_small : pdi_calloc((size_t)n->n_out, sizeof *gout);
    struct pd_tensor *gin_small[8], **gin = n->n_in <= 8 ? gin_small : pdi_calloc((size_t)n->n_in, sizeof *gin);
    if (!gout || !gin) return pdi_errorf(PD_ERR_NOMEM, "out of memory (backward)");
    memset(gin, 0, sizeof *gin * (size_t)n->n_in);
    int rc = PD_OK;
    for (int j = 0; j < n->n_out && rc == PD_OK; j++) {
        struct pd_tensor *g = r->buf[k][j];
        if (!g) {
            g = n->dist ? pdi_dist_hooks->zeros(n->dist, &n->out_meta[j])
                        : pd_zeros(n->out_meta[j].shape, n->out_meta[j].ndim, n->out_meta[j].dtype);
            if (!g) { rc = pd_last_status(); break; }
        }
        g = run_hooks(n->out_hooks[j], g);
        if (!g) { rc = pdi_status_of(NULL, "backward: hook"); break; }
        if (n->retain_out[j] && n->retained[j]) {
            struct pd_tensor *keep = r->create_graph ? g : pd_detach(g);
            if (keep) { pd_tensor_retain(keep); pd_tensor_release(n->retained[j]->grad); n->retained[j]->grad = keep; }
        }
        for (int t = 0; t < r->n_targets; t++)
            if (r->targets[t].fn == n && r->targets[t].nr == j) rc = accumulate(&r->targets[t].grad, g, r->create_graph);
        gout[j] = g;
    }
    if (rc == PD_OK && r->needed[k]) {
        if (n->released) {
            rc = pdi_errorf(PD_ERR_STATE,
                            "%s: backward through a graph that was already freed; pass retain_graph=1 to the first "
                            "backward to run it again", pdi_node_name(n));
        } else {
            const struct pdi_node *prev_node = cur_node;
            cur_node = n;
            /* a node logs under the guards active when it was created */
            const struct pdi_log_guards *prev_guards = pdi_log_guards_current();
            int swap = n->log_guards != prev_guards;
            if (swap) pdi_log_guards_swap(n->log_guards);
            if ((pdi_debug_flags & PDI_DBG_LOG) && pdi_log_enabled("autograd", 3)) {
                const char *site = n->site ? pdi_site_str(n->site) : NULL;
                pdi_log("autograd", 3, "%s%s%s%s", pdi_node_name(n), site ? " (forward at " : "", site ? site : "",
                        site ? ")" : "");
            }
            rc = pdi_ops[n->op].vjp(n, gout, gin);
            if (rc == PD_OK && pd_last_status() && !gin[0] && n->n_in == 1 && pdi_node_needs(n, 0)) rc = pd_last_status();
            if (swap) pdi_log_guards_swap(prev_guards);
            cur_node = prev_node;
        }
        for (int i = 0; i < n->n_in && rc == PD_OK; i++) {
            struct pdi_edge *e = &n->edges[i];
            if (!gin[i] || (!e->fn && !e->leaf)) continue;
            if ((rc = check_grad(n, i, gin[i]))) break;
            if (e->leaf) {
                rc = deliver_leaf(r, e->leaf, gin[i]);
            } else {
                int ek = e->fn->idx;
                rc = accumulate(&r->buf[ek][e->nr], gin[i], r->create_graph);
            }
        }
        /* a leaf whose last contribution came: its hooks run now, while
         * the rest of backward goes on (data-parallel reduction starts) */
        for (int i = 0; i < n->n_in && rc == PD_OK && !r->targets; i++)
            if (n->edges[i].leaf) rc = leaf_edge_done(r, n->edges[i].leaf);
    }
    if (!r->retain_graph && rc == PD_OK && r->needed[k]) {
        for (int i = 0; i < n->n_in; i++) { pd_tensor_release(n->saved_in[i]); n->saved_in[i] = NULL; }
        for (int j = 0; j < n->n_out; j++) { pd_tensor_release(n->saved_out[j]); n->saved_out[j] = NULL; }
        n->released = 1;
    }
    if (rc && pd_last_status()) {
        /* name the node and where its forward op was called */
        pdi_error_prefix(pdi_node_name(n));
        const char *site = n->site ? pdi_site_str(n->site) : NULL;
        if (site && !strstr(pd_last_error(), site)) pdi_error_append("[forward op called at %s]", site);
    }
    if (gout != gout_small) free(gout);
    if (gin != gin_small) free(gin);
    return rc;
}

/* roots[i] with seed grads[i] (owned by the caller). */
static int run_backward(struct run *r, struct pd_tensor *const *roots, struct pd_tensor *const *seeds, int n_roots)
{
    int rc = PD_OK;
    r->epoch = __atomic_add_fetch(&run_epoch, 1, __ATOMIC_RELAXED);
    /* 1. collect reachable nodes */
    for (int i = 0; i < n_roots; i++)
        if (add_node(r, roots[i]->grad_fn)) return pdi_errorf(PD_ERR_NOMEM, "out of memory (backward)");
    for (int k = 0; k < r->n; k++) {
        struct pdi_node *n = r->nodes[k];
        for (int i = 0; i < n->n_in; i++)
            if (add_node(r, n->edges[i].fn)) return pdi_errorf(PD_ERR_NOMEM, "out of memory (backward)");
    }
    qsort(r->nodes, (size_t)r->n, sizeof *r->nodes, by_seq_desc);
    for (int k = 0; k < r->n; k++) r->nodes[k]->idx = k;
    r->buf = pdi_calloc((size_t)r->n + 1, sizeof *r->buf);
    r->needed = pdi_calloc((size_t)r->n + 1, 1);
    if (!r->buf || !r->needed) return pdi_errorf(PD_ERR_NOMEM, "out of memory (backward)");
    for (int k = 0; k < r->n; k++) {
        r->buf[k] = pdi_calloc((size_t)r->nodes[k]->n_out, sizeof **r->buf);
        if (!r->buf[k]) return pdi_errorf(PD_ERR_NOMEM, "out of memory (backward)");
    }
    /* 2. which nodes lead somewhere useful (increasing seq = reverse order) */
    for (int k = r->n - 1; k >= 0; k--) {
        struct pdi_node *n = r->nodes[k];
        for (int i = 0; i < n->n_in && !r->needed[k]; i++) {
            struct pdi_edge *e = &n->edges[i];
            if (e->leaf) r->needed[k] = !r->targets || find_leaf_target(r, e->leaf);
            else if (e->fn) {
                if (r->needed[e->fn->idx]) r->needed[k] = 1;
                for (int t = 0; t < r->n_targets; t++)
                    if (r->targets[t].fn == e->fn && r->targets[t].nr == e->nr) r->needed[k] = 1;
            }
        }
    }
    /* how many contributions each leaf waits for */
    for (int k = 0; k < r->n && !r->targets; k++) {
        struct pdi_node *n = r->nodes[k];
        for (int i = 0; i < n->n_in && r->needed[k]; i++) {
            struct leaf_grad *l = n->edges[i].leaf ? leaf_slot(r, n->edges[i].leaf) : NULL;
            if (n->edges[i].leaf && !l) return pd_last_status();
            if (l) l->pending++;
        }
    }
    /* 3. seed */
    for (int i = 0; i < n_roots && rc == PD_OK; i++) {
        struct pd_tensor *t = roots[i];
        if (t->grad_fn) rc = accumulate(&r->buf[t->grad_fn->idx][t->out_nr], seeds[i], r->create_graph);
        else rc = deliver_leaf(r, t, seeds[i]);
    }
    for (int i = 0; i < r->n_leaves; i++) /* roots nothing else reaches */
        if (r->leaves[i].pending == 0) r->ready[r->n_ready++] = i;
    /* 4. run */
    int mode = r->create_graph ? pd_enable_grad_begin() : pd_no_grad_begin();
    if (mode < 0) return mode;
    for (int k = 0; k < r->n && rc == PD_OK; k++) {
        int scope_tok = pd_scope_begin();
        rc = run_node(r, k);
        pd_scope_end(scope_tok);
        if (r->any_dist) pdi_dist_hooks->progress(); /* data-parallel buckets in flight */
        for (int j = 0; j < r->nodes[k]->n_out; j++) { pd_tensor_release(r->buf[k][j]); r->buf[k][j] = NULL; }
        if (rc == PD_OK && r->any_ready) rc = flush_ready(r);
    }
    for (int i = 0; i < r->n_leaves && rc == PD_OK; i++) {
        if (r->leaves[i].flushed || !r->leaves[i].grad) continue;
        int scope_tok = pd_scope_begin();
        rc = flush_leaf(r, r->leaves[i].leaf, r->leaves[i].grad);
        pd_scope_end(scope_tok);
    }
    int end = pd_grad_mode_end(mode);
    return rc ? rc : end;
}

static void run_free(struct run *r)
{
    for (int i = 0; i < r->n_leaves; i++) pd_tensor_release(r->leaves[i].grad);
    __atomic_add_fetch(&leaf_work, r->work, __ATOMIC_RELAXED);
    free(r->leaves); /* and ready */
    free(r->slot_of);
    if (r->buf)
        for (int k = 0; k < r->n; k++) {
            if (!r->buf[k]) continue;
            for (int j = 0; j < r->nodes[k]->n_out; j++) pd_tensor_release(r->buf[k][j]);
            free(r->buf[k]);
        }
    free(r->buf);
    free(r->needed);
    free(r->nodes);
}

static struct pd_tensor *default_seed(struct pd_tensor *out, const char *who)
{
    if (pd_tensor_numel(out) != 1) {
        char b[PDI_SHAPE_BUF];
        return pdi_error(PD_ERR_INVALID, "%s: output of shape %s is not a scalar; pass its gradient explicitly", who,
                         pdi_shape_str(out->shape, out->ndim, b, sizeof b));
    }
    return pd_ones_like(out);
}

static int check_root(struct pd_tensor *t, const char *who)
{
    if (!t) return PD_ERR_NULL;
    if (!t->requires_grad)
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: the output does not require grad: no differentiable path leads to it (an input "
                          "with requires_grad, or an op such as argmax or a comparison that has no gradient?)", who);
    return PD_OK;
}

int pd_backward_ex(struct pd_tensor *loss, const struct pd_grad_options *opts)
{
    static const struct pd_grad_options defaults;
    if (!opts) opts = &defaults;
    int rc = check_root(loss, "backward");
    if (rc) return rc;
    struct pd_tensor *grad = opts->grad_outputs ? opts->grad_outputs[0] : NULL;
    int scope_tok = pd_scope_begin();
    struct pd_tensor *seed = grad ? grad : default_seed(loss, "backward");
    if (seed && (seed->ndim != loss->ndim || memcmp(seed->shape, loss->shape, sizeof(int64_t) * (size_t)loss->ndim))) {
        char b0[PDI_SHAPE_BUF], b1[PDI_SHAPE_BUF];
        seed = pdi_error(PD_ERR_INVALID, "backward: grad of shape %s given for an output of shape %s",
                         pdi_shape_str(grad->shape, grad->ndim, b0, sizeof b0),
                         pdi_shape_str(loss->shape, loss->ndim, b1, sizeof b1));
    }
    if (!seed) { pd_scope_end(scope_tok); return pd_last_status(); }
    struct run r = {.create_graph = opts->create_graph != 0, .retain_graph = opts->retain_graph || opts->create_graph};
    rc = run_backward(&r, &loss, &seed, 1);
    run_free(&r);
    pd_scope_end(scope_tok);
    return rc;
}

int pd_backward(struct pd_tensor *loss, struct pd_tensor *grad, int retain_graph)
{
    return pd_backward_ex(loss, &(struct pd_grad_options){.retain_graph = retain_graph, .grad_outputs = &grad});
}

int pd_grad(struct pd_tensor *const *outputs, int n_out, struct pd_tensor *const *inputs, int n_in,
            struct pd_tensor **grads, const struct pd_grad_options *opts)
{
    static const struct pd_grad_options defaults;
    if (!opts) opts = &defaults;
    struct pd_tensor *const *grad_outputs = opts->grad_outputs;
    int create_graph = opts->create_graph != 0, retain_graph = opts->retain_graph != 0;
    int allow_unused = opts->allow_unused != 0;
    if (n_out <= 0 || n_in <= 0 || !outputs || !inputs || !grads)
        return pdi_errorf(PD_ERR_INVALID, "grad: need at least one output and one input");
    for (int i = 0; i < n_in; i++) grads[i] = NULL;
    for (int i = 0; i < n_out; i++) {
        int rc = check_root(outputs[i], "grad");
        if (rc) return rc;
    }
    struct target *tg = pdi_calloc((size_t)n_in, sizeof *tg);
    struct pd_tensor **seeds = pdi_calloc((size_t)n_out, sizeof *seeds);
    if (!tg || !seeds) { free(tg); free(seeds); return pdi_errorf(PD_ERR_NOMEM, "out of memory (grad)"); }
    int rc = PD_OK;
    for (int i = 0; i < n_in && rc == PD_OK; i++) {
        if (!inputs[i]) { rc = PD_ERR_NULL; break; }
        if (!inputs[i]->requires_grad) {
            rc = pdi_errorf(PD_ERR_INVALID, "grad: input %d does not require grad", i);
            break;
        }
        if (inputs[i]->grad_fn) { tg[i].fn = inputs[i]->grad_fn; tg[i].nr = inputs[i]->out_nr; }
        else tg[i].leaf = inputs[i];
    }
    int scope_tok = pd_scope_begin();
    for (int i = 0; i < n_out && rc == PD_OK; i++) {
        seeds[i] = grad_outputs && grad_outputs[i] ? grad_outputs[i] : default_seed(outputs[i], "grad");
        if (!seeds[i]) rc = pd_last_status();
    }
    if (rc == PD_OK) {
        struct run r = {.targets = tg, .n_targets = n_in, .create_graph = create_graph,
                        .retain_graph = retain_graph || create_graph};
        rc = run_backward(&r, outputs, seeds, n_out);
        run_free(&r);
    }
    pd_scope_end(scope_tok);
    for (int i = 0; i < n_in; i++) {
        /* the same leaf may be listed twice: each target caught it once */
        if (rc == PD_OK && !tg[i].grad && !allow_unused) {
            rc = pdi_errorf(PD_ERR_INVALID,
                            "grad: input %d is not used to compute the outputs (pass allow_unused=1 to get NULL)", i);
        }
    }
    for (int i = 0; i < n_in; i++) {
        if (rc == PD_OK) grads[i] = pdi_scope_add(tg[i].grad);
        else pd_tensor_release(tg[i].grad);
    }
    free(tg);
    free(seeds);
    return rc;
}
