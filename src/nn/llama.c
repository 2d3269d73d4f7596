/* paddle.c — the Llama model (include/pd/nn.h): config, parameters, the
 * forward with and without a KV cache, the loss.
 *
 * Layout: every parameter is a view into one flat f32 buffer, in Hugging
 * Face state-dict order (embed_tokens, layers.0.self_attn.q/k/v/o,
 * layers.0.mlp.gate/up/down, layers.0.input_layernorm,
 * layers.0.post_attention_layernorm, ..., norm, lm_head), each aligned to
 * 64 bytes. Each view is its own leaf (its own .grad). The model owns the
 * buffer and one reference per parameter; its state dict holds the same
 * tensors (live, not copies).
 * The forward is a composition of the nn modules (attention.c, modules.c):
 * embedding -> blocks -> RMSNorm -> lm_head (or the tied embedding).
 * The cache path runs under no_grad: it is for inference, and writing the
 * cache in place would invalidate a recorded graph anyway.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "io/file.h"
#include "nn/nn_internal.h"
#include "pd/autograd.h"
#include "pd/dist.h"
#include "pd/nn.h"
#include "pd/ops.h"

struct pd_llama {
    struct pd_llama_config cfg;
    struct pd_tensor *flat;            /* [n] f32, every parameter is a view */
    struct pd_nn_embedding embed;      /* model.embed_tokens */
    struct pd_nn_block *layers;        /* n_layers */
    struct pd_nn_rmsnorm norm;         /* model.norm */
    struct pd_nn_linear lm_head;       /* weight NULL when tied */
    struct pd_nn_dropout *dropout;     /* NULL when cfg.dropout == 0 */
    struct pd_state_dict *sd;
    int training;
};

struct pd_kv_cache {
    int n_layers, batch, max_len, n_kv_heads, head_dim, len;
    struct pd_tensor **k, **v; /* n_layers each, [batch, n_kv_heads, max_len, head_dim] */
};

/* ---- config ----------------------------------------------------------- */

void pd_llama_config_default(struct pd_llama_config *cfg)
{
    if (!cfg) return;
    *cfg = (struct pd_llama_config){
        .vocab_size = 256,
        .dim = 128,
        .n_layers = 4,
        .n_heads = 4,
        .n_kv_heads = 2,
        .hidden_dim = 352,
        .max_seq_len = 128,
        .norm_eps = 1e-5,
        .rope_theta = 10000.0,
        .tie_embeddings = 0,
        .dropout = 0.0,
        .init_std = 0.02,
    };
}

#define LIMIT (1 << 20) /* far above any CPU model, low enough that products fit int64 */

int pd_llama_config_validate(const struct pd_llama_config *c)
{
    if (!c) return pdi_errorf(PD_ERR_NULL, "llama config: NULL");
    const struct { const char *name; int v; } pos[] = {
        {"vocab_size", c->vocab_size}, {"dim", c->dim}, {"n_layers", c->n_layers}, {"n_heads", c->n_heads},
        {"n_kv_heads", c->n_kv_heads}, {"hidden_dim", c->hidden_dim}, {"max_seq_len", c->max_seq_len},
    };
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (pos[i].v <= 0 || pos[i].v > LIMIT)
            return pdi_errorf(PD_ERR_INVALID, "llama config: %s must be in [1, %d], got %d", pos[i].name, LIMIT, pos[i].v);
    if (c->dim % c->n_heads)
        return pdi_errorf(PD_ERR_INVALID, "llama config: dim (%d) must be divisible by n_heads (%d)", c->dim, c->n_heads);
    if (c->n_heads % c->n_kv_heads)
        return pdi_errorf(PD_ERR_INVALID, "llama config: n_heads (%d) must be divisible by n_kv_heads (%d)",
                          c->n_heads, c->n_kv_heads);
    if ((c->dim / c->n_heads) % 2)
        return pdi_errorf(PD_ERR_INVALID, "llama config: head_dim = dim / n_heads = %d must be even (RoPE pairs)",
                          c->dim / c->n_heads);
    if (!(c->norm_eps > 0 && c->norm_eps < 1))
        return pdi_errorf(PD_ERR_INVALID, "llama config: norm_eps must be in (0, 1), got %g", c->norm_eps);
    if (!(c->rope_theta > 0 && isfinite(c->rope_theta)))
        return pdi_errorf(PD_ERR_INVALID, "llama config: rope_theta must be positive and finite, got %g", c->rope_theta);
    if (c->tie_embeddings != 0 && c->tie_embeddings != 1)
        return pdi_errorf(PD_ERR_INVALID, "llama config: tie_embeddings must be 0 or 1, got %d", c->tie_embeddings);
    if (!(c->dropout >= 0 && c->dropout < 1))
        return pdi_errorf(PD_ERR_INVALID, "llama config: dropout must be in [0, 1), got %g", c->dropout);
    if (!(c->init_std > 0 && isfinite(c->init_std)))
        return pdi_errorf(PD_ERR_INVALID, "llama config: init_std must be positive and finite, got %g", c->init_std);
    return PD_OK;
}

