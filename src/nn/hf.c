/* paddle.c — Hugging Face Llama directories (include/pd/hf.h): config.json
 * to and from pd_llama_config, weights from model.safetensors or a sharded
 * index, and the writer.
 *
 * The model's parameter names are already Hugging Face's and its RoPE is
 * the rotate_half convention (src/ops/llm.c), so loading is a name-by-name
 * copy with dtype conversion (pd_state_dict_load); nothing is permuted.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "io/file.h"
#include "nn/nn_internal.h"
#include "pd/autograd.h"
#include "pd/hf.h"
#include "pd/io.h"
#include "pd/ops.h"

#define HF_MAX_JSON (64u << 20) /* config.json and the shard index */
#define HF_PATH 4096

/* ---- config.json ------------------------------------------------------ */

/* The integer key of o (required: its absence is an error; else *v keeps
 * its default). */
static int hf_int(const cJSON *o, const char *key, int required, int *v)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!e || cJSON_IsNull(e))
        return required ? pdi_errorf(PD_ERR_INVALID, "hf config: %s is missing", key) : PD_OK;
    if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || fabs(e->valuedouble) > 2147483647.0)
        return pdi_errorf(PD_ERR_INVALID, "hf config: %s must be an integer", key);
    *v = (int)e->valuedouble;
    return PD_OK;
}

static int hf_double(const cJSON *o, const char *key, double *v)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!e || cJSON_IsNull(e)) return PD_OK;
    if (!cJSON_IsNumber(e)) return pdi_errorf(PD_ERR_INVALID, "hf config: %s must be a number", key);
    *v = e->valuedouble;
    return PD_OK;
}

static int hf_bool(const cJSON *o, const char *key, int *v)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!e || cJSON_IsNull(e)) return PD_OK;
    if (!cJSON_IsBool(e)) return pdi_errorf(PD_ERR_INVALID, "hf config: %s must be true or false", key);
    *v = cJSON_IsTrue(e);
    return PD_OK;
}

/* rope_scaling (transformers 4) and rope_parameters (transformers 5): null
 * or the default RoPE ({"rope_type": "default"}, the older "type" key too),
 * whose rope_theta, if given, wins over the top-level one. */
static int hf_rope(const cJSON *o, const char *key, double *theta)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!e || cJSON_IsNull(e)) return PD_OK;
    if (!cJSON_IsObject(e)) return pdi_errorf(PD_ERR_INVALID, "hf config: %s must be an object or null", key);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "rope_type");
    if (!t) t = cJSON_GetObjectItemCaseSensitive(e, "type");
    char qb[PDI_QUOTE_BUF];
    if (t && !(cJSON_IsString(t) && !strcmp(t->valuestring, "default")))
        return pdi_errorf(PD_ERR_UNSUPPORTED, "hf config: %s type %s is not supported (only the default RoPE)", key,
                          cJSON_IsString(t) ? pdi_quote(t->valuestring, qb, sizeof qb) : "(not a string)");
    for (const cJSON *k = e->child; k; k = k->next)
        if (strcmp(k->string, "rope_type") && strcmp(k->string, "type") && strcmp(k->string, "rope_theta"))
            return pdi_errorf(PD_ERR_UNSUPPORTED, "hf config: %s key %s is not supported (only the default RoPE)",
                              key, pdi_quote(k->string, qb, sizeof qb));
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(e, "rope_theta");
    if (th && !cJSON_IsNumber(th)) return pdi_errorf(PD_ERR_INVALID, "hf config: %s.rope_theta must be a number", key);
    if (th) *theta = th->valuedouble;
    return PD_OK;
}

