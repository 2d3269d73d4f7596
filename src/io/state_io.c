/* paddle.c — loading one state dict into another, file wrappers, and tensor
 * statistics (include/pd/io.h).
 *
 * pd_state_dict_load checks every name and shape before it copies anything,
 * so a failed load leaves the destination as it was. Copies go through
 * pd_copy_ under no_grad, so parameters that require grad are written in
 * place (their storage version is bumped) and dtypes are converted.
 * Nothing here keeps a reference beyond the call.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "io/file.h"
#include "pd/io.h"

/* How many names a message lists before "...". */
#define LIST_MAX 4

/* Appends to a fixed buffer, silently truncating. */
struct sbuf {
    char *p;
    size_t n, k;
};

static void sb_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
    if (!b->p || b->k + 1 >= b->n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p + b->k, b->n - b->k, fmt, ap);
    va_end(ap);
    if (w > 0) b->k = b->k + (size_t)w < b->n ? b->k + (size_t)w : b->n - 1;
}

/* "N what (a, b, c, ...)" for the names in idx[0..n-1] of sd. */
static void sb_list(struct sbuf *b, const char *what, const struct pd_state_dict *sd, const int *idx, int n)
{
    sb_add(b, "%d %s (", n, what);
    char qb[PDI_QUOTE_BUF]; /* names may come from a file: quoted */
    for (int i = 0; i < n && i < LIST_MAX; i++)
        sb_add(b, i ? ", %s" : "%s", pdi_quote(pd_state_dict_name(sd, idx[i]), qb, sizeof qb));
    sb_add(b, n > LIST_MAX ? ", ...)" : ")");
}

static int same_shape(const struct pd_tensor *a, const struct pd_tensor *b)
{
    if (pd_tensor_ndim(a) != pd_tensor_ndim(b)) return 0;
    for (int d = 0; d < pd_tensor_ndim(a); d++)
        if (pd_tensor_shape(a)[d] != pd_tensor_shape(b)[d]) return 0;
    return 1;
}

int pd_state_dict_load(struct pd_state_dict *dst, const struct pd_state_dict *src, int strict, char *report,
                       size_t report_len)
{
    if (report && report_len) report[0] = 0;
    if (!dst || !src) return pdi_errorf(PD_ERR_NULL, "state dict load: NULL %s", !dst ? "destination" : "source");
    int nd = pd_state_dict_size(dst), ns = pd_state_dict_size(src);
    int *missing = pdi_malloc(((size_t)nd + 1) * sizeof(int));
    int *unexpected = pdi_malloc(((size_t)ns + 1) * sizeof(int));
    int *mismatch = pdi_malloc(((size_t)ns + 1) * sizeof(int));
    if (!missing || !unexpected || !mismatch) {
        free(missing), free(unexpected), free(mismatch);
        return pdi_errorf(PD_ERR_NOMEM, "state dict load: out of memory");
    }
    int n_missing = 0, n_unexpected = 0, n_mismatch = 0, n_load = 0, n_conv = 0;
    for (int i = 0; i < nd; i++)
        if (pd_state_dict_find(src, pd_state_dict_name(dst, i)) < 0) missing[n_missing++] = i;
    for (int i = 0; i < ns; i++) {
        struct pd_tensor *d = pd_state_dict_get(dst, pd_state_dict_name(src, i));
        struct pd_tensor *s = pd_state_dict_tensor(src, i);
        if (!d) unexpected[n_unexpected++] = i;
        else if (!same_shape(d, s)) mismatch[n_mismatch++] = i;
        else {
            n_load++;
            n_conv += pd_tensor_dtype(d) != pd_tensor_dtype(s);
        }
    }
    char msg[1024];
    struct sbuf b = {msg, sizeof msg, 0};
    int st = PD_OK;
    if (n_mismatch || (strict && (n_missing || n_unexpected))) {
        sb_add(&b, "state dict load (%s): ", strict ? "strict" : "non-strict");
        const char *sep = "";
        if (n_mismatch) {
            /* The first mismatch with both shapes: the usual cause is a wrong config. */
            const char *name = pd_state_dict_name(src, mismatch[0]);
            const struct pd_tensor *s = pd_state_dict_tensor(src, mismatch[0]), *d = pd_state_dict_get(dst, name);
            char s1[PDI_SHAPE_BUF], s2[PDI_SHAPE_BUF];
            sb_list(&b, "shape mismatch", src, mismatch, n_mismatch);
            char qb[PDI_QUOTE_BUF];
            sb_add(&b, " [%s: file %s, model %s]", pdi_quote(name, qb, sizeof qb), pdi_shape_str(pd_tensor_shape(s), pd_tensor_ndim(s), s1, sizeof s1),
                   pdi_shape_str(pd_tensor_shape(d), pd_tensor_ndim(d), s2, sizeof s2));
            sep = "; ";
        }
        if (strict && n_missing) {
            sb_add(&b, "%s", sep);
            sb_list(&b, "missing", dst, missing, n_missing);
            sep = "; ";
        }
        if (strict && n_unexpected) {
            sb_add(&b, "%s", sep);
            sb_list(&b, "unexpected", src, unexpected, n_unexpected);
        }
        sb_add(&b, "; nothing loaded");
        st = pdi_errorf(PD_ERR_INVALID, "%s", msg);
        goto done;
    }
    /* All checked: copy. pd_copy_ may make temporaries (casts): scope them. */
    int prev = pd_no_grad_begin();
    int scope_tok = pd_scope_begin();
    for (int i = 0; i < ns && !st; i++) {
        struct pd_tensor *d = pd_state_dict_get(dst, pd_state_dict_name(src, i));
        if (d && !pd_copy_(d, pd_state_dict_tensor(src, i))) {
            char qb[PDI_QUOTE_BUF];
            st = pdi_errorf(pd_last_status(), "state dict load: tensor %s: %s (tensors before it were loaded)",
                            pdi_quote(pd_state_dict_name(src, i), qb, sizeof qb), pd_last_error());
        }
    }
    pd_scope_end(scope_tok);
    pd_grad_mode_end(prev);
    if (st) {
        snprintf(msg, sizeof msg, "%s", pd_last_error());
        goto done;
    }
    sb_add(&b, "loaded %d tensors", n_load);
    if (n_conv) sb_add(&b, " (%d converted to the model's dtype)", n_conv);
    if (n_missing) {
        sb_add(&b, "; skipped ");
        sb_list(&b, "missing", dst, missing, n_missing);
    }
    if (n_unexpected) {
        sb_add(&b, "; skipped ");
        sb_list(&b, "unexpected", src, unexpected, n_unexpected);
    }
done:
    if (report && report_len) snprintf(report, report_len, "%s", msg);
    free(missing), free(unexpected), free(mismatch);
    return st;
}

