#!/usr/bin/env bash
# Attacks 20-22 of docs/design.md against a board with a sealed split, built
# for real (docs/board.md, "The sealed split", "Overlap", "Only evidence rejects"):
# 20. a TorchScript module carrying the public benchmark's answers in a
#     List[int] attribute (causal, honestly trained, replays exactly): its
#     public score is near perfect, it is ranked on its sealed score (no
#     better than the honest run's) and flagged by the gap test;
# 21. a run trained on near-copies of benchmark records (a few characters
#     added to each, declared and committed): the board's overlap test names
#     the step, the training record and the benchmark record, and rejects;
#     forged batch fields (a lying step or index, an extra unchallenged
#     batch/ member) change nothing: only what the replay proved counts;
# 22. a stray report and a forged board document dropped into the folder:
#     no verdict changes; build exits 2 naming the file where the folder no
#     longer matches its index; the same run under two names is one entry.
# Then a revealed epoch re-audited by someone holding only the folder, with a run
# of the next epoch scored on the public split enlarged by the revealed records.
# Tiny models, 8 steps: bounded (a minute or two).
source "$(dirname "$0")/../cli/lib.sh"
: "${WIT_ATTACK_BIN:?set WIT_ATTACK_BIN to the folder of wit-forge}"
FORGE=$WIT_ATTACK_BIN/wit-forge

# Records of about 120 bytes: random letters in words of 3 to 8 (awk's generator, fixed seeds), so no
# two records share a long span and what one record's text says of another's is only letter frequencies.
lines() {  # lines SEED COUNT
  awk -v seed="$1" -v n="$2" 'BEGIN { srand(seed)
    for (i = 1; i <= n; i++) { s = ""
      while (length(s) < 120) { s = s " "; k = 3 + int(rand() * 6); for (j = 0; j < k; j++) s = s sprintf("%c", 97 + int(rand() * 26)) }
      print s } }'
}
lines 11 80 >data.txt
lines 12 60 >pool.txt
# The benchmark pool split at random (a fixed shuffle here): 30 published, 30 sealed.
awk 'NR % 2 == 1' pool.txt >public.txt
awk 'NR % 2 == 0' pool.txt >sealed.txt
# Attack 21's data: half the training records, and every public record with "#!" added every 60 bytes.
{ head -n 40 data.txt; awk '{ s = ""; for (i = 1; i <= length($0); i += 60) s = s substr($0, i, 60) "#!"; print s }' public.txt; } >near.txt
run 0 wit-commit -q -o data.commit.json data.txt
run 0 wit-commit -q -o near.commit.json near.txt
run 0 wit-commit -q -o public.commit.json public.txt
run 0 wit-log keygen -o key
cat >cfg.json <<'CFG'
{"model": {"vocab": 257, "context": 32},
 "batch_size": 4, "steps": 8, "checkpoint_every": 4, "head_every": 4,
 "optimizer": {"lr": 0.01},
 "fingerprint": {"sketch_k": 64, "probe_every": 4, "probe_records": 4, "probe_dim": 8},
 "seed": "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"}
CFG
run 0 "$FORGE" model plain -o plain.pt
run 0 "$FORGE" model table --records public.txt --context 32 -o table.pt
train() {  # train MODEL DATA RUN
  run 0 wit-train -q -j1 --model "$1" --config cfg.json --data "$2.commit.json" --index "$2.widx" --key key --out "$3" "$2.txt"
}
train plain.pt data P   # honest
train table.pt data T   # attack 20: the public benchmark's answers in the module
train plain.pt near N   # attack 21: near-copies of the public records
# Another honest run (its own seed), submitted in the next epoch.
jq '.seed = "'"$(printf '5eed%.0s' $(seq 16) | sed 's/5eed$/0001/')"'"' cfg.json >cfgq.json
run 0 wit-train -q -j1 --model plain.pt --config cfgq.json --data data.commit.json --index data.widx --key key --out Q data.txt
for r in P T N Q; do
  data=data; [ "$r" = N ] && data=near
  run 0 wit-eval run -q -j1 --run "$r" --commit public.commit.json --index public.widx -o "$r.eval.json" \
    --scores "$r.scores.json" public.txt
  run 0 wit-query contamination -q --commit "$data.commit.json" --index "$data.widx" -o "$r.clean.json" public.txt
  run 0 wit-sketch export --run "$r" "$r/ckpt/step-000008.safetensors" -o "$r.release.safetensors"
  wit-sketch match -j1 --json --run "$r" "$r.release.safetensors" >"$r.binding.json"
  run 0 wit-board pack -q -o "$r.bundle" --name "$r" --run "$r" --data-commit "$data.commit.json" \
    --eval-commit public.commit.json --eval "$r.eval.json" --eval-scores "$r.scores.json" \
    --contamination "$r.clean.json" --model-binding "$r.binding.json"
  run 0 wit-commit leaves --index "$data.widx" -o "$r.wleaves"
