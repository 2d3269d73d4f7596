/* paddle.c — data-parallel training under mpirun (2 and 4 ranks): an MLP
 * whose batch is sharded over the dp axis (and, at 4 ranks, whose weights
 * are split over a tp axis too) trains with pd_dp_attach's bucketed
 * gradient reduction, and its losses and final parameters equal the
 * single-process run's. The all-reduces start inside backward (one per
 * bucket), and their bytes are exactly the parameters' local sizes: a
 * count, so it is tested. Gradient clipping by global norm gives the
 * single-process norm under every placement. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/dist.h"
#include "pd/pd.h"

#include "dist_check.h"

static struct pd_tensor *data(const int64_t *shape, int ndim, int salt)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *v = malloc(sizeof *v * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = (float)sin(0.61 * (double)i + 0.7 * salt) * 0.5f;
    struct pd_tensor *t = pd_from_buffer(v, shape, ndim, PD_F32);
    free(v);
    return t;
}

enum { B = 12, D = 8, H = 16, STEPS = 4 };

struct model {
    struct pd_tensor *w1, *w2, *b1;
};

static struct pd_tensor *loss_of(struct model *m, struct pd_tensor *x, struct pd_tensor *y)
{
    struct pd_tensor *h = pd_relu(pd_add(pd_matmul(x, m->w1, 0, 0), m->b1));
    struct pd_tensor *d = pd_sub(pd_matmul(h, m->w2, 0, 0), y);
    return pd_mean(pd_mul(d, d), NULL, 0, 0);
}

/* Train STEPS steps of SGD with clipping; losses[] and norms[] out. With a
 * mesh: x and y sharded on dp, weights per wpl (w1, w2, b1). */
static void train(struct pd_mesh *m, const struct pd_placement (*wpl)[PD_MAX_MESH_DIMS],
                  const struct pd_placement *xpl, double *losses, double *norms, struct pd_tensor **final,
                  size_t bucket, int64_t *allreduce_calls_in_backward)
{
    struct model md = {data((int64_t[]){D, H}, 2, 1), data((int64_t[]){H, D}, 2, 2), data((int64_t[]){H}, 1, 3)};
    struct pd_tensor *x = data((int64_t[]){B, D}, 2, 4), *y = data((int64_t[]){B, D}, 2, 5);
    if (m) {
        md.w1 = pd_shard_tensor(md.w1, m, wpl[0]);
        md.w2 = pd_shard_tensor(md.w2, m, wpl[1]);
        md.b1 = pd_shard_tensor(md.b1, m, wpl[2]);
        x = pd_shard_tensor(x, m, xpl);
        y = pd_shard_tensor(y, m, xpl);
    }
    struct pd_tensor *ps[3] = {md.w1, md.w2, md.b1};
    struct pd_state_dict *sd = pd_state_dict_create();
    const char *names[3] = {"w1", "w2", "b1"};
    for (int i = 0; i < 3; i++) {
        pd_requires_grad_(ps[i], 1);
        pd_state_dict_add(sd, names[i], ps[i]);
    }
    struct pd_dp *dp = m ? pd_dp_attach(ps, 3, m, "dp", bucket) : NULL;
    CHECK(!m || dp, "dp_attach");
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_SGD);
    oc.lr = 0.5;
    struct pd_optimizer *opt = pd_optimizer_create_for(&oc, sd);
    CHECK(opt != NULL, "optimizer");
    for (int s = 0; s < STEPS && opt; s++) {
        int tok = pd_scope_begin();
        pd_optimizer_zero_grad(opt);
        struct pd_tensor *l = loss_of(&md, x, y);
        struct pd_comm_stats before, after;
        pd_comm_stats(&before);
        CHECK(l && pd_backward(l, NULL, 0) == 0, "backward");
        pd_comm_stats(&after);
        if (allreduce_calls_in_backward) allreduce_calls_in_backward[s] = after.calls[PD_COMM_ALLREDUCE] - before.calls[PD_COMM_ALLREDUCE];
        norms[s] = pd_clip_grad_norm(sd, 0.05);
        losses[s] = pd_item(l);
        CHECK(pd_optimizer_step(opt) == 0, "step");
        pd_scope_end(tok);
    }
    for (int i = 0; i < 3; i++) final[i] = m ? pd_dtensor_full(ps[i]) : pd_detach(ps[i]);
    pd_dp_detach(dp);
    pd_optimizer_destroy(opt);
    pd_state_dict_destroy(sd);
}

