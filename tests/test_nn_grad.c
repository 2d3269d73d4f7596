/* paddle.c — nn family beyond the op-harness rows:
 *   - second-order gradients (Hessian-vector products through create_graph)
 *     of softmax, log_softmax, layer_norm, rms_norm, group_norm,
 *     cross_entropy (also with class weights), interpolate (through its
 *     adjoint, whose VJP is interpolate again) against central differences
 *     of the first gradient;
 *   - class weights: no gradient for them (a backward asking fails);
 *   - interpolate's argument errors, and group_norm's;
 *   - embedding's weight gradient with repeated ids (exact sums);
 *   - dropout: reproducible masks, scale, p = 0 / 1, eval;
 *   - one_hot inference; the error messages of bad ids, targets and shapes;
 *   - the fused norm_backward (the norms' first-order backward) against the
 *     composed rule that create_graph runs, in f32/bf16/f64; its dw/db bitwise
 *     the same on 1 and 2 threads; its input checks and its own VJP error.
 */
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/internal.h"
#include "pt.h"

#define NX 12 /* elements of the differentiated input */

typedef struct pd_tensor *(*fwd_fn)(struct pd_tensor *x);

static struct pd_tensor *g_w, *g_b; /* fixed parameters used by some forwards */

static struct pd_tensor *f_softmax(struct pd_tensor *x) { return pd_softmax(x, 1); }
static struct pd_tensor *f_log_softmax(struct pd_tensor *x) { return pd_log_softmax(x, 0); }
static struct pd_tensor *f_layer_norm(struct pd_tensor *x) { return pd_layer_norm(x, 1, g_w, g_b, 1e-5); }
static struct pd_tensor *f_layer_norm2(struct pd_tensor *x) { return pd_layer_norm(x, 2, NULL, NULL, 1e-3); }
static struct pd_tensor *f_rms_norm(struct pd_tensor *x) { return pd_rms_norm(x, 1, g_w, 1e-6); }
static struct pd_tensor *f_cross_entropy(struct pd_tensor *x)
{
    int64_t t[3] = {1, -1, 3}, n = 3;
    return pd_cross_entropy(x, pd_from_buffer(t, &n, 1, PD_I64), -1, 0.1, PD_REDUCTION_MEAN);
}

static struct pd_tensor *f_group_norm(struct pd_tensor *x) { return pd_group_norm(x, 2, g_w, g_b, 1e-5); }
/* up with one mode, squared, back down with the other: x's shape again */
static struct pd_tensor *f_interp_bil(struct pd_tensor *x)
{
    struct pd_tensor *u = pd_interpolate(x, (int64_t[]){5, 7}, NULL, PD_INTERP_BILINEAR, 0);
    return pd_interpolate(pd_square(u), (int64_t[]){3, 4}, NULL, PD_INTERP_NEAREST, 0);
}
static struct pd_tensor *f_interp_near(struct pd_tensor *x)
{
    struct pd_tensor *u = pd_interpolate(x, NULL, (double[]){1.7, 1.5}, PD_INTERP_NEAREST, 0);
    return pd_interpolate(pd_square(u), (int64_t[]){3, 4}, NULL, PD_INTERP_BILINEAR, 1);
}
static struct pd_tensor *f_cross_entropy_w(struct pd_tensor *x)
{
    int64_t t[3] = {1, -1, 3}, n = 3;
    return pd_cross_entropy_weighted(x, pd_from_buffer(t, &n, 1, PD_I64), pd_abs(g_w), -1, 0.1, PD_REDUCE_MEAN);
}

/* First gradient of L = sum(c * f(x)) at x (create_graph when asked). */
static struct pd_tensor *first_grad(fwd_fn f, struct pd_tensor *x, struct pd_tensor *c, int create)
{
    struct pd_tensor *y = f(x);
    if (!y) return NULL;
    struct pd_tensor *L = pd_sum(pd_mul(y, pd_expand(c, pd_tensor_shape(y), pd_tensor_ndim(y))), NULL, 0, 0);
    struct pd_tensor *g = NULL;
    if (!L || pd_grad(&L, 1, &x, 1, &g, &(struct pd_grad_options){.create_graph = create, .retain_graph = create}))
        return NULL;
    return g;
}

