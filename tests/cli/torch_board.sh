#!/usr/bin/env bash
# wit-board on real run bundles built end to end from a tiny run (wit-commit,
# wit-train, wit-challenge, wit-replay respond/verify, wit-eval run/check,
# wit-query contamination, wit-sketch fingerprint). Part 1, bundles judged on
# their own (no board definition): nothing is certified, and every damaged
# or inconsistent bundle is rejected with its reason, never a crash. Part 2,
# a defined board (issue 23): wit-board init, submit (a run on another eval
# set refused), caller challenges that add no confidence, board-drawn
# challenges, add verifying the trainer's response itself (a bare report, a
# response of another run or challenge: exit 2, nothing written), the honest
# run certified, a forged run rejected on evidence, audit re-verifying every
# stored response and catching an edited response and a forged board report;
# issue 28's show/add rules; bad input is a one-line error.
source "$(dirname "$0")/lib.sh"
FORGE="${WIT_FORGE:-$WIT_BIN/../tests/attacks/wit-forge}"

if ! command -v wit-eval >/dev/null; then
  fail "wit-eval is not built in $WIT_BIN"
  finish
  exit 1
fi

# --- data: 200 training fortunes, 24 held out (disjoint), 24 contaminated
if [ -f /usr/share/games/fortunes/computers ]; then
  LC_ALL=C awk 'BEGIN{RS="\n%\n"} NF && !seen[$0]++ {n++; if (n<=224) printf "%s\n%%\n", $0}' \
    /usr/share/games/fortunes/computers >all.txt
else
  for i in $(seq 1 224); do printf 'record %d of a small corpus for training and evaluation\n%%\n' "$i"; done >all.txt
fi
LC_ALL=C awk 'BEGIN{RS="\n%\n"} NR<=200 {printf "%s\n%%\n", $0}' all.txt >train.txt
LC_ALL=C awk 'BEGIN{RS="\n%\n"} NR>200 {printf "%s\n%%\n", $0}' all.txt >eval.txt
LC_ALL=C awk 'BEGIN{RS="\n%\n"} NR>188 && NR<=212 {printf "%s\n%%\n", $0}' all.txt >dirty.txt
run 0 wit-commit --reader fortune -q -o data.commit.json train.txt
run 0 wit-commit --reader fortune -q -o eval.commit.json eval.txt
run 0 wit-commit --reader fortune -q -o dirty.commit.json dirty.txt
cat >cfg.json <<'CFG'
{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": 4, "steps": 8, "checkpoint_every": 4, "head_every": 4,
 "fingerprint": {"sketch_k": 64, "probe_every": 4, "probe_records": 4, "probe_dim": 16},
 "seed": "b0a4db0a4db0a4db0a4db0a4db0a4db0a4db0a4db0a4db0a4db0a4db0a4db0a4"}
CFG
sed 's/"seed": "b0a4/"seed": "c0a4/' cfg.json >cfg2.json
run 0 wit-log keygen -o key
run 0 wit-train -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key --out A train.txt
run 0 wit-train -q -j1 --config cfg2.json --data data.commit.json --index data.widx --key key --out B train.txt
nonce() { printf '%064x' "$1"; }

# challenge + respond + verify: verify RUN NONCE K NAME (leaves NAME.json, NAME.report.json)
challenge_verify() {
  run 0 wit-challenge -q --run "$1" --nonce "$(nonce "$2")" -k "$3" -o "$4.json"
  run 0 wit-replay respond -q -j1 --run "$1" "$4.json" -o "$4.wbundle"
  wit-replay verify -q -j1 --bundle "$4.wbundle" "$4.json" -o "$4.report.json" >/dev/null 2>"$T/err"
}
challenge_verify A 1 3 a1 && ok || fail "honest verify: $(cat "$T/err")"
challenge_verify B 2 2 b1 && ok || fail "second run verify: $(cat "$T/err")"

# eval: run and spot-check; contamination; the released model's fingerprint
evaluate() {  # evaluate RUN EVALCOMMIT EVALFILE PREFIX
  run 0 wit-eval run -q --run "$1" --commit "$2" --index "${2%.commit.json}.widx" -o "$4.eval.json" \
    --scores "$4.scores.json" "$3"
  run 0 wit-eval check -q --run "$1" --eval "$4.eval.json" --scores "$4.scores.json" --commit "$2" \
    --index "${2%.commit.json}.widx" --nonce "$(nonce 77)" -k 5 -o "$4.check.json" "$3"
}
evaluate A eval.commit.json eval.txt A
evaluate B eval.commit.json eval.txt B
evaluate A dirty.commit.json dirty.txt Adirty
run 0 wit-query contamination -q --commit data.commit.json --index data.widx -o clean.json eval.txt
run 1 wit-query contamination -q --commit data.commit.json --index data.widx -o dirty.json dirty.txt
run 0 wit-sketch fingerprint -j1 --run A -o A.fp.json A/ckpt/step-000008.safetensors
run 0 wit-sketch fingerprint -j1 --run A -o A4.fp.json A/ckpt/step-000004.safetensors
# The released weights (parameters only) and their exact binding to the final state.
run 0 wit-sketch export --run A A/ckpt/step-000008.safetensors -o A.release.safetensors
run 0 wit-sketch export --run A A/ckpt/step-000004.safetensors -o A4.release.safetensors
wit-sketch match -j1 --json --run A A.release.safetensors >A.binding.json && ok || fail "the final release does not match"
wit-sketch match -j1 --json --run A A4.release.safetensors >A4.binding.json
[ $? -eq 1 ] && ok || fail "an earlier release matched"

pack() {  # pack OUT NAME RUN PREFIX [more options]
  local out=$1 name=$2 runname=$3 prefix=$4
  shift 4
  run 0 wit-board pack -q -o "$out" --name "$name" --run "$runname" --data-commit data.commit.json \
    --eval-commit eval.commit.json --eval "$prefix.eval.json" --eval-scores "$prefix.scores.json" \
    --eval-check "$prefix.check.json" --contamination clean.json "$@"
}
mkdir bundles
pack bundles/honest honest A A --challenge a1.json --report a1.report.json --model-fingerprint A.fp.json --model-binding A.binding.json
[ -f bundles/honest/bundle.json ] && [ -f bundles/honest/reports/"$(ls bundles/honest/challenges | head -1)" ] && ok ||
  fail "pack did not place the report beside its challenge"
