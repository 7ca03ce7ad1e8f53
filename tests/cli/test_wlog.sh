#!/usr/bin/env bash
# wit-log on fake but complete run directories written by the make_test_run
# fixture: keys, show, head, sign, proofs that verify alone and fail when
# tampered, verify of an honest run (0) and of runs broken in each way (1),
# a torn heads line, and bad input (one-line error, exit 2).
source "$(dirname "$0")/lib.sh"

need_fixture make_test_run

# flip_byte FILE OFFSET: xor one byte of FILE with 1, in place.
flip_byte() {
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((b ^ 1)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# tamper IN OUT REGEX: change the last hex digit on the first line matching REGEX.
tamper() {
  awk -v re="$3" '!done && $0 ~ re {
      i = match($0, /[0-9a-f]",?$/); c = substr($0, i, 1)
      $0 = substr($0, 1, i - 1) (c == "0" ? "1" : "0") substr($0, i + 1); done = 1 } { print }' "$1" >"$2"
  if cmp -s "$1" "$2"; then fail "tamper did not change $1 at /$3/"; fi
}

# --- keygen
run 0 wit-log keygen -o trainer.key
pub=$(cat out)
[ "${#pub}" -eq 64 ] && ok || fail "keygen did not print a public key: $pub"
[ "$(stat -c %a trainer.key)" = "600" ] && ok || fail "secret key mode is $(stat -c %a trainer.key)"
grep -q "\"public\": \"$pub\"" trainer.key.pub && ok || fail "trainer.key.pub lacks the public key"
grep -q '"secret"' trainer.key.pub && fail "public key file holds the secret" || ok
cp trainer.key keep.key
run 2 wit-log keygen -o trainer.key
error_is wit-log 'key file exists: trainer.key'
same_file trainer.key keep.key
run 0 wit-log keygen -o other.key
run 0 wit-log keygen --force -o other.key
run 2 wit-log keygen -o no/such/dir/k.key
error_is wit-log 'no/such/dir/k.key'
absent no/such/dir/k.key

# --- an honest run
run 0 "$MKRUN" --key trainer.key run
run_id=$(cat out)
run 0 wit-log verify run
grep -q "^valid: run $run_id: 41 entries" out && ok || fail "verify summary: $(cat out)"
grep -q 'seed and initial state checked, 3 checkpoints checked' out && ok || fail "verify did not check seed and checkpoints"
run 0 wit-log verify --json run
grep -q '"valid":true' out && ok || fail "verify --json"
run 0 wit-log verify --no-checkpoints --no-init -q run

# show: one JSON object per line
run 0 wit-log show run
[ "$(wc -l <out)" -eq 41 ] && ok || fail "show printed $(wc -l <out) lines"
head -n 1 out | grep -q "\"kind\":\"genesis\".*\"run_id\":\"$run_id\"" && ok || fail "entry 0 is not the genesis"
run 0 wit-log show run --from 20 --to 21
[ "$(wc -l <out)" -eq 2 ] && ok || fail "show --from/--to"
grep -q '"sketch":{"l2":' out && ok || fail "sketch summary"
[ "$(grep -c '"state_root":"[0-9a-f]\{64\}"' out)" -eq 2 ] && ok || fail "every step entry shows its state_root"
grep -q '"checkpoint":true' out && ok || fail "entry 20 does not say a checkpoint was written"
sed -n 2p out | grep -q '"checkpoint"' && fail "entry 21 claims a checkpoint" || ok
run 0 wit-log show --full run --from 20 --to 20
grep -q '"sketch":\[' out && ok || fail "show --full does not print the sketch"

# head: the latest signed head, or the one of a given size
run 0 wit-log head run
cp out head.json
[ "$(json_get head.json size)" = "41" ] && ok || fail "latest head size"
[ "$(json_get head.json key)" = "$pub" ] && ok || fail "head key"
run 0 wit-log head --size 20 run
[ "$(json_get out size)" = "20" ] && ok || fail "head --size 20"
run 2 wit-log head --size 21 run
error_is wit-log 'no signed head of size 21'

# --- inclusion proofs verify alone, and fail when tampered
run 0 wit-log prove run 17 -o p17.json
run 0 wit-log check-proof p17.json
grep -q '^valid: entry 17 (step 17)' out && ok || fail "check-proof summary: $(cat out)"
run 0 wit-log check-proof --key trainer.key.pub p17.json
run 0 wit-log check-proof --run run p17.json
run 0 sh -c 'wit-log check-proof --json - < p17.json'
grep -q '"valid":true' out && ok || fail "check-proof --json"
run 0 wit-log prove run 17
same_file p17.json out
run 0 wit-log prove run 0 --size 10 -o p0.json
run 0 wit-log check-proof --key trainer.key.pub p0.json
run 1 wit-log check-proof --key other.key.pub p17.json
grep -q 'signed by another key' out && ok || fail "foreign key not named"
tamper p17.json t1.json '^    "[0-9a-f]+",?$'
run 1 wit-log check-proof t1.json
grep -qx 'invalid: log entry 17 is not in the signed log: proof does not lead to the root' out && ok || fail "reason not named: $(cat out err)"
tamper p17.json t2.json '"leaf": '
run 1 wit-log check-proof t2.json
grep -q 'invalid: entry bytes do not hash to the leaf' out err && ok || fail "reason not named: invalid: entry bytes do not hash to the leaf: $(cat out err)"
tamper p17.json t3.json '"root": '
run 1 wit-log check-proof t3.json
grep -q 'bad signature' out && ok || fail "tampered head root not caught by its signature"
sed 's/"index": 17/"index": 16/' p17.json >t4.json
run 1 wit-log check-proof t4.json
grep -qx 'invalid: log entry 16 is not in the signed log: proof does not lead to the root' out && ok || fail "reason not named: $(cat out err)"
sed 's/"size": 41/"size": 40/' p17.json >t5.json
run 1 wit-log check-proof t5.json
grep -q 'invalid: the head has a bad signature' out err && ok || fail "reason not named: invalid: the head has a bad signature: $(cat out err)"

# --- consistency proofs, between signed heads or unsigned log roots
run 0 wit-log consistency run 20 41 -o c.json
grep -q 'signed head) to size 41 (signed head' err && ok || fail "consistency does not say both ends are signed"
run 0 wit-log check-proof --key trainer.key.pub c.json
grep -q 'at size 20 is a prefix of the log at size 41' out && ok || fail "consistency summary: $(cat out)"
run 0 wit-log consistency run 17 33 -o c2.json
grep -q 'unsigned log root) to size 33 (unsigned log root' err && ok || fail "consistency does not say the ends are unsigned"
run 0 wit-log check-proof c2.json
grep -q 'unsigned log root' out && ok || fail "check-proof does not say the ends are unsigned"
tamper c.json t6.json '^    "[0-9a-f]+",?$'
run 1 wit-log check-proof t6.json
grep -q 'invalid: proof does not lead to the old root' out err && ok || fail "reason not named: invalid: proof does not lead to the old root: $(cat out err)"
tamper c2.json t7.json '"root": '
run 1 wit-log check-proof t7.json
grep -q 'invalid: proof does not lead to the root' out err && ok || fail "reason not named: invalid: proof does not lead to the root: $(cat out err)"
run 1 wit-log check-proof --key other.key.pub c.json
grep -q 'invalid: the old head is signed by another key' out err && ok || fail "reason not named: invalid: the old head is signed by another key: $(cat out err)"

# --- runs broken one way each are rejected, naming the first failure
check_invalid() {  # check_invalid VARIANT PATTERN
  run 0 "$MKRUN" --key trainer.key --variant "$1" "r-$1" || return
  run 1 wit-log verify "r-$1" || return
  if grep -qE -- "^invalid: .*$2" out; then ok; else fail "$1: '$(cat out)' does not match /$2/"; fi
}
check_invalid removed-entry 'entry 17 is the entry of step 18, not of step 17'
# an entry that is in the signed log but out of its place: the proof holds, the place does not
# (the trainer signs a head over the log with an entry cut out)
rm -rf misplaced && cp -r r-removed-entry misplaced
run 0 wit-log sign misplaced --key trainer.key --time 1700000500
run 0 wit-log prove misplaced 17 --size 40 -o misplaced.json
run 1 wit-log check-proof misplaced.json
grep -qx 'invalid: entry 17 is the entry of step 18, not of step 17' out && ok || fail "misplaced entry: $(cat out err)"
check_invalid rewritten-entry 'run.heads:3: root does not match the log at size 30'
check_invalid foreign-head 'run.heads:2: the head is signed by another key'
check_invalid bad-root 'run.heads:3: root does not match'
check_invalid reordered-heads 'run.heads:3: size 20 is smaller'
check_invalid unsigned-tail 'the last head covers 40 of 41 entries'
check_invalid bad-genesis-run 'entry 0 is the genesis of run [0-9a-f]{64}, not of run'
check_invalid bad-init 'entry 0: init_root is not the initial state'
check_invalid bad-seed 'seed commitment'
check_invalid bad-ckpt "step-000020.safetensors: the checkpoint's state root does not match entry 20"
# an unrevealed seed is a warning, not a failure
run 0 "$MKRUN" --key trainer.key --variant no-seed r-no-seed
run 0 wit-log verify r-no-seed
grep -q 'warning: seed not revealed yet' err && ok || fail "no warning for an unrevealed seed"
# a head signed by another key is refused by head and prove too
run 1 wit-log head --size 20 r-foreign-head
run 1 wit-log prove r-bad-root 3 --size 30

# any flipped byte of the log is caught
size=$(stat -c %s run/run.wlog)
for off in 0 5 100 4000 17000 30000 $((size - 1)); do
  rm -rf f && cp -r run f
  flip_byte f/run.wlog "$off"
  run 1 wit-log verify f
done
# an entry cut out of the middle, frames intact, is caught (variant removed-entry above);
# the log cut short at a frame boundary leaves the last head uncovered
rm -rf f && cp -r run f
truncate -s -20 f/run.wlog
run 1 wit-log verify f
grep -q 'torn frame' out && ok || fail "torn log tail not named"

# --- a torn heads line: verify and head skip it, sign refuses or repairs it
rm -rf t && cp -r r-unsigned-tail t
printf '{"key":"%s","ro' "$pub" >>t/run.heads
run 0 wit-log head t
[ "$(json_get out size)" = "40" ] && ok || fail "head of a torn heads file"
grep -q 'torn last line ignored' err && ok || fail "torn heads line not reported"
run 1 wit-log verify t
grep -q 'warning: .*run.heads:5: torn last line ignored' err && ok || fail "verify does not warn about the torn line"
run 2 wit-log sign t --key trainer.key
error_is wit-log 'heads file ends in a torn line'
run 2 wit-log sign t --key other.key --repair
error_is wit-log "key is not the manifest's trainer key"
run 0 wit-log sign t --key trainer.key --repair --time 1700000099
[ "$(json_get out size)" = "41" ] && ok || fail "signed head size"
run 0 wit-log verify t
run 1 wit-log verify r-unsigned-tail --json
grep -q '"valid":false' out && ok || fail "unsigned tail verified"

# --- bad input: one-line error, exit 2
run 2 wit-log verify no-such-run
error_is wit-log 'no-such-run/run.json'
mkdir -p empty-run && cp run/run.json empty-run/
run 2 wit-log verify empty-run
error_is wit-log 'empty-run/run.wlog'
run 2 wit-log show no-such-run
error_is wit-log 'no-such-run/run.wlog'
run 2 wit-log prove run 41
error_is wit-log 'entry 41 is not covered by the head'
run 2 wit-log consistency run 30 20
error_is wit-log 'OLD_SIZE is larger than NEW_SIZE'
run 2 wit-log consistency run 0 20
error_is wit-log 'OLD_SIZE must be at least 1'
run 2 wit-log consistency run 20 42
error_is wit-log 'NEW_SIZE is beyond the log'
printf 'not json' >junk.json
run 2 wit-log check-proof junk.json
error_is wit-log 'not valid json: junk.json'
printf '{"format":"wit.proof","version":1}' >other.json
run 2 wit-log check-proof other.json
error_is wit-log 'not a wit log proof'
sed 's/"version": 1/"version": 2/' p17.json >v2.json
run 2 wit-log check-proof v2.json
error_is wit-log 'unsupported log proof version 2'
grep -v '"path"' p17.json | sed 's/^  \],$/  "x": 1,/' >nopath.json
run 2 wit-log check-proof nopath.json
error_is wit-log 'nopath.json'
run 2 wit-log check-proof --key other.key.pub --run run p17.json
error_is wit-log 'not the trainer key of --run'
run 2 wit-log check-proof --key junk.json p17.json
error_is wit-log 'junk.json'
run 2 wit-log sign run --key trainer.key.pub
error_is wit-log 'not a secret key'
run 2 wit-log show run --from 50
error_is wit-log 'no entry 50'
run 2 wit-log prove run
error_is wit-log 'STEP'
run 2 wit-log keygen
error_is wit-log 'output'
run 2 wit-log frobnicate
error_is wit-log 'subcommand|frobnicate'
rm -rf m && cp -r run m && sed -i 's/"batch_size": 4/"batch_size":  4/' m/run.json
run 2 wit-log verify m
error_is wit-log 'canonical'

# --- help and version
run 0 wit-log --help
for sub in keygen show head sign prove consistency check-proof verify; do
  grep -q "$sub" out && ok || fail "help lacks $sub"
done
run 0 wit-log verify --help
grep -q -- '--no-checkpoints' out && ok || fail "verify help lacks --no-checkpoints"
run 0 wit-log --version
grep -q '^wit-log ' out && ok || fail "version line"

finish
