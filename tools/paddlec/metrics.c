/* paddle.c — what `paddlec train` and `paddlec eval` measure on held-out
 * text: the validation loss, bits per byte, and the datasets they read
 * (--val-data, or a split by document). docs/training.md, "Metrics".
 *
 * Bits per byte compare models whatever their tokenizer: the summed
 * cross-entropy (nats) of the scored targets, divided by ln 2 and by the
 * number of bytes those target tokens decode to. A byte model's bpb is its
 * loss / ln 2; a BPE model spreads a token's nats over its bytes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static struct pd_tensor *val_loss_of(struct pd_llama *m, struct pd_tensor *x, struct pd_tensor *y,
                                     const struct cli_packer *pack)
{
    return pack ? pd_llama_loss_packed(m, x, y, cli_packer_doc_ids(pack, x)) : pd_llama_loss(m, x, y);
}

/* The window x -> y of T tokens as the model reads a text that starts with
 * BOS (cli_with_bos): inputs BOS and x's first T - 1 ids, targets x (held
 * tensors in the current scope). Rows that start with BOS already stay. */
static void with_bos(const struct pd_tokenizer *tok, struct pd_tensor **x, struct pd_tensor **y)
{
    struct pd_tensor *like = *x;   /* --mesh: this rank's rows, placed back */
    *x = cli_local(*x), *y = cli_local(*y);
    int64_t b = pd_tensor_dim(*x, 0), T = pd_tensor_dim(*x, 1);
    int64_t *xs = cli_hold(malloc(sizeof *xs * (size_t)(b * T + 1)), free);
    int64_t *ys = cli_hold(malloc(sizeof *ys * (size_t)(b * T + 1)), free);
    if (!xs || !ys) cli_fail(CLI_EXIT_FAIL, "out of memory");
    if (pd_to_buffer(*x, xs, PD_I64) || pd_to_buffer(*y, ys, PD_I64)) cli_fail_pd("cannot read a validation window");
    for (int64_t r = 0; r < b; r++) {
        int n = (int)T;
        int64_t *row = malloc(sizeof *row * (size_t)T);
        if (!row) cli_fail(CLI_EXIT_FAIL, "out of memory");
        memcpy(row, xs + r * T, sizeof *row * (size_t)T);
        row = cli_with_bos(tok, row, &n);
        if (n > T) { /* BOS put first: the targets are the window's own ids */
            memcpy(ys + r * T, xs + r * T, sizeof *ys * (size_t)T);
            memcpy(xs + r * T, row, sizeof *xs * (size_t)T);
        }
        free(row);
    }
    int64_t shape[2] = {b, T};
    *x = cli_placed_like(pd_from_buffer(xs, shape, 2, PD_I64), like);
    *y = cli_placed_like(pd_from_buffer(ys, shape, 2, PD_I64), like);
    if (!*x || !*y) cli_fail_pd("cannot make a validation window");
    cli_free(ys);
    cli_free(xs);
}

/* Bytes of each token id's text (held). */
static int64_t *token_bytes(const struct pd_tokenizer *tok, int *n)
{
    *n = pd_tokenizer_vocab_size(tok);
    int64_t *b = cli_hold(calloc((size_t)*n, sizeof *b), free);
    if (!b) cli_fail(CLI_EXIT_FAIL, "out of memory");
    for (int32_t i = 0; i < *n; i++) {
        size_t len = 0; /* the token's own bytes: decoding it alone could drop a leading space */
        if (!pd_tokenizer_token(tok, i, &len)) cli_fail_pd("cannot read token %d", (int)i);
        b[i] = (int64_t)len;
    }
    return b;
}

