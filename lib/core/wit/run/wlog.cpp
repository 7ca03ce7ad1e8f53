// The witness log: entry encoding, the framed append-only file with torn-tail
// recovery, its RFC 6962 tree, and signed tree heads. Formats: docs/witness-log.md.
#include "wit/run/wlog.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "wit/base/crash.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/base/page_buffer.h"
#include "wit/hash/tags.h"

namespace wit {

using nlohmann::json;

namespace {

constexpr uint16_t kKindGenesis = 0;
constexpr uint16_t kKindStep = 1;
constexpr uint32_t kFlagProbe = 1u << 0;
constexpr uint32_t kFlagCkpt = 1u << 1;
constexpr uint32_t kKnownFlags = kFlagProbe | kFlagCkpt;

constexpr size_t kStepFixed = 96;    // header 8, step 8, lr/loss/gnorm 12, flags 4, batch_root 32, state_root 32
constexpr size_t kFrameHeader = 8;   // u32 payload length, u32 checksum
// The largest payload a valid entry can have: a step entry with every optional
// field and five vectors of kMaxEntryFloats floats.
constexpr uint64_t kMaxPayload = kStepFixed + 5 * (4 + 4 * uint64_t(kMaxEntryFloats));

std::string at(const std::string& where, uint64_t off) { return where + " at byte " + std::to_string(off); }

uint32_t frame_check(ByteView payload) { return uint32_t(xxh3_64(payload)); }

void put_f32(Bytes& out, float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  append_le32(out, u);
}

void put_vec(Bytes& out, const std::vector<float>& v) {
  if (v.size() > kMaxEntryFloats)
    throw Error("float vector of " + std::to_string(v.size()) + " values exceeds the limit of " +
                std::to_string(kMaxEntryFloats), "entry");
  append_le32(out, uint32_t(v.size()));
  for (float f : v) put_f32(out, f);
}

void put_hash(Bytes& out, const Hash32& h) { out.insert(out.end(), h.b.begin(), h.b.end()); }

// A bounds-checked little-endian reader over one entry.
struct Reader {
  ByteView b;
  const std::string& where;
  size_t off = 0;

