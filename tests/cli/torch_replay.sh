#!/usr/bin/env bash
# Honest runs, really replayed, exactly and --tolerant:
#  - three seeds, each trained with a thread count a and verified with -j b
#    for pairs of {1, 2, 3, 4}, every step challenged, plus a segment
#    challenge: every exact verification certifies (the recorded thread count
#    runs, whatever -j says), its report says "mode": "exact" and records the
#    configuration; an exact response to every step holds the initial state
#    alone (each replay that matched its root starts the next); --tolerant
#    (a response with end states) certifies too, with per-tensor slack;
#  - the configuration: RUN/config.json records the pinned kernel set
#    (avx2 by default, avx512 with --cpu-kernels avx512) and the thread
#    count; a verifier whose environment names another kernel set still
#    certifies (it re-executes itself under the recorded one); a config.json
#    naming another kernel set makes the honest states unreproducible; a
#    resume under another thread count is refused;
#  - --margin: only with --tolerant; a margin far too small rejects an honest
#    step, naming the field, step and tensor; inf, nan, 0 and negatives are
#    exit-2 errors;
#  - a bundle that answers another run or challenge, or lacks its manifest or
#    seed: exit 2, no report;
#  - the response streams to standard output too, byte for byte the file; a
#    response that fails halfway leaves no file; verify --run (the response
#    built into a private file) certifies and leaves nothing in TMPDIR.
source "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "skip: jq not found (apt-get install jq)" >&2; exit 77; }

for i in $(seq 1 200); do printf 'record %d of a small corpus for the replay test\n' "$i"; done >data.txt
commit_and_key
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
  [ "$(jq -r .threads "$R/config.json")" = "$a" ] && [ "$(jq -r .aten_cpu_capability "$R/config.json")" = avx2 ] &&
    [ "$(jq -r .blas_core "$R/config.json" | tr A-Z a-z)" = haswell ] && ok || fail "$R: config.json $(cat "$R/config.json")"
  run 0 wit-replay respond -q --run "$R" "$R.all.json" -o "$R.all.wbundle"
  verify_ok "$R.all.j$b" -j"$b" --bundle "$R.all.wbundle" "$R.all.json"
  [ "$(jq '[.checks[] | select(.pass)] | length' "$R.all.j$b.report.json")" = 12 ] && ok ||
    fail "$R: not all 12 steps replayed and passed"
  [ "$(jq -r .mode "$R.all.j$b.report.json")" = exact ] &&
    [ "$(jq -r .configuration.threads "$R.all.j$b.report.json")" = "$a" ] && ok ||
    fail "$R: exact report: $(jq -c '{mode, configuration}' "$R.all.j$b.report.json")"
  # The tolerant verifier: end states in the response, each tensor within its own noise.
  run 0 wit-replay respond -q --tolerant --run "$R" "$R.all.json" -o "$R.tol.wbundle"
  verify_ok "$R.tol.j$b" --tolerant -j"$b" --bundle "$R.tol.wbundle" "$R.all.json"
  [ "$(jq -r .mode "$R.tol.j$b.report.json")" = tolerant ] &&
    [ "$(jq '[.checks[] | select(.slack.weights.threshold_floors >= 10)] | length' "$R.tol.j$b.report.json")" = 12 ] && ok ||
    fail "$R: tolerant report: $(jq -c '{mode, c: .checks[0]}' "$R.tol.j$b.report.json")"
  # Segments: both checkpoint intervals after the first, from exact roots.
  run 0 wit-challenge -q --run "$R" --nonce "$(nonce $((seed + 100)))" -k 1 --segments 2 -o "$R.seg.json"
  run 0 wit-replay respond -q --run "$R" "$R.seg.json" -o "$R.seg.wbundle"
  verify_ok "$R.seg.j$b" -j"$b" --bundle "$R.seg.wbundle" "$R.seg.json"
  [ "$(jq '[.checks[] | select(.kind == "segment" and .pass)] | length' "$R.seg.j$b.report.json")" = 8 ] && ok ||
    fail "$R: a segment challenge did not replay 2 x 4 transitions"
