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

# "Put your run on a board": its two blocks, verbatim, in a fresh directory
# holding the walkthrough's finished run and a new board with a sealed split
# (10 of eval.txt's records sealed); the test plays the board in between
# (draws a challenge) and after (replays the answer, scores the weights).
section() {  # section N: the Nth ```sh block after "## Put your run on a board"
  awk -v want="$1" '/^## Put your run on a board/ {h = 1; next}
       h && /^## / {exit}
       h && !inb && /^```sh$/ {inb = 1; n++; next}
       inb && /^```$/ {inb = 0; next}
       inb && n == want {print}' "$WIT_SRC/README.md"
}
section 1 >../board1.sh
section 2 >../board2.sh
[ "$(grep -c '^wit-' ../board1.sh ../board2.sh | awk -F: '{s += $2} END {print s}')" -le 6 ] && ok ||
  fail "'Put your run on a board' has more than six commands: $(cat ../board1.sh ../board2.sh)"
grep -q '^wit-board pack --board board' ../board1.sh && ok || fail "no pack --board in the section: $(cat ../board1.sh)"
mkdir ../lab && cp -r run train.commit.json train.widx eval.txt eval.commit.json ../lab/ && cd ../lab || exit 2
run 0 wit-board init board --name lab --key lab.key --benchmark eval.commit.json --sealed lab.sealed.json --split 10 eval.txt
bash -e -o pipefail ../board1.sh >../board1.out 2>../board1.err && ok ||
  { fail "the section's first block exited non-zero"; tail -n 8 ../board1.err | sed 's/^/  stderr: /' >&2; }
grep -q 'the board says: lab: pending (no board challenge drawn yet)' ../board1.err && ok ||
  fail "pack does not say what the board will say: $(cat ../board1.err)"
# The lean bundle: no trainer eval, the benchmark as its eval set, a clean certificate of it made by pack.
members=$(ls board/runs/lab | tr "\n" " ")
for m in eval.json eval.scores.json eval-checks; do
  [ -e "board/runs/lab/$m" ] && fail "the lean bundle holds $m" || ok
done
cmp -s board/runs/lab/eval.commit.json board/benchmark/eval.commit.json && ok || fail "the eval set is not the board's benchmark ($members)"
[ "$(json_get board/runs/lab/contamination.json clean)" = true ] && ok || fail "no clean certificate in the bundle"
# In its compact form (one multiproof), which wit-query verify reads as the full one.
jq -e '.multiproof and (has("absent") | not)' board/runs/lab/contamination.json >/dev/null && ok || fail "the certificate is not compact"
run 0 wit-query verify --commit train.commit.json --eval board/benchmark/records/public.txt board/runs/lab/contamination.json
grep -q '^valid: the certificate covers all' "$T/out" && ok || fail "wit-query verify of the compact certificate: $(cat "$T/out")"
run 0 wit-board challenge board/runs/lab --key lab.key
bash -e -o pipefail ../board2.sh >../board2.out 2>../board2.err && ok ||
  { fail "the section's second block exited non-zero"; tail -n 8 ../board2.err | sed 's/^/  stderr: /' >&2; }
run 0 wit-board add board/runs/lab answer.wbundle --key lab.key --sealed lab.sealed.json
# pack --released exported the released weights itself: wit-sketch export's bytes, bound exactly.
run 0 wit-sketch export --run run -o exported.safetensors "$(ls run/ckpt/step-*.safetensors | tail -n 1)"
cmp -s exported.safetensors released.safetensors && ok || fail "pack --released differs from wit-sketch export"
[ "$(json_get board/runs/lab/model.binding.json match)" = true ] && ok || fail "pack --released did not bind the weights"
run 2 wit-board pack --board board -o r2.wbundle --name r2 --run run --data-commit train.commit.json --released released.safetensors &&
  error_is wit-board 'output exists'
absent r2.wbundle
# A final checkpoint that is not the logged final state (one byte changed) is refused; nothing is written.
cp -r run run-edited
ck=$(ls run-edited/ckpt/step-*.safetensors | tail -n 1)
printf '\x01' | dd of="$ck" bs=1 seek=$(($(stat -c %s "$ck") - 3)) conv=notrunc status=none
run 2 wit-board pack -o e.wbundle --name e --run run-edited --data-commit train.commit.json --released e.safetensors &&
  error_is wit-board 'the final checkpoint is not the state the run logged at its final step'
absent e.wbundle e.safetensors
run 0 wit-board evaluate board/runs/lab released.safetensors --key lab.key --sealed lab.sealed.json
run 0 wit-board build board -o site
[ "$(jq -r '.runs[] | select(.name == "lab") | .status' site/board.json)" = certified ] && ok ||
  fail "the lean run is not certified: $(jq -c '.runs[] | {status, reason}' site/board.json 2>/dev/null)"
# The same path as one make target on any data (examples/Makefile's on-board): a new run of
# train.txt (lines), packed for this board and submitted, pending its board challenges.
run 0 make -s -C ../work/examples on-board DATA="$(cd ../work && pwd)/train.txt" READER=lines BOARD="$PWD/board" NAME=mk \
  OUT="$PWD/mk" STEPS=12 BIN="$WIT_BIN"
[ "$(wit-board show --json board/runs/mk | jq -r .status)" = pending ] && [ -f board/runs/mk/contamination.json ] && ok ||
  fail "make on-board did not put a pending run with its certificate on the board: $(wit-board show board/runs/mk 2>&1 | head -3)"
# pack --board refuses, before writing anything, what the board would refuse: an eval set that is not the
# benchmark; on a board without a sealed split (it ranks on published records), a bundle with no
# contamination certificate of them. With the data index it makes the certificate itself.
printf 'another record\n' >other.txt
run 0 wit-commit -q -o other.commit.json other.txt
run 2 wit-board pack --board board -o o.wbundle --name o --run run --data-commit train.commit.json --eval-commit other.commit.json &&
  error_is wit-board 'the run is evaluated on another eval set'
absent o.wbundle
run 0 wit-board init open --name open --key open.key --benchmark eval.commit.json eval.txt
run 2 wit-board pack --board open -o o.wbundle --name o --run run --data-commit train.commit.json --released o.safetensors &&
  error_is wit-board 'board open has no sealed split: it ranks on its published benchmark, so a run needs a contamination certificate'
absent o.wbundle
absent o.safetensors
run 0 wit-board pack --board open -o o.wbundle --name o --run run --data-commit train.commit.json --data-index train.widx \
  --released o.safetensors
cmp -s o.safetensors released.safetensors && ok || fail "a second pack --released exported other bytes"
grep -q 'the board says: o: pending (no board challenge drawn yet)' "$T/err" && ok || fail "pack --board open: $(cat "$T/err")"
run 2 wit-board pack -o o2.wbundle --name o --run run --data-commit train.commit.json --data-index train.widx &&
  error_is wit-board -- '--data-index is for --board'
absent o2.wbundle
# A second pack of the same run for this board is refused before anything is written: one run, one entry.
run 2 wit-board pack --board board -o again.wbundle --name again --run run --data-commit train.commit.json &&
  error_is wit-board 'is already on the board as lab: one run, one entry'
absent again.wbundle
finish
