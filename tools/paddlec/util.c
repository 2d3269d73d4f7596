/* paddle.c — paddlec: option parsing, fatal errors, progress and metrics.
 *
 * Invariants: an option value is accepted only when the whole text parses
 * and lies in the option's range (strtol/strtod with end-pointer checks), so
 * "--steps 10x" or "--lr nan" fail with one line instead of running with a
 * surprise value. Nothing here touches files other than the metrics file.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "pd/optim.h"

const char *cli_cmd = "";
jmp_buf *cli_parse_only;

const char *cli_q(const char *s)
{
    static char buf[4][PD_QUOTE_BUF];
    static int next;
    next = (next + 1) % 4;
    return pd_quote(s, buf[next], sizeof buf[next]);
}

/* The message goes out on one line whatever it holds: s is appended to buf
 * (cap bytes, *len used) with any control byte left (a value the caller did
 * not quote) written as \xNN; cut at the end of buf. */
static void put_escaped(char *buf, size_t cap, size_t *len, const char *s)
{
    for (; *s && *len + 5 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f) *len += (size_t)snprintf(buf + *len, cap - *len, "\\x%02x", c);
        else buf[(*len)++] = (char)c;
    }
    buf[*len] = 0;
}

/* ---- what an exit frees ----------------------------------------------------
 * One stack of everything the running command owns: objects with their
 * destructor, and open pd scopes (fn NULL, tok their token). */
#define MAX_HELD 64
static struct held {
    void *p;
    void (*fn)(void *);
    int tok;
} held[MAX_HELD];
static int n_held;

static void push_held(struct held h)
{
    if (n_held == MAX_HELD) {   /* a bug in this program, not in its input */
        if (h.fn) h.fn(h.p);
        else pd_scope_end(h.tok);
        cli_fail(CLI_EXIT_FAIL, "internal error: more than %d objects held", MAX_HELD);
    }
    held[n_held++] = h;
}

void *cli_hold(void *p, void (*fn)(void *))
{
    if (p) push_held((struct held){p, fn, 0});
    return p;
}

/* Forgets p (newest entry first); returns its destructor, NULL when not held. */
static void (*unhold(const void *p))(void *)
{
    for (int i = n_held - 1; i >= 0; i--)
        if (held[i].fn && held[i].p == p) {
            void (*fn)(void *) = held[i].fn;
            memmove(&held[i], &held[i + 1], sizeof *held * (size_t)(n_held - i - 1));
            n_held--;
            return fn;
        }
    return NULL;
}

void cli_drop(const void *p)
{
    if (p) unhold(p);
}

void cli_free(void *p)
{
    void (*fn)(void *) = p ? unhold(p) : NULL;
    if (fn) fn(p);
}

int cli_scope_begin(void)
{
    int tok = pd_scope_begin();
    if (tok < 0) cli_fail_pd("cannot open a scope");
    push_held((struct held){NULL, NULL, tok});
    return tok;
}

void cli_scope_end(int tok)
{
    for (int i = n_held - 1; i >= 0; i--)
        if (!held[i].fn && held[i].tok == tok) {
            memmove(&held[i], &held[i + 1], sizeof *held * (size_t)(n_held - i - 1));
            n_held--;
            break;
        }
    pd_scope_end(tok);
}

void cli_free_all(void)
{
    while (n_held > 0) {
        struct held h = held[--n_held];   /* popped first: a destructor never runs twice */
        if (h.fn) h.fn(h.p);
        else pd_scope_end(h.tok);
    }
}

void cli_exit(int code)
{
    cli_free_all();
    if (cli_parse_only) longjmp(*cli_parse_only, CLI_EXITED + code);   /* back to the fuzz target (cli.h) */
    /* PADDLEC_LEAK_CHECK=1 (tests/test_cli.sh): no tensor and no scope of the
     * library may outlive the command, whatever the exit; a failure is one
     * more line on stderr, which the tests count. */
    const char *check = getenv("PADDLEC_LEAK_CHECK");
    if (check && !strcmp(check, "1") && (pd_live_tensors() || pd_scope_depth())) {
        fprintf(stderr, "paddlec: internal error: %lld tensors and %d scopes left at exit\n",
                (long long)pd_live_tensors(), pd_scope_depth());
        if (!code) code = CLI_EXIT_FAIL;
    }
    exit(code);
}

