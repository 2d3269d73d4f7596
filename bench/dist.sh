#!/usr/bin/env bash
# Data parallelism (issue 14, "Performance"; docs/benchmarks.md, "Data
# parallelism"): paddle.c's data-parallel training over MPI against one
# process, and against the DistributedDataParallel peers, on the bench Llama
# (vocab 256, dim 288, 6 layers, 6 heads, hidden 768, seq 256, untied, f32,
# AdamW; 8 x 256 tokens per step in every configuration).
#   bash bench/dist.sh [BUILD_DIR] [STEPS]        (defaults: build, 10)
# One run, every line a JSON line (bench "train_llama_dp"), then the ratios
# (bench "dist_ratio", bench/dist_ratios.py) and the summary table of
# bench/summarize.py. In order:
#   paddle.c  bench_allreduce under mpirun: the all-reduce of the whole
#             gradient (24.5 MB) through pd_reshard, alone
#   paddle.c  NP independent paddlec train processes x 1 thread, each on
#             8 / NP sequences, side by side: the ceiling of data
#             parallelism (its compute without any communication)
#   paddle.c  mpirun -np 2 paddlec train --mesh tp=2, then tp=2 --sp, then
#             mpirun -np 4 ... --mesh dp=2,tp=2 (PD_DIST_TP=0: not run)
#   paddle.c  the same with --bf16 (bf16 autocast), one process x 2 threads,
#             dp=NP, tp=2, dp=2,tp=2 (PD_DIST_BF16=0 skips them)
#   paddle.c  bench_train_llama, 1 process x 2 threads (the peers' exact
#             step: one fixed batch, no data pipeline; for reference)
#   paddle.c  paddlec train, 1 process x 2 threads, then
#             mpirun -np NP paddlec train --mesh dp=NP, 1 thread per rank
#   peers     each peer configuration followed by paddle.c's matching run
#             again (ours/peer/ours/peer/ours...), so that every peer is
#             compared with paddle.c runs taken just before and just after
#             it, under the same load: first the data-parallel ones
#             (PyTorch DDP 2 x 1 with Debian's torch 1.13 and PyPI's torch,
#             bench/ddp_torch.py; PaddlePaddle 3.3's DataParallel, its
#             semi-auto data parallelism and its dist.to_static form,
#             bench/ddp_paddle.py), then PaddlePaddle's semi-auto tensor
#             parallelism (tp=2) against --mesh tp=2, then (if asked)
#             dp x tp against --mesh dp=2,tp=2 and one-process runs
#             against paddlec train
# A peer that is missing, fails or times out prints a line with "skipped":
# the reason; the run goes on. A peer's first configuration probes its
# variants (attention form, foreach or graph mode: see the scripts); its
# later configurations reuse the choice ("variant_args"), unless the
# PD_DIST_*_ARGS below set them.
# paddlec train's tokens/s: from its metrics file, tokens per step over the
# median step time (the elapsed_s differences) after WARMUP steps; the
# options make it the peers' step: --clip 0 (the peers do not clip),
# constant lr 3e-4 (--warmup 0, --min-lr = --lr), no evaluation during the
# run (--eval-every above the steps, --task-n 0).
# Environment:
#   PD_DIST_PEERS    peers to run (default "torch113 torch-pypi paddle"; "" none)
#   PD_DIST_TORCH_WHAT   the PyTorch peers' configurations (default "ddp";
#                    add "single" for their 1 process x 2 threads)
#   PD_DIST_PADDLE_WHAT  PaddlePaddle's (default "ddp auto auto-static
#                    auto-tp"; also "auto-dptp" (4 processes), "single")
#   PD_DIST_WARMUP   untimed steps (default 3)
#   PD_DIST_NP       ranks of the data-parallel run (default 2)
#   PD_DIST_TP, PD_DIST_BF16   0: skip the tensor-parallel, the bf16 runs
#   PD_DIST_TORCH_PY, PD_DIST_PADDLE_PY   the interpreters of the PyPI peers
#                    (default /work/venv/bin/python, /work/venv-paddle/bin/python)
#   PD_DIST_MPIRUN   extra mpirun arguments (e.g. "--bind-to none")
#   PD_DIST_DP_ARGS  extra paddlec train arguments of the data-parallel run
#                    (e.g. "--dp-bucket-mb 4")
#   PD_DIST_TORCH_ARGS, PD_DIST_PADDLE_ARGS   extra arguments of the peers,
#                    e.g. "--attn matmul --foreach 0" to skip their variant
#                    probes (see the scripts' --help)
#   PD_DIST_TORCH_PYPI_ARGS   PyPI PyTorch's own (instead of
#                    PD_DIST_TORCH_ARGS when set, even empty), e.g.
#                    "--attn sdpa": its fused attention, which Debian's 1.13
#                    does not have
#   PD_DIST_PEER_TIMEOUT  seconds one peer configuration may take (default 900)
# The MPI environment is the one the distributed tests run under
# (CMakeLists.txt): root allowed, waiting ranks yield their CPU; but the
# single-copy transport is kept where it works (below).
set -uo pipefail
build=${1:-build}
steps=${2:-10}
warm=${PD_DIST_WARMUP:-3}
np=${PD_DIST_NP:-2}
peers=${PD_DIST_PEERS-torch113 torch-pypi paddle}
torch_what=${PD_DIST_TORCH_WHAT-ddp}
paddle_what=${PD_DIST_PADDLE_WHAT-ddp auto auto-static auto-tp}
torch_py=${PD_DIST_TORCH_PY:-/work/venv/bin/python}
paddle_py=${PD_DIST_PADDLE_PY:-/work/venv-paddle/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
pdc=$build/paddlec
[ -x "$pdc" ] || { echo "dist.sh: no program $pdc (build first)" >&2; exit 2; }
if ! [ "$steps" -ge 1 ] 2>/dev/null || ! [ "$warm" -ge 1 ] 2>/dev/null || ! [ "$np" -ge 2 ] 2>/dev/null; then
  echo "dist.sh: need STEPS >= 1, PD_DIST_WARMUP >= 1 and PD_DIST_NP >= 2" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/lines.jsonl
mpi_env=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
         OMPI_MCA_mpi_yield_when_idle=1)
