/* paddle.c — internal structures shared by the core, the ops and autograd
 * (kernels see only core/kernel.h, which this header includes).
 *
 * Not installed. Everything here is prefixed pdi_ (shared across files) and
 * may change without notice. Owners:
 *   - a pdi_storage owns its bytes; tensors hold references to it;
 *   - a pd_tensor owns one reference to its storage, its .grad and its
 *     grad_fn node;
 *   - a pdi_node owns references to its saved tensors and to the nodes its
 *     edges point to (never to its own outputs: see pdi_node_save_output).
 */
#ifndef PD_INTERNAL_H
#define PD_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>

#include "pd/pd.h"
#include "core/kernel.h"


/* ---- storage and tensors --------------------------------------------- */
/* The kernel view of a tensor (offset applied). */
void pdi_kview_of(const struct pd_tensor *t, struct pd_kview *v);

struct pdi_storage {
    /* the four ints first: 72 bytes, no padding (fl_get clears it per op) */
    int refcount;
    int external;     /* data not ours to free (alloc is NULL) */
    int meta;         /* no bytes (data == NULL): shapes only, made by the meta executor */
    /* The backend whose call made it (PDI_BACKEND_CPU for host code outside
     * the dispatcher; -1 for external and meta storages), and below, the
     * allocator that made data and frees it, whatever the default is by
     * then (NULL for external and meta storages). */
    int backend;
    void *data;
    size_t nbytes;
    uint64_t version; /* bumped by every in-place write; checked on saved tensors */
    /* live-storage registry (pdi_storage_track_begin): serial > 0 while
     * linked; 0 for a storage made with tracking off. */
    uint64_t serial;
    struct pdi_storage *live_prev, *live_next;
    const struct pd_allocator *alloc;
};

struct pdi_node;
struct pdi_hook {
    pd_grad_hook_fn fn;
    void *ctx;
    struct pdi_hook *next;
};

struct pd_tensor {
    int refcount;
    struct pdi_storage *st;
    enum pd_dtype dtype;
    int ndim;
    int64_t shape[PD_MAX_DIMS];
    int64_t strides[PD_MAX_DIMS]; /* in elements */
    int64_t offset;               /* in elements */
    /* autograd */
    unsigned requires_grad : 1;
    unsigned retains_grad : 1;
    struct pd_tensor *grad;
    struct pdi_node *grad_fn;
    int out_nr;
    struct pdi_hook *hooks;       /* leaf hooks (non-leaf hooks live on the node) */
    uint64_t id;                  /* creation sequence number */
    /* debug name (src/debug/names.c): "<scope>/<op>_<n>.out<j>", or the
     * user's name when dbg_user (pd_tensor_set_name). dbg_scope is an
     * interned, never-freed string (or NULL); dbg_n == 0: no name. */
    const char *dbg_scope;
    uint32_t dbg_n;
    int16_t dbg_op;
    uint8_t dbg_out;
    uint8_t dbg_user;
    /* live-tensor tracking (src/debug/leaks.c): listed while dbg_tracked */
    uint8_t dbg_tracked;
    void *dbg_site;
    struct pd_tensor *dbg_live_prev, *dbg_live_next;
    /* a distributed tensor's global shape, mesh and placements (src/dist;
     * NULL for a plain tensor), freed by pdi_tensor_dist_release */
    void *dist;
};

/* How a tensor drops its grad_fn: set by autograd (node.c) before the first
 * node exists, so that core/ never calls up into autograd/. */
extern void (*pdi_tensor_grad_fn_release)(struct pdi_node *);
/* How a tensor drops its distribution: set by src/dist when it makes the
 * first distributed tensor (core/ does not call up into dist/). */
extern void (*pdi_tensor_dist_release)(void *dist);

struct pdi_call;
struct pdi_meta;
/* The distribution of a tensor (struct pd_tensor's dist; src/dist owns it,
 * core and autograd read the global shape). */
struct pdi_dist {
    struct pd_mesh *mesh; /* a reference */
    int ndim;
    int64_t gshape[PD_MAX_DIMS]; /* also the tensor's shape (its strides: contiguous) */
    struct pd_placement pl[PD_MAX_MESH_DIMS];
    /* this rank's piece of the tensor's storage */
    int64_t lshape[PD_MAX_DIMS], lstrides[PD_MAX_DIMS], loffset;
    /* a view whose input had to be resharded: it does not alias its base,
     * so the stage refuses in-place writes into it (src/dist/spmd.c) */
    int view_copy;
    int dp_axis; /* a parameter under pd_dp_attach: its axis + 1 (its gradient stays Partial there) */
    /* the distribute stage's handle on the piece (owned; NULL until the
     * stage needs it; not copied): the local call reads it without making
     * a new handle per op (src/dist/spmd.c) */
    struct pd_tensor *local;
};
/* A zeroed struct pdi_dist and its release, from per-thread free lists
 * like tensor handles' (core/tensor.c). */
