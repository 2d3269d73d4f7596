/* paddle.c — the built-in data set: generated arithmetic, its held-out task
 * and the exact-match scorer (include/pd/data.h, docs/data.md).
 *
 * A line is "a+b=c\n" (or "a-b=c\n" with a >= b) where each operand has a
 * digit count drawn uniformly from 1..max_digits and then a value uniform
 * among the numbers with that many digits, so short operands are common.
 * The answer is written least significant digit first by default: a model
 * emitting digits left to right then computes each digit from the two digits
 * at the same place and the carry it just wrote, instead of having to resolve
 * the whole carry chain before its first digit.
 *
 * Hold-out: a problem is held out when a hash of (op, operands) falls in the
 * first heldout_per_mille of 1000 buckets; for addition the operands are
 * unordered, so "a+b" and "b+a" share a side. The partition depends on
 * nothing else (no seed), so the training text never contains a held-out
 * problem, whatever seeds the text and the task use.
 *
 * Randomness is Philox (seed, counter): text and task are pure functions of
 * their seed and config.
 *
 * Ownership: the task owns its strings; pd_builtin_text returns malloc'd text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/data_internal.h"

#define HOLDOUT_SALT 0x6172697468ull /* "arith": fixes the partition forever */

void pd_arith_config_default(struct pd_arith_config *cfg)
{
    if (!cfg) return;
    cfg->max_digits = 3;
    cfg->subtraction = 0;
    cfg->reverse_answer = 1;
    cfg->heldout_per_mille = 20;
}

int pd_arith_config_validate(const struct pd_arith_config *cfg)
{
    if (!cfg) return pdi_errorf(PD_ERR_NULL, "arith config: config is NULL");
    if (cfg->max_digits < 1 || cfg->max_digits > 9)
        return pdi_errorf(PD_ERR_INVALID, "arith config: max_digits must be in 1..9, got %d", cfg->max_digits);
    if (cfg->heldout_per_mille < 1 || cfg->heldout_per_mille > 500)
        return pdi_errorf(PD_ERR_INVALID, "arith config: heldout_per_mille must be in 1..500, got %d",
                          cfg->heldout_per_mille);
    return PD_OK;
}

static const struct pd_arith_config *config_or_default(const struct pd_arith_config *cfg,
                                                       struct pd_arith_config *tmp)
{
    if (cfg) return pd_arith_config_validate(cfg) ? NULL : cfg;
    pd_arith_config_default(tmp);
    return tmp;
}

int pd_arith_is_heldout(const struct pd_arith_config *cfg, enum pd_arith_op op, int64_t a, int64_t b)
{
    int per_mille = cfg ? cfg->heldout_per_mille : 20;
    if (op == PD_ARITH_ADD && a > b) {
        int64_t t = a;
        a = b;
        b = t;
    }
    uint64_t h = pdi_mix64(HOLDOUT_SALT ^ pdi_mix64((uint64_t)op + 1) ^ pdi_mix64((uint64_t)a * 0x9e3779b97f4a7c15ull + (uint64_t)b));
    return (int)(h % 1000) < per_mille;
}

void pd_arith_format(const struct pd_arith_config *cfg, enum pd_arith_op op, int64_t a, int64_t b, char *prompt,
                     char *answer)
{
    if (!prompt || !answer) {
        pdi_errorf(PD_ERR_NULL, "arith_format: NULL buffer");
        return;
    }
    int reverse = cfg ? cfg->reverse_answer : 1;
    /* wraps instead of overflowing (operands are the caller's; in range they are exact) */
    int64_t c = (int64_t)(op == PD_ARITH_ADD ? (uint64_t)a + (uint64_t)b : (uint64_t)a - (uint64_t)b);
    snprintf(prompt, 24, "%lld%c%lld=", (long long)a, op == PD_ARITH_ADD ? '+' : '-', (long long)b);
    int n = snprintf(answer, 24, "%lld", (long long)c);
    if (reverse)
        for (int i = 0; i < n / 2; i++) {
            char t = answer[i];
            answer[i] = answer[n - 1 - i];
            answer[n - 1 - i] = t;
        }
}

