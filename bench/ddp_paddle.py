#!/usr/bin/env python3
"""PaddlePaddle data-parallel peer of paddle.c's data-parallel training
(issue 14, "Performance"; docs/benchmarks.md, "Data parallelism").

PaddlePaddle 3.3's CPU build (PyPI `paddlepaddle`, in its own venv:
/work/venv-paddle/bin/python) runs dynamic-graph paddle.DataParallel over
gloo on CPU, started by paddle.distributed.launch. This is the same Llama
as bench/llama_torch.py, written in Paddle's API (Hugging Face layout:
RMSNorm, rotate_half RoPE, SwiGLU MLP, causal attention, untied lm_head):
vocab 256, dim 288, 6 layers, 6 heads (6 kv heads), hidden 768, seq 256,
AdamW (lr 3e-4, betas 0.9/0.95, eps 1e-8, wd 0.1), f32, one fixed random
batch of 8 x 256 tokens per step. Two configurations, the same tokens per
step:

  ddp     --world (2) processes x --threads (1) thread, paddle.DataParallel
          (gloo), each rank on its 8 / world rows of the batch;
  auto    the same processes, Paddle's automatic (semi-auto, dynamic graph)
          parallelism instead: the batch dist.shard_tensor'ed Shard(0) over
          a 1-d "dp" ProcessMesh, the model dist.shard_layer'ed (parameters
          replicated), the optimizer dist.shard_optimizer'ed;
  single  1 process x --single-threads (2) threads, no DataParallel.

  ddp_paddle.py [--what ddp,auto,single] [--world 2] [--threads 1]
                [--single-threads 2] [--steps 10] [--warmup 3]
                [--attn matmul|sdpa|best]

Prints one JSON line per measurement with bench "train_llama_dp", impl
"paddle-dp", "paddle-auto" or "paddle", the fields of bench/ddp_torch.py (paddle instead
of torch: the version), world_size, threads (per process), tokens_per_s
(the whole batch), step_ms (median), step_ms_min.

Settings (the peer's best, as far as this script can tell):
- threads: OMP_NUM_THREADS and MKL_NUM_THREADS set before paddle is
  imported (its CPU kernels use MKL and oneDNN over Intel OpenMP), and
  paddle.base.core.set_num_threads;
- attention as matmul + additive causal mask + softmax, or Paddle's
  F.scaled_dot_product_attention: both probed (1 warm-up + 3 timed steps
  each) and the faster kept; in DataParallel every rank takes the same
  choice (times all-reduced, MAX). Paddle's AdamW has no multi-tensor
  (foreach) form, unlike its Adam;
- paddle.DataParallel's defaults: comm_buffer_size 25 MB,
  last_comm_buffer_size 1 MB, find_unused_parameters off; every step
  all-reduces (no no_sync).
Timing as bench/ddp_torch.py: W warm-up steps, N timed steps (clear_grad,
forward, loss, backward with the all-reduce, AdamW step, float(loss)); per
step the slowest rank's time, then the median.
"""
import argparse, json, math, os, subprocess, sys, tempfile, time

CFG = dict(vocab=256, dim=288, n_layers=6, n_heads=6, n_kv_heads=6, hidden=768, seq=256, batch=8,
           eps=1e-5, theta=10000.0)


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--what", default="ddp,auto,single", help="comma list of ddp, auto, single")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="threads per DataParallel rank")
    p.add_argument("--single-threads", type=int, default=2, help="threads of the single process")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--attn", default="best", choices=["matmul", "sdpa", "best"])
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.world < 1 or a.threads < 1 or a.single_threads < 1 or a.steps < 1 or a.warmup < 1:
        p.error("--world, --threads, --single-threads, --steps and --warmup must be >= 1")
    if CFG["batch"] % a.world:
        p.error("--world must divide the batch (%d)" % CFG["batch"])
    return a


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def flops_per_token():  # the formula of llama_torch.py and bench_train_llama
    c = CFG
    hd = c["dim"] // c["n_heads"]
    kv = c["n_kv_heads"] * hd
    n = c["n_layers"] * (2 * c["dim"] * c["dim"] + 2 * c["dim"] * kv + 3 * c["dim"] * c["hidden"]) + \
        c["dim"] * c["vocab"]
    return 6.0 * n + 12.0 * c["n_layers"] * c["seq"] * c["dim"]


