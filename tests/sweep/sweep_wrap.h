/* paddle.c — what the sweep's wrapper tables share (tests/sweep/sweep_wrap.c,
 * tests/sweep/sweep_more.c): the argument values and the case shapes. */
#ifndef PD_SWEEP_WRAP_H
#define PD_SWEEP_WRAP_H

#include <limits.h>
#include <math.h>

#include "pd/pd.h"
#include "sweep.h"

static const int64_t ivals[] __attribute__((unused)) = {0, -1, 1, 3, -4, 9, INT_MIN, INT_MAX, INT64_MIN, INT64_MAX, 1LL << 40};
#define NI ((int)(sizeof ivals / sizeof ivals[0]))
static const double dvals[] __attribute__((unused)) = {NAN, INFINITY, -INFINITY, -1.0, 0.0, 0.5, 1.0, 1e308, -1e308};
#define ND ((int)(sizeof dvals / sizeof dvals[0]))

enum shape { NUL, INT, DBL };
typedef int (*wrap_fn)(int i, int *must, struct pd_tensor **out);

#define IV (ivals[i])
#define II (IV >= INT_MIN && IV <= INT_MAX ? (int)IV : -1) /* as an int (INT_MIN stays) */
#define DV (dvals[i])
#define NP(j, ...) (i == (j) ? NULL : (__VA_ARGS__))
#define RES(t) (*out = (t), *out ? 0 : (pd_last_status() ? pd_last_status() : -1))
#define RC(expr) (*out = NULL, rc_of(expr))
#define BAD_D (!isfinite(DV))

static inline int rc_of(int rc) { return rc < 0 ? rc : 0; }
static inline struct pd_tensor *x234(void) { return pd_ones((const int64_t[]){2, 3, 4}, 3, PD_F32); }
static inline struct pd_tensor *x0(void) { return pd_zeros((const int64_t[]){0, 4}, 2, PD_F32); }
static inline struct pd_tensor *ids3(void) { return pd_zeros((const int64_t[]){1, 3}, 2, PD_I64); }

struct sw_wrap {
    const char *name;
    enum shape shape;
    int n; /* NUL: the number of cases */
    wrap_fn fn;
};
/* sweep_more.c: the second table */
extern const struct sw_wrap sw_more[];
extern const int sw_n_more;

#endif
