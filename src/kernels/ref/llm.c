/* paddle.c — REF kernels of the transformer blocks (rope, swiglu, sdpa). */
#include "core/internal.h"

void pdi_register_ref_llm(void) {}
