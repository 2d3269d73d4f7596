/* paddle.c — tokenizers (include/pd/data.h): byte-level and byte-level BPE,
 * encode/decode, the pre-tokenizer, and the JSON format.
 *
 * Invariants: ids 0..255 are the bytes; id 256 + r is merge r, whose two
 * parts are smaller ids; special tokens follow the merges, so adding a merge
 * after a special token is refused. tok[id] holds the bytes of every id (a
 * special token's text), so decode is a concatenation. The rank map sends
 * pdi_pair_key(a, b) to r.
 *
 * Ownership: the tokenizer owns its arrays and the map; encode/decode return
 * malloc'd buffers the caller frees.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "data/data_internal.h"
#include "io/file.h"

/* ---- u64 map ------------------------------------------------------------ */
static int map_alloc(struct pdi_u64map *m, size_t cap)
{
    m->keys = pdi_malloc(cap * sizeof *m->keys);
    m->vals = pdi_malloc(cap * sizeof *m->vals);
    if (!m->keys || !m->vals) {
        free(m->keys);
        free(m->vals);
        return PD_ERR_NOMEM;
    }
    memset(m->keys, 0xff, cap * sizeof *m->keys);
    m->cap = cap;
    m->n = 0;
    return PD_OK;
}

struct pdi_u64map *pdi_u64map_create(size_t expect)
{
    struct pdi_u64map *m = pdi_calloc(1, sizeof *m);
    if (!m) return NULL;
    size_t cap = 16;
    while (cap < 2 * expect + 2) cap *= 2;
    if (map_alloc(m, cap)) {
        free(m);
        return NULL;
    }
    return m;
}

void pdi_u64map_destroy(struct pdi_u64map *m)
{
    if (!m) return;
    free(m->keys);
    free(m->vals);
    free(m);
}

int32_t pdi_u64map_get(const struct pdi_u64map *m, uint64_t key)
{
    size_t mask = m->cap - 1;
    for (size_t i = pdi_mix64(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == key) return m->vals[i];
        if (m->keys[i] == PDI_U64MAP_EMPTY) return -1;
    }
}

static void map_insert_raw(struct pdi_u64map *m, uint64_t key, int32_t val)
{
    size_t mask = m->cap - 1;
    for (size_t i = pdi_mix64(key) & mask;; i = (i + 1) & mask) {
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return;
        }
        if (m->keys[i] == PDI_U64MAP_EMPTY) {
            m->keys[i] = key;
            m->vals[i] = val;
            m->n++;
            return;
        }
    }
}

int pdi_u64map_put(struct pdi_u64map *m, uint64_t key, int32_t val)
{
    if (2 * (m->n + 1) >= m->cap) {
        struct pdi_u64map old = *m;
        if (map_alloc(m, old.cap * 2)) {
            *m = old;
            return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory growing a hash map");
        }
        for (size_t i = 0; i < old.cap; i++)
            if (old.keys[i] != PDI_U64MAP_EMPTY) map_insert_raw(m, old.keys[i], old.vals[i]);
        free(old.keys);
        free(old.vals);
    }
    map_insert_raw(m, key, val);
    return PD_OK;
}

/* ---- pre-tokenizer ------------------------------------------------------ */
enum { C_NL, C_WS, C_L, C_D, C_P };

static int byte_class(unsigned char c)
{
    if (c == '\n' || c == '\r') return C_NL;
    if (c == ' ' || c == '\t' || c == '\v' || c == '\f') return C_WS;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return C_L;
    if (c >= '0' && c <= '9') return C_D;
    return C_P;
}

/* Each piece's end depends only on its own bytes and the one after it, which
 * is what lets a stream be encoded chunk by chunk (see dataset.c). */
