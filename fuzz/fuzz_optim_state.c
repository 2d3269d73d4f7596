/* paddle.c — fuzz target: the optimizer state reader
 * (pd_optimizer_load_state_dict, src/optim/ckpt.c). The input is a
 * safetensors file as in a training checkpoint, given as "HEADER\0DATA"
 * (fuzz_state_file); the optimizer's kind comes
 * from its "optim.kind" metadata (AdamW when absent or unknown), amsgrad and
 * SGD momentum from the presence of their state tensors, so one file can
 * reach every loader path. Invariants: a refused state has a one-line message
 * and leaves the optimizer usable; an accepted one survives gradient
 * accumulation over two micro-batches (pd_optimizer_accumulate), and the
 * state the optimizer then writes is accepted again (what a checkpoint
 * writes, resume must read). */
#include "fuzz_state.h"

static struct pd_optimizer *make(const struct pd_state_dict *sd, struct pd_state_dict *params)
{
    const char *kind = pd_state_dict_get_meta(sd, "optim.kind");
    enum pd_optim_kind k = PD_OPTIM_ADAMW;
    if (kind && !strcmp(kind, "sgd")) k = PD_OPTIM_SGD;
    if (kind && !strcmp(kind, "adam")) k = PD_OPTIM_ADAM;
    struct pd_optim_config cfg;
    pd_optim_config_default(&cfg, k);
    if (k != PD_OPTIM_SGD) cfg.amsgrad = pd_state_dict_get(sd, "optim.max_exp_avg_sq.w") != NULL;
    else if (pd_state_dict_get(sd, "optim.momentum_buffer.w")) cfg.momentum = 0.9;
    struct pd_optimizer *o = pd_optimizer_create_for(&cfg, params);
    FUZZ_CHECK(o);
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pd_state_dict *sd = pd_safetensors_load(fuzz_state_file(data, size));
    if (!sd) return 0; /* the safetensors target covers the file format */
    int tok = pd_scope_begin();
    struct pd_state_dict *params = fuzz_params();
    struct pd_optimizer *o = make(sd, params);
    if (pd_optimizer_load_state_dict(o, sd, "optim.")) {
        fuzz_check_message();
        FUZZ_CHECK(pd_optimizer_step_count(o) == 0);
    } else {
        int64_t step = pd_optimizer_step_count(o);
        FUZZ_CHECK(step >= 0);
        /* two micro-batches of accumulation, as `paddlec train --accum 2`
         * (the loaded counter decides which call steps) */
        for (int i = 0; i < 2; i++) {
            FUZZ_CHECK(fuzz_backward(params, 0.5) == PD_OK);
            int r = pd_optimizer_accumulate(o, 2);
            if (r < 0) fuzz_check_message();
            if (r) break;
        }
        struct pd_state_dict *out = pd_state_dict_create();
        FUZZ_CHECK(out && pd_optimizer_state_dict(o, out, "optim.") == PD_OK);
        struct pd_optimizer *o2 = make(out, params);
        if (pd_optimizer_load_state_dict(o2, out, "optim.")) {
            fprintf(stderr, "written state refused: %s\n", pd_last_error());
            FUZZ_CHECK(!"the state an optimizer writes loads again");
        }
        FUZZ_CHECK(pd_optimizer_step_count(o2) == pd_optimizer_step_count(o));
        pd_optimizer_destroy(o2);
        pd_state_dict_destroy(out);
    }
    pd_optimizer_destroy(o);
    pd_state_dict_destroy(params);
    pd_scope_end(tok);
    pd_state_dict_destroy(sd);
    return 0;
}