/* H v by autograd vs (G(x + e v) - G(x - e v)) / 2e. */
static void check_hvp(const char *name, fwd_fn f, const int64_t *shape, int nd)
{
    int scope_tok = pd_scope_begin();
    double xv[NX], vv[NX], cv[NX];
    for (int i = 0; i < NX; i++) {
        xv[i] = sin(1.3 * i + 0.4) * 1.5;
        vv[i] = cos(0.7 * i);
        cv[i] = 0.5 + 0.1 * i;
    }
    struct pd_tensor *x = pd_requires_grad_(pd_from_buffer(xv, shape, nd, PD_F64), 1);
    struct pd_tensor *v = pd_from_buffer(vv, shape, nd, PD_F64);
    /* c broadcasts over f(x): a scalar for losses */
    struct pd_tensor *y0 = f(x);
    struct pd_tensor *c = y0 && pd_tensor_ndim(y0) == 0 ? pd_scalar(0.8, PD_F64)
                                                        : pd_from_buffer(cv, shape, nd, PD_F64);
    struct pd_tensor *g = first_grad(f, x, c, 1), *hv = NULL;
    struct pd_tensor *s = pd_sum(pd_mul(g, v), NULL, 0, 0);
    int rc = s ? pd_grad(&s, 1, &x, 1, &hv, NULL) : -1;
    PT_CHECK(rc == 0 && hv);
    if (rc == 0 && hv) {
        double e = 1e-5, worst = 0;
        double xp[NX], xm[NX], gp[NX], gm[NX], h[NX];
        for (int i = 0; i < NX; i++) { xp[i] = xv[i] + e * vv[i]; xm[i] = xv[i] - e * vv[i]; }
        struct pd_tensor *a = pd_requires_grad_(pd_from_buffer(xp, shape, nd, PD_F64), 1);
        struct pd_tensor *b = pd_requires_grad_(pd_from_buffer(xm, shape, nd, PD_F64), 1);
        pd_to_buffer(first_grad(f, a, c, 0), gp, PD_F64);
        pd_to_buffer(first_grad(f, b, c, 0), gm, PD_F64);
        pd_to_buffer(hv, h, PD_F64);
        for (int i = 0; i < NX; i++) {
            double num = (gp[i] - gm[i]) / (2 * e), d = fabs(num - h[i]) / (1 + fabs(num));
            worst = d > worst ? d : worst;
        }
        if (worst > 1e-6) printf("  %s: H v differs from finite differences by %g\n", name, worst);
        PT_CHECK(worst <= 1e-6);
    }
    pd_scope_end(scope_tok);
}

static void test_second_order(void)
{
    int scope_tok = pd_scope_begin();
    double wv[4] = {0.5, -1.2, 2.0, 0.9}, bv[4] = {0.1, 0.2, -0.3, 0.4};
    int64_t four = 4;
    g_w = pd_from_buffer(wv, &four, 1, PD_F64);
    g_b = pd_from_buffer(bv, &four, 1, PD_F64);
    int64_t s34[2] = {3, 4}, s43[2] = {4, 3}, s26[2] = {2, 6};
    check_hvp("softmax", f_softmax, s34, 2);
    check_hvp("log_softmax axis 0", f_log_softmax, s43, 2);
    check_hvp("layer_norm", f_layer_norm, s34, 2);
    check_hvp("layer_norm 2 axes", f_layer_norm2, s26, 2);
    check_hvp("rms_norm", f_rms_norm, s34, 2);
    check_hvp("cross_entropy", f_cross_entropy, s34, 2);
    check_hvp("cross_entropy with class weights", f_cross_entropy_w, s34, 2);
    int64_t s143[3] = {1, 4, 3};
    check_hvp("group_norm", f_group_norm, s143, 3);
    int64_t s1134[4] = {1, 1, 3, 4};
    check_hvp("interpolate bilinear", f_interp_bil, s1134, 4);
    check_hvp("interpolate nearest", f_interp_near, s1134, 4);
    pd_scope_end(scope_tok);
}

