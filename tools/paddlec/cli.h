/* paddle.c — shared pieces of the paddlec program: option tables, fatal
 * errors, the progress line, JSON-lines metrics, checkpoints.
 *
 * The CLI is the one place allowed to print and exit: every library error is
 * turned into one line "paddlec <cmd>: error: <reason>" on stderr and a
 * non-zero exit (2 for usage errors, 1 for everything else).
 */
#ifndef PADDLEC_CLI_H
#define PADDLEC_CLI_H

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>

#include "pd/pd.h"
#include "pd/data.h"
#include "pd/generate.h"
#include "pd/io.h"

#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

enum cli_kind { CLI_INT, CLI_I64, CLI_DOUBLE, CLI_STR, CLI_FLAG };

/* One option: --name VALUE (or --name=VALUE); CLI_FLAG takes no value.
 * Numbers are range-checked against [lo, hi]. */
struct cli_opt {
    const char *name;
    enum cli_kind kind;
    void *dst;            /* int*, int64_t*, double*, const char**, int* */
    double lo, hi;
    const char *help;
    int seen;             /* set by the parser */
};

/* The running command ("train", "tokenizer train") for messages. */
extern const char *cli_cmd;

/* The whole program: dispatches argv[1] to its command (main.c). */
int cli_main(int argc, char **argv);

/* Parse-only mode, for the fuzz target fuzz/fuzz_cli_args.c: while
 * cli_parse_only is non-NULL, the first cli_parse of a command longjmps to it
 * with CLI_PARSED once the options are parsed (before the command does
 * anything), and every exit of cli_fail and --help longjmps with
 * CLI_EXITED + the exit code instead of exiting. Messages are printed as
 * usual. NULL (the program): nothing changes. */
extern jmp_buf *cli_parse_only;
#define CLI_PARSED 1
#define CLI_EXITED 16

/* What an exit frees: every error exit (cli_fail), --help and the end of a
 * command free what the command holds (tests/test_cli.sh checks the error
 * exits under LeakSanitizer). A command registers each object it owns with
 * cli_hold as soon as it has it (NULL is ignored; returns p), then either
 * frees it with cli_free (destructor run, entry gone) or lets go of it with
 * cli_drop (freed or handed on elsewhere). Open pd scopes are held too:
 * cli_scope_begin/cli_scope_end. cli_free_all frees everything held, newest
 * first; cli_exit does that, then exits (every exit goes through it; with
 * PADDLEC_LEAK_CHECK=1 in the environment it also fails, with one more line
 * on stderr, when a tensor or scope of the library is left). */
void *cli_hold(void *p, void (*fn)(void *));
void cli_free(void *p);
void cli_drop(const void *p);
int cli_scope_begin(void);
void cli_scope_end(int tok);
void cli_free_all(void);
void cli_exit(int code) __attribute__((noreturn));
/* Destructors for cli_hold (free and fclose work as they are). */
void cli_dtor_state_dict(void *p);
void cli_dtor_llama(void *p);
void cli_dtor_tokenizer(void *p);
void cli_dtor_dataset(void *p);
void cli_dtor_dataset_iter(void *p);
void cli_dtor_generator(void *p);
void cli_dtor_generation(void *p);
void cli_dtor_optimizer(void *p);
void cli_dtor_arith_task(void *p);
void cli_dtor_json(void *p);   /* cJSON_Delete */
void cli_dtor_st_info(void *p);
void cli_dtor_file(void *p);   /* fclose */

