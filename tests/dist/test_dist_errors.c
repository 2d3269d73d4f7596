/* paddle.c — the distributed API's bad input under mpirun (2 and 4 ranks):
 * the constructors (pd_dtensor_empty ... randint), pd_dtensor_distribute_,
 * pd_shard_layer with bad plans, pd_shard_batch, pd_shard_optimizer and
 * pd_state_dict_gather. Each refusal returns an error whose one-line
 * message names the function, and loses nothing: a refused call leaves
 * its tensors, parameters and generator as they were (docs/reliability.md,
 * "Coverage"). The rest of include/pd/dist.h is refused in
 * tests/dist/test_dist_reshard.c, test_dist_dp.c and (the data loader)
 * test_dist_data.c. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "pd/dist.h"
#include "pd/pd.h"

#include "dist_check.h"

/* A refusal: no result, and one line naming fn. */
static int refused(const void *result, const char *fn)
{
    const char *e = pd_last_error();
    return !result && e && strstr(e, fn) && !strchr(e, '\n');
}
static int refused_rc(int rc, const char *fn)
{
    const char *e = pd_last_error();
    return rc < 0 && e && strstr(e, fn) && !strchr(e, '\n');
}

static void constructors(struct pd_mesh *m)
{
    const int64_t s[2] = {4, 6}, neg[2] = {4, -1};
    struct pd_placement r = pd_replicate(), s5 = pd_shard(5), sneg = pd_shard(-1), badop = pd_partial((enum pd_reduce_op)9),
                        avg = pd_partial(PD_RED_AVG), badkind = {(enum pd_placement_kind)7, 0, 0, 0};
    const struct pd_placement *bad_pl[] = {&s5, &sneg, &badop, &badkind};
    for (int k = 0; k < 4; k++) {
        const struct pd_placement *p = bad_pl[k];
        CHECK(refused(pd_dtensor_empty(s, 2, PD_F32, m, p), "dtensor_empty"), "empty: bad placement %d", k);
        CHECK(refused(pd_dtensor_zeros(s, 2, PD_F32, m, p), "dtensor_zeros"), "zeros: bad placement %d", k);
        CHECK(refused(pd_dtensor_ones(s, 2, PD_F32, m, p), "dtensor_ones"), "ones: bad placement %d", k);
        CHECK(refused(pd_dtensor_constant(s, 2, 2, PD_F32, m, p), "dtensor_constant"), "constant: bad placement %d", k);
        CHECK(refused(pd_dtensor_uniform(s, 2, 0, 1, PD_F32, NULL, m, p), "dtensor_uniform"), "uniform: bad placement %d", k);
        CHECK(refused(pd_dtensor_normal(s, 2, 0, 1, PD_F32, NULL, m, p), "dtensor_normal"), "normal: bad placement %d", k);
        CHECK(refused(pd_dtensor_randint(s, 2, 0, 5, PD_I64, NULL, m, p), "dtensor_randint"), "randint: bad placement %d", k);
    }
    /* NULLs, ndim, shapes and dtypes: each message names the constructor */
    CHECK(refused(pd_dtensor_zeros(s, 2, PD_F32, NULL, &r), "dtensor_zeros") &&
              refused(pd_dtensor_zeros(s, 2, PD_F32, m, NULL), "dtensor_zeros") &&
              refused(pd_dtensor_zeros(NULL, 2, PD_F32, m, &r), "dtensor_zeros") &&
              refused(pd_dtensor_zeros(s, -1, PD_F32, m, &r), "dtensor_zeros") &&
              refused(pd_dtensor_zeros(s, PD_MAX_DIMS + 1, PD_F32, m, &r), "dtensor_zeros"),
          "zeros: NULLs and ndim");
    CHECK(refused(pd_dtensor_empty(neg, 2, PD_F32, m, &r), "dtensor_empty"), "empty: a negative dim");
    /* the sequence constructors: the op's own checks, named after the
     * function called (they read "arange: ..." and "tensor: ..." before) */
    CHECK(refused(pd_dtensor_arange(0, 4, 0, PD_F32, m, &r), "dtensor_arange") &&
              refused(pd_dtensor_arange(0, NAN, 1, PD_F32, m, &r), "dtensor_arange") &&
              refused(pd_dtensor_arange(0, 4, 1, (enum pd_dtype)99, m, &r), "dtensor_arange") &&
              refused(pd_dtensor_arange(0, 4, 1, PD_F32, m, &s5), "dtensor_arange") &&
              refused(pd_dtensor_arange(0, 4, 1, PD_F32, NULL, &r), "dtensor_arange"),
          "arange: step 0, NaN, dtype 99, a bad placement, no mesh");
    CHECK(refused(pd_dtensor_linspace(0, 1, -2, PD_F32, m, &r), "dtensor_linspace") &&
              refused(pd_dtensor_linspace(0, INFINITY, 4, PD_F32, m, &r), "dtensor_linspace") &&
              refused(pd_dtensor_linspace(0, 1, 4, (enum pd_dtype)-1, m, &r), "dtensor_linspace") &&
              refused(pd_dtensor_linspace(0, 1, 4, PD_F32, m, NULL), "dtensor_linspace"),
          "linspace: num -2, infinity, dtype -1, no placements");
    CHECK(refused(pd_dtensor_eye(-3, -1, PD_F32, m, &r), "dtensor_eye") &&
              refused(pd_dtensor_eye(3, 3, (enum pd_dtype)99, m, &r), "dtensor_eye") &&
              refused(pd_dtensor_eye(3, 3, PD_F32, m, &badkind), "dtensor_eye"),
          "eye: negative n, dtype 99, a bad placement");
    CHECK(refused(pd_dtensor_ones(s, 2, (enum pd_dtype)99, m, &r), "dtensor_ones"), "ones: dtype 99");
    CHECK(refused(pd_dtensor_constant(s, 2, 1, (enum pd_dtype)-1, m, &r), "dtensor_constant"), "constant: dtype -1");
    CHECK(refused(pd_dtensor_ones(s, 2, PD_I32, m, &avg), "dtensor_ones"), "ones: Partial(avg) of an integer dtype");
    CHECK(refused(pd_dtensor_uniform(s, 2, 1, 0, PD_F32, NULL, m, &r), "dtensor_uniform") &&
              refused(pd_dtensor_uniform(s, 2, NAN, 1, PD_F32, NULL, m, &r), "dtensor_uniform") &&
              refused(pd_dtensor_uniform(s, 2, -INFINITY, 1, PD_F32, NULL, m, &r), "dtensor_uniform") &&
              refused(pd_dtensor_uniform(s, 2, 0, 1, PD_I32, NULL, m, &r), "dtensor_uniform") &&
              refused(pd_dtensor_uniform(s, 2, 0, 1, (enum pd_dtype)99, NULL, m, &r), "dtensor_uniform"),
          "uniform: bounds and dtypes");
    CHECK(refused(pd_dtensor_normal(s, 2, 0, -1, PD_F32, NULL, m, &r), "dtensor_normal") &&
              refused(pd_dtensor_normal(s, 2, NAN, 1, PD_F32, NULL, m, &r), "dtensor_normal") &&
              refused(pd_dtensor_normal(s, 2, 0, INFINITY, PD_F32, NULL, m, &r), "dtensor_normal") &&
              refused(pd_dtensor_normal(s, 2, 0, 1, PD_I64, NULL, m, &r), "dtensor_normal"),
          "normal: mean, std and dtypes");
    CHECK(refused(pd_dtensor_randint(s, 2, 5, 5, PD_I64, NULL, m, &r), "dtensor_randint") &&
              refused(pd_dtensor_randint(s, 2, 0, 5, PD_F32, NULL, m, &r), "dtensor_randint") &&
              refused(pd_dtensor_randint(s, 2, 0, 5, PD_BOOL, NULL, m, &r), "dtensor_randint") &&
              refused(pd_dtensor_randint(s, 2, 0, 5, (enum pd_dtype)99, NULL, m, &r), "dtensor_randint"),
          "randint: bounds and dtypes");
    /* a refused random draw does not move the generator */
    struct pd_generator *g = pd_default_generator();
    uint64_t seed0, off0, seed1, off1;
    pd_generator_get_state(g, &seed0, &off0);
    CHECK(!pd_dtensor_uniform(neg, 2, 0, 1, PD_F32, g, m, &r) && !pd_dtensor_normal(s, 2, 0, 1, PD_F32, g, m, &s5) &&
              !pd_dtensor_randint(s, 2, 0, 0, PD_I8, g, m, &r) && !pd_dtensor_uniform(s, 2, 0, 1, PD_F32, g, NULL, &r),
          "refused draws");
    pd_generator_get_state(g, &seed1, &off1);
    CHECK(seed0 == seed1 && off0 == off1, "refused draws moved the generator (%llu -> %llu)", (unsigned long long)off0,
          (unsigned long long)off1);
    /* still in step: a good one after the refusals */
    struct pd_tensor *z = pd_dtensor_zeros(s, 2, PD_F32, m, (const struct pd_placement[]){pd_shard(1)});
    CHECK(z && pd_dtensor_is_dist(z), "a good constructor after the refusals");
}