int pd_state_dict_save_file(const char *path, const struct pd_state_dict *sd)
{
    return pd_safetensors_save(path, sd);
}

int pd_state_dict_load_file(struct pd_state_dict *dst, const char *path, int strict, char *report,
                            size_t report_len)
{
    if (report && report_len) report[0] = 0;
    if (!dst) return pdi_errorf(PD_ERR_NULL, "state dict load: NULL destination");
    struct pd_state_dict *src = pd_safetensors_load(path);
    if (!src) {
        if (report && report_len) snprintf(report, report_len, "%s", pd_last_error());
        return pdi_status_of(NULL, "state dict load");
    }
    int st = pd_state_dict_load(dst, src, strict, report, report_len);
    pd_state_dict_destroy(src);
    return st;
}

/* ---- statistics ------------------------------------------------------- */

int pd_tensor_stats(const struct pd_tensor *t, struct pd_tensor_stats *s)
{
    if (!s) return pdi_errorf(PD_ERR_INVALID, "tensor stats: NULL output");
    if (!t) return pdi_null_tensor("tensor stats");
    *s = (struct pd_tensor_stats){.numel = pd_tensor_numel(t), .min = NAN, .max = NAN, .mean = NAN, .std = NAN};
    /* Chunks of the (strided) view converted to f64; Welford-style merging of
     * chunk sums keeps the std accurate for large tensors. */
    enum { CHUNK = 4096 };
    double buf[CHUNK];
    struct pd_kview v;
    pdi_kview_of(t, &v);
    int contig = pdi_kview_contiguous(&v);
    size_t es = pd_dtype_size(v.dtype);
    int64_t n_fin = 0;
    double mean = 0, m2 = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t i0 = 0; i0 < s->numel; i0 += CHUNK) {
        int64_t n = s->numel - i0 < CHUNK ? s->numel - i0 : CHUNK;
        if (contig) pdi_convert(v.data + i0 * (int64_t)es, v.dtype, buf, PD_F64, n);
        else
            for (int64_t j = 0; j < n; j++) buf[j] = pdi_load(pdi_kview_ptr(&v, i0 + j), v.dtype);
        int64_t c = 0;
        double sum = 0;
        for (int64_t j = 0; j < n; j++) {
            double x = buf[j];
            if (isnan(x)) s->n_nan++;
            else if (isinf(x)) s->n_inf++;
            else {
                buf[c++] = x;
                sum += x;
                lo = x < lo ? x : lo;
                hi = x > hi ? x : hi;
            }
        }
        if (!c) continue;
        double cm = sum / (double)c, cm2 = 0;
        for (int64_t j = 0; j < c; j++) cm2 += (buf[j] - cm) * (buf[j] - cm);
        /* Chan et al.: merge (n_fin, mean, m2) with (c, cm, cm2). */
        double delta = cm - mean, tot = (double)(n_fin + c);
        mean += delta * (double)c / tot;
        m2 += cm2 + delta * delta * (double)n_fin * (double)c / tot;
        n_fin += c;
    }
    if (n_fin) {
        s->min = lo;
        s->max = hi;
        s->mean = mean;
        s->std = sqrt(m2 / (double)n_fin);
    }
    return PD_OK;
}
