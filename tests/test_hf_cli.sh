#!/usr/bin/env bash
# paddle.c — paddlec and Hugging Face directories (docs/hf.md), end to end:
# export-hf writes a directory that generate --hf and eval --hf read back with
# the checkpoint's own results; train --init-hf fine-tunes it; train --config
# and bench --config read the same keys (train's option names, nn's config
# keys, a Hugging Face config.json) and build the same model; bad input gives
# one line. The numerics against PyTorch are tests/test_hf.c's.
#   test_hf_cli.sh PATH/TO/paddlec
fx=$(cd "$(dirname "$0")" && pwd)/fixtures/hf
. "$(dirname "$0")/cli_lib.sh" "$1"
one_line() { [ "$(wc -l <"$1")" -eq 1 ] && grep -q "error: .*$2" "$1"; }

tiny="--dim 32 --layers 1 --heads 2 --kv-heads 1 --hidden 64 --seq-len 24 --batch 4 --lines 3000 --warmup 2 --lr 0.01 --task-n 0 --eval-batches 2"
"$bin" train $tiny --steps 3 --out "$dir/a" >/dev/null 2>"$dir/a.err"
ok '[ $? -eq 0 ] && [ -f "$dir/a/final.safetensors" ]'

# ---- export-hf, then generate/eval --hf = --ckpt ----------------------------------
"$bin" export-hf "$dir/a/final.safetensors" "$dir/hf" >"$dir/e.out" 2>"$dir/e.err"
ok '[ $? -eq 0 ] && [ -f "$dir/hf/config.json" ] && [ -f "$dir/hf/model.safetensors" ] && [ -f "$dir/hf/tokenizer.json" ]'
# transformers' side files, and the byte tokenizer in Hugging Face's form (a BPE model over ByteLevel)
ok 'grep -q "\"bos_token_id\":.null" "$dir/hf/generation_config.json" && grep -q PreTrainedTokenizerFast "$dir/hf/tokenizer_config.json"'
ok 'grep -q "\"model\":{\"type\":\"BPE\"" "$dir/hf/tokenizer.json" && grep -q "\"decoder\":{\"type\":\"ByteLevel\"" "$dir/hf/tokenizer.json"'
ok 'grep -q "\"architectures\"" "$dir/hf/config.json" && grep -q "LlamaForCausalLM" "$dir/hf/config.json"'
"$bin" generate --ckpt "$dir/a/final.safetensors" --prompt '\n12+34=' --max-new 8 >"$dir/g1.out" 2>/dev/null
"$bin" generate --hf "$dir/hf" --prompt '\n12+34=' --max-new 8 >"$dir/g2.out" 2>/dev/null
ok '[ $? -eq 0 ] && [ -s "$dir/g2.out" ] && cmp -s "$dir/g1.out" "$dir/g2.out"'
printf '12+34=46\n5+6=11\n70+8=78\n%.0s' $(seq 400) >"$dir/text.txt"
"$bin" eval --ckpt "$dir/a/final.safetensors" --data "$dir/text.txt" --batches 2 --batch 4 >"$dir/v1.out" 2>/dev/null
"$bin" eval --hf "$dir/hf" --data "$dir/text.txt" --batches 2 --batch 4 >"$dir/v2.out" 2>/dev/null
ok '[ $? -eq 0 ] && grep "val loss" "$dir/v1.out" >"$dir/v1.l" && grep "val loss" "$dir/v2.out" | cmp -s - "$dir/v1.l"'
"$bin" export-hf "$dir/a/final.safetensors" "$dir/hfb" --dtype bf16 >/dev/null 2>&1
ok '[ $? -eq 0 ] && "$bin" inspect --no-stats "$dir/hfb/model.safetensors" | grep -q "model.norm.weight *BF16"'

# ---- train --init-hf: the run starts from the directory's weights --------------------
"$bin" train --init-hf "$dir/hf" --data "$dir/text.txt" --steps 2 --seq-len 24 --batch 4 --warmup 0 --lr 1e-3 \
    --eval-batches 2 --out "$dir/ft" >"$dir/ft.out" 2>"$dir/ft.err"
ok '[ $? -eq 0 ] && [ -f "$dir/ft/final.safetensors" ] && grep -q "dim 32, 1 layers, 2 heads" "$dir/ft.err"'
# with lr 0 the run's weights are the directory's (the same statistics, tensor by tensor)
"$bin" train --init-hf "$dir/hf" --data "$dir/text.txt" --steps 1 --seq-len 24 --batch 4 --warmup 0 --lr 0 \
    --min-lr 0 --eval-batches 1 --out "$dir/ft0" >/dev/null 2>&1
