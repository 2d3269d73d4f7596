/* paddle.c — the distributed data loader under mpirun (2 and 4 ranks;
 * docs/distributed.md "Data loading"): pd_dataset_batch_dist and
 * pd_dataset_iter_create_dist. On dp-only and dp x tp meshes (the dp axis
 * first or second), for even and uneven batches (fewer rows than ranks
 * too), over several steps: each rank's piece equals its rows of the
 * single-process batch bit for bit (the split rule of include/pd/dist.h),
 * the placements are Shard(0) on dp and Replicate elsewhere, the generator
 * advances exactly as pd_dataset_batch's (it stays in step), and the rank
 * reads only its rows' tokens from the store (counted: the figure
 * docs/distributed.md quotes). Packed documents: pd_llama_loss_packed takes
 * document ids made from each rank's rows (split by rows, as the batch) on
 * a tensor-parallel model, with the loss and gradients of the whole ids.
 * Bad input is refused with one line naming the function, and a refused
 * call leaves the generator alone. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"
#include "pd/dist.h"
#include "pd/pd.h"

#include "dist_check.h"

/* Does the piece x (distributed [B, T]) hold rows [r0, r1) of the plain whole? */
static int rows_equal(struct pd_tensor *x, struct pd_tensor *whole, int64_t r0, int64_t r1)
{
    int64_t B = pd_tensor_dim(whole, 0), T = pd_tensor_dim(whole, 1);
    struct pd_tensor *loc = pd_dtensor_local(x);
    if (!loc || pd_tensor_dim(loc, 0) != r1 - r0 || pd_tensor_dim(loc, 1) != T) return 0;
    int64_t *a = calloc((size_t)(B * T + 1), sizeof *a), *b = calloc((size_t)(B * T + 1), sizeof *b);
    int ok = a && b && !pd_to_buffer(whole, a, PD_I64) && !pd_to_buffer(loc, b, PD_I64) &&
             !memcmp(a + r0 * T, b, sizeof *a * (size_t)((r1 - r0) * T));
    free(a);
    free(b);
    return ok;
}

/* Shard(0) on axis dp, Replicate elsewhere, global shape [B, T]. */
static int placed(struct pd_tensor *x, struct pd_mesh *m, int dp, int64_t B, int64_t T)
{
    const struct pd_placement *pl = pd_dtensor_placements(x);
    const int64_t *g = pd_dtensor_shape(x);
    if (!pd_dtensor_is_dist(x) || !pl || !g || g[0] != B || g[1] != T || pd_dtensor_mesh(x) != m) return 0;
    for (int a = 0; a < pd_mesh_ndim(m); a++)
        if (a == dp ? pl[a].kind != PD_SHARD || pl[a].dim != 0 : pl[a].kind != PD_REPLICATE) return 0;
    return 1;
}

