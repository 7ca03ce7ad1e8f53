#!/usr/bin/python3
"""A GPT-2-style decoder as a TorchScript file for `wit-train --model FILE.pt`.

    /usr/bin/python3 examples/gpt2_module.py --n-layer 2 --n-head 2 --d-model 64 \\
        --context 64 --vocab 257 -o small.pt
    /usr/bin/python3 examples/gpt2_module.py --preset gpt2-small -o gpt2-small.pt
    /usr/bin/python3 examples/gpt2_module.py --preset gpt2-small --slim -o gpt2-small.pt

Run it with Debian's /usr/bin/python3 (python3-torch, PyTorch 1.13.1, the same
version as libtorch-dev; scripts/install-deps.sh installs it).

The module follows wit's model contract (docs/model.md):

- forward(tokens: int64 [B, L]) -> float32 logits [B, L, vocab], L <= context;
- no dropout and no other randomness (wit calls eval() anyway);
- every parameter float32; the output head is tied to wte *functionally*
  (logits = x @ wte.weight^T), not by a second module sharing the tensor;
- no buffers: the causal mask is computed in forward.

Parameter names are nanoGPT's without its `transformer.` prefix and without
`lm_head` (tied), i.e. Hugging Face GPT-2's names minus `transformer.`:

    wte.weight [vocab, D]          wpe.weight [context, D]
    h.N.ln_1.weight/bias [D]       h.N.attn.c_attn.weight [3D, D], .bias [3D]
    h.N.attn.c_proj.weight [D, D]  h.N.ln_2.weight/bias [D]
    h.N.mlp.c_fc.weight [4D, D]    h.N.mlp.c_proj.weight [D, 4D]
    ln_f.weight/bias [D]

Linear weights are [out, in] (torch.nn.Linear), so a Hugging Face checkpoint
(whose Conv1D weights are [in, out]) needs its c_attn/c_proj/c_fc weights
transposed to load into this module. GELU is the exact (erf) form, as in
wit's built-in GPT (Hugging Face's GPT-2 uses the tanh approximation), and
LayerNorm's eps is 1e-5. The forward pass performs the same tensor
operations in the same order as wit's built-in GPT (lib/torch/wit/model/model.cpp),
so the two differ only in parameter names; --names wit gives the module
wit's own names (wte, wpe, h.N.ln1, h.N.attn.qkv, h.N.attn.proj, h.N.ln2,
h.N.mlp.fc, h.N.mlp.proj, lnf), with which PyTorch reproduces a built-in
run's steps bit for bit (tests/cli/torch_golden.sh).

wit regenerates every parameter from the run's committed seed: the values
stored in the file are never used. --slim exploits that: each parameter is
saved as one float expanded to its shape (stride 0), so the file holds the
architecture, the names, shapes and dtypes, and a few bytes per tensor (a
124M-parameter GPT-2 small is kilobytes instead of ~500 MB). Forward on a slim
module runs and has the right shape; its values are meaningless until the
parameters are replaced (wit does that; in Python, assign new tensors or use
`p.set_(...)`: an in-place copy_ into a stride-0 tensor is refused).

The file's bytes are reproducible: the same arguments, -o name and script
path give the same file (the script re-runs itself under PYTHONHASHSEED=0,
since TorchScript writes module constants in set order; the archive's inner
folder is named after the file, and its debug tables hold this script's
path).
"""
import argparse
import math
import os
import shutil
import sys
import tempfile
import time


