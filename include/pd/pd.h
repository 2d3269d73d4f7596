/* paddle.c — one include for the whole public API. */
#ifndef PD_PD_H
#define PD_PD_H
#include "pd/tensor.h"
#include "pd/ops.h"
#include "pd/autograd.h"
#include "pd/memory.h"
#include "pd/state.h"
#include "pd/nn.h"
#include "pd/io.h"
#include "pd/optim.h"
#include "pd/amp.h"
#include "pd/data.h"
#include "pd/generate.h"
#include "pd/debug.h"
#include "pd/profiler.h"
#include "pd/flashmask.h"
#include "pd/meta.h"
#include "pd/dist.h"
#include "pd/hf.h"
#endif