struct pdi_dist *pdi_dist_new(void);
void pdi_dist_delete(struct pdi_dist *d);
/* What src/dist lends the dispatcher and autograd (core/ and autograd/ do
 * not call up into dist/): NULL until the first distributed tensor exists,
 * so a program without one pays one predictable branch per op. */
struct pdi_dist_hooks {
    /* stage 3, distribute: run a call with a distributed input (all stages) */
    int (*call)(struct pdi_call *c);
    /* a copy of a dist (the mesh retained), for a new handle on the tensor */
    void *(*copy)(const void *dist);
    /* replicated zeros of the global meta m on the mesh of dist */
    struct pd_tensor *(*zeros)(const void *dist, const struct pdi_meta *m);
    /* a leaf's gradient g in the leaf's placements (a new tensor, scoped) */
    struct pd_tensor *(*leaf_grad)(struct pd_tensor *leaf, struct pd_tensor *g);
    /* the whole value as a plain tensor (collective; scoped) */
    struct pd_tensor *(*full)(struct pd_tensor *t);
    /* finish the gradient reductions in flight (pd_dp_attach) before an
     * optimizer reads gradients; status */
    int (*sync_grads)(void);
    /* drive the collectives in flight (data-parallel buckets): MPI moves a
     * non-blocking collective only inside MPI calls, so backward calls this
     * between nodes; a load and a return when nothing is in flight */
    void (*progress)(void);
};
extern const struct pdi_dist_hooks *pdi_dist_hooks;
static inline int pdi_call_has_dist(const struct pdi_call *c);
/* A new handle (refcount 1, not in a scope) on t's storage with t's shape,
 * strides and distribution. */
struct pd_tensor *pdi_tensor_alias_same(const struct pd_tensor *t);
/* A tensor with a fresh contiguous storage (refcount 1, not in a scope),
 * made by the CPU backend from its allocator. Not for library code outside
 * the dispatcher: a storage made here is made by no op (use a creation op,
 * or pdi_from_host for host data; docs/design.md §1). */
struct pd_tensor *pdi_tensor_new(const int64_t *shape, int ndim, enum pd_dtype dt);
/* The same, made by `backend` with bytes from `alloc` (never NULL; see
 * pdi_backend_allocator). */
struct pd_tensor *pdi_tensor_new_on(const int64_t *shape, int ndim, enum pd_dtype dt, int backend,
                                    const struct pd_allocator *alloc);
/* The checks of pdi_tensor_new without the allocation: PD_OK, or the
 * status with its message ("tensor: negative dimension in shape [2, -1]"). */
int pdi_check_new(const int64_t *shape, int ndim, enum pd_dtype dt);
/* The shape checks alone, for every shape an op forms (outputs of infer
 * functions, views, broadcasts): ndim in [0, PD_MAX_DIMS], dims >= 0 and
 * within the element limit (pdi_shape_numel, core/checked.h). The message
 * starts with `what`: "expand: shape [4294967296, ...] has too many
 * elements (the limit is 2^46)". */
int pdi_check_shape(const char *what, const int64_t *shape, int ndim);
/* 1 when two indices of t may reach the same element (a stride-0 dim of
 * size > 1, or overlapping strides): such a tensor cannot be written in
 * place (the dispatcher refuses it as a written input). */
int pdi_self_overlaps(const struct pd_tensor *t);
/* A new handle viewing base's storage (refcount 1, not in a scope). */
struct pd_tensor *pdi_tensor_alias(const struct pd_tensor *base, const int64_t *shape, const int64_t *strides,
                                   int ndim, int64_t offset);
/* A tensor whose storage has no bytes (meta: data NULL, nbytes counted in
 * the meta statistics); shape, dtype and strides as pdi_tensor_new's. Views
 * of it share its storage, so they are meta too. */
struct pd_tensor *pdi_tensor_new_meta(const int64_t *shape, int ndim, enum pd_dtype dt);
static inline int pdi_is_meta(const struct pd_tensor *t) { return t->st->meta; }
/* Live bytes of meta storages (process-wide; src/core/meta.c): adjusted
 * when a meta storage is made or freed. peak is the high-water mark since
 * the last pdi_meta_peak_set. */
