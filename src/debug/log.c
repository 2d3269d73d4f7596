/* paddle.c — the logger: per-module levels, scoped guards, one sink.
 *
 * Levels live in a small process-wide table (module -> level, "*" is the
 * default); guards are a thread-local chain of interned, immutable
 * snapshots (parent, module, level), so a GradNode can keep a pointer to
 * the chain active when it was created and backward can log it under the
 * same guards later. The dispatcher's debug branch (PDI_DBG_LOG) is on only
 * while some level is set or some thread runs under a guard; library code
 * logs only through pdi_log, which is the only place that writes.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pd/debug.h"

struct pdi_log_guards {
    const struct pdi_log_guards *parent;
    const char *module; /* interned */
    int level;
    struct pdi_log_guards *next; /* all snapshots ever made (reused, never freed) */
};

#define MAX_MODULES 64
static struct {
    const char *module; /* interned */
    int level;
} levels[MAX_MODULES];
static int n_levels, any_level;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pdi_log_guards *all_guards;
static int active_guards; /* threads (or nodes in backward) running under a guard */
static PDI_TLS const struct pdi_log_guards *cur_guards;
static pd_log_sink_fn sink;
static void *sink_ctx;

static void update_flag(void)
{
    pdi_debug_flag_set(PDI_DBG_LOG, any_level || __atomic_load_n(&active_guards, __ATOMIC_RELAXED) > 0);
}

