/* paddle.c — GradNodes: recording, saved tensors, hooks.
 *
 * Ownership: an output tensor holds a reference to its grad_fn node; a node
 * holds references to the nodes (and leaves) its edges point to and to its
 * saved inputs. A node never holds its own outputs (that would be a cycle):
 * outputs a VJP needs are kept as aliases without grad_fn and re-attached to
 * the node on use (pdi_node_out), as PyTorch's SavedVariable does.
 * A node is named after the forward call that made it ("matmul_12.grad")
 * and keeps that call's site and the log guards active at the time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Grad mode is a per-thread mode: src/core/modes.c. */
static uint64_t node_seq;

void pdi_node_retain(struct pdi_node *n)
{
    if (n) n->refcount++;
}

static void free_saved(struct pdi_node *n)
{
    for (int i = 0; i < n->n_in; i++) {
        pd_tensor_release(n->saved_in[i]);
        n->saved_in[i] = NULL;
    }
    for (int j = 0; j < n->n_out; j++) {
        pd_tensor_release(n->saved_out[j]);
        n->saved_out[j] = NULL;
    }
}

void pdi_node_release(struct pdi_node *n)
{
    /* Iterative over the chain of sole owners: a deep graph (thousands of
     * ops) must not overflow the C stack when its loss is freed. */
    struct pdi_node *stack_small[64], **stack = stack_small;
    int sp = 0, cap = 64;
    if (!n) return;
    stack[sp++] = n;
    while (sp > 0) {
        struct pdi_node *x = stack[--sp];
        if (--x->refcount > 0) continue;
        free_saved(x);
        for (int i = 0; i < x->n_in; i++) {
            pd_tensor_release(x->edges[i].leaf);
            if (x->edges[i].fn) {
                if (sp == cap) {
                    int nc = cap * 2;
                    struct pdi_node **ns = pdi_malloc(sizeof *ns * (size_t)nc);
                    if (!ns) { pdi_node_release(x->edges[i].fn); continue; } /* recursive fallback */
                    memcpy(ns, stack, sizeof *ns * (size_t)sp);
                    if (stack != stack_small) free(stack);
                    stack = ns;
                    cap = nc;
                }
                stack[sp++] = x->edges[i].fn;
            }
        }
        for (int j = 0; j < x->n_out; j++)
            for (struct pdi_hook *h = x->out_hooks[j], *nx; h; h = nx) { nx = h->next; free(h); }
        if (x->dist) pdi_tensor_dist_release(x->dist);
        free(x->edges);
        free(x);
    }
    if (stack != stack_small) free(stack);
}

int pdi_node_needs(const struct pdi_node *n, int i)
{
    return i >= 0 && i < n->n_in && (n->edges[i].fn || n->edges[i].leaf);
}

struct pd_tensor *pdi_node_in(struct pdi_node *n, int i)
{
    if (n->released)
        return pdi_error(PD_ERR_STATE,
                         "%s: backward through a graph whose saved tensors were already freed; pass retain_graph=1 "
                         "to the first backward if you need to run it twice", pdi_node_name(n));
    struct pd_tensor *t = n->saved_in[i];
    if (!t) return pdi_error(PD_ERR_STATE, "%s: input %d was not saved for backward", pdi_node_name(n), i);
    if (t->st->version != n->saved_ver[i])
        return pdi_error(PD_ERR_STATE,
                         "%s: input %d, needed for backward, was modified by an in-place op after it was used "
                         "(version %llu, saved at %llu)", pdi_node_name(n), i, (unsigned long long)t->st->version,
                         (unsigned long long)n->saved_ver[i]);
    return t;
}

struct pd_tensor *pdi_node_out(struct pdi_node *n, int j)
{
    if (n->released)
        return pdi_error(PD_ERR_STATE,
                         "%s: backward through a graph whose saved tensors were already freed; pass retain_graph=1 "
                         "to the first backward if you need to run it twice", pdi_node_name(n));
    struct pd_tensor *s = n->saved_out[j];
    if (!s) return pdi_error(PD_ERR_STATE, "%s: output %d was not saved for backward", pdi_node_name(n), j);
    struct pd_tensor *t = pdi_tensor_alias_same(s);
    if (!t) return NULL;
    if (pd_is_grad_enabled() && pd_dtype_is_float(t->dtype)) { /* indices carry no gradient */
        t->grad_fn = n;
        pdi_node_retain(n);
        t->out_nr = j;
        t->requires_grad = 1;
    }
    return pdi_scope_add(t);
}

