/* paddle.c — text datasets (include/pd/data.h): tokenize once, keep the ids,
 * serve [B, T] int64 windows.
 *
 * Invariants: the ids of the whole text are stored once, as uint16 when the
 * vocabulary fits (half the memory of int32), else int32; the train split is
 * ids [0, n_train), validation [n_train, n). A file is read in chunks of
 * CHUNK bytes; a chunk's last pre-token piece is carried into the next read
 * because it may continue there, so the ids equal those of encoding the whole
 * file at once (pieces end where their bytes say, see pdi_pretok_end).
 *
 * Randomness: pd_dataset_batch draws its B window starts from Philox words
 * (seed, offset .. offset + 2B) of the generator and advances its offset like
 * every other random call, so a generator state is a data position. The
 * words are drawn on the host, not by a random op: they are indices into
 * the host-side ids, never tensor data (docs/design.md §1). The batch's
 * tensors are host data too: made by the empty op and filled through the
 * host-write entry point (pdi_from_host), so observers see both.
 *
 * Ownership: the dataset owns its ids; batches are fresh tensors owned by the
 * caller's scope (or by the caller outside scopes).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"
#include "io/file.h"
#include "pd/dist.h"

#define CHUNK (1 << 20)

struct pd_text_dataset {
    int vocab;
    int64_t n, n_train;
    uint16_t *u16; /* one of u16 / i32 holds the ids */
    int32_t *i32;
};

static int check_fraction(double f)
{
    if (!(f >= 0 && f < 1))
        return pdi_errorf(PD_ERR_INVALID, "text dataset: val_fraction must be in [0, 1), got %g", f);
    return PD_OK;
}

/* Takes ownership of ids->v. */
static struct pd_text_dataset *finish(struct pdi_ids *ids, int vocab, double val_fraction, const char *what)
{
    if (ids->n == 0) {
        free(ids->v);
        return pdi_error(PD_ERR_INVALID, "text dataset: %s is empty", what);
    }
    struct pd_text_dataset *ds = pdi_calloc(1, sizeof *ds);
    if (!ds) {
        free(ids->v);
        return pdi_error(PD_ERR_NOMEM, "text dataset: out of memory");
    }
    ds->vocab = vocab;
    ds->n = ids->n;
    ds->n_train = ids->n - (int64_t)floor((double)ids->n * val_fraction);
    if (vocab <= 65536) {
        ds->u16 = pdi_malloc((size_t)ids->n * sizeof *ds->u16);
        if (!ds->u16) {
            free(ids->v);
            free(ds);
            return pdi_error(PD_ERR_NOMEM, "text dataset: out of memory for %lld ids", (long long)ids->n);
        }
        for (int64_t i = 0; i < ids->n; i++) ds->u16[i] = (uint16_t)ids->v[i];
        free(ids->v);
    } else {
        ds->i32 = ids->v;
    }
    ids->v = NULL;
    return ds;
}

struct pd_text_dataset *pd_text_dataset_from_parts(const void *train, size_t train_len, const void *val, size_t val_len,
                                                   const struct pd_tokenizer *tok)
{
    if ((!train && train_len) || (!val && val_len)) return pdi_error(PD_ERR_INVALID, "text dataset: text is NULL");
    if (!train_len || !val_len)
        return pdi_error(PD_ERR_INVALID, "text dataset: the %s text is empty", train_len ? "validation" : "training");
    struct pd_tokenizer *own = NULL;
    if (!tok && !(tok = own = pd_tokenizer_byte_create())) return NULL;
    struct pdi_ids ids = {0};
    int rc = pdi_tokenizer_encode_append(tok, train, train_len, 0, &ids);
    int64_t n_train = ids.n;
    if (!rc) rc = pdi_tokenizer_encode_append(tok, val, val_len, 0, &ids);
    int vocab = tok->n_tok;
    pd_tokenizer_destroy(own);
    if (rc) {
        free(ids.v);
        return NULL;
    }
    struct pd_text_dataset *ds = finish(&ids, vocab, 0, "the text");
    if (ds) ds->n_train = n_train;
    return ds;
}

struct pd_text_dataset *pd_text_dataset_from_memory(const void *text, size_t len, const struct pd_tokenizer *tok,
                                                    double val_fraction)
{
    if (check_fraction(val_fraction)) return NULL;
    if (!text && len) return pdi_error(PD_ERR_INVALID, "text dataset: text is NULL");
    struct pd_tokenizer *own = NULL;
    if (!tok && !(tok = own = pd_tokenizer_byte_create())) return NULL;
    struct pdi_ids ids = {0};
    int rc = pdi_tokenizer_encode_append(tok, text, len, 0, &ids);
    int vocab = tok->n_tok;
    pd_tokenizer_destroy(own);
    if (rc) {
        free(ids.v);
        return NULL;
    }
    return finish(&ids, vocab, val_fraction, "the text");
}