static int valid_module(const char *m)
{
    size_t n = strlen(m);
    if (n == 0 || n > 63) return 0;
    if (!strcmp(m, "*")) return 1;
    for (const char *p = m; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.') return 0;
    return 1;
}

int pd_set_log_level(const char *module, int level)
{
    if (!module) return pdi_errorf(PD_ERR_NULL, "set_log_level: NULL module");
    if (!valid_module(module))
        return pdi_errorf(PD_ERR_INVALID, "set_log_level: bad module name \"%.40s\" (letters, digits, '_', '.', or \"*\")",
                          module);
    if (level < 0 || level > 10) return pdi_errorf(PD_ERR_INVALID, "set_log_level: level %d outside [0, 10]", level);
    const char *m = pdi_intern(module);
    if (!m) return pd_last_status();
    pthread_mutex_lock(&log_mu);
    int i = 0;
    while (i < n_levels && levels[i].module != m) i++;
    if (i == n_levels) {
        if (n_levels == MAX_MODULES) {
            pthread_mutex_unlock(&log_mu);
            return pdi_errorf(PD_ERR_INVALID, "set_log_level: more than %d modules", MAX_MODULES);
        }
        levels[n_levels].module = m;
        n_levels++;
    }
    levels[i].level = level;
    any_level = 0;
    for (int k = 0; k < n_levels; k++) any_level |= levels[k].level > 0;
    update_flag();
    pthread_mutex_unlock(&log_mu);
    return PD_OK;
}

int pd_log_parse(const char *spec)
{
    if (!spec) return pdi_errorf(PD_ERR_NULL, "log_parse: NULL spec");
    char buf[512];
    if (strlen(spec) >= sizeof buf) return pdi_errorf(PD_ERR_INVALID, "log spec longer than %zu", sizeof buf - 1);
    strcpy(buf, spec);
    /* validate everything first, so a bad spec changes nothing */
    for (int pass = 0; pass < 2; pass++) {
        char tmp[512];
        strcpy(tmp, buf);
        char *save = NULL;
        for (char *tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ') tok++;
            char *eq = strchr(tok, '=');
            const char *mod = "*", *lv = tok;
            if (eq) { *eq = 0; mod = tok; lv = eq + 1; }
            char *end;
            long l = strtol(lv, &end, 10);
            if (end == lv || *end || l < 0 || l > 10 || !valid_module(mod))
                return pdi_errorf(PD_ERR_INVALID, "log spec \"%.80s\": expected \"module=level,...\" or \"level\" "
                                  "with levels 0..10", spec);
            if (pass == 1) {
                int rc = pd_set_log_level(mod, (int)l);
                if (rc) return rc;
            }
        }
    }
    return PD_OK;
}

__attribute__((constructor)) static void log_from_env(void)
{
    const char *e = getenv("PD_LOG");
    if (e && *e && pd_log_parse(e)) {
        /* a bad PD_LOG must not go unnoticed, and there is no caller to
         * return to: say it once through the logger itself */
        char msg[600];
        snprintf(msg, sizeof msg, "ignoring PD_LOG: %s", pd_last_error());
        pd_clear_error();
        fprintf(stderr, "[log:1] %s\n", msg);
    }
}

static int table_level(const char *module)
{
    int def = 0, lv = -1;
    for (int i = 0; i < n_levels; i++) {
        if (!strcmp(levels[i].module, module)) lv = levels[i].level;
        else if (levels[i].module[0] == '*' && !levels[i].module[1]) def = levels[i].level;
    }
    return lv >= 0 ? lv : def; /* a module's own setting overrides "*" */
}

static int effective_level(const char *module)
{
    int lv = table_level(module);
    for (const struct pdi_log_guards *g = cur_guards; g; g = g->parent)
        if ((g->module[0] == '*' && !g->module[1]) || !strcmp(g->module, module))
            if (g->level > lv) lv = g->level;
    return lv;
}

int pd_get_log_level(const char *module) { return module ? effective_level(module) : 0; }

int pdi_log_enabled(const char *module, int level)
{
    if (!(pdi_debug_flags & PDI_DBG_LOG)) return 0;
    return effective_level(module) >= level;
}

void pdi_log(const char *module, int level, const char *fmt, ...)
{
    char line[1200];
    int k = snprintf(line, sizeof line, "[%s:%d] ", module, level);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
    va_end(ap);
    pd_log_sink_fn fn = sink;
    if (fn) fn(module, level, line, sink_ctx);
    else fprintf(stderr, "%s\n", line);
}

void pd_log_set_sink(pd_log_sink_fn fn, void *ctx)
{
    pthread_mutex_lock(&log_mu);
    sink = fn;
    sink_ctx = ctx;
    pthread_mutex_unlock(&log_mu);
}

const struct pdi_log_guards *pdi_log_guards_current(void) { return cur_guards; }

const struct pdi_log_guards *pdi_log_guards_swap(const struct pdi_log_guards *g)
{
    const struct pdi_log_guards *prev = cur_guards;
    int d = (g != NULL) - (prev != NULL);
    cur_guards = g;
    if (d) {
        __atomic_add_fetch(&active_guards, d, __ATOMIC_RELAXED);
        update_flag();
    }
    return prev;
}

int pd_log_guard_begin(const char *module, int level)
{
    if (!module) return pdi_errorf(PD_ERR_NULL, "log_guard_begin: NULL module");
    if (!valid_module(module))
        return pdi_errorf(PD_ERR_INVALID, "log_guard_begin: bad module name \"%.40s\"", module);
    if (level < 0 || level > 10) return pdi_errorf(PD_ERR_INVALID, "log_guard_begin: level %d outside [0, 10]", level);
    const char *m = pdi_intern(module);
    if (!m) return pd_last_status();
    /* Reuse an identical snapshot: a guard inside a training loop makes one,
     * not one per step. */
    pthread_mutex_lock(&log_mu);
    struct pdi_log_guards *g = all_guards;
    while (g && !(g->parent == cur_guards && g->module == m && g->level == level)) g = g->next;
    if (!g) {
        g = pdi_malloc(sizeof *g);
        if (!g) { pthread_mutex_unlock(&log_mu); return pdi_errorf(PD_ERR_NOMEM, "out of memory (log guard)"); }
        g->parent = cur_guards;
        g->module = m;
        g->level = level;
        g->next = all_guards;
        all_guards = g;
    }
    pthread_mutex_unlock(&log_mu);
    pdi_log_guards_swap(g);
    return PD_OK;
}

int pd_log_guard_end(void)
{
    if (!cur_guards) return pdi_errorf(PD_ERR_STATE, "log_guard_end: no log guard is open on this thread");
    pdi_log_guards_swap(cur_guards->parent);
    return PD_OK;
}
