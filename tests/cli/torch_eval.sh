#!/usr/bin/env bash
# wit-eval on a real (tiny) run: run writes a reproducible eval commitment of
# the final checkpoint, check certifies it; an eval commitment with ONE
# inflated score, recommitted consistently (wit-forge eval inflate), is caught
# by spot checks at the predicted rate k/n over many nonces; tampered scores
# or aggregates are rejected without spot checks; bad input is a one-line
# error with exit 2 and leaves no output behind.
source "$(dirname "$0")/lib.sh"
FORGE="${WIT_FORGE:-$WIT_BIN/../tests/attacks/wit-forge}"

# --- data: 120 training fortunes and 24 held out
if [ -f /usr/share/games/fortunes/computers ]; then
  LC_ALL=C awk 'BEGIN{RS="\n%\n"} NF && !seen[$0]++ {n++; if (n<=144) printf "%s\n%%\n", $0}' \
    /usr/share/games/fortunes/computers >all.txt
else
  for i in $(seq 1 144); do printf 'record %d of a small corpus for training and evaluation\n%%\n' "$i"; done >all.txt
fi
LC_ALL=C awk 'BEGIN{RS="\n%\n"} NR<=120 {printf "%s\n%%\n", $0}' all.txt >train.txt
LC_ALL=C awk 'BEGIN{RS="\n%\n"} NR>120 {printf "%s\n%%\n", $0}' all.txt >eval.txt
run 0 wit-commit --reader fortune -q -o train.commit.json train.txt
run 0 wit-commit --reader fortune -q -o eval.commit.json eval.txt
cat >cfg.json <<'CFG'
{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48},
 "batch_size": 4, "steps": 8, "checkpoint_every": 4, "head_every": 4,
 "fingerprint": {"sketch_k": 64, "probe_every": 4, "probe_records": 4, "probe_dim": 16},
 "seed": "e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1e7a1"}
CFG
sed 's/"seed": "e7a1/"seed": "f7a1/' cfg.json >cfg2.json
run 0 wit-log keygen -o key
run 0 wit-train -q -j1 --config cfg.json --data train.commit.json --index train.widx --key key --out A train.txt
run 0 wit-train -q -j1 --config cfg2.json --data train.commit.json --index train.widx --key key --out B train.txt
nonce() { printf '%064x' "$1"; }
ev() { wit-eval "$1" -j1 --run A --commit eval.commit.json --index eval.widx "${@:2}"; }

# --- run: the final checkpoint, one summary line, reproducible bytes
start=$(date +%s.%N)
run 0 ev run -o eval.json --scores scores.json eval.txt
end=$(date +%s.%N)
echo "wit-eval run on 24 records: $(echo "$end - $start" | bc) s"
grep -qE '^wit-eval: eval of step 8: loss [0-9.]+, accuracy [0-9.]+ over 24 examples; causal check passed on 24 of 24 records, 1 cut each$' err && [ "$(wc -l <err)" -eq 1 ] && ok ||
  fail "run summary: $(cat err)"
[ "$(json_get eval.json step)" = 8 ] && [ "$(json_get eval.json n)" = 24 ] && [ "$(json_get eval.json metric)" = next-byte ] &&
  [ "$(json_get eval.json format)" = wit.eval ] && ok || fail "eval.json fields: $(cat eval.json)"
