/* paddle.c — allocators and backends as plug-ins (include/pd/memory.h,
 * core/kernel.h):
 *   - a counting allocator installed as the process default: tensors made
 *     under it record it and free through it after the default changed back;
 *     its statistics add up (every free matches an allocation, bytes and
 *     counts); host statistics do not move while it is the default;
 *   - allocators and backends with a wrong abi_version or a missing slot are
 *     refused with a message, and nothing changes;
 *   - REF and CPU are registered backends with their fixed ids;
 *   - a third backend registered at run time ("cpu-copy", reusing CPU kernels
 *     for a few ops, with its own counting allocator) runs when forced,
 *     bit-identical to CPU, and its outputs' storages record its allocator
 *     and id; a kernel it lacks is a clear error, and a backend with a
 *     fallback runs its fallback's kernel instead;
 *   - kernel scratch is counted: an f16 matmul on cpu-copy (packed f32
 *     operands and a widened result) and a FlashMask call under the counting
 *     default allocate more than their outputs, and free it all.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "pt.h"

/* ---- a counting allocator --------------------------------------------- */
#define SLOTS 4096 /* live blocks tracked (open addressing) */
struct counting {
    pthread_mutex_t mu;
    int64_t live_bytes, peak_bytes, total_bytes, n_allocs, n_frees;
    int64_t bad_frees; /* a pointer it did not hand out, or a size that differs */
    void *ptr[SLOTS];
    size_t size[SLOTS];
};

static size_t slot_of(const void *p) { return (size_t)(((uintptr_t)p >> 6) * 2654435761u) % SLOTS; }

static void *c_alloc(void *ctx, size_t n)
{
    struct counting *c = ctx;
    void *p = aligned_alloc(64, (n + 63) & ~(size_t)63 ? (n + 63) & ~(size_t)63 : 64);
    if (!p) return NULL;
    pthread_mutex_lock(&c->mu);
    size_t s = slot_of(p);
    while (c->ptr[s]) s = (s + 1) % SLOTS;
    c->ptr[s] = p;
    c->size[s] = n;
    c->live_bytes += (int64_t)n;
    c->total_bytes += (int64_t)n;
    c->n_allocs++;
    if (c->live_bytes > c->peak_bytes) c->peak_bytes = c->live_bytes;
    pthread_mutex_unlock(&c->mu);
    return p;
}

static void c_free(void *ctx, void *p, size_t n)
{
    struct counting *c = ctx;
    pthread_mutex_lock(&c->mu);
    size_t s = slot_of(p);
    int k = 0;
    while (c->ptr[s] != p && k++ < SLOTS) s = (s + 1) % SLOTS;
    if (c->ptr[s] != p || c->size[s] != n) {
        c->bad_frees++;
    } else {
        /* remove with backward-shift so later probes still find their keys */
        c->ptr[s] = NULL;
        for (size_t j = (s + 1) % SLOTS; c->ptr[j]; j = (j + 1) % SLOTS) {
            void *q = c->ptr[j];
            size_t qs = c->size[j];
            c->ptr[j] = NULL;
            size_t t = slot_of(q);
            while (c->ptr[t]) t = (t + 1) % SLOTS;
            c->ptr[t] = q;
            c->size[t] = qs;
        }
        c->live_bytes -= (int64_t)n;
        c->n_frees++;
    }
    pthread_mutex_unlock(&c->mu);
    free(p);
}

static int c_stats(void *ctx, struct pd_memory_stats *o)
{
    struct counting *c = ctx;
    pthread_mutex_lock(&c->mu);
    o->allocated_bytes = o->requested_bytes = o->active_bytes = o->reserved_bytes = c->live_bytes;
    o->peak_allocated_bytes = c->peak_bytes;
    o->total_allocated_bytes = c->total_bytes;
    o->total_freed_bytes = c->total_bytes - c->live_bytes;
    o->n_allocs = c->n_allocs;
    o->n_frees = c->n_frees;
    o->n_live = c->n_allocs - c->n_frees;
    pthread_mutex_unlock(&c->mu);
    return PD_OK;
}

static struct counting ca = {.mu = PTHREAD_MUTEX_INITIALIZER}, cb = {.mu = PTHREAD_MUTEX_INITIALIZER},
                       cf = {.mu = PTHREAD_MUTEX_INITIALIZER};
