#!/usr/bin/env bash
# wit-board's sealed split without LibTorch (docs/board.md, "The sealed
# split", "Epochs: reveal and seal"): init seals given records or splits one
# set at random, publishing only the public part (committed anew; the sealed
# records' text never in the folder, the sealed file outside it, mode 0600);
# the definition is signed and an edit to it is refused; reveal publishes
# the set and salts, which anyone checks against the signed commitment; seal
# starts the next epoch and refuses published or revealed records; bad input
# is a one-line error and leaves nothing behind.
source "$(dirname "$0")/lib.sh"

for i in $(seq 1 40); do printf 'benchmark record %d: %s\n' "$i" "$(printf '%0*d' $((i % 7 + 3)) "$i")"; done >pool.txt
run 0 wit-commit -q -o pool.commit.json pool.txt
run 0 wit-board init board --name split --key board.key --benchmark pool.commit.json pool.txt --sealed sealed.json --split 10
[ "$(jq .sealed.n board/board.def.json)" = 10 ] && [ "$(jq -r '.sealed.root | length' board/board.def.json)" = 64 ] && ok ||
  fail "no sealed commitment: $(cat board/board.def.json)"
[ "$(wc -l <board/benchmark/records/public.txt)" = 30 ] && ok || fail "the public part is not the other 30 records"
[ "$(jq .benchmark.n board/board.def.json)" = 30 ] && ok || fail "the benchmark is not the public part"
[ "$(stat -c %a sealed.json)" = 600 ] && ok || fail "the sealed file is readable by others"
# Every sealed record is a pool record not published; together they are the pool.
jq -r '.records[].record_hex' sealed.json | while read -r h; do printf '%s' "$h" | xxd -r -p; echo; done >sealed.txt
[ "$(wc -l <sealed.txt)" = 10 ] && ok || fail "sealed.json does not hold 10 records"
cat sealed.txt board/benchmark/records/public.txt | sort >both.txt
sort pool.txt | cmp -s - both.txt && ok || fail "sealed and public are not a split of the pool"
while read -r r; do grep -rqF "$r" board && fail "sealed record in the folder: $r"; done <sealed.txt; ok
# Two splits draw different records (the draw is secret, not derived from anything public).
run 0 wit-board init board2 --name split --key board.key --benchmark pool.commit.json pool.txt --sealed sealed2.json --split 10
cmp -s board/benchmark/records/public.txt board2/benchmark/records/public.txt && fail "two random splits agree" || ok
# The definition is signed: an edited sealed commitment or policy is refused by every reader.
cp -r board edited
jq '.sealed.n = 11' board/board.def.json >edited/board.def.json
run 2 wit-board build edited -o site
error_is wit-board "signature is not the board key.s"
run 0 wit-board build board -o site
jq -e '.board.sealed.n == 10' site/board.json >/dev/null && ok || fail "the site does not show the sealed commitment"

# Bad input: one line, nothing left behind.
run 2 wit-board init bad --name split --key board.key --benchmark pool.commit.json pool.txt --sealed sealed.json --split 10
error_is wit-board 'the sealed set file exists'
run 2 wit-board init bad --name split --key board.key --benchmark pool.commit.json pool.txt --sealed bad/s.json --split 10
error_is wit-board 'outside the board folder'
run 2 wit-board init bad --name split --key board.key --benchmark pool.commit.json pool.txt --sealed s3.json --split 40
error_is wit-board 'must leave records to publish'
run 2 wit-board init bad --name split --key board.key --benchmark pool.commit.json pool.txt --sealed s3.json
error_is wit-board 'needs both --sealed PATH'
absent bad s3.json

# The epoch ends: records and salts published, checked against the signed commitment; then the next epoch.
run 2 wit-board reveal board --key board.key --sealed sealed2.json
error_is wit-board 'is not the sealed set board.def.json commits to'
run 0 wit-board reveal board --key board.key --sealed sealed.json
[ -f board/benchmark/sealed/epoch-0.json ] && jq -e '.sealed == null and .revealed[0].n == 10' board/board.def.json >/dev/null &&
  ok || fail "not revealed: $(cat board/board.def.json)"
run 0 wit-board build board -o site
run 2 wit-board reveal board --key board.key --sealed sealed.json
error_is wit-board 'no sealed epoch to reveal'
run 2 wit-board seal board --key board.key --sealed next.json --sealed-records sealed.txt
error_is wit-board 'is already published'
for i in $(seq 41 50); do printf 'benchmark record %d: fresh\n' "$i"; done >next.txt
run 0 wit-board seal board --key board.key --sealed next.json --sealed-records next.txt
jq -e '.sealed.epoch == 1 and .sealed.n == 10' board/board.def.json >/dev/null && ok || fail "epoch 1 not sealed"
run 2 wit-board seal board --key board.key --sealed next2.json --sealed-records next.txt
error_is wit-board 'epoch 1 is still sealed'
# A revealed file edited afterwards no longer matches the signed definition.
jq '.records[0].salt = "'"$(printf '%064d' 0)"'"' board/benchmark/sealed/epoch-0.json >x.json && mv x.json board/benchmark/sealed/epoch-0.json
run 2 wit-board build board -o site
error_is wit-board 'the revealed sealed set does not match its digest'
finish
