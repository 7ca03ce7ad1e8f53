#!/usr/bin/env bash
# TorchScript models through the whole pipeline (issue 15, docs/model.md):
# a GPT-2-style module saved by examples/gpt2_module.py (Debian's
# python3-torch) is trained by `wit-train --model`, the run keeps the file
# byte for byte and verifies; wit's step on it is checked against PyTorch
# itself (tests/torch/golden_adamw.py: torch.optim.AdamW(foreach=False) on the
# same module, state and batch, bit-identical) twice: the step that
# tests/torch/wit_step_golden computes from a checkpoint, and the step that
# wit-train itself took (checkpoint 1 -> checkpoint 2, the batch from
# docs/manifest.md's data order recipe); challenge, replay, eval and sketch
# work on the run; bad modules, a vocabulary too small for the data and a
# swapped run/model.pt are one-line errors with exit 2 and nothing written.
# Also: the same module trained data parallel and sharded (--nproc 2) binds
# the same manifest and module, and every step of those runs replays in one
# process and is certified.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"
need_python_torch  # sets PY
BUILD=$(cd "$WIT_BIN/.." && pwd)
STEP_GOLDEN="$BUILD/tests/torch/wit_step_golden"
GOLDEN="$WIT_SRC/tests/torch/golden_adamw.py"
INPUTS="$WIT_SRC/tests/torch/run_step_inputs.py"
MODULE="$WIT_SRC/examples/gpt2_module.py"
nonce() { printf '%064x' "$1"; }

# --- data: 60 records of 7 to 59 bytes against a context of 32 (short rows
# with an end target and masked padding, truncated rows), 12 held out.
awk 'BEGIN { for (i = 1; i <= 72; i++) { s = "r" i " "; for (j = 0; j < i * 7 % 57; j++) s = s sprintf("%c", 97 + (i + j) % 26); print s } }' >all.txt
head -n 60 all.txt >data.txt
tail -n 12 all.txt >ev.txt
run 0 wit-commit -q -o data.commit.json data.txt
run 0 wit-commit -q -o ev.commit.json ev.txt
run 0 wit-log keygen -o key
config() {  # config VOCAB
  cat <<CFG
{"model": {"vocab": $1, "context": 32},
 "optimizer": {"lr": 0.003, "weight_decay": 0.1, "grad_clip": 1.0},
 "schedule": {"warmup": 2, "min_lr_ratio": 0.1},
 "batch_size": 4, "steps": 4, "checkpoint_every": 1, "head_every": 2,
 "fingerprint": {"sketch_k": 64, "probe_every": 2, "probe_records": 4, "probe_dim": 16},
 "seed": "5c415c415c415c415c415c415c415c415c415c415c415c415c415c415c415c41"}
CFG
}
config 257 >cfg.json
train() {  # train WANT MODEL CONFIG OUT
  run "$1" wit-train -q -j1 --model "$2" --config "$3" --data data.commit.json --index data.widx --key key --out "$4" data.txt
}

# --- train a TorchScript module
run 0 "$PY" "$MODULE" --n-layer 1 --n-head 2 --d-model 32 --context 32 --vocab 257 -o m.pt
train 0 m.pt cfg.json run
[ -f run/model.pt ] && ok || fail "no run/model.pt"
same_file m.pt run/model.pt
run 0 wit-log verify run
ls run/ckpt
for s in 1 2 3 4; do
  [ -f "$(printf 'run/ckpt/step-%06d.safetensors' "$s")" ] && ok || fail "no checkpoint of step $s: $(ls run/ckpt)"
done

# --- golden: wit's step against PyTorch's
doc_recipe manifest.md order.py
# The records of step 2 and what the log says of it (binary32 losses, grad norm).
run 0 "$PY" "$INPUTS" --run run --data data.txt --step 2 --order order.py --batch batch.json --info trainer-info.json ||
  cat err