/* d weight = sum of the g rows of each id; ids get no gradient. */
static void test_embedding_grad(void)
{
    int scope_tok = pd_scope_begin();
    int64_t ids[6] = {2, 0, 2, 2, 4, 0}, n = 6, ws[2] = {5, 3};
    struct pd_tensor *w = pd_requires_grad_(pd_rand(ws, 2, PD_F64, NULL), 1);
    struct pd_tensor *y = pd_embedding(pd_from_buffer(ids, &n, 1, PD_I64), w);
    double gv[18];
    for (int i = 0; i < 18; i++) gv[i] = i + 1;
    int64_t gs[2] = {6, 3};
    struct pd_tensor *g = pd_from_buffer(gv, gs, 2, PD_F64), *gw = NULL;
    PT_CHECK(y && pd_grad(&y, 1, &w, 1, &gw, &(struct pd_grad_options){.grad_outputs = &g}) == 0 && gw);
    if (gw) {
        double want[5][3] = {{0}};
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 3; j++) want[ids[i]][j] += gv[i * 3 + j];
        for (int r = 0; r < 5; r++)
            for (int j = 0; j < 3; j++) PT_NEAR(pd_get(gw, (int64_t[]){r, j}), want[r][j], 1e-12);
    }
    /* int16 ids, and an out-of-range id names itself and V */
    int16_t bad[3] = {1, 5, 0};
    int64_t three = 3;
    PT_CHECK(!pd_embedding(pd_from_buffer(bad, &three, 1, PD_I16), w));
    PT_CHECK(strstr(pd_last_error(), "id 5") && strstr(pd_last_error(), "V = 5"));
    int16_t neg[3] = {1, -2, 0};
    PT_CHECK(!pd_embedding(pd_from_buffer(neg, &three, 1, PD_I16), w) && strstr(pd_last_error(), "id -2"));
    PT_CHECK(!pd_embedding(pd_from_buffer(ids, &n, 1, PD_I64), pd_rand(&n, 1, PD_F32, NULL)) &&
             strstr(pd_last_error(), "2-d"));
    PT_CHECK(!pd_embedding(pd_rand(&n, 1, PD_F32, NULL), w) && strstr(pd_last_error(), "integers"));
    pd_scope_end(scope_tok);
}

/* Class weights are constants: the forward accepts weights that require
 * grad, the backward that would need their gradient fails and says so;
 * the weights' dtype follows the logits'; a bad shape names [C]. */
static void test_class_weights(void)
{
    int scope_tok = pd_scope_begin();
    int64_t xs[2] = {3, 4}, four = 4, three = 3, t[3] = {1, -1, 3};
    struct pd_tensor *x = pd_requires_grad_(pd_rand(xs, 2, PD_F64, NULL), 1);
    struct pd_tensor *tg = pd_from_buffer(t, &three, 1, PD_I64);
    struct pd_tensor *w = pd_requires_grad_(pd_add_scalar(pd_rand(&four, 1, PD_F64, NULL), 0.5), 1);
    struct pd_tensor *l = pd_cross_entropy_weighted(x, tg, w, -1, 0, PD_REDUCE_MEAN), *g[2] = {NULL, NULL};
    struct pd_tensor *leaves[2] = {x, w};
    PT_CHECK(l && pd_grad(&l, 1, leaves, 2, g, NULL) != 0);
    PT_CHECK(strstr(pd_last_error(), "class weights have no gradient"));
    l = pd_cross_entropy_weighted(x, tg, pd_detach(w), -1, 0, PD_REDUCE_MEAN);
    PT_CHECK(l && pd_grad(&l, 1, &x, 1, g, NULL) == 0 && g[0]);
    /* f32 weights with f64 logits: cast to f64 */
    PT_CHECK(pd_cross_entropy_weighted(x, tg, pd_cast(pd_detach(w), PD_F32), -1, 0.1, PD_REDUCE_SUM));
    PT_CHECK(!pd_cross_entropy_weighted(x, tg, pd_rand(&three, 1, PD_F64, NULL), -1, 0, PD_REDUCE_MEAN) &&
             strstr(pd_last_error(), "[C] = [4]"));
    PT_CHECK(!pd_nll_loss_weighted(x, tg, pd_rand(&three, 1, PD_F64, NULL), -1, PD_REDUCE_MEAN) &&
             strstr(pd_last_error(), "[C] = [4]"));
    /* nll_loss is variadic: a call with too few inputs fails before any is read */
    struct pdi_attrs a = {.nll_loss = {.ignore_index = -100, .reduction = PD_REDUCE_MEAN, .has_weight = 1}};
    PT_CHECK(!pdi_calln(PD_OP_nll_loss, &x, 1, &a) && strstr(pd_last_error(), "expected 3 inputs"));
    a.nll_loss.has_weight = 0;
    PT_CHECK(!pdi_calln(PD_OP_nll_loss, &x, 1, &a) && strstr(pd_last_error(), "expected 2 inputs"));
    pd_scope_end(scope_tok);
}