size_t pdi_pretok_end(const unsigned char *s, size_t n, size_t i)
{
    size_t lim = n - i > PDI_PIECE_MAX ? i + PDI_PIECE_MAX : n;
    int c = byte_class(s[i]);
    if (c == C_NL) return i + 1;
    size_t j = i;
    if (c == C_WS) {
        /* " word": one space joins the run of letters/digits/symbols after it */
        if (s[i] == ' ' && i + 1 < lim && byte_class(s[i + 1]) >= C_L) {
            c = byte_class(s[i + 1]);
            j = i + 1;
        } else {
            while (j < lim && byte_class(s[j]) == C_WS) j++;
            /* leave the last space to the word that follows */
            if (j < n && j - i > 1 && s[j - 1] == ' ' && byte_class(s[j]) >= C_L) j--;
            return j;
        }
    }
    while (j < lim && byte_class(s[j]) == c) j++;
    return j;
}

/* ---- construction ------------------------------------------------------- */
static int push_token(struct pd_tokenizer *tok, const unsigned char *bytes, size_t len)
{
    if (tok->n_tok >= PD_TOKENIZER_MAX_VOCAB)
        return pdi_errorf(PD_ERR_INVALID, "tokenizer: more than the limit of %d ids", PD_TOKENIZER_MAX_VOCAB);
    if (tok->n_tok == tok->cap_tok) {
        int cap = tok->cap_tok ? tok->cap_tok * 2 : 512;
        unsigned char **t = pdi_realloc(tok->tok, (size_t)cap * sizeof *t);
        if (!t) return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory");
        tok->tok = t;
        size_t *l = pdi_realloc(tok->tok_len, (size_t)cap * sizeof *l);
        if (!l) return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory");
        tok->tok_len = l;
        tok->cap_tok = cap;
    }
    unsigned char *b = pdi_malloc(len ? len : 1);
    if (!b) return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory");
    if (len) memcpy(b, bytes, len);
    tok->tok[tok->n_tok] = b;
    tok->tok_len[tok->n_tok] = len;
    tok->n_tok++;
    return PD_OK;
}

struct pd_tokenizer *pdi_tokenizer_new(enum pd_tokenizer_kind kind)
{
    struct pd_tokenizer *tok = pdi_calloc(1, sizeof *tok);
    if (!tok) return pdi_error(PD_ERR_NOMEM, "tokenizer: out of memory");
    tok->kind = kind;
    tok->rank = pdi_u64map_create(64);
    if (!tok->rank) {
        free(tok);
        return pdi_error(PD_ERR_NOMEM, "tokenizer: out of memory");
    }
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        if (push_token(tok, &c, 1)) {
            pd_tokenizer_destroy(tok);
            return NULL;
        }
    }
    return tok;
}

struct pd_tokenizer *pd_tokenizer_byte_create(void) { return pdi_tokenizer_new(PD_TOKENIZER_BYTE); }

void pd_tokenizer_destroy(struct pd_tokenizer *tok)
{
    if (!tok) return;
    for (int i = 0; i < tok->n_tok; i++) free(tok->tok[i]);
    free(tok->tok);
    free(tok->tok_len);
    free(tok->merges);
    free(tok->spec_slot);
    pdi_u64map_destroy(tok->rank);
    pdi_hf_destroy(tok->hf);
    free(tok);
}

