/* paddle.c — one include for the whole public API. */
#ifndef PD_PD_H
#define PD_PD_H
#include "pd/tensor.h"
#include "pd/ops.h"
#include "pd/autograd.h"
#include "pd/memory.h"
#include "pd/state.h"
#include "pd/nn.h"
#endif
