#!/usr/bin/env bash
# Docs true to the tree: every relative link of README.md and docs/*.md (file
# and #heading) and every man page's SEE ALSO target exists
# (scripts/check-doc-links.py); the checker itself finds a broken link, a
# broken anchor and a missing SEE ALSO page in a small tree made for it.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: Debian's /usr/bin/python3 is not installed (scripts/install-deps.sh installs it)" >&2; exit 77; }
CHECK=$WIT_SRC/scripts/check-doc-links.py

run 0 "$PY" "$CHECK" "$WIT_SRC"
[ ! -s out ] && ok || fail "broken references in the docs: $(cat out)"

# The checker can fail: a tree with one of each mistake.
mkdir -p t/docs t/man
printf '# Top\n\n## Part two: the end\n\nSee [a](a.md), [b](b.md#part-two-the-end), [c](b.md#nope), [x](x.md).\n' >t/docs/b.md
printf '# A\n' >t/docs/a.md
printf '[design](docs/b.md#top)\n' >t/README.md
printf '.TH WIT-X 1\n.SH SEE ALSO\n.BR wit-y (1),\n.BR wit-x (1);\n.I \\%%docs/gone.md\n' >t/man/wit-x.1
run 1 "$PY" "$CHECK" t
grep -qx 'docs/b.md: link to b.md#nope: no such heading' out && ok || fail "broken anchor not found: $(cat out)"
grep -qx 'docs/b.md: link to x.md: no such file' out && ok || fail "missing file not found: $(cat out)"
grep -qx 'man/wit-x.1: SEE ALSO wit-y(1): no such page in man/' out && ok || fail "missing man page not found: $(cat out)"
grep -qx 'man/wit-x.1: SEE ALSO docs/gone.md: no such file' out && ok || fail "missing doc not found: $(cat out)"
[ "$(wc -l <out)" -eq 4 ] && ok || fail "good links reported as broken: $(cat out)"

finish