/* One table drives both JSON directions. */
enum field_kind { F_INT, F_DOUBLE, F_BOOL };
static const struct field {
    const char *name;
    enum field_kind kind;
    size_t off;
} fields[] = {
    {"vocab_size", F_INT, offsetof(struct pd_llama_config, vocab_size)},
    {"dim", F_INT, offsetof(struct pd_llama_config, dim)},
    {"n_layers", F_INT, offsetof(struct pd_llama_config, n_layers)},
    {"n_heads", F_INT, offsetof(struct pd_llama_config, n_heads)},
    {"n_kv_heads", F_INT, offsetof(struct pd_llama_config, n_kv_heads)},
    {"hidden_dim", F_INT, offsetof(struct pd_llama_config, hidden_dim)},
    {"max_seq_len", F_INT, offsetof(struct pd_llama_config, max_seq_len)},
    {"norm_eps", F_DOUBLE, offsetof(struct pd_llama_config, norm_eps)},
    {"rope_theta", F_DOUBLE, offsetof(struct pd_llama_config, rope_theta)},
    {"tie_embeddings", F_BOOL, offsetof(struct pd_llama_config, tie_embeddings)},
    {"dropout", F_DOUBLE, offsetof(struct pd_llama_config, dropout)},
    {"init_std", F_DOUBLE, offsetof(struct pd_llama_config, init_std)},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

/* x as a JSON number that reads back bit-identical: the shortest of 15, 16
 * and 17 significant digits that does (17 always does). cJSON's own printer
 * falls back to 17 digits only when 15 are off by more than a relative
 * 2^-52, so 0.1 + 0.2 came back as 0.3. Non-finite: null (validation
 * refuses it on the way back). */
cJSON *pdi_json_double(double x)
{
    char b[PD_DOUBLE_BUF];
    return isfinite(x) ? cJSON_CreateRaw(pd_format_double(x, b, sizeof b)) : cJSON_CreateNull();
}

char *pd_llama_config_to_json(const struct pd_llama_config *cfg)
{
    if (!cfg) return pdi_error(PD_ERR_NULL, "llama config: NULL");
    cJSON *o = cJSON_CreateObject();
    if (!o) return pdi_error(PD_ERR_NOMEM, "llama config: out of memory");
    for (size_t i = 0; i < N_FIELDS; i++) {
        const char *p = (const char *)cfg + fields[i].off;
        cJSON *item = fields[i].kind == F_DOUBLE ? pdi_json_double(*(const double *)p)
                      : fields[i].kind == F_BOOL ? cJSON_CreateBool(*(const int *)p)
                                                 : cJSON_CreateNumber(*(const int *)p);
        if (!item || !cJSON_AddItemToObject(o, fields[i].name, item)) {
            cJSON_Delete(item);
            cJSON_Delete(o);
            return pdi_error(PD_ERR_NOMEM, "llama config: out of memory");
        }
    }
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    if (!s) return pdi_error(PD_ERR_NOMEM, "llama config: out of memory");
    /* cJSON allocates with malloc by default: the caller frees with free(). */
    return s;
}

int pd_llama_config_from_json(struct pd_llama_config *cfg, const char *json)
{
    if (!cfg || !json) return pdi_errorf(PD_ERR_NULL, "llama config: NULL argument");
    /* The parse's own end pointer, not cJSON_GetErrorPtr(): that one is
     * process-wide and may point into another thread's freed text. */
    const char *end = NULL;
    cJSON *o = pdi_json_parse(json, strlen(json) + 1, &end);
    if (!o) {
        char qb[PDI_QUOTE_BUF];
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        return pdi_errorf(PD_ERR_INVALID, "llama config: invalid JSON at byte %zu near %s", at,
                          pdi_quote_n(json + at, strnlen(json + at, 20), qb, sizeof qb));
    }
    int st = PD_OK;
    struct pd_llama_config c;
    pd_llama_config_default(&c);
    if (!cJSON_IsObject(o)) st = pdi_errorf(PD_ERR_INVALID, "llama config: JSON must be an object");
    for (cJSON *it = cJSON_IsObject(o) ? o->child : NULL; it && !st; it = it->next) {
        size_t i = 0;
        while (i < N_FIELDS && strcmp(fields[i].name, it->string)) i++;
        if (i == N_FIELDS) {
            char qb[PDI_QUOTE_BUF];
            st = pdi_errorf(PD_ERR_INVALID, "llama config: unknown key %s", pdi_quote(it->string, qb, sizeof qb));
            break;
        }
        char *p = (char *)&c + fields[i].off;
        if (fields[i].kind == F_BOOL && cJSON_IsBool(it)) {
            *(int *)p = cJSON_IsTrue(it);
        } else if (!cJSON_IsNumber(it)) {
            char qb[PDI_QUOTE_BUF];
            st = pdi_errorf(PD_ERR_INVALID, "llama config: %s must be a %s", pdi_quote(it->string, qb, sizeof qb),
                            fields[i].kind == F_DOUBLE ? "number" : fields[i].kind == F_BOOL ? "boolean" : "integer");
        } else if (fields[i].kind == F_DOUBLE) {
            *(double *)p = it->valuedouble;
        } else {
            double v = it->valuedouble;
            if (v != floor(v) || fabs(v) > 2147483647.0)
                st = pdi_errorf(PD_ERR_INVALID, "llama config: \"%s\" must be an integer, got %g", fields[i].name, v);
            else *(int *)p = (int)v;
        }
    }
    cJSON_Delete(o);
    if (!st) st = pd_llama_config_validate(&c);
    if (!st) *cfg = c;
    return st;
}

/* ---- model ------------------------------------------------------------ */

static int64_t aligned(int64_t n) { return (n + PDI_NN_ALIGN - 1) / PDI_NN_ALIGN * PDI_NN_ALIGN; }

/* Floats the flat buffer needs, with the alignment of every view. */
static int64_t flat_size(const struct pd_llama_config *c)
{
    int64_t d = c->dim, hd = c->dim / c->n_heads, kvd = (int64_t)c->n_kv_heads * hd, h = c->hidden_dim;
    int64_t layer = aligned(d * d) * 2 + aligned(kvd * d) * 2 + aligned(h * d) * 3 + aligned(d) * 2;
    return aligned((int64_t)c->vocab_size * d) * (c->tie_embeddings ? 1 : 2) + layer * c->n_layers + aligned(d);
}

void pd_llama_destroy(struct pd_llama *m)
{
    if (!m) return;
    pd_state_dict_destroy(m->sd);
    pd_tensor_release(m->embed.weight);
    if (m->layers)
        for (int i = 0; i < m->cfg.n_layers; i++) pdi_nn_block_fini(&m->layers[i]);
    free(m->layers);
    pdi_nn_rmsnorm_fini(&m->norm);
    pdi_nn_linear_fini(&m->lm_head);
    pd_nn_dropout_destroy(m->dropout);
    pd_tensor_release(m->flat);
    free(m);
}

static int build_state_dict(struct pd_llama *m)
{
    m->sd = pd_state_dict_create();
    if (!m->sd) return pdi_errorf(PD_ERR_NOMEM, "llama: out of memory");
    int st = pd_nn_embedding_params(&m->embed, "model.embed_tokens", m->sd);
    char name[64];
    for (int i = 0; i < m->cfg.n_layers && !st; i++) {
        snprintf(name, sizeof name, "model.layers.%d", i);
        st = pd_nn_block_params(&m->layers[i], name, m->sd);
    }
    if (!st) st = pd_nn_rmsnorm_params(&m->norm, "model.norm", m->sd);
    if (!st && m->lm_head.weight) st = pd_nn_linear_params(&m->lm_head, "lm_head", m->sd);
    return st;
}

/* normal(0, std) on the matrices, the residual outputs (o_proj, down_proj)
 * scaled by 1/sqrt(2 n_layers) (GPT-2 style); norms stay 1. */
static int init_weights(struct pd_llama *m, uint64_t seed)
{
    struct pd_generator *g = pd_generator_create(seed);
    if (!g) return pdi_errorf(PD_ERR_NOMEM, "llama: out of memory");
    double std = m->cfg.init_std, res = std / sqrt(2.0 * m->cfg.n_layers);
    int st = pd_init_normal_(m->embed.weight, 0, std, g);
    for (int i = 0; i < m->cfg.n_layers && !st; i++) {
        struct pd_nn_block *b = &m->layers[i];
        struct pd_tensor *w[] = {b->self_attn.q_proj.weight, b->self_attn.k_proj.weight, b->self_attn.v_proj.weight,
                                 b->self_attn.o_proj.weight, b->mlp.gate_proj.weight,  b->mlp.up_proj.weight,
                                 b->mlp.down_proj.weight};
        for (int j = 0; j < 7 && !st; j++) st = pd_init_normal_(w[j], 0, (j == 3 || j == 6) ? res : std, g);
    }
    if (!st && m->lm_head.weight) st = pd_init_normal_(m->lm_head.weight, 0, std, g);
    pd_generator_destroy(g);
    return st;
}

struct pd_llama *pd_llama_create(const struct pd_llama_config *cfg, uint64_t seed)
{
    if (pd_llama_config_validate(cfg)) return NULL;
    struct pd_llama *m = pdi_calloc(1, sizeof *m);
    if (!m) return pdi_error(PD_ERR_NOMEM, "llama: out of memory");
    m->cfg = *cfg;
    m->training = 1;
    const struct pd_llama_config *c = cfg;
    int64_t n = flat_size(c);
    m->flat = pdi_nn_zeros_owned(&n, 1); /* alignment gaps stay 0 */
    m->layers = pdi_calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->flat || !m->layers) {
        pd_llama_destroy(m);
        return pdi_error(PD_ERR_NOMEM, "llama: out of memory for %lld parameters", (long long)n);
    }
    struct pdi_nn_arena ar = {m->flat, 0};
    int st = pdi_nn_embedding_init(&m->embed, c->vocab_size, c->dim, &ar);
    for (int i = 0; i < c->n_layers && !st; i++)
        st = pdi_nn_block_init(&m->layers[i], c->dim, c->n_heads, c->n_kv_heads, c->hidden_dim, c->norm_eps,
                               c->rope_theta, &ar);
    if (!st) st = pdi_nn_rmsnorm_init(&m->norm, c->dim, c->norm_eps, &ar);
    if (!st && !c->tie_embeddings) st = pdi_nn_linear_init(&m->lm_head, c->dim, c->vocab_size, 0, &ar);
    if (!st && c->dropout > 0) {
        m->dropout = pd_nn_dropout_create(c->dropout, seed ^ 0x9e3779b97f4a7c15ull);
        if (!m->dropout) st = pd_last_status();
        for (int i = 0; i < c->n_layers && !st; i++) m->layers[i].dropout = m->dropout;
    }
    if (!st) st = init_weights(m, seed);
    if (!st) st = build_state_dict(m);
    if (st) {
        pd_llama_destroy(m);
        return NULL;
    }
    return m;
}

