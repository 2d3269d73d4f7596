/* paddle.c — parameter initialisation (torch.nn.init semantics).
 *
 * Every function writes its tensor in place with pd_copy_ under no_grad, so
 * it works on leaves that require grad, on strided views and on any float
 * dtype. Temporaries live in a private scope closed before returning: the
 * caller's scope is untouched and nothing leaks outside any scope.
 * Random values come from the given Philox generator (NULL = default), so a
 * seed reproduces an initialisation exactly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_internal.h"
#include "pd/autograd.h"
#include "pd/nn.h"
#include "pd/ops.h"

/* The private scope and no_grad guard of one init call. */
struct init_guard {
    int scope, mode;
};

static void guard_end(struct init_guard g)
{
    pd_grad_mode_end(g.mode);
    pd_scope_end(g.scope);
}

/* Validates t, then opens the private scope and no_grad guard. */
static int begin(struct pd_tensor *t, const char *what, struct init_guard *g)
{
    if (!t) {
        char w[64];
        snprintf(w, sizeof w, "init.%s", what);
        return pdi_null_tensor(w);
    }
    if (!pd_dtype_is_float(t->dtype))
        return pdi_errorf(PD_ERR_INVALID, "init.%s: tensor must be floating point, got %s", what,
                          pd_dtype_name(t->dtype));
    g->scope = pd_scope_begin();
    if (g->scope < 0) return g->scope;
    g->mode = pd_no_grad_begin();
    return PD_OK;
}

/* Copies src (t's shape, any dtype) into t and closes what begin opened. */
static int end(struct pd_tensor *t, struct pd_tensor *src, struct init_guard g)
{
    int st = PD_OK;
    if (!src || !pd_copy_(t, src)) st = pdi_status_of(NULL, "init");
    guard_end(g);
    return st;
}

static enum pd_dtype draw_dtype(const struct pd_tensor *t) { return t->dtype == PD_F64 ? PD_F64 : PD_F32; }

double pd_init_calculate_gain(enum pd_nonlinearity nl, double param)
{
    switch (nl) {
    case PD_NL_LINEAR:
    case PD_NL_CONV:
    case PD_NL_SIGMOID: return 1.0;
    case PD_NL_TANH: return 5.0 / 3.0;
    case PD_NL_RELU: return sqrt(2.0);
    case PD_NL_LEAKY_RELU: {
        double s = param < 0 ? 0.01 : param;
        return sqrt(2.0 / (1.0 + s * s));
    }
    case PD_NL_SELU: return 0.75;
    default: pdi_errorf(PD_ERR_INVALID, "init.calculate_gain: unknown nonlinearity %d", (int)nl); return NAN;
    }
}

int pd_init_fans(const struct pd_tensor *t, int64_t *fan_in, int64_t *fan_out)
{
    if (!t) return pdi_null_tensor("init.fans");
    if (t->ndim < 2)
        return pdi_errorf(PD_ERR_INVALID, "init.fans: need a tensor with at least 2 dims, got %d", t->ndim);
    int64_t rf = 1;
    for (int i = 2; i < t->ndim; i++) rf *= t->shape[i];
    if (fan_in) *fan_in = t->shape[1] * rf;
    if (fan_out) *fan_out = t->shape[0] * rf;
    return PD_OK;
}

int pd_init_normal_(struct pd_tensor *t, double mean, double std, struct pd_generator *g)
{
    struct init_guard gd = {0, 0};
    int st = begin(t, "normal_", &gd);
    if (st) return st;
    if (!(std >= 0) || !isfinite(mean)) {
        guard_end(gd);
        return pdi_errorf(PD_ERR_INVALID, "init.normal_: need std >= 0 and a finite mean, got mean %g std %g", mean,
                          std);
    }
    if (t->ndim && pd_tensor_numel(t) == 0) return end(t, pd_zeros_like(t), gd);
    return end(t, pd_normal(t->shape, t->ndim, mean, std, draw_dtype(t), g), gd);
}

int pd_init_uniform_(struct pd_tensor *t, double lo, double hi, struct pd_generator *g)
{
    struct init_guard gd = {0, 0};
    int st = begin(t, "uniform_", &gd);
    if (st) return st;
    if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi)) {
        guard_end(gd);
        return pdi_errorf(PD_ERR_INVALID, "init.uniform_: need finite lo <= hi, got [%g, %g]", lo, hi);
    }
    if (t->ndim && pd_tensor_numel(t) == 0) return end(t, pd_zeros_like(t), gd);
    return end(t, pd_uniform(t->shape, t->ndim, lo, hi, draw_dtype(t), g), gd);
}

/* Inverse error function: Giles' polynomial start, two Newton steps on erf
 * (libm) for double accuracy. */
