/* paddle.c — forward and backward graph export (Graphviz DOT and HTML).
 *
 * A pd_graph is a plain list of nodes (op calls, GradNodes, inputs/leaves)
 * and edges (tensors), with every string owned by the graph, so it outlives
 * the tensors and nodes it describes. Forward capture is a dispatcher debug
 * stage (PDI_DBG_GRAPH) on the capturing thread: an edge joins the op that
 * produced a tensor (found by the tensor's unique id) to each op reading it.
 * The backward export walks GradNodes from the loss; edges point the way
 * the gradient flows. Writers collapse nodes by name scope when a graph is
 * over the node budget, so a 32-layer model stays readable.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "io/file.h"
#include "pd/debug.h"

enum gkind { G_OP, G_INPUT, G_BWOP, G_GRAD, G_LEAF, G_ROOT };
static const char *const kind_name[] = {"op", "input", "backward op", "grad node", "leaf", "loss"};
static const char *const kind_color[] = {"#dbe8f7", "#fff2cc", "#e6e6e6", "#e6e6e6", "#d5f0d5", "#f9d5d5"};

struct gnode {
    int kind;
    char *name, *op, *scope, *ins, *outs, *site, *bw; /* scope, site, bw may be NULL */
};
struct gedge {
    int from, to;
    char *label;
};
struct pd_graph {
    int backward;
    struct gnode *nodes;
    int n, cap;
    struct gedge *edges;
    int ne, cape;
    /* capture: tensor id -> producing node (open addressing) */
    uint64_t *keys;
    int *vals;
    size_t nmap, capmap;
    int oom;
};

static char *dup_or_null(const char *s)
{
    return s ? pdi_strdup(s) : NULL;
}

static int add_node(struct pd_graph *g, int kind, const char *name, const char *op, const char *scope, const char *ins,
                    const char *outs, const char *site, const char *bw)
{
    if (g->n == g->cap) {
        int nc = g->cap ? g->cap * 2 : 64;
        struct gnode *nn = pdi_realloc(g->nodes, sizeof *nn * (size_t)nc);
        if (!nn) { g->oom = 1; return -1; }
        g->nodes = nn;
        g->cap = nc;
    }
    struct gnode *x = &g->nodes[g->n];
    x->kind = kind;
    x->name = pdi_strdup(name);
    x->op = pdi_strdup(op);
    x->scope = scope && *scope ? pdi_strdup(scope) : NULL;
    x->ins = pdi_strdup(ins ? ins : "");
    x->outs = pdi_strdup(outs ? outs : "");
    x->site = dup_or_null(site);
    x->bw = dup_or_null(bw);
    if (!x->name || !x->op || !x->ins || !x->outs) g->oom = 1;
    return g->n++;
}

static void add_edge(struct pd_graph *g, int from, int to, const char *label)
{
    if (from < 0 || to < 0) return;
    if (g->ne == g->cape) {
        int nc = g->cape ? g->cape * 2 : 64;
        struct gedge *ne = pdi_realloc(g->edges, sizeof *ne * (size_t)nc);
        if (!ne) { g->oom = 1; return; }
        g->edges = ne;
        g->cape = nc;
    }
    g->edges[g->ne].from = from;
    g->edges[g->ne].to = to;
    g->edges[g->ne].label = pdi_strdup(label ? label : "");
    g->ne++;
}

void pd_graph_destroy(struct pd_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->n; i++) {
        struct gnode *x = &g->nodes[i];
        free(x->name); free(x->op); free(x->scope); free(x->ins); free(x->outs); free(x->site); free(x->bw);
    }
    for (int i = 0; i < g->ne; i++) free(g->edges[i].label);
    free(g->nodes);
    free(g->edges);
    free(g->keys);
    free(g->vals);
    free(g);
}

int pd_graph_num_nodes(const struct pd_graph *g) { return g ? g->n : 0; }
int pd_graph_num_edges(const struct pd_graph *g) { return g ? g->ne : 0; }

