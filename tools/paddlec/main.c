/* paddle.c — paddlec, the command-line program: train, generate, eval,
 * inspect, bench, tokenizer. This file only dispatches (cli_main; main() is
 * in paddlec.c, so that the fuzz target fuzz/fuzz_cli_args.c can call
 * cli_main in parse-only mode); each command lives in train.c or cmds.c and
 * reports errors as one line on stderr with a non-zero exit code (2: usage,
 * 1: everything else).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} cmds[] = {
    {"train", cmd_train, "train a Llama model (default: the built-in arithmetic task)"},
    {"generate", cmd_generate, "continue a prompt with a checkpoint"},
    {"eval", cmd_eval, "validation loss / perplexity and task accuracy of a checkpoint"},
    {"inspect", cmd_inspect, "list a safetensors file: tensors, statistics, metadata"},
    {"bench", cmd_bench, "time a training step and KV-cache decoding"},
    {"tokenizer", cmd_tokenizer, "tokenizer train: learn a byte-level BPE"},
    {"md5diff", pdc_cmd_md5diff, "first op where two checksum files differ"},
    {"export", cmd_export, "write a training checkpoint's model as a weights-only file"},
    {"plot", cmd_plot, "draw a run's metrics as an HTML page of SVG charts"},
    {"export-hf", cmd_export_hf, "write a checkpoint as a Hugging Face Llama directory"},
};

#ifndef PADDLEC_VERSION
#define PADDLEC_VERSION "0.1.0" /* CMakeLists.txt passes the project's version */
#endif

static void usage(FILE *f)
{
    fprintf(f, "usage: paddlec COMMAND [options]   (paddlec COMMAND --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\n  paddlec help COMMAND       the same as paddlec COMMAND --help\n"
               "  paddlec --version, -V      print the version\n");
}

int cli_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || (!strcmp(argv[1], "help") && argc == 2)) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
        printf("paddlec %s\n", PADDLEC_VERSION);
        return 0;
    }
    /* "help COMMAND [SUB]" runs "COMMAND [SUB] --help" */
    char *help_argv[5] = {argv[0], NULL, NULL, NULL, NULL};
    if (!strcmp(argv[1], "help")) {
        if (argc > 4) {
            fprintf(stderr, "paddlec: error: help takes a command (see paddlec --help)\n");
            return CLI_EXIT_USAGE;
        }
        for (int i = 2; i < argc; i++) help_argv[i - 1] = argv[i];
        help_argv[argc - 1] = "--help";
        argv = help_argv;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        if (!strcmp(argv[1], cmds[i].name)) {
            cli_cmd = cmds[i].name;
            cli_threads_enabled = cmds[i].fn == cmd_train || cmds[i].fn == cmd_generate || cmds[i].fn == cmd_eval ||
                                  cmds[i].fn == cmd_bench; /* --threads N (threads.c) */
            cli_exit(cmds[i].fn(argc - 2, argv + 2));   /* frees anything left held; PADDLEC_LEAK_CHECK */
        }
    char qb[PD_QUOTE_BUF];
    fprintf(stderr, "paddlec: error: unknown command %s (see paddlec --help)\n", pd_quote(argv[1], qb, sizeof qb));
    return CLI_EXIT_USAGE;
}
