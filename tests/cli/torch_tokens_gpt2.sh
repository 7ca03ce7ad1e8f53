#!/usr/bin/env bash
# The trainer's path on token data (issue 37 item 5): the built-in GPT refuses
# uint32 token ids, naming examples/gpt2_module.py (torch_tokens_u32.sh checks
# the words); this test takes the pointer: the same data, committed with
# --token-bytes 4, trains with that module (vocabulary 70,000) and is
# certified by exact replay of a challenge over every step.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"
need_python_torch
export OPENBLAS_NUM_THREADS=1
nonce() { printf '%064x' "$1"; }

# 40 records of 16 uint32 ids, most past 65,535 (torch_tokens_u32.sh's data).
perl -e 'my @ids = map { 60000 + ($_ * 7919 + int($_ / 16)) % 9000 } 0 .. 639; $ids[16 * 5 + 3] = 69998;
         print pack("V*", @ids)' >tok.bin
run 0 wit-commit -q --reader tokens --token-bytes 4 --seq-len 16 -o tok.commit.json tok.bin
run 0 wit-log keygen -o key
cat >cfg.json <<CFG
{"model": {"vocab": 70000, "context": 16},
 "optimizer": {"lr": 0.01},
 "batch_size": 4, "steps": 4, "checkpoint_every": 1, "head_every": 2,
 "fingerprint": {"sketch_k": 64, "probe_every": 2, "probe_records": 4, "probe_dim": 8},
 "seed": "3232323232323232323232323232323232323232323232323232323232323232"}
CFG
# The pointer, as the error gives it.
run 2 wit-train -q -j1 --config cfg.json --data tok.commit.json --index tok.widx --key key --out builtin tok.bin &&
  error_is wit-train 'byte-level.*examples/gpt2_module.py'
absent builtin
run 0 "$PY" "$WIT_SRC/examples/gpt2_module.py" --n-layer 1 --n-head 2 --d-model 16 --context 16 --vocab 70000 -o gpt2.pt
run 0 wit-train -q -j1 --model gpt2.pt --config cfg.json --data tok.commit.json --index tok.widx --key key --out run tok.bin
grep -q '"tokens": "u32"' run/run.json && ok || fail "run.json's model: $(grep -E '"tokens"' run/run.json)"
run 0 wit-log verify run
wit-log head run >head.json
run 0 wit-challenge -q --head head.json --nonce "$(nonce 9)" -k 4 -o c.json
run 0 wit-replay respond -q -j1 --run run c.json -o r.wbundle
run 0 wit-replay verify -q --bundle r.wbundle c.json -o report.json
[ "$(json_get report.json verdict)" = certified ] && ok || fail "report: $(head -c 400 report.json)"
[ "$(json_get report.json mode)" = exact ] && ok || fail "the replay was not exact: $(json_get report.json mode)"
finish