/* What the model cannot compute: an error naming the key. */
static int hf_unsupported(const cJSON *o, int hidden, int heads)
{
    static const char *const absent[] = {"sliding_window", "quantization_config"};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, absent[i]);
        if (e && !cJSON_IsNull(e))
            return pdi_errorf(PD_ERR_UNSUPPORTED, "hf config: %s is not supported (only null)", absent[i]);
    }
    static const char *const falses[] = {"attention_bias", "mlp_bias"};
    for (size_t i = 0; i < sizeof falses / sizeof *falses; i++) {
        int b = 0;
        if (hf_bool(o, falses[i], &b)) return pd_last_status();
        if (b) return pdi_errorf(PD_ERR_UNSUPPORTED, "hf config: %s true is not supported (no biases)", falses[i]);
    }
    char qb[PDI_QUOTE_BUF];
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "hidden_act");
    if (act && !(cJSON_IsString(act) && !strcmp(act->valuestring, "silu")))
        return pdi_errorf(PD_ERR_UNSUPPORTED, "hf config: hidden_act %s is not supported (only \"silu\")",
                          cJSON_IsString(act) ? pdi_quote(act->valuestring, qb, sizeof qb) : "(not a string)");
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(o, "model_type");
    if (mt && !(cJSON_IsString(mt) && !strcmp(mt->valuestring, "llama")))
        return pdi_errorf(PD_ERR_UNSUPPORTED, "hf config: model_type %s is not supported (only \"llama\")",
                          cJSON_IsString(mt) ? pdi_quote(mt->valuestring, qb, sizeof qb) : "(not a string)");
    int head_dim = 0;
    if (hf_int(o, "head_dim", 0, &head_dim)) return pd_last_status();
    if (head_dim && heads > 0 && head_dim * (int64_t)heads != hidden)
        return pdi_errorf(PD_ERR_UNSUPPORTED,
                          "hf config: head_dim %d with %d heads differs from hidden_size %d (not supported)", head_dim,
                          heads, hidden);
    return PD_OK;
}

static int config_from_object(struct pd_llama_config *out, const cJSON *o)
{
    if (!cJSON_IsObject(o)) return pdi_errorf(PD_ERR_INVALID, "hf config: JSON must be an object");
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    int kv = INT_MIN;          /* absent: one kv head per head */
    c.max_seq_len = 2048;      /* LlamaConfig's defaults */
    c.norm_eps = 1e-6;
    c.tie_embeddings = 0;
    c.dropout = 0;
    int st = hf_int(o, "vocab_size", 1, &c.vocab_size);
    if (!st) st = hf_int(o, "hidden_size", 1, &c.dim);
    if (!st) st = hf_int(o, "intermediate_size", 1, &c.hidden_dim);
    if (!st) st = hf_int(o, "num_hidden_layers", 1, &c.n_layers);
    if (!st) st = hf_int(o, "num_attention_heads", 1, &c.n_heads);
    if (!st) st = hf_int(o, "num_key_value_heads", 0, &kv);
    if (!st) st = hf_int(o, "max_position_embeddings", 0, &c.max_seq_len);
    if (!st) st = hf_double(o, "rms_norm_eps", &c.norm_eps);
    if (!st) st = hf_double(o, "rope_theta", &c.rope_theta);
    if (!st) st = hf_rope(o, "rope_scaling", &c.rope_theta);
    if (!st) st = hf_rope(o, "rope_parameters", &c.rope_theta);
    if (!st) st = hf_double(o, "initializer_range", &c.init_std);
    if (!st) st = hf_bool(o, "tie_word_embeddings", &c.tie_embeddings);
    if (!st) st = hf_unsupported(o, c.dim, c.n_heads);
    if (st) return st;
    c.n_kv_heads = kv == INT_MIN ? c.n_heads : kv;
    if (pd_llama_config_validate(&c)) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", pd_last_error());
        return pdi_errorf(pd_last_status(), "hf config: %s", msg);
    }
    *out = c;
    return PD_OK;
}

int pd_llama_config_from_hf(struct pd_llama_config *cfg, const char *json)
{
    if (!cfg || !json) return pdi_errorf(PD_ERR_NULL, "hf config: NULL argument");
    const char *end = NULL;
    cJSON *o = pdi_json_parse(json, strlen(json) + 1, &end);
    if (!o) {
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        return pdi_errorf(PD_ERR_INVALID, "hf config: invalid JSON at byte %zu", at);
    }
    int st = config_from_object(cfg, o);
    cJSON_Delete(o);
    return st;
}

static const char *torch_dtype_name(enum pd_dtype dt)
{
    return dt == PD_F32 ? "float32" : dt == PD_BF16 ? "bfloat16" : dt == PD_F16 ? "float16" : NULL;
}

