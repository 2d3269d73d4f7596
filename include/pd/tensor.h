/* paddle.c — tensors: dtypes, creation, views, lifetime, errors.
 *
 * A tensor is a refcounted handle to a view (dtype, shape, element strides,
 * offset) over a refcounted storage. Every tensor a function returns is also
 * owned by the innermost scope (pd_scope_begin/end) if one is open: at
 * pd_scope_end the scope drops its reference, so a training step needs no
 * per-tensor frees. pd_keep() moves a tensor out to the enclosing scope (or,
 * outside all scopes, hands it to the caller, who releases it).
 *
 * Errors: functions return NULL (or a negative status) and leave a message in
 * a thread-local buffer read by pd_last_error(). Every op given a NULL input
 * returns NULL, so a caller may check once at the end of a chain.
 */
#ifndef PD_TENSOR_H
#define PD_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PD_MAX_DIMS 8

/* Values reach disk (checkpoints): append only. */
enum pd_dtype {
    PD_F32 = 0,
    PD_F64 = 1,
    PD_F16 = 2,
    PD_BF16 = 3,
    PD_I8 = 4,
    PD_U8 = 5,
    PD_I16 = 6,
    PD_I32 = 7,
    PD_I64 = 8,
    PD_BOOL = 9,
    PD_DTYPE_COUNT
};

/* Status codes (sqlite style: 0 is success, negative is failure). */
enum pd_status {
    PD_OK = 0,
    PD_ERR_INVALID = -1,   /* bad argument: shape, dtype, attribute */
    PD_ERR_NOMEM = -2,
    PD_ERR_UNSUPPORTED = -3,
    PD_ERR_STATE = -4,     /* e.g. backward through a freed graph */
    PD_ERR_IO = -5,
    PD_ERR_NULL = -6,      /* a NULL input propagated */
    PD_STATUS_COUNT = 7
};

struct pd_tensor;

/* ---- dtypes ---------------------------------------------------------- */
const char *pd_dtype_name(enum pd_dtype dt);
size_t pd_dtype_size(enum pd_dtype dt);
int pd_dtype_is_float(enum pd_dtype dt);
/* Result dtype of a binary op (PyTorch-like promotion: float beats integer,
 * the wider wins, bf16 with f16 gives f32, bool is the weakest). */
enum pd_dtype pd_promote_types(enum pd_dtype a, enum pd_dtype b);

/* Exact round-to-nearest-even conversions; NaN stays NaN. */
uint16_t pd_f32_to_bf16(float x);
float pd_bf16_to_f32(uint16_t x);
uint16_t pd_f32_to_f16(float x);
float pd_f16_to_f32(uint16_t x);
uint16_t pd_f64_to_f16(double x);   /* rounded once, not through f32 */
uint16_t pd_f64_to_bf16(double x);

/* ---- errors ---------------------------------------------------------- */
/* The rule: pd_last_error()/pd_last_status() describe the most recent
 * failure on this thread, and are valid right after a call that failed
 * (returned NULL or a negative status) until the next call that fails.
 * Successful calls do not clear them: a message read after a success may be
 * an old one, so read it only when a call failed (or pd_clear_error() first).
 * An op given a NULL input fails with PD_ERR_NULL and keeps the message of
 * the call that produced the NULL. */
const char *pd_last_error(void);
int pd_last_status(void);
void pd_clear_error(void);

/* ---- lifetime -------------------------------------------------------- */
void pd_tensor_retain(struct pd_tensor *t);
void pd_tensor_release(struct pd_tensor *t);   /* NULL is a no-op */
/* int tok = pd_scope_begin(); ... pd_scope_end(tok);
 * begin returns a token (> 0), or a negative status when it fails (then no
 * scope was opened). end releases what the scope owns; it fails, releasing
 * nothing and leaving every scope open, unless tok names the innermost open
 * scope of this thread. */
int pd_scope_begin(void);
int pd_scope_end(int token);
int pd_scope_depth(void);
/* Move t out of the innermost scope into the enclosing one (or to the
 * caller when no scope encloses it). Returns t. */
struct pd_tensor *pd_keep(struct pd_tensor *t);
/* Number of live tensor handles (for leak tests). */
int64_t pd_live_tensors(void);

