#!/usr/bin/env bash
# Attack 19 of docs/design.md: a data tree whose leaves are out of order.
# A trainer whose training files hold three records of the eval set builds,
# with its own code (tree_forge), a commitment to the same files whose root
# is that of their leaves with the eval records moved out of sorted order.
# From that one root it gets a valid inclusion proof of an eval record AND a
# valid clean contamination certificate for the whole eval set: both verify
# with the commitment alone. The audit of the tree's leaves (wit-query
# audit-leaves) rejects the forged tree, naming the leaves out of order, and
# the honest sorted leaves do not give the forged root; the honest tree's own
# leaves (wit-commit leaves) pass its audit.
source "$(dirname "$0")/../cli/lib.sh"
: "${WIT_ATTACK_BIN:?set WIT_ATTACK_BIN to the folder of tree_forge}"
FORGE=$WIT_ATTACK_BIN/tree_forge

for i in $(seq 1 200); do printf 'training record %d of a small corpus\n' "$i"; done >train.txt
for i in $(seq 1 20); do printf 'eval record %d, held out\n' "$i"; done >eval.txt
# Contamination: three eval records are in the training files.
sed -n '3p;9p;17p' eval.txt >>train.txt
run 0 wit-commit -q -o train.commit.json train.txt
run 0 wit-commit leaves --index train.widx -o train.wleaves

# --- the honest tree: its leaves pass the audit, and its certificate says contaminated
run 0 wit-query audit-leaves --commit train.commit.json train.wleaves
grep -qE "^ok: the 203 leaves are strictly increasing and give the commitment's root [0-9a-f]{64}$" out && ok ||
  fail "honest audit: $(cat out err)"
run 1 wit-query contamination -q --commit train.commit.json --index train.widx -o honest.cert.json eval.txt
grep -q '"clean": false' honest.cert.json && ok || fail "the honest certificate is not contaminated"

# --- the forged tree: one root, an inclusion proof and a clean certificate
run 0 "$FORGE" --commit train.commit.json --index train.widx --out-commit forged.commit.json --leaves forged.wleaves \
  --proof included.json --certificate clean.json eval.txt
cmp -s train.commit.json forged.commit.json && fail "the forged commitment is the honest one" || ok
[ "$(grep -v '"root"' train.commit.json | md5sum)" = "$(grep -v '"root"' forged.commit.json | md5sum)" ] && ok ||
  fail "the forged commitment differs in more than its root"
run 0 wit-query verify --commit forged.commit.json included.json
grep -q '^valid: record [0-9a-f]* is at position' out && ok || fail "inclusion: $(cat out)"
run 0 wit-query verify --commit forged.commit.json clean.json --eval eval.txt
grep -q '^valid: the certificate covers all 20 eval records' out && ok || fail "certificate: $(cat out)"
grep -q '"clean": true' clean.json && ok || fail "the forged certificate is not clean"
# The included record is one the certificate proves absent.
leaf=$(json_get included.json leaf)
grep -q "\"leaf\": \"$leaf\"" clean.json && ok || fail "the certificate does not speak of the included record"

# --- the audit: the forged leaves are out of order; the sorted ones give another root
run 1 wit-query audit-leaves --commit forged.commit.json forged.wleaves
grep -qE '^failed: leaves [0-9]+ and [0-9]+ are out of order or equal: not a sorted distinct tree$' out && ok ||
  fail "forged audit: $(cat out err)"
run 1 wit-query audit-leaves --json --commit forged.commit.json forged.wleaves
grep -q '"ok":false' out && ok || fail "--json: $(cat out)"
run 1 wit-query audit-leaves --commit forged.commit.json train.wleaves
grep -q '^failed: the leaves file is of another tree' out && ok || fail "honest leaves, forged root: $(cat out)"
# The forged tree's index is refused as well wherever an index is used.
run 2 wit-query contamination --commit forged.commit.json --index train.widx eval.txt
error_is wit-query "does not belong to commitment"

# --- bad input: one-line errors, exit 2
head -c 40 forged.wleaves >short.wleaves
run 2 wit-query audit-leaves --commit forged.commit.json short.wleaves
error_is wit-query "leaves file is truncated"
run 2 wit-query audit-leaves --commit forged.commit.json train.commit.json
error_is wit-query "not a wit leaves file \(wrong magic\)"
run 2 wit-query audit-leaves --commit forged.commit.json missing.wleaves
error_is wit-query "cannot open"
run 2 wit-commit leaves --index missing.widx -o x.wleaves
error_is wit-commit "missing.widx"
absent x.wleaves
finish
