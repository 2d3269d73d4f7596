/* paddle.c example: a small convolutional network on the 8x8 handwritten
 * digits (the UCI "optdigits" test set that scikit-learn ships: 1,797
 * images, 64 pixels of 0..16 and a label 0..9 per CSV line), with the public
 * API only.
 *
 *   example_digits [steps] [path/to/digits.csv.gz]
 *
 * steps (default 400) are minibatch SGD-with-momentum steps (pd_optimizer)
 * of BATCH images;
 * the data set is split 80/20 by a fixed-seed shuffle, so runs are
 * reproducible. The file is read through `gzip -dc` (popen), which keeps the
 * example free of a zlib dependency. Without the file (Debian's
 * python3-sklearn is not installed) the example says so and exits 77, which
 * CTest reports as skipped (SKIP_RETURN_CODE, docs/testing.md).
 *
 * Network: x [N, 1, 8, 8]
 *   conv 3x3 pad 1 -> [N, 16, 8, 8], relu, max-pool 2 -> [N, 16, 4, 4]
 *   conv 3x3 pad 1 -> [N, 32, 4, 4], relu, max-pool 2 -> [N, 32, 2, 2]
 *   flatten [N, 128], linear -> logits [N, 10]
 *
 * Ownership: parameters are created outside any scope, listed in a state
 * dict for the optimizer (which holds its own references and momentum
 * buffers), and released at exit; each training step runs in its own scope. Exits
 * non-zero on a library error, or if a full run (>= 400 steps) ends below 90%
 * test accuracy (it reaches about 97%), so the CTest run checks a value.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd/optim.h"
#include "pd/pd.h"

#define DIGITS_PATH "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
#define N_PIXELS 64
#define N_CLASSES 10
#define MAX_SAMPLES 4096
#define BATCH 32
#define N_PARAMS 6

struct dataset {
    float *x;    /* [n, 64], pixel / 16 */
    int64_t *y;  /* [n] */
    int n;
};

/* Parses one CSV line of 64 pixels and a label; 0 on success. */
static int parse_line(char *line, float *px, int64_t *label)
{
    char *p = line;
    for (int j = 0; j <= N_PIXELS; j++) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) return -1;
        if (j < N_PIXELS) {
            if (v < 0 || v > 16 || *end != ',') return -1;
            px[j] = (float)v / 16.0f;
        } else {
            if (v < 0 || v >= N_CLASSES) return -1;
            *label = v;
        }
        p = end + 1;
    }
    return 0;
}

/* Reads the gzip'd CSV into d. Returns 0, 1 if the file is absent, -1 on a
 * malformed file (message printed). */
static int load_digits(const char *path, struct dataset *d)
{
    FILE *probe = fopen(path, "rb");
    if (!probe) return 1;
    fclose(probe);
    char cmd[4200];
    if (strchr(path, '\'') || snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path) >= (int)sizeof cmd) {
        fprintf(stderr, "digits: unusable path %s\n", path);
        return -1;
    }
    FILE *f = popen(cmd, "r");
    if (!f) {
        fprintf(stderr, "digits: cannot run gzip -dc on %s\n", path);
        return -1;
    }
    d->x = malloc(sizeof *d->x * MAX_SAMPLES * N_PIXELS);
    d->y = malloc(sizeof *d->y * MAX_SAMPLES);
    d->n = 0;
    char line[1024];
    int bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (d->n == MAX_SAMPLES || parse_line(line, d->x + (size_t)d->n * N_PIXELS, d->y + d->n)) {
            bad = 1;
            break;
        }
        d->n++;
    }
    int rc = pclose(f);
    if (bad || rc != 0 || d->n < 100) {
        fprintf(stderr, "digits: %s is not the expected digits CSV (line %d%s)\n", path, d->n + 1,
                rc != 0 ? ", gzip failed" : "");
        return -1;
    }
    return 0;
}

/* splitmix64: a fixed-seed shuffle independent of the library's generator. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void shuffle(int *idx, int n, uint64_t *s)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next_u64(s) % (uint64_t)(i + 1));
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* Images idx[0..n) as x [n, 1, 8, 8] and labels y [n]. */
static void gather(const struct dataset *d, const int *idx, int n, struct pd_tensor **x, struct pd_tensor **y)
{
    float *xs = malloc(sizeof *xs * (size_t)n * N_PIXELS);
    int64_t *ys = malloc(sizeof *ys * (size_t)n);
    for (int i = 0; i < n; i++) {
        memcpy(xs + (size_t)i * N_PIXELS, d->x + (size_t)idx[i] * N_PIXELS, sizeof *xs * N_PIXELS);
        ys[i] = d->y[idx[i]];
    }
    *x = pd_from_buffer(xs, (int64_t[]){n, 1, 8, 8}, 4, PD_F32);
    *y = pd_from_buffer(ys, (int64_t[]){n}, 1, PD_I64);
    free(xs);
    free(ys);
}

static struct pd_tensor *forward(struct pd_tensor **p, struct pd_tensor *x)
{
    const int one[2] = {1, 1}, two[2] = {2, 2}, zero[2] = {0, 0};
    struct pd_tensor *h = pd_relu(pd_conv2d(x, p[0], p[1], one, one, one, 1));
    h = pd_max_pool2d(h, two, two, zero);
    h = pd_relu(pd_conv2d(h, p[2], p[3], one, one, one, 1));
    h = pd_max_pool2d(h, two, two, zero);
    return pd_linear(pd_flatten(h, 1, 3), p[4], p[5]);
}

