/* paddle.c — scoped logs: per-module levels, PD_LOG-style specs, guards
 * that cover a region's forward ops and, later, their backward nodes, and
 * a sink callback capturing the lines. */
#include <string.h>

#include "pd/debug.h"
#include "pt.h"

struct cap {
    char lines[64][256];
    int n;
};

static void sink(const char *module, int level, const char *line, void *ctx)
{
    struct cap *c = ctx;
    (void)module;
    (void)level;
    if (c->n < 64) snprintf(c->lines[c->n++], 256, "%s", line);
}

static int has(const struct cap *c, const char *sub)
{
    for (int i = 0; i < c->n; i++)
        if (strstr(c->lines[i], sub)) return 1;
    return 0;
}

int main(void)
{
    struct cap c = {0};
    pd_log_set_sink(sink, &c);
    int64_t s[2] = {2, 3};
    struct pd_tensor *a = pd_randn(s, 2, PD_F32, NULL), *w = pd_randn(s, 2, PD_F32, NULL);
    pd_requires_grad_(w, 1);

    /* 1. off by default: nothing */
    int scope_tok = pd_scope_begin();
    pd_backward(pd_sum(pd_mul(a, w), NULL, 0, 0), NULL, 0);
    pd_scope_end(scope_tok);
    PT_CHECK(c.n == 0);

    /* 2. module levels */
    PT_CHECK(pd_set_log_level("dispatch", 3) == PD_OK && pd_get_log_level("dispatch") == 3);
    pd_debug_reset_names();
    scope_tok = pd_scope_begin();
    pd_mul(a, w);
    pd_scope_end(scope_tok);
    PT_CHECK(c.n == 1 && !strcmp(c.lines[0], "[dispatch:3] mul_1 mul()"));
    /* the op's attributes are printed from the op table */
    c.n = 0;
    scope_tok = pd_scope_begin();
    pd_rms_norm(a, 1, NULL, 1e-6);
    pd_scope_end(scope_tok);
    PT_CHECK(c.n == 1 && !strcmp(c.lines[0], "[dispatch:3] rms_norm_1 rms_norm(n_norm_axes=1, eps=1e-06, has_w=0, has_b=0)"));
    c.n = 0;
    PT_CHECK(pd_log_parse("dispatch=4,autograd=3") == PD_OK);
    c.n = 0;
    pd_debug_reset_names();
    scope_tok = pd_scope_begin();
    pd_backward(pd_sum(pd_mul(a, w), NULL, 0, 0), NULL, 0);
    pd_scope_end(scope_tok);
    PT_CHECK(has(&c, "[dispatch:3] mul_1") && has(&c, "[dispatch:4] mul_1   out0 mul_1.out0 f32 [2, 3]"));
    PT_CHECK(has(&c, "[autograd:3] sum_1.grad") && has(&c, "[autograd:3] mul_1.grad"));
    /* ops run by backward are logged with their node */
    PT_CHECK(has(&c, " in mul_1.grad"));
    /* bad specs change nothing */
    PT_CHECK(pd_log_parse("dispatch=x") == PD_ERR_INVALID && pd_get_log_level("dispatch") == 4);
    PT_CHECK(pd_log_parse("dispatch=3,bad name=2") == PD_ERR_INVALID && pd_get_log_level("dispatch") == 4);
    PT_CHECK(pd_set_log_level("autograd", 11) == PD_ERR_INVALID && pd_get_log_level("autograd") == 3);
    PT_CHECK(pd_set_log_level(NULL, 1) == PD_ERR_NULL);
    PT_CHECK(pd_log_parse("0") == PD_OK && pd_set_log_level("dispatch", 0) == PD_OK &&
             pd_set_log_level("autograd", 0) == PD_OK && pd_get_log_level("dispatch") == 0);
    /* "*" is the default; a module's own setting overrides it */
    PT_CHECK(pd_set_log_level("*", 2) == PD_OK && pd_get_log_level("anything") == 2 &&
             pd_get_log_level("dispatch") == 0);
    pd_set_log_level("*", 0);

    /* 3. a guard: only the region's forward ops, and their backward later */
    c.n = 0;
    pd_debug_reset_names();
    scope_tok = pd_scope_begin();
    struct pd_tensor *h = pd_mul(a, w);           /* mul_1: outside */
    PT_CHECK(pd_log_guard_begin("dispatch", 3) == PD_OK);
    PT_CHECK(pd_log_guard_begin("autograd", 3) == PD_OK);
    struct pd_tensor *g = pd_exp(h);              /* exp_1: inside */
    PT_CHECK(pd_log_guard_end() == PD_OK && pd_log_guard_end() == PD_OK);
    PT_CHECK(pd_get_log_level("dispatch") == 0);
    struct pd_tensor *loss = pd_sum(g, NULL, 0, 0); /* sum_1: outside */
    PT_CHECK(c.n == 1 && !strcmp(c.lines[0], "[dispatch:3] exp_1 exp()"));
    c.n = 0;
    PT_CHECK(pd_backward(loss, NULL, 0) == PD_OK);
    pd_scope_end(scope_tok);
    /* backward: exp_1.grad logs (and the ops its VJP runs), the others not */
    PT_CHECK(has(&c, "[autograd:3] exp_1.grad"));
    PT_CHECK(has(&c, "[dispatch:3] mul_2 mul() in exp_1.grad"));
    PT_CHECK(!has(&c, "sum_1.grad") && !has(&c, "mul_1.grad"));
    PT_CHECK(pd_log_guard_end() == PD_ERR_STATE && strstr(pd_last_error(), "no log guard"));
    PT_CHECK(pd_log_guard_begin("dispatch", -1) == PD_ERR_INVALID);

    /* 4. after everything ended: silent again */
    c.n = 0;
    scope_tok = pd_scope_begin();
    pd_backward(pd_sum(pd_mul(a, w), NULL, 0, 0), NULL, 0);
    pd_scope_end(scope_tok);
    PT_CHECK(c.n == 0);
    pd_log_set_sink(NULL, NULL);
    pd_tensor_release(a);
    pd_tensor_release(w);
    PT_DONE();
}