/* ---- tensor id -> node map ------------------------------------------- */
static int map_get(const struct pd_graph *g, uint64_t id)
{
    id += 1; /* as map_put */
    if (!g->capmap) return -1;
    for (size_t h = (id * 0x9E3779B97F4A7C15ull) & (g->capmap - 1);; h = (h + 1) & (g->capmap - 1)) {
        if (!g->keys[h]) return -1;
        if (g->keys[h] == id) return g->vals[h];
    }
}

static void map_put(struct pd_graph *g, uint64_t id, int v)
{
    id += 1; /* ids start at 0; 0 marks an empty slot */
    if ((g->nmap + 1) * 2 > g->capmap) {
        size_t nc = g->capmap ? g->capmap * 2 : 256;
        uint64_t *nk = pdi_calloc(nc, sizeof *nk);
        int *nv = pdi_calloc(nc, sizeof *nv);
        if (!nk || !nv) { free(nk); free(nv); g->oom = 1; return; }
        for (size_t i = 0; i < g->capmap; i++) {
            if (!g->keys[i]) continue;
            size_t h = (g->keys[i] * 0x9E3779B97F4A7C15ull) & (nc - 1);
            while (nk[h]) h = (h + 1) & (nc - 1);
            nk[h] = g->keys[i];
            nv[h] = g->vals[i];
        }
        free(g->keys); free(g->vals);
        g->keys = nk; g->vals = nv; g->capmap = nc;
    }
    size_t h = (id * 0x9E3779B97F4A7C15ull) & (g->capmap - 1);
    while (g->keys[h] && g->keys[h] != id) h = (h + 1) & (g->capmap - 1);
    if (!g->keys[h]) g->nmap++;
    g->keys[h] = id;
    g->vals[h] = v;
}

static const char *meta_str(const struct pd_tensor *t, char *buf, size_t n)
{
    char b[PDI_SHAPE_BUF];
    snprintf(buf, n, "%s %s", pd_dtype_name(t->dtype), pdi_shape_str(t->shape, t->ndim, b, sizeof b));
    return buf;
}

/* ---- forward capture -------------------------------------------------- */
static struct pd_graph *capturing;
static pthread_t capture_thread;
static pthread_mutex_t capture_mu = PTHREAD_MUTEX_INITIALIZER;

int pd_graph_capture_begin(void)
{
    pthread_mutex_lock(&capture_mu);
    if (capturing) {
        pthread_mutex_unlock(&capture_mu);
        return pdi_errorf(PD_ERR_STATE, "graph_capture_begin: a capture is already running (end it first)");
    }
    struct pd_graph *g = pdi_calloc(1, sizeof *g);
    if (!g) { pthread_mutex_unlock(&capture_mu); return pdi_errorf(PD_ERR_NOMEM, "out of memory (graph)"); }
    capture_thread = pthread_self();
    __atomic_store_n(&capturing, g, __ATOMIC_RELEASE);
    pdi_debug_flag_set(PDI_DBG_GRAPH, 1);
    pthread_mutex_unlock(&capture_mu);
    return PD_OK;
}

struct pd_graph *pd_graph_capture_end(void)
{
    pthread_mutex_lock(&capture_mu);
    struct pd_graph *g = capturing;
    if (!g || !pthread_equal(capture_thread, pthread_self())) {
        pthread_mutex_unlock(&capture_mu);
        return pdi_error(PD_ERR_STATE, "graph_capture_end: no capture was begun on this thread");
    }
    pdi_debug_flag_set(PDI_DBG_GRAPH, 0);
    __atomic_store_n(&capturing, NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&capture_mu);
    free(g->keys); free(g->vals);
    g->keys = NULL; g->vals = NULL; g->nmap = g->capmap = 0;
    if (g->oom) { pd_graph_destroy(g); return pdi_error(PD_ERR_NOMEM, "out of memory while capturing the graph"); }
    return g;
}

