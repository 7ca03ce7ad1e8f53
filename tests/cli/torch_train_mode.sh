#!/usr/bin/env bash
# A TorchScript model with dropout (issue 25 item 3, docs/training.md#dropout):
# torch.nn's TransformerEncoder with dropout 0.2 (examples/rnn_module.py
# --dropout), exported with Debian's PyTorch.
# - Without "train_mode" wit runs it in eval mode: its dropout layers are
#   inert and wit-train's step 2 is PyTorch's eval-mode step bit for bit
#   (tests/torch/golden_adamw.py, as torch_rnn.sh).
# - With "train_mode": true the manifest records it, the training forward
#   drops (another trajectory), the same run twice gives the same bits, every
#   step is certified by exact replay (also with micro_batch), and wit-eval
#   evaluates it.
# - "dropout" (the built-in GPT's rate) is refused for a --model run.
source "$(dirname "$0")/lib.sh"
need_torch_references  # sets PY, GOLDEN, INPUTS, MODULE
corpus 48
commit_and_key
config() {  # config EXTRA
  cat <<CFG
{"model": {"vocab": 257, "context": 32},
 "optimizer": {"lr": 0.003, "weight_decay": 0.1, "grad_clip": 1.0},
 "schedule": {"warmup": 2, "min_lr_ratio": 0.1},
 "batch_size": 4, "steps": 4, "checkpoint_every": 1, "head_every": 2,
 "fingerprint": {"sketch_k": 64, "probe_every": 2, "probe_records": 4, "probe_dim": 16},
 "seed": "7d0b7d0b7d0b7d0b7d0b7d0b7d0b7d0b7d0b7d0b7d0b7d0b7d0b7d0b7d0b7d0b"$1}
CFG
}
train() { wit-train -q -j1 --model enc.pt --data data.commit.json --index data.widx --key key "$@" data.txt; }
last() { echo "$1/ckpt/step-000004.safetensors"; }

run 0 "$PY" "$MODULE" --arch transformer --n-layer 1 --d-model 32 --context 32 --dropout 0.2 -o enc.pt
config "" >eval.json
config ', "train_mode": true' >train.json
config ', "train_mode": true, "micro_batch": 3' >accum.json

# --- eval mode (the default): dropout inert, PyTorch's own step bit for bit
run 0 train --config eval.json --out E
grep -q '"train_mode"' E/run.json && fail "an eval-mode run's manifest names train_mode" || ok
doc_recipe manifest.md order.py
run 0 "$PY" "$INPUTS" --run E --data data.txt --step 2 --order order.py --batch E.batch.json --info E.info.json
run 0 "$PY" "$GOLDEN" --module E/model.pt --state-in E/ckpt/step-000001.safetensors \
  --batch E.batch.json --info E.info.json --state-out E/ckpt/step-000002.safetensors
grep -qx 'golden: bit-identical' out && ok || { fail "eval-mode step 2 is not PyTorch's"; cat out; }

# --- training mode: bound, drops, reproducible, certified exactly
run 0 train --config train.json --out D
grep -q '^  "train_mode": true,$' D/run.json && ok || fail "run.json does not record train_mode"
cmp -s "$(last E)" "$(last D)" && fail "train_mode changed nothing (dropout inert)" || ok
run 0 train --config train.json --out D2
same_file "$(last D)" "$(last D2)"
certify D 9 4
run 0 train --config accum.json --out A
certify A 9 4
# Evaluation of a train_mode run (the eval-mode copy of the module).
run 0 wit-commit -q -o ev.commit.json data.txt
run 0 wit-eval run -q -j1 --run D --commit ev.commit.json --index ev.widx -o ev.json --scores ev.scores.json data.txt

# --- the built-in GPT's rate is not a TorchScript model's
config ', "dropout": 0.1' >bad.json
run 2 train --config bad.json --out BAD && error_is wit-train "a TorchScript model's dropout is its own: set \"train_mode\": true"
absent BAD
finish
