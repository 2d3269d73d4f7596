/* paddle.c — CPU kernels of the unary family (every op in ops_unary.def).
 *
 * One kernel walks the operands with pdi_iter (coalesced dims, OpenMP over
 * chunks) and computes each run in one of three domains:
 *   f32  inputs f32/f16/bf16: contiguous f32 runs are computed in place of
 *        the operands; f16/bf16 and strided runs go through L1-sized f32
 *        tiles (converted in vector registers: F16C, bf16 bit tricks);
 *   f64  f64 inputs (libm, same formulas as the reference), integer
 *        scale/add_scalar by a non-integral scalar, and casts that need
 *        more than f32 to round once (anything touching f64/i32/i64);
 *   i64  integer ops and integer<->integer casts, exact, wrapping on store.
 * The f32 math lives in unary_math.h: branch-free polynomial exp/log/tanh/
 * erf that GCC vectorises, so the transcendental ops run at memory speed.
 * Every path writes with ordinary stores, large outputs included. Streaming
 * (non-temporal) stores through an L1 tile, used before for outputs of 16 MB
 * and more, skip the read-for-ownership of the output, but on the Zen 5 bench
 * machine they lost to plain stores whenever the op followed other memory
 * traffic, as it does in any sequence of ops and in bench/bandwidth.c: a 64 MB
 * f32 scale took 4.6 ms tiled and streamed, 4.2 ms with direct 512-bit
 * streaming stores, 3.8 ms with plain stores (glibc memcpy, itself plain
 * stores at this size: 4.0), and exp/sigmoid went from 0.6 to 0.95 of memcpy.
 * Results match the reference kernels (src/kernels/ref/unary.c) within the
 * op-test tolerance; rounding semantics (float -> int truncates toward zero
 * and saturates, NaN -> 0; int -> int wraps) are the same.
 */
#include <math.h>
#include <string.h>
#ifdef __F16C__
#include <immintrin.h>
#endif

#include "core/kernel.h"
#include "kernels/common.h"
#include "kernels/cpu/unary_math.h"

#define TILE 512

/* ---- tile conversions ------------------------------------------------ */
/* LOAD: d[i] = (D)CONV(element i of type T at p with byte stride st) */
#define LOAD_RUN(T, CONV)                                                              \
    do {                                                                               \
        if (st == (int64_t)sizeof(T)) {                                                \
            const T *s_ = (const T *)p;                                                \
            for (int64_t i = 0; i < m; i++) d[i] = CONV(s_[i]);                        \
        } else {                                                                       \
            for (int64_t i = 0; i < m; i++) d[i] = CONV(*(const T *)(p + i * st));     \
        }                                                                              \
    } while (0)
#define STORE_RUN(T, CONV)                                                             \
    do {                                                                               \
        if (st == (int64_t)sizeof(T)) {                                                \
            T *d_ = (T *)p;                                                            \
            for (int64_t i = 0; i < m; i++) d_[i] = CONV(s[i]);                        \
        } else {                                                                       \
            for (int64_t i = 0; i < m; i++) *(T *)(p + i * st) = CONV(s[i]);           \
        }                                                                              \
    } while (0)
#define ID(v) (v)

/* bool bytes other than 0/1 read as true */
static inline float b2f(uint8_t v) { return v != 0; }
static inline int64_t b2i(uint8_t v) { return v != 0; }
static inline uint8_t i2b(int64_t v) { return v != 0; }

static inline float bf16_to_f32(uint16_t h) { return pdi_f32_of_bits((uint32_t)h << 16); }

/* Round to nearest even, NaN stays a quiet NaN: same bits as pd_f32_to_bf16. */
static inline uint16_t f32_to_bf16(float f)
{
    uint32_t u = pdi_bits_of_f32(f);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    uint32_t m = 0u - (uint32_t)((u & 0x7fffffffu) > 0x7f800000u);
    return (uint16_t)((nan & m) | (r & ~m));
}

static void load_f16(float *d, const char *p, int64_t st, int64_t m)
{
    int64_t i = 0;
#ifdef __F16C__
    if (st == 2)
        for (; i + 8 <= m; i += 8)
            _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + i * 2))));
