/* paddle.c — the document split of a text dataset (include/pd/data.h,
 * pd_text_dataset_from_documents): whole documents, chosen at random, are
 * held out for validation instead of the text's tail (the tail of a book or
 * a log is rarely like the rest of it).
 *
 * A document ends after "<|endoftext|>" when the text holds that marker, else
 * after a run of two or more newlines (a paragraph); with fewer than
 * PD_DOCSPLIT_MIN_DOCS paragraphs, after each newline (a line). The last
 * document is whatever follows the last end. The order of the draw is a
 * Fisher-Yates shuffle driven by splitmix64 from the seed, so the split
 * depends on the text, the fraction and the seed only.
 */
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"

#define EOT "<|endoftext|>"

/* Document ends (exclusive offsets) of s[0..n) by the rule above; the last
 * is n. Returns the count (0 on no memory). */
static size_t doc_ends(const char *s, size_t n, int mode, size_t **out)
{
    size_t cap = 64, k = 0;
    size_t *e = pdi_malloc(cap * sizeof *e);
    if (!e) return 0;
    size_t eot = strlen(EOT);
    for (size_t i = 0; i < n;) {
        size_t end = 0;
        if (mode == 0 && n - i >= eot && !memcmp(s + i, EOT, eot)) end = i + eot;
        else if (mode == 1 && s[i] == '\n' && i + 1 < n && s[i + 1] == '\n') {
            end = i;
            while (end < n && s[end] == '\n') end++;
        } else if (mode == 2 && s[i] == '\n') end = i + 1;
        if (!end) {
            i++;
            continue;
        }
        if (k + 1 >= cap) {
            size_t *b = pdi_realloc(e, 2 * cap * sizeof *e);
            if (!b) {
                free(e);
                return 0;
            }
            e = b;
            cap *= 2;
        }
        if (end < n) e[k++] = end;
        i = end;
    }
    e[k++] = n;
    *out = e;
    return k;
}

static uint64_t next_u64(uint64_t *st) { return pdi_mix64(*st += 0x9e3779b97f4a7c15ull); }

struct pd_text_dataset *pd_text_dataset_from_documents(const void *text, size_t len, const struct pd_tokenizer *tok,
                                                       double val_fraction, uint64_t seed)
{
    if (!(val_fraction > 0 && val_fraction < 1))
        return pdi_error(PD_ERR_INVALID, "text dataset: val_fraction must be in (0, 1), got %g", val_fraction);
    if (!text && len) return pdi_error(PD_ERR_INVALID, "text dataset: text is NULL");
    if (!len) return pdi_error(PD_ERR_INVALID, "text dataset: the text is empty");
    const char *s = text;
    size_t eot = strlen(EOT), *ends = NULL, n = 0;
    int has_eot = 0;
    for (size_t i = 0; !has_eot && i + eot <= len; i++) has_eot = s[i] == '<' && !memcmp(s + i, EOT, eot);
    for (int mode = has_eot ? 0 : 1; mode <= 2; mode++) {
        free(ends);
        ends = NULL;
        n = doc_ends(s, len, mode, &ends);
        if (!n) return pdi_error(PD_ERR_NOMEM, "text dataset: out of memory");
        if (mode == 0 || n >= PD_DOCSPLIT_MIN_DOCS) break;
    }
    if (n < 2) { /* a single line: no document to hold out, so its tail */
        free(ends);
        return pd_text_dataset_from_memory(text, len, tok, val_fraction);
    }
    size_t *order = pdi_malloc(n * sizeof *order);
    unsigned char *is_val = pdi_calloc(n, 1);
    char *train = pdi_malloc(len), *val = pdi_malloc(len);
    struct pd_text_dataset *ds = NULL;
    if (!order || !is_val || !train || !val) {
        pdi_error(PD_ERR_NOMEM, "text dataset: out of memory");
        goto done;
    }
    uint64_t st = seed;
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(((unsigned __int128)next_u64(&st) * (i + 1)) >> 64), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    double want = val_fraction * (double)len, have = 0;
    for (size_t k = 0; k < n - 1 && (k == 0 || have < want); k++) {
        size_t d = order[k], b = d ? ends[d - 1] : 0;
        is_val[d] = 1;
        have += (double)(ends[d] - b);
    }
    size_t nt = 0, nv = 0;
    for (size_t d = 0; d < n; d++) {
        size_t b = d ? ends[d - 1] : 0, l = ends[d] - b;
        memcpy(is_val[d] ? val + nv : train + nt, s + b, l);
        *(is_val[d] ? &nv : &nt) += l;
    }
    ds = pd_text_dataset_from_parts(train, nt, val, nv, tok);
done:
    free(order);
    free(is_val);
    free(train);
    free(val);
    free(ends);
    return ds;
}
