/* paddle.c — optimizers and LR schedules against PyTorch fixtures.
 *
 * The constants between the BEGIN/END markers come from
 * tools/ref/optim_ref.py (torch 1.13): 5 steps of each optimizer on a fixed
 * tiny problem (loss before each step, final parameters) and the lr of each
 * schedule at steps 0..20. The problem is rebuilt here from the same
 * formulas; the update runs in f32, so the tolerance is 1e-6 (relative).
 */
#include <math.h>
#include <string.h>

#include "pd/optim.h"
#include "pt.h"

/* BEGIN optim_ref.py (generated: do not edit by hand) */
#define REF_STEPS 5
static const double ref_sgd_nesterov_loss[REF_STEPS] = {0.64973706007003784, 0.61329746246337891, 0.56411916017532349, 0.51019924879074097, 0.46345245838165283};
static const double ref_sgd_nesterov_params[15] = {0.24589374661445618, 0.13692761957645416, 0.0033668878022581339, -0.12239137291908264, -0.039158102124929428, 0.028813796117901802, 0.018218120560050011, -0.064724236726760864, 0.059920661151409149, 0.024750549346208572, -0.0077524310909211636, 0.0070871775969862938, -0.16966336965560913, -0.093425124883651733, -0.07911074161529541};
static const double ref_sgd_dampening_loss[REF_STEPS] = {0.64973706007003784, 0.64021039009094238, 0.62601888179779053, 0.60828757286071777, 0.58805716037750244};
static const double ref_sgd_dampening_params[15] = {0.2638193666934967, 0.16333477199077606, 0.026514442637562752, -0.11323007196187973, -0.17852325737476349, -0.20153319835662842, -0.19588322937488556, -0.16297195851802826, -0.046591088175773621, 0.045474749058485031, 0.13070470094680786, 0.19890356063842773, -0.09161030501127243, -0.026413310319185257, 0.017016781494021416};
static const double ref_sgd_plain_loss[REF_STEPS] = {0.64973706007003784, 0.60932135581970215, 0.57146376371383667, 0.53758406639099121, 0.5087781548500061};
static const double ref_sgd_plain_params[15] = {0.24694141745567322, 0.14769925177097321, 0.017490945756435394, -0.11186552792787552, -0.10581652820110321, -0.088512174785137177, -0.092462688684463501, -0.11461317539215088, 0.0040518059395253658, 0.037669073790311813, 0.067408427596092224, 0.10770784318447113, -0.11865220963954926, -0.056450467556715012, -0.029672147706151009};
static const double ref_adam_l2_loss[REF_STEPS] = {0.64973706007003784, 0.63574004173278809, 0.62225854396820068, 0.60927367210388184, 0.59673231840133667};
static const double ref_adam_l2_params[15] = {0.22428087890148163, 0.13300737738609314, -0.00058811530470848083, -0.10918853431940079, -0.17699128389358521, -0.24325680732727051, -0.23772017657756805, -0.16182176768779755, -0.033724084496498108, 0.015734214335680008, 0.14737884700298309, 0.23153392970561981, -0.09831816703081131, -0.049784138798713684, 4.5577064156532288e-05};
static const double ref_adamw_groups_loss[REF_STEPS] = {0.64973706007003784, 0.62169921398162842, 0.59582972526550293, 0.57181692123413086, 0.54917448759078979};
static const double ref_adamw_groups_params[15] = {0.19513067603111267, 0.11975791305303574, -0.0057344706729054451, -0.13283944129943848, -0.12497353553771973, -0.19072631001472473, -0.1853296160697937, -0.11037066578865051, 0.016917377710342407, -0.030090359970927238, 0.096410773694515228, 0.17936186492443085, -0.14444409310817719, -0.099542967975139618, -0.049925632774829865};
static const double ref_adamw_amsgrad_loss[REF_STEPS] = {0.64973706007003784, 0.63560795783996582, 0.62198168039321899, 0.60889166593551636, 0.59631443023681641};
static const double ref_adamw_amsgrad_params[15] = {0.22464889287948608, 0.13436247408390045, -0.00028605712577700615, -0.14165805280208588, -0.17645750939846039, -0.24255397915840149, -0.23701126873493195, -0.16123665869235992, -0.033569697290658951, 0.015057274140417576, 0.14678831398487091, 0.23080037534236908, -0.098995938897132874, -0.049928281456232071, -0.00011383276432752609};
static const double ref_lr_cosine[21] = {0.125, 0.25, 0.375, 0.5, 0.5, 0.49567668809072685, 0.48287289481503953, 0.46208066276807275, 0.43409902576697323, 0.40000330242941051, 0.36110377228214524, 0.31889532245362889, 0.27500000000000002, 0.23110467754637121, 0.18889622771785486, 0.14999669757058959, 0.11590097423302684, 0.087919337231927311, 0.067127105184960484, 0.054323311909273156, 0.050000000000000003};
static const double ref_lr_linear[21] = {0.125, 0.25, 0.375, 0.5, 0.5, 0.47187499999999999, 0.44374999999999998, 0.41562499999999997, 0.38749999999999996, 0.35937499999999994, 0.33124999999999993, 0.30312499999999992, 0.27499999999999991, 0.24687499999999993, 0.21874999999999994, 0.19062499999999996, 0.16249999999999995, 0.13437499999999994, 0.10624999999999994, 0.078124999999999958, 0.049999999999999975};
static const double ref_lr_step[21] = {0.5, 0.5, 0.5, 0.34999999999999998, 0.34999999999999998, 0.34999999999999998, 0.24499999999999997, 0.24499999999999997, 0.24499999999999997, 0.17149999999999996, 0.17149999999999996, 0.17149999999999996, 0.12004999999999996, 0.12004999999999996, 0.12004999999999996, 0.084034999999999971, 0.084034999999999971, 0.084034999999999971, 0.058824499999999974, 0.058824499999999974, 0.058824499999999974};
/* END optim_ref.py */

