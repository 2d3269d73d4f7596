/* paddle.c — meta storages' byte count and the host-access entry point.
 *
 * A meta storage (made by pdi_tensor_new_meta, in practice by the meta
 * executor) has a size but no bytes. Its size is counted here, process-wide
 * like the allocator's statistics: live bytes go up when one is made and
 * down when its last tensor goes, and peak is their high-water mark, which
 * the meta executor resets per session (src/ops/exec_meta.c).
 *
 * pdi_host_access is the one way host code outside kernels reaches a
 * tensor's bytes. It refuses meta tensors with an error instead of handing
 * out NULL + offset, and reports every access to the host observers (with
 * the user's call site), so a tracer can tell where a program reads data.
 * pdi_host_write is its write side: the one function through which host
 * bytes enter a tensor outside an op (pd_from_buffer, loading, dataset
 * batches). It copies them in, bumps the storage version and then reports
 * the write, so an observer sees the bytes in place.
 */
#include <string.h>

#include "core/internal.h"

static int64_t meta_live, meta_peak;

void pdi_meta_account(int64_t delta)
{
    int64_t live = __atomic_add_fetch(&meta_live, delta, __ATOMIC_RELAXED);
    if (delta <= 0) return;
    int64_t peak = __atomic_load_n(&meta_peak, __ATOMIC_RELAXED);
    while (live > peak &&
           !__atomic_compare_exchange_n(&meta_peak, &peak, live, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

void pdi_meta_bytes(int64_t *live, int64_t *peak)
{
    if (live) *live = __atomic_load_n(&meta_live, __ATOMIC_RELAXED);
    if (peak) *peak = __atomic_load_n(&meta_peak, __ATOMIC_RELAXED);
}

void pdi_meta_peak_set(int64_t peak) { __atomic_store_n(&meta_peak, peak, __ATOMIC_RELAXED); }

/* ---- host access -------------------------------------------------------- */
#define MAX_HOST_OBSERVERS 8
static struct {
    pdi_host_observer_fn fn;
    void *ctx;
} host_obs[MAX_HOST_OBSERVERS];
static int n_host_obs;

int pdi_host_observer_add(pdi_host_observer_fn fn, void *ctx)
{
    if (!fn) return pdi_errorf(PD_ERR_NULL, "host observer: NULL callback");
    if (n_host_obs == MAX_HOST_OBSERVERS)
        return pdi_errorf(PD_ERR_INVALID, "too many host observers (max %d)", MAX_HOST_OBSERVERS);
    host_obs[n_host_obs].fn = fn;
    host_obs[n_host_obs].ctx = ctx;
    n_host_obs++;
    return PD_OK;
}

void pdi_host_observer_remove(pdi_host_observer_fn fn, void *ctx)
{
    for (int i = 0; i < n_host_obs; i++) {
        if (host_obs[i].fn == fn && host_obs[i].ctx == ctx) {
            for (int k = i; k + 1 < n_host_obs; k++) host_obs[k] = host_obs[k + 1];
            n_host_obs--;
            return;
        }
    }
}

PDI_TLS unsigned pdi_host_dist_refusals;
PDI_TLS int pdi_global_infer;

int pdi_host_validate(const struct pd_tensor *t, const char *what, const void **data)
{
    *data = NULL;
    if (t && t->dist && pdi_global_infer > 0) return PD_OK; /* the stage's global infer: not read here */
    *data = pdi_host_read(t, what);
    return *data ? PD_OK : pd_last_status();
}

void *pdi_host_access(const struct pd_tensor *t, unsigned access, const char *what)
{
    if (!t) { pdi_null_tensor(what); return NULL; }
    if (__builtin_expect(n_host_obs != 0, 0)) {
        void *site = pdi_capture_site();
        for (int i = 0; i < n_host_obs; i++) host_obs[i].fn(t, access, what, site, host_obs[i].ctx);
    }
    if (__builtin_expect(t->dist != NULL, 0)) {
        pdi_host_dist_refusals++;
        pdi_errorf(PD_ERR_INVALID, "%s: the tensor is distributed: read its piece with pd_dtensor_local, or the "
                   "whole value with pd_dtensor_full", what);
        return NULL;
    }
    if (__builtin_expect(t->st->data == NULL, 0) && t->st->meta) {
        char b[PDI_SHAPE_BUF], nb[PDI_NAME_BUF];
        const char *name = pdi_tensor_name_buf(t, nb, sizeof nb);
        return pdi_error(PD_ERR_INVALID, "%s: the %s %s tensor%s%s%s is meta (no data): it cannot be %s on the host",
                         what, pd_dtype_name(t->dtype), pdi_shape_str(t->shape, t->ndim, b, sizeof b),
                         *name ? " '" : "", name, *name ? "'" : "",
                         access & PDI_HOST_WRITE ? "read or written" : "read");
    }
    return (char *)t->st->data + t->offset * (int64_t)pd_dtype_size(t->dtype);
}

int pdi_host_write(struct pd_tensor *t, const void *src, const char *what)
{
    if (!t) return pdi_null_tensor(what);
    int64_t n = pdi_numel(t->shape, t->ndim);
    size_t nb = (size_t)n * pd_dtype_size(t->dtype);
    if (nb && !src) return pdi_errorf(PD_ERR_INVALID, "%s: NULL data", what);
    if (__builtin_expect(t->st->data == NULL, 0) && t->st->meta) {
        char b[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_INVALID,
                          "%s: the %s %s tensor is meta (no data): host bytes cannot be written into it", what,
                          pd_dtype_name(t->dtype), pdi_shape_str(t->shape, t->ndim, b, sizeof b));
    }
    struct pd_kview v;
    pdi_kview_of(t, &v);
    if (nb && !pdi_kview_contiguous(&v)) /* no element: any strides will do */
        return pdi_errorf(PD_ERR_INVALID, "%s: host bytes can only be written into a contiguous tensor", what);
    if (nb) memcpy(v.data, src, nb);
    t->st->version++; /* like an op's written input: a GradNode that saved it notices */
    if (__builtin_expect(n_host_obs != 0, 0)) {
        void *site = pdi_capture_site();
        for (int i = 0; i < n_host_obs; i++)
            host_obs[i].fn(t, PDI_HOST_WRITE | PDI_HOST_COPY_IN, what, site, host_obs[i].ctx);
    }
    return PD_OK;
}

int pdi_host_first(const struct pd_tensor *t, const char *what, double *out)
{
    if (t && t->dist) { /* the whole value on every rank (collective) */
        int tok = pd_scope_begin();
        struct pd_tensor *f = pdi_dist_hooks->full((struct pd_tensor *)t);
        int rc = f ? pdi_host_first(f, what, out) : pd_last_status();
        pd_scope_end(tok);
        return rc;
    }
    const void *p = pdi_host_read(t, what);
    if (!p) return pd_last_status();
    *out = pdi_load(p, t->dtype);
    return PD_OK;
}

int pdi_host_scalar(const struct pd_tensor *t, const char *what, double *out)
{
    if (t && pdi_numel(t->shape, t->ndim) != 1)
        return pdi_errorf(PD_ERR_INVALID, "%s: expected one element, got %lld", what,
                          (long long)pdi_numel(t->shape, t->ndim));
    return pdi_host_first(t, what, out);
}
