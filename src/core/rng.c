/* paddle.c — counter-based random numbers (Philox 4x32-10).
 *
 * A generator is (seed, offset). A call that needs n numbers takes the
 * counter range [offset, offset + n) and advances offset, so element i is a
 * pure function of (seed, offset + i): the result does not depend on the
 * thread count, and any rank can reproduce any stream.
 *
 * The random ops (uniform, normal, randint, bernoulli) and their wrappers
 * live in src/ops/random.c and the kernels in src/kernels/{ref,cpu}/random.c.
 */
#include <stdlib.h>

#include "core/internal.h"

struct pd_generator {
    uint64_t seed, offset;
};

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

/* One block: counter (ctr) and key -> 4 words. */
static void philox4x32(uint64_t ctr, uint64_t seed, uint32_t out[4])
{
    uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* Word i of the stream is word (i % 4) of block (i / 4). */
void pd_philox_fill(uint64_t seed, uint64_t offset, uint32_t *out, int64_t n)
{
    PDI_FOR(n > 65536, i, n, {
        uint64_t w = offset + (uint64_t)i;
        uint32_t b[4];
        philox4x32(w >> 2, seed, b);
        out[i] = b[w & 3];
    });
}

struct pd_generator *pd_generator_create(uint64_t seed)
{
    struct pd_generator *g = pdi_calloc(1, sizeof *g);
    if (!g) return pdi_error(PD_ERR_NOMEM, "out of memory (generator)");
    g->seed = seed;
    return g;
}

void pd_generator_destroy(struct pd_generator *g) { free(g); }
void pd_generator_set_state(struct pd_generator *g, uint64_t seed, uint64_t offset)
{
    if (g) { g->seed = seed; g->offset = offset; }
}
void pd_generator_get_state(const struct pd_generator *g, uint64_t *seed, uint64_t *offset)
{
    if (!g) return;
    if (seed) *seed = g->seed;
    if (offset) *offset = g->offset;
}

static _Thread_local struct pd_generator default_gen;
struct pd_generator *pd_default_generator(void) { return &default_gen; }
void pd_manual_seed(uint64_t seed) { default_gen.seed = seed; default_gen.offset = 0; }
