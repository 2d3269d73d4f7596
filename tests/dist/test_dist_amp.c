/* paddle.c — f16 autocast and the gradient scaler on distributed tensors
 * under mpirun (2 and 4 ranks; docs/distributed.md "f16 autocast and the
 * gradient scaler").
 *
 * 1. Unscaling is exact and done once: on every mesh (with the
 *    data-parallel reduction attached where there is a dp axis), the
 *    gradients of backward(scale * loss) after pd_grad_scaler_unscale equal
 *    those of backward(loss) bit for bit (f32, a power-of-two scale), the
 *    Partial gradients of the dp reduction included.
 * 2. A tiny Llama trains STEPS steps under f16 autocast with the scaler on
 *    DP2, TP2, TP2+SP (2 ranks), DP4, DP2xTP2, DP2xTP2+SP (4 ranks): the losses, the scale
 *    after each step and whether each step was taken equal one process's
 *    f16 scaler run (losses within TOL_LOSS_F16, final parameters within
 *    TOL_PARAM_F16; the scales and the steps taken exactly), and the scale
 *    is the same on every rank.
 * 3. An inf in one rank's piece of one gradient at step INJECT: a
 *    tensor-parallel (Shard) weight's piece, one rank's copy of a reduced
 *    (Replicate) gradient, or one rank's contribution to the data-parallel
 *    sum (before the reduction). Every rank must skip that step, halve the
 *    scale and leave the parameters as they were; the run then goes on as
 *    one process's run with the same inf (which skips the same step). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/amp.h"
#include "pd/dist.h"
#include "pd/optim.h"
#include "pd/pd.h"

#include "dist_check.h"
#include "dist_llama.h"

#define STEPS 12
#define INJECT 5 /* the step whose gradient gets an inf (0-based) */
#define B 4
#define T 8
/* f16 rounds to 2^-11 (bf16: 2^-8), and the runs round at different points
 * (docs/distributed.md "bf16 autocast", which holds for f16). Measured
 * over these 12 steps (printed): losses within 2.3e-5 relative (DP2;
 * TP2 8.4e-6, DP4 5.2e-6, DP2xTP2 6.2e-6), final parameters within 2.6e-3
 * of their scale (DP2, layer 0's v_proj: each rank's half-batch weight
 * gradient is rounded to f16 before the sum, and the halves nearly cancel;
 * TP2 4.7e-4, DP4 1.9e-4, DP2xTP2 4.0e-4). Without autocast the same runs
 * agree to 1.6e-7. The tolerances are about four times the largest. */
#define TOL_LOSS_F16 1e-4
#define TOL_PARAM_F16 1e-2

static struct pd_llama_config config(void) { return dist_llama_config(T); }

/* The batch of a step, the same on every rank: ids and next-token targets. */
static void batch(int step, struct pd_tensor **x, struct pd_tensor **y)
{
    int64_t ids[B * (T + 1)];
    for (int b = 0; b < B; b++)
        for (int t = 0; t <= T; t++) ids[b * (T + 1) + t] = (step * 5 + b * 11 + t * (3 - b % 2)) % 40;
    struct pd_tensor *all = pd_from_buffer(ids, (int64_t[]){B, T + 1}, 2, PD_I64);
    *x = pd_contiguous(pd_slice(all, 1, 0, T, 1));
    *y = pd_contiguous(pd_slice(all, 1, 1, T + 1, 1));
}

/* Where the inf goes. */
enum inject {
    INJ_NONE,
    INJ_SHARD,   /* one rank's piece of a tensor-parallel (Shard) weight's gradient */
    INJ_REPLICA, /* one rank's copy of a replicated, data-parallel reduced gradient */
    INJ_PARTIAL, /* one rank's contribution to the data-parallel sum, before the reduction */
};
#define SHARD_PARAM "model.layers.0.self_attn.q_proj.weight"
#define REPLICA_PARAM "model.norm.weight"

/* The rank whose piece gets the inf: the last one. */
static int victim(void) { return rank == world - 1; }

/* An inf in the first element of g's piece on the victim rank (of g itself
 * in one process). */
