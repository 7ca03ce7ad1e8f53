// Encoding and strict, bounded decoding of bundles (docs/bundle.md): a header,
// then one zstd frame holding the payload (members in name order, XXH3-64).
// One encoder (Encoder, behind Bundle::encode/save and BundleWriter) and one
// decoder (BundleReader, behind Bundle::decode/load and SpooledBundle).
#include "wit/run/bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "wit/base/binary_header.h"
#include "wit/base/check.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/hash/hash.h"

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
// Pieces a member is streamed in: to a reader's sink, and from a file.
constexpr size_t kSinkPiece = size_t(128) << 10, kFilePiece = size_t(1) << 20;
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

// Why `name` is not a valid member name, or nothing when it is. The rules
// make every name a safe relative path: no absolute paths, no "..", no empty
// or "." components, so a member could be written to disk under its name.
Problem name_problem(std::string_view name) {
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
  return std::nullopt;
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

// A member a writer is given must have a valid name (a reader's message names the byte offset instead).
void require_member_name(const std::string& name) {
  if (const Problem why = name_problem(name)) throw Error("invalid bundle member name (" + *why + ")", printable(name));
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


std::array<uint8_t, kHeaderSize> header_bytes(uint64_t payload_size) {
  std::array<uint8_t, kHeaderSize> h{};
  std::memcpy(h.data(), kBundleMagic, 8);
  put_le32(h.data() + kOffVersion, kBundleVersion);
  put_le32(h.data() + kOffFlags, 0);
  put_le64(h.data() + kOffSize, payload_size);
  return h;
}

// The one encoder: the payload (count, members, checksum) compressed into one
// zstd frame as it comes, handed to `sink` in pieces of zstd's output size.
// It checks what a reader would refuse: names (docs/bundle.md#names), their
// strict order, the announced count, and each member's announced length.
// With the payload size known in advance the frame records it (its content
// size); without, the frame has none and its window is kept at most 8 MiB,
// which every reader accepts.
class Encoder {
 public:
  using Sink = std::function<void(ByteView)>;
  Encoder(Sink sink, uint32_t count, int level, std::optional<uint64_t> payload_size, std::string where)
      : sink_(std::move(sink)), count_(count), where_(std::move(where)), cctx_(ZSTD_createCCtx()), xxh_(new_xxh3()),
        out_(ZSTD_CStreamOutSize()) {
    if (!cctx_) throw std::bad_alloc();
    check(ZSTD_CCtx_setParameter(cctx_.get(), ZSTD_c_compressionLevel, level));
    check(ZSTD_CCtx_setParameter(cctx_.get(), ZSTD_c_contentSizeFlag, 1));
    if (payload_size) {
      check(ZSTD_CCtx_setPledgedSrcSize(cctx_.get(), *payload_size));
    } else {
      // Levels up to 19 use at most 2^23 when the size is unknown; the ultra
      // levels (20 to 22) would use up to 2^27, which a reader of a small
      // payload refuses.
      if (level > 19) check(ZSTD_CCtx_setParameter(cctx_.get(), ZSTD_c_windowLog, kWindowLogStream));
    }
    uint8_t n[4];
    put_le32(n, count);
    field(ByteView(n, 4));
  }

  void member(const std::string& name, uint64_t size) {
    end_member();
    require_member_name(name);
    if (members_ == count_)
      throw Error("bundle has more members than the " + std::to_string(count_) + " announced (" + name + ")", where_);
    if (members_ > 0 && name <= prev_)
      throw Error(name == prev_ ? "bundle member " + name + " is added twice"
                                : "bundle members must be added in name order (" + name + " after " + prev_ + ")",
                  where_);
    Bytes head(2, 0);
    head[0] = uint8_t(name.size());
    head[1] = uint8_t(name.size() >> 8);
    head.insert(head.end(), name.begin(), name.end());
    append_le64(head, size);
    field(ByteView(head));
    prev_ = name;
    left_ = size;
    members_++;
  }

  void data(ByteView v) {
    if (v.size > left_)
      throw Error("bundle member " + prev_ + " gets more bytes than the length it announced", where_);
    field(v);
    left_ -= v.size;
  }

  // The checksum and the end of the frame; returns the payload size.
  uint64_t finish() {
    end_member();
    if (members_ != count_)
      throw Error("bundle has " + std::to_string(members_) + " members, " + std::to_string(count_) + " were announced",
                  where_);
    uint8_t sum[8];
    put_le64(sum, XXH3_64bits_digest(xxh_.get()));
    feed(ByteView(sum, 8), ZSTD_e_end);
    return pos_ + 8;
  }

 private:
  static void check(size_t r) {
    if (ZSTD_isError(r)) throw Error("cannot compress bundle: " + zstd_error(r));
  }
  void end_member() {
    if (left_ != 0)
      throw Error("bundle member " + prev_ + " ends " + std::to_string(left_) + " bytes short of its length", where_);
  }
  void feed(ByteView v, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{v.data, v.size, 0};
    for (;;) {
      ZSTD_outBuffer o{out_.data(), out_.size(), 0};
      const size_t r = ZSTD_compressStream2(cctx_.get(), &o, &in, mode);
      check(r);
      if (o.pos) sink_(ByteView(out_.data(), o.pos));
      if (mode == ZSTD_e_end ? r == 0 : in.pos == in.size) break;
    }
  }
  void field(ByteView v) {
    XXH3_64bits_update(xxh_.get(), v.data, v.size);
    feed(v, ZSTD_e_continue);
    pos_ += v.size;
  }

  Sink sink_;
  uint32_t count_, members_ = 0;
  std::string where_, prev_;
  uint64_t left_ = 0, pos_ = 0;
  std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx_;
  std::unique_ptr<XXH3_state_t, XxhFree> xxh_;
  Bytes out_;
};

// A whole in-memory bundle, its payload size known: header, then the frame.
void encode_members(const std::map<std::string, Bytes>& members, int level, const Encoder::Sink& sink) {
  if (members.size() > UINT32_MAX) throw Error("bundle has too many members (" + std::to_string(members.size()) + ")");
  uint64_t payload_size = kMinPayload;
  for (const auto& [name, data] : members) payload_size += 2 + name.size() + 8 + data.size();
  const auto header = header_bytes(payload_size);
  sink(ByteView(header.data(), header.size()));
  Encoder enc(sink, uint32_t(members.size()), level, payload_size, "");
  for (const auto& [name, data] : members) {
    enc.member(name, data.size());
    enc.data(ByteView(data));
  }
  enc.finish();
}

}  // namespace

// ---------------------------------------------------------------- reading

// The decoder's state: where the compressed bytes come from (a view of the
// whole file, or a pull through a fixed buffer), zstd, and the walk through
// the payload. Every payload byte is pulled out one field at a time straight
// into its destination, and never more than the header's payload size in
// total, so nothing is allocated beyond what the (capped) header declares.
struct BundleReader::Impl {
  std::string where;
  uint64_t declared = 0;
  // Input: `in` is the current window of the frame; `consumed` counts the
  // frame bytes before it. A view of the whole file is one window.
  Pull pull;
  Bytes inbuf;
  ZSTD_inBuffer in{nullptr, 0, 0};
  uint64_t consumed = 0;
  bool eof = true;
  std::unique_ptr<ZSTD_DCtx, DCtxFree> dctx;
  bool frame_done = false;
  uint64_t pos = 0;  // payload bytes decompressed so far
  // The walk: members announced and begun, the current one's header.
  std::unique_ptr<XXH3_state_t, XxhFree> xxh;
  uint32_t count = 0, begun = 0;
  bool done = false;
  std::string name, prev;
  uint64_t size = 0, left = 0, start = 0;

  // Header checks, in the documented order, on the first min(24, size) bytes.
  void check_header(ByteView head, uint64_t max_size) {
    check_binary_header(head, kBundleMagic, kHeaderSize, kBundleVersion, "bundle", where);
    const uint32_t flags = get_le32(head.data + kOffFlags);
    if (flags != 0) {
      char buf[80];
      std::snprintf(buf, sizeof buf, "unsupported bundle flags 0x%08x (this wit reads flags 0)", flags);
      throw Error(buf, at_byte(where, kOffFlags));
    }
    declared = get_le64(head.data + kOffSize);
    if (declared > max_size)
      throw Error("bundle payload size " + std::to_string(declared) + " exceeds the limit of " +
                      std::to_string(max_size) + " bytes",
                  at_byte(where, kOffSize));
    if (declared < kMinPayload)
      throw Error("bundle header is corrupt (payload size " + std::to_string(declared) + " is below the minimum " +
                      std::to_string(kMinPayload) + ")",
                  at_byte(where, kOffSize));
  }

  // With `in` holding the frame's first bytes (all of them, or a full
  // buffer): zstd, the frame header's content size, the member count.
  void begin_frame() {
    dctx.reset(ZSTD_createDCtx());
    if (!dctx) throw std::bad_alloc();
    // zstd sizes its window buffer from the frame header. A window larger
    // than the payload is never needed, but a streaming compressor that did
    // not know the size uses its level's default (8 MiB up to level 19), so
    // allow the larger of the two: zstd's own buffer then stays below
    // max(declared size, 8 MiB) plus two blocks whatever the frame claims.
    int log = kWindowLogStream;
    while (log < kWindowLogMax && (uint64_t(1) << log) < declared) log++;
    ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, log);
    // The frame header normally states its content size: check it against the
    // bundle header before allocating anything.
    const unsigned long long content = ZSTD_getFrameContentSize(in.src, in.size);
    if (content == ZSTD_CONTENTSIZE_ERROR) throw Error("bundle is truncated or corrupt", at_byte(where, kHeaderSize));
    if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != declared) mismatch(std::to_string(content));

    xxh = new_xxh3();
    uint8_t n[4];
    field(n, 4);
    count = get_le32(n);
    if (uint64_t(count) * kMinMember > body_end() - 4)
      throw Error("bundle member count " + std::to_string(count) + " cannot fit in a payload of " +
                      std::to_string(declared) + " bytes",
                  at_payload(where, 0));
  }

  // Members end where the checksum begins.
  uint64_t body_end() const { return declared - kChecksumSize; }

  // Fills `inbuf` from the pull (as far as it goes) and makes it the window.
  void refill() {
    consumed += in.size;
    size_t got = 0;
    while (got < inbuf.size()) {
      const size_t n = pull(inbuf.data() + got, inbuf.size() - got);
      if (n == 0) {
        eof = true;
        break;
      }
      got += n;
    }
    in = ZSTD_inBuffer{inbuf.data(), got, 0};
  }

  // One call into zstd. A call that moves neither input nor output means zstd
  // needs bytes the file does not have.
  void step(ZSTD_outBuffer& out) {
    if (in.pos == in.size && !eof) refill();
    const size_t in0 = in.pos, out0 = out.pos;
    const size_t r = ZSTD_decompressStream(dctx.get(), &out, &in);
    if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge)
      throw Error("bundle is corrupt (zstd window too large for the payload)", at_byte(where, kHeaderSize));
    if (ZSTD_isError(r) || (r != 0 && in.pos == in0 && out.pos == out0))
      throw Error("bundle is truncated or corrupt", at_byte(where, kHeaderSize));
    if (r == 0) frame_done = true;
  }

  // Fills dst[0, n) with the next payload bytes. Precondition: pos + n <= declared.
  void read(uint8_t* dst, size_t n) {
    ZSTD_outBuffer out{dst, n, 0};
    while (out.pos < out.size) {
      if (frame_done) mismatch(std::to_string(pos + out.pos));
      step(out);
    }
    pos += n;
  }
  void field(uint8_t* dst, size_t n) {
    read(dst, n);
    XXH3_64bits_update(xxh.get(), dst, n);
  }

  [[noreturn]] void mismatch(const std::string& holds) const {
    throw Error("bundle payload size does not match its header (header says " + std::to_string(declared) +
                    " bytes, frame holds " + holds + ")",
                at_byte(where, kOffSize));
  }

  // The next member's header, checked; false (after the end checks) when none is left.
  bool next() {
    if (done) return false;
    if (left > 0) data([](ByteView) {});
    if (begun == count) {
      finish();
      done = true;
      return false;
    }
    const uint32_t i = begun;
    start = pos;
    auto past_end = [&]() {
      throw Error("bundle member " + std::to_string(i) + " runs past the end of the payload", at_payload(where, start));
    };
    uint8_t tmp[8];
    if (body_end() - pos < 2) past_end();
    field(tmp, 2);
    const size_t name_len = size_t(tmp[0]) | size_t(tmp[1]) << 8;
    if (name_len == 0 || name_len > kMaxName)
      throw Error(std::string("bundle member name is invalid (") + (name_len ? "longer than 255 bytes" : "empty") + ")",
                  at_payload(where, start));
    if (body_end() - pos < name_len + 8) past_end();
    prev = std::move(name);
    name.assign(name_len, '\0');
    field(reinterpret_cast<uint8_t*>(name.data()), name_len);
    if (const Problem why = name_problem(name)) throw Error("bundle member name is invalid (" + *why + ")", at_payload(where, start));
    if (i > 0 && name == prev) throw Error("bundle has duplicate member " + name, at_payload(where, start));
    if (i > 0 && name < prev)
      throw Error("bundle member names are out of order (" + name + " after " + prev + ")", at_payload(where, start));
    field(tmp, 8);
    size = get_le64(tmp);
    if (size > body_end() - pos)
      throw Error("bundle member " + name + " (" + std::to_string(size) + " bytes) runs past the end of the payload",
                  at_payload(where, start));
    left = size;
    begun++;
    return true;
  }

  // What is left of the current member, to `sink` in pieces.
  template <class Sink>
  void data(Sink&& sink) {
    Bytes piece(size_t(std::min<uint64_t>(left, kSinkPiece)));
    while (left > 0) {
      const size_t n = size_t(std::min<uint64_t>(left, piece.size()));
      field(piece.data(), n);
      left -= n;
      sink(ByteView(piece.data(), n));
    }
  }

  // After the last member: the checksum, then the frame must hold exactly the
  // declared size and end exactly at the end of the file.
  void finish() {
    const uint64_t sum_at = pos;
    uint8_t tmp[8];
    read(tmp, 8);
    if (get_le64(tmp) != XXH3_64bits_digest(xxh.get()))
      throw Error("bundle is corrupt (payload checksum mismatch)", at_payload(where, sum_at));
    if (pos < declared) {
      // The payload layout ended early. If the frame really holds the
      // declared size, the extra bytes are trailing payload bytes; if it ends
      // sooner, the header lied about the size.
      const uint64_t end = pos;
      uint8_t scratch[4096];
      while (pos < declared) read(scratch, size_t(std::min<uint64_t>(sizeof scratch, declared - pos)));
      throw Error("bundle payload has trailing bytes", at_payload(where, end));
    }
    uint8_t extra;
    while (!frame_done) {
      ZSTD_outBuffer out{&extra, 1, 0};
      step(out);
      if (out.pos) mismatch("more");
    }
    if (in.pos == in.size && !eof) refill();
    if (in.pos != in.size)
      throw Error("bundle has trailing bytes after the compressed payload",
                  at_byte(where, kHeaderSize + consumed + in.pos));
  }
};

