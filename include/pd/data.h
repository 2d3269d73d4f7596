/* paddle.c — tokenizers, text datasets and the built-in arithmetic data set.
 *
 * Tokenizers turn bytes into token ids and back. Two kinds share one struct:
 *   - byte-level: vocab 256, id = byte value (the default; no training);
 *   - byte-level BPE: 256 byte tokens plus learned merges (merge r creates id
 *     256 + r from two existing ids), applied by rank when encoding.
 * Either may carry special tokens (e.g. "<|endoftext|>"), numbered after the
 * merges. encode() treats its input as raw bytes and never produces a special
 * id (add them by id); decode() writes a special token as its text. So
 * decode(encode(x)) == x for any bytes, including NULs and invalid UTF-8.
 *
 * A third kind is read from Hugging Face tokenizer.json files (and GPT-2's
 * original encoder.json + vocab.bpe): byte-level BPE in the GPT-2 / Llama 3
 * style (their pre-tokenizer regexes, implemented by hand), and the Llama 2 /
 * SentencePiece style (spaces as U+2581, byte fallback to <0xNN> tokens).
 * Its ids are the file's; added tokens (e.g. "<|endoftext|>", "<s>") found in
 * the text ARE split out and encoded as their ids, as Hugging Face does;
 * decode() follows the file's decoder (SentencePiece style: the space that
 * encode prepended is dropped). Details and the unsupported features:
 * docs/data.md.
 *
 * BPE pre-splits text into pieces that merges never cross (GPT-2 like, on
 * bytes: an optional leading space plus a run of letters (ASCII letters and
 * bytes >= 0x80), of digits, or of other symbols; runs of spaces/tabs; each
 * newline alone; pieces are at most 256 bytes). The split is local, so a
 * stream can be encoded chunk by chunk with the same result.
 *
 * Datasets hold the token ids of a whole text (tokenized once, streamed in
 * chunks), split into train (the first 1 - val_fraction of the tokens) and
 * validation (the rest). Batches are int64 tensors [B, T]: random contiguous
 * windows for training, drawn from a pd_generator (so the generator's
 * (seed, offset) is the data position, and resume is bit-exact), or
 * consecutive non-overlapping windows for evaluation.
 *
 * The built-in data set is generated arithmetic ("347+589=639\n", answer
 * reversed by default; see docs/data.md), with a held-out problem set that
 * never appears in the generated training text, and its exact-match scorer.
 *
 * Ownership: every _create/_open/_train result is the caller's and is freed
 * with its _destroy (NULL is a no-op). Functions returning char * or id
 * arrays return malloc'd memory the caller frees. Tensors follow the scope
 * rules of tensor.h. Errors: NULL or a negative status, message in
 * pd_last_error().
 */
#ifndef PD_DATA_H
#define PD_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "pd/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- tokenizers --------------------------------------------------------- */
/* Values reach disk (tokenizer JSON "type"): append only. */
enum pd_tokenizer_kind {
    PD_TOKENIZER_BYTE = 0,
    PD_TOKENIZER_BPE = 1,
    PD_TOKENIZER_HF = 2,   /* from a Hugging Face tokenizer.json (never written as "type") */
    PD_TOKENIZER_KIND_COUNT
};

struct pd_tokenizer;

/* Limits of every tokenizer, built or read (docs/reliability.md): ids in all
 * (256 bytes + merges + specials), bytes of one token (a merged token longer
 * than a pre-tokenizer piece could never come out of encode; a special
 * token's text), and bytes of a tokenizer file. A Hugging Face file has the
 * same id and file limits; its tokens may have up to 64 KiB. */
#define PD_TOKENIZER_MAX_VOCAB (1 << 20)
#define PD_TOKENIZER_MAX_TOKEN_LEN 256
#define PD_TOKENIZER_MAX_FILE (1 << 28)

/* The byte-level tokenizer: vocab 256, id = byte. */
struct pd_tokenizer *pd_tokenizer_byte_create(void);
void pd_tokenizer_destroy(struct pd_tokenizer *tok);

