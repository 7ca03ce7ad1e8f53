#!/usr/bin/env bash
# Fully sharded training (wit-train --shard=full, docs/distributed.md): a
# 2-rank run whose every step, challenged and answered, replays bit for bit
# in one process; the plan in the manifest; torchrun-style launch and resume
# reproduce it; a rank killed mid-gather or mid-scatter ends the run with a
# clear error and no torn checkpoint, and the rerun resumes from shards; a
# shard file from another rank or step is refused; ranks that disagree on the
# ranges stop before step 1. Attack 24: tests/attacks/shard_attacks.sh.
source "$(dirname "$0")/lib.sh"
unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT LOCAL_RANK WIT_LOCAL_LAUNCH WIT_TEST_KILL_AT WIT_TEST_SHARD_SKEW

for i in $(seq 1 200); do printf 'record %d of a small corpus for fully sharded training\n%%\n' "$i"; done >data.txt
run 0 wit-commit --reader fortune -q -o data.commit.json data.txt
config() {  # config STEPS BATCH CHECKPOINT_EVERY [EXTRA]
  cat <<CFG
{"model": {"n_layer": 2, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": $2, "steps": $1, "checkpoint_every": $3, "head_every": 4, ${4:-}
 "fingerprint": {"sketch_k": 128, "probe_every": 4, "probe_records": 4, "probe_dim": 16},
 "seed": "f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0f5d0"}
CFG
}
config 12 5 4 >cfg.json                                       # an odd batch: ranks get 3 and 2 rows
config 8 7 4 '"micro_batch": 2, "dropout": 0.1,' >drop.json   # rounds of 2 rows, dropout masks
run 0 wit-log keygen -o key
train() { wit-train -q -j1 --data data.commit.json --index data.widx --key key "$@" data.txt; }
# (--tolerant: every state answered, from the shards, and each one's root
# checked by the exact verifier; an exact response to every step holds the
# initial state alone.)
challenge_all() {  # challenge_all RUN STEPS: every step challenged, answered, verified in one process
  wit-log head "$1" >"$1.head.json"
  run 0 wit-challenge -q --head "$1.head.json" --nonce "$(printf '%064x' 7)" -k "$2" -o "$1.chal.json"
  run 0 wit-replay respond -q -j1 --tolerant --run "$1" "$1.chal.json" -o "$1.wbundle"
  wit-replay verify -q -j1 --bundle "$1.wbundle" "$1.chal.json" -o "$1.report.json" >/dev/null 2>"$T/err"
}
free_port() { echo $((20000 + RANDOM % 20000)); }

# --- a 2-rank fully sharded run: its plan in the manifest, its checkpoints in shards
run 0 train --config cfg.json --out F --nproc 2 --shard=full --stats F.stats.json
run 0 wit-log verify F
grep -q "3 checkpoints checked (3 sharded)" "$T/out" "$T/err" && ok || fail "wit-log verify: $(cat "$T/out" "$T/err")"
[ "$(jq -c '.sharding | [.mode, .world, (.bounds | length), (.units | length)]' F/run.json)" = '["full",2,3,4]' ] && ok ||
  fail "manifest's sharding: $(jq -c .sharding F/run.json)"
[ "$(jq -c '.sharding.units[0], .sharding.units[3]' F/run.json | tr -d '\n')" = '["wpe","wte"]["lnf.bias","lnf.weight","wte"]' ] &&
  ok || fail "units: $(jq -c .sharding.units F/run.json)"
[ "$(ls F/ckpt | grep -c 'shard-[01]-of-2')" -eq 6 ] && ok || fail "shards: $(ls F/ckpt | tr '\n' ' ')"
# bytes per rank and step: gathers and the reduce-scatter move parameters, not the whole model twice
jq -e '.param_bytes_per_rank > 0 and .grad_bytes_per_rank > 0 and (.loop_peak_rss_per_rank | length) == 2' F.stats.json \
  >/dev/null && ok || fail "stats: $(cat F.stats.json)"
# every step challenged: answered from shards, replayed exactly in one process (state roots equal)
challenge_all F 12
rc=$?
[ "$rc" -eq 0 ] && ok || fail "fully sharded run rejected by a one-process replay (exit $rc): $(head -3 "$T/err")"
[ "$(jq '[.checks[] | select(.pass and .distances.state_root == 0)] | length' F.report.json)" = 12 ] && ok ||
  fail "not every step replayed exactly: $(jq -c '[.checks[] | {step, pass, failed}]' F.report.json)"
# the same for dropout, micro-batches and 3 ranks (a rank with no rows in the last round adds zeros)
run 0 train --config drop.json --out D3 --nproc 3 --shard=full
challenge_all D3 8
rc=$?
[ "$rc" -eq 0 ] && ok || fail "3-rank run with dropout and micro-batches rejected (exit $rc): $(head -3 "$T/err")"
# wit-eval reads the final state from its shards
head -c 2000 data.txt >ev.txt
run 0 wit-commit --reader fortune -q -o ev.commit.json ev.txt
run 0 wit-eval run -q --run F --commit ev.commit.json -o F.eval.json --scores F.scores.json ev.txt

# --- torchrun-style launch by environment gives the same run, bit for bit
port=$(free_port)
for r in 1 0; do
  RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port wit-train -q -j1 --data data.commit.json \
    --index data.widx --key key --config cfg.json --out E --shard=full data.txt >"E.$r.err" 2>&1 &
done
wait
same_file F/run.wlog E/run.wlog

# --- a rank killed mid-gather, then mid-scatter: one clear error, no torn checkpoint; rerun resumes
for what in gather scatter; do
  WIT_TEST_KILL_AT=1:$what:7 run 2 train --config cfg.json --out K$what --nproc 2 --shard=full
  grep -q "rank 1 was killed by signal 9\|lost contact with the other ranks during the" "$T/err" && ok ||
    fail "kill mid-$what: $(cat "$T/err")"
  [ "$(wc -l <"$T/err")" -le 2 ] && ok || fail "kill mid-$what printed: $(cat "$T/err")"
  [ ! -f K$what/seed ] && ok || fail "a killed run completed"
  run 1 wit-log verify K$what   # every index names shards that are there and add up to its root (unfinished: 1)
  grep -q "training unfinished" "$T/err" && ! grep -q "error\|does not match\|add up" "$T/err" && ok ||
    fail "log after a kill mid-$what: $(cat "$T/err")"
  [ -f K$what/ckpt/step-000004.index.json ] && [ ! -f K$what/ckpt/step-000008.index.json ] && ok ||
    fail "checkpoints after a kill at step 7: $(ls K$what/ckpt | tr '\n' ' ')"
  ls K$what/ckpt | grep -q tmp && fail "a temporary was left: $(ls K$what/ckpt)" || ok
  run 0 wit-train -j1 --data data.commit.json --index data.widx --key key --config cfg.json --out K$what --nproc 2 \
    --shard=full data.txt
  grep -q 'resuming K'$what' from step 4' "$T/err" && ok || fail "did not resume from the shards: $(cat "$T/err")"
  same_file F/run.wlog K$what/run.wlog
done

# --- a shard file from another step or another rank is refused
cp -r F F2
cp F/ckpt/step-000004.shard-1-of-2.safetensors F2/ckpt/step-000008.shard-1-of-2.safetensors   # another step's
run 1 wit-log verify F2
grep -q "do not add up to the index's root\|does not match entry 8" "$T/out" "$T/err" && ok ||
  fail "another step's shard passed: $(cat "$T/out" "$T/err")"
cp -r F F3
cp F/ckpt/step-000008.shard-0-of-2.safetensors F3/ckpt/step-000008.shard-1-of-2.safetensors   # another rank's
run 1 wit-log verify F3
grep -q "holds other tensors than its index says\|in two shards" "$T/out" "$T/err" && ok ||
  fail "another rank's shard passed: $(cat "$T/out" "$T/err")"
# resume walks back past it to the checkpoint before, says so, and reproduces the log
rm F2/seed && mv F2/ckpt/step-000012.index.json F2/ckpt/gone.json
printf '%s\n' "$(cat F/seed)" >F2/seed.secret
run 0 wit-train -j1 --data data.commit.json --index data.widx --key key --config cfg.json --out F2 --nproc 2 \
  --shard=full data.txt
grep -q 'checkpoint of step 8 is missing or damaged' "$T/err" && grep -q 'resuming F2 from step 4' "$T/err" && ok ||
  fail "resume past another step's shard: $(cat "$T/err")"
same_file F/run.wlog F2/run.wlog

# --- bad input: ranks that disagree on the ranges stop before step 1; --shard=full needs ranks
WIT_TEST_SHARD_SKEW=1 run 2 train --config cfg.json --out X --nproc 2 --shard=full
grep -q "rank 1 cuts the parameters into other ranges or units than the run's manifest" "$T/err" && ok ||
  fail "disagreeing ranges: $(cat "$T/err")"
[ ! -e X ] && ok || fail "a run that never took a step left its directory"
run 2 train --config cfg.json --out X --shard=full
error_is wit-train '--shard=full needs several ranks'
run 2 train --config cfg.json --out F --nproc 2
error_is wit-train 'the run is fully sharded over 2 ranks'
run 2 train --config cfg.json --out F --nproc 2 --shard=half
grep -q "shard" "$T/err" && ok || fail "--shard=half accepted: $(cat "$T/err")"

# attack 24 (a rank that trains its own range on undeclared data, a rank that serves the others
# other parameters): tests/attacks/shard_attacks.sh

finish