/* Several random batches and one pass of the evaluation iterator on mesh m. */
static void loader_on(struct pd_mesh *m, const char *what, struct pd_text_dataset *ds)
{
    int dp = pd_mesh_axis(m, "dp"), n_dp = pd_mesh_size(m, dp), c = pd_mesh_coord(m, dp);
    const int T = 16, batches[] = {8, 5, 1, 3 * n_dp + 1};
    for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++) {
        int B = batches[bi];
        int64_t r0, r1;
        pd_dist_piece(B, n_dp, c, &r0, &r1);
        struct pd_generator *g1 = pd_generator_create(7 + bi), *g2 = pd_generator_create(7 + bi);
        for (int step = 0; step < 3; step++) {
            int tok = pd_scope_begin();
            struct pd_tensor *x, *y, *dx, *dy;
            int64_t before = pdi_dataset_tokens_read();
            int rc = pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, B, T, g2, m, "dp", &dx, &dy);
            int64_t read = pdi_dataset_tokens_read() - before;
            CHECK(rc == 0 && placed(dx, m, dp, B, T) && placed(dy, m, dp, B, T), "%s: batch %d step %d placed", what,
                  B, step);
            before = pdi_dataset_tokens_read();
            CHECK(pd_dataset_batch(ds, PD_SPLIT_TRAIN, B, T, g1, &x, &y) == 0, "%s: the plain batch", what);
            int64_t read_whole = pdi_dataset_tokens_read() - before;
            CHECK(rc == 0 && rows_equal(dx, x, r0, r1) && rows_equal(dy, y, r0, r1),
                  "%s: batch %d step %d: rows [%lld, %lld) equal the single-process batch's", what, B, step,
                  (long long)r0, (long long)r1);
            uint64_t s1, o1, s2, o2;
            pd_generator_get_state(g1, &s1, &o1);
            pd_generator_get_state(g2, &s2, &o2);
            CHECK(s1 == s2 && o1 == o2, "%s: batch %d step %d: the generator in step (%llu vs %llu)", what, B, step,
                  (unsigned long long)o2, (unsigned long long)o1);
            CHECK(read == (r1 - r0) * (T + 1) && read_whole == (int64_t)B * (T + 1),
                  "%s: batch %d: read %lld tokens (whole batch: %lld)", what, B, (long long)read, (long long)read_whole);
            /* the pieces gathered are the whole batch (a collective) */
            struct pd_tensor *fx = pd_dtensor_full(dx);
            CHECK(fx && rows_equal(pd_shard_batch(fx, m, NULL), x, 0, B), "%s: batch %d gathered", what, B);
            if (rank == 0 && step == 0 && B == 8 && !strcmp(what, "dp"))
                printf("test_dist_data: batch 8 x 16 on %d ranks: each rank reads %lld tokens per step "
                       "(%lld bytes of int64 ids and targets), one process %lld (%lld bytes)\n",
                       n_dp, (long long)read, (long long)((r1 - r0) * T * 16), (long long)read_whole,
                       (long long)B * T * 16);
            pd_scope_end(tok);
        }
        pd_generator_destroy(g1);
        pd_generator_destroy(g2);
    }
    /* evaluation: the same windows as the plain iterator, split per batch */
    struct pd_dataset_iter *it = pd_dataset_iter_create(ds, PD_SPLIT_VAL, 3, T);
    struct pd_dataset_iter *dit = pd_dataset_iter_create_dist(ds, PD_SPLIT_VAL, 3, T, m, "dp");
    CHECK(it && dit && pd_dataset_iter_num_windows(dit) == pd_dataset_iter_num_windows(it), "%s: iterators", what);
    for (int pass = 0; pass < 2 && it && dit; pass++) {
        int k = 0, b, db;
        do {
            int tok = pd_scope_begin();
            struct pd_tensor *x = NULL, *y = NULL, *dx = NULL, *dy = NULL;
            b = pd_dataset_iter_next(it, &x, &y);
            int64_t before = pdi_dataset_tokens_read();
            db = pd_dataset_iter_next(dit, &dx, &dy);
            int64_t read = pdi_dataset_tokens_read() - before, r0 = 0, r1 = 0;
            CHECK(db == b, "%s: eval batch %d: %d rows, plain %d", what, k, db, b);
            if (b > 0 && db == b) {
                pd_dist_piece(b, n_dp, c, &r0, &r1);
                CHECK(placed(dx, m, dp, b, T) && rows_equal(dx, x, r0, r1) && rows_equal(dy, y, r0, r1),
                      "%s: eval batch %d: rows [%lld, %lld)", what, k, (long long)r0, (long long)r1);
                CHECK(read == (r1 - r0) * (T + 1), "%s: eval batch %d read %lld tokens", what, k, (long long)read);
            }
            pd_scope_end(tok);
            k++;
        } while (b > 0 && db == b);
        pd_dataset_iter_reset(it);
        pd_dataset_iter_reset(dit);
    }
    pd_dataset_iter_destroy(dit);
    pd_dataset_iter_destroy(it);
}