void pdi_graph_record(const struct pdi_call *c)
{
    struct pd_graph *g = __atomic_load_n(&capturing, __ATOMIC_ACQUIRE);
    if (!g || !pthread_equal(capture_thread, pthread_self())) return;
    char ins[1024] = "", outs[1024] = "", m[160], tn[PDI_NAME_BUF], name[PDI_NAME_BUF];
    size_t k = 0;
    for (int i = 0; i < c->n_in && k < sizeof ins; i++)
        k += (size_t)snprintf(ins + k, sizeof ins - k, "%s%s", i ? ", " : "", meta_str(c->in[i], m, sizeof m));
    k = 0;
    for (int j = 0; j < c->n_out && k < sizeof outs; j++)
        k += (size_t)snprintf(outs + k, sizeof outs - k, "%s%s", j ? ", " : "", meta_str(c->out[j], m, sizeof m));
    /* producers first: inputs made outside the capture become input nodes */
    int src[16];
    for (int i = 0; i < c->n_in && i < 16; i++) {
        src[i] = map_get(g, c->in[i]->id);
        if (src[i] < 0) {
            src[i] = add_node(g, G_INPUT, pdi_tensor_name_buf(c->in[i], tn, sizeof tn), "input", NULL, "",
                              meta_str(c->in[i], m, sizeof m), NULL, NULL);
            map_put(g, c->in[i]->id, src[i]);
        }
    }
    const char *bw = pdi_backward_node_name();
    snprintf(name, sizeof name, "%s", pdi_call_name(c));
    char op[512];
    pdi_attrs_format(c->op, &c->a, op, sizeof op); /* "rms_norm(n_norm_axes=1, eps=1e-05, ...)" */
    int me = add_node(g, bw ? G_BWOP : G_OP, name, op, c->dbg_scope, ins, outs, pdi_call_site(c), bw);
    for (int i = 0; i < c->n_in && i < 16; i++) {
        char lab[PDI_NAME_BUF + 160];
        snprintf(lab, sizeof lab, "%s\n%s", pdi_tensor_name_buf(c->in[i], tn, sizeof tn), meta_str(c->in[i], m, sizeof m));
        add_edge(g, src[i], me, lab);
    }
    for (int j = 0; j < c->n_out; j++) map_put(g, c->out[j]->id, me);
}

/* ---- backward export -------------------------------------------------- */
struct ptrmap {
    const void **keys;
    int *vals;
    size_t cap, n;
};

static int pm_find(struct ptrmap *m, const void *p, int *v)
{
    if (!m->cap) return 0;
    for (size_t h = ((uintptr_t)p >> 4) & (m->cap - 1);; h = (h + 1) & (m->cap - 1)) {
        if (!m->keys[h]) return 0;
        if (m->keys[h] == p) { *v = m->vals[h]; return 1; }
    }
}

static int pm_put(struct ptrmap *m, const void *p, int v)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 256;
        const void **nk = pdi_calloc(nc, sizeof *nk);
        int *nv = pdi_calloc(nc, sizeof *nv);
        if (!nk || !nv) { free(nk); free(nv); return -1; }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            size_t h = ((uintptr_t)m->keys[i] >> 4) & (nc - 1);
            while (nk[h]) h = (h + 1) & (nc - 1);
            nk[h] = m->keys[i];
            nv[h] = m->vals[i];
        }
        free(m->keys); free(m->vals);
        m->keys = nk; m->vals = nv; m->cap = nc;
    }
    size_t h = ((uintptr_t)p >> 4) & (m->cap - 1);
    while (m->keys[h]) h = (h + 1) & (m->cap - 1);
    m->keys[h] = p;
    m->vals[h] = v;
    m->n++;
    return 0;
}

