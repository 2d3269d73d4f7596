/* paddle.c — the op test harness (the project's test-backend-ops).
 *
 * One row per op and interesting attribute set. For every dtype in the row's
 * mask the harness builds random inputs (seeded per row), runs the row on
 * the CPU backend and on the reference backend and compares the results with
 * a per-dtype tolerance; then, unless the row says otherwise, it checks the
 * VJP in f64 against central finite differences of a random projection of
 * the output. A coverage check fails when an op of the op table has no row.
 *
 * Adding rows: write them in tests/ops/rows_<family>.c as
 *   int opt_rows_<family>(const struct opt_row **rows)  (returns the count)
 * and list the family in tests/ops/rows.def.
 */
#ifndef PD_OPT_HARNESS_H
#define PD_OPT_HARNESS_H

#include "core/internal.h"

enum opt_kind {
    OPT_FLOAT = 0, /* takes the row's dtype under test; uniform in [lo, hi) */
    OPT_INDEX,     /* int64 uniform integers in [lo, hi) */
    OPT_BOOL,      /* bool, true with probability lo (0 means 0.5) */
    OPT_FIXED,     /* float values in [lo, hi) but always of dtype `dtype` */
    OPT_KIND_COUNT
};

/* Layouts for an input. */
enum opt_layout {
    OPT_CONTIG = 0,
    OPT_TRANSPOSED, /* stored transposed (last two dims swapped), viewed back */
    OPT_STRIDED,    /* every other element of a tensor twice as long in the last dim */
    OPT_LAYOUT_COUNT
};

struct opt_in {
    int ndim;
    int64_t shape[PD_MAX_DIMS];
    enum opt_kind kind;
    double lo, hi;
    enum opt_layout layout;
    enum pd_dtype dtype;    /* OPT_FIXED only */
    int no_grad;            /* never differentiate w.r.t. this input */
};

#define OPT_MAX_IN 6
struct opt_row {
    const char *name;         /* "add/broadcast_rows" */
    enum pd_op op;            /* the op table entry it covers (PD_OP_COUNT: composite only) */
    int n_in;
    struct opt_in in[OPT_MAX_IN];
    /* Builds the result from inputs with the public API (or pdi_call*). */
    struct pd_tensor *(*fn)(struct pd_tensor **in);
    unsigned dtypes;          /* mask of dtypes for OPT_FLOAT inputs; 0 means f32|f64 */
    double tol;               /* extra tolerance factor (0 = 1) */
    int no_gradcheck;         /* non-differentiable, or checked elsewhere */
    int ref_only;             /* no CPU kernel is expected (ref vs ref skipped) */
    double fd_eps;            /* finite-difference step (0 = 1e-6) */
};

/* Shorthands for rows. */
#define OPT_SHAPE(...) .ndim = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), .shape = {__VA_ARGS__}
#define OPT_F(...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = -2, .hi = 2}
#define OPT_FR(lo_, hi_, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = lo_, .hi = hi_}
#define OPT_FT(...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = -2, .hi = 2, .layout = OPT_TRANSPOSED}
#define OPT_FS(...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_FLOAT, .lo = -2, .hi = 2, .layout = OPT_STRIDED}
#define OPT_F0 {.ndim = 0, .kind = OPT_FLOAT, .lo = -2, .hi = 2}
#define OPT_IDX(lo_, hi_, ...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_INDEX, .lo = lo_, .hi = hi_, .no_grad = 1}
#define OPT_B(...) {OPT_SHAPE(__VA_ARGS__), .kind = OPT_BOOL, .no_grad = 1}

#define OPT_DT_F (1u << PD_F32 | 1u << PD_F64)
#define OPT_DT_FLOW (OPT_DT_F | 1u << PD_BF16 | 1u << PD_F16)
#define OPT_DT_INT (1u << PD_I32 | 1u << PD_I64)
#define OPT_DT_ALLNUM (OPT_DT_FLOW | 1u << PD_I8 | 1u << PD_U8 | 1u << PD_I16 | OPT_DT_INT)

/* An attention backward (sdpa_backward, flashmask_backward) through the op
 * table: inputs q, k, v = in[0..3), n_extra extras (mask or indices) from
 * in[3], the forward's out and lse, and dout = in[3 + n_extra]; attributes
 * a. Returns dq, dk and dv flattened and concatenated (the row's result). */
static inline struct pd_tensor *opt_attention_backward(enum pd_op op, struct pd_tensor *const *in, int n_extra,
                                                       struct pd_tensor *const *fwd_out, const struct pdi_attrs *a)
{
    struct pd_tensor *bin[7] = {in[0], in[1], in[2]}, *g[3], *flat[3];
    int n = 3;
    for (int i = 0; i < n_extra; i++) bin[n++] = in[3 + i];
    bin[n++] = fwd_out[0];
    bin[n++] = fwd_out[1];
    bin[n++] = in[3 + n_extra];
    struct pdi_call b = {.op = op, .n_in = n, .n_out = 3, .in = bin, .out = g, .a = *a};
    if (pdi_dispatch(&b)) return NULL;
    for (int i = 0; i < 3; i++) flat[i] = pd_flatten(g[i], 0, -1);
    return pd_concat(flat, 3, 0);
}

/* A row's seed, from its name (input.c). */
uint64_t opt_row_seed(const char *name);
/* Random input per spec, seeded by (seed, k) (input.c). */
struct pd_tensor *opt_make_input(const struct opt_in *s, enum pd_dtype dt, uint64_t seed, int k);
/* The decomposition check of one row (decomp.c): -1 when the row's op has
 * no decomposition, else 0 (pass) or 1 (fail, printed). */
int opt_check_decomp(const struct opt_row *r, uint64_t seed, int with_grad);
/* The op table's own consistency (table.c): dtype classes against the
 * registered kernels, the composites that must have a decomposition, and
 * that every decomposition was checked on some row. Returns failures. */
int opt_check_table(const unsigned char *decomp_checked);

/* Declarations of each family's row table. */
#define OPT_FAMILY(name) int opt_rows_##name(const struct opt_row **rows);
#include "ops/rows.def"
#undef OPT_FAMILY

/* The row families of rows.def, in order (input.c). */
struct opt_family {
    const char *name;
    int (*get)(const struct opt_row **);
};
extern const struct opt_family opt_families[];
extern const int opt_n_families;

#endif
