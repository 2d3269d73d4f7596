#!/usr/bin/env python3
"""Hugging Face Llama directories and their PyTorch references, for tests/test_hf.c.

Usage (the venv has torch, transformers, safetensors and tokenizers from PyPI):

    /work/venv/bin/python tools/ref/hf_llama_fixture.py tests/fixtures/hf

Each case is a tiny LlamaForCausalLM (2 layers, hidden 32, 4 heads, 2 key/value
heads: grouped-query attention) written by transformers' save_pretrained, so the
directory is what a user downloads: config.json, model.safetensors (or shards and
model.safetensors.index.json), generation_config.json. The cases:

  untied-f32           f32, untied lm_head, one file
  untied-bf16-sharded  bf16, untied, two shards and the index
  tied-f32             f32, tied embeddings (no lm_head.weight), rope_theta 500000,
                       rms_norm_eps 1e-6, vocabulary 300 with a byte-level BPE
                       tokenizer.json (tokenizers, trained on this script's text), and
                       generate.txt: what `paddlec generate --hf DIR --prompt "The quick
                       brown" --max-new 12` must print (transformers' greedy tokens,
                       decoded by tokenizers)
  tied-bf16            bf16, tied, and the file still carries lm_head.weight (as
                       some exports do: the loader must ignore it)

  llama2-sp            f32, tied, vocabulary 1456 with tests/fixtures/tokenizer/llama2.json
                       (the Llama 2 style: SentencePiece BPE with byte fallback, a
                       TemplateProcessing that puts <s> first, a Strip decoder), trained
                       here on this script's text so that it continues words; no
                       expected.safetensors, but
                       generate.txt: what `paddlec generate --hf DIR --prompt "The quick
                       brown" --max-new 12` must print (the continuation begins with a
                       "▁" token, whose space decoding the continuation alone drops), and
                       eval.txt: the loss `paddlec eval --hf DIR --data DIR/eval_text.txt
                       --seq-len 16 --batch 4` must print: eval_text.txt is one line, so
                       its validation split is its last 5% of tokens, scored in windows of
                       16 that each start with <s> (transformers' float64 forward)

    hf_llama_fixture.py OUT_DIR llama2-sp   writes that case only

Next to them, expected.safetensors holds the reference, computed by transformers
in float64 from the stored (rounded) weights:

  ids [2, 12], logits [2, 12, V]    a forward over two prompts
  greedy_prompt [1, 6], greedy [16] greedy decoding, a full forward per token
  ft_ids, ft_targets [2, 16]        a fine-tuning batch; targets -100 are ignored
  ft_losses [5] (F64)               the loss before each of 5 AdamW steps
  metadata "adamw"                  lr, betas, eps, weight_decay (on tensors of 2 or
                                    more dims only, pd_optimizer_create_for's groups)

The script also checks its own reference against tools/ref/llama_ref.py's forward
(the model written in plain torch) and prints the smallest top-1 margin of the
greedy steps, so a test failure cannot come from a near tie.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_ref  # noqa: E402

SEED = 20261126
ADAMW = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1, "steps": 5}
BASE = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2)
CASES = [
    ("untied-f32", dict(vocab_size=96, tie_word_embeddings=False), torch.float32, None, False, False),
    ("untied-bf16-sharded", dict(vocab_size=96, tie_word_embeddings=False, rope_theta=20000.0), torch.bfloat16,
     "20KB", False, False),
    ("tied-f32", dict(vocab_size=300, tie_word_embeddings=True, rope_theta=500000.0, rms_norm_eps=1e-6),
     torch.float32, None, False, True),
    ("tied-bf16", dict(vocab_size=96, tie_word_embeddings=True, rms_norm_eps=1e-6), torch.bfloat16, None, True,
     False),
]
GEN_PROMPT = "The quick brown"
TEXT = ("The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.\n"
        "How vexingly quick daft zebras jump! 12 + 34 = 46, 7 * 8 = 56. Ünïcödé text, tabs\tand  spaces.\n") * 20


def init_weights(model, g):
    """Realistic scales (as llama_ref.py: the 0.02 init makes every softmax nearly
    uniform): embeddings N(0, 1), projections N(0, 1/fan_in), norms 1 + N(0, 0.01)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))


def ref_cfg(c):
    return {"vocab_size": c.vocab_size, "dim": c.hidden_size, "n_layers": c.num_hidden_layers,
            "n_heads": c.num_attention_heads, "n_kv_heads": c.num_key_value_heads,
            "hidden_dim": c.intermediate_size, "norm_eps": c.rms_norm_eps, "rope_theta": rope_theta(c),
            "tie_embeddings": int(c.tie_word_embeddings)}


