/* paddle.c — what the MPI test programs share (the programs in tests/dist): this
 * rank's place, a CHECK that counts and prints the first failures with the
 * rank and pd_last_error(), and the failures summed over every rank. */
#ifndef PD_TESTS_DIST_CHECK_H
#define PD_TESTS_DIST_CHECK_H

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "pd/pd.h"

static int fails, checks, rank __attribute__((unused)), world __attribute__((unused));

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        checks++;                                                                                                      \
        if (!(cond)) {                                                                                                 \
            if (fails++ < 30) {                                                                                        \
                printf("rank %d line %d: ", rank, __LINE__);                                                           \
                printf(__VA_ARGS__);                                                                                   \
                printf(" (last error: %s)\n", pd_last_error());                                                        \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

/* The failures of every rank (collective over MPI_COMM_WORLD). */
static inline int dist_check_total(void)
{
    int all = 0;
    MPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

/* This rank's place, a 1-D mesh "x" over every rank, and on 4 ranks a
 * 2 x 2 mesh "dp" x "tp" (*grid NULL otherwise). */
static inline void dist_meshes(struct pd_mesh **line, struct pd_mesh **grid)
{
    rank = pd_dist_world_rank();
    world = pd_dist_world_size();
    *line = pd_mesh_create((int[]){world}, 1, (const char *const[]){"x"}, NULL);
    *grid = world == 4 ? pd_mesh_create((int[]){2, 2}, 2, (const char *const[]){"dp", "tp"}, NULL) : NULL;
}

/* max |a - b| / (1 + max |b|) over the whole values (plain tensors, or
 * distributed ones gathered by the caller); INFINITY when a is missing or
 * the sizes differ. */
static inline double dist_diff(struct pd_tensor *a, struct pd_tensor *b)
{
    if (!a || !b || pd_tensor_numel(a) != pd_tensor_numel(b)) return INFINITY;
    int64_t n = pd_tensor_numel(a);
    double *x = malloc(sizeof *x * (size_t)(n + 1)), *y = malloc(sizeof *y * (size_t)(n + 1));
    pd_to_buffer(a, x, PD_F64);
    pd_to_buffer(b, y, PD_F64);
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) d = fmax(d, fabs(x[i] - y[i])), m = fmax(m, fabs(y[i]));
    free(x), free(y);
    return d / (1 + m);
}

#endif
