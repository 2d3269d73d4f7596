/* paddle.c — safetensors: loading the reference-layout fixture, round trips
 * of every dtype (0-d, zero-size, non-contiguous), header listing, tensor
 * statistics and atomic save (a failed save leaves the old file intact). */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pd/io.h"
#include "pt.h"

static char dir[64];
static char fixture[4096]; /* fixtures/io/reference.safetensors next to this file */

static const char *tmp(const char *name) { return pt_path(dir, name); }

static long file_bytes(const char *path, unsigned char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) n = -1;
    fclose(f);
    if (out) *out = b;
    else free(b);
    return n;
}

/* Entries of dir other than . and .. (temporary files must not linger). */
static int dir_entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* Two present tensors with bit-identical contents. */
static int equal_tensors(struct pd_tensor *a, struct pd_tensor *b) { return a && b && pt_same_bits(a, b); }

static void test_fixture(void)
{
    const char *path = fixture;
    struct pd_state_dict *sd = pd_safetensors_load(path);
    PT_CHECK(sd != NULL);
    if (!sd) return;
    /* data-offset order, as the reference writer laid it out */
    const char *order[] = {"f64", "i64", "empty", "i32", "layers.0.weight", "scalar",
                           "bf16", "f16", "i16", "i8", "mask", "u8"};
    PT_CHECK(pd_state_dict_size(sd) == 12);
    for (int i = 0; i < 12 && i < pd_state_dict_size(sd); i++) PT_CHECK(!strcmp(pd_state_dict_name(sd, i), order[i]));
    struct pd_tensor *w = pd_state_dict_get(sd, "layers.0.weight");
    PT_CHECK(w && pd_tensor_dtype(w) == PD_F32 && pd_tensor_ndim(w) == 2 && pd_tensor_dim(w, 0) == 2 &&
             pd_tensor_dim(w, 1) == 3);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 3; j++) PT_NEAR(pd_get(w, (int64_t[]){i, j}), (i * 3 + j) * 0.5 - 1, 0);
    struct pd_tensor *f64 = pd_state_dict_get(sd, "f64");
    for (int i = 0; i < 4; i++) PT_CHECK(pt_at(f64, i) == i / 3.0);
    struct pd_tensor *f16 = pd_state_dict_get(sd, "f16");
    PT_CHECK(pd_tensor_dtype(f16) == PD_F16);
    for (int i = 0; i < 5; i++) PT_CHECK(pt_at(f16, i) == i * 0.25 - 0.5);
    struct pd_tensor *bf = pd_state_dict_get(sd, "bf16");
    const double bfv[] = {1.0, -2.5, 3.140625, 1e-3, 65504.0};
    PT_CHECK(pd_tensor_dtype(bf) == PD_BF16);
    for (int i = 0; i < 5; i++) PT_CHECK(pt_at(bf, i) == pd_bf16_to_f32(pd_f64_to_bf16(bfv[i])));
    struct pd_tensor *i64 = pd_state_dict_get(sd, "i64");
    PT_CHECK(pd_tensor_dtype(i64) == PD_I64);
    const int64_t *pi = pd_tensor_data(i64);
    PT_CHECK(pi[0] == -(1ll << 40) && pi[1] == 7 && pi[2] == 0 && pi[3] == (1ll << 53));
    const int32_t *p32 = pd_tensor_data(pd_state_dict_get(sd, "i32"));
    PT_CHECK(p32[0] == -5 && p32[1] == 2147483647 && p32[2] == 3);
    struct pd_tensor *i16 = pd_state_dict_get(sd, "i16"), *i8 = pd_state_dict_get(sd, "i8");
    PT_CHECK(pt_at(i16, 0) == -300 && pt_at(i16, 1) == 300);
    PT_CHECK(pt_at(i8, 0) == -128 && pt_at(i8, 1) == 127 && pt_at(i8, 2) == 0);
    struct pd_tensor *u8 = pd_state_dict_get(sd, "u8");
    PT_CHECK(pd_tensor_dtype(u8) == PD_U8 && pt_at(u8, 1) == 255 && pt_at(u8, 2) == 9);
    struct pd_tensor *mask = pd_state_dict_get(sd, "mask");
    PT_CHECK(pd_tensor_dtype(mask) == PD_BOOL && pt_at(mask, 0) == 1 && pt_at(mask, 1) == 0 && pt_at(mask, 3) == 1);
    struct pd_tensor *sc = pd_state_dict_get(sd, "scalar");
    PT_CHECK(pd_tensor_ndim(sc) == 0 && pd_item(sc) == 2.75);
    struct pd_tensor *em = pd_state_dict_get(sd, "empty");
    PT_CHECK(pd_tensor_ndim(em) == 2 && pd_tensor_dim(em, 0) == 0 && pd_tensor_dim(em, 1) == 4);
    PT_CHECK(pd_state_dict_meta_size(sd) == 2);
    PT_CHECK(pd_state_dict_get_meta(sd, "format") && !strcmp(pd_state_dict_get_meta(sd, "format"), "pt"));

    /* listing gives the same without loading */
    struct pd_safetensors_info *info = pd_safetensors_info(path);
    PT_CHECK(info && info->n_tensors == 12 && info->n_meta == 2);
    if (info) {
        PT_CHECK(info->file_size == (uint64_t)file_bytes(path, NULL));
        PT_CHECK(info->header_len % 8 == 0);
        const struct pd_safetensors_entry *e = &info->tensors[4];
        PT_CHECK(!strcmp(e->name, "layers.0.weight") && e->dtype == PD_F32 && e->ndim == 2 && e->shape[1] == 3);
        PT_CHECK(e->end - e->begin == 24);
        uint64_t reach = 0;
        for (int i = 0; i < info->n_tensors; i++) {
            PT_CHECK(info->tensors[i].begin == reach); /* the fixture is packed */
            reach = info->tensors[i].end;
        }
        PT_CHECK(reach == info->file_size - 8 - info->header_len);
        PT_CHECK(!strcmp(info->meta_keys[1], "note"));
        PT_CHECK(!strcmp(pd_safetensors_dtype_name(info->tensors[0].dtype), "F64"));
    }
    pd_safetensors_info_destroy(info);
    pd_safetensors_info_destroy(NULL);

    /* saved again and reloaded: same tensors, same order */
    PT_CHECK(pd_safetensors_save(tmp("again.safetensors"), sd) == PD_OK);
    struct pd_state_dict *sd2 = pd_safetensors_load(tmp("again.safetensors"));
    PT_CHECK(sd2 && pd_state_dict_size(sd2) == 12);
    for (int i = 0; sd2 && i < 12; i++) {
        PT_CHECK(!strcmp(pd_state_dict_name(sd2, i), order[i]));
        PT_CHECK(equal_tensors(pd_state_dict_tensor(sd, i), pd_state_dict_tensor(sd2, i)));
    }
    pd_state_dict_destroy(sd2);
    pd_state_dict_destroy(sd);
}

