/* paddle.c — call sites: where in the user's code an op was called.
 *
 * Capture (per op, only while on) stores one raw return address: the first
 * backtrace() frame outside libpaddlec (outside the address range of its
 * loaded segments, so frames of the library's own composite ops are
 * skipped).
 * Resolution is lazy and cached by address: `addr2line -f -C` on the frame's
 * object gives "file:line (function)"; without addr2line or debug info the
 * dynamic symbol name (or object+offset) is used. Resolved strings are
 * interned: valid for the life of the process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pd/debug.h"

static void *self_base;                /* load address of libpaddlec */
static uintptr_t self_lo, self_hi;     /* its loaded segments, [lo, hi) */

static int find_range(struct dl_phdr_info *info, size_t size, void *ctx)
{
    PDI_UNUSED(size);
    PDI_UNUSED(ctx);
    if ((void *)info->dlpi_addr != self_base) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!self_lo || lo < self_lo) self_lo = lo;
        if (hi > self_hi) self_hi = hi;
    }
    return 1;
}

static void find_self(void)
{
    Dl_info di;
    /* dladdr costs far more than a backtrace: find the library's address
     * range once, then each frame is two compares */
    if (dladdr((void *)&find_self, &di)) self_base = di.dli_fbase;
    dl_iterate_phdr(find_range, NULL);
    void *warm[4];
    backtrace(warm, 4); /* the first call loads libgcc_s: do it here, not inside an op */
}
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

int pd_debug_set_callsites(int on)
{
    pthread_once(&self_once, find_self);
    int prev = (pdi_debug_flags & PDI_DBG_CALLSITE) != 0;
    pdi_debug_flag_set(PDI_DBG_CALLSITE, on);
    return prev;
}

void *pdi_capture_site(void)
{
    pthread_once(&self_once, find_self); /* host-access events capture without pd_debug_set_callsites */
    void *fr[48];
    int n = backtrace(fr, 48);
    for (int i = 1; i < n; i++) {
        uintptr_t a = (uintptr_t)fr[i];
        if (a < self_lo || a >= self_hi) return fr[i];
    }
    return NULL;
}

/* ---- resolution ------------------------------------------------------- */
struct site {
    void *addr;
    const char *str;
    struct site *next;
};
#define SITE_BUCKETS 512
static struct site *sites[SITE_BUCKETS];
static pthread_mutex_t site_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int run_addr2line(const char *obj, uintptr_t off, char *fn, size_t fnn, char *loc, size_t locn)
{
    char cmd[1200];
    /* the object path goes in single quotes; refuse paths that would break them */
    if (strchr(obj, '\'') || strlen(obj) > 1000) return -1;
    snprintf(cmd, sizeof cmd, "addr2line -f -C -e '%s' 0x%lx 2>/dev/null", obj, (unsigned long)off);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    int ok = fgets(fn, (int)fnn, p) && fgets(loc, (int)locn, p);
    pclose(p);
    if (!ok) return -1;
    fn[strcspn(fn, "\n")] = 0;
    loc[strcspn(loc, "\n")] = 0;
    return 0;
}

static const char *resolve(void *addr)
{
    Dl_info di;
    memset(&di, 0, sizeof di);
    char out[1100];
    if (!dladdr(addr, &di) || !di.dli_fbase) {
        snprintf(out, sizeof out, "%p", addr);
        return pdi_intern(out);
    }
    const char *obj = di.dli_fname && di.dli_fname[0] ? di.dli_fname : "/proc/self/exe";
    /* PIE executables and shared objects (ET_DYN) are looked up by offset
     * from their load address; fixed-address executables by address. A
     * return address points after the call: step back one byte so the line
     * is the call's, not the next statement's. */
    const ElfW(Ehdr) *eh = di.dli_fbase;
    uintptr_t a = (uintptr_t)addr - 1;
    uintptr_t off = eh->e_type == ET_DYN ? a - (uintptr_t)di.dli_fbase : a;
    char fn[256], loc[512];
    if (run_addr2line(obj, off, fn, sizeof fn, loc, sizeof loc) == 0 && loc[0] != '?') {
        char *disc = strstr(loc, " (discriminator");
        if (disc) *disc = 0;
        snprintf(out, sizeof out, "%s (%s)", base_name(loc), fn[0] && fn[0] != '?' ? fn : "?");
    } else if (di.dli_sname) {
        snprintf(out, sizeof out, "%s+0x%lx (%s)", base_name(obj), (unsigned long)((uintptr_t)addr - (uintptr_t)di.dli_saddr),
                 di.dli_sname);
    } else {
        snprintf(out, sizeof out, "%s+0x%lx", base_name(obj), (unsigned long)off);
    }
    return pdi_intern(out);
}

const char *pdi_site_str(void *addr)
{
    if (!addr) return NULL;
    size_t h = ((uintptr_t)addr >> 2) % SITE_BUCKETS;
    pthread_mutex_lock(&site_mu);
    for (struct site *s = sites[h]; s; s = s->next)
        if (s->addr == addr) { pthread_mutex_unlock(&site_mu); return s->str; }
    pthread_mutex_unlock(&site_mu);
    const char *str = resolve(addr); /* slow (a process): outside the lock */
    if (!str) return NULL;
    struct site *s = pdi_malloc(sizeof *s);
    if (!s) return str;
    s->addr = addr;
    s->str = str;
    pthread_mutex_lock(&site_mu);
    s->next = sites[h];
    sites[h] = s;
    pthread_mutex_unlock(&site_mu);
    return str;
}

const char *pdi_call_site(const struct pdi_call *c) { return c->dbg_site ? pdi_site_str(c->dbg_site) : NULL; }

const char *pd_tensor_callsite(const struct pd_tensor *t)
{
    return t && t->grad_fn && t->grad_fn->site ? pdi_site_str(t->grad_fn->site) : NULL;
}
