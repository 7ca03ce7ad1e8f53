// Encoding and strict, bounded decoding of bundles (docs/bundle.md): a header,
// then one zstd frame holding the payload (members in name order, XXH3-64).
#include "wit/bundle.h"

#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

#include "wit/error.h"
#include "wit/io.h"

namespace wit {

namespace {

// Header layout (little-endian), kHeaderSize bytes, then the zstd frame:
//   0 magic[8] | 8 version u32 | 12 flags u32 (0) | 16 payload_size u64
constexpr size_t kHeaderSize = 24, kOffVersion = 8, kOffFlags = 12, kOffSize = 16;
// Payload: count u32, members (u16 name length, name, u64 data length, data),
// then the XXH3-64 of everything before it. The smallest payload is an empty
// bundle; the smallest member has a one-byte name and no data.
constexpr uint64_t kMinPayload = 4 + 8, kMinMember = 2 + 1 + 8, kChecksumSize = 8;
constexpr size_t kMaxName = 255;
// A member's buffer starts at this size and doubles as its bytes decompress.
constexpr uint64_t kFirstPiece = uint64_t(1) << 20;
// The largest window zstd's decoder accepts by default
// (ZSTD_WINDOWLOG_LIMIT_DEFAULT, not in the stable API).
constexpr int kWindowLogMax = 27;
// The window zstd levels up to 19 use when the input size is unknown.
constexpr int kWindowLogStream = 23;

std::string at_byte(const std::string& where, uint64_t off) {
  return (where.empty() ? "" : where + " at ") + "byte " + std::to_string(off);
}
std::string at_payload(const std::string& where, uint64_t off) {
  return (where.empty() ? "" : where + " at ") + "payload byte " + std::to_string(off);
}

bool name_char(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '/' || c == '-';
}

// Why `name` is not a valid member name, or "" when it is. The rules make
// every name a safe relative path: no absolute paths, no "..", no empty or
// "." components, so a member could be written to disk under its name.
std::string name_problem(std::string_view name) {
  if (name.empty()) return "empty";
  if (name.size() > kMaxName) return "longer than 255 bytes";
  for (unsigned char c : name)
    if (!name_char(c)) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "byte 0x%02x is not allowed", c);
      return buf;
    }
  if (name.front() == '/') return "starts with '/'";
  if (name.find("..") != std::string_view::npos) return "contains '..'";
  if (name.back() == '/' || name.find("//") != std::string_view::npos) return "has an empty path component";
  const std::string padded = "/" + std::string(name) + "/";
  if (padded.find("/./") != std::string::npos) return "has a '.' path component";
  return "";
}

