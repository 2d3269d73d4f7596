/* paddle.c — reference kernels of the random ops: one element at a time,
 * each drawing its own Philox words from its whole-draw index. */
#include "kernels/random_util.h"

/* uniform, normal, randint */
static int ref_random(const struct pdi_kcall *k)
{
    const struct pd_kview *y = &k->out[0];
    const struct pdi_attrs_uniform *a = &k->a->uniform;
    struct pdi_rand_map m;
    pdi_rand_map_init(&m, y->shape, y->ndim, &a->slice);
    int64_t n = pdi_kview_numel(y);
    for (int64_t i = 0; i < n; i++) {
        uint32_t w[2];
        pd_philox_fill((uint64_t)a->seed, (uint64_t)a->offset + 2 * (uint64_t)pdi_rand_index(&m, i), w, 2);
        pdi_rand_elem(k->op, k->a, w[0], w[1], pdi_kview_ptr(y, i), y->dtype);
    }
    return PD_OK;
}

static int ref_bernoulli(const struct pdi_kcall *k)
{
    const struct pd_kview *p = &k->in[0], *y = &k->out[0];
    const struct pdi_attrs_bernoulli *a = &k->a->bernoulli;
    int rc = pdi_rand_check_p(p);
    if (rc) return rc;
    struct pdi_rand_map m;
    pdi_rand_map_init(&m, y->shape, y->ndim, &a->slice);
    int64_t n = pdi_kview_numel(y);
    for (int64_t i = 0; i < n; i++) {
        uint32_t w;
        pd_philox_fill((uint64_t)a->seed, (uint64_t)a->offset + (uint64_t)pdi_rand_index(&m, i), &w, 1);
        double pi = pdi_load(pdi_kview_ptr(p, i), p->dtype);
        pdi_store(pdi_kview_ptr(y, i), y->dtype, pdi_rand_bernoulli(w, pi) ? 1.0 : 0.0);
    }
    return PD_OK;
}

void pdi_register_ref_random(void)
{
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_uniform, PDI_DT_FLOATS, ref_random);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_normal, PDI_DT_FLOATS, ref_random);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_randint, PDI_DT_INTS, ref_random);
    pdi_kernel_register_mask(PDI_BACKEND_REF, PD_OP_bernoulli, PDI_DT_FLOATS, ref_bernoulli);
}
