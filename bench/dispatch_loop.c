/* paddle.c — a fixed loop of tiny ops for instruction counting:
 *   valgrind --tool=callgrind build/bench_dispatch_loop MODE N
 * MODE 0: N forward pd_add of 16 floats; MODE 1: N times pd_add, pd_sum and
 * pd_backward. Run with N = 0 and N = 20000 and divide the difference by N
 * (docs/benchmarks.md, "The one-path dispatcher"). Prints one JSON line. */
#include <stdio.h>
#include <stdlib.h>

#include "pd/pd.h"

int main(int argc, char **argv)
{
    int mode = argc > 1 ? atoi(argv[1]) : 0, n = argc > 2 ? atoi(argv[2]) : 20000;
    int64_t s[1] = {16};
    struct pd_tensor *a = pd_keep(pd_ones(s, 1, PD_F32)), *b = pd_keep(pd_ones(s, 1, PD_F32));
    if (!a || !b) return 1;
    if (mode) pd_requires_grad_(a, 1);
    for (int i = 0; i < n; i++) {
        int tok = pd_scope_begin();
        struct pd_tensor *c = pd_add(a, b);
        if (mode) pd_backward(pd_sum(c, NULL, 0, 0), NULL, 0);
        pd_scope_end(tok);
    }
    printf("{\"bench\":\"dispatch_loop\",\"mode\":%d,\"iterations\":%d}\n", mode, n);
    pd_tensor_release(a);
    pd_tensor_release(b);
    return 0;
}