/* Start of the last piece of s[0..n) (which may continue past n). */
static size_t last_piece_start(const struct pd_tokenizer *tok, const unsigned char *s, size_t n)
{
    if (tok->hf) return pdi_hf_cut(s, n);
    if (tok->n_merges == 0) return n; /* bytes: nothing spans a chunk boundary */
    size_t last = 0;
    for (size_t i = 0; i < n;) {
        last = i;
        i = pdi_pretok_end(s, n, i);
    }
    return last;
}

struct pd_text_dataset *pd_text_dataset_open(const char *path, const struct pd_tokenizer *tok, double val_fraction)
{
    if (!path) return pdi_error(PD_ERR_INVALID, "text dataset: path is NULL");
    if (check_fraction(val_fraction)) return NULL;
    char qb[PDI_QUOTE_BUF];
    FILE *f = pdi_file_fopen_read(path, "text dataset"); /* regular files only, never blocks */
    if (!f) return NULL;
    struct pd_tokenizer *own = NULL;
    if (!tok && !(tok = own = pd_tokenizer_byte_create())) {
        fclose(f);
        return NULL;
    }
    struct pdi_ids ids = {0};
    size_t cap = 2 * CHUNK, have = 0;
    int continued = 0;
    unsigned char *buf = pdi_malloc(cap);
    int rc = buf ? PD_OK : pdi_errorf(PD_ERR_NOMEM, "text dataset: out of memory");
    while (rc == PD_OK) {
        if (cap - have < CHUNK) { /* a carried piece is at most PDI_PIECE_MAX bytes, but stay general */
            unsigned char *b = pdi_realloc(buf, cap * 2);
            if (!b) {
                rc = pdi_errorf(PD_ERR_NOMEM, "text dataset: out of memory");
                break;
            }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + have, 1, CHUNK, f);
        if (got < CHUNK && ferror(f)) {
            rc = pdi_errorf(PD_ERR_IO, "text dataset: read error on %s: %s", pdi_quote(path, qb, sizeof qb), strerror(errno));
            break;
        }
        have += got;
        int eof = got < CHUNK;
        size_t cut = eof ? have : last_piece_start(tok, buf, have);
        rc = pdi_tokenizer_encode_append(tok, buf, cut, continued, &ids);
        continued |= cut > 0;
        memmove(buf, buf + cut, have - cut);
        have -= cut;
        if (eof) break;
    }
    int vocab = tok->n_tok;
    free(buf);
    fclose(f);
    pd_tokenizer_destroy(own);
    if (rc) {
        free(ids.v);
        return NULL;
    }
    char what[300];
    snprintf(what, sizeof what, "file %s", pdi_quote(path, qb, sizeof qb));
    return finish(&ids, vocab, val_fraction, what);
}

void pd_text_dataset_destroy(struct pd_text_dataset *ds)
{
    if (!ds) return;
    free(ds->u16);
    free(ds->i32);
    free(ds);
}

int pd_text_dataset_vocab_size(const struct pd_text_dataset *ds) { return ds ? ds->vocab : 0; }

static int split_range(const struct pd_text_dataset *ds, enum pd_split split, int64_t *start, int64_t *n)
{
    *start = *n = 0;
    if (!ds) return pdi_errorf(PD_ERR_NULL, "text dataset: dataset is NULL");
    if (split == PD_SPLIT_TRAIN) {
        *start = 0;
        *n = ds->n_train;
    } else if (split == PD_SPLIT_VAL) {
        *start = ds->n_train;
        *n = ds->n - ds->n_train;
    } else {
        return pdi_errorf(PD_ERR_INVALID, "text dataset: unknown split %d", (int)split);
    }
    return PD_OK;
}

int64_t pd_text_dataset_num_tokens(const struct pd_text_dataset *ds, enum pd_split split)
{
    int64_t s, n;
    if (split_range(ds, split, &s, &n)) return pd_last_status();
    return n;
}

static inline int64_t id_at(const struct pd_text_dataset *ds, int64_t i) { return ds->u16 ? ds->u16[i] : ds->i32[i]; }

