/* paddle.c — CPU kernels for the binary family: arithmetic, comparisons,
 * logic and where, for every dtype.
 *
 * Shape: pdi_iter walks the (broadcast) operands [out, a, b] and hands each
 * run to a run function with per-operand inner byte strides. Each run
 * function has three vectorised paths — all contiguous, b a scalar (stride
 * 0), a a scalar — and a strided fallback; the row broadcast [N, C] + [C]
 * arrives as N contiguous runs of C.
 *
 * Aliasing: pd_add_/pd_mul_ run these kernels with out == in[0] (same
 * view). Every path reads element i before writing element i and never
 * reads ahead of what it wrote, so that is safe; `omp simd` asserts only the
 * absence of loop-carried dependences, which same-index aliasing is not.
 *
 * Low precision is computed in f32 and rounded once (RNE, like
 * pd_f32_to_bf16/pd_f32_to_f16): bf16 converts in registers inside the
 * same loops (a shift in, a rounding add out); f16 converts blocks of BLK
 * elements with F16C and runs the f32 function on them.
 *
 * Integer semantics match src/kernels/ref/binary.c (see its header): wrap
 * around, floor_divide(a, 0) = remainder(a, 0) = 0, no trap on MIN / -1.
 */
#include <math.h>
#include <string.h>
#ifdef __F16C__
#include <immintrin.h>
#endif

#include "core/kernel.h"

typedef pdi_iter_fn run_fn; /* a run of pdi_iter */

/* out[i] = ST(EXPR(x, y)) for x = LD(a[i]), y = LD(b[i]): inputs stored as
 * T, computed as CT, stored as TO. LD/ST convert (bf16 <-> f32 in
 * registers) or are ID. */
#define ID(v) (v)
#define RUN2X(name, T, CT, TO, LD, ST, EXPR)                                                    \
    static void name(char **p, const int64_t *st, int64_t n, void *ctx)                          \
    {                                                                                            \
        (void)ctx;                                                                               \
        TO *o = (TO *)p[0];                                                                      \
        const T *a = (const T *)p[1], *b = (const T *)p[2];                                      \
        const int64_t es = (int64_t)sizeof(T), eo = (int64_t)sizeof(TO);                         \
        if (st[0] == eo && st[1] == es && st[2] == es) {                                         \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                \
                const CT x = LD(a[i]), y = LD(b[i]);                                             \
                o[i] = (TO)ST(EXPR);                                                             \
            }                                                                                    \
        } else if (st[0] == eo && st[1] == es && st[2] == 0) {                                   \
            const CT y = LD(b[0]);                                                               \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                \
                const CT x = LD(a[i]);                                                           \
                o[i] = (TO)ST(EXPR);                                                             \
            }                                                                                    \
        } else if (st[0] == eo && st[1] == 0 && st[2] == es) {                                   \
            const CT x = LD(a[0]);                                                               \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                \
                const CT y = LD(b[i]);                                                           \
                o[i] = (TO)ST(EXPR);                                                             \
            }                                                                                    \
        } else {                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                    \
                const CT x = LD(*(const T *)((const char *)a + i * st[1]));                      \
                const CT y = LD(*(const T *)((const char *)b + i * st[2]));                      \
                *(TO *)((char *)o + i * st[0]) = (TO)ST(EXPR);                                   \
            }                                                                                    \
        }                                                                                        \
    }
#define RUN2(name, T, TO, EXPR) RUN2X(name, T, T, TO, ID, ID, EXPR)

/* ---- scalar helpers ---------------------------------------------------- */
/* Python semantics: the remainder takes the sign of the divisor; floor
 * division is PyTorch's div_floor (a - mod is an exact multiple of b). */
