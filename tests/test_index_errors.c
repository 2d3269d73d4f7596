/* paddle.c — the index family rejects bad input with a message that names
 * the problem (and never crashes): out-of-range and negative indices (never
 * wrapped), wrong index dtypes, bad shapes, axes and attributes. Run on the
 * reference and on the CPU backend (index values are checked by kernels). */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

static int n_fail;
static const char *backend = "";

/* r must be NULL and the error must contain every needle. */
static void expect_error(int line, const void *r, const char *n1, const char *n2, const char *n3)
{
    const char *msg = pd_last_error();
    const char *needles[3] = {n1, n2, n3};
    if (r) {
        printf("FAIL [%s] line %d: expected an error, got a result\n", backend, line);
        n_fail++;
        return;
    }
    for (int i = 0; i < 3; i++) {
        if (needles[i] && !strstr(msg, needles[i])) {
            printf("FAIL [%s] line %d: error \"%s\" does not mention \"%s\"\n", backend, line, msg, needles[i]);
            n_fail++;
            return;
        }
    }
    pd_clear_error();
}
#define ERR(expr, a, b, c) expect_error(__LINE__, (const void *)(expr), a, b, c)

static struct pd_tensor *ivec(const int64_t *v, int64_t n, enum pd_dtype dt)
{
    struct pd_tensor *t = pd_from_buffer(v, &n, 1, PD_I64);
    return dt == PD_I64 ? t : pd_cast(t, dt);
}

static struct pd_tensor *imat(const int64_t *v, int64_t r, int64_t c, enum pd_dtype dt)
{
    int64_t s[2] = {r, c};
    struct pd_tensor *t = pd_from_buffer(v, s, 2, PD_I64);
    return dt == PD_I64 ? t : pd_cast(t, dt);
}

