/* f16 autocast and the gradient scaler on a mesh (docs/distributed.md,
 * "f16 autocast and the gradient scaler"). Run it with: mpirun -np 4 ./prog
 * (a dp 2 x tp 2 mesh; 2 ranks: 1 x 2; one rank: 1 x 1). */
#include <stdio.h>

#include "pd/pd.h"

int main(void)
{
    int n = pd_dist_world_size(), me = pd_dist_world_rank();
    int shape[2] = {n % 2 ? n : n / 2, n % 2 ? 1 : 2}; /* dp x tp */
    struct pd_mesh *mesh = pd_mesh_create(shape, 2, (const char *[]){"dp", "tp"}, NULL);
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    c.vocab_size = 40, c.dim = 16, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.hidden_dim = 24;
    c.max_seq_len = 8;
    struct pd_llama *model = pd_llama_create(&c, 3);
    struct pd_state_dict *params = pd_llama_state_dict(model);
    struct pd_shard_plan plan[16];
    int n_plan = pd_llama_shard_plan(0, plan, 16), n_params = pd_state_dict_size(params);
    if (!mesh || n_plan < 0 || pd_shard_layer(params, mesh, "tp", plan, n_plan)) pd_dist_abort(1, pd_last_error());
    struct pd_tensor *ps[32];
    for (int i = 0; i < n_params && i < 32; i++) ps[i] = pd_state_dict_tensor(params, i);
    struct pd_dp *dp = pd_dp_attach(ps, n_params, mesh, "dp", 0); /* gradients summed over dp in buckets */
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    oc.lr = 3e-3;
    struct pd_optimizer *opt = pd_optimizer_create_for(&oc, params);
    struct pd_grad_scaler *scaler = pd_grad_scaler_create(NULL); /* 2^16, halved on inf, doubled after 2000 */
    if (!dp || !opt || !scaler) pd_dist_abort(1, pd_last_error());
    double first = 0, last = 0;
    for (int step = 0; step < 10; step++) {
        int tok = pd_scope_begin();
        int64_t ids[4 * 9]; /* 4 rows of 8 tokens and their next tokens, the same on every rank */
        for (int i = 0; i < 4 * 9; i++) ids[i] = (step * 5 + i * 3) % 40;
        struct pd_tensor *all = pd_from_buffer(ids, (int64_t[]){4, 9}, 2, PD_I64);
        struct pd_tensor *x = pd_shard_batch(pd_contiguous(pd_slice(all, 1, 0, 8, 1)), mesh, "dp");
        struct pd_tensor *y = pd_shard_batch(pd_contiguous(pd_slice(all, 1, 1, 9, 1)), mesh, "dp");
        int ac = pd_autocast_begin(PD_F16); /* each rank casts its own pieces */
        struct pd_tensor *loss = pd_llama_loss(model, x, y);
        pd_autocast_end(ac);
        if (!loss || pd_backward(pd_grad_scaler_scale(scaler, loss), NULL, 0)) pd_dist_abort(1, pd_last_error());
        /* finishes the dp reduction, unscales each gradient once, and
         * all-reduces the inf flag: every rank skips the same steps */
        if (pd_grad_scaler_unscale(scaler, opt) || pd_optimizer_clip_grad_norm(opt, 1.0) < 0)
            pd_dist_abort(1, pd_last_error());
        int stepped = pd_grad_scaler_step(scaler, opt);
        if (stepped < 0 || pd_grad_scaler_update(scaler)) pd_dist_abort(1, pd_last_error());
        pd_optimizer_zero_grad(opt);
        double l = pd_item(loss); /* collective: every rank reads it */
        if (step == 0) first = l;
        last = l;
        if (me == 0) printf("step %d: loss %.4f%s, scale %g\n", step + 1, l, stepped ? "" : " (skipped)",
                            pd_grad_scaler_get_scale(scaler));
        pd_scope_end(tok);
    }
    pd_grad_scaler_destroy(scaler);
    pd_optimizer_destroy(opt);
    pd_dp_detach(dp);
    pd_llama_destroy(model);
    pd_shard_plans_clear();
    pd_mesh_release(mesh);
    return last < first ? 0 : 1;
}
