/* paddle.c — memory statistics against a hand count: known tensors, exact
 * byte figures given the allocator's size classes (four per power of two,
 * 256-byte minimum), cache hits, record regions (nested), the summary table
 * and the error paths. */
#include <stdlib.h>
#include <string.h>

#include "pt.h"
#include "pd/memory.h"

static struct pd_tensor *vec(int64_t n, enum pd_dtype dt)
{
    return pd_empty(&n, 1, dt);
}

int main(void)
{
    /* The cache limit is read at the first free; sanitizer builds (PD_SANITIZE)
     * disable the cache whatever this says, and the checks below follow. */
    setenv("PD_ALLOC_CACHE_MB", "64", 1);
    pd_memory_empty_cache();
    struct pd_memory_stats s0, s;
    pd_memory_stats(&s0);
    PT_CHECK(s0.cached_bytes == 0 && s0.n_cached_blocks == 0);
    PT_CHECK(s0.reserved_bytes == s0.allocated_bytes);

    PT_CHECK(pd_memory_record_begin() == 1);
    /* 1000 f32 = 4000 B -> 4096; 10 f64 = 80 B -> 256 (minimum);
     * 300000 f32 = 1,200,000 B -> 5 * 2^18 = 1,310,720 */
    struct pd_tensor *a = vec(1000, PD_F32), *b = vec(10, PD_F64), *c = vec(300000, PD_F32);
    PT_CHECK(a && b && c);
    pd_memory_stats(&s);
    PT_CHECK(s.allocated_bytes - s0.allocated_bytes == 4096 + 256 + 1310720);
    PT_CHECK(s.active_bytes == s.allocated_bytes);
    PT_CHECK(s.requested_bytes - s0.requested_bytes == 4000 + 80 + 1200000);
    PT_CHECK(s.reserved_bytes - s0.reserved_bytes == 4096 + 256 + 1310720); /* cache was empty: all from the OS */
    PT_CHECK(s.n_os_allocs - s0.n_os_allocs == 3);
    PT_CHECK(s.n_cache_hits == s0.n_cache_hits);
    PT_CHECK(s.n_live - s0.n_live == 3);
    PT_CHECK(s.n_allocs - s0.n_allocs == 3);
    PT_CHECK(s.peak_allocated_bytes >= s.allocated_bytes);

    /* Freeing c caches its block: allocated drops, reserved does not. */
    pd_tensor_release(c);
    pd_memory_stats(&s);
    int cache = s.cached_bytes > 0;
    if (!cache) printf("allocator cache off (sanitizer build): checking the uncached figures\n");
    PT_CHECK(s.allocated_bytes - s0.allocated_bytes == 4096 + 256);
    PT_CHECK(s.reserved_bytes - s0.reserved_bytes == 4096 + 256 + (cache ? 1310720 : 0));
    PT_CHECK(cache ? s.cached_bytes == 1310720 && s.n_cached_blocks == 1 : s.n_os_frees - s0.n_os_frees == 1);
    PT_CHECK(s.reserved_bytes == s.allocated_bytes + s.cached_bytes);

    /* 290000 f32 = 1,160,000 B rounds to the same class: a cache hit. */
    struct pd_tensor *d = vec(290000, PD_F32);
    pd_memory_stats(&s);
    PT_CHECK(s.n_cache_hits - s0.n_cache_hits == cache);
    PT_CHECK(s.n_os_allocs - s0.n_os_allocs == 3 + !cache);
    PT_CHECK(s.cached_bytes == 0);
    PT_CHECK(s.requested_bytes - s0.requested_bytes == 4000 + 80 + 1160000);

    /* A nested region: 2000 f32 = 8000 B -> 8192, freed inside. */
    PT_CHECK(pd_memory_record_begin() == 2);
    struct pd_tensor *e = vec(2000, PD_F32);
    pd_tensor_release(e);
    struct pd_memory_record in, out;
    PT_CHECK(pd_memory_record_end(&in) == PD_OK);
    PT_CHECK(in.allocated_bytes == 8192 && in.freed_bytes == 8192 && in.net_bytes == 0);
    PT_CHECK(in.n_allocs == 1 && in.n_frees == 1);
    PT_CHECK(in.peak_delta_bytes == 8192);
    PT_CHECK(in.start_bytes == s0.allocated_bytes + 4096 + 256 + 1310720);

    pd_tensor_release(d);
    PT_CHECK(pd_memory_record_end(&out) == PD_OK);
    PT_CHECK(out.allocated_bytes == 4096 + 256 + 1310720 + 1310720 + 8192);
    PT_CHECK(out.freed_bytes == 1310720 + 8192 + 1310720);
    PT_CHECK(out.net_bytes == 4096 + 256);
    PT_CHECK(out.n_allocs == 5 && out.n_frees == 3);
    PT_CHECK(out.start_bytes == s0.allocated_bytes);
    /* peak: a, b, d and e alive together */
    PT_CHECK(out.peak_delta_bytes == 4096 + 256 + 1310720 + 8192);
    PT_CHECK(out.peak_bytes == s0.allocated_bytes + out.peak_delta_bytes);

    /* Peaks and reset. */
    pd_memory_stats(&s);
    PT_CHECK(s.peak_allocated_bytes >= s0.allocated_bytes + 4096 + 256 + 1310720 + 8192);
    pd_memory_reset_peak();
    pd_memory_stats(&s);
    PT_CHECK(s.peak_allocated_bytes == s.allocated_bytes);
    PT_CHECK(s.peak_reserved_bytes == s.reserved_bytes);
    PT_CHECK(s.peak_live == s.n_live);

    /* The summary table: fixed width, the rows PyTorch users expect, the formula. */
    char *t = pd_memory_summary();
    PT_CHECK(t != NULL);
    if (t) {
        PT_CHECK(strstr(t, "Allocated memory") && strstr(t, "Reserved memory") && strstr(t, "Active allocs"));
        PT_CHECK(strstr(t, "1 - peak_allocated / peak_reserved") != NULL);
        int bad = 0, lines = 0;
        for (char *l = t; *l; lines++) {
            char *nl = strchr(l, '\n');
            if (!nl) { bad++; break; }
            if (nl - l != 77) bad++;
            l = nl + 1;
        }
        PT_CHECK(bad == 0 && lines > 10);
        printf("%s", t);
        free(t);
    }

    /* empty_cache hands every cached block back. */
    pd_tensor_release(a);
    pd_tensor_release(b);
    pd_memory_empty_cache();
    pd_memory_stats(&s);
    PT_CHECK(s.cached_bytes == 0 && s.reserved_bytes == s.allocated_bytes);
    PT_CHECK(s.allocated_bytes == s0.allocated_bytes);
    PT_CHECK(s.n_os_frees - s0.n_os_frees == (cache ? 4 : 5)); /* a, b, the c/d block and e's (c, d, e apart without cache) */

    /* Errors: end without begin; nesting limit. */
    PT_CHECK(pd_memory_record_end(&out) == PD_ERR_STATE);
    PT_CHECK(strstr(pd_last_error(), "no region open") != NULL);
    int depth = 0, rc;
    while ((rc = pd_memory_record_begin()) > 0) depth = rc;
    PT_CHECK(depth == 32 && rc == PD_ERR_STATE);
    PT_CHECK(strstr(pd_last_error(), "nested deeper") != NULL);
    for (int i = 0; i < depth; i++) PT_CHECK(pd_memory_record_end(NULL) == PD_OK);
    PT_CHECK(pd_memory_record_end(NULL) == PD_ERR_STATE);
    PT_DONE();
}
