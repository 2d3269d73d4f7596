/* paddle.c — shared pieces of the fuzz targets (docs/reliability.md,
 * "Fuzzing"). Each target defines LLVMFuzzerTestOneInput; libFuzzer
 * (`make fuzz`) or replay.c (`make test`) calls it. A target must not leak,
 * crash or hang on any input, and FUZZ_CHECK aborts on a broken invariant
 * (a finding, like a sanitizer report). */
#ifndef PD_FUZZ_H
#define PD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

/* An error message must be one non-empty line (docs/reliability.md). With
 * PD_FUZZ_LAX_MESSAGES=1 in the environment, a message spanning lines is
 * tolerated: to fuzz for deeper findings while a known multi-line message is
 * being fixed (reported with the run's counts). */
static inline int fuzz_one_line(const char *msg)
{
    static int lax = -1;
    if (lax < 0) lax = getenv("PD_FUZZ_LAX_MESSAGES") && !strcmp(getenv("PD_FUZZ_LAX_MESSAGES"), "1");
    return msg && *msg && (lax || !strchr(msg, '\n'));
}

/* A malloc'd NUL-terminated copy of data (the JSON readers take C strings). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    if (size) memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* The readers take paths: the input is written to one temporary file per
 * process (rewritten for each input, removed at exit). Returns its path. */
static char fuzz_path_buf[64];
static void fuzz_unlink(void)
{
    if (fuzz_path_buf[0]) unlink(fuzz_path_buf);
}
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    if (fd < 0) {
        const char *dir = getenv("TMPDIR");
        snprintf(fuzz_path_buf, sizeof fuzz_path_buf, "%s/pd-fuzz-XXXXXX",
                 dir && *dir && strlen(dir) < 40 ? dir : "/tmp");
        fd = mkstemp(fuzz_path_buf);
        if (fd < 0) abort();
        atexit(fuzz_unlink);
    }
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) abort();
    return fuzz_path_buf;
}

#endif
