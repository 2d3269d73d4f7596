/* paddle.c — issue 12, files and untrusted input readers: one regression
 * test per bug (2, 7, 8, 14, 15, 17, 19) and the documented limits
 * (docs/reliability.md, "Files and limits").
 *
 * A FIFO must be refused, never waited on: alarm() kills the test when a
 * reader blocks, so a regression fails instead of hanging.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pd/data.h"
#include "pd/io.h"
#include "pd/nn.h"
#include "pd/profiler.h"
#include "pt.h"

static char dir[64];

static const char *tmp(const char *name) { return pt_path(dir, name); }

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int one_line(const char *s) { return s && !strchr(s, '\n') && !strchr(s, '\r'); }

/* ---- bug 2: parse errors report from the parse's own end pointer ---------- */
struct parse_arg {
    const char *marker;
    int bad;
};

static void *parse_loop(void *p)
{
    struct parse_arg *a = p;
    char json[64];
    for (int i = 0; i < 4000; i++) {
        /* a fresh heap copy each time: the old code kept a pointer into it */
        snprintf(json, sizeof json, "{\"dim\": %s%d", a->marker, i);
        char *text = strdup(json);
        struct pd_llama_config c;
        int st = pd_llama_config_from_json(&c, text);
        const char *e = pd_last_error();
        if (st == PD_OK || !strstr(e, a->marker)) a->bad++;
        free(text);
        snprintf(json, sizeof json, "{\"format\": %s%d", a->marker, i);
        text = strdup(json);
        struct pd_tokenizer *tok = pd_tokenizer_from_json(text);
        if (tok || !strstr(pd_last_error(), a->marker)) a->bad++;
        pd_tokenizer_destroy(tok);
        free(text);
    }
    return NULL;
}

