/* paddle.c — tensors: dtype conversions, creation, views (no copies, write
 * through), scopes and lifetime, errors, printing, the Philox generator. */
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/internal.h"
#include "pt.h"

static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static void test_conversions(void)
{
    /* bf16: exact round-to-nearest-even at the halfway points */
    PT_CHECK(pd_f32_to_bf16(1.0f) == 0x3f80);
    PT_CHECK(pd_f32_to_bf16(u2f(0x3f808000u)) == 0x3f80); /* tie, even stays */
    PT_CHECK(pd_f32_to_bf16(u2f(0x3f818000u)) == 0x3f82); /* tie, odd rounds up */
    PT_CHECK(pd_f32_to_bf16(u2f(0x3f808001u)) == 0x3f81); /* above tie */
    PT_CHECK(pd_bf16_to_f32(0x4049) == u2f(0x40490000u));
    PT_CHECK(isnan(pd_bf16_to_f32(pd_f32_to_bf16(NAN))));
    PT_CHECK(pd_f32_to_bf16(INFINITY) == 0x7f80);
    /* every bf16 and f16 bit pattern round-trips (NaNs stay NaN) */
    int bad_bf = 0, bad_h = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = pd_bf16_to_f32((uint16_t)h);
        if (isnan(f) ? !isnan(pd_bf16_to_f32(pd_f32_to_bf16(f))) : pd_f32_to_bf16(f) != h) bad_bf++;
        float g = pd_f16_to_f32((uint16_t)h);
        if (isnan(g) ? !isnan(pd_f16_to_f32(pd_f32_to_f16(g))) : pd_f32_to_f16(g) != h) bad_h++;
    }
    PT_CHECK(bad_bf == 0);
    PT_CHECK(bad_h == 0);
    /* f16: rounding, overflow, subnormals */
    PT_CHECK(pd_f32_to_f16(1.0f) == 0x3c00);
    PT_CHECK(pd_f32_to_f16(65504.0f) == 0x7bff);
    PT_CHECK(pd_f32_to_f16(65520.0f) == 0x7c00);      /* rounds to inf */
    PT_CHECK(pd_f32_to_f16(65519.0f) == 0x7bff);
    PT_CHECK(pd_f32_to_f16(0x1p-24f) == 0x0001);      /* smallest subnormal */
    PT_CHECK(pd_f32_to_f16(0x1p-25f) == 0x0000);      /* tie to even (0) */
    PT_CHECK(pd_f32_to_f16(0x1.8p-24f) == 0x0002);    /* 1.5 ulp ties to even 2 */
    PT_CHECK(pd_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00); /* tie, even */
    PT_CHECK(pd_f32_to_f16(1.0f + 0x1.8p-10f) == 0x3c02);
    /* f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 is above the tie */
    PT_CHECK(pd_f64_to_f16(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01);
    PT_CHECK(pd_f64_to_bf16(1.0 + 0x1p-8 + 0x1p-40) == 0x3f81);
    /* promotion */
    PT_CHECK(pd_promote_types(PD_I32, PD_F16) == PD_F16);
    PT_CHECK(pd_promote_types(PD_BF16, PD_F16) == PD_F32);
    PT_CHECK(pd_promote_types(PD_U8, PD_I8) == PD_I16);
    PT_CHECK(pd_promote_types(PD_BOOL, PD_I64) == PD_I64);
    PT_CHECK(pd_promote_types(PD_F32, PD_F64) == PD_F64);
}

static void test_creation(void)
{
    int scope_tok = pd_scope_begin();
    int64_t s[] = {2, 3};
    struct pd_tensor *z = pd_zeros(s, 2, PD_F32), *o = pd_ones(s, 2, PD_BF16), *f = pd_full(s, 2, 2.5, PD_F64);
    PT_CHECK(z && o && f);
    PT_CHECK(pd_tensor_numel(z) == 6 && pd_tensor_ndim(z) == 2 && pd_tensor_dim(z, -1) == 3);
    PT_CHECK(pd_get(o, (int64_t[]){1, 2}) == 1.0 && pd_get(f, (int64_t[]){0, 1}) == 2.5);
    struct pd_tensor *a = pd_arange(0, 10, 3, PD_I64);
    PT_CHECK(pd_tensor_numel(a) == 4 && pd_get(a, (int64_t[]){3}) == 9);
    struct pd_tensor *l = pd_linspace(-1, 1, 5, PD_F32);
    PT_CHECK(pd_get(l, (int64_t[]){0}) == -1 && pd_get(l, (int64_t[]){2}) == 0 && pd_get(l, (int64_t[]){4}) == 1);
    struct pd_tensor *e = pd_eye(3, 4, PD_F32);
    PT_CHECK(pd_get(e, (int64_t[]){2, 2}) == 1 && pd_get(e, (int64_t[]){2, 3}) == 0);
    float buf[6] = {1, 2, 3, 4, 5, 6};
    struct pd_tensor *b = pd_from_buffer(buf, s, 2, PD_F32);
    double out[6];
    PT_CHECK(pd_to_buffer(b, out, PD_F64) == 0 && out[5] == 6);
    struct pd_tensor *sc = pd_scalar(7, PD_I32);
    PT_CHECK(pd_tensor_ndim(sc) == 0 && pd_item(sc) == 7);
    struct pd_tensor *zl = pd_zeros_like(b);
    PT_CHECK(pd_tensor_dtype(zl) == PD_F32 && pd_tensor_numel(zl) == 6);
    /* errors */
    PT_CHECK(pd_zeros((int64_t[]){-1}, 1, PD_F32) == NULL && strstr(pd_last_error(), "negative"));
    PT_CHECK(pd_zeros(s, 9, PD_F32) == NULL);
    PT_CHECK(pd_arange(0, 1, 0, PD_F32) == NULL);
    PT_CHECK(pd_randint(s, 2, 5, 5, PD_I64, NULL) == NULL);
    pd_scope_end(scope_tok);
}

