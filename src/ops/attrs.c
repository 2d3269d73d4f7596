/* paddle.c — attribute descriptors generated from the op table, and the
 * generic code built on them: defaults, validation, printing and JSON.
 *
 * Each PD_ATTRS(set, ...) row of src/ops/ops.def expands here to a function
 * returning the set's field descriptors; offsets are taken in struct
 * pdi_attrs (the union member plus the field's offset in the set), so the
 * generic code reads any op's fields through one pointer.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <stdarg.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "io/file.h"

#define PDI_ADEF_I_I64(d) (d)
#define PDI_ADEF_I_BOOL(d) (d)
#define PDI_ADEF_I_DTYPE(d) (d)
#define PDI_ADEF_I_F64(d) 0
#define PDI_ADEF_I_INTS(d) 0
#define PDI_ADEF_F_I64(d) 0.0
#define PDI_ADEF_F_BOOL(d) 0.0
#define PDI_ADEF_F_DTYPE(d) 0.0
#define PDI_ADEF_F_F64(d) (d)
#define PDI_ADEF_F_INTS(d) 0.0

/* The range column's forms (src/ops/ops.def). */
#define R_ANY {PDI_RK_ANY, 0, 0, 0, 0.0, 0.0}
#define R_INT(lo, hi) {PDI_RK_INT, 0, (lo), (hi), 0.0, 0.0}
#define R_MIN(lo) R_INT(lo, INT64_MAX)
#define R_REAL(lo, hi) {PDI_RK_REAL, 0, 0, 0, (lo), (hi)}
#define R_FINITE {PDI_RK_REAL, PDI_RF_FINITE, 0, 0, -DBL_MAX, DBL_MAX}
#define R_FINITE_MIN(lo) {PDI_RK_REAL, PDI_RF_FINITE, 0, 0, (lo), DBL_MAX}
#define R_POS {PDI_RK_REAL, PDI_RF_FINITE | PDI_RF_LO_OPEN, 0, 0, 0.0, DBL_MAX}
#define R_UNIT {PDI_RK_REAL, PDI_RF_HI_OPEN, 0, 0, 0.0, 1.0}
#define R_AXIS {PDI_RK_AXIS, 0, 0, 0, 0.0, 0.0}
#define R_AXES {PDI_RK_AXES, 0, 0, 0, 0.0, 0.0}
#define PD_A(type, field, def, range, doc)                                                                    \
    {#field, PDI_AT_##type, SET_OFF + offsetof(S, field), PDI_ADEF_I_##type(def), PDI_ADEF_F_##type(def), range, \
     doc},
#define PD_ATTRS(set, fields)                                                  \
    static const struct pdi_attr_desc *adesc_##set(int *n)                     \
    {                                                                          \
        typedef struct pdi_attrs_##set S;                                      \
        enum { SET_OFF = offsetof(struct pdi_attrs, set) };                    \
        static const struct pdi_attr_desc d[] = {fields};                      \
        *n = (int)(sizeof d / sizeof d[0]);                                    \
        return d;                                                              \
    }
#include "ops/ops.def"
#undef PD_ATTRS
#undef PD_A

static const struct pdi_attr_desc *adesc_none(int *n)
{
    *n = 0;
    return NULL;
}

static const struct pdi_attr_desc *(*const sets[PDI_AS_COUNT])(int *) = {
    [PDI_AS_none] = adesc_none,
#define PD_ATTRS(set, fields) [PDI_AS_##set] = adesc_##set,
#include "ops/ops.def"
#undef PD_ATTRS
};

const struct pdi_attr_desc *pdi_op_attrs(enum pd_op op, int *n)
{
    *n = 0;
    if ((unsigned)op >= PD_OP_COUNT) return NULL;
    return sets[pdi_ops[op].attrs](n);
}

int pdi_op_lookup(const char *name)
{
    if (!name) return -1;
    for (int i = 0; i < PD_OP_COUNT; i++)
        if (!strcmp(pdi_ops[i].name, name)) return i;
    return -1;
}

#define FIELD(a, d, T) ((T *)((char *)(a) + (d)->offset))
#define CFIELD(a, d, T) ((const T *)((const char *)(a) + (d)->offset))

void pdi_attrs_default(enum pd_op op, struct pdi_attrs *a)
{
    memset(a, 0, sizeof *a);
    int n;
    const struct pdi_attr_desc *d = pdi_op_attrs(op, &n);
    for (int i = 0; i < n; i++) {
        switch (d[i].type) {
        case PDI_AT_F64: *FIELD(a, &d[i], double) = d[i].def_f; break;
        case PDI_AT_INTS: FIELD(a, &d[i], struct pdi_ints)->n = 0; break;
        default: *FIELD(a, &d[i], int64_t) = d[i].def_i; break;
        }
    }
}