int cli_validate(struct pd_llama *m, const struct pd_text_dataset *ds, const struct pd_tokenizer *tok, int batch,
                 int seq_len, int max_batches, int answer_only, const struct cli_packer *pack, struct cli_val *out)
{
    out->loss = out->bpb = NAN;
    out->tokens = out->bytes = 0;
    /* --mesh: each dp rank reads and scores its rows of each batch */
    struct pd_dataset_iter *it = cli_hold(cli_dist_iter(ds, PD_SPLIT_VAL, batch, seq_len), cli_dtor_dataset_iter);
    if (!it) return pd_last_status();
    int nv = 0, bos = tok && pd_tokenizer_bos_id(tok) >= 0;
    int64_t *tb = tok ? token_bytes(tok, &nv) : NULL;
    int was = pd_llama_is_training(m), ng = pd_no_grad_begin();
    pd_llama_train(m, 0);
    double sum = 0, nats = 0;
    int64_t rows = 0, seen = 0;
    int rc = PD_OK;
    for (int k = 0; k < max_batches; k++) {
        int scope_tok = cli_scope_begin();
        struct pd_tensor *x = NULL, *y = NULL;
        int b = pd_dataset_iter_next(it, &x, &y);
        if (b > 0 && answer_only) y = cli_answer_targets(x, y);
        if (b > 0 && bos && !pack) with_bos(tok, &x, &y);
        double cb[2] = {0, 0};   /* scored targets and their bytes (this rank's rows) */
        if (b > 0 && (rc = cli_local_targets(y, tb, nv, cb))) { /* a failed read is an error, not a batch without targets */
            cli_scope_end(scope_tok);
            break;
        }
        if (b > 0) cli_dist_sum(cb, 2, 0);   /* --mesh: over the dp ranks */
        int64_t counted = (int64_t)cb[0], bytes = (int64_t)cb[1];
        /* answer_only: a batch of short windows may hold no answer (targets.c); it is left out */
        struct pd_tensor *l = b <= 0 || !counted ? NULL : val_loss_of(m, x, y, pack);
        double lv = l ? pd_item(l) : NAN;
        cli_scope_end(scope_tok);
        if (b <= 0) {
            if (b < 0) rc = b;
            break;
        }
        seen++;
        if (!counted) continue;
        if (!l) {
            rc = pd_last_status();
            break;
        }
        sum += lv * b;
        rows += b;
        nats += lv * (double)counted;
        out->tokens += counted;
        out->bytes += bytes;
    }
    pd_llama_train(m, was);
    pd_grad_mode_end(ng);
    cli_free(tb);
    cli_free(it);
    if (rc || !seen) return rc ? rc : PD_ERR_INVALID;
    if (!rows) return PD_OK;   /* no batch held a target: loss NaN, tokens 0 */
    out->loss = sum / (double)rows;
    if (out->bytes) out->bpb = nats / log(2.0) / (double)out->bytes;
    return PD_OK;
}

double cli_val_loss(struct pd_llama *m, const struct pd_text_dataset *ds, int batch, int seq_len, int max_batches,
                    int answer_only, const struct cli_packer *pack)
{
    struct cli_val v;
    cli_validate(m, ds, NULL, batch, seq_len, max_batches, answer_only, pack, &v);
    return v.loss;
}

struct pd_text_dataset *cli_text_dataset(const char *data, const char *val_data, const struct pd_tokenizer *tok,
                                         double val_fraction, uint64_t seed)
{
    size_t n, nv = 0;
    char *text = cli_hold(cli_read_file(data, CLI_MAX_TEXT, &n), free);
    char *val = val_data ? cli_hold(cli_read_file(val_data, CLI_MAX_TEXT, &nv), free) : NULL;
    if (!n) cli_fail(CLI_EXIT_FAIL, "cannot load the data: %s is empty", cli_q(data));
    if (val_data && !nv) cli_fail(CLI_EXIT_FAIL, "cannot load the data: --val-data %s is empty", cli_q(val_data));
    struct pd_text_dataset *ds = val_data ? pd_text_dataset_from_parts(text, n, val, nv, tok)
                                          : pd_text_dataset_from_documents(text, n, tok, val_fraction, seed);
    if (!ds) cli_fail_pd("cannot load the data %s", cli_q(data));
    cli_free(val);
    cli_free(text);
    return cli_hold(ds, cli_dtor_dataset);
}
