/* paddle.c — the decompositions of the transformer ops (rope, swiglu, sdpa,
 * flashmask: pdi_decomp_* in src/ops/llm.c and src/ops/flashmask.c) against
 * the ops themselves.
 *
 * Each case runs one call twice, through the op table (pdi_dispatch: the
 * fused kernels and VJPs) and through the row's decomposition (primitive
 * public ops, differentiated by autograd), and compares every output
 * (sdpa and flashmask: out and the log-sum-exp, -inf rows included) and the
 * gradients of every float input: in f64 (1e-9) and f32 (2e-5 values,
 * 1e-4 gradients), first order with a zero log-sum-exp cotangent (the
 * fused VJPs) and with create_graph and a random one (the composed VJPs);
 * bf16 compares values only (2e-2: one rounding of the same f32 result).
 * Covered: rope with [T] and [B, T] positions, both signs, a strided x;
 * swiglu on wide values; sdpa plain, causal (S = T, S > T, S < T: rows that
 * see nothing), grouped-query heads, bool and float masks (the float mask
 * differentiated), -inf masks, Dv != D, decode, no keys; flashmask without
 * a mask, causal, each (causal, C) mode with random intervals, per-head
 * masks with grouped heads, and dropout (unaligned counter base, a key
 * above 2^63), whose keep decisions must match the kernels' exactly. The
 * attribute sets print by name.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pt.h"

static struct pd_generator *gen;

static struct pd_tensor *rnd(enum pd_dtype dt, int ndim, const int64_t *s, double lo, double hi)
{
    return pd_cast(pd_uniform(s, ndim, lo, hi, PD_F64, gen), dt);
}

#define SHAPE(...)                                                                                                     \
    (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]) { __VA_ARGS__ }

static struct pd_tensor *leaf(struct pd_tensor *t) { return pd_requires_grad_(pd_detach(t), 1); }

/* max |a - b| / (1 + |b|) with -inf == -inf (inf on a dtype or shape
 * mismatch, or NaN). */
static double rel_diff(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b || pd_tensor_dtype(a) != pd_tensor_dtype(b) || pd_tensor_ndim(a) != pd_tensor_ndim(b)) return INFINITY;
    for (int d = 0; d < pd_tensor_ndim(a); d++)
        if (pd_tensor_shape(a)[d] != pd_tensor_shape(b)[d]) return INFINITY;
    int64_t n = pd_tensor_numel(a);
    double *x = malloc(sizeof *x * (size_t)(n + 1)), *y = malloc(sizeof *y * (size_t)(n + 1)), m = 0;
    pd_to_buffer(a, x, PD_F64);
    pd_to_buffer(b, y, PD_F64);
    for (int64_t i = 0; i < n; i++) {
        if (x[i] == y[i]) continue; /* equal infinities */
        double d = fabs(x[i] - y[i]) / (1 + fabs(y[i]));
        if (!(d <= m)) m = d; /* NaN wins */
    }
    free(x);
    free(y);
    return m;
}

struct tc {
    const char *name;
    enum pd_op op;
    int n_in, n_out;
    struct pd_tensor *in[4];
    int diff[4]; /* inputs to differentiate */
    struct pdi_attrs a;
};

static int outputs_of(struct tc *t, int decomp, struct pd_tensor **out)
{
    struct pdi_call c = {.op = t->op, .n_in = t->n_in, .n_out = t->n_out, .in = t->in, .out = out, .a = t->a};
    return decomp ? pdi_ops[t->op].decomp(&c, out) : pdi_dispatch(&c);
}

/* d(sum_j out_j . r_j)/d(inputs) for one way of computing out. */
static int grads_of(struct tc *t, int decomp, struct pd_tensor **r, int create_graph, struct pd_tensor **g)
{
    struct pd_tensor *out[2], *wrt[4];
    int n = 0;
    if (outputs_of(t, decomp, out)) return -1;
    for (int i = 0; i < t->n_in; i++)
        if (t->diff[i]) wrt[n++] = t->in[i];
    return pd_grad(out, t->n_out, wrt, n, g,
                   &(struct pd_grad_options){.grad_outputs = r, .create_graph = create_graph});
}

