/* paddle.c — linalg family beyond the op-test rows: hand-computed values
 * (the reference kernels themselves are checked here), error messages,
 * second-order gradients through matmul/conv/pools against finite
 * differences, the primitive cache under concurrent callers, and lifetime
 * (no tensor leaks), and the CPU matmul kernel paths (hand-written GEMV for
 * M <= 4, packed GEMM with its edge tiles, K chunks and threaded tasks,
 * transposed, strided and batched operands, f32/bf16/f16) against the
 * reference backend. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kernels/cpu/tile_gemm.h"
#include "pt.h"

static double at(struct pd_tensor *t, int64_t i)
{
    struct pd_kview v;
    pdi_kview_of(t, &v);
    return pdi_load(pdi_kview_ptr(&v, i), v.dtype);
}

static struct pd_tensor *tens(const double *v, const int64_t *shape, int nd, enum pd_dtype dt)
{
    struct pd_tensor *t = pd_from_buffer(v, shape, nd, PD_F64);
    return dt == PD_F64 ? t : pd_cast(t, dt);
}

/* Both backends give the expected values. */
static void expect_both(struct pd_tensor *(*fn)(struct pd_tensor **), struct pd_tensor **in, const double *want,
                        int64_t n, const int64_t *shape, int nd, double tol)
{
    for (int be = -1; be <= PDI_BACKEND_REF; be += 1 + (be == -1)) {
        pdi_force_backend(be);
        struct pd_tensor *y = fn(in);
        pdi_force_backend(-1);
        PT_CHECK(y && pd_tensor_numel(y) == n && pd_tensor_ndim(y) == nd);
        if (!y) continue;
        PT_CHECK(!memcmp(pd_tensor_shape(y), shape, sizeof(int64_t) * (size_t)nd));
        for (int64_t i = 0; i < n; i++) PT_NEAR(at(y, i), want[i], tol);
    }
}

static struct pd_tensor *f_mm(struct pd_tensor **in) { return pd_matmul(in[0], in[1], 0, 0); }
static struct pd_tensor *f_mm_tb(struct pd_tensor **in) { return pd_matmul(in[0], in[1], 0, 1); }
static struct pd_tensor *f_conv(struct pd_tensor **in)
{
    int p[2] = {1, 0};
    return pd_conv2d(in[0], in[1], in[2], NULL, p, NULL, 1);
}
static struct pd_tensor *f_maxp(struct pd_tensor **in)
{
    int k[2] = {2, 2}, s[2] = {2, 2}, p[2] = {1, 1};
    return pd_max_pool2d(in[0], k, s, p);
}
static struct pd_tensor *f_avgp(struct pd_tensor **in)
{
    int k[2] = {2, 2}, s[2] = {2, 2}, p[2] = {1, 1};
    return pd_avg_pool2d(in[0], k, s, p);
}