ok '[ $? -eq 0 ]'
"$bin" inspect "$dir/ft0/final.safetensors" | grep "^model\.\|^lm_head" >"$dir/s1"
"$bin" inspect "$dir/hf/model.safetensors" | grep "^model\.\|^lm_head" >"$dir/s2"
ok '[ -s "$dir/s1" ] && cmp -s "$dir/s1" "$dir/s2"'
"$bin" train --resume "$dir/ft/final.safetensors" --steps 3 --out "$dir/ft" >/dev/null 2>"$dir/ftr.err"
ok '[ $? -eq 0 ] && grep -q "(resumed)" "$dir/ftr.err"'
"$bin" generate --hf "$fx/untied-f32" --prompt hi 2>"$dir/nt.err" >/dev/null
ok '[ $? -eq 1 ] && one_line "$dir/nt.err" "has no tokenizer.json"'
"$bin" train --init-hf "$dir/hf" --steps 1 --out "$dir/x" 2>"$dir/nd.err" >/dev/null
ok '[ $? -eq 2 ] && one_line "$dir/nd.err" "needs --data"'
"$bin" eval --hf "$dir/hf" 2>"$dir/ne.err" >/dev/null
ok '[ $? -eq 2 ] && one_line "$dir/ne.err" "needs --data"'
"$bin" generate --hf "$dir/hf" --ckpt "$dir/a/final.safetensors" --prompt x 2>"$dir/both.err" >/dev/null
ok '[ $? -eq 2 ] && one_line "$dir/both.err" "one of --ckpt and --hf"'
"$bin" export-hf "$dir/a/final.safetensors" "$dir/hf" --dtype f8 2>"$dir/dt.err" >/dev/null
ok '[ $? -eq 2 ] && one_line "$dir/dt.err" "expected f32, bf16 or f16"'

# ---- generate --hf with the directory's tokenizer.json: transformers' greedy text -------
"$bin" generate --hf "$fx/tied-f32" --prompt "The quick brown" --max-new 12 >"$dir/gh.out" 2>"$dir/gh.err"
if [ $? -ne 0 ] && grep -q 'tokenizer JSON: "format" is not' "$dir/gh.err"; then
  echo "note: pd_tokenizer_load does not read Hugging Face tokenizer.json here: generate --hf text check not run"
else
  ok 'cmp -s "$dir/gh.out" "$fx/tied-f32/generate.txt"'
fi

# ---- one config schema: train --config and bench --config --------------------------
params() { grep -o "[0-9]* parameters" "$1" | head -1 | awk '{print $1}'; }
bparams() { grep -o '"params":[0-9]*' "$1" | head -1 | cut -d: -f2; }
cp "$fx/tied-f32/config.json" "$dir/hfcfg.json"   # vocab 300 >= the 256 byte tokens
"$bin" train --config "$dir/hfcfg.json" --data "$dir/text.txt" --steps 1 --seq-len 16 --batch 2 --eval-batches 1 \
    --out "$dir/c1" >/dev/null 2>"$dir/c1.err"
