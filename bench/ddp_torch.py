#!/usr/bin/env python3
"""PyTorch DistributedDataParallel peer of paddle.c's data-parallel training
(issue 14, "Performance"; docs/benchmarks.md, "Data parallelism").

The model of bench/llama_torch.py, imported from it; the configuration,
command line, timing and JSON lines of bench/ddp_common.py (shared with
bench/ddp_paddle.py). Two configurations, the same 8 x 256 tokens per step:

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
or "pytorch", "torch": its version; the last line of each configuration
has tokens_per_s (the whole batch: all ranks) or "skipped": why not.

The peer gets its best settings, as in llama_torch.py:
- each configuration runs in fresh processes started by this driver, with
  OPENBLAS_NUM_THREADS set before torch is imported (torch.set_num_threads
  does not reach OpenBLAS's pool), OMP_NUM_THREADS unset, glibc's malloc
  thresholds raised (bench/torch_peer.py), OPENBLAS_CORETYPE per --coretype
  ("both": SkylakeX and unset, each in its own processes, the faster kept);
- attention form (matmul, baddbmm, and torch >= 2's fused sdpa) and AdamW
  foreach on/off are probed (1 warm-up + 3 timed steps each, in the same
  configuration) and the fastest is kept; in DDP every rank takes the same
  choice (the probe times are all-reduced with MAX);
- DDP as its documentation recommends, nothing unusual: default bucket size
  (bucket_cap_mb 25), gradient_as_bucket_view=True (gradients are views of
  the buckets: no copy into them), broadcast_buffers=False (the model's only
  buffers are the constant RoPE tables); every step all-reduces (no
  no_sync), one thread per rank for torch's ops, gloo over loopback.
A rank waits at most PD_PEER_GLOO_TIMEOUT seconds (default 300) for the
others (gloo's default is 30 minutes: a rank whose peer died sat there); a
failed rank's stderr is part of the "skipped" line.
Timing: W warm-up steps, then N timed steps, each step zero_grad + forward
+ loss + backward (with DDP's all-reduce) + AdamW step + loss.item(); per
step the slowest rank's time (MAX all-reduce of the per-rank times after
the run), then the median.
"""
import datetime, os, socket, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no bench/__pycache__ from the imports below
import ddp_common as dc  # noqa: E402  (configuration, timing, JSON lines)

MALLOC = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"
WHATS = ("ddp", "single")
VARIANTS = {"attn": ("matmul", "baddbmm", "sdpa"), "foreach": ("0", "1")}  # sdpa: dropped below on torch 1.x


def parse():
    p = dc.parser(__doc__, WHATS, "ddp,single", VARIANTS)
    p.add_argument("--coretype", default="auto", help="OPENBLAS_CORETYPE; 'auto' = unset, 'both' = try both")
    return dc.parse(p, WHATS)


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
    argv = [sys.executable] + dc.child_argv(__file__, args, what, world, th, VARIANTS) + ["--coretype", core]
    procs, errs = [], []
    for r in range(world):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        # rank 0 prints the results; the others' stdout is dropped, their
        # stderr kept in a file for the failure line
        errs.append(None if r == 0 else tempfile.TemporaryFile(mode="w+"))
        procs.append(subprocess.Popen(argv, env=e, stdout=subprocess.PIPE if r == 0 else subprocess.DEVNULL,
                                      stderr=subprocess.PIPE if r == 0 else errs[r], text=True))
    out, err = procs[0].communicate()
    rcs = [procs[0].returncode] + [p.wait() for p in procs[1:]]
    for r in range(1, world):
        errs[r].seek(0)
        if rcs[r]:
            err += errs[r].read()
        errs[r].close()
    result = dc.relay(out)
    if any(rcs) or result is None:
        impl = "pytorch-ddp" if what == "ddp" else "pytorch"
        dc.emit(dict(dc.base(impl, what, "torch", dc.version("torch"), world, th), coretype=core,
                     skipped=dc.failure(rcs, err)))
        return None
    return result


