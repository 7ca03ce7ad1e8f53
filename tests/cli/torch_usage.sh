#!/usr/bin/env bash
# wit-query usage on a real (tiny) run: every step's batch is accounted for,
# the proof verifies with the commitment alone, and edited proofs (a step
# dropped, another seed, a forged batch path, a head not signed by the
# trainer) are refused.
source "$(dirname "$0")/lib.sh"

for i in $(seq 1 30); do printf 'fortune number %d: a record small enough to train on\n%%\n' "$i"; done >data.txt
run 0 wit-commit --reader fortune -q -o data.commit.json data.txt
cat >cfg.json <<'CFG'
{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": 4, "steps": 24, "checkpoint_every": 8, "head_every": 4,
 "fingerprint": {"sketch_k": 64, "probe_every": 8, "probe_records": 4, "probe_dim": 16},
 "seed": "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"}
CFG
run 0 wit-log keygen -o key
# Before the seed is revealed the order is secret: no usage proof yet.
run 0 wit-train -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key --out R --stop-after 5 data.txt
run 2 wit-query usage --run R --commit data.commit.json --index data.widx --text "fortune number 1: a record small enough to train on" -o u.json
error_is wit-query "seed is not revealed"
absent u.json
run 0 wit-train -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key --out R data.txt

# Every position of every batch is one record's use: the uses over all 30
# records add up to steps x batch size, each step listed is in 1..24.
total=0
for i in $(seq 1 30); do
  wit-query usage -q --run R --commit data.commit.json --index data.widx \
    --text "fortune number $i: a record small enough to train on" -o u$i.json >/dev/null 2>&1
  rc=$?
  n=$(jq '.steps | length' u$i.json)
  if [ "$n" -eq 0 ]; then [ "$rc" -eq 1 ] && ok || fail "record $i: no steps but exit $rc"; else [ "$rc" -eq 0 ] && ok || fail "record $i: exit $rc"; fi
  total=$((total + n))
  jq -e 'all(.steps[]; . >= 1 and . <= 24)' u$i.json >/dev/null && ok || fail "record $i: a step out of range"
done
[ "$total" -eq 96 ] && ok || fail "uses add up to $total, not 24 steps x 4 records"

# Pick a record used at two steps or more; its proof verifies with the commitment alone.
used=$(for i in $(seq 1 30); do echo "$(jq '.steps|length' u$i.json) $i"; done | sort -rn | head -n 1 | cut -d' ' -f2)
p=u$used.json
run 0 wit-query verify --commit data.commit.json "$p"
grep -q "^valid: record .* was trained on at [0-9]* of the 24 steps" "$T/out" && ok || fail "summary: $(cat "$T/out")"
[ "$(jq '.uses | length' "$p")" -ge 2 ] && ok || fail "expected a record used twice"
# The embedded record is checked too.
run 0 wit-query usage -q --run R --commit data.commit.json --index data.widx --embed-record \
  --text "fortune number $used: a record small enough to train on" -o emb.json
run 0 wit-query verify --commit data.commit.json emb.json

# --- edits are refused
jq '.steps |= .[1:] | .uses |= .[1:]' "$p" >drop.json
run 1 wit-query verify --commit data.commit.json drop.json
grep -q "not the ones the committed data order gives" "$T/out" && ok || fail "dropped step: $(cat "$T/out")"
jq '.seed = "00000000000000000000000000000000000000000000000000000000000000ab"' "$p" >seed.json
run 1 wit-query verify --commit data.commit.json seed.json
jq '.uses[0].batch_path[0] = "'"$(printf '%064d' 7)"'"' "$p" >path.json
run 1 wit-query verify --commit data.commit.json path.json
grep -q "not in the logged batch root" "$T/out" && ok || fail "forged batch path: $(cat "$T/out")"
jq '.head.root = "'"$(printf '%064d' 1)"'"' "$p" >head.json
run 1 wit-query verify --commit data.commit.json head.json
grep -q "signature" "$T/out" && ok || fail "forged head: $(cat "$T/out")"
jq '.extra = 1' "$p" >extra.json
run 2 wit-query verify --commit data.commit.json extra.json
error_is wit-query "unknown field 'extra'"

# --- a record that is not in the data, a run on other data
run 1 wit-query usage --run R --commit data.commit.json --index data.widx --text "never seen" -o none.json
absent none.json
printf 'other\n%%\n' >other.txt
run 0 wit-commit --reader fortune -q -o other.commit.json other.txt
run 2 wit-query usage --run R --commit other.commit.json --index other.widx --text other -o o.json
error_is wit-query "not trained on this commitment"

finish