void pdi_meta_account(int64_t delta);
void pdi_meta_bytes(int64_t *live, int64_t *peak);
void pdi_meta_peak_set(int64_t peak);
/* Register t in the innermost scope (if any); returns t. */
struct pd_tensor *pdi_scope_add(struct pd_tensor *t);

/* Live-storage registry, for checkers that must see every tensor's bytes
 * (tests/test_one_path.c). While tracking is on (begin/end nest, any
 * thread), every storage made is linked into one process-wide list and
 * given a serial number (1, 2, ...; never reused, unlike the storage
 * structs, which free lists recycle); it leaves the list when freed, even
 * after tracking ended. Storages made with tracking off are never listed.
 * Off, it costs one predictable branch where a storage is made or freed. */
void pdi_storage_track_begin(void);
void pdi_storage_track_end(void);
/* The serial the next tracked storage will get. */
uint64_t pdi_storage_serial_next(void);
typedef void (*pdi_storage_fn)(struct pdi_storage *st, void *ctx);
/* Calls fn on every listed storage, oldest first, under the registry's
 * lock: fn must not make or free storages. Returns how many. */
int64_t pdi_storage_foreach(pdi_storage_fn fn, void *ctx);
/* ---- host access (src/core/meta.c) ------------------------------------ */
/* The one entry point through which host code outside kernels reads a
 * tensor's bytes (or hands out a pointer to them, as pd_tensor_data does):
 * pd_tensor_data, pd_to_buffer, pd_item, pd_get, printing, and wrappers
 * that read data (one_hot's num_classes, the counts of nonzero and unique,
 * FlashMask's index check). Returns the address of t's element 0. A meta tensor has no bytes: NULL with the error
 * "<what>: a meta tensor (no data) ...". Each call is an event for the host
 * observers: the tensor, the access, `what` and the first call site outside
 * the library (captured only while an observer is installed). */
#define PDI_HOST_READ 1u
#define PDI_HOST_WRITE 2u
#define PDI_HOST_COPY_IN 4u /* with WRITE: pdi_host_write's event, sent after the copy */
void *pdi_host_access(const struct pd_tensor *t, unsigned access, const char *what);
/* Host accesses refused because the tensor was distributed, counted per
 * thread: the distribute stage tells an infer that needs the values (a
 * data-dependent shape: it runs the op whole) from one that refused the
 * input (an error, returned before any communication). */
extern PDI_TLS unsigned pdi_host_dist_refusals;
/* A validation read: an infer that reads values only to check them, never
 * to compute a shape (flashmask's mask indices), reads them through this.
 * It is pdi_host_read, except inside the distribute stage's global infer
 * (pdi_global_infer > 0, src/dist/spmd.c), where a distributed t is not
 * read: PD_OK with *data NULL, and the caller skips the check (each rank's
 * local call checks its piece). A read that determines a shape (nonzero,
 * unique, masked_select) stays a pdi_host_read: refused on a distributed
 * tensor, so the stage runs the op whole. Status; *data is t's element 0. */
extern PDI_TLS int pdi_global_infer;
int pdi_host_validate(const struct pd_tensor *t, const char *what, const void **data);
/* The write side: the one function through which host bytes enter a tensor
 * outside an op (host bytes cannot be an op's attribute). Copies
 * numel * dtype-size bytes from src into t (contiguous; any offset), bumps
 * its storage version like an op's written input, then reports
 * PDI_HOST_WRITE | PDI_HOST_COPY_IN to the host observers with the call
 * site, so they see the new bytes. Status; a meta tensor is refused. Every
 * tensor whose bytes change is written by a dispatched op or by this
 * function (pd_tensor_data's pointer is the user's escape hatch). */
int pdi_host_write(struct pd_tensor *t, const void *src, const char *what);
/* A new tensor (refcount 1, in no scope) made by the `empty` op under the
 * eager executor (so it has data under any executor) and filled by
 * pdi_host_write: how host data enters the library (pd_from_buffer adds
 * it to the scope). `what` names the caller in errors and events. */
struct pd_tensor *pdi_from_host(const void *data, const int64_t *shape, int ndim, enum pd_dtype dt, const char *what);
/* pd_empty made by the eager executor whatever the thread's (a meta one
 * makes no bytes): a tensor in the current scope that host code or MPI
 * fills (pdi_from_host's, the data-parallel buckets). */
struct pd_tensor *pdi_empty_eager(const int64_t *shape, int ndim, enum pd_dtype dt);
static inline const void *pdi_host_read(const struct pd_tensor *t, const char *what)
{
    return pdi_host_access(t, PDI_HOST_READ, what);
}
/* The value of a one-element tensor read on the host (a library's own
 * data-dependent decision: the clipping norm, the scaler's found_inf),
 * through pdi_host_access: status, PD_ERR_INVALID for a meta tensor, where
 * pd_item's NaN could not be told from a NaN value. */
