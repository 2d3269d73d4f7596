/* paddle.c — reference kernels for the binary family: arithmetic,
 * comparisons, logic and where. The oracle: element by element through
 * pdi_kview_ptr, floats in double (pdi_load/pdi_store round once), integers
 * exactly in int64 with wrap-around, never optimised.
 *
 * The dispatcher hands every input already broadcast to the out shape, and
 * of one dtype (binary.c's infer checks it); where's cond is bool.
 *
 * Integer semantics (shared with the CPU kernels, which must agree):
 *   add/sub/mul wrap around modulo 2^bits like PyTorch;
 *   division by zero does not trap: floor_divide(a, 0) = 0 and
 *   remainder(a, 0) = 0 (NumPy's choice; PyTorch raises);
 *   floor_divide(INT_MIN, -1) wraps to INT_MIN, remainder(x, -1) = 0;
 *   pow(a, b < 0) = 1 for a == 1, +-1 for a == -1, else 0 (the integer part
 *   of the real result; a == 0 gives 0 instead of a division by zero).
 * Bool arithmetic: add/maximum are "or", mul/minimum are "and".
 */
#include <math.h>
#include <string.h>

#include "core/kernel.h"
#include "kernels/common.h"

static int is_float(enum pd_dtype dt) { return pd_dtype_is_float(dt); }

/* ---- float arithmetic in double --------------------------------------- */
/* Python's floor division: a - remainder(a, b) is an exact multiple of b. */
static double f_floordiv(double a, double b)
{
    if (b == 0) return a / b;
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0;
    if (div == 0) return copysign(0.0, a / b);
    double fl = floor(div);
    if (div - fl > 0.5) fl += 1.0;
    return fl;
}

static double f_rem(double a, double b)
{
    double m = fmod(a, b);
    if (m != 0 && (b < 0) != (m < 0)) m += b;
    return m;
}

static double f_arith(enum pd_op op, double x, double y)
{
    switch (op) {
    case PD_OP_add: return x + y;
    case PD_OP_sub: return x - y;
    case PD_OP_mul: return x * y;
    case PD_OP_div: return x / y;
    case PD_OP_pow: return pow(x, y);
    case PD_OP_maximum: return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
    case PD_OP_minimum: return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
    case PD_OP_remainder: return f_rem(x, y);
    case PD_OP_floor_divide: return f_floordiv(x, y);
    case PD_OP_atan2: return atan2(x, y);
    default: return NAN;
    }
}

/* ---- integer arithmetic in int64 -------------------------------------- */
static int64_t i_floordiv(int64_t a, int64_t b)
{
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a); /* INT64_MIN / -1 wraps */
    int64_t q = a / b; /* truncates toward zero */
    if (q * b != a && ((a < 0) != (b < 0))) q -= 1;
    return q;
}

static int64_t i_rem(int64_t a, int64_t b)
{
    if (b == 0 || b == -1) return 0;
    return a - i_floordiv(a, b) * b;
}

static int64_t i_pow(int64_t a, int64_t b)
{
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)a; /* a^b mod 2^64 by square and multiply */
    for (uint64_t e = (uint64_t)b; e; e >>= 1) {
        if (e & 1) r *= x;
        x *= x;
    }
    return (int64_t)r;
}

static int64_t i_arith(enum pd_op op, int64_t x, int64_t y, int is_bool)
{
    if (is_bool) {
        switch (op) {
        case PD_OP_add:
        case PD_OP_maximum: return x | y;
        case PD_OP_mul:
        case PD_OP_minimum: return x & y;
        default: return 0;
        }
    }
    switch (op) {
    case PD_OP_add: return (int64_t)((uint64_t)x + (uint64_t)y);
    case PD_OP_sub: return (int64_t)((uint64_t)x - (uint64_t)y);
    case PD_OP_mul: return (int64_t)((uint64_t)x * (uint64_t)y);
    case PD_OP_pow: return i_pow(x, y);
    case PD_OP_maximum: return x > y ? x : y;
    case PD_OP_minimum: return x < y ? x : y;
    case PD_OP_remainder: return i_rem(x, y);
    case PD_OP_floor_divide: return i_floordiv(x, y);
    default: return 0;
    }
}