done
# The trainer's own public score of the table module: near perfect.
awk -v a="$(json_get T.eval.json accuracy)" 'BEGIN { exit !(a > 0.8) }' && ok || fail "the table module's public accuracy is $(json_get T.eval.json accuracy)"

# The board: the public half published, the sealed half kept outside the folder with its salts.
run 2 wit-board init board --name sealed --key board.key --benchmark public.commit.json public.txt \
  --sealed board/sealed.json --sealed-records sealed.txt
error_is wit-board 'sealed records must be kept outside the board folder'
run 2 wit-board init board --name sealed --key board.key --benchmark public.commit.json public.txt \
  --sealed sealed.keep --sealed-records public.txt
error_is wit-board 'is already published'
absent board sealed.keep
run 0 wit-board init board --name sealed --key board.key --benchmark public.commit.json public.txt \
  --sealed sealed.keep --sealed-records sealed.txt --confidence 0.5 -k 4
jq -e '.sealed.n == 30 and (.signature | length) == 128' board/board.def.json >/dev/null && ok || fail "no signed sealed commitment"
# Nothing of the sealed records' text reaches the folder.
first_sealed=$(head -n 1 sealed.txt)
grep -rqF "$first_sealed" board && fail "a sealed record is in the folder" || ok
grep -rqi "$(head -n 1 sealed.txt | od -An -tx1 | tr -d ' \n' | cut -c1-40)" board && fail "a sealed record's bytes are in the folder" || ok

for r in P T N; do run 0 wit-board submit board "$r.bundle"; done
board_run() {  # board_run NAME EXPECTED_ADD_STATUS [-v: add says why]
  run 0 wit-board challenge -q "board/runs/$1" --key board.key -o "$1.d0.json"
  run 0 wit-replay respond -q -j1 --run "$1" "$1.d0.json" -o "$1.d0.wbundle"
  run "$2" wit-board add $([ "${3:-}" = -v ] || echo -q) -j1 "board/runs/$1" "$1.d0.wbundle" --key board.key --sealed "${SEALED:-sealed.keep}"
}
board_run P 0
board_run T 0
# Attack 21: the overlap test names the step, the training record and the benchmark record.
board_run N 1 -v
grep -q "trained on a near-copy of benchmark record [0-9]* (leaf [0-9a-f]*): record [0-9]* of the data tree (leaf [0-9a-f]*) shares [0-9]*% of its text" err &&
  ok || fail "no overlap finding: $(cat err)"
# A writer files under the definition it reads once it holds the board's lock: an evaluate that waited
# while the epoch was revealed must not score on the sealed set the reveal just published (a writer that
# read the definition before the lock would, and file a sealed score on records anyone can now read).
# The reveal is played by hand on a copy: the definition and revealed file of a revealed copy swapped in
# while this test holds the copy's lock and the evaluate waits on it (its request seen in /proc/locks).
cp -r board board-race && cp -r board board-x
run 0 wit-board reveal board-x --key board.key --sealed sealed.keep
exec 9<board-race && flock 9
wit-board evaluate -q -j1 board-race/runs/P P.release.safetensors --model P/model.pt --key board.key --sealed sealed.keep \
  >"$T/race.out" 2>"$T/race.err" &
race=$!
# A request blocked on the folder's inode (pids in /proc/locks depend on the reader's namespace; the inode does not).
waiting="-> FLOCK +ADVISORY +WRITE +[0-9-]+ +[0-9a-f]+:[0-9a-f]+:$(stat -c %i board-race) "
for _ in $(seq 1 1200); do grep -Eq -- "$waiting" /proc/locks && break; sleep 0.1; done
grep -Eq -- "$waiting" /proc/locks && ok || fail "the evaluate never waited on the board's lock: $(cat /proc/locks)"
mkdir -p board-race/benchmark/sealed && cp board-x/benchmark/sealed/epoch-0.json board-race/benchmark/sealed/ &&
  cp board-x/board.def.json "$T/def.json" && mv "$T/def.json" board-race/board.def.json
