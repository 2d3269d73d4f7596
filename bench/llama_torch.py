#!/usr/bin/env python3
"""PyTorch peer of bench_train_llama and bench_decode_llama (Debian python3-torch 1.13).

The same Llama as paddle.c's pd_llama (Hugging Face layout, written by hand:
RMSNorm, rotate_half RoPE, SwiGLU MLP, causal attention, untied lm_head),
at the issue's bench config: vocab 256, dim 288, 6 layers, 6 heads
(6 kv heads), hidden 768, seq 256, batch 8, AdamW, fp32.

  llama_torch.py train  [--threads 1,2] [--steps N] [--warmup W] [--bf16]
                        [--attn matmul|baddbmm|sdpa|best] [--foreach 0|1|best]
                        [--coretype SkylakeX|auto|both]
  llama_torch.py decode [--threads 1,2] [--coretype ...]

Prints one JSON line per measurement (impl "pytorch"), and with several
configurations a last line {"best": true, ...}: the fastest one. PyTorch gets
its best settings:
- every (threads, coretype) pair runs in its own process, because OpenBLAS
  reads OPENBLAS_CORETYPE and OPENBLAS_NUM_THREADS when it is loaded, i.e.
  when torch is imported; torch.set_num_threads sets the OpenMP pool;
- fp32 nn.Linear/matmul on CPU go to cpublas sgemm, i.e. whatever
  libblas.so.3 is (OpenBLAS here: the "blas" field says which core it chose);
  oneDNN (mkldnn) is only used by torch 1.13 for bf16 matmul;
- torch 1.13 has no F.scaled_dot_product_attention, so attention is
  matmul + additive causal mask + softmax, in two forms (matmul, baddbmm);
  a newer torch (e.g. PyPI's, bench/ddp_torch.py) also gets its fused
  F.scaled_dot_product_attention (sdpa); AdamW with foreach on and off: the
  faster of each is kept (--attn best);
- glibc's malloc thresholds are raised (GLIBC_TUNABLES) so freed activations
  are reused instead of unmapped and faulted in again (bench/torch_peer.py).
Timing: W warm-up steps, then the median of N steps (each step: zero_grad,
forward, loss, backward, optimizer step, on the same random batch).
"""
import json, os, subprocess, sys, time, argparse

sys.dont_write_bytecode = True  # no bench/__pycache__ from the import below
# the bench Llama's configuration and the figures every peer computes alike
from ddp_common import CFG, median, peak_rss_mb, flops_per_token  # noqa: E402


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["train", "decode"])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--attn", default="best", choices=["matmul", "baddbmm", "sdpa", "best"])
    p.add_argument("--foreach", default="best", choices=["0", "1", "best"])
    p.add_argument("--coretype", default="both", help="OPENBLAS_CORETYPE, 'auto' = unset, 'both'")
    p.add_argument("--prompt", type=int, default=16)
    p.add_argument("--new", type=int, default=240)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


# ---- driver: one child process per (threads, coretype) --------------------
def driver(args):
    threads = [int(t) for t in args.threads.split(",")]
    cores = ["SkylakeX", "auto"] if args.coretype == "both" else [args.coretype]
    results = []
    for core in cores:
        for th in threads:
            env = dict(os.environ)
            env.pop("OMP_NUM_THREADS", None)
            env["OPENBLAS_NUM_THREADS"] = str(th)
            env["GLIBC_TUNABLES"] = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"
            if core == "auto":
                env.pop("OPENBLAS_CORETYPE", None)
            else:
                env["OPENBLAS_CORETYPE"] = core
            argv = [sys.executable, os.path.abspath(__file__), args.what, "--child", "--threads", str(th),
                    "--steps", str(args.steps), "--warmup", str(args.warmup), "--attn", args.attn,
                    "--foreach", args.foreach, "--coretype", core, "--prompt", str(args.prompt),
                    "--new", str(args.new)] + (["--bf16"] if args.bf16 else [])
            r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, text=True)
            for line in r.stdout.splitlines():
                print(line, flush=True)
                try:
                    d = json.loads(line)
                except ValueError:
                    continue
                if "tokens_per_s" in d and not d.get("variant_probe"):
                    results.append(d)
            if r.returncode:
                why = "status %d" % r.returncode
                if r.returncode == -4:  # OpenBLAS ran kernels this CPU lacks
                    why = "SIGILL: illegal instruction (coretype %s needs AVX-512?)" % core
                print(json.dumps(dict(bench=args.what + "_llama", impl="pytorch", threads=th, coretype=core,
                                      error="peer died: " + why)), flush=True)
    if results:
        b = max(results, key=lambda d: d["tokens_per_s"])
        print(json.dumps(dict(b, best=True)), flush=True)
    return 0 if results else 1


