/* paddle.c — the profiler and tensor checksums (issue 5, "seeing inside").
 *
 * Both are observers in stage 6 of the dispatcher: off by default, one
 * predictable branch per op when off. Ops are named as in pd/debug.h
 * ("model.layers.3.mlp/matmul_12"); ops run inside a backward VJP are
 * attributed to their GradNode ("matmul_12.grad").
 *
 * Library code never prints: results go to the files and strings asked for.
 */
#ifndef PD_PROFILER_H
#define PD_PROFILER_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
struct pd_tensor;

/* ---- profiler ---------------------------------------------------------- */
/* Start recording every op (forward and backward, all threads that
 * dispatch) and every user range. Clears the previous recording. Fails if
 * the profiler is already on. */
int pd_profiler_begin(void);
/* Stop recording; the events stay available for the writers below until the
 * next pd_profiler_begin. */
int pd_profiler_end(void);
int pd_profiler_enabled(void);
/* A user-defined range ("step 3", "forward"): nests per thread; shown in the
 * trace and in the summary (as "[range] name"). No-ops when the profiler is
 * off; pop without push is an error. */
int pd_profiler_range_push(const char *name);
int pd_profiler_range_pop(void);

/* One row of the summary: totals per op type, "op.grad" for ops run inside
 * backward ("matmul.grad" = every op dispatched by matmul GradNodes' VJPs,
 * listed by the op type they dispatched: "matmul.grad:matmul"). */
struct pd_profiler_row {
    char name[64];
    int64_t calls;
    double total_us, mean_us;
    double flops, bytes; /* summed; 0 when unknown */
    double gflops_per_s; /* flops / total time; 0 when unknown */
    double share;        /* total_us / profiled wall time */
};
/* Totals over the recording: wall_us is the wall time from begin to end;
 * op_us the sum of top-level op times (ops not nested in another op: ops
 * dispatched inside a VJP are nested in no op, so forward and backward ops
 * both count); gap_us = wall_us - op_us (Python-free glue: the autograd
 * engine, scope bookkeeping, the user's own code). */
struct pd_profiler_totals {
    double wall_us, op_us, gap_us;
    int64_t n_events, n_dropped; /* events kept / lost when the buffer was full */
    double flops, bytes;
    /* distributed runs (docs/distributed.md): comm_us is the time
     * collectives were in flight (on the trace's "communication" track),
     * exposed_us the part a rank waited for them (blocking collectives,
     * and waits for non-blocking ones); comm_bytes what this rank sent */
    double comm_us, exposed_us, comm_bytes;
};
int pd_profiler_totals(struct pd_profiler_totals *out);
/* Rows sorted by total time, descending. *rows is malloc'd (free it). */
int pd_profiler_rows(struct pd_profiler_row **rows, int *n_rows);
/* The summary table (malloc'd string; free it): name, calls, total ms,
 * mean µs, GFLOP/s, share; a last line with wall, op and gap times. At most
 * max_rows rows (<= 0: all). */
char *pd_profiler_summary(int max_rows);
/* Chrome trace JSON ("X" events, ts/dur in µs, pid/tid, args with the op
 * name, shapes, dtypes, flops, bytes, call site): opens in Perfetto
 * (ui.perfetto.dev) and chrome://tracing. */
int pd_profiler_write_chrome_trace(const char *path);

/* ---- tensor checksums ------------------------------------------------ */
enum pd_md5_mode {
    PD_MD5_BITWISE = 0, /* MD5 of the raw element bytes, row-major */
    PD_MD5_ROUNDED = 1, /* MD5 of the values printed with N decimals ("%.Nf", -0 as 0) */
    PD_MD5_MODE_COUNT
};
/* Write one line per op output to path, in execution order:
 *   "<seq> <name> out<j> <dtype> [<shape>] <md5>"
 * seq counts lines from 0; name is the op's call name, or
 * "<GradNode name>/<call name>" for ops run inside backward. decimals is
 * used in PD_MD5_ROUNDED mode (0..17). Fails if already on or path cannot be
 * opened. */
int pd_md5_begin(const char *path, enum pd_md5_mode mode, int decimals);
/* Flush and close; returns an error if any write failed. */
int pd_md5_end(void);
/* The hex MD5 (33 bytes with the NUL) of a tensor, as written in the file. */
int pd_md5_tensor(const struct pd_tensor *t, enum pd_md5_mode mode, int decimals, char hex[33]);
/* Compare two checksum files line by line. Returns 0 when identical, 1 when
 * they differ (first differing line described in *d: its 1-based number, and
 * both lines, cut to 511 bytes; an empty line when that file ended first),
 * negative on error: a file missing or unreadable (PD_ERR_IO), or a line of
 * either file, anywhere in it, that is not one pd_md5_begin writes
 * (PD_ERR_INVALID, naming the file and line). `paddlec md5diff A B` prints
 * this. */
struct pd_md5_diff {
    int64_t line;
    char a[512], b[512];
};
int pd_md5_diff(const char *path_a, const char *path_b, struct pd_md5_diff *d);
/* RFC 1321 MD5 of a buffer, lowercase hex. */
void pd_md5_hex(const void *data, size_t n, char hex[33]);

#ifdef __cplusplus
}
#endif
#endif
