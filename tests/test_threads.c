/* paddle.c tests — the threading contract (docs/reliability.md, "Threads and
 * fault injection"): independent models on different threads.
 *
 * Two threads start together (a barrier) and each, on its own objects:
 * builds a tiny Llama and AdamW, and for a few steps trains (forward, loss,
 * backward, clip, step) inside a scope, evaluates under no_grad, parses and
 * prints its model config as JSON, parses a tokenizer and encodes/decodes
 * with it, and provokes an error to check that pd_last_error is its own.
 * Then the same job runs alone on the main thread: every number must be the
 * same bit for bit (no thread saw another's modes, scopes, errors or
 * generators).
 *
 * The ThreadSanitizer build (-DPD_TSAN=ON, `make test-tsan`) runs this test;
 * it is the regression test of bug 18 of issue 12: the first forward on
 * both threads read PD_ATTN through a lazily set `static int` in
 * src/nn/attention.c (a data race TSan reports).
 */
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/pd.h"
#include "pd/data.h"
#include "pd/memory.h"
#include "pd/meta.h"
#include "pd/optim.h"
#include "tiny_llama.h"

#define STEPS 3
#define N_THREADS 2

static pthread_barrier_t start;

struct job {
    uint64_t seed;
    int first; /* the process's first forward (first round) */
    int ok;
    char err[256];
    double loss[STEPS], eval[STEPS];
    int64_t tokens;
};

static const char *tok_json =
    "{\"format\": \"paddlec-tokenizer\", \"version\": 1, \"type\": \"bpe\","
    " \"pretokenizer\": \"paddlec-bytes-v1\", \"vocab_size\": 259,"
    " \"merges\": [[97, 98], [256, 99]], \"special\": [{\"id\": 258, \"text\": \"<eos>\"}]}";

#define TRY(c)                                                                                     \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            snprintf(j->err, sizeof j->err, "line %d: %s: %s", __LINE__, #c, pd_last_error());   \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

static void run(struct job *j)
{
    struct pd_llama_config cfg = pt_tiny_llama_config(), cfg2;
    struct pd_llama *m = NULL;
    struct pd_optimizer *opt = NULL;
    struct pd_tokenizer *tok = NULL;
    char *json = NULL, *text = NULL;
    int32_t *ids32 = NULL;
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_ADAMW);
    oc.lr = 1e-2;
    int64_t ids[16], tgt[16], shape[2] = {2, 8};

    TRY(m = pd_llama_create(&cfg, j->seed));
    TRY(opt = pd_optimizer_create_for(&oc, pd_llama_state_dict(m)));
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < 16; i++)
            ids[i] = (int64_t)((i * 7 + 3 + s + j->seed) % 37), tgt[i] = (int64_t)((i * 5 + 1 + s) % 37);
        int scope = pd_scope_begin();
        TRY(scope > 0);
        struct pd_tensor *x = pd_from_buffer(ids, shape, 2, PD_I64), *y = pd_from_buffer(tgt, shape, 2, PD_I64);
        TRY(x && y);
        struct pd_tensor *loss = pd_llama_loss(m, x, y);
        TRY(loss && pd_backward(loss, NULL, 0) == 0);
        j->loss[s] = pd_item(loss);
        TRY(pd_optimizer_clip_grad_norm(opt, 0.5) >= 0);
        TRY(pd_optimizer_step(opt) == 0);
        pd_optimizer_zero_grad(opt);
        /* per-thread modes: eval without autograd */
        int ng = pd_no_grad_begin();
        TRY(ng > 0 && !pd_is_grad_enabled());
        struct pd_tensor *l2 = pd_llama_loss(m, x, y);
        TRY(l2 && !pd_tensor_requires_grad(l2));
        j->eval[s] = pd_item(l2);
        TRY(pd_grad_mode_end(ng) == 0 && pd_is_grad_enabled());
        TRY(pd_scope_end(scope) == 0);

        /* configs and tokenizers, parsed and printed concurrently */
        TRY(json = pd_llama_config_to_json(&cfg));
        TRY(pd_llama_config_from_json(&cfg2, json) == 0 && cfg2.dim == cfg.dim);
        TRY(pd_llama_config_from_json(&cfg2, "{\"dim\": [}") < 0);   /* a parse error, reported on this thread */
        TRY(strstr(pd_last_error(), "llama config"));
        free(json);
        json = NULL;
        TRY(tok = pd_tokenizer_from_json(tok_json));
        int64_t n = pd_tokenizer_encode(tok, "abcab abc ab", 12, &ids32);
        TRY(n > 0);
        j->tokens = n;
        TRY(text = pd_tokenizer_decode(tok, ids32, n, NULL));
        TRY(strcmp(text, "abcab abc ab") == 0);
        TRY(!pd_tokenizer_from_json("{\"format\": 1"));
        free(text), text = NULL;
        free(ids32), ids32 = NULL;
        pd_tokenizer_destroy(tok), tok = NULL;
    }
    /* the error of this thread is its own */
    pd_clear_error();
    for (int k = 0; k < 20; k++) { /* while the other thread fails its parses */
        TRY(json = pd_llama_config_to_json(&cfg));
        free(json), json = NULL;
    }
    TRY(strcmp(pd_last_error(), "no error") == 0);
    j->ok = 1;
out:
    free(json);
    free(text);
    free(ids32);
    pd_tokenizer_destroy(tok);
    pd_optimizer_destroy(opt);
    pd_llama_destroy(m);
}

