#!/usr/bin/env bash
# Fault sweep (issue 28): every tool against damaged inputs, outputs aimed at
# its own inputs or into a run directory, out-of-range options, signals
# mid-run and concurrent writers. Each case runs one command and is judged
# on five counts:
#   right exit      the exit status is one the tool documents for the case
#                   (2 with a one-line "wit-NAME: error: ..." and at most a
#                   hint; 1 with a verdict for a check; 0 where the damage
#                   is harmless to that command), or 130/143 for a signal;
#   crash           killed by a signal it was not sent, a timeout, or an
#                   abort/sanitizer/"terminate called" message;
#   partial output  a failed case left its output or a temporary of it;
#   input changed   a file the case reads differs afterwards;
#   data lost       the reference run no longer verifies, or one of its
#                   files changed.
# The totals are printed last; the test passes when every case has the
# right exit and the last four counts are zero.
#
# Bounded for CI (a few minutes on two cores); FAULT_SWEEP_FULL=1 tries
# every mutation at more offsets.
source "$(dirname "$0")/lib.sh"
FULL=${FAULT_SWEEP_FULL:-0}
TORCH=0
[ -x "$WIT_BIN/wit-train" ] && TORCH=1

tried=0 right=0 crashes=0 partial=0 changed=0 lost=0
declare -a bad_cases=()

sum_of() { # sum_of PATH...: one checksum over the files' names, sizes and bytes (train.lock aside)
  [ $# = 0 ] && { echo none; return; }
  { find "$@" -type f ! -name train.lock -printf '%p %s\n' | sort
    find "$@" -type f ! -name train.lock -print0 | sort -z | xargs -0 -r cat; } 2>&1 | cksum
}

# judge NAME "EXITS" "INPUTS" "OUTPUTS" CMD...: runs CMD (60 s at most) and counts.
judge() {
  local name=$1 exits=$2 inputs=$3 outputs=$4
  shift 4
  tried=$((tried + 1))
  local before ref_before
  # shellcheck disable=SC2086
  before=$(sum_of $inputs)
  ref_before=$(sum_of ref)
  timeout -s KILL 60 "$@" >case.out 2>case.err </dev/null
  local rc=$? why=""
  if [ "$rc" -ge 124 ] && [ "$rc" != 130 ] && [ "$rc" != 143 ]; then
    crashes=$((crashes + 1)); why="crash (exit $rc)"
  elif grep -qE "terminate called|Assertion|AddressSanitizer|runtime error:|Segmentation" case.err; then
    crashes=$((crashes + 1)); why="crash: $(head -c 200 case.err)"
  fi
  local okexit=0 e
  # Dropping the last byte of a text file that ends in a line feed changes nothing a reader sees.
  case "$name" in *"[less1]"*) exits="0 $exits" ;; esac
  for e in $exits; do [ "$rc" = "$e" ] && okexit=1; done
  if [ "$okexit" = 1 ] && [ "$rc" = 2 ]; then
    local n
    n=$(grep -c . case.err)
    if ! head -n 1 case.err | grep -qE '^wit-[a-z]+: error: ' || [ "$n" -gt 2 ] ||
      { [ "$n" = 2 ] && ! sed -n 2p case.err | grep -q '^hint: '; }; then okexit=0; fi
  fi
  if [ "$okexit" = 1 ]; then right=$((right + 1)); else why="$why exit $rc (want $exits): $(head -n 2 case.err | tr '\n' ' ' | head -c 240)"; fi
  if [ "$rc" != 0 ]; then
    local o
    for o in $outputs; do
      if [ -e "$o" ] || compgen -G "$o.tmp.*" >/dev/null; then partial=$((partial + 1)); why="$why; partial output $o"; break; fi
    done
  fi
  # shellcheck disable=SC2086
  [ "$(sum_of $inputs)" = "$before" ] || { changed=$((changed + 1)); why="$why; input changed"; }
  [ "$(sum_of ref)" = "$ref_before" ] || { lost=$((lost + 1)); why="$why; reference run changed"; }
  local o
  for o in $outputs; do rm -rf "$o" "$o".tmp.*; done
  [ -z "$why" ] || bad_cases+=("$name: $why")
}