static struct pd_tensor *formula(const int64_t *shape, int nd, double (*f)(int))
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    double v[64];
    for (int k = 0; k < n; k++) v[k] = f(k);
    return pd_cast(pd_from_buffer(v, shape, nd, PD_F64), PD_F32);
}
static double fx(int k) { return sin(1 + 0.7 * k); }
static double fy(int k) { return cos(0.3 * k); }
static double fw(int k) { return 0.3 * sin(2 + 0.5 * k); }
static double fb(int k) { return 0.05 * k - 0.05; }

/* Runs 5 steps of cfg (decay_groups: the two standard groups with wd) and
 * compares the loss trajectory and final parameters with torch. */
static void check_run(const char *name, const struct pd_optim_config *cfg, int decay_groups, const double *ref_loss,
                      const double *ref_params)
{
    int scope_tok = pd_scope_begin();
    struct pd_tensor *x = formula((int64_t[]){6, 4}, 2, fx), *y = formula((int64_t[]){6, 3}, 2, fy);
    struct pd_tensor *w = pd_requires_grad_(formula((int64_t[]){3, 4}, 2, fw), 1);
    struct pd_tensor *b = pd_requires_grad_(formula((int64_t[]){3}, 1, fb), 1);
    struct pd_state_dict *sd = pd_state_dict_create();
    pd_state_dict_add(sd, "w", w);
    pd_state_dict_add(sd, "b", b);
    struct pd_optimizer *opt = pd_optimizer_create(cfg);
    PT_CHECK(opt != NULL);
    if (decay_groups) {
        PT_CHECK(pd_optimizer_add_decay_groups(opt, sd, cfg->weight_decay) == PD_OK);
        PT_CHECK(pd_optimizer_num_groups(opt) == 2);
    } else {
        PT_CHECK(pd_optimizer_add_group(opt, sd, NULL) == 0);
    }
    for (int s = 0; s < REF_STEPS; s++) {
        int scope_tok2 = pd_scope_begin();
        pd_optimizer_zero_grad(opt);
        struct pd_tensor *loss = pd_mse_loss(pd_tanh(pd_linear(x, w, b)), y, PD_REDUCTION_MEAN);
        PT_CHECK(pd_backward(loss, NULL, 0) == PD_OK);
        double l = pd_item(loss);
        if (fabs(l - ref_loss[s]) > 1e-6 * (1 + fabs(ref_loss[s])))
            printf("%s: step %d loss %.9g vs torch %.9g\n", name, s, l, ref_loss[s]);
        PT_NEAR(l, ref_loss[s], 1e-6);
        PT_CHECK(pd_optimizer_step(opt) == PD_OK);
        pd_scope_end(scope_tok2);
    }
    PT_CHECK(pd_optimizer_step_count(opt) == REF_STEPS);
    for (int i = 0; i < 15; i++) {
        double got = i < 12 ? pt_at(pd_reshape(w, (int64_t[]){12}, 1), i) : pt_at(b, i - 12);
        if (fabs(got - ref_params[i]) > 1e-6 * (1 + fabs(ref_params[i])))
            printf("%s: param %d = %.9g vs torch %.9g\n", name, i, got, ref_params[i]);
        PT_NEAR(got, ref_params[i], 1e-6);
    }
    pd_optimizer_destroy(opt);
    pd_state_dict_destroy(sd);
    pd_scope_end(scope_tok);
}