static const char *metas_str(const struct pdi_meta *mt, int n, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < n && k < size; i++) {
        char b[PDI_SHAPE_BUF];
        k += (size_t)snprintf(buf + k, size - k, "%s%s %s", i ? ", " : "", pd_dtype_name(mt[i].dtype),
                              pdi_shape_str(mt[i].shape, mt[i].ndim, b, sizeof b));
    }
    return buf;
}

static int add_grad_node(struct pd_graph *g, const struct pdi_node *n)
{
    char ins[1024], outs[1024], op[512];
    pdi_attrs_format(n->op, &n->a, op, sizeof op);
    /* a GradNode takes the gradients of the forward outputs and returns
     * those of the forward inputs */
    return add_node(g, G_GRAD, pdi_node_name(n), op, n->dbg_scope,
                    metas_str(n->out_meta, n->n_out, outs, sizeof outs), metas_str(n->in_meta, n->n_in, ins, sizeof ins),
                    n->site ? pdi_site_str(n->site) : NULL, NULL);
}

struct pd_graph *pd_graph_export_backward(const struct pd_tensor *loss)
{
    if (!loss) return pdi_error(PD_ERR_NULL, "graph_export_backward: NULL loss");
    if (!loss->grad_fn)
        return pdi_error(PD_ERR_INVALID, "graph_export_backward: the loss has no GradNode (it does not require grad "
                         "or is a leaf)");
    struct pd_graph *g = pdi_calloc(1, sizeof *g);
    if (!g) return pdi_error(PD_ERR_NOMEM, "out of memory (graph)");
    g->backward = 1;
    struct ptrmap pm = {0};
    struct pdi_node **queue = NULL;
    int nq = 0, capq = 0, rc = 0;
    char tn[PDI_NAME_BUF], m[160];
    int root = add_node(g, G_ROOT, pdi_tensor_name_buf(loss, tn, sizeof tn), "loss", NULL, "",
                        meta_str(loss, m, sizeof m), NULL, NULL);
    /* BFS; a node enters the graph (and pm: node -> index) when discovered,
     * so every edge can be drawn at once. */
    struct pdi_node *first = loss->grad_fn;
    int fi = add_grad_node(g, first);
    queue = pdi_malloc(sizeof *queue * 64);
    capq = 64;
    if (!queue || pm_put(&pm, first, fi)) rc = -1;
    else queue[nq++] = first;
    add_edge(g, root, fi, meta_str(loss, m, sizeof m));
    for (int qi = 0; qi < nq && rc == 0; qi++) {
        struct pdi_node *n = queue[qi];
        int me = -1;
        pm_find(&pm, n, &me);
        for (int i = 0; i < n->n_in && rc == 0; i++) {
            struct pdi_edge *e = &n->edges[i];
            const void *key = e->fn ? (const void *)e->fn : (const void *)e->leaf;
            if (!key) continue;
            int v;
            if (!pm_find(&pm, key, &v)) {
                if (e->fn) {
                    if (nq == capq) {
                        struct pdi_node **nn = pdi_realloc(queue, sizeof *nn * (size_t)capq * 2);
                        if (!nn) { rc = -1; break; }
                        queue = nn;
                        capq *= 2;
                    }
                    queue[nq++] = e->fn;
                    v = add_grad_node(g, e->fn);
                } else {
                    v = add_node(g, G_LEAF, pdi_tensor_name_buf(e->leaf, tn, sizeof tn), "AccumulateGrad", NULL,
                                 meta_str(e->leaf, m, sizeof m), "", NULL, NULL);
                }
                if (v < 0 || pm_put(&pm, key, v)) { rc = -1; break; }
            }
            char lab[200];
            snprintf(lab, sizeof lab, "grad of in%d\n%s", i, metas_str(&n->in_meta[i], 1, m, sizeof m));
            add_edge(g, me, v, lab);
        }
    }
    free(queue);
    free(pm.keys);
    free(pm.vals);
    if (rc || g->oom) { pd_graph_destroy(g); return pdi_error(PD_ERR_NOMEM, "out of memory (graph)"); }
    return g;
}

