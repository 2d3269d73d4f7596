#!/usr/bin/env bash
# paddle.c — run directories of paddlec train (CTest test_runs;
# docs/training.md, "Runs"): Ctrl-C finishes the step, saves a checkpoint and
# exits 130; a second Ctrl-C exits at once; --resume DIR continues from the
# latest checkpoint with a metrics file cut back to it (no step twice) and ends
# with the same files as an uninterrupted run; --keep-last prunes; a finished run
# says so; the final model is weights-only, its state beside it; export; bits per
# byte; --val-data.
#   test_runs.sh PATH/TO/paddlec
. "$(dirname "$0")/cli_lib.sh" "$1"
losses() { grep '"loss":' "$1" | sed 's/,"tokens_per_s.*//'; }   # step, loss, lr, grad_norm

tiny="--dim 16 --layers 1 --heads 2 --kv-heads 1 --hidden 32 --seq-len 16 --batch 2 --lines 2000 --warmup 2 --lr 0.01
      --min-lr 0.001 --task-n 4 --eval-batches 1 --eval-every 10 --steps 40 --ckpt-every 4 --keep-last 2"

# ---- the uninterrupted run (written to i, the interrupted run's --out, which the
# files record; then moved to s) --------------------------------------------------
"$bin" train $tiny --out "$dir/i" >"$dir/s.out" 2>"$dir/s.err" && mv "$dir/i" "$dir/s"
ok '[ $? -eq 0 ] && [ -f "$dir/s/final.safetensors" ] && [ -f "$dir/s/final.state.safetensors" ]'
ok '[ -f "$dir/s/metrics.jsonl" ] && [ -f "$dir/s/model_config.json" ] && [ -f "$dir/s/tokenizer.json" ]'
ok '[ "$(ls "$dir/s" | grep -c "^ckpt-")" -eq 2 ] && [ -f "$dir/s/ckpt-36.safetensors" ]'   # --keep-last 2
ok '[ "$(losses "$dir/s/metrics.jsonl" | wc -l)" -eq 40 ]'

# ---- Ctrl-C mid-run: the step finishes, a checkpoint is saved, exit 130 -----------
wait_for() {  # wait_for FILE PATTERN MIN: until FILE has MIN lines matching (120 s at most: a loaded CI machine)
    local n
    for _ in $(seq 4800); do n=$(grep -c "$2" "$1" 2>/dev/null); [ "${n:-0}" -ge "$3" ] && return 0; sleep 0.025; done
    return 1
}
# The 40 tiny steps can all finish between two polls on a fast machine: the run
# goes forward in slices of 2 ms while stopped in between, so it is stopped when
# the test sees its 6th step, and the signal lands mid-run.
"$bin" train $tiny --out "$dir/i" >"$dir/i.out" 2>"$dir/i.err" &
pid=$!
kill -STOP $pid
for _ in $(seq 60000); do
    n=$(grep -c '"loss":' "$dir/i/metrics.jsonl" 2>/dev/null)
    [ "${n:-0}" -ge 6 ] && break
    kill -CONT $pid; sleep 0.002; kill -STOP $pid
done
kill -INT $pid; kill -CONT $pid
wait $pid; code=$?
ok '[ $code -eq 130 ]'
step=$(sed -n 's/^paddlec train: interrupted at step \([0-9]*\)\/40: checkpoint .* saved; continue with: .*/\1/p' "$dir/i.err")
ok '[ -n "$step" ] && [ "$step" -ge 6 ] && [ "$step" -lt 40 ]'
ok '[ -f "$dir/i/ckpt-$step.safetensors" ] && [ ! -e "$dir/i/final.safetensors" ]'
"$bin" inspect --no-stats "$dir/i/ckpt-$step.safetensors" >"$dir/ii.out" 2>&1
ok 'grep -q "paddlec.step = $step$" "$dir/ii.out" && grep -q "^optim.exp_avg" "$dir/ii.out"'
ok '[ "$(ls "$dir/i" | grep -c "^ckpt-")" -le 2 ]'   # --keep-last 2 counts the interrupt's checkpoint
ok '[ "$(tail -n 1 "$dir/i/metrics.jsonl")" = "{\"step\":$step,\"event\":\"interrupted\"}" ]'
# a killed run may have logged a step its checkpoint does not hold: the resume drops it
echo "{\"step\":$((step + 1)),\"loss\":9,\"lr\":0,\"grad_norm\":0,\"tokens_per_s\":0,\"tokens\":0,\"elapsed_s\":0}" >>"$dir/i/metrics.jsonl"
printf '{"step":%d,"loss":9,"lr' $((step + 2)) >>"$dir/i/metrics.jsonl"   # and a line cut short

