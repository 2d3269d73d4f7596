/* paddle.c — run directories of `paddlec train`: Ctrl-C, resuming from a
 * directory, pruning old checkpoints, the metrics file on resume, and
 * `paddlec export` (docs/training.md, "Runs"; docs/checkpoints.md).
 *
 * Files of a run directory (--out):
 *   ckpt-<step>.safetensors     training checkpoint: weights + training state
 *   final.safetensors           the model, weights only (+ config, tokenizer)
 *   final.state.safetensors     the training state at the end (resume, extend)
 *   model_config.json, tokenizer.json   beside the final model
 *   metrics.jsonl               the metrics (unless --metrics says elsewhere)
 * A weights-only model X.safetensors finds its training state in
 * X.state.safetensors; a training checkpoint holds both.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "pd/optim.h"

/* ---- Ctrl-C -------------------------------------------------------------------
 * The first SIGINT (or SIGTERM) only sets a flag, read between steps; a
 * second one ends the process at once (async-signal-safe: write, _exit). */
static volatile sig_atomic_t interrupted; /* the first signal, 0 before */
static struct sigaction old_int, old_term;

static void on_signal(int sig)
{
    static const char again[] = "\npaddlec train: interrupted again: exiting now, without a checkpoint\n";
    static const char first[] = "\npaddlec train: interrupt: finishing the current step, then saving a checkpoint "
                                "(interrupt again to exit at once)\n";
    /* the two signals may run at once on two threads (OpenMP's workers do not
     * block them): one atomic exchange decides which is the first */
    if (__atomic_exchange_n(&interrupted, sig, __ATOMIC_SEQ_CST)) {
        ssize_t w = write(2, again, sizeof again - 1);
        (void)w;
        _exit(128 + sig);
    }
    ssize_t w = write(2, first, sizeof first - 1);
    (void)w;
}

void cli_interrupt_begin(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);   /* one at a time: the second waits for the first's return */
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sa.sa_flags = SA_RESTART;
    interrupted = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
}

void cli_interrupt_end(void)
{
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
}

int cli_interrupted(void) { return interrupted; }

/* ---- run directories ------------------------------------------------------------ */

/* "ckpt-<digits>.safetensors" -> its step, else -1. */
static int64_t ckpt_name_step(const char *name)
{
    if (strncmp(name, "ckpt-", 5) || name[5] < '0' || name[5] > '9') return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(name + 5, &end, 10);
    if (errno || strcmp(end, ".safetensors") || v > PD_OPTIM_MAX_STEP) return -1;
    return v;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The steps of dir's ckpt-<step>.safetensors files, sorted (malloc'd, held). */
static int64_t *list_ckpts(const char *dir, int *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    int cap = 16;
    int64_t *s = cli_hold(malloc(sizeof *s * (size_t)cap), free);
    if (!s) {
        closedir(d);
        cli_fail(CLI_EXIT_FAIL, "out of memory");
    }
    for (struct dirent *e; (e = readdir(d));) {
        int64_t st = ckpt_name_step(e->d_name);
        if (st < 0) continue;
        if (*n == cap) {
            int64_t *b = cli_hold(malloc(sizeof *s * (size_t)cap * 2), free);
            if (!b) {
                closedir(d);
                cli_fail(CLI_EXIT_FAIL, "out of memory");
            }
            memcpy(b, s, sizeof *s * (size_t)cap);
            cli_free(s);
            s = b;
            cap *= 2;
        }
        s[(*n)++] = st;
    }
    closedir(d);
    qsort(s, (size_t)*n, sizeof *s, cmp_i64);
    return s;
}

/* paddlec.step of a file's header (no data read); -1 without one. */
static int64_t file_step(const char *path)
{
    struct pd_safetensors_info *info = cli_hold(pd_safetensors_info(path), cli_dtor_st_info);
    if (!info) cli_fail_pd("cannot resume");
    int64_t v = -1;
    for (int i = 0; i < info->n_meta; i++)
        if (!strcmp(info->meta_keys[i], "paddlec.step")) {
            char *end = NULL;
            long long x = strtoll(info->meta_values[i], &end, 10);
            if (end != info->meta_values[i] && !*end && x >= 0) v = x;
        }
    cli_free(info);
    return v;
}

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = cli_hold(malloc(n), free);
    if (!p) cli_fail(CLI_EXIT_FAIL, "out of memory");
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

