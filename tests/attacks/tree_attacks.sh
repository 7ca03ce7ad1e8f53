#!/usr/bin/env bash
# Attacks 19 and 23 of docs/design.md: a data tree whose leaves are out of
# order, and a ranged tree whose nodes lie about their key ranges. A trainer
# whose training files hold three records of the eval set builds, with its
# own code (tree_forge), a commitment to the same files whose root is that of
# their leaves with the eval records moved out of sorted order, and from that
# one root an inclusion proof of an eval record and a clean contamination
# certificate for the whole eval set.
# - Version 2 (an RFC 6962 tree, still read): both verify, the verdict says
#   what they rest on, --strict refuses the certificate, and the audit of the
#   tree's leaves (wit-query audit-leaves) rejects the forged tree.
# - Version 3 (the ranged tree, docs/proofs.md): with honest keys (attack
#   19), every node claiming the sorted tree's keys, or the nodes on the
#   record's path claiming what its proof needs (attack 23), never both
#   verify: at least one fails, with the commitment alone.
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
grep -qE "^valid: the 203 leaves are strictly increasing and give the commitment's root [0-9a-f]{64}$" out && ok ||
  fail "honest audit: $(cat out err)"
run 1 wit-query contamination -q --commit train.commit.json --index train.widx -o honest.cert.json eval.txt
grep -q '"clean": false' honest.cert.json && ok || fail "the honest certificate is not contaminated"

# --- version 2: one root, an inclusion proof and a clean certificate, both "valid"
run 0 "$FORGE" --v2 --commit train.commit.json --index train.widx --out-commit forged.commit.json --leaves forged.wleaves \
  --proof included.json --certificate clean.json eval.txt
cmp -s train.commit.json forged.commit.json && fail "the forged commitment is the honest one" || ok
grep -q '"version": 2' forged.commit.json && ok || fail "the v2 forgery is not a version 2 commitment"
run 0 wit-query verify --commit forged.commit.json included.json
grep -q '^valid: record [0-9a-f]* is at position' out && ok || fail "inclusion: $(cat out)"
run 0 wit-query verify --commit forged.commit.json clean.json --eval eval.txt
grep -qF 'valid: the certificate covers all 20 eval records (valid if the committed tree is sorted; this version cannot show it: audit the leaves)' out &&
  ok || fail "certificate: $(cat out)"
grep -q '"clean": true' clean.json && ok || fail "the forged certificate is not clean"
# The included record is one the certificate proves absent.
leaf=$(json_get included.json leaf)
grep -q "\"leaf\": \"$leaf\"" clean.json && ok || fail "the certificate does not speak of the included record"
# --strict refuses what rests on an order nobody checked.
run 1 wit-query verify --strict --commit forged.commit.json clean.json
grep -qF 'invalid: version 2 exclusion refused (--strict)' out && ok || fail "--strict: $(cat out)"
run 0 wit-query verify --strict --commit forged.commit.json included.json

# --- the audit: the forged leaves are out of order; the sorted ones give another root
run 1 wit-query audit-leaves --commit forged.commit.json forged.wleaves
grep -qE '^invalid: leaves [0-9]+ and [0-9]+ are out of order or equal: not a sorted distinct tree$' out && ok ||
  fail "forged audit: $(cat out err)"
run 1 wit-query audit-leaves --json --commit forged.commit.json forged.wleaves
grep -q '"valid":false' out && ok || fail "--json: $(cat out)"
run 1 wit-query audit-leaves --commit forged.commit.json train.wleaves
grep -q '^invalid: the leaves file is of another tree' out && ok || fail "honest leaves, forged root: $(cat out)"
# The forged tree's index is refused as well wherever an index is used.
run 2 wit-query contamination --commit forged.commit.json --index train.widx eval.txt
error_is wit-query "does not belong to commitment"

# --- version 3: the same forgery, and nodes that lie about their ranges: never both
for keys in honest sorted path; do
  run 0 "$FORGE" --keys "$keys" --commit train.commit.json --index train.widx --out-commit f3.commit.json \
    --leaves f3.wleaves --proof inc3.json --certificate cert3.json eval.txt
  grep -q '"version": 3' f3.commit.json && ok || fail "$keys: not a version 3 commitment"
  wit-query verify --commit f3.commit.json inc3.json >inc.out 2>&1
  inc_rc=$?
  wit-query verify --commit f3.commit.json cert3.json --eval eval.txt >cert.out 2>&1
  cert_rc=$?
  # Each is a verdict (exit 0 or 1), never a tool error; and never both valid.
  [ $inc_rc -le 1 ] && [ $cert_rc -le 1 ] && ok || fail "$keys: exit $inc_rc / $cert_rc: $(cat inc.out cert.out)"
  [ $inc_rc -ne 0 ] || [ $cert_rc -ne 0 ] && ok || fail "$keys: one root both includes and excludes: $(cat inc.out cert.out)"
  # What fails says why: the ranges out of order, or a range the root does not bind.
  cat inc.out cert.out | grep -qE '^invalid: .*(key ranges out of order|does not lead to the root|key range is not a range)' &&
    ok || fail "$keys: $(cat inc.out cert.out)"
  echo "attack ${keys}: inclusion exit $inc_rc, certificate exit $cert_rc: $(cat inc.out cert.out | tr '\n' ' ')" >&2
done

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
