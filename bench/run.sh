#!/usr/bin/env bash
# make bench: every bench program, then the PyTorch peer, as JSON lines.
# The peer gets its best settings on this CPU: OPENBLAS_CORETYPE=SkylakeX
# (Debian's OpenBLAS misdetects the core otherwise) and its default threads.
set -uo pipefail
build=${1:-build}
PD_WITH_TORCH=1 bash "$(dirname "$0")/../scripts/install-deps.sh"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
for b in "$build"/bench_*; do
  [ -x "$b" ] || continue
  echo "# $(basename "$b")" >&2
  "$b"
done
peer="$(dirname "$0")/torch_peer.py"
# Debian's python3-torch lives in the system interpreter.
py=/usr/bin/python3
for what in dispatch bandwidth matmul; do
  for th in 1 2; do   # report both; the best thread count is the peer's figure
    echo "# torch_peer $what threads=$th" >&2
    OPENBLAS_CORETYPE=SkylakeX "$py" "$peer" "$what" "$th" ||
      echo "{\"bench\":\"$what\",\"impl\":\"pytorch\",\"error\":\"peer failed\"}"
  done
done
