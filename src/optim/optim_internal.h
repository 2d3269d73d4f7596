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

/* Sum of squares of a gradient in f64 (any float dtype and strides);
 * non-finite when an element is; NaN with PD_ERR_NOMEM on failure. */
double pdi_grad_sumsq(struct pd_tensor *g);
/* leaf->grad *= coef (in place when the gradient owns its memory, else a
 * scaled copy replaces it). No-op without a gradient. */
int pdi_grad_scale_(struct pd_tensor *leaf, double coef);

#endif
