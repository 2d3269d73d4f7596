/* Save a model's tensors with metadata, list the file, load it back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pd/pd.h"
#include "pd/io.h"

int main(void)
{
    char dir[] = "/tmp/pd_ckpt_XXXXXX", path[64], report[256];
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);

    /* a "model": its state dict lists the live parameter tensors */
    struct pd_state_dict *model = pd_state_dict_create();
    int scope_tok = pd_scope_begin();
    pd_state_dict_add(model, "embed.weight", pd_randn((int64_t[]){16, 4}, 2, PD_F32, NULL));
    pd_state_dict_add(model, "norm.weight", pd_ones((int64_t[]){4}, 1, PD_F32));
    pd_scope_end(scope_tok); /* the dict holds its own references */
    pd_state_dict_set_meta(model, "step", "100");

    /* atomic save: a temporary file, fsync, rename */
    if (pd_safetensors_save(path, model)) {
        fprintf(stderr, "save: %s\n", pd_last_error());
        return 1;
    }

    /* list the header without loading the data */
    struct pd_safetensors_info *info = pd_safetensors_info(path);
    if (!info) return 1;
    for (int i = 0; i < info->n_tensors; i++) {
        const struct pd_safetensors_entry *e = &info->tensors[i];
        printf("%-14s %-4s ndim %d  bytes [%llu, %llu)\n", e->name, pd_safetensors_dtype_name(e->dtype), e->ndim,
               (unsigned long long)e->begin, (unsigned long long)e->end);
    }
    pd_safetensors_info_destroy(info);

    /* load into a fresh model of the same shapes, strictly, in bf16 */
    struct pd_state_dict *fresh = pd_state_dict_create();
    scope_tok = pd_scope_begin();
    pd_state_dict_add(fresh, "embed.weight", pd_zeros((int64_t[]){16, 4}, 2, PD_BF16));
    pd_state_dict_add(fresh, "norm.weight", pd_zeros((int64_t[]){4}, 1, PD_BF16));
    pd_scope_end(scope_tok);
    int st = pd_state_dict_load_file(fresh, path, 1, report, sizeof report);
    printf("%s\n", report); /* loaded 2 tensors (2 converted to the model's dtype) */

    struct pd_tensor_stats s;
    pd_tensor_stats(pd_state_dict_get(fresh, "norm.weight"), &s);
    printf("norm.weight: min %g max %g mean %g std %g\n", s.min, s.max, s.mean, s.std);

    /* a mis-shaped model is refused, and nothing is written into it */
    struct pd_state_dict *wrong = pd_state_dict_create();
    scope_tok = pd_scope_begin();
    pd_state_dict_add(wrong, "embed.weight", pd_zeros((int64_t[]){8, 4}, 2, PD_F32));
    pd_scope_end(scope_tok);
    int st2 = pd_state_dict_load_file(wrong, path, 0, report, sizeof report);
    printf("%s\n", report);

    int ok = st == PD_OK && s.mean == 1 && s.std == 0 && st2 == PD_ERR_INVALID;
    pd_state_dict_destroy(model);
    pd_state_dict_destroy(fresh);
    pd_state_dict_destroy(wrong);
    unlink(path);
    rmdir(dir);
    return ok ? 0 : 1;
}