const char *cli_run_resolve(const char *path)
{
    struct stat st;
    if (stat(path, &st) || !S_ISDIR(st.st_mode)) return path;
    int n;
    int64_t *steps = list_ckpts(path, &n);
    char *best = NULL, name[64];
    if (n > 0) {
        snprintf(name, sizeof name, "ckpt-%lld.safetensors", (long long)steps[n - 1]);
        best = join(path, name);
    }
    char *fin = join(path, "final.safetensors");
    if (!stat(fin, &st) && S_ISREG(st.st_mode) && (!best || file_step(fin) >= steps[n - 1])) best = fin;
    if (!best)
        cli_fail(CLI_EXIT_FAIL, "cannot resume: the directory %s holds no checkpoint (ckpt-<step>.safetensors or "
                 "final.safetensors)", cli_q(path));
    return best;
}

/* X.safetensors -> X.state.safetensors (held). */
static char *state_path(const char *model_path)
{
    size_t n = strlen(model_path);
    const char *ext = ".safetensors";
    size_t k = n >= strlen(ext) && !strcmp(model_path + n - strlen(ext), ext) ? n - strlen(ext) : n;
    char *p = cli_hold(malloc(k + 32), free);
    if (!p) cli_fail(CLI_EXIT_FAIL, "out of memory");
    snprintf(p, k + 32, "%.*s.state.safetensors", (int)k, model_path);
    return p;
}

struct pd_state_dict *cli_checkpoint_load(const char *path)
{
    struct pd_state_dict *ck = cli_hold(pd_safetensors_load(path), cli_dtor_state_dict);
    if (!ck) cli_fail_pd("cannot resume");
    if (!pd_state_dict_get_meta(ck, "paddlec.recipe"))
        cli_fail(CLI_EXIT_FAIL, "%s: not a paddlec training checkpoint (no paddlec.recipe metadata)", cli_q(path));
    if (pd_state_dict_get_meta(ck, "optim.kind")) return ck;   /* a training checkpoint: weights + state */
    /* a weights-only model: its training state lives beside it */
    char *sp = state_path(path);
    struct stat st;
    if (stat(sp, &st))
        cli_fail(CLI_EXIT_FAIL, "%s is a weights-only model and its training state %s is missing: resume needs a "
                 "training checkpoint (ckpt-<step>.safetensors)", cli_q(path), cli_q(sp));
    struct pd_state_dict *s = cli_hold(pd_safetensors_load(sp), cli_dtor_state_dict);
    if (!s) cli_fail_pd("cannot resume");
    const char *a = pd_state_dict_get_meta(ck, "paddlec.step"), *b = pd_state_dict_get_meta(s, "paddlec.step");
    if (!a || !b || strcmp(a, b))
        cli_fail(CLI_EXIT_FAIL, "%s: the training state's paddlec.step %s differs from the model's %s", cli_q(sp), cli_q(b),
                 cli_q(a));
    for (int i = 0; i < pd_state_dict_size(s); i++)
        if (pd_state_dict_add(ck, pd_state_dict_name(s, i), pd_state_dict_tensor(s, i)))
            cli_fail_pd("%s: cannot merge the training state", cli_q(sp));
    for (int i = 0; i < pd_state_dict_meta_size(s); i++) {
        const char *k = pd_state_dict_meta_key(s, i);
        if (!pd_state_dict_get_meta(ck, k) && pd_state_dict_set_meta(ck, k, pd_state_dict_meta_value(s, i)))
            cli_fail_pd("%s: cannot merge the training state", cli_q(sp));
    }
    cli_free(s);
    cli_free(sp);
    return ck;
}

void cli_run_prune(const char *dir, int keep_last)
{
    if (keep_last <= 0) return;
    int n;
    int64_t *steps = list_ckpts(dir, &n);
    char name[64];
    for (int i = 0; i + keep_last < n; i++) {
        snprintf(name, sizeof name, "ckpt-%lld.safetensors", (long long)steps[i]);
        char *p = join(dir, name);
        if (unlink(p) && errno != ENOENT)
            fprintf(stderr, "paddlec train: note: --keep-last: cannot remove %s: %s\n", cli_q(p), strerror(errno));
        cli_free(p);
    }
    cli_free(steps);
}

