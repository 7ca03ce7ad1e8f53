#!/usr/bin/env bash
# wit-challenge on the signed heads of a run written by the make_test_run
# fixture (40 steps, checkpoints every 20): challenges from `wit-log head`
# output and from --run, determinism, -k against --confidence, segments,
# --check of a challenge and of edited ones, and bad input (one-line error,
# exit 2, no output file left behind).
source "$(dirname "$0")/lib.sh"

need_fixture make_test_run

# tamper IN OUT REGEX: change the last hex digit on the first line matching REGEX.
tamper() {
  awk -v re="$3" '!done && $0 ~ re {
      i = match($0, /[0-9a-f]",?$/); c = substr($0, i, 1)
      $0 = substr($0, 1, i - 1) (c == "0" ? "1" : "0") substr($0, i + 1); done = 1 } { print }' "$1" >"$2"
  if cmp -s "$1" "$2"; then fail "tamper did not change $1 at /$3/"; fi
}
# bump_first_step IN OUT: add 1 to the first challenged step.
bump_first_step() {
  awk 'after { sub(/[0-9]+/, $1 + 1); after = 0 } /"steps": \[/ { after = 1 } { print }' "$1" >"$2"
  if cmp -s "$1" "$2"; then fail "bump_first_step did not change $1"; fi
}

NONCE=00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
NONCE2=00112233445566778899aabbccddeeff00112233445566778899aabbccddeef0

run 0 wit-log keygen -o trainer.key
run 0 "$MKRUN" --key trainer.key run
run_id=$(cat out)
run 0 wit-log head run
cp out head.json

# --- a challenge from `wit-log head` output
run 0 wit-challenge --head head.json --nonce "$NONCE" -k 5
cp out c1.json
[ "$(json_get c1.json format)" = "wit.challenge" ] && ok || fail "format: $(json_get c1.json format)"
[ "$(json_get c1.json version)" = "1" ] && ok || fail "version"
[ "$(json_get c1.json run_id)" = "$run_id" ] && ok || fail "run_id"
[ "$(json_get c1.json nonce)" = "$NONCE" ] && ok || fail "nonce"
[ "$(json_get c1.json checkpoint_every)" = "0" ] && ok || fail "checkpoint_every without segments"
n=$(awk '/"steps": \[/ { on = 1; next } on && /\]/ { on = 0 } on { n++ } END { print n + 0 }' c1.json)
[ "$n" -eq 5 ] && ok || fail "5 steps expected, got $n"
grep -q '"k": 5,' c1.json && ok || fail "guarantee k"
grep -q '"segments": \[\]' c1.json && ok || fail "no segments expected"
grep -q '^wit-challenge: 5 steps and 0 segments of run' err && ok || fail "summary: $(cat err)"
grep -q 'a run that tampered with at least 5% of its 40 steps (2 steps) is caught by these 5 challenges with probability at least 23.71%' err \
  && ok || fail "guarantee words: $(cat err)"
grep -q 'default fraction 0.05' err && ok || fail "the default fraction is not said"

# deterministic: again, via -o, via stdin, via --run, with the nonce from a file
run 0 wit-challenge --head head.json --nonce "$NONCE" -k 5
same_file out c1.json
run 0 wit-challenge --head head.json --nonce "$NONCE" -k 5 -o c1b.json
same_file c1b.json c1.json
[ -s out ] && fail "stdout not empty with -o" || ok
grep -q 'written to c1b.json' err && ok || fail "summary does not name the output"
run 0 wit-challenge --head - --nonce "$NONCE" -k 5 <head.json
same_file out c1.json
run 0 wit-challenge --run run --nonce "$NONCE" -k 5
same_file out c1.json
printf '%s\n' "$NONCE" >nonce.txt
run 0 wit-challenge --head head.json --nonce-file nonce.txt -k 5
same_file out c1.json
run 0 wit-challenge --head head.json --nonce "$(tr a-f A-F <<<"$NONCE")" -k 5
same_file out c1.json
# another nonce, another draw; -q silences stderr
run 0 wit-challenge -q --head head.json --nonce "$NONCE2" -k 5
cmp -s out c1.json && fail "another nonce gave the same challenge" || ok
[ -s err ] && fail "stderr not empty with -q: $(cat err)" || ok

# --- -k against --confidence
run 0 wit-challenge --head head.json --nonce "$NONCE" --confidence 0.9 --fraction 0.1 -o conf.json
grep -q '"k": 17,' conf.json && ok || fail "--confidence 0.9 --fraction 0.1 over 40 steps should give k = 17"
grep -q 'at least 10% of its 40 steps (4 steps) is caught by these 17 challenges with probability at least 90.31%' err \
  && ok || fail "confidence words: $(cat err)"
