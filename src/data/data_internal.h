/* paddle.c — internals shared by the files of src/data (tokenizer, BPE
 * training, datasets, arithmetic). Not installed; names are pdi_. */
#ifndef PD_DATA_INTERNAL_H
#define PD_DATA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/internal.h"
#include "pd/data.h"

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
/* Encode every piece of s[0..n) and append the ids. */
int pdi_tokenizer_encode_append(const struct pd_tokenizer *tok, const unsigned char *s, size_t n,
                                struct pdi_ids *out);
/* Tokenizer with 256 byte tokens, no merges (kind set by the caller). */
struct pd_tokenizer *pdi_tokenizer_new(enum pd_tokenizer_kind kind);
/* Append merge (a, b) as id 256 + n_merges (no specials may exist yet). */
int pdi_tokenizer_push_merge(struct pd_tokenizer *tok, int32_t a, int32_t b);

#endif
