#!/usr/bin/env bash
# What a board keeps per answered challenge (issue 37; docs/board.md, "The
# evidence store"): the folder (a git repository) must grow by at most 64 KiB
# per answered challenge whatever the model's size and hold no file over
# 1 MiB; the bytes go to the evidence store. Never part of the tests, never
# pass/fail: prints a markdown table (and writes it to OUT if given).
#   1. The demo's board (make -C examples board, STEPS steps, CONFIDENCE):
#      per answered challenge, the bytes the folder gained (the challenge, the
#      board's draw and its signed report), the largest file in the folder,
#      and what the store holds: the response, and inside it the states
#      (raw, and compressed alone with zstd -3, with the seconds zstd takes
#      to compress and decompress them: does zstd pay on states?), the
#      batches, a TorchScript run's model.pt and the rest; states the response
#      holds against one per challenged step (what a response held before
#      issue 37 item 3) and the minimum (one start state per challenged step
#      that is not the end of another challenged step), and states and model
#      files two responses (or a response and the store's weights/) both hold.
#   2. A 124M-parameter run's numbers (GPT-2 small, 124,439,808 float32
#      parameters, Adam: a state is parameters and both moments), from the
#      demo's measured bytes per challenged step of a board report and the
#      k a board draws at the demo's policy over T = 10,000 steps.
#
# Usage: bench/board_size.sh BUILD_DIR [OUT.md]
# Environment: WIT_BENCH_BOARD_STEPS (40), WIT_BENCH_BOARD_CONFIDENCE (0.999),
# WIT_BENCH_BOARD_OUT (a temporary folder, removed; give one to keep the board).
set -euo pipefail
shopt -s inherit_errexit

die() { echo "bench/board_size.sh: error: $*" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bench/board_size.sh BUILD_DIR [OUT.md]" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
out_md=${2:+$(realpath -m "$2")}
root=$(cd "$(dirname "$0")/.." && pwd)
command -v zstd >/dev/null || die "zstd is not installed (apt-get install zstd)"
command -v jq >/dev/null || die "jq is not installed"
export OPENBLAS_NUM_THREADS=1
steps=${WIT_BENCH_BOARD_STEPS:-40}
confidence=${WIT_BENCH_BOARD_CONFIDENCE:-0.999}
if [ -n "${WIT_BENCH_BOARD_OUT:-}" ]; then
  out=$(realpath -m "$WIT_BENCH_BOARD_OUT")
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/wit-board-size.XXXXXX")
  trap 'rm -rf "$out"' EXIT
fi

echo "bench/board_size.sh: the demo's board ($steps steps, confidence $confidence) in $out (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
make -s -C "$root/examples" BUILD="$build" OUT="$out" STEPS="$steps" CONFIDENCE="$confidence" board >"$out.make.log" 2>&1 ||
  { tail -20 "$out.make.log" >&2; die "make -C examples board failed (log: $out.make.log)"; }
rm -f "$out.make.log"
board=$out/board
store=$(cd "$board" && realpath -m "$(jq -r '.store // "."' board.def.json)")

# Per answered challenge: what the folder gained (challenge, draw, report) and the store's response.
python3 - "$board" "$store" "$steps" >"$out/table.md" <<'PY'
import hashlib, json, os, subprocess, sys, time
board, store, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])

def members(path):
    """The members of a .wbundle: name -> bytes (docs/bundle.md: 24-byte header, one zstd frame)."""
    with open(path, "rb") as f:
        f.seek(24)
        payload = subprocess.run(["zstd", "-dc"], stdin=f, capture_output=True, check=True).stdout
    n, at, out = int.from_bytes(payload[0:4], "little"), 4, {}
    for _ in range(n):
        l = int.from_bytes(payload[at:at + 2], "little"); name = payload[at + 2:at + 2 + l].decode()
        d = int.from_bytes(payload[at + 2 + l:at + 10 + l], "little"); at += 10 + l
        out[name] = payload[at:at + d]; at += d
    return out

def zstd_timed(data):
    """(compressed size, seconds to compress, seconds to decompress) with zstd -3, the response container's level."""
    t0 = time.perf_counter()
    z = subprocess.run(["zstd", "-3", "-c"], input=data, capture_output=True, check=True).stdout
    t1 = time.perf_counter()
    subprocess.run(["zstd", "-dc"], input=z, capture_output=True, check=True)
    return len(z), t1 - t0, time.perf_counter() - t1

def digest(data):
    return hashlib.blake2b(data, digest_size=32).hexdigest()

rows, folder_max, seen_states, dup_states, dup_state_bytes = [], ("", 0), set(), 0, 0
stored_models = set()
for dirpath, _, files in os.walk(os.path.join(store, "weights")):
    for f in files:
        if f.endswith(".pt"): stored_models.add(digest(open(os.path.join(dirpath, f), "rb").read()))
