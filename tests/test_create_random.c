/* paddle.c — creation, random and in-place write ops (issue 11: every path
 * that creates or writes data is an op).
 *
 *   - every creation op against the formula the library used before it was
 *     an op (copied below), on both backends: empty shapes, negative steps,
 *     num = 1, every dtype;
 *   - random replay: an observer records the random calls of a few draws;
 *     dispatching each recorded call again (op + attributes, also through
 *     the attributes' JSON) gives the same bits;
 *   - slices: every sub-block [a:b, c:d] of a [7, 13] draw of uniform,
 *     normal, randint and bernoulli drawn through the slice attribute equals
 *     the same block of the whole draw, bit for bit, on both backends;
 *   - copy_ and fill_ are dispatched (an observer sees them, in place);
 *   - the wrappers' messages and the infer checks of replayed calls.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pt.h"

/* ---- the formulas before the ops (src/core/tensor.c, src/core/rng.c) --- */
static struct pd_tensor *old_full(const int64_t *shape, int ndim, double value, enum pd_dtype dt)
{
    int64_t n = pdi_numel(shape, ndim);
    size_t es = pd_dtype_size(dt);
    char *d = malloc((size_t)n * es + 8);
    if (value == 0.0 && !signbit(value))
        memset(d, 0, (size_t)n * es);
    else if (dt == PD_F32) {
        float v = (float)value;
        for (int64_t i = 0; i < n; i++) ((float *)d)[i] = v;
    } else {
        char one[8];
        pdi_store(one, dt, value);
        for (int64_t i = 0; i < n; i++) memcpy(d + i * (int64_t)es, one, es);
    }
    struct pd_tensor *t = pd_from_buffer(d, shape, ndim, dt);
    free(d);
    return t;
}

static struct pd_tensor *old_arange(double start, double stop, double step, enum pd_dtype dt)
{
    double nd = ceil((stop - start) / step);
    int64_t n = nd > 0 ? (int64_t)nd : 0;
    size_t es = pd_dtype_size(dt);
    char *d = malloc((size_t)n * es + 8);
    for (int64_t i = 0; i < n; i++) pdi_store(d + i * (int64_t)es, dt, start + (double)i * step);
    struct pd_tensor *t = pd_from_buffer(d, &n, 1, dt);
    free(d);
    return t;
}

static struct pd_tensor *old_linspace(double start, double stop, int64_t num, enum pd_dtype dt)
{
    size_t es = pd_dtype_size(dt);
    char *d = malloc((size_t)num * es + 8);
    double step = num > 1 ? (stop - start) / (double)(num - 1) : 0;
    for (int64_t i = 0; i < num; i++) {
        double v = i < num / 2 ? start + step * (double)i : stop - step * (double)(num - 1 - i);
        pdi_store(d + i * (int64_t)es, dt, v);
    }
    struct pd_tensor *t = pd_from_buffer(d, &num, 1, dt);
    free(d);
    return t;
}

static struct pd_tensor *old_eye(int64_t n, int64_t m, enum pd_dtype dt)
{
    int64_t shape[2] = {n, m < 0 ? n : m};
    size_t es = pd_dtype_size(dt);
    char *d = calloc((size_t)(shape[0] * shape[1]) * es + 8, 1);
    for (int64_t i = 0; i < shape[0] && i < shape[1]; i++) pdi_store(d + (i * shape[1] + i) * (int64_t)es, dt, 1.0);
    struct pd_tensor *t = pd_from_buffer(d, shape, 2, dt);
    free(d);
    return t;
}

enum rkind { R_UNIFORM, R_NORMAL, R_INT };

