/* paddle.c — CPU kernels for matmul (oneDNN), and the oneDNN plumbing shared
 * with cpu/conv.c: the engine, per-thread streams, a cache of primitives,
 * and strided pack/convert helpers.
 *
 * matmul, by dtype:
 *   f32   the hand-written AVX2 kernels of cpu/linalg_gemm.c (a GEMV for
 *         M <= 4, a packed GEMM for M >= 64, else dnnl_sgemm; on AVX-512
 *         CPUs the GEMV only; PD_GEMM selects, see gemm_choice; builds
 *         without AVX2 use dnnl_sgemm), on the operands'
 *         own memory: a matrix whose last two dims have a unit stride in
 *         either dim is used in place ('N' or 'T' with its leading
 *         dimension), so contiguous and transposed views are not copied;
 *         other layouts are packed once. Broadcast batch dims are a loop
 *         over offsets (stride 0); a batched a times a 2-d b folds the batch
 *         into M (one GEMM, the linear-layer case). Batches of small
 *         matrices, or that divide over the threads, run one single-threaded
 *         GEMM per OpenMP thread (faster here than the batched primitive).
 *   bf16  the oneDNN matmul primitive (bf16 in, f32 accumulation, bf16 out),
 *         cached by (shapes, strides); where the CPU has no bf16 support
 *         (oneDNN answers "unimplemented", e.g. AVX2 machines) the operands
 *         are widened to f32 and go through sgemm.
 *   f16   widened to f32, sgemm, rounded back.
 *   f64   a blocked C kernel (OpenMP over rows); for gradchecks.
 * Outputs are fresh contiguous tensors (the dispatcher allocates them), and
 * a beta = 0 GEMM never reads them, so they are not zero-filled (except for
 * K = 0, where there is nothing to multiply).
 *
 * Cache: entries are refcounted; the cache owns one reference and a caller
 * one while executing, so eviction never frees a primitive in use. Creation
 * happens under the cache mutex (rare); execution does not hold it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef __F16C__
#include <immintrin.h>
#endif

#include "kernels/cpu/linalg_dnnl.h"

/* ---- engine and streams ---------------------------------------------- */
static dnnl_engine_t engine;
static int engine_status = 1; /* 1: not tried */
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static pthread_key_t stream_key;

static void stream_free(void *s) { dnnl_stream_destroy((dnnl_stream_t)s); }

static void engine_init(void)
{
    engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success ? 0 : -1;
    if (engine_status == 0 && pthread_key_create(&stream_key, stream_free)) engine_status = -1;
}

dnnl_engine_t pdi_dnnl_engine(void)
{
    pthread_once(&engine_once, engine_init);
    return engine_status == 0 ? engine : NULL;
}

static dnnl_stream_t thread_stream(void)
{
    if (!pdi_dnnl_engine()) return NULL;
    dnnl_stream_t s = pthread_getspecific(stream_key);
    if (!s) {
        if (dnnl_stream_create(&s, engine, dnnl_stream_default_flags) != dnnl_success) return NULL;
        pthread_setspecific(stream_key, s);
    }
    return s;
}

/* ---- primitive cache ------------------------------------------------- */
#define CACHE_CAP 128
static struct pdi_dnnl_entry *cache[CACHE_CAP];
static uint64_t cache_clock;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

/* Everything an entry owns except the struct itself. */
static void entry_clear(struct pdi_dnnl_entry *e)
{
    for (int i = 0; i < PDI_DNNL_SLOTS; i++) {
        if (e->reorder[i]) dnnl_primitive_destroy(e->reorder[i]);
        if (e->reorder_pd[i]) dnnl_primitive_desc_destroy(e->reorder_pd[i]);
        e->reorder[i] = NULL;
        e->reorder_pd[i] = NULL;
    }
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->pd) dnnl_primitive_desc_destroy(e->pd);
    e->prim = NULL;
    e->pd = NULL;
}

static void entry_free(struct pdi_dnnl_entry *e)
{
    entry_clear(e);
    free(e);
}

static size_t scratch_of(const_dnnl_primitive_desc_t pd)
{
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return sp ? dnnl_memory_desc_get_size(sp) : 0;
}

dnnl_status_t pdi_dnnl_layout(struct pdi_dnnl_entry *e, int slot, const dnnl_memory_desc_t *user, dnnl_query_t what,
                              int output)
{
    const dnnl_memory_desc_t *chosen = dnnl_primitive_desc_query_md(e->pd, what, 0);
    if (!chosen) return dnnl_invalid_arguments;
    e->md[slot] = *user;
    e->imd[slot] = *chosen;
    if (dnnl_memory_desc_equal(user, chosen)) return dnnl_success;
    dnnl_primitive_attr_t attr = pdi_dnnl_user_scratchpad();
    dnnl_engine_t eng = pdi_dnnl_engine();
    dnnl_status_t st = output ? dnnl_reorder_primitive_desc_create(&e->reorder_pd[slot], chosen, eng, user, eng, attr)
                              : dnnl_reorder_primitive_desc_create(&e->reorder_pd[slot], user, eng, chosen, eng, attr);
    dnnl_primitive_attr_destroy(attr);
    if (st == dnnl_success) st = dnnl_primitive_create(&e->reorder[slot], e->reorder_pd[slot]);
    if (st == dnnl_success) e->reorder_scratch[slot] = scratch_of(e->reorder_pd[slot]);
    return st;
}

