/* paddle.c — the bad-input sweep (docs/reliability.md, "The bad-input sweep").
 *
 * Generated from the op table: for every row it finds a base call that
 * succeeds (a search over the row's n_in, a few shape layouts, dtype
 * assignments and attribute variants), then derives the cases from the row's
 * columns and attribute descriptors — NULL inputs, every dtype combination,
 * unbroadcastable and mismatched shapes, axes at -ndim-1, ndim, INT64_MIN and
 * INT64_MAX, every attribute at its extremes, zero-size inputs, element counts
 * that overflow, permuted/sliced/expanded views, aliasing and extreme data.
 * A new op is swept without new code. The public entry points that are not
 * ops are in a small hand table (sweep_api.c).
 *
 * The contract per case: a result, or an error status with a one-line
 * message; no sanitizer report, no leak, no hang; and an error where one is
 * due (cases invalid by construction: a NULL input, a bad axis, a key dtype
 * outside the op's class, unbroadcastable shapes, an attribute outside its
 * declared range, too many elements).
 *
 * Cases run in a forked child; when it dies (a signal, a sanitizer report,
 * the per-case alarm) the parent reports the case it was in and continues
 * with the next one in a new child. Under ASan, LeakSanitizer checks each
 * batch of cases, and a leaking batch is re-run case by case.
 *
 *   sweep [--sample N] [--op NAME] [--case K] [--range FROM TO] [--timeout S] [--quiet]
 * Exit status 0 when no case failed.
 */
#include "sweep.h"

#include "pd/memory.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct sweep_opts sw_opts = {.timeout = 10};
struct sweep_shared *sw_shm;

/* Failures of bugs another branch is fixing: reported as KNOWN and not
 * counted. Each entry names the bug; delete it once the fix is merged. */
static const struct {
    const char *match, *why;
} known[] = {
    {NULL, NULL}, /* none today; entries go before this terminator */
};

/* Caps every allocation, so that a legal but huge tensor (2^31 elements)
 * fails at once with "out of memory" instead of filling the machine. */
#define ALLOC_CAP ((size_t)1 << 30)
static void *cap_alloc(void *ctx, size_t n)
{
    const struct pd_allocator *h = ctx;
    return n > ALLOC_CAP ? NULL : h->alloc(h->ctx, n);
}
static void cap_free(void *ctx, void *p, size_t n)
{
    const struct pd_allocator *h = ctx;
    h->free(h->ctx, p, n);
}
static int cap_stats(void *ctx, struct pd_memory_stats *out)
{
    const struct pd_allocator *h = ctx;
    return h->stats ? h->stats(h->ctx, out) : PD_ERR_UNSUPPORTED;
}

/* ---- running one case ------------------------------------------------ */
static int msg_ok(void)
{
    const char *m = pd_last_error();
    return pd_last_status() != 0 && m && m[0] && !strchr(m, '\n') && !strchr(m, '\r');
}

/* Read every element of a contiguous output, so that a kernel's wrong
 * shape shows up as an out-of-bounds read under ASan. */
static void touch(const struct pd_tensor *t)
{
    if (!pd_tensor_is_contiguous(t)) return;
    int64_t n = pd_tensor_numel(t);
    if (n <= 0 || n > (1 << 20)) return;
    const volatile unsigned char *p = pd_tensor_data(t);
    size_t bytes = (size_t)n * pd_dtype_size(pd_tensor_dtype(t));
    unsigned char acc = 0;
    for (size_t i = 0; i < bytes; i += 1) acc ^= p[i];
    (void)acc;
}

/* Returns 1 when the failure is a known one (then it is not counted). */
int sw_fail(const char *what, int k, const char *detail)
{
    if (sw_shm->leak_only) return 1; /* a re-run for LeakSanitizer: reported already */
    char desc[512];
    sw_describe(k, desc, sizeof desc);
    for (size_t i = 0; known[i].match; i++)
        if (strstr(desc, known[i].match)) {
            __atomic_add_fetch(&sw_shm->n_known, 1, __ATOMIC_RELAXED);
            if (!sw_opts.quiet) printf("KNOWN %s: case %d %s: %s\n", what, k, desc, known[i].why);
            fflush(stdout);
            return 1;
        }
    printf("FAIL %s: case %d %s%s%s\n", what, k, desc, detail ? ": " : "", detail ? detail : "");
    fflush(stdout);
    return 0;
}

