#!/usr/bin/env bash
# A verifier's numbered check list in its doc page is its check table in the
# code (issue 39 item 2): the same functions, in the same order, under the
# same numbers, and the rows that read evidence (OnError::kNo: a malformed
# file there is a "no", exit 1) marked "(evidence)" in the doc. Neither can
# drift without this failing.
#
# The shapes both sides keep, so the comparison extends to another verifier:
# - code: the table passed to run_checks<CTX>(VAR, { ... }); one row a line,
#   `fn,` or `{fn, OnError::kNo},` then `// N` (N the doc's number); `});`
#   ends it, or `}, Reading{...});` (the table's Reading, check.h);
# - doc: in the section HEADING (up to the next heading of its level or
#   above), a numbered line "N. `fn`: ..." or "N. `fn` (evidence): ..." per
#   row.
# Another verifier joins by giving its doc list and code table these shapes
# and adding a `same_rows` line below.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"

# code_rows SRC CALL: "N fn evidence|-" for each row of the table after the line holding CALL.
code_rows() {
  awk -v call="$2" 'index($0, call) {s = 1; next} s && /^ *}(\);|, )/ {exit} s' "$1" |
    sed -nE 's/^ *(\{)?([A-Za-z_][A-Za-z0-9_]*)(, *OnError::k([A-Za-z]+))?.*\/\/ *([0-9]+[a-z]?) *$/\5 \2 \4/p' |
    awk '{print $1, $2, ($3 == "No" ? "evidence" : "-")}'
}
# doc_rows DOC HEADING: "N fn evidence|-" for each numbered line of the section whose heading is HEADING.
doc_rows() {
  awk -v h="$2" '$0 == h {s = 1; match(h, /^#+/); n = RLENGTH; next}
                 s && match($0, /^#+ /) && RLENGTH - 1 <= n {exit} s' "$1" |
    sed -nE 's/^([0-9]+[a-z]?)\. `([A-Za-z_][A-Za-z0-9_]*)`( \(evidence\))?.*/\1 \2 \3/p' |
    awk '{print $1, $2, ($3 == "(evidence)" ? "evidence" : "-")}'
}
# same_rows NAME SRC CALL DOC HEADING
same_rows() {
  code_rows "$WIT_SRC/$2" "$3" >"code.$1"
  doc_rows "$WIT_SRC/$4" "$5" >"doc.$1"
  [ -s "code.$1" ] && ok || fail "$1: no check table found after '$3' in $2"
  [ -s "doc.$1" ] && ok || fail "$1: no numbered check list under '$5' in $4"
  if diff "doc.$1" "code.$1" >"diff.$1"; then ok; else fail "$1: $4 and $2 list other checks (< doc, > code): $(cat "diff.$1")"; fi
}

# docs/replay.md: the whole bundle's table, then a transition's in each mode.
replay_rows() {
  same_rows replay_bundle lib/torch/wit/replay/replay.cpp 'run_checks<Verifier>(v, {' docs/replay.md '### Checks of the whole bundle'
  same_rows replay_exact lib/torch/wit/replay/replay.cpp 'no = run_checks<Transition>(t, {' docs/replay.md "#### Exact mode's table"
  same_rows replay_tolerant lib/torch/wit/replay/replay.cpp 'return run_checks<Transition>(t, {' docs/replay.md "#### Tolerant mode's table"
}

same_rows verify_run lib/core/wit/run/runlog.cpp 'run_checks<RunCtx>(c, {' docs/witness-log.md '## Verifying a run (`wit-log verify RUN`)'
replay_rows
same_rows judge lib/core/wit/board/judge.cpp 'return run_checks<Ctx>(c, {' docs/board.md '## Status rules'

# The comparison itself can fail: a table with a row moved is caught.
sed 's|^\( *\)load_run,\( *\)// 1$|\1load_run_moved,\2// 1|' "$WIT_SRC/lib/core/wit/run/runlog.cpp" >moved.cpp
code_rows moved.cpp 'run_checks<RunCtx>(c, {' >code.moved
diff -q "doc.verify_run" code.moved >/dev/null && fail "a renamed row is not caught" || ok
finish
