#!/usr/bin/env bash
# GPT-2 small (124M parameters, a TorchScript module) through wit on this
# machine (issue 15's measurements; never part of the tests). Exports the
# module with examples/gpt2_module.py (--slim: kilobytes), writes a
# deterministic token file (uint16 ids < 50257, xorshift64*), commits it with
# the `tokens` reader, and measures for each LibTorch thread count:
#   - the bare step: wit-train --bench-no-witnesses (mean over the run's
#     steps, first step included) and bench_train --model (median of REPS,
#     wall and process CPU time);
#   - each witness's cost (bench_train --model: state root, sketches of W, m
#     and v, batch root, log entry, signed head, probe fingerprint, checkpoint),
#     per event and amortized at the manifest's default intervals (head every
#     10 steps, probe and checkpoint every 50), as a % of the bare step, and
#     the overhead as a function of tokens per step;
#   - a full wit-train run with witnesses (examples/gpt2-small.json's
#     intervals: probe, checkpoint and head every 2 steps);
#   - peak memory (GNU time's maximum resident set) of wit-train,
#     wit-replay respond and wit-replay verify, against one training state
#     (params + m + v: 12 bytes per parameter).
# Then one challenged step of the first thread count's run: the response
# bundle's size and the verifier's seconds for it against a bare step.
# Further shapes (WIT_BENCH_GPT2_SHAPES after the first) are timed with
# bench_train only, at the first thread count, to show the trend.
#
# Takes about 35-45 minutes on the 2-core machine under other developers'
# load (each 1-thread step is ~30 s of CPU, ~60 s of wall time when the core
# is shared); fewer with WIT_BENCH_GPT2_THREADS=1 or WIT_BENCH_GPT2_SHAPES=8x256.
# Needs ~10 GB in TMPDIR (checkpoints and a response bundle of 1.5 GB states).
#
# Usage: bench/gpt2.sh BUILD_DIR
# Environment: WIT_BENCH_GPT2_THREADS (default "1 2"), WIT_BENCH_GPT2_STEPS
# (wit-train steps, default 4), WIT_BENCH_GPT2_REPS (bench_train repetitions,
# default 3), WIT_BENCH_GPT2_SHAPES (default "8x256 4x256": BATCHxCONTEXT),
# WIT_BENCH_GPT2_VERIFY (default 1; 0 skips respond and verify),
# WIT_BENCH_GPT2_MODULE (default "--preset gpt2-small": gpt2_module.py's size
# arguments; e.g. "--n-layer 1 --n-head 2 --d-model 64 --context 256 --vocab
# 50257" for a dry run of the script in a minute).
set -euo pipefail
shopt -s inherit_errexit

