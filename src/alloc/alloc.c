/* paddle.c — the host caching allocator behind every storage, and its
 * statistics (pd_memory_stats, pd_memory_summary, record regions).
 *
 * Blocks are 64-byte aligned (AVX-512 loads of a tensor's first element are
 * aligned) and rounded up to size classes with four steps per power of two
 * (at most 25% waste). A freed block goes onto its class's free list instead
 * of back to libc, so the next op of the same size reuses warm pages: without
 * this every large output is a fresh mmap that page-faults on first touch
 * (measured: 88 ms for an add of 16M floats whose kernel takes 12 ms).
 * The cache is capped (PD_ALLOC_CACHE_MB, default 4096); pd_memory_empty_cache
 * returns it to the system. This is the default allocator of docs/design.md §3,
 * exposed as the plug-in struct pdi_host_allocator (pd_allocator_host());
 * other allocators implement the same struct (include/pd/memory.h,
 * src/alloc/allocator.c).
 *
 * Thread-safe: one mutex, taken once per alloc and once per free; every
 * counter is updated under it, so a snapshot is consistent (allocated +
 * cached == reserved at all times) and record regions see exact peaks.
 * Kernels rarely allocate from worker threads, so the lock is uncontended.
 * Freed blocks store the free-list link in their first 8 bytes.
 *
 * Record regions (pd_memory_record_begin/end) are a process-wide stack: the
 * alloc path raises only the innermost region's peak, and closing a region
 * folds its peak into its parent, so nesting costs nothing per allocation.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "core/internal.h"

#define N_CLASSES 256
#define MAX_RECORD_DEPTH 32

/* Everything below is guarded by lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *free_list[N_CLASSES];
static int64_t cache_limit = -1;
static struct pd_memory_stats st; /* n_live / active are derived on read */

struct record {
    int64_t tot_alloc0, tot_freed0, n_allocs0, n_frees0, start, peak;
};
static struct record records[MAX_RECORD_DEPTH];
static int n_records;

/* Class index and rounded size for a request. */
static int size_class(size_t n, size_t *rounded)
{
    if (n <= 256) { *rounded = 256; return 0; }
    int e = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^e < n <= 2^(e+1) */
    size_t step = (size_t)1 << (e - 2);                        /* a quarter of 2^e */
    size_t r = (n + step - 1) & ~(step - 1);                   /* (5..8) * 2^(e-2) */
    *rounded = r;
    int sub = (int)((r >> (e - 2)) - 5);
    int idx = 1 + (e - 8) * 4 + sub;
    return idx < N_CLASSES ? idx : -1;
}

static int64_t limit(void)
{
    if (cache_limit < 0) {
        const char *s = getenv("PD_ALLOC_CACHE_MB");
#ifdef PD_SANITIZE
        long long mb = 0; /* no cache: AddressSanitizer sees every use after free */
        (void)s;
#else
        long long mb = s ? atoll(s) : 4096;
#endif
        cache_limit = (int64_t)(mb < 0 ? 0 : mb) << 20;
    }
    return cache_limit;
}

#define RAISE(peak, v) do { if ((v) > (peak)) (peak) = (v); } while (0)

/* Count a block of rounded size r handed out for a request of n bytes.
 * Called with the lock held. */
static void account_alloc(int64_t r, int64_t n)
{
    st.allocated_bytes += r;
    st.requested_bytes += n;
    st.total_allocated_bytes += r;
    st.n_allocs++;
    RAISE(st.peak_allocated_bytes, st.allocated_bytes);
    RAISE(st.peak_requested_bytes, st.requested_bytes);
    RAISE(st.peak_live, st.n_allocs - st.n_frees);
    if (n_records) RAISE(records[n_records - 1].peak, st.allocated_bytes);
}

/* A fresh block from libc. Blocks of HUGE_MIN and more are 2 MiB aligned
 * and advised as transparent huge pages: first touch then faults once per
 * 2 MiB instead of once per 4 KiB. Measured on this project's VM, where a
 * 4 KiB fault costs ~13 us: dense attention at S = 8192 (ten 1 GiB tensors)
 * spent 38 s of a 61 s run in the kernel faulting pages in. Where THP is
 * "never" the advice is ignored and nothing changes. */
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_MIN ((size_t)8 << 20)
static void *os_alloc(size_t r)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (r >= HUGE_MIN) {
        void *p = NULL;
        if (posix_memalign(&p, HUGE_PAGE, r)) return NULL;
        madvise(p, r & ~(HUGE_PAGE - 1), MADV_HUGEPAGE); /* advice: a failure changes nothing */
        return p;
    }
#endif
    return aligned_alloc(64, r);
}

void *pdi_alloc(size_t nbytes)
{
    if (pdi_fault_now()) return pdi_error(PD_ERR_NOMEM, "out of memory allocating %zu bytes", nbytes);
    size_t r;
    int c = size_class(nbytes, &r);
    void *p = NULL;
    pthread_mutex_lock(&lock);
    if (c >= 0 && free_list[c]) {
        p = free_list[c];
        free_list[c] = *(void **)p;
        st.cached_bytes -= (int64_t)r;
        st.n_cached_blocks--;
        st.n_cache_hits++;
        account_alloc((int64_t)r, (int64_t)nbytes);
    }
    pthread_mutex_unlock(&lock);
    if (p) return p;
    /* Outside the lock: a fresh block may page-fault or mmap for a while. */
    p = os_alloc(r);
    if (!p) return pdi_error(PD_ERR_NOMEM, "out of memory allocating %zu bytes", nbytes);
    pthread_mutex_lock(&lock);
    st.reserved_bytes += (int64_t)r;
    st.n_os_allocs++;
    RAISE(st.peak_reserved_bytes, st.reserved_bytes);
    account_alloc((int64_t)r, (int64_t)nbytes);
    pthread_mutex_unlock(&lock);
    return p;
}

