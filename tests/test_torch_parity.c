/* paddle.c — parity with PyTorch on fixed random cases.
 *
 * Every file tests/fixtures/ops/<case>.fixture (written by
 * tools/ref/op_fixtures.py with PyTorch in float64; format documented there
 * and in docs/testing.md) holds an op name, its attributes, the inputs, the
 * forward output, a cotangent w and the gradients of sum(out * w) w.r.t.
 * every float input. This program calls the same op through the public API
 * in f64, takes the gradients with pd_grad, and requires every element of
 * the output and of each gradient to agree:
 *
 *     |got - want| <= 1e-8 * (|want| + 1e-3 * max|want over the tensor|)
 *
 * (relative, with a floor at a thousandth of the tensor's scale so an element
 * that is a near-cancellation of large terms is not held to an impossible
 * bound). NaN must meet NaN, inf the same inf. A case whose op is unknown
 * here, fails in paddle.c, or disagrees is a failure that names the case.
 *
 * Each case runs four times: on the default dispatch (CPU kernels where
 * registered) and with the reference kernels forced (pdi_force_backend, the
 * only internal call here), each with contiguous inputs and with every input
 * seen through a non-contiguous view of the same values (see layout()).
 * One line per case, then "N passed, M failed".
 *
 * Usage: test_torch_parity [--dir DIR] [--verbose] [SUBSTRING...]
 * The fixture directory defaults to fixtures/ops next to this source file
 * (found from __FILE__, so the test runs from any working directory); the
 * substrings, if any, select the cases whose names contain one of them.
 *
 * Ownership: one scope per run of a case; the fixture buffers are malloc'd
 * by the reader and freed by fx_free.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h" /* pdi_force_backend only: the op calls use the public API */
#include "pd/pd.h"

#define RTOL 1e-8
#define FLOOR 1e-3
#define FX_MAX_T 24
#define FX_MAX_A 16
#define FX_MAX_V 16

struct fx_tensor {
    char role[8];  /* in, out, cot, grad */
    char name[32];
    enum pd_dtype dt;
    int ndim;
    int64_t shape[PD_MAX_DIMS];
    int64_t numel;
    void *data;
};

struct fx_attr {
    char key[32];
    int is_float, n;
    int64_t i[FX_MAX_V];
    double f[FX_MAX_V];
};

struct fixture {
    char name[128], op[48];
    struct fx_attr a[FX_MAX_A];
    int na;
    struct fx_tensor t[FX_MAX_T];
    int nt;
    char missing[64]; /* first attribute an op binding asked for and did not find */
};

static void fx_free(struct fixture *f)
{
    for (int k = 0; k < f->nt; k++) free(f->t[k].data);
    f->nt = 0;
}

static int parse_dtype(const char *s, enum pd_dtype *dt)
{
    if (!strcmp(s, "f64")) *dt = PD_F64;
    else if (!strcmp(s, "i64")) *dt = PD_I64;
    else if (!strcmp(s, "bool")) *dt = PD_BOOL;
    else return -1;
    return 0;
}

