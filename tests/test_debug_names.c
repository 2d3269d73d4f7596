/* paddle.c — op/tensor/GradNode names, name scopes, call sites and the
 * dispatcher's observer hooks (before/after) and error prefixes. */
#include <string.h>

#include "core/internal.h"
#include "pd/debug.h"
#include "pt.h"

/* names of one small MLP step, concatenated (to compare two runs) */
static void mlp_step(struct pd_tensor *x, struct pd_tensor *w1, struct pd_tensor *w2, char *log, size_t n)
{
    pd_debug_reset_names();
    int scope_tok = pd_scope_begin();
    pd_name_scope_begin("model");
    pd_name_scope_begin("fc1");
    struct pd_tensor *h = pd_relu(pd_matmul(x, w1, 0, 0));
    pd_name_scope_end();
    struct pd_tensor *y = pd_matmul(h, w2, 0, 0);
    pd_name_scope_end();
    struct pd_tensor *loss = pd_mean(y, NULL, 0, 0);
    snprintf(log, n, "%s|%s|%s|%s", pd_tensor_name(h), pd_tensor_grad_fn_name(h), pd_tensor_name(y),
             pd_tensor_name(loss));
    pd_backward(loss, NULL, 0);
    pd_scope_end(scope_tok);
}

struct obs {
    int before, after, computed_at_before;
    char first_before[96], first_after[96], out0[96];
};

static void on_before(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    struct obs *o = ctx;
    PDI_UNUSED(seq);
    if (!o->before++) snprintf(o->first_before, sizeof o->first_before, "%s", pdi_call_name(c));
    /* outputs are allocated (not computed) when "before" runs */
    o->computed_at_before += c->out[0] != NULL;
}

static void on_after(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    struct obs *o = ctx;
    PDI_UNUSED(seq);
    if (!o->after++) {
        snprintf(o->first_after, sizeof o->first_after, "%s", pdi_call_name(c));
        pdi_call_out_name(c, 0, o->out0, sizeof o->out0);
    }
}

