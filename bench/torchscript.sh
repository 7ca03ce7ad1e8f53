#!/usr/bin/env bash
# The TorchScript path against the built-in GPT of the same shape (issue 15;
# never part of the tests): examples/gpt2_module.py --names wit exports a
# module with the built-in GPT's parameter names and the same operations,
# and the same bare steps (wit-train --bench-no-witnesses) are timed with and
# without --model, at 1 and 2 LibTorch threads. Runs alternate (built-in,
# TorchScript, built-in, ...) so that a change in the machine's load hits
# both alike; the table gives the median over runs of each run's mean step
# time (its first step included), and, from bench_train --step-only (one
# process per model, median of its steps), the step's wall and process CPU
# time. Target: the TorchScript path costs no more than 10% extra per step.
#
# Usage: bench/torchscript.sh BUILD_DIR
# Environment: WIT_BENCH_TS_SHAPE (default "4:4:256:128:8": n_layer:n_head:
# d_model:context:batch), WIT_BENCH_TS_THREADS (default "1 2"),
# WIT_BENCH_TS_STEPS (steps per wit-train run, default 12), WIT_BENCH_TS_RUNS
# (runs per model and thread count, default 5), WIT_BENCH_TS_REPS (bench_train
# steps timed, default 15). About 5 minutes on the 2-core machine under load.
set -euo pipefail
shopt -s inherit_errexit

die() { echo "bench/torchscript.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || { echo "usage: bench/torchscript.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bin
bt=$build/bench/bench_train
py=/usr/bin/python3
[ -x "$bin/wit-train" ] || die "wit-train is not built: $bin/wit-train"
[ -x "$bt" ] || die "bench_train is not built (a build with LibTorch): $bt"
"$py" -c 'import torch' 2> /dev/null || die "$py cannot import torch (apt-get install python3-torch)"
export OPENBLAS_NUM_THREADS=1

IFS=: read -r L H D C B <<< "${WIT_BENCH_TS_SHAPE:-4:4:256:128:8}"
threads=${WIT_BENCH_TS_THREADS:-"1 2"}
steps=${WIT_BENCH_TS_STEPS:-12}
runs=${WIT_BENCH_TS_RUNS:-5}
reps=${WIT_BENCH_TS_REPS:-15}
fortunes=/usr/share/games/fortunes
[ -d "$fortunes" ] || die "no fortune text in $fortunes (apt-get install fortunes-min)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wit-bench-ts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
t_start=$(date +%s)
log() { echo "bench torchscript: [$(( $(date +%s) - t_start ))s] $*" >&2; }
calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
stat_of() { sed -n "s/^ *\"$2\": \([0-9.e+-]*\),\{0,1\}\$/\1/p" "$1"; }
kv() { sed -n "s/^$2=//p" "$1"; }

log "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); n_layer $L, n_head $H, d_model $D, context $C, batch $B"
"$py" "$root/examples/gpt2_module.py" --names wit --slim --n-layer "$L" --n-head "$H" --d-model "$D" \
  --context "$C" --vocab 257 -o wit.pt > export.out
log "$(cat export.out)"
awk 'BEGIN{RS="\n%\n"} NR<=4000 {printf "%s\n%%\n", $0}' "$fortunes/fortunes" "$fortunes/literature" > data.txt
"$bin/wit-commit" -q --reader fortune -o data.commit.json --index data.widx data.txt
common="\"batch_size\": $B, \"steps\": $steps, \"seed\": \"$(printf '5eed%.0s' {1..16})\""
echo "{\"model\": {\"n_layer\": $L, \"n_head\": $H, \"d_model\": $D, \"context\": $C}, $common}" > builtin.json
echo "{\"model\": {\"vocab\": 257, \"context\": $C}, $common}" > script.json

one_run() {  # one_run MODE THREADS: prints the run's mean step seconds
  local extra=()
  [ "$1" = script ] && extra=(--model wit.pt)
  rm -rf run
  "$bin/wit-train" -q -j"$2" --bench-no-witnesses --config "$1.json" "${extra[@]}" --data data.commit.json \
    --index data.widx --out run --stats stats.json data.txt || die "wit-train failed ($1, $2 threads)"
  stat_of stats.json step_seconds
}

rows=()
for t in $threads; do
  : > "builtin$t.s"
  : > "script$t.s"
  for ((r = 0; r < runs; r++)); do
    one_run builtin "$t" >> "builtin$t.s"
    one_run script "$t" >> "script$t.s"
  done
  mb=$(median < "builtin$t.s") ms=$(median < "script$t.s")
  log "threads $t: wit-train step $mb s built-in, $ms s TorchScript (medians of $runs runs)"
  # bench_train: in-process medians of the bare step, wall and CPU; built-in first, then TorchScript.
  : > bb.kv
  if [ "$L:$H:$D" = 4:4:256 ]; then  # bench_train's built-in sizes: 3M is this shape
    "$bt" --step-only --threads "$t" --reps "$reps" --batch "$B" --context "$C" --sizes 3M --dir "$tmp" > bb.kv 2> /dev/null ||
      die "bench_train failed (built-in)"
  fi
  "$bt" --step-only --threads "$t" --reps "$reps" --batch "$B" --context "$C" --model wit.pt --vocab 257 \
    --dir "$tmp" > bs.kv 2> /dev/null || die "bench_train failed (TorchScript)"
  if [ -s bb.kv ]; then
    bench=$(awk -v bw="$(kv bb.kv step_ms)" -v bc="$(kv bb.kv step_cpu_ms)" -v sw="$(kv bs.kv step_ms)" \
      -v sc="$(kv bs.kv step_cpu_ms)" 'BEGIN { printf "%.0f / %.0f ms | %.0f / %.0f ms | %+.1f%% / %+.1f%%", bw, bc, sw, sc, 100 * (sw / bw - 1), 100 * (sc / bc - 1) }')
  else
    bench="| |"
  fi
  rows+=("| $t | $(calc "$mb * 1000" | xargs printf '%.0f') ms | $(calc "$ms * 1000" | xargs printf '%.0f') ms | $(calc "100 * ($ms / $mb - 1)" | xargs printf '%+.1f')% | $bench |")
done

params=$((L * (12 * D * D + 13 * D) + (257 + C) * D + 2 * D))
echo
echo "### TorchScript against the built-in GPT: n_layer $L, n_head $H, d_model $D, context $C, batch $B ($((B * C)) tokens/step), vocab 257, $params parameters"
echo
echo "$(date -u +%F), $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg); \`bench/torchscript.sh\`."
echo
echo "| threads | wit-train built-in | wit-train --model | TorchScript extra | bench_train built-in, wall / CPU | bench_train TorchScript, wall / CPU | TorchScript extra, wall / CPU |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "wit-train: median over $runs alternating runs of each run's mean bare step ($steps steps, --bench-no-witnesses, first step included); bench_train --step-only: median of $reps steps after 2 untimed ones. Target: TorchScript extra <= 10%."
log "done in $(( $(date +%s) - t_start )) s"