grep -q 'default fraction' err && fail "default fraction mentioned with --fraction" || ok
run 0 wit-challenge --head head.json --nonce "$NONCE" -k 17 --fraction 0.1
same_file out conf.json
run 0 wit-challenge --head head.json --nonce "$NONCE" -k 16 --fraction 0.1
grep -q '"k": 16,' out && ok || fail "-k 16"
grep -q '"detection": 0.8' out && ok || fail "16 challenges should detect below 90%"
run 0 wit-challenge --head head.json --nonce "$NONCE" -k 40
grep -q 'with certainty' err && ok || fail "k = T is certain: $(cat err)"

# --- segments
run 0 wit-challenge --head head.json --nonce "$NONCE" -k 5 --segments 2 --checkpoint-every 20 -o seg.json
[ "$(json_get seg.json checkpoint_every)" = "20" ] && ok || fail "checkpoint_every 20"
tr -d ' \n' <seg.json | grep -q '"segments":\[{"from":0,"to":20},{"from":20,"to":40}\]' && ok || fail "segments: $(tr -d ' \n' <seg.json)"
# segments come after the steps in the stream: the steps do not change
diff <(sed -n '/"steps": \[/,/\]/p' seg.json) <(sed -n '/"steps": \[/,/\]/p' c1.json) >/dev/null && ok || fail "segments changed the steps"
run 0 wit-challenge --run run --nonce "$NONCE" -k 5 --segments 2
same_file out seg.json
run 0 wit-challenge --head head.json --nonce "$NONCE" -k 5 --segments 1 --checkpoint-every 15
tr -d ' \n' <out | grep -qE '"segments":\[\{"from":(0,"to":15|15,"to":30|30,"to":40)\}\]' && ok || fail "segment of width 15: $(tr -d ' \n' <out)"

# --- --check: re-derive and check
run 0 wit-challenge --check c1.json
grep -q "^valid: 5 steps and 0 segments of run $run_id under the head of size 41" out && ok || fail "check: $(cat out)"
grep -q 'caught by these 5 challenges' err && ok || fail "check prints the guarantee"
run 0 wit-challenge --check seg.json --run run
run 0 wit-challenge --check - <conf.json
bump_first_step c1.json edited.json
run 2 wit-challenge --check edited.json
error_is wit-challenge 'invalid challenge: the steps are not the ones the head and nonce give: edited.json'
tamper c1.json edited.json '"sig":'
run 2 wit-challenge --check edited.json
error_is wit-challenge "has a bad signature: edited.json"
tamper c1.json edited.json '"nonce":'
run 2 wit-challenge --check edited.json
error_is wit-challenge "seed is not the one the head and nonce give"
sed 's/"version": 1/"version": 2/' c1.json >edited.json
run 2 wit-challenge --check edited.json
error_is wit-challenge 'unsupported challenge version 2'
sed 's/"wit.challenge"/"wit.proof"/' c1.json >edited.json
run 2 wit-challenge --check edited.json
error_is wit-challenge "not a challenge \(format 'wit.proof'\)"
sed 's/"detection": 0.2/"detection": 0.3/' c1.json >edited.json
run 2 wit-challenge --check edited.json
error_is wit-challenge 'probabilities'
echo '{' >edited.json
run 2 wit-challenge --check edited.json
error_is wit-challenge 'invalid challenge: not valid json: edited.json'
# a run whose trainer is someone else: --check --run refuses the head
run 0 wit-log keygen -o other.key
run 0 "$MKRUN" --key other.key other
run 2 wit-challenge --check c1.json --run other
error_is wit-challenge "the challenge's head names another run: c1.json"