/* Every dtype, 0-d and zero-size, odd names and metadata, non-contiguous
 * views; bytes are identical after a round trip, and saving is
 * deterministic. */
static void test_round_trip(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_state_dict *sd = pd_state_dict_create();
    const double vals[] = {0.0, -1.5, 3.25, 1e-8, -65504.0, 7.0, NAN, INFINITY};
    for (int dt = 0; dt < PD_DTYPE_COUNT; dt++) {
        char name[64];
        snprintf(name, sizeof name, "vec.%s", pd_dtype_name((enum pd_dtype)dt));
        PT_CHECK(pd_state_dict_add(sd, name, pt_vec((enum pd_dtype)dt, dt == PD_BOOL ? 2 : 6, vals)) == 0);
        snprintf(name, sizeof name, "scalar.%s", pd_dtype_name((enum pd_dtype)dt));
        PT_CHECK(pd_state_dict_add(sd, name, pd_scalar(dt == PD_BOOL ? 1 : -3, (enum pd_dtype)dt)) == 0);
        snprintf(name, sizeof name, "empty.%s", pd_dtype_name((enum pd_dtype)dt));
        PT_CHECK(pd_state_dict_add(sd, name, pd_zeros((int64_t[]){3, 0, 2}, 3, (enum pd_dtype)dt)) == 0);
    }
    PT_CHECK(pd_state_dict_add(sd, "nan.inf.bf16", pt_vec(PD_BF16, 8, vals)) == 0);
    PT_CHECK(pd_state_dict_add(sd, "nan.inf.f16", pt_vec(PD_F16, 8, vals)) == 0);
    /* non-contiguous: transpose, stepped slice, expand (stride 0), offset view */
    struct pd_tensor *base = pd_randn((int64_t[]){4, 6}, 2, PD_F32, NULL);
    struct pd_tensor *tr = pd_transpose(base, 0, 1);
    struct pd_tensor *sl = pd_slice(pd_slice(base, 1, 1, 6, 2), 0, 1, 4, 1);
    struct pd_tensor *ex = pd_expand(pd_reshape(pd_arange(0, 3, 1, PD_I64), (int64_t[]){3, 1}, 2),
                                     (int64_t[]){3, 5}, 2);
    struct pd_tensor *bft = pd_transpose(pd_cast(base, PD_BF16), 0, 1);
    PT_CHECK(!pd_tensor_is_contiguous(tr) && !pd_tensor_is_contiguous(sl) && !pd_tensor_is_contiguous(ex));
    pd_state_dict_add(sd, "view.transpose", tr);
    pd_state_dict_add(sd, "view.slice", sl);
    pd_state_dict_add(sd, "view.expand", ex);
    pd_state_dict_add(sd, "view.bf16.t", bft);
    pd_state_dict_add(sd, "weird \"name\"\\ with \xc3\xa9 and\ttab", pd_ones((int64_t[]){1}, 1, PD_F32));
    pd_state_dict_set_meta(sd, "step", "1234");
    pd_state_dict_set_meta(sd, "config", "{\"dim\": 288, \"quote\": \"\\\"\"}");
    pd_state_dict_set_meta(sd, "empty", "");

    const char *p = tmp("rt.safetensors");
    PT_CHECK(pd_safetensors_save(p, sd) == PD_OK);
    int64_t before = pd_live_tensors();
    struct pd_state_dict *back = pd_safetensors_load(p);
    PT_CHECK(back != NULL);
    PT_CHECK(pd_state_dict_size(back) == pd_state_dict_size(sd));
    for (int i = 0; back && i < pd_state_dict_size(sd); i++) {
        PT_CHECK(!strcmp(pd_state_dict_name(sd, i), pd_state_dict_name(back, i)));
        struct pd_tensor *t = pd_state_dict_tensor(back, i);
        /* (a fresh zero-size tensor reports non-contiguous: core quirk, reported) */
        PT_CHECK(pd_tensor_is_contiguous(t) || pd_tensor_numel(t) == 0);
        if (!equal_tensors(pd_state_dict_tensor(sd, i), t)) {
            printf("round trip differs: %s\n", pd_state_dict_name(sd, i));
            PT_CHECK(0);
        }
    }
    PT_CHECK(pd_state_dict_meta_size(back) == 3);
    PT_CHECK(!strcmp(pd_state_dict_get_meta(back, "config"), "{\"dim\": 288, \"quote\": \"\\\"\"}"));
    PT_CHECK(!strcmp(pd_state_dict_get_meta(back, "empty"), ""));
    /* values of a view, checked element by element */
    struct pd_tensor *sl2 = pd_state_dict_get(back, "view.slice");
    PT_CHECK(pd_tensor_dim(sl2, 0) == 3 && pd_tensor_dim(sl2, 1) == 3);
    PT_CHECK(pd_get(sl2, (int64_t[]){2, 1}) == pd_get(base, (int64_t[]){3, 3}));
    PT_CHECK(pd_get(pd_state_dict_get(back, "view.expand"), (int64_t[]){2, 4}) == 2);
    /* NaN and Inf survive in the half types */
    struct pd_tensor *nb = pd_state_dict_get(back, "nan.inf.bf16");
    PT_CHECK(isnan(pt_at(nb, 6)) && isinf(pt_at(nb, 7)));
    /* the loaded dict owns its tensors: no scope holds them */
    PT_CHECK(pd_live_tensors() == before + pd_state_dict_size(back));
    pd_state_dict_destroy(back);
    PT_CHECK(pd_live_tensors() == before);

    /* deterministic bytes; header padded to 8 with spaces */
    unsigned char *a, *b;
    long na = file_bytes(p, &a);
    PT_CHECK(pd_safetensors_save(tmp("rt2.safetensors"), sd) == PD_OK);
    long nb2 = file_bytes(tmp("rt2.safetensors"), &b);
    PT_CHECK(na > 8 && na == nb2 && !memcmp(a, b, (size_t)na));
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | a[i];
    PT_CHECK(hl % 8 == 0 && a[8] == '{' && a[8 + hl - 1] == ' ');
    free(a);
    free(b);
    unlink(tmp("rt2.safetensors"));

    /* an empty dict is a valid file too */
    struct pd_state_dict *none = pd_state_dict_create();
    PT_CHECK(pd_safetensors_save(tmp("none.safetensors"), none) == PD_OK);
    struct pd_state_dict *none2 = pd_safetensors_load(tmp("none.safetensors"));
    PT_CHECK(none2 && pd_state_dict_size(none2) == 0 && file_bytes(tmp("none.safetensors"), NULL) == 16);
    pd_state_dict_destroy(none);
    pd_state_dict_destroy(none2);
    unlink(tmp("none.safetensors"));
    pd_state_dict_destroy(sd);
    pd_scope_end(scope_tok);
}

