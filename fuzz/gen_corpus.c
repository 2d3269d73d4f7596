/* paddle.c — writes the seed corpora of the fuzz targets (fuzz/corpus/<t>/)
 * with the library's own writers: valid inputs of each reader plus a few
 * near-valid ones (truncated, a field off by one). Usage:
 *   build/fuzz/fuzz_gen_corpus fuzz/corpus
 * (docs/reliability.md, "Fuzzing"). Deterministic: rerunning rewrites the
 * same bytes. */
#include <errno.h>
#include <sys/stat.h>

#include "fuzz_state.h"

static const char *root;

static void put(const char *target, const char *name, const void *data, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, target);
    if (mkdir(path, 0777) && errno != EEXIST) abort();
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f && fwrite(data, 1, n, f) == n && !fclose(f));
}

static void put_str(const char *target, const char *name, const char *s) { put(target, name, s, strlen(s)); }

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    FUZZ_CHECK(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n + 1);
    FUZZ_CHECK(b && fread(b, 1, *n, f) == *n);
    fclose(f);
    return b;
}

/* sd as a safetensors file into target/name, plus near-valid variants;
 * state_form: as "HEADER\0DATA" (fuzz_state_file in fuzz_state.h). */
static void put_st(const char *target, const char *name, const struct pd_state_dict *sd, int variants, int state_form)
{
    char tmp[256], vn[256];
    snprintf(tmp, sizeof tmp, "/tmp/pd-gen-corpus-%d.safetensors", (int)getpid());
    FUZZ_CHECK(pd_safetensors_save(tmp, sd) == PD_OK);
    size_t n;
    unsigned char *b = slurp(tmp, &n);
    unlink(tmp);
    if (state_form) {
        uint64_t h = 0;
        for (int i = 0; i < 8; i++) h |= (uint64_t)b[i] << (8 * i);
        FUZZ_CHECK(h + 8 <= n);
        memmove(b, b + 8, h);
        b[h] = 0; /* the data section stays where it was: 8 bytes became 1 */
        memmove(b + h + 1, b + 8 + h, n - 8 - h);
        n -= 7;
        snprintf(vn, sizeof vn, "%s.st", name);
        put(target, vn, b, n);
        if (variants) {
            snprintf(vn, sizeof vn, "%s-truncated.st", name);
            put(target, vn, b, n - 1);
        }
        free(b);
        return;
    }
    snprintf(vn, sizeof vn, "%s.safetensors", name);
    put(target, vn, b, n);
    if (variants) {
        snprintf(vn, sizeof vn, "%s-truncated.safetensors", name);
        put(target, vn, b, n - 1);
        b[0]++; /* header length one more than the header */
        snprintf(vn, sizeof vn, "%s-hlen.safetensors", name);
        put(target, vn, b, n);
    }
    free(b);
}

static void gen_safetensors(void)
{
    int tok = pd_scope_begin();
    struct pd_state_dict *sd = pd_state_dict_create();
    int64_t s23[2] = {2, 3}, s4[1] = {4}, s0[2] = {0, 3};
    pd_state_dict_add(sd, "model.w", pd_arange(0, 6, 1, PD_F32));
    pd_state_dict_set(sd, "model.w", pd_reshape(pd_arange(0, 6, 1, PD_F32), s23, 2), 1);
    pd_state_dict_add(sd, "model.b", pd_full(s4, 1, -1.5, PD_BF16));
    pd_state_dict_set_meta(sd, "format", "pt");
    pd_state_dict_set_meta(sd, "paddlec.note", "seed \"corpus\" \\ \xc3\xa9");
    put_st("safetensors", "two-tensors", sd, 1, 0);
    pd_state_dict_destroy(sd);

    /* one tensor of each dtype, a zero-size tensor and a 0-d one */
    sd = pd_state_dict_create();
    static const enum pd_dtype dts[] = {PD_F32, PD_F64, PD_F16, PD_BF16, PD_I32, PD_I64, PD_U8, PD_BOOL};
    for (size_t i = 0; i < sizeof dts / sizeof *dts; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "t_%s", pd_dtype_name(dts[i]));
        pd_state_dict_add(sd, nm, pd_full(s4, 1, 1, dts[i]));
    }
    pd_state_dict_add(sd, "empty", pd_zeros(s0, 2, PD_F32));
    pd_state_dict_add(sd, "scalar", pd_full(NULL, 0, 3.25, PD_F64));
    put_st("safetensors", "dtypes", sd, 1, 0);
    pd_state_dict_destroy(sd);

    sd = pd_state_dict_create();
    put_st("safetensors", "empty-dict", sd, 0, 0);
    pd_state_dict_destroy(sd);
    pd_scope_end(tok);
    static const char bad[] = "\x10\0\0\0\0\0\0\0{\"a\": [1, 2]}  "; /* not a tensor entry */
    put("safetensors", "not-a-tensor", bad, sizeof bad - 1);
}