/* rng.c's random_tensor, drawing from (seed, base) instead of a generator */
static struct pd_tensor *old_random(const int64_t *shape, int ndim, enum pd_dtype dt, uint64_t seed, uint64_t base,
                                    enum rkind kind, double a, double b)
{
    int64_t n = pdi_numel(shape, ndim);
    uint32_t *w = malloc(sizeof *w * (size_t)(2 * n + 1));
    size_t es = pd_dtype_size(dt);
    char *d = malloc((size_t)n * es + 8);
    pd_philox_fill(seed, base, w, 2 * n);
    for (int64_t i = 0; i < n; i++) {
        double v;
        double u = (double)(((uint64_t)w[2 * i] << 21) ^ (w[2 * i + 1] >> 11)) * 0x1p-53;
        if (kind == R_UNIFORM) {
            v = a + (b - a) * u;
        } else if (kind == R_NORMAL) {
            double u1 = ((double)(w[2 * i] >> 5) + 1.0) * 0x1p-27;
            double u2 = (double)(w[2 * i + 1] >> 6) * 0x1p-26;
            v = a + b * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        } else {
            uint64_t range = (uint64_t)(b - a);
            uint64_t r = ((uint64_t)w[2 * i] << 32) | w[2 * i + 1];
            v = a + (double)(r % range);
        }
        if (kind == R_INT && dt == PD_I64)
            ((int64_t *)d)[i] = (int64_t)a + (int64_t)((((uint64_t)w[2 * i] << 32) | w[2 * i + 1]) % (uint64_t)(b - a));
        else if (dt == PD_F32)
            ((float *)d)[i] = (float)v;
        else
            pdi_store(d + i * (int64_t)es, dt, v);
    }
    struct pd_tensor *t = pd_from_buffer(d, shape, ndim, dt);
    free(w);
    free(d);
    return t;
}

static struct pd_tensor *old_bernoulli(struct pd_tensor *p, uint64_t seed, uint64_t base)
{
    int64_t n = pd_tensor_numel(p);
    size_t es = pd_dtype_size(p->dtype);
    char *d = malloc((size_t)n * es + 8);
    uint32_t *w = malloc(sizeof *w * (size_t)(n + 1));
    pd_philox_fill(seed, base, w, n);
    struct pd_kview pv;
    pdi_kview_of(p, &pv);
    for (int64_t i = 0; i < n; i++) {
        double u = ((double)w[i] + 0.5) * 0x1p-32;
        pdi_store(d + i * (int64_t)es, p->dtype, u < pdi_load(pdi_kview_ptr(&pv, i), p->dtype) ? 1.0 : 0.0);
    }
    struct pd_tensor *t = pd_from_buffer(d, p->shape, p->ndim, p->dtype);
    free(w);
    free(d);
    return t;
}

/* ---- creation against the old formulas -------------------------------- */
static void test_creation_formulas(void)
{
    static const int64_t s23[] = {2, 3}, s0[] = {0, 5}, s4[] = {3, 1, 0, 2}, slong[] = {70001};
    static const double values[] = {0.0, -0.0, 1.0, 3.7, -1e10, 1e300, NAN, -INFINITY, 0.1};
    struct {
        double start, stop, step;
    } ar[] = {{0, 10, 1},  {0.1, 2.3, 0.07},      {5, -3.3, -0.3},       {5, 5, 1}, {5, 1, 1},
              {-1, 1, -1}, {-3.1, 70000.2, 0.77}, {1e15, 1e15 + 7, 0.5}, {0, 1, 3}};
    struct {
        double start, stop;
        int64_t num;
    } ls[] = {{0, 1, 7}, {-2.5, 7.1, 10}, {3, -1, 1}, {3, -1, 0}, {3, -1, 2}, {1, 1, 5}, {-1.3, 1e4, 100001}};
    struct {
        int64_t n, m;
    } ey[] = {{3, -1}, {2, 5}, {5, 2}, {0, 3}, {1, 1}, {4, 0}, {40, 300}};
    int bad = 0, n = 0;
    for (int be = -1; be <= PDI_BACKEND_REF; be += 1 + (be == -1)) { /* default (CPU), then REF */
        pdi_force_backend(be);
        for (int dt = 0; dt < PD_DTYPE_COUNT; dt++) {
            int scope_tok = pd_scope_begin();
            for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
                bad += !pt_same_bits(pd_full(s23, 2, values[v], dt), old_full(s23, 2, values[v], dt));
                bad += !pt_same_bits(pd_full(s4, 4, values[v], dt), old_full(s4, 4, values[v], dt));
                bad += !pt_same_bits(pd_scalar(values[v], dt), old_full(NULL, 0, values[v], dt));
                bad += !pt_same_bits(pd_full(slong, 1, values[v], dt), old_full(slong, 1, values[v], dt));
                n += 4;
            }
            bad += !pt_same_bits(pd_zeros(s0, 2, dt), old_full(s0, 2, 0, dt));
            bad += !pt_same_bits(pd_ones(s23, 2, dt), old_full(s23, 2, 1, dt));
            struct pd_tensor *like = pd_ones(s23, 2, dt);
            bad += !pt_same_bits(pd_zeros_like(like), old_full(s23, 2, 0, dt));
            bad += !pt_same_bits(pd_ones_like(like), old_full(s23, 2, 1, dt));
            bad += !pt_same_bits(pd_full_like(like, -2.5), old_full(s23, 2, -2.5, dt));
            struct pd_tensor *e = pd_empty_like(like);
            bad += !(e && pd_tensor_dtype(e) == (enum pd_dtype)dt && pd_tensor_ndim(e) == 2 && pd_tensor_numel(e) == 6);
            e = pd_empty(s0, 2, dt);
            bad += !(e && pd_tensor_numel(e) == 0);
            n += 7;
            for (size_t i = 0; i < sizeof ar / sizeof ar[0]; i++, n++)
                bad += !pt_same_bits(pd_arange(ar[i].start, ar[i].stop, ar[i].step, dt),
                                     old_arange(ar[i].start, ar[i].stop, ar[i].step, dt));
            for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++, n++)
                bad += !pt_same_bits(pd_linspace(ls[i].start, ls[i].stop, ls[i].num, dt),
                                     old_linspace(ls[i].start, ls[i].stop, ls[i].num, dt));
            for (size_t i = 0; i < sizeof ey / sizeof ey[0]; i++, n++)
                bad += !pt_same_bits(pd_eye(ey[i].n, ey[i].m, dt), old_eye(ey[i].n, ey[i].m, dt));
            pd_scope_end(scope_tok);
        }
    }
    pdi_force_backend(-1);
    if (bad) printf("creation: %d of %d results differ from the old formulas\n", bad, n);
    PT_CHECK(bad == 0);
    PT_CHECK(pd_live_tensors() == 0);
}

