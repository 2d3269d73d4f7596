/* paddle.c — the op harness's random inputs (see harness.h), shared by
 * test_backend_ops (tests/ops/main.c) and its distributed mode
 * (tests/dist/ops/dist_ops.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/harness.h"

const struct opt_family opt_families[] = {
#define OPT_FAMILY(name) {#name, opt_rows_##name},
#include "ops/rows.def"
#undef OPT_FAMILY
};
const int opt_n_families = (int)(sizeof opt_families / sizeof opt_families[0]);

uint64_t opt_row_seed(const char *name)
{
    uint64_t h = 1469598103934665603ull;
    for (; *name; name++) h = (h ^ (uint8_t)*name) * 1099511628211ull;
    return h;
}

/* Random input per spec (inputs are leaves, not in any scope's way: they
 * live in the row's scope). */
struct pd_tensor *opt_make_input(const struct opt_in *s, enum pd_dtype dt, uint64_t seed, int k)
{
    enum pd_dtype d = s->kind == OPT_INDEX ? PD_I64 : s->kind == OPT_BOOL ? PD_BOOL : s->kind == OPT_FIXED ? s->dtype : dt;
    int64_t shape[PD_MAX_DIMS];
    memcpy(shape, s->shape, sizeof shape);
    int nd = s->ndim;
    int transposed = s->layout == OPT_TRANSPOSED && nd >= 2, strided = s->layout == OPT_STRIDED && nd >= 1;
    if (transposed) { int64_t t = shape[nd - 1]; shape[nd - 1] = shape[nd - 2]; shape[nd - 2] = t; }
    if (strided) shape[nd - 1] *= 2;
    int64_t n = pdi_numel(shape, nd);
    uint32_t *w = malloc(sizeof *w * (size_t)(2 * n + 2));
    char *buf = malloc((size_t)(n + 1) * 8);
    pd_philox_fill(seed, (uint64_t)k << 40, w, 2 * n);
    size_t es = pd_dtype_size(d);
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(((uint64_t)w[2 * i] << 21) ^ (w[2 * i + 1] >> 11)) * 0x1p-53;
        double v;
        if (s->kind == OPT_INDEX) v = floor(s->lo + (s->hi - s->lo) * u);
        else if (s->kind == OPT_BOOL) v = u < (s->lo > 0 ? s->lo : 0.5);
        else {
            v = s->lo + (s->hi - s->lo) * u;
            if (!pd_dtype_is_float(d)) v = floor(v);
        }
        pdi_store(buf + i * (int64_t)es, d, v);
    }
    struct pd_tensor *t = pd_from_buffer(buf, shape, nd, d);
    free(w);
    free(buf);
    if (transposed) t = pd_transpose(t, -1, -2);
    if (strided) t = pd_slice(t, -1, 0, shape[nd - 1], 2);
    return t;
}
