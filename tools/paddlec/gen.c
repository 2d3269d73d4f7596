/* paddle.c — paddlec generate: the prompt's sources, --stop on a text of any
 * length, the context limit (--ctx) and the interactive mode (gen.h).
 *
 * The context limit is --ctx, or the model's max_seq_len (its training
 * length) without it. Past the training length RoPE positions are computed
 * all the same (src/nn/llama.c): the KV cache is sized to the limit and one
 * warning says that the model is used beyond what it was trained on.
 * Everything made here is held (cli_hold) as soon as it exists, so that
 * every exit frees it; the library calls back into this file only through
 * on_token, which never exits.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen.h"

void cli_short_option(int argc, char **argv, struct cli_opt *opts, const char *shrt, const char *lng)
{
    for (int i = 0; i < argc; i++) {
        const char *prev = i ? argv[i - 1] : "";
        struct cli_opt *o = !strncmp(prev, "--", 2) && !strchr(prev, '=') ? cli_find(opts, prev + 2) : NULL;
        if (!strcmp(argv[i], shrt) && !(o && o->kind != CLI_FLAG)) argv[i] = (char *)lng;
    }
}

/* Standard input up to EOF (at most CLI_MAX_TEXT bytes), NUL-terminated. */
static char *read_stdin(void)
{
    size_t len = 0, cap = 4096;
    char *buf = cli_hold(malloc(cap), free);
    if (!buf) cli_fail(CLI_EXIT_FAIL, "out of memory");
    for (size_t k; (k = fread(buf + len, 1, cap - 1 - len, stdin)) > 0;) {
        len += k;
        if (len + 1 < cap) continue;
        if (cap > CLI_MAX_TEXT) cli_fail(CLI_EXIT_USAGE, "the prompt on standard input is over %zu bytes", CLI_MAX_TEXT);
        cli_drop(buf);
        char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            cli_fail(CLI_EXIT_FAIL, "out of memory");
        }
        buf = cli_hold(grown, free);
        cap *= 2;
    }
    if (ferror(stdin)) cli_fail(CLI_EXIT_FAIL, "cannot read the prompt from standard input");
    buf[len] = 0;
    return buf;
}

char *gen_prompt_text(const char *prompt, const char *prompt_file)
{
    if (prompt && prompt_file) cli_fail(CLI_EXIT_USAGE, "give --prompt or --prompt-file, not both");
    if (prompt_file) return cli_hold(cli_read_file(prompt_file, CLI_MAX_TEXT, NULL), free);
    if (prompt && !strcmp(prompt, "-")) return read_stdin();
    if (!prompt) return NULL;
    char *copy = cli_hold(strdup(prompt), free);
    if (!copy) cli_fail(CLI_EXIT_FAIL, "out of memory");
    return copy;
}

/* ---- stopping on a text, streaming ------------------------------------------ */

/* The text generated so far in this turn, token by token, searched for the
 * stop text where the last token could complete it. When streaming
 * (interactive), what cannot be part of a stop text any more is printed as
 * it comes. */
struct stop_match {
    const struct pd_tokenizer *tok;
    const char *stop;    /* NULL: none */
    size_t stop_len;
    char *text;
    size_t len, cap;
    int stream, found;
    size_t printed, cut;   /* bytes printed; the end of the first stop text */
};

static void dtor_stop(void *p)
{
    free(((struct stop_match *)p)->text);
    free(p);
}

/* Prints text[printed, upto). */
static void emit(struct stop_match *sm, size_t upto)
{
    if (upto <= sm->printed) return;
    fwrite(sm->text + sm->printed, 1, upto - sm->printed, stdout);
    fflush(stdout);
    sm->printed = upto;
}

