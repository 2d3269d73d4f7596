/* The FlashMask mask families (include/pd/flashmask.h) at S = 16: each one
 * built, turned dense (pd_flashmask_to_dense) and printed as a picture,
 * '#' where query row i attends to key column j, '.' where it does not.
 *
 *   example_flashmask_masks          print every family
 *   example_flashmask_masks DIR      also write DIR/<family>.svg
 *
 * A numeric argument (CTest passes one to every example) just prints. The
 * pictures of docs/flashmask.md are made with DIR = docs/img/flashmask. */
#include <stdio.h>
#include <stdlib.h>

#include "pd/pd.h"

enum { S = 16 };

struct family {
    const char *name;
    int causal;
    struct pd_tensor *idx;
};

/* The dense mask of one family as S x S bytes (1 = attend), or -1. */
static int dense_of(const struct family *f, unsigned char *m)
{
    struct pd_tensor *d = pd_flashmask_to_dense(f->idx, f->causal, S);
    return d ? pd_to_buffer(d, m, PD_BOOL) : -1;
}

static void print_family(const struct family *f, const unsigned char *m)
{
    printf("%s (causal=%d, C=%lld)\n", f->name, f->causal, (long long)pd_tensor_dim(f->idx, 3));
    for (int i = 0; i < S; i++) {
        printf("  ");
        for (int j = 0; j < S; j++) putchar(m[i * S + j] ? '#' : '.');
        putchar('\n');
    }
}

/* A grid of S x S squares (row = query, column = key), attended dark. */
static int write_svg(const char *dir, const struct family *f, const unsigned char *m)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.svg", dir, f->name);
    FILE *o = fopen(path, "w");
    if (!o) return -1;
    const int cell = 14, left = 24, top = 40, side = S * cell;
    fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n",
            left + side + 8, top + side + 8);
    fprintf(o, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(o, "<text x=\"%d\" y=\"16\" font-size=\"13\">%s</text>\n", left, f->name);
    fprintf(o, "<text x=\"%d\" y=\"32\" font-size=\"11\" fill=\"#555\">causal=%d, C=%lld; key j &#8594;</text>\n",
            left, f->causal, (long long)pd_tensor_dim(f->idx, 3));
    fprintf(o, "<text x=\"14\" y=\"%d\" font-size=\"11\" fill=\"#555\" transform=\"rotate(-90 14 %d)\">"
               "query i &#8594;</text>\n",
            top + side, top + side);
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++)
            fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"white\"/>\n",
                    left + j * cell, top + i * cell, cell, cell, m[i * S + j] ? "#1f4e79" : "#dde6ee");
    fprintf(o, "</svg>\n");
    return fclose(o);
}

int main(int argc, char **argv)
{
    char *end = NULL;
    const char *dir = argc > 1 ? argv[1] : NULL;
    if (dir && (strtod(dir, &end), *end == '\0')) dir = NULL; /* a number: print only */

    int scope_tok = pd_scope_begin();
    /* three documents of 5, 4 and 4 tokens, then 3 padding positions */
    const int64_t docs[3] = {5, 4, 4}, prefixes[3] = {2, 0, 3}, blocks[3] = {5, 4, 7};
    const struct family fam[] = {
        {"causal", 1, pd_flashmask_causal(S)},
        {"sliding_window_causal", 1, pd_flashmask_sliding_window(S, 3, 0, 1)},
        {"sliding_window", 0, pd_flashmask_sliding_window(S, 3, 2, 0)},
        {"causal_document", 1, pd_flashmask_causal_document(S, docs, 3)},
        {"document", 0, pd_flashmask_document(S, docs, 3)},
        {"share_question", 1, pd_flashmask_share_question(S, docs, 3)}, /* question 5, answers 4 and 4 */
        {"global_sliding_window", 0, pd_flashmask_global_sliding_window(S, 2, 2, 1)},
        {"causal_blockwise", 1, pd_flashmask_causal_blockwise(S, blocks, 3)},
        {"prefix_lm", 0, pd_flashmask_prefix_lm(S, 6)},
        {"prefix_document", 0, pd_flashmask_prefix_document(S, docs, prefixes, 3)},
        {"qk_sparse", 1, pd_flashmask_qk_sparse(S, 4, 5)},
        {"random_eviction", 1, pd_flashmask_random_eviction(S, 4, 42)},
    };
    int rc = 0;
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        unsigned char m[S * S];
        if (dense_of(&fam[f], m)) {
            fprintf(stderr, "%s: %s\n", fam[f].name, pd_last_error());
            rc = 1;
            continue;
        }
        print_family(&fam[f], m);
        if (dir && write_svg(dir, &fam[f], m)) {
            fprintf(stderr, "cannot write %s/%s.svg\n", dir, fam[f].name);
            rc = 1;
        }
    }
    pd_scope_end(scope_tok);
    return rc;
}