/* transformers 5's form of the default RoPE (rope_theta stays at the top
 * level too, for transformers 4). */
static int add_rope_parameters(cJSON *o, double theta)
{
    cJSON *r = cJSON_AddObjectToObject(o, "rope_parameters"), *t = pdi_json_double(theta);
    int ok = r && t && cJSON_AddItemToObject(r, "rope_theta", t);
    if (!ok) cJSON_Delete(t);
    return ok && cJSON_AddStringToObject(r, "rope_type", "default");
}

char *pd_llama_config_to_hf(const struct pd_llama_config *c, enum pd_dtype dtype)
{
    if (pd_llama_config_validate(c)) return NULL;
    const char *tn = torch_dtype_name(dtype);
    if (!tn) return pdi_error(PD_ERR_INVALID, "hf config: dtype %s (only f32, bf16, f16)", pd_dtype_name(dtype));
    cJSON *o = cJSON_CreateObject(), *arch = cJSON_CreateStringArray((const char *[]){"LlamaForCausalLM"}, 1);
    int ok = o && arch && cJSON_AddItemToObject(o, "architectures", arch);
    if (!ok) cJSON_Delete(arch);
    ok = ok && cJSON_AddStringToObject(o, "model_type", "llama");
    const struct { const char *k; int v; } ints[] = {
        {"vocab_size", c->vocab_size}, {"hidden_size", c->dim}, {"intermediate_size", c->hidden_dim},
        {"num_hidden_layers", c->n_layers}, {"num_attention_heads", c->n_heads},
        {"num_key_value_heads", c->n_kv_heads}, {"head_dim", c->dim / c->n_heads},
        {"max_position_embeddings", c->max_seq_len},
    };
    for (size_t i = 0; ok && i < sizeof ints / sizeof *ints; i++) ok = cJSON_AddNumberToObject(o, ints[i].k, ints[i].v) != NULL;
    const struct { const char *k; double v; } dbl[] = {
        {"rms_norm_eps", c->norm_eps}, {"rope_theta", c->rope_theta}, {"initializer_range", c->init_std},
    };
    for (size_t i = 0; ok && i < sizeof dbl / sizeof *dbl; i++) {
        cJSON *e = pdi_json_double(dbl[i].v);
        ok = e && cJSON_AddItemToObject(o, dbl[i].k, e);
        if (!ok) cJSON_Delete(e);
    }
    ok = ok && cJSON_AddStringToObject(o, "hidden_act", "silu") && cJSON_AddBoolToObject(o, "attention_bias", 0) &&
         cJSON_AddBoolToObject(o, "mlp_bias", 0) && cJSON_AddNumberToObject(o, "attention_dropout", 0) &&
         cJSON_AddNullToObject(o, "rope_scaling") && add_rope_parameters(o, c->rope_theta) &&
         cJSON_AddBoolToObject(o, "tie_word_embeddings", c->tie_embeddings) &&
         cJSON_AddStringToObject(o, "torch_dtype", tn);
    char *s = ok ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (!s) return pdi_error(PD_ERR_NOMEM, "hf config: out of memory");
    return s;
}

/* ---- weights ---------------------------------------------------------- */

static int join(char *buf, const char *dir, const char *name)
{
    char qb[PDI_QUOTE_BUF];
    if ((size_t)snprintf(buf, HF_PATH, "%s/%s", dir, name) >= HF_PATH)
        return pdi_errorf(PD_ERR_INVALID, "hf: path too long in %s", pdi_quote(dir, qb, sizeof qb));
    return PD_OK;
}

static int is_file(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 && S_ISREG(s.st_mode);
}

