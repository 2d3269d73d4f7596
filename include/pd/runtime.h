/* paddle.c — the library's threads and the kernels' instruction set
 * (docs/tensors.md, "Threads").
 *
 * Kernels run on OpenMP threads. By default they use as many threads as
 * OpenMP would (OMP_NUM_THREADS, else one per CPU), but never more than the
 * CPUs this process may run on (its affinity mask, e.g. under taskset or a
 * container's cpuset), so threads never queue behind each other.
 */
#ifndef PD_RUNTIME_H
#define PD_RUNTIME_H

#ifdef __cplusplus
extern "C" {
#endif

/* Threads every kernel uses from now on, in every thread of the process:
 * n >= 1 sets the count (capped to the CPUs of the affinity mask only when
 * n is larger), n == 0 returns to the default. Also sets the calling
 * thread's OpenMP count, which oneDNN's kernels follow. Returns PD_OK, or
 * PD_ERR_INVALID for n < 0 or n > 4096. */
int pd_set_num_threads(int n);
/* The threads the next kernel of this thread may use (>= 1). */
int pd_get_num_threads(void);
/* The instruction set the kernels were compiled for: "avx512", "avx2" or
 * "scalar" (static string). */
const char *pd_kernel_isa(void);

#ifdef __cplusplus
}
#endif
#endif
