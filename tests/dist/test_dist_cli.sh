#!/bin/bash
# paddle.c — `paddlec train --mesh` under mpirun (docs/distributed.md):
# 2 ranks, data parallel, trains with the losses of one process (1e-5
# relative), writes its files once (rank 0; rank 1 logs to rank1.log),
# checkpoints in the single-process layout that `paddlec generate` reads;
# with --bf16, dp=2 and tp=2 --sp train with one process's bf16 losses,
# and with --f16 (the gradient scaler) one process's f16 losses, skipping
# the steps one process skips; short windows skip the steps without an
# answer target as one process does;
# usage errors (a mesh that does not match the ranks, --sp without tp,
# --dp-bucket-mb without dp) are clear; tiny --dp-bucket-mb buckets give the
# same losses. Each dp rank reads its rows (the distributed loader): an uneven
# batch (5 over 2 ranks) trains as one process too, and the validation
# loss (each rank its rows) and the held-out accuracy (generation batches
# dealt to the ranks: 130 problems are 2 batches) print one process's numbers.
#   test_dist_cli.sh PATH/TO/paddlec PATH/TO/mpiexec
. "$(dirname "$0")/../cli_lib.sh" "$1"
mpi=$2
args="--steps 8 --dim 32 --layers 2 --heads 4 --kv-heads 2 --hidden 64 --batch 4 --seq-len 16 --task-n 8
      --eval-every 4 --eval-batches 1 --lines 2000 --log-every 1 --threads 1"
losses() { grep -o '"loss":[-0-9.e]*' "$1" | cut -d: -f2; }
vals() { grep -o '"val_loss":[-0-9.e]*' "$1" | cut -d: -f2; }
# the columns of two lists agree within 1e-5 relative, and both have n lines
close() { [ "$($1 "$2" | wc -l)" -eq "$4" ] && [ "$($1 "$3" | wc -l)" -eq "$4" ] &&
          paste <($1 "$2") <($1 "$3") | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * $1) bad = 1 } END { exit bad }'; }
"$bin" train $args --out one > one.out 2> one.err
ok '[ $? -eq 0 ]'
"$mpi" --oversubscribe -np 2 "$bin" train $args --mesh dp=2 --out dp > dp.out 2> dp.err
ok '[ $? -eq 0 ]'
ok '[ "$(losses one/metrics.jsonl | wc -l)" -eq 8 ] && [ "$(losses dp/metrics.jsonl | wc -l)" -eq 8 ]'
ok 'paste <(losses one/metrics.jsonl) <(losses dp/metrics.jsonl) | awk "{ d = \$1 - \$2; if (d < 0) d = -d; if (d > 1e-5 * \$1) bad = 1 } END { exit bad }"'
ok 'close vals one/metrics.jsonl dp/metrics.jsonl 2'              # validation: each rank its rows
ok 'cmp -s <(grep "^step [48]: val" one.err) <(grep "^step [48]: val" dp.err)'   # printed as one process
ok '[ "$(grep -c "^step 8/8" dp.err)" -eq 1 ]'                 # one progress bar (rank 0)
ok 'grep -q "^step 8/8" dp/rank1.log'                         # rank 1's stderr: its log
ok '[ "$(grep -c "held-out accuracy" dp.out)" -eq 1 ]'         # rank 1's stdout is silent
ok '[ -f dp/final.safetensors ] && [ -f dp/final.state.safetensors ] && [ -f dp/model_config.json ]'
"$bin" generate --ckpt dp/final.safetensors --prompt "12+34=" --max-new 4 > gen.out 2> gen.err
ok '[ $? -eq 0 ] && grep -q "^12+34=" gen.out'
"$bin" generate --ckpt one/final.safetensors --prompt "12+34=" --max-new 4 > gen1.out 2> /dev/null
ok 'cmp -s gen.out gen1.out'                                   # the same continuation
# --dp-bucket-mb: tiny buckets (many all-reduces in flight during backward,
# driven between backward's nodes) give the default run's losses bit for bit
"$mpi" --oversubscribe -np 2 "$bin" train $args --mesh dp=2 --dp-bucket-mb 0.002 --out dpb > /dev/null 2> dpb.err
ok '[ $? -eq 0 ] && cmp -s <(losses dp/metrics.jsonl) <(losses dpb/metrics.jsonl)'
# uneven: 5 rows over 2 ranks (3 and 2); 130 held-out problems, 2 generation batches
"$bin" train $args --batch 5 --task-n 130 --out one5 > one5.out 2> one5.err
ok '[ $? -eq 0 ]'
"$mpi" --oversubscribe -np 2 "$bin" train $args --batch 5 --task-n 130 --mesh dp=2 --out dp5 > dp5.out 2> dp5.err
ok '[ $? -eq 0 ]'
ok 'close losses one5/metrics.jsonl dp5/metrics.jsonl 8 && close vals one5/metrics.jsonl dp5/metrics.jsonl 2'
ok 'grep -q "held-out accuracy: .* (130 problems)" dp5.out && cmp -s <(grep "held-out" one5.out) <(grep "held-out" dp5.out)'
# --bf16 with a mesh: one process's bf16 losses within 1e-3 relative. The
# ranks round partial sums to bf16 at other points than one process (a TP
# product on each rank, a DP rank's gradient over half the batch); over these
# 8 steps the differences measured 5e-5 (dp=2) and 1.2e-4 (tp=2, --sp),
# over 60 steps 1.1e-3 (docs/distributed.md "bf16 autocast").
# amp_runs FLAG TOL NOTE: one process, then dp=2 and tp=2 --sp with FLAG;
# each mesh prints NOTE and its 8 losses are one process's within TOL
amp_runs() {
    "$bin" train $args "$1" --out one$1 > /dev/null 2> one$1.err
    ok '[ $? -eq 0 ]'
    for mesh in "dp=2" "tp=2 --sp"; do
        d=m$1_${mesh%%=*}
        "$mpi" --oversubscribe -np 2 "$bin" train $args "$1" --mesh $mesh --out $d > /dev/null 2> $d.err
        ok '[ $? -eq 0 ] && grep -q "'"$3"'" '$d'.err'
        ok 'paste <(losses one'$1'/metrics.jsonl) <(losses '$d'/metrics.jsonl) | awk "{ d = \$1 - \$2; if (d < 0) d = -d; if (d > '$2' * \$1) bad = 1 } END { exit bad || NR != 8 }"'
    done
}
amp_runs --bf16 1e-3 "bf16 autocast"
# --f16 (f16 autocast with the gradient scaler) with a mesh: one process's
# --f16 losses within 1e-4 relative; over these 8 steps the differences
# measured 6.7e-6 (dp=2) and 1.4e-5 (tp=2 --sp) (docs/distributed.md "f16
# autocast and the gradient scaler").
amp_runs --f16 1e-4 "f16 autocast and a gradient scaler"
# --f16 whose first step overflows f16 at the initial scale 2^16 (a small
# batch: the scaled loss's gradient per token is large): every rank skips
# that step as one process does (the same notes), then trains as one process
ovf="--dim 32 --layers 1 --heads 2 --kv-heads 2 --hidden 64 --lines 3000 --task-n 0 --eval-every 0 --steps 8
     --f16 --batch 2 --seq-len 6 --log-every 1 --threads 1"
