/* paddle.c — a fixed loop of tiny ops for instruction counting:
 *   valgrind --tool=callgrind build/bench_dispatch_loop MODE N
 * MODE 0: N forward pd_add of 16 floats; MODE 1: N times pd_add, pd_sum and
 * pd_backward; MODE 2: N times three views (pd_slice, pd_expand, pd_permute),
 * which pay the view element-limit check; MODE 3: N in-place pd_add_, which
 * pays the write-overlap check; MODE 4 and 5: MODE 0 and 1 on tensors
 * replicated over a 1-rank mesh, which pay the distribute stage (SPMD rule,
 * wrapping; no communication). Run with N = 0 and N = 20000 and divide the
 * difference by N (docs/benchmarks.md, "The one-path dispatcher"). Prints
 * one JSON line with the wall time per iteration too. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common.h"
#include "pd/pd.h"

int main(int argc, char **argv)
{
    int mode = argc > 1 ? atoi(argv[1]) : 0, n = argc > 2 ? atoi(argv[2]) : 20000;
    int64_t s[1] = {16};
    struct pd_tensor *a = pd_keep(pd_ones(s, 1, PD_F32)), *b = pd_keep(pd_ones(s, 1, PD_F32));
    if (!a || !b) return 1;
    struct pd_mesh *m = NULL;
    if (mode >= 4) { /* a 1-rank mesh: the stage's own cost */
        int one = 1;
        struct pd_placement r = pd_replicate();
        m = pd_mesh_create(&one, 1, NULL, (const int[]){pd_dist_world_rank()});
        struct pd_tensor *da = m ? pd_keep(pd_shard_tensor(a, m, &r)) : NULL, *db = m ? pd_keep(pd_shard_tensor(b, m, &r)) : NULL;
        if (!da || !db) return fprintf(stderr, "dispatch_loop: %s\n", pd_last_error()), 1;
        pd_tensor_release(a), pd_tensor_release(b);
        a = da, b = db, mode -= 4;
    }
    if (mode == 1) pd_requires_grad_(a, 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) {
        int tok = pd_scope_begin();
        if (mode == 2) {
            struct pd_tensor *v = pd_slice(a, 0, 2, 6, 1);
            v = pd_permute(pd_expand(pd_reshape(v, (const int64_t[]){4, 1}, 2), (const int64_t[]){4, 3}, 2),
                           (const int[]){1, 0}, 2);
            if (!v) return 1;
        } else if (mode == 3) {
            if (!pd_add_(b, a)) return 1;
        } else {
            struct pd_tensor *c = pd_add(a, b);
            if (mode) pd_backward(pd_sum(c, NULL, 0, 0), NULL, 0);
        }
        pd_scope_end(tok);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (n ? n : 1);
    printf("{\"bench\":\"dispatch_loop\",\"impl\":\"paddle.c\",%s,\"mode\":%d,\"iterations\":%d,"
           "\"ns_per_iter\":%.1f}\n", bench_tags("f32").s, m ? mode + 4 : mode, n, ns);
    pd_tensor_release(a);
    pd_tensor_release(b);
    pd_mesh_release(m);
    return 0;
}
