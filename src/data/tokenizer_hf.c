/* paddle.c — Hugging Face tokenizer.json files and GPT-2's original files
 * (include/pd/data.h, PD_TOKENIZER_HF): reading them into a pd_tokenizer.
 * Encoding is in tokenizer_hf_encode.c.
 *
 * What is read (docs/data.md lists it for users): model "BPE" (vocab, merges
 * as "a b" strings or [a, b] pairs, unk_token, byte_fallback, fuse_unk,
 * ignore_merges); added_tokens (lstrip / rstrip / normalized); normalizer
 * null, NFC / NFD / NFKC / NFKD (unicode_norm.c), Prepend + Replace(" " ->
 * U+2581) (Llama 2), or a Sequence of these; pre_tokenizer null, ByteLevel,
 * Split with the GPT-2, Llama 3 or Qwen 2 pattern (behavior Isolated),
 * Metaspace, or a Sequence of these; decoder ByteLevel, Metaspace, or the
 * Llama 2 sequence (Replace, ByteFallback, Fuse, Strip); post_processor
 * TemplateProcessing (for the BOS id), ByteLevel, or a Sequence. Anything
 * else is refused with one line naming it: a tokenizer that silently
 * encodes differently from its source is worse than none.
 *
 * Ownership: the pd_tokenizer owns its pdi_hf (freed by
 * pd_tokenizer_destroy through pdi_hf_destroy).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "data/data_internal.h"
#include "io/file.h"

#define HF_MAX_TOKEN_BYTES (1 << 16)

/* ---- GPT-2's byte <-> character map -------------------------------------
 * Bytes that are printable Latin-1 (! .. ~, ¡ .. ¬, ® .. ÿ) stand for
 * themselves; the other 68 become U+0100 + k in byte order. */
static void byte_map(uint32_t byte2cp[256])
{
    int k = 0;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        byte2cp[b] = keep ? (uint32_t)b : 0x100 + (uint32_t)k++;
    }
}

static int utf8_put(uint32_t cp, unsigned char *o)
{
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = (unsigned char)(0xC0 | cp >> 6); o[1] = (unsigned char)(0x80 | (cp & 63)); return 2; }
    o[0] = (unsigned char)(0xE0 | cp >> 12);
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 63));
    o[2] = (unsigned char)(0x80 | (cp & 63));
    return 3; /* the map and U+2581 need no more */
}

/* Next code point of valid UTF-8 s[*i..n), or -1 (and *i unchanged). */
static int64_t utf8_next(const unsigned char *s, size_t n, size_t *i)
{
    unsigned c = s[*i];
    if (c < 0x80) { (*i)++; return c; }
    int l = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (!l || *i + (size_t)l > n) return -1;
    uint32_t cp = c & (0x7F >> l);
    for (int k = 1; k < l; k++) {
        if ((s[*i + k] & 0xC0) != 0x80) return -1;
        cp = cp << 6 | (s[*i + k] & 63);
    }
    *i += (size_t)l;
    return cp;
}

/* ---- model vocabulary index ---------------------------------------------- */
static uint64_t str_hash(const unsigned char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return pdi_mix64(h);
}

static int32_t *vocab_slot(const struct pdi_hf *hf, const unsigned char *s, size_t n)
{
    size_t mask = hf->vcap - 1;
    for (size_t i = str_hash(s, n) & mask;; i = (i + 1) & mask) {
        int32_t *slot = &hf->vslot[i];
        if (!*slot) return slot;
        int id = *slot - 1;
        if (hf->ms_len[id] == n && !memcmp(hf->ms + hf->ms_off[id], s, n)) return slot;
    }
}

int32_t pdi_hf_vocab_get(const struct pdi_hf *hf, const unsigned char *s, size_t n)
{
    return *vocab_slot(hf, s, n) - 1;
}

void pdi_hf_destroy(struct pdi_hf *hf)
{
    if (!hf) return;
    free(hf->json);
    free(hf->ms);
    free(hf->ms_off);
    free(hf->ms_len);
    free(hf->vslot);
    free(hf->merge_out);
    for (int a = 0; a < hf->n_added; a++) free(hf->added[a].key);
    free(hf->added);
    free(hf);
}

/* ---- reading ------------------------------------------------------------- */
/* The state of one read: errors go to why (one line) and stop it. */
struct rd {
    struct pd_tokenizer *tok;
    struct pdi_hf *hf;
    int16_t cp2byte[0x144]; /* byte-level character -> byte, -1 for others */
    char why[400];
};

