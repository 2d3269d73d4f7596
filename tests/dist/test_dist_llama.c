/* paddle.c — Llama training in parallel under mpirun (2 and 4 ranks): the
 * single-process program, with its parameters distributed by
 * pd_shard_layer, its batches split by pd_shard_batch and its optimizer
 * state following the parameters, trains 20 steps (AdamW, clipping) with
 * the losses of one process (1e-5 relative, f32) and ends with the same
 * parameters (1e-4 of their scale: Adam divides by the root of tiny second
 * moments, which magnifies the sums' rounding). Meshes: 2 ranks: DP2, TP2, TP2+SP; 4 ranks: DP4, DP2xTP2,
 * DP2xTP2+SP (docs/distributed.md "Training in parallel"). Greedy generation
 * from the trained distributed model equals one process's. Then the same
 * under bf16 autocast (DP2, TP2, TP2+SP; DP2xTP2, +SP), within bf16's
 * tolerances (bf16_autocast). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/dist.h"
#include "pd/flashmask.h"
#include "pd/generate.h"
#include "pd/optim.h"
#include "pd/pd.h"

#include "dist_check.h"

#define STEPS 20
#define B 4
#define T 8

static struct pd_llama_config config(void)
{
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    c.vocab_size = 40, c.dim = 16, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.hidden_dim = 24;
    c.max_seq_len = T;
    return c;
}

/* The batch of a step, the same on every rank: ids and next-token targets. */
static void batch_v(int step, int64_t V, struct pd_tensor **x, struct pd_tensor **y)
{
    int64_t ids[B * (T + 1)];
    for (int b = 0; b < B; b++)
        for (int t = 0; t <= T; t++) ids[b * (T + 1) + t] = (step * 7 + b * 13 + t * (2 + b % 2)) % V; /* learnable */
    struct pd_tensor *all = pd_from_buffer(ids, (int64_t[]){B, T + 1}, 2, PD_I64);
    *x = pd_contiguous(pd_slice(all, 1, 0, T, 1));
    *y = pd_contiguous(pd_slice(all, 1, 1, T + 1, 1));
}

static void batch(int step, struct pd_tensor **x, struct pd_tensor **y) { batch_v(step, 40, x, y); }

/* bf16 autocast around the forward (train's losses), as paddlec train --bf16:
 * one process and the mesh then round partial sums to bf16 at different
 * points (a TP product is rounded on each rank, then summed; a DP rank's
 * weight gradient sums half the batch, rounded to bf16, then the f32 sum of
 * the ranks), so the runs drift apart by bf16 roundings. At the f32 runs'
 * learning rate (3e-2) AdamW amplifies them into 1% loss differences by
 * step 7 (for DP as for TP): the bf16 runs use 3e-3. Measured over these 20
 * steps (printed): losses within 1.4e-4 (DP2), 2.2e-4 (TP2, TP2+SP),
 * 2.3e-4 (DP2xTP2, +SP) relative; final parameters within 4.5e-3 (DP2) to
 * 8e-3 (DP2xTP2) of their scale. Tolerances about four times that:
 * TOL_LOSS_BF16 relative on each loss, TOL_PARAM_BF16 on the parameters.
 * Greedy generation is not compared (a near tie may flip). */
static int bf16_autocast;
#define TOL_LOSS_BF16 1e-3
#define TOL_PARAM_BF16 3e-2

struct run {
    double loss[STEPS];
    struct pd_state_dict *params; /* final, whole (plain tensors) */
    int64_t gen[2][4];            /* greedy continuations of two prompts (KV cache) */
};