static int on_token(void *user, int row, const int64_t *tokens, int n)
{
    struct stop_match *sm = user;
    int32_t id = (int32_t)tokens[n - 1];
    size_t k = 0;
    (void)row;
    /* the token's own bytes (a leading space kept: decoding it alone would drop
     * a SentencePiece-style one), the way to stream (include/pd/data.h) */
    const unsigned char *s = pd_tokenizer_token(sm->tok, id, &k);
    if (!s) return 1;   /* cannot happen for a sampled id; stopping is the safe answer */
    if (sm->len + k + 1 > sm->cap) {
        size_t cap = 2 * (sm->len + k + 1);
        char *grown = realloc(sm->text, cap);
        if (!grown) return 1;
        sm->text = grown;
        sm->cap = cap;
    }
    size_t from = sm->stop && sm->len >= sm->stop_len ? sm->len - sm->stop_len + 1 : 0;
    memcpy(sm->text + sm->len, s, k);
    sm->len += k;
    for (size_t i = from; sm->stop && i + sm->stop_len <= sm->len; i++)
        if (!memcmp(sm->text + i, sm->stop, sm->stop_len)) {
            sm->found = 1;
            sm->cut = i + sm->stop_len;
            break;
        }
    if (sm->stream) {
        size_t safe = sm->len;   /* a stop text may begin in the last stop_len - 1 bytes: held back */
        if (sm->stop) safe = sm->len >= sm->stop_len ? sm->len - sm->stop_len + 1 : 0;
        emit(sm, sm->found ? sm->cut : safe);
    }
    return sm->found;
}

/* The callback for a stop text, or for streaming (sm held). */
static struct stop_match *stop_setup(struct gen_run *r, int stream)
{
    if (!r->stop && !stream) return NULL;
    struct stop_match *sm = cli_hold(calloc(1, sizeof *sm), dtor_stop);
    if (!sm) cli_fail(CLI_EXIT_FAIL, "out of memory");
    sm->tok = r->cm->tok;
    sm->stop = r->stop;
    sm->stop_len = r->stop ? strlen(r->stop) : 0;
    sm->stream = stream;
    r->gc.on_token = on_token;
    r->gc.on_token_user = sm;
    return sm;
}

/* The decoded continuation (held), cut after the first stop text. */
static char *continuation(struct gen_run *r, const struct pd_generation *out)
{
    char *cont = cli_hold(cli_decode(r->cm->tok, pd_generation_tokens(out, 0), pd_generation_len(out, 0)), free);
    char *at = r->stop ? strstr(cont, r->stop) : NULL;
    if (at) at[strlen(r->stop)] = 0;
    return cont;
}

/* ---- the context limit -------------------------------------------------------- */

static int ctx_limit(const struct gen_run *r) { return r->ctx > 0 ? r->ctx : r->cm->cfg.max_seq_len; }

/* One warning when a context of `used` positions passes the training length. */
static void warn_long(const struct gen_run *r, int used, int *warned)
{
    int train_len = r->cm->cfg.max_seq_len;
    if (*warned || used <= train_len) return;
    *warned = 1;
    fprintf(stderr,
            "paddlec generate: warning: the context reaches %d tokens, past the model's training length "
            "(max_seq_len %d): RoPE positions beyond it are extrapolated and the output may degrade\n",
            used, train_len);
}

static void report(int tokens, double dt, int turns)
{
    char t[32] = "";
    if (turns >= 0) snprintf(t, sizeof t, "%d turns, ", turns);
    fprintf(stderr, "paddlec generate: %s%d tokens in %.3f s (%.1f tokens/s)\n", t, tokens, dt,
            tokens / (dt > 0 ? dt : 1e-9));
}

/* The prompt's ids; the first segment of a conversation starts with the
 * tokenizer's BOS when its file names one (a Hugging Face post-processor:
 * Llama 2's <s>, Llama 3's <|begin_of_text|>), as transformers encodes it. */
static int64_t *encode_prompt(const struct pd_tokenizer *tok, const char *text, int *n, int first)
{
    int64_t *ids = cli_encode(tok, text, n);
    return first ? cli_with_bos(tok, ids, n) : ids;
}