#define CLI_DTOR(name, type, fn) \
    void name(void *p) { fn((type *)p); }
CLI_DTOR(cli_dtor_state_dict, struct pd_state_dict, pd_state_dict_destroy)
CLI_DTOR(cli_dtor_llama, struct pd_llama, pd_llama_destroy)
CLI_DTOR(cli_dtor_tokenizer, struct pd_tokenizer, pd_tokenizer_destroy)
CLI_DTOR(cli_dtor_dataset, struct pd_text_dataset, pd_text_dataset_destroy)
CLI_DTOR(cli_dtor_generator, struct pd_generator, pd_generator_destroy)
CLI_DTOR(cli_dtor_generation, struct pd_generation, pd_generation_destroy)
CLI_DTOR(cli_dtor_json, cJSON, cJSON_Delete)
CLI_DTOR(cli_dtor_st_info, struct pd_safetensors_info, pd_safetensors_info_destroy)
CLI_DTOR(cli_dtor_optimizer, struct pd_optimizer, pd_optimizer_destroy)
CLI_DTOR(cli_dtor_arith_task, struct pd_arith_task, pd_arith_task_destroy)
CLI_DTOR(cli_dtor_dataset_iter, struct pd_dataset_iter, pd_dataset_iter_destroy)
void cli_dtor_file(void *p) { fclose((FILE *)p); }

static void vfail(int code, const char *fmt, va_list ap, const char *tail) __attribute__((noreturn));
static void vfail(int code, const char *fmt, va_list ap, const char *tail)
{
    /* the whole line in one write: stderr is unbuffered, and under mpirun
     * every rank's error goes to the same stream (a character at a time,
     * two ranks' identical messages came out interleaved) */
    char msg[2048], line[8192];
    size_t len = 0;
    fflush(stdout);
    vsnprintf(msg, sizeof msg, fmt, ap);
    len = (size_t)snprintf(line, sizeof line, "paddlec%s%s: error: ", *cli_cmd ? " " : "", cli_cmd);
    put_escaped(line, sizeof line - 1, &len, msg);
    if (tail) {
        put_escaped(line, sizeof line - 1, &len, ": ");
        put_escaped(line, sizeof line - 1, &len, tail);
    }
    line[len++] = '\n';
    fwrite(line, 1, len, stderr);
    cli_exit(code);
}

void cli_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(code, fmt, ap, NULL);
}

void cli_fail_pd(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *e = pd_last_error();
    vfail(CLI_EXIT_FAIL, fmt, ap, e && *e ? e : "unknown error");
}

struct cli_opt *cli_find(struct cli_opt *opts, const char *name)
{
    for (struct cli_opt *o = opts; o->name; o++)
        if (!strcmp(o->name, name)) return o;
    return NULL;
}

int cli_set(struct cli_opt *o, const char *v, char *err, size_t n)
{
    char *end = NULL;
    errno = 0;
    switch (o->kind) {
    case CLI_FLAG:
        if (!strcmp(v, "1") || !strcmp(v, "true")) *(int *)o->dst = 1;
        else if (!strcmp(v, "0") || !strcmp(v, "false")) *(int *)o->dst = 0;
        else return snprintf(err, n, "--%s: expected true/false, got %s", o->name, cli_q(v)), -1;
        break;
    case CLI_STR:
        if (!*v) return snprintf(err, n, "--%s: empty value", o->name), -1;
        *(const char **)o->dst = v;
        break;
    case CLI_INT:
    case CLI_I64: {
        long long x = strtoll(v, &end, 10);
        if (!*v || *end || errno) return snprintf(err, n, "--%s: %s is not an integer", o->name, cli_q(v)), -1;
        if ((double)x < o->lo || (double)x > o->hi)
            return snprintf(err, n, "--%s: %lld is outside [%.17g, %.17g]", o->name, x, o->lo, o->hi), -1;
        if (o->kind == CLI_INT) *(int *)o->dst = (int)x;
        else *(int64_t *)o->dst = x;
        break;
    }
    case CLI_DOUBLE: {
        double x = strtod(v, &end);
        if (!*v || *end || errno || !isfinite(x))
            return snprintf(err, n, "--%s: %s is not a finite number", o->name, cli_q(v)), -1;
        if (x < o->lo || x > o->hi) return snprintf(err, n, "--%s: %g is outside [%g, %g]", o->name, x, o->lo, o->hi), -1;
        *(double *)o->dst = x;
        break;
    }
    }
    o->seen = 1;
    return 0;
}

