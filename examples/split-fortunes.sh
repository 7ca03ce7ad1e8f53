#!/bin/sh
# split-fortunes.sh FORTUNES_DIR TRAIN EVAL: Debian's fortunes corpus,
# de-duplicated (the same fortune appears in several files, and held-out data
# must not repeat training data), every 10th distinct fortune held out for
# evaluation. Deterministic: files in name order, fortunes in file order.
set -eu
dir=$1 train=$2 eval=$3
files=$(for f in "$dir"/*; do
  case "$f" in *.dat | *.u8) continue ;; esac
  [ -f "$f" ] && printf '%s\n' "$f"
done)
[ -n "$files" ] || { echo "split-fortunes.sh: no fortune files in $dir (apt-get install fortunes)" >&2; exit 2; }
tmp_train=$train.tmp tmp_eval=$eval.tmp
# shellcheck disable=SC2086 # file names from the corpus folder have no spaces
LC_ALL=C awk -v train="$tmp_train" -v eval="$tmp_eval" 'BEGIN { RS = "\n%\n"; n = 0 }
     NF && !seen[$0]++ { n++; out = (n % 10 == 0) ? eval : train; printf "%s\n%%\n", $0 > out }' $files
mv "$tmp_train" "$train"
mv "$tmp_eval" "$eval"
