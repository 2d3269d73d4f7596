/* paddle.c — shared by the optimizer-state and scaler-state fuzz targets:
 * a tiny model (what a checkpoint's state belongs to) and its gradients. */
#ifndef PD_FUZZ_STATE_H
#define PD_FUZZ_STATE_H

#include "fuzz.h"
#include "pd/pd.h"

/* Parameters "w" f32 [2, 3], "b" f32 [3] and "h" bf16 [4] (an f32 master
 * copy in the optimizer), in the caller's scope. */
static inline struct pd_state_dict *fuzz_params(void)
{
    struct pd_state_dict *p = pd_state_dict_create();
    int64_t sw[2] = {2, 3}, sb[1] = {3}, sh[1] = {4};
    FUZZ_CHECK(p);
    FUZZ_CHECK(!pd_state_dict_add(p, "w", pd_requires_grad_(pd_full(sw, 2, 0.5, PD_F32), 1)));
    FUZZ_CHECK(!pd_state_dict_add(p, "b", pd_requires_grad_(pd_full(sb, 1, -0.25, PD_F32), 1)));
    FUZZ_CHECK(!pd_state_dict_add(p, "h", pd_requires_grad_(pd_full(sh, 1, 1.5, PD_BF16), 1)));
    return p;
}

/* loss = sum(w * w) + sum(b) + sum(h) times scale; backward. */
static inline int fuzz_backward(struct pd_state_dict *p, double scale)
{
    struct pd_tensor *w = pd_state_dict_get(p, "w"), *b = pd_state_dict_get(p, "b"), *h = pd_state_dict_get(p, "h");
    struct pd_tensor *loss = pd_add(pd_add(pd_sum(pd_mul(w, w), NULL, 0, 0), pd_sum(b, NULL, 0, 0)),
                                    pd_sum(pd_cast(h, PD_F32), NULL, 0, 0));
    return pd_backward(pd_scale(loss, scale), NULL, 0);
}

/* The state targets read "HEADER\0DATA" rather than a safetensors file, so
 * that a mutation may change the length of a metadata value: the 8-byte
 * header length is written here (gen_corpus.c writes the seeds so). An input
 * without a NUL is all header. Returns the file's path. */
static inline const char *fuzz_state_file(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t n = nul ? (size_t)(nul - data) : size, rest = nul ? size - n - 1 : 0;
    uint8_t *file = malloc(8 + n + rest + 1);
    FUZZ_CHECK(file);
    for (int i = 0; i < 8; i++) file[i] = (uint8_t)((uint64_t)n >> (8 * i));
    if (n) memcpy(file + 8, data, n);
    if (rest) memcpy(file + 8 + n, nul + 1, rest);
    const char *path = fuzz_file(file, 8 + n + rest);
    free(file);
    return path;
}

static inline void fuzz_check_message(void)
{
    const char *e = pd_last_error();
    FUZZ_CHECK(fuzz_one_line(e));
}

#endif
