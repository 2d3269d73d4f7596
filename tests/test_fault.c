/* paddle.c tests — fault injection (pd_fault_inject, include/pd/memory.h):
 * sqlite's OOM testing over one training step and a checkpoint round trip.
 *
 * One "job" is: build a tiny Llama and AdamW, forward + loss, backward, clip,
 * optimizer step; save a checkpoint (parameters, optimizer state, the config
 * as JSON) and load it into a second model and optimizer, parse a tokenizer
 * and encode with it, then step the restored pair once more. For
 * N = 1, 1 + stride, ... the Nth allocation of the job fails, and:
 *   - the job reports the failure: NULL or a negative status and a one-line
 *     pd_last_error() (or, if the library absorbed the failure, it finishes
 *     with the reference numbers);
 *   - nothing leaks: live tensors and live blocks of the host allocator are
 *     back to where they were (and LeakSanitizer checks malloc'd memory in
 *     the sanitized build, with the allocator's cache off);
 *   - the process is usable: scopes and grad mode are as before, and the
 *     same job with injection off gives the reference numbers bit for bit.
 * The sweep stops at the first N past the job's last allocation. Four more
 * jobs get the same sweep and checks: KV-cache generation (greedy and
 * sampled, padded prompts), the text dataset from memory with its batches
 * and iterator, BPE training with encode/decode and the JSON round trip, and
 * the AMP grad scaler (a scaled step, its state saved and loaded).
 *
 *   test_fault [stride [persist [first]]]   (first and stride: of the big job)
 *       stride 0: a default that keeps the run to a few seconds;
 *       persist 1: the Nth allocation and every later one fail;
 *       first: the first N (to rerun one case); PD_FAULT_TRACE=1 prints
 *       each N before its trial; PD_FAULT_JOB=name runs only that job.
 * `make faultinject` runs stride 1, single and persistent.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pd/pd.h"
#include "pd/amp.h"
#include "pd/generate.h"
#include "pd/data.h"
#include "pd/flashmask.h"
#include "pd/io.h"
#include "pd/memory.h"
#include "pd/optim.h"
#include "tiny_llama.h"

static int failures;
#define CHECK(c, ...)                                                  \
    do {                                                               \
        if (!(c)) {                                                    \
            failures++;                                                \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
        }                                                              \
    } while (0)

struct result {
    double loss, gnorm, loss2;
    uint64_t params;      /* FNV-1a of every parameter of the restored model after its step */
    int64_t n_tokens;
};

static char ckpt_path[256];

