/* A tour of paddle.c tensors: creation, views, scopes, errors. */
#include <stdio.h>
#include <stdlib.h>

#include "pd/pd.h"

int main(void)
{
    int scope_tok = pd_scope_begin(); /* everything created below is freed at pd_scope_end */

    /* creation */
    struct pd_tensor *x = pd_arange(0, 12, 1, PD_F32);          /* [0, 1, ..., 11] */
    struct pd_tensor *m = pd_reshape(x, (int64_t[]){3, 4}, 2);   /* a view: no copy */
    struct pd_tensor *r = pd_randn((int64_t[]){3, 4}, 2, PD_F32, NULL);
    printf("shares storage: %d\n", pd_tensor_shares_storage(x, m));

    /* views: transpose, slice with a step, expand */
    struct pd_tensor *t = pd_transpose(m, 0, 1);                 /* [4, 3], strides swapped */
    struct pd_tensor *every_other = pd_slice(m, 1, 0, 4, 2);     /* columns 0 and 2 */
    pd_tensor_print(every_other);
    printf("transpose contiguous: %d\n", pd_tensor_is_contiguous(t));

    /* in-place ops on a view write through to the base */
    pd_fill_(every_other, -1);
    pd_tensor_print(m);

    /* ops broadcast: [3, 4] + [4] */
    struct pd_tensor *row = pd_ones((int64_t[]){4}, 1, PD_F32);
    struct pd_tensor *y = pd_add(pd_mul(m, r), row);
    printf("y is %lld x %lld, mean %.4f\n", (long long)pd_tensor_dim(y, 0), (long long)pd_tensor_dim(y, 1),
           pd_item(pd_mean(y, NULL, 0, 0)));

    /* dtypes: bf16 storage, f32 math */
    struct pd_tensor *h = pd_cast(m, PD_BF16);
    printf("bf16 sum: %.1f\n", pd_item(pd_sum(h, NULL, 0, 0)));

    /* keep a tensor beyond the scope */
    struct pd_tensor *kept = pd_keep(pd_clone(m));

    /* errors: NULL plus a message; NULL inputs propagate */
    struct pd_tensor *bad = pd_matmul(m, m, 0, 0);               /* [3,4] @ [3,4] */
    printf("error: %s\n", bad ? "none" : pd_last_error());
    printf("propagated: %s\n", pd_exp(bad) == NULL ? "NULL" : "tensor");

    pd_scope_end(scope_tok);

    char *s = pd_tensor_to_string(kept);
    printf("%s\n", s);
    free(s);
    pd_tensor_release(kept); /* we own what we kept outside every scope */
    return 0;
}
