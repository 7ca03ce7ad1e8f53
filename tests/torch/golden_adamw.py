#!/usr/bin/python3
"""Golden test, PyTorch side: wit's training step against torch.optim.AdamW.

    /usr/bin/python3 tests/torch/golden_adamw.py --module M.pt --state-in IN.safetensors \\
        --batch BATCH.json --info INFO.json --state-out OUT.safetensors [--max-ulps N]
    /usr/bin/python3 tests/torch/golden_adamw.py --self-test

Recomputes one wit training step (docs/training.md, "The training step") with
PyTorch itself and compares it with OUT, the state wit's C++ step produced
from IN on BATCH:

- M.pt: the run's TorchScript module (torch.jit.load, eval()); its stored
  parameter values are replaced by IN's.
- IN/OUT.safetensors: wit checkpoints: parameters under their own names, the
  moments as adam.m.NAME / adam.v.NAME, the step as wit.step I64[1].
- BATCH.json: {"records": ["<hex of record bytes>", ...]}, in batch order.
- INFO.json (written by the C++ side): lr (the double η = lr(t) the step used,
  not the binary32 the log holds), beta1, beta2, eps, weight_decay, grad_clip,
  context, pad, tokens ("bytes": a byte is a token; "u16": little-endian
  uint16 ids), decay {name: bool}, and the C++ step's losses (per example),
  mean_loss and grad_norm.

The step: rows (one record per row, [pad, t0, t1, ...] cut or padded to
context; targets the next tokens, then pad as the end target; mask 1 for
t <= len and t < context), loss = mean over rows of the masked mean nll,
grads = autograd.grad(loss, parameters in name order), the gradient norm in
double, wit's clipping (g *= clip / (norm + 1e-6) when norm > clip > 0), then
one torch.optim.AdamW(foreach=False) step with a decay group and a no-decay
group (weight_decay 0) and the state set from IN (step, exp_avg, exp_avg_sq).
One thread (torch.set_num_threads(1), and OPENBLAS_NUM_THREADS=1 unless
set: the C++ side must run the same way); the TorchScript graph executor's
optimisation off (with it on,
calls after the first use symbolic autodiff and wte's gradient sums its two
uses in another order, so a module's second call differs from its first: wit
must run the same way for training and replay to agree).

Prints a table (tensor, max |diff| in float32 ulps, differing elements) and
`golden: bit-identical` or `golden: max N ulps in TENSOR`. Exit 0 when the
max is at most --max-ulps (default 0), 1 when larger, 2 on bad input (one
line on stderr).
"""
import argparse
import json
import math
import mmap
import os
import struct
import sys

PROG = "golden_adamw"
# OpenBLAS (Debian's LibTorch BLAS) picks its own thread count, which
# torch.set_num_threads does not change, and a GEMM split over threads sums in
# another order: one thread unless the caller says otherwise (wit's tests run
# the C++ tools with OPENBLAS_NUM_THREADS=1 too). Read when torch loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


class BadInput(Exception):
    pass


# ---------------------------------------------------------------- safetensors

_DTYPES = {}  # safetensors name -> (torch dtype, size), filled once torch is imported


def _init_dtypes(torch):
    _DTYPES.update({
        "F64": (torch.float64, 8), "F32": (torch.float32, 4), "F16": (torch.float16, 2),
        "BF16": (torch.bfloat16, 2), "I64": (torch.int64, 8), "I32": (torch.int32, 4),
        "I16": (torch.int16, 2), "I8": (torch.int8, 1), "U8": (torch.uint8, 1), "BOOL": (torch.bool, 1),
    })


