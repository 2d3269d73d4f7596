/* paddle.c — the sweep's second wrapper table: the public functions the op
 * table and the first table (tests/sweep/sweep_wrap.c) do not reach, that
 * is accessors, composites, tools (profiler, memory records, graph export,
 * logging, md5, names, meta mode, fault injection), grad-mode switches,
 * FlashMask's mask builders and number conversions. Same shapes and rules
 * as the first table (tests/sweep/sweep_wrap.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep_wrap.h"

#define DISCARD(expr) ((void)(expr))
static struct pd_tensor *xg(void) /* a leaf that needs a gradient */
{
    struct pd_tensor *x = x234();
    pd_requires_grad_(x, 1);
    return x;
}
static struct pd_tensor *m23(void) { return pd_ones((const int64_t[]){2, 3}, 2, PD_F32); }
static struct pd_tensor *v3(void) { return pd_ones((const int64_t[]){3}, 1, PD_F32); }

/* --- accessors: a NULL tensor is "none" or an error, never a crash --- */
static int w_access_n(int i, int *m, struct pd_tensor **out)
{
    (void)i;
    *m = 0, *out = NULL;
    const struct pd_tensor *t = NULL;
    DISCARD(pd_tensor_shape(t)), DISCARD(pd_tensor_strides(t)), DISCARD(pd_tensor_offset(t));
    DISCARD(pd_tensor_dim(t, 0)), DISCARD(pd_tensor_grad(t)), DISCARD(pd_tensor_grad_fn_name(t));
    DISCARD(pd_tensor_is_leaf(t)), DISCARD(pd_tensor_is_meta(t)), DISCARD(pd_tensor_name(t));
    DISCARD(pd_tensor_callsite(t)), DISCARD(pd_tensor_allocator(t)), DISCARD(pd_tensor_requires_grad(t));
    DISCARD(pd_tensor_shares_storage(t, t)), DISCARD(pd_tokenizer_kind(NULL));
    pd_tensor_retain(NULL), pd_tensor_release(NULL), pd_tensor_zero_grad(NULL), pd_tensor_print(NULL);
    DISCARD(pd_keep(NULL)), DISCARD(pd_profiler_enabled());
    free(pd_tensor_to_string(t));
    return -1;
}
static int w_set_name_n(int i, int *m, struct pd_tensor **out)
{
    *m = 1;
    return RC(pd_tensor_set_name(NP(0, x234()), NP(1, "w")));
}
static struct pd_tensor *hook_id(struct pd_tensor *g, void *ctx) { (void)ctx; return g; }
static int w_hook_n(int i, int *m, struct pd_tensor **out)
{
    *m = 1;
    return RC(pd_tensor_register_hook(NP(0, xg()), NP(1, hook_id), NULL));
}
static int w_retain_grad_n(int i, int *m, struct pd_tensor **out)
{
    (void)i;
    *m = 1;
    return RC(pd_retain_grad(NULL));
}
static int w_get_n(int i, int *m, struct pd_tensor **out)
{
    *m = 1, *out = NULL;
    double v = pd_get(NP(0, x234()), NP(1, (const int64_t[]){0, 0, 0}));
    return isnan(v) ? (pd_last_status() ? pd_last_status() : -1) : 0;
}
static int w_get_i(int i, int *m, struct pd_tensor **out)
{
    int64_t ix[3] = {0, IV, 0};
    *m = IV < 0 || IV > 2, *out = NULL;
    double v = pd_get(x234(), ix);
    return isnan(v) ? (pd_last_status() ? pd_last_status() : -1) : 0;
}
static int w_item_n(int i, int *m, struct pd_tensor **out)
{
    *m = i != 1, *out = NULL; /* case 1: the first of many elements (include/pd/tensor.h); case 2: none */
    double v = pd_item(i == 2 ? x0() : NP(0, x234()));
    return isnan(v) ? (pd_last_status() ? pd_last_status() : -1) : 0;
}
static int w_dim_i(int i, int *m, struct pd_tensor **out)
{
    *m = II < -3 || II > 2, *out = NULL; /* II: v as an int, -1 when it is not one */
    int64_t d = pd_tensor_dim(x234(), II);
    return d < 0 ? (pd_last_status() ? pd_last_status() : -1) : 0;
}

/* --- tensors from tensors --- */
static int w_like_n(int i, int *m, struct pd_tensor **out)
{
    const struct pd_tensor *t = NULL;
    *m = 1;
    switch (i) {
    case 0: return RES(pd_empty_like(t));
    case 1: return RES(pd_zeros_like(t));
    case 2: return RES(pd_ones_like(t));
    case 3: return RES(pd_full_like(t, 1.0));
    case 4: return RES(pd_clone(NULL));
    case 5: return RES(pd_contiguous(NULL));
    default: return RES(pd_detach(NULL));
    }
}
static int w_full_like_d(int i, int *m, struct pd_tensor **out)
{
    *m = 0;
    struct pd_tensor *b = pd_cast(x234(), PD_BOOL), *n = pd_cast(x234(), PD_I8);
    int rc = RES(pd_full_like(b, DV));
    if (!rc) rc = RES(pd_full_like(n, DV));
    return rc;
}
static int w_init_n(int i, int *m, struct pd_tensor **out)
{
    *m = 1;
    return RC(i ? pd_init_ones_(NULL) : pd_init_zeros_(NULL));
}
static int w_gain_i(int i, int *m, struct pd_tensor **out)
{
    *m = II < 0 || II >= PD_NONLINEARITY_COUNT, *out = NULL;
    double g = pd_init_calculate_gain((enum pd_nonlinearity)II, 0.01);
    return isnan(g) ? (pd_last_status() ? pd_last_status() : -1) : 0;
}
static int w_gain_d(int i, int *m, struct pd_tensor **out)
{
    *m = 0, *out = NULL;
    double g = pd_init_calculate_gain(PD_NL_LEAKY_RELU, DV);
    return isnan(g) ? (pd_last_status() ? pd_last_status() : -1) : 0;
}