#endif
#ifdef __F16C__
    for (; i < m; i++) d[i] = _cvtsh_ss(*(const uint16_t *)(p + i * st));
#else
    for (; i < m; i++) d[i] = pd_f16_to_f32(*(const uint16_t *)(p + i * st));
#endif
}

static void store_f16(char *p, int64_t st, const float *s, int64_t m)
{
    int64_t i = 0;
#ifdef __F16C__
    if (st == 2)
        for (; i + 8 <= m; i += 8)
            _mm_storeu_si128((__m128i *)(p + i * 2), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#endif
#ifdef __F16C__
    for (; i < m; i++) *(uint16_t *)(p + i * st) = _cvtss_sh(s[i], _MM_FROUND_TO_NEAREST_INT);
#else
    for (; i < m; i++) *(uint16_t *)(p + i * st) = pd_f32_to_f16(s[i]);
#endif
}

static void load_f32(float *d, const char *p, int64_t st, enum pd_dtype dt, int64_t m)
{
    switch (dt) {
    case PD_F32: LOAD_RUN(float, ID); break;
    case PD_F64: LOAD_RUN(double, (float)); break;
    case PD_F16: load_f16(d, p, st, m); break;
    case PD_BF16: LOAD_RUN(uint16_t, bf16_to_f32); break;
    case PD_I8: LOAD_RUN(int8_t, (float)); break;
    case PD_U8: LOAD_RUN(uint8_t, (float)); break;
    case PD_I16: LOAD_RUN(int16_t, (float)); break;
    case PD_I32: LOAD_RUN(int32_t, (float)); break;
    case PD_I64: LOAD_RUN(int64_t, (float)); break;
    case PD_BOOL: LOAD_RUN(uint8_t, b2f); break;
    default: break;
    }
}

/* float -> small int: NaN -> 0, truncate toward zero, saturate. */
#define SAT_F32(lo, hi) (pdi_vsel(v_ != v_, 0.0f, pdi_vsel(v_ < (lo), (lo), pdi_vsel(v_ > (hi), (hi), v_))))
static inline int8_t f32_i8(float v_) { return (int8_t)(int32_t)SAT_F32(-128.0f, 127.0f); }
static inline uint8_t f32_u8(float v_) { return (uint8_t)(int32_t)SAT_F32(0.0f, 255.0f); }
static inline int16_t f32_i16(float v_) { return (int16_t)(int32_t)SAT_F32(-32768.0f, 32767.0f); }
static inline uint8_t f32_bool(float v) { return v != 0.0f; }

static void store_f32(char *p, int64_t st, enum pd_dtype dt, const float *s, int64_t m)
{
    switch (dt) {
    case PD_F32: STORE_RUN(float, ID); break;
    case PD_F64: STORE_RUN(double, (double)); break;
    case PD_F16: store_f16(p, st, s, m); break;
    case PD_BF16: STORE_RUN(uint16_t, f32_to_bf16); break;
    case PD_I8: STORE_RUN(int8_t, f32_i8); break;
    case PD_U8: STORE_RUN(uint8_t, f32_u8); break;
    case PD_I16: STORE_RUN(int16_t, f32_i16); break;
    case PD_BOOL: STORE_RUN(uint8_t, f32_bool); break;
    default: /* i32/i64 are never stored from the f32 domain */
        for (int64_t i = 0; i < m; i++) pdi_store(p + i * st, dt, s[i]);
        break;
    }
}

static void load_f64(double *d, const char *p, int64_t st, enum pd_dtype dt, int64_t m)
{
    switch (dt) {
    case PD_F64: LOAD_RUN(double, ID); break;
    case PD_F32: LOAD_RUN(float, (double)); break;
    case PD_F16: LOAD_RUN(uint16_t, (double)pd_f16_to_f32); break;
    case PD_BF16: LOAD_RUN(uint16_t, (double)bf16_to_f32); break;
    case PD_I8: LOAD_RUN(int8_t, (double)); break;
    case PD_U8: LOAD_RUN(uint8_t, (double)); break;
    case PD_I16: LOAD_RUN(int16_t, (double)); break;
    case PD_I32: LOAD_RUN(int32_t, (double)); break;
    case PD_I64: LOAD_RUN(int64_t, (double)); break;
    case PD_BOOL: LOAD_RUN(uint8_t, (double)b2f); break;
    default: break;
    }
}

static void store_f64(char *p, int64_t st, enum pd_dtype dt, const double *s, int64_t m)
{
    switch (dt) {
    case PD_F64: STORE_RUN(double, ID); break;
    case PD_F32: STORE_RUN(float, (float)); break;
    default: /* ints saturate, f16/bf16 round once from the double */
        for (int64_t i = 0; i < m; i++) pdi_store(p + i * st, dt, s[i]);
        break;
    }
}

static void load_i64(int64_t *d, const char *p, int64_t st, enum pd_dtype dt, int64_t m)
{
    switch (dt) {
    case PD_I8: LOAD_RUN(int8_t, (int64_t)); break;
    case PD_U8: LOAD_RUN(uint8_t, (int64_t)); break;
    case PD_I16: LOAD_RUN(int16_t, (int64_t)); break;
    case PD_I32: LOAD_RUN(int32_t, (int64_t)); break;
    case PD_I64: LOAD_RUN(int64_t, ID); break;
    case PD_BOOL: LOAD_RUN(uint8_t, b2i); break;
    default: break;
    }
}

/* Two's complement wrap (keep the low bits); bool is != 0. */
static void store_i64(char *p, int64_t st, enum pd_dtype dt, const int64_t *s, int64_t m)
{
    switch (dt) {
    case PD_I8: STORE_RUN(int8_t, (int8_t)); break;
    case PD_U8: STORE_RUN(uint8_t, (uint8_t)); break;
    case PD_I16: STORE_RUN(int16_t, (int16_t)); break;
    case PD_I32: STORE_RUN(int32_t, (int32_t)); break;
    case PD_I64: STORE_RUN(int64_t, ID); break;
    case PD_BOOL: STORE_RUN(uint8_t, i2b); break;
    default: break;
    }
}

/* ---- per-domain math ------------------------------------------------- */
struct uctx {
    enum pd_op op;
    enum pd_dtype xt, yt;
    const struct pdi_attrs *a;
    double p[2];      /* the op's scalar attributes (op_params) */
    int64_t clo, chi; /* integer clip bounds, inside the dtype */
};

/* The scalar attributes of op, read from its set by name, as the two
 * parameters the per-domain math uses: negative_slope, alpha, exponent,
 * s or value in p[0]; softplus (beta, threshold) and clip (lo, hi) in both. */
static void op_params(enum pd_op op, const struct pdi_attrs *a, double *p)
{
    switch (op) {
    case PD_OP_leaky_relu: p[0] = a->leaky_relu.negative_slope; break;
    case PD_OP_elu: p[0] = a->elu.alpha; break;
    case PD_OP_softplus: p[0] = a->softplus.beta; p[1] = a->softplus.threshold; break;
    case PD_OP_clip: p[0] = a->clip.lo; p[1] = a->clip.hi; break;
    case PD_OP_pow_scalar: p[0] = a->pow_scalar.exponent; break;
    case PD_OP_scale: p[0] = a->scale.s; break;
    case PD_OP_add_scalar: p[0] = a->add_scalar.value; break;
    default: break;
    }
}

#define MAP(expr)                                                      \
    do {                                                               \
        for (int64_t i = 0; i < m; i++) { float v = x[i]; (void)v; y[i] = (expr); } \
    } while (0)

/* sin/cos/tan: the vector formula when every |x| <= 8192 (one cheap
 * vectorised test per run), else element by element with libm for the
 * rest (inf, NaN, huge arguments need a full-precision reduction). */
static void trig_f32(enum pd_op op, float *y, const float *x, int64_t m)
{
    int out = 0;
    for (int64_t i = 0; i < m; i++) out |= !pdi_vtrig_in_range(x[i]);
    if (out) {
        for (int64_t i = 0; i < m; i++) {
            float v = x[i];
            int in = pdi_vtrig_in_range(v);
            y[i] = op == PD_OP_sin ? (in ? pdi_vsincosf(v, 0) : sinf(v))
                   : op == PD_OP_cos ? (in ? pdi_vsincosf(v, 1) : cosf(v))
                   : (in ? pdi_vsincosf(v, 0) / pdi_vsincosf(v, 1) : tanf(v));
        }
        return;
    }
    if (op == PD_OP_sin) for (int64_t i = 0; i < m; i++) y[i] = pdi_vsincosf(x[i], 0);
    else if (op == PD_OP_cos) for (int64_t i = 0; i < m; i++) y[i] = pdi_vsincosf(x[i], 1);
    else for (int64_t i = 0; i < m; i++) y[i] = pdi_vsincosf(x[i], 0) / pdi_vsincosf(x[i], 1);
}

static void f32_apply(const struct uctx *c, float *y, const float *x, int64_t m)
{
    const double *f = c->p;
    float f0 = (float)f[0], f1 = (float)f[1];
    switch (c->op) {
    case PD_OP_neg: MAP(-v); break;
    case PD_OP_abs: MAP(fabsf(v)); break;
    case PD_OP_sign: MAP(pdi_vsel(v > 0.0f, 1.0f, pdi_vsel(v < 0.0f, -1.0f, v))); break;
    case PD_OP_exp: pdi_vexpf_run(y, x, m); break;
    case PD_OP_expm1: MAP(pdi_vexpm1f(v)); break;
    case PD_OP_log: MAP(pdi_vlogf(v)); break;
    case PD_OP_log1p: MAP(pdi_vlog1pf(v)); break;
    case PD_OP_log2: MAP(pdi_vlog2f(v)); break;
    case PD_OP_sqrt: MAP(sqrtf(v)); break;
    case PD_OP_rsqrt: MAP(1.0f / sqrtf(v)); break;
    case PD_OP_square: MAP(v * v); break;
    case PD_OP_reciprocal: MAP(1.0f / v); break;
    case PD_OP_sin:
    case PD_OP_cos:
    case PD_OP_tan: trig_f32(c->op, y, x, m); break;
    case PD_OP_tanh: MAP(pdi_vtanhf(v)); break;
    case PD_OP_sigmoid: pdi_vsigmoidf_run(y, x, m); break;
    case PD_OP_relu: MAP(pdi_vsel(v > 0.0f || v != v, v, 0.0f)); break; /* NaN stays, -0 -> +0 */
    case PD_OP_leaky_relu: MAP(pdi_vsel(v > 0.0f, v, v * f0)); break;
    case PD_OP_elu: MAP(pdi_vsel(v > 0.0f, v, f0 * pdi_vexpm1f(v))); break;
    case PD_OP_gelu:
        if (c->a->gelu.approximate == 0) MAP(pdi_vgelu_erff(v));
        else MAP(pdi_vgelu_tanhf(v));
        break;
    case PD_OP_silu: MAP(pdi_vsiluf(v)); break;
    case PD_OP_softplus: {
        float inv = (float)(1.0 / f[0]);
        MAP(pdi_vsoftplusf(v, f0, inv, f1));
        break;
    }
    case PD_OP_mish: MAP(pdi_vmishf(v)); break;
    case PD_OP_erf: MAP(pdi_verff(v)); break;
    case PD_OP_floor: MAP(pdi_vfloorf(v)); break;
    case PD_OP_ceil: MAP(pdi_vceilf(v)); break;
    case PD_OP_round: MAP(rintf(v)); break; /* default mode: half to even */
    case PD_OP_trunc: MAP(pdi_vtruncf(v)); break;
    case PD_OP_clip: /* lo > hi gives hi, like PyTorch; NaN stays NaN */
        for (int64_t i = 0; i < m; i++) {
            float r = pdi_vsel(x[i] < f0, f0, x[i]);
            y[i] = pdi_vsel(r > f1, f1, r);
        }
        break;
    case PD_OP_pow_scalar:
        if (f[0] == 2) MAP(v * v);
        else if (f[0] == 1) MAP(v);
        else if (f[0] == 0) MAP(1.0f);
        else if (f[0] == 0.5) MAP(pdi_vsel(v == -INFINITY, INFINITY, sqrtf(v))); /* C pow at -inf */
        else if (f[0] == -1) MAP(1.0f / v);
        else if (f[0] == -0.5) MAP(pdi_vsel(v == -INFINITY || v == 0.0f, 1.0f / fabsf(v), 1.0f / sqrtf(v)));
        else if (f[0] == 3) MAP(v * v * v);
        else MAP(powf(v, f0));
        break;
    case PD_OP_scale: MAP(v * f0); break;
    case PD_OP_add_scalar: MAP(v + f0); break;
    default: MAP(v); break; /* cast */
    }
}

#define MAPD(expr)                                                      \
    do {                                                                \
        for (int64_t i = 0; i < m; i++) { double v = x[i]; y[i] = (expr); } \
    } while (0)

static void f64_apply(const struct uctx *c, double *y, const double *x, int64_t m)
{
    double f0 = c->p[0], f1 = c->p[1];
    switch (c->op) {
    case PD_OP_neg: MAPD(-v); break;
    case PD_OP_abs: MAPD(fabs(v)); break;
    case PD_OP_sqrt: MAPD(sqrt(v)); break;
    case PD_OP_rsqrt: MAPD(1.0 / sqrt(v)); break;
    case PD_OP_square: MAPD(v * v); break;
    case PD_OP_reciprocal: MAPD(1.0 / v); break;
    case PD_OP_relu: MAPD(v > 0 || v != v ? v : 0.0); break;
    case PD_OP_clip: {
        for (int64_t i = 0; i < m; i++) {
            double r = x[i] < f0 ? f0 : x[i];
            y[i] = r > f1 ? f1 : r;
        }
        break;
    }
    case PD_OP_scale: MAPD(v * f0); break;
    case PD_OP_add_scalar: MAPD(v + f0); break;
    case PD_OP_cast: MAPD(v); break;
    default: MAPD(pdi_unary_ref_op(c->op, v, c->a)) /* f64 math is libm's either way */; break;
    }
}

static int64_t wrapi(uint64_t u) { int64_t r; memcpy(&r, &u, sizeof r); return r; }

/* Is s an integer small enough that x*s / x+s can be done in int64? */
static int integral_scalar(double s) { return s == floor(s) && fabs(s) <= 0x1p62; }

static void i64_apply(const struct uctx *c, int64_t *y, const int64_t *x, int64_t m)
{
    /* scale/add_scalar reach here only with an integral |s| <= 2^62 */
    int64_t s = integral_scalar(c->p[0]) ? (int64_t)c->p[0] : 0, lo = c->clo, hi = c->chi;
    switch (c->op) {
    case PD_OP_neg: for (int64_t i = 0; i < m; i++) y[i] = wrapi(0u - (uint64_t)x[i]); break;
    case PD_OP_abs: for (int64_t i = 0; i < m; i++) y[i] = x[i] < 0 ? wrapi(0u - (uint64_t)x[i]) : x[i]; break;
    case PD_OP_sign: for (int64_t i = 0; i < m; i++) y[i] = (x[i] > 0) - (x[i] < 0); break;
    case PD_OP_square: for (int64_t i = 0; i < m; i++) y[i] = wrapi((uint64_t)x[i] * (uint64_t)x[i]); break;
    case PD_OP_relu: for (int64_t i = 0; i < m; i++) y[i] = x[i] > 0 ? x[i] : 0; break;
    case PD_OP_clip:
        for (int64_t i = 0; i < m; i++) {
            int64_t r = x[i] < lo ? lo : x[i];
            y[i] = r > hi ? hi : r;
        }
        break;
    case PD_OP_scale: for (int64_t i = 0; i < m; i++) y[i] = wrapi((uint64_t)x[i] * (uint64_t)s); break;
    case PD_OP_add_scalar: for (int64_t i = 0; i < m; i++) y[i] = wrapi((uint64_t)x[i] + (uint64_t)s); break;
    default: if (y != x) memcpy(y, x, sizeof *y * (size_t)m); break; /* floor/ceil/round/trunc, cast */
    }
}

/* ---- runs ------------------------------------------------------------ */
/* p[0] = out, p[1] = in; st in bytes. */
static void run_f32(char **p, const int64_t *st, int64_t n, void *vc)
{
    const struct uctx *c = vc;
    int xd = c->xt == PD_F32 && st[1] == 4, yd = c->yt == PD_F32 && st[0] == 4;
    if (xd && yd) { f32_apply(c, (float *)p[0], (const float *)p[1], n); return; }
    float xb[TILE], yb[TILE];
    for (int64_t i0 = 0; i0 < n; i0 += TILE) {
        int64_t m = n - i0 < TILE ? n - i0 : TILE;
        const float *xs = xb;
        if (xd) xs = (const float *)p[1] + i0;
        else load_f32(xb, p[1] + i0 * st[1], st[1], c->xt, m);
        float *ys = yd ? (float *)p[0] + i0 : yb;
        if (c->op == PD_OP_cast && !yd) ys = (float *)xs; /* a cast only converts */
        else f32_apply(c, ys, xs, m);
        if (!yd) store_f32(p[0] + i0 * st[0], st[0], c->yt, ys, m);
    }
}

static void run_f64(char **p, const int64_t *st, int64_t n, void *vc)
{
    const struct uctx *c = vc;
    int xd = c->xt == PD_F64 && st[1] == 8, yd = c->yt == PD_F64 && st[0] == 8;
    if (xd && yd) { f64_apply(c, (double *)p[0], (const double *)p[1], n); return; }
    double xb[TILE], yb[TILE];
    for (int64_t i0 = 0; i0 < n; i0 += TILE) {
        int64_t m = n - i0 < TILE ? n - i0 : TILE;
        const double *xs = xb;
        if (xd) xs = (const double *)p[1] + i0;
        else load_f64(xb, p[1] + i0 * st[1], st[1], c->xt, m);
        double *ys = yd ? (double *)p[0] + i0 : yb;
        if (c->op == PD_OP_cast && !yd) ys = (double *)xs;
        else f64_apply(c, ys, xs, m);
        if (!yd) store_f64(p[0] + i0 * st[0], st[0], c->yt, ys, m);
    }
}

static void run_i64(char **p, const int64_t *st, int64_t n, void *vc)
{
    const struct uctx *c = vc;
    int64_t xb[TILE];
    for (int64_t i0 = 0; i0 < n; i0 += TILE) {
        int64_t m = n - i0 < TILE ? n - i0 : TILE;
        load_i64(xb, p[1] + i0 * st[1], st[1], c->xt, m);
        i64_apply(c, xb, xb, m);
        store_i64(p[0] + i0 * st[0], st[0], c->yt, xb, m);
    }
}

/* logical_not, isnan, isinf, isfinite: bool out for any input. */
static void run_bool(char **p, const int64_t *st, int64_t n, void *vc)
{
    const struct uctx *c = vc;
    enum pd_op op = c->op;
    for (int64_t i0 = 0; i0 < n; i0 += TILE) {
        int64_t m = n - i0 < TILE ? n - i0 : TILE;
        uint8_t yb[TILE];
        uint8_t *y = st[0] == 1 ? (uint8_t *)p[0] + i0 : yb;
        if (c->xt == PD_F64) {
            double xb[TILE];
            load_f64(xb, p[1] + i0 * st[1], st[1], c->xt, m);
            for (int64_t i = 0; i < m; i++) {
                double v = xb[i];
                y[i] = op == PD_OP_logical_not ? v == 0 : op == PD_OP_isnan ? v != v
                       : op == PD_OP_isinf ? fabs(v) == INFINITY : fabs(v) < INFINITY;
            }
        } else if (pd_dtype_is_float(c->xt)) {
            float tb[TILE];
            const float *x = tb;
            if (c->xt == PD_F32 && st[1] == 4) x = (const float *)p[1] + i0;
            else load_f32(tb, p[1] + i0 * st[1], st[1], c->xt, m);
            switch (op) {
            case PD_OP_logical_not: for (int64_t i = 0; i < m; i++) y[i] = x[i] == 0.0f; break;
            case PD_OP_isnan: for (int64_t i = 0; i < m; i++) y[i] = x[i] != x[i]; break;
            case PD_OP_isinf: for (int64_t i = 0; i < m; i++) y[i] = fabsf(x[i]) == INFINITY; break;
            default: for (int64_t i = 0; i < m; i++) y[i] = fabsf(x[i]) < INFINITY; break;
            }
        } else {
            int64_t xb[TILE];
            load_i64(xb, p[1] + i0 * st[1], st[1], c->xt, m);
            for (int64_t i = 0; i < m; i++)
                y[i] = op == PD_OP_logical_not ? xb[i] == 0 : op == PD_OP_isfinite;
        }
        if (y == yb)
            for (int64_t i = 0; i < m; i++) *(uint8_t *)(p[0] + (i0 + i) * st[0]) = yb[i];
    }
}

/* ---- the kernel ------------------------------------------------------ */

static void int_range(enum pd_dtype dt, double *lo, double *hi)
{
    switch (dt) {
    case PD_I8: *lo = -128; *hi = 127; break;
    case PD_U8: *lo = 0; *hi = 255; break;
    case PD_I16: *lo = -32768; *hi = 32767; break;
    case PD_I32: *lo = -2147483648.0; *hi = 2147483647.0; break;
    default: *lo = -9223372036854775808.0; *hi = 9223372036854774784.0; break;
    }
}

static int cpu_unary(const struct pdi_kcall *k)
{
    struct pd_kview y = k->out[0], x = k->in[0];
    struct pd_kview *ops[2] = {&y, &x};
    struct uctx c = {k->op, x.dtype, y.dtype, k->a, {0, 0}, 0, 0};
    op_params(k->op, k->a, c.p);
    pdi_iter_fn fn;
    int xf = pd_dtype_is_float(x.dtype), yf = pd_dtype_is_float(y.dtype);
    if (k->op == PD_OP_logical_not || k->op == PD_OP_isnan || k->op == PD_OP_isinf || k->op == PD_OP_isfinite) {
        fn = run_bool;
    } else if (k->op == PD_OP_cast) {
        if (x.dtype == y.dtype) fn = xf ? (x.dtype == PD_F64 ? run_f64 : run_f32) : run_i64;
        else if (!xf && !yf) fn = run_i64;
        else if (x.dtype == PD_F64 || y.dtype == PD_F64 || x.dtype == PD_I32 || x.dtype == PD_I64 ||
                 y.dtype == PD_I32 || y.dtype == PD_I64)
            fn = run_f64; /* rounds once, like the reference */
        else fn = run_f32;
    } else if (xf) {
        fn = x.dtype == PD_F64 ? run_f64 : run_f32;
    } else if ((k->op == PD_OP_scale || k->op == PD_OP_add_scalar) && !integral_scalar(c.p[0])) {
        fn = run_f64; /* x * 0.5 on integers: through double, truncating */
    } else {
        double dlo, dhi;
        int_range(y.dtype, &dlo, &dhi);
        c.clo = (int64_t)fmin(fmax(ceil(c.p[0]), dlo), dhi);
        c.chi = (int64_t)fmax(fmin(floor(c.p[1]), dhi), dlo);
        fn = run_i64;
    }
    pdi_iter(2, ops, y.shape, y.ndim, fn, &c);
    return PD_OK;
}

/* One kernel for every unary op and every dtype of its class. */
void pdi_register_cpu_unary(void)
{
    for (size_t i = 0; i < PDI_COUNT_OF(pdi_unary_ops); i++)
        pdi_register_by_class(PDI_BACKEND_CPU, pdi_unary_ops[i], cpu_unary, cpu_unary, cpu_unary);
}