const struct pd_llama_config *pd_llama_get_config(const struct pd_llama *m) { return m ? &m->cfg : NULL; }
struct pd_state_dict *pd_llama_state_dict(struct pd_llama *m) { return m ? m->sd : NULL; }

void pd_llama_train(struct pd_llama *m, int training)
{
    if (!m) return;
    m->training = training != 0;
    if (m->dropout) m->dropout->training = m->training;
}

int pd_llama_is_training(const struct pd_llama *m) { return m ? m->training : 0; }
struct pd_generator *pd_llama_dropout_generator(struct pd_llama *m) { return m && m->dropout ? m->dropout->gen : NULL; }

int64_t pd_llama_num_params(const struct pd_llama *m) { return m ? pd_state_dict_numel(m->sd) : 0; }

double pd_llama_flops_per_token(const struct pd_llama_config *c, int seq_len)
{
    if (pd_llama_config_validate(c)) return -1;
    if (seq_len <= 0) {
        pdi_errorf(PD_ERR_INVALID, "llama flops: seq_len must be positive, got %d", seq_len);
        return -1;
    }
    /* Matmul parameters (the embedding lookup costs nothing; the output
     * projection always does, tied or not): 6 per parameter for forward +
     * backward; attention scores and values: 12 L dim T (the PaLM
     * appendix-B count, not halved for the causal mask). */
    double d = c->dim, hd = d / c->n_heads, kvd = c->n_kv_heads * hd, h = c->hidden_dim;
    double per_layer = 2 * d * d + 2 * kvd * d + 3 * h * d;
    double n = per_layer * c->n_layers + (double)c->vocab_size * d;
    return 6 * n + 12.0 * c->n_layers * d * seq_len;
}