/* Reads one fixture; on failure writes the reason to err and returns -1. */
static int fx_read(const char *path, struct fixture *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return snprintf(err, errlen, "cannot open the file"), -1;
    char line[1024];
    int ok = 0;
    if (!fgets(line, sizeof line, fp) || strcmp(line, "PDFIX 1\n")) {
        snprintf(err, errlen, "not a version-1 fixture (no \"PDFIX 1\" line)");
        goto out;
    }
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = 0;
        char *save = NULL, *kw = strtok_r(line, " ", &save);
        if (!kw || kw[0] == '#') continue;
        if (!strcmp(kw, "data")) { ok = 1; break; }
        if (!strcmp(kw, "case") || !strcmp(kw, "op")) {
            char *v = strtok_r(NULL, " ", &save);
            if (!v) break;
            snprintf(!strcmp(kw, "case") ? f->name : f->op, !strcmp(kw, "case") ? sizeof f->name : sizeof f->op,
                     "%s", v);
        } else if (!strcmp(kw, "attr")) {
            if (f->na == FX_MAX_A) break;
            struct fx_attr *a = &f->a[f->na++];
            char *k = strtok_r(NULL, " ", &save), *ty = strtok_r(NULL, " ", &save), *v;
            if (!k || !ty) break;
            snprintf(a->key, sizeof a->key, "%s", k);
            a->is_float = ty[0] == 'f';
            while ((v = strtok_r(NULL, " ", &save)) && a->n < FX_MAX_V) {
                if (a->is_float) a->f[a->n++] = strtod(v, NULL);
                else a->i[a->n++] = strtoll(v, NULL, 10);
            }
        } else if (!strcmp(kw, "tensor")) {
            if (f->nt == FX_MAX_T) break;
            struct fx_tensor *t = &f->t[f->nt++];
            char *role = strtok_r(NULL, " ", &save), *name = strtok_r(NULL, " ", &save);
            char *dt = strtok_r(NULL, " ", &save), *nd = strtok_r(NULL, " ", &save);
            if (!role || !name || !dt || !nd || parse_dtype(dt, &t->dt)) break;
            snprintf(t->role, sizeof t->role, "%s", role);
            snprintf(t->name, sizeof t->name, "%s", name);
            t->ndim = atoi(nd);
            if (t->ndim < 0 || t->ndim > PD_MAX_DIMS) break;
            t->numel = 1;
            int d = 0;
            for (char *v; d < t->ndim && (v = strtok_r(NULL, " ", &save)); d++) {
                t->shape[d] = strtoll(v, NULL, 10);
                if (t->shape[d] < 0 || t->shape[d] > (1 << 24)) break;
                t->numel *= t->shape[d];
            }
            if (d != t->ndim || t->numel > (1 << 24)) break;
        } else {
            break;
        }
    }
    if (!ok || !f->name[0] || !f->op[0]) {
        snprintf(err, errlen, "malformed header near \"%.200s\"", line);
        goto out;
    }
    for (int k = 0; k < f->nt; k++) {
        struct fx_tensor *t = &f->t[k];
        size_t bytes = (size_t)t->numel * pd_dtype_size(t->dt);
        t->data = malloc(bytes ? bytes : 1);
        if (!t->data || fread(t->data, 1, bytes, fp) != bytes) {
            snprintf(err, errlen, "data of tensor %s %s is truncated", t->role, t->name);
            ok = 0;
            goto out;
        }
    }
    if (fgetc(fp) != EOF) {
        snprintf(err, errlen, "trailing bytes after the data");
        ok = 0;
    }
out:
    fclose(fp);
    if (!ok) fx_free(f);
    return ok ? 0 : -1;
}

/* ---- attributes and inputs, as the op bindings ask for them ------------ */
static const struct fx_attr *attr(struct fixture *f, const char *key)
{
    for (int k = 0; k < f->na; k++)
        if (!strcmp(f->a[k].key, key)) return &f->a[k];
    if (!f->missing[0]) snprintf(f->missing, sizeof f->missing, "%s", key);
    return NULL;
}

static int64_t ai(struct fixture *f, const char *key)
{
    const struct fx_attr *a = attr(f, key);
    return a && a->n ? (a->is_float ? (int64_t)a->f[0] : a->i[0]) : 0;
}

static double af(struct fixture *f, const char *key)
{
    const struct fx_attr *a = attr(f, key);
    return a && a->n ? (a->is_float ? a->f[0] : (double)a->i[0]) : 0;
}

/* Integer list attribute into int (ints) or int64_t (i64s); returns the count. */
static int ints(struct fixture *f, const char *key, int *out)
{
    const struct fx_attr *a = attr(f, key);
    if (!a) return 0;
    for (int k = 0; k < a->n; k++) out[k] = (int)a->i[k];
    return a->n;
}

static int i64s(struct fixture *f, const char *key, int64_t *out)
{
    const struct fx_attr *a = attr(f, key);
    if (!a) return 0;
    for (int k = 0; k < a->n; k++) out[k] = a->i[k];
    return a->n;
}