int pdi_host_scalar(const struct pd_tensor *t, const char *what, double *out);
/* Its first element (any number of them but none; pd_item): the one host
 * read both make, a distributed tensor's whole value gathered first (a
 * collective). */
int pdi_host_first(const struct pd_tensor *t, const char *what, double *out);
/* site: a raw return address (pdi_site_str resolves it) or NULL. Install
 * before running ops: the list is not guarded against concurrent reads. */
typedef void (*pdi_host_observer_fn)(const struct pd_tensor *t, unsigned access, const char *what, void *site,
                                     void *ctx);
int pdi_host_observer_add(pdi_host_observer_fn fn, void *ctx);
void pdi_host_observer_remove(pdi_host_observer_fn fn, void *ctx);

/* ---- the op table ---------------------------------------------------- */
struct pdi_meta {
    enum pd_dtype dtype;
    int ndim;
    int64_t shape[PD_MAX_DIMS];
    /* view ops only: */
    int64_t strides[PD_MAX_DIMS];
    int64_t offset;
};

struct pdi_call {
    enum pd_op op;
    int n_in, n_out;
    struct pd_tensor *const *in;
    struct pd_tensor **out;       /* filled by the dispatcher */
    struct pdi_attrs a;
    struct pdi_meta *meta;        /* n_out entries, filled by infer */
    int inplace;                  /* write into in[0] (out[0] = in[0]) */
    /* The written set: the op writes in[0..n_writes) in place (an op whose
     * row has PDI_F_INPLACE orders its inputs so that those it writes come
     * first). Set by the op's infer function; the dispatcher resets it
     * before infer, makes it at least 1 for an .inplace call, and bumps the
     * storage version of every written input once the kernel ran. Observers
     * (before and after) read it here. */
    int n_writes;
    int before_seen;              /* the `before` observers ran (set by the dispatcher) */
    /* debug identity, set by the dispatcher: "<dbg_scope>/<op>_<dbg_n>"
     * (pdi_call_name); dbg_site: the user's return address (call-site
     * capture on) or NULL (pdi_call_site). */
    const char *dbg_scope;
    uint32_t dbg_n;
    void *dbg_site;
};

static inline int pdi_call_has_dist(const struct pdi_call *c)
{
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i]->dist) return 1;
    return 0;
}

struct pdi_node;
typedef int (*pdi_infer_fn)(struct pdi_call *c);
/* SPMD rule (docs/design.md §6; src/dist/spmd.c runs it, the rules are in
 * src/dist/spmd_rules.c). g is the call on global metas: g->in are
 * storage-less tensors of the inputs' global shapes, g->meta the outputs'
 * global metas, g->a the attributes. On entry s->in holds the inputs'
 * placements (a plain input: Replicate); the rule writes the placements
 * each input must have (the stage reshards those that differ), the
 * outputs' placements, and s->a, the attributes of the local call (a copy
 * of g->a; rules rewrite attributes that hold global extents). A rule may
 * set s->decompose instead: the stage then runs the op's decomposition on
 * the distributed inputs. Returns status. PDI_SPMD_BY_KIND
 * (pdi_spmd_by_kind) is the generic rule of the op's kind. */
#define PDI_SPMD_MAX_OUT 4
struct pdi_spmd {
    const struct pd_mesh *mesh;
    int mdim, n_in, n_out;
    struct pd_placement (*in)[PD_MAX_MESH_DIMS]; /* n_in rows */
    struct pd_placement out[PDI_SPMD_MAX_OUT][PD_MAX_MESH_DIMS];
    struct pdi_attrs a;
    int decompose;
    /* Optional. decomp: with decompose, run this instead of the op's own
     * decomposition. local: run the local call with this instead of the
     * dispatcher (l holds the local pieces and s->a; fill l->out with new
     * tensors of the current scope), reading local_arg, the rule's
     * per-rank values (a vocabulary-parallel lookup: the piece's start),
     * and g, the global call the stage set (its inputs' global shapes). */
    int (*decomp)(const struct pdi_call *c, struct pd_tensor **out);
    int (*local)(struct pdi_call *l, const struct pdi_spmd *s);
    int64_t local_arg[2];
    const struct pdi_call *g;
};
typedef int (*pdi_spmd_fn)(const struct pdi_call *g, struct pdi_spmd *s);
#define PDI_SPMD_BY_KIND pdi_spmd_by_kind
/* Decomposition of a composite op: fill out[0..c->n_out-1] with new tensors
 * computed from c->in and c->a by primitive public ops (so through the
 * dispatcher, differentiable). Returns status. PDI_NO_DECOMP
 * (pdi_decomp_absent) marks a primitive: see pdi_op_has_decomp. */
