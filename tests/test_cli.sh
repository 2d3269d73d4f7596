#!/usr/bin/env bash
# paddle.c — end-to-end tests of the paddlec program (run by tests/test_cli.c):
# a short train run writes metrics JSON lines and checkpoints; resume is
# bit-exact (the resumed run's final checkpoint equals the straight run's,
# byte for byte); generate/eval/inspect work on the result; bad input of every
# kind exits non-zero with exactly one line on stderr, leaves an existing
# checkpoint untouched and, in a sanitized build, leaks nothing (every error
# exit frees what the command holds: LeakSanitizer is on for them).
# Checks named "issue 12, bug N" are the regression tests of issue 12's bugs.
#   test_cli.sh PATH/TO/paddlec
. "$(dirname "$0")/cli_lib.sh" "$1"
# Every exit must free what the command holds: with this set, a tensor or scope of the
# library left at exit fails the run with one more line on stderr (tools/paddlec/cli.h).
# ok 'CONDITION': $? inside CONDITION is the exit status of the command just before ok.

tiny="--dim 32 --layers 1 --heads 2 --kv-heads 1 --hidden 64 --seq-len 24 --batch 4 --lines 3000 --warmup 2 --lr 0.01 --min-lr 0.001 --task-n 8 --eval-batches 2"

# ---- a short run: metrics, periodic + final checkpoints, accuracy line -----
"$bin" train $tiny --steps 6 --ckpt-every 3 --eval-every 3 --out "$dir/a" --metrics "$dir/a.jsonl" >"$dir/a.out" 2>"$dir/a.err"
ok '[ $? -eq 0 ]'
ok '[ -f "$dir/a/ckpt-3.safetensors" ] && [ -f "$dir/a/final.safetensors" ]'
ok '[ $(grep -c "\"loss\":" "$dir/a.jsonl") -eq 6 ]'
ok '[ $(grep -c "\"val_loss\":" "$dir/a.jsonl") -eq 2 ]'
ok 'grep -q "\"event\":\"done\"" "$dir/a.jsonl"'
ok 'python3 -c "import json,sys; [json.loads(l) for l in open(sys.argv[1])]" "$dir/a.jsonl" 2>/dev/null || ! command -v python3 >/dev/null'
ok 'grep -q "^held-out accuracy: " "$dir/a.out" && grep -q "^sample: " "$dir/a.out"'
ok 'grep -q "step 6/6 loss" "$dir/a.err"'   # plain progress lines (stderr is not a TTY)
cp "$dir/a/final.safetensors" "$dir/straight.safetensors"
cp "$dir/a/final.state.safetensors" "$dir/straight.state.safetensors"
cp "$dir/a.jsonl" "$dir/a-straight.jsonl"

# ---- resume from step 3: the same final checkpoint, byte for byte -------------
"$bin" train --resume "$dir/a/ckpt-3.safetensors" >"$dir/r.out" 2>"$dir/r.err"
ok '[ $? -eq 0 ]'
ok 'grep -q "(resumed)" "$dir/r.err"'
ok 'cmp -s "$dir/straight.safetensors" "$dir/a/final.safetensors"'
ok 'cmp -s "$dir/straight.state.safetensors" "$dir/a/final.state.safetensors"'
# the resumed run's losses are the straight run's last three; the metrics file, cut back
# to step 3 on resume, lists each step once
ok '[ "$(grep "\"loss\":" "$dir/a.jsonl" | sed "s/,\"tokens_per_s.*//")" = "$(grep "\"loss\":" "$dir/a-straight.jsonl" | sed "s/,\"tokens_per_s.*//")" ]'

# ---- issue 12, bug 13: --dropout resumes bit for bit too (the checkpoint holds the
# dropout generator's state, paddlec.dropout_rng)
"$bin" train $tiny --dropout 0.2 --steps 4 --ckpt-every 2 --eval-every 0 --task-n 0 --out "$dir/d" >/dev/null 2>"$dir/d.err"
ok '[ $? -eq 0 ] && grep -aq "paddlec.dropout_rng" "$dir/d/ckpt-2.safetensors"'
cp "$dir/d/final.safetensors" "$dir/d-straight.safetensors"
"$bin" train --resume "$dir/d/ckpt-2.safetensors" >/dev/null 2>"$dir/dr.err"
ok '[ $? -eq 0 ] && ! grep -q "note: the checkpoint has no" "$dir/dr.err" && cmp -s "$dir/d-straight.safetensors" "$dir/d/final.safetensors"'
ok '! grep -aq "paddlec.dropout_rng" "$dir/a/final.state.safetensors"'   # no dropout, no key

