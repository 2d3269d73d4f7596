#!/usr/bin/python3
"""PyTorch reference fixtures for paddle.c's parity test (tests/test_torch_parity.c).

Usage (Debian's python3-torch; /usr/bin/python3 is the interpreter that has it):

    /usr/bin/python3 tools/ref/op_fixtures.py tests/fixtures/ops

For every case below this writes <dir>/<case>.fixture: the inputs (drawn by
torch from a fixed seed), the forward output, a random cotangent w of the
output's shape, and the gradient of sum(out * w) w.r.t. every float input,
all computed by PyTorch in float64. The C test calls the same op through the
paddle.c public API and compares. Output is deterministic: the same torch
build gives byte-identical files, and a case's data depends only on BASE_SEED
and its name (adding a case does not change the others). Files of cases that
no longer exist are removed.

File format (version 1), readable from C with fgets/fread only:

    PDFIX 1                             magic and version
    # free text                         comment lines (ignored)
    case <name>                         unique case name (= file stem)
    op <op>                             which paddle.c call (see test_torch_parity.c)
    attr <key> i <int>...               integer attribute(s)
    attr <key> f <float>...             float attribute(s) (repr, round-trips; inf/nan allowed)
    tensor <role> <name> <dtype> <ndim> <d0> ... <d{ndim-1}>
    data                                end of header; raw data follows

  role:  in   an input of the op, in call order (name = argument name)
         out  the forward output (name "out")
         cot  the cotangent w of out (name "out")
         grad the gradient of sum(out * w) w.r.t. the input of that name
  dtype: f64 (IEEE double), i64 (int64), bool (one byte, 0/1)
  After the "data\\n" line come the tensors' elements, row-major, little
  endian, in the order of the tensor lines, with no padding. A 0-d tensor has
  ndim 0 and one element.
"""
import os
import sys
import zlib

import torch
import torch.nn.functional as F

# Chosen at random once (secrets.randbits(31)) and fixed so fixtures are reproducible.
BASE_SEED = 1530044959
INF = float("inf")

DT = {torch.float64: "f64", torch.int64: "i64", torch.bool: "bool"}


class Case:
    def __init__(self, name):
        self.name = name
        self.g = torch.Generator().manual_seed((BASE_SEED + zlib.crc32(name.encode())) % (1 << 62))
        self.inputs = []  # (name, tensor)

    # ---- input generators (all draws go through this case's generator) ----
    def randn(self, *shape, scale=1.0):
        return torch.randn(*shape, generator=self.g, dtype=torch.float64) * scale

    def uniform(self, lo, hi, *shape):
        return lo + (hi - lo) * torch.rand(*shape, generator=self.g, dtype=torch.float64)

    def away(self, lo, hi, *shape):
        """|x| in [lo, hi) with a random sign: keeps inputs off kinks and poles."""
        mag = self.uniform(lo, hi, *shape)
        sign = torch.randint(0, 2, shape, generator=self.g).to(torch.float64) * 2 - 1
        return mag * sign

    def randint(self, lo, hi, *shape):
        return torch.randint(lo, hi, shape, generator=self.g, dtype=torch.int64)

    def mask(self, *shape):
        return torch.rand(*shape, generator=self.g) < 0.5

    def perm_rows(self, rows, n, k):
        """rows x k int64 indices, distinct within each row, from [0, n)."""
        return torch.stack([torch.randperm(n, generator=self.g)[:k] for _ in range(rows)])


CASES = []
# Inputs that are constants of the op (no gradient; PyTorch has none for
# them, e.g. cross_entropy's class weights): case name -> input names. Their
# files carry no grad line for those inputs.
CONST_INPUTS = {}


def case(name, op, fn, make, **attrs):
    """Register a case. make(c) returns the inputs as [(name, tensor)] in call
    order; fn(*tensors) is the torch computation; attrs go to the header."""
    CASES.append((name, op, fn, make, attrs))


# ---------------------------------------------------------------- unary
def unary(name, op, fn, gen, **attrs):
    case(name, op, fn, lambda c: [("x", gen(c))], **attrs)


unary("exp", "exp", torch.exp, lambda c: c.randn(3, 4))
unary("expm1", "expm1", torch.expm1, lambda c: c.randn(3, 4))
unary("log", "log", torch.log, lambda c: c.uniform(0.1, 3.0, 3, 4))
unary("log1p", "log1p", torch.log1p, lambda c: c.uniform(-0.6, 3.0, 3, 4))
unary("log2", "log2", torch.log2, lambda c: c.uniform(0.1, 3.0, 3, 4))
unary("sqrt", "sqrt", torch.sqrt, lambda c: c.uniform(0.1, 3.0, 3, 4))
unary("rsqrt", "rsqrt", torch.rsqrt, lambda c: c.uniform(0.1, 3.0, 3, 4))
unary("reciprocal", "reciprocal", torch.reciprocal, lambda c: c.away(0.2, 2.0, 3, 4))
unary("square", "square", torch.square, lambda c: c.randn(3, 4))
unary("abs", "abs", torch.abs, lambda c: c.away(0.1, 2.0, 3, 4))
unary("neg", "neg", torch.neg, lambda c: c.randn(3, 4))
unary("sin", "sin", torch.sin, lambda c: c.randn(3, 4, scale=2.0))
unary("cos", "cos", torch.cos, lambda c: c.randn(3, 4, scale=2.0))
unary("tan", "tan", torch.tan, lambda c: c.uniform(-1.2, 1.2, 3, 4))
unary("tanh", "tanh", torch.tanh, lambda c: c.randn(3, 4, scale=2.0))
unary("sigmoid", "sigmoid", torch.sigmoid, lambda c: c.randn(3, 4, scale=3.0))
unary("relu", "relu", torch.relu, lambda c: c.away(0.1, 2.0, 3, 4))
unary("gelu_erf", "gelu", lambda x: F.gelu(x), lambda c: c.randn(3, 5, scale=2.0), approximate=0)
unary("gelu_tanh", "gelu", lambda x: F.gelu(x, approximate="tanh"), lambda c: c.randn(3, 5, scale=2.0),
      approximate=1)
unary("silu", "silu", F.silu, lambda c: c.randn(3, 5, scale=2.0))
# beta * x crosses the threshold for some elements (linear branch), never on it.
unary("softplus", "softplus", lambda x: F.softplus(x, beta=2.0, threshold=3.0),
      lambda c: torch.cat([c.uniform(-3.0, 1.4, 8), c.uniform(1.6, 4.0, 7)]).reshape(3, 5), beta=2.0, threshold=3.0)