static double maxdiff(struct pd_tensor *a, struct pd_tensor *b)
{
    int64_t n = pd_tensor_numel(b);
    if (!a || pd_tensor_numel(a) != n) return INFINITY;
    float *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    pd_to_buffer(a, x, PD_F32);
    pd_to_buffer(b, y, PD_F32);
    double d = 0;
    for (int64_t i = 0; i < n; i++) d = fmax(d, fabs((double)x[i] - y[i]));
    free(x), free(y);
    return d;
}

static void compare(const char *what, struct pd_mesh *m, const struct pd_placement (*wpl)[PD_MAX_MESH_DIMS],
                    const struct pd_placement *xpl, size_t bucket, int expect_buckets)
{
    int tok = pd_scope_begin();
    double l0[STEPS], n0[STEPS], l1[STEPS], n1[STEPS];
    int64_t calls[STEPS];
    struct pd_tensor *f0[3], *f1[3];
    train(NULL, NULL, NULL, l0, n0, f0, 0, NULL);
    pd_comm_stats_reset();
    train(m, wpl, xpl, l1, n1, f1, bucket, calls);
    for (int s = 0; s < STEPS; s++) {
        CHECK(fabs(l0[s] - l1[s]) <= 1e-5 * fabs(l0[s]), "%s step %d: loss %.9g, one process %.9g", what, s, l1[s], l0[s]);
        CHECK(fabs(n0[s] - n1[s]) <= 1e-5 * n0[s], "%s step %d: grad norm %.9g, one process %.9g", what, s, n1[s], n0[s]);
        if (expect_buckets >= 0)
            CHECK(calls[s] == expect_buckets, "%s step %d: %lld all-reduces inside backward, expected %d (one per bucket)",
                  what, s, (long long)calls[s], expect_buckets);
    }
    for (int i = 0; i < 3; i++) CHECK(maxdiff(f1[i], f0[i]) <= 1e-5, "%s: final parameter %d differs", what, i);
    pd_scope_end(tok);
}

/* The reduced gradients are views of their bucket's storage: a gradient
 * the program keeps after its step keeps its values through the next
 * steps' reductions (each step's buckets are new storage), and the steps
 * do not pile up memory (the cleared gradients' blocks are reused). */
static void kept_gradients(struct pd_mesh *m)
{
    int tok = pd_scope_begin();
    struct pd_placement rep[PD_MAX_MESH_DIMS] = {pd_replicate()};
    const struct pd_placement S0[1] = {pd_shard(0)};
    struct pd_tensor *w = pd_requires_grad_(pd_shard_tensor(data((int64_t[]){D, H}, 2, 1), m, rep), 1);
    struct pd_dp *dp = pd_dp_attach(&w, 1, m, "dp", 0);
    CHECK(dp != NULL, "kept: attach");
    float first[D * H], now[D * H];
    struct pd_tensor *kept = NULL;
    int64_t live[6] = {0};
    for (int s = 0; s < 6 && dp; s++) {
        int st = pd_scope_begin();
        pd_tensor_zero_grad(w);
        struct pd_tensor *x = pd_shard_tensor(data((int64_t[]){B, D}, 2, 10 + s), m, S0);
        struct pd_tensor *l = pd_mean(pd_mul(pd_matmul(x, w, 0, 0), pd_matmul(x, w, 0, 0)), NULL, 0, 0);
        CHECK(l && pd_backward(l, NULL, 0) == 0 && pd_dp_finish(dp) == 0, "kept: step %d", s);
        struct pd_tensor *g = pd_tensor_grad(w);
        CHECK(g && pd_to_buffer(pd_dtensor_local(g), s ? now : first, PD_F32) == 0, "kept: read step %d", s);
        if (s == 0) {
            kept = g;
            pd_tensor_retain(kept);
        } else {
            CHECK(memcmp(now, first, sizeof now) != 0, "kept: step %d's gradient equals step 0's", s);
        }
        pd_scope_end(st);
        struct pd_memory_stats ms;
        pd_memory_stats(&ms);
        live[s] = ms.allocated_bytes;
    }
    if (kept) {
        CHECK(pd_to_buffer(pd_dtensor_local(kept), now, PD_F32) == 0 && memcmp(now, first, sizeof now) == 0,
              "kept: step 0's gradient changed under later steps");
        pd_tensor_release(kept);
    }
    CHECK(live[5] <= live[2], "kept: live bytes grew from %lld to %lld over three steps", (long long)live[2],
          (long long)live[5]);
    pd_dp_detach(dp);
    pd_scope_end(tok);
}