# (a) The C++ step from checkpoint 1 on that batch, by wit_step_golden.
if [ -x "$STEP_GOLDEN" ]; then
  run 0 "$STEP_GOLDEN" --run run --state-in run/ckpt/step-000001.safetensors --batch batch.json \
    --state-out out.safetensors --info info.json
  run 0 "$PY" "$GOLDEN" --module run/model.pt --state-in run/ckpt/step-000001.safetensors --batch batch.json \
    --info info.json --state-out out.safetensors
  echo "golden, wit_step_golden against PyTorch:"
  cat out
  grep -qx 'golden: bit-identical' out && ok || fail "wit_step_golden's step is not PyTorch's: $(tail -n 1 out)"
  # The C++ side's lr is the schedule's double, not the logged binary32.
  "$PY" -c 'import json, sys; a, b = (json.load(open(f))["lr"] for f in sys.argv[1:]); sys.exit(a != b)' \
    info.json trainer-info.json && ok || fail "info.json's lr is not lr(2) in double"
  # The trainer's decay groups are the C++ side's (declared by the manifest's rules).
  "$PY" -c 'import json, sys; t, c = (json.load(open(f)) for f in sys.argv[1:3]); t["decay"] = c["decay"]
json.dump(t, open(sys.argv[3], "w"))' trainer-info.json info.json trainer-info2.json && mv trainer-info2.json trainer-info.json
else
  fail "$STEP_GOLDEN not built"
fi
# (b) The step wit-train took in training (the module's second call or later in
# that process: differs from a first call unless wit turns off the TorchScript
# graph executor's optimisation, which reorders wte's gradient sum).
run 0 "$PY" "$GOLDEN" --module run/model.pt --state-in run/ckpt/step-000001.safetensors --batch batch.json \
  --info trainer-info.json --state-out run/ckpt/step-000002.safetensors
echo "golden, wit-train's step 2 against PyTorch: $(tail -n 1 out)"
grep -qx 'golden: bit-identical' out && ok || { fail "wit-train's step 2 is not PyTorch's"; cat out; }

# --- the pipeline
wit-log head run >head.json
run 0 wit-challenge -q --head head.json --nonce "$(nonce 1)" -k 4 -o c.json
run 0 wit-replay respond -q -j1 --run run c.json -o r.wbundle
run 0 wit-replay verify -q -j1 --bundle r.wbundle c.json -o report.json
[ "$(json_get report.json verdict)" = certified ] && ok || fail "replay verdict: $(json_get report.json verdict)"
run 0 wit-eval run -q -j1 --run run --commit ev.commit.json --index ev.widx -o eval.json --scores scores.json ev.txt
[ "$(json_get eval.json step)" = 4 ] && [ "$(json_get eval.json n)" = 12 ] && ok || fail "eval.json: $(head -c 300 eval.json)"
run 0 wit-sketch export --run run -o rel.safetensors run/ckpt/step-000004.safetensors
run 0 wit-sketch match --run run rel.safetensors
run 0 wit-sketch fingerprint -j1 --run run -o fp.json rel.safetensors
[ -s fp.json ] && ok || fail "no fingerprint"

# --- data parallel and sharded (--nproc 2): the same manifest, the same module,
# each rank checking the file's digest; every step replays in one process.
for mode in dp shard; do
  extra=()
  [ "$mode" = shard ] && extra=(--shard)
  run 0 wit-train -q -j1 --model m.pt --config cfg.json --data data.commit.json --index data.widx --key key \
    --out "$mode" --nproc 2 "${extra[@]}" data.txt
  run 0 wit-log verify "$mode"
  same_file run/run.json "$mode/run.json"
  same_file m.pt "$mode/model.pt"
  wit-log head "$mode" >"$mode.head.json"
  run 0 wit-challenge -q --head "$mode.head.json" --nonce "$(nonce 7)" -k 4 -o "$mode.c.json"
  run 0 wit-replay respond -q -j1 --run "$mode" "$mode.c.json" -o "$mode.wbundle"
  run 0 wit-replay verify -q -j1 --bundle "$mode.wbundle" "$mode.c.json" -o "$mode.report.json"
  [ "$(json_get "$mode.report.json" verdict)" = certified ] && ok ||
    fail "$mode: replay verdict: $(json_get "$mode.report.json" verdict)"
done

# --- bad modules: exit 2, one line, no run directory
# (from a file: torch.jit.script reads the classes' source)
cat >bad_modules.py <<'PY'
import torch, torch.nn as nn

