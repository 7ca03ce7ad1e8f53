#!/usr/bin/env bash
# Committing from a pipe against committing the same bytes from a file
# (issue 38, item 2: "at the speed of a file within 20%"). For each input,
# rounds alternate: wit-commit FILE, `cat FILE | wit-commit -`,
# `zstdcat FILE.zst | wit-commit -`, and `zstdcat FILE.zst > /dev/null` alone
# (what decompressing costs by itself), so that load from other processes
# falls on all alike. Reports medians of $WIT_BENCH_PIPE_REPS rounds (default
# 5) of wall and CPU seconds (the whole pipeline's: cat or zstdcat included)
# and wit-commit's peak resident memory (GNU time -v), and the ratio of the
# file's wall time to each pipe's. Every pipe's commitment and index are
# checked to be the file's (the commitment up to the input's name).
#
# Usage: bench/commit_pipe.sh BUILD_DIR
# Environment: WIT_BENCH_PIPE_RECORDS (JSONL records, default 1200000:
# about 200 MB), WIT_BENCH_PIPE_REPS (default 5), WIT_BENCH_PIPE_READERS
# (default "jsonl lines"), WIT_BENCH_BASELINE (another wit-commit, e.g.
# main's, timed on `cat FILE |` in the same rounds; default none).
# Writes only inside a temporary directory, removed on exit.
set -euo pipefail
shopt -s inherit_errexit
die() { echo "bench/commit_pipe.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || die "usage: bench/commit_pipe.sh BUILD_DIR"
commit="$(cd "$1" && pwd)/bin/wit-commit"
[ -x "$commit" ] || die "wit-commit is not built: $commit"
command -v zstd > /dev/null || die "zstd not found (apt-get install zstd)"
[ -x /usr/bin/time ] || die "GNU time not found at /usr/bin/time (apt-get install time)"
records=${WIT_BENCH_PIPE_RECORDS:-1200000}
reps=${WIT_BENCH_PIPE_REPS:-5}
readers=${WIT_BENCH_PIPE_READERS:-jsonl lines}
baseline=${WIT_BENCH_BASELINE:-}
[ -z "$baseline" ] || [ -x "$baseline" ] || die "WIT_BENCH_BASELINE is not an executable: $baseline"
# A build's bin/wit-commit is a launcher that runs ../libexec/wit/wit-commit:
# a copy of bin/ alone does not run (copy libexec/ beside it).
[ -z "$baseline" ] || "$baseline" --version > /dev/null 2>&1 ||
  die "WIT_BENCH_BASELINE does not run: $baseline (a copied launcher needs ../libexec/wit/ beside it)"
fortunes=/usr/share/games/fortunes
[ -d "$fortunes" ] || die "no fortune text in $fortunes (apt-get install fortunes-min)"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wit-bench-pipe.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1

# Records of 100-200 bytes: the fortune words, printable ASCII without '\'
# or '"', taken from a moving start so that records rarely repeat.
cat "$fortunes"/* 2> /dev/null | LC_ALL=C tr -c 'A-Za-z0-9 .,;:!?()-' ' ' | tr -s ' ' '\n' | grep -v '^$' > "$tmp/words"
LC_ALL=C awk -v n="$records" '
  NR == FNR { w[m++] = $0; next }
  END {
    for (r = 0; r < n; r++) {
      len = 100 + (r * 31337) % 101
      at = (r * 7727) % m
      s = w[at]
      while (length(s) < len) { at = (at + 1) % m; s = s " " w[at] }
      printf "{\"text\":\"%s\",\"n\":%d}\n", substr(s, 1, len), r
    }
  }' "$tmp/words" "$tmp/words" > "$tmp/in.jsonl"
zstd -q -1 "$tmp/in.jsonl" -o "$tmp/in.jsonl.zst"
bytes=$(stat -c %s "$tmp/in.jsonl")
echo "wit bench commit_pipe: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start;" \
  "$records records, $bytes bytes ($(stat -c %s "$tmp/in.jsonl.zst") compressed); medians of $reps alternating rounds" >&2

# timed OUT CMD: runs `sh -c CMD` under GNU time -v; appends "wall cpu maxrss_kib" to OUT.
timed() {
  local out=$1
  /usr/bin/time -v -o "$tmp/tv" sh -c "$2" > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; die "failed: $2"; }
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, t, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + t[i] }
    /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident set size/ { m = $2 }
    END { printf "%.3f %.3f %d\n", w, u + s, m }' "$tmp/tv" >> "$out"
}
median() { sort -g -k"$2","$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# same NAME: the commitment and index NAME.* are those of the file (the input's name aside).
same() {
  cmp -s "$tmp/file.widx" "$tmp/$1.widx" || die "$1: its index differs from the file's"
  diff -q <(sed 's#"[^"]*in\.jsonl"#"INPUT"#; s#"-"#"INPUT"#' "$tmp/file.json") \
    <(sed 's#"[^"]*in\.jsonl"#"INPUT"#; s#"-"#"INPUT"#' "$tmp/$1.json") > /dev/null ||
    die "$1: its commitment differs from the file's"
}

rows=()
for reader in $readers; do
  c="$commit -q --reader $reader"
  run_file="$c -o $tmp/file.json --index $tmp/file.widx $tmp/in.jsonl"
  run_cat="cat $tmp/in.jsonl | $c -o $tmp/cat.json --index $tmp/cat.widx -"
  run_zstd="zstdcat $tmp/in.jsonl.zst | $c -o $tmp/zstd.json --index $tmp/zstd.widx -"
  run_unzip="zstdcat $tmp/in.jsonl.zst > /dev/null"
  run_base="cat $tmp/in.jsonl | $baseline -q --reader $reader -o $tmp/base.json --index $tmp/base.widx -"
  rm -f "$tmp"/{file,cat,zstd,unzip,base}.t
  cat "$tmp/in.jsonl" > /dev/null
  sh -c "$run_file"  # warm-up, untimed
  for ((i = 0; i < reps; i++)); do
    timed "$tmp/file.t" "$run_file"
    timed "$tmp/cat.t" "$run_cat"
    timed "$tmp/zstd.t" "$run_zstd"
    timed "$tmp/unzip.t" "$run_unzip"
    [ -z "$baseline" ] || timed "$tmp/base.t" "$run_base"
  done
  same cat
  same zstd
  fw=$(median "$tmp/file.t" 1)
  for what in file cat zstd unzip base; do
    [ -s "$tmp/$what.t" ] || continue
    w=$(median "$tmp/$what.t" 1)
    case $what in
      file) label="wit-commit FILE" ;;
      cat) label="cat FILE \\| wit-commit -" ;;
      zstd) label="zstdcat FILE.zst \\| wit-commit -" ;;
      unzip) label="zstdcat FILE.zst > /dev/null (alone)" ;;
      base) label="cat FILE \\| baseline -" ;;
    esac
    ratio=$([ "$what" = unzip ] && echo "" || awk -v a="$fw" -v b="$w" 'BEGIN { printf "%.2f", a / b }')
    rows+=("| $reader | $label | $w s | $(median "$tmp/$what.t" 2) s | $(($(median "$tmp/$what.t" 3) / 1024)) MiB | $ratio |")
  done
done

echo
echo "Committing from a pipe: $records JSONL records, $bytes bytes ($(nproc) cores; load average at the end $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| reader | command | wall | CPU (whole pipeline) | peak RSS (largest process) | file wall / this wall |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "Medians of $reps alternating rounds, page cache warm. Goal (issue 38): a pipe within 20% of the file (ratio >= 0.83);"
echo "zstdcat's own row is the decompression the pipe adds on the same two cores. Outputs of every pipe checked equal to the file's."