static void test_bug2_parse_error_threads(void)
{
    /* deterministic part: the message names the byte offset of the error */
    struct pd_llama_config c;
    PT_CHECK(pd_llama_config_from_json(&c, "{\"dim\": @") == PD_ERR_INVALID);
    PT_CHECK(strstr(pd_last_error(), "at byte 8") && strstr(pd_last_error(), "\"@\""));
    PT_CHECK(pd_tokenizer_from_json("{\"format\": ]") == NULL && strstr(pd_last_error(), "at byte 11"));
    /* two threads: each message must quote its own text, never the other's */
    struct parse_arg a = {"@AAAA", 0}, b = {"#BBBB", 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, parse_loop, &a);
    pthread_create(&tb, NULL, parse_loop, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    if (a.bad || b.bad) printf("bug 2: %d and %d messages quoted the other thread's text\n", a.bad, b.bad);
    PT_CHECK(a.bad == 0 && b.bad == 0);
}

/* ---- bug 7: merged tokens longer than encode can produce ------------------ */
static void test_bug7_token_length(void)
{
    /* 30 merges that each join the last token with itself: 2^31 bytes */
    char json[2048];
    int k = snprintf(json, sizeof json, "{\"format\":\"paddlec-tokenizer\",\"version\":1,\"type\":\"bpe\",\"vocab_size\":286,"
                                        "\"merges\":[[97,97]");
    for (int r = 1; r < 30; r++) k += snprintf(json + k, sizeof json - (size_t)k, ",[%d,%d]", 255 + r, 255 + r);
    snprintf(json + k, sizeof json - (size_t)k, "]}");
    double t0 = cpu_s();
    struct pd_tokenizer *tok = pd_tokenizer_from_json(json);
    PT_CHECK(tok == NULL && strstr(pd_last_error(), "limit of 256") && one_line(pd_last_error()));
    PT_CHECK(cpu_s() - t0 < 1.0);
    pd_tokenizer_destroy(tok);
    /* the longest allowed token (256 bytes after 8 doublings) still loads */
    k = snprintf(json, sizeof json, "{\"format\":\"paddlec-tokenizer\",\"version\":1,\"type\":\"bpe\",\"vocab_size\":264,"
                                    "\"merges\":[[97,97]");
    for (int r = 1; r < 8; r++) k += snprintf(json + k, sizeof json - (size_t)k, ",[%d,%d]", 255 + r, 255 + r);
    snprintf(json + k, sizeof json - (size_t)k, "]}");
    tok = pd_tokenizer_from_json(json);
    size_t len = 0;
    PT_CHECK(tok && pd_tokenizer_token(tok, 263, &len) && len == 256);
    pd_tokenizer_destroy(tok);
}

/* ---- bug 8: 100k metadata keys / special tokens load in linear time ------- */
static void test_bug8_many_keys(void)
{
    enum { N = 100000 };
    size_t cap = (size_t)N * 24 + 256, k = 0;
    char *h = malloc(cap);
    k += (size_t)snprintf(h + k, cap - k, "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"__metadata__\":{");
    for (int i = 0; i < N; i++) k += (size_t)snprintf(h + k, cap - k, "%s\"k%d\":\"v\"", i ? "," : "", i);
    k += (size_t)snprintf(h + k, cap - k, "}}");
    size_t total = 8 + k + 4;
    unsigned char *file = calloc(1, total);
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)k >> (8 * i));
    memcpy(file + 8, h, k);
    write_file(tmp("many.safetensors"), file, total);
    double t0 = cpu_s();
    struct pd_safetensors_info *info = pd_safetensors_info(tmp("many.safetensors"));
    struct pd_state_dict *sd = pd_safetensors_load(tmp("many.safetensors"));
    double dt = cpu_s() - t0;
    PT_CHECK(info && info->n_meta == N && sd && pd_state_dict_meta_size(sd) == N);
    PT_CHECK(sd && !strcmp(pd_state_dict_get_meta(sd, "k99999"), "v"));
    if (dt >= 1.0) printf("bug 8: 100k metadata keys took %.2f s of CPU\n", dt);
    PT_CHECK(dt < 1.0);
    pd_safetensors_info_destroy(info);
    pd_state_dict_destroy(sd);
    free(file);

    /* 100k special tokens */
    cap = (size_t)N * 40 + 256;
    char *j = malloc(cap);
    k = (size_t)snprintf(j, cap, "{\"format\":\"paddlec-tokenizer\",\"version\":1,\"type\":\"bpe\",\"vocab_size\":%d,"
                                 "\"merges\":[],\"special\":[", 256 + N);
    for (int i = 0; i < N; i++)
        k += (size_t)snprintf(j + k, cap - k, "%s{\"id\":%d,\"text\":\"<s%d>\"}", i ? "," : "", 256 + i, i);
    snprintf(j + k, cap - k, "]}");
    t0 = cpu_s();
    struct pd_tokenizer *tok = pd_tokenizer_from_json(j);
    dt = cpu_s() - t0;
    PT_CHECK(tok && pd_tokenizer_vocab_size(tok) == 256 + N && pd_tokenizer_special_id(tok, "<s77777>") == 256 + 77777);
    PT_CHECK(tok && pd_tokenizer_special_id(tok, "<s100000>") == -1);
    if (dt >= 1.0) printf("bug 8: 100k special tokens took %.2f s of CPU\n", dt);
    PT_CHECK(dt < 1.0);
    PT_CHECK(tok && pd_tokenizer_add_special(tok, "<s5>") == PD_ERR_INVALID && strstr(pd_last_error(), "already"));
    pd_tokenizer_destroy(tok);
    free(j);
    free(h);
}

/* ---- bug 14: a FIFO (or any non-regular file) is refused, never waited on -- */
static void expect_refused(int ok, const char *who)
{
    int good = ok && strstr(pd_last_error(), "not a regular file") && one_line(pd_last_error());
    if (!good) printf("bug 14: %s: %s\n", who, pd_last_error());
    PT_CHECK(good);
}

