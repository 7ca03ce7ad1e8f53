#!/usr/bin/env bash
# Released models on a real (tiny) run (docs/release.md): the final
# parameters exported params-only match exactly (also from the optimizer root
# alone, without the checkpoint), an earlier checkpoint's do not and the
# first differing tensor is named, a file of another shape or dtype is bad
# input; wit-eval run evaluates the released file as the final state; the
# probe check passes an honest black-box wrapper of the final model, rejects
# an earlier model, and turns a failing, slow or garbled model command into a
# one-line error with exit 2 and no report.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3

for i in $(seq 1 144); do printf 'record %d of a small corpus for training and evaluation\n%%\n' "$i"; done >train.txt
head -c 2000 train.txt >ev.txt
run 0 wit-commit --reader fortune -q -o train.commit.json train.txt
run 0 wit-commit --reader fortune -q -o ev.commit.json ev.txt
cat >cfg.json <<'CFG'
{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": 4, "steps": 8, "checkpoint_every": 4, "head_every": 4,
 "fingerprint": {"sketch_k": 64, "probe_every": 4, "probe_records": 4, "probe_dim": 16},
 "seed": "e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1"}
CFG
run 0 wit-log keygen -o key
run 0 wit-train -q -j1 --config cfg.json --data train.commit.json --index train.widx --key key --out A train.txt

# --- exact binding
run 0 wit-sketch export --run A A/ckpt/step-000008.safetensors -o rel.safetensors
run 0 wit-sketch export --run A A/ckpt/step-000004.safetensors -o rel4.safetensors
run 0 wit-sketch match --run A rel.safetensors
grep -q "^match: the file's parameters are exactly the final state's (step 8)" out && ok || fail "honest release: $(cat out)"
grep -q "probe (information only" out && ok || fail "no probe distance shown"
run 0 wit-sketch match --json --run A rel.safetensors
O=$(sed 's/.*"optim_root":"\([0-9a-f]*\)".*/\1/' out)
run 1 wit-sketch match --run A rel4.safetensors
grep -q "^no match: tensor 'h.0.attn.proj.bias' is not the final state's (step 8)" out && ok || fail "earlier model: $(cat out)"
# The full final checkpoint is bound by its parameters too.
run 0 wit-sketch match --run A A/ckpt/step-000008.safetensors
# An auditor with the public files only: the optimizer root from a match report.
mkdir -p pub && cp A/run.json A/run.wlog A/probe.json A/seed pub/
run 2 wit-sketch match --run pub rel.safetensors
error_is wit-sketch "no checkpoint of the final step"
run 0 wit-sketch match --run pub --optim-root "$O" rel.safetensors
run 1 wit-sketch match --run pub --optim-root "$O" rel4.safetensors
grep -q "^no match: H(parameters root || optimizer root) is not the state root" out && ok || fail "pub no match: $(cat out)"
run 2 wit-sketch match --run pub --optim-root 1234 rel.safetensors
error_is wit-sketch "--optim-root is not 64 hex digits"
# Another shape or dtype, a missing or an extra tensor: bad input.
edit() {  # edit IN OUT MODE: rewrite a safetensors file's header
  "$PY" - "$@" <<'PYEOF'
import json, struct, sys
src, dst, mode = sys.argv[1:]
raw = open(src, "rb").read(); n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n]); data = raw[8 + n:]
t = {k: [v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]] for k, v in h.items() if k != "__metadata__"}
if mode == "dtype": t["wte"][0] = "I32"
if mode == "missing": del t["wpe"]
if mode == "extra": t["extra"] = list(t["wpe"])
hdr, body = {}, b""
for k in sorted(t):
    hdr[k] = {"dtype": t[k][0], "shape": t[k][1], "data_offsets": [len(body), len(body) + len(t[k][2])]}
    body += t[k][2]
hb = json.dumps(hdr).encode(); hb += b" " * (-len(hb) % 8)
open(dst, "wb").write(struct.pack("<Q", len(hb)) + hb + body)
PYEOF
}
if [ -x "$PY" ]; then
  edit rel.safetensors dtype.safetensors dtype
  run 2 wit-sketch match --run A dtype.safetensors
  error_is wit-sketch "tensor 'wte' has the wrong dtype or shape"
  edit rel.safetensors missing.safetensors missing
  run 2 wit-sketch match --run A missing.safetensors
  error_is wit-sketch "model lacks tensor 'wpe'"
  edit rel.safetensors extra.safetensors extra
  run 2 wit-sketch match --run A extra.safetensors
  error_is wit-sketch "model has an unexpected tensor 'extra'"
fi

# --- wit-eval run on the released file: the final checkpoint's eval, byte for byte
run 0 wit-eval run -q -j1 --run A --commit ev.commit.json --checkpoint rel.safetensors -o e1.json --scores s1.json ev.txt
run 0 wit-eval run -q -j1 --run A --commit ev.commit.json -o e2.json --scores s2.json ev.txt
same_file e1.json e2.json
same_file s1.json s2.json
run 2 wit-eval run -q -j1 --run A --commit ev.commit.json --checkpoint rel4.safetensors -o e3.json --scores s3.json ev.txt
error_is wit-eval "the released model is not the run's final state: tensor 'h.0.attn.proj.bias'"
absent e3.json s3.json

# --- probe check of a black-box model
N=$(printf '%064x' 5)
pc() { wit-sketch probe-check -j1 --run A --nonce "$N" --records 24 --random 8 "$@"; }
run 0 pc --model-cmd "wit-sketch serve -j1 --run A rel.safetensors" -o pc.json
grep -q '"verdict": "match"' pc.json && grep -q '"format": "wit.probe-check"' pc.json && ok || fail "honest probe check: $(cat pc.json)"
grep -q '^wit-sketch: match: largest per-token difference' err && grep -q 'fails these 32 fresh probes with probability at least' err &&
  ok || fail "probe check summary: $(cat err)"
run 1 pc --model-cmd "wit-sketch serve -j1 --run A rel4.safetensors" -o pc4.json
grep -q '"verdict": "no match"' pc4.json && ok || fail "earlier model passed the probe check"
# The draw is the nonce's: the same inputs, the same report.
run 0 pc --model-cmd "wit-sketch serve -j1 --run A rel.safetensors" -o pc2.json
same_file pc.json pc2.json
run 2 pc --model-cmd false -o x.json
error_is wit-sketch "the model command failed \\(exit 1\\)"
run 2 pc --model-cmd "sleep 30" --timeout 1 -o x.json
error_is wit-sketch "the model command did not answer within 1 s"
run 2 pc --model-cmd "echo hello" -o x.json
error_is wit-sketch "answer line 1 is not a JSON object"
run 2 pc --model-cmd "wit-sketch serve -j1 --run A rel.safetensors | head -n 3" -o x.json
error_is wit-sketch "no answer for id 3"
run 2 pc --model-cmd "wit-sketch serve -j1 --run A rel.safetensors | sed 's/\\[-/[/'" -o x.json
error_is wit-sketch "answer line 1 has a log-probability that is not finite and <= 0"
run 2 wit-sketch probe-check --run A --model-cmd cat -o x.json
error_is wit-sketch "missing --nonce"
absent x.json

finish