struct call {
    struct fixture *f;
    struct pd_tensor *in[FX_MAX_T];
    const char *names[FX_MAX_T];
    int n;
};

/* The input of that name, or NULL (optional inputs: bias, weight). */
static struct pd_tensor *arg(const struct call *c, const char *name)
{
    for (int k = 0; k < c->n; k++)
        if (!strcmp(c->names[k], name)) return c->in[k];
    return NULL;
}

/* ---- op bindings: fixture op name -> public API call -------------------- */
typedef struct pd_tensor *(*un_fn)(struct pd_tensor *);
typedef struct pd_tensor *(*bin_fn)(struct pd_tensor *, struct pd_tensor *);
typedef struct pd_tensor *(*red_fn)(struct pd_tensor *, const int *, int, int);

static const struct { const char *name; un_fn fn; } UNARY[] = {
    {"exp", pd_exp}, {"expm1", pd_expm1}, {"log", pd_log}, {"log1p", pd_log1p}, {"log2", pd_log2},
    {"sqrt", pd_sqrt}, {"rsqrt", pd_rsqrt}, {"reciprocal", pd_reciprocal}, {"square", pd_square},
    {"abs", pd_abs}, {"neg", pd_neg}, {"sin", pd_sin}, {"cos", pd_cos}, {"tan", pd_tan}, {"tanh", pd_tanh},
    {"sigmoid", pd_sigmoid}, {"relu", pd_relu}, {"silu", pd_silu}, {"mish", pd_mish}, {"erf", pd_erf},
};
static const struct { const char *name; bin_fn fn; } BINARY[] = {
    {"add", pd_add}, {"sub", pd_sub}, {"mul", pd_mul}, {"div", pd_div}, {"pow", pd_pow},
    {"maximum", pd_maximum}, {"minimum", pd_minimum}, {"atan2", pd_atan2}, {"remainder", pd_remainder},
    {"bmm", pd_bmm}, {"outer", pd_outer}, {"dot", pd_dot}, {"masked_select", pd_masked_select},
};
static const struct { const char *name; red_fn fn; } REDUCE[] = {
    {"sum", pd_sum}, {"mean", pd_mean}, {"prod", pd_prod}, {"amax", pd_amax}, {"amin", pd_amin},
    {"logsumexp", pd_logsumexp},
};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define IS(s) (!strcmp(op, s))

/* "<op>_grad" fixtures: the order-th recorded gradient of the op's output
 * summed (g_0 = y, g_{j+1} = d sum(g_j) / dx with create_graph), so that
 * the fixture's gradient is the derivative of order + 1. */
static struct pd_tensor *grad_of(struct pd_tensor *x, struct pd_tensor *y, int64_t order)
{
    for (int64_t k = 0; k < order && y; k++) {
        struct pd_tensor *s = pd_sum(y, NULL, 0, 0), *gx = NULL;
        if (!s || pd_grad(&s, 1, &x, 1, &gx, &(struct pd_grad_options){.retain_graph = 1, .create_graph = 1})) return NULL;
        y = gx;
    }
    return y;
}

/* Runs the fixture's op; NULL with pd_last_error() set on failure, and NULL
 * with *unknown = 1 when this file has no binding for the op name. */
