"""What the data-parallel peers share: bench/ddp_torch.py (PyTorch) and
bench/ddp_paddle.py (PaddlePaddle), run by bench/dist.sh (issue 14,
"Performance"; docs/benchmarks.md, "Data parallelism").

- The bench Llama's configuration, the one of bench_train_llama
  (bench/llama_bench.h) and of dist.sh's `paddlec train` options: vocab 256,
  dim 288, 6 layers, 6 heads (6 kv heads), hidden 768, seq 256, untied, f32,
  AdamW (lr 3e-4, betas 0.9/0.95, eps 1e-8, wd 0.1), one fixed random batch
  of 8 x 256 tokens per step. bench/llama_torch.py takes it from here too.
- The command line of both drivers, the timing loop, the variant probe and
  the JSON lines: bench "train_llama_dp" with the fields of paddle.c's lines
  in dist.sh (run, world_size, threads, dtype, seq, tokens_per_step,
  step_ms, step_ms_min, tokens_per_s, loss) plus the peer's framework and
  version, the CPU model and the settings used. A configuration that cannot
  run prints a line with "skipped": the reason, instead of tokens_per_s.

Standard library only: a driver imports it before its framework (whose
thread settings must be in the environment before the import), a child
after.
"""
import argparse, json, os, time

CFG = dict(vocab=256, dim=288, n_layers=6, n_heads=6, n_kv_heads=6, hidden=768, seq=256, batch=8,
           eps=1e-5, theta=10000.0)
ADAMW = dict(lr=3e-4, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def peak_rss_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def flops_per_token():
    # 6 N (matmul weights, embedding excluded: a gather) + attention
    # 6 * 2 * n_layers * seq * dim (QK^T and PV, fwd + bwd, full square as
    # the peers compute it); the same formula as bench_train_llama's.
    c = CFG
    hd = c["dim"] // c["n_heads"]
    kv = c["n_kv_heads"] * hd
    n = c["n_layers"] * (2 * c["dim"] * c["dim"] + 2 * c["dim"] * kv + 3 * c["dim"] * c["hidden"]) + \
        c["dim"] * c["vocab"]
    return 6.0 * n + 12.0 * c["n_layers"] * c["seq"] * c["dim"]


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def version(dist_name):
    """The installed version of a package, without importing it."""
    try:
        from importlib import metadata
        return metadata.version(dist_name)
    except Exception:  # noqa: BLE001  (no metadata: report it as unknown)
        return "?"


# ---- the command line -----------------------------------------------------
def parser(doc, whats, default_what, variants):
    """variants: {option: choices}, each also taking "best" (probe them)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--what", default=default_what, help="comma list of " + ", ".join(whats))
    p.add_argument("--world", type=int, default=2, help="processes of the distributed configurations")
    p.add_argument("--threads", type=int, default=1, help="threads per rank")
    p.add_argument("--single-threads", type=int, default=2, help="threads of the single process")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    for opt, choices in variants.items():
        p.add_argument("--" + opt, default="best", choices=list(choices) + ["best"],
                       help="'best': probe each (1 warm-up + 3 timed steps) and keep the fastest")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p


def parse(p, whats):
    a = p.parse_args()
    if a.world < 1 or a.threads < 1 or a.single_threads < 1 or a.steps < 1 or a.warmup < 1:
        p.error("--world, --threads, --single-threads, --steps and --warmup must be >= 1")
    if CFG["batch"] % a.world:
        p.error("--world must divide the batch (%d)" % CFG["batch"])
    for w in a.what.split(","):
        if w not in whats:
            p.error("--what takes %s, not %r" % (", ".join(whats), w))
    return a


def child_argv(script, args, what, world, threads, variants):
    argv = [os.path.abspath(script), "--child", "--what", what, "--world", str(world), "--threads", str(threads),
            "--steps", str(args.steps), "--warmup", str(args.warmup)]
    for opt in variants:
        argv += ["--" + opt, getattr(args, opt.replace("-", "_"))]
    return argv


# ---- JSON lines -----------------------------------------------------------
def emit(d):
    print(json.dumps(d), flush=True)


def base(impl, run, framework, ver, world, threads, **settings):
    """The fields every line of a peer configuration starts with."""
    return dict(bench="train_llama_dp", impl=impl, run=run, **{framework: ver}, world_size=world, threads=threads,
                dtype="f32", batch=CFG["batch"], batch_per_rank=CFG["batch"] // world, seq=CFG["seq"],
                cpu=cpu_model(), **settings)


def relay(text):
    """Echo the JSON lines of rank 0's output; return the result line (or None)."""
    result = None
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except ValueError:
            continue
        print(line, flush=True)
        if ("tokens_per_s" in d or "skipped" in d) and not d.get("variant_probe"):
            result = d
    return result


def failure(status, text):
    """One line saying why a run failed: the exception's line, else the last line."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    tail = [l for l in lines if "Error" in l.split(":")[0]][-1:] or lines[-1:]
    return "failed: status %s%s" % (status, (": " + tail[0][:200]) if tail else "")


# ---- child: timing --------------------------------------------------------
def timed(step, warm, n, slowest):
    """warm untimed steps, n timed; per step the slowest rank's seconds, and the last loss."""
    for _ in range(warm):
        step()
    ts, loss = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        loss = step()
        ts.append(time.perf_counter() - t0)
    return slowest(ts), loss


def probe(args, variants, trial, rank, common):
    """variants: {option: values}; options whose argument is not "best" keep it.
    trial(choice) -> the per-step times of 1 warm-up + 3 timed steps. Every
    rank takes the same choice (the times are the slowest rank's). Two
    rounds over the variants, each variant keeping its better median: with
    one round a burst of host load during one variant's 3 steps decided the
    choice (PyTorch 2.15 took baddbmm or matmul in some runs, sdpa, its
    fastest form here, in others; docs/benchmarks.md)."""
    choices = [{}]
    for opt, values in variants.items():
        given = getattr(args, opt.replace("-", "_"))
        choices = [dict(c, **{opt: v}) for c in choices for v in (values if given == "best" else [given])]
    if len(choices) == 1:
        return choices[0]
    best = [None] * len(choices)
    for _ in range(2):
        for i, c in enumerate(choices):
            m = median(trial(c))
            if rank == 0:
                emit(dict(common, variant_probe=True, step_ms=round(1e3 * m, 1), **c))
            best[i] = m if best[i] is None else min(best[i], m)
    return choices[min(range(len(choices)), key=lambda i: best[i])]


def result(args, common, choice, ts, loss):
    tok = CFG["batch"] * CFG["seq"]
    m = median(ts)
    return dict(common, **choice, variant_args=" ".join("--%s %s" % kv for kv in choice.items()),
                steps=args.steps, warmup=args.warmup, step_ms=round(1e3 * m, 1), step_ms_min=round(1e3 * min(ts), 1),
                tokens_per_step=tok, tokens_per_s=round(tok / m, 1),
                gflops=round(flops_per_token() * tok / m / 1e9, 1), loss=round(loss, 4),
                peak_rss_mb_rank0=round(peak_rss_mb(), 1))