static int fail(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct rd *r, const char *fmt, ...)
{
    if (!r->why[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->why, sizeof r->why, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A boolean member: 1, 0, or dflt when absent or null. */
static int jbool(const cJSON *o, const char *key, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

static int jid(const cJSON *v, int32_t *out)
{
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0 && d < PD_TOKENIZER_MAX_VOCAB) || d != (double)(int32_t)d) return 0;
    *out = (int32_t)d;
    return 1;
}

static const char *qs(const char *s, char *buf) { return pdi_quote(s, buf, PDI_QUOTE_BUF); }

/* An object's "type", or a placeholder for messages. */
static const char *type_of(const cJSON *o)
{
    const char *t = jstr(o, "type");
    return t ? t : "(no type)";
}

#define U2581 "\xE2\x96\x81"

static const char *const rx_gpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char *const rx_llama3 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
static const char *const rx_qwen2 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

/* pdi_pretok_end (tokenizer.c) over bytes mapped by byte_map: one
 * character per byte, so {m,n} count bytes. Classes: newline Ċ č (\n \r);
 * blank Ġ ĉ ċ Č (space, \t, \v, \f); letters: ASCII ones and the bytes
 * from 0x80; digits; anything else. Alternatives in the order the function
 * decides: a newline; a space joining the run of one class after it; a run
 * of blanks less a last space that joins the word after it; a run of blanks;
 * a run of one class. */
#define RX_NL "\u010A\u010D"
#define RX_WS "\u0120\u0109\u010B\u010C"
#define RX_L "A-Za-z\u00A1-\u00AC\u00AE-\u00FF\u0122-\u0143"
#define RX_P "[^" RX_NL RX_WS RX_L "0-9]"
_Static_assert(PDI_PIECE_MAX == 256, "rx_paddlec spells the piece limit (255 after a space, 256)");
static const char *const rx_paddlec =
    "[" RX_NL "]|\u0120(?:[" RX_L "]{1,255}|[0-9]{1,255}|" RX_P "{1,255})|[" RX_WS "]{1,255}(?=\u0120[^" RX_NL RX_WS
    "])|[" RX_WS "]{1,256}|[" RX_L "]{1,256}|[0-9]{1,256}|" RX_P "{1,256}";

static int read_pretok(struct rd *r, const cJSON *p)
{
    char qb[PDI_QUOTE_BUF];
    struct pdi_hf *hf = r->hf;
    if (!p || cJSON_IsNull(p)) return 0;
    const char *t = type_of(p);
    if (!strcmp(t, "Sequence")) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers"))
            if (read_pretok(r, e)) return -1;
        return 0;
    }
    if (!strcmp(t, "ByteLevel")) {
        hf->byte_level = 1;
        hf->add_prefix_space = jbool(p, "add_prefix_space", 0);
        if (jbool(p, "use_regex", 1)) {
            if (hf->regex) return fail(r, "pre_tokenizer: ByteLevel's regex after a Split");
            hf->regex = PDI_HF_RX_GPT2;
        }
        return 0;
    }
    if (!strcmp(t, "Split")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
        const char *rx = jstr(pat, "Regex"), *beh = jstr(p, "behavior");
        if (!rx) return fail(r, "pre_tokenizer: Split without a \"Regex\" pattern is not supported");
        if (!beh || strcmp(beh, "Isolated") || jbool(p, "invert", 0))
            return fail(r, "pre_tokenizer: Split behavior %s (only \"Isolated\", not inverted) is not supported",
                        qs(beh ? beh : "(none)", qb));
        if (hf->regex) return fail(r, "pre_tokenizer: more than one split pattern");
        if (!strcmp(rx, rx_paddlec)) {   /* paddlec's own pieces, over the mapped bytes (pd_tokenizer_to_hf_json) */
            if (!hf->byte_level) return fail(r, "pre_tokenizer: paddlec's Split pattern before ByteLevel");
            hf->regex = PDI_HF_RX_PADDLEC;
        } else if (!strcmp(rx, rx_gpt2)) hf->regex = PDI_HF_RX_GPT2;
        else if (!strcmp(rx, rx_llama3)) hf->regex = PDI_HF_RX_LLAMA3, hf->max_digits = 3;
        else if (!strcmp(rx, rx_qwen2)) hf->regex = PDI_HF_RX_LLAMA3, hf->max_digits = 1;
        else return fail(r, "pre_tokenizer: Split pattern %s is not one paddlec implements (GPT-2, Llama 3, Qwen 2)",
                         qs(rx, qb));
        return 0;
    }
    if (!strcmp(t, "Metaspace")) {
        const char *rep = jstr(p, "replacement"), *scheme = jstr(p, "prepend_scheme");
        if (rep && strcmp(rep, U2581)) return fail(r, "pre_tokenizer: Metaspace replacement %s (only U+2581)", qs(rep, qb));
        hf->sp_replace = 1;
        if (scheme) {
            if (!strcmp(scheme, "always")) hf->sp_prepend = 3;
            else if (!strcmp(scheme, "first")) hf->sp_prepend = 1;
            else if (!strcmp(scheme, "never")) hf->sp_prepend = 0;
            else return fail(r, "pre_tokenizer: Metaspace prepend_scheme %s", qs(scheme, qb));
        } else {
            hf->sp_prepend = jbool(p, "add_prefix_space", 1) ? 3 : 0;
        }
        hf->sp_split = jbool(p, "split", 1);
        return 0;
    }
    return fail(r, "pre_tokenizer %s is not supported", qs(t, qb));
}

/* The normalizer is applied as: the Unicode form, then Prepend, then
 * Replace (pdi_hf_normalize). Any order of them gives that result, except a
 * compatibility form after Replace (it can make spaces Replace did not see),
 * which is refused, as is a second Unicode form. */
static int read_normalizer(struct rd *r, const cJSON *p)
{
    char qb[PDI_QUOTE_BUF];
    static const char *const forms[] = {"", "NFC", "NFD", "NFKC", "NFKD"};
    if (!p || cJSON_IsNull(p)) return 0;
    const char *t = type_of(p);
    if (!strcmp(t, "Sequence")) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(p, "normalizers"))
            if (read_normalizer(r, e)) return -1;
        return 0;
    }
    for (int f = PDI_UNORM_NFC; f <= PDI_UNORM_NFKD; f++) {
        if (strcmp(t, forms[f])) continue;
        if (r->hf->unorm) return fail(r, "normalizer: %s after %s (one Unicode form only)", forms[f], forms[r->hf->unorm]);
        if (r->hf->norm_replace && (f == PDI_UNORM_NFKC || f == PDI_UNORM_NFKD))
            return fail(r, "normalizer: %s after Replace is not supported", forms[f]);
        r->hf->unorm = f;
        return 0;
    }
    if (!strcmp(t, "Prepend")) {
        const char *s = jstr(p, "prepend");
        if (!s || strcmp(s, U2581)) return fail(r, "normalizer: Prepend of %s (only U+2581)", qs(s ? s : "(none)", qb));
        r->hf->norm_prepend = 1;
        return 0;
    }
    if (!strcmp(t, "Replace")) {
        const char *from = jstr(cJSON_GetObjectItemCaseSensitive(p, "pattern"), "String"), *to = jstr(p, "content");
        if (!from || !to || strcmp(from, " ") || strcmp(to, U2581))
            return fail(r, "normalizer: only Replace of the string \" \" by U+2581 is supported");
        r->hf->norm_replace = r->hf->sp_replace = 1;
        return 0;
    }
    return fail(r, "normalizer %s is not supported", qs(t, qb));
}

