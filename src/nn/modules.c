/* paddle.c — the simple modules: Linear, Embedding, RMSNorm, LayerNorm,
 * Dropout, the SwiGLU MLP; and the parameter arena they allocate from.
 *
 * Ownership: a module holds one reference to each parameter; _fini releases
 * them. Parameters are owned by their module, not by a scope
 * (pdi_nn_zeros_owned / pdi_tensor_alias of the arena), so creating a module
 * inside a scope does not hand its parameters to that scope. They are made
 * by creation ops: under the meta executor a module has meta parameters. Forward results are ordinary op results.
 * Stand-alone modules make their parameters in the thread's parameter dtype
 * (pd_nn_set_param_dtype; f32 unless set); the Llama arena stays f32.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_internal.h"
#include "pd/autograd.h"
#include "pd/nn.h"
#include "pd/ops.h"

/* ---- arena and naming ------------------------------------------------ */

struct pd_tensor *(*pdi_nn_prepare)(const struct pd_tensor *weight, int where, struct pd_tensor *x);

static struct pd_tensor *zeros_owned(const int64_t *shape, int ndim, enum pd_dtype dt)
{
    int sc = pd_scope_begin();
    struct pd_tensor *t = pd_zeros(shape, ndim, dt);
    pd_tensor_retain(t); /* ours once the scope drops its reference */
    pd_scope_end(sc);
    return t;
}

struct pd_tensor *pdi_nn_zeros_owned(const int64_t *shape, int ndim) { return zeros_owned(shape, ndim, PD_F32); }

/* The dtype of stand-alone modules' new parameters, per thread. */
static _Thread_local enum pd_dtype param_dtype = PD_F32;

int pd_nn_set_param_dtype(enum pd_dtype dt)
{
    if ((unsigned)dt >= PD_DTYPE_COUNT || !pd_dtype_is_float(dt))
        return pdi_errorf(PD_ERR_INVALID, "nn: parameters must have a floating-point dtype, got %s",
                          (unsigned)dt < PD_DTYPE_COUNT ? pd_dtype_name(dt) : "an unknown dtype");
    enum pd_dtype old = param_dtype;
    param_dtype = dt;
    return (int)old;
}

enum pd_dtype pd_nn_param_dtype(void) { return param_dtype; }

struct pd_tensor *pdi_nn_param(struct pdi_nn_arena *ar, const int64_t *shape, int ndim)
{
    for (int i = 0; i < ndim; i++)
        if (shape[i] <= 0) return pdi_error(PD_ERR_INVALID, "nn: parameter dims must be positive, dim %d is %lld", i,
                                            (long long)shape[i]);
    struct pd_tensor *t;
    if (!ar) {
        t = zeros_owned(shape, ndim, param_dtype); /* the init functions write it */
    } else {
        int64_t n = pdi_numel(shape, ndim), cap = ar->flat->shape[0];
        int64_t off = (ar->used + PDI_NN_ALIGN - 1) / PDI_NN_ALIGN * PDI_NN_ALIGN;
        if (off + n > cap)
            return pdi_error(PD_ERR_INVALID, "nn: parameter arena overflow (%lld + %lld > %lld floats)",
                             (long long)off, (long long)n, (long long)cap);
        int64_t strides[PD_MAX_DIMS];
        pdi_contiguous_strides(shape, ndim, strides);
        t = pdi_tensor_alias(ar->flat, shape, strides, ndim, ar->flat->offset + off);
        ar->used = off + n;
    }
    if (!t) return NULL;
    t->requires_grad = 1; /* a fresh leaf: set directly, no scope involved */
    return t;
}

int pdi_nn_add(struct pd_state_dict *sd, const char *prefix, const char *name, struct pd_tensor *t)
{
    if (!sd) return pdi_errorf(PD_ERR_NULL, "nn: state dict is NULL");
    if (!t) return PD_OK; /* an absent optional parameter (bias) */
    char buf[512];
    int n = prefix && *prefix ? snprintf(buf, sizeof buf, "%s.%s", prefix, name) : snprintf(buf, sizeof buf, "%s", name);
    if (n < 0 || (size_t)n >= sizeof buf) return pdi_errorf(PD_ERR_INVALID, "nn: parameter name too long: %s.%s", prefix, name);
    return pd_state_dict_add(sd, buf, t);
}

/* (declared in nn_internal.h) */
const char *pdi_nn_join(char *buf, size_t n, const char *prefix, const char *name)
{
    snprintf(buf, n, "%s%s%s", prefix && *prefix ? prefix : "", prefix && *prefix ? "." : "", name);
    return buf;
}

/* ---- Linear ----------------------------------------------------------- */