static struct pd_tensor *run_op(struct call *c, int *unknown)
{
    struct fixture *f = c->f;
    const char *op = f->op;
    struct pd_tensor *x = c->n > 0 ? c->in[0] : NULL, *y = c->n > 1 ? c->in[1] : NULL;
    int iv[FX_MAX_V] = {0}, iv2[FX_MAX_V] = {0}, iv3[FX_MAX_V] = {0}, n;
    int64_t lv[FX_MAX_V] = {0};
    *unknown = 0;
    for (int k = 0; k < N_OF(UNARY); k++)
        if (IS(UNARY[k].name)) return UNARY[k].fn(x);
    for (int k = 0; k < N_OF(BINARY); k++)
        if (IS(BINARY[k].name)) return BINARY[k].fn(x, y);
    for (int k = 0; k < N_OF(REDUCE); k++)
        if (IS(REDUCE[k].name)) {
            n = ints(f, "axes", iv);
            return REDUCE[k].fn(x, iv, n, (int)ai(f, "keepdim"));
        }
    /* unary with attributes */
    if (IS("gelu")) return pd_gelu(x, (int)ai(f, "approximate"));
    if (IS("softplus")) return pd_softplus(x, af(f, "beta"), af(f, "threshold"));
    if (IS("elu")) return pd_elu(x, af(f, "alpha"));
    if (IS("leaky_relu")) return pd_leaky_relu(x, af(f, "negative_slope"));
    if (IS("pow_scalar")) return pd_pow_scalar(x, af(f, "exponent"));
    if (IS("clip")) return pd_clip(x, af(f, "lo"), af(f, "hi"));
    if (IS("scale")) return pd_scale(x, af(f, "s"));
    if (IS("add_scalar")) return pd_add_scalar(x, af(f, "s"));
    if (IS("where")) return pd_where(arg(c, "cond"), arg(c, "a"), arg(c, "b"));
    /* reductions with extra attributes */
    if (IS("var") || IS("std")) {
        n = ints(f, "axes", iv);
        return (IS("var") ? pd_var : pd_std)(x, iv, n, (int)ai(f, "correction"), (int)ai(f, "keepdim"));
    }
    if (IS("norm")) {
        n = ints(f, "axes", iv);
        return pd_norm(x, af(f, "p"), iv, n, (int)ai(f, "keepdim"));
    }
    if (IS("prod_grad")) {
        n = ints(f, "axes", iv);
        return grad_of(x, pd_prod(x, iv, n, (int)ai(f, "keepdim")), ai(f, "order"));
    }
    if (IS("cumprod_grad")) return grad_of(x, pd_cumprod(x, (int)ai(f, "axis")), ai(f, "order"));
    if (IS("cumsum")) return pd_cumsum(x, (int)ai(f, "axis"));
    if (IS("cumprod")) return pd_cumprod(x, (int)ai(f, "axis"));
    if (IS("max")) return pd_max(x, (int)ai(f, "axis"), (int)ai(f, "keepdim"), NULL);
    if (IS("min")) return pd_min(x, (int)ai(f, "axis"), (int)ai(f, "keepdim"), NULL);
    /* linalg */
    if (IS("matmul")) return pd_matmul(x, y, (int)ai(f, "trans_a"), (int)ai(f, "trans_b"));
    if (IS("linear")) return pd_linear(arg(c, "x"), arg(c, "w"), arg(c, "bias"));
    if (IS("conv2d")) {
        ints(f, "stride", iv);
        ints(f, "padding", iv2);
        ints(f, "dilation", iv3);
        return pd_conv2d(arg(c, "x"), arg(c, "w"), arg(c, "bias"), iv, iv2, iv3, (int)ai(f, "groups"));
    }
    if (IS("conv1d"))
        return pd_conv1d(arg(c, "x"), arg(c, "w"), arg(c, "bias"), (int)ai(f, "stride"), (int)ai(f, "padding"),
                         (int)ai(f, "dilation"), (int)ai(f, "groups"));
    if (IS("max_pool2d") || IS("avg_pool2d")) {
        ints(f, "kernel", iv);
        ints(f, "stride", iv2);
        ints(f, "padding", iv3);
        return (IS("max_pool2d") ? pd_max_pool2d : pd_avg_pool2d)(x, iv, iv2, iv3);
    }
    if (IS("max_pool2d_ex") || IS("avg_pool2d_ex")) {
        ints(f, "kernel", iv);
        ints(f, "stride", iv2);
        ints(f, "padding", iv3);
        if (IS("max_pool2d_ex")) return pd_max_pool2d_ex(x, iv, iv2, iv3, (int)ai(f, "ceil_mode"));
        return pd_avg_pool2d_ex(x, iv, iv2, iv3, (int)ai(f, "ceil_mode"), (int)ai(f, "exclusive"));
    }
    /* nn */
    if (IS("softmax")) return pd_softmax(x, (int)ai(f, "axis"));
    if (IS("log_softmax")) return pd_log_softmax(x, (int)ai(f, "axis"));
    if (IS("cross_entropy")) /* class weights when the case has an input "weight" (a constant: no grad line) */
        return pd_cross_entropy_weighted(arg(c, "logits"), arg(c, "target"), arg(c, "weight"), ai(f, "ignore_index"),
                                         af(f, "label_smoothing"), (enum pd_reduction)ai(f, "reduction"));
    if (IS("nll_loss"))
        return pd_nll_loss_weighted(arg(c, "logp"), arg(c, "target"), arg(c, "weight"), ai(f, "ignore_index"),
                                    (enum pd_reduction)ai(f, "reduction"));
    if (IS("mse_loss")) return pd_mse_loss(x, y, (enum pd_reduction)ai(f, "reduction"));
    if (IS("layer_norm"))
        return pd_layer_norm(arg(c, "x"), (int)ai(f, "n_norm_axes"), arg(c, "weight"), arg(c, "bias"), af(f, "eps"));
    if (IS("interpolate")) {
        int64_t sz[2];
        double sc[2];
        /* both attributes are always there; the unused one is zeros */
        const struct fx_attr *s = attr(f, "size"), *k = attr(f, "scale");
        for (int i = 0; i < 2; i++) {
            sz[i] = s && s->n == 2 && !s->is_float ? s->i[i] : 0;
            sc[i] = k && k->n == 2 && k->is_float ? k->f[i] : 0;
        }
        return pd_interpolate(x, sz[0] ? sz : NULL, sz[0] ? NULL : sc, (enum pd_interp_mode)ai(f, "mode"),
                              (int)ai(f, "align_corners"));
    }
    if (IS("group_norm"))
        return pd_group_norm(arg(c, "x"), ai(f, "num_groups"), arg(c, "weight"), arg(c, "bias"), af(f, "eps"));
    if (IS("rms_norm")) return pd_rms_norm(arg(c, "x"), (int)ai(f, "n_norm_axes"), arg(c, "weight"), af(f, "eps"));
    if (IS("embedding")) return pd_embedding(arg(c, "ids"), arg(c, "weight"));
    /* index and shape */
    if (IS("gather")) return pd_gather(arg(c, "x"), (int)ai(f, "axis"), arg(c, "index"));
    if (IS("index_select")) return pd_index_select(arg(c, "x"), (int)ai(f, "axis"), arg(c, "index"));
    if (IS("scatter")) return pd_scatter(arg(c, "x"), (int)ai(f, "axis"), arg(c, "index"), arg(c, "src"));
    if (IS("scatter_add")) return pd_scatter_add(arg(c, "x"), (int)ai(f, "axis"), arg(c, "index"), arg(c, "src"));
    if (IS("index_add")) return pd_index_add(arg(c, "x"), (int)ai(f, "axis"), arg(c, "index"), arg(c, "src"));
    if (IS("masked_fill")) return pd_masked_fill(arg(c, "x"), arg(c, "mask"), af(f, "value"));
    if (IS("take_along_axis")) return pd_take_along_axis(arg(c, "x"), (int)ai(f, "axis"), arg(c, "index"));
    if (IS("concat")) return pd_concat(c->in, c->n, (int)ai(f, "axis"));
    if (IS("stack")) return pd_stack(c->in, c->n, (int)ai(f, "axis"));
    if (IS("flip")) {
        n = ints(f, "axes", iv);
        return pd_flip(x, iv, n);
    }
    if (IS("roll")) return pd_roll(x, ai(f, "shift"), (int)ai(f, "axis"));
    if (IS("pad")) {
        n = i64s(f, "pads", lv);
        return pd_pad(x, lv, n, (enum pd_pad_mode)ai(f, "mode"), af(f, "value"));
    }
    if (IS("tril")) return pd_tril(x, ai(f, "diagonal"));
    if (IS("triu")) return pd_triu(x, ai(f, "diagonal"));
    if (IS("topk")) return pd_topk(x, ai(f, "k"), (int)ai(f, "axis"), (int)ai(f, "largest"), NULL);
    if (IS("sort")) return pd_sort(x, (int)ai(f, "axis"), (int)ai(f, "descending"), NULL);
    if (IS("repeat_interleave")) return pd_repeat_interleave(x, ai(f, "repeats"), (int)ai(f, "axis"));
    if (IS("tile")) {
        n = i64s(f, "reps", lv);
        return pd_tile(x, lv, n);
    }
    /* views */
    if (IS("permute")) {
        n = ints(f, "perm", iv);
        return pd_permute(x, iv, n);
    }
    if (IS("slice")) return pd_slice(x, (int)ai(f, "axis"), ai(f, "start"), ai(f, "stop"), ai(f, "step"));
    if (IS("diagonal")) return pd_diagonal(x, ai(f, "offset"), (int)ai(f, "axis1"), (int)ai(f, "axis2"));
    if (IS("expand")) {
        n = i64s(f, "shape", lv);
        return pd_expand(x, lv, n);
    }
    if (IS("reshape_t")) { /* reshape of a transposed (non-contiguous) x */
        n = i64s(f, "shape", lv);
        return pd_reshape(pd_transpose(x, 0, 1), lv, n);
    }
    *unknown = 1;
    return NULL;
}

