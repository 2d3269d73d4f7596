/* paddle.c — paddlec's main(): everything is in cli_main (main.c), which the
 * fuzz target fuzz/fuzz_cli_args.c also calls. */
#include "cli.h"

#include <string.h>

int main(int argc, char **argv)
{
    /* the computing commands pick their OpenMP wait policy (threads.c) */
    if (argc > 1 && (!strcmp(argv[1], "train") || !strcmp(argv[1], "generate") || !strcmp(argv[1], "eval") ||
                     !strcmp(argv[1], "bench")))
        cli_threads_reexec(argv);
    return cli_main(argc, argv);
}
