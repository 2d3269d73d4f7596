/* paddle.c — the strided N-d walk shared by elementwise kernels.
 *
 * All operands have the same logical shape (broadcast operands carry stride
 * 0). Dims of size 1 are dropped and neighbouring dims that are contiguous in
 * every operand are merged, so a contiguous tensor of any rank becomes one
 * flat run and the callback sees long inner loops it can vectorise.
 * Work is split into (outer index, inner chunk) tasks over OpenMP threads.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <pthread.h>
#include <sched.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/internal.h"
#include "pd/runtime.h"

/* ---- threads (include/pd/runtime.h) ------------------------------------
 * Every parallel region of the kernels asks pdi_num_threads() for its
 * num_threads clause, so pd_set_num_threads reaches all of them from any
 * thread (OpenMP's own count is per thread). The default is OpenMP's count
 * capped to the CPUs of the affinity mask: more threads than CPUs only
 * queue behind each other at every barrier. */
static int user_threads;  /* 0: the default */
static int affinity_cpus; /* CPUs in the mask when last read; 0: unknown */
static int omp_initial;   /* the calling thread's OpenMP count before any pd_set_num_threads */
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

static void read_affinity(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    __atomic_store_n(&affinity_cpus, n, __ATOMIC_RELAXED);
}

static void threads_init(void)
{
    read_affinity();
#ifdef _OPENMP
    omp_initial = omp_get_max_threads();
#else
    omp_initial = 1;
#endif
}

int pdi_num_threads(void)
{
    int n = __atomic_load_n(&user_threads, __ATOMIC_RELAXED);
    if (n > 0) return n;
    pthread_once(&threads_once, threads_init);
#ifdef _OPENMP
    n = omp_get_max_threads();
#else
    n = 1;
#endif
    int cap = __atomic_load_n(&affinity_cpus, __ATOMIC_RELAXED);
    return cap > 0 && n > cap ? cap : n;
}

int pd_set_num_threads(int n)
{
    if (n < 0 || n > 4096) return pdi_errorf(PD_ERR_INVALID, "set_num_threads: %d outside [0, 4096]", n);
    pthread_once(&threads_once, threads_init);
    read_affinity(); /* the mask may have changed (taskset -p) */
    __atomic_store_n(&user_threads, n, __ATOMIC_RELAXED);
#ifdef _OPENMP
    omp_set_num_threads(n ? n : omp_initial);
#endif
    return PD_OK;
}

int pd_get_num_threads(void) { return pdi_num_threads(); }

const char *pd_kernel_isa(void)
{
#if defined(__AVX512F__)
    return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
    return "avx2";
#else
    return "scalar";
#endif
}

struct iter_plan {
    int n_ops, nd;
    int64_t inner, chunks, csize;
    pdi_iter_fn fn;
    void *ctx;
    int64_t sh[PD_MAX_DIMS], st[PDI_ITER_MAX][PD_MAX_DIMS], inner_st[PDI_ITER_MAX];
};

static void run_task(const struct iter_plan *pl, struct pd_kview *const *ops, int64_t task)
{
    int64_t o = task / pl->chunks, c = task % pl->chunks;
    int64_t i0 = c * pl->csize, len = pl->inner - i0 < pl->csize ? pl->inner - i0 : pl->csize;
    if (len <= 0) return;
    char *p[PDI_ITER_MAX];
    for (int k = 0; k < pl->n_ops; k++) p[k] = ops[k]->data + i0 * pl->inner_st[k];
    int64_t rem = o;
    for (int d = pl->nd - 2; d >= 0; d--) {
        int64_t idx = rem % pl->sh[d];
        rem /= pl->sh[d];
        for (int k = 0; k < pl->n_ops; k++) p[k] += idx * pl->st[k][d];
    }
    pl->fn(p, pl->inner_st, len, pl->ctx);
}

void pdi_iter(int n_ops, struct pd_kview *const *ops, const int64_t *shape, int ndim, pdi_iter_fn fn, void *ctx)
{
    /* The plan is built in place: copying its stride table (512 bytes) was
     * a visible share of a tiny op's cost. */
    struct iter_plan pl;
    int64_t *sh = pl.sh;
    int64_t (*st)[PD_MAX_DIMS] = pl.st;
    int nd = 0;
    int64_t total = pdi_numel(shape, ndim);
    if (total == 0) return;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        int merge = nd > 0;
        for (int k = 0; k < n_ops && merge; k++) {
            int64_t es = (int64_t)pd_dtype_size(ops[k]->dtype);
            if (st[k][nd - 1] != ops[k]->strides[d] * es * shape[d]) merge = 0;
        }
        if (merge) {
            sh[nd - 1] *= shape[d];
            for (int k = 0; k < n_ops; k++) st[k][nd - 1] = ops[k]->strides[d] * (int64_t)pd_dtype_size(ops[k]->dtype);
        } else {
            sh[nd] = shape[d];
            for (int k = 0; k < n_ops; k++) st[k][nd] = ops[k]->strides[d] * (int64_t)pd_dtype_size(ops[k]->dtype);
            nd++;
        }
    }
    if (nd == 0) { sh[0] = 1; for (int k = 0; k < n_ops; k++) st[k][0] = 0; nd = 1; }
    int64_t inner = sh[nd - 1], outer = total / inner;
    for (int k = 0; k < n_ops; k++) pl.inner_st[k] = st[k][nd - 1];

    int nt = total >= PDI_PAR_GRAIN ? pdi_num_threads() : 1;
    int64_t chunks = 1;
    if (nt > 1 && outer < 4 * nt) chunks = (4 * nt + outer - 1) / outer;
    if (chunks > inner) chunks = inner;
    int64_t csize = (inner + chunks - 1) / chunks;
    int64_t ntasks = outer * chunks;
    pl.n_ops = n_ops;
    pl.nd = nd;
    pl.inner = inner;
    pl.chunks = chunks;
    pl.csize = csize;
    pl.fn = fn;
    pl.ctx = ctx;
    /* An `if (false)` OpenMP region still costs a futex round trip in
     * libgomp: tiny ops must not enter one at all. */
    if (nt > 1) {
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t task = 0; task < ntasks; task++) run_task(&pl, ops, task);
    } else {
        for (int64_t task = 0; task < ntasks; task++) run_task(&pl, ops, task);
    }
}
