#!/usr/bin/env bash
# What wit-train holds to check and read its --data (issue 38 item 5): the
# generated JSONL corpus of bench/commit_scale.sh (bench/jsonl_corpus.awk,
# about 185 bytes a record, in 8 files) committed with wit-commit, then
# wit-train (2 steps of a small model, -j1) on it, each under GNU time -v:
# wall and CPU seconds and peak resident memory. wit-train's data check takes
# the bounded way (the spilling commit, positions from the index) when the
# files pass 1/8 of wit-commit's default budget (128 MiB). Then the Dataset
# alone (BUILD_DIR/bench/bench_dataset), the whole way and the bounded way,
# each in its own process: the check's time, the cost of a record read at a
# random position (what a batch does), the data of a step of B records
# (B = 1, 8, 64, 512: step_us_BN), and peak memory; the bounded way reads
# its records on demand (docs/commitment.md, step 3). Not a test.
#
# Usage: bench/train_data.sh BUILD_DIR
# Environment: WIT_BENCH_TRAIN_RECORDS (default 4000000), WIT_BENCH_TRAIN_DIR
# (where the corpus and outputs go, default $TMPDIR or /tmp).
# Everything it writes is in one directory, removed on exit.
set -euo pipefail
die() { echo "bench/train_data.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || die "usage: bench/train_data.sh BUILD_DIR"
bin="$(cd "$1" && pwd)/bin"
for t in wit-commit wit-train wit-log; do [ -x "$bin/$t" ] || die "$t is not built: $bin/$t"; done
bds="$(cd "$1" && pwd)/bench/bench_dataset"
[ -x "$bds" ] || die "bench_dataset is not built: $bds"
[ -x /usr/bin/time ] || die "GNU time not found at /usr/bin/time (apt-get install time)"
gen=$(cat "$(dirname "$0")/jsonl_corpus.awk")
records=${WIT_BENCH_TRAIN_RECORDS:-4000000}
base=${WIT_BENCH_TRAIN_DIR:-${TMPDIR:-/tmp}}
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d "$base/wit-bench-train.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
timed() {  # timed NAME CMD...: prints "wall | cpu | maxrss" (stdout kept in NAME.out)
  local name=$1
  shift
  /usr/bin/time -v -o "$name.tv" "$@" >"$name.out" 2>"$name.err" || { cat "$name.err" >&2; die "failed: $*"; }
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, t, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + t[i] }
    /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident set size/ { m = $2 }
    END { printf "%.2f s | %.2f s | %.0f MiB\n", w, u + s, m / 1024 }' "$name.tv"
}
awk -v n="$records" -v s=8 "$gen"
bytes=$(cat shard-*.jsonl | wc -c)
cat >cfg.json <<'CFG'
{"model": {"n_layer": 1, "n_head": 2, "d_model": 16, "context": 48},
 "batch_size": 4, "steps": 2, "checkpoint_every": 2, "head_every": 2,
 "fingerprint": {"sketch_k": 64, "probe_every": 2, "probe_records": 2, "probe_dim": 8},
 "seed": "f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1"}
CFG
"$bin/wit-log" keygen -o key >/dev/null
c=$(timed commit "$bin/wit-commit" -q -o data.commit.json shard-*.jsonl)
t=$(timed train "$bin/wit-train" -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key \
  --out run shard-*.jsonl)
echo "$records generated JSONL records, $bytes bytes in 8 files ($(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| command | wall | CPU | peak RSS |"
echo "|---|---:|---:|---:|"
echo "| wit-commit -o data.commit.json FILE... | $c |"
echo "| wit-train -j1 (2 steps) --data data.commit.json --index data.widx FILE... | $t |"
for way in whole bounded; do
  t=$(timed "$way" "$bds" "$way" data.commit.json data.widx shard-*.jsonl --reads 200000)
  echo "| bench_dataset $way (check, then 200,000 reads): $(grep -E '^(on_demand|open_s|read_ns|step_us_B[0-9]+)=' "$way.out" | tr '\n' ' ')| $t |"
done