  [[noreturn]] void truncated() const { throw Error("entry is truncated", at(where, b.size)); }
  void need(size_t n) const {
    if (b.size - off < n) truncated();
  }
  uint16_t u16() {
    need(2);
    uint16_t v = uint16_t(b.data[off] | b.data[off + 1] << 8);
    off += 2;
    return v;
  }
  uint32_t u32() {
    need(4);
    uint32_t v = get_le32(b.data + off);
    off += 4;
    return v;
  }
  uint64_t u64() {
    need(8);
    uint64_t v = get_le64(b.data + off);
    off += 8;
    return v;
  }
  float f32() {
    uint32_t u = u32();
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  Hash32 hash() {
    need(32);
    Hash32 h;
    std::memcpy(h.data(), b.data + off, 32);
    off += 32;
    return h;
  }
  std::vector<float> vec() {
    const size_t count_at = off;
    uint32_t n = u32();
    if (n > kMaxEntryFloats)
      throw Error("float vector count " + std::to_string(n) + " exceeds the limit of " +
                  std::to_string(kMaxEntryFloats), at(where, count_at));
    need(size_t(n) * 4);
    std::vector<float> v(n);
    for (uint32_t i = 0; i < n; i++) v[i] = f32();
    return v;
  }
};

}  // namespace

// ---- entries ---------------------------------------------------------------

Bytes encode_entry(const LogEntry& e) {
  const uint16_t kind = e.genesis ? kKindGenesis : kKindStep;
  uint8_t header[8];
  std::memcpy(header, kEntryMagic, 4);
  header[4] = uint8_t(kEntryVersion & 0xff);
  header[5] = uint8_t(kEntryVersion >> 8);
  header[6] = uint8_t(kind & 0xff);
  header[7] = uint8_t(kind >> 8);
  Bytes out(header, header + 8);
  if (e.genesis) {
    put_hash(out, e.g.run_id);
    put_hash(out, e.g.init_root);
    append_le64(out, e.g.n_params);
    return out;
  }
  const StepEntry& s = e.s;
  append_le64(out, s.step);
  put_f32(out, s.lr);
  put_f32(out, s.mean_loss);
  put_f32(out, s.grad_norm);
  append_le32(out, (s.probe ? kFlagProbe : 0) | (s.checkpoint ? kFlagCkpt : 0));
  put_hash(out, s.batch_root);
  put_hash(out, s.state_root);
  put_vec(out, s.losses);
  put_vec(out, s.sketch);
  put_vec(out, s.sketch_m);
  put_vec(out, s.sketch_v);
  if (s.probe) put_vec(out, *s.probe);
  return out;
}

LogEntry decode_entry(ByteView b, const std::string& where) {
  Reader r{b, where};
  // Magic first, even on a short input, so that a non-entry is never called truncated.
  if (b.size > 0 && std::memcmp(b.data, kEntryMagic, std::min<size_t>(b.size, 4)) != 0)  // memcmp(null, ..., 0) is UB
    throw Error("not a witness log entry (bad magic)", at(where, 0));
  if (b.size < 8) r.truncated();
  r.off = 4;
  const uint16_t version = r.u16();
  if (version != kEntryVersion)
    throw Error("unsupported witness log entry version " + std::to_string(version), at(where, 4),
                "this wit reads version " + std::to_string(kEntryVersion) +
                    (version < kEntryVersion ? " (state roots at every step): retrain with this wit" : ""));
  const uint16_t kind = r.u16();
  LogEntry e;
  if (kind == kKindGenesis) {
    e.genesis = true;
    e.g.run_id = r.hash();
    e.g.init_root = r.hash();
    e.g.n_params = r.u64();
  } else if (kind == kKindStep) {
    StepEntry& s = e.s;
    s.step = r.u64();
    if (s.step == 0) throw Error("step entry has step 0 (step 0 is the genesis)", at(where, 8));
    s.lr = r.f32();
    s.mean_loss = r.f32();
    s.grad_norm = r.f32();
    const size_t flags_at = r.off;
    const uint32_t flags = r.u32();
    if (flags & ~kKnownFlags) throw Error("unknown entry flags " + std::to_string(flags), at(where, flags_at));
    s.batch_root = r.hash();
    s.state_root = r.hash();
    s.checkpoint = (flags & kFlagCkpt) != 0;
    s.losses = r.vec();
    s.sketch = r.vec();
    s.sketch_m = r.vec();
    s.sketch_v = r.vec();
    if (flags & kFlagProbe) s.probe = r.vec();
  } else {
    throw Error("unknown witness log entry kind " + std::to_string(kind), at(where, 6));
  }
  if (r.off != b.size) throw Error("entry has trailing bytes", at(where, r.off));
  return e;
}

Hash32 entry_leaf(ByteView encoded) { return kBlake2bTree.leaf(encoded); }

// ---- the log file ----------------------------------------------------------

void WitnessLog::push(const Hash32& leaf, uint64_t offset) {
  offsets_.push_back(offset);
  leaves_.push_back(leaf);
  // Each level j gains a node whenever the leaf count becomes a multiple of 2^j.
  const uint64_t n = leaves_.size();
  Hash32 cur = leaf;
  for (unsigned j = 1; j < 64 && (n & ((uint64_t(1) << j) - 1)) == 0; j++) {
    const uint64_t left_index = (n >> (j - 1)) - 2;
    const Hash32& left = j == 1 ? leaves_[left_index] : levels_[j - 2][left_index];
    cur = kBlake2bTree.node(left, cur);
    if (levels_.size() < j) levels_.emplace_back();
    levels_[j - 1].push_back(cur);
  }
}

Hash32 WitnessLog::range_hash(Range r) const {
  const uint64_t n = r.size();
  if (n == 0) return kBlake2bTree.empty();
  if (n == 1) return leaves_[r.begin];
  if ((n & (n - 1)) == 0 && r.begin % n == 0) {
    const unsigned j = unsigned(__builtin_ctzll(n));
    return levels_[j - 1][r.begin >> j];
  }
  const uint64_t k = split_point(n);
  return kBlake2bTree.node(range_hash({r.begin, r.begin + k}), range_hash({r.begin + k, r.end}));
}

namespace {
// Cuts `path` to `size` bytes, durably. `cannot_open` and `cannot_cut` word
// the two errors ("cannot cut the torn tail: no space left on device").
void truncate_file(const std::string& path, uint64_t size, const std::string& cannot_open, const std::string& cannot_cut) {
  const Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.ok()) throw Error(cannot_open + ": " + errno_text(), path);
  if (::ftruncate(fd.get(), off_t(size)) != 0 || ::fsync(fd.get()) != 0) throw Error(cannot_cut + ": " + errno_text(), path);
}
void truncate_file(const std::string& path, uint64_t size, const std::string& what) { truncate_file(path, size, what, what); }
}  // namespace

namespace {

// What a log file that shrank under a reader means (pread_all's words).
constexpr const char* kLogShorter = "witness log changed on disk since it was opened (it is shorter)";

// Bytes of a log at any offset, through a bounded window (a whole view in
// memory, or a file read with pread into a 1 MiB buffer): what the one frame
// scan reads from. A view stays valid until the next read.
struct MemoryBytes {
  ByteView data;
  uint64_t size() const { return data.size; }
  ByteView read(uint64_t off, size_t n) { return data.sub(size_t(off), n); }
};

class FileWindow {
 public:
  FileWindow(int fd, uint64_t size, const std::string& where) : fd_(fd), size_(size), where_(where) {}
  uint64_t size() const { return size_; }
  ByteView read(uint64_t off, size_t n) {
    if (off < at_ || off + n > at_ + len_) {
      const size_t want = size_t(std::min<uint64_t>(std::max<size_t>(n, kWindow), size_ - off));
      if (buf_.size() < want) buf_.resize(want);
      pread_all(fd_, buf_.data(), want, off, where_, kLogShorter);
      at_ = off;
      len_ = want;
    }
    return ByteView(buf_.data() + (off - at_), n);
  }