unary("softplus_default", "softplus", lambda x: F.softplus(x), lambda c: c.randn(3, 5, scale=4.0),
      beta=1.0, threshold=20.0)
unary("mish", "mish", F.mish, lambda c: c.randn(3, 5, scale=2.0))
unary("erf", "erf", torch.erf, lambda c: c.randn(3, 5, scale=1.5))
unary("elu", "elu", lambda x: F.elu(x, alpha=0.7), lambda c: c.away(0.05, 2.5, 3, 5), alpha=0.7)
unary("leaky_relu", "leaky_relu", lambda x: F.leaky_relu(x, 0.03), lambda c: c.away(0.05, 2.5, 3, 5),
      negative_slope=0.03)
unary("pow_scalar_frac", "pow_scalar", lambda x: torch.pow(x, 2.5), lambda c: c.uniform(0.2, 2.0, 3, 4),
      exponent=2.5)
unary("pow_scalar_int_negbase", "pow_scalar", lambda x: torch.pow(x, 3.0), lambda c: c.randn(3, 4), exponent=3.0)
unary("pow_scalar_neg", "pow_scalar", lambda x: torch.pow(x, -1.5), lambda c: c.uniform(0.3, 2.0, 3, 4),
      exponent=-1.5)
# Values sit away from the bounds (the gradient is discontinuous there).
unary("clip", "clip", lambda x: torch.clamp(x, -0.5, 0.8),
      lambda c: torch.cat([c.uniform(-2.0, -0.6, 5), c.uniform(-0.4, 0.7, 5), c.uniform(0.9, 2.0, 5)])[
          torch.randperm(15, generator=c.g)].reshape(3, 5), lo=-0.5, hi=0.8)
unary("scale", "scale", lambda x: x * -1.75, lambda c: c.randn(3, 4), s=-1.75)
unary("add_scalar", "add_scalar", lambda x: x + 0.625, lambda c: c.randn(3, 4), s=0.625)


# ---------------------------------------------------------------- binary (broadcasting)
def binary(name, op, fn, ga, gb, **attrs):
    case(name, op, fn, lambda c: [("a", ga(c)), ("b", gb(c))], **attrs)


binary("add_bcast", "add", torch.add, lambda c: c.randn(3, 1, 4), lambda c: c.randn(2, 4))
binary("add_scalar_tensor", "add", torch.add, lambda c: c.randn(2, 3), lambda c: c.randn(()))
binary("sub_bcast", "sub", torch.sub, lambda c: c.randn(4), lambda c: c.randn(3, 4))
binary("mul_bcast", "mul", torch.mul, lambda c: c.randn(2, 3, 1), lambda c: c.randn(1, 3, 5))
binary("div_bcast", "div", torch.div, lambda c: c.randn(3, 4), lambda c: c.away(0.3, 2.0, 3, 1))
binary("pow_bcast", "pow", torch.pow, lambda c: c.uniform(0.2, 2.5, 3, 4), lambda c: c.randn(4))
binary("maximum_bcast", "maximum", torch.maximum, lambda c: c.randn(3, 4), lambda c: c.randn(4))
binary("minimum_bcast", "minimum", torch.minimum, lambda c: c.randn(2, 1, 3), lambda c: c.randn(4, 1))
binary("atan2_bcast", "atan2", torch.atan2, lambda c: c.randn(3, 4), lambda c: c.randn(3, 1))
binary("remainder_bcast", "remainder", torch.remainder, lambda c: c.randn(3, 4, scale=3.0),
       lambda c: c.away(0.7, 1.9, 4))
case("where_bcast", "where", torch.where,
     lambda c: [("cond", c.mask(3, 1)), ("a", c.randn(3, 4)), ("b", c.randn(4))])
case("where_cond_bcast", "where", torch.where,
     lambda c: [("cond", c.mask(2, 3, 4)), ("a", c.randn(3, 1)), ("b", c.randn(()))])


# ---------------------------------------------------------------- reductions
def axes_list(axes):
    return list(axes) if axes is not None else []


def red(name, op, fn, gen, axes=None, keepdim=0, **attrs):
    case(name, op, fn, lambda c: [("x", gen(c))], axes=axes_list(axes), keepdim=keepdim, **attrs)


def tdims(axes):
    return tuple(axes) if axes else None


red("sum_axes02", "sum", lambda x: x.sum(dim=(0, 2)), lambda c: c.randn(2, 3, 4), axes=(0, 2))
red("sum_all", "sum", lambda x: x.sum(), lambda c: c.randn(3, 4))
red("sum_neg_keepdim", "sum", lambda x: x.sum(dim=-1, keepdim=True), lambda c: c.randn(2, 3, 4), axes=(-1,),
    keepdim=1)
red("mean_axis1_keepdim", "mean", lambda x: x.mean(dim=1, keepdim=True), lambda c: c.randn(2, 5, 3), axes=(1,),
    keepdim=1)
red("mean_all", "mean", lambda x: x.mean(), lambda c: c.randn(4, 5))
red("prod_axis1", "prod", lambda x: x.prod(dim=1), lambda c: c.away(0.5, 1.5, 3, 4, 2), axes=(1,))
red("prod_all", "prod", lambda x: x.prod(), lambda c: c.away(0.6, 1.4, 2, 5))
red("amax_axes02", "amax", lambda x: x.amax(dim=(0, 2)), lambda c: c.randn(2, 3, 4), axes=(0, 2))
red("amax_all", "amax", lambda x: x.amax(), lambda c: c.randn(3, 4))
red("amin_axis1_keepdim", "amin", lambda x: x.amin(dim=1, keepdim=True), lambda c: c.randn(3, 5), axes=(1,),
    keepdim=1)
red("var_axis1_corr1", "var", lambda x: torch.var(x, dim=1, correction=1), lambda c: c.randn(3, 6, 2),
    axes=(1,), correction=1)
red("var_all_corr0", "var", lambda x: torch.var(x, dim=None, correction=0), lambda c: c.randn(4, 5), correction=0)
red("var_axes_corr2_keepdim", "var", lambda x: torch.var(x, dim=(0, 2), correction=2, keepdim=True),
    lambda c: c.randn(3, 2, 4), axes=(0, 2), correction=2, keepdim=1)
red("std_axes02_keepdim", "std", lambda x: torch.std(x, dim=(0, 2), correction=1, keepdim=True),
    lambda c: c.randn(3, 4, 5), axes=(0, 2), correction=1, keepdim=1)
red("std_all_corr0", "std", lambda x: torch.std(x, dim=None, correction=0), lambda c: c.randn(3, 5), correction=0)
red("logsumexp_axis1", "logsumexp", lambda x: torch.logsumexp(x, dim=1), lambda c: c.randn(3, 6, scale=3.0),
    axes=(1,))
