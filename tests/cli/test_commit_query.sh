#!/usr/bin/env bash
# wit-commit and wit-query on real files: determinism, proofs that verify,
# negative answers (exit 1), and bad input (one-line error, exit 2, no output left).
source "$(dirname "$0")/lib.sh"

# A small real corpus: Debian fortunes when installed, else generated text.
if [ -f /usr/share/games/fortunes/computers ]; then
  cp /usr/share/games/fortunes/computers train.txt
  cp /usr/share/games/fortunes/science eval.txt
else
  for i in $(seq 1 300); do printf 'training record number %d about topic %d\n%%\n' "$i" $((i % 7)); done >train.txt
  for i in $(seq 1 50); do printf 'held out record %d\n%%\n' "$i"; done >eval.txt
fi
present=$(awk 'BEGIN{RS="\n%\n"} NR==5{printf "%s", $0; exit}' train.txt)
absent_text="this sentence was never a fortune $$"

# --- determinism: the same data twice gives byte-identical outputs
run 0 wit-commit --reader fortune -o a.commit.json train.txt
run 0 wit-commit --reader fortune -o b.commit.json --index b.widx train.txt
same_file a.commit.json b.commit.json
same_file a.widx b.widx
run 0 wit-commit --reader fortune -j1 -o c.commit.json --index c.widx train.txt
same_file a.commit.json c.commit.json
same_file a.widx c.widx
run 0 wit-commit --reader fortune --quiet train.txt
same_file a.commit.json out
[ ! -s err ] && ok || fail "--quiet still wrote to stderr"
[ "$(json_get a.commit.json format)" = "wit.commit" ] && ok || fail "commitment format field"
n=$(json_get a.commit.json n)
[ "$n" -gt 100 ] && ok || fail "too few records: $n"

# --- inclusion of a present record
run 0 wit-query include --commit a.commit.json --index a.widx --text "$present" -o inc.json
run 0 wit-query verify --commit a.commit.json inc.json
grep -q '^valid: ' out && ok || fail "verify did not print valid"
[ "$(json_get inc.json index)" = "4" ] && ok || fail "5th fortune should be record 4, got $(json_get inc.json index)"
# the same proof from a file holding the record's bytes, and by leaf hash
printf '%s' "$present" >rec.txt
run 0 wit-query include --commit a.commit.json --index a.widx --record-file rec.txt -o inc2.json
same_file inc.json inc2.json
leaf=$(json_get inc.json leaf)
run 0 wit-query include --commit a.commit.json --index a.widx --leaf "$leaf"
same_file inc.json out
# proof read from stdin
run 0 sh -c 'wit-query verify --commit a.commit.json - < inc.json'

# --- exclusion of an absent record
run 0 wit-query exclude --commit a.commit.json --index a.widx --text "$absent_text" -o exc.json
run 0 wit-query verify --commit a.commit.json exc.json
run 0 wit-query exclude --commit a.commit.json --index a.widx --text "$absent_text" --embed-record -o exc_emb.json
run 0 sh -c 'wit-query verify --commit a.commit.json - < exc_emb.json'

# --- negative answers exit 1
run 1 wit-query include --commit a.commit.json --index a.widx --text "$absent_text"
[ ! -s out ] && ok || fail "include of an absent record printed a proof"
run 1 wit-query exclude --commit a.commit.json --index a.widx --text "$present"
# a proof checked against another dataset's commitment
run 0 wit-commit --reader fortune -o other.commit.json eval.txt
run 1 wit-query verify --commit other.commit.json inc.json
run 1 wit-query verify --commit other.commit.json exc.json
# a tampered proof: one path hash changed
awk 'f==0 && /"path": \[/ {print; getline; sub(/[0-9a-f]"/, (substr($0, length($0)-1, 1) == "0" ? "1" : "0") "\""); f=1} {print}' inc.json >bad.json
cmp -s inc.json bad.json && fail "tampering did not change the proof" || ok
run 1 wit-query verify --commit a.commit.json bad.json
# an embedded record that does not match the leaf
run 0 wit-query include --commit a.commit.json --index a.widx --text "$present" --embed-record -o emb.json
sed 's/"record": "./"record": "X/' emb.json >emb_bad.json
run 1 wit-query verify --commit a.commit.json emb_bad.json
grep -q 'embedded record' out && ok || fail "embedded record mismatch not named"