static void test_values(void)
{
    int scope_tok = pd_scope_begin();
    enum pd_dtype dts[] = {PD_F64, PD_F32, PD_BF16, PD_F16};
    for (int d = 0; d < 4; d++) {
        /* [[1,2],[3,4]] @ [[5,6],[7,8]] = [[19,22],[43,50]] (exact in bf16) */
        double a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8}, ab[] = {19, 22, 43, 50}, abt[] = {17, 23, 39, 53};
        int64_t s2[2] = {2, 2};
        struct pd_tensor *in[3] = {tens(a, s2, 2, dts[d]), tens(b, s2, 2, dts[d])};
        expect_both(f_mm, in, ab, 4, s2, 2, 1e-12);
        expect_both(f_mm_tb, in, abt, 4, s2, 2, 1e-12);
    }
    /* conv: x = 1..12 as [1,1,3,4], w = [[1,0],[0,-1]] as [2,1,2,2] (second
     * filter all ones), bias {0.5, -1}, padding (1, 0) -> [1,2,4,3] */
    double x[12], w[8] = {1, 0, 0, -1, 1, 1, 1, 1}, bias[2] = {0.5, -1};
    for (int i = 0; i < 12; i++) x[i] = i + 1;
    int64_t sx[4] = {1, 1, 3, 4}, sw[4] = {2, 1, 2, 2}, sb[1] = {2}, sy[4] = {1, 2, 4, 3};
    /* filter 1: y[i][j] = x[i-1][j] - x[i][j+1] (0 outside) */
    double want[24];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            double s1 = 0, s2 = 0;
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++) {
                    int h = i - 1 + a, v = j + b;
                    if (h < 0 || h >= 3) continue;
                    s1 += w[a * 2 + b] * x[h * 4 + v];
                    s2 += x[h * 4 + v];
                }
            want[i * 3 + j] = s1 + 0.5;
            want[12 + i * 3 + j] = s2 - 1;
        }
    PT_NEAR(want[0], -2 + 0.5, 0); /* row -1 is padding: 0 - x[0][1] */
    PT_NEAR(want[12 + 3], 1 + 2 + 5 + 6 - 1, 0);
    struct pd_tensor *cin[3] = {tens(x, sx, 4, PD_F32), tens(w, sw, 4, PD_F32), tens(bias, sb, 1, PD_F32)};
    expect_both(f_conv, cin, want, 24, sy, 4, 1e-6);
    /* pools on 1..12 [1,1,3,4], kernel 2, stride 2, padding 1 -> [1,1,2,3] */
    int64_t sp[4] = {1, 1, 2, 3};
    double mx[] = {1, 3, 4, 9, 11, 12};
    double av[] = {1, 2.5, 4, 7, 8.5, 10}; /* padding excluded from the count */
    struct pd_tensor *pin[1] = {tens(x, sx, 4, PD_F32)};
    expect_both(f_maxp, pin, mx, 6, sp, 4, 1e-6);
    expect_both(f_avgp, pin, av, 6, sp, 4, 1e-6);
    /* NumPy 1-d rules */
    struct pd_tensor *v = pd_arange(0, 3, 1, PD_F32), *m = pd_ones((int64_t[]){2, 3, 4}, 3, PD_F32);
    struct pd_tensor *r = pd_matmul(v, m, 0, 0);
    PT_CHECK(r && pd_tensor_ndim(r) == 2 && pd_tensor_dim(r, 0) == 2 && pd_tensor_dim(r, 1) == 4);
    PT_NEAR(at(r, 5), 3, 0);
    r = pd_dot(v, v);
    PT_CHECK(r && pd_tensor_ndim(r) == 0);
    PT_NEAR(pd_item(r), 5, 0);
    r = pd_outer(v, pd_arange(1, 3, 1, PD_F32));
    PT_CHECK(r && pd_tensor_dim(r, 0) == 3 && pd_tensor_dim(r, 1) == 2);
    PT_NEAR(at(r, 5), 4, 0);
    /* linear: x [2, 3] (ones), w [4, 3] = arange, bias = 1 */
    struct pd_tensor *lw = pd_reshape(pd_arange(0, 12, 1, PD_F32), (int64_t[]){4, 3}, 2);
    r = pd_linear(pd_ones((int64_t[]){2, 3}, 2, PD_F32), lw, pd_ones((int64_t[]){4}, 1, PD_F32));
    PT_CHECK(r && pd_tensor_dim(r, 0) == 2 && pd_tensor_dim(r, 1) == 4);
    PT_NEAR(at(r, 7), 9 + 10 + 11 + 1, 0);
    /* mixed dtypes promote */
    r = pd_matmul(pd_ones((int64_t[]){2, 2}, 2, PD_BF16), pd_ones((int64_t[]){2, 2}, 2, PD_F32), 0, 0);
    PT_CHECK(r && pd_tensor_dtype(r) == PD_F32);
    /* k = 0 gives zeros */
    r = pd_matmul(pd_ones((int64_t[]){3, 0}, 2, PD_F32), pd_ones((int64_t[]){0, 2}, 2, PD_F32), 0, 0);
    PT_CHECK(r && pd_tensor_numel(r) == 6);
    PT_NEAR(at(r, 0), 0, 0);
    PT_NEAR(at(r, 5), 0, 0);
    pd_scope_end(scope_tok);
}

static void expect_error(struct pd_tensor *r, const char *needle)
{
    PT_CHECK(r == NULL);
    PT_CHECK(strstr(pd_last_error(), needle) != NULL);
    if (!strstr(pd_last_error(), needle)) printf("  message: %s\n", pd_last_error());
}