/* ---- KV cache --------------------------------------------------------- */

struct pd_kv_cache *pd_kv_cache_create(const struct pd_llama_config *cfg, int batch, int max_len)
{
    if (pd_llama_config_validate(cfg)) return NULL;
    if (batch <= 0 || max_len <= 0)
        return pdi_error(PD_ERR_INVALID, "kv_cache: batch and max_len must be positive, got %d and %d", batch, max_len);
    struct pd_kv_cache *c = pdi_calloc(1, sizeof *c);
    if (!c) return pdi_error(PD_ERR_NOMEM, "kv_cache: out of memory");
    c->n_layers = cfg->n_layers;
    c->batch = batch;
    c->max_len = max_len;
    c->n_kv_heads = cfg->n_kv_heads;
    c->head_dim = cfg->dim / cfg->n_heads;
    c->k = pdi_calloc((size_t)c->n_layers, sizeof *c->k);
    c->v = pdi_calloc((size_t)c->n_layers, sizeof *c->v);
    if (!c->k || !c->v) {
        pd_kv_cache_destroy(c);
        return pdi_error(PD_ERR_NOMEM, "kv_cache: out of memory");
    }
    /* One storage per tensor: an in-place write to one layer's cache must
     * not bump the version of another's. Made by creation ops (zeros, owned
     * by the cache) and written only by pd_copy_ into slice views
     * (src/nn/attention.c), so observers see every byte of it. */
    int64_t shape[4] = {batch, c->n_kv_heads, max_len, c->head_dim};
    for (int i = 0; i < c->n_layers; i++) {
        c->k[i] = pdi_nn_zeros_owned(shape, 4);
        c->v[i] = pdi_nn_zeros_owned(shape, 4);
        if (!c->k[i] || !c->v[i]) {
            int rc = pd_last_status(); /* the message reads only shape, never c, which is freed first */
            pd_kv_cache_destroy(c);
            if (rc >= 0) rc = PD_ERR_NOMEM;
            return pdi_error(rc, "kv_cache: %s [%lld, %lld, %lld, %lld] x %d layers",
                             rc == PD_ERR_NOMEM ? "out of memory for" : "cannot allocate", (long long)shape[0],
                             (long long)shape[1], (long long)shape[2], (long long)shape[3], cfg->n_layers);
        }
    }
    return c;
}

