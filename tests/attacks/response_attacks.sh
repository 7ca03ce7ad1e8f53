#!/usr/bin/env bash
# An exact response carries each state once (docs/replay.md, "Which indices a
# challenge needs"): one start state per run of consecutive replayed
# transitions, the verifier taking the start of s from its own replay of
# s - 1 once that replay reproduced its logged root. Checked on real runs:
#  - an honest run challenged on adjacent steps: the response holds exactly
#    the minimal start states, and verifies to the same report (timings
#    aside) as a response that carries every start state;
#  - a forged start state cannot be slipped in: a state/(s - 1) that the
#    bundle carries is checked against its logged root even where s - 1 is
#    itself replayed;
#  - a failed replay leaves no start: on a run trained with a deviant step t
#    (the forger's own states, so every logged root is the forger's), the
#    minimal response rejects step t (its replay) and step t + 1 ("bundle
#    lacks the state after step t"), never passes it; with every state
#    carried, t + 1 is judged on its own.
source "$(dirname "$0")/../cli/lib.sh"
: "${WIT_ATTACK_BIN:?set WIT_ATTACK_BIN to the folder of wit-forge}"
FORGE=$WIT_ATTACK_BIN/wit-forge
command -v jq >/dev/null || { echo "skip: jq not found (apt-get install jq)" >&2; exit 77; }

for i in $(seq 1 200); do printf 'record %d of a small corpus for the response test\n' "$i"; done >data.txt
commit_and_key
cat >cfg.json <<'CFG'
{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": 4, "steps": 12, "checkpoint_every": 4, "head_every": 4,
 "optimizer": {"lr": 0.003},
 "fingerprint": {"sketch_k": 128, "probe_every": 6, "probe_records": 4, "probe_dim": 16},
 "seed": "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"}
CFG
nonce() { printf '%064x' "$1"; }
# states BUNDLE: the steps its state/ members follow, one a line, in order.
states() { "$FORGE" members --bundle "$1" | sed -n 's|^state/0*\([0-9][0-9]*\)\.safetensors$|\1|p' | sort -n; }
# minimal CHALLENGE: s - 1 for every challenged step s whose s - 1 is not challenged.
minimal() { jq -r '.steps as $c | [$c[] | . as $s | select($c | index($s - 1) == null) | $s - 1] | sort[]' "$1"; }
# checks REPORT: the report without its timings.
checks() { jq -S 'del(.cost, .checks[].seconds)' "$1"; }

# --- an honest run, 8 of its 12 steps challenged (so some are adjacent)
run 0 wit-train -q -j2 --config cfg.json --data data.commit.json --index data.widx --key key --out P data.txt
wit-log head P >P.head.json
run 0 wit-challenge -q --head P.head.json --nonce "$(nonce 1)" -k 8 -o p.json
run 0 wit-replay respond -q --run P p.json -o p.wbundle
run 0 wit-replay respond -q --tolerant --run P p.json -o pt.wbundle
[ "$(states p.wbundle | tr '\n' ' ')" = "$(minimal p.json | tr '\n' ' ')" ] && ok ||
  fail "exact response: states $(states p.wbundle | tr '\n' ' ') where the minimum is $(minimal p.json | tr '\n' ' ')"
[ "$(states p.wbundle | wc -l)" -lt 8 ] && ok || fail "8 steps with adjacent ones, yet $(states p.wbundle | wc -l) states"
# The tolerant response carries every start and end state, each once.
[ "$(states pt.wbundle | tr '\n' ' ')" = "$(jq -r '[.steps[] | (., . - 1)] | unique[]' p.json | tr '\n' ' ')" ] && ok ||
  fail "tolerant response: states $(states pt.wbundle | tr '\n' ' ')"
run 0 wit-replay verify -q --bundle p.wbundle p.json -o p.report.json
run 0 wit-replay verify -q --bundle pt.wbundle p.json -o pt.report.json
[ "$(jq '[.checks[] | select(.pass)] | length' p.report.json)" = 8 ] && ok || fail "not 8 passed checks"
[ "$(checks p.report.json)" = "$(checks pt.report.json)" ] && ok ||
  fail "the minimal response's report differs from the full one's: $(diff <(checks p.report.json) <(checks pt.report.json) | head -5)"
# A run of adjacent steps whose only start state is dropped: nothing starts it.
first=$(minimal p.json | head -n 1)
run 0 "$FORGE" drop-member --bundle p.wbundle --member "$(printf 'state/%06d.safetensors' "$first")" -o p0.wbundle
run 1 wit-replay verify -q --bundle p0.wbundle p.json -o p0.report.json
[ "$(jq -r .reason p0.report.json)" = "bundle lacks the state after step $first" ] && ok ||
  fail "dropped start state: $(jq -r .reason p0.report.json)"
