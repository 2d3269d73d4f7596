/* paddle.c — pd_state_dict_load and its file wrappers: strict and non-strict
 * rules, the report line, dtype conversion, writing through parameters that
 * require grad and through views, and "nothing loaded" on every error. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pd/io.h"
#include "pt.h"

static struct pd_tensor *vec(enum pd_dtype dt, int n, double start)
{
    return pd_arange(start, start + n, 1, dt);
}

/* A "model": a [2, 3] f32 parameter that requires grad, a bf16 vector, an
 * int64 buffer. Tensors are kept out of scopes (the dict owns them). */
static struct pd_state_dict *model(void)
{
    struct pd_state_dict *sd = pd_state_dict_create();
    int scope_tok = pd_scope_begin();
    pd_state_dict_add(sd, "a", pd_requires_grad_(pd_zeros((int64_t[]){2, 3}, 2, PD_F32), 1));
    pd_state_dict_add(sd, "b", pd_zeros((int64_t[]){4}, 1, PD_BF16));
    pd_state_dict_add(sd, "c", pd_zeros((int64_t[]){2}, 1, PD_I64));
    pd_scope_end(scope_tok);
    return sd;
}

/* The "file": f32/f64 values 1.. */
static struct pd_state_dict *source(void)
{
    struct pd_state_dict *sd = pd_state_dict_create();
    int scope_tok = pd_scope_begin();
    pd_state_dict_add(sd, "a", pd_reshape(vec(PD_F32, 6, 1), (int64_t[]){2, 3}, 2));
    pd_state_dict_add(sd, "b", vec(PD_F32, 4, 10.5));
    pd_state_dict_add(sd, "c", vec(PD_I64, 2, 100));
    pd_scope_end(scope_tok);
    return sd;
}

static double sum_all(const struct pd_state_dict *sd)
{
    double s = 0;
    for (int i = 0; i < pd_state_dict_size(sd); i++) {
        struct pd_tensor *t = pd_state_dict_tensor(sd, i);
        int scope_tok = pd_scope_begin();
        s += pd_item(pd_sum(pd_cast(t, PD_F64), NULL, 0, 0));
        pd_scope_end(scope_tok);
    }
    return s;
}

static void test_strict_ok(void)
{
    struct pd_state_dict *dst = model(), *src = source();
    char rep[256];
    int64_t live = pd_live_tensors();
    PT_CHECK(pd_state_dict_load(dst, src, 1, rep, sizeof rep) == PD_OK);
    PT_CHECK(!strcmp(rep, "loaded 3 tensors (1 converted to the model's dtype)"));
    struct pd_tensor *a = pd_state_dict_get(dst, "a");
    PT_CHECK(pd_get(a, (int64_t[]){1, 2}) == 6 && pd_get(a, (int64_t[]){0, 0}) == 1);
    PT_CHECK(pd_tensor_requires_grad(a) && pd_tensor_is_leaf(a) && !pd_tensor_grad_fn_name(a));
    struct pd_tensor *b = pd_state_dict_get(dst, "b");
    PT_CHECK(pd_tensor_dtype(b) == PD_BF16 && pt_at(b, 3) == 13.5);
    PT_CHECK(pt_at(pd_state_dict_get(dst, "c"), 1) == 101);
    PT_CHECK(pd_is_grad_enabled() && pd_scope_depth() == 0);
    PT_CHECK(pd_live_tensors() == live);
    /* the values are copies: changing the source later does not touch dst */
    int scope_tok = pd_scope_begin(); /* (pd_fill_ outside a scope leaks its temporaries: core bug, reported) */
    pd_fill_(pd_state_dict_get(src, "a"), -7);
    pd_scope_end(scope_tok);
    PT_CHECK(pd_get(a, (int64_t[]){0, 0}) == 1);
    /* a dict loaded into itself is a no-op copy */
    PT_CHECK(pd_state_dict_load(dst, dst, 1, NULL, 0) == PD_OK && pd_get(a, (int64_t[]){1, 2}) == 6);
    pd_state_dict_destroy(dst);
    pd_state_dict_destroy(src);
}