/* A plain parameter set: "a.weight" [4, 6], "a.bias" [4], "b.weight" [6, 4]. */
static struct pd_state_dict *params(void)
{
    struct pd_state_dict *sd = pd_state_dict_create();
    const char *names[] = {"a.weight", "a.bias", "b.weight"};
    const int64_t shapes[3][2] = {{4, 6}, {4, 0}, {6, 4}};
    for (int i = 0; i < 3; i++) {
        struct pd_tensor *t = pd_arange(0, i == 1 ? 4 : 24, 1, PD_F32);
        t = pd_contiguous(pd_reshape(t, shapes[i], i == 1 ? 1 : 2));
        pd_state_dict_add(sd, names[i], pd_requires_grad_(t, 1));
    }
    return sd;
}

static int all_plain(const struct pd_state_dict *sd)
{
    for (int i = 0; i < pd_state_dict_size(sd); i++)
        if (pd_dtensor_is_dist(pd_state_dict_tensor(sd, i))) return 0;
    return 1;
}

static void distribute(struct pd_mesh *m)
{
    struct pd_placement r = pd_replicate(), s5 = pd_shard(5), badop = pd_partial((enum pd_reduce_op)9);
    struct pd_tensor *t = pd_requires_grad_(pd_arange(0, 6, 1, PD_F32), 1);
    CHECK(refused_rc(pd_dtensor_distribute_(NULL, m, &r), "dtensor_distribute_") &&
              refused_rc(pd_dtensor_distribute_(t, NULL, &r), "dtensor_distribute_") &&
              refused_rc(pd_dtensor_distribute_(t, m, NULL), "dtensor_distribute_"),
          "distribute_: NULLs");
    CHECK(refused_rc(pd_dtensor_distribute_(t, m, &s5), "dtensor_distribute_") &&
              refused_rc(pd_dtensor_distribute_(t, m, &badop), "dtensor_distribute_"),
          "distribute_: bad placements");
    CHECK(!pd_dtensor_is_dist(t) && pd_tensor_dim(t, 0) == 6 && pd_item(pd_sum(t, NULL, 0, 0)) == 15, "a refused distribute_ kept the tensor");
    struct pd_tensor *y = pd_scale(t, 2);
    CHECK(refused_rc(pd_dtensor_distribute_(y, m, &r), "dtensor_distribute_"), "distribute_: not a leaf");
    CHECK(pd_dtensor_distribute_(t, m, &r) == 0 && pd_dtensor_is_dist(t), "distribute_ of a good leaf");
    CHECK(refused_rc(pd_dtensor_distribute_(t, m, &r), "dtensor_distribute_"), "distribute_: twice");
}