/* --- composites and in-place ops --- */
static int w_binary_n(int i, int *m, struct pd_tensor **out)
{
    int which = i / 2, j = i % 2;
    struct pd_tensor *a = NP(j == 0 ? i : -1, m23()), *b = NP(j == 1 ? i : -1, m23());
    *m = 1;
    switch (which) {
    case 0: return RES(pd_add_(a, b));
    case 1: return RES(pd_mul_(a, b));
    case 2: return RES(pd_bmm(a, b));
    case 3: return RES(pd_dot(a, b));
    case 4: return RES(pd_outer(a, b));
    case 5: return RES(pd_mse_loss(a, b, PD_REDUCTION_MEAN));
    case 6: return RES(pd_linear(a, b, NULL));
    default: return RES(pd_masked_fill(a, b, 0.0));
    }
}
static int w_composite_shape(int i, int *m, struct pd_tensor **out)
{
    /* wrong ranks and shapes for each composite */
    *m = 1;
    switch (i) {
    case 0: return RES(pd_bmm(m23(), m23()));
    case 1: return RES(pd_dot(m23(), v3()));
    case 2: return RES(pd_outer(m23(), v3()));
    case 3: return RES(pd_linear(x234(), m23(), NULL));
    case 4: return RES(pd_linear(m23(), m23(), x234()));
    case 5: return RES(pd_mse_loss(m23(), x234(), PD_REDUCTION_MEAN));
    case 6: return RES(pd_masked_fill(m23(), x234(), 0.0));
    case 7: return RES(pd_add_(v3(), m23()));
    case 8: return RES(pd_mul_(pd_expand(v3(), (const int64_t[]){2, 3}, 2), m23()));
    case 9: return RES(pd_conv1d(m23(), m23(), NULL, 1, 0, 1, 1));
    default: *m = 0; return RES(pd_dot(v3(), pd_ones((const int64_t[]){3}, 1, PD_I64))); /* promoted */
    }
}
static int w_mse_i(int i, int *m, struct pd_tensor **out)
{
    *m = II < 0 || II >= PD_REDUCTION_COUNT;
    return RES(pd_mse_loss(m23(), m23(), (enum pd_reduction)II));
}
static int w_scale_d(int i, int *m, struct pd_tensor **out)
{
    *m = 0;
    return RES(pd_scale_(m23(), DV));
}
static int w_masked_fill_d(int i, int *m, struct pd_tensor **out)
{
    *m = 0;
    return RES(pd_masked_fill(pd_cast(m23(), PD_I32), pd_cast(m23(), PD_BOOL), DV));
}
static int w_conv1d_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *x = pd_ones((const int64_t[]){1, 2, 5}, 3, PD_F32), *w = pd_ones((const int64_t[]){3, 2, 2}, 3, PD_F32);
    *m = i < 2;
    return RES(pd_conv1d(NP(0, x), NP(1, w), NP(2, v3()), 1, 0, 1, 1));
}
static int w_conv1d_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *x = pd_ones((const int64_t[]){1, 2, 5}, 3, PD_F32), *w = pd_ones((const int64_t[]){2, 2, 2}, 3, PD_F32);
    int k = II;
    struct pd_tensor *r[4] = {
        pd_conv1d(x, w, NULL, k, 0, 1, 1), pd_conv1d(x, w, NULL, 1, k, 1, 1),
        pd_conv1d(x, w, NULL, 1, 0, k, 1), pd_conv1d(x, w, NULL, 1, 0, 1, k),
    };
    /* stride, dilation >= 1; padding >= 0 and not so large the output overflows; groups divide 2 */
    int acc = 0;
    acc += r[0] && k < 1, acc += r[1] && (k < 0 || k > (1 << 30)), acc += r[2] && (k < 1 || k > 4);
    acc += r[3] && !(k == 1 || k == 2);
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_dropout_d(int i, int *m, struct pd_tensor **out)
{
    *m = BAD_D || DV < 0.0 || DV > 1.0;
    return RES(pd_dropout(m23(), DV, 1, NULL));
}
static int w_dropout_n(int i, int *m, struct pd_tensor **out)
{
    (void)i;
    *m = 1;
    return RES(pd_dropout(NULL, 0.5, 1, NULL));
}
static int w_axis_i(int i, int *m, struct pd_tensor **out)
{
    /* argsort, roll, stack and unbind at axis v */
    struct pd_tensor *xs[2] = {m23(), m23()}, *parts[3];
    int acc = 0, k = II;
    struct pd_tensor *a = pd_argsort(m23(), k, 0), *r = pd_roll(m23(), 1, k), *s = pd_stack(xs, 2, k);
    int u = pd_unbind(m23(), k, parts);
    acc += a && (k < -2 || k > 1);
    acc += r && (k < -2 || k > 1);
    acc += s && (k < -3 || k > 2);
    acc += u >= 0 && (k < -2 || k > 1);
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_roll_i(int i, int *m, struct pd_tensor **out)
{
    *m = 0;
    return RES(pd_roll(m23(), IV, 1));
}
static int w_stack_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *xs[2] = {m23(), m23()};
    *m = II < 1 || II > 2;
    return RES(pd_stack(II > 2 ? NULL : xs, II, 0));
}
static int w_axis_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *xs[2] = {m23(), NULL}, *parts[2];
    *m = 1;
    switch (i) {
    case 0: return RES(pd_argsort(NULL, 0, 0));
    case 1: return RES(pd_roll(NULL, 1, 0));
    case 2: return RES(pd_stack(NULL, 2, 0));
    case 3: return RES(pd_stack(xs, 2, 0));
    case 4: return RC(pd_unbind(NULL, 0, parts));
    default: return RC(pd_unbind(m23(), 0, NULL));
    }
}
static int w_stack_shape(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *xs[2] = {m23(), i ? pd_cast(m23(), PD_I32) : v3()};
    *m = i == 0; /* shapes differ; dtypes differ (promoted or refused) */
    return RES(pd_stack(xs, 2, 0));
}