static int ref_arith(const struct pdi_kcall *k)
{
    const struct pd_kview *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    enum pd_dtype dt = a->dtype;
    int64_t n = pdi_kview_numel(y);
    for (int64_t i = 0; i < n; i++) {
        const char *pa = pdi_kview_ptr(a, i), *pb = pdi_kview_ptr(b, i);
        char *py = pdi_kview_ptr(y, i);
        if (is_float(dt)) pdi_store(py, dt, f_arith(k->op, pdi_load(pa, dt), pdi_load(pb, dt)));
        else pdi_store_int(py, dt, i_arith(k->op, pdi_load_int(pa, dt), pdi_load_int(pb, dt), dt == PD_BOOL));
    }
    return PD_OK;
}

/* ---- comparisons and logic -------------------------------------------- */
/* Three-way comparison; NaN compares unordered (every test false but ne). */
static int ref_compare(const struct pdi_kcall *k)
{
    const struct pd_kview *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    enum pd_dtype dt = a->dtype;
    int64_t n = pdi_kview_numel(y);
    for (int64_t i = 0; i < n; i++) {
        const char *pa = pdi_kview_ptr(a, i), *pb = pdi_kview_ptr(b, i);
        int lt, gt, eq;
        if (is_float(dt)) {
            double x = pdi_load(pa, dt), z = pdi_load(pb, dt);
            lt = x < z; gt = x > z; eq = x == z;
        } else {
            int64_t x = pdi_load_int(pa, dt), z = pdi_load_int(pb, dt);
            lt = x < z; gt = x > z; eq = x == z;
        }
        int r = 0;
        switch (k->op) {
        case PD_OP_eq: r = eq; break;
        case PD_OP_ne: r = !eq; break;
        case PD_OP_lt: r = lt; break;
        case PD_OP_le: r = lt || eq; break;
        case PD_OP_gt: r = gt; break;
        case PD_OP_ge: r = gt || eq; break;
        default: break;
        }
        *(uint8_t *)pdi_kview_ptr(y, i) = (uint8_t)r;
    }
    return PD_OK;
}

/* Nonzero is true; NaN is nonzero, -0.0 is zero. */
static int ref_logical(const struct pdi_kcall *k)
{
    const struct pd_kview *a = &k->in[0], *b = &k->in[1], *y = &k->out[0];
    enum pd_dtype dt = a->dtype;
    int64_t n = pdi_kview_numel(y);
    for (int64_t i = 0; i < n; i++) {
        int x = pdi_load(pdi_kview_ptr(a, i), dt) != 0.0;
        int z = pdi_load(pdi_kview_ptr(b, i), dt) != 0.0;
        int r = k->op == PD_OP_logical_and ? x && z : k->op == PD_OP_logical_or ? x || z : x != z;
        *(uint8_t *)pdi_kview_ptr(y, i) = (uint8_t)r;
    }
    return PD_OK;
}

/* where(cond, a, b): copies the chosen element's bytes (exact, any dtype). */
static int ref_where(const struct pdi_kcall *k)
{
    const struct pd_kview *c = &k->in[0], *a = &k->in[1], *b = &k->in[2], *y = &k->out[0];
    size_t es = pd_dtype_size(y->dtype);
    int64_t n = pdi_kview_numel(y);
    for (int64_t i = 0; i < n; i++) {
        const struct pd_kview *src = *(const uint8_t *)pdi_kview_ptr(c, i) ? a : b;
        memcpy(pdi_kview_ptr(y, i), pdi_kview_ptr(src, i), es);
    }
    return PD_OK;
}

/* Every dtype of each op's class (the op table's dtypes column). */
void pdi_register_ref_binary(void)
{
    static const struct {
        enum pd_op op;
        pdi_kernel_fn fn;
    } k[] = {
        {PD_OP_add, ref_arith},       {PD_OP_sub, ref_arith},       {PD_OP_mul, ref_arith},
        {PD_OP_div, ref_arith},       {PD_OP_pow, ref_arith},       {PD_OP_maximum, ref_arith},
        {PD_OP_minimum, ref_arith},   {PD_OP_remainder, ref_arith}, {PD_OP_floor_divide, ref_arith},
        {PD_OP_atan2, ref_arith},     {PD_OP_eq, ref_compare},      {PD_OP_ne, ref_compare},
        {PD_OP_lt, ref_compare},      {PD_OP_le, ref_compare},      {PD_OP_gt, ref_compare},
        {PD_OP_ge, ref_compare},      {PD_OP_logical_and, ref_logical}, {PD_OP_logical_or, ref_logical},
        {PD_OP_logical_xor, ref_logical}, {PD_OP_where, ref_where},
    };
    for (size_t i = 0; i < PDI_COUNT_OF(k); i++)
        pdi_register_by_class(PDI_BACKEND_REF, k[i].op, k[i].fn, k[i].fn, k[i].fn);
}