// A name as it may appear in a one-line message: valid names print as they
// are, anything else with every byte outside the name alphabet escaped.
std::string printable(std::string_view name) {
  std::string out;
  for (unsigned char c : name) {
    if (name_char(c)) {
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string zstd_error(size_t code) {
  std::string s = ZSTD_getErrorName(code);
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
  return s;
}

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
struct XxhFree {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

std::unique_ptr<XXH3_state_t, XxhFree> new_xxh3() {
  std::unique_ptr<XXH3_state_t, XxhFree> s(XXH3_createState());
  if (!s || XXH3_64bits_reset(s.get()) != XXH_OK) throw std::bad_alloc();
  return s;
}

// Streams the encoded bundle to `sink` (called with consecutive pieces of the
// file), so save() never holds the compressed file and a copy of the payload
// in memory besides the members themselves.
template <class Sink>
void encode_to(const std::map<std::string, Bytes>& members, int level, Sink&& sink) {
  uint64_t payload_size = kMinPayload;
  for (const auto& [name, data] : members) payload_size += 2 + name.size() + 8 + data.size();
  if (members.size() > UINT32_MAX) throw Error("bundle has too many members (" + std::to_string(members.size()) + ")");

  uint8_t header[kHeaderSize];
  std::memcpy(header, kBundleMagic, 8);
  put_le32(header + kOffVersion, kBundleVersion);
  put_le32(header + kOffFlags, 0);
  put_le64(header + kOffSize, payload_size);
  sink(ByteView(header, kHeaderSize));

  std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx(ZSTD_createCCtx());
  if (!cctx) throw std::bad_alloc();
  // The frame records its content size (the pledge), which lets a reader
  // reject a header that disagrees before it allocates anything.
  auto check = [](size_t r) {
    if (ZSTD_isError(r)) throw Error("cannot compress bundle: " + zstd_error(r));
  };
  check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level));
  check(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1));
  check(ZSTD_CCtx_setPledgedSrcSize(cctx.get(), payload_size));
  auto xxh = new_xxh3();

  Bytes out(ZSTD_CStreamOutSize());
  auto feed = [&](ByteView v, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{v.data, v.size, 0};
    for (;;) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      size_t r = ZSTD_compressStream2(cctx.get(), &o, &in, mode);
      check(r);
      if (o.pos) sink(ByteView(out.data(), o.pos));
      if (mode == ZSTD_e_end ? r == 0 : in.pos == in.size) break;
    }
  };
  auto field = [&](ByteView v) {
    XXH3_64bits_update(xxh.get(), v.data, v.size);
    feed(v, ZSTD_e_continue);
  };

  uint8_t count[4];
  put_le32(count, uint32_t(members.size()));
  field(ByteView(count, 4));
  Bytes head;
  for (const auto& [name, data] : members) {
    head.assign(2, 0);
    head[0] = uint8_t(name.size());
    head[1] = uint8_t(name.size() >> 8);
    head.insert(head.end(), name.begin(), name.end());
    append_le64(head, data.size());
    field(ByteView(head));
    field(ByteView(data));
  }
  uint8_t sum[8];
  put_le64(sum, XXH3_64bits_digest(xxh.get()));
  feed(ByteView(sum, 8), ZSTD_e_end);
}

// Pulls the payload out of one zstd frame, a field at a time, straight into
// its destination (a member's data goes into the member's own buffer). The
// caller never asks for more than the header's payload_size in total, so
// nothing is allocated beyond what the (capped) header declares.
class FrameReader {
 public:
  FrameReader(ByteView frame, uint64_t declared, const std::string& where)
      : in_{frame.data, frame.size, 0}, declared_(declared), where_(where), dctx_(ZSTD_createDCtx()) {
    if (!dctx_) throw std::bad_alloc();
    // zstd sizes its window buffer from the frame header. A window larger
    // than the payload is never needed, but a streaming compressor that did
    // not know the size uses its level's default (8 MiB up to level 19), so
    // allow the larger of the two: zstd's own buffer then stays below
    // max(declared size, 8 MiB) plus two blocks whatever the frame claims.
    int log = kWindowLogStream;
    while (log < kWindowLogMax && (uint64_t(1) << log) < declared) log++;
    ZSTD_DCtx_setParameter(dctx_.get(), ZSTD_d_windowLogMax, log);
  }

  uint64_t pos() const { return pos_; }

  // Fills dst[0, n) with the next payload bytes. Precondition: pos() + n <= declared.
  void read(uint8_t* dst, size_t n) {
    ZSTD_outBuffer out{dst, n, 0};
    while (out.pos < out.size) {
      if (frame_done_) mismatch(std::to_string(pos_ + out.pos));
      step(out);
    }
    pos_ += n;
  }

  // After the last field: the frame must hold exactly the declared size and
  // end exactly at the end of the file.
  void finish() {
    if (pos_ < declared_) {
      // The payload layout ended early. If the frame really holds the
      // declared size, the extra bytes are trailing payload bytes; if it ends
      // sooner, the header lied about the size.
      const uint64_t end = pos_;
      uint8_t scratch[4096];
      while (pos_ < declared_) read(scratch, size_t(std::min<uint64_t>(sizeof scratch, declared_ - pos_)));
      throw Error("bundle payload has trailing bytes", at_payload(where_, end));
    }
    uint8_t extra;
    while (!frame_done_) {
      ZSTD_outBuffer out{&extra, 1, 0};
      step(out);
      if (out.pos) mismatch("more");
    }
    if (in_.pos != in_.size)
      throw Error("bundle has trailing bytes after the compressed payload", at_byte(where_, kHeaderSize + in_.pos));
  }

