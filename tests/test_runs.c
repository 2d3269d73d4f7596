/* paddle.c — runs tests/test_runs.sh (the run-directory tests of paddlec) against
 * the paddlec binary built next to this test; fails when the script does.
 * The script path comes from __FILE__, the binary from argv[0]'s directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
    (void)argc;
    char src[4096], bin[4096], cmd[9000];
    snprintf(src, sizeof src, "%s", __FILE__);
    char *slash = strrchr(src, '/');
    if (slash) *slash = 0; else snprintf(src, sizeof src, ".");
    snprintf(bin, sizeof bin, "%s", argv[0]);
    slash = strrchr(bin, '/');
    if (slash) *slash = 0; else snprintf(bin, sizeof bin, ".");
    snprintf(cmd, sizeof cmd, "bash '%s/test_runs.sh' '%s/paddlec'", src, bin);
    int rc = system(cmd);
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
        printf("test_runs: FAILED (status %d)\n", rc);
        return 1;
    }
    printf("test_runs: passed\n");
    return 0;
}
