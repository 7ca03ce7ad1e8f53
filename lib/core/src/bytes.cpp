// Hex encoding and decoding.
#include "wit/bytes.h"

namespace wit {

namespace {
int nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string to_hex(ByteView v) {
  static const char* d = "0123456789abcdef";
  std::string s(v.size * 2, '0');
  for (size_t i = 0; i < v.size; i++) {
    s[2 * i] = d[v.data[i] >> 4];
    s[2 * i + 1] = d[v.data[i] & 15];
  }
  return s;
}

bool from_hex(std::string_view s, Bytes& out) {
  if (s.size() % 2) return false;
  out.resize(s.size() / 2);
  for (size_t i = 0; i < out.size(); i++) {
    int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = uint8_t(hi << 4 | lo);
  }
  return true;
}

std::string Hash32::hex() const { return to_hex(ByteView(b.data(), 32)); }

bool Hash32::from_hex(std::string_view s, Hash32& out) {
  if (s.size() != 64) return false;
  Bytes tmp;
  if (!wit::from_hex(s, tmp)) return false;
  std::copy(tmp.begin(), tmp.end(), out.b.begin());
  return true;
}

}  // namespace wit