/* A shard name of the index: a plain file name in the directory. */
static int plain_name(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < 256 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* The shard files of the index, each once, in first-appearance order
 * (a NULL-terminated malloc'd array of pointers into *keep). */
static const char **index_shards(const char *path, cJSON **keep)
{
    char qb[PDI_QUOTE_BUF];
    size_t len = 0;
    char *text = pdi_file_read_all(path, HF_MAX_JSON, &len, "hf index");
    if (!text) return NULL;
    cJSON *o = pdi_json_parse(text, len + 1, NULL);
    free(text);
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(o, "weight_map");
    if (!cJSON_IsObject(wm)) {
        cJSON_Delete(o);
        return pdi_error(PD_ERR_INVALID, "hf index %s: not a JSON object with a \"weight_map\" object",
                         pdi_quote(path, qb, sizeof qb));
    }
    int n = cJSON_GetArraySize(wm), k = 0;
    const char **files = pdi_calloc((size_t)n + 1, sizeof *files);
    if (!files) {
        cJSON_Delete(o);
        return pdi_error(PD_ERR_NOMEM, "hf index: out of memory");
    }
    for (const cJSON *e = wm->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !plain_name(e->valuestring)) {
            cJSON_Delete(o);
            free(files);
            return pdi_error(PD_ERR_INVALID, "hf index %s: the shard of %s is not a plain file name",
                             pdi_quote(path, qb, sizeof qb), cJSON_IsString(e) ? "a tensor" : "a tensor (not a string)");
        }
        int j = 0;
        while (j < k && strcmp(files[j], e->valuestring)) j++;
        if (j == k) files[k++] = e->valuestring;
    }
    *keep = o;
    return files;
}

/* Tensors a Hugging Face file may carry that the model does not hold. */
static int ignorable(const char *name, int tied)
{
    static const char sfx[] = ".rotary_emb.inv_freq";
    size_t n = strlen(name), s = sizeof sfx - 1;
    return (tied && !strcmp(name, "lm_head.weight")) || (n > s && !strcmp(name + n - s, sfx));
}

/* One shard into the model; seen[i] marks parameter i as loaded. */
static int load_shard(struct pd_state_dict *dst, const char *path, int tied, char *seen)
{
    char qb[PDI_QUOTE_BUF], qn[PDI_QUOTE_BUF];
    struct pd_state_dict *src = pd_safetensors_load(path);
    if (!src) return pd_last_status();
    struct pd_state_dict *keep = pd_state_dict_create();
    int st = keep ? PD_OK : pdi_errorf(PD_ERR_NOMEM, "hf: out of memory");
    for (int i = 0; !st && i < pd_state_dict_size(src); i++) {
        const char *name = pd_state_dict_name(src, i);
        if (ignorable(name, tied)) continue;
        int j = pd_state_dict_find(dst, name);
        if (j < 0)
            st = pdi_errorf(PD_ERR_INVALID, "hf %s: unexpected tensor %s (not a parameter of this config)",
                            pdi_quote(path, qb, sizeof qb), pdi_quote(name, qn, sizeof qn));
        else if (seen[j])
            st = pdi_errorf(PD_ERR_INVALID, "hf %s: tensor %s appears twice", pdi_quote(path, qb, sizeof qb),
                            pdi_quote(name, qn, sizeof qn));
        else {
            seen[j] = 1;
            st = pd_state_dict_add(keep, name, pd_state_dict_tensor(src, i));
        }
    }
    char report[512];
    if (!st && pd_state_dict_load(dst, keep, 0, report, sizeof report))
        st = pdi_errorf(pd_last_status(), "hf %s: %s", pdi_quote(path, qb, sizeof qb), report);
    pd_state_dict_destroy(keep);
    pd_state_dict_destroy(src);
    return st;
}

int pd_llama_load_hf_weights(struct pd_llama *m, const char *dir)
{
    if (!m || !dir) return pdi_errorf(PD_ERR_NULL, "hf load: NULL argument");
    char qb[PDI_QUOTE_BUF], path[HF_PATH];
    struct pd_state_dict *dst = pd_llama_state_dict(m);
    int n = pd_state_dict_size(dst), tied = pd_llama_get_config(m)->tie_embeddings;
    char *seen = pdi_calloc((size_t)n, 1);
    if (!seen) return pdi_errorf(PD_ERR_NOMEM, "hf load: out of memory");
    cJSON *keep = NULL;
    const char **files = NULL, *single[2] = {"model.safetensors", NULL};
    int st = join(path, dir, "model.safetensors.index.json");
    if (!st && is_file(path)) {
        files = index_shards(path, &keep);
        if (!files) st = pd_last_status();
    } else if (!st) {
        st = join(path, dir, "model.safetensors");
        if (!st && !is_file(path))
            st = pdi_errorf(PD_ERR_INVALID, "hf: %s has neither model.safetensors nor model.safetensors.index.json "
                            "(only safetensors weights are read)", pdi_quote(dir, qb, sizeof qb));
    }
    const char **list = files ? files : single;
    for (int i = 0; !st && list[i]; i++) {
        st = join(path, dir, list[i]);
        if (!st) st = load_shard(dst, path, tied, seen);
    }
    for (int i = 0; !st && i < n; i++)
        if (!seen[i])
            st = pdi_errorf(PD_ERR_INVALID, "hf: %s lacks the tensor %s", pdi_quote(dir, qb, sizeof qb),
                            pd_state_dict_name(dst, i));
    free(files);
    cJSON_Delete(keep);
    free(seen);
    return st;
}

struct pd_llama *pd_llama_from_hf(const char *dir)
{
    if (!dir) return pdi_error(PD_ERR_NULL, "hf: dir is NULL");
    char path[HF_PATH];
    if (join(path, dir, "config.json")) return NULL;
    char *text = pdi_file_read_all(path, HF_MAX_JSON, NULL, "hf config");
    if (!text) return NULL;
    struct pd_llama_config c;
    int st = pd_llama_config_from_hf(&c, text);
    free(text);
    if (st) return NULL;
    struct pd_llama *m = pd_llama_create(&c, 0);
    if (m && pd_llama_load_hf_weights(m, dir)) {
        pd_llama_destroy(m);
        return NULL;
    }
    return m;
}

/* ---- writer ----------------------------------------------------------- */

static int ensure_dir(const char *dir)
{
    char qb[PDI_QUOTE_BUF];
    struct stat s;
    if (mkdir(dir, 0777) && errno != EEXIST)
        return pdi_errorf(PD_ERR_IO, "hf save: cannot create %s: %s", pdi_quote(dir, qb, sizeof qb), strerror(errno));
    if (stat(dir, &s) || !S_ISDIR(s.st_mode))
        return pdi_errorf(PD_ERR_IO, "hf save: %s is not a directory", pdi_quote(dir, qb, sizeof qb));
    return PD_OK;
}

int pd_llama_save_hf(struct pd_llama *m, const char *dir, enum pd_dtype dtype)
{
    if (!m || !dir) return pdi_errorf(PD_ERR_NULL, "hf save: NULL argument");
    char qb[PDI_QUOTE_BUF], path[HF_PATH];
    char *cfg = pd_llama_config_to_hf(pd_llama_get_config(m), dtype);
    if (!cfg) return pd_last_status();
    int st = ensure_dir(dir);
    /* a stale index would be read instead of the new file */
    if (!st) st = join(path, dir, "model.safetensors.index.json");
    if (!st && is_file(path))
        st = pdi_errorf(PD_ERR_INVALID, "hf save: %s holds sharded weights (model.safetensors.index.json); "
                        "write to another directory", pdi_quote(dir, qb, sizeof qb));
    if (!st) st = join(path, dir, "config.json");
    if (!st) st = pdi_file_write_atomic(path, cfg, strlen(cfg), "hf save");
    free(cfg);
    if (st) return st;
    struct pd_state_dict *params = pd_llama_state_dict(m), *out = pd_state_dict_create();
    if (!out) return pdi_errorf(PD_ERR_NOMEM, "hf save: out of memory");
    int scope = pd_scope_begin(), mode = pd_no_grad_begin();
    for (int i = 0; !st && i < pd_state_dict_size(params); i++) {
        struct pd_tensor *t = pd_state_dict_tensor(params, i);
        if (dtype != pd_tensor_dtype(t)) t = pd_cast(t, dtype);
        st = t ? pd_state_dict_add(out, pd_state_dict_name(params, i), t) : pd_last_status();
    }
    pd_grad_mode_end(mode);
    if (!st) st = pd_state_dict_set_meta(out, "format", "pt");
    if (!st) st = join(path, dir, "model.safetensors");
    if (!st) st = pd_safetensors_save(path, out);
    pd_state_dict_destroy(out);
    pd_scope_end(scope);
    return st;
}
