/* paddle.c — a loop of reshards in which the last rank fails on purpose,
 * for tests/test_dist_fail.sh, which runs it under mpirun and checks that
 * every rank ends within the bound, with the message (docs/distributed.md,
 * "Failures and timeouts"). Not a test by itself: most modes end the job.
 *
 *   dist_fail MODE [TIMEOUT]   (TIMEOUT: pd_dist_set_timeout; else PD_DIST_TIMEOUT)
 *
 * At iteration 5 the last rank:
 *   kill    raise(SIGKILL)
 *   sleep   sleeps 60 s (never arrives)
 *   late    sleeps 1 s, less than the timeout: the job must finish (exit 0)
 *   skip    skips the reshard and returns 0 from main
 *   error   gets an error from a pd_ call and returns 1 from main
 *   abort   gets an error from a pd_ call and calls pd_dist_abort(3, ...)
 *   abort0  calls pd_dist_abort(0, NULL) (the status becomes 1)
 *   oom     every allocation fails inside a reshard (the internal
 *           pdi_reshard, so that nothing before it fails instead); it
 *           returns 0 from main: the rank is out of step, so exit aborts
 *   dp      (a data-parallel loop instead of reshards) raise(SIGKILL)
 *           before its third backward: the others wait for its gradient
 *           all-reduce (or a collective of the loss)
 *   scaler  (a loop of gradient scaler steps on a sharded weight instead)
 *           sleeps 60 s before its third unscale: the others wait at the
 *           scaler's all-reduce of the inf flag
 *   mpierr  (before the loop) receives 8 bytes where rank 0 sends 16: the
 *           MPI error comes back as a status; its next reshard fails at
 *           once (out of step); it returns 0 from main
 *   leak    (after the loop, which finishes) leaks a block in
 *           leak_on_purpose and returns 0: under ASan, LeakSanitizer must
 *           report it through tests/lsan-mpi.supp (the PD_SANITIZE build
 *           only)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist/dist_internal.h"
#include "pd/pd.h"

/* Data-parallel steps: w replicated, the batch sharded, gradients reduced
 * by pd_dp_attach's buckets; the last rank dies at step 2. */
static int dp_loop(struct pd_mesh *m, int last)
{
    struct pd_placement rep = pd_replicate(), s0 = pd_shard(0);
    int tok = pd_scope_begin();
    struct pd_tensor *w = pd_keep(pd_shard_tensor(pd_full((int64_t[]){8, 8}, 2, 0.1, PD_F32), m, &rep));
    struct pd_tensor *x = pd_keep(pd_shard_tensor(pd_ones((int64_t[]){8, 8}, 2, PD_F32), m, &s0));
    pd_scope_end(tok);
    pd_requires_grad_(w, 1);
    struct pd_dp *dp = pd_dp_attach(&w, 1, m, "d0", 0);
    for (int i = 0; i < 10 && dp; i++) {
        tok = pd_scope_begin();
        struct pd_tensor *loss = pd_mean(pd_matmul(x, w, 0, 0), NULL, 0, 0);
        if (i == 2 && last) raise(SIGKILL);
        int rc = loss ? pd_backward(loss, NULL, 0) : pd_last_status();
        rc = rc ? rc : pd_dp_finish(dp);
        pd_scope_end(tok);
        if (rc) return fprintf(stderr, "step %d: %s\n", i, pd_last_error()), 1;
    }
    pd_dp_detach(dp);
    return dp ? 0 : 1;
}

/* Gradient scaler steps on a weight split over the mesh; the last rank
 * never reaches the third unscale (the first collective of a step after
 * its backward). */
