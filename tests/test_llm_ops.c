/* paddle.c — the fused transformer ops against explicit compositions of
 * public ops, on realistic shapes.
 *
 *   sdpa: out and d q/k/v against matmul + masked softmax + matmul, in f64
 *     (1e-10) and f32 (1e-4), for causal training shapes with and without
 *     grouped-query heads, causal S > T (KV cache), decode (T = 1), bool and
 *     float masks, non-contiguous [B, T, H, D] views, fully masked rows
 *     (zeros, zero gradients, no NaN); second order through create_graph
 *     against finite differences; the float mask's gradient.
 *   rope: against x cos + rotate_half(x) sin with [T] and [B, T] positions,
 *     and its gradient (the inverse rotation).
 *   swiglu: against silu(gate) * up, values and gradients (the fused
 *     swiglu_backward) and second order (the composed VJP).
 *   errors: each bad input returns NULL with a message naming the op, and
 *     leaks nothing; pd_sdpa outside any scope hands the caller one tensor.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pt.h"

static struct pd_generator *gen;

static struct pd_tensor *randn(enum pd_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t s[4] = {a, b, c, d};
    return pd_cast(pd_randn(s, 4, PD_F64, gen), dt);
}

static struct pd_tensor *leaf(struct pd_tensor *t) { return pd_requires_grad_(pd_detach(t), 1); }

/* max |a - b| / (1 + |b|) over all elements (inf on shape mismatch or NaN) */
static double rel_diff(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b || pd_tensor_numel(a) != pd_tensor_numel(b)) return INFINITY;
    int64_t n = pd_tensor_numel(a);
    double *x = malloc(sizeof *x * (size_t)(n + 1)), *y = malloc(sizeof *y * (size_t)(n + 1)), m = 0;
    pd_to_buffer(a, x, PD_F64);
    pd_to_buffer(b, y, PD_F64);
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(x[i] - y[i]) / (1 + fabs(y[i]));
        if (!(d <= m)) m = d; /* NaN wins */
    }
    free(x);
    free(y);
    return m;
}

static int has_nan(struct pd_tensor *t)
{
    return t ? pd_item(pd_sum(pd_cast(pd_isnan(t), PD_F64), NULL, 0, 0)) > 0 : 1;
}

/* ---- the reference composition --------------------------------------- */
/* k/v [B, Hkv, S, X] repeated to [B, Hq, S, X] (each kv head serves G
 * consecutive query heads). */
static struct pd_tensor *repeat_heads(struct pd_tensor *x, int64_t hq)
{
    int64_t g = hq / pd_tensor_dim(x, 1);
    return g == 1 ? x : pd_repeat_interleave(x, g, 1);
}

/* softmax(q k^T * scale + mask, restricted to visible keys) v, rows with no
 * visible key giving 0: scores of hidden keys are -inf, and a row whose max
 * is -inf is replaced by zeros before the softmax and masked after. */
static struct pd_tensor *ref_sdpa(struct pd_tensor *q, struct pd_tensor *k, struct pd_tensor *v,
                                  struct pd_tensor *mask, int causal, double scale)
{
    int64_t hq = pd_tensor_dim(q, 1), T = pd_tensor_dim(q, 2), S = pd_tensor_dim(k, 2);
    enum pd_dtype dt = pd_tensor_dtype(q);
    if (scale <= 0) scale = 1.0 / sqrt((double)pd_tensor_dim(q, 3));
    struct pd_tensor *s = pd_scale(pd_matmul(q, repeat_heads(k, hq), 0, 1), scale);
    struct pd_tensor *vis = NULL;
    if (causal) {
        int64_t ts[2] = {T, 1}, ss[2] = {1, S};
        vis = pd_le(pd_reshape(pd_arange(0, (double)S, 1, PD_I64), ss, 2),
                    pd_add_scalar(pd_reshape(pd_arange(0, (double)T, 1, PD_I64), ts, 2), (double)(S - T)));
    }
    if (mask && pd_tensor_dtype(mask) == PD_BOOL) vis = vis ? pd_logical_and(vis, mask) : mask;
    else if (mask) s = pd_add(s, mask);
    struct pd_tensor *ninf = pd_scalar(-INFINITY, dt), *zero = pd_scalar(0, dt);
    if (vis) s = pd_where(vis, s, ninf);
    int ax = -1;
    struct pd_tensor *alive = pd_isfinite(pd_amax(s, &ax, 1, 1)); /* [.., T, 1] */
    s = pd_where(alive, s, zero);
    struct pd_tensor *p = pd_where(alive, pd_softmax(s, -1), zero);
    return pd_matmul(p, repeat_heads(v, hq), 0, 0);
}