static const char *tok_json =
    "{\"format\": \"paddlec-tokenizer\", \"version\": 1, \"type\": \"bpe\","
    " \"pretokenizer\": \"paddlec-bytes-v1\", \"vocab_size\": 259,"
    " \"merges\": [[97, 98], [256, 99]], \"special\": [{\"id\": 258, \"text\": \"<eos>\"}]}";

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* 0 on success; -1 when a call failed (its error is on this thread). */
static int job(struct result *r)
{
    int rc = -1;
    struct pd_llama *m = NULL, *m2 = NULL;
    struct pd_optimizer *opt = NULL, *opt2 = NULL;
    struct pd_state_dict *sd = NULL, *ck = NULL, *part = NULL;
    struct pd_tokenizer *tok = NULL;
    char *mj = NULL, *text = NULL;
    int32_t *tok_ids = NULL;
    float *buf = NULL;
    int scope = pd_scope_begin();
    if (scope < 0) return -1;

    struct pd_llama_config cfg = pt_tiny_llama_config(), cfg2;
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    oc.lr = 1e-2;
    int64_t ids[2 * 8], tgt[2 * 8], shape[2] = {2, 8};
    for (int i = 0; i < 16; i++) ids[i] = (i * 7 + 3) % 37, tgt[i] = (i * 5 + 1) % 37;

    if (!(m = pd_llama_create(&cfg, 1))) goto out;
    if (!(opt = pd_optimizer_create_for(&oc, pd_llama_state_dict(m)))) goto out;
    struct pd_tensor *x = pd_from_buffer(ids, shape, 2, PD_I64), *y = pd_from_buffer(tgt, shape, 2, PD_I64);
    if (!x || !y) goto out;
    struct pd_tensor *loss = pd_llama_loss(m, x, y);
    if (!loss || pd_backward(loss, NULL, 0)) goto out;
    r->loss = pd_item(loss);
    if (isnan(r->loss)) goto out;
    if ((r->gnorm = pd_optimizer_clip_grad_norm(opt, 0.5)) < 0) goto out;
    if (pd_optimizer_step(opt)) goto out;
    pd_optimizer_zero_grad(opt);

    /* checkpoint: save, load into a fresh model and optimizer */
    if (!(sd = pd_state_dict_create())) goto out;
    const struct pd_state_dict *params = pd_llama_state_dict(m);
    for (int i = 0; i < pd_state_dict_size(params); i++)
        if (pd_state_dict_add(sd, pd_state_dict_name(params, i), pd_state_dict_tensor(params, i))) goto out;
    if (pd_optimizer_state_dict(opt, sd, "optim.")) goto out;
    if (!(mj = pd_llama_config_to_json(&cfg))) goto out;
    /* on one line: an out-of-memory inside cJSON's parse reads as a parse
     * error that quotes the text near the failure (one line once issue 12
     * bug 17 escapes quoted input) */
    size_t w = 0;
    for (size_t i = 0; mj[i]; i++)
        if (mj[i] != '\n' && mj[i] != '\t') mj[w++] = mj[i];
    mj[w] = 0;
    if (pd_state_dict_set_meta(sd, "model_config", mj)) goto out;
    if (pd_safetensors_save(ckpt_path, sd)) goto out;
    if (!(ck = pd_safetensors_load(ckpt_path))) goto out;
    const char *cj = pd_state_dict_get_meta(ck, "model_config");
    if (!cj || pd_llama_config_from_json(&cfg2, cj)) goto out;
    if (!(m2 = pd_llama_create(&cfg2, 2))) goto out;
    if (!(opt2 = pd_optimizer_create_for(&oc, pd_llama_state_dict(m2)))) goto out;
    if (!(part = pd_state_dict_create())) goto out;
    for (int i = 0; i < pd_state_dict_size(ck); i++)
        if (strncmp(pd_state_dict_name(ck, i), "optim.", 6) &&
            pd_state_dict_add(part, pd_state_dict_name(ck, i), pd_state_dict_tensor(ck, i)))
            goto out;
    if (pd_state_dict_load(pd_llama_state_dict(m2), part, 1, NULL, 0)) goto out;
    if (pd_optimizer_load_state_dict(opt2, ck, "optim.")) goto out;

    /* a tokenizer from JSON, and encode */
    if (!(tok = pd_tokenizer_from_json(tok_json))) goto out;
    int64_t nt = pd_tokenizer_encode(tok, "abcab abc", 9, &tok_ids);
    if (nt < 0) goto out;
    r->n_tokens = nt; /* and the ids */
    for (int64_t i = 0; i < nt; i++) r->n_tokens = r->n_tokens * 300 + tok_ids[i];
    if (!(text = pd_tokenizer_decode(tok, tok_ids, nt, NULL))) goto out;
    if (strcmp(text, "abcab abc")) goto out;

    /* the restored pair steps on */
    struct pd_tensor *loss2 = pd_llama_loss(m2, x, y);
    if (!loss2 || pd_backward(loss2, NULL, 0)) goto out;
    r->loss2 = pd_item(loss2);
    if (isnan(r->loss2)) goto out;
    if (pd_optimizer_step(opt2)) goto out;
    const struct pd_state_dict *p2 = pd_llama_state_dict(m2);
    r->params = 14695981039346656037ull;
    for (int i = 0; i < pd_state_dict_size(p2); i++) {
        struct pd_tensor *t = pd_state_dict_tensor(p2, i);
        size_t n = (size_t)pd_tensor_numel(t);
        float *nb = realloc(buf, n * sizeof *buf);
        if (!nb) goto out;
        buf = nb;
        if (pd_to_buffer(t, buf, PD_F32)) goto out;
        r->params = fnv(r->params, buf, n * sizeof *buf);
    }
    rc = 0;
out:
    free(buf);
    free(mj);
    free(text);
    free(tok_ids);
    pd_tokenizer_destroy(tok);
    pd_state_dict_destroy(part);
    pd_state_dict_destroy(ck);
    pd_state_dict_destroy(sd);
    pd_optimizer_destroy(opt2);
    pd_optimizer_destroy(opt);
    pd_llama_destroy(m2);
    pd_llama_destroy(m);
    pd_scope_end(scope);
    return rc;
}

