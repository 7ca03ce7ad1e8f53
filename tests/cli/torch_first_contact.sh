#!/usr/bin/env bash
# First contact without traps (issue 25, item 6): a .jsonl input without
# --reader is read as JSONL (a note says so) and gives the commitment
# --reader jsonl gives; a .json input, or .jsonl mixed with other files, stops
# with how to choose and writes nothing. wit-query usage defaults to the
# run's own commitment and refuses another one (the eval set's) naming both
# roots, before it looks the record up. Swapped or misplaced arguments of
# wit-replay and wit-query are named with what was expected.
source "$(dirname "$0")/lib.sh"

# --- the reader follows the names
for i in $(seq 1 40); do printf '{"id": %d, "text": "record %d of the training set, as JSON Lines"}\n' "$i" "$i"; done >train.jsonl
for i in $(seq 1 6); do printf '{"id": %d, "text": "held-out record %d"}\n' "$i" "$i"; done >eval.jsonl
run 0 wit-commit -o data.commit.json train.jsonl
grep -q 'reading the .jsonl inputs with --reader jsonl (the record is each line.s "text" field); --reader lines commits the raw lines' err &&
  ok || fail "no note on the chosen reader: $(cat err)"
run 0 wit-commit -q --reader jsonl -o explicit.commit.json train.jsonl
same_file data.commit.json explicit.commit.json
run 0 wit-commit -q -o eval.commit.json eval.jsonl
run 0 wit-commit -q --reader lines -o raw.commit.json train.jsonl
cmp -s data.commit.json raw.commit.json && fail "--reader lines gave the jsonl commitment" || ok
cp train.jsonl train.json
run 2 wit-commit -q -o j.commit.json train.json
error_is wit-commit 'a \.json input needs --reader: --reader jsonl .*--reader lines .*: train\.json'
absent j.commit.json j.widx
printf 'plain text\n' >notes.txt
run 2 wit-commit -q -o m.commit.json train.jsonl notes.txt
error_is wit-commit 'the inputs mix \.jsonl files with others.*give --reader jsonl or --reader lines: notes\.txt'
absent m.commit.json m.widx

# --- a run to ask about
cat >cfg.json <<'CFG'
{"model": {"n_layer": 1, "n_head": 2, "d_model": 16, "context": 48},
 "batch_size": 4, "steps": 6, "checkpoint_every": 3, "head_every": 3,
 "fingerprint": {"sketch_k": 64, "probe_every": 3, "probe_records": 2, "probe_dim": 8},
 "seed": "f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1"}
CFG
run 0 wit-log keygen -o key
run 0 wit-train -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key --out run train.jsonl

# --- wit-query usage: the run's own commitment by default, another one refused
rec=
for i in $(seq 1 40); do  # a record some step trained on (exit 0), found with the defaults
  r="record $i of the training set, as JSON Lines"
  if wit-query usage -q --run run --text "$r" -o own.json 2>/dev/null; then rec=$r; break; fi
done
[ -n "$rec" ] && ok || fail "wit-query usage with the run's own commitment found no record trained on"
run 0 wit-query usage -q --run run --commit data.commit.json --index data.widx --text "$rec" -o given.json
same_file own.json given.json
run 0 wit-query verify --commit data.commit.json own.json
root() { sed -n 's/^  "root": "\([0-9a-f]*\)".*/\1/p' "$1"; }
run 2 wit-query usage --run run --commit eval.commit.json --index eval.widx --text "$rec" -o wrong.json
error_is wit-query "the run was not trained on this commitment: eval.commit.json has root $(root eval.commit.json) .*the run's data .*has root $(root data.commit.json)"
absent wrong.json
run 2 wit-query usage --run train.jsonl --text "$rec" -o wrong.json
error_is wit-query '--run expects a run directory, but train\.jsonl is a file'
absent wrong.json

# --- wit-replay: swapped and misplaced arguments
wit-log head run >head.json
run 0 wit-challenge -q --head head.json --nonce "$(printf '%064x' 5)" -k 2 -o challenge.json
run 2 wit-replay respond -q --run challenge.json run -o r.wbundle
error_is wit-replay '--run expects a run directory, but challenge\.json is a challenge \(wit\.challenge JSON\), what CHALLENGE expects, and CHALLENGE run is a run directory: are the two swapped\?'
absent r.wbundle
run 2 wit-replay respond -q --run train.jsonl challenge.json -o r.wbundle
error_is wit-replay '--run expects a run directory, but train\.jsonl is a file'
absent r.wbundle
run 0 wit-replay respond -q -j1 --run run challenge.json -o response.wbundle
run 2 wit-replay verify -q --bundle challenge.json response.wbundle -o report.json
error_is wit-replay '--bundle expects a wit bundle \(\.wbundle\), but challenge\.json is a challenge .*CHALLENGE response\.wbundle is a wit bundle \(\.wbundle\): are the two swapped\?'
absent report.json
run 2 wit-replay verify -q --bundle response.wbundle response.wbundle -o report.json
error_is wit-replay 'CHALLENGE expects a challenge \(wit\.challenge JSON\), but response\.wbundle is a wit bundle'
absent report.json
run 2 wit-replay verify -q --bundle response.wbundle head.json -o report.json
error_is wit-replay "CHALLENGE expects a challenge \(wit\.challenge JSON\), but head\.json is JSON"
run 0 wit-replay verify -q -j1 --bundle response.wbundle challenge.json -o report.json
finish
