#!/usr/bin/python3
"""Recurrent and encoder language models from torch.nn as TorchScript files
for `wit-train --model FILE.pt` (docs/model.md):

    /usr/bin/python3 examples/rnn_module.py --arch gru --d-model 64 --vocab 257 -o gru.pt
    /usr/bin/python3 examples/rnn_module.py --arch lstm --n-layer 2 -o lstm.pt
    /usr/bin/python3 examples/rnn_module.py --arch transformer --n-head 2 --context 64 -o enc.pt

Run it with Debian's /usr/bin/python3 (python3-torch, PyTorch 1.13.1, the same
version as libtorch-dev). Each module is torch.nn's own layers, scripted as
they are:

- gru, lstm: nn.Embedding -> nn.GRU / nn.LSTM (batch_first) -> nn.Linear.
  These layers keep their weights in a list (_flat_weights) besides the
  parameter slots; wit refreshes that list with the trained tensors before
  every forward, so nothing here works around it.
- transformer: token and position embeddings -> nn.TransformerEncoder
  (causal mask computed in forward, never stored) -> final LayerNorm ->
  nn.Linear.

Parameter names are PyTorch's (emb.weight, rnn.weight_ih_l0, rnn.bias_hh_l0,
enc.layers.0.self_attn.in_proj_weight, ...), all covered by wit's default
init rules; `wit-train --describe --model FILE.pt --config CFG` prints the
rule each one gets. Dropout is 0 unless --dropout P (transformer: the
encoder layers' dropout): wit runs a module in training mode only for a run
whose config sets "train_mode": true (docs/training.md#dropout), and then
seeds its dropout from the run's seed, the step and the micro-batch.

The file's bytes are reproducible (the same arguments and -o name give the
same file), as for gpt2_module.py.
"""
import argparse
import os
import shutil
import sys
import tempfile
import warnings


def reproducible() -> None:
    """TorchScript writes a module's constants in Python set order: re-run
    under PYTHONHASHSEED=0 so that the same arguments give the same bytes."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable] + sys.argv)


if __name__ == "__main__":
    reproducible()

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


class GRULM(nn.Module):
    def __init__(self, vocab: int, d_model: int, n_layer: int):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        self.rnn = nn.GRU(d_model, d_model, num_layers=n_layer, batch_first=True)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x, _ = self.rnn(self.emb(tokens))
        return self.head(x)


class LSTMLM(nn.Module):
    def __init__(self, vocab: int, d_model: int, n_layer: int):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        self.rnn = nn.LSTM(d_model, d_model, num_layers=n_layer, batch_first=True)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x, _ = self.rnn(self.emb(tokens))
        return self.head(x)


class EncoderLM(nn.Module):
    def __init__(self, vocab: int, d_model: int, n_layer: int, n_head: int, context: int, dropout: float = 0.0):
        super().__init__()
        self.context = context
        self.emb = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(context, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_head, 4 * d_model, dropout=dropout, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, n_layer, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        T = tokens.size(1)
        if T > self.context:
            raise ValueError("more tokens per row than the module's context")
        causal = torch.ones(T, T, dtype=torch.bool, device=tokens.device).triu(1)
        x = self.emb(tokens) + self.pos.weight[:T]
        return self.head(self.norm(self.enc(x, mask=causal)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", choices=["gru", "lstm", "transformer"], required=True)
    ap.add_argument("--n-layer", type=int, default=1)
    ap.add_argument("--n-head", type=int, default=2, help="transformer only")
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--context", type=int, default=64, help="transformer only: positions, the most tokens per row")
    ap.add_argument("--vocab", type=int, default=257, help="257 for wit's byte tokens (256 = pad)")
    ap.add_argument("--dropout", type=float, default=0.0,
                    help="transformer only: the encoder layers' dropout (active in a train_mode run)")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed for the Python-side init (wit ignores it)")
    ap.add_argument("-o", "--out", required=True, help="the TorchScript file to write")
    a = ap.parse_args(argv)
    for k in ("n_layer", "n_head", "d_model", "context", "vocab"):
        if getattr(a, k) < 1:
            print(f"rnn_module: error: --{k.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if not 0.0 <= a.dropout < 1.0 or (a.dropout and a.arch != "transformer"):
        print("rnn_module: error: --dropout is a rate in [0, 1), for --arch transformer", file=sys.stderr)
        return 2
    if a.arch == "transformer" and a.d_model % a.n_head:
        print("rnn_module: error: --n-head must divide --d-model", file=sys.stderr)
        return 2
    torch.manual_seed(a.seed)
    # nn.TransformerEncoderLayer declares a constant it does not set; harmless.
    warnings.filterwarnings("ignore", message=".*was found in ScriptModule constants.*")
    if a.arch == "gru":
        model = GRULM(a.vocab, a.d_model, a.n_layer)
    elif a.arch == "lstm":
        model = LSTMLM(a.vocab, a.d_model, a.n_layer)
    else:
        model = EncoderLM(a.vocab, a.d_model, a.n_layer, a.n_head, a.context, a.dropout)
    scripted = torch.jit.script(model.eval())
    # Saved under its final base name in a temporary folder, then renamed (the
    # archive's inner folder is named after the file; no partial file is left).
    tmpdir = tempfile.mkdtemp(prefix=".rnn_module.", dir=os.path.dirname(os.path.abspath(a.out)))
    try:
        tmp = os.path.join(tmpdir, os.path.basename(a.out))
        scripted.save(tmp)
        os.replace(tmp, a.out)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    n = sum(p.numel() for p in model.parameters())
    print(f"{a.out}: {a.arch}, {n:,} parameters; {os.path.getsize(a.out):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