/* Compares pd_sdpa with ref_sdpa: output and gradients of sum(out * w). */
static void check_sdpa(const char *what, enum pd_dtype dt, struct pd_tensor *q, struct pd_tensor *k,
                       struct pd_tensor *v, struct pd_tensor *mask, int causal, double scale)
{
    double tol = dt == PD_F64 ? 1e-10 : 1e-4;
    int scope_tok = pd_scope_begin();
    q = leaf(pd_cast(q, dt));
    k = leaf(pd_cast(k, dt));
    v = leaf(pd_cast(v, dt));
    if (mask && pd_tensor_dtype(mask) != PD_BOOL) mask = pd_cast(mask, dt);
    struct pd_tensor *in[3] = {q, k, v}, *ga[3], *gb[3];
    struct pd_tensor *a = pd_sdpa(q, k, v, mask, causal, scale), *b = ref_sdpa(q, k, v, mask, causal, scale);
    PT_CHECK(a != NULL && b != NULL);
    if (!a || !b) { pd_scope_end(scope_tok); return; }
    struct pd_tensor *w = pd_cast(pd_randn(pd_tensor_shape(a), 4, PD_F64, gen), dt);
    struct pd_tensor *la = pd_sum(pd_mul(a, w), NULL, 0, 0), *lb = pd_sum(pd_mul(b, w), NULL, 0, 0);
    PT_CHECK(pd_grad(&la, 1, in, 3, ga, NULL) == 0);
    PT_CHECK(pd_grad(&lb, 1, in, 3, gb, NULL) == 0);
    double d = rel_diff(a, b);
    const char *names[3] = {"dq", "dk", "dv"};
    if (!(d <= tol)) printf("%s [%s] out: rel diff %g\n", what, pd_dtype_name(dt), d);
    PT_CHECK(d <= tol);
    PT_CHECK(!has_nan(a));
    for (int i = 0; i < 3; i++) {
        double e = rel_diff(ga[i], gb[i]);
        if (!(e <= tol)) printf("%s [%s] %s: rel diff %g\n", what, pd_dtype_name(dt), names[i], e);
        PT_CHECK(e <= tol);
        PT_CHECK(!has_nan(ga[i]));
    }
    pd_scope_end(scope_tok);
}

static void test_sdpa_vs_composition(void)
{
    enum pd_dtype dts[2] = {PD_F64, PD_F32};
    for (int i = 0; i < 2; i++) {
        enum pd_dtype dt = dts[i];
        int scope_tok = pd_scope_begin();
        /* training shape of the Llama bench, shrunk in batch */
        check_sdpa("causal mha", dt, randn(dt, 2, 6, 96, 48), randn(dt, 2, 6, 96, 48), randn(dt, 2, 6, 96, 48), NULL,
                   1, 0);
        check_sdpa("causal gqa", dt, randn(dt, 1, 6, 70, 32), randn(dt, 1, 2, 70, 32), randn(dt, 1, 2, 70, 32), NULL,
                   1, 0);
        check_sdpa("non-causal, scale", dt, randn(dt, 2, 2, 33, 16), randn(dt, 2, 2, 41, 16),
                   randn(dt, 2, 2, 41, 24), NULL, 0, 0.3);
        check_sdpa("kv cache S > T", dt, randn(dt, 2, 4, 9, 32), randn(dt, 2, 2, 80, 32), randn(dt, 2, 2, 80, 32),
                   NULL, 1, 0);
        check_sdpa("decode T = 1", dt, randn(dt, 3, 6, 1, 48), randn(dt, 3, 6, 300, 48), randn(dt, 3, 6, 300, 48),
                   NULL, 1, 0);
        check_sdpa("decode gqa", dt, randn(dt, 1, 8, 1, 16), randn(dt, 1, 2, 513, 16), randn(dt, 1, 2, 513, 16),
                   NULL, 1, 0);
        check_sdpa("S < T: leading rows see nothing", dt, randn(dt, 1, 2, 20, 8), randn(dt, 1, 2, 12, 8),
                   randn(dt, 1, 2, 12, 8), NULL, 1, 0);
        /* [B, T, H, D] projections viewed as [B, H, T, D] */
        struct pd_tensor *qt = pd_transpose(randn(dt, 2, 50, 4, 16), 1, 2);
        struct pd_tensor *kt = pd_transpose(randn(dt, 2, 50, 4, 16), 1, 2);
        struct pd_tensor *vt = pd_transpose(randn(dt, 2, 50, 4, 16), 1, 2);
        check_sdpa("bthd views", dt, qt, kt, vt, NULL, 1, 0);
        /* bool padding mask [B, 1, 1, S]: the second sequence hides its
         * last 10 keys; a fully hidden row gives zeros */
        int64_t ms[4] = {2, 1, 1, 40};
        unsigned char mb[80];
        for (int j = 0; j < 80; j++) mb[j] = j < 40 || j % 40 < 30;
        struct pd_tensor *pad = pd_from_buffer(mb, ms, 4, PD_BOOL);
        check_sdpa("bool padding mask", dt, randn(dt, 2, 3, 40, 16), randn(dt, 2, 3, 40, 16), randn(dt, 2, 3, 40, 16),
                   pad, 1, 0);
        int64_t ss[2] = {24, 40};
        struct pd_tensor *sparse = pd_lt(pd_rand(ss, 2, PD_F64, gen), pd_scalar(0.1, PD_F64));
        check_sdpa("sparse bool mask", dt, randn(dt, 1, 2, 24, 8), randn(dt, 1, 2, 40, 8), randn(dt, 1, 2, 40, 8),
                   sparse, 0, 0);
        int64_t fs[4] = {1, 3, 30, 64};
        check_sdpa("float mask", dt, randn(dt, 1, 3, 30, 16), randn(dt, 1, 3, 64, 16), randn(dt, 1, 3, 64, 16),
                   pd_scale(pd_randn(fs, 4, PD_F64, gen), 2.0), 1, 0);
        pd_scope_end(scope_tok);
    }
}

