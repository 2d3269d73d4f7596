/* paddle.c — CPU kernels of the transformer blocks (rope, swiglu, sdpa). */
#include "core/internal.h"

void pdi_register_cpu_llm(void) {}