# ---- --f16: f16 autocast with the gradient scaler (tools/paddlec/amp.c); resume is
# bit-exact (the scaler's state, paddlec.scaler.*, is in the training state: a new
# scaler would end with growth_tracker 2, not 4); --bf16 and --f16 exclude each other (below)
"$bin" train $tiny --f16 --accum 2 --steps 4 --ckpt-every 2 --eval-every 0 --task-n 0 --out "$dir/f16" --metrics "$dir/f16.jsonl" >/dev/null 2>"$dir/f16.err"
ok '[ $? -eq 0 ] && grep -q "f16 autocast and a gradient scaler" "$dir/f16.err" && [ $(grep -c "\"loss\":[0-9]" "$dir/f16.jsonl") -eq 4 ]'
ok 'grep -aq "paddlec.scaler.growth_tracker" "$dir/f16/ckpt-2.safetensors" && ! grep -aq "paddlec.scaler" "$dir/a/final.state.safetensors"'
cp "$dir/f16/final.safetensors" "$dir/f16-straight.safetensors"
cp "$dir/f16/final.state.safetensors" "$dir/f16-straight.state.safetensors"
"$bin" train --resume "$dir/f16/ckpt-2.safetensors" >/dev/null 2>"$dir/f16r.err"
ok '[ $? -eq 0 ] && cmp -s "$dir/f16-straight.safetensors" "$dir/f16/final.safetensors" && cmp -s "$dir/f16-straight.state.safetensors" "$dir/f16/final.state.safetensors"'

# ---- --config file, flags override it ------------------------------------------
cat >"$dir/cfg.json" <<JSON
{"dim": 32, "layers": 1, "heads": 2, "kv-heads": 1, "hidden": 64, "seq-len": 24, "batch": 4,
 "lines": 3000, "steps": 2, "warmup": 1, "task-n": 0, "eval-batches": 1, "lr": 0.01, "min-lr": 0.001}
JSON
"$bin" train --config "$dir/cfg.json" --steps 3 --out "$dir/c" >"$dir/c.out" 2>"$dir/c.err"
ok '[ $? -eq 0 ] && grep -q "step 3/3" "$dir/c.err" && grep -q "4 parameters\|parameters (dim 32, 1 layers" "$dir/c.err"'

# ---- bf16 autocast and gradient accumulation run and stay finite ----------------
# a config's "threads" sets the count; --threads on the command line wins
printf '{"threads": 1, "steps": 2, "eval-every": 0, "task-n": 0}' >"$dir/thr.json"
"$bin" train $tiny --config "$dir/thr.json" --out "$dir/thr1" >/dev/null 2>"$dir/thr1.err"
ok '[ $? -eq 0 ] && grep -q "f32, 1 thread " "$dir/thr1.err"'
"$bin" train $tiny --config "$dir/thr.json" --threads 2 --out "$dir/thr2" >/dev/null 2>"$dir/thr2.err"
ok '[ $? -eq 0 ] && grep -q "f32, 2 threads " "$dir/thr2.err"'
# --out makes every missing level (as mkdir -p), and a file in the way is an error
"$bin" train $tiny --steps 2 --eval-every 0 --task-n 0 --out "$dir/deep/x/y" >/dev/null 2>"$dir/deep.err"
ok '[ $? -eq 0 ] && [ -f "$dir/deep/x/y/final.safetensors" ]'
: >"$dir/afile"
"$bin" train $tiny --steps 2 --eval-every 0 --task-n 0 --out "$dir/afile/z" >/dev/null 2>"$dir/afile.err"
ok '[ $? -ne 0 ] && grep -q "cannot create --out directory" "$dir/afile.err" && [ $(wc -l <"$dir/afile.err") -eq 1 ]'
"$bin" train $tiny --steps 2 --bf16 --accum 2 --out "$dir/b" --metrics "$dir/b.jsonl" >/dev/null 2>"$dir/b.err"
ok '[ $? -eq 0 ] && [ $(grep -c "\"loss\":[0-9]" "$dir/b.jsonl") -eq 2 ] && grep -q "batch 4 x 24 x 2" "$dir/b.err"'

"$bin" train $tiny --steps 2 --answer-loss --out "$dir/al" >/dev/null 2>"$dir/al.err"
ok '[ $? -eq 0 ] && grep -q "val loss [0-9]" "$dir/al.err"'

# ---- --pack-documents: a causal document mask per problem, the default on the built-in
# data (run a's first loss is the packed one); the losses change without it (the first
# one is taken before any update, so it differs only by the mask), validation packs too,
# and the flag is part of the recorded recipe.
"$bin" train $tiny --steps 3 --pack-documents --out "$dir/p" --metrics "$dir/p.jsonl" >"$dir/p.out" 2>"$dir/p.err"
ok '[ $? -eq 0 ] && [ $(grep -c "\"loss\":[0-9]" "$dir/p.jsonl") -eq 3 ] && grep -q "val loss [0-9]" "$dir/p.err"'
"$bin" train $tiny --steps 2 --pack-documents=false --eval-every 0 --task-n 0 --out "$dir/u" --metrics "$dir/u.jsonl" >/dev/null 2>&1
ok '[ $? -eq 0 ] && grep -aq "pack-documents\\\\\":false" "$dir/u/final.safetensors"'
ok '[ "$(grep -m1 "\"loss\":" "$dir/p.jsonl" | sed "s/,\"lr.*//")" != "$(grep -m1 "\"loss\":" "$dir/u.jsonl" | sed "s/,\"lr.*//")" ]'
ok '[ "$(grep -m1 "\"loss\":" "$dir/p.jsonl" | sed "s/,\"lr.*//")" = "$(grep -m1 "\"loss\":" "$dir/a.jsonl" | sed "s/,\"lr.*//")" ]'
ok 'grep -aq "pack-documents\\\\\":true" "$dir/p/final.safetensors" && grep -q "^held-out accuracy: " "$dir/p.out"'
# eval of that checkpoint packs as its recipe says: the training's final val loss, to the digit
pv=$(sed -n "s/^step 3: val loss \([0-9.]*\).*/\1/p" "$dir/p.err")
"$bin" eval --ckpt "$dir/p/final.safetensors" --batches 2 --task-n 0 >"$dir/pe.out" 2>&1
ok '[ $? -eq 0 ] && [ -n "$pv" ] && grep -q "^val loss $pv" "$dir/pe.out"'