red("logsumexp_all", "logsumexp", lambda x: torch.logsumexp(x, dim=(0, 1)), lambda c: c.randn(3, 4, scale=3.0))
red("norm_p1_axis_neg1", "norm", lambda x: torch.linalg.vector_norm(x, 1, dim=-1),
    lambda c: c.away(0.1, 2.0, 3, 5), axes=(-1,), p=1.0)
red("norm_p2_axes01", "norm", lambda x: torch.linalg.vector_norm(x, 2, dim=(0, 1)), lambda c: c.randn(3, 4, 2),
    axes=(0, 1), p=2.0)
red("norm_pinf_all", "norm", lambda x: torch.linalg.vector_norm(x, INF), lambda c: c.randn(4, 5), p=INF)
red("norm_pinf_axis1_keepdim", "norm", lambda x: torch.linalg.vector_norm(x, INF, dim=1, keepdim=True),
    lambda c: c.randn(3, 5), axes=(1,), p=INF, keepdim=1)

# Any p: torch.linalg.vector_norm's values and gradients (subgradient 0 at
# x == 0; the zero vector's gradient is 0).
def vnorm(p, dim=None, keepdim=False):
    return lambda x: torch.linalg.vector_norm(x, p, dim=dim, keepdim=keepdim)


red("norm_p0_axes02", "norm", vnorm(0, (0, 2)), lambda c: with_zeros(c.randn(2, 3, 4), (0, 1, 2), (1, 0, 0)),
    axes=(0, 2), p=0.0)
red("norm_p3_axes02_keepdim", "norm", vnorm(3, (0, 2), True), lambda c: c.randn(2, 3, 4), axes=(0, 2), keepdim=1,
    p=3.0)
red("norm_p0.5_zeros_axis1", "norm", vnorm(0.5, 1), lambda c: with_zeros(c.away(0.2, 2.0, 3, 4), (0, 1), (2, 3)),
    axes=(1,), p=0.5)
red("norm_p1.5_zero_row", "norm", vnorm(1.5, 1),
    lambda c: with_zeros(with_zeros(c.randn(3, 3), (1, 0), (1, 1), (1, 2)), (2, 0)), axes=(1,), p=1.5)
red("norm_p-1_all", "norm", vnorm(-1), lambda c: c.away(0.2, 2.0, 3, 4), p=-1.0)
red("norm_p-1_with_zero_axis0", "norm", vnorm(-1, 0), lambda c: with_zeros(c.away(0.2, 2.0, 3, 4), (1, 2)),
    axes=(0,), p=-1.0)
red("norm_p-2.5_axis_neg1", "norm", vnorm(-2.5, -1), lambda c: c.away(0.3, 2.0, 2, 5), axes=(-1,), p=-2.5)
red("norm_p-inf_ties_axis1", "norm", vnorm(-INF, 1),
    lambda c: torch.tensor([[1.0, -3.0, -1.0], [2.0, -0.5, 2.0], [0.0, 4.0, 0.0]], dtype=torch.float64),
    axes=(1,), p=-INF)
red("norm_p4_all", "norm", vnorm(4), lambda c: c.randn(3, 5), p=4.0)


def scan(name, op, fn, gen, axis):
    case(name, op, fn, lambda c: [("x", gen(c))], axis=axis)


scan("cumsum_axis1", "cumsum", lambda x: torch.cumsum(x, 1), lambda c: c.randn(3, 5, 2), 1)
scan("cumsum_axis_neg1", "cumsum", lambda x: torch.cumsum(x, -1), lambda c: c.randn(4, 6), -1)
scan("cumprod_axis0", "cumprod", lambda x: torch.cumprod(x, 0), lambda c: c.away(0.5, 1.5, 5, 3), 0)
scan("cumprod_axis1", "cumprod", lambda x: torch.cumprod(x, 1), lambda c: c.away(0.5, 1.5, 2, 6), 1)
case("max_axis1_values", "max", lambda x: torch.max(x, dim=1).values, lambda c: [("x", c.randn(3, 5))],
     axis=1, keepdim=0)
case("min_axis0_keepdim_values", "min", lambda x: torch.min(x, dim=0, keepdim=True).values,
     lambda c: [("x", c.randn(4, 3))], axis=0, keepdim=1)


# ---------------------------------------------------------------- linalg
case("matmul_batched_bcast", "matmul", lambda a, b: torch.matmul(a, b),
     lambda c: [("a", c.randn(2, 1, 3, 4)), ("b", c.randn(3, 4, 5))], trans_a=0, trans_b=0)
case("matmul_trans_ab", "matmul", lambda a, b: torch.matmul(a.transpose(-1, -2), b.transpose(-1, -2)),
     lambda c: [("a", c.randn(2, 4, 3)), ("b", c.randn(5, 4))], trans_a=1, trans_b=1)
case("matmul_vec_mat", "matmul", lambda a, b: torch.matmul(a, b),
     lambda c: [("a", c.randn(4)), ("b", c.randn(2, 4, 3))], trans_a=0, trans_b=0)
case("matmul_mat_vec", "matmul", lambda a, b: torch.matmul(a, b),
     lambda c: [("a", c.randn(2, 3, 4)), ("b", c.randn(4))], trans_a=0, trans_b=0)
case("bmm", "bmm", torch.bmm, lambda c: [("a", c.randn(2, 3, 4)), ("b", c.randn(2, 4, 5))])
case("outer", "outer", torch.outer, lambda c: [("a", c.randn(4)), ("b", c.randn(3))])
case("dot", "dot", torch.dot, lambda c: [("a", c.randn(6)), ("b", c.randn(6))])
case("linear_bias", "linear", F.linear,
     lambda c: [("x", c.randn(2, 3, 4)), ("w", c.randn(5, 4)), ("bias", c.randn(5))])
case("linear_nobias", "linear", F.linear, lambda c: [("x", c.randn(3, 4)), ("w", c.randn(2, 4))])
case("conv2d_s_p_d_g", "conv2d",
     lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
     lambda c: [("x", c.randn(2, 4, 7, 8)), ("w", c.randn(6, 2, 3, 3)), ("bias", c.randn(6))],
     stride=[2, 1], padding=[1, 2], dilation=[1, 2], groups=2)
case("conv2d_plain", "conv2d", lambda x, w: F.conv2d(x, w),
     lambda c: [("x", c.randn(1, 3, 5, 6)), ("w", c.randn(4, 3, 2, 3))],
     stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1)