/* pd_rand & co against the old code, and the generator's advance */
static void test_random_formulas(void)
{
    static const int64_t shapes[][3] = {{2, 3, 1}, {3, 17, 2049}, {0, 5, 1}, {1, 1, 1}};
    static const int ndims[] = {2, 3, 2, 0};
    int bad = 0, n = 0;
    for (int be = -1; be <= PDI_BACKEND_REF; be += 1 + (be == -1)) {
        pdi_force_backend(be);
        for (int dt = 0; dt < PD_DTYPE_COUNT; dt++) {
            for (int s = 0; s < 4; s++) {
                int scope_tok = pd_scope_begin();
                const int64_t *sh = shapes[s];
                int nd = ndims[s];
                int64_t numel = pdi_numel(sh, nd);
                uint64_t adv = ((uint64_t)(2 * numel) + 3) & ~(uint64_t)3, seed0 = 1000 + (uint64_t)dt, o0 = 8;
                struct pd_generator *g = pd_generator_create(seed0);
                pd_generator_set_state(g, seed0, o0);
                uint64_t off = o0;
                if (pd_dtype_is_float(dt)) {
                    bad += !pt_same_bits(pd_uniform(sh, nd, -3, 5.5, dt, g),
                                         old_random(sh, nd, dt, seed0, off, R_UNIFORM, -3, 5.5));
                    off += adv;
                    bad += !pt_same_bits(pd_rand(sh, nd, dt, g), old_random(sh, nd, dt, seed0, off, R_UNIFORM, 0, 1));
                    off += adv;
                    bad += !pt_same_bits(pd_normal(sh, nd, 1.5, 0.2, dt, g),
                                         old_random(sh, nd, dt, seed0, off, R_NORMAL, 1.5, 0.2));
                    off += adv;
                    bad += !pt_same_bits(pd_randn(sh, nd, dt, g), old_random(sh, nd, dt, seed0, off, R_NORMAL, 0, 1));
                    off += adv;
                    struct pd_tensor *p = pd_rand(sh, nd, dt, g);
                    off += adv;
                    bad += !pt_same_bits(pd_bernoulli(p, g), old_bernoulli(p, seed0, off));
                    off += ((uint64_t)numel + 3) & ~(uint64_t)3;
                    if (nd == 3) { /* a strided p */
                        struct pd_tensor *pt = pd_transpose(p, 0, 2);
                        bad += !pt_same_bits(pd_bernoulli(pt, g), old_bernoulli(pt, seed0, off));
                        off += ((uint64_t)numel + 3) & ~(uint64_t)3;
                    }
                    n += 6;
                } else if (dt != PD_BOOL) {
                    bad += !pt_same_bits(pd_randint(sh, nd, -7, 1000, dt, g),
                                         old_random(sh, nd, dt, seed0, off, R_INT, -7, 1000));
                    off += adv;
                    double lo = (double)-(1LL << 60), hi = (double)((1LL << 61) + 12345);
                    bad += !pt_same_bits(pd_randint(sh, nd, -(1LL << 60), (1LL << 61) + 12345, dt, g),
                                         old_random(sh, nd, dt, seed0, off, R_INT, lo, hi));
                    off += adv;
                    n += 2;
                }
                uint64_t gs, go;
                pd_generator_get_state(g, &gs, &go);
                bad += gs != seed0 || go != off;
                n++;
                pd_generator_destroy(g);
                pd_scope_end(scope_tok);
            }
        }
    }
    pdi_force_backend(-1);
    if (bad) printf("random: %d of %d results differ from the old code\n", bad, n);
    PT_CHECK(bad == 0);
    /* the default generator: pd_rand(NULL) draws from it and advances it */
    int scope_tok = pd_scope_begin();
    pd_manual_seed(77);
    struct pd_tensor *a = pd_randn((int64_t[]){5}, 1, PD_F32, NULL);
    uint64_t s, o;
    pd_generator_get_state(pd_default_generator(), &s, &o);
    PT_CHECK(s == 77 && o == 12);
    PT_CHECK(pt_same_bits(a, old_random((int64_t[]){5}, 1, PD_F32, 77, 0, R_NORMAL, 0, 1)));
    pd_scope_end(scope_tok);
}

