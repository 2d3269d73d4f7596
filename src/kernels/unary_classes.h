/* paddle.c — which unary ops take which dtypes: one list for the
 * reference and CPU backends, so they cannot register different sets. */
#ifndef PD_KERNELS_UNARY_CLASSES_H
#define PD_KERNELS_UNARY_CLASSES_H

#include "core/kernel.h"

/* Floats only (integer inputs are promoted by the public wrappers). */
static const enum pd_op pdi_unary_float_only[] = {
    PD_OP_exp,  PD_OP_expm1, PD_OP_log,  PD_OP_log1p,    PD_OP_log2, PD_OP_sqrt, PD_OP_rsqrt,
    PD_OP_reciprocal, PD_OP_sin, PD_OP_cos, PD_OP_tan,   PD_OP_tanh, PD_OP_sigmoid, PD_OP_leaky_relu,
    PD_OP_elu,  PD_OP_gelu,  PD_OP_silu, PD_OP_softplus, PD_OP_mish, PD_OP_erf,  PD_OP_pow_scalar,
};
/* Floats and integers. */
static const enum pd_op pdi_unary_numeric[] = {
    PD_OP_neg,  PD_OP_abs,   PD_OP_sign,  PD_OP_square, PD_OP_relu,  PD_OP_floor,
    PD_OP_ceil, PD_OP_round, PD_OP_trunc, PD_OP_clip,   PD_OP_scale, PD_OP_add_scalar,
};
/* Any dtype in, bool out. */
static const enum pd_op pdi_unary_to_bool[] = {PD_OP_logical_not, PD_OP_isnan, PD_OP_isinf, PD_OP_isfinite};

/* The reference kernel's formula for one element, in double (ref/unary.c);
 * the CPU backend's f64 path uses it too, so there is one definition. */
double pdi_unary_ref_op(enum pd_op op, double v, const struct pdi_attrs *a);

#define PDI_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Register one backend's kernels for the three classes: float_fn for float
 * dtypes, int_fn for integer dtypes of the numeric ops, bool_fn for the
 * tests; cast is registered by the caller. */
static inline void pdi_register_unary_classes(enum pdi_backend be, pdi_kernel_fn float_fn, pdi_kernel_fn int_fn,
                                              pdi_kernel_fn bool_fn)
{
    for (size_t i = 0; i < PDI_COUNT_OF(pdi_unary_float_only); i++)
        pdi_kernel_register_mask(be, pdi_unary_float_only[i], PDI_DT_FLOATS, float_fn);
    for (size_t i = 0; i < PDI_COUNT_OF(pdi_unary_numeric); i++) {
        pdi_kernel_register_mask(be, pdi_unary_numeric[i], PDI_DT_FLOATS, float_fn);
        pdi_kernel_register_mask(be, pdi_unary_numeric[i], PDI_DT_INTS, int_fn);
    }
    for (size_t i = 0; i < PDI_COUNT_OF(pdi_unary_to_bool); i++)
        pdi_kernel_register_mask(be, pdi_unary_to_bool[i], PDI_DT_ALL, bool_fn);
}

#endif
