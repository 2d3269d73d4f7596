/* paddle.c — pd_memory_summary: the allocator statistics of src/alloc as a
 * table laid out like torch.cuda.memory_summary() (77 columns; sizes in
 * B/KiB/MiB/GiB, counts in K/M, switching unit at 768 of the smaller one as
 * PyTorch does), plus the fragmentation rate of the memory_debug spec §1.6.
 *
 * Reads one consistent snapshot (pd_memory_stats); owns nothing but the
 * returned string, which the caller frees.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define WIDTH 77

struct buf {
    char *s;
    size_t n, cap;
};

static int bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bprintf(struct buf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) return -1;
        if (b->n + (size_t)k < b->cap) { b->n += (size_t)k; return 0; }
        size_t cap = (b->cap + (size_t)k) * 2;
        char *s = pdi_realloc(b->s, cap);
        if (!s) return -1;
        b->s = s;
        b->cap = cap;
    }
}

/* "  1234 KiB": PyTorch's _format_size (move to the next unit while the
 * value is at least 768 Ki of the current one). */
static void fmt_size(char *out, size_t n, int64_t v)
{
    static const char *units[] = {"B  ", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    int64_t x = v;
    while (u < 4 && (x < 0 ? -x : x) >= 768 * 1024) {
        x /= 1024;
        u++;
    }
    snprintf(out, n, "%6lld %s", (long long)x, units[u]);
}

static void fmt_count(char *out, size_t n, int64_t v)
{
    static const char *units[] = {" ", "K", "M", "G"};
    int u = 0;
    int64_t x = v;
    while (u < 3 && (x < 0 ? -x : x) >= 750000) {
        x /= 1000;
        u++;
    }
    snprintf(out, n, "%7lld %s", (long long)x, units[u]);
}

enum { NONE = -1 };

static int row(struct buf *b, const char *name, int sizes, int64_t cur, int64_t peak, int64_t tot_a, int64_t tot_f)
{
    int64_t v[4] = {cur, peak, tot_a, tot_f};
    char c[4][24];
    for (int i = 0; i < 4; i++) {
        if (v[i] == NONE) snprintf(c[i], sizeof c[i], "%10s", "-");
        else if (sizes) fmt_size(c[i], sizeof c[i], v[i]);
        else fmt_count(c[i], sizeof c[i], v[i]);
    }
    return bprintf(b, "| %-21s | %-10s | %-10s | %-10s | %-10s |\n", name, c[0], c[1], c[2], c[3]);
}

static int rule(struct buf *b, char ch)
{
    char line[WIDTH + 1];
    memset(line, ch, WIDTH);
    line[0] = line[WIDTH - 1] = '|';
    line[WIDTH] = 0;
    return bprintf(b, "%s\n", line);
}

static int text(struct buf *b, const char *s)
{
    return bprintf(b, "| %-*s|\n", WIDTH - 3, s);
}

char *pd_memory_summary(void)
{
    struct pd_memory_stats s;
    pd_memory_stats(&s);
    struct buf b = {pdi_malloc(4096), 0, 4096};
    if (!b.s) return pdi_error(PD_ERR_NOMEM, "pd_memory_summary: out of memory");
    char line[128], frag[64];
    double fr = s.peak_reserved_bytes > 0 ? 1.0 - (double)s.peak_allocated_bytes / (double)s.peak_reserved_bytes : 0.0;
    snprintf(frag, sizeof frag, "%.1f%%", 100.0 * fr);
    int rc = 0;
    rc |= rule(&b, '=');
    rc |= text(&b, "             paddle.c host memory summary (caching allocator)");
    rc |= rule(&b, '-');
    snprintf(line, sizeof line, "Cache hits: %-10lld | OS allocs: %-10lld | OS frees: %-10lld",
             (long long)s.n_cache_hits, (long long)s.n_os_allocs, (long long)s.n_os_frees);
    rc |= text(&b, line);
    rc |= rule(&b, '=');
    rc |= bprintf(&b, "| %-21s | %-10s | %-10s | %-10s | %-10s |\n", "       Metric", "Cur Usage", "Peak Usage",
                  "Tot Alloc", "Tot Freed");
    rc |= rule(&b, '-');
    rc |= row(&b, "Allocated memory", 1, s.allocated_bytes, s.peak_allocated_bytes, s.total_allocated_bytes,
              s.total_freed_bytes);
    rc |= row(&b, "Active memory", 1, s.active_bytes, s.peak_active_bytes, s.total_allocated_bytes, s.total_freed_bytes);
    rc |= row(&b, "Requested memory", 1, s.requested_bytes, s.peak_requested_bytes, NONE, NONE);
    rc |= row(&b, "Reserved memory", 1, s.reserved_bytes, s.peak_reserved_bytes, NONE, NONE);
    rc |= row(&b, "Cached (inactive) mem", 1, s.cached_bytes, NONE, NONE, NONE);
    rc |= rule(&b, '-');
    rc |= row(&b, "Allocations", 0, s.n_live, s.peak_live, s.n_allocs, s.n_frees);
    rc |= row(&b, "Active allocs", 0, s.n_live, s.peak_live, s.n_allocs, s.n_frees);
    rc |= row(&b, "Cached blocks", 0, s.n_cached_blocks, NONE, NONE, NONE);
    rc |= row(&b, "OS blocks", 0, s.n_os_allocs - s.n_os_frees, NONE, s.n_os_allocs, s.n_os_frees);
    rc |= rule(&b, '-');
    snprintf(line, sizeof line, "Fragmentation = 1 - peak_allocated / peak_reserved = %s", frag);
    rc |= text(&b, line);
    rc |= rule(&b, '=');
    if (rc) {
        free(b.s);
        return pdi_error(PD_ERR_NOMEM, "pd_memory_summary: out of memory");
    }
    return b.s;
}
