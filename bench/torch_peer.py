#!/usr/bin/env python3
"""PyTorch peer for the paddle.c benches (Debian python3-torch).

Prints JSON lines in the same format as the C benches, with impl "pytorch".
  torch_peer.py WHAT [THREADS]
  torch_peer.py dispatch      # ns per op, 16-element tensors
  torch_peer.py matmul        # GFLOP/s at the same sizes as bench_matmul
  torch_peer.py bandwidth     # elementwise / reduction GB/s on 16M floats
"""
import json, sys, time, os

import torch

def best(fn, iters, trials=5):
    fn()
    b = 1e30
    for _ in range(trials):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        b = min(b, (time.perf_counter() - t0) / iters)
    return b

def emit(**kw):
    print(json.dumps(dict(impl="pytorch", torch=torch.__version__, threads=torch.get_num_threads(), **kw)), flush=True)

def dispatch():
    a = torch.randn(16); b = torch.randn(16)
    ops = {"add": lambda: torch.add(a, b), "mul": lambda: torch.mul(a, b), "sum": lambda: torch.sum(a)}
    for name, f in ops.items():
        def run(f=f):
            for _ in range(100):
                f()
        emit(bench="dispatch", op=name, mode="forward", numel=16, ns_per_op=best(run, 200) / 100 * 1e9)
    ag = a.clone().requires_grad_(); bg = b.clone().requires_grad_()
    fb = {"add": lambda: torch.add(ag, bg).sum().backward(),
          "mul": lambda: torch.mul(ag, bg).sum().backward(),
          "sum": lambda: ag.sum().backward()}
    for name, f in fb.items():
        def run(f=f):
            for _ in range(100):
                f()
        emit(bench="dispatch", op=name, mode="forward+backward", numel=16, ns_per_iter=best(run, 50) / 100 * 1e9)

def matmul():
    shapes = [(n, n, n) for n in (256, 512, 1024, 2048, 4096)] + \
             [(2048, 4096, 4096), (2048, 11008, 4096), (2048, 4096, 11008)]
    for (m, n, k) in shapes:
        a = torch.randn(m, k); b = torch.randn(k, n)
        iters = max(1, int(2e10 / (2 * m * n * k)))
        t = best(lambda: torch.matmul(a, b), iters, 3)
        emit(bench="matmul", m=m, n=n, k=k, dtype="f32", gflops=2 * m * n * k / t / 1e9)

def bandwidth():
    n = 16 << 20
    a = torch.randn(n); b = torch.randn(n)
    for name, f, nbytes in [("add", lambda: torch.add(a, b), 12 * n), ("relu", lambda: torch.relu(a), 8 * n),
                            ("exp", lambda: torch.exp(a), 8 * n), ("sum", lambda: torch.sum(a), 4 * n)]:
        t = best(f, 10)
        emit(bench="bandwidth", op=name, numel=n, gbps=nbytes / t / 1e9)

if __name__ == "__main__":
    if len(sys.argv) > 2:
        torch.set_num_threads(int(sys.argv[2]))
    {"dispatch": dispatch, "matmul": matmul, "bandwidth": bandwidth}[sys.argv[1]]()
