/* paddle.c — seeing inside: op names, name scopes, call sites, graph
 * export, anomaly mode and scoped logs (docs/debugging.md).
 *
 * Every tool is off by default and costs one predictable branch per op when
 * off. Names are always assigned (a counter per op type and thread), so the
 * same program run twice names its ops, tensors and GradNodes identically:
 *   op call   "model.layers.3.mlp/matmul_12"
 *   output    "model.layers.3.mlp/matmul_12.out0"
 *   GradNode  "model.layers.3.mlp/matmul_12.grad"
 * and error messages of a failing op start with the call's name.
 * Strings returned here are thread-local or interned: copy them to keep
 * them past the next call on the same thread.
 */
#ifndef PD_DEBUG_H
#define PD_DEBUG_H

#include <stdio.h>

#include "pd/state.h"
#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- names ----------------------------------------------------------- */
/* Restart the per-op counters of this thread (call at the start of a step
 * to compare steps or runs line by line). */
void pd_debug_reset_names(void);
/* Name a region: ops called inside are named "<scope>/<op>_<n>". Nested
 * scopes join with '.' ("model" then "layers.3" gives "model.layers.3").
 * Names are 1..127 characters without '/' or '"'. Scopes nest up to 64
 * deep; every begin needs its end (on this thread). */
int pd_name_scope_begin(const char *name);
int pd_name_scope_end(void); /* PD_ERR_STATE without a matching begin */
const char *pd_name_scope_current(void); /* "" outside any scope */
/* "matmul_12.out0" for an op result, the name given by pd_tensor_set_name,
 * or "tensor_<id>" for an unnamed leaf. Thread-local buffer, valid until
 * the fourth next call on this thread. NULL for NULL. */
const char *pd_tensor_name(const struct pd_tensor *t);
/* Give a tensor (usually a leaf: parameter, input) a name. Names are
 * interned for the life of the process: name parameters and inputs, not
 * every temporary. */
int pd_tensor_set_name(struct pd_tensor *t, const char *name);
/* Name every tensor of a state dict "param:<key>" (a model's parameters). */
int pd_debug_name_params(const struct pd_state_dict *sd);

/* ---- call sites ------------------------------------------------------ */
/* On: each op records the first caller outside libpaddlec (backtrace) and
 * every GradNode keeps its forward op's site; resolved lazily to
 * "file.c:87 (function)" with addr2line (build with -g). Returns the
 * previous setting. Costs a backtrace (~1-3 us) per op while on. */
int pd_debug_set_callsites(int on);
/* The forward call site of the op that produced t ("x.c:12 (main)"), when
 * it was recorded (t has a grad_fn and capture was on), else NULL. */
const char *pd_tensor_callsite(const struct pd_tensor *t);

/* ---- live tensors (leaks) -------------------------------------------- */
/* On: every tensor made from now on is listed, with the call site in the
 * user's code that made it, until it is released. Returns the previous
 * setting. PD_DEBUG_LEAKS=1 in the environment turns it on when the library
 * loads and prints pd_debug_report_live(stderr) at exit. Costs a backtrace
 * (~1-3 us) per tensor while on. */
int pd_debug_track_live(int on);
/* Writes the tracked tensors still alive to f (if not NULL), grouped by
 * call site ("3 made at app.c:12 (main): mul_1.out0 f32 [4], ..."), and
 * returns their number. */
int64_t pd_debug_report_live(FILE *f);

/* ---- anomaly mode ---------------------------------------------------- */
/* On: every op output (forward, and the ops run by backward) is checked for
 * NaN/Inf; the first hit fails that op (PD_ERR_STATE) with a message naming
 * the op, each input's shape, dtype, min/max/mean and NaN/Inf counts, and
 * the call site (the forward op's site for a GradNode). Returns previous. */
int pd_anomaly_mode(int on);

/* ---- scoped logs ----------------------------------------------------- */
/* Modules: "dispatch" (3: each op; 4: its inputs and outputs), "autograd"
 * (3: each GradNode run in backward), any other name a module logs under,
 * and "*" (the default for modules without their own level). Level 0 is
 * off. The environment variable PD_LOG="autograd=3,dispatch=4" (or "4")
 * is read when the library loads. */
int pd_set_log_level(const char *module, int level);
int pd_get_log_level(const char *module); /* effective on this thread */
/* Parse "mod=level,mod=level" or "level"; PD_ERR_INVALID on bad syntax. */
int pd_log_parse(const char *spec);
/* Raise module's level (or "*") for a region on this thread; GradNodes
 * created inside log at that level when backward runs them later, even
 * after the guard ended. Guards nest; end pops the innermost. */
int pd_log_guard_begin(const char *module, int level);
int pd_log_guard_end(void); /* PD_ERR_STATE without a matching begin */
/* Where lines go: fn(module, level, line) (line has no newline), or stderr
 * when fn is NULL (the default). */
typedef void (*pd_log_sink_fn)(const char *module, int level, const char *line, void *ctx);
void pd_log_set_sink(pd_log_sink_fn fn, void *ctx);

/* ---- graph export ---------------------------------------------------- */
struct pd_graph;
/* Record the ops called on this thread until pd_graph_capture_end: nodes
 * are ops (op, name, shapes, dtypes, call site), edges are tensors. Ops run
 * by backward inside the region are recorded too, marked with their
 * GradNode. One capture at a time per process. */
int pd_graph_capture_begin(void);
struct pd_graph *pd_graph_capture_end(void); /* NULL with an error if none began */
/* The backward graph reachable from loss: nodes are GradNodes and leaves
 * (parameters), edges point the way the gradient flows. */
struct pd_graph *pd_graph_export_backward(const struct pd_tensor *loss);
int pd_graph_num_nodes(const struct pd_graph *g);
int pd_graph_num_edges(const struct pd_graph *g);
/* Graphviz DOT. When the graph has more than max_nodes nodes (0: 200),
 * nodes are collapsed by name scope, deepest first, into one node per
 * scope ("model.layers.3.mlp: 7 ops"). */
int pd_graph_write_dot(const struct pd_graph *g, const char *path, int max_nodes);
/* A self-contained HTML page: the SVG from `dot -Tsvg` when Graphviz is
 * installed, always followed by tables of nodes and edges. */
int pd_graph_write_html(const struct pd_graph *g, const char *path, int max_nodes);
void pd_graph_destroy(struct pd_graph *g);

#ifdef __cplusplus
}
#endif
#endif
