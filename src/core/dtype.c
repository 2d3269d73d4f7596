/* paddle.c — dtypes: names, sizes, promotion, exact conversions.
 *
 * bf16/f16 conversions round to nearest even and keep NaN a (quiet) NaN.
 * f64 -> f16/bf16 round once from the double (rounding through f32 first
 * could double-round).
 */
#include <math.h>
#include <string.h>
#ifdef __F16C__
#include <immintrin.h>
#endif

#include "core/internal.h"

static const char *const dtype_names[PD_DTYPE_COUNT] = {
    "f32", "f64", "f16", "bf16", "int8", "uint8", "int16", "int32", "int64", "bool",
};
static const size_t dtype_sizes[PD_DTYPE_COUNT] = {4, 8, 2, 2, 1, 1, 2, 4, 8, 1};

const char *pd_dtype_name(enum pd_dtype dt)
{
    return (unsigned)dt < PD_DTYPE_COUNT ? dtype_names[dt] : "invalid";
}

size_t pd_dtype_size(enum pd_dtype dt) { return (unsigned)dt < PD_DTYPE_COUNT ? dtype_sizes[dt] : 0; }

int pd_dtype_is_float(enum pd_dtype dt) { return dt == PD_F32 || dt == PD_F64 || dt == PD_F16 || dt == PD_BF16; }

/* Rank within a category: bool < ints < floats. */
static int int_rank(enum pd_dtype d)
{
    switch (d) {
    case PD_BOOL: return 0;
    case PD_U8: return 1;
    case PD_I8: return 2;
    case PD_I16: return 3;
    case PD_I32: return 4;
    case PD_I64: return 5;
    default: return -1;
    }
}

