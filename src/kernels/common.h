/* paddle.c — code shared by the kernels of both backends.
 *
 * Which dtypes an op takes is the op table's dtypes column (DT_FLOAT,
 * DT_NUMERIC, DT_ALL, ...), nothing else: the backends register their
 * kernels from it with pdi_register_by_class, so the reference and the CPU
 * backend cannot register different sets. The unary family's float formula
 * in double (pdi_unary_ref_op) is shared too: the reference kernel and the
 * CPU backend's f64 path use the same definition.
 */
#ifndef PD_KERNELS_COMMON_H
#define PD_KERNELS_COMMON_H

#include "core/kernel.h"

#define PDI_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Register one backend's kernel for op on the dtypes of its class:
 * float_fn on the float dtypes, int_fn on the integer ones, bool_fn on bool
 * (each only where the class has them). */
static inline void pdi_register_by_class(enum pdi_backend be, enum pd_op op, pdi_kernel_fn float_fn,
                                         pdi_kernel_fn int_fn, pdi_kernel_fn bool_fn)
{
    unsigned m = pdi_op_dtypes(op);
    pdi_kernel_register_mask(be, op, m & PDI_DT_FLOATS, float_fn);
    pdi_kernel_register_mask(be, op, m & PDI_DT_INTS, int_fn);
    pdi_kernel_register_mask(be, op, m & (1u << PD_BOOL), bool_fn);
}

/* A bool-valued unary test (logical_not, isnan, isinf, isfinite): the only
 * unary ops besides cast whose class takes bool input. */
static inline int pdi_unary_is_test(enum pd_op op)
{
    return op != PD_OP_cast && (pdi_op_dtypes(op) & (1u << PD_BOOL));
}

/* The reference formula of a unary op for one element, in double
 * (ref/unary.c); the CPU backend's f64 path uses it too. */
double pdi_unary_ref_op(enum pd_op op, double v, const struct pdi_attrs *a);

#endif