/* Train; mesh NULL: one process. dp/tp: the axes' names (NULL: none). */
static int train(struct run *out, struct pd_mesh *m, const char *dp, const char *tp, int sp)
{
    struct pd_llama_config c = config();
    struct pd_llama *model = pd_llama_create(&c, 3);
    struct pd_state_dict *sd = pd_llama_state_dict(model);
    if (m) {
        struct pd_shard_plan plan[16];
        int n = tp ? pd_llama_shard_plan(sp, plan, 16) : 0;
        if (n < 0 || pd_shard_layer(sd, m, tp, plan, n)) return -1;
    }
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    oc.lr = bf16_autocast ? 3e-3 : 3e-2, oc.weight_decay = 0.1;
    struct pd_optimizer *opt = pd_optimizer_create_for(&oc, sd);
    if (!opt) return -1;
    int rc = 0;
    for (int s = 0; s < STEPS && !rc; s++) {
        int tok = pd_scope_begin();
        struct pd_tensor *x, *y;
        batch(s, &x, &y);
        if (m) x = pd_shard_batch(x, m, dp), y = pd_shard_batch(y, m, dp);
        int ac = bf16_autocast ? pd_autocast_begin(PD_BF16) : 0;
        struct pd_tensor *l = pd_llama_loss(model, x, y);
        if (bf16_autocast) pd_autocast_end(ac);
        rc = !l || pd_backward(l, NULL, 0);
        if (!rc) out->loss[s] = pd_item(l);
        if (!rc) rc = pd_optimizer_clip_grad_norm(opt, 0.5) < 0;
        if (!rc) rc = pd_optimizer_step(opt);
        pd_optimizer_zero_grad(opt);
        pd_scope_end(tok);
    }
    out->params = rc ? NULL : pd_state_dict_gather(sd);
    /* generation on the distributed model: decoding feeds one token at a
     * time, shorter than the sequence-parallel axis */
    int64_t p0[2] = {1, 5}, p1[3] = {7, 3, 2};
    const int64_t *prompts[2] = {p0, p1};
    int lens[2] = {2, 3};
    struct pd_generate_config gc;
    pd_generate_config_default(&gc);
    gc.max_new_tokens = 4;
    struct pd_generation *g = rc ? NULL : pd_generate(model, prompts, lens, 2, &gc, NULL);
    for (int i = 0; g && i < 2; i++)
        for (int j = 0; j < 4; j++) out->gen[i][j] = j < pd_generation_len(g, i) ? pd_generation_tokens(g, i)[j] : -1;
    if (!g) rc = -1;
    pd_generation_destroy(g);
    pd_optimizer_destroy(opt);
    pd_llama_destroy(model);
    pd_shard_plans_clear();
    return rc || !out->params ? -1 : 0;
}

/* max |a - b| / (1 + max |b|) */
static double diff(struct pd_tensor *a, struct pd_tensor *b)
{
    int64_t n = pd_tensor_numel(a);
    if (n != pd_tensor_numel(b)) return INFINITY;
    float *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    pd_to_buffer(a, x, PD_F32);
    pd_to_buffer(b, y, PD_F32);
    double d = 0, mx = 0;
    for (int64_t i = 0; i < n; i++) d = fmax(d, fabs((double)x[i] - y[i])), mx = fmax(mx, fabs((double)y[i]));
    free(x), free(y);
    return d / (1 + mx);
}

static void compare(const char *label, const struct run *ref, struct pd_mesh *m, const char *dp, const char *tp, int sp)
{
    struct run r;
    memset(&r, 0, sizeof r);
    int rc = train(&r, m, dp, tp, sp);
    CHECK(rc == 0, "%s: training failed", label);
    if (rc) return;
    double tol = bf16_autocast ? TOL_LOSS_BF16 : 1e-5, tol_p = bf16_autocast ? TOL_PARAM_BF16 : 1e-4, worst = 0, worst_p = 0;
    for (int s = 0; s < STEPS; s++) {
        worst = fmax(worst, fabs(r.loss[s] - ref->loss[s]) / fabs(ref->loss[s]));
        CHECK(fabs(r.loss[s] - ref->loss[s]) <= tol * fabs(ref->loss[s]), "%s: step %d loss %.9g, one process %.9g",
              label, s + 1, r.loss[s], ref->loss[s]);
    }
    int n = pd_state_dict_size(ref->params);
    CHECK(pd_state_dict_size(r.params) == n, "%s: %d parameters", label, pd_state_dict_size(r.params));
    for (int i = 0; i < n; i++) {
        struct pd_tensor *a = pd_state_dict_get(r.params, pd_state_dict_name(ref->params, i));
        double d = a ? diff(a, pd_state_dict_tensor(ref->params, i)) : INFINITY;
        worst_p = fmax(worst_p, d);
        CHECK(d <= tol_p, "%s: final %s differs by %.3g", label, pd_state_dict_name(ref->params, i), d);
    }
    CHECK(bf16_autocast || !memcmp(r.gen, ref->gen, sizeof r.gen), "%s: generation differs from one process's", label);
    if (rank == 0)
        printf("%s: loss %.6f -> %.6f, as one process (losses within %.3g, parameters %.3g)\n", label, r.loss[0],
               r.loss[STEPS - 1], worst, worst_p);
    pd_state_dict_destroy(r.params);
}