# a misspelt key is refused, not ignored (an unchecked "recOrd" must not pass)
sed 's/"record": /"recOrd": /' emb.json >misspelt.json
run 2 wit-query verify --commit a.commit.json misspelt.json
error_is wit-query "unknown field 'recOrd'"

# --- contamination certificates
run 0 wit-query contamination --commit a.commit.json --index a.widx -o clean.json eval.txt
[ "$(json_get clean.json clean)" = "true" ] && ok || fail "clean certificate not clean"
run 0 wit-query verify --commit a.commit.json clean.json
grep -q '"computed": true' clean.json && ok || fail "n-gram statistic not computed"
head -c 4000 train.txt | awk 'BEGIN{RS="\n%\n"} NR<=3{printf "%s\n%%\n", $0}' >leak.txt
cat eval.txt leak.txt >mixed.txt
run 1 wit-query contamination --commit a.commit.json --index a.widx -o dirty.json mixed.txt
[ "$(json_get dirty.json clean)" = "false" ] && ok || fail "contaminated certificate says clean"
run 0 wit-query verify --commit a.commit.json dirty.json
grep -q 'proved present' out && ok || fail "verify summary of a contaminated certificate"
# a certificate that hides its present records is caught
sed 's/"clean": false/"clean": true/' dirty.json >lie.json
run 1 wit-query verify --commit a.commit.json lie.json

# --- other readers
printf '{"text":"alpha"}\n{"text":"beta","id":2}\n\n{"text":"caf\\u00e9"}\n' >d.jsonl
run 0 wit-commit --reader jsonl -o j.commit.json d.jsonl
[ "$(json_get j.commit.json n)" = "3" ] && ok || fail "jsonl record count"
run 0 wit-query include --commit j.commit.json --index j.widx --text "café"
printf 'one\r\ntwo\n\nthree' >l.txt
run 0 wit-commit --reader lines -o l.commit.json l.txt
[ "$(json_get l.commit.json n)" = "3" ] && ok || fail "lines record count"
run 0 wit-query include --commit l.commit.json --index l.widx --text "one"
head -c 10000 /dev/urandom >tok.bin
run 0 wit-commit --reader tokens --seq-len 64 -o t.commit.json tok.bin
[ "$(json_get t.commit.json n)" = "$((10000 / 128))" ] && ok || fail "token window count"
dd if=tok.bin of=win.bin bs=128 skip=3 count=1 status=none
run 0 wit-query include --commit t.commit.json --index t.widx --record-file win.bin
[ "$(json_get out index)" = "3" ] && ok || fail "token window 3 not at index 3"
mkdir -p docs/sub && printf 'x' >docs/b && printf 'y' >docs/a && printf 'z' >docs/sub/c
run 0 wit-commit --reader files -o f.commit.json docs
[ "$(json_get f.commit.json n)" = "3" ] && ok || fail "files record count"
run 0 sh -c 'cat l.txt | wit-commit --reader lines -'
[ "$(json_get out root)" = "$(json_get l.commit.json root)" ] && ok || fail "stdin commit differs"
# an empty dataset commits, and everything is provably absent from it
: >empty.txt
run 0 wit-commit --reader lines -o e.commit.json empty.txt
run 0 wit-query exclude --commit e.commit.json --index e.widx --text anything -o e_exc.json
run 0 wit-query verify --commit e.commit.json e_exc.json