static void gen_tokenizer(void)
{
    struct pd_tokenizer *t = pd_tokenizer_byte_create();
    char *j = pd_tokenizer_to_json(t);
    put_str("tokenizer", "byte.json", j);
    free(j);
    pd_tokenizer_destroy(t);

    static const char text[] = "the cat sat on the mat. the cat ate the rat.\n347+589=936\n12+34=46\n  tabs\tand  spaces\n";
    const char *special = "<|endoftext|>";
    struct pd_bpe_options bo = {1, 1, &special};
    t = pd_bpe_train(text, sizeof text - 1, 300, &bo);
    FUZZ_CHECK(t);
    j = pd_tokenizer_to_json(t);
    put_str("tokenizer", "bpe.json", j);
    /* near-valid: vocab_size one too many */
    char *v = strstr(j, "\"vocab_size\"");
    if (v) {
        v = strchr(v, ':') + 1;
        while (*v == ' ' || *v == '\t') v++;
        (*v)++;
        put_str("tokenizer", "bpe-bad-vocab.json", j);
    }
    free(j);
    pd_tokenizer_destroy(t);
    /* Hugging Face tokenizer.json: SentencePiece style (byte fallback for
     * 'c', unk otherwise) and byte-level with the Llama 3 split */
    put_str("tokenizer", "hf-spm.json",
            "{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\u2581\"},"
            "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\u2581\"}]},\"pre_tokenizer\":null,"
            "\"added_tokens\":[{\"id\":1,\"content\":\"<s>\",\"special\":true,\"rstrip\":true}],"
            "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\u2581\"},"
            "\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \","
            "\"start\":1,\"stop\":0}]},\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"byte_fallback\":true,"
            "\"fuse_unk\":true,\"vocab\":{\"<unk>\":0,\"<s>\":1,\"<0x63>\":2,\"a\":3,\"b\":4,\"\u2581\":5,\"ab\":6,"
            "\"\u2581ab\":7},\"merges\":[\"a b\",\"\u2581 ab\"]}}");
    {
        char vocab[8192];
        size_t k = 0;
        int n = 0;
        for (int b = 0; b < 256; b++) { /* GPT-2's byte-to-character map */
            int keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            unsigned cp = keep ? (unsigned)b : 0x100u + (unsigned)n++;
            k += (size_t)snprintf(vocab + k, sizeof vocab - k, "%s\"\\u%04x\":%d", b ? "," : "", cp, b);
        }
        char *hf = malloc(sizeof vocab + 1024);
        snprintf(hf, sizeof vocab + 1024,
                 "{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
                 "{\"Regex\":\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| "
                 "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
                 "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"use_regex\":false}]},"
                 "\"decoder\":{\"type\":\"ByteLevel\"},\"added_tokens\":[{\"id\":259,\"content\":\"<|endoftext|>\"}],"
                 "\"model\":{\"type\":\"BPE\",\"ignore_merges\":true,\"vocab\":{%s,\"he\":256,\"\\u0120t\":257,"
                 "\"\\u0120the\":258},\"merges\":[\"h e\",\"\\u0120 t\",\"\\u0120t he\"]}}",
                 vocab);
        put_str("tokenizer", "hf-llama3.json", hf);
        free(hf);
    }
    put_str("tokenizer", "self-merge.json",
            "{\"format\":\"paddlec-tokenizer\",\"version\":1,\"type\":\"bpe\",\"vocab_size\":260,"
            "\"merges\":[[97,97],[256,256],[257,257],[258,258]],\"special\":[]}");
}

static void gen_config(void)
{
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    char *j = pd_llama_config_to_json(&c);
    put_str("config", "default.json", j);
    free(j);
    c.tie_embeddings = 1;
    c.dropout = 0.1;
    c.n_kv_heads = 1;
    c.norm_eps = 0.1 + 0.2;
    j = pd_llama_config_to_json(&c);
    put_str("config", "gqa-tied.json", j);
    free(j);
    put_str("config", "partial.json", "{\"dim\": 64, \"n_heads\": 4}");
    put_str("config", "bad-heads.json", "{\"dim\": 65, \"n_heads\": 4}");
    put_str("config", "unknown-key.json", "{\"dims\": 64}");
}

