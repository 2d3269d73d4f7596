#!/usr/bin/env python3
"""PyTorch peer of bench_nllgrad: the backward of F.cross_entropy (mean) on
logits [N, C] f32 with class targets, forward not timed.

  nllgrad_torch.py [N] [C] [TRIALS] [THREADS] [cputime]

PyTorch gets its best settings: one fused kernel pair (log_softmax backward
and nll_loss backward, which writes d logp from the targets without a
one-hot tensor, as paddle.c's nll_loss_backward); torch.set_num_threads to
paddle.c's thread count; glibc's malloc thresholds raised (GLIBC_TUNABLES,
set by re-executing this script, as bench/llama_torch.py does) so the
freed [N, C] buffers are reused instead of unmapped and faulted in again.
peak_mb: the growth of the resident set (VmHWM after the peak was reset
through /proc/self/clear_refs) during the first, cold backward, before any
buffer could be reused; 0 when the kernel cannot reset it.
Prints one JSON line (impl "pytorch").
"""
import json, os, sys, time

TUNE = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"
if "glibc.malloc" not in os.environ.get("GLIBC_TUNABLES", ""):
    os.environ["GLIBC_TUNABLES"] = TUNE
    os.execv(sys.executable, [sys.executable] + sys.argv)

import torch
import torch.nn.functional as F

args = [a for a in sys.argv[1:] if a != "cputime"]
N = int(args[0]) if len(args) > 0 else 4096
C = int(args[1]) if len(args) > 1 else 32000
TRIALS = int(args[2]) if len(args) > 2 else 5
if len(args) > 3:
    torch.set_num_threads(int(args[3]))
CLOCK = time.process_time if "cputime" in sys.argv else time.perf_counter


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


g = torch.Generator().manual_seed(7)
x = torch.randn(N, C, generator=g).requires_grad_()
target = torch.randint(0, C, (N,), generator=g)

best, peak = 1e30, 0.0
for t in range(TRIALS + 1):  # trial 0: cold, measures the memory, not timed
    x.grad = None
    loss = F.cross_entropy(x, target)
    ok = t == 0 and reset_peak()
    rss0 = status_kb("VmRSS")
    t0 = CLOCK()
    loss.backward()
    dt = CLOCK() - t0
    if ok:
        peak = (status_kb("VmHWM") - rss0) / 1024.0
    if t > 0:
        best = min(best, dt)

print(json.dumps(dict(bench="nllgrad", impl="pytorch", torch=torch.__version__, threads=torch.get_num_threads(),
                      dtype="f32", part="ce_backward", shape=[N, C], ms=round(best * 1e3, 3), peak_mb=round(peak, 1),
                      clock="cpu" if "cputime" in sys.argv else "wall")), flush=True)
