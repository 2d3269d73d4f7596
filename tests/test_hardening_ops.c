/* paddle.c — regression tests for the op-level bugs of issue 12 (bugs 3, 4,
 * 5, 6, 21 and the "Also" list): extreme int64 attributes, element counts
 * past the limit, NULL buffers, in-place writes into overlapping views and
 * out-of-range distribution parameters. One case per bug, named by its
 * number; a bad call must fail with the expected status and a one-line
 * message naming the problem, and an extreme but meaningful attribute must
 * give the same result as its clamped value (docs/reliability.md, "Op input
 * validation").
 *
 * `test_hardening_ops bug6` runs one case (the name is matched as a prefix).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "pd/flashmask.h"
#include "pd/profiler.h"
#include "tiny_llama.h"

static int n_fail, n_checks;
static const char *cur = "";

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        n_checks++;                                                                                                    \
        if (!(cond)) {                                                                                                 \
            n_fail++;                                                                                                  \
            printf("FAIL [%s] line %d: ", cur, __LINE__);                                                              \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
        }                                                                                                              \
    } while (0)

/* r must be NULL (or a negative status), with `status` and a one-line
 * message containing `needle`. */
static void expect_err(int line, int failed, int status, const char *needle)
{
    const char *msg = pd_last_error();
    n_checks++;
    if (!failed) {
        n_fail++;
        printf("FAIL [%s] line %d: expected an error (%s), the call succeeded\n", cur, line, needle);
    } else if (pd_last_status() != status) {
        n_fail++;
        printf("FAIL [%s] line %d: status %d, expected %d (%s)\n", cur, line, pd_last_status(), status, msg);
    } else if (!strstr(msg, needle)) {
        n_fail++;
        printf("FAIL [%s] line %d: error \"%s\" does not mention \"%s\"\n", cur, line, msg, needle);
    } else if (strchr(msg, '\n')) {
        n_fail++;
        printf("FAIL [%s] line %d: error spans several lines: \"%s\"\n", cur, line, msg);
    }
    pd_clear_error();
}
#define ERR_NULL(expr, needle) expect_err(__LINE__, (expr) == NULL, PD_ERR_INVALID, needle)
#define ERR_RC(expr, needle) expect_err(__LINE__, (expr) < 0, PD_ERR_INVALID, needle)

static int same(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b || pd_tensor_ndim(a) != pd_tensor_ndim(b)) return 0;
    if (memcmp(pd_tensor_shape(a), pd_tensor_shape(b), sizeof(int64_t) * (size_t)pd_tensor_ndim(a))) return 0;
    struct pd_tensor *d = pd_sum(pd_abs(pd_sub(pd_cast(a, PD_F64), pd_cast(b, PD_F64))), NULL, 0, 0);
    return d && pd_item(d) == 0;
}

/* 3: randint computed its range in double: INT64_MIN .. INT64_MIN + 10 gave
 * a span of 0 and a division by zero (SIGFPE). */