static void shard_layer(struct pd_mesh *m)
{
    struct pd_state_dict *sd = params();
    const struct pd_shard_plan good = {"a", PD_PLAN_COLWISE, 0, PD_PREP_NONE, PD_PREP_NONE};
    const struct pd_shard_plan bad[] = {
        {NULL, PD_PLAN_COLWISE, 0, PD_PREP_NONE, PD_PREP_NONE},                    /* no module name */
        {"a", (enum pd_plan_kind)9, 0, PD_PREP_NONE, PD_PREP_NONE},                /* unknown kind */
        {"a", (enum pd_plan_kind)-1, 0, PD_PREP_NONE, PD_PREP_NONE},               /* unknown kind */
        {"a", PD_PLAN_SHARD, -1, PD_PREP_NONE, PD_PREP_NONE},                      /* a negative dim */
        {"a", PD_PLAN_COLWISE, 0, (enum pd_prep)7, PD_PREP_NONE},                  /* unknown input prep */
        {"a", PD_PLAN_COLWISE, 0, PD_PREP_NONE, (enum pd_prep)-2},                 /* unknown output prep */
        {"", PD_PLAN_COLWISE, 0, PD_PREP_NONE, PD_PREP_NONE},                      /* an empty module name */
    };
    const int nbad = (int)(sizeof bad / sizeof bad[0]);
    CHECK(refused_rc(pd_shard_layer(NULL, m, "x", &good, 1), "shard_layer") &&
              refused_rc(pd_shard_layer(sd, NULL, "x", &good, 1), "shard_layer") &&
              refused_rc(pd_shard_layer(sd, m, "x", NULL, 1), "shard_layer") &&
              refused_rc(pd_shard_layer(sd, m, "x", &good, -1), "shard_layer"),
          "shard_layer: NULLs and n_plan");
    CHECK(refused_rc(pd_shard_layer(sd, m, "nope", &good, 1), "shard_layer") && strstr(pd_last_error(), "nope") &&
              refused_rc(pd_shard_layer(sd, m, NULL, &good, 1), "shard_layer") &&
              refused_rc(pd_shard_layer(sd, m, "x\n\"y", &good, 1), "shard_layer"),
          "shard_layer: bad axis names");
    for (int k = 0; k < nbad; k++) {
        /* the bad plan after a good one: nothing may be converted by the time it is refused */
        struct pd_shard_plan two[2] = {good, bad[k]};
        two[0].module = "b";
        CHECK(refused_rc(pd_shard_layer(sd, m, "x", two, 2), "shard_layer"), "shard_layer: bad plan %d accepted", k);
        CHECK(all_plain(sd), "shard_layer: bad plan %d converted parameters before refusing", k);
    }
    pd_shard_plans_clear();
    pd_shard_plans_clear(); /* twice, and with nothing registered: a no-op */
    /* a parameter living on another mesh */
    struct pd_mesh *m2 = pd_mesh_create((const int[]){pd_dist_world_size()}, 1, (const char *[]){"y"}, NULL);
    struct pd_placement r = pd_replicate();
    CHECK(pd_dtensor_distribute_(pd_state_dict_get(sd, "b.weight"), m2, &r) == 0, "one parameter on another mesh");
    CHECK(refused_rc(pd_shard_layer(sd, m, "x", &good, 1), "shard_layer") && strstr(pd_last_error(), "another mesh"),
          "shard_layer: a parameter on another mesh");
    pd_mesh_release(m2);
    pd_state_dict_destroy(sd);
    /* pd_llama_shard_plan: room */
    struct pd_shard_plan p[12];
    CHECK(refused_rc(pd_llama_shard_plan(1, p, 11), "llama_shard_plan") && refused_rc(pd_llama_shard_plan(0, NULL, 12), "llama_shard_plan") &&
              refused_rc(pd_llama_shard_plan(0, p, -1), "llama_shard_plan") && pd_llama_shard_plan(1, p, 12) == 12,
          "llama_shard_plan: room");
}

