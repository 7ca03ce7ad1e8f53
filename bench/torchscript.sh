#!/usr/bin/env bash
# The TorchScript path against the built-in GPT of the same shape (issue 15;
# never part of the tests): examples/gpt2_module.py --names wit exports a
# module with the built-in GPT's parameter names and the same operations,
# and the same bare steps (wit-train --bench-no-witnesses) are timed with and
# without --model, at 1 and 2 LibTorch threads. Runs alternate (built-in,
# TorchScript, built-in, ...) so that a change in the machine's load hits
# both alike. Per run: the mean wall time of its steps (wit-train --stats,
# first step included) and the process CPU time per step, (CPU of the run -
# CPU of the same run stopped after 2 steps) / (steps - 2), which leaves out
# the set-up and the first steps' warm-up; the table gives medians over
# runs. Also bench_train --versus: both models in one process, their steps
# alternating, medians of each step's wall and process CPU time and of the
# per-pair ratio TorchScript / built-in. On a shared machine the wall times swing
# with the load (10x between runs has been seen); CPU time is the measure to
# read. Target: the TorchScript path costs no more than 10% extra per step.
#
# Usage: bench/torchscript.sh BUILD_DIR
# Environment: WIT_BENCH_TS_SHAPE (default "4:4:256:128:8": n_layer:n_head:
# d_model:context:batch), WIT_BENCH_TS_THREADS (default "1 2"),
# WIT_BENCH_TS_STEPS (steps per wit-train run, default 12), WIT_BENCH_TS_RUNS
# (runs per model and thread count, default 5), WIT_BENCH_TS_REPS (bench_train
# step pairs timed, default 15). 5 minutes on a quiet 2-core machine, 25 under
# heavy load (a 10% share of a core).
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

cpu_run() {  # cpu_run MODE THREADS [ARGS]: one wit-train run; prints its CPU seconds (user + sys)
  local mode=$1 t=$2 extra=()
  shift 2
  [ "$mode" = script ] && extra=(--model wit.pt)
  rm -rf run
  /usr/bin/time -f '%U %S' -o cpu.time "$bin/wit-train" -q -j"$t" --bench-no-witnesses --config "$mode.json" \
    "${extra[@]}" --data data.commit.json --index data.widx --out run --stats stats.json "$@" data.txt ||
    die "wit-train failed ($mode, $t threads)"
  tail -n 1 cpu.time | awk '{ printf "%.3f", $1 + $2 }'
}
one_run() {  # one_run MODE THREADS: prints the run's mean wall step seconds and CPU seconds per step
  local short long wall
  short=$(cpu_run "$1" "$2" --stop-after 2)
  long=$(cpu_run "$1" "$2")
  wall=$(stat_of stats.json step_seconds)
  echo "$wall $(calc "($long - $short) / ($steps - 2)")"
}

rows=()
for t in $threads; do
  : > "builtin$t.s"
  : > "script$t.s"
  for ((r = 0; r < runs; r++)); do
    one_run builtin "$t" >> "builtin$t.s"
    one_run script "$t" >> "script$t.s"
  done
  mb=$(cut -d' ' -f1 "builtin$t.s" | median) ms=$(cut -d' ' -f1 "script$t.s" | median)
  cb=$(cut -d' ' -f2 "builtin$t.s" | median) cs=$(cut -d' ' -f2 "script$t.s" | median)
  log "threads $t: wit-train step $mb s built-in, $ms s TorchScript; CPU $cb s, $cs s (medians of $runs runs)"
  # bench_train --versus: both models in one process, steps alternating.
  "$bt" --model wit.pt --versus "$L:$H:$D" --threads "$t" --reps "$reps" --batch "$B" --context "$C" > vs.kv 2> vs.err ||
    { cat vs.err >&2; die "bench_train --versus failed"; }
  bench=$(awk -v bw="$(kv vs.kv builtin_step_ms)" -v bc="$(kv vs.kv builtin_step_cpu_ms)" -v sw="$(kv vs.kv script_step_ms)" \
    -v sc="$(kv vs.kv script_step_cpu_ms)" -v rw="$(kv vs.kv ratio_wall)" -v rc="$(kv vs.kv ratio_cpu)" \
    'BEGIN { printf "%.0f / %.0f ms | %.0f / %.0f ms | **%+.1f%%** / %+.1f%%", bc, bw, sc, sw, 100 * (rc - 1), 100 * (rw - 1) }')
  log "threads $t: bench_train --versus: TorchScript / built-in $(kv vs.kv ratio_cpu) (CPU), $(kv vs.kv ratio_wall) (wall)"
  rows+=("| $t | $(awk -v b="$cb" -v s="$cs" -v wb="$mb" -v ws="$ms" 'BEGIN { printf "%.0f / %.0f ms | %.0f / %.0f ms | **%+.1f%%** / %+.1f%%", 1000 * b, 1000 * wb, 1000 * s, 1000 * ws, 100 * (s / b - 1), 100 * (ws / wb - 1) }') | $bench |")
done

params=$((L * (12 * D * D + 13 * D) + (257 + C) * D + 2 * D))
echo
echo "### TorchScript against the built-in GPT: n_layer $L, n_head $H, d_model $D, context $C, batch $B ($((B * C)) tokens/step), vocab 257, $params parameters"
echo
echo "$(date -u +%F), $(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg); \`bench/torchscript.sh\`."
echo
echo "| threads | wit-train built-in: CPU / wall per step | wit-train --model: CPU / wall | TorchScript extra: CPU / wall | bench_train --versus, built-in: CPU / wall | TorchScript: CPU / wall | TorchScript extra (median of pairs): CPU / wall |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "wit-train (--bench-no-witnesses, $steps steps): medians over $runs alternating runs of the process CPU time per step (steps 3 to $steps: the run less the same run stopped after 2 steps) and of the mean wall time per step (all $steps steps); bench_train --versus: $reps pairs of steps after 2 untimed ones each. CPU time counts all threads. Target: TorchScript extra <= 10%."
log "done in $(( $(date +%s) - t_start )) s"
