#!/usr/bin/env bash
# Benchmarks of a built tree (`make bench` runs `bench/run.sh build`):
# wit-commit throughput against b2sum on 1 GiB of tokens and on a 200,000-line
# JSONL file, proof generation/verification at 10M leaves, and (in a build with
# LibTorch) the training-witness overhead of bench_train, the verifier's cost
# (verify.sh), the TorchScript path against the built-in GPT (torchscript.sh,
# when /usr/bin/python3 has torch) and, with WIT_BENCH_GPT2=1, GPT-2 small at
# 124M parameters (gpt2.sh: 40-50 minutes on 2 shared cores, so not by
# default). Prints tables; writes only inside temporary directories, removed
# on exit.
#
# Usage: bench/run.sh BUILD_DIR
# Environment: WIT_BENCH_TOKENS_MB (default 1024), WIT_BENCH_JSONL_RECORDS
# (default 200000), WIT_BENCH_PROOF_N (default 10000000), WIT_BENCH_REPS (default 3),
# WIT_BENCH_GPT2 (default 0; 1 runs bench/gpt2.sh too).
set -euo pipefail
shopt -s inherit_errexit

die() { echo "bench/run.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || { echo "usage: bench/run.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
commit="$build/bin/wit-commit"
proofs="$build/bench/bench_proofs"
[ -x "$commit" ] || die "wit-commit is not built: $commit"
[ -x "$proofs" ] || die "bench_proofs is not built (is bench/ added to the build?): $proofs"
command -v b2sum > /dev/null || die "b2sum not found (coreutils)"
[ -x /usr/bin/time ] || die "GNU time not found at /usr/bin/time (apt-get install time)"

tokens_mb=${WIT_BENCH_TOKENS_MB:-1024}
jsonl_records=${WIT_BENCH_JSONL_RECORDS:-200000}
proof_n=${WIT_BENCH_PROOF_N:-10000000}
reps=${WIT_BENCH_REPS:-3}
fortunes=/usr/share/games/fortunes

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wit-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# best_of CMD...: runs CMD $reps times; prints the fastest wall time and that
# run's CPU time (user + sys), in seconds.
best_of() {
  local best="" cpu="" real user sys i
  local TIMEFORMAT='%R %U %S'
  for ((i = 0; i < reps; i++)); do
    { time "$@" > /dev/null 2> "$tmp/err"; } 2> "$tmp/time" || { cat "$tmp/err" >&2; die "failed: $*"; }
    read -r real user sys < "$tmp/time"
    if [ -z "$best" ] || awk -v x="$real" -v y="$best" 'BEGIN { exit !(x < y) }'; then
      best=$real
      cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    fi
  done
  echo "$best $cpu"
}
mbps() { awk -v bytes="$1" -v s="$2" 'BEGIN { printf "%.0f", bytes / 1e6 / s }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
size_of() { stat -c %s "$1"; }

rows=()
row() { rows+=("| $1 | $2 | $3 | $4 |"); }

echo "wit bench: $(nproc) cores, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')" >&2
echo "wit bench: load average $(cut -d' ' -f1-3 /proc/loadavg), best of $reps runs, page cache warm" >&2

# commit_vs_b2sum LABEL FILE ARGS...: times wit-commit (all cores, then -j1)
# against b2sum -l 256 on FILE, already in the page cache.
commit_vs_b2sum() {
  local label=$1 file=$2
  shift 2
  local bytes out t_b2 t_wit t_wit1 c_b2 c_wit c_wit1 b2 wit wit1
  bytes=$(size_of "$file")
  cat "$file" > /dev/null
  out=$(best_of b2sum -l 256 "$file")
  read -r t_b2 c_b2 <<< "$out"
  out=$(best_of "$commit" -q "$@" -o "$tmp/c.json" --index "$tmp/c.widx" "$file")
  read -r t_wit c_wit <<< "$out"
  out=$(best_of "$commit" -q -j1 "$@" -o "$tmp/c.json" --index "$tmp/c.widx" "$file")
  read -r t_wit1 c_wit1 <<< "$out"
  b2=$(mbps "$bytes" "$t_b2")
  wit=$(mbps "$bytes" "$t_wit")
  wit1=$(mbps "$bytes" "$t_wit1")
  # Peak memory: the largest resident set (GNU time's %M, KiB) less the input,
  # which is mapped and counts as resident once read; per record read.
  local rss records per_rec
  /usr/bin/time -f '%M' -o "$tmp/rss" "$commit" -q "$@" -o "$tmp/c.json" --index "$tmp/c.widx" "$file" 2> /dev/null
  rss=$(tail -n 1 "$tmp/rss")
  records=$(sed -n 's/^  "records": \([0-9]*\),$/\1/p' "$tmp/c.json")
  per_rec=$(awk -v r="$rss" -v b="$bytes" -v n="$records" 'BEGIN { v = (r * 1024 - b) / n; printf "%.0f", v < 0 ? 0 : v }')
  echo "wit bench: $label: $bytes bytes, $records records; wall (cpu) seconds: b2sum $t_b2 ($c_b2)," \
    "wit-commit $t_wit ($c_wit), wit-commit -j1 $t_wit1 ($c_wit1); peak RSS $rss KiB" >&2
  row "$label: b2sum -l 256" "$b2 MB/s" "" ""
  row "$label: wit-commit ($(nproc) threads)" "$wit MB/s" ">= 1.5x b2sum" "$(ratio "$wit" "$b2")x"
  row "$label: wit-commit -j1" "$wit1 MB/s" "" "$(ratio "$wit1" "$b2")x"
  row "$label: wit-commit peak memory beyond the mapped input" "$per_rec B/record" "<= 100 B/record" \
    "$(awk -v v="$per_rec" 'BEGIN { printf "%.1fx", (v > 0 ? 100 / v : 99) }')"
}

# a. 1 GiB of random uint16 tokens, 1024-token records.
echo "wit bench: writing ${tokens_mb} MiB of random tokens" >&2
head -c $((tokens_mb * 1024 * 1024)) /dev/urandom > "$tmp/tokens.bin"
commit_vs_b2sum "tokens ${tokens_mb} MiB" "$tmp/tokens.bin" --reader tokens --seq-len 1024
rm -f "$tmp/tokens.bin"

# b. JSONL records of 100-200 bytes of fortune text: printable ASCII, with '\'
# and '"' mapped to '/' and "'" so no JSON escaping is needed. Record i is a
# run of words starting at a pseudo-random word, so records rarely repeat.
[ -d "$fortunes" ] || die "no fortune text in $fortunes (apt-get install fortunes-min)"
echo "wit bench: writing $jsonl_records JSONL records" >&2
find "$fortunes" -type f ! -name '*.dat' ! -name '*.u8' -exec cat {} + |
  LC_ALL=C tr -c '\041-\176' ' ' | LC_ALL=C tr '\\"' "/'" |
  LC_ALL=C awk -v n="$jsonl_records" '
    { for (i = 1; i <= NF; i++) if ($i != "%") w[nw++] = $i }
    END {
      for (r = 0; r < n; r++) {
        want = 100 + (r * 7919) % 101
        p = (r * 104729 + int(r / 13)) % nw
        s = ""
        while (length(s) < want) { s = s (s == "" ? "" : " ") w[p]; p = (p + 1) % nw }
        s = substr(s, 1, want)
        printf "{\"id\":%d,\"text\":\"%s\"}\n", r, s
      }
    }' > "$tmp/records.jsonl"
commit_vs_b2sum "jsonl $jsonl_records records" "$tmp/records.jsonl" --reader jsonl
rm -f "$tmp/records.jsonl" "$tmp/c.json" "$tmp/c.widx"

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
echo "| metric | value | target | ratio |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "ratio: throughput relative to b2sum -l 256 on the same file; for times, target / measured (>= 1 meets the target)."
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