flock -u 9 && exec 9<&-
wait "$race" && rc=0 || rc=$?
[ "$rc" = 2 ] && grep -q 'the board has no sealed split (none sealed, or its epoch revealed)' "$T/race.err" && ok ||
  fail "an evaluate that waited out a reveal: exit $rc, $(head -c 300 "$T/race.err")"
[ -e board-race/runs/P/board-eval.json ] && fail "a sealed score was filed on a revealed epoch" || ok
rm -rf board-race board-x
# Attack 21 with forged batch fields (docs/board.md, "Overlap"): the board reads only the batches the replay
# proved, each record at the verifier's own position. N answers a second board challenge with every batch's
# "step" and every record's "index" field lying (no check reads them): the finding names a challenged step and
# the true position, the honest answer's. A third answer carries an extra batch/ member no challenged step asks
# for, not JSON: it is never read (the run is rejected for its overlap, not refused with exit 2).
forge_batches() {  # forge_batches IN OUT: every batch/ member's step and index fields set to lies
  local m cur=$1 i=0
  for m in $("$FORGE" members --bundle "$1" | grep '^batch/'); do
    "$FORGE" get-member --bundle "$1" --member "$m" | jq -c '.step = 99999 | .records[].index = 99999' >"$T/b.json"
    i=$((i + 1))
    run 0 "$FORGE" put-member --bundle "$cur" --member "$m" --file "$T/b.json" -o "$2.$i"
    cur=$2.$i
  done
  mv "$cur" "$2"
}
board_report() { echo "board/runs/$1/board-reports/$(jq -r .seed "$2" | cut -c1-16).json"; }  # board_report RUN CHALLENGE
run 0 wit-board challenge -q board/runs/N --key board.key -o N.d1.json
run 0 wit-replay respond -q -j1 --run N N.d1.json -o N.d1.wbundle
forge_batches N.d1.wbundle N.d1f.wbundle
run 1 wit-board add -q -j1 board/runs/N N.d1f.wbundle --key board.key --sealed sealed.keep
rep=$(board_report N N.d1.json)
s=$(jq .overlap.step "$rep")
r=$(jq .overlap.record "$rep")
jq -e --argjson s "$s" '.steps | index($s) != null' N.d1.json >/dev/null && ok || fail "the finding's step $s is not challenged"
"$FORGE" get-member --bundle N.d1.wbundle --member "$(printf 'batch/%06d.json' "$s")" |
  jq -e --argjson r "$r" '[.records[] | select(.index == $r)] | length == 1' >/dev/null && ok ||
  fail "the finding's record $r is not the honest answer's position in step $s"
jq -r .report.reason "$rep" | grep -q "^step $s trained on a near-copy of benchmark record [0-9]* (leaf [0-9a-f]*): record $r of the data tree " &&
  ok || fail "the reason does not name the true step and position: $(jq -r .report.reason "$rep")"
run 0 wit-board challenge -q board/runs/N --key board.key -o N.d2.json
run 0 wit-replay respond -q -j1 --run N N.d2.json -o N.d2.wbundle
echo 'not json' >"$T/x.json"
run 0 "$FORGE" put-member --bundle N.d2.wbundle --member batch/000000.json --file "$T/x.json" -o N.d2x.wbundle
run 1 wit-board add -q -j1 board/runs/N N.d2x.wbundle --key board.key --sealed sealed.keep
jq -r .report.reason "$(board_report N N.d2.json)" | grep -q "^step [0-9]* trained on a near-copy of benchmark record" &&
  ok || fail "the extra member was read: $(cat err)"
for r in P T; do
  run 2 wit-board evaluate -q -j1 "board/runs/$r" "$r.release.safetensors" --model "$r/model.pt" --key board.key
  error_is wit-board 'has a sealed split'
  run 0 wit-board evaluate -q -j1 "board/runs/$r" "$r.release.safetensors" --model "$r/model.pt" --key board.key --sealed sealed.keep
  run 0 wit-board leaves -q "board/runs/$r" "$r.wleaves" --key board.key
