/* paddle.c — nn ops on special values, against results computed here in
 * double (independently of the reference kernels):
 *   - softmax / log_softmax / cross_entropy stay finite and correct for
 *     logits of +-1e4 and +-3e38 in f32 (where PyTorch is finite), on the
 *     CPU and the reference backend, along the last axis and axis 0;
 *   - NaN spreads over its row only; an all -inf row is NaN; +inf gives NaN;
 *   - cross_entropy semantics (ignore_index, label smoothing, reductions,
 *     probability targets) from torch's formulas, written out in double;
 *   - layer_norm / rms_norm values, also for rows with a large offset.
 */
#include <math.h>
#include <string.h>

#include "core/internal.h"
#include "pt.h"

#define C4 4

/* softmax and log_softmax of one row, in double (the textbook formula). */
static void softmax_ref(const double *x, int n, double *sm, double *lsm)
{
    double m = -INFINITY, s = 0;
    for (int j = 0; j < n; j++) m = x[j] > m ? x[j] : m;
    for (int j = 0; j < n; j++) s += exp(x[j] - m);
    for (int j = 0; j < n; j++) {
        sm[j] = exp(x[j] - m) / s;
        lsm[j] = (x[j] - m) - log(s);
    }
}

/* v rounded to f32. Through a volatile: GCC 12 at -O3 -march=native folds
 * (double)(float)c of some constants vectorised without the rounding. */
static double to_f32(double v)
{
    volatile float f = (float)v;
    return f;
}

/* Same value after rounding to f32 (inf and NaN compare equal to themselves). */
static int same_f32(double got, double want, double rtol)
{
    float w = (float)want;
    if (isnan(w)) return isnan(got);
    if (isinf(w)) return got == w;
    return fabs(got - w) <= rtol * fabs(w) + 1e-30;
}

static const double big_rows[][C4] = {
    {1e4, -1e4, 0, 1e4 - 1},
    {-1e4, -1e4 + 2, -1e4 + 1, -1e4},
    {3e38, -3e38, 0, 3e38},
    {-3e38, -3e38, 3e38, 1},
    {3e38, 3e38, 3e38, 3e38},
    {-3e38, -3e38, -3e38, -3e38},
};
#define NBIG ((int)(sizeof big_rows / sizeof big_rows[0]))

static void check_big(int backend, int axis0, enum pd_dtype dt)
{
    int scope_tok = pd_scope_begin();
    int64_t shape[2] = {NBIG, C4};
    struct pd_tensor *x = pd_from_buffer(big_rows, shape, 2, PD_F64);
    x = pd_cast(x, dt);
    if (axis0) x = pd_contiguous(pd_transpose(x, 0, 1)); /* [C4, NBIG], classes along axis 0 */
    pdi_force_backend(backend);
    struct pd_tensor *sm = pd_softmax(x, axis0 ? 0 : -1), *lsm = pd_log_softmax(x, axis0 ? 0 : -1);
    pdi_force_backend(-1);
    PT_CHECK(sm && lsm);
    double rtol = dt == PD_F64 ? 1e-12 : 1e-5;
    for (int r = 0; r < NBIG && sm && lsm; r++) {
        double in[C4], esm[C4], elsm[C4];
        for (int j = 0; j < C4; j++) in[j] = dt == PD_F64 ? big_rows[r][j] : to_f32(big_rows[r][j]);
        softmax_ref(in, C4, esm, elsm);
        for (int j = 0; j < C4; j++) {
            int64_t idx[2] = {axis0 ? j : r, axis0 ? r : j};
            double a = pd_get(sm, idx), b = pd_get(lsm, idx);
            /* f32 computes x - max in f32: -3e38 - 3e38 overflows to -inf where double has -6e38,
             * which rounds to -inf in f32 as well: compare after rounding to f32 */
            int ok = dt == PD_F64 ? fabs(a - esm[j]) <= rtol && (fabs(b - elsm[j]) <= rtol * fabs(elsm[j]) + rtol)
                                  : same_f32(a, esm[j], rtol) && same_f32(b, elsm[j], rtol);
            if (!ok)
                printf("  backend %d axis0 %d %s row %d col %d: softmax %.9g (want %.9g), "
                       "log_softmax %.9g (want %.9g)\n",
                       backend, axis0, pd_dtype_name(dt), r, j, a, esm[j], b, elsm[j]);
            PT_CHECK(ok);
            PT_CHECK(isfinite(a)); /* softmax is finite on every one of these rows */
        }
    }
    pd_scope_end(scope_tok);
}

