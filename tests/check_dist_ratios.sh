#!/usr/bin/env bash
# bench/dist.sh's arithmetic, on made-up lines (CTest: check_dist_ratios):
# bench/dist_ratios.py compares each peer with paddle.c's matching runs
# just before and just after it, and bench/summarize.py prints the ratios
# and the skipped peers (docs/benchmarks.md, "Data parallelism"). Standard
# library Python only: no framework, no MPI.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pd() { echo "{\"bench\":\"train_llama_dp\",\"impl\":\"paddle.c\",\"run\":\"paddlec train$1\",\"world_size\":$2,\"threads\":$3,\"tokens_per_s\":$4}"; }
peer() { echo "{\"bench\":\"train_llama_dp\",\"impl\":\"$1\",\"run\":\"x\",\"$2\":\"9.9\",\"world_size\":2,\"threads\":1,\"tokens_per_s\":$3}"; }
{
  pd " --mesh tp=2" 2 1 800
  pd "" 1 2 1000
  pd " --mesh dp=2" 2 1 950
  peer pytorch-ddp torch 500
  pd " --mesh dp=2" 2 1 1050
  echo '{"bench":"train_llama_dp","impl":"paddle-auto-static","run":"y","paddle":"9.9","world_size":2,"threads":1,"skipped":"failed: no CUDA"}'
  peer paddle-auto paddle 400
  pd " --mesh dp=2" 2 1 900
  pd " --mesh tp=2" 2 1 600
  peer paddle-auto-tp paddle 200
  pd " --mesh tp=2" 2 1 700
} >"$tmp/lines"
python3 "$root/bench/dist_ratios.py" 2 <"$tmp/lines" >"$tmp/ratios"
cat "$tmp/ratios"
python3 - "$tmp/ratios" <<'PY'
import json, sys
got = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    got[d["what"]] = d
def check(what, ratio, **kw):
    d = got.get(what)
    assert d is not None, "no ratio line for %r" % what
    assert abs(d["ratio"] - ratio) < 1e-3, (what, d["ratio"], ratio)
    for k, v in kw.items():
        assert d.get(k) == v, (what, k, d.get(k), v)
check("paddle.c paddlec train --mesh dp=2 / paddle.c paddlec train", 0.95, goal=0.9, met=True)
check("paddle.c paddlec train --mesh tp=2 / paddle.c paddlec train", 0.8)  # not adjacent: the first of each
check("paddle.c paddlec train --mesh dp=2 / PyTorch 9.9 x (2 x 1)", 2.0, goal=1.3, met=True, interleaved=True,
      numerator=[950, 1050])
check("paddle.c paddlec train --mesh dp=2 / PaddlePaddle 9.9 x (2 x 1)", 2.4375, numerator=[1050, 900])
check("paddle.c paddlec train --mesh tp=2 / PaddlePaddle 9.9 x (2 x 1)", 3.25, numerator=[600, 700])
assert not any("paddle-auto-static" in w for w in got), "a skipped peer has no ratio"
assert len(got) == 5, sorted(got)
PY
cat "$tmp/lines" "$tmp/ratios" | python3 "$root/bench/summarize.py" >"$tmp/summary"
grep -q 'PyTorch 9.9 x (2 x 1): 2.00× (goal 1.3×): met' "$tmp/summary"
grep -q 'paddle-auto-static y : skipped: failed: no CUDA' "$tmp/summary"
echo "dist ratios: ok"