case("conv2d_depthwise", "conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=3),
     lambda c: [("x", c.randn(2, 3, 6, 5)), ("w", c.randn(3, 1, 3, 3)), ("bias", c.randn(3))],
     stride=[2, 2], padding=[1, 1], dilation=[1, 1], groups=3)
case("conv1d", "conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=1),
     lambda c: [("x", c.randn(2, 3, 9)), ("w", c.randn(4, 3, 3)), ("bias", c.randn(4))],
     stride=2, padding=1, dilation=2, groups=1)
# Random normals: no ties inside a window, so the max gradient is well defined.
case("max_pool2d_k32_s21_p11", "max_pool2d",
     lambda x: F.max_pool2d(x, kernel_size=(3, 2), stride=(2, 1), padding=(1, 1)),
     lambda c: [("x", c.randn(2, 3, 7, 6))], kernel=[3, 2], stride=[2, 1], padding=[1, 1])
case("max_pool2d_k2", "max_pool2d", lambda x: F.max_pool2d(x, 2),
     lambda c: [("x", c.randn(1, 2, 6, 5))], kernel=[2, 2], stride=[2, 2], padding=[0, 0])
# paddle.c's avg_pool2d excludes padding from the divisor (Paddle's
# exclusive=True, see ops_linalg.def): torch's count_include_pad=False.
case("avg_pool2d_k3_s2_p1", "avg_pool2d",
     lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
     lambda c: [("x", c.randn(2, 3, 7, 6))], kernel=[3, 3], stride=[2, 2], padding=[1, 1])
case("avg_pool2d_k22_s12", "avg_pool2d", lambda x: F.avg_pool2d(x, (2, 2), stride=(1, 2)),
     lambda c: [("x", c.randn(1, 2, 5, 6))], kernel=[2, 2], stride=[1, 2], padding=[0, 0])

# The options (pd_max_pool2d_ex, pd_avg_pool2d_ex): ceil_mode, and
# exclusive = not count_include_pad (exclusive=0 is torch's default).
case("max_pool2d_ceil_k3_s2_p1", "max_pool2d_ex",
     lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
     lambda c: [("x", c.randn(2, 3, 7, 6))], kernel=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=1)
case("max_pool2d_ceil_k2", "max_pool2d_ex", lambda x: F.max_pool2d(x, 2, ceil_mode=True),
     lambda c: [("x", c.randn(1, 2, 7, 5))], kernel=[2, 2], stride=[2, 2], padding=[0, 0], ceil_mode=1)
case("avg_pool2d_torch_default", "avg_pool2d_ex", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
     lambda c: [("x", c.randn(2, 3, 7, 6))], kernel=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=0, exclusive=0)
case("avg_pool2d_ceil_exclusive", "avg_pool2d_ex",
     lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     lambda c: [("x", c.randn(2, 2, 7, 6))], kernel=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=1, exclusive=1)
case("avg_pool2d_ceil_include_pad", "avg_pool2d_ex",
     lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=True),
     lambda c: [("x", c.randn(1, 2, 6, 6))], kernel=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=1, exclusive=0)
# ceil would give 4 windows on 5; the 4th starts past the input and the left padding
case("avg_pool2d_ceil_rule", "avg_pool2d_ex",
     lambda x: F.avg_pool2d(x, 2, stride=2, padding=1, ceil_mode=True, count_include_pad=True),
     lambda c: [("x", c.randn(1, 2, 5, 5))], kernel=[2, 2], stride=[2, 2], padding=[1, 1], ceil_mode=1, exclusive=0)


# ---------------------------------------------------------------- nn
case("softmax_axis1", "softmax", lambda x: torch.softmax(x, 1), lambda c: [("x", c.randn(2, 5, 3, scale=2.0))],
     axis=1)
case("log_softmax_axis_neg1", "log_softmax", lambda x: torch.log_softmax(x, -1),
     lambda c: [("x", c.randn(3, 6, scale=2.0))], axis=-1)


def ce_targets(c, n, ncls, ignore):
    t = c.randint(0, ncls, n)
    t[1] = ignore
    return t


case("cross_entropy_ls_ignore_mean", "cross_entropy",
     lambda x, t: F.cross_entropy(x, t, ignore_index=-1, label_smoothing=0.1),
     lambda c: [("logits", c.randn(6, 5, scale=2.0)), ("target", ce_targets(c, 6, 5, -1))],
     ignore_index=-1, label_smoothing=0.1, reduction=1)
case("cross_entropy_sum", "cross_entropy", lambda x, t: F.cross_entropy(x, t, reduction="sum"),
     lambda c: [("logits", c.randn(4, 3, scale=2.0)), ("target", c.randint(0, 3, 4))],
     ignore_index=-100, label_smoothing=0.0, reduction=2)
case("cross_entropy_none_ls", "cross_entropy",
     lambda x, t: F.cross_entropy(x, t, reduction="none", ignore_index=2, label_smoothing=0.25),
     lambda c: [("logits", c.randn(5, 4, scale=2.0)), ("target", c.randint(0, 4, 5))],
     ignore_index=2, label_smoothing=0.25, reduction=0)
case("cross_entropy_spatial_mean", "cross_entropy", lambda x, t: F.cross_entropy(x, t, ignore_index=0),
     lambda c: [("logits", c.randn(2, 4, 3, scale=2.0)), ("target", c.randint(0, 4, 2, 3))],
     ignore_index=0, label_smoothing=0.0, reduction=1)
case("cross_entropy_probs_ls", "cross_entropy", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2),
     lambda c: [("logits", c.randn(4, 5, scale=2.0)), ("target", torch.softmax(c.randn(4, 5), 1))],
     ignore_index=-100, label_smoothing=0.2, reduction=1)
case("nll_loss_ignore_mean", "nll_loss", lambda x, t: F.nll_loss(x, t, ignore_index=3),
     lambda c: [("logp", torch.log_softmax(c.randn(7, 5), 1)), ("target", c.randint(0, 5, 7))],
     ignore_index=3, reduction=1)
case("nll_loss_none", "nll_loss", lambda x, t: F.nll_loss(x, t, reduction="none"),
     lambda c: [("logp", c.randn(4, 3)), ("target", c.randint(0, 3, 4))], ignore_index=-100, reduction=0)
case("mse_loss_mean", "mse_loss", F.mse_loss, lambda c: [("x", c.randn(3, 4)), ("y", c.randn(3, 4))], reduction=1)
case("mse_loss_none", "mse_loss", lambda x, y: F.mse_loss(x, y, reduction="none"),
     lambda c: [("x", c.randn(2, 5)), ("y", c.randn(2, 5))], reduction=0)