  [[noreturn]] void mismatch(const std::string& holds) const {
    throw Error("bundle payload size does not match its header (header says " + std::to_string(declared_) +
                    " bytes, frame holds " + holds + ")",
                at_byte(where_, kOffSize));
  }

 private:
  // One call into zstd. A call that moves neither input nor output means zstd
  // needs bytes the file does not have.
  void step(ZSTD_outBuffer& out) {
    const size_t in0 = in_.pos, out0 = out.pos;
    size_t r = ZSTD_decompressStream(dctx_.get(), &out, &in_);
    if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge)
      throw Error("bundle is corrupt (zstd window too large for the payload)", at_byte(where_, kHeaderSize));
    if (ZSTD_isError(r) || (r != 0 && in_.pos == in0 && out.pos == out0))
      throw Error("bundle is truncated or corrupt", at_byte(where_, kHeaderSize));
    if (r == 0) frame_done_ = true;
  }

  ZSTD_inBuffer in_;
  uint64_t declared_, pos_ = 0;
  const std::string& where_;
  std::unique_ptr<ZSTD_DCtx, DCtxFree> dctx_;
  bool frame_done_ = false;
};

}  // namespace

void Bundle::put(const std::string& name, Bytes data) {
  std::string why = name_problem(name);
  if (!why.empty()) throw Error("invalid bundle member name (" + why + ")", printable(name));
  members_.insert_or_assign(name, std::move(data));
}

void Bundle::put(const std::string& name, const std::string& text) { put(name, Bytes(text.begin(), text.end())); }

const Bytes& Bundle::get(const std::string& name) const {
  auto it = members_.find(name);
  if (it == members_.end()) throw Error("bundle lacks member " + printable(name), where);
  return it->second;
}

std::string Bundle::get_text(const std::string& name) const {
  const Bytes& b = get(name);
  return std::string(b.begin(), b.end());
}

Bytes Bundle::encode(int zstd_level) const {
  Bytes out;
  encode_to(members_, zstd_level, [&](ByteView v) { out.insert(out.end(), v.data, v.data + v.size); });
  return out;
}

void Bundle::save(const std::string& path, int zstd_level) const {
  AtomicFile f(path, true);
  encode_to(members_, zstd_level, [&](ByteView v) { f.write(v); });
  f.commit();
}

Bundle Bundle::load(const std::string& path, const MemberLimit& limit) {
  MappedFile f(path);
  return decode(f.view(), path == "-" ? std::string("stdin") : path, uint64_t(16) << 30, limit);
}

