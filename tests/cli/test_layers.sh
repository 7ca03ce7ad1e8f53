#!/usr/bin/env bash
# Folders by layer (docs/design.md §13): every source and header of lib/core
# and lib/torch is in lib/LIB/wit/LAYER/, and a file includes only its own
# layer and the layers below it. The order is here, once, and design.md
# §13's two tables must list the same layers in the same order:
# - wit_core, bottom up: base hash data proofs run eval board cmd;
# - wit_torch, bottom up: model train replay eval board cmd, every one above
#   every core layer (torch may include any core layer; core never torch).
# The tools' mains (tools/wit-*/main.cpp) may include any layer, but a tool
# without a TORCH marker no lib/torch header (it links wit_core alone).
# An include that names no file, or a file outside a known layer folder, is
# a problem too, so the check cannot be passed by leaving a file unplaced.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"

CORE_LAYERS="base hash data proofs run eval board cmd"
TORCH_LAYERS="model train replay eval board cmd"

# layer_problems ROOT: one line per problem in the tree at ROOT; none if it keeps the layers.
layer_problems() (
  cd "$1" || exit 2
  for old in lib/core/src lib/core/include lib/torch/src lib/torch/include; do
    [ -e "$old" ] && echo "$old: files outside the layer folders (scripts/relayout.sh moves them)"
  done
  {
    # "F path": a file of the libraries; "I path:line:text": an include in one.
    find lib/core/wit lib/torch/wit -type f 2>/dev/null | sort | sed 's/^/F /'
    grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' lib/core/wit lib/torch/wit 2>/dev/null | sed 's/^/I /'
    for tool in tools/wit-*/; do
      [ -f "$tool/main.cpp" ] || continue
      torch=core
      [ -e "$tool/TORCH" ] && torch=torch
      grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"wit/' "$tool/main.cpp" | sed "s|^|T $torch ${tool}main.cpp:|"
    done
  } | awk -v core="$CORE_LAYERS" -v torch="$TORCH_LAYERS" '
    BEGIN {
      n = split(core, c, " "); for (i = 1; i <= n; i++) rank["core", c[i]] = i
      n = split(torch, t, " "); for (i = 1; i <= n; i++) rank["torch", t[i]] = 100 + i
    }
    # A file of lib LIB in wit/LAYER/: its rank, or a problem.
    $1 == "F" {
      split($2, p, "/")
      if (p[4] == "" || p[5] == "" || p[6] != "") { print $2 ": not in a layer folder lib/" p[2] "/wit/LAYER/"; next }
      if (!((p[2], p[4]) in rank)) { print $2 ": " p[4] " is not a layer of " p[2] " (docs/design.md §13)"; next }
      at[$2] = rank[p[2], p[4]]; layer_of[$2] = p[2] " " p[4]
      if ($2 ~ /\.h$/) {
        inc = p[3] "/" p[4] "/" p[5]
        if (inc in header) print $2 ": lib/core and lib/torch both hold " inc
        header[inc] = p[2] SUBSEP p[4]
      }
      next
    }
    # An include "path:lineno:text" of a lib file (I) or a tool (T LIB).
    {
      kind = $1
      if (kind == "T") { tlib = $2; $1 = ""; $2 = "" } else $1 = ""
      sub(/^ +/, "")
      split($0, q, ":"); file = q[1]; lineno = q[2]
      inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
      if (inc !~ /^wit\/[a-z_]+\/[A-Za-z0-9_]+\.h$/) { print file ":" lineno ": includes \"" inc "\", not a \"wit/LAYER/NAME.h\" of lib/core or lib/torch"; next }
      if (!(inc in header)) { print file ":" lineno ": includes " inc ", which is in neither lib/core/ nor lib/torch/"; next }
      split(header[inc], h, SUBSEP)
      if (kind == "T") {
        if (tlib == "core" && h[1] == "torch") print file ":" lineno ": includes " inc " of lib/torch, but the tool has no TORCH marker"
        next
      }
      if (!(file in at)) next                            # its folder is reported already
      if (rank[h[1], h[2]] > at[file]) print file ":" lineno ": includes " inc " (lib/" h[1] ", layer " h[2] "), above its own layer (" layer_of[file] ")"
    }'
  # design.md §13 lists the layers in this order: "| `LAYER` |" rows under
  # a "| `wit_core` layer |" header, then under "| `wit_torch` layer |".
  for lib in core torch; do
    want="$CORE_LAYERS"
    [ $lib = torch ] && want="$TORCH_LAYERS"
    got=$(awk -v h="| \`wit_$lib\` layer |" '/^## 13\./ {s = 1; next} s && /^## / {exit}
      s && index($0, h) == 1 {t = 1; next} t && !/^\|/ {exit}
      t && /^\| `[a-z_]+` \|/ {sub(/^\| `/, ""); sub(/`.*/, ""); printf "%s%s", sep, $0; sep = " "}' docs/design.md)
    [ "$got" = "$want" ] || echo "docs/design.md §13: the wit_$lib layers are \"$got\", not \"$want\""
  done
  exit 0
)

# The tree as it is keeps its layers.
layer_problems "$WIT_SRC" >problems
if [ -s problems ]; then fail "the tree breaks its layers: $(cat problems)"; else ok; fi
# The check reads every file: there are sources in every layer folder.
for l in $CORE_LAYERS; do ls "$WIT_SRC"/lib/core/wit/"$l"/*.cpp >/dev/null 2>&1 && ok || fail "no sources in lib/core/wit/$l"; done
for l in $TORCH_LAYERS; do ls "$WIT_SRC"/lib/torch/wit/"$l"/*.cpp >/dev/null 2>&1 && ok || fail "no sources in lib/torch/wit/$l"; done

# The check can fail: a copy with one thing wrong at a time is caught, by file and line.
copy() {
  rm -rf copy && mkdir -p copy/docs
  cp -r "$WIT_SRC/lib" "$WIT_SRC/tools" copy/ && cp "$WIT_SRC/docs/design.md" copy/docs/
}
# caught WHAT EXPECTED: the copy's problems are exactly one line, holding EXPECTED.
caught() {
  layer_problems copy >problems
  if [ "$(wc -l <problems)" -eq 1 ] && grep -qF "$2" problems; then ok; else fail "$1: want one problem holding '$2', got: $(cat problems)"; fi
}
# inject FILE LINE: LINE becomes FILE's first line.
inject() { { echo "$2"; cat "copy/$1"; } >copy/tmp && mv copy/tmp "copy/$1"; }

# injected WHAT FILE LINE EXPECTED: a fresh copy with LINE first in FILE is caught.
injected() { copy && inject "$2" "$3" && caught "$1" "$4"; }

injected "an upward include" lib/core/wit/base/bytes.cpp '#include "wit/cmd/cli.h"' \
  'lib/core/wit/base/bytes.cpp:1: includes wit/cmd/cli.h (lib/core, layer cmd), above its own layer (core base)'
injected "core including torch" lib/core/wit/board/board.h '#include "wit/board/recheck.h"' \
  'lib/core/wit/board/board.h:1: includes wit/board/recheck.h (lib/torch, layer board), above its own layer (core board)'
injected "an upward include in torch" lib/torch/wit/model/state.h '#include "wit/train/step.h"' \
  'lib/torch/wit/model/state.h:1: includes wit/train/step.h (lib/torch, layer train), above its own layer (torch model)'
flat='wit/''wlog.h' # spelled apart, so scripts/relayout.sh leaves it as it is
injected "an include of the old flat layout" lib/core/wit/run/wlog.h "#include \"$flat\"" \
  "lib/core/wit/run/wlog.h:1: includes \"$flat\", not a"
injected "an include of no file" lib/core/wit/run/wlog.h '#include "wit/run/nothing.h"' \
  'lib/core/wit/run/wlog.h:1: includes wit/run/nothing.h, which is in neither'
injected "a core tool including torch" tools/wit-commit/main.cpp '#include "wit/model/state.h"' \
  'tools/wit-commit/main.cpp:1: includes wit/model/state.h of lib/torch, but the tool has no TORCH marker'
copy
mkdir copy/lib/core/wit/misc && echo '#pragma once' >copy/lib/core/wit/misc/extra.h
caught "a folder that is no layer" 'lib/core/wit/misc/extra.h: misc is not a layer of core'
copy
echo '#pragma once' >copy/lib/core/wit/extra.h
caught "a file outside any folder" 'lib/core/wit/extra.h: not in a layer folder'
copy
sed -i 's/^| `proofs` |/| `proof` |/' copy/docs/design.md
caught "design.md's table drifting" 'docs/design.md §13: the wit_core layers are'
# The same include one layer lower is fine: the check is not "any include".
copy
inject lib/core/wit/cmd/cli.cpp '#include "wit/board/board.h"'
layer_problems copy >problems
[ ! -s problems ] && ok || fail "a downward include is reported: $(cat problems)"
finish