static double accuracy(struct pd_tensor *logits, struct pd_tensor *y)
{
    return pd_item(pd_mean(pd_cast(pd_eq(pd_argmax(logits, 1, 0), y), PD_F32), NULL, 0, 0));
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 400;
    const char *path = argc > 2 ? argv[2] : DIGITS_PATH;
    if (steps < 1) {
        fprintf(stderr, "usage: example_digits [steps >= 1] [digits.csv.gz]\n");
        return 2;
    }
    struct dataset d = {0};
    int st = load_digits(path, &d);
    if (st == 1) {
        if (argc > 2) printf("skipped: %s not found\n", path);
        else printf("skipped: python3-sklearn not installed (needs %s)\n", path);
        return 77; /* skipped */
    }
    if (st < 0) return 1;

    /* Deterministic 80/20 split. */
    int *idx = malloc(sizeof *idx * (size_t)d.n);
    for (int i = 0; i < d.n; i++) idx[i] = i;
    uint64_t rng = 12345;
    shuffle(idx, d.n, &rng);
    int n_train = d.n * 4 / 5, n_test = d.n - n_train;
    int *train = idx, *test = idx + n_train;
    struct pd_tensor *xt, *yt;
    gather(&d, test, n_test, &xt, &yt);

    /* He-normal init for the ReLU layers, zero biases. */
    struct pd_generator *g = pd_generator_create(7);
    const int64_t shapes[N_PARAMS][4] = {{16, 1, 3, 3}, {16}, {32, 16, 3, 3}, {32}, {N_CLASSES, 128}, {N_CLASSES}};
    const int ndims[N_PARAMS] = {4, 1, 4, 1, 2, 1};
    const double fan_in[N_PARAMS] = {9, 0, 144, 0, 128, 0};
    static const char *names[N_PARAMS] = {"conv1.weight", "conv1.bias", "conv2.weight",
                                          "conv2.bias",   "fc.weight",  "fc.bias"};
    struct pd_tensor *p[N_PARAMS];
    struct pd_state_dict *params = pd_state_dict_create();
    for (int i = 0; i < N_PARAMS; i++) {
        p[i] = fan_in[i] > 0 ? pd_normal(shapes[i], ndims[i], 0.0, sqrt(2.0 / fan_in[i]), PD_F32, g)
                             : pd_zeros(shapes[i], ndims[i], PD_F32);
        pd_requires_grad_(p[i], 1);
        pd_state_dict_add(params, names[i], p[i]);
    }
    /* torch.optim.SGD(lr=0.05, momentum=0.9) semantics. */
    struct pd_optim_config oc;
    pd_optim_config_default(&oc, PD_OPTIM_SGD);
    oc.lr = 0.05;
    oc.momentum = 0.9;
    struct pd_optimizer *opt = pd_optimizer_create_for(&oc, params);
    if (!opt) {
        fprintf(stderr, "digits: %s\n", pd_last_error());
        return 1;
    }

    int cursor = n_train, epoch = 0, failed = 0;
    for (int step = 1; step <= steps && !failed; step++) {
        if (cursor + BATCH > n_train) { /* new epoch: reshuffle the training part */
            shuffle(train, n_train, &rng);
            cursor = 0;
            epoch++;
        }
        int scope_tok = pd_scope_begin();
        struct pd_tensor *x, *y;
        gather(&d, train + cursor, BATCH, &x, &y);
        cursor += BATCH;
        struct pd_tensor *logits = forward(p, x);
        struct pd_tensor *loss = pd_cross_entropy(logits, y, -100, 0.0, PD_REDUCTION_MEAN);
        if (!loss || pd_backward(loss, NULL, 0)) {
            fprintf(stderr, "digits: %s\n", pd_last_error());
            failed = 1;
        } else {
            if (pd_optimizer_step(opt)) {
                fprintf(stderr, "digits: %s\n", pd_last_error());
                failed = 1;
            }
            pd_optimizer_zero_grad(opt);
            if (step == 1 || step % 100 == 0 || step == steps)
                printf("step %4d  epoch %2d  loss %.4f  batch accuracy %.1f%%\n", step, epoch, pd_item(loss),
                       100 * accuracy(logits, y));
        }
        pd_scope_end(scope_tok);
    }

    double acc = -1;
    if (!failed) {
        int scope_tok = pd_scope_begin();
        int ng = pd_no_grad_begin();
        struct pd_tensor *logits = forward(p, xt);
        if (logits) acc = accuracy(logits, yt);
        else fprintf(stderr, "digits: %s\n", pd_last_error());
        pd_grad_mode_end(ng);
        pd_scope_end(scope_tok);
        if (acc >= 0)
            printf("test accuracy %.1f%% (%d held-out images, %d training, %d steps of %d)\n", 100 * acc, n_test,
                   n_train, steps, BATCH);
    }

    pd_optimizer_destroy(opt);
    pd_state_dict_destroy(params);
    for (int i = 0; i < N_PARAMS; i++) pd_tensor_release(p[i]);
    pd_tensor_release(xt);
    pd_tensor_release(yt);
    pd_generator_destroy(g);
    free(idx);
    free(d.x);
    free(d.y);
    if (acc < 0) return 1;
    if (steps >= 400 && acc < 0.90) {
        fprintf(stderr, "digits: test accuracy %.1f%% is below 90%% after %d steps\n", 100 * acc, steps);
        return 1;
    }
    return 0;
}