static double erfinv(double y)
{
    if (y <= -1) return -INFINITY;
    if (y >= 1) return INFINITY;
    double w = -log((1.0 - y) * (1.0 + y)), x;
    if (w < 5) {
        w -= 2.5;
        x = 2.81022636e-08;
        x = 3.43273939e-07 + x * w;
        x = -3.5233877e-06 + x * w;
        x = -4.39150654e-06 + x * w;
        x = 0.00021858087 + x * w;
        x = -0.00125372503 + x * w;
        x = -0.00417768164 + x * w;
        x = 0.246640727 + x * w;
        x = 1.50140941 + x * w;
    } else {
        w = sqrt(w) - 3;
        x = -0.000200214257;
        x = 0.000100950558 + x * w;
        x = 0.00134934322 + x * w;
        x = -0.00367342844 + x * w;
        x = 0.00573950773 + x * w;
        x = -0.0076224613 + x * w;
        x = 0.00943887047 + x * w;
        x = 1.00167406 + x * w;
        x = 2.83297682 + x * w;
    }
    x *= y;
    for (int it = 0; it < 2; it++) x -= (erf(x) - y) / (1.1283791670955126 * exp(-x * x));
    return x;
}

static double norm_cdf(double x) { return 0.5 * (1.0 + erf(x / sqrt(2.0))); }

int pd_init_trunc_normal_(struct pd_tensor *t, double mean, double std, double a, double b, struct pd_generator *g)
{
    struct init_guard gd = {0, 0};
    int st = begin(t, "trunc_normal_", &gd);
    if (st) return st;
    if (!(std > 0) || !(a < b) || !isfinite(mean)) {
        guard_end(gd);
        return pdi_errorf(PD_ERR_INVALID, "init.trunc_normal_: need std > 0 and a < b, got std %g, [%g, %g]", std, a,
                          b);
    }
    int64_t n = pd_tensor_numel(t);
    if (n == 0) return end(t, pd_zeros_like(t), gd);
    /* u ~ U(2 cdf(a') - 1, 2 cdf(b') - 1), x = mean + std sqrt(2) erfinv(u),
     * as PyTorch; clamped because erfinv rounding can step just outside. */
    double lo = 2 * norm_cdf((a - mean) / std) - 1, hi = 2 * norm_cdf((b - mean) / std) - 1;
    struct pd_tensor *u = pd_contiguous(pd_uniform(t->shape, t->ndim, lo, hi, PD_F64, g));
    if (!u) return end(t, NULL, gd);
    const double *p = pdi_host_read(u, "init.trunc_normal_");
    if (!p) return end(t, NULL, gd); /* meta: no values to transform */
    /* erfinv is a host function: the values come back in as host data */
    double *v = pdi_malloc(sizeof *v * (size_t)n);
    if (!v) {
        pdi_errorf(PD_ERR_NOMEM, "init.trunc_normal_: out of memory for %lld values", (long long)n);
        return end(t, NULL, gd);
    }
    for (int64_t i = 0; i < n; i++) {
        double x = mean + std * sqrt(2.0) * erfinv(p[i]);
        v[i] = x < a ? a : x > b ? b : x;
    }
    struct pd_tensor *r = pd_from_buffer(v, t->shape, t->ndim, PD_F64);
    free(v);
    return end(t, r, gd);
}

int pd_init_xavier_uniform_(struct pd_tensor *t, double gain, struct pd_generator *g)
{
    int64_t fi, fo;
    int st = pd_init_fans(t, &fi, &fo);
    if (st) return st;
    if (fi + fo == 0) return pd_init_zeros_(t);
    double bound = gain * sqrt(6.0 / (double)(fi + fo));
    return pd_init_uniform_(t, -bound, bound, g);
}

int pd_init_xavier_normal_(struct pd_tensor *t, double gain, struct pd_generator *g)
{
    int64_t fi, fo;
    int st = pd_init_fans(t, &fi, &fo);
    if (st) return st;
    if (fi + fo == 0) return pd_init_zeros_(t);
    return pd_init_normal_(t, 0, gain * sqrt(2.0 / (double)(fi + fo)), g);
}

/* std of kaiming init, or NAN with the error set. */
static double kaiming_std(struct pd_tensor *t, double a, enum pd_init_mode mode, enum pd_nonlinearity nl)
{
    int64_t fi, fo;
    if (pd_init_fans(t, &fi, &fo)) return NAN;
    if (mode != PD_INIT_FAN_IN && mode != PD_INIT_FAN_OUT) {
        pdi_errorf(PD_ERR_INVALID, "init.kaiming: mode must be PD_INIT_FAN_IN or PD_INIT_FAN_OUT, got %d", (int)mode);
        return NAN;
    }
    int64_t fan = mode == PD_INIT_FAN_IN ? fi : fo;
    double gain = pd_init_calculate_gain(nl, a);
    if (isnan(gain)) return NAN;
    return fan ? gain / sqrt((double)fan) : 0.0;
}

int pd_init_kaiming_uniform_(struct pd_tensor *t, double a, enum pd_init_mode mode, enum pd_nonlinearity nl,
                             struct pd_generator *g)
{
    double std = kaiming_std(t, a, mode, nl);
    if (isnan(std)) return pdi_status_of(NULL, "init.kaiming");
    return pd_init_uniform_(t, -sqrt(3.0) * std, sqrt(3.0) * std, g);
}