static int read_decoder(struct rd *r, const cJSON *p)
{
    char qb[PDI_QUOTE_BUF];
    if (!p || cJSON_IsNull(p)) return 0;
    const char *t = type_of(p);
    if (!strcmp(t, "Sequence")) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(p, "decoders"))
            if (read_decoder(r, e)) return -1;
        return 0;
    }
    if (!strcmp(t, "ByteLevel") || !strcmp(t, "ByteFallback") || !strcmp(t, "Fuse")) return 0;
    if (!strcmp(t, "Replace")) {
        const char *from = jstr(cJSON_GetObjectItemCaseSensitive(p, "pattern"), "String"), *to = jstr(p, "content");
        if (!from || !to || strcmp(from, U2581) || strcmp(to, " "))
            return fail(r, "decoder: only Replace of U+2581 by \" \" is supported");
        return 0;
    }
    if (!strcmp(t, "Strip")) {
        const char *c = jstr(p, "content");
        const cJSON *start = cJSON_GetObjectItemCaseSensitive(p, "start"), *stop = cJSON_GetObjectItemCaseSensitive(p, "stop");
        if (!c || strcmp(c, " ") || !cJSON_IsNumber(start) || start->valuedouble != 1 || !cJSON_IsNumber(stop) ||
            stop->valuedouble != 0)
            return fail(r, "decoder: only Strip of one leading space is supported");
        r->hf->strip_space = 1;
        return 0;
    }
    if (!strcmp(t, "Metaspace")) {
        const char *scheme = jstr(p, "prepend_scheme");
        r->hf->strip_space = scheme ? strcmp(scheme, "never") != 0 : jbool(p, "add_prefix_space", 1);
        return 0;
    }
    return fail(r, "decoder %s is not supported", qs(t, qb));
}

/* Only the BOS id matters: the rest of a post-processor never changes encode. */
static int read_post(struct rd *r, const cJSON *p)
{
    char qb[PDI_QUOTE_BUF];
    if (!p || cJSON_IsNull(p)) return 0;
    const char *t = type_of(p);
    if (!strcmp(t, "Sequence")) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(p, "processors"))
            if (read_post(r, e)) return -1;
        return 0;
    }
    if (!strcmp(t, "TemplateProcessing")) {
        const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(p, "single"), 0);
        const char *name = jstr(cJSON_GetObjectItemCaseSensitive(first, "SpecialToken"), "id");
        if (!name) return 0;
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "special_tokens"), name);
        int32_t id;
        if (!jid(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sp, "ids"), 0), &id))
            return fail(r, "post_processor: template token %s has no id", qs(name, qb));
        r->hf->bos_id = id;
        return 0;
    }
    return 0; /* ByteLevel (offsets only), and others that add nothing at the start */
}

/* Grow the id tables to hold id. */
static int reserve_ids(struct rd *r, int32_t id)
{
    struct pd_tokenizer *tok = r->tok;
    struct pdi_hf *hf = r->hf;
    if (id < tok->n_tok) return 0;
    if (id >= tok->cap_tok) {
        int cap = tok->cap_tok ? tok->cap_tok : 1024;
        while (cap <= id) cap *= 2;
        unsigned char **t = pdi_realloc(tok->tok, (size_t)cap * sizeof *t);
        if (t) tok->tok = t;
        size_t *l = pdi_realloc(tok->tok_len, (size_t)cap * sizeof *l);
        if (l) tok->tok_len = l;
        size_t *o = pdi_realloc(hf->ms_off, (size_t)cap * sizeof *o);
        if (o) hf->ms_off = o;
        uint32_t *ml = pdi_realloc(hf->ms_len, (size_t)cap * sizeof *ml);
        if (ml) hf->ms_len = ml;
        if (!t || !l || !o || !ml) return fail(r, "out of memory");
        tok->cap_tok = cap;
    }
    for (int i = tok->n_tok; i <= id; i++) { /* an id the file never names decodes to nothing */
        if (!(tok->tok[i] = pdi_malloc(1))) {
            tok->n_tok = i;
            return fail(r, "out of memory");
        }
        tok->tok_len[i] = 0;
        hf->ms_len[i] = UINT32_MAX;
        hf->ms_off[i] = 0;
    }
    tok->n_tok = id + 1;
    return 0;
}