/* A row with no visible key: zeros, zero gradients, no NaN. */
static void test_fully_masked(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *q = leaf(randn(PD_F32, 1, 2, 4, 8)), *k = leaf(randn(PD_F32, 1, 2, 5, 8));
    struct pd_tensor *v = leaf(randn(PD_F32, 1, 2, 5, 8));
    int64_t ms[2] = {4, 5};
    unsigned char mb[20] = {0};
    for (int j = 5; j < 20; j++) mb[j] = 1; /* query 0 sees nothing */
    struct pd_tensor *m = pd_from_buffer(mb, ms, 2, PD_BOOL);
    struct pd_tensor *y = pd_sdpa(q, k, v, m, 0, 0), *in[3] = {q, k, v}, *g[3];
    PT_CHECK(y && !has_nan(y));
    int64_t row0[4] = {0, 1, 0, 3}, row1[4] = {0, 1, 1, 3};
    PT_CHECK(pd_get(y, row0) == 0.0);
    PT_CHECK(pd_get(y, row1) != 0.0);
    struct pd_tensor *L = pd_sum(y, NULL, 0, 0);
    PT_CHECK(pd_grad(&L, 1, in, 3, g, NULL) == 0);
    for (int i = 0; i < 3; i++) PT_CHECK(!has_nan(g[i]));
    int64_t dq0[4] = {0, 0, 0, 5};
    PT_CHECK(pd_get(g[0], dq0) == 0.0);
    /* the same through a -inf float mask */
    struct pd_tensor *fm = pd_where(m, pd_scalar(0, PD_F32), pd_scalar(-INFINITY, PD_F32));
    struct pd_tensor *y2 = pd_sdpa(q, k, v, fm, 0, 0);
    PT_CHECK(rel_diff(y2, y) <= 1e-6);
    pd_scope_end(scope_tok);
}

/* Second order: d/dk of sum(dq * w2), where dq = d/dq sum(sdpa * w) is
 * taken with create_graph, against central differences in k. */
