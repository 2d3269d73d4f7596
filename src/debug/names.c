/* paddle.c — op, tensor and GradNode names; name scopes; interned strings.
 *
 * A call's name is "<scope>/<op>_<n>": n counts calls of that op type on
 * this thread since pd_debug_reset_names, so identical runs give identical
 * names. Only the counter and the scope pointer are stored per call, output
 * tensor and node (no string is built unless asked for). Scope paths and
 * user names are interned in a process-wide table and never freed, so any
 * tensor or node may point at them for as long as it lives.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pd/debug.h"

/* ---- interned strings ------------------------------------------------- */
struct istr {
    struct istr *next;
    char s[];
};
#define INTERN_BUCKETS 1024
static struct istr *intern_tab[INTERN_BUCKETS];
static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;

const char *pdi_intern(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *p = s; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    struct istr **b = &intern_tab[h % INTERN_BUCKETS];
    pthread_mutex_lock(&intern_mu);
    for (struct istr *e = *b; e; e = e->next)
        if (!strcmp(e->s, s)) { pthread_mutex_unlock(&intern_mu); return e->s; }
    size_t n = strlen(s);
    struct istr *e = pdi_malloc(sizeof *e + n + 1);
    if (!e) { pthread_mutex_unlock(&intern_mu); return pdi_error(PD_ERR_NOMEM, "out of memory (name)"); }
    memcpy(e->s, s, n + 1);
    e->next = *b;
    *b = e;
    pthread_mutex_unlock(&intern_mu);
    return e->s;
}

/* ---- counters and scopes --------------------------------------------- */
#define MAX_SCOPE_DEPTH 64
static PDI_TLS uint32_t counters[PD_OP_COUNT];
static PDI_TLS const char *scope_stack[MAX_SCOPE_DEPTH + 1]; /* [0] = NULL: no scope */
static PDI_TLS int scope_depth;

void pdi_name_call(struct pdi_call *c)
{
    c->dbg_n = ++counters[c->op];
    c->dbg_scope = scope_stack[scope_depth];
}

void pd_debug_reset_names(void) { memset(counters, 0, sizeof counters); }

int pd_name_scope_begin(const char *name)
{
    if (!name) return pdi_errorf(PD_ERR_NULL, "name_scope_begin: NULL name");
    size_t n = strlen(name);
    if (n == 0 || n > 127 || strpbrk(name, "/\"\n"))
        return pdi_errorf(PD_ERR_INVALID, "name_scope_begin: name \"%.40s\" must be 1..127 characters without '/', "
                          "'\"' or newlines", name);
    if (scope_depth == MAX_SCOPE_DEPTH)
        return pdi_errorf(PD_ERR_STATE, "name_scope_begin: scopes nested deeper than %d (a missing end?)",
                          MAX_SCOPE_DEPTH);
    const char *parent = scope_stack[scope_depth];
    size_t pn = parent ? strlen(parent) : 0;
    char small[512], *buf = pn + n + 2 <= sizeof small ? small : pdi_malloc(pn + n + 2);
    if (!buf) return pdi_errorf(PD_ERR_NOMEM, "out of memory (name scope)");
    if (parent) { memcpy(buf, parent, pn); buf[pn] = '.'; memcpy(buf + pn + 1, name, n + 1); }
    else memcpy(buf, name, n + 1);
    const char *full = pdi_intern(buf);
    if (buf != small) free(buf);
    if (!full) return pd_last_status();
    scope_stack[++scope_depth] = full;
    return PD_OK;
}

int pd_name_scope_end(void)
{
    if (scope_depth == 0) return pdi_errorf(PD_ERR_STATE, "name_scope_end: no name scope is open on this thread");
    scope_stack[scope_depth--] = NULL;
    return PD_OK;
}

const char *pd_name_scope_current(void) { return scope_stack[scope_depth] ? scope_stack[scope_depth] : ""; }

/* ---- strings ---------------------------------------------------------- */
static PDI_TLS char ring[4][PDI_NAME_BUF];
static PDI_TLS int ring_i;

static char *ring_next(void)
{
    ring_i = (ring_i + 1) & 3;
    return ring[ring_i];
}

static const char *format_name(const char *scope, int op, uint32_t n, int out, char *buf, size_t size)
{
    const char *opn = (unsigned)op < PD_OP_COUNT ? pdi_ops[op].name : "op";
    if (out >= 0)
        snprintf(buf, size, "%s%s%s_%u.out%d", scope ? scope : "", scope ? "/" : "", opn, (unsigned)n, out);
    else snprintf(buf, size, "%s%s%s_%u", scope ? scope : "", scope ? "/" : "", opn, (unsigned)n);
    return buf;
}

const char *pdi_call_name(const struct pdi_call *c)
{
    return format_name(c->dbg_scope, c->op, c->dbg_n, -1, ring_next(), PDI_NAME_BUF);
}

const char *pdi_call_out_name(const struct pdi_call *c, int j, char *buf, size_t n)
{
    return format_name(c->dbg_scope, c->op, c->dbg_n, j, buf, n);
}

const char *pdi_tensor_name_buf(const struct pd_tensor *t, char *buf, size_t n)
{
    if (!t) snprintf(buf, n, "(null)");
    else if (t->dbg_user) snprintf(buf, n, "%s", t->dbg_scope);
    else if (t->dbg_n) format_name(t->dbg_scope, t->dbg_op, t->dbg_n, t->dbg_out, buf, n);
    else snprintf(buf, n, "tensor_%llu", (unsigned long long)t->id);
    return buf;
}

const char *pd_tensor_name(const struct pd_tensor *t)
{
    return t ? pdi_tensor_name_buf(t, ring_next(), PDI_NAME_BUF) : NULL;
}

int pd_tensor_set_name(struct pd_tensor *t, const char *name)
{
    if (!t) return pdi_null_tensor("tensor_set_name");
    if (!name) return pdi_errorf(PD_ERR_NULL, "tensor_set_name: NULL name");
    size_t n = strlen(name);
    if (n == 0 || n >= PDI_NAME_BUF - 8 || strpbrk(name, "\"\n"))
        return pdi_errorf(PD_ERR_INVALID, "tensor_set_name: name must be 1..%d characters without '\"' or newlines",
                          PDI_NAME_BUF - 9);
    const char *s = pdi_intern(name);
    if (!s) return pd_last_status();
    t->dbg_scope = s;
    t->dbg_user = 1;
    return PD_OK;
}

int pd_debug_name_params(const struct pd_state_dict *sd)
{
    if (!sd) return pdi_errorf(PD_ERR_NULL, "debug_name_params: NULL state dict");
    for (int i = 0; i < pd_state_dict_size(sd); i++) {
        char buf[PDI_NAME_BUF];
        int k = snprintf(buf, sizeof buf, "param:%s", pd_state_dict_name(sd, i));
        if (k < 0 || (size_t)k >= sizeof buf - 8)
            return pdi_errorf(PD_ERR_INVALID, "debug_name_params: name \"%.40s...\" too long",
                              pd_state_dict_name(sd, i));
        int rc = pd_tensor_set_name(pd_state_dict_tensor(sd, i), buf);
        if (rc) return rc;
    }
    return PD_OK;
}
