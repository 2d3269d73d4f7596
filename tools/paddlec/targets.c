/* paddle.c — `paddlec train`: batches without a scored target, the window
 * the held-out task needs, and what a non-finite loss means (docs/cli.md,
 * "Short windows and skipped steps").
 *
 * With --answer-loss (the built-in default) only the answer tokens of the
 * arithmetic lines are scored, so a short window (--seq-len below a
 * problem's length) can hold none: its mean loss would be 0/0. A
 * micro-batch whose windows hold no scored target is left out of its step
 * (the step's loss and gradient are the mean over the others), and a step
 * none of whose micro-batches holds one is skipped: no backward, no
 * optimizer update, the learning-rate schedule moves on (the step counts,
 * as a step the f16 gradient scaler skips does). Under --mesh the counts are
 * summed over the dp ranks first, so every rank takes the same decision and
 * a dp rank with no target of its own still trains with the others; the
 * losses stay one process's.
 *
 * The held-out task generates answers to "\n" + prompt: a prompt and the
 * tokens generated after it must fit the model's max_seq_len (--seq-len),
 * or generation fails, which used to happen at the end of the run. It is
 * checked before the first step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_task_max_new(const struct pd_arith_config *ac) { return ac->max_digits + 3; } /* answer + newline, a margin */

/* The longest "\n" + prompt of a task of n problems, in tokens. */
static int task_longest_prompt(const struct pd_tokenizer *tok, const struct pd_arith_config *ac, int n, uint64_t seed,
                               const char *what)
{
    struct pd_arith_task *t = cli_hold(pd_arith_task_create(ac, seed, n), cli_dtor_arith_task);
    if (!t) cli_fail_pd("%s %d with --digits %d and --heldout %d", what, n, ac->max_digits, ac->heldout_per_mille);
    int longest = 0;
    for (int i = 0; i < pd_arith_task_size(t); i++) {
        char text[64];
        int len = 0;
        snprintf(text, sizeof text, "\n%s", pd_arith_task_prompt(t, i));
        free(cli_encode(tok, text, &len));
        if (len > longest) longest = len;
    }
    cli_free(t);
    return longest;
}

void cli_task_check(const struct pd_tokenizer *tok, const struct pd_arith_config *ac, int max_seq_len, int task_n,
                    uint64_t seed, int train)
{
    if (task_n <= 0) return;
    /* the final score's problems and, in training, the quick score's first
     * 100 (a task of its own, from the same seed) */
    int longest = task_longest_prompt(tok, ac, task_n, seed, "--task-n");
    if (train && task_n > 100) {
        int q = task_longest_prompt(tok, ac, 100, seed, "--task-n");
        if (q > longest) longest = q;
    }
    int need = longest + cli_task_max_new(ac);
    if (need <= max_seq_len) return;
    char fix[64] = "pass --task-n 0";
    if (train) snprintf(fix, sizeof fix, "raise --seq-len to %d or pass --task-n 0", need);
    cli_fail(CLI_EXIT_USAGE,
             "%s %d cannot hold a held-out problem of the built-in task (a prompt of up to %d tokens and %d generated "
             "with --digits %d need %d): %s",
             train ? "--seq-len" : "the model's max_seq_len", max_seq_len, longest, cli_task_max_new(ac),
             ac->max_digits, need, fix);
}

int cli_local_targets(struct pd_tensor *y, const int64_t *tb, int nv, double cnt[2])
{
    struct pd_tensor *yl = cli_local(y);
    int64_t m = yl ? pd_tensor_numel(yl) : 0;
    int64_t *ys = cli_hold(malloc(sizeof *ys * (size_t)(m + 1)), free); /* m + 1: no rows here */
    if (!ys) cli_fail(CLI_EXIT_FAIL, "out of memory");
    int rc = yl ? pd_to_buffer(yl, ys, PD_I64) : pd_last_status() ? pd_last_status() : PD_ERR_NULL;
    for (int64_t i = 0; i < m && !rc; i++)
        if (ys[i] >= 0 && (!tb || ys[i] < nv)) {
            cnt[0]++;
            cnt[1] += tb ? (double)tb[ys[i]] : 0;
        }
    cli_free(ys);
    return rc;
}

int cli_count_targets(struct pd_tensor *const *y, int n, int *has)
{
    double *cnt = cli_hold(calloc((size_t)n, sizeof *cnt), free);
    if (!cnt) cli_fail(CLI_EXIT_FAIL, "out of memory");
    for (int k = 0; k < n; k++) {
        double c[2] = {0, 0};
        if (cli_local_targets(y[k], NULL, 0, c)) cli_fail_pd("cannot count the targets of a batch");
        cnt[k] = c[0];
    }
    cli_dist_sum(cnt, n, 0); /* --mesh: over the dp ranks, the same on every rank */
    int used = 0;
    for (int k = 0; k < n; k++) used += has[k] = cnt[k] > 0;
    cli_free(cnt);
    return used;
}

const char *cli_nonfinite_hint(double loss, int64_t updates, int resumed, int f16, int init_hf)
{
    int fresh = !updates && !resumed; /* no update yet: the learning rate has not acted */
    if (f16 && !isfinite(loss))       /* the scaler skips inf/NaN gradients, not a forward that overflowed */
        return fresh ? "the f16 forward overflows f16's range, 65504, before any update, and the gradient scaler "
                       "cannot help there: try --bf16"
                     : "the f16 forward overflowed f16's range, 65504, which the gradient scaler cannot help: try "
                       "--bf16 or a lower --lr";
    if (fresh)
        return init_hf ? "this is before any update, so not the learning rate: the --init-hf weights give it"
                       : "this is before any update, so not the learning rate: the initial weights give it (lower "
                         "--init-std?)";
    return "the run diverged: lower --lr, or raise --warmup";
}