static void test_second_order(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *q = leaf(randn(PD_F64, 1, 2, 3, 4)), *k = leaf(randn(PD_F64, 1, 1, 5, 4));
    struct pd_tensor *v = leaf(randn(PD_F64, 1, 1, 5, 4));
    struct pd_tensor *w = randn(PD_F64, 1, 2, 3, 4), *w2 = randn(PD_F64, 1, 2, 3, 4);
    struct pd_tensor *y = pd_sdpa(q, k, v, NULL, 1, 0), *L = pd_sum(pd_mul(y, w), NULL, 0, 0), *dq, *dk;
    PT_CHECK(pd_grad(&L, 1, &q, 1, &dq, &(struct pd_grad_options){.create_graph = 1}) == 0);
    struct pd_tensor *L2 = pd_sum(pd_mul(dq, w2), NULL, 0, 0);
    PT_CHECK(pd_grad(&L2, 1, &k, 1, &dk, NULL) == 0);
    double *kp = pd_tensor_data(k), eps = 1e-6;
    for (int i = 0; i < 20; i++) {
        double l[2], k0 = kp[i];
        for (int s = 0; s < 2; s++) {
            kp[i] = k0 + (s ? -eps : eps);
            int scope_tok2 = pd_scope_begin();
            struct pd_tensor *qq = leaf(q), *d;
            struct pd_tensor *ll = pd_sum(pd_mul(pd_sdpa(qq, k, v, NULL, 1, 0), w), NULL, 0, 0);
            pd_grad(&ll, 1, &qq, 1, &d, NULL);
            l[s] = pd_item(pd_sum(pd_mul(d, w2), NULL, 0, 0));
            pd_scope_end(scope_tok2);
        }
        kp[i] = k0;
        int64_t idx[4] = {0, 0, i / 4, i % 4};
        PT_NEAR(pd_get(dk, idx), (l[0] - l[1]) / (2 * eps), 1e-6);
    }
    pd_scope_end(scope_tok);
}

/* A float mask that requires grad gets d mask = dS (summed to its shape). */
static void test_mask_grad(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *q = randn(PD_F64, 2, 2, 6, 8), *k = randn(PD_F64, 2, 2, 7, 8), *v = randn(PD_F64, 2, 2, 7, 8);
    int64_t ms[2] = {6, 7};
    struct pd_tensor *m = pd_requires_grad_(pd_randn(ms, 2, PD_F64, gen), 1), *w = randn(PD_F64, 2, 2, 6, 8);
    struct pd_tensor *ga, *gb;
    struct pd_tensor *la = pd_sum(pd_mul(pd_sdpa(q, k, v, m, 1, 0), w), NULL, 0, 0);
    struct pd_tensor *lb = pd_sum(pd_mul(ref_sdpa(q, k, v, m, 1, 0), w), NULL, 0, 0);
    PT_CHECK(pd_grad(&la, 1, &m, 1, &ga, NULL) == 0);
    PT_CHECK(pd_grad(&lb, 1, &m, 1, &gb, NULL) == 0);
    PT_CHECK(rel_diff(ga, gb) <= 1e-10);
    pd_scope_end(scope_tok);
}

/* ---- rope ------------------------------------------------------------ */
/* x [B, T, H, D]: x cos + rotate_half(x) sin, rotate_half = cat(-x2, x1),
 * cos/sin of pos * theta^(-2i/D) repeated over both halves. */
static struct pd_tensor *ref_rope(struct pd_tensor *x, struct pd_tensor *pos, double theta)
{
    int64_t D = pd_tensor_dim(x, 3), h = D / 2;
    enum pd_dtype dt = pd_tensor_dtype(x);
    struct pd_tensor *i = pd_arange(0, (double)h, 1, PD_F64);
    struct pd_tensor *inv = pd_exp(pd_scale(i, -2.0 * log(theta) / (double)D));          /* [h] */
    struct pd_tensor *ang = pd_mul(pd_unsqueeze(pd_cast(pos, PD_F64), -1), inv);         /* [.., T, h] */
    struct pd_tensor *two[2] = {ang, ang};
    struct pd_tensor *emb = pd_unsqueeze(pd_concat(two, 2, -1), -2);                     /* [.., T, 1, D] */
    struct pd_tensor *c = pd_cast(pd_cos(emb), dt), *s = pd_cast(pd_sin(emb), dt);
    struct pd_tensor *x1 = pd_slice(x, 3, 0, h, 1), *x2 = pd_slice(x, 3, h, D, 1);
    struct pd_tensor *rh[2] = {pd_neg(x2), x1};
    return pd_add(pd_mul(x, c), pd_mul(pd_concat(rh, 2, 3), s));
}