# ---- --resume DIR: the latest checkpoint; the end equals the uninterrupted run's ---
"$bin" train --resume "$dir/i" >"$dir/r.out" 2>"$dir/r.err"
ok '[ $? -eq 0 ] && grep -q "(resumed)" "$dir/r.err" && grep -q "3 metrics lines after step $step removed" "$dir/r.err"'
ok 'cmp -s "$dir/s/final.safetensors" "$dir/i/final.safetensors"'
ok 'cmp -s "$dir/s/final.state.safetensors" "$dir/i/final.state.safetensors"'
ok '[ "$(losses "$dir/i/metrics.jsonl")" = "$(losses "$dir/s/metrics.jsonl")" ]'   # every step once, same values
ok '[ "$(grep -o "^{\"step\":[0-9]*,\"[a-z_]*" "$dir/i/metrics.jsonl" | sort | uniq -d)" = "" ]'
ok '[ "$(grep -c "\"event\":\"done\"" "$dir/i/metrics.jsonl")" -eq 1 ] && ! grep -q "interrupted" "$dir/i/metrics.jsonl"'
ok 'cmp -s "$dir/s.out" "$dir/r.out"'   # the same accuracy and sample

# ---- a finished run resumed again says so, and writes nothing ----------------------
sum=$(cat "$dir/i/final.safetensors" "$dir/i/metrics.jsonl" | md5sum)
"$bin" train --resume "$dir/i" >"$dir/f.out" 2>"$dir/f.err"
ok '[ $? -eq 0 ] && grep -q "^paddlec train: run already finished at step 40 (\".*final.safetensors\"); pass --steps N above 40" "$dir/f.err"'
ok '! grep -q "nan" "$dir/f.err" && [ "$(cat "$dir/i/final.safetensors" "$dir/i/metrics.jsonl" | md5sum)" = "$sum" ]'
# ... and with more steps it continues from the final model and its training state
"$bin" train --resume "$dir/i/final.safetensors" --steps 42 --eval-every 0 >/dev/null 2>"$dir/x.err"
ok '[ $? -eq 0 ] && grep -q "step 42/42" "$dir/x.err" && [ "$(losses "$dir/i/metrics.jsonl" | wc -l)" -eq 42 ]'

# ---- a second interrupt exits at once, without a checkpoint -------------------------
# Two SIGINTs sent one after the other may both land before the step ends, or the
# second after the process has saved and left; two different signals sent to a stopped
# process are both delivered when it continues, one after the other, mid-step.
"$bin" train $tiny --steps 4000 --ckpt-every 0 --out "$dir/k" >/dev/null 2>"$dir/k.err" &
pid=$!
wait_for "$dir/k/metrics.jsonl" '"loss":' 2
kill -STOP $pid; kill -INT $pid; kill -TERM $pid; kill -CONT $pid
wait $pid; code=$?
# the two may land on two threads at once: either is the second (130 or 143)
ok '[ $code -eq 143 ] || [ $code -eq 130 ]'
ok 'grep -q "^paddlec train: interrupted again: exiting now" "$dir/k.err" && ! ls "$dir/k" | grep -q "^ckpt-"'

