#!/usr/bin/env python3
"""`paddlec export-hf` against transformers: the exported directory, loaded with
AutoTokenizer and AutoModelForCausalLM, must give what paddlec gives on the
checkpoint it came from. A manual check (not part of `make test`: tests/test_hf_cli.sh
and tests/test_tokenizer_hf.c check the files' structure and paddlec's side).

    /work/venv/bin/python tools/ref/check_export_hf.py build/paddlec [CKPT ...]

Without CKPT it trains two tiny models in a temporary directory (seconds each):
one on the built-in arithmetic data with byte tokens, one on docs/*.md with a
BPE of 600 tokens and a special token (`paddlec tokenizer train`). For each:

  1. export-hf CKPT DIR; the directory holds config.json, model.safetensors,
     generation_config.json, tokenizer.json and tokenizer_config.json;
  2. tokens: AutoTokenizer's ids of a text equal paddlec's (the ids of the
     validation windows below are compared through the loss) and decode gives
     the text back;
  3. greedy text: `paddlec generate --ckpt CKPT --prompt P --max-new 16` equals
     P + the decoded continuation of transformers' greedy generate();
  4. loss: `paddlec eval --ckpt CKPT --data one-line.txt --seq-len T` equals
     transformers' mean cross-entropy (float64) over the same windows (the last
     5% of the tokens, windows of T) to 1e-4.
Exits non-zero on a mismatch.
"""
import glob
import json
import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
TINY = ["--dim", "48", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--hidden", "96", "--seq-len", "32",
        "--batch", "8", "--lr", "0.01", "--warmup", "2", "--task-n", "0", "--eval-batches", "1"]


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("failed (%d): %s\n%s" % (r.returncode, " ".join(args), r.stderr))
    return r.stdout


def train_models(paddlec, tmp):
    byte = os.path.join(tmp, "byte")
    run([paddlec, "train", "--steps", "60", "--out", byte] + TINY)
    docs = os.path.join(tmp, "docs.txt")
    with open(docs, "wb") as f:
        for p in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
            f.write(open(p, "rb").read())
    tok = os.path.join(tmp, "bpe.json")
    run([paddlec, "tokenizer", "train", "--input", docs, "--vocab", "600", "--out", tok])
    j = json.load(open(tok))   # a special token, as a run that marks documents has
    j.setdefault("special", []).append({"id": j["vocab_size"], "text": "<|endoftext|>"})
    j["vocab_size"] += 1
    json.dump(j, open(tok, "w"))
    bpe = os.path.join(tmp, "bpe")
    run([paddlec, "train", "--steps", "60", "--data", docs, "--tokenizer", tok, "--out", bpe] + TINY)
    return [os.path.join(byte, "final.safetensors"), os.path.join(bpe, "final.safetensors")], docs


def check(paddlec, ckpt, text, tmp, k):
    bad = 0
    out = os.path.join(tmp, "hf%d" % k)
    run([paddlec, "export-hf", ckpt, out])
    files = sorted(os.listdir(out))
    want = ["config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    if files != want:
        print("  FAIL files %s" % files)
        bad += 1
    tok = AutoTokenizer.from_pretrained(out)
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float64).eval()
    gen = json.load(open(os.path.join(out, "generation_config.json")))
    print("%s: %s, vocab %d; generation_config bos %s eos %s" % (ckpt, type(tok).__name__, len(tok),
                                                                 gen.get("bos_token_id"), gen.get("eos_token_id")))
    sample = text[:4000]
    ids = tok(sample, add_special_tokens=False)["input_ids"]
    if tok.decode(ids) != sample:
        print("  FAIL decode(encode(text)) != text")
        bad += 1

    # greedy text
    for prompt in ["\n12+34=", "The ", "Tokens and "]:
        p = tok(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            g = model.generate(p, max_new_tokens=16, do_sample=False, eos_token_id=None, pad_token_id=0)
        hf_text = prompt + tok.decode(g[0, p.shape[1]:].tolist())
        pd_text = run([paddlec, "generate", "--ckpt", ckpt, "--prompt", prompt, "--max-new", "16"])[:-1]
        pd_text = pd_text.replace("\\n", "\n")
        ok = hf_text == pd_text.replace("\\n", "\n") or hf_text == prompt.replace("\\n", "\n") + pd_text[len(prompt):]
        print("  %s generate %r -> %r" % ("ok  " if ok else "FAIL", prompt, hf_text[len(prompt):]))
        if not ok:
            print("       paddlec: %r" % pd_text)
            bad += 1

    # loss over the validation windows of a one-line text
    line = " ".join(text.split())[:30000]
    path = os.path.join(tmp, "line%d.txt" % k)
    open(path, "w", encoding="utf-8", newline="").write(line)
    T = 32
    out_eval = run([paddlec, "eval", "--ckpt", ckpt, "--data", path, "--seq-len", str(T), "--batch", "8",
                    "--batches", "1000", "--task-n", "0"])
    pd_loss = float([x for x in out_eval.splitlines() if x.startswith("val loss")][0].split()[2])
    ids = tok(line, add_special_tokens=False)["input_ids"]
    val = ids[len(ids) - int(math.floor(len(ids) * 0.05)):]
    nw = (len(val) - 1) // T
    x = torch.tensor([val[i * T:i * T + T] for i in range(nw)])
    y = torch.tensor([val[i * T + 1:i * T + T + 1] for i in range(nw)])
    with torch.no_grad():
        hf_loss = F.cross_entropy(model(x).logits.reshape(-1, model.config.vocab_size), y.reshape(-1)).item()
    ok = abs(hf_loss - pd_loss) < 1e-4
    print("  %s eval loss: paddlec %.4f, transformers %.6f (%d windows of %d)" % ("ok  " if ok else "FAIL", pd_loss,
                                                                                 hf_loss, nw, T))
    return bad + (not ok)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    paddlec = os.path.abspath(sys.argv[1])
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        if len(sys.argv) > 2:
            ckpts, text = sys.argv[2:], open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
        else:
            ckpts, docs = train_models(paddlec, tmp)
            text = open(docs, encoding="utf-8").read()
        bad = sum(check(paddlec, c, text, tmp, k) for k, c in enumerate(ckpts))
    print("check_export_hf: %s" % ("all agree" if not bad else "%d mismatches" % bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
