/* paddle.c — internals shared by the files of src/data (tokenizer, BPE
 * training, datasets, arithmetic). Not installed; names are pdi_. */
#ifndef PD_DATA_INTERNAL_H
#define PD_DATA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "pd/data.h"

struct cJSON;

/* Tokens this process's batches and evaluation windows read from dataset
 * token stores so far (T + 1 per window; src/data/dataset.c): what the
 * distributed loader's test counts per rank. */
int64_t pdi_dataset_tokens_read(void);

/* Pieces never exceed this many bytes (bounds per-piece merge work), so no
 * token encode produces is longer. */
#define PDI_PIECE_MAX PD_TOKENIZER_MAX_TOKEN_LEN

struct pd_tokenizer {
    enum pd_tokenizer_kind kind;
    int n_merges;
    int32_t *merges;        /* [n_merges][2]: merge r joins merges[2r], merges[2r+1] into 256 + r */
    int n_special;
    /* token bytes for every id (256 + n_merges + n_special) */
    unsigned char **tok;
    size_t *tok_len;
    int n_tok, cap_tok;
    /* pair key -> merge rank */
    struct pdi_u64map *rank;
    /* special-token index by text hash: id + 1 per slot, 0 = empty;
     * n_spec_slots is a power of two above 2 n_special (or 0) */
    int32_t *spec_slot;
    int n_spec_slots;
    /* PD_TOKENIZER_HF only (src/data/tokenizer_hf.c): the file's pipeline.
     * merges/rank hold its merges as id pairs (merge r makes hf->merge_out[r]),
     * tok/tok_len every id's decoded bytes. */
    struct pdi_hf *hf;
};

/* ---- open-addressing map: 64-bit key -> int32 value --------------------- */
struct pdi_u64map {
    uint64_t *keys; /* PDI_U64MAP_EMPTY when free */
    int32_t *vals;
    size_t cap, n;  /* cap is a power of two, kept > 2 n */
};
#define PDI_U64MAP_EMPTY UINT64_MAX
struct pdi_u64map *pdi_u64map_create(size_t expect);
void pdi_u64map_destroy(struct pdi_u64map *m);
/* Value or -1. */
int32_t pdi_u64map_get(const struct pdi_u64map *m, uint64_t key);
/* Insert or overwrite; PD_OK or PD_ERR_NOMEM. */
int pdi_u64map_put(struct pdi_u64map *m, uint64_t key, int32_t val);

