/* paddle.c — state dicts (include/pd/state.h): names to tensors, in order,
 * with a small open-addressing index so lookups stay O(1) for large models. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "io/file.h"
#include "pd/state.h"

struct entry {
    char *name;
    struct pd_tensor *t;
};

struct pd_state_dict {
    struct entry *e;
    int n, cap;
    int *slot;          /* hash index: entry index + 1, 0 = empty */
    int n_slots;        /* power of two, > 2 * n */
    char **meta_k, **meta_v;
    int n_meta, cap_meta;
    int *meta_slot;     /* the same index for metadata keys (a linear search
                         * made loading 100k keys quadratic) */
    int n_meta_slots;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int *find_slot(const struct pd_state_dict *sd, const char *name)
{
    if (!sd->n_slots) return NULL;
    uint64_t m = (uint64_t)sd->n_slots - 1;
    for (uint64_t i = hash_str(name) & m;; i = (i + 1) & m) {
        int *s = &sd->slot[i];
        if (!*s || !strcmp(sd->e[*s - 1].name, name)) return s;
    }
}

static int rehash(struct pd_state_dict *sd, int n_slots)
{
    int *slot = pdi_calloc((size_t)n_slots, sizeof *slot);
    if (!slot) return pdi_errorf(PD_ERR_NOMEM, "state dict: out of memory");
    free(sd->slot);
    sd->slot = slot;
    sd->n_slots = n_slots;
    for (int i = 0; i < sd->n; i++) *find_slot(sd, sd->e[i].name) = i + 1;
    return PD_OK;
}

struct pd_state_dict *pd_state_dict_create(void)
{
    struct pd_state_dict *sd = pdi_calloc(1, sizeof *sd);
    if (!sd) return pdi_error(PD_ERR_NOMEM, "state dict: out of memory");
    return sd;
}

void pd_state_dict_destroy(struct pd_state_dict *sd)
{
    if (!sd) return;
    for (int i = 0; i < sd->n; i++) {
        free(sd->e[i].name);
        pd_tensor_release(sd->e[i].t);
    }
    for (int i = 0; i < sd->n_meta; i++) {
        free(sd->meta_k[i]);
        free(sd->meta_v[i]);
    }
    free(sd->e);
    free(sd->slot);
    free(sd->meta_k);
    free(sd->meta_v);
    free(sd->meta_slot);
    free(sd);
}

int pd_state_dict_set(struct pd_state_dict *sd, const char *name, struct pd_tensor *t, int replace)
{
    if (!sd || !name || !*name) return pdi_errorf(PD_ERR_INVALID, "state dict: NULL dict or empty name");
    char qb[PDI_QUOTE_BUF];
    if (!t) return pdi_errorf(PD_ERR_NULL, "state dict: NULL tensor for %s", pdi_quote(name, qb, sizeof qb));
    int *s = find_slot(sd, name);
    if (s && *s) {
        if (!replace) return pdi_errorf(PD_ERR_INVALID, "state dict: duplicate name %s", pdi_quote(name, qb, sizeof qb));
        pd_tensor_retain(t);
        pd_tensor_release(sd->e[*s - 1].t);
        sd->e[*s - 1].t = t;
        return PD_OK;
    }
    if (sd->n == sd->cap) {
        int cap = sd->cap ? 2 * sd->cap : 16;
        struct entry *e = pdi_realloc(sd->e, (size_t)cap * sizeof *e);
        if (!e) return pdi_errorf(PD_ERR_NOMEM, "state dict: out of memory");
        sd->e = e;
        sd->cap = cap;
    }
    /* Grow the index first: a failure then leaves the dict as it was. */
    if (2 * (sd->n + 1) >= sd->n_slots && rehash(sd, sd->n_slots ? 2 * sd->n_slots : 64)) return pd_last_status();
    char *copy = pdi_strdup(name);
    if (!copy) return pdi_errorf(PD_ERR_NOMEM, "state dict: out of memory");
    pd_tensor_retain(t);
    sd->e[sd->n++] = (struct entry){copy, t};
    *find_slot(sd, name) = sd->n;
    return PD_OK;
}

int pd_state_dict_add(struct pd_state_dict *sd, const char *name, struct pd_tensor *t)
{
    return pd_state_dict_set(sd, name, t, 0);
}

int pd_state_dict_remove(struct pd_state_dict *sd, const char *name)
{
    int i = pd_state_dict_find(sd, name);
    char qb[PDI_QUOTE_BUF];
    if (i < 0) return pdi_errorf(PD_ERR_INVALID, "state dict: no tensor named %s", pdi_quote(name, qb, sizeof qb));
    free(sd->e[i].name);
    pd_tensor_release(sd->e[i].t);
    memmove(sd->e + i, sd->e + i + 1, (size_t)(sd->n - i - 1) * sizeof *sd->e);
    sd->n--;
    return rehash(sd, sd->n_slots);
}

int pd_state_dict_size(const struct pd_state_dict *sd) { return sd ? sd->n : 0; }

/* Entries are read by index in [0, n): outside it is the caller's error (a
 * lookup by name that misses is an answer, NULL without a message). */
