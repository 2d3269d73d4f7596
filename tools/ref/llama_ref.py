#!/usr/bin/python3
"""PyTorch reference for paddle.c's Llama parity test (tests/test_llama_parity.c).

Usage (Debian's python3-torch; /usr/bin/python3 is the interpreter that has it):

    /usr/bin/python3 tools/ref/llama_ref.py tests/fixtures/llama

No `transformers` package is needed: the model below is a line-by-line copy
of Hugging Face's LlamaForCausalLM semantics (RMSNorm with eps on the
variance, rotate_half RoPE with theta, grouped-query attention by repeating
k/v heads, causal softmax attention scaled by 1/sqrt(head_dim), SiLU-gated
MLP, untied lm_head unless tie_embeddings), with Hugging Face parameter names.

For each case (a sub-directory; the main case is the directory itself) the
script writes three safetensors files, by hand (8-byte little-endian header
length, JSON header padded with spaces to a multiple of 8, raw little-endian
data; no safetensors package):

  weights.safetensors   every parameter (f32) by HF name; metadata "config"
                        holds the model config as JSON in the keys of
                        pd_llama_config_to_json
  batch.safetensors     ids [B, T] and targets [B, T] (int64; target -1 is
                        ignored by the loss)
  expected.safetensors  logits [B, T, V]; loss []; grad.<name> for every
                        parameter; hidden.<i> [B, T, dim] the residual stream
                        entering layer i (hidden.<n_layers> leaves the last
                        layer) and final_norm [B, T, dim] (for localising a
                        mismatch); adamw_losses [STEPS + 1]: the loss before
                        each of STEPS AdamW steps and after the last one;
                        metadata "adamw" (JSON: lr, beta1, beta2, eps,
                        weight_decay, steps; constant lr, no schedule, no
                        clipping)

How the numbers are made: the weights are drawn by torch from a fixed seed
and rounded to f32 (what the file stores); the reference then runs entirely
in float64 from those exact f32 values and the results are rounded to f32
once. paddle.c computes in f32, so the only difference the test sees is its
own f32 rounding (the reference contributes one half-ulp). The script also
runs the same computation in f32 torch and prints the worst relative
deviation of each quantity from the f64 reference, as evidence that the
test's 1e-4 tolerance holds with a wide margin for a correct f32
implementation.

Relative error of a tensor (what the test uses, printed here too):
    max_i |got_i - want_i| / max(max_i |want_i|, 1e-30)

The output is deterministic: the same torch build writes byte-identical files.
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

SEED = 20240611
IGNORE = -1

# AdamW hyper-parameters of the trajectory (torch.optim.AdamW semantics:
# decoupled decay p *= 1 - lr*wd, bias-corrected moments, eps added to
# sqrt(v_hat)). Constant lr, no schedule, no gradient clipping.
ADAMW = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1, "steps": 10}

CASES = [
    # (sub-directory, config, batch, seq, n_ignored_targets)
    ("", {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "hidden_dim": 64,
          "max_seq_len": 32, "norm_eps": 1e-5, "rope_theta": 10000.0, "tie_embeddings": 0,
          "dropout": 0.0, "init_std": 0.02}, 2, 16, 3),
    # Tied embeddings, plain multi-head attention, another theta and eps.
    ("tied", {"vocab_size": 48, "dim": 24, "n_layers": 1, "n_heads": 3, "n_kv_heads": 3, "hidden_dim": 40,
              "max_seq_len": 16, "norm_eps": 1e-6, "rope_theta": 500.0, "tie_embeddings": 1,
              "dropout": 0.0, "init_std": 0.02}, 3, 8, 2),
]


# ---- the model (Hugging Face LlamaForCausalLM semantics) -----------------
def param_names(cfg):
    names = ["model.embed_tokens.weight"]
    for i in range(cfg["n_layers"]):
        p = "model.layers.%d." % i
        names += [p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight",
                  p + "self_attn.o_proj.weight", p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight",
                  p + "mlp.down_proj.weight", p + "input_layernorm.weight", p + "post_attention_layernorm.weight"]
    names.append("model.norm.weight")
    if not cfg["tie_embeddings"]:
        names.append("lm_head.weight")
    return names


def param_shape(cfg, name):
    d, hd = cfg["dim"], cfg["dim"] // cfg["n_heads"]
    kv, h, v = cfg["n_kv_heads"] * hd, cfg["hidden_dim"], cfg["vocab_size"]
    table = {"embed_tokens": (v, d), "q_proj": (d, d), "k_proj": (kv, d), "v_proj": (kv, d), "o_proj": (d, d),
             "gate_proj": (h, d), "up_proj": (h, d), "down_proj": (d, h), "input_layernorm": (d,),
             "post_attention_layernorm": (d,), "norm": (d,), "lm_head": (v, d)}
    return table[name.split(".")[-2]]


def init_params(cfg, g):
    """Weights of a realistic scale (not the 0.02 init, which makes every
    softmax nearly uniform and hides convention errors): embeddings N(0, 1),
    projections N(0, 1/fan_in), norm weights 1 + N(0, 0.1^2). Rounded to f32."""
    out = {}
    for name in param_names(cfg):
        shape = param_shape(cfg, name)
        if len(shape) == 1:
            t = 1 + 0.1 * torch.randn(shape, generator=g, dtype=torch.float64)
        elif "embed_tokens" in name:
            t = torch.randn(shape, generator=g, dtype=torch.float64)
        else:
            t = torch.randn(shape, generator=g, dtype=torch.float64) / math.sqrt(shape[1])
        out[name] = t.float()
    return out


def rms_norm(x, w, eps):
    # HF LlamaRMSNorm: variance in (at least) f32, then scale by the weight.
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(x, theta):
    # x [B, H, T, D]; positions 0..T-1; HF LlamaRotaryEmbedding.
    T, D = x.shape[-2], x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    return x * cos + rotate_half(x) * sin


def forward(cfg, P, ids, hiddens=None):
    B, T = ids.shape
    H, KV = cfg["n_heads"], cfg["n_kv_heads"]
    hd = cfg["dim"] // H
    eps = cfg["norm_eps"]
    x = F.embedding(ids, P["model.embed_tokens.weight"])
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(cfg["n_layers"]):
        if hiddens is not None:
            hiddens.append(x)
        p = "model.layers.%d." % i
        h = rms_norm(x, P[p + "input_layernorm.weight"], eps)
        q = F.linear(h, P[p + "self_attn.q_proj.weight"]).view(B, T, H, hd).transpose(1, 2)
        k = F.linear(h, P[p + "self_attn.k_proj.weight"]).view(B, T, KV, hd).transpose(1, 2)
        v = F.linear(h, P[p + "self_attn.v_proj.weight"]).view(B, T, KV, hd).transpose(1, 2)
        q, k = rope(q, cfg["rope_theta"]), rope(k, cfg["rope_theta"])
        k = k.repeat_interleave(H // KV, dim=1)   # HF repeat_kv: head j uses kv head j // (H/KV)
        v = v.repeat_interleave(H // KV, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(hd)
        s = s.masked_fill(~causal, float("-inf"))
        a = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, H * hd)
        x = x + F.linear(a, P[p + "self_attn.o_proj.weight"])
        h = rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
        m = F.silu(F.linear(h, P[p + "mlp.gate_proj.weight"])) * F.linear(h, P[p + "mlp.up_proj.weight"])
        x = x + F.linear(m, P[p + "mlp.down_proj.weight"])
    if hiddens is not None:
        hiddens.append(x)
    x = rms_norm(x, P["model.norm.weight"], eps)
    if hiddens is not None:
        hiddens.append(x)
    head = P["model.embed_tokens.weight"] if cfg["tie_embeddings"] else P["lm_head.weight"]
    return F.linear(x, head)


def loss_fn(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE)


def run(cfg, weights, ids, targets, dtype):
    """Forward, loss, grads and the AdamW trajectory, all in `dtype`."""
    P = {n: w.to(dtype).clone().requires_grad_(True) for n, w in weights.items()}
    hiddens = []
    logits = forward(cfg, P, ids, hiddens)
    loss = loss_fn(logits, targets)
    names = list(P)
    grads = torch.autograd.grad(loss, [P[n] for n in names])
    out = {"logits": logits.detach(), "loss": loss.detach()}
    for i, h in enumerate(hiddens[:-1]):
        out["hidden.%d" % i] = h.detach()
    out["final_norm"] = hiddens[-1].detach()
    for n, gr in zip(names, grads):
        out["grad." + n] = gr
    opt = torch.optim.AdamW([P[n] for n in names], lr=ADAMW["lr"], betas=(ADAMW["beta1"], ADAMW["beta2"]),
                            eps=ADAMW["eps"], weight_decay=ADAMW["weight_decay"])
    losses = []
    for _ in range(ADAMW["steps"]):
        opt.zero_grad()
        step_loss = loss_fn(forward(cfg, P, ids), targets)
        losses.append(step_loss.item())
        step_loss.backward()
        opt.step()
    with torch.no_grad():
        losses.append(loss_fn(forward(cfg, P, ids), targets).item())
    out["adamw_losses"] = torch.tensor(losses, dtype=dtype)
    return out


def rel_err(got, want):
    return (got.double() - want.double()).abs().max().item() / max(want.double().abs().max().item(), 1e-30)


# ---- safetensors writer ------------------------------------------------------
ST_DTYPE = {torch.float32: "F32", torch.int64: "I64"}


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, tensor) in file order; metadata: dict str -> str."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors:
        t = t.detach().contiguous()
        raw = t.numpy().astype(t.numpy().dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def make_case(root, sub, cfg, batch, seq, n_ignored, case_index):
    d = os.path.join(root, sub) if sub else root
    os.makedirs(d, exist_ok=True)
    g = torch.Generator().manual_seed(SEED + case_index)
    weights = init_params(cfg, g)
    stream = torch.randint(0, cfg["vocab_size"], (batch, seq + 1), generator=g, dtype=torch.int64)
    ids, targets = stream[:, :seq].clone(), stream[:, 1:].clone()
    flat = torch.randperm(batch * seq, generator=g)[:n_ignored]
    targets.view(-1)[flat] = IGNORE

    ref = run(cfg, weights, ids, targets, torch.float64)
    f32 = run(cfg, weights, ids, targets, torch.float32)

    print("case %s: %d parameters" % (sub or "main", sum(w.numel() for w in weights.values())))
    worst = max((rel_err(f32[k], ref[k]), k) for k in ref)
    print("  f32 torch vs f64 reference, worst relative error %.3g (%s)" % worst)
    for k in ("logits", "loss", "adamw_losses"):
        print("  %-14s %.3g" % (k, rel_err(f32[k], ref[k])))
    print("  loss %.6f -> %.6f after %d AdamW steps" % (ref["adamw_losses"][0], ref["adamw_losses"][-1],
                                                      ADAMW["steps"]))

    names = param_names(cfg)
    write_safetensors(os.path.join(d, "weights.safetensors"), [(n, weights[n]) for n in names],
                      {"config": json.dumps(cfg, separators=(",", ":")), "format": "pt"})
    write_safetensors(os.path.join(d, "batch.safetensors"), [("ids", ids), ("targets", targets)], {})
    order = ["logits", "loss", "adamw_losses"] + ["grad." + n for n in names] + \
        ["hidden.%d" % i for i in range(cfg["n_layers"] + 1)] + ["final_norm"]
    assert set(order) == set(ref)
    write_safetensors(os.path.join(d, "expected.safetensors"), [(k, ref[k].float()) for k in order],
                      {"adamw": json.dumps(ADAMW, separators=(",", ":")), "ignore_index": str(IGNORE)})


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: llama_ref.py OUT_DIR   (e.g. tests/fixtures/llama)")
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    for i, (sub, cfg, batch, seq, n_ignored) in enumerate(CASES):
        make_case(sys.argv[1], sub, cfg, batch, seq, n_ignored, i)


if __name__ == "__main__":
    main()
