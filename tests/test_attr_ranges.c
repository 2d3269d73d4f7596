/* paddle.c — the dispatcher refuses attributes outside their declared range
 * (the range column of PD_A in src/ops/ops.def), before infer runs.
 *
 * Regressions found by the bad-input sweep (tests/sweep/sweep.c), each
 * accepted before the check: axes beyond int (2^32 was cast to axis 0),
 * a list attribute of negative length (read as empty), BOOL flags of 2,
 * non-finite learning rates and norm epsilons; also in-place calls of a
 * view op or an op without outputs, and signed overflow in the conv and
 * pool geometry (seen under the sanitizer build). Every refusal is one line.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/internal.h"
#include "pt.h"

static int refused(struct pd_tensor *r, const char *needle)
{
    const char *m = pd_last_error();
    int ok = r == NULL && pd_last_status() != 0 && strstr(m, needle) && !strchr(m, '\n');
    if (!ok) printf("  expected a one-line error mentioning \"%s\", got %s: %s\n", needle, r ? "a result" : "an error", m);
    pd_clear_error();
    return ok;
}

int main(void)
{
    int tok = pd_scope_begin();
    int64_t s[2] = {2, 3};
    struct pd_tensor *x = pd_ones(s, 2, PD_F32);

    /* axes beyond int: (int)2^32 is 0 */
    struct pdi_attrs a = {.slice = {.axis = 1LL << 32, .start = 0, .stop = 1, .step = 1}};
    PT_CHECK(refused(pdi_call1(PD_OP_slice, x, &a), "axis 4294967296 out of range for a 2-d tensor"));
    a = (struct pdi_attrs){.reduce = {.axes = {1, {1LL << 32}}}};
    PT_CHECK(refused(pdi_call1(PD_OP_sum, x, &a), "axis 4294967296 out of range"));
    a = (struct pdi_attrs){.reduce = {.axes = {1, {INT64_MIN}}}};
    PT_CHECK(refused(pdi_call1(PD_OP_amax, x, &a), "out of range"));
    a = (struct pdi_attrs){.diagonal = {.offset = 0, .axis1 = 0, .axis2 = INT64_MAX}};
    PT_CHECK(refused(pdi_call1(PD_OP_diagonal, x, &a), "axis2 9223372036854775807 out of range"));
    a = (struct pdi_attrs){.flip = {.axes = {1, {-(1LL << 32)}}}};
    PT_CHECK(refused(pdi_call1(PD_OP_flip, x, &a), "out of range"));
    /* a repeated axis, also of a 0-d tensor (0 and -1 are the same axis) */
    a = (struct pdi_attrs){.reduce = {.axes = {2, {0, -1}}}};
    PT_CHECK(refused(pdi_call1(PD_OP_sum, pd_scalar(1, PD_F32), &a), "axis 0 repeated"));
    /* a list of negative length */
    a = (struct pdi_attrs){.full = {.shape = {INT64_MIN, {0}}, .dtype = PD_F32}};
    PT_CHECK(refused(pdi_calln(PD_OP_full, NULL, 0, &a), "shape has"));
    /* flags are 0 or 1 */
    a = (struct pdi_attrs){.reduce = {.keepdim = 2}};
    PT_CHECK(refused(pdi_call1(PD_OP_sum, x, &a), "keepdim must be 0 or 1"));
    /* floating ranges */
    a = (struct pdi_attrs){.norm = {.n_norm_axes = 1, .eps = INFINITY}};
    PT_CHECK(refused(pdi_call1(PD_OP_rms_norm, x, &a), "eps inf out of range"));
    a = (struct pdi_attrs){.norm = {.n_norm_axes = 1, .eps = NAN}};
    PT_CHECK(refused(pdi_call1(PD_OP_layer_norm, x, &a), "eps nan out of range"));
    struct pd_tensor *g = pd_ones(s, 2, PD_F32);
    struct pd_tensor *planes[2] = {pd_ones(s, 2, PD_F32), g};
    a = (struct pdi_attrs){.sgd_update = {.lr = NAN}};
    struct pdi_call c = {.op = PD_OP_sgd_update, .n_in = 2, .n_out = 0, .in = planes, .a = a};
    PT_CHECK(pdi_dispatch(&c) != 0 && strstr(pd_last_error(), "lr nan out of range"));
    pd_clear_error();
    a = (struct pdi_attrs){.sgd_update = {.lr = 0.1}};
    c.a = a;
    PT_CHECK(pdi_dispatch(&c) == 0); /* in range: runs */
    /* in place needs an output that is not a view */
    c.inplace = 1;
    PT_CHECK(pdi_dispatch(&c) != 0 && strstr(pd_last_error(), "cannot run in place"));
    pd_clear_error();
    struct pd_tensor *out[1];
    a = (struct pdi_attrs){.permute = {.perm = {2, {1, 0}}}};
    struct pd_tensor *in1[1] = {x};
    struct pdi_call v = {.op = PD_OP_permute, .n_in = 1, .n_out = 1, .in = in1, .out = out, .a = a, .inplace = 1};
    PT_CHECK(pdi_dispatch(&v) != 0 && strstr(pd_last_error(), "cannot run in place"));
    pd_clear_error();
    /* conv and pool geometry with extreme padding: checked arithmetic (the
     * sanitizer build reported signed overflow in conv_geom / pool_geom) */
    int64_t xs[4] = {2, 2, 4, 4}, ws[4] = {2, 2, 1, 1};
    struct pd_tensor *cx = pd_ones(xs, 4, PD_F32), *cw = pd_ones(ws, 4, PD_F32);
    a = (struct pdi_attrs){.conv2d = {.stride_h = 1, .stride_w = 1, .pad_h = INT64_MAX - 1, .dilation_h = 1,
                                      .dilation_w = 1, .groups = 1}};
    PT_CHECK(refused(pdi_call2(PD_OP_conv2d, cx, cw, &a), "too large"));
    a.conv2d.pad_h = 0;
    a.conv2d.dilation_w = INT64_MAX;
    ws[3] = 3;
    PT_CHECK(refused(pdi_call2(PD_OP_conv2d, cx, pd_ones(ws, 4, PD_F32), &a), "too large"));
    a = (struct pdi_attrs){.pool2d = {.kernel_h = INT64_MAX, .kernel_w = 1, .stride_h = 1, .stride_w = 1,
                                      .pad_h = INT64_MAX / 2}};
    PT_CHECK(refused(pdi_call1(PD_OP_max_pool2d, cx, &a), "too large"));
    /* one_hot infers num_classes = max id + 1: INT64_MAX has no successor */
    int64_t ids[2] = {0, INT64_MAX}, ns = 2;
    PT_CHECK(refused(pd_one_hot(pd_from_buffer(ids, &ns, 1, PD_I64), -1), "one_hot: class value 9223372036854775807"));
    /* public wrappers keep C's truth: any nonzero flag is 1 */
    struct pd_tensor *tv = pd_topk(x, 1, 1, 5, NULL), *sv = pd_sort(x, 1, -3, NULL);
    PT_CHECK(tv && sv);
    /* the defaults of every set are in range (the table's own rows) */
    for (int op = 0; op < PD_OP_COUNT; op++) {
        pdi_attrs_default((enum pd_op)op, &a);
        PT_CHECK(pdi_attrs_validate((enum pd_op)op, &a) == PD_OK);
    }
    pd_scope_end(tok);
    PT_DONE();
}
