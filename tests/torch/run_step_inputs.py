#!/usr/bin/python3
"""The inputs of golden_adamw.py for step S of a real wit run, from the run
alone (and its data file), with no wit code but the docs' recipes:

    /usr/bin/python3 tests/torch/run_step_inputs.py --run RUN --data data.txt --step S \\
        --order order.py --batch batch.json --info info.json

- batch.json: the records of step S, in batch order, found with the data
  order recipe of docs/manifest.md (`order.py`, extracted from the doc as
  printed: batch(run_id, seed, n, B, S) gives positions in the data tree, the
  sorted distinct record leaves); the data file is read with the `lines`
  reader (docs/records.md: split at line feeds, a final CR dropped, empty
  lines skipped); the run must have revealed its seed (RUN/seed).
- info.json: the manifest's optimizer (lr = the schedule's lr(S) in double,
  docs/manifest.md), context, pad 256 and byte tokens (vocab 257; for
  another vocabulary pad = vocab − 1 would need the `tokens` reader, which
  this helper does not read), weight decay for every parameter of two or more
  dimensions (matrices and embeddings; the built-in GPT's table in
  docs/training.md), and entry S's losses, mean loss and gradient norm as
  `wit-log show` prints them (binary32 values).

Then `golden_adamw.py --state-in RUN/ckpt/step-(S-1) --state-out
RUN/ckpt/step-S` compares the trainer's own step S with PyTorch's.
Exit 0, or 2 with one line on stderr.
"""
import argparse
import hashlib
import json
import math
import os
import struct
import subprocess
import sys


def fail(msg):
    print(f"run_step_inputs: error: {msg}", file=sys.stderr)
    sys.exit(2)


def lines_records(data):
    out = []
    for line in data.split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if line:
            out.append(line)
    return out


def H(*parts):
    h = hashlib.blake2b(digest_size=32)
    for p in parts:
        h.update(p)
    return h.digest()


def mth(leaves):  # RFC 6962 Merkle tree hash over leaf hashes
    if not leaves:
        return H(b"")
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return H(b"\x01", mth(leaves[:k]), mth(leaves[k:]))


def lr_at(mf, s):
    lr, warm = mf["optimizer"]["lr"], mf["schedule"]["warmup"]
    if warm > 0 and s <= warm:
        return lr * s / warm
    span = max(1, mf["steps"] - warm)
    t = min(1.0, (s - warm) / span)
    min_lr = lr * mf["schedule"]["min_lr_ratio"]
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * t))


def log_entry(run, i):
    try:
        out = subprocess.run(["wit-log", "show", run, "--from", str(i), "--to", str(i)],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"wit-log show {run} --from {i}: {e}")
    return json.loads(out.splitlines()[0])


def safetensors_header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))


def main():
    ap = argparse.ArgumentParser()
    for o in ("--run", "--data", "--order", "--batch", "--info"):
        ap.add_argument(o, required=True)
    ap.add_argument("--step", type=int, required=True)
    a = ap.parse_args()
    try:
        mf = json.load(open(os.path.join(a.run, "run.json")))
        seed = bytes.fromhex(open(os.path.join(a.run, "seed")).read().strip())
        data = open(a.data, "rb").read()
    except OSError as e:
        fail(f"{e.filename}: {e.strerror} (a finished run and its data file are needed)")
    if mf["data"]["reader"]["kind"] != "lines":
        fail(f"only the lines reader is read here, the run has {mf['data']['reader']['kind']}")
    recs = lines_records(data)
    by_leaf = {hashlib.blake2b(b"\x00" + r, digest_size=32).digest(): r for r in recs}
    tree = sorted(by_leaf)
    if len(tree) != mf["data"]["n"]:
        fail(f"the data file holds {len(tree)} distinct records, the run {mf['data']['n']}")
    env = {}
    exec(open(a.order).read(), env)
    genesis, entry = log_entry(a.run, 0), log_entry(a.run, a.step)
    if entry.get("step") != a.step:
        fail(f"the log has no step {a.step}")
    pos = env["batch"](bytes.fromhex(genesis["run_id"]), seed, len(tree), mf["batch_size"], a.step)
    records = [by_leaf[tree[p]] for p in pos]
    if mth([tree[p] for p in pos]).hex() != entry["batch_root"]:
        fail(f"the recipe's batch of step {a.step} does not have the logged batch root")
    hdr = safetensors_header(os.path.join(a.run, "ckpt", "step-%06d.safetensors" % a.step))
    params = sorted((k for k in hdr if k != "__metadata__" and not k.startswith("adam.") and k != "wit.step"),
                    key=lambda s: s.encode())
    opt = mf["optimizer"]
    info = {"lr": lr_at(mf, a.step), "beta1": opt["beta1"], "beta2": opt["beta2"], "eps": opt["eps"],
            "weight_decay": opt["weight_decay"], "grad_clip": opt["grad_clip"],
            "context": mf["model"]["context"], "pad": 256, "tokens": "bytes",
            "decay": {k: len(hdr[k]["shape"]) >= 2 for k in params},
            "losses": entry["losses"], "mean_loss": entry["mean_loss"], "grad_norm": entry["grad_norm"]}
    if struct.unpack("<f", struct.pack("<f", info["lr"]))[0] != struct.unpack("<f", struct.pack("<f", entry["lr"]))[0]:
        fail(f"lr({a.step}) = {info['lr']} by the schedule, the log has {entry['lr']}")
    with open(a.batch, "w") as f:
        json.dump({"records": [r.hex() for r in records]}, f)
    with open(a.info, "w") as f:
        json.dump(info, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