/* ---- comparison ---------------------------------------------------------- */
/* Compares t against the fixture tensor w; returns 0 if within tolerance,
 * else describes the worst element in msg. *worst gets the largest
 * |got - want| / (|want| + floor) seen (0 when exact). */
static int compare(const char *what, struct pd_tensor *t, const struct fx_tensor *w, double *worst, char *msg,
                   size_t len)
{
    if (pd_tensor_ndim(t) != w->ndim || memcmp(pd_tensor_shape(t), w->shape, sizeof(int64_t) * (size_t)w->ndim)) {
        char got[128] = "", want[128] = "";
        for (int d = 0; d < pd_tensor_ndim(t); d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "",
                     (long long)pd_tensor_shape(t)[d]);
        for (int d = 0; d < w->ndim; d++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? ", " : "", (long long)w->shape[d]);
        snprintf(msg, len, "%s: shape [%s], expected [%s]", what, got, want);
        return -1;
    }
    if (pd_tensor_dtype(t) != PD_F64) {
        snprintf(msg, len, "%s: dtype %s, expected f64", what, pd_dtype_name(pd_tensor_dtype(t)));
        return -1;
    }
    double *got = malloc(sizeof(double) * (size_t)(w->numel ? w->numel : 1));
    if (!got) return snprintf(msg, len, "%s: out of memory", what), -1;
    if (pd_to_buffer(t, got, PD_F64)) {
        snprintf(msg, len, "%s: pd_to_buffer failed: %s", what, pd_last_error());
        free(got);
        return -1;
    }
    const double *want = w->data;
    double scale = 0;
    for (int64_t i = 0; i < w->numel; i++)
        if (isfinite(want[i]) && fabs(want[i]) > scale) scale = fabs(want[i]);
    int64_t bad = -1;
    double bad_r = 0;
    for (int64_t i = 0; i < w->numel; i++) {
        double g = got[i], e = want[i], r;
        if (isnan(e) || isinf(e)) r = (isnan(e) ? isnan(g) : g == e) ? 0 : INFINITY;
        else if (isnan(g)) r = INFINITY;
        else r = fabs(g - e) / (fabs(e) + FLOOR * scale + 1e-300);
        if (r > *worst) *worst = r;
        if (r > RTOL && (bad < 0 || r > bad_r)) { bad = i; bad_r = r; }
    }
    int rc = 0;
    if (bad >= 0) {
        int64_t nbad = 0;
        for (int64_t i = 0; i < w->numel; i++) {
            double e = want[i], g = got[i];
            if (!(fabs(g - e) <= RTOL * (fabs(e) + FLOOR * scale + 1e-300)) && !(isnan(e) && isnan(g)) &&
                !(isinf(e) && g == e))
                nbad++;
        }
        snprintf(msg, len, "%s: %lld of %lld elements differ; worst at flat index %lld: got %.17g, expected %.17g",
                 what, (long long)nbad, (long long)w->numel, (long long)bad, got[bad], want[bad]);
        rc = -1;
    }
    free(got);
    return rc;
}