static const struct pd_allocator alloc_a = {PD_ALLOCATOR_ABI, "counting-a", &ca, c_alloc, c_free, c_stats, NULL, NULL};
static const struct pd_allocator alloc_b = {PD_ALLOCATOR_ABI, "counting-b", &cb, c_alloc, c_free, c_stats, NULL, NULL};
static const struct pd_allocator alloc_f = {PD_ALLOCATOR_ABI, "counting-f", &cf, c_alloc, c_free, NULL, NULL, NULL};

static int64_t live(struct counting *c)
{
    pthread_mutex_lock(&c->mu);
    int64_t v = c->live_bytes;
    pthread_mutex_unlock(&c->mu);
    return v;
}

static struct pd_tensor *randn(int64_t r, int64_t c, enum pd_dtype dt, struct pd_generator *g)
{
    int64_t s[2] = {r, c};
    return pd_randn(s, 2, dt, g);
}

/* ---- the default allocator -------------------------------------------- */
static void check_default(void)
{
    struct pd_generator *g = pd_generator_create(7);
    PT_CHECK(pd_allocator_default() == pd_allocator_host());

    /* refused: wrong version, missing slot; nothing changes */
    struct pd_allocator bad = alloc_a;
    bad.abi_version = PD_ALLOCATOR_ABI + 1;
    PT_CHECK(pd_allocator_set_default(&bad) == PD_ERR_INVALID);
    PT_CHECK(strstr(pd_last_error(), "abi_version") != NULL);
    bad.abi_version = 0;
    PT_CHECK(pd_allocator_set_default(&bad) == PD_ERR_INVALID);
    bad = alloc_a;
    bad.free = NULL;
    PT_CHECK(pd_allocator_set_default(&bad) == PD_ERR_INVALID);
    PT_CHECK(strstr(pd_last_error(), "free slot") != NULL);
    PT_CHECK(pd_allocator_default() == pd_allocator_host());

    /* the host allocator as a plug-in: its stats slot is pd_memory_stats */
    struct pd_memory_stats h0, h1, s;
    PT_CHECK(pd_allocator_stats(pd_allocator_host(), &h0) == PD_OK);
    PT_CHECK(pd_allocator_stats(&alloc_f, &s) == PD_ERR_UNSUPPORTED);
    PT_CHECK(pd_allocator_stats(NULL, &s) == PD_ERR_NULL);

    int tok = pd_scope_begin();
    struct pd_tensor *x = randn(64, 32, PD_F32, g), *y = randn(64, 32, PD_F32, g);
    PT_CHECK(pd_tensor_allocator(x) == pd_allocator_host());
    PT_CHECK(x->st->backend == PDI_BACKEND_CPU);
    pd_memory_stats(&h0);

    /* made under A: recorded, counted by A, not by the host allocator */
    PT_CHECK(pd_allocator_set_default(&alloc_a) == PD_OK);
    PT_CHECK(pd_allocator_default() == &alloc_a);
    struct pd_tensor *z = pd_keep(pd_add(x, y));
    struct pd_tensor *w = pd_keep(pd_exp(pd_mul(z, y))); /* an intermediate made and freed under A too */
    struct pd_tensor *e = pd_keep(randn(8, 8, PD_F64, g));
    PT_CHECK(z && w && e);
    PT_CHECK(pd_tensor_allocator(z) == &alloc_a && pd_tensor_allocator(w) == &alloc_a);
    PT_CHECK(pd_tensor_allocator(e) == &alloc_a);
    PT_CHECK(pd_tensor_allocator(x) == pd_allocator_host()); /* made before: unchanged */
    PT_CHECK(z->st->backend == PDI_BACKEND_CPU);
    pd_memory_stats(&h1);
    PT_CHECK(h1.allocated_bytes == h0.allocated_bytes);
    PT_CHECK(h1.n_allocs == h0.n_allocs);
    PT_CHECK(live(&ca) >= 2 * 64 * 32 * 4 + 8 * 8 * 8);
    PT_CHECK(pd_allocator_stats(&alloc_a, &s) == PD_OK);
    PT_CHECK(s.allocated_bytes == live(&ca));
    PT_CHECK(s.n_allocs >= 4);

    /* the default changes back; A's tensors still free through A */
    PT_CHECK(pd_allocator_set_default(NULL) == PD_OK);
    PT_CHECK(pd_allocator_default() == pd_allocator_host());
    struct pd_tensor *after = pd_add(x, y);
    PT_CHECK(pd_tensor_allocator(after) == pd_allocator_host());
    PT_CHECK(pt_same_bits(after, z));
    pd_tensor_release(z);
    pd_tensor_release(w);
    pd_tensor_release(e);
    PT_CHECK(pd_scope_end(tok) == PD_OK);
    PT_CHECK(pd_allocator_stats(&alloc_a, &s) == PD_OK);
    PT_CHECK(s.allocated_bytes == 0 && s.n_live == 0);
    PT_CHECK(s.n_allocs == s.n_frees && s.total_freed_bytes == s.total_allocated_bytes);
    PT_CHECK(ca.bad_frees == 0);
    pd_generator_destroy(g);
}

