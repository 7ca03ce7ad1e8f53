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

# wit-eval run writes both outputs or neither.
run 2 wit-eval run -q --run R --commit eval.commit.json --index eval.widx -o nodir/e.json --scores s.json eval.txt
absent s.json nodir/e.json
run 2 wit-eval check --run R --commit eval.commit.json --eval e.json --scores s.json --nonce ab -k 2 -o c.json eval.txt &&
  error_is wit-eval "--nonce is not 64 hex digits: ab"
finish
