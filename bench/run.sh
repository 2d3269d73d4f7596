#!/usr/bin/env bash
# make bench: every bench program, then the PyTorch peer, as JSON lines on
# stdout, then a markdown summary table (bench/summarize.py).
#   bash bench/run.sh [BUILD_DIR]      (PD_BENCH_FULL=1: more trials)
# Threads are set per measurement, never inherited: the C benches run with
# OMP_NUM_THREADS=$(nproc) except bench_bandwidth, which sets 1 and all
# cores itself; the peer runs each benchmark at 1 thread and at all cores.
# The peer gets its best settings on this machine:
#  - OpenBLAS: Debian's torch calls whatever libblas.so.3 comes first, and
#    the default alternative is the reference BLAS (~2 GFLOP/s). The peer
#    gets OpenBLAS's directory on LD_LIBRARY_PATH when it is installed
#    (libopenblas0-pthread; or PD_PEER_BLAS_DIR=dir holding libblas.so.3),
#    without switching the system's alternative; else a warning.
#  - OPENBLAS_CORETYPE=SkylakeX on AVX-512 CPUs only (OpenBLAS 0.3.21
#    misdetects newer ones; on AVX2 CPUs its own detection is right).
#  - glibc malloc thresholds raised so large freed blocks are reused rather
#    than unmapped (PyTorch's CPU allocator does not cache; torch_peer.py).
set -uo pipefail
build=${1:-build}
here=$(dirname "$0")
PD_WITH_TORCH=1 bash "$here/../scripts/install-deps.sh"
nth=$(nproc)
peer_threads=1
[ "$nth" -gt 1 ] && peer_threads="1 $nth"
peer_env=(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296)
blas_dir=${PD_PEER_BLAS_DIR:-/usr/lib/x86_64-linux-gnu/openblas-pthread}
if [ -e "$blas_dir/libblas.so.3" ]; then
  peer_env+=(LD_LIBRARY_PATH="$blas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
else
  echo "run.sh: no OpenBLAS in $blas_dir: the PyTorch peer's matmul uses the reference BLAS" >&2
fi
grep -qw avx512f /proc/cpuinfo && peer_env+=(OPENBLAS_CORETYPE=SkylakeX)
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
      # OpenBLAS has its own thread pool, which torch.set_num_threads
      # does not reach: cap it to the same count.
      env -u OMP_NUM_THREADS "${peer_env[@]}" OPENBLAS_NUM_THREADS="$th" "$py" "$peer" "$what" "$th" ||
        echo "{\"bench\":\"$what\",\"impl\":\"pytorch\",\"threads\":$th,\"error\":\"peer failed\"}"
    done
  done
} | tee "$out"

echo
python3 "$here/summarize.py" <"$out"
