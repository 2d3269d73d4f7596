#!/usr/bin/env python3
"""PyTorch DistributedDataParallel peer of paddle.c's data-parallel training
(issue 14, "Performance"; docs/benchmarks.md, "Data parallelism").

The model, batch and optimizer of bench/llama_torch.py, imported from it:
Llama vocab 256, dim 288, 6 layers, 6 heads (6 kv heads), hidden 768,
seq 256, AdamW (lr 3e-4, betas 0.9/0.95, wd 0.1), f32, one fixed random
batch of 8 x 256 tokens per step. Two configurations, the same tokens per
step:

  ddp     --world (2) processes x --threads (1) thread, gloo backend, each
          rank on its 8 / world rows of the batch (DistributedDataParallel
          averages the gradients, so the update is the single-process one);
  single  1 process x --single-threads (2) threads, no DDP, the whole batch.

  ddp_torch.py [--what ddp,single] [--world 2] [--threads 1]
               [--single-threads 2] [--steps 10] [--warmup 3]
               [--attn matmul|baddbmm|sdpa|best] [--foreach 0|1|best]
               [--coretype auto|SkylakeX|both]

Run it with any interpreter that has torch: Debian's /usr/bin/python3
(python3-torch 1.13) and /work/venv/bin/python (PyPI's torch). Prints one
JSON line per measurement with bench "train_llama_dp", impl "pytorch-ddp"
or "pytorch", and the fields paddle.c's side prints in bench/dist.sh: torch,
world_size, threads (per process), tokens_per_s (the whole batch: all
ranks), step_ms (median), step_ms_min; plus the settings used.

The peer gets its best settings, as in llama_torch.py:
- each configuration runs in fresh processes started by this driver, with
  OPENBLAS_NUM_THREADS set before torch is imported (torch.set_num_threads
  does not reach OpenBLAS's pool), OMP_NUM_THREADS unset, glibc's malloc
  thresholds raised (bench/torch_peer.py), OPENBLAS_CORETYPE per --coretype;
- attention form (matmul, baddbmm, and torch >= 2's fused sdpa) and AdamW
  foreach on/off are probed (1 warm-up + 3 timed steps each, in the same
  configuration) and the fastest is kept; in DDP every rank takes the same
  choice (the probe times are all-reduced with MAX);
- DDP as its documentation recommends, nothing unusual: default bucket size
  (bucket_cap_mb 25), gradient_as_bucket_view=True (gradients are views of
  the buckets: no copy into them), broadcast_buffers=False (the model's only
  buffers are the constant RoPE tables); every step all-reduces (no
  no_sync), one thread per rank for torch's ops, gloo over loopback.
Timing: W warm-up steps, then N timed steps, each step zero_grad + forward
+ loss + backward (with DDP's all-reduce) + AdamW step + loss.item(); per
step the slowest rank's time (MAX all-reduce of the per-rank times after
the run), then the median.
"""
import argparse, json, os, socket, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no bench/__pycache__ from the import below
import llama_torch as lt  # noqa: E402  (the model, CFG, flops formula)

MALLOC = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--what", default="ddp,single", help="comma list of ddp, single")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="threads per DDP rank")
    p.add_argument("--single-threads", type=int, default=2, help="threads of the single process")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--attn", default="best", choices=["matmul", "baddbmm", "sdpa", "best"])
    p.add_argument("--foreach", default="best", choices=["0", "1", "best"])
    p.add_argument("--coretype", default="auto", help="OPENBLAS_CORETYPE; 'auto' = unset, 'both' = try both")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.world < 1 or a.threads < 1 or a.single_threads < 1 or a.steps < 1 or a.warmup < 1:
        p.error("--world, --threads, --single-threads, --steps and --warmup must be >= 1")
    if lt.CFG["batch"] % a.world:
        p.error("--world must divide the batch (%d)" % lt.CFG["batch"])
    return a


# ---- driver ---------------------------------------------------------------
def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_config(args, what, core):
    world = args.world if what == "ddp" else 1
    th = args.threads if what == "ddp" else args.single_threads
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    env["OPENBLAS_NUM_THREADS"] = str(th)
    env["GLIBC_TUNABLES"] = MALLOC
    if core == "auto":
        env.pop("OPENBLAS_CORETYPE", None)
    else:
        env["OPENBLAS_CORETYPE"] = core
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(world))
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    argv = [sys.executable, os.path.abspath(__file__), "--child", "--what", what, "--world", str(world),
            "--threads", str(th), "--steps", str(args.steps), "--warmup", str(args.warmup), "--attn", args.attn,
            "--foreach", args.foreach, "--coretype", core]
    procs = []
    for r in range(world):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        # rank 0 prints the results; the others' stdout is dropped
        procs.append(subprocess.Popen(argv, env=e, stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL, text=True))
    result = None
    for line in procs[0].stdout:
        print(line, end="", flush=True)
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if "tokens_per_s" in d and not d.get("variant_probe"):
            result = d
    rcs = [p.wait() for p in procs]
    if any(rcs):
        print(json.dumps(dict(bench="train_llama_dp", impl="pytorch-ddp" if what == "ddp" else "pytorch",
                              world_size=world, threads=th, coretype=core,
                              error="peer failed: exit statuses %s" % rcs)), flush=True)
        return None
    return result


