/* paddle.c — reading and writing files by the rules of src/io/file.h:
 * regular files only (refused before a blocking open), atomic writes with
 * stale-temporary cleanup, and quoting of untrusted text in messages.
 *
 * Ownership: pdi_wfile owns its strings and stream until commit/abort;
 * pdi_file_read_all returns a buffer the caller frees.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "io/file.h"
#include "pd/io.h"

/* ---- quoting -------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left) that prints (no C1
 * control, no surrogate, no overlong), or 0. */
static size_t utf8_printable(const unsigned char *s, size_t n)
{
    unsigned c = s[0], cp, min;
    size_t len;
    if ((c & 0xe0) == 0xc0) { len = 2; min = 0x80; cp = c & 0x1f; }
    else if ((c & 0xf0) == 0xe0) { len = 3; min = 0x800; cp = c & 0x0f; }
    else if ((c & 0xf8) == 0xf0) { len = 4; min = 0x10000; cp = c & 0x07; }
    else return 0;
    if (len > n) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0) return 0;
    return len;
}

const char *pdi_quote_n(const void *text, size_t n, char *buf, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    if (!buf || cap < 16) return "\"?\"";
    if (!text) {
        snprintf(buf, cap, "(null)");
        return buf;
    }
    const unsigned char *s = text;
    size_t k = 0, i = 0, lim = n < PDI_QUOTE_MAX ? n : PDI_QUOTE_MAX;
    size_t room = cap - 6; /* closing quote, "...", NUL */
    buf[k++] = '"';
    while (i < lim) {
        unsigned c = s[i];
        char e[8];
        size_t el = 0, take = 1;
        if (c == '"' || c == '\\') { e[0] = '\\'; e[1] = (char)c; el = 2; }
        else if (c == '\n') { memcpy(e, "\\n", 2); el = 2; }
        else if (c == '\r') { memcpy(e, "\\r", 2); el = 2; }
        else if (c == '\t') { memcpy(e, "\\t", 2); el = 2; }
        else if (c >= 0x20 && c < 0x7f) { e[0] = (char)c; el = 1; }
        else if (c >= 0x80 && (take = utf8_printable(s + i, n - i)) > 0) { memcpy(e, s + i, take); el = take; }
        else { take = 1; e[0] = '\\'; e[1] = 'x'; e[2] = hex[c >> 4]; e[3] = hex[c & 15]; el = 4; }
        if (k + el > room) break;
        memcpy(buf + k, e, el);
        k += el;
        i += take;
    }
    buf[k++] = '"';
    if (i < n) { memcpy(buf + k, "...", 3); k += 3; }
    buf[k] = 0;
    return buf;
}

const char *pdi_quote(const char *s, char *buf, size_t cap) { return pdi_quote_n(s, s ? strlen(s) : 0, buf, cap); }

const char *pd_quote(const char *text, char *buf, size_t cap) { return pdi_quote(text, buf, cap); }

/* ---- JSON ------------------------------------------------------------------ */

const char *pd_format_double(double x, char *buf, size_t cap)
{
    if (!buf || cap < PD_DOUBLE_BUF)
        return pdi_error(PD_ERR_INVALID, "format_double: a buffer of %d bytes is needed", PD_DOUBLE_BUF);
    if (!isfinite(x)) return strcpy(buf, "null");
    for (int p = 15; p <= 17; p++) { /* %.17g always reads back */
        snprintf(buf, cap, "%.*g", p, x);
        if (strtod(buf, NULL) == x) break;
    }
    return buf;
}

static pthread_mutex_t json_mu = PTHREAD_MUTEX_INITIALIZER;

struct cJSON *pdi_json_parse(const char *text, size_t n, const char **end)
{
    pthread_mutex_lock(&json_mu);
    cJSON *j = cJSON_ParseWithLengthOpts(text, n, end, 0);
    pthread_mutex_unlock(&json_mu);
    return j;
}

/* ---- reading -------------------------------------------------------------- */

