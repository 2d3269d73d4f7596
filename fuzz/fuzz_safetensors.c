/* paddle.c — fuzz target: the safetensors reader (src/io/safetensors.c).
 * The input is a file: header listing (pd_safetensors_info, what `paddlec
 * inspect` reads), full load (pd_safetensors_load) and statistics of each
 * loaded tensor. Invariants: both readers agree on acceptance (the loader
 * also refuses bools other than 0/1), a loaded dict lists what the header
 * listed, and every error has a one-line message. */
#include "fuzz.h"
#include "pd/io.h"

static void check_message(void)
{
    const char *e = pd_last_error();
    FUZZ_CHECK(fuzz_one_line(e));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    struct pd_safetensors_info *info = pd_safetensors_info(path);
    if (!info) check_message();
    struct pd_state_dict *sd = pd_safetensors_load(path);
    if (!sd) {
        check_message();
    } else {
        FUZZ_CHECK(info != NULL);
        FUZZ_CHECK(pd_state_dict_size(sd) == info->n_tensors);
        FUZZ_CHECK(pd_state_dict_meta_size(sd) <= info->n_meta);
        for (int i = 0; i < info->n_tensors; i++) {
            const struct pd_safetensors_entry *e = &info->tensors[i];
            struct pd_tensor *t = pd_state_dict_get(sd, e->name);
            FUZZ_CHECK(t && pd_tensor_dtype(t) == e->dtype && pd_tensor_ndim(t) == e->ndim);
            struct pd_tensor_stats st;
            FUZZ_CHECK(pd_tensor_stats(t, &st) == PD_OK && st.numel == pd_tensor_numel(t));
        }
        for (int i = 0; i < info->n_meta; i++)
            FUZZ_CHECK(pd_state_dict_get_meta(sd, info->meta_keys[i]) != NULL);
    }
    pd_state_dict_destroy(sd);
    pd_safetensors_info_destroy(info);
    return 0;
}
