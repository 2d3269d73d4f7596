/* paddle.c — a minimal assertion header for the C tests run by CTest.
 * Each failed check prints file:line and the values; main returns the
 * failure count via PT_DONE(). */
#ifndef PD_PT_H
#define PD_PT_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pd/pd.h"

/* buf = the directory of the test's source file (file: its __FILE__), then
 * rel: fixtures live beside the tests. */
static inline void pt_fixture_path(char *buf, size_t n, const char *file, const char *rel)
{
    const char *slash = strrchr(file, '/');
    snprintf(buf, n, "%.*s%s", slash ? (int)(slash - file + 1) : 0, file, rel);
}
#define PT_FIXTURE(buf, rel) pt_fixture_path(buf, sizeof buf, __FILE__, rel)

static int pt_fails, pt_checks;

#define PT_CHECK(cond)                                                                      \
    do {                                                                                    \
        pt_checks++;                                                                        \
        if (!(cond)) {                                                                      \
            pt_fails++;                                                                     \
            printf("%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                   pd_last_error());                                                        \
        }                                                                                   \
    } while (0)

#define PT_NEAR(a, b, tol)                                                                         \
    do {                                                                                           \
        double pt_a = (double)(a), pt_b = (double)(b);                                             \
        pt_checks++;                                                                               \
        if (!(fabs(pt_a - pt_b) <= (tol) * (1 + fabs(pt_b)))) {                                    \
            pt_fails++;                                                                            \
            printf("%s:%d: %s = %.12g, expected %s = %.12g (tol %g)\n", __FILE__, __LINE__, #a, pt_a, \
                   #b, pt_b, (double)(tol));                                                       \
        }                                                                                          \
    } while (0)

/* dir/name in one of four rotating buffers: up to four paths live at once. */
static inline const char *pt_path(const char *dir, const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* A 1-d tensor of dtype dt from doubles (converted like pd_cast). */
static inline struct pd_tensor *pt_vec(enum pd_dtype dt, int n, const double *v)
{
    int64_t s = n;
    int scope_tok = pd_scope_begin(); /* the f64 staging tensor dies here, scope or not */
    struct pd_tensor *t = pd_keep(pd_cast(pd_from_buffer(v, &s, 1, PD_F64), dt));
    pd_scope_end(scope_tok);
    return t;
}

/* Element i of a 1-d tensor (or the value of a 0-d one); NaN for NULL. */
static inline double pt_at(struct pd_tensor *t, int64_t i)
{
    if (!t) return NAN;
    return pd_tensor_ndim(t) == 0 ? pd_item(t) : pd_get(t, &i);
}

/* Both NULL, or the same dtype, shape and bytes (bit-identical values). */
static inline int pt_same_bits(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b) return a == b;
    if (pd_tensor_dtype(a) != pd_tensor_dtype(b) || pd_tensor_ndim(a) != pd_tensor_ndim(b)) return 0;
    for (int d = 0; d < pd_tensor_ndim(a); d++)
        if (pd_tensor_shape(a)[d] != pd_tensor_shape(b)[d]) return 0;
    size_t n = (size_t)pd_tensor_numel(a) * pd_dtype_size(pd_tensor_dtype(a));
    char *x = malloc(n + 1), *y = malloc(n + 1);
    int same = x && y && !pd_to_buffer(a, x, pd_tensor_dtype(a)) && !pd_to_buffer(b, y, pd_tensor_dtype(b)) &&
               !memcmp(x, y, n);
    free(x);
    free(y);
    return same;
}

/* The number after "key": in a flat JSON object (fixtures' metadata); NaN
 * when absent. */
static inline double pt_json_number(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = json ? strstr(json, pat) : NULL;
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

/* AdamW from a fixture's "adamw" metadata (lr, beta1, beta2, eps,
 * weight_decay, written by tools/ref/); returns its "steps". */
static inline int pt_adamw_config(const char *json, struct pd_optim_config *oc)
{
    pd_optim_config_default(oc, PD_OPTIM_ADAMW);
    oc->lr = pt_json_number(json, "lr");
    oc->beta1 = pt_json_number(json, "beta1");
    oc->beta2 = pt_json_number(json, "beta2");
    oc->eps = pt_json_number(json, "eps");
    oc->weight_decay = pt_json_number(json, "weight_decay");
    return (int)pt_json_number(json, "steps");
}

#define PT_DONE()                                                                         \
    do {                                                                                  \
        printf("%s: %d checks, %d failed\n", __FILE__, pt_checks, pt_fails);              \
        printf("%d passed, %d failed\n", pt_checks - pt_fails, pt_fails);                 \
        return pt_fails ? 1 : 0;                                                          \
    } while (0)
#endif