static void test_interp_and_group_errors(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = pd_rand((int64_t[]){1, 2, 3, 4}, 4, PD_F32, NULL);
    int64_t sz[2] = {5, 6}, zero[2] = {0, 6};
    double sc[2] = {2, 0.1}, bad[2] = {NAN, 2};
    PT_CHECK(!pd_interpolate(x, sz, sc, PD_INTERP_NEAREST, 0) && strstr(pd_last_error(), "exactly one"));
    PT_CHECK(!pd_interpolate(x, NULL, NULL, PD_INTERP_NEAREST, 0) && strstr(pd_last_error(), "exactly one"));
    PT_CHECK(!pd_interpolate(x, sz, NULL, PD_INTERP_NEAREST, 1) && strstr(pd_last_error(), "bilinear only"));
    PT_CHECK(!pd_interpolate(x, zero, NULL, PD_INTERP_BILINEAR, 0) && strstr(pd_last_error(), "0 x 6"));
    PT_CHECK(!pd_interpolate(x, NULL, sc, PD_INTERP_BILINEAR, 0) && strstr(pd_last_error(), "6 x 0"));
    PT_CHECK(!pd_interpolate(x, NULL, bad, PD_INTERP_BILINEAR, 0) && strstr(pd_last_error(), "finite and > 0"));
    PT_CHECK(!pd_interpolate(pd_rand((int64_t[]){2, 3, 4}, 3, PD_F32, NULL), sz, NULL, PD_INTERP_BILINEAR, 0) &&
             strstr(pd_last_error(), "[N, C, H, W]"));
    PT_CHECK(!pd_interpolate(x, sz, NULL, (enum pd_interp_mode)2, 0) && strstr(pd_last_error(), "mode 2"));
    struct pd_tensor *y = pd_interpolate(x, NULL, (double[]){1.5, 2}, PD_INTERP_BILINEAR, 1);
    PT_CHECK(y && pd_tensor_shape(y)[2] == 4 && pd_tensor_shape(y)[3] == 8);
    /* the op with a scale attribute that disagrees with the sizes (the
     * wrapper never makes one; the bad-input sweep does): positions are
     * capped, so rows past the first read the last input row */
    for (int mode = 0; mode < 2; mode++) {
        struct pdi_attrs a = {.interpolate = {.mode = mode, .out_h = 3, .out_w = 4, .scale_h = 1e-300}};
        struct pd_tensor *z = pdi_calln(PD_OP_interpolate, &x, 1, &a);
        PT_CHECK(z != NULL);
        for (int j = 0; z && j < 4; j++) {
            PT_CHECK(pd_get(z, (int64_t[]){0, 1, 0, j}) == pd_get(x, (int64_t[]){0, 1, 0, j}));
            PT_CHECK(pd_get(z, (int64_t[]){0, 1, 2, j}) == pd_get(x, (int64_t[]){0, 1, 2, j}));
        }
    }
    PT_CHECK(!pd_group_norm(x, 3, NULL, NULL, 1e-5) && strstr(pd_last_error(), "not divisible"));
    PT_CHECK(!pd_group_norm(pd_rand((int64_t[]){4}, 1, PD_F32, NULL), 1, NULL, NULL, 1e-5) &&
             strstr(pd_last_error(), "at least 2 dims"));
    PT_CHECK(!pd_group_norm(x, 2, pd_rand((int64_t[]){3}, 1, PD_F32, NULL), NULL, 1e-5) &&
             strstr(pd_last_error(), "[C] = [2]"));
    pd_scope_end(scope_tok);
}