def rope_theta(c):
    rp = getattr(c, "rope_parameters", None) or {}
    return float(rp.get("rope_theta", getattr(c, "rope_theta", 10000.0)))


def loss_of(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)


def greedy_decode(model, seq, n):
    """n greedy tokens, a full forward each; returns the sequence and the smallest
    gap between the two largest logits of those steps."""
    margin = float("inf")
    with torch.no_grad():
        for _ in range(n):
            last = model(seq).logits[0, -1]
            top = torch.topk(last, 2).values
            margin = min(margin, (top[0] - top[1]).item())
            seq = torch.cat([seq, last.argmax().view(1, 1)], dim=1)
    return seq, margin


def make_case(root, name, over, dtype, shard, lm_head_in_file, with_tokenizer, index):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    g = torch.Generator().manual_seed(SEED + index)
    cfg = LlamaConfig(**BASE, **over, attn_implementation="eager")
    model = LlamaForCausalLM(cfg)
    init_weights(model, g)
    model = model.to(dtype)
    kw = {"max_shard_size": shard} if shard else {}
    model.save_pretrained(d, **kw)
    if lm_head_in_file:   # a tied export that still stores lm_head.weight
        sd = load_file(os.path.join(d, "model.safetensors"))
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"].clone()
        save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    if with_tokenizer:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tr = trainers.BpeTrainer(vocab_size=cfg.vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                 special_tokens=["<|endoftext|>"], show_progress=False)
        tok.train_from_iterator([TEXT], tr)
        assert tok.get_vocab_size() <= cfg.vocab_size
        tok.save(os.path.join(d, "tokenizer.json"))

    # The reference: the saved directory loaded back, in float64.
    ref = LlamaForCausalLM.from_pretrained(d, dtype=torch.float64, attn_implementation="eager").eval()
    V = cfg.vocab_size
    ids = torch.randint(0, V, (2, 12), generator=g)
    with torch.no_grad():
        logits = ref(ids).logits
        P = {n: p.detach() for n, p in ref.named_parameters()}
        if cfg.tie_word_embeddings:
            P.pop("lm_head.weight", None)
        plain = llama_ref.forward(ref_cfg(cfg), P, ids)
    print("%s: %d parameters, %s; transformers vs llama_ref.py logits rel. err %.3g" % (
        name, sum(p.numel() for p in model.parameters()), dtype, llama_ref.rel_err(plain, logits)))

    prompt = torch.randint(0, V, (1, 6), generator=g)
    seq, margin = greedy_decode(ref, prompt, 16)
    greedy = seq[0, 6:].clone()
    print("  greedy %s, smallest top-1 margin %.3g" % (greedy.tolist(), margin))

    if with_tokenizer:   # what `paddlec generate --hf DIR --prompt PROMPT --max-new 12` prints (greedy)
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        seq, m2 = greedy_decode(ref, torch.tensor([tok.encode(GEN_PROMPT).ids]), 12)
        margin = min(margin, m2)
        gen = [t for t in seq[0, -12:].tolist() if t < tok.get_vocab_size()]
        with open(os.path.join(d, "generate.txt"), "w", encoding="utf-8", newline="") as f:
            f.write(GEN_PROMPT + tok.decode(gen) + "\n")
        print("  generate --hf: %r, smallest top-1 margin %.3g" % (GEN_PROMPT + tok.decode(gen), margin))

    stream = torch.randint(0, V, (2, 17), generator=g)
    ft_ids, ft_targets = stream[:, :16].clone(), stream[:, 1:].clone()
    ft_targets.view(-1)[torch.randperm(32, generator=g)[:5]] = -100
    ref.train()
    params = [p for n, p in ref.named_parameters() if not (cfg.tie_word_embeddings and n == "lm_head.weight")]
    decay = [p for p in params if p.dim() >= 2]
    keep = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": ADAMW["weight_decay"]},
                             {"params": keep, "weight_decay": 0.0}], lr=ADAMW["lr"],
                            betas=(ADAMW["beta1"], ADAMW["beta2"]), eps=ADAMW["eps"])
    losses = []
    for _ in range(ADAMW["steps"]):
        opt.zero_grad()
        loss = loss_of(ref(ft_ids).logits, ft_targets)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    print("  fine-tune losses %s" % ["%.6f" % x for x in losses])

    save_file({"ids": ids, "logits": logits.float().contiguous(), "greedy_prompt": prompt, "greedy": greedy,
               "ft_ids": ft_ids, "ft_targets": ft_targets,
               "ft_losses": torch.tensor(losses, dtype=torch.float64)},
              os.path.join(d, "expected.safetensors"),
              metadata={"adamw": json.dumps(ADAMW, separators=(",", ":")), "margin": "%.6g" % margin})


