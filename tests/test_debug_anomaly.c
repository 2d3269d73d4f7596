/* paddle.c — anomaly mode: the first NaN/Inf stops the op that made it,
 * forward (log of a negative) and backward (sqrt's gradient at 0), with
 * the op's name, its inputs' stats and the call site in the message; and
 * an op that writes its inputs in place (the optimizer's update). */
#include <string.h>

#include "pd/autograd.h"
#include "pd/debug.h"
#include "pd/optim.h"
#include "pd/state.h"
#include "pt.h"

static int contains(const char *s, const char *sub)
{
    int ok = strstr(s, sub) != NULL;
    if (!ok) printf("  missing \"%s\" in: %s\n", sub, s);
    return ok;
}

int main(void)
{
    double xv[4] = {1.0, 4.0, -2.0, 9.0}, zv[3] = {0.0, 1.0, 4.0};
    struct pd_tensor *x = pt_vec(PD_F32, 4, xv), *z = pt_vec(PD_F32, 3, zv);
    pd_tensor_set_name(x, "input:x");
    char want[80];

    /* off: NaN flows through silently */
    int scope_tok = pd_scope_begin();
    struct pd_tensor *y = pd_log(x);
    PT_CHECK(y && isnan(pt_at(y, 2)));
    pd_scope_end(scope_tok);

    /* 1. forward: log(-2) */
    PT_CHECK(pd_anomaly_mode(1) == 0);
    pd_debug_set_callsites(1);
    pd_debug_reset_names();
    scope_tok = pd_scope_begin();
    struct pd_tensor *ok = pd_exp(x); /* finite: passes */
    PT_CHECK(ok != NULL);
    pd_name_scope_begin("head");
    struct pd_tensor *bad = pd_log(x); int line_log = __LINE__;
    pd_name_scope_end();
    PT_CHECK(bad == NULL && pd_last_status() == PD_ERR_STATE);
    const char *e = pd_last_error();
    PT_CHECK(!strncmp(e, "head/log_1: anomaly: output 0", 29));
    PT_CHECK(contains(e, "1 NaN and 0 Inf of 4 values"));
    PT_CHECK(contains(e, "[0] input:x [4] f32 min=-2 max=9 mean=3 nan=0 inf=0"));
    snprintf(want, sizeof want, "called at test_debug_anomaly.c:%d (main)", line_log);
    PT_CHECK(contains(e, want));
    pd_scope_end(scope_tok);

    /* 2. backward: d sqrt(z)/dz = 1 / (2 sqrt(z)) is inf at z = 0 */
    pd_requires_grad_(z, 1);
    pd_debug_reset_names();
    scope_tok = pd_scope_begin();
    struct pd_tensor *r = pd_sqrt(z); int line_sqrt = __LINE__;
    struct pd_tensor *loss = pd_sum(r, NULL, 0, 0);
    PT_CHECK(r && loss); /* sqrt(0) = 0 is finite: forward passes */
    int rc = pd_backward(loss, NULL, 0);
    e = pd_last_error();
    PT_CHECK(rc == PD_ERR_STATE);
    PT_CHECK(!strncmp(e, "sqrt_1.grad: ", 13));
    PT_CHECK(contains(e, "anomaly"));
    PT_CHECK(contains(e, "in backward of sqrt_1.grad"));
    PT_CHECK(contains(e, "div_1: anomaly: output 0 ([3] f32) has 0 NaN and 1 Inf of 3 values"));
    snprintf(want, sizeof want, "forward op sqrt_1.grad called at test_debug_anomaly.c:%d (main)", line_sqrt);
    PT_CHECK(contains(e, want));
    PT_CHECK(pd_tensor_grad(z) == NULL); /* nothing half-delivered */
    pd_scope_end(scope_tok);

    /* 3. off again: the same backward completes with inf in the gradient */
    PT_CHECK(pd_anomaly_mode(0) == 1);
    pd_debug_set_callsites(0);
    scope_tok = pd_scope_begin();
    loss = pd_sum(pd_sqrt(z), NULL, 0, 0);
    PT_CHECK(pd_backward(loss, NULL, 0) == PD_OK);
    PT_CHECK(pd_tensor_grad(z) && isinf(pt_at(pd_tensor_grad(z), 0)));
    PT_NEAR(pt_at(pd_tensor_grad(z), 2), 0.25, 1e-6);
    pd_scope_end(scope_tok);

    /* 4. without call sites the message says how to get them */
    pd_anomaly_mode(1);
    scope_tok = pd_scope_begin();
    PT_CHECK(pd_log(x) == NULL && contains(pd_last_error(), "pd_debug_set_callsites(1)"));
    /* integer outputs are not checked; NaN in f64 is */
    double nv[2] = {NAN, 1.0};
    struct pd_tensor *n64 = pt_vec(PD_F64, 2, nv);
    PT_CHECK(n64 == NULL || pd_neg(n64) == NULL); /* pt_vec's cast op already stops */
    pd_scope_end(scope_tok);
    pd_anomaly_mode(0);

    /* 5. an op that writes its inputs in place (pdi_call.n_writes) and has
     * no output: SGD with an overflowing step makes the parameter -inf. It
     * went unnoticed when only outputs were checked. */
    double pv[3] = {1.0, 2.0, 3.0};
    struct pd_tensor *p = pt_vec(PD_F32, 3, pv);
    pd_requires_grad_(p, 1);
    struct pd_state_dict *sd = pd_state_dict_create();
    PT_CHECK(sd && pd_state_dict_add(sd, "p", p) == PD_OK);
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_SGD);
    oc.lr = 1e300; /* inf in f32 */
    struct pd_optimizer *opt = pd_optimizer_create_for(&oc, sd);
    PT_CHECK(opt != NULL);
    scope_tok = pd_scope_begin();
    PT_CHECK(pd_backward(pd_sum(pd_scale(p, 10), NULL, 0, 0), NULL, 0) == PD_OK);
    pd_anomaly_mode(1);
    pd_debug_reset_names();
    PT_CHECK(pd_optimizer_step(opt) == PD_ERR_STATE);
    PT_CHECK(contains(pd_last_error(), "sgd_update_1: anomaly: written input 0 ([3] f32) has 0 NaN and 3 Inf"));
    pd_anomaly_mode(0);
    pd_scope_end(scope_tok);
    pd_optimizer_destroy(opt);
    pd_state_dict_destroy(sd);

    pd_tensor_release(x);
    pd_tensor_release(p);
    pd_tensor_release(z);
    PT_DONE();
}