static int set_bytes(struct rd *r, int32_t id, const unsigned char *b, size_t n)
{
    unsigned char *c = pdi_malloc(n ? n : 1);
    if (!c) return fail(r, "out of memory");
    if (n) memcpy(c, b, n);
    free(r->tok->tok[id]);
    r->tok->tok[id] = c;
    r->tok->tok_len[id] = n;
    return 0;
}

/* The decoded bytes of a token string: byte-level characters back to their
 * bytes (a string with other characters is kept as it is); U+2581 as a
 * space; <0xNN> as its byte (with byte fallback). */
static int decoded(struct rd *r, int32_t id, const char *s, int is_added)
{
    struct pdi_hf *hf = r->hf;
    size_t n = strlen(s);
    unsigned char *buf = pdi_malloc(n + 1);
    if (!buf) return fail(r, "out of memory");
    size_t k = 0;
    const unsigned char *u = (const unsigned char *)s;
    unsigned x;
    if (hf->byte_level) {
        int ok = 1;
        for (size_t i = 0; i < n && ok;) {
            int64_t cp = utf8_next(u, n, &i);
            ok = cp >= 0 && cp < 0x144 && r->cp2byte[cp] >= 0;
            if (ok) buf[k++] = (unsigned char)r->cp2byte[cp];
        }
        if (!ok) memcpy(buf, s, k = n);
    } else if (hf->byte_fallback && !is_added && n == 6 && sscanf(s, "<0x%2X>", &x) == 1 && s[5] == '>') {
        buf[k++] = (unsigned char)x;
    } else {
        for (size_t i = 0; i < n; i++) {
            if (hf->sp_replace && i + 3 <= n && !memcmp(s + i, U2581, 3)) {
                buf[k++] = ' ';
                i += 2;
            } else {
                buf[k++] = u[i];
            }
        }
    }
    int rc = set_bytes(r, id, buf, k);
    free(buf);
    return rc;
}

static int read_vocab(struct rd *r, const cJSON *vocab)
{
    char qb[PDI_QUOTE_BUF];
    struct pdi_hf *hf = r->hf;
    if (!cJSON_IsObject(vocab)) return fail(r, "model.vocab is not an object");
    size_t total = 0, count = 0;
    const cJSON *e;
    int32_t max_id = -1, id;
    cJSON_ArrayForEach(e, vocab) {
        if (!jid(e, &id)) return fail(r, "model.vocab: %s has no valid id", qs(e->string, qb));
        size_t n = strlen(e->string);
        if (n > HF_MAX_TOKEN_BYTES) return fail(r, "model.vocab: a token of %zu bytes", n);
        total += n;
        count++;
        if (id > max_id) max_id = id;
    }
    if (!count) return fail(r, "model.vocab is empty");
    if (reserve_ids(r, max_id)) return -1;
    hf->vcap = 16;
    while (hf->vcap < 2 * count + 2) hf->vcap *= 2;
    hf->vslot = pdi_calloc(hf->vcap, sizeof *hf->vslot);
    hf->ms = pdi_malloc(total + 1);
    if (!hf->vslot || !hf->ms) return fail(r, "out of memory");
    size_t off = 0;
    cJSON_ArrayForEach(e, vocab) {
        jid(e, &id);
        size_t n = strlen(e->string);
        if (hf->ms_len[id] != UINT32_MAX) return fail(r, "model.vocab: id %d is given twice", id);
        memcpy(hf->ms + off, e->string, n);
        hf->ms_off[id] = off;
        hf->ms_len[id] = (uint32_t)n;
        off += n;
        int32_t *slot = vocab_slot(hf, (const unsigned char *)e->string, n);
        if (*slot) return fail(r, "model.vocab: %s is given twice", qs(e->string, qb));
        *slot = id + 1;
        if (decoded(r, id, e->string, 0)) return -1;
    }
    return 0;
}

static int read_merges(struct rd *r, const cJSON *merges)
{
    char qb[PDI_QUOTE_BUF];
    struct pd_tokenizer *tok = r->tok;
    struct pdi_hf *hf = r->hf;
    if (!cJSON_IsArray(merges)) return fail(r, "model.merges is not an array");
    int n = cJSON_GetArraySize(merges);
    tok->merges = pdi_malloc((size_t)(n ? n : 1) * 2 * sizeof *tok->merges);
    hf->merge_out = pdi_malloc((size_t)(n ? n : 1) * sizeof *hf->merge_out);
    pdi_u64map_destroy(tok->rank);
    tok->rank = pdi_u64map_create((size_t)n);
    if (!tok->merges || !hf->merge_out || !tok->rank) return fail(r, "out of memory");
    char *cat = NULL;
    size_t cat_cap = 0;
    const cJSON *m;
    int rc = 0;
    cJSON_ArrayForEach(m, merges) {
        const char *a, *b;
        size_t la, lb;
        if (cJSON_IsString(m)) {
            a = m->valuestring;
            const char *sp = strchr(a, ' ');
            if (!sp || strchr(sp + 1, ' ')) { rc = fail(r, "model.merges[%d]: %s is not \"a b\"", tok->n_merges, qs(a, qb)); break; }
            la = (size_t)(sp - a);
            b = sp + 1;
        } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(m, 1))) {
            a = cJSON_GetArrayItem(m, 0)->valuestring;
            b = cJSON_GetArrayItem(m, 1)->valuestring;
            la = strlen(a);
        } else {
            rc = fail(r, "model.merges[%d] is neither \"a b\" nor a pair of strings", tok->n_merges);
            break;
        }
        lb = strlen(b);
        if (la + lb > cat_cap) {
            char *c = pdi_realloc(cat, la + lb + 64);
            if (!c) { rc = fail(r, "out of memory"); break; }
            cat = c;
            cat_cap = la + lb + 64;
        }
        memcpy(cat, a, la);
        memcpy(cat + la, b, lb);
        int32_t ia = pdi_hf_vocab_get(hf, (const unsigned char *)a, la);
        int32_t ib = pdi_hf_vocab_get(hf, (const unsigned char *)b, lb);
        int32_t io = pdi_hf_vocab_get(hf, (const unsigned char *)cat, la + lb);
        if (ia < 0 || ib < 0 || io < 0) {
            rc = fail(r, "model.merges[%d]: %s is not in the vocabulary", tok->n_merges,
                      pdi_quote_n(ia < 0 ? a : ib < 0 ? b : cat, ia < 0 ? la : ib < 0 ? lb : la + lb, qb, sizeof qb));
            break;
        }
        uint64_t key = pdi_pair_key(ia, ib);
        if (pdi_u64map_get(tok->rank, key) < 0) { /* a repeated merge keeps its first rank */
            if (pdi_u64map_put(tok->rank, key, tok->n_merges)) { rc = fail(r, "out of memory"); break; }
        }
        tok->merges[2 * tok->n_merges] = ia;
        tok->merges[2 * tok->n_merges + 1] = ib;
        hf->merge_out[tok->n_merges] = io;
        tok->n_merges++;
    }
    free(cat);
    return rc;
}