/* ---- replay ------------------------------------------------------------ */
#define MAX_REC 64
struct rec {
    enum pd_op op;
    struct pdi_attrs a;
    struct pd_tensor *in, *out; /* references */
};
struct recorder {
    struct rec r[MAX_REC];
    int n;
    unsigned flags; /* record ops with any of these flags (0: every op) */
};

static void record(const struct pdi_call *c, uint64_t seq, void *ctx)
{
    PDI_UNUSED(seq);
    struct recorder *R = ctx;
    if (R->flags && !(pdi_ops[c->op].flags & R->flags)) return;
    if (R->n == MAX_REC) return;
    struct rec *e = &R->r[R->n++];
    e->op = c->op;
    e->a = c->a;
    e->in = c->n_in ? c->in[0] : NULL;
    e->out = c->out[0];
    pd_tensor_retain(e->in);
    pd_tensor_retain(e->out);
}

static void recorder_clear(struct recorder *R)
{
    for (int i = 0; i < R->n; i++) {
        pd_tensor_release(R->r[i].in);
        pd_tensor_release(R->r[i].out);
    }
    R->n = 0;
}

static struct pd_tensor *redispatch(enum pd_op op, const struct pdi_attrs *a, struct pd_tensor *in)
{
    struct pd_tensor *ins[1] = {in}, *out[1];
    struct pdi_call c = {.op = op, .n_in = in ? 1 : 0, .n_out = 1, .in = ins, .out = out, .a = *a};
    return pdi_dispatch(&c) ? NULL : out[0];
}

static void test_replay(void)
{
    struct recorder R = {.flags = PDI_F_RANDOM};
    PT_CHECK(pdi_observer_add(record, &R) == PD_OK);
    int scope_tok = pd_scope_begin();
    struct pd_generator *g = pd_generator_create(2024);
    int64_t s[2] = {33, 65};
    pd_rand(s, 2, PD_F32, g);
    pd_uniform(s, 2, -1, 4, PD_F64, g);
    pd_randn(s, 2, PD_BF16, g);
    pd_normal((int64_t[]){3000}, 1, 2, 0.5, PD_F32, g);
    pd_randint(s, 2, -5, 9, PD_I32, g);
    pd_randint(s, 2, 0, 1LL << 40, PD_I64, g);
    pd_bernoulli(pd_full(s, 2, 0.3, PD_F32), g);
    pd_dropout(pd_ones(s, 2, PD_F32), 0.25, 1, g); /* dropout draws through bernoulli */
    pd_generator_destroy(g);
    pdi_observer_remove(record, &R);
    PT_CHECK(R.n == 8);
    int same = 0, same_json = 0, same_ref = 0;
    for (int i = 0; i < R.n; i++) {
        struct rec *e = &R.r[i];
        same += pt_same_bits(redispatch(e->op, &e->a, e->in), e->out);
        /* through the program format: attributes to JSON and back */
        cJSON *j = pdi_attrs_to_json(e->op, &e->a);
        struct pdi_attrs b;
        if (j && pdi_attrs_from_json(e->op, j, &b) == PD_OK)
            same_json += pt_same_bits(redispatch(e->op, &b, e->in), e->out);
        cJSON_Delete(j);
        pdi_force_backend(PDI_BACKEND_REF);
        same_ref += pt_same_bits(redispatch(e->op, &e->a, e->in), e->out);
        pdi_force_backend(-1);
    }
    PT_CHECK(same == R.n);
    PT_CHECK(same_json == R.n);
    PT_CHECK(same_ref == R.n);
    /* the printed form names the counter */
    char buf[512];
    pdi_attrs_format(R.r[0].op, &R.r[0].a, buf, sizeof buf);
    const char *want = "uniform(shape=[33, 65], slice=[], dtype=f32, seed=2024, offset=0, low=0, high=1)";
    PT_CHECK(!strcmp(buf, want));
    if (strcmp(buf, want)) printf("  got %s\n", buf);
    pdi_attrs_format(R.r[1].op, &R.r[1].a, buf, sizeof buf);
    PT_CHECK(strstr(buf, "offset=4292,") != NULL); /* 2 * 33 * 65 = 4290 words, 4-aligned */
    recorder_clear(&R);
    pd_scope_end(scope_tok);
    PT_CHECK(pd_live_tensors() == 0);
}