static void test_dropout(void)
{
    int scope_tok = pd_scope_begin();
    int64_t shape[2] = {100, 100};
    struct pd_tensor *x = pd_add_scalar(pd_rand(shape, 2, PD_F32, NULL), 1.0); /* in [1, 2): never 0 */
    struct pd_generator *g = pd_generator_create(7);
    uint64_t seed, off;
    pd_generator_get_state(g, &seed, &off);
    double p = 0.3;
    struct pd_tensor *a = pd_dropout(x, p, 1, g);
    pd_generator_set_state(g, seed, off);
    struct pd_tensor *b = pd_dropout(x, p, 1, g);
    struct pd_tensor *c = pd_dropout(x, p, 1, g); /* the state moved on: another mask */
    PT_CHECK(a && b && c);
    if (a && b && c) {
        int64_t kept = 0, same = 0, diff = 0;
        for (int64_t i = 0; i < 100; i++)
            for (int64_t j = 0; j < 100; j++) {
                int64_t idx[2] = {i, j};
                double xa = pd_get(x, idx), va = pd_get(a, idx), vb = pd_get(b, idx), vc = pd_get(c, idx);
                PT_CHECK(va == 0 || fabs(va - xa / (1 - p)) <= 1e-6 * fabs(va));
                kept += va != 0;
                same += va == vb;
                diff += (va != 0) != (vc != 0);
            }
        PT_CHECK(same == 10000);
        PT_CHECK(diff > 1000);
        PT_NEAR((double)kept / 10000, 1 - p, 0.03);
    }
    struct pd_tensor *e = pd_dropout(x, p, 0, g), *z = pd_dropout(x, 0, 1, g), *one = pd_dropout(x, 1, 1, g);
    PT_CHECK(e && pd_tensor_shares_storage(e, x) && z && pd_tensor_shares_storage(z, x));
    PT_CHECK(one && pd_item(pd_sum(pd_abs(one), NULL, 0, 0)) == 0);
    PT_CHECK(!pd_dropout(x, 1.5, 1, g) && strstr(pd_last_error(), "[0, 1]"));
    PT_CHECK(!pd_dropout(x, NAN, 1, g));
    pd_generator_destroy(g);
    pd_scope_end(scope_tok);
}

