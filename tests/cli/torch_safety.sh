#!/usr/bin/env bash
# wit-train and wit-eval leave nothing behind when they refuse, one trainer
# holds a run directory at a time (the loser is told who holds it), Ctrl-C
# says what was kept and how to resume, and a finished run says so.
source "$(dirname "$0")/lib.sh"

for i in $(seq 1 120); do echo "record $i of a small corpus for training"; done >data.txt
for i in $(seq 1 20); do echo "held-out line $i"; done >eval.txt
run 0 wit-commit -q -o data.commit.json data.txt
run 0 wit-commit -q -o eval.commit.json eval.txt
cfg() {
  cat <<CFG
{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": 4, "steps": $1, "checkpoint_every": 8, "head_every": 4,
 "fingerprint": {"sketch_k": 128, "probe_every": 8, "probe_records": 4, "probe_dim": 16}}
CFG
}
cfg 16 >cfg.json
cfg 5000 >long.json
train() { wit-train -j1 --data data.commit.json --index data.widx "$@" data.txt; }
# In the background, as itself (not a subshell), so $! is the trainer's pid.
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT

# Refused before anything is written: no run directory, key or seed.
if [ "$(wit-train --help >/dev/null; echo $?)" = 0 ] && ! train -q --config cfg.json --out probe-cuda --device cuda >/dev/null 2>&1; then
  run 2 train --config cfg.json --out C --device cuda && error_is wit-train "cuda"
  absent C
fi
rm -rf probe-cuda
run 2 train --config cfg.json --out D --device tpu && error_is wit-train "unknown device 'tpu'"
absent D
run 2 train --config cfg.json --out E --stop-after -1 && error_is wit-train "stop-after must not be negative: -1"
absent E
run 2 train --config no-such.json --out F && error_is wit-train "no-such.json"
absent F
: >empty.txt
run 0 wit-commit -q -o empty.commit.json empty.txt
run 2 wit-train --config cfg.json --data empty.commit.json --index empty.widx --out G empty.txt &&
  error_is wit-train "the training data holds no records: empty.commit.json"
absent G

# One trainer per run directory: the second is refused, naming the first.
set -m  # job control: background jobs get Ctrl-C (SIGINT) instead of ignoring it
wit-train -q -j1 --data data.commit.json --index data.widx --config long.json --out L data.txt >/dev/null 2>&1 &
first=$!
for _ in $(seq 1 200); do [ -s L/run.wlog ] && break; sleep 0.05; done
run 2 train -q --config long.json --out L && error_is wit-train "the run directory is in use by pid $first on "
run 2 wit-log sign L --key L/trainer.key && error_is wit-log "the run directory is in use by pid $first on .*: L/train.lock"
# Ctrl-C: one line saying what is kept and how to resume, exit 130.
kill -INT "$first"
wait "$first"
rc=$?
[ "$rc" -eq 130 ] && ok || fail "Ctrl-C exit $rc (want 130)"
wit-train -q -j1 --data data.commit.json --index data.widx --config long.json --out M data.txt >/dev/null 2>M.err &
pid=$!
for _ in $(seq 1 200); do [ -s M/run.wlog ] && break; sleep 0.05; done
kill -INT "$pid"
wait "$pid"
[ "$(grep -c . M.err)" = 1 ] && grep -q "^wit-train: interrupted; M keeps every step up to its last checkpoint; rerun the same command to resume$" M.err &&
  ok || fail "Ctrl-C message: $(cat M.err)"
run 0 train --config long.json --out M --stop-after 30
grep -q "resuming M" err && ok || fail "did not resume after Ctrl-C: $(cat err)"
set +m

# A finished run, run again, says it is complete (not "steps 17..16").
run 0 train --config cfg.json --out R
run 0 train --config cfg.json --out R
grep -q "R is already complete (16 steps); nothing to train" err && ok || fail "finished run: $(cat err)"
grep -q "17\.\.16" err && fail "steps 17..16 reported" || ok

# Issue 28, item 1: nothing read is written over, and nothing is written
# inside a run directory, by any tool but its trainer.
cp -r R R.keep
cp data.txt data.orig
run 2 train --config cfg.json --out S --stats data.txt && error_is wit-train "output is one of the inputs: data.txt"
same_file data.txt data.orig
absent S
run 2 train --config cfg.json --out S --stats cfg.json && error_is wit-train "output is one of the inputs: cfg.json"
run 2 train --config cfg.json --out R --stats R/run.wlog && error_is wit-train "inside the run directory"
same_file R/run.wlog R.keep/run.wlog
nonce=$(printf '%064d' 5)
run 0 wit-challenge --run R --nonce "$nonce" -k 2 -o chal.json
for f in run.wlog run.heads ckpt/step-000016.safetensors probe.json new.wbundle; do
  run 2 wit-replay respond --run R chal.json -o "R/$f" && error_is wit-replay "output is inside the run directory"
