// Dataset commitments: the ordered tree (root) and the sorted unique tree
// (sorted_root) over record leaves, with the reader spec and per-source
// digests. Format: docs/commitment.md.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/bytes.h"
#include "wit/readers.h"

namespace wit {

inline constexpr const char* kCommitFormat = "wit.commit";
inline constexpr int kCommitVersion = 1;
// Piece size of the source digest for text and file readers; the tokens reader
// uses its window (2 * seq_len bytes) so the digest reuses the record leaves.
inline constexpr uint64_t kDefaultPieceSize = uint64_t(1) << 20;

struct SourceInfo {
  std::string path;
  uint64_t size = 0;
  uint64_t piece_size = 0;
  uint64_t records = 0;
  Hash32 digest;  // H(kSourceDigest || le64 size || le64 piece_size || MTH(pieces))
};

struct Commitment {
  ReaderSpec reader;
  uint64_t n = 0, n_unique = 0;
  Hash32 root, sorted_root;
  std::vector<SourceInfo> sources;
  std::vector<std::string> inputs;  // the paths as given to wit-commit

  nlohmann::json to_json() const;
  // Pretty JSON with a final newline; byte-identical for identical inputs.
  std::string dump() const;
  // Throws wit::Error naming `where` on a wrong format name, unknown version or bad field.
  static Commitment from_json(const nlohmann::json& j, const std::string& where);
  static Commitment load(const std::string& path);
  // What a person needs to read the commitment (wit-commit show): counts,
  // reader, both roots and what each is for, and the sources.
  std::string describe() const;
};

// H(0x00 || record): a record's leaf in both trees.
Hash32 record_leaf(ByteView record);

// The record leaves of `paths` in order, computed on `threads` threads (0 = all
// cores), with each source's info. `on_bytes` (may be empty) is called with
// progress in bytes of input consumed.
struct LeafSet {
  std::vector<Hash32> leaves;
  std::vector<SourceInfo> sources;
  // Per leaf, the source it came from and its record number there (for messages).
  std::vector<uint32_t> source_of;
  std::vector<std::unique_ptr<RecordSource>> readers;
};
LeafSet hash_records(const ReaderSpec& spec, const std::vector<std::string>& paths, unsigned threads,
                     const std::function<void(uint64_t)>& on_bytes = {});

// Everything commit_dataset computes: the commitment and what the index stores.
struct CommitResult {
  Commitment commitment;
  std::vector<Hash32> leaves;      // in dataset order
  std::vector<Hash32> sorted;      // sorted, unique
  std::vector<uint64_t> first_pos; // first position in `leaves` of each sorted value
  // Cached tree levels (MerkleTree::levels() layout) at kIndexCacheLevel.
  std::vector<Hash32> order_levels, sorted_levels;
};
// The level from which an index caches tree nodes: a proof then costs at most
// about 2^8 hashes per path node below the cache.
inline constexpr unsigned kIndexCacheLevel = 8;
CommitResult commit_dataset(const ReaderSpec& spec, const std::vector<std::string>& paths,
                            unsigned threads, const std::function<void(uint64_t)>& on_bytes = {});
// The sorted-unique set with first positions, from leaves in order.
void sort_unique(const std::vector<Hash32>& leaves, std::vector<Hash32>& sorted,
                 std::vector<uint64_t>& first_pos);

// Random access to the records of committed files, checked against their
// commitment (same reader, same root) when opened.
class Dataset {
 public:
  // Throws wit::Error when the files do not hash to the commitment's root.
  Dataset(const Commitment& c, const std::vector<std::string>& paths, unsigned threads);
  uint64_t size() const { return ls_.leaves.size(); }
  std::string record(uint64_t i) const;
  const Hash32& leaf(uint64_t i) const { return ls_.leaves[i]; }

 private:
  LeafSet ls_;
  std::vector<uint64_t> first_;  // first global record index of each reader
};

}  // namespace wit