struct pd_bpe_options {
    int min_frequency;             /* stop when the best pair occurs fewer times (default 2) */
    int n_special;                 /* special tokens appended after the merges */
    const char *const *special;    /* their texts (non-empty, distinct) */
};
/* Learn a byte-level BPE from text[0..len) with at most vocab_size tokens in
 * all (256 bytes + merges + specials; fewer merges when no pair reaches
 * min_frequency). opt may be NULL (defaults, no specials). */
struct pd_tokenizer *pd_bpe_train(const char *text, size_t len, int vocab_size, const struct pd_bpe_options *opt);

enum pd_tokenizer_kind pd_tokenizer_kind(const struct pd_tokenizer *tok);
int pd_tokenizer_vocab_size(const struct pd_tokenizer *tok);   /* 256 + merges + specials */
int pd_tokenizer_n_merges(const struct pd_tokenizer *tok);
/* Merge r joins ids *a and *b into id 256 + r (PD_TOKENIZER_HF: into the
 * vocabulary's id of their concatenation). PD_ERR_INVALID if out of range. */
int pd_tokenizer_merge(const struct pd_tokenizer *tok, int r, int *a, int *b);
/* The bytes of token id (borrowed; a special token's text). NULL if out of
 * range. For PD_TOKENIZER_HF: the decoded bytes (byte-level characters mapped
 * back to bytes, U+2581 as a space, <0xNN> as its byte), with no leading space
 * dropped: concatenating them is the way to stream generated text. */
const unsigned char *pd_tokenizer_token(const struct pd_tokenizer *tok, int id, size_t *len);
/* Adds a special token (after every existing id) and returns its id.
 * PD_ERR_STATE for PD_TOKENIZER_HF. */
int pd_tokenizer_add_special(struct pd_tokenizer *tok, const char *text);
/* Id of the special token with this text, or -1. (PD_TOKENIZER_HF: any of
 * the file's added tokens, e.g. "<s>", "</s>", "<|eot_id|>".) */
int pd_tokenizer_special_id(const struct pd_tokenizer *tok, const char *text);
/* The id a tokenizer.json post-processor puts before a single sequence
 * ("<s>" for Llama 2, "<|begin_of_text|>" for Llama 3), or -1 when it adds
 * none (GPT-2, and every paddlec tokenizer). encode() never adds it. */
int pd_tokenizer_bos_id(const struct pd_tokenizer *tok);

/* Encode len bytes; *ids gets a malloc'd array. Returns the count (>= 0) or a
 * negative status. */
int64_t pd_tokenizer_encode(const struct pd_tokenizer *tok, const void *text, size_t len, int32_t **ids);
/* Decode n ids into a malloc'd buffer (NUL-terminated for convenience; the
 * length, which may include NULs, goes to *len if len is not NULL). An id out
 * of range is an error (NULL). */
char *pd_tokenizer_decode(const struct pd_tokenizer *tok, const int32_t *ids, int64_t n, size_t *len);
/* Decode n ids that continue a text (what pd_generate made after a prompt):
 * as pd_tokenizer_decode, but a text's start is not here, so a leading
 * space is kept (a SentencePiece-style decoder strips one from the start of
 * a text; "▁fox" after "brown" is " fox"). The result is the concatenation of
 * the ids' pd_tokenizer_token bytes, what streaming them prints. */
char *pd_tokenizer_decode_continuation(const struct pd_tokenizer *tok, const int32_t *ids, int64_t n, size_t *len);

/* JSON (format in docs/data.md). to_json returns a malloc'd string;
 * from_json/load validate everything (ids, duplicates, vocab size).
 * from_json and load also read a Hugging Face tokenizer.json (told apart by
 * its "model" object); features paddlec does not implement are refused with
 * a one-line error naming them. For PD_TOKENIZER_HF, to_json returns the
 * tokenizer.json text that was read, so save/load round-trips it. */