int pdi_nn_linear_init(struct pd_nn_linear *l, int64_t in, int64_t out, int bias, struct pdi_nn_arena *ar)
{
    memset(l, 0, sizeof *l);
    if (in <= 0 || out <= 0)
        return pdi_errorf(PD_ERR_INVALID, "nn.linear: features must be positive, got in %lld out %lld", (long long)in,
                          (long long)out);
    l->in_features = in;
    l->out_features = out;
    l->weight = pdi_nn_param(ar, (int64_t[]){out, in}, 2);
    if (l->weight && bias) l->bias = pdi_nn_param(ar, (int64_t[]){out}, 1);
    if (!l->weight || (bias && !l->bias)) {
        pdi_nn_linear_fini(l);
        return pdi_status_of(NULL, "nn: parameters");
    }
    return PD_OK;
}

int pdi_nn_linear_reset(struct pd_nn_linear *l, struct pd_generator *g)
{
    int st = pd_init_kaiming_uniform_(l->weight, sqrt(5.0), PD_INIT_FAN_IN, PD_NL_LEAKY_RELU, g);
    double bound = 1.0 / sqrt((double)l->in_features);
    if (!st && l->bias) st = pd_init_uniform_(l->bias, -bound, bound, g);
    return st;
}

void pdi_nn_linear_fini(struct pd_nn_linear *l)
{
    pd_tensor_release(l->weight);
    pd_tensor_release(l->bias);
    l->weight = l->bias = NULL;
}

struct pd_nn_linear *pd_nn_linear_create(int64_t in_features, int64_t out_features, int bias, struct pd_generator *g)
{
    struct pd_nn_linear *l = pdi_malloc(sizeof *l);
    if (!l) return pdi_error(PD_ERR_NOMEM, "nn.linear: out of memory");
    if (pdi_nn_linear_init(l, in_features, out_features, bias, NULL) || pdi_nn_linear_reset(l, g)) {
        pd_nn_linear_destroy(l);
        return NULL;
    }
    return l;
}

void pd_nn_linear_destroy(struct pd_nn_linear *l)
{
    if (!l) return;
    pdi_nn_linear_fini(l);
    free(l);
}

struct pd_tensor *pd_nn_linear_forward(struct pd_nn_linear *l, struct pd_tensor *x)
{
    if (!l) return pdi_error(PD_ERR_NULL, "nn.linear: module is NULL");
    if (!x) return NULL;
    if (x->ndim < 1 || x->shape[x->ndim - 1] != l->in_features) {
        char b[PDI_SHAPE_BUF];
        return pdi_error(PD_ERR_INVALID, "nn.linear: input %s must end in in_features = %lld",
                         pdi_shape_str(x->shape, x->ndim, b, sizeof b), (long long)l->in_features);
    }
    return pdi_nn_prep(l->weight, 1, pd_linear(pdi_nn_prep(l->weight, 0, x), l->weight, l->bias));
}

int pd_nn_linear_params(struct pd_nn_linear *l, const char *prefix, struct pd_state_dict *sd)
{
    if (!l) return pdi_errorf(PD_ERR_NULL, "nn.linear: module is NULL");
    int st = pdi_nn_add(sd, prefix, "weight", l->weight);
    return st ? st : pdi_nn_add(sd, prefix, "bias", l->bias);
}

/* ---- Embedding -------------------------------------------------------- */

int pdi_nn_embedding_init(struct pd_nn_embedding *e, int64_t num, int64_t dim, struct pdi_nn_arena *ar)
{
    memset(e, 0, sizeof *e);
    if (num <= 0 || dim <= 0)
        return pdi_errorf(PD_ERR_INVALID, "nn.embedding: sizes must be positive, got num %lld dim %lld",
                          (long long)num, (long long)dim);
    e->num_embeddings = num;
    e->dim = dim;
    e->weight = pdi_nn_param(ar, (int64_t[]){num, dim}, 2);
    return pdi_status_of(e->weight, "nn.embedding: parameters");
}

struct pd_nn_embedding *pd_nn_embedding_create(int64_t num_embeddings, int64_t dim, struct pd_generator *g)
{
    struct pd_nn_embedding *e = pdi_malloc(sizeof *e);
    if (!e) return pdi_error(PD_ERR_NOMEM, "nn.embedding: out of memory");
    if (pdi_nn_embedding_init(e, num_embeddings, dim, NULL) || pd_init_normal_(e->weight, 0, 1, g)) {
        pd_nn_embedding_destroy(e);
        return NULL;
    }
    return e;
}

void pd_nn_embedding_destroy(struct pd_nn_embedding *e)
{
    if (!e) return;
    pd_tensor_release(e->weight);
    free(e);
}

