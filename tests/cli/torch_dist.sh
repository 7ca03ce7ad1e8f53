#!/usr/bin/env bash
# Data-parallel wit-train on localhost (c10d, Gloo, TCPStore): 2 ranks give a
# log of the single-process structure that wit-log verify and a single-process
# wit-replay verify accept, close to the single-process run; torchrun-style
# launch by environment; a dead or hung rank ends the run with a clear error
# within the timeout, and rerunning resumes; a rank training on an undeclared
# record is caught by replay; sharded optimizer state (--shard) gives the
# 2-rank run's log bit for bit, with per-rank checkpoint shards that resume and
# wit-replay respond assemble.
source "$(dirname "$0")/lib.sh"
FORGE=${WIT_ATTACK_BIN:-$WIT_BIN/../tests/attacks}/wit-forge
unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT LOCAL_RANK WIT_LOCAL_LAUNCH

if [ -f /usr/share/games/fortunes/computers ]; then
  awk 'BEGIN{RS="\n%\n"} NR<=300 {printf "%s\n%%\n", $0}' /usr/share/games/fortunes/computers >data.txt
else
  for i in $(seq 1 300); do printf 'record %d of a small corpus for training\n%%\n' "$i"; done >data.txt
fi
run 0 wit-commit --reader fortune -q -o data.commit.json data.txt
config() {  # config STEPS BATCH
  cat <<CFG
{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": $2, "steps": $1, "checkpoint_every": 8, "head_every": 4,
 "fingerprint": {"sketch_k": 128, "probe_every": 8, "probe_records": 4, "probe_dim": 16},
 "seed": "d157d157d157d157d157d157d157d157d157d157d157d157d157d157d157d15d"}
CFG
}
config 24 5 >cfg.json   # an odd batch: ranks get 3 and 2 rows
config 400 4 >long.json
config 24 1 >one.json
config 120 5 >mid.json
run 0 wit-log keygen -o key
train() { wit-train -q -j1 --data data.commit.json --index data.widx --key key "$@" data.txt; }
rank() {  # rank R PORT TIMEOUT ARGS...: one rank launched by environment (run with &: $! is the rank)
  local r=$1 port=$2 timeout=$3
  shift 3
  RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port exec wit-train -q -j1 --data data.commit.json \
    --index data.widx --key key --dist-timeout "$timeout" "$@" data.txt
}
free_port() { echo $((20000 + RANDOM % 20000)); }
challenge_all() {  # challenge_all RUN STEPS: every step challenged, answered, verified in one process
  wit-log head "$1" >"$1.head.json"
  run 0 wit-challenge -q --head "$1.head.json" --nonce "$(printf '%064x' 1)" -k "$2" -o "$1.chal.json"
  run 0 wit-replay respond -q -j1 --run "$1" "$1.chal.json" -o "$1.wbundle"
  wit-replay verify -q -j1 --bundle "$1.wbundle" "$1.chal.json" -o "$1.report.json" >/dev/null 2>"$T/err"
}

# --- single process, then 2 local ranks of the same config
run 0 train --config cfg.json --out A
run 0 train --config cfg.json --out D --nproc 2 --stats D.stats.json
run 0 wit-log verify D
same_file A/run.json D/run.json        # same manifest, same run id
same_file A/probe.json D/probe.json
[ "$(ls D/ckpt)" = "$(ls A/ckpt)" ] && ok || fail "checkpoints differ in name from the single process's"
[ -f D/seed ] && [ ! -f D/seed.secret ] && ok || fail "seed not revealed"
# the log has the single-process structure: same entries, fields and batches
wit-log show A | sed 's/"leaf":"[0-9a-f]*",//' >A.show
wit-log show D | sed 's/"leaf":"[0-9a-f]*",//' >D.show
[ "$(wc -l <A.show)" -eq "$(wc -l <D.show)" ] && ok || fail "entry counts differ"
fields() { grep -o '"[a-z_]*":' "$1"; }
[ "$(fields A.show)" = "$(fields D.show)" ] && ok || fail "entry fields differ"
[ "$(grep -o '"batch_root":"[0-9a-f]*"' A.show)" = "$(grep -o '"batch_root":"[0-9a-f]*"' D.show)" ] && ok ||
  fail "batches differ"