/* ---- backends ---------------------------------------------------------- */
static void reg_copy(struct pdi_backend_reg *r)
{
    /* one line per borrowed op */
    pdi_kernel_reuse(r->id, PDI_BACKEND_CPU, PD_OP_add, PDI_DT_ALL);
    pdi_kernel_reuse(r->id, PDI_BACKEND_CPU, PD_OP_mul, PDI_DT_ALL);
    pdi_kernel_reuse(r->id, PDI_BACKEND_CPU, PD_OP_matmul, PDI_DT_ALL);
    pdi_kernel_reuse(r->id, PDI_BACKEND_CPU, PD_OP_sum, PDI_DT_ALL);
}

static void reg_nothing(struct pdi_backend_reg *r) { PDI_UNUSED(r); }

static int n_syncs;
static int sync_count(void *ctx)
{
    PDI_UNUSED(ctx);
    n_syncs++;
    return PD_OK;
}

static const struct pdi_backend_def copy_backend = {
    .abi_version = PDI_BACKEND_ABI,
    .name = "cpu-copy",
    .priority = -10, /* never chosen unless forced */
    .allocator = &alloc_b,
    .register_kernels = reg_copy,
    .synchronize = sync_count,
};

static const struct pdi_backend_def fallback_backend = {
    .abi_version = PDI_BACKEND_ABI,
    .name = "cpu-fallback",
    .priority = -20,
    .allocator = &alloc_f,
    .register_kernels = reg_nothing,
    .fallback = "cpu",
};

static void check_builtins(void)
{
    PT_CHECK(pdi_backend_count() >= PDI_BACKEND_COUNT);
    const struct pdi_backend_def *r = pdi_backend_get(PDI_BACKEND_REF), *c = pdi_backend_get(PDI_BACKEND_CPU);
    PT_CHECK(r && !strcmp(r->name, "ref") && r->abi_version == PDI_BACKEND_ABI);
    PT_CHECK(c && !strcmp(c->name, "cpu") && c->priority > r->priority);
    PT_CHECK(pdi_backend_find("cpu") == PDI_BACKEND_CPU && pdi_backend_find("ref") == PDI_BACKEND_REF);
    PT_CHECK(pdi_backend_find("nope") == -1 && pdi_backend_get(99) == NULL);
    PT_CHECK(pdi_backend_synchronize(PDI_BACKEND_CPU) == PD_OK); /* no slot: nothing to wait for */
    PT_CHECK(pdi_force_backend(99) == PD_ERR_INVALID);
    PT_CHECK(pdi_forced_backend() == -1);
}

static void check_refused(void)
{
    int n = pdi_backend_count();
    struct pdi_backend_def d = copy_backend;
    d.name = "other";
    d.abi_version = PDI_BACKEND_ABI + 1;
    PT_CHECK(pdi_backend_register(&d) == PD_ERR_INVALID);
    PT_CHECK(strstr(pd_last_error(), "abi_version") != NULL);
    d.abi_version = PDI_BACKEND_ABI;
    d.register_kernels = NULL;
    PT_CHECK(pdi_backend_register(&d) == PD_ERR_INVALID);
    PT_CHECK(strstr(pd_last_error(), "register_kernels") != NULL);
    d = copy_backend;
    d.name = "cpu"; /* taken */
    PT_CHECK(pdi_backend_register(&d) == PD_ERR_INVALID);
    d.name = "other";
    d.fallback = "no-such-backend";
    PT_CHECK(pdi_backend_register(&d) == PD_ERR_INVALID);
    PT_CHECK(strstr(pd_last_error(), "no-such-backend") != NULL);
    struct pd_allocator bad = alloc_b;
    bad.alloc = NULL;
    d = copy_backend;
    d.name = "other";
    d.allocator = &bad;
    PT_CHECK(pdi_backend_register(&d) == PD_ERR_INVALID);
    PT_CHECK(pdi_backend_register(NULL) == PD_ERR_NULL);
    PT_CHECK(pdi_backend_count() == n);
}

