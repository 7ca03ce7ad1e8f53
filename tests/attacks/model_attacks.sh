#!/usr/bin/env bash
# Attack 14 of docs/design.md: a trained network passed off as a TorchScript
# "architecture" (docs/model.md), built for real with wit-forge's module
# files, and checked: values stored in the file never reach the run (the
# initial state is regenerated from the seed); a network hidden in buffers is
# refused before anything is written; another module swapped in for the run's
# (in the run directory, or in a response bundle) is refused by every tool
# that loads it and rejects the replay. The honest TorchScript run is
# certified.
source "$(dirname "$0")/../cli/lib.sh"
: "${WIT_ATTACK_BIN:?set WIT_ATTACK_BIN to the folder of wit-forge}"
FORGE=$WIT_ATTACK_BIN/wit-forge

for i in $(seq 1 120); do printf 'record %d: the quick brown fox, %d times over the lazy dog\n' "$i" $((i * 7 % 13)); done >data.txt
run 0 wit-commit -q -o data.commit.json data.txt
cat >cfg.json <<'CFG'
{"model": {"vocab": 257, "context": 32},
 "batch_size": 4, "steps": 12, "checkpoint_every": 4, "head_every": 4,
 "optimizer": {"lr": 0.01},
 "fingerprint": {"sketch_k": 64, "probe_every": 4, "probe_records": 4, "probe_dim": 8},
 "seed": "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"}
CFG
run 0 wit-log keygen -o key
nonce() { printf '%064x' "$1"; }
for k in plain stored hidden swapped; do run 0 "$FORGE" model "$k" -o "$k.pt"; done
train() {  # train MODEL RUN
  wit-train -q -j1 --model "$1" --config cfg.json --data data.commit.json --index data.widx --key key --out "$2" data.txt
}

# The honest TorchScript run: trained, verified, challenged and certified.
run 0 train plain.pt P
run 0 wit-log verify P
same_file plain.pt P/model.pt
wit-log head P >P.head.json
run 0 wit-challenge -q --head P.head.json --nonce "$(nonce 1)" -k 12 -o all.json
run 0 wit-replay respond -q -j1 --run P all.json -o P.wbundle
run 0 wit-replay verify -q -j2 --bundle P.wbundle all.json -o P.report.json

# Values stored in the file are never read: a file whose stored values are
# "pretrained" starts from exactly the same initial state (same seed), and
# its run is an honest run of that code.
run 0 train stored.pt S
genesis_root() { wit-log show "$1" --to 0 | sed -n 's/.*"init_root":"\([0-9a-f]*\)".*/\1/p'; }
[ -n "$(genesis_root P)" ] && [ "$(genesis_root P)" = "$(genesis_root S)" ] && ok ||
  fail "stored values changed the initial state: $(genesis_root P) vs $(genesis_root S)"
cmp -s P/run.json S/run.json && fail "two model files gave one manifest" || ok

# A network hidden in buffers: refused before anything is written.
run 2 train hidden.pt Hd
error_is wit-train "buffers and tensor constants hold 154200 elements, more than 65536"
absent Hd

# Another module in the run directory: verify, respond and eval refuse it.
cp P/model.pt plain.keep
cp swapped.pt P/model.pt
run 1 wit-log verify P
grep -q "the model file is not the one the manifest binds" "$T/out" "$T/err" && ok || fail "wit-log verify: $(cat "$T/out" "$T/err")"
run 2 wit-replay respond -q -j1 --run P all.json -o swapped.wbundle
error_is wit-replay "the model file is not the run's model"
absent swapped.wbundle
run 2 wit-sketch fingerprint --run P P/ckpt/step-000012.safetensors
error_is wit-sketch "the model file is not the run's model"
cp plain.keep P/model.pt
run 0 wit-log verify P

# A response bundle answered with another module: the replay is rejected.
run 0 "$FORGE" swap-model --bundle P.wbundle --model swapped.pt -o forged.wbundle
run 1 wit-replay verify -q -j1 --bundle forged.wbundle all.json -o forged.report.json
grep -q "is not the model the manifest binds" forged.report.json && ok || fail "forged bundle: $(cat forged.report.json)"

finish