void pdi_dnnl_put(struct pdi_dnnl_entry *e)
{
    if (!e) return;
    pthread_mutex_lock(&cache_mu);
    int last = --e->refs == 0;
    pthread_mutex_unlock(&cache_mu);
    if (last) entry_free(e);
}

struct pdi_dnnl_entry *pdi_dnnl_get(const void *key, size_t klen, pdi_dnnl_build_fn build)
{
    if (klen > PDI_DNNL_KEY_MAX) return pdi_error(PD_ERR_INVALID, "oneDNN cache: key of %zu bytes is too long", klen);
    if (!pdi_dnnl_engine()) return pdi_error(PD_ERR_UNSUPPORTED, "oneDNN: cannot create a CPU engine");
    pthread_mutex_lock(&cache_mu);
    int victim = 0;
    for (int i = 0; i < CACHE_CAP; i++) {
        struct pdi_dnnl_entry *e = cache[i];
        if (e && e->klen == klen && !memcmp(e->key, key, klen)) {
            e->stamp = ++cache_clock;
            e->refs++;
            pthread_mutex_unlock(&cache_mu);
            return e;
        }
        if (!e) victim = i;
        else if (cache[victim] && e->stamp < cache[victim]->stamp) victim = i;
    }
    struct pdi_dnnl_entry *e = pdi_calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&cache_mu);
        return pdi_error(PD_ERR_NOMEM, "out of memory (oneDNN cache)");
    }
    memcpy(e->key, key, klen);
    e->klen = klen;
    dnnl_status_t st = build(key, e);
    if (st == dnnl_success && e->pd) {
        e->scratch = scratch_of(e->pd);
        if (!e->prim && dnnl_primitive_create(&e->prim, e->pd) != dnnl_success) st = dnnl_runtime_error;
    }
    if (st != dnnl_success) {
        /* "unimplemented" is remembered (the caller takes another path);
         * anything else is an error and is not cached. */
        entry_clear(e);
        if (st != dnnl_unimplemented) {
            pthread_mutex_unlock(&cache_mu);
            free(e);
            return pdi_error(PD_ERR_UNSUPPORTED, "oneDNN: cannot create a primitive (status %d)", (int)st);
        }
    }
    if (cache[victim]) {
        struct pdi_dnnl_entry *old = cache[victim];
        if (--old->refs == 0) entry_free(old);
    }
    e->refs = 2; /* the cache's and the caller's */
    e->stamp = ++cache_clock;
    cache[victim] = e;
    pthread_mutex_unlock(&cache_mu);
    return e;
}

/* Runs one primitive with a scratchpad of its own (scratch bytes, of pd). */
static int exec1(const struct pdi_kcall *kc, dnnl_primitive_t prim, const_dnnl_primitive_desc_t pd, size_t scratch,
                 dnnl_stream_t s, int n, dnnl_exec_arg_t *ex)
{
    void *buf = NULL;
    int rc = PD_OK;
    if (scratch) {
        const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        if (!(buf = pdi_kscratch(kc, scratch))) return pd_last_status();
        if (dnnl_memory_create(&ex[n].memory, sp, engine, buf) != dnnl_success) {
            pdi_kscratch_free(kc, buf, scratch);
            return pdi_errorf(PD_ERR_UNSUPPORTED, "oneDNN: cannot wrap a scratchpad");
        }
        ex[n++].arg = DNNL_ARG_SCRATCHPAD;
    }
    if (dnnl_primitive_execute(prim, s, n, ex) != dnnl_success || dnnl_stream_wait(s) != dnnl_success)
        rc = pdi_errorf(PD_ERR_UNSUPPORTED, "oneDNN: primitive execution failed");
    if (buf) {
        dnnl_memory_destroy(ex[n - 1].memory);
        pdi_kscratch_free(kc, buf, scratch);
    }
    return rc;
}

