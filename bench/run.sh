#!/usr/bin/env bash
# Benchmarks of a built tree (`make bench` runs `bench/run.sh build`):
# wit-commit against b2sum on token files of 512 MiB and 1 GiB and on JSONL
# of 200,000 and 1,200,000 lines (bench/commit.sh), proof generation/verification at 10M leaves, and (in a build with
# LibTorch) the training-witness overhead of bench_train, the verifier's cost
# (verify.sh), the TorchScript path against the built-in GPT (torchscript.sh,
# when /usr/bin/python3 has torch) and, with WIT_BENCH_GPT2=1, GPT-2 small at
# 124M parameters (gpt2.sh: 40-50 minutes on 2 shared cores, so not by
# default). Prints tables; writes only inside temporary directories, removed
# on exit.
#
# Usage: bench/run.sh BUILD_DIR
# Environment: WIT_BENCH_TOKENS_MB (default "512 1024"), WIT_BENCH_JSONL_RECORDS
# (default "200000 1200000"), WIT_BENCH_COMMIT_REPS (default 5),
# WIT_BENCH_PROFILE (default 0) for bench/commit.sh; WIT_BENCH_PROOF_N (default 10000000),
# WIT_BENCH_GPT2 (default 0; 1 runs bench/gpt2.sh too).
set -euo pipefail
shopt -s inherit_errexit

die() { echo "bench/run.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || { echo "usage: bench/run.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
proofs="$build/bench/bench_proofs"
[ -x "$proofs" ] || die "bench_proofs is not built (is bench/ added to the build?): $proofs"

proof_n=${WIT_BENCH_PROOF_N:-10000000}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wit-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

rows=()
row() { rows+=("| $1 | $2 | $3 | $4 |"); }

echo "wit bench: $(nproc) cores, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')" >&2
echo "wit bench: load average $(cut -d' ' -f1-3 /proc/loadavg), page cache warm" >&2

# a. Committing against b2sum: token files and JSONL (bench/commit.sh prints
# its own table, with its profile when WIT_BENCH_PROFILE=1).
commit_table=$("$(dirname "$0")/commit.sh" "$build")

# c. Proofs at n leaves.
echo "wit bench: proofs at n = $proof_n (building the index takes a while)" >&2
"$proofs" --n "$proof_n" --dir "$tmp" > "$tmp/proofs.txt"
get() { sed -n "s/^$1=//p" "$tmp/proofs.txt"; }
# under VALUE TARGET: the headroom, target / value (>= 1 meets the target).
under() { awk -v v="$1" -v t="$2" 'BEGIN { printf "%.1fx", t / v }'; }
for kind in inc exc; do
  name=$([ $kind = inc ] && echo inclusion || echo exclusion)
  for stat in median p99; do
    v=$(get "${kind}_prove_doc_${stat}_us")
    row "$name proof, generate ($stat)" "$v us" "< 1000 us" "$(under "$v" 1000)"
  done
  for stat in median p99; do
    v=$(get "${kind}_verify_doc_${stat}_us")
    row "$name proof, verify ($stat)" "$v us" "< 100 us" "$(under "$v" 100)"
  done
  v=$(get "${kind}_verify_median_us")
  row "$name proof, verify hashes only (median)" "$v us" "" ""
  row "$name proof size, JSON document" "$(get "${kind}_doc_bytes") B" "" ""
  row "$name proof size, raw hashes" "$(get "${kind}_raw_bytes") B" "" ""
done
row "index at n = $proof_n" "$(awk -v b="$(get index_bytes)" 'BEGIN { printf "%.0f MB", b / 1e6 }')" "" ""

# d. The training-witness benchmark, when the build has LibTorch (it prints
# its own table).
train="$build/bench/bench_train"
train_table=""
if [ -x "$train" ]; then
  echo "wit bench: training witness overhead (bench_train)" >&2
  train_table=$("$train" --dir "$tmp")
fi

echo
echo "$commit_table"
echo
echo "| metric | value | target | ratio |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "ratio: target / measured (>= 1 meets the target)."
echo "Proof times include the index lookup and the JSON document (generate), and parsing the document (verify)."
if [ -n "$train_table" ]; then
  echo
  echo "$train_table"
fi
# e. The verifier's cost against training (needs the LibTorch tools).
if [ -x "$build/bin/wit-replay" ]; then
  echo
  "$(dirname "$0")/verify.sh" "$build"
fi
# f. TorchScript models: the same shape through --model against the built-in
# GPT, and (by request: it takes most of an hour here) GPT-2 small.
if [ -x "$train" ] && /usr/bin/python3 -c 'import torch' 2> /dev/null; then
  "$(dirname "$0")/torchscript.sh" "$build"
  if [ "${WIT_BENCH_GPT2:-0}" = 1 ]; then
    "$(dirname "$0")/gpt2.sh" "$build"
  else
    echo
    echo "GPT-2 small (124M parameters): WIT_BENCH_GPT2=1 bench/run.sh $1, or bench/gpt2.sh $1 alone (40-50 minutes)."
  fi
elif [ -x "$train" ]; then
  echo "wit bench: /usr/bin/python3 cannot import torch: no TorchScript benchmarks (apt-get install python3-torch)" >&2
fi
