// ChaCha20 streams (libsodium) and the permutations drawn from them.
#include "wit/hash/rng.h"

#include <sodium.h>

#include <cstring>
#include <numeric>

#include "wit/hash/hash.h"

namespace wit {

namespace {
const unsigned char kNonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {'L', 'i', 'b', 's', 'o', 'd',
                                                                       'i', 'u', 'm', 'D', 'R', 'G'};
}

Hash32 derive_key(std::string_view tag, std::initializer_list<ByteView> parts) {
  Blake2b h;
  h.update_field(ByteView(tag));
  for (const ByteView& p : parts) h.update_field(p);
  return h.final();
}

ChaChaStream::ChaChaStream(const Hash32& key, uint64_t first_block) : key_(key), block_(first_block) {
  init_crypto();
}

void ChaChaStream::refill() {
  std::memset(buf_, 0, sizeof buf_);
  crypto_stream_chacha20_ietf_xor_ic(buf_, buf_, sizeof buf_, kNonce, uint32_t(block_), key_.data());
  block_ += sizeof buf_ / 64;
  pos_ = 0;
}

void ChaChaStream::fill(uint8_t* out, size_t n) {
  while (n) {
    if (pos_ == sizeof buf_) refill();
    size_t take = std::min(n, sizeof buf_ - pos_);
    std::memcpy(out, buf_ + pos_, take);
    pos_ += take;
    out += take;
    n -= take;
  }
}

uint32_t ChaChaStream::next_u32() {
  uint8_t b[4];
  fill(b, 4);
  return get_le32(b);
}

uint64_t ChaChaStream::next_u64() {
  uint8_t b[8];
  fill(b, 8);
  return get_le64(b);
}

uint64_t ChaChaStream::uniform(uint64_t bound) {
  // Reject the top partial range so every residue is equally likely.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % bound);
  for (;;) {
    uint64_t x = next_u64();
    if (x < limit) return x % bound;
  }
}

std::vector<uint64_t> random_permutation(const Hash32& key, uint64_t n) {
  std::vector<uint64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  ChaChaStream s(key);
  for (uint64_t i = n; i > 1; i--) std::swap(p[i - 1], p[s.uniform(i)]);
  return p;
}

}  // namespace wit