static void bug3(void)
{
    int64_t n = 1000;
    struct pd_generator *g = pd_generator_create(7);
    struct pd_tensor *r = pd_randint(&n, 1, INT64_MIN, INT64_MIN + 10, PD_I64, g);
    CHECK(r != NULL, "randint at INT64_MIN failed: %s", pd_last_error());
    if (r) {
        const int64_t *v = pd_tensor_data(r);
        int ok = 1, seen_top = 0;
        for (int64_t i = 0; i < n; i++) {
            ok &= v[i] >= INT64_MIN && v[i] < INT64_MIN + 10;
            seen_top |= v[i] == INT64_MIN + 9;
        }
        CHECK(ok && seen_top, "randint values outside [INT64_MIN, INT64_MIN + 10) or never the top one");
    }
    /* the full int64 range (a span of 2^64 - 1) and one near the top */
    CHECK(pd_randint(&n, 1, INT64_MIN, INT64_MAX, PD_I64, g) != NULL, "full range: %s", pd_last_error());
    r = pd_randint(&n, 1, INT64_MAX - 3, INT64_MAX, PD_I64, g);
    CHECK(r != NULL, "near INT64_MAX: %s", pd_last_error());
    if (r) {
        const int64_t *v = pd_tensor_data(r);
        int ok = 1;
        for (int64_t i = 0; i < n; i++) ok &= v[i] >= INT64_MAX - 3 && v[i] < INT64_MAX;
        CHECK(ok, "randint values outside [INT64_MAX - 3, INT64_MAX)");
    }
    /* a narrower dtype stores the draws saturated, as before */
    r = pd_randint(&n, 1, INT64_MIN, INT64_MIN + 10, PD_I32, g);
    CHECK(r && pd_item(pd_amax(r, NULL, 0, 0)) == (double)INT32_MIN, "int32 draws near INT64_MIN: %s", pd_last_error());
    pd_generator_destroy(g);
}

/* 4: pd_to_buffer with a NULL buffer dereferenced it. */
static void bug4(void)
{
    int64_t s[2] = {2, 3};
    struct pd_tensor *t = pd_ones(s, 2, PD_F32);
    expect_err(__LINE__, pd_to_buffer(t, NULL, PD_F32) < 0, PD_ERR_INVALID, "NULL buffer");
    int64_t z = 0; /* nothing to write: a NULL buffer is fine */
    CHECK(pd_to_buffer(pd_ones(&z, 1, PD_F32), NULL, PD_F32) == PD_OK, "empty to_buffer(NULL): %s", pd_last_error());
}

/* 5: views past the element limit were accepted: a scalar expanded to
 * [2^32]^3 wrapped numel to 0 and its sum was 0. */
static void bug5(void)
{
    int64_t big[3] = {(int64_t)1 << 32, (int64_t)1 << 32, (int64_t)1 << 32};
    struct pd_tensor *s = pd_scalar(1, PD_F32);
    ERR_NULL(pd_expand(s, big, 3), "too many elements");
    ERR_NULL(pd_sum(pd_expand(s, big, 3), NULL, 0, 0), "too many elements");
    /* broadcasts: the limit names the op */
    int64_t a[2] = {(int64_t)1 << 30, 1}, b[2] = {1, (int64_t)1 << 30};
    int64_t one[2] = {1, 1};
    struct pd_tensor *x = pd_expand(pd_ones(one, 2, PD_F32), a, 2), *y = pd_expand(pd_ones(one, 2, PD_F32), b, 2);
    CHECK(x && y, "expand to 2^30 elements: %s", pd_last_error());
    ERR_NULL(pd_add(x, y), "add: shape [1073741824, 1073741824] has too many elements");
    /* a zero-size tensor viewed with huge dims: the product overflowed before */
    int64_t z = 0, zz[3] = {(int64_t)1 << 40, (int64_t)1 << 40, 0};
    ERR_NULL(pd_reshape(pd_ones(&z, 1, PD_F32), zz, 3), "cannot reshape");
    ERR_NULL(pd_expand(pd_ones(&z, 1, PD_F32), zz, 3), "too many elements");
    /* new tensors keep the limit, zero dims included */
    int64_t e[2] = {0, (int64_t)1 << 50};
    ERR_NULL(pd_zeros(e, 2, PD_F32), "too many elements");
}

/* 6: signed overflow on extreme int64 attributes (undefined; wrong results
 * in release builds). Extreme but meaningful values give the result of the
 * clamped value; the others are refused. */