case("layer_norm_wb_2axes", "layer_norm", lambda x, w, b: F.layer_norm(x, (4, 5), w, b, 1e-5),
     lambda c: [("x", c.randn(3, 4, 5, scale=2.0)), ("weight", c.randn(4, 5)), ("bias", c.randn(4, 5))],
     n_norm_axes=2, eps=1e-5)
case("layer_norm_plain", "layer_norm", lambda x: F.layer_norm(x, (6,), eps=1e-3),
     lambda c: [("x", c.randn(4, 6))], n_norm_axes=1, eps=1e-3)


def rms_norm_ref(x, w, eps=1e-6):
    return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps) * w


case("rms_norm_w", "rms_norm", rms_norm_ref, lambda c: [("x", c.randn(3, 6)), ("weight", c.randn(6))],
     n_norm_axes=1, eps=1e-6)
case("rms_norm_plain_2axes", "rms_norm",
     lambda x: x * torch.rsqrt(torch.mean(x * x, dim=(-2, -1), keepdim=True) + 1e-5),
     lambda c: [("x", c.randn(2, 3, 4))], n_norm_axes=2, eps=1e-5)
case("embedding_repeat_ids", "embedding", lambda ids, w: F.embedding(ids, w),
     lambda c: [("ids", torch.tensor([[1, 4, 1], [6, 0, 4]], dtype=torch.int64)), ("weight", c.randn(7, 4))])


# ---------------------------------------------------------------- nn: class weights, group_norm, interpolate
def weighted(name, op, fn, make, **attrs):
    """A loss case whose input "weight" (class weights) is a constant."""
    CONST_INPUTS[name] = ("weight",)
    case(name, op, fn, make, **attrs)


weighted("cross_entropy_w_mean", "cross_entropy", lambda x, t, w: F.cross_entropy(x, t, weight=w),
         lambda c: [("logits", c.randn(6, 5, scale=2.0)), ("target", c.randint(0, 5, 6)),
                    ("weight", c.uniform(0.2, 2.0, 5))],
         ignore_index=-100, label_smoothing=0.0, reduction=1)
weighted("cross_entropy_w_ls_ignore_mean", "cross_entropy",
         lambda x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=-1, label_smoothing=0.1),
         lambda c: [("logits", c.randn(7, 5, scale=2.0)), ("target", ce_targets(c, 7, 5, -1)),
                    ("weight", c.uniform(0.2, 2.0, 5))],
         ignore_index=-1, label_smoothing=0.1, reduction=1)
weighted("cross_entropy_w_ls_ignore_sum", "cross_entropy",
         lambda x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=2, label_smoothing=0.2, reduction="sum"),
         lambda c: [("logits", c.randn(6, 4, scale=2.0)), ("target", ce_targets(c, 6, 4, 2)),
                    ("weight", c.uniform(0.2, 2.0, 4))],
         ignore_index=2, label_smoothing=0.2, reduction=2)
weighted("cross_entropy_w_ls_none", "cross_entropy",
         lambda x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=-100, label_smoothing=0.25, reduction="none"),
         lambda c: [("logits", c.randn(5, 4, scale=2.0)), ("target", c.randint(0, 4, 5)),
                    ("weight", c.uniform(0.2, 2.0, 4))],
         ignore_index=-100, label_smoothing=0.25, reduction=0)
weighted("cross_entropy_w_spatial_ls_mean", "cross_entropy",
         lambda x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=0, label_smoothing=0.15),
         lambda c: [("logits", c.randn(2, 4, 3, 2, scale=2.0)), ("target", c.randint(0, 4, 2, 3, 2)),
                    ("weight", c.uniform(0.2, 2.0, 4))],
         ignore_index=0, label_smoothing=0.15, reduction=1)
weighted("cross_entropy_w_probs_ls_mean", "cross_entropy",
         lambda x, t, w: F.cross_entropy(x, t, weight=w, label_smoothing=0.2),
         lambda c: [("logits", c.randn(4, 5, scale=2.0)), ("target", torch.softmax(c.randn(4, 5), 1)),
                    ("weight", c.uniform(0.2, 2.0, 5))],
         ignore_index=-100, label_smoothing=0.2, reduction=1)
weighted("nll_loss_w_ignore_mean", "nll_loss", lambda x, t, w: F.nll_loss(x, t, weight=w, ignore_index=3),
         lambda c: [("logp", torch.log_softmax(c.randn(7, 5), 1)), ("target", c.randint(0, 5, 7)),
                    ("weight", c.uniform(0.2, 2.0, 5))],
         ignore_index=3, reduction=1)
weighted("nll_loss_w_spatial_none", "nll_loss", lambda x, t, w: F.nll_loss(x, t, weight=w, reduction="none"),
         lambda c: [("logp", c.randn(2, 3, 4)), ("target", c.randint(0, 3, 2, 4)), ("weight", c.uniform(0.2, 2.0, 3))],
         ignore_index=-100, reduction=0)
case("group_norm_g3_affine", "group_norm", lambda x, w, b: F.group_norm(x, 3, w, b, 1e-5),
     lambda c: [("x", c.randn(2, 6, 3, 2, scale=2.0)), ("weight", c.randn(6)), ("bias", c.randn(6))],
     num_groups=3, eps=1e-5)
case("group_norm_g2_plain", "group_norm", lambda x: F.group_norm(x, 2, eps=1e-3),
     lambda c: [("x", c.randn(3, 4, 5))], num_groups=2, eps=1e-3)
case("group_norm_2d_weight", "group_norm", lambda x, w: F.group_norm(x, 3, w, None, 1e-5),
     lambda c: [("x", c.randn(4, 6) + 3.0), ("weight", c.randn(6))], num_groups=3, eps=1e-5)
case("group_norm_instance", "group_norm", lambda x, w, b: F.group_norm(x, 4, w, b, 1e-5),
     lambda c: [("x", c.randn(2, 4, 3, 3)), ("weight", c.randn(4)), ("bias", c.randn(4))], num_groups=4, eps=1e-5)


def interp(name, mode, size=None, scale=None, align=None, shape=(2, 3, 3, 4)):
    kw = dict(mode=mode, align_corners=align)
    if size is not None:
        kw["size"] = size
    else:
        kw["scale_factor"] = scale
    attrs = dict(mode=0 if mode == "nearest" else 1, align_corners=1 if align else 0)
    # both keys always; the unused one is zeros
    attrs["size"] = list(size) if size is not None else [0, 0]
    attrs["scale"] = [float(v) for v in scale] if scale is not None else [0.0, 0.0]
    case(name, "interpolate", lambda x: F.interpolate(x, **kw), lambda c: [("x", c.randn(*shape))], **attrs)