static int read_added(struct rd *r, const cJSON *added)
{
    char qb[PDI_QUOTE_BUF];
    struct pdi_hf *hf = r->hf;
    if (!added || cJSON_IsNull(added)) return 0;
    if (!cJSON_IsArray(added)) return fail(r, "added_tokens is not an array");
    int n = cJSON_GetArraySize(added);
    hf->added = pdi_calloc((size_t)(n ? n : 1), sizeof *hf->added);
    if (!hf->added) return fail(r, "out of memory");
    const cJSON *a;
    cJSON_ArrayForEach(a, added) {
        int32_t id;
        const char *content = jstr(a, "content");
        if (!jid(cJSON_GetObjectItemCaseSensitive(a, "id"), &id) || !content || !*content)
            return fail(r, "added_tokens: an entry needs an \"id\" and a non-empty \"content\"");
        if (strlen(content) > HF_MAX_TOKEN_BYTES) return fail(r, "added_tokens: a token of %zu bytes", strlen(content));
        if (jbool(a, "single_word", 0))
            return fail(r, "added_tokens: %s is single_word, which is not supported", qs(content, qb));
        if (reserve_ids(r, id)) return -1;
        struct pdi_hf_added *x = &hf->added[hf->n_added++];
        *x = (struct pdi_hf_added){id, (unsigned char)jbool(a, "lstrip", 0), (unsigned char)jbool(a, "rstrip", 0),
                                   (unsigned char)jbool(a, "normalized", !jbool(a, "special", 0)), NULL, 0};
        if (x->normalized && pdi_hf_has_normalizer(hf)) {
            /* matched in the normalized text as the normalized content, and
             * decoded from that, as `tokenizers` does */
            char *key = (char *)pdi_hf_normalize(hf, (const unsigned char *)content, strlen(content), 1, &x->key_len);
            if (!key) return fail(r, "out of memory");
            x->key = (unsigned char *)key; /* NUL-terminated */
            if (decoded(r, id, key, 1)) return -1;
            continue;
        }
        /* decoded as the decoder would: ByteLevel maps its characters too */
        if (decoded(r, id, content, 1)) return -1;
        if (!hf->byte_level) {
            /* the text the user sees is the content itself */
            if (set_bytes(r, id, (const unsigned char *)content, strlen(content))) return -1;
        }
    }
    return 0;
}

/* Sort the added tokens longest first, so the first match is the longest. */
static void sort_added(struct pd_tokenizer *tok)
{
    struct pdi_hf *hf = tok->hf;
#define MATCH_LEN(a) ((a).key ? (a).key_len : tok->tok_len[(a).id])
    for (int i = 1; i < hf->n_added; i++) { /* insertion sort: stable, and there are few */
        struct pdi_hf_added x = hf->added[i];
        int j = i;
        while (j > 0 && MATCH_LEN(hf->added[j - 1]) < MATCH_LEN(x)) {
            hf->added[j] = hf->added[j - 1];
            j--;
        }
        hf->added[j] = x;
    }
#undef MATCH_LEN
}