# --- bad input: one-line error, exit 2, nothing left behind
printf '{"text":"fine"}\n{"text":"cut off' >trunc.jsonl
run 2 wit-commit --reader jsonl -o tr.commit.json trunc.jsonl
error_is wit-commit 'trunc.jsonl:2'
absent tr.commit.json tr.widx
printf '{"text":"fine"}\n{"txt":"wrong"}\n' >nofield.jsonl
run 2 wit-commit --reader jsonl -o nf.commit.json nofield.jsonl
error_is wit-commit 'nofield.jsonl:2'
absent nf.commit.json nf.widx
run 2 wit-commit --reader lines -o x.commit.json does-not-exist.txt
error_is wit-commit 'does-not-exist.txt'
absent x.commit.json x.widx
run 2 wit-commit --reader tokens -o x.commit.json tok.bin
error_is wit-commit 'seq'
run 2 wit-commit --bogus-flag train.txt
error_is wit-commit 'bogus'
run 2 wit-query include --commit a.commit.json --index a.widx
error_is wit-query 'record'
# corrupted index: a flipped byte in the body
cp a.widx corrupt.widx
printf '\xff' | dd of=corrupt.widx bs=1 seek=200 conv=notrunc status=none
run 2 wit-query include --commit a.commit.json --index corrupt.widx --text "$present" -o p.json
error_is wit-query 'corrupt.*corrupt.widx'
absent p.json
# wrong magic
cp a.widx magic.widx
printf 'XXXX' | dd of=magic.widx bs=1 seek=0 conv=notrunc status=none
run 2 wit-query include --commit a.commit.json --index magic.widx --text "$present"
error_is wit-query 'wrong magic'
# unknown index version
cp a.widx v9.widx
printf '\x09' | dd of=v9.widx bs=1 seek=8 conv=notrunc status=none
run 2 wit-query include --commit a.commit.json --index v9.widx --text "$present"
error_is wit-query 'unsupported index version 9'
# truncated index
head -c 1000 a.widx >short.widx
run 2 wit-query include --commit a.commit.json --index short.widx --text "$present"
error_is wit-query 'short.widx'
# an index of another dataset
run 2 wit-query include --commit a.commit.json --index j.widx --text "$present"
error_is wit-query 'does not belong'
# unknown commitment and proof versions
sed 's/"version": 1/"version": 7/' a.commit.json >v7.commit.json
run 2 wit-query verify --commit v7.commit.json inc.json
error_is wit-query 'unsupported commitment version 7'
sed 's/"version": 1/"version": 3/' inc.json >v3.json
run 2 wit-query verify --commit a.commit.json v3.json
error_is wit-query 'unsupported proof version 3'
printf '{"format": "wit.proof", "version": 1, "type": "inclusion"' >broken.json
run 2 wit-query verify --commit a.commit.json broken.json
error_is wit-query 'broken.json'
head -c 100 a.commit.json >cut.commit.json
run 2 wit-query verify --commit cut.commit.json inc.json
error_is wit-query 'cut.commit.json'
# an output that cannot be written leaves nothing and says where
run 2 wit-commit --reader fortune -o no/such/dir/x.commit.json train.txt
error_is wit-commit 'no/such/dir'

# --- show: a person reads a commitment (and checks an index against it)
run 0 wit-commit show a.commit.json --index a.widx
root=$(json_get a.commit.json root)
grep -q "^root  *$root" out && ok || fail "show lacks the root"
grep -q "^records  *$(json_get a.commit.json n) ($(json_get a.commit.json n_unique) distinct), read as fortune" out && ok || fail "show lacks the counts"
grep -q "^index  *a.widx: matches" out && ok || fail "show did not check the index"
run 2 wit-commit show a.commit.json --index j.widx
error_is wit-commit 'does not belong'
run 2 wit-commit show train.txt
error_is wit-commit 'train.txt'
run 2 wit-commit
error_is wit-commit 'no input files'

# --- help and version
run 0 wit-commit --help
grep -q -- '--reader' out && ok || fail "help lacks --reader"
run 0 wit-query --version
grep -q '^wit-query ' out && ok || fail "version line"

finish