void pd_kv_cache_destroy(struct pd_kv_cache *c)
{
    if (!c) return;
    for (int i = 0; i < c->n_layers; i++) {
        if (c->k) pd_tensor_release(c->k[i]);
        if (c->v) pd_tensor_release(c->v[i]);
    }
    free(c->k);
    free(c->v);
    free(c);
}

void pd_kv_cache_reset(struct pd_kv_cache *c)
{
    if (c) c->len = 0;
}

int pd_kv_cache_len(const struct pd_kv_cache *c) { return c ? c->len : 0; }

/* ---- forward and loss ------------------------------------------------- */

/* RoPE positions and the key mask for the new tokens. Without pad_mask:
 * past..past+T-1 ([T]), no mask. With it ([B, S] bool, S = past + T):
 * each row counts its real tokens (cumsum - 1, clamped at 0) and padded
 * keys are masked out ([B, 1, 1, S]). */
static int positions_and_mask(struct pd_tensor *pad_mask, int64_t b, int64_t t, int64_t past,
                              struct pd_tensor **pos, struct pd_tensor **mask)
{
    int64_t s = past + t;
    *mask = NULL;
    if (!pad_mask) {
        *pos = pd_arange((double)past, (double)s, 1, PD_I64);
        return *pos ? PD_OK : pd_last_status();
    }
    if (pad_mask->ndim != 2 || pad_mask->shape[0] != b || pad_mask->shape[1] != s || pad_mask->dtype != PD_BOOL) {
        char sh[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_INVALID, "llama forward: pad_mask is %s %s, expected bool [%lld, %lld] (cached + new)",
                          pd_dtype_name(pad_mask->dtype), pdi_shape_str(pad_mask->shape, pad_mask->ndim, sh, sizeof sh),
                          (long long)b, (long long)s);
    }
    struct pd_tensor *count = pd_cumsum(pd_cast(pad_mask, PD_I64), 1);
    struct pd_tensor *p = pd_maximum(pd_add_scalar(count, -1), pd_scalar(0, PD_I64));
    *pos = pd_slice(p, 1, past, s, 1);
    *mask = pd_reshape(pad_mask, (int64_t[]){b, 1, 1, s}, 4);
    return *pos && *mask ? PD_OK : pd_last_status();
}

