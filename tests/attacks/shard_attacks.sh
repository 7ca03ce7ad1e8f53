#!/usr/bin/env bash
# Attack 24 of docs/design.md, on fully sharded training (wit-train
# --shard=full, docs/distributed.md#fully-sharded-state), built for real on
# two ranks by wit-forge: shard-own-data (on a quarter of the steps rank 1
# updates its own range with the gradient of an undeclared record, sending
# the other owner honest gradients) and shard-skew-gather (rank 1 serves the
# other rank parameters other than those it holds and commits). The forger
# answers with the states it had (a checkpoint every step); exact replay in
# one process rejects every challenged tampered step and only those; with
# clipping off, rank 0's shard after the first tampered step is the honest
# run's byte for byte (only rank 1's range moved).
source "$(dirname "$0")/../cli/lib.sh"
: "${WIT_ATTACK_BIN:?set WIT_ATTACK_BIN to the folder of wit-forge}"
FORGE=$WIT_ATTACK_BIN/wit-forge
unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT LOCAL_RANK WIT_LOCAL_LAUNCH
for i in $(seq 1 200); do printf 'record %d of a small corpus for fully sharded training\n%%\n' "$i"; done >data.txt
run 0 wit-commit --reader fortune -q -o data.commit.json data.txt
run 0 wit-log keygen -o key
# a checkpoint every step, no clipping (with clipping, rank 1's partial sum of squares would
# also move every range's clip coefficient)
cat >every.json <<'CFG'
{"model": {"n_layer": 2, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": 5, "steps": 8, "checkpoint_every": 1, "head_every": 4, "optimizer": {"grad_clip": 0},
 "fingerprint": {"sketch_k": 128, "probe_every": 4, "probe_records": 4, "probe_dim": 16},
 "seed": "f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0"}
CFG
train() { wit-train -q -j1 --data data.commit.json --index data.widx --key key "$@" data.txt; }

attack() {  # attack NAME RUN
  run 0 "$FORGE" train "$1" --nproc 2 --fraction 0.25 --attack-seed 3 -j1 --config every.json \
    --data data.commit.json --index data.widx --key key --out "$2" data.txt
  run 0 wit-log verify "$2"   # the log itself is well formed and signed
  wit-log head "$2" >"$2.head.json"
  run 0 wit-challenge -q --head "$2.head.json" --nonce "$(printf '%064x' 3)" -k 8 -o "$2.chal.json"
  # the forger answers with the states it really had (a checkpoint every step),
  # each one carried (--tolerant), so that the exact verifier judges every step
  # from its own logged start: a minimal exact response would also fail the
  # steps after a tampered one, for want of a start (docs/replay.md)
  run 0 wit-replay respond -q -j1 --tolerant --run "$2" "$2.chal.json" -o "$2.wbundle"
  wit-replay verify -q -j1 --bundle "$2.wbundle" "$2.chal.json" -o "$2.report.json" >/dev/null 2>"$T/err"
  local rc=$?
  [ "$rc" -eq 1 ] && ok || fail "$1 not rejected (exit $rc)"
  local bad
  bad=$(jq -c '.steps' "$2/tampered.json")
  [ "$bad" != "[]" ] && ok || fail "$1 tampered with no step"
  [ "$(jq --argjson bad "$bad" '[.checks[] | select(.step as $s | $bad | index($s)) | select(.pass)] | length' "$2.report.json")" = 0 ] &&
    ok || fail "$1: a tampered step passed: $(jq -c '[.checks[] | {step, pass}]' "$2.report.json")"
  [ "$(jq --argjson bad "$bad" '[.checks[] | select(.step as $s | $bad | index($s) | not) | select(.pass | not)] | length' "$2.report.json")" = 0 ] &&
    ok || fail "$1: an honest step failed: $(jq -c '[.checks[] | {step, pass}]' "$2.report.json")"
}
if [ -x "$FORGE" ]; then
  attack shard-own-data A1
  # only rank 1's range moved: at the first tampered step, rank 0's shard is the honest run's, byte for byte
  run 0 train --config every.json --out H --nproc 2 --shard=full
  same_file H/run.json A1/run.json
  s1=$(printf '%06d' "$(jq '.steps[0]' A1/tampered.json)")
  same_file "H/ckpt/step-$s1.shard-0-of-2.safetensors" "A1/ckpt/step-$s1.shard-0-of-2.safetensors"
  cmp -s "H/ckpt/step-$s1.shard-1-of-2.safetensors" "A1/ckpt/step-$s1.shard-1-of-2.safetensors" &&
    fail "rank 1's shard did not change" || ok
  attack shard-skew-gather A2
  # rank 1's own shard is honest at the first tampered step; the others' gradients are not
  s2=$(printf '%06d' "$(jq '.steps[0]' A2/tampered.json)")
  cmp -s "H/ckpt/step-$s2.shard-0-of-2.safetensors" "A2/ckpt/step-$s2.shard-0-of-2.safetensors" &&
    fail "rank 0's shard did not change under a skewed gather" || ok
else
  fail "wit-forge not built: $FORGE"
fi

finish
