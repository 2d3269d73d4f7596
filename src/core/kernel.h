/* paddle.c — what a kernel may see: errors, views, attributes, the op
 * enum and flags, kernel registration, element helpers, threads and the
 * allocator. Kernels (src/kernels/) include this header only; they cannot
 * see tensors, GradNodes, the dispatcher or the debug tools, which live in
 * core/internal.h (tests/check_tree.sh checks the include graph).
 *
 * Not installed. Everything here is prefixed pdi_ and may change without
 * notice.
 */
#ifndef PD_CORE_KERNEL_H
#define PD_CORE_KERNEL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "pd/pd.h"

#define PDI_UNUSED(x) ((void)(x))
/* Thread-local state read on every op (grad mode, scopes, free lists): the
 * initial-exec model avoids a __tls_get_addr call per access (5% of a tiny
 * op's dispatch). The few bytes it uses fit glibc's static TLS reserve even
 * when the library is dlopen'ed. */
#define PDI_TLS _Thread_local __attribute__((tls_model("initial-exec")))
/* Library-internal data read on every op: not exported, so the shared
 * library reaches it without a GOT load. */
#define PDI_HIDDEN __attribute__((visibility("hidden")))

/* ---- errors ---------------------------------------------------------- */
/* Set the thread's error and return NULL / the status. */
void *pdi_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pdi_errorf(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The one way to turn a result into a status: PD_OK when result is not
 * NULL, else the thread's status; a NULL with no error set is a bug of the
 * callee, reported as PD_ERR_STATE with a message naming `what`. */
int pdi_status_of(const void *result, const char *what);
/* A NULL tensor given to an entry point that is not an op (pd_to_buffer,
 * pd_item, the init functions, ...): PD_ERR_NULL, keeping the message of
 * the failed call that produced the NULL, as the dispatcher does; only when
 * the thread has no error yet, the message "<what>: NULL tensor". */
int pdi_null_tensor(const char *what);
/* "[2, 3, 4]" into buf (for messages). */
const char *pdi_shape_str(const int64_t *shape, int ndim, char *buf, size_t n);
#define PDI_SHAPE_BUF 96

/* ---- shapes ----------------------------------------------------------- */
/* Checked int64 arithmetic and the element limit (pdi_shape_numel). */
#include "core/checked.h"
void pdi_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides);
int64_t pdi_numel(const int64_t *shape, int ndim);
int pdi_norm_axis(int axis, int ndim); /* -1 when out of range */
/* The same for an int64 attribute, range-checked before it is narrowed
 * (a plain (int) cast would turn 2^32 into axis 0). */
static inline int pdi_norm_axis64(int64_t axis, int ndim)
{
    int n = ndim ? ndim : 1;
    return axis < -n || axis >= n ? -1 : pdi_norm_axis((int)axis, ndim);
}

/* ---- views passed to kernels ----------------------------------------- */
struct pd_kview {
    char *data; /* element 0 (offset applied) */
    enum pd_dtype dtype;
    int ndim;
    int64_t shape[PD_MAX_DIMS];
    int64_t strides[PD_MAX_DIMS]; /* elements */
};
int pdi_kview_contiguous(const struct pd_kview *v);
int64_t pdi_kview_numel(const struct pd_kview *v);

/* Element access as double (any dtype) — for reference kernels and tools. */
double pdi_load(const void *p, enum pd_dtype dt);
void pdi_store(void *p, enum pd_dtype dt, double v);
/* Pointer of the element at linear (row-major) index i of the view. */
char *pdi_kview_ptr(const struct pd_kview *v, int64_t i);
/* Convert n contiguous elements. */
void pdi_convert(const void *src, enum pd_dtype sdt, void *dst, enum pd_dtype ddt, int64_t n);

/* Strided N-d walk shared by kernels: coalesces dims that are contiguous in
 * every operand, then calls fn on runs along the innermost dim. */
