#!/usr/bin/env bash
# Committing against b2sum (issue 26): wit-commit on random token files and on
# JSONL of fortune text, each against `b2sum -l 256` of the same file in the
# same run. Runs alternate (b2sum, wit-commit, wit-commit -j1) so that load
# from other processes falls on all three alike; reports medians of
# $WIT_BENCH_COMMIT_REPS runs (default 5) of wall and CPU (user + system)
# seconds, the ratio b2sum wall / wit-commit wall (the median of the
# per-round ratios, and the ratio of the medians), and peak memory from GNU
# time -v (maximum resident set) less the input, per record. With
# WIT_BENCH_PROFILE=1 it also samples wit-commit -j1 with perf (cpu-clock)
# and prints the top symbols. Each input's phase times (WIT_COMMIT_PHASES=1,
# docs/commitment.md "Performance") follow the table. bench/run.sh calls this
# script; it can run alone.
#
# Usage: bench/commit.sh BUILD_DIR
# Environment: WIT_BENCH_TOKENS_MB (MiB, space-separated; default "512 1024"),
# WIT_BENCH_JSONL_RECORDS (default "200000 1200000": about 40 and 240 MB),
# WIT_BENCH_COMMIT_REPS (default 5), WIT_BENCH_PROFILE (default 0),
# WIT_BENCH_BASELINE (another wit-commit, e.g. main's, timed in the same
# rounds and shown in its own column; default none).
# Writes only inside a temporary directory, removed on exit.
set -euo pipefail
shopt -s inherit_errexit extglob
die() { echo "bench/commit.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || die "usage: bench/commit.sh BUILD_DIR"
commit="$1/bin/wit-commit"
[ -x "$commit" ] || die "wit-commit is not built: $commit"
build=$(cd "$1" && pwd)
command -v b2sum > /dev/null || die "b2sum not found (coreutils)"
[ -x /usr/bin/time ] || die "GNU time not found at /usr/bin/time (apt-get install time)"

tokens_mb=${WIT_BENCH_TOKENS_MB:-512 1024}
jsonl_records=${WIT_BENCH_JSONL_RECORDS:-200000 1200000}
reps=${WIT_BENCH_COMMIT_REPS:-5}
profile=${WIT_BENCH_PROFILE:-0}
baseline=${WIT_BENCH_BASELINE:-}
[ -z "$baseline" ] || [ -x "$baseline" ] || die "WIT_BENCH_BASELINE is not an executable: $baseline"
fortunes=/usr/share/games/fortunes

hashbench="$build/bench/bench_hash"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wit-bench-commit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "wit bench commit: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start; medians of $reps alternating runs, page cache warm" >&2

# timed OUT CMD...: runs CMD under GNU time -v; appends "wall cpu maxrss_kib" to OUT.
timed() {
  local out=$1
  shift
  /usr/bin/time -v -o "$tmp/tv" "$@" > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; die "failed: $*"; }
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, t, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + t[i] }
    /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident set size/ { m = $2 }
    END { printf "%.3f %.3f %d\n", w, u + s, m }' "$tmp/tv" >> "$out"
}
# median FILE COLUMN
median() { sort -g -k"$2","$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

rows=()
notes=()

# bench LABEL FILE ARGS...
bench() {
  local label=$1 file=$2
  shift 2
  local bytes i
  bytes=$(stat -c %s "$file")
  cat "$file" > /dev/null
  rm -f "$tmp/b2" "$tmp/wit" "$tmp/wit1" "$tmp/base"
  b2sum -l 256 "$file" > /dev/null  # warm-up, untimed
  "$commit" -q "$@" -o "$tmp/c.json" --index "$tmp/c.widx" "$file"
  for ((i = 0; i < reps; i++)); do
    timed "$tmp/b2" b2sum -l 256 "$file"
    timed "$tmp/wit" "$commit" -q "$@" -o "$tmp/c.json" --index "$tmp/c.widx" "$file"
    timed "$tmp/wit1" "$commit" -q -j1 "$@" -o "$tmp/c.json" --index "$tmp/c.widx" "$file"
    [ -z "$baseline" ] || timed "$tmp/base" "$baseline" -q "$@" -o "$tmp/b.json" --index "$tmp/b.widx" "$file"
  done
  local base_cell=""
  if [ -n "$baseline" ]; then
    # Same work only if the same format: a baseline of another commitment
    # version (say version 2 against 3) is compared on the leaves alone.
    if [ "$(grep '"version"' "$tmp/b.json")" = "$(grep '"version"' "$tmp/c.json")" ]; then
      cmp -s "$tmp/b.widx" "$tmp/c.widx" || die "$label: the baseline's index differs from wit-commit's"
    else
      local n_of_c
      n_of_c=$(sed -n 's/^  "n": \([0-9]*\),$/\1/p' "$tmp/c.json")
      [ "$(grep -v '"root"\|"version"' "$tmp/b.json")" = "$(grep -v '"root"\|"version"' "$tmp/c.json")" ] &&
        cmp -s <(head -c "$(stat -c %s "$tmp/c.widx")" "$tmp/b.widx" | tail -c +129 | head -c $((40 * n_of_c))) \
          <(tail -c +129 "$tmp/c.widx" | head -c $((40 * n_of_c))) ||
        die "$label: the baseline (another commitment version) commits other records than wit-commit"
      echo "$label: the baseline writes commitment $(grep '"version"' "$tmp/b.json" | tr -d ' ,'), wit-commit $(grep '"version"' "$tmp/c.json" | tr -d ' ,'): compared on their records and leaves" >&2
    fi
    base_cell=" $(median "$tmp/base" 1) s / $(median "$tmp/base" 2) s, $(awk -v a="$(median "$tmp/b2" 1)" \
      -v b="$(median "$tmp/base" 1)" 'BEGIN { printf "%.2f", a / b }')x |"
  fi
  local records b2w b2c ww wc wr w1w w1c pair ratio_med ratio_cpu per_rec
  records=$(sed -n 's/^  "records": \([0-9]*\),$/\1/p' "$tmp/c.json")
  b2w=$(median "$tmp/b2" 1); b2c=$(median "$tmp/b2" 2)
  ww=$(median "$tmp/wit" 1); wc=$(median "$tmp/wit" 2); wr=$(median "$tmp/wit" 3)
  w1w=$(median "$tmp/wit1" 1); w1c=$(median "$tmp/wit1" 2)
  paste "$tmp/b2" "$tmp/wit" | awk '{ print $1 / $4 }' > "$tmp/pairs"
  pair=$(median "$tmp/pairs" 1)
  ratio_med=$(awk -v a="$b2w" -v b="$ww" 'BEGIN { printf "%.2f", a / b }')
  ratio_cpu=$(awk -v a="$b2c" -v b="$wc" 'BEGIN { printf "%.2f", a / b }')
  # Peak memory beyond the input: the input is streamed (tokens; jsonl and
  # lines from a regular file) or held whole (fortune: read into memory, or
  # mapped; counted once).
  local streamed=0
  [[ " $* " == *" --reader "@(tokens|jsonl|lines)" "* ]] && streamed=1
  per_rec=$(awk -v r="$wr" -v b="$bytes" -v n="$records" -v s="$streamed" 'BEGIN {
      v = (r * 1024 - (s ? 0 : b)) / n; printf "%.0f", v < 0 ? 0 : v }')
  echo "wit bench commit: $label: $bytes bytes, $records records; medians, wall/cpu s: b2sum $b2w/$b2c," \
    "wit-commit $ww/$wc, -j1 $w1w/$w1c; ratio b2sum/wit-commit $(printf %.2f "$pair") (per round), $ratio_med (of medians)," \
    "$ratio_cpu (CPU); peak RSS $wr KiB; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  # Where the time goes: one more run with WIT_COMMIT_PHASES=1 (wall and CPU ms of each phase, stderr).
  notes+=("phases, wit-commit ($(nproc) threads), $label (WIT_COMMIT_PHASES=1; CPU counts all threads):")
  notes+=("$(WIT_COMMIT_PHASES=1 "$commit" -q "$@" -o "$tmp/c.json" --index "$tmp/c.widx" "$file" 2>&1 >/dev/null |
    sed -n 's/^wit: phase /  /p')")
  rows+=("| $label | $b2w s / $b2c s | $ww s / $wc s | $w1w s / $w1c s | $(printf %.2f "$pair")x ($ratio_med x) | ${ratio_cpu}x | $((wr / 1024)) MiB, $per_rec B/record |$base_cell")
}

for mb in $tokens_mb; do
  head -c $((mb * 1024 * 1024)) /dev/urandom > "$tmp/tokens.bin"
  bench "tokens ${mb} MiB, --seq-len 1024" "$tmp/tokens.bin" --reader tokens --seq-len 1024
  if [ "$profile" = 1 ] && command -v perf > /dev/null; then
    perf record -q -g -o "$tmp/perf.data" "$commit" -q -j1 --reader tokens --seq-len 1024 -o "$tmp/c.json" \
      --index "$tmp/c.widx" "$tmp/tokens.bin" 2> /dev/null > /dev/null || true
    notes+=("perf, wit-commit -j1, tokens ${mb} MiB (self %, top symbols):")
    notes+=("$(perf report -i "$tmp/perf.data" --stdio --no-children --sort symbol 2> /dev/null | awk '/^ +[0-9.]+%/ && n++ < 12 { $1 = $1; sub(/ +- +-$/, ""); print "  " $0 }')")
  fi
  rm -f "$tmp/tokens.bin"
done

# JSONL records of 100-200 bytes of fortune text: printable ASCII, with '\'
# and '"' mapped to '/' and "'" so no JSON escaping is needed (the escaped
# path is the KAT test's business, not speed's). Record i is a run of words
# starting at a pseudo-random word, so records rarely repeat.
[ -d "$fortunes" ] || die "no fortune text in $fortunes (apt-get install fortunes-min)"
for n in $jsonl_records; do
  find "$fortunes" -type f ! -name '*.dat' ! -name '*.u8' -exec cat {} + |
    LC_ALL=C tr -c '\041-\176' ' ' | LC_ALL=C tr '\\"' "/'" |
    LC_ALL=C awk -v n="$n" '
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
  mb=$(awk -v b="$(stat -c %s "$tmp/records.jsonl")" 'BEGIN { printf "%.0f", b / 1e6 }')
  bench "jsonl $n records ($mb MB)" "$tmp/records.jsonl" --reader jsonl
  if [ "$profile" = 1 ] && command -v perf > /dev/null; then
    perf record -q -g -o "$tmp/perf.data" "$commit" -q -j1 --reader jsonl -o "$tmp/c.json" \
      --index "$tmp/c.widx" "$tmp/records.jsonl" 2> /dev/null > /dev/null || true
    notes+=("perf, wit-commit -j1, jsonl $n records (self %, top symbols):")
    notes+=("$(perf report -i "$tmp/perf.data" --stdio --no-children --sort symbol 2> /dev/null | awk '/^ +[0-9.]+%/ && n++ < 12 { $1 = $1; sub(/ +- +-$/, ""); print "  " $0 }')")
  fi
  rm -f "$tmp/records.jsonl"
done

echo
echo "Committing: wit-commit against b2sum -l 256 of the same file ($(nproc) cores; load average at the end $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| input | b2sum wall / CPU | wit-commit ($(nproc) threads) wall / CPU | wit-commit -j1 wall / CPU | b2sum / wit-commit, wall: per round (of medians) | b2sum / wit-commit, CPU | wit-commit peak RSS, beyond the input per record |${baseline:+ baseline wall / CPU, b2sum / baseline wall |}"
echo "|---|---|---|---|---|---|---|${baseline:+---|}"
printf '%s\n' "${rows[@]}"
echo
echo "Medians of $reps alternating rounds; goals: tokens >= 3x, JSONL >= 1.5x b2sum (docs/commitment.md, \"Performance\")."
echo "The tokens, jsonl and lines readers stream a regular file, so their peak RSS is all tables and buffers; a reader that holds its input (fortune) has it subtracted."
if [ -x "$hashbench" ]; then
  # The kernels on one core, and b2sum's rate on the last file, for scale.
  echo
  echo "BLAKE2b on one core (bench_hash, thread CPU time, best of 5, 64 MiB in memory): $("$hashbench" 2048 200 | tr '\n' ' ')"
fi
if [ ${#notes[@]} -gt 0 ]; then
  echo
  printf '%s\n' "${notes[@]}"
fi