static const struct fx_tensor *find(const struct fixture *f, const char *role, const char *name)
{
    for (int k = 0; k < f->nt; k++)
        if (!strcmp(f->t[k].role, role) && (!name || !strcmp(f->t[k].name, name))) return &f->t[k];
    return NULL;
}

/* The input as the op sees it. Layout 0: the leaf itself (contiguous).
 * Layout 1: the same values through a non-contiguous view, still
 * differentiable w.r.t. the leaf: for ndim >= 2 the transpose of a contiguous
 * transposed copy (swapped strides), for 1-d every other element of a
 * doubled copy (stride 2). 0-d and empty tensors are left as they are. */
static struct pd_tensor *layout(struct pd_tensor *leaf, int lay)
{
    int nd = pd_tensor_ndim(leaf);
    if (!lay || nd == 0 || pd_tensor_numel(leaf) == 0) return leaf;
    if (nd == 1) {
        int64_t n = pd_tensor_dim(leaf, 0);
        return pd_slice(pd_repeat_interleave(leaf, 2, 0), 0, 0, 2 * n, 2);
    }
    return pd_transpose(pd_contiguous(pd_transpose(leaf, 0, nd - 1)), 0, nd - 1);
}

/* Runs one case in one layout; returns 0 on pass, else the reason in msg.
 * *worst gets the largest relative deviation seen. */
