/* paddle.c — `paddlec train --mesh dp=2,tp=2 [--sp]` under mpirun: the
 * distributed parts of the training command (docs/distributed.md
 * "paddlec train --mesh").
 *
 * The model, optimizer and checkpoint are built exactly as in one process
 * (train.c), then made distributed in place: pd_shard_layer with the Llama
 * plan on the tp axis (every parameter replicated on dp), the optimizer
 * state in its parameters' placements, each batch split over dp, the
 * gradients all-reduced over dp in buckets during backward (pd_dp_attach). Each
 * dp rank reads only its rows of the global batch (pd_dataset_batch_dist),
 * which is one process's, so the losses are one process's. The validation
 * loss runs on the distributed model too, each dp rank on its rows of each
 * validation batch (pd_dataset_iter_create_dist), the counts summed over
 * dp. Generation runs on a plain copy of the model, gathered from the
 * pieces before each use: the held-out problems' generation batches are
 * dealt to the ranks in turn and the correct answers summed; the sample
 * is computed by every rank. Rank 0 reports. Checkpoints gather every tensor
 * (the single-process layout, so `paddlec generate` reads them unchanged)
 * and rank 0 writes them. Ranks other than 0 print nothing: stdout goes to
 * /dev/null and stderr to <out>/rank<N>.log.
 * Without --mesh none of this runs and MPI never starts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pd/dist.h"
#include "pd/optim.h"

static struct {
    struct pd_mesh *mesh;
    int dp, tp; /* axis indices, -1: none */
    struct pd_llama *eval; /* the plain copy (held) */
    struct pd_dp *dp_reducer; /* the bucketed data-parallel reduction (held) */
} D = {NULL, -1, -1, NULL, NULL};

int cli_dist_active(void) { return D.mesh != NULL; }
int cli_dist_rank(void) { return D.mesh ? pd_dist_world_rank() : 0; }

static void mesh_release(void *p)
{
    pd_shard_plans_clear();
    pd_mesh_release(p);
    D.mesh = NULL, D.eval = NULL, D.dp_reducer = NULL, D.dp = D.tp = -1;
}

static void dp_detach(void *p) { pd_dp_detach(p); }

/* "dp=2,tp=2" → the mesh (axes in the order given; dp and tp only). */
static void parse_mesh(const char *spec, int *shape, const char **names, int *nd)
{
    static char buf[64];
    if (strlen(spec) >= sizeof buf) cli_fail(CLI_EXIT_USAGE, "--mesh %s is too long", cli_q(spec));
    strcpy(buf, spec);
    *nd = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end = NULL;
        long n = eq ? strtol(eq + 1, &end, 10) : 0;
        if (!eq || !end || *end || n < 1 || n > 4096)
            cli_fail(CLI_EXIT_USAGE, "--mesh %s: expected axis=size pairs such as dp=2,tp=2", cli_q(spec));
        *eq = 0;
        if (strcmp(tok, "dp") && strcmp(tok, "tp"))
            cli_fail(CLI_EXIT_USAGE, "--mesh %s: axis %s is neither dp nor tp", cli_q(spec), cli_q(tok));
        for (int i = 0; i < *nd; i++)
            if (!strcmp(names[i], tok)) cli_fail(CLI_EXIT_USAGE, "--mesh %s: axis %s twice", cli_q(spec), cli_q(tok));
        if (*nd == 2) cli_fail(CLI_EXIT_USAGE, "--mesh %s: at most the two axes dp and tp", cli_q(spec));
        names[*nd] = tok, shape[(*nd)++] = (int)n;
    }
    if (!*nd) cli_fail(CLI_EXIT_USAGE, "--mesh is empty");
}

void cli_dist_setup(const char *spec, int sp, double dp_bucket_mb, struct pd_state_dict *params, struct pd_optimizer *opt)
{
    if (!spec) {
        if (sp) cli_fail(CLI_EXIT_USAGE, "--sp needs --mesh with a tp axis");
        if (dp_bucket_mb > 0) cli_fail(CLI_EXIT_USAGE, "--dp-bucket-mb needs --mesh with a dp axis");
        return;
    }
    int shape[2], nd;
    const char *names[2];
    parse_mesh(spec, shape, names, &nd);
    int n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    int world = pd_dist_world_size(); /* starts MPI */
    if (n != world)
        cli_fail(CLI_EXIT_USAGE, "--mesh %s has %d ranks but mpirun started %d (mpirun -np %d paddlec train ...)",
                 cli_q(spec), n, world, n);
    D.mesh = cli_hold(pd_mesh_create(shape, nd, names, NULL), mesh_release);
    if (!D.mesh) cli_fail_pd("--mesh %s", cli_q(spec));
    D.dp = pd_mesh_axis(D.mesh, "dp");
    D.tp = pd_mesh_axis(D.mesh, "tp");
    if (sp && D.tp < 0) cli_fail(CLI_EXIT_USAGE, "--sp needs a tp axis in --mesh");
    if (dp_bucket_mb > 0 && D.dp < 0) cli_fail(CLI_EXIT_USAGE, "--dp-bucket-mb needs a dp axis in --mesh");
    struct pd_shard_plan plan[16];
    int np = D.tp >= 0 ? pd_llama_shard_plan(sp, plan, 16) : 0;
    if (np < 0 || pd_shard_layer(params, D.mesh, D.tp >= 0 ? "tp" : NULL, plan, np))
        cli_fail_pd("--mesh: cannot distribute the model");
    if (pd_shard_optimizer(opt)) cli_fail_pd("--mesh: cannot distribute the optimizer state");
    if (D.dp >= 0) { /* gradients all-reduced in buckets while backward runs */
        int n_params = pd_state_dict_size(params);
        struct pd_tensor **ps = cli_hold(calloc((size_t)n_params + 1, sizeof *ps), free);
        if (!ps) cli_fail(CLI_EXIT_FAIL, "out of memory");
        for (int i = 0; i < n_params; i++) ps[i] = pd_state_dict_tensor(params, i);
        size_t bucket = (size_t)(dp_bucket_mb * 1048576.0); /* 0: pd_dp_attach's default */
        if (dp_bucket_mb > 0 && bucket == 0) bucket = 1;     /* the smallest asked for, not the default */
        D.dp_reducer = cli_hold(pd_dp_attach(ps, n_params, D.mesh, "dp", bucket), dp_detach);
        if (!D.dp_reducer) cli_fail_pd("--mesh: cannot attach the data-parallel reduction");
        cli_free(ps);
    }
}