/* Document ids of the rows of x (plain): a new document after each '\n'. */
static struct pd_tensor *doc_ids(struct pd_tensor *x)
{
    int64_t b = pd_tensor_dim(x, 0), t = pd_tensor_dim(x, 1);
    int64_t *v = calloc((size_t)(b * t + 1), sizeof *v);
    if (!v || pd_to_buffer(x, v, PD_I64)) return NULL;
    for (int64_t i = 0; i < b; i++)
        for (int64_t j = 0, d = 0; j < t; j++) {
            int nl = v[i * t + j] == '\n';
            v[i * t + j] = d;
            d += nl;
        }
    struct pd_tensor *out = pd_from_buffer(v, (int64_t[]){b, t}, 2, PD_I64);
    free(v);
    return out;
}

/* The packed loss on a dp x tp model: document ids made from each rank's
 * rows (placed like the batch) against the whole ids. */
static void packed(struct pd_mesh *m, struct pd_text_dataset *ds)
{
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    c.vocab_size = 256, c.dim = 16, c.n_layers = 1, c.n_heads = 4, c.n_kv_heads = 2, c.hidden_dim = 24;
    c.max_seq_len = 16;
    struct pd_llama *model = pd_llama_create(&c, 3);
    struct pd_shard_plan plan[16];
    int np = pd_llama_shard_plan(0, plan, 16);
    CHECK(model && np > 0 && !pd_shard_layer(pd_llama_state_dict(model), m, "tp", plan, np), "packed: the model");
    struct pd_generator *g = pd_generator_create(11);
    int tok = pd_scope_begin();
    struct pd_tensor *x, *y;
    CHECK(!pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 5, 16, g, m, "dp", &x, &y), "packed: the batch");
    struct pd_tensor *local = doc_ids(pd_dtensor_local(x));
    struct pd_tensor *doc = local ? pd_dtensor_from_local(local, pd_dtensor_shape(x), m, pd_dtensor_placements(x)) : NULL;
    struct pd_tensor *whole = doc ? pd_dtensor_full(doc) : NULL;
    struct pd_tensor *l1 = whole ? pd_llama_loss_packed(model, x, y, doc) : NULL;
    struct pd_tensor *l2 = whole ? pd_llama_loss_packed(model, x, y, whole) : NULL;
    double a = l1 ? pd_item(l1) : -1, b = l2 ? pd_item(l2) : -2;
    CHECK(l1 && l2 && fabs(a - b) <= 1e-6 * fabs(b), "packed: loss with the rows' doc ids %.9g, whole %.9g", a, b);
    CHECK(l1 && !pd_backward(l1, NULL, 0), "packed: backward");
    struct pd_placement bad[PD_MAX_MESH_DIMS];
    for (int k = 0; k < pd_mesh_ndim(m); k++) bad[k] = pd_replicate();
    bad[pd_mesh_axis(m, "tp")] = pd_shard(1);
    struct pd_tensor *cols = whole ? pd_shard_tensor(whole, m, bad) : NULL;
    CHECK(cols && !pd_llama_loss_packed(model, x, y, cols) && strstr(pd_last_error(), "split by rows"),
          "packed: doc ids split by columns refused");
    pd_scope_end(tok);
    pd_shard_plans_clear();
    pd_generator_destroy(g);
    pd_llama_destroy(model);
}

/* Bad input: a refusal names the function in one line, outputs are NULL,
 * and the generator is where it was. */
static int refused(int rc, struct pd_tensor *x, struct pd_tensor *y, const char *fn)
{
    const char *e = pd_last_error();
    return rc < 0 && !x && !y && e && strstr(e, fn) && !strchr(e, '\n');
}

