#!/usr/bin/env bash
# Golden test against PyTorch itself, on the built-in GPT (runs today; the
# TorchScript path's version is torch_model.sh): a real run's steps 2 and 3,
# as wit-train took them (checkpoint before -> checkpoint after), are
# recomputed in Python with the run's architecture as a TorchScript module
# (examples/gpt2_module.py --names wit: wit's parameter names), the rows of
# docs/training.md and torch.optim.AdamW(foreach=False), and must agree bit
# for bit (tests/torch/golden_adamw.py). The batch of each step comes from
# docs/manifest.md's data order recipe and is checked against the logged
# batch root (tests/torch/run_step_inputs.py). Also: golden_adamw.py's own
# self-test, a slim module (stride-0 parameters) gives the same bits, and
# the wrong checkpoint as OUT is reported in ulps and fails.
# Needs Debian's /usr/bin/python3 with python3-torch and python3-cryptography
# (the data order recipe); without them the test is a visible skip.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"
need_python_torch  # sets PY
GOLDEN="$WIT_SRC/tests/torch/golden_adamw.py"
INPUTS="$WIT_SRC/tests/torch/run_step_inputs.py"
MODULE="$WIT_SRC/examples/gpt2_module.py"

run 0 "$PY" "$GOLDEN" --self-test
grep -q '^self-test: all passed$' out && ok || { fail "golden_adamw.py --self-test"; cat out; }

# Records from 3 to 60 bytes against a context of 32: short rows (end target,
# masked padding) and truncated ones in the same batches.
awk 'BEGIN { for (i = 1; i <= 40; i++) { s = "r" i " "; for (j = 0; j < i * 7 % 57; j++) s = s sprintf("%c", 97 + (i + j) % 26); print s } }' >data.txt
run 0 wit-commit -q -o data.commit.json data.txt
cat >cfg.json <<'CFG'
{"model": {"n_layer": 2, "n_head": 2, "d_model": 32, "context": 32},
 "optimizer": {"lr": 0.003, "weight_decay": 0.1, "grad_clip": 1.0},
 "schedule": {"warmup": 2, "min_lr_ratio": 0.1},
 "batch_size": 4, "steps": 3, "checkpoint_every": 1, "head_every": 1,
 "fingerprint": {"sketch_k": 64, "probe_every": 3, "probe_records": 2, "probe_dim": 8},
 "seed": "9071de9071de9071de9071de9071de9071de9071de9071de9071de9071de9071"}
CFG
run 0 wit-log keygen -o key
run 0 wit-train -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key --out R data.txt
doc_recipe manifest.md order.py
run 0 "$PY" "$MODULE" --names wit --n-layer 2 --n-head 2 --d-model 32 --context 32 --vocab 257 -o wit.pt
run 0 "$PY" "$MODULE" --names wit --slim --n-layer 2 --n-head 2 --d-model 32 --context 32 --vocab 257 -o wit-slim.pt

clipped=0
for s in 2 3; do
  prev=$(printf 'R/ckpt/step-%06d.safetensors' $((s - 1))) this=$(printf 'R/ckpt/step-%06d.safetensors' "$s")
  run 0 "$PY" "$INPUTS" --run R --data data.txt --step "$s" --order order.py --batch "b$s.json" --info "i$s.json" ||
    cat err
  "$PY" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["grad_norm"] <= 1.0)' "i$s.json" &&
    clipped=$((clipped + 1))
  for m in wit.pt wit-slim.pt; do
    run 0 "$PY" "$GOLDEN" --module "$m" --state-in "$prev" --batch "b$s.json" --info "i$s.json" --state-out "$this"
    echo "step $s, $m: $(tail -n 1 out)"
    grep -qx 'golden: bit-identical' out && ok || { fail "step $s with $m: not bit-identical"; cat out; }
  done
done
[ "$clipped" -ge 1 ] && ok || fail "no golden step had its gradient clipped (grad_norm > 1)"
# The table: one row per tensor (parameters, both moments, wit.step) and the logged values.
[ "$(grep -cE '^(adam\.[mv]\.)?(wte|wpe|lnf\.|h\.)' out)" -eq $((3 * 28)) ] && grep -q '^info.losses ' out && ok ||
  fail "the golden table does not list every tensor: $(head -5 out)"

# The wrong "after" state (step 3 for step 2's inputs): differences in ulps, exit 1.
run 1 "$PY" "$GOLDEN" --module wit.pt --state-in R/ckpt/step-000001.safetensors --batch b2.json --info i2.json \
  --state-out R/ckpt/step-000003.safetensors
grep -qE '^golden: max [0-9]+ ulps in ' out && ok || fail "wrong OUT: $(tail -n 1 out)"
# The wrong module (other names): bad input.
run 0 "$PY" "$MODULE" --n-layer 2 --n-head 2 --d-model 32 --context 32 --vocab 257 -o gpt2names.pt
run 2 "$PY" "$GOLDEN" --module gpt2names.pt --state-in R/ckpt/step-000001.safetensors --batch b2.json --info i2.json \
  --state-out R/ckpt/step-000002.safetensors
error_is golden_adamw "parameters and the state's differ"
finish