static struct pd_tensor *sq_loss(struct pd_tensor *x, struct pd_tensor *w)
{
    struct pd_tensor *h = pd_matmul(x, w, 0, 0);
    return pd_mean(pd_mul(h, h), NULL, 0, 0);
}

/* w0 in one process and w replicated over the mesh and attached (with
 * `more` parameters after it), both from the same values. */
static struct pd_dp *twins(struct pd_mesh *m, struct pd_tensor **w0, struct pd_tensor **w, struct pd_tensor *more)
{
    struct pd_placement rep[PD_MAX_MESH_DIMS] = {pd_replicate()};
    *w0 = pd_requires_grad_(data((int64_t[]){D, H}, 2, 1), 1);
    *w = pd_requires_grad_(pd_shard_tensor(data((int64_t[]){D, H}, 2, 1), m, rep), 1);
    struct pd_tensor *ps[2] = {*w, more};
    struct pd_dp *dp = pd_dp_attach(ps, more ? 2 : 1, m, "dp", 0); /* one bucket holds them */
    CHECK(dp != NULL, "attach");
    return dp;
}

/* One backward of sq_loss on x0's rows sharded over the mesh (reduced) and
 * in one process, then whether the two gradients agree. */
static void both_backward(struct pd_mesh *m, struct pd_dp *dp, struct pd_tensor *x0, struct pd_tensor *w,
                          struct pd_tensor *w0, const char *what)
{
    const struct pd_placement S0[1] = {pd_shard(0)};
    struct pd_tensor *l = sq_loss(pd_shard_tensor(x0, m, S0), w), *l0 = sq_loss(x0, w0);
    CHECK(l && pd_backward(l, NULL, 0) == 0 && pd_dp_finish(dp) == 0, "%s: backward", what);
    CHECK(l0 && pd_backward(l0, NULL, 0) == 0, "%s: one process, backward", what);
    struct pd_tensor *g = pd_tensor_grad(w), *g0 = pd_tensor_grad(w0);
    CHECK(g && g0 && maxdiff(pd_dtensor_full(g), g0) <= 1e-6, "%s: the gradient differs from one process's", what);
}

/* Two backwards with a finish between them add up (the second step's
 * reduced gradient is added to the first's view of its bucket), and a
 * parameter that gets no gradient in a step shares a bucket with one that
 * does: its part of the bucket is zeros, its .grad stays unset, and the
 * other's gradient is the single-process one. */
static void accumulate_and_unused(struct pd_mesh *m)
{
    int tok = pd_scope_begin();
    struct pd_placement rep[PD_MAX_MESH_DIMS] = {pd_replicate()};
    struct pd_tensor *w0, *w, *u = pd_requires_grad_(pd_shard_tensor(data((int64_t[]){H}, 1, 2), m, rep), 1);
    struct pd_dp *dp = twins(m, &w0, &w, u);
    for (int s = 0; s < 2 && dp; s++) both_backward(m, dp, data((int64_t[]){B, D}, 2, 20 + s), w, w0, "accumulate");
    CHECK(pd_tensor_grad(u) == NULL, "accumulate: a parameter without a gradient got one");
    pd_dp_detach(dp);
    pd_scope_end(tok);
}

/* A hook cannot fail backward, so pd_dp_finish reports what went wrong in
 * its step: a step under the meta executor (shapes only, gradients without
 * bytes) and a second backward before pd_dp_finish each give a clear error
 * there (both used to return 0, the second silently dropping a backward's
 * gradients), and the next step reduces as usual. */