# Shared memory's single-copy transport (cross-memory attach) where the
# container allows it: a 24.5 MB all-reduce took 140-180 ms with it and
# 390-470 ms without, at load 14 (docs/benchmarks.md). One all-reduce with
# Open MPI's default tells; if it fails or complains, copy through the
# shared segment as the tests do (OMPI_MCA_btl_vader_single_copy_mechanism=none).
single_copy=default
if [ -z "${OMPI_MCA_btl_vader_single_copy_mechanism:-}" ] && [ -x "$build/bench_allreduce" ]; then
  # shellcheck disable=SC2086
  if ! env "${mpi_env[@]}" mpirun -np "$np" ${PD_DIST_MPIRUN:-} "$build/bench_allreduce" --trials 1 \
      >/dev/null 2>"$tmp/cma.err" || [ -s "$tmp/cma.err" ]; then
    single_copy=none
  fi
else
  single_copy=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
fi
[ "$single_copy" = default ] || mpi_env+=(OMPI_MCA_btl_vader_single_copy_mechanism="$single_copy")
model=(--dim 288 --layers 6 --heads 6 --kv-heads 6 --hidden 768 --seq-len 256 --batch 8 --vocab 256)
recipe=(--steps $((steps + warm)) --lr 3e-4 --min-lr 3e-4 --warmup 0 --clip 0 --task-n 0
        --eval-every 1000000 --log-every 1000000)
json_str() { sed 's/\\/\\\\/g; s/"/\\"/g' <<<"$1" | tr -d '\n'; }
cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
export PD_DIST_CPU=$cpu  # in paddle.c's lines, as the peers print theirs

