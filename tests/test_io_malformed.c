/* paddle.c — safetensors files as untrusted input: each malformed header is
 * rejected with the expected one-line error (by pd_safetensors_load and
 * pd_safetensors_info alike), nothing leaks, and a fuzz loop of 2000 random
 * corruptions of a valid file never crashes (run it under -DPD_SANITIZE=ON). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pd/io.h"
#include "pt.h"

static char dir[64], path[128];

/* Writes an 8-byte length (hlen, or the header's length when hlen < 0), the
 * header and n data bytes. */
static void mk(const char *header, int64_t hlen, const void *data, size_t n)
{
    unlink(path); /* a new file: ext4 flushes a file truncated and rewritten */
    FILE *f = fopen(path, "wb");
    uint64_t len = hlen == -1 ? strlen(header) : (uint64_t)hlen;
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(len >> (8 * i));
    fwrite(b, 1, 8, f);
    fwrite(header, 1, strlen(header), f);
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

static void write_raw(const void *p, size_t n)
{
    unlink(path);
    FILE *f = fopen(path, "wb");
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

/* Both readers must fail with a message containing want (and the file name). */
static void expect_error(const char *want, int line)
{
    int64_t live = pd_live_tensors();
    struct pd_state_dict *sd = pd_safetensors_load(path);
    int ok = !sd && strstr(pd_last_error(), want) && strstr(pd_last_error(), "bad.safetensors") &&
             !strchr(pd_last_error(), '\n');
    if (!ok) printf("line %d: load: want '%s', got '%s'\n", line, want, sd ? "(loaded)" : pd_last_error());
    PT_CHECK(ok);
    pd_state_dict_destroy(sd);
    struct pd_safetensors_info *info = pd_safetensors_info(path);
    /* listing reads the header only: data checks (bool values) pass there */
    ok = !strcmp(want, "bool element") ? info != NULL : !info && strstr(pd_last_error(), want);
    if (!ok) printf("line %d: info: want '%s', got '%s'\n", line, want, info ? "(listed)" : pd_last_error());
    PT_CHECK(ok);
    pd_safetensors_info_destroy(info);
    PT_CHECK(pd_live_tensors() == live);
}
#define EXPECT(want) expect_error(want, __LINE__)

static void test_malformed(void)
{
    const float f[4] = {1, 2, 3, 4};
    write_raw("", 0);
    EXPECT("too short");
    write_raw("\x10\0\0\0\0", 5);
    EXPECT("too short");
    mk("{}", 1000, NULL, 0);
    EXPECT("beyond the end of the file");
    mk("{}", 1ll << 40, NULL, 0);
    EXPECT("exceeds the limit");
    mk("{}", -2, NULL, 0); /* 0xffff...fe */
    EXPECT("header length");
    mk("{\"a\": {", -1, NULL, 0);
    EXPECT("not valid JSON");
    mk("[1, 2]", -1, NULL, 0);
    EXPECT("not a JSON object");
    mk("\"x\"", -1, NULL, 0);
    EXPECT("not a JSON object");
    mk("{\"\xff\": 1}", -1, NULL, 0);
    EXPECT("not valid UTF-8");
    mk("{\"\xc0\xaf\": 1}", -1, NULL, 0); /* overlong '/' */
    EXPECT("not valid UTF-8");
    mk("{} x", -1, NULL, 0);
    EXPECT("trailing bytes");
    {   /* a NUL inside the header */
        char h[] = "{}  ";
        h[2] = 0;
        FILE *fp = fopen(path, "wb");
        fwrite("\x04\0\0\0\0\0\0\0", 1, 8, fp);
        fwrite(h, 1, 4, fp);
        fclose(fp);
        EXPECT("not valid UTF-8");
    }
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", -1, f, 8);
    EXPECT("outside the data section");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", -1, f, 16);
    EXPECT("overlap");
    mk("{\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", -1, f, 16);
    EXPECT("\"b\" and \"a\" overlap");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", -1, f, 16);
    EXPECT("tensor \"a\": data_offsets [0, 8] hold 8 bytes but F32 [3] needs 12");
    mk("{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[3],\"data_offsets\":[0,3]}}", -1, f, 16);
    EXPECT("unsupported dtype \"F8_E4M3\"");
    mk("{\"a\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("unsupported dtype \"U32\"");
    mk("{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("unsupported dtype \"f32\"");
    mk("{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("dtype is not a string");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", -1, f, 16);
    EXPECT("tensor \"a\": duplicate name");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"\\u0061\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", -1, f, 16);
    EXPECT("duplicate name"); /* the same name once the escape is decoded */
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("shape[0] is not a non-negative integer");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("shape[0] is not a non-negative integer");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("shape[0] is not a non-negative integer");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("shape[0] is not a non-negative integer");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,0]}}", -1, f, 16);
    EXPECT("overflow");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[0,4503599627370495,4503599627370495],\"data_offsets\":[0,0]}}", -1, f,
       16);
    EXPECT("overflow"); /* numel 0, but the strides would overflow */
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("rank 9 exceeds the maximum 8");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":7,\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("shape is not an array");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", -1, f, 16);
    EXPECT("begin > end");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", -1, f, 16);
    EXPECT("data_offsets is not [begin, end]");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", -1, f, 16);
    EXPECT("data_offsets is not [begin, end]");
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", -1, f, 16);
    EXPECT("missing \"data_offsets\"");
    mk("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("missing \"dtype\"");
    mk("{\"a\":3}", -1, f, 16);
    EXPECT("tensor \"a\": entry is not a JSON object");
    mk("{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("empty name");
    mk("{\"__metadata__\":{\"a\":1}}", -1, NULL, 0);
    EXPECT("metadata \"a\": value is not a string");
    mk("{\"__metadata__\":{\"a\":\"x\",\"a\":\"y\"}}", -1, NULL, 0);
    EXPECT("metadata \"a\": duplicate key");
    mk("{\"__metadata__\":[\"a\"]}", -1, NULL, 0);
    EXPECT("\"__metadata__\" is not a JSON object");
    mk("{\"__metadata__\":{},\"__metadata__\":{}}", -1, NULL, 0);
    EXPECT("duplicate name");
    /* control bytes in a name do not break the one-line message */
    mk("{\"bad\\nname\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,4]}}", -1, f, 16);
    EXPECT("tensor \"bad\\nname\"");
    /* data checks: a bool byte that is not 0 or 1; earlier tensors are freed */
    mk("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"m\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[8,10]}}", -1, "\0\0\0\0\0\0\0\0\1\2", 10);
    EXPECT("bool element");

    /* accepted: padding spaces, unknown extra fields, gaps, empty tensors sharing an offset */
    mk("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8],\"extra\":1},"
       "\"e\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[4,4]}}    ", -1, f, 12);
    struct pd_state_dict *sd = pd_safetensors_load(path);
    PT_CHECK(sd && pd_state_dict_size(sd) == 2 && pt_at(pd_state_dict_get(sd, "a"), 0) == 2);
    PT_CHECK(sd && !strcmp(pd_state_dict_name(sd, 0), "e")); /* [4,4] sorts before [4,8] */
    pd_state_dict_destroy(sd);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* 2000 corruptions of a valid file (PD_IO_FUZZ_ITERS=N for more): must load
 * or fail cleanly, never crash. */
