/* paddle.c — the decomposition check of the op harness.
 *
 * For a row whose op has a decomposition (the op table's decomp column),
 * the row's function runs once with an observer that captures the first
 * dispatched call of the row's op (its inputs and attributes). That call is
 * then run two ways, the op itself and its decomposition, and
 *   - every output is compared, for f32 and f64 (the row's dtypes);
 *   - in f64, the gradients of L = sum(out0 * w) with respect to the row's
 *     differentiable inputs are compared (the decomposition is composed of
 *     public ops, so its gradient is autograd's; the op's is its VJP rule).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/harness.h"

#define CAP_MAX_IN 16

struct capture {
    enum pd_op op;
    int found, n_in, n_out;
    struct pd_tensor *in[CAP_MAX_IN];
    struct pdi_attrs a;
};

static void capture_call(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    (void)seq;
    struct capture *cap = ctx;
    if (cap->found || c->op != cap->op || c->n_in > CAP_MAX_IN) return;
    cap->found = 1;
    cap->n_in = c->n_in;
    cap->n_out = c->n_out;
    cap->a = c->a;
    for (int i = 0; i < c->n_in; i++) {
        cap->in[i] = c->in[i];
        pd_tensor_retain(c->in[i]);
    }
}

static void capture_release(struct capture *cap)
{
    for (int i = 0; i < cap->n_in; i++) pd_tensor_release(cap->in[i]);
    cap->n_in = 0;
}

/* Run the row, capturing the op's call; 0 when found. */
static int capture_row(const struct opt_row *r, struct pd_tensor **in, struct capture *cap)
{
    memset(cap, 0, sizeof *cap);
    cap->op = r->op;
    pdi_observer_add(capture_call, cap);
    struct pd_tensor *y = r->fn(in);
    pdi_observer_remove(capture_call, cap);
    if (!y && !cap->found) return -1;
    return cap->found ? 0 : -1;
}

static int run_op(const struct capture *cap, struct pd_tensor **out)
{
    struct pdi_call c = {.op = cap->op, .n_in = cap->n_in, .n_out = cap->n_out, .in = cap->in, .out = out, .a = cap->a};
    return pdi_dispatch(&c);
}

static int run_decomp(const struct capture *cap, struct pd_tensor **out)
{
    struct pdi_call c = {.op = cap->op, .n_in = cap->n_in, .n_out = cap->n_out, .in = cap->in, .out = out, .a = cap->a};
    for (int j = 0; j < cap->n_out; j++) out[j] = NULL;
    return pdi_ops[cap->op].decomp(&c, out);
}

static int close_enough(const char *what, const struct opt_row *r, enum pd_dtype dt, int j, struct pd_tensor *a,
                        struct pd_tensor *b, double tol)
{
    char sa[PDI_SHAPE_BUF], sb[PDI_SHAPE_BUF];
    if (!a || !b) {
        printf("FAIL %s [%s] %s: output %d missing (%s)\n", r->name, pd_dtype_name(dt), what, j,
               a ? "decomposition" : "op");
        return 1;
    }
    if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) || a->dtype != b->dtype) {
        printf("FAIL %s [%s] %s: output %d is %s %s, the op gives %s %s\n", r->name, pd_dtype_name(dt), what, j,
               pdi_shape_str(b->shape, b->ndim, sb, sizeof sb), pd_dtype_name(b->dtype),
               pdi_shape_str(a->shape, a->ndim, sa, sizeof sa), pd_dtype_name(a->dtype));
        return 1;
    }
    int64_t n = pd_tensor_numel(a);
    double *x = malloc(sizeof *x * (size_t)(n + 1)), *y = malloc(sizeof *y * (size_t)(n + 1));
    pd_to_buffer(a, x, PD_F64);
    pd_to_buffer(b, y, PD_F64);
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i++) {
        if (isnan(x[i]) || isnan(y[i])) bad = isnan(x[i]) != isnan(y[i]);
        else if (isinf(x[i]) || isinf(y[i])) bad = x[i] != y[i];
        else bad = fabs(x[i] - y[i]) > tol * (1 + fabs(x[i]));
        if (bad)
            printf("FAIL %s [%s] %s: output %d element %lld: op %.12g, decomposition %.12g (tol %.2g)\n", r->name,
                   pd_dtype_name(dt), what, j, (long long)i, x[i], y[i], tol);
    }
    free(x);
    free(y);
    return bad;
}

static double tol_of(const struct opt_row *r, enum pd_dtype dt)
{
    double t = dt == PD_F64 ? 1e-9 : 5e-5;
    return t * (r->tol > 0 ? r->tol : 1);
}