/* Every error leaves dst untouched (all zeros) and says what is wrong. */
static void test_errors(void)
{
    struct pd_state_dict *dst = model(), *src = source();
    char rep[512];
    pd_state_dict_remove(src, "c");
    PT_CHECK(pd_state_dict_load(dst, src, 1, rep, sizeof rep) == PD_ERR_INVALID);
    PT_CHECK(!strcmp(rep, "state dict load (strict): 1 missing (\"c\"); nothing loaded"));
    PT_CHECK(!strcmp(pd_last_error(), rep));
    PT_CHECK(sum_all(dst) == 0);

    int scope_tok = pd_scope_begin();
    pd_state_dict_add(src, "c", vec(PD_I64, 2, 0));
    pd_state_dict_add(src, "extra.weight", vec(PD_F32, 3, 0));
    pd_scope_end(scope_tok);
    PT_CHECK(pd_state_dict_load(dst, src, 1, rep, sizeof rep) == PD_ERR_INVALID);
    PT_CHECK(!strcmp(rep, "state dict load (strict): 1 unexpected (\"extra.weight\"); nothing loaded"));
    PT_CHECK(sum_all(dst) == 0);

    /* non-strict skips it and says so */
    PT_CHECK(pd_state_dict_load(dst, src, 0, rep, sizeof rep) == PD_OK);
    PT_CHECK(!strcmp(rep, "loaded 3 tensors (1 converted to the model's dtype); skipped 1 unexpected (\"extra.weight\")"));
    PT_CHECK(sum_all(dst) == 21 + 48 + 1);
    pd_state_dict_destroy(dst);
    dst = model();

    /* a shape mismatch is an error in both modes, with both shapes */
    scope_tok = pd_scope_begin();
    pd_state_dict_set(src, "b", vec(PD_F32, 5, 0), 1);
    pd_scope_end(scope_tok);
    PT_CHECK(pd_state_dict_load(dst, src, 0, rep, sizeof rep) == PD_ERR_INVALID);
    PT_CHECK(!strcmp(rep, "state dict load (non-strict): 1 shape mismatch (\"b\") [\"b\": file [5], model [4]]; nothing loaded"));
    PT_CHECK(sum_all(dst) == 0);
    scope_tok = pd_scope_begin();
    pd_state_dict_set(src, "a", pd_zeros((int64_t[]){3, 2}, 2, PD_F32), 1); /* same numel, other shape */
    pd_scope_end(scope_tok);
    pd_state_dict_remove(src, "c");
    PT_CHECK(pd_state_dict_load(dst, src, 1, rep, sizeof rep) == PD_ERR_INVALID);
    PT_CHECK(!strcmp(rep, "state dict load (strict): 2 shape mismatch (\"a\", \"b\") [\"a\": file [3, 2], model [2, 3]]; "
                          "1 missing (\"c\"); 1 unexpected (\"extra.weight\"); nothing loaded"));
    PT_CHECK(sum_all(dst) == 0);
    /* a scalar is not a [1] */
    struct pd_state_dict *d1 = pd_state_dict_create(), *s1 = pd_state_dict_create();
    scope_tok = pd_scope_begin();
    pd_state_dict_add(d1, "x", pd_zeros((int64_t[]){1}, 1, PD_F32));
    pd_state_dict_add(s1, "x", pd_scalar(3, PD_F32));
    pd_scope_end(scope_tok);
    PT_CHECK(pd_state_dict_load(d1, s1, 0, NULL, 0) == PD_ERR_INVALID && strstr(pd_last_error(), "file [], model [1]"));
    pd_state_dict_destroy(d1);
    pd_state_dict_destroy(s1);

    /* long lists are cut after a few names, counts stay exact */
    struct pd_state_dict *big = pd_state_dict_create(), *empty = pd_state_dict_create();
    scope_tok = pd_scope_begin();
    for (int i = 0; i < 10; i++) {
        char name[32];
        snprintf(name, sizeof name, "layers.%d.w", i);
        pd_state_dict_add(big, name, pd_zeros((int64_t[]){2}, 1, PD_F32));
    }
    pd_scope_end(scope_tok);
    PT_CHECK(pd_state_dict_load(big, empty, 1, rep, sizeof rep) == PD_ERR_INVALID);
    PT_CHECK(!strcmp(rep, "state dict load (strict): 10 missing (\"layers.0.w\", \"layers.1.w\", \"layers.2.w\", \"layers.3.w\", "
                          "...); nothing loaded"));
    PT_CHECK(pd_state_dict_load(big, empty, 0, rep, sizeof rep) == PD_OK);
    PT_CHECK(strstr(rep, "loaded 0 tensors; skipped 10 missing (\"layers.0.w"));
    /* a tiny report buffer truncates safely */
    char tiny[8];
    PT_CHECK(pd_state_dict_load(big, empty, 1, tiny, sizeof tiny) == PD_ERR_INVALID && !strcmp(tiny, "state d"));
    pd_state_dict_destroy(big);
    pd_state_dict_destroy(empty);

    PT_CHECK(pd_state_dict_load(NULL, src, 1, rep, sizeof rep) == PD_ERR_NULL && rep[0] == 0);
    PT_CHECK(pd_state_dict_load(dst, NULL, 1, NULL, 0) == PD_ERR_NULL && strstr(pd_last_error(), "source"));
    pd_state_dict_destroy(dst);
    pd_state_dict_destroy(src);
}

