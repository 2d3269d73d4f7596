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

/* The id of the first of names that is a special token of tok, or -1. */
static int special_of(const struct pd_tokenizer *tok, const char *const *names, const char **which)
{
    for (; *names; names++) {
        int id = pd_tokenizer_special_id(tok, *names);
        if (id >= 0) {
            *which = *names;
            return id;
        }
    }
    return -1;
}

/* DIR/name <- o (held JSON), indented, with a final newline. */
static void write_json(const char *dir, const char *name, cJSON *o)
{
    char path[4200];
    cli_path_join(path, sizeof path, dir, name);
    char *s = o ? cli_hold(cJSON_Print(o), free) : NULL;
    if (!s) cli_fail(CLI_EXIT_FAIL, "out of memory");
    size_t n = strlen(s);
    char *t = cli_hold(malloc(n + 2), free);
    if (!t) cli_fail(CLI_EXIT_FAIL, "out of memory");
    memcpy(t, s, n);
    t[n] = '\n';
    if (pd_file_write(path, t, n + 1)) cli_fail_pd("cannot write %s", cli_q(path));
    cli_free(t);
    cli_free(s);
}

/* What transformers reads next to the weights: generation_config.json (the
 * BOS and EOS ids, null when the tokenizer has none: paddlec's byte and BPE
 * tokenizers have no BOS) and tokenizer_config.json (tokenizer.json holds
 * the whole pipeline: the generic fast class, not LlamaTokenizerFast, which
 * would add a BOS of its own). */
static void write_hf_side_files(const char *dir, const struct cli_model *cm)
{
    static const char *const bos_names[] = {"<s>", "<|begin_of_text|>", NULL};
    static const char *const eos_names[] = {"</s>", "<|end_of_text|>", "<|eot_id|>", "<|endoftext|>", "<|im_end|>", NULL};
    const char *bos_text = NULL, *eos_text = NULL;
    char bos_buf[PD_TOKENIZER_MAX_TOKEN_LEN + 1];
    int bos = pd_tokenizer_bos_id(cm->tok);
    size_t bl = 0;
    const unsigned char *bb = bos >= 0 ? pd_tokenizer_token(cm->tok, bos, &bl) : NULL;
    if (bb && bl < sizeof bos_buf && !memchr(bb, 0, bl)) {   /* the post-processor's BOS, as text */
        memcpy(bos_buf, bb, bl);
        bos_buf[bl] = 0;
        bos_text = bos_buf;
    } else if (bos < 0) {
        bos = special_of(cm->tok, bos_names, &bos_text);
    }
    int eos = special_of(cm->tok, eos_names, &eos_text);
    cJSON *g = cli_hold(cJSON_CreateObject(), cli_dtor_json);
    int ok = g && cJSON_AddBoolToObject(g, "_from_model_config", 1) &&
             (bos >= 0 ? cJSON_AddNumberToObject(g, "bos_token_id", bos) : cJSON_AddNullToObject(g, "bos_token_id")) &&
             (eos >= 0 ? cJSON_AddNumberToObject(g, "eos_token_id", eos) : cJSON_AddNullToObject(g, "eos_token_id"));
    if (!ok) cli_fail(CLI_EXIT_FAIL, "out of memory");
    write_json(dir, "generation_config.json", g);
    cli_free(g);
    cJSON *t = cli_hold(cJSON_CreateObject(), cli_dtor_json);
    ok = t && cJSON_AddStringToObject(t, "tokenizer_class", "PreTrainedTokenizerFast") &&
         cJSON_AddNumberToObject(t, "model_max_length", cm->cfg.max_seq_len) &&
         (!bos_text || cJSON_AddStringToObject(t, "bos_token", bos_text)) &&
         (!eos_text || cJSON_AddStringToObject(t, "eos_token", eos_text));
    if (!ok) cli_fail(CLI_EXIT_FAIL, "out of memory");
    write_json(dir, "tokenizer_config.json", t);
    cli_free(t);
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
              "model.safetensors and generation_config.json (transformers' LlamaForCausalLM loads them),\n"
              "tokenizer.json and tokenizer_config.json (AutoTokenizer loads them; paddlec's byte and BPE\n"
              "tokenizers are converted to Hugging Face's form, a tokenizer read from a tokenizer.json is\n"
              "written back as read).",
              pos, 2, &npos);
    if (npos != 2) cli_fail(CLI_EXIT_USAGE, "expected CKPT and DIR (see --help)");
    enum pd_dtype dt = !strcmp(dtype, "f32") ? PD_F32 : !strcmp(dtype, "bf16") ? PD_BF16 : !strcmp(dtype, "f16") ? PD_F16 : PD_I8;
    if (dt == PD_I8) cli_fail(CLI_EXIT_USAGE, "--dtype %s: expected f32, bf16 or f16", cli_q(dtype));
    struct cli_model cm;
    cli_model_load(&cm, cli_run_resolve(pos[0])); /* a checkpoint, or a run directory's latest (as export) */
    if (pd_llama_save_hf(cm.model, pos[1], dt)) cli_fail_pd("cannot write %s", cli_q(pos[1]));
    char path[4200];
    cli_path_join(path, sizeof path, pos[1], "tokenizer.json");
    if (pd_tokenizer_save_hf(cm.tok, path)) cli_fail_pd("cannot write %s", cli_q(path));
    write_hf_side_files(pos[1], &cm);
    printf("%s: config.json, model.safetensors (%s, %lld parameters), generation_config.json, tokenizer.json, "
           "tokenizer_config.json\n", pos[1], dtype, (long long)pd_llama_num_params(cm.model));
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

cJSON *cli_config_canonical(const char *json, const struct cli_opt *opts, const char *what)
{
    cJSON *in = cli_hold(cJSON_Parse(json), cli_dtor_json), *out = cli_hold(cJSON_CreateObject(), cli_dtor_json);
    if (!in || !cJSON_IsObject(in)) cli_fail(CLI_EXIT_USAGE, "%s: not a JSON object", cli_q(what));
    if (!out) cli_fail(CLI_EXIT_FAIL, "out of memory");
    int hf = cJSON_HasObjectItem(in, "hidden_size");
    for (cJSON *e = in->child; e; e = e->next) {
        const char *key = e->string;
        int opt = 0;
        for (const struct cli_opt *o = opts; o->name && !opt; o++) opt = !strcmp(o->name, key);
        if (hf && !opt) continue;   /* a Hugging Face key: the library maps them below */
        for (size_t i = 0; !opt && i < sizeof aliases / sizeof *aliases; i++)
            if (!strcmp(aliases[i].alias, key)) key = aliases[i].key;
        put(out, key, cJSON_Duplicate(e, 1), what);
    }
    if (hf) {   /* the whole text: the library reads HF keys only, and no option is named like one */
        struct pd_llama_config c;
        if (pd_llama_config_from_hf(&c, json)) cli_fail_pd("%s", cli_q(what));
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
    }
    cli_free(in);
    return out;
}