class TwoArgs(nn.Module):  # forward(tokens, positions)
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(257, 8)
    def forward(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return torch.matmul(self.wte(tokens + positions), self.wte.weight.t())

class Flat(nn.Module):  # [B, L] instead of [B, L, V]
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(257, 8)
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.matmul(self.wte(tokens), self.wte.weight.t()).sum(-1)

class Double(nn.Module):  # one float64 parameter
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(257, 8)
        self.gain = nn.Parameter(torch.ones(8, dtype=torch.float64))
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.matmul(self.wte(tokens) * self.gain.float(), self.wte.weight.t())

for cls, name in ((TwoArgs, "sig2.pt"), (Flat, "flat.pt"), (Double, "f64.pt")):
    torch.jit.script(cls().eval()).save(name)
PY
run 0 "$PY" bad_modules.py || cat err
train 2 sig2.pt cfg.json bad-sig && error_is wit-train 'forward'
absent bad-sig
train 2 flat.pt cfg.json bad-shape && error_is wit-train 'forward|shape|logits|\[4, 32\]'
absent bad-shape
train 2 f64.pt cfg.json bad-dtype && error_is wit-train 'float32|float64|Double|dtype'
absent bad-dtype
# A vocabulary of 200 against byte records (tokens up to 255, pad 256).
config 200 >cfg200.json
run 0 "$PY" "$MODULE" --n-layer 1 --n-head 2 --d-model 32 --context 32 --vocab 200 -o m200.pt
train 2 m200.pt cfg200.json bad-vocab && error_is wit-train 'vocab'
absent bad-vocab

# --- token records (the tokens reader): uint16 ids pass through, pad = vocab - 1
"$PY" - <<'PY'
import struct
ids = [(i * 7919 + i // 16) % 290 for i in range(16 * 40)]
ids[16 * 5 + 3] = 298  # the data's largest id
open("tok.bin", "wb").write(struct.pack("<%dH" % len(ids), *ids))
PY
run 0 wit-commit -q --reader tokens --seq-len 16 -o tok.commit.json tok.bin
config 300 >cfg300.json
run 0 "$PY" "$MODULE" --n-layer 1 --n-head 2 --d-model 32 --context 32 --vocab 300 -o m300.pt
run 0 wit-train -q -j1 --model m300.pt --config cfg300.json --data tok.commit.json --index tok.widx --key key --out tokrun tok.bin
grep -q '"tokens": "u16"' tokrun/run.json && grep -q '"pad": 299' tokrun/run.json && ok || fail "token run's model section: $(grep -A3 '"pad"' tokrun/run.json)"
run 0 wit-log verify tokrun
wit-log head tokrun >tok.head.json
run 0 wit-challenge -q --head tok.head.json --nonce "$(nonce 5)" -k 4 -o tok.c.json
run 0 wit-replay respond -q -j1 --run tokrun tok.c.json -o tok.wbundle
run 0 wit-replay verify -q -j2 --bundle tok.wbundle tok.c.json -o tok.report.json
# A vocabulary that does not cover the data's largest id: refused before anything is written.
run 0 "$PY" "$MODULE" --n-layer 1 --n-head 2 --d-model 32 --context 32 --vocab 290 -o m290.pt
config 290 >cfg290.json
run 2 wit-train -q -j1 --model m290.pt --config cfg290.json --data tok.commit.json --index tok.widx --key key --out tokbad tok.bin &&
  error_is wit-train "the data's token 298 is not below the model's vocab 290"
absent tokbad

# --- a run whose model.pt was swapped for another module
cp -r run swapped
run 0 "$PY" "$MODULE" --n-layer 2 --n-head 2 --d-model 32 --context 32 --vocab 257 -o other.pt
cp other.pt swapped/model.pt
run 2 wit-replay respond -q -j1 --run swapped c.json -o swapped.wbundle && error_is wit-replay 'model\.pt'
absent swapped.wbundle
run 2 wit-eval run -q -j1 --run swapped --commit ev.commit.json --index ev.widx -o sw.json --scores sw.scores.json ev.txt &&
  error_is wit-eval 'model\.pt'
absent sw.json sw.scores.json
run 2 wit-sketch fingerprint -j1 --run swapped -o sw.fp.json rel.safetensors && error_is wit-sketch 'model\.pt'
absent sw.fp.json
finish
