#!/usr/bin/env bash
# Gradient accumulation (manifest "micro_batch", docs/training.md) on GPT-2
# small (124M parameters, examples/gpt2_module.py --preset gpt2-small, the
# TorchScript module of bench/gpt2.sh and examples/gpt2-small.json): never
# part of the tests, never pass/fail.
#   1. One accumulated step at BATCH x CONTEXT tokens (default 128 x 256 =
#      32,768 tokens per step) in micro-batches of MICRO rows, with every
#      witness logged at that step (state root, sketches, batch root, probe,
#      checkpoint, signed head): wit-train --stats splits the step's seconds
#      from the witnesses' seconds, so the witness overhead at this many
#      tokens per step is witness / step. Peak memory is GNU time's maximum
#      resident set.
#   2. The same model without accumulation at the batches in PLAIN (default
#      "MICRO": the micro-batch alone, i.e. the largest batch of the
#      accumulated run's memory; add larger ones to find the largest that
#      fits): one step each, its seconds and peak memory.
# Prints a markdown table (and writes it to OUT if given). A step at 32k
# tokens takes many minutes on a 2-core CPU: the machine is usually shared,
# so the script prints the load average next to the numbers.
#
# Usage: bench/accum.sh BUILD_DIR [OUT.md]
# Environment: WIT_BENCH_ACCUM_BATCH (128), WIT_BENCH_ACCUM_CONTEXT (256),
# WIT_BENCH_ACCUM_MICRO (8), WIT_BENCH_ACCUM_PLAIN ("$MICRO"),
# WIT_BENCH_ACCUM_THREADS (2), WIT_BENCH_ACCUM_MODULE ("--preset gpt2-small";
# e.g. "--n-layer 1 --n-head 2 --d-model 64 --context 256" for a dry run).
set -euo pipefail
shopt -s inherit_errexit

die() { echo "bench/accum.sh: error: $*" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bench/accum.sh BUILD_DIR [OUT.md]" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
out_md=${2:+$(realpath -m "$2")}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bin
py=/usr/bin/python3
for t in wit-train wit-commit; do [ -x "$bin/$t" ] || die "$t is not built: $bin/$t"; done
[ -x /usr/bin/time ] || die "GNU time not found at /usr/bin/time (apt-get install time)"
"$py" -c 'import torch' 2>/dev/null || die "$py cannot import torch (apt-get install python3-torch)"
export OPENBLAS_NUM_THREADS=1

B=${WIT_BENCH_ACCUM_BATCH:-128}
L=${WIT_BENCH_ACCUM_CONTEXT:-256}
M=${WIT_BENCH_ACCUM_MICRO:-8}
plain=${WIT_BENCH_ACCUM_PLAIN:-$M}
threads=${WIT_BENCH_ACCUM_THREADS:-2}
module_args=${WIT_BENCH_ACCUM_MODULE:-"--preset gpt2-small"}
vocab=50257
[ "$M" -lt "$B" ] || die "WIT_BENCH_ACCUM_MICRO ($M) must be below WIT_BENCH_ACCUM_BATCH ($B)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wit-bench-accum.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
t0=$(date +%s)
say() { echo "bench accum: [$(( $(date +%s) - t0 ))s] $*" >&2; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
stat_of() { sed -n "s/^ *\"$2\": \([0-9.e+-]*\),\{0,1\}\$/\1/p" "$1"; }

say "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(load)"
# shellcheck disable=SC2086 # module_args: several arguments
"$py" "$root/examples/gpt2_module.py" $module_args --context "$L" --slim -o model.pt >export.out
say "$(cat export.out)"
# B windows of L token ids (bench/tokens.py: xorshift64*, below vocab - 1: 50256 is the pad).
"$py" "$root/bench/tokens.py" "$((B * L))" "$vocab" 0x2545F4914F6CDD1D 0x9E3779B97F4A7C15 >tokens.bin
"$bin/wit-commit" -q --reader tokens --seq-len "$L" -o tok.commit.json --index tok.widx tokens.bin

# config NAME BATCH [MICRO]: examples/gpt2-small.json, one step, every witness at it.
config() {
  "$py" - "$root/examples/gpt2-small.json" "$2" "$L" "${3:-0}" >"$1.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["batch_size"], c["model"]["context"], micro = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
c["steps"], c["checkpoint_every"], c["head_every"], c["fingerprint"]["probe_every"] = 1, 1, 1, 1
if micro:
    c["micro_batch"] = micro
c["seed"] = "acc0" * 16
print(json.dumps(c))
PY
}
# step NAME: one wit-train step under GNU time; NAME.time is "wall maxrss_kib".
step() {
  say "$1: wit-train, 1 step ($(tr -d '\n' <"$1.json" | grep -o '"batch_size": [0-9]*'), micro_batch $2), load $(load)"
  /usr/bin/time -f '%e %M' -o "$1.time" "$bin/wit-train" -q -j"$threads" --model model.pt --config "$1.json" \
    --data tok.commit.json --index tok.widx --out "run-$1" --stats "$1.stats" tokens.bin >"$1.out" 2>"$1.err" ||
    { tail -n 5 "$1.err" >&2; die "wit-train failed for $1"; }
  say "$1: step $(stat_of "$1.stats" step_seconds) s, witnesses $(stat_of "$1.stats" witness_seconds) s, max RSS $(cut -d' ' -f2 "$1.time") KiB"
}

config accum "$B" "$M"
step accum "$M"
for b in $plain; do
  config "plain$b" "$b"
  step "plain$b" none
done

row() {  # row NAME BATCH MICRO
  local s w r
  s=$(stat_of "$1.stats" step_seconds) w=$(stat_of "$1.stats" witness_seconds) r=$(cut -d' ' -f2 "$1.time")
  awk -v b="$2" -v l="$L" -v m="$3" -v s="$s" -v w="$w" -v r="$r" 'BEGIN {
    printf "| %d x %d = %d | %s | %.1f | %.1f | %.2f%% | %.2f |\n", b, l, b * l, m, s, w, 100 * w / s, r / 1048576 }'
}
{
  echo "Model $(cut -d';' -f1 export.out), $threads LibTorch threads, $(nproc) cores, load average at the end $(load) (a shared machine: other builds and tests ran alongside)"
  echo
  echo "| tokens per step (B x L) | micro_batch | step s | witnesses s | witness overhead | peak RSS GiB |"
  echo "|---|---|---|---|---|---|"
  row accum "$B" "$M"
  for b in $plain; do row "plain$b" "$b" none; done
} | tee table.md
[ -z "$out_md" ] || cp table.md "$out_md"
