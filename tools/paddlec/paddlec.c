/* paddle.c — paddlec's main(): everything is in cli_main (main.c), which the
 * fuzz target fuzz/fuzz_cli_args.c also calls. */
#include "cli.h"

int main(int argc, char **argv)
{
    return cli_main(argc, argv);
}