# ---- the model ------------------------------------------------------------
def build(torch):
    nn, F = torch.nn, torch.nn.functional
    c = CFG
    hd = c["dim"] // c["n_heads"]

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + c["eps"]) * self.weight

    def rotate_half(x):
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        return torch.cat((-x2, x1), dim=-1)

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            d, kv = c["dim"], c["n_kv_heads"] * hd
            self.q_proj = nn.Linear(d, d, bias=False)
            self.k_proj = nn.Linear(d, kv, bias=False)
            self.v_proj = nn.Linear(d, kv, bias=False)
            self.o_proj = nn.Linear(d, d, bias=False)
            self.mode = "matmul"

        def forward(self, x, cos, sin, mask, cache=None, pos=0):
            B, T, _ = x.shape
            q = self.q_proj(x).view(B, T, c["n_heads"], hd).transpose(1, 2)
            k = self.k_proj(x).view(B, T, c["n_kv_heads"], hd).transpose(1, 2)
            v = self.v_proj(x).view(B, T, c["n_kv_heads"], hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if cache is not None:  # [B, Hkv, max, hd] buffers, filled up to pos
                kc, vc = cache
                kc[:, :, pos:pos + T] = k
                vc[:, :, pos:pos + T] = v
                k, v = kc[:, :, :pos + T], vc[:, :, :pos + T]
            rep = c["n_heads"] // c["n_kv_heads"]
            if rep > 1:
                k = k.repeat_interleave(rep, dim=1)
                v = v.repeat_interleave(rep, dim=1)
            S = k.shape[2]
            scale = 1.0 / hd ** 0.5
            if self.mode == "sdpa":  # torch >= 2.0 only: its fused attention
                if T == S:
                    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                else:
                    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            elif self.mode == "baddbmm":
                H = c["n_heads"]
                att = torch.baddbmm(mask.expand(B * H, T, S), q.reshape(B * H, T, hd),
                                    k.reshape(B * H, S, hd).transpose(1, 2), alpha=scale)
                att = att.softmax(-1)
                y = torch.bmm(att, v.reshape(B * H, S, hd)).view(B, H, T, hd)
            else:
                att = (q @ k.transpose(-2, -1)) * scale + mask
                y = att.softmax(-1) @ v
            return self.o_proj(y.transpose(1, 2).reshape(B, T, c["dim"]))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj = nn.Linear(c["dim"], c["hidden"], bias=False)
            self.up_proj = nn.Linear(c["dim"], c["hidden"], bias=False)
            self.down_proj = nn.Linear(c["hidden"], c["dim"], bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = RMSNorm(c["dim"])
            self.self_attn = Attn()
            self.post_attention_layernorm = RMSNorm(c["dim"])
            self.mlp = MLP()

        def forward(self, x, cos, sin, mask, cache=None, pos=0):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask, cache, pos)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(c["vocab"], c["dim"])
            self.layers = nn.ModuleList([Layer() for _ in range(c["n_layers"])])
            self.norm = RMSNorm(c["dim"])
            self.lm_head = nn.Linear(c["dim"], c["vocab"], bias=False)
            for p in self.parameters():
                if p.dim() == 2:
                    nn.init.normal_(p, std=0.02)
            inv = 1.0 / (c["theta"] ** (torch.arange(0, hd, 2).float() / hd))
            f = torch.outer(torch.arange(c["seq"]).float(), inv)
            emb = torch.cat((f, f), -1)
            self.register_buffer("cos", emb.cos(), persistent=False)
            self.register_buffer("sin", emb.sin(), persistent=False)

        def set_attn(self, mode):
            for l in self.layers:
                l.self_attn.mode = mode

        def forward(self, ids, caches=None, pos=0):
            T = ids.shape[1]
            S = pos + T
            cos, sin = self.cos[pos:S], self.sin[pos:S]
            # additive causal mask [T, S]: query i (position pos+i) sees keys 0..pos+i
            mask = torch.full((T, S), float("-inf")).triu(pos + 1)
            x = self.embed_tokens(ids)
            for i, l in enumerate(self.layers):
                x = l(x, cos, sin, mask, None if caches is None else caches[i], pos)
            return self.lm_head(self.norm(x))

    return Llama


def attn_modes(torch):
    """The attention forms to probe: sdpa only where torch has it (>= 2.0)."""
    fused = hasattr(torch.nn.functional, "scaled_dot_product_attention")
    return ["matmul", "baddbmm"] + (["sdpa"] if fused else [])


def blas_name():
    # One detector for every PyTorch peer (bench/torch_peer.py). Importing it
    # imports torch, so only the child calls this, after OPENBLAS_* is set.
    from torch_peer import blas
    return blas()


def child_train(args, torch):
    c = CFG
    Llama = build(torch)
    torch.manual_seed(0)
    model = Llama()
    g = torch.Generator().manual_seed(1)
    data = torch.randint(0, c["vocab"], (c["batch"], c["seq"] + 1), generator=g)
    x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()
    F = torch.nn.functional
    common = dict(impl="pytorch", torch=torch.__version__, threads=torch.get_num_threads(),
                  coretype=os.environ.get("OPENBLAS_CORETYPE", "auto"), blas=blas_name(),
                  dtype="bf16-autocast" if args.bf16 else "f32", batch=c["batch"], seq=c["seq"])

    def make_opt(foreach):
        return torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                                 foreach=foreach)

    def step(opt):
        opt.zero_grad(set_to_none=True)
        if args.bf16:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(x)
            loss = F.cross_entropy(logits.float().view(-1, c["vocab"]), y.view(-1))
        else:
            logits = model(x)
            loss = F.cross_entropy(logits.view(-1, c["vocab"]), y.view(-1))
        loss.backward()
        opt.step()
        return loss.item()

    def timed(opt, warm, n, cpu=None):
        for _ in range(warm):
            step(opt)
        ts = []
        for _ in range(n):
            t0, c0 = time.perf_counter(), time.process_time()
            loss = step(opt)
            ts.append(time.perf_counter() - t0)
            if cpu is not None:
                cpu.append(time.process_time() - c0)
        return ts, loss

    # Variant probes (3 timed steps each, after 1 warm-up): keep the fastest.
    attns = attn_modes(torch) if args.attn == "best" else [args.attn]
    foreachs = [False, True] if args.foreach == "best" else [args.foreach == "1"]
    best = None
    if len(attns) * len(foreachs) > 1:
        for a in attns:
            for fe in foreachs:
                model.set_attn(a)
                ts, _ = timed(make_opt(fe), 1, 3)
                m = median(ts)
                print(json.dumps(dict(common, bench="train_llama", variant_probe=True, attn=a, foreach=fe,
                                      step_s=round(m, 4))), flush=True)
                if best is None or m < best[0]:
                    best = (m, a, fe)
    else:
        best = (0, attns[0], foreachs[0])
    _, a, fe = best
    model.set_attn(a)
    opt = make_opt(fe)
    cpu = []
    ts, loss = timed(opt, args.warmup, args.steps, cpu)
    m = median(ts)
    tok = c["batch"] * c["seq"]
    print(json.dumps(dict(common, bench="train_llama", attn=a, foreach=fe, steps=args.steps, warmup=args.warmup,
                          step_s=round(m, 4), step_s_min=round(min(ts), 4), tokens_per_s=round(tok / m, 1), cpu_s=round(median(cpu), 4),
                          gflops=round(flops_per_token() * tok / m / 1e9, 1), loss=round(loss, 4),
                          peak_rss_mb=round(peak_rss_mb(), 1))), flush=True)


