/* A Hugging Face Llama directory through the C API (docs/hf.md): load it,
 * continue a prompt greedily, export it in bf16 and load the export back.
 *   example_hf_llama [DIR]   (default: the repository's tests/fixtures/hf/tied-f32) */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/pd.h"

int main(int argc, char **argv)
{
    char dflt[4096];
    snprintf(dflt, sizeof dflt, "%s", __FILE__);   /* .../examples/hf_llama.c */
    char *slash = strrchr(dflt, '/');
    snprintf(slash ? slash : dflt, sizeof dflt - (size_t)(slash ? slash - dflt : 0), "/../tests/fixtures/hf/tied-f32");
    const char *dir = argc > 1 && !isdigit((unsigned char)argv[1][0]) ? argv[1] : dflt;

    struct pd_llama *m = pd_llama_from_hf(dir);   /* config.json + model.safetensors (or shards) */
    if (!m) {
        fprintf(stderr, "error: %s\n", pd_last_error());
        return 1;
    }
    const struct pd_llama_config *c = pd_llama_get_config(m);
    printf("%d layers, dim %d, %d heads / %d kv heads, vocab %d, rope_theta %g, tied %d: %lld parameters\n",
           c->n_layers, c->dim, c->n_heads, c->n_kv_heads, c->vocab_size, c->rope_theta, c->tie_embeddings,
           (long long)pd_llama_num_params(m));

    /* Greedy decoding from token ids (pd_tokenizer_load(DIR "/tokenizer.json")
     * turns text into ids; `paddlec generate --hf DIR` does it all). */
    int64_t prompt[] = {1, 17, 42, 99, 5};
    const int64_t *rows[] = {prompt};
    int len = 5;
    struct pd_generate_config gc;
    pd_generate_config_default(&gc);
    gc.max_new_tokens = 8;
    struct pd_generation *g = pd_generate(m, rows, &len, 1, &gc, NULL);
    if (!g) {
        fprintf(stderr, "error: %s\n", pd_last_error());
        return 1;
    }
    printf("greedy:");
    for (int i = 0; i < pd_generation_len(g, 0); i++) printf(" %lld", (long long)pd_generation_tokens(g, 0)[i]);
    printf("\n");
    pd_generation_destroy(g);

    /* Export (config.json + model.safetensors in bf16) and read it back. */
    char out[] = "/tmp/hf_llama_example.XXXXXX";
    if (!mkdtemp(out) || pd_llama_save_hf(m, out, PD_BF16)) {
        fprintf(stderr, "error: cannot export: %s\n", pd_last_error());
        return 1;
    }
    struct pd_llama *back = pd_llama_from_hf(out);
    printf("exported to %s (bf16) and reloaded: %s\n", out, back ? "ok" : pd_last_error());
    pd_llama_destroy(back);
    pd_llama_destroy(m);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
    return system(cmd) != 0 || !back;
}