#define PDI_ITER_MAX 8
typedef void (*pdi_iter_fn)(char **ptrs, const int64_t *inner_strides_bytes, int64_t n, void *ctx);
/* Operands must all have the given shape (broadcast ones with stride 0).
 * Splits the outer index space over OpenMP threads when numel is large. */
void pdi_iter(int n_ops, struct pd_kview *const *ops, const int64_t *shape, int ndim, pdi_iter_fn fn, void *ctx);

/* ---- attributes ------------------------------------------------------ */
/* Typed per-op attribute sets generated from the op table (core/attrs.h). */
#include "core/attrs.h"


/* ---- ops, flags and dtype classes ------------------------------------ */
enum pdi_kind {
    PDI_KIND_ELEMENTWISE = 0, /* one input, same shape out */
    PDI_KIND_BROADCAST = 1,   /* inputs broadcast to the out shape */
    PDI_KIND_INJECTIVE = 2,   /* index/shape movement */
    PDI_KIND_REDUCE = 3,
    PDI_KIND_OPAQUE = 4,      /* matmul, conv, softmax ... */
    PDI_KIND_VIEW = 5,        /* output aliases input 0's storage */
    PDI_KIND_COUNT
};

enum pd_op {
#define PD_OP(name, kind, n_in, n_out, flags, attrs, amp, dtypes, ident, infer, vjp, spmd, decomp) PD_OP_##name,
#include "ops/ops.def"
#undef PD_OP
    PD_OP_COUNT
};

/* The ops of the unary and reduce families in table order (their rows of
 * ops_unary.def and ops_reduce.def), for kernels registered family-wide
 * (kernels/common.h: pdi_register_by_class). */
#define PD_ATTRS(set, fields)
#define PD_OP(name, kind, n_in, n_out, flags, attrs, amp, dtypes, ident, infer, vjp, spmd, decomp) PD_OP_##name,
static const enum pd_op pdi_unary_ops[] = {
#include "ops/ops_unary.def"
};
static const enum pd_op pdi_reduce_ops[] = {
#include "ops/ops_reduce.def"
};
#undef PD_OP
#undef PD_ATTRS

/* The op's name in the table ("matmul"). */
const char *pdi_op_name(enum pd_op op);
/* The op's dtype class (the table's dtypes column): mask of 1u << dtype. */
unsigned pdi_op_dtypes(enum pd_op op);

/* flags */
#define PDI_F_NONE 0u
#define PDI_F_NONDIFF 1u     /* no gradient (comparisons, argmax, ...) */
#define PDI_F_SAVE_OUT 2u    /* VJP reads outputs (saved without a cycle) */
#define PDI_F_NO_SAVE_IN 4u  /* VJP does not read input values (only metas) */
#define PDI_F_VARIADIC 8u    /* n_in / n_out given by the call */
#define PDI_F_KEY_IN1 16u    /* kernels keyed by input 1's dtype (input 0 is a cond/ids) */
#define PDI_F_CREATION 32u   /* makes a tensor from attributes alone (zeros, arange, ...) */
#define PDI_F_RANDOM 64u     /* draws from the Philox stream named by its attributes */
#define PDI_F_INPLACE 128u   /* writes into input tensors (copy_, fill_, optimizer updates) */
#define PDI_F_COMMUTATIVE 256u /* f(a, b) == f(b, a) */

/* Dtype classes (the op table's dtypes column): masks of 1u << dtype. */
#define PDI_DT_FLOATS ((1u << PD_F32) | (1u << PD_F64) | (1u << PD_F16) | (1u << PD_BF16))
#define PDI_DT_INTS ((1u << PD_I8) | (1u << PD_U8) | (1u << PD_I16) | (1u << PD_I32) | (1u << PD_I64))
#define PDI_DT_ALL (PDI_DT_FLOATS | PDI_DT_INTS | (1u << PD_BOOL))
#define PDI_DTC_DT_NONE 0u
#define PDI_DTC_DT_FLOAT PDI_DT_FLOATS
#define PDI_DTC_DT_INT PDI_DT_INTS
#define PDI_DTC_DT_NUMERIC (PDI_DT_FLOATS | PDI_DT_INTS)
#define PDI_DTC_DT_ALL PDI_DT_ALL

