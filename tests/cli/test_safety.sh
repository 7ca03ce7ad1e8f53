#!/bin/bash
# Nothing lost by mistake, for every tool through the rules they share
# (lib/core cli.cpp, io.cpp): no output over an input, no rename over a
# device or link, stale temporaries cleaned, negative numbers refused, unknown
# subcommands named, a non-bundle an error (2) and not a verdict.
. "$(dirname "$0")/lib.sh"

printf 'alpha\nbeta\ngamma\n' >train.txt
cp train.txt orig.txt

# An output that is one of the inputs is refused before anything is written.
run 2 wit-commit --reader lines -o train.txt train.txt && error_is wit-commit "output is one of the inputs: train.txt"
same_file train.txt orig.txt
run 2 wit-commit --reader lines --index train.txt -o c.json train.txt && error_is wit-commit "output is one of the inputs"
same_file train.txt orig.txt
absent c.json
ln train.txt hard.txt
run 2 wit-commit --reader lines -o hard.txt train.txt && error_is wit-commit "output is one of the inputs"
run 2 wit-commit --reader lines -o same.json --index same.json train.txt && error_is wit-commit "file of its own|two outputs"
run 0 wit-commit -q --reader lines -o c.json train.txt
run 2 wit-query include --commit c.json --index c.widx --text alpha -o c.widx && error_is wit-query "output is one of the inputs: c.widx"

# A killed writer's temporary is removed by the next run; a young one is left.
printf 'half' >c.widx.tmp.Ab12Cd
touch -d '5 minutes ago' c.widx.tmp.Ab12Cd
printf 'half' >c.widx.tmp.Young1
run 0 wit-commit -q --reader lines -o c.json train.txt
[ ! -e c.widx.tmp.Ab12Cd ] && ok || fail "stale temporary left: c.widx.tmp.Ab12Cd"
[ -e c.widx.tmp.Young1 ] && ok || fail "a young temporary was removed"
rm -f c.widx.tmp.Young1

# Outputs that are not regular files are never replaced by rename.
run 2 wit-log keygen --force -o /dev/full && error_is wit-log "cannot write: no space left on device: /dev/full"
[ -c /dev/full ] && ok || fail "/dev/full is no longer a device"
run 0 wit-log -q keygen -o real.key
ln -s real.key link.key
run 0 wit-log -q keygen --force -o link.key
[ -L link.key ] && ok || fail "the link was replaced"
run 2 wit-query exclude --commit c.json --index c.widx --text zzz -o /dev/full && error_is wit-query "no space left"
mkdir adir
run 2 wit-query exclude --commit c.json --index c.widx --text zzz -o adir && error_is wit-query "output is a directory: adir"

# Numbers: no option takes a negative value; -1 is not 2^64 - 1.
"$MKRUN" run >/dev/null 2>&1 || fail "make_test_run failed"
run 2 wit-log prove run -1 && error_is wit-log "STEP must not be negative: -1"
run 2 wit-challenge --run run --nonce "$(printf '%064d' 7)" -k -3 && error_is wit-challenge "must not be negative"

# A run stopped mid-training is invalid until resumed, and verify says so.
"$MKRUN" --variant no-seed stopped >/dev/null 2>&1 || fail "make_test_run --variant no-seed failed"
head -n 1 stopped/run.heads >h && mv h stopped/run.heads
run 1 wit-log verify stopped
grep -q "hint: the run is not finished.*rerun the same wit-train command to resume" err && ok || fail "no resume hint: $(cat err)"

# Issue 28. No output over a file read through a run directory, and none
# inside a run directory at all: the signed heads, the log and the manifest
# stay byte for byte, and the run still verifies.
cp -r run keep
run 0 wit-log verify --no-init run
for f in run.heads run.wlog run.json; do
  run 2 wit-log prove run 3 -o "run/$f" && error_is wit-log "output is inside the run directory .*run: run/$f"
  same_file "run/$f" "keep/$f"
done
run 2 wit-log consistency run 1 3 -o run/run.wlog && error_is wit-log "output is inside the run directory"
same_file run/run.wlog keep/run.wlog
run 2 wit-log prove run 3 -o run/new.json && error_is wit-log "output is inside the run directory"
absent run/new.json
run 2 wit-log prove run 3 -o run/ckpt/new.json && error_is wit-log "output is inside the run directory"
absent run/ckpt/new.json
ln -s run/run.heads heads-link
run 2 wit-log prove run 3 -o heads-link && error_is wit-log "output is inside the run directory"
same_file run/run.heads keep/run.heads
# A run wit-train holds (train.lock) is a run directory too, even without its log.
mkdir -p locked && : >locked/train.lock
run 2 wit-challenge --run run --nonce "$(printf '%064d' 7)" -k 2 -o locked/c.json && error_is wit-challenge "inside the run directory"
absent locked/c.json
run 0 wit-log verify --no-init run
# Beside the run is fine, and 'wit-log sign' still writes in it.
run 0 wit-log prove run 3 -o proof.json
[ -s proof.json ] && ok || fail "no proof beside the run"

# Issue 28: a corrupt cached index level (a level-8 node changed, both XXH3
# checksums fixed) is caught by the audit: no "matches", no proof, exit 2.
for i in $(seq 1 600); do echo "record number $i"; done >big.txt
run 0 wit-commit -q -o big.commit.json big.txt
run 0 wit-commit show big.commit.json --index big.widx
"$FIXTURES/flip_index_node" big.widx 0 || fail "flip_index_node failed"
run 2 wit-commit show big.commit.json --index big.widx && error_is wit-commit "cached tree node 0 is not the hash of its leaves"
run 2 wit-query include --commit big.commit.json --index big.widx --text "record number 300" -o p.json &&
  error_is wit-query "cached tree node 0"
