#!/usr/bin/env bash
# Memory and bytes on the wire of fully sharded training (never part of the
# tests; docs/distributed.md, "Fully sharded state"): trains a GPT of about
# 128M parameters (byte vocabulary, 18 layers of d_model 768) for a few
# steps as 2 data-parallel ranks (replicated state), 2 ZeRO-1 ranks (--shard)
# and 2 fully sharded ranks (--shard=full), and prints per mode each rank's
# peak resident memory during the training loop (VmHWM, reset when the loop
# starts) against the analytic state of the mode, and the bytes each rank
# sent per step against the formula. Then the same formulas for N = 8 ranks
# and 1.3B parameters. Writes only inside a temporary directory.
#
# Usage: bench/fsdp.sh BUILD_DIR
# Environment: WIT_BENCH_FSDP_LAYERS (default 18), WIT_BENCH_FSDP_D (768),
# WIT_BENCH_FSDP_STEPS (2), WIT_BENCH_FSDP_BATCH (2), WIT_BENCH_FSDP_CONTEXT (64),
# WIT_BENCH_FSDP_HEADS (12), WIT_BENCH_FSDP_MODES ("dp zero1 full full-allreduce").
set -euo pipefail

die() { echo "bench/fsdp.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || { echo "usage: bench/fsdp.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
bin=$build/bin
[ -x "$bin/wit-train" ] || die "wit-train is not built: $bin/wit-train"
export OPENBLAS_NUM_THREADS=1
# Large blocks from mmap, never kept by malloc after free: resident memory
# then follows what the tensors hold (glibc's adaptive threshold would keep
# freed gathers in the heap).
export MALLOC_MMAP_THRESHOLD_=131072
L=${WIT_BENCH_FSDP_LAYERS:-18} D=${WIT_BENCH_FSDP_D:-768}
steps=${WIT_BENCH_FSDP_STEPS:-2} B=${WIT_BENCH_FSDP_BATCH:-2} C=${WIT_BENCH_FSDP_CONTEXT:-64}
modes=${WIT_BENCH_FSDP_MODES:-"dp zero1 full full-allreduce"}
N=2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wit-bench-fsdp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
for i in $(seq 1 200); do printf 'record %d: %s\n%%\n' "$i" "$(printf '%*s' $((i % 90 + 10)) '' | tr ' ' 'a')"; done >data.txt
"$bin/wit-commit" --reader fortune -q -o data.commit.json data.txt >/dev/null 2>&1 || die "wit-commit failed"
"$bin/wit-log" keygen -o key >/dev/null 2>&1
cat >cfg.json <<CFG
{"model": {"n_layer": $L, "n_head": ${WIT_BENCH_FSDP_HEADS:-12}, "d_model": $D, "context": $C},
 "batch_size": $B, "steps": 1000, "checkpoint_every": 1000, "head_every": 1000,
 "fingerprint": {"sketch_k": 512, "probe_every": 1000, "probe_records": 2, "probe_dim": 64},
 "seed": "f5d0be7cf5d0be7cf5d0be7cf5d0be7cf5d0be7cf5d0be7cf5d0be7cf5d0be7c"}
CFG
P=$((L * (12 * D * D + 13 * D) + (257 + C) * D + 2 * D))
wte=$((257 * D))
unit=$((12 * D * D + 13 * D))   # one block, the largest unit here
echo "model: $L layers, d_model $D, context $C: P = $P parameters; batch $B ($((B * C)) tokens per step), $steps steps, N = $N"
echo
printf '%-15s %14s %14s %16s %14s %14s %14s %14s\n' mode "rank0 peak MB" "rank1 peak MB" "state MB (formula)" \
  "gather B/step" "formula" "grad B/step" "formula"
echo "(peak: resident memory during the loop; bytes: sent per rank per step, the mean over the ranks)"
for mode in $modes; do
  extra=(--nproc $N)
  envs=()
  case $mode in
    zero1) extra+=(--shard) ;;
    full) extra+=(--shard=full) ;;
    full-allreduce) extra+=(--shard=full); envs=(WIT_REDUCE_SCATTER=allreduce) ;;
  esac
  rm -rf R
  env "${envs[@]}" "$bin/wit-train" -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key \
    --out R --stop-after "$steps" --bench-no-witnesses --stats stats.json "${extra[@]}" data.txt ||
    die "wit-train failed: $mode"
  jq -r --arg m "$mode" --argjson P "$P" --argjson N "$N" --argjson wte "$wte" --argjson U "$unit" '
    def mb: . / 1048576;
    # state bytes per rank: parameters, gradients, m, v
    (if $m == "dp" then 16 * $P elif $m == "zero1" then 8 * $P + 8 * $P / $N
     else 16 * $P / $N + 8 * $U end) as $state
    # bytes each rank sends per step, averaged over the ranks
    | (if ($m | startswith("full")) then 2 * ($N - 1) * 4 * ($P + $wte) / $N else 0 end) as $gather
    | (if $m == "full" then ($N - 1) * 4 * ($P + $wte) / $N + ($N - 1) * 8
       elif $m == "full-allreduce" then 2 * ($N - 1) * 4 * ($P + $wte) / $N + ($N - 1) * 8
       elif $m == "zero1" then 2 * ($N - 1) * 4 * $P / $N + ($N - 1) * 4 * $P / $N
       else 2 * ($N - 1) * 4 * $P / $N end) as $grad
    | [$m, (.loop_peak_rss_per_rank[0] | mb), (.loop_peak_rss_per_rank[1] | mb), ($state | mb),
       (.param_bytes_each_rank | add / length), $gather, (.grad_bytes_each_rank | add / length), $grad, .step_seconds]
    | "\(.[0])\t\(.[1])\t\(.[2])\t\(.[3])\t\(.[4])\t\(.[5])\t\(.[6])\t\(.[7])\t\(.[8])"' stats.json |
    awk -F'\t' '{ printf "%-15s %14.0f %14.0f %16.0f %14.0f %14.0f %14.0f %14.0f   (%.1f s/step)\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
done
echo
echo "state per rank from the formula (16 P / N fully sharded, plus one gathered block and its gradient):"
printf '%-10s %4s %14s %14s %14s %10s\n' params N "DP GB" "ZeRO-1 GB" "full GB" "full/DP"
for p in "$P 2" "$P 8" "1300000000 2" "1300000000 8"; do
  set -- $p
  # a 1.3B GPT of this shape: d_model 2048, 24 blocks of 12 d^2
  u=$(( $1 > 1000000000 ? 12 * 2048 * 2048 : unit ))
  awk -v P="$1" -v N="$2" -v U="$u" 'BEGIN { dp = 16 * P; z = 8 * P + 8 * P / N; f = 16 * P / N + 8 * U;
    printf "%-10.3g %4d %14.2f %14.2f %14.2f %10.3f\n", P, N, dp / 2^30, z / 2^30, f / 2^30, f / dp }'
done