static void test_bug14_fifo(void)
{
    const char *fifo = tmp("fifo");
    PT_CHECK(mkfifo(fifo, 0600) == 0);
    alarm(20); /* a blocking open would hang here: fail instead */
    expect_refused(pd_safetensors_info(fifo) == NULL, "safetensors_info");
    expect_refused(pd_safetensors_load(fifo) == NULL, "safetensors_load");
    expect_refused(pd_tokenizer_load(fifo) == NULL, "tokenizer_load");
    expect_refused(pd_text_dataset_open(fifo, NULL, 0.1) == NULL, "text_dataset_open");
    struct pd_md5_diff d;
    write_file(tmp("a.md5"), "", 0);
    expect_refused(pd_md5_diff(fifo, tmp("a.md5"), &d) < 0, "md5_diff a");
    expect_refused(pd_md5_diff(tmp("a.md5"), fifo, &d) < 0, "md5_diff b");
    expect_refused(pd_file_read(fifo, 1 << 20, NULL) == NULL, "file_read");
    expect_refused(pd_file_open(fifo, "r") == NULL, "file_open r");
    expect_refused(pd_file_open(fifo, "a") == NULL, "file_open a");
    struct pd_state_dict *dst = pd_state_dict_create();
    char rep[256];
    expect_refused(pd_state_dict_load_file(dst, fifo, 0, rep, sizeof rep) != PD_OK, "state_dict_load_file");
    pd_state_dict_destroy(dst);
    /* a device and a directory too */
    expect_refused(pd_file_read("/dev/zero", 1 << 20, NULL) == NULL, "file_read /dev/zero");
    expect_refused(pd_tokenizer_load(dir) == NULL, "tokenizer_load dir");
    alarm(0);
    unlink(fifo);
}

/* ---- bug 15: atomic saves; stale temporaries are removed ------------------- */
static int n_entries(const char *d, const char *part)
{
    DIR *dd = opendir(d);
    int n = 0;
    for (struct dirent *e; dd && (e = readdir(dd));)
        if (strstr(e->d_name, part)) n++;
    if (dd) closedir(dd);
    return n;
}

static long dead_pid(void)
{
    pid_t p = fork();
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0);
    return (long)p;
}

