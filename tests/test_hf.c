/* paddle.c — Hugging Face Llama directories (include/pd/hf.h) against
 * PyTorch: tests/fixtures/hf/<case>/, written by transformers'
 * save_pretrained through tools/ref/hf_llama_fixture.py, with the
 * reference in expected.safetensors (float64 transformers).
 *
 * For each case (GQA; tied and untied; f32 and bf16; one sharded; one whose
 * tied file still carries lm_head.weight):
 *   - the logits of pd_llama_from_hf's model match within TOL (relative to
 *     the largest logit);
 *   - greedy decoding (pd_generate, KV cache) gives PyTorch's 16 tokens;
 *   - 5 AdamW steps (pd_optimizer_create_for, targets with -100) give
 *     PyTorch's 5 losses within TOL;
 *   - pd_llama_save_hf in the file's dtype writes every tensor bit for bit
 *     as the fixture has it, and a config that reads back equal.
 * Then: the -100 ignore index equals -1 in pd_llama_loss, f16 export and
 * reload, config.json mapping (transformers 4 and 5 forms, defaults), and
 * the refusals (scaled RoPE, other activations, biases, missing or
 * unexpected tensors, shard names outside the directory, no weights).
 *
 *   test_hf [-v]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pt.h"

#define TOL 1e-4

static int verbose;
static char fixtures[4096];

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        pt_checks++;                                                                                                   \
        if (!(cond)) {                                                                                                 \
            pt_fails++;                                                                                                \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                                \
            printf(__VA_ARGS__);                                                                                       \
            printf(" [%s]\n", pd_last_error());                                                                        \
        }                                                                                                              \
    } while (0)

static double *as_f64(struct pd_tensor *t)
{
    int64_t n = pd_tensor_numel(t);
    double *b = malloc(sizeof *b * (size_t)(n ? n : 1));
    if (b && pd_to_buffer(t, b, PD_F64)) {
        free(b);
        return NULL;
    }
    return b;
}

/* max|got - want| / max(max|want|, 1e-30); +inf on a size mismatch. */
static double rel_err(struct pd_tensor *got, struct pd_tensor *want)
{
    if (!got || !want || pd_tensor_numel(got) != pd_tensor_numel(want)) return INFINITY;
    int64_t n = pd_tensor_numel(got);
    double *a = as_f64(got), *b = as_f64(want), num = 0, den = 1e-30;
    for (int64_t i = 0; a && b && i < n; i++) {
        num = fmax(num, fabs(a[i] - b[i]));
        den = fmax(den, fabs(b[i]));
    }
    double r = a && b ? num / den : INFINITY;
    free(a), free(b);
    return r;
}

static void case_path(char *buf, size_t n, const char *c, const char *file)
{
    snprintf(buf, n, "%s/%s%s%s", fixtures, c, file ? "/" : "", file ? file : "");
}

static void check_logits(struct pd_llama *m, struct pd_state_dict *ex, const char *c)
{
    int tok = pd_scope_begin(), mode = pd_no_grad_begin();
    pd_llama_train(m, 0);
    struct pd_tensor *logits = pd_llama_forward(m, pd_state_dict_get(ex, "ids"), NULL, NULL);
    double e = rel_err(logits, pd_state_dict_get(ex, "logits"));
    CHECK(e <= TOL, "%s: logits rel. error %.3g > %g", c, e, TOL);
    if (verbose) printf("  %s: logits rel. error %.3g\n", c, e);
    pd_grad_mode_end(mode);
    pd_scope_end(tok);
}

static void check_greedy(struct pd_llama *m, struct pd_state_dict *ex, const char *c)
{
    int64_t prompt[64], want[64];
    struct pd_tensor *p = pd_state_dict_get(ex, "greedy_prompt"), *w = pd_state_dict_get(ex, "greedy");
    int np = (int)pd_tensor_numel(p), nw = (int)pd_tensor_numel(w);
    CHECK(np <= 64 && nw <= 64 && !pd_to_buffer(p, prompt, PD_I64) && !pd_to_buffer(w, want, PD_I64), "%s: greedy", c);
    struct pd_generate_config gc;
    pd_generate_config_default(&gc);
    gc.max_new_tokens = nw;
    const int64_t *pp = prompt;
    struct pd_generation *g = pd_generate(m, &pp, &np, 1, &gc, NULL);
    CHECK(g && pd_generation_len(g, 0) == nw, "%s: greedy generation", c);
    if (g && pd_generation_len(g, 0) == nw) {
        const int64_t *got = pd_generation_tokens(g, 0);
        int same = !memcmp(got, want, sizeof *want * (size_t)nw);
        CHECK(same, "%s: greedy tokens differ from PyTorch's", c);
        if (!same || verbose) {
            printf("  %s: greedy", c);
            for (int i = 0; i < nw; i++) printf(" %lld/%lld", (long long)got[i], (long long)want[i]);
            printf("\n");
        }
    }
    pd_generation_destroy(g);
}