/* ---- collapsing by name scope ----------------------------------------- */
/* The first `depth` '.'-separated components of scope, into buf. */
static const char *scope_prefix(const char *scope, int depth, char *buf, size_t n)
{
    const char *p = scope;
    for (int d = 0; d < depth && p; d++) {
        p = strchr(p, '.');
        if (p && d + 1 < depth) p++;
    }
    size_t len = p ? (size_t)(p - scope) : strlen(scope);
    if (len >= n) len = n - 1;
    memcpy(buf, scope, len);
    buf[len] = 0;
    return buf;
}

static int scope_depth_of(const char *s)
{
    int d = 1;
    for (; *s; s++) d += *s == '.';
    return d;
}

/* group[i]: -1 (node drawn alone) or the index of its collapsed group in
 * names[]; returns the number of groups, 0 when the graph fits. */
static int collapse(const struct pd_graph *g, int max_nodes, int *group, char ***names_out, int **counts_out)
{
    *names_out = NULL;
    *counts_out = NULL;
    for (int i = 0; i < g->n; i++) group[i] = -1;
    if (g->n <= max_nodes) return 0;
    int maxd = 0;
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i].scope && scope_depth_of(g->nodes[i].scope) > maxd) maxd = scope_depth_of(g->nodes[i].scope);
    if (maxd == 0) return 0; /* nothing to collapse by */
    char **names = pdi_calloc((size_t)g->n, sizeof *names);
    int *counts = pdi_calloc((size_t)g->n, sizeof *counts);
    if (!names || !counts) { free(names); free(counts); return 0; }
    int ng = 0;
    /* deepest scopes first; stop at the first depth that fits the budget */
    for (int d = maxd; d >= 1; d--) {
        for (int k = 0; k < ng; k++) free(names[k]);
        ng = 0;
        int items = 0;
        for (int i = 0; i < g->n; i++) {
            if (!g->nodes[i].scope) { group[i] = -1; items++; continue; }
            char buf[512];
            scope_prefix(g->nodes[i].scope, d, buf, sizeof buf);
            int k = 0;
            while (k < ng && strcmp(names[k], buf)) k++;
            if (k == ng) { names[ng] = pdi_strdup(buf); counts[ng] = 0; ng++; items++; }
            counts[k]++;
            group[i] = k;
        }
        if (items <= max_nodes) break;
    }
    *names_out = names;
    *counts_out = counts;
    return ng;
}

/* ---- writers ---------------------------------------------------------- */
static void dot_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') { fputc('\\', f); fputc(*s, f); }
        else if (*s == '\n') fputs("\\n", f);
        else fputc(*s, f);
    }
    fputc('"', f);
}