static void failed_steps(struct pd_mesh *m)
{
    int tok = pd_scope_begin();
    const struct pd_placement S0[1] = {pd_shard(0)};
    struct pd_tensor *w0, *w;
    struct pd_dp *dp = twins(m, &w0, &w, NULL);
    struct pd_tensor *x0 = data((int64_t[]){B, D}, 2, 30), *x = pd_shard_tensor(x0, m, S0);
    int mt = pd_meta_begin();
    struct pd_tensor *lm = sq_loss(x, w);
    int rc = lm ? pd_backward(lm, NULL, 0) : -1;
    if (rc == 0) rc = pd_dp_finish(dp);
    pd_meta_end(mt, NULL);
    CHECK(rc != 0 && strstr(pd_last_error(), "meta"), "meta: a meta step reduced gradients (rc %d: %s)", rc,
          pd_last_error());
    pd_tensor_zero_grad(w);
    for (int k = 0; k < 2; k++) { /* two backwards, no finish between */
        struct pd_tensor *lk = sq_loss(x, w);
        CHECK(lk && pd_backward(lk, NULL, 0) == 0, "second: backward %d", k);
    }
    rc = pd_dp_finish(dp);
    CHECK(rc == PD_ERR_STATE && strstr(pd_last_error(), "second gradient"), "second: finish gave %d (%s)", rc,
          pd_last_error());
    pd_tensor_zero_grad(w);
    both_backward(m, dp, x0, w, w0, "after the failed steps");
    pd_dp_detach(dp);
    pd_scope_end(tok);
}

/* Bad input: a clear error, nothing attached. */
static void errors(struct pd_mesh *m)
{
    int tok = pd_scope_begin();
    struct pd_placement r = pd_replicate(), s0 = pd_shard(0);
    struct pd_tensor *plain = pd_requires_grad_(data((int64_t[]){4}, 1, 1), 1);
    struct pd_tensor *rep = pd_requires_grad_(pd_shard_tensor(data((int64_t[]){4}, 1, 1), m, &r), 1);
    struct pd_tensor *sh = pd_requires_grad_(pd_shard_tensor(data((int64_t[]){4}, 1, 1), m, &s0), 1);
    struct pd_tensor *nograd = pd_shard_tensor(data((int64_t[]){4}, 1, 1), m, &r);
    CHECK(!pd_dp_attach(NULL, 1, m, "dp", 0) && strstr(pd_last_error(), "NULL"), "NULL params");
    CHECK(!pd_dp_attach(&rep, 1, NULL, "dp", 0) && strstr(pd_last_error(), "NULL"), "NULL mesh");
    CHECK(!pd_dp_attach(&rep, 0, m, "dp", 0) && strstr(pd_last_error(), "0 parameters"), "no params");
    CHECK(!pd_dp_attach(&rep, 1, m, "nope", 0) && strstr(pd_last_error(), "no axis named nope"), "bad axis");
    CHECK(!pd_dp_attach(&plain, 1, m, "dp", 0) && strstr(pd_last_error(), "not a distributed leaf"), "plain param");
    CHECK(!pd_dp_attach(&nograd, 1, m, "dp", 0) && strstr(pd_last_error(), "requires grad"), "no grad");
    CHECK(!pd_dp_attach(&sh, 1, m, "dp", 0) && strstr(pd_last_error(), "not replicated on axis dp"), "sharded param");
    struct pd_dp *dp = pd_dp_attach(&rep, 1, m, "dp", 0);
    CHECK(dp && !pd_dp_attach(&rep, 1, m, "dp", 0) && strstr(pd_last_error(), "attached already"), "twice");
    CHECK(pd_dp_finish(NULL) == PD_ERR_NULL, "finish NULL");
    CHECK(pd_dp_finish(dp) == 0, "finish with nothing in flight");
    pd_dp_detach(dp);
    pd_dp_detach(NULL);
    dp = pd_dp_attach(&rep, 1, m, "dp", 0); /* detached: attachable again */
    CHECK(dp != NULL, "attach after detach");
    pd_dp_detach(dp);
    pd_scope_end(tok);
}

