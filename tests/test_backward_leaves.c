/* paddle.c — the backward engine's leaves: each leaf is flushed (hooks, then
 * .grad) as soon as its last contribution arrived, in a fixed order, and
 * the bookkeeping is linear in the leaves and nodes: a backward over 20,000
 * parameters does about twice the work of one over 10,000, not four times
 * (counted with pdi_backward_leaf_work, not timed). */
#include "core/internal.h"
#include "pt.h"

struct order {
    char seen[16];
    int n;
};
struct tag {
    struct order *o;
    char name;
};

static struct pd_tensor *record(struct pd_tensor *g, void *ctx)
{
    struct tag *t = ctx;
    if (t->o->n < (int)sizeof t->o->seen - 1) t->o->seen[t->o->n++] = t->name;
    return g;
}

/* Leaves become ready at different nodes, two of them at the same node
 * (its inputs a, b): a leaf's hooks run after the node that made its last
 * contribution, and leaves ready at the same node in the order the engine
 * first met them walking back from the loss (d, b, a, c): b before a. */
static void test_hook_order(void)
{
    int tok = pd_scope_begin();
    int64_t s[1] = {2};
    struct pd_tensor *a = pd_requires_grad_(pd_full(s, 1, 2.0, PD_F64), 1);
    struct pd_tensor *b = pd_requires_grad_(pd_full(s, 1, 3.0, PD_F64), 1);
    struct pd_tensor *c = pd_requires_grad_(pd_full(s, 1, 5.0, PD_F64), 1);
    struct pd_tensor *d = pd_requires_grad_(pd_full(s, 1, 7.0, PD_F64), 1);
    struct order o = {{0}, 0};
    struct tag ta = {&o, 'a'}, tb = {&o, 'b'}, tc = {&o, 'c'}, td = {&o, 'd'};
    PT_CHECK(pd_tensor_register_hook(a, record, &ta) == 0);
    PT_CHECK(pd_tensor_register_hook(b, record, &tb) == 0);
    PT_CHECK(pd_tensor_register_hook(c, record, &tc) == 0);
    PT_CHECK(pd_tensor_register_hook(d, record, &td) == 0);
    struct pd_tensor *x = pd_mul(a, b);           /* node 1: a, b (both ready here) */
    struct pd_tensor *y = pd_add(x, c);           /* node 2: c ready */
    struct pd_tensor *z = pd_mul(y, a);           /* node 3 */
    struct pd_tensor *w = pd_add(z, pd_mul(d, b)); /* node 4 (d * b): d ready */
    PT_CHECK(pd_backward(pd_sum(w, NULL, 0, 0), NULL, 0) == 0);
    PT_CHECK(strcmp(o.seen, "dcba") == 0);
    if (strcmp(o.seen, "dcba")) printf("  hook order %s\n", o.seen);
    /* L = sum((a b + c) a + d b): dL/da = 2ab + c, dL/db = a^2 + d */
    int64_t i0 = 0;
    PT_NEAR(pd_get(pd_tensor_grad(a), &i0), 2 * 2 * 3 + 5, 0);
    PT_NEAR(pd_get(pd_tensor_grad(b), &i0), 2 * 2 + 7, 0);
    PT_NEAR(pd_get(pd_tensor_grad(c), &i0), 2, 0);
    PT_NEAR(pd_get(pd_tensor_grad(d), &i0), 3, 0);
    pd_scope_end(tok);
}

static struct pd_tensor *record_count(struct pd_tensor *g, void *ctx)
{
    (*(int *)ctx)++;
    return g;
}

/* A chain of n adds, one new leaf each: n nodes, n + 1 leaves, each ready
 * at its own node. Returns the engine's leaf bookkeeping work. */
static int64_t chain(int n, int *hook_calls)
{
    int tok = pd_scope_begin();
    int64_t s[1] = {1};
    struct pd_tensor **p = malloc(sizeof *p * (size_t)(n + 1));
    struct pd_tensor *acc = NULL;
    for (int i = 0; i <= n && p; i++) {
        p[i] = pd_requires_grad_(pd_full(s, 1, 1.0, PD_F32), 1);
        if (i == n) PT_CHECK(pd_tensor_register_hook(p[i], record_count, hook_calls) == 0);
        acc = i ? pd_add(acc, p[i]) : p[i];
    }
    int64_t w0 = pdi_backward_leaf_work();
    PT_CHECK(acc && pd_backward(pd_sum(acc, NULL, 0, 0), NULL, 0) == 0);
    int64_t work = pdi_backward_leaf_work() - w0;
    int64_t i0 = 0;
    PT_CHECK(p && pd_get(pd_tensor_grad(p[0]), &i0) == 1.0 && pd_get(pd_tensor_grad(p[n]), &i0) == 1.0);
    free(p);
    pd_scope_end(tok);
    return work;
}

static void test_linear(void)
{
    int calls = 0;
    int64_t w10 = chain(10000, &calls), w20 = chain(20000, &calls);
    printf("leaf work: %lld for 10k leaves, %lld for 20k\n", (long long)w10, (long long)w20);
    PT_CHECK(calls == 2);
    PT_CHECK(w10 > 0 && w20 < 3 * w10);   /* linear: about 2x; quadratic: about 4x */
    PT_CHECK(w20 < 20 * 20001);           /* a few steps per leaf and node */
}

int main(void)
{
    test_hook_order();
    test_linear();
    PT_DONE();
}