done
for f in run.wlog run.heads ckpt/step-000016.safetensors probe.json; do same_file "R/$f" "R.keep/$f"; done
absent R/new.wbundle
run 2 wit-sketch fingerprint --run R R/ckpt/step-000016.safetensors -o R/probe.json && error_is wit-sketch "output is inside the run directory"
same_file R/probe.json R.keep/probe.json
run 0 wit-log verify R

# Item 5: a repeated file option takes one value; CHALLENGE stays positional.
run 0 wit-replay respond --run R --file data.txt chal.json -o resp.wbundle
# Issue 33: kill -9 in the middle of writing the response leaves nothing (an
# unnamed file until it is whole), where it used to leave OUT.wbundle.tmp.*.
for point in atomic-write:1 atomic-write:3; do
  WIT_CRASH_AT=$point wit-replay respond -q --run R --file data.txt chal.json -o killed.wbundle 2>/dev/null
  rc=$?
  [ "$rc" = 137 ] && ok || fail "respond with WIT_CRASH_AT=$point: exit $rc (want 137)"
  absent killed.wbundle
done
[ -s resp.wbundle ] && ok || fail "respond with --file wrote no bundle"

# Item 2: a log lost or cut below the newest signed head is an error naming
# both sizes, never a silent retrain that appends a smaller head.
cp -r R.keep L1 && rm L1/run.wlog
cp L1/run.heads heads.L1
run 2 train --config cfg.json --out L1 &&
  error_is wit-train "the witness log has 0 entries but the run's newest signed head covers 17; .*: L1/run.wlog"
same_file L1/run.heads heads.L1
absent L1/run.wlog
cp -r R.keep L2 && : >L2/run.wlog
run 2 train --config cfg.json --out L2 && error_is wit-train "has 0 entries but the run's newest signed head covers 17"
same_file L2/run.heads heads.L1
# Cut mid-log (whole frames kept, the last ones gone): also refused; restored, the run verifies.
cp -r R.keep L3
head -c "$(( $(stat -c %s R.keep/run.wlog) / 2 ))" R.keep/run.wlog >L3/run.wlog
cp L3/run.wlog cut.wlog
run 2 train --config cfg.json --out L3 && error_is wit-train "but the run's newest signed head covers 17"
same_file L3/run.heads heads.L1
same_file L3/run.wlog cut.wlog
cp R.keep/run.wlog L3/run.wlog
run 0 train --config cfg.json --out L3
run 0 wit-log verify L3

# Item 6: thread counts are bounded, with a one-line error before any work.
run 2 wit-train -j 10000 --data data.commit.json --index data.widx --config cfg.json --out J data.txt &&
  error_is wit-train "--threads 10000 is more than 1024 threads"
absent J
run 2 wit-replay respond -j 10000 --run R chal.json -o j.wbundle && error_is wit-replay "more than 1024 threads"

# Item 8: what can be checked before RUN is created is; a late failure of a
# first start removes what it created.
run 2 wit-train -j1 --data data.commit.json --index data.widx --config cfg.json --out N --nproc 5 data.txt &&
  error_is wit-train "a batch of 4 records cannot be split over 5 ranks: cfg.json"
absent N
printf '{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48}, "batch_size": 4, "steps": 4}' >oom.json
(ulimit -v 1500000; wit-train -j1 --data data.commit.json --index data.widx --config oom.json --out O data.txt >/dev/null 2>O.err)
rc=$?
# Whatever the limit breaks (loading, the first step), a failed first start leaves no run directory.
if [ "$rc" = 0 ]; then rm -rf O; ok; else absent O; fi

# Item 12: a config section of the wrong type is named with its file.
printf '{"model": "x"}' >badmodel.json
run 2 train --config badmodel.json --out B && error_is wit-train "invalid training config: 'model' must be an object, not string: badmodel.json"
absent B