/* NaN spreads over its row only; all -inf rows are NaN; +inf makes the row NaN. */
static void check_nan_inf(int backend, enum pd_dtype dt)
{
    int scope_tok = pd_scope_begin();
    double v[4][3] = {{1, NAN, 2}, {-INFINITY, -INFINITY, -INFINITY}, {INFINITY, 0, 1}, {-INFINITY, 0, 1}};
    int64_t shape[2] = {4, 3};
    struct pd_tensor *x = pd_cast(pd_from_buffer(v, shape, 2, PD_F64), dt);
    pdi_force_backend(backend);
    struct pd_tensor *sm = pd_softmax(x, 1), *lsm = pd_log_softmax(x, 1);
    pdi_force_backend(-1);
    PT_CHECK(sm && lsm);
    for (int r = 0; r < 3 && sm && lsm; r++)
        for (int j = 0; j < 3; j++) {
            int64_t idx[2] = {r, j};
            PT_CHECK(isnan(pd_get(sm, idx)) && isnan(pd_get(lsm, idx)));
        }
    if (sm && lsm) { /* the -inf entry gets probability 0 and log-probability -inf */
        double e1 = 1.0 / (1.0 + exp(1.0)), e2 = exp(1.0) / (1.0 + exp(1.0));
        PT_CHECK(pd_get(sm, (int64_t[]){3, 0}) == 0 && pd_get(lsm, (int64_t[]){3, 0}) == -INFINITY);
        double tol = dt == PD_BF16 ? 8e-3 : 1e-6;
        PT_NEAR(pd_get(sm, (int64_t[]){3, 1}), e1, tol);
        PT_NEAR(pd_get(sm, (int64_t[]){3, 2}), e2, tol);
        PT_NEAR(pd_get(lsm, (int64_t[]){3, 2}), log(e2), tol);
    }
    pd_scope_end(scope_tok);
}

/* cross_entropy on huge logits: finite and equal to the double formula. */
static void check_ce_big(int backend)
{
    int scope_tok = pd_scope_begin();
    double v[3][3] = {{1e4, -1e4, 0}, {3e38, -3e38, 3e38}, {-3e38, 1, 2}};
    int64_t tv[3] = {1, 2, 2}, shape[2] = {3, 3}, n = 3;
    struct pd_tensor *x = pd_cast(pd_from_buffer(v, shape, 2, PD_F64), PD_F32);
    struct pd_tensor *t = pd_from_buffer(tv, &n, 1, PD_I64);
    pdi_force_backend(backend);
    struct pd_tensor *lm = pd_cross_entropy(x, t, -100, 0, PD_REDUCTION_MEAN);
    struct pd_tensor *ln = pd_cross_entropy(x, t, -100, 0, PD_REDUCTION_NONE);
    pdi_force_backend(-1);
    PT_CHECK(lm && ln);
    if (lm && ln) {
        double want[3], sum = 0;
        for (int r = 0; r < 3; r++) {
            double in[3], sm[3], lsm[3];
            for (int j = 0; j < 3; j++) in[j] = to_f32(v[r][j]);
            softmax_ref(in, 3, sm, lsm);
            want[r] = -lsm[tv[r]];
            sum += want[r];
            PT_CHECK(isfinite(pd_get(ln, (int64_t[]){r})));
            PT_NEAR(pd_get(ln, (int64_t[]){r}), want[r], 1e-6);
        }
        PT_CHECK(isfinite(pd_item(lm)));
        PT_NEAR(pd_item(lm), sum / 3, 1e-6);
    }
    /* NaN in the logits gives a NaN loss */
    double nv[2][3] = {{0, NAN, 1}, {0, 1, 2}};
    int64_t ns[2] = {2, 3}, tn[2] = {0, 1}, two = 2;
    struct pd_tensor *l2 = pd_cross_entropy(pd_cast(pd_from_buffer(nv, ns, 2, PD_F64), PD_F32),
                                            pd_from_buffer(tn, &two, 1, PD_I64), -100, 0, PD_REDUCTION_MEAN);
    PT_CHECK(l2 && isnan(pd_item(l2)));
    pd_scope_end(scope_tok);
}

