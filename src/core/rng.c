/* paddle.c — counter-based random numbers (Philox 4x32-10).
 *
 * A generator is (seed, offset). A call that needs n numbers takes the
 * counter range [offset, offset + n) and advances offset, so element i is a
 * pure function of (seed, offset + i): the result does not depend on the
 * thread count, and any rank can reproduce any stream.
 */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"

struct pd_generator {
    uint64_t seed, offset;
};

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

/* One block: counter (ctr) and key -> 4 words. */
static void philox4x32(uint64_t ctr, uint64_t seed, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* Word i of the stream is word (i % 4) of block (i / 4). */
void pd_philox_fill(uint64_t seed, uint64_t offset, uint32_t *out, int64_t n)
{
    PDI_FOR(n > 65536, i, n, {
        uint64_t w = offset + (uint64_t)i;
        uint32_t b[4];
        philox4x32(w >> 2, seed, b);
        out[i] = b[w & 3];
    });
}

struct pd_generator *pd_generator_create(uint64_t seed)
{
    struct pd_generator *g = calloc(1, sizeof *g);
    if (!g) return pdi_error(PD_ERR_NOMEM, "out of memory (generator)");
    g->seed = seed;
    return g;
}

void pd_generator_destroy(struct pd_generator *g) { free(g); }
void pd_generator_set_state(struct pd_generator *g, uint64_t seed, uint64_t offset)
{
    if (g) { g->seed = seed; g->offset = offset; }
}
void pd_generator_get_state(const struct pd_generator *g, uint64_t *seed, uint64_t *offset)
{
    if (!g) return;
    if (seed) *seed = g->seed;
    if (offset) *offset = g->offset;
}

static _Thread_local struct pd_generator default_gen;
struct pd_generator *pd_default_generator(void) { return &default_gen; }
void pd_manual_seed(uint64_t seed) { default_gen.seed = seed; default_gen.offset = 0; }

/* Reserve n words; offsets stay 4-aligned so blocks are never shared. */
static uint64_t take(struct pd_generator *g, int64_t n)
{
    uint64_t o = g->offset;
    g->offset += ((uint64_t)n + 3) & ~(uint64_t)3;
    return o;
}

static double u01_53(uint32_t a, uint32_t b) /* [0, 1) with 53 bits */
{
    return (double)(((uint64_t)a << 21) ^ (b >> 11)) * 0x1p-53;
}

enum rkind { R_UNIFORM, R_NORMAL, R_INT };

static struct pd_tensor *random_tensor(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_generator *g,
                                       enum rkind kind, double a, double b)
{
    if (!g) g = &default_gen;
    struct pd_tensor *t = pdi_tensor_new(shape, ndim, dt);
    if (!t) return NULL;
    int64_t n = pd_tensor_numel(t);
    uint32_t *w = malloc(sizeof *w * (size_t)(2 * n + 1));
    if (!w) { pd_tensor_release(t); return pdi_error(PD_ERR_NOMEM, "out of memory (random)"); }
    pd_philox_fill(g->seed, take(g, 2 * n), w, 2 * n);
    char *d = t->st->data;
    size_t es = pd_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        double v;
        double u = u01_53(w[2 * i], w[2 * i + 1]);
        if (kind == R_UNIFORM) {
            v = a + (b - a) * u;
        } else if (kind == R_NORMAL) {
            /* Box-Muller on two 26/27-bit halves of the same pair keeps one
             * pair per element (reproducible per index). */
            double u1 = ((double)(w[2 * i] >> 5) + 1.0) * 0x1p-27; /* (0, 1] */
            double u2 = (double)(w[2 * i + 1] >> 6) * 0x1p-26;
            v = a + b * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        } else {
            uint64_t range = (uint64_t)(b - a);
            uint64_t r = ((uint64_t)w[2 * i] << 32) | w[2 * i + 1];
            v = a + (double)(r % range);
        }
        if (kind == R_INT && dt == PD_I64) ((int64_t *)d)[i] = (int64_t)a + (int64_t)((((uint64_t)w[2 * i] << 32) | w[2 * i + 1]) % (uint64_t)(b - a));
        else if (dt == PD_F32) ((float *)d)[i] = (float)v;
        else pdi_store(d + i * (int64_t)es, dt, v);
    }
    free(w);
    return pdi_scope_add(t);
}

