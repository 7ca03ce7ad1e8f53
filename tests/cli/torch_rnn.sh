#!/usr/bin/env bash
# Any scriptable module trains (issue 25, docs/model.md): torch.nn's GRU,
# LSTM (two layers) and TransformerEncoder, exported with Debian's PyTorch by
# examples/rnn_module.py, are described (wit-train --describe: per parameter
# its shape, init and decay rule, nothing written), trained, and wit-train's
# own step 2 is PyTorch's bit for bit (tests/torch/golden_adamw.py: the
# module's forward with the checkpoint's parameters set in place, so GRU and
# LSTM's cached _flat_weights see them, and torch.optim.AdamW); every step
# replays certified; eval and release binding work. Modules wit cannot
# handle are refused before anything is written, saying what to change: a
# parameter held in a tuple, a parameter forward never uses, a parameter no
# default init rule covers (and a config rule for it is honoured).
source "$(dirname "$0")/lib.sh"
need_torch_references  # sets PY, GOLDEN, INPUTS, MODULE
corpus 72 all.txt
head -n 60 all.txt >data.txt
tail -n 12 all.txt >ev.txt
commit_and_key
run 0 wit-commit -q -o ev.commit.json ev.txt
cat >cfg.json <<'CFG'
{"model": {"vocab": 257, "context": 32},
 "optimizer": {"lr": 0.003, "weight_decay": 0.1, "grad_clip": 1.0},
 "schedule": {"warmup": 2, "min_lr_ratio": 0.1},
 "batch_size": 4, "steps": 4, "checkpoint_every": 1, "head_every": 2,
 "fingerprint": {"sketch_k": 64, "probe_every": 2, "probe_records": 4, "probe_dim": 16},
 "seed": "5c415c415c415c415c415c415c415c415c415c415c415c415c415c415c415c41"}
CFG
doc_recipe manifest.md order.py
train() {  # train WANT MODEL CONFIG OUT
  run "$1" wit-train -q -j1 --model "$2" --config "$3" --data data.commit.json --index data.widx --key key --out "$4" data.txt
}

for arch in gru lstm transformer; do
  layers=1
  [ "$arch" = gru ] || layers=2
  run 0 "$PY" "$MODULE" --arch "$arch" --n-layer "$layers" --d-model 32 --context 32 -o "$arch.pt"
  # --describe: one line per parameter, nothing written.
  run 0 wit-train --describe --model "$arch.pt" --config cfg.json
  cp out "$arch.describe"
  grep -q '^emb.weight  *\[257, 32\]  *normal std 0.02  init\[5\] {"match":"\*","ndim":2}  *yes' out && ok ||
    fail "$arch: describe emb.weight: $(cat out)"
  grep -q '^head.bias  *\[257\]  *zeros  init\[0\] {"match":"\*bias"}  *no' out && ok || fail "$arch: describe head.bias: $(cat out)"
  ls -A | grep -qx "$arch" && fail "--describe wrote $arch" || ok

  train 0 "$arch.pt" cfg.json "$arch"
  run 0 wit-log verify "$arch"
  same_file "$arch.pt" "$arch/model.pt"
  # wit-train's step 2 against PyTorch's, bit for bit.
  run 0 "$PY" "$INPUTS" --run "$arch" --data data.txt --step 2 --order order.py --batch "$arch.batch.json" \
    --info "$arch.info.json" || cat err
  run 0 "$PY" "$GOLDEN" --module "$arch/model.pt" --state-in "$arch/ckpt/step-000001.safetensors" \
    --batch "$arch.batch.json" --info "$arch.info.json" --state-out "$arch/ckpt/step-000002.safetensors"
  grep -qx 'golden: bit-identical' out && ok || { fail "$arch: wit-train's step 2 is not PyTorch's"; cat out; }
  # Every step replays and is certified; eval and the release binding.
  certify "$arch" 3 4
  run 0 wit-eval run -q -j1 --run "$arch" --commit ev.commit.json --index ev.widx -o "$arch.eval.json" \
    --scores "$arch.scores.json" ev.txt
  [ "$(json_get "$arch.eval.json" step)" = 4 ] && ok || fail "$arch: eval.json: $(head -c 300 "$arch.eval.json")"
  run 0 wit-sketch export --run "$arch" -o "$arch.rel.safetensors" "$arch/ckpt/step-000004.safetensors"
  run 0 wit-sketch match --run "$arch" "$arch.rel.safetensors"
  grep -q "^match: the file's parameters are exactly the final state's (step 4)" out && ok || fail "$arch: release: $(cat out)"
  run 1 wit-sketch match --run "$arch" "$arch/ckpt/step-000003.safetensors"
