/* Build a tiny Llama, train it to count (next token = token + 1 mod 10)
 * with plain SGD until the loss is below 0.01, then generate greedily with
 * the KV cache.
 * Usage: example_nn_llama_tour [max_steps]   (exit status 1 if it did not learn) */
#include <stdio.h>
#include <stdlib.h>

#include "pd/pd.h"

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 300;
    struct pd_llama_config cfg;
    pd_llama_config_default(&cfg);
    cfg.vocab_size = 10;
    cfg.dim = 32;
    cfg.n_layers = 2;
    cfg.n_heads = 4;
    cfg.n_kv_heads = 2;
    cfg.hidden_dim = 64;
    cfg.max_seq_len = 16;
    struct pd_llama *m = pd_llama_create(&cfg, 42);
    if (!m) {
        fprintf(stderr, "error: %s\n", pd_last_error());
        return 1;
    }
    struct pd_state_dict *params = pd_llama_state_dict(m); /* Hugging Face names */
    printf("%d tensors, %lld parameters, first: %s\n", pd_state_dict_size(params),
           (long long)pd_llama_num_params(m), pd_state_dict_name(params, 0));

    /* ids [4, 12]: rows start at 0, 3, 6, 9; targets are the next tokens */
    int64_t ids[4 * 12], tgt[4 * 12];
    for (int b = 0; b < 4; b++)
        for (int t = 0; t < 12; t++) {
            ids[b * 12 + t] = (3 * b + t) % 10;
            tgt[b * 12 + t] = (3 * b + t + 1) % 10;
        }
    double loss = 0;
    for (int step = 0; step < steps; step++) {
        int scope_tok = pd_scope_begin(); /* every tensor of the step is freed at pd_scope_end */
        struct pd_tensor *x = pd_from_buffer(ids, (int64_t[]){4, 12}, 2, PD_I64);
        struct pd_tensor *y = pd_from_buffer(tgt, (int64_t[]){4, 12}, 2, PD_I64);
        struct pd_tensor *l = pd_llama_loss(m, x, y);
        if (!l || pd_backward(l, NULL, 0)) {
            fprintf(stderr, "error: %s\n", pd_last_error());
            return 1;
        }
        loss = pd_item(l);
        int mode = pd_no_grad_begin(); /* SGD: p -= lr * grad */
        for (int i = 0; i < pd_state_dict_size(params); i++) {
            struct pd_tensor *p = pd_state_dict_tensor(params, i);
            pd_add_(p, pd_scale(pd_tensor_grad(p), -0.5));
            pd_tensor_zero_grad(p);
        }
        pd_grad_mode_end(mode);
        pd_scope_end(scope_tok);
        if (step % 10 == 0 || loss < 0.01) printf("step %3d  loss %.4f\n", step, loss);
        if (loss < 0.01) break;
    }

    /* greedy generation: prefill the prompt, then one token per step */
    pd_llama_train(m, 0);
    struct pd_kv_cache *kv = pd_kv_cache_create(&cfg, 1, 16);
    int64_t tok[16] = {4, 5, 6};
    int n = 3, correct = 1;
    int scope_tok = pd_scope_begin();
    struct pd_tensor *logits = pd_llama_forward(m, pd_from_buffer(tok, (int64_t[]){1, 3}, 2, PD_I64), kv, NULL);
    while (logits && n < 12) {
        struct pd_tensor *last = pd_slice(logits, 1, -1, pd_tensor_dim(logits, 1), 1); /* [1, 1, V] */
        tok[n] = (int64_t)pd_item(pd_argmax(last, -1, 0));
        correct &= tok[n] == (tok[n - 1] + 1) % 10;
        logits = pd_llama_forward(m, pd_from_buffer(&tok[n], (int64_t[]){1, 1}, 2, PD_I64), kv, NULL);
        n++;
    }
    pd_scope_end(scope_tok);
    printf("generated:");
    for (int i = 0; i < n; i++) printf(" %lld", (long long)tok[i]);
    printf("\n%s\n", correct ? "counts correctly" : "did not learn to count");
    pd_kv_cache_destroy(kv);
    pd_llama_destroy(m);
    return correct ? 0 : 1;
}