static void check_third_backend(void)
{
    struct pd_generator *g = pd_generator_create(11);
    int id = pdi_backend_register(&copy_backend);
    PT_CHECK(id >= PDI_BACKEND_COUNT && id < PDI_BACKEND_MAX);
    PT_CHECK(pdi_backend_find("cpu-copy") == id);
    PT_CHECK(pdi_kernel_lookup(id, PD_OP_add, PD_F32) == pdi_kernel_lookup(PDI_BACKEND_CPU, PD_OP_add, PD_F32));
    PT_CHECK(pdi_kernel_lookup(id, PD_OP_exp, PD_F32) == NULL);
    PT_CHECK(pdi_backend_synchronize(id) == PD_OK && n_syncs == 1);

    int tok = pd_scope_begin();
    struct pd_tensor *x = randn(33, 17, PD_F32, g), *y = randn(33, 17, PD_F32, g);
    /* unforced: CPU (higher priority) runs add */
    struct pd_tensor *zc = pd_add(x, y);
    PT_CHECK(zc && zc->st->backend == PDI_BACKEND_CPU && pd_tensor_allocator(zc) == pd_allocator_host());

    /* forced: cpu-copy runs it, its allocator makes the output */
    int64_t b0 = live(&cb);
    PT_CHECK(pdi_force_backend(id) == PD_OK && pdi_forced_backend() == id);
    struct pd_tensor *z = pd_add(x, y), *m = pd_mul(x, y);
    PT_CHECK(z && m);
    PT_CHECK(z->st->backend == id && pd_tensor_allocator(z) == &alloc_b);
    PT_CHECK(live(&cb) - b0 == 2 * 33 * 17 * 4);
    PT_CHECK(pt_same_bits(z, zc));

    /* a kernel it lacks: a clear error naming the backend and the op */
    pd_clear_error();
    struct pd_tensor *bad = pd_exp(x);
    PT_CHECK(bad == NULL && pd_last_status() == PD_ERR_UNSUPPORTED);
    PT_CHECK(strstr(pd_last_error(), "cpu-copy") && strstr(pd_last_error(), "exp"));
    PT_CHECK(live(&cb) - b0 == 2 * 33 * 17 * 4); /* nothing allocated for it */
    pdi_force_backend(-1);
    PT_CHECK(pt_same_bits(m, pd_mul(x, y)));

    /* scratch: an f16 matmul packs its operands to f32 and widens the
     * result, all from cpu-copy's allocator, and frees it */
    struct pd_tensor *a16 = pd_cast(randn(64, 48, PD_F32, g), PD_F16), *b16 = pd_cast(randn(48, 40, PD_F32, g), PD_F16);
    struct pd_tensor *want = pd_matmul(a16, b16, 0, 0);
    struct pd_memory_stats s0, s1;
    pd_allocator_stats(&alloc_b, &s0);
    pdi_force_backend(id);
    struct pd_tensor *got = pd_matmul(a16, b16, 0, 0);
    pdi_force_backend(-1);
    pd_allocator_stats(&alloc_b, &s1);
    PT_CHECK(got && got->st->alloc == &alloc_b);
    PT_CHECK(pt_same_bits(got, want));
    int64_t out_bytes = 64 * 40 * 2, scratch = (s1.total_allocated_bytes - s0.total_allocated_bytes) - out_bytes;
    PT_CHECK(s1.allocated_bytes - s0.allocated_bytes == out_bytes); /* the scratch went back */
    PT_CHECK(scratch >= (64 * 48 + 48 * 40 + 64 * 40) * 4);       /* f32 copies of a, b and the result */
    PT_CHECK(s1.n_allocs - s0.n_allocs >= 4);
    printf("f16 matmul on cpu-copy: %lld bytes of scratch in %lld allocations\n", (long long)scratch,
           (long long)(s1.n_allocs - s0.n_allocs - 1));

    /* a reduction with many outputs keeps its partial results in scratch */
    struct pd_tensor *big = randn(3, 4000, PD_F32, g);
    int axis = 0;
    pd_allocator_stats(&alloc_b, &s0);
    pdi_force_backend(id);
    struct pd_tensor *sm = pd_sum(big, &axis, 1, 0);
    pdi_force_backend(-1);
    pd_allocator_stats(&alloc_b, &s1);
    PT_CHECK(sm && pt_same_bits(sm, pd_sum(big, &axis, 1, 0)));
    PT_CHECK(s1.total_allocated_bytes - s0.total_allocated_bytes >= 4000 * 4 + 3 * 4000 * 8);
    PT_CHECK(pd_scope_end(tok) == PD_OK);
    PT_CHECK(live(&cb) == 0 && cb.bad_frees == 0);

    /* a backend with a fallback: no kernels of its own, CPU's run, its
     * allocator makes the outputs */
    int fid = pdi_backend_register(&fallback_backend);
    PT_CHECK(fid > id);
    tok = pd_scope_begin();
    struct pd_tensor *u = randn(9, 7, PD_F32, g);
    pdi_force_backend(fid);
    struct pd_tensor *eu = pd_exp(u);
    pdi_force_backend(-1);
    PT_CHECK(eu && eu->st->backend == fid && pd_tensor_allocator(eu) == &alloc_f);
    PT_CHECK(pt_same_bits(eu, pd_exp(u)));
    PT_CHECK(pd_scope_end(tok) == PD_OK);
    PT_CHECK(live(&cf) == 0 && cf.bad_frees == 0);
    pd_generator_destroy(g);
}

