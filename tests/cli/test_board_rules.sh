#!/usr/bin/env bash
# The board's status rules are stated once, in docs/board.md ("Status rules",
# the block between <!-- status-summary --> markers), and repeated by the
# site's intro, wit-board(1) and README ("Put your run on a board"): each
# status name with its rule, word for word (issue 37 item 7). Also: none of
# them still says the old rule that certified needs an eval spot check.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"
command -v groff >/dev/null || { echo "SKIP: groff is not installed" >&2; exit 77; }

awk '/<!-- status-summary -->/ {s = 1; next} /<!-- \/status-summary -->/ {s = 0} s' "$WIT_SRC/docs/board.md" >rules.md
[ "$(grep -c '^- \*\*[a-z]*\*\*: ' rules.md)" = 4 ] && ok || fail "docs/board.md's status summary is not four rules: $(cat rules.md)"
for s in certified flagged pending rejected; do
  grep -q "^- \*\*$s\*\*: " rules.md && ok || fail "docs/board.md's summary lacks $s"
done

# The site: a board with no runs yet shows the rules in its intro.
printf 'first record\nsecond record\n' >e.txt
run 0 wit-commit -q -o e.commit.json e.txt
run 0 wit-board init b --name rules --key k --benchmark e.commit.json e.txt
run 0 wit-board build -q b -o site
# wit-board(1) as plain text on one line.
groff -man -Tascii -rLL=2000n "$WIT_SRC/man/wit-board.1" 2>/dev/null | sed 's/.\x08//g' | tr -s ' \n' '  ' >man.txt
tr -s ' \n' '  ' <"$WIT_SRC/README.md" >readme.txt

while IFS= read -r line; do
  name=$(sed -E 's/^- \*\*([a-z]+)\*\*: .*/\1/' <<<"$line")
  rule=$(sed -E 's/^- \*\*[a-z]+\*\*: //' <<<"$line")
  html=$(sed "s/'/\&#39;/g" <<<"$rule")
  grep -qF "<li><b>$name</b>: $html</li>" site/index.html && ok || fail "the site's intro does not state the $name rule of docs/board.md"
  grep -qF "$name $rule" man.txt && ok || fail "wit-board(1) does not state the $name rule of docs/board.md: $rule"
  grep -qF -- "$line" "$WIT_SRC/README.md" && ok || fail "README does not state the $name rule of docs/board.md"
done <rules.md

for f in man.txt readme.txt site/index.html; do
  grep -qiE 'certified[^.]*(needs|an) eval spot.check|eval spot check passed' "$f" && fail "$f still says certified needs an eval spot check" || ok
done
finish