/* Identity element of a reduction or of a binary combine. */
enum pdi_ident { PDI_ID_NONE, PDI_ID_ZERO, PDI_ID_ONE, PDI_ID_NEG_INF, PDI_ID_POS_INF, PDI_ID_TRUE, PDI_ID_FALSE };

/* ---- kernels --------------------------------------------------------- */
struct pdi_kcall {
    enum pd_op op;
    int n_in, n_out;
    const struct pd_kview *in;
    const struct pd_kview *out;
    const struct pdi_attrs *a;
    /* Set by the dispatcher: the allocator that made the outputs, which
     * scratch comes from (pdi_kscratch), and the backend running the call.
     * A kcall built elsewhere may leave them 0: scratch then comes from the
     * process default. */
    const struct pd_allocator *alloc;
    int backend;
};
typedef int (*pdi_kernel_fn)(const struct pdi_kcall *k);

/* Kernel scratch (workspaces, packed panels, partial sums, masks): from the
 * call's allocator, so the memory statistics count it. 64-byte aligned;
 * NULL with the error set when out of memory. Free with the same k and
 * nbytes (any thread may allocate or free). Tiny fixed-size buffers stay on
 * the stack. */
void *pdi_kscratch(const struct pdi_kcall *k, size_t nbytes);
void *pdi_kscratch_zero(const struct pdi_kcall *k, size_t nbytes); /* zero-filled */
void pdi_kscratch_free(const struct pdi_kcall *k, void *p, size_t nbytes); /* NULL p: no-op */

/* ---- backends (src/core/backend.c) ------------------------------------ */
/* A backend is a versioned struct registered at run time (as sqlite's VFS
 * and ggml's backends): a name, a priority, an allocator and a function
 * that registers its kernels. Ids are small integers in registration order;
 * the built-in backends register first and always get these ids. */
enum pdi_backend { PDI_BACKEND_REF = 0, PDI_BACKEND_CPU = 1, PDI_BACKEND_COUNT /* built-ins */ };
#define PDI_BACKEND_MAX 8 /* backends at once, built-ins included */
#define PDI_BACKEND_ABI 1

struct pdi_backend_def;
/* Handed to register_kernels: the id to register under. */
struct pdi_backend_reg {
    int id;
    const struct pdi_backend_def *def;
};
struct pdi_backend_def {
    uint32_t abi_version; /* PDI_BACKEND_ABI when the struct was compiled */
    const char *name;     /* unique: "ref", "cpu", ... */
    /* Unforced calls run the kernel of the highest-priority backend that
     * has one for the (op, dtype) (ties: the earlier registered). */
    int priority;
    /* Outputs and scratch of the calls it runs; NULL: the process default
     * at the time of each allocation. */
    const struct pd_allocator *allocator;
    /* Required: registers the kernels (pdi_kernel_register*(r->id, ...),
     * pdi_kernel_reuse). Called once, from pdi_backend_register. */
    void (*register_kernels)(struct pdi_backend_reg *r);
    /* ---- optional (NULL) ---- */
    /* While it is forced, (op, dtype) it has no kernel for run this
     * registered backend's kernel (its memory must be readable by it);
     * NULL: such calls fail with a clear error. */
    const char *fallback;
    /* Wait for the work it queued (asynchronous devices); NULL: nothing to
     * wait for. */
    int (*synchronize)(void *ctx);
    void *ctx;
};
/* Registers def (which must outlive the process's use of it) and its
 * kernels; returns the new id, or a negative status (wrong abi_version, a
 * missing required slot, a duplicate name, an unknown fallback, too many
 * backends). Register before other threads dispatch ops: the kernel table
 * is read without a lock. */