/* ---- FlashMask scratch under the counting default ---------------------- */
static void check_flashmask_scratch(void)
{
    struct pd_generator *g = pd_generator_create(3);
    int64_t B = 1, S = 256, H = 2, D = 64, sh[4] = {B, S, H, D};
    int tok = pd_scope_begin();
    struct pd_tensor *q = pd_randn(sh, 4, PD_F32, g), *k = pd_randn(sh, 4, PD_F32, g), *v = pd_randn(sh, 4, PD_F32, g);
    struct pd_tensor *want = pd_flashmask_attention(q, k, v, NULL, 1, NULL, 0, 0, NULL);
    struct pd_memory_stats s0, s1;
    pd_allocator_stats(&alloc_a, &s0);
    PT_CHECK(pd_allocator_set_default(&alloc_a) == PD_OK);
    struct pd_tensor *got = pd_keep(pd_flashmask_attention(q, k, v, NULL, 1, NULL, 0, 0, NULL));
    PT_CHECK(pd_allocator_set_default(NULL) == PD_OK);
    pd_allocator_stats(&alloc_a, &s1);
    PT_CHECK(got && pd_tensor_allocator(got) == &alloc_a);
    PT_CHECK(pt_same_bits(got, want));
    /* the packed K^T and V panels alone are S x D floats each */
    int64_t extra = (s1.total_allocated_bytes - s0.total_allocated_bytes) - (s1.allocated_bytes - s0.allocated_bytes);
    PT_CHECK(extra >= 2 * S * D * 4);
    printf("flashmask under the counting default: %lld bytes allocated and freed in the call\n", (long long)extra);
    PT_CHECK(s1.peak_allocated_bytes >= s0.allocated_bytes + S * H * D * 4 + 2 * S * D * 4);
    pd_tensor_release(got);
    PT_CHECK(pd_scope_end(tok) == PD_OK);
    PT_CHECK(live(&ca) == 0 && ca.bad_frees == 0);
    pd_generator_destroy(g);
}

int main(void)
{
    check_builtins();
    check_default();
    check_refused();
    check_third_backend();
    check_flashmask_scratch();
    PT_CHECK(pd_allocator_default() == pd_allocator_host());
    PT_CHECK(pd_live_tensors() == 0);
    PT_DONE();
}