/* ---- slices of the stream ---------------------------------------------- */
/* The [r0:r1, c0:c1] block of a [7, 13] draw of op through `slice`. */
static struct pd_tensor *draw_block(enum pd_op op, const struct pdi_attrs *whole, struct pd_tensor *p, int64_t r0,
                                    int64_t r1, int64_t c0, int64_t c1)
{
    struct pdi_attrs a = *whole;
    struct pdi_ints *sl = op == PD_OP_bernoulli ? &a.bernoulli.slice : &a.uniform.slice;
    *sl = (struct pdi_ints){4, {7, 13, r0, c0}};
    if (op != PD_OP_bernoulli) a.uniform.shape = (struct pdi_ints){2, {r1 - r0, c1 - c0}};
    struct pd_tensor *pb = p ? pd_contiguous(pd_slice(pd_slice(p, 0, r0, r1, 1), 1, c0, c1, 1)) : NULL;
    return redispatch(op, &a, pb);
}

static void test_slices(void)
{
    static const enum pd_op ops[] = {PD_OP_uniform, PD_OP_normal, PD_OP_randint, PD_OP_bernoulli};
    int64_t s[2] = {7, 13};
    int bad = 0, n = 0;
    for (int be = -1; be <= PDI_BACKEND_REF; be += 1 + (be == -1)) {
        pdi_force_backend(be);
        for (int k = 0; k < 4; k++) {
            enum pd_op op = ops[k];
            int scope_tok = pd_scope_begin();
            struct pdi_attrs a = {0};
            struct pd_tensor *p = NULL;
            if (op == PD_OP_uniform) a.uniform = (struct pdi_attrs_uniform){.dtype = PD_F32, .low = -1, .high = 2};
            if (op == PD_OP_normal) a.normal = (struct pdi_attrs_normal){.dtype = PD_F64, .mean = 0.5, .std = 3};
            if (op == PD_OP_randint) a.randint = (struct pdi_attrs_randint){.dtype = PD_I64, .low = -100, .high = 1000};
            if (op == PD_OP_bernoulli) {
                a.bernoulli = (struct pdi_attrs_bernoulli){.seed = 99, .offset = 12};
                p = pd_rand(s, 2, PD_F32, NULL);
            } else {
                a.uniform.shape = (struct pdi_ints){2, {7, 13}};
                a.uniform.seed = 99;
                a.uniform.offset = 12;
            }
            struct pd_tensor *full = redispatch(op, &a, p);
            PT_CHECK(full != NULL);
            for (int64_t r0 = 0; r0 <= 7; r0++)
                for (int64_t r1 = r0; r1 <= 7; r1++)
                    for (int64_t c0 = 0; c0 <= 13; c0++)
                        for (int64_t c1 = c0; c1 <= 13; c1++) {
                            int scope_tok2 = pd_scope_begin();
                            struct pd_tensor *blk = draw_block(op, &a, p, r0, r1, c0, c1);
                            struct pd_tensor *want =
                                pd_contiguous(pd_slice(pd_slice(full, 0, r0, r1, 1), 1, c0, c1, 1));
                            if (!pt_same_bits(blk, want)) {
                                if (bad < 5)
                                    printf("slice: %s [%lld:%lld, %lld:%lld] differs (%s)\n", pdi_ops[op].name,
                                           (long long)r0, (long long)r1, (long long)c0, (long long)c1,
                                           blk ? "values" : pd_last_error());
                                bad++;
                            }
                            n++;
                            pd_scope_end(scope_tok2);
                        }
            pd_scope_end(scope_tok);
        }
    }
    pdi_force_backend(-1);
    if (bad) printf("slice: %d of %d blocks differ\n", bad, n);
    PT_CHECK(bad == 0);

    /* long rows (several 1024-element blocks, threads) and 3-d */
    int scope_tok = pd_scope_begin();
    struct pdi_attrs a = {.normal = {.shape = {3, {3, 5, 3001}}, .dtype = PD_F32, .seed = 5, .offset = 4, .std = 1}};
    struct pd_tensor *full = redispatch(PD_OP_normal, &a, NULL);
    a.normal.shape = (struct pdi_ints){3, {2, 3, 2500}};
    a.normal.slice = (struct pdi_ints){6, {3, 5, 3001, 1, 1, 333}};
    struct pd_tensor *want = pd_contiguous(pd_slice(pd_slice(pd_slice(full, 0, 1, 3, 1), 1, 1, 4, 1), 2, 333, 2833, 1));
    PT_CHECK(pt_same_bits(redispatch(PD_OP_normal, &a, NULL), want));
    pdi_force_backend(PDI_BACKEND_REF);
    PT_CHECK(pt_same_bits(redispatch(PD_OP_normal, &a, NULL), want));
    pdi_force_backend(-1);
    /* the slice attribute is checked */
    a.normal.slice = (struct pdi_ints){6, {3, 5, 3001, 2, 1, 333}};
    PT_CHECK(redispatch(PD_OP_normal, &a, NULL) == NULL && strstr(pd_last_error(), "normal: slice: dim 0"));
    a.normal.slice = (struct pdi_ints){4, {3, 5, 1, 1}};
    PT_CHECK(redispatch(PD_OP_normal, &a, NULL) == NULL && strstr(pd_last_error(), "normal: slice has 4 values"));
    pd_clear_error();
    pd_scope_end(scope_tok);
}

