/* paddle.c — the all-reduce of data-parallel training, through the
 * library's reshard (include/pd/dist.h): a Partial(avg) f32 tensor to
 * Replicate over a 1-d mesh of every rank, i.e. MPI_Allreduce on the mesh's
 * communicator (docs/benchmarks.md, "Data parallelism").
 *
 * Sizes: 1 MB and 25 MB (PyTorch DDP's first and default bucket sizes) and
 * the whole gradient of the bench Llama (6,123,168 floats, 24.5 MB, one
 * tensor). Per size: 2 warm-up calls, then --trials timed calls; per call
 * the slowest rank's time (a MAX all-reduce of the times afterwards), then
 * the median. Before timing, the result is checked: every rank holds
 * (rank + 1) in its piece, so the average is (world + 1) / 2 everywhere.
 *
 *   mpirun -np 2 build/bench_allreduce [--trials N]
 *
 * Prints one JSON line per size: bytes, ms (median, min), the algorithm
 * bandwidth (bytes / time) and the bus bandwidth (x 2 (n - 1) / n, what a
 * ring all-reduce moves per rank). Started without mpirun (make bench) it
 * prints one "skipped" line and exits 0: one process has nothing to reduce.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "pd/dist.h"
#include "pd/pd.h"

#define LLAMA_GRAD_FLOATS 6123168 /* pd_llama_num_params of the bench config (docs/benchmarks.md) */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One all-reduce of n floats; returns the seconds, or -1 on error (checked when check is set). */
static double allreduce(struct pd_mesh *m, int64_t n, int rank, int world, int check)
{
    int tok = pd_scope_begin();
    struct pd_placement part = pd_partial(PD_RED_AVG), rep = pd_replicate();
    struct pd_tensor *local = pd_full((int64_t[]){n}, 1, rank + 1.0, PD_F32);
    struct pd_tensor *x = local ? pd_dtensor_from_local(local, (int64_t[]){n}, m, &part) : NULL;
    double t0 = bench_now();
    struct pd_tensor *y = x ? pd_reshard(x, m, &rep) : NULL;
    double dt = bench_now() - t0;
    if (!y) dt = -1;
    if (y && check) {
        const float *v = pd_tensor_data(pd_dtensor_local(y));
        float want = (float)(world + 1) / 2.0f;
        for (int64_t i = 0; i < n; i += n / 7 + 1)
            if (v[i] != want || v[n - 1] != want) dt = -1;
    }
    pd_scope_end(tok);
    return dt;
}

/* The slowest rank's times (MAX over ranks, through reshard too). */
static int slowest(struct pd_mesh *m, double *t, int n)
{
    int tok = pd_scope_begin();
    struct pd_placement part = pd_partial(PD_RED_MAX), rep = pd_replicate();
    struct pd_tensor *local = pd_from_buffer(t, (int64_t[]){n}, 1, PD_F64);
    struct pd_tensor *x = local ? pd_dtensor_from_local(local, (int64_t[]){n}, m, &part) : NULL;
    struct pd_tensor *y = x ? pd_reshard(x, m, &rep) : NULL;
    int ok = y && pd_to_buffer(pd_dtensor_local(y), t, PD_F64) == 0;
    pd_scope_end(tok);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    int trials = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--trials") && i + 1 < argc) trials = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: mpirun -np N bench_allreduce [--trials N]\n");
            return 2;
        }
    }
    if (trials < 1 || trials > 10000) {
        fprintf(stderr, "bench_allreduce: --trials must be 1..10000\n");
        return 2;
    }
    /* Not under mpirun (Open MPI or a PMI launcher): do not start MPI at all. */
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK")) {
        printf("{\"bench\":\"allreduce\",\"impl\":\"paddle.c\",%s,\"skipped\":\"not under mpirun (run: mpirun -np 2 "
               "bench_allreduce)\"}\n", bench_tags("f32").s);
        return 0;
    }
    int world = pd_dist_world_size(), rank = pd_dist_world_rank();
    struct pd_mesh *m = pd_mesh_create((int[]){world}, 1, (const char *const[]){"dp"}, NULL);
    if (!m || world < 2) {
        if (rank == 0)
            printf("{\"bench\":\"allreduce\",\"impl\":\"paddle.c\",%s,\"error\":\"%s\"}\n", bench_tags("f32").s,
                   m ? "one rank: nothing to reduce (mpirun -np 2)" : "no mesh");
        pd_mesh_release(m);
        return m ? 0 : 1;
    }
    const struct { const char *name; int64_t floats; } sizes[] = {
        {"1 MB bucket", 262144}, {"25 MB bucket", 6553600}, {"bench Llama gradient", LLAMA_GRAD_FLOATS},
    };
    double *t = malloc(sizeof *t * (size_t)trials);
    int status = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && t; s++) {
        int64_t n = sizes[s].floats;
        int bad = allreduce(m, n, rank, world, 1) < 0 || allreduce(m, n, rank, world, 0) < 0;
        for (int i = 0; i < trials && !bad; i++) bad = (t[i] = allreduce(m, n, rank, world, 0)) < 0;
        if (bad || slowest(m, t, trials)) {
            if (rank == 0)
                printf("{\"bench\":\"allreduce\",\"impl\":\"paddle.c\",%s,\"size\":\"%s\",\"error\":\"wrong result or "
                       "failed call\"}\n", bench_tags("f32").s, sizes[s].name);
            status = 1;
            break;
        }
        qsort(t, (size_t)trials, sizeof *t, cmp_double);
        double med = trials % 2 ? t[trials / 2] : 0.5 * (t[trials / 2 - 1] + t[trials / 2]);
        double bytes = 4.0 * (double)n;
        if (rank == 0)
            printf("{\"bench\":\"allreduce\",\"impl\":\"paddle.c\",%s,\"via\":\"pd_reshard Partial(avg)->Replicate\","
                   "\"world_size\":%d,\"size\":\"%s\",\"bytes\":%.0f,\"trials\":%d,\"ms\":%.3f,\"ms_min\":%.3f,"
                   "\"algbw_gb_s\":%.2f,\"busbw_gb_s\":%.2f}\n",
                   bench_tags("f32").s, world, sizes[s].name, bytes, trials, 1e3 * med, 1e3 * t[0], bytes / med / 1e9,
                   bytes / med / 1e9 * 2.0 * (world - 1) / world);
        fflush(stdout);
    }
    free(t);
    pd_mesh_release(m);
    return status;
}
