#!/usr/bin/env bash
# Honest runs, really replayed, and the verifier's noise options:
#  - three seeds, each trained with a thread count a and verified with b for
#    pairs of {1, 2, 3, 4}, every step challenged, plus a segment challenge
#    (whole checkpoint intervals): every real verification certifies; the
#    count and the worst distance/threshold ratio of all reports are printed;
#  - --margin: a margin far too small rejects an honest step, naming the field
#    and step; the default passes; inf, nan, 0 and negatives are exit-2 errors;
#  - wit-replay calibrate writes a well-formed calibration that verify
#    --calibration uses and records in its report; a bad file is a one-line
#    exit-2 error and no report is written;
#  - the response streams to standard output too, byte for byte the file; a
#    response that fails halfway leaves no file; verify --run (the response
#    built into a private file) certifies and leaves nothing in TMPDIR.
source "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "skip: jq not found (apt-get install jq)" >&2; exit 77; }
nonce() { printf '%064x' "$1"; }

for i in $(seq 1 200); do printf 'record %d of a small corpus for the replay test\n' "$i"; done >data.txt
run 0 wit-commit -q -o data.commit.json data.txt
run 0 wit-log keygen -o key
config() {  # config SEED
  cat <<CFG
{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": 4, "steps": 12, "checkpoint_every": 4, "head_every": 4,
 "optimizer": {"lr": 0.003},
 "fingerprint": {"sketch_k": 128, "probe_every": 6, "probe_records": 4, "probe_dim": 16},
 "seed": "$(printf '%064x' "$1")"}
CFG
}

verifications=0
rejections=0
# verify_ok NAME ARGS...: one real verification that must certify.
verify_ok() {
  local name=$1
  shift
  verifications=$((verifications + 1))
  if wit-replay verify -q "$@" -o "$name.report.json" >/dev/null 2>"$T/err"; then
    ok
  else
    rejections=$((rejections + 1))
    fail "$name: an honest run rejected: $(head -2 "$T/err") $(jq -c '.reason' "$name.report.json" 2>/dev/null)"
  fi
}

# seed: train threads, verify threads
for case in "1 2 1" "2 1 3" "3 4 2" "4 3 4" "5 1 4"; do
  read -r seed a b <<<"$case"
  R=run$seed
  config "$seed" >"$R.json"
  run 0 wit-train -q -j"$a" --config "$R.json" --data data.commit.json --index data.widx --key key --out "$R" data.txt
  wit-log head "$R" >"$R.head.json"
  run 0 wit-challenge -q --head "$R.head.json" --nonce "$(nonce "$seed")" -k 12 -o "$R.all.json"
  run 0 wit-replay respond -q -j"$a" --run "$R" "$R.all.json" -o "$R.all.wbundle"
  verify_ok "$R.all.j$b" -j"$b" --bundle "$R.all.wbundle" "$R.all.json"
  [ "$(jq '[.checks[] | select(.pass)] | length' "$R.all.j$b.report.json")" = 12 ] && ok ||
    fail "$R: not all 12 steps replayed and passed"
  # Segments: both checkpoint intervals after the first, from exact roots.
  run 0 wit-challenge -q --run "$R" --nonce "$(nonce $((seed + 100)))" -k 1 --segments 2 -o "$R.seg.json"
  run 0 wit-replay respond -q -j"$a" --run "$R" "$R.seg.json" -o "$R.seg.wbundle"
  verify_ok "$R.seg.j$b" -j"$b" --bundle "$R.seg.wbundle" "$R.seg.json"
  [ "$(jq '[.checks[] | select(.kind == "segment" and .pass)] | length' "$R.seg.j$b.report.json")" = 8 ] && ok ||
    fail "$R: a segment challenge did not replay 2 x 4 transitions"
done
# The worst distance / threshold over every judged field of every check.
worst=$(jq -s '[.[].checks[] | .distances as $d | .thresholds | to_entries[] |
                select(.value > 0 and ($d[.key] | type) == "number") | $d[.key] / .value] | max' ./*.report.json)
echo "honest replays: $verifications real verifications, $rejections rejected; worst distance/threshold $worst"
[ "$rejections" -eq 0 ] && ok || fail "$rejections honest verifications rejected"
awk -v w="$worst" 'BEGIN { exit !(w != "null" && w > 0 && w < 1) }' && ok || fail "worst ratio $worst not in (0, 1)"