static int run_layout(struct fixture *f, int lay, int *n_grads, double *worst, char *msg, size_t len)
{
    int rc = -1;
    int scope_tok = pd_scope_begin();
    pd_clear_error();
    f->missing[0] = 0;
    struct call c = {.f = f};
    struct pd_tensor *leaves[FX_MAX_T], *grads[FX_MAX_T];
    const struct fx_tensor *lw[FX_MAX_T];
    int nl = 0;
    for (int k = 0; k < f->nt; k++) {
        const struct fx_tensor *t = &f->t[k];
        if (strcmp(t->role, "in")) continue;
        struct pd_tensor *p = pd_from_buffer(t->data, t->shape, t->ndim, t->dt);
        const struct fx_tensor *g = find(f, "grad", t->name);
        if (p && g) {
            pd_requires_grad_(p, 1);
            leaves[nl] = p;
            lw[nl++] = g;
        }
        struct pd_tensor *v = layout(p, lay);
        if (!v) {
            snprintf(msg, len, "making input %s%s: %s", t->name, lay ? " strided" : "", pd_last_error());
            goto done;
        }
        c.names[c.n] = t->name;
        c.in[c.n++] = v;
    }
    *n_grads = nl;
    const struct fx_tensor *wout = find(f, "out", NULL), *wcot = find(f, "cot", NULL);
    if (!wout || !wcot) {
        snprintf(msg, len, "fixture has no out/cot tensor");
        goto done;
    }
    int unknown = 0;
    struct pd_tensor *out = run_op(&c, &unknown);
    if (unknown) {
        snprintf(msg, len, "no binding for op \"%s\" in test_torch_parity.c", f->op);
        goto done;
    }
    if (f->missing[0]) {
        snprintf(msg, len, "fixture lacks attribute \"%s\" of op %s", f->missing, f->op);
        goto done;
    }
    if (!out) {
        snprintf(msg, len, "forward failed: %s", pd_last_error());
        goto done;
    }
    if (compare("out", out, wout, worst, msg, len)) goto done;
    if (nl) {
        struct pd_tensor *cot = pd_from_buffer(wcot->data, wcot->shape, wcot->ndim, PD_F64);
        if (pd_grad(&out, 1, leaves, nl, grads, &(struct pd_grad_options){.grad_outputs = &cot, .allow_unused = 1})) {
            snprintf(msg, len, "pd_grad failed: %s", pd_last_error());
            goto done;
        }
        for (int k = 0; k < nl; k++) {
            char what[64];
            snprintf(what, sizeof what, "grad %s", lw[k]->name);
            /* an input paddle.c finds unused has a zero gradient */
            struct pd_tensor *g = grads[k] ? grads[k] : pd_zeros(lw[k]->shape, lw[k]->ndim, PD_F64);
            if (compare(what, g, lw[k], worst, msg, len)) goto done;
        }
    }
    rc = 0;
done:
    pd_scope_end(scope_tok);
    return rc;
}

