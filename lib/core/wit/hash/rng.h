// Deterministic randomness every party can recompute: a ChaCha20 stream keyed
// by an H-derived 32-byte key. The stream is libsodium's
// randombytes_buf_deterministic (ChaCha20-IETF, nonce "LibsodiumDRG"), with
// random access by 64-byte block so shards can generate their own part.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "wit/base/bytes.h"

namespace wit {

// Key for one purpose: H(tag || parts...), each part length-prefixed.
Hash32 derive_key(std::string_view tag, std::initializer_list<ByteView> parts);

class ChaChaStream {
 public:
  explicit ChaChaStream(const Hash32& key, uint64_t first_block = 0);
  void fill(uint8_t* out, size_t n);
  uint32_t next_u32();
  uint64_t next_u64();
  // Uniform integer in [0, bound) by rejection (no modulo bias). bound > 0.
  uint64_t uniform(uint64_t bound);

 private:
  void refill();
  Hash32 key_;
  uint64_t block_;
  uint8_t buf_[256];
  size_t pos_ = sizeof buf_;
};

// A uniformly random permutation of [0, n) (Fisher-Yates driven by the stream).
std::vector<uint64_t> random_permutation(const Hash32& key, uint64_t n);

}  // namespace wit