int pdi_tokenizer_push_merge(struct pd_tokenizer *tok, int32_t a, int32_t b)
{
    if (tok->n_special) return pdi_errorf(PD_ERR_STATE, "tokenizer: merges must come before special tokens");
    int id = tok->n_tok;
    if (a < 0 || b < 0 || a >= id || b >= id)
        return pdi_errorf(PD_ERR_INVALID, "tokenizer: merge %d (%d, %d) references an id that does not exist yet",
                          tok->n_merges, a, b);
    uint64_t key = pdi_pair_key(a, b);
    if (pdi_u64map_get(tok->rank, key) >= 0)
        return pdi_errorf(PD_ERR_INVALID, "tokenizer: merge %d (%d, %d) duplicates merge %d", tok->n_merges, a, b,
                          pdi_u64map_get(tok->rank, key));
    size_t la = tok->tok_len[a], lb = tok->tok_len[b];
    /* A merge of a token with itself doubles its length: without this bound
     * a few hundred bytes of JSON asked for gigabytes. */
    if (la + lb > PD_TOKENIZER_MAX_TOKEN_LEN)
        return pdi_errorf(PD_ERR_INVALID,
                          "tokenizer: merge %d (%d, %d) makes a token of %zu bytes, more than the limit of %d (encode "
                          "never produces one)", tok->n_merges, a, b, la + lb, PD_TOKENIZER_MAX_TOKEN_LEN);
    if ((tok->n_merges & (tok->n_merges - 1)) == 0) { /* grow at powers of two */
        int32_t *m = pdi_realloc(tok->merges, (size_t)(tok->n_merges ? 2 * tok->n_merges : 1) * 2 * sizeof *m);
        if (!m) return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory");
        tok->merges = m;
    }
    unsigned char *buf = pdi_malloc(la + lb);
    if (!buf) return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory");
    memcpy(buf, tok->tok[a], la);
    memcpy(buf + la, tok->tok[b], lb);
    int rc = push_token(tok, buf, la + lb);
    free(buf);
    if (rc) return rc;
    if (pdi_u64map_put(tok->rank, key, tok->n_merges)) {
        free(tok->tok[--tok->n_tok]);
        return PD_ERR_NOMEM;
    }
    tok->merges[2 * tok->n_merges] = a;
    tok->merges[2 * tok->n_merges + 1] = b;
    tok->n_merges++;
    return PD_OK;
}

