/* paddle.c — the file rules every reader and writer of the library follows
 * (docs/reliability.md, "Files and limits"). Not installed; the public face
 * is pd_file_read / pd_file_open / pd_file_write / pd_quote (include/pd/io.h).
 *
 *   - reading: only regular files, refused before any open that could block
 *     (a FIFO, a terminal, a device);
 *   - writing: a temporary "<path>.tmp.<pid>" in the same directory, flushed,
 *     fsync'ed, renamed over path, then the directory is fsync'ed; stale
 *     temporaries of processes that no longer run are removed first;
 *   - messages: untrusted text (paths, names, tokens, keys) is quoted
 *     escaped and truncated, so every error stays one line.
 */
#ifndef PD_IO_FILE_H
#define PD_IO_FILE_H

#include <stddef.h>
#include <stdio.h>

/* Room for a quoted text (PDI_QUOTE_MAX input bytes at most, escaped). */
#define PDI_QUOTE_MAX 64
#define PDI_QUOTE_BUF (4 * PDI_QUOTE_MAX + 8)

/* s (n bytes) as "...": quotes and backslashes escaped, control bytes,
 * DEL, C1 controls and invalid UTF-8 as \xNN, \n \r \t as such; cut after
 * PDI_QUOTE_MAX bytes with "..." after the closing quote. NULL s: (null).
 * Returns buf (cap >= PDI_QUOTE_BUF holds any input). */
const char *pdi_quote_n(const void *s, size_t n, char *buf, size_t cap);
const char *pdi_quote(const char *s, char *buf, size_t cap);

/* A file descriptor of the regular file path, opened read-only (O_CLOEXEC),
 * or -1 with the message "<what>: cannot open "<path>": <reason>" or
 * "<what>: "<path>" is not a regular file". The open never blocks: it is
 * done with O_NONBLOCK, checked with fstat, then made blocking. */
int pdi_file_open_read(const char *path, const char *what);
/* The same as a stdio stream ("rb"). */
FILE *pdi_file_fopen_read(const char *path, const char *what);
/* The whole regular file, NUL-terminated (malloc'd; *len without the NUL),
 * refused when it is larger than max bytes. NULL with the message set. */
char *pdi_file_read_all(const char *path, size_t max, size_t *len, const char *what);

/* An atomic write in progress: write to f, then commit or abort. */
struct pdi_wfile {
    FILE *f;
    char *tmp, *path;
    const char *what;
};
/* Removes stale temporaries of path's directory, creates the temporary and
 * returns its stream (NULL with the message set). */
FILE *pdi_wfile_begin(struct pdi_wfile *w, const char *path, const char *what);
/* fflush, fsync, close, rename over the path, fsync the directory. On any
 * failure the temporary is removed and path is untouched. Status. */
int pdi_wfile_commit(struct pdi_wfile *w);
/* Drops the temporary (after a failed write); NULL-safe on a zeroed w. */
void pdi_wfile_abort(struct pdi_wfile *w);
/* begin + one write + commit. */
int pdi_file_write_atomic(const char *path, const void *data, size_t n, const char *what);

/* cJSON_ParseWithLengthOpts(text, n, end, 0) under a process-wide lock:
 * every cJSON parse writes cJSON's global error record, so two parses at once
 * race even when neither reads it. *end is this parse's own end (or error)
 * position: messages use it, never cJSON_GetErrorPtr(). */
struct cJSON;
struct cJSON *pdi_json_parse(const char *text, size_t n, const char **end);

/* Removes "<name>.tmp.<pid>" regular files of dir whose process no longer
 * runs; returns how many were removed. */
int pdi_file_clean_stale(const char *dir);

#endif
