/* paddle.c — the communication layer under mpirun (2 and 4 ranks;
 * src/dist/comm.c): the timeout setting, each call's values and counts,
 * the async all-reduce overlapped with work, calls on one mesh axis, bf16
 * and f16 reductions in 2-byte elements, a rank
 * that is late but within the timeout, and the refusals that happen before
 * MPI (which leave the rank in step). The failures themselves end the job:
 * tests/test_dist_fail.sh runs them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist/dist_internal.h"
#include "pd/pd.h"

#include "dist_check.h"

static void timeout_setting(void)
{
    CHECK(pd_dist_timeout() == 60, "the default timeout is 60 s, not %g", pd_dist_timeout());
    CHECK(pd_dist_set_timeout(-1) == PD_ERR_INVALID && strstr(pd_last_error(), "seconds >= 0"), "a negative timeout");
    CHECK(pd_dist_set_timeout(NAN) == PD_ERR_INVALID, "a NaN timeout");
    CHECK(pd_dist_timeout() == 60, "a refused setting changes nothing");
    CHECK(pd_dist_set_timeout(0) == PD_OK && pd_dist_timeout() == 0, "0: no limit");
    CHECK(pd_dist_set_timeout(20) == PD_OK && pd_dist_timeout() == 20, "20 s");
    CHECK(!pd_dist_is_initialized(), "the timeout calls do not start MPI");
}

static void world_calls(struct pd_mesh *m)
{
    struct pdi_comm_on on = {.fn = "test"}; /* MPI_COMM_WORLD */
    struct pd_comm_stats st;
    pd_comm_stats_reset();
    float f[3] = {(float)rank, 1, (float)-rank}, g[3];
    CHECK(pdi_comm_allreduce(&on, f, g, 3, PD_F32, PD_RED_SUM) == PD_OK &&
              g[0] == (float)(world * (world - 1) / 2) && g[1] == (float)world,
          "all-reduce sum");
    int64_t i64 = rank * 10;
    CHECK(pdi_comm_allreduce(&on, NULL, &i64, 1, PD_I64, PD_RED_MAX) == PD_OK && i64 == (world - 1) * 10,
          "in-place all-reduce max");
    _Bool b = rank == 0;
    CHECK(pdi_comm_allreduce(&on, NULL, &b, 1, PD_BOOL, PD_RED_MIN) == PD_OK && !b, "bool min is logical and");
    pd_comm_stats(&st);
    CHECK(st.calls[PD_COMM_ALLREDUCE] == 3 && st.bytes[PD_COMM_ALLREDUCE] == 12 + 8 + 1, "counted: %lld calls, %lld bytes",
          (long long)st.calls[PD_COMM_ALLREDUCE], (long long)st.bytes[PD_COMM_ALLREDUCE]);
    on.quiet = 1;
    CHECK(pdi_comm_allreduce(&on, NULL, &i64, 1, PD_I64, PD_RED_SUM) == PD_OK, "a quiet all-reduce");
    pd_comm_stats(&st);
    CHECK(st.calls[PD_COMM_ALLREDUCE] == 3, "a quiet call is not counted");
    on.quiet = 0;
    /* all-gather of uneven byte counts: rank r sends r + 1 bytes of value r */
    int counts[8], displs[8], total = 0;
    for (int r = 0; r < world; r++) counts[r] = r + 1, displs[r] = total, total += r + 1;
    char mine[8], all[64];
    memset(mine, rank, sizeof mine);
    int ok = pdi_comm_allgatherv(&on, mine, rank + 1, all, counts, displs) == PD_OK;
    for (int r = 0; r < world && ok; r++)
        for (int k = 0; k < r + 1; k++) ok = ok && all[displs[r] + k] == r;
    CHECK(ok, "all-gather of uneven pieces");
    /* all-to-all: rank r sends byte 10 r + k to rank k */
    int one[8], disp[8];
    char to[8], from[8];
    for (int k = 0; k < world; k++) one[k] = 1, disp[k] = k, to[k] = (char)(10 * rank + k);
    ok = pdi_comm_alltoallv(&on, to, one, disp, from, one, disp) == PD_OK;
    for (int k = 0; k < world && ok; k++) ok = from[k] == 10 * k + rank;
    CHECK(ok, "all-to-all");
    /* reduce-scatter: each rank gets the sum of its one element */
    int32_t v[8], r1 = -1;
    for (int k = 0; k < world; k++) v[k] = k + rank;
    CHECK(pdi_comm_reduce_scatter(&on, v, &r1, one, PD_I32, PD_RED_SUM) == PD_OK &&
              r1 == world * rank + world * (world - 1) / 2,
          "reduce-scatter");
    /* a ring of send/recv (even ranks send first) */
    int next = (rank + 1) % world, prev = (rank + world - 1) % world, got = -1;
    int rc = rank % 2 ? pdi_comm_recv("test", &got, 4, prev, 9) : pdi_comm_send("test", &rank, 4, next, 9);
    rc = rc ? rc : rank % 2 ? pdi_comm_send("test", &rank, 4, next, 9) : pdi_comm_recv("test", &got, 4, prev, 9);
    CHECK(rc == PD_OK && got == prev, "send and recv in a ring");
    /* a late rank within the timeout */
    if (rank == 0) usleep(300000);
    CHECK(pdi_comm_barrier(&on) == PD_OK, "a barrier a rank reaches 0.3 s late");
    /* the whole mesh (naxes 0) */
    struct pdi_comm_on mesh = {.fn = "test", .mesh = m};
    int32_t one_each = 1;
    CHECK(pdi_comm_allreduce(&mesh, NULL, &one_each, 1, PD_I32, PD_RED_SUM) == PD_OK && one_each == world,
          "an all-reduce over the whole mesh");
}