static void test_bug15_atomic(void)
{
    const char *path = tmp("tok.json");
    struct pd_tokenizer *tok = pd_tokenizer_byte_create();
    PT_CHECK(pd_tokenizer_save(tok, path) == PD_OK);
    FILE *f = fopen(path, "rb");
    char good[4096];
    size_t n_good = fread(good, 1, sizeof good, f);
    fclose(f);
    PT_CHECK(n_good > 0 && n_entries(dir, ".tmp.") == 0);
    /* a full disk (a file-size limit): the save fails and the good file stays */
    struct pd_tokenizer *big = pd_tokenizer_byte_create();
    for (int i = 0; i < 200; i++) {
        char s[32];
        snprintf(s, sizeof s, "<special-token-%d>", i);
        pd_tokenizer_add_special(big, s);
    }
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 1024;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &lim);
    int st = pd_tokenizer_save(big, path);
    setrlimit(RLIMIT_FSIZE, &old);
    PT_CHECK(st == PD_ERR_IO && strstr(pd_last_error(), "untouched") && one_line(pd_last_error()));
    char now[4096];
    f = fopen(path, "rb");
    size_t n_now = fread(now, 1, sizeof now, f);
    fclose(f);
    PT_CHECK(n_now == n_good && !memcmp(now, good, n_good));
    PT_CHECK(n_entries(dir, ".tmp.") == 0);
    struct pd_tokenizer *back = pd_tokenizer_load(path);
    PT_CHECK(back != NULL);
    pd_tokenizer_destroy(back);
    /* stale temporaries: a dead process's go, a live one's and other files stay */
    char stale[256], live[256], other[256];
    snprintf(stale, sizeof stale, "%s/ckpt.safetensors.tmp.%ld", dir, dead_pid());
    snprintf(live, sizeof live, "%s/x.safetensors.tmp.%ld", dir, (long)getppid());
    snprintf(other, sizeof other, "%s/notes.tmp.txt", dir);
    write_file(stale, "junk", 4);
    write_file(live, "busy", 4);
    write_file(other, "keep", 4);
    PT_CHECK(pd_tokenizer_save(tok, path) == PD_OK);
    PT_CHECK(access(stale, F_OK) != 0 && access(live, F_OK) == 0 && access(other, F_OK) == 0);
    unlink(live);
    unlink(other);
    /* every writer: safetensors, md5 dumps, profiler traces, pd_file_write */
    snprintf(stale, sizeof stale, "%s/y.tmp.%ld", dir, dead_pid());
    write_file(stale, "junk", 4);
    struct pd_state_dict *sd = pd_state_dict_create();
    PT_CHECK(pd_safetensors_save(tmp("s.safetensors"), sd) == PD_OK && access(stale, F_OK) != 0);
    pd_state_dict_destroy(sd);
    PT_CHECK(pd_md5_begin(tmp("run.md5"), PD_MD5_BITWISE, 0) == PD_OK);
    PT_CHECK(access(tmp("run.md5"), F_OK) != 0); /* not there until it is complete */
    PT_CHECK(pd_md5_end() == PD_OK && access(tmp("run.md5"), F_OK) == 0);
    PT_CHECK(pd_file_write(tmp("w.txt"), "hello", 5) == PD_OK);
    size_t len = 0;
    char *txt = pd_file_read(tmp("w.txt"), 100, &len);
    PT_CHECK(txt && len == 5 && !strcmp(txt, "hello"));
    free(txt);
    PT_CHECK(n_entries(dir, ".tmp.") == 0);
    /* only a regular file is replaced: a FIFO (like a device) is never renamed
     * over (a character device such as /dev/null is written in place) */
    const char *fifo = tmp("out.fifo");
    struct stat sb;
    PT_CHECK(mkfifo(fifo, 0600) == 0);
    alarm(20);
    PT_CHECK(pd_tokenizer_save(tok, fifo) == PD_ERR_IO && strstr(pd_last_error(), "not a regular file"));
    PT_CHECK(pd_file_write(fifo, "x", 1) == PD_ERR_IO);
    PT_CHECK(pd_md5_begin(fifo, PD_MD5_BITWISE, 0) == PD_ERR_IO);
    alarm(0);
    PT_CHECK(stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode) && n_entries(dir, ".tmp.") == 0);
    unlink(fifo);
    pd_tokenizer_destroy(big);
    pd_tokenizer_destroy(tok);
}