typedef int (*pdi_decomp_fn)(const struct pdi_call *c, struct pd_tensor **out);
#define PDI_NO_DECOMP pdi_decomp_absent
/* gout[n_out] are never NULL (zeros are filled in); write gin[i] for each
 * input with pdi_node_needs(n, i) (leave NULL otherwise). Returns status. */
typedef int (*pdi_vjp_fn)(struct pdi_node *n, struct pd_tensor *const *gout, struct pd_tensor **gin);

struct pdi_opdef {
    const char *name;
    enum pdi_kind kind;
    int n_in, n_out;
    unsigned flags;
    enum pdi_attrset attrs;
    int amp;            /* enum pd_autocast_policy */
    unsigned dtypes;    /* mask of 1u << dtype */
    enum pdi_ident ident;
    pdi_infer_fn infer;
    pdi_vjp_fn vjp;
    pdi_spmd_fn spmd;
    pdi_decomp_fn decomp;
};
extern const struct pdi_opdef pdi_ops[PD_OP_COUNT];

/* ---- attribute descriptors (src/ops/attrs.c) -------------------------- */
/* The fields of op's attribute set, in declaration order (n may be 0). */
const struct pdi_attr_desc *pdi_op_attrs(enum pd_op op, int *n);
/* The op whose name is name, or -1. */
int pdi_op_lookup(const char *name);
/* Every field of op's set to its default. */
void pdi_attrs_default(enum pd_op op, struct pdi_attrs *a);
/* Type and range checks (PD_A's range column; an axis only against
 * PD_MAX_DIMS); status. */
int pdi_attrs_validate(enum pd_op op, const struct pdi_attrs *a);
/* The same against the call's inputs (axes of input 0): the dispatcher runs
 * it before infer for every op that has attributes. */
int pdi_attrs_check(const struct pdi_call *c);
/* "rms_norm(n_norm_axes=1, eps=1e-06)" into buf; returns buf. */
const char *pdi_attrs_format(enum pd_op op, const struct pdi_attrs *a, char *buf, size_t n);
/* JSON object of op's attributes (cJSON *, owned by the caller) and back:
 * missing keys take their default, unknown keys and wrong types are errors. */
void *pdi_attrs_to_json(enum pd_op op, const struct pdi_attrs *a);
int pdi_attrs_from_json(enum pd_op op, const void *json, struct pdi_attrs *a);

/* Declarations of every infer and vjp function named in ops.def. */
#define PD_OP(name, kind, n_in, n_out, flags, attrs, amp, dtypes, ident, infer, vjp, spmd, decomp) \
    int infer(struct pdi_call *); \
    int vjp(struct pdi_node *, struct pd_tensor *const *, struct pd_tensor **); \
    int spmd(const struct pdi_call *, struct pdi_spmd *); \
    int decomp(const struct pdi_call *, struct pd_tensor **);
#include "ops/ops.def"
#undef PD_OP
static inline int pdi_op_has_decomp(enum pd_op op) { return pdi_ops[op].decomp != PDI_NO_DECOMP; }

/* ---- kernel selection (src/core/backend.c) ---------------------------- */
/* Rows 0..PDI_BACKEND_MAX-1: each backend's kernels as run when it is
 * forced (its fallback's filling its gaps); row PDI_KERNEL_ROW_AUTO: the
 * kernel of the highest-priority backend that has one. Each entry names
 * the backend that runs the call (the row's own id in a forced row). The
 * dispatcher reads one entry per call; the tables are hidden (no GOT load
 * in the shared library). */
#define PDI_KERNEL_ROW_AUTO PDI_BACKEND_MAX
struct pdi_kentry {
    pdi_kernel_fn fn;
    int backend;
};
PDI_HIDDEN extern struct pdi_kentry pdi_kernel_table[PDI_BACKEND_MAX + 1][PD_OP_COUNT][PD_DTYPE_COUNT];
PDI_HIDDEN extern const struct pd_allocator *pdi_backend_allocs[PDI_BACKEND_MAX]; /* NULL: the default */
PDI_HIDDEN extern PDI_TLS int pdi_kernel_row; /* the forced backend, or PDI_KERNEL_ROW_AUTO */

/* The kernel a call of op keyed by dt runs on this thread (fn NULL: none,
 * see pdi_kernel_missing) and the backend that runs it. */