static void test_views(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = pd_arange(0, 24, 1, PD_F32);
    struct pd_tensor *v = pd_reshape(x, (int64_t[]){2, 3, 4}, 3);
    PT_CHECK(pd_tensor_shares_storage(x, v));
    struct pd_tensor *t = pd_transpose(v, 0, 2); /* [4,3,2] */
    PT_CHECK(pd_tensor_shares_storage(x, t) && !pd_tensor_is_contiguous(t));
    PT_CHECK(pd_get(t, (int64_t[]){3, 1, 1}) == 1 * 12 + 1 * 4 + 3);
    struct pd_tensor *s = pd_slice(v, 2, 1, 4, 2); /* [2,3,2], cols 1,3 */
    PT_CHECK(pd_tensor_shares_storage(x, s) && pd_tensor_dim(s, 2) == 2);
    PT_CHECK(pd_get(s, (int64_t[]){1, 2, 1}) == 12 + 8 + 3);
    struct pd_tensor *e = pd_expand(pd_reshape(x, (int64_t[]){24, 1}, 2), (int64_t[]){24, 5}, 2);
    PT_CHECK(pd_tensor_shares_storage(x, e) && pd_tensor_strides(e)[1] == 0);
    /* reshape of a non-viewable tensor copies; pd_view refuses */
    struct pd_tensor *r = pd_reshape(t, (int64_t[]){24}, 1);
    PT_CHECK(r && !pd_tensor_shares_storage(x, r) && pd_get(r, (int64_t[]){1}) == 12);
    PT_CHECK(pd_view(t, (int64_t[]){24}, 1) == NULL && strstr(pd_last_error(), "without a copy"));
    /* reshape of a transposed-then-split dims that stay viewable */
    struct pd_tensor *tv = pd_view(t, (int64_t[]){2, 2, 3, 2}, 4);
    PT_CHECK(tv && pd_tensor_shares_storage(x, tv));
    /* diagonal is a view */
    struct pd_tensor *m = pd_reshape(pd_arange(0, 16, 1, PD_F64), (int64_t[]){4, 4}, 2);
    struct pd_tensor *d = pd_diagonal(m, 1, 0, 1);
    PT_CHECK(pd_tensor_numel(d) == 3 && pd_get(d, (int64_t[]){2}) == 11 && pd_tensor_shares_storage(m, d));
    /* unsqueeze/squeeze/flatten/unbind */
    struct pd_tensor *u = pd_unsqueeze(v, 1);
    PT_CHECK(pd_tensor_ndim(u) == 4 && pd_tensor_dim(u, 1) == 1);
    PT_CHECK(pd_tensor_ndim(pd_squeeze(u, 1)) == 3);
    PT_CHECK(pd_tensor_dim(pd_flatten(v, 0, 1), 0) == 6);
    struct pd_tensor *parts[3];
    PT_CHECK(pd_unbind(v, 1, parts) == 3 && pd_get(parts[2], (int64_t[]){1, 3}) == 12 + 8 + 3);
    /* in-place through a view writes the base */
    struct pd_tensor *col = pd_slice(v, 2, 0, 1, 1);
    PT_CHECK(pd_fill_(col, -1) == col);
    PT_CHECK(pd_get(x, (int64_t[]){4}) == -1 && pd_get(x, (int64_t[]){5}) == 5);
    /* bad view arguments */
    PT_CHECK(pd_reshape(x, (int64_t[]){5, -1}, 2) == NULL && strstr(pd_last_error(), "cannot reshape"));
    PT_CHECK(pd_permute(v, (int[]){0, 0, 1}, 3) == NULL);
    PT_CHECK(pd_expand(v, (int64_t[]){2, 5, 4}, 3) == NULL);
    PT_CHECK(pd_slice(v, 5, 0, 1, 1) == NULL);
    PT_CHECK(pd_transpose(NULL, 0, 1) == NULL); /* NULL propagates */
    pd_scope_end(scope_tok);
}