/* ---- special-token index (FNV-1a of the text, linear probing) ------------ */
static uint64_t text_hash(const unsigned char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* The slot holding the special token s[0..n), or the empty slot where it
 * would go. n_spec_slots must be > 0. */
static int32_t *spec_find(const struct pd_tokenizer *tok, const unsigned char *s, size_t n)
{
    size_t mask = (size_t)tok->n_spec_slots - 1;
    for (size_t i = text_hash(s, n) & mask;; i = (i + 1) & mask) {
        int32_t *slot = &tok->spec_slot[i];
        if (!*slot) return slot;
        int id = *slot - 1;
        if (tok->tok_len[id] == n && !memcmp(tok->tok[id], s, n)) return slot;
    }
}

/* Room for one more special token in the index. */
static int spec_reserve(struct pd_tokenizer *tok)
{
    if (2 * (tok->n_special + 1) < tok->n_spec_slots) return PD_OK;
    int n_slots = tok->n_spec_slots ? 2 * tok->n_spec_slots : 16;
    int32_t *slot = pdi_calloc((size_t)n_slots, sizeof *slot);
    if (!slot) return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory");
    free(tok->spec_slot);
    tok->spec_slot = slot;
    tok->n_spec_slots = n_slots;
    for (int id = tok->n_tok - tok->n_special; id < tok->n_tok; id++)
        *spec_find(tok, tok->tok[id], tok->tok_len[id]) = id + 1;
    return PD_OK;
}

int pd_tokenizer_add_special(struct pd_tokenizer *tok, const char *text)
{
    char qb[PDI_QUOTE_BUF];
    if (!tok) return pdi_errorf(PD_ERR_NULL, "tokenizer_add_special: tokenizer is NULL");
    if (tok->hf)
        return pdi_errorf(PD_ERR_STATE, "tokenizer_add_special: a Hugging Face tokenizer's added tokens come from its file");
    if (!text || !*text) return pdi_errorf(PD_ERR_INVALID, "tokenizer_add_special: the text must be non-empty");
    size_t n = strlen(text);
    if (n > PD_TOKENIZER_MAX_TOKEN_LEN)
        return pdi_errorf(PD_ERR_INVALID, "tokenizer_add_special: %s has %zu bytes, more than the limit of %d",
                          pdi_quote(text, qb, sizeof qb), n, PD_TOKENIZER_MAX_TOKEN_LEN);
    if (pd_tokenizer_special_id(tok, text) >= 0)
        return pdi_errorf(PD_ERR_INVALID, "tokenizer_add_special: %s is already a special token",
                          pdi_quote(text, qb, sizeof qb));
    int rc = spec_reserve(tok);
    if (!rc) rc = push_token(tok, (const unsigned char *)text, n);
    if (rc) return rc;
    tok->n_special++;
    *spec_find(tok, (const unsigned char *)text, n) = tok->n_tok;
    return tok->n_tok - 1;
}

/* ---- queries ------------------------------------------------------------ */
enum pd_tokenizer_kind pd_tokenizer_kind(const struct pd_tokenizer *tok) { return tok ? tok->kind : PD_TOKENIZER_BYTE; }
int pd_tokenizer_vocab_size(const struct pd_tokenizer *tok) { return tok ? tok->n_tok : 0; }
int pd_tokenizer_n_merges(const struct pd_tokenizer *tok) { return tok ? tok->n_merges : 0; }

int pd_tokenizer_merge(const struct pd_tokenizer *tok, int r, int *a, int *b)
{
    if (!tok) return pdi_errorf(PD_ERR_NULL, "tokenizer_merge: tokenizer is NULL");
    if (r < 0 || r >= tok->n_merges)
        return pdi_errorf(PD_ERR_INVALID, "tokenizer_merge: rank %d out of range [0, %d)", r, tok->n_merges);
    if (a) *a = tok->merges[2 * r];
    if (b) *b = tok->merges[2 * r + 1];
    return PD_OK;
}

const unsigned char *pd_tokenizer_token(const struct pd_tokenizer *tok, int id, size_t *len)
{
    if (!tok) return pdi_error(PD_ERR_NULL, "tokenizer_token: tokenizer is NULL");
    if (id < 0 || id >= tok->n_tok)
        return pdi_error(PD_ERR_INVALID, "tokenizer_token: id %d out of range [0, %d)", id, tok->n_tok);
    if (len) *len = tok->tok_len[id];
    return tok->tok[id];
}

int pd_tokenizer_special_id(const struct pd_tokenizer *tok, const char *text)
{
    if (tok && text && tok->hf) {
        size_t n = strlen(text);
        for (int a = 0; a < tok->hf->n_added; a++) {
            int32_t id = tok->hf->added[a].id;
            if (tok->tok_len[id] == n && !memcmp(tok->tok[id], text, n)) return id;
        }
        return -1;
    }
    if (!tok || !text || !tok->n_spec_slots) return -1;
    return *spec_find(tok, (const unsigned char *)text, strlen(text)) - 1;
}

int pd_tokenizer_bos_id(const struct pd_tokenizer *tok) { return tok && tok->hf ? tok->hf->bos_id : -1; }

/* ---- encode / decode ---------------------------------------------------- */
int pdi_ids_reserve(struct pdi_ids *ids, int64_t extra)
{
    if (ids->n + extra <= ids->cap) return PD_OK;
    int64_t cap = ids->cap ? ids->cap : 1024;
    while (cap < ids->n + extra) cap *= 2;
    int32_t *v = pdi_realloc(ids->v, (size_t)cap * sizeof *v);
    if (!v) return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory for %lld ids", (long long)cap);
    ids->v = v;
    ids->cap = cap;
    return PD_OK;
}

static void encode_piece(const struct pd_tokenizer *tok, const unsigned char *s, int n, int32_t *out, int *n_out)
{
    int32_t sym[PDI_PIECE_MAX];
    int prev[PDI_PIECE_MAX], next[PDI_PIECE_MAX];
    unsigned char alive[PDI_PIECE_MAX];
    struct pdi_cand heap[3 * PDI_PIECE_MAX];
    int nh = 0;
    for (int i = 0; i < n; i++) {
        sym[i] = s[i];
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
        alive[i] = 1;
    }
    if (tok->n_merges)
        for (int i = 0; i + 1 < n; i++) {
            int32_t r = pdi_u64map_get(tok->rank, pdi_pair_key(sym[i], sym[i + 1]));
            if (r >= 0) pdi_heap_push(heap, &nh, (struct pdi_cand){r, i});
        }
    while (nh) {
        struct pdi_cand c = pdi_heap_pop(heap, &nh);
        int i = c.pos, j = next[i];
        /* stale: the left symbol was merged away or changed, or its neighbour did */
        if (!alive[i] || j < 0 || sym[i] != tok->merges[2 * c.rank] || sym[j] != tok->merges[2 * c.rank + 1]) continue;
        sym[i] = 256 + c.rank;
        alive[j] = 0;
        pdi_bpe_relink(tok->rank, sym, prev, next, i, j, heap, &nh);
    }
    int k = 0;
    for (int i = 0; i >= 0; i = next[i]) out[k++] = sym[i];
    *n_out = k;
}

int pdi_tokenizer_encode_append(const struct pd_tokenizer *tok, const unsigned char *s, size_t n, int continued,
                                struct pdi_ids *out)
{
    if (tok->hf) return pdi_hf_encode_append(tok, s, n, continued, out);
    if (pdi_ids_reserve(out, (int64_t)n)) return PD_ERR_NOMEM; /* never more ids than bytes */
    if (tok->n_merges == 0) {
        for (size_t i = 0; i < n; i++) out->v[out->n++] = s[i];
        return PD_OK;
    }
    for (size_t i = 0; i < n;) {
        size_t e = pdi_pretok_end(s, n, i);
        int k;
        encode_piece(tok, s + i, (int)(e - i), out->v + out->n, &k);
        out->n += k;
        i = e;
    }
    return PD_OK;
}

int64_t pd_tokenizer_encode(const struct pd_tokenizer *tok, const void *text, size_t len, int32_t **ids)
{
    if (ids) *ids = NULL;
    if (!tok) return pdi_errorf(PD_ERR_NULL, "tokenizer_encode: tokenizer is NULL");
    if (!ids) return pdi_errorf(PD_ERR_INVALID, "tokenizer_encode: ids output is NULL");
    if (!text && len) return pdi_errorf(PD_ERR_INVALID, "tokenizer_encode: text is NULL");
    struct pdi_ids out = {0};
    if (pdi_ids_reserve(&out, 1)) return PD_ERR_NOMEM;
    int rc = pdi_tokenizer_encode_append(tok, text, len, 0, &out);
    if (rc) {
        free(out.v);
        return rc;
    }
    *ids = out.v;
    return out.n;
}

/* The ids' bytes concatenated; from the start of a text (`start`), less the
 * space an HF decoder strips there. `fn` names the caller in messages. */
static char *decode(const struct pd_tokenizer *tok, const int32_t *ids, int64_t n, size_t *len, int start,
                    const char *fn)
{
    if (len) *len = 0;
    if (!tok) return pdi_error(PD_ERR_NULL, "%s: tokenizer is NULL", fn);
    if (n < 0 || (!ids && n)) return pdi_error(PD_ERR_INVALID, "%s: bad id array (n = %lld)", fn, (long long)n);
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= tok->n_tok)
            return pdi_error(PD_ERR_INVALID, "%s: id %d at position %lld is out of range [0, %d)", fn, ids[i],
                             (long long)i, tok->n_tok);
        total += tok->tok_len[ids[i]];
    }
    char *out = pdi_malloc(total + 1);
    if (!out) return pdi_error(PD_ERR_NOMEM, "%s: out of memory for %zu bytes", fn, total);
    size_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        memcpy(out + k, tok->tok[ids[i]], tok->tok_len[ids[i]]);
        k += tok->tok_len[ids[i]];
    }
    if (start && tok->hf && tok->hf->strip_space && k && out[0] == ' ') /* the decoder drops the space encode prepended */
        memmove(out, out + 1, --k);
    out[k] = 0;
    if (len) *len = k;
    return out;
}

