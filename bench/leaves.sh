#!/usr/bin/env bash
# The audited data tree (docs/leaves.md): the cost of exporting a
# commitment's sorted leaves from its index (wit-commit leaves) and of the
# streaming audit of the leaves file against the commitment (wit-query
# audit-leaves: strictly increasing, RFC 6962 root) at N distinct records
# (default 10^7), on 1 and 2 threads, with wall time and peak memory. Prints
# a table; never a test. Usage: bench/leaves.sh [BUILD] (WIT_BENCH_LEAVES=N).
set -euo pipefail
BUILD=${1:-build}
BIN=$(cd "$BUILD/bin" && pwd)
export PATH="$BIN:$PATH" OPENBLAS_NUM_THREADS=1
N=${WIT_BENCH_LEAVES:-10000000}
tmp=$(mktemp -d /tmp/wit-bench-leaves.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# measure LABEL CMD...: wall seconds, CPU seconds (user + system: on a shared
# machine the less loaded number) and peak RSS of one command, from /usr/bin/time.
measure() {
  local label=$1
  shift
  /usr/bin/time -f '%e %U %S %M' -o time.txt "$@" >/dev/null
  read -r wall user sys rss <time.txt
  printf '%-30s %8s s wall %8s s cpu %8s MiB\n' "$label" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')" \
    "$((rss / 1024))"
}
awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) printf "record %d of the leaves benchmark\n", i }' >data.txt
echo "bench leaves: $N distinct records, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
measure "wit-commit (for reference)" wit-commit -q -o data.commit.json data.txt
measure "wit-commit leaves" wit-commit -q leaves --index data.widx -o data.wleaves
echo "leaves file: $(stat -c %s data.wleaves) bytes" >&2
measure "wit-query audit-leaves -j1" wit-query audit-leaves -j1 --commit data.commit.json data.wleaves
measure "wit-query audit-leaves -j2" wit-query audit-leaves -j2 --commit data.commit.json data.wleaves
measure "audit-leaves -j2 from stdin" sh -c 'wit-query audit-leaves -j2 --commit data.commit.json - <data.wleaves'