static int scaler_loop(struct pd_mesh *m, int last)
{
    struct pd_placement s0 = pd_shard(0);
    int tok = pd_scope_begin();
    struct pd_tensor *w = pd_keep(pd_shard_tensor(pd_full((int64_t[]){8, 8}, 2, 0.1, PD_F32), m, &s0));
    pd_scope_end(tok);
    pd_requires_grad_(w, 1);
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_SGD);
    struct pd_state_dict *sd = pd_state_dict_create();
    struct pd_optimizer *opt = sd && !pd_state_dict_set(sd, "w", w, 0) ? pd_optimizer_create_for(&oc, sd) : NULL;
    struct pd_grad_scaler *sc = pd_grad_scaler_create(NULL);
    for (int i = 0; i < 10 && opt && sc; i++) {
        tok = pd_scope_begin();
        struct pd_tensor *loss = pd_sum(pd_mul(w, w), NULL, 0, 0);
        int rc = loss ? pd_backward(pd_grad_scaler_scale(sc, loss), NULL, 0) : pd_last_status();
        if (i == 2 && last) sleep(60);
        rc = rc ? rc : pd_grad_scaler_step(sc, opt) < 0;
        rc = rc ? rc : pd_grad_scaler_update(sc);
        pd_optimizer_zero_grad(opt);
        pd_scope_end(tok);
        if (rc) return fprintf(stderr, "step %d: %s\n", i, pd_last_error()), 1;
    }
    pd_grad_scaler_destroy(sc);
    pd_optimizer_destroy(opt);
    pd_state_dict_destroy(sd);
    return opt && sc ? 0 : 1;
}

/* A block no pointer reaches once this returns (volatile: kept at any -O). */
static void *volatile leak_sink;
static void leak_on_purpose(void)
{
    leak_sink = malloc(4096);
    leak_sink = NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "late";
    if (argc > 2 && pd_dist_set_timeout(atof(argv[2]))) return fprintf(stderr, "%s\n", pd_last_error()), 2;
    int world = pd_dist_world_size(), rank = pd_dist_world_rank(), last = rank == world - 1;
    struct pd_mesh *m = pd_mesh_create(&world, 1, NULL, NULL);
    if (!m) return fprintf(stderr, "rank %d: %s\n", rank, pd_last_error()), 2;
    if (!strcmp(mode, "dp")) return dp_loop(m, last);
    if (!strcmp(mode, "scaler")) return scaler_loop(m, last);
    if (!strcmp(mode, "mpierr") && world > 1 && rank < 2) {
        char buf[16] = {0};
        int rc = rank == 0 ? pdi_comm_send("dist_fail", buf, 16, 1, 5) : pdi_comm_recv("dist_fail", buf, 8, 0, 5);
        if (rc) fprintf(stderr, "rank %d: status %d: %s\n", rank, rc, pd_last_error());
    }
    struct pd_placement pl[4] = {pd_shard(0), pd_shard(1), pd_replicate(), pd_partial(PD_RED_SUM)};
    int tok = pd_scope_begin();
    struct pd_tensor *x = pd_shard_tensor(pd_reshape(pd_arange(0, 48, 1, PD_F32), (int64_t[]){8, 6}, 2), m, &pl[0]);
    for (int i = 0; i < 40 && x; i++) {
        if (i == 5 && last) {
            if (!strcmp(mode, "kill")) raise(SIGKILL);
            if (!strcmp(mode, "sleep")) sleep(60);
            if (!strcmp(mode, "late")) sleep(1);
            if (!strcmp(mode, "skip")) return 0;
            if (!strcmp(mode, "abort0")) pd_dist_abort(0, NULL);
            if (!strcmp(mode, "oom")) {
                pd_fault_inject(1, 1);
                struct pd_tensor *y = pdi_reshard(x, m, &pl[(i + 1) % 4]);
                pd_fault_inject(0, 0);
                fprintf(stderr, "rank %d: %s: %s\n", rank, y ? "no failure" : "failed", pd_last_error());
                return 0;
            }
            if (!strcmp(mode, "error") || !strcmp(mode, "abort")) {
                if (pd_reshape(x, (int64_t[]){7}, 1)) return 2; /* a call that fails here only */
                if (!strcmp(mode, "abort")) pd_dist_abort(3, pd_last_error());
                fprintf(stderr, "rank %d: %s\n", rank, pd_last_error());
                return 1;
            }
        }
        x = pd_reshard(x, m, &pl[(i + 1) % 4]); /* all-to-all, all-gather, local, reduce-scatter, ... */
        if (!x) fprintf(stderr, "rank %d: reshard %d: status %d: %s\n", rank, i, pd_last_status(), pd_last_error());
    }
    pd_scope_end(tok);
    pd_mesh_release(m);
    if (!strcmp(mode, "leak") && last) leak_on_purpose();
    if (rank == 0) printf("dist_fail %s: finished\n", mode);
    return 0;
}