static void print_default(const struct cli_opt *o)
{
    switch (o->kind) {
    case CLI_INT: printf(" (default %d)", *(int *)o->dst); break;
    case CLI_I64: printf(" (default %lld)", (long long)*(int64_t *)o->dst); break;
    case CLI_DOUBLE: printf(" (default %g)", *(double *)o->dst); break;
    case CLI_STR:
        if (*(const char **)o->dst) printf(" (default %s)", *(const char **)o->dst);
        break;
    case CLI_FLAG:
        if (*(int *)o->dst) printf(" (default on; --%s=false turns it off)", o->name);
        break;
    }
}

static void usage(const struct cli_opt *opts, const char *synopsis, const char *description)
{
    printf("usage: paddlec %s\n\n%s\n", synopsis, description);
    if (opts && opts->name) printf("\noptions:\n");
    for (const struct cli_opt *o = opts; o && o->name; o++) {
        const char *arg = o->kind == CLI_FLAG ? "" : o->kind == CLI_STR ? " S" : o->kind == CLI_DOUBLE ? " X" : " N";
        char head[64];
        snprintf(head, sizeof head, "--%s%s", o->name, arg);
        printf("  %-22s %s", head, o->help);
        print_default(o);
        printf("\n");
    }
    if (cli_threads_enabled) {
        printf("  %-22s %s", "--threads N", cli_threads_opt.help);
        print_default(&cli_threads_opt);
        printf("\n");
    }
    printf("  %-22s %s\n", "--help", "show this help and exit");
}

void cli_parse(int argc, char **argv, struct cli_opt *opts, const char *synopsis, const char *description,
               const char **pos, int max_pos, int *n_pos)
{
    char err[256];
    *n_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(opts, synopsis, description);
            cli_exit(0);
        }
        if (strncmp(a, "--", 2) || !a[2]) {
            if (*n_pos >= max_pos) cli_fail(CLI_EXIT_USAGE, "unexpected argument %s (see --help)", cli_q(a));
            pos[(*n_pos)++] = a;
            continue;
        }
        char name[64];
        const char *eq = strchr(a + 2, '='), *val = NULL;
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (len >= sizeof name) cli_fail(CLI_EXIT_USAGE, "unknown option %s (see --help)", cli_q(a));
        memcpy(name, a + 2, len);
        name[len] = 0;
        struct cli_opt *o = cli_find(opts, name);
        if (!o && cli_threads_enabled && !strcmp(name, "threads")) o = &cli_threads_opt; /* threads.c */
        if (!o) cli_fail(CLI_EXIT_USAGE, "unknown option %s (see --help)", cli_q(a));
        if (eq) val = eq + 1;
        else if (o->kind == CLI_FLAG) val = "1";
        else if (i + 1 < argc) val = argv[++i];
        else cli_fail(CLI_EXIT_USAGE, "--%s needs a value", name);
        if (cli_set(o, val, err, sizeof err)) cli_fail(CLI_EXIT_USAGE, "%s", err);
    }
    if (cli_parse_only) {   /* parse-only mode (cli.h): back to the fuzz target */
        cli_free_all();
        longjmp(*cli_parse_only, CLI_PARSED);
    }
    cli_threads_apply();
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- progress ------------------------------------------------------------- */

void cli_progress_init(struct cli_progress *p, int total, int every)
{
    p->tty = isatty(2);
    p->every = every > 0 ? every : 1;
    p->total = total;
    p->t0 = cli_now();
    p->last_draw = 0;
}

static void fmt_time(double s, char *buf, size_t n)
{
    if (!(s >= 0) || s > 1e7) {
        snprintf(buf, n, "?");
        return;
    }
    int t = (int)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, n, "%d:%02d", t / 60, t % 60);
}