static void check_rope(enum pd_dtype dt, struct pd_tensor *x, struct pd_tensor *pos, double theta)
{
    double tol = dt == PD_F64 ? 1e-12 : 2e-6;
    int scope_tok = pd_scope_begin();
    x = leaf(pd_cast(x, dt));
    struct pd_tensor *a = pd_rope(x, pos, theta), *b = ref_rope(x, pos, theta), *ga, *gb;
    PT_CHECK(rel_diff(a, b) <= tol);
    struct pd_tensor *w = pd_cast(pd_randn(pd_tensor_shape(x), 4, PD_F64, gen), dt);
    struct pd_tensor *la = pd_sum(pd_mul(a, w), NULL, 0, 0), *lb = pd_sum(pd_mul(b, w), NULL, 0, 0);
    PT_CHECK(pd_grad(&la, 1, &x, 1, &ga, NULL) == 0);
    PT_CHECK(pd_grad(&lb, 1, &x, 1, &gb, NULL) == 0);
    PT_CHECK(rel_diff(ga, gb) <= tol);
    pd_scope_end(scope_tok);
}

static void test_rope(void)
{
    enum pd_dtype dts[2] = {PD_F64, PD_F32};
    for (int i = 0; i < 2; i++) {
        int scope_tok = pd_scope_begin();
        check_rope(dts[i], randn(PD_F64, 2, 64, 6, 48), pd_arange(0, 64, 1, PD_I64), 10000.0);
        int64_t ps[2] = {3, 17};
        check_rope(dts[i], randn(PD_F64, 3, 17, 2, 16), pd_randint(ps, 2, 0, 2048, PD_I64, gen), 500000.0);
        /* a decode step: one position per sequence */
        int64_t p1[2] = {4, 1};
        check_rope(dts[i], randn(PD_F64, 4, 1, 8, 64), pd_randint(p1, 2, 100, 200, PD_I64, gen), 10000.0);
        check_rope(dts[i], pd_transpose(randn(PD_F64, 2, 5, 9, 8), 1, 2), pd_arange(3, 12, 1, PD_I64), 10000.0);
        pd_scope_end(scope_tok);
    }
}

static void test_swiglu(void)
{
    int scope_tok = pd_scope_begin();
    int64_t s[3] = {4, 33, 96};
    enum pd_dtype dts[2] = {PD_F64, PD_F32};
    for (int i = 0; i < 2; i++) {
        struct pd_tensor *g = leaf(pd_cast(pd_scale(pd_randn(s, 3, PD_F64, gen), 4.0), dts[i]));
        struct pd_tensor *u = leaf(pd_cast(pd_randn(s, 3, PD_F64, gen), dts[i]));
        struct pd_tensor *a = pd_swiglu(g, u), *b = pd_mul(pd_silu(g), u), *in[2] = {g, u}, *ga[2], *gb[2];
        double tol = dts[i] == PD_F64 ? 1e-12 : 1e-6;
        PT_CHECK(rel_diff(a, b) <= tol);
        struct pd_tensor *la = pd_sum(pd_square(a), NULL, 0, 0), *lb = pd_sum(pd_square(b), NULL, 0, 0);
        PT_CHECK(pd_grad(&la, 1, in, 2, ga, NULL) == 0);
        PT_CHECK(pd_grad(&lb, 1, in, 2, gb, NULL) == 0);
        PT_CHECK(rel_diff(ga[0], gb[0]) <= tol * 10);
        PT_CHECK(rel_diff(ga[1], gb[1]) <= tol * 10);
        /* second order: the recorded (create_graph) VJP composes public ops
         * instead of the fused swiglu_backward, so it differentiates again */
        struct pd_tensor *la2 = pd_sum(pd_square(pd_swiglu(g, u)), NULL, 0, 0);
        struct pd_tensor *lb2 = pd_sum(pd_square(pd_mul(pd_silu(g), u)), NULL, 0, 0), *ha[2], *hb[2];
        PT_CHECK(pd_grad(&la2, 1, in, 2, ga, &(struct pd_grad_options){.create_graph = 1}) == 0);
        PT_CHECK(pd_grad(&lb2, 1, in, 2, gb, &(struct pd_grad_options){.create_graph = 1}) == 0);
        struct pd_tensor *sa = pd_sum(pd_mul(ga[0], ga[1]), NULL, 0, 0), *sb = pd_sum(pd_mul(gb[0], gb[1]), NULL, 0, 0);
        PT_CHECK(pd_grad(&sa, 1, in, 2, ha, NULL) == 0);
        PT_CHECK(pd_grad(&sb, 1, in, 2, hb, NULL) == 0);
        PT_CHECK(rel_diff(ha[0], hb[0]) <= tol * 10);
        PT_CHECK(rel_diff(ha[1], hb[1]) <= tol * 10);
    }
    pd_scope_end(scope_tok);
}