char *pd_tokenizer_decode(const struct pd_tokenizer *tok, const int32_t *ids, int64_t n, size_t *len)
{
    return decode(tok, ids, n, len, 1, "tokenizer_decode");
}

char *pd_tokenizer_decode_continuation(const struct pd_tokenizer *tok, const int32_t *ids, int64_t n, size_t *len)
{
    return decode(tok, ids, n, len, 0, "tokenizer_decode_continuation");
}

/* ---- JSON ----------------------------------------------------------------
 * {"format": "paddlec-tokenizer", "version": 1, "type": "byte" | "bpe",
 *  "pretokenizer": "paddlec-bytes-v1", "vocab_size": N,
 *  "merges": [[a, b], ...], "special": [{"id": i, "text": "..."}, ...]} */
static const char *const kind_names[] = {"byte", "bpe"}; /* PD_TOKENIZER_HF is never written */
#define N_KIND_NAMES ((int)(sizeof kind_names / sizeof *kind_names))
#define PRETOK_NAME "paddlec-bytes-v1"

char *pd_tokenizer_to_json(const struct pd_tokenizer *tok)
{
    if (!tok) return pdi_error(PD_ERR_NULL, "tokenizer_to_json: tokenizer is NULL");
    if (tok->hf) {
        char *s = pdi_strdup(tok->hf->json);
        return s ? s : pdi_error(PD_ERR_NOMEM, "tokenizer_to_json: out of memory");
    }
    for (int id = tok->n_tok - tok->n_special; id < tok->n_tok; id++)
        if (memchr(tok->tok[id], 0, tok->tok_len[id]))
            return pdi_error(PD_ERR_INVALID, "tokenizer_to_json: special token %d contains a NUL byte", id);
    cJSON *root = cJSON_CreateObject();
    cJSON *merges = cJSON_CreateArray(), *special = cJSON_CreateArray();
    /* every add checked: an add that ran out of memory would drop the field
     * (issue 12's fault sweep: "pretokenizer" went missing and the JSON
     * still parsed) */
    int ok = root && cJSON_AddStringToObject(root, "format", "paddlec-tokenizer") &&
             cJSON_AddNumberToObject(root, "version", 1) &&
             cJSON_AddStringToObject(root, "type", kind_names[tok->kind]) &&
             cJSON_AddStringToObject(root, "pretokenizer", PRETOK_NAME) &&
             cJSON_AddNumberToObject(root, "vocab_size", tok->n_tok);
    if (ok && merges) {
        ok = cJSON_AddItemToObject(root, "merges", merges);
        if (ok) merges = NULL;
    }
    cJSON *merges_arr = ok ? cJSON_GetObjectItemCaseSensitive(root, "merges") : NULL;
    if (ok && special) {
        ok = cJSON_AddItemToObject(root, "special", special);
        if (ok) special = NULL;
    }
    cJSON *special_arr = ok ? cJSON_GetObjectItemCaseSensitive(root, "special") : NULL;
    ok = ok && merges_arr && special_arr;
    cJSON_Delete(merges); /* the ones not attached */
    cJSON_Delete(special);
    merges = merges_arr, special = special_arr;
    for (int r = 0; ok && r < tok->n_merges; r++) {
        cJSON *pair = cJSON_CreateIntArray(tok->merges + 2 * r, 2);
        ok = pair && cJSON_AddItemToArray(merges, pair);
    }
    for (int id = tok->n_tok - tok->n_special; ok && id < tok->n_tok; id++) {
        cJSON *sp = cJSON_CreateObject();
        char *text = pdi_malloc(tok->tok_len[id] + 1);
        ok = sp && text;
        if (ok) {
            memcpy(text, tok->tok[id], tok->tok_len[id]);
            text[tok->tok_len[id]] = 0;
            ok = cJSON_AddNumberToObject(sp, "id", id) && cJSON_AddStringToObject(sp, "text", text) &&
                 cJSON_AddItemToArray(special, sp);
        }
        if (!ok) cJSON_Delete(sp);
        free(text);
    }
    char *s = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!s) return pdi_error(PD_ERR_NOMEM, "tokenizer_to_json: out of memory");
    /* cJSON allocates with malloc unless hooks were installed; copy to be sure
     * the caller's free() matches. */
    char *out = pdi_strdup(s);
    cJSON_free(s);
    if (!out) return pdi_error(PD_ERR_NOMEM, "tokenizer_to_json: out of memory");
    return out;
}