int pd_init_kaiming_normal_(struct pd_tensor *t, double a, enum pd_init_mode mode, enum pd_nonlinearity nl,
                            struct pd_generator *g)
{
    double std = kaiming_std(t, a, mode, nl);
    if (isnan(std)) return pdi_status_of(NULL, "init.kaiming");
    return pd_init_normal_(t, 0, std, g);
}

int pd_init_constant_(struct pd_tensor *t, double value)
{
    struct init_guard gd = {0, 0};
    int st = begin(t, "constant_", &gd);
    if (st) return st;
    return end(t, pd_scalar(value, t->dtype), gd);
}

int pd_init_zeros_(struct pd_tensor *t) { return pd_init_constant_(t, 0.0); }
int pd_init_ones_(struct pd_tensor *t) { return pd_init_constant_(t, 1.0); }

int pd_init_eye_(struct pd_tensor *t)
{
    if (t && t->ndim != 2) return pdi_errorf(PD_ERR_INVALID, "init.eye_: need a 2-d tensor, got %d dims", t->ndim);
    struct init_guard gd = {0, 0};
    int st = begin(t, "eye_", &gd);
    if (st) return st;
    return end(t, pd_eye(t->shape[0], t->shape[1], t->dtype), gd);
}

/* Orthonormalises the n columns of the m x n row-major matrix a (m >= n) in
 * place: modified Gram-Schmidt, each column twice ("twice is enough"), which
 * is the Q of a QR with a positive diagonal of R — PyTorch's sign fix. */
static int orthonormal_columns(double *a, int64_t m, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        for (int pass = 0; pass < 2; pass++)
            for (int64_t k = 0; k < j; k++) {
                double d = 0;
                for (int64_t i = 0; i < m; i++) d += a[i * n + k] * a[i * n + j];
                for (int64_t i = 0; i < m; i++) a[i * n + j] -= d * a[i * n + k];
            }
        double nrm = 0;
        for (int64_t i = 0; i < m; i++) nrm += a[i * n + j] * a[i * n + j];
        nrm = sqrt(nrm);
        if (!(nrm > 1e-300)) return -1;
        for (int64_t i = 0; i < m; i++) a[i * n + j] /= nrm;
    }
    return 0;
}

int pd_init_orthogonal_(struct pd_tensor *t, double gain, struct pd_generator *g)
{
    if (t && t->ndim < 2)
        return pdi_errorf(PD_ERR_INVALID, "init.orthogonal_: need at least 2 dims, got %d", t->ndim);
    if (!isfinite(gain)) return pdi_errorf(PD_ERR_INVALID, "init.orthogonal_: gain must be finite, got %g", gain);
    struct init_guard gd = {0, 0};
    int st = begin(t, "orthogonal_", &gd);
    if (st) return st;
    int64_t rows = t->shape[0], numel = pd_tensor_numel(t);
    if (numel == 0) return end(t, pd_zeros_like(t), gd);
    int64_t cols = numel / rows;
    /* Work on the tall orientation (m >= n), orthonormal columns. */
    int tall = rows >= cols;
    int64_t m = tall ? rows : cols, n = tall ? cols : rows;
    struct pd_tensor *z = pd_contiguous(pd_normal((int64_t[]){rows, cols}, 2, 0, 1, PD_F64, g));
    double *a = pdi_malloc((size_t)(m * n) * sizeof *a);
    if (!z || !a) {
        free(a);
        if (z) pdi_errorf(PD_ERR_NOMEM, "init.orthogonal_: out of memory for a %lld x %lld matrix", (long long)m,
                          (long long)n);
        return end(t, NULL, gd);
    }
    const double *zp = pdi_host_read(z, "init.orthogonal_");
    if (!zp) {
        free(a);
        return end(t, NULL, gd); /* meta: no values to orthonormalise */
    }
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) a[tall ? i * n + j : j * n + i] = zp[i * cols + j];
    if (orthonormal_columns(a, m, n)) {
        free(a);
        pdi_errorf(PD_ERR_INVALID, "init.orthogonal_: random matrix was rank deficient");
        return end(t, NULL, gd);
    }
    /* Gram-Schmidt runs on the host: Q comes back in as host data (the
     * transpose and the gain applied in place in a) */
    double *qp = pdi_malloc((size_t)(m * n) * sizeof *qp);
    if (!qp) {
        free(a);
        pdi_errorf(PD_ERR_NOMEM, "init.orthogonal_: out of memory for a %lld x %lld matrix", (long long)m,
                   (long long)n);
        return end(t, NULL, gd);
    }
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) qp[i * cols + j] = gain * a[tall ? i * n + j : j * n + i];
    free(a);
    struct pd_tensor *q = pd_from_buffer(qp, t->shape, t->ndim, PD_F64);
    free(qp);
    return end(t, q, gd);
}