static int same(const struct result *a, const struct result *b)
{
    return memcmp(&a->loss, &b->loss, sizeof a->loss) == 0 && memcmp(&a->gnorm, &b->gnorm, sizeof a->gnorm) == 0 &&
           memcmp(&a->loss2, &b->loss2, sizeof a->loss2) == 0 && a->params == b->params && a->n_tokens == b->n_tokens;
}

static int64_t live_blocks(void)
{
    struct pd_memory_stats s;
    pd_memory_stats(&s);
    return s.n_live;
}

/* A single multi-output op with autograd: FlashMask attention (out and
 * lse, both saved for backward) forward, sum, backward. Swept at stride 1
 * by make test: issue 12's fault sweep found that a failure while saving
 * the second output freed the grad node the first output already pointed
 * to (src/autograd/node.c). */
static int job_attention(struct result *r)
{
    int rc = -1, scope = pd_scope_begin();
    if (scope < 0) return -1;
    struct pd_generator *g = pd_generator_create(5);
    int64_t shape[4] = {1, 8, 2, 4};
    struct pd_tensor *q = NULL, *k = NULL, *v = NULL, *lse = NULL;
    if (!g) goto out;
    q = pd_requires_grad_(pd_randn(shape, 4, PD_F32, g), 1);
    k = pd_requires_grad_(pd_randn(shape, 4, PD_F32, g), 1);
    v = pd_requires_grad_(pd_randn(shape, 4, PD_F32, g), 1);
    if (!q || !k || !v) goto out;
    struct pd_tensor *o = pd_flashmask_attention(q, k, v, NULL, 1, NULL, 0.5, 0.0, &lse);
    struct pd_tensor *l = o && lse ? pd_add(pd_sum(o, NULL, 0, 0), pd_sum(lse, NULL, 0, 0)) : NULL;
    if (!l || pd_backward(l, NULL, 0)) goto out;
    r->loss = pd_item(l);
    r->gnorm = pd_item(pd_sum(pd_tensor_grad(q), NULL, 0, 0));
    if (isnan(r->loss) || isnan(r->gnorm)) goto out;
    rc = 0;
out:
    pd_generator_destroy(g);
    pd_scope_end(scope);
    return rc;
}

/* ---- the jobs of issue 12's fault coverage (docs/reliability.md) ---------- */

/* Hashes the int64 tensor t into *h; -1 if it cannot be read. */
static int fnv_ids(uint64_t *h, struct pd_tensor *t)
{
    int64_t buf[64], n = pd_tensor_numel(t);
    if (n > 64 || pd_to_buffer(t, buf, PD_I64)) return -1;
    *h = fnv(*h, buf, (size_t)n * sizeof *buf);
    return 0;
}

/* KV-cache generation: two prompts of different lengths (left-padded),
 * greedy, then sampled from a seeded generator. */