/* After each backward: the data-parallel reduction finished (gradients
 * accumulated over micro-batches need it after each one). */
void cli_dist_backward_done(void)
{
    if (D.dp_reducer && pd_dp_finish(D.dp_reducer)) cli_fail_pd("data-parallel gradient reduction failed");
}

/* Ranks other than 0: stdout to /dev/null, stderr to <out>/rank<N>.log. */
void cli_dist_quiet(const char *out)
{
    int r = cli_dist_rank();
    if (!r) return;
    char name[32], path[4096];
    snprintf(name, sizeof name, "rank%d.log", r);
    cli_path_join(path, sizeof path, out, name);
    if (!freopen("/dev/null", "w", stdout) || !freopen(path, "w", stderr))
        cli_fail(CLI_EXIT_FAIL, "rank %d: cannot redirect its output to %s", r, cli_q(path));
}

/* ---- data: each dp rank reads its rows (docs/distributed.md "Data loading") */
static const char *dp_axis(void) { return D.dp >= 0 ? "dp" : NULL; }

int cli_dist_draw(const struct pd_text_dataset *ds, int batch, int seq_len, struct pd_generator *gen, struct pd_tensor **x,
                  struct pd_tensor **y)
{
    return D.mesh ? pd_dataset_batch_dist(ds, PD_SPLIT_TRAIN, batch, seq_len, gen, D.mesh, dp_axis(), x, y)
                  : pd_dataset_batch(ds, PD_SPLIT_TRAIN, batch, seq_len, gen, x, y);
}

struct pd_dataset_iter *cli_dist_iter(const struct pd_text_dataset *ds, enum pd_split split, int batch, int seq_len)
{
    return D.mesh ? pd_dataset_iter_create_dist(ds, split, batch, seq_len, D.mesh, dp_axis())
                  : pd_dataset_iter_create(ds, split, batch, seq_len);
}

struct pd_tensor *cli_local(struct pd_tensor *x) { return x && pd_dtensor_is_dist(x) ? pd_dtensor_local(x) : x; }

struct pd_tensor *cli_placed_like(struct pd_tensor *local, struct pd_tensor *like)
{
    if (!local || !pd_dtensor_is_dist(like)) return local;
    struct pd_tensor *d = pd_dtensor_from_local(local, pd_dtensor_shape(like), pd_dtensor_mesh(like),
                                                pd_dtensor_placements(like));
    if (!d) cli_fail_pd("cannot place this rank's rows");
    return d;
}

/* v[0..n) summed over the mesh: over the dp axis (each dp rank counted its
 * rows; the tp ranks beside it hold the same values), or over every rank
 * (all). Sums of whole numbers below 2^53 are exact. */
void cli_dist_sum(double *v, int n, int all)
{
    if (!D.mesh) return;
    int tok = cli_scope_begin();
    struct pd_placement pl[PD_MAX_MESH_DIMS];
    for (int a = 0; a < pd_mesh_ndim(D.mesh); a++) pl[a] = all || a == D.dp ? pd_partial(PD_RED_SUM) : pd_replicate();
    int64_t shape[1] = {n};
    struct pd_tensor *loc = pd_from_buffer(v, shape, 1, PD_F64);
    struct pd_tensor *s = loc ? pd_dtensor_full(pd_dtensor_from_local(loc, shape, D.mesh, pl)) : NULL;
    if (!s || pd_to_buffer(s, v, PD_F64)) cli_fail_pd("cannot sum the evaluation over the mesh");
    cli_scope_end(tok);
}

int cli_dist_mine(int k) { return !D.mesh || k % pd_dist_world_size() == pd_dist_world_rank(); }

/* The model to evaluate: m itself in one process, else the plain copy,
 * refreshed from m's pieces (collective). */
struct pd_llama *cli_dist_eval_model(struct pd_llama *m)
{
    if (!D.mesh) return m;
    if (!D.eval) {
        D.eval = cli_hold(pd_llama_create(pd_llama_get_config(m), 0), cli_dtor_llama);
        if (!D.eval) cli_fail_pd("cannot build the evaluation copy of the model");
    }
    struct pd_state_dict *full = cli_dist_gather(pd_llama_state_dict(m));
    char report[256];
    if (pd_state_dict_load(pd_llama_state_dict(D.eval), full, 1, report, sizeof report))
        cli_fail_pd("cannot copy the model for evaluation");
    cli_free(full);
    pd_llama_train(D.eval, 0);
    return D.eval;
}

/* sd with every distributed tensor whole (held); sd itself in one process. */
struct pd_state_dict *cli_dist_gather(struct pd_state_dict *sd)
{
    if (!D.mesh) return sd;
    struct pd_state_dict *g = cli_hold(pd_state_dict_gather(sd), cli_dtor_state_dict);
    if (!g) cli_fail_pd("cannot gather the model's pieces");
    return g;
}