/* ---- the metrics file on resume ------------------------------------------------
 * Keeps the lines of steps before `step`, and those of `step` itself that
 * are not events (the train and validation lines the checkpoint's run
 * wrote); drops the rest (steps the checkpoint does not hold, and the
 * "done"/"interrupted" events), so the resumed run appends no duplicate. A
 * line that is not a JSON object with a numeric "step" (the last line of a
 * killed run may be cut short) is dropped too. */
int64_t cli_metrics_truncate(const char *path, int64_t step)
{
    struct stat st;
    if (!path || stat(path, &st)) return 0;   /* no file yet: nothing to keep */
    size_t len;
    char *text = cli_hold(pd_file_read(path, CLI_MAX_TEXT, &len), free);
    if (!text) cli_fail_pd("cannot read the --metrics file");
    char *out = cli_hold(malloc(len + 1), free);
    if (!out) cli_fail(CLI_EXIT_FAIL, "out of memory");
    size_t k = 0;
    int64_t dropped = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n'), *next = nl ? nl + 1 : line + strlen(line);
        if (nl) *nl = 0;
        cJSON *j = cJSON_Parse(line);
        const cJSON *s = j ? cJSON_GetObjectItemCaseSensitive(j, "step") : NULL;
        int keep = cJSON_IsNumber(s) && (s->valuedouble < (double)step ||
                                         (s->valuedouble == (double)step && !cJSON_GetObjectItemCaseSensitive(j, "event")));
        cJSON_Delete(j);
        if (keep) {
            size_t l = strlen(line);
            memcpy(out + k, line, l);
            out[k + l] = '\n';
            k += l + 1;
        } else if (*line) {
            dropped++;
        }
        line = next;
    }
    if (dropped && pd_file_write(path, out, k)) cli_fail_pd("cannot rewrite the --metrics file");
    cli_free(out);
    cli_free(text);
    return dropped;
}

/* ---- paddlec export ------------------------------------------------------------- */

int cmd_export(int argc, char **argv)
{
    struct cli_opt opts[] = {{0, 0, 0, 0, 0, 0, 0}};
    const char *pos[2];
    int npos;
    cli_parse(argc, argv, opts, "export IN OUT",
              "Write the model of a training checkpoint (IN: a file, or a run directory: its latest\n"
              "checkpoint) as a weights-only model OUT: the parameters and the metadata that generate,\n"
              "eval and inspect read (paddlec.model_config, paddlec.tokenizer, paddlec.recipe,\n"
              "paddlec.step), without the optimizer state.",
              pos, 2, &npos);
    if (npos != 2) cli_fail(CLI_EXIT_USAGE, "expected IN and OUT (see --help)");
    const char *in = cli_run_resolve(pos[0]);
    struct pd_state_dict *ck = cli_hold(pd_safetensors_load(in), cli_dtor_state_dict);
    if (!ck) cli_fail_pd("cannot load checkpoint");
    struct cli_model cm;   /* read once; checked as generate reads it: config, tokenizer, every tensor */
    cli_model_from(&cm, ck, in);
    struct pd_state_dict *m = cli_hold(pd_state_dict_create(), cli_dtor_state_dict);
    if (!m) cli_fail_pd("export");
    int64_t numel = 0;
    for (int i = 0; i < pd_state_dict_size(ck); i++) {
        const char *name = pd_state_dict_name(ck, i);
        if (!strncmp(name, "optim.", 6)) continue;
        if (pd_state_dict_add(m, name, pd_state_dict_tensor(ck, i))) cli_fail_pd("export");
        numel += pd_tensor_numel(pd_state_dict_tensor(ck, i));
    }
    static const char *const keep[] = {"paddlec.format", "paddlec.step", "paddlec.model_config", "paddlec.recipe",
                                       "paddlec.tokenizer", NULL};
    for (int i = 0; keep[i]; i++) {
        const char *v = pd_state_dict_get_meta(ck, keep[i]);
        if (v && pd_state_dict_set_meta(m, keep[i], v)) cli_fail_pd("export");
    }
    if (pd_state_dict_set_meta(m, "paddlec.kind", "model")) cli_fail_pd("export");
    if (pd_safetensors_save(pos[1], m)) cli_fail_pd("cannot write %s", cli_q(pos[1]));
    printf("%s: %d tensors, %lld parameters, step %lld (from %s)\n", pos[1], pd_state_dict_size(m), (long long)numel,
           (long long)cm.step, in);
    cli_free_all();
    return 0;
}