static void test_errors(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *a = pd_ones((int64_t[]){2, 3}, 2, PD_F32), *b = pd_ones((int64_t[]){4, 5}, 2, PD_F32);
    expect_error(pd_matmul(a, b, 0, 0), "inner dimensions differ");
    expect_error(pd_matmul(pd_ones((int64_t[]){2, 2, 3}, 3, PD_F32), pd_ones((int64_t[]){3, 3, 5}, 3, PD_F32), 0, 0),
                 "do not broadcast");
    expect_error(pd_matmul(pd_ones((int64_t[]){2, 2}, 2, PD_I32), pd_ones((int64_t[]){2, 2}, 2, PD_I32), 0, 0),
                 "floating");
    expect_error(pd_matmul(pd_scalar(1, PD_F32), a, 0, 0), "at least 1-d");
    expect_error(pd_matmul(NULL, a, 0, 0), "");
    expect_error(pd_linear(a, b, NULL), "linear");
    expect_error(pd_dot(pd_ones((int64_t[]){3}, 1, PD_F32), pd_ones((int64_t[]){4}, 1, PD_F32)), "dot");
    expect_error(pd_bmm(a, b), "bmm");
    struct pd_tensor *x = pd_ones((int64_t[]){1, 4, 5, 5}, 4, PD_F32);
    expect_error(pd_conv2d(x, pd_ones((int64_t[]){3, 2, 3, 3}, 4, PD_F32), NULL, NULL, NULL, NULL, 2), "divisible");
    expect_error(pd_conv2d(x, pd_ones((int64_t[]){2, 4, 7, 3}, 4, PD_F32), NULL, NULL, NULL, NULL, 1), "smaller");
    expect_error(pd_conv2d(x, pd_ones((int64_t[]){2, 4, 3, 3}, 4, PD_F32), pd_ones((int64_t[]){3}, 1, PD_F32), NULL,
                           NULL, NULL, 1), "bias");
    int s0[2] = {0, 1};
    expect_error(pd_conv2d(x, pd_ones((int64_t[]){2, 4, 3, 3}, 4, PD_F32), NULL, s0, NULL, NULL, 1), "stride");
    int k[2] = {2, 2}, p[2] = {2, 0};
    expect_error(pd_max_pool2d(x, k, NULL, p), "padding");
    expect_error(pd_avg_pool2d(pd_ones((int64_t[]){5, 5}, 2, PD_F32), k, NULL, NULL), "4-d");
    /* a backward op given a gout of the wrong shape */
    struct pdi_attrs at = {.conv2d_backward_data = {.stride_h = 1, .stride_w = 1, .dilation_h = 1, .dilation_w = 1,
                                                    .groups = 1, .input_shape = {4, {1, 4, 5, 5}}}};
    expect_error(pdi_call2(PD_OP_conv2d_backward_data, pd_ones((int64_t[]){1, 2, 4, 3}, 4, PD_F32),
                           pd_ones((int64_t[]){2, 4, 3, 3}, 4, PD_F32), &at), "gout");
    pd_scope_end(scope_tok);
}

/* ---- second order ---------------------------------------------------- */
typedef struct pd_tensor *(*fn2)(struct pd_tensor *x, struct pd_tensor *w);

/* F(x, w) = sum(v * dL/dx) with L = sum(u * f(x, w)^2). */
static struct pd_tensor *F_of(fn2 f, struct pd_tensor *x, struct pd_tensor *w, struct pd_tensor *u,
                              struct pd_tensor *v, int create)
{
    struct pd_tensor *y = f(x, w);
    struct pd_tensor *L = pd_sum(pd_mul(u, pd_mul(y, y)), NULL, 0, 0);
    struct pd_tensor *gx = NULL;
    if (!L || pd_grad(&L, 1, &x, 1, &gx, &(struct pd_grad_options){.create_graph = create, .retain_graph = create}))
        return NULL;
    return pd_sum(pd_mul(gx, v), NULL, 0, 0);
}