# step 1 starts from the same weights: its per-example losses are bit-exact
[ "$(sed -n 2p A.show | grep -o '"losses":\[[^]]*\]')" = "$(sed -n 2p D.show | grep -o '"losses":\[[^]]*\]')" ] &&
  ok || fail "step 1 losses differ from the single process's"
# witness bytes per rank and step: the sketch all-reduce (3 x 128 doubles, 3072), the other
# rank's losses (3 floats, 12) and the state root's leaf gather (37 tensors of 32 bytes, 1184)
grep -q '"witness_bytes_per_rank": 4268' D.stats.json && ok || fail "witness bytes per rank: $(cat D.stats.json)"
# the 2-rank final model is the single-process run's, by its probe fingerprint (within 1e-3;
# not bit for bit, so not by the exact binding of wit-sketch match, which D's own final passes)
run 0 wit-sketch fingerprint --run A -o fpA.json A/ckpt/step-000024.safetensors
run 0 wit-sketch fingerprint --run A -o fpD.json D/ckpt/step-000024.safetensors
run 0 wit-sketch distance fpA.json fpD.json
prel=$(sed 's/.*"probe_rel":\([0-9.e+-]*\).*/\1/' out)
awk -v p="$prel" 'BEGIN{exit !(p <= 1e-3)}' && ok || fail "2-rank final model is not the single-process run's: $(cat out)"
run 0 wit-sketch match --run D D/ckpt/step-000024.safetensors
# every step of the 2-rank run replays in a single process within the thresholds
challenge_all D 24
rc=$?
[ "$rc" -eq 0 ] && ok || fail "2-rank run rejected by a single-process replay (exit $rc): $(head -3 "$T/err")"