run 0 wit-board show bundles/honest
grep -q '^honest: pending (not on a defined board' out && ok || fail "a bundle off any board was certified: $(cat out)"
grep -q 'released model: matches (relative probe distance .*) (exactly: parameters root [0-9a-f]\{64\})' out && ok || fail "released model does not match exactly: $(cat out)"
grep -q 'challenges: 1 issued (0 drawn by the board), 0 survived' out && ok || fail "a trainer's report counted: $(cat out)"
# The same bundle as one .wbundle file gives the same verdict.
pack honest.wbundle honest A A --challenge a1.json --report a1.report.json --model-fingerprint A.fp.json
run 0 wit-board show honest.wbundle
grep -q '^honest: pending' out && ok || fail ".wbundle: $(cat out)"

# --- pending: a challenge without its report
pack bundles/waiting waiting A A --challenge a1.json
run 0 wit-board show bundles/waiting
grep -q '^waiting: pending' out && ok || fail "not pending: $(cat out)"

# --- a report of another head: the trainer re-signs the head, is challenged
# under the re-signed head, and slips that challenge and its (honest) report
# into a bundle whose heads.jsonl does not hold that head.
cp -r A A2
run 0 wit-log sign --key key --time 1800000000 A2
challenge_verify A2 3 2 a2 && ok || fail "re-signed verify: $(cat "$T/err")"
pack bundles/resigned resigned A A --challenge a1.json --report a1.report.json --challenge a2.json --report a2.report.json
run 1 wit-board show bundles/resigned
grep -q "its head is not among the run's signed heads" out && ok || fail "re-signed head not rejected: $(cat out)"

# reindex DIR: rewrite bundle.json by hand (b2sum -l 256 of every member), as an attacker would.
reindex() {
  local d=$1 first=1 f
  {
    printf '{"format": "wit.run-bundle", "version": %s, "name": "%s", "members": {' "${3:-1}" "$2"
    for f in $(cd "$d" && find . -type f ! -name bundle.json | sed 's|^\./||' | LC_ALL=C sort); do
      [ $first -eq 1 ] || printf ', '
      first=0
      printf '"%s": "%s"' "$f" "$(b2sum -l 256 "$d/$f" | cut -d' ' -f1)"
    done
    printf '}}\n'
  } >"$T/index.new"  # outside the bundle, or find would list it
  mv "$T/index.new" "$d/bundle.json"
}
# The digests of pack and of b2sum -l 256 agree.
cp -r bundles/honest reidx
reindex reidx honest
run 0 wit-board show reidx
grep -q '^honest: pending' out && ok || fail "hand-made bundle.json not accepted: $(cat out)"

# A report of run B filed under the honest run's challenge.
cp -r bundles/honest bundles/foreign
cp b1.report.json bundles/foreign/reports/"$(ls bundles/honest/reports)"
reindex bundles/foreign foreign
run 1 wit-board show bundles/foreign
grep -q 'is a report on another run' out && ok || fail "report of another run not rejected: $(cat out)"
# A report answering another challenge of the same head.
challenge_verify A 4 2 a4 && ok || fail "second honest verify: $(cat "$T/err")"
pack bundles/swapped swapped A A --challenge a1.json --report a1.report.json --challenge a4.json
cp a4.report.json bundles/swapped/reports/"$(ls bundles/swapped/reports)"
reindex bundles/swapped swapped
run 1 wit-board show bundles/swapped
grep -q 'answers another challenge (challenge seed differs)' out && ok || fail "swapped report not rejected: $(cat out)"

# --- the eval must be of this run's final checkpoint, on the committed eval set
pack bundles/evalB evalB A B --challenge a1.json --report a1.report.json
run 1 wit-board show bundles/evalB
grep -q 'eval.json evaluates another run' out && ok || fail "eval of another run not rejected: $(cat out)"
run 0 wit-board pack -q -o bundles/dirty --name dirty --run A --data-commit data.commit.json --eval-commit dirty.commit.json \
  --eval Adirty.eval.json --eval-scores Adirty.scores.json --contamination dirty.json --challenge a1.json \
  --report a1.report.json --eval-check Adirty.check.json
run 1 wit-board show bundles/dirty
grep -q 'the eval set is contaminated: 12 of 24 distinct eval records are in the training data' out && ok ||
  fail "contaminated eval set not rejected: $(cat out)"
# A certificate of another eval set does not cover this one.
pack bundles/uncovered uncovered A A --challenge a1.json --report a1.report.json
cp dirty.json bundles/uncovered/contamination.json
reindex bundles/uncovered uncovered
run 1 wit-board show bundles/uncovered
grep -q 'contamination certificate does not cover the eval set' out && ok || fail "uncovering certificate: $(cat out)"
# A released model that is not the final one.
pack bundles/oldmodel oldmodel A A --challenge a1.json --report a1.report.json --model-fingerprint A4.fp.json --model-binding A4.binding.json
run 0 wit-board show bundles/oldmodel
grep -q 'released model: differs' out && ok || fail "an earlier checkpoint matched: $(cat out)"
grep -q '^oldmodel: pending' out && ok || fail "a released model that differs rejected the run: $(cat out)"
# A fingerprint alone (the public probe) is information, never "matches".
pack bundles/probeonly probeonly A A --challenge a1.json --report a1.report.json --model-fingerprint A.fp.json
run 0 wit-board show bundles/probeonly
grep -q 'released model: probe only' out && ok || fail "a probe-only release said more: $(cat out)"

