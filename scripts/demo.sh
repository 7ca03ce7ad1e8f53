#!/usr/bin/env bash
# The end-to-end demo on Debian's fortunes corpus: split it deterministically
# into train and eval sets, commit both, answer data-usage questions with
# proofs verified from the commitment alone, and train a small GPT with
# witnesses that anyone can check, then challenge it with a fresh nonce and
# verify the trainer's answer by replay. Evaluation and the leaderboard join
# as they land.
set -euo pipefail
BUILD=${1:-build}
BIN=$(cd "$BUILD/bin" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${WIT_DEMO_OUT:-demo-out}
FORTUNES=/usr/share/games/fortunes
export PATH="$BIN:$PATH" OPENBLAS_NUM_THREADS=1

mkdir -p "$OUT"
cd "$OUT"
say() { printf '\n== %s\n' "$*"; }

say "1. data: Debian's fortunes, de-duplicated, split deterministically (every 10th is held out)"
files=()
for f in "$FORTUNES"/*; do
  case "$f" in *.dat | *.u8) continue ;; esac
  [ -f "$f" ] && files+=("$f")
done
# The same fortune appears in several files; held-out data must not repeat training data.
awk 'BEGIN { RS = "\n%\n"; n = 0 }
     NF && !seen[$0]++ { n++; out = (n % 10 == 0) ? "eval.txt" : "train.txt"; printf "%s\n%%\n", $0 > out }' "${files[@]}"

say "2. commit both sets (root = dataset order, sorted_root = sorted unique records)"
wit-commit --reader fortune -o train.commit.json train.txt
wit-commit --reader fortune -o eval.commit.json eval.txt
grep -E '"(n|n_unique|root|sorted_root)"' train.commit.json

say "3. inclusion: a training fortune, with its proof verified from the commitment alone"
trained=$(awk 'BEGIN{RS="\n%\n"} NR==42{printf "%s", $0; exit}' train.txt)
printf '%s\n' "$trained" | sed 's/^/    | /'
wit-query include --commit train.commit.json --index train.widx --text "$trained" --embed-record -o included.proof.json
wit-query verify --commit train.commit.json included.proof.json

say "4. exclusion: a held-out fortune was not trained on"
held=$(awk 'BEGIN{RS="\n%\n"} NR==7{printf "%s", $0; exit}' eval.txt)
printf '%s\n' "$held" | sed 's/^/    | /'
wit-query exclude --commit train.commit.json --index train.widx --text "$held" -o excluded.proof.json
wit-query verify --commit train.commit.json excluded.proof.json

say "5. contamination certificate: no eval fortune is in the training data"
wit-query contamination --commit train.commit.json --index train.widx -o contamination.json eval.txt
wit-query verify --commit train.commit.json contamination.json

say "6. train a small GPT with witnesses (${WIT_DEMO_STEPS:-300} steps; per-step losses, sketches, signed heads)"
steps=${WIT_DEMO_STEPS:-300}
sed "s/\"steps\": [0-9]*/\"steps\": $steps/" "$ROOT/examples/tiny-gpt.json" >tiny-gpt.json
[ -f trainer.key ] || wit-log keygen -o trainer.key
wit-train --config tiny-gpt.json --data train.commit.json --index train.widx --key trainer.key --out run train.txt
wit-log show run --from "$steps" --to "$steps"
wit-log head run

say "7. anyone checks the log: heads, signatures, consistency, genesis = init regenerated from the revealed seed"
wit-log verify run

say "8. the released model is bound to the run by its probe fingerprint"
final=$(ls run/ckpt/*.safetensors | tail -n 1)
wit-sketch match --run run "$final"

say "9. a verifier challenges the run with a fresh nonce; the trainer responds; the verifier replays"
nonce=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
wit-log head run >head.json
wit-challenge --head head.json --nonce "$nonce" --confidence 0.9 --fraction 0.1 -o challenge.json
wit-replay respond --run run challenge.json -o response.wbundle
wit-replay verify --bundle response.wbundle challenge.json -o report.json

say "done: artifacts are in $(pwd)"
ls -l