 private:
  static constexpr size_t kWindow = size_t(1) << 20;
  int fd_;
  uint64_t size_, at_ = 0, len_ = 0;
  const std::string& where_;
  Bytes buf_;
};

// The one reader of the frame format: walks the frames from the start,
// handing each good one's payload and offset to `on_frame`, and stops at the
// first that is not good (out.torn) or throws for corruption.
template <class Source, class OnFrame>
LogFrames scan_frames(Source& src, const std::string& where, OnFrame&& on_frame) {
  LogFrames out;
  const uint64_t size = src.size();
  auto zero_from = [&](uint64_t off) {
    while (off < size) {
      const size_t n = size_t(std::min<uint64_t>(size - off, uint64_t(1) << 20));
      const ByteView v = src.read(off, n);
      for (size_t i = 0; i < n; i++)
        if (v.data[i]) return false;
      off += n;
    }
    return true;
  };
  uint64_t off = 0;
  while (off < size) {
    if (size - off < kFrameHeader) {
      out.torn = true;  // the frame header itself was cut short
      break;
    }
    const ByteView head = src.read(off, kFrameHeader);
    const uint64_t len = get_le32(head.data);
    const uint32_t check = get_le32(head.data + 4);
    if (len > kMaxPayload)
      throw Error("witness log is corrupt (frame length " + std::to_string(len) + " is impossible)", at(where, off));
    if (len > size - off - kFrameHeader) {
      out.torn = true;  // the payload was cut short
      break;
    }
    const ByteView payload = src.read(off + kFrameHeader, size_t(len));
    if (frame_check(payload) != check) {
      // A torn write that happens to leave the whole length on disk (the last
      // frame, or zeros the file system left after it) is still a torn tail.
      if (off + kFrameHeader + len == size || zero_from(off + kFrameHeader + len)) {
        out.torn = true;
        break;
      }
      throw Error("witness log is corrupt (frame checksum mismatch)", at(where, off));
    }
    on_frame(payload, off);
    off += kFrameHeader + len;
  }
  out.end = off;
  return out;
}

}  // namespace

LogFrames scan_log_frames(ByteView data, const std::string& where) {
  MemoryBytes src{data};
  LogFrames out;
  const LogFrames end = scan_frames(src, where, [&](ByteView payload, uint64_t off) {
    out.payloads.push_back(payload);
    out.offsets.push_back(off);
  });
  out.end = end.end;
  out.torn = end.torn;
  return out;
}

Error torn_log_error(const LogFrames& f, uint64_t size, const std::string& where) {
  return Error("witness log ends in a torn frame (" + std::to_string(size - f.end) + " bytes)", at(where, f.end),
               "a writer crashed mid-append; resuming the run or 'wit-log sign --repair' cuts it");
}

WitnessLog WitnessLog::open(const std::string& path, TornTail torn_tail, IfMissing missing) {
  WitnessLog log;
  log.path_ = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT && missing == IfMissing::kCreate) {
    const Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!fd.ok()) throw Error("cannot create: " + errno_text(), path);
    ::fsync(fd.get());
    sync_parent_dir(path);
  }
  log.fd_ = std::make_shared<const Fd>(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  const int fd = log.fd_->get();
  if (fd < 0) throw Error("cannot open: " + errno_text(), path);
  note_input(fd);
  if (::fstat(fd, &st) != 0) throw Error("cannot stat: " + errno_text(), path);
  if (S_ISDIR(st.st_mode)) throw Error("is a directory", path);
  const uint64_t size = uint64_t(st.st_size);
  FileWindow src(fd, size, path);
  const LogFrames frames =
      scan_frames(src, path, [&](ByteView payload, uint64_t off) { log.push(entry_leaf(payload), off); });
  const uint64_t off = frames.end;
  log.end_ = off;
  if (frames.torn) {
    if (torn_tail == TornTail::kRefuse) throw torn_log_error(frames, size, path);
    if (torn_tail == TornTail::kCut) truncate_file(path, off, "cannot cut the torn tail");
    log.torn_ = size - off;
  }
  return log;
}