/* Runs one case on each backend (the default dispatch: CPU kernels where
 * registered; then the reference kernels forced) and in both layouts;
 * prints its one line; returns 0 on pass. */
static int run_case(struct fixture *f, int verbose)
{
    static const char *const lay_name[2] = {"contiguous", "strided"};
    static const int backends[2] = {-1, PDI_BACKEND_REF};
    static const char *const be_name[2] = {"default", "ref"};
    char msg[1024] = "";
    double worst = 0;
    int nl = 0, rc = 0;
    for (int b = 0; b < 2 && !rc; b++) {
        pdi_force_backend(backends[b]);
        for (int lay = 0; lay < 2 && !rc; lay++) {
            if (run_layout(f, lay, &nl, &worst, msg, sizeof msg)) {
                printf("FAIL %-32s %-18s [%s, %s] %s\n", f->name, f->op, be_name[b], lay_name[lay], msg);
                rc = -1;
            }
        }
    }
    pdi_force_backend(-1);
    if (rc) return rc;
    if (verbose)
        printf("ok   %-32s %-18s %d grads, worst rel. deviation %.2g\n", f->name, f->op, nl, worst);
    else
        printf("ok   %-32s %-18s %d grads\n", f->name, f->op, nl);
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    char dir[4096];
    const char *src = __FILE__, *slash = strrchr(src, '/');
    snprintf(dir, sizeof dir, "%.*sfixtures/ops", slash ? (int)(slash - src + 1) : 0, src);
    int verbose = 0, nsel = 0;
    const char *sel[64];
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--dir") && k + 1 < argc) snprintf(dir, sizeof dir, "%s", argv[++k]);
        else if (!strcmp(argv[k], "--verbose") || !strcmp(argv[k], "-v")) verbose = 1;
        else if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
            printf("usage: %s [--dir DIR] [--verbose] [SUBSTRING...]\n", argv[0]);
            return 0;
        } else if (nsel < 64) sel[nsel++] = argv[k];
    }
    DIR *d = opendir(dir);
    if (!d) {
        printf("cannot open the fixture directory %s (regenerate with: /usr/bin/python3 tools/ref/op_fixtures.py "
               "tests/fixtures/ops)\n0 passed, 1 failed\n", dir);
        return 1;
    }
    char **names = NULL;
    int nn = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 9 || strcmp(e->d_name + l - 8, ".fixture")) continue;
        if (nn == cap) {
            cap = cap ? 2 * cap : 256;
            char **nb = realloc(names, sizeof *names * (size_t)cap);
            if (!nb) return 1;
            names = nb;
        }
        names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    if (nn) qsort(names, (size_t)nn, sizeof *names, cmp_str);
    int pass = 0, fail = 0;
    static struct fixture f;
    for (int k = 0; k < nn; k++) {
        int take = !nsel;
        for (int s = 0; s < nsel && !take; s++) take = strstr(names[k], sel[s]) != NULL;
        if (take) {
            char path[4400], err[512];
            snprintf(path, sizeof path, "%s/%s", dir, names[k]);
            if (fx_read(path, &f, err, sizeof err)) {
                printf("FAIL %-32s %s\n", names[k], err);
                fail++;
            } else {
                if (run_case(&f, verbose)) fail++;
                else pass++;
                fx_free(&f);
            }
        }
        free(names[k]);
    }
    free(names);
    if (!nsel && nn == 0) {
        printf("no fixtures in %s\n", dir);
        fail++;
    }
    printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}