/* torch.nn.functional.cross_entropy, written out: class targets with
 * ignore_index and label smoothing, and probability targets. */
static void check_ce_semantics(void)
{
    int scope_tok = pd_scope_begin();
    enum { N = 5, C = 3 };
    double xv[N][C] = {{0.2, -1.0, 0.5}, {1.5, 0.1, -0.3}, {-0.7, 0.9, 0.0}, {0.3, 0.3, 2.0}, {-2.0, 1.0, 0.4}};
    int64_t tv[N] = {2, -1, 1, 0, -1}, xs[2] = {N, C}, tn = N;
    double ls = 0.2;
    struct pd_tensor *x = pd_from_buffer(xv, xs, 2, PD_F64), *t = pd_from_buffer(tv, &tn, 1, PD_I64);
    double nll[N], smooth[N], kept = 0, nll_sum = 0, smooth_sum = 0;
    for (int i = 0; i < N; i++) {
        double sm[C], lsm[C];
        softmax_ref(xv[i], C, sm, lsm);
        int ign = tv[i] == -1;
        nll[i] = ign ? 0 : -lsm[tv[i]];
        smooth[i] = 0;
        for (int c = 0; c < C && !ign; c++) smooth[i] -= lsm[c];
        kept += !ign;
        nll_sum += nll[i];
        smooth_sum += smooth[i];
    }
    struct pd_tensor *none = pd_cross_entropy(x, t, -1, ls, PD_REDUCTION_NONE);
    struct pd_tensor *sum = pd_cross_entropy(x, t, -1, ls, PD_REDUCTION_SUM);
    struct pd_tensor *mean = pd_cross_entropy(x, t, -1, ls, PD_REDUCTION_MEAN);
    PT_CHECK(none && sum && mean);
    for (int i = 0; i < N && none; i++)
        PT_NEAR(pd_get(none, (int64_t[]){i}), (1 - ls) * nll[i] + ls / C * smooth[i], 1e-12);
    if (sum) PT_NEAR(pd_item(sum), (1 - ls) * nll_sum + ls / C * smooth_sum, 1e-12);
    if (mean) PT_NEAR(pd_item(mean), ((1 - ls) * nll_sum + ls / C * smooth_sum) / kept, 1e-12);

    /* probability targets, smoothed: t' = t (1 - ls) + ls / C; mean over rows */
    double pv[N][C] = {{0.2, 0.3, 0.5}, {1, 0, 0}, {0.1, 0.1, 0.8}, {0.5, 0.5, 0}, {0.3, 0.3, 0.4}};
    struct pd_tensor *p = pd_from_buffer(pv, xs, 2, PD_F64);
    double want = 0;
    for (int i = 0; i < N; i++) {
        double sm[C], lsm[C];
        softmax_ref(xv[i], C, sm, lsm);
        for (int c = 0; c < C; c++) want -= (pv[i][c] * (1 - ls) + ls / C) * lsm[c];
    }
    struct pd_tensor *pm = pd_cross_entropy(x, p, -100, ls, PD_REDUCTION_MEAN);
    PT_CHECK(pm);
    if (pm) PT_NEAR(pd_item(pm), want / N, 1e-12);
    /* ignore_index with probability targets is an error, as in torch */
    PT_CHECK(!pd_cross_entropy(x, p, 0, 0, PD_REDUCTION_MEAN) && strstr(pd_last_error(), "ignore_index"));
    /* every target ignored: mean is NaN, sum is 0 */
    int64_t all_ign[N] = {-1, -1, -1, -1, -1};
    struct pd_tensor *ti = pd_from_buffer(all_ign, &tn, 1, PD_I64);
    struct pd_tensor *m0 = pd_cross_entropy(x, ti, -1, 0.1, PD_REDUCTION_MEAN);
    struct pd_tensor *s0 = pd_cross_entropy(x, ti, -1, 0.1, PD_REDUCTION_SUM);
    PT_CHECK(m0 && isnan(pd_item(m0)) && s0 && pd_item(s0) == 0);
    pd_scope_end(scope_tok);
}

