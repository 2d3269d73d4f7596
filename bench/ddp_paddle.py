#!/usr/bin/env python3
"""PaddlePaddle peer of paddle.c's data-parallel training (issue 14,
"Performance"; docs/benchmarks.md, "Data parallelism"): the same Llama as
bench/llama_torch.py, written in Paddle's API (Hugging Face layout:
RMSNorm, rotate_half RoPE, SwiGLU MLP, causal attention, untied lm_head),
with the configuration, command line, timing and JSON lines of
bench/ddp_common.py (shared with bench/ddp_torch.py). Every configuration
trains on the same 8 x 256 tokens per step:

  ddp          --world (2) processes x --threads (1) thread,
               paddle.DataParallel (gloo), each rank on its 8 / world rows;
  auto         the same processes, Paddle's automatic (semi-auto, dynamic
               graph) data parallelism: a 1-d "dp" ProcessMesh, the batch
               dist.shard_tensor'ed Shard(0), the model dist.shard_layer'ed
               (parameters replicated), the optimizer dist.shard_optimizer'ed;
  auto-tp      the same processes, semi-auto tensor parallelism on a 1-d
               "tp" mesh: q/k/v/gate/up weights Shard(1) (column-parallel;
               Paddle's Linear weight is [in, out]), o/down Shard(0)
               (row-parallel), embedding, norms and lm_head replicated, the
               batch replicated;
  auto-dptp    4 processes, a 2 x 2 ("dp", "tp") mesh: both of the above;
  auto-static  auto's data parallelism through dist.to_static (Paddle's
               static-graph auto parallelism, with dist.shard_dataloader);
  single       1 process x --single-threads (2) threads, no wrapper.

  ddp_paddle.py [--what ddp,auto,auto-tp,auto-static,single] [--world 2]
                [--threads 1] [--single-threads 2] [--steps 10] [--warmup 3]
                [--attn matmul|sdpa|best] [--graph dygraph|static|best]

Prints one JSON line per measurement with bench "train_llama_dp", impl
"paddle-dp", "paddle-auto", "paddle-auto-tp", "paddle-auto-dptp",
"paddle-auto-static" or "paddle", "paddle": its version; the last line of
each configuration has tokens_per_s (the whole batch) or "skipped": why not
(PaddlePaddle 3.3's CPU build cannot run auto-static: docs/benchmarks.md).

Settings (the peer's best, as far as this script can tell):
- threads: OMP_NUM_THREADS and MKL_NUM_THREADS set before paddle is
  imported (its CPU kernels use MKL and oneDNN over Intel OpenMP), and
  paddle.base.core.set_num_threads;
- attention as matmul + additive causal mask + softmax, or Paddle's
  F.scaled_dot_product_attention; and the model run eagerly (dygraph) or
  compiled by paddle.jit.to_static (static; ddp and single only, the auto
  modes are dynamic-graph: auto-static is their static form). Each pair is
  probed (1 warm-up + 3 timed steps) and the fastest kept; every rank takes
  the same choice (times all-reduced, MAX). Paddle's AdamW has no
  multi-tensor (foreach) form, unlike its Adam;
- paddle.DataParallel's defaults: comm_buffer_size 25 MB,
  last_comm_buffer_size 1 MB, find_unused_parameters off; every step
  all-reduces (no no_sync).
Timing as bench/ddp_torch.py: W warm-up steps, N timed steps (clear_grad,
forward, loss, backward with the all-reduce, AdamW step, float(loss)); per
step the slowest rank's time, then the median.
"""
import glob, math, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no bench/__pycache__ from the import below
import ddp_common as dc  # noqa: E402  (configuration, timing, JSON lines)

CFG = dc.CFG
WHATS = ("ddp", "auto", "auto-tp", "auto-dptp", "auto-static", "single")
VARIANTS = {"attn": ("matmul", "sdpa"), "graph": ("dygraph", "static")}
IMPL = {"ddp": "paddle-dp", "single": "paddle"}
RUN = {"ddp": "DataParallel, gloo", "auto": "auto parallel dp (semi-auto, dygraph)",
       "auto-tp": "auto parallel tp (semi-auto, dygraph)", "auto-dptp": "auto parallel dp x tp (semi-auto, dygraph)",
       "auto-static": "auto parallel dp (dist.to_static)", "single": "one process"}


