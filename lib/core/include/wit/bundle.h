// Bundles: a named set of byte strings in one zstd-compressed file with a
// magic number and version (response bundles, run bundles). Members are kept
// in name order, so the same members always give the same bytes.
// Format: docs/bundle.md.
#pragma once
#include <map>
#include <string>

#include "wit/bytes.h"

namespace wit {

inline constexpr char kBundleMagic[8] = {'W', 'I', 'T', 'B', 'N', 'D', 'L', '\n'};
inline constexpr uint32_t kBundleVersion = 1;

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
  // above the cap is refused before anything is allocated, and no more than
  // the header's (capped) size is ever allocated for members.
  static Bundle decode(ByteView b, const std::string& where, uint64_t max_size = uint64_t(16) << 30);
  static Bundle load(const std::string& path);
  void save(const std::string& path, int zstd_level = 3) const;  // atomic

  std::string where;  // the file it was loaded from, for messages

 private:
  std::map<std::string, Bytes> members_;
};

}  // namespace wit