static void bug6(void)
{
    int64_t s3[2] = {3, 3}, s5 = 5;
    struct pd_tensor *ones = pd_ones(s3, 2, PD_F32), *zeros = pd_zeros(s3, 2, PD_F32);
    struct pd_tensor *v = pd_arange(0, 5, 1, PD_F32);
    /* slice: a step of INT64_MAX takes the first element (the dim was -1) */
    struct pd_tensor *sl = pd_slice(v, 0, 0, 2, INT64_MAX);
    CHECK(sl && pd_tensor_dim(sl, 0) == 1 && pd_item(sl) == 0, "slice step INT64_MAX: %s",
          sl ? "wrong shape or value" : pd_last_error());
    struct pd_tensor *sl2 = pd_slice(pd_expand(pd_reshape(v, &s5, 1), (int64_t[]){2, 5}, 2), 1, 1, 5, INT64_MAX);
    CHECK(sl2 && pd_tensor_dim(sl2, 1) == 1, "slice of an expanded view with step INT64_MAX: %s", pd_last_error());
    /* tril / triu: a diagonal past the matrix keeps all or nothing */
    CHECK(same(pd_tril(ones, INT64_MAX), ones), "tril(ones, INT64_MAX) != ones");
    CHECK(same(pd_tril(ones, INT64_MIN), zeros), "tril(ones, INT64_MIN) != zeros");
    CHECK(same(pd_triu(ones, INT64_MIN), ones), "triu(ones, INT64_MIN) != ones");
    CHECK(same(pd_triu(ones, INT64_MAX), zeros), "triu(ones, INT64_MAX) != zeros");
    /* diagonal: an offset past the matrix is empty */
    struct pd_tensor *d = pd_diagonal(ones, INT64_MIN, 0, 1);
    CHECK(d && pd_tensor_dim(d, 0) == 0, "diagonal(INT64_MIN): %s", pd_last_error());
    d = pd_diagonal(ones, INT64_MAX, 0, 1);
    CHECK(d && pd_tensor_dim(d, 0) == 0, "diagonal(INT64_MAX): %s", pd_last_error());
    ERR_NULL(pd_diagonal(ones, 0, 0, (int)((int64_t)1 << 32)), "diagonal");
    /* pad: a pad past the element limit, or cropping more than the dim */
    ERR_NULL(pd_pad(ones, (int64_t[]){INT64_MIN, INT64_MAX}, 2, PD_PAD_CONSTANT, 0), "outside");
    ERR_NULL(pd_pad(ones, (int64_t[]){INT64_MAX, 1}, 2, PD_PAD_CONSTANT, 0), "outside");
    ERR_NULL(pd_pad(ones, (int64_t[]){0, INT64_MAX}, 2, PD_PAD_REPLICATE, 0), "outside");
    /* split: sizes whose sum overflows */
    struct pd_tensor *parts[2];
    ERR_RC(pd_split(v, (int64_t[]){INT64_MAX, INT64_MAX}, 2, 0, parts), "add up to more");
    ERR_RC(pd_split(v, (int64_t[]){3, INT64_MAX, -1}, 3, 0, parts), "add up to more");
    /* tile and repeat_interleave: products past the limit */
    ERR_NULL(pd_tile(ones, (int64_t[]){INT64_MAX, 2}, 2), "too many elements");
    ERR_NULL(pd_tile(ones, (int64_t[]){(int64_t)1 << 32, (int64_t)1 << 32}, 2), "too many elements");
    ERR_NULL(pd_repeat_interleave(ones, INT64_MAX, 0), "too many elements");
    ERR_NULL(pd_repeat_interleave(ones, (int64_t)1 << 45, PD_ALL_AXES), "too many elements");
    /* arange: a length past int64 (the cast was undefined) */
    ERR_NULL(pd_arange(-1e308, 1e308, 1, PD_F32), "too many elements");
    ERR_NULL(pd_arange(0, 1e300, 1e-300, PD_F64), "too many elements");
    /* FlashMask windows: a side of INT64_MAX sees the whole sequence */
    int64_t S = 6;
    CHECK(same(pd_flashmask_sliding_window(S, INT64_MAX, 0, 1), pd_flashmask_sliding_window(S, S, 0, 1)),
          "sliding window left INT64_MAX != left S: %s", pd_last_error());
    CHECK(same(pd_flashmask_sliding_window(S, 1, INT64_MAX, 0), pd_flashmask_sliding_window(S, 1, S, 0)),
          "sliding window right INT64_MAX != right S: %s", pd_last_error());
    CHECK(same(pd_flashmask_global_sliding_window(S, 1, INT64_MAX, INT64_MAX),
               pd_flashmask_global_sliding_window(S, 1, S, S)),
          "global sliding window INT64_MAX != S: %s", pd_last_error());
    /* mask builders: lengths whose sums overflow */
    ERR_NULL(pd_flashmask_causal_document(S, (int64_t[]){2, INT64_MAX}, 2), "sum to more than S");
    ERR_NULL(pd_flashmask_qk_sparse(S, 2, INT64_MAX), "offset + len <= S");
}