BundleReader::BundleReader(ByteView bytes, const std::string& where, uint64_t max_size) : impl_(new Impl) {
  Impl& m = *impl_;
  m.where = where;
  m.check_header(bytes.sub(0, std::min<size_t>(bytes.size, kHeaderSize)), max_size);
  m.in = ZSTD_inBuffer{bytes.data + kHeaderSize, bytes.size - kHeaderSize, 0};
  m.begin_frame();
}

BundleReader::BundleReader(Pull pull, const std::string& where, uint64_t max_size) : impl_(new Impl) {
  Impl& m = *impl_;
  m.where = where;
  m.pull = std::move(pull);
  uint8_t head[kHeaderSize];
  size_t got = 0;
  while (got < kHeaderSize) {
    const size_t n = m.pull(head + got, kHeaderSize - got);
    if (n == 0) break;
    got += n;
  }
  m.check_header(ByteView(head, got), max_size);
  m.inbuf.resize(std::max<size_t>(ZSTD_DStreamInSize(), 64));
  m.eof = false;
  m.refill();
  m.begin_frame();
}

namespace {

// A file ("-": stdin) a BundleReader pulls from with read(2), hashed as it is
// read when `hash` is set (SpooledBundle::open_hashed). Shared by the reader's
// pull and the opener, which can read the rest of it after a refusal.
struct FileInput {
  std::shared_ptr<const Fd> file;  // closed with the last holder; stdin is never closed
  int fd = -1;
  std::string where;
  std::unique_ptr<Blake2b> hash;
  uint64_t bytes = 0;
  bool end = false;  // read(2) said end of file

