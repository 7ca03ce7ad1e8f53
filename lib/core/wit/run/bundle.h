// Bundles: a named set of byte strings in one zstd-compressed file with a
// magic number and version (response bundles, run bundles). Members are kept
// in name order, so the same members always give the same bytes.
// Format, and how reading and writing stream: docs/bundle.md.
//
// One encoder and one decoder serve everything: Bundle (all members in
// memory, for small bundles) is built on BundleWriter's encoder and
// BundleReader; SpooledBundle reads a large bundle in one streaming pass and
// keeps its large members in a scratch file.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "wit/base/bytes.h"

namespace wit {

inline constexpr char kBundleMagic[8] = {'W', 'I', 'T', 'B', 'N', 'D', 'L', '\n'};
inline constexpr uint32_t kBundleVersion = 1;
// The largest payload a reader accepts unless told otherwise: a header above
// it is refused before anything is allocated (decompression bombs).
inline constexpr uint64_t kMaxBundlePayload = uint64_t(16) << 30;

class Bundle;
class ScratchFile;  // io.h
class MappedRange;  // io.h

// The most bytes member `name` may declare, from what its kind can be (a
// state by its parameter count, a log entry by its format), given the members
// read into memory before it (names are in byte order, so e.g. "manifest.json"
// precedes "state/..."). Checked against each member's declared length before
// anything is allocated for it.
using MemberLimit = std::function<uint64_t(const std::string& name, const Bundle& before)>;

class BundleReader;

// What a hashed read of a file saw (SpooledBundle::open_hashed): the Blake2b
// digest of its bytes, in hex (the digest file_digest in board/def.h gives),
// and how many there were; `whole` once every byte up to the end of the file
// was hashed (false: nothing was read, or the file could not be read through).
struct FileDigest {
  std::string hex;
  uint64_t bytes = 0;
  bool whole = false;
};

class Bundle {
 public:
  // Names: 1..255 bytes of [A-Za-z0-9._/-], no "..", no leading '/', no
  // empty or "." path component (so no "//", no trailing '/'): every name is a
  // safe relative path. An invalid name throws wit::Error; putting a name
  // again replaces its data.
  void put(const std::string& name, Bytes data);
  void put(const std::string& name, const std::string& text);
  bool has(const std::string& name) const { return members_.count(name) != 0; }
  // Throws wit::Error("bundle lacks member NAME", where) when absent.
  const Bytes& get(const std::string& name) const;
  std::string get_text(const std::string& name) const;
  const std::map<std::string, Bytes>& members() const { return members_; }

  Bytes encode(int zstd_level = 3) const;
  // Strict: wrong magic and unknown version give different messages; a
  // truncated or corrupt zstd frame, bad names, duplicate names, sizes past the
  // end, or trailing bytes are each a one-line wit::Error naming `where`.
  // Decompressed size is capped (default 16 GiB) against zip bombs: a header
  // above the cap is refused before anything is allocated; a member longer
  // than `limit` allows for its name is refused before its buffer exists; and
  // a member's buffer grows with the bytes actually decompressed (doubling
  // from 1 MiB), so a lying length costs at most twice what the frame holds.
  static Bundle decode(ByteView b, const std::string& where, uint64_t max_size = kMaxBundlePayload,
                       const MemberLimit& limit = {});
  // Reads the file ("-": stdin) through a bounded buffer, as decode checks it.
  static Bundle load(const std::string& path, const MemberLimit& limit = {});
  void save(const std::string& path, int zstd_level = 3) const;  // atomic

  std::string where;  // the file it was loaded from, for messages

 private:
  std::map<std::string, Bytes> members_;
  static Bundle read_all(BundleReader& r, const MemberLimit& limit);
};

// Writes a bundle member by member without holding it: each member's bytes
// are compressed as they come (bounded buffers), so a member streamed from a
// file is never in memory whole. The member count is part of the payload's
// first bytes, so it is given up front; the payload size is written into the
// header at the end (docs/bundle.md, "Writing"). The file is written like
// every wit output: a temporary beside it, renamed by finish(); "-" writes to
// standard output (spooled to a scratch file first, since the header comes
// last). Any error (a bad or out-of-order name, too many members, a failed
// write) throws wit::Error and removes the temporary; so does destroying an
// unfinished writer: nothing half-written is ever left.
class BundleWriter {
 public:
  BundleWriter(const std::string& path, uint32_t count, int zstd_level = 3);
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  // Members in strictly increasing byte order of name (docs/bundle.md#names).
  void add(const std::string& name, ByteView data);
  void add(const std::string& name, const std::string& text) { add(name, ByteView(std::string_view(text))); }
  // The member is the concatenation of `pieces` (a file's parts, a state's tensors), copied nowhere.
  void add(const std::string& name, const std::vector<ByteView>& pieces);
  // The member is the file at `file`, read in 1 MiB pieces; its size is taken
  // when it is opened and a file that changes length meanwhile is an error.
  void add_file(const std::string& name, const std::string& file);
  // After the last of `count` members: the checksum, the header's payload
  // size, then fsync and rename. Throws when fewer members were added.
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  template <class Fn>
  void guarded(Fn&& fn);
};

// Reads a bundle one member at a time, exactly as strictly as Bundle::decode
// (which is built on it), with the same one-line errors: the header when it is
// constructed; each member's name, order and length by next(); the checksum,
// the payload's end and the end of the file when next() returns false. Only
// zstd's window and fixed buffers are held: a member is read into memory,
// streamed to a sink, or skipped, as the caller chooses. Moving is allowed.
class BundleReader {
 public:
  // Bytes in memory, which must outlive the reader.
  BundleReader(ByteView bytes, const std::string& where, uint64_t max_size = kMaxBundlePayload);
  // A stream: `pull(dst, cap)` stores up to cap bytes at dst and returns how
  // many, 0 at the end (and throws wit::Error on a read error).
  using Pull = std::function<size_t(uint8_t* dst, size_t cap)>;
  BundleReader(Pull pull, const std::string& where, uint64_t max_size = kMaxBundlePayload);
  // A file ("-": stdin, named "stdin" in messages), read with read(2) through
  // a buffer of zstd's input size; never mapped or held whole.
  static BundleReader open(const std::string& path, uint64_t max_size = kMaxBundlePayload);
  BundleReader(BundleReader&&) noexcept;
  BundleReader& operator=(BundleReader&&) noexcept;
  ~BundleReader();

