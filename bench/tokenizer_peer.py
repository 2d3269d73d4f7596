#!/usr/bin/env python3
"""Peers of bench/tokenizer.c: encode MB/s of the same texts with the same
GPT-2 vocabulary, one JSON line per (impl, text), in the format of
bench_tokenizer's lines.

  - Hugging Face `tokenizers` (PyPI, Rust): a GPT-2 tokenizer built from
    encoder.json + vocab.bpe (ByteLevel, as tools/ref/tokenizer_ref.py does),
    Tokenizer.encode on the whole text, and once per line (one thread;
    TOKENIZERS_PARALLELISM is off);
  - the Node.js reference encoder (npm gpt-3-encoder: the JavaScript of the
    gpt2-encoder reference directory given as the second argument, run, not
    copied).

Both keep a word cache across calls (paddle.c's lives within one call), so
the first run is reported beside the best. The Node encoder runs once per
text: it grows its id array by concatenation, quadratic in the token count
(about 8 CPU seconds for the 110 KB text).

    /work/venv/bin/python bench/tokenizer_peer.py [--hf-only] [FIXTURE_DIR] [NODE_ENCODER_DIR]
"""
import glob
import json
import os
import subprocess
import sys
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
HF_ONLY = "--hf-only" in sys.argv  # skip the (slow) Node runs
sys.argv = [a for a in sys.argv if a != "--hf-only"]
HERE = os.path.dirname(os.path.abspath(__file__))
FX = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "fixtures", "tokenizer")
NODE_DIR = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "..", "shared", "data", "gpt2-encoder")
RUNS = 20 if os.environ.get("PD_BENCH_FULL") else 5


def texts():
    mixed = open(os.path.join(FX, "mixed.txt"), encoding="utf-8", newline="").read()
    docs = b"".join(open(p, "rb").read() for p in sorted(glob.glob(os.path.join(HERE, "..", "docs", "*.md"))))
    return {"mixed": mixed, "docs": docs.decode("utf-8")}


def line(impl, text, nbytes, ntok, first, best, best_cpu, **kw):
    d = {"bench": "tokenizer", "impl": impl, "tokenizer": "gpt2", "text": text, "bytes": nbytes, "tokens": ntok,
         "threads": 1, "dtype": "i32", "runs": RUNS, "seconds": round(best, 6), "mb_per_s": round(nbytes / best / 1e6, 3),
         "cpu_mb_per_s": round(nbytes / best_cpu / 1e6, 3), "first_mb_per_s": round(nbytes / first / 1e6, 3)}
    d.update(kw)
    print(json.dumps(d), flush=True)


def hf(all_texts):
    try:
        import tokenizers
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    except ImportError as e:
        print(json.dumps({"bench": "tokenizer", "impl": "hf-tokenizers", "error": str(e)}))
        return
    vocab = json.load(open(os.path.join(FX, "gpt2", "encoder.json"), encoding="utf-8"))
    lines = open(os.path.join(FX, "gpt2", "vocab.bpe"), encoding="utf-8").read().split("\n")
    tok = Tokenizer(models.BPE(vocab, [tuple(x.split(" ")) for x in lines[1:] if x]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])  # as pd_tokenizer_load_gpt2 (docs/ mention it)
    for name, text in all_texts.items():
        nbytes = len(text.encode())
        times, cpus = [], []
        for _ in range(RUNS):
            t0, c0 = time.perf_counter(), time.process_time()
            ids = tok.encode(text, add_special_tokens=False).ids
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        line("hf-tokenizers", name, nbytes, len(ids), times[0], min(times), min(cpus), version=tokenizers.__version__)
        # one call per line: how it is mostly used, and far faster than one
        # call on a long text (the ids differ slightly: white-space runs
        # across newlines are cut at each line's end)
        parts = text.splitlines(keepends=True)
        times, cpus = [], []
        for _ in range(RUNS):
            t0, c0 = time.perf_counter(), time.process_time()
            n = sum(len(tok.encode(p, add_special_tokens=False).ids) for p in parts)
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        line("hf-tokenizers-per-line", name, nbytes, n, times[0], min(times), min(cpus), version=tokenizers.__version__)


NODE_JS = r"""
const {encode} = require(process.argv[1]);
const fs = require("fs");
const runs = +process.argv[2];
for (const [name, path] of [["mixed", process.argv[3]], ["docs", process.argv[4]]]) {
  const text = fs.readFileSync(path, "utf8");
  const times = [], cpus = [];
  let n = 0;
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
    n = encode(text).length;
    const c = process.cpuUsage(c0);
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
    cpus.push((c.user + c.system) / 1e6);
  }
  console.log(JSON.stringify({name, bytes: Buffer.byteLength(text), tokens: n, first: times[0],
                              best: Math.min(...times), best_cpu: Math.min(...cpus)}));
}
"""


def node(all_texts):
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name in ("mixed", "docs"):
            p = os.path.join(d, name + ".txt")
            with open(p, "w", encoding="utf-8", newline="") as f:
                f.write(all_texts[name])
            paths.append(p)
        try:
            # one run: the reference grows its id array by concatenation, quadratic in the tokens
            out = subprocess.run(["node", "-e", NODE_JS, os.path.abspath(NODE_DIR), "1"] + paths, check=True,
                                 capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            print(json.dumps({"bench": "tokenizer", "impl": "node-gpt-3-encoder", "error": str(e)[:200]}))
            return
    for row in out.splitlines():
        r = json.loads(row)
        line("node-gpt-3-encoder", r["name"], r["bytes"], r["tokens"], r["first"], r["best"], r["best_cpu"], runs=1,
             node=subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    t = texts()
    hf(t)
    if not HF_ONLY:
        node(t)
