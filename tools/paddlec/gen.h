/* paddle.c — paddlec generate's pieces beyond its option table (gen.c):
 * where the prompt comes from, stopping on a text of any length, the context
 * limit (--ctx) and the interactive mode; short options for generate and
 * plot (plot.c).
 */
#ifndef PADDLEC_GEN_H
#define PADDLEC_GEN_H

#include "cli.h"

/* Rewrites each argument equal to shrt ("-i") that is not the value of an
 * option to lng ("--interactive"), before cli_parse (which knows long
 * options only). */
void cli_short_option(int argc, char **argv, struct cli_opt *opts, const char *shrt, const char *lng);

/* The prompt text (held): --prompt TEXT as given (already unescaped), "-"
 * for standard input (read whole), or the contents of --prompt-file. NULL
 * when neither was given. Exits with one line on a problem. */
char *gen_prompt_text(const char *prompt, const char *prompt_file);

struct gen_run {
    struct cli_model *cm;
    struct pd_generate_config gc;   /* sampling options set; max_new_tokens, max_ctx, on_token set here */
    struct pd_generator *rng;
    const char *text;               /* the prompt (non-interactive) or the text put before the first line */
    const char *stop;               /* NULL or a non-empty text */
    int max_new, max_new_given;     /* --max-new and whether the user passed it */
    int ctx;                        /* --ctx (0: the model's max_seq_len) */
};
/* Generates once and prints the prompt and its continuation. */
int gen_once(struct gen_run *r);
/* Reads lines from standard input until EOF; each turn generates and prints
 * the continuation as it comes; the KV cache is kept across turns. */
int gen_interactive(struct gen_run *r);

#endif