# ---- driver ---------------------------------------------------------------
def run_config(args, what):
    world = args.world if what != "single" else 1
    th = args.threads if what != "single" else args.single_threads
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(th)
    env["MKL_NUM_THREADS"] = str(th)
    env.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ info lines
    child = [os.path.abspath(__file__), "--child", "--what", what, "--world", str(world), "--threads", str(th),
             "--steps", str(args.steps), "--warmup", str(args.warmup), "--attn", args.attn]
    impl = {"ddp": "paddle-dp", "auto": "paddle-auto"}.get(what, "paddle")
    with tempfile.TemporaryDirectory(prefix="ddp_paddle.") as logdir:
        if what != "single":
            argv = [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", str(world),
                    "--log_dir", logdir] + child
            r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:  # rank 0's output
                out = open(os.path.join(logdir, "workerlog.0")).read()
            except OSError:
                out = ""
        else:
            r = subprocess.run([sys.executable] + child, env=env, stdout=subprocess.PIPE, text=True)
            out = r.stdout
    result = None
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        print(line, flush=True)
        d = json.loads(line)
        if "tokens_per_s" in d and not d.get("variant_probe"):
            result = d
    if r.returncode or result is None:
        lines = [l for l in (out + (r.stdout or "")).splitlines() if l.strip()]
        tail = [l for l in lines if "Error" in l.split(":")[0]][-1:] or lines[-1:]  # the exception, else the end
        msg = "peer failed: status %d%s" % (r.returncode, (": " + tail[0][:200]) if tail else "")
        print(json.dumps(dict(bench="train_llama_dp", impl=impl, world_size=world, threads=th, error=msg)), flush=True)
        return None
    return result


def driver(args):
    ok = True
    for what in args.what.split(","):
        if what not in ("ddp", "auto", "single"):
            sys.exit("ddp_paddle.py: --what takes ddp, auto and single, not %r" % what)
        ok = run_config(args, what) is not None and ok
    return 0 if ok else 1


# ---- the model ------------------------------------------------------------
def build(paddle):
    nn, F = paddle.nn, paddle.nn.functional
    c = CFG
    hd = c["dim"] // c["n_heads"]
    init = paddle.ParamAttr(initializer=nn.initializer.Normal(0.0, 0.02))

    def linear(i, o):  # Paddle's weight is [in, out]
        return nn.Linear(i, o, weight_attr=init, bias_attr=False)

    class RMSNorm(nn.Layer):
        def __init__(self, d):
            super().__init__()
            self.weight = self.create_parameter([d], default_initializer=nn.initializer.Constant(1.0))

        def forward(self, x):
            return x * paddle.rsqrt(x.pow(2).mean(-1, keepdim=True) + c["eps"]) * self.weight

    def rotate_half(x):
        x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
        return paddle.concat([-x2, x1], axis=-1)

    class Attn(nn.Layer):
        def __init__(self):
            super().__init__()
            d, kv = c["dim"], c["n_kv_heads"] * hd
            self.q_proj, self.k_proj = linear(d, d), linear(d, kv)
            self.v_proj, self.o_proj = linear(d, kv), linear(d, d)
            self.mode = "matmul"

        def forward(self, x, cos, sin, mask):
            B, T = x.shape[0], x.shape[1]
            q = self.q_proj(x).reshape([B, T, c["n_heads"], hd])
            k = self.k_proj(x).reshape([B, T, c["n_kv_heads"], hd])
            v = self.v_proj(x).reshape([B, T, c["n_kv_heads"], hd])
            q = q * cos + rotate_half(q) * sin  # cos, sin: [T, 1, hd]
            k = k * cos + rotate_half(k) * sin
            if self.mode == "sdpa":  # Paddle's layout: [B, T, H, hd]
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                q, k, v = (t.transpose([0, 2, 1, 3]) for t in (q, k, v))
                att = paddle.matmul(q, k, transpose_y=True) * (1.0 / math.sqrt(hd)) + mask
                y = paddle.matmul(F.softmax(att, axis=-1), v).transpose([0, 2, 1, 3])
            return self.o_proj(y.reshape([B, T, c["dim"]]))

    class MLP(nn.Layer):
        def __init__(self):
            super().__init__()
            self.gate_proj, self.up_proj = linear(c["dim"], c["hidden"]), linear(c["dim"], c["hidden"])
            self.down_proj = linear(c["hidden"], c["dim"])

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Layer):
        def __init__(self):
            super().__init__()
            self.input_layernorm, self.self_attn = RMSNorm(c["dim"]), Attn()
            self.post_attention_layernorm, self.mlp = RMSNorm(c["dim"]), MLP()

        def forward(self, x, cos, sin, mask):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Llama(nn.Layer):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(c["vocab"], c["dim"], weight_attr=init)
            self.layers = nn.LayerList([Layer() for _ in range(c["n_layers"])])
            self.norm = RMSNorm(c["dim"])
            self.lm_head = linear(c["dim"], c["vocab"])
            inv = 1.0 / (c["theta"] ** (paddle.arange(0, hd, 2, dtype="float32") / hd))
            f = paddle.outer(paddle.arange(c["seq"], dtype="float32"), inv)
            emb = paddle.concat([f, f], axis=-1)
            self.cos, self.sin = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)  # [S, 1, hd]: not parameters
            self.mask = paddle.triu(paddle.full([c["seq"], c["seq"]], float("-inf")), 1)

        def set_attn(self, mode):
            for l in self.layers:
                l.self_attn.mode = mode

        def forward(self, ids):
            T = ids.shape[1]
            cos, sin, mask = self.cos[:T], self.sin[:T], self.mask[:T, :T]
            x = self.embed_tokens(ids)
            for l in self.layers:
                x = l(x, cos, sin, mask)
            return self.lm_head(self.norm(x))

    return Llama