static int read_model(struct rd *r, const cJSON *model)
{
    char qb[PDI_QUOTE_BUF];
    struct pdi_hf *hf = r->hf;
    const char *t = type_of(model);
    if (strcmp(t, "BPE")) return fail(r, "model type %s is not supported (only BPE)", qs(t, qb));
    const cJSON *drop = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (drop && !cJSON_IsNull(drop) && !(cJSON_IsNumber(drop) && drop->valuedouble == 0))
        return fail(r, "model.dropout is not supported");
    const char *csp = jstr(model, "continuing_subword_prefix"), *eow = jstr(model, "end_of_word_suffix");
    if ((csp && *csp) || (eow && *eow))
        return fail(r, "model: continuing_subword_prefix / end_of_word_suffix are not supported");
    hf->byte_fallback = jbool(model, "byte_fallback", 0);
    hf->fuse_unk = jbool(model, "fuse_unk", 0);
    hf->ignore_merges = jbool(model, "ignore_merges", 0);
    if (read_vocab(r, cJSON_GetObjectItemCaseSensitive(model, "vocab"))) return -1;
    if (read_merges(r, cJSON_GetObjectItemCaseSensitive(model, "merges"))) return -1;
    const char *unk = jstr(model, "unk_token");
    hf->unk_id = unk ? pdi_hf_vocab_get(hf, (const unsigned char *)unk, strlen(unk)) : -1;
    if (unk && hf->unk_id < 0) return fail(r, "model.unk_token %s is not in the vocabulary", qs(unk, qb));
    /* initial symbols of byte-level: every byte's character must exist */
    uint32_t byte2cp[256];
    byte_map(byte2cp);
    for (int b = 0; b < 256; b++) {
        unsigned char u[4];
        char name[8];
        if (hf->byte_level) {
            hf->byte_id[b] = pdi_hf_vocab_get(hf, u, (size_t)utf8_put(byte2cp[b], u));
            if (hf->byte_id[b] < 0) return fail(r, "model.vocab lacks the byte-level character of byte 0x%02X", b);
        } else {
            snprintf(name, sizeof name, "<0x%02X>", b);
            hf->byte_id[b] = pdi_hf_vocab_get(hf, (const unsigned char *)name, 6);
        }
    }
    return 0;
}

struct pd_tokenizer *pdi_hf_from_cjson(const cJSON *root, const char *json)
{
    struct rd r = {0};
    char qb[PDI_QUOTE_BUF];
    r.tok = pdi_calloc(1, sizeof *r.tok);
    r.hf = pdi_calloc(1, sizeof *r.hf);
    if (!r.tok || !r.hf || !(r.hf->json = pdi_strdup(json))) {
        free(r.tok);
        pdi_hf_destroy(r.hf);
        return pdi_error(PD_ERR_NOMEM, "tokenizer.json: out of memory");
    }
    r.tok->kind = PD_TOKENIZER_HF;
    r.tok->hf = r.hf;
    r.hf->bos_id = -1;
    r.hf->unk_id = -1;
    uint32_t byte2cp[256];
    byte_map(byte2cp);
    memset(r.cp2byte, 0xff, sizeof r.cp2byte);
    for (int b = 0; b < 256; b++) r.cp2byte[byte2cp[b]] = (int16_t)b;
    const cJSON *trunc = cJSON_GetObjectItemCaseSensitive(root, "truncation");
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "padding");
    (void)pad; /* padding only concerns batches of several texts */
    if (trunc && !cJSON_IsNull(trunc)) fail(&r, "truncation is not supported");
    else if (read_normalizer(&r, cJSON_GetObjectItemCaseSensitive(root, "normalizer"))) {}
    else if (read_pretok(&r, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"))) {}
    else if (r.hf->byte_level && (r.hf->sp_replace || r.hf->sp_prepend || r.hf->norm_prepend))
        fail(&r, "ByteLevel together with U+2581 spaces is not supported");
    else if (read_decoder(&r, cJSON_GetObjectItemCaseSensitive(root, "decoder"))) {}
    else if (read_model(&r, cJSON_GetObjectItemCaseSensitive(root, "model"))) {}
    else if (read_added(&r, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"))) {}
    else if (read_post(&r, cJSON_GetObjectItemCaseSensitive(root, "post_processor"))) {}
    else if (r.hf->bos_id >= r.tok->n_tok) fail(&r, "post_processor: BOS id %d is outside the vocabulary", r.hf->bos_id);
    (void)qb;
    if (r.why[0]) {
        pd_tokenizer_destroy(r.tok);
        return pdi_error(PD_ERR_INVALID, "tokenizer.json: %s", r.why);
    }
    sort_added(r.tok);
    return r.tok;
}

/* ---- GPT-2's encoder.json + vocab.bpe ------------------------------------ */
struct pd_tokenizer *pd_tokenizer_load_gpt2(const char *encoder_json, const char *vocab_bpe)
{
    char qb[PDI_QUOTE_BUF];
    if (!encoder_json || !vocab_bpe) return pdi_error(PD_ERR_INVALID, "tokenizer_load_gpt2: a path is NULL");
    char *enc = pdi_file_read_all(encoder_json, PD_TOKENIZER_MAX_FILE, NULL, "tokenizer_load_gpt2");
    if (!enc) return NULL;
    size_t blen;
    char *bpe = pdi_file_read_all(vocab_bpe, PD_TOKENIZER_MAX_FILE, &blen, "tokenizer_load_gpt2");
    if (!bpe) {
        free(enc);
        return NULL;
    }
    const char *end = NULL;
    cJSON *vocab = pdi_json_parse(enc, strlen(enc) + 1, &end);
    free(enc);
    cJSON *root = cJSON_CreateObject(), *model = cJSON_CreateObject(), *merges = cJSON_CreateArray();
    const char *why = NULL, *which = encoder_json;
    if (!vocab || !cJSON_IsObject(vocab)) why = "is not a JSON object";
    else if (!root || !model || !merges) why = "out of memory";
    /* vocab.bpe: "#version: 0.2" then one "a b" per line (HF's merge strings) */
    char *line = bpe, *stop = bpe + blen;
    if (!why && strncmp(line, "#version", 8)) why = "does not start with \"#version\"", which = vocab_bpe;
    while (!why && line < stop) {
        char *nl = memchr(line, '\n', (size_t)(stop - line));
        char *le = nl ? nl : stop;
        if (le > line && le[-1] == '\r') le[-1] = 0;
        *le = 0;
        if (strncmp(line, "#version", 8) && *line && !cJSON_AddItemToArray(merges, cJSON_CreateString(line)))
            why = "out of memory";
        line = le + 1;
    }
    int32_t eot = -1;
    if (!why) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(vocab, "<|endoftext|>");
        if (e && !jid(e, &eot)) why = "has a bad id for <|endoftext|>";
    }
    struct pd_tokenizer *tok = NULL;
    if (!why) {
        cJSON *bl = cJSON_CreateObject(), *dec = cJSON_CreateObject(), *added = cJSON_CreateArray();
        cJSON_AddStringToObject(bl, "type", "ByteLevel");
        cJSON_AddBoolToObject(bl, "add_prefix_space", 0);
        cJSON_AddBoolToObject(bl, "trim_offsets", 1);
        cJSON_AddBoolToObject(bl, "use_regex", 1);
        cJSON_AddStringToObject(dec, "type", "ByteLevel");
        if (eot >= 0) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", eot);
            cJSON_AddStringToObject(a, "content", "<|endoftext|>");
            cJSON_AddBoolToObject(a, "special", 1);
            cJSON_AddItemToArray(added, a);
        }
        cJSON_AddStringToObject(model, "type", "BPE");
        cJSON_AddItemToObject(model, "vocab", vocab);
        vocab = NULL;
        cJSON_AddItemToObject(model, "merges", merges);
        merges = NULL;
        cJSON_AddItemToObject(root, "added_tokens", added);
        cJSON_AddItemToObject(root, "pre_tokenizer", bl);
        cJSON_AddItemToObject(root, "decoder", dec);
        cJSON_AddItemToObject(root, "model", model);
        model = NULL;
        char *text = cJSON_PrintUnformatted(root);
        if (!text) why = "out of memory";
        else tok = pdi_hf_from_cjson(root, text);
        cJSON_free(text);
    }
    cJSON_Delete(vocab);
    cJSON_Delete(merges);
    cJSON_Delete(model);
    cJSON_Delete(root);
    free(bpe);
    if (why) return pdi_error(PD_ERR_INVALID, "tokenizer_load_gpt2: %s %s", qs(which, qb), why);
    return tok;
}

/* ---- paddlec's own tokenizers as a tokenizer.json -------------------------
 * (pd_tokenizer_to_hf_json, include/pd/data.h) */

/* The vocabulary string of id: its bytes through byte_map (no NUL inside;
 * at most 2 bytes of UTF-8 per byte). */
static char *mapped(const struct pd_tokenizer *tok, const uint32_t byte2cp[256], int32_t id, char *buf)
{
    size_t k = 0;
    for (size_t i = 0; i < tok->tok_len[id]; i++) k += (size_t)utf8_put(byte2cp[tok->tok[id][i]], (unsigned char *)buf + k);
    buf[k] = 0;
    return buf;
}

/* First id with the same bytes as id among those already seen (slots: id + 1,
 * open addressing over an FNV-1a hash), or id itself after recording it. */
static int32_t first_same(const struct pd_tokenizer *tok, int32_t *slot, size_t mask, int32_t id)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < tok->tok_len[id]; i++) h = (h ^ tok->tok[id][i]) * 1099511628211ull;
    for (size_t s = (size_t)h & mask;; s = (s + 1) & mask) {
        int32_t o = slot[s] - 1;
        if (o < 0) {
            slot[s] = id + 1;
            return id;
        }
        if (tok->tok_len[o] == tok->tok_len[id] && !memcmp(tok->tok[o], tok->tok[id], tok->tok_len[id])) return o;
    }
}