int pdi_dnnl_run(const struct pdi_kcall *kc, struct pdi_dnnl_entry *e, int n, const struct pdi_dnnl_arg *args)
{
    dnnl_stream_t s = thread_stream();
    if (!s) return pdi_errorf(PD_ERR_UNSUPPORTED, "oneDNN: cannot create a stream");
    if (n > PDI_DNNL_MAX_ARGS) return pdi_errorf(PD_ERR_INVALID, "oneDNN: too many arguments");
    dnnl_exec_arg_t ex[PDI_DNNL_MAX_ARGS + 1];
    dnnl_memory_t user[PDI_DNNL_MAX_ARGS] = {0};
    void *tmp[PDI_DNNL_MAX_ARGS] = {0};
    size_t tmp_size[PDI_DNNL_MAX_ARGS] = {0};
    int m = 0, rc = PD_OK;
    for (int i = 0; i < n && !rc; i++) {
        const struct pdi_dnnl_arg *a = &args[i];
        ex[i].arg = a->arg;
        ex[i].memory = NULL;
        m = i + 1;
        if (!e->reorder[a->slot]) {
            if (dnnl_memory_create(&ex[i].memory, &e->imd[a->slot], engine, a->ptr) != dnnl_success)
                rc = pdi_errorf(PD_ERR_UNSUPPORTED, "oneDNN: cannot wrap argument %d", a->arg);
            continue;
        }
        /* the primitive's layout lives in a temporary */
        tmp_size[i] = dnnl_memory_desc_get_size(&e->imd[a->slot]);
        if (!(tmp[i] = pdi_kscratch(kc, tmp_size[i] ? tmp_size[i] : 1))) { rc = pd_last_status(); break; }
        if (dnnl_memory_create(&ex[i].memory, &e->imd[a->slot], engine, tmp[i]) != dnnl_success ||
            dnnl_memory_create(&user[i], &e->md[a->slot], engine, a->ptr) != dnnl_success) {
            rc = pdi_errorf(PD_ERR_UNSUPPORTED, "oneDNN: cannot wrap argument %d", a->arg);
            break;
        }
        if (!a->output) {
            dnnl_exec_arg_t r[3] = {{DNNL_ARG_FROM, user[i]}, {DNNL_ARG_TO, ex[i].memory}};
            rc = exec1(kc, e->reorder[a->slot], e->reorder_pd[a->slot], e->reorder_scratch[a->slot], s, 2, r);
        }
    }
    if (!rc) rc = exec1(kc, e->prim, e->pd, e->scratch, s, n, ex);
    for (int i = 0; i < n && !rc; i++) {
        const struct pdi_dnnl_arg *a = &args[i];
        if (!a->output || !e->reorder[a->slot]) continue;
        dnnl_exec_arg_t r[3] = {{DNNL_ARG_FROM, ex[i].memory}, {DNNL_ARG_TO, user[i]}};
        rc = exec1(kc, e->reorder[a->slot], e->reorder_pd[a->slot], e->reorder_scratch[a->slot], s, 2, r);
    }
    for (int i = 0; i < m; i++) {
        if (ex[i].memory) dnnl_memory_destroy(ex[i].memory);
        if (user[i]) dnnl_memory_destroy(user[i]);
        if (tmp[i]) pdi_kscratch_free(kc, tmp[i], tmp_size[i] ? tmp_size[i] : 1);
    }
    return rc;
}

dnnl_primitive_attr_t pdi_dnnl_user_scratchpad(void)
{
    dnnl_primitive_attr_t a = NULL;
    if (dnnl_primitive_attr_create(&a) != dnnl_success) return NULL;
    dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user);
    return a;
}

dnnl_data_type_t pdi_dnnl_dt(enum pd_dtype dt)
{
    switch (dt) {
    case PD_F32: return dnnl_f32;
    case PD_BF16: return dnnl_bf16;
    case PD_F16: return dnnl_f16;
    default: return dnnl_data_type_undef;
    }
}

static inline float f16_f32(uint16_t h)
{
#ifdef __F16C__
    return _cvtsh_ss(h);
#else
    return pd_f16_to_f32(h);
#endif
}

static inline uint16_t f32_f16(float f)
{
#ifdef __F16C__
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
    return pd_f32_to_f16(f);
#endif
}

static inline float load_f(const char *p, enum pd_dtype dt)
{
    switch (dt) {
    case PD_F32: return *(const float *)p;
    case PD_BF16: return pdi_bf16_f32(*(const uint16_t *)p);
    case PD_F16: return f16_f32(*(const uint16_t *)p);
    default: return (float)pdi_load(p, dt);
    }
}

static inline void store_f(char *p, enum pd_dtype dt, float v)
{
    switch (dt) {
    case PD_F32: *(float *)p = v; break;
    case PD_BF16: *(uint16_t *)p = pdi_f32_bf16(v); break;
    case PD_F16: *(uint16_t *)p = f32_f16(v); break;
    default: pdi_store(p, dt, v);
    }
}

struct conv_ctx {
    enum pd_dtype dd, sd;
};

/* One run of pdi_iter: p[0] destination, p[1] source. */
/* Contiguous runs between f32 and bf16/f16, written to vectorise. */
static void bf16_to_f32_n(const uint16_t *s, float *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)s[i] << 16;
        memcpy(d + i, &u, 4); /* no aliasing games; still vectorised */
    }
}

static void f32_to_bf16_n(const float *s, uint16_t *d, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, s + i, 4);
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1)) >> 16;                          /* nearest even */
        d[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40 : r); /* NaN stays a quiet NaN */
    }
}

static void f16_to_f32_n(const uint16_t *s, float *d, int64_t n)
{
    int64_t i = 0;
#ifdef __F16C__
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
#endif
    for (; i < n; i++) d[i] = f16_f32(s[i]);
}

static void f32_to_f16_n(const float *s, uint16_t *d, int64_t n)
{
    int64_t i = 0;
#ifdef __F16C__
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < n; i++) d[i] = f32_f16(s[i]);
}

