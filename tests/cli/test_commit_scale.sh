#!/usr/bin/env bash
# wit-commit within a memory budget (--memory: sorted runs spilled beside the
# index, then k-way merged into the tree and the index) and shards committed
# apart and merged (wit-commit merge): every output byte equals one in-memory
# commit of the same files in the same order, with records repeated within
# and across files, runs and shards; a full disk, a kill and bad shards leave
# nothing behind (docs/commitment.md, "Bounded memory" and "Shards").
source "$(dirname "$0")/lib.sh"

# gen SEED N M: N JSONL lines whose records ("text") are drawn from M values,
# so they repeat within a file and across files; "i" makes every line differ.
gen() {
  awk -v seed="$1" -v n="$2" -v m="$3" 'BEGIN { srand(seed); for (i = 0; i < n; i++)
    printf "{\"text\": \"record %d\", \"i\": %d}\n", int(rand() * m), i }'
}
for k in 1 2 3 4 5 6; do gen "$k" 3000 5000 >"f$k.jsonl"; done
# the same records again, in another order: all repeats across files
tac f1.jsonl >f7.jsonl

# reference: the tree built in memory (no budget)
run 0 wit-commit --memory 0 -q -o ref2.commit.json f1.jsonl f2.jsonl
run 0 wit-commit --memory 0 -q -o ref7.commit.json f1.jsonl f2.jsonl f3.jsonl f4.jsonl f5.jsonl f6.jsonl f7.jsonl
[ "$(json_get ref7.commit.json n)" -lt "$(json_get ref7.commit.json records)" ] && ok || fail "no repeats in the corpus"

# spilled: RUNS MEMORY -jJ FILES...: the summary names RUNS runs (or at least
# 3 for "many"), and both outputs equal the reference's bytes.
spilled() {
  local runs=$1 mem=$2 j=$3 ref=$4
  shift 4
  run 0 wit-commit --memory "$mem" "$j" -o s.commit.json "$@" || return
  local got
  got=$(sed -n 's/.*sorted and merged \([0-9]*\) spilled runs\{0,1\} .*/\1/p' err)
  case "$runs" in
    many) [ -n "$got" ] && [ "$got" -ge 3 ] && ok || fail "--memory $mem $j: $got runs, want many: $(cat err)" ;;
    *) [ "$got" = "$runs" ] && ok || fail "--memory $mem $j: '$got' runs, want $runs: $(cat err)" ;;
  esac
  grep -q 'spilling sorted runs to \., about .* of temporary disk' err && ok || fail "the disk the runs need is not stated: $(cat err)"
  same_file "$ref.commit.json" s.commit.json
  same_file "$ref.widx" s.widx
}
# -j1, two files of 3000 records (one part each) at 80 bytes a record: 10,000
# records of budget spill the finished files once both are read (1 run);
# 6,000 spill each file's part as it fills (2 runs); 8 KiB spills at every step.
spilled 1 800000 -j1 ref2 f1.jsonl f2.jsonl
spilled 2 480000 -j1 ref2 f1.jsonl f2.jsonl
spilled many 8K -j1 ref7 f1.jsonl f2.jsonl f3.jsonl f4.jsonl f5.jsonl f6.jsonl f7.jsonl
spilled many 8K -j2 ref7 f1.jsonl f2.jsonl f3.jsonl f4.jsonl f5.jsonl f6.jsonl f7.jsonl
spilled many 100K -j2 ref7 f1.jsonl f2.jsonl f3.jsonl f4.jsonl f5.jsonl f6.jsonl f7.jsonl
# the lines reader (every line a record) spills alike
run 0 wit-commit --memory 0 --reader lines -q -o lref.commit.json f1.jsonl f7.jsonl f1.jsonl
spilled many 8K -j2 lref --reader lines f1.jsonl f7.jsonl f1.jsonl
# the default budget keeps a small corpus in memory, and says nothing of runs
run 0 wit-commit -o d.commit.json f1.jsonl f2.jsonl
! grep -q 'spill' err && ok || fail "a small commit spilled: $(cat err)"
same_file ref2.widx d.widx
# a spilled commit's index (here the lines reader's) proves and audits like any
run 0 wit-commit show s.commit.json --index s.widx
run 0 wit-query include --commit s.commit.json --index s.widx --text "$(sed -n 17p f7.jsonl)" -o inc.json
run 0 wit-query verify --commit s.commit.json inc.json
# token files whose windows pass the budget are read in order, as a stream
# is, and spill alike (windows repeat within and across the files); under
# the budget they keep the pread path and say nothing of runs
head -c 300000 f7.jsonl >t1.bin
{ head -c 96000 f7.jsonl; head -c 96000 f6.jsonl; } >t2.bin
for tb in 2 4; do
  run 0 wit-commit --memory 0 --reader tokens --seq-len 16 --token-bytes $tb -q -o tref.commit.json t1.bin t2.bin
  spilled many 64K -j2 tref --reader tokens --seq-len 16 --token-bytes $tb t1.bin t2.bin
  run 0 wit-commit --reader tokens --seq-len 16 --token-bytes $tb -o td.commit.json t1.bin t2.bin
  ! grep -q 'spill' err && ok || fail "a small token commit spilled: $(cat err)"
  same_file tref.widx td.widx
