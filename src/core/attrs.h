/* paddle.c — typed op attributes, generated from the op table.
 *
 * Every attribute set declared in src/ops/ops.def with PD_ATTRS becomes a
 * struct pdi_attrs_<set> and a member <set> of the anonymous union in struct
 * pdi_attrs, so code reads c->a.norm.eps. The same declaration yields a
 * descriptor per field (name, type, offset, default, doc) from which
 * defaults, validation, printing and JSON read/write are generic
 * (src/ops/attrs.c). struct pdi_attrs stays a plain value: it is copied
 * into GradNodes and, later, IR nodes.
 */
#ifndef PD_CORE_ATTRS_H
#define PD_CORE_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#include "pd/pd.h"

/* A list attribute (axes, shapes, paddings). */
#define PDI_MAX_ATTR_INTS 16
struct pdi_ints {
    int64_t n;
    int64_t v[PDI_MAX_ATTR_INTS];
};

enum pdi_attr_type { PDI_AT_I64, PDI_AT_F64, PDI_AT_BOOL, PDI_AT_DTYPE, PDI_AT_INTS };

#define PDI_ACT_I64 int64_t
#define PDI_ACT_F64 double
#define PDI_ACT_BOOL int64_t
#define PDI_ACT_DTYPE int64_t
#define PDI_ACT_INTS struct pdi_ints

/* The sets: struct pdi_attrs_<set> { fields }. */
struct pdi_attrs_none {
    char unused_;
};
#define PD_A(type, field, def, range, doc) PDI_ACT_##type field;
#define PD_ATTRS(set, fields) struct pdi_attrs_##set { fields };
#include "ops/ops.def"
#undef PD_ATTRS
#undef PD_A

enum pdi_attrset {
    PDI_AS_none = 0,
#define PD_ATTRS(set, fields) PDI_AS_##set,
#include "ops/ops.def"
#undef PD_ATTRS
    PDI_AS_COUNT
};

struct pdi_attrs {
    union {
        struct pdi_attrs_none none;
#define PD_ATTRS(set, fields) struct pdi_attrs_##set set;
#include "ops/ops.def"
#undef PD_ATTRS
    };
};

/* The valid values of an attribute: PD_A's range column (the R_* forms
 * are listed in src/ops/ops.def). BOOL must be 0 or 1, DTYPE a dtype and an
 * INTS list at most PDI_MAX_ATTR_INTS long whatever the range says. The
 * dispatcher refuses a call with a value outside its range before the op's
 * infer function runs (pdi_attrs_check), so every infer function may rely
 * on it. */
enum pdi_range_kind {
    PDI_RK_ANY,  /* every value of the type */
    PDI_RK_INT,  /* I64, or each INTS value, in [lo, hi] */
    PDI_RK_REAL, /* F64 in [flo, fhi] (ends open per flags), never NaN */
    PDI_RK_AXIS, /* I64: an axis of input 0, -ndim <= v < ndim (-1 or 0 for a 0-d input) */
    PDI_RK_AXES  /* INTS: axes of input 0 as PDI_RK_AXIS, none repeated */
};
#define PDI_RF_FINITE 1u  /* PDI_RK_REAL: not infinite either */
#define PDI_RF_LO_OPEN 2u /* PDI_RK_REAL: v > flo */
#define PDI_RF_HI_OPEN 4u /* PDI_RK_REAL: v < fhi */
struct pdi_attr_range {
    enum pdi_range_kind kind;
    unsigned flags;
    int64_t lo, hi;
    double flo, fhi;
};

struct pdi_attr_desc {
    const char *name;
    enum pdi_attr_type type;
    size_t offset; /* in struct pdi_attrs */
    int64_t def_i; /* I64, BOOL, DTYPE */
    double def_f;  /* F64 */
    struct pdi_attr_range range;
    const char *doc;
};

#endif