#define DEF_FLOAT_HELPERS(T, SFX, FMOD, FLOOR, COPYSIGN)                \
    static inline T rem_##SFX(T a, T b)                                  \
    {                                                                    \
        T m = FMOD(a, b);                                                \
        if (m != 0 && (b < 0) != (m < 0)) m += b;                        \
        return m;                                                        \
    }                                                                    \
    static inline T floordiv_##SFX(T a, T b)                             \
    {                                                                    \
        if (b == 0) return a / b;                                        \
        T m = FMOD(a, b);                                                \
        T d = (a - m) / b;                                               \
        if (m != 0 && (b < 0) != (m < 0)) d -= 1;                        \
        if (d == 0) return COPYSIGN((T)0, a / b);                        \
        T f = FLOOR(d);                                                  \
        return d - f > (T)0.5 ? f + 1 : f;                               \
    }
DEF_FLOAT_HELPERS(float, f, fmodf, floorf, copysignf)
DEF_FLOAT_HELPERS(double, d, fmod, floor, copysign)

#define FPOW(x, y) _Generic((x), float: powf, double: pow)(x, y)
#define FATAN2(x, y) _Generic((x), float: atan2f, double: atan2)(x, y)
#define FREM(x, y) _Generic((x), float: rem_f, double: rem_d)(x, y)
#define FFLOORDIV(x, y) _Generic((x), float: floordiv_f, double: floordiv_d)(x, y)

/* Integers, computed in int64 and truncated by the caller (wrap-around). */
static inline int64_t ifloordiv(int64_t a, int64_t b)
{
    if (b == 0) return 0;                          /* defined, not a trap */
    if (b == -1) return (int64_t)(0 - (uint64_t)a); /* INT64_MIN / -1 wraps */
    int64_t q = a / b, r = a % b;
    return (r != 0 && (r < 0) != (b < 0)) ? q - 1 : q;
}

static inline int64_t irem(int64_t a, int64_t b)
{
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}

/* a^b mod 2^64; negative exponents give the integer part of the real power. */
static inline int64_t ipow(int64_t a, int64_t b)
{
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)a;
    for (; b; b >>= 1) {
        if (b & 1) r *= x;
        x *= x;
    }
    return (int64_t)r;
}

/* ---- run functions ----------------------------------------------------- */
/* NaN propagates through maximum/minimum like torch.maximum. */
#define FLOAT_OPS(X)                                                                                       \
    X(add, x + y) X(sub, x - y) X(mul, x * y) X(div, x / y) X(pow, FPOW(x, y))                             \
    X(maximum, (x > y || x != x) ? x : y) X(minimum, (x < y || x != x) ? x : y) X(remainder, FREM(x, y)) \
    X(floor_divide, FFLOORDIV(x, y)) X(atan2, FATAN2(x, y))
#define GEN_F32(op, e) RUN2(run_##op##_f32, float, float, e)
#define GEN_F64(op, e) RUN2(run_##op##_f64, double, double, e)
#define GEN_BF16(op, e) RUN2X(run_##op##_bf16, uint16_t, float, uint16_t, pdi_bf16_f32, pdi_f32_bf16, e)
FLOAT_OPS(GEN_F32)
FLOAT_OPS(GEN_F64)
FLOAT_OPS(GEN_BF16)

/* add/sub/mul wrap through an unsigned type (signed overflow is UB in C). */
#define INT_OPS(X, T, UT, SFX)                                                                   \
    X(add, T, SFX, (T)((UT)x + (UT)y)) X(sub, T, SFX, (T)((UT)x - (UT)y))                         \
    X(mul, T, SFX, (T)((UT)x * (UT)y)) X(pow, T, SFX, (T)ipow(x, y)) X(maximum, T, SFX, x > y ? x : y) \
    X(minimum, T, SFX, x < y ? x : y) X(remainder, T, SFX, (T)irem(x, y))                        \
    X(floor_divide, T, SFX, (T)ifloordiv(x, y))
/* UT is at least as wide as unsigned int: a uint16_t operand would promote
 * to int, and 65535 * 65535 overflows int. */
#define INT_TYPES(X) \
    X(int8_t, uint32_t, i8) X(uint8_t, uint32_t, u8) X(int16_t, uint32_t, i16) X(int32_t, uint32_t, i32) X(int64_t, uint64_t, i64)
