/* paddle.c — eager dispatch overhead: ns per op for tiny (16-element)
 * tensors, forward only and forward+backward. The PyTorch peer is measured
 * by bench/torch_peer.py in the same `make bench` run. */
#include "common.h"
#include "pd/pd.h"

struct ctx {
    struct pd_tensor *a, *b;
    int op;
};

#define OPS_PER_CALL 100

static void fwd(void *p)
{
    struct ctx *c = p;
    int scope_tok = pd_scope_begin();
    for (int i = 0; i < OPS_PER_CALL; i++) {
        if (c->op == 0) pd_add(c->a, c->b);
        else if (c->op == 1) pd_mul(c->a, c->b);
        else pd_sum(c->a, NULL, 0, 0);
    }
    pd_scope_end(scope_tok);
}

static void fwd_bwd(void *p)
{
    struct ctx *c = p;
    int scope_tok = pd_scope_begin();
    for (int i = 0; i < OPS_PER_CALL; i++) {
        struct pd_tensor *y = c->op == 0 ? pd_add(c->a, c->b) : c->op == 1 ? pd_mul(c->a, c->b) : c->a;
        pd_backward(pd_sum(y, NULL, 0, 0), NULL, 0);
    }
    pd_scope_end(scope_tok);
}

int main(void)
{
    const char *names[3] = {"add", "mul", "sum"};
    int64_t n = 16;
    struct ctx c;
    c.a = pd_randn(&n, 1, PD_F32, NULL);
    c.b = pd_randn(&n, 1, PD_F32, NULL);
    for (int op = 0; op < 3; op++) {
        c.op = op;
        double t = bench_best(fwd, &c, 200, 5) / OPS_PER_CALL;
        printf("{\"bench\":\"dispatch\",\"impl\":\"paddle.c\",%s,\"op\":\"%s\",\"mode\":\"forward\",\"numel\":16,"
               "\"ns_per_op\":%.1f}\n", bench_tags("f32").s, names[op], t * 1e9);
    }
    pd_requires_grad_(c.a, 1);
    pd_requires_grad_(c.b, 1);
    for (int op = 0; op < 3; op++) {
        c.op = op;
        double t = bench_best(fwd_bwd, &c, 100, 5) / OPS_PER_CALL;
        /* forward+backward of `op` followed by sum -> backward */
        printf("{\"bench\":\"dispatch\",\"impl\":\"paddle.c\",%s,\"op\":\"%s\",\"mode\":\"forward+backward\",\"numel\":16,"
               "\"ns_per_iter\":%.1f}\n", bench_tags("f32").s, names[op], t * 1e9);
    }
    pd_tensor_release(c.a);
    pd_tensor_release(c.b);
    return 0;
}
