// Bundles: a named set of byte strings in one zstd-compressed file with a
// magic number and version (response bundles, run bundles). Members are kept
// in name order, so the same members always give the same bytes.
// Format: docs/bundle.md.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "wit/bytes.h"

namespace wit {

inline constexpr char kBundleMagic[8] = {'W', 'I', 'T', 'B', 'N', 'D', 'L', '\n'};
inline constexpr uint32_t kBundleVersion = 1;

// The most bytes a member of this name can hold, from what its kind can be
// (a state by its parameter count, a log entry by its format); checked
// against each member's declared length before anything is allocated for it.
class Bundle;

// The most bytes member `name` may declare, given the members decoded before
// it (names are in byte order, so e.g. "manifest.json" precedes "state/...").
using MemberLimit = std::function<uint64_t(const std::string& name, const Bundle& before)>;

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
  static Bundle decode(ByteView b, const std::string& where, uint64_t max_size = uint64_t(16) << 30,
                       const MemberLimit& limit = {});
  static Bundle load(const std::string& path, const MemberLimit& limit = {});
  void save(const std::string& path, int zstd_level = 3) const;  // atomic

  std::string where;  // the file it was loaded from, for messages

 private:
  std::map<std::string, Bytes> members_;
};

}  // namespace wit