static void batch_optimizer_gather(struct pd_mesh *m)
{
    struct pd_tensor *b = pd_arange(0, 8, 1, PD_I64);
    struct pd_placement r = pd_replicate();
    CHECK(refused(pd_shard_batch(NULL, m, "x"), "shard_batch") && refused(pd_shard_batch(b, NULL, "x"), "shard_batch") &&
              refused(pd_shard_batch(b, m, "nope"), "shard_batch") && refused(pd_shard_batch(b, m, "\x01\n"), "shard_batch"),
          "shard_batch: NULLs and axis names");
    CHECK(refused(pd_shard_batch(pd_shard_tensor(b, m, &r), m, "x"), "shard_batch"), "shard_batch: a distributed batch");
    CHECK(refused(pd_shard_batch(pd_scalar(1, PD_I64), m, "x"), "shard_batch"), "shard_batch: a 0-d batch");
    struct pd_tensor *sb = pd_shard_batch(b, m, "x");
    CHECK(sb && pd_dtensor_is_dist(sb) && pd_shard_batch(b, m, NULL), "shard_batch of a good batch");
    CHECK(refused_rc(pd_shard_optimizer(NULL), "shard_optimizer"), "shard_optimizer: NULL");
    CHECK(refused(pd_state_dict_gather(NULL), "state_dict_gather"), "state_dict_gather: NULL");
    /* an optimizer and a gather over parameters in different placements */
    struct pd_state_dict *sd = params();
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, PD_OPTIM_ADAMW);
    struct pd_optimizer *o = pd_optimizer_create_for(&cfg, sd);
    const struct pd_shard_plan plan = {"a", PD_PLAN_COLWISE, 0, PD_PREP_NONE, PD_PREP_NONE};
    CHECK(o && pd_shard_layer(sd, m, "x", &plan, 1) == 0 && pd_shard_optimizer(o) == 0 && pd_shard_optimizer(o) == 0,
          "shard_optimizer, twice");
    struct pd_state_dict *g = pd_state_dict_gather(sd);
    CHECK(g && all_plain(g) && pd_state_dict_size(g) == 3 && pd_tensor_dim(pd_state_dict_get(g, "a.weight"), 0) == 4,
          "state_dict_gather of a sharded set");
    pd_state_dict_destroy(g);
    pd_optimizer_destroy(o);
    pd_state_dict_destroy(sd);
    pd_shard_plans_clear();
}

int main(void)
{
    int world = pd_dist_world_size();
    rank = pd_dist_world_rank();
    struct pd_mesh *m = pd_mesh_create(&world, 1, (const char *[]){"x"}, NULL);
    int tok = pd_scope_begin();
    constructors(m);
    distribute(m);
    shard_layer(m);
    batch_optimizer_gather(m);
    pd_scope_end(tok);
    pd_mesh_release(m);
    int total = dist_check_total();
    if (rank == 0) printf("test_dist_errors: %d ranks, %d checks per rank, %d failed\n", world, checks, total);
    return total ? 1 : 0;
}
