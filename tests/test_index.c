/* paddle.c — values of the index family against hand-computed results
 * (PyTorch semantics), on the reference and on the CPU backend; then CPU
 * against reference on inputs large enough to take the parallel paths; then
 * a few gradients (repeated indices, reflect pad) computed by hand. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

static int n_fail;
static const char *backend_name = "";

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            printf("FAIL [%s] %s:%d: ", backend_name, __FILE__, __LINE__); \
            printf(__VA_ARGS__);                           \
            printf("\n");                                  \
            n_fail++;                                      \
        }                                                  \
    } while (0)

static struct pd_tensor *T(const double *v, const int64_t *shape, int nd, enum pd_dtype dt)
{
    int64_t n = pdi_numel(shape, nd);
    char *buf = malloc((size_t)(n + 1) * 8);
    for (int64_t i = 0; i < n; i++) pdi_store(buf + i * (int64_t)pd_dtype_size(dt), dt, v[i]);
    struct pd_tensor *t = pd_from_buffer(buf, shape, nd, dt);
    free(buf);
    return t;
}
#define SH(...) ((const int64_t[]){__VA_ARGS__})
#define V(...) ((const double[]){__VA_ARGS__})
#define NA(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define TT(dt, vals, ...) T(vals, SH(__VA_ARGS__), NA(__VA_ARGS__), dt)

/* t has the given shape and values (exactly, or within tol). */
static void expect(int line, struct pd_tensor *t, const int64_t *shape, int nd, const double *v, double tol)
{
    if (!t) {
        printf("FAIL [%s] line %d: NULL (%s)\n", backend_name, line, pd_last_error());
        n_fail++;
        return;
    }
    if (t->ndim != nd || (nd && memcmp(t->shape, shape, sizeof(int64_t) * (size_t)nd))) {
        char a[PDI_SHAPE_BUF], b[PDI_SHAPE_BUF];
        printf("FAIL [%s] line %d: shape %s, expected %s\n", backend_name, line, pdi_shape_str(t->shape, t->ndim, a, sizeof a),
               pdi_shape_str(shape, nd, b, sizeof b));
        n_fail++;
        return;
    }
    int64_t n = pd_tensor_numel(t);
    double *x = malloc(sizeof *x * (size_t)(n + 1));
    pd_to_buffer(t, x, PD_F64);
    for (int64_t i = 0; i < n; i++) {
        int ok = isnan(v[i]) ? isnan(x[i]) : fabs(x[i] - v[i]) <= tol;
        if (!ok) {
            printf("FAIL [%s] line %d: element %lld is %g, expected %g\n", backend_name, line, (long long)i, x[i], v[i]);
            n_fail++;
            break;
        }
    }
    free(x);
}
#define EXPECT(t, shape, vals) expect(__LINE__, t, shape, (int)(sizeof(shape) / sizeof(int64_t)), vals, 0)
#define EXPECTT(t, shape, vals, tol) expect(__LINE__, t, shape, (int)(sizeof(shape) / sizeof(int64_t)), vals, tol)