static int job_generate(struct result *r)
{
    int rc = -1, scope = pd_scope_begin();
    if (scope < 0) return -1;
    struct pd_llama_config cfg = pt_tiny_llama_config();
    struct pd_llama *m = pd_llama_create(&cfg, 3);
    struct pd_generator *g = pd_generator_create(11);
    struct pd_generation *gen[2] = {NULL, NULL};
    int64_t p0[] = {1, 2, 3, 4, 5}, p1[] = {7, 8};
    const int64_t *prompts[] = {p0, p1};
    int lens[] = {5, 2};
    if (!m || !g) goto out;
    struct pd_generate_config c;
    pd_generate_config_default(&c);
    c.max_new_tokens = 4;
    if (!(gen[0] = pd_generate(m, prompts, lens, 2, &c, NULL))) goto out;
    c.temperature = 0.9, c.top_k = 8, c.top_p = 0.95;
    if (!(gen[1] = pd_generate(m, prompts, lens, 2, &c, g))) goto out;
    r->params = 14695981039346656037ull;
    for (int k = 0; k < 2; k++)
        for (int row = 0; row < pd_generation_rows(gen[k]); row++) {
            int n = pd_generation_len(gen[k], row);
            r->n_tokens += n;
            r->params = fnv(r->params, pd_generation_tokens(gen[k], row), (size_t)n * sizeof(int64_t));
        }
    rc = 0;
out:
    pd_generation_destroy(gen[0]);
    pd_generation_destroy(gen[1]);
    pd_generator_destroy(g);
    pd_llama_destroy(m);
    pd_scope_end(scope);
    return rc;
}

static const char corpus[] =
    "the cat sat on the mat. the dog sat on the log. a cat and a dog sat on a mat and a log.\n"
    "the mat was flat, the log was round; the cat was fat and the dog was found.\n";

/* The text dataset from memory (through a BPE tokenizer), random batches
 * and the sequential iterator over the validation split. */
static int job_dataset(struct result *r)
{
    int rc = -1, scope = pd_scope_begin();
    if (scope < 0) return -1;
    struct pd_tokenizer *tok = pd_tokenizer_from_json(tok_json);
    struct pd_text_dataset *ds = NULL;
    struct pd_dataset_iter *it = NULL;
    struct pd_generator *g = pd_generator_create(3);
    int32_t ids32[16];
    if (!tok || !g) goto out;
    if (!(ds = pd_text_dataset_from_memory(corpus, sizeof corpus - 1, tok, 0.25))) goto out;
    r->n_tokens = pd_text_dataset_num_tokens(ds, PD_SPLIT_TRAIN) * 1000 + pd_text_dataset_num_tokens(ds, PD_SPLIT_VAL);
    r->params = 14695981039346656037ull;
    if (pd_text_dataset_ids(ds, PD_SPLIT_VAL, 0, 16, ids32)) goto out;
    r->params = fnv(r->params, ids32, sizeof ids32);
    for (int k = 0; k < 2; k++) {
        struct pd_tensor *x = NULL, *y = NULL;
        if (pd_dataset_batch(ds, PD_SPLIT_TRAIN, 3, 8, g, &x, &y)) goto out;
        if (fnv_ids(&r->params, x) || fnv_ids(&r->params, y)) goto out;
    }
    if (!(it = pd_dataset_iter_create(ds, PD_SPLIT_VAL, 2, 6))) goto out;
    r->loss = (double)pd_dataset_iter_num_windows(it);
    for (int pass = 0; pass < 2; pass++, pd_dataset_iter_reset(it)) {
        struct pd_tensor *x, *y;
        int b;
        while ((b = pd_dataset_iter_next(it, &x, &y)) > 0) {
            r->gnorm += b;
            if (fnv_ids(&r->params, x) || fnv_ids(&r->params, y)) goto out;
        }
        if (b < 0) goto out;
    }
    rc = 0;
out:
    pd_dataset_iter_destroy(it);
    pd_text_dataset_destroy(ds);
    pd_generator_destroy(g);
    pd_tokenizer_destroy(tok);
    pd_scope_end(scope);
    return rc;
}