/* --- grad mode, scopes and autograd entry points --- */
static int w_mode_i(int i, int *m, struct pd_tensor **out)
{
    /* a token that no begin returned, for each kind of begin/end pair */
    int acc = 0;
    acc += pd_grad_mode_end(II) == 0;
    struct pd_meta_report *r = NULL;
    acc += pd_meta_end(II, &r) == 0;
    pd_meta_report_destroy(r);
    acc += pd_scope_end(II) == 0 && II != 0;
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_mode_pairs(int i, int *m, struct pd_tensor **out)
{
    /* begin/end pairs in order and out of order; the library must refuse
     * the out-of-order end and still leave every mode as it found it */
    int g0 = pd_is_grad_enabled(), d0 = pd_scope_depth(), bad = 0;
    int a = pd_no_grad_begin(), b = pd_enable_grad_begin();
    int wrong = i == 0 ? pd_grad_mode_end(a) : 0;
    pd_grad_mode_end(b), pd_grad_mode_end(a);
    bad += pd_is_grad_enabled() != g0;
    int s = pd_set_grad_enabled(!g0);
    pd_set_grad_enabled(g0), DISCARD(s);
    int t = pd_meta_begin();
    struct pd_tensor *me = pd_meta_empty((const int64_t[]){1LL << 40, 1LL << 20}, 2, PD_F32);
    bad += me && !pd_tensor_is_meta(me);
    struct pd_meta_report *r = NULL;
    if (pd_meta_end(t, &r) == 0) free(pd_meta_report_summary(r, i ? -1 : 0));
    pd_meta_report_destroy(r);
    bad += pd_scope_depth() != d0;
    *m = i == 0, *out = NULL;
    if (bad) return 0; /* a mode left changed: judged as an accepted invalid call */
    return wrong < 0 ? wrong : (i == 0 ? 0 : -1);
}
static int w_meta_empty_i(int i, int *m, struct pd_tensor **out)
{
    int t = pd_meta_begin(), acc = 0;
    int64_t s[PD_MAX_DIMS + 1] = {2, IV, 1, 1, 1, 1, 1, 1, 1}; /* room for any ndim the library accepts */
    struct pd_tensor *a = pd_meta_empty(s, 2, PD_F32), *b = II <= PD_MAX_DIMS + 1 ? pd_meta_empty(s, II, PD_F32) : NULL;
    acc += a && IV < 0, acc += b && (II < 0 || II > PD_MAX_DIMS);
    struct pd_meta_report *r = NULL;
    pd_meta_end(t, &r);
    pd_meta_report_destroy(r);
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_randn_i(int i, int *m, struct pd_tensor **out)
{
    int64_t s[2] = {2, IV};
    *m = IV < 0 || IV > (1LL << 32);
    return RES(pd_randn(s, 2, PD_F32, NULL));
}
static int w_randn_n(int i, int *m, struct pd_tensor **out)
{
    *m = i == 0;
    return RES(pd_randn(NP(0, (const int64_t[]){2}), 1, i == 1 ? PD_I32 : PD_F32, NULL)); /* case 1: not a float */
}
static int w_backward_n(int i, int *m, struct pd_tensor **out)
{
    *m = 1;
    struct pd_tensor *x = xg(), *y = pd_sum(x, NULL, 0, 0);
    switch (i) {
    case 0: return RC(pd_backward(NULL, NULL, 0));
    case 1: return RC(pd_backward(x234(), NULL, 0));       /* no graph */
    case 2: return RC(pd_backward(pd_mul(x, x), NULL, 0)); /* not a scalar, no gradient given */
    default: return RC(pd_backward(y, m23(), 0));         /* gradient of the wrong shape */
    }
}

/* --- tools: profiler, memory, graph export, logging, md5, names --- */
static int w_tools_n(int i, int *m, struct pd_tensor **out)
{
    *m = 1;
    switch (i) {
    case 0: return RC(pd_profiler_rows(NULL, NULL));
    case 1: return RC(pd_profiler_totals(NULL));
    case 2: return RC(pd_profiler_write_chrome_trace(NULL));
    case 3: return RC(pd_profiler_range_push(NULL));
    case 4: return RC(pd_memory_record_end(NULL));
    case 5: return RC(pd_allocator_stats(NULL, NULL));
    case 6: return RC(pd_graph_write_dot(NULL, "/tmp/sweep-g.dot", 10));
    case 7: return RC(pd_graph_write_html(NULL, "/tmp/sweep-g.html", 10));
    case 8: *m = 0; return RC(pd_graph_num_nodes(NULL)); /* counts of no graph: 0 */
    case 9: *m = 0; return RC(pd_graph_num_edges(NULL));
    case 10: return RES(pd_graph_export_backward(NULL) ? x234() : NULL);
    case 11: return RC(pd_log_parse(NULL));
    case 12: return RC(pd_log_guard_begin(NULL, 1));
    case 13: return RC(pd_name_scope_begin(NULL));
    case 14: return RC(pd_md5_begin(NULL, PD_MD5_BITWISE, 0));
    case 15: return RC(pd_md5_diff(NULL, NULL, NULL));
    case 16: return RC(pd_md5_tensor(NULL, PD_MD5_BITWISE, 0, NULL));
    case 17: return RC(pd_debug_name_params(NULL));
    case 18: return RC(pd_autocast_get_op_policy(NULL));
    case 19: return RES(pd_file_open(NULL, "rb") ? x234() : NULL);
    case 20: return RES(pd_flashmask_to_dense(NULL, 1, 4));
    case 21: return RES(pd_llama_dropout_generator(NULL) ? x234() : NULL);
    case 22: *m = 0; return RC(pd_arith_is_heldout(NULL, PD_ARITH_ADD, 1, 2)); /* NULL: the defaults */
    case 23: return RC(pd_set_log_level(NULL, 1) < 0 ? -1 : 0); /* NULL module: the default level, allowed */
    default: {
        char hex[33];
        *m = 0;
        pd_md5_hex(NULL, 0, hex);
        pd_flashmask_tile_size(NULL, NULL);
        pd_philox_fill(1, 2, NULL, 0);
        pd_log_set_sink(NULL, NULL);
        return RC(pd_md5_tensor(x234(), PD_MD5_BITWISE, 0, hex));
    }
    }
}
static int w_state_ends(int i, int *m, struct pd_tensor **out)
{
    /* an end without its begin; a second begin while on */
    struct pd_memory_record rec;
    *m = 1;
    switch (i) {
    case 0: return RC(pd_profiler_end());
    case 1: { /* a pop without a push (a no-op while the profiler is off) */
        pd_profiler_begin();
        int rc = pd_profiler_range_pop();
        pd_profiler_end();
        return RC(rc);
    }
    case 2: return RC(pd_memory_record_end(&rec));
    case 3: return RES(pd_graph_capture_end() ? x234() : NULL);
    case 4: return RC(pd_log_guard_end());
    case 5: return RC(pd_name_scope_end());
    case 6: return RC(pd_md5_end());
    case 7: {
        pd_profiler_begin();
        int rc = pd_profiler_begin();
        pd_profiler_end();
        return RC(rc);
    }
    case 8: { /* regions nest: a second begin is allowed, two ends close both */
        *m = 0;
        pd_memory_record_begin(), pd_memory_record_begin();
        pd_memory_record_end(&rec);
        return RC(pd_memory_record_end(NULL));
    }
    default: {
        pd_graph_capture_begin();
        int rc = pd_graph_capture_begin();
        pd_graph_destroy(pd_graph_capture_end());
        return RC(rc);
    }
    }
}
static int w_tools_i(int i, int *m, struct pd_tensor **out)
{
    /* counts, levels and modes at v */
    int acc = 0, k = II;
    free(pd_profiler_summary(k));
    pd_profiler_begin();
    DISCARD(pd_add(x234(), x234()));
    pd_profiler_end();
    free(pd_profiler_summary(k));
    pd_graph_capture_begin();
    DISCARD(pd_mul(x234(), x234()));
    struct pd_graph *g = pd_graph_capture_end();
    if (pd_graph_write_dot(g, "/tmp/sweep-g.dot", k) == 0 && k < -1) acc++;
    pd_graph_destroy(g);
    remove("/tmp/sweep-g.dot");
    char hex[33];
    if (pd_md5_tensor(x234(), (enum pd_md5_mode)k, 2, hex) == 0 && (k < 0 || k >= PD_MD5_MODE_COUNT)) acc++;
    if (pd_md5_tensor(x234(), PD_MD5_ROUNDED, k, hex) == 0 && (k < 0 || k > 17)) acc++;
    int lv = pd_get_log_level("sweep");
    if (pd_set_log_level("sweep", k) == 0 && (k < 0 || k > 9)) acc++;
    pd_set_log_level("sweep", lv);
    if (pd_log_guard_begin("sweep", k) == 0) acc += k < 0 || k > 9, pd_log_guard_end();
    int a = pd_anomaly_mode(k), c = pd_debug_set_callsites(k), t = pd_flashmask_set_tile_skipping(k);
    pd_anomaly_mode(a > 0), pd_debug_set_callsites(c > 0), pd_flashmask_set_tile_skipping(t > 0);
    pd_fault_inject(IV, 0), DISCARD(pd_fault_count()), DISCARD(pd_fault_hits()), pd_fault_inject(0, 0);
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_profiler_pairs(int i, int *m, struct pd_tensor **out)
{
    /* a full profiler and memory-record session with ranges left open */
    struct pd_memory_record rec;
    struct pd_profiler_row *rows = NULL;
    struct pd_profiler_totals tot;
    int n = 0;
    pd_profiler_begin();
    pd_memory_record_begin();
    pd_profiler_range_push("a");
    pd_profiler_range_push(i ? "b\n\"c" : "");
    DISCARD(pd_matmul(m23(), m23(), 0, 1));
    pd_profiler_end(); /* ranges still open */
    pd_profiler_rows(&rows, &n), free(rows);
    pd_profiler_totals(&tot);
    pd_profiler_write_chrome_trace("/tmp/sweep-trace.json"), remove("/tmp/sweep-trace.json");
    pd_memory_record_end(&rec);
    free(pd_memory_summary());
    pd_memory_reset_peak(), pd_memory_empty_cache();
    struct pd_memory_stats st;
    *m = 0;
    return RC(pd_allocator_stats(pd_allocator_default(), &st));
}
static int w_names(int i, int *m, struct pd_tensor **out)
{
    /* names with quotes, newlines and great length */
    char big[5000];
    memset(big, 'n', sizeof big - 1), big[sizeof big - 1] = 0;
    const char *s = i == 0 ? "a\"b\nc" : i == 1 ? "" : big;
    struct pd_tensor *x = x234();
    *m = 0;
    pd_tensor_set_name(x, s);
    pd_name_scope_begin(s);
    DISCARD(pd_name_scope_current());
    pd_name_scope_end();
    pd_log_parse(s);
    DISCARD(pd_autocast_get_op_policy(s)), DISCARD(pd_autocast_dtype());
    pd_debug_reset_names();
    return RC(pd_md5_diff(s, s, NULL) < 0 ? -1 : 0);
}

/* --- FlashMask mask builders and attention --- */
static int w_mask_i(int i, int *m, struct pd_tensor **out)
{
    /* each builder with one argument at v (an S at v too) */
    int64_t v = IV, two[16] = {2, 2}; /* n_docs up to 16 reads zero lengths after the two */
    int acc = 0;
    struct pd_tensor *r[11] = {
        v <= (1 << 20) ? pd_flashmask_causal(v) : NULL, /* larger S: real gigabytes, judged by the op sweep */
        pd_flashmask_sliding_window(8, v, 1, 1),
        pd_flashmask_sliding_window(8, 1, v, 0),
        pd_flashmask_global_sliding_window(8, v, 1, 1),
        pd_flashmask_prefix_lm(8, v),
        pd_flashmask_qk_sparse(8, v, 2),
        pd_flashmask_qk_sparse(8, 2, v),
        pd_flashmask_random_eviction(8, v, 7),
        II <= 16 ? pd_flashmask_document(4, two, II) : NULL, /* more: past the caller's array */
        II <= 16 ? pd_flashmask_causal_blockwise(4, two, II) : NULL,
        II <= 16 ? pd_flashmask_prefix_document(4, two, (const int64_t[16]){1, 1}, II) : NULL,
    };
    acc += r[0] && v < 1;
    for (int k = 1; k < 8; k++) acc += r[k] && (v < 0 || v > 8);
    for (int k = 8; k < 11; k++) acc += r[k] && II < 0; /* zero lengths after the two are documents too */
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_mask_n(int i, int *m, struct pd_tensor **out)
{
    int64_t lens[2] = {2, 2};
    *m = 1;
    switch (i) {
    case 0: return RES(pd_flashmask_document(4, NULL, 2));
    case 1: return RES(pd_flashmask_causal_document(4, NULL, 2));
    case 2: return RES(pd_flashmask_causal_blockwise(4, NULL, 2));
    case 3: return RES(pd_flashmask_share_question(4, NULL, 2));
    case 4: return RES(pd_flashmask_prefix_document(4, lens, NULL, 2));
    case 5: return RES(pd_flashmask_prefix_document(4, NULL, lens, 2));
    case 6: return RES(pd_flashmask_document(3, lens, 2)); /* lengths sum past S */
    default: return RES(pd_flashmask_share_question(4, (const int64_t[]){-1, 5}, 2));
    }
}
static int w_tiles_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_flashmask_tiles t;
    struct pd_tensor *mask = pd_flashmask_causal(8);
    int acc = 0;
    int64_t v = IV;
    acc += pd_flashmask_count_tiles(mask, 1, v, 8, 8, 1, 1, &t) == 0 && v != 1;
    acc += pd_flashmask_count_tiles(mask, 1, 1, v, 8, 1, 1, &t) == 0 && v != 8;
    acc += pd_flashmask_count_tiles(mask, 1, 1, 8, 8, v, 1, &t) == 0 && v != 1;
    acc += pd_flashmask_count_tiles(mask, 1, 1, 8, 8, 1, 1, NULL) == 0;
    acc += pd_flashmask_count_tiles(NULL, 1, 1, 8, 8, 1, 1, &t) == 0;
    struct pd_tensor *d = pd_flashmask_to_dense(mask, 1, v);
    acc += d && v != 8;
    DISCARD(pd_flashmask_last_tiles());
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_fm_attn_n(int i, int *m, struct pd_tensor **out)
{
    const int64_t s[4] = {1, 8, 2, 4};
    struct pd_tensor *q = pd_ones(s, 4, PD_F32), *k = pd_ones(s, 4, PD_F32), *v = pd_ones(s, 4, PD_F32);
    struct pd_tensor *mask = pd_flashmask_causal(8), *lse = NULL;
    *m = i < 3;
    return RES(pd_flashmask_attention(NP(0, q), NP(1, k), NP(2, v), NP(3, mask), 1, NULL, -1.0, 0.0, i == 4 ? &lse : NULL));
}
static int w_fm_attn_d(int i, int *m, struct pd_tensor **out)
{
    const int64_t s[4] = {1, 8, 2, 4};
    struct pd_tensor *q = pd_ones(s, 4, PD_F32);
    int acc = 0;
    struct pd_tensor *a = pd_flashmask_attention(q, q, q, NULL, 1, NULL, DV, 0.0, NULL);
    struct pd_tensor *b = pd_flashmask_attention(q, q, q, NULL, 1, NULL, -1.0, DV, NULL);
    acc += a && (isnan(DV) || isinf(DV));
    acc += b && (BAD_D || DV < 0.0 || DV >= 1.0);
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}

/* --- conversions, generators, data --- */
static int w_convert_d(int i, int *m, struct pd_tensor **out)
{
    /* every conversion of v, and back: no UB for NaN, infinities or huge values */
    float f = (float)(isfinite(DV) && fabs(DV) > 3e38 ? (DV > 0 ? INFINITY : -INFINITY) : DV);
    uint16_t a = pd_f32_to_bf16(f), b = pd_f32_to_f16(f), c = pd_f64_to_bf16(DV), d = pd_f64_to_f16(DV);
    float r[4] = {pd_bf16_to_f32(a), pd_f16_to_f32(b), pd_bf16_to_f32(c), pd_f16_to_f32(d)};
    int acc = 0;
    for (int k = 0; k < 4; k++) acc += isnan(DV) != isnan(r[k]); /* NaN stays NaN, nothing else becomes one */
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_promote_i(int i, int *m, struct pd_tensor **out)
{
    enum pd_dtype t = pd_promote_types((enum pd_dtype)II, PD_F32);
    int bad = II < 0 || II >= PD_DTYPE_COUNT;
    *m = 0, *out = NULL;
    return (int)t >= 0 && (int)t < PD_DTYPE_COUNT && bad ? 0 : -1;
}
static int w_generator_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_generator *g = pd_default_generator();
    uint32_t buf[4];
    pd_manual_seed((uint64_t)IV);
    pd_philox_fill((uint64_t)IV, (uint64_t)IV, buf, 4);
    *m = 0;
    return RES(pd_rand((const int64_t[]){3}, 1, PD_F32, g));
}
static int w_builtin_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_arith_config c;
    pd_arith_config_default(&c);
    struct pd_tokenizer *tok = pd_tokenizer_byte_create();
    int64_t n = IV > 4096 ? 4096 : IV; /* bounded time: the count itself is judged by the first table */
    struct pd_text_dataset *d = pd_text_dataset_builtin((uint64_t)IV, n, &c, tok, 0.1);
    int h = pd_arith_is_heldout(&c, (enum pd_arith_op)II, 3, 4);
    int acc = (d && n < 1) + (h >= 0 && (II < 0 || II >= PD_ARITH_OP_COUNT));
    pd_text_dataset_destroy(d);
    pd_tokenizer_destroy(tok);
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_builtin_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_arith_config c;
    pd_arith_config_default(&c);
    struct pd_tokenizer *tok = pd_tokenizer_byte_create();
    struct pd_text_dataset *d = pd_text_dataset_builtin(1, 16, NP(0, &c), NP(1, tok), 0.1);
    int ok = d != NULL;
    pd_text_dataset_destroy(d);
    pd_tokenizer_destroy(tok);
    *m = 0, *out = NULL; /* a NULL config is the default task, a NULL tokenizer bytes */
    return ok ? 0 : (pd_last_status() ? pd_last_status() : -1);
}

/* Hugging Face directories and config.json (include/pd/hf.h): NULLs, a
 * missing directory, bad JSON and dtypes; every case fails with a message. */
static int w_hf_n(int i, int *m, struct pd_tensor **out)
{
    static const char *js[] = {"\xff", "[]", "{\"hidden_size\": 1e400}", "{\"hidden_size\": 8, \"rope_scaling\": 3}",
                               "{\"vocab_size\": 16, \"hidden_size\": 8, \"intermediate_size\": 8, "
                               "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"num_key_value_heads\": 0}"};
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    *m = 1, *out = NULL;
    if (i >= 8) return rc_of(pd_llama_config_from_hf(&c, js[i - 8]));
    switch (i) {
    case 0: return pd_llama_from_hf(NULL) ? 0 : -1;
    case 1: return pd_llama_from_hf("/nonexistent/paddlec-sweep") ? 0 : -1;
    case 2: return rc_of(pd_llama_load_hf_weights(NULL, "/nonexistent"));
    case 3: return rc_of(pd_llama_save_hf(NULL, "/nonexistent", PD_F32));
    case 4: return rc_of(pd_llama_config_from_hf(NP(4, &c), "{}"));
    case 5: return rc_of(pd_llama_config_from_hf(&c, NULL));
    default: { char *j = pd_llama_config_to_hf(NP(6, &c), i == 6 ? PD_F32 : PD_I32); free(j); return j ? 0 : -1; }
    }
}

/* --- generation sessions (include/pd/generate.h) --- */
static struct pd_llama *tiny_llama(void)
{
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    c.vocab_size = 16, c.dim = 8, c.n_layers = 1, c.n_heads = 2, c.n_kv_heads = 1, c.hidden_dim = 16;
    c.max_seq_len = 8;
    return pd_llama_create(&c, 1);
}
static int w_session_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_generate_config g;
    pd_generate_config_default(&g);
    g.max_new_tokens = 1;
    const int64_t row[2] = {1, 2};
    *m = i != 4, *out = NULL;
    if (i == 4) { /* accessors and destroy of NULL: "none" */
        pd_generate_session_destroy(NULL);
        return pd_generate_session_len(NULL) || pd_generate_session_history(NULL) || pd_generate_session_max_ctx(NULL)
                   ? 0 : -1;
    }
    struct pd_llama *l = tiny_llama();
    if (!l) return -1;
    struct pd_generate_session *s = pd_generate_session_create(NP(0, l), 0);
    struct pd_generation *r = NULL;
    if (s) r = pd_generate_session_next(NP(1, s), NP(2, row), 2, NP(3, &g), NULL);
    int ok = s && r;
    pd_generation_destroy(r);
    pd_generate_session_destroy(s);
    pd_llama_destroy(l);
    return ok ? 0 : -1;
}
static int w_session_i(int i, int *m, struct pd_tensor **out)
{
    /* the session's max_ctx, a first turn's length and max_new_tokens at v */
    struct pd_generate_config g;
    pd_generate_config_default(&g);
    g.max_new_tokens = 1;
    const int64_t row[4] = {1, 2, 3, 1};
    int acc = 0;
    *out = NULL;
    struct pd_llama *l = tiny_llama();
    if (!l) return -1;
    if (II <= 4096) { /* larger: refused by the sweep's allocator, or merely slow */
        struct pd_generate_session *s = pd_generate_session_create(l, II);
        if (s && II < 0) acc++;
        pd_generate_session_destroy(s);
    }
    struct pd_generate_session *s = pd_generate_session_create(l, 0);
    if (s && II <= 4) { /* the row holds 4 */
        struct pd_generation *r = pd_generate_session_next(s, row, II, &g, NULL);
        if (r && II < 1) acc++;   /* a first turn needs a token */
        pd_generation_destroy(r);
    }
    if (s && II <= 8) {
        g.max_new_tokens = II;
        struct pd_generation *r = pd_generate_session_next(s, row, 1, &g, NULL);
        if (r && II < 0) acc++;
        pd_generation_destroy(r);
    }
    pd_generate_session_destroy(s);
    pd_llama_destroy(l);
    *m = II < 1;
    return acc ? 0 : -1;
}

/* --- issue 13's additions: options structs, weighted losses, pooling options,
 * group norm, parameter dtype, threads, leak tracking, document splits --- */
static struct pd_tensor *img(void) { return pd_ones((const int64_t[]){1, 2, 5, 5}, 4, PD_F32); }
static int w_pool_ex_i(int i, int *m, struct pd_tensor **out)
{
    /* kernel, stride, padding, ceil_mode and exclusive at v, one at a time */
    int k = II, acc = 0;
    const int two[2] = {2, 2}, one[2] = {1, 1}, zero[2] = {0, 0}, kv[2] = {k, 2};
    struct pd_tensor *r[5] = {
        pd_max_pool2d_ex(img(), kv, one, zero, 0), pd_avg_pool2d_ex(img(), two, kv, zero, 0, 1),
        pd_avg_pool2d_ex(img(), two, one, kv, 0, 0), pd_max_pool2d_ex(img(), two, two, one, k),
        pd_avg_pool2d_ex(img(), two, two, one, 1, k),
    };
    acc += r[0] && (k < 1 || k > 5), acc += r[1] && k < 1, acc += r[2] && (k < 0 || k > 1);
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_pool_ex_n(int i, int *m, struct pd_tensor **out)
{
    const int two[2] = {2, 2}, zero[2] = {0, 0};
    *m = i < 2; /* stride NULL: the kernel; padding NULL: 0 (include/pd/ops.h) */
    if (i < 4) return RES(pd_avg_pool2d_ex(NP(0, img()), NP(1, two), NP(2, two), NP(3, zero), 0, 1));
    return RES(pd_max_pool2d_ex(NULL, two, two, zero, 1));
}
static int w_weighted_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *logits = pd_ones((const int64_t[]){3, 4}, 2, PD_F32), *t = pd_zeros((const int64_t[]){3}, 1, PD_I64);
    struct pd_tensor *w = pd_ones((const int64_t[]){4}, 1, PD_F32);
    *m = i != 2 && i != 5; /* weight NULL: unweighted */
    if (i < 3) return RES(pd_cross_entropy_weighted(NP(0, logits), NP(1, t), NP(2, w), -100, 0.0, PD_REDUCTION_MEAN));
    if (i < 6) return RES(pd_nll_loss_weighted(NP(3, logits), NP(4, t), NP(5, w), -100, PD_REDUCTION_MEAN));
    if (i == 6) return RES(pd_cross_entropy_weighted(logits, t, pd_ones((const int64_t[]){3}, 1, PD_F32), -100, 0.0, 1));
    return RES(pd_cross_entropy(logits, t, -100, 2.0, PD_REDUCTION_MEAN)); /* smoothing outside [0, 1] */
}
static int w_weighted_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *logits = pd_ones((const int64_t[]){3, 4}, 2, PD_F32), *t = pd_zeros((const int64_t[]){3}, 1, PD_I64);
    *m = II < 0 || II >= PD_REDUCTION_COUNT;
    return RES(pd_cross_entropy_weighted(logits, t, pd_ones((const int64_t[]){4}, 1, PD_F32), IV, 0.0, (enum pd_reduction)II));
}
static int w_grad_opts_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *x = xg(), *y = pd_sum(pd_mul(x, x), NULL, 0, 0), *g = NULL, *z = x234();
    *m = i != 3;
    switch (i) {
    case 0: return RC(pd_grad(NULL, 1, &x, 1, &g, NULL));
    case 1: return RC(pd_grad(&y, 1, NULL, 1, &g, NULL));
    case 2: return RC(pd_grad(&y, 1, &x, 1, NULL, NULL));
    case 3: { /* x.grad holds its graph (and so x) until zero_grad: include/pd/autograd.h */
        int rc = RC(pd_backward_ex(y, &(struct pd_grad_options){.create_graph = 1}));
        pd_tensor_zero_grad(x);
        return rc;
    }
    case 4: return RC(pd_grad(&y, 1, &z, 1, &g, NULL)); /* z is not used and needs no grad */
    default: return RC(pd_backward_ex(NULL, NULL));
    }
}
static int w_grad_opts_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_tensor *x = xg(), *y = pd_sum(x, NULL, 0, 0), *g[2] = {NULL, NULL};
    struct pd_tensor *xs[2] = {x, x}, *ys[2] = {y, y};
    int k = II;
    *m = k < 1 || k > 2, *out = NULL;
    int rc = pd_grad(ys, k > 2 ? 2 : k, xs, k > 2 ? 2 : k, g, &(struct pd_grad_options){.retain_graph = 1});
    if (k > 2) return -1; /* only the arrays' 2 */
    return rc < 0 ? rc : 0;
}
static int w_take_i(int i, int *m, struct pd_tensor **out)
{
    *m = II < -3 || II > 2;
    return RES(pd_take_along_axis(x234(), II, pd_zeros((const int64_t[]){2, 3, 1}, 3, PD_I64)));
}
static int w_groupnorm_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_nn_groupnorm *g = pd_nn_groupnorm_create(IV, 4, 1e-5, 1);
    struct pd_nn_groupnorm *h = pd_nn_groupnorm_create(2, IV, 1e-5, 1);
    int acc = (g && !(IV == 1 || IV == 4 || IV == 2)) + (h && (IV < 2 || IV % 2));
    struct pd_tensor *y = g ? pd_nn_groupnorm_forward(g, pd_ones((const int64_t[]){1, 4, 3}, 3, PD_F32)) : NULL;
    struct pd_state_dict *sd = pd_state_dict_create();
    if (g) pd_nn_groupnorm_params(g, "gn", sd);
    pd_state_dict_destroy(sd);
    pd_nn_groupnorm_destroy(g), pd_nn_groupnorm_destroy(h), DISCARD(y);
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_groupnorm_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_nn_groupnorm *g = pd_nn_groupnorm_create(2, 4, i == 3 ? NAN : 1e-5, 1);
    int rc = 0;
    *m = 1;
    if (i == 0) rc = RES(pd_nn_groupnorm_forward(NULL, x234()));
    else if (i == 1) rc = RES(pd_nn_groupnorm_forward(g, NULL));
    else if (i == 2) rc = RC(pd_nn_groupnorm_params(g, "gn", NULL));
    else rc = g ? 0 : (pd_last_status() ? pd_last_status() : -1); /* eps NaN */
    pd_nn_groupnorm_destroy(g), pd_nn_groupnorm_destroy(NULL);
    return rc;
}
static int w_runtime_i(int i, int *m, struct pd_tensor **out)
{
    /* thread counts, the parameter dtype and leak tracking at v; each restored */
    int acc = 0, t0 = pd_get_num_threads();
    if (pd_set_num_threads(II) == 0) acc += II < 0 || II > 4096;
    pd_set_num_threads(0), DISCARD(pd_kernel_isa()), DISCARD(t0);
    enum pd_dtype d0 = pd_nn_param_dtype();
    if (pd_nn_set_param_dtype((enum pd_dtype)II) >= 0) acc += II < 0 || II >= PD_DTYPE_COUNT;
    pd_nn_set_param_dtype(d0);
    int l0 = pd_debug_track_live(II);
    DISCARD(pd_debug_report_live(NULL));
    pd_debug_track_live(l0 > 0);
    *m = 0, *out = NULL;
    return acc ? 0 : -1;
}
static int w_docsplit_d(int i, int *m, struct pd_tensor **out)
{
    static const char text[] = "one doc\n\ntwo doc\n\nthree\n\nfour\n";
    struct pd_text_dataset *d = pd_text_dataset_from_documents(text, sizeof text - 1, NULL, DV, 7);
    int ok = d != NULL;
    pd_text_dataset_destroy(d);
    d = pd_text_dataset_from_parts(i % 2 ? NULL : text, sizeof text - 1, text, 4, NULL);
    pd_text_dataset_destroy(d);
    *m = BAD_D || DV < 0.0 || DV >= 1.0, *out = NULL;
    return ok ? 0 : (pd_last_status() ? pd_last_status() : -1);
}
/* the parallel APIs that need no MPI for these inputs (the rest: tests/dist/test_dist_errors.c) */
static int w_parallel_n(int i, int *m, struct pd_tensor **out)
{
    struct pd_shard_plan plan[12];
    struct pd_state_dict *g = NULL;
    int rc = 0;
    *m = i < 4, *out = NULL;
    pd_shard_plans_clear(); /* nothing registered: a no-op */
    if (i == 0) rc = RC(pd_shard_optimizer(NULL));
    else if (i == 1) rc = (g = pd_state_dict_gather(NULL)) ? 0 : -1;
    else if (i == 2) rc = RC(pd_llama_shard_plan(0, NULL, 12));
    else if (i == 3) rc = RC(pd_llama_shard_plan(1, plan, 11));
    else { /* a plain state dict gathers to a copy without starting MPI */
        struct pd_state_dict *sd = pd_state_dict_create();
        pd_state_dict_add(sd, "a", x234());
        rc = (g = pd_state_dict_gather(sd)) && pd_state_dict_size(g) == 1 && !pd_dist_is_initialized() ? 0 : -1;
        pd_state_dict_destroy(sd);
    }
    pd_state_dict_destroy(g);
    return rc;
}
static int w_llama_plan_i(int i, int *m, struct pd_tensor **out)
{
    struct pd_shard_plan plan[12]; /* the plan has at most 12 entries, whatever cap says */
    int sp = i % 2, n = pd_llama_shard_plan(sp, plan, II);
    *m = II < (sp ? 12 : 8), *out = NULL;
    return n < 0 ? n : (n == (sp ? 12 : 8) ? 0 : -1);
}

