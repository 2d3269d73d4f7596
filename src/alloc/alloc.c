/* paddle.c — the host allocator behind every storage, with statistics.
 *
 * 64-byte aligned so AVX-512 loads of a tensor's first element are aligned.
 * This is the plain allocator; the caching and VMM allocators of DESIGN §3
 * plug in behind the same two functions and report the same statistics.
 * Counters are atomic: kernels may allocate from OpenMP threads.
 */
#include <stdlib.h>

#include "core/internal.h"

static int64_t st_alloc, st_peak, st_nallocs, st_nfrees;

void *pdi_alloc(size_t nbytes)
{
    size_t n = (nbytes + 63) & ~(size_t)63;
    if (n == 0) n = 64;
    void *p = aligned_alloc(64, n);
    if (!p) return pdi_error(PD_ERR_NOMEM, "out of memory allocating %zu bytes", nbytes);
    int64_t now = __atomic_add_fetch(&st_alloc, (int64_t)n, __ATOMIC_RELAXED);
    __atomic_add_fetch(&st_nallocs, 1, __ATOMIC_RELAXED);
    int64_t peak = __atomic_load_n(&st_peak, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&st_peak, &peak, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return p;
}

void pdi_free(void *p, size_t nbytes)
{
    if (!p) return;
    size_t n = (nbytes + 63) & ~(size_t)63;
    if (n == 0) n = 64;
    __atomic_sub_fetch(&st_alloc, (int64_t)n, __ATOMIC_RELAXED);
    __atomic_add_fetch(&st_nfrees, 1, __ATOMIC_RELAXED);
    free(p);
}

void pd_memory_stats(struct pd_memory_stats *out)
{
    out->allocated_bytes = __atomic_load_n(&st_alloc, __ATOMIC_RELAXED);
    out->peak_allocated_bytes = __atomic_load_n(&st_peak, __ATOMIC_RELAXED);
    out->reserved_bytes = out->allocated_bytes; /* no cache: reserved = allocated */
    out->n_allocs = __atomic_load_n(&st_nallocs, __ATOMIC_RELAXED);
    out->n_frees = __atomic_load_n(&st_nfrees, __ATOMIC_RELAXED);
    out->n_live = out->n_allocs - out->n_frees;
}

void pd_memory_reset_peak(void) { __atomic_store_n(&st_peak, __atomic_load_n(&st_alloc, __ATOMIC_RELAXED), __ATOMIC_RELAXED); }