static void errors(struct pd_mesh *m, struct pd_text_dataset *ds)
{
    const char *fn = "dataset_batch_dist";
    struct pd_generator *g = pd_generator_create(3);
    struct pd_tensor *x = NULL, *y = NULL;
    int tok = pd_scope_begin();
#define BAD(call, what)                                                                                                \
    do {                                                                                                               \
        x = y = (struct pd_tensor *)1;                                                                                 \
        int rc_ = (call);                                                                                              \
        uint64_t s_, o_;                                                                                               \
        pd_generator_get_state(g, &s_, &o_);                                                                           \
        CHECK(refused(rc_, x, y, fn) && o_ == 0, "%s refused", what);                                                  \
    } while (0)
    BAD(pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 4, 8, g, m, "nope", &x, &y), "an axis not in the mesh");
    BAD(pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 4, 8, g, m, "\x01\n", &x, &y), "a hostile axis name");
    BAD(pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 4, 8, g, NULL, "dp", &x, &y), "a NULL mesh");
    BAD(pd_dataset_batch_dist(NULL, PD_SPLIT_TRAIN, 4, 8, g, m, "dp", &x, &y), "a NULL dataset");
    BAD(pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 0, 8, g, m, "dp", &x, &y), "batch 0");
    BAD(pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, -3, 8, g, m, "dp", &x, &y), "a negative batch");
    BAD(pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 4, 0, g, m, "dp", &x, &y), "seq_len 0");
    BAD(pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 4, 1 << 30, g, m, "dp", &x, &y), "seq_len past the split");
    BAD(pd_dataset_batch_dist(ds, (enum pd_split)7, 4, 8, g, m, "dp", &x, &y), "an unknown split");
    x = y = NULL;
    CHECK(pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 4, 8, g, m, "dp", NULL, &y) < 0 &&
              strstr(pd_last_error(), fn) && pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 4, 8, g, m, "dp", &x, NULL) < 0,
          "NULL outputs refused");
    fn = "dataset_iter_create_dist";
    CHECK(refused(pd_dataset_iter_create_dist(ds, PD_SPLIT_VAL, 2, 8, m, "nope") ? 0 : -1, NULL, NULL, fn) &&
              refused(pd_dataset_iter_create_dist(ds, PD_SPLIT_VAL, 2, 8, NULL, "dp") ? 0 : -1, NULL, NULL, fn) &&
              refused(pd_dataset_iter_create_dist(NULL, PD_SPLIT_VAL, 2, 8, m, "dp") ? 0 : -1, NULL, NULL, fn) &&
              refused(pd_dataset_iter_create_dist(ds, PD_SPLIT_VAL, 0, 8, m, "dp") ? 0 : -1, NULL, NULL, fn) &&
              refused(pd_dataset_iter_create_dist(ds, PD_SPLIT_VAL, 2, -1, m, "dp") ? 0 : -1, NULL, NULL, fn),
          "iterator: bad axis, NULL mesh, NULL dataset, batch 0, seq_len -1 refused");
    /* axis NULL: every rank reads every row (Replicate) */
    struct pd_tensor *rx, *ry;
    int rc = pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, 3, 8, NULL, m, NULL, &rx, &ry);
    CHECK(rc == 0 && pd_dtensor_is_dist(rx) && pd_tensor_dim(pd_dtensor_local(rx), 0) == 3 &&
              pd_dtensor_placements(rx)[0].kind == PD_REPLICATE,
          "axis NULL: replicated");
#undef BAD
    pd_scope_end(tok);
    pd_generator_destroy(g);
}

int main(void)
{
    world = pd_dist_world_size();
    rank = pd_dist_world_rank();
    struct pd_text_dataset *ds = pd_text_dataset_builtin(5, 400, NULL, NULL, 0.1);
    CHECK(ds != NULL, "dataset");
    int tok = pd_scope_begin();
    struct pd_mesh *m = pd_mesh_create(&world, 1, (const char *[]){"dp"}, NULL);
    if (ds && m) loader_on(m, "dp", ds), errors(m, ds);
    pd_mesh_release(m);
    /* dp x tp, the dp axis first and second */
    int half = world / 2, s1[2] = {half, 2}, s2[2] = {2, half};
    m = pd_mesh_create(s1, 2, (const char *[]){"dp", "tp"}, NULL);
    if (ds && m) loader_on(m, "dp x tp", ds), packed(m, ds);
    pd_mesh_release(m);
    m = pd_mesh_create(s2, 2, (const char *[]){"tp", "dp"}, NULL);
    if (ds && m) loader_on(m, "tp x dp", ds);
    pd_mesh_release(m);
    pd_scope_end(tok);
    pd_text_dataset_destroy(ds);
    int total = dist_check_total();
    if (rank == 0) printf("test_dist_data: %d ranks, %d checks per rank, %d failed\n", world, checks, total);
    return total ? 1 : 0;
}