static void test_fuzz(void)
{
    const char *env = getenv("PD_IO_FUZZ_ITERS");
    int iters = env && atoi(env) > 0 ? atoi(env) : 2000;
    int scope_tok = pd_scope_begin();
    struct pd_state_dict *sd = pd_state_dict_create();
    pd_state_dict_add(sd, "w", pd_randn((int64_t[]){3, 5}, 2, PD_F32, NULL));
    pd_state_dict_add(sd, "b.bf16", pd_ones((int64_t[]){4}, 1, PD_BF16));
    pd_state_dict_add(sd, "ids", pd_arange(0, 6, 1, PD_I64));
    pd_state_dict_add(sd, "m", pd_ones((int64_t[]){3}, 1, PD_BOOL));
    pd_state_dict_add(sd, "s", pd_scalar(1, PD_F16));
    pd_state_dict_add(sd, "z", pd_zeros((int64_t[]){0, 2}, 2, PD_I8));
    pd_state_dict_set_meta(sd, "step", "42");
    PT_CHECK(pd_safetensors_save(path, sd) == PD_OK);
    pd_state_dict_destroy(sd);
    pd_scope_end(scope_tok);
    FILE *f = fopen(path, "rb");
    unsigned char good[4096], buf[4096];
    size_t n = fread(good, 1, sizeof good, f);
    fclose(f);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | good[i];
    int loaded = 0, failed = 0;
    int64_t live = pd_live_tensors();
    for (int it = 0; it < iters; it++) {
        memcpy(buf, good, n);
        size_t m = n;
        int kind = (int)(next() % 4);
        if (kind == 0) m = next() % n; /* truncate */
        else if (kind == 3) buf[next() % 8] = (unsigned char)next(); /* header length */
        else {
            int flips = 1 + (int)(next() % 4);
            for (int k = 0; k < flips; k++) {
                /* mostly in the JSON, where structure lives */
                size_t at = kind == 1 ? 8 + next() % hl : next() % n;
                buf[at] = next() % 2 ? (unsigned char)next() : buf[at] ^ (unsigned char)(1u << (next() % 8));
            }
        }
        write_raw(buf, m);
        struct pd_state_dict *r = pd_safetensors_load(path);
        if (r) {
            loaded++;
            /* whatever loaded is self-consistent */
            for (int i = 0; i < pd_state_dict_size(r); i++) {
                struct pd_tensor *t = pd_state_dict_tensor(r, i);
                PT_CHECK(pd_tensor_numel(t) >= 0 && pd_tensor_ndim(t) <= PD_MAX_DIMS);
                struct pd_tensor_stats s;
                PT_CHECK(pd_tensor_stats(t, &s) == PD_OK && s.numel == pd_tensor_numel(t));
            }
        } else {
            failed++;
            PT_CHECK(strlen(pd_last_error()) > 0 && !strchr(pd_last_error(), '\n'));
        }
        pd_state_dict_destroy(r);
        pd_safetensors_info_destroy(pd_safetensors_info(path));
    }
    PT_CHECK(pd_live_tensors() == live);
    PT_CHECK(failed > iters / 2 && loaded > 0); /* the loop did reach both outcomes */
    printf("fuzz: %d corrupted files loaded, %d rejected\n", loaded, failed);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/pd_test_io_bad_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    test_malformed();
    test_fuzz();
    unlink(path);
    rmdir(dir);
    PT_DONE();
}
