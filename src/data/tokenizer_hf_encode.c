/* paddle.c — encoding with a Hugging Face tokenizer (PD_TOKENIZER_HF; the
 * file is read by tokenizer_hf.c).
 *
 * The pipeline, as Hugging Face's `tokenizers` runs it:
 *   1. added tokens are found in the text (leftmost, then longest) and cut
 *      out; each stands for its id, lstrip / rstrip take the white space
 *      beside it;
 *   2. each segment between them is normalized (its Unicode normal form,
 *      unicode_norm.c; SentencePiece style: ' ' becomes U+2581, and U+2581 is
 *      prepended), cut again at the added tokens that are matched in the
 *      normalized text ("normalized": true; their content normalized), and
 *      split into pieces by the
 *      pre-tokenizer: the GPT-2 or Llama 3 regex, matched by hand below with
 *      the character classes of unicode_tables.h (no regex library), or at
 *      each U+2581 (Metaspace split);
 *   3. each piece becomes initial symbols (byte-level: one per byte; else
 *      one per character, unknown characters falling back to their <0xNN>
 *      byte tokens or to unk) and BPE merges the adjacent pair of lowest
 *      rank, leftmost first, until no pair has a merge (with ignore_merges, a
 *      piece that is a whole vocabulary entry is that entry).
 * Bytes that are not valid UTF-8 are characters of class "other" of their
 * own, so any bytes encode, and decode(encode(x)) == x for byte-level
 * tokenizers (and for SentencePiece ones with byte fallback).
 *
 * \s is Unicode's White_Space (what Oniguruma, used by `tokenizers`, and
 * Python's `regex` match); JavaScript's \s differs on U+0085 and U+FEFF.
 */
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"
#include "data/unicode_tables.h"

enum { K_O = 0, K_L = 1, K_N = 2, K_S = 3 }; /* other, letter, number, white space */

/* Class of the character at s[i] and its length in bytes (an invalid byte is
 * a character of its own, class other). */