# train_llama_dp line from metrics files (several: runs side by side, the
# step is the slowest run's, the tokens are summed)
metrics_line() { # label world threads metrics...
  python3 - "$warm" "$@" <<'EOF'
import json, os, sys
warm, label, world, th, paths = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
def steps(path):  # the first metrics line of each step after the warm-up (rank 0's)
    seen = {}
    for line in open(path):
        d = json.loads(line)
        if "loss" in d and "elapsed_s" in d and d["step"] not in seen:
            seen[d["step"]] = d
    s = [seen[k] for k in sorted(seen) if k >= warm]
    return [(b["elapsed_s"] - a["elapsed_s"], b["tokens"] - a["tokens"]) for a, b in zip(s, s[1:])], s[-1]["loss"]
runs = [steps(p) for p in paths]
n = min(len(r[0]) for r in runs)
dt = sorted(max(r[0][i][0] for r in runs) for i in range(n))
tok = sum(r[0][0][1] for r in runs) if n else 0
base = dict(bench="train_llama_dp", impl="paddle.c", run=label, world_size=world, threads=th,
            cpu=os.environ.get("PD_DIST_CPU", "unknown"))
if not n or dt[0] <= 0:
    print(json.dumps(dict(base, error="%s: too few timed steps in the metrics" % label)))
    sys.exit(0)
med = dt[n // 2] if n % 2 else 0.5 * (dt[n // 2 - 1] + dt[n // 2])
print(json.dumps(dict(base, dtype="bf16" if "--bf16" in label else "f32", seq=256, tokens_per_step=tok, steps=n, warmup=warm,
                      step_ms=round(1e3 * med, 1), step_ms_min=round(1e3 * dt[0], 1),
                      tokens_per_s=round(tok / med, 1), loss=round(runs[0][1], 4))))
EOF
}

# one paddlec train run -> a train_llama_dp line (or an error line)
our_run() { # label world threads cmd...
  local label=$1 world=$2 th=$3
  shift 3
  rm -rf "$tmp/run" "$tmp/m.jsonl"
  echo "# $label: $*" >&2
  if ! "$@" "${model[@]}" "${recipe[@]}" --threads "$th" --out "$tmp/run" --metrics "$tmp/m.jsonl" \
      >"$tmp/stdout" 2>"$tmp/err"; then
    echo "{\"bench\":\"train_llama_dp\",\"impl\":\"paddle.c\",\"run\":\"$(json_str "$label")\",\"world_size\":$world,\"threads\":$th,\"error\":\"$(json_str "failed: $(grep -v '^$' "$tmp/err" | tail -1 | cut -c1-200)")\"}"
    return 1
  fi
  metrics_line "$label" "$world" "$th" "$tmp/m.jsonl"
}

# The ceiling of data parallelism: NP independent processes x 1 thread, each
# on 8 / NP sequences, no communication at all
ceiling_run() {
  local label="$np independent processes, no communication" pids=() r ok=1 mf=()
  echo "# $label" >&2
  local per=$((8 / np))
  for r in $(seq 1 "$np"); do
    rm -rf "$tmp/ind$r" "$tmp/ind$r.jsonl"
    "$pdc" train "${model[@]}" "${recipe[@]}" --batch "$per" --threads 1 --out "$tmp/ind$r" \
      --metrics "$tmp/ind$r.jsonl" >/dev/null 2>"$tmp/ind$r.err" &
    pids+=($!)
    mf+=("$tmp/ind$r.jsonl")
  done
  for r in "${pids[@]}"; do wait "$r" || ok=0; done
  if [ $ok = 1 ]; then
    metrics_line "$label" "$np" 1 "${mf[@]}"
  else
    echo "{\"bench\":\"train_llama_dp\",\"impl\":\"paddle.c\",\"run\":\"$(json_str "$label")\",\"world_size\":$np,\"threads\":1,\"error\":\"a run failed\"}"
  fi
}

mpi() { # world args...: paddlec train under mpirun
  local n=$1
  shift
  # shellcheck disable=SC2086  # PD_DIST_MPIRUN is a list of arguments
  env "${mpi_env[@]}" mpirun -np "$n" ${PD_DIST_MPIRUN:-} "$pdc" train "$@"
}
have_mesh=0
"$pdc" train --help 2>&1 | grep -q -- '--mesh' && have_mesh=1
# paddle.c's run of each kind (one, dp, tp, tpsp, dptp)
ours() {
  case $1 in
    one) our_run "paddlec train" 1 2 "$pdc" train ;;
    dp | tp | tpsp | dptp)
      if [ $have_mesh = 0 ]; then
        echo "{\"bench\":\"train_llama_dp\",\"impl\":\"paddle.c\",\"run\":\"paddlec train --mesh\",\"error\":\"paddlec train has no --mesh option (issue 14)\"}"
        return 1
      fi
      [ "$1" = dp ] || [ "${PD_DIST_TP:-1}" = 1 ] || return 1
      case $1 in
        # shellcheck disable=SC2086  # PD_DIST_DP_ARGS is a list of arguments
        dp) our_run "paddlec train --mesh dp=$np${PD_DIST_DP_ARGS:+ $PD_DIST_DP_ARGS}" "$np" 1 mpi "$np" --mesh "dp=$np" ${PD_DIST_DP_ARGS:-} ;;
        tp) our_run "paddlec train --mesh tp=2" 2 1 mpi 2 --mesh tp=2 ;;
        tpsp) our_run "paddlec train --mesh tp=2 --sp" 2 1 mpi 2 --mesh tp=2 --sp ;;
        # 4 ranks on this machine's cores: oversubscribed where nproc < 4
        dptp) our_run "paddlec train --mesh dp=2,tp=2" 4 1 mpi 4 --mesh dp=2,tp=2 ;;
      esac ;;
  esac
}
# the kind of paddle.c run a peer configuration is compared with
kind_of() {
  case $1 in
    ddp | auto | auto-static) echo dp ;;
    auto-tp) echo tp ;;
    auto-dptp) echo dptp ;;
    single) echo one ;;
    *) echo none ;;
  esac
}
declare -A variant  # per peer: the variant its first configuration chose
# one configuration of one peer -> its lines; status 0 if it printed a figure
peer_run() { # peer what
  local p=$1 what=$2 py script extra
  case $p in
    torch113) py=/usr/bin/python3; script=$here/ddp_torch.py; extra=${PD_DIST_TORCH_ARGS:-} ;;
    torch-pypi) py=$torch_py; script=$here/ddp_torch.py; extra=${PD_DIST_TORCH_PYPI_ARGS-${PD_DIST_TORCH_ARGS:-}} ;;
    paddle) py=$paddle_py; script=$here/ddp_paddle.py; extra=${PD_DIST_PADDLE_ARGS:-} ;;
  esac
  echo "# peer $p $what: $py $script" >&2
  if [ ! -x "$py" ]; then
    echo "{\"bench\":\"train_llama_dp\",\"impl\":\"$p\",\"run\":\"$what\",\"skipped\":\"no interpreter $(json_str "$py")\"}"
    return 1
  fi
  # shellcheck disable=SC2086  # the variant and the extra arguments are lists
  env -u OMP_NUM_THREADS timeout "${PD_DIST_PEER_TIMEOUT:-900}" "$py" "$script" --what "$what" --world "$np" \
    --steps "$steps" --warmup "$warm" ${variant[$p]:-} $extra 2>"$tmp/peer.err" | tee "$tmp/peer.raw" |
    grep --line-buffered -v '"variant_probe": true' | tee "$tmp/peer.out"
  local st=${PIPESTATUS[0]}
  # the variant probes go with the progress lines (stderr), not in the results
  grep '"variant_probe": true' "$tmp/peer.raw" | sed 's/^/# probe: /' >&2
  if grep -q '"tokens_per_s"' "$tmp/peer.out"; then
    [ -n "${variant[$p]:-}" ] || variant[$p]=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line) if line.startswith("{") else {}
    if "variant_args" in d:
        print(d["variant_args"])' "$tmp/peer.out" | tail -1)
    return 0
  fi
  # the peer prints its own skipped lines; one that printed none gets one
  if ! grep -q '"skipped"' "$tmp/peer.out"; then
    local last
    last=$(grep -v '^ *$' "$tmp/peer.err" | tail -1 | cut -c1-200)
    [ "$st" = 124 ] && last="timed out after ${PD_DIST_PEER_TIMEOUT:-900} s"
    echo "{\"bench\":\"train_llama_dp\",\"impl\":\"$p\",\"run\":\"$what\",\"skipped\":\"$(json_str "peer printed no figure (status $st): ${last:-no message}")\"}"
  fi
  return 1
}
# every peer configuration of one kind, each followed by paddle.c's run of
# that kind (the one before it is the previous peer's "after", or $2)
peers_of_kind() { # kind ours-already-just-ran(0/1)
  local k=$1 fresh=$2 p w list
  for p in $peers; do
    case $p in
      torch113 | torch-pypi) list=$torch_what ;;
      paddle) list=$paddle_what ;;
      *) echo "dist.sh: unknown peer '$p' (torch113, torch-pypi, paddle)" >&2; continue ;;
    esac
    for w in $list; do
      [ "$(kind_of "$w")" = "$k" ] || continue
      [ "$fresh" = 1 ] || { ours "$k"; fresh=1; }
      peer_run "$p" "$w" && ours "$k"
    done
  done
}

