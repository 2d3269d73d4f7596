/* paddle.c — fuzz target: paddlec's argument parser (tools/paddlec: the
 * command dispatch of dispatch.c and cli_parse of util.c, with each
 * command's real option table). The input is the argument list, NUL
 * separated ("train\0--steps\0" "60"). The program runs in parse-only mode
 * (cli.h: cli_parse_only): it stops after the first parse of the command,
 * before any file is read or any work is done. Invariants: the exit code is
 * 0, 1 or 2, and a failure prints exactly one line on stderr. */
#include "cli.h"
#include "fuzz.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *buf = fuzz_cstr(data, size);
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "paddlec";
    for (size_t i = 0; i <= size && argc < MAX_ARGS + 1;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;

    FILE *real_out = stdout, *real_err = stderr;
    char *out_text = NULL, *err_text = NULL;
    size_t out_len = 0, err_len = 0;
    stdout = open_memstream(&out_text, &out_len);
    stderr = open_memstream(&err_text, &err_len);
    FUZZ_CHECK(stdout && stderr);
    jmp_buf jb;
    volatile int rc;
    cli_cmd = "";
    cli_parse_only = &jb;
    int j = setjmp(jb);
    if (!j) rc = cli_main(argc, argv);
    else rc = j == CLI_PARSED ? 0 : j - CLI_EXITED;
    cli_parse_only = NULL;
    fclose(stdout);
    fclose(stderr);
    stdout = real_out;
    stderr = real_err;

    FUZZ_CHECK(rc == 0 || rc == CLI_EXIT_FAIL || rc == CLI_EXIT_USAGE);
    if (rc) {
        /* one line: text ending in its only newline */
        int ok = err_len && err_text[err_len - 1] == '\n';
        if (ok) {
            err_text[err_len - 1] = 0;
            ok = fuzz_one_line(err_text);
            err_text[err_len - 1] = '\n';
        }
        if (!ok) {
            fprintf(stderr, "exit %d, stderr:\n%s", rc, err_text);
            FUZZ_CHECK(!"a failure prints one line");
        }
    }
    free(out_text);
    free(err_text);
    free(buf);
    return 0;
}