int pdi_file_open_read(const char *path, const char *what)
{
    char qb[PDI_QUOTE_BUF];
    if (!path) return pdi_errorf(PD_ERR_INVALID, "%s: path is NULL", what), -1;
    /* O_NONBLOCK: opening a FIFO with no writer (or a tty) returns at once;
     * O_NOCTTY: a terminal never becomes ours. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return pdi_errorf(PD_ERR_IO, "%s: cannot open %s: %s", what, pdi_quote(path, qb, sizeof qb), strerror(errno)), -1;
    struct stat sb;
    if (fstat(fd, &sb)) {
        int e = errno;
        close(fd);
        return pdi_errorf(PD_ERR_IO, "%s: cannot stat %s: %s", what, pdi_quote(path, qb, sizeof qb), strerror(e)), -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return pdi_errorf(PD_ERR_IO, "%s: %s is not a regular file", what, pdi_quote(path, qb, sizeof qb)), -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return pdi_errorf(PD_ERR_IO, "%s: cannot read %s: %s", what, pdi_quote(path, qb, sizeof qb), strerror(e)), -1;
    }
    return fd;
}

FILE *pdi_file_fopen_read(const char *path, const char *what)
{
    int fd = pdi_file_open_read(path, what);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return pdi_error(PD_ERR_NOMEM, "%s: out of memory", what);
    }
    return f;
}

char *pdi_file_read_all(const char *path, size_t max, size_t *len, const char *what)
{
    char qb[PDI_QUOTE_BUF];
    if (len) *len = 0;
    int fd = pdi_file_open_read(path, what);
    if (fd < 0) return NULL;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && (uint64_t)sb.st_size > max) {
        close(fd);
        return pdi_error(PD_ERR_INVALID, "%s: %s has %lld bytes, more than the limit of %zu", what,
                         pdi_quote(path, qb, sizeof qb), (long long)sb.st_size, max);
    }
    /* Read to the end rather than trusting st_size (the file may grow);
     * stop one byte past the limit. */
    size_t cap = sb.st_size > 0 && (uint64_t)sb.st_size < max ? (size_t)sb.st_size + 1 : 4096, n = 0;
    char *buf = pdi_malloc(cap + 1);
    for (;;) {
        if (buf && n == cap) { /* n <= max here, so max + 1 > cap */
            size_t nc = cap <= max - cap ? 2 * cap : max + 1;
            char *b = pdi_realloc(buf, nc + 1);
            if (!b) free(buf);
            buf = b;
            cap = nc;
        }
        if (!buf) {
            close(fd);
            return pdi_error(PD_ERR_NOMEM, "%s: out of memory reading %s", what, pdi_quote(path, qb, sizeof qb));
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return pdi_error(PD_ERR_IO, "%s: read error on %s: %s", what, pdi_quote(path, qb, sizeof qb), strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
        if (n > max) {
            free(buf);
            close(fd);
            return pdi_error(PD_ERR_INVALID, "%s: %s has more than the limit of %zu bytes", what,
                             pdi_quote(path, qb, sizeof qb), max);
        }
    }
    close(fd);
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

FILE *pd_file_open(const char *path, const char *mode)
{
    char qb[PDI_QUOTE_BUF];
    if (!mode || (strcmp(mode, "r") && strcmp(mode, "rb") && strcmp(mode, "a")))
        return pdi_error(PD_ERR_INVALID, "file_open: mode must be \"r\", \"rb\" or \"a\"");
    if (mode[0] == 'r') return pdi_file_fopen_read(path, "file_open");
    if (!path) return pdi_error(PD_ERR_INVALID, "file_open: path is NULL");
    /* An append log: O_NONBLOCK makes opening a FIFO without a reader fail
     * (ENXIO) instead of waiting; anything not regular is refused. */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    struct stat sb;
    if (fd >= 0 && (fstat(fd, &sb) || !S_ISREG(sb.st_mode))) {
        close(fd);
        return pdi_error(PD_ERR_IO, "file_open: %s is not a regular file", pdi_quote(path, qb, sizeof qb));
    }
    if (fd < 0)
        return errno == ENXIO ? pdi_error(PD_ERR_IO, "file_open: %s is not a regular file", pdi_quote(path, qb, sizeof qb))
                              : pdi_error(PD_ERR_IO, "file_open: cannot open %s: %s", pdi_quote(path, qb, sizeof qb),
                                          strerror(errno));
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "a");
    if (!f) {
        close(fd);
        return pdi_error(PD_ERR_NOMEM, "file_open: out of memory");
    }
    return f;
}

char *pd_file_read(const char *path, size_t max_bytes, size_t *len)
{
    return pdi_file_read_all(path, max_bytes, len, "file_read");
}

/* ---- writing -------------------------------------------------------------- */

/* The directory part of path ("." when none); malloc'd. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? pdi_strndup(path, slash == path ? 1 : (size_t)(slash - path)) : pdi_strdup(".");
}

/* name is "<something>.tmp.<digits>": the pid, else 0. */
static long tmp_pid(const char *name)
{
    const char *t = NULL;
    for (const char *p = strstr(name, ".tmp."); p; p = strstr(p + 1, ".tmp.")) t = p;
    if (!t || t == name || !t[5]) return 0;
    long pid = 0;
    for (const char *d = t + 5; *d; d++) {
        if (*d < '0' || *d > '9' || pid > 100000000) return 0;
        pid = pid * 10 + (*d - '0');
    }
    return pid;
}

int pdi_file_clean_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int fd = dirfd(d), removed = 0;
    long self = (long)getpid();
    for (struct dirent *e; (e = readdir(d));) {
        long pid = tmp_pid(e->d_name);
        if (pid <= 0 || pid == self) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* running, or not ours to know */
        struct stat sb;
        if (fstatat(fd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode)) continue;
        if (unlinkat(fd, e->d_name, 0) == 0) removed++;
    }
    closedir(d);
    return removed;
}

/* fsync the directory holding path, so the rename itself is durable. */
static void sync_dir(const char *path)
{
    char *dir = dir_of(path);
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

FILE *pdi_wfile_begin(struct pdi_wfile *w, const char *path, const char *what)
{
    char qb[PDI_QUOTE_BUF];
    memset(w, 0, sizeof *w);
    w->what = what;
    if (!path || !*path) return pdi_error(PD_ERR_INVALID, "%s: NULL or empty path", what);
    char *dir = dir_of(path);
    size_t tl = strlen(path) + 32;
    w->path = pdi_strdup(path);
    w->tmp = pdi_malloc(tl);
    if (!dir || !w->path || !w->tmp) {
        free(dir);
        pdi_wfile_abort(w);
        return pdi_error(PD_ERR_NOMEM, "%s: out of memory", what);
    }
    /* Only a regular file (or nothing) may be replaced: renaming over a
     * device would turn /dev/null into a regular file. A character device
     * (/dev/null, a terminal) is written in place, where atomicity means
     * nothing; anything else that is not a regular file is refused. */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        free(dir);
        free(w->tmp);
        w->tmp = NULL;
        int fd = S_ISCHR(sb.st_mode) ? open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) : -1;
        struct stat sb2;
        if (fd >= 0 && (fstat(fd, &sb2) || !S_ISCHR(sb2.st_mode))) {
            close(fd);
            fd = -1;
        }
        int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
        if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (!f) {
            if (fd >= 0) close(fd);
            pdi_wfile_abort(w);
            return pdi_error(PD_ERR_IO, "%s: %s is not a regular file", what, pdi_quote(path, qb, sizeof qb));
        }
        w->f = f;
        return f;
    }
    pdi_file_clean_stale(dir);
    free(dir);
    snprintf(w->tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(w->tmp);
        }
        pdi_errorf(PD_ERR_IO, "%s: cannot create a temporary file next to %s: %s", what,
                   pdi_quote(path, qb, sizeof qb), strerror(e));
        free(w->tmp);
        free(w->path);
        memset(w, 0, sizeof *w);
        return NULL;
    }
    w->f = f;
    return f;
}

