#!/usr/bin/env bash
# paddle.c — runs each libFuzzer target for a bounded time (`make fuzz`;
# docs/reliability.md, "Fuzzing").
#   fuzz/run.sh BUILD_DIR SECONDS [TARGET...]
# Each target starts from the committed seeds (fuzz/corpus/<t>) plus its
# crashers (fuzz/crashers/<t>) and grows a working corpus in
# BUILD_DIR/fuzz-corpus/<t> (the committed corpus is not modified). Findings
# (crash, leak, timeout, out of memory) are written to
# BUILD_DIR/fuzz-findings/<t>/. Prints one summary line per target
# (seconds, executions, findings) and exits 1 if any target found anything.
set -u
build=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
secs=${2:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
src=$(cd "$(dirname "$0")" && pwd)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(safetensors tokenizer config optim_state scaler_state cli_args)
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${targets[@]}"; do
    bin=$build/fuzz/fuzz_$t
    [ -x "$bin" ] || { echo "fuzz: $bin not built (make fuzz builds it)"; status=1; continue; }
    work=$build/fuzz-corpus/$t found=$build/fuzz-findings/$t log=$build/fuzz-$t.log
    rm -rf "$found"
    mkdir -p "$work" "$found"
    dirs=("$work" "$src/corpus/$t")
    [ -d "$src/crashers/$t" ] && dirs+=("$src/crashers/$t")
    dict=()
    [ -f "$src/dict/$t.dict" ] && dict=(-dict="$src/dict/$t.dict")
    # -timeout: one input taking longer is a hang; -rss_limit_mb / -malloc_limit_mb:
    # a reader asking for more memory than that for a small input is a finding.
    start=$SECONDS
    "$bin" "${dict[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
        -max_len=65536 -print_final_stats=1 -close_fd_mask=1 -artifact_prefix="$found/" "${dirs[@]}" >"$log" 2>&1
    rc=$? elapsed=$((SECONDS - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    n_found=$(find "$found" -type f | wc -l)
    echo "fuzz $t: ${elapsed}s, ${execs:-?} executions, $n_found findings (exit $rc; log $log)"
    if [ "$rc" -ne 0 ] || [ "$n_found" -ne 0 ]; then status=1; fi
done
exit $status