int pd_text_dataset_ids(const struct pd_text_dataset *ds, enum pd_split split, int64_t start, int64_t n, int32_t *out)
{
    int64_t s0, len;
    if (split_range(ds, split, &s0, &len)) return pd_last_status();
    if (start < 0 || n < 0 || start > len - n || (!out && n))
        return pdi_errorf(PD_ERR_INVALID, "text dataset: %lld ids from %lld outside the split's %lld tokens",
                          (long long)n, (long long)start, (long long)len);
    for (int64_t i = 0; i < n; i++) out[i] = (int32_t)id_at(ds, s0 + start + i);
    return PD_OK;
}

static const char *split_name(enum pd_split s) { return s == PD_SPLIT_TRAIN ? "train" : "validation"; }

/* Tokens the windows of this process read from the store (each window:
 * T + 1 ids), for pdi_dataset_tokens_read. */
static int64_t tokens_read;
int64_t pdi_dataset_tokens_read(void) { return __atomic_load_n(&tokens_read, __ATOMIC_RELAXED); }

/* [B, T] inputs and targets from window starts (absolute ids positions);
 * B may be 0 (a rank with no rows). */
static int fill_windows(const struct pd_text_dataset *ds, const int64_t *starts, int batch, int seq_len,
                        struct pd_tensor **ids, struct pd_tensor **targets)
{
    int64_t shape[2] = {batch, seq_len}, n = (int64_t)batch * seq_len;
    size_t bytes = sizeof(int64_t) * (size_t)(n ? n : 1);
    int64_t *xd = pdi_malloc(bytes), *yd = pdi_malloc(bytes);
    if (!xd || !yd) {
        free(xd);
        free(yd);
        return pdi_errorf(PD_ERR_NOMEM, "dataset batch: out of memory for [%d, %d]", batch, seq_len);
    }
    __atomic_fetch_add(&tokens_read, (int64_t)batch * ((int64_t)seq_len + 1), __ATOMIC_RELAXED);
    for (int b = 0; b < batch; b++) {
        int64_t s = starts[b];
        for (int t = 0; t < seq_len; t++) {
            xd[(int64_t)b * seq_len + t] = id_at(ds, s + t);
            yd[(int64_t)b * seq_len + t] = id_at(ds, s + t + 1);
        }
    }
    /* host data: the empty op, then the host-write entry point */
    struct pd_tensor *x = pdi_from_host(xd, shape, 2, PD_I64, "dataset_batch");
    struct pd_tensor *y = x ? pdi_from_host(yd, shape, 2, PD_I64, "dataset_batch") : NULL;
    free(xd);
    free(yd);
    if (!x || !y) {
        pd_tensor_release(x);
        return pdi_status_of(NULL, "dataset batch");
    }
    *ids = pdi_scope_add(x);
    *targets = pdi_scope_add(y);
    return PD_OK;
}

/* fn names the caller in the messages. */
static int check_shape(const char *fn, const struct pd_text_dataset *ds, enum pd_split split, int batch, int seq_len,
                       int64_t *s0, int64_t *n)
{
    *s0 = *n = 0;
    if (!ds) return pdi_errorf(PD_ERR_NULL, "%s: dataset is NULL", fn);
    if (split_range(ds, split, s0, n)) return pdi_errorf(PD_ERR_INVALID, "%s: unknown split %d", fn, (int)split);
    if (batch <= 0 || seq_len <= 0)
        return pdi_errorf(PD_ERR_INVALID, "%s: batch (%d) and seq_len (%d) must be positive", fn, batch, seq_len);
    if (*n < (int64_t)seq_len + 1)
        return pdi_errorf(PD_ERR_INVALID, "%s: the %s split has %lld tokens, fewer than seq_len + 1 = %lld", fn,
                          split_name(split), (long long)*n, (long long)seq_len + 1); /* in 64 bits: seq_len may be INT_MAX */
    return PD_OK;
}

/* The window starts of rows [r0, r1) of a random batch of `batch` rows
 * (absolute positions), drawn from gen's words 2 r0 .. 2 r1 of the batch's
 * block; gen advances for the whole batch whatever the rows. */
static int draw_starts(struct pd_generator *gen, int64_t s0, int64_t n, int batch, int seq_len, int r0, int r1,
                       int64_t *starts)
{
    if (!gen) gen = pd_default_generator();
    uint64_t seed, off;
    pd_generator_get_state(gen, &seed, &off);
    /* two 32-bit words per start: a 64-bit uniform, mapped to [0, range)
     * by a multiply-high (bias below 2^-40 for any dataset that fits) */
    uint32_t *w = pdi_malloc((size_t)(r1 > r0 ? r1 - r0 : 1) * 2 * sizeof *w);
    if (!w) return pdi_errorf(PD_ERR_NOMEM, "dataset batch: out of memory");
    pd_philox_fill(seed, off + (uint64_t)2 * (uint64_t)r0, w, 2 * (int64_t)(r1 - r0));
    /* same counter reservation as the core's random ops: 4-word blocks */
    pd_generator_set_state(gen, seed, off + (((uint64_t)2 * batch + 3) & ~(uint64_t)3));
    uint64_t range = (uint64_t)(n - seq_len); /* starts 0 .. n - T - 1 */
    for (int b = 0; b < r1 - r0; b++) {
        uint64_t u = ((uint64_t)w[2 * b] << 32) | w[2 * b + 1];
        starts[b] = s0 + (int64_t)(((unsigned __int128)u * range) >> 64);
    }
    free(w);
    return PD_OK;
}