/* Packed documents: doc_ids int64 [B, T], a document being a run of equal
 * values. RoPE positions restart at 0 in each document ([B, T]), and the
 * FlashMask causal document mask idx int32 [B, 1, T, 1] gives key j the
 * row where its document ends (LTS_j: rows from there on do not see it). */
static int packed_positions_and_mask(struct pd_tensor *doc_ids, int64_t b, int64_t t, struct pd_tensor **pos,
                                     struct pd_tensor **idx)
{
    if (doc_ids->ndim != 2 || doc_ids->shape[0] != b || doc_ids->shape[1] != t || doc_ids->dtype != PD_I64) {
        char sh[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_INVALID,
                          "llama forward_packed: doc_ids is %s %s, expected int64 [%lld, %lld] (ids' shape)",
                          pd_dtype_name(doc_ids->dtype), pdi_shape_str(doc_ids->shape, doc_ids->ndim, sh, sizeof sh),
                          (long long)b, (long long)t);
    }
    if (t > INT32_MAX)
        return pdi_errorf(PD_ERR_INVALID, "llama forward_packed: %lld positions overflow int32 row indices",
                          (long long)t);
    if (pd_dtensor_is_dist(doc_ids)) {
        /* split by rows (the distributed loader's batches, include/pd/dist.h):
         * each rank computes its rows' positions and mask and places them
         * as doc_ids, with no communication */
        struct pd_mesh *mesh = pd_dtensor_mesh(doc_ids);
        const struct pd_placement *pl = pd_dtensor_placements(doc_ids);
        for (int a = 0; a < pd_mesh_ndim(mesh); a++)
            if (pl[a].kind == PD_PARTIAL || (pl[a].kind == PD_SHARD && pl[a].dim != 0))
                return pdi_errorf(PD_ERR_INVALID, "llama forward_packed: a distributed doc_ids must be split by rows "
                                                  "(Shard(0)) or replicated");
        struct pd_tensor *loc = pd_dtensor_local(doc_ids);
        if (!loc || packed_positions_and_mask(loc, loc->shape[0], t, pos, idx)) return pd_last_status();
        *pos = pd_dtensor_from_local(*pos, (int64_t[]){b, t}, mesh, pl);
        *idx = *pos ? pd_dtensor_from_local(*idx, (int64_t[]){b, 1, t, 1}, mesh, pl) : NULL;
        return *pos && *idx ? PD_OK : pd_last_status();
    }
    int64_t n = b * t, n1 = n ? n : 1; /* b is 0 on a rank with no rows */
    int64_t *doc = pdi_malloc(sizeof *doc * (size_t)n1), *p = pdi_malloc(sizeof *p * (size_t)n1);
    int32_t *lts = pdi_malloc(sizeof *lts * (size_t)n1);
    int st = !doc || !p || !lts ? pdi_errorf(PD_ERR_NOMEM, "llama forward_packed: out of memory") : PD_OK;
    if (!st) st = pd_to_buffer(doc_ids, doc, PD_I64);
    for (int64_t r = 0; !st && r < b; r++) {
        const int64_t *d = doc + r * t;
        for (int64_t s = 0, e; s < t; s = e) { /* the document [s, e) */
            for (e = s + 1; e < t && d[e] == d[s]; e++) {}
            for (int64_t j = s; j < e; j++) {
                p[r * t + j] = j - s;
                lts[r * t + j] = (int32_t)e;
            }
        }
    }
    *pos = st ? NULL : pd_from_buffer(p, (int64_t[]){b, t}, 2, PD_I64);
    *idx = st ? NULL : pd_from_buffer(lts, (int64_t[]){b, 1, t, 1}, 4, PD_I32);
    free(doc), free(p), free(lts);
    return st ? st : *pos && *idx ? PD_OK : pd_last_status();
}

