#!/usr/bin/env python3
"""Regenerate the PyTorch fixtures of tests/test_optim_torch.c.

Run with the system Python that has torch (1.13):
    /usr/bin/python3 tools/ref/optim_ref.py --write
prints (or, with --write, replaces in the test between the BEGIN/END markers)
C constants: for each optimizer config, the loss before each of 5 steps and
the final parameters on a fixed tiny problem, and the lr of each schedule at
selected steps.

The problem (the C test builds the same inputs from the same formulas):
    x[6,4] = sin(1 + 0.7 k), y[6,3] = cos(0.3 k), W0[3,4] = 0.3 sin(2 + 0.5 k),
    b0[3] = 0.05 k - 0.05            (k = flat index, computed in double, cast to f32)
    loss = mean((tanh(x W^T + b) - y)^2)
"""
import math
import re
import sys

import torch

STEPS = 5


def tensor(shape, f):
    n = 1
    for s in shape:
        n *= s
    return torch.tensor([f(k) for k in range(n)], dtype=torch.float64).reshape(shape).float()


def problem():
    x = tensor([6, 4], lambda k: math.sin(1 + 0.7 * k))
    y = tensor([6, 3], lambda k: math.cos(0.3 * k))
    w = tensor([3, 4], lambda k: 0.3 * math.sin(2 + 0.5 * k)).requires_grad_()
    b = tensor([3], lambda k: 0.05 * k - 0.05).requires_grad_()
    return x, y, w, b


# name, constructor over (w, b); "groups" configs decay w only (the standard groups)
CONFIGS = [
    ("sgd_nesterov", lambda w, b: torch.optim.SGD([w, b], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("sgd_dampening", lambda w, b: torch.optim.SGD([w, b], lr=0.05, momentum=0.8, dampening=0.3)),
    ("sgd_plain", lambda w, b: torch.optim.SGD([w, b], lr=0.2, weight_decay=0.05)),
    ("adam_l2", lambda w, b: torch.optim.Adam([w, b], lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("adamw_groups", lambda w, b: torch.optim.AdamW(
        [{"params": [w], "weight_decay": 0.1}, {"params": [b], "weight_decay": 0.0}], lr=0.02)),
    ("adamw_amsgrad", lambda w, b: torch.optim.AdamW([w, b], lr=0.01, weight_decay=0.05, amsgrad=True)),
]


def run(make):
    x, y, w, b = problem()
    opt = make(w, b)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.mean((torch.tanh(x @ w.t() + b) - y) ** 2)
        loss.backward()
        losses.append(loss.item())
        opt.step()
    return losses, w.detach().flatten().tolist() + b.detach().flatten().tolist()


def schedules():
    """lr at steps 0..N-1 from torch's schedulers (base lr 1.0 -> scaled)."""
    out = []
    base, mn, warm, total = 0.5, 0.05, 4, 20

    def sample(make, n):
        p = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([p], lr=base)
        sch = make(opt)
        lrs = []
        for _ in range(n):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            sch.step()
        return lrs

    import warnings
    warnings.simplefilter("ignore")
    L = torch.optim.lr_scheduler
    out.append(("cosine", sample(lambda o: L.SequentialLR(o, [
        L.LinearLR(o, start_factor=1 / warm, end_factor=1.0, total_iters=warm - 1),
        L.CosineAnnealingLR(o, T_max=total - warm, eta_min=mn)], milestones=[warm]), total + 1)))
    out.append(("linear", sample(lambda o: L.SequentialLR(o, [
        L.LinearLR(o, start_factor=1 / warm, end_factor=1.0, total_iters=warm - 1),
        L.LinearLR(o, start_factor=1.0, end_factor=mn / base, total_iters=total - warm)], milestones=[warm]),
        total + 1)))
    out.append(("step", sample(lambda o: L.StepLR(o, step_size=3, gamma=0.7), total + 1)))
    return out


def fmt(vals):
    return ", ".join("%.17g" % v for v in vals)


def generate():
    lines = ["/* BEGIN optim_ref.py (generated: do not edit by hand) */",
             "#define REF_STEPS %d" % STEPS]
    for name, make in CONFIGS:
        losses, params = run(make)
        lines.append("static const double ref_%s_loss[REF_STEPS] = {%s};" % (name, fmt(losses)))
        lines.append("static const double ref_%s_params[15] = {%s};" % (name, fmt(params)))
    for name, lrs in schedules():
        lines.append("static const double ref_lr_%s[%d] = {%s};" % (name, len(lrs), fmt(lrs)))
    lines.append("/* END optim_ref.py */")
    return "\n".join(lines) + "\n"


def main():
    text = generate()
    if "--write" in sys.argv:
        path = __file__.rsplit("/tools/", 1)[0] + "/tests/test_optim_torch.c"
        src = open(path).read()
        pat = re.compile(r"/\* BEGIN optim_ref\.py.*?/\* END optim_ref\.py \*/\n", re.S)
        if not pat.search(src):
            sys.exit("markers not found in " + path)
        open(path, "w").write(pat.sub(lambda m: text, src))
        print("wrote", path)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