static void write_dot(const struct pd_graph *g, FILE *f, int max_nodes)
{
    int *group = pdi_malloc(sizeof *group * (size_t)(g->n ? g->n : 1));
    char **gnames;
    int *gcounts;
    int ng = group ? collapse(g, max_nodes, group, &gnames, &gcounts) : 0;
    fprintf(f, "digraph %s {\n  rankdir=%s;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", "
            "fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n",
            g->backward ? "backward" : "forward", g->backward ? "TB" : "TB");
    /* clusters by full scope for nodes drawn alone */
    for (int i = 0; i < g->n; i++) {
        const struct gnode *x = &g->nodes[i];
        if (group && group[i] >= 0) continue;
        if (x->scope) {
            fprintf(f, "  subgraph ");
            char cl[600];
            snprintf(cl, sizeof cl, "cluster_%s", x->scope);
            dot_str(f, cl);
            fprintf(f, " { label=");
            dot_str(f, x->scope);
            fprintf(f, "; style=dashed; ");
        } else fprintf(f, "  ");
        char label[2048];
        snprintf(label, sizeof label, "%s\n%s%s%s%s%s%s%s", x->name, x->op,
                 x->ins[0] ? "\nin: " : "", x->ins, x->outs[0] ? "\nout: " : "", x->outs,
                 x->site ? "\nat " : "", x->site ? x->site : "");
        fprintf(f, "n%d [label=", i);
        dot_str(f, label);
        fprintf(f, ", fillcolor=\"%s\"%s];", kind_color[x->kind], x->kind == G_INPUT || x->kind == G_LEAF ?
                ", shape=ellipse" : "");
        fprintf(f, x->scope ? " }\n" : "\n");
    }
    for (int k = 0; k < ng; k++) {
        char label[700];
        snprintf(label, sizeof label, "%s\n%d %s (collapsed)", gnames[k], gcounts[k], gcounts[k] == 1 ? "node" : "nodes");
        fprintf(f, "  g%d [label=", k);
        dot_str(f, label);
        fprintf(f, ", shape=box3d, fillcolor=\"#cfd8ff\"];\n");
    }
    /* edges; between collapsed groups each (from, to) pair is drawn once
     * with a count */
    for (int e = 0; e < g->ne; e++) {
        const struct gedge *x = &g->edges[e];
        int a = group ? group[x->from] : -1, b = group ? group[x->to] : -1;
        if (a < 0 && b < 0) {
            fprintf(f, "  n%d -> n%d [label=", x->from, x->to);
            dot_str(f, x->label);
            fprintf(f, "];\n");
            continue;
        }
        if (a >= 0 && a == b) continue; /* inside one group */
        int dup = 0, count = 0;
        for (int e2 = 0; e2 < g->ne; e2++) {
            const struct gedge *y = &g->edges[e2];
            int a2 = group[y->from], b2 = group[y->to];
            int same = (a < 0 ? y->from == x->from && a2 < 0 : a2 == a) && (b < 0 ? y->to == x->to && b2 < 0 : b2 == b);
            if (!same) continue;
            if (e2 < e) { dup = 1; break; }
            count++;
        }
        if (dup) continue;
        fprintf(f, "  %c%d -> %c%d [label=\"%d tensor%s\"];\n", a < 0 ? 'n' : 'g', a < 0 ? x->from : a,
                b < 0 ? 'n' : 'g', b < 0 ? x->to : b, count, count == 1 ? "" : "s");
    }
    fprintf(f, "}\n");
    for (int k = 0; k < ng; k++) free(gnames[k]);
    if (ng) { free(gnames); free(gcounts); }
    free(group);
}

/* Exports are written atomically: a temporary, fsync, rename (src/io/file.h). */
static FILE *open_out(struct pdi_wfile *w, const char *path, const char *who)
{
    if (!path) { pdi_errorf(PD_ERR_NULL, "%s: NULL path", who); return NULL; }
    return pdi_wfile_begin(w, path, who);
}

int pd_graph_write_dot(const struct pd_graph *g, const char *path, int max_nodes)
{
    if (!g) return pdi_errorf(PD_ERR_NULL, "graph_write_dot: NULL graph");
    if (max_nodes < 0) return pdi_errorf(PD_ERR_INVALID, "graph_write_dot: max_nodes %d < 0", max_nodes);
    struct pdi_wfile w;
    FILE *f = open_out(&w, path, "graph_write_dot");
    if (!f) return pd_last_status();
    write_dot(g, f, max_nodes ? max_nodes : 200);
    return pdi_wfile_commit(&w);
}