static void check_finetune(const char *dir, struct pd_state_dict *ex, const char *c)
{
    struct pd_llama *m = pd_llama_from_hf(dir);
    const char *aj = pd_state_dict_get_meta(ex, "adamw");
    struct pd_optim_config oc;
    int steps = pt_adamw_config(aj, &oc);
    struct pd_optimizer *opt = m ? pd_optimizer_create_for(&oc, pd_llama_state_dict(m)) : NULL;
    CHECK(opt && steps == 5, "%s: fine-tune setup", c);
    double got[8] = {0};
    pd_llama_train(m, 1);
    for (int s = 0; opt && s < steps; s++) {
        int tok = pd_scope_begin();
        struct pd_tensor *l = pd_llama_loss(m, pd_state_dict_get(ex, "ft_ids"), pd_state_dict_get(ex, "ft_targets"));
        CHECK(l && !pd_backward(l, NULL, 0) && !pd_optimizer_step(opt), "%s: fine-tune step %d", c, s);
        got[s] = l ? pd_item(l) : NAN;
        pd_optimizer_zero_grad(opt);
        pd_scope_end(tok);
    }
    double want[8] = {0};
    CHECK(!pd_to_buffer(pd_state_dict_get(ex, "ft_losses"), want, PD_F64), "%s: ft_losses", c);
    for (int s = 0; s < steps; s++) {
        double e = fabs(got[s] - want[s]) / fabs(want[s]);
        CHECK(e <= TOL, "%s: fine-tune loss %d: %.7f, PyTorch %.7f (rel. %.3g)", c, s, got[s], want[s], e);
        if (verbose) printf("  %s: loss %d %.7f / %.7f\n", c, s, got[s], want[s]);
    }
    pd_optimizer_destroy(opt);
    pd_llama_destroy(m);
}

/* Every tensor of the fixture's files (all shards) by name, except a tied
 * file's lm_head.weight. */
static struct pd_state_dict *fixture_tensors(const char *c, int tied)
{
    static const char *const files[] = {"model.safetensors", "model-00001-of-00003.safetensors",
                                        "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"};
    struct pd_state_dict *all = pd_state_dict_create();
    char path[4200];
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        case_path(path, sizeof path, c, files[f]);
        if (access(path, R_OK)) continue;
        struct pd_state_dict *sd = pd_safetensors_load(path);
        for (int i = 0; sd && i < pd_state_dict_size(sd); i++)
            if (!(tied && !strcmp(pd_state_dict_name(sd, i), "lm_head.weight")))
                pd_state_dict_add(all, pd_state_dict_name(sd, i), pd_state_dict_tensor(sd, i));
        pd_state_dict_destroy(sd);
    }
    return all;
}

/* Field by field (memcmp would compare the padding too). */
static int same_config(const struct pd_llama_config *a, const struct pd_llama_config *b)
{
    return a->vocab_size == b->vocab_size && a->dim == b->dim && a->n_layers == b->n_layers &&
           a->n_heads == b->n_heads && a->n_kv_heads == b->n_kv_heads && a->hidden_dim == b->hidden_dim &&
           a->max_seq_len == b->max_seq_len && a->norm_eps == b->norm_eps && a->rope_theta == b->rope_theta &&
           a->tie_embeddings == b->tie_embeddings && a->dropout == b->dropout && a->init_std == b->init_std;
}

