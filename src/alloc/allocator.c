/* paddle.c — allocators as plug-ins (include/pd/memory.h): the process-wide
 * default, the checks every plugged allocator passes, and kernel scratch
 * through the allocator of the call.
 *
 * Invariants:
 *   - the default is never NULL: pd_allocator_host() until replaced;
 *   - an allocator is checked once, when it is installed (as the default or
 *     as a backend's): the hot paths call its slots without checking;
 *   - a block goes back to the allocator that made it: storages record it
 *     (src/core/tensor.c), scratch is freed through the same call's.
 * The default is read on every allocation without a lock (one atomic load);
 * replacing it is a single atomic store.
 */
#include <string.h>

#include "core/internal.h"

const struct pd_allocator *pdi_default_alloc = &pdi_host_allocator;

const struct pd_allocator *pd_allocator_host(void) { return &pdi_host_allocator; }
const struct pd_allocator *pd_allocator_default(void) { return pdi_allocator_default(); }

int pdi_allocator_check(const struct pd_allocator *a, const char *who)
{
    if (!a) return pdi_errorf(PD_ERR_NULL, "%s: NULL allocator", who);
    const char *name = a->name ? a->name : "(unnamed)";
    if (a->abi_version < 1 || a->abi_version > PD_ALLOCATOR_ABI)
        return pdi_errorf(PD_ERR_INVALID, "%s: allocator '%s' has abi_version %u; this library reads 1 to %d", who,
                          name, (unsigned)a->abi_version, PD_ALLOCATOR_ABI);
    if (!a->alloc || !a->free)
        return pdi_errorf(PD_ERR_INVALID, "%s: allocator '%s' has no %s slot (alloc and free are required)", who,
                          name, a->alloc ? "free" : "alloc");
    return PD_OK;
}

int pd_allocator_set_default(const struct pd_allocator *a)
{
    if (!a) a = &pdi_host_allocator;
    int rc = pdi_allocator_check(a, "pd_allocator_set_default");
    if (rc) return rc;
    __atomic_store_n(&pdi_default_alloc, a, __ATOMIC_RELEASE);
    return PD_OK;
}

int pd_allocator_stats(const struct pd_allocator *a, struct pd_memory_stats *out)
{
    if (!a || !out) return pdi_errorf(PD_ERR_NULL, "pd_allocator_stats: NULL %s", a ? "out" : "allocator");
    if (!a->stats)
        return pdi_errorf(PD_ERR_UNSUPPORTED, "pd_allocator_stats: allocator '%s' keeps no statistics",
                          a->name ? a->name : "(unnamed)");
    memset(out, 0, sizeof *out);
    return a->stats(a->ctx, out);
}

const struct pd_allocator *pd_tensor_allocator(const struct pd_tensor *t)
{
    return t && t->st ? t->st->alloc : NULL;
}

void *pdi_allocator_alloc_plugged(const struct pd_allocator *a, size_t nbytes)
{
    void *p = pdi_fault_now() ? NULL : a->alloc(a->ctx, nbytes);
    if (!p) /* the host allocator says why itself; a plugged one may not */
        pdi_error(PD_ERR_NOMEM, "out of memory: allocator '%s' failed to allocate %zu bytes",
                  a->name ? a->name : "(unnamed)", nbytes);
    return p;
}

/* ---- kernel scratch ---------------------------------------------------- */
/* A kcall built outside the dispatcher (alloc NULL) takes the default. */
static const struct pd_allocator *kalloc(const struct pdi_kcall *k)
{
    return k && k->alloc ? k->alloc : pdi_allocator_default();
}

void *pdi_kscratch(const struct pdi_kcall *k, size_t nbytes) { return pdi_allocator_alloc(kalloc(k), nbytes); }

void *pdi_kscratch_zero(const struct pdi_kcall *k, size_t nbytes)
{
    void *p = pdi_kscratch(k, nbytes);
    if (p) memset(p, 0, nbytes);
    return p;
}

void pdi_kscratch_free(const struct pdi_kcall *k, void *p, size_t nbytes)
{
    if (p) pdi_allocator_free(kalloc(k), p, nbytes);
}
