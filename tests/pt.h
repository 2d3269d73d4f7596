/* paddle.c — a minimal assertion header for the C tests run by CTest.
 * Each failed check prints file:line and the values; main returns the
 * failure count via PT_DONE(). */
#ifndef PD_PT_H
#define PD_PT_H
#include <math.h>
#include <stdio.h>
#include "pd/pd.h"

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

/* A 1-d tensor of dtype dt from doubles (converted like pd_cast). */
static inline struct pd_tensor *pt_vec(enum pd_dtype dt, int n, const double *v)
{
    int64_t s = n;
    pd_scope_begin(); /* the f64 staging tensor dies here, scope or not */
    struct pd_tensor *t = pd_keep(pd_cast(pd_from_buffer(v, &s, 1, PD_F64), dt));
    pd_scope_end();
    return t;
}

/* Element i of a 1-d tensor (or the value of a 0-d one); NaN for NULL. */
static inline double pt_at(struct pd_tensor *t, int64_t i)
{
    if (!t) return NAN;
    return pd_tensor_ndim(t) == 0 ? pd_item(t) : pd_get(t, &i);
}

#define PT_DONE()                                                                         \
    do {                                                                                  \
        printf("%s: %d checks, %d failed\n", __FILE__, pt_checks, pt_fails);              \
        printf("%d passed, %d failed\n", pt_checks - pt_fails, pt_fails);                 \
        return pt_fails ? 1 : 0;                                                          \
    } while (0)
#endif
