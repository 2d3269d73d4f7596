/* paddle.c — byte-level BPE training (pd_bpe_train).
 *
 * The text is pre-split into pieces (pdi_pretok_end) and counted as unique
 * words; merges never cross pieces. Pair counts live in a map keyed by
 * (a, b), each pair with the list of words it occurs in, and a max-heap of
 * (count, pair) picks the next merge. Entries in the heap are upper bounds:
 * merging (a, b) into n only lowers the counts of old pairs and creates pairs
 * that contain n, so on pop a stale entry is pushed back with its current
 * count, and the first entry whose count is current is the true maximum.
 * Each merge touches only the words that contained the pair: training cost
 * follows the text's number of distinct words, not its length.
 *
 * Ties break on the smaller pair key (a first, then b), so training is
 * deterministic.
 *
 * Ownership: everything here is scratch freed before return, except the
 * tokenizer handed to the caller.
 */
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"

struct word {
    size_t off;     /* bytes in the text */
    int len;
    int64_t count;
    int64_t sym;    /* first symbol in the pool */
    int n_sym;
    int32_t next;   /* next word with the same hash, -1 */
};

struct wlist {
    int32_t *v;
    int n, cap;
};

struct pair {
    uint64_t key;
    int64_t count;
    struct wlist words;
    int stamp;      /* last merge that queued it */
};

struct hent {
    int64_t count;
    uint64_t key;
};

struct trainer {
    const unsigned char *text;
    struct word *w;
    int32_t n_w, cap_w;
    struct pdi_u64map *wmap;   /* hash of bytes -> first word */
    int32_t *sym;
    struct pair *p;
    int32_t n_p, cap_p;
    struct pdi_u64map *pmap;   /* pair key -> pair index */
    struct hent *h;
    int64_t n_h, cap_h;
    int32_t *touched;          /* pairs created by the current merge */
    int64_t n_touched, cap_touched;
};

static uint64_t hash_bytes(const unsigned char *s, int n)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return pdi_mix64(h);
}

