/* paddle.c — allocator statistics. Sizes are counted after rounding to the
 * allocator's size classes (what the memory actually costs). */
#ifndef PD_MEMORY_H
#define PD_MEMORY_H
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
};
void pd_memory_stats(struct pd_memory_stats *out);
void pd_memory_reset_peak(void);
/* Return cached free blocks to the system (allocated_bytes is unchanged). */
void pd_memory_empty_cache(void);
#ifdef __cplusplus
}
#endif
#endif
