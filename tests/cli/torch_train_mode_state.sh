#!/usr/bin/env bash
# A TorchScript module whose training-mode forward writes its own state
# (torch.nn.BatchNorm1d's running statistics) cannot be trained with
# "train_mode": true — its replay starts from a fresh load and would compute
# other steps. wit-train refuses it before it writes anything, naming the
# attribute (docs/model.md: the trial forward runs on zero parameters, so
# running_var is the one that moves); in eval mode (the default) the same module is
# stateless and trains.
source "$(dirname "$0")/lib.sh"
need_python_torch  # sets PY

cat >bn.py <<'PY'
import torch
class BN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(257, 16)
        self.bn = torch.nn.BatchNorm1d(16)
        self.head = torch.nn.Linear(16, 257)
    def forward(self, tokens):
        x = self.wte(tokens)
        x = self.bn(x.transpose(1, 2)).transpose(1, 2)
        return self.head(x)
torch.manual_seed(0)
torch.jit.script(BN()).save("bn.pt")
PY
run 0 "$PY" bn.py
for i in $(seq 1 24); do echo "record $i of a corpus"; done >data.txt
run 0 wit-commit -q -o data.commit.json data.txt
run 0 wit-log keygen -o key
config() {  # config EXTRA
  cat <<CFG
{"model": {"vocab": 257, "context": 16}, "optimizer": {"lr": 0.003},
 "batch_size": 4, "steps": 2, "checkpoint_every": 1, "head_every": 1,
 "fingerprint": {"sketch_k": 64, "probe_every": 1, "probe_records": 4, "probe_dim": 16},
 "seed": "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"$1}
CFG
}
config ', "train_mode": true' >train.json
config "" >eval.json
train() { wit-train -q -j1 --model bn.pt --data data.commit.json --index data.widx --key key "$@" data.txt; }

run 2 train --config train.json --out T
error_is wit-train "the model changed its attribute 'bn.running_var' during forward"
[ -e T ] && fail "a refused train_mode run left its run directory" || ok
run 0 train --config eval.json --out E
[ -f E/ckpt/step-000002.safetensors ] && ok || fail "the eval-mode run did not train"
finish
