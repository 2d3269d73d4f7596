/* The validation split by document (pd_text_dataset_from_documents) and the
 * two-part dataset (pd_text_dataset_from_parts): whole documents are held out,
 * chosen by the seed, not the tail; each split keeps its documents in text
 * order and together they are the text; paragraphs, <|endoftext|> and lines
 * (few paragraphs); a single line falls back to the tail. Byte tokens, so ids
 * are the text's bytes. */
#include <stdlib.h>
#include <string.h>

#include "pd/data.h"
#include "pt.h"

/* The split's text (byte tokens), NUL-terminated, malloc'd. */
static char *split_text(const struct pd_text_dataset *ds, enum pd_split s)
{
    int64_t n = pd_text_dataset_num_tokens(ds, s);
    int32_t *ids = malloc(sizeof *ids * (size_t)(n + 1));
    char *t = malloc((size_t)n + 1);
    pd_text_dataset_ids(ds, s, 0, n, ids);
    for (int64_t i = 0; i < n; i++) t[i] = (char)ids[i];
    t[n] = 0;
    free(ids);
    return t;
}

/* Documents "doc <i> ...<end>" for i in [0, n). */
static char *make_docs(int n, const char *end, size_t *len)
{
    char *t = malloc((size_t)n * 64 + 1), *p = t;
    for (int i = 0; i < n; i++) p += sprintf(p, "doc %03d says %d%s", i, i * 37 % 101, end);
    *len = (size_t)(p - t);
    return t;
}

/* Every document of text is in exactly one split, in text order; returns how
 * many are in val, and whether val is exactly the last ones in *tail. */
static int check_docs(const char *text, int n, const char *train, const char *val, int *tail)
{
    int in_val = 0, first_val = -1, last_train = -1, prev_t = -1, prev_v = -1, ok = 1;
    for (int i = 0; i < n; i++) {
        char key[16];
        snprintf(key, sizeof key, "doc %03d ", i);
        const char *a = strstr(train, key), *b = strstr(val, key);
        ok &= (a != NULL) != (b != NULL);
        if (b) {
            in_val++;
            if (first_val < 0) first_val = i;
            ok &= b - val > prev_v;
            prev_v = (int)(b - val);
        } else if (a) {
            last_train = i;
            ok &= a - train > prev_t;
            prev_t = (int)(a - train);
        }
    }
    ok &= strlen(train) + strlen(val) == strlen(text);
    *tail = last_train < first_val;
    return ok ? in_val : -1;
}

static void test_paragraphs(void)
{
    size_t len;
    char *text = make_docs(100, "\nmore text here\n\n", &len);
    struct pd_text_dataset *a = pd_text_dataset_from_documents(text, len, NULL, 0.1, 1);
    struct pd_text_dataset *b = pd_text_dataset_from_documents(text, len, NULL, 0.1, 1);
    struct pd_text_dataset *c = pd_text_dataset_from_documents(text, len, NULL, 0.1, 2);
    PT_CHECK(a && b && c);
    char *ta = split_text(a, PD_SPLIT_TRAIN), *va = split_text(a, PD_SPLIT_VAL), *vb = split_text(b, PD_SPLIT_VAL),
         *vc = split_text(c, PD_SPLIT_VAL);
    int tail = 1, nv = check_docs(text, 100, ta, va, &tail);
    PT_CHECK(nv >= 10 && nv <= 11);   /* near-equal documents: 10% of the bytes is 10 or 11 of them */
    PT_CHECK(!tail);      /* not the file's tail */
    PT_CHECK(!strcmp(va, vb) && strcmp(va, vc));   /* the seed, and only the seed, chooses */
    /* each held-out document is whole: it starts a paragraph and ends with its blank line */
    PT_CHECK(!strncmp(va, "doc ", 4) && len > 2 && va[strlen(va) - 1] == '\n' && va[strlen(va) - 2] == '\n');
    free(ta), free(va), free(vb), free(vc);
    pd_text_dataset_destroy(a), pd_text_dataset_destroy(b), pd_text_dataset_destroy(c);
    free(text);
}

