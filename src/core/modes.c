/* paddle.c — the per-thread mode stack: grad mode, autocast, executor.
 *
 * Every begin (pd_no_grad_begin, pd_autocast_begin, pd_meta_begin, ...)
 * pushes one entry holding what it replaced and returns a token; the end
 * checks that the token is the innermost entry's and of the same kind before
 * it pops and restores. A mismatched end is an error that pops nothing, so a
 * forgotten end is reported at the next end instead of silently restoring
 * another guard's state. Modes nest strictly (as Python's `with` blocks do):
 * ending an outer autocast while an inner no_grad is open is an error.
 *
 * The current values live in pdi_modes (thread-local, read by the dispatcher
 * on every op); the stack is a heap array per thread, freed at thread exit
 * (a pthread key destructor), kept between pushes so a begin/end pair costs
 * a few stores. Tokens come from a per-thread counter: a token of another
 * thread, or one already ended, is not the innermost entry and is refused.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/internal.h"

PDI_TLS struct pdi_modes pdi_modes = {NULL, NULL, -1, 0};

struct entry {
    int kind;
    int token;
    int value;                       /* GRAD: grad_off; AUTOCAST: dtype */
    const struct pdi_executor *exec; /* EXECUTOR */
    void *ctx;
};
static PDI_TLS struct entry *stack;
static PDI_TLS int depth, cap;
static PDI_TLS int last_token;

static pthread_key_t stack_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static void stack_free(void *p) { free(p); }
static void key_init(void) { pthread_key_create(&stack_key, stack_free); }

static const char *kind_name(int k)
{
    static const char *names[PDI_MODE_COUNT] = {"grad mode", "autocast", "executor"};
    return (unsigned)k < PDI_MODE_COUNT ? names[k] : "?";
}

/* "no_grad", "autocast(bf16)", "executor meta": the innermost entry, for
 * messages. */
static const char *entry_str(const struct entry *e, char *buf, size_t n)
{
    switch (e->kind) {
    case PDI_MODE_GRAD: snprintf(buf, n, "%s", e->value ? "enable_grad" : "no_grad"); break;
    case PDI_MODE_AUTOCAST:
        snprintf(buf, n, "autocast(%s)", e->value >= 0 ? pd_dtype_name((enum pd_dtype)e->value) : "off");
        break;
    default: snprintf(buf, n, "executor %s", e->exec ? e->exec->name : "eager"); break;
    }
    return buf;
}

int pdi_mode_begin(enum pdi_mode_kind kind, int value, const struct pdi_executor *ex, void *ctx)
{
    if ((unsigned)kind >= PDI_MODE_COUNT) return pdi_errorf(PD_ERR_INVALID, "mode_begin: invalid kind %d", (int)kind);
    if (depth == cap) {
        pthread_once(&key_once, key_init);
        int nc = cap ? cap * 2 : 16;
        struct entry *ns = pdi_realloc(stack, sizeof *ns * (size_t)nc);
        if (!ns) return pdi_errorf(PD_ERR_NOMEM, "%s begin: out of memory (mode stack)", kind_name(kind));
        stack = ns;
        cap = nc;
        pthread_setspecific(stack_key, stack);
    }
    struct entry *e = &stack[depth];
    e->kind = kind;
    e->token = last_token = last_token == INT_MAX ? 1 : last_token + 1;
    e->exec = NULL;
    e->ctx = NULL;
    switch (kind) {
    case PDI_MODE_GRAD:
        e->value = pdi_modes.grad_off;
        pdi_modes.grad_off = !value;
        break;
    case PDI_MODE_AUTOCAST:
        e->value = pdi_modes.autocast;
        pdi_modes.autocast = value;
        break;
    default:
        e->exec = pdi_modes.exec;
        e->ctx = pdi_modes.exec_ctx;
        pdi_modes.exec = ex == &pdi_exec_eager ? NULL : ex; /* NULL: the dispatcher's direct eager path */
        pdi_modes.exec_ctx = ctx;
        break;
    }
    depth++;
    return e->token;
}

