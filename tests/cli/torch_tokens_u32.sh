#!/usr/bin/env bash
# Large vocabularies (issue 25 item 5, docs/records.md "tokens"): a file of
# little-endian uint32 token ids committed with --token-bytes 4 (the width in
# the commitment's reader, so the run id binds it), a TorchScript model with a
# vocabulary of 70,000 trained on it, challenged and certified by replay; an
# id not below the vocabulary is refused before training, naming the id and
# its record; the same bytes read as uint16 ids are a different dataset to
# the trainer; wit-query contamination reads eval windows with the committed
# width. Bad widths and cut files are one-line errors, nothing written.
source "$(dirname "$0")/lib.sh"
BUILD=$(cd "$WIT_BIN/.." && pwd)
FORGE="$BUILD/tests/attacks/causal_forge"  # writes small TorchScript modules (no Python needed)
[ -x "$FORGE" ] || { echo "skip: $FORGE not built" >&2; exit 77; }
nonce() { printf '%064x' "$1"; }

# 40 records of 16 uint32 ids, most of them past 65,535; the largest is 69998.
perl -e 'my @ids = map { 60000 + ($_ * 7919 + int($_ / 16)) % 9000 } 0 .. 639; $ids[16 * 5 + 3] = 69998;
         print pack("V*", @ids)' >tok.bin
[ "$(stat -c %s tok.bin)" = 2560 ] && ok || fail "tok.bin is $(stat -c %s tok.bin) bytes"

# --- commit: the width is in the reader spec, and only there
run 0 wit-commit -q --reader tokens --token-bytes 4 --seq-len 16 -o tok.commit.json tok.bin
grep -q '"token_bytes": 4' tok.commit.json && ok || fail "no token_bytes in $(cat tok.commit.json)"
[ "$(json_get tok.commit.json records)" = 40 ] && ok || fail "records: $(json_get tok.commit.json records)"
run 0 wit-commit show tok.commit.json
grep -q '16 tokens a record, uint32 ids' out && ok || fail "show: $(cat out)"
# The same bytes as uint16 ids, 32 a record: the same windows, root and digest;
# the reader (no token_bytes) is what differs.
run 0 wit-commit -q --reader tokens --seq-len 32 -o u16.commit.json tok.bin
[ "$(json_get u16.commit.json root)" = "$(json_get tok.commit.json root)" ] && ok || fail "roots differ"
grep -q token_bytes u16.commit.json && fail "a uint16 commitment names token_bytes" || ok
# Bad widths and files: one line, exit 2, nothing written.
run 2 wit-commit -q --reader tokens --token-bytes 3 --seq-len 16 -o bad.commit.json tok.bin && error_is wit-commit 'token-bytes'
absent bad.commit.json bad.commit.widx
run 2 wit-commit -q --reader lines --token-bytes 4 -o bad.commit.json tok.bin &&
  error_is wit-commit -- '--token-bytes applies to the tokens reader only'
absent bad.commit.json bad.commit.widx
{ cat tok.bin; printf 'ab'; } >cut.bin
run 2 wit-commit -q --reader tokens --token-bytes 4 --seq-len 16 -o bad.commit.json cut.bin &&
  error_is wit-commit 'token file size 2562 is not a multiple of 4 \(uint32 ids, --token-bytes 4\): cut.bin at byte 2560'
absent bad.commit.json bad.commit.widx

# --- contamination: eval token files are read with the committed width, so
# one 16-id window is 16 uint32 ids (4 13-grams; as uint16 it would be 32 ids, 20)
dd if=tok.bin of=ev.bin bs=64 skip=2 count=1 status=none
run 1 wit-query contamination --commit tok.commit.json --index tok.widx --reader tokens --seq-len 16 -o cert.json ev.bin
grep -q '"token_bytes": 4' cert.json && grep -q '"eval_ngrams": 4,' cert.json && grep -q '"overlap_fraction": 1.0' cert.json &&
  ok || fail "contamination of a uint32 window: $(grep -E 'token_bytes|ngrams|overlap_fraction' cert.json)"

# --- train a model with a vocabulary of 70,000 on the uint32 ids
run 0 "$FORGE" plain m.pt 70000 8
config() {  # config VOCAB
  cat <<CFG
{"model": {"vocab": $1, "context": 16},
 "optimizer": {"lr": 0.01},
 "batch_size": 4, "steps": 4, "checkpoint_every": 1, "head_every": 2,
 "fingerprint": {"sketch_k": 64, "probe_every": 2, "probe_records": 4, "probe_dim": 8},
 "seed": "3232323232323232323232323232323232323232323232323232323232323232"}
CFG
}
config 70000 >cfg.json
run 0 wit-log keygen -o key
train() {  # train WANT MODEL CONFIG COMMIT OUT
  run "$1" wit-train -q -j1 --model "$2" --config "$3" --data "$4" --index "${4%.commit.json}.widx" --key key --out "$5" tok.bin
}
train 0 m.pt cfg.json tok.commit.json run
grep -q '"tokens": "u32"' run/run.json && grep -q '"pad": 69999' run/run.json && grep -q '"token_bytes": 4' run/run.json &&
  ok || fail "run.json's model and data: $(grep -E '"(tokens|pad|token_bytes)"' run/run.json)"
run 0 wit-log verify run
wit-log head run >head.json
run 0 wit-challenge -q --head head.json --nonce "$(nonce 7)" -k 4 -o c.json
run 0 wit-replay respond -q -j1 --run run c.json -o r.wbundle
run 0 wit-replay verify -q -j2 --bundle r.wbundle c.json -o report.json
grep -q '"certified": true\|"verdict": "certified"' report.json && ok || fail "report: $(head -c 400 report.json)"

# An id not below the vocabulary: refused before anything is written, naming
# the id, its record (window 5 in file order) and its position in it.
run 0 "$FORGE" plain m69.pt 69000 8
config 69000 >cfg69.json
train 2 m69.pt cfg69.json tok.commit.json small &&
  error_is wit-train "the data's token 69998 is not below the model's vocab 69000 \(record 5 in file order, its token 3\)"
absent small
# The built-in GPT is byte-level: given token ids (its vocab set to the data's, or
# left at 257) it stops before anything is written, saying so and naming the
# module that trains on them (issue 37 item 5; torch_tokens_gpt2.sh trains it).
for c in cfg.json cfg257.json; do
  [ "$c" = cfg257.json ] && config 257 >cfg257.json
  run 2 wit-train -q -j1 --config "$c" --data tok.commit.json --index tok.widx --key key --out builtin tok.bin &&
    error_is wit-train 'the built-in GPT is byte-level \(vocab 257.*examples/gpt2_module.py --vocab V'
  absent builtin
done
grep -q 'data is token ids (u32, the tokens reader)' "$T/err" && ok || fail "the error does not say the data is token ids: $(cat "$T/err")"
# The same bytes committed as uint16 ids cannot feed a 70,000-id model.
train 2 m.pt cfg.json u16.commit.json u16run && error_is wit-train 'vocab 70000 is larger than uint16 token ids'
absent u16run
finish