static inline const struct pdi_kentry *pdi_kernel_find(enum pd_op op, enum pd_dtype dt)
{
    return &pdi_kernel_table[pdi_kernel_row][op][dt];
}
/* The allocator of the calls `backend` runs (never NULL). */
static inline const struct pd_allocator *pdi_backend_allocator(int backend)
{
    const struct pd_allocator *a = pdi_backend_allocs[backend];
    return a ? a : pdi_allocator_default();
}
/* Sets the error for a pdi_kernel_find that found nothing; returns status. */
int pdi_kernel_missing(enum pd_op op, enum pd_dtype dt);

/* ---- the dispatcher -------------------------------------------------- */
/* Runs every stage; on success call->out[0..n_out-1] are new tensors in the
 * current scope. Returns status. */
int pdi_dispatch(struct pdi_call *c);
/* Convenience wrappers for the common shapes of call. */
struct pd_tensor *pdi_call1(enum pd_op op, struct pd_tensor *x, const struct pdi_attrs *a);
struct pd_tensor *pdi_call2(enum pd_op op, struct pd_tensor *x, struct pd_tensor *y, const struct pdi_attrs *a);
struct pd_tensor *pdi_calln(enum pd_op op, struct pd_tensor *const *in, int n_in, const struct pdi_attrs *a);

/* ---- modes: per-thread state that changes what an op does ------------ */
/* Grad mode, autocast and the executor are modes. Each begin pushes an entry
 * on the thread's mode stack and returns a token (> 0; a negative status on
 * failure); the end takes the token, checks that its entry is the innermost
 * one, and only then pops it and restores what the begin replaced. A wrong
 * token is an error that pops nothing. Nothing here is process-wide: one
 * thread's modes never change another thread's ops. The current values are
 * cached in pdi_modes, which the dispatcher reads on every op. */
enum pdi_mode_kind { PDI_MODE_GRAD, PDI_MODE_AUTOCAST, PDI_MODE_EXECUTOR, PDI_MODE_COUNT };
struct pdi_executor;
struct pdi_modes {
    const struct pdi_executor *exec; /* NULL: the eager executor */
    void *exec_ctx;
    int autocast;                    /* enum pd_dtype, or -1: off */
    int grad_off;                    /* grad mode disabled */
};
extern PDI_TLS struct pdi_modes pdi_modes;
/* Push a mode: kind GRAD (value: grad enabled 0/1), AUTOCAST (value: dtype
 * or -1 for off), EXECUTOR (ex, ctx; use pdi_executor_begin). Returns the
 * token or a negative status. */
int pdi_mode_begin(enum pdi_mode_kind kind, int value, const struct pdi_executor *ex, void *ctx);
/* Pop the innermost mode if token is it and of that kind; `who` names the
 * caller in the error ("pd_autocast_end"). Returns status. */
int pdi_mode_end(enum pdi_mode_kind kind, int token, const char *who);
int pdi_mode_depth(void); /* entries on this thread's stack */
static inline int pdi_grad_enabled(void) { return !pdi_modes.grad_off; }

/* ---- executors: stage 4 of the dispatcher ----------------------------- */
/* An executor makes the outputs of a call whose metas are inferred (stage
 * 1) and whose inputs are final (after autocast): the eager executor (the
 * default) allocates them and runs the kernel; the meta executor
 * (ops/exec_meta.c) makes storage-less tensors; a trace or SPMD executor
 * plugs in the same way. Contract of run:
 *   - fill c->out[0..n_out-1] with new tensors (refcount 1, not in a scope;
 *     out[0] = in[0] for an in-place call) or return a status having
 *     released what it made;
 *   - never record autograd nor call observers: the dispatcher does both
 *     for the user's call afterwards, whichever executor ran it (observers'
 *     `before` callbacks run after a plugged executor's run returns, or
 *     inside it if it delegated the call to pdi_exec_eager.run);
 *   - it may dispatch other calls (e.g. the local ops of a sharded call),
 *     switching modes around them with tokens.
 * The struct is versioned as sqlite's VFS: slots after `run` are optional
 * (NULL), and later versions only append slots. */
#define PDI_EXECUTOR_ABI 1
struct pdi_executor {
    int abi_version;   /* PDI_EXECUTOR_ABI when the struct was compiled */
    const char *name;  /* "eager", "meta", ... */
    int (*run)(struct pdi_call *c, void *ctx);
    /* optional: called when the executor's mode begins / ends (ctx is the
     * one given to pdi_executor_begin); a failing begin fails the mode. */
    int (*on_begin)(void *ctx);
    void (*on_end)(void *ctx);
};
extern const struct pdi_executor pdi_exec_eager;
/* Make ex the thread's executor until pdi_executor_end(token). */
int pdi_executor_begin(const struct pdi_executor *ex, void *ctx);
int pdi_executor_end(int token);
/* The thread's executor (never NULL) and its ctx (may be NULL). */
const struct pdi_executor *pdi_executor_current(void **ctx);