die() { echo "bench/gpt2.sh: error: $*" >&2; exit 2; }
[ $# -eq 1 ] || { echo "usage: bench/gpt2.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bin
bt=$build/bench/bench_train
py=/usr/bin/python3
for t in wit-train wit-commit wit-replay wit-challenge; do
  [ -x "$bin/$t" ] || die "$t is not built: $bin/$t"
done
[ -x "$bt" ] || die "bench_train is not built (a build with LibTorch): $bt"
[ -x /usr/bin/time ] || die "GNU time not found at /usr/bin/time (apt-get install time)"
"$py" -c 'import torch' 2> /dev/null || die "$py cannot import torch (apt-get install python3-torch)"
export OPENBLAS_NUM_THREADS=1

threads=${WIT_BENCH_GPT2_THREADS:-"1 2"}
steps=${WIT_BENCH_GPT2_STEPS:-4}
reps=${WIT_BENCH_GPT2_REPS:-3}
shapes=${WIT_BENCH_GPT2_SHAPES:-"8x256 4x256"}
do_verify=${WIT_BENCH_GPT2_VERIFY:-1}
module_args=${WIT_BENCH_GPT2_MODULE:-"--preset gpt2-small"}
vocab=50257
# The manifest's default intervals (docs/manifest.md), for amortizing.
head_every=10 probe_every=50 ckpt_every=50
read -r first_t _ <<< "$threads"
read -r shape0 _ <<< "$shapes"
batch0=${shape0%x*} context0=${shape0#*x}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wit-bench-gpt2.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
t_start=$(date +%s)
log() { echo "bench gpt2: [$(( $(date +%s) - t_start ))s] $*" >&2; }
calc() { awk "BEGIN { printf \"%.6g\", $1 }"; }
f1() { awk -v x="$1" 'BEGIN { printf "%.1f", x }'; }
f2() { awk -v x="$1" 'BEGIN { printf "%.2f", x }'; }
f3() { awk -v x="$1" 'BEGIN { printf "%.3f", x }'; }
kv() { sed -n "s/^$2=//p" "$1"; }
stat_of() { sed -n "s/^ *\"$2\": \([0-9.e+-]*\),\{0,1\}\$/\1/p" "$1"; }
# timed NAME CMD...: runs CMD under GNU time; NAME.time holds "wall user sys maxrss_kib".
timed() {
  local name=$1
  shift
  /usr/bin/time -f '%e %U %S %M' -o "$name.time" "$@" > "$name.out" 2> "$name.err" ||
    { tail -n 5 "$name.err" >&2; die "failed (exit $?): $*"; }
}
wall_of() { tail -n 1 "$1.time" | cut -d' ' -f1; }
cpu_of() { tail -n 1 "$1.time" | awk '{ printf "%.1f", $2 + $3 }'; }
rss_of() { tail -n 1 "$1.time" | cut -d' ' -f4; }  # KiB

log "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086 # module_args: several arguments
"$py" "$root/examples/gpt2_module.py" $module_args --slim -o gpt2-small.pt > export.out
log "$(cat export.out)"

# Deterministic tokens: 512 windows of context0 ids below vocab - 1 (50256 =
# <|endoftext|> is wit's pad), xorshift64* from a fixed seed (bench/tokens.py).
"$py" "$root/bench/tokens.py" "$((512 * context0))" "$vocab" 0x9E3779B97F4A7C15 0x2545F4914F6CDD1D > tokens.bin
"$bin/wit-commit" -q --reader tokens --seq-len "$context0" -o tok.commit.json --index tok.widx tokens.bin

# The example config with this run's steps, shape and a fixed seed.
"$py" - "$root/examples/gpt2-small.json" "$steps" "$batch0" "$context0" > cfg.json <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["steps"], c["batch_size"], c["model"]["context"] = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
c["seed"] = "5eed" * 16
print(json.dumps(c))
PY
every_cfg=$("$py" -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["checkpoint_every"], c["fingerprint"]["probe_every"], c["head_every"])' cfg.json)

train() {  # train NAME THREADS [ARGS...]
  local name=$1 t=$2
  shift 2
  rm -rf "run-$name"
  timed "$name" "$bin/wit-train" -q -j"$t" --model gpt2-small.pt --config cfg.json --data tok.commit.json \
    --index tok.widx --out "run-$name" --stats "$name.stats" "$@" tokens.bin
}

for t in $threads; do
  log "threads $t: bench_train --model (bare step and each witness; $reps reps)"
  timed "bt$t" "$bt" --model gpt2-small.pt --vocab "$vocab" --batch "$batch0" --context "$context0" \
    --threads "$t" --reps "$reps" --cheap-reps 5 --kv --dir "$tmp"
  cp "bt$t.out" "bt$t.kv"
  log "threads $t: bare step $(kv "bt$t.kv" step_ms) ms ($(kv "bt$t.kv" step_cpu_ms) ms CPU)"
  log "threads $t: wit-train --bench-no-witnesses, $steps steps"
  train "bare$t" "$t" --bench-no-witnesses
  log "threads $t: wit-train with witnesses, $steps steps"
  train "wit$t" "$t"
  log "threads $t: steps $(stat_of "bare$t.stats" step_seconds) s bare, $(stat_of "wit$t.stats" step_seconds) s +" \
    "$(stat_of "wit$t.stats" witness_seconds) s of witnesses with"
done

for shape in ${shapes#"$shape0"}; do
  b=${shape%x*} l=${shape#*x}
  log "shape $shape: bench_train --model, $first_t thread(s)"
  timed "bt-$shape" "$bt" --model gpt2-small.pt --vocab "$vocab" --batch "$b" --context "$l" \
    --threads "$first_t" --reps "$reps" --cheap-reps 5 --kv --dir "$tmp"
  cp "bt-$shape.out" "bt-$shape.kv"
done

if [ "$do_verify" = 1 ]; then
  run=run-wit$first_t
  "$bin/wit-challenge" -q --run "$run" --nonce "$(printf '%064x' 2026)" -k 1 -o ch.json
  challenged=$(tr -d ' \n' < ch.json | sed -n 's/.*"steps":\[\([0-9,]*\)\].*/\1/p')
  log "challenge: step $challenged; wit-replay respond"
  timed respond "$bin/wit-replay" respond -q -j"$first_t" --run "$run" ch.json -o r.wbundle
  bundle_bytes=$(stat -c %s r.wbundle)
  log "wit-replay verify (exact: one replay under the run's recorded configuration)"
  /usr/bin/time -f '%e %U %S %M' -o verify.time "$bin/wit-replay" verify -q \
    --bundle r.wbundle ch.json -o report.json > verify.out 2> verify.err || true
  grep -q '"verdict": "certified"' report.json 2> /dev/null || { cat verify.err >&2; die "the run was not certified"; }
  per_check=$(grep -o '"seconds": [0-9.e-]*' report.json | awk '{ s += $2; n++ } END { printf "%.3f", s / n }')
  # A challenged step that logs a probe fingerprint is checked with it: one
  # more forward (probe_records x context tokens), which most steps (the
  # manifest default probes every 50) do not have.
  probed=0
  "$bin/wit-log" show "$run" --from "$challenged" --to "$challenged" | grep -q '"probe":' && probed=1
fi

# ---- tables ----
params=$(kv "bt$first_t.kv" params)
state_bytes=$((params * 12))
state_gb=$(calc "$state_bytes / 1e9")
tok0=$((batch0 * context0))
mult() { calc "$1 * 1024 / $state_bytes"; }  # KiB -> multiple of one state

echo
echo "### GPT-2 small through wit: $params parameters, one state (W, m, v) $(f2 "$state_gb") GB"
echo
echo "$(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average at the end $(cut -d' ' -f1-3 /proc/loadavg); batch $batch0 x context $context0 = $tok0 tokens/step; OPENBLAS_NUM_THREADS=1; \`bench/gpt2.sh\`."
echo
hdr="| per step, batch $batch0 x context $context0 |" rule="|---|"
for t in $threads; do hdr+=" $t thread(s) |"; rule+="---|"; done
echo "$hdr"
echo "$rule"
row() {  # row LABEL FUNC: FUNC T prints the cell
  local line="| $1 |" t
  for t in $threads; do line+=" $($2 "$t") |"; done
  echo "$line"
}
c_bare_wt() { echo "$(f1 "$(stat_of "bare$1.stats" step_seconds)") s"; }
c_bare_bt() { echo "$(f1 "$(calc "$(kv "bt$1.kv" step_ms) / 1000")") s ($(f1 "$(calc "$(kv "bt$1.kv" step_cpu_ms) / 1000")") s CPU)"; }
# witness cell: per event ms, amortized share of the bench_train bare step (wall)
wcell() {  # wcell T KEY EVERY
  local ms cpu step
  ms=$(kv "bt$1.kv" "$2_ms") cpu=$(kv "bt$1.kv" "$2_cpu_ms") step=$(kv "bt$1.kv" step_ms)
  echo "$(f1 "$ms") ms ($(f1 "$cpu") ms CPU): $(calc "100 * $ms / $3 / $step" | xargs printf '%.3f')%"
}
amort_ms() {  # amort_ms KVFILE [cpu]: all witnesses per step, amortized at the defaults
  local f=$1 s=${2:+_cpu}
  calc "$(kv "$f" "state_root${s}_ms") + $(kv "$f" "sketches${s}_ms") + $(kv "$f" "batch_root${s}_ms") + $(kv "$f" "entry${s}_ms") + $(kv "$f" "head${s}_ms") / $head_every + $(kv "$f" "probe${s}_ms") / $probe_every + $(kv "$f" "checkpoint${s}_ms") / $ckpt_every"
}
row "bare step: wit-train --bench-no-witnesses (mean of $steps steps, first included)" c_bare_wt
row "bare step: bench_train --model (median of $reps)" c_bare_bt
c_root() { wcell "$1" state_root 1; }
c_sk() { wcell "$1" sketches 1; }
c_br() { wcell "$1" batch_root 1; }
c_en() { wcell "$1" entry 1; }
c_hd() { wcell "$1" head "$head_every"; }
c_pr() { wcell "$1" probe "$probe_every"; }
c_ck() { wcell "$1" checkpoint "$ckpt_every"; }
c_all() {
  local w wc
  w=$(amort_ms "bt$1.kv") wc=$(amort_ms "bt$1.kv" cpu)
  echo "**$(f1 "$w") ms: $(calc "100 * $w / $(kv "bt$1.kv" step_ms)" | xargs printf '%.2f')%** ($(printf '%.2f' "$(calc "100 * $wc / $(kv "bt$1.kv" step_cpu_ms)")")% in CPU time)"
}
c_run() {
  echo "$(f1 "$(stat_of "wit$1.stats" step_seconds)") s step + $(f2 "$(stat_of "wit$1.stats" witness_seconds)") s witnesses"
}
row "state root of W, m, v (every step; hashed on all cores)" c_root
row "sketches of W, m, v (3 x k=512, every step)" c_sk
row "batch root (every step)" c_br
row "log entry: encode + append (every step)" c_en
row "signed head: fsync + sign (per head; every $head_every)" c_hd
row "probe fingerprint (per probe; every $probe_every)" c_pr
row "checkpoint write + fsync, $(f2 "$state_gb") GB (per checkpoint; every $ckpt_every)" c_ck
row "all witnesses, amortized at the manifest defaults" c_all
read -r ce pe he <<< "$every_cfg"
row "wit-train with witnesses, per step (checkpoint every $ce, probe every $pe, head every $he)" c_run
echo
echo "Cells: time per event, wall (process CPU, all threads), then its share of the bench_train bare step after dividing by its interval."
echo

# Overhead against tokens per step: the witnesses W (amortized) are O(params)
# and fixed per optimizer step; the step is a + c x tokens, a >= 0 (a
# two-point fit when a second shape was measured at that thread count and
# it gives a >= 0; else a = 0, c = step / tokens). In wall time and in
# process CPU time (steadier on a shared machine; the state root's CPU time
# counts both cores).
echo "| overhead = W / (a + c x tokens) | W, ms/step | a, ms | c, ms/token | tokens/step for 1% | at 32,768 tokens | at 524,288 tokens (0.5M) |"
echo "|---|---|---|---|---|---|---|"
fit_row() {  # fit_row T wall|cpu KV0 [KV1]
  local t=$1 k=$2 w s0 tk0 s1 tk1 a c cpu=""
  [ "$k" = cpu ] && cpu=1
  w=$(amort_ms "$3" $cpu) s0=$(kv "$3" "step${cpu:+_cpu}_ms") tk0=$(kv "$3" tokens)
  a=0 c=$(calc "$s0 / $tk0")
  if [ -n "${4:-}" ]; then
    s1=$(kv "$4" "step${cpu:+_cpu}_ms") tk1=$(kv "$4" tokens)
    local c2 a2
    c2=$(calc "($s0 - $s1) / ($tk0 - $tk1)") a2=$(calc "$s0 - ($s0 - $s1) / ($tk0 - $tk1) * $tk0")
    if awk -v a="$a2" -v c="$c2" 'BEGIN { exit !(a >= 0 && c > 0) }'; then a=$a2 c=$c2; fi
  fi
  awk -v t="$t" -v k="$k" -v w="$w" -v a="$a" -v c="$c" 'BEGIN {
    n1 = (100 * w - a) / c; if (n1 < 0) n1 = 0
    printf "| %s thread(s), %s time | %.0f | %.0f | %.2f | %.0f | %.3f%% | %.4f%% |\n",
      t, k, w, a, c, n1, 100 * w / (a + c * 32768), 100 * w / (a + c * 524288) }'
}
for t in $threads; do
  second=""
  if [ "$t" = "$first_t" ]; then
    for shape in ${shapes#"$shape0"}; do second="bt-$shape.kv"; break; done
  fi
  fit_row "$t" wall "bt$t.kv" $second
  fit_row "$t" cpu "bt$t.kv" $second
done
for shape in ${shapes#"$shape0"}; do
  f=bt-$shape.kv
  echo
  echo "Shape $shape ($(kv "$f" tokens) tokens/step, $first_t thread(s), bench_train): bare step $(f1 "$(calc "$(kv "$f" step_ms) / 1000")") s ($(f1 "$(calc "$(kv "$f" step_cpu_ms) / 1000")") s CPU); all witnesses amortized $(f1 "$(amort_ms "$f")") ms = $(printf '%.2f' "$(calc "100 * $(amort_ms "$f") / $(kv "$f" step_ms)")")% (state root $(f1 "$(kv "$f" state_root_ms)") ms, sketches $(f1 "$(kv "$f" sketches_ms)") ms, probe $(f1 "$(kv "$f" probe_ms)") ms)."
done
echo

echo "| peak memory (maximum resident set) | GB | x one state ($(f2 "$state_gb") GB) |"
echo "|---|---|---|"
mem_row() { echo "| $1 | $(f2 "$(calc "$(rss_of "$2") * 1024 / 1e9")") | $(f2 "$(mult "$(rss_of "$2")")") |"; }
for t in $threads; do
  mem_row "wit-train -j$t --bench-no-witnesses" "bare$t"
  mem_row "wit-train -j$t with witnesses" "wit$t"
done
if [ "$do_verify" = 1 ]; then
  mem_row "wit-replay respond -j$first_t (1 challenged step)" respond
  mem_row "wit-replay verify -j$first_t (1 challenged step)" verify
  echo
  bare=$(stat_of "bare$first_t.stats" step_seconds)
  bare_bt=$(calc "$(kv "bt$first_t.kv" step_ms) / 1000")
  echo "| verifying one challenged step ($first_t thread(s)) | value |"
  echo "|---|---|"
  echo "| challenged step | $challenged of $steps$([ "$probed" = 1 ] && echo ", with a probe fingerprint") |"
  echo "| response bundle | $(f2 "$(calc "$bundle_bytes / 1e9")") GB ($(f2 "$(calc "$bundle_bytes / $state_bytes")") states; an exact response holds the start state of each challenged step) |"
  echo "| trainer's cost to respond | $(f1 "$(wall_of respond)") s wall, $(cpu_of respond) s CPU |"
  echo "| verifier, whole command (exact: one replay, root compared) | $(f1 "$(wall_of verify)") s wall, $(cpu_of verify) s CPU |"
  echo "| the check: decode and hash the start state, replay, hash the result | $(f1 "$per_check") s |"
  echo "| against a bare step | $(f2 "$(calc "$per_check / $bare")") x wit-train's mean ($(f1 "$bare") s), $(f2 "$(calc "$per_check / $bare_bt")") x bench_train's median ($(f1 "$bare_bt") s); target <= 1.3 |"
  if [ "$probed" = 1 ]; then
    probe_s=$(calc "$(kv "bt$first_t.kv" probe_ms) / 1000")
    echo "| the check less its probe recompute ($(f1 "$probe_s") s, bench_train's probe), as for a step without a probe | $(f1 "$(calc "$per_check - $probe_s")") s: $(f2 "$(calc "($per_check - $probe_s) / $bare")") x wit-train's mean, $(f2 "$(calc "($per_check - $probe_s) / $bare_bt")") x bench_train's median |"
  fi
fi
echo
log "done in $(( $(date +%s) - t_start )) s"