int main(void)
{
    int64_t s[2] = {4, 3}, s1[2] = {3, 5}, s2[2] = {5, 2};
    struct pd_tensor *x = pd_randn(s, 2, PD_F32, NULL), *w1 = pd_randn(s1, 2, PD_F32, NULL),
                     *w2 = pd_randn(s2, 2, PD_F32, NULL);
    pd_requires_grad_(w1, 1);
    pd_requires_grad_(w2, 1);

    /* 1. names: linked (op, output, node), scoped, stable across runs */
    char a[600], b[600];
    mlp_step(x, w1, w2, a, sizeof a);
    mlp_step(x, w1, w2, b, sizeof b);
    PT_CHECK(!strcmp(a, "model.fc1/relu_1.out0|model.fc1/relu_1.grad|model/matmul_2.out0|mean_1.out0"));
    PT_CHECK(!strcmp(a, b));
    if (strcmp(a, "model.fc1/relu_1.out0|model.fc1/relu_1.grad|model/matmul_2.out0|mean_1.out0")) printf("got %s\n", a);
    PT_CHECK(!strcmp(pd_name_scope_current(), ""));

    /* creation ops name their outputs like any op, tensors made from host
     * data too (pd_from_buffer is the empty op, then the host write);
     * named; params from a state dict */
    PT_CHECK(!strcmp(pd_tensor_name(x), "normal_1.out0") && !strcmp(pd_tensor_name(w2), "normal_3.out0"));
    float hv[2] = {1, 2};
    struct pd_tensor *h = pd_from_buffer(hv, (int64_t[]){2}, 1, PD_F32);
    PT_CHECK(!strncmp(pd_tensor_name(h), "empty_", 6));
    pd_tensor_release(h);
    PT_CHECK(pd_tensor_set_name(x, "input:x") == PD_OK && !strcmp(pd_tensor_name(x), "input:x"));
    struct pd_state_dict *sd = pd_state_dict_create();
    pd_state_dict_add(sd, "fc1.weight", w1);
    pd_state_dict_add(sd, "fc2.weight", w2);
    PT_CHECK(pd_debug_name_params(sd) == PD_OK);
    PT_CHECK(!strcmp(pd_tensor_name(w1), "param:fc1.weight") && !strcmp(pd_tensor_name(w2), "param:fc2.weight"));
    pd_state_dict_destroy(sd);

    /* bad input: clear errors, nothing changes */
    PT_CHECK(pd_name_scope_end() == PD_ERR_STATE && strstr(pd_last_error(), "no name scope"));
    PT_CHECK(pd_name_scope_begin("a/b") == PD_ERR_INVALID && strstr(pd_last_error(), "'/'"));
    PT_CHECK(pd_name_scope_begin("") == PD_ERR_INVALID);
    PT_CHECK(pd_name_scope_begin(NULL) == PD_ERR_NULL);
    PT_CHECK(pd_tensor_set_name(x, "") == PD_ERR_INVALID && !strcmp(pd_tensor_name(x), "input:x"));
    PT_CHECK(pd_tensor_name(NULL) == NULL);
    int depth_ok = 1;
    for (int i = 0; i < 64; i++) depth_ok &= pd_name_scope_begin("d") == PD_OK;
    PT_CHECK(depth_ok && pd_name_scope_begin("d") == PD_ERR_STATE);
    for (int i = 0; i < 64; i++) pd_name_scope_end();
    PT_CHECK(!strcmp(pd_name_scope_current(), ""));

    /* 2. a failing op's error starts with its name (old text kept after it) */
    pd_debug_reset_names();
    int scope_tok = pd_scope_begin();
    PT_CHECK(pd_matmul(x, x, 0, 0) == NULL);
    PT_CHECK(!strncmp(pd_last_error(), "matmul_1: ", 10));
    pd_name_scope_begin("blk");
    PT_CHECK(pd_add(x, w2) == NULL && !strncmp(pd_last_error(), "blk/add_1: ", 11));
    pd_name_scope_end();
    /* NULL propagation keeps the earlier op's message */
    PT_CHECK(pd_relu(pd_add(x, w2)) == NULL && !strncmp(pd_last_error(), "add_2: ", 7));
    pd_scope_end(scope_tok);

    /* 3. observers: before sees allocated but uncomputed outputs */
    struct obs o = {0};
    PT_CHECK(pdi_observer_add_ex(on_before, on_after, &o) == PD_OK);
    PT_CHECK(pdi_observer_add_ex(NULL, NULL, &o) == PD_ERR_INVALID);
    pd_debug_reset_names();
    scope_tok = pd_scope_begin();
    int64_t one = 1;
    struct pd_tensor *f7 = pd_full(&one, 1, 3.0, PD_F32);
    struct pd_tensor *sum = pd_mul(pd_add(f7, f7), f7); /* three calls: full, add, mul */
    PT_NEAR(pd_item(sum), 18.0, 0);
    pd_scope_end(scope_tok);
    pdi_observer_remove_ex(on_before, on_after, &o);
    PT_CHECK(o.before == 3 && o.after == o.before && o.computed_at_before == o.before);
    PT_CHECK(!strcmp(o.first_before, "full_1") && !strcmp(o.first_after, "full_1") && !strcmp(o.out0, "full_1.out0"));
    int before_n = o.before;
    scope_tok = pd_scope_begin();
    pd_add(x, x);
    pd_scope_end(scope_tok);
    PT_CHECK(o.before == before_n); /* removed */

    /* 4. call sites: the user's line, carried to the GradNode */
    PT_CHECK(pd_debug_set_callsites(1) == 0);
    scope_tok = pd_scope_begin();
    struct pd_tensor *z = pd_matmul(x, w1, 0, 0); int line_z = __LINE__;
    char want[64];
    snprintf(want, sizeof want, "test_debug_names.c:%d (main)", line_z);
    const char *site = pd_tensor_callsite(z);
    PT_CHECK(site && !strcmp(site, want));
    if (site && strcmp(site, want)) printf("site %s, want %s\n", site, want);
    /* a failing op names its call site */
    PT_CHECK(pd_matmul(x, x, 0, 0) == NULL); int line_bad = __LINE__;
    snprintf(want, sizeof want, "test_debug_names.c:%d (main)", line_bad);
    PT_CHECK(strstr(pd_last_error(), want) != NULL);
    pd_scope_end(scope_tok);
    PT_CHECK(pd_debug_set_callsites(0) == 1);
    scope_tok = pd_scope_begin();
    PT_CHECK(pd_tensor_callsite(pd_matmul(x, w1, 0, 0)) == NULL);
    pd_scope_end(scope_tok);

    pd_tensor_release(x);
    pd_tensor_release(w1);
    pd_tensor_release(w2);
    PT_DONE();
}