done
# a stream (read once, in order: one segment of the spill) spills alike, beside
# files, and its tree is the one of the same bytes from a file
cat f1.jsonl f2.jsonl f3.jsonl >cat3.jsonl
run 0 wit-commit --memory 0 -q -o fref.commit.json cat3.jsonl f7.jsonl
mkfifo pipe.jsonl
cat cat3.jsonl >pipe.jsonl &
run 0 wit-commit --memory 0 -q -o pref.commit.json pipe.jsonl f7.jsonl
wait
[ "$(json_get pref.commit.json root)" = "$(json_get fref.commit.json root)" ] && ok || fail "a fifo's tree is not its file's"
cat cat3.jsonl >pipe.jsonl &
spilled many 8K -j2 pref pipe.jsonl f7.jsonl
wait
cat cat3.jsonl >pipe.jsonl &
spilled many 8K -j2 pref pipe.jsonl f7.jsonl
wait

# bad sizes: one-line error, exit 2
for v in 12Q M -5 1.5G; do
  run 2 wit-commit -q --memory "$v" -o bad.commit.json f1.jsonl &&
    error_is wit-commit "--memory (is not a size|must not be negative)"
done
absent bad.commit.json bad.widx

# a full disk: the disk the runs need is checked before the first run is
# written; a disk that fills later is a one-line error; nothing is left
mkdir small
if mount -t tmpfs -o size=256k tmpfs small 2>/dev/null; then
  run 2 wit-commit -q --memory 8K -o small/c.commit.json f1.jsonl f2.jsonl f3.jsonl
  error_is wit-commit "not enough free disk for the sorted runs .*needs about .* free\): small"
  [ -z "$(ls -A small)" ] && ok || fail "a full disk left files: $(ls -A small)"
  # the estimate comes from the records a byte read so far: a first file of
  # long records makes it low, the short records after it fill the disk
  awk 'BEGIN { for (i = 0; i < 200; i++) { s = ""; for (k = 0; k < 500; k++) s = s "long text "; printf "{\"text\": \"%d %s\"}\n", i, s } }' >long.jsonl
  umount small
  mount -t tmpfs -o size=300k tmpfs small
  run 2 wit-commit -q --memory 8K -o small/c.commit.json long.jsonl f1.jsonl f2.jsonl f3.jsonl f4.jsonl f5.jsonl f6.jsonl f7.jsonl
  error_is wit-commit "cannot write a scratch file: no space left on device: small"
  [ -z "$(ls -A small)" ] && ok || fail "a full disk left files: $(ls -A small)"
  umount small
else
  echo "skip: cannot mount a small tmpfs here (the full-disk checks need root)"
fi

# killed while spilling or merging (SIGKILL, SIGTERM): the runs are unnamed
# files, so nothing is left beside the outputs
for point in commit-spill:3:KILL commit-spill:2:TERM commit-merge:1:KILL commit-merge:1:INT; do
  mkdir k && cp f1.jsonl f2.jsonl f3.jsonl k/
  # (a subshell: the shell's own "Killed" line goes nowhere)
  (WIT_CRASH_AT=$point env --default-signal=INT,TERM wit-commit -q --memory 8K -o k/c.commit.json \
    k/f1.jsonl k/f2.jsonl k/f3.jsonl 2>k.err) 2>/dev/null
  rc=$?
  [ "$rc" -ne 0 ] && ok || fail "$point: exit 0"
  [ "$(ls k)" = "$(printf 'f1.jsonl\nf2.jsonl\nf3.jsonl')" ] && ok || fail "$point left: $(ls k)"
  rm -rf k
done