  // Moves to the next member (skipping what is left of the current one):
  // true with name() and size() set, or false after the last member, once
  // the checksum and both ends have been checked.
  bool next();
  const std::string& name() const;
  uint64_t size() const;
  // Throws "bundle member NAME declares D bytes, more than its kind can hold
  // (CAP)" when size() > cap (before anything is read).
  void check_size(uint64_t cap) const;
  // The current member's data (each at most once): into memory, growing with
  // the bytes that arrive; or to `sink` in pieces of at most 128 KiB.
  Bytes read();
  void read_to(const std::function<void(ByteView)>& sink);
  const std::string& where() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A bundle file checked whole by one streaming pass (as Bundle::load checks
// it), without holding it in memory: members of at most `keep` bytes stay in
// memory, larger ones go to one anonymous scratch file (ScratchFile, in
// $TMPDIR: nothing is left behind) and are read back one at a time by get().
// So a verifier holds the small members and whichever large one it is using.
class SpooledBundle {
 public:
  static constexpr uint64_t kKeep = uint64_t(256) << 10;
  // `limit` sees the members kept in memory before each member.
  static SpooledBundle open(const std::string& path, const MemberLimit& limit = {}, uint64_t keep = kKeep);
  // As open, with the file hashed in the same pass: the bytes hashed are the
  // bytes decoded, so when digest() matches a digest the caller trusts, the
  // members (private: memory and an anonymous scratch file) are those bytes'
  // as surely as a private copy checked against it would be. digest() is the
  // whole file's, trailing bytes included (open succeeds only once it has read
  // to the end of the file; the rest, if any, is hashed all the same). A file
  // open refuses throws as open does, after hashing the rest of the file into
  // `*seen` when given: a caller can then tell bytes other than the ones it
  // expects (a store serving other bytes) from the expected bytes refused.
  // `*seen` stays not `whole` when the file cannot be opened (`bytes` 0) or
  // read through (`bytes` then counts what was read).
  static SpooledBundle open_hashed(const std::string& path, const MemberLimit& limit = {}, uint64_t keep = kKeep,
                                   FileDigest* seen = nullptr);
  // A bundle assembled member by member instead of read from one file (the
  // board's response from its stored parts, docs/board.md): empty, then
  // `add` keeps a member in memory and `add_file` appends a file's bytes to
  // the scratch file (read once, in pieces: one member at a time), hashing
  // them as they go: it returns the digest of exactly the bytes the member
  // now holds (as open_hashed's), so a caller that compares it with a signed
  // digest has checked the member itself, with no private copy first. An
  // invalid or repeated name throws wit::Error naming `where`.
  static SpooledBundle assemble(const std::string& where);
  void add(const std::string& name, Bytes data);
  // The member is the file the caller opened (`fd`, read from its current
  // offset to its end; `path` names it in messages).
  FileDigest add_file(const std::string& name, int fd, const std::string& path);
  SpooledBundle(SpooledBundle&&) noexcept;
  SpooledBundle& operator=(SpooledBundle&&) noexcept;
  ~SpooledBundle();

  bool has(const std::string& name) const;
  // The member's bytes, read from the scratch file when it is there. Throws
  // wit::Error("bundle lacks member NAME", where) when absent.
  Bytes get(const std::string& name) const;
  // The member's bytes without copying a spilled one (a mapping of the
  // scratch file); valid while both the view and the bundle live. Throws as get.
  class View {
   public:
    View();
    View(View&&) noexcept;
    ~View();
    ByteView bytes() const;

   private:
    friend class SpooledBundle;
    std::unique_ptr<MappedRange> map_;
    Bytes kept_;
  };
  View view(const std::string& name) const;
  std::string get_text(const std::string& name) const;
  std::vector<std::string> names() const;  // in byte order
  // How many members are in the scratch file (the rest are in memory).
  size_t spilled() const { return spilled_.size(); }
  // The file's digest (open_hashed); not `whole` for open and assemble.
  const FileDigest& digest() const { return digest_; }

  std::string where;

 private:
  SpooledBundle();
  static SpooledBundle spool(BundleReader& r, const MemberLimit& limit, uint64_t keep);
  FileDigest digest_;
  Bundle kept_;
  struct Place {
    uint64_t offset, size;
  };
  std::map<std::string, Place> spilled_;
  const Place& spilled_place(const std::string& name) const;  // throws "bundle lacks member NAME"
  std::unique_ptr<ScratchFile> scratch_;
};

}  // namespace wit
