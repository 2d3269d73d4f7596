#!/usr/bin/env python3
"""PyTorch peer of bench_flashmask (Debian python3-torch 1.13): masked attention
composed from matmul, an additive dense mask, softmax and matmul (torch 1.13
has neither F.scaled_dot_product_attention nor FlexAttention), forward and
forward + backward, on the masks bench_flashmask builds.

  flashmask_torch.py MANIFEST THREADS [cputime]

MANIFEST has one JSON object per line: mask, S, D, B, H, causal, C and
`indices`, a raw little-endian int32 file of the FlashMask indices [S, C]
(Hm = 1) written by bench_flashmask, so both sides run the same mask. The
dense mask is built from the indices with the header's rules (pd/flashmask.h)
before timing, as bench_flashmask does for its own dense composition.
Layout [B, H, S, D] (torch's natural one). fwd+bwd differentiates out with a
fixed random dout w.r.t. q, k, v. Peak memory is the rise of the resident set
over the call (glibc's free memory trimmed first, /proc/self/clear_refs resets
the high-water mark). A configuration whose score matrices would need more
than 8 GiB prints a "skipped" line instead.
Prints one JSON line per (mask, S, D) with impl "pytorch".
"""
import ctypes, gc, json, sys, time

import torch

CLOCK = time.process_time if "cputime" in sys.argv else time.perf_counter
LIMIT = 8 << 30


def seconds(fn):
    """A warm-up call, then: a call over 0.3 s is repeated until two calls
    agree within 10% (at most 4 calls, the best kept); shorter ones run in
    trials of ~0.05 s, best of 3 (bench_flashmask's policy)."""
    t0 = CLOCK()
    fn()
    once = CLOCK() - t0
    if once > 0.3:
        best = once
        for _ in range(3):
            t0 = CLOCK()
            fn()
            t = CLOCK() - t0
            agree = abs(t - best) <= 0.1 * min(t, best)
            best = min(best, t)
            if agree:
                break
        return best
    iters, best = max(1, int(0.05 / max(once, 1e-6))), 1e30
    for _ in range(3):
        t0 = CLOCK()
        for _ in range(iters):
            fn()
        best = min(best, (CLOCK() - t0) / iters)
    return best


_libc = ctypes.CDLL("libc.so.6")


def rss_kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def peak_mb(fn):
    gc.collect()
    _libc.malloc_trim(0)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    before = rss_kb("VmRSS:")
    fn()
    return (rss_kb("VmHWM:") - before) / 1024.0


def dense_mask(idx, S, causal):
    """Additive [S, S] mask (rows queries, columns keys) from indices [S, C]."""
    C = idx.shape[1]
    i = torch.arange(S)[:, None]
    col = [idx[:, c][None, :] for c in range(C)]
    if causal and C == 1:
        masked = i >= col[0]
    elif causal:
        masked = (i >= col[0]) & (i < col[1])
    elif C == 2:
        masked = (i >= col[0]) | (i < col[1])
    else:
        masked = ((i >= col[0]) & (i < col[1])) | ((i >= col[2]) & (i < col[3]))
    if causal:
        masked |= torch.arange(S)[None, :] > i
    return torch.zeros(S, S).masked_fill(masked, float("-inf"))


def attention(q, k, v, mask):
    s = torch.matmul(q * q.shape[-1] ** -0.5, k.transpose(-1, -2)) + mask
    return torch.matmul(torch.softmax(s, -1), v)


def run(cfg):
    B, H, S, D = cfg["B"], cfg["H"], cfg["S"], cfg["D"]
    out = dict(bench="flashmask", impl="pytorch", torch=torch.__version__, threads=torch.get_num_threads(),
               mask=cfg["mask"], S=S, D=D, B=B, H=H)
    # scores, the masked sum, softmax, its gradient and the score gradient
    need = 5 * 4 * B * H * S * S + 4 * S * S
    if need > LIMIT:
        out.update(skipped="needs ~%.1f GiB of score matrices (> 8 GiB)" % (need / 2**30))
        print(json.dumps(out), flush=True)
        return
    with open(cfg["indices"], "rb") as f:
        idx = torch.frombuffer(bytearray(f.read()), dtype=torch.int32).reshape(S, cfg["C"]).long()
    mask = dense_mask(idx, S, cfg["causal"])
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(B, H, S, D, generator=g).requires_grad_() for _ in range(3))
    dout = torch.randn(B, H, S, D, generator=g)

    def fwd():
        with torch.no_grad():
            attention(q, k, v, mask)

    def fwd_bwd():
        torch.autograd.grad(attention(q, k, v, mask), (q, k, v), dout)
    out.update(fwd_ms=seconds(fwd) * 1e3, fwd_bwd_ms=seconds(fwd_bwd) * 1e3,
               peak_mb_fwd=peak_mb(fwd), peak_mb_fwd_bwd=peak_mb(fwd_bwd))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    torch.set_num_threads(int(sys.argv[2]))
    for line in open(sys.argv[1]):
        if line.strip():
            run(json.loads(line))
