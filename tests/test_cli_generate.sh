#!/usr/bin/env bash
# paddle.c — paddlec generate's prompt sources, --stop of any length, --ctx
# and the interactive mode, end to end on a tiny model trained here (the
# checks of issue 13's "Generation" items).
#   test_cli_generate.sh PATH/TO/paddlec
. "$(dirname "$0")/cli_lib.sh" "$1"
export LC_ALL=C

tiny="--dim 32 --layers 1 --heads 2 --kv-heads 1 --hidden 64 --seq-len 24 --batch 4 --lines 3000 --warmup 2 --lr 0.01 --min-lr 0.001 --task-n 4 --eval-batches 1"
"$bin" train $tiny --steps 8 --out "$dir/m" >/dev/null 2>&1
ok '[ $? -eq 0 ]'
ck="--ckpt $dir/m/final.safetensors"
gen() { "$bin" generate $ck "$@"; }

# ---- prompt sources: --prompt TEXT, --prompt - (stdin), --prompt-file --------------
gen --prompt '12+34=' --max-new 10 >a.out 2>a.err
ok '[ $? -eq 0 ] && [ $(wc -c <a.out) -eq 17 ]'
printf '12+34=' | gen --prompt - --max-new 10 >b.out 2>/dev/null
ok '[ $? -eq 0 ] && cmp -s a.out b.out'
printf '12+34=' >p.txt
gen --prompt-file p.txt --max-new 10 >c.out 2>/dev/null
ok '[ $? -eq 0 ] && cmp -s a.out c.out'
# "-i" as the value of --prompt is the text, not the flag
gen --prompt -i --max-new 2 >d.out 2>/dev/null
ok '[ $? -eq 0 ] && [ "$(head -c 2 d.out)" = "-i" ]'

# ---- --stop of any length: the output ends after the first occurrence -------------
g=$(sed -n 1p a.out); g=${g#12+34=}          # the continuation (10 bytes, newline-free or cut)
s=${g:2:2}                                   # a 2-byte text the model does produce
want="12+34=${g%%"$s"*}$s"
gen --prompt '12+34=' --max-new 10 --stop "$s" >s.out 2>s.err
ok '[ $? -eq 0 ] && [ -n "$s" ] && [ "$(cat s.out)" = "$want" ]'
gen --prompt '12+34=' --max-new 10 --stop 'never in output ~' >s2.out 2>/dev/null
ok '[ $? -eq 0 ] && cmp -s a.out s2.out'
# interactive: streamed as it comes, cut the same way
printf '12+34=\n' | gen -i --max-new 10 --stop "$s" >s3.out 2>/dev/null
ok '[ $? -eq 0 ] && [ "12+34=$(cat s3.out)" = "$want" ]'

# ---- the --max-new note only when --max-new was given (6 + 64 > 24 either way) ------
gen --prompt '12+34=' >n.out 2>n.err
ok '[ $? -eq 0 ] && ! grep -q "lowered" n.err && [ $(wc -c <n.out) -eq 25 ]'
gen --prompt '12+34=' --max-new 30 >/dev/null 2>n2.err
ok '[ $? -eq 0 ] && [ $(grep -c "note: --max-new lowered to 18" n2.err) -eq 1 ]'

# ---- --ctx: past the training length (24) with one warning; cache == recompute -----
gen --prompt '12+34=' --max-new 30 --ctx 40 >x.out 2>x.err
ok '[ $? -eq 0 ] && [ $(wc -c <x.out) -eq 37 ] && [ $(grep -c "warning" x.err) -eq 1 ] && ! grep -q lowered x.err'
gen --prompt '12+34=' --max-new 30 --ctx 40 --no-cache >x2.out 2>/dev/null
ok '[ $? -eq 0 ] && cmp -s x.out x2.out'
gen --prompt '12+34=' --max-new 10 --ctx 40 >x3.out 2>x3.err
ok '[ $? -eq 0 ] && ! grep -q warning x3.err && cmp -s a.out x3.out'
long=$(printf '1+1=2\n%.0s' 1 2 3 4 5)       # 29 bytes (the last newline dropped): over 24, under 40
gen --prompt "$long" --max-new 2 >/dev/null 2>l.err
ok '[ $? -eq 2 ] && [ $(wc -l <l.err) -eq 1 ] && grep -q "the context limit is 24.*--ctx N allows more" l.err'
gen --prompt "$long" --max-new 2 --ctx 40 >l.out 2>/dev/null
ok '[ $? -eq 0 ] && [ $(wc -c <l.out) -eq 32 ]'

# ---- interactive: each turn equals a plain run on the whole history ------------------
printf '12+34=\n5+7=\n' | gen -i --prompt '\n' --max-new 4 >i.out 2>i.err
ok '[ $? -eq 0 ] && grep -q "2 turns, 8 tokens" i.err'
# the first turn's 4 bytes, then a newline unless they end with one
g1=$(head -c 4 i.out; printf x); g1=${g1%x}
skip=5; [ "${g1: -1}" = $'\n' ] || skip=6
g2=$(tail -c +$skip i.out | head -c 4; printf x); g2=${g2%x}
printf '\n12+34=%s5+7=' "$g1" >h.txt
gen --prompt-file h.txt --max-new 4 >h.out 2>/dev/null
printf '\n12+34=%s5+7=%s\n' "$g1" "$g2" >h.want
ok '[ $? -eq 0 ] && cmp -s h.out h.want'
printf '12+34=\n5+7=\n' | gen --interactive --prompt '\n' --max-new 4 --no-cache >i2.out 2>/dev/null
ok '[ $? -eq 0 ] && cmp -s i.out i2.out'
# past the training length in turns: one warning; a full context ends with one line
# (turn 1: 6 + 12; turn 2: 4 + 2, lowered to the room left; turn 3 does not fit)
printf '12+34=\n5+7=\n1+1=\n' | gen -i --max-new 12 --ctx 48 >j.out 2>j.err
ok '[ $? -eq 0 ] && [ $(grep -c warning j.err) -eq 1 ] && grep -q "3 turns" j.err'
printf '12+34=\n5+7=\n1+1=\n' | gen -i --max-new 12 >/dev/null 2>k.err
ok '[ $? -eq 1 ] && grep -q "error: the context is full: 24 tokens so far and 4 in this line" k.err'
gen -i </dev/null >e.out 2>e.err
ok '[ $? -eq 0 ] && [ ! -s e.out ] && grep -q "0 turns" e.err'

# ---- usage errors: one line, exit 2 ---------------------------------------------------
gen -i --prompt - </dev/null >/dev/null 2>u1.err
ok '[ $? -eq 2 ] && [ $(wc -l <u1.err) -eq 1 ]'
gen --prompt a --prompt-file p.txt >/dev/null 2>u2.err
ok '[ $? -eq 2 ] && [ $(wc -l <u2.err) -eq 1 ] && grep -q "not both" u2.err'
gen --prompt a --stop '' >/dev/null 2>u3.err
ok '[ $? -eq 2 ] && [ $(wc -l <u3.err) -eq 1 ] && grep -q "stop" u3.err'
gen >/dev/null 2>u4.err
ok '[ $? -eq 2 ] && grep -q "prompt-file or --interactive is required" u4.err'
gen --prompt-file "$dir/missing" >/dev/null 2>u5.err
ok '[ $? -eq 1 ] && [ $(wc -l <u5.err) -eq 1 ]'

echo "test_cli_generate: $checks checks, $fails failed"
[ $fails -eq 0 ]