void cli_progress_update(struct cli_progress *p, int step, double loss, double lr, double tok_s, double eta_s)
{
    char eta[32], ls[32];
    fmt_time(eta_s, eta, sizeof eta);
    if (isfinite(loss)) snprintf(ls, sizeof ls, "%.4f", loss);
    else snprintf(ls, sizeof ls, "-");   /* a step skipped without a target (targets.c) */
    if (p->tty) {
        double now = cli_now();
        if (step != p->total && now - p->last_draw < 0.1) return;   /* ~10 redraws a second at most */
        p->last_draw = now;
        int width = 20, fill = p->total > 0 ? (int)((int64_t)width * step / p->total) : width;
        char bar[32];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
        bar[width] = 0;
        fprintf(stderr, "\r\033[Kstep %d/%d [%s] loss %s lr %.2e %.0f tok/s ETA %s", step, p->total, bar, ls, lr,
                tok_s, eta);
        fflush(stderr);
    } else if (step % p->every == 0 || step == p->total) {
        fprintf(stderr, "step %d/%d loss %s lr %.2e %.0f tok/s ETA %s\n", step, p->total, ls, lr, tok_s, eta);
    }
}

void cli_progress_note(struct cli_progress *p, const char *fmt, ...)
{
    if (p && p->tty) fprintf(stderr, "\r\033[K");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (p) p->last_draw = 0;
}

void cli_progress_done(struct cli_progress *p)
{
    if (p->tty) fputc('\n', stderr);
}

/* ---- metrics ---------------------------------------------------------------- */

FILE *cli_metrics_open(const char *path)
{
    if (!path) return NULL;
    /* An append log, not an atomic write: each line is flushed as it is
     * written, so a killed run keeps the lines of the steps it did
     * (docs/reliability.md). A FIFO or a device is refused, never waited on. */
    FILE *f = pd_file_open(path, "a");
    if (!f) cli_fail_pd("cannot open the --metrics file");
    return f;
}

void cli_metrics_write(FILE *f, const char *json)
{
    if (!f || !json) return;
    fputs(json, f);
    fputc('\n', f);
    fflush(f);
}

/* ---- text ------------------------------------------------------------------- */

int64_t *cli_encode(const struct pd_tokenizer *tok, const char *text, int *n)
{
    int32_t *ids32 = NULL;
    int64_t k = pd_tokenizer_encode(tok, text, strlen(text), &ids32);
    if (k < 0) cli_fail_pd("cannot encode the text");
    int64_t *ids = malloc(sizeof *ids * (size_t)(k > 0 ? k : 1));
    if (!ids) {
        free(ids32);
        cli_fail(CLI_EXIT_FAIL, "out of memory");
    }
    for (int64_t i = 0; i < k; i++) ids[i] = ids32[i];
    free(ids32);
    *n = (int)k;
    return ids;
}

char *cli_decode(const struct pd_tokenizer *tok, const int64_t *ids, int n)
{
    int32_t *ids32 = malloc(sizeof *ids32 * (size_t)(n > 0 ? n : 1));
    if (!ids32) cli_fail(CLI_EXIT_FAIL, "out of memory");
    /* ids past the tokenizer's vocabulary (a model vocabulary padded beyond
     * it, as Hugging Face models' often is) have no text: they are dropped */
    int k = 0, v = pd_tokenizer_vocab_size(tok);
    for (int i = 0; i < n; i++)
        if (ids[i] < v) ids32[k++] = (int32_t)ids[i];
    char *s = pd_tokenizer_decode_continuation(tok, ids32, k, NULL);
    free(ids32);
    if (!s) cli_fail_pd("cannot decode the generated tokens");
    return s;
}

int64_t *cli_with_bos(const struct pd_tokenizer *tok, int64_t *ids, int *n)
{
    int bos = pd_tokenizer_bos_id(tok);
    if (bos < 0 || (*n > 0 && ids[0] == bos)) return ids;
    int64_t *w = realloc(ids, sizeof *ids * (size_t)(*n + 1));
    if (!w) {
        free(ids);
        cli_fail(CLI_EXIT_FAIL, "out of memory");
    }
    memmove(w + 1, w, sizeof *w * (size_t)*n);
    w[0] = bos;
    (*n)++;
    return w;
}

char *cli_read_file(const char *path, size_t max, size_t *len)
{
    /* regular files only, refused before any open that could block */
    char *buf = pd_file_read(path, max, len);
    if (!buf) cli_fail_pd("cannot read the input");
    return buf;
}

void cli_path_join(char *buf, size_t n, const char *dir, const char *name)
{
    if ((size_t)snprintf(buf, n, "%s/%s", dir, name) >= n) cli_fail(CLI_EXIT_USAGE, "path too long: %s", cli_q(dir));
}
