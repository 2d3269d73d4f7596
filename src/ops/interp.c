/* paddle.c — image resizing: interpolate (nearest, bilinear; rows in
 * ops_interp.def), its adjoint interpolate_backward, and the public
 * pd_interpolate.
 *
 * Invariants:
 *   - both ops are linear in their one input and adjoint to each other, so
 *     each one's VJP is the other one with the same attributes: gradients
 *     of any order come out of the two kernels;
 *   - the wrapper turns a size or a scale factor into the attributes as
 *     torch.nn.functional.interpolate does (recompute_scale_factor off):
 *     out = floor(in * scale), and the kernels map positions with 1/scale.
 */
#include <math.h>
#include <string.h>

#include "core/internal.h"

/* x must be a floating [N, C, H, W] with H, W >= 1; nearest takes no
 * align_corners. Shared by both ops (their sets start alike). */
static int check_interp(const struct pdi_call *c, const struct pd_tensor *x, const char *what)
{
    const char *op = pdi_ops[c->op].name;
    char b0[PDI_SHAPE_BUF];
    if (!pd_dtype_is_float(x->dtype))
        return pdi_errorf(PD_ERR_INVALID, "%s: %s must be floating point, got %s", op, what, pd_dtype_name(x->dtype));
    if (x->ndim != 4 || x->shape[2] < 1 || x->shape[3] < 1)
        return pdi_errorf(PD_ERR_INVALID, "%s: %s must be [N, C, H, W] with H, W >= 1, got %s", op, what,
                          pdi_shape_str(x->shape, x->ndim, b0, sizeof b0));
    if (c->a.interpolate.mode == PD_INTERP_NEAREST && c->a.interpolate.align_corners)
        return pdi_errorf(PD_ERR_INVALID, "%s: align_corners applies to bilinear only, not nearest", op);
    return PD_OK;
}

static int set_out(struct pdi_call *c, const struct pd_tensor *x, int64_t h, int64_t w)
{
    struct pdi_meta *m = &c->meta[0];
    m->dtype = x->dtype;
    m->ndim = 4;
    m->shape[0] = x->shape[0];
    m->shape[1] = x->shape[1];
    m->shape[2] = h;
    m->shape[3] = w;
    return pdi_check_shape(pdi_ops[c->op].name, m->shape, 4);
}

int pdi_infer_interpolate(struct pdi_call *c)
{
    int rc = check_interp(c, c->in[0], "x");
    return rc ? rc : set_out(c, c->in[0], c->a.interpolate.out_h, c->a.interpolate.out_w);
}

int pdi_infer_interpolate_backward(struct pdi_call *c)
{
    const struct pd_tensor *g = c->in[0];
    int rc = check_interp(c, g, "g");
    if (rc) return rc;
    const struct pdi_attrs_interpolate_backward *a = &c->a.interpolate_backward;
    if (g->shape[2] != a->out_h || g->shape[3] != a->out_w)
        return pdi_errorf(PD_ERR_INVALID, "interpolate_backward: g is %lld x %lld, the attributes say %lld x %lld",
                          (long long)g->shape[2], (long long)g->shape[3], (long long)a->out_h, (long long)a->out_w);
    return set_out(c, g, a->in_h, a->in_w);
}

/* d x = interpolate_backward(g): the forward's attributes plus x's size. */
int pdi_vjp_interpolate(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (!pdi_node_needs(n, 0)) return PD_OK;
    const struct pdi_attrs_interpolate *f = &n->a.interpolate;
    struct pdi_attrs a = {.interpolate_backward = {.mode = f->mode, .align_corners = f->align_corners,
                                                   .out_h = f->out_h, .out_w = f->out_w, .scale_h = f->scale_h,
                                                   .scale_w = f->scale_w, .in_h = n->in_meta[0].shape[2],
                                                   .in_w = n->in_meta[0].shape[3]}};
    gin[0] = pdi_call1(PD_OP_interpolate_backward, g[0], &a);
    return pdi_status_of(gin[0], __func__);
}

/* d g = interpolate(gg) with the same attributes (the adjoint's adjoint). */
int pdi_vjp_interpolate_backward(struct pdi_node *n, struct pd_tensor *const *g, struct pd_tensor **gin)
{
    if (!pdi_node_needs(n, 0)) return PD_OK;
    const struct pdi_attrs_interpolate_backward *b = &n->a.interpolate_backward;
    struct pdi_attrs a = {.interpolate = {.mode = b->mode, .align_corners = b->align_corners, .out_h = b->out_h,
                                          .out_w = b->out_w, .scale_h = b->scale_h, .scale_w = b->scale_w}};
    gin[0] = pdi_call1(PD_OP_interpolate, g[0], &a);
    return pdi_status_of(gin[0], __func__);
}

struct pd_tensor *pd_interpolate(struct pd_tensor *x, const int64_t *size, const double *scale,
                                 enum pd_interp_mode mode, int align_corners)
{
    if (!x) return NULL;
    char b0[PDI_SHAPE_BUF];
    if ((size == NULL) == (scale == NULL))
        return pdi_error(PD_ERR_INVALID, "interpolate: give exactly one of size and scale");
    if ((unsigned)mode > PD_INTERP_BILINEAR)
        return pdi_error(PD_ERR_INVALID, "interpolate: mode %d is not nearest (0) or bilinear (1)", (int)mode);
    if (x->ndim != 4)
        return pdi_error(PD_ERR_INVALID, "interpolate: x must be [N, C, H, W], got %s",
                         pdi_shape_str(x->shape, x->ndim, b0, sizeof b0));
    struct pdi_attrs a = {.interpolate = {.mode = mode, .align_corners = align_corners != 0}};
    int64_t out[2];
    double sc[2] = {0, 0};
    for (int i = 0; i < 2 && scale; i++) {
        double o = floor((double)x->shape[2 + i] * scale[i]);
        if (!(scale[i] > 0 && o < 0x1p62))
            return pdi_error(PD_ERR_INVALID, "interpolate: scale factors must be finite and > 0, got %g x %g",
                             scale[0], scale[1]);
        out[i] = (int64_t)o;
        sc[i] = scale[i];
    }
    if (size) memcpy(out, size, sizeof out);
    if (out[0] < 1 || out[1] < 1)
        return pdi_error(PD_ERR_INVALID, "interpolate: the output size %lld x %lld (of input %s) must be at least "
                         "1 x 1", (long long)out[0], (long long)out[1], pdi_shape_str(x->shape, x->ndim, b0, sizeof b0));
    a.interpolate.out_h = out[0];
    a.interpolate.out_w = out[1];
    a.interpolate.scale_h = sc[0];
    a.interpolate.scale_w = sc[1];
    return pdi_call1(PD_OP_interpolate, x, &a);
}
