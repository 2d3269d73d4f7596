/* paddle.c — threads (include/pd/runtime.h): pd_set_num_threads reaches
 * every thread of the process and every kernel, the default is capped to
 * the CPUs of the affinity mask, results do not depend on the count, and
 * pd_kernel_isa names the kernels' instruction set. */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pd/runtime.h"
#include "pt.h"

static int mask_cpus(void)
{
    cpu_set_t s;
    return sched_getaffinity(0, sizeof s, &s) == 0 ? CPU_COUNT(&s) : 0;
}

static void *other_thread(void *arg)
{
    *(int *)arg = pd_get_num_threads();
    return NULL;
}

/* sum, cumsum and softmax of a large tensor with n threads, into out */
static void compute(int n, struct pd_tensor *x, double out[3])
{
    PT_CHECK(pd_set_num_threads(n) == PD_OK && pd_get_num_threads() == n);
    int tok = pd_scope_begin();
    out[0] = pd_item(pd_sum(x, NULL, 0, 0));
    out[1] = pd_item(pd_sum(pd_cumsum(x, 0), NULL, 0, 0));
    out[2] = pd_item(pd_sum(pd_mul(pd_softmax(pd_reshape(x, (int64_t[]){512, 1024}, 2), 1), x), NULL, 0, 0));
    pd_scope_end(tok);
}

int main(void)
{
    /* 1. the default is capped to the affinity mask: a child limited to
     * one CPU gets one thread whatever OMP_NUM_THREADS says */
    pid_t pid = fork();
    if (pid == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
        if (sched_setaffinity(0, sizeof one, &one)) _exit(3);
        omp_set_num_threads(8);
        _exit(pd_get_num_threads() == 1 ? 0 : 1);
    }
    int st = -1;
    PT_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);

    int cpus = mask_cpus(), def = pd_get_num_threads();
    PT_CHECK(def >= 1 && def <= omp_get_max_threads() && (cpus == 0 || def <= cpus));
    omp_set_num_threads(cpus + 5); /* more than the mask: capped */
    PT_CHECK(pd_get_num_threads() == (cpus ? cpus : cpus + 5));
    omp_set_num_threads(def);

    /* 2. an explicit count is global (OpenMP's is per thread) and exact */
    PT_CHECK(pd_set_num_threads(-1) == PD_ERR_INVALID && strstr(pd_last_error(), "set_num_threads: -1"));
    PT_CHECK(pd_set_num_threads(5000) == PD_ERR_INVALID);
    PT_CHECK(pd_set_num_threads(1) == PD_OK && pd_get_num_threads() == 1 && omp_get_max_threads() == 1);
    int seen = 0;
    pthread_t th;
    PT_CHECK(pthread_create(&th, NULL, other_thread, &seen) == 0 && pthread_join(th, NULL) == 0 && seen == 1);
    PT_CHECK(pd_set_num_threads(3) == PD_OK && pd_get_num_threads() == 3); /* oversubscribing on request */
    PT_CHECK(pd_set_num_threads(0) == PD_OK && pd_get_num_threads() == def && omp_get_max_threads() == def);

    /* 3. results do not depend on the count (bit for bit) */
    struct pd_generator *g = pd_generator_create(5);
    struct pd_tensor *x = pd_randn((int64_t[]){1 << 19}, 1, PD_F32, g);
    double r1[3], r2[3], r3[3];
    compute(1, x, r1);
    compute(2, x, r2);
    compute(3, x, r3);
    PT_CHECK(!memcmp(r1, r2, sizeof r1) && !memcmp(r1, r3, sizeof r1));
    pd_set_num_threads(0);
    pd_tensor_release(x);
    pd_generator_destroy(g);

    /* 4. the instruction set */
    const char *isa = pd_kernel_isa();
    PT_CHECK(isa && (!strcmp(isa, "avx512") || !strcmp(isa, "avx2") || !strcmp(isa, "scalar")));
#if defined(__AVX512F__)
    PT_CHECK(!strcmp(isa, "avx512"));
#endif
    PT_DONE();
}
