#!/usr/bin/env python3
"""PyTorch peer of bench_llm_ops (Debian python3-torch 1.13): the same shapes.

torch 1.13 has no F.scaled_dot_product_attention, so attention is the
composition a torch 1.13 Llama runs: matmul, additive causal mask, softmax,
matmul (bench/llama_torch.py does the same). fwd+bwd differentiates
sum(out * w) w.r.t. q, k, v. rope is x cos + rotate_half(x) sin with cached
cos/sin (Hugging Face); swiglu is F.silu(gate) * up.
  llm_ops_torch.py [THREADS] [cputime]
cputime: time with the process CPU clock (as bench_llm_ops cputime; for
comparisons on a loaded machine, with one thread).
Prints one JSON line per measurement (impl "pytorch").
"""
import json, sys, time

import torch
import torch.nn.functional as F


CLOCK = time.process_time if "cputime" in sys.argv else time.perf_counter


def best(fn, iters, trials=5):
    fn()
    b = 1e30
    for _ in range(trials):
        t0 = CLOCK()
        for _ in range(iters):
            fn()
        b = min(b, (CLOCK() - t0) / iters)
    return b


def emit(**kw):
    print(json.dumps(dict(bench="llm_ops", impl="pytorch", torch=torch.__version__,
                          threads=torch.get_num_threads(), **kw)), flush=True)


def attention(q, k, v, mask):
    s = torch.matmul(q, k.transpose(-1, -2)) / q.shape[-1] ** 0.5 + mask
    return torch.matmul(torch.softmax(s, -1), v)


def sdpa(name, B, H, T, S, D, dtype):
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(B, H, n, D, generator=g).to(dtype).requires_grad_() for n in (T, S, S))
    w = torch.randn(B, H, T, D, generator=g).to(dtype)
    vis = torch.arange(S)[None, :] <= torch.arange(T)[:, None] + (S - T)
    mask = torch.zeros(T, S, dtype=dtype).masked_fill(~vis, float("-inf"))
    fwd = lambda: attention(q, k, v, mask)

    def fwdbwd():
        torch.autograd.grad((attention(q, k, v, mask) * w).sum(), (q, k, v))
    for mode, fn in (("forward", fwd), ("fwd+bwd", fwdbwd)):
        with torch.no_grad() if mode == "forward" else torch.enable_grad():
            t = best(fn, 2000 if T == 1 else 10)
        emit(op=name, mode=mode, dtype=str(dtype).replace("torch.", "").replace("float32", "f32").replace(
            "bfloat16", "bf16"), shape=[B, H, T, S, D], ms=t * 1e3)


def elementwise():
    x = torch.randn(8, 256, 6, 48)
    inv = 1.0 / (10000.0 ** (torch.arange(0, 48, 2).float() / 48))
    f = torch.outer(torch.arange(256).float(), inv)
    emb = torch.cat((f, f), -1)
    cos, sin = emb.cos()[None, :, None, :], emb.sin()[None, :, None, :]

    def rope():
        x1, x2 = x[..., :24], x[..., 24:]
        return x * cos + torch.cat((-x2, x1), -1) * sin
    with torch.no_grad():
        t = best(rope, 200)
        emit(op="rope", mode="forward", dtype="f32", shape=[8, 256, 6, 48], ms=t * 1e3,
             gbps=2 * 4 * x.numel() / t * 1e-9)
        a, b = torch.randn(8, 256, 768), torch.randn(8, 256, 768)
        t = best(lambda: F.silu(a) * b, 200)
        emit(op="swiglu", mode="forward", dtype="f32", shape=[8, 256, 768], ms=t * 1e3,
             gbps=3 * 4 * a.numel() / t * 1e-9)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].isdigit():
        torch.set_num_threads(int(sys.argv[1]))
    sdpa("sdpa", 8, 6, 256, 256, 48, torch.float32)
    sdpa("sdpa", 8, 6, 256, 256, 48, torch.bfloat16)
    sdpa("sdpa_decode", 1, 6, 1, 128, 48, torch.float32)
    sdpa("sdpa_decode", 1, 6, 1, 512, 48, torch.float32)
    elementwise()