# Every transition of that run fails (each lacks its start); none passes.
run_end=$(jq --argjson f "$first" '.steps as $c | [range($f + 1; 13) | . as $s | select($c | index($s) != null)] |
  reduce .[] as $s ([]; if length == 0 or .[-1] == $s - 1 then . + [$s] else . end) | .[-1]' p.json)
[ "$(jq --argjson f "$first" --argjson e "$run_end" '[.checks[] | select(.step > $f and .step <= $e and .pass)] | length' p0.report.json)" = 0 ] && ok ||
  fail "a transition without a start passed: $(jq -c '[.checks[] | {step, pass}]' p0.report.json)"

# --- a forged start state: state/(s - 1) carried with another root than its
# entry logs, where s - 1 is itself replayed (and passes)
pair=$(jq '.steps as $c | [$c[] | . as $s | select($c | index($s - 1) != null)] | .[0]' p.json)
[ "$pair" != null ] && ok || fail "no adjacent pair in $(jq -c .steps p.json)"
prev=$((pair - 1))
run 0 "$FORGE" tamper-state --bundle pt.wbundle --step "$prev" -o pf.wbundle
run 1 wit-replay verify -q --bundle pf.wbundle p.json -o pf.report.json
jq -e --argjson s "$pair" '.checks[] | select(.step == $s) | .pass == false and .failed == "state_root"' pf.report.json >/dev/null &&
  [ "$(jq -r .reason pf.report.json)" = "the state after step $prev differs from its logged state root" ] && ok ||
  fail "forged state after step $prev slipped in: $(jq -c '{reason, c: [.checks[] | {step, pass}]}' pf.report.json)"

# --- a deviant step t: its replay fails, and t + 1 has no start in a minimal response
run 0 "$FORGE" train lr --fraction 0.3 --attack-seed 3 -j2 --config cfg.json --data data.commit.json --index data.widx \
  --key key --out L data.txt
wit-log head L >L.head.json
run 0 wit-challenge -q --head L.head.json --nonce "$(nonce 2)" -k 12 -o l.json
# a tampered step t < 12 between honest ones (its start carried or replayed, t + 1 honest)
t=$(jq '.steps as $b | [$b[] | . as $s | select($s < 12 and ($b | index($s + 1)) == null and ($b | index($s - 1)) == null)] |
  .[0]' L/tampered.json)
[ "$t" != null ] && ok || fail "no tampered step between honest ones: $(jq -c .steps L/tampered.json)"
run 0 "$FORGE" respond -j2 --run L l.json -o l.wbundle
run 0 "$FORGE" respond --tolerant -j2 --run L l.json -o lt.wbundle
[ "$(states l.wbundle | tr '\n' ' ')" = "0 " ] && ok || fail "every step challenged, yet states $(states l.wbundle | tr '\n' ' ')"
run 1 wit-replay verify -q --bundle l.wbundle l.json -o l.report.json
jq -e --argjson t "$t" '.checks[] | select(.step == $t) | .pass == false and .failed != "state"' l.report.json >/dev/null && ok ||
  fail "tampered step $t: $(jq -c --argjson t "$t" '.checks[] | select(.step == $t)' l.report.json)"
jq -e --argjson t "$t" '.checks[] | select(.step == $t + 1) |
  .pass == false and .failed == "state" and .reason == "bundle lacks the state after step \($t)"' l.report.json >/dev/null && ok ||
  fail "step after a failed replay: $(jq -c --argjson t "$t" '.checks[] | select(.step == $t + 1)' l.report.json)"
# No honest step passes on a start that is not the logged state: every step
# that passes follows a step that passed (or a carried state: here only 0).
[ "$(jq '[.checks as $c | $c[] | select(.pass and .step > 1) | .step as $s |
          select(($c[] | select(.step == $s - 1) | .pass) | not)] | length' l.report.json)" = 0 ] && ok ||
  fail "a step passed after a failed one: $(jq -c '[.checks[] | {step, pass}]' l.report.json)"
# With every state carried, t + 1 is judged on its own (and passes: it is honest).
run 1 wit-replay verify -q --bundle lt.wbundle l.json -o lt.report.json
jq -e --argjson t "$t" '.checks[] | select(.step == $t + 1) | .pass' lt.report.json >/dev/null && ok ||
  fail "honest step after $t with its start carried: $(jq -c --argjson t "$t" '.checks[] | select(.step == $t + 1)' lt.report.json)"
# The verdict's reason is the first failure in the report's order either way.
[ "$(jq -r .reason l.report.json)" = "$(jq -r '[.checks[] | select(.pass | not)][0].reason' l.report.json)" ] && ok ||
  fail "reason $(jq -r .reason l.report.json) is not the first failure"
finish