interp("interpolate_nearest_up", "nearest", size=(5, 7))
interp("interpolate_nearest_down", "nearest", size=(2, 3), shape=(1, 2, 5, 7))
interp("interpolate_nearest_scale", "nearest", scale=(1.7, 0.6), shape=(2, 1, 4, 6))
interp("interpolate_nearest_scale2", "nearest", scale=(2.0, 3.0), shape=(1, 2, 3, 2))
# No case where a nearest scale factor other than 1 gives out == in: torch 1.13's backward maps those
# positions differently from its NCHW forward (src/kernels/interp_util.h); test_nn_grad checks ours.
interp("interpolate_nearest_scale_down", "nearest", scale=(0.5, 0.7), shape=(2, 2, 5, 7))
interp("interpolate_bilinear_up", "bilinear", size=(5, 7), align=False)
interp("interpolate_bilinear_up_align", "bilinear", size=(5, 7), align=True)
interp("interpolate_bilinear_down", "bilinear", size=(2, 3), align=False, shape=(1, 2, 5, 7))
interp("interpolate_bilinear_down_align", "bilinear", size=(2, 3), align=True, shape=(1, 2, 5, 7))
interp("interpolate_bilinear_scale", "bilinear", scale=(1.5, 2.3), align=False, shape=(2, 2, 3, 3))
interp("interpolate_bilinear_scale_down", "bilinear", scale=(0.6, 0.45), align=False, shape=(1, 2, 6, 9))
interp("interpolate_bilinear_scale_align", "bilinear", scale=(0.7, 1.3), align=True, shape=(1, 3, 5, 4))
interp("interpolate_bilinear_1px_align", "bilinear", size=(1, 1), align=True)
case("group_norm_g1_affine", "group_norm", lambda x, w, b: F.group_norm(x, 1, w, b, 1e-5),
     lambda c: [("x", c.randn(2, 3, 2, 2, 2)), ("weight", c.randn(3)), ("bias", c.randn(3))], num_groups=1, eps=1e-5)


# ---------------------------------------------------------------- index and shape
case("gather_axis1", "gather", lambda x, i: torch.gather(x, 1, i),
     lambda c: [("x", c.randn(3, 5)), ("index", c.randint(0, 5, 3, 4))], axis=1)
case("gather_axis0", "gather", lambda x, i: torch.gather(x, 0, i),
     lambda c: [("x", c.randn(4, 3, 2)), ("index", c.randint(0, 4, 2, 3, 2))], axis=0)
case("index_select_axis0", "index_select", lambda x, i: torch.index_select(x, 0, i),
     lambda c: [("x", c.randn(5, 3)), ("index", torch.tensor([4, 0, 4, 2], dtype=torch.int64))], axis=0)
case("index_select_axis_neg1", "index_select", lambda x, i: torch.index_select(x, -1, i),
     lambda c: [("x", c.randn(2, 3, 4)), ("index", torch.tensor([3, 1, 1], dtype=torch.int64))], axis=-1)
case("scatter_add_axis1", "scatter_add", lambda x, i, s: torch.scatter_add(x, 1, i, s),
     lambda c: [("x", c.randn(3, 5)), ("index", c.randint(0, 5, 3, 4)), ("src", c.randn(3, 4))], axis=1)
# Distinct indices per row: torch leaves the winner of duplicate writes unspecified.
case("scatter_axis1_unique", "scatter", lambda x, i, s: torch.scatter(x, 1, i, s),
     lambda c: [("x", c.randn(3, 5)), ("index", c.perm_rows(3, 5, 4)), ("src", c.randn(3, 4))], axis=1)
case("index_add_axis1", "index_add", lambda x, i, s: torch.index_add(x, 1, i, s),
     lambda c: [("x", c.randn(3, 5)), ("index", torch.tensor([4, 1, 4], dtype=torch.int64)),
                ("src", c.randn(3, 3))], axis=1)
case("masked_fill_bcast", "masked_fill", lambda x, m: torch.masked_fill(x, m, -2.5),
     lambda c: [("x", c.randn(3, 4)), ("mask", c.mask(4))], value=-2.5)
case("masked_select", "masked_select", lambda x, m: torch.masked_select(x, m),
     lambda c: [("x", c.randn(3, 4)), ("mask", c.mask(3, 4))])
case("concat_axis1", "concat", lambda *xs: torch.cat(xs, 1),
     lambda c: [("x0", c.randn(2, 3, 2)), ("x1", c.randn(2, 1, 2)), ("x2", c.randn(2, 4, 2))], axis=1)
case("concat_axis0", "concat", lambda *xs: torch.cat(xs, 0),
     lambda c: [("x0", c.randn(2, 3)), ("x1", c.randn(3, 3))], axis=0)
case("stack_axis1", "stack", lambda *xs: torch.stack(xs, 1),
     lambda c: [("x0", c.randn(2, 3)), ("x1", c.randn(2, 3)), ("x2", c.randn(2, 3))], axis=1)
case("flip_axes02", "flip", lambda x: torch.flip(x, (0, 2)), lambda c: [("x", c.randn(2, 3, 4))], axes=[0, 2])
case("roll_axis1", "roll", lambda x: torch.roll(x, 2, 1), lambda c: [("x", c.randn(3, 5))], shift=2, axis=1)
case("roll_flat_neg", "roll", lambda x: torch.roll(x, -3), lambda c: [("x", c.randn(3, 4))], shift=-3, axis=127)
case("pad_reflect", "pad", lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"), lambda c: [("x", c.randn(1, 2, 4, 5))],
     pads=[1, 2, 2, 1], mode=1, value=0.0)
case("pad_replicate", "pad", lambda x: F.pad(x, (2, 1, 0, 3), mode="replicate"),
     lambda c: [("x", c.randn(1, 2, 3, 4))], pads=[2, 1, 0, 3], mode=2, value=0.0)
case("pad_constant", "pad", lambda x: F.pad(x, (1, 1, 2, 0), mode="constant", value=0.5),
     lambda c: [("x", c.randn(2, 3, 4))], pads=[1, 1, 2, 0], mode=0, value=0.5)
case("pad_constant_crop", "pad", lambda x: F.pad(x, (-1, 2), mode="constant", value=-1.0),
     lambda c: [("x", c.randn(3, 4))], pads=[-1, 2], mode=0, value=-1.0)