static void test_values(void)
{
    /* gather: torch.gather(x, 1, [[0, 2], [1, 0]]) */
    struct pd_tensor *x23 = TT(PD_F32, V(1, 2, 3, 4, 5, 6), 2, 3);
    struct pd_tensor *i22 = TT(PD_I64, V(0, 2, 1, 0), 2, 2);
    {
        int64_t s[] = {2, 2};
        EXPECT(pd_gather(x23, 1, i22), s, V(1, 3, 5, 4));
        EXPECT(pd_gather(x23, -1, pd_cast(i22, PD_I32)), s, V(1, 3, 5, 4));
        int64_t s2[] = {1, 3};
        EXPECT(pd_gather(x23, 0, TT(PD_I32, V(1, 0, 1), 1, 3)), s2, V(4, 2, 6));
        EXPECT(pd_gather(TT(PD_I16, V(1, 2, 3, 4, 5, 6), 2, 3), 0, TT(PD_I32, V(1, 0, 1), 1, 3)), s2, V(4, 2, 6));
    }
    /* index_select */
    {
        struct pd_tensor *x = TT(PD_F64, V(1, 2, 3, 4, 5, 6), 3, 2);
        int64_t s[] = {3, 2}, s1[] = {3, 1};
        EXPECT(pd_index_select(x, 0, TT(PD_I64, V(2, 0, 2), 3)), s, V(5, 6, 1, 2, 5, 6));
        EXPECT(pd_index_select(x, -1, TT(PD_I32, V(1), 1)), s1, V(2, 4, 6));
        EXPECT(pd_index_select(pd_transpose(x23, 0, 1), 0, TT(PD_I64, V(2, 0, 2), 3)), s, V(3, 6, 1, 4, 3, 6));
    }
    /* scatter: the torch docs example */
    {
        struct pd_tensor *src = TT(PD_F32, V(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 2, 5);
        struct pd_tensor *x = pd_zeros(SH(3, 5), 2, PD_F32);
        int64_t s[] = {3, 5};
        EXPECT(pd_scatter(x, 0, TT(PD_I64, V(0, 1, 2, 0, 0), 1, 5), src), s,
               V(1, 0, 0, 4, 5, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0));
        /* repeated index: the last write along the axis wins */
        int64_t s2[] = {2, 2};
        EXPECT(pd_scatter(pd_zeros(SH(2, 2), 2, PD_F32), 1, TT(PD_I32, V(1, 1, 0, 0), 2, 2),
                          TT(PD_F32, V(1, 2, 3, 4), 2, 2)), s2, V(0, 2, 4, 0));
    }
    /* scatter_add with repeated indices, several dtypes */
    enum pd_dtype dts[] = {PD_F32, PD_F64, PD_BF16, PD_F16, PD_I32, PD_I64, PD_I8};
    for (int d = 0; d < 7; d++) {
        struct pd_tensor *x = pd_ones(SH(2, 3), 2, dts[d]);
        struct pd_tensor *src = TT(dts[d], V(1, 2, 3, 4, 5, 6), 2, 3);
        int64_t s[] = {2, 3};
        EXPECT(pd_scatter_add(x, 0, TT(PD_I64, V(0, 1, 0, 1, 0, 0), 2, 3), src), s, V(2, 6, 10, 5, 3, 1));
        int64_t s3[] = {3, 2};
        EXPECT(pd_index_add(pd_zeros(SH(3, 2), 2, dts[d]), 0, TT(PD_I32, V(0, 2, 0), 3),
                            TT(dts[d], V(1, 2, 3, 4, 5, 6), 3, 2)), s3, V(6, 8, 0, 0, 3, 4));
        int64_t s4[] = {2, 2};
        EXPECT(pd_index_add(pd_zeros(SH(2, 2), 2, dts[d]), 1, TT(PD_I64, V(1, 1, 0), 3),
                            TT(dts[d], V(1, 2, 3, 4, 5, 6), 2, 3)), s4, V(3, 3, 6, 9));
    }
    /* masked_select, masked_fill, nonzero */
    {
        struct pd_tensor *m = TT(PD_BOOL, V(1, 0, 1, 0, 1, 0), 2, 3);
        int64_t s3[] = {3}, s4[] = {4};
        EXPECT(pd_masked_select(x23, m), s3, V(1, 3, 5));
        EXPECT(pd_masked_select(x23, TT(PD_BOOL, V(1, 0, 1), 3)), s4, V(1, 3, 4, 6));
        /* mutual broadcast: x [2, 1] with mask [2, 3] */
        EXPECT(pd_masked_select(TT(PD_F32, V(7, 8), 2, 1), m), s3, V(7, 7, 8));
        int64_t s23[] = {2, 3};
        EXPECT(pd_masked_fill(x23, m, -1), s23, V(-1, 2, -1, 4, -1, 6));
        int64_t sn[] = {2, 2}, sn0[] = {0, 2}, s1[] = {1, 1};
        EXPECT(pd_nonzero(TT(PD_F32, V(0, 1, -2, -0.0), 2, 2)), sn, V(0, 1, 1, 0));
        EXPECT(pd_nonzero(pd_zeros(SH(3, 2), 2, PD_I8)), sn0, V(0));
        EXPECT(pd_nonzero(TT(PD_BOOL, V(0, 0, 1), 3)), s1, V(2));
    }
    /* concat, stack, split, chunk */
    {
        struct pd_tensor *a = TT(PD_F32, V(1, 2), 2), *b = TT(PD_I32, V(3), 1);
        struct pd_tensor *ab[] = {a, b};
        int64_t s3[] = {3};
        EXPECT(pd_concat(ab, 2, 0), s3, V(1, 2, 3));
        struct pd_tensor *c2[] = {x23, TT(PD_F32, V(7, 8), 2, 1)};
        int64_t s24[] = {2, 4};
        EXPECT(pd_concat(c2, 2, -1), s24, V(1, 2, 3, 7, 4, 5, 6, 8));
        struct pd_tensor *st[] = {a, TT(PD_F32, V(3, 4), 2)};
        int64_t s22[] = {2, 2};
        EXPECT(pd_stack(st, 2, 1), s22, V(1, 3, 2, 4));
        EXPECT(pd_stack(st, 2, 0), s22, V(1, 2, 3, 4));
        struct pd_tensor *parts[4];
        int n = pd_split(x23, (const int64_t[]){1, -1}, 2, 1, parts);
        CHECK(n == 2, "split returned %d", n);
        int64_t s21[] = {2, 1}, s22b[] = {2, 2};
        EXPECT(parts[0], s21, V(1, 4));
        EXPECT(parts[1], s22b, V(2, 3, 5, 6));
        CHECK(pd_tensor_shares_storage(parts[1], x23), "split pieces are views");
        n = pd_chunk(TT(PD_F32, V(1, 2, 3, 4, 5), 5), 3, 0, parts);
        CHECK(n == 3, "chunk returned %d", n);
        int64_t s1[] = {1};
        EXPECT(parts[2], s1, V(5));
        n = pd_chunk(TT(PD_F32, V(1, 2, 3, 4, 5), 5), 4, 0, parts); /* torch: sizes 2, 2, 1 */
        CHECK(n == 3, "chunk(5, 4) returned %d", n);
    }
    /* tile, repeat_interleave, roll, flip */
    {
        int64_t s26[] = {2, 6}, s46[] = {4, 3};
        EXPECT(pd_tile(x23, (const int64_t[]){2}, 1), s26, V(1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6));
        EXPECT(pd_tile(TT(PD_F32, V(1, 2, 3), 3), (const int64_t[]){4, 1}, 2), s46, V(1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3));
        int64_t s43[] = {4, 3}, s6[] = {6};
        EXPECT(pd_repeat_interleave(x23, 2, 0), s43, V(1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6));
        EXPECT(pd_repeat_interleave(TT(PD_F32, V(1, 2, 3), 3), 2, PD_ALL_AXES), s6, V(1, 1, 2, 2, 3, 3));
        int64_t s23[] = {2, 3};
        EXPECT(pd_roll(x23, 1, 1), s23, V(3, 1, 2, 6, 4, 5));
        EXPECT(pd_roll(x23, -4, -1), s23, V(2, 3, 1, 5, 6, 4));
        EXPECT(pd_roll(x23, 2, PD_ALL_AXES), s23, V(5, 6, 1, 2, 3, 4));
        EXPECT(pd_flip(x23, (const int[]){1}, 1), s23, V(3, 2, 1, 6, 5, 4));
        EXPECT(pd_flip(x23, (const int[]){0, -1}, 2), s23, V(6, 5, 4, 3, 2, 1));
        EXPECT(pd_flip(pd_transpose(x23, 0, 1), (const int[]){0}, 1), ((int64_t[]){3, 2}), V(3, 6, 2, 5, 1, 4));
    }
    /* pad */
    {
        struct pd_tensor *x = TT(PD_F32, V(1, 2, 3), 3);
        int64_t s6[] = {6}, s3[] = {3};
        EXPECT(pd_pad(x, (const int64_t[]){2, 1}, 2, PD_PAD_CONSTANT, 0), s6, V(0, 0, 1, 2, 3, 0));
        EXPECT(pd_pad(x, (const int64_t[]){2, 1}, 2, PD_PAD_REFLECT, 0), s6, V(3, 2, 1, 2, 3, 2));
        EXPECT(pd_pad(x, (const int64_t[]){2, 1}, 2, PD_PAD_REPLICATE, 0), s6, V(1, 1, 1, 2, 3, 3));
        EXPECT(pd_pad(x, (const int64_t[]){-1, 1}, 2, PD_PAD_CONSTANT, 9), s3, V(2, 3, 9));
        int64_t s35[] = {3, 5};
        EXPECT(pd_pad(x23, (const int64_t[]){1, 1, 1, 0}, 4, PD_PAD_REFLECT, 0), s35,
               V(5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5));
        EXPECT(pd_pad(x23, (const int64_t[]){1, 1, 1, 0}, 4, PD_PAD_CONSTANT, 7), s35,
               V(7, 7, 7, 7, 7, 7, 1, 2, 3, 7, 7, 4, 5, 6, 7));
        int64_t s44[] = {4, 4};
        EXPECT(pd_pad(pd_transpose(x23, 0, 1), (const int64_t[]){1, 1, 0, 1}, 4, PD_PAD_REPLICATE, 0), s44,
               V(1, 1, 4, 4, 2, 2, 5, 5, 3, 3, 6, 6, 3, 3, 6, 6));
    }
    /* tril, triu */
    {
        struct pd_tensor *x = TT(PD_I32, V(1, 2, 3, 4, 5, 6, 7, 8, 9), 3, 3);
        int64_t s[] = {3, 3};
        EXPECT(pd_tril(x, 0), s, V(1, 0, 0, 4, 5, 0, 7, 8, 9));
        EXPECT(pd_triu(x, 1), s, V(0, 2, 3, 0, 0, 6, 0, 0, 0));
        EXPECT(pd_tril(x, -1), s, V(0, 0, 0, 4, 0, 0, 7, 8, 0));
        EXPECT(pd_triu(pd_transpose(x, 0, 1), -1), s, V(1, 4, 7, 2, 5, 8, 0, 6, 9));
        int64_t s23[] = {2, 3};
        EXPECT(pd_tril(x23, 5), s23, V(1, 2, 3, 4, 5, 6));
    }
    /* topk, sort, argsort, unique */
    {
        struct pd_tensor *x = TT(PD_F32, V(3, 1, 4, 1, 5, 9, 2, 6), 8), *idx = NULL;
        int64_t s3[] = {3};
        EXPECT(pd_topk(x, 3, 0, 1, &idx), s3, V(9, 6, 5));
        EXPECT(idx, s3, V(5, 7, 4));
        EXPECT(pd_topk(x, 3, -1, 0, &idx), s3, V(1, 1, 2));
        EXPECT(idx, s3, V(1, 3, 6));
        int64_t s1[] = {1};
        EXPECT(pd_topk(TT(PD_I64, V(5, 7, 7, 1), 4), 1, 0, 1, &idx), s1, V(7));
        EXPECT(idx, s1, V(1));
        struct pd_tensor *y = TT(PD_F64, V(3, 1, 4, 1, 5), 5);
        int64_t s5[] = {5};
        EXPECT(pd_sort(y, 0, 0, &idx), s5, V(1, 1, 3, 4, 5));
        EXPECT(idx, s5, V(1, 3, 0, 2, 4));
        EXPECT(pd_sort(y, 0, 1, &idx), s5, V(5, 4, 3, 1, 1));
        EXPECT(idx, s5, V(4, 2, 0, 1, 3));
        EXPECT(pd_argsort(y, -1, 0), s5, V(1, 3, 0, 2, 4));
        int64_t s23[] = {2, 3};
        EXPECT(pd_sort(TT(PD_F32, V(NAN, 1, 0, 2, -1, 2), 2, 3), 1, 0, &idx), s23, V(0, 1, NAN, -1, 2, 2));
        EXPECT(idx, s23, V(2, 1, 0, 1, 0, 2));
        EXPECT(pd_sort(TT(PD_F32, V(NAN, 1, 0), 3), 0, 1, &idx), ((int64_t[]){3}), V(NAN, 1, 0));
        EXPECT(pd_sort(x23, 0, 1, &idx), s23, V(4, 5, 6, 1, 2, 3));
        EXPECT(idx, s23, V(1, 1, 1, 0, 0, 0));
        struct pd_tensor *inv = NULL, *cnt = NULL;
        int64_t su[] = {3}, s6[] = {2, 3};
        EXPECT(pd_unique(TT(PD_I32, V(2, 1, 2, 3, 1, 1), 2, 3), &inv, &cnt), su, V(1, 2, 3));
        EXPECT(inv, s6, V(1, 0, 1, 2, 0, 0));
        EXPECT(cnt, su, V(3, 2, 1));
        int64_t s4[] = {4};
        EXPECT(pd_unique(TT(PD_F32, V(NAN, 0.5, -0.0, 0, NAN, 2), 6), &inv, &cnt), s4, V(-0.0, 0.5, 2, NAN));
        EXPECT(cnt, s4, V(2, 1, 1, 2));
        int64_t s0[] = {0};
        EXPECT(pd_unique(pd_zeros(SH(0, 3), 2, PD_F32), &inv, &cnt), s0, V(0));
    }
    /* take_along_axis (broadcasting) */
    {
        int64_t s21[] = {2, 1};
        EXPECT(pd_take_along_axis(x23, 1, TT(PD_I64, V(2, 0), 2, 1)), s21, V(3, 4));
        EXPECT(pd_take_along_axis(TT(PD_F32, V(1, 2, 3), 1, 3), 1, TT(PD_I32, V(2, 0), 2, 1)), s21, V(3, 1));
        int64_t s23[] = {2, 3};
        EXPECT(pd_take_along_axis(TT(PD_F32, V(1, 2), 2, 1), 1, TT(PD_I32, V(0, 0, 0), 1, 3)), s23,
               V(1, 1, 1, 2, 2, 2));
    }
    /* 0-d tensors (axis 0 / -1, like PyTorch) */
    {
        struct pd_tensor *x0 = pd_scalar(4, PD_F32), *i0 = pd_scalar(0, PD_I64), *ix = NULL;
        int64_t s0[1] = {0};
        expect(__LINE__, pd_gather(x0, -1, i0), s0, 0, V(4), 0);
        expect(__LINE__, pd_scatter(x0, 0, i0, pd_scalar(7, PD_F32)), s0, 0, V(7), 0);
        expect(__LINE__, pd_sort(x0, 0, 1, &ix), s0, 0, V(4), 0);
        expect(__LINE__, pd_topk(x0, 1, -1, 1, &ix), s0, 0, V(4), 0);
        expect(__LINE__, ix, s0, 0, V(0), 0);
        int64_t s10[] = {1, 0};
        EXPECT(pd_nonzero(x0), s10, V(0));
        CHECK(!pd_gather(x0, 0, pd_scalar(1, PD_I64)), "0-d gather index 1 must fail");
        pd_clear_error();
    }
    /* zero-size */
    {
        int64_t s[] = {0, 3}, s2[] = {2, 0};
        EXPECT(pd_gather(pd_zeros(SH(0, 3), 2, PD_F32), 1, pd_zeros(SH(0, 3), 2, PD_I64)), s, V(0));
        EXPECT(pd_index_select(x23, 1, pd_zeros(SH(0), 1, PD_I64)), s2, V(0));
        EXPECT(pd_pad(pd_zeros(SH(0, 3), 2, PD_F32), (const int64_t[]){1, 1}, 2, PD_PAD_CONSTANT, 0), ((int64_t[]){0, 5}), V(0));
        struct pd_tensor *e[] = {pd_zeros(SH(0), 1, PD_F32), x23};
        EXPECT(pd_concat(e, 2, 0), ((int64_t[]){2, 3}), V(1, 2, 3, 4, 5, 6)); /* legacy empty skip */
    }
}

/* ---- CPU against reference on larger inputs (parallel paths) ---------- */
static struct pd_tensor *both[2];

static void compare_backends(int line, struct pd_tensor *(*fn)(struct pd_tensor **), struct pd_tensor **in, double tol)
{
    pdi_force_backend(PDI_BACKEND_REF);
    struct pd_tensor *r = fn(in);
    pdi_force_backend(-1);
    struct pd_tensor *c = fn(in);
    if (!r || !c) {
        printf("FAIL line %d: %s\n", line, pd_last_error());
        n_fail++;
        return;
    }
    int64_t n = pd_tensor_numel(r);
    if (pd_tensor_numel(c) != n || c->ndim != r->ndim) {
        printf("FAIL line %d: shapes differ\n", line);
        n_fail++;
        return;
    }
    double *a = malloc(sizeof *a * (size_t)(n + 1)), *b = malloc(sizeof *b * (size_t)(n + 1));
    pd_to_buffer(c, a, PD_F64);
    pd_to_buffer(r, b, PD_F64);
    for (int64_t i = 0; i < n; i++) {
        if ((isnan(a[i]) && isnan(b[i])) || fabs(a[i] - b[i]) <= tol * (1 + fabs(b[i]))) continue;
        printf("FAIL line %d: element %lld cpu %g ref %g\n", line, (long long)i, a[i], b[i]);
        n_fail++;
        break;
    }
    free(a);
    free(b);
    (void)both;
}
#define CMP(fn, tol, ...) compare_backends(__LINE__, fn, (struct pd_tensor *[]){__VA_ARGS__}, tol)

static struct pd_tensor *f_gather(struct pd_tensor **in) { return pd_gather(in[0], 0, in[1]); }
static struct pd_tensor *f_gather1(struct pd_tensor **in) { return pd_gather(in[0], 1, in[1]); }
static struct pd_tensor *f_isel0(struct pd_tensor **in) { return pd_index_select(in[0], 0, in[1]); }
static struct pd_tensor *f_isel1(struct pd_tensor **in) { return pd_index_select(in[0], 1, in[1]); }
static struct pd_tensor *f_sadd0(struct pd_tensor **in) { return pd_scatter_add(in[0], 0, in[1], in[2]); }
static struct pd_tensor *f_iadd0(struct pd_tensor **in) { return pd_index_add(in[0], 0, in[1], in[2]); }
static struct pd_tensor *f_mselect(struct pd_tensor **in) { return pd_masked_select(in[0], in[1]); }
static struct pd_tensor *f_nonzero(struct pd_tensor **in) { return pd_nonzero(in[1]); }
static struct pd_tensor *f_reflect(struct pd_tensor **in) { return pd_pad(in[0], (const int64_t[]){3, 2, 1, 4}, 4, PD_PAD_REFLECT, 0); }
static struct pd_tensor *f_padbw(struct pd_tensor **in)
{
    struct pdi_attrs a = {.pad_backward = {.pads = {4, {3, 2, 1, 4}}, .mode = PD_PAD_REPLICATE,
                                           .input_shape = {2, {300, 200}}}};
    return pdi_call1(PD_OP_pad_backward, in[0], &a);
}
static struct pd_tensor *f_tril(struct pd_tensor **in) { return pd_tril(in[0], 3); }
static struct pd_tensor *f_sort(struct pd_tensor **in)
{
    struct pd_tensor *i = NULL;
    struct pd_tensor *v = pd_sort(in[0], 1, 1, &i);
    return v ? pd_add(pd_cast(i, PD_F64), v) : NULL;
}
static struct pd_tensor *f_topk(struct pd_tensor **in)
{
    struct pd_tensor *i = NULL;
    struct pd_tensor *v = pd_topk(in[0], 7, 1, 1, &i);
    return v ? pd_add(pd_scale(pd_cast(i, PD_F64), 1000), v) : NULL;
}
static struct pd_tensor *f_unique(struct pd_tensor **in)
{
    struct pd_tensor *inv = NULL, *cnt = NULL;
    struct pd_tensor *v = pd_unique(in[3], &inv, &cnt);
    struct pd_tensor *parts[3] = {v, pd_flatten(inv, 0, -1), cnt};
    return v ? pd_concat(parts, 3, 0) : NULL;
}
static struct pd_tensor *f_flipcat(struct pd_tensor **in)
{
    struct pd_tensor *p[2] = {pd_flip(in[0], (const int[]){0, 1}, 2), pd_transpose(in[0], 0, 1)};
    return pd_concat(p, 2, 1);
}

static void test_large(void)
{
    struct pd_generator *g = pd_generator_create(7);
    struct pd_tensor *x = pd_randn(SH(300, 200), 2, PD_F32, g);
    struct pd_tensor *i0 = pd_randint(SH(400, 200), 2, 0, 300, PD_I64, g);
    struct pd_tensor *i1 = pd_randint(SH(300, 150), 2, 0, 200, PD_I32, g);
    struct pd_tensor *src = pd_randn(SH(400, 200), 2, PD_F32, g);
    struct pd_tensor *mask = pd_cast(pd_randint(SH(300, 200), 2, 0, 2, PD_I32, g), PD_BOOL);
    struct pd_tensor *ints = pd_randint(SH(300, 200), 2, 0, 50, PD_I32, g);
    struct pd_tensor *v1 = pd_randint(SH(700), 1, 0, 300, PD_I64, g);
    CMP(f_gather, 0, x, i0);
    CMP(f_gather1, 0, x, i1);
    CMP(f_gather1, 0, pd_transpose(pd_randn(SH(200, 300), 2, PD_BF16, g), 0, 1), i1);
    CMP(f_isel0, 0, x, v1);
    CMP(f_isel1, 0, x, pd_flatten(pd_slice(i1, 0, 0, 1, 1), 0, -1));
    CMP(f_sadd0, 1e-5, x, i0, src);
    CMP(f_sadd0, 1e-2, pd_cast(x, PD_BF16), i0, pd_cast(src, PD_BF16));
    CMP(f_sadd0, 0, pd_cast(ints, PD_I64), i0, pd_randint(SH(400, 200), 2, -5, 5, PD_I64, g));
    CMP(f_iadd0, 1e-5, x, v1, pd_randn(SH(700, 200), 2, PD_F32, g));
    CMP(f_iadd0, 1e-5, pd_transpose(pd_randn(SH(200, 300), 2, PD_F64, g), 0, 1), v1, pd_randn(SH(700, 200), 2, PD_F64, g));
    CMP(f_mselect, 0, x, mask);
    CMP(f_nonzero, 0, x, ints);
    CMP(f_reflect, 0, x);
    CMP(f_padbw, 1e-5, pd_randn(SH(305, 205), 2, PD_F32, g));
    CMP(f_tril, 0, pd_transpose(x, 0, 1));
    CMP(f_sort, 0, x);
    CMP(f_sort, 0, pd_cast(ints, PD_BF16));
    CMP(f_topk, 0, x);
    CMP(f_topk, 0, pd_cast(ints, PD_I64));
    CMP(f_topk, 0, pd_cast(ints, PD_F16));
    CMP(f_unique, 0, x, NULL, NULL, ints);
    CMP(f_unique, 0, x, NULL, NULL, pd_slice(pd_cast(x, PD_BF16), 0, 0, 60, 1));
    CMP(f_flipcat, 0, pd_slice(x, 0, 0, 200, 1));
    pd_generator_destroy(g);
}

/* ---- gradients by hand ----------------------------------------------- */
static void test_grads(void)
{
    /* gather with a repeated index: d/dx sum(x[[0, 0, 2]]) = [2, 0, 1] */
    struct pd_tensor *x = TT(PD_F64, V(1, 2, 3), 3);
    pd_requires_grad_(x, 1);
    struct pd_tensor *y = pd_sum(pd_gather(x, 0, TT(PD_I64, V(0, 0, 2), 3)), NULL, 0, 0), *gx = NULL;
    CHECK(y && pd_grad(&y, 1, &x, 1, &gx, NULL) == 0, "gather backward: %s", pd_last_error());
    int64_t s3[] = {3};
    EXPECT(gx, s3, V(2, 0, 1));
    /* reflect pad: out = [x2, x1, x0, x1, x2, x1], w = 1..6 */
    struct pd_tensor *w = TT(PD_F64, V(1, 2, 3, 4, 5, 6), 6);
    y = pd_sum(pd_mul(pd_pad(x, (const int64_t[]){2, 1}, 2, PD_PAD_REFLECT, 0), w), NULL, 0, 0);
    CHECK(y && pd_grad(&y, 1, &x, 1, &gx, NULL) == 0, "pad backward: %s", pd_last_error());
    EXPECT(gx, s3, V(3, 12, 6));
    /* sort: the gradient goes back to where each value came from */
    struct pd_tensor *z = TT(PD_F64, V(3, 1, 2), 3);
    pd_requires_grad_(z, 1);
    y = pd_sum(pd_mul(pd_sort(z, 0, 0, NULL), TT(PD_F64, V(10, 20, 30), 3)), NULL, 0, 0);
    CHECK(y && pd_grad(&y, 1, &z, 1, &gx, NULL) == 0, "sort backward: %s", pd_last_error());
    EXPECT(gx, s3, V(30, 10, 20));
    /* second order through gather -> scatter_add: d2/dx2 of sum(gather(x)^2) */
    y = pd_sum(pd_square(pd_gather(x, 0, TT(PD_I64, V(0, 0, 2), 3))), NULL, 0, 0);
    CHECK(y && pd_grad(&y, 1, &x, 1, &gx, &(struct pd_grad_options){.create_graph = 1}) == 0, "create_graph: %s",
          pd_last_error());
    EXPECT(gx, s3, V(4, 0, 6)); /* 2*x0*2, 0, 2*x2 */
    struct pd_tensor *s = pd_sum(gx, NULL, 0, 0), *gg = NULL;
    CHECK(s && pd_grad(&s, 1, &x, 1, &gg, NULL) == 0, "second order: %s", pd_last_error());
    EXPECT(gg, s3, V(4, 0, 2));
}

/* ---- second order: VJPs are differentiable again --------------------- */
/* H(x) = sum(v * dL/dx) with L = sum(f(x)^3): d2 through the VJP rules. */
static double eval_h(struct pd_tensor *(*f)(struct pd_tensor *), struct pd_tensor *x, struct pd_tensor *v, int create,
                     struct pd_tensor **h_out)
{
    struct pd_tensor *y = f(x), *g = NULL;
    struct pd_tensor *L = y ? pd_sum(pd_mul(pd_square(y), y), NULL, 0, 0) : NULL;
    if (!L || pd_grad(&L, 1, &x, 1, &g, &(struct pd_grad_options){.create_graph = create})) return NAN;
    struct pd_tensor *h = pd_sum(pd_mul(g, v), NULL, 0, 0);
    if (h_out) *h_out = h;
    return h ? pd_item(h) : NAN;
}

static void check_second_order(int line, const char *name, struct pd_tensor *(*f)(struct pd_tensor *), const int64_t *shape,
                               int nd)
{
    int scope_tok = pd_scope_begin();
    struct pd_generator *gen = pd_generator_create(11);
    struct pd_tensor *x = pd_contiguous(pd_uniform(shape, nd, -2, 2, PD_F64, gen));
    struct pd_tensor *v = pd_uniform(shape, nd, 0.5, 1.5, PD_F64, gen);
    pd_generator_destroy(gen);
    pd_requires_grad_(x, 1);
    struct pd_tensor *h = NULL, *gg = NULL;
    if (isnan(eval_h(f, x, v, 1, &h)) || pd_grad(&h, 1, &x, 1, &gg, NULL)) {
        printf("FAIL line %d %s: %s\n", line, name, pd_last_error());
        n_fail++;
        pd_scope_end(scope_tok);
        return;
    }
    double *px = pd_tensor_data(x);
    int64_t n = pd_tensor_numel(x);
    for (int64_t i = 0; i < n; i++) {
        double x0 = px[i], e = 1e-6;
        px[i] = x0 + e;
        double hp = eval_h(f, x, v, 0, NULL);
        px[i] = x0 - e;
        double hm = eval_h(f, x, v, 0, NULL);
        px[i] = x0;
        int64_t ix[PD_MAX_DIMS], r = i;
        for (int d = nd - 1; d >= 0; d--) { ix[d] = r % shape[d]; r /= shape[d]; }
        double num = (hp - hm) / (2 * e), ana = pd_get(gg, ix);
        if (!(fabs(num - ana) <= 1e-5 + 1e-4 * fabs(num))) {
            printf("FAIL line %d %s: second order element %lld analytic %g numeric %g\n", line, name, (long long)i, ana, num);
            n_fail++;
            break;
        }
    }
    pd_scope_end(scope_tok);
}
#define SECOND(f, ...) check_second_order(__LINE__, #f, f, SH(__VA_ARGS__), NA(__VA_ARGS__))

static struct pd_tensor *s_gather(struct pd_tensor *x) { return pd_gather(x, 1, TT(PD_I64, V(0, 0, 2, 1, 3, 3), 2, 3)); }
static struct pd_tensor *s_isel(struct pd_tensor *x) { return pd_index_select(x, 0, TT(PD_I32, V(1, 1, 0), 3)); }
static struct pd_tensor *s_sadd(struct pd_tensor *x)
{
    return pd_scatter_add(pd_scale(x, 0.5), 1, TT(PD_I64, V(0, 0, 3, 1, 1, 1), 2, 3), pd_slice(x, 1, 0, 3, 1));
}
static struct pd_tensor *s_iadd(struct pd_tensor *x)
{
    return pd_index_add(x, 1, TT(PD_I64, V(2, 2), 2), pd_slice(x, 1, 1, 3, 1));
}
static struct pd_tensor *s_scatter(struct pd_tensor *x)
{
    return pd_scatter(x, 1, TT(PD_I64, V(3, 0, 2, 1), 2, 2), pd_slice(pd_scale(x, 2), 1, 2, 4, 1));
}
static struct pd_tensor *s_mselect(struct pd_tensor *x) { return pd_masked_select(x, TT(PD_BOOL, V(1, 0, 0, 1), 4)); }
static struct pd_tensor *s_mscatter(struct pd_tensor *x)
{
    struct pd_tensor *in[3] = {x, TT(PD_BOOL, V(0, 1, 1, 0), 4), pd_flatten(pd_slice(x, 1, 0, 2, 1), 0, -1)};
    return pdi_calln(PD_OP_masked_scatter, in, 3, NULL);
}
static struct pd_tensor *s_reflect(struct pd_tensor *x) { return pd_pad(x, (const int64_t[]){3, 1, 1, 0}, 4, PD_PAD_REFLECT, 0); }
static struct pd_tensor *s_replicate(struct pd_tensor *x) { return pd_pad(x, (const int64_t[]){2, 0, 0, 2}, 4, PD_PAD_REPLICATE, 0); }
static struct pd_tensor *s_crop(struct pd_tensor *x) { return pd_pad(x, (const int64_t[]){-1, 2}, 2, PD_PAD_CONSTANT, 3); }
static struct pd_tensor *s_flip(struct pd_tensor *x) { return pd_flip(x, (const int[]){0, 1}, 2); }
static struct pd_tensor *s_tril(struct pd_tensor *x) { return pd_mul(pd_tril(x, 0), pd_triu(x, 1)); }
static struct pd_tensor *s_concat(struct pd_tensor *x)
{
    struct pd_tensor *p[2] = {x, pd_scale(x, 3)};
    return pd_concat(p, 2, 1);
}
static struct pd_tensor *s_sort(struct pd_tensor *x) { return pd_mul(pd_sort(x, 1, 1, NULL), pd_arange(1, 5, 1, PD_F64)); }
static struct pd_tensor *s_topk(struct pd_tensor *x) { return pd_topk(x, 2, 1, 0, NULL); }
static struct pd_tensor *s_take(struct pd_tensor *x) { return pd_take_along_axis(x, 1, TT(PD_I64, V(3, 0, 0), 3, 1)); }
static struct pd_tensor *s_tile(struct pd_tensor *x) { return pd_tile(x, (const int64_t[]){2, 1}, 2); }
static struct pd_tensor *s_roll(struct pd_tensor *x) { return pd_mul(pd_roll(x, 1, 1), x); }

static void test_second_order(void)
{
    SECOND(s_gather, 2, 4);
    SECOND(s_isel, 2, 3);
    SECOND(s_sadd, 2, 4);
    SECOND(s_iadd, 2, 3);
    SECOND(s_scatter, 2, 4);
    SECOND(s_mselect, 3, 4);
    SECOND(s_mscatter, 2, 4);
    SECOND(s_reflect, 3, 4);
    SECOND(s_replicate, 2, 3);
    SECOND(s_crop, 2, 3);
    SECOND(s_flip, 2, 3);
    SECOND(s_tril, 3, 3);
    SECOND(s_concat, 2, 3);
    SECOND(s_sort, 2, 4);
    SECOND(s_topk, 2, 5);
    SECOND(s_take, 1, 4);
    SECOND(s_tile, 2, 2);
    SECOND(s_roll, 2, 3);
}

/* Sums with repeated indices do not depend on the thread count (bitwise). */
static struct pd_tensor *det_sum(int threads, struct pd_tensor **in, int which)
{
#ifdef _OPENMP
    pd_set_num_threads(threads);
#else
    (void)threads;
#endif
    struct pd_tensor *r = which == 0 ? pd_scatter_add(in[0], 0, in[1], in[2])
                        : which == 1 ? pd_index_add(in[0], 0, in[3], in[2])
                                     : pd_scatter_add(in[4], 1, in[1], in[5]);
#ifdef _OPENMP
    pd_set_num_threads(0);
#endif
    return r;
}

static void test_determinism(void)
{
    struct pd_generator *g = pd_generator_create(3);
    struct pd_tensor *in[6];
    in[0] = pd_randn(SH(50, 1000), 2, PD_F32, g);
    in[1] = pd_randint(SH(400, 1000), 2, 0, 50, PD_I64, g);
    in[2] = pd_randn(SH(400, 1000), 2, PD_F32, g);
    in[3] = pd_randint(SH(400), 1, 0, 50, PD_I64, g);
    in[4] = pd_randn(SH(400, 1000), 2, PD_BF16, g);
    in[5] = pd_randn(SH(400, 1000), 2, PD_BF16, g);
    pd_generator_destroy(g);
    for (int which = 0; which < 3; which++) {
        struct pd_tensor *a = det_sum(1, in, which), *b = det_sum(2, in, which), *c = det_sum(3, in, which);
        CHECK(a && b && c, "%s", pd_last_error());
        if (!a || !b || !c) continue;
        size_t nb = (size_t)pd_tensor_numel(a) * pd_dtype_size(a->dtype);
        CHECK(!memcmp(pd_tensor_data(a), pd_tensor_data(b), nb) && !memcmp(pd_tensor_data(a), pd_tensor_data(c), nb),
              "sum %d depends on the thread count", which);
    }
}

int main(void)
{
    const char *names[2] = {"ref", "cpu"};
    int backends[2] = {PDI_BACKEND_REF, -1};
    for (int b = 0; b < 2; b++) {
        backend_name = names[b];
        int scope_tok = pd_scope_begin();
        pdi_force_backend(backends[b]);
        test_values();
        pdi_force_backend(-1);
        pd_scope_end(scope_tok);
    }
    backend_name = "cpu vs ref";
    int scope_tok = pd_scope_begin();
    test_large();
    test_determinism();
    pd_scope_end(scope_tok);
    backend_name = "grad";
    scope_tok = pd_scope_begin();
    test_grads();
    test_second_order();
    pd_scope_end(scope_tok);
    CHECK(pd_live_tensors() == 0, "%lld tensors leaked", (long long)pd_live_tensors());
    printf("test_index: %s (%d failures)\n", n_fail ? "FAIL" : "ok", n_fail);
    return n_fail != 0;
}