/* ---- copy_ and fill_ are ops -------------------------------------------- */
static void test_inplace_ops(void)
{
    struct recorder R = {0};
    int scope_tok = pd_scope_begin();
    struct pd_tensor *t = pd_zeros((int64_t[]){4, 5}, 2, PD_F32);
    struct pd_tensor *col = pd_slice(t, 1, 1, 2, 1);
    uint64_t v0 = t->st->version;
    PT_CHECK(pdi_observer_add(record, &R) == PD_OK);
    PT_CHECK(pd_fill_(col, 2.5) == col);
    PT_CHECK(pd_copy_(t, pd_arange(0, 5, 1, PD_I64)) == t); /* cast and broadcast */
    pdi_observer_remove(record, &R);
    int seen_fill = -1, seen_copy = -1;
    for (int i = 0; i < R.n; i++) {
        if (R.r[i].op == PD_OP_fill_) seen_fill = i;
        if (R.r[i].op == PD_OP_copy_) seen_copy = i;
    }
    PT_CHECK(seen_fill >= 0 && R.r[seen_fill].out == col && R.r[seen_fill].in == col);
    PT_CHECK(seen_fill >= 0 && R.r[seen_fill].a.fill.value == 2.5);
    PT_CHECK(seen_copy > seen_fill && R.r[seen_copy].out == t && R.r[seen_copy].in == t);
    PT_CHECK(t->st->version == v0 + 2); /* one bump per write */
    PT_CHECK(pd_get(t, (int64_t[]){3, 4}) == 4 && pd_get(t, (int64_t[]){2, 1}) == 1);
    /* the creation ops are dispatched too */
    int seen_arange = 0;
    for (int i = 0; i < R.n; i++) seen_arange += R.r[i].op == PD_OP_arange && R.r[i].a.arange.stop == 5;
    PT_CHECK(seen_arange == 1);
    recorder_clear(&R);

    /* autograd: as before, copy_ into a non-leaf keeps its history; a leaf
     * that requires grad and a src that requires grad are refused */
    struct pd_tensor *leaf = pd_requires_grad_(pd_ones((int64_t[]){3}, 1, PD_F32), 1);
    struct pd_tensor *y = pd_scale(leaf, 2);
    PT_CHECK(pd_copy_(y, pd_full((int64_t[]){3}, 1, 7, PD_F32)) == y && y->grad_fn && y->requires_grad);
    PT_CHECK(pd_get(y, (int64_t[]){1}) == 7);
    PT_CHECK(!pd_fill_(leaf, 1) && /* named after fill_ itself (it said "copy_:" before) */
             !strcmp(pd_last_error(), "fill_: a leaf that requires grad cannot be modified in place (use no_grad)"));
    PT_CHECK(!pd_copy_(t, leaf) &&
             !strcmp(pd_last_error(), "copy_: src requires grad; copy under no_grad or use an out-of-place op"));
    struct pd_tensor *mask = pd_bernoulli(leaf, NULL); /* not differentiable */
    PT_CHECK(mask && !mask->requires_grad && !mask->grad_fn);
    /* a mismatched copy_ dispatched directly is refused by infer */
    struct pd_tensor *in[2] = {t, pd_ones((int64_t[]){5}, 1, PD_F32)}, *out[1];
    struct pdi_call c = {.op = PD_OP_copy_, .n_in = 2, .n_out = 1, .in = in, .out = out, .inplace = 1};
    PT_CHECK(pdi_dispatch(&c) != PD_OK && strstr(pd_last_error(), "copy_: src [5] f32 does not match dst [4, 5] f32"));
    pd_clear_error();
    pd_scope_end(scope_tok);
    /* outside every scope nothing leaks (pd_fill_ used to leak its scalar) */
    struct pd_tensor *u = pd_keep(pd_zeros((int64_t[]){2}, 1, PD_F64));
    int64_t live = pd_live_tensors();
    pd_fill_(u, 3);
    PT_CHECK(pd_live_tensors() == live && pd_get(u, (int64_t[]){0}) == 3);
    pd_tensor_release(u);
    PT_CHECK(pd_live_tensors() == 0);
}

