/* paddle.c — anomaly mode: fail the first op whose output, or an input it
 * wrote in place (pdi_call.n_writes), holds NaN/Inf.
 *
 * Runs in the dispatcher's debug stage after the kernel (and autograd
 * recording), so it sees forward ops and the ops a VJP dispatches during
 * backward alike. The report names the op, each input's statistics, where
 * the op was called and, in backward, the GradNode and its forward site.
 * Slow on purpose (reads every output element): a debugging mode.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "pd/debug.h"

int pd_anomaly_mode(int on)
{
    int prev = (pdi_debug_flags & PDI_DBG_ANOMALY) != 0;
    pdi_debug_flag_set(PDI_DBG_ANOMALY, on);
    return prev;
}

struct stats {
    int64_t n, n_nan, n_inf;
    double min, max, sum; /* over finite values */
};

static void tensor_stats(const struct pd_tensor *t, struct stats *s)
{
    memset(s, 0, sizeof *s);
    s->min = INFINITY;
    s->max = -INFINITY;
    struct pd_kview v;
    pdi_kview_of(t, &v);
    s->n = pdi_kview_numel(&v);
    if (t->dtype == PD_F32 && pdi_kview_contiguous(&v)) { /* the common case, without per-element indexing */
        const float *p = (const float *)v.data;
        for (int64_t i = 0; i < s->n; i++) {
            float x = p[i];
            if (isnan(x)) s->n_nan++;
            else if (isinf(x)) s->n_inf++;
            else { s->sum += x; if (x < s->min) s->min = x; if (x > s->max) s->max = x; }
        }
        return;
    }
    for (int64_t i = 0; i < s->n; i++) {
        double x = pdi_load(pdi_kview_ptr(&v, i), t->dtype);
        if (isnan(x)) s->n_nan++;
        else if (isinf(x)) s->n_inf++;
        else { s->sum += x; if (x < s->min) s->min = x; if (x > s->max) s->max = x; }
    }
}

static int is_checked(enum pd_dtype dt) { return pd_dtype_is_float(dt); }

int pdi_anomaly_check(const struct pdi_call *c)
{
    /* Values the caller asked for (a -inf mask constant), not computed ones;
     * empty's data is uninitialised. */
    if ((pdi_ops[c->op].flags & PDI_F_CREATION) || c->op == PD_OP_fill_ || c->op == PD_OP_copy_) return PD_OK;
    /* The outputs, then the inputs the op wrote (in[0..n_writes): the
     * optimizer updates, clipping's scale, the scaler's unscale) that are
     * not also an output (an .inplace call's in[0] is out[0]). */
    int bad = -1, bad_written = 0;
    struct stats so;
    for (int j = 0; j < c->n_out && bad < 0; j++) {
        if (!c->out[j] || !is_checked(c->out[j]->dtype) || pdi_is_meta(c->out[j])) continue; /* meta: no values */
        tensor_stats(c->out[j], &so);
        if (so.n_nan || so.n_inf) bad = j;
    }
    for (int i = c->inplace ? 1 : 0; i < c->n_writes && bad < 0; i++) {
        const struct pd_tensor *w = c->in[i];
        if (!is_checked(w->dtype) || pdi_is_meta(w)) continue;
        tensor_stats(w, &so);
        if (so.n_nan || so.n_inf) bad = i, bad_written = 1;
    }
    if (bad < 0) return PD_OK;
    const struct pd_tensor *bt = bad_written ? c->in[bad] : c->out[bad];
    char name[PDI_NAME_BUF], b[PDI_SHAPE_BUF], msg[1800];
    snprintf(name, sizeof name, "%s", pdi_call_name(c));
    size_t k = 0;
#define ADD(...) do { if (k < sizeof msg) k += (size_t)snprintf(msg + k, sizeof msg - k, __VA_ARGS__); } while (0)
    ADD("%s: anomaly: %s %d (%s %s) has %lld NaN and %lld Inf of %lld values", name,
        bad_written ? "written input" : "output", bad, pdi_shape_str(bt->shape, bt->ndim, b, sizeof b),
        pd_dtype_name(bt->dtype), (long long)so.n_nan, (long long)so.n_inf, (long long)so.n);
    const struct pdi_node *bn = pdi_backward_node();
    if (bn) ADD(" in backward of %s", pdi_node_name(bn));
    ADD("; inputs:");
    for (int i = 0; i < c->n_in; i++) {
        const struct pd_tensor *t = c->in[i];
        char tn[PDI_NAME_BUF];
        ADD(" [%d] %s %s %s", i, pdi_tensor_name_buf(t, tn, sizeof tn), pdi_shape_str(t->shape, t->ndim, b, sizeof b),
            pd_dtype_name(t->dtype));
        if (t->dtype != PD_BOOL) {
            struct stats si;
            tensor_stats(t, &si);
            int64_t fin = si.n - si.n_nan - si.n_inf;
            if (fin > 0)
                ADD(" min=%.6g max=%.6g mean=%.6g", si.min, si.max, si.sum / (double)fin);
            ADD(" nan=%lld inf=%lld;", (long long)si.n_nan, (long long)si.n_inf);
        } else ADD(";");
    }
    const char *site = pdi_call_site(c);
    if (site) ADD(" called at %s;", site);
    if (bn && bn->site) ADD(" forward op %s called at %s;", pdi_node_name(bn), pdi_site_str(bn->site));
    if (!site && !(bn && bn->site)) ADD(" (pd_debug_set_callsites(1) adds the call site)");
#undef ADD
    if (pdi_log_enabled("anomaly", 1)) pdi_log("anomaly", 1, "%s", msg);
    return pdi_errorf(PD_ERR_STATE, "%s", msg);
}