def child_decode(args, torch):
    c = CFG
    Llama = build(torch)
    torch.manual_seed(0)
    model = Llama().eval()
    hd = c["dim"] // c["n_heads"]
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, c["vocab"], (1, args.prompt), generator=g)
    if args.prompt + args.new > c["seq"]:
        raise SystemExit("prompt + new exceeds the context (%d)" % c["seq"])
    common = dict(impl="pytorch", torch=torch.__version__, threads=torch.get_num_threads(),
                  coretype=os.environ.get("OPENBLAS_CORETYPE", "auto"), blas=blas_name(), dtype="f32",
                  batch=1, prompt=args.prompt, new_tokens=args.new)

    def generate(mode):
        model.set_attn(mode)
        caches = [(torch.zeros(1, c["n_kv_heads"], c["seq"], hd), torch.zeros(1, c["n_kv_heads"], c["seq"], hd))
                  for _ in range(c["n_layers"])]
        out = []
        with torch.inference_mode():
            t0 = time.perf_counter()
            logits = model(prompt, caches, 0)
            t1 = time.perf_counter()
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            out.append(int(nxt))
            pos = args.prompt
            for _ in range(args.new - 1):
                logits = model(nxt, caches, pos)
                pos += 1
                nxt = logits[:, -1].argmax(-1, keepdim=True)
                out.append(int(nxt))
            t2 = time.perf_counter()
        return t1 - t0, t2 - t0, out

    # best of 2 runs per attention form (decode is short: ~3 s)
    best = None
    for mode in (attn_modes(torch) if args.attn == "best" else [args.attn]):
        for _ in range(2):
            pre, tot, toks = generate(mode)
            if best is None or tot < best[1]:
                best = (pre, tot, toks, mode)
    pre, tot, toks, mode = best
    print(json.dumps(dict(common, bench="decode_llama", attn=mode, prefill_s=round(pre, 5), total_s=round(tot, 4),
                          tokens_per_s=round(args.new / tot, 1),
                          decode_tokens_per_s=round((args.new - 1) / (tot - pre), 1),
                          first_tokens=toks[:8])), flush=True)


def main():
    args = parse()
    if not args.child:
        return driver(args)
    # child: the environment (OPENBLAS_*) is already set by the driver
    import torch
    torch.set_num_threads(int(args.threads))
    (child_train if args.what == "train" else child_decode)(args, torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