/* FlashMask (the Llama's attention kernel) on q, k, v [B, T, H, D] split
 * on the sequence (dim 1) or the heads (dim 2) equals one process: causal
 * attention needs keys of every earlier piece. */
static void flashmask_split(struct pd_mesh *m)
{
    int tok = pd_scope_begin();
    int64_t sh[4] = {2, 8, 4, 4};
    struct pd_tensor *q = pd_sin(pd_reshape(pd_arange(0, 256, 1, PD_F32), sh, 4));
    struct pd_tensor *k = pd_cos(q), *v = pd_sin(pd_scale(q, 0.3));
    struct pd_tensor *ref = pd_flashmask_attention(q, k, v, NULL, 1, NULL, 0.5, 0.0, NULL);
    for (int d = 1; d <= 2; d++) {
        struct pd_placement p = pd_shard(d);
        struct pd_tensor *o = pd_flashmask_attention(pd_shard_tensor(q, m, &p), pd_shard_tensor(k, m, &p),
                                                     pd_shard_tensor(v, m, &p), NULL, 1, NULL, 0.5, 0.0, NULL);
        double e = o ? diff(pd_dtensor_full(o), ref) : INFINITY;
        CHECK(e <= 1e-6, "flashmask on Shard(%d): differs by %.3g", d, e);
    }
    pd_scope_end(tok);
}

/* Communication volume of one training step (forward, then backward),
 * counted by pd_comm_stats (bytes this rank sent; an all-gather sends its
 * piece, an all-reduce and a reduce-scatter their whole buffer), against
 * the formulas of docs/distributed.md "Communication per step" for n = 2:
 *   DP: forward  one all-reduce of 4 bytes (the loss's count of targets);
 *       backward every gradient but the embedding's all-reduced, 4 (P - V D)
 *       bytes, plus the 4 bytes of the count; the embedding's gradient is
 *       made whole from the gathered ids and rows: all-gathers of
 *       (B/n) T 8 and (B/n) T D 4 bytes. With a vocabulary small enough
 *       that 2 V D 4 <= B T (D 4 + 8) (V = 16 here), the embedding's
 *       gradient is Partial instead: 4 P + 4 bytes all-reduced, no gather.
 *   TP: forward  2 L all-reduces of B T D 4 (attention and MLP outputs,
 *       row-parallel) and 2 of B T 4 (the vocabulary-parallel loss's row
 *       max and row sum); backward 2 L + 1 all-reduces of B T D 4 (the
 *       inputs of the column-parallel groups: q/k/v, gate/up, the head)
 *       and 1 of B T 4.
 *   SP: forward  2 L + 1 all-gathers of (B T / n) D 4 (into each
 *       column-parallel group and the head), 2 L reduce-scatters of
 *       B T D 4 (out of each row-parallel layer), the loss's 2 of B T 4;
 *       backward the same all-gathers and 2 L + 1 reduce-scatters, 2 L + 1
 *       all-reduces of D 4 (the RMSNorm weights' gradients: their inputs
 *       are split by sequence) and 1 of B T 4. */