static inline int cls_at(const unsigned char *s, size_t n, size_t i, size_t *len)
{
    unsigned c = s[i];
    *len = 1;
    if (c < 0x80) return pdi_uc_class(c);
    size_t l = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (!l || i + l > n) return K_O;
    uint32_t cp = c & (0x7Fu >> l);
    for (size_t k = 1; k < l; k++) {
        if ((s[i + k] & 0xC0) != 0x80) return K_O;
        cp = cp << 6 | (s[i + k] & 63);
    }
    if ((l == 3 && (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000))) || (l == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return K_O;
    *len = l;
    return pdi_uc_class(cp);
}

/* End of the run of class k starting at j. */
static inline size_t run_end(const unsigned char *s, size_t n, size_t j, int k)
{
    size_t l;
    while (j < n && cls_at(s, n, j, &l) == k) j += l;
    return j;
}

static inline int is_nl(unsigned char c) { return c == '\r' || c == '\n'; }

/* 's 't 're 've 'm 'll 'd at s[i] == '\'': its end, or 0. fold: any case. */
static size_t contraction(const unsigned char *s, size_t n, size_t i, int fold)
{
    if (i + 1 >= n) return 0;
    unsigned c = s[i + 1], d = i + 2 < n ? s[i + 2] : 0;
    if (fold) {
        if (c >= 'A' && c <= 'Z') c |= 0x20;
        if (d >= 'A' && d <= 'Z') d |= 0x20;
    }
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return i + 2;
    if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return i + 3;
    return 0;
}

/* The white-space run at i (class K_S, first character l bytes): with
 * \s+(?!\S) before \s+, a run followed by a non-space leaves its last
 * character to what follows; nl: \s*[\r\n]+ first (Llama 3). */
static size_t space_end(const unsigned char *s, size_t n, size_t i, size_t l, int nl)
{
    size_t last = i, j = i + l, lastnl = is_nl(s[i]) ? i + 1 : 0, l1;
    int count = 1;
    while (j < n && cls_at(s, n, j, &l1) == K_S) {
        if (is_nl(s[j])) lastnl = j + 1;
        last = j;
        j += l1;
        count++;
    }
    if (nl && lastnl) return lastnl;
    return j == n || count == 1 ? j : last;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t end_gpt2(const unsigned char *s, size_t n, size_t i)
{
    size_t l, l1, e;
    if (s[i] == '\'' && (e = contraction(s, n, i, 0))) return e;
    int k = cls_at(s, n, i, &l);
    size_t j = i + l;
    if (s[i] == ' ' && j < n) {
        int k1 = cls_at(s, n, j, &l1);
        if (k1 != K_S) return run_end(s, n, j + l1, k1);
    }
    if (k != K_S) return run_end(s, n, j, k);
    return space_end(s, n, i, l, 0);
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * with D = max_digits (Llama 3: 3; Qwen 2: 1). */
static size_t end_llama3(const unsigned char *s, size_t n, size_t i, int max_digits)
{
    size_t l, l1, e;
    if (s[i] == '\'' && (e = contraction(s, n, i, 1))) return e;
    int k = cls_at(s, n, i, &l);
    size_t j = i + l;
    if (k == K_L) return run_end(s, n, j, K_L);
    if (k != K_N && !is_nl(s[i]) && j < n && cls_at(s, n, j, &l1) == K_L) return run_end(s, n, j + l1, K_L);
    if (k == K_N) {
        for (int c = 1; c < max_digits && j < n && cls_at(s, n, j, &l1) == K_N; c++) j += l1;
        return j;
    }
    size_t o = i;
    if (s[i] == ' ' && j < n && cls_at(s, n, j, &l1) == K_O) o = j;
    if (cls_at(s, n, o, &l1) == K_O) {
        e = run_end(s, n, o + l1, K_O);
        while (e < n && is_nl(s[e])) e++;
        return e;
    }
    return space_end(s, n, i, l, 1);
}

/* ---- BPE over one piece ---------------------------------------------------- */
/* Pieces seen before in this call, with their ids (a text repeats its
 * words): an open-addressing table over short pieces, kept at most half
 * full by doubling (up to CACHE_MAX_SLOTS, then no more insertions). */
#define CACHE_PIECE 32
#define CACHE_MIN_SLOTS (1 << 12)
#define CACHE_MAX_SLOTS (1 << 20)
struct cache_entry {
    uint64_t hash;        /* 0: empty */
    uint32_t key, ids;    /* offsets into the arenas */
    uint8_t key_len, n_ids;
};
struct cache {
    struct cache_entry *e;
    size_t cap, n;        /* slots (a power of two), entries */
    unsigned char *keys;  /* cap / 2 * CACHE_PIECE bytes */
    int32_t *ids;         /* as many ids */
    size_t n_keys, n_id;
};

struct work {
    struct cache cache;
    int32_t *sym;
    int *prev, *next;
    struct pdi_cand *heap;
    size_t cap;
    unsigned char *buf; /* normalized text, or a piece in model spelling */
    size_t buf_cap;
};

static int work_reserve(struct work *w, size_t n)
{
    if (n <= w->cap) return PD_OK;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < n) cap *= 2;
    int32_t *sym = pdi_realloc(w->sym, cap * sizeof *sym);
    if (sym) w->sym = sym;
    int *prev = pdi_realloc(w->prev, cap * sizeof *prev);
    if (prev) w->prev = prev;
    int *next = pdi_realloc(w->next, cap * sizeof *next);
    if (next) w->next = next;
    struct pdi_cand *heap = pdi_realloc(w->heap, 3 * cap * sizeof *heap);
    if (heap) w->heap = heap;
    if (!sym || !prev || !next || !heap || cap > INT32_MAX / 3)
        return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory for a piece of %zu symbols", n);
    w->cap = cap;
    return PD_OK;
}

static int buf_reserve(struct work *w, size_t n)
{
    if (n <= w->buf_cap) return PD_OK;
    size_t cap = w->buf_cap ? w->buf_cap : 1024;
    while (cap < n) cap *= 2;
    unsigned char *b = pdi_realloc(w->buf, cap);
    if (!b) return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory for %zu bytes", n);
    w->buf = b;
    w->buf_cap = cap;
    return PD_OK;
}

/* Merge w->sym[0..n) and append the result (out has room for n ids). */
static void bpe(const struct pd_tokenizer *tok, struct work *w, int n, struct pdi_ids *out)
{
    int32_t *sym = w->sym;
    int *prev = w->prev, *next = w->next, nh = 0;
    struct pdi_cand *heap = w->heap;
    const int32_t *mg = tok->merges, *mo = tok->hf->merge_out;
    for (int i = 0; i < n; i++) {
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
    }
    if (tok->n_merges)
        for (int i = 0; i + 1 < n; i++) {
            int32_t r = pdi_u64map_get(tok->rank, pdi_pair_key(sym[i], sym[i + 1]));
            if (r >= 0) pdi_heap_push(heap, &nh, (struct pdi_cand){r, i});
        }
    while (nh) {
        struct pdi_cand c = pdi_heap_pop(heap, &nh);
        int i = c.pos, j = next[i];
        /* stale: the pair at i is no longer (a, b) of this merge */
        if (j < 0 || sym[i] != mg[2 * c.rank] || sym[j] != mg[2 * c.rank + 1]) continue;
        sym[i] = mo[c.rank];
        sym[j] = -1;
        pdi_bpe_relink(tok->rank, sym, prev, next, i, j, heap, &nh);
    }
    for (int i = n ? 0 : -1; i >= 0; i = next[i]) out->v[out->n++] = sym[i];
}

static uint64_t piece_hash(const unsigned char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h | 1; /* never 0, the empty mark */
}

static struct cache_entry *cache_slot(struct cache_entry *t, size_t cap, const unsigned char *keys,
                                      const unsigned char *s, size_t n, uint64_t h)
{
    for (size_t i = pdi_mix64(h) & (cap - 1);; i = (i + 1) & (cap - 1)) {
        struct cache_entry *e = &t[i];
        if (!e->hash || (e->hash == h && e->key_len == n && !memcmp(keys + e->key, s, n))) return e;
    }
}

/* Room for one more entry; 0 when there is none (full, or no memory: the
 * cache is only an optimisation). */
static int cache_room(struct cache *c)
{
    if (2 * (c->n + 1) <= c->cap) return 1;
    size_t cap = c->cap ? 2 * c->cap : CACHE_MIN_SLOTS;
    if (cap > CACHE_MAX_SLOTS) return 0;
    struct cache_entry *t = pdi_calloc(cap, sizeof *t);
    unsigned char *keys = pdi_realloc(c->keys, cap / 2 * CACHE_PIECE);
    if (keys) c->keys = keys;
    int32_t *ids = pdi_realloc(c->ids, cap / 2 * CACHE_PIECE * sizeof *ids);
    if (ids) c->ids = ids;
    if (!t || !keys || !ids) {
        free(t);
        return 0;
    }
    for (size_t i = 0; i < c->cap; i++)
        if (c->e[i].hash)
            *cache_slot(t, cap, c->keys, c->keys + c->e[i].key, c->e[i].key_len, c->e[i].hash) = c->e[i];
    free(c->e);
    c->e = t;
    c->cap = cap;
    return 1;
}

/* A byte-level piece s[0..n) (raw bytes). */
static int piece_bytes(const struct pd_tokenizer *tok, struct work *w, const unsigned char *s, size_t n,
                       struct pdi_ids *out)
{
    const struct pdi_hf *hf = tok->hf;
    if (pdi_ids_reserve(out, (int64_t)n) || work_reserve(w, n)) return PD_ERR_NOMEM;
    if (hf->ignore_merges) { /* the piece in the vocabulary's spelling: bytes as characters */
        if (buf_reserve(w, 2 * n)) return PD_ERR_NOMEM;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            size_t len = tok->hf->ms_len[hf->byte_id[s[i]]];
            memcpy(w->buf + k, hf->ms + hf->ms_off[hf->byte_id[s[i]]], len);
            k += len;
        }
        int32_t id = pdi_hf_vocab_get(hf, w->buf, k);
        if (id >= 0) {
            out->v[out->n++] = id;
            return PD_OK;
        }
    }
    struct cache *c = &w->cache;
    uint64_t h = 0;
    if (n <= CACHE_PIECE && c->n) {
        h = piece_hash(s, n);
        struct cache_entry *e = cache_slot(c->e, c->cap, c->keys, s, n, h);
        if (e->hash) {
            memcpy(out->v + out->n, c->ids + e->ids, e->n_ids * sizeof *out->v);
            out->n += e->n_ids;
            return PD_OK;
        }
    }
    int64_t start = out->n;
    for (size_t i = 0; i < n; i++) w->sym[i] = hf->byte_id[s[i]];
    bpe(tok, w, (int)n, out);
    if (n <= CACHE_PIECE && cache_room(c)) {
        if (!h) h = piece_hash(s, n);
        *cache_slot(c->e, c->cap, c->keys, s, n, h) =
            (struct cache_entry){h, (uint32_t)c->n_keys, (uint32_t)c->n_id, (uint8_t)n, (uint8_t)(out->n - start)};
        memcpy(c->keys + c->n_keys, s, n);
        memcpy(c->ids + c->n_id, out->v + start, (size_t)(out->n - start) * sizeof *c->ids);
        c->n_keys += n;
        c->n_id += (size_t)(out->n - start);
        c->n++;
    }
    return PD_OK;
}

/* A character-level word s[0..n) (already normalized). */
static int piece_chars(const struct pd_tokenizer *tok, struct work *w, const unsigned char *s, size_t n,
                       struct pdi_ids *out)
{
    const struct pdi_hf *hf = tok->hf;
    if (pdi_ids_reserve(out, (int64_t)n) || work_reserve(w, n)) return PD_ERR_NOMEM;
    if (hf->ignore_merges) {
        int32_t id = pdi_hf_vocab_get(hf, s, n);
        if (id >= 0) {
            out->v[out->n++] = id;
            return PD_OK;
        }
    }
    int m = 0, last_unk = 0;
    for (size_t i = 0, l; i < n; i += l) {
        cls_at(s, n, i, &l);
        int32_t id = pdi_hf_vocab_get(hf, s + i, l);
        if (id >= 0) {
            w->sym[m++] = id;
            last_unk = 0;
            continue;
        }
        int bytes_ok = hf->byte_fallback;
        for (size_t k = 0; k < l && bytes_ok; k++) bytes_ok = hf->byte_id[s[i + k]] >= 0;
        if (bytes_ok) {
            for (size_t k = 0; k < l; k++) w->sym[m++] = hf->byte_id[s[i + k]];
            last_unk = 0;
        } else if (hf->unk_id >= 0 && !(hf->fuse_unk && last_unk)) {
            w->sym[m++] = hf->unk_id;
            last_unk = 1;
        }
    }
    bpe(tok, w, m, out);
    return PD_OK;
}

/* A byte-level segment s[0..n): split by the regex, each piece encoded. */
static int pieces_bytes(const struct pd_tokenizer *tok, struct work *w, const unsigned char *s, size_t n,
                        struct pdi_ids *out)
{
    const struct pdi_hf *hf = tok->hf;
    int rc = PD_OK;
    for (size_t i = 0; i < n && !rc;) {
        size_t e = hf->regex == PDI_HF_RX_GPT2     ? end_gpt2(s, n, i)
                   : hf->regex == PDI_HF_RX_LLAMA3 ? end_llama3(s, n, i, hf->max_digits)
                   : hf->regex == PDI_HF_RX_PADDLEC ? pdi_pretok_end(s, n, i)
                                                   : n;
        rc = piece_bytes(tok, w, s + i, e - i, out);
        i = e;
    }
    return rc;
}

/* One segment between added tokens; first: 1 it starts the text, -1 it
 * starts a continued text, 0 it follows an added token. */
static int segment(const struct pd_tokenizer *tok, struct work *w, const unsigned char *s, size_t n, int first,
                   struct pdi_ids *out)
{
    const struct pdi_hf *hf = tok->hf;
    if (!n) return PD_OK;
    int rc = PD_OK;
    if (hf->byte_level) {
        if (!(hf->add_prefix_space && s[0] != ' ' && first >= 0)) return pieces_bytes(tok, w, s, n, out);
        unsigned char *t = pdi_malloc(n + 1); /* the text with its space */
        if (!t) return pdi_errorf(PD_ERR_NOMEM, "tokenizer: out of memory for %zu bytes", n + 1);
        t[0] = ' ';
        memcpy(t + 1, s, n);
        rc = pieces_bytes(tok, w, t, n + 1, out);
        free(t);
        return rc;
    }
    /* character level: normalize into w->buf */
    if (buf_reserve(w, 3 * n + 3)) return PD_ERR_NOMEM;
    size_t k = 0;
    int starts = n >= 3 && !memcmp(s, "\xE2\x96\x81", 3);
    if (hf->sp_replace && s[0] == ' ') starts = 1;
    /* Metaspace: 3 "always", 1 "first" (both only when missing); the Prepend
     * normalizer's U+2581 is in s already (norm_segment) */
    int pre = first >= 0 && ((hf->sp_prepend == 3 && !starts) || (hf->sp_prepend == 1 && first > 0 && !starts));
    if (pre) {
        memcpy(w->buf, "\xE2\x96\x81", 3);
        k = 3;
    }
    for (size_t i = 0; i < n; i++) {
        if (hf->sp_replace && s[i] == ' ') {
            memcpy(w->buf + k, "\xE2\x96\x81", 3);
            k += 3;
        } else {
            w->buf[k++] = s[i];
        }
    }
    unsigned char *b = w->buf;
    w->buf = NULL; /* piece_chars must not reuse it */
    size_t cap = w->buf_cap;
    w->buf_cap = 0;
    for (size_t i = 0; i < k && !rc;) {
        size_t e = k;
        if (hf->sp_split)
            for (e = i + 3; e < k && !(e + 3 <= k && !memcmp(b + e, "\xE2\x96\x81", 3)); e++) {}
        if (e > k) e = k;
        rc = piece_chars(tok, w, b + i, e - i, out);
        i = e;
    }
    free(w->buf);
    w->buf = b;
    w->buf_cap = cap;
    return rc;
}

/* The added token matched at s[i] in this phase (normalized: the tokens
 * matched in the normalized text), or -1 (the longest: they are sorted). */
static int added_at(const struct pd_tokenizer *tok, const unsigned char *s, size_t n, size_t i, int normalized)
{
    const struct pdi_hf *hf = tok->hf;
    for (int a = 0; a < hf->n_added; a++) {
        const struct pdi_hf_added *x = &hf->added[a];
        if (x->normalized != normalized) continue;
        const unsigned char *k = x->key ? x->key : tok->tok[x->id];
        size_t len = x->key ? x->key_len : tok->tok_len[x->id];
        if (len <= n - i && k[0] == s[i] && !memcmp(k, s + i, len)) return a;
    }
    return -1;
}

static int split_added(const struct pd_tokenizer *tok, struct work *w, const unsigned char *s, size_t n, int first,
                       int normalized, struct pdi_ids *out);

/* A segment between the added tokens matched in the input: normalized, then
 * cut at the added tokens matched in the normalized text, as `tokenizers`
 * does (Prepend applies once, to the whole segment). */
static int norm_segment(const struct pd_tokenizer *tok, struct work *w, const unsigned char *s, size_t n, int first,
                        struct pdi_ids *out)
{
    const struct pdi_hf *hf = tok->hf;
    if (!n) return PD_OK;
    if (!pdi_hf_has_normalizer(hf)) return split_added(tok, w, s, n, first, 1, out);
    size_t m;
    unsigned char *t = pdi_hf_normalize(hf, s, n, first >= 0, &m);
    if (!t) return PD_ERR_NOMEM;
    int rc = split_added(tok, w, t, m, first, 1, out);
    free(t);
    return rc;
}

/* Cut s[0..n) at the added tokens of this phase and encode the pieces
 * between them: in the input (normalized 0) each goes to norm_segment, in the
 * normalized text to segment. first: as segment's, for the first piece. */
static int split_added(const struct pd_tokenizer *tok, struct work *w, const unsigned char *s, size_t n, int first,
                       int normalized, struct pdi_ids *out)
{
    const struct pdi_hf *hf = tok->hf;
    unsigned char first_byte[256] = {0};
    int any = 0;
    for (int a = 0; a < hf->n_added; a++) {
        const struct pdi_hf_added *x = &hf->added[a];
        if (x->normalized != normalized) continue;
        first_byte[x->key ? x->key[0] : tok->tok[x->id][0]] = 1;
        any = 1;
    }
    if (!any) return normalized ? segment(tok, w, s, n, first, out) : norm_segment(tok, w, s, n, first, out);
    int rc = PD_OK;
    size_t seg = 0; /* start of the current segment */
    for (size_t i = 0; i <= n && !rc;) {
        int a = -1;
        if (i < n && first_byte[s[i]]) a = added_at(tok, s, n, i, normalized);
        if (i < n && a < 0) {
            i++;
            continue;
        }
        size_t seg_end = i, next = i;
        if (a >= 0) {
            const struct pdi_hf_added *x = &hf->added[a];
            next = i + (x->key ? x->key_len : tok->tok_len[x->id]);
            size_t l;
            if (x->lstrip)
                while (seg_end > seg) {
                    size_t p = seg_end - 1;
                    while (p > seg && (s[p] & 0xC0) == 0x80 && seg_end - p < 4) p--;
                    if (cls_at(s, n, p, &l) != K_S || p + l != seg_end) break;
                    seg_end = p;
                }
            if (x->rstrip)
                while (next < n && cls_at(s, n, next, &l) == K_S) next += l;
        }
        int f = seg == 0 ? first : 0;
        rc = normalized ? segment(tok, w, s + seg, seg_end - seg, f, out)
                        : norm_segment(tok, w, s + seg, seg_end - seg, f, out);
        if (!rc && a >= 0) {
            rc = pdi_ids_reserve(out, 1);
            if (!rc) out->v[out->n++] = hf->added[a].id;
        }
        if (a < 0) break;
        i = seg = next;
    }
    return rc;
}

int pdi_hf_encode_append(const struct pd_tokenizer *tok, const unsigned char *s, size_t n, int continued,
                         struct pdi_ids *out)
{
    struct work w = {0};
    int rc = split_added(tok, &w, s, n, continued ? -1 : 1, 0, out);
    free(w.cache.e);
    free(w.cache.keys);
    free(w.cache.ids);
    free(w.sym);
    free(w.prev);
    free(w.next);
    free(w.heap);
    free(w.buf);
    return rc;
}

unsigned char *pdi_hf_normalize(const struct pdi_hf *hf, const unsigned char *s, size_t n, int prepend, size_t *out_n)
{
    size_t m;
    unsigned char *u = pdi_unorm((enum pdi_unorm_form)hf->unorm, s, n, &m);
    if (!u || !(hf->norm_prepend || hf->norm_replace)) {
        *out_n = m;
        return u;
    }
    size_t spaces = 0;
    for (size_t i = 0; i < m; i++) spaces += u[i] == ' ';
    unsigned char *o = pdi_malloc(m + 3 + 2 * spaces + 1);
    if (!o) {
        free(u);
        return pdi_error(PD_ERR_NOMEM, "tokenizer: out of memory for %zu bytes", m);
    }
    size_t k = 0;
    if (hf->norm_prepend && prepend && m) {
        memcpy(o, "\xE2\x96\x81", 3);
        k = 3;
    }
    for (size_t i = 0; i < m; i++) {
        if (hf->norm_replace && u[i] == ' ') {
            memcpy(o + k, "\xE2\x96\x81", 3);
            k += 3;
        } else {
            o[k++] = u[i];
        }
    }
    o[k] = 0;
    free(u);
    *out_n = k;
    return o;
}

size_t pdi_hf_cut(const unsigned char *s, size_t n)
{
    /* " x" after a printable ASCII character: every supported pre-tokenizer
     * starts a piece at that space whatever came before it */
    for (size_t p = n >= 2 ? n - 2 : 0; p > 0; p--)
        if (s[p] == ' ' && s[p - 1] > 0x20 && s[p - 1] < 0x7F && s[p + 1] > 0x20 && s[p + 1] < 0x7F) return p;
    return 0;
}