# mutants SRC DIR: damaged copies of SRC in DIR, one per kind (names say how).
mutants() {
  local src=$1 dir=$2
  rm -rf "$dir" && mkdir -p "$dir"
  python3 - "$src" "$dir" "$FULL" <<'PY'
import os, sys
src, d, full = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
b = open(src, "rb").read()
n = len(b)
out = {"empty": b"", "half": b[: n // 2], "less1": b[: max(0, n - 1)], "twice": b + b,
       "nested": b"[" + b + b"]", "nonutf8": b[: n // 2] + b"\xff\xfe\xc0" + b[n // 2:],
       "huge_number": b.replace(b"1", b"18446744073709551616", 1)}
if full:
    out["zeros"] = bytes(n)
offs = sorted({n // 3, n // 2} | ({0, n // 7, n // 5, 2 * n // 3, 5 * n // 6, max(0, n - 2)} if full else set()))
for o in offs:
    if o < n:
        x = bytearray(b); x[o] ^= 0x01; out["flip%d" % o] = bytes(x)
for k, v in out.items():
    if v != b:  # a "mutant" equal to its source (no '1' to replace) is no fault
        open(os.path.join(d, k), "wb").write(v)
PY
}

# ---- fixtures ---------------------------------------------------------------
printf 'alpha\nbeta\ngamma\ndelta\n' >train.txt
for i in $(seq 1 300); do echo "line $i"; done >big.txt
wit-commit -q -o c.commit.json train.txt
wit-commit -q -o big.commit.json big.txt
"$MKRUN" ref >/dev/null 2>&1 || { echo "make_test_run failed"; exit 2; }
"$MKRUN" run >/dev/null 2>&1
wit-query include -q --commit c.commit.json --index c.widx --text alpha -o inc.json
wit-query exclude -q --commit c.commit.json --index c.widx --text zzz -o exc.json
wit-log prove -q run 3 -o lp.json
NONCE=$(printf '%064d' 9)
wit-challenge -q --run run --nonce "$NONCE" -k 2 -o chal.json
wit-log head run >head.json
printf 'zeta\n' >ev.txt
wit-query contamination -q --commit c.commit.json --index c.widx -o cert.json ev.txt

# ---- 1. damaged inputs, every format --------------------------------------
# file | consumers: "EXITS|COMMAND with @ for the damaged copy|outputs"
sweep_file() {
  local src=$1
  shift
  mutants "$src" mut
  local m spec
  for m in mut/*; do
    for spec in "$@"; do
      local exits=${spec%%|*} rest=${spec#*|}
      local cmd=${rest%%|*} outs=${rest#*|}
      [ "$outs" = "$rest" ] && outs=""
      # shellcheck disable=SC2086
      judge "$src[$(basename "$m")]: $cmd" "$exits" "$m c.commit.json c.widx" "$outs" ${cmd//@/$m}
    done
  done
}
sweep_file c.commit.json "0 2|wit-commit show @" "2|wit-query include --commit @ --index c.widx --text alpha -o o.json|o.json"
sweep_file c.widx "2|wit-commit show c.commit.json --index @" "2|wit-query exclude --commit c.commit.json --index @ --text zzz -o o.json|o.json"
sweep_file inc.json "1 2|wit-query verify --commit c.commit.json @"
# A changed leaf in an exclusion proof can still bracket: a valid proof that another value is absent (0, and it names the value).
sweep_file exc.json "0 1 2|wit-query verify --commit c.commit.json @"
sweep_file lp.json "1 2|wit-log check-proof @"
sweep_file chal.json "1 2|wit-challenge --check @"
sweep_file head.json "2|wit-challenge --head @ --nonce $NONCE -k 2 -o o.json|o.json"
sweep_file train.txt "0 2|wit-commit -q -o o.commit.json @|o.commit.json o.widx"
# A run's own files, damaged in a copy of the run.
for f in run.json run.heads run.wlog seed; do
  mutants "run/$f" mutrun
  for m in mutrun/*; do
    rm -rf r2 && cp -r run r2 && cp "$m" "r2/$f"
    judge "run/$f[$(basename "$m")]: wit-log verify" "1 2" "" "" wit-log verify --no-init r2
    [ "$FULL" = 1 ] && judge "run/$f[$(basename "$m")]: wit-log prove" "0 1 2" "" "o.json" wit-log prove r2 2 -o o.json
  done
done

# ---- 2. outputs aimed at inputs, and into run directories ------------------
judge "wit-commit -o its input" "2" "train.txt" "x.widx" wit-commit -q --index x.widx -o train.txt train.txt
judge "wit-commit --index its input" "2" "train.txt" "x.json" wit-commit -q --index train.txt -o x.json train.txt
for o in c.commit.json c.widx; do
  judge "wit-query include -o $o" "2" "c.commit.json c.widx" "" \
    wit-query include --commit c.commit.json --index c.widx --text alpha -o "$o"
  judge "wit-query contamination -o $o" "2" "c.commit.json c.widx ev.txt" "" \
    wit-query contamination --commit c.commit.json --index c.widx -o "$o" ev.txt
done
for f in run.json run.heads run.wlog seed ckpt/new.json new.json; do
  judge "wit-log prove -o run/$f" "2" "run" "" wit-log prove run 3 -o "run/$f"
  judge "wit-log consistency -o run/$f" "2" "run" "" wit-log consistency run 1 3 -o "run/$f"
  judge "wit-challenge -o run/$f" "2" "run" "" wit-challenge --run run --nonce "$NONCE" -k 2 -o "run/$f"
done
judge "wit-log check-proof (output none) over itself" "0" "lp.json" "" wit-log check-proof lp.json
ln -sf run/run.heads link.json
judge "wit-log prove -o link into the run" "2" "run" "" wit-log prove run 3 -o link.json

# ---- 3. options out of range ------------------------------------------------
for v in -1 18446744073709551616 99999999999999999999999 9223372036854775808; do
  judge "wit-challenge -k $v" "2" "run" "o.json" wit-challenge --run run --nonce "$NONCE" -k "$v" -o o.json
  judge "wit-log sign --time $v" "2" "run" "" wit-log sign run --key run/trainer.key --time "$v"
  judge "wit-log show --from $v" "2" "run" "" wit-log show run --from "$v"
done
# NaN and the infinities (issue 33): a fraction, a confidence, a count.
for v in nan inf -inf 1e999; do
  judge "wit-challenge --confidence=$v" "2" "run" "o.json" wit-challenge --run run --nonce "$NONCE" --confidence="$v" --fraction 0.1 -o o.json
  judge "wit-challenge --fraction=$v" "2" "run" "o.json" wit-challenge --run run --nonce "$NONCE" --confidence 0.9 --fraction="$v" -o o.json
  judge "wit-challenge -k=$v" "2" "run" "o.json" wit-challenge --run run --nonce "$NONCE" -k="$v" -o o.json
done
for j in 10000 1025 -3; do
  judge "wit-commit -j $j" "2" "train.txt" "o.json o.widx" wit-commit -q -j "$j" -o o.json train.txt
done
judge "wit-query verify --eval, positional after" "0" "cert.json ev.txt" "" wit-query verify --commit c.commit.json --eval ev.txt cert.json
for p in /dev/full; do
  [ -w "$p" ] || continue
  judge "wit-log show >/dev/full" "2" "run" "" sh -c "wit-log show run >$p"
  judge "wit-log head >/dev/full" "2" "run" "" sh -c "wit-log head run >$p"
  judge "wit-commit show >/dev/full" "2" "c.commit.json" "" sh -c "wit-commit show c.commit.json >$p"
done

# ---- 4. signals and concurrent writers ---------------------------------------
set -m  # job control: a background job takes Ctrl-C (SIGINT) instead of ignoring it
for sig in INT TERM KILL; do
  rm -f fifo && mkfifo fifo
  tried=$((tried + 1))
  # env --default-signal: the tool starts catching SIGINT even where this
  # script was started with it ignored (a background job's), as a user's is.
  env --default-signal=INT,TERM wit-commit -o s.commit.json fifo 2>s.err &
  pid=$!
  # Its index's temporary is open (unnamed, where the file system allows).
  for _ in $(seq 1 500); do holds_temporary "$pid" s.widx && break; sleep 0.01; done
  kill -"$sig" "$pid"
  reap "$pid"
  rc=$?
  want=$([ $sig = INT ] && echo 130 || { [ $sig = TERM ] && echo 143 || echo 137; })
  [ "$rc" = "$want" ] && right=$((right + 1)) || bad_cases+=("wit-commit SIG$sig: exit $rc (want $want)")
  if [ -e s.commit.json ] || [ -e s.widx ] || { [ $sig != KILL ] && compgen -G "s.*.tmp.*" >/dev/null; }; then
    partial=$((partial + 1)); bad_cases+=("wit-commit SIG$sig: partial output")
  fi
  rm -f s.* fifo
done
set +m
for round in 1 2 3 4 5; do
  tried=$((tried + 1))
  wit-commit -q -o pair.commit.json train.txt & a=$!
  wit-commit -q -o pair.commit.json big.txt & b=$!
  wait $a; ra=$?; wait $b; rb=$?
  if [ $ra = 0 ] && [ $rb = 0 ] && wit-commit show pair.commit.json --index pair.widx >/dev/null 2>&1; then right=$((right + 1))
  else lost=$((lost + 1)); bad_cases+=("concurrent wit-commit round $round: mismatched pair"); fi
done

# ---- 5. LibTorch tools --------------------------------------------------------
if [ "$TORCH" = 1 ]; then
  for i in $(seq 1 80); do echo "record $i of a small corpus for training"; done >data.txt
  wit-commit -q -o data.commit.json data.txt
  printf '{"model": {"n_layer": 1, "n_head": 2, "d_model": 32, "context": 48}, "batch_size": 4, "steps": 8, "checkpoint_every": 4, "head_every": 4, "fingerprint": {"sketch_k": 64, "probe_every": 4, "probe_records": 2, "probe_dim": 8}}' >cfg.json
  # A script, not a function, so that judge can put a timeout on it.
  printf '#!/bin/sh\nexec wit-train -q -j1 --data data.commit.json --index data.widx "$@" data.txt\n' >trn && chmod +x trn
  ./trn --config cfg.json --out T >/dev/null 2>&1 || bad_cases+=("training the LibTorch fixture failed")
  wit-challenge -q --run T --nonce "$NONCE" -k 2 -o tchal.json
  mutants cfg.json mutcfg
  for m in mutcfg/*; do
    judge "cfg.json[$(basename "$m")]: wit-train" "0 2" "$m data.txt data.commit.json data.widx" "TM" ./trn --config "$m" --out TM
    rm -rf TM
  done
  printf '{"model": "x"}' >cfg-model.json
  judge "wit-train config model: x" "2" "cfg-model.json" "TX" ./trn --config cfg-model.json --out TX
  for f in run.wlog run.heads run.json ckpt/step-000008.safetensors probe.json data.json new.json; do
    judge "wit-replay respond -o T/$f" "2" "T tchal.json" "" wit-replay respond -q --run T tchal.json -o "T/$f"
    judge "wit-sketch fingerprint -o T/$f" "2" "T" "" wit-sketch fingerprint --run T T/ckpt/step-000008.safetensors -o "T/$f"
  done
  for f in data.txt cfg.json data.commit.json; do
    judge "wit-train --stats $f" "2" "data.txt cfg.json data.commit.json data.widx" "TS" ./trn --config cfg.json --out TS --stats "$f"
  done
  judge "wit-train --stats T/run.wlog" "2" "T" "" ./trn --config cfg.json --out T --stats T/run.wlog
  for tool in "wit-train --config cfg.json --out TJ data.txt --data data.commit.json --index data.widx" \
    "wit-replay respond --run T tchal.json -o j.wbundle" "wit-sketch fingerprint --run T T/ckpt/step-000008.safetensors -o j.json"; do
    # shellcheck disable=SC2086
    judge "${tool%% *} -j 10000" "2" "T" "TJ j.wbundle j.json" $tool -j 10000
  done
  judge "wit-train --nproc 5 (batch 4)" "2" "cfg.json" "TN" ./trn --config cfg.json --out TN --nproc 5
  for how in delete empty; do
    rm -rf TL && cp -r T TL
    [ $how = delete ] && rm TL/run.wlog || : >TL/run.wlog
    judge "wit-train resume after the log was lost ($how)" "2" "TL/run.heads" "" ./trn --config cfg.json --out TL
  done
  set -m
  for sig in INT TERM KILL; do
    tried=$((tried + 1))
    rm -rf TK
    env --default-signal=INT,TERM wit-train -q -j1 --data data.commit.json --index data.widx --config cfg.json --out TK data.txt 2>k.err &
    pid=$!
    for _ in $(seq 1 200); do [ -s TK/run.wlog ] && break; sleep 0.05; done
    kill -"$sig" "$pid"
    wait "$pid"
    rc=$?
    want=$([ $sig = INT ] && echo 130 || { [ $sig = TERM ] && echo 143 || echo 137; })
    { [ "$rc" = "$want" ] || [ "$rc" = 0 ]; } && right=$((right + 1)) || bad_cases+=("wit-train SIG$sig: exit $rc (want $want)")
    # Whatever was kept resumes to a run that verifies.
    if [ -d TK ]; then
      ./trn --config cfg.json --out TK >/dev/null 2>&1 && wit-log verify TK >/dev/null 2>&1 ||
        { lost=$((lost + 1)); bad_cases+=("wit-train SIG$sig: the resumed run does not verify"); }
    fi
  done
  set +m
  wit-log verify T >/dev/null 2>&1 || { lost=$((lost + 1)); bad_cases+=("the LibTorch reference run no longer verifies"); }
fi

wit-log verify --no-init ref >/dev/null 2>&1 || { lost=$((lost + 1)); bad_cases+=("the reference run no longer verifies"); }
for b in "${bad_cases[@]}"; do echo "  $b" >&2; done
echo "fault sweep: $tried cases tried, $right right exit, $crashes crashes, $partial partial outputs, $changed inputs changed, $lost data lost"
[ "$right" = "$tried" ] && [ "$crashes" = 0 ] && [ "$partial" = 0 ] && [ "$changed" = 0 ] && [ "$lost" = 0 ] && ok || fail "fault sweep found problems"
finish
