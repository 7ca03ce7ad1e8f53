#!/usr/bin/env bash
# wit-board on real run bundles built end to end from a tiny run (wit-commit,
# wit-train, wit-challenge, wit-replay respond/verify, wit-eval run/check,
# wit-query contamination, wit-sketch fingerprint): the honest bundle is
# certified; a report of another head, a report of another run, a rejected
# replay report (a forged run, when wit-forge is built), a contaminated eval
# set, missing members, wrong versions and changed members are each rejected
# with their reason and never crash the build; the board is byte-identical
# when rebuilt; challenge/add raise the survived count and the confidence;
# bad input is a one-line error.
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
grep -q '^honest: certified$' out && ok || fail "honest bundle not certified: $(cat out)"
grep -q 'released model: matches (relative probe distance .*) (exactly: parameters root [0-9a-f]\{64\})' out && ok || fail "released model does not match exactly: $(cat out)"
grep -q 'challenges: 1 issued, 1 survived' out && ok || fail "survived count: $(cat out)"
# The same bundle as one .wbundle file gives the same verdict.
pack honest.wbundle honest A A --challenge a1.json --report a1.report.json --model-fingerprint A.fp.json
run 0 wit-board show honest.wbundle
grep -q '^honest: certified$' out && ok || fail ".wbundle not certified: $(cat out)"

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
grep -q '^honest: certified$' out && ok || fail "hand-made bundle.json not accepted: $(cat out)"

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

# --- a rejected replay report rejects the run (a forged run: skipped updates)
if [ -x "$FORGE" ]; then
  run 0 "$FORGE" train skip --fraction 0.5 --attack-seed 3 -j1 --config cfg.json --data data.commit.json \
    --index data.widx --key key --out F train.txt
  run 0 wit-challenge -q --run F --nonce "$(nonce 5)" -k 8 -o f1.json
  run 0 "$FORGE" respond -j1 --run F f1.json -o f1.wbundle  # the forger answers with its own states
  run 1 wit-replay verify -q -j1 --bundle f1.wbundle f1.json -o f1.report.json
  evaluate F eval.commit.json eval.txt F
  pack bundles/forged forged F F --challenge f1.json --report f1.report.json
  run 1 wit-board show bundles/forged
  grep -q '^forged: rejected (reports/.*: replay rejected the run: ' out && ok || fail "rejected report did not reject: $(cat out)"
else
  echo "note: $FORGE not built; the forged-run case is skipped" >&2
fi

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
grep -q '^oldmodel: certified$' out && ok || fail "a released model that differs rejected the run: $(cat out)"
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
grep -q '^nolog: certified$' out && ok || fail "a bundle without run.wlog: $(cat out)"

# --- the board: every bundle listed, the build never crashes, byte-identical rebuild
run 0 wit-board build bundles -o site
if [ -x "$FORGE" ]; then want='19 runs: 4 certified, 1 pending, 14 rejected'; else want='18 runs: 4 certified, 1 pending, 13 rejected'; fi
grep -q "$want" err && ok || fail "build summary: $(cat err) (want $want)"
[ -f site/index.html ] && [ -f site/board.json ] && [ -f site/runs/honest.html ] && [ -f site/runs/garbage.html ] && ok ||
  fail "site files missing: $(ls -R site)"
for n in honest resigned foreign swapped evalB dirty missing version changed noindex garbage truncated; do
  grep -q "data-name=\"$n\"" site/index.html && ok || fail "run $n not on the board"
done
grep -q 'data-status="certified" data-name="honest"' site/index.html && ok || fail "honest not certified on the board"
grep -q 'data-status="rejected" data-name="garbage"' site/index.html && ok || fail "garbage not rejected on the board"
grep -q '<path class="curve" d="M' site/runs/honest.html && ok || fail "no loss curve"
grep -q '<svg id="replay-' site/runs/honest.html && ok || fail "no replay plot"
run 0 wit-board build bundles -o site2
# torch_board_browser.sh opens this site in Chromium.
if [ -n "${WIT_BOARD_KEEP:-}" ]; then mkdir -p "$WIT_BOARD_KEEP" && cp -r site bundles honest.wbundle "$WIT_BOARD_KEEP/"; fi
diff -r site site2 >/dev/null && ok || fail "two builds differ"
run 0 wit-board build bundles/honest bundles/waiting -o site3 --fraction 0.1
grep -q '"fraction": 0.1' site3/board.json && ok || fail "fraction not in board.json"
run 0 wit-board build bundles/honest -o site3
[ ! -f site3/runs/waiting.html ] && ok || fail "stale page left behind"

# --- self-regulation: challenge, respond, verify, add
conf() { sed -n 's/^confidence: \([0-9.]*\)%.*/\1/p' out; }
run 0 wit-board show bundles/honest
c1=$(conf)
run 0 wit-board challenge -q bundles/honest --nonce "$(nonce 9)" -k 4 -o c9.json
path=$(cat out)
[ -f "$path" ] && cmp -s "$path" c9.json && ok || fail "challenge not written into the bundle: $path"
run 0 wit-board challenge -q bundles/honest --nonce "$(nonce 9)" -k 4
run 0 wit-board show bundles/honest
grep -q 'challenges: 2 issued, 1 survived, 1 pending' out && ok || fail "new challenge not pending: $(cat out)"
run 0 wit-replay respond -q -j1 --run A c9.json -o c9.wbundle
run 0 wit-replay verify -q -j1 --bundle c9.wbundle c9.json -o c9.report.json
run 1 wit-board add bundles/honest b1.report.json
grep -q 'refused: .* answers no challenge' err && ok || fail "foreign report not refused: $(cat err)"
run 1 wit-board add bundles/honest a4.report.json
run 0 wit-board add bundles/honest c9.report.json
run 0 wit-board show bundles/honest
grep -q 'challenges: 2 issued, 2 survived, 0 pending' out && ok || fail "survived did not grow: $(cat out)"
c2=$(conf)
awk -v a="$c1" -v b="$c2" 'BEGIN { exit !(b > a) }' && ok || fail "confidence did not grow: $c1 -> $c2"
# The same in a .wbundle file.
run 0 wit-board challenge -q honest.wbundle --nonce "$(nonce 9)" -k 4
run 0 wit-board add -q honest.wbundle c9.report.json
run 0 wit-board show honest.wbundle
grep -q 'challenges: 2 issued, 2 survived' out && ok || fail ".wbundle add: $(cat out)"

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
run 2 wit-board add bundles/honest no-such-report.json
error_is wit-board 'no-such-report.json'
run 2 wit-board show
error_is wit-board 'bundle is required'
finish