/* On a 2 x (world / 2) mesh: an all-reduce along each axis. */
static void axis_calls(void)
{
    if (world % 2) return;
    struct pd_mesh *m = pd_mesh_create((const int[]){2, world / 2}, 2, (const char *[]){"dp", "tp"}, NULL);
    int dp = pd_mesh_coord(m, 0), tp = pd_mesh_coord(m, 1);
    for (int a = 0; a < 2; a++) {
        struct pdi_comm_on on = pdi_comm_on_axes("test", m, &a, 1);
        int32_t x = rank, want = 0;
        for (int k = 0; k < pd_mesh_size(m, a); k++) want += a == 0 ? k * (world / 2) + tp : dp * (world / 2) + k;
        CHECK(pdi_comm_allreduce(&on, NULL, &x, 1, PD_I32, PD_RED_SUM) == PD_OK && x == want,
              "all-reduce along axis %d: %d, not %d", a, x, want);
    }
    pd_mesh_release(m);
}

/* The async all-reduce: start two, work, progress, wait. */
static void async_calls(void)
{
    struct pdi_comm_on on = {.fn = "test"};
    enum { N = 1 << 16 };
    float *a = malloc(sizeof *a * N), *b = malloc(sizeof *b * N), *c = malloc(sizeof *c * 3);
    for (int i = 0; i < N; i++) a[i] = (float)(i % 7 + rank);
    c[0] = c[1] = c[2] = (float)rank;
    struct pd_comm_stats st;
    pd_comm_stats_reset();
    struct pdi_comm_req *q1 = pdi_comm_iallreduce(&on, a, b, N, PD_F32, PD_RED_SUM);
    struct pdi_comm_req *q2 = pdi_comm_iallreduce(&on, NULL, c, 3, PD_F32, PD_RED_MAX);
    CHECK(q1 && q2, "two all-reduces started");
    double work = 0; /* the backward pass would run here */
    int done = 0;
    for (int i = 0; i < 100 && q1; i++) {
        for (int k = 0; k < 1000; k++) work += sqrt((double)k);
        CHECK(pdi_comm_test(q1, &done) == PD_OK, "test");
    }
    CHECK(work > 0 && pdi_comm_wait(q1) == PD_OK && pdi_comm_wait(q2) == PD_OK, "both waited");
    int ok = 1;
    for (int i = 0; i < N; i++) ok = ok && b[i] == (float)(world * (i % 7) + world * (world - 1) / 2);
    CHECK(ok && c[0] == (float)(world - 1) && c[2] == (float)(world - 1), "the async results");
    pd_comm_stats(&st);
    CHECK(st.calls[PD_COMM_ALLREDUCE] == 2 && st.bytes[PD_COMM_ALLREDUCE] == 4 * (N + 3), "async calls are counted");
    free(a), free(b), free(c);
}

