#!/bin/bash
# paddle.c — no rank hangs (docs/distributed.md, "Failures and timeouts"):
# runs tests/dist_fail/dist_fail.c under mpirun with one rank failing on
# purpose and checks mpirun's exit status, the time the job took and the
# message on stderr. CTest runs it per scenario with 2 and 4 ranks:
#   bash tests/test_dist_fail.sh build/dist_fail MPIRUN NP SCENARIO
# Scenarios: kill (mpirun tears the job down), kill-kept (--enable-recovery:
# mpirun keeps the job, so the timeout must end it), dp-kill-kept (the same in
# data-parallel training), scaler-sleep (a rank that never reaches the
# gradient scaler's all-reduce of its inf flag), sleep, skip, late (a
# slow rank within the timeout: the job finishes), error, abort, oom, mpierr,
# and in the ASan build leak (LeakSanitizer reports the last rank's leak
# through tests/lsan-mpi.supp, and nothing of Open MPI's).
# The bound checked is the timeout plus a generous margin for mpirun's start
# on a busy machine: it tells a bounded job from a hung one (killed at 90 s),
# it does not measure speed.
set -u
prog=$1 mpirun=$2 np=$3 scenario=$4
last=$((np - 1))
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fails=0
fail() { fails=$((fails + 1)); echo "FAIL ($scenario, $np ranks): $*"; }

# run TIMEOUT_ENV [mpirun options] -- program arguments: sets rc, secs, torn.
# What is bounded is the ranks' lives. Debian's mpirun (Open MPI 4.1 with
# its external PMIx) now and then hangs, or crashes, in its own teardown
# after an MPI_Abort: seen here once in about 15 runs of the 4-rank skip
# case, every rank already ended (zombies mpirun never reaps) and mpirun
# stuck in PMIx_server_finalize until killed at 90 s. So the ranks are
# watched: once none is alive, mpirun gets 10 s to leave; if it has not,
# it is killed, torn=1, rc=137 (its own exit status is then unknown), and
# secs is when the last rank ended.
run() {
    local tenv=$1
    shift
    local opts=()
    while [ "$1" != "--" ]; do opts+=("$1"); shift; done
    shift
    local t0 t_end="" seen=0 mpid="" states live total
    t0=$(date +%s.%N)
    torn=0
    PD_DIST_TIMEOUT=$tenv timeout -k 5 90 "$mpirun" "${opts[@]}" --oversubscribe -x PD_DIST_TIMEOUT -np "$np" "$prog" "$@" \
        >"$out" 2>&1 &
    local tpid=$!
    while kill -0 "$tpid" 2>/dev/null; do
        sleep 0.2
        [ -n "$mpid" ] || mpid=$(pgrep -P "$tpid" | head -1)
        [ -n "$mpid" ] || continue
        states=$(ps -o stat= --ppid "$mpid" 2>/dev/null)
        total=$(grep -c . <<<"$states")
        live=$(grep -c '^[^Z]' <<<"$states")
        [ "$total" -gt 0 ] && seen=1
        if [ $seen = 1 ] && [ "$live" = 0 ]; then
            [ -n "$t_end" ] || t_end=$(date +%s.%N)
            if [ "$(echo "$(date +%s.%N) - $t_end > 10" | bc)" = 1 ] && kill -0 "$mpid" 2>/dev/null; then
                torn=1
                echo "note ($scenario, $np ranks): every rank ended, mpirun did not leave in 10 s (its teardown hung): killed"
                kill -9 "$mpid" 2>/dev/null
            fi
        fi
    done
    wait "$tpid"
    rc=$?
    [ $torn = 0 ] || rc=137
    if [ $rc = 139 ] && grep -q "PMIx_server_finalize" "$out"; then # the crash of the same teardown
        torn=1
        echo "note ($scenario, $np ranks): mpirun crashed in its teardown (PMIx_server_finalize)"
    fi
    if [ $torn = 1 ] && [ -n "$t_end" ]; then
        secs=$(echo "$t_end - $t0" | bc)
    else
        secs=$(echo "$(date +%s.%N) - $t0" | bc)
    fi
}
within() { [ "$(echo "$secs < $1" | bc)" = 1 ] || fail "took ${secs} s, more than $1 s"; }
has() { grep -Eq -- "$1" "$out" || fail "no line matching: $1"; }
# the timeout's line: this rank, the caller, the collective, the mesh axes, the ranks
waited="paddle\.c: rank [0-9]+ of $np: (reshard|mesh|exit|dp): (all-gather|all-to-all|all-reduce|reduce-scatter|MPI_Finalize)[^:]*"
waited="$waited has waited [0-9.]+ s: .*died, failed or never got there; aborting the job"