Bytes WitnessLog::entry_bytes(uint64_t i) const {
  if (i >= size()) throw Error("no entry " + std::to_string(i) + " (the log has " + std::to_string(size()) + ")", path_);
  const uint64_t off = offsets_[i], end = i + 1 < size() ? offsets_[i + 1] : end_;
  Bytes frame(size_t(end - off));
  pread_all(fd_->get(), frame.data(), frame.size(), off, path_, kLogShorter);
  const ByteView payload(frame.data() + kFrameHeader, frame.size() - kFrameHeader);
  if (get_le32(frame.data()) != payload.size || get_le32(frame.data() + 4) != frame_check(payload))
    throw Error("witness log changed on disk since it was opened", at(path_, off));
  return Bytes(payload.data, payload.data + payload.size);
}

LogEntry WitnessLog::entry(uint64_t i) const {
  return decode_entry(entry_bytes(i), path_ + " entry " + std::to_string(i));
}

Hash32 WitnessLog::root(uint64_t size) const {
  if (size > leaves_.size())
    throw Error("size " + std::to_string(size) + " is beyond the log's " + std::to_string(leaves_.size()) + " entries",
                path_);
  return range_hash({0, size});
}

std::vector<Hash32> WitnessLog::inclusion_proof(uint64_t index, uint64_t size) const {
  if (size > leaves_.size() || index >= size)
    throw Error("no inclusion proof for entry " + std::to_string(index) + " in a tree of " + std::to_string(size) +
                " (the log has " + std::to_string(leaves_.size()) + ")", path_);
  std::vector<Hash32> out;
  for (const Range& r : inclusion_ranges(index, size)) out.push_back(range_hash(r));
  return out;
}

std::vector<Hash32> WitnessLog::consistency_proof(uint64_t old_size, uint64_t new_size) const {
  if (new_size > leaves_.size() || old_size > new_size)
    throw Error("no consistency proof from size " + std::to_string(old_size) + " to " + std::to_string(new_size) +
                " (the log has " + std::to_string(leaves_.size()) + ")", path_);
  std::vector<Hash32> out;
  for (const Range& r : consistency_ranges(old_size, new_size)) out.push_back(range_hash(r));
  return out;
}

