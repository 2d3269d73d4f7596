#!/usr/bin/env python3
"""PyTorch peer for the paddle.c benches (Debian python3-torch).

Prints JSON lines in the same format as the C benches, with impl "pytorch".
  torch_peer.py WHAT [THREADS]
  torch_peer.py dispatch      # ns per op, 16-element tensors
  torch_peer.py matmul        # GFLOP/s at the same sizes as bench_matmul
  torch_peer.py bandwidth     # elementwise / reduction GB/s on 16M floats

bench/run.sh runs it with OpenBLAS on LD_LIBRARY_PATH when installed
(torch.matmul calls libblas.so.3; Debian's default is the reference BLAS),
OPENBLAS_CORETYPE=SkylakeX on AVX-512 CPUs (OpenBLAS 0.3.21 misdetects newer
ones), and GLIBC_TUNABLES raising glibc's mmap and trim thresholds, so a freed 64 MB output is reused instead of unmapped and
faulted in again on the next call (PyTorch's CPU allocator does not cache;
without this, add on 16M floats measures page faults, ~10x slower).
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

def blas():
    """Which BLAS torch.matmul reaches: Debian's torch calls whatever
    libblas.so.3 is first found, the reference BLAS (~2 GFLOP/s) unless
    OpenBLAS is installed or on LD_LIBRARY_PATH (bench/run.sh)."""
    try:
        libs = open("/proc/self/maps").read()
    except OSError:
        return "unknown"
    if "openblas" in libs:
        try:
            import ctypes
            f = ctypes.CDLL("libopenblas.so.0").openblas_get_corename
            f.restype = ctypes.c_char_p
            return "openblas-" + f().decode()
        except (OSError, AttributeError):
            return "openblas"
    return "reference" if "blas/libblas.so" in libs else "other"

def emit(**kw):  # as every paddle.c line: threads and dtype (f32 unless the line says otherwise)
    print(json.dumps(dict(dict(impl="pytorch", torch=torch.__version__, threads=torch.get_num_threads(), dtype="f32"),
                          **kw)), flush=True)

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
    # Same shapes, same policy as bench/matmul.c: one warm-up, ~0.3 s trials,
    # best of 3; a product over 1 s gets one timed run unless PD_BENCH_FULL=1.
    full = os.environ.get("PD_BENCH_FULL") == "1"
    shapes = [(n, n, n) for n in (256, 512, 1024, 2048, 4096)] + \
             [(2048, 4096, 4096), (2048, 11008, 4096), (2048, 4096, 11008)]
    for (m, n, k) in shapes:
        a = torch.randn(m, k); b = torch.randn(k, n)
        f = lambda: torch.matmul(a, b)
        t0 = time.perf_counter(); f(); once = time.perf_counter() - t0
        iters = 1 if once > 0.3 else int(0.3 / max(once, 1e-6)) + 1
        trials = 1 if once > 1.0 and not full else 3
        b_t = 1e30
        for _ in range(trials):
            t0 = time.perf_counter()
            for _ in range(iters):
                f()
            b_t = min(b_t, (time.perf_counter() - t0) / iters)
        emit(bench="matmul", m=m, n=n, k=k, dtype="f32", gflops=round(2 * m * n * k / b_t / 1e9, 1), blas=blas())

def bandwidth():
    # The ops of bench/bandwidth.c, bytes counted the same way (read + write
    # of an ideal kernel); "copy" (dst.copy_(src), 64 MB) is the peer's own
    # memcpy-like reference. Best single call of 20 after two warm-ups.
    n = 16 << 20
    a = torch.randn(n); b = torch.randn(n); c = a.clone(); d = torch.empty(n)
    a2 = a.view(4096, 4096)
    ops = [("copy", lambda: d.copy_(a), 8 * n),
           ("add", lambda: torch.add(a, b), 12 * n), ("mul", lambda: torch.mul(a, b), 12 * n),
           ("scale", lambda: torch.mul(a, 1.5), 8 * n), ("relu", lambda: torch.relu(a), 8 * n),
           ("exp", lambda: torch.exp(a), 8 * n), ("sigmoid", lambda: torch.sigmoid(a), 8 * n),
           ("cast_bf16", lambda: a.to(torch.bfloat16), 6 * n), ("sum", lambda: torch.sum(a), 4 * n + 4),
           ("sum_last", lambda: a2.sum(1), 4 * n + 4 * 4096), ("sum_first", lambda: a2.sum(0), 4 * n + 4 * 4096),
           ("softmax_last", lambda: torch.softmax(a2, 1), 8 * n), ("add_", lambda: c.add_(b), 12 * n)]
    trials = 50 if os.environ.get("PD_BENCH_FULL") == "1" else 20
    for name, f, nbytes in ops:
        f(); f()
        t = 1e30
        for _ in range(trials):
            t0 = time.perf_counter(); f(); t = min(t, time.perf_counter() - t0)
        emit(bench="bandwidth", op=name, numel=n, bytes=nbytes, gbps=round(nbytes / t / 1e9, 2),
             malloc="glibc-tunables" if "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", "") else "default")

if __name__ == "__main__":
    if len(sys.argv) > 2:
        torch.set_num_threads(int(sys.argv[2]))
    {"dispatch": dispatch, "matmul": matmul, "bandwidth": bandwidth}[sys.argv[1]]()