case $scenario in
kill) # mpirun sees the death and ends the job at once (Open MPI's default)
    run 30 -- kill
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "mpirun exited with $rc"
    within 25
    has "rank $last .*(signal 9|Killed)" ;;
kill-kept) # mpirun keeps the job running: the survivors' timeout ends it (mpirun then
    # exits 0 here, and its MPI_ABORT banner is sometimes lost: our line is the evidence)
    run 3 --enable-recovery -- kill
    [ $rc -ne 124 ] || fail "the job hung"
    within 25
    has "$waited"
    [ "$np" != 2 ] || has "rank 0 of 2: reshard: .* world ranks 0,1 has waited .* rank 1 died" ;;
dp-kill-kept) # data-parallel steps, the last rank killed, mpirun keeps the job: the timeout ends it
    run 3 --enable-recovery -- dp
    [ $rc -ne 124 ] || fail "the job hung"
    within 25
    has "$waited" ;;
scaler-sleep) # the last rank never reaches the gradient scaler's all-reduce
    run 3 -- scaler
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "mpirun exited with $rc"
    within 25
    has "paddle\.c: rank [0-9]+ of $np: grad_scaler: all-reduce[^:]* has waited [0-9.]+ s: .*; aborting the job" ;;
sleep) # the last rank never arrives
    run 30 -- sleep 3
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "mpirun exited with $rc"
    within 25
    has "$waited"
    [ "$np" != 2 ] || has "rank 0 of 2: reshard: .* rank 1 died" ;;
skip) # the last rank skips a collective and exits normally
    run 3 -- skip
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "mpirun exited with $rc"
    within 25
    has "$waited" ;;
late) # slower than usual, within the timeout: nothing ends
    run 10 -- late
    [ $rc -eq 0 ] || fail "mpirun exited with $rc"
    has "dist_fail late: finished" ;;
error) # an error, then exit(1): the job ends at once, not at the 30 s timeout
    run 30 -- error
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "mpirun exited with $rc"
    within 20
    has "rank $last: reshape: "
    has "paddle\.c: rank $last of $np exits with status 1; aborting the job" ;;
abort) # pd_dist_abort(3, message); with 4 ranks pd_dist_abort(0, NULL)
    if [ "$np" = 2 ]; then
        run 30 -- abort
        [ $torn = 1 ] || [ $rc -eq 3 ] || fail "mpirun exited with $rc, not 3"
        has "paddle\.c: rank $last of $np: reshape: [^;]*; aborting the job"
    else
        run 30 -- abort0
        [ $torn = 1 ] || [ $rc -eq 1 ] || fail "mpirun exited with $rc, not 1"
        has "paddle\.c: rank $last of $np: pd_dist_abort; aborting the job"
    fi
    within 20 ;;
oom) # out of memory inside a reshard, then exit 0: out of step, so the exit aborts at once
    run 30 -- oom
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "mpirun exited with $rc"
    within 20
    has "rank $last: failed: .*out of memory"
    has "paddle\.c: rank $last of $np exits out of step with the other ranks \(the [a-z-]+ in reshard failed here\); aborting the job" ;;
mpierr) # an MPI error is a status with a message; the rank is then out of step
    run 30 -- mpierr
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "mpirun exited with $rc"
    within 20
    has "rank 1: status -5: dist_fail: MPI_Recv from world rank 0 failed on rank 1: .*truncat"
    has "rank 1: reshard 0: status -4: .*reshard: rank 1 is out of step with the other ranks since the recv in dist_fail failed on it"
    has "paddle\.c: rank 1 of $np exits out of step with the other ranks \(the recv in dist_fail failed here\); aborting the job" ;;
leak) # ASan build: the last rank leaks 4096 bytes after the loop; the report names
    # the frame, and the suppressions hide every block Open MPI keeps
    run 30 -- leak
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "mpirun exited with $rc"
    within 60
    has "dist_fail leak: finished"
    has "ERROR: LeakSanitizer: detected memory leaks"
    has "Direct leak of 4096 byte\(s\) in 1 object"
    has "in leak_on_purpose .*dist_fail\.c"
    [ "$(grep -c "ERROR: LeakSanitizer" "$out")" = 1 ] || fail "another rank reported leaks"
    [ "$(grep -Ec "(Direct|Indirect) leak" "$out")" = 1 ] || fail "leaks other than the one on purpose" ;;
*) echo "unknown scenario $scenario"; exit 2 ;;
esac
if [ $fails -ne 0 ]; then
    echo "--- output (exit $rc, ${secs} s):"
    cat "$out"
    exit 1
fi
echo "test_dist_fail $scenario, $np ranks: ok (exit $rc, ${secs} s)"