static void check_second_order(const char *name, fn2 f, const int64_t *xs, int xn, const int64_t *ws, int wn)
{
    int scope_tok = pd_scope_begin();
    struct pd_generator *g = pd_generator_create(7);
    struct pd_tensor *x = pd_requires_grad_(pd_uniform(xs, xn, -2, 2, PD_F64, g), 1);
    struct pd_tensor *w = pd_requires_grad_(pd_uniform(ws, wn, -2, 2, PD_F64, g), 1);
    struct pd_tensor *y = f(x, w);
    struct pd_tensor *u = pd_uniform(pd_tensor_shape(y), pd_tensor_ndim(y), 0.5, 1.5, PD_F64, g);
    struct pd_tensor *v = pd_uniform(xs, xn, -1, 1, PD_F64, g);
    pd_generator_destroy(g);
    struct pd_tensor *F = F_of(f, x, w, u, v, 1);
    struct pd_tensor *in[2] = {x, w}, *gr[2] = {NULL, NULL};
    PT_CHECK(F && pd_grad(&F, 1, in, 2, gr, &(struct pd_grad_options){.allow_unused = 1}) == 0);
    int bad = 0;
    for (int q = 0; q < 2 && !bad; q++) {
        double *p = pd_tensor_data(in[q]);
        int64_t n = pd_tensor_numel(in[q]);
        for (int64_t i = 0; i < n && !bad; i++) {
            double x0 = p[i], eps = 1e-6;
            int scope_tok2 = pd_scope_begin();
            p[i] = x0 + eps;
            double fp = pd_item(F_of(f, x, w, u, v, 0));
            p[i] = x0 - eps;
            double fm = pd_item(F_of(f, x, w, u, v, 0));
            p[i] = x0;
            pd_scope_end(scope_tok2);
            double num = (fp - fm) / (2 * eps), ana = gr[q] ? at(gr[q], i) : 0;
            if (fabs(num - ana) > 1e-5 * (1 + fabs(num))) {
                printf("%s: d2 w.r.t. input %d element %lld: analytic %.10g, numeric %.10g\n", name, q, (long long)i, ana,
                       num);
                bad = 1;
            }
        }
    }
    PT_CHECK(!bad);
    pd_scope_end(scope_tok);
}

static struct pd_tensor *s_mm(struct pd_tensor *x, struct pd_tensor *w) { return pd_matmul(x, w, 0, 1); }
static struct pd_tensor *s_mm_bcast(struct pd_tensor *x, struct pd_tensor *w) { return pd_matmul(w, x, 1, 0); }
static struct pd_tensor *s_conv(struct pd_tensor *x, struct pd_tensor *w)
{
    int s[2] = {2, 1}, p[2] = {1, 1}, d[2] = {1, 2};
    return pd_conv2d(x, w, NULL, s, p, d, 2);
}
static struct pd_tensor *s_conv1d(struct pd_tensor *x, struct pd_tensor *w) { return pd_conv1d(x, w, NULL, 1, 1, 1, 1); }
static struct pd_tensor *s_maxp(struct pd_tensor *x, struct pd_tensor *w)
{
    int k[2] = {3, 2}, s[2] = {2, 1}, p[2] = {1, 1};
    return pd_mul(pd_max_pool2d(x, k, s, p), w);
}
static struct pd_tensor *s_avgp(struct pd_tensor *x, struct pd_tensor *w)
{
    int k[2] = {3, 2}, s[2] = {2, 1}, p[2] = {1, 1};
    return pd_mul(pd_avg_pool2d(pd_mul(x, x), k, s, p), w);
}

static void test_second_order(void)
{
    check_second_order("matmul", s_mm, (int64_t[]){2, 3, 4}, 3, (int64_t[]){5, 4}, 2);
    check_second_order("matmul_bcast", s_mm_bcast, (int64_t[]){2, 3, 4}, 3, (int64_t[]){3, 5}, 2);
    check_second_order("conv2d", s_conv, (int64_t[]){1, 4, 5, 4}, 4, (int64_t[]){4, 2, 2, 2}, 4);
    check_second_order("conv1d", s_conv1d, (int64_t[]){2, 2, 6}, 3, (int64_t[]){3, 2, 3}, 3);
    /* pooled shape: (5+2-3)/2+1 = 3, (4+2-2)/1+1 = 5 */
    check_second_order("max_pool2d", s_maxp, (int64_t[]){1, 2, 5, 4}, 4, (int64_t[]){1, 2, 3, 5}, 4);
    check_second_order("avg_pool2d", s_avgp, (int64_t[]){1, 2, 5, 4}, 4, (int64_t[]){1, 2, 3, 5}, 4);
}