def driver(args):
    cores = ["SkylakeX", "auto"] if args.coretype == "both" else [args.coretype]
    ok = True
    for what in args.what.split(","):
        if what not in ("ddp", "single"):
            sys.exit("ddp_torch.py: --what takes ddp and/or single, not %r" % what)
        best = None
        for core in cores:
            r = run_config(args, what, core)
            if r and (best is None or r["tokens_per_s"] > best["tokens_per_s"]):
                best = r
        if best is None:
            ok = False
        elif len(cores) > 1:
            print(json.dumps(dict(best, best=True)), flush=True)
    return 0 if ok else 1


# ---- child: one rank ------------------------------------------------------
def child(args):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(args.threads)
    c = lt.CFG
    world = args.world
    ddp = args.what == "ddp"
    rank = int(os.environ.get("RANK", "0"))
    if ddp:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    Llama = lt.build(torch)
    torch.manual_seed(0)
    model = Llama()
    # the batch of llama_torch.py; rank r takes rows [r b, (r + 1) b)
    g = torch.Generator().manual_seed(1)
    data = torch.randint(0, c["vocab"], (c["batch"], c["seq"] + 1), generator=g)
    per = c["batch"] // world
    data = data[rank * per:(rank + 1) * per]
    x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()
    net = model
    settings = {}
    if ddp:
        settings = dict(backend="gloo", bucket_cap_mb=25, gradient_as_bucket_view=True, broadcast_buffers=False)
        net = torch.nn.parallel.DistributedDataParallel(model, broadcast_buffers=False, gradient_as_bucket_view=True)
    F = torch.nn.functional
    blas = lt.blas_name()
    if blas == "other" and torch.backends.mkl.is_available():
        blas = "mkl"
    common = dict(bench="train_llama_dp", impl="pytorch-ddp" if ddp else "pytorch", torch=torch.__version__,
                  world_size=world, threads=torch.get_num_threads(),
                  coretype=os.environ.get("OPENBLAS_CORETYPE", "auto"), blas=blas, dtype="f32",
                  batch=c["batch"], batch_per_rank=per, seq=c["seq"], **settings)

    def make_opt(foreach):
        return torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                                 foreach=foreach)

    def step(opt):
        opt.zero_grad(set_to_none=True)
        logits = net(x)
        loss = F.cross_entropy(logits.view(-1, c["vocab"]), y.view(-1))
        loss.backward()
        opt.step()
        return loss.item()

    def slowest(ts):  # per step, the slowest rank's time
        if not ddp:
            return ts
        t = torch.tensor(ts, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()

    def timed(opt, warm, n):
        for _ in range(warm):
            step(opt)
        ts, loss = [], None
        for _ in range(n):
            t0 = time.perf_counter()
            loss = step(opt)
            ts.append(time.perf_counter() - t0)
        return slowest(ts), loss

    attns = lt.attn_modes(torch) if args.attn == "best" else [args.attn]
    foreachs = [False, True] if args.foreach == "best" else [args.foreach == "1"]
    best = (0, attns[0], foreachs[0])
    if len(attns) * len(foreachs) > 1:
        best = None
        for a in attns:
            for fe in foreachs:
                model.set_attn(a)
                ts, _ = timed(make_opt(fe), 1, 3)
                m = lt.median(ts)
                if rank == 0:
                    print(json.dumps(dict(common, variant_probe=True, attn=a, foreach=fe, step_ms=round(1e3 * m, 1))),
                          flush=True)
                if best is None or m < best[0]:
                    best = (m, a, fe)
    _, a, fe = best
    # fresh weights and optimizer state for the timed run (same on every rank)
    torch.manual_seed(0)
    fresh = Llama()
    model.load_state_dict(fresh.state_dict())
    model.set_attn(a)
    opt = make_opt(fe)
    ts, loss = timed(opt, args.warmup, args.steps)
    if ddp:  # the mean loss over ranks = the single-process loss of the whole batch
        lv = torch.tensor([loss], dtype=torch.float64)
        dist.all_reduce(lv)
        loss = lv.item() / world
    m = lt.median(ts)
    tok = c["batch"] * c["seq"]
    if rank == 0:
        print(json.dumps(dict(common, attn=a, foreach=fe, steps=args.steps, warmup=args.warmup,
                              step_ms=round(1e3 * m, 1), step_ms_min=round(1e3 * min(ts), 1),
                              tokens_per_s=round(tok / m, 1),
                              gflops=round(lt.flops_per_token() * tok / m / 1e9, 1), loss=round(loss, 4),
                              peak_rss_mb_rank0=round(lt.peak_rss_mb(), 1))), flush=True)
    if ddp:
        dist.destroy_process_group()
    return 0


def main():
    args = parse()
    return child(args) if args.child else driver(args)


if __name__ == "__main__":
    sys.exit(main())