/* One run of pdi_iter: p[0] destination, p[1] source. */
static void convert_run(char **p, const int64_t *st, int64_t n, void *ctx)
{
    const struct conv_ctx *c = ctx;
    size_t ds = pd_dtype_size(c->dd), ss = pd_dtype_size(c->sd);
    if (st[0] == (int64_t)ds && st[1] == (int64_t)ss) {
        if (c->dd == c->sd) { memcpy(p[0], p[1], (size_t)n * ds); return; }
        if (c->dd == PD_F32 && c->sd == PD_BF16) { bf16_to_f32_n((const uint16_t *)p[1], (float *)p[0], n); return; }
        if (c->dd == PD_BF16 && c->sd == PD_F32) { f32_to_bf16_n((const float *)p[1], (uint16_t *)p[0], n); return; }
        if (c->dd == PD_F32 && c->sd == PD_F16) { f16_to_f32_n((const uint16_t *)p[1], (float *)p[0], n); return; }
        if (c->dd == PD_F16 && c->sd == PD_F32) { f32_to_f16_n((const float *)p[1], (uint16_t *)p[0], n); return; }
    }
    if (c->dd == PD_F64 || c->sd == PD_F64) {
        for (int64_t i = 0; i < n; i++) pdi_store(p[0] + i * st[0], c->dd, pdi_load(p[1] + i * st[1], c->sd));
        return;
    }
    if (c->dd == c->sd && ds == 4) {
        for (int64_t i = 0; i < n; i++) *(uint32_t *)(p[0] + i * st[0]) = *(const uint32_t *)(p[1] + i * st[1]);
        return;
    }
    for (int64_t i = 0; i < n; i++) store_f(p[0] + i * st[0], c->dd, load_f(p[1] + i * st[1], c->sd));
}

void pdi_linalg_copy(const struct pd_kview *dst, const struct pd_kview *src)
{
    struct pd_kview d = *dst, s = *src;
    struct pd_kview *ops[2] = {&d, &s};
    struct conv_ctx c = {dst->dtype, src->dtype};
    pdi_iter(2, ops, dst->shape, dst->ndim, convert_run, &c);
}

/* A contiguous view of shape like v over buf. */
void pdi_linalg_contig_view(const struct pd_kview *like, enum pd_dtype dt, void *buf, struct pd_kview *out)
{
    out->data = buf;
    out->dtype = dt;
    out->ndim = like->ndim;
    memcpy(out->shape, like->shape, sizeof out->shape);
    pdi_contiguous_strides(like->shape, like->ndim, out->strides);
}

void *pdi_linalg_pack(const struct pdi_kcall *kc, const struct pd_kview *v, enum pd_dtype dt, struct pd_kview *out)
{
    int64_t n = pdi_kview_numel(v);
    size_t bytes = (size_t)(n > 0 ? n : 1) * pd_dtype_size(dt);
    void *buf = pdi_kscratch(kc, bytes);
    if (!buf) return pdi_error(PD_ERR_NOMEM, "out of memory (%zu bytes to pack an operand)", bytes);
    pdi_linalg_contig_view(v, dt, buf, out);
    pdi_linalg_copy(out, v);
    return buf;
}

void pdi_linalg_unpack_free(const struct pdi_kcall *kc, void *buf, const struct pd_kview *v)
{
    if (!buf) return; /* v is unset then */
    int64_t n = pdi_kview_numel(v);
    pdi_kscratch_free(kc, buf, (size_t)(n > 0 ? n : 1) * pd_dtype_size(v->dtype));
}

/* ---- matmul geometry ------------------------------------------------- */
/* op(X) of one operand: rows x cols per batch, element strides rs/cs of
 * op(X), and per out-batch-dim strides (0 where X is broadcast). */
struct opnd {
    const char *data;
    int64_t rows, cols, rs, cs;
    int64_t bst[PD_MAX_DIMS];
};

static void opnd_of(const struct pd_kview *v, int trans, const struct pd_kview *y, struct opnd *o)
{
    int nd = v->ndim, nb = y->ndim - 2, sh = nb - (nd - 2);
    int64_t r = v->shape[nd - 2], c = v->shape[nd - 1], rs = v->strides[nd - 2], cs = v->strides[nd - 1];
    o->data = v->data;
    o->rows = trans ? c : r;
    o->cols = trans ? r : c;
    o->rs = trans ? cs : rs;
    o->cs = trans ? rs : cs;
    for (int d = 0; d < nb; d++) {
        int dv = d - sh;
        o->bst[d] = (dv < 0 || v->shape[dv] == 1) ? 0 : v->strides[dv];
    }
}

/* Row-major BLAS form of op(X): 'N' with ld = row stride (unit column
 * stride), or 'T' with ld = column stride (unit row stride). Strides of
 * size-1 dims are free. Returns 0 if neither fits (pack first). */