/* ---- bug 17: untrusted text in messages is quoted, escaped and cut ----------- */
static void test_bug17_quoting(void)
{
    char b[PD_QUOTE_BUF];
    PT_CHECK(!strcmp(pd_quote("a\nb\"c\\", b, sizeof b), "\"a\\nb\\\"c\\\\\""));
    PT_CHECK(!strcmp(pd_quote("\x1b[31m\x7f", b, sizeof b), "\"\\x1b[31m\\x7f\""));
    PT_CHECK(!strcmp(pd_quote("caf\xc3\xa9 \xff", b, sizeof b), "\"caf\xc3\xa9 \\xff\""));
    PT_CHECK(!strcmp(pd_quote("\xc2\x9b", b, sizeof b), "\"\\xc2\\x9b\"")); /* a C1 control (CSI) */
    PT_CHECK(!strcmp(pd_quote(NULL, b, sizeof b), "(null)"));
    char longs[300];
    memset(longs, '\n', sizeof longs - 1);
    longs[sizeof longs - 1] = 0;
    pd_quote(longs, b, sizeof b);
    PT_CHECK(strlen(b) < sizeof b && one_line(b) && strstr(b, "\"..."));
    char small[20];
    pd_quote("0123456789abcdefghijklmnop", small, sizeof small);
    PT_CHECK(strlen(small) < sizeof small && !strncmp(small, "\"0123456789", 11));
    /* random bytes, every buffer size: never overflows, always one line */
    unsigned x = 12345;
    int bad = 0;
    for (int it = 0; it < 20000; it++) {
        char in[160], out[PD_QUOTE_BUF + 8];
        int n = (int)((x = x * 1103515245u + 12345u) >> 16) % 159;
        for (int i = 0; i < n; i++) in[i] = (char)((x = x * 1103515245u + 12345u) >> 16);
        in[n] = 0;
        size_t cap = 16 + (size_t)(it % (PD_QUOTE_BUF - 15));
        memset(out, 'Z', sizeof out);
        pd_quote(in, out, cap);
        if (strlen(out) >= cap || out[cap] != 'Z' || !one_line(out)) bad++;
    }
    PT_CHECK(bad == 0);
    /* the readers' messages */
    struct pd_llama_config c;
    PT_CHECK(pd_llama_config_from_json(&c, "{\"evil\\nkey\\u001b\": 1}") == PD_ERR_INVALID &&
             one_line(pd_last_error()) && strstr(pd_last_error(), "\"evil\\nkey\\x1b\""));
    PT_CHECK(pd_tokenizer_from_json("{\"format\":\"paddlec-tokenizer\",\"version\":1,\"type\":\"bpe\",\"vocab_size\":257,"
                                    "\"special\":[{\"id\":300,\"text\":\"a\\nb\"}]}") == NULL &&
             one_line(pd_last_error()) && strstr(pd_last_error(), "\"a\\nb\""));
    PT_CHECK(pd_tokenizer_from_json("{\"format\":\n\n\n]") == NULL && one_line(pd_last_error()));
    struct pd_tokenizer *tok = pd_tokenizer_byte_create();
    PT_CHECK(pd_tokenizer_add_special(tok, "x\ny") > 0 && pd_tokenizer_add_special(tok, "x\ny") == PD_ERR_INVALID &&
             one_line(pd_last_error()));
    pd_tokenizer_destroy(tok);
    PT_CHECK(pd_tokenizer_load(tmp("no\nsuch\nfile")) == NULL && one_line(pd_last_error()) &&
             strstr(pd_last_error(), "no\\nsuch\\nfile"));
    PT_CHECK(pd_safetensors_load(tmp("bad\rname")) == NULL && one_line(pd_last_error()));
    PT_CHECK(pd_text_dataset_open(tmp("bad\nname"), NULL, 0.1) == NULL && one_line(pd_last_error()));
}

/* ---- bug 19: config doubles round-trip bit for bit ------------------------- */
static void test_bug19_roundtrip(void)
{
    struct pd_llama_config c, back;
    pd_llama_config_default(&c);
    volatile double a = 0.1, b = 0.2;
    c.norm_eps = a + b; /* 0.30000000000000004 */
    c.dropout = 1.0 / 3.0;
    c.init_std = 1e-300;
    c.rope_theta = 123456.78901234567;
    char *j = pd_llama_config_to_json(&c);
    PT_CHECK(j && pd_llama_config_from_json(&back, j) == PD_OK);
    PT_CHECK(back.norm_eps == c.norm_eps && back.dropout == c.dropout && back.init_std == c.init_std &&
             back.rope_theta == c.rope_theta);
    free(j);
    /* the usual values keep their short form (older checkpoints compare equal) */
    pd_llama_config_default(&c);
    c.dropout = 0.1;
    j = pd_llama_config_to_json(&c);
    PT_CHECK(j && strstr(j, "0.1,") && !strstr(j, "0.10000000000000001"));
    free(j);
}