const char *pdi_node_name(const struct pdi_node *n)
{
    struct pdi_node *m = (struct pdi_node *)n; /* the name is a cache: logically const */
    if (!m->name[0])
        snprintf(m->name, sizeof m->name, "%s%s%s_%u.grad", n->dbg_scope ? n->dbg_scope : "", n->dbg_scope ? "/" : "",
                 pdi_ops[n->op].name, (unsigned)n->dbg_n);
    return m->name;
}

int pdi_autograd_record(struct pdi_call *c)
{
    int any = 0;
    for (int i = 0; i < c->n_in; i++) any |= c->in[i]->requires_grad;
    if (!any) return PD_OK;
    const struct pdi_opdef *d = &pdi_ops[c->op];
    int ni = c->n_in, no = c->n_out;
    /* One allocation for the node and its arrays. */
    size_t sz = sizeof(struct pdi_node) + (sizeof(struct pdi_edge) + sizeof(struct pd_tensor *) + sizeof(uint64_t) +
                                           sizeof(struct pdi_meta)) * (size_t)ni +
                (sizeof(struct pd_tensor *) * 2 + sizeof(struct pdi_meta) + sizeof(struct pdi_hook *) + 1) * (size_t)no;
    /* Tensors release their grad_fn through this pointer: core/ does not
     * call up into autograd/. Every node is made here, so it is set before
     * any tensor holds one. */
    __atomic_store_n(&pdi_tensor_grad_fn_release, pdi_node_release, __ATOMIC_RELAXED);
    struct pdi_node *n = pdi_calloc(1, sizeof *n);
    char *mem = pdi_calloc(1, sz);
    if (!n || !mem) { free(n); free(mem); return pdi_errorf(PD_ERR_NOMEM, "out of memory (grad node)"); }
    char *p = mem;
    n->edges = (struct pdi_edge *)p; p += sizeof(struct pdi_edge) * (size_t)ni;
    n->saved_ver = (uint64_t *)p; p += sizeof(uint64_t) * (size_t)ni;
    n->in_meta = (struct pdi_meta *)p; p += sizeof(struct pdi_meta) * (size_t)ni;
    n->out_meta = (struct pdi_meta *)p; p += sizeof(struct pdi_meta) * (size_t)no;
    n->saved_in = (struct pd_tensor **)p; p += sizeof(struct pd_tensor *) * (size_t)ni;
    n->saved_out = (struct pd_tensor **)p; p += sizeof(struct pd_tensor *) * (size_t)no;
    n->retained = (struct pd_tensor **)p; p += sizeof(struct pd_tensor *) * (size_t)no;
    n->out_hooks = (struct pdi_hook **)p; p += sizeof(struct pdi_hook *) * (size_t)no;
    n->retain_out = (unsigned char *)p;
    n->op = c->op;
    n->seq = __atomic_add_fetch(&node_seq, 1, __ATOMIC_RELAXED);
    n->a = c->a;
    n->n_in = ni;
    n->n_out = no;
    /* The forward call's name plus ".grad": logs, graphs, checksums and
     * errors link the op, its outputs and its node by one name. */
    n->dbg_scope = c->dbg_scope;
    n->dbg_n = c->dbg_n;
    n->site = c->dbg_site;
    n->log_guards = pdi_log_guards_current();
    for (int i = 0; i < ni; i++) {
        struct pd_tensor *t = c->in[i];
        if (t->requires_grad) {
            if (t->grad_fn) {
                n->edges[i].fn = t->grad_fn;
                n->edges[i].nr = t->out_nr;
                pdi_node_retain(t->grad_fn);
            } else {
                n->edges[i].leaf = t;
                pd_tensor_retain(t);
            }
        }
        if (!(d->flags & PDI_F_NO_SAVE_IN)) {
            n->saved_in[i] = t;
            pd_tensor_retain(t);
            n->saved_ver[i] = t->st->version;
        }
        pdi_meta_of(t, &n->in_meta[i]);
    }
    /* Every saved output first: a failure must free the node before any
     * output points to it. */
    for (int j = 0; j < no && (d->flags & PDI_F_SAVE_OUT); j++) {
        struct pd_tensor *o = c->out[j];
        n->saved_out[j] = pdi_tensor_alias_same(o);
        if (!n->saved_out[j]) { n->refcount = 1; pdi_node_release(n); return PD_ERR_NOMEM; }
    }
    for (int j = 0; j < no && !n->dist; j++) /* a distributed op: its mesh, for zero gradients */
        if (c->out[j]->dist && !(n->dist = pdi_dist_hooks->copy(c->out[j]->dist))) {
            n->refcount = 1;
            pdi_node_release(n);
            return PD_ERR_NOMEM;
        }
    for (int j = 0; j < no; j++) {
        struct pd_tensor *o = c->out[j];
        n->out_meta[j] = c->meta[j];
        if (!pd_dtype_is_float(o->dtype)) continue; /* indices carry no gradient */
        o->grad_fn = n;
        n->refcount++;
        o->out_nr = j;
        o->requires_grad = 1;
    }
    if (n->refcount == 0) { n->refcount = 1; pdi_node_release(n); }
    return PD_OK;
}