def reproducible() -> None:
    """TorchScript writes a module's constants in Python set order, which
    depends on string hashing: re-run under PYTHONHASHSEED=0 so that the same
    arguments give the same file bytes (the run binds the file's hash)."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable] + sys.argv)


if __name__ == "__main__":
    reproducible()  # before torch is imported, so that it loads once

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

PRESETS = {
    # GPT-2 small: 124,439,808 parameters (with wpe; the head is tied to wte).
    "gpt2-small": dict(n_layer=12, n_head=12, d_model=768, context=1024, vocab=50257),
    "gpt2-medium": dict(n_layer=24, n_head=16, d_model=1024, context=1024, vocab=50257),
}


def causal_attention(qkv: torch.Tensor, n_head: int, scale: float) -> torch.Tensor:
    """Multi-head causal self-attention from the fused q, k, v projection
    [B, T, 3D]; returns the heads merged back, [B, T, D], before c_proj."""
    B, T, D = qkv.size(0), qkv.size(1), qkv.size(2) // 3
    hd = D // n_head
    parts = qkv.chunk(3, -1)
    q = parts[0].view(B, T, n_head, hd).transpose(1, 2)
    k = parts[1].view(B, T, n_head, hd).transpose(1, 2)
    v = parts[2].view(B, T, n_head, hd).transpose(1, 2)
    # The causal mask is computed here, never stored (wit refuses large buffers).
    causal = torch.ones(T, T, dtype=torch.bool, device=qkv.device).triu(1)
    att = torch.matmul(q, k.transpose(-2, -1)).mul(scale).masked_fill(causal, float("-inf")).softmax(-1)
    return torch.matmul(att, v).transpose(1, 2).contiguous().view(B, T, D)


class Attention(nn.Module):
    def __init__(self, d_model: int, n_head: int, device=None):
        super().__init__()
        assert d_model % n_head == 0, "n_head must divide d_model"
        self.n_head = n_head
        self.scale = 1.0 / math.sqrt(d_model // n_head)
        self.c_attn = nn.Linear(d_model, 3 * d_model, device=device)
        self.c_proj = nn.Linear(d_model, d_model, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(causal_attention(self.c_attn(x), self.n_head, self.scale))


class MLP(nn.Module):
    def __init__(self, d_model: int, device=None):
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model, device=device)
        self.gelu = nn.GELU()  # exact (erf) GELU
        self.c_proj = nn.Linear(4 * d_model, d_model, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, d_model: int, n_head: int, device=None):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model, eps=1e-5, device=device)
        self.attn = Attention(d_model, n_head, device)
        self.ln_2 = nn.LayerNorm(d_model, eps=1e-5, device=device)
        self.mlp = MLP(d_model, device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT2(nn.Module):
    def __init__(self, n_layer: int, n_head: int, d_model: int, context: int, vocab: int, device=None):
        super().__init__()
        self.context = context
        self.vocab = vocab
        self.wte = nn.Embedding(vocab, d_model, device=device)
        self.wpe = nn.Embedding(context, d_model, device=device)
        self.h = nn.ModuleList([Block(d_model, n_head, device) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model, eps=1e-5, device=device)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        T = tokens.size(1)
        if T > self.context:
            raise ValueError("more tokens per row than the module's context")
        x = self.wte(tokens) + self.wpe.weight[:T]
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return torch.matmul(x, self.wte.weight.t())  # output head tied to wte, functionally


# wit's built-in GPT under its own parameter names (docs/training.md: wte, wpe,
# h.N.ln1, h.N.attn.qkv, h.N.attn.proj, h.N.ln2, h.N.mlp.fc, h.N.mlp.proj,
# lnf): the same computation as GPT2 above, for comparing the TorchScript path
# with the built-in model state for state (--names wit).


class WitAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, device=None):
        super().__init__()
        self.n_head = n_head
        self.scale = 1.0 / math.sqrt(d_model // n_head)
        self.qkv = nn.Linear(d_model, 3 * d_model, device=device)
        self.proj = nn.Linear(d_model, d_model, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(causal_attention(self.qkv(x), self.n_head, self.scale))


class WitMLP(nn.Module):
    def __init__(self, d_model: int, device=None):
        super().__init__()
        self.fc = nn.Linear(d_model, 4 * d_model, device=device)
        self.gelu = nn.GELU()
        self.proj = nn.Linear(4 * d_model, d_model, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.gelu(self.fc(x)))


class WitBlock(nn.Module):
    def __init__(self, d_model: int, n_head: int, device=None):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model, eps=1e-5, device=device)
        self.attn = WitAttention(d_model, n_head, device)
        self.ln2 = nn.LayerNorm(d_model, eps=1e-5, device=device)
        self.mlp = WitMLP(d_model, device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class WitGPT(nn.Module):
    def __init__(self, n_layer: int, n_head: int, d_model: int, context: int, vocab: int, device=None):
        super().__init__()
        self.context = context
        self.vocab = vocab
        self.wte = nn.Parameter(torch.empty(vocab, d_model, device=device))
        self.wpe = nn.Parameter(torch.empty(context, d_model, device=device))
        self.h = nn.ModuleList([WitBlock(d_model, n_head, device) for _ in range(n_layer)])
        self.lnf = nn.LayerNorm(d_model, eps=1e-5, device=device)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        T = tokens.size(1)
        if T > self.context:
            raise ValueError("more tokens per row than the module's context")
        x = torch.embedding(self.wte, tokens) + self.wpe[:T]
        for block in self.h:
            x = block(x)
        x = self.lnf(x)
        return torch.matmul(x, self.wte.t())


def gpt2_init_(model: nn.Module, n_layer: int) -> None:
    """GPT-2's initialisation (normal 0.02, residual projections 0.02/sqrt(2L),
    LayerNorm 1 and 0, biases 0), for using the module in Python; wit
    ignores these values."""
    with torch.no_grad():
        for mod_name, mod in model.named_modules():
            for pname, p in mod.named_parameters(recurse=False):
                if isinstance(mod, nn.LayerNorm):
                    p.fill_(1.0 if pname == "weight" else 0.0)
                elif pname == "bias":
                    p.zero_()
                elif mod_name.endswith("proj"):  # c_proj, proj: residual projections
                    p.normal_(0.0, 0.02 / math.sqrt(2 * n_layer))
                else:
                    p.normal_(0.0, 0.02)


def build(n_layer: int, n_head: int, d_model: int, context: int, vocab: int, slim: bool = False,
          names: str = "gpt2") -> nn.Module:
    cls = {"gpt2": GPT2, "wit": WitGPT}[names]
    if not slim:
        model = cls(n_layer, n_head, d_model, context, vocab)
        gpt2_init_(model, n_layer)
        return model
    # Built on the meta device (no memory, no init), then every parameter gets
    # one real float expanded to its shape (stride 0).
    model = cls(n_layer, n_head, d_model, context, vocab, device="meta")
    for mod in model.modules():
        for pname, p in list(mod._parameters.items()):
            fill = 1.0 if isinstance(mod, nn.LayerNorm) and pname == "weight" else 0.0
            one = torch.full((1,), fill, dtype=torch.float32)
            mod._parameters[pname] = nn.Parameter(one.expand(p.shape))
    return model


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), help="a named size (overrides the sizes below)")
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-head", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--context", type=int, default=64, help="positions in wpe: the most tokens per row")
    ap.add_argument("--vocab", type=int, default=257, help="257 for wit's byte tokens (256 = pad)")
    ap.add_argument("--slim", action="store_true",
                    help="store one float per parameter, expanded to its shape (wit ignores stored values)")
    ap.add_argument("--names", choices=["gpt2", "wit"], default="gpt2",
                    help="parameter names: gpt2 (h.N.attn.c_attn.weight, ...; default) or wit's built-in GPT's "
                         "(h.N.attn.qkv.weight, ...; the same computation)")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed for the Python-side init")
    ap.add_argument("-o", "--out", required=True, help="the TorchScript file to write")
    ap.add_argument("--check", action="store_true",
                    help="load the file back and check names, shapes, dtypes and forward's shape")
    a = ap.parse_args(argv)
    size = dict(n_layer=a.n_layer, n_head=a.n_head, d_model=a.d_model, context=a.context, vocab=a.vocab)
    if a.preset:
        size = dict(PRESETS[a.preset])
    for k, v in size.items():
        if v < 1:
            print(f"gpt2_module: error: --{k.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if size["d_model"] % size["n_head"]:
        print("gpt2_module: error: --n-head must divide --d-model", file=sys.stderr)
        return 2
    torch.manual_seed(a.seed)
    t0 = time.perf_counter()
    model = build(**size, slim=a.slim, names=a.names).eval()
    t1 = time.perf_counter()
    scripted = torch.jit.script(model)
    t2 = time.perf_counter()
    # Saved under its final base name in a temporary folder, then renamed: the
    # archive's inner folder is named after the file, so the same arguments
    # and -o name always give the same bytes, and no partial file is left.
    tmpdir = tempfile.mkdtemp(prefix=".gpt2_module.", dir=os.path.dirname(os.path.abspath(a.out)))
    try:
        tmp = os.path.join(tmpdir, os.path.basename(a.out))
        scripted.save(tmp)
        os.replace(tmp, a.out)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    t3 = time.perf_counter()
    n = sum(p.numel() for p in model.parameters())
    print(f"{a.out}: {n:,} parameters ({size['n_layer']} layers, {size['n_head']} heads, d_model {size['d_model']}, "
          f"context {size['context']}, vocab {size['vocab']}){' slim' if a.slim else ''}; "
          f"{os.path.getsize(a.out):,} bytes; build {t1 - t0:.2f} s, script {t2 - t1:.2f} s, save {t3 - t2:.2f} s")
    if a.check:
        return check(a.out, model, size)
    return 0


def check(path: str, model: nn.Module, size: dict) -> int:
    """Loads the file back: same names, shapes and dtypes as the eager module,
    forward on a [2, min(8, context)] batch gives [2, L, vocab] float32."""
    t0 = time.perf_counter()
    m = torch.jit.load(path)
    t1 = time.perf_counter()
    want = [(k, tuple(p.shape), p.dtype) for k, p in model.named_parameters()]
    got = [(k, tuple(p.shape), p.dtype) for k, p in m.named_parameters()]
    if want != got:
        print("gpt2_module: check failed: parameters differ after loading", file=sys.stderr)
        return 1
    bufs = list(m.named_buffers())
    if bufs:
        print(f"gpt2_module: check failed: the module has buffers {[k for k, _ in bufs]}", file=sys.stderr)
        return 1
    m.eval()
    L = min(8, size["context"])
    tok = torch.randint(0, size["vocab"], (2, L), dtype=torch.long)
    with torch.no_grad():
        y = m(tok)
    if tuple(y.shape) != (2, L, size["vocab"]) or y.dtype != torch.float32:
        print(f"gpt2_module: check failed: forward gave {y.dtype} {tuple(y.shape)}", file=sys.stderr)
        return 1
    strides0 = sum(1 for _, p in m.named_parameters() if p.numel() > 1 and 0 in p.stride())
    print(f"check: {path} loads in {t1 - t0:.2f} s; {len(got)} parameters, names/shapes/dtypes as built, "
          f"{strides0} stored with stride 0; forward {tuple(y.shape)} {y.dtype}, finite: {bool(torch.isfinite(y).all())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