static void check(struct tc *t)
{
    int scope_tok = pd_scope_begin();
    enum pd_dtype dt = pd_tensor_dtype(t->in[0]);
    double tol = dt == PD_F64 ? 1e-9 : dt == PD_F32 ? 2e-5 : 2e-2, gtol = dt == PD_F64 ? 1e-9 : 1e-4;
    struct pd_tensor *o[2] = {NULL, NULL}, *d[2] = {NULL, NULL};
    int rc_op = outputs_of(t, 0, o), rc_dec = outputs_of(t, 1, d);
    if (rc_op || rc_dec) {
        printf("%s: op status %d, decomposition status %d (%s)\n", t->name, rc_op, rc_dec, pd_last_error());
        PT_CHECK(0);
    }
    for (int j = 0; !rc_op && !rc_dec && j < t->n_out; j++) {
        double e = rel_diff(d[j], o[j]);
        if (!(e <= tol)) printf("%s (%s): output %d differs by %g\n", t->name, pd_dtype_name(dt), j, e);
        PT_CHECK(e <= tol);
    }
    if (dt == PD_F64 || dt == PD_F32) {
        for (int cg = 0; cg < 2; cg++) {
            struct pd_tensor *r[2], *go[4] = {NULL}, *gd[4] = {NULL};
            for (int j = 0; j < t->n_out; j++) {
                struct pd_tensor *x = pd_randn(pd_tensor_shape(o[j]), pd_tensor_ndim(o[j]), PD_F64, gen);
                r[j] = pd_cast(x, pd_tensor_dtype(o[j]));
                if (j && !cg) r[j] = pd_scale(r[j], 0); /* the fused VJPs ignore the lse's cotangent */
            }
            int a = grads_of(t, 0, r, cg, go), b = grads_of(t, 1, r, cg, gd);
            if (a || b) {
                printf("%s (%s, create_graph %d): grad status %d / %d (%s)\n", t->name, pd_dtype_name(dt), cg, a, b,
                       pd_last_error());
                PT_CHECK(0);
                continue;
            }
            for (int i = 0, n = 0; i < t->n_in; i++) {
                if (!t->diff[i]) continue;
                double e = rel_diff(gd[n], go[n]);
                if (!(e <= gtol))
                    printf("%s (%s, create_graph %d): gradient of input %d differs by %g\n", t->name, pd_dtype_name(dt),
                           cg, i, e);
                PT_CHECK(e <= gtol);
                n++;
            }
        }
    }
    pd_scope_end(scope_tok);
}

static const enum pd_dtype dts[3] = {PD_F64, PD_F32, PD_BF16};

/* ---- rope ------------------------------------------------------------ */
static void rope_case(const char *name, int nd, const int64_t *xs, struct pd_tensor *pos, double theta, int sign,
                      int strided)
{
    for (int k = 0; k < 3; k++) {
        struct pd_tensor *x = rnd(dts[k], nd, xs, -2, 2);
        if (strided) x = pd_slice(x, 3, 0, xs[3], 2);
        struct tc t = {name, PD_OP_rope, 2, 1, {leaf(x), pos}, {1, 0}, {.rope = {.theta = theta, .sign = sign}}};
        check(&t);
    }
}

static void test_rope(void)
{
    rope_case("rope/positions_T", SHAPE(2, 5, 3, 8), pd_randint((int64_t[]){5}, 1, 0, 40, PD_I64, gen), 1e4, 1, 0);
    rope_case("rope/positions_BT_inverse", SHAPE(2, 4, 2, 6), pd_randint((int64_t[]){2, 4}, 2, -5, 1000, PD_I32, gen),
              500, -1, 0);
    rope_case("rope/strided", SHAPE(1, 3, 2, 20), pd_randint((int64_t[]){3}, 1, 0, 4096, PD_I64, gen), 7.5, 1, 1);
}

/* ---- swiglu ---------------------------------------------------------- */
static void test_swiglu(void)
{
    for (int k = 0; k < 3; k++) {
        struct tc t = {"swiglu/wide",
                       PD_OP_swiglu,
                       2,
                       1,
                       {leaf(rnd(dts[k], SHAPE(5, 9), -30, 30)), leaf(rnd(dts[k], SHAPE(5, 9), -2, 2))},
                       {1, 1}};
        check(&t);
    }
}

/* ---- sdpa ------------------------------------------------------------ */
/* q [B, Hq, T, D], k [B, Hkv, S, D], v [B, Hkv, S, Dv]; mask: 0 none, 1 bool
 * [B, 1, T, S], 2 float [T, S] (differentiated), 3 -inf where a random bool
 * mask is false, [B, 1, T, S]. */