/* Both threads' first forward, started together under the meta executor:
 * shapes only, so no kernel, allocator or cache takes a lock that would
 * order the two threads for TSan, and the first reads of process-wide
 * lazily initialised state (bug 18: PD_ATTN) race if they are not
 * synchronised. */
static void first_forward(struct job *j)
{
    struct pd_llama_config cfg = pt_tiny_llama_config();
    struct pd_llama *m = pd_llama_create(&cfg, j->seed);
    int64_t ids[16] = {0}, shape[2] = {2, 8};
    struct pd_tensor *x = pd_from_buffer(ids, shape, 2, PD_I64);
    pthread_barrier_wait(&start);
    int scope = pd_scope_begin(), tok = pd_meta_begin();
    struct pd_tensor *loss = m && x && tok > 0 ? pd_llama_loss(m, x, x) : NULL;
    if (!loss || !pd_tensor_is_meta(loss))
        snprintf(j->err, sizeof j->err, "first forward (meta): %s", pd_last_error());
    if (tok > 0) pd_meta_end(tok, NULL);
    if (scope > 0) pd_scope_end(scope);
    pd_tensor_release(x);
    pd_llama_destroy(m);
}

static void *thread_main(void *arg)
{
    struct job *j = arg;
    if (j->first) first_forward(j);
    else pthread_barrier_wait(&start);
    if (!j->err[0]) run(j);
    return NULL;
}

#if defined(PD_SANITIZE) || defined(PD_TSAN) || !defined(__GLIBC__)
static int thread_exit_frees(void) { return 0; } /* no free lists (sanitized), or a malloc mallinfo2 cannot see */
#else
/* Threads that make and drop tensors, then exit: their per-thread free
 * lists of tensor handles (src/core/tensor.c) must go with them. */
static void *churn(void *arg)
{
    struct pd_tensor *t[300];
    for (int i = 0; i < 300; i++) t[i] = pd_zeros((int64_t[]){4}, 1, PD_F32);
    for (int i = 0; i < 300; i++) pd_tensor_release(t[i]);
    return arg;
}

static int thread_exit_frees(void)
{
    mallopt(M_ARENA_MAX, 1); /* every thread's blocks in the arena mallinfo2 reports */
    pthread_t t;
    pthread_create(&t, NULL, churn, NULL); /* warm-up: keys, arena */
    pthread_join(t, NULL);
    size_t before = mallinfo2().uordblks;
    for (int k = 0; k < 20; k++) {
        pthread_create(&t, NULL, churn, NULL);
        pthread_join(t, NULL);
    }
    size_t after = mallinfo2().uordblks;
    if (after > before + 100000) {
        fprintf(stderr, "FAIL: 20 threads that exited left %zu bytes allocated\n", after - before);
        return 1;
    }
    return 0;
}
#endif

/* A plugged allocator without a lock. The host allocator takes one mutex per
 * allocation, and TSan orders everything one thread did before unlocking it
 * before what the other does after locking it: that hides races between
 * threads that both allocate often. The first round runs without it. */
static void *plain_alloc(void *ctx, size_t n) { return aligned_alloc(64, n ? (n + 63) & ~(size_t)63 : 64); }
static void plain_free(void *ctx, void *p, size_t n) { free(p); }
static const struct pd_allocator plain = {PD_ALLOCATOR_ABI, "plain", NULL, plain_alloc, plain_free, NULL, NULL, NULL};

static int round_of(const struct pd_allocator *a, const char *what, int first)
{
    struct job jobs[N_THREADS], alone;
    pthread_t th[N_THREADS];
    if (pd_allocator_set_default(a)) {
        fprintf(stderr, "FAIL: set_default: %s\n", pd_last_error());
        return 1;
    }
    memset(jobs, 0, sizeof jobs);
    pthread_barrier_init(&start, NULL, N_THREADS);
    for (int i = 0; i < N_THREADS; i++) {
        jobs[i].seed = 11 + (uint64_t)i;
        jobs[i].first = first;
        if (pthread_create(&th[i], NULL, thread_main, &jobs[i])) {
            fprintf(stderr, "FAIL: pthread_create\n");
            return 1;
        }
    }
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);

    int failures = 0;
    for (int i = 0; i < N_THREADS; i++) {
        memset(&alone, 0, sizeof alone);
        alone.seed = jobs[i].seed;
        run(&alone);
        if (!jobs[i].ok || !alone.ok) {
            fprintf(stderr, "FAIL thread %d: %s%s\n", i, jobs[i].err, alone.err);
            failures++;
            continue;
        }
        if (memcmp(jobs[i].loss, alone.loss, sizeof alone.loss) || memcmp(jobs[i].eval, alone.eval, sizeof alone.eval) ||
            jobs[i].tokens != alone.tokens) {
            fprintf(stderr, "FAIL thread %d: numbers differ from the same job alone (loss %.9g vs %.9g)\n", i,
                    jobs[i].loss[0], alone.loss[0]);
            failures++;
        }
        printf("%s allocator, thread %d: losses %.6f %.6f %.6f, the same alone\n", what, i, jobs[i].loss[0],
               jobs[i].loss[1], jobs[i].loss[2]);
    }
    pd_allocator_set_default(NULL);
    return failures;
}

int main(void)
{
    int failures = round_of(&plain, "lock-free", 1);
    failures += round_of(pd_allocator_host(), "host", 0);
    failures += thread_exit_frees();
    if (pd_live_tensors() != 0) {
        fprintf(stderr, "FAIL: %lld tensors alive at the end\n", (long long)pd_live_tensors());
        failures++;
    }
    return failures ? 1 : 0;
}