static char blas_form(const struct opnd *o, int64_t *ld)
{
    int64_t r = o->rows, c = o->cols;
    int64_t cs = c <= 1 ? 1 : o->cs, rs = r <= 1 ? (c > 1 ? c : 1) : o->rs;
    if (cs == 1 && rs >= (c > 1 ? c : 1)) { *ld = rs; return 'N'; }
    rs = r <= 1 ? 1 : o->rs;
    cs = c <= 1 ? (r > 1 ? r : 1) : o->cs;
    if (rs == 1 && cs >= (r > 1 ? r : 1)) { *ld = cs; return 'T'; }
    return 0;
}

static int64_t batch_offset(const int64_t *bst, const int64_t *bshape, int nb, int64_t t)
{
    int64_t off = 0;
    for (int d = nb - 1; d >= 0; d--) {
        off += (t % bshape[d]) * bst[d];
        t /= bshape[d];
    }
    return off;
}

/* Can the batch of a fold into M? (a advances by M rows per batch step
 * over every non-trivial out batch dim, and b is the same for all.) */
static int can_fold(const struct opnd *a, const struct opnd *b, char fa, int64_t lda, const int64_t *bshape, int nb)
{
    if (fa != 'N') return 0;
    int64_t want = a->rows * lda;
    for (int d = nb - 1; d >= 0; d--) {
        if (bshape[d] == 1) continue;
        if (b->bst[d] != 0 || a->bst[d] != want) return 0;
        want *= bshape[d];
    }
    return 1;
}

/* ---- f32 through sgemm ----------------------------------------------- */
/* Which f32 GEMM runs (read once):
 *   GEMM_OWN   the hand-written kernels of cpu/linalg_gemm.c (GEMV for
 *              M <= 4, packed GEMM for M >= 64), dnnl_sgemm between: the
 *              default on CPUs without AVX-512, where the 256-bit kernels
 *              measured faster than dnnl_sgemm on the Llama shapes;
 *   GEMM_GEMV  the GEMV only, dnnl_sgemm for the rest: the default with
 *              AVX-512, where dnnl_sgemm's 512-bit kernels run about twice
 *              as fast as ours (docs/benchmarks.md) but not for decode;
 *   GEMM_DNNL  dnnl_sgemm for every product.
 * PD_GEMM=own|gemv|dnnl overrides (to compare them in one binary). */
enum { GEMM_DNNL, GEMM_GEMV, GEMM_OWN };
static int gemm_mode = GEMM_OWN;
static pthread_once_t gemm_once = PTHREAD_ONCE_INIT;

static void gemm_choice(void)
{
    const char *s = getenv("PD_GEMM");
    if (s && !strcmp(s, "dnnl")) gemm_mode = GEMM_DNNL;
    else if (s && !strcmp(s, "gemv")) gemm_mode = GEMM_GEMV;
    else if (s && !strcmp(s, "own")) gemm_mode = GEMM_OWN;
    else gemm_mode = __builtin_cpu_supports("avx512f") ? GEMM_GEMV : GEMM_OWN;
}

/* One product y[m, n] (row stride n) = op(a) op(b) at the given data
 * pointers; nt: threads it may use (1 inside a parallel region). M <= 4
 * (decode) takes the GEMV kernel, M >= 64 the packed GEMM; the rest, and
 * builds without AVX2, dnnl_sgemm on the BLAS forms. */
static int gemm1(const struct pdi_kcall *kc, const struct opnd *a, const struct opnd *b, const float *pa,
                 const float *pb, float *y, int64_t m, int64_t n, int64_t k, int nt)
{
    int rc = 0;
    if (gemm_mode != GEMM_DNNL) {
        if (m <= PDI_GEMV_MAX_M) rc = pdi_sgemv(kc, m, n, k, pa, a->rs, a->cs, pb, b->rs, b->cs, y, n, nt);
        /* below 64 rows packing B~ (O(N K), a transposed weight scalar)
         * outweighs the product: dnnl_sgemm is faster there (prefill) */
        if (rc == 0 && m >= 64 && gemm_mode == GEMM_OWN)
            rc = pdi_sgemm(kc, m, n, k, pa, a->rs, a->cs, pb, b->rs, b->cs, y, n, nt);
        if (rc != 0) return rc < 0 ? rc : PD_OK;
    }
    int64_t lda = 0, ldb = 0;
    char fa = blas_form(a, &lda), fb = blas_form(b, &ldb);
    if (dnnl_sgemm(fa, fb, m, n, k, 1.0f, pa, lda, pb, ldb, 0.0f, y, n) != dnnl_success)
        return pdi_errorf(PD_ERR_UNSUPPORTED, "matmul: dnnl_sgemm failed (M %lld, N %lld, K %lld)", (long long)m,
                          (long long)n, (long long)k);
    return PD_OK;
}

/* y (contiguous f32 [batch..., M, N]) = op(a) op(b) for f32 operands in a
 * BLAS form (see prepare). */