static void check_roundtrip(struct pd_llama *m, const char *c, const char *tmp)
{
    const struct pd_llama_config *cfg = pd_llama_get_config(m);
    struct pd_state_dict *orig = fixture_tensors(c, cfg->tie_embeddings);
    enum pd_dtype dt = pd_tensor_dtype(pd_state_dict_tensor(orig, 0));
    char out[4200], path[4300];
    snprintf(out, sizeof out, "%s/%s", tmp, c);
    CHECK(!pd_llama_save_hf(m, out, dt), "%s: save_hf", c);
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    struct pd_state_dict *back = pd_safetensors_load(path);
    CHECK(back && pd_state_dict_size(back) == pd_state_dict_size(orig), "%s: exported tensors %d, fixture %d", c,
          back ? pd_state_dict_size(back) : -1, pd_state_dict_size(orig));
    for (int i = 0; back && i < pd_state_dict_size(orig); i++) {
        const char *name = pd_state_dict_name(orig, i);
        struct pd_tensor *a = pd_state_dict_tensor(orig, i), *b = pd_state_dict_get(back, name);
        CHECK(b && pd_tensor_dtype(b) == dt && rel_err(b, a) == 0, "%s: %s differs after export", c, name);
    }
    snprintf(path, sizeof path, "%s/config.json", out);
    char *text = pd_file_read(path, 1 << 20, NULL);
    struct pd_llama_config c2;
    CHECK(text && !pd_llama_config_from_hf(&c2, text) && same_config(&c2, cfg), "%s: config round trip", c);
    free(text);
    struct pd_llama *m2 = pd_llama_from_hf(out);
    CHECK(m2 != NULL, "%s: reload of the export", c);
    pd_llama_destroy(m2);
    pd_state_dict_destroy(back);
    pd_state_dict_destroy(orig);
}

static void run_case(const char *c, const char *tmp)
{
    char dir[4200], path[4300];
    case_path(dir, sizeof dir, c, NULL);
    snprintf(path, sizeof path, "%s/expected.safetensors", dir);
    struct pd_state_dict *ex = pd_safetensors_load(path);
    struct pd_llama *m = pd_llama_from_hf(dir);
    CHECK(ex && m, "%s: cannot load (regenerate: /work/venv/bin/python tools/ref/hf_llama_fixture.py tests/fixtures/hf)",
          c);
    if (ex && m) {
        check_logits(m, ex, c);
        check_greedy(m, ex, c);
        check_roundtrip(m, c, tmp);
        check_finetune(dir, ex, c);
    }
    pd_llama_destroy(m);
    pd_state_dict_destroy(ex);
}

/* -100 and -1 are both ignored (HF's ignore index; before, -100 was an
 * out-of-range class). */
static void check_ignore_index(void)
{
    char dir[4200];
    case_path(dir, sizeof dir, "untied-f32", NULL);
    struct pd_llama *m = pd_llama_from_hf(dir);
    int tok = pd_scope_begin();
    int64_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8}, t1[8] = {2, -1, 4, -1, 6, 7, -1, 9}, t2[8] = {2, -100, 4, -100, 6, 7, -1, 9};
    struct pd_tensor *x = pd_from_buffer(ids, (int64_t[]){2, 4}, 2, PD_I64);
    struct pd_tensor *y1 = pd_from_buffer(t1, (int64_t[]){2, 4}, 2, PD_I64), *y2 = pd_from_buffer(t2, (int64_t[]){2, 4}, 2, PD_I64);
    struct pd_tensor *l1 = pd_llama_loss(m, x, y1), *l2 = pd_llama_loss(m, x, y2);
    CHECK(l1 && l2 && pd_item(l1) == pd_item(l2), "ignore index: loss with -100 %g, with -1 %g", l2 ? pd_item(l2) : NAN,
          l1 ? pd_item(l1) : NAN);
    pd_scope_end(tok);
    pd_llama_destroy(m);
}