int main(void)
{
    rank = pd_dist_world_rank();
    world = pd_dist_world_size();
    const struct pd_placement R1[1] = {pd_replicate()}, S0[1] = {pd_shard(0)};
    struct pd_placement w_rep[3][PD_MAX_MESH_DIMS] = {{pd_replicate()}, {pd_replicate()}, {pd_replicate()}};
    struct pd_mesh *dpm = pd_mesh_create((int[]){world}, 1, (const char *const[]){"dp"}, NULL);
    errors(dpm);
    kept_gradients(dpm);
    accumulate_and_unused(dpm);
    failed_steps(dpm);
    /* small buckets: w1 (D*H) and b1 (H) and w2 (H*D) floats; 600 bytes holds b1 + w2 (backward order: b1, w2, w1)... */
    compare("dp, one bucket", dpm, (const struct pd_placement (*)[PD_MAX_MESH_DIMS])w_rep, S0, 0, 1);
    compare("dp, a bucket per parameter", dpm, (const struct pd_placement (*)[PD_MAX_MESH_DIMS])w_rep, S0, 4, 3);
    (void)R1;
    /* the all-reduced bytes per step: every parameter's floats, once */
    {
        double l[STEPS], n[STEPS];
        struct pd_tensor *f[3];
        int tok = pd_scope_begin();
        pd_comm_stats_reset();
        train(dpm, (const struct pd_placement (*)[PD_MAX_MESH_DIMS])w_rep, S0, l, n, f, 0, NULL);
        struct pd_comm_stats st;
        pd_comm_stats(&st);
        /* per step: the gradients' floats, and the loss's one float for pd_item */
        int64_t want = (int64_t)STEPS * ((D * H + H * D + H) * 4 + 4);
        CHECK(st.bytes[PD_COMM_ALLREDUCE] == want, "all-reduced %lld bytes in %lld calls, expected %lld",
              (long long)st.bytes[PD_COMM_ALLREDUCE], (long long)st.calls[PD_COMM_ALLREDUCE], (long long)want);
        CHECK(st.calls[PD_COMM_ALLGATHER] == 0 && st.calls[PD_COMM_ALLTOALL] == 0,
              "data parallelism gathered activations (%lld all-gathers, %lld all-to-alls)",
              (long long)st.calls[PD_COMM_ALLGATHER], (long long)st.calls[PD_COMM_ALLTOALL]);
        pd_scope_end(tok);
    }
    { /* the profiler: collectives on their own track, exposed waits on the thread's */
        double l[STEPS], n[STEPS];
        struct pd_tensor *f[3];
        int tok = pd_scope_begin();
        CHECK(pd_profiler_begin() == 0, "profiler");
        train(dpm, (const struct pd_placement (*)[PD_MAX_MESH_DIMS])w_rep, S0, l, n, f, 0, NULL);
        pd_profiler_end();
        struct pd_profiler_totals t;
        CHECK(pd_profiler_totals(&t) == 0, "totals");
        CHECK(t.comm_bytes == (double)STEPS * ((D * H + H * D + H) * 4 + 4) && t.comm_us > 0 && t.exposed_us >= 0,
              "profiled %.0f bytes in %.1f us of collectives (%.1f us exposed)", t.comm_bytes, t.comm_us, t.exposed_us);
        char path[64];
        snprintf(path, sizeof path, "/tmp/pd_dist_dp_trace_%d.json", rank);
        CHECK(pd_profiler_write_chrome_trace(path) == 0, "trace");
        FILE *fp = fopen(path, "r");
        char buf[1 << 16];
        size_t got = fp ? fread(buf, 1, sizeof buf - 1, fp) : 0;
        buf[got] = 0;
        if (fp) fclose(fp);
        remove(path);
        CHECK(strstr(buf, "\"name\":\"communication\"") && strstr(buf, "all-reduce (data-parallel gradients)"),
              "the trace has no communication track");
        pd_scope_end(tok);
    }
    if (world == 4) { /* dp x tp: column- then row-parallel weights */
        struct pd_mesh *g = pd_mesh_create((int[]){2, 2}, 2, (const char *const[]){"dp", "tp"}, NULL);
        struct pd_placement wtp[3][PD_MAX_MESH_DIMS] = {
            {pd_replicate(), pd_shard(1)}, {pd_replicate(), pd_shard(0)}, {pd_replicate(), pd_shard(0)}};
        const struct pd_placement xs[2] = {pd_shard(0), pd_replicate()};
        compare("dp x tp", g, (const struct pd_placement (*)[PD_MAX_MESH_DIMS])wtp, xs, 0, -1);
        pd_mesh_release(g);
    }
    pd_mesh_release(dpm);
    int all = dist_check_total();
    if (rank == 0) printf("test_dist_dp: %d checks on rank 0, %d failures over %d ranks\n", checks, all, world);
    return all != 0;
}