static void test_one_hot_and_errors(void)
{
    int scope_tok = pd_scope_begin();
    int32_t ids[4] = {3, 0, 1, 3};
    int64_t four = 4;
    struct pd_tensor *t = pd_from_buffer(ids, &four, 1, PD_I32);
    struct pd_tensor *oh = pd_one_hot(t, -1);
    PT_CHECK(oh && pd_tensor_dtype(oh) == PD_I64 && pd_tensor_dim(oh, 1) == 4);
    for (int i = 0; i < 4 && oh; i++)
        for (int j = 0; j < 4; j++) PT_CHECK(pd_get(oh, (int64_t[]){i, j}) == (j == ids[i]));
    PT_CHECK(!pd_one_hot(t, 3) && strstr(pd_last_error(), "class value 3"));
    int64_t zero = 0;
    PT_CHECK(!pd_one_hot(pd_zeros(&zero, 1, PD_I64), -1) && strstr(pd_last_error(), "empty"));
    PT_CHECK(!pd_one_hot(pd_zeros(&four, 1, PD_F32), 2) && strstr(pd_last_error(), "integers"));

    /* nll_loss / cross_entropy: bad target values and shapes */
    int64_t xs[2] = {4, 3};
    struct pd_tensor *x = pd_rand(xs, 2, PD_F32, NULL);
    int64_t tv[4] = {0, 1, 7, 2};
    struct pd_tensor *tt = pd_from_buffer(tv, &four, 1, PD_I64);
    PT_CHECK(!pd_cross_entropy(x, tt, -100, 0, PD_REDUCTION_MEAN) && strstr(pd_last_error(), "target 7"));
    PT_CHECK(!pd_nll_loss(x, tt, -100, PD_REDUCTION_SUM) && strstr(pd_last_error(), "[0, 3)"));
    tv[2] = -100; /* ignored, so allowed */
    tt = pd_from_buffer(tv, &four, 1, PD_I64);
    PT_CHECK(pd_cross_entropy(x, tt, -100, 0, PD_REDUCTION_MEAN) != NULL);
    int64_t three = 3;
    PT_CHECK(!pd_cross_entropy(x, pd_zeros(&three, 1, PD_I64), -100, 0, PD_REDUCTION_MEAN) &&
             strstr(pd_last_error(), "does not match"));
    PT_CHECK(!pd_cross_entropy(x, pd_zeros(&four, 1, PD_F32), -100, 0, PD_REDUCTION_MEAN) &&
             strstr(pd_last_error(), "probabilities"));
    PT_CHECK(!pd_cross_entropy(x, tt, -100, 1.5, PD_REDUCTION_MEAN) && strstr(pd_last_error(), "label_smoothing"));
    PT_CHECK(!pd_nll_loss(x, tt, -100, (enum pd_reduction)7) && strstr(pd_last_error(), "reduction"));

    /* softmax / norms: bad axis, dtype, parameter shapes */
    PT_CHECK(!pd_softmax(x, 2) && strstr(pd_last_error(), "axis 2"));
    PT_CHECK(!pd_softmax(tt, 0) && strstr(pd_last_error(), "floating"));
    PT_CHECK(!pd_layer_norm(x, 3, NULL, NULL, 1e-5) && strstr(pd_last_error(), "n_norm_axes"));
    PT_CHECK(!pd_layer_norm(x, 1, pd_ones(&four, 1, PD_F32), NULL, 1e-5) && strstr(pd_last_error(), "weight shape"));
    PT_CHECK(!pd_rms_norm(x, 2, pd_ones(&three, 1, PD_F32), 1e-5) && strstr(pd_last_error(), "normalised shape"));
    PT_CHECK(!pd_layer_norm(x, 1, NULL, NULL, -1) && strstr(pd_last_error(), "eps"));
    /* mixed precision: an f32 weight with a bf16 x is cast to bf16 */
    struct pd_tensor *ln = pd_layer_norm(pd_cast(x, PD_BF16), 1, pd_ones(&three, 1, PD_F32), NULL, 1e-5);
    PT_CHECK(ln && pd_tensor_dtype(ln) == PD_BF16);
    pd_scope_end(scope_tok);
}

/* bf16/f16 backward of the norms and softmax (computed in f32 inside the
 * rules) agrees with the f32 backward on the same values. */
static void test_low_precision_backward(void)
{
    enum pd_dtype dts[2] = {PD_BF16, PD_F16};
    for (int d = 0; d < 2; d++) {
        int scope_tok = pd_scope_begin();
        int64_t xs[2] = {4, 8}, ws = 8;
        struct pd_tensor *x0 = pd_cast(pd_randn(xs, 2, PD_F32, NULL), dts[d]);
        struct pd_tensor *w0 = pd_cast(pd_add_scalar(pd_rand(&ws, 1, PD_F32, NULL), 0.5), dts[d]);
        struct pd_tensor *c = pd_randn(xs, 2, PD_F32, NULL);
        double grads[2][2][32];
        for (int pass = 0; pass < 2; pass++) { /* 0: low precision, 1: f32 */
            struct pd_tensor *x = pd_requires_grad_(pass ? pd_cast(x0, PD_F32) : pd_clone(x0), 1);
            struct pd_tensor *w = pd_requires_grad_(pass ? pd_cast(w0, PD_F32) : pd_clone(w0), 1);
            struct pd_tensor *y = pd_add(pd_layer_norm(x, 1, w, NULL, 1e-5), pd_rms_norm(x, 1, w, 1e-5));
            y = pd_add(y, pd_softmax(x, -1));
            struct pd_tensor *L = pd_sum(pd_mul(pd_cast(y, PD_F32), c), NULL, 0, 0), *in[2] = {x, w}, *g[2] = {0};
            PT_CHECK(L && pd_grad(&L, 1, in, 2, g, NULL) == 0);
            PT_CHECK(g[0] && g[1] && pd_tensor_dtype(g[0]) == pd_tensor_dtype(x));
            if (g[0] && g[1]) {
                pd_to_buffer(g[0], grads[pass][0], PD_F64);
                pd_to_buffer(g[1], grads[pass][1], PD_F64);
            }
        }
        double worst = 0, scale = 0;
        for (int i = 0; i < 32; i++) {
            worst = fmax(worst, fabs(grads[0][0][i] - grads[1][0][i]));
            scale = fmax(scale, fabs(grads[1][0][i]));
        }
        for (int i = 0; i < 8; i++) {
            worst = fmax(worst, fabs(grads[0][1][i] - grads[1][1][i]));
            scale = fmax(scale, fabs(grads[1][1][i]));
        }
        if (worst > 0.03 * scale) printf("  %s backward: max diff %g (scale %g)\n", pd_dtype_name(dts[d]), worst, scale);
        PT_CHECK(worst <= 0.03 * scale);
        pd_scope_end(scope_tok);
    }
}

