// The data index (*.widx): leaf hashes in order and sorted, first positions,
// and cached upper tree levels, memory-mapped so proofs take O(log n) work.
// Format: docs/index.md.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "wit/commitment.h"
#include "wit/io.h"
#include "wit/merkle.h"

namespace wit {

inline constexpr char kIndexMagic[8] = {'W', 'I', 'T', 'I', 'D', 'X', '\r', '\n'};
inline constexpr uint32_t kIndexVersion = 1;
inline constexpr size_t kIndexHeaderSize = 128;

// Writes the index of a commit atomically to `path`.
void write_index(const std::string& path, const CommitResult& c);
// The index bytes (what write_index writes), for tests and fuzzing.
Bytes encode_index(const CommitResult& c);

class Index {
 public:
  // Maps and validates the file: magic, version, header checksum, sizes, body
  // checksum, and that the cached levels reproduce the roots. Throws wit::Error.
  explicit Index(const std::string& path);
  // Validates an in-memory image (the bytes must outlive the Index).
  Index(ByteView bytes, const std::string& where);

  uint64_t n() const { return n_; }
  uint64_t n_unique() const { return n_unique_; }
  const Hash32& root() const { return root_; }
  const Hash32& sorted_root() const { return sorted_root_; }
  const MerkleTree& order_tree() const { return *order_; }
  const MerkleTree& sorted_tree() const { return *sorted_; }
  // Position of the first occurrence of `leaf` in dataset order, if present.
  std::optional<uint64_t> find(const Hash32& leaf) const;
  // Throws wit::Error unless this index was built for `c`.
  void check_matches(const Commitment& c, const std::string& commit_path) const;

 private:
  void parse(ByteView b);
  std::string where_;
  std::unique_ptr<MappedFile> file_;
  uint64_t n_ = 0, n_unique_ = 0;
  Hash32 root_, sorted_root_;
  const uint8_t* first_pos_ = nullptr;
  std::unique_ptr<MerkleTree> order_, sorted_;
};

}  // namespace wit