void pdi_wfile_abort(struct pdi_wfile *w)
{
    if (w->f) fclose(w->f); /* w->tmp is NULL when writing a device in place */
    if (w->f && w->tmp) unlink(w->tmp);
    free(w->tmp);
    free(w->path);
    memset(w, 0, sizeof *w);
}

int pdi_wfile_commit(struct pdi_wfile *w)
{
    char qb[PDI_QUOTE_BUF];
    if (!w->f) return pdi_errorf(PD_ERR_STATE, "%s: no write in progress", w->what ? w->what : "file");
    const char *step = NULL;
    int e = 0;
    if (ferror(w->f)) step = "write";
    else if (fflush(w->f)) step = "write";
    else if (w->tmp && fsync(fileno(w->f))) step = "fsync";
    if (step) e = errno;
    int c = fclose(w->f);
    w->f = NULL;
    if (!step && c) { step = "close"; e = errno; }
    if (!step && w->tmp && rename(w->tmp, w->path)) { step = "rename"; e = errno; }
    if (step) {
        if (w->tmp) unlink(w->tmp);
        int st = pdi_errorf(PD_ERR_IO, "%s %s: %s failed: %s (the previous file is left untouched)", w->what,
                            pdi_quote(w->path, qb, sizeof qb), step, e ? strerror(e) : "I/O error");
        free(w->tmp);
        free(w->path);
        memset(w, 0, sizeof *w);
        return st;
    }
    /* The new file is in place; a directory that cannot be synced is not
     * worth failing a save that already replaced the old file. */
    if (w->tmp) sync_dir(w->path);
    free(w->tmp);
    free(w->path);
    memset(w, 0, sizeof *w);
    return PD_OK;
}

int pdi_file_write_atomic(const char *path, const void *data, size_t n, const char *what)
{
    struct pdi_wfile w;
    FILE *f = pdi_wfile_begin(&w, path, what);
    if (!f) return pd_last_status();
    if (n && fwrite(data, 1, n, f) != n) {
        /* commit reports the stream error and removes the temporary */
    }
    return pdi_wfile_commit(&w);
}

int pd_file_write(const char *path, const void *data, size_t len)
{
    if (!data && len) return pdi_errorf(PD_ERR_INVALID, "file_write: data is NULL");
    return pdi_file_write_atomic(path, data, len, "file_write");
}