/* 21: in-place writes into an expanded (stride-0) view raced across threads
 * and applied the op once per alias. Every written input is checked. */
static void bug21(void)
{
    int64_t n = 100000, one = 1;
    struct pd_tensor *x = pd_expand(pd_zeros(&one, 1, PD_F32), &n, 1), *y = pd_ones(&n, 1, PD_F32);
    ERR_NULL(pd_add_(x, y), "overlap");
    ERR_NULL(pd_mul_(x, y), "overlap");
    ERR_NULL(pd_copy_(x, y), "overlap");
    ERR_NULL(pd_fill_(x, 2.0), "overlap");
    ERR_NULL(pd_scale_(x, 2.0), "overlap");
    /* a 2-d expanded view, and a diagonal (no overlap: allowed) */
    int64_t s2[2] = {4, 3};
    struct pd_tensor *r = pd_expand(pd_ones((int64_t[]){1, 3}, 2, PD_F32), s2, 2);
    ERR_NULL(pd_add_(r, pd_ones(s2, 2, PD_F32)), "overlap");
    struct pd_tensor *m = pd_zeros((int64_t[]){3, 3}, 2, PD_F32);
    CHECK(pd_fill_(pd_diagonal(m, 0, 0, 1), 1.0) != NULL, "fill_ of a diagonal view: %s", pd_last_error());
    CHECK(pd_item(pd_sum(m, NULL, 0, 0)) == 3, "fill_ of a diagonal wrote %g ones", pd_item(pd_sum(m, NULL, 0, 0)));
    /* a strided slice and a transpose are written as before */
    struct pd_tensor *w = pd_zeros(s2, 2, PD_F32);
    CHECK(pd_add_(pd_transpose(w, 0, 1), pd_ones((int64_t[]){3, 4}, 2, PD_F32)) != NULL, "add_ into a transpose: %s",
          pd_last_error());
    CHECK(pd_fill_(pd_slice(w, 0, 0, 4, 2), 5.0) != NULL, "fill_ into a strided slice: %s", pd_last_error());
    CHECK(pd_item(pd_sum(w, NULL, 0, 0)) == 12 + 2 * 3 * 4, "writes into views: sum %g",
          pd_item(pd_sum(w, NULL, 0, 0)));
}