const struct sw_wrap sw_more[] = {
    {"tensor accessors(NULL)", NUL, 1, w_access_n}, {"pd_tensor_set_name(NULL)", NUL, 2, w_set_name_n},
    {"pd_tensor_register_hook(NULL)", NUL, 2, w_hook_n}, {"pd_retain_grad(NULL)", NUL, 1, w_retain_grad_n},
    {"pd_get(NULL)", NUL, 2, w_get_n}, {"pd_get(index v)", INT, 0, w_get_i}, {"pd_item(NULL | many | none)", NUL, 3, w_item_n},
    {"pd_tensor_dim(axis v)", INT, 0, w_dim_i}, {"pd_*_like/clone/contiguous/detach(NULL)", NUL, 7, w_like_n},
    {"pd_full_like(bool/int8, v)", DBL, 0, w_full_like_d}, {"pd_init_ones_/zeros_(NULL)", NUL, 2, w_init_n},
    {"pd_init_calculate_gain(nl v)", INT, 0, w_gain_i}, {"pd_init_calculate_gain(param v)", DBL, 0, w_gain_d},
    {"pd_add_/mul_/bmm/dot/outer/mse_loss/linear/masked_fill(NULL)", NUL, 16, w_binary_n},
    {"composites with wrong shapes", NUL, 11, w_composite_shape}, {"pd_mse_loss(reduction v)", INT, 0, w_mse_i},
    {"pd_scale_(v)", DBL, 0, w_scale_d}, {"pd_masked_fill(int, v)", DBL, 0, w_masked_fill_d},
    {"pd_conv1d(NULL)", NUL, 3, w_conv1d_n}, {"pd_conv1d(stride/padding/dilation/groups v)", INT, 0, w_conv1d_i},
    {"pd_dropout(p v)", DBL, 0, w_dropout_d}, {"pd_dropout(NULL)", NUL, 1, w_dropout_n},
    {"pd_argsort/roll/stack/unbind(axis v)", INT, 0, w_axis_i}, {"pd_roll(shift v)", INT, 0, w_roll_i},
    {"pd_stack(n v)", INT, 0, w_stack_i}, {"pd_argsort/roll/stack/unbind(NULL)", NUL, 6, w_axis_n},
    {"pd_stack(mismatch)", NUL, 2, w_stack_shape}, {"grad/meta/scope end(token v)", INT, 0, w_mode_i},
    {"grad/meta mode pairs", NUL, 2, w_mode_pairs}, {"pd_meta_empty(dim/ndim v)", INT, 0, w_meta_empty_i},
    {"pd_randn(dim v)", INT, 0, w_randn_i}, {"pd_randn(NULL | int dtype)", NUL, 2, w_randn_n},
    {"pd_backward(bad)", NUL, 4, w_backward_n}, {"tools(NULL)", NUL, 25, w_tools_n},
    {"tool end without begin / begin twice", NUL, 10, w_state_ends}, {"tools(count/level/mode v)", INT, 0, w_tools_i},
    {"profiler and memory sessions", NUL, 2, w_profiler_pairs}, {"names and scopes(hostile text)", NUL, 3, w_names},
    {"pd_flashmask_* builders(v)", INT, 0, w_mask_i}, {"pd_flashmask_* builders(NULL/bad lens)", NUL, 8, w_mask_n},
    {"pd_flashmask_count_tiles/to_dense(v)", INT, 0, w_tiles_i},
    {"pd_flashmask_attention(NULL)", NUL, 5, w_fm_attn_n}, {"pd_flashmask_attention(scale/dropout v)", DBL, 0, w_fm_attn_d},
    {"pd_f*_to_*(v)", DBL, 0, w_convert_d}, {"pd_promote_types(v)", INT, 0, w_promote_i},
    {"pd_manual_seed/philox_fill/default_generator(v)", INT, 0, w_generator_i},
    {"pd_text_dataset_builtin/arith_is_heldout(v)", INT, 0, w_builtin_i},
    {"pd_text_dataset_builtin(NULL)", NUL, 2, w_builtin_n},
    {"pd_max/avg_pool2d_ex(kernel/stride/padding/ceil/exclusive v)", INT, 0, w_pool_ex_i},
    {"pd_max/avg_pool2d_ex(NULL)", NUL, 5, w_pool_ex_n}, {"pd_cross_entropy/nll_loss_weighted(NULL | bad)", NUL, 8, w_weighted_n},
    {"pd_cross_entropy_weighted(ignore/reduction v)", INT, 0, w_weighted_i}, {"pd_grad/backward_ex(NULL | options)", NUL, 6, w_grad_opts_n},
    {"pd_grad(n v)", INT, 0, w_grad_opts_i}, {"pd_take_along_axis(axis v)", INT, 0, w_take_i},
    {"pd_nn_groupnorm_*(groups/channels v)", INT, 0, w_groupnorm_i}, {"pd_nn_groupnorm_*(NULL | eps NaN)", NUL, 4, w_groupnorm_n},
    {"threads, parameter dtype, leak tracking(v)", INT, 0, w_runtime_i},
    {"pd_text_dataset_from_documents/parts(val v)", DBL, 0, w_docsplit_d},
    {"pd_generate_session_*(NULL)", NUL, 5, w_session_n}, {"pd_generate_session(max_ctx/n/max_new v)", INT, 0, w_session_i},
    {"pd_llama_*_hf(NULL/bad)", NUL, 13, w_hf_n},
    {"pd_shard_optimizer/state_dict_gather/llama_shard_plan(NULL/room)", NUL, 5, w_parallel_n},
    {"pd_llama_shard_plan(cap v)", INT, 0, w_llama_plan_i},
};
const int sw_n_more = (int)(sizeof sw_more / sizeof sw_more[0]);