# ---- generate / eval / inspect on the checkpoint ---------------------------------
out=$("$bin" generate --ckpt "$dir/a/final.safetensors" --prompt "12+34=" --max-new 5 2>/dev/null)
ok '[ $? -eq 0 ] && [ "${out#12+34=}" != "$out" ] && [ ${#out} -eq 11 ]'
out2=$("$bin" generate --ckpt "$dir/a/final.safetensors" --prompt "12+34=" --max-new 5 --no-cache 2>/dev/null)
ok '[ "$out" = "$out2" ]'
s1=$("$bin" generate --ckpt "$dir/a/final.safetensors" --prompt "1" --max-new 8 --temperature 1 --top-p 0.9 --seed 3 2>/dev/null)
s2=$("$bin" generate --ckpt "$dir/a/final.safetensors" --prompt "1" --max-new 8 --temperature 1 --top-p 0.9 --seed 3 2>/dev/null)
ok '[ -n "$s1" ] && [ "$s1" = "$s2" ]'
"$bin" eval --ckpt "$dir/a/final.safetensors" --batches 2 --task-n 4 >"$dir/e.out" 2>&1
ok '[ $? -eq 0 ] && grep -q "^val loss [0-9]" "$dir/e.out" && grep -q "^held-out accuracy" "$dir/e.out"'
"$bin" inspect "$dir/a/final.safetensors" >"$dir/i.out" 2>&1
ok '[ $? -eq 0 ] && grep -q "^model.embed_tokens.weight  *F32  *\[256, 32\]  *min" "$dir/i.out"'
ok 'grep -q "^model.norm.weight .*min 1 max 1 mean 1 std 0" "$dir/i.out" || grep -q "^model.norm.weight .*F32  *\[32\]" "$dir/i.out"'
ok 'grep -q "paddlec.step = 6" "$dir/i.out" && ! grep -q "^optim.exp_avg" "$dir/i.out"'   # the final model: weights only
"$bin" inspect "$dir/a/ckpt-3.safetensors" >"$dir/i3.out" 2>&1
ok '[ $? -eq 0 ] && grep -q "paddlec.step = 3" "$dir/i3.out" && grep -q "^optim.exp_avg" "$dir/i3.out"'
# a known file: every value and statistic is fixed
python3 - "$dir/known.safetensors" <<'PY'
import json, struct, sys
hdr = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
       "b": {"dtype": "I64", "shape": [3], "data_offsets": [16, 40]},
       "__metadata__": {"note": "hello"}}
h = json.dumps(hdr).encode(); h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + struct.pack("<4f", 1, 2, 3, 4) + struct.pack("<3q", -5, 0, 5))
PY
"$bin" inspect "$dir/known.safetensors" >"$dir/k.out" 2>&1
ok 'grep -q "^a  *F32  *\[2, 2\]  *min 1 max 4 mean 2.5 std 1.11803" "$dir/k.out"'
ok 'grep -q "^b  *I64  *\[3\]  *min -5 max 5 mean 0 std 4.08248" "$dir/k.out"'
ok 'grep -q "note = hello" "$dir/k.out" && grep -q "total 7 elements" "$dir/k.out"'

# ---- tokenizer train --------------------------------------------------------------
for i in $(seq 200); do echo "the quick brown fox jumps over the lazy dog $i"; done >"$dir/text.txt"
"$bin" tokenizer train --input "$dir/text.txt" --vocab 300 --out "$dir/tok.json" >"$dir/t.out" 2>&1
ok '[ $? -eq 0 ] && [ -s "$dir/tok.json" ] && grep -q "vocab 300" "$dir/t.out"'
"$bin" train --data "$dir/text.txt" --tokenizer "$dir/tok.json" --dim 32 --layers 1 --heads 2 --kv-heads 1 --hidden 64 \
    --seq-len 16 --batch 4 --steps 2 --warmup 1 --eval-batches 1 --val-fraction 0.1 --out "$dir/t" >"$dir/tt.out" 2>"$dir/tt.err"
ok '[ $? -eq 0 ] && grep -q "vocab 300" "$dir/tt.err" && grep -q "^sample: " "$dir/tt.out"'

