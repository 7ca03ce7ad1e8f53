#!/usr/bin/env bash
# The verifier's cost against the training it checks: a 2,000-step run of a
# small GPT, challenged at 99% confidence against f = 5% (k from
# wit-challenge), next to re-running the whole training and to
# Proof-of-Learning-style top-Q segment replay (Q = 2 checkpoint intervals per
# epoch); exact (default) and --tolerant verification; the trainer's cost to
# respond and the bytes per challenge in each mode. Prints a table; never a
# test. WIT_BENCH_STEPS scales T down (k stays the one for 99% vs f = 5% of T).
set -euo pipefail
BUILD=${1:-build}
BIN=$(cd "$BUILD/bin" && pwd)
export PATH="$BIN:$PATH" OPENBLAS_NUM_THREADS=1
STEPS=${WIT_BENCH_STEPS:-2000}
tmp=$(mktemp -d /tmp/wit-bench-verify.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

awk 'BEGIN{RS="\n%\n"} NR<=4000 {printf "%s\n%%\n", $0}' /usr/share/games/fortunes/fortunes /usr/share/games/fortunes/computers \
  /usr/share/games/fortunes/science /usr/share/games/fortunes/literature >data.txt
wit-commit -q --reader fortune -o data.commit.json data.txt
n=$(sed -n 's/^  "n": \([0-9]*\),/\1/p' data.commit.json)
cat >cfg.json <<CFG
{"model": {"n_layer": 2, "n_head": 2, "d_model": 64, "context": 64},
 "batch_size": 8, "steps": $STEPS, "checkpoint_every": 100, "head_every": 100,
 "fingerprint": {"sketch_k": 256, "probe_every": 100, "probe_records": 8, "probe_dim": 32}}
CFG
echo "bench verify: training $STEPS steps on $n records" >&2
t0=$(now); wit-train -q -j1 --config cfg.json --data data.commit.json --index data.widx --out run --stats train.stats.json data.txt; t1=$(now)
train=$(secs "$t0" "$t1")
wit-log head run >head.json
nonce=$(printf '%064x' 2026)
wit-challenge -q --head head.json --nonce "$nonce" --confidence 0.99 --fraction 0.05 -o ch.json
k=$(sed -n 's/^    "k": \([0-9]*\),/\1/p' ch.json)
t0=$(now); wit-replay respond -q -j1 --run run ch.json -o r.wbundle; t1=$(now)
respond=$(secs "$t0" "$t1")
t0=$(now); wit-replay respond -q -j1 --tolerant --run run ch.json -o t.wbundle; t1=$(now)
respond_t=$(secs "$t0" "$t1")
# Exact (the default): one replay per transition under the recorded configuration.
t0=$(now); wit-replay verify -q --bundle r.wbundle ch.json -o report.json; t1=$(now)
verify=$(secs "$t0" "$t1")
# Tolerant: three replays per transition (its own noise), end states in the bundle.
t0=$(now); wit-replay verify -q --tolerant -j2 --bundle t.wbundle ch.json -o report_t.json; t1=$(now)
verify_t=$(secs "$t0" "$t1")
# Per challenge: the replayed transition's checks (the start state decoded and
# hashed, the step, the replay's root and sketches) against one bare training step.
step_s=$(sed -n 's/^ *"step_seconds": \([0-9.e-]*\),*/\1/p' train.stats.json)
per_check=$(grep -o '"seconds": [0-9.e-]*' report.json | awk '{ s += $2; n++ } END { printf "%.6f", s / n }')
per_check_t=$(grep -o '"seconds": [0-9.e-]*' report_t.json | awk '{ s += $2; n++ } END { printf "%.6f", s / n }')
bundle_bytes=$(stat -c %s r.wbundle)
bundle_bytes_t=$(stat -c %s t.wbundle)
epochs=$(calc "($STEPS * 8) / $n")
q=$(printf '%.0f' "$(calc "2 * $epochs")")
[ "$q" -lt 1 ] && q=1
wit-challenge -q --run run --nonce "$nonce" -k 1 --segments "$q" -o seg.json
wit-replay respond -q -j1 --run run seg.json -o seg.wbundle
t0=$(now); wit-replay verify -q --bundle seg.wbundle seg.json -o seg.report.json; t1=$(now)
pol=$(secs "$t0" "$t1")
ratio() { printf '%.4f' "$(calc "$1 / $2")"; }
echo
echo "| measurement | seconds | fraction of training |"
echo "|---|---|---|"
echo "| training, $STEPS steps with witnesses | $(printf '%.1f' "$train") | 1 |"
echo "| verifier, exact (default): k=$k challenges (99% vs f=5%), one replay each | $(printf '%.1f' "$verify") | $(ratio "$verify" "$train") |"
echo "| verifier, --tolerant: same challenges, three replays each (per-tensor noise) | $(printf '%.1f' "$verify_t") | $(ratio "$verify_t" "$train") |"
echo "| k/T (the ideal: one step per challenge) | | $(ratio "$k" "$STEPS") |"
echo "| target: 1.3 x k/T | | $(ratio "1.3 * $k" "$STEPS") |"
echo "| re-running the whole training | $(printf '%.1f' "$train") | 1 |"
echo "| PoL-style top-Q replay: Q=$q intervals of 100 steps ($(printf '%.2f' "$epochs") epochs) | $(printf '%.1f' "$pol") | $(ratio "$pol" "$train") |"
echo "| trainer's cost to respond, exact response (one start state per run of adjacent challenged steps) | $(printf '%.1f' "$respond") | $(ratio "$respond" "$train") |"
echo "| trainer's cost to respond, --tolerant response (both ends) | $(printf '%.1f' "$respond_t") | $(ratio "$respond_t" "$train") |"
echo
echo "| per challenge | value |"
echo "|---|---|"
echo "| bare training step (wit-train --stats) | $(printf '%.2f' "$(calc "$step_s * 1000")") ms |"
echo "| one replayed transition, exact, all its checks | $(printf '%.2f' "$(calc "$per_check * 1000")") ms ($(ratio "$per_check" "$step_s") x a bare step; target <= 1.3) |"
echo "| one replayed transition, tolerant, all its checks | $(printf '%.2f' "$(calc "$per_check_t * 1000")") ms ($(ratio "$per_check_t" "$step_s") x a bare step) |"
params=$(wit-log show run --from 0 --to 0 | grep -o '"n_params":[0-9]*' | cut -d: -f2)
echo "| response bundle, exact | $bundle_bytes bytes for $k challenges: $(printf '%.0f' "$(calc "$bundle_bytes / $k / 1000")") kB per challenge (at most one state of $(printf '%.0f' "$(calc "$params * 12 / 1000")") kB) |"
echo "| response bundle, --tolerant | $bundle_bytes_t bytes: $(printf '%.0f' "$(calc "$bundle_bytes_t / $k / 1000")") kB per challenge (start and end states, each once) |"
grep -q '"verdict": "certified"' report.json && echo "exact verdict: certified" || echo "exact verdict: NOT certified (see report.json)"
grep -q '"verdict": "certified"' report_t.json && echo "tolerant verdict: certified" || echo "tolerant verdict: NOT certified (see report_t.json)"