/* cache, pad_mask: pd_llama_forward's; doc_ids: pd_llama_forward_packed's
 * (never with the other two). */
static struct pd_tensor *forward(struct pd_llama *m, struct pd_tensor *ids, struct pd_kv_cache *cache,
                                 struct pd_tensor *pad_mask, struct pd_tensor *doc_ids)
{
    const struct pd_llama_config *c = &m->cfg;
    if (!ids) return NULL;
    if (ids->ndim != 2 || ids->dtype != PD_I64 || ids->shape[1] < 1 || ids->shape[0] < 1) {
        char sh[PDI_SHAPE_BUF];
        return pdi_error(PD_ERR_INVALID, "llama forward: ids must be int64 [B, T] with B, T >= 1, got %s %s",
                         pd_dtype_name(ids->dtype), pdi_shape_str(ids->shape, ids->ndim, sh, sizeof sh));
    }
    int64_t b = ids->shape[0], t = ids->shape[1], past = 0;
    if (cache) {
        if (cache->n_layers != c->n_layers || cache->n_kv_heads != c->n_kv_heads || cache->head_dim != c->dim / c->n_heads)
            return pdi_error(PD_ERR_INVALID, "llama forward: the KV cache was made for another config (%d layers, "
                             "%d kv heads, head_dim %d)", cache->n_layers, cache->n_kv_heads, cache->head_dim);
        if (cache->batch != b)
            return pdi_error(PD_ERR_INVALID, "llama forward: batch %lld differs from the KV cache's %d", (long long)b,
                             cache->batch);
        past = cache->len;
        if (past + t > cache->max_len)
            return pdi_error(PD_ERR_INVALID, "llama forward: %lld cached + %lld new positions exceed the KV cache's "
                             "max_len %d", (long long)past, (long long)t, cache->max_len);
    }
    /* with a cache, its max_len is the limit (it may exceed the training
     * length: RoPE positions are computed, not tabled; include/pd/generate.h
     * max_ctx) */
    if (!cache && past + t > c->max_seq_len)
        return pdi_error(PD_ERR_INVALID, "llama forward: %lld positions (%lld cached + %lld new) exceed max_seq_len %d",
                         (long long)(past + t), (long long)past, (long long)t, c->max_seq_len);
    /* ids out of range: the embedding kernel reports them (before any cache write) */
    struct pd_tensor *pos = NULL, *mask = NULL, *idx = NULL;
    if (doc_ids ? packed_positions_and_mask(doc_ids, b, t, &pos, &idx)
                : positions_and_mask(pad_mask, b, t, past, &pos, &mask))
        return NULL;
    struct pd_tensor *h = pd_nn_embedding_forward(&m->embed, ids); /* [B, T, dim] */
    for (int i = 0; i < c->n_layers; i++)
        h = pdi_nn_block_forward(&m->layers[i], h, pos, mask, idx, 1, cache ? cache->k[i] : NULL,
                                 cache ? cache->v[i] : NULL, past);
    h = pd_nn_rmsnorm_forward(&m->norm, h);
    struct pd_tensor *logits = pd_linear(h, m->lm_head.weight ? m->lm_head.weight : m->embed.weight, NULL);
    if (logits && cache) cache->len = (int)(past + t);
    return logits;
}