/* Stage 2: autocast (src/amp/autocast.c), run while pdi_modes.autocast is a
 * dtype. It may rewrite the call: cast inputs and dispatch the op again on
 * them (autocast off for that nested call). Returns 1 if it handled the call
 * (outputs set, recorded and observed by the nested dispatch), 0 to
 * continue, negative on error. Stage 3 (distribute) arrives with the SPMD
 * executor. */
int pdi_autocast_stage(struct pdi_call *c);
/* Stage 6 observers: called after every op with its outputs. */
typedef void (*pdi_observer_fn)(const struct pdi_call *c, uint64_t seq, void *ctx);
int pdi_observer_add(pdi_observer_fn fn, void *ctx);
void pdi_observer_remove(pdi_observer_fn fn, void *ctx);
/* before: called after infer-meta and output allocation, before the kernel
 * runs (outputs allocated, not computed; inputs are the final ones, after
 * autocast); after: as pdi_observer_add. Either may be NULL. Remove with
 * pdi_observer_remove_ex(before, after, ctx). Not thread-safe against
 * concurrent dispatch: install observers before running ops. */
int pdi_observer_add_ex(pdi_observer_fn before, pdi_observer_fn after, void *ctx);
void pdi_observer_remove_ex(pdi_observer_fn before, pdi_observer_fn after, void *ctx);

/* ---- debug identity (src/debug/names.c, callsite.c) ------------------- */
/* "model.layers.3.mlp/matmul_12" (thread-local buffer, valid until the
 * fourth next call on this thread; copy it to keep it). */
const char *pdi_call_name(const struct pdi_call *c);
/* "<call name>.out<j>" into buf. */
const char *pdi_call_out_name(const struct pdi_call *c, int j, char *buf, size_t n);
/* "train_llama.c:87 (main)" when call-site capture was on for c, else NULL
 * (interned: valid for the life of the process). */
const char *pdi_call_site(const struct pdi_call *c);
/* The GradNode whose VJP this thread is running, NULL outside backward. */
const char *pdi_backward_node_name(void);
const struct pdi_node *pdi_backward_node(void);
/* Steps the backward engine spent finding and flushing leaves, summed over
 * every run since start (tests/test_backward_leaves.c: linear in the
 * leaves and nodes). */
int64_t pdi_backward_leaf_work(void);
/* Resolve a raw return address (as stored in dbg_site) to "file:line (fn)";
 * NULL if unknown. Interned, cached by address. */
const char *pdi_site_str(void *addr);
/* Interned copy of s (never freed; for scope names and user tensor names). */
const char *pdi_intern(const char *s);
/* Assigns c->dbg_n / dbg_scope (counter per op type and thread). */
void pdi_name_call(struct pdi_call *c);
/* Name string of tensor t into buf ("" when unnamed). */
const char *pdi_tensor_name_buf(const struct pd_tensor *t, char *buf, size_t n);
#define PDI_NAME_BUF 192
/* Capture the first return address outside this library. */
void *pdi_capture_site(void);

/* Bits of pdi_debug_flags: any set means the dispatcher takes its slow
 * debug path (one predictable branch when all are off). */
#define PDI_DBG_CALLSITE 1u
#define PDI_DBG_ANOMALY 2u
#define PDI_DBG_LOG 4u
#define PDI_DBG_GRAPH 8u
extern unsigned pdi_debug_flags;
/* Live-tensor tracking (src/debug/leaks.c): while pdi_live_tracking, each
 * new handle is listed with its call site, until released. */
extern int pdi_live_tracking;
void pdi_live_add(struct pd_tensor *t);
void pdi_live_remove(struct pd_tensor *t);
void pdi_debug_flag_set(unsigned bit, int on);
/* Anomaly mode: 0 if every float output of c is finite, else sets the
 * error (op name, inputs' stats, call site) and returns PD_ERR_STATE. */
int pdi_anomaly_check(const struct pdi_call *c);
/* Graph capture: record one finished forward call. */
void pdi_graph_record(const struct pdi_call *c);

/* ---- logging (src/debug/log.c) ---------------------------------------- */
/* Library code logs only through pdi_log. Levels: 3 which op/node runs,
 * 4 inputs and outputs, 5 metadata, 6 full detail. */
