/* paddle.c — what the MPI test programs share (the programs in tests/dist): this
 * rank's place, a CHECK that counts and prints the first failures with the
 * rank and pd_last_error(), and the failures summed over every rank. */
#ifndef PD_TESTS_DIST_CHECK_H
#define PD_TESTS_DIST_CHECK_H

#include <mpi.h>
#include <stdio.h>

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

#endif