static int sgemm_batched(const struct pdi_kcall *kc, const struct opnd *a, const struct opnd *b, float *y,
                         const int64_t *bshape, int nb)
{
    int64_t m = a->rows, k = a->cols, n = b->cols, lda = 0;
    char fa = blas_form(a, &lda);
    int64_t batch = pdi_numel(bshape, nb);
    pthread_once(&gemm_once, gemm_choice);
    struct opnd af = *a;
    if (can_fold(a, b, fa, lda, bshape, nb)) {
        /* rows of consecutive batches are lda apart: one product of
         * batch*M rows (the linear-layer case) */
        m *= batch;
        batch = 1;
        af.rs = lda;
    }
    const float *pa = (const float *)a->data, *pb = (const float *)b->data;
    /* Batches: one GEMM per thread wherever the batch divides over the
     * threads or the matrices are small (better than threading each GEMM);
     * else the GEMM's own threading. */
    int nt = pdi_num_threads();
    int par = batch > 1 && nt > 1 && (m * n * k <= 160 * 160 * 160 || batch % nt == 0 || batch >= 4 * nt);
    int rc = PD_OK;
    if (par) {
        /* oneDNN runs single-threaded inside a parallel region */
#pragma omp parallel for schedule(dynamic, 1) num_threads(pdi_num_threads())
        for (int64_t t = 0; t < batch; t++) {
            const float *at = pa + batch_offset(a->bst, bshape, nb, t), *bt = pb + batch_offset(b->bst, bshape, nb, t);
            int r = gemm1(kc, &af, b, at, bt, y + t * m * n, m, n, k, 1);
            if (r) {
#pragma omp critical(pd_linalg_rc)
                rc = r;
            }
        }
        /* the error message was set on the worker thread */
        if (rc) return pdi_errorf(rc, "matmul: a batched product failed (M %lld, N %lld, K %lld)", (long long)m,
                                  (long long)n, (long long)k);
    } else {
        for (int64_t t = 0; t < batch && !rc; t++) {
            const float *at = pa + (batch > 1 ? batch_offset(a->bst, bshape, nb, t) : 0);
            const float *bt = pb + (batch > 1 ? batch_offset(b->bst, bshape, nb, t) : 0);
            rc = gemm1(kc, &af, b, at, bt, y + t * m * n, m, n, k, nt);
        }
    }
    return rc;
}

/* Makes o describe v as an f32 operand in a BLAS form: v itself when it
 * already is one, else a packed f32 copy (*buf, to free). */
static int prepare(const struct pdi_kcall *kc, const struct pd_kview *v, int trans, const struct pd_kview *y,
                   struct opnd *o, void **buf, struct pd_kview *packed)
{
    int64_t ld;
    *buf = NULL;
    opnd_of(v, trans, y, o);
    if (v->dtype == PD_F32 && blas_form(o, &ld)) return PD_OK;
    if (!(*buf = pdi_linalg_pack(kc, v, PD_F32, packed))) return pd_last_status();
    opnd_of(packed, trans, y, o);
    return PD_OK;
}

/* ---- the oneDNN matmul primitive (bf16; f32 on request) --------------- */
struct mm_key {
    int kind, dt, nd, pad;
    int64_t dims[3][PD_MAX_DIMS], strides[3][PD_MAX_DIMS];
};

static dnnl_status_t build_matmul(const void *key, struct pdi_dnnl_entry *e)
{
    const struct mm_key *k = key;
    dnnl_memory_desc_t md[3];
    for (int i = 0; i < 3; i++) {
        dnnl_dims_t d, s;
        for (int j = 0; j < k->nd; j++) { d[j] = k->dims[i][j]; s[j] = k->strides[i][j]; }
        dnnl_status_t st = dnnl_memory_desc_init_by_strides(&md[i], k->nd, d, (dnnl_data_type_t)k->dt, s);
        if (st != dnnl_success) return st;
    }
    dnnl_matmul_desc_t desc;
    dnnl_status_t st = dnnl_matmul_desc_init(&desc, &md[0], &md[1], NULL, &md[2]);
    if (st != dnnl_success) return st;
    dnnl_primitive_attr_t attr = pdi_dnnl_user_scratchpad();
    st = dnnl_primitive_desc_create(&e->pd, &desc, attr, pdi_dnnl_engine(), NULL);
    dnnl_primitive_attr_destroy(attr);
    for (int i = 0; i < 3; i++) e->md[i] = e->imd[i] = md[i];
    return st;
}

/* Fills the key rows for one operand (BLAS form required). */
static void key_operand(struct mm_key *k, int i, const struct opnd *o, char form, int64_t ld, const int64_t *bshape,
                        int nb)
{
    int64_t outer = 1;
    for (int d = 0; d < nb; d++)
        if (o->bst[d] > outer) outer = o->bst[d];
    outer *= 2; /* any stride beyond the others suits a size-1 dim */
    if (outer < ld * (o->rows > o->cols ? o->rows : o->cols)) outer = ld * (o->rows > o->cols ? o->rows : o->cols) + 1;
    for (int d = 0; d < nb; d++) {
        k->dims[i][d] = o->bst[d] ? bshape[d] : 1;
        k->strides[i][d] = o->bst[d] ? o->bst[d] : outer;
    }
    k->dims[i][nb] = o->rows;
    k->dims[i][nb + 1] = o->cols;
    k->strides[i][nb] = form == 'N' ? ld : 1;
    k->strides[i][nb + 1] = form == 'N' ? 1 : ld;
}