/* BPE training on a small text with two specials, encode, decode, and the
 * tokenizer's JSON round trip. */
static int job_bpe(struct result *r)
{
    int rc = -1;
    static const char *const special[] = {"<eos>", "<pad>"};
    struct pd_bpe_options bo = {2, 2, special};
    struct pd_tokenizer *tok = NULL, *tok2 = NULL;
    int32_t *ids = NULL, *ids2 = NULL;
    char *text = NULL, *json = NULL;
    if (!(tok = pd_bpe_train(corpus, sizeof corpus - 1, 300, &bo))) goto out;
    int64_t n = pd_tokenizer_encode(tok, corpus, sizeof corpus - 1, &ids);
    if (n < 0) goto out;
    size_t len = 0;
    if (!(text = pd_tokenizer_decode(tok, ids, n, &len))) goto out;
    if (len != sizeof corpus - 1 || memcmp(text, corpus, len)) goto out;
    if (!(json = pd_tokenizer_to_json(tok))) goto out;
    if (!(tok2 = pd_tokenizer_from_json(json))) goto out;
    if (pd_tokenizer_encode(tok2, corpus, sizeof corpus - 1, &ids2) != n || memcmp(ids, ids2, (size_t)n * sizeof *ids))
        goto out;
    r->n_tokens = n * 1000 + pd_tokenizer_vocab_size(tok);
    r->params = fnv(fnv(14695981039346656037ull, ids, (size_t)n * sizeof *ids), json, strlen(json));
    rc = 0;
out:
    free(ids);
    free(ids2);
    free(text);
    free(json);
    pd_tokenizer_destroy(tok);
    pd_tokenizer_destroy(tok2);
    return rc;
}

/* The AMP gradient scaler: a scaled step of a tiny Llama (unscale, clip,
 * step, update), then its state saved and loaded into a second scaler. */
static int job_scaler(struct result *r)
{
    int rc = -1, scope = pd_scope_begin();
    if (scope < 0) return -1;
    struct pd_llama_config cfg = pt_tiny_llama_config();
    struct pd_llama *m = pd_llama_create(&cfg, 4);
    struct pd_optimizer *opt = NULL;
    struct pd_grad_scaler *s = NULL, *s2 = NULL;
    struct pd_state_dict *sd = NULL;
    struct pd_grad_scaler_config sc;
    pd_grad_scaler_config_default(&sc);
    sc.init_scale = 1024, sc.growth_interval = 1;
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    int64_t ids[16], tgt[16], shape[2] = {2, 8};
    for (int i = 0; i < 16; i++) ids[i] = (i * 3 + 2) % 37, tgt[i] = (i * 11 + 4) % 37;
    if (!m || !(opt = pd_optimizer_create_for(&oc, pd_llama_state_dict(m)))) goto out;
    if (!(s = pd_grad_scaler_create(&sc)) || !(s2 = pd_grad_scaler_create(NULL))) goto out;
    struct pd_tensor *x = pd_from_buffer(ids, shape, 2, PD_I64), *y = pd_from_buffer(tgt, shape, 2, PD_I64);
    struct pd_tensor *loss = x && y ? pd_llama_loss(m, x, y) : NULL;
    struct pd_tensor *scaled = loss ? pd_grad_scaler_scale(s, loss) : NULL;
    if (!scaled || pd_backward(scaled, NULL, 0)) goto out;
    r->loss = pd_item(loss);
    if (isnan(r->loss) || pd_grad_scaler_unscale(s, opt)) goto out;
    if ((r->gnorm = pd_optimizer_clip_grad_norm(opt, 1.0)) < 0) goto out;
    if (pd_grad_scaler_step(s, opt) != 1 || pd_grad_scaler_update(s)) goto out;
    if (!(sd = pd_state_dict_create()) || pd_grad_scaler_state_dict(s, sd, "scaler.")) goto out;
    if (pd_grad_scaler_load_state_dict(s2, sd, "scaler.")) goto out;
    r->loss2 = pd_grad_scaler_get_scale(s2);
    r->n_tokens = pd_grad_scaler_skipped_steps(s2);
    struct pd_tensor *w = pd_state_dict_tensor(pd_llama_state_dict(m), 0);
    float wb[64];
    if (pd_tensor_numel(w) < 64) goto out;
    struct pd_tensor *w64 = pd_slice(pd_reshape(w, (int64_t[]){-1}, 1), 0, 0, 64, 1);
    if (!w64 || pd_to_buffer(w64, wb, PD_F32)) goto out;
    r->params = fnv(14695981039346656037ull, wb, sizeof wb);
    rc = 0;
out:
    pd_state_dict_destroy(sd);
    pd_grad_scaler_destroy(s2);
    pd_grad_scaler_destroy(s);
    pd_optimizer_destroy(opt);
    pd_llama_destroy(m);
    pd_scope_end(scope);
    return rc;
}