/* Gradients of sum(c * norm(x, w, b)) w.r.t. x, w, b into out (x, then w,
 * then b, as f64), by the fused (create = 0) or the composed (create = 1)
 * rule. Returns the number of values written, or -1. */
static int norm_grads(int centre, struct pd_tensor *x0, struct pd_tensor *w0, struct pd_tensor *b0,
                      struct pd_tensor *c, int create, double *out)
{
    struct pd_tensor *in[3] = {pd_requires_grad_(pd_clone(x0), 1), pd_requires_grad_(pd_clone(w0), 1),
                               b0 ? pd_requires_grad_(pd_clone(b0), 1) : NULL};
    int n_in = b0 ? 3 : 2;
    struct pd_tensor *y = centre ? pd_layer_norm(in[0], 1, in[1], in[2], 1e-5) : pd_rms_norm(in[0], 1, in[1], 1e-5);
    struct pd_tensor *L = pd_sum(pd_mul(pd_cast(y, PD_F32), c), NULL, 0, 0), *g[3] = {0};
    if (!L || pd_grad(&L, 1, in, n_in, g, &(struct pd_grad_options){.create_graph = create})) return -1;
    int n = 0;
    for (int i = 0; i < n_in; i++) {
        if (!g[i] || pd_tensor_dtype(g[i]) != pd_tensor_dtype(x0)) return -1;
        pd_to_buffer(g[i], out + n, PD_F64);
        n += (int)pd_tensor_numel(g[i]);
    }
    return n;
}

