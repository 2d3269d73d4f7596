/* FlashMask attention in a few lines: three packed documents and padding,
 * the causal document mask, forward, log-sum-exp, backward, tile counts. */
#include <stdio.h>

#include "pd/pd.h"

int main(void)
{
    int scope_tok = pd_scope_begin();
    enum { B = 1, S = 512, HQ = 4, HK = 2, D = 32 };
    /* documents of 300, 120 and 80 tokens, then 12 padding positions */
    const int64_t docs[3] = {300, 120, 80};
    struct pd_tensor *mask = pd_flashmask_causal_document(S, docs, 3); /* int32 [1, 1, S, 1] */

    struct pd_tensor *q = pd_requires_grad_(pd_randn((int64_t[]){B, S, HQ, D}, 4, PD_F32, NULL), 1);
    struct pd_tensor *k = pd_requires_grad_(pd_randn((int64_t[]){B, S, HK, D}, 4, PD_F32, NULL), 1);
    struct pd_tensor *v = pd_requires_grad_(pd_randn((int64_t[]){B, S, HK, D}, 4, PD_F32, NULL), 1);

    struct pd_tensor *lse = NULL;
    struct pd_tensor *out = pd_flashmask_attention(q, k, v, mask, /*causal=*/1, /*window=*/NULL, /*scale=*/0,
                                                   /*dropout=*/0, &lse);
    if (!out) {
        printf("error: %s\n", pd_last_error());
        return 1;
    }
    /* a padding row sees no key: output 0, log-sum-exp -inf */
    printf("row 505: out %g, lse %g\n", pd_get(out, (int64_t[]){0, 505, 0, 0}), pd_get(lse, (int64_t[]){0, 0, 505}));

    /* the tiles the kernel computed: skipped ones cost nothing */
    struct pd_flashmask_tiles t = pd_flashmask_last_tiles();
    printf("tiles %lldx%lld: %lld skipped, %lld partial, %lld full\n", (long long)t.rows, (long long)t.cols,
           (long long)t.skipped, (long long)t.partial, (long long)t.full);

    /* gradients flow to q, k, v; keys of other documents get none from a row */
    pd_backward(pd_sum(out, NULL, 0, 0), NULL, 0);
    printf("|dq| %.4f, dk of a padding key %g\n", pd_item(pd_sum(pd_abs(pd_tensor_grad(q)), NULL, 0, 0)),
           pd_get(pd_tensor_grad(k), (int64_t[]){0, 505, 0, 0}));
    pd_scope_end(scope_tok);
    return 0;
}
