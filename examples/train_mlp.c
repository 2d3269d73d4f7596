/* paddle.c example: train a small MLP on a built-in data set (three
 * interleaved spirals, generated in code) with plain SGD + momentum, using
 * the public API only. This is what `make run` runs.
 *
 *   example_train_mlp [steps]
 *
 * Each step runs inside a scope, so the step's tensors are freed at its end;
 * the parameters are kept outside any scope and released at exit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "pd/pd.h"

#define N_CLASSES 3
#define N_PER_CLASS 400
#define HIDDEN 64

/* Spiral data: points x [N, 2] f32 and labels y [N] int64. */
static void make_spirals(struct pd_tensor **x, struct pd_tensor **y, uint64_t seed)
{
    int64_t n = N_CLASSES * N_PER_CLASS;
    float *xs = malloc(sizeof *xs * (size_t)n * 2);
    int64_t *ys = malloc(sizeof *ys * (size_t)n);
    struct pd_generator *g = pd_generator_create(seed);
    struct pd_tensor *noise = pd_randn((int64_t[]){n}, 1, PD_F32, g);
    float *nz = malloc(sizeof *nz * (size_t)n);
    pd_to_buffer(noise, nz, PD_F32);
    for (int c = 0; c < N_CLASSES; c++) {
        for (int i = 0; i < N_PER_CLASS; i++) {
            int64_t k = c * N_PER_CLASS + i;
            double r = (double)i / N_PER_CLASS;
            double t = c * 2.0 * M_PI / N_CLASSES + 4.0 * r + 0.2 * nz[k];
            xs[2 * k] = (float)(r * sin(t));
            xs[2 * k + 1] = (float)(r * cos(t));
            ys[k] = c;
        }
    }
    *x = pd_from_buffer(xs, (int64_t[]){n, 2}, 2, PD_F32);
    *y = pd_from_buffer(ys, (int64_t[]){n}, 1, PD_I64);
    free(xs);
    free(ys);
    free(nz);
    pd_tensor_release(noise);
    pd_generator_destroy(g);
}

struct param {
    struct pd_tensor *w, *v; /* value (requires grad) and momentum buffer */
};

static struct param make_param(int64_t rows, int64_t cols, double scale, struct pd_generator *g)
{
    int64_t shape[2] = {rows, cols};
    int nd = cols > 0 ? 2 : 1;
    struct param p;
    p.w = pd_requires_grad_(pd_normal(shape, nd, 0.0, scale, PD_F32, g), 1);
    p.v = pd_zeros(shape, nd, PD_F32);
    return p;
}

static struct pd_tensor *forward(struct param *p, struct pd_tensor *x)
{
    struct pd_tensor *h = pd_relu(pd_linear(x, p[0].w, p[1].w));
    h = pd_relu(pd_linear(h, p[2].w, p[3].w));
    return pd_linear(h, p[4].w, p[5].w);
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 1500;
    struct pd_tensor *x, *y;
    make_spirals(&x, &y, 1);
    struct pd_generator *g = pd_generator_create(7);
    struct param p[6] = {
        make_param(HIDDEN, 2, sqrt(2.0 / 2), g),      make_param(HIDDEN, 0, 0.0, g),
        make_param(HIDDEN, HIDDEN, sqrt(2.0 / HIDDEN), g), make_param(HIDDEN, 0, 0.0, g),
        make_param(N_CLASSES, HIDDEN, sqrt(1.0 / HIDDEN), g), make_param(N_CLASSES, 0, 0.0, g),
    };
    const double lr = 0.1, momentum = 0.9;
    for (int step = 1; step <= steps; step++) {
        int scope_tok = pd_scope_begin();
        struct pd_tensor *logits = forward(p, x);
        struct pd_tensor *loss = pd_cross_entropy(logits, y, -100, 0.0, PD_REDUCTION_MEAN);
        if (!loss || pd_backward(loss, NULL, 0)) {
            fprintf(stderr, "train_mlp: %s\n", pd_last_error());
            return 1;
        }
        int ng = pd_no_grad_begin();
        for (int i = 0; i < 6; i++) {
            /* v = momentum * v + grad; w -= lr * v */
            pd_add_(pd_scale_(p[i].v, momentum), pd_tensor_grad(p[i].w));
            pd_add_(p[i].w, pd_scale(p[i].v, -lr));
            pd_tensor_zero_grad(p[i].w);
        }
        pd_grad_mode_end(ng);
        if (step % 250 == 0 || step == 1) {
            struct pd_tensor *pred = pd_argmax(logits, 1, 0);
            double acc = pd_item(pd_mean(pd_cast(pd_eq(pred, y), PD_F32), NULL, 0, 0));
            printf("step %5d  loss %.4f  train accuracy %.1f%%\n", step, pd_item(loss), 100 * acc);
        }
        pd_scope_end(scope_tok);
    }
    /* held-out accuracy on a fresh draw of the same distribution */
    struct pd_tensor *xt, *yt;
    make_spirals(&xt, &yt, 99);
    int scope_tok = pd_scope_begin();
    int ng = pd_no_grad_begin();
    struct pd_tensor *pred = pd_argmax(forward(p, xt), 1, 0);
    double acc = pd_item(pd_mean(pd_cast(pd_eq(pred, yt), PD_F32), NULL, 0, 0));
    pd_grad_mode_end(ng);
    printf("held-out accuracy %.1f%% (%d points, %d classes)\n", 100 * acc, N_CLASSES * N_PER_CLASS, N_CLASSES);
    pd_scope_end(scope_tok);
    for (int i = 0; i < 6; i++) {
        pd_tensor_release(p[i].w);
        pd_tensor_release(p[i].v);
    }
    pd_tensor_release(x);
    pd_tensor_release(y);
    pd_tensor_release(xt);
    pd_tensor_release(yt);
    pd_generator_destroy(g);
    return acc > 0.9 ? 0 : 1;
}
