# Helpers for the CLI tests: run a built tool, check its exit status, streams
# and the files it leaves. Source this file; set WIT_BIN to the tools' folder.
set -u
: "${WIT_BIN:?set WIT_BIN to the folder of the built tools}"
export PATH="$WIT_BIN:$PATH"
export OPENBLAS_NUM_THREADS=1

T=$(mktemp -d "${TMPDIR:-/tmp}/wit-cli.XXXXXX")
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 2
passed=0
failed=0

# The built test fixtures (tests/fixtures), unless WIT_FIXTURES says where.
FIXTURES="${WIT_FIXTURES:-$WIT_BIN/../tests/fixtures}"
MKRUN="$FIXTURES/make_test_run"
# need_fixture NAME: $FIXTURES/NAME is built, or the test fails at once (exit 1).
need_fixture() {
  if [ ! -x "$FIXTURES/$1" ]; then
    echo "FAIL: fixture not built: $FIXTURES/$1 (set WIT_FIXTURES)" >&2
    exit 1
  fi
}

ok() { passed=$((passed + 1)); }
fail() { echo "FAIL: $*" >&2; failed=$((failed + 1)); }

# run N CMD...: runs CMD with stdout in $T/out, stderr in $T/err and expects exit N.
run() {
  local want=$1
  shift
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail "exit $rc (want $want): $*"
    sed 's/^/  stderr: /' "$T/err" | head -5 >&2
    return 1
  fi
  ok
  return 0
}

# error_is TOOL PATTERN: stderr's first line is "TOOL: error: ..." matching PATTERN,
# and stderr has at most one more line, a hint.
error_is() {
  local tool=$1 pat=$2
  local first
  first=$(head -n 1 "$T/err")
  case "$first" in
    "$tool: error: "*) ;;
    *) fail "not a one-line error: $first"; return 1 ;;
  esac
  if ! grep -qE -- "$pat" <<<"$first"; then fail "error '$first' does not match /$pat/"; return 1; fi
  local n
  n=$(wc -l <"$T/err")
  if [ "$n" -gt 2 ] || { [ "$n" -eq 2 ] && ! sed -n 2p "$T/err" | grep -q '^hint: '; }; then
    fail "more than one error line: $(cat "$T/err")"
    return 1
  fi
  ok
}

# absent PATH...: none of the paths exist, and no temp files are left beside them.
absent() {
  local p
  for p in "$@"; do
    if [ -e "$p" ]; then fail "left behind: $p"; return 1; fi
    if compgen -G "$p.tmp.*" >/dev/null; then fail "temp file left behind: $p.tmp.*"; return 1; fi
  done
  ok
}

# execed PID TOOL: waits (5 s at most) until background job PID is TOOL, no
# longer the shell that forked it. A signal before that ends the shell's
# child, not the tool: no tool can speak for it.
execed() {
  local i
  for i in $(seq 1 500); do
    [ "$(cat /proc/"$1"/comm 2>/dev/null)" = "${2:0:15}" ] && return 0
    sleep 0.01
  done
  return 1
}

# reap PID: waits for background job PID (after a signal was sent to it) and
# returns its exit status; one still running after 30 s is killed (137), so
# a tool that ignores the signal fails the test instead of hanging it.
reap() {
  local i
  for i in $(seq 1 300); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$1" 2>/dev/null
  wait "$1"
}

# holds_temporary PID NAME: process PID has a temporary of output NAME open,
# named (NAME.tmp.*) or unnamed (O_TMPFILE: "DIR/#INODE (deleted)").
holds_temporary() {
  local l
  for l in /proc/"$1"/fd/*; do
    case "$(readlink "$l" 2>/dev/null)" in */"$2".tmp.* | */\#*" (deleted)") return 0 ;; esac
  done
  return 1
}

# finite_options TOOL...: every numeric option of every (sub)command of the
# tools, as their --help lists it (the type names cli.cpp calls numeric),
# refuses NaN and the infinities with the one-line error, exit 2 (issue 33).
# FINITE_VALUES: the values tried (a LibTorch tool takes a second to start).
finite_options() {
  local tool sub opt v subs count=0 args name
  for tool in "$@"; do
    subs=$("$tool" --help 2>&1 | sed -n '/^Subcommands:/,$s/^  \([a-z][a-z-]*\) .*/\1/p')
    # The name it speaks as (wit-board-check is wit-board's companion and says wit-board).
    name=$("$tool" --help 2>&1 | sed -n 's/^Usage: \([^ ]*\).*/\1/p' | head -n 1)
    for sub in "" $subs; do
      # shellcheck disable=SC2086
      for opt in $("$tool" $sub --help 2>&1 |
        sed -nE 's/^  (-[a-zA-Z],)?(--?[a-z][a-z0-9-]*) (INT|UINT|FLOAT|NUMBER|N|K|P|F|STEP|SIZE)( .*)?$/\2/p'); do
        for v in ${FINITE_VALUES:-nan NaN inf Infinity 1e999 -inf}; do
          case "$opt$v" in --*) args=("$opt=$v") ;; *-inf) continue ;; *) args=("$opt" "$v") ;; esac
          # shellcheck disable=SC2086
          run 2 "$tool" $sub "${args[@]}" && error_is "$name" "^$name: error: $opt must be a finite number: $v\$"
        done
        count=$((count + 1))
      done
    done
  done
  [ "$count" -gt 0 ] && ok || fail "finite_options: no numeric option found in $*"
}