/* ---- sampling ------------------------------------------------------------ */
struct stream {
    uint64_t seed, counter;
    uint32_t buf[4];
    int left;
};

static uint64_t next64(struct stream *s)
{
    if (s->left < 2) {
        pd_philox_fill(s->seed, s->counter, s->buf, 4);
        s->counter += 4;
        s->left = 4;
    }
    uint64_t hi = s->buf[4 - s->left], lo = s->buf[5 - s->left];
    s->left -= 2;
    return hi << 32 | lo;
}

static uint64_t below(struct stream *s, uint64_t m) { return (uint64_t)(((unsigned __int128)next64(s) * m) >> 64); }

static int64_t pow10i(int d)
{
    int64_t p = 1;
    while (d-- > 0) p *= 10;
    return p;
}

static int64_t operand(struct stream *s, int max_digits)
{
    int d = 1 + (int)below(s, (uint64_t)max_digits);
    int64_t lo = d == 1 ? 0 : pow10i(d - 1), hi = pow10i(d);
    return lo + (int64_t)below(s, (uint64_t)(hi - lo));
}

/* One problem from the training distribution, on the chosen side of the
 * hold-out. A tiny problem space (1 digit) may have no problem on one side:
 * after many misses, give up with an error instead of looping. */
static int draw(struct stream *s, const struct pd_arith_config *cfg, int heldout, enum pd_arith_op *op, int64_t *a,
                int64_t *b)
{
    for (int tries = 0; tries < 100000; tries++) {
        *op = cfg->subtraction && below(s, 2) ? PD_ARITH_SUB : PD_ARITH_ADD;
        *a = operand(s, cfg->max_digits);
        *b = operand(s, cfg->max_digits);
        if (*op == PD_ARITH_SUB && *a < *b) {
            int64_t t = *a;
            *a = *b;
            *b = t;
        }
        if (pd_arith_is_heldout(cfg, *op, *a, *b) == heldout) return PD_OK;
    }
    return pdi_errorf(PD_ERR_INVALID, "arith: no %s problem found with max_digits %d and heldout_per_mille %d",
                      heldout ? "held-out" : "training", cfg->max_digits, cfg->heldout_per_mille);
}

char *pd_builtin_text(uint64_t seed, int64_t n_lines, const struct pd_arith_config *cfg, size_t *len)
{
    if (len) *len = 0;
    struct pd_arith_config tmp;
    if (!(cfg = config_or_default(cfg, &tmp))) return NULL;
    if (n_lines <= 0 || n_lines > ((int64_t)1 << 30))
        return pdi_error(PD_ERR_INVALID, "builtin text: n_lines must be in [1, 2^30], got %lld", (long long)n_lines);
    size_t cap = (size_t)n_lines * (size_t)(3 * cfg->max_digits + 6) + 1; /* a, b, c (c <= max+1 digits), "+=\n" */
    char *text = pdi_malloc(cap);
    if (!text) return pdi_error(PD_ERR_NOMEM, "builtin text: out of memory for %zu bytes", cap);
    struct stream s = {seed, 0, {0}, 0};
    size_t k = 0;
    char prompt[24], answer[24];
    for (int64_t i = 0; i < n_lines; i++) {
        enum pd_arith_op op;
        int64_t a, b;
        if (draw(&s, cfg, 0, &op, &a, &b)) {
            free(text);
            return NULL;
        }
        pd_arith_format(cfg, op, a, b, prompt, answer);
        k += (size_t)snprintf(text + k, cap - k, "%s%s\n", prompt, answer);
    }
    if (len) *len = k;
    return text;
}

struct pd_text_dataset *pd_text_dataset_builtin(uint64_t seed, int64_t n_lines, const struct pd_arith_config *cfg,
                                                const struct pd_tokenizer *tok, double val_fraction)
{
    size_t len;
    char *text = pd_builtin_text(seed, n_lines, cfg, &len);
    if (!text) return NULL;
    struct pd_text_dataset *ds = pd_text_dataset_from_memory(text, len, tok, val_fraction);
    free(text);
    return ds;
}

