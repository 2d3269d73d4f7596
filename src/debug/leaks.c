/* paddle.c — live-tensor tracking: which tensors are still alive, and
 * which line of the user's code made them (docs/debugging.md, "Leaks").
 *
 * While tracking is on, every new tensor handle records the first return
 * address outside libpaddlec (pdi_capture_site, as call sites do) and joins
 * an intrusive list; pd_tensor_release takes it out. A tensor made while
 * tracking was off is never listed. PD_DEBUG_LEAKS=1 in the environment
 * turns tracking on when the library loads and prints the report of what
 * is still alive to stderr at exit. Off, the cost is one test per tensor
 * made and one per tensor freed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pd/debug.h"

int pdi_live_tracking;
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pd_tensor *live_head; /* most recent first */
static int at_exit_registered;

void pdi_live_add(struct pd_tensor *t)
{
    t->dbg_site = pdi_capture_site();
    pthread_mutex_lock(&live_mu);
    t->dbg_live_prev = NULL;
    t->dbg_live_next = live_head;
    if (live_head) live_head->dbg_live_prev = t;
    live_head = t;
    t->dbg_tracked = 1;
    pthread_mutex_unlock(&live_mu);
}

void pdi_live_remove(struct pd_tensor *t)
{
    pthread_mutex_lock(&live_mu);
    if (t->dbg_live_prev)
        t->dbg_live_prev->dbg_live_next = t->dbg_live_next;
    else
        live_head = t->dbg_live_next;
    if (t->dbg_live_next) t->dbg_live_next->dbg_live_prev = t->dbg_live_prev;
    t->dbg_tracked = 0;
    pthread_mutex_unlock(&live_mu);
}

int pd_debug_track_live(int on)
{
    int prev = __atomic_exchange_n(&pdi_live_tracking, on ? 1 : 0, __ATOMIC_RELAXED);
    return prev;
}

/* One line per call site (resolved: two calls on one line are one site),
 * the sites with most tensors first, at most MAX_SITES, each with a count
 * and up to three examples. */
#define MAX_SITES 64
struct site_count {
    const char *where; /* interned (pdi_site_str), or NULL: unknown */
    int64_t n;
    const struct pd_tensor *ex[3];
};

static int by_count_desc(const void *a, const void *b)
{
    const struct site_count *x = a, *y = b;
    return x->n < y->n ? 1 : x->n > y->n ? -1 : 0;
}

int64_t pd_debug_report_live(FILE *f)
{
    struct site_count sc[MAX_SITES];
    int n_sites = 0;
    int64_t total = 0, other = 0;
    pthread_mutex_lock(&live_mu);
    for (struct pd_tensor *t = live_head; t; t = t->dbg_live_next) {
        total++;
        if (!f) continue;
        const char *where = pdi_site_str(t->dbg_site); /* cached per address */
        int k = 0;
        while (k < n_sites && sc[k].where != where) k++;
        if (k == n_sites) {
            if (n_sites == MAX_SITES) { other++; continue; }
            sc[n_sites++] = (struct site_count){.where = where};
        }
        if (sc[k].n < 3) sc[k].ex[sc[k].n] = t;
        sc[k].n++;
    }
    if (f && total) {
        qsort(sc, (size_t)n_sites, sizeof *sc, by_count_desc);
        fprintf(f, "paddle.c: %lld tensor%s still alive (made while leak tracking was on):\n", (long long)total,
                total == 1 ? "" : "s");
        for (int k = 0; k < n_sites; k++) {
            fprintf(f, "  %lld made at %s:", (long long)sc[k].n, sc[k].where ? sc[k].where : "(unknown site)");
            for (int j = 0; j < 3 && j < sc[k].n; j++) {
                char name[PDI_NAME_BUF], shape[PDI_SHAPE_BUF];
                const struct pd_tensor *t = sc[k].ex[j];
                fprintf(f, "%s %s %s %s", j ? "," : "", pdi_tensor_name_buf(t, name, sizeof name),
                        pd_dtype_name(t->dtype), pdi_shape_str(t->shape, t->ndim, shape, sizeof shape));
            }
            fprintf(f, "%s\n", sc[k].n > 3 ? ", ..." : "");
        }
        if (other) fprintf(f, "  %lld more made at other sites\n", (long long)other);
        fprintf(f, "paddle.c: release them, or make them inside pd_scope_begin/pd_scope_end (docs/tensors.md)\n");
        fflush(f);
    }
    pthread_mutex_unlock(&live_mu);
    return total;
}

static void report_at_exit(void) { pd_debug_report_live(stderr); }

__attribute__((constructor)) static void leaks_from_env(void)
{
    const char *e = getenv("PD_DEBUG_LEAKS");
    if (!e || !*e || !strcmp(e, "0")) return;
    pd_debug_track_live(1);
    if (!at_exit_registered && atexit(report_at_exit) == 0) at_exit_registered = 1;
}
