/* paddle.c — safetensors files and state-dict loading (docs/checkpoints.md).
 *
 * A safetensors file is: an 8-byte little-endian header length N, N bytes of
 * UTF-8 JSON ({"name": {"dtype": "F32", "shape": [2, 3], "data_offsets":
 * [begin, end]}, ..., "__metadata__": {"key": "value"}}), then the data
 * section; offsets are relative to the start of the data section.
 *
 * Files are untrusted input: every header field is validated before any data
 * is touched, and any problem gives NULL / a negative status with a one-line
 * message (pd_last_error()) naming the file, the tensor and the problem.
 * Saving is atomic: a temporary file is written, fsync'ed and renamed over the
 * target, so a failed save leaves the previous file as it was.
 */
#ifndef PD_IO_H
#define PD_IO_H

#include <stdio.h>

#include "pd/state.h"
#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Header limit of the reference implementation (100 MB). */
#define PD_SAFETENSORS_MAX_HEADER 100000000ull
/* Entries of a header at most: tensors plus "__metadata__" keys. */
#define PD_SAFETENSORS_MAX_KEYS 1000000
/* Elements of one tensor at most (2^46; bytes are bounded by the file). */
#define PD_SAFETENSORS_MAX_NUMEL (1ull << 46)

/* Reads the whole file into a new state dict (tensors in data-offset order,
 * "__metadata__" as the dict's metadata). Tensors are fresh contiguous copies
 * owned by the state dict (not by any scope). NULL on error. */
struct pd_state_dict *pd_safetensors_load(const char *path);

/* Writes sd's tensors (any strides, any dtype) in sd's order, with its
 * metadata, header padded with spaces to a multiple of 8 bytes. Written to
 * "<path>.tmp.<pid>", fsync'ed, renamed over path, then the directory is
 * fsync'ed. On failure the temporary file is removed and path is untouched. */
int pd_safetensors_save(const char *path, const struct pd_state_dict *sd);

/* ---- listing without loading (paddlec inspect) ----------------------- */
struct pd_safetensors_entry {
    char *name;
    enum pd_dtype dtype;
    int ndim;
    int64_t shape[PD_MAX_DIMS];
    uint64_t begin, end;   /* byte range inside the data section */
};

struct pd_safetensors_info {
    uint64_t file_size;
    uint64_t header_len;   /* N: the data section starts at 8 + N */
    int n_tensors;
    struct pd_safetensors_entry *tensors;  /* data-offset order */
    int n_meta;
    char **meta_keys, **meta_values;       /* "__metadata__", file order */
};

/* Reads and validates the header only (same checks as pd_safetensors_load,
 * except the bool data check). Free with pd_safetensors_info_destroy. */
struct pd_safetensors_info *pd_safetensors_info(const char *path);
void pd_safetensors_info_destroy(struct pd_safetensors_info *info);   /* NULL is a no-op */
/* The format's name of a dtype ("F32", "BF16", "BOOL", ...). */
const char *pd_safetensors_dtype_name(enum pd_dtype dt);

/* Summary statistics of a tensor, in double. min/max/mean/std are over the
 * finite elements (std is the population std, ddof = 0); they are NaN when
 * there is no finite element. */
struct pd_tensor_stats {
    int64_t numel;
    int64_t n_nan, n_inf;
    double min, max, mean, std;
};
int pd_tensor_stats(const struct pd_tensor *t, struct pd_tensor_stats *stats);

/* ---- state-dict load ------------------------------------------------- */
/* Copies each tensor of src into the tensor of the same name in dst, in
 * place (pd_copy_ under no_grad, converting dtype). Everything is checked
 * first, so an error loads nothing:
 *   strict:     a dst tensor missing from src, a src tensor unexpected in dst,
 *               or a shape mismatch is an error (up to a few names are listed,
 *               plus the counts);
 *   non-strict: missing and unexpected tensors are skipped; a shape mismatch
 *               is still an error.
 * report (may be NULL) receives one line: what was loaded, converted and
 * skipped, or the error. Metadata is not copied. */
int pd_state_dict_load(struct pd_state_dict *dst, const struct pd_state_dict *src, int strict, char *report,
                       size_t report_len);
/* pd_safetensors_save / pd_safetensors_load + pd_state_dict_load. */
int pd_state_dict_save_file(const char *path, const struct pd_state_dict *sd);
int pd_state_dict_load_file(struct pd_state_dict *dst, const char *path, int strict, char *report,
                            size_t report_len);

/* ---- files (docs/reliability.md, "Files and limits") ---------------------
 * The rules every reader and writer of the library follows, for programs
 * built on it (paddlec uses them for its own files):
 *   - only regular files are read, and anything else (a FIFO, a device, a
 *     directory) is refused before an open that could block;
 *   - a write goes to "<path>.tmp.<pid>" in the same directory, is flushed,
 *     fsync'ed and renamed over path, then the directory is fsync'ed; a
 *     failed write leaves path untouched. Before it, "*.tmp.<pid>" regular
 *     files of that directory whose process no longer runs (temporaries of
 *     killed saves) are removed. */

/* The whole regular file path, NUL-terminated (malloc'd; *len, if not NULL,
 * gets the byte count without the NUL). A file of more than max_bytes is an
 * error. NULL on error. */
char *pd_file_read(const char *path, size_t max_bytes, size_t *len);
/* A stdio stream on the regular file path: mode "r"/"rb" reads; "a" appends
 * (creating the file; for logs, which are not written atomically). NULL on
 * error, without blocking on a FIFO. */
FILE *pd_file_open(const char *path, const char *mode);
/* Writes len bytes atomically (see above). Status. */
int pd_file_write(const char *path, const void *data, size_t len);
/* text, untrusted, fit for a one-line message: in double quotes, with
 * quotes, backslashes, control bytes and invalid UTF-8 escaped (\n, \xNN),
 * cut after 64 bytes with "..." after the closing quote. NULL text gives
 * (null). Returns buf; cap of 264 bytes holds any text (less cuts sooner). */
const char *pd_quote(const char *text, char *buf, size_t cap);
#define PD_QUOTE_BUF 264
/* x as the library writes a double in JSON (model configs, training
 * recipes): the shortest of %.15g, %.16g and %.17g that reads back as x
 * exactly; "null" when x is not finite. Returns buf, or NULL (with a
 * message) when buf is NULL or cap < PD_DOUBLE_BUF. */
const char *pd_format_double(double x, char *buf, size_t cap);
#define PD_DOUBLE_BUF 32

#ifdef __cplusplus
}
#endif
#endif