/* An axis of a tensor of ndim dims (ndim < 0: of some tensor). */
static int axis_ok(int64_t v, int ndim)
{
    int nd = ndim < 0 ? PD_MAX_DIMS : ndim == 0 ? 1 : ndim;
    return v >= -nd && v < nd;
}

static int64_t axis_norm(int64_t v, int ndim) { return ndim == 0 ? 0 : v < 0 ? v + ndim : v; }

static int real_ok(double v, const struct pdi_attr_range *r)
{
    if (isnan(v) || ((r->flags & PDI_RF_FINITE) && !isfinite(v))) return 0;
    if ((r->flags & PDI_RF_LO_OPEN) ? !(v > r->flo) : !(v >= r->flo)) return 0;
    return (r->flags & PDI_RF_HI_OPEN) ? v < r->fhi : v <= r->fhi;
}

/* "pad: mode 7 out of range [0, 2]"; k >= 0: element k of a list. */
static int int_range_error(const char *opn, const char *f, int64_t k, int64_t v, const struct pdi_attr_range *r)
{
    char name[64], range[64];
    if (k >= 0) snprintf(name, sizeof name, "%s[%lld]", f, (long long)k);
    else snprintf(name, sizeof name, "%s", f);
    if (r->hi == INT64_MAX) snprintf(range, sizeof range, "(must be >= %lld)", (long long)r->lo);
    else snprintf(range, sizeof range, "[%lld, %lld]", (long long)r->lo, (long long)r->hi);
    return pdi_errorf(PD_ERR_INVALID, "%s: %s %lld out of range %s", opn, name, (long long)v, range);
}

/* The type and range of every attribute; ndim is input 0's (< 0: unknown,
 * then an axis is only checked against PD_MAX_DIMS). */
static int check(enum pd_op op, const struct pdi_attrs *a, int ndim)
{
    int n;
    const struct pdi_attr_desc *d = pdi_op_attrs(op, &n);
    for (int i = 0; i < n; i++) {
        const char *opn = pdi_ops[op].name, *f = d[i].name;
        const struct pdi_attr_range *r = &d[i].range;
        switch (d[i].type) {
        case PDI_AT_BOOL: {
            int64_t v = *CFIELD(a, &d[i], int64_t);
            if (v != 0 && v != 1)
                return pdi_errorf(PD_ERR_INVALID, "%s: attribute %s must be 0 or 1, got %lld", opn, f, (long long)v);
            break;
        }
        case PDI_AT_DTYPE: {
            int64_t v = *CFIELD(a, &d[i], int64_t);
            if (v < 0 || v >= PD_DTYPE_COUNT)
                return pdi_errorf(PD_ERR_INVALID, "%s: attribute %s is not a dtype (%lld)", opn, f, (long long)v);
            break;
        }
        case PDI_AT_I64: {
            int64_t v = *CFIELD(a, &d[i], int64_t);
            if (r->kind == PDI_RK_INT && (v < r->lo || v > r->hi)) return int_range_error(opn, f, -1, v, r);
            if (r->kind == PDI_RK_AXIS && !axis_ok(v, ndim))
                return pdi_errorf(PD_ERR_INVALID, "%s: %s %lld out of range for a %d-d tensor", opn, f,
                                  (long long)v, ndim < 0 ? PD_MAX_DIMS : ndim);
            break;
        }
        case PDI_AT_F64: {
            double v = *CFIELD(a, &d[i], double);
            if (r->kind == PDI_RK_REAL && !real_ok(v, r))
                return pdi_errorf(PD_ERR_INVALID, "%s: %s %g out of range %s%g, %g%s%s", opn, f, v,
                                  (r->flags & PDI_RF_LO_OPEN) ? "(" : "[", r->flo, r->fhi,
                                  (r->flags & PDI_RF_HI_OPEN) ? ")" : "]",
                                  (r->flags & PDI_RF_FINITE) ? " (finite)" : "");
            break;
        }
        case PDI_AT_INTS: {
            const struct pdi_ints *l = CFIELD(a, &d[i], struct pdi_ints);
            if (l->n < 0 || l->n > PDI_MAX_ATTR_INTS)
                return pdi_errorf(PD_ERR_INVALID, "%s: attribute %s has %lld values (at most %d)", opn, f,
                                  (long long)l->n, PDI_MAX_ATTR_INTS);
            unsigned seen = 0;
            for (int64_t k = 0; k < l->n; k++) {
                int64_t v = l->v[k];
                if (r->kind == PDI_RK_INT && (v < r->lo || v > r->hi)) return int_range_error(opn, f, k, v, r);
                if (r->kind != PDI_RK_AXES) continue;
                if (!axis_ok(v, ndim))
                    return pdi_errorf(PD_ERR_INVALID, "%s: axis %lld out of range for a %d-d tensor (%s[%lld])", opn,
                                      (long long)v, ndim < 0 ? PD_MAX_DIMS : ndim, f, (long long)k);
                if (ndim < 0) continue;
                unsigned bit = 1u << axis_norm(v, ndim);
                if (seen & bit)
                    return pdi_errorf(PD_ERR_INVALID, "%s: axis %lld repeated (%s)", opn, (long long)axis_norm(v, ndim), f);
                seen |= bit;
            }
            break;
        }
        }
    }
    return PD_OK;
}

