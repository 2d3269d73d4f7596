/* paddle.c — `paddlec train --bf16 | --f16`: autocast around the forward,
 * and for f16 the dynamic gradient scaler (docs/optim.md "fp16 with a grad
 * scaler"; with --mesh, docs/distributed.md "f16 autocast and the gradient
 * scaler").
 *
 * Under --f16 each micro-batch's loss is scaled before backward; after the
 * last one the gradients are unscaled (before clipping), and a step whose
 * gradients hold an inf or NaN is skipped and the scale halved (doubled
 * after 2000 good steps in a row): torch.cuda.amp.GradScaler's rules, with
 * its defaults. The scaler's state goes into the training state of every
 * checkpoint (paddlec.scaler.scale, .growth_tracker, .skipped), so resume
 * stays bit-exact. Without --f16 these calls change nothing: the step is
 * pd_optimizer_step, as before. Each step's metrics line carries the scale
 * and the scaler's count of skipped steps (cli_amp_json; docs/training.md,
 * "Metrics").
 */
#include "cli.h"
#include "pd/amp.h"

static struct pd_grad_scaler *scaler; /* --f16 (held) */
static int amp_dtype = -1;            /* PD_BF16, PD_F16; -1: f32 */

static void scaler_destroy(void *p)
{
    pd_grad_scaler_destroy(p);
    scaler = NULL;
}

void cli_amp_setup(int bf16, int f16, const struct pd_state_dict *ck, const char *path)
{
    if (bf16 && f16) cli_fail(CLI_EXIT_USAGE, "--bf16 and --f16 exclude each other");
    amp_dtype = bf16 ? PD_BF16 : f16 ? PD_F16 : -1;
    if (!f16) return;
    scaler = cli_hold(pd_grad_scaler_create(NULL), scaler_destroy);
    if (!scaler) cli_fail_pd("--f16: cannot build the gradient scaler");
    /* a checkpoint of an f16 run has the scaler's state; one of an f32 or
     * bf16 run resumed with --f16 starts a new scaler */
    if (ck && pd_state_dict_get_meta(ck, "paddlec.scaler.scale") &&
        pd_grad_scaler_load_state_dict(scaler, ck, "paddlec.scaler."))
        cli_fail_pd("%s: bad gradient scaler state", cli_q(path));
}

int cli_amp_begin(void)
{
    if (amp_dtype < 0) return -1;
    int tok = pd_autocast_begin((enum pd_dtype)amp_dtype);
    if (tok < 0) cli_fail_pd(amp_dtype == PD_F16 ? "--f16" : "--bf16");
    return tok;
}

void cli_amp_end(int tok)
{
    if (tok >= 0) pd_autocast_end(tok);
}

struct pd_tensor *cli_amp_scale(struct pd_tensor *loss)
{
    return scaler && loss ? pd_grad_scaler_scale(scaler, loss) : loss;
}

int cli_amp_unscale(struct pd_optimizer *opt)
{
    if (!scaler) return 0;
    if (pd_grad_scaler_unscale(scaler, opt)) cli_fail_pd("--f16: cannot unscale the gradients");
    return pd_grad_scaler_found_inf(scaler);
}

int cli_amp_step(struct pd_optimizer *opt)
{
    if (!scaler) return pd_optimizer_step(opt);
    int st = pd_grad_scaler_step(scaler, opt);
    return st < 0 ? st : pd_grad_scaler_update(scaler);
}

double cli_amp_loss_scale(void) { return scaler ? pd_grad_scaler_get_scale(scaler) : 1; }

void cli_amp_save(struct pd_state_dict *sd)
{
    if (scaler && pd_grad_scaler_state_dict(scaler, sd, "paddlec.scaler."))
        cli_fail_pd("checkpoint: cannot save the gradient scaler");
}

const char *cli_amp_json(char *buf, size_t n, double scale)
{
    char b[PD_DOUBLE_BUF];
    if (!scaler) buf[0] = 0;
    else snprintf(buf, n, ",\"loss_scale\":%s,\"scaler_skipped_steps\":%lld", pd_format_double(scale, b, sizeof b),
                  (long long)pd_grad_scaler_skipped_steps(scaler));
    return buf;
}