static int index_ok(const struct pd_state_dict *sd, int i, int n, const char *fn)
{
    if (!sd) return 0;
    if (i >= 0 && i < n) return 1;
    pdi_errorf(PD_ERR_INVALID, "%s: index %d outside [0, %d)", fn, i, n);
    return 0;
}

const char *pd_state_dict_name(const struct pd_state_dict *sd, int i)
{
    return index_ok(sd, i, sd ? sd->n : 0, "state_dict_name") ? sd->e[i].name : NULL;
}

struct pd_tensor *pd_state_dict_tensor(const struct pd_state_dict *sd, int i)
{
    return index_ok(sd, i, sd ? sd->n : 0, "state_dict_tensor") ? sd->e[i].t : NULL;
}

int pd_state_dict_find(const struct pd_state_dict *sd, const char *name)
{
    if (!sd || !name) return -1;
    int *s = find_slot(sd, name);
    return s && *s ? *s - 1 : -1;
}

struct pd_tensor *pd_state_dict_get(const struct pd_state_dict *sd, const char *name)
{
    int i = pd_state_dict_find(sd, name);
    return i < 0 ? NULL : sd->e[i].t;
}

int64_t pd_state_dict_numel(const struct pd_state_dict *sd)
{
    int64_t n = 0;
    for (int i = 0; sd && i < sd->n; i++) n += pd_tensor_numel(sd->e[i].t);
    return n;
}

static int *find_meta_slot(const struct pd_state_dict *sd, const char *key)
{
    if (!sd->n_meta_slots) return NULL;
    uint64_t m = (uint64_t)sd->n_meta_slots - 1;
    for (uint64_t i = hash_str(key) & m;; i = (i + 1) & m) {
        int *s = &sd->meta_slot[i];
        if (!*s || !strcmp(sd->meta_k[*s - 1], key)) return s;
    }
}

static int meta_rehash(struct pd_state_dict *sd, int n_slots)
{
    int *slot = pdi_calloc((size_t)n_slots, sizeof *slot);
    if (!slot) return pdi_errorf(PD_ERR_NOMEM, "state dict: out of memory");
    free(sd->meta_slot);
    sd->meta_slot = slot;
    sd->n_meta_slots = n_slots;
    for (int i = 0; i < sd->n_meta; i++) *find_meta_slot(sd, sd->meta_k[i]) = i + 1;
    return PD_OK;
}

int pd_state_dict_set_meta(struct pd_state_dict *sd, const char *key, const char *value)
{
    if (!sd || !key || !value) return pdi_errorf(PD_ERR_INVALID, "state dict: NULL metadata key or value");
    char *v = pdi_strdup(value);
    if (!v) return pdi_errorf(PD_ERR_NOMEM, "state dict: out of memory");
    int *slot = find_meta_slot(sd, key);
    if (slot && *slot) {
        free(sd->meta_v[*slot - 1]);
        sd->meta_v[*slot - 1] = v;
        return PD_OK;
    }
    if (2 * (sd->n_meta + 1) >= sd->n_meta_slots &&
        meta_rehash(sd, sd->n_meta_slots ? 2 * sd->n_meta_slots : 16)) {
        free(v);
        return PD_ERR_NOMEM;
    }
    if (sd->n_meta == sd->cap_meta) {
        int cap = sd->cap_meta ? 2 * sd->cap_meta : 8;
        char **k = pdi_realloc(sd->meta_k, (size_t)cap * sizeof *k);
        if (k) sd->meta_k = k;
        char **vv = k ? pdi_realloc(sd->meta_v, (size_t)cap * sizeof *vv) : NULL;
        if (!vv) {
            free(v);
            return pdi_errorf(PD_ERR_NOMEM, "state dict: out of memory");
        }
        sd->meta_v = vv;
        sd->cap_meta = cap;
    }
    char *k = pdi_strdup(key);
    if (!k) {
        free(v);
        return pdi_errorf(PD_ERR_NOMEM, "state dict: out of memory");
    }
    sd->meta_k[sd->n_meta] = k;
    sd->meta_v[sd->n_meta++] = v;
    *find_meta_slot(sd, k) = sd->n_meta;
    return PD_OK;
}

const char *pd_state_dict_get_meta(const struct pd_state_dict *sd, const char *key)
{
    if (!sd || !key) return NULL;
    int *slot = find_meta_slot(sd, key);
    return slot && *slot ? sd->meta_v[*slot - 1] : NULL;
}

int pd_state_dict_meta_size(const struct pd_state_dict *sd) { return sd ? sd->n_meta : 0; }

const char *pd_state_dict_meta_key(const struct pd_state_dict *sd, int i)
{
    return index_ok(sd, i, sd ? sd->n_meta : 0, "state_dict_meta_key") ? sd->meta_k[i] : NULL;
}

const char *pd_state_dict_meta_value(const struct pd_state_dict *sd, int i)
{
    return index_ok(sd, i, sd ? sd->n_meta : 0, "state_dict_meta_value") ? sd->meta_v[i] : NULL;
}