def impl(what):
    return IMPL.get(what, "paddle-" + what)


def mesh_shape(what, world):  # (dp, tp)
    return {"single": (1, 1), "ddp": (world, 1), "auto": (world, 1), "auto-static": (world, 1),
            "auto-tp": (1, world), "auto-dptp": (2, 2)}[what]


def parse():
    return dc.parse(dc.parser(__doc__, WHATS, "ddp,auto,auto-tp,auto-static,single", VARIANTS), WHATS)


# ---- driver ---------------------------------------------------------------
def run_config(args, what):
    dp, tp = mesh_shape(what, args.world)
    world = dp * tp
    th = args.threads if what != "single" else args.single_threads
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(th)
    env["MKL_NUM_THREADS"] = str(th)
    env.setdefault("GLOG_minloglevel", "2")  # Paddle's C++ info lines
    child = dc.child_argv(__file__, args, what, world, th, VARIANTS)
    with tempfile.TemporaryDirectory(prefix="ddp_paddle.") as logdir:
        if what != "single":
            argv = [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", str(world),
                    "--log_dir", logdir] + child
            r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            logs = {}
            for path in sorted(glob.glob(os.path.join(logdir, "workerlog.*"))):
                with open(path, errors="replace") as f:
                    logs[path.rsplit(".", 1)[1]] = f.read()
            out = logs.get("0", "")
            # why it failed: the first rank with a traceback (the others are only terminated)
            err = next((t for t in logs.values() if "Traceback" in t), out) + r.stdout
        else:
            r = subprocess.run([sys.executable] + child, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
            out, err = r.stdout, r.stderr
    result = dc.relay(out)
    if r.returncode or result is None:
        why = dc.failure(r.returncode, err)
        if "No CUDA device found" in why:  # auto-static on the CPU build (docs/benchmarks.md)
            why += " (dist.to_static's communicators are NCCL, BKCL or a custom device's: none on CPU)"
        dc.emit(dict(dc.base(impl(what), RUN[what], "paddle", dc.version("paddlepaddle"), world, th), skipped=why))
        return None
    return result


def driver(args):
    ok = True
    for what in args.what.split(","):
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
def numpy2_mesh_patch(dist):
    """Paddle 3.3's ProcessMesh.get_rank_by_dim_and_process_id (used by
    dist.shard_dataloader) does int() of a 1-element array, a TypeError
    under numpy 2: the same lookup, on the element."""
    import numpy as np
    pm = dist.ProcessMesh

    def rank_by_dim(self, dim, process_id):
        name = dim if isinstance(dim, str) else self._dim_names[dim]
        return int(np.where(self._mesh == process_id)[self._dim_names.index(name)][0])
    pm.get_rank_by_dim_and_process_id = rank_by_dim


def child(args):
    import numpy as np
    import paddle
    import paddle.distributed as dist
    paddle.set_device("cpu")
    paddle.base.core.set_num_threads(args.threads)
    c = CFG
    what, world = args.what, args.world
    dp, tp = mesh_shape(what, world)  # the driver started dp x tp processes
    auto = what.startswith("auto")
    distributed = world > 1
    if distributed:  # auto too: the all-reduces of the times and the loss
        dist.init_parallel_env()
    rank = dist.get_rank() if distributed else 0
    Llama = build(paddle)
    data = np.random.RandomState(1).randint(0, c["vocab"], (c["batch"], c["seq"] + 1)).astype("int64")
    per = c["batch"] // dp
    F = paddle.nn.functional
    settings = {}
    if auto:  # every rank passes the whole batch; the placements keep its part
        if tp > 1 and dp > 1:
            mesh = dist.ProcessMesh(np.arange(world).reshape(dp, tp).tolist(), dim_names=["dp", "tp"])
        else:
            mesh = dist.ProcessMesh(list(range(world)), dim_names=["dp" if dp > 1 else "tp"])
        axes = mesh.dim_names
        repl = [dist.Replicate()] * len(axes)
        batch_pl = [dist.Shard(0) if a == "dp" else dist.Replicate() for a in axes]
        x, y = (dist.shard_tensor(paddle.to_tensor(t), mesh, batch_pl) for t in (data[:, :-1], data[:, 1:]))
        settings = dict(mesh=dict(zip(axes, mesh.shape)))
        if tp > 1:
            settings["tp_plan"] = "q,k,v,gate,up Shard(1) (column); o,down Shard(0) (row); the rest replicated"
        args.graph = "dygraph"  # the semi-auto API runs eagerly; auto-static is its static form
    else:
        data = data[rank * per:(rank + 1) * per]
        x, y = paddle.to_tensor(data[:, :-1]), paddle.to_tensor(data[:, 1:])
        if what == "ddp":
            settings = dict(backend="gloo", comm_buffer_size_mb=25, last_comm_buffer_size_mb=1)
    common = dc.base(impl(what), RUN[what], "paddle", paddle.__version__, world, args.threads, **settings)
    common["batch_per_rank"] = per

    def shard_fn(name, layer, pm):  # column- and row-parallel weights on the "tp" axis
        leaf = name.rsplit(".", 1)[-1]
        if tp > 1 and leaf in ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "o_proj", "down_proj"):
            pl = list(repl)
            pl[axes.index("tp")] = dist.Shard(0 if leaf in ("o_proj", "down_proj") else 1)
            layer.weight = dist.shard_tensor(layer.weight, pm, pl)

    def loss_fn(logits, labels):
        return F.cross_entropy(logits.reshape([-1, c["vocab"]]), labels.reshape([-1]))

    def make(choice):  # fresh weights (the same on every rank), wrapper, optimizer -> a step function
        paddle.seed(0)
        model = Llama()
        model.set_attn(choice["attn"])
        net = model
        if auto:
            net = model = dist.shard_layer(model, mesh, shard_fn)
            for k in ("cos", "sin", "mask"):  # constants: replicated
                if not getattr(model, k).is_dist():
                    setattr(model, k, dist.shard_tensor(getattr(model, k), mesh, repl))
        elif choice["graph"] == "static":
            net = model = paddle.jit.to_static(model, full_graph=True)
        if what == "ddp":
            net = paddle.DataParallel(model)
        o = dc.ADAMW
        opt = paddle.optimizer.AdamW(learning_rate=o["lr"], beta1=o["beta1"], beta2=o["beta2"], epsilon=o["eps"],
                                     weight_decay=o["weight_decay"], parameters=model.parameters())
        if auto:
            opt = dist.shard_optimizer(opt)
        if what == "auto-static":
            numpy2_mesh_patch(dist)

            class Batch(paddle.io.Dataset):
                def __getitem__(self, i):
                    return data[i, :-1], data[i, 1:]

                def __len__(self):
                    return c["batch"]
            loader = dist.shard_dataloader(paddle.io.DataLoader(Batch(), batch_size=c["batch"]), meshes=[mesh],
                                           shard_dims="dp")
            dm = dist.to_static(model, loader, loss_fn, opt)
            dm.train()
            bx, by = next(iter(loader()))

            def sstep():
                return float(np.asarray(dm(bx, by)).ravel()[0])
            return sstep

        def step():
            opt.clear_grad(set_to_zero=False)
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            return float(loss)
        return step

    def slowest(ts):
        if not distributed:
            return ts
        t = paddle.to_tensor(ts, dtype="float64")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.numpy().tolist()

    choice = dc.probe(args, VARIANTS, lambda ch: dc.timed(make(ch), 1, 3, slowest)[0], rank, common)
    ts, loss = dc.timed(make(choice), args.warmup, args.steps, slowest)
    if what == "ddp":  # the mean over ranks = the loss of the whole batch (auto's float(loss) is already global)
        lv = paddle.to_tensor([loss], dtype="float64")
        dist.all_reduce(lv)
        loss = float(lv[0]) / world
    if rank == 0:
        dc.emit(dc.result(args, common, choice, ts, loss))
    return 0


def main():
    args = parse()
    return child(args) if args.child else driver(args)


if __name__ == "__main__":
    sys.exit(main())
