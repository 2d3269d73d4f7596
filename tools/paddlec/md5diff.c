/* paddlec md5diff A B — the first op where two checksum files (written by
 * pd_md5_begin) diverge. Like diff(1): exit 0 when identical, 1 when they
 * differ, 2 on trouble (usage, unreadable file). The cli owner registers
 * pdc_cmd_md5diff in main.c's command table. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pd/profiler.h"

int pdc_cmd_md5diff(int argc, char **argv);

/* Print the fields of a line "<seq> <name> out<j> <dtype> <shape> <md5>". */
static void show(const char *label, const char *path, const char *line)
{
    char name[256] = "", out[32] = "", dt[16] = "", shape[128] = "", md5[40] = "";
    unsigned long long seq = 0;
    if (!*line) { printf("  %s %s: (ends here)\n", label, path); return; }
    if (sscanf(line, "%llu %255s %31s %15s %127s %39s", &seq, name, out, dt, shape, md5) == 6)
        printf("  %s %s: op %s %s %s %s md5 %s (line seq %llu)\n", label, path, name, out, dt, shape, md5, seq);
    else
        printf("  %s %s: %s\n", label, path, line);
}

int pdc_cmd_md5diff(int argc, char **argv)
{
    struct cli_opt opts[] = {{0}};
    const char *pos[2];
    int n_pos = 0;
    cli_parse(argc, argv, opts, "md5diff A.md5 B.md5",
              "Name the first op whose output checksum differs between two runs written with pd_md5_begin "
              "(exit 0: identical, 1: they differ, 2: error).",
              pos, 2, &n_pos);
    if (n_pos != 2) cli_fail(CLI_EXIT_USAGE, "expected two checksum files (see paddlec md5diff --help)");
    struct pd_md5_diff d;
    int rc = pd_md5_diff(pos[0], pos[1], &d);
    if (rc < 0) cli_fail(CLI_EXIT_USAGE, "comparing checksums: %s", pd_last_error()); /* 2, as diff: 1 means "they differ" */
    if (rc == 0) {
        printf("identical: %s and %s\n", pos[0], pos[1]);
        return 0;
    }
    printf("first divergence at line %lld:\n", (long long)d.line);
    show("A", pos[0], d.a);
    show("B", pos[1], d.b);
    return 1;
}
