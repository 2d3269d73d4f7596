/* paddle.c — the tiny Llama of the distributed training tests
 * (test_dist_llama, test_dist_amp): 2 layers, dim 16, 4 query heads over 2
 * key-value heads, hidden 24, vocabulary 40, a context of t tokens. */
#ifndef PD_TESTS_DIST_LLAMA_H
#define PD_TESTS_DIST_LLAMA_H

#include "pd/nn.h"

static inline struct pd_llama_config dist_llama_config(int64_t t)
{
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    c.vocab_size = 40, c.dim = 16, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.hidden_dim = 24;
    c.max_seq_len = t;
    return c;
}

#endif