static void sdpa_case(const char *name, int64_t B, int64_t Hq, int64_t Hkv, int64_t T, int64_t S, int64_t D, int64_t Dv,
                      int causal, int mask)
{
    for (int k = 0; k < 3; k++) {
        enum pd_dtype dt = dts[k];
        struct tc t = {name,
                       PD_OP_sdpa,
                       3 + (mask != 0),
                       2,
                       {leaf(rnd(dt, SHAPE(B, Hq, T, D), -2, 2)), leaf(rnd(dt, SHAPE(B, Hkv, S, D), -2, 2)),
                        leaf(rnd(dt, SHAPE(B, Hkv, S, Dv), -2, 2))},
                       {1, 1, 1}};
        if (mask == 1 || mask == 3) {
            struct pd_tensor *b = pd_lt(pd_rand((int64_t[]){B, 1, T, S}, 4, PD_F64, gen), pd_scalar(0.7, PD_F64));
            t.in[3] = mask == 1 ? b : pd_where(b, pd_scalar(0, dt), pd_scalar(-INFINITY, dt));
        } else if (mask == 2) {
            t.in[3] = leaf(rnd(dt, SHAPE(T, S), -3, 3));
            t.diff[3] = 1;
        }
        t.a.sdpa = (struct pdi_attrs_sdpa){.causal = causal, .scale = 1.0 / sqrt((double)D), .has_mask = mask != 0};
        check(&t);
    }
}

static void test_sdpa(void)
{
    sdpa_case("sdpa/plain", 2, 2, 2, 3, 5, 4, 4, 0, 0);
    sdpa_case("sdpa/causal_square", 2, 2, 2, 4, 4, 3, 3, 1, 0);
    sdpa_case("sdpa/causal_S_gt_T", 1, 2, 2, 3, 6, 4, 4, 1, 0);
    sdpa_case("sdpa/causal_S_lt_T", 1, 2, 2, 5, 3, 4, 4, 1, 0);
    sdpa_case("sdpa/gqa_causal", 1, 6, 2, 4, 4, 4, 4, 1, 0);
    sdpa_case("sdpa/bool_mask_causal_gqa", 2, 4, 2, 3, 5, 4, 4, 1, 1);
    sdpa_case("sdpa/float_mask", 2, 2, 1, 3, 5, 4, 6, 0, 2);
    sdpa_case("sdpa/neg_inf_mask", 2, 2, 2, 4, 5, 4, 4, 0, 3);
    sdpa_case("sdpa/decode", 2, 4, 2, 1, 7, 8, 8, 1, 0);
    sdpa_case("sdpa/zero_keys", 1, 2, 2, 3, 0, 4, 4, 0, 0);
    sdpa_case("sdpa/blocked", 1, 4, 2, 70, 90, 20, 12, 1, 1);
}

/* ---- flashmask ------------------------------------------------------- */
/* q [B, Sq, Hq, D], k [B, Sk, Hk, D], v [B, Sk, Hk, Dv]; C = 0: no mask,
 * else random int32 intervals [B, Hm, Sk, C] in [0, Sq]. */
static void flashmask_case(const char *name, int64_t B, int64_t Sq, int64_t Sk, int64_t Hq, int64_t Hk, int64_t Hm,
                           int64_t C, int causal, double p, int64_t seed, int64_t offset, int lse_returned)
{
    for (int k = 0; k < 3; k++) {
        enum pd_dtype dt = dts[k];
        struct tc t = {name,
                       PD_OP_flashmask,
                       3 + (C != 0),
                       2,
                       {leaf(rnd(dt, SHAPE(B, Sq, Hq, 4), -2, 2)), leaf(rnd(dt, SHAPE(B, Sk, Hk, 4), -2, 2)),
                        leaf(rnd(dt, SHAPE(B, Sk, Hk, 6), -2, 2))},
                       {1, 1, 1}};
        if (C) t.in[3] = pd_randint((int64_t[]){B, Hm, Sk, C}, 4, 0, Sq + 1, PD_I32, gen);
        t.a.flashmask = (struct pdi_attrs_flashmask){.causal = causal,
                                                     .scale = 0.5,
                                                     .has_idx = C != 0,
                                                     .dropout_p = p,
                                                     .dropout_seed = seed,
                                                     .dropout_offset = offset,
                                                     .lse_returned = lse_returned};
        check(&t);
    }
}

static void test_flashmask(void)
{
    flashmask_case("flashmask/plain", 2, 5, 7, 2, 2, 0, 0, 0, 0, 0, 0, 0);
    flashmask_case("flashmask/causal_sq_gt_sk", 1, 7, 4, 2, 2, 0, 0, 1, 0, 0, 0, 0);
    flashmask_case("flashmask/causal_c1", 2, 6, 6, 2, 2, 1, 1, 1, 0, 0, 0, 0);
    flashmask_case("flashmask/causal_c2_gqa_lse", 1, 6, 6, 4, 2, 2, 2, 1, 0, 0, 0, 1);
    flashmask_case("flashmask/c2_sq_lt_sk", 1, 4, 9, 2, 2, 1, 2, 0, 0, 0, 0, 0);
    flashmask_case("flashmask/c4_per_head_gqa", 2, 7, 7, 4, 2, 2, 4, 0, 0, 0, 0, 0);
    flashmask_case("flashmask/dropout_causal_c1", 2, 6, 6, 2, 2, 1, 1, 1, 0.25, 1234, 4096, 0);
    flashmask_case("flashmask/dropout_gqa_unaligned", 1, 5, 7, 4, 2, 0, 0, 0, 0.4, 77, 4101, 0);
    flashmask_case("flashmask/dropout_high_key_lse", 1, 9, 6, 2, 1, 1, 4, 0, 0.3, (int64_t)0xDEADBEEFCAFEBABEull,
                   123456789, 1);
    flashmask_case("flashmask/large_c2", 1, 70, 80, 2, 2, 1, 2, 1, 0.1, 5, 8, 0);
}

