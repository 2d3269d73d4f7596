/* A distributed program that cannot hang (docs/distributed.md, "Failures
 * and timeouts"). Run it with: mpirun -np 2 ./prog */
#include <stdio.h>

#include "pd/pd.h"

int main(void)
{
    pd_dist_set_timeout(20); /* no collective waits longer than 20 s (or: PD_DIST_TIMEOUT=20) */
    int n = pd_dist_world_size(), me = pd_dist_world_rank();
    struct pd_mesh *mesh = pd_mesh_create(&n, 1, (const char *[]){"dp"}, NULL);
    if (!mesh) pd_dist_abort(1, pd_last_error()); /* every rank ends, with the message */

    int tok = pd_scope_begin();
    struct pd_placement shard = pd_shard(0), rep = pd_replicate();
    struct pd_tensor *x = pd_shard_tensor(pd_arange(0, 10, 1, PD_F32), mesh, &shard);
    struct pd_tensor *y = pd_reshard(x, mesh, &rep); /* an all-gather: every rank takes part */
    if (!y) pd_dist_abort(1, pd_last_error());       /* not return: the others may be waiting */
    double sum = pd_item(pd_sum(pd_dtensor_local(y), NULL, 0, 0));
    if (me == 0) printf("%d ranks: the sum of 0..9 is %g\n", n, sum);
    pd_scope_end(tok);
    pd_mesh_release(mesh);
    return sum == 45 ? 0 : 1; /* a non-zero status ends every rank too */
}