/* ---- public tensor-level autograd API -------------------------------- */
struct pd_tensor *pd_requires_grad_(struct pd_tensor *t, int requires_grad)
{
    if (!t) return NULL;
    if (t->grad_fn) {
        if (requires_grad) return t;
        return pdi_error(PD_ERR_INVALID, "requires_grad_: tensor is not a leaf (produced by %s); use pd_detach",
                         pdi_node_name(t->grad_fn));
    }
    if (requires_grad && !pd_dtype_is_float(t->dtype))
        return pdi_error(PD_ERR_INVALID, "requires_grad_: only floating tensors can require grad (got %s)",
                         pd_dtype_name(t->dtype));
    t->requires_grad = requires_grad != 0;
    return t;
}

int pd_tensor_requires_grad(const struct pd_tensor *t) { return t && t->requires_grad; }
int pd_tensor_is_leaf(const struct pd_tensor *t) { return t && !t->grad_fn; }
struct pd_tensor *pd_tensor_grad(const struct pd_tensor *t) { return t ? t->grad : NULL; }
void pd_tensor_zero_grad(struct pd_tensor *t)
{
    if (!t) return;
    pd_tensor_release(t->grad);
    t->grad = NULL;
}
const char *pd_tensor_grad_fn_name(const struct pd_tensor *t) { return t && t->grad_fn ? pdi_node_name(t->grad_fn) : NULL; }

int pd_retain_grad(struct pd_tensor *t)
{
    if (!t) return PD_ERR_NULL;
    if (!t->requires_grad) return pdi_errorf(PD_ERR_INVALID, "retain_grad: tensor does not require grad");
    if (!t->grad_fn) return PD_OK; /* leaves keep their grad anyway */
    t->retains_grad = 1;
    t->grad_fn->retain_out[t->out_nr] = 1;
    t->grad_fn->retained[t->out_nr] = t;
    return PD_OK;
}

int pd_tensor_register_hook(struct pd_tensor *t, pd_grad_hook_fn fn, void *ctx)
{
    if (!t) return PD_ERR_NULL;
    if (!fn) return pdi_errorf(PD_ERR_NULL, "register_hook: fn is NULL");
    if (!t->requires_grad) return pdi_errorf(PD_ERR_INVALID, "register_hook: tensor does not require grad");
    struct pdi_hook *h = pdi_calloc(1, sizeof *h);
    if (!h) return pdi_errorf(PD_ERR_NOMEM, "out of memory (hook)");
    h->fn = fn;
    h->ctx = ctx;
    struct pdi_hook **list = t->grad_fn ? &t->grad_fn->out_hooks[t->out_nr] : &t->hooks;
    while (*list) list = &(*list)->next; /* run in registration order */
    *list = h;
    return PD_OK;
}

int pdi_tensor_remove_hook(struct pd_tensor *t, pd_grad_hook_fn fn, void *ctx)
{
    struct pdi_hook **list = t->grad_fn ? &t->grad_fn->out_hooks[t->out_nr] : &t->hooks;
    for (; *list; list = &(*list)->next)
        if ((*list)->fn == fn && (*list)->ctx == ctx) {
            struct pdi_hook *h = *list;
            *list = h->next;
            free(h);
            return PD_OK;
        }
    return pdi_errorf(PD_ERR_INVALID, "remove_hook: no such hook");
}