static int check_forward(const struct opt_row *r, enum pd_dtype dt, uint64_t seed)
{
    int fail = 0;
    int scope_tok = pd_scope_begin();
    struct pd_tensor *in[OPT_MAX_IN], *a[4], *b[4];
    for (int k = 0; k < r->n_in; k++) in[k] = opt_make_input(&r->in[k], dt, seed, k);
    struct capture cap;
    if (capture_row(r, in, &cap)) {
        printf("FAIL %s [%s] decomposition: the row never dispatched %s (%s)\n", r->name, pd_dtype_name(dt),
               pdi_ops[r->op].name, pd_last_error());
        pd_scope_end(scope_tok);
        return 1;
    }
    if (run_op(&cap, a)) {
        printf("FAIL %s [%s] decomposition: op: %s\n", r->name, pd_dtype_name(dt), pd_last_error());
        fail = 1;
    } else if (run_decomp(&cap, b)) {
        printf("FAIL %s [%s] decomposition: %s\n", r->name, pd_dtype_name(dt), pd_last_error());
        fail = 1;
    } else {
        for (int j = 0; j < cap.n_out && !fail; j++)
            fail = close_enough("decomposition", r, dt, j, a[j], b[j], tol_of(r, dt));
    }
    capture_release(&cap);
    pd_scope_end(scope_tok);
    return fail;
}

/* L = sum(out0 * w) */
static struct pd_tensor *projection(struct pd_tensor *y, struct pd_tensor *w)
{
    struct pd_tensor *yc = y->dtype == PD_F64 ? y : pd_cast(y, PD_F64);
    return pd_sum(pd_mul(yc, w), NULL, 0, 0);
}

static int check_grad(const struct opt_row *r, uint64_t seed)
{
    int fail = 0, n_g = 0;
    int scope_tok = pd_scope_begin();
    struct pd_tensor *in[OPT_MAX_IN], *leaves[OPT_MAX_IN], *ga[OPT_MAX_IN], *gb[OPT_MAX_IN], *a[4], *b[4];
    for (int k = 0; k < r->n_in; k++) {
        in[k] = opt_make_input(&r->in[k], PD_F64, seed, k);
        if (r->in[k].kind == OPT_FLOAT && !r->in[k].no_grad && pd_tensor_numel(in[k]) > 0) {
            in[k] = pd_requires_grad_(pd_detach(in[k]), 1);
            leaves[n_g++] = in[k];
        }
    }
    struct capture cap;
    if (n_g == 0 || capture_row(r, in, &cap)) {
        pd_scope_end(scope_tok);
        return 0; /* the forward check reports a row that never calls the op */
    }
    if (run_op(&cap, a) || run_decomp(&cap, b)) {
        printf("FAIL %s [grad] decomposition: %s\n", r->name, pd_last_error());
        fail = 1;
    } else if (pd_dtype_is_float(a[0]->dtype) && pd_tensor_numel(a[0]) > 0 && pd_tensor_requires_grad(a[0])) {
        struct pd_generator *gen = pd_generator_create(seed ^ 0x5eed);
        struct pd_tensor *w = pd_uniform(a[0]->shape, a[0]->ndim, 0.5, 1.5, PD_F64, gen);
        pd_generator_destroy(gen);
        struct pd_tensor *la = projection(a[0], w), *lb = projection(b[0], w);
        /* the first backward retains the graph: a captured input may be a
         * view of a leaf (a transposed q), whose node both graphs share */
        if (!la || !lb ||
            pd_grad(&la, 1, leaves, n_g, ga, &(struct pd_grad_options){.retain_graph = 1, .allow_unused = 1}) ||
            pd_grad(&lb, 1, leaves, n_g, gb, &(struct pd_grad_options){.allow_unused = 1})) {
            printf("FAIL %s [grad] decomposition: backward: %s\n", r->name, pd_last_error());
            fail = 1;
        }
        for (int q = 0; q < n_g && !fail; q++) {
            if (!ga[q] && !gb[q]) continue;
            struct pd_tensor *za = ga[q] ? ga[q] : pd_zeros_like(leaves[q]);
            struct pd_tensor *zb = gb[q] ? gb[q] : pd_zeros_like(leaves[q]);
            fail = close_enough("decomposition gradient", r, PD_F64, q, za, zb, 1e-8 * (r->tol > 0 ? r->tol : 1));
        }
    }
    capture_release(&cap);
    pd_scope_end(scope_tok);
    return fail;
}

int opt_check_decomp(const struct opt_row *r, uint64_t seed, int with_grad)
{
    if ((unsigned)r->op >= PD_OP_COUNT || !pdi_op_has_decomp(r->op)) return -1;
    unsigned mask = r->dtypes ? r->dtypes : OPT_DT_F;
    int fail = 0;
    for (int d = PD_F32; d <= PD_F64; d++)
        if (mask & (1u << d)) fail |= check_forward(r, (enum pd_dtype)d, seed);
    if (with_grad && !r->no_gradcheck && (mask & (1u << PD_F64)) && !fail) fail |= check_grad(r, seed);
    return fail;
}