struct pdi_log_guards; /* interned snapshot of the active guard stack */
int pdi_log_enabled(const char *module, int level);
void pdi_log(const char *module, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const struct pdi_log_guards *pdi_log_guards_current(void);
/* Make g the active guard set (backward runs a node under the guards that
 * were active when it was created); returns the previous one. */
const struct pdi_log_guards *pdi_log_guards_swap(const struct pdi_log_guards *g);

/* Append " <text>" to the thread's error message (context for an error set
 * deeper down, e.g. the forward call site of a failing GradNode). */
void pdi_error_append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prefix the thread's error message with "<prefix>: " unless it already
 * starts with it. */
void pdi_error_prefix(const char *prefix);
uint64_t pdi_op_seq(void); /* ops dispatched so far on this thread */

/* Infer helpers shared by op families. */
int pdi_broadcast_shapes(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out, int *nout);
int pdi_infer_same(struct pdi_call *c);      /* out = in[0]'s meta */
int pdi_infer_broadcast(struct pdi_call *c); /* out = broadcast of inputs, dtype of in[0] */
void pdi_meta_of(const struct pd_tensor *t, struct pdi_meta *m);
/* A reduction's axes (c->a.reduce.axes, empty = all) into a mask; validates. */
int pdi_axes_mask(const struct pdi_call *c, const struct pd_tensor *x, unsigned *mask);

/* ---- autograd internals ---------------------------------------------- */
struct pdi_edge {
    struct pdi_node *fn;     /* producer node (strong ref), or NULL */
    int nr;                  /* which output of fn */
    struct pd_tensor *leaf;  /* leaf requiring grad (strong ref), or NULL */
};

struct pdi_node {
    int refcount;
    enum pd_op op;
    uint64_t seq;             /* creation order: later nodes run first */
    struct pdi_attrs a;
    int n_in, n_out;
    struct pdi_edge *edges;   /* n_in */
    struct pd_tensor **saved_in;   /* n_in, refs (or NULL) */
    uint64_t *saved_ver;           /* storage versions at save time */
    struct pd_tensor **saved_out;  /* n_out detached aliases (or NULL) */
    struct pdi_meta *in_meta;      /* n_in */
    struct pdi_meta *out_meta;     /* n_out */
    struct pdi_hook **out_hooks;   /* n_out lists */
    unsigned char *retain_out;     /* n_out: keep grad on the output tensor */
    struct pd_tensor **retained;   /* n_out weak pointers (for retain_grad) */
    int released;                  /* saved tensors freed after backward */
    int idx;                       /* engine scratch: position in this run */
    uint64_t epoch;                /* engine scratch: which run set idx */
    char name[128];                /* lazy: read it through pdi_node_name */
    void *site;                    /* forward call site (raw address) or NULL */
    const struct pdi_log_guards *log_guards; /* guards active at creation */
    const char *dbg_scope;         /* forward call's scope and counter */
    uint32_t dbg_n;
    void *dist;                    /* a distributed op: an output's dist (its mesh) */
};
void pdi_node_retain(struct pdi_node *n);
void pdi_node_release(struct pdi_node *n);
/* Does input i need a gradient? */
int pdi_node_needs(const struct pdi_node *n, int i);
/* Saved input i (borrowed; NULL with an error if the graph was freed or the
 * tensor modified in place since). */
struct pd_tensor *pdi_node_in(struct pdi_node *n, int i);
/* Output j re-attached to this node, so that differentiating through the
 * VJP sees the forward op (new tensor in the current scope). */
struct pd_tensor *pdi_node_out(struct pdi_node *n, int j);
/* The profiler's clock, and a collective for it (src/debug/profiler.c):
 * in flight over [t0, t1) on the trace's communication track, or, with
 * exposed, a wait on the calling thread (a no-op while it is off). */
int64_t pdi_now_ns(void);
void pdi_profiler_comm(const char *name, int64_t t0, int64_t t1, double bytes, int exposed);
/* Remove the hook (fn, ctx) from t's list (a leaf's or a node output's);
 * status (PD_ERR_INVALID if absent). */
int pdi_tensor_remove_hook(struct pd_tensor *t, pd_grad_hook_fn fn, void *ctx);
/* Give a finished call's outputs its debug name (the dispatcher's stage 6;
 * the distribute stage's outputs too). */
void pdi_name_outputs(struct pdi_call *c);
/* Record a node for a finished call (called by the dispatcher). */
int pdi_autograd_record(struct pdi_call *c);
/* "<scope>/<op>_<n>.grad": the forward call's name (built on first use:
 * formatting it for every node cost ~5% of a small backward). */
const char *pdi_node_name(const struct pdi_node *n);

#endif
