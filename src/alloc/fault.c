/* paddle.c — fault injection (include/pd/memory.h, pd_fault_inject): one
 * process-wide counter over every allocation the library makes, and the
 * wrappers its own structures are allocated through.
 *
 * Every allocation asks pdi_fault_now() first: storages and kernel scratch
 * (pdi_alloc, pdi_allocator_alloc_plugged) and the library's own structures
 * (pdi_malloc / pdi_calloc / pdi_realloc / pdi_strdup / pdi_strndup, and
 * cJSON through cJSON_InitHooks). The wrappers add no header: a block from
 * pdi_malloc is an ordinary malloc block and goes back with free(), so
 * strings handed to callers ("free() it") are unchanged.
 *
 * Off (the default), the cost is one relaxed atomic load per allocation.
 * Armed, the counter is an atomic add, so allocations from every thread
 * (OpenMP workers taking scratch included) count, in the order they happen.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/internal.h"

static int64_t fault_nth;     /* 0: off; else the allocation (1-based) that fails */
static int fault_persist;     /* fail fault_nth and every later one */
static int64_t fault_seen;    /* allocations counted since armed */
static int64_t fault_hits;    /* failures injected since armed */

void pd_fault_inject(int64_t nth, int persist)
{
    if (nth < 0) nth = 0;
    __atomic_store_n(&fault_nth, 0, __ATOMIC_SEQ_CST); /* off while the counters reset */
    __atomic_store_n(&fault_seen, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&fault_hits, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&fault_persist, persist != 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&fault_nth, nth, __ATOMIC_SEQ_CST);
}

int64_t pd_fault_count(void) { return __atomic_load_n(&fault_seen, __ATOMIC_SEQ_CST); }
int64_t pd_fault_hits(void) { return __atomic_load_n(&fault_hits, __ATOMIC_SEQ_CST); }

int pdi_fault_now(void)
{
    int64_t nth = __atomic_load_n(&fault_nth, __ATOMIC_RELAXED);
    if (!nth) return 0;
    int64_t n = __atomic_add_fetch(&fault_seen, 1, __ATOMIC_SEQ_CST);
    if (n == nth || (n > nth && __atomic_load_n(&fault_persist, __ATOMIC_RELAXED))) {
        __atomic_add_fetch(&fault_hits, 1, __ATOMIC_SEQ_CST);
        return 1;
    }
    return 0;
}

void *pdi_malloc(size_t n) { return pdi_fault_now() ? NULL : malloc(n); }
void *pdi_calloc(size_t n, size_t size) { return pdi_fault_now() ? NULL : calloc(n, size); }
/* On failure p is left as it was (realloc's contract). */
void *pdi_realloc(void *p, size_t n) { return pdi_fault_now() ? NULL : realloc(p, n); }

char *pdi_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = pdi_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

char *pdi_strndup(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    char *d = pdi_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* cJSON's hooks are process-wide. They are installed when the library is
 * loaded, before main() and so before any thread exists; a program that
 * installs its own hooks afterwards keeps them (cJSON is then not counted). */
__attribute__((constructor)) static void json_hooks(void)
{
    cJSON_Hooks h = {pdi_malloc, free};
    cJSON_InitHooks(&h);
}