# --- damaged bundles: each rejected with its reason
cp -r bundles/honest bundles/missing && rm bundles/missing/eval.json
cp -r bundles/honest bundles/version && sed -i 's/"version": 1/"version": 2/' bundles/version/bundle.json
cp -r bundles/honest bundles/changed && printf ' ' >>bundles/changed/manifest.json
cp -r bundles/honest bundles/repver && sed -i 's/"version": 3/"version": 1/' bundles/repver/reports/*.json &&
  reindex bundles/repver repver
cp -r bundles/honest bundles/noindex && rm bundles/noindex/bundle.json
cp -r bundles/honest bundles/nolog && rm bundles/nolog/run.wlog && reindex bundles/nolog nolog
printf 'not a bundle' >bundles/garbage.wbundle
head -c 300 honest.wbundle >bundles/truncated.wbundle
run 1 wit-board show bundles/missing
grep -q 'missing member eval.json' out && ok || fail "missing member: $(cat out)"
run 1 wit-board show bundles/version
grep -q 'unsupported run bundle version 2' out && ok || fail "wrong version: $(cat out)"
run 1 wit-board show bundles/changed
grep -q 'member manifest.json does not match its hash in bundle.json' out && ok || fail "changed member: $(cat out)"
run 1 wit-board show bundles/repver
grep -q 'unsupported report version 1 (this wit reads version 3' out && ok || fail "wrong report version: $(cat out)"
run 0 wit-board show bundles/nolog
grep -q '^nolog: pending' out && ok || fail "a bundle without run.wlog: $(cat out)"

# --- the board: every bundle listed, the build never crashes, byte-identical rebuild
run 0 wit-board build bundles -o site
want='18 runs: 0 certified, 5 pending, 13 rejected'
grep -q "$want" err && ok || fail "build summary: $(cat err) (want $want)"
[ -f site/index.html ] && [ -f site/board.json ] && [ -f site/runs/honest.html ] && [ -f site/runs/garbage.html ] && ok ||
  fail "site files missing: $(ls -R site)"
for n in honest resigned foreign swapped evalB dirty missing version changed noindex garbage truncated; do
  grep -q "data-name=\"$n\"" site/index.html && ok || fail "run $n not on the board"
done
grep -q 'data-status="pending" data-name="honest"' site/index.html && ok || fail "honest not pending off a board"
grep -q 'data-status="rejected" data-name="garbage"' site/index.html && ok || fail "garbage not rejected on the board"
grep -q '<path class="curve" d="M' site/runs/honest.html && ok || fail "no loss curve"
run 0 wit-board build bundles -o site2
diff -r site site2 >/dev/null && ok || fail "two builds differ"
run 0 wit-board build bundles/honest bundles/waiting -o site3 --fraction 0.1
grep -q '"fraction": 0.1' site3/board.json && ok || fail "fraction not in board.json"
grep -q '"board": null' site3/board.json && ok || fail "a board without a definition named one"
run 0 wit-board build bundles/honest -o site3
[ ! -f site3/runs/waiting.html ] && ok || fail "stale page left behind"

# === Part 2: a defined board (issue 23) ===
# The board: the eval set as its benchmark, certified from 50% (one board challenge of 4 of the 8 steps).
run 2 wit-board init board-bad --name tiny --key board-bad/board.key --benchmark eval.commit.json eval.txt
error_is wit-board 'outside the board folder'
absent board-bad
run 2 wit-board init board-bad --name tiny --key board.key --benchmark eval.commit.json dirty.txt
absent board-bad board.key
run 0 wit-board init board --name tiny --key board.key --benchmark eval.commit.json eval.txt --confidence 0.5 -k 4
[ -f board/board.def.json ] && [ -f board/benchmark/eval.commit.json ] && [ -f board/benchmark/records/eval.txt ] &&
  [ -f board.key ] && ok || fail "init did not write the board: $(ls -R board)"
grep -q "\"key\": \"$(jq -r .public board.key)\"" board/board.def.json && ok || fail "the definition does not name the board key"
grep -q '"secret"' board/board.def.json && fail "the board's secret key is in the folder" || ok

# Runs go on the board by submit, checked against the definition.
mkdir onboard
pack onboard/honest honest A A --model-binding A.binding.json
pack onboard/claims claims B B --challenge b1.json --report b1.report.json  # a trainer's own report: a claim (one run, one entry: B)
run 0 wit-board submit board onboard/honest
run 0 wit-board submit board onboard/claims
run 2 wit-board submit board onboard/honest
error_is wit-board 'already on the board'
run 0 wit-board pack -q -o onboard/easy --name easy --run A --data-commit data.commit.json --eval-commit dirty.commit.json \
  --eval Adirty.eval.json --eval-scores Adirty.scores.json --contamination dirty.json --eval-check Adirty.check.json
run 2 wit-board submit board onboard/easy
error_is wit-board 'evaluated on another eval set .* than board tiny.s benchmark'
absent board/runs/easy
run 0 wit-board show board/runs/honest
grep -q '^honest: pending (no board challenge drawn yet)' out && ok || fail "not pending before a draw: $(cat out)"
run 0 wit-board show board/runs/claims
grep -q '^claims: pending' out && ok || fail "a trainer's certified report counted on the board: $(cat out)"

# A bare report is not evidence: add takes a response bundle and refuses anything else.
snap() { (cd "board/runs/$1" && find . -type f | LC_ALL=C sort | xargs b2sum -l 256); find board.store -type f | LC_ALL=C sort; }
snap honest >before.txt
run 2 wit-board add -q -j1 board/runs/honest a1.report.json --key board.key
snap honest >after.txt
cmp -s before.txt after.txt && ok || fail "a refused add changed the board"

# A caller's challenge (a nonce the trainer may have ground): verified by the board, adds no confidence.
run 0 wit-board challenge -q board/runs/honest --nonce "$(nonce 9)" -o c9.json
run 0 wit-replay respond -q -j1 --run A c9.json -o c9.wbundle
run 0 wit-board add -q -j1 board/runs/honest c9.wbundle --key board.key
run 0 wit-board show board/runs/honest
grep -q 'challenges: 1 issued (0 drawn by the board), 1 survived' out && grep -q '^honest: pending (no board challenge drawn yet)' out &&
  ok || fail "a caller's challenge counted: $(cat out)"

# The board draws: the nonce comes from the board key's signature; pending while unanswered, with its age.
run 0 wit-log keygen -o other.key
run 2 wit-board challenge board/runs/honest --key other.key
error_is wit-board "the key is not the board's"
run 0 wit-board challenge -q board/runs/honest --key board.key -o d0.json
[ "$(jq '.steps | length' d0.json)" = 4 ] && ok || fail "the board's k is not the policy's"
run 0 wit-board show board/runs/honest
grep -q '^pending: board challenge 0 ([0-9a-f]*, k 4) drawn [0-9]* min ago, waiting' out && ok || fail "no pending draw with its age: $(cat out)"
run 0 wit-replay respond -q -j1 --run A d0.json -o d0.wbundle
# Responses of another run, or to no challenge on the board: exit 2, nothing written.
snap honest >before.txt
run 2 wit-board add -q -j1 board/runs/honest b1.wbundle --key board.key
error_is wit-board 'the response is for another run'
run 0 wit-challenge -q --run A --nonce "$(nonce 44)" -k 2 -o own.json
run 0 wit-replay respond -q -j1 --run A own.json -o own.wbundle
run 2 wit-board add -q -j1 board/runs/honest own.wbundle --key board.key
error_is wit-board 'answers no challenge of this run on the board'
snap honest >after.txt
cmp -s before.txt after.txt && ok || fail "a refused add changed the board: $(diff before.txt after.txt)"
run 0 wit-board add -q -j1 board/runs/honest d0.wbundle --key board.key
run 2 wit-board add -q -j1 board/runs/honest d0.wbundle --key board.key
error_is wit-board 'already filed its report on challenge'
run 0 wit-board show board/runs/honest
grep -q '^honest: pending (the board has not scored the released weights' out && ok || fail "certified before the board scored it: $(cat out)"
# The board scores the released weights itself on its benchmark (bound exactly to the final state).
# A temporary a killed board command left (in the store, and an older version's in the folder): the next one removes it.
mkdir -p board/responses board.store/weights/.incoming.tmp.999999999.AbCdEf && echo x >board/responses/.incoming-999999999
echo x >board.store/weights/.incoming.tmp.999999999.AbCdEf/file
run 1 wit-board evaluate -q -j1 board/runs/honest A4.release.safetensors --key board.key
grep -q "refused: the weights are not the run's final state" err && ok || fail "earlier weights scored: $(cat err)"
absent board/responses/.incoming-999999999 board.store/weights/.incoming.tmp.999999999.AbCdEf
# Released weights only: given the checkpoint (parameters and Adam moments), the board exports the parameters
# itself and keeps only them (the file wit-sketch export writes, byte for byte).
run 0 wit-board evaluate -q -j1 board/runs/honest A/ckpt/step-000008.safetensors --key board.key
[ "$(jq -r .weights.digest board/runs/honest/board-eval.json)" = "$(b2sum -l 256 A.release.safetensors | cut -d' ' -f1)" ] && ok ||
  fail "the board did not keep the parameters only: $(jq -c .weights board/runs/honest/board-eval.json)"
run 2 wit-board evaluate -q -j1 board/runs/honest A.release.safetensors --key board.key
error_is wit-board 'already scored'
run 0 wit-board show board/runs/honest
# A version 3 (ranged) data tree needs no audit: every proof checks its order (docs/proofs.md).
grep -q '^honest: certified$' out && ok || fail "a ranged tree's run waits for an audit: $(cat out)"
grep -q 'the training tree ranged: every proof checks its own path' out && ok || fail "the ranged tree is not shown: $(cat out)"
# The training tree's sorted leaves can still be audited by the board (O(n)): another commitment's leaves are refused.
run 0 wit-commit leaves --index data.widx -o data.wleaves
run 0 wit-commit leaves --index eval.widx -o eval.wleaves
run 2 wit-board leaves -q board/runs/honest eval.wleaves --key board.key
error_is wit-board 'the leaves file is of another commitment'
run 0 wit-board leaves -q board/runs/honest data.wleaves --key board.key
run 0 wit-board show board/runs/honest
grep -q '^honest: certified$' out && ok || fail "honest not certified by the board: $(cat out)"
grep -q 'the training tree ranged: every proof checks its own path' out && ok || fail "the tree is not shown ranged: $(cat out)"
grep -q '^eval: loss .* over 24 examples (next-byte; scored by the board)' out && ok || fail "not the board's score: $(cat out)"
ls board.store/weights/*.safetensors | wc -l | grep -q '^1$' && ok || fail "weights not stored by digest: $(ls board.store/weights)"
grep -q '^confidence: 50.00% .* 4 distinct steps of 8 replayed by the board' out && ok || fail "confidence: $(cat out)"
ls board.store/responses/*.wbundle | wc -l | grep -q '^2$' && ok || fail "responses not stored by digest: $(ls board.store/responses)"
d=$(jq -r .response.digest board/runs/honest/board-reports/*.json | sort | head -1)
[ "$(b2sum -l 256 "board.store/responses/$d.wbundle" | cut -d' ' -f1)" = "$d" ] && ok || fail "a stored response is not at its digest"
# The evidence store (issue 37): the folder holds documents (no file over 1 MiB), the store the bytes by digest.
jq -e '.store == "../board.store"' board/board.def.json >/dev/null && ok || fail "no store in the definition"
[ -z "$(find board -type f -size +1024k)" ] && [ -z "$(find board -name '*.wbundle' -o -name '*.safetensors' -o -name '*.wleaves')" ] &&
  ok || fail "evidence bytes in the folder: $(find board -type f -size +64k)"
find board board.store -name '.incoming*' | grep -q . && fail "a temporary left behind: $(find board board.store -name '.incoming*')" || ok
# Responses in parts (issue 37): each state its own raw file by digest (states/D.safetensors), the rest a small
# bundle; the signed report names every part. A state two responses hold is stored once.
jq -s -e 'all(.[]; (.parts | length) >= 1 and all(.parts[]; (.name | startswith("state/")) and .path == "states/\(.digest).safetensors"))' \
  board/runs/honest/board-reports/*.json >/dev/null && ok || fail "a stored response not in parts: $(jq -c .parts board/runs/honest/board-reports/*.json)"
for p in $(jq -r '.parts[].path' board/runs/honest/board-reports/*.json | sort -u); do
  [ "states/$(b2sum -l 256 "board.store/$p" | cut -d' ' -f1).safetensors" = "$p" ] || fail "part $p is not at its digest"
done
cp -r board board-s && cp -r board.store board-s.store
# Two board challenges of all 8 steps: the two responses hold the same states.
run 0 wit-board challenge -q board-s/runs/honest --key board.key -k 8 -o s1.json
run 0 wit-board challenge -q board-s/runs/honest --key board.key -k 8 -o s2.json
run 0 wit-replay respond -q -j1 --run A s1.json -o s1.wbundle
run 0 wit-replay respond -q -j1 --run A s2.json -o s2.wbundle
ls board/runs/honest/board-reports >old-reports.txt
run 0 wit-board add -q -j1 board-s/runs/honest s1.wbundle --key board.key --store board-s.store
run 0 wit-board add -q -j1 board-s/runs/honest s2.wbundle --key board.key --store board-s.store
new=$(ls board-s/runs/honest/board-reports | grep -vxFf old-reports.txt)
[ "$(echo "$new" | wc -l)" = 2 ] && ok || fail "not two new reports: $new"
sets=$(for r in $new; do jq -r '[.parts[].digest] | sort | join(",")' "board-s/runs/honest/board-reports/$r"; done | sort -u)
[ -n "$sets" ] && [ "$(echo "$sets" | wc -l)" = 1 ] && ok || fail "the two responses do not hold the same states: $sets"
named=$(jq -r '.parts[]?.path' board-s/runs/*/board-reports/*.json | wc -l)
distinct=$(jq -r '.parts[]?.path' board-s/runs/*/board-reports/*.json | sort -u | wc -l)
[ "$(ls board-s.store/states | wc -l)" = "$distinct" ] && [ "$distinct" -lt "$named" ] && ok ||
  fail "states not stored once: $(ls board-s.store/states | wc -l) files, $distinct distinct of $named named"
# The store's bytes with parts, and as it was with each response stored whole (the files add was given).
whole=$(cat c9.wbundle d0.wbundle s1.wbundle s2.wbundle $([ -f f1.wbundle ] && echo f1.wbundle) | wc -c)
rest=$(find board-s.store -type f ! -path '*/responses/*' ! -path '*/states/*' -printf '%s\n' | awk '{n += $1} END {print n}')
echo "note: the store with parts: $(find board-s.store -type f -printf '%s\n' | awk '{n += $1} END {print n}') B (states: $distinct files, $(du -cb board-s.store/states/* | tail -1 | cut -f1) B, for $named named; small bundles: $(du -cb board-s.store/responses/* | tail -1 | cut -f1) B); with whole responses: $((whole + rest)) B ($whole B of responses)" >&2
# audit re-assembles each response from its parts (each checked against its signed digest) and reproduces it.
run 0 wit-board audit -q -j1 board-s --store board-s.store
# A report signed before parts names the whole response file and is audited from it, as before: s1's report as
# the board signed reports then (no parts, the whole file's digest), signed with the board key.
if /usr/bin/python3 -c 'import cryptography' 2>/dev/null; then
  cp -r board-s board-o && cp -r board-s.store board-o.store
  d=$(b2sum -l 256 s1.wbundle | cut -d' ' -f1)
  cp s1.wbundle "board-o.store/responses/$d.wbundle"
  rep=board-reports/$(jq -r .seed s1.json | cut -c1-16).json
  /usr/bin/python3 - "board-o/runs/honest/$rep" board.key "$d" "$(wc -c <s1.wbundle)" <<'PY'
import json, struct, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
rep, key, d, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
doc = json.load(open(rep))
del doc["parts"], doc["signature"]
doc["response"] = {"digest": d, "bytes": n, "path": "responses/%s.wbundle" % d}
tag = b"wit/board-report/v1"
body = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
sk = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(json.load(open(key))["secret"])[:32])
doc["signature"] = sk.sign(struct.pack("<Q", len(tag)) + tag + body).hex()
open(rep, "w").write(json.dumps(doc, indent=2) + "\n")
PY
  (cd board-o/runs/honest && b=$(jq --arg m "$rep" --arg d "$(b2sum -l 256 "$rep" | cut -d' ' -f1)" '.members[$m] = $d' bundle.json) &&
    printf '%s\n' "$b" >bundle.json)
  jq -e 'has("parts") | not' "board-o/runs/honest/$rep" >/dev/null && ok || fail "the old-form report has parts"
  run 0 wit-board audit -q -j1 board-o --store board-o.store
  printf '\x01' | dd of="board-o.store/responses/$d.wbundle" bs=1 seek=100 conv=notrunc 2>/dev/null
  run 1 wit-board audit -q -j1 board-o --store board-o.store
  grep -q "^not re-verifiable: runs/honest/$rep: the store serves other bytes for its response responses/$d.wbundle" out && ok ||
    fail "the old-form report was not audited from the whole file: $(cat out)"
else
  echo "note: /usr/bin/python3 has no cryptography module; the old-form report case is skipped" >&2
fi
# A state part with a flipped byte: not re-verifiable (exit 1), never a verdict.
cp -r board-s.store board-z.store
st=board-z.store/$(jq -r '.parts[0].path' "board-s/runs/honest/board-reports/$(echo "$new" | head -1)")
printf '\x01' | dd of="$st" bs=1 seek=100 conv=notrunc 2>/dev/null
run 1 wit-board audit -q -j1 board-s --store board-z.store
[ "$(grep -c "^not re-verifiable: runs/honest/board-reports/.*the store serves other bytes for its response's part state/.* at states/.* than its digest" out)" -ge 2 ] &&
  ok || fail "audit missed the flipped state: $(cat out)"
grep -q 'does not reproduce' out && fail "a changed part read as a verdict: $(cat out)" || ok
rm "$st"
run 1 wit-board audit -q -j1 board-s --store board-z.store
grep -q "^not re-verifiable: runs/honest/board-reports/.*its response's part state/.* at states/.* is not in the store" out && ok ||
  fail "audit missed the missing state: $(cat out)"

# A response with no part (its states left out): add decodes it once, and what it stores is the file given (a copy
# shown to hold the members it verified): its digest the file's; the rejection is filed and audit reproduces it.
if [ -x "$FORGE" ]; then
  cp -r board-s board-n && cp -r board-s.store board-n.store
  run 0 wit-board challenge -q board-n/runs/honest --key board.key -k 2 -o n1.json
  run 0 wit-replay respond -q -j1 --run A n1.json -o n1.wbundle
  cp n1.wbundle n0.wbundle
  for m in $("$FORGE" members --bundle n1.wbundle | grep '^state/'); do
    "$FORGE" drop-member --bundle n0.wbundle --member "$m" -o n0x.wbundle && mv n0x.wbundle n0.wbundle
  done
  run 1 wit-board add -q -j1 board-n/runs/honest n0.wbundle --key board.key --store board-n.store
  rep=board-n/runs/honest/board-reports/$(jq -r .seed n1.json | cut -c1-16).json
  d=$(b2sum -l 256 n0.wbundle | cut -d' ' -f1)
  jq -e --arg d "$d" '(.parts // [] | length) == 0 and .response.digest == $d and .response.path == "responses/\($d).wbundle"' \
    "$rep" >/dev/null && ok || fail "a response with no part is not stored whole: $(jq -c '[.response, .parts]' "$rep")"
  cmp -s n0.wbundle "board-n.store/responses/$d.wbundle" && ok || fail "the stored response is not the file given"
  jq -r .report.reason "$rep" | grep -q '^bundle lacks the state after step' && ok || fail "not rejected for its states: $(jq -r .report.reason "$rep")"
  run 0 wit-board audit -q -j1 board-n --store board-n.store
fi

# A forged (tampered) run: the board replays the forger's answer and rejects it, on evidence anyone re-verifies.
if [ -x "$FORGE" ]; then
  # Its own seed: a forged copy of run A's manifest would be refused as A's second entry.
  sed 's/"seed": "b0a4/"seed": "d0a4/' cfg.json >cfg3.json
  run 0 "$FORGE" train skip --fraction 0.5 --attack-seed 3 -j1 --config cfg3.json --data data.commit.json \
    --index data.widx --key key --out F train.txt
  evaluate F eval.commit.json eval.txt F
  pack onboard/forged forged F F
  run 0 wit-board submit board onboard/forged
  run 0 wit-board challenge -q board/runs/forged --key board.key -k 8 -o f1.json
  run 0 "$FORGE" respond -j1 --run F f1.json -o f1.wbundle
  run 1 wit-board add -q -j1 board/runs/forged f1.wbundle --key board.key
  run 1 wit-board show board/runs/forged
  grep -q '^forged: rejected (board-reports/.*: the board replayed the response and rejected the run: ' out && ok ||
    fail "the forged run was not rejected: $(cat out)"
else
  echo "note: $FORGE not built; the forged-run case is skipped" >&2
fi

# The site: cheap (signatures and digests), deterministic, the board named.
run 0 wit-board build board -o bsite
grep -q '^wit-board: [0-9]* runs: 1 certified, 1 pending' err && ok || fail "board build: $(cat err)"
jq -e '.board.name == "tiny" and (.runs[] | select(.name == "honest") | .badge == "certified 50.00%")' bsite/board.json >/dev/null &&
  ok || fail "board.json lacks the board or the badge"
jq -e '[.runs[] | select(.name == "honest") | .challenges.list[].drawn_by] | sort == ["board", "caller"]' bsite/board.json >/dev/null &&
  ok || fail "who drew each challenge is not in board.json"
grep -q '<svg id="compute"' bsite/index.html && ok || fail "no score-against-compute plot"
run 0 wit-board build board -o bsite2
diff -r bsite bsite2 >/dev/null && ok || fail "two builds of the board differ"
# torch_board_browser.sh opens this site in Chromium.
if [ -n "${WIT_BOARD_KEEP:-}" ]; then mkdir -p "$WIT_BOARD_KEEP" && cp -r bsite "$WIT_BOARD_KEEP/site"; fi

# audit: every stored response re-verified; each verdict reproduces.
run 0 wit-board audit -q -j1 board || cat out err
# A file the folder does not expect is named by build and audit and counts for nothing.
echo note >board/NOTES.txt
run 0 wit-board build -q board -o bsite-u
grep -q "unexpected file in the board folder .*: board/NOTES.txt" err && ok || fail "build did not name the stray file: $(cat err)"
diff -r bsite bsite-u >/dev/null && ok || fail "a stray file changed the site"
rm board/NOTES.txt
# A store that lacks the bytes: every document is listed as not re-verifiable (exit 1), never a pass.
mkdir empty.store
run 1 wit-board audit -q -j1 board --store empty.store
[ "$(grep -c '^not re-verifiable: runs/.*is not in the store empty.store' out)" -ge 4 ] && ok || fail "audit without the bytes: $(cat out)"
grep -q 'does not reproduce' out && fail "missing bytes read as a verdict: $(cat out)" || ok
# prune: the honest run's bytes go (recorded in the folder, with when); its verdict stands; audit says it can no
# longer be replayed. Bytes another run still names stay.
cp -r board board-p && cp -r board.store board-p.store
run 0 wit-board prune -q board-p --store board-p.store --run honest
# Its responses, their parts (each once), the weights, the leaves and the log.
files=$(($(jq -r '.response.path, .parts[]?.path' board/runs/honest/board-reports/*.json | sort -u | wc -l) + 3))
jq -e --argjson n "$files" '[.pruned[] | select(.runs == ["honest"])] | length == $n and any(.path | startswith("logs/")) and any(.path | startswith("states/"))' \
  board-p/pruned.json >/dev/null && ok || fail "prune record ($files files): $(cat board-p/pruned.json)"
other=$(for r in board/runs/*; do [ "$(basename "$r")" = honest ] || jq -r '.parts[]?.path' "$r"/board-reports/*.json 2>/dev/null; done | sort -u | wc -l)
[ "$(ls board-p.store/states | wc -l)" = "$other" ] && ok || fail "the pruned run's states stayed: $(ls board-p.store/states)"
ls board-p.store/responses/*.wbundle 2>/dev/null | wc -l | grep -q "^$(ls board/runs/forged/board-reports/*.json 2>/dev/null | wc -l)$" &&
  ok || fail "prune removed another run's bytes: $(ls board-p.store/responses)"
run 0 wit-board build -q board-p -o psite
jq -e '.runs[] | select(.name == "honest") | .status == "certified"' psite/board.json >/dev/null && ok || fail "a prune changed a verdict"
# show and the site say what was pruned, and when (the verdict stands); a run whose bytes stay says nothing.
jq -e '.runs[] | select(.name == "honest") | .pruned.files >= 3 and .pruned.files == .pruned.of and (.pruned.date | test("^20[0-9-]+ [0-9:]+ UTC$"))' \
  psite/board.json >/dev/null && ok || fail "board.json does not say what was pruned: $(jq -c '.runs[] | {name, pruned}' psite/board.json)"
jq -e '[.runs[] | select(.name != "honest") | .pruned] | all(. == null)' psite/board.json >/dev/null && ok || fail "another run shown as pruned"
grep -q '<p class="reason" id="pruned">evidence pruned from the store on [0-9-]* [0-9:]* UTC ([0-9]* of [0-9]* stored files): the board[^ ]*s signed documents stand' \
  psite/runs/honest.html && ok || fail "the run page does not say the evidence was pruned"
grep -q 'evidence pruned [0-9-]*: audit can no longer replay it' psite/index.html && ok || fail "the table does not mark the pruned run"
run 0 wit-board show board-p/runs/honest
grep -q "^evidence pruned from the store on .* stored files): the board's signed documents stand, but 'wit-board audit' can no longer replay them" out &&
  ok || fail "show does not say the evidence was pruned: $(cat out)"
run 0 wit-board show board/runs/honest
grep -q 'evidence pruned' out && fail "show says pruned before any prune" || ok
if [ -n "${WIT_BOARD_KEEP:-}" ]; then cp -r psite "$WIT_BOARD_KEEP/psite"; fi
echo x >board-p.store/responses/stray
run 1 wit-board audit -q -j1 board-p --store board-p.store
grep -q "unexpected file in the board folder or its store .*: board-p.store/responses/stray" err && ok || fail "audit did not name the stray in the store: $(cat err)"
grep -q '^not re-verifiable: runs/honest/board-eval.json: its weights .* is not in the store .*(pruned from the store on .* (runs honest); the signed document stands' out &&
  ok || fail "audit after prune: $(cat out)"
run 2 wit-board prune board-p --run nobody
error_is wit-board 'no run nobody on board tiny'
# A forged signature: the board's report edited to certify the forged run (or to flip the honest one).
cp -r board board-x
rep=$(ls board-x/runs/honest/board-reports/*.json | head -1)
jq '.report.verdict = "rejected" | .report.reason = "step 1: weights differ"' "$rep" >"$T/r.json" && mv "$T/r.json" "$rep"
(cd board-x/runs/honest && b=$(jq --arg m "board-reports/$(basename "$rep")" --arg d "$(b2sum -l 256 "board-reports/$(basename "$rep")" | cut -d' ' -f1)" \
  '.members[$m] = $d' bundle.json) && printf '%s\n' "$b" >bundle.json)
# A board document the board key did not sign is the folder's error (exit 2, the file named), never a verdict.
run 2 wit-board show board-x/runs/honest
error_is wit-board 'has a bad signature .not the board key.s.: board-x/runs/honest/board-reports/'
run 2 wit-board build -q board-x -o xsite
absent xsite
run 1 wit-board audit -q -j1 board-x
grep -q "does not reproduce: runs/honest/board-reports/.*bad signature" out && ok || fail "audit missed the edited report: $(cat out)"
# An edited stored response.
# A store that serves other bytes (an edited stored response, edited weights): not re-verifiable, never a verdict.
cp -r board.store board-y.store
resp=$(ls board-y.store/responses/*.wbundle | head -1)
printf '\x01' | dd of="$resp" bs=1 seek=100 conv=notrunc 2>/dev/null
run 1 wit-board audit -q -j1 board --store board-y.store
grep -q "^not re-verifiable: .*the store serves other bytes for its response" out && ok || fail "audit missed the edited response: $(cat out)"
# The response the kernels are pinned from (the first stored one) replaced by another stored response: it decodes and
# the pin runs on it, but audit takes no decoding for its report whose digest is not the report's: other bytes.
cp -r board.store board-v.store
first=$(ls board-v.store/responses/*.wbundle | head -1)
cp "$(ls board-v.store/responses/*.wbundle | sed -n 2p)" "$first"
run 1 wit-board audit -q -j1 board --store board-v.store
grep -q "^not re-verifiable: .*the store serves other bytes for its response responses/$(basename "$first") than its digest" out &&
  ok || fail "audit trusted the pinned decoding of another response: $(cat out)"
[ "$(grep -c . out)" = 1 ] && ok || fail "the swap touched more than its report: $(cat out)"
cp -r board.store board-w.store
w=$(ls board-w.store/weights/*.safetensors | head -1)
printf '\x01' | dd of="$w" bs=1 seek=200 conv=notrunc 2>/dev/null
run 1 wit-board audit -q -j1 board --store board-w.store
grep -q "^not re-verifiable: runs/honest/board-eval.json: the store serves other bytes for its weights" out && ok || fail "audit missed the edited weights: $(cat out)"

# issue 28: add into a bundle whose manifest no longer matches its heads is refused.
cp -r board board-m
cp B/run.json board-m/runs/honest/manifest.json
reindex board-m/runs/honest honest
run 2 wit-board add -q -j1 board-m/runs/honest d0.wbundle --key board.key
error_is wit-board 'names another run|another run'
# show: a bundle holding a link is a verdict (1), as on the board; a failed write to stdout is exit 2.
cp -r board/runs/honest linked && ln -s /etc/passwd linked/reports.json
run 1 wit-board show linked
run 2 sh -c 'wit-board show board/runs/honest >/dev/full'
error_is wit-board 'cannot write to stdout'

# === issue 37: the run's log in the evidence store ===
# A run whose log is over 1 MiB (40 steps, sketches of 4096 numbers): submit puts the log in the store at its
# digest (logs/DIGEST.wlog) and log.stored.json in the folder; no file in the folder exceeds 1 MiB.
sed -e 's/"steps": 8/"steps": 40/' -e 's/"checkpoint_every": 4/"checkpoint_every": 40/' -e 's/"head_every": 4/"head_every": 20/' \
  -e 's/"sketch_k": 64/"sketch_k": 4096/' -e 's/"probe_every": 4/"probe_every": 40/' -e 's/"seed": "b0a4/"seed": "d0a4/' cfg.json >cfg3.json
run 0 wit-train -q -j1 --config cfg3.json --data data.commit.json --index data.widx --key key --out L train.txt
run 0 wit-board pack -q -o onboard/long --name long --run L --data-commit data.commit.json --eval-commit eval.commit.json \
  --contamination clean.json
[ "$(stat -c %s onboard/long/run.wlog)" -gt 1048576 ] && ok || fail "the long run's log is not over 1 MiB"
ld=$(b2sum -l 256 onboard/long/run.wlog | cut -d' ' -f1)
run 0 wit-board submit board onboard/long
cmp -s onboard/long/run.wlog "board.store/logs/$ld.wlog" && ok || fail "the log is not in the store at its digest: $(ls board.store/logs)"
absent board/runs/long/run.wlog board/runs/honest/run.wlog
jq -e --arg d "$ld" '.format == "wit.board-log" and .path == "logs/\($d).wlog" and .digest == $d and .entries == 41 and
  (.curve.steps | length) == 40' board/runs/long/log.stored.json >/dev/null && ok || fail "log.stored.json: $(head -c 300 board/runs/long/log.stored.json)"
big=$(find board -type f -size +1024k)
[ -z "$big" ] && ok || fail "a file in the board folder exceeds 1 MiB: $big"
# The verdicts and curves are those of the same bundles with their logs in the folder (a board without a store).
cp -r board board-l  # its store is ../board.store too; build reads no store
for r in long honest; do
  rm board-l/runs/$r/log.stored.json && cp onboard/$r/run.wlog board-l/runs/$r/ && reindex board-l/runs/$r $r
done
run 0 wit-board build -q board -o lsite
run 0 wit-board build -q board-l -o lsite-l
jq -S '[.runs[] | del(.log_stored)]' lsite/board.json >v-store.json
jq -S '[.runs[] | del(.log_stored)]' lsite-l/board.json >v-folder.json
cmp -s v-store.json v-folder.json && ok || fail "a stored log changed what build says: $(diff v-store.json v-folder.json | head -5)"
jq -e '.runs[] | select(.name == "long") | (.loss_curve | length) == 40 and .log_stored.path == "logs/'"$ld"'.wlog"' lsite/board.json >/dev/null &&
  ok || fail "board.json: $(jq -c '.runs[] | select(.name == "long") | .log_stored' lsite/board.json)"
grep -q 'id="log-stored"' lsite/runs/long.html && grep -q '<path class="curve" d="M' lsite/runs/long.html && ok ||
  fail "the site does not draw the stored log's curve and say where it is from"
run 0 wit-board audit -q -j1 board
# A stored log with other bytes: not re-verifiable (exit 1), never a verdict.
cp -r board.store board-g.store
printf '\x01' | dd of="board-g.store/logs/$ld.wlog" bs=1 seek=5000 conv=notrunc 2>/dev/null
run 1 wit-board audit -q -j1 board --store board-g.store
grep -q "^not re-verifiable: runs/long/log.stored.json: the store serves other bytes for its log logs/$ld.wlog than its digest" out &&
  ok || fail "audit missed the edited stored log: $(cat out)"
# An edited curve (bundle.json re-indexed, so build takes it): audit re-derives the curve from the stored log.
cp -r board board-c
jq '.curve.mean_loss[3] = 1.0' board-c/runs/long/log.stored.json >"$T/l.json" && mv "$T/l.json" board-c/runs/long/log.stored.json
reindex board-c/runs/long long
run 1 wit-board audit -q -j1 board-c
grep -q "^does not reproduce: runs/long/log.stored.json: its loss curve is not the stored log's (step 4: 1.0 in the document" out &&
  ok || fail "audit missed the edited curve: $(cat out)"
# Pruned: recorded, listed as not re-verifiable; the verdict stands and the site draws no curve nobody can check.
cp -r board board-q && cp -r board.store board-q.store
run 0 wit-board prune -q board-q --store board-q.store --run long
grep -qx "logs/$ld.wlog" out && [ ! -e "board-q.store/logs/$ld.wlog" ] && ok || fail "prune did not drop the log: $(cat out)"
run 1 wit-board audit -q -j1 board-q --store board-q.store
grep -q "^not re-verifiable: runs/long/log.stored.json: its log logs/$ld.wlog is not in the store .*(pruned from the store on" out &&
  ok || fail "audit after the log's prune: $(cat out)"
run 0 wit-board build -q board-q -o qsite
jq -S '[.runs[] | select(.name == "long") | {status, reason, badge}]' qsite/board.json >q1.json
jq -S '[.runs[] | select(.name == "long") | {status, reason, badge}]' lsite/board.json >q2.json
cmp -s q1.json q2.json && ok || fail "the log's prune changed a verdict"
jq -e '.runs[] | select(.name == "long") | .loss_curve == [] and .log_stored.pruned == true' qsite/board.json >/dev/null &&
  grep -q 'id="log-pruned"' qsite/runs/long.html && ok || fail "a pruned log's curve is still drawn"

# --- bad input: one-line errors, exit 2
run 2 wit-board build no-such-bundle -o site4
error_is wit-board 'no such bundle or folder'
run 2 wit-board build bundles -o site5 --fraction 0
error_is wit-board 'fraction'
run 2 wit-board challenge bundles/changed --nonce "$(nonce 1)" -k 1
error_is wit-board 'the bundle is damaged: member manifest.json does not match'
run 2 wit-board challenge bundles/honest --nonce xyz -k 1
error_is wit-board 'nonce'
run 2 wit-board challenge bundles/honest --nonce "$(nonce 1)" -k 9
error_is wit-board '-k must be between 1 and the 8 steps'
run 2 wit-board pack -o bundles/honest --name again --run A --data-commit data.commit.json --eval-commit eval.commit.json \
  --eval A.eval.json --eval-scores A.scores.json --contamination clean.json
error_is wit-board 'output exists'
run 2 wit-board pack -o new --name 'bad name' --run A --data-commit data.commit.json --eval-commit eval.commit.json \
  --eval A.eval.json --eval-scores A.scores.json --contamination clean.json
error_is wit-board 'name'
absent new
run 2 wit-board pack -o new2 --name n --run A --data-commit data.commit.json --eval-commit eval.commit.json \
  --eval A.eval.json --eval-scores A.scores.json --contamination clean.json --challenge a1.json --report b1.report.json
error_is wit-board 'answers none of the --challenge files'
absent new2
run 2 wit-board add bundles/honest no-such.wbundle --key board.key
error_is wit-board 'not on a defined board'
run 2 wit-board show
error_is wit-board 'bundle is required'
finish