def read_safetensors(path):
    """{name: tensor} (views onto a private copy-on-write map of the file;
    clone what you modify). Checks what reading needs, not every rule of
    docs/safetensors.md (wit's own reader does that)."""
    import torch
    try:
        f = open(path, "rb")
    except OSError as e:
        raise BadInput(f"cannot open {path}: {e.strerror}")
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise BadInput(f"{path}: not a safetensors file (shorter than 8 bytes)")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    (n,) = struct.unpack("<Q", mm[:8])
    if n > size - 8:
        raise BadInput(f"{path}: not a safetensors file (header length {n} exceeds the file)")
    try:
        hdr = json.loads(bytes(mm[8:8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BadInput(f"{path}: not a safetensors file (header is not json)")
    if not isinstance(hdr, dict):
        raise BadInput(f"{path}: not a safetensors file (header is not a json object)")
    base, data_len = 8 + n, size - 8 - n
    out = {}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        try:
            dtype, esize = _DTYPES[t["dtype"]]
            shape = [int(d) for d in t["shape"]]
            b, e = (int(x) for x in t["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise BadInput(f"{path}: tensor {json.dumps(name)}: bad entry {json.dumps(t)[:80]}")
        numel = math.prod(shape)
        if not 0 <= b <= e <= data_len or e - b != numel * esize:
            raise BadInput(f"{path}: tensor {json.dumps(name)}: data_offsets [{b}, {e}] do not fit its shape or the file")
        if numel == 0:
            out[name] = torch.empty(shape, dtype=dtype)
        else:
            out[name] = torch.frombuffer(mm, dtype=dtype, count=numel, offset=base + b).view(shape)
    return out


def write_safetensors(path, tensors):
    """wit's canonical layout: compact header in name order, padded with spaces
    to an 8-byte boundary, data in name order."""
    import torch
    rev = {v[0]: k for k, v in _DTYPES.items()}
    names = sorted(tensors, key=lambda s: s.encode())
    parts, off, blobs = [], 0, []
    for name in names:
        t = tensors[name].detach().contiguous()
        raw = t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        parts.append(json.dumps(name) + ':{"dtype":"%s","shape":%s,"data_offsets":[%d,%d]}'
                     % (rev[t.dtype], json.dumps(list(t.shape)).replace(" ", ""), off, off + len(raw)))
        off += len(raw)
        blobs.append(raw)
    hdr = ("{" + ",".join(parts) + "}").encode()
    hdr += b" " * ((-(8 + len(hdr))) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


# ---------------------------------------------------------------- the step

def name_key(s):
    return s.encode()


def is_param(name):
    return not name.startswith("adam.") and name != "wit.step"


def decode_records(batch, tokens):
    recs = batch.get("records") if isinstance(batch, dict) else None
    if not isinstance(recs, list) or not recs:
        raise BadInput('batch: want {"records": ["<hex>", ...]} with at least one record')
    out = []
    for i, h in enumerate(recs):
        try:
            b = bytes.fromhex(h)
        except (TypeError, ValueError):
            raise BadInput(f"batch: record {i} is not hex")
        if tokens == "bytes":
            out.append(list(b))
        else:
            if len(b) % 2:
                raise BadInput(f"batch: record {i} has an odd number of bytes ({len(b)}) for u16 tokens")
            out.append([x[0] for x in struct.iter_unpack("<H", b)])
    return out


def make_rows(records, context, pad):
    """wit's rows (lib/torch/wit/model/model.cpp make_rows): inputs, targets [B, context]
    int64 and mask [B, context] float32."""
    import torch
    B = len(records)
    idx = torch.full((B, context), pad, dtype=torch.long)
    tgt = torch.full((B, context), pad, dtype=torch.long)
    mask = torch.zeros((B, context), dtype=torch.float32)
    for b, r in enumerate(records):
        n = min(len(r), context)  # ℓ
        k = min(n, context - 1)  # inputs after the start token
        if k:
            idx[b, 1:1 + k] = torch.tensor(r[:k], dtype=torch.long)
        if n:
            tgt[b, :n] = torch.tensor(r[:n], dtype=torch.long)
        mask[b, :min(n + 1, context)] = 1.0
    return idx, tgt, mask


def load_module(path):
    import torch
    try:
        m = torch.jit.load(path, map_location="cpu")
    except Exception as e:  # torch raises RuntimeError/ValueError with multi-line text
        raise BadInput(f"{path}: not a TorchScript module ({str(e).splitlines()[0] if str(e) else type(e).__name__})")
    m.eval()
    return m


def set_params(module, state_in):
    """Gives the module IN's parameter values (fresh contiguous tensors: a slim
    module's stride-0 parameters cannot be copied into). Returns the
    parameters in name order, and their names."""
    import torch
    params = dict(module.named_parameters())
    want = sorted((k for k in state_in if is_param(k)), key=name_key)
    if sorted(params, key=name_key) != want:
        missing = [k for k in want if k not in params] + [k for k in params if k not in state_in]
        raise BadInput(f"the module's parameters and the state's differ (first: {missing[0] if missing else '?'})")
    for k in want:
        p, v = params[k], state_in[k]
        if p.dtype != torch.float32 or v.dtype != torch.float32:
            raise BadInput(f"parameter {k}: want float32 in the module and the state")
        if tuple(p.shape) != tuple(v.shape):
            raise BadInput(f"parameter {k}: module shape {list(p.shape)}, state shape {list(v.shape)}")
        with torch.no_grad():
            p.set_(v.clone().contiguous())
    return [params[k] for k in want], want


def golden_step(module, state_in, records, info):
    """One wit step in PyTorch. Returns (state_out, per-example losses [B]
    float32, mean loss float32 tensor, grad norm as a double)."""
    import torch
    params, names = set_params(module, state_in)
    for k in names:
        for mom in ("adam.m.", "adam.v."):
            t = state_in.get(mom + k)
            if t is None or t.dtype != torch.float32 or tuple(t.shape) != tuple(state_in[k].shape):
                raise BadInput(f"state: {mom + k} is missing or not float32 of {k}'s shape")
    step = state_in.get("wit.step")
    if step is None or step.dtype != torch.int64 or step.numel() != 1:
        raise BadInput("state: wit.step is missing or not I64[1]")
    step_in = int(step.reshape(-1)[0])
    decay = info["decay"]
    if sorted(decay, key=name_key) != names:
        raise BadInput("info: decay must name exactly the module's parameters")

    idx, tgt, mask = make_rows(records, info["context"], info["pad"])
    try:
        logits = module(idx)
    except Exception as e:
        raise BadInput(f"the module's forward failed on the rows: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
    B, T = idx.shape
    if logits.dim() != 3 or tuple(logits.shape[:2]) != (B, T) or logits.dtype != torch.float32:
        raise BadInput(f"forward returned {logits.dtype} {list(logits.shape)}, want float32 [{B}, {T}, vocab]")
    if int(max(idx.max(), tgt.max())) >= logits.shape[2]:
        raise BadInput(f"a token or pad is >= the module's vocabulary {logits.shape[2]}")
    nll = -torch.log_softmax(logits, -1).gather(2, tgt.unsqueeze(2)).squeeze(2)
    per_example = (nll * mask).sum(1) / mask.sum(1)
    loss = per_example.mean()
    grads = torch.autograd.grad([loss], params)

    with torch.no_grad():
        sq = 0.0
        for g in grads:
            sq += g.to(torch.float64).square().sum().item()
        norm = math.sqrt(sq)
        clip = float(info["grad_clip"])
        if clip > 0 and norm > clip:
            coef = clip / (norm + 1e-6)
            for g in grads:
                g.mul_(coef)

    groups = [{"params": [p for p, k in zip(params, names) if decay[k]], "weight_decay": float(info["weight_decay"])},
              {"params": [p for p, k in zip(params, names) if not decay[k]], "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    opt = torch.optim.AdamW(groups, lr=float(info["lr"]), betas=(float(info["beta1"]), float(info["beta2"])),
                            eps=float(info["eps"]), foreach=False)
    for p, k, g in zip(params, names, grads):
        p.grad = g
        opt.state[p] = {"step": torch.tensor(float(step_in)),
                        "exp_avg": state_in["adam.m." + k].clone().contiguous(),
                        "exp_avg_sq": state_in["adam.v." + k].clone().contiguous()}
    opt.step()

    out = {"wit.step": torch.tensor([step_in + 1], dtype=torch.int64)}
    for p, k in zip(params, names):
        out[k] = p.detach()
        out["adam.m." + k] = opt.state[p]["exp_avg"]
        out["adam.v." + k] = opt.state[p]["exp_avg_sq"]
    return out, per_example.detach(), loss.detach(), norm


# ---------------------------------------------------------------- comparison

def ulp_diff(a, b):
    """(max |a − b| in float32 ulps, differing elements) of two float32
    tensors: the bit patterns mapped onto one monotonic integer line (−0 and
    +0 meet there, but count as 1 ulp apart, so that 0 ulps means the same
    bits); a NaN against anything but the same bits counts as infinitely
    far."""
    import torch
    ia = a.contiguous().view(-1).view(torch.int32).to(torch.int64)
    ib = b.contiguous().view(-1).view(torch.int32).to(torch.int64)
    diff = ia != ib
    n = int(diff.sum())
    if n == 0:
        return 0, 0
    fa, fb = a.reshape(-1)[diff], b.reshape(-1)[diff]
    if bool(torch.isnan(fa).any() | torch.isnan(fb).any()):
        return math.inf, n
    ka, kb = ia[diff], ib[diff]
    ka = torch.where(ka < 0, -(ka & 0x7FFFFFFF), ka)
    kb = torch.where(kb < 0, -(kb & 0x7FFFFFFF), kb)
    return int((ka - kb).abs().clamp(min=1).max()), n


def f32(x):
    import torch
    return torch.tensor([x], dtype=torch.float64).to(torch.float32)


def compare(ours, out, per_example, mean_loss, norm, info):
    """Rows (name, max ulps, differing, total), ours against OUT and INFO."""
    import torch
    rows = []
    if sorted(out, key=name_key) != sorted(ours, key=name_key):
        extra = [k for k in out if k not in ours] + [k for k in ours if k not in out]
        raise BadInput(f"OUT's tensors are not the state's (first difference: {extra[0]})")
    for k in sorted(ours, key=name_key):
        a, b = ours[k], out[k]
        if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
            raise BadInput(f"OUT: tensor {k} is {b.dtype} {list(b.shape)}, want {a.dtype} {list(a.shape)}")
        if a.dtype == torch.int64:  # wit.step: the difference in steps
            rows.append((k, int((a - b).abs().max()), int((a != b).sum()), a.numel()))
        else:
            u, d = ulp_diff(a, b)
            rows.append((k, u, d, a.numel()))
    losses = info["losses"]
    if not isinstance(losses, list) or len(losses) != per_example.numel():
        raise BadInput(f"info: losses must be {per_example.numel()} numbers")
    u, d = ulp_diff(per_example, torch.tensor([float(x) for x in losses], dtype=torch.float64).to(torch.float32))
    rows.append(("info.losses", u, d, len(losses)))
    u, d = ulp_diff(mean_loss.reshape(1), f32(float(info["mean_loss"])))
    rows.append(("info.mean_loss", u, d, 1))
    u, d = ulp_diff(f32(norm), f32(float(info["grad_norm"])))
    rows.append(("info.grad_norm", u, d, 1))
    return rows


def report(rows, max_ulps, quiet=False):
    import torch
    w = max(len(r[0]) for r in rows)
    print(f"golden: torch {torch.__version__}, {torch.get_num_threads()} thread, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, graph executor optimize "
          f"{torch._C._get_graph_executor_optimize()}")
    print(f"{'tensor':<{w}}  {'max ulps':>9}  {'differ':>10}  {'of':>10}")
    for name, u, d, n in rows:
        if quiet and d == 0:
            continue
        print(f"{name:<{w}}  {str(u):>9}  {d:>10}  {n:>10}")
    worst = max(rows, key=lambda r: (r[1], r[2]))
    if worst[1] == 0:
        print("golden: bit-identical")
    else:
        print(f"golden: max {worst[1]} ulps in {worst[0]}")
    return 0 if worst[1] <= max_ulps else 1


# ---------------------------------------------------------------- CLI

INFO_KEYS = {"lr": (int, float), "beta1": (int, float), "beta2": (int, float), "eps": (int, float),
             "weight_decay": (int, float), "grad_clip": (int, float), "context": int, "pad": int,
             "tokens": str, "decay": dict, "losses": list, "mean_loss": (int, float), "grad_norm": (int, float)}


def read_json(path, what):
    try:
        with open(path, "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except OSError as e:
        raise BadInput(f"cannot read {what} {path}: {e.strerror}")
    except (UnicodeDecodeError, ValueError):
        raise BadInput(f"{what} {path} is not json")


def check_info(info):
    if not isinstance(info, dict):
        raise BadInput("info: not a json object")
    for k, ty in INFO_KEYS.items():
        if k not in info or isinstance(info[k], bool) or not isinstance(info[k], ty):
            raise BadInput(f"info: missing or mistyped field {k}")
    if info["tokens"] not in ("bytes", "u16"):
        raise BadInput('info: tokens must be "bytes" or "u16"')
    if info["context"] < 1 or info["pad"] < 0:
        raise BadInput("info: context must be at least 1 and pad not negative")
    if not all(isinstance(v, bool) for v in info["decay"].values()):
        raise BadInput("info: decay values must be true or false")


def setup_torch():
    import torch
    torch.set_num_threads(1)
    torch._C._set_graph_executor_optimize(False)
    _init_dtypes(torch)
    return torch


def run(a):
    setup_torch()
    info = read_json(a.info, "info")
    check_info(info)
    records = decode_records(read_json(a.batch, "batch"), info["tokens"])
    module = load_module(a.module)
    state_in = read_safetensors(a.state_in)
    out = read_safetensors(a.state_out)
    ours, per_example, mean_loss, norm = golden_step(module, state_in, records, info)
    rows = compare(ours, out, per_example, mean_loss, norm, info)
    return report(rows, a.max_ulps, a.quiet)


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description="wit's training step against torch.optim.AdamW")
    ap.add_argument("--module")
    ap.add_argument("--state-in")
    ap.add_argument("--batch")
    ap.add_argument("--info")
    ap.add_argument("--state-out")
    ap.add_argument("--max-ulps", type=int, default=0)
    ap.add_argument("--quiet", action="store_true", help="print only the rows that differ")
    ap.add_argument("--self-test", action="store_true",
                    help="check this script without wit: its own step must compare bit-identical, a 1-ulp nudge must not")
    a = ap.parse_args(argv)
    try:
        if a.self_test:
            return self_test()
        need = [o for o in ("module", "state_in", "batch", "info", "state_out") if getattr(a, o) is None]
        if need:
            raise BadInput("missing --" + need[0].replace("_", "-"))
        if a.max_ulps < 0:
            raise BadInput("--max-ulps must not be negative")
        return run(a)
    except BadInput as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2


# ---------------------------------------------------------------- self-test

def self_test():
    """Without the C++ side: the script's own step written as OUT must be
    bit-identical; one element nudged by one ulp must give 1 ulp (exit 1 at
    --max-ulps 0, exit 0 at 1); wit's C++ op order equals torch.optim.AdamW;
    the rows match docs/training.md's example; bad input exits 2."""
    import contextlib
    import io
    import tempfile
    torch = setup_torch()
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "examples"))
    import gpt2_module

    failures = []

    def expect(cond, what):
        print(("ok: " if cond else "FAIL: ") + what)
        if not cond:
            failures.append(what)

    # Rows: docs/training.md's "hi" with T_ctx = 5, a truncated record, an empty one.
    idx, tgt, mask = make_rows([list(b"hi"), list(b"abcdefg"), [], list(b"wxyz")], 5, 256)
    expect(idx.tolist() == [[256, 104, 105, 256, 256], [256, 97, 98, 99, 100], [256] * 5, [256, 119, 120, 121, 122]]
           and tgt.tolist() == [[104, 105, 256, 256, 256], [97, 98, 99, 100, 101], [256] * 5, [119, 120, 121, 122, 256]]
           and mask.tolist() == [[1, 1, 1, 0, 0], [1] * 5, [1, 0, 0, 0, 0], [1] * 5],
           "rows as docs/training.md (start/end pad, truncation, empty record, exactly context-1 tokens)")
    idx, tgt, mask = make_rows([[7]], 1, 9)
    expect(idx.tolist() == [[9]] and tgt.tolist() == [[7]] and mask.tolist() == [[1]], "rows with context 1")

    tmp = tempfile.mkdtemp(prefix="golden-adamw.")
    g = torch.Generator().manual_seed(1234)

    def make_case(name, n_layer, n_head, d, ctx, vocab, records, tokens, pad, clip, wd, step_in, slim=False):
        model = gpt2_module.build(n_layer, n_head, d, ctx, vocab, slim=slim).eval()
        path = os.path.join(tmp, name + ".pt")
        torch.jit.script(model).save(path)
        st = {"wit.step": torch.tensor([step_in], dtype=torch.int64)}
        for k, p in model.named_parameters():
            st[k] = (torch.randn(p.shape, generator=g) * 0.05).float()
            st["adam.m." + k] = (torch.randn(p.shape, generator=g) * 1e-3).float() if step_in else torch.zeros(p.shape)
            st["adam.v." + k] = (torch.rand(p.shape, generator=g) * 1e-5).float() if step_in else torch.zeros(p.shape)
        fin = os.path.join(tmp, name + ".in.safetensors")
        write_safetensors(fin, st)
        if tokens == "bytes":
            hexes = [bytes(r).hex() for r in records]
        else:
            hexes = [b"".join(struct.pack("<H", t) for t in r).hex() for r in records]
        with open(os.path.join(tmp, name + ".batch.json"), "w") as f:
            json.dump({"records": hexes}, f)
        info = {"lr": 0.003 * 0.7316, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": wd,
                "grad_clip": clip, "context": ctx, "pad": pad, "tokens": tokens,
                "decay": {k: (p.dim() >= 2) for k, p in model.named_parameters()}}
        ours, pe, ml, norm = golden_step(load_module(path), read_safetensors(fin), decode_records({"records": hexes}, tokens), info)
        info.update(losses=[float(x) for x in pe], mean_loss=float(ml), grad_norm=float(f32(norm)))
        with open(os.path.join(tmp, name + ".info.json"), "w") as f:
            json.dump(info, f)
        write_safetensors(os.path.join(tmp, name + ".out.safetensors"), ours)
        return path, st, ours, info, norm

    def cli(name, out=None, max_ulps=0, info=None):
        args = ["--module", os.path.join(tmp, name + ".pt"), "--state-in", os.path.join(tmp, name + ".in.safetensors"),
                "--batch", os.path.join(tmp, name + ".batch.json"),
                "--info", info or os.path.join(tmp, name + ".info.json"),
                "--state-out", out or os.path.join(tmp, name + ".out.safetensors"), "--max-ulps", str(max_ulps)]
        so, se = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
            rc = main(args)
        return rc, so.getvalue(), se.getvalue()

    rnd = torch.Generator().manual_seed(7)
    byte_recs = [list(torch.randint(0, 256, (int(n),), generator=rnd).tolist()) for n in (0, 3, 15, 16, 40)]
    cases = [
        # name, sizes, records, tokens, pad, grad_clip, weight_decay, step_in
        ("bytes", (2, 2, 32, 16, 257), byte_recs, "bytes", 256, 1e-3, 0.1, 5),  # clipping active
        ("noclip", (1, 2, 16, 16, 257), byte_recs[:3], "bytes", 256, 1e9, 0.0, 0),  # first step, no decay
        ("u16", (1, 1, 16, 12, 1000), [[999, 3, 998, 17], list(range(30)), [5]], "u16", 999, 1.0, 0.05, 2),
        ("slim", (1, 2, 16, 16, 257), byte_recs[1:4], "bytes", 256, 1.0, 0.1, 3),  # stride-0 parameters in the file
    ]
    for name, size, recs, tokens, pad, clip, wd, step_in in cases:
        path, st, ours, info, norm = make_case(name, *size, recs, tokens, pad, clip, wd, step_in, slim=name == "slim")
        rc, so, se = cli(name)
        expect(rc == 0 and "golden: bit-identical" in so, f"{name}: its own step compares bit-identical (exit {rc})")
        if name == "bytes":
            expect(norm > clip, f"{name}: clipping is exercised (norm {norm:.3g} > {clip})")
            print(so, end="")

    # wit's C++ op order (lib/torch/wit/train/step.cpp) gives torch.optim.AdamW's bits.
    path, st, ours, info, norm = make_case("order", 1, 2, 16, 16, 257, byte_recs, "bytes", 256, 0.5, 0.1, 4)
    module = load_module(path)
    params, names = set_params(module, st)
    idx, tgt, mask = make_rows(byte_recs, 16, 256)
    nll = -torch.log_softmax(module(idx), -1).gather(2, tgt.unsqueeze(2)).squeeze(2)
    grads = torch.autograd.grad([((nll * mask).sum(1) / mask.sum(1)).mean()], params)
    same = True
    with torch.no_grad():
        sq = sum(gr.to(torch.float64).square().sum().item() for gr in grads)
        nrm = math.sqrt(sq)
        if nrm > 0.5:
            for gr in grads:
                gr.mul_(0.5 / (nrm + 1e-6))
        t, lr, b1, b2 = 5, info["lr"], 0.9, 0.95
        bc1, bc2 = 1.0 - b1 ** float(t), 1.0 - b2 ** float(t)
        for p, k, gr in zip(params, names, grads):
            m, v = st["adam.m." + k].clone(), st["adam.v." + k].clone()
            m.mul_(b1).add_(gr, alpha=1.0 - b1)
            v.mul_(b2).addcmul_(gr, gr, value=1.0 - b2)
            if info["decay"][k]:
                p.mul_(1.0 - lr * 0.1)
            denom = (v.sqrt() / math.sqrt(bc2)).add_(1e-8)
            p.addcdiv_(m, denom, value=-lr / bc1)
            same = same and torch.equal(p, ours[k]) and torch.equal(m, ours["adam.m." + k]) and torch.equal(v, ours["adam.v." + k])
    expect(same, "wit's C++ AdamW op order (moments, decay, update) equals torch.optim.AdamW(foreach=False) bit for bit")

    # One element nudged by one ulp (towards +inf): 1 ulp, fails at 0, passes at 1.
    _, st, ours, info, _ = make_case("nudge", 1, 2, 16, 16, 257, byte_recs, "bytes", 256, 1.0, 0.1, 1)
    bad = {k: v.clone() for k, v in ours.items()}
    flat = bad["adam.v.h.0.mlp.c_fc.weight"].view(-1)
    flat[5] = torch.nextafter(flat[5], torch.tensor(math.inf))
    write_safetensors(os.path.join(tmp, "nudged.safetensors"), bad)
    rc, so, se = cli("nudge", out=os.path.join(tmp, "nudged.safetensors"))
    line = [x for x in so.splitlines() if x.startswith("adam.v.h.0.mlp.c_fc.weight ")]
    expect(rc == 1 and "golden: max 1 ulps in adam.v.h.0.mlp.c_fc.weight" in so and line and line[0].split()[1:3] == ["1", "1"],
           f"a 1-ulp nudge: reported as 1 ulp in 1 element, exit 1 at --max-ulps 0 (exit {rc})")
    rc, so, se = cli("nudge", out=os.path.join(tmp, "nudged.safetensors"), max_ulps=1)
    expect(rc == 0, f"the same at --max-ulps 1: exit 0 (exit {rc})")
    # A sign change across zero counts the ulps through zero.
    a, b = torch.tensor([1e-45, -0.0, 1.0]), torch.tensor([-1e-45, 0.0, 1.0])
    expect(ulp_diff(a, b) == (2, 2) and ulp_diff(a[1:], b[1:]) == (1, 1),
           f"ulps across zero: -denorm..+denorm is 2, -0 vs +0 is 1 ulp ({ulp_diff(a, b)}, {ulp_diff(a[1:], b[1:])})")
    # A nudged logged loss.
    with open(os.path.join(tmp, "nudge.info.json")) as f:
        inf2 = json.load(f)
    inf2["grad_norm"] = float(torch.nextafter(f32(inf2["grad_norm"]), torch.tensor([0.0], dtype=torch.float32)))
    with open(os.path.join(tmp, "nudge2.info.json"), "w") as f:
        json.dump(inf2, f)
    rc, so, se = cli("nudge", info=os.path.join(tmp, "nudge2.info.json"))
    expect(rc == 1 and "golden: max 1 ulps in info.grad_norm" in so, f"a 1-ulp grad_norm: exit 1 (exit {rc})")

    # Bad input: exit 2 and one line.
    def bad_case(what, **kw):
        rc, so, se = cli("nudge", **kw)
        expect(rc == 2 and se.count("\n") == 1 and se.startswith(PROG + ": error: "), f"bad input ({what}): exit 2, one line: {se.strip()}")
    bad_case("missing OUT", out=os.path.join(tmp, "nope.safetensors"))
    with open(os.path.join(tmp, "junk"), "wb") as f:
        f.write(b"\x05\x00\x00\x00\x00\x00\x00\x00{junk")
    bad_case("OUT not safetensors", out=os.path.join(tmp, "junk"))
    bad_case("INFO not json", info=os.path.join(tmp, "junk"))
    less = {k: v for k, v in ours.items() if k != "adam.m.wte.weight"}
    write_safetensors(os.path.join(tmp, "less.safetensors"), less)
    bad_case("OUT lacks a tensor", out=os.path.join(tmp, "less.safetensors"))
    inf3 = dict(inf2)
    del inf3["decay"]
    with open(os.path.join(tmp, "nodecay.info.json"), "w") as f:
        json.dump(inf3, f)
    bad_case("INFO without decay", info=os.path.join(tmp, "nodecay.info.json"))

    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"self-test: {len(failures)} failed")
        return 1
    print("self-test: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