static int poison(struct pd_tensor *g, int dist)
{
    if (dist && !victim()) return 0;
    struct pd_tensor *l = dist ? pd_dtensor_local(g) : g;
    float *p = l && pd_tensor_is_contiguous(l) && pd_tensor_dtype(l) == PD_F32 ? pd_tensor_data(l) : NULL;
    if (!p || pd_tensor_numel(l) < 1) return -1;
    p[0] = INFINITY;
    return 0;
}

struct hook_ctx {
    int armed, dist, failed;
};

/* INJ_PARTIAL: the leaf's gradient as it arrives, before the data-parallel
 * hook copies it into its bucket (this hook was registered first). */
static struct pd_tensor *partial_hook(struct pd_tensor *g, void *ctx)
{
    struct hook_ctx *h = ctx;
    if (h->armed && poison(g, h->dist)) h->failed = 1;
    h->armed = 0;
    return NULL;
}

static int seq_par; /* the tp plan with sequence parallelism */

struct run {
    double loss[STEPS], scale[STEPS];
    int stepped[STEPS];
    struct pd_state_dict *params; /* final, whole */
};

/* Is v the same on every rank? */
static int same_everywhere(double v)
{
    double lo = v, hi = v;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

/* The model's parameters whole (collective on a mesh). */
static struct pd_state_dict *whole(struct pd_state_dict *sd, int dist)
{
    if (dist) return pd_state_dict_gather(sd);
    struct pd_state_dict *w = pd_state_dict_create();
    int tok = pd_scope_begin(); /* the clones' own references (the dict takes one): called outside a scope too */
    for (int i = 0; w && i < pd_state_dict_size(sd); i++)
        pd_state_dict_set(w, pd_state_dict_name(sd, i), pd_clone(pd_detach(pd_state_dict_tensor(sd, i))), 0);
    pd_scope_end(tok);
    return w;
}

static int same_params(struct pd_state_dict *a, struct pd_state_dict *b)
{
    int same = pd_state_dict_size(a) == pd_state_dict_size(b);
    for (int i = 0; same && i < pd_state_dict_size(a); i++) {
        struct pd_tensor *y = pd_state_dict_get(b, pd_state_dict_name(a, i));
        same = y && dist_diff(pd_state_dict_tensor(a, i), y) == 0;
    }
    return same;
}

/* Train under f16 autocast with the scaler; mesh NULL: one process. dp/tp:
 * the axes' names (NULL: none). The dp axis has the bucketed reduction
 * (pd_dp_attach), as paddlec train --mesh. */
static int train(struct run *out, struct pd_mesh *m, const char *dp, const char *tp, enum inject inj, const char *label)
{
    struct pd_llama_config c = config();
    struct pd_llama *model = pd_llama_create(&c, 3);
    struct pd_state_dict *sd = pd_llama_state_dict(model);
    int n = pd_state_dict_size(sd), rc = 0;
    struct hook_ctx hk = {0, m != NULL, 0};
    if (inj == INJ_PARTIAL && pd_tensor_register_hook(pd_state_dict_get(sd, REPLICA_PARAM), partial_hook, &hk)) return -1;
    if (m) {
        struct pd_shard_plan plan[16];
        int np = tp ? pd_llama_shard_plan(seq_par, plan, 16) : 0;
        if (np < 0 || pd_shard_layer(sd, m, tp, plan, np)) return -1;
    }
    struct pd_dp *red = NULL;
    if (m && dp) {
        struct pd_tensor *ps[64];
        for (int i = 0; i < n && i < 64; i++) ps[i] = pd_state_dict_tensor(sd, i);
        if (!(red = pd_dp_attach(ps, n, m, dp, 0))) return -1;
    }
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    oc.lr = 3e-3, oc.weight_decay = 0.1;
    struct pd_optimizer *opt = pd_optimizer_create_for(&oc, sd);
    struct pd_grad_scaler_config scfg;
    pd_grad_scaler_config_default(&scfg);
    scfg.init_scale = 1024, scfg.growth_interval = 3; /* grows during the run: 2^10 -> 2^14 */
    struct pd_grad_scaler *sc = pd_grad_scaler_create(&scfg);
    if (!opt || !sc) return -1;
    for (int s = 0; s < STEPS && !rc; s++) {
        int tok = pd_scope_begin();
        struct pd_tensor *x, *y;
        batch(s, &x, &y);
        if (m) x = pd_shard_batch(x, m, dp), y = pd_shard_batch(y, m, dp);
        int ac = pd_autocast_begin(PD_F16);
        struct pd_tensor *l = pd_llama_loss(model, x, y);
        pd_autocast_end(ac);
        hk.armed = inj == INJ_PARTIAL && s == INJECT;
        rc = !l || pd_backward(pd_grad_scaler_scale(sc, l), NULL, 0);
        CHECK(!hk.failed, "%s: could not put the inf in the gradient", label);
        if (!rc) out->loss[s] = pd_item(l);
        struct pd_state_dict *before = NULL;
        if (!rc && s == INJECT && inj != INJ_NONE) {
            before = whole(sd, m != NULL);
            if (inj != INJ_PARTIAL) { /* the reduced gradients, then one rank's piece */
                if (red) rc = pd_dp_finish(red);
                struct pd_tensor *g = pd_tensor_grad(pd_state_dict_get(sd, inj == INJ_SHARD ? SHARD_PARAM : REPLICA_PARAM));
                CHECK(!rc && g && poison(g, m != NULL) == 0, "%s: could not put the inf in the gradient", label);
            }
        }
        /* the dp reduction is still in flight here (but for the injections):
         * unscale finishes it */
        if (!rc) rc = pd_grad_scaler_unscale(sc, opt);
        if (!rc) rc = pd_optimizer_clip_grad_norm(opt, 0.5) < 0;
        int st = rc ? -1 : pd_grad_scaler_step(sc, opt);
        if (st < 0) rc = -1;
        double pre = pd_grad_scaler_get_scale(sc);
        if (!rc) rc = pd_grad_scaler_update(sc);
        out->stepped[s] = st, out->scale[s] = pd_grad_scaler_get_scale(sc);
        CHECK(same_everywhere(out->scale[s]) && same_everywhere(st), "%s step %d: the ranks disagree (scale %g, %s)",
              label, s + 1, out->scale[s], st ? "stepped" : "skipped");
        if (before) {
            struct pd_state_dict *after = whole(sd, m != NULL);
            CHECK(st == 0 && out->scale[s] == pre / 2 && pd_grad_scaler_skipped_steps(sc) == 1,
                  "%s: the inf at step %d did not skip the step (step %d, scale %g -> %g)", label, s + 1, st, pre,
                  out->scale[s]);
            CHECK(same_params(before, after), "%s: a skipped step changed the parameters", label);
            pd_state_dict_destroy(before), pd_state_dict_destroy(after);
        }
        pd_optimizer_zero_grad(opt);
        pd_scope_end(tok);
    }
    CHECK(rc == 0, "%s: training failed", label);
    out->params = rc ? NULL : whole(sd, m != NULL);
    pd_grad_scaler_destroy(sc);
    pd_optimizer_destroy(opt);
    pd_dp_detach(red);
    pd_llama_destroy(model);
    pd_shard_plans_clear();
    return rc || !out->params ? -1 : 0;
}

static double worst_loss, worst_param;

static void compare(const char *label, const struct run *ref, struct pd_mesh *m, const char *dp, const char *tp,
                    enum inject inj)
{
    struct run r;
    memset(&r, 0, sizeof r);
    if (train(&r, m, dp, tp, inj, label)) return;
    double wl = 0, wp = 0;
    for (int s = 0; s < STEPS; s++) {
        double d = fabs(r.loss[s] - ref->loss[s]) / fabs(ref->loss[s]);
        wl = fmax(wl, d);
        CHECK(d <= TOL_LOSS_F16, "%s: step %d loss %.9g, one process %.9g", label, s + 1, r.loss[s], ref->loss[s]);
        CHECK(r.scale[s] == ref->scale[s] && r.stepped[s] == ref->stepped[s],
              "%s: step %d scale %g (%s), one process %g (%s)", label, s + 1, r.scale[s], r.stepped[s] ? "stepped" : "skipped",
              ref->scale[s], ref->stepped[s] ? "stepped" : "skipped");
    }
    for (int i = 0; i < pd_state_dict_size(ref->params); i++) {
        struct pd_tensor *a = pd_state_dict_get(r.params, pd_state_dict_name(ref->params, i));
        double d = dist_diff(a, pd_state_dict_tensor(ref->params, i));
        wp = fmax(wp, d);
        CHECK(d <= TOL_PARAM_F16, "%s: final %s differs by %.3g", label, pd_state_dict_name(ref->params, i), d);
    }
    worst_loss = fmax(worst_loss, wl), worst_param = fmax(worst_param, wp);
    if (rank == 0)
        printf("%s: loss %.6f -> %.6f, scale %g -> %g, as one process (losses within %.3g, parameters %.3g)\n", label,
               r.loss[0], r.loss[STEPS - 1], r.scale[0], r.scale[STEPS - 1], wl, wp);
    pd_state_dict_destroy(r.params);
}

/* 1. backward(scale * loss) then unscale gives backward(loss)'s gradients
 * bit for bit (f32; 2^16 is a power of two, so every scaled value is exact). */
static void unscale_exact(struct pd_mesh *m, const char *dp, const char *tp, const char *label)
{
    struct pd_llama_config c = config();
    struct pd_llama *model = pd_llama_create(&c, 3);
    struct pd_state_dict *sd = pd_llama_state_dict(model);
    int n = pd_state_dict_size(sd);
    struct pd_shard_plan plan[16];
    int np = tp ? pd_llama_shard_plan(0, plan, 16) : 0;
    CHECK(np >= 0 && pd_shard_layer(sd, m, tp, plan, np) == 0, "%s: shard", label);
    struct pd_tensor *ps[64];
    for (int i = 0; i < n && i < 64; i++) ps[i] = pd_state_dict_tensor(sd, i);
    struct pd_dp *red = dp ? pd_dp_attach(ps, n, m, dp, 0) : NULL;
    CHECK(!dp || red, "%s: dp_attach", label);
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_SGD);
    struct pd_optimizer *opt = pd_optimizer_create_for(&oc, sd);
    struct pd_grad_scaler *sc = pd_grad_scaler_create(NULL);
    struct pd_state_dict *g[2];
    for (int k = 0; k < 2; k++) { /* k = 0: backward(loss); 1: scaled, unscaled */
        int tok = pd_scope_begin();
        struct pd_tensor *x, *y;
        batch(0, &x, &y);
        x = pd_shard_batch(x, m, dp), y = pd_shard_batch(y, m, dp);
        struct pd_tensor *l = pd_llama_loss(model, x, y);
        CHECK(l && pd_backward(k ? pd_grad_scaler_scale(sc, l) : l, NULL, 0) == 0, "%s: backward", label);
        int rc = k ? pd_grad_scaler_unscale(sc, opt) : red ? pd_dp_finish(red) : 0;
        CHECK(rc == 0, "%s: %s failed", label, k ? "unscale" : "dp_finish");
        CHECK(!k || !pd_grad_scaler_found_inf(sc), "%s: an inf found", label);
        for (int i = 0; i < n; i++) { /* the reduction is over */
            struct pd_tensor *gi = pd_tensor_grad(ps[i]);
            const struct pd_placement *pl = gi ? pd_dtensor_placements(gi) : NULL;
            for (int a = 0; pl && a < pd_mesh_ndim(m); a++)
                CHECK(pl[a].kind != PD_PARTIAL, "%s: %s's gradient is Partial after %s", label, pd_state_dict_name(sd, i),
                      k ? "unscale" : "dp_finish");
        }
        /* what the optimizer reads: clipping (which would finish a reduction
         * still in flight) leaves these gradients as they are */
        CHECK(pd_optimizer_clip_grad_norm(opt, 1e30) >= 0, "%s: clip", label);
        g[k] = pd_state_dict_create();
        for (int i = 0; i < n; i++) {
            struct pd_tensor *gi = pd_tensor_grad(ps[i]);
            if (gi) pd_state_dict_set(g[k], pd_state_dict_name(sd, i), pd_clone(pd_dtensor_full(gi)), 0);
        }
        pd_optimizer_zero_grad(opt);
        pd_scope_end(tok);
    }
    CHECK(pd_state_dict_size(g[0]) == n && same_params(g[0], g[1]),
          "%s: unscaled gradients differ from the unscaled backward's", label);
    for (int i = 0; i < n && pd_state_dict_size(g[1]) == n; i++) {
        double d = dist_diff(pd_state_dict_tensor(g[1], i), pd_state_dict_tensor(g[0], i));
        if (d != 0 && rank == 0) printf("  %s: %s differs by %.3g\n", label, pd_state_dict_name(g[0], i), d);
    }
    pd_state_dict_destroy(g[0]), pd_state_dict_destroy(g[1]);
    pd_grad_scaler_destroy(sc);
    pd_optimizer_destroy(opt);
    pd_dp_detach(red);
    pd_llama_destroy(model);
    pd_shard_plans_clear();
}

