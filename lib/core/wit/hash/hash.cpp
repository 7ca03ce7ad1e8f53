// Hash primitives over libsodium (BLAKE2b-256, SHA-256) and xxHash (XXH3).
#include "wit/hash/hash.h"

#include <sodium.h>
#include <xxhash.h>

#include <cstdlib>
#include <cstdio>

namespace wit {

void init_crypto() {
  static const bool ok = [] { return sodium_init() >= 0; }();
  if (!ok) {
    std::fputs("wit: error: libsodium failed to initialise\n", stderr);
    std::exit(2);
  }
}

struct Blake2b::State {
  crypto_generichash_state st;
};

Blake2b::Blake2b() : s_(new State) {
  init_crypto();
  crypto_generichash_init(&s_->st, nullptr, 0, 32);
}
Blake2b::~Blake2b() = default;

Blake2b& Blake2b::update(ByteView v) {
  if (v.size) crypto_generichash_update(&s_->st, v.data, v.size);
  return *this;
}

Hash32 Blake2b::final() {
  Hash32 h;
  crypto_generichash_final(&s_->st, h.data(), 32);
  return h;
}

Hash32 hash_tagged(std::string_view tag, ByteView data) {
  Blake2b b;
  b.update_field(ByteView(tag));
  b.update(data);
  return b.final();
}

Hash32 blake2b_256(ByteView a, ByteView b, ByteView c) {
  init_crypto();
  Hash32 h;
  if (!b.size && !c.size) {
    crypto_generichash(h.data(), 32, a.data, a.size, nullptr, 0);
    return h;
  }
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, 32);
  if (a.size) crypto_generichash_update(&st, a.data, a.size);
  if (b.size) crypto_generichash_update(&st, b.data, b.size);
  if (c.size) crypto_generichash_update(&st, c.data, c.size);
  crypto_generichash_final(&st, h.data(), 32);
  return h;
}

Hash32 sha256(ByteView a, ByteView b, ByteView c) {
  init_crypto();
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  if (a.size) crypto_hash_sha256_update(&st, a.data, a.size);
  if (b.size) crypto_hash_sha256_update(&st, b.data, b.size);
  if (c.size) crypto_hash_sha256_update(&st, c.data, c.size);
  Hash32 h;
  crypto_hash_sha256_final(&st, h.data());
  return h;
}

uint64_t xxh3_64(ByteView v, uint64_t seed) { return XXH3_64bits_withSeed(v.data, v.size, seed); }

}  // namespace wit