/* f16 export: the file holds F16 and the reloaded model's logits stay close. */
static void check_f16(const char *tmp)
{
    char dir[4200], out[4200], path[4300];
    case_path(dir, sizeof dir, "untied-f32", NULL);
    snprintf(out, sizeof out, "%s/f16", tmp);
    struct pd_llama *m = pd_llama_from_hf(dir);
    CHECK(m && !pd_llama_save_hf(m, out, PD_F16), "f16 export");
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    struct pd_safetensors_info *info = pd_safetensors_info(path);
    CHECK(info && info->n_tensors > 0 && info->tensors[0].dtype == PD_F16, "f16 export dtype");
    pd_safetensors_info_destroy(info);
    struct pd_llama *h = pd_llama_from_hf(out);
    int tok = pd_scope_begin();
    int64_t ids[6] = {3, 1, 4, 1, 5, 9};
    struct pd_tensor *x = pd_from_buffer(ids, (int64_t[]){1, 6}, 2, PD_I64);
    double e = h && m ? rel_err(pd_llama_forward(h, x, NULL, NULL), pd_llama_forward(m, x, NULL, NULL)) : INFINITY;
    CHECK(e < 1e-2, "f16 reload: logits rel. error %.3g", e);
    pd_scope_end(tok);
    CHECK(pd_llama_save_hf(m, out, PD_I32) == PD_ERR_INVALID, "save_hf refuses i32");
    pd_llama_destroy(h);
    pd_llama_destroy(m);
}

static void check_config(void)
{
    struct pd_llama_config c;
    /* transformers 4 form: top-level rope_theta, rope_scaling null, no kv heads */
    const char *v4 = "{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\",\"vocab_size\":100,"
                     "\"hidden_size\":64,\"intermediate_size\":96,\"num_hidden_layers\":3,\"num_attention_heads\":8,"
                     "\"rope_theta\":123.5,\"rope_scaling\":null,\"torch_dtype\":\"bfloat16\",\"bos_token_id\":1,"
                     "\"hidden_act\":\"silu\",\"pretraining_tp\":1,\"use_cache\":true}";
    CHECK(!pd_llama_config_from_hf(&c, v4), "v4 config");
    CHECK(c.vocab_size == 100 && c.dim == 64 && c.hidden_dim == 96 && c.n_layers == 3 && c.n_heads == 8 &&
              c.n_kv_heads == 8 && c.rope_theta == 123.5 && c.norm_eps == 1e-6 && c.max_seq_len == 2048 &&
              !c.tie_embeddings && c.dropout == 0,
          "v4 config values");
    const char *v5 = "{\"vocab_size\":100,\"hidden_size\":64,\"intermediate_size\":96,\"num_hidden_layers\":1,"
                     "\"num_attention_heads\":8,\"num_key_value_heads\":2,\"rope_parameters\":{\"rope_theta\":5e5,"
                     "\"rope_type\":\"default\"},\"tie_word_embeddings\":true,\"rms_norm_eps\":1e-5}";
    CHECK(!pd_llama_config_from_hf(&c, v5) && c.rope_theta == 5e5 && c.n_kv_heads == 2 && c.tie_embeddings &&
              c.norm_eps == 1e-5,
          "v5 config");
    static const struct { const char *extra, *word; int status; } bad[] = {
        {"\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8.0}", "rope_scaling", PD_ERR_UNSUPPORTED},
        {"\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":1e4}", "rope_parameters", PD_ERR_UNSUPPORTED},
        {"\"rope_scaling\":{\"type\":\"linear\",\"factor\":2.0}", "linear", PD_ERR_UNSUPPORTED},
        {"\"hidden_act\":\"gelu\"", "hidden_act", PD_ERR_UNSUPPORTED},
        {"\"attention_bias\":true", "attention_bias", PD_ERR_UNSUPPORTED},
        {"\"model_type\":\"mistral\"", "model_type", PD_ERR_UNSUPPORTED},
        {"\"head_dim\":16", "head_dim", PD_ERR_UNSUPPORTED},
        {"\"sliding_window\":4096", "sliding_window", PD_ERR_UNSUPPORTED},
        {"\"num_key_value_heads\":3", "n_kv_heads", PD_ERR_INVALID},
        {"\"rms_norm_eps\":\"small\"", "rms_norm_eps", PD_ERR_INVALID},
        {"\"vocab_size\":1.5", "vocab_size", PD_ERR_INVALID},
    };
    char json[512];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(json, sizeof json,
                 "{\"hidden_size\":64,\"intermediate_size\":96,\"num_hidden_layers\":1,\"num_attention_heads\":8,%s%s}",
                 bad[i].extra, strstr(bad[i].extra, "vocab_size") ? "" : ",\"vocab_size\":100");
        int st = pd_llama_config_from_hf(&c, json);
        CHECK(st == bad[i].status && strstr(pd_last_error(), bad[i].word) && !strchr(pd_last_error(), '\n'),
              "bad config %zu: status %d", i, st);
    }
    CHECK(pd_llama_config_from_hf(&c, "{\"vocab_size\":10}") == PD_ERR_INVALID &&
              strstr(pd_last_error(), "hidden_size is missing"),
          "missing key");
    CHECK(pd_llama_config_from_hf(&c, "[1,") == PD_ERR_INVALID, "bad JSON");
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) fputs(text, f), fclose(f);
}