/* bf16 and f16 are reduced as 2-byte elements (each combination in f32):
 * they were refused ("reduce it in f32"), and reshard sent them as f32. */
static void reduce16(void)
{
    struct pdi_comm_on on = {.fn = "test"};
    for (int t = 0; t < 2; t++) {
        enum pd_dtype dt = t ? PD_F16 : PD_BF16;
        uint16_t (*to16)(float) = t ? pd_f32_to_f16 : pd_f32_to_bf16;
        float (*to32)(uint16_t) = t ? pd_f16_to_f32 : pd_bf16_to_f32;
        enum pd_reduce_op ops[3] = {PD_RED_SUM, PD_RED_MAX, PD_RED_MIN};
        for (int o = 0; o < 3; o++) {
            uint16_t h[8];
            for (int i = 0; i < 8; i++) h[i] = to16((float)((rank + 1) * (i + 1)) * (i % 2 ? -0.5f : 1.0f));
            struct pd_comm_stats a, b;
            pd_comm_stats(&a);
            int ok = pdi_comm_allreduce(&on, NULL, h, 8, dt, ops[o]) == PD_OK;
            pd_comm_stats(&b);
            for (int i = 0; i < 8 && ok; i++) { /* exact: small integers and halves */
                float s = i % 2 ? -0.5f : 1.0f, want = (float)(i + 1) * s;
                want *= ops[o] == PD_RED_SUM ? (float)(world * (world + 1) / 2)
                        : (ops[o] == PD_RED_MAX) == (s > 0) ? (float)world : 1.0f;
                ok = to32(h[i]) == want;
            }
            CHECK(ok && b.bytes[PD_COMM_ALLREDUCE] - a.bytes[PD_COMM_ALLREDUCE] == 16, "%s all-reduce %d in 2 bytes",
                  pd_dtype_name(dt), o);
        }
        uint16_t v[8], r1 = 0;
        int one[8];
        for (int k = 0; k < world; k++) v[k] = to16((float)(k + rank)), one[k] = 1;
        CHECK(pdi_comm_reduce_scatter(&on, v, &r1, one, dt, PD_RED_SUM) == PD_OK &&
                  to32(r1) == (float)(world * rank + world * (world - 1) / 2),
              "%s reduce-scatter", pd_dtype_name(dt));
    }
}

/* Refused before any MPI call: the same on every rank, so still in step. */
static void refusals(void)
{
    struct pdi_comm_on on = {.fn = "test"};
    uint16_t h = 0;
    CHECK(pdi_comm_allreduce(&on, NULL, &h, (int64_t)1 << 31, PD_I8, PD_RED_SUM) == PD_ERR_INVALID &&
              strstr(pd_last_error(), "exceed one MPI message"),
          "2^31 elements");
    CHECK(!pdi_comm_iallreduce(&on, NULL, &h, -1, PD_I8, PD_RED_SUM), "a negative count");
    CHECK(pdi_comm_wait(NULL) == PD_ERR_NULL && pdi_comm_test(NULL, NULL) == PD_ERR_NULL, "NULL requests");
    int32_t x = 1;
    CHECK(pdi_comm_allreduce(&on, NULL, &x, 1, PD_I32, PD_RED_SUM) == PD_OK && x == world, "still in step after them");
}

int main(void)
{
    timeout_setting();
    world = pd_dist_world_size(), rank = pd_dist_world_rank();
    struct pd_mesh *m = pd_mesh_create(&world, 1, NULL, NULL);
    CHECK(m != NULL, "a mesh");
    world_calls(m);
    axis_calls();
    async_calls();
    reduce16();
    refusals();
    pd_mesh_release(m);
    struct pdi_comm_on on = {.fn = "test"};
    int total = fails;
    pdi_comm_allreduce(&on, NULL, &total, 1, PD_I32, PD_RED_SUM);
    if (rank == 0) printf("test_dist_comm: %d ranks, %d checks per rank, %d failed\n", world, checks, total);
    return total ? 1 : 0;
}