static void test_scopes(void)
{
    int64_t live0 = pd_live_tensors();
    struct pd_tensor *kept;
    int scope_tok = pd_scope_begin();
    int scope_tok2 = pd_scope_begin();
    struct pd_tensor *a = pd_ones((int64_t[]){4}, 1, PD_F32);
    struct pd_tensor *b = pd_reshape(a, (int64_t[]){2, 2}, 2);
    (void)b;
    kept = pd_keep(pd_zeros((int64_t[]){3}, 1, PD_F32)); /* survives the inner scope */
    pd_scope_end(scope_tok2);
    PT_CHECK(pd_tensor_numel(kept) == 3);
    PT_CHECK(pd_live_tensors() == live0 + 1);
    pd_scope_end(scope_tok);
    PT_CHECK(pd_live_tensors() == live0);
    /* outside any scope the caller owns what it gets */
    struct pd_tensor *c = pd_ones((int64_t[]){2}, 1, PD_F32);
    PT_CHECK(pd_live_tensors() == live0 + 1);
    pd_tensor_release(c);
    pd_tensor_release(NULL);
    PT_CHECK(pd_live_tensors() == live0);
    struct pd_memory_stats ms;
    pd_memory_stats(&ms);
    PT_CHECK(ms.n_live >= 0 && ms.peak_allocated_bytes >= ms.allocated_bytes);
}

static void test_printing(void)
{
    int scope_tok = pd_scope_begin();
    char *s = pd_tensor_to_string(pd_reshape(pd_arange(0, 6, 1, PD_F32), (int64_t[]){2, 3}, 2));
    PT_CHECK(s && strstr(s, "tensor([[0.0000, 1.0000, 2.0000],") && strstr(s, "shape=[2, 3], dtype=f32"));
    free(s);
    s = pd_tensor_to_string(pd_arange(0, 5000, 1, PD_I64));
    PT_CHECK(s && strstr(s, "[0, 1, 2, ..., 4997, 4998, 4999]"));
    free(s);
    s = pd_tensor_to_string(NULL);
    PT_CHECK(s && strstr(s, "NULL"));
    free(s);
    pd_scope_end(scope_tok);
}

static void test_random(void)
{
    int scope_tok = pd_scope_begin();
    int64_t n = 1 << 18;
    double *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
    struct pd_generator *g = pd_generator_create(42);
#ifdef _OPENMP
    pd_set_num_threads(1);
#endif
    pd_to_buffer(pd_randn(&n, 1, PD_F32, g), a, PD_F64);
    pd_generator_set_state(g, 42, 0);
#ifdef _OPENMP
    pd_set_num_threads(2);
#endif
    pd_to_buffer(pd_randn(&n, 1, PD_F32, g), b, PD_F64);
    PT_CHECK(memcmp(a, b, sizeof *a * (size_t)n) == 0); /* same seed, any thread count */
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; i++) mean += a[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) var += (a[i] - mean) * (a[i] - mean);
    var /= (double)n;
    PT_NEAR(mean, 0, 0.01);
    PT_NEAR(var, 1, 0.01);
    /* the next call continues the stream: different numbers */
    pd_to_buffer(pd_randn(&n, 1, PD_F32, g), b, PD_F64);
    PT_CHECK(memcmp(a, b, sizeof *a * (size_t)n) != 0);
    /* uniform range, randint range, bernoulli rate */
    pd_to_buffer(pd_uniform(&n, 1, -3, 5, PD_F64, g), a, PD_F64);
    double lo = 1e9, hi = -1e9;
    for (int64_t i = 0; i < n; i++) { lo = a[i] < lo ? a[i] : lo; hi = a[i] > hi ? a[i] : hi; }
    PT_CHECK(lo >= -3 && hi < 5 && lo < -2.99 && hi > 4.99);
    pd_to_buffer(pd_randint(&n, 1, -2, 3, PD_I32, g), a, PD_F64);
    int hist[5] = {0};
    for (int64_t i = 0; i < n; i++) hist[(int)a[i] + 2]++;
    for (int k = 0; k < 5; k++) PT_NEAR(hist[k] / (double)n, 0.2, 0.02);
    pd_to_buffer(pd_bernoulli(pd_full(&n, 1, 0.3, PD_F32), g), a, PD_F64);
    double ones = 0;
    for (int64_t i = 0; i < n; i++) ones += a[i];
    PT_NEAR(ones / (double)n, 0.3, 0.01);
    /* Philox known-answer: the Random123 test vector for key 0, counter 0 */
    uint32_t w[4];
    pd_philox_fill(0, 0, w, 4);
    PT_CHECK(w[0] == 0x6627e8d5u && w[1] == 0xe169c58du && w[2] == 0xbc57ac4cu && w[3] == 0x9b00dbd8u);
    pd_generator_destroy(g);
    free(a);
    free(b);
    pd_scope_end(scope_tok);
}

int main(void)
{
    test_conversions();
    test_creation();
    test_views();
    test_scopes();
    test_printing();
    test_random();
    PT_DONE();
}