# --- --margin: the default passes (above); a margin of 1e-4 puts the
# threshold far below the replay noise between 2 and 1 threads.
R=run1
run 1 wit-replay verify -q -j1 --margin 1e-4 --bundle "$R.all.wbundle" "$R.all.json" -o small.json
[ "$(jq -r .verdict small.json)" = rejected ] && [ "$(jq .margin small.json)" = 0.0001 ] && ok ||
  fail "margin 1e-4: $(jq -c '{verdict, margin}' small.json)"
jq -r .reason small.json | grep -qE '^(weights|adam_m|adam_v|grad_norm|losses) differs beyond the replay noise at step [0-9]+' && ok ||
  fail "margin 1e-4: reason $(jq -r .reason small.json)"
[ "$(jq '[.checks[] | select(.pass | not)] | length' small.json)" -ge 1 ] && ok || fail "margin 1e-4: no failed check"
for m in inf nan 0 -1; do
  run 2 wit-replay verify -q -j1 --margin "$m" --bundle "$R.all.wbundle" "$R.all.json" -o m.json
  error_is wit-replay 'margin must (be a finite number above 0|not be negative)'
  absent m.json
done

# --- calibrate, then verify with the file
run 0 wit-replay calibrate -q -j1 --threads-a 1 --threads-b 3 --steps 3 --bundle "$R.all.wbundle" "$R.all.json" -o cal.json
[ "$(jq -r .format cal.json)" = wit.calibration ] && [ "$(jq .version cal.json)" = 2 ] &&
  [ "$(jq -c .threads cal.json)" = "[1,3]" ] && [ "$(jq '.steps | length' cal.json)" = 3 ] &&
  [ "$(jq -r .run_id cal.json)" = "$(jq -r .run_id "$R.all.j1.report.json")" ] &&
  [ "$(jq '[.noise[] | select(type == "number" and . >= 0)] | length' cal.json)" = 6 ] && ok ||
  fail "calibration file: $(cat cal.json)"
verify_ok with-cal -j2 --calibration cal.json --bundle "$R.all.wbundle" "$R.all.json"
[ "$(jq -c .calibration with-cal.report.json)" = "$(jq -c . cal.json)" ] && ok ||
  fail "the report does not record the calibration file: $(jq -c .calibration with-cal.report.json)"
# Bad calibration files: one-line errors, exit 2, no report.
echo '{}' >bad.json
run 2 wit-replay verify -q -j1 --calibration bad.json --bundle "$R.all.wbundle" "$R.all.json" -o r.json
error_is wit-replay 'not a wit calibration: bad.json'
absent r.json
jq '.version = 1' cal.json >v1.json
run 2 wit-replay verify -q -j1 --calibration v1.json --bundle "$R.all.wbundle" "$R.all.json" -o r.json
error_is wit-replay 'unsupported calibration version 1: v1.json'
grep -q 'run wit-replay calibrate again' err && ok || fail "no hint for a version-1 calibration: $(cat err)"
absent r.json
jq '.noise.weights = -1' cal.json >neg.json
run 2 wit-replay verify -q -j1 --calibration neg.json --bundle "$R.all.wbundle" "$R.all.json" -o r.json
error_is wit-replay 'calibration'
absent r.json
printf '{"format": "wit.calibration"' >cut.json
run 2 wit-replay verify -q -j1 --calibration cut.json --bundle "$R.all.wbundle" "$R.all.json" -o r.json
error_is wit-replay 'cut.json'
absent r.json

# --- streamed responses
wit-replay respond -q --run "$R" "$R.seg.json" -o - >stdout.wbundle && cmp -s stdout.wbundle "$R.seg.wbundle" && ok ||
  fail "the response on standard output differs from the file"
# A member missing halfway (after the batches and log entries are written) fails the response.
cp -r "$R" broken && rm broken/probe.json
run 2 wit-replay respond -q --run broken "$R.seg.json" -o broken.wbundle
error_is wit-replay 'cannot open: no such file or directory: broken/probe.json'
absent broken.wbundle
mkdir private
TMPDIR=$PWD/private wit-replay verify -q --run "$R" "$R.seg.json" -o self.json >/dev/null 2>"$T/err" &&
  [ "$(jq -r .verdict self.json)" = certified ] && ok || fail "verify --run: $(head -2 "$T/err")"
[ -z "$(ls -A private)" ] && ok || fail "verify --run left files in TMPDIR: $(ls -A private)"
finish
