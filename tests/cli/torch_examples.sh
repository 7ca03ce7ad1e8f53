#!/usr/bin/env bash
# examples/Makefile, the pipeline behind `make demo`, end to end on Debian's
# fortunes with a short run: the board certifies the honest run and rejects
# the tampered one; a second make does nothing; a new nonce file re-runs the
# challenge, its report and what depends on them, and nothing else.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"
[ -d /usr/share/games/fortunes ] || { echo "SKIP: Debian's fortunes are not installed (scripts/install-deps.sh)" >&2; exit 77; }
BUILD=$(cd "$WIT_BIN/.." && pwd)
OUT=$T/ex  # ($T/out is where run puts stdout)
# 40 steps; k drawn for 99.9% against 10% tampering (the tampered run tampers 30%).
mk() { make --no-print-directory -C "$WIT_SRC/examples" BUILD="$BUILD" OUT="$OUT" STEPS=40 CONFIDENCE=0.999 "$@"; }

run 0 mk board
[ -f "$OUT/site/index.html" ] && [ -f "$OUT/site/board.json" ] && ok || fail "no site"
status() { jq -r --arg n "$1" '.runs[] | select(.name == $n) | .status' "$OUT/site/board.json"; }
[ "$(status honest)" = certified ] && ok || fail "honest run: $(status honest)"
[ "$(status tampered)" = rejected ] && ok || fail "tampered run: $(status tampered)"
jq -r '.runs[] | select(.name == "tampered") | .reason' "$OUT/site/board.json" | grep -q "the board replayed the response and rejected the run" && ok ||
  fail "tampered reason: $(jq -r '.runs[].reason' "$OUT/site/board.json")"
jq -e '.runs[] | select(.name == "honest") | .contamination.clean == true' "$OUT/site/board.json" >/dev/null && ok ||
  fail "honest run's eval set not certified clean"

# Nothing changed: make has nothing to do.
run 0 mk -q board

# A new nonce: the honest run's challenge, response, report, bundle and board
# are redone; the training runs and the eval are not.
before=$(stat -c %Y "$OUT/honest/run/run.wlog") eval_before=$(stat -c %Y "$OUT/honest/eval.json")
sleep 1
printf '%064x' 7 >"$OUT/honest/challenge.nonce"
run 0 mk board
grep -q '"nonce": "0*7"' "$OUT/honest/challenge.json" && ok || fail "the challenge does not use the new nonce"
[ "$(stat -c %Y "$OUT/honest/run/run.wlog")" = "$before" ] && ok || fail "the run was retrained"
[ "$(stat -c %Y "$OUT/honest/eval.json")" = "$eval_before" ] && ok || fail "the eval was redone"
[ "$(status honest)" = certified ] && ok || fail "honest run after a new challenge: $(status honest)"

# A deleted nonce file is drawn anew, and only its chain is redone.
rm "$OUT/tampered/eval-check.nonce"
run 0 mk -n board
grep -q "tampered/eval-check.nonce" "$T/out" && grep -q "wit-eval check" "$T/out" && ok || fail "no new eval check planned"
# (a new eval check repacks the bundle, which goes on the board again and is challenged anew: a replay, not a retrain)
grep -q "wit-train\|wit-forge train\|wit-eval run" "$T/out" && fail "more than the eval check's chain: $(cat "$T/out")" || ok
run 0 mk board
[ "$(status tampered)" = rejected ] && ok || fail "tampered run after a new eval check: $(status tampered)"

# The same pipeline, unchanged, with a TorchScript module (MODEL=): the board
# certifies the honest run of that module and rejects the tampered one.
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  run 0 /usr/bin/python3 "$WIT_SRC/examples/gpt2_module.py" --n-layer 1 --n-head 2 --d-model 32 --context 64 --vocab 257 -o "$T/small.pt"
  OUT=$T/ex-script
  run 0 mk MODEL="$T/small.pt" board
  [ "$(status honest)" = certified ] && ok || fail "TorchScript honest run: $(status honest)"
  [ "$(status tampered)" = rejected ] && ok || fail "TorchScript tampered run: $(status tampered)"
  cmp -s "$T/small.pt" "$OUT/honest/run/model.pt" && ok || fail "the board's run does not keep the module"
else
  fail "Debian's python3-torch is missing (scripts/install-deps.sh installs it): the MODEL= pipeline is not checked"
fi
finish