/* Also: distribution parameters, 0-d axes, sum_to_shape's ndim, llama's T. */
static void also_random(void)
{
    int64_t n = 8;
    ERR_NULL(pd_uniform(&n, 1, NAN, 1, PD_F32, NULL), "uniform: need finite bounds");
    ERR_NULL(pd_uniform(&n, 1, 0, INFINITY, PD_F32, NULL), "uniform: need finite bounds");
    ERR_NULL(pd_uniform(&n, 1, -1e308, 1e308, PD_F64, NULL), "uniform: need finite bounds");
    ERR_NULL(pd_uniform(&n, 1, 1, 0, PD_F32, NULL), "lo <= hi");
    ERR_NULL(pd_normal(&n, 1, 0, -1, PD_F32, NULL), "std must be >= 0");
    ERR_NULL(pd_normal(&n, 1, 0, INFINITY, PD_F32, NULL), "finite mean and std");
    ERR_NULL(pd_normal(&n, 1, NAN, 1, PD_F32, NULL), "finite mean and std");
    CHECK(pd_uniform(&n, 1, 2, 2, PD_F32, NULL) != NULL, "uniform [2, 2): %s", pd_last_error());
    CHECK(pd_normal(&n, 1, 0, 0, PD_F32, NULL) != NULL, "normal std 0: %s", pd_last_error());
    ERR_NULL(pd_bernoulli(pd_full(&n, 1, 1.5, PD_F32), NULL), "bernoulli: p must be in [0, 1], got 1.5");
    ERR_NULL(pd_bernoulli(pd_full(&n, 1, -0.25, PD_F64), NULL), "got -0.25");
    ERR_NULL(pd_bernoulli(pd_full(&n, 1, NAN, PD_F32), NULL), "got nan");
    ERR_NULL(pd_bernoulli(pd_expand(pd_scalar(2, PD_F32), &n, 1), NULL), "got 2");
    struct pd_tensor *b = pd_bernoulli(pd_expand(pd_scalar(1, PD_F32), &n, 1), NULL);
    CHECK(b && pd_item(pd_sum(b, NULL, 0, 0)) == 8, "bernoulli(p = 1) must be all ones: %s", pd_last_error());
}

static void also_axes(void)
{
    struct pd_tensor *s = pd_scalar(3, PD_F32);
    ERR_NULL(pd_flatten(s, 1, 1), "flatten: bad axes");
    ERR_NULL(pd_flatten(s, 0, -2), "flatten: bad axes");
    CHECK(pd_flatten(s, 0, -1) != NULL, "flatten(0-d, 0, -1): %s", pd_last_error());
    ERR_NULL(pd_sum(s, (int[]){0, 0}, 2, 0), "repeated");
    ERR_NULL(pd_sum(s, (int[]){0, -1}, 2, 0), "repeated");
    ERR_NULL(pd_mean(s, (int[]){-1, -1}, 2, 1), "repeated");
    CHECK(pd_sum(s, (int[]){-1}, 1, 0) != NULL, "sum(0-d, axis -1): %s", pd_last_error());
    int64_t sh[2] = {2, 3};
    struct pd_tensor *x = pd_ones(sh, 2, PD_F32);
    /* int64 axis attributes (a replayed call) are range-checked before they
     * are narrowed: 2^32 was axis 0, INT64_MAX axis -1 */
    struct pdi_attrs ra = {.reduce = {.axes = {.n = 1, .v = {(int64_t)1 << 32}}}};
    ERR_NULL(pdi_call1(PD_OP_sum, x, &ra), "axis 4294967296 out of range");
    ra.reduce.axes.v[0] = INT64_MAX;
    ERR_NULL(pdi_call1(PD_OP_sum, x, &ra), "out of range");
    struct pdi_attrs pa = {.permute = {.perm = {.n = 2, .v = {INT64_MAX, 0}}}};
    ERR_NULL(pdi_call1(PD_OP_permute, x, &pa), "axis 9223372036854775807 out of range"); /* the table range (pdi_attrs_check) says it first */
    ERR_NULL(pd_sum_to_shape(x, sh, -1), "sum_to_shape: ndim -1");
    ERR_NULL(pd_sum_to_shape(x, sh, PD_MAX_DIMS + 1), "sum_to_shape: ndim 9");
}