# issue 12, bug 16: the sample prompt is fixed and checked before the first step. The
# default one (the first 8 validation tokens) did not fit --seq-len 4 and failed the run
# (exit 2) after it had trained and saved; it now shortens to fit. A --sample-prompt that
# cannot fit fails at once, and nothing is written.
small="--dim 32 --layers 1 --heads 2 --kv-heads 1 --hidden 64 --batch 2 --steps 1 --warmup 0 --eval-batches 1 --val-fraction 0.1"
"$bin" train --data "$dir/text.txt" $small --seq-len 4 --out "$dir/s16" >"$dir/s16.out" 2>"$dir/s16.err"
ok '[ $? -eq 0 ] && grep -q "^sample: " "$dir/s16.out" && [ -f "$dir/s16/final.safetensors" ]'
ok 'grep -aq "pack-documents\\\\\":false" "$dir/s16/final.safetensors"'   # packing is the built-in data's default only

# --pack-documents on text: paragraphs (blank-line separated), a BPE tokenizer
awk '{print} NR % 3 == 0 {print ""}' "$dir/text.txt" >"$dir/para.txt"
"$bin" train --data "$dir/para.txt" --tokenizer "$dir/tok.json" --pack-documents --dim 32 --layers 1 --heads 2 \
    --kv-heads 1 --hidden 64 --seq-len 16 --batch 4 --steps 2 --warmup 1 --eval-batches 1 --val-fraction 0.1 \
    --out "$dir/pt" >"$dir/pt.out" 2>"$dir/pt.err"
ok '[ $? -eq 0 ] && grep -q "step 2/2 loss [0-9]" "$dir/pt.err" && grep -q "^sample: " "$dir/pt.out"'

# ---- errors: non-zero exit, exactly one line on stderr, checkpoint untouched -------
ck="$dir/a/final.safetensors"
sum=$(md5sum <"$ck")
head -c 100 "$ck" >"$dir/trunc.safetensors"
printf 'not a checkpoint at all' >"$dir/junk.safetensors"
cp "$dir/known.safetensors" "$dir/nometa.safetensors"
err() {  # err EXPECTED_TEXT ARGS...: fails with one line naming the problem
    local want=$1; shift
    # Sanitized builds: a leak report adds lines to stderr and fails the check.
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1" "$bin" "$@" >"$dir/o" 2>"$dir/e"; local rc=$?
    checks=$((checks+1))
    if [ $rc -eq 0 ] || [ "$(wc -l <"$dir/e")" -ne 1 ] || ! grep -q -- "$want" "$dir/e"; then
        fails=$((fails+1)); echo "FAIL: paddlec $* -> rc $rc, stderr: $(cat "$dir/e")"
    fi
}
err "unknown command" frobnicate
err 'unknown option "--frobnicate"' train --frobnicate 3
err "is not an integer" train --steps 10x
err "is outside" train --steps 0
err "not a finite number" train --lr nan
err "needs a value" train --lr
err "cannot open" train --data "$dir/missing.txt" --steps 1
: >"$dir/empty.txt"
err "is empty\|empty" train --data "$dir/empty.txt" --steps 1
err "not a regular file" train --data /dev/null --steps 1
err "fewer than --seq-len" train --data "$dir/known.safetensors" --steps 1 --seq-len 512
err "multiple of --kv-heads" train --heads 4 --kv-heads 3
echo '{"steps": 2, "frobnicate": 1}' >"$dir/badkey.json"
err "unknown key \"frobnicate\"" train --config "$dir/badkey.json"
err "not a JSON object" train --config "$dir/known.safetensors"
echo '{"steps": 2.5}' >"$dir/frac.json"
err "must be an integer" train --config "$dir/frac.json"
err "cannot open" train --config "$dir/missing.json"
err "cannot resume" train --resume "$dir/missing.safetensors"
err "cannot resume" train --resume "$dir/trunc.safetensors"
err "cannot resume" train --resume "$dir/junk.safetensors"
err "not a paddlec training checkpoint" train --resume "$dir/nometa.safetensors"
err "needs the built-in data" train --answer-loss --data "$dir/text.txt"
err "exclude each other" train --resume "$ck" --config "$dir/cfg.json"
err "cannot change when resuming" train --resume "$ck" --dim 64
err "beyond --steps" train --resume "$ck" --steps 2
err "--bf16 and --f16 exclude each other" train $tiny --bf16 --f16 --steps 2 --out "$dir/f16b"
err "cannot load checkpoint" generate --ckpt "$dir/trunc.safetensors" --prompt x
err "not a paddlec checkpoint" generate --ckpt "$dir/nometa.safetensors" --prompt x
err "required" generate --prompt x
err "required" generate --ckpt "$ck"
err "is outside" generate --ckpt "$ck" --prompt x --top-p 0
# issue 13: --stop takes any length now (tests/test_cli_generate.sh); the new options' errors
err "not both" generate --ckpt "$ck" --prompt x --prompt-file "$dir/text.txt"
err "the context limit is 1 (--ctx)" generate --ckpt "$ck" --prompt x --ctx 1
err "cannot read" generate --ckpt "$ck" --prompt-file "$dir/missing.txt"
err "cannot read" inspect "$dir/trunc.safetensors"
err "expected one FILE" inspect
err "required" tokenizer train --input "$dir/text.txt"
err "cannot open" tokenizer train --input "$dir/missing.txt" --vocab 300 --out "$dir/x.json"
err "sample-prompt has 33 tokens, more than --seq-len - 1 = 3" train --data "$dir/text.txt" $small --seq-len 4 \
    --sample-prompt "a prompt much longer than 3 bytes" --out "$dir/s16b"     # issue 12, bug 16