def driver(args):
    cores = ["SkylakeX", "auto"] if args.coretype == "both" else [args.coretype]
    ok = True
    for what in args.what.split(","):
        best = None
        for core in cores:
            r = run_config(args, what, core)
            if r and (best is None or r["tokens_per_s"] > best["tokens_per_s"]):
                best = r
        if best is None:
            ok = False
        elif len(cores) > 1:
            dc.emit(dict(best, best=True))
    return 0 if ok else 1


# ---- child: one rank ------------------------------------------------------
def child(args):
    import torch
    import torch.distributed as dist
    import llama_torch as lt  # the model
    torch.set_num_threads(args.threads)
    c = dc.CFG
    world = args.world
    ddp = args.what == "ddp"
    rank = int(os.environ.get("RANK", "0"))
    if ddp:
        # a rank that waits longer than this for its peer fails (gloo's own
        # default is 30 minutes): PD_PEER_GLOO_TIMEOUT seconds, default 300
        wait = datetime.timedelta(seconds=int(os.environ.get("PD_PEER_GLOO_TIMEOUT", "300")))
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=wait)
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
    run = "DistributedDataParallel, gloo" if ddp else "one process"
    common = dc.base("pytorch-ddp" if ddp else "pytorch", run, "torch", torch.__version__, world,
                     torch.get_num_threads(), coretype=os.environ.get("OPENBLAS_CORETYPE", "auto"), blas=blas,
                     **settings)

    def make_opt(foreach):
        o = dc.ADAMW
        return torch.optim.AdamW(model.parameters(), lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                                 weight_decay=o["weight_decay"], foreach=foreach == "1")

    def steps(opt):
        def step():
            opt.zero_grad(set_to_none=True)
            logits = net(x)
            loss = F.cross_entropy(logits.view(-1, c["vocab"]), y.view(-1))
            loss.backward()
            opt.step()
            return loss.item()
        return step

    def slowest(ts):  # per step, the slowest rank's time
        if not ddp:
            return ts
        t = torch.tensor(ts, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()

    def trial(choice):
        model.set_attn(choice["attn"])
        return dc.timed(steps(make_opt(choice["foreach"])), 1, 3, slowest)[0]

    variants = dict(VARIANTS, attn=lt.attn_modes(torch))
    if args.attn == "sdpa" and "sdpa" not in variants["attn"]:
        raise SystemExit("ddp_torch.py: torch %s has no F.scaled_dot_product_attention" % torch.__version__)
    choice = dc.probe(args, variants, trial, rank, common)
    # fresh weights and optimizer state for the timed run (same on every rank)
    torch.manual_seed(0)
    fresh = Llama()
    model.load_state_dict(fresh.state_dict())
    model.set_attn(choice["attn"])
    ts, loss = dc.timed(steps(make_opt(choice["foreach"])), args.warmup, args.steps, slowest)
    if ddp:  # the mean loss over ranks = the single-process loss of the whole batch
        lv = torch.tensor([loss], dtype=torch.float64)
        dist.all_reduce(lv)
        loss = lv.item() / world
    if rank == 0:
        dc.emit(dc.result(args, common, choice, ts, loss))
    if ddp:
        # PyTorch 1.13 can deadlock in its teardown: destroy_process_group
        # (or interpreter exit) destroys the DDP Reducer, whose
        # ProcessGroupGloo joins a worker thread blocked on a lock held by a
        # thread waiting for the GIL (gdb on a hung rank, 2026-11-26: main
        # thread in ~ProcessGroupGloo -> std::thread::join, the worker in
        # ProcessGroupGloo::runLoop, another thread in PyEval_AcquireThread).
        # The figures are out: wait for the peer, then leave without the
        # teardown.
        dist.barrier()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def main():
    args = parse()
    return child(args) if args.child else driver(args)


if __name__ == "__main__":
    sys.exit(main())
