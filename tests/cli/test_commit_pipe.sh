#!/usr/bin/env bash
# wit-commit from a pipe (issue 38, item 2): the same bytes from a regular
# file, through `cat |`, through a fifo and through `zstdcat |` give the
# same index bytes and the same commitment (up to the input's name), for the
# jsonl, lines and tokens readers; lines cross the 16 MiB reads and one is
# 2 MiB long; a bad line in a pipe is named by line and byte offset, with no
# output left; an empty pipe commits as an empty file.
source "$(dirname "$0")/lib.sh"

# About 20 MB of JSONL (more than one 16 MiB read), CRLF on some lines,
# blank lines, escapes, repeats, a 2 MiB line, no final newline.
awk 'BEGIN {
  for (i = 0; i < 140000; i++) {
    t = (i % 9 == 0) ? "repeat " (i % 40) : sprintf("record %d %0*d", i, 60 + i % 97, i)
    printf "{\"id\":%d,\"text\":\"%s%s\"}%s\n", i, t, (i % 13 == 0 ? "\\u00e9\\n" : ""), (i % 6 == 0 ? "\r" : "")
    if (i % 5000 == 0) printf "  \n"
    if (i == 70000) { printf "{\"text\":\""; for (k = 0; k < 32768; k++) printf "%064d", k; printf "\"}\n" }
  }
  printf "{\"text\":\"the end\"}"
}' > in.jsonl
[ "$(stat -c %s in.jsonl)" -gt $((17 << 20)) ] && ok || fail "the corpus is smaller than two reads"
zstd -q in.jsonl -o in.jsonl.zst 2> /dev/null || gzip -c in.jsonl > in.jsonl.zst  # zstd is a build dependency

# same_commit NAME INPUT: NAME.json / NAME.widx equal file.json / file.widx, the input's name aside.
same_commit() {
  same_file file.widx "$1.widx"
  if diff <(sed "s#\"[^\"]*$2\"#\"IN\"#" file.json) <(sed 's#"-"#"IN"#; s#"[^"]*fifo"#"IN"#' "$1.json") > /dev/null; then
    ok
  else
    fail "$1: the commitment differs from the file's"
  fi
}

for reader in jsonl lines; do
  run 0 wit-commit -q --reader "$reader" -o file.json --index file.widx in.jsonl
  run 0 wit-commit -q --reader "$reader" -o cat.json --index cat.widx - < <(cat in.jsonl)
  same_commit cat in.jsonl
  run 0 wit-commit -q -j1 --reader "$reader" -o cat1.json --index cat1.widx - < <(cat in.jsonl)
  same_commit cat1 in.jsonl
  rm -f fifo && mkfifo fifo
  cat in.jsonl > fifo &
  run 0 wit-commit -q --reader "$reader" -o fifo.json --index fifo.widx fifo
  wait
  same_commit fifo in.jsonl
  if command -v zstdcat > /dev/null; then
    run 0 wit-commit -q --reader "$reader" -o zstd.json --index zstd.widx - < <(zstdcat in.jsonl.zst)
    same_commit zstd in.jsonl
  fi
done

# Token ids from a pipe: whole windows and a partial one.
head -c 5000006 /dev/urandom > tok.bin
run 0 wit-commit -q --reader tokens --seq-len 1000 -o file.json --index file.widx tok.bin
run 0 wit-commit -q --reader tokens --seq-len 1000 -o tok.json --index tok.widx - < <(cat tok.bin)
same_commit tok tok.bin

# An empty pipe is an empty file.
: > empty.jsonl
run 0 wit-commit -q --reader jsonl -o file.json --index file.widx empty.jsonl
run 0 wit-commit -q --reader jsonl -o empty.json --index empty.widx - < <(:)
same_commit empty empty.jsonl

# A bad line deep in the pipe: its line and byte offset, exit 2, no output.
{ head -n 90000 in.jsonl; echo '{"text":7}'; echo '{"x":1}'; } > bad.jsonl
at=$(head -n 90000 in.jsonl | wc -c)
run 2 wit-commit --reader jsonl -o bad.json --index bad.widx - < <(cat bad.jsonl)
error_is wit-commit "^wit-commit: error: field 'text' is a number, not a string: stdin:90001 at byte $at\$"
absent bad.json
absent bad.widx
run 2 wit-commit --reader jsonl -o bad.json --index bad.widx bad.jsonl
error_is wit-commit "field 'text' is a number, not a string: bad.jsonl:90001 at byte $at\$"
# A cut token id from a pipe.
run 2 wit-commit --reader tokens --seq-len 1000 -o bad.json - < <(head -c 4001 /dev/urandom)
error_is wit-commit 'token file has odd size: stdin at byte 4000$'
absent bad.json

finish