/* ---- limits --------------------------------------------------------------- */
static void test_limits(void)
{
    /* tokenizer: vocab size, special-token length */
    PT_CHECK(pd_tokenizer_from_json("{\"format\":\"paddlec-tokenizer\",\"version\":1,\"type\":\"bpe\","
                                    "\"vocab_size\":2000000,\"merges\":[]}") == NULL &&
             strstr(pd_last_error(), "limit"));
    PT_CHECK(pd_tokenizer_from_json("{\"format\":\"paddlec-tokenizer\",\"version\":1,\"type\":\"bpe\","
                                    "\"vocab_size\":257,\"merges\":[[97,98],[98,99]]}") == NULL &&
             strstr(pd_last_error(), "more entries"));
    struct pd_tokenizer *tok = pd_tokenizer_byte_create();
    char s[PD_TOKENIZER_MAX_TOKEN_LEN + 2];
    memset(s, 'x', sizeof s - 1);
    s[sizeof s - 1] = 0;
    PT_CHECK(pd_tokenizer_add_special(tok, s) == PD_ERR_INVALID && strstr(pd_last_error(), "limit of 256"));
    s[PD_TOKENIZER_MAX_TOKEN_LEN] = 0;
    PT_CHECK(pd_tokenizer_add_special(tok, s) == 256);
    pd_tokenizer_destroy(tok);
    PT_CHECK(pd_bpe_train("ab", 2, PD_TOKENIZER_MAX_VOCAB + 1, NULL) == NULL);
    /* file sizes */
    write_file(tmp("ten.txt"), "0123456789", 10);
    size_t len;
    char *t = pd_file_read(tmp("ten.txt"), 9, &len);
    PT_CHECK(t == NULL && strstr(pd_last_error(), "limit of 9"));
    t = pd_file_read(tmp("ten.txt"), 10, &len);
    PT_CHECK(t && len == 10);
    free(t);
    /* safetensors: entries in a header */
    int n = PD_SAFETENSORS_MAX_KEYS + 1;
    size_t cap = (size_t)n * 16 + 64, k = 0;
    char *h = malloc(cap);
    k += (size_t)snprintf(h + k, cap - k, "{\"__metadata__\":{");
    for (int i = 0; i < n; i++) k += (size_t)snprintf(h + k, cap - k, "%s\"%x\":\"\"", i ? "," : "", i);
    k += (size_t)snprintf(h + k, cap - k, "}}");
    unsigned char *file = malloc(8 + k);
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)k >> (8 * i));
    memcpy(file + 8, h, k);
    write_file(tmp("keys.safetensors"), file, 8 + k);
    PT_CHECK(pd_safetensors_info(tmp("keys.safetensors")) == NULL && strstr(pd_last_error(), "limit of 1000000"));
    free(file);
    free(h);
    /* config sizes */
    struct pd_llama_config c;
    PT_CHECK(pd_llama_config_from_json(&c, "{\"dim\": 2000000}") == PD_ERR_INVALID && strstr(pd_last_error(), "[1, "));
}

int main(int argc, char **argv)
{
    /* argv[1], if given, runs one part (e.g. "bug14") */
    static const struct {
        const char *name;
        void (*fn)(void);
    } parts[] = {{"bug2", test_bug2_parse_error_threads}, {"bug7", test_bug7_token_length},
                 {"bug8", test_bug8_many_keys},            {"bug14", test_bug14_fifo},
                 {"bug15", test_bug15_atomic},             {"bug17", test_bug17_quoting},
                 {"bug19", test_bug19_roundtrip},          {"limits", test_limits}};
    snprintf(dir, sizeof dir, "/tmp/pd_test_hardening_files_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (argc < 2 || !strcmp(argv[1], parts[i].name)) parts[i].fn();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) printf("cannot remove %s\n", dir);
    printf("%d checks, %d failed\n", pt_checks, pt_fails);
    return pt_fails != 0;
}