/* ---- metadata -------------------------------------------------------- */
int pd_tensor_ndim(const struct pd_tensor *t);
int64_t pd_tensor_dim(const struct pd_tensor *t, int axis); /* negative axes count from the end */
const int64_t *pd_tensor_shape(const struct pd_tensor *t);
const int64_t *pd_tensor_strides(const struct pd_tensor *t);
int64_t pd_tensor_offset(const struct pd_tensor *t);
int64_t pd_tensor_numel(const struct pd_tensor *t);
enum pd_dtype pd_tensor_dtype(const struct pd_tensor *t);
int pd_tensor_is_contiguous(const struct pd_tensor *t);
/* Do a and b share storage? */
int pd_tensor_shares_storage(const struct pd_tensor *a, const struct pd_tensor *b);
/* Pointer to element 0 of the view (host memory). */
void *pd_tensor_data(const struct pd_tensor *t);

/* ---- creation -------------------------------------------------------- */
struct pd_tensor *pd_empty(const int64_t *shape, int ndim, enum pd_dtype dt);
struct pd_tensor *pd_zeros(const int64_t *shape, int ndim, enum pd_dtype dt);
struct pd_tensor *pd_ones(const int64_t *shape, int ndim, enum pd_dtype dt);
struct pd_tensor *pd_full(const int64_t *shape, int ndim, double value, enum pd_dtype dt);
struct pd_tensor *pd_scalar(double value, enum pd_dtype dt); /* 0-d */
struct pd_tensor *pd_arange(double start, double stop, double step, enum pd_dtype dt);
struct pd_tensor *pd_linspace(double start, double stop, int64_t num, enum pd_dtype dt);
struct pd_tensor *pd_eye(int64_t n, int64_t m, enum pd_dtype dt);
struct pd_tensor *pd_empty_like(const struct pd_tensor *t);
struct pd_tensor *pd_zeros_like(const struct pd_tensor *t);
struct pd_tensor *pd_ones_like(const struct pd_tensor *t);
struct pd_tensor *pd_full_like(const struct pd_tensor *t, double value);
/* Copies n = prod(shape) elements of dtype dt from data. */
struct pd_tensor *pd_from_buffer(const void *data, const int64_t *shape, int ndim, enum pd_dtype dt);
/* Copies the tensor (any strides) into buf as contiguous elements of dtype
 * dt (converted). buf must hold numel * pd_dtype_size(dt) bytes. */
int pd_to_buffer(const struct pd_tensor *t, void *buf, enum pd_dtype dt);
/* First element as a double (any dtype). */
double pd_item(const struct pd_tensor *t);
/* Element at a multi-index, as double (for tests and tools). */
double pd_get(const struct pd_tensor *t, const int64_t *index);

/* ---- random (Philox 4x32-10, counter-based) ------------------------- */
/* A generator is a (seed, offset) pair; each call consumes a counter range,
 * so results are the same whatever the thread count. */
struct pd_generator;
struct pd_generator *pd_generator_create(uint64_t seed);
void pd_generator_destroy(struct pd_generator *g);
void pd_generator_set_state(struct pd_generator *g, uint64_t seed, uint64_t offset);
void pd_generator_get_state(const struct pd_generator *g, uint64_t *seed, uint64_t *offset);
/* The default generator (thread-local, seeded with 0 until pd_manual_seed). */
struct pd_generator *pd_default_generator(void);
void pd_manual_seed(uint64_t seed);

/* g may be NULL for the default generator. */
struct pd_tensor *pd_rand(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_generator *g);
struct pd_tensor *pd_randn(const int64_t *shape, int ndim, enum pd_dtype dt, struct pd_generator *g);
struct pd_tensor *pd_uniform(const int64_t *shape, int ndim, double lo, double hi, enum pd_dtype dt,
                             struct pd_generator *g);
struct pd_tensor *pd_normal(const int64_t *shape, int ndim, double mean, double std, enum pd_dtype dt,
                            struct pd_generator *g);
/* Integers in [lo, hi). */
struct pd_tensor *pd_randint(const int64_t *shape, int ndim, int64_t lo, int64_t hi, enum pd_dtype dt,
                             struct pd_generator *g);
/* Each element is 1 with probability p[i] (p is a float tensor). */
struct pd_tensor *pd_bernoulli(const struct pd_tensor *p, struct pd_generator *g);
/* Fill raw 32-bit Philox words for (seed, counter) — the shared primitive. */
void pd_philox_fill(uint64_t seed, uint64_t offset, uint32_t *out, int64_t n);

/* ---- printing -------------------------------------------------------- */
/* Returns a malloc'd string (caller frees) like PyTorch's repr:
 * tensor([[1.0000, 2.0000, ..., 9.0000]], shape=[2, 10], dtype=f32). */
char *pd_tensor_to_string(const struct pd_tensor *t);
void pd_tensor_print(const struct pd_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