/* Regression jobs swept at every N by make test (small enough to be fast):
 * a padded greedy generation of two tokens (a pad mask that could not be
 * made ran the step unmasked) and a tokenizer's to_json (an add that ran out
 * of memory dropped a field). */
static int job_generate_padded(struct result *r)
{
    int rc = -1, scope = pd_scope_begin();
    if (scope < 0) return -1;
    struct pd_llama_config cfg = pt_tiny_llama_config();
    cfg.n_layers = 1;
    struct pd_llama *m = pd_llama_create(&cfg, 3);
    struct pd_generation *gen = NULL;
    int64_t p0[] = {1, 2, 3}, p1[] = {7};
    const int64_t *prompts[] = {p0, p1};
    int lens[] = {3, 1};
    struct pd_generate_config c;
    pd_generate_config_default(&c);
    c.max_new_tokens = 2;
    if (!m || !(gen = pd_generate(m, prompts, lens, 2, &c, NULL))) goto out;
    r->params = 14695981039346656037ull;
    for (int row = 0; row < 2; row++)
        r->params = fnv(r->params, pd_generation_tokens(gen, row), (size_t)pd_generation_len(gen, row) * sizeof(int64_t));
    rc = 0;
out:
    pd_generation_destroy(gen);
    pd_llama_destroy(m);
    pd_scope_end(scope);
    return rc;
}

static int job_tokenizer_json(struct result *r)
{
    int rc = -1;
    char *json = NULL;
    struct pd_tokenizer *tok = pd_tokenizer_from_json(tok_json);
    if (!tok || pd_tokenizer_add_special(tok, "<pad>") < 0 || !(json = pd_tokenizer_to_json(tok))) goto out;
    r->params = fnv(14695981039346656037ull, json, strlen(json));
    rc = 0;
out:
    free(json);
    pd_tokenizer_destroy(tok);
    return rc;
}

struct sweep_opts {
    int64_t stride, first, samples; /* samples: trials when stride is 0 (default 97) */
    int persist, trace;
};