static void comm_volume(struct pd_mesh *dpm, struct pd_mesh *tpm)
{
    struct pd_llama_config c = config();
    const int64_t L = c.n_layers, D = c.dim, n = 2, BT = B * T;
    struct {
        const char *label;
        struct pd_mesh *m;
        int tp, sp;
        int64_t want[2][PD_COMM_COUNT][2]; /* forward/backward, kind, calls/bytes */
        int64_t vocab;                     /* 0: config()'s */
    } cases[4] = {
        {"DP2", dpm, 0, 0, {{{0, 0}, {1, 4}}, {{2, BT / n * 8 + BT / n * D * 4}, {0, 0}}}, 0},
        {"DP2 (vocabulary 16)", dpm, 0, 0, {{{0, 0}, {1, 4}}, {{0, 0}, {0, 0}}}, 16},
        {"TP2", tpm, 1, 0, {{{0, 0}, {2 * L + 2, 2 * L * BT * D * 4 + 2 * BT * 4}}, {{0, 0}, {2 * L + 2, (2 * L + 1) * BT * D * 4 + BT * 4}}}},
        {"TP2+SP", tpm, 1, 1, {{{2 * L + 1, (2 * L + 1) * BT / n * D * 4}, {2, 2 * BT * 4}, {2 * L, 2 * L * BT * D * 4}},
                               {{2 * L + 1, (2 * L + 1) * BT / n * D * 4}, {2 * L + 2, (2 * L + 1) * D * 4 + BT * 4},
                                {2 * L + 1, (2 * L + 1) * BT * D * 4}}}},
    };
    for (int ci = 0; ci < 4; ci++) {
        int tok = pd_scope_begin();
        struct pd_llama_config cc = c;
        if (cases[ci].vocab) cc.vocab_size = cases[ci].vocab;
        int64_t Vc = cc.vocab_size;
        struct pd_llama *model = pd_llama_create(&cc, 3);
        struct pd_state_dict *sd = pd_llama_state_dict(model);
        struct pd_shard_plan plan[16];
        int np = cases[ci].tp ? pd_llama_shard_plan(cases[ci].sp, plan, 16) : 0;
        CHECK(np >= 0 && pd_shard_layer(sd, cases[ci].m, cases[ci].tp ? "tp" : NULL, plan, np) == 0, "shard");
        int64_t P = 0;
        for (int i = 0; i < pd_state_dict_size(sd); i++) P += pd_tensor_numel(pd_state_dict_tensor(sd, i));
        if (!cases[ci].tp) { /* the embedding's gradient: Partial when its table is the smaller move */
            int partial = 2 * Vc * D * 4 <= BT * (D * 4 + 8);
            CHECK(partial == (cases[ci].vocab != 0), "%s: the formula's choice", cases[ci].label);
            cases[ci].want[1][PD_COMM_ALLREDUCE][1] = 4 * (partial ? P : P - Vc * D) + 4;
            cases[ci].want[1][PD_COMM_ALLREDUCE][0] = -1; /* one per parameter: not the point */
        }
        struct pd_tensor *x, *y;
        batch_v(0, Vc, &x, &y);
        const char *dp = cases[ci].tp ? NULL : "dp";
        x = pd_shard_batch(x, cases[ci].m, dp), y = pd_shard_batch(y, cases[ci].m, dp);
        struct pd_comm_stats s0, s1, s2;
        pd_comm_stats_reset();
        pd_comm_stats(&s0);
        struct pd_tensor *l = pd_llama_loss(model, x, y);
        pd_comm_stats(&s1);
        CHECK(l && pd_backward(l, NULL, 0) == 0, "%s: backward", cases[ci].label);
        pd_comm_stats(&s2);
        const struct pd_comm_stats *from[2] = {&s0, &s1}, *to[2] = {&s1, &s2};
        for (int ph = 0; ph < 2; ph++)
            for (int k = 0; k < PD_COMM_COUNT; k++) {
                int64_t calls = to[ph]->calls[k] - from[ph]->calls[k], bytes = to[ph]->bytes[k] - from[ph]->bytes[k];
                const int64_t *w = cases[ci].want[ph][k];
                CHECK((w[0] < 0 || calls == w[0]) && bytes == w[1], "%s %s: collective kind %d: %lld calls, %lld bytes; "
                      "the formula gives %lld, %lld", cases[ci].label, ph ? "backward" : "forward", k, (long long)calls,
                      (long long)bytes, (long long)w[0], (long long)w[1]);
            }
        pd_llama_destroy(model);
        pd_shard_plans_clear();
        pd_scope_end(tok);
    }
}

