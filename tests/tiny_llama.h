/* paddle.c tests — the tiny Llama the nn tests share: vocab 37, dim 32, two
 * layers, 4 query heads over 2 key heads (grouped-query), hidden 48, and
 * large initial weights so that every path of the network matters. */
#ifndef PD_TESTS_TINY_LLAMA_H
#define PD_TESTS_TINY_LLAMA_H

#include "pd/nn.h"

static inline struct pd_llama_config pt_tiny_llama_config(void)
{
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    c.vocab_size = 37;
    c.dim = 32;
    c.n_layers = 2;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.hidden_dim = 48;
    c.max_seq_len = 32;
    c.init_std = 0.2;
    return c;
}

/* The generation tests' model: vocab 50, hidden 64, large weights (peaked,
 * input-dependent logits), no dropout, seed 42. */
static inline struct pd_llama *pt_tiny_gen_model(int max_seq_len)
{
    struct pd_llama_config cfg = pt_tiny_llama_config();
    cfg.vocab_size = 50;
    cfg.hidden_dim = 64;
    cfg.max_seq_len = max_seq_len;
    cfg.init_std = 0.5;
    cfg.dropout = 0;
    return pd_llama_create(&cfg, 42);
}

#endif
