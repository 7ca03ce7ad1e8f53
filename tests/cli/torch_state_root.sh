#!/usr/bin/env bash
# Known answer: the state root that wit-train logs at every step is the one
# docs/state-root.md's independent Python recipe (standard library only)
# computes from the checkpoint file, on a model whose tensors span several
# 64 KiB chunks (wte: 257 x 64 floats, two chunks; mlp.fc.weight: 256 x 64,
# exactly one). The recipe is taken from the doc as printed, so the doc
# cannot drift from the code.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "skip: $PY not found (Debian's python3)" >&2; exit 77; }

for i in $(seq 1 40); do printf 'record %d of the state-root test, long enough to fill a row or two\n' "$i"; done >data.txt
run 0 wit-commit -q -o data.commit.json data.txt
cat >cfg.json <<'CFG'
{"model": {"n_layer": 1, "n_head": 2, "d_model": 64, "context": 64},
 "batch_size": 4, "steps": 3, "checkpoint_every": 1, "head_every": 1,
 "fingerprint": {"sketch_k": 64, "probe_every": 3, "probe_records": 2, "probe_dim": 8},
 "seed": "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"}
CFG
run 0 wit-log keygen -o key
run 0 wit-train -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key --out R data.txt
doc_recipe state-root.md recipe.py
for s in 1 2 3; do
  cp "R/ckpt/step-00000$s.safetensors" step.safetensors
  got=$("$PY" recipe.py)
  want=$(wit-log show R --from "$s" --to "$s" | grep -o '"state_root":"[0-9a-f]*"' | cut -d'"' -f4)
  [ -n "$want" ] && [ "$got" = "$want" ] && ok || fail "step $s: recipe $got, log $want"
done
# One flipped byte of one weight: another root.
cp R/ckpt/step-000003.safetensors step.safetensors
printf '\x01' | dd of=step.safetensors bs=1 seek=$(($(stat -c %s step.safetensors) - 3)) conv=notrunc status=none
[ "$("$PY" recipe.py)" != "$want" ] && ok || fail "a changed byte left the root as it was"
finish
