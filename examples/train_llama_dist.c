/* paddle.c example: train a small Llama on the built-in arithmetic data set
 * ("347+589=639": the answer is written reversed) and generate from it —
 * data, model, AdamW with warmup + cosine, clipping, validation, held-out
 * accuracy and a sample, with the public API only.
 *
 *   example_train_llama [steps]      (default 400)
 * Parallel (examples/train_llama.c plus the lines marked so; docs/distributed.md):
 *   mpirun -np 4 example_train_llama_dist [steps]   (a dp 2 x tp 2 mesh; one rank: 1 x 1)
 *
 * Each step runs inside a scope, so its tensors are freed at its end; the
 * model, optimizer, data set and task are released at exit. Exits non-zero
 * if the model did not learn (validation loss must fall well below chance).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/pd.h"
#include "pd/data.h"
#include "pd/dist.h" /* parallel */
#include "pd/generate.h"
#include "pd/optim.h"

#define BATCH 16
#define SEQ 48
static struct pd_mesh *mesh; /* parallel: dp x tp */

/* Mean loss over a few validation windows, in eval mode without autograd. */
static double val_loss(struct pd_llama *m, struct pd_text_dataset *ds)
{
    struct pd_dataset_iter *it = pd_dataset_iter_create_dist(ds, PD_SPLIT_VAL, BATCH, SEQ, mesh, "dp"); /* parallel */
    int ng = pd_no_grad_begin(), n = 0;
    double sum = 0;
    pd_llama_train(m, 0);
    for (int k = 0; k < 4; k++) {
        int scope_tok = pd_scope_begin();
        struct pd_tensor *x, *y;
        if (pd_dataset_iter_next(it, &x, &y) > 0) {
            sum += pd_item(pd_llama_loss(m, x, y));
            n++;
        }
        pd_scope_end(scope_tok);
    }
    pd_llama_train(m, 1);
    pd_grad_mode_end(ng);
    pd_dataset_iter_destroy(it);
    return n ? sum / n : NAN;
}

/* Greedy answers to held-out problems (never in the training text), batched:
 * prompts of different lengths are left-padded by pd_generate. */