char *pd_tokenizer_to_json(const struct pd_tokenizer *tok);
struct pd_tokenizer *pd_tokenizer_from_json(const char *json);
int pd_tokenizer_save(const struct pd_tokenizer *tok, const char *path);
struct pd_tokenizer *pd_tokenizer_load(const char *path);
/* tok as a Hugging Face tokenizer.json (to_hf_json: malloc'd; save_hf: to a
 * file, atomically), which tokenizers' Tokenizer.from_file, transformers'
 * PreTrainedTokenizerFast and pd_tokenizer_load read. PD_TOKENIZER_HF: the
 * text that was read. Byte and BPE tokenizers are converted: byte-level BPE
 * (GPT-2's byte-to-character map) with the same ids and merges, paddlec's
 * pre-tokenizer as a Split regex over the mapped bytes (pieces of at most
 * PD_TOKENIZER_MAX_TOKEN_LEN bytes), a ByteLevel decoder, and the special
 * tokens as added tokens. encode gives the same ids, except that a
 * tokenizer.json matches added tokens in the text (paddlec's encode never
 * emits a special token), and that where two merges spell the same bytes the
 * file can name one id only (the first). */
char *pd_tokenizer_to_hf_json(const struct pd_tokenizer *tok);
int pd_tokenizer_save_hf(const struct pd_tokenizer *tok, const char *path);
/* GPT-2's original files (openai/gpt-2: encoder.json, a JSON object token ->
 * id, and vocab.bpe, "#version" then one merge "a b" per line): the same
 * tokenizer as Hugging Face's gpt2 tokenizer.json, "<|endoftext|>" included. */
struct pd_tokenizer *pd_tokenizer_load_gpt2(const char *encoder_json, const char *vocab_bpe);

/* ---- text datasets ------------------------------------------------------ */
enum pd_split {
    PD_SPLIT_TRAIN = 0,
    PD_SPLIT_VAL = 1,
    PD_SPLIT_COUNT
};

struct pd_text_dataset;

/* Tokenize the file at path (streamed in chunks) with tok (NULL: bytes).
 * val_fraction in [0, 1): the last fraction of the tokens is validation.
 * Errors: missing/unreadable file, empty file, bad fraction. The tokenizer
 * is only used during the call. */
struct pd_text_dataset *pd_text_dataset_open(const char *path, const struct pd_tokenizer *tok, double val_fraction);
/* The same over a memory buffer (copied as ids; text may be freed after). */
struct pd_text_dataset *pd_text_dataset_from_memory(const void *text, size_t len, const struct pd_tokenizer *tok,
                                                    double val_fraction);
/* Train and validation splits from two texts (a file and --val-data, or a
 * document split): the train split is train's ids, validation val's. Both
 * must be non-empty. */
struct pd_text_dataset *pd_text_dataset_from_parts(const void *train, size_t train_len, const void *val, size_t val_len,
                                                   const struct pd_tokenizer *tok);
/* A validation split of whole documents chosen at random (seeded), not the
 * text's tail. Documents are the pieces of text that each end with
 * "<|endoftext|>" when the text holds that marker, else paragraphs (each
 * ending with its run of two or more newlines); with fewer than
 * PD_DOCSPLIT_MIN_DOCS of those, lines. Documents are drawn in a shuffled
 * order (seed) until they hold val_fraction of the bytes (at least one, and
 * one is left for training); each split keeps its documents in text order.
 * A text of one line has no document to hold out: its last val_fraction of
 * the tokens is validation (pd_text_dataset_from_memory). val_fraction in
 * (0, 1). */
#define PD_DOCSPLIT_MIN_DOCS 20
struct pd_text_dataset *pd_text_dataset_from_documents(const void *text, size_t len, const struct pd_tokenizer *tok,
                                                       double val_fraction, uint64_t seed);
void pd_text_dataset_destroy(struct pd_text_dataset *ds);

int pd_text_dataset_vocab_size(const struct pd_text_dataset *ds);
int64_t pd_text_dataset_num_tokens(const struct pd_text_dataset *ds, enum pd_split split);
/* Copy n ids of a split starting at start into out. */
int pd_text_dataset_ids(const struct pd_text_dataset *ds, enum pd_split split, int64_t start, int64_t n,
                        int32_t *out);

/* B random windows of T + 1 consecutive tokens of the split: *ids = window
 * [0, T), *targets = window [1, T + 1), both int64 [B, T]. Starts are uniform
 * over [0, n - T - 1], drawn from gen (NULL: the default generator), which
 * advances by a fixed amount per call. Error if the split has fewer than
 * T + 1 tokens. On error both outputs are NULL. */