int gen_once(struct gen_run *r)
{
    int n, limit = ctx_limit(r), warned = 0;
    int64_t *ids = cli_hold(encode_prompt(r->cm->tok, r->text, &n, 1), free);
    if (n < 1) cli_fail(CLI_EXIT_USAGE, "the prompt is empty");
    if (n >= limit)
        cli_fail(CLI_EXIT_USAGE, "the prompt has %d tokens; the context limit is %d (%s)", n, limit,
                 r->ctx ? "--ctx" : "the model's max_seq_len; --ctx N allows more");
    r->gc.max_new_tokens = r->max_new;
    if (n + r->max_new > limit) {
        r->gc.max_new_tokens = limit - n;
        if (r->max_new_given)
            fprintf(stderr, "paddlec generate: note: --max-new lowered to %d (the context limit is %d%s)\n",
                    r->gc.max_new_tokens, limit, r->ctx ? ", --ctx" : ", the model's max_seq_len");
    }
    r->gc.max_ctx = limit;
    warn_long(r, n + r->gc.max_new_tokens, &warned);
    stop_setup(r, 0);
    double t0 = cli_now();
    struct pd_generation *out =
        cli_hold(pd_generate(r->cm->model, (const int64_t *const *)&ids, &n, 1, &r->gc, r->rng), cli_dtor_generation);
    if (!out) cli_fail_pd("generation failed");
    double dt = cli_now() - t0;
    printf("%s%s\n", r->text, continuation(r, out));
    report(pd_generation_len(out, 0), dt, -1);
    return 0;
}

/* ---- interactive ----------------------------------------------------------- */

struct line_buf {
    char *s;
    size_t cap;
};

static void dtor_line(void *p)
{
    free(((struct line_buf *)p)->s);
    free(p);
}

static void dtor_session(void *p) { pd_generate_session_destroy(p); }

/* One line of standard input without its newline; 0 at EOF. */
static int read_line(struct line_buf *lb)
{
    ssize_t k = getline(&lb->s, &lb->cap, stdin);
    if (k < 0) {
        if (ferror(stdin)) cli_fail(CLI_EXIT_FAIL, "cannot read standard input");
        return 0;
    }
    if (k > 0 && lb->s[k - 1] == '\n') lb->s[k - 1] = 0;
    return 1;
}

int gen_interactive(struct gen_run *r)
{
    int limit = ctx_limit(r), warned = 0, turns = 0, tokens = 0, tty = isatty(0);
    struct pd_generate_session *s = cli_hold(pd_generate_session_create(r->cm->model, limit), dtor_session);
    struct line_buf *lb = cli_hold(calloc(1, sizeof *lb), dtor_line);
    if (!s) cli_fail_pd("cannot start the session");
    if (!lb) cli_fail(CLI_EXIT_FAIL, "out of memory");
    struct stop_match *sm = stop_setup(r, 1);
    double dt = 0;
    for (;;) {
        if (tty) fputs("> ", stderr);
        if (!read_line(lb)) break;
        /* the --prompt text goes before the first line */
        char *text = lb->s;
        if (!turns && r->text) {
            text = cli_hold(malloc(strlen(r->text) + strlen(lb->s) + 1), free);
            if (!text) cli_fail(CLI_EXIT_FAIL, "out of memory");
            strcat(strcpy(text, r->text), lb->s);
        }
        int n, hist = pd_generate_session_len(s);
        int64_t *ids = cli_hold(encode_prompt(r->cm->tok, text, &n, hist == 0), free);
        if (text != lb->s) cli_free(text);
        if (hist + n < 1) {
            fprintf(stderr, "paddlec generate: note: an empty first line: nothing to continue\n");
            cli_free(ids);
            continue;
        }
        if (hist + n >= limit)
            cli_fail(CLI_EXIT_FAIL, "the context is full: %d tokens so far and %d in this line reach the limit %d (%s)",
                     hist, n, limit, r->ctx ? "--ctx" : "the model's max_seq_len; --ctx N allows more");
        r->gc.max_new_tokens = r->max_new < limit - hist - n ? r->max_new : limit - hist - n;
        warn_long(r, hist + n + r->gc.max_new_tokens, &warned);
        double t0 = cli_now();
        sm->len = sm->printed = 0, sm->found = 0;   /* this turn's text, streamed by on_token */
        struct pd_generation *out = cli_hold(pd_generate_session_next(s, ids, n, &r->gc, r->rng), cli_dtor_generation);
        if (!out) cli_fail_pd("generation failed");
        dt += cli_now() - t0;
        emit(sm, sm->found ? sm->cut : sm->len);
        if (!sm->printed || sm->text[sm->printed - 1] != '\n') fputc('\n', stdout);
        fflush(stdout);
        tokens += pd_generation_len(out, 0);
        turns++;
        cli_free(out);
        cli_free(ids);
    }
    report(tokens, dt, turns);
    return 0;
}
