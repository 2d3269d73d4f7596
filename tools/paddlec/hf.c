/* paddle.c — paddlec and Hugging Face Llama directories (docs/hf.md):
 * generate/eval --hf, train --init-hf (the pieces train.c calls), the
 * export-hf command, and the one config schema shared by train --config
 * and bench --config (docs/cli.md, "Config files").
 *
 * The model comes from pd_llama_from_hf (include/pd/hf.h), the tokenizer
 * from DIR/tokenizer.json through pd_tokenizer_load; a directory without
 * tokenizer.json is read with byte tokens when its vocabulary holds the 256
 * bytes (with a note), and refused otherwise.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"

void cli_hf_config(const char *dir, struct pd_llama_config *c)
{
    char path[4200];
    cli_path_join(path, sizeof path, dir, "config.json");
    char *text = cli_hold(cli_read_file(path, CLI_MAX_CONFIG, NULL), free);
    if (pd_llama_config_from_hf(c, text)) cli_fail_pd("%s", cli_q(path));
    cli_free(text);
}

struct pd_tokenizer *cli_hf_tokenizer(const char *dir, int vocab)
{
    char path[4200];
    struct stat st;
    cli_path_join(path, sizeof path, dir, "tokenizer.json");
    struct pd_tokenizer *tok;
    if (stat(path, &st) == 0) {
        tok = cli_hold(pd_tokenizer_load(path), cli_dtor_tokenizer);
        if (!tok) cli_fail_pd("cannot load %s", cli_q(path));
    } else if (vocab >= 256) {
        fprintf(stderr, "paddlec %s: note: %s has no tokenizer.json; using byte tokens (id = byte)\n", cli_cmd,
                cli_q(dir));
        tok = cli_hold(pd_tokenizer_byte_create(), cli_dtor_tokenizer);
        if (!tok) cli_fail_pd("cannot build the byte tokenizer");
    } else {
        cli_fail(CLI_EXIT_FAIL, "%s has no tokenizer.json", cli_q(dir));
    }
    if (pd_tokenizer_vocab_size(tok) > vocab)
        cli_fail(CLI_EXIT_FAIL, "%s: tokenizer vocabulary (%d) larger than the model's (%d)", cli_q(dir),
                 pd_tokenizer_vocab_size(tok), vocab);
    return tok;
}

void cli_model_load_hf(struct cli_model *cm, const char *dir)
{
    memset(cm, 0, sizeof *cm);
    cm->model = cli_hold(pd_llama_from_hf(dir), cli_dtor_llama);
    if (!cm->model) cli_fail_pd("cannot load the Hugging Face model %s", cli_q(dir));
    cm->cfg = *pd_llama_get_config(cm->model);
    cm->tok = cli_hf_tokenizer(dir, cm->cfg.vocab_size);
}

int cmd_export_hf(int argc, char **argv)
{
    const char *dtype = "f32";
    struct cli_opt opts[] = {
        {"dtype", CLI_STR, &dtype, 0, 0, "weights' dtype in model.safetensors: f32, bf16 or f16", 0},
        {0, 0, 0, 0, 0, 0, 0},
    };
    const char *pos[2];
    int npos;
    cli_parse(argc, argv, opts, "export-hf CKPT DIR [--dtype f32|bf16|f16]",
              "Write a checkpoint of `paddlec train` as a Hugging Face Llama directory: config.json,\n"
              "model.safetensors (transformers' LlamaForCausalLM loads them) and tokenizer.json\n"
              "(pd_tokenizer_save's format; a tokenizer read from a tokenizer.json is written back as read).",
              pos, 2, &npos);
    if (npos != 2) cli_fail(CLI_EXIT_USAGE, "expected CKPT and DIR (see --help)");
    enum pd_dtype dt = !strcmp(dtype, "f32") ? PD_F32 : !strcmp(dtype, "bf16") ? PD_BF16 : !strcmp(dtype, "f16") ? PD_F16 : PD_I8;
    if (dt == PD_I8) cli_fail(CLI_EXIT_USAGE, "--dtype %s: expected f32, bf16 or f16", cli_q(dtype));
    struct cli_model cm;
    cli_model_load(&cm, cli_run_resolve(pos[0])); /* a checkpoint, or a run directory's latest (as export) */
    if (pd_llama_save_hf(cm.model, pos[1], dt)) cli_fail_pd("cannot write %s", cli_q(pos[1]));
    char path[4200];
    cli_path_join(path, sizeof path, pos[1], "tokenizer.json");
    if (pd_tokenizer_save(cm.tok, path)) cli_fail_pd("cannot write %s", cli_q(path));
    printf("%s: config.json, model.safetensors (%s, %lld parameters), tokenizer.json\n", pos[1], dtype,
           (long long)pd_llama_num_params(cm.model));
    cli_free_all();
    return 0;
}