static int json_int(const cJSON *v, int *out)
{
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != (double)(int)d) return 0; /* no UB on huge values */
    *out = (int)d;
    return 1;
}

struct pd_tokenizer *pd_tokenizer_from_json(const char *json)
{
    if (!json) return pdi_error(PD_ERR_NULL, "tokenizer_from_json: text is NULL");
    /* The parse's own end pointer, not cJSON_GetErrorPtr(): that one is
     * process-wide and may point into another thread's freed text. */
    const char *end = NULL;
    cJSON *root = pdi_json_parse(json, strlen(json) + 1, &end);
    if (!root) {
        char qb[PDI_QUOTE_BUF];
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        return pdi_error(PD_ERR_INVALID, "tokenizer JSON: parse error at byte %zu near %s", at,
                         pdi_quote_n(json + at, strnlen(json + at, 20), qb, sizeof qb));
    }
    if (cJSON_IsObject(root) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "model")) &&
        !cJSON_GetObjectItemCaseSensitive(root, "format")) { /* a Hugging Face tokenizer.json */
        struct pd_tokenizer *hf = pdi_hf_from_cjson(root, json);
        cJSON_Delete(root);
        return hf;
    }
    struct pd_tokenizer *tok = NULL;
    const char *why = NULL;
    char msg[512];
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pretokenizer");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(root, "merges");
    const cJSON *special = cJSON_GetObjectItemCaseSensitive(root, "special");
    int version = 0, vocab = 0;
    int kind = -1;
    if (!cJSON_IsObject(root)) why = "the top level is not an object";
    else if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "paddlec-tokenizer")) why = "\"format\" is not \"paddlec-tokenizer\"";
    else if (!json_int(cJSON_GetObjectItemCaseSensitive(root, "version"), &version) || version != 1) why = "\"version\" is not 1";
    else if (!cJSON_IsString(type)) why = "\"type\" is missing";
    else if (pre && (!cJSON_IsString(pre) || strcmp(pre->valuestring, PRETOK_NAME))) why = "unknown \"pretokenizer\" (expected \"" PRETOK_NAME "\")";
    else if (!json_int(cJSON_GetObjectItemCaseSensitive(root, "vocab_size"), &vocab)) why = "\"vocab_size\" is missing or not an integer";
    else if (vocab < 256 || vocab > PD_TOKENIZER_MAX_VOCAB) why = "\"vocab_size\" is outside [256, 2^20] (the limit)";
    else if (merges && !cJSON_IsArray(merges)) why = "\"merges\" is not an array";
    else if (special && !cJSON_IsArray(special)) why = "\"special\" is not an array";
    if (!why) {
        for (int k = 0; k < N_KIND_NAMES; k++)
            if (!strcmp(type->valuestring, kind_names[k])) kind = k;
        if (kind < 0) why = "\"type\" is neither \"byte\" nor \"bpe\"";
        else if (kind == PD_TOKENIZER_BYTE && cJSON_GetArraySize(merges) > 0) why = "a \"byte\" tokenizer has merges";
        else if (cJSON_GetArraySize(merges) > vocab - 256) why = "\"merges\" has more entries than \"vocab_size\" allows";
    }
    if (!why && !(tok = pdi_tokenizer_new((enum pd_tokenizer_kind)kind))) why = "out of memory";
    int r = 0;
    const cJSON *m;
    if (!why) cJSON_ArrayForEach(m, merges) {
        int a, b;
        if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) != 2 || !json_int(cJSON_GetArrayItem(m, 0), &a) ||
            !json_int(cJSON_GetArrayItem(m, 1), &b)) {
            snprintf(msg, sizeof msg, "merge %d is not a pair of integer ids", r);
            why = msg;
            break;
        }
        if (pdi_tokenizer_push_merge(tok, a, b)) { /* checks ids exist and no duplicate */
            snprintf(msg, sizeof msg, "%s", pd_last_error() + strlen("tokenizer: "));
            why = msg;
            break;
        }
        r++;
    }
    const cJSON *sp;
    if (!why) cJSON_ArrayForEach(sp, special) {
        int id;
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(sp, "text");
        if (!json_int(cJSON_GetObjectItemCaseSensitive(sp, "id"), &id) || !cJSON_IsString(text)) {
            why = "a special token needs an integer \"id\" and a string \"text\"";
            break;
        }
        if (id != tok->n_tok) {
            char qb[PDI_QUOTE_BUF];
            snprintf(msg, sizeof msg, "special token %s has id %d, expected %d (specials follow the merges in order)",
                     pdi_quote(text->valuestring, qb, sizeof qb), id, tok->n_tok);
            why = msg;
            break;
        }
        if (pd_tokenizer_add_special(tok, text->valuestring) < 0) {
            snprintf(msg, sizeof msg, "%s", pd_last_error());
            why = msg;
            break;
        }
    }
    if (!why && vocab != tok->n_tok) {
        snprintf(msg, sizeof msg, "\"vocab_size\" is %d but 256 bytes + %d merges + %d special = %d", vocab,
                 tok->n_merges, tok->n_special, tok->n_tok);
        why = msg;
    }
    cJSON_Delete(root);
    if (why) {
        pd_tokenizer_destroy(tok);
        return pdi_error(PD_ERR_INVALID, "tokenizer JSON: %s", why);
    }
    return tok;
}

