#!/usr/bin/env bash
# Known answers from independent references: the Python recipes of the docs,
# taken from the docs as printed (so a doc cannot drift from the code) and run
# with Debian's Python (standard library and python3-cryptography; no wit
# code), reproduce what the C++ tools wrote on a real commitment and run:
#   docs/commitment.md  the data tree's root and n, the source digest (one
#                       small file, and a 2.5 MiB file of three 1 MiB pieces)
#   docs/manifest.md    the data order (every batch root of a 12-step run of
#                       two epochs, ChaCha20 uniforms and Fisher-Yates), the
#                       probe indices (RUN/probe.json), the initial weights
#                       (with docs/state-root.md: the genesis entry's init_root)
# A missing interpreter or module is a visible skip (exit 77), never a pass.
source "$(dirname "$0")/lib.sh"
: "${WIT_SRC:?set WIT_SRC to the source tree}"
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "skip: $PY not found (Debian's python3)" >&2; exit 77; }
"$PY" -c 'import cryptography.hazmat.primitives.ciphers' 2>/dev/null ||
  { echo "skip: $PY has no cryptography module (Debian's python3-cryptography)" >&2; exit 77; }

doc_recipe commitment.md commit.py
doc_recipe manifest.md order.py
doc_recipe state-root.md state_root.py

# Lines records with what the reader skips and strips (docs/records.md): a
# blank line, a CRLF line, a duplicate (two records, one leaf), no final '\n'.
{
  for i in $(seq 1 36); do printf 'known-answer record %d of the data order\n' "$i"; done
  printf '\nknown-answer record 7 of the data order\nwith CRLF\r\nno final line feed'
} >data.txt
run 0 wit-commit -q -o data.commit.json data.txt
# A file of three source pieces (1 MiB each, the last shorter).
awk 'BEGIN { for (i = 0; i < 40000; i++) printf "piece-spanning line %06d of the digest test\n", i }' >big.txt
run 0 wit-commit -q -o big.commit.json big.txt
cat >cfg.json <<'CFG'
{"model": {"n_layer": 2, "n_head": 2, "d_model": 16, "context": 32},
 "batch_size": 4, "steps": 12, "checkpoint_every": 6, "head_every": 4,
 "fingerprint": {"sketch_k": 64, "probe_every": 6, "probe_records": 5, "probe_dim": 8},
 "seed": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
CFG
run 0 wit-log keygen -o key
run 0 wit-train -q -j1 --config cfg.json --data data.commit.json --index data.widx --key key --out R data.txt
run 0 wit-log show R && cp out log.jsonl

# The checks, one line each ("ok WHAT" or "FAIL WHAT: ..."). Only the recipes
# compute; this driver reads files, feeds the recipes and compares.
"$PY" - >checks.txt 2>&1 <<'PY'
import contextlib, io, json, struct

def lines_records(data):  # docs/records.md, reader lines
    out = []
    for l in data.split(b'\n'):
        if l.endswith(b'\r'): l = l[:-1]
        if l: out.append(l)
    return out

def check(what, got, want):
    print(('ok ' if got == want else 'FAIL ') + what + ('' if got == want else ': recipe %r, wit %r' % (got, want)))

def commitment(path, commit_file):
    data = open(path, 'rb').read()
    env = {'records': lines_records(data), 'data': data}
    exec(open('commit.py').read(), env)
    c = json.load(open(commit_file))
    check(path + ': root', env['root'].hex(), c['root'])
    check(path + ': n', env['n'], c['n'])
    check(path + ': records', len(env['records']), c['records'])
    check(path + ': source digest', env['digest'].hex(), c['sources'][0]['digest'])
    return env

small = commitment('data.txt', 'data.commit.json')
commitment('big.txt', 'big.commit.json')
mth, H = small['mth'], small['H']
tree = sorted(set(small['leaves']))  # position i of the data tree: the i-th smallest distinct leaf

order = {}
exec(open('order.py').read(), order)
log = [json.loads(l) for l in open('log.jsonl')]
genesis, steps = log[0], log[1:]
run_id = bytes.fromhex(genesis['run_id'])
seed = bytes.fromhex(open('R/seed').read().strip())
manifest = json.load(open('R/run.json'))
B, n, T = manifest['batch_size'], len(tree), manifest['steps']
check('data.n', n, manifest['data']['n'])
check('steps logged', len(steps), T)
check('two epochs', (T - 1) // (n // B) >= 1, True)
for e in steps:
    pos = order['batch'](run_id, seed, n, B, e['step'])
    check('step %d: batch root' % e['step'], mth([tree[p] for p in pos]).hex(), e['batch_root'])

probe = json.load(open('R/probe.json'))
k = manifest['fingerprint']['probe_records']
check('probe indices', order['probe_indices'](run_id, seed, n, k), [r['index'] for r in probe['records']])
check('probe records', [tree[i].hex() for i in order['probe_indices'](run_id, seed, n, k)],
      [r['proof']['leaf'] for r in probe['records']])

# Initial state: the parameters from the seed alone (names and shapes from a
# checkpoint's header, values from the recipe), zero moments, step 0, written
# as a safetensors file for the state-root recipe.
raw = open('R/ckpt/step-000006.safetensors', 'rb').read()
hdr = json.loads(raw[8:8 + struct.unpack('<Q', raw[:8])[0]])
params = sorted(k for k in hdr if k != '__metadata__' and not k.startswith('adam.') and k != 'wit.step')
check('parameter count', sum(order['math'].prod(hdr[p]['shape']) for p in params), genesis['n_params'])
L = manifest['model']['n_layer']
tensors = {}
for p in params:
    shape = hdr[p]['shape']
    tensors[p] = ('F32', shape, order['init_bytes'](seed, p, shape, L))
    zero = bytes(4 * order['math'].prod(shape))
    tensors['adam.m.' + p] = ('F32', shape, zero)
    tensors['adam.v.' + p] = ('F32', shape, zero)
tensors['wit.step'] = ('I64', [1], struct.pack('<q', 0))
head, body = {}, b''
for name, (dt, shape, b) in tensors.items():
    head[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [len(body), len(body) + len(b)]}
    body += b
h = json.dumps(head).encode()
open('step.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + body)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    exec(open('state_root.py').read(), {})
check('initial state root', out.getvalue().strip(), genesis['init_root'])
PY
rc=$?
grep '^ok ' checks.txt
[ "$rc" -eq 0 ] && ok || fail "the known-answer driver failed (exit $rc)"
n_ok=$(grep -c '^ok ' checks.txt)
[ "$n_ok" -ge 20 ] && ok || fail "only $n_ok known answers checked"
while read -r line; do fail "$line"; done < <(grep -v '^ok ' checks.txt)
finish
