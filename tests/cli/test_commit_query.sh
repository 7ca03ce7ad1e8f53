#!/usr/bin/env bash
# wit-commit and wit-query on real files: determinism, proofs that verify,
# negative answers (exit 1), a commitment forged to leave records out of its
# tree (refused given the files), and bad input (one-line error, exit 2, no
# output left).
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
grep -q 'first at train.txt, record 5)' err && ok || fail "include does not say where the 5th fortune is: $(cat err)"
# its index is its position in the one sorted tree, not in the file
pos=$(json_get inc.json index)
[ -n "$pos" ] && [ "$pos" -lt "$n" ] && grep -q "included: position $pos of $n distinct records" err && ok || fail "position $pos"
run 0 wit-query verify --commit a.commit.json inc.json
grep -q '^valid: ' out && ok || fail "verify did not print valid"
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
grep -q 'is in the committed data (position' out err && ok || fail "reason not named: is in the committed data (position: $(cat out err)"
# a proof checked against another dataset's commitment
run 0 wit-commit --reader fortune -o other.commit.json eval.txt
run 1 wit-query verify --commit other.commit.json inc.json
grep -q 'invalid: proof is for another commitment' out err && ok || fail "reason not named: invalid: proof is for another commitment: $(cat out err)"
run 1 wit-query verify --commit other.commit.json exc.json
grep -q 'invalid: proof is for another commitment' out err && ok || fail "reason not named: invalid: proof is for another commitment: $(cat out err)"
# a tampered proof: one path hash changed
awk 'f==0 && /"path": \[/ {print; getline; sub(/[0-9a-f]"/, (substr($0, length($0)-1, 1) == "0" ? "1" : "0") "\""); f=1} {print}' inc.json >bad.json
cmp -s inc.json bad.json && fail "tampering did not change the proof" || ok
run 1 wit-query verify --commit a.commit.json bad.json
# (the first sibling is one leaf, whose range is its own hash: the changed hash no longer matches it)
grep -q "invalid: a sibling's stated key range is not a range of its leaves" out err && ok ||
  fail "reason not named: a sibling's stated key range: $(cat out err)"
# the same hash changed in its range too: now the path misses the root
h=$(awk '/"path": \[/ {getline; gsub(/[ ",]/, ""); print; exit}' inc.json)
t=${h%?}$([ "${h: -1}" = 0 ] && echo 1 || echo 0)
sed "s/$h/$t/g" inc.json >bad2.json
[ "$(grep -c "$t" bad2.json)" -eq 3 ] && ok || fail "the first sibling's hash is not in path and range: $(grep -c "$t" bad2.json)"
run 1 wit-query verify --commit a.commit.json bad2.json
grep -q 'invalid: proof does not lead to the root' out err && ok || fail "reason not named: invalid: proof does not lead to the root: $(cat out err)"
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
grep -q 'first at tok.bin, record 4)' err && ok || fail "token window 3 is not the 4th record: $(cat err)"
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

# --- the attack of issue 12: a commitment whose tree leaves out test records
# that the training file holds. The training file is train.txt plus 40 eval
# records; the forger commits a file with the same record count but without
# them (train.txt padded with 40 repeats), then claims the real file's sources,
# so the commitment and its index are consistent with each other and every
# proof against them verifies.
awk 'BEGIN{RS="\n%\n"} NR<=40{printf "%s\n%%\n", $0}' eval.txt >eval40.txt
{ cat train.txt; printf '%%\n'; cat eval40.txt; } >train_leak.txt
first=$(awk 'BEGIN{RS="\n%\n"} NR==1{printf "%s", $0; exit}' train.txt)
{ cat train.txt; printf '%%\n'; for i in $(seq 1 40); do printf '%s\n%%\n' "$first"; done; } >pad.txt
run 0 wit-commit --reader fortune -o honest.commit.json train_leak.txt
run 0 wit-commit --reader fortune -o forged0.commit.json --index forged.widx pad.txt
[ "$(json_get honest.commit.json records)" = "$(json_get forged0.commit.json records)" ] && ok || fail "forgery setup: record counts"
jq --slurpfile h honest.commit.json '.sources = $h[0].sources | .inputs = $h[0].inputs' forged0.commit.json >forged.commit.json
run 0 wit-commit show forged.commit.json --index forged.widx
# the lie, were the files not checked: each leaked record has a valid exclusion proof
leak=$(awk 'BEGIN{RS="\n%\n"} NR==7{printf "%s", $0; exit}' eval40.txt)
run 0 wit-query exclude --commit forged.commit.json --index forged.widx --text "$leak" -o lie.json
run 0 wit-query verify --commit forged.commit.json lie.json
# given the files, wit-query contamination refuses it, naming the first mismatch
run 2 wit-query contamination --commit forged.commit.json --index forged.widx --train-data train_leak.txt -o forged_cert.json eval40.txt
error_is wit-query 'training files do not match the commitment: the files hold [0-9]+ distinct records, the commitment.s tree has [0-9]+ .*train_leak.txt'
absent forged_cert.json
# ... and so it does when it finds them from the commitment's inputs
run 2 wit-query contamination --commit forged.commit.json --index forged.widx -o forged_cert.json eval40.txt
error_is wit-query 'training files do not match the commitment'
absent forged_cert.json
# the honest commitment of the same files proves the leak
run 1 wit-query contamination --commit honest.commit.json --index honest.widx -o honest_cert.json eval40.txt
grep -q 'contaminated: 40 of 40 distinct eval records' err && ok || fail "honest certificate: $(cat err)"
run 0 wit-query verify --commit honest.commit.json honest_cert.json
# wit-train (when built) refuses to train on it, before writing anything
if [ -x "$WIT_BIN/wit-train" ]; then
  printf '{"steps": 2, "batch_size": 4}\n' >forged_run.json
  run 2 wit-train -q --config forged_run.json --data forged.commit.json --index forged.widx --out forged_run train_leak.txt
  error_is wit-train 'data files do not match the commitment: the files hold [0-9]+ distinct records, the commitment.s tree has'
  absent forged_run