ok '[ $? -eq 0 ] && grep -q "dim 32, 2 layers, 4 heads, hidden 64, vocab 300" "$dir/c1.err"'
"$bin" bench --config "$dir/hfcfg.json" --steps 1 --decode 2 --seq-len 16 >"$dir/b1.out" 2>/dev/null
ok '[ $? -eq 0 ] && [ "$(bparams "$dir/b1.out")" = "$(params "$dir/c1.err")" ]'
printf '{"n_layers": 2, "dim": 48, "n_heads": 4, "n_kv_heads": 2, "hidden_dim": 96, "seq-len": 16, "lr": 0.002, "batch": 3}' >"$dir/nn.json"
"$bin" train --config "$dir/nn.json" --steps 1 --task-n 0 --lines 2000 --eval-batches 1 --out "$dir/c2" >/dev/null 2>"$dir/c2.err"
ok '[ $? -eq 0 ] && grep -q "dim 48, 2 layers, 4 heads, hidden 96, vocab 256" "$dir/c2.err" && grep -q "batch 3 x 16" "$dir/c2.err"'
"$bin" bench --config "$dir/nn.json" --steps 1 --decode 2 >"$dir/b2.out" 2>/dev/null
ok '[ $? -eq 0 ] && [ "$(bparams "$dir/b2.out")" = "$(params "$dir/c2.err")" ] && grep -q "\"batch\":3" "$dir/b2.out"'
printf '{"layers": 2, "n_layers": 3}' >"$dir/twice.json"
"$bin" bench --config "$dir/twice.json" 2>"$dir/tw.err" >/dev/null
ok '[ $? -eq 2 ] && one_line "$dir/tw.err" "given twice"'
sed 's/"rope_parameters": {/"rope_scaling": {"rope_type": "llama3", "factor": 8.0}, "x": {/' "$fx/tied-f32/config.json" >"$dir/rs.json"
"$bin" train --config "$dir/rs.json" --data "$dir/text.txt" --steps 1 --out "$dir/c3" 2>"$dir/rs.err" >/dev/null
ok '[ $? -ne 0 ] && one_line "$dir/rs.err" "rope_scaling type \"llama3\" is not supported"'
printf '{"hidden_size": 32, "dim": 64}' >"$dir/mix.json"
"$bin" bench --config "$dir/mix.json" 2>"$dir/mix.err" >/dev/null
ok '[ $? -ne 0 ] && [ "$(wc -l <"$dir/mix.err")" -eq 1 ]'

# export-hf takes a run directory as export does (its latest checkpoint)
"$bin" export-hf "$dir/a" "$dir/hfdir" >/dev/null 2>"$dir/hfdir.err"
ok '[ $? -eq 0 ] && [ -f "$dir/hfdir/config.json" ] && [ -f "$dir/hfdir/model.safetensors" ]'

# BOS: a tokenizer.json whose post-processor names one puts it before the first prompt, as
# transformers encodes it (the prompt's token count, read from the --ctx refusal, grows by one)
cp -r "$fx/tied-f32" "$dir/bos"
sed -i 's/"post_processor": null/"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}], "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [0], "tokens": ["<|endoftext|>"]}}}/' "$dir/bos/tokenizer.json"
"$bin" generate --hf "$dir/bos" --prompt hello --ctx 1 2>"$dir/bos1.err" >/dev/null
"$bin" generate --hf "$fx/tied-f32" --prompt hello --ctx 1 2>"$dir/bos0.err" >/dev/null
ok 'grep -q "the prompt has 5 tokens" "$dir/bos1.err" && grep -q "the prompt has 4 tokens" "$dir/bos0.err"'
"$bin" generate --hf "$dir/bos" --prompt hello --max-new 4 >"$dir/bos1.out" 2>/dev/null
"$bin" generate --hf "$fx/tied-f32" --prompt '<|endoftext|>hello' --max-new 4 >"$dir/bos2.out" 2>/dev/null
ok '[ "hello$(tail -c +14 "$dir/bos2.out" | tail -c +6)" = "$(cat "$dir/bos1.out")" ]'   # the same ids continue the same way

# ---- a Llama 2 style directory: SentencePiece tokenizer whose post-processor puts <s> first
# (tests/fixtures/hf/llama2-sp, written by tools/ref/hf_llama_fixture.py with transformers)
sp="$fx/llama2-sp"
near() { awk -v want="$(cat "$2")" '/^val loss/ { d = $3 - want; ok = d < 1e-4 && d > -1e-4 } END { exit !ok }' "$1"; }
"$bin" generate --hf "$sp" --prompt "The quick brown" --max-new 12 >"$dir/sp.out" 2>/dev/null
ok '[ $? -eq 0 ] && cmp -s "$dir/sp.out" "$sp/generate.txt"'   # " 12 fox ...": the leading "▁1" keeps its space
printf 'The quick brown' | "$bin" generate --hf "$sp" -i --max-new 12 >"$dir/sp.i" 2>/dev/null
ok '[ $? -eq 0 ] && [ "The quick brown$(cat "$dir/sp.i")" = "$(cat "$dir/sp.out")" ]'   # = what streaming prints
# eval --hf scores windows that start with <s>, as transformers does (eval.txt: its float64 loss)
"$bin" eval --hf "$sp" --data "$sp/eval_text.txt" --seq-len 16 --batch 4 >"$dir/spe.out" 2>/dev/null
ok '[ $? -eq 0 ] && near "$dir/spe.out" "$sp/eval.txt"'

echo "test_hf_cli: $((checks - fails))/$checks checks passed"
[ "$fails" -eq 0 ]
