#!/usr/bin/env bash
# The README's walkthrough ("Certify your run"), exactly as printed: the
# fenced block is extracted from README.md and run with bash -e in a fresh
# directory holding train.txt, eval.txt (small, disjoint line files) and a
# copy of examples/ whose tiny-gpt.json trains 40 steps instead of 300. So
# the README can never drift from the tools: whatever it says is run here.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"
command -v jq >/dev/null || { echo "SKIP: jq is not installed (scripts/install-deps.sh)" >&2; exit 77; }

# The first ```sh block after the walkthrough's heading, verbatim.
awk '/^## Certify your run/ {h = 1; next}
     h && !inb && /^```sh$/ {inb = 1; next}
     inb && /^```$/ {exit}
     inb {print}' "$WIT_SRC/README.md" >walkthrough.sh
[ -s walkthrough.sh ] && ok || fail "no walkthrough block in README.md"
grep -q '^wit-train' walkthrough.sh && ok || fail "the walkthrough does not train: $(head -3 walkthrough.sh)"

mkdir work && cd work || exit 2
cp -rL "$WIT_SRC/examples" examples && rm -f examples/tiny-gpt.json
jq '.steps = 40' "$WIT_SRC/examples/tiny-gpt.json" >examples/tiny-gpt.json
for i in $(seq 1 240); do echo "training record $i: the quick brown fox jumps over the lazy dog $((i * 7919 % 1000))"; done >train.txt
for i in $(seq 1 40); do echo "held-out record $i: pack my box with five dozen liquor jugs $((i * 104729 % 1000))"; done >eval.txt

bash -e -o pipefail ../walkthrough.sh >../walk.out 2>../walk.err
rc=$?
if [ "$rc" -ne 0 ]; then
  fail "the walkthrough exited $rc"
  tail -n 15 ../walk.err | sed 's/^/  stderr: /' >&2
else
  ok
fi
# What it promises: a certified run on the board, and a site.
[ -f site/index.html ] && [ -f site/board.json ] && ok || fail "no site"
[ "$(jq -r '.runs[] | select(.name == "mine") | .status' site/board.json)" = certified ] && ok ||
  fail "the run is not certified: $(jq -c '.runs[] | {status, reason}' site/board.json 2>/dev/null)"
grep -q "was trained on at" ../walk.out && ok || fail "usage proof does not say where the record was trained on"

# "Your own architecture": its block, verbatim, in the same directory (it
# continues the walkthrough), with the module exported by Debian's PyTorch.
awk '/^### Your own architecture/ {h = 1; next}
     h && !inb && /^```sh$/ {inb = 1; next}
     inb && /^```$/ {exit}
     inb {print}' "$WIT_SRC/README.md" >../script.sh
grep -q -- '--model small.pt' ../script.sh && ok || fail "no TorchScript block in README.md"
jq '.steps = 12' "$WIT_SRC/examples/small-script.json" >examples/small-script.json
{ echo 'nonce() { od -An -N32 -tx1 /dev/urandom | tr -d " \n"; }'; cat ../script.sh; } >../script-run.sh
bash -e -o pipefail ../script-run.sh >../script.out 2>../script.err
rc=$?
[ "$rc" -eq 0 ] && ok || { fail "the TorchScript block exited $rc"; tail -n 15 ../script.err | sed 's/^/  stderr: /' >&2; }
[ "$(jq -r .verdict report-script.json)" = certified ] && ok || fail "the TorchScript run is not certified: $(head -c 300 report-script.json)"
cmp -s small.pt run-script/model.pt && ok || fail "the run does not keep the module it trained"
finish