struct pd_tensor *pd_nn_embedding_forward(struct pd_nn_embedding *e, struct pd_tensor *ids)
{
    if (!e) return pdi_error(PD_ERR_NULL, "nn.embedding: module is NULL");
    return pdi_nn_prep(e->weight, 1, pd_embedding(ids, e->weight));
}

int pd_nn_embedding_params(struct pd_nn_embedding *e, const char *prefix, struct pd_state_dict *sd)
{
    if (!e) return pdi_errorf(PD_ERR_NULL, "nn.embedding: module is NULL");
    return pdi_nn_add(sd, prefix, "weight", e->weight);
}

/* ---- RMSNorm ---------------------------------------------------------- */

int pdi_nn_rmsnorm_init(struct pd_nn_rmsnorm *n, int64_t dim, double eps, struct pdi_nn_arena *ar)
{
    memset(n, 0, sizeof *n);
    if (dim <= 0 || !(eps >= 0 && eps < INFINITY))
        return pdi_errorf(PD_ERR_INVALID, "nn.rmsnorm: need dim > 0 and finite eps >= 0, got dim %lld eps %g",
                          (long long)dim, eps);
    n->dim = dim;
    n->eps = eps;
    n->weight = pdi_nn_param(ar, &dim, 1);
    if (!n->weight || pd_init_ones_(n->weight)) {
        pdi_nn_rmsnorm_fini(n);
        return pdi_status_of(NULL, "nn: parameters");
    }
    return PD_OK;
}

void pdi_nn_rmsnorm_fini(struct pd_nn_rmsnorm *n)
{
    pd_tensor_release(n->weight);
    n->weight = NULL;
}

struct pd_nn_rmsnorm *pd_nn_rmsnorm_create(int64_t dim, double eps)
{
    struct pd_nn_rmsnorm *n = pdi_malloc(sizeof *n);
    if (!n) return pdi_error(PD_ERR_NOMEM, "nn.rmsnorm: out of memory");
    if (pdi_nn_rmsnorm_init(n, dim, eps, NULL)) {
        free(n);
        return NULL;
    }
    return n;
}

void pd_nn_rmsnorm_destroy(struct pd_nn_rmsnorm *n)
{
    if (!n) return;
    pdi_nn_rmsnorm_fini(n);
    free(n);
}

struct pd_tensor *pd_nn_rmsnorm_forward(struct pd_nn_rmsnorm *n, struct pd_tensor *x)
{
    if (!n) return pdi_error(PD_ERR_NULL, "nn.rmsnorm: module is NULL");
    return pdi_nn_prep(n->weight, 1, pd_rms_norm(pdi_nn_prep(n->weight, 0, x), 1, n->weight, n->eps));
}

int pd_nn_rmsnorm_params(struct pd_nn_rmsnorm *n, const char *prefix, struct pd_state_dict *sd)
{
    if (!n) return pdi_errorf(PD_ERR_NULL, "nn.rmsnorm: module is NULL");
    return pdi_nn_add(sd, prefix, "weight", n->weight);
}

/* ---- LayerNorm -------------------------------------------------------- */

struct pd_nn_layernorm *pd_nn_layernorm_create(int64_t dim, double eps, int affine)
{
    if (dim <= 0 || !(eps >= 0 && eps < INFINITY))
        return pdi_error(PD_ERR_INVALID, "nn.layernorm: need dim > 0 and finite eps >= 0, got dim %lld eps %g",
                         (long long)dim, eps);
    struct pd_nn_layernorm *n = pdi_calloc(1, sizeof *n);
    if (!n) return pdi_error(PD_ERR_NOMEM, "nn.layernorm: out of memory");
    n->dim = dim;
    n->eps = eps;
    if (affine) {
        n->weight = pdi_nn_param(NULL, &dim, 1);
        n->bias = n->weight ? pdi_nn_param(NULL, &dim, 1) : NULL;
        if (!n->bias || pd_init_ones_(n->weight) || pd_init_zeros_(n->bias)) {
            pd_nn_layernorm_destroy(n);
            return NULL;
        }
    }
    return n;
}

void pd_nn_layernorm_destroy(struct pd_nn_layernorm *n)
{
    if (!n) return;
    pd_tensor_release(n->weight);
    pd_tensor_release(n->bias);
    free(n);
}

struct pd_tensor *pd_nn_layernorm_forward(struct pd_nn_layernorm *n, struct pd_tensor *x)
{
    if (!n) return pdi_error(PD_ERR_NULL, "nn.layernorm: module is NULL");
    return pd_layer_norm(x, 1, n->weight, n->bias, n->eps);
}