/* 1: done; 0: not available (unimplemented here, take another path). */
static int matmul_primitive(const struct pdi_kcall *kc, const struct opnd *a, const struct opnd *b,
                            const struct pd_kview *y, int *rc)
{
    int nb = y->ndim - 2;
    int64_t lda, ldb;
    char fa = blas_form(a, &lda), fb = blas_form(b, &ldb);
    if (!fa || !fb) return 0;
    /* oneDNN broadcasts a batch dim only from one operand: a dim where both
     * are broadcast (stride-0 expanded views) takes the sgemm loop. */
    for (int d = 0; d < nb; d++)
        if (y->shape[d] > 1 && !a->bst[d] && !b->bst[d]) return 0;
    struct mm_key k;
    memset(&k, 0, sizeof k);
    k.kind = 1;
    k.dt = pdi_dnnl_dt(y->dtype);
    k.nd = y->ndim;
    key_operand(&k, 0, a, fa, lda, y->shape, nb);
    key_operand(&k, 1, b, fb, ldb, y->shape, nb);
    for (int d = 0; d < y->ndim; d++) {
        k.dims[2][d] = y->shape[d];
        k.strides[2][d] = y->strides[d];
    }
    struct pdi_dnnl_entry *e = pdi_dnnl_get(&k, sizeof k, build_matmul);
    if (!e) { *rc = pd_last_status(); return 1; }
    if (!e->prim) { pdi_dnnl_put(e); return 0; }
    struct pdi_dnnl_arg args[3] = {
        {DNNL_ARG_SRC, 0, 0, (void *)a->data},
        {DNNL_ARG_WEIGHTS, 1, 0, (void *)b->data},
        {DNNL_ARG_DST, 2, 1, y->data},
    };
    *rc = pdi_dnnl_run(kc, e, 3, args);
    pdi_dnnl_put(e);
    return 1;
}

/* Which dtypes take the primitive: bf16 if this CPU has a bf16 matmul
 * (probed once on a plain 16x16 problem, so an AVX2 machine does not retry
 * primitive creation for every new shape); f32 only with PD_DNNL_MATMUL=1
 * (for comparison with sgemm; read once). */
static int bf16_native, f32_primitive;
static pthread_once_t prim_once = PTHREAD_ONCE_INIT;

static void prim_probe(void)
{
    const char *s = getenv("PD_DNNL_MATMUL");
    f32_primitive = s && s[0] == '1';
    struct mm_key k;
    memset(&k, 0, sizeof k);
    k.kind = 1;
    k.dt = dnnl_bf16;
    k.nd = 2;
    for (int i = 0; i < 3; i++) {
        k.dims[i][0] = k.dims[i][1] = k.strides[i][0] = 16;
        k.strides[i][1] = 1;
    }
    struct pdi_dnnl_entry *e = pdi_dnnl_get(&k, sizeof k, build_matmul);
    bf16_native = e && e->prim;
    pdi_dnnl_put(e);
    if (!e) pd_clear_error();
}

static int use_primitive(enum pd_dtype dt)
{
    pthread_once(&prim_once, prim_probe);
    return dt == PD_BF16 ? bf16_native : dt == PD_F32 ? f32_primitive : 0;
}

/* ---- f64 ------------------------------------------------------------- */
#define F64_MB 16
#define F64_KC 128
#define F64_NC 256

/* y (contiguous [batch..., M, N]) = op(a) op(b) in double: row blocks of
 * op(a) over threads, blocked over K and N so a tile of op(b) stays in L2;
 * the inner loop runs along a row of op(b) (vectorised when contiguous). */