fi

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
printf '{"text":"fine"}\nnot json at all\n' >notjson.jsonl
run 2 wit-commit --reader jsonl -o nj.commit.json notjson.jsonl
error_is wit-commit 'invalid json: .*notjson.jsonl:2'
absent nj.commit.json nj.widx
printf '{"text":"fine"}\n{"text":"also fine"}\n' >good.jsonl
run 2 wit-commit --reader jsonl -o x.commit.json good.jsonl docs
error_is wit-commit 'docs'
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
run 2 wit-query include --commit a.commit.json --index j.widx --text "$present" -o p.json
error_is wit-query 'does not belong to commitment a.commit.json \(root differs\): j.widx'
absent p.json
run 2 wit-query contamination --commit a.commit.json --index j.widx -o cert.json eval.txt
error_is wit-query 'does not belong to commitment a.commit.json'
absent cert.json
# unknown commitment and proof versions
sed 's/"version": 3/"version": 7/' a.commit.json >v7.commit.json
run 2 wit-query verify --commit v7.commit.json inc.json
error_is wit-query 'unsupported commitment version 7'
sed 's/"version": 3/"version": 4/' inc.json >v4.json
run 2 wit-query verify --commit a.commit.json v4.json
error_is wit-query 'unsupported proof version 4 \(this wit reads versions 2 and 3\)'
# a version 2 document is checked against a version 2 commitment only
sed 's/"version": 3/"version": 2/' inc.json >v2.json
run 1 wit-query verify --commit a.commit.json v2.json
grep -q '^invalid: proof is of version 2, its commitment of version 3' out && ok || fail "v2 proof, v3 commitment: $(cat out)"
printf '{"format": "wit.proof", "version": 3, "type": "inclusion"' >broken.json
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
grep -q "^records  *$(json_get a.commit.json records) in the files, $(json_get a.commit.json n) distinct, read as fortune" out && ok || fail "show lacks the counts"
grep -q "^index  *a.widx: matches; its $(json_get a.commit.json n) leaves are sorted" out && ok || fail "show did not audit the index"
# older files are refused with the version this wit reads
sed 's/"version": 3/"version": 1/' a.commit.json >v1.commit.json
run 2 wit-commit show v1.commit.json
error_is wit-commit 'unsupported commitment version 1 \(this wit reads versions 2 and 3\)'
cp a.widx v1.widx
printf '\x01' | dd of=v1.widx bs=1 seek=8 conv=notrunc status=none
run 2 wit-commit show a.commit.json --index v1.widx
error_is wit-commit 'unsupported index version 1 \(this wit reads versions 2 and 3\)'

# --- duplicates: one leaf, counted plainly
printf 'same\nother\nsame\nsame\n' >dup.txt
run 0 wit-commit --reader lines -o dup.commit.json dup.txt
[ "$(json_get dup.commit.json records)" = "4" ] && [ "$(json_get dup.commit.json n)" = "2" ] && ok || fail "duplicate counts"
run 0 wit-commit show dup.commit.json
grep -q "^records  *4 in the files, 2 distinct" out && ok || fail "show does not count repeats: $(cat out)"
grep -q "2 repeats: a record is one leaf" out && ok || fail "show does not say repeats are one leaf"
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