void pdi_free(void *p, size_t nbytes)
{
    if (!p) return;
    size_t r;
    int c = size_class(nbytes, &r);
    pthread_mutex_lock(&lock);
    st.allocated_bytes -= (int64_t)r;
    st.requested_bytes -= (int64_t)nbytes;
    st.total_freed_bytes += (int64_t)r;
    st.n_frees++;
    if (c >= 0 && st.cached_bytes + (int64_t)r <= limit()) {
        *(void **)p = free_list[c];
        free_list[c] = p;
        st.cached_bytes += (int64_t)r;
        st.n_cached_blocks++;
        p = NULL;
    } else {
        st.reserved_bytes -= (int64_t)r;
        st.n_os_frees++;
    }
    pthread_mutex_unlock(&lock);
    free(p); /* NULL when cached */
}

void pd_memory_empty_cache(void)
{
    pthread_mutex_lock(&lock);
    for (int c = 0; c < N_CLASSES; c++) {
        while (free_list[c]) {
            void *p = free_list[c];
            free_list[c] = *(void **)p;
            free(p);
            st.n_os_frees++;
        }
    }
    st.reserved_bytes -= st.cached_bytes;
    st.cached_bytes = 0;
    st.n_cached_blocks = 0;
    pthread_mutex_unlock(&lock);
}

void pd_memory_stats(struct pd_memory_stats *out)
{
    if (!out) return;
    pthread_mutex_lock(&lock);
    *out = st;
    pthread_mutex_unlock(&lock);
    out->n_live = out->n_allocs - out->n_frees;
    out->active_bytes = out->allocated_bytes;
    out->peak_active_bytes = out->peak_allocated_bytes;
}

void pd_memory_reset_peak(void)
{
    pthread_mutex_lock(&lock);
    st.peak_allocated_bytes = st.allocated_bytes;
    st.peak_requested_bytes = st.requested_bytes;
    st.peak_reserved_bytes = st.reserved_bytes;
    st.peak_live = st.n_allocs - st.n_frees;
    pthread_mutex_unlock(&lock);
}

int pd_memory_record_begin(void)
{
    pthread_mutex_lock(&lock);
    if (n_records == MAX_RECORD_DEPTH) {
        pthread_mutex_unlock(&lock);
        return pdi_errorf(PD_ERR_STATE, "pd_memory_record_begin: regions nested deeper than %d", MAX_RECORD_DEPTH);
    }
    struct record *r = &records[n_records++];
    r->tot_alloc0 = st.total_allocated_bytes;
    r->tot_freed0 = st.total_freed_bytes;
    r->n_allocs0 = st.n_allocs;
    r->n_frees0 = st.n_frees;
    r->start = r->peak = st.allocated_bytes;
    int depth = n_records;
    pthread_mutex_unlock(&lock);
    return depth;
}

int pd_memory_record_end(struct pd_memory_record *out)
{
    pthread_mutex_lock(&lock);
    if (!n_records) {
        pthread_mutex_unlock(&lock);
        return pdi_errorf(PD_ERR_STATE, "pd_memory_record_end: no region open (missing pd_memory_record_begin)");
    }
    struct record r = records[--n_records];
    if (n_records) RAISE(records[n_records - 1].peak, r.peak); /* the parent saw this peak too */
    struct pd_memory_record o = {
        .allocated_bytes = st.total_allocated_bytes - r.tot_alloc0,
        .freed_bytes = st.total_freed_bytes - r.tot_freed0,
        .n_allocs = st.n_allocs - r.n_allocs0,
        .n_frees = st.n_frees - r.n_frees0,
        .start_bytes = r.start,
        .peak_bytes = r.peak,
    };
    pthread_mutex_unlock(&lock);
    o.net_bytes = o.allocated_bytes - o.freed_bytes;
    o.peak_delta_bytes = o.peak_bytes - o.start_bytes;
    if (out) *out = o;
    return PD_OK;
}

/* ---- the caching allocator as a plug-in ------------------------------- */
static void *host_alloc(void *ctx, size_t nbytes)
{
    PDI_UNUSED(ctx);
    return pdi_alloc(nbytes);
}

static void host_free(void *ctx, void *p, size_t nbytes)
{
    PDI_UNUSED(ctx);
    pdi_free(p, nbytes);
}

static int host_stats(void *ctx, struct pd_memory_stats *out)
{
    PDI_UNUSED(ctx);
    pd_memory_stats(out);
    return PD_OK;
}

static void host_reset_peak(void *ctx)
{
    PDI_UNUSED(ctx);
    pd_memory_reset_peak();
}

static void host_empty_cache(void *ctx)
{
    PDI_UNUSED(ctx);
    pd_memory_empty_cache();
}

const struct pd_allocator pdi_host_allocator = {
    .abi_version = PD_ALLOCATOR_ABI,
    .name = "host-caching",
    .alloc = host_alloc,
    .free = host_free,
    .stats = host_stats,
    .reset_peak = host_reset_peak,
    .empty_cache = host_empty_cache,
};