Bundle Bundle::decode(ByteView b, const std::string& where, uint64_t max_size, const MemberLimit& limit) {
  // Magic first, on whatever bytes there are, so that a short file that is
  // not a bundle is never called a truncated one.
  if (b.size > 0 && std::memcmp(b.data, kBundleMagic, std::min<size_t>(b.size, 8)) != 0)
    throw Error("not a wit bundle (wrong magic)", where);
  if (b.size < kHeaderSize)
    throw Error("bundle is truncated (header needs " + std::to_string(kHeaderSize) + " bytes, file has " +
                    std::to_string(b.size) + ")",
                where);
  const uint32_t version = get_le32(b.data + kOffVersion);
  if (version != kBundleVersion)
    throw Error("unsupported bundle version " + std::to_string(version) + " (this wit reads version " +
                    std::to_string(kBundleVersion) + ")",
                where);
  const uint32_t flags = get_le32(b.data + kOffFlags);
  if (flags != 0) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "unsupported bundle flags 0x%08x (this wit reads flags 0)", flags);
    throw Error(buf, at_byte(where, kOffFlags));
  }
  const uint64_t declared = get_le64(b.data + kOffSize);
  if (declared > max_size)
    throw Error("bundle payload size " + std::to_string(declared) + " exceeds the limit of " +
                    std::to_string(max_size) + " bytes",
                at_byte(where, kOffSize));
  if (declared < kMinPayload)
    throw Error("bundle header is corrupt (payload size " + std::to_string(declared) + " is below the minimum " +
                    std::to_string(kMinPayload) + ")",
                at_byte(where, kOffSize));

  const ByteView frame = b.sub(kHeaderSize, b.size - kHeaderSize);
  FrameReader r(frame, declared, where);
  // The frame header normally states its content size: check it against the
  // bundle header before allocating anything.
  const unsigned long long content = ZSTD_getFrameContentSize(frame.data, frame.size);
  if (content == ZSTD_CONTENTSIZE_ERROR) throw Error("bundle is truncated or corrupt", at_byte(where, kHeaderSize));
  if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != declared) r.mismatch(std::to_string(content));

  auto xxh = new_xxh3();
  auto field = [&](uint8_t* dst, size_t n) {
    r.read(dst, n);
    XXH3_64bits_update(xxh.get(), dst, n);
  };
  // Members end where the checksum begins.
  const uint64_t body_end = declared - kChecksumSize;

  uint8_t tmp[8];
  field(tmp, 4);
  const uint32_t count = get_le32(tmp);
  if (uint64_t(count) * kMinMember > body_end - 4)
    throw Error("bundle member count " + std::to_string(count) + " cannot fit in a payload of " +
                    std::to_string(declared) + " bytes",
                at_payload(where, 0));

  Bundle out;
  out.where = where;
  std::string prev;
  for (uint32_t i = 0; i < count; i++) {
    const uint64_t start = r.pos();
    auto past_end = [&]() {
      throw Error("bundle member " + std::to_string(i) + " runs past the end of the payload", at_payload(where, start));
    };
    if (body_end - r.pos() < 2) past_end();
    field(tmp, 2);
    const size_t name_len = size_t(tmp[0]) | size_t(tmp[1]) << 8;
    if (name_len == 0 || name_len > kMaxName)
      throw Error(std::string("bundle member name is invalid (") + (name_len ? "longer than 255 bytes" : "empty") + ")",
                  at_payload(where, start));
    if (body_end - r.pos() < name_len + 8) past_end();
    std::string name(name_len, '\0');
    field(reinterpret_cast<uint8_t*>(name.data()), name_len);
    std::string why = name_problem(name);
    if (!why.empty()) throw Error("bundle member name is invalid (" + why + ")", at_payload(where, start));
    if (i > 0 && name == prev) throw Error("bundle has duplicate member " + name, at_payload(where, start));
    if (i > 0 && name < prev)
      throw Error("bundle member names are out of order (" + name + " after " + prev + ")",
                  at_payload(where, start));
    field(tmp, 8);
    const uint64_t len = get_le64(tmp);
    if (len > body_end - r.pos())
      throw Error("bundle member " + name + " (" + std::to_string(len) + " bytes) runs past the end of the payload",
                  at_payload(where, start));
    if (limit) {
      const uint64_t cap = limit(name, out);
      if (len > cap)
        throw Error("bundle member " + name + " declares " + std::to_string(len) + " bytes, more than its kind can hold (" +
                        std::to_string(cap) + ")",
                    at_payload(where, start));
    }
    // Grown as bytes arrive, so memory follows what the frame really holds.
    Bytes data;
    for (uint64_t got = 0; got < len;) {
      const uint64_t piece = std::min<uint64_t>(len - got, std::max<uint64_t>(got, kFirstPiece));
      data.resize(size_t(got + piece));
      field(data.data() + got, size_t(piece));
      got += piece;
    }
    out.members_.emplace_hint(out.members_.end(), name, std::move(data));
    prev = std::move(name);
  }

  const uint64_t sum_at = r.pos();
  r.read(tmp, 8);
  if (get_le64(tmp) != XXH3_64bits_digest(xxh.get()))
    throw Error("bundle is corrupt (payload checksum mismatch)", at_payload(where, sum_at));
  r.finish();
  return out;
}

}  // namespace wit