/* ---- the held-out task --------------------------------------------------- */
struct pd_arith_task {
    int n;
    char (*prompt)[24];
    char (*answer)[24];
};

struct pd_arith_task *pd_arith_task_create(const struct pd_arith_config *cfg, uint64_t seed, int n)
{
    struct pd_arith_config tmp;
    if (!(cfg = config_or_default(cfg, &tmp))) return NULL;
    if (n <= 0 || n > 1000000) return pdi_error(PD_ERR_INVALID, "arith task: n must be in [1, 1000000], got %d", n);
    struct pd_arith_task *t = pdi_calloc(1, sizeof *t);
    struct pdi_u64map *seen = pdi_u64map_create((size_t)n);
    if (t) {
        t->prompt = pdi_malloc((size_t)n * sizeof *t->prompt);
        t->answer = pdi_malloc((size_t)n * sizeof *t->answer);
    }
    if (!t || !seen || !t->prompt || !t->answer) {
        pdi_u64map_destroy(seen);
        pd_arith_task_destroy(t);
        return pdi_error(PD_ERR_NOMEM, "arith task: out of memory");
    }
    /* a distinct stream from the text's for the same seed */
    struct stream s = {seed ^ 0x7461736bull, 0, {0}, 0};
    /* Small problem spaces (1 digit) may not hold n distinct held-out
     * problems: give up after enough duplicate draws. */
    int64_t dups = 0, max_dups = 64 * (int64_t)n + 10000;
    while (t->n < n) {
        enum pd_arith_op op;
        int64_t a, b;
        if (draw(&s, cfg, 1, &op, &a, &b)) {
            pdi_u64map_destroy(seen);
            pd_arith_task_destroy(t);
            return NULL;
        }
        /* a, b < 10^9 < 2^30: the fields never overlap (and never make the map's empty key) */
        uint64_t key = ((uint64_t)op << 62) | ((uint64_t)a << 31) | (uint64_t)b;
        if (pdi_u64map_get(seen, key) >= 0) {
            if (++dups > max_dups) {
                pdi_u64map_destroy(seen);
                pd_arith_task_destroy(t);
                return pdi_error(PD_ERR_INVALID,
                                 "arith task: could not find %d distinct held-out problems (max_digits %d, "
                                 "heldout_per_mille %d): ask for fewer",
                                 n, cfg->max_digits, cfg->heldout_per_mille);
            }
            continue;
        }
        if (pdi_u64map_put(seen, key, t->n)) {
            pdi_u64map_destroy(seen);
            pd_arith_task_destroy(t);
            return NULL;
        }
        pd_arith_format(cfg, op, a, b, t->prompt[t->n], t->answer[t->n]);
        t->n++;
    }
    pdi_u64map_destroy(seen);
    return t;
}

void pd_arith_task_destroy(struct pd_arith_task *t)
{
    if (!t) return;
    free(t->prompt);
    free(t->answer);
    free(t);
}

int pd_arith_task_size(const struct pd_arith_task *t) { return t ? t->n : 0; }

const char *pd_arith_task_prompt(const struct pd_arith_task *t, int i)
{
    if (!t || i < 0 || i >= t->n) return pdi_error(PD_ERR_INVALID, "arith task: problem %d out of range", i);
    return t->prompt[i];
}

const char *pd_arith_task_answer(const struct pd_arith_task *t, int i)
{
    if (!t || i < 0 || i >= t->n) return pdi_error(PD_ERR_INVALID, "arith task: problem %d out of range", i);
    return t->answer[i];
}

int pd_arith_score(const char *expected, const char *generated, size_t len)
{
    if (!expected || (!generated && len)) return 0;
    const char *nl = len ? memchr(generated, '\n', len) : NULL;
    size_t n = nl ? (size_t)(nl - generated) : len;
    return strlen(expected) == n && (n == 0 || !memcmp(expected, generated, n));
}

int pd_arith_task_score(const struct pd_arith_task *t, int i, const char *generated, size_t len)
{
    if (!t || i < 0 || i >= t->n) return 0;
    return pd_arith_score(t->answer[i], generated, len);
}