/* ---- concurrency: the primitive cache under several threads ---------- */
static void *conv_worker(void *arg)
{
    int id = (int)(intptr_t)arg, *bad = malloc(sizeof *bad);
    *bad = 0;
    int scope_tok = pd_scope_begin();
    struct pd_generator *g = pd_generator_create((uint64_t)id);
    for (int it = 0; it < 20; it++) {
        int64_t c = 2 + (it + id) % 3;
        struct pd_tensor *x = pd_uniform((int64_t[]){2, c, 9, 8}, 4, -1, 1, PD_F32, g);
        struct pd_tensor *w = pd_uniform((int64_t[]){3, c, 3, 3}, 4, -1, 1, PD_F32, g);
        int p[2] = {1, 1};
        struct pd_tensor *y = pd_conv2d(x, w, NULL, NULL, p, NULL, 1);
        struct pd_tensor *xm = pd_reshape(x, (int64_t[]){-1, 8}, 2); /* [18c, 8] */
        struct pd_tensor *m = pd_matmul(xm, xm, 1, 0);
        pdi_force_backend(PDI_BACKEND_REF);
        struct pd_tensor *yr = pd_conv2d(x, w, NULL, NULL, p, NULL, 1), *mr = pd_matmul(xm, xm, 1, 0);
        pdi_force_backend(-1);
        if (!m || !mr) { *bad = 1; break; }
        for (int64_t i = 0; i < pd_tensor_numel(m); i += 5)
            if (fabs(at(m, i) - at(mr, i)) > 1e-4) *bad = 1;
        if (!y || !yr) { *bad = 1; break; }
        for (int64_t i = 0; i < pd_tensor_numel(y); i += 7)
            if (fabs(at(y, i) - at(yr, i)) > 1e-4) *bad = 1;
    }
    pd_generator_destroy(g);
    pd_scope_end(scope_tok);
    return bad;
}

static void test_threads(void)
{
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, conv_worker, (void *)(intptr_t)i);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(th[i], &r);
        PT_CHECK(*(int *)r == 0);
        free(r);
    }
}

/* ---- CPU matmul paths against REF ------------------------------------- */
/* Every element of pd_matmul(a, b, ta, tb) on the CPU backend against the
 * REF backend; the bound scales with sqrt(K) (randn inputs), and for 16-bit
 * dtypes with the output's rounding. */
static void cmp_ref(const char *what, struct pd_tensor *a, struct pd_tensor *b, int ta, int tb)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *y = pd_matmul(a, b, ta, tb);
    pdi_force_backend(PDI_BACKEND_REF);
    struct pd_tensor *r = pd_matmul(a, b, ta, tb);
    pdi_force_backend(-1);
    PT_CHECK(y && r);
    if (y && r) {
        PT_CHECK(pd_tensor_ndim(y) == pd_tensor_ndim(r) && pd_tensor_numel(y) == pd_tensor_numel(r));
        enum pd_dtype dt = pd_tensor_dtype(y);
        int64_t k = pd_tensor_shape(a)[pd_tensor_ndim(a) - 1 - ta];
        double tol = (dt == PD_F32 ? 3e-6 : dt == PD_F64 ? 1e-12 : 2e-3) * sqrt((double)k + 1);
        double rel = dt == PD_BF16 ? 8e-3 : dt == PD_F16 ? 1e-3 : dt == PD_F32 ? 1e-5 : 0;
        int64_t n = pd_tensor_numel(y), bad = 0;
        double worst = 0;
        for (int64_t i = 0; i < n; i++) {
            double gy = at(y, i), gr = at(r, i), d = fabs(gy - gr);
            if (!(d <= tol + rel * fabs(gr))) {
                bad++;
                if (d > worst || d != d) worst = d;
            }
        }
        if (bad) printf("%s (%s): %lld of %lld elements off, worst %g\n", what, pd_dtype_name(dt), (long long)bad,
                        (long long)n, worst);
        PT_CHECK(bad == 0);
    }
    pd_scope_end(scope_tok);
}

static struct pd_tensor *rnd2(int64_t r, int64_t c, enum pd_dtype dt)
{
    int64_t s[2] = {r, c};
    struct pd_tensor *t = pd_randn(s, 2, PD_F32, NULL);
    return dt == PD_F32 ? t : pd_cast(t, dt);
}

/* op(a) [m, k], op(b) [k, n] stored as the trans flags say. */
static void cmp_shape(int64_t m, int64_t n, int64_t k, int ta, int tb, enum pd_dtype dt)
{
    char what[96];
    snprintf(what, sizeof what, "matmul M %lld N %lld K %lld ta %d tb %d", (long long)m, (long long)n, (long long)k, ta,
             tb);
    int scope_tok = pd_scope_begin();
    cmp_ref(what, ta ? rnd2(k, m, dt) : rnd2(m, k, dt), tb ? rnd2(n, k, dt) : rnd2(k, n, dt), ta, tb);
    pd_scope_end(scope_tok);
}