# ---- model files: weights-only final, export, both kinds served -------------------
"$bin" inspect --no-stats "$dir/s/final.safetensors" >"$dir/m.out" 2>&1
ok '[ $? -eq 0 ] && ! grep -q "^optim\." "$dir/m.out" && grep -q "paddlec.kind = model" "$dir/m.out"'
"$bin" inspect --no-stats "$dir/s/final.state.safetensors" >"$dir/ms.out" 2>&1
ok '[ $? -eq 0 ] && grep -q "^optim.exp_avg\." "$dir/ms.out" && ! grep -q "^model\." "$dir/ms.out" && grep -q "paddlec.data_rng = " "$dir/ms.out"'
ok '[ $(stat -c %s "$dir/s/final.safetensors") -lt $(( $(stat -c %s "$dir/s/ckpt-36.safetensors") / 2 )) ]'
"$bin" export "$dir/s/ckpt-36.safetensors" "$dir/e.safetensors" >"$dir/e.out" 2>&1
ok '[ $? -eq 0 ] && grep -q "step 36" "$dir/e.out"'
"$bin" inspect --no-stats "$dir/e.safetensors" >"$dir/ei.out" 2>&1
ok '! grep -q "^optim\." "$dir/ei.out" && grep -q "paddlec.step = 36" "$dir/ei.out" && grep -q "paddlec.tokenizer = " "$dir/ei.out"'
"$bin" export "$dir/s" "$dir/e2.safetensors" >"$dir/e2.out" 2>&1   # a run directory: its latest
ok '[ $? -eq 0 ] && grep -q "step 40" "$dir/e2.out" && cmp -s <("$bin" inspect "$dir/e2.safetensors" | grep "^model\.\|^lm_head") <("$bin" inspect "$dir/s/final.safetensors" | grep "^model\.\|^lm_head")'
g1=$("$bin" generate --ckpt "$dir/s/ckpt-36.safetensors" --prompt "12+34=" --max-new 4 2>/dev/null)
g2=$("$bin" generate --ckpt "$dir/e.safetensors" --prompt "12+34=" --max-new 4 2>/dev/null)
ok '[ -n "$g1" ] && [ "$g1" = "$g2" ]'
"$bin" eval --ckpt "$dir/e.safetensors" --batches 1 --task-n 2 >"$dir/ev.out" 2>&1
ok '[ $? -eq 0 ] && grep -q "^val bits per byte [0-9]" "$dir/ev.out"'
cp "$dir/s/final.safetensors" "$dir/lone.safetensors"
"$bin" train --resume "$dir/lone.safetensors" --steps 50 >/dev/null 2>"$dir/lone.err"
ok '[ $? -eq 1 ] && [ $(wc -l <"$dir/lone.err") -eq 1 ] && grep -q "is a weights-only model and its training state .*lone.state.safetensors.* is missing" "$dir/lone.err"'
mkdir "$dir/empty-run"
"$bin" train --resume "$dir/empty-run" >/dev/null 2>"$dir/er.err"
ok '[ $? -eq 1 ] && grep -q "holds no checkpoint" "$dir/er.err"'
# the checkpoint is read once (it was read twice: to check the model, then to copy it)
if strace -o /dev/null true 2>/dev/null; then
  strace -f -e trace=openat -o "$dir/st.txt" "$bin" export "$dir/s/ckpt-36.safetensors" "$dir/e3.safetensors" >/dev/null 2>&1
  ok '[ $? -eq 0 ] && [ "$(grep -c "ckpt-36.safetensors\"" "$dir/st.txt")" -eq 1 ] && cmp -s "$dir/e.safetensors" "$dir/e3.safetensors"'
else
  echo "note: strace cannot run here: the export read count is not checked"
fi
"$bin" export "$dir/s/ckpt-36.safetensors" >/dev/null 2>"$dir/ee.err"
ok '[ $? -eq 2 ] && grep -q "expected IN and OUT" "$dir/ee.err"'