int pdi_attrs_validate(enum pd_op op, const struct pdi_attrs *a)
{
    if ((unsigned)op >= PD_OP_COUNT) return pdi_errorf(PD_ERR_INVALID, "attrs_validate: invalid op %d", (int)op);
    return check(op, a, -1);
}

int pdi_attrs_check(const struct pdi_call *c)
{
    return check(c->op, &c->a, c->n_in > 0 ? c->in[0]->ndim : -1);
}

/* Append with truncation; *pos never passes n - 1. */
static void put(char *buf, size_t n, size_t *pos, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t n, size_t *pos, const char *fmt, ...)
{
    if (*pos + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *pos, n - *pos, fmt, ap);
    va_end(ap);
    if (w > 0) *pos = *pos + (size_t)w < n ? *pos + (size_t)w : n - 1;
}

const char *pdi_attrs_format(enum pd_op op, const struct pdi_attrs *a, char *buf, size_t n)
{
    size_t pos = 0;
    if (!buf || n == 0) return buf;
    buf[0] = 0;
    if ((unsigned)op >= PD_OP_COUNT) return buf;
    int na;
    const struct pdi_attr_desc *d = pdi_op_attrs(op, &na);
    put(buf, n, &pos, "%s(", pdi_ops[op].name);
    for (int i = 0; i < na; i++) {
        put(buf, n, &pos, "%s%s=", i ? ", " : "", d[i].name);
        switch (d[i].type) {
        case PDI_AT_F64: put(buf, n, &pos, "%g", *CFIELD(a, &d[i], double)); break;
        case PDI_AT_DTYPE: {
            int64_t v = *CFIELD(a, &d[i], int64_t);
            put(buf, n, &pos, "%s", v >= 0 && v < PD_DTYPE_COUNT ? pd_dtype_name((enum pd_dtype)v) : "?");
            break;
        }
        case PDI_AT_INTS: {
            const struct pdi_ints *l = CFIELD(a, &d[i], struct pdi_ints);
            put(buf, n, &pos, "[");
            for (int64_t k = 0; k < l->n && k < PDI_MAX_ATTR_INTS; k++)
                put(buf, n, &pos, "%s%lld", k ? ", " : "", (long long)l->v[k]);
            put(buf, n, &pos, "]");
            break;
        }
        default: put(buf, n, &pos, "%lld", (long long)*CFIELD(a, &d[i], int64_t)); break;
        }
    }
    put(buf, n, &pos, ")");
    return buf;
}

/* JSON numbers are doubles: integers beyond 2^53 are written as strings so
 * that every int64 attribute round-trips exactly. */
static cJSON *int_json(int64_t v)
{
    if (v > (1LL << 53) || v < -(1LL << 53)) {
        char b[32];
        snprintf(b, sizeof b, "%lld", (long long)v);
        return cJSON_CreateString(b);
    }
    return cJSON_CreateNumber((double)v);
}

static int json_int(const cJSON *j, int64_t *v)
{
    if (cJSON_IsString(j)) {
        char *end;
        errno = 0;
        long long x = strtoll(j->valuestring, &end, 10);
        if (errno || end == j->valuestring || *end) return -1;
        *v = x;
        return 0;
    }
    if (!cJSON_IsNumber(j)) return -1;
    double x = j->valuedouble;
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0) || x != floor(x)) return -1;
    *v = (int64_t)x;
    return 0;
}

/* Non-finite doubles (a clip bound of inf) are strings "inf", "-inf", "nan". */
static cJSON *f64_json(double v)
{
    if (isnan(v)) return cJSON_CreateString("nan");
    if (isinf(v)) return cJSON_CreateString(v > 0 ? "inf" : "-inf");
    return cJSON_CreateNumber(v);
}