#define GEN_INT_OP(op, T, SFX, e) RUN2(run_##op##_##SFX, T, T, e)
#define GEN_INT_TYPE(T, UT, SFX) INT_OPS(GEN_INT_OP, T, UT, SFX)
INT_TYPES(GEN_INT_TYPE)

/* bool (0/1 bytes): add and maximum are "or", mul and minimum "and". */
RUN2(run_or_b, uint8_t, uint8_t, x | y)
RUN2(run_and_b, uint8_t, uint8_t, x & y)

/* Comparisons: every dtype; bool compares as u8, f16/bf16 in f32. */
#define CMP_OPS(X, T, SFX) \
    X(eq, T, SFX, x == y) X(ne, T, SFX, x != y) X(lt, T, SFX, x < y) X(le, T, SFX, x <= y) X(gt, T, SFX, x > y) X(ge, T, SFX, x >= y)
#define CMP_TYPES(X) \
    X(float, f32) X(double, f64) X(int8_t, i8) X(uint8_t, u8) X(int16_t, i16) X(int32_t, i32) X(int64_t, i64)
#define GEN_CMP_OP(op, T, SFX, e) RUN2(run_##op##_##SFX, T, uint8_t, e)
#define GEN_CMP_TYPE(T, SFX) CMP_OPS(GEN_CMP_OP, T, SFX)
CMP_TYPES(GEN_CMP_TYPE)
#define GEN_CMP_BF16(op, T, SFX, e) RUN2X(run_##op##_bf16, uint16_t, float, uint8_t, pdi_bf16_f32, ID, e)
CMP_OPS(GEN_CMP_BF16, float, bf16)

/* Logic on "nonzero": -0.0 is zero, NaN is not; f16/bf16 test their bits. */
#define NZ_NUM(v) ((v) != 0)
#define NZ_HALF(v) (((v) & 0x7fffu) != 0)
#define LOGIC_OPS(X, T, SFX, NZ) \
    X(logical_and, T, SFX, NZ(x) & NZ(y)) X(logical_or, T, SFX, NZ(x) | NZ(y)) X(logical_xor, T, SFX, NZ(x) ^ NZ(y))
#define GEN_LOGIC_OP(op, T, SFX, e) RUN2(run_##op##_##SFX, T, uint8_t, e)
#define LOGIC_TYPES(X) \
    X(float, f32, NZ_NUM) X(double, f64, NZ_NUM) X(uint16_t, h, NZ_HALF) X(int8_t, i8, NZ_NUM) X(uint8_t, u8, NZ_NUM) \
    X(int16_t, i16, NZ_NUM) X(int32_t, i32, NZ_NUM) X(int64_t, i64, NZ_NUM)
#define GEN_LOGIC_TYPE(T, SFX, NZ) LOGIC_OPS(GEN_LOGIC_OP, T, SFX, NZ)
LOGIC_TYPES(GEN_LOGIC_TYPE)

/* ---- f16 through f32 blocks (F16C converts 8 at a time) --------------- */
#define BLK 256

#ifdef __F16C__
static inline float f16_f32(uint16_t h) { return _cvtsh_ss(h); }
static inline uint16_t f32_f16(float f) { return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
#else
static inline float f16_f32(uint16_t h) { return pd_f16_to_f32(h); }
static inline uint16_t f32_f16(float f) { return pd_f32_to_f16(f); }
#endif

/* m f16 elements at byte stride st (2 = contiguous) into dst. */
static void f16_load(float *dst, const char *src, int64_t st, int64_t m)
{
    int64_t i = 0;
#ifdef __F16C__
    if (st == 2)
        for (; i + 8 <= m; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + 2 * i))));
#endif
    for (; i < m; i++) dst[i] = f16_f32(*(const uint16_t *)(src + i * st));
}