int pdi_mode_end(enum pdi_mode_kind kind, int token, const char *who)
{
    char b[64];
    if (depth == 0 || stack[depth - 1].token != token) {
        int i = depth - 1;
        while (i >= 0 && stack[i].token != token) i--;
        if (i < 0)
            return pdi_errorf(PD_ERR_STATE,
                              "%s: token %d is not an open mode on this thread (ended already, never "
                              "begun, or from another thread)",
                              who, token);
        return pdi_errorf(PD_ERR_STATE,
                          "%s: token %d is not the innermost mode: %s (token %d) began after it and "
                          "has not ended; nothing was popped",
                          who, token, entry_str(&stack[depth - 1], b, sizeof b), stack[depth - 1].token);
    }
    struct entry *e = &stack[depth - 1];
    if (e->kind != (int)kind)
        return pdi_errorf(PD_ERR_STATE, "%s: token %d belongs to %s, not to %s; nothing was popped", who, token,
                          entry_str(e, b, sizeof b), kind_name(kind));
    switch (kind) {
    case PDI_MODE_GRAD: pdi_modes.grad_off = e->value; break;
    case PDI_MODE_AUTOCAST: pdi_modes.autocast = e->value; break;
    default:
        pdi_modes.exec = e->exec;
        pdi_modes.exec_ctx = e->ctx;
        break;
    }
    depth--;
    return PD_OK;
}

int pdi_mode_depth(void) { return depth; }

/* ---- executors --------------------------------------------------------- */
int pdi_executor_begin(const struct pdi_executor *ex, void *ctx)
{
    if (!ex) return pdi_errorf(PD_ERR_NULL, "executor_begin: NULL executor");
    if (ex->abi_version < 1 || ex->abi_version > PDI_EXECUTOR_ABI || !ex->run)
        return pdi_errorf(PD_ERR_INVALID,
                          "executor_begin: executor '%s' has ABI version %d (this library: 1..%d) "
                          "or no run slot",
                          ex->name ? ex->name : "?", ex->abi_version, PDI_EXECUTOR_ABI);
    int tok = pdi_mode_begin(PDI_MODE_EXECUTOR, 0, ex, ctx);
    if (tok < 0 || !ex->on_begin) return tok;
    int rc = ex->on_begin(ctx);
    if (rc) {
        pdi_mode_end(PDI_MODE_EXECUTOR, tok, "executor_begin");
        return rc < 0 ? rc : PD_ERR_STATE;
    }
    return tok;
}

int pdi_executor_end(int token)
{
    const struct pdi_executor *ex = pdi_executor_current(NULL);
    void *ctx = pdi_modes.exec_ctx;
    int rc = pdi_mode_end(PDI_MODE_EXECUTOR, token, "executor_end");
    if (!rc && ex->on_end) ex->on_end(ctx);
    return rc;
}

const struct pdi_executor *pdi_executor_current(void **ctx)
{
    if (ctx) *ctx = pdi_modes.exec_ctx;
    return pdi_modes.exec ? pdi_modes.exec : &pdi_exec_eager;
}

/* ---- grad mode (include/pd/autograd.h) ----------------------------------- */
int pd_is_grad_enabled(void) { return !pdi_modes.grad_off; }

/* Not a stack entry: changes the current value, which the innermost open
 * guard restores when it ends (torch.set_grad_enabled inside a no_grad). */
int pd_set_grad_enabled(int enabled)
{
    int prev = !pdi_modes.grad_off;
    pdi_modes.grad_off = !enabled;
    return prev;
}

int pd_no_grad_begin(void) { return pdi_mode_begin(PDI_MODE_GRAD, 0, NULL, NULL); }
int pd_enable_grad_begin(void) { return pdi_mode_begin(PDI_MODE_GRAD, 1, NULL, NULL); }
int pd_grad_mode_end(int token) { return pdi_mode_end(PDI_MODE_GRAD, token, "grad_mode_end"); }