/* Fills o as a ByteLevel pre-tokenizer or decoder over bytes alone. */
static int byte_level(cJSON *o)
{
    return o && cJSON_AddStringToObject(o, "type", "ByteLevel") && cJSON_AddBoolToObject(o, "add_prefix_space", 0) &&
           cJSON_AddBoolToObject(o, "trim_offsets", 1) && cJSON_AddBoolToObject(o, "use_regex", 0);
}

/* The pre-tokenizer: bytes, then paddlec's pieces (bytes alone need none). */
static int pretok_to_hf(const struct pd_tokenizer *tok, cJSON *pre)
{
    if (!tok->n_merges) return byte_level(pre);
    cJSON *seq = cJSON_AddArrayToObject(pre, "pretokenizers"), *bl = cJSON_CreateObject();
    if (!seq || !cJSON_AddItemToArray(seq, bl)) {
        cJSON_Delete(bl);
        return 0;
    }
    cJSON *split = cJSON_CreateObject();
    if (!cJSON_AddItemToArray(seq, split)) {
        cJSON_Delete(split);
        return 0;
    }
    cJSON *pat = cJSON_AddObjectToObject(split, "pattern");
    return cJSON_AddStringToObject(pre, "type", "Sequence") && byte_level(bl) && pat &&
           cJSON_AddStringToObject(split, "type", "Split") &&
           cJSON_AddStringToObject(pat, "Regex", rx_paddlec) && cJSON_AddStringToObject(split, "behavior", "Isolated") &&
           cJSON_AddBoolToObject(split, "invert", 0);
}

/* The model, pre-tokenizer, decoder and added tokens of a byte or BPE
 * tokenizer into root. 0, or -1 when out of memory. */
