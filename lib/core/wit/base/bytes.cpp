// Hex encoding and decoding.
#include "wit/base/bytes.h"

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

bool is_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const uint8_t c = uint8_t(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) { i++; continue; }
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; k++) {
      const uint8_t d = uint8_t(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return false;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
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
