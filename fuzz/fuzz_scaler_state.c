/* paddle.c — fuzz target: the grad-scaler state reader
 * (pd_grad_scaler_load_state_dict, src/amp/scaler.c). The input is a
 * safetensors file as in a training checkpoint ("scaler." metadata), given
 * as "HEADER\0DATA" (fuzz_state_file).
 * Invariants: a refused state has a one-line message; an accepted one
 * survives scale / unscale / step / update, and the state the scaler then
 * writes is accepted again. */
#include "fuzz_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pd_state_dict *sd = pd_safetensors_load(fuzz_state_file(data, size));
    if (!sd) return 0; /* the safetensors target covers the file format */
    struct pd_grad_scaler *s = pd_grad_scaler_create(NULL);
    FUZZ_CHECK(s);
    if (pd_grad_scaler_load_state_dict(s, sd, "scaler.")) {
        fuzz_check_message();
    } else {
        double scale = pd_grad_scaler_get_scale(s);
        FUZZ_CHECK(scale > 0 && pd_grad_scaler_skipped_steps(s) >= 0);
        int tok = pd_scope_begin();
        struct pd_state_dict *params = fuzz_params();
        struct pd_optim_config cfg;
        pd_optim_config_default(&cfg, PD_OPTIM_SGD);
        struct pd_optimizer *o = pd_optimizer_create_for(&cfg, params);
        FUZZ_CHECK(o);
        struct pd_tensor *w = pd_state_dict_get(params, "w");
        struct pd_tensor *loss = pd_grad_scaler_scale(s, pd_sum(pd_mul(w, w), NULL, 0, 0));
        if (loss && pd_backward(loss, NULL, 0) == PD_OK) {
            if (pd_grad_scaler_step(s, o) < 0) fuzz_check_message();
            if (pd_grad_scaler_update(s)) fuzz_check_message();
        }
        struct pd_state_dict *out = pd_state_dict_create();
        FUZZ_CHECK(out && pd_grad_scaler_state_dict(s, out, "scaler.") == PD_OK);
        struct pd_grad_scaler *s2 = pd_grad_scaler_create(NULL);
        if (pd_grad_scaler_load_state_dict(s2, out, "scaler.")) {
            fprintf(stderr, "written state refused: %s\n", pd_last_error());
            FUZZ_CHECK(!"the state a scaler writes loads again");
        }
        pd_grad_scaler_destroy(s2);
        pd_state_dict_destroy(out);
        pd_optimizer_destroy(o);
        pd_state_dict_destroy(params);
        pd_scope_end(tok);
    }
    pd_grad_scaler_destroy(s);
    pd_state_dict_destroy(sd);
    return 0;
}
