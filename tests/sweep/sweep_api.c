/* paddle.c — the sweep's hand table: public entry points that are not ops
 * (tests/sweep/sweep.c). Each entry takes one integer argument through a
 * list of extremes and says which values must fail. Ops (and their
 * wrappers' attributes) are generated from the table in sweep_ops.c.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "pd/pd.h"
#include "sweep.h"

static const int64_t vals[] = {0, -1, 1, 2, 3, -2, -3, -4, 4, INT_MIN, INT_MAX, INT64_MIN, INT64_MAX, 1LL << 32, -(1LL << 32),
                               1LL << 62, 6, -6, 127};
#define NV ((int)(sizeof vals / sizeof vals[0]))

static struct pd_tensor *x234(void)
{
    int64_t s[3] = {2, 3, 4};
    return pd_ones(s, 3, PD_F32);
}

static int ax_bad(int64_t v, int nd) { int n = nd ? nd : 1; return v < -n || v >= n; }
static int fits_int(int64_t v) { return v >= INT_MIN && v <= INT_MAX; }

/* Each returns the status and sets *must (error due) and out[0]. */
typedef int (*api_fn)(int64_t v, int *must, struct pd_tensor **out);

#define RES(t) (*out = (t), *out ? 0 : (pd_last_status() ? pd_last_status() : -1))