static void f16_store(char *dst, int64_t st, const float *src, int64_t m)
{
    int64_t i = 0;
#ifdef __F16C__
    if (st == 2)
        for (; i + 8 <= m; i += 8)
            _mm_storeu_si128((__m128i *)(dst + 2 * i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < m; i++) *(uint16_t *)(dst + i * st) = f32_f16(src[i]);
}

struct f16_ctx {
    run_fn f32;   /* the f32 run function doing the work */
    int out_f16;  /* out is f16 (arithmetic) rather than bool */
};

/* Converts a block of each input, runs the f32 function on it and rounds
 * the block back. In place (out == a) is safe: a block is read whole
 * before it is written. */
static void f16_run(char **p, const int64_t *st, int64_t n, void *vctx)
{
    const struct f16_ctx *c = vctx;
    float buf[3][BLK];
    for (int64_t i0 = 0; i0 < n; i0 += BLK) {
        int64_t m = n - i0 < BLK ? n - i0 : BLK;
        char *q[3];
        int64_t qs[3];
        for (int k = 1; k < 3; k++) {
            /* a broadcast operand stays one value with stride 0 */
            f16_load(buf[k], p[k] + i0 * st[k], st[k], st[k] ? m : 1);
            q[k] = (char *)buf[k];
            qs[k] = st[k] ? 4 : 0;
        }
        if (c->out_f16) {
            q[0] = (char *)buf[0];
            qs[0] = 4;
        } else {
            q[0] = p[0] + i0 * st[0];
            qs[0] = st[0];
        }
        c->f32(q, qs, m, NULL);
        if (c->out_f16) f16_store(p[0] + i0 * st[0], st[0], buf[0], m);
    }
}

/* ---- kernels ----------------------------------------------------------- */
/* runs[op][dtype]; for f16 arithmetic and comparisons this is the f32
 * function, wrapped by f16_run. Filled once by the registration. */
static run_fn runs[PD_OP_COUNT][PD_DTYPE_COUNT];

static int is_logical(enum pd_op op)
{
    return op == PD_OP_logical_and || op == PD_OP_logical_or || op == PD_OP_logical_xor;
}

static int cpu_binary(const struct pdi_kcall *k)
{
    struct pd_kview y = k->out[0], a = k->in[0], b = k->in[1];
    enum pd_dtype dt = a.dtype;
    run_fn fn = runs[k->op][dt];
    if (!fn) return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: no CPU kernel for %s", pdi_op_name(k->op), pd_dtype_name(dt));
    struct f16_ctx hc = {fn, y.dtype == PD_F16};
    void *ctx = NULL;
    if (dt == PD_F16 && !is_logical(k->op)) {
        fn = f16_run;
        ctx = &hc;
    }
    struct pd_kview *ops[3] = {&y, &a, &b};
    pdi_iter(3, ops, y.shape, y.ndim, fn, ctx);
    return PD_OK;
}

/* where: operands [out, cond, a, b]; selection copies bits, so one run
 * function per element size serves every dtype. */
#define WHERE_RUN(name, T)                                                                            \
    static void name(char **p, const int64_t *st, int64_t n, void *ctx)                                \
    {                                                                                                  \
        (void)ctx;                                                                                     \
        T *o = (T *)p[0];                                                                              \
        const uint8_t *c = (const uint8_t *)p[1];                                                      \
        const T *a = (const T *)p[2], *b = (const T *)p[3];                                            \
        const int64_t es = (int64_t)sizeof(T);                                                         \
        if (st[0] == es && st[1] == 1 && st[2] == es && st[3] == es) {                                 \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = c[i] ? a[i] : b[i];             \
        } else if (st[0] == es && st[1] == 1 && st[2] == es && st[3] == 0) {                           \
            const T vb = b[0];                                                                         \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = c[i] ? a[i] : vb;               \
        } else if (st[0] == es && st[1] == 1 && st[2] == 0 && st[3] == es) {                           \
            const T va = a[0];                                                                         \
            _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = c[i] ? va : b[i];               \
        } else {                                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                          \
                const char *src = c[i * st[1]] ? (const char *)a + i * st[2] : (const char *)b + i * st[3]; \
                *(T *)((char *)o + i * st[0]) = *(const T *)src;                                       \
            }                                                                                          \
        }                                                                                              \
    }
WHERE_RUN(where_1, uint8_t)
WHERE_RUN(where_2, uint16_t)
WHERE_RUN(where_4, uint32_t)
WHERE_RUN(where_8, uint64_t)