int pd_nn_layernorm_params(struct pd_nn_layernorm *n, const char *prefix, struct pd_state_dict *sd)
{
    if (!n) return pdi_errorf(PD_ERR_NULL, "nn.layernorm: module is NULL");
    int st = pdi_nn_add(sd, prefix, "weight", n->weight);
    return st ? st : pdi_nn_add(sd, prefix, "bias", n->bias);
}

/* ---- Dropout ---------------------------------------------------------- */

struct pd_nn_dropout *pd_nn_dropout_create(double p, uint64_t seed)
{
    if (!(p >= 0 && p < 1)) return pdi_error(PD_ERR_INVALID, "nn.dropout: p must be in [0, 1), got %g", p);
    struct pd_nn_dropout *d = pdi_calloc(1, sizeof *d);
    if (!d) return pdi_error(PD_ERR_NOMEM, "nn.dropout: out of memory");
    d->p = p;
    d->training = 1;
    d->gen = pd_generator_create(seed);
    if (!d->gen) {
        free(d);
        return pdi_error(PD_ERR_NOMEM, "nn.dropout: out of memory");
    }
    return d;
}

void pd_nn_dropout_destroy(struct pd_nn_dropout *d)
{
    if (!d) return;
    pd_generator_destroy(d->gen);
    free(d);
}

struct pd_tensor *pd_nn_dropout_forward(struct pd_nn_dropout *d, struct pd_tensor *x)
{
    if (!d) return pdi_error(PD_ERR_NULL, "nn.dropout: module is NULL");
    return pd_dropout(x, d->p, d->training, d->gen);
}

/* ---- SwiGLU MLP ------------------------------------------------------- */

int pdi_nn_mlp_init(struct pd_nn_mlp *m, int64_t dim, int64_t hidden, struct pdi_nn_arena *ar)
{
    memset(m, 0, sizeof *m);
    int st = pdi_nn_linear_init(&m->gate_proj, dim, hidden, 0, ar);
    if (!st) st = pdi_nn_linear_init(&m->up_proj, dim, hidden, 0, ar);
    if (!st) st = pdi_nn_linear_init(&m->down_proj, hidden, dim, 0, ar);
    if (st) pdi_nn_mlp_fini(m);
    return st;
}

int pdi_nn_mlp_reset(struct pd_nn_mlp *m, struct pd_generator *g)
{
    int st = pdi_nn_linear_reset(&m->gate_proj, g);
    if (!st) st = pdi_nn_linear_reset(&m->up_proj, g);
    if (!st) st = pdi_nn_linear_reset(&m->down_proj, g);
    return st;
}

void pdi_nn_mlp_fini(struct pd_nn_mlp *m)
{
    pdi_nn_linear_fini(&m->gate_proj);
    pdi_nn_linear_fini(&m->up_proj);
    pdi_nn_linear_fini(&m->down_proj);
}

struct pd_nn_mlp *pd_nn_mlp_create(int64_t dim, int64_t hidden_dim, struct pd_generator *g)
{
    struct pd_nn_mlp *m = pdi_malloc(sizeof *m);
    if (!m) return pdi_error(PD_ERR_NOMEM, "nn.mlp: out of memory");
    if (pdi_nn_mlp_init(m, dim, hidden_dim, NULL) || pdi_nn_mlp_reset(m, g)) {
        pd_nn_mlp_destroy(m);
        return NULL;
    }
    return m;
}

void pd_nn_mlp_destroy(struct pd_nn_mlp *m)
{
    if (!m) return;
    pdi_nn_mlp_fini(m);
    free(m);
}

struct pd_tensor *pd_nn_mlp_forward(struct pd_nn_mlp *m, struct pd_tensor *x)
{
    if (!m) return pdi_error(PD_ERR_NULL, "nn.mlp: module is NULL");
    struct pd_tensor *h = pd_swiglu(pd_nn_linear_forward(&m->gate_proj, x), pd_nn_linear_forward(&m->up_proj, x));
    return pd_nn_linear_forward(&m->down_proj, h);
}

int pd_nn_mlp_params(struct pd_nn_mlp *m, const char *prefix, struct pd_state_dict *sd)
{
    if (!m) return pdi_errorf(PD_ERR_NULL, "nn.mlp: module is NULL");
    char b[512];
    int st = pd_nn_linear_params(&m->gate_proj, pdi_nn_join(b, sizeof b, prefix, "gate_proj"), sd);
    if (!st) st = pd_nn_linear_params(&m->up_proj, pdi_nn_join(b, sizeof b, prefix, "up_proj"), sd);
    if (!st) st = pd_nn_linear_params(&m->down_proj, pdi_nn_join(b, sizeof b, prefix, "down_proj"), sd);
    return st;
}