same_file() {
  if cmp -s "$1" "$2"; then ok; else fail "files differ: $1 $2"; fi
}

# json_get FILE KEY: a top-level string, number or boolean field of a JSON file
# pretty-printed by wit (two-space indent), without needing a JSON tool.
json_get() {
  sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$1" | head -n 1
}

# doc_recipe DOC OUT: the ```python blocks of docs/DOC, in order, as printed
# (known-answer tests run the docs' own recipes, so a doc cannot drift).
doc_recipe() {
  awk '/^```python/ { f = 1; next } /^```/ { f = 0 } f' "${WIT_SRC:?set WIT_SRC to the source tree}/docs/$1" >"$2"
  [ -s "$2" ] && ok || fail "no python recipe in docs/$1"
}

# need_python_torch: PY=/usr/bin/python3 (Debian's), with python3-torch and
# python3-cryptography, or the test is a visible skip (exit 77).
need_python_torch() {
  PY=/usr/bin/python3
  [ -x "$PY" ] || { echo "skip: $PY not found (Debian's python3)" >&2; exit 77; }
  "$PY" -c 'import torch' 2>/dev/null ||
    { echo "skip: $PY has no torch module (Debian's python3-torch; scripts/install-deps.sh)" >&2; exit 77; }
  "$PY" -c 'import cryptography.hazmat.primitives.ciphers' 2>/dev/null ||
    { echo "skip: $PY has no cryptography module (Debian's python3-cryptography)" >&2; exit 77; }
  # Every LibTorch in the test (PyTorch, wit's tools, tests/torch's programs)
  # under the kernels wit-train pins by default (--cpu-kernels avx2,
  # docs/training.md): on an AVX-512 machine PyTorch and the test programs
  # would otherwise pick avx512 kernels, whose sums round differently from
  # the run's.
  export ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2
}

# need_torch_references: need_python_torch (PY), and PyTorch's side of the
# LibTorch tests: GOLDEN (tests/torch/golden_adamw.py, PyTorch's AdamW step),
# INPUTS (tests/torch/run_step_inputs.py) and MODULE (examples/rnn_module.py).
need_torch_references() {
  : "${WIT_SRC:?set WIT_SRC to the source tree}"
  need_python_torch
  GOLDEN="$WIT_SRC/tests/torch/golden_adamw.py"
  INPUTS="$WIT_SRC/tests/torch/run_step_inputs.py"
  MODULE="$WIT_SRC/examples/rnn_module.py"
}

# The LibTorch tests' set-up (corpus -> commitment -> key -> train -> certify):
# nonce N: a 64-hex-digit nonce (or seed) from a number.
nonce() { printf '%064x' "$1"; }
# corpus N [FILE]: N short records of varied length ("r1 b", "r2 cdefghij", ...) in FILE (data.txt).
corpus() {
  awk -v n="$1" 'BEGIN { for (i = 1; i <= n; i++) { s = "r" i " "; for (j = 0; j < i * 7 % 57; j++) s = s sprintf("%c", 97 + (i + j) % 26); print s } }' >"${2:-data.txt}"
}
# commit_and_key: data.txt committed (data.commit.json, data.widx) and a trainer key pair (key, key.pub).
commit_and_key() {
  run 0 wit-commit -q -o data.commit.json data.txt
  run 0 wit-log keygen -o key
}
# certify RUN NONCE K: K steps of RUN challenged (nonce NONCE), answered by
# wit-replay respond and replayed by verify (-j1 both): certified, exactly.
# Leaves RUN.head.json, RUN.c.json, RUN.wbundle and RUN.report.json.
certify() {
  wit-log head "$1" >"$1.head.json"
  run 0 wit-challenge -q --head "$1.head.json" --nonce "$(nonce "$2")" -k "$3" -o "$1.c.json"
  run 0 wit-replay respond -q -j1 --run "$1" "$1.c.json" -o "$1.wbundle" || return 1
  run 0 wit-replay verify -q -j1 --bundle "$1.wbundle" "$1.c.json" -o "$1.report.json" || return 1
  [ "$(json_get "$1.report.json" verdict)" = certified ] && [ "$(json_get "$1.report.json" mode)" = exact ] && ok ||
    fail "$1: verdict $(json_get "$1.report.json" verdict), mode $(json_get "$1.report.json" mode)"
}

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