LLAMA2_EVAL = "Pack my box with five dozen liquor jugs and the quick brown fox jumps over the lazy dog. " * 60


def make_llama2_case(root):
    """The Llama 2 style case (see the docstring): tokenizer, training, generate.txt, eval.txt."""
    from tokenizers import Tokenizer
    d = os.path.join(root, "llama2-sp")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    here = os.path.dirname(os.path.abspath(__file__))
    tok_path = os.path.join(here, "..", "..", "tests", "fixtures", "tokenizer", "llama2.json")
    tok = Tokenizer.from_file(tok_path)
    g = torch.Generator().manual_seed(SEED + 100)
    cfg = LlamaConfig(**dict(BASE, vocab_size=tok.get_vocab_size(), tie_word_embeddings=True),
                      attn_implementation="eager")
    bos = cfg.bos_token_id
    assert tok.token_to_id("<s>") == bos
    model = LlamaForCausalLM(cfg)
    init_weights(model, g)
    # train on windows of the text that start with <s>, as Llama 2 saw its documents
    stream = torch.tensor(tok.encode(TEXT, add_special_tokens=False).ids)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for step in range(400):
        starts = torch.randint(0, len(stream) - 32, (16,), generator=g)
        x = torch.stack([torch.cat([torch.tensor([bos]), stream[s:s + 31]]) for s in starts.tolist()])
        y = torch.stack([stream[s:s + 32] for s in starts.tolist()])
        loss = loss_of(model(x).logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("llama2-sp: trained 400 steps, last loss %.4f" % loss.item())
    model.eval()
    model.save_pretrained(d)
    with open(tok_path, "rb") as f, open(os.path.join(d, "tokenizer.json"), "wb") as o:
        o.write(f.read())

    ref = LlamaForCausalLM.from_pretrained(d, dtype=torch.float64, attn_implementation="eager").eval()
    prompt = tok.encode(GEN_PROMPT).ids   # the post-processor puts <s> first
    assert prompt[0] == bos
    seq, margin = greedy_decode(ref, torch.tensor([prompt]), 12)
    gen = seq[0, len(prompt):].tolist()
    first = tok.id_to_token(gen[0])
    text = tok.decode(seq[0].tolist(), skip_special_tokens=True)
    assert first.startswith("\u2581") and text.startswith(GEN_PROMPT + " "), (first, text)
    with open(os.path.join(d, "generate.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(text + "\n")
    print("  generate --hf: %r (first token %r; decoded alone: %r), smallest top-1 margin %.3g"
          % (text, first, tok.decode(gen), margin))

    with open(os.path.join(d, "eval_text.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(LLAMA2_EVAL)
    ids = tok.encode(LLAMA2_EVAL, add_special_tokens=False).ids
    val = ids[len(ids) - int(math.floor(len(ids) * 0.05)):]
    T = 16
    nw = (len(val) - 1) // T
    x = torch.tensor([[bos] + val[k * T:k * T + T - 1] for k in range(nw)])
    y = torch.tensor([val[k * T:k * T + T] for k in range(nw)])
    with torch.no_grad():
        ev = loss_of(ref(x).logits, y).item()
        plain = loss_of(ref(torch.tensor([val[k * T:k * T + T] for k in range(nw)])).logits,
                        torch.tensor([val[k * T + 1:k * T + T + 1] for k in range(nw)])).item()
    with open(os.path.join(d, "eval.txt"), "w") as f:
        f.write("%.6f\n" % ev)
    print("  eval: %d val tokens, %d windows: loss %.6f with <s> first (%.6f without)" % (len(val), nw, ev, plain))


def check_export(path):
    """A directory written by `paddlec export-hf` / pd_llama_save_hf: transformers
    loads it and the logits of a fixed batch are printed (a manual check)."""
    m = LlamaForCausalLM.from_pretrained(path, dtype=torch.float64).eval()
    ids = torch.arange(8).view(1, 8) % m.config.vocab_size
    with torch.no_grad():
        print(m(ids).logits[0, :, :4])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check-export":
        return check_export(sys.argv[2])
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "llama2-sp"):
        sys.exit("usage: hf_llama_fixture.py OUT_DIR [llama2-sp]   (e.g. tests/fixtures/hf)\n"
                 "       hf_llama_fixture.py --check-export DIR")
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    if len(sys.argv) == 2:
        for i, case in enumerate(CASES):
            make_case(sys.argv[1], *case, i)
    make_llama2_case(sys.argv[1])


if __name__ == "__main__":
    main()