int main(void)
{
    rank = pd_dist_world_rank();
    world = pd_dist_world_size();
    struct run ref;
    memset(&ref, 0, sizeof ref);
    CHECK(train(&ref, NULL, NULL, NULL, 0) == 0, "single process");
    CHECK(ref.loss[STEPS - 1] < ref.loss[0] - 0.1, "the model did not learn (%g -> %g)", ref.loss[0], ref.loss[STEPS - 1]);
    const char *dp_tp[2] = {"dp", "tp"};
    if (world == 2) {
        struct pd_mesh *d = pd_mesh_create((int[]){2}, 1, (const char *const[]){"dp"}, NULL);
        flashmask_split(d);
        struct pd_mesh *t = pd_mesh_create((int[]){2}, 1, (const char *const[]){"tp"}, NULL);
        compare("DP2", &ref, d, "dp", NULL, 0);
        compare("TP2", &ref, t, NULL, "tp", 0);
        compare("TP2+SP", &ref, t, NULL, "tp", 1);
        comm_volume(d, t);
        pd_mesh_release(d);
        pd_mesh_release(t);
    } else if (world == 4) {
        struct pd_mesh *d = pd_mesh_create((int[]){4}, 1, (const char *const[]){"dp"}, NULL);
        struct pd_mesh *g = pd_mesh_create((int[]){2, 2}, 2, dp_tp, NULL);
        compare("DP4", &ref, d, "dp", NULL, 0);
        compare("DP2xTP2", &ref, g, "dp", "tp", 0);
        compare("DP2xTP2+SP", &ref, g, "dp", "tp", 1);
        pd_mesh_release(d);
        pd_mesh_release(g);
    } else if (rank == 0) {
        printf("test_dist_llama: %d ranks; runs with 2 or 4\n", world);
    }
    pd_state_dict_destroy(ref.params);
    /* the same under bf16 autocast (paddlec train --bf16 --mesh ...) */
    bf16_autocast = 1;
    memset(&ref, 0, sizeof ref);
    CHECK(train(&ref, NULL, NULL, NULL, 0) == 0, "single process, bf16 autocast");
    if (world == 2 || world == 4) {
        struct pd_mesh *d = pd_mesh_create((int[]){2}, 1, (const char *const[]){"dp"}, NULL);
        struct pd_mesh *t = pd_mesh_create((int[]){2}, 1, (const char *const[]){"tp"}, NULL);
        struct pd_mesh *g = world == 4 ? pd_mesh_create((int[]){2, 2}, 2, dp_tp, NULL) : NULL;
        if (world == 2) {
            compare("bf16 DP2", &ref, d, "dp", NULL, 0);
            compare("bf16 TP2", &ref, t, NULL, "tp", 0);
            compare("bf16 TP2+SP", &ref, t, NULL, "tp", 1);
        } else {
            compare("bf16 DP2xTP2", &ref, g, "dp", "tp", 0);
            compare("bf16 DP2xTP2+SP", &ref, g, "dp", "tp", 1);
        }
        pd_mesh_release(d), pd_mesh_release(t), pd_mesh_release(g);
    }
    pd_state_dict_destroy(ref.params);
    int all = dist_check_total();
    if (rank == 0) printf("test_dist_llama: %d failures over %d ranks\n", all, world);
    return all != 0;
}