int main(void)
{
    rank = pd_dist_world_rank();
    world = pd_dist_world_size();
    if (world != 2 && world != 4) {
        if (rank == 0) printf("test_dist_amp: %d ranks; runs with 2 or 4\n", world);
        return 0;
    }
    const char *dp_tp[2] = {"dp", "tp"};
    struct pd_mesh *d = pd_mesh_create((int[]){world}, 1, (const char *const[]){"dp"}, NULL);
    struct pd_mesh *t = pd_mesh_create((int[]){2}, 1, (const char *const[]){"tp"}, NULL);
    struct pd_mesh *g = world == 4 ? pd_mesh_create((int[]){2, 2}, 2, dp_tp, NULL) : NULL;
    struct pd_mesh *tm = world == 2 ? t : g; /* the mesh with a tp axis */
    const char *tdp = world == 2 ? NULL : "dp";
    const char *names[2][3] = {{"DP2", "TP2", NULL}, {"DP4", "DP2xTP2", NULL}};
    const char *const *nm = names[world == 4];
    /* 1 */
    unscale_exact(d, "dp", NULL, nm[0]);
    unscale_exact(tm, tdp, "tp", nm[1]);
    /* 2, 3 */
    static const char *const inj_name[4] = {"", " inf in a Shard piece", " inf in a Replicate copy",
                                            " inf in a Partial piece"};
    for (int inj = INJ_NONE; inj <= INJ_PARTIAL; inj++) {
        struct run ref;
        memset(&ref, 0, sizeof ref);
        char label[96];
        snprintf(label, sizeof label, "f16 one process%s", inj_name[inj]);
        if (train(&ref, NULL, NULL, NULL, (enum inject)inj, label)) break;
        CHECK(inj != INJ_NONE || ref.loss[STEPS - 1] < ref.loss[0] - 0.1, "the model did not learn (%g -> %g)",
              ref.loss[0], ref.loss[STEPS - 1]);
        if (inj != INJ_SHARD) {
            snprintf(label, sizeof label, "f16 %s%s", nm[0], inj_name[inj]);
            compare(label, &ref, d, "dp", NULL, (enum inject)inj);
        }
        snprintf(label, sizeof label, "f16 %s%s", nm[1], inj_name[inj]);
        compare(label, &ref, tm, tdp, "tp", (enum inject)inj);
        if (inj == INJ_NONE) { /* and with sequence parallelism */
            snprintf(label, sizeof label, "f16 %s+SP", nm[1]);
            seq_par = 1;
            compare(label, &ref, tm, tdp, "tp", INJ_NONE);
            seq_par = 0;
        }
        pd_state_dict_destroy(ref.params);
    }
    if (rank == 0)
        printf("f16 with the scaler: losses within %.3g of one process's (tolerance %.3g), parameters %.3g (%.3g)\n",
               worst_loss, TOL_LOSS_F16, worst_param, TOL_PARAM_F16);
    pd_mesh_release(d), pd_mesh_release(t), pd_mesh_release(g);
    int all = dist_check_total();
    if (rank == 0) printf("test_dist_amp: %d checks on rank 0, %d failures over %d ranks\n", checks, all, world);
    return all != 0;
}
