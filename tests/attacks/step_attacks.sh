#!/usr/bin/env bash
# Attack 20 of docs/design.md: dropout masks of the forger's choosing. A run
# with dropout (docs/training.md#dropout) draws its masks from a generator
# keyed by the run's seed, the step and the micro-batch; wit-forge's
# dropout-seed attack trains a fifth of the steps with masks from another
# seed (everything else honest: the committed batches, the schedule, wit's
# own step) and answers the challenge with the states it logged. Exact replay
# rejects exactly the tampered steps, with and without gradient accumulation;
# the honest twin of each run is certified.
source "$(dirname "$0")/../cli/lib.sh"
: "${WIT_ATTACK_BIN:?set WIT_ATTACK_BIN to the folder of wit-forge}"
FORGE=$WIT_ATTACK_BIN/wit-forge
corpus 60
commit_and_key
config() {  # config EXTRA
  cat <<CFG
{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 32},
 "batch_size": 4, "steps": 10, "checkpoint_every": 1, "head_every": 5,
 "fingerprint": {"sketch_k": 64, "probe_every": 5, "probe_records": 4, "probe_dim": 16},
 "dropout": 0.1$1,
 "seed": "a77ac4a77ac4a77ac4a77ac4a77ac4a77ac4a77ac4a77ac4a77ac4a77ac4a77a"}
CFG
}
config "" >drop.json
config ', "micro_batch": 3' >accum.json
# check_attack CONFIG RUN: the forged run is rejected at its tampered steps
# only; the honest run of the same config is certified.
check_attack() {
  local cfg=$1 r=$2
  run 0 "$FORGE" train dropout-seed --fraction 0.2 --attack-seed 3 -j1 --config "$cfg" \
    --data data.commit.json --index data.widx --key key --out "$r" data.txt || return
  run 0 wit-log verify "$r"   # its log, heads and seed are in order: only replay can tell
  wit-log head "$r" >"$r.head.json"
  run 0 wit-challenge -q --head "$r.head.json" --nonce "$(nonce 1)" -k 10 -o "$r.c.json"
  # every state carried (--tolerant): the exact verifier judges each step from
  # its own logged start (a minimal exact response would also fail the steps
  # after a tampered one, for want of a start: docs/replay.md)
  run 0 "$FORGE" respond --tolerant -j1 --run "$r" "$r.c.json" -o "$r.wbundle"
  run 1 wit-replay verify -q -j1 --bundle "$r.wbundle" "$r.c.json" -o "$r.report.json"
  [ "$(json_get "$r.report.json" verdict)" = rejected ] && ok || fail "$r: verdict $(json_get "$r.report.json" verdict)"
  local want got
  want=$(jq -c '.steps' "$r/tampered.json")
  got=$(jq -c '[.checks[] | select(.pass | not) | .step] | sort' "$r.report.json")
  [ "$want" = "$got" ] && ok || fail "$r: rejected steps $got, tampered $want"
  run 0 wit-train -q -j1 --config "$cfg" --data data.commit.json --index data.widx --key key --out "$r.honest" data.txt
  certify "$r.honest" 1 10
  echo "dropout-seed forger ($cfg): tampered steps $want, exact replay rejected $got; honest twin $(json_get "$r.honest.report.json" verdict)"
}
command -v jq >/dev/null || { echo "skip: jq not found" >&2; exit 77; }
check_attack drop.json A-drop
check_attack accum.json A-accum
finish
