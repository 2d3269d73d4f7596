/* Each data-parallel rank reads its own rows (docs/distributed.md, "Data
 * loading"). Run it with: mpirun -np 2 ./prog */
#include <stdio.h>

#include "pd/pd.h"

int main(void)
{
    int n = pd_dist_world_size(), me = pd_dist_world_rank();
    struct pd_mesh *mesh = pd_mesh_create(&n, 1, (const char *[]){"dp"}, NULL);
    struct pd_text_dataset *ds = pd_text_dataset_builtin(1, 1000, NULL, NULL, 0.1); /* arithmetic, bytes */
    if (!mesh || !ds) pd_dist_abort(1, pd_last_error());
    struct pd_generator *gen = pd_generator_create(7); /* the same seed on every rank */
    int tok = pd_scope_begin();
    struct pd_tensor *x, *y;
    /* 5 rows of 16 tokens: rank r reads only its rows (3 and 2 on 2 ranks) */
    if (pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 5, 16, gen, mesh, "dp", &x, &y)) pd_dist_abort(1, pd_last_error());
    printf("rank %d of %d: rows %lld of %lld\n", me, n, (long long)pd_tensor_dim(pd_dtensor_local(x), 0),
           (long long)pd_tensor_dim(x, 0));
    /* the pieces together are the batch one process draws from the same seed */
    struct pd_generator *one = pd_generator_create(7);
    struct pd_tensor *ox, *oy;
    pd_dataset_batch(ds, PD_SPLIT_TRAIN, 5, 16, one, &ox, &oy);
    double diff = pd_item(pd_sum(pd_abs(pd_sub(pd_dtensor_full(x), ox)), NULL, 0, 0));
    if (me == 0) printf("the gathered batch %s one process's\n", diff == 0 ? "equals" : "differs from");
    /* evaluation: every validation window once, each batch split over dp */
    struct pd_dataset_iter *it = pd_dataset_iter_create_dist(ds, PD_SPLIT_VAL, 8, 16, mesh, "dp");
    int64_t windows = 0, mine = 0;
    for (int b; (b = pd_dataset_iter_next(it, &x, &y)) > 0;) windows += b, mine += pd_tensor_dim(pd_dtensor_local(x), 0);
    printf("rank %d: %lld of the %lld validation windows\n", me, (long long)mine, (long long)windows);
    pd_dataset_iter_destroy(it);
    pd_scope_end(tok);
    pd_generator_destroy(one);
    pd_generator_destroy(gen);
    pd_text_dataset_destroy(ds);
    pd_mesh_release(mesh);
    return diff == 0 ? 0 : 1;
}
