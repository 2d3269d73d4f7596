#!/usr/bin/env bash
# Installs the Debian packages paddle.c needs, only those missing.
# Idempotent; uses sudo only when not root. Set PD_WITH_TORCH=1 to add the
# PyTorch peer used by the benchmarks and the reference scripts in tools/ref
# (make bench sets it), and scikit-learn, whose digits data set
# examples/digits.c trains on (it skips with a message without it).
set -euo pipefail

# ocl-icd-opencl-dev: only recommended by libdnnl-dev, yet its CMake config
# (dnnl-config.cmake) requires OpenCL; --no-install-recommends skips it.
# libopenmpi-dev, openmpi-bin: MPI, the distributed engine (docs/distributed.md).
pkgs=(build-essential cmake pkg-config libdnnl-dev ocl-icd-opencl-dev libcjson-dev libssl-dev libopenmpi-dev openmpi-bin)
# bc, procps (pgrep, ps): the test drivers' timing and tests/test_dist_fail.sh's
# watch over the ranks; not in a minimal Debian image.
pkgs+=(bc procps)
# chromium: headless, it renders the page of `paddlec plot` in the test cli_plot (which
# is reported skipped without it).
pkgs+=(chromium)
# The peer: Debian's PyTorch, with OpenBLAS so its matmul is not the reference BLAS.
if [ "${PD_WITH_TORCH:-0}" = 1 ]; then pkgs+=(python3 python3-torch python3-numpy libopenblas0-pthread python3-sklearn); fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