enum pd_dtype pd_promote_types(enum pd_dtype a, enum pd_dtype b)
{
    if (a == b) return a;
    int fa = pd_dtype_is_float(a), fb = pd_dtype_is_float(b);
    if (fa && !fb) return a;
    if (fb && !fa) return b;
    if (fa && fb) {
        if (a == PD_F64 || b == PD_F64) return PD_F64;
        if (a == PD_F32 || b == PD_F32) return PD_F32;
        return PD_F32; /* f16 with bf16 */
    }
    if ((a == PD_U8 && b == PD_I8) || (a == PD_I8 && b == PD_U8)) return PD_I16;
    return int_rank(a) > int_rank(b) ? a : b;
}

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t pd_f32_to_bf16(float x)
{
    uint32_t u = f2u(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float pd_bf16_to_f32(uint16_t x) { return u2f((uint32_t)x << 16); }

uint16_t pd_f64_to_bf16(double x)
{
    if (isnan(x)) return 0x7fc0;
    float f = (float)x; /* nearest f32; fix double rounding below */
    uint32_t u = f2u(f);
    /* If the f32 rounding landed exactly on a bf16 halfway point, decide
     * from the exact double instead. */
    if ((u & 0xffffu) == 0x8000u && (double)f != x && isfinite(f)) {
        uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
        double dlo = fabs((double)u2f(lo) - x), dhi = fabs((double)u2f(hi) - x);
        return (uint16_t)((dlo <= dhi ? lo : hi) >> 16);
    }
    return pd_f32_to_bf16(f);
}

float pd_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        if (mant == 0) return u2f(sign);
        float f = (float)mant * 0x1p-24f; /* subnormal: exact */
        return sign ? -f : f;
    }
    if (exp == 31) return u2f(sign | 0x7f800000u | (mant << 13));
    return u2f(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* Round a finite double to f16, nearest even. */
uint16_t pd_f64_to_f16(double x)
{
    if (isnan(x)) return 0x7e00;
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (a >= 65520.0) return sign | 0x7c00; /* rounds to inf */
    if (a < 0x1p-14) {
        /* subnormal range: units of 2^-24 */
        double q = nearbyint(a * 0x1p24); /* default mode: nearest even */
        return sign | (uint16_t)q;        /* q may be 1024 = smallest normal: still right */
    }
    int e;
    double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    double q = nearbyint(m * 2048.0); /* 11 significant bits */
    if (q >= 2048.0) { q /= 2; e += 1; }
    int exp = e - 1 + 15;
    if (exp >= 31) return sign | 0x7c00;
    return sign | (uint16_t)(exp << 10) | (uint16_t)((uint32_t)q & 0x3ffu);
}

uint16_t pd_f32_to_f16(float x)
{
#ifdef __F16C__
    return _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT); /* hardware, same rounding */
#else
    return pd_f64_to_f16((double)x); /* exact: every f32 is a double */
#endif
}

double pdi_load(const void *p, enum pd_dtype dt)
{
    switch (dt) {
    case PD_F32: return *(const float *)p;
    case PD_F64: return *(const double *)p;
    case PD_F16: return pd_f16_to_f32(*(const uint16_t *)p);
    case PD_BF16: return pd_bf16_to_f32(*(const uint16_t *)p);
    case PD_I8: return *(const int8_t *)p;
    case PD_U8: return *(const uint8_t *)p;
    case PD_I16: return *(const int16_t *)p;
    case PD_I32: return *(const int32_t *)p;
    case PD_I64: return (double)*(const int64_t *)p;
    case PD_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    default: return 0.0;
    }
}

/* Float to integer: truncation toward zero, saturating (NaN -> 0), so that
 * no input is undefined behaviour. */
static int64_t sat_i64(double v, double lo, double hi)
{
    if (v != v) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

void pdi_store(void *p, enum pd_dtype dt, double v)
{
    switch (dt) {
    case PD_F32: *(float *)p = (float)v; break;
    case PD_F64: *(double *)p = v; break;
    case PD_F16: *(uint16_t *)p = pd_f64_to_f16(v); break;
    case PD_BF16: *(uint16_t *)p = pd_f64_to_bf16(v); break;
    case PD_I8: *(int8_t *)p = (int8_t)sat_i64(v, -128, 127); break;
    case PD_U8: *(uint8_t *)p = (uint8_t)sat_i64(v, 0, 255); break;
    case PD_I16: *(int16_t *)p = (int16_t)sat_i64(v, -32768, 32767); break;
    case PD_I32: *(int32_t *)p = (int32_t)sat_i64(v, -2147483648.0, 2147483647.0); break;
    case PD_I64: *(int64_t *)p = sat_i64(v, -9223372036854775808.0, 9223372036854774784.0); break;
    case PD_BOOL: *(uint8_t *)p = (v != 0.0); break;
    default: break;
    }
}

/* Fast paths for the conversions training uses; everything else goes
 * through double, which is exact for every pair except int64 > 2^53. */
void pdi_convert(const void *src, enum pd_dtype sdt, void *dst, enum pd_dtype ddt, int64_t n)
{
    if (sdt == ddt) { memcpy(dst, src, (size_t)n * pd_dtype_size(sdt)); return; }
    if (sdt == PD_F32 && ddt == PD_BF16) {
        const float *s = src; uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = pd_f32_to_bf16(s[i]);
        return;
    }
    if (sdt == PD_BF16 && ddt == PD_F32) {
        const uint16_t *s = src; float *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = pd_bf16_to_f32(s[i]);
        return;
    }
    if (sdt == PD_F32 && ddt == PD_F64) {
        const float *s = src; double *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = s[i];
        return;
    }
    if (sdt == PD_F64 && ddt == PD_F32) {
        const double *s = src; float *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = (float)s[i];
        return;
    }
    if (sdt == PD_I64 && ddt == PD_I32) {
        const int64_t *s = src; int32_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = (int32_t)s[i];
        return;
    }
    if (sdt == PD_I32 && ddt == PD_I64) {
        const int32_t *s = src; int64_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = s[i];
        return;
    }
    size_t ss = pd_dtype_size(sdt), ds = pd_dtype_size(ddt);
    const char *s = src; char *d = dst;
    if (!pd_dtype_is_float(sdt) && !pd_dtype_is_float(ddt) && ddt != PD_BOOL) {
        /* integer -> integer: exact through int64, wrapping like C (and
         * like pd_cast); only float -> integer saturates */
        for (int64_t i = 0; i < n; i++) {
            int64_t v;
            switch (sdt) {
            case PD_I8: v = ((const int8_t *)src)[i]; break;
            case PD_U8: case PD_BOOL: v = ((const uint8_t *)src)[i]; break;
            case PD_I16: v = ((const int16_t *)src)[i]; break;
            case PD_I32: v = ((const int32_t *)src)[i]; break;
            default: v = ((const int64_t *)src)[i]; break;
            }
            switch (ddt) {
            case PD_I8: ((int8_t *)dst)[i] = (int8_t)v; break;
            case PD_U8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
            case PD_I16: ((int16_t *)dst)[i] = (int16_t)v; break;
            case PD_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
            default: ((int64_t *)dst)[i] = v; break;
            }
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) pdi_store(d + i * ds, ddt, pdi_load(s + i * ss, sdt));
}