static void gen_optim(void)
{
    static const struct {
        const char *name;
        enum pd_optim_kind kind;
        int amsgrad;
        double momentum;
    } k[] = {{"sgd", PD_OPTIM_SGD, 0, 0},      {"sgd-momentum", PD_OPTIM_SGD, 0, 0.9},
             {"adam-amsgrad", PD_OPTIM_ADAM, 1, 0}, {"adamw", PD_OPTIM_ADAMW, 0, 0}};
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        int tok = pd_scope_begin();
        struct pd_state_dict *p = fuzz_params();
        struct pd_optim_config cfg;
        pd_optim_config_default(&cfg, k[i].kind);
        cfg.amsgrad = k[i].amsgrad;
        cfg.momentum = k[i].momentum;
        struct pd_optimizer *o = pd_optimizer_create_for(&cfg, p);
        FUZZ_CHECK(o);
        for (int s = 0; s < 2; s++) {
            FUZZ_CHECK(fuzz_backward(p, 1.0) == PD_OK);
            FUZZ_CHECK(pd_optimizer_step(o) == PD_OK);
            pd_optimizer_zero_grad(o);
        }
        struct pd_state_dict *sd = pd_state_dict_create();
        FUZZ_CHECK(pd_optimizer_state_dict(o, sd, "optim.") == PD_OK);
        put_st("optim_state", k[i].name, sd, i == 3, 1);
        pd_state_dict_destroy(sd);
        pd_optimizer_destroy(o);
        pd_state_dict_destroy(p);
        pd_scope_end(tok);
    }
}

static void gen_scaler(void)
{
    struct pd_grad_scaler *s = pd_grad_scaler_create(NULL);
    struct pd_state_dict *sd = pd_state_dict_create();
    FUZZ_CHECK(pd_grad_scaler_state_dict(s, sd, "scaler.") == PD_OK);
    put_st("scaler_state", "default", sd, 1, 1);
    pd_state_dict_set_meta(sd, "scaler.scale", "0.5");
    pd_state_dict_set_meta(sd, "scaler.growth_tracker", "1999");
    pd_state_dict_set_meta(sd, "scaler.skipped", "7");
    put_st("scaler_state", "grown", sd, 0, 1);
    pd_state_dict_destroy(sd);
    pd_grad_scaler_destroy(s);
}

static void gen_cli(void)
{
    static const struct {
        const char *name;
        const char *args;
        size_t len;
    } a[] = {
#define A(n, s) {n, s, sizeof s - 1}
        A("train", "train\0--steps\0" "60\0--out\0/tmp/x"),
        A("train-eq", "train\0--lr=3e-3\0--bf16\0--tie=false\0--seed\0" "9000000000000000"),
        A("train-config", "train\0--config\0c.json\0--dropout\0" "0.1\0--kv-heads\0" "2"),
        A("train-bad", "train\0--steps\0" "10x"),
        A("generate", "generate\0--ckpt\0a.safetensors\0--prompt\0" "12+34=\0--temperature\0" "0.8\0--top-p\0" "0.9"),
        A("eval", "eval\0--ckpt\0a.safetensors\0--batches\0" "5"),
        A("inspect", "inspect\0f.safetensors\0--no-stats"),
        A("bench", "bench\0--batch\0" "2\0--seq-len\0" "16"),
        A("tokenizer", "tokenizer\0train\0--input\0t.txt\0--vocab\0" "300\0--out\0t.json\0--special\0<|endoftext|>"),
        A("md5diff", "md5diff\0a.md5\0b.md5"),
        A("help", "train\0--help"),
        A("version", "--version"),
#undef A
    };
    for (size_t i = 0; i < sizeof a / sizeof *a; i++) put("cli_args", a[i].name, a[i].args, a[i].len);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_gen_corpus DIR (e.g. fuzz/corpus)\n");
        return 2;
    }
    root = argv[1];
    if (mkdir(root, 0777) && errno != EEXIST) return 1;
    gen_safetensors();
    gen_tokenizer();
    gen_config();
    gen_optim();
    gen_scaler();
    gen_cli();
    return 0;
}
