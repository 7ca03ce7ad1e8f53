// H = BLAKE2b-256 (libsodium), SHA-256 (for RFC 6962 reference vectors) and
// XXH3 (only where a collision gains an adversary nothing).
#pragma once
#include <memory>
#include <string_view>

#include "wit/base/bytes.h"

namespace wit {

// Incremental BLAKE2b-256. The state is opaque so libsodium stays out of headers.
class Blake2b {
 public:
  Blake2b();
  ~Blake2b();
  Blake2b(const Blake2b&) = delete;
  Blake2b& operator=(const Blake2b&) = delete;
  Blake2b& update(ByteView v);
  Blake2b& update(uint8_t byte) { return update(ByteView(&byte, 1)); }
  Blake2b& update_le64(uint64_t v) { uint8_t t[8]; put_le64(t, v); return update(ByteView(t, 8)); }
  // A length-prefixed field, so that concatenated variable-length fields are unambiguous.
  Blake2b& update_field(ByteView v) { update_le64(v.size); return update(v); }
  Hash32 final();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// One-shot BLAKE2b-256 of a domain tag followed by data.
Hash32 hash_tagged(std::string_view tag, ByteView data);
// One-shot BLAKE2b-256 of raw bytes; only for tree hashing, where the RFC 6962
// prefixes are the domain tag.
Hash32 blake2b_256(ByteView a, ByteView b = {}, ByteView c = {});
Hash32 sha256(ByteView a, ByteView b = {}, ByteView c = {});

uint64_t xxh3_64(ByteView v, uint64_t seed = 0);

// Library initialisation (libsodium); safe to call more than once.
void init_crypto();

}  // namespace wit