/* Prints "paddlec <cmd>: error: <msg>", frees what is held and exits with code. */
void cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
/* Like cli_fail(1, ...) with ": <pd_last_error()>" appended. */
void cli_fail_pd(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Parses argv[0..argc) against opts (NULL-name terminated). Positional
 * arguments go to pos[0..max_pos) (*n_pos gets the count); more is a usage
 * error. --help/-h prints usage (synopsis, description, options with their
 * defaults) to stdout and exits 0. Bad input exits 2 with one line. */
void cli_parse(int argc, char **argv, struct cli_opt *opts, const char *synopsis, const char *description,
               const char **pos, int max_pos, int *n_pos);
/* Sets one option from its text value (the parser and --config files). */
int cli_set(struct cli_opt *o, const char *value, char *err, size_t err_len);
struct cli_opt *cli_find(struct cli_opt *opts, const char *name);

double cli_now(void);   /* monotonic seconds */

/* ---- threads (threads.c) ------------------------------------------------ */
/* The variable and value a computing command runs under when the user set
 * neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT (threads.c says why). */
#define CLI_WAIT_VAR "OMP_WAIT_POLICY"
#define CLI_WAIT_VALUE "passive"
/* Called by main() before anything else for train, generate, eval and
 * bench: sets OMP_WAIT_POLICY and execs the program again, unless the user
 * set the policy. Returns only when nothing was done. */
void cli_threads_reexec(char **argv);
/* While set (cli_main, for the computing commands), cli_parse accepts
 * --threads N (cli_threads_opt) and applies it with pd_set_num_threads. */
extern int cli_threads_enabled;
extern struct cli_opt cli_threads_opt;
void cli_threads_apply(void);
/* "2 threads (wait policy passive), avx512 kernels"; GOMP_SPINCOUNT=N shows as
 * "spin count N", neither as "libgomp's default wait". */
const char *cli_threads_desc(char *buf, size_t n);
/* The same facts as JSON members: "threads":2,"isa":"avx512" */
const char *cli_threads_json(char *buf, size_t n);

/* Progress: a live line on stderr when it is a TTY, plain lines every
 * `every` steps otherwise. */
struct cli_progress {
    int tty, every, total;
    double t0, last_draw;
};
void cli_progress_init(struct cli_progress *p, int total, int every);
void cli_progress_update(struct cli_progress *p, int step, double loss, double lr, double tok_s, double eta_s);
void cli_progress_note(struct cli_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_progress_done(struct cli_progress *p);

/* Metrics: JSON lines appended to a file (NULL path: disabled). */
FILE *cli_metrics_open(const char *path);
void cli_metrics_write(FILE *f, const char *json_object);   /* one line, flushed */

/* Text helpers for tokenizers: encode a C string to int64 ids (malloc'd). */
int64_t *cli_encode(const struct pd_tokenizer *tok, const char *text, int *n);
/* Generated ids as text (malloc'd): they continue a prompt, so a leading
 * space is kept (pd_tokenizer_decode_continuation), as streaming prints them. */
char *cli_decode(const struct pd_tokenizer *tok, const int64_t *ids, int n);
/* ids (malloc'd, n of them) with the tokenizer's BOS put first, as
 * transformers encodes a text, when its tokenizer.json's post-processor names
 * one (pd_tokenizer_bos_id) and ids do not start with it already; *n then
 * grows by one. Returns ids, reallocated. For generate's first prompt and
 * each window eval scores. */
int64_t *cli_with_bos(const struct pd_tokenizer *tok, int64_t *ids, int *n);
/* A regular file of at most max bytes, malloc'd and NUL-terminated. */
char *cli_read_file(const char *path, size_t max, size_t *len);
#define CLI_MAX_CONFIG (1 << 20)          /* --config files (JSON) */
#define CLI_MAX_TEXT ((size_t)1 << 30)    /* tokenizer train --input */
/* s quoted for a message (pd_quote); four results stay valid at a time. */
const char *cli_q(const char *s);

/* ---- checkpoints (train.c) ---------------------------------------------- */
/* A loaded model with what serving needs (generate, eval). */
struct cli_model {
    struct pd_llama *model;
    struct pd_tokenizer *tok;
    struct pd_llama_config cfg;
    char *train_json;     /* the training recipe recorded in the checkpoint (may be NULL) */
    int64_t step;
};
/* Loads a checkpoint written by `paddlec train` (or any safetensors file
 * with the Llama names plus a "paddlec.model_config" metadata entry);
 * exits with one line on any problem. The members are held (cli_model_free
 * or cli_free_all frees them). */
void cli_model_load(struct cli_model *cm, const char *path);
/* The same from a checkpoint already read (ck is borrowed; path names it in
 * messages). */
void cli_model_from(struct cli_model *cm, const struct pd_state_dict *ck, const char *path);
void cli_model_free(struct cli_model *cm);

/* --pack-documents (train.c): each token's decoded text, to find document
 * boundaries in a batch (a newline for the built-in data, a blank line for
 * paragraphs; see train.c). */
struct cli_packer {
    char **tok_text;   /* n_tokens entries, malloc'd */
    int n_tokens, sep; /* sep: newlines in a separator */
};
void cli_packer_init(struct cli_packer *p, const struct pd_tokenizer *tok, int paragraphs);
void cli_packer_free(struct cli_packer *p);
/* doc_ids int64 [B, T] (pd_llama_loss_packed's) for the window x [B, T]. */
struct pd_tensor *cli_packer_doc_ids(const struct cli_packer *p, struct pd_tensor *x);

/* Validation loss of m over up to max_batches batches of the val split
 * (NaN on error); answer_only scores the arithmetic answers alone; pack,
 * NULL or a packer: packed documents, as the model was trained. */
double cli_val_loss(struct pd_llama *m, const struct pd_text_dataset *ds, int batch, int seq_len, int max_batches,
                    int answer_only, const struct cli_packer *pack);
/* Targets y [B, T] with everything but the arithmetic answers (after '=',
 * through the newline) set to -1 (ignored); byte tokens. */
struct pd_tensor *cli_answer_targets(struct pd_tensor *x, struct pd_tensor *y);
/* Held-out accuracy on the arithmetic task: greedy generation, batched,
 * scored by data's scorer. Fills *sample with one generated line (held:
 * free it with cli_free). */
double cli_task_accuracy(struct pd_llama *m, const struct pd_tokenizer *tok, const struct pd_arith_config *ac,
                         int n, uint64_t seed, int batch, char **sample);

/* Checks a training recipe (paddlec.recipe JSON) as `train --resume` does:
 * every key known, every value of its option's type and in its range;
 * exits with one line naming what (a path) otherwise. */
void cli_recipe_check(const char *json, const char *what);

/* ---- run directories (runs.c; docs/training.md, "Runs") ------------------ */
/* SIGINT/SIGTERM during training: the first sets a flag (cli_interrupted
 * returns the signal), a second exits at once with 128 + the signal. */
void cli_interrupt_begin(void);
void cli_interrupt_end(void);
int cli_interrupted(void);
/* A run directory -> its latest checkpoint (the highest step of its
 * ckpt-<step>.safetensors and final.safetensors; held), a file -> itself. */
const char *cli_run_resolve(const char *path);
/* buf = dir/name; a path that does not fit ends the command with one line. */
void cli_path_join(char *buf, size_t n, const char *dir, const char *name);
/* A checkpoint for resuming, held: a training checkpoint, or a weights-only
 * model merged with its training state X.state.safetensors. */
struct pd_state_dict *cli_checkpoint_load(const char *path);
/* Removes all but the keep_last newest ckpt-<step>.safetensors of dir (0: none). */
void cli_run_prune(const char *dir, int keep_last);
/* Drops the metrics lines a resume from step would repeat; returns how many. */
int64_t cli_metrics_truncate(const char *path, int64_t step);
#define CLI_EXIT_INTERRUPTED 130   /* 128 + SIGINT, as a shell reports it */

/* Validation of m over up to max_batches batches of the val split: the loss
 * (as cli_val_loss) and, when tok is given, bits per byte: the summed nats of
 * the scored targets / ln 2 / the bytes those targets decode to. When tok
 * names a BOS (cli_with_bos), each window of unpacked text starts with it:
 * the model reads BOS and the window's first T - 1 tokens and is scored on
 * all T, as transformers scores a text it encoded. Status. */
struct cli_val {
    double loss, bpb;
    int64_t tokens, bytes;   /* scored targets and their bytes */
};
int cli_validate(struct pd_llama *m, const struct pd_text_dataset *ds, const struct pd_tokenizer *tok, int batch,
                 int seq_len, int max_batches, int answer_only, const struct cli_packer *pack, struct cli_val *out);
/* The dataset of a text file as train and eval build it: --val-data VAL
 * (NULL: none) as the validation split, else a document split of the file
 * (pd_text_dataset_from_documents with val_fraction and seed). Held. */
struct pd_text_dataset *cli_text_dataset(const char *data, const char *val_data, const struct pd_tokenizer *tok,
                                         double val_fraction, uint64_t seed);

int cmd_export(int argc, char **argv);

/* ---- Hugging Face directories and the config schema (hf.c) ---------------- */
/* DIR/config.json into c; exits with one line on any problem. */
void cli_hf_config(const char *dir, struct pd_llama_config *c);
/* DIR/tokenizer.json (pd_tokenizer_load), or byte tokens when there is none
 * and vocab >= 256; held. */
struct pd_tokenizer *cli_hf_tokenizer(const char *dir, int vocab);
/* A Hugging Face directory as a cli_model (step 0, no recipe). */
void cli_model_load_hf(struct cli_model *cm, const char *dir);
/* A config JSON object with train's option names (opts): nn's config keys
 * mapped to them, and an object with "hidden_size" read as a Hugging Face
 * config.json (pd_llama_config_from_hf reads that text: the CLI parses it
 * once for its own keys, the library once for the model). The object is
 * held. */
struct cJSON *cli_config_canonical(const char *json, const struct cli_opt *opts, const char *what);
/* train.c: the model (and batch, if the file has one) of a `train --config`
 * file, for bench --config. */
void cli_config_model(const char *path, struct pd_llama_config *mc, int *batch);
int cmd_export_hf(int argc, char **argv);

int cmd_train(int argc, char **argv);
int pdc_cmd_md5diff(int argc, char **argv);   /* md5diff.c */
int cmd_generate(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tokenizer(int argc, char **argv);
int cmd_plot(int argc, char **argv);        /* plot.c */

/* ---- train --mesh (dist.c; docs/distributed.md) ---- */
struct pd_optimizer;
/* spec NULL: nothing (no MPI). Else the mesh, the model's parameters and
 * the optimizer's state distributed; usage errors exit. */
void cli_dist_setup(const char *spec, int sp, double dp_bucket_mb, struct pd_state_dict *params, struct pd_optimizer *opt);
int cli_dist_active(void);
int cli_dist_rank(void); /* 0 without --mesh */
void cli_dist_quiet(const char *out);
/* A training batch (pd_dataset_batch; --mesh: this dp rank's rows,
 * pd_dataset_batch_dist) and a validation iterator (--mesh: split over dp). */
int cli_dist_draw(const struct pd_text_dataset *ds, int batch, int seq_len, struct pd_generator *gen, struct pd_tensor **x,
                  struct pd_tensor **y);
struct pd_dataset_iter *cli_dist_iter(const struct pd_text_dataset *ds, enum pd_split split, int batch, int seq_len);
/* x's piece (x when plain); a piece made row by row from like's, placed as
 * like (plain like: local itself). */
struct pd_tensor *cli_local(struct pd_tensor *x);
struct pd_tensor *cli_placed_like(struct pd_tensor *local, struct pd_tensor *like);
/* v summed over the dp ranks (all: every rank); nothing without --mesh. Collective. */
void cli_dist_sum(double *v, int n, int all);
/* Is the k-th generation batch this rank's (every one without --mesh)? */
int cli_dist_mine(int k);
void cli_dist_backward_done(void);
struct pd_llama *cli_dist_eval_model(struct pd_llama *m);
struct pd_state_dict *cli_dist_gather(struct pd_state_dict *sd);

/* ---- train --bf16 / --f16 (amp.c) ---- */
/* The autocast dtype; --f16: the gradient scaler, its state from ck when
 * ck has it. Usage errors exit. */
void cli_amp_setup(int bf16, int f16, const struct pd_state_dict *ck, const char *path);
int cli_amp_begin(void);                                  /* autocast on: a token, -1 without */
void cli_amp_end(int tok);
struct pd_tensor *cli_amp_scale(struct pd_tensor *loss);  /* --f16: loss * scale; else loss */
int cli_amp_unscale(struct pd_optimizer *opt);            /* --f16: 1 when a gradient is inf/NaN (the step is skipped) */
int cli_amp_step(struct pd_optimizer *opt);               /* the step (--f16: skipped on inf/NaN); status */
double cli_amp_loss_scale(void);                          /* 1 without --f16 */
void cli_amp_save(struct pd_state_dict *sd);              /* --f16: the scaler's state as metadata */

/* ---- short windows and skipped steps (targets.c; docs/cli.md) ---- */
/* Tokens the held-out task generates after a prompt. */
int cli_task_max_new(const struct pd_arith_config *ac);
/* Exits (usage) when a held-out problem of task_n (train: and of the quick
 * score's 100) does not fit max_seq_len with its answer; train or eval's
 * wording. */
void cli_task_check(const struct pd_tokenizer *tok, const struct pd_arith_config *ac, int max_seq_len, int task_n,
                    uint64_t seed, int train);
/* has[k] = 1 when y[k] holds a scored target (>= 0; --mesh: on some dp rank);
 * returns how many do. Collective under --mesh. */
int cli_count_targets(struct pd_tensor *const *y, int n, int *has);
/* This rank's targets of y (--mesh: its rows): cnt[0] += the scored ones
 * (>= 0, and below nv when tb is given), cnt[1] += their bytes (tb[id]);
 * the sum over ranks is the caller's. Status (a failed read: an error). */
int cli_local_targets(struct pd_tensor *y, const int64_t *tb, int nv, double cnt[2]);
/* Why a step's loss or gradient norm is not finite, for the error line. */
const char *cli_nonfinite_hint(double loss, int64_t updates, int resumed, int f16, int init_hf);
/* --f16: ',"loss_scale":S,"scaler_skipped_steps":N' for a step's metrics line
 * (S the scale its loss was multiplied by); "" without --f16 (amp.c). */
const char *cli_amp_json(char *buf, size_t n, double scale);

#endif