case("tril_diag_neg1", "tril", lambda x: torch.tril(x, -1), lambda c: [("x", c.randn(2, 4, 5))], diagonal=-1)
case("triu_diag1", "triu", lambda x: torch.triu(x, 1), lambda c: [("x", c.randn(4, 3))], diagonal=1)
case("topk_largest_axis1", "topk", lambda x: torch.topk(x, 3, dim=1, largest=True).values,
     lambda c: [("x", c.randn(3, 6))], k=3, axis=1, largest=1)
case("topk_smallest_axis0", "topk", lambda x: torch.topk(x, 2, dim=0, largest=False).values,
     lambda c: [("x", c.randn(5, 3))], k=2, axis=0, largest=0)
case("sort_desc_axis_neg1", "sort", lambda x: torch.sort(x, dim=-1, descending=True).values,
     lambda c: [("x", c.randn(3, 5))], axis=-1, descending=1)
case("sort_asc_axis0", "sort", lambda x: torch.sort(x, dim=0).values, lambda c: [("x", c.randn(4, 3, 2))],
     axis=0, descending=0)
case("take_along_axis_bcast", "take_along_axis", lambda x, i: torch.take_along_dim(x, i, dim=1),
     lambda c: [("x", c.randn(3, 5)), ("index", c.randint(0, 5, 1, 4))], axis=1)
case("repeat_interleave_axis1", "repeat_interleave", lambda x: torch.repeat_interleave(x, 2, dim=1),
     lambda c: [("x", c.randn(2, 3))], repeats=2, axis=1)
case("repeat_interleave_flat", "repeat_interleave", lambda x: torch.repeat_interleave(x, 3),
     lambda c: [("x", c.randn(2, 2))], repeats=3, axis=127)
case("tile_more_reps", "tile", lambda x: torch.tile(x, (2, 1, 2)), lambda c: [("x", c.randn(2, 3))], reps=[2, 1, 2])
case("tile_fewer_reps", "tile", lambda x: torch.tile(x, (3,)), lambda c: [("x", c.randn(2, 2))], reps=[3])


# ---------------------------------------------------------------- views
case("permute", "permute", lambda x: x.permute(2, 0, 1), lambda c: [("x", c.randn(2, 3, 4))], perm=[2, 0, 1])
case("slice_step", "slice", lambda x: x[:, 1:6:2], lambda c: [("x", c.randn(3, 7))], axis=1, start=1, stop=6,
     step=2)
case("diagonal_offset", "diagonal", lambda x: torch.diagonal(x, 1, 0, 2), lambda c: [("x", c.randn(4, 2, 5))],
     offset=1, axis1=0, axis2=2)
case("expand", "expand", lambda x: x.expand(2, 3, 4), lambda c: [("x", c.randn(3, 1))], shape=[2, 3, 4])
case("reshape_noncontig", "reshape_t", lambda x: x.t().reshape(2, 6), lambda c: [("x", c.randn(3, 4))],
     shape=[2, 6])


# ---------------------------------------------------------------- edge cases
# Where naive gradient formulas break: zeros in products, ties in max-like
# reductions, -inf in log-sum-exp/softmax, saturated activations, empty and
# 0-d tensors. PyTorch's conventions here: prod/cumprod gradients are exact at
# zeros; amax/amin/inf-norm and maximum split the gradient evenly among ties;
# a zero vector's 1/2/inf-norm has gradient 0.
def with_zeros(t, *idx):
    for i in idx:
        t[i] = 0.0
    return t


def ties(c, *shape):
    return torch.round(c.randn(*shape, scale=1.2))  # small integers: many exact ties


red("prod_one_zero_axis1", "prod", lambda x: x.prod(dim=1),
    lambda c: with_zeros(c.away(0.5, 1.5, 3, 4), (0, 1), (2, 0), (2, 3)), axes=(1,))
red("prod_zero_all", "prod", lambda x: x.prod(), lambda c: with_zeros(c.away(0.5, 1.5, 2, 3), (1, 2)))
scan("cumprod_with_zeros", "cumprod", lambda x: torch.cumprod(x, 1),
     lambda c: with_zeros(c.away(0.5, 1.5, 3, 5), (0, 2), (1, 0), (2, 1), (2, 3)), 1)
# Higher orders at zeros: op "<op>_grad" with attr order k is the k-th
# gradient g_k of the op (g_0 = op(x), g_{j+1} = d sum(g_j) / dx, recorded),
# so the fixture's gradient is derivative k + 1. prod of [2, 0, 3]: the
# second derivatives d(dy/dx0)/dx are [0, 3, 0].
def grad_of(fn, order):
    def f(x):
        y = fn(x)
        for _ in range(order):
            y = torch.autograd.grad(y.sum(), x, create_graph=True)[0]
        return y
    return f


def fixed(*rows):
    return lambda c: torch.tensor(rows, dtype=torch.float64)


for k in (1, 2):
    red("prod_grad%d_203" % k, "prod_grad", grad_of(lambda x: x.prod(), k), fixed(2.0, 0.0, 3.0), order=k)
    red("prod_grad%d_one_zero_axis1" % k, "prod_grad", grad_of(lambda x: x.prod(dim=1), k),
        lambda c: with_zeros(c.away(0.5, 1.5, 3, 4), (0, 1), (2, 0)), axes=(1,), order=k)
    red("prod_grad%d_two_zeros_axis0" % k, "prod_grad", grad_of(lambda x: x.prod(dim=0), k),
        lambda c: with_zeros(c.away(0.5, 1.5, 4, 3), (0, 1), (2, 1), (3, 2)), axes=(0,), order=k)
    red("prod_grad%d_zeros_axes02_keepdim" % k, "prod_grad",
        grad_of(lambda x: x.prod(dim=2, keepdim=True).prod(dim=0, keepdim=True), k),
        lambda c: with_zeros(c.away(0.5, 1.5, 2, 3, 3), (0, 1, 2), (1, 2, 0), (1, 2, 2)), axes=(0, 2), keepdim=1,
        order=k)
    case("cumprod_grad%d_zeros_axis1" % k, "cumprod_grad", grad_of(lambda x: torch.cumprod(x, 1), k),
         lambda c: [("x", with_zeros(c.away(0.5, 1.5, 3, 5), (0, 2), (1, 0), (2, 1), (2, 3)))], axis=1, order=k)
    case("cumprod_grad%d_zeros_axis0" % k, "cumprod_grad", grad_of(lambda x: torch.cumprod(x, 0), k),
         lambda c: [("x", with_zeros(c.away(0.5, 1.5, 4, 2), (1, 0), (3, 0), (2, 1)))], axis=0, order=k)

red("amax_ties_axis1", "amax", lambda x: x.amax(dim=1), lambda c: ties(c, 4, 6), axes=(1,))
red("amin_ties_all", "amin", lambda x: x.amin(), lambda c: torch.tensor([[1.0, -2.0, 3.0], [-2.0, 0.5, -2.0]],
                                                                          dtype=torch.float64))