done
# The worst distance / threshold over every judged field of every tolerant check.
worst=$(jq -s '[.[].checks[] | .distances as $d | .thresholds | to_entries[] |
                select(.value > 0 and ($d[.key] | type) == "number") | $d[.key] / .value] | max' ./*.tol.*.report.json)
echo "honest replays: $verifications real verifications, $rejections rejected; worst distance/threshold $worst"
[ "$rejections" -eq 0 ] && ok || fail "$rejections honest verifications rejected"
awk -v w="$worst" 'BEGIN { exit !(w != "null" && w > 0 && w < 1) }' && ok || fail "worst ratio $worst not in (0, 1)"

# --- --memory (the data's budget, as wit-train's): files past an eighth of it
# are read a record at a time (64K: checked in memory; 16K: the check spills
# too); the bundle is the default budget's byte for byte, and the report
# too but for its timings. The places' scratch disk is checked before it is written: a full
# $TMPDIR is a one-line error and nothing is left there.
R=run1
[ "$(stat -c %s data.txt)" -gt 4096 ] && ok || fail "data.txt too small to force records on demand"
for m in 64K 16K; do
  run 0 wit-replay respond -q --memory $m --run "$R" "$R.all.json" -o "$R.mem$m.wbundle"
  same_file "$R.all.wbundle" "$R.mem$m.wbundle"
done
run 0 wit-replay verify -q --run "$R" "$R.seg.json" -o "$R.self.json"
run 0 wit-replay verify -q --memory 16K --run "$R" "$R.seg.json" -o "$R.self16K.json"
# the reports differ only in their timings (seconds, replay_seconds, total_seconds)
untimed() { jq -S 'del(.. | .seconds?, .replay_seconds?, .total_seconds?)' "$1"; }
[ "$(untimed "$R.self.json")" = "$(untimed "$R.self16K.json")" ] && ok ||
  fail "--memory 16K self-check: another report: $(diff <(untimed "$R.self.json") <(untimed "$R.self16K.json") | head -4)"
[ "$(jq -r .verdict "$R.self16K.json")" = certified ] && ok || fail "--memory 16K self-check: $(jq -c .verdict "$R.self16K.json")"
run 2 wit-replay respond -q --memory 16Q --run "$R" "$R.all.json" -o bad.wbundle
error_is wit-replay "--memory"
run 2 wit-replay verify -q --memory -1 --run "$R" "$R.seg.json"
mkdir small
if mount -t tmpfs -o size=16k tmpfs small 2>/dev/null; then
  head -c 16384 /dev/zero >small/fill 2>/dev/null
  TMPDIR=$PWD/small run 2 wit-replay respond -q --memory 64K --run "$R" "$R.all.json" -o full.wbundle
  error_is wit-replay "not enough free disk for the data's places .*needs about .* free\\): .*small"
  [ "$(ls -A small)" = fill ] && [ ! -e full.wbundle ] && ok || fail "a full disk left files: $(ls -A small) $(ls full.wbundle 2>&1)"
  umount small
else
  echo "skip: cannot mount a small tmpfs here (the full-disk check needs root)"
fi

# --- --margin (tolerant only): the default passes (above); a margin of 1e-4
# puts every threshold far below the replay noise between 2 and 1 threads.
R=run1
run 1 wit-replay verify -q -j1 --tolerant --margin 1e-4 --bundle "$R.tol.wbundle" "$R.all.json" -o small.json
[ "$(jq -r .verdict small.json)" = rejected ] && [ "$(jq .margin small.json)" = 0.0001 ] && ok ||
  fail "margin 1e-4: $(jq -c '{verdict, margin}' small.json)"
jq -r .reason small.json | grep -qE '^(weights|adam_m|adam_v|grad_norm|losses) differs beyond its own replay noise at step [0-9]+' && ok ||
  fail "margin 1e-4: reason $(jq -r .reason small.json)"
[ "$(jq '[.checks[] | select(.pass | not)] | length' small.json)" -ge 1 ] && ok || fail "margin 1e-4: no failed check"
for m in inf nan 0 -1; do
  run 2 wit-replay verify -q -j1 --tolerant --margin "$m" --bundle "$R.tol.wbundle" "$R.all.json" -o m.json
  error_is wit-replay 'margin must (be a finite number above 0|be a finite number: |not be negative)'
  absent m.json