static int matmul_f64(const struct pdi_kcall *kc, const struct opnd *a0, const struct opnd *b0, const int64_t *bshape,
                      int nb)
{
    const struct pd_kview *y = &kc->out[0];
    int64_t m = a0->rows, k = a0->cols, n = b0->cols, batch = pdi_numel(bshape, nb);
    double *out = (double *)y->data;
    int nt = m * n * k * batch >= 32768 ? pdi_num_threads() : 1;
    int64_t mblocks = (m + F64_MB - 1) / F64_MB;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t task = 0; task < batch * mblocks; task++) {
        int64_t t = task / mblocks, i0 = (task % mblocks) * F64_MB, i1 = i0 + F64_MB < m ? i0 + F64_MB : m;
        const double *pa = (const double *)a0->data + batch_offset(a0->bst, bshape, nb, t);
        const double *pb = (const double *)b0->data + batch_offset(b0->bst, bshape, nb, t);
        double *c = out + t * m * n;
        for (int64_t i = i0; i < i1; i++)
            for (int64_t j = 0; j < n; j++) c[i * n + j] = 0;
        for (int64_t p0 = 0; p0 < k; p0 += F64_KC) {
            int64_t p1 = p0 + F64_KC < k ? p0 + F64_KC : k;
            for (int64_t j0 = 0; j0 < n; j0 += F64_NC) {
                int64_t j1 = j0 + F64_NC < n ? j0 + F64_NC : n;
                /* four rows at a time: each loaded row of op(b) feeds four
                 * accumulator rows */
                for (int64_t i = i0; i < i1; i += 4) {
                    int64_t r = i1 - i < 4 ? i1 - i : 4;
                    double *c0 = c + i * n, *c1 = c0 + (r > 1) * n, *c2 = c0 + (r > 2) * 2 * n, *c3 = c0 + (r > 3) * 3 * n;
                    for (int64_t p = p0; p < p1; p++) {
                        const double *ap = pa + i * a0->rs + p * a0->cs;
                        double v0 = ap[0], v1 = r > 1 ? ap[a0->rs] : 0, v2 = r > 2 ? ap[2 * a0->rs] : 0;
                        double v3 = r > 3 ? ap[3 * a0->rs] : 0;
                        const double *bp = pb + p * b0->rs;
                        if (b0->cs == 1 && r == 4) {
                            for (int64_t j = j0; j < j1; j++) {
                                double bj = bp[j];
                                c0[j] += v0 * bj;
                                c1[j] += v1 * bj;
                                c2[j] += v2 * bj;
                                c3[j] += v3 * bj;
                            }
                        } else {
                            /* strided op(b), or an edge block of r < 4 rows
                             * (the pointers past r alias c0: not updated) */
                            for (int64_t j = j0; j < j1; j++) {
                                double bj = bp[j * b0->cs];
                                c0[j] += v0 * bj;
                                if (r > 1) c1[j] += v1 * bj;
                                if (r > 2) c2[j] += v2 * bj;
                                if (r > 3) c3[j] += v3 * bj;
                            }
                        }
                    }
                }
            }
        }
    }
    return PD_OK;
}

/* ---- the kernel ------------------------------------------------------ */
static int cpu_matmul(const struct pdi_kcall *kc)
{
    const struct pd_kview *av = &kc->in[0], *bv = &kc->in[1], *y = &kc->out[0];
    int ta = (int)kc->a->matmul.trans_a, tb = (int)kc->a->matmul.trans_b, nb = y->ndim - 2;
    enum pd_dtype dt = y->dtype;
    int64_t ny = pdi_kview_numel(y);
    if (ny == 0) return PD_OK;
    struct opnd a, b;
    opnd_of(av, ta, y, &a);
    opnd_of(bv, tb, y, &b);
    if (a.cols == 0) { /* K = 0: an empty sum */
        memset(y->data, 0, (size_t)ny * pd_dtype_size(dt));
        return PD_OK;
    }
    if (dt == PD_F64) return matmul_f64(kc, &a, &b, y->shape, nb);

    int rc = PD_OK;
    struct pd_kview pa, pb;
    void *ba = NULL, *bb = NULL;
    if (use_primitive(dt)) {
        /* keep the operands in their dtype; pack only layouts without a BLAS form */
        int64_t ld;
        if (!blas_form(&a, &ld)) {
            if (!(ba = pdi_linalg_pack(kc, av, dt, &pa))) return pd_last_status();
            opnd_of(&pa, ta, y, &a);
        }
        if (!blas_form(&b, &ld)) {
            if (!(bb = pdi_linalg_pack(kc, bv, dt, &pb))) {
                pdi_linalg_unpack_free(kc, ba, &pa);
                return pd_last_status();
            }
            opnd_of(&pb, tb, y, &b);
        }
        int done = matmul_primitive(kc, &a, &b, y, &rc);
        pdi_linalg_unpack_free(kc, ba, &pa);
        pdi_linalg_unpack_free(kc, bb, &pb);
        if (done) return rc;
        ba = bb = NULL;
        opnd_of(av, ta, y, &a);
        opnd_of(bv, tb, y, &b);
    }
    /* f32 sgemm; other dtypes widened to f32 first */
    int widen = dt != PD_F32;
    float *out = widen ? NULL : (float *)y->data;
    rc = prepare(kc, av, ta, y, &a, &ba, &pa);
    if (!rc) rc = prepare(kc, bv, tb, y, &b, &bb, &pb);
    if (!rc && widen && !(out = pdi_kscratch(kc, (size_t)ny * sizeof(float))))
        rc = pdi_errorf(PD_ERR_NOMEM, "out of memory (%lld floats)", (long long)ny);
    if (!rc) rc = sgemm_batched(kc, &a, &b, out, y->shape, nb);
    if (!rc && widen) {
        struct pd_kview ov;
        pdi_linalg_contig_view(y, PD_F32, out, &ov);
        pdi_linalg_copy(y, &ov);
    }
    if (widen && out) pdi_kscratch_free(kc, out, (size_t)ny * sizeof(float));
    pdi_linalg_unpack_free(kc, ba, &pa);
    pdi_linalg_unpack_free(kc, bb, &pb);
    return rc;
}

void pdi_register_cpu_linalg(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_matmul, PDI_DT_FLOATS, cpu_matmul);
    pdi_register_cpu_conv();
}
