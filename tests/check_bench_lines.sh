#!/usr/bin/env bash
# paddle.c — every bench line states how it ran (issue 13): threads, dtype
# and the kernels' ISA, through bench/common.h's bench_tags.
#   bash tests/check_bench_lines.sh BUILD_DIR
#   1. in bench/*.c, every printf whose format opens a JSON line
#      ({"bench":...) passes bench_tags (or TOKENIZER_TAGS, bench/tokenizer.c's
#      name for it); the lines about the PyTorch peer state its threads and
#      dtype themselves (its ISA is not ours to state);
#   2. bench_dispatch_loop, the quickest bench, prints them with the values of
#      this machine: the library's thread count and the kernels' ISA.
# Prints one line per violation; exits non-zero when there is one.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: check_bench_lines.sh BUILD_DIR}
bad=0
fail() { echo "FAIL $*"; bad=$((bad + 1)); }

# 1. the sources: one printf statement at a time (from "printf(" to ");")
for f in "$here"/bench/*.c; do
    while IFS= read -r stmt; do
        case "$stmt" in
        *bench_tags* | *TOKENIZER_TAGS*) ;;
        *'\"impl\":\"pytorch\"'*'\"threads\"'*'\"dtype\"'* | *'\"impl\":\"pytorch\"'*'\"dtype\"'*torch*) ;;
        *) fail "$(basename "$f"): a bench line without bench_tags: ${stmt:0:160}" ;;
        esac
    done < <(awk '
        /printf\(/ { inside = 1; s = "" }
        inside { s = s $0; if ($0 ~ /\);[[:space:]]*$/ || $0 ~ /\);[[:space:]]*\/\*/) { inside = 0; if (s ~ /\{\\"bench\\"/) print s } }
    ' "$f")
done

# 2. a run
line=$(OMP_NUM_THREADS=1 "$build/bench_dispatch_loop" 0 10) || fail "bench_dispatch_loop exited with $?"
case "$line" in
*'"threads":1,"dtype":"f32","isa":"'*) ;;
*) fail "bench_dispatch_loop with OMP_NUM_THREADS=1: $line" ;;
esac
isa=$(sed -E 's/.*"isa":"([a-z0-9]+)".*/\1/' <<<"$line")
case "$isa" in
avx512 | avx2 | scalar) ;;
*) fail "bench_dispatch_loop: isa '$isa' is none of avx512, avx2, scalar" ;;
esac

[ "$bad" -eq 0 ] && echo "bench lines: all state threads, dtype and isa"
exit $((bad > 0))