static void test_stats(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor_stats s;
    const double v[] = {1, 2, 3, 4, NAN, INFINITY, -INFINITY, -10};
    PT_CHECK(pd_tensor_stats(pt_vec(PD_F32, 8, v), &s) == PD_OK);
    PT_CHECK(s.numel == 8 && s.n_nan == 1 && s.n_inf == 2);
    PT_CHECK(s.min == -10 && s.max == 4);
    PT_NEAR(s.mean, 0, 1e-12);
    PT_NEAR(s.std, sqrt((1 + 4 + 9 + 16 + 100) / 5.0), 1e-12);
    /* large, strided, low precision: compared with a two-pass f64 reference */
    struct pd_tensor *x = pd_add(pd_scale(pd_randn((int64_t[]){300, 500}, 2, PD_F64, NULL), 3.0),
                                 pd_scalar(1e4, PD_F64));
    struct pd_tensor *xt = pd_transpose(x, 0, 1);
    double *buf = malloc(300 * 500 * sizeof *buf);
    pd_to_buffer(xt, buf, PD_F64);
    double m = 0, q = 0, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < 150000; i++) m += buf[i], lo = fmin(lo, buf[i]), hi = fmax(hi, buf[i]);
    m /= 150000;
    for (int i = 0; i < 150000; i++) q += (buf[i] - m) * (buf[i] - m);
    free(buf);
    PT_CHECK(pd_tensor_stats(xt, &s) == PD_OK);
    PT_NEAR(s.mean, m, 1e-12);
    PT_NEAR(s.std, sqrt(q / 150000), 1e-10);
    PT_CHECK(s.min == lo && s.max == hi && s.n_nan == 0);
    PT_CHECK(pd_tensor_stats(pd_cast(xt, PD_BF16), &s) == PD_OK);
    PT_NEAR(s.mean, m, 1e-2);
    /* empty and all-NaN: NaN statistics, counts still right */
    PT_CHECK(pd_tensor_stats(pd_zeros((int64_t[]){0}, 1, PD_F32), &s) == PD_OK);
    PT_CHECK(s.numel == 0 && isnan(s.mean) && isnan(s.min));
    PT_CHECK(pd_tensor_stats(pd_full((int64_t[]){3}, 1, NAN, PD_F16), &s) == PD_OK);
    PT_CHECK(s.n_nan == 3 && isnan(s.std));
    PT_CHECK(pd_tensor_stats(pd_scalar(-2, PD_I8), &s) == PD_OK && s.min == -2 && s.std == 0);
    PT_CHECK(pd_tensor_stats(NULL, &s) == PD_ERR_NULL);
    PT_CHECK(pd_tensor_stats(pd_scalar(1, PD_F32), NULL) < 0);
    pd_scope_end(scope_tok);
}