struct pd_tensor *pd_uniform(const int64_t *shape, int ndim, double lo, double hi, enum pd_dtype dt,
                             struct pd_generator *g)
{
    if (!pd_dtype_is_float(dt)) return pdi_error(PD_ERR_INVALID, "uniform: dtype must be floating, got %s", pd_dtype_name(dt));
    return random_tensor(shape, ndim, dt, g, R_UNIFORM, lo, hi);
}
struct pd_tensor *pd_rand(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_generator *g)
{
    return pd_uniform(shape, ndim, 0.0, 1.0, dt, g);
}
struct pd_tensor *pd_normal(const int64_t *shape, int ndim, double mean, double std, enum pd_dtype dt,
                            struct pd_generator *g)
{
    if (!pd_dtype_is_float(dt)) return pdi_error(PD_ERR_INVALID, "normal: dtype must be floating, got %s", pd_dtype_name(dt));
    if (!(std >= 0)) return pdi_error(PD_ERR_INVALID, "normal: std must be >= 0, got %g", std);
    return random_tensor(shape, ndim, dt, g, R_NORMAL, mean, std);
}
struct pd_tensor *pd_randn(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_generator *g)
{
    return pd_normal(shape, ndim, 0.0, 1.0, dt, g);
}
struct pd_tensor *pd_randint(const int64_t *shape, int ndim, int64_t lo, int64_t hi, enum pd_dtype dt,
                             struct pd_generator *g)
{
    if (hi <= lo) return pdi_error(PD_ERR_INVALID, "randint: need lo < hi, got [%lld, %lld)", (long long)lo, (long long)hi);
    if (pd_dtype_is_float(dt) || dt == PD_BOOL) return pdi_error(PD_ERR_INVALID, "randint: dtype must be an integer type, got %s", pd_dtype_name(dt));
    return random_tensor(shape, ndim, dt, g, R_INT, (double)lo, (double)hi);
}

struct pd_tensor *pd_bernoulli(const struct pd_tensor *p, struct pd_generator *g)
{
    if (!p) return NULL;
    if (!pd_dtype_is_float(p->dtype)) return pdi_error(PD_ERR_INVALID, "bernoulli: p must be floating, got %s", pd_dtype_name(p->dtype));
    if (!g) g = &default_gen;
    struct pd_tensor *t = pdi_tensor_new(p->shape, p->ndim, p->dtype);
    if (!t) return NULL;
    int64_t n = pd_tensor_numel(t);
    /* One 32-bit word per element: u = (w + 0.5) / 2^32 in (0, 1), compared
     * with p; element i depends only on (seed, offset + i). */
    uint64_t seed = g->seed, base = take(g, n);
    struct pd_kview pv;
    pdi_kview_of(p, &pv);
    int contig = pdi_kview_contiguous(&pv) && p->dtype == PD_F32 && t->dtype == PD_F32;
    size_t es = pd_dtype_size(t->dtype);
    char *out = t->st->data;
    PDI_FOR(n > 65536, b, (n + 1023) / 1024, {
        uint32_t w[1024];
        int64_t i0 = b * 1024, m = n - i0 < 1024 ? n - i0 : 1024;
        pd_philox_fill(seed, base + (uint64_t)i0, w, m);
        for (int64_t j = 0; j < m; j++) {
            double u = ((double)w[j] + 0.5) * 0x1p-32;
            if (contig) {
                ((float *)out)[i0 + j] = u < ((const float *)pv.data)[i0 + j] ? 1.0f : 0.0f;
            } else {
                double pi = pdi_load(pdi_kview_ptr(&pv, i0 + j), p->dtype);
                pdi_store(out + (i0 + j) * (int64_t)es, t->dtype, u < pi ? 1.0 : 0.0);
            }
        }
    });
    return pdi_scope_add(t);
}
