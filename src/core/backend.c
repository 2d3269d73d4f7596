/* paddle.c — backends registered at run time, and the kernel table the
 * dispatcher reads.
 *
 * A backend is a struct pdi_backend_def (core/kernel.h): versioned, with
 * required and optional slots. The reference and CPU backends register
 * through it like any other, first, so they get ids PDI_BACKEND_REF and
 * PDI_BACKEND_CPU; their register_kernels run the kernel families of
 * src/kernels/families.def (ref_* for REF, the rest for CPU).
 *
 * Tables (written under `lock` during registration, read without it):
 *   own[b][op][dt]    the kernels backend b registered (pdi_kernel_lookup);
 *   pdi_kernel_table  what a call runs and which backend runs it: row b is
 *                     own[b] with b's fallback filling its gaps (forced),
 *                     the AUTO row the highest-priority backend's kernel.
 *                     One entry read per dispatch, as the fixed 2-D table
 *                     was.
 * Rows are rebuilt after each registration; a kernel registered later by
 * hand (pdi_kernel_register) updates its entry at once.
 */
#include <pthread.h>
#include <string.h>

#include "core/internal.h"

struct pdi_kentry pdi_kernel_table[PDI_BACKEND_MAX + 1][PD_OP_COUNT][PD_DTYPE_COUNT];
const struct pd_allocator *pdi_backend_allocs[PDI_BACKEND_MAX];
PDI_TLS int pdi_kernel_row = PDI_KERNEL_ROW_AUTO;
int pdi_kernels_ready;

static pdi_kernel_fn own[PDI_BACKEND_MAX][PD_OP_COUNT][PD_DTYPE_COUNT];
static const struct pdi_backend_def *defs[PDI_BACKEND_MAX];
static int fallback_of[PDI_BACKEND_MAX]; /* id, or -1 */
static int n_backends;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static int valid_key(int be, enum pd_op op, enum pd_dtype dt)
{
    return (unsigned)be < PDI_BACKEND_MAX && (unsigned)op < PD_OP_COUNT && (unsigned)dt < PD_DTYPE_COUNT;
}

/* Entry (op, dt) of every row from own[] (fallbacks point to earlier ids,
 * so one pass in id order resolves chains). */
static void resolve(enum pd_op op, enum pd_dtype dt)
{
    int best = -1;
    for (int b = 0; b < n_backends; b++) {
        pdi_kernel_fn fn = own[b][op][dt];
        if (!fn && fallback_of[b] >= 0) fn = pdi_kernel_table[fallback_of[b]][op][dt].fn;
        pdi_kernel_table[b][op][dt] = (struct pdi_kentry){fn, b};
        if (own[b][op][dt] && (best < 0 || defs[b]->priority > defs[best]->priority)) best = b;
    }
    pdi_kernel_table[PDI_KERNEL_ROW_AUTO][op][dt] =
        (struct pdi_kentry){best >= 0 ? own[best][op][dt] : NULL, best >= 0 ? best : PDI_BACKEND_CPU};
}

static void resolve_all(void)
{
    for (int op = 0; op < PD_OP_COUNT; op++)
        for (int d = 0; d < PD_DTYPE_COUNT; d++) resolve((enum pd_op)op, (enum pd_dtype)d);
}

void pdi_kernel_register(int be, enum pd_op op, enum pd_dtype dt, pdi_kernel_fn fn)
{
    if (!valid_key(be, op, dt)) return;
    own[be][op][dt] = fn;
    if (be < n_backends) resolve(op, dt);
}

void pdi_kernel_register_mask(int be, enum pd_op op, unsigned mask, pdi_kernel_fn fn)
{
    for (int d = 0; d < PD_DTYPE_COUNT; d++)
        if (mask & (1u << d)) pdi_kernel_register(be, op, (enum pd_dtype)d, fn);
}

void pdi_kernel_reuse(int be, int from, enum pd_op op, unsigned mask)
{
    if ((unsigned)from >= PDI_BACKEND_MAX) return;
    for (int d = 0; d < PD_DTYPE_COUNT; d++)
        if ((mask & (1u << d)) && valid_key(be, op, (enum pd_dtype)d) && own[from][op][d])
            pdi_kernel_register(be, op, (enum pd_dtype)d, own[from][op][d]);
}

pdi_kernel_fn pdi_kernel_lookup(int be, enum pd_op op, enum pd_dtype dt)
{
    pdi_kernels_init();
    return valid_key(be, op, dt) ? own[be][op][dt] : NULL;
}

int pdi_kernel_missing(enum pd_op op, enum pd_dtype dt)
{
    int row = pdi_kernel_row;
    if (row == PDI_KERNEL_ROW_AUTO)
        return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: no kernel for dtype %s", pdi_op_name(op), pd_dtype_name(dt));
    const struct pdi_backend_def *d = defs[row];
    return pdi_errorf(PD_ERR_UNSUPPORTED, "%s: backend '%s' (forced) has no kernel for dtype %s%s%s", pdi_op_name(op),
                      d->name, pd_dtype_name(dt), fallback_of[row] >= 0 ? ", nor has its fallback " : "",
                      fallback_of[row] >= 0 ? defs[fallback_of[row]]->name : "");
}