  size_t pull(uint8_t* dst, size_t cap) {
    for (;;) {
      const ssize_t r = ::read(fd, dst, cap);
      if (r > 0) {
        if (hash) hash->update(ByteView(dst, size_t(r)));
        bytes += uint64_t(r);
        return size_t(r);
      }
      if (r == 0) {
        if (cap > 0) end = true;
        return 0;
      }
      if (errno != EINTR) throw Error("cannot read: " + errno_text(), where);
    }
  }
  // Reads (and hashes) what is left of the file.
  void drain() {
    std::vector<uint8_t> buf(size_t(1) << 16);
    while (!end) pull(buf.data(), buf.size());
  }
  FileDigest digest() {
    FileDigest d;
    d.hex = hash->final().hex();
    d.bytes = bytes;
    d.whole = end;
    return d;
  }
};

std::shared_ptr<FileInput> open_input(const std::string& path, bool hashed) {
  auto in = std::make_shared<FileInput>();
  const bool std_in = path == "-";
  in->where = std_in ? std::string("stdin") : path;
  in->file = std::make_shared<const Fd>(std_in ? -1 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  in->fd = std_in ? 0 : in->file->get();
  if (in->fd < 0) throw Error("cannot open: " + errno_text(), path);
  if (!std_in) note_input(in->fd);
  struct stat st {};
  if (::fstat(in->fd, &st) == 0 && S_ISDIR(st.st_mode)) throw Error("is a directory", path);
  if (hashed) in->hash = std::make_unique<Blake2b>();
  return in;
}

BundleReader reader_of(const std::shared_ptr<FileInput>& in, uint64_t max_size) {
  return BundleReader([in](uint8_t* dst, size_t cap) { return in->pull(dst, cap); }, in->where, max_size);
}

}  // namespace

BundleReader BundleReader::open(const std::string& path, uint64_t max_size) {
  return reader_of(open_input(path, false), max_size);
}

BundleReader::BundleReader(BundleReader&&) noexcept = default;
BundleReader& BundleReader::operator=(BundleReader&&) noexcept = default;
BundleReader::~BundleReader() = default;

bool BundleReader::next() { return impl_->next(); }
const std::string& BundleReader::name() const { return impl_->name; }
uint64_t BundleReader::size() const { return impl_->size; }
const std::string& BundleReader::where() const { return impl_->where; }

void BundleReader::check_size(uint64_t cap) const {
  const Impl& m = *impl_;
  if (m.size > cap)
    throw Error("bundle member " + m.name + " declares " + std::to_string(m.size) + " bytes, more than its kind can hold (" +
                    std::to_string(cap) + ")",
                at_payload(m.where, m.start));
}

Bytes BundleReader::read() {
  Impl& m = *impl_;
  if (m.left != m.size) throw Error("bundle member " + m.name + " is read twice", m.where);
  // Grown as bytes arrive, so memory follows what the frame really holds.
  Bytes data;
  for (uint64_t got = 0; got < m.size;) {
    const uint64_t piece = std::min<uint64_t>(m.size - got, std::max<uint64_t>(got, kFirstPiece));
    data.resize(size_t(got + piece));
    m.field(data.data() + got, size_t(piece));
    got += piece;
  }
  m.left = 0;
  return data;
}

void BundleReader::read_to(const std::function<void(ByteView)>& sink) {
  Impl& m = *impl_;
  if (m.left != m.size) throw Error("bundle member " + m.name + " is read twice", m.where);
  m.data(sink);
}

// ---------------------------------------------------------------- Bundle

void Bundle::put(const std::string& name, Bytes data) {
  require_member_name(name);
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
  encode_members(members_, zstd_level, [&](ByteView v) { out.insert(out.end(), v.data, v.data + v.size); });
  return out;
}

void Bundle::save(const std::string& path, int zstd_level) const {
  AtomicFile f(path, true);
  encode_members(members_, zstd_level, [&](ByteView v) { f.write(v); });
  f.commit();
}

Bundle Bundle::read_all(BundleReader& r, const MemberLimit& limit) {
  Bundle out;
  out.where = r.where();
  while (r.next()) {
    if (limit) r.check_size(limit(r.name(), out));
    out.members_.emplace_hint(out.members_.end(), r.name(), r.read());
  }
  return out;
}

Bundle Bundle::decode(ByteView b, const std::string& where, uint64_t max_size, const MemberLimit& limit) {
  BundleReader r(b, where, max_size);
  return read_all(r, limit);
}

Bundle Bundle::load(const std::string& path, const MemberLimit& limit) {
  BundleReader r = BundleReader::open(path);
  return read_all(r, limit);
}

// ---------------------------------------------------------------- writing

struct BundleWriter::Impl {
  std::string path;
  std::unique_ptr<AtomicFile> out;
  std::unique_ptr<ScratchFile> spool;  // the frame, when the output cannot go back to its header
  std::unique_ptr<Encoder> enc;
  bool broken = false;
};

BundleWriter::BundleWriter(const std::string& path, uint32_t count, int zstd_level) : impl_(new Impl) {
  Impl& m = *impl_;
  m.path = path == "-" ? std::string("stdout") : path;
  m.out = std::make_unique<AtomicFile>(path, true);
  Encoder::Sink sink;
  if (m.out->seekable()) {
    const auto header = header_bytes(0);  // its payload size is written by finish()
    m.out->write(ByteView(header.data(), header.size()));
    sink = [&m](ByteView v) { m.out->write(v); };
  } else {
    m.spool = std::make_unique<ScratchFile>();
    sink = [&m](ByteView v) { m.spool->append(v); };
  }
  m.enc = std::make_unique<Encoder>(std::move(sink), count, zstd_level, std::nullopt, m.path);
}

BundleWriter::~BundleWriter() = default;

// Runs one step of writing; any error ends the writer and removes its temporary.
template <class Fn>
void BundleWriter::guarded(Fn&& fn) {
  Impl& m = *impl_;
  if (m.broken) throw Error("bundle writer cannot go on after an error or after finish", m.path);
  try {
    fn(m);
  } catch (...) {
    m.broken = true;
    m.enc.reset();
    m.spool.reset();
    m.out.reset();
    throw;
  }
}

void BundleWriter::add(const std::string& name, ByteView data) { add(name, std::vector<ByteView>{data}); }

void BundleWriter::add(const std::string& name, const std::vector<ByteView>& pieces) {
  guarded([&](Impl& m) {
    uint64_t total = 0;
    for (const ByteView& p : pieces) total += p.size;
    m.enc->member(name, total);
    for (const ByteView& p : pieces) m.enc->data(p);
  });
}

void BundleWriter::add_file(const std::string& name, const std::string& file) {
  guarded([&](Impl& m) {
    const Fd owner(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    const int fd = owner.get();
    if (fd < 0) throw Error("cannot open: " + errno_text(), file);
    note_input(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw Error("cannot stat: " + errno_text(), file);
    if (!S_ISREG(st.st_mode)) throw Error("not a regular file, so its size is unknown", file);
    const uint64_t size = uint64_t(st.st_size);
    m.enc->member(name, size);
    Bytes buf(size_t(std::min<uint64_t>(std::max<uint64_t>(size, 1), kFilePiece)));
    uint64_t got = 0;
    for (;;) {
      const ssize_t r = ::read(fd, buf.data(), buf.size());
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw Error("cannot read: " + errno_text(), file);
      if (r == 0) break;
      if (uint64_t(r) > size - got) throw Error("file grew while it was added to a bundle", file);
      m.enc->data(ByteView(buf.data(), size_t(r)));
      got += uint64_t(r);
    }
    if (got != size) throw Error("file shrank while it was added to a bundle", file);
  });
}

void BundleWriter::finish() {
  guarded([&](Impl& m) {
    const auto header = header_bytes(m.enc->finish());
    if (m.spool) {
      m.out->write(ByteView(header.data(), header.size()));
      Bytes buf(size_t(std::min<uint64_t>(std::max<uint64_t>(m.spool->size(), 1), kFilePiece)));
      for (uint64_t off = 0; off < m.spool->size();) {
        const size_t n = size_t(std::min<uint64_t>(buf.size(), m.spool->size() - off));
        m.spool->read(off, buf.data(), n);
        m.out->write(ByteView(buf.data(), n));
        off += n;
      }
    } else {
      m.out->write_at(0, ByteView(header.data(), header.size()));
    }
    m.out->commit();
  });
  impl_->broken = true;  // finished: nothing more may be added
}

// ---------------------------------------------------------------- SpooledBundle

SpooledBundle::SpooledBundle() = default;
SpooledBundle::SpooledBundle(SpooledBundle&&) noexcept = default;
SpooledBundle& SpooledBundle::operator=(SpooledBundle&&) noexcept = default;
SpooledBundle::~SpooledBundle() = default;

SpooledBundle SpooledBundle::spool(BundleReader& r, const MemberLimit& limit, uint64_t keep) {
  SpooledBundle out;
  out.where = r.where();
  out.kept_.where = out.where;
  while (r.next()) {
    if (limit) r.check_size(limit(r.name(), out.kept_));
    if (r.size() <= keep) {
      out.kept_.put(r.name(), r.read());
      continue;
    }
    if (!out.scratch_) out.scratch_ = std::make_unique<ScratchFile>();
    const Place at{out.scratch_->size(), r.size()};
    r.read_to([&](ByteView v) { out.scratch_->append(v); });
    out.spilled_.emplace(r.name(), at);
  }
  return out;
}

SpooledBundle SpooledBundle::open(const std::string& path, const MemberLimit& limit, uint64_t keep) {
  BundleReader r = BundleReader::open(path);
  return spool(r, limit, keep);
}

SpooledBundle SpooledBundle::open_hashed(const std::string& path, const MemberLimit& limit, uint64_t keep,
                                         FileDigest* seen) {
  const std::shared_ptr<FileInput> in = open_input(path, true);
  try {
    BundleReader r = reader_of(in, kMaxBundlePayload);
    SpooledBundle out = spool(r, limit, keep);
    // The reader refuses bytes after the frame, so it has read to the end of
    // the file; drain() reads nothing then, and makes `whole` true whatever it did.
    in->drain();
    out.digest_ = in->digest();
    if (seen) *seen = out.digest_;
    return out;
  } catch (...) {
    if (seen) {
      try {
        in->drain();
        *seen = in->digest();
      } catch (const std::exception&) {
        *seen = FileDigest{};  // not read through: the refusal stands on its own
        seen->bytes = in->bytes;
      }
    }
    throw;
  }
}

SpooledBundle SpooledBundle::assemble(const std::string& where) {
  SpooledBundle out;
  out.where = where;
  out.kept_.where = where;
  return out;
}

void SpooledBundle::add(const std::string& name, Bytes data) {
  if (has(name)) throw Error("duplicate member name " + printable(name), where);
  kept_.put(name, std::move(data));  // checks the name
}

FileDigest SpooledBundle::add_file(const std::string& name, int fd, const std::string& path) {
  if (auto why = name_problem(name)) throw Error("invalid member name " + printable(name) + ": " + *why, where);
  if (has(name)) throw Error("duplicate member name " + printable(name), where);
  if (!scratch_) scratch_ = std::make_unique<ScratchFile>();
  const Place at{scratch_->size(), 0};
  Bytes buf(kFilePiece);
  Blake2b h;
  uint64_t got = 0;
  for (;;) {
    const ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw Error("cannot read: " + errno_text(), path);
    if (r == 0) break;
    const ByteView piece(buf.data(), size_t(r));
    scratch_->append(piece);
    h.update(piece);
    got += uint64_t(r);
  }
  spilled_.emplace(name, Place{at.offset, got});
  return FileDigest{h.final().hex(), got, true};
}

bool SpooledBundle::has(const std::string& name) const { return kept_.has(name) || spilled_.count(name) != 0; }

const SpooledBundle::Place& SpooledBundle::spilled_place(const std::string& name) const {
  auto it = spilled_.find(name);
  if (it == spilled_.end()) throw Error("bundle lacks member " + printable(name), where);
  return it->second;
}

Bytes SpooledBundle::get(const std::string& name) const {
  if (kept_.has(name)) return kept_.get(name);
  const Place& at = spilled_place(name);
  Bytes out = huge_page_bytes(size_t(at.size));
  scratch_->read(at.offset, out.data(), out.size());
  return out;
}

SpooledBundle::View::View() = default;
SpooledBundle::View::View(View&&) noexcept = default;
SpooledBundle::View::~View() = default;
ByteView SpooledBundle::View::bytes() const { return map_ ? map_->view() : ByteView(kept_); }

SpooledBundle::View SpooledBundle::view(const std::string& name) const {
  View v;
  if (kept_.has(name)) {
    v.kept_ = kept_.get(name);
    return v;
  }
  const Place& at = spilled_place(name);
  v.map_ = scratch_->map(at.offset, size_t(at.size));
  return v;
}

std::string SpooledBundle::get_text(const std::string& name) const {
  const Bytes b = get(name);
  return std::string(b.begin(), b.end());
}

std::vector<std::string> SpooledBundle::names() const {
  std::vector<std::string> out;
  for (const auto& [name, data] : kept_.members()) out.push_back(name);
  for (const auto& [name, at] : spilled_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace wit
