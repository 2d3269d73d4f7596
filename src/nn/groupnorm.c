/* paddle.c — the GroupNorm module (include/pd/nn.h): pd_group_norm with
 * per-channel weight (init 1) and bias (init 0) when affine.
 *
 * Ownership as every module (include/pd/nn.h): one reference to each
 * parameter, released by _destroy.
 */
#include <math.h>
#include <stdlib.h>

#include "nn/nn_internal.h"
#include "pd/nn.h"

struct pd_nn_groupnorm *pd_nn_groupnorm_create(int64_t num_groups, int64_t num_channels, double eps, int affine)
{
    if (num_groups <= 0 || num_channels <= 0 || num_channels % num_groups || !(eps >= 0 && eps < INFINITY))
        return pdi_error(PD_ERR_INVALID, "nn.groupnorm: need num_groups > 0 dividing num_channels > 0 and finite "
                         "eps >= 0, got num_groups %lld num_channels %lld eps %g", (long long)num_groups,
                         (long long)num_channels, eps);
    struct pd_nn_groupnorm *n = pdi_calloc(1, sizeof *n);
    if (!n) return pdi_error(PD_ERR_NOMEM, "nn.groupnorm: out of memory");
    n->num_groups = num_groups;
    n->num_channels = num_channels;
    n->eps = eps;
    if (affine) {
        n->weight = pdi_nn_param(NULL, &num_channels, 1);
        n->bias = n->weight ? pdi_nn_param(NULL, &num_channels, 1) : NULL;
        if (!n->bias || pd_init_ones_(n->weight) || pd_init_zeros_(n->bias)) {
            pd_nn_groupnorm_destroy(n);
            return NULL;
        }
    }
    return n;
}

void pd_nn_groupnorm_destroy(struct pd_nn_groupnorm *n)
{
    if (!n) return;
    pd_tensor_release(n->weight);
    pd_tensor_release(n->bias);
    free(n);
}

struct pd_tensor *pd_nn_groupnorm_forward(struct pd_nn_groupnorm *n, struct pd_tensor *x)
{
    if (!n) return pdi_error(PD_ERR_NULL, "nn.groupnorm: module is NULL");
    if (x && (pd_tensor_ndim(x) < 2 || pd_tensor_shape(x)[1] != n->num_channels))
        return pdi_error(PD_ERR_INVALID, "nn.groupnorm: x must be [N, %lld, ...] for this module, got %d dims%s",
                         (long long)n->num_channels, pd_tensor_ndim(x),
                         pd_tensor_ndim(x) >= 2 ? " with another channel count" : "");
    return pd_group_norm(x, n->num_groups, n->weight, n->bias, n->eps);
}

int pd_nn_groupnorm_params(struct pd_nn_groupnorm *n, const char *prefix, struct pd_state_dict *sd)
{
    if (!n) return pdi_errorf(PD_ERR_NULL, "nn.groupnorm: module is NULL");
    int st = pdi_nn_add(sd, prefix, "weight", n->weight);
    return st ? st : pdi_nn_add(sd, prefix, "bias", n->bias);
}
