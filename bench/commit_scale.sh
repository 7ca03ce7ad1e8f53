#!/usr/bin/env bash
# Committing a corpus larger than memory (issue 38): generated JSONL records
# (about 200 bytes each), committed from a file and through `zstdcat |`
# within --memory, and the same split into 8 shards committed apart and
# merged (wit-commit merge). For each: wall and CPU seconds, peak resident
# memory (GNU time -v) and the temporary disk the spilled runs took (the
# summary line); b2sum of the corpus and a direct-I/O read of the shards'
# indexes are the references (merge throughput against reading the leaves
# from disk). Checks that every path gives the same root. Not a test: at
# the default 10^8 records it writes about 40 GB and runs for a long time.
#
# Usage: bench/commit_scale.sh BUILD_DIR
# Environment: WIT_BENCH_SCALE_RECORDS (default 100000000), WIT_BENCH_SCALE_MEMORY
# (--memory, default 1G), WIT_BENCH_SCALE_SHARDS (default 8), WIT_BENCH_SCALE_DIR
# (where the corpus and outputs go, default $TMPDIR or /tmp), WIT_BENCH_SCALE_PIPE
# (1: also through zstdcat |, default 1; skipped with a note when this wit-commit
# would hold the decompressed input in memory and it would not fit),
# WIT_BENCH_SCALE_ONLY (pipe: only the zstdcat | row, the corpus generated
# straight into its .zst, so the disk holds no uncompressed copy; default
# all rows).
# Everything it writes is in one directory, removed on exit.
set -euo pipefail
die() { echo "bench/commit_scale.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || die "usage: bench/commit_scale.sh BUILD_DIR"
commit="$(cd "$1" && pwd)/bin/wit-commit"
[ -x "$commit" ] || die "wit-commit is not built: $commit"
# The corpus generator (bench/jsonl_corpus.awk), read before the cd below.
gen=$(cat "$(dirname "$0")/jsonl_corpus.awk")
[ -x /usr/bin/time ] || die "GNU time not found at /usr/bin/time (apt-get install time)"
records=${WIT_BENCH_SCALE_RECORDS:-100000000}
memory=${WIT_BENCH_SCALE_MEMORY:-1G}
shards=${WIT_BENCH_SCALE_SHARDS:-8}
pipe=${WIT_BENCH_SCALE_PIPE:-1}
only=${WIT_BENCH_SCALE_ONLY:-}
[ -z "$only" ] || [ "$only" = pipe ] || die "WIT_BENCH_SCALE_ONLY is 'pipe' or empty"
base=${WIT_BENCH_SCALE_DIR:-${TMPDIR:-/tmp}}
export OPENBLAS_NUM_THREADS=1
# Phase times on stderr (docs/commitment.md, "Performance"), printed after the table.
export WIT_COMMIT_PHASES=1

# Disk at the most: the corpus (~185 B a record) with the commit's index and
# runs (~90), or with the shards' indexes and the merged index and its
# scratch (~90), or with its .zst (~50): ~300 B a record.
need=$((records * 300))
free=$(df -B1 --output=avail "$base" | tail -n 1)
[ "$free" -gt "$need" ] || die "needs about $((need >> 30)) GiB free in $base, has $((free >> 30)) GiB (set WIT_BENCH_SCALE_RECORDS lower)"
tmp=$(mktemp -d "$base/wit-bench-scale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
echo "wit bench commit_scale: $records records, --memory $memory, $shards shards; $(nproc) cores," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start; about $((need >> 30)) GiB of disk in $base" >&2

# timed NAME CMD...: runs CMD under GNU time -v (stderr kept in NAME.err);
# prints "wall cpu maxrss_mib".
timed() {
  local name=$1
  shift
  /usr/bin/time -v -o "$name.tv" "$@" >/dev/null 2>"$name.err" || { cat "$name.err" >&2; die "failed: $*"; }
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, t, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + t[i] }
    /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident set size/ { m = $2 }
    END { printf "%.2f %.2f %.0f\n", w, u + s, m / 1024 }' "$name.tv"
}
# The spilled runs' disk, from wit-commit's summary ("... (X of temporary disk, ...").
spilled() { sed -n 's/.*sorted and merged \([0-9]*\) spilled runs\{0,1\} (\([^)]*\) of temporary disk.*/\1 runs, \2/p' "$1.err"; }
rows=()
row() { rows+=("| $1 | $2 | $3 |"); }
fields() { read -r w c m <<<"$1"; echo "$w s | $c s | $m MiB"; }

# The corpus: JSONL lines of about 200 bytes, records drawn so that about 1%
# repeat an earlier one (so runs and shards share leaves), written straight
# into $shards files (shard-000.jsonl, ...; a single file plus a split copy
# would need twice the disk). "From files" is one wit-commit of them all.
# With stdout=1 the same records go to standard output, shard after shard.
t0=$(date +%s.%N)
if [ "$only" = pipe ]; then
  # One stream, the shards' records in order, compressed as it is made.
  awk -v n="$records" -v s="$shards" -v stdout=1 "$gen" | zstd -q -1 -T0 -o corpus.jsonl.zst
  echo "generated $records records into corpus.jsonl.zst ($(stat -c %s corpus.jsonl.zst) bytes) in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s" >&2
  mkfifo pipe
  zstdcat corpus.jsonl.zst >pipe &
  r=$(timed pipe "$commit" --reader jsonl --memory "$memory" -o pipe.commit.json pipe)
  wait
  bytes=$(sed -n 's/.*"size": \([0-9]*\).*/\1/p' pipe.commit.json)
  echo
  echo "Committing $records generated JSONL records (${bytes:-?} bytes) through zstdcat | within --memory $memory ($(nproc) cores; load average at the end $(cut -d' ' -f1-3 /proc/loadavg))"
  echo
  echo "| step | wall | CPU (wit-commit) | peak RSS | spilled runs, temporary disk |"
  echo "|---|---|---|---|---|"
  echo "| zstdcat \| wit-commit --memory $memory (a fifo) | $(fields "$r") | $(spilled pipe) |"
  echo "root: $(grep -m1 '"root"' pipe.commit.json)"
  echo
  echo "phases (WIT_COMMIT_PHASES=1; CPU counts all threads):"
  grep '^wit: phase' pipe.err | sed 's/^wit: phase /  /'
  exit 0
fi
awk -v n="$records" -v s="$shards" "$gen"
bytes=$(cat shard-*.jsonl | wc -c)
echo "generated $records records, $bytes bytes in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s" >&2

r=$(timed b2sum b2sum -l 256 shard-*.jsonl)
row "b2sum -l 256 of the corpus (reading it)" "$(fields "$r")" ""
r=$(timed file "$commit" --memory "$memory" -o file.commit.json shard-*.jsonl)
row "wit-commit --memory $memory FILE... (the $shards files in one commit)" "$(fields "$r")" "$(spilled file)"
root=$(grep -m1 '"root"' file.commit.json)
rm -f file.widx

if [ "$pipe" = 1 ]; then
  # A pipe is read whole into memory by a wit-commit without the streaming
  # reader (issue 38 item 2): only run it where that fits.
  mem_kib=$(awk '/MemAvailable/ { print $2 }' /proc/meminfo)
  if [ $((bytes / 1024 * 3 / 2)) -lt "$mem_kib" ]; then
    cat shard-*.jsonl | zstd -q -1 -T0 -o corpus.jsonl.zst
    mkfifo pipe
    zstdcat corpus.jsonl.zst >pipe &
    r=$(timed pipe "$commit" --reader jsonl --memory "$memory" -o pipe.commit.json pipe)
    wait
    row "zstdcat \| wit-commit --memory $memory (a fifo)" "$(fields "$r")" "$(spilled pipe)$(grep -q 'spilled run' pipe.err || echo 'none: a pipe is read whole (the ordinary path)')"
    [ "$(grep -m1 '"root"' pipe.commit.json)" = "$root" ] || die "the pipe's root differs from the files'"
    rm -f corpus.jsonl.zst pipe.commit.json pipe.widx
  else
    row "zstdcat \| wit-commit" "skipped | | " "this wit-commit would hold the pipe whole ($((bytes >> 20)) MiB), more than the memory available"
  fi
fi

# The shards committed apart, one after the other (each on all cores), then merged.
sw=0 sc=0 sm=0
for f in shard-*.jsonl; do
  r=$(timed "${f%.jsonl}" "$commit" -q --memory "$memory" -o "${f%.jsonl}.commit.json" "$f")
  read -r w c m <<<"$r"
  sw=$(echo "$sw + $w" | bc) sc=$(echo "$sc + $c" | bc)
  sw=$(printf '%.2f' "$sw") sc=$(printf '%.2f' "$sc")
  [ "$m" -gt "$sm" ] && sm=$m
done
rm -f shard-*.jsonl
row "$shards shards committed one after another (sum; largest RSS)" "$sw s | $sc s | $sm MiB" ""
idx_bytes=$(cat shard-*.widx | wc -c)
t0=$(date +%s.%N)
for f in shard-*.widx; do dd if="$f" of=/dev/null bs=4M iflag=direct status=none; done
rd=$(printf '%.2f' "$(echo "$(date +%s.%N) - $t0" | bc)")
row "reading the shards' indexes from disk (dd iflag=direct, $((idx_bytes >> 20)) MiB)" "$rd s | | " ""
r=$(timed merge "$commit" merge --memory "$memory" -o merged.commit.json shard-*.commit.json)
row "wit-commit merge (the $shards shards)" "$(fields "$r")" ""
read -r mw _ _ <<<"$r"
[ "$(grep -m1 '"root"' merged.commit.json)" = "$root" ] || die "the merged root differs from the files'"

echo
echo "Committing $records generated JSONL records ($bytes bytes) within --memory $memory ($(nproc) cores; load average at the end $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| step | wall | CPU | peak RSS | spilled runs, temporary disk |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "Merge throughput: $(echo "scale=0; $idx_bytes / 1048576 / $mw" | bc) MiB/s of shard indexes; reading them from disk: $(echo "scale=0; $idx_bytes / 1048576 / $rd" | bc) MiB/s. Same root from the file, the pipe and the merge: $root"
for step in file merge; do
  echo
  echo "phases of $step (WIT_COMMIT_PHASES=1; CPU counts all threads):"
  grep '^wit: phase' "$step.err" | sed 's/^wit: phase /  /'
done