# ---- child: one rank ------------------------------------------------------
def child(args):
    import numpy as np
    import paddle
    import paddle.distributed as dist
    paddle.set_device("cpu")
    paddle.base.core.set_num_threads(args.threads)
    c = CFG
    world = args.world
    ddp, auto = args.what == "ddp", args.what == "auto"
    if ddp or auto:  # auto: for the all-reduces of the times and the loss
        dist.init_parallel_env()
    rank = dist.get_rank() if ddp or auto else 0
    Llama = build(paddle)
    data = np.random.RandomState(1).randint(0, c["vocab"], (c["batch"], c["seq"] + 1)).astype("int64")
    per = c["batch"] // world
    F = paddle.nn.functional
    if auto:  # every rank passes the whole batch; Shard(0) keeps its rows
        mesh = dist.ProcessMesh(list(range(world)), dim_names=["dp"])
        x, y = (dist.shard_tensor(paddle.to_tensor(t), mesh, [dist.Shard(0)]) for t in (data[:, :-1], data[:, 1:]))
        settings = dict(mode="semi-auto (dygraph): shard_tensor Shard(0) inputs, shard_layer, shard_optimizer")
    else:
        data = data[rank * per:(rank + 1) * per]
        x, y = paddle.to_tensor(data[:, :-1]), paddle.to_tensor(data[:, 1:])
        settings = dict(backend="gloo", comm_buffer_size_mb=25, last_comm_buffer_size_mb=1) if ddp else {}
    common = dict(bench="train_llama_dp", impl={"ddp": "paddle-dp", "auto": "paddle-auto"}.get(args.what, "paddle"),
                  paddle=paddle.__version__, world_size=world, threads=args.threads, dtype="f32", batch=c["batch"],
                  batch_per_rank=per, seq=c["seq"], **settings)

    def make(attn):  # fresh weights (the same on every rank), wrapper and optimizer
        paddle.seed(0)
        model = Llama()
        model.set_attn(attn)
        net = model
        if ddp:
            net = paddle.DataParallel(model)
        elif auto:
            net = model = dist.shard_layer(model, mesh)
            for k in ("cos", "sin", "mask"):  # constants: replicated
                if not getattr(model, k).is_dist():
                    setattr(model, k, dist.shard_tensor(getattr(model, k), mesh, [dist.Replicate()]))
        opt = paddle.optimizer.AdamW(learning_rate=3e-4, beta1=0.9, beta2=0.95, epsilon=1e-8, weight_decay=0.1,
                                     parameters=model.parameters())
        return net, dist.shard_optimizer(opt) if auto else opt

    def step(net, opt):
        opt.clear_grad(set_to_zero=False)
        logits = net(x)
        loss = F.cross_entropy(logits.reshape([-1, c["vocab"]]), y.reshape([-1]))
        loss.backward()
        opt.step()
        return float(loss)

    def slowest(ts):
        if not (ddp or auto):
            return ts
        t = paddle.to_tensor(ts, dtype="float64")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.numpy().tolist()

    def timed(attn, warm, n):
        net, opt = make(attn)
        for _ in range(warm):
            step(net, opt)
        ts, loss = [], None
        for _ in range(n):
            t0 = time.perf_counter()
            loss = step(net, opt)
            ts.append(time.perf_counter() - t0)
        return slowest(ts), loss

    attns = ["matmul", "sdpa"] if args.attn == "best" else [args.attn]
    a = attns[0]
    if len(attns) > 1:
        best = None
        for a in attns:
            ts, _ = timed(a, 1, 3)
            m = median(ts)
            if rank == 0:
                print(json.dumps(dict(common, variant_probe=True, attn=a, step_ms=round(1e3 * m, 1))), flush=True)
            if best is None or m < best[0]:
                best = (m, a)
        a = best[1]
    ts, loss = timed(a, args.warmup, args.steps)
    if ddp:  # the mean over ranks = the loss of the whole batch (auto's float(loss) is already global)
        lv = paddle.to_tensor([loss], dtype="float64")
        dist.all_reduce(lv)
        loss = float(lv[0]) / world
    m = median(ts)
    tok = c["batch"] * c["seq"]
    if rank == 0:
        import resource
        print(json.dumps(dict(common, attn=a, steps=args.steps, warmup=args.warmup,
                              step_ms=round(1e3 * m, 1), step_ms_min=round(1e3 * min(ts), 1),
                              tokens_per_s=round(tok / m, 1), gflops=round(flops_per_token() * tok / m / 1e9, 1),
                              loss=round(loss, 4),
                              peak_rss_mb_rank0=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1))),
              flush=True)
    return 0


def main():
    args = parse()
    return child(args) if args.child else driver(args)


if __name__ == "__main__":
    sys.exit(main())