static void test_kernel_paths(void)
{
    int scope_tok = pd_scope_begin();
    /* GEMV (M <= 4): widths around the 4-row/8-lane/32-column blocks, K
     * below and off a multiple of 8, both layouts of b, transposed a */
    static const int64_t ms[] = {1, 2, 3, 4, 5}, ns[] = {1, 3, 33, 70}, ks[] = {1, 5, 8, 13, 300};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            for (int q = 0; q < 5; q++)
                for (int t = 0; t < 4; t++) cmp_shape(ms[i], ns[j], ks[q], t & 1, t >> 1, PD_F32);
    /* GEMM: edge tiles (M % 6, N % 16), an MC boundary (144 rows), K in
     * two and three chunks, threaded tasks with N split (M*N*K >= 2e6) */
    /* (and packing B~: whole 16-column panels and a narrower last one, K
     * off a multiple of the 8 x 8 transposed blocks, K in three chunks) */
    static const int64_t g[][3] = {{7, 17, 9},    {150, 40, 10},   {13, 31, 385}, {6, 16, 769},
                                   {151, 130, 200}, {40, 300, 400}, {100, 50, 777}, {64, 48, 8}};
    for (int i = 0; i < 8; i++)
        for (int t = 0; t < 4; t++) cmp_shape(g[i][0], g[i][1], g[i][2], t & 1, t >> 1, PD_F32);
    /* 16-bit dtypes are widened into the same kernels; f64 has its own */
    enum pd_dtype dts[] = {PD_BF16, PD_F16, PD_F64};
    for (int d = 0; d < 3; d++) {
        cmp_shape(1, 70, 300, 0, 1, dts[d]);
        cmp_shape(3, 33, 13, 0, 0, dts[d]);
        cmp_shape(40, 300, 400, 0, 1, dts[d]);
    }
    /* linear layer under a batch: x [4, 6, 96] W[80, 96]^T (rows folded),
     * its dW = dY^T X over the flattened rows, and decode x [1, 1, 96] */
    int64_t s3[3] = {4, 6, 96}, s3y[3] = {4, 6, 80}, s1[3] = {1, 1, 96};
    struct pd_tensor *x = pd_randn(s3, 3, PD_F32, NULL), *w = rnd2(80, 96, PD_F32), *dy = pd_randn(s3y, 3, PD_F32, NULL);
    cmp_ref("linear 3-d", x, w, 0, 1);
    int64_t f2[2] = {24, 96}, f2y[2] = {24, 80};
    cmp_ref("dW flattened", pd_reshape(dy, f2y, 2), pd_reshape(x, f2, 2), 1, 0);
    cmp_ref("decode 3-d", pd_randn(s1, 3, PD_F32, NULL), w, 0, 1);
    /* batched small products (one per thread) and a broadcast b */
    int64_t sa[3] = {5, 2, 40}, sb[3] = {5, 40, 24}, sc[3] = {1, 40, 24};
    cmp_ref("batched gemv", pd_randn(sa, 3, PD_F32, NULL), pd_randn(sb, 3, PD_F32, NULL), 0, 0);
    cmp_ref("broadcast b", pd_randn(sa, 3, PD_F32, NULL), pd_randn(sc, 3, PD_F32, NULL), 0, 0);
    /* strided operands: every other row/column of larger tensors (no unit
     * stride at all: packed first), and a transposed view */
    struct pd_tensor *big = rnd2(30, 200, PD_F32), *wb = rnd2(140, 90, PD_F32);
    struct pd_tensor *as = pd_slice(pd_slice(big, 0, 0, 30, 2), 1, 1, 200, 2); /* [15, 100] */
    struct pd_tensor *bs = pd_slice(pd_slice(wb, 0, 0, 140, 7), 1, 0, 90, 3); /* [20, 30] */
    cmp_ref("strided gemm", pd_slice(as, 1, 0, 30, 1), bs, 0, 1);           /* [15,30] [20,30]^T */
    cmp_ref("strided gemv", pd_slice(as, 0, 0, 2, 1), pd_transpose(pd_slice(as, 0, 0, 7, 1), 0, 1), 0, 0);
    cmp_ref("transposed view", pd_transpose(rnd2(50, 9, PD_F32), 0, 1), rnd2(50, 33, PD_F32), 0, 0);
    /* the same with M >= 64 (the packed GEMM): a packed A~, and a b with no
     * unit stride (B~ packed element by element) */
    cmp_ref("transposed view gemm", pd_transpose(rnd2(50, 90, PD_F32), 0, 1), rnd2(50, 33, PD_F32), 0, 0);
    cmp_ref("strided b gemm", rnd2(70, 30, PD_F32), bs, 0, 1);
    /* K = 0: zeros */
    struct pd_tensor *z = pd_matmul(rnd2(3, 0, PD_F32), rnd2(0, 5, PD_F32), 0, 0);
    PT_CHECK(z && pd_tensor_numel(z) == 15);
    for (int64_t i = 0; z && i < 15; i++) PT_CHECK(at(z, i) == 0);
    pd_scope_end(scope_tok);
}

