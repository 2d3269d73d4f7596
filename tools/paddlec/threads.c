/* paddle.c — paddlec's threads: the OpenMP wait policy it runs under, and
 * --threads N (train, generate, eval, bench).
 *
 * Wait policy. libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, in
 * its own load-time constructor, before main() and before any constructor
 * of libpaddlec, so neither the library nor main() can change it by setting
 * the variable. Its default without them spins 300,000 rounds (milliseconds)
 * at every barrier and at the end of every parallel region; when another
 * process is busy on the machine, those spinning threads take the CPU from
 * the thread that has work, and a training step ran 5-7x slower than with
 * OMP_WAIT_POLICY=passive (docs/benchmarks.md, "Threads"). So, when the
 * user set neither variable, a computing command sets CLI_WAIT_VAR to
 * CLI_WAIT_VALUE (cli.h: OMP_WAIT_POLICY=passive) and runs itself again
 * (execv of /proc/self/exe, same arguments): libgomp then starts with it. If the exec fails the
 * command runs on under libgomp's default. A variable the user set is
 * always kept, so OMP_WAIT_POLICY=active restores spinning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "pd/runtime.h"

int cli_threads_enabled;
static int threads;
struct cli_opt cli_threads_opt = {
    "threads", CLI_INT, &threads, 0, 4096, "kernel threads (0: OpenMP's count, at most the CPUs this process may use)",
    0};

void cli_threads_reexec(char **argv)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv(CLI_WAIT_VAR, CLI_WAIT_VALUE, 1)) return;
    execv("/proc/self/exe", argv);
    unsetenv(CLI_WAIT_VAR); /* no exec: run on as we are */
}

void cli_threads_apply(void)
{
    if (cli_threads_opt.seen && pd_set_num_threads(threads)) cli_fail_pd("--threads");
}

/* s as it is when it is a plain word (passive, 10000), else quoted */
static const char *word(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    return *s && !s[n] && n < 40 ? s : cli_q(s);
}

const char *cli_threads_desc(char *buf, size_t n)
{
    const char *wp = getenv("OMP_WAIT_POLICY"), *sc = getenv("GOMP_SPINCOUNT");
    char wait[96];
    if (wp) snprintf(wait, sizeof wait, "wait policy %s", word(wp));
    else if (sc) snprintf(wait, sizeof wait, "spin count %s", word(sc));
    else snprintf(wait, sizeof wait, "libgomp's default wait");
    int nt = pd_get_num_threads();
    snprintf(buf, n, "%d thread%s (%s), %s kernels", nt, nt == 1 ? "" : "s", wait, pd_kernel_isa());
    return buf;
}

const char *cli_threads_json(char *buf, size_t n)
{
    snprintf(buf, n, "\"threads\":%d,\"isa\":\"%s\"", pd_get_num_threads(), pd_kernel_isa());
    return buf;
}