done
# The RNN gate parameters get the RNN rules, by name.
grep -q '^rnn.bias_ih_l0  *\[96\]  *zeros  init\[2\] {"match":"\*bias_\*","ndim":1}  *no' gru.describe && ok ||
  fail "gru bias_ih_l0: $(cat gru.describe)"
grep -q '^rnn.weight_hh_l1  *\[128, 32\]  *normal std 0.02' lstm.describe && ok || fail "lstm weight_hh_l1: $(cat lstm.describe)"
grep -q '^enc.layers.1.norm2.weight  *\[32\]  *ones  init\[1\] {"match":"\*weight","ndim":1}  *no' transformer.describe && ok ||
  fail "transformer norm2.weight: $(cat transformer.describe)"

# --- modules wit cannot handle: refused before anything is written
cat >bad_modules.py <<'PY'
import torch, torch.nn as nn
from typing import Tuple

class Tupled(nn.Module):  # the parameters also held in a tuple
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(257, 8)
        self.proj = nn.Linear(8, 257)
        self.both: Tuple[torch.Tensor, torch.Tensor] = (self.proj.weight, self.proj.bias)
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(self.emb(tokens), self.both[0], self.both[1])

class Unused(nn.Module):  # a parameter forward never uses
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(257, 8)
        self.proj = nn.Linear(8, 257)
        self.spare = nn.Linear(8, 8)
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.proj(self.emb(tokens))

class Gain(nn.Module):  # a vector no default rule covers by its name
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(257, 8)
        self.gain = nn.Parameter(torch.ones(8))
        self.proj = nn.Linear(8, 257)
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.proj(self.emb(tokens) * self.gain)

for cls, name in ((Tupled, "tupled.pt"), (Unused, "unused.pt"), (Gain, "gain.pt")):
    torch.jit.script(cls().eval()).save(name)
PY
run 0 "$PY" bad_modules.py || cat err
train 2 tupled.pt cfg.json bad-tuple && error_is wit-train "attribute 'both\[0\]' holds parameter 'proj.weight' inside a tuple"
absent bad-tuple
train 2 unused.pt cfg.json bad-unused && error_is wit-train "parameter 'spare.bias' gets no gradient"
absent bad-unused
train 2 gain.pt cfg.json bad-gain && error_is wit-train "no init rule covers parameter 'gain' \[8\]"
absent bad-gain
run 2 wit-train --describe --model gain.pt --config cfg.json && error_is wit-train "no init rule covers parameter 'gain'"
# A config rule for it comes before the defaults; the other parameters keep theirs.
jq '.model.init = [{"match": "gain", "init": "ones"}]' cfg.json >cfg-gain.json
run 0 wit-train --describe --model gain.pt --config cfg-gain.json
grep -q '^gain  *\[8\]  *ones  init\[0\] {"match":"gain"}  *no' out && ok || fail "gain rule: $(cat out)"
grep -q '^proj.bias  *\[257\]  *zeros  init\[1\] {"match":"\*bias"}' out && ok || fail "defaults after the config's: $(cat out)"
train 0 gain.pt cfg-gain.json gain
run 0 wit-log verify gain
finish