static double accuracy(struct pd_llama *m, struct pd_arith_task *task, char *sample, size_t cap)
{
    int n = pd_arith_task_size(task), correct = 0;
    int64_t **ids = malloc(sizeof *ids * n);
    int *lens = malloc(sizeof *lens * n);
    for (int i = 0; i < n; i++) {
        const char *p = pd_arith_task_prompt(task, i);
        lens[i] = (int)strlen(p) + 1;
        ids[i] = malloc(sizeof **ids * lens[i]);
        ids[i][0] = '\n';   /* a problem starts a line, as in the training text */
        for (int j = 1; j < lens[i]; j++) ids[i][j] = (unsigned char)p[j - 1];   /* byte tokenizer */
    }
    struct pd_generate_config gc;
    pd_generate_config_default(&gc);
    gc.max_new_tokens = 6;
    gc.stop_tokens[gc.n_stop_tokens++] = '\n';
    struct pd_generation *g = pd_generate(m, (const int64_t *const *)ids, lens, n, &gc, NULL);
    for (int i = 0; g && i < n; i++) {
        char text[16] = {0};
        for (int j = 0; j < pd_generation_len(g, i) && j < 15; j++) text[j] = (char)pd_generation_tokens(g, i)[j];
        correct += pd_arith_task_score(task, i, text, strlen(text));
        if (i == 0) snprintf(sample, cap, "%s%.*s", pd_arith_task_prompt(task, 0), (int)strcspn(text, "\n"), text);
        free(ids[i]);
    }
    if (!g) fprintf(stderr, "generate: %s\n", pd_last_error());
    pd_generation_destroy(g);
    free(ids);
    free(lens);
    return (double)correct / n;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 400;
    if (steps < 1) {
        fprintf(stderr, "usage: %s [steps >= 1]\n", argv[0]);
        return 2;
    }
    /* Data: generated arithmetic text, byte tokens, 5% validation. */
    struct pd_text_dataset *ds = pd_text_dataset_builtin(1, 20000, NULL, NULL, 0.05);
    struct pd_arith_task *task = pd_arith_task_create(NULL, 2, 200);
    /* Model: a small Llama (grouped-query attention, RoPE, SwiGLU). */
    struct pd_llama_config cfg;
    pd_llama_config_default(&cfg);
    cfg.dim = 64, cfg.n_layers = 2, cfg.n_heads = 4, cfg.n_kv_heads = 2, cfg.hidden_dim = 176, cfg.max_seq_len = SEQ;
    struct pd_llama *m = pd_llama_create(&cfg, 1);
    int n = pd_dist_world_size(), tp = n % 2 ? 1 : 2; /* parallel: the mesh, dp x tp */
    mesh = pd_mesh_create((int[]){n / tp, tp}, 2, (const char *const[]){"dp", "tp"}, NULL);
    struct pd_shard_plan plan[16]; /* parallel: the Llama plan on tp, sequence-parallel */
    if (pd_shard_layer(pd_llama_state_dict(m), mesh, "tp", plan, pd_llama_shard_plan(1, plan, 16))) return 1;
    if (pd_dist_world_rank() && !freopen("/dev/null", "w", stdout)) return 1; /* parallel: rank 0 prints */
    if (!ds || !task || !m) {
        fprintf(stderr, "setup failed: %s\n", pd_last_error());
        return 1;
    }
    /* AdamW over two groups (matrices decay, norms do not), warmup + cosine. */
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    oc.lr = 3e-3, oc.beta2 = 0.95, oc.weight_decay = 0.1;
    struct pd_optimizer *opt = pd_optimizer_create_for(&oc, pd_llama_state_dict(m));
    struct pd_lr_schedule sched = {PD_LR_WARMUP_COSINE, 3e-3, 3e-4, steps / 10, steps, 1, 1};
    struct pd_generator *gen = pd_generator_create(7);   /* batch positions */
    printf("%lld parameters, %d steps of %d x %d tokens\n", (long long)pd_llama_num_params(m), steps, BATCH, SEQ);
    double first = val_loss(m, ds), loss = NAN;
    pd_llama_train(m, 1);
    for (int step = 0; step < steps; step++) {
        int scope_tok = pd_scope_begin();
        struct pd_tensor *x, *y;
        pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, BATCH, SEQ, gen, mesh, "dp", &x, &y); /* parallel: this rank's rows */
        struct pd_tensor *l = pd_llama_loss(m, x, y);
        if (!l || pd_backward(l, NULL, 0)) {
            fprintf(stderr, "step %d: %s\n", step, pd_last_error());
            return 1;
        }
        loss = pd_item(l);
        pd_optimizer_clip_grad_norm(opt, 1.0);
        pd_optimizer_set_lr(opt, -1, pd_lr_schedule_at(&sched, step));
        pd_optimizer_step(opt);
        pd_optimizer_zero_grad(opt);
        pd_scope_end(scope_tok);
        if ((step + 1) % 100 == 0 || step + 1 == steps) printf("step %4d  loss %.4f\n", step + 1, loss);
    }
    double last = val_loss(m, ds);
    char sample[64] = "";
    double acc = accuracy(m, task, sample, sizeof sample);
    printf("val loss %.4f -> %.4f, held-out accuracy %.1f%%\nsample: %s\n", first, last, 100 * acc, sample);
    pd_generator_destroy(gen);
    pd_optimizer_destroy(opt);
    pd_llama_destroy(m);
    pd_shard_plans_clear(), pd_mesh_release(mesh); /* parallel */
    pd_arith_task_destroy(task);
    pd_text_dataset_destroy(ds);
    return last < 0.6 * first ? 0 : 1;   /* learned: well below the starting loss */
}