static int json_f64(const cJSON *j, double *v)
{
    if (cJSON_IsNumber(j)) { *v = j->valuedouble; return 0; }
    if (!cJSON_IsString(j)) return -1;
    if (!strcmp(j->valuestring, "inf")) *v = INFINITY;
    else if (!strcmp(j->valuestring, "-inf")) *v = -INFINITY;
    else if (!strcmp(j->valuestring, "nan")) *v = NAN;
    else return -1;
    return 0;
}

void *pdi_attrs_to_json(enum pd_op op, const struct pdi_attrs *a)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int n;
    const struct pdi_attr_desc *d = pdi_op_attrs(op, &n);
    for (int i = 0; i < n; i++) {
        cJSON *v = NULL;
        switch (d[i].type) {
        case PDI_AT_F64: v = f64_json(*CFIELD(a, &d[i], double)); break;
        case PDI_AT_BOOL: v = cJSON_CreateBool(*CFIELD(a, &d[i], int64_t) != 0); break;
        case PDI_AT_DTYPE: {
            int64_t t = *CFIELD(a, &d[i], int64_t);
            v = cJSON_CreateString(t >= 0 && t < PD_DTYPE_COUNT ? pd_dtype_name((enum pd_dtype)t) : "?");
            break;
        }
        case PDI_AT_INTS: {
            const struct pdi_ints *l = CFIELD(a, &d[i], struct pdi_ints);
            v = cJSON_CreateArray();
            for (int64_t k = 0; v && k < l->n && k < PDI_MAX_ATTR_INTS; k++) {
                cJSON *e = int_json(l->v[k]);
                if (!e || !cJSON_AddItemToArray(v, e)) { cJSON_Delete(e); cJSON_Delete(v); v = NULL; }
            }
            break;
        }
        default: v = int_json(*CFIELD(a, &d[i], int64_t)); break;
        }
        if (!v || !cJSON_AddItemToObject(o, d[i].name, v)) {
            cJSON_Delete(v);
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

static int dtype_by_name(const char *s)
{
    for (int t = 0; t < PD_DTYPE_COUNT; t++)
        if (!strcmp(pd_dtype_name((enum pd_dtype)t), s)) return t;
    return -1;
}

int pdi_attrs_from_json(enum pd_op op, const void *json, struct pdi_attrs *a)
{
    const cJSON *o = json;
    if ((unsigned)op >= PD_OP_COUNT) return pdi_errorf(PD_ERR_INVALID, "attrs_from_json: invalid op %d", (int)op);
    const char *opn = pdi_ops[op].name;
    if (!cJSON_IsObject(o)) return pdi_errorf(PD_ERR_INVALID, "%s: attributes must be a JSON object", opn);
    int n;
    const struct pdi_attr_desc *d = pdi_op_attrs(op, &n);
    for (const cJSON *it = o->child; it; it = it->next) {
        int k = 0;
        while (k < n && strcmp(d[k].name, it->string ? it->string : "")) k++;
        if (k == n) {
            char qb[PDI_QUOTE_BUF]; /* attribute JSON is untrusted text */
            return pdi_errorf(PD_ERR_INVALID, "%s: unknown attribute %s", opn, pdi_quote(it->string, qb, sizeof qb));
        }
    }
    pdi_attrs_default(op, a);
    for (int i = 0; i < n; i++) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, d[i].name);
        if (!j) continue;
        int bad = 0;
        switch (d[i].type) {
        case PDI_AT_F64: bad = json_f64(j, FIELD(a, &d[i], double)); break;
        case PDI_AT_BOOL:
            if (cJSON_IsBool(j)) *FIELD(a, &d[i], int64_t) = cJSON_IsTrue(j);
            else bad = 1;
            break;
        case PDI_AT_DTYPE: {
            int t = cJSON_IsString(j) ? dtype_by_name(j->valuestring) : -1;
            if (t < 0) bad = 1;
            else *FIELD(a, &d[i], int64_t) = t;
            break;
        }
        case PDI_AT_INTS: {
            struct pdi_ints *l = FIELD(a, &d[i], struct pdi_ints);
            int len = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : -1;
            if (len < 0 || len > PDI_MAX_ATTR_INTS) { bad = 1; break; }
            l->n = 0;
            for (const cJSON *e = j->child; e && !bad; e = e->next) bad = json_int(e, &l->v[l->n++]);
            break;
        }
        default: bad = json_int(j, FIELD(a, &d[i], int64_t)); break;
        }
        if (bad) return pdi_errorf(PD_ERR_INVALID, "%s: attribute %s has the wrong JSON type or value", opn, d[i].name);
    }
    return pdi_attrs_validate(op, a);
}