static int a_reshape(int64_t v, int *must, struct pd_tensor **out)
{
    int64_t s[2] = {v, -1};
    *must = !(v > 0 && 24 % v == 0);
    return RES(pd_reshape(x234(), s, 2));
}
static int a_reshape_ndim(int64_t v, int *must, struct pd_tensor **out)
{
    int64_t s[PD_MAX_DIMS] = {24, 1, 1, 1, 1, 1, 1, 1};
    int nd = fits_int(v) ? (int)v : -1;
    *must = !(nd >= 1 && nd <= PD_MAX_DIMS);
    return RES(pd_reshape(x234(), s, nd));
}
static int a_flatten(int64_t v, int *must, struct pd_tensor **out)
{
    int a = fits_int(v) ? (int)v : INT_MIN;
    *must = ax_bad(a, 3);
    return RES(pd_flatten(x234(), a, -1));
}
static int a_flatten0d(int64_t v, int *must, struct pd_tensor **out)
{
    int a = fits_int(v) ? (int)v : INT_MIN;
    *must = ax_bad(a, 0);
    return RES(pd_flatten(pd_scalar(1, PD_F32), a, a));
}
static int a_squeeze(int64_t v, int *must, struct pd_tensor **out)
{
    int a = fits_int(v) ? (int)v : INT_MIN;
    *must = a != PD_ALL_AXES && ax_bad(a, 3);
    return RES(pd_squeeze(x234(), a));
}
static int a_unsqueeze(int64_t v, int *must, struct pd_tensor **out)
{
    int a = fits_int(v) ? (int)v : INT_MIN;
    *must = a < -4 || a > 3;
    return RES(pd_unsqueeze(x234(), a));
}
static int a_transpose(int64_t v, int *must, struct pd_tensor **out)
{
    int a = fits_int(v) ? (int)v : INT_MIN;
    *must = ax_bad(a, 3);
    return RES(pd_transpose(x234(), a, 0));
}
static int a_sum_to_shape(int64_t v, int *must, struct pd_tensor **out)
{
    int64_t s[PD_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
    int nd = fits_int(v) ? (int)v : -1;
    *must = nd < 0 || nd > 3; /* the target must not have more dims than x */
    if (nd > PD_MAX_DIMS) *must = 1;
    return RES(pd_sum_to_shape(x234(), s, nd));
}
static int a_sum_axes(int64_t v, int *must, struct pd_tensor **out)
{
    int ax[2] = {fits_int(v) ? (int)v : INT_MIN, 0};
    *must = ax_bad(ax[0], 3) || (ax[0] == 0 || ax[0] == -3);
    return RES(pd_sum(x234(), ax, 2, 0));
}
static int a_sum_n(int64_t v, int *must, struct pd_tensor **out)
{
    int ax[PD_MAX_DIMS + 1] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
    int n = fits_int(v) ? (int)v : -1;
    *must = n < 0 || n > 3;
    return RES(pd_sum(x234(), n > PD_MAX_DIMS + 1 ? NULL : ax, n, 0));
}
static int a_from_buffer(int64_t v, int *must, struct pd_tensor **out)
{
    float buf[24] = {0};
    int64_t s[PD_MAX_DIMS] = {2, 3, 4, 1, 1, 1, 1, 1};
    int nd = fits_int(v) ? (int)v : -1;
    *must = nd < 0 || nd > PD_MAX_DIMS;
    return RES(pd_from_buffer(buf, s, nd, PD_F32));
}
static int a_from_buffer_dt(int64_t v, int *must, struct pd_tensor **out)
{
    double buf[24] = {0};
    int64_t s[1] = {3};
    int dt = fits_int(v) ? (int)v : -1;
    *must = dt < 0 || dt >= PD_DTYPE_COUNT;
    return RES(pd_from_buffer(buf, s, 1, (enum pd_dtype)dt));
}
static int a_from_buffer_null(int64_t v, int *must, struct pd_tensor **out)
{
    int64_t s[1] = {v};
    *must = v != 0; /* NULL data: only an empty tensor may be made */
    return RES(pd_from_buffer(NULL, s, 1, PD_F32));
}
static int a_to_buffer(int64_t v, int *must, struct pd_tensor **out)
{
    double buf[24];
    int dt = fits_int(v) ? (int)v : -1;
    *must = dt < 0 || dt >= PD_DTYPE_COUNT;
    *out = NULL;
    int rc = pd_to_buffer(x234(), buf, (enum pd_dtype)dt);
    return rc < 0 ? rc : 0;
}
static int a_to_buffer_null(int64_t v, int *must, struct pd_tensor **out)
{
    *must = 1;
    *out = NULL;
    int rc = pd_to_buffer(x234(), NULL, PD_F32);
    return rc < 0 ? rc : 0;
}
static int a_slice_stop(int64_t v, int *must, struct pd_tensor **out)
{
    *must = 0;
    return RES(pd_slice(x234(), 0, 0, v, 1));
}
static int a_slice_step(int64_t v, int *must, struct pd_tensor **out)
{
    *must = v <= 0;
    return RES(pd_slice(x234(), 0, 0, 2, v));
}
static int a_chunk(int64_t v, int *must, struct pd_tensor **out)
{
    struct pd_tensor *o[8] = {0};
    int c = fits_int(v) ? (int)v : -1;
    *must = c <= 0 || c > 8;
    *out = NULL;
    int rc = c > 8 ? -1 : pd_chunk(x234(), c, 0, o);
    if (c > 8) *must = 0, rc = 0;
    return rc < 0 ? rc : 0;
}
static int a_split(int64_t v, int *must, struct pd_tensor **out)
{
    struct pd_tensor *o[2] = {0};
    int64_t sizes[2] = {v, (int64_t)(2 - (uint64_t)v)}; /* wraps for INT64_MIN: still invalid */
    *must = !(v >= 0 && v <= 2);
    *out = NULL;
    int rc = pd_split(x234(), sizes, 2, 0, o);
    return rc < 0 ? rc : 0;
}
static int a_tile(int64_t v, int *must, struct pd_tensor **out)
{
    int64_t r[3] = {v, v, v};
    *must = v < 0 || (double)v * v * v * 24 > 0x1p46;
    return RES(pd_tile(x234(), r, 3));
}
static int a_repeat_interleave(int64_t v, int *must, struct pd_tensor **out)
{
    *must = v < 0 || (double)v * 24 > 0x1p46;
    return RES(pd_repeat_interleave(x234(), v, 0));
}
static int a_randint(int64_t v, int *must, struct pd_tensor **out)
{
    int64_t s[1] = {4};
    *must = v == INT64_MAX; /* [v, min(v + 10, INT64_MAX)) is empty only there */
    return RES(pd_randint(s, 1, v, v > INT64_MAX - 10 ? INT64_MAX : v + 10, PD_I64, NULL));
}
static int a_kv_cache(int64_t v, int *must, struct pd_tensor **out)
{
    struct pd_llama_config cfg;
    pd_llama_config_default(&cfg);
    int n = fits_int(v) ? (int)v : -1;
    *must = n <= 0;
    *out = NULL;
    struct pd_kv_cache *c = pd_kv_cache_create(&cfg, 1, n);
    if (n > 1 << 20) *must = 0; /* may run out of memory or succeed */
    pd_kv_cache_destroy(c);
    return c ? 0 : -1;
}

/* Wrappers that resolve values themselves before the op sees them. */
static struct pd_tensor *ids_of(int64_t v)
{
    int64_t s[1] = {3};
    struct pd_tensor *t = pd_zeros(s, 1, PD_I64);
    if (t) ((int64_t *)pd_tensor_data(t))[1] = v;
    return t;
}
static int a_one_hot_infer(int64_t v, int *must, struct pd_tensor **out)
{
    *must = v < 0 || (double)v * 3 >= 0x1p46; /* num_classes -1: max id + 1 columns */
    return RES(pd_one_hot(ids_of(v), -1));
}
static int a_one_hot(int64_t v, int *must, struct pd_tensor **out)
{
    *must = v < -1 || v == 0 || (double)v * 3 > 0x1p46;
    return RES(pd_one_hot(ids_of(0), v));
}
static int a_embedding(int64_t v, int *must, struct pd_tensor **out)
{
    int64_t s[2] = {4, 2};
    *must = v != 0 && v != 1 && v != 2 && v != 3;
    return RES(pd_embedding(ids_of(v), pd_ones(s, 2, PD_F32)));
}
static int a_conv2d(int64_t v, int *must, struct pd_tensor **out)
{
    int64_t xs[4] = {1, 1, 4, 4}, ws[4] = {1, 1, 2, 2};
    int a = fits_int(v) ? (int)v : INT_MIN, one[2] = {1, 1}, zero[2] = {0, 0}, st[2] = {a, 1}, pd[2] = {a, 0};
    *must = a < 0;
    struct pd_tensor *x = pd_ones(xs, 4, PD_F32), *w = pd_ones(ws, 4, PD_F32);
    struct pd_tensor *r = pd_conv2d(x, w, NULL, a > 0 ? st : one, a <= 0 ? pd : zero, a > 0 ? st : one, 1);
    if (a <= 0) *must = a < 0;
    else *must = 0;
    return RES(r);
}
static int a_pool(int64_t v, int *must, struct pd_tensor **out)
{
    int64_t xs[4] = {1, 1, 4, 4};
    int a = fits_int(v) ? (int)v : INT_MIN, k[2] = {a, 2};
    *must = a < 1 || a > 4 + 2 * 0;
    return RES(pd_max_pool2d(pd_ones(xs, 4, PD_F32), k, NULL, NULL));
}
static int a_topk(int64_t v, int *must, struct pd_tensor **out)
{
    *must = v < 0 || v > 2;
    return RES(pd_topk(x234(), v, 0, 1, NULL));
}
static int a_linspace(int64_t v, int *must, struct pd_tensor **out)
{
    *must = v < 0 || (double)v > 0x1p46;
    return RES(pd_linspace(0, 1, v, PD_F32));
}
static int a_eye(int64_t v, int *must, struct pd_tensor **out)
{
    *must = v >= 0 && (double)v * (double)v > 0x1p46; /* pd_eye(2, m < 0) is pd_eye(2, 2) */
    return RES(pd_eye(v < 0 ? 2 : v, v < 0 ? v : v, PD_F32));
}
static int a_pad(int64_t v, int *must, struct pd_tensor **out)
{
    int64_t p[2] = {v, 0};
    *must = (double)v * 4 * 6 > 0x1p46 || v < -4;
    return RES(pd_pad(x234(), p, 2, PD_PAD_CONSTANT, 0));
}

/* Entry points over models and data sets (tiny ones). */
static void tiny_config(struct pd_llama_config *cfg)
{
    pd_llama_config_default(cfg);
    cfg->vocab_size = 16;
    cfg->dim = 8;
    cfg->n_layers = 1;
    cfg->n_heads = 2;
    cfg->n_kv_heads = 1;
    cfg->hidden_dim = 16;
    cfg->max_seq_len = 8;
}
static int a_llama_forward(int64_t v, int *must, struct pd_tensor **out)
{
    struct pd_llama_config cfg;
    tiny_config(&cfg);
    int t = fits_int(v) && v >= 0 && v <= 64 ? (int)v : 64;
    *must = t > cfg.max_seq_len || t == 0;
    if (t == 0) *must = 0; /* an empty sequence may give an empty result */
    *out = NULL;
    struct pd_llama *m = pd_llama_create(&cfg, 1);
    if (!m) return -1;
    int64_t s[2] = {1, t};
    struct pd_tensor *r = pd_llama_forward(m, pd_zeros(s, 2, PD_I64), NULL, NULL);
    int rc = r ? 0 : -1;
    pd_llama_destroy(m);
    return rc;
}
static int a_llama_ids(int64_t v, int *must, struct pd_tensor **out)
{
    struct pd_llama_config cfg;
    tiny_config(&cfg);
    *must = v < 0 || v >= cfg.vocab_size;
    *out = NULL;
    struct pd_llama *m = pd_llama_create(&cfg, 1);
    if (!m) return -1;
    struct pd_tensor *r = pd_llama_forward(m, pd_reshape(ids_of(v), (const int64_t[]){1, 3}, 2), NULL, NULL);
    int rc = r ? 0 : -1;
    pd_llama_destroy(m);
    return rc;
}
static int a_dataset_batch(int64_t v, int *must, struct pd_tensor **out)
{
    static const char text[] = "the quick brown fox jumps over the lazy dog, again and again and again.";
    int t = fits_int(v) ? (int)v : INT_MAX;
    *must = t < 1 || (int64_t)t + 1 > (int64_t)sizeof text - 1;
    *out = NULL;
    struct pd_text_dataset *ds = pd_text_dataset_from_memory(text, sizeof text - 1, NULL, 0.0);
    if (!ds) return -1;
    struct pd_tensor *ids = NULL, *tg = NULL;
    int rc = pd_dataset_batch(ds, PD_SPLIT_TRAIN, 2, t, NULL, &ids, &tg);
    pd_text_dataset_destroy(ds);
    return rc < 0 ? rc : 0;
}

static const struct {
    const char *name;
    api_fn fn;
} api[] = {
    {"pd_llama_forward(T = v)", a_llama_forward}, {"pd_llama_forward(id v)", a_llama_ids},
    {"pd_dataset_batch(seq_len v)", a_dataset_batch},
    {"pd_one_hot(ids with v, -1)", a_one_hot_infer}, {"pd_one_hot(ids, v)", a_one_hot},
    {"pd_embedding(ids with v, [4, 2])", a_embedding}, {"pd_conv2d(stride/padding v)", a_conv2d},
    {"pd_max_pool2d(kernel v)", a_pool}, {"pd_topk(x, v)", a_topk}, {"pd_linspace(0, 1, v)", a_linspace},
    {"pd_eye(v, v)", a_eye}, {"pd_pad(x, {v, 0})", a_pad},
    {"pd_reshape(x, [v, -1])", a_reshape}, {"pd_reshape(x, s, ndim v)", a_reshape_ndim},
    {"pd_flatten(x, v, -1)", a_flatten}, {"pd_flatten(0-d, v, v)", a_flatten0d}, {"pd_squeeze(x, v)", a_squeeze},
    {"pd_unsqueeze(x, v)", a_unsqueeze}, {"pd_transpose(x, v, 0)", a_transpose},
    {"pd_sum_to_shape(x, s, ndim v)", a_sum_to_shape}, {"pd_sum(x, {v, 0})", a_sum_axes},
    {"pd_sum(x, axes, n v)", a_sum_n}, {"pd_from_buffer(ndim v)", a_from_buffer},
    {"pd_from_buffer(dtype v)", a_from_buffer_dt}, {"pd_from_buffer(NULL, [v])", a_from_buffer_null},
    {"pd_to_buffer(dtype v)", a_to_buffer}, {"pd_to_buffer(NULL)", a_to_buffer_null},
    {"pd_slice(x, 0, 0, v, 1)", a_slice_stop}, {"pd_slice(x, 0, 0, 2, v)", a_slice_step},
    {"pd_chunk(x, v, 0)", a_chunk}, {"pd_split(x, {v, 2 - v})", a_split}, {"pd_tile(x, {v, v, v})", a_tile},
    {"pd_repeat_interleave(x, v, 0)", a_repeat_interleave}, {"pd_randint(v, v + 10)", a_randint},
    {"pd_kv_cache_create(max_len v)", a_kv_cache},
};
#define N_API ((int)(sizeof api / sizeof api[0]))

int sw_api_count(void) { return sw_opts.only_op ? 0 : N_API * NV + sw_wrap_count(); }

void sw_run_api_case(int k)
{
    int must = 0;
    struct pd_tensor *out = NULL;
    if (k >= N_API * NV) {
        sw_run_wrap_case(k - N_API * NV, sw_shm->n_op_cases + k);
        return;
    }
    pd_clear_error();
    int rc = api[k / NV].fn(vals[k % NV], &must, &out);
    sw_judge(sw_shm->n_op_cases + k, rc, must, 0, &out, out ? 1 : 0);
}

void sw_describe_api(int k, char *buf, size_t n)
{
    if (k >= N_API * NV) {
        sw_describe_wrap(k - N_API * NV, buf, n);
        return;
    }
    snprintf(buf, n, "%s with v = %lld", api[k / NV].name, (long long)vals[k % NV]);
}