# Item 13: readers refuse bad values.
cp -r R.keep T13
sed -i 's/"threads": [0-9]*/"threads": -1/' T13/data.json
run 2 wit-replay respond --run T13 chal.json -o t13.wbundle && error_is wit-replay "invalid data.json: 'threads' is not an integer in 0..1024"
absent t13.wbundle
cp -r R.keep P13
python3 - P13/probe.json <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = j["data_root"]
j["data_root"] = ("1" if r[0] != "1" else "2") + r[1:]
json.dump(j, open(sys.argv[1], "w"), indent=1)
PY
run 2 wit-sketch fingerprint --run P13 P13/ckpt/step-000016.safetensors -o p13.json &&
  error_is wit-sketch "probe set is for another data commitment"
absent p13.json

# Item 9: SIGTERM mid-run ends with one line and exit 143; a resume goes on.
wit-train -q -j1 --data data.commit.json --index data.widx --config long.json --out TT data.txt >/dev/null 2>TT.err &
pid=$!
for _ in $(seq 1 200); do [ -s TT/run.wlog ] && break; sleep 0.05; done
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 143 ] && ok || fail "SIGTERM exit $rc (want 143)"
grep -q "^wit-train: terminated; TT keeps every step up to its last checkpoint; rerun the same command to resume$" TT.err &&
  ok || fail "SIGTERM message: $(cat TT.err)"
# A signal while LibTorch is still loading (before main) gets a line too.
set -m
wit-train -q -j1 --data data.commit.json --index data.widx --config long.json --out EE data.txt >/dev/null 2>EE.err &
pid=$!
# As soon as it catches SIGINT (its first instructions, before LibTorch's
# initialisers; nothing can run while the loader maps the libraries).
for _ in $(seq 1 400); do
  mask=$(sed -n 's/^SigCgt:\t*//p' "/proc/$pid/status" 2>/dev/null)
  [ -n "$mask" ] && (( 16#$mask & 2 )) && break
  sleep 0.01
done
kill -INT "$pid"
wait "$pid"
rc=$?
set +m
[ "$rc" = 130 ] && ok || fail "early Ctrl-C exit $rc (want 130)"
[ "$(grep -c . EE.err)" = 1 ] && grep -q "^wit-train: interrupted; " EE.err && ok || fail "early Ctrl-C message: '$(cat EE.err)'"
rm -rf EE
# Issue 33: and while the dynamic loader still maps LibTorch, before any of
# the tool's code can run (the first stage holds the signal until then): at
# once after the exec, and at moments through the start-up. Never a silent
# 130 or 143.
set -m
for delay in 0 0 0.005 0.02 0.05 0.1 0.2 0.3; do
  for sig in INT TERM; do
    word=$([ $sig = INT ] && echo interrupted || echo terminated)
    want=$([ $sig = INT ] && echo 130 || echo 143)
    env --default-signal=INT,TERM wit-train -q -j1 --data data.commit.json --index data.widx --config long.json --out EE data.txt >/dev/null 2>EE.err &
    pid=$!
    execed "$pid" wit-train
    [ "$delay" = 0 ] || sleep "$delay"
    kill -$sig "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" = "$want" ] && [ "$(grep -c . EE.err)" = 1 ] && grep -q "^wit-train: $word; " EE.err && ok ||
      fail "SIG$sig after ${delay}s of start-up: exit $rc, '$(cat EE.err)'"
    rm -rf EE
  done
done
set +m

# Issue 33: no numeric option of a LibTorch tool takes NaN or an infinity
# ("wit-sketch match --tolerance nan" was accepted, exit 0).
FINITE_VALUES="nan -inf" finite_options wit-sketch wit-train wit-replay wit-eval wit-board-check
run 2 wit-sketch match --run R --tolerance nan R/ckpt/step-000016.safetensors &&
  error_is wit-sketch "^wit-sketch: error: --tolerance must be a finite number: nan$"

# Item 7: a LibTorch tool's failed stdout write is an error.
if [ -w /dev/full ]; then
  run 0 wit-sketch fingerprint --run R R/ckpt/step-000016.safetensors -o fp.json
  wit-sketch show fp.json >/dev/full 2>err
  rc=$?
  [ "$rc" = 2 ] && grep -q "cannot write: no space left on device: stdout" err && ok || fail "wit-sketch show >/dev/full: exit $rc $(cat err)"
fi

# wit-eval run writes both outputs or neither.
run 2 wit-eval run -q --run R --commit eval.commit.json --index eval.widx -o nodir/e.json --scores s.json eval.txt
absent s.json nodir/e.json
run 2 wit-eval check --run R --commit eval.commit.json --eval e.json --scores s.json --nonce ab -k 2 -o c.json eval.txt &&
  error_is wit-eval "--nonce is not 64 hex digits: ab"
finish
