/* paddle.c — paddlec subcommands other than train: generate, eval, inspect,
 * bench and tokenizer.
 *
 * Each reads its options, checks them, does its work and returns 0; any
 * problem exits through cli_fail with one line. Everything a command owns is
 * held (cli_hold) from its creation, so that every exit frees it. These commands only read
 * files given to them (tokenizer train writes its --out atomically through
 * a temporary file of the data library's saver).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "gen.h"

/* "\n" and "\t" escapes, so a shell user can pass a newline. */
static char *unescape(const char *s)
{
    char *o = malloc(strlen(s) + 1), *p = o;
    if (!o) cli_fail(CLI_EXIT_FAIL, "out of memory");
    for (; *s; s++) {
        if (s[0] == '\\' && (s[1] == 'n' || s[1] == 't' || s[1] == '\\')) {
            *p++ = s[1] == 'n' ? '\n' : s[1] == 't' ? '\t' : '\\';
            s++;
        } else {
            *p++ = *s;
        }
    }
    *p = 0;
    return o;
}

int cmd_generate(int argc, char **argv)
{
    const char *ckpt = NULL, *prompt = NULL, *stop = NULL, *prompt_file = NULL, *hf = NULL;
    int max_new = 64, top_k = 0, no_cache = 0, ctx = 0, interactive = 0;
    double temperature = 0, top_p = 1;
    int64_t seed = 0;
    struct cli_opt opts[] = {
        {"ckpt", CLI_STR, &ckpt, 0, 0, "checkpoint written by `paddlec train` (or --hf)", 0},
        {"hf", CLI_STR, &hf, 0, 0, "Hugging Face Llama directory (config.json, model.safetensors, tokenizer.json)", 0},
        {"prompt", CLI_STR, &prompt, 0, 0, "text to continue (\\n and \\t escapes; - reads standard input)", 0},
        {"max-new", CLI_INT, &max_new, 0, 1 << 20, "tokens to generate at most (capped by the context limit)", 0},
        {"temperature", CLI_DOUBLE, &temperature, 0, 100, "0: greedy; > 0: sample from softmax(logits / T)", 0},
        {"top-k", CLI_INT, &top_k, 0, 1 << 20, "sample among the k most likely tokens (0: all)", 0},
        {"top-p", CLI_DOUBLE, &top_p, 1e-9, 1, "nucleus: the smallest set with this much probability", 0},
        {"seed", CLI_I64, &seed, 0, 9e15, "sampling seed", 0},
        {"stop", CLI_STR, &stop, 0, 0, "stop once the continuation contains this text (any length; \\n escapes)", 0},
        {"no-cache", CLI_FLAG, &no_cache, 0, 1, "recompute the full forward per token (slow; a check)", 0},
        /* generation options of issue 13 (gen.c) */
        {"prompt-file", CLI_STR, &prompt_file, 0, 0, "read the prompt from this file (as is, no escapes)", 0},
        {"ctx", CLI_INT, &ctx, 0, 1 << 24, "context limit in tokens (0: the model's max_seq_len; more: warns)", 0},
        {"interactive", CLI_FLAG, &interactive, 0, 1, "-i: read lines from standard input, continue each (KV cache kept)", 0},
        {0, 0, 0, 0, 0, 0, 0},
    };
    const char *pos[1];
    int npos;
    cli_short_option(argc, argv, opts, "-i", "--interactive");
    cli_parse(argc, argv, opts, "generate --ckpt PATH (--prompt TEXT | --prompt-file FILE | -i) [options]",
              "Continue a prompt with a trained model (KV-cache decoding; greedy unless --temperature > 0).\n"
              "Prints the prompt and its continuation to stdout. With -i (--interactive), reads lines from\n"
              "standard input until EOF and prints each one's continuation (--prompt goes before the first).",
              pos, 0, &npos);
    if (!ckpt == !hf) cli_fail(CLI_EXIT_USAGE, "one of --ckpt and --hf is required (see --help)");
    if (!prompt && !prompt_file && !interactive)
        cli_fail(CLI_EXIT_USAGE, "--prompt, --prompt-file or --interactive is required (see --help)");
    if (interactive && prompt && !strcmp(prompt, "-"))
        cli_fail(CLI_EXIT_USAGE, "--prompt - and --interactive both read standard input");
    char *text = gen_prompt_text(prompt && strcmp(prompt, "-") ? cli_hold(unescape(prompt), free) : prompt, prompt_file);
    struct cli_model cm;
    if (hf) cli_model_load_hf(&cm, hf);
    else cli_model_load(&cm, ckpt);
    struct gen_run r = {.cm = &cm, .text = text, .max_new = max_new, .max_new_given = cli_find(opts, "max-new")->seen,
                        .ctx = ctx};
    pd_generate_config_default(&r.gc);
    if (stop) r.stop = cli_hold(unescape(stop), free);
    r.gc.temperature = temperature;
    r.gc.top_k = top_k;
    r.gc.top_p = top_p;
    r.gc.use_cache = !no_cache;
    r.rng = cli_hold(pd_generator_create((uint64_t)seed), cli_dtor_generator);
    if (!r.rng) cli_fail_pd("cannot create the generator");
    int rc = interactive ? gen_interactive(&r) : gen_once(&r);
    cli_free_all();   /* what gen_* made, the generator, the model, the texts */
    return rc;
}

