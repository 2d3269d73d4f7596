/* paddle.c — CPU kernels of the random ops: blocks of up to 1024 elements
 * of one output row (a run of consecutive counters) over OpenMP threads,
 * each block drawing its words with one pd_philox_fill. Bit-identical to
 * the reference kernels: every element is a function of its whole-draw
 * index only. */
#include "kernels/random_util.h"

#define BLOCK 1024
/* Above this many elements the blocks are split over threads. */
#define RAND_PAR 16384

/* uniform, normal, randint: output rows of a fresh contiguous tensor */
static int cpu_random(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    const struct pdi_attrs_uniform *a = &k->a->uniform;
    struct pdi_rand_map m;
    pdi_rand_map_init(&m, y->shape, y->ndim, &a->slice);
    int64_t nb = (m.len + BLOCK - 1) / BLOCK, tasks = m.rows * nb;
    uint64_t seed = (uint64_t)a->seed, off = (uint64_t)a->offset;
    enum pd_dtype dt = y->dtype;
    enum pd_op op = k->op;
    int64_t es = (int64_t)pd_dtype_size(dt);
    PDI_FOR(m.rows * m.len > RAND_PAR, t, tasks, {
        int64_t r = t / nb, i0 = (t % nb) * BLOCK, cnt = m.len - i0 < BLOCK ? m.len - i0 : BLOCK;
        uint32_t w[2 * BLOCK];
        pd_philox_fill(seed, off + 2 * (uint64_t)(pdi_rand_row(&m, r) + i0), w, 2 * cnt);
        char *d = y->data + (r * m.len + i0) * es;
        for (int64_t j = 0; j < cnt; j++) pdi_rand_elem(op, k->a, w[2 * j], w[2 * j + 1], d + j * es, dt);
    });
    return PD_OK;
}

static int cpu_bernoulli(const struct pdi_kcall *k)
{
    const struct pd_kview *p = &k->in[0], *y = &k->out[0];
    const struct pdi_attrs_bernoulli *a = &k->a->bernoulli;
    int rc = pdi_rand_check_p(p);
    if (rc) return rc;
    struct pdi_rand_map m;
    pdi_rand_map_init(&m, y->shape, y->ndim, &a->slice);
    int64_t nb = (m.len + BLOCK - 1) / BLOCK, tasks = m.rows * nb;
    uint64_t seed = (uint64_t)a->seed, off = (uint64_t)a->offset;
    int contig = pdi_kview_contiguous(p) && p->dtype == PD_F32 && y->dtype == PD_F32;
    int64_t es = (int64_t)pd_dtype_size(y->dtype);
    PDI_FOR(m.rows * m.len > RAND_PAR, t, tasks, {
        int64_t r = t / nb, i0 = (t % nb) * BLOCK, cnt = m.len - i0 < BLOCK ? m.len - i0 : BLOCK;
        int64_t o = r * m.len + i0; /* output (and p) index of the block's first element */
        uint32_t w[BLOCK];
        pd_philox_fill(seed, off + (uint64_t)(pdi_rand_row(&m, r) + i0), w, cnt);
        if (contig) {
            const float *pp = (const float *)p->data + o;
            float *d = (float *)y->data + o;
            for (int64_t j = 0; j < cnt; j++) d[j] = pdi_rand_bernoulli(w[j], pp[j]) ? 1.0f : 0.0f;
        } else {
            for (int64_t j = 0; j < cnt; j++) {
                double pj = pdi_load(pdi_kview_ptr(p, o + j), p->dtype);
                pdi_store(y->data + (o + j) * es, y->dtype, pdi_rand_bernoulli(w[j], pj) ? 1.0 : 0.0);
            }
        }
    });
    return PD_OK;
}

void pdi_register_cpu_random(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_uniform, PDI_DT_FLOATS, cpu_random);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_normal, PDI_DT_FLOATS, cpu_random);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_randint, PDI_DT_INTS, cpu_random);
    pdi_kernel_register_mask(PDI_BACKEND_CPU, PD_OP_bernoulli, PDI_DT_FLOATS, cpu_bernoulli);
}