int pdi_backend_register(const struct pdi_backend_def *def);
int pdi_backend_count(void);
const struct pdi_backend_def *pdi_backend_get(int id); /* NULL for an unknown id */
int pdi_backend_find(const char *name);                /* id, or -1 */
int pdi_backend_synchronize(int id);                   /* PD_OK when it has no slot */

/* dt is the dtype of input 0 (of output 0 for ops without inputs). Kernels
 * register under a backend id (PDI_BACKEND_CPU, or r->id). */
void pdi_kernel_register(int backend, enum pd_op op, enum pd_dtype dt, pdi_kernel_fn fn);
/* Register fn for every dtype in the mask (1u << dtype). */
void pdi_kernel_register_mask(int backend, enum pd_op op, unsigned dtype_mask, pdi_kernel_fn fn);
/* Give `backend` the kernels that `from` registered for op, for the dtypes
 * in the mask that `from` has (one line per op a backend borrows). */
void pdi_kernel_reuse(int backend, int from, enum pd_op op, unsigned dtype_mask);
/* The kernel `backend` itself registered (no fallback), or NULL. */
pdi_kernel_fn pdi_kernel_lookup(int backend, enum pd_op op, enum pd_dtype dt);
/* Registers the built-in backends; idempotent, thread-safe, one load and a
 * predicted branch once done (the dispatcher calls it per op). */
void pdi_kernels_init_once(void);
extern int pdi_kernels_ready; /* exported: tests call pdi_kernels_init too */
static inline void pdi_kernels_init(void)
{
    if (__builtin_expect(!__atomic_load_n(&pdi_kernels_ready, __ATOMIC_ACQUIRE), 0)) pdi_kernels_init_once();
}

/* Kernel families: each file defines pdi_register_<family>(void). Families
 * named ref_* belong to the reference backend, every other one to CPU.
 * The list lives in src/kernels/families.def. */
#define PDI_FAMILY(name) void pdi_register_##name(void);
#include "kernels/families.def"
#undef PDI_FAMILY

/* Force the backend used by the dispatcher on this thread (tests compare
 * REF and CPU). -1 restores the default choice by priority. Returns PD_OK,
 * or PD_ERR_INVALID for an unknown id (the choice is then unchanged). */
int pdi_force_backend(int backend);
int pdi_forced_backend(void); /* -1 when none */

/* ---- small element helpers shared by kernels ------------------------- */
/* Integer element as int64 (bool reads 0/1; other dtypes read 0). */
static inline int64_t pdi_load_int(const void *p, enum pd_dtype dt)
{
    switch (dt) {
    case PD_I8: return *(const int8_t *)p;
    case PD_U8: return *(const uint8_t *)p;
    case PD_I16: return *(const int16_t *)p;
    case PD_I32: return *(const int32_t *)p;
    case PD_I64: return *(const int64_t *)p;
    case PD_BOOL: return *(const uint8_t *)p != 0;
    default: return 0;
    }
}

/* Keeps the low bits (two's complement wrap, like C casts); bool is v != 0. */
static inline void pdi_store_int(void *p, enum pd_dtype dt, int64_t v)
{
    switch (dt) {
    case PD_I8: *(int8_t *)p = (int8_t)v; break;
    case PD_U8: *(uint8_t *)p = (uint8_t)v; break;
    case PD_I16: *(int16_t *)p = (int16_t)v; break;
    case PD_I32: *(int32_t *)p = (int32_t)v; break;
    case PD_I64: *(int64_t *)p = v; break;
    case PD_BOOL: *(uint8_t *)p = v != 0; break;
    default: break;
    }
}

/* bf16 <-> f32 inline (vectorises: shifts, adds, a blend); the same
 * rounding as pd_f32_to_bf16: nearest even, NaN stays a quiet NaN. */
static inline float pdi_bf16_f32(uint16_t h)
{
    union { uint32_t u; float f; } v = {(uint32_t)h << 16};
    return v.f;
}