# ---- bits per byte, --val-data, the split by document ------------------------------
for i in $(seq 120); do printf 'paragraph %d: the quick brown fox %d jumps\nover the lazy dog.\n\n' $i $((i * 7)); done >"$dir/text.txt"
for i in $(seq 30); do printf 'held out %d: a lazy dog sleeps\n\n' $i; done >"$dir/val.txt"
txt="--dim 16 --layers 1 --heads 2 --kv-heads 1 --hidden 32 --seq-len 16 --batch 2 --steps 3 --warmup 1 --eval-batches 2"
"$bin" train --data "$dir/text.txt" $txt --out "$dir/t" >/dev/null 2>"$dir/t.err"
ok '[ $? -eq 0 ] && grep -q "\"val_bpb\":[0-9]" "$dir/t/metrics.jsonl"'
# byte tokens: bits per byte is the loss over ln 2
ok 'awk -F"[:,}]" "/val_loss/ { d = \$4 / log(2) - \$8; exit !(d < 1e-4 && d > -1e-4) }" "$dir/t/metrics.jsonl"'
"$bin" train --data "$dir/text.txt" --val-data "$dir/val.txt" $txt --out "$dir/v" >/dev/null 2>"$dir/v.err"
ok '[ $? -eq 0 ]'
vl=$(sed -n "s/^step 3: val loss \([0-9.]*\).*/\1/p" "$dir/v.err")
"$bin" eval --ckpt "$dir/v/final.safetensors" --batches 2 >"$dir/ve.out" 2>&1   # eval reads the run's --val-data
ok '[ $? -eq 0 ] && [ -n "$vl" ] && grep -q "^val loss $vl" "$dir/ve.out"'
ok '[ "$(sed -n "s/^step 3: val loss \([0-9.]*\).*/\1/p" "$dir/t.err")" != "$vl" ]'
"$bin" train --val-data "$dir/val.txt" --steps 1 >/dev/null 2>"$dir/vd.err"
ok '[ $? -eq 2 ] && grep -q "needs --data" "$dir/vd.err"'
"$bin" train --resume "$dir/v" --val-data "$dir/text.txt" --steps 5 >/dev/null 2>"$dir/vr.err"
ok '[ $? -eq 2 ] && grep -q "val-data cannot change when resuming" "$dir/vr.err"'
"$bin" tokenizer train --input "$dir/text.txt" --vocab 300 --out "$dir/tok.json" >/dev/null 2>&1
"$bin" train --data "$dir/text.txt" --tokenizer "$dir/tok.json" $txt --out "$dir/b" >/dev/null 2>&1
"$bin" eval --ckpt "$dir/b/final.safetensors" --batches 2 >"$dir/be.out" 2>&1
# BPE: more bytes than tokens, so fewer bits per byte than the loss in bits per token
ok '[ $? -eq 0 ] && awk "/^val loss/ { l = \$3 } /^val bits per byte/ { b = \$5; t = substr(\$6, 2); y = \$8 } END { exit !(y + 0 > t + 0 && b < l / log(2)) }" "$dir/be.out"'

# ---- tokens_per_s is the step's own rate: long validations after every step do not
# lower it (a rate since the start would fall to a fraction of it); tokens counts them
"$bin" train $tiny --steps 4 --eval-every 1 --eval-batches 30 --task-n 0 --ckpt-every 0 --out "$dir/w" >/dev/null 2>&1
# (a rate since the start is tokens / elapsed_s on every line; the step's own rate of some
# step after the first validation is far above it, however busy the machine)
ok '[ $? -eq 0 ] && awk -F"[:,}]" "/\"loss\"/ { t = \$12; if (\$2 > 1 && \$10 > 3 * t / \$14) fast = 1 } END { exit !(t == 128 && fast) }" "$dir/w/metrics.jsonl"'

echo "test_runs.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