int pd_dataset_batch(const struct pd_text_dataset *ds, enum pd_split split, int batch, int seq_len,
                     struct pd_generator *gen, struct pd_tensor **ids, struct pd_tensor **targets);

/* Sequential evaluation: window k covers tokens [k T, k T + T] (inputs and
 * shifted targets), k = 0 .. floor((n - 1) / T) - 1; the tail shorter than a
 * window is not scored. next() fills up to batch windows ([B', T], B' <=
 * batch) and returns B', 0 at the end, or a negative status. */
struct pd_dataset_iter;
struct pd_dataset_iter *pd_dataset_iter_create(const struct pd_text_dataset *ds, enum pd_split split, int batch,
                                               int seq_len);
void pd_dataset_iter_destroy(struct pd_dataset_iter *it);
int64_t pd_dataset_iter_num_windows(const struct pd_dataset_iter *it);
int pd_dataset_iter_next(struct pd_dataset_iter *it, struct pd_tensor **ids, struct pd_tensor **targets);
void pd_dataset_iter_reset(struct pd_dataset_iter *it);

/* ---- the built-in arithmetic data set ------------------------------------ */
enum pd_arith_op {
    PD_ARITH_ADD = 0,
    PD_ARITH_SUB = 1,
    PD_ARITH_OP_COUNT
};

struct pd_arith_config {
    int max_digits;         /* operands have 1 .. max_digits digits (1..9; default 3) */
    int subtraction;        /* also "a-b=" with a >= b (default 0) */
    int reverse_answer;     /* answer digits least significant first (default 1) */
    int heldout_per_mille;  /* share of problems held out, by a hash of the problem (default 20) */
};
void pd_arith_config_default(struct pd_arith_config *cfg);
int pd_arith_config_validate(const struct pd_arith_config *cfg);

/* Is this problem in the held-out partition? (The partition depends only on
 * (op, unordered operands for +), never on seeds.) */
int pd_arith_is_heldout(const struct pd_arith_config *cfg, enum pd_arith_op op, int64_t a, int64_t b);
/* Writes "a+b=" into prompt and the answer ("639" for 347+589 reversed) into
 * answer; each buffer needs 24 bytes. */
void pd_arith_format(const struct pd_arith_config *cfg, enum pd_arith_op op, int64_t a, int64_t b, char *prompt,
                     char *answer);

/* n_lines training lines "prompt answer\n" from seed (cfg NULL: defaults),
 * none of them held out. Returns malloc'd NUL-terminated text, length in *len. */
char *pd_builtin_text(uint64_t seed, int64_t n_lines, const struct pd_arith_config *cfg, size_t *len);
/* A dataset over pd_builtin_text(seed, n_lines, cfg) with tok (NULL: bytes). */
struct pd_text_dataset *pd_text_dataset_builtin(uint64_t seed, int64_t n_lines, const struct pd_arith_config *cfg,
                                                const struct pd_tokenizer *tok, double val_fraction);

/* The held-out task: n distinct held-out problems drawn from seed, with the
 * training distribution of operand sizes. Feeding a model "\n" + prompt is
 * recommended: in the training text a problem always follows a newline, and
 * training windows start at random bytes, so a prompt at position 0 such as
 * "7+229=" could also be the tail of "17+229=". */
struct pd_arith_task;
struct pd_arith_task *pd_arith_task_create(const struct pd_arith_config *cfg, uint64_t seed, int n);
void pd_arith_task_destroy(struct pd_arith_task *t);
int pd_arith_task_size(const struct pd_arith_task *t);
const char *pd_arith_task_prompt(const struct pd_arith_task *t, int i);   /* "347+589=" */
const char *pd_arith_task_answer(const struct pd_arith_task *t, int i);   /* "639" */
/* Exact match: generated[0..len) up to its first '\n' (or all of it when
 * there is none) equals answer i. Returns 1 or 0 (0 also for bad i). */
int pd_arith_task_score(const struct pd_arith_task *t, int i, const char *generated, size_t len);
/* Scores the answer text alone: the same rule against any expected string. */
int pd_arith_score(const char *expected, const char *generated, size_t len);

#ifdef __cplusplus
}
#endif
#endif