static inline uint16_t pdi_f32_bf16(float f)
{
    union { float f; uint32_t u; } v = {f};
    uint16_t r = (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
    return (v.u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((v.u >> 16) | 0x40u) : r;
}

/* A reduction's axes (a->reduce.axes: every reduce set starts with them)
 * as a bit mask (no axes: every axis); assumes the axes were validated
 * (pdi_axes_mask). */
static inline unsigned pdi_attrs_axes_mask(const struct pdi_attrs *a, int ndim)
{
    const struct pdi_ints *l = &a->reduce.axes;
    if (l->n == 0) return ndim ? (1u << ndim) - 1 : 0;
    unsigned m = 0;
    for (int i = 0; i < l->n; i++) {
        int ax = pdi_norm_axis((int)l->v[i], ndim);
        if (ax >= 0 && ndim > 0) m |= 1u << ax;
    }
    return m;
}

/* ---- threads --------------------------------------------------------- */
int pdi_num_threads(void);
/* for (int64_t i = 0; i < n; i++) { body } over OpenMP threads when par.
 * Use this instead of `#pragma omp parallel for if (par)`: an if(false)
 * OpenMP region still costs a futex round trip in libgomp (it tripled the
 * cost of a 16-element add), so the serial case must not enter one. */
#define PDI_FOR(par, i, n, ...)                                                   \
    do {                                                                          \
        if (par) {                                                                \
            _Pragma("omp parallel for schedule(static) num_threads(pdi_num_threads())") \
            for (int64_t i = 0; i < (n); i++) { __VA_ARGS__ }                     \
        } else {                                                                  \
            for (int64_t i = 0; i < (n); i++) { __VA_ARGS__ }                     \
        }                                                                         \
    } while (0)
/* Grain: below this many elements, elementwise kernels stay on one thread. */
#define PDI_PAR_GRAIN 32768

/* ---- allocators (src/alloc/) ---------------------------------------- */
/* The caching allocator itself (pd_allocator_host): 64-byte aligned,
 * counted in pd_memory_stats. Kernels take scratch with pdi_kscratch. */
void *pdi_alloc(size_t nbytes);
void pdi_free(void *p, size_t nbytes);
/* The library's own structures are allocated through these (never plain
 * malloc): malloc/calloc/realloc/strdup/strndup that fail when
 * pd_fault_inject says so (src/alloc/fault.c). Free with free(). cJSON
 * allocates through pdi_malloc too (hooks installed at load). */
void *pdi_malloc(size_t n);
void *pdi_calloc(size_t n, size_t size);
void *pdi_realloc(void *p, size_t n);
char *pdi_strdup(const char *s);
char *pdi_strndup(const char *s, size_t max);
/* 1 when this allocation must fail (pd_fault_inject); every allocator asks. */
int pdi_fault_now(void);
PDI_HIDDEN extern const struct pd_allocator pdi_host_allocator;
PDI_HIDDEN extern const struct pd_allocator *pdi_default_alloc; /* never NULL */
static inline const struct pd_allocator *pdi_allocator_default(void)
{
    return __atomic_load_n(&pdi_default_alloc, __ATOMIC_ACQUIRE);
}
/* PD_OK, or PD_ERR_INVALID / PD_ERR_NULL naming `who` (wrong abi_version,
 * a missing required slot). */
int pdi_allocator_check(const struct pd_allocator *a, const char *who);
/* a->alloc, with the error set (naming a) when it returns NULL; and
 * a->free. The host allocator is called directly (no indirect call on the
 * path of every op's outputs). */
void *pdi_allocator_alloc_plugged(const struct pd_allocator *a, size_t nbytes);
static inline void *pdi_allocator_alloc(const struct pd_allocator *a, size_t nbytes)
{
    return a == &pdi_host_allocator ? pdi_alloc(nbytes) : pdi_allocator_alloc_plugged(a, nbytes);
}
static inline void pdi_allocator_free(const struct pd_allocator *a, void *p, size_t nbytes)
{
    if (a == &pdi_host_allocator) pdi_free(p, nbytes);
    else if (p) a->free(a->ctx, p, nbytes);
}

#endif
