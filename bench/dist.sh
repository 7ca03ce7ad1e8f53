#!/usr/bin/env bash
# Witnessing overhead of data-parallel training (never part of the tests):
# trains the same config in one process, as 2 data-parallel ranks and as 2
# ranks with sharded optimizer state (--shard) and as 2 fully sharded ranks
# (--shard=full), each with and without
# witnesses (the hidden --bench-no-witnesses: the same steps, no sketches,
# entries, probes, checkpoints or heads), and prints per step: the wall time
# of the training loop with and without witnesses and the overhead (their
# ratio - 1; the best of WIT_BENCH_DIST_REPS runs each), rank 0's time in the
# witnesses themselves, and the bytes each rank sends per step for the
# gradients and for the witnesses. Writes only inside a temporary
# directory, removed on exit. The machine should be otherwise idle, with a
# core per rank: on a loaded machine the ranks' skew dominates.
#
# Usage: bench/dist.sh BUILD_DIR
# Environment: WIT_BENCH_DIST_STEPS (default 40), WIT_BENCH_DIST_SIZES
# (default "2:128 4:256": n_layer:d_model pairs), WIT_BENCH_DIST_REPS (default 2),
# WIT_BENCH_DIST_EVERY (default 50: a probe and a checkpoint every that many
# steps, as a real run would space them; the witness time includes them),
# WIT_BENCH_DIST_BATCHES (default 8: batch sizes, each of 64 tokens a row, so
# the overhead is seen as a function of tokens per step),
# WIT_BENCH_DIST_MODES (default "single dp sharded full").
set -euo pipefail

die() { echo "bench/dist.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || { echo "usage: bench/dist.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
bin=$build/bin
[ -x "$bin/wit-train" ] || die "wit-train is not built: $bin/wit-train"
export OPENBLAS_NUM_THREADS=1
steps=${WIT_BENCH_DIST_STEPS:-100}
every=${WIT_BENCH_DIST_EVERY:-50}
sizes=${WIT_BENCH_DIST_SIZES:-"2:128 4:256"}
reps=${WIT_BENCH_DIST_REPS:-2}
modes=${WIT_BENCH_DIST_MODES:-"single dp sharded full"}
batches=${WIT_BENCH_DIST_BATCHES:-8}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wit-bench-dist.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
for i in $(seq 1 2000); do printf 'record %d: %s\n%%\n' "$i" "$(printf '%*s' $((i % 90 + 10)) '' | tr ' ' 'a')"; done >data.txt
"$bin/wit-commit" --reader fortune -q -o data.commit.json data.txt >/dev/null 2>&1 || die "wit-commit failed"
"$bin/wit-log" keygen -o key >/dev/null 2>&1

get() { sed -n "s/^ *\"$2\": \([0-9.e+-]*\),\{0,1\}\$/\1/p" "$1"; }

# best MODE_ARGS...: runs the config REPS times, leaves the fastest run's stats in best.json.
best() {
  local i w bw=""
  for ((i = 0; i < reps; i++)); do
    rm -rf R
    "$bin/wit-train" -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key --out R \
      --stats stats.json "$@" data.txt || die "wit-train failed: $*"
    w=$(get stats.json wall_seconds)
    if [ -z "$bw" ] || awk -v x="$w" -v y="$bw" 'BEGIN { exit !(x < y) }'; then bw=$w; cp stats.json best.json; fi
  done
}

printf '%-8s %9s %7s %12s %14s %9s %11s %16s %19s\n' mode params tokens "ms/step" "ms/step bare" overhead \
  "witness ms" "grad B/rank/step" "witness B/rank/step"
for batch in $batches; do
for size in $sizes; do
  L=${size%%:*} D=${size##*:}
  cat >cfg.json <<CFG
{"model": {"n_layer": $L, "n_head": 4, "d_model": $D, "context": 64},
 "batch_size": $batch, "steps": $steps, "checkpoint_every": $every, "head_every": 10,
 "fingerprint": {"sketch_k": 512, "probe_every": $every, "probe_records": 8, "probe_dim": 64},
 "seed": "be7cbe7cbe7cbe7cbe7cbe7cbe7cbe7cbe7cbe7cbe7cbe7cbe7cbe7cbe7cbe7c"}
CFG
  params=$((L * (12 * D * D + 13 * D) + (257 + 64) * D + 2 * D))
  for mode in $modes; do
    extra=()
    case $mode in
      dp) extra=(--nproc 2) ;;
      sharded) extra=(--nproc 2 --shard) ;;
      full) extra=(--nproc 2 --shard=full) ;;
    esac
    best --bench-no-witnesses "${extra[@]}"
    bare=$(get best.json wall_seconds)
    best "${extra[@]}"
    wall=$(get best.json wall_seconds) wt=$(get best.json witness_seconds)
    gb=$(get best.json grad_bytes_per_rank) wb=$(get best.json witness_bytes_per_rank)
    pb=$(get best.json param_bytes_per_rank)
    awk -v m="$mode" -v p="$params" -v k=$((batch * 64)) -v w="$wall" -v b="$bare" -v wt="$wt" -v gb="$gb" -v pb="${pb:-0}" -v wb="$wb" 'BEGIN {
      printf "%-8s %9d %7d %12.2f %14.2f %8.2f%% %11.3f %16.0f %19.0f\n", m, p, k, w * 1000, b * 1000, 100 * (w / b - 1), wt * 1000, gb + pb, wb }'
  done
done
done