void WitnessLog::append(const Bytes& encoded) {
  decode_entry(encoded, "appended entry");  // never write what a reader would reject
  Bytes frame(kFrameHeader);
  put_le32(frame.data(), uint32_t(encoded.size()));
  put_le32(frame.data() + 4, frame_check(encoded));
  frame.insert(frame.end(), encoded.begin(), encoded.end());
  {
    const Fd fd(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
    if (!fd.ok()) throw Error("cannot open for append: " + errno_text(), path_);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || uint64_t(st.st_size) != end_)
      throw Error("witness log changed on disk since it was opened", path_);
    // A crash leaves a prefix of the frame, which open() cuts ("log-append" is
    // the crash-test point halfway through it).
    if (!write_all(fd.get(), frame.data(), frame.size(), "log-append")) throw Error("cannot append: " + errno_text(), path_);
  }
  push(entry_leaf(encoded), end_);
  end_ += frame.size();
}

void WitnessLog::sync() {
  const Fd fd(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  if (!fd.ok()) throw Error("cannot open for sync: " + errno_text(), path_);
  if (::fsync(fd.get()) != 0) throw Error("cannot sync: " + errno_text(), path_);
}

void WitnessLog::truncate(uint64_t n) {
  if (n > size())
    throw Error("cannot truncate to " + std::to_string(n) + " entries: the log has " + std::to_string(size()), path_);
  if (n == size()) return;
  const uint64_t off = offsets_[n];
  truncate_file(path_, off, "cannot truncate");
  leaves_.resize(n);
  offsets_.resize(n);
  for (size_t j = 1; j <= levels_.size(); j++) levels_[j - 1].resize(n >> j);
  while (!levels_.empty() && levels_.back().empty()) levels_.pop_back();
  end_ = off;
}

// ---- signed tree heads -----------------------------------------------------

Bytes TreeHead::signed_bytes() const {
  Bytes out;
  append_le64(out, tags::kTreeHead.size());
  out.insert(out.end(), tags::kTreeHead.begin(), tags::kTreeHead.end());
  put_hash(out, run_id);
  append_le64(out, size);
  put_hash(out, root);
  append_le64(out, time);
  return out;
}

bool TreeHead::signature_ok() const { return verify_signature(key, signed_bytes(), sig); }

Problem entry_problem(const LogEntry& e, uint64_t index, const Hash32& run_id) {
  // Called for every entry of a log: the subject is built only for a problem.
  auto at = [&] { return "entry " + std::to_string(index); };
  if (index == 0) {
    if (!e.genesis) return at() + " is not a genesis entry";
    if (e.g.run_id != run_id) return at() + " is the genesis of run " + e.g.run_id.hex() + ", not of run " + run_id.hex();
    return std::nullopt;
  }
  if (e.genesis) return at() + " is a second genesis entry";
  if (e.s.step != index)
    return at() + " is the entry of step " + std::to_string(e.s.step) + ", not of step " + std::to_string(index);
  return std::nullopt;
}

namespace {

struct EntryProofCtx {
  ByteView encoded;
  uint64_t index, size;
  const Hash32& root;
  const std::vector<Hash32>& path;
  const Hash32& run_id;
  const std::string& where;
  ProvedEntry& out;
};

void entry_included(EntryProofCtx& c) {
  const ProofError pe = verify_inclusion(kBlake2bTree, c.index, c.size, entry_leaf(c.encoded), c.path, c.root);
  if (pe != ProofError::kOk)
    reject("log entry " + std::to_string(c.index) + " is not in the signed log: " + to_string(pe));
}
void entry_decodes(EntryProofCtx& c) {
  c.out.entry = decode_entry(c.encoded, c.where);
  c.out.decoded = true;
}
void entry_in_place(EntryProofCtx& c) { reject_if(entry_problem(c.out.entry, c.index, c.run_id)); }

}  // namespace

ProvedEntry verify_entry_proof(ByteView encoded, uint64_t index, uint64_t size, const Hash32& root,
                               const std::vector<Hash32>& path, const Hash32& run_id, const std::string& where) {
  ProvedEntry out;
  EntryProofCtx c{encoded, index, size, root, path, run_id, where, out};
  if (auto no = run_checks<EntryProofCtx>(c, {entry_included, {entry_decodes, OnError::kNo}, entry_in_place}))
    out.no = std::move(no->reason);
  return out;
}

Problem head_problem(const TreeHead& h, const std::optional<Hash32>& run_id,
                                        const std::optional<PublicKey>& key, const std::string& subject) {
  if (run_id && h.run_id != *run_id) return subject + " names another run";
  if (key && h.key != *key) return subject + " is signed by another key than the run's trainer key";
  if (!h.signature_ok()) return subject + " has a bad signature";
  return std::nullopt;
}

json TreeHead::to_json() const {
  return {{"run_id", run_id.hex()}, {"size", size}, {"root", root.hex()}, {"time", time},
          {"key", key.hex()}, {"sig", to_hex(ByteView(sig.data(), sig.size()))}};
}

TreeHead TreeHead::from_json(const json& j, const std::string& where) {
  constexpr jsonf::Fields F{"invalid tree head"};
  if (!j.is_object()) F.bad("not a json object", where);
  F.only_keys(j, {"run_id", "size", "root", "time", "key", "sig"}, where);
  TreeHead h;
  if (!Hash32::from_hex(F.str(j, "run_id", where), h.run_id)) F.bad("field 'run_id' is not 64 hex digits", where);
  if (!Hash32::from_hex(F.str(j, "root", where), h.root)) F.bad("field 'root' is not 64 hex digits", where);
  if (!PublicKey::from_hex(F.str(j, "key", where), h.key)) F.bad("field 'key' is not 64 hex digits", where);
  const std::string sig = F.str(j, "sig", where);
  Bytes sb;
  if (sig.size() != 128 || !from_hex(sig, sb)) F.bad("field 'sig' is not 128 hex digits", where);
  std::copy(sb.begin(), sb.end(), h.sig.begin());
  h.size = F.u64(j, "size", where);
  h.time = F.u64(j, "time", where);
  return h;
}

TreeHead sign_head(const SecretKey& k, const Hash32& run_id, uint64_t size, const Hash32& root, uint64_t time) {
  TreeHead h;
  h.run_id = run_id;
  h.size = size;
  h.root = root;
  h.time = time;
  h.key = k.pub();
  h.sig = sign(k, h.signed_bytes());
  return h;
}

void append_head(const std::string& path, const TreeHead& h) {
  const std::string line = h.to_json().dump() + "\n";
  const Fd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.ok()) throw Error("cannot open for append: " + errno_text(), path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw Error("cannot stat: " + errno_text(), path);
  const bool created = st.st_size == 0;
  if (st.st_size > 0) {
    char last = 0;
    if (::pread(fd.get(), &last, 1, st.st_size - 1) != 1) throw Error("cannot read: " + errno_text(), path);
    if (last != '\n')
      throw Error("heads file ends in a torn line", path, "a writer crashed mid-append; 'wit-log sign --repair' cuts the line");
  }
  if (!write_all(fd.get(), line.data(), line.size(), "head-write")) throw Error("cannot append: " + errno_text(), path);
  if (::fsync(fd.get()) != 0) throw Error("cannot sync: " + errno_text(), path);
  if (created) sync_parent_dir(path);
}

std::vector<TreeHead> read_heads(const std::string& path, TornLine torn_line, uint64_t* torn_bytes) {
  const std::string text = read_file(path);
  std::vector<TreeHead> heads;
  if (torn_bytes) *torn_bytes = 0;
  size_t pos = 0;
  uint64_t line = 0;
  while (pos < text.size()) {
    line++;
    const std::string where = path + ":" + std::to_string(line);
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      if (torn_line == TornLine::kRefuse)
        throw Error("torn last line (no newline)", where, "a writer crashed mid-append; the line is not a head");
      if (torn_bytes) *torn_bytes = text.size() - pos;
      break;
    }
    const std::string_view s(text.data() + pos, nl - pos);
    pos = nl + 1;
    if (s.empty()) throw Error("invalid tree head: empty line", where);
    const json j = jsonf::parse(s, "invalid tree head", where);
    heads.push_back(TreeHead::from_json(j, where));
  }
  return heads;
}

uint64_t cut_torn_heads(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return 0;
  const std::string text = read_file(path);
  if (text.empty() || text.back() == '\n') return 0;
  const size_t nl = text.rfind('\n');
  const uint64_t keep = nl == std::string::npos ? 0 : nl + 1;
  truncate_file(path, keep, "cannot open for repair", "cannot cut the torn line");
  return text.size() - keep;
}

}  // namespace wit