static void run(void)
{
    int64_t s23[] = {2, 3}, s3[] = {3};
    struct pd_tensor *x = pd_ones(s23, 2, PD_F32), *v = pd_ones(s3, 1, PD_F32);
    enum pd_dtype idts[2] = {PD_I32, PD_I64};
    for (int d = 0; d < 2; d++) {
        enum pd_dtype it = idts[d];
        /* gather */
        ERR(pd_gather(x, 1, imat((const int64_t[]){0, 1, 5, 0, 1, 2}, 2, 3, it)), "gather", "index 5", "axis 1 of size 3");
        ERR(pd_gather(x, 0, imat((const int64_t[]){0, -1, 0}, 1, 3, it)), "index -1", "axis 0 of size 2", "not wrapped");
        ERR(pd_gather(v, 0, ivec((const int64_t[]){3}, 1, it)), "index 3", "size 3", NULL);
        ERR(pd_take_along_axis(x, 1, imat((const int64_t[]){-2}, 1, 1, it)), "index -2", "axis 1", "not wrapped");
        /* index_select */
        ERR(pd_index_select(x, 0, ivec((const int64_t[]){0, 1, 2}, 3, it)), "index_select", "index 2", "axis 0 of size 2");
        ERR(pd_index_select(x, -1, ivec((const int64_t[]){-3}, 1, it)), "index -3", "axis 1 of size 3", "not wrapped");
        /* scatter, scatter_add, index_add */
        struct pd_tensor *src = pd_ones(s23, 2, PD_F32);
        ERR(pd_scatter(x, 0, imat((const int64_t[]){0, 2, 0}, 1, 3, it), src), "scatter", "index 2", "axis 0 of size 2");
        ERR(pd_scatter_add(x, 1, imat((const int64_t[]){0, 1, 2, 3, 0, 0}, 2, 3, it), src), "scatter_add", "index 3",
            "axis 1 of size 3");
        ERR(pd_scatter_add(x, 1, imat((const int64_t[]){-1, 0, 0}, 1, 3, it), src), "index -1", "not wrapped", NULL);
        ERR(pd_index_add(x, 1, ivec((const int64_t[]){0, 9, 1}, 3, it), src), "index_add", "index 9", "axis 1 of size 3");
        ERR(pd_index_add(x, 0, ivec((const int64_t[]){-1, 0}, 2, it), pd_ones((const int64_t[]){2, 3}, 2, PD_F32)),
            "index -1", "not wrapped", NULL);
    }
    /* extreme values */
    ERR(pd_gather(v, 0, ivec((const int64_t[]){INT64_MAX}, 1, PD_I64)), "index 9223372036854775807", "size 3", NULL);
    ERR(pd_gather(v, 0, ivec((const int64_t[]){INT32_MIN}, 1, PD_I32)), "index -2147483648", NULL, NULL);
    /* index dtypes */
    ERR(pd_gather(x, 1, pd_zeros(s23, 2, PD_F32)), "gather", "int32 or int64", "f32");
    ERR(pd_index_select(x, 0, pd_zeros(s3, 1, PD_I16)), "index_select", "int32 or int64", "int16");
    ERR(pd_scatter(x, 0, pd_zeros(s23, 2, PD_BOOL), x), "scatter", "int32 or int64", "bool");
    ERR(pd_index_add(x, 0, pd_zeros(s3, 1, PD_U8), x), "index_add", "int32 or int64", NULL);
    /* shapes and axes */
    ERR(pd_gather(x, 2, pd_zeros(s23, 2, PD_I64)), "gather", "axis 2 out of range", NULL);
    ERR(pd_gather(x, 0, pd_zeros(s3, 1, PD_I64)), "gather", "as many dims", NULL);
    ERR(pd_gather(x, 0, pd_zeros((const int64_t[]){1, 4}, 2, PD_I64)), "gather", "larger than x", NULL);
    ERR(pd_index_select(x, 0, pd_zeros(s23, 2, PD_I64)), "index_select", "1-d", NULL);
    ERR(pd_scatter(x, 0, pd_zeros((const int64_t[]){2, 4}, 2, PD_I64), x), "scatter", "no larger than src", NULL);
    ERR(pd_index_add(x, 0, pd_zeros((const int64_t[]){3}, 1, PD_I64), x), "index_add", "index length", NULL);
    ERR(pd_take_along_axis(x, 1, pd_zeros((const int64_t[]){3, 1}, 2, PD_I64)), "take_along_axis", "broadcast", NULL);
    /* masks */
    ERR(pd_masked_select(x, pd_ones(s23, 2, PD_I32)), "masked_select", "bool", NULL);
    ERR(pd_masked_select(x, pd_ones((const int64_t[]){4}, 1, PD_BOOL)), "masked_select", "broadcast", NULL);
    ERR(pd_masked_fill(x, pd_ones(s23, 2, PD_F32), 0), "masked_fill", "bool", NULL);
    /* concat/stack/split */
    struct pd_tensor *bad[2] = {x, pd_ones((const int64_t[]){3, 3}, 2, PD_F32)};
    ERR(pd_concat(bad, 2, 1), "concat", "input 1 has shape [3, 3]", NULL);
    ERR(pd_concat(bad, 2, 2), "concat", "axis 2 out of range", NULL);
    ERR(pd_stack(bad, 2, 0), "stack", "input 1", NULL);
    struct pd_tensor *parts[4];
    int r = pd_split(x, (const int64_t[]){1, 1}, 2, 1, parts);
    ERR(r < 0 ? NULL : x, "split", "add up to 2", "size 3");
    /* pad, tril, topk, sort, flip */
    ERR(pd_pad(x, (const int64_t[]){3, 0}, 2, PD_PAD_REFLECT, 0), "pad", "reflect", "smaller than its size 3");
    ERR(pd_pad(x, (const int64_t[]){1}, 1, PD_PAD_CONSTANT, 0), "pad", "even number", NULL);
    ERR(pd_pad(x, (const int64_t[]){-1, 0}, 2, PD_PAD_REPLICATE, 0), "pad", "only allowed in constant mode", NULL);
    ERR(pd_pad(x, (const int64_t[]){1, 1}, 2, (enum pd_pad_mode)7, 0), "pad", "mode 7", NULL);
    ERR(pd_pad(x, (const int64_t[]){-2, -2}, 2, PD_PAD_CONSTANT, 0), "pad", "negative size", NULL);
    ERR(pd_tril(v, 0), "tril", "at least 2 dims", NULL);
    ERR(pd_topk(x, 4, 1, 1, NULL), "topk", "k = 4 out of range [0, 3]", NULL);
    ERR(pd_topk(x, -1, 0, 1, NULL), "topk", "k -1 out of range", NULL);
    ERR(pd_sort(x, 2, 0, NULL), "sort", "axis 2 out of range", NULL);
    ERR(pd_flip(x, (const int[]){1, -1}, 2), "flip", "repeated", NULL);
    ERR(pd_flip(x, (const int[]){5}, 1), "flip", "axis 5 out of range", NULL);
    /* NULL in, NULL out */
    ERR(pd_gather(NULL, 0, x), NULL, NULL, NULL);
    ERR(pd_topk(NULL, 1, 0, 1, NULL), NULL, NULL, NULL);
    ERR(pd_unique(NULL, NULL, NULL), NULL, NULL, NULL);
}

int main(void)
{
    const char *names[2] = {"ref", "cpu"};
    int backends[2] = {PDI_BACKEND_REF, -1};
    for (int b = 0; b < 2; b++) {
        backend = names[b];
        int scope_tok = pd_scope_begin();
        pdi_force_backend(backends[b]);
        run();
        pdi_force_backend(-1);
        pd_scope_end(scope_tok);
    }
    if (pd_live_tensors() != 0) {
        printf("FAIL: %lld tensors leaked\n", (long long)pd_live_tensors());
        n_fail++;
    }
    printf("test_index_errors: %s (%d failures)\n", n_fail ? "FAIL" : "ok", n_fail);
    return n_fail != 0;
}