/* The sweep of one job (see the top of the file). */
static void sweep(const char *name, int (*job_fn)(struct result *), struct sweep_opts o)
{
    struct result ref = {0}, r;
    int failures0 = failures;
    const char *only = getenv("PD_FAULT_JOB");
    if (only && strcmp(only, name)) return;
    /* a warm-up run (lazy one-time state: kernel tables, oneDNN primitives)
     * and the reference */
    CHECK(job_fn(&ref) == 0, "%s: warm-up failed: %s", name, pd_last_error());
    pd_fault_inject(INT64_MAX, 0); /* count only */
    memset(&ref, 0, sizeof ref);
    CHECK(job_fn(&ref) == 0, "%s: reference failed: %s", name, pd_last_error());
    int64_t total = pd_fault_count();
    pd_fault_inject(0, 0);
    CHECK(total > 10, "%s: only %lld allocations counted", name, (long long)total);
    int64_t samples = o.samples > 0 ? o.samples : 97; /* about a hundred trials */
    int64_t stride = o.stride > 0 ? o.stride : total / samples + 1;
    printf("%s: %lld allocations; stride %lld%s\n", name, (long long)total, (long long)stride,
           o.persist ? ", persistent failures" : "");

    const int64_t tensors0 = pd_live_tensors(), blocks0 = live_blocks();
    int64_t trials = 0, errors = 0, absorbed = 0;
    for (int64_t n = o.first < 1 ? 1 : o.first;; n += stride) {
        if (o.trace) fprintf(stderr, "%s: n=%lld\n", name, (long long)n);
        memset(&r, 0, sizeof r);
        pd_clear_error();
        pd_fault_inject(n, o.persist);
        int rc = job_fn(&r);
        int64_t hits = pd_fault_hits();
        pd_fault_inject(0, 0);
        if (!hits) { /* n is past the job's last allocation */
            CHECK(rc == 0 && same(&r, &ref), "%s: n=%lld: no fault injected, yet the job differs", name,
                  (long long)n);
            break;
        }
        trials++;
        if (rc) {
            errors++;
            const char *msg = pd_last_error();
            CHECK(pd_last_status() < 0 && strcmp(msg, "no error") != 0, "%s: n=%lld: failed without an error",
                  name, (long long)n);
            CHECK(!strchr(msg, '\n'), "%s: n=%lld: error of several lines: %s", name, (long long)n, msg);
        } else {
            absorbed++;
            CHECK(same(&r, &ref), "%s: n=%lld: the failure was absorbed but the numbers differ (loss %.9g vs %.9g)",
                  name, (long long)n, r.loss, ref.loss);
        }
        CHECK(pd_live_tensors() == tensors0, "%s: n=%lld: %lld tensors leaked (%s)", name, (long long)n,
              (long long)(pd_live_tensors() - tensors0), pd_last_error());
        CHECK(live_blocks() == blocks0, "%s: n=%lld: %lld blocks leaked (%s)", name, (long long)n,
              (long long)(live_blocks() - blocks0), pd_last_error());
        CHECK(pd_scope_depth() == 0 && pd_is_grad_enabled(), "%s: n=%lld: scopes or grad mode left changed", name,
              (long long)n);
        /* usable: the same job again, without injection */
        memset(&r, 0, sizeof r);
        CHECK(job_fn(&r) == 0 && same(&r, &ref), "%s: n=%lld: the job after the failure differs: %s", name,
              (long long)n, pd_last_error());
        if (failures > 20) break;
    }
    printf("%s: %lld trials: %lld errors, %lld absorbed, %d check failures\n", name, (long long)trials,
           (long long)errors, (long long)absorbed, failures - failures0);
}

int main(int argc, char **argv)
{
    struct sweep_opts o = {.stride = argc > 1 ? atoll(argv[1]) : 0, .first = argc > 3 ? atoll(argv[3]) : 1,
                           .persist = argc > 2 ? atoi(argv[2]) : 0, .trace = getenv("PD_FAULT_TRACE") != NULL};
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* on tmpfs where there is one: each save fsyncs */
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(ckpt_path, sizeof ckpt_path, "%s/pd_test_fault_%d.safetensors", dir, (int)getpid());

    struct sweep_opts every = o;
    every.stride = 1, every.first = 1;
    sweep("attention", job_attention, every);
    sweep("generate-padded", job_generate_padded, every);
    sweep("tokenizer-json", job_tokenizer_json, every);
    sweep("step+checkpoint", job, o);
    struct sweep_opts fewer = o; /* keeps make test fast */
    fewer.samples = 40;
    sweep("generate", job_generate, fewer);
    sweep("dataset", job_dataset, fewer);
    sweep("bpe", job_bpe, fewer);
    sweep("scaler", job_scaler, fewer);
    unlink(ckpt_path);
    return failures ? 1 : 0;
}