absent p.json

# Issue 28: two wit-commit -o to one output at once leave one run's pair:
# the index always belongs to the commitment (10 rounds; before the lock,
# about one in ten mixed them).
for i in $(seq 1 400); do echo "first $i"; done >one.txt
for i in $(seq 1 300); do echo "second $i"; done >two.txt
mixed=0
for round in $(seq 1 10); do
  wit-commit -q -o pair.commit.json one.txt & a=$!
  wit-commit -q -o pair.commit.json two.txt & b=$!
  wait $a; wait $b
  wit-commit show pair.commit.json --index pair.widx >/dev/null 2>&1 || mixed=$((mixed + 1))
done
[ "$mixed" = 0 ] && ok || fail "$mixed of 10 rounds left a commitment with another run's index"
absent pair.commit.json.tmp pair.widx.tmp

# Issue 28: options take one value each; a positional argument after one stays positional.
printf 'zeta\n' >ev.txt
run 0 wit-query contamination -q --commit c.json --index c.widx -o cert.json ev.txt
run 0 wit-query verify --commit c.json --eval ev.txt cert.json
grep -q "^valid: " out && ok || fail "verify with --eval: $(cat out)"
run 0 wit-query verify --commit c.json --eval ev.txt --eval ev.txt cert.json
# -q before the subcommand, as the man page places it.
run 0 wit-query -q include --commit c.json --index c.widx --text alpha -o inc.json
[ -s err ] && fail "-q before the subcommand still printed: $(cat err)" || ok

# Issue 28: failed writes to stdout are errors (2), never a silent success.
if [ -w /dev/full ]; then
  for cmd in "wit-log show run" "wit-log head run" "wit-commit show c.json" "wit-challenge --run run --nonce $(printf '%064d' 7) -k 2"; do
    # shellcheck disable=SC2086
    $cmd >/dev/full 2>err
    rc=$?
    [ "$rc" = 2 ] && grep -qE "error: cannot write: (no space left on device|write error): stdout" err && ok ||
      fail "$cmd >/dev/full: exit $rc, $(cat err)"
  done
fi

# Issue 28: out-of-range integers are errors, never saturated; thread counts have a maximum.
cp run/run.heads heads.before
run 2 wit-log sign run --key run/trainer.key --time 18446744073709551616 && error_is wit-log "--time is out of range \(at most 18446744073709551615\): 18446744073709551616"
same_file run/run.heads heads.before
run 2 wit-challenge --run run --nonce "$(printf '%064d' 7)" -k 18446744073709551616 && error_is wit-challenge "-k is out of range"
run 2 wit-challenge --run run --nonce "$(printf '%064d' 7)" -k 9223372036854775808 && error_is wit-challenge "-k is out of range \(at most 9223372036854775807\)"
run 2 wit-commit -q -j 10000 -o j.json train.txt && error_is wit-commit "--threads 10000 is more than 1024 threads"
absent j.json
run 0 wit-commit -q -j 1024 -o j.json train.txt

# Issue 28: a finished run (its seed revealed) that fails verification is
# not called unfinished.
"$MKRUN" --variant bad-ckpt finished >/dev/null 2>&1 || fail "make_test_run --variant bad-ckpt failed"
run 1 wit-log verify finished
grep -q "not finished" err && fail "a finished run called unfinished: $(cat err)" || ok

# Issue 28: SIGTERM is handled like Ctrl-C: exit 143, one line, no temporaries.
rm -f fifo && mkfifo fifo
wit-commit -o sig.commit.json fifo 2>sig.err &
pid=$!
for _ in $(seq 1 500); do holds_temporary "$pid" sig.widx && break; sleep 0.01; done
holds_temporary "$pid" sig.widx && ok || fail "wit-commit made no temporary while waiting for its input"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 143 ] && ok || fail "SIGTERM exit $rc (want 143)"
grep -q "^wit-commit: terminated; nothing was written$" sig.err && ok || fail "SIGTERM message: $(cat sig.err)"
absent sig.commit.json sig.widx

# Issue 33: no numeric option of any tool takes NaN or an infinity.
finite_options wit-commit wit-query wit-log wit-challenge wit-board
run 2 wit-challenge --run finished --nonce "$(printf 'ab%.0s' $(seq 32))" --confidence nan --fraction 0.1 &&
  error_is wit-challenge "^wit-challenge: error: --confidence must be a finite number: nan$"

# Subcommands: the unknown one is named, with the valid ones.
run 2 wit-log shw run && error_is wit-log "unknown subcommand 'shw' \(valid: keygen, show,"
run 2 wit-board && error_is wit-board "missing subcommand \(one of: init, reveal, seal, submit, leaves, prune, pack, build, challenge, add, evaluate, audit, repair, show\)"

# std::filesystem's errors in the house style.
run 2 wit-board build --fraction 0.5 -o train.txt/site run && error_is wit-board "[Nn]ot a directory"
grep -q "filesystem error" err && fail "raw library text: $(cat err)" || ok

# wit-board show: a file that is no bundle is an error (2), not a rejection (1).
run 2 wit-board show train.txt && error_is wit-board "not a wit bundle"
run 2 wit-board show adir && error_is wit-board "not a run bundle \(no bundle.json\)"

finish