done
# Responses in parts (docs/board.md): a TorchScript run's module is one stored file, the response's model.pt
# and the module the board scored (weights/D.pt), counted once.
for r in P T; do
  rp=$(jq -r '.parts[] | select(.name == "model.pt") | .path' board/runs/$r/board-reports/*.json)
  [ -n "$rp" ] && [ "$rp" = "$(jq -r .model.path "board/runs/$r/board-eval.json")" ] && [ -f "board.store/$rp" ] && ok ||
    fail "$r's module is not one stored file: response part '$rp', evaluated $(jq -c .model "board/runs/$r/board-eval.json")"
done
run 0 wit-board show board/runs/P
grep -q '^P: certified$' out && ok || fail "the honest run is not certified: $(cat out)"
grep -q '^sealed: loss .* over 30 sealed records (epoch 0; ranked on)' out && ok || fail "no sealed score: $(cat out)"
run 0 wit-board show board/runs/T
grep -q '^T: pending (does better on the published records than on sealed ones (gap test p = ' out && ok ||
  fail "the table module was not flagged: $(cat out)"
run 1 wit-board show board/runs/N
grep -q '^N: rejected (board-reports/.*near-copy of benchmark record' out && ok || fail "the near-copy run: $(cat out)"
run 0 wit-board build -q board -o site
jq -e '.runs[] | select(.name == "T") | .sealed.gap.flagged and .badge == "flagged"' site/board.json >/dev/null && ok ||
  fail "board.json does not flag T"
# T's public score is far above P's; its sealed score is not (the table holds nothing of the sealed records).
pa=$(jq '.runs[] | select(.name == "P") | .eval.accuracy' site/board.json)
ta=$(jq '.runs[] | select(.name == "T") | .eval.accuracy' site/board.json)
ps=$(jq '.runs[] | select(.name == "P") | .sealed.accuracy' site/board.json)
ts=$(jq '.runs[] | select(.name == "T") | .sealed.accuracy' site/board.json)
echo "attack 20: public accuracy honest $pa, table $ta; sealed accuracy honest $ps, table $ts" >&2
jq -r '.runs[] | select(.sealed != null) | "\(.name): gap \(.sealed.gap.observed) nats/byte, p \(.sealed.gap.p), corrected \(.sealed.gap.adjusted), detectable \(.sealed.gap.detectable)"' site/board.json >&2
# Near chance after 8 steps, both sealed accuracies move by several points from run to run (the modules' own
# initialisation): the table's gain must vanish on the sealed records, and its sealed score stay near the honest one.
awk -v p="$pa" -v t="$ta" -v ps="$ps" -v ts="$ts" 'BEGIN { exit !(t > p + 0.5 && ts < t - 0.5 && ts < ps + 0.15) }' && ok ||
  fail "public $pa vs $ta, sealed $ps vs $ts"
grep -q '<th data-type="num" title="loss on the sealed records[^"]*">sealed loss<br>' site/index.html && ok || fail "no sealed column"
# Ranked on the sealed score: the certified honest run first, the flagged one after it.
[ "$(grep -o 'data-name="[A-Z]"' site/index.html | head -n 2 | tr -d '\n')" = 'data-name="P"data-name="T"' ] && ok ||
  fail "rank order: $(grep -o 'data-name="[A-Z]"' site/index.html | tr '\n' ' ')"

# Attack 22: a stray report dropped into the honest run's folder counts for nothing.
cp -r board board-s
real=$(ls board-s/runs/P/board-reports/*.json | head -n 1)
jq '.report.verdict = "rejected" | .report.reason = "step 1: weights differ"' "$real" >board-s/runs/P/board-reports/0000000000000000.json
run 0 wit-board build -q board-s -o site-s
jq -e '.runs[] | select(.name == "P") | .status == "certified" and (.ignored | length) == 1' site-s/board.json >/dev/null &&
  ok || fail "a stray file changed the verdict: $(jq -c '.runs[] | select(.name == "P") | [.status, .reason, .ignored]' site-s/board.json)"
run 0 wit-board show board-s/runs/P
grep -q '^ignored (not in the bundle.s index; they count for nothing): board-reports/0000000000000000.json' out && ok ||
  fail "the stray file is not named: $(cat out)"
# A forged board document (the honest run's evaluation edited), with or without its index updated: exit 2 naming it.
cp -r board board-f
jq '.eval.loss = 0.001' board-f/runs/P/board-eval.json >"$T/e.json" && mv "$T/e.json" board-f/runs/P/board-eval.json
run 2 wit-board build -q board-f -o site-f
error_is wit-board "the board.s folder does not match its own index: member board-eval.json does not match its hash in bundle.json: board-f/runs/P/board-eval.json"
grep -q '^hint: restore the file' err && ok || fail "no hint on how to mend: $(cat err)"
absent site-f
(cd board-f/runs/P && b=$(jq --arg d "$(b2sum -l 256 board-eval.json | cut -d' ' -f1)" '.members["board-eval.json"] = $d' bundle.json) &&
  printf '%s\n' "$b" >bundle.json)
run 2 wit-board show board-f/runs/P
error_is wit-board 'board-eval.json has a bad signature .not the board key.s.: board-f/runs/P/board-eval.json'
run 2 wit-board build -q board-f -o site-f
# One run, one entry: the honest run under a second name is refused, naming the entry; a copy in the folder counts once.
run 0 wit-board pack -q -o P2.bundle --name P2 --run P --data-commit data.commit.json --eval-commit public.commit.json \
  --eval P.eval.json --eval-scores P.scores.json --contamination P.clean.json --model-binding P.binding.json
run 2 wit-board submit board P2.bundle
error_is wit-board 'is already on the board as P: one run, one entry'
absent board/runs/P2
# A copy under a name that sorts first (put in the folder without submit) does not push the certified run off.
cp -r board board-c && run 0 wit-board pack -q -o board-c/runs/A --name A --run P --data-commit data.commit.json \
  --eval-commit public.commit.json --eval P.eval.json --eval-scores P.scores.json --contamination P.clean.json
run 0 wit-board build -q board-c -o site-c
jq -e '[.runs[] | select(.status == "certified") | .name] == ["P"]' site-c/board.json >/dev/null && ok || fail "one run ranked twice"
jq -e '.runs[] | select(.name == "A") | .reason | test("is on the board as P: one run, one entry")' site-c/board.json >/dev/null &&
  ok || fail "the copy is not named: $(jq -c '.runs[] | select(.name == "A") | [.status, .reason]' site-c/board.json)"

# Model policy: a board that takes the built-in GPT only refuses a module, naming its digest.
run 0 wit-board init board-g --name gpt-only --key board.key --benchmark public.commit.json public.txt --models builtin
run 2 wit-board submit board-g P.bundle
error_is wit-board 'takes the built-in GPT only .policy.models., not the TorchScript module [0-9a-f]{64}'

# audit: every stored response, weights file and tree re-verified; the sealed half with the sealed set.
run 0 wit-board audit -j1 board --sealed sealed.keep || cat out >&2
grep -q 'sealed scores not re-scored' err && fail "sealed scores skipped with the sealed set given: $(cat err)" || ok
run 0 wit-board audit -j1 board || cat out >&2
grep -q '2 sealed scores not re-scored' err && ok || fail "audit without the sealed set: $(cat err)"

# The epoch ends: the sealed records and salts are published; someone holding only the folder
# (no key, no sealed file) re-scores every sealed score of the epoch and checks the commitment.
run 2 wit-board reveal board --key board.key --sealed board-g/board.def.json
run 0 wit-board reveal board --key board.key --sealed sealed.keep
[ -f board/benchmark/sealed/epoch-0.json ] && jq -e '.revealed[0].epoch == 0 and (.sealed == null)' board/board.def.json >/dev/null &&
  ok || fail "the reveal is not in the definition"
grep -qF "$first_sealed" board/benchmark/sealed/epoch-0.json 2>/dev/null || grep -q "$(head -n 1 sealed.txt | od -An -tx1 | tr -d ' \n' | cut -c1-40)" board/benchmark/sealed/epoch-0.json &&
  ok || fail "the revealed file does not hold the sealed records"
mkdir outsider && cp -r board outsider/board
run 0 wit-board audit -j1 outsider/board --store board.store  # the folder, and the store anyone may serve
grep -q 'not re-scored' err && fail "the revealed epoch was not re-scored: $(cat err)" || ok
run 0 wit-board build -q outsider/board -o outsider/site
jq -e '.runs[] | select(.name == "P") | .status == "certified" and .sealed.epoch == 0' outsider/site/board.json >/dev/null && ok ||
  fail "the epoch's ranking is gone after the reveal"
# A revealed record edited (its salt): the folder no longer matches its signed definition.
cp -r board board-r
jq '.records[0].salt = "00'"$(printf '%062d' 0)"'"' board-r/benchmark/sealed/epoch-0.json >"$T/r.json" && mv "$T/r.json" board-r/benchmark/sealed/epoch-0.json
run 2 wit-board build -q board-r -o site-r
error_is wit-board 'sealed'
# Nothing is scored until the next epoch is sealed; a revealed or published record cannot be sealed again.
run 2 wit-board evaluate -q -j1 board/runs/N N.release.safetensors --model N/model.pt --key board.key
error_is wit-board 'is revealed: the board seals the next one'
run 2 wit-board seal board --key board.key --sealed next.keep --sealed-records sealed.txt
error_is wit-board 'is already published'
lines 13 30 >next.txt
run 0 wit-board seal board --key board.key --sealed next.keep --sealed-records next.txt
jq -e '.sealed.epoch == 1 and .sealed.n == 30' board/board.def.json >/dev/null && ok || fail "epoch 1 not sealed"
run 0 wit-board build -q board -o site2
jq -e '.runs[] | select(.name == "P") | .status == "certified" and .sealed.epoch == 0' site2/board.json >/dev/null && ok ||
  fail "epoch 0's ranking is gone after epoch 1 was sealed"

# Epoch 1: a run scored after the reveal is scored publicly on the benchmark and epoch 0's revealed
# records (board-eval.json names them); the runs of epoch 0 keep the public split they were scored on.
run 0 wit-board submit board Q.bundle
SEALED=next.keep board_run Q 0
run 0 wit-board evaluate -q -j1 board/runs/Q Q.release.safetensors --model Q/model.pt --key board.key --sealed next.keep
run 0 wit-board leaves -q board/runs/Q Q.wleaves --key board.key
jq -e '.public_revealed == [0] and .eval.n == 60 and .sealed.epoch == 1 and .sealed.gap.n_public == 60' \
  board/runs/Q/board-eval.json >/dev/null && ok || fail "Q is not scored on the enlarged public split: $(jq -c '[.public_revealed, .eval.n]' board/runs/Q/board-eval.json)"
jq -e '(has("public_revealed") | not) and .eval.n == 30' board/runs/P/board-eval.json >/dev/null && ok ||
  fail "P's public split changed"
# Epoch 1 revealed: someone holding only the folder re-scores both epochs, Q on the enlarged public split.
run 0 wit-board reveal board --key board.key --sealed next.keep
rm -rf outsider && mkdir outsider && cp -r board outsider/board
run 0 wit-board audit -j1 outsider/board --store board.store  # the folder, and the store anyone may serve
grep -q 'not re-scored' err && fail "a revealed epoch was not re-scored: $(cat err)" || ok
# An edit to the revealed records Q's public score rests on is caught by the audit (exit 2: the folder no longer matches its definition).
cp -r outsider/board outsider/edited
jq '.records[0].record_hex = "41"' outsider/edited/benchmark/sealed/epoch-0.json >"$T/r.json" && mv "$T/r.json" outsider/edited/benchmark/sealed/epoch-0.json
run 2 wit-board audit -j1 outsider/edited --store board.store
run 0 wit-board build -q outsider/board -o outsider/site2
jq -e '[.runs[] | select(.status == "certified") | [.name, .sealed.epoch, .eval.n]] == [["P", 0, 30], ["Q", 1, 60]]' \
  outsider/site2/board.json >/dev/null && ok || fail "epochs: $(jq -c '[.runs[] | [.name, .status, .sealed.epoch, .eval.n]]' outsider/site2/board.json)"
# Each epoch's ranking kept: the newest epoch's certified runs first, then epoch 0's.
[ "$(grep -o 'data-name="[A-Z]"' outsider/site2/index.html | head -n 2 | tr -d '\n')" = 'data-name="Q"data-name="P"' ] && ok ||
  fail "rank order: $(grep -o 'data-name="[A-Z]"' outsider/site2/index.html | tr '\n' ' ')"
finish