static int cpu_where(const struct pdi_kcall *k)
{
    struct pd_kview y = k->out[0], c = k->in[0], a = k->in[1], b = k->in[2];
    run_fn fn;
    switch (pd_dtype_size(y.dtype)) {
    case 1: fn = where_1; break;
    case 2: fn = where_2; break;
    case 4: fn = where_4; break;
    case 8: fn = where_8; break;
    default: return pdi_errorf(PD_ERR_UNSUPPORTED, "where: no CPU kernel for %s", pd_dtype_name(y.dtype));
    }
    struct pd_kview *ops[4] = {&y, &c, &a, &b};
    pdi_iter(4, ops, y.shape, y.ndim, fn, NULL);
    return PD_OK;
}

void pdi_register_cpu_binary(void)
{
#define SET_FLOAT(op, e)                           \
    runs[PD_OP_##op][PD_F32] = run_##op##_f32;     \
    runs[PD_OP_##op][PD_F16] = run_##op##_f32;     \
    runs[PD_OP_##op][PD_BF16] = run_##op##_bf16;   \
    runs[PD_OP_##op][PD_F64] = run_##op##_f64;
    FLOAT_OPS(SET_FLOAT)
#define SET_INT_OP(op, T, SFX, e) runs[PD_OP_##op][SET_DT_##SFX] = run_##op##_##SFX;
#define SET_DT_i8 PD_I8
#define SET_DT_u8 PD_U8
#define SET_DT_i16 PD_I16
#define SET_DT_i32 PD_I32
#define SET_DT_i64 PD_I64
#define SET_DT_f32 PD_F32
#define SET_DT_f64 PD_F64
#define SET_INT_TYPE(T, UT, SFX) INT_OPS(SET_INT_OP, T, UT, SFX)
    INT_TYPES(SET_INT_TYPE)
    runs[PD_OP_add][PD_BOOL] = run_or_b;
    runs[PD_OP_maximum][PD_BOOL] = run_or_b;
    runs[PD_OP_mul][PD_BOOL] = run_and_b;
    runs[PD_OP_minimum][PD_BOOL] = run_and_b;
    /* f16 compares as f32 (through f16_run); bool compares as u8 */
#define SET_CMP_OP(op, T, SFX, e) runs[PD_OP_##op][SET_DT_##SFX] = run_##op##_##SFX;
#define SET_CMP_TYPE(T, SFX) CMP_OPS(SET_CMP_OP, T, SFX)
    CMP_TYPES(SET_CMP_TYPE)
#define SET_CMP_EXTRA(op, T, SFX, e)                \
    runs[PD_OP_##op][PD_F16] = run_##op##_f32;      \
    runs[PD_OP_##op][PD_BF16] = run_##op##_bf16;    \
    runs[PD_OP_##op][PD_BOOL] = run_##op##_u8;
    CMP_OPS(SET_CMP_EXTRA, float, f32)
    /* logic: f16/bf16 test bits directly; bool is u8 */
#define SET_DT_h PD_F16
#define SET_LOGIC_OP(op, T, SFX, e) runs[PD_OP_##op][SET_DT_##SFX] = run_##op##_##SFX;
#define SET_LOGIC_TYPE(T, SFX, NZ) LOGIC_OPS(SET_LOGIC_OP, T, SFX, NZ)
    LOGIC_TYPES(SET_LOGIC_TYPE)
#define SET_LOGIC_EXTRA(op, T, SFX, e)              \
    runs[PD_OP_##op][PD_BF16] = run_##op##_h;       \
    runs[PD_OP_##op][PD_BOOL] = run_##op##_u8;
    LOGIC_OPS(SET_LOGIC_EXTRA, float, f32, NZ_NUM)

    for (int op = 0; op < PD_OP_COUNT; op++)
        for (int dt = 0; dt < PD_DTYPE_COUNT; dt++)
            if (runs[op][dt]) pdi_kernel_register(PDI_BACKEND_CPU, (enum pd_op)op, (enum pd_dtype)dt, cpu_binary);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_where, PDI_DT_ALL, cpu_where);
}