"$bin" train $ovf --out oneovf > /dev/null 2> oneovf.err
ok '[ $? -eq 0 ] && grep -q "^step 1: inf/NaN gradient, step skipped; loss scale now 32768" oneovf.err'
for mesh in "dp=2" "tp=2"; do
    d=ovf_${mesh%%=*}
    "$mpi" --oversubscribe -np 2 "$bin" train $ovf --mesh $mesh --out $d > /dev/null 2> $d.err
    ok '[ $? -eq 0 ] && cmp -s <(grep "step skipped" oneovf.err) <(grep "step skipped" '$d'.err)'
    ok 'paste <(losses oneovf/metrics.jsonl) <(losses '$d'/metrics.jsonl) | awk "{ d = \$1 - \$2; if (d < 0) d = -d; if (d > 1e-4 * \$1) bad = 1 } END { exit bad || NR != 8 }"'
    # the metrics' scaler fields (loss_scale, scaler_skipped_steps) are one process's
    ok 'cmp -s <(grep -o "\"loss_scale.*" oneovf/metrics.jsonl) <(grep -o "\"loss_scale.*" '$d'/metrics.jsonl)'
done
# short windows with --answer-loss (tools/paddlec/targets.c): 3 tokens often hold no answer
# target. The target counts are summed over dp, so every rank takes one process's decision:
# a step with none anywhere is skipped on every rank, and a step where one rank's row has
# none and the other's has some trains as one process (both happen in these 12 steps; with
# --accum 2 a micro-batch without a target is also left out of its step)
short="--dim 32 --layers 2 --heads 4 --kv-heads 2 --hidden 64 --lines 2000 --task-n 0 --batch 2 --seq-len 3 --steps 12
       --eval-every 6 --eval-batches 2 --log-every 1 --threads 1"
skips() { grep '"loss":null,.*"skipped":"no_targets"' "$1" | grep -o '^{"step":[0-9]*'; }   # the skipped steps
for acc in 1 2; do
    "$bin" train $short --accum $acc --out onesw$acc > /dev/null 2> onesw$acc.err
    ok '[ $? -eq 0 ] && [ "$(skips onesw'$acc'/metrics.jsonl | wc -l)" -ge 1 ]'
    "$mpi" --oversubscribe -np 2 "$bin" train $short --accum $acc --mesh dp=2 --out dpsw$acc > /dev/null 2> dpsw$acc.err
    ok '[ $? -eq 0 ] && cmp -s <(skips onesw'$acc'/metrics.jsonl) <(skips dpsw'$acc'/metrics.jsonl)'
    ok 'close losses onesw'$acc'/metrics.jsonl dpsw'$acc'/metrics.jsonl 12 && close vals onesw'$acc'/metrics.jsonl dpsw'$acc'/metrics.jsonl 2'
    ok 'cmp -s <(grep "^step.*no answer target" onesw'$acc'.err) <(grep "^step.*no answer target" dpsw'$acc'/rank1.log)'
done
"$mpi" --oversubscribe -np 2 "$bin" train $args --mesh dp=4 --out bad > /dev/null 2> bad.err
ok '[ $? -ne 0 ] && grep -q "has 4 ranks but mpirun started 2" bad.err'
"$bin" train $args --sp --out bad2 > /dev/null 2> bad2.err
ok '[ $? -eq 2 ] && grep -q -- "--sp needs --mesh" bad2.err'
"$bin" train $args --dp-bucket-mb 4 --out bad3 > /dev/null 2> bad3.err
ok '[ $? -eq 2 ] && grep -q -- "--dp-bucket-mb needs --mesh" bad3.err'
echo "test_dist_cli: $((checks - fails))/$checks checks passed"
[ $fails -eq 0 ]