/* layer_norm / rms_norm against the two-pass formula in double, f32 rows
 * with a large common offset (where a one-pass variance would cancel). */
static void check_norm_values(int backend)
{
    int scope_tok = pd_scope_begin();
    enum { R = 3, M = 1000 };
    static float xv[R][M], wv[M], bv[M];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < M; j++) xv[r][j] = (float)(1000.0 * (r + 1) + sin(0.37 * j + r) * 0.01);
    for (int j = 0; j < M; j++) { wv[j] = (float)(1 + 0.001 * j); bv[j] = (float)(0.5 - 0.002 * j); }
    int64_t xs[2] = {R, M}, ws = M;
    struct pd_tensor *x = pd_from_buffer(xv, xs, 2, PD_F32), *w = pd_from_buffer(wv, &ws, 1, PD_F32),
                     *b = pd_from_buffer(bv, &ws, 1, PD_F32);
    pdi_force_backend(backend);
    struct pd_tensor *ln = pd_layer_norm(x, 1, w, b, 1e-5), *rn = pd_rms_norm(x, 1, w, 1e-6);
    pdi_force_backend(-1);
    PT_CHECK(ln && rn);
    for (int r = 0; r < R && ln && rn; r++) {
        double mean = 0, var = 0, ms = 0;
        for (int j = 0; j < M; j++) { mean += xv[r][j]; ms += (double)xv[r][j] * xv[r][j]; }
        mean /= M;
        ms /= M;
        for (int j = 0; j < M; j++) var += (xv[r][j] - mean) * (xv[r][j] - mean);
        var /= M;
        double worst_ln = 0, worst_rn = 0;
        for (int j = 0; j < M; j++) {
            double el = (xv[r][j] - mean) / sqrt(var + 1e-5) * wv[j] + bv[j];
            double er = xv[r][j] / sqrt(ms + 1e-6) * wv[j];
            double dl = fabs(pd_get(ln, (int64_t[]){r, j}) - el), dr = fabs(pd_get(rn, (int64_t[]){r, j}) - er);
            worst_ln = dl > worst_ln ? dl : worst_ln;
            worst_rn = dr > worst_rn ? dr : worst_rn;
        }
        /* std is ~0.007 on a mean of ~1000: the f32 kernel must centre accurately */
        PT_CHECK(worst_ln < 1e-5);
        PT_CHECK(worst_rn < 1e-5);
        if (worst_ln >= 1e-5 || worst_rn >= 1e-5)
            printf("  backend %d row %d: |ln err| %g, |rms err| %g\n", backend, r, worst_ln, worst_rn);
    }
    pd_scope_end(scope_tok);
}

int main(void)
{
    enum pd_dtype dts[2] = {PD_F32, PD_F64};
    for (int be = 0; be < PDI_BACKEND_COUNT; be++) {
        for (int d = 0; d < 2; d++) {
            check_big(be, 0, dts[d]);
            check_big(be, 1, dts[d]);
            check_nan_inf(be, dts[d]);
        }
        check_nan_inf(be, PD_BF16);
        check_ce_big(be);
        check_norm_values(be);
    }
    check_ce_semantics();
    PT_CHECK(pd_live_tensors() == 0);
    PT_DONE();
}