/* The destination may be a view (e.g. a transposed or sliced parameter):
 * the load writes through it into the base. */
static void test_views(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *base = pd_zeros((int64_t[]){3, 4}, 2, PD_F32);
    struct pd_state_dict *dst = pd_state_dict_create(), *src = pd_state_dict_create();
    pd_state_dict_add(dst, "t", pd_transpose(base, 0, 1));          /* [4, 3] */
    pd_state_dict_add(dst, "col", pd_slice(base, 1, 1, 4, 2));      /* [3, 2] */
    pd_state_dict_add(src, "t", pd_reshape(vec(PD_F64, 12, 0), (int64_t[]){4, 3}, 2));
    pd_state_dict_add(src, "col", pd_full((int64_t[]){3, 2}, 2, -1, PD_F16));
    PT_CHECK(pd_state_dict_load(dst, src, 1, NULL, 0) == PD_OK);
    /* t[i][j] = 3i + j lands in base[j][i]; then columns 1 and 3 are -1 */
    PT_CHECK(pd_get(base, (int64_t[]){2, 0}) == 2 && pd_get(base, (int64_t[]){0, 2}) == 6);
    PT_CHECK(pd_get(base, (int64_t[]){1, 1}) == -1 && pd_get(base, (int64_t[]){2, 3}) == -1);
    pd_state_dict_destroy(dst);
    pd_state_dict_destroy(src);
    pd_scope_end(scope_tok);
}

static void test_files(void)
{
    char dir[] = "/tmp/pd_test_io_load_XXXXXX", path[128], rep[256];
    if (!mkdtemp(dir)) {
        PT_CHECK(0);
        return;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    struct pd_state_dict *src = source(), *dst = model();
    PT_CHECK(pd_state_dict_save_file(path, src) == PD_OK);
    PT_CHECK(pd_state_dict_load_file(dst, path, 1, rep, sizeof rep) == PD_OK);
    PT_CHECK(strstr(rep, "loaded 3 tensors") && sum_all(dst) == 21 + 48 + 201);
    /* a file that is not there: the report carries the reason */
    char missing[160];
    snprintf(missing, sizeof missing, "%s/none.safetensors", dir);
    PT_CHECK(pd_state_dict_load_file(dst, missing, 1, rep, sizeof rep) == PD_ERR_IO);
    PT_CHECK(strstr(rep, "cannot open") && strstr(rep, "none.safetensors"));
    PT_CHECK(pd_state_dict_load_file(NULL, path, 1, rep, sizeof rep) == PD_ERR_NULL);
    unlink(path);
    rmdir(dir);
    pd_state_dict_destroy(src);
    pd_state_dict_destroy(dst);
}

int main(void)
{
    int64_t live = pd_live_tensors();
    test_strict_ok();
    test_errors();
    test_views();
    test_files();
    PT_CHECK(pd_live_tensors() == live);
    PT_DONE();
}