[ "$(grep -c '^    \["' scores.json)" = 24 ] && ok || fail "scores.json has not 24 score lines"
run 0 ev run -q -o eval2.json --scores scores2.json eval.txt
[ ! -s err ] && ok || fail "-q still printed: $(cat err)"
same_file eval.json eval2.json
same_file scores.json scores2.json
run 0 wit-eval run -q -j2 --run A --commit eval.commit.json -o eval3.json --scores scores3.json eval.txt
same_file eval.json eval3.json
run 0 ev run -q --checkpoint A/ckpt/step-000004.safetensors -o eval4.json --scores scores4.json eval.txt
[ "$(json_get eval4.json step)" = 4 ] && ! cmp -s eval.json eval4.json && ok || fail "an earlier checkpoint's eval"
run 0 wit-eval show eval.json
grep -q '^eval of step 8: ' out && ok || fail "show eval.json: $(cat out)"
grep -q "^  causal           causal check passed on 24 of 24 records, 1 cut each (cut nonce $(json_get eval.json checkpoint_root))$" out &&
  ok || fail "show: the default cut nonce is not the checkpoint root: $(cat out)"

# --- the causal check (docs/eval.md): the built-in GPT passes at every
# eligible cut of every record, bit for bit, on one and two threads; the
# nonce and the cut count are part of eval.json
run 0 ev run -o cuts.json --scores cuts.scores.json --causal-cuts 64 eval.txt
grep -q 'causal check passed on 24 of 24 records, 64 cuts each' err && ok || fail "64 cuts: $(cat err)"
grep -q '"cuts": 64' cuts.json && ok || fail "eval.json does not record 64 cuts"
run 0 wit-eval run -q -j2 --run A --commit eval.commit.json -o cuts2.json --scores cuts2.scores.json --causal-cuts 64 eval.txt
same_file cuts.json cuts2.json
run 0 ev run -q -o nonce.json --scores nonce.scores.json --nonce "$(nonce 9)" eval.txt
grep -q "\"nonce\": \"$(nonce 9)\"" nonce.json && ok || fail "the --nonce is not in eval.json"
! cmp -s eval.json nonce.json && ok || fail "another cut nonce gave the same eval.json"
same_file <(grep '^    \["' scores.json) <(grep '^    \["' nonce.scores.json)
run 2 ev run -o t.json --scores ts.json --causal-cuts 0 eval.txt
error_is wit-eval 'causal-cuts must be 1 to 64'
run 2 ev run -o t.json --scores ts.json --causal-cuts 65 eval.txt
error_is wit-eval 'causal-cuts must be 1 to 64'
run 2 ev run -o t.json --scores ts.json --nonce 12 eval.txt
error_is wit-eval 'nonce'
absent t.json ts.json

# --- check: the honest eval is certified, with the guarantee
run 0 ev check --eval eval.json --scores scores.json --nonce "$(nonce 1)" -k 6 -o check.json eval.txt
[ "$(json_get check.json verdict)" = certified ] && ok || fail "honest check verdict"
grep -q 'is caught by these 6 spot checks with probability at least' err && ok || fail "no guarantee sentence: $(cat err)"
run 0 ev check -q --eval eval.json --scores scores.json --nonce "$(nonce 1)" -k 6 -o check2.json eval.txt
same_file check.json check2.json
run 0 ev check -q --eval eval4.json --scores scores4.json --nonce-file <(nonce 2) --confidence 0.9 --fraction 0.25 -o check4.json eval.txt
# Hypergeometric: 6 of 24 examples wrong are missed by k picks with C(18,k)/C(24,k): 0.138 at k = 6, 0.092 at k = 7.
[ "$(json_get check4.json k)" = 7 ] && [ "$(json_get check4.json verdict)" = certified ] && ok || fail "confidence-derived k: $(json_get check4.json k), want 7"
run 0 ev check -q --eval eval.json --scores scores.json --nonce "$(nonce 3)" -k 24 -o all.json eval.txt
run 0 wit-eval show check.json
grep -q '^certified' out && ok || fail "show check.json"

# --- the attack: one example's loss halved, recommitted consistently
if [ -x "$FORGE" ]; then
  I=5
  run 0 "$FORGE" eval inflate --index $I --eval eval.json --scores scores.json -o inflated.json --scores-out inflated.scores.json
  honest=$(json_get eval.json loss) forged=$(json_get inflated.json loss)
  [ "$(echo "$forged < $honest" | bc -l)" = 1 ] && ok || fail "the forged loss $forged is not below $honest"
  # Every nonce certifies the forgery exactly when example I is not among its
  # picks, so the catch rate is that of k/n = 6/24 = 0.25.
  trials=64 caught=0 mismatched=0
  start=$(date +%s)
  check_nonce() {  # check_nonce T: leaves c.T.json and c.T.rc
    ev check -q --eval inflated.json --scores inflated.scores.json --nonce "$(nonce "$1")" -k 6 -o "c.$1.json" eval.txt \
      >/dev/null 2>"c.$1.err"
    echo $? >"c.$1.rc"
  }
  for t in $(seq 100 $((100 + trials - 1))); do
    check_nonce "$t" &
    [ $(( (t - 99) % 2 )) = 0 ] && wait  # two at a time: wit-eval's start-up (LibTorch) dominates
  done
  wait
  for t in $(seq 100 $((100 + trials - 1))); do
    rc=$(cat "c.$t.rc")
    picked=$(tr -d ' \n' <"c.$t.json" | grep -o '"indices":\[[0-9,]*\]' | grep -cE "[\[,]$I[],]")
    if [ "$rc" -eq 1 ]; then
      caught=$((caught + 1))
      grep -q "\"reason\": \"example $I: claimed loss" "c.$t.json" && [ "$picked" = 1 ] || mismatched=$((mismatched + 1))
    elif [ "$rc" -eq 0 ]; then
      [ "$picked" = 0 ] || mismatched=$((mismatched + 1))
    else
      fail "check exit $rc: $(cat "c.$t.err")"
    fi
  done
  end=$(date +%s)
  echo "inflated score caught by $caught of $trials spot checks (predicted rate 6/24 = 0.25, $((trials / 4)) expected); $((end - start)) s"
  [ "$mismatched" = 0 ] && ok || fail "$mismatched verdicts disagree with whether example $I was picked"
  # Binomial(64, 0.25): mean 16, sd 3.46; 4 sd either side.
  [ "$caught" -ge 3 ] && [ "$caught" -le 29 ] && ok || fail "caught $caught of $trials, outside 16 +- 13.9"
  # Checking every example catches it with certainty.
  run 1 ev check -q --eval inflated.json --scores inflated.scores.json --nonce "$(nonce 3)" -k 24 -o all.json eval.txt
  [ "$(json_get all.json verdict)" = rejected ] && ok || fail "a full check did not reject"
else
  fail "wit-forge is not built at $FORGE"
fi

# --- tampering without recommitting is rejected before any spot check
sed '0,/^    \["\([0-9a-f]*\)",[0-9.e+-]*,/s//    ["\1",0.5,/' scores.json >tampered.json
! cmp -s scores.json tampered.json && ok || fail "the tampered scores are unchanged"
run 1 ev check -q --eval eval.json --scores tampered.json --nonce "$(nonce 1)" -k 3 -o t.json eval.txt
grep -q 'rejected: the scores do not reproduce the eval commitment' err && ok || fail "tampered scores: $(cat err)"
absent t.json
sed 's/"loss": [0-9.e+-]*/"loss": 0.5/' eval.json >lowered.json
run 1 ev check -q --eval lowered.json --scores scores.json --nonce "$(nonce 1)" -k 3 -o t.json eval.txt
grep -q 'rejected: .*another eval' err && ok || fail "lowered aggregate: $(cat err)"
absent t.json

# --- bad input: exit 2, one line, nothing written
sed 's/"version": 1/"version": 2/' eval.json >v2.json
run 2 ev check --eval v2.json --scores scores.json --nonce "$(nonce 1)" -k 3 -o t.json eval.txt
error_is wit-eval 'unsupported wit.eval version 2'
sed 's/"metric"/"extra": 1, "metric"/' eval.json >unknown.json
run 2 ev check --eval unknown.json --scores scores.json --nonce "$(nonce 1)" -k 3 -o t.json eval.txt
error_is wit-eval "unknown field 'extra'"
run 2 ev check --eval eval.json --scores scores.json -k 3 -o t.json eval.txt
error_is wit-eval 'missing --nonce'
run 2 ev check --eval eval.json --scores scores.json --nonce xyz -k 3 -o t.json eval.txt
error_is wit-eval 'nonce'
run 2 ev check --eval eval.json --scores scores.json --nonce "$(nonce 1)" -k 25 -o t.json eval.txt
error_is wit-eval '-k must be between 1 and'
run 2 ev check --eval eval.json --scores scores.json --nonce "$(nonce 1)" --confidence 0.9 -o t.json eval.txt
error_is wit-eval 'needs --fraction'
run 2 ev check --eval eval.json --scores scores.json --nonce "$(nonce 1)" -k 3 -o t.json train.txt
error_is wit-eval 'do not match the commitment'
run 2 wit-eval check -j1 --run B --commit eval.commit.json --eval eval.json --scores scores.json --nonce "$(nonce 1)" -k 3 -o t.json eval.txt
error_is wit-eval 'the eval is of another run'
run 2 ev run -o t.json --scores ts.json --checkpoint B/ckpt/step-000008.safetensors eval.txt
error_is wit-eval "root is not the one the run's log has"
cp -r A C && cp A/ckpt/step-000004.safetensors C/ckpt/step-000008.safetensors
run 2 wit-eval run -j1 --run C --commit eval.commit.json -o t.json --scores ts.json eval.txt
error_is wit-eval 'the checkpoint is of step 4, not 8'
run 2 ev run -o t.json --scores ts.json --checkpoint eval.txt eval.txt
error_is wit-eval 'eval.txt'
run 2 ev run -o t.json eval.txt
error_is wit-eval 'scores'
head -c 300 eval.txt >short.txt
run 2 ev run -o t.json --scores ts.json short.txt
error_is wit-eval 'do not match the commitment'
absent t.json ts.json
run 2 wit-eval show train.commit.json
error_is wit-eval 'not a wit eval document'

finish