# --- torchrun-style launch from the environment gives the same run, bit for bit
port=$(free_port)
for r in 1 0; do rank $r "$port" 60 --config cfg.json --out E >"E.$r.err" 2>&1 & done
wait
same_file D/run.wlog E/run.wlog
for c in D/ckpt/*.safetensors; do same_file "$c" "E/ckpt/$(basename "$c")"; done

# --- sharded optimizer state: the same log and roots, per-rank shards bound by an index
run 0 train --config cfg.json --out S --nproc 2 --shard --stats S.stats.json
same_file D/run.wlog S/run.wlog   # sketches all-reduced and roots from gathered leaves: bit-exact
run 0 wit-log verify S
grep -q "3 checkpoints checked (3 sharded)" "$T/out" "$T/err" && ok || fail "wit-log verify did not check the shards: $(cat "$T/out" "$T/err")"
cp -r S S3   # a shard changed after the fact: the shards no longer add up
f=S3/ckpt/step-000016.shard-1-of-2.safetensors
last=$(tail -c 1 "$f" | od -An -tu1 | tr -d ' ')
printf "\\$(printf '%03o' $((last ^ 1)))" | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") - 1)) conv=notrunc status=none
run 1 wit-log verify S3
grep -q "do not add up to the index's root\|does not match entry 16" "$T/out" "$T/err" && ok || fail "a changed shard passed: $(cat "$T/out" "$T/err")"
[ "$(ls S/ckpt)" = "$(printf '%s\n' step-0000{08,16,24}.{index.json,shard-0-of-2.safetensors,shard-1-of-2.safetensors})" ] &&
  ok || fail "sharded checkpoint files: $(ls S/ckpt | tr '\n' ' ')"
grep -q "$(wit-log show S | sed -n 9p | grep -o '"state_root":"[0-9a-f]*"' | cut -d'"' -f4)" S/ckpt/step-000008.index.json &&
  ok || fail "the index does not name the logged state root"
grep -q '"witness_bytes_per_rank": 4268' S.stats.json && ok || fail "sharded witness bytes: $(cat S.stats.json)"
# wit-eval reads a sharded run's final checkpoint from its shards: the same scores as the unsharded run
head -c 3000 data.txt | awk 'BEGIN{RS="\n%\n"} NR<=6 {printf "%s\n%%\n", $0}' >ev.txt
run 0 wit-commit --reader fortune -q -o ev.commit.json ev.txt
run 0 wit-eval run -q --run D --commit ev.commit.json -o D.eval.json --scores D.scores.json ev.txt
run 0 wit-eval run -q --run S --commit ev.commit.json -o S.eval.json --scores S.scores.json ev.txt
[ "$(jq -c '.scores' D.scores.json)" = "$(jq -c '.scores' S.scores.json)" ] && ok || fail "sharded and unsharded evals differ"
challenge_all S 24   # states between checkpoints are assembled from the shards
rc=$?
[ "$rc" -eq 0 ] && ok || fail "sharded run rejected by a single-process replay (exit $rc): $(head -3 "$T/err")"
cp -r S S2
sed -i 's/"root": "[0-9a-f]*"/"root": "'"$(printf '%064d' 0)"'"/' S2/ckpt/step-000016.index.json
# a damaged checkpoint only makes the walk longer: the states come from the one before it
run 0 wit-replay respond -q -j1 --run S2 S.chal.json -o S2.wbundle
run 0 wit-replay verify -q -j1 --bundle S2.wbundle S.chal.json -o S2.report.json
# a rank killed mid-run; rerunning resumes from the newest sharded checkpoint
wit-train -q -j1 --data data.commit.json --index data.widx --key key --config mid.json --out KS --nproc 2 --shard \
  data.txt >/dev/null 2>&1 &
launcher=$!
for i in $(seq 1 600); do [ -f KS/ckpt/step-000024.index.json ] && break; sleep 0.05; done
for c in $(pgrep -P "$launcher"); do
  tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx 'RANK=1' && kill -9 "$c"
done
wait "$launcher"
[ $? -eq 2 ] && ok || fail "sharded run survived a killed rank"
[ ! -f KS/seed ] && ok || fail "the killed sharded run completed anyway"
wit-train -j1 --data data.commit.json --index data.widx --key key --config mid.json --out KS --nproc 2 --shard \
  data.txt >/dev/null 2>"$T/err"
[ $? -eq 0 ] && ok || fail "sharded resume failed: $(cat "$T/err")"
grep -q 'resuming KS from step [1-9]' "$T/err" && ok || fail "did not resume from a sharded checkpoint: $(cat "$T/err")"
run 0 train --config mid.json --out KU --nproc 2 --shard
same_file KU/run.wlog KS/run.wlog
# the same run without witnesses (bench/dist.sh) writes no entries and reveals nothing
run 0 train --config cfg.json --out NW --nproc 2 --bench-no-witnesses
[ "$(wit-log show NW | wc -l)" -eq 1 ] && [ ! -f NW/seed ] && [ -z "$(ls NW/ckpt)" ] && ok ||
  fail "a run without witnesses left entries, checkpoints or the seed"

# --- a rank killed mid-run: the other exits within the timeout with one clear line; rerun resumes
port=$(free_port)
rank 1 "$port" 20 --config long.json --out K >/dev/null 2>&1 &
r1=$!
rank 0 "$port" 20 --config long.json --out K >"$T/out" 2>"$T/err" &
r0=$!
for i in $(seq 1 600); do [ -f K/ckpt/step-000016.safetensors ] && break; sleep 0.05; done
kill -9 "$r1"
t0=$(date +%s%N)
wait "$r0"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
wait "$r1" 2>/dev/null
[ "$rc" -eq 2 ] && ok || fail "rank 0 exit $rc after its peer died (want 2)"
error_is wit-train 'lost contact with the other ranks.*rank 0'
[ "$ms" -lt 20000 ] && ok || fail "rank 0 took ${ms} ms to notice"
echo "rank 0 exited ${ms} ms after rank 1 was killed"
[ ! -f K/seed ] && ok || fail "a failed run revealed its seed"
run 0 train --config long.json --out K --nproc 2
run 0 wit-log verify K
[ -f K/seed ] && ok || fail "resumed run did not complete"

# --- a hung rank (stopped): the other gives up after --dist-timeout
port=$(free_port)
rank 1 "$port" 3 --config long.json --out H >/dev/null 2>&1 &
r1=$!
rank 0 "$port" 3 --config long.json --out H >"$T/out" 2>"$T/err" &
r0=$!
for i in $(seq 1 600); do [ -f H/ckpt/step-000008.safetensors ] && break; sleep 0.05; done
kill -STOP "$r1"
t0=$(date +%s%N)
wait "$r0"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
kill -9 "$r1"
wait "$r1" 2>/dev/null
[ "$rc" -eq 2 ] && ok || fail "rank 0 exit $rc with a hung peer (want 2)"
error_is wit-train 'lost contact with the other ranks'
[ "$ms" -lt 15000 ] && ok || fail "rank 0 took ${ms} ms to give up on a hung peer (timeout 3 s)"
echo "rank 0 gave up ${ms} ms after rank 1 hung (timeout 3 s)"

# --- --nproc: a rank killed by a signal is reported by the launcher, which stops the others
rm -rf L
wit-train -q -j1 --data data.commit.json --index data.widx --key key --config long.json --out L --nproc 2 \
  data.txt >"$T/out" 2>"$T/err" &
launcher=$!
for i in $(seq 1 600); do [ -f L/ckpt/step-000008.safetensors ] && break; sleep 0.05; done
for c in $(pgrep -P "$launcher"); do
  tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -qx 'RANK=1' && kill -9 "$c"
done
wait "$launcher"
rc=$?
[ "$rc" -eq 2 ] && ok || fail "launcher exit $rc after a rank was killed (want 2)"
grep -q 'rank 1 was killed by signal 9' "$T/err" && ok || fail "launcher did not name the killed rank: $(cat "$T/err")"
[ -z "$(pgrep -P "$launcher")" ] && ok || fail "ranks left running"

# --- bad input
RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 run 2 train --config cfg.json --out X
error_is wit-train 'MASTER_PORT is not set'
RANK=2 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 run 2 train --config cfg.json --out X
error_is wit-train 'RANK=2 is not an integer in 0..1'
run 2 train --config one.json --out X --nproc 2
error_is wit-train 'cannot be split over 2 ranks'

# --- attack: rank 1 trains on an undeclared record on some steps; rank 0 logs the committed batch
if [ -x "$FORGE" ]; then
  run 0 "$FORGE" train rank-add-data --nproc 2 --fraction 0.25 --attack-seed 5 -j1 --config cfg.json \
    --data data.commit.json --index data.widx --key key --out F data.txt
  run 0 wit-log verify F   # the log itself is well formed and signed
  wit-log head F >F.head.json
  run 0 wit-challenge -q --head F.head.json --nonce "$(printf '%064x' 1)" -k 24 -o F.chal.json
  # Every state carried (--tolerant): an exact response to every step holds the
  # initial state alone, and each step must be judged from its own logged start
  # (a minimal response also fails the steps after a tampered one: docs/replay.md).
  run 2 wit-replay respond -q -j1 --tolerant --run F F.chal.json -o F.wbundle   # the honest step cannot reproduce its states
  error_is wit-replay 'does not match its logged state root'
  run 0 "$FORGE" respond --tolerant -j1 --run F F.chal.json -o F.wbundle      # the forger answers with its own states
  wit-replay verify -q -j1 --bundle F.wbundle F.chal.json -o F.report.json >/dev/null 2>"$T/err"
  rc=$?
  [ "$rc" -eq 1 ] && ok || fail "undeclared record on rank 1 not rejected (exit $rc)"
  bad=$(grep -o '"steps":\[[0-9,]*\]' F/tampered.json | tr -dc '0-9,')
  for s in ${bad//,/ }; do
    grep -B 4 "^ *\"step\": $s,\$" F.report.json | grep '"pass"' | grep -q false && ok ||
      fail "tampered step $s passed its replay"
  done
  # ... and only they: every challenged step the forger left alone replays and passes.
  if command -v jq >/dev/null; then
    honest=$(jq --argjson bad "[$bad]" '[.checks[] | select(.step as $s | $bad | index($s) | not)] | length' F.report.json)
    npass=$(jq --argjson bad "[$bad]" '[.checks[] | select(.step as $s | $bad | index($s) | not) | select(.pass)] | length' F.report.json)
    [ "$honest" -ge 1 ] && [ "$npass" = "$honest" ] && ok ||
      fail "of $honest untampered challenged steps only $npass passed: $(jq -c '[.checks[] | {step, pass, failed}]' F.report.json)"
  else
    fail "jq not found (apt-get install jq)"
  fi
else
  fail "wit-forge not built: $FORGE"
fi

finish