/* ---- errors and ownership -------------------------------------------- */
static void expect_error(struct pd_tensor *r, const char *op, const char *needle)
{
    PT_CHECK(r == NULL);
    const char *e = pd_last_error();
    int ok = e && strstr(e, op) && strstr(e, needle);
    if (!ok) printf("  expected an error from %s mentioning '%s', got: %s\n", op, needle, e ? e : "(none)");
    PT_CHECK(ok);
    pd_clear_error();
}

static void test_errors(void)
{
    int scope_tok = pd_scope_begin();
    int64_t live = pd_live_tensors();
    struct pd_tensor *x = randn(PD_F32, 2, 3, 4, 6), *pos = pd_arange(0, 3, 1, PD_I64);
    int64_t s3[3] = {3, 4, 6};
    expect_error(pd_rope(pd_zeros(s3, 3, PD_F32), pos, 1e4), "rope", "[B, T, H, D]");
    expect_error(pd_rope(randn(PD_F32, 2, 3, 4, 5), pos, 1e4), "rope", "D even");
    expect_error(pd_rope(x, pd_arange(0, 4, 1, PD_I64), 1e4), "rope", "positions [4]");
    expect_error(pd_rope(x, pd_arange(0, 3, 1, PD_F32), 1e4), "rope", "integers");
    expect_error(pd_rope(x, pos, 0), "rope", "theta");
    expect_error(pd_rope(pd_cast(x, PD_I32), pos, 1e4), "rope", "floating");
    expect_error(pd_swiglu(x, randn(PD_F32, 2, 3, 4, 5)), "swiglu", "same shape");
    expect_error(pd_swiglu(x, pd_cast(x, PD_F64)), "swiglu", "dtype");
    struct pd_tensor *q = randn(PD_F32, 2, 6, 5, 8), *k = randn(PD_F32, 2, 4, 7, 8), *v = randn(PD_F32, 2, 4, 7, 8);
    expect_error(pd_sdpa(q, k, v, NULL, 1, 0), "sdpa", "not a multiple");
    struct pd_tensor *k2 = randn(PD_F32, 2, 2, 7, 8);
    expect_error(pd_sdpa(q, k2, randn(PD_F32, 2, 2, 6, 8), NULL, 1, 0), "sdpa", "v [B, Hkv, S, Dv]");
    expect_error(pd_sdpa(q, randn(PD_F32, 2, 2, 7, 4), randn(PD_F32, 2, 2, 7, 4), NULL, 1, 0), "sdpa", "k [B, Hkv");
    expect_error(pd_sdpa(q, k2, pd_cast(k2, PD_F64), NULL, 1, 0), "sdpa", "dtype");
    int64_t bad[2] = {5, 6};
    expect_error(pd_sdpa(q, k2, k2, pd_zeros(bad, 2, PD_BOOL), 1, 0), "sdpa", "does not broadcast");
    int64_t ok[2] = {5, 7};
    expect_error(pd_sdpa(q, k2, k2, pd_zeros(ok, 2, PD_I64), 1, 0), "sdpa", "mask must be bool");
    expect_error(pd_sdpa(q, k2, k2, NULL, 1, NAN), "sdpa", "scale");
    PT_CHECK(pd_sdpa(NULL, k2, k2, NULL, 1, 0) == NULL);
    /* a failed op leaks nothing (the tensors above belong to this scope) */
    pd_scope_end(scope_tok);
    PT_CHECK(pd_live_tensors() == live);

    /* outside any scope, pd_sdpa hands the caller exactly one tensor */
    scope_tok = pd_scope_begin();
    struct pd_tensor *qq = pd_keep(randn(PD_F32, 1, 2, 3, 4));
    pd_scope_end(scope_tok);
    live = pd_live_tensors();
    struct pd_tensor *y = pd_sdpa(qq, qq, qq, NULL, 1, 0);
    PT_CHECK(y != NULL && pd_live_tensors() == live + 1);
    pd_tensor_release(y);
    pd_tensor_release(qq);
}

int main(void)
{
    gen = pd_generator_create(2024);
    test_sdpa_vs_composition();
    test_fully_masked();
    test_second_order();
    test_mask_grad();
    test_rope();
    test_swiglu();
    test_errors();
    pd_generator_destroy(gen);
    PT_DONE();
}
