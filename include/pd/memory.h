/* paddle.c — allocators as plug-ins, allocator statistics, a PyTorch-like
 * summary table and region recording.
 *
 * Every storage's bytes come from an allocator (struct pd_allocator below)
 * and go back to the same one: a storage records the allocator that made
 * it, so replacing the process default never sends a block to the wrong
 * free. The built-in caching allocator (pd_allocator_host) is the default;
 * pd_memory_stats, pd_memory_summary, the record regions and
 * pd_memory_empty_cache describe that allocator. Kernel scratch (packed
 * panels, workspaces, partial sums) comes from the allocator of the call,
 * so it is counted too.
 *
 * Sizes are counted after rounding to the allocator's size classes (what the
 * memory actually costs), except requested_bytes (what callers asked for).
 * Vocabulary (the same as torch.cuda.memory_stats where it applies):
 *   allocated  bytes of blocks handed out and not yet freed;
 *   active     blocks in use. On the host a free is immediate (no stream
 *              to wait on), so active == allocated; both are reported so
 *              that a future device allocator can differ;
 *   cached     freed blocks kept on the allocator's free lists (inactive);
 *   reserved   bytes obtained from the OS = allocated + cached.
 * Peaks are high-water marks since start or the last pd_memory_reset_peak().
 */
#ifndef PD_MEMORY_H
#define PD_MEMORY_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
struct pd_memory_stats {
    int64_t allocated_bytes;      /* live bytes handed out */
    int64_t peak_allocated_bytes; /* high-water mark since the last reset */
    int64_t reserved_bytes;       /* bytes held from the OS: allocated + cached free blocks */
    int64_t n_allocs;             /* allocations ever made */
    int64_t n_frees;
    int64_t n_live;               /* live allocations */
    /* --- added with the debugging tools (issue 5) --- */
    int64_t active_bytes;         /* == allocated_bytes on the host (see above) */
    int64_t peak_active_bytes;
    int64_t requested_bytes;      /* live bytes as requested, before rounding */
    int64_t peak_requested_bytes;
    int64_t peak_reserved_bytes;
    int64_t cached_bytes;         /* reserved - allocated: free blocks kept for reuse */
    int64_t n_cached_blocks;
    int64_t peak_live;            /* most allocations alive at once */
    int64_t total_allocated_bytes; /* running sum of every allocation's size */
    int64_t total_freed_bytes;
    int64_t n_cache_hits;         /* allocations served from the free lists */
    int64_t n_os_allocs;          /* blocks obtained from the OS (aligned_alloc) */
    int64_t n_os_frees;           /* blocks returned to the OS */
};
void pd_memory_stats(struct pd_memory_stats *out);
/* Reset every peak to the current value. */
void pd_memory_reset_peak(void);
/* Return cached free blocks to the system (allocated_bytes is unchanged). */
void pd_memory_empty_cache(void);
/* The statistics as a fixed-width table like torch.cuda.memory_summary(),
 * with the fragmentation rate 1 - peak_allocated / peak_reserved. The string
 * is malloc'd: free() it. NULL (with an error) only when out of memory. */
char *pd_memory_summary(void);

/* What a region of code allocated. Regions nest (up to 32 deep) and are
 * process-wide: allocations from every thread count. */
struct pd_memory_record {
    int64_t allocated_bytes; /* sum of the sizes of blocks allocated in the region */
    int64_t freed_bytes;     /* sum of the sizes of blocks freed in the region */
    int64_t net_bytes;       /* allocated - freed: what the region left alive */
    int64_t n_allocs, n_frees;
    int64_t start_bytes;     /* allocated_bytes when the region began */
    int64_t peak_bytes;      /* highest allocated_bytes seen during the region */
    int64_t peak_delta_bytes; /* peak_bytes - start_bytes: the region's own high-water mark */
};
/* Returns the new depth (>= 1), or a negative status when nested too deep. */
int pd_memory_record_begin(void);
/* Close the innermost region and fill *out (may be NULL). Returns PD_OK or a
 * negative status when no region is open. */
int pd_memory_record_end(struct pd_memory_record *out);
/* ---- allocators as plug-ins ------------------------------------------ */
/* A versioned table of functions, as sqlite's VFS: abi_version says which
 * slots the struct has (later versions only append slots); required slots
 * must be set, optional ones may be NULL. The struct (and ctx) must outlive
 * every block it handed out, and every slot must be thread-safe: kernels
 * ask for scratch from worker threads. */
#define PD_ALLOCATOR_ABI 1
struct pd_allocator {
    uint32_t abi_version; /* PD_ALLOCATOR_ABI when the struct was compiled */
    const char *name;     /* for messages ("host-caching", "counting", ...) */
    void *ctx;            /* passed to every slot */
    /* required: a block of at least nbytes (nbytes may be 0), 64-byte
     * aligned (kernels use aligned vector loads), or NULL when out of memory. */
    void *(*alloc)(void *ctx, size_t nbytes);
    /* required: p (never NULL) with the nbytes it was allocated with. */
    void (*free)(void *ctx, void *p, size_t nbytes);
    /* optional: statistics in the vocabulary above (fields it does not
     * keep are 0); returns 0 or a negative status. */
    int (*stats)(void *ctx, struct pd_memory_stats *out);
    /* optional: as pd_memory_reset_peak / pd_memory_empty_cache. */
    void (*reset_peak)(void *ctx);
    void (*empty_cache)(void *ctx);
};
struct pd_tensor;

/* The built-in caching allocator (the one pd_memory_stats describes). */
const struct pd_allocator *pd_allocator_host(void);
/* The allocator new storages come from when their backend names none. */
const struct pd_allocator *pd_allocator_default(void);
/* Replace the process-wide default (NULL: back to pd_allocator_host()).
 * Storages made before keep freeing through the allocator that made them.
 * PD_ERR_INVALID (and nothing changes) for an abi_version this library
 * cannot read or a missing required slot. */
int pd_allocator_set_default(const struct pd_allocator *a);
/* a's statistics through its stats slot; PD_ERR_UNSUPPORTED when it has
 * none, PD_ERR_NULL for NULL arguments. */
int pd_allocator_stats(const struct pd_allocator *a, struct pd_memory_stats *out);
/* The allocator that made t's storage; NULL for a NULL tensor or a storage
 * whose bytes the library does not own. */
const struct pd_allocator *pd_tensor_allocator(const struct pd_tensor *t);
/* ---- fault injection (tests; sqlite's OOM testing) ------------------ */
/* Make the nth allocation from now fail (1: the next one), as if out of
 * memory; with persist, that one and every later one fail. nth = 0 turns
 * injection off (the default); nth = INT64_MAX only counts. Every allocation
 * the library makes counts: storages from any allocator, kernel scratch, and
 * its own structures (tensors, grad nodes, state dicts, tokenizer tables,
 * cJSON trees, file headers). The failing call returns NULL or a negative
 * status with its one-line error, as for a real out-of-memory. The counter
 * is process-wide (allocations on every thread count) and is reset by each
 * call; docs/reliability.md shows the sweep built on it. */
void pd_fault_inject(int64_t nth, int persist);
/* Allocations counted since the last pd_fault_inject (0 while off). */
int64_t pd_fault_count(void);
/* Failures injected since the last pd_fault_inject. */
int64_t pd_fault_hits(void);
#ifdef __cplusplus
}
#endif
#endif