static void also_llama(void)
{
    struct pd_llama_config c = pt_tiny_llama_config();
    struct pd_llama *m = pd_llama_create(&c, 1);
    CHECK(m != NULL, "llama_create: %s", pd_last_error());
    if (!m) return;
    int64_t sh[2] = {1, c.max_seq_len + 1};
    struct pd_tensor *ids = pd_zeros(sh, 2, PD_I64);
    ERR_NULL(pd_llama_forward(m, ids, NULL, NULL), "exceed max_seq_len 32");
    ERR_NULL(pd_llama_loss(m, ids, ids), "exceed max_seq_len");
    sh[1] = c.max_seq_len;
    CHECK(pd_llama_forward(m, pd_zeros(sh, 2, PD_I64), NULL, NULL) != NULL, "T = max_seq_len: %s", pd_last_error());
    pd_llama_destroy(m);
}

/* Found by the second wrapper table of the sweep (tests/sweep/sweep_more.c):
 * two crashes, a hang and silent failures in accessors. */
static struct pd_tensor *hook_id(struct pd_tensor *g, void *ctx) { (void)ctx; return g; }
static void sweep_more(void)
{
    struct pd_tensor *x = pd_ones((const int64_t[]){2, 3}, 2, PD_F32), *parts[2];
    expect_err(__LINE__, isnan(pd_get(x, NULL)), PD_ERR_NULL, "get: index is NULL"); /* was a crash */
    expect_err(__LINE__, pd_unbind(x, 0, NULL) < 0, PD_ERR_NULL, "unbind: out is NULL"); /* was a crash */
    ERR_RC(pd_unbind(x, 2, parts), "unbind: axis 2 out of range");
    expect_err(__LINE__, isnan(pd_get(x, (const int64_t[]){0, 3})), PD_ERR_INVALID, "index 3 out of range for dim 1");
    ERR_RC(pd_tensor_dim(x, 2), "tensor_dim: axis 2 out of range for a 2-d tensor");
    expect_err(__LINE__, isnan(pd_item(pd_zeros((const int64_t[]){0}, 1, PD_F32))), PD_ERR_INVALID, "no elements");
    CHECK(pd_get(x, (const int64_t[]){1, 2}) == 1.0 && pd_tensor_dim(x, -1) == 3, "in-range get/dim");
    pd_requires_grad_(x, 1);
    expect_err(__LINE__, pd_tensor_register_hook(x, NULL, NULL) < 0, PD_ERR_NULL, "fn is NULL");
    CHECK(pd_tensor_register_hook(x, hook_id, NULL) == PD_OK, "hook: %s", pd_last_error());
    ERR_RC(pd_profiler_range_push(NULL), "name is NULL"); /* profiler off too */
    /* counted 2^40 query rows one tile at a time: a hang */
    struct pd_flashmask_tiles t;
    ERR_RC(pd_flashmask_count_tiles(pd_flashmask_causal(8), 1, 1, 1LL << 40, 8, 1, 1, &t), "too large");
    ERR_RC(pd_flashmask_count_tiles(NULL, 1, 1LL << 40, 1LL << 20, 1LL << 20, 1, 1, &t), "must fit an int64");
    CHECK(pd_flashmask_count_tiles(pd_flashmask_causal(8), 1, 1, 8, 8, 2, 1, &t) == PD_OK, "%s", pd_last_error());
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"sweep_more_accessors", sweep_more},
    {"bug3_randint_range", bug3},
    {"bug4_to_buffer_null", bug4},
    {"bug5_view_numel", bug5},
    {"bug6_int64_attrs", bug6},
    {"bug21_inplace_overlap", bug21},
    {"also_random_params", also_random},
    {"also_0d_axes_sum_to_shape", also_axes},
    {"also_llama_max_seq_len", also_llama},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (argc > 1 && strncmp(cases[i].name, argv[1], strlen(argv[1]))) continue;
        cur = cases[i].name;
        int before = n_fail;
        int tok = pd_scope_begin();
        pd_clear_error();
        cases[i].fn();
        pd_scope_end(tok);
        printf("%s %s\n", n_fail == before ? "ok  " : "FAIL", cur);
        fflush(stdout);
    }
    printf("%d checks, %d failed\n", n_checks, n_fail);
    return n_fail ? 1 : 0;
}