int pd_tokenizer_save(const struct pd_tokenizer *tok, const char *path)
{
    if (!path) return pdi_errorf(PD_ERR_INVALID, "tokenizer_save: path is NULL");
    char *s = pd_tokenizer_to_json(tok);
    if (!s) return pd_last_status();
    size_t n = strlen(s);
    s[n] = '\n'; /* the NUL becomes the final newline (written with n + 1 bytes) */
    /* atomic: a temporary, fsync, rename (src/io/file.h) */
    int st = pdi_file_write_atomic(path, s, n + 1, "tokenizer_save");
    free(s);
    return st;
}

struct pd_tokenizer *pd_tokenizer_load(const char *path)
{
    char qb[PDI_QUOTE_BUF];
    if (!path) return pdi_error(PD_ERR_INVALID, "tokenizer_load: path is NULL");
    char *buf = pdi_file_read_all(path, PD_TOKENIZER_MAX_FILE, NULL, "tokenizer_load");
    if (!buf) return NULL;
    struct pd_tokenizer *tok = pd_tokenizer_from_json(buf);
    free(buf);
    if (!tok) {
        char msg[1024]; /* the message buffer is rewritten by pdi_error: copy it first */
        snprintf(msg, sizeof msg, "%s", pd_last_error());
        return pdi_error(pd_last_status(), "%s (in %s)", msg, pdi_quote(path, qb, sizeof qb));
    }
    return tok;
}