int pd_dataset_batch(const struct pd_text_dataset *ds, enum pd_split split, int batch, int seq_len,
                     struct pd_generator *gen, struct pd_tensor **ids, struct pd_tensor **targets)
{
    if (!ids || !targets) return pdi_errorf(PD_ERR_INVALID, "dataset batch: output pointers are NULL");
    *ids = *targets = NULL;
    int64_t s0, n;
    int rc = check_shape("dataset batch", ds, split, batch, seq_len, &s0, &n);
    if (rc) return rc;
    int64_t *starts = pdi_malloc((size_t)batch * sizeof *starts);
    if (!starts) return pdi_errorf(PD_ERR_NOMEM, "dataset batch: out of memory");
    rc = draw_starts(gen, s0, n, batch, seq_len, 0, batch, starts);
    if (!rc) rc = fill_windows(ds, starts, batch, seq_len, ids, targets);
    free(starts);
    return rc;
}

static void rows_of(struct pd_mesh *m, int axis, int b, int *r0, int *r1);
static int dist_windows(const struct pd_text_dataset *ds, const int64_t *starts, int b, int r0, int r1, int seq_len,
                        struct pd_mesh *m, int axis, struct pd_tensor **ids, struct pd_tensor **targets);

/* ---- sequential evaluation -------------------------------------------- */
struct pd_dataset_iter {
    const struct pd_text_dataset *ds;
    int64_t s0, n_windows, next;
    int batch, seq_len;
    struct pd_mesh *mesh; /* pd_dataset_iter_create_dist: held */
    int axis;             /* the data-parallel axis, -1: every rank reads every row */
};

struct pd_dataset_iter *pd_dataset_iter_create(const struct pd_text_dataset *ds, enum pd_split split, int batch,
                                               int seq_len)
{
    int64_t s0, n;
    if (check_shape("dataset batch", ds, split, batch, seq_len, &s0, &n)) return NULL;
    struct pd_dataset_iter *it = pdi_calloc(1, sizeof *it);
    if (!it) return pdi_error(PD_ERR_NOMEM, "dataset iter: out of memory");
    it->ds = ds;
    it->s0 = s0;
    it->n_windows = (n - 1) / seq_len;
    it->batch = batch;
    it->seq_len = seq_len;
    return it;
}

void pd_dataset_iter_destroy(struct pd_dataset_iter *it)
{
    if (!it) return;
    pd_mesh_release(it->mesh);
    free(it);
}
int64_t pd_dataset_iter_num_windows(const struct pd_dataset_iter *it) { return it ? it->n_windows : 0; }
void pd_dataset_iter_reset(struct pd_dataset_iter *it)
{
    if (it) it->next = 0;
}

int pd_dataset_iter_next(struct pd_dataset_iter *it, struct pd_tensor **ids, struct pd_tensor **targets)
{
    if (!ids || !targets) return pdi_errorf(PD_ERR_INVALID, "dataset iter: output pointers are NULL");
    *ids = *targets = NULL;
    if (!it) return pdi_errorf(PD_ERR_NULL, "dataset iter: iterator is NULL");
    int64_t left = it->n_windows - it->next;
    if (left <= 0) return 0;
    int b = left < it->batch ? (int)left : it->batch;
    int r0 = 0, r1 = b;
    if (it->mesh) rows_of(it->mesh, it->axis, b, &r0, &r1);
    int64_t *starts = pdi_malloc((size_t)(b ? b : 1) * sizeof *starts);
    if (!starts) return pdi_errorf(PD_ERR_NOMEM, "dataset iter: out of memory");
    for (int i = r0; i < r1; i++) starts[i - r0] = it->s0 + (it->next + i) * it->seq_len;
    int rc = it->mesh ? dist_windows(it->ds, starts, b, r0, r1, it->seq_len, it->mesh, it->axis, ids, targets)
                      : fill_windows(it->ds, starts, b, it->seq_len, ids, targets);
    free(starts);
    if (rc) return rc;
    it->next += b;
    return b;
}