seen_models, dup_models, dup_model_bytes = set(stored_models), 0, 0
for dirpath, _, files in os.walk(board):
    if "/.git" in dirpath: continue
    for f in files:
        p = os.path.join(dirpath, f); s = os.path.getsize(p)
        if s > folder_max[1]: folder_max = (os.path.relpath(p, board), s)
for run in sorted(os.listdir(os.path.join(board, "runs"))):
    rd = os.path.join(board, "runs", run)
    for rep in sorted(os.listdir(os.path.join(rd, "board-reports")) if os.path.isdir(os.path.join(rd, "board-reports")) else []):
        name = rep[:-5]
        added = sum(os.path.getsize(os.path.join(rd, sub, name + ".json")) for sub in ("challenges", "draws", "board-reports")
                    if os.path.exists(os.path.join(rd, sub, name + ".json")))
        doc = json.load(open(os.path.join(rd, "board-reports", rep)))
        ch = json.load(open(os.path.join(rd, "challenges", name + ".json")))
        k = len(ch["steps"]); cs = set(ch["steps"])
        resp = os.path.join(store, doc["response"]["path"])
        m = members(resp)
        for part in doc.get("parts", []):  # a response stored in parts: its states and model.pt each a stored file
            m[part["name"]] = open(os.path.join(store, part["path"]), "rb").read()
        stored = os.path.getsize(resp) + sum(part["bytes"] for part in doc.get("parts", []))
        st = {n: d for n, d in m.items() if n.startswith("state/")}
        raw = sum(len(d) for d in st.values())
        zs = [zstd_timed(d) for d in st.values()]
        z, zc, zd = sum(x[0] for x in zs), sum(x[1] for x in zs), sum(x[2] for x in zs)
        batches = sum(len(d) for n, d in m.items() if n.startswith("batch/"))
        model = len(m.get("model.pt", b""))
        rest = sum(len(d) for n, d in m.items()) - raw - batches - model
        before = len({s - 1 for s in cs})  # one start state per challenged step
        minimum = sum(1 for s in cs if s - 1 not in cs)  # start states that are not the end of another challenged step
        for d in st.values():
            h = digest(d)
            if h in seen_states: dup_states += 1; dup_state_bytes += len(d)
            seen_states.add(h)
        if "model.pt" in m:
            h = digest(m["model.pt"])
            if h in seen_models: dup_models += 1; dup_model_bytes += model
            seen_models.add(h)
        one = raw / max(len(st), 1)  # bytes of one state
        rows.append((run, name, k, added, stored, len(st), before, minimum, raw, before * one, z, zc, zd, batches, model, rest))

print("| run | challenge | k | folder gained (B) | per challenged step (B) | response in store (B) | states held / before / minimum | state bytes (before) | zstd -3 on states: bytes (ratio), s to compress / decompress | batches (B) | model.pt (B) | rest (B) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[3] / r[2]:.0f} | {r[4]} | {r[5]} / {r[6]} / {r[7]} | {r[8]} ({r[9]:.0f}) | "
          f"{r[10]} ({r[10] / max(r[8], 1):.2f}), {r[11]:.3f} / {r[12]:.3f} | {r[13]} | {r[14]} | {r[15]} |")
per_step = max(r[3] / r[2] for r in rows)
print()
print(f"Largest file in the folder: {folder_max[0]}, {folder_max[1]} bytes (goal: at most 1 MiB).")
print(f"Largest growth per answered challenge: {max(r[3] for r in rows)} bytes (goal: at most 65536).")
print(f"States held by two responses (stored once with parts, twice before): {dup_states} ({dup_state_bytes} bytes).")
print(f"Model files (model.pt) held by a response and already by another response or the store's weights/: {dup_models} ({dup_model_bytes} bytes).")
print(f"State bytes per answered challenge: {sum(r[8] for r in rows) / len(rows):,.0f} (before: {sum(r[9] for r in rows) / len(rows):,.0f}).")
# GPT-2 small: 124,439,808 parameters; a state = parameters + Adam m + v, float32.
params = 124_439_808
state = params * 4 * 3
k = 73  # a board challenge of the issue's example size
print()
print("| 124M-parameter run, k = 73 | bytes |")
print("|---|---:|")
print(f"| one state (parameters and both Adam moments, float32) | {state:,} |")
T = 10_000
runs = k * (T - k + 1) / T  # expected start states: challenged steps whose predecessor is not challenged
print(f"| states of one exact response: at most k, at least 1; expected k(T - k + 1)/T = {runs:.1f} for T = {T:,} | {k * state:,} (max), {runs * state:,.0f} (expected) |")
print(f"| released weights (parameters only) | {params * 4:,} |")
print(f"| folder gained per answered challenge (the demo's worst bytes per challenged step x k) | {per_step * k:,.0f} |")
PY
cat "$out/table.md"
[ -n "$out_md" ] && cp "$out/table.md" "$out_md"
exit 0
