#!/usr/bin/env bash
# The full demo (make demo): Debian's fortunes corpus split into train and
# eval sets, both committed; a small GPT trained with witnesses, and a second
# run that secretly trains on undeclared data; both challenged, answered and
# replayed; evaluated and spot-checked; the eval set certified clean; a usage
# proof ("this fortune was trained on at steps ...") and an exclusion proof;
# a defined leaderboard that draws its own challenges, replays the answers,
# certifies the honest run and rejects the tampered one on evidence that
# `wit-board audit` re-verifies.
# Every artifact is a file target of examples/Makefile: rerun any step with
# `make -C examples OUT=... TARGET`. Usage: scripts/demo.sh [BUILD]
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${WIT_DEMO_OUT:-demo-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STEPS=${WIT_DEMO_STEPS:-300}
export PATH="$BUILD/bin:$PATH" OPENBLAS_NUM_THREADS=1
start=$(date +%s)

say() { printf '\n== %s\n' "$*"; }
mk() { make --no-print-directory -C "$ROOT/examples" BUILD="$BUILD" OUT="$OUT" STEPS="$STEPS" "${@/#/$OUT/}"; }
quote() { sed 's/^/    | /'; }
# The n-th fortune of a file (records are separated by lines holding '%').
fortune() { awk -v n="$2" 'BEGIN { RS = "\n%\n" } NR == n { printf "%s", $0; exit }' "$1"; }
show_fortune() { fortune "$@" | quote; echo; }

say "1. data: Debian's fortunes, de-duplicated, every 10th held out; both sets committed"
mk train.commit.json eval.commit.json
wit-commit show "$OUT/train.commit.json"
wit-commit show "$OUT/eval.commit.json" | head -n 3

say "2. train a small GPT with witnesses ($STEPS steps), and a tampered run"
echo "   The tampered run uses wit's own loop but trains on undeclared records on 30% of its steps,"
echo "   logging its witnesses as if it were honest."
mk honest/run/seed tampered/run/seed
echo "   the honest run's last log entry (wit-log show; sketches and probe summarised):"
wit-log show "$OUT/honest/run" --from "$STEPS" --to "$STEPS" |
  jq -r '"   step \(.step): lr \(.lr), mean loss \(.mean_loss), grad norm \(.grad_norm), \(.losses | length) per-example losses,\n   batch_root \(.batch_root)\n   state_root \(.state_root)\n   sketch \(.sketch.n) floats (l2 \(.sketch.l2)), probe \(.probe.n) floats"'
wit-log verify "$OUT/honest/run"
wit-log verify "$OUT/tampered/run"
echo "   Both logs are well formed and signed: the log alone cannot tell them apart. Replay can."

say "3. a verifier challenges each run with a fresh nonce; the trainer responds; the verifier replays"
mk honest/report.json tampered/report.json
for r in honest tampered; do
  printf '   %-9s %s\n' "$r:" "$(jq -r '.verdict + (if .reason then " (" + .reason + ")" else "" end)' "$OUT/$r/report.json")"
done

say "4. evaluate the final checkpoint on the eval set; spot-check the scores with a nonce"
mk honest/eval-check.json tampered/eval-check.json
jq -r '"   honest eval: loss \(.loss), accuracy \(.accuracy) over \(.n) fortunes"' "$OUT/honest/eval.json"
jq -r '"   spot check: \(.verdict), \(.k) of \(.n) examples re-evaluated"' "$OUT/honest/eval-check.json"

say "5. contamination certificate: no eval fortune is in the training data"
mk contamination.json
wit-query verify --commit "$OUT/train.commit.json" "$OUT/contamination.json"

say "6. usage: a training fortune, and the steps at which the honest run trained on it"
n=42
until wit-query usage -q --run "$OUT/honest/run" --commit "$OUT/train.commit.json" --index "$OUT/train.widx" \
  --text "$(fortune "$OUT/train.txt" $n)" -o "$OUT/usage.proof.json" 2>/dev/null; do
  n=$((n + 1))  # this one was in no batch of the run: try the next
  [ $n -lt 200 ] || { echo "no fortune among 42..199 was trained on" >&2; exit 1; }
done
show_fortune "$OUT/train.txt" $n
wit-query verify --commit "$OUT/train.commit.json" "$OUT/usage.proof.json"

say "7. exclusion: a held-out fortune was not trained on"
show_fortune "$OUT/eval.txt" 7
wit-query exclude -q --commit "$OUT/train.commit.json" --index "$OUT/train.widx" \
  --text "$(fortune "$OUT/eval.txt" 7)" -o "$OUT/excluded.proof.json"
wit-query verify --commit "$OUT/train.commit.json" "$OUT/excluded.proof.json"

say "8. the leaderboard: a defined board draws a challenge per run, the trainers answer, the board replays; it scores the weights"
echo "   The board's benchmark is the eval set; its key (outside the board folder) draws the nonces, so no"
echo "   trainer can choose them, and signs the board's own reports on the responses it replayed and its"
echo "   own scores of the released weights on its benchmark (with the causal check) and its audit of the"
echo "   training tree's sorted leaves. It ranks on a sealed split (every 20th fortune, kept outside the folder"
echo "   with its salts; only a salted commitment is published): the public score is feedback, and a gap test"
echo "   flags a run that does better on the published records than on the sealed ones."
mk site/index.html
# show exits 1 for a rejected run: that verdict is what the demo shows.
for b in honest tampered; do wit-board show "$OUT/board/runs/$b" | sed 's/^/   /' || true; echo; done

say "9. anyone re-verifies the board's verdicts from the stored evidence; the board draws again"
wit-board audit "$OUT/board" --sealed "$OUT/board.sealed.json"
wit-board challenge "$OUT/board/runs/honest" --key "$OUT/board.key" -o "$OUT/honest/board-challenge-again.json"
wit-board show "$OUT/board/runs/honest" | grep -E '^(honest|pending):' | sed 's/^/   /' || true
wit-replay respond --run "$OUT/honest/run" "$OUT/honest/board-challenge-again.json" -o "$OUT/honest/board-response-again.wbundle"
wit-board add "$OUT/board/runs/honest" "$OUT/honest/board-response-again.wbundle" --key "$OUT/board.key" \
  --sealed "$OUT/board.sealed.json" || true
wit-board build -q "$OUT/board" -o "$OUT/site"
wit-board show "$OUT/board/runs/honest" | grep -E '^(honest|challenges|confidence|eval|sealed|gap test):' | sed 's/^/   /' || true

say "done in $(($(date +%s) - start)) s"
echo "   the board:     file://$OUT/site/index.html  (and $OUT/site/board.json)"
echo "   the artifacts: $OUT  (rerun a step: make -C examples OUT=$OUT $OUT/honest/report.json)"
echo "   the board:     $OUT/board (board.def.json, runs/, responses/); its key: $OUT/board.key;"
echo "                  its sealed split (outside the folder until wit-board reveal): $OUT/board.sealed.json"
echo "   draw again:    wit-board challenge $OUT/board/runs/honest --key $OUT/board.key -o c.json"