/* ---- registration ------------------------------------------------------ */
static int check_def(const struct pdi_backend_def *def, int *fallback)
{
    *fallback = -1;
    if (!def) return pdi_errorf(PD_ERR_NULL, "pdi_backend_register: NULL backend");
    const char *name = def->name ? def->name : "(unnamed)";
    if (def->abi_version < 1 || def->abi_version > PDI_BACKEND_ABI)
        return pdi_errorf(PD_ERR_INVALID,
                          "pdi_backend_register: backend '%s' has abi_version %u; this library reads 1 to %d", name,
                          (unsigned)def->abi_version, PDI_BACKEND_ABI);
    if (!def->name || !def->name[0])
        return pdi_errorf(PD_ERR_INVALID, "pdi_backend_register: a backend needs a name");
    if (!def->register_kernels)
        return pdi_errorf(PD_ERR_INVALID, "pdi_backend_register: backend '%s' has no register_kernels slot (required)",
                          name);
    if (def->allocator) {
        int rc = pdi_allocator_check(def->allocator, "pdi_backend_register");
        if (rc) return rc;
    }
    for (int b = 0; b < n_backends; b++) {
        if (strcmp(defs[b]->name, name) == 0)
            return pdi_errorf(PD_ERR_INVALID, "pdi_backend_register: a backend named '%s' is registered (id %d)", name,
                              b);
        if (def->fallback && strcmp(defs[b]->name, def->fallback) == 0) *fallback = b;
    }
    if (def->fallback && *fallback < 0)
        return pdi_errorf(PD_ERR_INVALID,
                          "pdi_backend_register: backend '%s' falls back to '%s', which is not registered", name,
                          def->fallback);
    if (n_backends == PDI_BACKEND_MAX)
        return pdi_errorf(PD_ERR_INVALID, "pdi_backend_register: too many backends (at most %d)", PDI_BACKEND_MAX);
    return PD_OK;
}

static int register_locked(const struct pdi_backend_def *def)
{
    int fb, rc = check_def(def, &fb);
    if (rc) return rc;
    int id = n_backends;
    defs[id] = def;
    fallback_of[id] = fb;
    pdi_backend_allocs[id] = def->allocator;
    __atomic_store_n(&n_backends, id + 1, __ATOMIC_RELEASE); /* after defs[id]: readers take no lock */
    struct pdi_backend_reg r = {id, def};
    def->register_kernels(&r);
    resolve_all();
    return id;
}

/* The built-in backends: the families of families.def, split by prefix. */
static const struct {
    const char *name;
    void (*fn)(void);
} families[] = {
#define PDI_FAMILY(name) {#name, pdi_register_##name},
#include "kernels/families.def"
#undef PDI_FAMILY
};

static void register_families(struct pdi_backend_reg *r)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if ((strncmp(families[i].name, "ref_", 4) == 0) == (r->id == PDI_BACKEND_REF)) families[i].fn();
}

static const struct pdi_backend_def ref_backend = {
    .abi_version = PDI_BACKEND_ABI,
    .name = "ref",
    .priority = 0,
    .register_kernels = register_families,
};
static const struct pdi_backend_def cpu_backend = {
    .abi_version = PDI_BACKEND_ABI,
    .name = "cpu",
    .priority = 100,
    .register_kernels = register_families,
};

static void builtin_init(void)
{
    pthread_mutex_lock(&lock);
    register_locked(&ref_backend); /* ids 0 and 1: nothing registered before */
    register_locked(&cpu_backend);
    pthread_mutex_unlock(&lock);
    __atomic_store_n(&pdi_kernels_ready, 1, __ATOMIC_RELEASE);
}

void pdi_kernels_init_once(void) { pthread_once(&builtin_once, builtin_init); }

int pdi_backend_register(const struct pdi_backend_def *def)
{
    pdi_kernels_init();
    pthread_mutex_lock(&lock);
    int rc = register_locked(def);
    pthread_mutex_unlock(&lock);
    return rc;
}

int pdi_backend_count(void)
{
    pdi_kernels_init();
    return __atomic_load_n(&n_backends, __ATOMIC_ACQUIRE);
}

const struct pdi_backend_def *pdi_backend_get(int id)
{
    return id >= 0 && id < pdi_backend_count() ? defs[id] : NULL;
}

int pdi_backend_find(const char *name)
{
    if (!name) return -1;
    int n = pdi_backend_count();
    for (int b = 0; b < n; b++)
        if (strcmp(defs[b]->name, name) == 0) return b;
    return -1;
}

int pdi_backend_synchronize(int id)
{
    const struct pdi_backend_def *d = pdi_backend_get(id);
    if (!d) return pdi_errorf(PD_ERR_INVALID, "pdi_backend_synchronize: no backend with id %d", id);
    return d->synchronize ? d->synchronize(d->ctx) : PD_OK;
}

int pdi_force_backend(int backend)
{
    if (backend < 0) {
        pdi_kernel_row = PDI_KERNEL_ROW_AUTO;
        return PD_OK;
    }
    if (backend >= pdi_backend_count())
        return pdi_errorf(PD_ERR_INVALID, "pdi_force_backend: no backend with id %d", backend);
    pdi_kernel_row = backend;
    return PD_OK;
}

int pdi_forced_backend(void) { return pdi_kernel_row == PDI_KERNEL_ROW_AUTO ? -1 : pdi_kernel_row; }