binary("maximum_ties", "maximum", torch.maximum, lambda c: ties(c, 3, 4), lambda c: ties(c, 4))
red("norm_p2_zero_row", "norm", lambda x: torch.linalg.vector_norm(x, 2, dim=1),
    lambda c: with_zeros(with_zeros(with_zeros(c.randn(3, 3), (1, 0)), (1, 1)), (1, 2)), axes=(1,), p=2.0)
red("norm_p1_with_zero", "norm", lambda x: torch.linalg.vector_norm(x, 1, dim=0),
    lambda c: with_zeros(c.away(0.1, 2.0, 3, 4), (0, 1), (2, 2)), axes=(0,), p=1.0)
red("norm_pinf_ties", "norm", lambda x: torch.linalg.vector_norm(x, INF, dim=1),
    lambda c: torch.tensor([[1.0, -3.0, 3.0], [2.0, -0.5, 2.0], [0.0, 0.0, 0.0]], dtype=torch.float64),
    axes=(1,), p=INF)
red("logsumexp_neg_inf", "logsumexp", lambda x: torch.logsumexp(x, dim=1),
    lambda c: with_zeros(c.randn(3, 4), (0, 0), (2, 1), (2, 3)).masked_fill(
        torch.tensor([[1, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 1]], dtype=torch.bool), -INF), axes=(1,))
red("logsumexp_large", "logsumexp", lambda x: torch.logsumexp(x, dim=0), lambda c: c.randn(5, 3, scale=300.0),
    axes=(0,))
case("softmax_masked_neg_inf", "softmax", lambda x: torch.softmax(x, -1),
     lambda c: [("x", c.randn(3, 5).masked_fill(c.mask(3, 5) & (torch.arange(5) > 0), -INF))], axis=-1)
case("log_softmax_large", "log_softmax", lambda x: torch.log_softmax(x, 1), lambda c: [("x", c.randn(3, 6, scale=80.0))],
     axis=1)
unary("sigmoid_saturated", "sigmoid", torch.sigmoid, lambda c: c.away(20.0, 40.0, 2, 5))
unary("tanh_saturated", "tanh", torch.tanh, lambda c: c.away(5.0, 15.0, 2, 5))
unary("softplus_large", "softplus", F.softplus, lambda c: c.away(15.0, 60.0, 2, 5), beta=1.0, threshold=20.0)
unary("log_softmax_0d", "log_softmax", lambda x: torch.log_softmax(x, 0), lambda c: c.randn(()), axis=0)
unary("exp_0d", "exp", torch.exp, lambda c: c.randn(()))
red("sum_0d", "sum", lambda x: x.sum(), lambda c: c.randn(()))
unary("exp_empty", "exp", torch.exp, lambda c: c.randn(0, 3))
red("sum_empty_axis", "sum", lambda x: x.sum(dim=0), lambda c: c.randn(0, 3), axes=(0,))
red("amax_over_nonempty_of_empty", "amax", lambda x: x.amax(dim=1), lambda c: c.randn(0, 3), axes=(1,))
case("matmul_k0", "matmul", torch.matmul, lambda c: [("a", c.randn(2, 0)), ("b", c.randn(0, 3))], trans_a=0,
     trans_b=0)
case("concat_with_empty", "concat", lambda *xs: torch.cat(xs, 0),
     lambda c: [("x0", c.randn(2, 3)), ("x1", c.randn(0, 3)), ("x2", c.randn(1, 3))], axis=0)
binary("add_empty_bcast", "add", torch.add, lambda c: c.randn(0, 1), lambda c: c.randn(3))


# ---------------------------------------------------------------- writer
def fmt_attr(key, val):
    vals = val if isinstance(val, (list, tuple)) else [val]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        return "attr %s i %s\n" % (key, " ".join(str(v) for v in vals))
    return "attr %s f %s\n" % (key, " ".join(repr(float(v)) for v in vals))


def tensor_line(role, name, t):
    return "tensor %s %s %s %d%s\n" % (role, name, DT[t.dtype], t.dim(), "".join(" %d" % d for d in t.shape))


def tensor_bytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bool:
        return t.to(torch.uint8).numpy().tobytes()
    return t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()


def build(name, op, fn, make, attrs):
    c = Case(name)
    inputs = make(c)
    leaves = []
    consts = CONST_INPUTS.get(name, ())
    for n, t in inputs:
        if t.dtype.is_floating_point and n not in consts:
            t.requires_grad_(True)
            leaves.append(t)
    out = fn(*[t for _, t in inputs])
    cot = torch.randn(out.shape, generator=c.g, dtype=torch.float64)
    grads = torch.autograd.grad(out, leaves, grad_outputs=cot, allow_unused=True) if leaves else []
    grads = [g if g is not None else torch.zeros_like(t) for g, t in zip(grads, leaves)]

    head = ["PDFIX 1\n",
            "# generated by tools/ref/op_fixtures.py (torch %s, float64, BASE_SEED %d)\n" % (torch.__version__,
                                                                                             BASE_SEED),
            "case %s\n" % name, "op %s\n" % op]
    head += [fmt_attr(k, v) for k, v in attrs.items()]
    blobs = []
    for n, t in inputs:
        head.append(tensor_line("in", n, t))
        blobs.append(tensor_bytes(t))
    head.append(tensor_line("out", "out", out))
    blobs.append(tensor_bytes(out))
    head.append(tensor_line("cot", "out", cot))
    blobs.append(tensor_bytes(cot))
    gi = 0
    for n, t in inputs:
        if t.dtype.is_floating_point and n not in consts:
            head.append(tensor_line("grad", n, grads[gi]))
            blobs.append(tensor_bytes(grads[gi]))
            gi += 1
    head.append("data\n")
    return "".join(head).encode() + b"".join(blobs)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: %s OUT_DIR\n" % argv[0])
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    names = [c[0] for c in CASES]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.stderr.write("duplicate case names: %s\n" % ", ".join(sorted(dup)))
        return 1
    total = 0
    for name, op, fn, make, attrs in CASES:
        blob = build(name, op, fn, make, attrs)
        total += len(blob)
        with open(os.path.join(outdir, name + ".fixture"), "wb") as f:
            f.write(blob)
    for fname in os.listdir(outdir):  # drop fixtures of removed cases
        if fname.endswith(".fixture") and fname[:-len(".fixture")] not in names:
            os.remove(os.path.join(outdir, fname))
    print("%d fixtures, %d bytes, in %s" % (len(CASES), total, outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