static int grow(void **p, int64_t *cap, int64_t need, size_t elem)
{
    if (need <= *cap) return 0;
    int64_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    void *q = pdi_realloc(*p, (size_t)c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int add_word(struct trainer *t, size_t off, int len)
{
    uint64_t h = hash_bytes(t->text + off, len);
    int32_t first = pdi_u64map_get(t->wmap, h);
    for (int32_t i = first; i >= 0; i = t->w[i].next)
        if (t->w[i].len == len && !memcmp(t->text + t->w[i].off, t->text + off, (size_t)len)) {
            t->w[i].count++;
            return 0;
        }
    int64_t cap = t->cap_w;
    if (grow((void **)&t->w, &cap, t->n_w + 1, sizeof *t->w)) return -1;
    t->cap_w = (int32_t)cap;
    t->w[t->n_w] = (struct word){off, len, 1, 0, len, first};
    if (pdi_u64map_put(t->wmap, h, t->n_w)) return -1;
    t->n_w++;
    return 0;
}

static int heap_before(struct hent x, struct hent y) { return x.count > y.count || (x.count == y.count && x.key < y.key); }

static int heap_push(struct trainer *t, int64_t count, uint64_t key)
{
    if (grow((void **)&t->h, &t->cap_h, t->n_h + 1, sizeof *t->h)) return -1;
    struct hent e = {count, key};
    int64_t i = t->n_h++;
    while (i > 0) {
        int64_t par = (i - 1) / 2;
        if (!heap_before(e, t->h[par])) break;
        t->h[i] = t->h[par];
        i = par;
    }
    t->h[i] = e;
    return 0;
}

static struct hent heap_pop(struct trainer *t)
{
    struct hent top = t->h[0], last = t->h[--t->n_h];
    int64_t i = 0, n = t->n_h;
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        struct hent mv = last;
        if (l < n && heap_before(t->h[l], mv)) { m = l; mv = t->h[l]; }
        if (r < n && heap_before(t->h[r], mv)) m = r;
        if (m == i) break;
        t->h[i] = t->h[m];
        i = m;
    }
    if (n) t->h[i] = last;
    return top;
}

/* Add delta to pair (a, b)'s count, creating it if needed; when w >= 0, also
 * record that word w holds it. Returns the pair index or -1 (no memory). */
static int32_t pair_add(struct trainer *t, int32_t a, int32_t b, int64_t delta, int32_t w)
{
    uint64_t key = pdi_pair_key(a, b);
    int32_t i = pdi_u64map_get(t->pmap, key);
    if (i < 0) {
        int64_t cap = t->cap_p;
        if (grow((void **)&t->p, &cap, t->n_p + 1, sizeof *t->p)) return -1;
        t->cap_p = (int32_t)cap;
        i = t->n_p++;
        t->p[i] = (struct pair){key, 0, {NULL, 0, 0}, -1};
        if (pdi_u64map_put(t->pmap, key, i)) return -1;
    }
    struct pair *p = &t->p[i];
    p->count += delta;
    if (w >= 0 && (p->words.n == 0 || p->words.v[p->words.n - 1] != w)) {
        int64_t cap = p->words.cap;
        if (grow((void **)&p->words.v, &cap, p->words.n + 1, sizeof *p->words.v)) return -1;
        p->words.cap = (int)cap;
        p->words.v[p->words.n++] = w;
    }
    return i;
}

/* Merge (a, b) -> id in word wi. Returns 0, or -1 when out of memory. */
static int merge_word(struct trainer *t, int32_t wi, int32_t a, int32_t b, int32_t id, int stamp)
{
    struct word *w = &t->w[wi];
    int32_t *s = t->sym + w->sym;
    int L = w->n_sym, found = 0;
    for (int i = 0; i + 1 < L && !found; i++) found = s[i] == a && s[i + 1] == b;
    if (!found) return 0; /* a stale entry of the word list */
    for (int i = 0; i + 1 < L; i++)
        if (pair_add(t, s[i], s[i + 1], -w->count, -1) < 0) return -1;
    int j = 0;
    for (int i = 0; i < L;) {
        if (i + 1 < L && s[i] == a && s[i + 1] == b) {
            s[j++] = id;
            i += 2;
        } else {
            s[j++] = s[i++];
        }
    }
    w->n_sym = L = j;
    for (int i = 0; i + 1 < L; i++) {
        int is_new = s[i] == id || s[i + 1] == id;
        int32_t pi = pair_add(t, s[i], s[i + 1], w->count, is_new ? wi : -1);
        if (pi < 0) return -1;
        if (is_new && t->p[pi].stamp != stamp) {
            t->p[pi].stamp = stamp;
            /* queued after the word loop, once its count is final */
            if (grow((void **)&t->touched, &t->cap_touched, t->n_touched + 1, sizeof *t->touched)) return -1;
            t->touched[t->n_touched++] = pi;
        }
    }
    return 0;
}

static void trainer_free(struct trainer *t)
{
    free(t->w);
    free(t->sym);
    for (int32_t i = 0; i < t->n_p; i++) free(t->p[i].words.v);
    free(t->p);
    free(t->h);
    free(t->touched);
    pdi_u64map_destroy(t->wmap);
    pdi_u64map_destroy(t->pmap);
}

struct pd_tokenizer *pd_bpe_train(const char *text, size_t len, int vocab_size, const struct pd_bpe_options *opt)
{
    int min_freq = opt && opt->min_frequency > 0 ? opt->min_frequency : 2;
    int n_special = opt ? opt->n_special : 0;
    if (!text && len) return pdi_error(PD_ERR_INVALID, "bpe_train: text is NULL");
    if (n_special < 0 || (n_special && !opt->special))
        return pdi_error(PD_ERR_INVALID, "bpe_train: n_special is %d but no special texts were given", n_special);
    if (vocab_size < 256 + n_special || vocab_size > PD_TOKENIZER_MAX_VOCAB)
        return pdi_error(PD_ERR_INVALID, "bpe_train: vocab_size %d must be in [256 + %d special, 2^20]", vocab_size,
                         n_special);
    int n_merges = vocab_size - 256 - n_special;

    struct trainer t = {0};
    t.text = (const unsigned char *)text;
    struct pd_tokenizer *tok = NULL;
    t.wmap = pdi_u64map_create(1 << 12);
    t.pmap = pdi_u64map_create(1 << 12);
    if (!t.wmap || !t.pmap) goto nomem;

    for (size_t i = 0; i < len;) {
        size_t e = pdi_pretok_end(t.text, len, i);
        if (add_word(&t, i, (int)(e - i))) goto nomem;
        i = e;
    }
    int64_t n_sym = 0;
    for (int32_t i = 0; i < t.n_w; i++) {
        t.w[i].sym = n_sym;
        n_sym += t.w[i].len;
    }
    t.sym = pdi_malloc((size_t)(n_sym ? n_sym : 1) * sizeof *t.sym);
    if (!t.sym) goto nomem;
    for (int32_t i = 0; i < t.n_w; i++) {
        struct word *w = &t.w[i];
        for (int k = 0; k < w->len; k++) t.sym[w->sym + k] = t.text[w->off + k];
        for (int k = 0; k + 1 < w->len; k++)
            if (pair_add(&t, t.sym[w->sym + k], t.sym[w->sym + k + 1], w->count, i) < 0) goto nomem;
    }
    for (int32_t i = 0; i < t.n_p; i++)
        if (heap_push(&t, t.p[i].count, t.p[i].key)) goto nomem;

    tok = pdi_tokenizer_new(PD_TOKENIZER_BPE);
    if (!tok) goto fail;
    while (tok->n_merges < n_merges && t.n_h) {
        struct hent e = heap_pop(&t);
        int32_t pi = pdi_u64map_get(t.pmap, e.key);
        int64_t cur = t.p[pi].count;
        if (cur != e.count) {
            if (cur > 0 && heap_push(&t, cur, e.key)) goto nomem;
            continue;
        }
        if (cur < min_freq) break;
        int32_t a = (int32_t)(e.key >> 32), b = (int32_t)(uint32_t)e.key, id = tok->n_tok;
        if (pdi_tokenizer_push_merge(tok, a, b)) goto fail;
        /* the pair's own word list is never appended to while it merges
         * (only pairs holding the new id are), but t.p may move: copy the
         * pointer and count out first */
        int32_t *ws = t.p[pi].words.v;
        int nws = t.p[pi].words.n;
        for (int k = 0; k < nws; k++)
            if (merge_word(&t, ws[k], a, b, id, tok->n_merges)) goto nomem;
        t.p[pi].words.n = 0; /* (a, b) no longer occurs anywhere */
        for (int64_t k = 0; k < t.n_touched; k++) {
            struct pair *p = &t.p[t.touched[k]];
            if (p->count > 0 && heap_push(&t, p->count, p->key)) goto nomem;
        }
        t.n_touched = 0;
    }
    for (int i = 0; i < n_special; i++)
        if (pd_tokenizer_add_special(tok, opt->special[i]) < 0) goto fail;
    trainer_free(&t);
    return tok;
nomem:
    pdi_errorf(PD_ERR_NOMEM, "bpe_train: out of memory");
fail:
    trainer_free(&t);
    pd_tokenizer_destroy(tok);
    return NULL;
}