/* The dense mask of the converter (public ops) against the kernels'
 * predicate, through an all-visible attention: a row's output is the mean
 * of the values it sees when q = 0. */
static void test_dense_vs_kernel(void)
{
    int scope_tok = pd_scope_begin();
    for (int causal = 0; causal < 2; causal++)
        for (int64_t C = 1; C <= 4; C *= 2) {
            if (causal ? C == 4 : C == 1) continue;
            int64_t B = 2, Sq = 9, Sk = 11, H = 2;
            struct pd_tensor *idx = pd_randint((int64_t[]){B, 1, Sk, C}, 4, 0, Sq + 1, PD_I32, gen);
            struct pd_tensor *q = pd_zeros((int64_t[]){B, Sq, H, 4}, 4, PD_F64);
            struct pd_tensor *k = pd_zeros((int64_t[]){B, Sk, H, 4}, 4, PD_F64);
            struct pd_tensor *v = rnd(PD_F64, SHAPE(B, Sk, H, 3), -1, 1);
            struct pd_tensor *o = pd_flashmask_attention(q, k, v, idx, causal, NULL, 0, 0, NULL);
            struct pd_tensor *vis = pd_cast(pd_flashmask_to_dense(idx, causal, Sq), PD_F64); /* [B, 1, Sq, Sk] */
            struct pd_tensor *cnt = pd_sum(vis, (int[]){3}, 1, 1);
            struct pd_tensor *w = pd_div(vis, pd_where(pd_gt(cnt, pd_scalar(0, PD_F64)), cnt, pd_scalar(1, PD_F64)));
            struct pd_tensor *ref = pd_transpose(pd_matmul(w, pd_transpose(v, 1, 2), 0, 0), 1, 2);
            double e = rel_diff(pd_contiguous(ref), o);
            if (!(e <= 1e-12))
                printf("dense mask (causal %d, C %lld) differs from the kernel by %g\n", causal, (long long)C, e);
            PT_CHECK(e <= 1e-12);
        }
    pd_scope_end(scope_tok);
}

/* The sets print by name (a Philox key above 2^63 included) and have the
 * documented defaults. */
static void test_attrs(void)
{
    char buf[256];
    struct pdi_attrs a = {.rope = {.theta = 500, .sign = -1}}, b;
    PT_CHECK(!strcmp(pdi_attrs_format(PD_OP_rope, &a, buf, sizeof buf), "rope(theta=500, sign=-1)"));
    a = (struct pdi_attrs){.sdpa = {.causal = 1, .scale = 0.5, .has_mask = 0}};
    PT_CHECK(!strcmp(pdi_attrs_format(PD_OP_sdpa_backward, &a, buf, sizeof buf),
                     "sdpa_backward(causal=1, scale=0.5, has_mask=0)"));
    a = (struct pdi_attrs){.flashmask = {.causal = 1,
                                         .scale = 0.25,
                                         .has_idx = 1,
                                         .dropout_p = 0.125,
                                         .dropout_seed = (int64_t)0xDEADBEEFCAFEBABEull,
                                         .dropout_offset = 4096,
                                         .lse_returned = 1}};
    PT_CHECK(!strcmp(pdi_attrs_format(PD_OP_flashmask, &a, buf, sizeof buf),
                     "flashmask(causal=1, scale=0.25, has_idx=1, dropout_p=0.125, dropout_seed=-2401053089206453570, "
                     "dropout_offset=4096, lse_returned=1)"));
    pdi_attrs_default(PD_OP_rope, &b);
    PT_CHECK(b.rope.theta == 10000.0 && b.rope.sign == 1);
}

int main(void)
{
    gen = pd_generator_create(11);
    int scope_tok = pd_scope_begin();
    for (int op = 0; op < PD_OP_COUNT; op++) {
        int want = op == PD_OP_rope || op == PD_OP_swiglu || op == PD_OP_sdpa || op == PD_OP_flashmask;
        if (want) PT_CHECK(pdi_op_has_decomp((enum pd_op)op));
    }
    test_rope();
    test_swiglu();
    test_sdpa();
    test_flashmask();
    test_dense_vs_kernel();
    test_attrs();
    pd_scope_end(scope_tok);
    pd_generator_destroy(gen);
    PT_DONE();
}
