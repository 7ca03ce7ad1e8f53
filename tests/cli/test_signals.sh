#!/bin/bash
# A signal never leaves a temporary (issue 33). wit-commit writes a pair (the
# commitment and its index, the index on a thread of its own while the tree
# is hashed); SIGINT and SIGTERM come at exact points of the output code
# (WIT_CRASH_AT=NAME:N:SIG), from outside at moments spread over whole runs,
# and while it waits for its input, with unnamed (O_TMPFILE) temporaries and
# with named ones (WIT_NAMED_TEMPORARIES=1, what a file system without
# O_TMPFILE gets). After every case: exit 130 or 143 (or 0 when the run won),
# one line on stderr that says what was written, no temporary left, and the
# pair in place whole or not at all. SIGKILL leaves nothing with unnamed
# temporaries; a named one left by it is removed by the next run.
#
# Bounded for CI (SIGNAL_ROUNDS=50 rounds from outside, about half a
# minute); SIGNAL_ROUNDS=1000 is the long form.
. "$(dirname "$0")/lib.sh"
ROUNDS=${SIGNAL_ROUNDS:-50}

# The first moments are covered too: from the tool's first instruction (the
# static first stage, tools/launch) a signal is held until it is caught.
# Before that instruction the process is still the shell's child (execed).

# Enough records that the index writer's thread works for a while (about a
# tenth of a second here), so kills from outside land in every phase.
seq 1 200000 | sed 's/^/record number /' >data.txt
printf '{"text": "a"}\n{"text": 5}\n' >bad.jsonl
rm -f fifo && mkfifo fifo

# judge CASE RC WANT: the state one signalled wit-commit (-o s.commit.json,
# stderr in s.err) left, for a run that wanted exit WANT (130 or 143).
judge() {
  local name=$1 rc=$2 want=$3 word
  word=$([ "$want" = 130 ] && echo interrupted || echo terminated)
  compgen -G "s.*.tmp.*" >/dev/null && fail "$name: temporary left: $(echo s.*.tmp.*)"
  local pair=none
  if [ -e s.commit.json ] && [ -e s.widx ]; then pair=both
  elif [ -e s.commit.json ] || [ -e s.widx ]; then pair=half
  fi
  if [ "$pair" = half ]; then
    fail "$name: half a pair left: $(ls s.* | tr '\n' ' ')"
  elif [ "$rc" = 0 ]; then
    [ "$pair" = both ] && ok || fail "$name: exit 0 without its outputs"
  elif [ "$rc" != "$want" ]; then
    fail "$name: exit $rc (want $want or 0): $(head -c 300 s.err)"
  elif [ "$(grep -c . s.err)" != 1 ]; then
    fail "$name: not one line: $(head -c 300 s.err)"
  elif [ "$pair" = none ]; then
    grep -qx "wit-commit: $word; nothing was written" s.err && ok || fail "$name: nothing written, but: $(cat s.err)"
  else
    grep -qx "wit-commit: $word; it had already written s.widx and s.commit.json" s.err && ok ||
      fail "$name: the pair was written, but: $(cat s.err)"
  fi
  rm -f s.* s.*.tmp.*
}

# Job control, and env --default-signal where this script itself was started
# with SIGINT ignored: the tool catches SIGINT as a user's would.
set -m
for mode in unnamed named; do
  named=$([ $mode = named ] && echo 1 || echo)
  # 1. Exact points: the temporaries' creation, the index writer's writes (on
  # its own thread), the pair's publication (link, rename) and the discarding
  # of a failed output.
  for point in atomic-create:1 atomic-create:2 atomic-write:1 atomic-write:2 atomic-write:3 \
    atomic-publish:1 atomic-publish:2 atomic-renamed:1 atomic-renamed:2; do
    for sig in INT TERM; do
      want=$([ $sig = INT ] && echo 130 || echo 143)
      WIT_NAMED_TEMPORARIES=$named WIT_CRASH_AT=$point:$sig env --default-signal=INT,TERM wit-commit -q -o s.commit.json data.txt 2>s.err
      judge "$mode $point:$sig" $? $want
    done
  done
  for sig in INT TERM; do
    want=$([ $sig = INT ] && echo 130 || echo 143)
    WIT_NAMED_TEMPORARIES=$named WIT_CRASH_AT=atomic-discard:1:$sig env --default-signal=INT,TERM wit-commit -q -o s.commit.json bad.jsonl 2>s.err
    judge "$mode atomic-discard:1:$sig (a failed run)" $? $want
  done

  # 2. SIGKILL: nothing with unnamed temporaries; a named one, left between
  # creation and rename, goes with the next run for the same output.
  for point in atomic-create:1 atomic-write:2 atomic-publish:1; do
    WIT_NAMED_TEMPORARIES=$named WIT_CRASH_AT=$point:KILL wit-commit -q -o s.commit.json data.txt 2>s.err
    rc=$?
    [ $rc = 137 ] && ok || fail "$mode $point:KILL: exit $rc (want 137)"
    if [ $mode = unnamed ] && [ $point != atomic-publish:1 ]; then
      compgen -G "s.*.tmp.*" >/dev/null && fail "$mode $point:KILL left $(echo s.*.tmp.*)" || ok
    fi
    [ -e s.commit.json ] && fail "$mode $point:KILL: a commitment was published" || ok
    # A young temporary of a writer that is gone: removed at once by the next run.
    run 0 env WIT_NAMED_TEMPORARIES=$named wit-commit -q -o s.commit.json data.txt
    compgen -G "s.*.tmp.*" >/dev/null && fail "$mode $point:KILL: the next run left $(echo s.*.tmp.*)" || ok
    rm -f s.*
  done

  # 3. While it waits for its input (a fifo nobody writes): the case of the issue.
  for round in $(seq 1 $((ROUNDS / 5))); do
    sig=$([ $((round % 2)) = 0 ] && echo INT || echo TERM)
    want=$([ $sig = INT ] && echo 130 || echo 143)
    WIT_NAMED_TEMPORARIES=$named env --default-signal=INT,TERM wit-commit -q -o s.commit.json fifo 2>s.err &
    pid=$!
    for _ in $(seq 1 200); do holds_temporary $pid s.widx && break; sleep 0.01; done
    kill -$sig $pid
    reap $pid
    judge "$mode fifo round $round $sig" $? $want
  done

  # 4. From outside, at moments spread over whole runs: start-up, hashing,
  # the index writer's thread, publication, exit.
  for round in $(seq 1 "$ROUNDS"); do
    sig=$([ $((round % 2)) = 0 ] && echo INT || echo TERM)
    want=$([ $sig = INT ] && echo 130 || echo 143)
    WIT_NAMED_TEMPORARIES=$named env --default-signal=INT,TERM wit-commit -q -o s.commit.json data.txt 2>s.err &
    pid=$!
    execed $pid wit-commit
    sleep "0.$(printf '%03d' $((RANDOM % 250)))"
    kill -$sig $pid 2>/dev/null
    reap $pid
    judge "$mode round $round $sig" $? $want
  done
done
set +m
finish