ok '[ ! -e "$dir/s16b" ]'
err "could not find 100000 distinct held-out problems" train $tiny --digits 1 --task-n 100000 --steps 2 --out "$dir/s16c"
ok '[ ! -e "$dir/s16c" ]'
# issue 12, bug 20: eval range-checks the recipe of a checkpoint before any cast
# (digits 1e300 was cast to int), as train --resume does
recipe() {  # recipe IN OUT KEY JSON-VALUE: a copy of IN whose paddlec.recipe has KEY = VALUE
    python3 - "$@" <<'PY'
import json, struct, sys
src, dst, key, val = sys.argv[1:5]
b = open(src, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
if key.startswith("paddlec.") and val == "-":   # a metadata key removed
    del h["__metadata__"][key]
elif key.startswith("paddlec."):   # a metadata value itself
    h["__metadata__"][key] = val
else:
    r = json.loads(h["__metadata__"]["paddlec.recipe"])
    r[key] = json.loads(val)
    h["__metadata__"]["paddlec.recipe"] = json.dumps(r)
nh = json.dumps(h).encode()
nh += b" " * (-len(nh) % 8)
open(dst, "wb").write(struct.pack("<Q", len(nh)) + nh + b[8 + n:])
PY
}
if command -v python3 >/dev/null; then
    ck="$dir/a/ckpt-3.safetensors"   # a training checkpoint: weights and state in one file
    recipe "$ck" "$dir/r20.safetensors" digits 1e300
    err '"digits": 1e+300 is outside \[1, 9\]' eval --ckpt "$dir/r20.safetensors" --batches 1 --task-n 1
    err '"digits": 1e+300 is outside' train --resume "$dir/r20.safetensors" --out "$dir/r20"
    recipe "$ck" "$dir/r20.safetensors" seed -1e300
    err '"seed": -1e+300 is outside' eval --ckpt "$dir/r20.safetensors" --batches 1 --task-n 1
    recipe "$ck" "$dir/r20.safetensors" val-fraction 1e300
    err "val-fraction: 1e+300 is outside" eval --ckpt "$dir/r20.safetensors" --batches 1 --task-n 1
    recipe "$ck" "$dir/r20.safetensors" heldout 0
    err '"heldout": 0 is outside\|heldout: 0 is outside' eval --ckpt "$dir/r20.safetensors" --batches 1 --task-n 1
    # the CLI's other state: generator states below 2^64, a step count in [0, 2^53]
    recipe "$ck" "$dir/r20.safetensors" paddlec.data_rng "1 99999999999999999999999"
    err "paddlec.data_rng missing or malformed" train --resume "$dir/r20.safetensors" --steps 8
    recipe "$ck" "$dir/r20.safetensors" paddlec.default_rng "-1 5"
    err "paddlec.default_rng missing or malformed" train --resume "$dir/r20.safetensors" --steps 8
    recipe "$ck" "$dir/r20.safetensors" paddlec.step 1e300
    err "bad paddlec.step" train --resume "$dir/r20.safetensors" --steps 8
    err "bad paddlec.step" eval --ckpt "$dir/r20.safetensors" --batches 1 --task-n 1
    # a --dropout checkpoint from before paddlec.dropout_rng still resumes, with a note
    recipe "$dir/d/ckpt-2.safetensors" "$dir/d-old.safetensors" paddlec.dropout_rng -
    "$bin" train --resume "$dir/d-old.safetensors" --out "$dir/d-old" >/dev/null 2>"$dir/d-old.err"
    ok '[ $? -eq 0 ] && [ $(grep -c "note: the checkpoint has no paddlec.dropout_rng" "$dir/d-old.err") -eq 1 ]'
    ck="$dir/a/final.safetensors"
fi
ok '[ "$(md5sum <"$ck")" = "$sum" ]'
ok '[ ! -e "$dir/paddlec-out" ]'   # failed runs created no output directory
# a failing save (output directory is a file) leaves nothing behind
err "not a directory\|cannot create" train $tiny --steps 2 --out "$ck"
ok '[ "$(md5sum <"$ck")" = "$sum" ]'
# --help for every command exits 0 and names its options
for c in train generate eval inspect bench "tokenizer train" md5diff export; do
    "$bin" $c --help >"$dir/h" 2>&1; ok '[ $? -eq 0 ] && grep -q "^usage: paddlec" "$dir/h" && grep -q -- "--help" "$dir/h"'
done
"$bin" --help >"$dir/h"; ok '[ $? -eq 0 ] && grep -q "tokenizer" "$dir/h"'
# issue 13: "help COMMAND" is COMMAND --help; -V, --version and version print the version;
# no usage line says "paddlec paddlec"
for c in train generate eval inspect bench "tokenizer train" md5diff; do
    "$bin" $c --help >"$dir/h1" 2>&1; "$bin" help $c >"$dir/h2" 2>&1; ok '[ $? -eq 0 ] && cmp -s "$dir/h1" "$dir/h2" && ! grep -q "paddlec paddlec" "$dir/h1"'
done
for v in --version -V version; do "$bin" $v >"$dir/h"; ok '[ $? -eq 0 ] && grep -q "^paddlec [0-9][0-9.]*$" "$dir/h"'; done
"$bin" help nosuch >"$dir/h" 2>"$dir/e"; ok '[ $? -eq 2 ] && [ ! -s "$dir/h" ] && [ $(wc -l <"$dir/e") -eq 1 ]'

# ---- --profile: summary table on stderr, Chrome trace in OUT ------------------
"$bin" train $tiny --steps 3 --profile 2 --eval-every 0 --task-n 0 --out "$dir/p" >"$dir/p.out" 2>"$dir/p.err"
ok '[ $? -eq 0 ]'
ok 'grep -q "^op .*calls.*total ms" "$dir/p.err" && grep -q "^matmul " "$dir/p.err"'
ok 'python3 -c "import json,sys; t=json.load(open(sys.argv[1])); assert any(e.get(\"ph\")==\"X\" for e in (t[\"traceEvents\"] if isinstance(t,dict) else t))" "$dir/p/trace.json" 2>/dev/null || { [ -s "$dir/p/trace.json" ] && ! command -v python3 >/dev/null; }'

# ---- md5diff: identical files exit 0, the first differing op is named (exit 1) --
printf '0 matmul_1 out0 f32 [2,2] 0123456789abcdef0123456789abcdef\n1 relu_1 out0 f32 [2,2] 00000000000000000000000000000000\n' >"$dir/a.md5"
sed 's/^1 relu_1 out0 f32 \[2,2\] 0*/1 relu_1 out0 f32 [2,2] ffffffffffffffffffffffffffffffff/' "$dir/a.md5" >"$dir/b.md5"
"$bin" md5diff "$dir/a.md5" "$dir/a.md5" >"$dir/m.out" 2>&1; ok '[ $? -eq 0 ] && grep -q "^identical" "$dir/m.out"'
"$bin" md5diff "$dir/a.md5" "$dir/b.md5" >"$dir/m.out" 2>&1; ok '[ $? -eq 1 ] && grep -q "relu_1" "$dir/m.out" && ! grep -q "matmul_1" "$dir/m.out"'
"$bin" md5diff "$dir/a.md5" "$dir/missing.md5" >"$dir/m.out" 2>"$dir/m.err"; ok '[ $? -eq 2 ] && [ $(wc -l <"$dir/m.err") -eq 1 ]'
# issue 13: files that are not checksum dumps are an error (2), not "identical" or "differ"
printf 'hello\n' >"$dir/t.txt"
"$bin" md5diff "$dir/t.txt" "$dir/t.txt" >"$dir/m.out" 2>"$dir/m.err"; ok '[ $? -eq 2 ] && [ ! -s "$dir/m.out" ] && [ $(wc -l <"$dir/m.err") -eq 1 ] && grep -q "t.txt.* line 1 is not a checksum line" "$dir/m.err"'
"$bin" md5diff "$dir/a.md5" "$dir/text.txt" >"$dir/m.out" 2>"$dir/m.err"; ok '[ $? -eq 2 ] && [ ! -s "$dir/m.out" ]'

# ---- files (docs/reliability.md, "Files and limits") ---------------------------
# A FIFO given as any input file is refused with one line, never waited on: each
# command runs under a timeout so that a regression fails instead of hanging.
mkfifo "$dir/fifo"
fifo_err() {
    timeout 30 "$bin" "$@" >"$dir/o" 2>"$dir/e" </dev/null; local rc=$?
    checks=$((checks+1))
    if [ $rc -eq 0 ] || [ $rc -ge 124 ] || [ "$(wc -l <"$dir/e")" -ne 1 ] || ! grep -q "not a regular file" "$dir/e"; then
        fails=$((fails+1)); echo "FAIL (FIFO): paddlec $* -> rc $rc, stderr: $(cat "$dir/e")"
    fi
}
fifo_err inspect "$dir/fifo"
fifo_err inspect --no-stats "$dir/fifo"
fifo_err generate --ckpt "$dir/fifo" --prompt x
fifo_err eval --ckpt "$dir/fifo"
fifo_err train --resume "$dir/fifo"
fifo_err train --config "$dir/fifo"
fifo_err train $tiny --steps 2 --data "$dir/fifo" --out "$dir/ff"
fifo_err train $tiny --steps 2 --tokenizer "$dir/fifo" --out "$dir/ff"
fifo_err train $tiny --steps 2 --task-n 0 --metrics "$dir/fifo" --out "$dir/ff"
fifo_err tokenizer train --input "$dir/fifo" --vocab 300 --out "$dir/x.json"
fifo_err bench --config "$dir/fifo"
fifo_err md5diff "$dir/fifo" "$dir/a.md5"
# messages quote what they were given: a newline in a value stays on one line
err "unknown option" train $'--a\nb'
err "not an integer" train --steps $'1\n2'
err "cannot open" train --data $'no\nsuch.txt' --steps 1
# atomic writes: no temporary is left, and a stale one of a dead process is removed
sh -c 'exit 0' & deadpid=$!; wait $deadpid
: >"$dir/tok2.json.tmp.$deadpid"
"$bin" tokenizer train --input "$dir/text.txt" --vocab 300 --out "$dir/tok2.json" >/dev/null 2>&1
ok '[ $? -eq 0 ] && [ -s "$dir/tok2.json" ] && [ ! -e "$dir/tok2.json.tmp.$deadpid" ] && ! ls "$dir" | grep -q "\.tmp\."'
mkdir -p "$dir/st"; : >"$dir/st/final.safetensors.tmp.$deadpid"
# (and recipe doubles round-trip: 0.1 + 0.2 is not written as 0.3)
"$bin" train $tiny --steps 2 --task-n 0 --weight-decay 0.30000000000000004 --out "$dir/st" >/dev/null 2>&1
ok '[ $? -eq 0 ] && [ -f "$dir/st/final.safetensors" ] && [ ! -e "$dir/st/final.safetensors.tmp.$deadpid" ] && ! ls "$dir/st" | grep -q "\.tmp\."'
"$bin" inspect --no-stats --full "$dir/st/final.safetensors" >"$dir/st.out" 2>&1
ok 'grep -q "\"weight-decay\":0.30000000000000004" "$dir/st.out"'

# ---- threads (issue 13): --threads N; the header and bench lines name threads, dtype and ISA;
# with neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT set the program picks passive itself
"$bin" train $tiny --steps 2 --task-n 0 --threads 1 --out "$dir/th" >/dev/null 2>"$dir/th.err"
ok '[ $? -eq 0 ] && grep -q "; f32, 1 thread (wait policy passive), [a-z0-9]* kernels$" "$dir/th.err"'
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$bin" train $tiny --steps 2 --task-n 0 --out "$dir/th" >/dev/null 2>"$dir/th.err"
ok '[ $? -eq 0 ] && grep -q "thread.* (wait policy passive)" "$dir/th.err"'
env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=1000 "$bin" train $tiny --steps 2 --task-n 0 --out "$dir/th" >/dev/null 2>"$dir/th.err"
ok '[ $? -eq 0 ] && grep -q "(spin count 1000)" "$dir/th.err"'   # the user's setting is kept
OMP_WAIT_POLICY=active "$bin" train $tiny --steps 2 --task-n 0 --bf16 --threads 1 --out "$dir/th" >/dev/null 2>"$dir/th.err"
ok '[ $? -eq 0 ] && grep -q "; f32 weights with bf16 autocast, .* (wait policy active)" "$dir/th.err"'
printf '{"dim": 32, "n_layers": 1, "n_heads": 2, "n_kv_heads": 1, "hidden_dim": 64, "vocab_size": 64, "max_seq_len": 16}' >"$dir/bc.json"
"$bin" bench --config "$dir/bc.json" --batch 2 --steps 1 --decode 2 --threads 1 >"$dir/bench.out" 2>"$dir/bench.err"
ok '[ $? -eq 0 ] && [ $(grep -c "\"dtype\":\"f32\",\"threads\":1,\"isa\":\"[a-z0-9]*\"}" "$dir/bench.out") -eq 2 ]'
err "threads: -1 is outside" train --threads -1
err "threads: \"x\" is not an integer" bench --threads x
err "unknown option" inspect --threads 2 "$dir/a/final.safetensors"
"$bin" generate --help >"$dir/h.out" 2>&1
ok 'grep -q -- "--threads N" "$dir/h.out"'

# ---- short windows (tools/paddlec/targets.c; docs/cli.md "Short windows and skipped steps"):
# with --answer-loss a window can hold no answer target. --seq-len 4 used to fail at step 1
# with "loss -nan ... (lower --lr?)" (a mean over zero targets); now the held-out task, which
# needs 12 tokens with --digits 2, refuses it before anything is written, and with --task-n 0
# the steps without a target are skipped (loss null, "skipped":"no_targets", no NaN)
err "seq-len 4 cannot hold a held-out problem of the built-in task .* need 12): raise --seq-len to 12 or pass --task-n 0" \
    train $tiny --batch 1 --seq-len 4 --out "$dir/sw0"
ok '[ ! -e "$dir/sw0" ]'
short="--dim 32 --layers 1 --heads 2 --kv-heads 1 --hidden 64 --lines 3000 --task-n 0 --batch 1 --seq-len 4 --steps 12 --eval-every 6"
"$bin" train $short --ckpt-every 6 --out "$dir/sw" >"$dir/sw.out" 2>"$dir/sw.err"
ok '[ $? -eq 0 ] && [ $(grep -c "\"skipped\":\"no_targets\"" "$dir/sw/metrics.jsonl") -ge 1 ] && ! grep -qiw "nan" "$dir/sw/metrics.jsonl" "$dir/sw.err"'
ok '[ -z "$(grep "\"skipped\":\"no_targets\"" "$dir/sw/metrics.jsonl" | grep -v "\"loss\":null,.*\"grad_norm\":null")" ]'
ok '[ $(grep -c "\"loss\":[0-9]" "$dir/sw/metrics.jsonl") -ge 1 ] && [ $(grep -c "^step [0-9]*: no answer target in the batch" "$dir/sw.err") -eq 1 ]'
n=$(grep -c "\"skipped\":\"no_targets\"" "$dir/sw/metrics.jsonl")
ok 'grep -q "^paddlec train: 12 steps in .* ($n of them skipped: no answer target)$" "$dir/sw.err"'
cp "$dir/sw/final.safetensors" "$dir/sw-straight.safetensors"; cp "$dir/sw/final.state.safetensors" "$dir/sw-straight.state.safetensors"
"$bin" train --resume "$dir/sw/ckpt-6.safetensors" >/dev/null 2>&1   # skipped steps resume bit-exactly too
ok '[ $? -eq 0 ] && cmp -s "$dir/sw-straight.safetensors" "$dir/sw/final.safetensors" && cmp -s "$dir/sw-straight.state.safetensors" "$dir/sw/final.state.safetensors"'
# eval of that model refused its held-out problems the same way up front (it used to print
# the validation figures, then fail in generation)
err "the model's max_seq_len 4 cannot hold a held-out problem .*: pass --task-n 0" eval --ckpt "$dir/sw/final.safetensors"
"$bin" eval --ckpt "$dir/sw/final.safetensors" --task-n 0 >"$dir/swe.out" 2>&1
ok '[ $? -eq 0 ] && grep -q "^val loss [0-9.]* (answer tokens)$" "$dir/swe.out"'
# and when none of its windows holds a target it says so (it printed "val loss nan")
err "no validation batch holds an answer target (windows of 2 tokens can miss every '='): raise --seq-len or --batches" \
    eval --ckpt "$dir/sw/final.safetensors" --task-n 0 --seq-len 2 --batch 1 --batches 1
"$bin" train $short --accum 3 --seq-len 3 --out "$dir/swa" >/dev/null 2>&1   # micro-batches left out of their step
ok '[ $? -eq 0 ] && ! grep -qiw "nan" "$dir/swa/metrics.jsonl"'
# the error for a non-finite loss names the cause: here f16 overflowing before any update
# (it used to say "lower --lr?" whatever the cause)
"$bin" train $tiny --f16 --init-std 100 --task-n 0 --steps 2 --out "$dir/nanh" >/dev/null 2>"$dir/nanh.err"
ok '[ $? -eq 1 ] && tail -n 1 "$dir/nanh.err" | grep -q "^paddlec train: error: step 1: loss .* not finite: the f16 forward overflows .* before any update.*: try --bf16$"'

# ---- --f16: each step line has the scaler's loss_scale (the scale of that step's loss) and
# scaler_skipped_steps (the steps it skipped, since step 0); none without --f16. A small batch
# overflows f16 at the initial 2^16 on step 1 (tests/dist/test_dist_cli.sh has the same run).
ovf="--dim 32 --layers 1 --heads 2 --kv-heads 2 --hidden 64 --lines 3000 --task-n 0 --eval-every 0 --steps 3 --f16 --batch 2 --seq-len 6"
"$bin" train $ovf --ckpt-every 2 --out "$dir/ovf" >/dev/null 2>&1
ok '[ $? -eq 0 ] && grep -q "^{\"step\":1,.*,\"skipped\":\"inf_grad\",\"loss_scale\":65536,\"scaler_skipped_steps\":1}$" "$dir/ovf/metrics.jsonl"'
ok 'grep -q "^{\"step\":3,.*[0-9],\"loss_scale\":32768,\"scaler_skipped_steps\":1}$" "$dir/ovf/metrics.jsonl"'
ok '[ $(grep -c "\"loss_scale\":" "$dir/f16.jsonl") -eq 4 ] && ! grep -q "loss_scale\|scaler_skipped" "$dir/a.jsonl"'
scaler() { grep -o '"step":[0-9]*,"loss":.*\|"loss_scale":.*' "$1" | grep -o "^\"step\":[0-9]*\|\"loss_scale.*"; }
scaler "$dir/ovf/metrics.jsonl" >"$dir/ovf.scaler"
"$bin" train --resume "$dir/ovf/ckpt-2.safetensors" >/dev/null 2>&1   # the count comes back with the checkpoint
ok '[ $? -eq 0 ] && [ $(wc -l <"$dir/ovf.scaler") -eq 6 ] && scaler "$dir/ovf/metrics.jsonl" | cmp -s - "$dir/ovf.scaler"'

echo "test_cli.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