# --- bad input: exit 2, one line, no output file
run 2 wit-challenge --head head.json --nonce 0011 -k 5 -o bad.json
error_is wit-challenge '^wit-challenge: error: --nonce is not 64 hex digits: 0011$'
absent bad.json
run 2 wit-challenge --head head.json --nonce "${NONCE%?}g" -k 5 -o bad.json
error_is wit-challenge '--nonce is not 64 hex digits'
absent bad.json
printf 'zz\n' >badnonce.txt
run 2 wit-challenge --head head.json --nonce-file badnonce.txt -k 5 -o bad.json
error_is wit-challenge 'nonce file is not 64 hex digits: badnonce.txt'
absent bad.json
run 2 wit-challenge --head head.json --nonce-file no-such-nonce -k 5 -o bad.json
error_is wit-challenge 'no-such-nonce'
absent bad.json
echo '{"size": 41' >badhead.json
run 2 wit-challenge --head badhead.json --nonce "$NONCE" -k 5 -o bad.json
error_is wit-challenge 'invalid tree head: not valid json: badhead.json'
absent bad.json
echo '{"size": 41}' >badhead.json
run 2 wit-challenge --head badhead.json --nonce "$NONCE" -k 5 -o bad.json
error_is wit-challenge 'invalid tree head: .*badhead.json'
absent bad.json
tamper head.json badhead.json '"sig":'
run 2 wit-challenge --head badhead.json --nonce "$NONCE" -k 5 -o bad.json
error_is wit-challenge "the head has a bad signature: badhead.json"
absent bad.json
sed 's/"size": 41/"size": 40/' head.json >badhead.json
run 2 wit-challenge --head badhead.json --nonce "$NONCE" -k 5 -o bad.json
error_is wit-challenge "has a bad signature"
absent bad.json
run 2 wit-challenge --head no-such-head.json --nonce "$NONCE" -k 5 -o bad.json
error_is wit-challenge 'no-such-head.json'
absent bad.json
run 2 wit-challenge --head head.json --nonce "$NONCE" -k 41 -o bad.json
error_is wit-challenge '-k must be between 1 and the 40 steps the head covers: 41'
absent bad.json
run 2 wit-challenge --head head.json --nonce "$NONCE" -k 0 -o bad.json
error_is wit-challenge '-k must be between 1 and the 40 steps'
absent bad.json
run 2 wit-challenge --head head.json --nonce "$NONCE" --confidence 1 --fraction 0.1 -o bad.json
error_is wit-challenge '--confidence must be between 0 and 1'
absent bad.json
run 2 wit-challenge --head head.json --nonce "$NONCE" --confidence 0.9 --fraction 0 -o bad.json
error_is wit-challenge '--fraction must be in \(0, 1\]'
absent bad.json
run 2 wit-challenge --head head.json --nonce "$NONCE" -k 5 --fraction 1.5 -o bad.json
error_is wit-challenge '--fraction must be in'
absent bad.json
run 2 wit-challenge --head head.json --nonce "$NONCE" --confidence 0.9 -o bad.json
error_is wit-challenge '--confidence needs --fraction'
absent bad.json
run 2 wit-challenge --head head.json --nonce "$NONCE" -k 5 --confidence 0.9 --fraction 0.1 -o bad.json
error_is wit-challenge 'excludes'
absent bad.json
run 2 wit-challenge --head head.json --nonce "$NONCE" -o bad.json
error_is wit-challenge 'missing -k N or --confidence P --fraction F'
run 2 wit-challenge --head head.json -k 5 -o bad.json
error_is wit-challenge 'missing --nonce'
run 2 wit-challenge --nonce "$NONCE" -k 5 -o bad.json
error_is wit-challenge 'missing --head HEAD.json or --run RUN'
run 2 wit-challenge --head head.json --run run --nonce "$NONCE" -k 5 -o bad.json
error_is wit-challenge 'excludes'
run 2 wit-challenge --head head.json --nonce "$NONCE" -k 5 --segments 2 -o bad.json
error_is wit-challenge '--segments needs --checkpoint-every'
run 2 wit-challenge --head head.json --nonce "$NONCE" -k 5 --segments 3 --checkpoint-every 20 -o bad.json
error_is wit-challenge 'more segments than the head.s 2 checkpoint intervals'
run 2 wit-challenge --head head.json --nonce "$NONCE" -k 5 --segments 1 --checkpoint-every 0 -o bad.json
error_is wit-challenge '--checkpoint-every must be at least 1'
absent bad.json
run 2 wit-challenge --run no-such-run --nonce "$NONCE" -k 5 -o bad.json
error_is wit-challenge 'no-such-run'
absent bad.json
run 2 wit-challenge --head head.json --nonce "$NONCE" -k 5 -o no/such/dir/c.json
error_is wit-challenge 'no/such/dir/c.json'
absent no/such/dir/c.json
run 2 wit-challenge --check c1.json --nonce "$NONCE"
error_is wit-challenge 'excludes'
run 2 wit-challenge --bogus
error_is wit-challenge 'bogus'

run 0 wit-challenge --version
grep -q '^wit-challenge ' out && ok || fail "--version: $(cat out)"
run 0 wit-challenge --help
grep -q -- '--confidence' out && ok || fail "--help lacks --confidence"

finish