static void test_eot_and_lines(void)
{
    size_t len;
    char *text = make_docs(40, "\n\n<|endoftext|>", &len);   /* the marker wins over blank lines */
    struct pd_text_dataset *ds = pd_text_dataset_from_documents(text, len, NULL, 0.25, 7);
    PT_CHECK(ds != NULL);
    char *t = split_text(ds, PD_SPLIT_TRAIN), *v = split_text(ds, PD_SPLIT_VAL);
    int tail, nv = check_docs(text, 40, t, v, &tail);
    PT_CHECK(nv == 10 && !strncmp(v, "doc ", 4) && strlen(v) > 13 && !strcmp(v + strlen(v) - 13, "<|endoftext|>"));
    free(t), free(v), pd_text_dataset_destroy(ds), free(text);

    /* 5 paragraphs are too few to sample a fraction: lines are the documents */
    char *lines = make_docs(50, "\n", &len);
    for (int k = 1; k <= 4; k++) lines[k * (len / 5) - 1] = '\n', lines[k * (len / 5) - 2] = '\n';
    ds = pd_text_dataset_from_documents(lines, len, NULL, 0.1, 3);
    PT_CHECK(ds != NULL);
    v = split_text(ds, PD_SPLIT_VAL);
    int64_t nl = 0;
    for (const char *p = v; *p; p++) nl += *p == '\n';
    PT_CHECK(nl >= 4 && nl <= 8 && strlen(v) < len / 5);   /* a few lines, not a fifth of the text */
    free(v), pd_text_dataset_destroy(ds), free(lines);
}

static void test_edges(void)
{
    /* a single line: the tail, as pd_text_dataset_from_memory */
    const char *one = "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvw";
    struct pd_text_dataset *ds = pd_text_dataset_from_documents(one, strlen(one), NULL, 0.1, 1);
    PT_CHECK(ds && pd_text_dataset_num_tokens(ds, PD_SPLIT_VAL) == 9);
    char *v = ds ? split_text(ds, PD_SPLIT_VAL) : NULL;
    PT_CHECK(v && !strcmp(v, one + strlen(one) - 9));
    free(v), pd_text_dataset_destroy(ds);
    /* two documents and a large fraction: one is still left for training */
    ds = pd_text_dataset_from_documents("a\nb\n", 4, NULL, 0.9, 1);
    PT_CHECK(ds && pd_text_dataset_num_tokens(ds, PD_SPLIT_TRAIN) == 2 && pd_text_dataset_num_tokens(ds, PD_SPLIT_VAL) == 2);
    pd_text_dataset_destroy(ds);
    PT_CHECK(!pd_text_dataset_from_documents("a\nb\n", 4, NULL, 0, 1) && strstr(pd_last_error(), "val_fraction"));
    PT_CHECK(!pd_text_dataset_from_documents("", 0, NULL, 0.1, 1) && strstr(pd_last_error(), "empty"));
    /* two parts */
    ds = pd_text_dataset_from_parts("train text", 10, "val", 3, NULL);
    PT_CHECK(ds && pd_text_dataset_num_tokens(ds, PD_SPLIT_TRAIN) == 10 && pd_text_dataset_num_tokens(ds, PD_SPLIT_VAL) == 3);
    v = ds ? split_text(ds, PD_SPLIT_VAL) : NULL;
    PT_CHECK(v && !strcmp(v, "val"));
    free(v), pd_text_dataset_destroy(ds);
    PT_CHECK(!pd_text_dataset_from_parts("x", 1, "", 0, NULL) && strstr(pd_last_error(), "validation text is empty"));
}

int main(void)
{
    test_paragraphs();
    test_eot_and_lines();
    test_edges();
    PT_DONE();
}
