#!/usr/bin/env bash
# Folders by layer (issue 39 item 5, docs/design.md §13): moves every source
# and header of lib/core and lib/torch from the flat folders
#   lib/core/include/wit/NAME.h   lib/core/src/NAME.cpp
#   lib/torch/include/wit/NAME.h  lib/torch/src/NAME.{cpp,h}
# to lib/LIB/wit/LAYER/NEW.{h,cpp} (headers beside their sources), and makes
# everything that names them follow:
# - `git mv` per the table below; a table row whose file is not at its old
#   path (moved already, or never written) is skipped;
# - in every file git knows (sources, tests, bench, fuzz, docs, man pages,
#   README, CMake): "wit/NAME.h" -> "wit/LAYER/NEW.h", lib/core/src/NAME.cpp,
#   lib/core/include/wit/NAME.h, lib/torch/src/NAME.* and
#   lib/torch/include/wit/NAME.h -> lib/LIB/wit/LAYER/NEW.*, the private
#   headers of lib/torch ("dist.h", "model.h", ...) -> "wit/LAYER/NEW.h",
#   and a renamed file's bare name (board_gap.cpp) -> its new one
#   (board/gap.cpp);
# - both libraries' CMakeLists glob lib/LIB/wit/*/*.cpp and include lib/LIB.
# Before it changes anything it fails (exit 2), naming them, if a file in
# the old folders has no row: add the file to the table (rule: design.md
# §13) and run it again. A second run changes nothing. Run it from anywhere
# inside the repository: scripts/relayout.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

# LIB NAME LAYER [NEW]: lib/LIB's file NAME (its .h and .cpp) goes to
# lib/LIB/wit/LAYER/NEW (NEW defaults to NAME). Layers bottom up, as in
# design.md §13; tests/cli/test_layers.sh holds their order.
TABLE='
core bytes base
core error base
core crash base
core io base
core parallel base
core progress base
core page_buffer base
core binary_header base
core json_fields base
core check base
core cli_base base
core verdict base
core hash hash
core tags hash
core sign hash
core rng hash
core blake2b_x4 hash
core merkle hash
core readers data
core text_stream data
core line_rules data
core commitment data
core commit_merge data
core sorted_merge data
core index data
core tree_audit data
core proofs proofs
core contamination proofs
core manifest run
core model_spec run
core run_config run
core run_lock run
core order run
core wlog run
core runlog run
core safetensors run
core shards run
core sketch run
core fingerprint_doc run
core bundle run
core run_bundle run
core challenge run
core report run
core replay_math run
core state_root run
core usage run
core eval eval
core release eval
core board board board
core board_judge board judge
core board_pack board pack
core board_status board status
core board_render board render
core board_def board def
core board_gap board gap
core board_overlap board overlap
core board_html board html
core cli cmd
core file_kind cmd
core command cmd
core commit_cmd cmd
core query_cmd cmd
core log_cmd cmd
core challenge_cmd cmd
core board_cmd cmd
torch model model
torch script_model model
torch script model
torch state model
torch state_impl model
torch config_in_effect model
torch device model
torch fingerprint model
torch step train
torch dist train
torch trainer train
torch replay replay
torch evaluate eval
torch release_model eval
torch board_check board recheck
torch train_cmd cmd
torch replay_cmd cmd
torch eval_cmd cmd
torch sketch_cmd cmd
torch board_check_cmd cmd
'
rows() { printf '%s\n' "$TABLE" | awk 'NF {print $1, $2, $3, (NF > 3 ? $4 : $2)}'; }

# The old places of lib LIB's file NAME.EXT.
old_paths() { # LIB NAME
  echo "lib/$1/include/wit/$2.h"
  echo "lib/$1/src/$2.cpp"
  echo "lib/$1/src/$2.h"
}

# 1. Every file still in an old folder has a row, or nothing happens.
unknown=()
for lib in core torch; do
  for dir in "lib/$lib/include/wit" "lib/$lib/src"; do
    [ -d "$dir" ] || continue
    while IFS= read -r f; do
      base=$(basename "$f")
      name=${base%.*}
      case "$base" in *.h | *.cpp) ;; *) unknown+=("$f"); continue ;; esac
      rows | awk -v l="$lib" -v n="$name" '$1 == l && $2 == n {found = 1} END {exit !found}' ||
        unknown+=("$f")
    done < <(find "$dir" -type f | sort)
  done