start=$(date +%s)
{
  echo "{\"bench\":\"dist_machine\",\"cpu\":\"$(json_str "$cpu")\",\"nproc\":$(nproc),\"date\":\"$(date -u +%FT%TZ)\",\"loadavg\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"steps\":$steps,\"warmup\":$warm,\"mpi_single_copy\":\"$single_copy\"}"

  if [ -x "$build/bench_allreduce" ]; then  # the all-reduce of the gradients, alone
    echo "# bench_allreduce under mpirun -np $np" >&2
    # shellcheck disable=SC2086
    env "${mpi_env[@]}" mpirun -np "$np" ${PD_DIST_MPIRUN:-} "$build/bench_allreduce" ||
      echo "{\"bench\":\"allreduce\",\"impl\":\"paddle.c\",\"error\":\"bench_allreduce failed\"}"
  fi
  [ $((8 % np)) = 0 ] && ceiling_run
  ours tp
  ours tpsp
  ours dptp
  # The same under bf16 autocast (--bf16: f32 master weights, matmuls in
  # bf16) against one process's --bf16 (PD_DIST_BF16=0: skip)
  if [ "${PD_DIST_BF16:-1}" = 1 ] && [ $have_mesh = 1 ]; then
    our_run "paddlec train --bf16" 1 2 "$pdc" train --bf16
    our_run "paddlec train --mesh dp=$np --bf16" "$np" 1 mpi "$np" --mesh "dp=$np" --bf16
    if [ "${PD_DIST_TP:-1}" = 1 ]; then
      our_run "paddlec train --mesh tp=2 --bf16" 2 1 mpi 2 --mesh tp=2 --bf16
      our_run "paddlec train --mesh dp=2,tp=2 --bf16" 4 1 mpi 4 --mesh dp=2,tp=2 --bf16
    fi
  fi

  if [ -x "$build/bench_train_llama" ]; then
    echo "# bench_train_llama, 1 process x 2 threads" >&2
    OMP_WAIT_POLICY=passive "$build/bench_train_llama" --threads 2 --no-peer --steps "$steps" --warmup "$((warm < 2 ? 2 : warm))" |
      python3 -c '
import json, os, sys
for line in sys.stdin:
    d = json.loads(line) if line.startswith("{") else {}
    if d.get("bench") == "train_llama" and "tokens_per_s" in d:
        print(json.dumps(dict(bench="train_llama_dp", impl="paddle.c", run="bench_train_llama", world_size=1,
                              threads=d["threads"], dtype=d["dtype"], batch=d["batch"], seq=d["seq"],
                              cpu=os.environ.get("PD_DIST_CPU", "unknown"),
                              step_ms=round(1e3 * d["step_s"], 1), step_ms_min=round(1e3 * d["step_s_min"], 1),
                              tokens_per_s=d["tokens_per_s"], loss=d["loss"])))
    elif "error" in d:
        print(json.dumps(dict(d, bench="train_llama_dp", run="bench_train_llama")))'
  fi

  # paddle.c one process, then DP: the 0.9x pair; then the peers, interleaved
  ours one
  ours dp
  peers_of_kind dp 1
  peers_of_kind tp 0
  peers_of_kind dptp 0
  peers_of_kind one 0
  echo "{\"bench\":\"dist_machine\",\"end\":\"$(date -u +%FT%TZ)\",\"elapsed_s\":$(($(date +%s) - start)),\"loadavg\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
} | tee "$out"

python3 "$here/dist_ratios.py" "$np" <"$out" >"$tmp/ratios.jsonl"
tee -a "$out" <"$tmp/ratios.jsonl"
echo
python3 "$here/summarize.py" <"$out"