done
run 2 wit-replay verify -q --margin 5 --bundle "$R.all.wbundle" "$R.all.json" -o m.json
error_is wit-replay 'margin.*requires --tolerant|--margin requires --tolerant'
absent m.json
# An exact response has no end states: a tolerant verifier cannot use it.
run 1 wit-replay verify -q --tolerant --bundle "$R.all.wbundle" "$R.all.json" -o noend.json
grep -q 'bundle lacks the state after step' noend.json && ok || fail "tolerant verify of an exact response: $(jq -r .reason noend.json)"
# An exact verifier uses a tolerant response too (its end states are not needed).
verify_ok tol-exact --bundle "$R.tol.wbundle" "$R.all.json"

# --- the recorded configuration reproduced: a verifier whose environment
# names another kernel set (AVX-512) re-executes under the recorded avx2 and
# certifies; a run pinned to the AVX-512 kernels is recorded as such and
# certifies from an avx2 shell; and the kernel set is what decides the bits:
# a config.json that names another set makes the honest states unreproducible.
if grep -q avx512bw /proc/cpuinfo && grep -q avx512vl /proc/cpuinfo && grep -q avx512dq /proc/cpuinfo; then
  ATEN_CPU_CAPABILITY=avx512 OPENBLAS_CORETYPE=SkylakeX verify_ok other-kernels -j4 --bundle "$R.all.wbundle" "$R.all.json"
  config 9 >n512.json
  run 0 wit-train -q -j2 --cpu-kernels avx512 --config n512.json --data data.commit.json --index data.widx --key key --out N data.txt
  [ "$(jq -r .aten_cpu_capability N/config.json)" = avx512 ] && [ "$(jq -r .blas_core N/config.json | tr A-Z a-z)" = skylakex ] && ok ||
    fail "avx512 kernels recorded as: $(cat N/config.json)"
  wit-log head N >N.head.json
  run 0 wit-challenge -q --head N.head.json --nonce "$(nonce 9)" -k 6 -o n.json
  ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell run 0 wit-replay respond -q --run N n.json -o n.wbundle
  ATEN_CPU_CAPABILITY=avx2 OPENBLAS_CORETYPE=Haswell verify_ok avx512-run -j1 --bundle n.wbundle n.json
  # A bundle on standard input cannot be re-read after a re-execution: the environment must already be right.
  ATEN_CPU_CAPABILITY=avx2 run 2 wit-replay verify -q --bundle - n.json -o stdin.json <n.wbundle
  error_is wit-replay 'standard input'
  absent stdin.json
fi
mkdir lie && cp -r run1/. lie/ && jq '.aten_cpu_capability = "default"' run1/config.json >lie/config.json
# (--tolerant: an exact response to every step holds the initial state only,
# which is generated from the seed, not trained; the end states are trained.)
run 2 wit-replay respond -q --tolerant --run lie run1.all.json -o lie.wbundle
error_is wit-replay 'does not match its logged state root'
run 2 wit-train -q -j3 --config run1.json --data data.commit.json --index data.widx --key key --out run1 data.txt
error_is wit-train 'trained under another configuration \(threads: 2 \(recorded\) vs 3 \(here\)\)'
run 2 wit-train -q --cpu-kernels sse9 --config run1.json --data data.commit.json --index data.widx --key key --out new data.txt
error_is wit-train "unknown CPU kernel set 'sse9'"
absent new

# --- bundles that answer nothing: exit 2, no report
run 0 wit-challenge -q --head run1.head.json --nonce "$(nonce 77)" -k 3 -o other-nonce.json
run 2 wit-replay verify -q --bundle "$R.all.wbundle" other-nonce.json -o x.json
error_is wit-replay 'answers another challenge'
absent x.json
run 2 wit-replay verify -q --bundle "$R.all.wbundle" run2.all.json -o x.json
error_is wit-replay 'another run|another challenge'
absent x.json

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