# --- shards committed apart, merged in the order given
for k in 1 2 3 7; do run 0 wit-commit -q -o "s$k.commit.json" "f$k.jsonl"; done
run 0 wit-commit -q --memory 0 -o one.commit.json f1.jsonl f2.jsonl f3.jsonl f7.jsonl
run 0 wit-commit merge s1.commit.json s2.commit.json s3.commit.json s7.commit.json -o m.commit.json
grep -q '^wit-commit: merged 4 shards: 12000 records' err && ok || fail "merge summary: $(cat err)"
same_file one.commit.json m.commit.json
same_file one.widx m.widx
# another order is another commitment (sources, first occurrences), the same tree
run 0 wit-commit -q --memory 0 -o rev.commit.json f7.jsonl f3.jsonl f2.jsonl f1.jsonl
run 0 wit-commit merge -q s7.commit.json s3.commit.json s2.commit.json s1.commit.json -o mrev.commit.json
same_file rev.commit.json mrev.commit.json
same_file rev.widx mrev.widx
[ "$(json_get m.commit.json root)" = "$(json_get mrev.commit.json root)" ] && ok || fail "the order changed the tree"
cmp -s m.widx mrev.widx && fail "first occurrences ignore the shards' order" || ok
# shards of several files, one of them spilled, merged again with a merge
run 0 wit-commit -q --memory 8K -o a.commit.json f1.jsonl f2.jsonl
run 0 wit-commit merge -q a.commit.json s3.commit.json -o a3.commit.json
run 0 wit-commit merge -q a3.commit.json s7.commit.json -o m2.commit.json --index m2.widx
same_file one.commit.json m2.commit.json
same_file one.widx m2.widx
# without an index, and to standard output: the same commitment
run 0 wit-commit merge -q --no-index s1.commit.json s2.commit.json s3.commit.json s7.commit.json
same_file one.commit.json out
# an index that cannot go back (a fifo) is refused: it is written in one pass, then its header
mkfifo fifo.widx
timeout 20 cat fifo.widx >fifo.got &
run 2 timeout 20 wit-commit merge -q s1.commit.json s2.commit.json -o f.commit.json --index fifo.widx
error_is wit-commit "the index of a spilled or merged commit must be a regular file"
wait
[ ! -s fifo.got ] && ok || fail "bytes written to the fifo"
absent f.commit.json
# one shard merged alone is itself
run 0 wit-commit merge -q s1.commit.json -o s1again.commit.json
same_file s1.commit.json s1again.commit.json
same_file s1.widx s1again.widx
run 0 wit-commit show m.commit.json --index m.widx

# bad shards: one-line error, exit 2, no output left
run 0 wit-commit -q --reader lines -o lines.commit.json f2.jsonl
run 2 wit-commit merge s1.commit.json lines.commit.json -o bad.commit.json
error_is wit-commit "shard was read with another reader .*: lines.commit.json"
cp s2.commit.json other.commit.json && cp s3.widx other.widx
run 2 wit-commit merge s1.commit.json other.commit.json -o bad.commit.json
error_is wit-commit "index does not belong to commitment other.commit.json \(root differs\): other.widx"
cp s2.commit.json gone.commit.json
run 2 wit-commit merge s1.commit.json gone.commit.json -o bad.commit.json
error_is wit-commit "cannot open: no such file or directory: gone.widx"
# a first occurrence changed (its checksum is then wrong): the merge reads it
cp s2.commit.json flip.commit.json && cp s2.widx flip.widx
n2=$(json_get s2.commit.json n)
printf '\377' | dd of=flip.widx bs=1 seek=$((128 + 32 * n2 + 8 * 5 + 3)) conv=notrunc status=none
run 2 wit-commit merge s1.commit.json flip.commit.json -o bad.commit.json
error_is wit-commit "index is corrupt \((first occurrence of leaf 5 is past the last record|body checksum mismatch)\): flip.widx"
# leaves swapped: not sorted
cp s2.commit.json swap.commit.json && cp s2.widx swap.widx
dd if=s2.widx of=swap.widx bs=1 skip=$((128 + 32)) seek=128 count=32 conv=notrunc status=none
run 2 wit-commit merge s1.commit.json swap.commit.json -o bad.commit.json
error_is wit-commit "index is (not the commitment's sorted tree|corrupt \(body checksum mismatch\))"
absent bad.commit.json bad.widx
run 2 wit-commit merge s1.commit.json s2.commit.json -o s1.commit.json
error_is wit-commit "output is one of the inputs"
run 2 wit-commit merge s1.commit.json s2.commit.json -o x.commit.json --index s2.widx
error_is wit-commit "output is one of the inputs"
run 2 wit-commit merge - -o x.commit.json
error_is wit-commit "not stdin"

finish