/* ---- distributed loading (include/pd/dist.h) ------------------------------
 * Each rank reads the rows of the global batch that the split rule of
 * include/pd/dist.h gives its coordinate on the data-parallel axis, and
 * wraps them as its piece (Shard(0) on that axis, Replicate elsewhere): no
 * communication, and the global batch is the single-process one. */

/* Rows [r0, r1) of a batch of b rows for this rank (none outside the mesh). */
static void rows_of(struct pd_mesh *m, int axis, int b, int *r0, int *r1)
{
    *r0 = 0, *r1 = b;
    if (!pd_mesh_contains(m)) {
        *r1 = 0;
    } else if (axis >= 0) {
        int64_t s, e;
        pd_dist_piece(b, pd_mesh_size(m, axis), pd_mesh_coord(m, axis), &s, &e);
        *r0 = (int)s, *r1 = (int)e;
    }
}

/* Rows [r0, r1) of a [b, T] batch from their starts, as distributed tensors. */
static int dist_windows(const struct pd_text_dataset *ds, const int64_t *starts, int b, int r0, int r1, int seq_len,
                        struct pd_mesh *m, int axis, struct pd_tensor **ids, struct pd_tensor **targets)
{
    struct pd_placement pl[PD_MAX_MESH_DIMS];
    for (int a = 0; a < pd_mesh_ndim(m); a++) pl[a] = a == axis ? pd_shard(0) : pd_replicate();
    int64_t shape[2] = {b, seq_len};
    int tok = pd_scope_begin();
    struct pd_tensor *x = NULL, *y = NULL;
    int rc = fill_windows(ds, starts, r1 - r0, seq_len, &x, &y);
    if (!rc) {
        x = pd_dtensor_from_local(x, shape, m, pl);
        y = x ? pd_dtensor_from_local(y, shape, m, pl) : NULL;
        rc = x && y ? PD_OK : pd_last_status();
    }
    if (!rc) *ids = pd_keep(x), *targets = pd_keep(y);
    pd_scope_end(tok);
    return rc;
}

/* The mesh and axis arguments: the axis index (-1 for NULL) or a status. */
static int dist_axis(const char *fn, struct pd_mesh *m, const char *axis, int *k)
{
    *k = -1;
    if (!m) return pdi_errorf(PD_ERR_NULL, "%s: mesh is NULL", fn);
    *k = axis ? pd_mesh_axis(m, axis) : -1;
    if (axis && *k < 0) {
        char qb[PDI_QUOTE_BUF];
        return pdi_errorf(PD_ERR_INVALID, "%s: the mesh has no axis %s", fn, pdi_quote(axis, qb, sizeof qb));
    }
    return PD_OK;
}

int pd_dataset_batch_dist(const struct pd_text_dataset *ds, enum pd_split split, int batch, int seq_len,
                          struct pd_generator *gen, struct pd_mesh *m, const char *axis, struct pd_tensor **ids,
                          struct pd_tensor **targets)
{
    const char *fn = "dataset_batch_dist";
    if (!ids || !targets) return pdi_errorf(PD_ERR_INVALID, "%s: output pointers are NULL", fn);
    *ids = *targets = NULL;
    int64_t s0, n;
    int k, r0, r1, rc = dist_axis(fn, m, axis, &k);
    if (!rc) rc = check_shape(fn, ds, split, batch, seq_len, &s0, &n);
    if (rc) return rc;
    rows_of(m, k, batch, &r0, &r1);
    int64_t *starts = pdi_malloc((size_t)(r1 > r0 ? r1 - r0 : 1) * sizeof *starts);
    if (!starts) return pdi_errorf(PD_ERR_NOMEM, "%s: out of memory", fn);
    rc = draw_starts(gen, s0, n, batch, seq_len, r0, r1, starts);
    if (!rc) rc = dist_windows(ds, starts, batch, r0, r1, seq_len, m, k, ids, targets);
    free(starts);
    return rc;
}

struct pd_dataset_iter *pd_dataset_iter_create_dist(const struct pd_text_dataset *ds, enum pd_split split, int batch,
                                                    int seq_len, struct pd_mesh *m, const char *axis)
{
    const char *fn = "dataset_iter_create_dist";
    int k;
    int64_t s0, n;
    if (dist_axis(fn, m, axis, &k) || check_shape(fn, ds, split, batch, seq_len, &s0, &n)) return NULL;
    struct pd_dataset_iter *it = pd_dataset_iter_create(ds, split, batch, seq_len);
    if (!it) return NULL;
    pd_mesh_retain(m);
    it->mesh = m;
    it->axis = k;
    return it;
}
