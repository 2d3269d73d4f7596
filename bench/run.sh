#!/usr/bin/env bash
# make bench: every bench program, then the PyTorch peer, as JSON lines on
# stdout, then a markdown summary table (bench/summarize.py).
#   bash bench/run.sh [BUILD_DIR]      (PD_BENCH_FULL=1: more trials)
# Threads are set per measurement, never inherited: the C benches run with
# OMP_NUM_THREADS=$(nproc) except bench_bandwidth, which sets 1 and all
# cores itself; the peer runs each benchmark at 1 thread and at all cores.
# The peer gets its best settings on this CPU: OPENBLAS_CORETYPE=SkylakeX
# (Debian's OpenBLAS misdetects the core otherwise), and glibc malloc
# thresholds raised so large freed blocks are reused rather than unmapped
# (PyTorch's CPU allocator does not cache; see bench/torch_peer.py).
set -uo pipefail
build=${1:-build}
here=$(dirname "$0")
PD_WITH_TORCH=1 bash "$here/../scripts/install-deps.sh"
nth=$(nproc)
peer_threads=1
[ "$nth" -gt 1 ] && peer_threads="1 $nth"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

{
  for b in "$build"/bench_*; do
    [ -x "$b" ] || continue
    name=$(basename "$b")
    echo "# $name" >&2
    case $name in
      bench_bandwidth) env -u OMP_NUM_THREADS PD_BENCH_THREADS="$peer_threads" "$b" ;;
      *) OMP_NUM_THREADS=$nth "$b" ;;
    esac || echo "{\"bench\":\"${name#bench_}\",\"impl\":\"paddle.c\",\"error\":\"$name exited with status $?\"}"
  done
  peer="$here/torch_peer.py"
  # Debian's python3-torch lives in the system interpreter.
  py=/usr/bin/python3
  for what in dispatch bandwidth matmul; do
    for th in $peer_threads; do   # report each; the summary takes the best
      echo "# torch_peer $what threads=$th" >&2
      env -u OMP_NUM_THREADS OPENBLAS_CORETYPE=SkylakeX \
        GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296 \
        "$py" "$peer" "$what" "$th" ||
        echo "{\"bench\":\"$what\",\"impl\":\"pytorch\",\"threads\":$th,\"error\":\"peer failed\"}"
    done
  done
} | tee "$out"

echo
python3 "$here/summarize.py" <"$out"