/* A field of the recipe JSON stored in a checkpoint. */
static double recipe_num(cJSON *j, const char *key, double dflt)
{
    cJSON *e = cJSON_GetObjectItemCaseSensitive(j, key);
    if (cJSON_IsNumber(e)) return e->valuedouble;
    if (cJSON_IsString(e)) return atof(e->valuestring);
    if (cJSON_IsBool(e)) return cJSON_IsTrue(e);
    return dflt;
}

int cmd_eval(int argc, char **argv)
{
    const char *ckpt = NULL, *data = NULL, *hf = NULL;
    int batches = 50, task_n = 500, batch = 0, seq_len = 0;
    struct cli_opt opts[] = {
        {"ckpt", CLI_STR, &ckpt, 0, 0, "model or checkpoint written by `paddlec train` (or --hf)", 0},
        {"hf", CLI_STR, &hf, 0, 0, "Hugging Face Llama directory (needs --data)", 0},
        {"data", CLI_STR, &data, 0, 0, "text file whose held-out documents to evaluate on (default: the run's validation data)", 0},
        {"batches", CLI_INT, &batches, 1, 1 << 30, "validation batches at most", 0},
        {"batch", CLI_INT, &batch, 0, 1 << 20, "sequences per batch (0: the training batch)", 0},
        {"seq-len", CLI_INT, &seq_len, 0, 1 << 20, "window length (0: the model's max_seq_len, at most 1024 with --hf)", 0},
        {"task-n", CLI_INT, &task_n, 0, 100000, "held-out arithmetic problems to score (built-in data)", 0},
        {0, 0, 0, 0, 0, 0, 0},
    };
    const char *pos[1];
    int npos;
    cli_parse(argc, argv, opts, "eval --ckpt PATH [options]",
              "Validation loss, perplexity and bits per byte of a model or checkpoint on the validation split\n"
              "of its data (or of --data), and, for the built-in data set, the held-out task accuracy.",
              pos, 0, &npos);
    if (!ckpt == !hf) cli_fail(CLI_EXIT_USAGE, "one of --ckpt and --hf is required (see --help)");
    if (hf && !data) cli_fail(CLI_EXIT_USAGE, "--hf needs --data (a text file to evaluate on)");
    struct cli_model cm;
    if (hf) cli_model_load_hf(&cm, hf);
    else cli_model_load(&cm, ckpt);
    /* every recipe value of its option's type and range, as `train --resume`
     * checks it, before any is cast (digits 1e300; docs/reliability.md) */
    if (cm.train_json) cli_recipe_check(cm.train_json, ckpt);
    cJSON *rj = cli_hold(cm.train_json ? cJSON_Parse(cm.train_json) : cJSON_CreateObject(), cli_dtor_json);
    if (!rj) cli_fail(CLI_EXIT_FAIL, "%s: malformed paddlec.recipe metadata", cli_q(ckpt));
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(rj, "data"), *vd = cJSON_GetObjectItemCaseSensitive(rj, "val-data");
    const char *val_data = !data && cJSON_IsString(vd) ? vd->valuestring : NULL;   /* the run's own validation file */
    if (!data && cJSON_IsString(d)) data = d->valuestring;
    struct pd_arith_config ac;
    pd_arith_config_default(&ac);
    ac.max_digits = (int)recipe_num(rj, "digits", ac.max_digits);
    ac.heldout_per_mille = (int)recipe_num(rj, "heldout", ac.heldout_per_mille);
    double vf = recipe_num(rj, "val-fraction", 0.05);
    uint64_t seed = (uint64_t)recipe_num(rj, "seed", 1);
    int seq = seq_len ? seq_len : hf && cm.cfg.max_seq_len > 1024 ? 1024 : cm.cfg.max_seq_len;
    if (seq > cm.cfg.max_seq_len) cli_fail(CLI_EXIT_USAGE, "--seq-len %d exceeds the model's max_seq_len %d", seq, cm.cfg.max_seq_len);
    if (!batch) batch = (int)recipe_num(rj, "batch", 16);
    /* the split train made: --val-data, or the same documents held out (same seed) */
    struct pd_text_dataset *ds =
        data ? cli_text_dataset(data, val_data, cm.tok, vf, seed)
             : cli_hold(pd_text_dataset_builtin(seed, (int64_t)recipe_num(rj, "lines", 200000), &ac, cm.tok, vf),
                        cli_dtor_dataset);
    if (!ds) cli_fail_pd("cannot load the evaluation data");
    int answer_only = !data && recipe_num(rj, "answer-loss", 0) != 0;
    /* a model trained on packed documents is validated the same way */
    struct cli_packer pack = {0};
    int packed = recipe_num(rj, "pack-documents", 0) != 0;
    if (packed) cli_packer_init(&pack, cm.tok, data != NULL);
    if (!data) /* before anything is printed: the held-out problems fit the model (targets.c) */
        cli_task_check(cm.tok, &ac, cm.cfg.max_seq_len, task_n, seed + 2, 0);
    struct cli_val v;
    if (cli_validate(cm.model, ds, cm.tok, batch, seq, batches, answer_only, packed ? &pack : NULL, &v))
        cli_fail_pd("validation failed");
    cli_packer_free(&pack);
    if (!v.tokens) /* short windows of the built-in task (targets.c): nothing was scored */
        cli_fail(CLI_EXIT_USAGE,
                 "no validation batch holds an answer target (windows of %d tokens can miss every '='): raise --seq-len "
                 "or --batches",
                 seq);
    double vl = v.loss;
    printf("step %lld\nval loss %.4f%s\nval perplexity %.3f\nval bits per byte %.4f (%lld tokens, %lld bytes)\n",
           (long long)cm.step, vl, answer_only ? " (answer tokens)" : "", exp(vl), v.bpb, (long long)v.tokens,
           (long long)v.bytes);
    if (!data && task_n > 0) {
        char *sample = NULL;
        double acc = cli_task_accuracy(cm.model, cm.tok, &ac, task_n, seed + 2, 128, &sample);
        printf("held-out accuracy %.2f%% (%d problems)\nsample: %s\n", 100 * acc, task_n, sample);
        cli_free(sample);
    }
    cli_free_all();   /* ds, rj, the model */
    return 0;
}

