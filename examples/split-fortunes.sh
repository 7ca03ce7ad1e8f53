#!/bin/sh
# split-fortunes.sh FORTUNES_DIR TRAIN EVAL [SEALED]: Debian's fortunes corpus,
# de-duplicated (the same fortune appears in several files, and held-out data
# must not repeat training data), every 10th distinct fortune held out for
# evaluation (the board's published benchmark) and, with SEALED, every 20th
# counting from the 5th for the board's sealed split (docs/board.md): the
# same pool, so an honest model does as well on both. Deterministic: files in
# name order, fortunes in file order.
set -eu
dir=$1 train=$2 eval=$3 sealed=${4:-}
files=$(for f in "$dir"/*; do
  case "$f" in *.dat | *.u8) continue ;; esac
  [ -f "$f" ] && printf '%s\n' "$f"
done)
[ -n "$files" ] || { echo "split-fortunes.sh: no fortune files in $dir (apt-get install fortunes)" >&2; exit 2; }
tmp_train=$train.tmp tmp_eval=$eval.tmp tmp_sealed=${sealed:-/dev/null}.tmp
[ -n "$sealed" ] || tmp_sealed=
# shellcheck disable=SC2086 # file names from the corpus folder have no spaces
LC_ALL=C awk -v train="$tmp_train" -v eval="$tmp_eval" -v sealed="$tmp_sealed" 'BEGIN { RS = "\n%\n"; n = 0 }
     NF && !seen[$0]++ { n++; out = (n % 10 == 0) ? eval : (sealed != "" && n % 20 == 5) ? sealed : train
                         printf "%s\n%%\n", $0 > out }' $files
mv "$tmp_train" "$train"
mv "$tmp_eval" "$eval"
[ -z "$sealed" ] || mv "$tmp_sealed" "$sealed"