static void html_str(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\n': fputs("<br>", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Render DOT to SVG with Graphviz into a malloc'ed string (NULL when dot is
 * not installed or fails). */
static char *render_svg(const struct pd_graph *g, int max_nodes)
{
    if (system("command -v dot >/dev/null 2>&1") != 0) return NULL;
    char dot_path[] = "/tmp/pd_graph_XXXXXX";
    int fd = mkstemp(dot_path);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) { close(fd); unlink(dot_path); return NULL; }
    write_dot(g, f, max_nodes);
    fclose(f);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' 2>/dev/null", dot_path);
    FILE *p = popen(cmd, "r");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (p) {
        char chunk[8192];
        size_t r;
        while ((r = fread(chunk, 1, sizeof chunk, p)) > 0) {
            if (n + r + 1 > cap) {
                size_t nc = (n + r + 1) * 2;
                char *nb = pdi_realloc(buf, nc);
                if (!nb) { free(buf); buf = NULL; break; }
                buf = nb;
                cap = nc;
            }
            memcpy(buf + n, chunk, r);
            n += r;
        }
        if (buf) buf[n] = 0;
        if (pclose(p) != 0) { free(buf); buf = NULL; }
    }
    unlink(dot_path);
    return buf;
}

int pd_graph_write_html(const struct pd_graph *g, const char *path, int max_nodes)
{
    if (!g) return pdi_errorf(PD_ERR_NULL, "graph_write_html: NULL graph");
    if (max_nodes < 0) return pdi_errorf(PD_ERR_INVALID, "graph_write_html: max_nodes %d < 0", max_nodes);
    if (!max_nodes) max_nodes = 200;
    char *svg = render_svg(g, max_nodes);
    struct pdi_wfile w;
    FILE *f = open_out(&w, path, "graph_write_html");
    if (!f) { free(svg); return pd_last_status(); }
    const char *title = g->backward ? "paddle.c backward graph" : "paddle.c forward graph";
    fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n<style>body{font-family:"
            "sans-serif;margin:1em}table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #bbb;"
            "padding:2px 6px;vertical-align:top}th{background:#eee}.svg{overflow:auto;border:1px solid #ccc}"
            "</style></head><body>\n<h1>%s</h1>\n<p>%d nodes, %d edges.</p>\n", title, title, g->n, g->ne);
    if (svg) {
        const char *s = strstr(svg, "<svg");
        fprintf(f, "<div class=\"svg\">\n%s\n</div>\n", s ? s : svg);
    } else {
        fprintf(f, "<p>Graphviz (<code>dot</code>) is not installed, so there is no picture; the tables below "
                "list every node and edge (install graphviz and write the page again for the drawing).</p>\n");
    }
    fprintf(f, "<h2>Nodes</h2>\n<table><tr><th>#</th><th>name</th><th>kind</th><th>op</th><th>scope</th><th>%s</th>"
            "<th>%s</th><th>call site</th><th>in backward of</th></tr>\n",
            g->backward ? "grad in (of outputs)" : "inputs", g->backward ? "grad out (of inputs)" : "outputs");
    for (int i = 0; i < g->n; i++) {
        const struct gnode *x = &g->nodes[i];
        fprintf(f, "<tr id=\"n%d\"><td>%d</td><td>", i, i);
        html_str(f, x->name);
        fprintf(f, "</td><td>%s</td><td>", kind_name[x->kind]);
        html_str(f, x->op);
        fprintf(f, "</td><td>");
        html_str(f, x->scope ? x->scope : "");
        fprintf(f, "</td><td>");
        html_str(f, x->ins);
        fprintf(f, "</td><td>");
        html_str(f, x->outs);
        fprintf(f, "</td><td>");
        html_str(f, x->site ? x->site : "");
        fprintf(f, "</td><td>");
        html_str(f, x->bw ? x->bw : "");
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n<h2>Edges</h2>\n<table><tr><th>from</th><th>to</th><th>tensor</th></tr>\n");
    for (int e = 0; e < g->ne; e++) {
        fprintf(f, "<tr><td><a href=\"#n%d\">", g->edges[e].from);
        html_str(f, g->nodes[g->edges[e].from].name);
        fprintf(f, "</a></td><td><a href=\"#n%d\">", g->edges[e].to);
        html_str(f, g->nodes[g->edges[e].to].name);
        fprintf(f, "</a></td><td>");
        html_str(f, g->edges[e].label);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n</body></html>\n");
    free(svg);
    return pdi_wfile_commit(&w);
}
