// Byte views, fixed-size hashes, hex and little-endian helpers shared by all of wit_core.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace wit {

using Bytes = std::vector<uint8_t>;

// A non-owning view of bytes (C++17 has no std::span).
struct ByteView {
  const uint8_t* data = nullptr;
  size_t size = 0;
  ByteView() = default;
  ByteView(const uint8_t* d, size_t n) : data(d), size(n) {}
  ByteView(const Bytes& b) : data(b.data()), size(b.size()) {}  // NOLINT: implicit by design
  ByteView(std::string_view s) : data(reinterpret_cast<const uint8_t*>(s.data())), size(s.size()) {}  // NOLINT
  ByteView sub(size_t off, size_t n) const { return {data + off, n}; }
  std::string_view str() const { return {reinterpret_cast<const char*>(data), size}; }
};

// A 32-byte digest. Ordered bytewise (memcmp), which is the order of the sorted tree.
struct Hash32 {
  std::array<uint8_t, 32> b{};
  const uint8_t* data() const { return b.data(); }
  uint8_t* data() { return b.data(); }
  static constexpr size_t size() { return 32; }
  bool operator==(const Hash32& o) const { return b == o.b; }
  bool operator!=(const Hash32& o) const { return b != o.b; }
  bool operator<(const Hash32& o) const { return std::memcmp(b.data(), o.b.data(), 32) < 0; }
  std::string hex() const;
  // Parses exactly 64 lowercase or uppercase hex digits; false otherwise.
  static bool from_hex(std::string_view s, Hash32& out);
};

std::string to_hex(ByteView v);
// Parses an even-length hex string; false on any non-hex character.
bool from_hex(std::string_view s, Bytes& out);

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF).
bool is_utf8(std::string_view s);

inline void put_le64(uint8_t* p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = uint8_t(v >> (8 * i)); }
inline void put_le32(uint8_t* p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = uint8_t(v >> (8 * i)); }
inline uint64_t get_le64(const uint8_t* p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = (v << 8) | p[i]; return v; }
inline uint32_t get_le32(const uint8_t* p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = (v << 8) | p[i]; return v; }
inline void append_le64(Bytes& out, uint64_t v) { uint8_t t[8]; put_le64(t, v); out.insert(out.end(), t, t + 8); }
inline void append_le32(Bytes& out, uint32_t v) { uint8_t t[4]; put_le32(t, v); out.insert(out.end(), t, t + 4); }

}  // namespace wit
