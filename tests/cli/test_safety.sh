#!/bin/bash
# Nothing lost by mistake, for every tool through the rules they share
# (lib/core cli.cpp, io.cpp): no output over an input, no rename over a
# device or link, stale temporaries cleaned, negative numbers refused, unknown
# subcommands named, a non-bundle an error (2) and not a verdict.
. "$(dirname "$0")/lib.sh"
MKRUN="${WIT_FIXTURES:-$WIT_BIN/../tests/fixtures}/make_test_run"

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

# Subcommands: the unknown one is named, with the valid ones.
run 2 wit-log shw run && error_is wit-log "unknown subcommand 'shw' \(valid: keygen, show,"
run 2 wit-board && error_is wit-board "missing subcommand \(one of: pack, build, challenge, add, repair, show\)"

# std::filesystem's errors in the house style.
run 2 wit-board build --fraction 0.5 -o train.txt/site run && error_is wit-board "[Nn]ot a directory"
grep -q "filesystem error" err && fail "raw library text: $(cat err)" || ok

# wit-board show: a file that is no bundle is an error (2), not a rejection (1).
run 2 wit-board show train.txt && error_is wit-board "not a wit bundle"
run 2 wit-board show adir && error_is wit-board "not a run bundle \(no bundle.json\)"

finish
