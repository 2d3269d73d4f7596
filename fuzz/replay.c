/* paddle.c — replays fuzz inputs without libFuzzer (the CTest entries
 * fuzz_replay_<target>, fuzz/CMakeLists.txt): each argument is a file or a
 * directory whose regular files (not starting with '.') are each passed once
 * to LLVMFuzzerTestOneInput, in name order. A missing directory counts as
 * empty (a target with no crasher yet). Exit 0 when every input returned. */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) return -1;
    /* A copy of exactly n bytes, so that AddressSanitizer sees over-reads. */
    uint8_t *in = malloc(n ? n : 1);
    memcpy(in, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(in, n);
    free(in);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) {
            if (errno == ENOENT) continue; /* no crasher yet */
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad += run_file(argv[i]) != 0;
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) return 1;
        char **names = NULL;
        size_t nn = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            names = realloc(names, (nn + 1) * sizeof *names);
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[nn] = malloc(len);
            snprintf(names[nn++], len, "%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        if (nn) qsort(names, nn, sizeof *names, cmp_str);
        for (size_t k = 0; k < nn; k++) {
            if (!stat(names[k], &st) && S_ISREG(st.st_mode)) {
                bad += run_file(names[k]) != 0;
                files++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d inputs\n", files);
    return bad ? 1 : 0;
}