/* Directories that are not loadable, each refused with one line. */
static void check_refusals(const char *tmp)
{
    char dir[4200], path[4300], src[4300];
    struct pd_llama *m;
    snprintf(dir, sizeof dir, "%s/bad", tmp);
    mkdir(dir, 0777);
    CHECK(!pd_llama_from_hf(dir) && strstr(pd_last_error(), "config.json"), "no config.json");
    /* the untied fixture's config with the tied fixture's weights: lm_head missing */
    case_path(src, sizeof src, "untied-f32", NULL);
    m = pd_llama_from_hf(src);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *cfg = pd_llama_config_to_hf(pd_llama_get_config(m), PD_F32);
    write_text(path, cfg);
    free(cfg);
    CHECK(!pd_llama_from_hf(dir) && strstr(pd_last_error(), "neither model.safetensors"), "no weights");
    struct pd_state_dict *sd = pd_state_dict_create(), *p = pd_llama_state_dict(m);
    for (int i = 0; i < pd_state_dict_size(p); i++)
        if (strcmp(pd_state_dict_name(p, i), "lm_head.weight"))
            pd_state_dict_add(sd, pd_state_dict_name(p, i), pd_state_dict_tensor(p, i));
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    pd_safetensors_save(path, sd);
    CHECK(!pd_llama_from_hf(dir) && strstr(pd_last_error(), "lacks the tensor lm_head.weight"), "missing lm_head");
    pd_state_dict_add(sd, "lm_head.weight", pd_state_dict_get(p, "lm_head.weight"));
    pd_state_dict_add(sd, "model.layers.9.mlp.up_proj.weight", pd_state_dict_get(p, "model.norm.weight"));
    pd_safetensors_save(path, sd);
    CHECK(!pd_llama_from_hf(dir) && strstr(pd_last_error(), "unexpected tensor"), "unexpected tensor");
    pd_state_dict_remove(sd, "model.layers.9.mlp.up_proj.weight");
    pd_state_dict_add(sd, "model.layers.0.self_attn.rotary_emb.inv_freq", pd_state_dict_get(p, "model.norm.weight"));
    pd_safetensors_save(path, sd);
    struct pd_llama *ok = pd_llama_from_hf(dir);
    CHECK(ok != NULL, "inv_freq buffers are ignored");
    pd_llama_destroy(ok);
    /* a shard name that leaves the directory */
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_text(path, "{\"weight_map\":{\"model.norm.weight\":\"../model.safetensors\"}}");
    CHECK(!pd_llama_from_hf(dir) && strstr(pd_last_error(), "plain file name"), "shard outside the directory");
    CHECK(pd_llama_save_hf(m, dir, PD_F32) && strstr(pd_last_error(), "sharded"), "save over a sharded directory");
    write_text(path, "{\"weight_map\":{\"model.norm.weight\":\"missing.safetensors\"}}");
    CHECK(!pd_llama_from_hf(dir) && strstr(pd_last_error(), "missing.safetensors"), "missing shard");
    pd_state_dict_destroy(sd);
    pd_llama_destroy(m);
}

int main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    snprintf(fixtures, sizeof fixtures, "%s", __FILE__);
    char *slash = strrchr(fixtures, '/');
    snprintf(slash ? slash + 1 : fixtures, sizeof fixtures - (size_t)(slash ? slash + 1 - fixtures : 0), "fixtures/hf");
    char tmp[] = "/tmp/test_hf.XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    static const char *const cases[] = {"untied-f32", "untied-bf16-sharded", "tied-f32", "tied-bf16"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(cases[i], tmp);
    check_ignore_index();
    check_f16(tmp);
    check_config();
    check_refusals(tmp);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) printf("note: cannot remove %s\n", tmp);
    printf("test_hf: %s (%d of %d checks failed)\n", pt_fails ? "FAILED" : "passed", pt_fails, pt_checks);
    return pt_fails != 0;
}