static void test_fused_norm_backward(void)
{
    /* fused (first order) vs composed (create_graph) on a shape with
     * several chunks and flushes: [3, 100, 40] = 300 rows of 40 */
    enum pd_dtype dts[3] = {PD_F32, PD_BF16, PD_F64};
    static double a[12000 + 80], b[12000 + 80];
    for (int d = 0; d < 3; d++) {
        for (int centre = 0; centre < 2; centre++) {
            int scope_tok = pd_scope_begin();
            int64_t xs[3] = {3, 100, 40}, ws = 40;
            struct pd_tensor *x = pd_cast(pd_add_scalar(pd_randn(xs, 3, PD_F32, NULL), centre ? 3.0 : 0.0), dts[d]);
            struct pd_tensor *w = pd_cast(pd_add_scalar(pd_rand(&ws, 1, PD_F32, NULL), 0.5), dts[d]);
            struct pd_tensor *bias = centre ? pd_cast(pd_randn(&ws, 1, PD_F32, NULL), dts[d]) : NULL;
            struct pd_tensor *c = pd_randn(xs, 3, PD_F32, NULL);
            int na = norm_grads(centre, x, w, bias, c, 0, a), nb = norm_grads(centre, x, w, bias, c, 1, b);
            PT_CHECK(na == 12000 + 40 + 40 * centre && na == nb);
            double worst = 0, scale = 0;
            for (int i = 0; i < na && na == nb; i++) {
                worst = fmax(worst, fabs(a[i] - b[i]));
                scale = fmax(scale, fabs(b[i]));
            }
            double tol = dts[d] == PD_F64 ? 1e-12 : dts[d] == PD_F32 ? 1e-5 : 2e-2;
            if (worst > tol * scale)
                printf("  %s %s: fused vs composed backward differ by %g (scale %g)\n", pd_dtype_name(dts[d]),
                       centre ? "layer_norm" : "rms_norm", worst, scale);
            PT_CHECK(worst <= tol * scale);
            pd_scope_end(scope_tok);
        }
    }

    /* dw and db do not depend on the thread count (fixed chunks) */
#ifdef _OPENMP
    int scope_tok = pd_scope_begin();
    int64_t xs[2] = {2048, 288}, ws = 288;
    struct pd_tensor *x = pd_randn(xs, 2, PD_F32, NULL), *w = pd_rand(&ws, 1, PD_F32, NULL);
    struct pd_tensor *bias = pd_randn(&ws, 1, PD_F32, NULL), *c = pd_randn(xs, 2, PD_F32, NULL);
    static double t1[2048 * 288 + 576], t2[2048 * 288 + 576];
    pd_set_num_threads(1);
    int n1 = norm_grads(1, x, w, bias, c, 0, t1);
    pd_set_num_threads(2);
    int n2 = norm_grads(1, x, w, bias, c, 0, t2);
    pd_set_num_threads(0);
    PT_CHECK(n1 == 2048 * 288 + 576 && n1 == n2);
    PT_CHECK(n1 == n2 && memcmp(t1, t2, sizeof(double) * (size_t)n1) == 0);
    pd_scope_end(scope_tok);
#endif

    /* bad calls of the op name what is wrong */
    scope_tok = pd_scope_begin();
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, three = 3;
    struct pd_tensor *x2 = pd_requires_grad_(pd_randn(s23, 2, PD_F32, NULL), 1);
    struct pd_tensor *in[3] = {x2, pd_randn(s32, 2, PD_F32, NULL), pd_ones(&three, 1, PD_F32)}, *out[3];
    struct pdi_call call = {.op = PD_OP_norm_backward, .n_in = 3, .n_out = 2, .in = in, .out = out};
    call.a.norm_backward = (struct pdi_attrs_norm_backward){.n_norm_axes = 1, .eps = 1e-5, .has_w = 1};
    PT_CHECK(pdi_dispatch(&call) != 0 && strstr(pd_last_error(), "must have x's shape"));
    in[1] = pd_randn(s23, 2, PD_F64, NULL);
    PT_CHECK(pdi_dispatch(&call) != 0 && strstr(pd_last_error(), "must have x's shape and dtype"));
    in[1] = pd_randn(s23, 2, PD_F32, NULL);
    call.a.norm_backward.has_b = 1; /* a bias with centre = 0 */
    call.n_out = 3;
    PT_CHECK(pdi_dispatch(&call) != 0 && strstr(pd_last_error(), "centre"));
    call.a.norm_backward.centre = 1;
    call.n_out = 2; /* dx, dw, db expected */
    PT_CHECK(pdi_dispatch(&call) != 0 && strstr(pd_last_error(), "3 outputs"));
    call.n_out = 3;
    in[2] = pd_ones(&s23[0], 1, PD_F32);
    PT_CHECK(pdi_dispatch(&call) != 0 && strstr(pd_last_error(), "weight shape"));
    in[2] = pd_ones(&three, 1, PD_F32);
    PT_CHECK(pdi_dispatch(&call) == 0);
    /* its outputs are not differentiable: asking says why */
    struct pd_tensor *gx = NULL, *L = pd_sum(out[0], NULL, 0, 0);
    PT_CHECK(L && pd_grad(&L, 1, &x2, 1, &gx, NULL) != 0 && strstr(pd_last_error(), "not differentiable"));
    pd_scope_end(scope_tok);
}

int main(void)
{
    test_second_order();
    test_embedding_grad();
    test_class_weights();
    test_interp_and_group_errors();
    test_dropout();
    test_one_hot_and_errors();
    test_low_precision_backward();
    test_fused_norm_backward();
    PT_CHECK(pd_live_tensors() == 0);
    PT_DONE();
}