/* A failed save leaves the existing file byte-for-byte and no temp file. */
static void test_atomic_save(void)
{
    int scope_tok = pd_scope_begin();
    const char *p = tmp("keep.safetensors");
    struct pd_state_dict *good = pd_state_dict_create();
    pd_state_dict_add(good, "w", pd_arange(0, 10, 1, PD_F32));
    PT_CHECK(pd_safetensors_save(p, good) == PD_OK);
    unsigned char *orig;
    long n0 = file_bytes(p, &orig);
    int entries = dir_entries();

    /* rejected before writing: a reserved name, bad UTF-8 in a name */
    struct pd_state_dict *bad = pd_state_dict_create();
    pd_state_dict_add(bad, "w", pd_ones((int64_t[]){1000}, 1, PD_F32));
    pd_state_dict_add(bad, "__metadata__", pd_ones((int64_t[]){1}, 1, PD_F32));
    PT_CHECK(pd_safetensors_save(p, bad) == PD_ERR_INVALID);
    PT_CHECK(strstr(pd_last_error(), "__metadata__") && strstr(pd_last_error(), "reserved"));
    pd_state_dict_remove(bad, "__metadata__");
    pd_state_dict_add(bad, "bad\xff", pd_ones((int64_t[]){1}, 1, PD_F32));
    PT_CHECK(pd_safetensors_save(p, bad) == PD_ERR_INVALID && strstr(pd_last_error(), "UTF-8"));
    pd_state_dict_remove(bad, "bad\xff");
    pd_state_dict_set_meta(bad, "k", "v\xc3");
    PT_CHECK(pd_safetensors_save(p, bad) == PD_ERR_INVALID && strstr(pd_last_error(), "metadata \"k\""));
    pd_state_dict_set_meta(bad, "k", "v");

    /* disk full, simulated with a file-size limit: the write fails midway */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1024;
    signal(SIGXFSZ, SIG_IGN);
    PT_CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    int st = pd_safetensors_save(p, bad);
    setrlimit(RLIMIT_FSIZE, &old);
    PT_CHECK(st == PD_ERR_IO && strstr(pd_last_error(), "write failed") && strstr(pd_last_error(), "untouched"));

    /* an unwritable destination: a directory that does not exist */
    PT_CHECK(pd_safetensors_save(tmp("no/such/dir/x.safetensors"), bad) == PD_ERR_IO);
    PT_CHECK(strstr(pd_last_error(), "cannot create"));
    /* a read-only directory (only meaningful when not running as root) */
    if (geteuid() != 0) {
        mkdir(tmp("ro"), 0755);
        PT_CHECK(pd_safetensors_save(tmp("ro/x.safetensors"), good) == PD_OK);
        chmod(tmp("ro"), 0555);
        PT_CHECK(pd_safetensors_save(tmp("ro/x.safetensors"), bad) == PD_ERR_IO);
        chmod(tmp("ro"), 0755);
        struct pd_state_dict *k = pd_safetensors_load(tmp("ro/x.safetensors"));
        PT_CHECK(k && pd_tensor_numel(pd_state_dict_get(k, "w")) == 10);
        pd_state_dict_destroy(k);
        unlink(tmp("ro/x.safetensors"));
        rmdir(tmp("ro"));
    }
    PT_CHECK(pd_safetensors_save(NULL, good) == PD_ERR_INVALID);
    PT_CHECK(pd_safetensors_save(p, NULL) == PD_ERR_NULL);

    unsigned char *now;
    long n1 = file_bytes(p, &now);
    PT_CHECK(n1 == n0 && !memcmp(now, orig, (size_t)n0));
    PT_CHECK(dir_entries() == entries); /* no temp file left behind */
    free(now);
    free(orig);

    /* and a successful save replaces it */
    PT_CHECK(pd_safetensors_save(p, bad) == PD_OK);
    struct pd_state_dict *r = pd_safetensors_load(p);
    PT_CHECK(r && pd_tensor_numel(pd_state_dict_get(r, "w")) == 1000 && !strcmp(pd_state_dict_get_meta(r, "k"), "v"));
    PT_CHECK(dir_entries() == entries);
    pd_state_dict_destroy(r);
    pd_state_dict_destroy(bad);
    pd_state_dict_destroy(good);
    pd_scope_end(scope_tok);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/pd_test_io_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    PT_FIXTURE(fixture, "fixtures/io/reference.safetensors");
    test_fixture();
    test_round_trip();
    test_stats();
    test_atomic_save();
    /* doubles as the library writes them in JSON: the shortest exact form */
    char db[PD_DOUBLE_BUF];
    const double xs[] = {0.1, 3e-4, 1.0 / 3, 0.1 + 0.2, 5e-324, -1.7976931348623157e308, 500000, 1e-6};
    for (size_t k = 0; k < sizeof xs / sizeof *xs; k++)
        PT_CHECK(pd_format_double(xs[k], db, sizeof db) == db && strtod(db, NULL) == xs[k] && strlen(db) <= 24);
    PT_CHECK(!strcmp(pd_format_double(0.1, db, sizeof db), "0.1") && !strcmp(pd_format_double(1.0 / 0.0, db, sizeof db), "null"));
    PT_CHECK(!strcmp(pd_format_double(0.1 + 0.2, db, sizeof db), "0.30000000000000004"));
    PT_CHECK(pd_format_double(1.0, db, 8) == NULL && strstr(pd_last_error(), "format_double: a buffer of 32 bytes"));
    /* loading errors on files that are not there or not files */
    PT_CHECK(pd_safetensors_load(tmp("missing.safetensors")) == NULL && strstr(pd_last_error(), "cannot open"));
    PT_CHECK(pd_safetensors_load(dir) == NULL && strstr(pd_last_error(), "not a regular file"));
    PT_CHECK(pd_safetensors_load(NULL) == NULL);
    PT_CHECK(pd_safetensors_info(NULL) == NULL);
    unlink(tmp("again.safetensors"));
    unlink(tmp("rt.safetensors"));
    unlink(tmp("keep.safetensors"));
    PT_CHECK(dir_entries() == 0);
    rmdir(dir);
    PT_DONE();
}