static void test_optimizers(void)
{
    struct pd_optim_config c;
    pd_optim_config_default(&c, PD_OPTIM_SGD);
    c.lr = 0.1, c.momentum = 0.9, c.nesterov = 1, c.weight_decay = 0.01;
    check_run("sgd_nesterov", &c, 0, ref_sgd_nesterov_loss, ref_sgd_nesterov_params);
    pd_optim_config_default(&c, PD_OPTIM_SGD);
    c.lr = 0.05, c.momentum = 0.8, c.dampening = 0.3;
    check_run("sgd_dampening", &c, 0, ref_sgd_dampening_loss, ref_sgd_dampening_params);
    pd_optim_config_default(&c, PD_OPTIM_SGD);
    c.lr = 0.2, c.weight_decay = 0.05;
    check_run("sgd_plain", &c, 0, ref_sgd_plain_loss, ref_sgd_plain_params);
    pd_optim_config_default(&c, PD_OPTIM_ADAM);
    c.lr = 0.01, c.beta1 = 0.8, c.beta2 = 0.99, c.eps = 1e-6, c.weight_decay = 0.1;
    check_run("adam_l2", &c, 0, ref_adam_l2_loss, ref_adam_l2_params);
    pd_optim_config_default(&c, PD_OPTIM_ADAMW);
    c.lr = 0.02, c.weight_decay = 0.1;
    check_run("adamw_groups", &c, 1, ref_adamw_groups_loss, ref_adamw_groups_params);
    pd_optim_config_default(&c, PD_OPTIM_ADAMW);
    c.lr = 0.01, c.weight_decay = 0.05, c.amsgrad = 1;
    check_run("adamw_amsgrad", &c, 0, ref_adamw_amsgrad_loss, ref_adamw_amsgrad_params);
}

static void test_schedules(void)
{
    struct pd_lr_schedule s = {.kind = PD_LR_WARMUP_COSINE, .base_lr = 0.5, .min_lr = 0.05, .warmup_steps = 4, .total_steps = 20};
    for (int i = 0; i <= 20; i++) PT_NEAR(pd_lr_schedule_at(&s, i), ref_lr_cosine[i], 1e-12);
    PT_NEAR(pd_lr_schedule_at(&s, 1000), 0.05, 1e-15); /* stays at min_lr */
    s.kind = PD_LR_WARMUP_LINEAR;
    for (int i = 0; i <= 20; i++) PT_NEAR(pd_lr_schedule_at(&s, i), ref_lr_linear[i], 1e-12);
    PT_NEAR(pd_lr_schedule_at(&s, 25), 0.05, 1e-15);
    struct pd_lr_schedule st = {.kind = PD_LR_STEP, .base_lr = 0.5, .step_size = 3, .gamma = 0.7};
    for (int i = 0; i <= 20; i++) PT_NEAR(pd_lr_schedule_at(&st, i), ref_lr_step[i], 1e-12);
    struct pd_lr_schedule k = {.kind = PD_LR_CONSTANT, .base_lr = 3e-4};
    PT_NEAR(pd_lr_schedule_at(&k, 12345), 3e-4, 1e-15);
    /* no warmup: the decay starts at base_lr on step 0 */
    struct pd_lr_schedule nw = {.kind = PD_LR_WARMUP_COSINE, .base_lr = 1, .min_lr = 0, .warmup_steps = 0, .total_steps = 10};
    PT_NEAR(pd_lr_schedule_at(&nw, 0), 1.0, 1e-15);
    PT_NEAR(pd_lr_schedule_at(&nw, 5), 0.5, 1e-12);
    /* invalid schedules: NaN and a message */
    struct pd_lr_schedule bad = s;
    bad.min_lr = 1.0;
    PT_CHECK(isnan(pd_lr_schedule_at(&bad, 0)) && strstr(pd_last_error(), "min_lr"));
    bad = s;
    bad.total_steps = 2;
    PT_CHECK(isnan(pd_lr_schedule_at(&bad, 0)) && strstr(pd_last_error(), "warmup_steps"));
    bad = st;
    bad.step_size = 0;
    PT_CHECK(pd_lr_schedule_validate(&bad) == PD_ERR_INVALID && strstr(pd_last_error(), "step_size"));
    PT_CHECK(isnan(pd_lr_schedule_at(&s, -1)));
    PT_CHECK(isnan(pd_lr_schedule_at(NULL, 0)));
}

int main(void)
{
    test_optimizers();
    test_schedules();
    PT_CHECK(pd_live_tensors() == 0);
    PT_DONE();
}