static int own_to_hf(const struct pd_tokenizer *tok, cJSON *root)
{
    uint32_t byte2cp[256];
    byte_map(byte2cp);
    int n_model = 256 + tok->n_merges;
    size_t cap = 16;
    while (cap < 2 * (size_t)n_model) cap *= 2;
    int32_t *slot = pdi_calloc(cap, sizeof *slot);
    char *a = pdi_malloc(2 * PDI_PIECE_MAX + 1), *b = pdi_malloc(2 * PDI_PIECE_MAX + 1);
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    int ok = slot && a && b && added && cJSON_AddNullToObject(root, "normalizer");
    cJSON *pre = ok ? cJSON_AddObjectToObject(root, "pre_tokenizer") : NULL;
    ok = ok && pretok_to_hf(tok, pre) && cJSON_AddNullToObject(root, "post_processor") &&
         byte_level(cJSON_AddObjectToObject(root, "decoder"));
    cJSON *model = ok ? cJSON_AddObjectToObject(root, "model") : NULL;
    ok = model && cJSON_AddStringToObject(model, "type", "BPE") && cJSON_AddNullToObject(model, "dropout") &&
         cJSON_AddNullToObject(model, "unk_token") && cJSON_AddNullToObject(model, "continuing_subword_prefix") &&
         cJSON_AddNullToObject(model, "end_of_word_suffix") && cJSON_AddBoolToObject(model, "fuse_unk", 0) &&
         cJSON_AddBoolToObject(model, "byte_fallback", 0) && cJSON_AddBoolToObject(model, "ignore_merges", 0);
    cJSON *vocab = ok ? cJSON_AddObjectToObject(model, "vocab") : NULL;
    cJSON *merges = vocab ? cJSON_AddArrayToObject(model, "merges") : NULL;
    ok = merges != NULL;
    for (int32_t id = 0; ok && id < n_model; id++) /* a string two merges spell names the first id */
        if (first_same(tok, slot, cap - 1, id) == id)
            ok = cJSON_AddNumberToObject(vocab, mapped(tok, byte2cp, id, a), id) != NULL;
    for (int r = 0; ok && r < tok->n_merges; r++) {
        mapped(tok, byte2cp, tok->merges[2 * r], a);
        mapped(tok, byte2cp, tok->merges[2 * r + 1], b);
        size_t la = strlen(a);
        a[la] = ' ';
        memcpy(a + la + 1, b, strlen(b) + 1);
        ok = cJSON_AddItemToArray(merges, cJSON_CreateString(a));
    }
    for (int32_t id = n_model; ok && id < tok->n_tok; id++) {
        cJSON *e = cJSON_CreateObject();
        if (!cJSON_AddItemToArray(added, e)) {
            cJSON_Delete(e);
            ok = 0;
            break;
        }
        memcpy(a, tok->tok[id], tok->tok_len[id]); /* a special token's text: at most PDI_PIECE_MAX bytes, no NUL */
        a[tok->tok_len[id]] = 0;
        ok = cJSON_AddNumberToObject(e, "id", id) && cJSON_AddStringToObject(e, "content", a) &&
             cJSON_AddBoolToObject(e, "single_word", 0) && cJSON_AddBoolToObject(e, "lstrip", 0) &&
             cJSON_AddBoolToObject(e, "rstrip", 0) && cJSON_AddBoolToObject(e, "normalized", 0) &&
             cJSON_AddBoolToObject(e, "special", 1);
    }
    free(b);
    free(a);
    free(slot);
    return ok ? 0 : -1;
}

char *pd_tokenizer_to_hf_json(const struct pd_tokenizer *tok)
{
    if (!tok) return pdi_error(PD_ERR_NULL, "tokenizer_to_hf_json: tokenizer is NULL");
    if (tok->hf) {
        char *s = pdi_strdup(tok->hf->json);
        return s ? s : pdi_error(PD_ERR_NOMEM, "tokenizer_to_hf_json: out of memory");
    }
    for (int id = tok->n_tok - tok->n_special; id < tok->n_tok; id++)
        if (memchr(tok->tok[id], 0, tok->tok_len[id]))
            return pdi_error(PD_ERR_INVALID, "tokenizer_to_hf_json: special token %d contains a NUL byte", id);
    cJSON *root = cJSON_CreateObject();
    char *s = NULL;
    if (root && cJSON_AddStringToObject(root, "version", "1.0") && cJSON_AddNullToObject(root, "truncation") &&
        cJSON_AddNullToObject(root, "padding") && !own_to_hf(tok, root))
        s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!s) return pdi_error(PD_ERR_NOMEM, "tokenizer_to_hf_json: out of memory");
    char *out = pdi_strdup(s); /* the library's allocator, freed with free() like every string it returns */
    cJSON_free(s);
    return out ? out : pdi_error(PD_ERR_NOMEM, "tokenizer_to_hf_json: out of memory");
}

int pd_tokenizer_save_hf(const struct pd_tokenizer *tok, const char *path)
{
    if (!path) return pdi_errorf(PD_ERR_INVALID, "tokenizer_save_hf: path is NULL");
    char *s = pd_tokenizer_to_hf_json(tok);
    if (!s) return pd_last_status();
    size_t n = strlen(s);
    char *t = pdi_realloc(s, n + 2);
    if (!t) {
        free(s);
        return pdi_errorf(PD_ERR_NOMEM, "tokenizer_save_hf: out of memory");
    }
    t[n] = '\n';
    int st = pdi_file_write_atomic(path, t, n + 1, "tokenizer_save_hf");
    free(t);
    return st;
}
