#!/usr/bin/env bash
# wit-train, wit-sketch and wit-log on a real (tiny) run: determinism, the
# genesis bound to the seed, resume after SIGKILL at random moments and at
# crash points inside checkpoint, log and head writes, and bad input.
source "$(dirname "$0")/lib.sh"

if [ -f /usr/share/games/fortunes/computers ]; then
  awk 'BEGIN{RS="\n%\n"} NR<=300 {printf "%s\n%%\n", $0}' /usr/share/games/fortunes/computers >data.txt
else
  for i in $(seq 1 300); do printf 'record %d of a small corpus for training\n%%\n' "$i"; done >data.txt
fi
run 0 wit-commit --reader fortune -q -o data.commit.json data.txt
cat >cfg.json <<'CFG'
{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": 4, "steps": 24, "checkpoint_every": 8, "head_every": 4,
 "fingerprint": {"sketch_k": 128, "probe_every": 8, "probe_records": 4, "probe_dim": 16},
 "seed": "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"}
CFG
train() { wit-train -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key "$@" data.txt; }

run 0 wit-log keygen -o key
run 0 train --out A
[ -f A/seed ] && [ ! -f A/seed.secret ] && ok || fail "seed not revealed at the end"
run 0 wit-log verify A

# --- determinism: a second run is byte-identical (heads differ only in time and signature)
run 0 train --out B
same_file A/run.json B/run.json
same_file A/run.wlog B/run.wlog
same_file A/probe.json B/probe.json
for c in A/ckpt/*.safetensors; do same_file "$c" "B/ckpt/$(basename "$c")"; done
heads() { sed 's/"sig":"[0-9a-f]*",//; s/,"time":[0-9]*//' "$1"; }
[ "$(heads A/run.heads)" = "$(heads B/run.heads)" ] && ok || fail "heads differ beyond time and signature"

# --- the data read a record at a time (--memory: files past an eighth of it
# are checked by the spilling commit and read on demand): the same run
[ "$(stat -c %s data.txt)" -gt 2048 ] && ok || fail "data.txt too small to force the bounded way"
run 0 train --out M --memory 16K
same_file A/run.json M/run.json
same_file A/run.wlog M/run.wlog
same_file A/probe.json M/probe.json
for c in A/ckpt/*.safetensors; do same_file "$c" "M/ckpt/$(basename "$c")"; done
run 2 train --out M2 --memory 16Q
# many files, more than the open-file limit: read a record at a time with
# a few open at once (the Dataset's descriptor cache), the run is the one
# of the default budget
mkdir many
for k in $(seq 100 299); do
  for i in 1 2 3 4 5; do printf 'file %d record %d of many small files\n' "$k" "$i"; done >"many/f$k.txt"
done
run 0 wit-commit -q -o many.commit.json many/f*.txt
manytrain() { wit-train -q -j1 --config cfg.json --data many.commit.json --index many.widx --key key --stop-after 3 "$@" many/f*.txt; }
run 0 sh -c "ulimit -n 64 && exec \"\$@\"" sh wit-train -q -j1 --config cfg.json --data many.commit.json --index many.widx \
  --key key --stop-after 3 --memory 16K --out MF many/f*.txt
run 0 manytrain --out MF0
same_file MF0/run.wlog MF/run.wlog

# --- the genesis is the init regenerated from the revealed seed
cp -r A G
printf '%s\n' 0000000000000000000000000000000000000000000000000000000000000001 >G/seed
run 1 wit-log verify G

# --- stopping and resuming gives the same log
run 0 train --out S --stop-after 11
[ -f S/seed.secret ] && [ ! -f S/seed ] && ok || fail "seed revealed before the end"
run 0 train --out S
same_file A/run.wlog S/run.wlog
run 0 wit-log verify S

# --- SIGKILL at crash points inside writes, then resume
for point in atomic-write:4 atomic-write:6 log-append:3 log-append:13 head-write:2 head-write:5; do
  rm -rf K
  WIT_CRASH_AT=$point train --out K >/dev/null 2>&1
  rc=$?
  [ "$rc" -eq 137 ] && ok || fail "crash point $point did not fire (exit $rc)"
  run 0 train --out K
  same_file A/run.wlog K/run.wlog
  run 0 wit-log verify K
done

# --- SIGKILL from outside at random moments, until the run completes
rm -rf R
kills=0
# Each kill lands at a random point of the run: once the log has grown to a
# random share of a whole run's log (A's), at wit-train itself (exec'd, so $!
# is its pid) -- by progress rather than time, so a fast or loaded machine
# does not let the run finish first.
full=$(stat -c %s A/run.wlog)
for attempt in $(seq 1 30); do
  (exec wit-train -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key --out R data.txt) \
    >/dev/null 2>&1 &
  pid=$!
  target=$(( full * (5 + RANDOM % 86) / 100 ))
  while kill -0 "$pid" 2>/dev/null && [ "$(stat -c %s R/run.wlog 2>/dev/null || echo 0)" -lt "$target" ]; do sleep 0.01; done
  if kill -9 "$pid" 2>/dev/null; then kills=$((kills + 1)); fi
  wait "$pid" 2>/dev/null
  [ -f R/seed ] && break
done
run 0 train --out R
[ "$kills" -ge 1 ] && ok || fail "no kill landed"
same_file A/run.wlog R/run.wlog
run 0 wit-log verify R

# --- fingerprints: the final checkpoint matches the run, an earlier one does not
run 0 wit-sketch match --run A A/ckpt/step-000024.safetensors
run 1 wit-sketch match --run A A/ckpt/step-000008.safetensors
run 0 wit-sketch fingerprint --run A A/ckpt/step-000024.safetensors -o fp24.json
run 0 wit-sketch fingerprint --run A A/ckpt/step-000016.safetensors -o fp16.json
run 0 wit-sketch distance fp16.json fp24.json
grep -q '"sketch_rel"' out && ok || fail "distance output"

# --- bad input
printf '{"steps": 5, "lerning_rate": 1}\n' >bad.json
run 2 wit-train -q --config bad.json --data data.commit.json --index data.widx --out X data.txt
error_is wit-train "unknown key 'lerning_rate'"
printf '{"steps": 5, "optimizer": {"learning_rate": 1}}\n' >bad2.json
run 2 wit-train -q --config bad2.json --data data.commit.json --index data.widx --out X2 data.txt
error_is wit-train "unknown key 'optimizer.learning_rate'"
absent X X2
head -c 2000 data.txt >short.txt
run 2 wit-train -q --config cfg.json --data data.commit.json --index data.widx --out X short.txt
error_is wit-train 'do not match the commitment'
sed 's/"steps": 24/"steps": 25/' cfg.json >cfg2.json
run 2 wit-train -q -j1 --config cfg2.json --data data.commit.json --index data.widx --key key --out A data.txt
error_is wit-train 'different run'
run 2 wit-sketch fingerprint --run A data.txt
error_is wit-sketch 'data.txt'

finish