/* Two threads, a K whose packed A~ panel (600 * K bytes) is not a multiple
 * of 32 bytes: thread 1's panel was misaligned and the aligned loads of the
 * micro-kernel crashed (seen with a 1456-token vocabulary). */
static void test_gemm_thread_alignment(void)
{
    int ks[] = {3, 5, 7, 13, 31, 33, 257};
    for (int i = 0; i < 7; i++) {
        int tok = pd_scope_begin();
        int64_t k = ks[i];
        struct pd_tensor *a = pd_ones((int64_t[]){700, k}, 2, PD_F32), *b = pd_ones((int64_t[]){k, 1456}, 2, PD_F32);
        struct pd_tensor *c = pd_matmul(a, b, 0, 0);
        PT_CHECK(c && pd_get(c, (int64_t[]){699, 1455}) == (double)k && pd_get(c, (int64_t[]){0, 0}) == (double)k);
        pd_scope_end(tok);
    }
}

/* The attention kernels' register-tiled gemm (kernels/cpu/tile_gemm.h):
 * any N, padded to the vector or not (an N that was not a multiple of the
 * vector used to loop for ever), strided A, accumulate or overwrite,
 * against a plain triple loop in double. */
static void test_tile_gemm(void)
{
    static const int64_t Ms[] = {1, 5, 13}, Ns[] = {3, 8, 12, 21, 64, 70}, Ks[] = {1, 7, 48};
    float a[13 * 48], b[48 * 72], c[13 * 72];
    for (int i = 0; i < 13 * 48; i++) a[i] = (float)((i * 37 % 23) - 11) / 8.0f;
    for (int i = 0; i < 48 * 72; i++) b[i] = (float)((i * 53 % 19) - 9) / 4.0f;
    int bad = 0;
    for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
        for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
            for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
                for (int tr = 0; tr < 2; tr++)
                    for (int acc = 0; acc < 2; acc++) {
                        int64_t M = Ms[mi], N = Ns[ni], K = Ks[ki], ldb = 72, ldc = 72;
                        int64_t ars = tr ? 1 : K, acs = tr ? M : 1; /* A [M][K] or A^T stored [K][M] */
                        for (int i = 0; i < 13 * 72; i++) c[i] = (float)(i % 5);
                        gemm(M, N, K, a, ars, acs, b, ldb, c, ldc, acc);
                        for (int64_t i = 0; i < M; i++)
                            for (int64_t j = 0; j < N; j++) {
                                double want = acc ? (double)((i * ldc + j) % 5) : 0.0;
                                for (int64_t k = 0; k < K; k++) want += (double)a[i * ars + k * acs] * b[k * ldb + j];
                                bad += fabs(c[i * ldc + j] - want) > 1e-4 * (1.0 + fabs(want));
                            }
                        for (int64_t i = 0; i < M; i++) /* nothing past column N */
                            for (int64_t j = N; j < ldc; j++) bad += c[i * ldc + j] != (float)((i * ldc + j) % 5);
                    }
    PT_CHECK(bad == 0);
}

int main(void)
{
    int64_t live = pd_live_tensors();
    test_values();
    test_errors();
    test_second_order();
    test_threads();
    test_kernel_paths();
    test_gemm_thread_alignment();
    test_tile_gemm();
    PT_CHECK(pd_live_tensors() == live);
    PT_DONE();
}
