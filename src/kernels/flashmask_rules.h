/* paddle.c — the FlashMask rules that the kernels share with the op front
 * end (ops/flashmask.c), in a kernel-level header:
 *   - the masked predicate of the reference kernels (kernels/ref/flashmask.c).
 *     The dense converter, the composed VJP and the decomposition build the
 *     same rule from public ops (pdi_flashmask_dense in ops/flashmask.c,
 *     tested against the formula in tests/test_flashmask.c); the CPU kernel
 *     keeps its own interval form (tiles). Both are tested against this one;
 *   - the dropout keep threshold of the kernels, the reference and the
 *     composed forms.
 */
#ifndef PD_KERNELS_FLASHMASK_RULES_H
#define PD_KERNELS_FLASHMASK_RULES_H

#include <stdint.h>

/* 1 when query row i may not see key j. x holds the C values of column j
 * (C 1|2 causal, 2|4 not; include/pd/flashmask.h has the table); causal is
 * bottom-right aligned: masked when j > i + (Sk - Sq). */
static inline int pdi_flashmask_masked(const int32_t *x, int64_t C, int causal, int64_t i, int64_t j, int64_t Sq,
                                       int64_t Sk)
{
    /* the unified form: [LTS, LTE) u [UTS, UTE), absent ends defaulted */
    int64_t lts = x[0], lte = Sq, uts = 0, ute = 0;
    if (causal) {
        if (j > i + (Sk - Sq)) return 1;
        if (C == 2) lte = x[1];
    } else if (C == 2) {
        ute = x[1];
    } else {
        lte = x[1], uts = x[2], ute = x[3];
    }
    return (lts <= i && i < lte) || (uts <= i && i < ute);
}

/* Dropout keeps weight (b, h, i, j) iff the Philox word at counter
 * offset + ((b Hq + h) Sq + i) Sk + j is at least this (p 2^32): the one
 * rule of the kernels, the reference and the composed forms. */
static inline uint64_t pdi_flashmask_keep_threshold(double p) { return (uint64_t)(p * 4294967296.0); }

#endif
