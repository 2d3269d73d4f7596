/* The example of docs/data.md: the built-in data set, a BPE tokenizer saved
 * and loaded, a dataset with training batches and an evaluation pass, and the
 * held-out arithmetic task with its scorer. Returns non-zero on a mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/data.h"
#include "pd/pd.h"

int main(void)
{
    int ok = 1;

    /* 20,000 generated lines such as "347+589=639" (answers reversed) */
    size_t len;
    char *text = pd_builtin_text(1, 20000, NULL, &len);
    printf("%.36s...\n", text);

    /* a byte-level BPE learned on it, saved and loaded as JSON */
    const char *specials[] = {"<|endoftext|>"};
    struct pd_bpe_options opt = {.n_special = 1, .special = specials};
    struct pd_tokenizer *tok = pd_bpe_train(text, len, 512, &opt);
    if (!tok || pd_tokenizer_save(tok, "arith_tokenizer.json") != PD_OK) {
        fprintf(stderr, "error: %s\n", pd_last_error());
        return 1;
    }
    struct pd_tokenizer *loaded = pd_tokenizer_load("arith_tokenizer.json");
    remove("arith_tokenizer.json");
    int32_t *ids;
    int64_t n = pd_tokenizer_encode(loaded, text, len, &ids);
    printf("%zu bytes -> %lld tokens, vocab %d, end-of-text id %d\n", len, (long long)n,
           pd_tokenizer_vocab_size(loaded), pd_tokenizer_special_id(loaded, "<|endoftext|>"));
    char *back = pd_tokenizer_decode(loaded, ids, n, NULL);
    ok &= back && strcmp(back, text) == 0;
    free(back);
    free(ids);

    /* a byte-level dataset (tok NULL), the last 10% for validation */
    struct pd_text_dataset *ds = pd_text_dataset_from_memory(text, len, NULL, 0.1);
    struct pd_generator *gen = pd_generator_create(1234);
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x, *y;
    if (pd_dataset_batch(ds, PD_SPLIT_TRAIN, 4, 32, gen, &x, &y) != PD_OK) {
        fprintf(stderr, "error: %s\n", pd_last_error());
        return 1;
    }
    /* targets are the inputs shifted by one */
    ok &= pd_get(x, (int64_t[]){2, 1}) == pd_get(y, (int64_t[]){2, 0});
    uint64_t seed, offset;
    pd_generator_get_state(gen, &seed, &offset); /* save these to resume the same data stream */
    printf("batch [%lld, %lld], generator at (%llu, %llu)\n", (long long)pd_tensor_dim(x, 0),
           (long long)pd_tensor_dim(x, 1), (unsigned long long)seed, (unsigned long long)offset);
    pd_scope_end(scope_tok); /* frees x and y */

    /* evaluation: every validation window once, in order */
    struct pd_dataset_iter *it = pd_dataset_iter_create(ds, PD_SPLIT_VAL, 16, 32);
    int64_t windows = 0;
    int rows;
    scope_tok = pd_scope_begin();
    while ((rows = pd_dataset_iter_next(it, &x, &y)) > 0) windows += rows; /* a model's loss goes here */
    pd_scope_end(scope_tok);
    ok &= rows == 0 && windows == pd_dataset_iter_num_windows(it);
    printf("validation: %lld windows of 32 tokens\n", (long long)windows);

    /* the held-out task: prompts never seen in training, exact-match scoring */
    struct pd_arith_task *task = pd_arith_task_create(NULL, 7, 3);
    for (int i = 0; i < pd_arith_task_size(task); i++) {
        const char *answer = pd_arith_task_answer(task, i);
        char generated[32];
        snprintf(generated, sizeof generated, "%s\n", answer); /* what a perfect model would write */
        printf("%s%s  score %d\n", pd_arith_task_prompt(task, i), answer,
               pd_arith_task_score(task, i, generated, strlen(generated)));
        ok &= pd_arith_task_score(task, i, generated, strlen(generated)) == 1;
        ok &= pd_arith_task_score(task, i, "0\n", 2) == (strcmp(answer, "0") == 0);
    }

    /* errors: NULL or a negative status, with a message */
    if (!pd_text_dataset_open("missing.txt", NULL, 0.1)) printf("error: %s\n", pd_last_error());

    pd_arith_task_destroy(task);
    pd_dataset_iter_destroy(it);
    pd_generator_destroy(gen);
    pd_text_dataset_destroy(ds);
    pd_tokenizer_destroy(loaded);
    pd_tokenizer_destroy(tok);
    free(text);
    printf("%s\n", ok ? "ok" : "MISMATCH");
    return ok ? 0 : 1;
}