/* ---- messages ------------------------------------------------------------ */
#define PT_ERR(expr, msg)                                                                                              \
    do {                                                                                                               \
        pd_clear_error();                                                                                              \
        PT_CHECK((expr) == NULL && !strcmp(pd_last_error(), msg));                                                     \
        if (strcmp(pd_last_error(), msg)) printf("  got \"%s\"\n", pd_last_error());                                   \
    } while (0)

static void test_messages(void)
{
    int64_t s23[2] = {2, 3}, sneg[2] = {2, -1};
    int scope_tok = pd_scope_begin();
    PT_ERR(pd_arange(0, 1, 0, PD_F32), "arange: need finite start/stop and step != 0 (got 0, 1, 0)");
    PT_ERR(pd_arange(0, INFINITY, 1, PD_F32), "arange: need finite start/stop and step != 0 (got 0, inf, 1)");
    PT_ERR(pd_linspace(0, 1, -1, PD_F32), "linspace: num must be >= 0, got -1");
    PT_ERR(pd_linspace(0, 1, 3, (enum pd_dtype)99), "tensor: invalid dtype 99");
    PT_ERR(pd_zeros(sneg, 2, PD_F32), "tensor: negative dimension in shape [2, -1]");
    PT_ERR(pd_zeros(s23, 9, PD_F32), "tensor: ndim 9 outside [0, 8]");
    PT_ERR(pd_zeros(NULL, 2, PD_F32), "tensor: NULL shape with ndim 2");
    PT_ERR(pd_empty(sneg, 2, PD_F32), "tensor: negative dimension in shape [2, -1]");
    PT_ERR(pd_eye(-1, 3, PD_F32), "tensor: negative dimension in shape [-1, 3]");
    PT_ERR(pd_full((int64_t[]){1 << 24, 1 << 24}, 2, 0, PD_F32),
           "tensor: shape [16777216, 16777216] has too many elements");
    PT_ERR(pd_uniform(s23, 2, 0, 1, PD_I32, NULL), "uniform: dtype must be floating, got int32");
    PT_ERR(pd_normal(s23, 2, 0, -1, PD_F32, NULL), "normal: std must be >= 0, got -1");
    PT_ERR(pd_normal(s23, 2, 0, 1, PD_I64, NULL), "normal: dtype must be floating, got int64");
    PT_ERR(pd_randint(s23, 2, 3, 3, PD_I64, NULL), "randint: need lo < hi, got [3, 3)");
    PT_ERR(pd_randint(s23, 2, 0, 3, PD_BOOL, NULL), "randint: dtype must be an integer type, got bool");
    PT_ERR(pd_rand(sneg, 2, PD_F32, NULL), "tensor: negative dimension in shape [2, -1]");
    PT_ERR(pd_bernoulli(pd_zeros(s23, 2, PD_I32), NULL), "bernoulli: p must be floating, got int32");
    /* a failed draw does not advance the generator */
    uint64_t o0, o1;
    pd_generator_get_state(pd_default_generator(), NULL, &o0);
    pd_rand(sneg, 2, PD_F32, NULL);
    pd_generator_get_state(pd_default_generator(), NULL, &o1);
    PT_CHECK(o0 == o1);
    /* replayed calls with bad attributes fail in infer, with the call's name */
    struct pdi_attrs a = {.arange = {.start = 0, .stop = 1, .step = 0, .dtype = PD_F32}};
    PT_CHECK(pdi_calln(PD_OP_arange, NULL, 0, &a) == NULL && strstr(pd_last_error(), ": arange: need finite"));
    a = (struct pdi_attrs){.uniform = {.shape = {1, {4}}, .dtype = PD_I32}};
    PT_CHECK(pdi_calln(PD_OP_uniform, NULL, 0, &a) == NULL &&
             strstr(pd_last_error(), "uniform: dtype int32 is not supported"));
    a = (struct pdi_attrs){.full = {.shape = {1, {-4}}, .dtype = PD_F32}};
    PT_CHECK(pdi_calln(PD_OP_full, NULL, 0, &a) == NULL && strstr(pd_last_error(), "full: shape[0] -4 out of range"));
    pd_clear_error();
    pd_scope_end(scope_tok);
}