int cmd_inspect(int argc, char **argv)
{
    int full = 0, no_stats = 0;
    struct cli_opt opts[] = {
        {"full", CLI_FLAG, &full, 0, 1, "print long metadata values in full (default: first 120 bytes)", 0},
        {"no-stats", CLI_FLAG, &no_stats, 0, 1, "list the header only (no min/max/mean/std)", 0},
        {0, 0, 0, 0, 0, 0, 0},
    };
    const char *pos[1];
    int npos;
    cli_parse(argc, argv, opts, "inspect FILE.safetensors [options]",
              "List a safetensors file: each tensor's name, dtype, shape and min/max/mean/std (over finite\n"
              "values; NaN/Inf counted), then the metadata.",
              pos, 1, &npos);
    if (npos != 1) cli_fail(CLI_EXIT_USAGE, "expected one FILE (see --help)");
    struct pd_safetensors_info *info = cli_hold(pd_safetensors_info(pos[0]), cli_dtor_st_info);
    if (!info) cli_fail_pd("cannot read");
    struct pd_state_dict *sd = cli_hold(no_stats ? NULL : pd_safetensors_load(pos[0]), cli_dtor_state_dict);
    if (!no_stats && !sd) cli_fail_pd("cannot read");
    int64_t total = 0;
    printf("%s: %d tensors, header %llu bytes, file %llu bytes\n", pos[0], info->n_tensors,
           (unsigned long long)info->header_len, (unsigned long long)info->file_size);
    for (int i = 0; i < info->n_tensors; i++) {
        const struct pd_safetensors_entry *e = &info->tensors[i];
        char shape[128];
        int k = snprintf(shape, sizeof shape, "[");
        int64_t numel = 1;
        for (int d = 0; d < e->ndim; d++) {
            k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%lld", d ? ", " : "", (long long)e->shape[d]);
            numel *= e->shape[d];
            if (k >= (int)sizeof shape - 24) break;
        }
        snprintf(shape + k, sizeof shape - (size_t)k, "]");
        total += numel;
        printf("%-48s %-5s %-18s", e->name, pd_safetensors_dtype_name(e->dtype), shape);
        if (sd) {
            struct pd_tensor_stats st;
            if (pd_tensor_stats(pd_state_dict_get(sd, e->name), &st)) cli_fail_pd("stats of %s", cli_q(e->name));
            printf(" min %.6g max %.6g mean %.6g std %.6g", st.min, st.max, st.mean, st.std);
            if (st.n_nan || st.n_inf) printf(" nan %lld inf %lld", (long long)st.n_nan, (long long)st.n_inf);
        }
        printf("\n");
    }
    printf("total %lld elements\n", (long long)total);
    if (info->n_meta) printf("metadata:\n");
    for (int i = 0; i < info->n_meta; i++) {
        const char *v = info->meta_values[i];
        int n = (int)strlen(v), cut = !full && n > 120;
        printf("  %s = %.*s%s\n", info->meta_keys[i], cut ? 120 : n, v, cut ? "..." : "");
    }
    cli_free_all();   /* sd, info */
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int cmd_bench(int argc, char **argv)
{
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    const char *config = NULL;
    int batch = 8, seq = 0, steps = 5, decode = 64, bf16 = 0;
    struct cli_opt opts[] = {
        {"config", CLI_STR, &config, 0, 0, "config JSON, train --config's schema (default: pd_llama_config_default)", 0},
        {"batch", CLI_INT, &batch, 1, 1 << 20, "sequences per training step", 0},
        {"seq-len", CLI_INT, &seq, 0, 1 << 20, "training sequence length (0: the model's max_seq_len)", 0},
        {"steps", CLI_INT, &steps, 1, 1 << 20, "timed training steps (after one warm-up step)", 0},
        {"decode", CLI_INT, &decode, 1, 1 << 20, "tokens to decode with the KV cache (capped by max_seq_len)", 0},
        {0, 0, 0, 0, 0, 0, 0},
    };
    (void)bf16;
    const char *pos[1];
    int npos;
    cli_parse(argc, argv, opts, "bench [options]",
              "Time a training step (forward + backward, f32) and KV-cache decoding of a model config.\n"
              "Prints one JSON line per measurement (medians).",
              pos, 0, &npos);
    if (config) {   /* the batch of the file unless --batch is given */
        int fb = batch;
        cli_config_model(config, &c, &fb);
        if (!cli_find(opts, "batch")->seen) batch = fb;
    }
    if (!seq) seq = c.max_seq_len;
    if (seq > c.max_seq_len) cli_fail(CLI_EXIT_USAGE, "--seq-len %d exceeds the config's max_seq_len %d", seq, c.max_seq_len);
    if (pd_llama_config_validate(&c)) cli_fail_pd("bad model config");
    struct pd_llama *m = cli_hold(pd_llama_create(&c, 1), cli_dtor_llama);
    if (!m) cli_fail_pd("cannot build the model");
    struct pd_generator *g = cli_hold(pd_generator_create(3), cli_dtor_generator);
    double *t = cli_hold(malloc(sizeof *t * (size_t)(steps + 1)), free);
    if (!g || !t) cli_fail(CLI_EXIT_FAIL, "out of memory");
    pd_llama_train(m, 1);
    for (int s = 0; s <= steps; s++) {
        int scope_tok = cli_scope_begin();
        struct pd_tensor *x = pd_randint((int64_t[]){batch, seq}, 2, 0, c.vocab_size, PD_I64, g);
        struct pd_tensor *y = pd_randint((int64_t[]){batch, seq}, 2, 0, c.vocab_size, PD_I64, g);
        double t0 = cli_now();
        struct pd_tensor *l = pd_llama_loss(m, x, y);
        if (!l || pd_backward(l, NULL, 0)) cli_fail_pd("training step failed");
        t[s] = cli_now() - t0;
        struct pd_state_dict *p = pd_llama_state_dict(m);
        for (int i = 0; i < pd_state_dict_size(p); i++) pd_tensor_zero_grad(pd_state_dict_tensor(p, i));
        cli_scope_end(scope_tok);
    }
    qsort(t + 1, (size_t)steps, sizeof *t, cmp_double);
    double med = t[1 + steps / 2];
    char tj[96];
    printf(
        "{\"bench\":\"train_step\",\"params\":%lld,\"batch\":%d,\"seq_len\":%d,\"seconds\":%.6f,\"tokens_per_s\":%.1f,"
        "\"gflops\":%.2f,\"dtype\":\"f32\",%s}\n",
        (long long)pd_llama_num_params(m), batch, seq, med, batch * seq / med,
        pd_llama_flops_per_token(&c, seq) * batch * seq / med * 1e-9, cli_threads_json(tj, sizeof tj));
    if (decode > c.max_seq_len - 1) decode = c.max_seq_len - 1;
    struct pd_generate_config gc;
    pd_generate_config_default(&gc);
    gc.max_new_tokens = decode;
    int64_t p0 = 1;
    const int64_t *pp = &p0;
    int one = 1;
    double t0 = cli_now();
    struct pd_generation *out = cli_hold(pd_generate(m, &pp, &one, 1, &gc, NULL), cli_dtor_generation);
    double dt = cli_now() - t0;
    if (!out) cli_fail_pd("decoding failed");
    printf("{\"bench\":\"decode\",\"batch\":1,\"tokens\":%d,\"seconds\":%.6f,\"tokens_per_s\":%.1f,"
           "\"dtype\":\"f32\",%s}\n",
           pd_generation_len(out, 0), dt, pd_generation_len(out, 0) / dt, tj);
    cli_free_all();   /* out, t, g, m */
    return 0;
}

int cmd_tokenizer(int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "train")) {
        if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
            printf("usage: paddlec tokenizer train --input FILE --vocab N --out FILE.json\n\n"
                   "Tokenizer tools. Subcommands:\n  train   learn a byte-level BPE from a text file\n");
            return 0;
        }
        cli_fail(CLI_EXIT_USAGE, "expected 'tokenizer train' (see paddlec tokenizer --help)");
    }
    cli_cmd = "tokenizer train";
    const char *input = NULL, *out = NULL, *special = NULL;
    int vocab = 0, min_freq = 2;
    struct cli_opt opts[] = {
        {"input", CLI_STR, &input, 0, 0, "training text (required)", 0},
        {"vocab", CLI_INT, &vocab, 257, 1 << 20, "vocabulary size: 256 bytes + merges + specials (required)", 0},
        {"out", CLI_STR, &out, 0, 0, "tokenizer JSON to write (required)", 0},
        {"min-frequency", CLI_INT, &min_freq, 1, 1 << 30, "stop merging when the best pair is rarer", 0},
        {"special", CLI_STR, &special, 0, 0, "a special token to append, e.g. <|endoftext|>", 0},
        {0, 0, 0, 0, 0, 0, 0},
    };
    const char *pos[1];
    int npos;
    cli_parse(argc - 1, argv + 1, opts, "tokenizer train --input FILE --vocab N --out FILE.json [options]",
              "Learn a byte-level BPE tokenizer (merges never cross whitespace/punctuation boundaries or\n"
              "newlines) and save it as JSON for `paddlec train --tokenizer`.",
              pos, 0, &npos);
    if (!input || !out || !vocab) cli_fail(CLI_EXIT_USAGE, "--input, --vocab and --out are required (see --help)");
    size_t len;
    char *text = cli_hold(cli_read_file(input, CLI_MAX_TEXT, &len), free);
    if (!len) cli_fail(CLI_EXIT_FAIL, "%s is empty", cli_q(input));
    struct pd_bpe_options bo = {min_freq, special ? 1 : 0, special ? &special : NULL};
    double t0 = cli_now();
    struct pd_tokenizer *tok = cli_hold(pd_bpe_train(text, len, vocab, &bo), cli_dtor_tokenizer);
    if (!tok) cli_fail_pd("BPE training failed");
    double dt = cli_now() - t0;
    int32_t *ids = NULL;
    int64_t n = pd_tokenizer_encode(tok, text, len, &ids);
    cli_hold(ids, free);
    if (n < 0) cli_fail_pd("cannot encode the input");
    if (pd_tokenizer_save(tok, out)) cli_fail_pd("cannot save %s", cli_q(out));
    printf("%s: vocab %d (%d merges) in %.2f s; %zu bytes -> %lld tokens (%.2f bytes/token)\n", out,
           pd_tokenizer_vocab_size(tok), pd_tokenizer_n_merges(tok), dt, len, (long long)n, n ? (double)len / n : 0.0);
    cli_free_all();   /* ids, tok, text */
    return 0;
}