struct pd_tensor *pd_llama_forward(struct pd_llama *m, struct pd_tensor *ids, struct pd_kv_cache *cache,
                                   struct pd_tensor *pad_mask)
{
    if (!m) return pdi_error(PD_ERR_NULL, "llama forward: model is NULL");
    if (!cache) return forward(m, ids, NULL, pad_mask, NULL);
    int mode = pd_no_grad_begin();
    struct pd_tensor *out = forward(m, ids, cache, pad_mask, NULL);
    pd_grad_mode_end(mode);
    return out;
}

struct pd_tensor *pd_llama_forward_packed(struct pd_llama *m, struct pd_tensor *ids, struct pd_tensor *doc_ids)
{
    if (!m) return pdi_error(PD_ERR_NULL, "llama forward_packed: model is NULL");
    if (!doc_ids) return pdi_error(PD_ERR_NULL, "llama forward_packed: doc_ids is NULL");
    return forward(m, ids, NULL, NULL, doc_ids);
}

/* Mean cross-entropy of logits [B, T, vocab] against targets (ids' shape). */
static struct pd_tensor *loss_of(struct pd_llama *m, struct pd_tensor *logits, struct pd_tensor *ids,
                                 struct pd_tensor *targets)
{
    if (!logits) return NULL;
    int64_t n = ids->shape[0] * ids->shape[1];
    /* -100 (Hugging Face's ignore index) is ignored as -1 is */
    struct pd_tensor *t = pd_reshape(targets, &n, 1);
    t = pd_where(pd_eq(t, pd_scalar(-100, PD_I64)), pd_scalar(-1, PD_I64), t);
    return pd_cross_entropy(pd_reshape(logits, (int64_t[]){n, m->cfg.vocab_size}, 2), t, -1, 0.0, PD_REDUCTION_MEAN);
}

static int check_targets(struct pd_tensor *ids, struct pd_tensor *targets)
{
    if (targets->ndim != ids->ndim || targets->dtype != PD_I64 ||
        (ids->ndim == 2 && (targets->shape[0] != ids->shape[0] || targets->shape[1] != ids->shape[1]))) {
        char a[PDI_SHAPE_BUF], b[PDI_SHAPE_BUF];
        return pdi_errorf(PD_ERR_INVALID, "llama loss: targets must be int64 with the shape of ids %s, got %s %s",
                          pdi_shape_str(ids->shape, ids->ndim, a, sizeof a), pd_dtype_name(targets->dtype),
                          pdi_shape_str(targets->shape, targets->ndim, b, sizeof b));
    }
    return PD_OK;
}

struct pd_tensor *pd_llama_loss(struct pd_llama *m, struct pd_tensor *ids, struct pd_tensor *targets)
{
    if (!m) return pdi_error(PD_ERR_NULL, "llama loss: model is NULL");
    if (!ids || !targets || check_targets(ids, targets)) return NULL;
    return loss_of(m, forward(m, ids, NULL, NULL, NULL), ids, targets);
}

struct pd_tensor *pd_llama_loss_packed(struct pd_llama *m, struct pd_tensor *ids, struct pd_tensor *targets,
                                       struct pd_tensor *doc_ids)
{
    if (!m) return pdi_error(PD_ERR_NULL, "llama loss_packed: model is NULL");
    if (!ids || !targets || check_targets(ids, targets)) return NULL;
    return loss_of(m, pd_llama_forward_packed(m, ids, doc_ids), ids, targets);
}