/* creation outputs are plain tensors: no history, named after their op */
static void test_autograd_and_names(void)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *z = pd_zeros((int64_t[]){2}, 1, PD_F32);
    PT_CHECK(z && !z->requires_grad && !z->grad_fn);
    char nb[PDI_NAME_BUF];
    PT_CHECK(strstr(pdi_tensor_name_buf(z, nb, sizeof nb), "full_") != NULL);
    struct pd_tensor *r = pd_rand((int64_t[]){2}, 1, PD_F32, NULL);
    PT_CHECK(r && !r->requires_grad && !r->grad_fn);
    /* and a gradient through a graph that uses them is unchanged */
    struct pd_tensor *x = pd_requires_grad_(pd_full((int64_t[]){2}, 1, 3, PD_F32), 1);
    struct pd_tensor *l = pd_sum(pd_mul(x, pd_arange(1, 3, 1, PD_F32)), NULL, 0, 0);
    PT_CHECK(pd_backward(l, NULL, 0) == PD_OK);
    PT_CHECK(pd_tensor_grad(x) && pd_get(pd_tensor_grad(x), (int64_t[]){1}) == 2);
    pd_scope_end(scope_tok);
}

/* Issue 13: a bad pd_randint's message ("ndim 256 outside [0, 8]") was
 * overwritten when its NULL went on into pd_to_buffer ("to_buffer: NULL
 * tensor"). A NULL tensor given to an entry point that is not an op now
 * keeps the message of the call that made it, as ops always did. */
static void test_null_keeps_message(void)
{
    int64_t shape[256];
    for (int i = 0; i < 256; i++) shape[i] = 1;
    char want[256];
    int64_t buf[1];
    struct pd_tensor *t = pd_randint(shape, 256, 0, 10, PD_I64, NULL);
    PT_CHECK(!t && strstr(pd_last_error(), "ndim 256 outside [0, 8]"));
    snprintf(want, sizeof want, "%s", pd_last_error());
    PT_CHECK(pd_to_buffer(t, buf, PD_I64) == PD_ERR_NULL);
    PT_CHECK(!strcmp(pd_last_error(), want));
    PT_CHECK(isnan(pd_item(t)) && isnan(pd_get(t, shape)) && !strcmp(pd_last_error(), want));
    struct pd_tensor_stats st;
    PT_CHECK(pd_tensor_stats(t, &st) == PD_ERR_NULL && !strcmp(pd_last_error(), want));
    PT_CHECK(pd_init_normal_(t, 0, 1, NULL) == PD_ERR_NULL && !strcmp(pd_last_error(), want));
    PT_CHECK(pd_tensor_set_name(t, "x") == PD_ERR_NULL && !strcmp(pd_last_error(), want));
    PT_CHECK(pd_exp(t) == NULL && !strcmp(pd_last_error(), want)); /* ops: as before */
    PT_CHECK(pd_last_status() == PD_ERR_INVALID);
    /* with no earlier error, the NULL itself is named */
    pd_clear_error();
    PT_CHECK(pd_to_buffer(NULL, buf, PD_I64) == PD_ERR_NULL && strstr(pd_last_error(), "to_buffer: NULL tensor"));
}

int main(void)
{
    test_creation_formulas();
    test_random_formulas();
    test_replay();
    test_slices();
    test_inplace_ops();
    test_messages();
    test_autograd_and_names();
    test_null_keeps_message();
    PT_DONE();
}