/* ---- one config schema ----------------------------------------------------
 * Keys are train's option names; nn's pd_llama_config keys are aliases, and
 * an object with "hidden_size" is a Hugging Face config.json. */
static const struct { const char *alias, *key; } aliases[] = {
    {"vocab_size", "vocab"},   {"n_layers", "layers"},      {"n_heads", "heads"},       {"n_kv_heads", "kv-heads"},
    {"hidden_dim", "hidden"},  {"max_seq_len", "seq-len"},  {"norm_eps", "norm-eps"},   {"rope_theta", "rope-theta"},
    {"tie_embeddings", "tie"}, {"init_std", "init-std"},
};

static void put(cJSON *o, const char *key, cJSON *v, const char *what)
{
    if (!v) cli_fail(CLI_EXIT_FAIL, "out of memory");
    if (cJSON_GetObjectItemCaseSensitive(o, key))
        cli_fail(CLI_EXIT_USAGE, "%s: %s is given twice (under two names)", cli_q(what), cli_q(key));
    cJSON_AddItemToObject(o, key, v);
}

char *cli_config_canonical(const char *json, const struct cli_opt *opts, const char *what)
{
    cJSON *in = cli_hold(cJSON_Parse(json), cli_dtor_json), *out = cli_hold(cJSON_CreateObject(), cli_dtor_json);
    if (!in || !cJSON_IsObject(in)) cli_fail(CLI_EXIT_USAGE, "%s: not a JSON object", cli_q(what));
    if (!out) cli_fail(CLI_EXIT_FAIL, "out of memory");
    int hf = cJSON_HasObjectItem(in, "hidden_size");
    cJSON *rest = hf ? cli_hold(cJSON_CreateObject(), cli_dtor_json) : NULL;
    for (cJSON *e = in->child; e; e = e->next) {
        const char *key = e->string;
        int opt = 0;
        for (const struct cli_opt *o = opts; o->name && !opt; o++) opt = !strcmp(o->name, key);
        if (hf && !opt) {   /* a Hugging Face key: mapped below */
            cJSON_AddItemToObject(rest, key, cJSON_Duplicate(e, 1));
            continue;
        }
        for (size_t i = 0; !opt && i < sizeof aliases / sizeof *aliases; i++)
            if (!strcmp(aliases[i].alias, key)) key = aliases[i].key;
        put(out, key, cJSON_Duplicate(e, 1), what);
    }
    if (hf) {
        char *text = cli_hold(cJSON_PrintUnformatted(rest), free);
        struct pd_llama_config c;
        if (!text || pd_llama_config_from_hf(&c, text)) cli_fail_pd("%s", cli_q(what));
        cli_free(text);
        put(out, "vocab", cJSON_CreateNumber(c.vocab_size), what);
        put(out, "dim", cJSON_CreateNumber(c.dim), what);
        put(out, "layers", cJSON_CreateNumber(c.n_layers), what);
        put(out, "heads", cJSON_CreateNumber(c.n_heads), what);
        put(out, "kv-heads", cJSON_CreateNumber(c.n_kv_heads), what);
        put(out, "hidden", cJSON_CreateNumber(c.hidden_dim), what);
        put(out, "tie", cJSON_CreateBool(c.tie_embeddings), what);
        put(out, "norm-eps", cJSON_CreateNumber(c.norm_eps), what);
        put(out, "rope-theta", cJSON_CreateNumber(c.rope_theta), what);
        put(out, "init-std", cJSON_CreateNumber(c.init_std), what);
        cli_free(rest);
    }
    char *s = cli_hold(cJSON_PrintUnformatted(out), free);
    if (!s) cli_fail(CLI_EXIT_FAIL, "out of memory");
    cli_free(out);
    cli_free(in);
    return s;
}
