#!/usr/bin/env python3
# Deterministic token ids for the GPT-2 benches (bench/gpt2.sh, bench/accum.sh):
# N little-endian uint16 ids below VOCAB - 1 (VOCAB - 1 = 50256 =
# <|endoftext|> is wit's pad), xorshift64* from SEED with multiplier MUL, on
# standard output (commit them with wit-commit --reader tokens).
# Usage: bench/tokens.py N VOCAB SEED MUL > tokens.bin   (SEED, MUL: 0x... or decimal)
import struct
import sys

if len(sys.argv) != 5:
    sys.exit("usage: bench/tokens.py N VOCAB SEED MUL > tokens.bin")
n, vocab, s, mul = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3], 0), int(sys.argv[4], 0)
M = (1 << 64) - 1
out = bytearray()
for _ in range(n):
    s ^= s >> 12; s = (s ^ (s << 25)) & M; s ^= s >> 27
    out += struct.pack('<H', (((s * mul) & M) >> 32) % (vocab - 1))
sys.stdout.buffer.write(out)