static inline uint64_t pdi_pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static inline uint64_t pdi_mix64(uint64_t x)
{
    /* splitmix64 finaliser: a cheap, well-spread hash for map slots and the
     * arithmetic hold-out partition */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* End of the pre-token piece starting at i (i < n) of s[0..n). */
size_t pdi_pretok_end(const unsigned char *s, size_t n, size_t i);

/* A growable array of int32 ids. */
struct pdi_ids {
    int32_t *v;
    int64_t n, cap;
};
int pdi_ids_reserve(struct pdi_ids *ids, int64_t extra);
/* Encode every piece of s[0..n) and append the ids. continued: s goes on a
 * text already encoded (a Hugging Face tokenizer prepends its space to a
 * text's start only; others ignore it). */
int pdi_tokenizer_encode_append(const struct pd_tokenizer *tok, const unsigned char *s, size_t n, int continued,
                                struct pdi_ids *out);
/* ---- Unicode normalization (unicode_norm.c) ---- */
enum pdi_unorm_form { PDI_UNORM_NONE, PDI_UNORM_NFC, PDI_UNORM_NFD, PDI_UNORM_NFKC, PDI_UNORM_NFKD };
/* s[0..n) in normal form `form`, pdi_malloc'd (*out_n bytes and a NUL; the
 * caller frees it); NULL when out of memory. Bytes that are not valid UTF-8
 * pass through. */
unsigned char *pdi_unorm(enum pdi_unorm_form form, const unsigned char *s, size_t n, size_t *out_n);
/* ---- Hugging Face tokenizers (tokenizer_hf.c, tokenizer_hf_encode.c) ---- */
/* The HF pipeline of a PD_TOKENIZER_HF tokenizer. */
enum { PDI_HF_RX_NONE, PDI_HF_RX_GPT2, PDI_HF_RX_LLAMA3, PDI_HF_RX_PADDLEC };
struct pdi_hf_added {
    int32_t id;
    unsigned char lstrip, rstrip;
    unsigned char normalized; /* matched in the normalized text (else in the input) */
    unsigned char *key;       /* normalized: its content normalized (NULL: tok->tok[id]) */
    size_t key_len;
};
struct pdi_hf {
    char *json;            /* the tokenizer.json text (to_json returns it) */
    int byte_level;        /* ByteLevel: vocab strings spell bytes (GPT-2's byte-to-unicode map) */
    int regex;             /* PDI_HF_RX_*: the split before BPE */
    int max_digits;        /* Llama 3 pattern: \p{N}{1,max_digits} */
    int add_prefix_space;  /* ByteLevel: a space before a segment that lacks one */
    int unorm;             /* enum pdi_unorm_form: the normalizer's Unicode normal form */
    int norm_prepend;      /* the normalizer's Prepend of U+2581 */
    int norm_replace;      /* the normalizer's Replace of ' ' by U+2581 */
    int sp_replace;        /* ' ' -> U+2581 (SentencePiece style; Replace or Metaspace) */
    int sp_prepend;        /* Metaspace's U+2581 before a segment that does not start with one: 0 never,
                            * 3 always, 1 the text's first segment only */
    int sp_split;          /* Metaspace split: a word starts at every U+2581 */
    int strip_space;       /* decode drops one leading space */
    int byte_fallback, fuse_unk, ignore_merges;
    int32_t unk_id, bos_id;
    /* model vocabulary: id -> its string as in the file (offset/length in
     * ms; ms_len UINT32_MAX when the id has none), and the string index */
    char *ms;
    size_t *ms_off;
    uint32_t *ms_len;
    int32_t *vslot;        /* id + 1 per slot, 0 empty; vcap a power of two */
    size_t vcap;
    int32_t byte_id[256];  /* byte-level: id of each byte's character; else <0xNN>; -1 none */
    int32_t *merge_out;    /* [n_merges] */
    int n_added;           /* added tokens, longest content first */
    struct pdi_hf_added *added;
};
/* The vocabulary id of the model string s[0..n), or -1. */
int32_t pdi_hf_vocab_get(const struct pdi_hf *hf, const unsigned char *s, size_t n);
struct pd_tokenizer *pdi_hf_from_cjson(const struct cJSON *root, const char *json);
void pdi_hf_destroy(struct pdi_hf *hf);
/* Encode s[0..n) and append the ids; continued: s continues a text already
 * encoded (no prefix space / U+2581 is prepended to it). */
int pdi_hf_encode_append(const struct pd_tokenizer *tok, const unsigned char *s, size_t n, int continued,
                         struct pdi_ids *out);
/* s[0..n) through the file's normalizer (Unicode form, Prepend of U+2581
 * when prepend and s is not empty, Replace of ' ' by U+2581), pdi_malloc'd
 * (*out_n bytes and a NUL); NULL when out of memory. */
unsigned char *pdi_hf_normalize(const struct pdi_hf *hf, const unsigned char *s, size_t n, int prepend, size_t *out_n);
static inline int pdi_hf_has_normalizer(const struct pdi_hf *hf)
{
    return hf->unorm || hf->norm_prepend || hf->norm_replace;
}
/* A place in s[0..n) where a text may be cut and its two parts encoded
 * separately (the second as continued) with the ids of the whole; 0 if none
 * was found. */
size_t pdi_hf_cut(const unsigned char *s, size_t n);

/* Tokenizer with 256 byte tokens, no merges (kind set by the caller). */
struct pd_tokenizer *pdi_tokenizer_new(enum pd_tokenizer_kind kind);
/* Append merge (a, b) as id 256 + n_merges (no specials may exist yet). */
int pdi_tokenizer_push_merge(struct pd_tokenizer *tok, int32_t a, int32_t b);

/* Merge candidates of one piece: (rank, position) pairs in a min-heap. The
 * leftmost lowest rank merges first, which is exactly "apply merge r to every
 * occurrence left to right, for r = 0, 1, ...": a merge creates only pairs of
 * higher rank than itself, since a merge refers to earlier ids only. */
struct pdi_cand {
    int32_t rank, pos;
};
static inline int pdi_cand_less(struct pdi_cand x, struct pdi_cand y) { return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos); }
static inline void pdi_heap_push(struct pdi_cand *h, int *n, struct pdi_cand c)
{
    int i = (*n)++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!pdi_cand_less(c, h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = c;
}
static inline struct pdi_cand pdi_heap_pop(struct pdi_cand *h, int *n)
{
    struct pdi_cand top = h[0], last = h[--*n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        struct pdi_cand mv = last;
        if (l < *n && pdi_cand_less(h[l], mv)) { m = l; mv = h[l]; }
        if (r < *n && pdi_cand_less(h[r], mv)) m = r;
        if (m == i) break;
        h[i] = h[m];
        i = m;
    }
    if (*n) h[i] = last;
    return top;
}

/* After symbol j was merged into i: unlink j, then queue the pairs i now
 * makes with its neighbours (their merge ranks from `rank`). Both BPE
 * encoders (tokenizer.c, tokenizer_hf_encode.c) merge this way. */
static inline void pdi_bpe_relink(const struct pdi_u64map *rank, const int32_t *sym, int *prev, int *next, int i, int j,
                                  struct pdi_cand *heap, int *nh)
{
    next[i] = next[j];
    if (next[j] >= 0) prev[next[j]] = i;
    if (prev[i] >= 0) {
        int32_t r = pdi_u64map_get(rank, pdi_pair_key(sym[prev[i]], sym[i]));
        if (r >= 0) pdi_heap_push(heap, nh, (struct pdi_cand){r, prev[i]});
    }
    if (next[i] >= 0) {
        int32_t r = pdi_u64map_get(rank, pdi_pair_key(sym[i], sym[next[i]]));
        if (r >= 0) pdi_heap_push(heap, nh, (struct pdi_cand){r, i});
    }
}

#endif