/* The outcome of a finished call. rc: status; outs/n_out: its results. */
void sw_judge(int k, int rc, int must_fail, int has_null, struct pd_tensor **outs, int n_out)
{
    if (sw_shm->leak_only) return;
    if (rc == 0) {
        for (int j = 0; j < n_out; j++) {
            if (!outs[j] || pd_tensor_ndim(outs[j]) < 0 || pd_tensor_ndim(outs[j]) > PD_MAX_DIMS ||
                pd_tensor_numel(outs[j]) < 0) {
                if (!sw_fail("malformed result", k, NULL)) __atomic_add_fetch(&sw_shm->n_malformed, 1, __ATOMIC_RELAXED);
                return;
            }
            touch(outs[j]);
        }
        if (must_fail) {
            if (!sw_fail("accepted-invalid", k, NULL)) __atomic_add_fetch(&sw_shm->n_accepted, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_add_fetch(&sw_shm->n_ok, 1, __ATOMIC_RELAXED);
        }
        return;
    }
    __atomic_add_fetch(&sw_shm->n_err, 1, __ATOMIC_RELAXED);
    if (has_null && rc == PD_ERR_NULL) return; /* the NULL's own message is kept */
    if (!msg_ok()) {
        char b[160];
        const char *m = pd_last_error();
        int i = 0;
        for (; m[i] && i < 120; i++) b[i] = (m[i] == '\n' || m[i] == '\r') ? '|' : m[i];
        b[i] = 0;
        if (!sw_fail("bad error message", k, b)) __atomic_add_fetch(&sw_shm->n_badmsg, 1, __ATOMIC_RELAXED);
    }
}

/* Returns 0 when nothing ran (a probe for an op that has its base). */
static int run_case(int k)
{
    if (sw_shm->phase == 0 && !sw_run_probe_needed(k)) return 0;
    struct pd_memory_stats m0, m1;
    int64_t live0 = pd_live_tensors();
    pd_memory_stats(&m0);
    int tok = pd_scope_begin();
    pd_clear_error();
    if (sw_shm->phase == 0) sw_run_probe(k);
    else if (k < sw_shm->n_op_cases) sw_run_op_case(k);
    else sw_run_api_case(k - sw_shm->n_op_cases);
    pd_scope_end(tok);
    pd_memory_stats(&m1);
    if (pd_live_tensors() != live0 || m1.n_live != m0.n_live) {
        char b[96];
        snprintf(b, sizeof b, "%lld tensors, %lld allocations left", (long long)(pd_live_tensors() - live0),
                 (long long)(m1.n_live - m0.n_live));
        if (!sw_fail("leak", k, b)) __atomic_add_fetch(&sw_shm->n_leak, 1, __ATOMIC_RELAXED);
    }
    return 1;
}

/* ---- the crash-isolated runner --------------------------------------- */
#if defined(__SANITIZE_ADDRESS__)
#define SW_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SW_LSAN 1
#endif
#endif
#ifdef SW_LSAN
int __lsan_do_recoverable_leak_check(void);
#define LEAK_CHECK() __lsan_do_recoverable_leak_check()
#define LEAK_CHECK_BUILT 1
#else
#define LEAK_CHECK() 0
#define LEAK_CHECK_BUILT 0
#endif

#define BATCH 256
#define EXIT_LEAKED 77

/* Child: run the selected cases from..to-1, with a leak check after each
 * BATCH cases that ran and at the end. sw_shm->checked: the cases before
 * it passed a leak check. */
static void child(const int *sel, int from, int to)
{
    int ran = 0;
    for (int i = from; i < to; i++) {
        sw_shm->current = i;
        alarm((unsigned)sw_opts.timeout);
        ran += run_case(sel[i]);
        alarm(0);
        sw_shm->done = i + 1;
        if (ran >= BATCH || i + 1 == to) {
            if (ran && LEAK_CHECK()) _exit(EXIT_LEAKED);
            ran = 0;
            sw_shm->checked = i + 1;
        }
    }
    fflush(stdout);
    _exit(0);
}

/* Run sel[from..to) in a child; returns how it ended. */
static int spawn(const int *sel, int from, int to)
{
    fflush(stdout);
    sw_shm->current = from;
    sw_shm->done = from;
    sw_shm->checked = from;
    pid_t p = fork();
    if (p < 0) { perror("fork"); exit(2); }
    if (p == 0) child(sel, from, to);
    int st;
    while (waitpid(p, &st, 0) < 0 && errno == EINTR) {}
    return st;
}

/* LeakSanitizer found a leak in sel[a..b) (or the child died before it
 * checked them): re-run them, leaks only (nothing else is reported or
 * counted twice), and one case per child where the group leaks. */
static void leak_recheck(const int *sel, int a, int b)
{
    if (a >= b) return;
    sw_shm->leak_only = 1;
    int st = b - a > 1 ? spawn(sel, a, b) : (int)0x100 * EXIT_LEAKED;
    if (WIFEXITED(st) && WEXITSTATUS(st) == EXIT_LEAKED) {
        for (int j = a; j < b; j++) {
            int s2 = spawn(sel, j, j + 1);
            if (WIFEXITED(s2) && WEXITSTATUS(s2) == EXIT_LEAKED) {
                sw_shm->leak_only = 0;
                if (!sw_fail("leak (LeakSanitizer)", sel[j], NULL)) sw_shm->n_leak++;
                sw_shm->leak_only = 1;
            }
        }
    }
    sw_shm->leak_only = 0;
}

void sw_run_all(const int *sel, int n)
{
    if (sw_opts.no_fork) { /* for a debugger: no isolation, no leak check */
        for (int i = 0; i < n; i++) run_case(sel[i]);
        return;
    }
    int i = 0;
    while (i < n) {
        int st = spawn(sel, i, n);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) break;
        if (WIFEXITED(st) && WEXITSTATUS(st) == EXIT_LEAKED) {
            int a = sw_shm->checked, b = sw_shm->done;
            leak_recheck(sel, a, b);
            i = b;
            continue;
        }
        int at = sw_shm->current, a = sw_shm->checked;
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
            char b[64];
            snprintf(b, sizeof b, "no result within %d s", sw_opts.timeout);
            if (!sw_fail("hang", sel[at], b)) sw_shm->n_hang++;
        } else {
            char b[64];
            if (WIFSIGNALED(st)) snprintf(b, sizeof b, "signal %d", WTERMSIG(st));
            else snprintf(b, sizeof b, "exit status %d (sanitizer report above)", WEXITSTATUS(st));
            if (!sw_fail("crash", sel[at], b)) sw_shm->n_crash++;
        }
        /* the cases since the last leak check did not get one */
        if (LEAK_CHECK_BUILT) leak_recheck(sel, a, at);
        i = at + 1;
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sample") && i + 1 < argc) sw_opts.sample = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--op") && i + 1 < argc) sw_opts.only_op = argv[++i];
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) sw_opts.only_case = atoi(argv[++i]) + 1;
        else if (!strcmp(argv[i], "--range") && i + 2 < argc) sw_opts.from = atoi(argv[++i]), sw_opts.to = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) sw_opts.timeout = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quiet")) sw_opts.quiet = 1;
        else if (!strcmp(argv[i], "--no-fork")) sw_opts.no_fork = 1;
        else if (!strcmp(argv[i], "--list")) sw_opts.list = 1;
        else {
            fprintf(stderr, "usage: %s [--sample N] [--op NAME] [--case K] [--range FROM TO] [--timeout S] [--quiet] [--list]\n", argv[0]);
            return 2;
        }
    }
    sw_shm = mmap(NULL, sizeof *sw_shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sw_shm == MAP_FAILED) { perror("mmap"); return 2; }
    memset(sw_shm, 0, sizeof *sw_shm);
    static struct pd_allocator cap = {PD_ALLOCATOR_ABI, "sweep-capped", NULL, cap_alloc, cap_free, cap_stats, NULL, NULL};
    cap.ctx = (void *)pd_allocator_host();
    if (pd_allocator_set_default(&cap)) { fprintf(stderr, "sweep: %s\n", pd_last_error()); return 2; }

    /* 1. a base call per op (crash-isolated like the cases) */
    sw_probe_all();
    /* 2. the cases */
    sw_shm->phase = 1;
    int n = sw_build_cases();
    int *sel = malloc(sizeof *sel * (size_t)(n ? n : 1));
    int ns = 0;
    if (!sel) return 2;
    for (int k = 0; k < n; k++) {
        if (sw_opts.only_case && k != sw_opts.only_case - 1) continue;
        if (k < sw_opts.from || (sw_opts.to && k >= sw_opts.to)) continue;
        if (sw_opts.only_op && !sw_case_is_op(k, sw_opts.only_op)) continue;
        if (sw_opts.sample && n > sw_opts.sample && (uint64_t)k * 0x9e3779b97f4a7c15ull % (uint64_t)n >= (uint64_t)sw_opts.sample)
            continue;
        sel[ns++] = k;
    }
    if (sw_opts.list) {
        for (int i = 0; i < ns; i++) {
            char d[512];
            sw_describe(sel[i], d, sizeof d);
            printf("%d %s\n", sel[i], d);
        }
        return 0;
    }
    if (!sw_opts.quiet) sw_report_bases();
    sw_run_all(sel, ns);
    free(sel);
    struct sweep_shared *s = sw_shm;
    int bad = s->n_crash + s->n_hang + s->n_leak + s->n_accepted + s->n_badmsg + s->n_malformed;
    printf("sweep: %d cases (of %d; %d ops, %d without a base call), %d results, %d errors; crashes %d, hangs %d, "
           "leaks %d, accepted-invalid %d, bad messages %d, malformed %d; known (fixed on another branch) %d\n",
           ns, n, PD_OP_COUNT, s->n_nobase, s->n_ok, s->n_err, s->n_crash, s->n_hang, s->n_leak, s->n_accepted,
           s->n_badmsg, s->n_malformed, s->n_known);
    return bad ? 1 : 0;
}
