#!/usr/bin/env bash
# Attack 18 of docs/design.md: a model that reads the tokens it is scored on.
# TorchScript modules built for real (causal_forge, torch::jit::Module::define)
# whose forward looks at the next input token train like any other run and
# score far better than honest ones, but wit-eval run refuses them (exit 1,
# nothing written), naming the example and the position. The honest twins (a
# position-wise model, causal self-attention, and, with Debian's
# python3-torch, the GPT-2 module of examples/) pass with every cut checked.
source "$(dirname "$0")/../cli/lib.sh"
: "${WIT_ATTACK_BIN:?set WIT_ATTACK_BIN to the folder of causal_forge}"
FORGE=$WIT_ATTACK_BIN/causal_forge

for i in $(seq 1 80); do printf 'record %d: the quick brown fox, %d times over the lazy dog\n' "$i" $((i * 7 % 13)); done >data.txt
for i in $(seq 1 12); do printf 'held out %d: a lazy dog and %d quick foxes\n' "$i" $((i * 5 % 11)); done >eval.txt
run 0 wit-commit -q -o data.commit.json data.txt
run 0 wit-commit -q -o eval.commit.json eval.txt
cat >cfg.json <<'CFG'
{"model": {"vocab": 257, "context": 48},
 "batch_size": 4, "steps": 24, "checkpoint_every": 12, "head_every": 12,
 "optimizer": {"lr": 0.03},
 "fingerprint": {"sketch_k": 64, "probe_every": 12, "probe_records": 4, "probe_dim": 8},
 "seed": "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"}
CFG
run 0 wit-log keygen -o key
train() {  # train MODEL RUN
  wit-train -q -j1 --model "$1" --config cfg.json --data data.commit.json --index data.widx --key key --out "$2" data.txt
}
ev() {  # ev RUN OUT ARGS...: wit-eval run on the eval set
  wit-eval run -j1 --run "$1" --commit eval.commit.json --index eval.widx -o "$2.eval.json" --scores "$2.scores.json" "${@:3}" eval.txt
}
loss_of() { sed -n 's/^  "loss": \([0-9.e-]*\),$/\1/p' "$1"; }

# --- the honest twins: every eligible cut of every record is checked (64 is
# more cuts than a row of 48 positions has), bit for bit
for k in plain attention; do
  run 0 "$FORGE" "$k" "$k.pt"
  run 0 train "$k.pt" "$k"
  run 0 ev "$k" "$k" --causal-cuts 64
  grep -q "causal check passed on 12 of 12 records, 64 cuts each" err && ok || fail "$k: $(cat err)"
  grep -q '"causal": {' "$k.eval.json" && ok || fail "$k: no causal coverage in eval.json"
  run 0 wit-eval run -j2 --run "$k" --commit eval.commit.json -o "$k-j2.eval.json" --scores "$k-j2.scores.json" \
    --causal-cuts 64 --nonce "$(printf '%064x' 7)" eval.txt
done

# --- the peekers: trained for real (the run is valid), refused by wit-eval
for k in peek peek-small leaky; do
  run 0 "$FORGE" "$k" "$k.pt"
  run 0 train "$k.pt" "$k"
  run 0 wit-log verify "$k"
  run 1 ev "$k" "$k"
  grep -qE "^wit-eval: rejected: the model reads the future: example [0-9]+ \(record leaf [0-9a-f]{64}\): its output at position [0-9]+ changed when the tokens after position [0-9]+ were replaced$" err &&
    [ "$(wc -l <err)" -eq 1 ] && ok || fail "$k: refusal: $(cat err)"
  absent "$k.eval.json" "$k.scores.json"
done
# The peek is real: reading the next token's embedding, the peeker's
# training loss ends far below its honest twin's (same data, order, seed).
final_loss() { wit-log show "$1" | tail -n 1 | grep -o '"mean_loss":[0-9.e-]*' | cut -d: -f2; }
p=$(final_loss peek) h=$(final_loss plain)
awk -v p="$p" -v h="$h" 'BEGIN { exit !(p < 0.8 * h) }' && ok || fail "peek's final loss $p is not well below plain's $h"
echo "final training loss: plain $h, peek $p"
# A peek at the next token is caught at the cut itself: the position named is the cut.
run 1 ev peek peek
sed -n 's/.*position \([0-9]*\) changed when the tokens after position \([0-9]*\) were.*/\1 \2/p' err | {
  read -r pos cut && [ "$pos" = "$cut" ] && ok || fail "peek: position $pos, cut $cut"
}

# A spot check re-evaluates its examples with the causal check too, at cuts
# its own nonce draws: the honest eval is certified.
run 0 wit-eval check -j1 --run plain --commit eval.commit.json --index eval.widx --eval plain.eval.json \
  --scores plain.scores.json --nonce "$(printf '%064x' 3)" -k 4 --causal-cuts 8 -o check.json eval.txt
[ "$(json_get check.json verdict)" = certified ] && ok || fail "honest spot check: $(cat err)"

# --- the honest GPT-2 module of examples/, from Debian's python3-torch
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  run 0 /usr/bin/python3 "$WIT_SRC/examples/gpt2_module.py" --n-layer 1 --n-head 2 --d-model 32 --context 48 --vocab 257 -o gpt2.pt
  run 0 train gpt2.pt gpt2
  run 0 ev gpt2 gpt2 --causal-cuts 64
  grep -q "causal check passed on 12 of 12 records" err && ok || fail "gpt2 module: $(cat err)"
else
  echo "note: Debian's python3-torch is missing; the GPT-2 module is not checked" >&2
fi

finish
