/* paddle.c — autocast: the dispatcher's stage 2 (docs/design.md §1).
 *
 * Autocast is a per-thread mode (core/modes.c): pd_autocast_begin pushes the
 * dtype on the thread's mode stack and the dispatcher calls
 * pdi_autocast_stage only while pdi_modes.autocast is a dtype (one
 * thread-local test per op otherwise). When an op's policy asks for a dtype
 * some floating input (not f64) does not have, the stage casts those inputs
 * with pd_cast and dispatches the op again on the cast inputs with autocast
 * off (a mode entry of its own) for that nested call, then reports the call
 * as handled. The nested dispatch re-runs infer (the output dtype follows
 * the new inputs) and records autograd and scope ownership itself; the casts
 * are ops, so gradients flow back through them to the original (f32)
 * tensors.
 *
 * Ownership: the cast tensors belong to the current scope; outside every
 * scope the stage releases them after the call (the op's GradNode keeps what
 * it saved). Policies are one global byte per op, initialised from the op
 * table's amp column on first use (pd_autocast_set_op_policy overrides).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pd/amp.h"

static unsigned char policy[PD_OP_COUNT];
static pthread_once_t policy_once = PTHREAD_ONCE_INIT;

/* The defaults are the op table's amp column. */
void pd_autocast_reset_policies(void)
{
    for (int i = 0; i < PD_OP_COUNT; i++) policy[i] = (unsigned char)pdi_ops[i].amp;
}

static void policy_init(void) { pd_autocast_reset_policies(); }

int pd_autocast_set_op_policy(const char *op, enum pd_autocast_policy p)
{
    pthread_once(&policy_once, policy_init);
    if (!op) return pdi_errorf(PD_ERR_NULL, "autocast_set_op_policy: NULL op name");
    if ((unsigned)p >= PD_AUTOCAST_POLICY_COUNT)
        return pdi_errorf(PD_ERR_INVALID, "autocast_set_op_policy: invalid policy %d", (int)p);
    int k = pdi_op_lookup(op);
    if (k < 0) return pdi_errorf(PD_ERR_INVALID, "autocast_set_op_policy: unknown op '%s'", op);
    policy[k] = (unsigned char)p;
    return PD_OK;
}

int pd_autocast_get_op_policy(const char *op)
{
    pthread_once(&policy_once, policy_init);
    int k = op ? pdi_op_lookup(op) : -1;
    if (k < 0) return pdi_errorf(PD_ERR_INVALID, "autocast_get_op_policy: unknown op '%s'", op ? op : "(null)");
    return policy[k];
}

static int eligible(enum pd_dtype dt, enum pd_dtype target)
{
    return dt != target && (dt == PD_F32 || dt == PD_BF16 || dt == PD_F16);
}

int pdi_autocast_stage(struct pdi_call *c)
{
    if (c->inplace || c->n_writes) return 0; /* never write into casts */
    int p = policy[c->op];
    if (p == PD_AUTOCAST_FOLLOW) return 0;
    enum pd_dtype target = p == PD_AUTOCAST_LOWER ? (enum pd_dtype)pdi_modes.autocast : PD_F32;
    int need = 0;
    for (int i = 0; i < c->n_in; i++) need |= eligible(c->in[i]->dtype, target);
    if (!need) return 0;

    struct pd_tensor *small[8], **in = c->n_in <= 8 ? small : pdi_malloc(sizeof *in * (size_t)c->n_in);
    if (!in) return pdi_errorf(PD_ERR_NOMEM, "autocast: out of memory");
    /* the casts and the nested call are not autocast again */
    int off = pdi_mode_begin(PDI_MODE_AUTOCAST, -1, NULL, NULL);
    if (off < 0) {
        if (in != small) free(in);
        return off;
    }
    int rc = PD_OK;
    for (int i = 0; i < c->n_in; i++) {
        in[i] = eligible(c->in[i]->dtype, target) ? pd_cast(c->in[i], target) : c->in[i];
        if (!in[i]) {
            rc = pdi_status_of(NULL, "autocast: cast");
            for (int j = 0; j < i; j++)
                if (in[j] != c->in[j] && pd_scope_depth() == 0) pd_tensor_release(in[j]);
            goto out;
        }
    }
    struct pdi_call n = {.op = c->op, .n_in = c->n_in, .n_out = c->n_out, .in = in, .out = c->out, .a = c->a};
    rc = pdi_dispatch(&n);
    if (pd_scope_depth() == 0)
        for (int i = 0; i < c->n_in; i++)
            if (in[i] != c->in[i]) pd_tensor_release(in[i]);
out:
    pdi_mode_end(PDI_MODE_AUTOCAST, off, "autocast"); /* the innermost: the nested modes ended */
    if (in != small) free(in);
    return rc ? (rc < 0 ? rc : PD_ERR_INVALID) : 1;
}

int pd_autocast_begin(enum pd_dtype dt)
{
    if (dt != PD_BF16 && dt != PD_F16)
        return pdi_errorf(PD_ERR_INVALID, "autocast_begin: dtype %s; expected bf16 or f16",
                          (unsigned)dt < PD_DTYPE_COUNT ? pd_dtype_name(dt) : "invalid");
    pthread_once(&policy_once, policy_init);
    return pdi_mode_begin(PDI_MODE_AUTOCAST, (int)dt, NULL, NULL);
}

int pd_autocast_end(int token) { return pdi_mode_end(PDI_MODE_AUTOCAST, token, "autocast_end"); }

int pd_autocast_dtype(void) { return pdi_modes.autocast; }