done
if [ ${#unknown[@]} -gt 0 ]; then
  echo "relayout: no layer for: ${unknown[*]} (add a row to the table in scripts/relayout.sh; the rule is in docs/design.md §13)" >&2
  exit 2
fi

# 2. Move.
moved=0
while read -r lib name layer new; do
  for old in $(old_paths "$lib" "$name"); do
    [ -e "$old" ] || continue
    dest="lib/$lib/wit/$layer/$new.${old##*.}"
    if [ -e "$dest" ]; then
      echo "relayout: $old and $dest both exist" >&2
      exit 2
    fi
    mkdir -p "$(dirname "$dest")"
    git mv "$old" "$dest"
    moved=$((moved + 1))
  done
done < <(rows)
for lib in core torch; do
  for dir in "lib/$lib/include/wit" "lib/$lib/include" "lib/$lib/src"; do
    [ -d "$dir" ] && rmdir "$dir" 2>/dev/null || true
  done
done

# 3. Rewrite the names, from the same table. Longest forms first, so a path
# is rewritten whole before "wit/NAME.h" could match inside it.
sedf=$(mktemp)
tmp=$(mktemp)
trap 'rm -f "$sedf" "$tmp"' EXIT
# edit FILE SED-ARGS...: FILE through sed, written back (mode kept) only
# where it changes, so a second run touches no file; true if it changed.
edit() {
  local f=$1
  shift
  sed "$@" "$f" >"$tmp"
  cmp -s "$tmp" "$f" && return 1
  cat "$tmp" >"$f"
}
B='(^|[^A-Za-z0-9_/.-])' # what may stand before a bare name
{
  while read -r lib name layer new; do
    echo "s#lib/$lib/include/wit/$name\\.h\\b#lib/$lib/wit/$layer/$new.h#g"
    echo "s#lib/$lib/src/$name\\.(cpp|h|\\{h,cpp\\}|\\{cpp,h\\})#lib/$lib/wit/$layer/$new.\\1#g"
  done < <(rows)
  while read -r lib name layer new; do
    echo "s#${B}wit/$name\\.h\\b#\\1wit/$layer/$new.h#g"
  done < <(rows)
  # Private headers (lib/torch's, readers' line_rules.h), once included by bare
  # name from src/.
  while read -r lib name layer new; do
    [ -e "lib/$lib/wit/$layer/$new.h" ] || continue
    echo "s#^(\\s*\\#\\s*include\\s+)\"$name\\.h\"#\\1\"wit/$layer/$new.h\"#"
  done < <(rows)
  # README's glob of the board's files.
  echo 's#lib/core/src/board\*\.cpp#lib/core/wit/board/*.cpp#g'
  # A renamed file's bare name (board_gap.cpp -> board/gap.cpp).
  while read -r lib name layer new; do
    [ "$name" = "$new" ] && continue
    echo "s#${B}$name\\.(h|cpp)\\b#\\1$layer/$new.\\2#g"
  done < <(rows)
} >"$sedf"

# The files that name an old place: every file git knows or would add,
# except this script (its table holds the old names).
pattern='lib/(core|torch)/(src|include)/|"wit/[A-Za-z0-9_]+\.h"|wit/[A-Za-z0-9_]+\.h|#\s*include\s+"[a-z_]+\.h"'
renamed=$(rows | awk '$2 != $4 {printf "|%s\\.(h|cpp)", $2}')
mapfile -t files < <(git grep -lIE --untracked "$pattern$renamed" -- . ':!scripts/relayout.sh' || true)
changed=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  edit "$f" -E -f "$sedf" && changed=$((changed + 1))
done

# 4. CMake: both libraries build every wit/LAYER/*.cpp and include lib/LIB;
# wit-forge reaches lib/torch's private headers through wit_torch.
for lib in core torch; do
  edit "lib/$lib/CMakeLists.txt" -E \
    -e 's#^file\(GLOB (WIT_[A-Z]+_SRC CONFIGURE_DEPENDS \$\{CMAKE_CURRENT_SOURCE_DIR\})/src/\*\.cpp\)#file(GLOB \1/wit/*/*.cpp)#' \
    -e 's#(target_include_directories\(wit_[a-z]+ PUBLIC \$\{CMAKE_CURRENT_SOURCE_DIR\})/include\)#\1)#' \
    || true
done
edit tests/attacks/CMakeLists.txt '/target_include_directories(wit-forge PRIVATE ${CMAKE_SOURCE_DIR}\/lib\/torch\/src)/d' || true
# README's one-line tree of lib/core.
edit README.md 's#^lib/core/     wit_core (no LibTorch): include/wit/\*\.h, src/\*\.cpp$#lib/core/     wit_core (no LibTorch): wit/LAYER/*.{h,cpp}, one folder a layer (docs/design.md §13)#' || true

echo "relayout: $moved files moved, $changed files rewritten" >&2
