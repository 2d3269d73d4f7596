/* paddle.c — the optimizer's structure, shared by the files of src/optim/
 * (update, checkpoints, clipping). Not installed. */
#ifndef PD_OPTIM_INTERNAL_H
#define PD_OPTIM_INTERNAL_H

#include "pd/optim.h"

/* One parameter and its state (all f32, the parameter's shape, owned). */
struct pdi_oparam {
    char *name;
    struct pd_tensor *p;       /* the live parameter (a reference) */
    struct pd_tensor *master;  /* f32 copy of a bf16/f16 parameter, else NULL */
    struct pd_tensor *m;       /* Adam exp_avg, or SGD momentum buffer */
    struct pd_tensor *v;       /* Adam exp_avg_sq */
    struct pd_tensor *vmax;    /* Adam max_exp_avg_sq (amsgrad) */
    int64_t step;              /* updates applied to this parameter */
    int group;
};

struct pd_optimizer {
    struct pd_optim_config cfg;  /* defaults for new groups; fixes the kind */
    struct pdi_oparam *params;
    int n, cap;
    struct pd_optim_config *groups;
    int ng, capg;
    int64_t step_count;          /* calls of pd_optimizer_step */
    int micro;                   /* pd_optimizer_accumulate's counter */
};

const char *pdi_optim_kind_name(enum pd_optim_kind k);

/* May the gradient g be written in place? Contiguous f32/f64, and neither
 * its handle nor its storage is shared (a gradient aliasing another tensor,
 * or a broadcast view, is replaced by a copy instead). */
int pdi_grad_owned(const struct pd_tensor *g);
/* leaf->grad = pd_scale(leaf->grad, coef), a fresh tensor; status. */
int pdi_grad_scale_copy(struct pd_tensor *leaf, double coef);
#endif
