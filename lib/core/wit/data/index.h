// The data index (*.widx): the commitment's one tree, memory-mapped so proofs
// take O(log n) work: the sorted distinct record leaves, where each one first
// occurs in the files (provenance, for messages), and cached upper tree levels.
// Format: docs/index.md.
#pragma once
#include <array>
#include <memory>
#include <optional>
#include <string>

#include "wit/data/commitment.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"

namespace wit {

inline constexpr char kIndexMagic[8] = {'W', 'I', 'T', 'I', 'D', 'X', '\r', '\n'};
// Version 3 holds the ranged tree of a version-3 commitment; version 2 (the
// RFC 6962 tree of a version-2 commitment) is still read.
inline constexpr uint32_t kIndexVersion = 3;
inline constexpr size_t kIndexHeaderSize = 128;

// The 128-byte header (docs/index.md) of an index of n leaves at cache level
// kIndexCacheLevel whose body has XXH3-64 `body_sum`.
std::array<uint8_t, kIndexHeaderSize> encode_index_header(uint32_t version, uint64_t n, uint64_t records,
                                                          const Hash32& root, uint64_t body_sum);
// An index's header, checked in docs/index.md's order up to the file's size
// (`b` holds at least the header, the file has `file_size` bytes); the body
// checksum is the caller's to check. Throws wit::Error naming `where`.
struct IndexHeader {
  uint32_t version = 0, cache_level = 0;
  uint64_t n = 0, records = 0, body_sum = 0;
  Hash32 root;
};
IndexHeader parse_index_header(ByteView b, uint64_t file_size, const std::string& where);

// Writes the index of a commit to `out` (sections in order, no copy of the tree).
void write_index(AtomicFile& out, const CommitResult& c);

// Writes an index in two steps, so that most of its bytes are on their way to
// disk while the tree above the leaves is still being hashed (commit_dataset's
// IndexSink): entries() writes a placeholder header, the sorted leaves and
// their first occurrences (40 of every 40 + 32/2^8 bytes a record) and starts
// their write-back; finish() writes the cached levels, then the real header
// over the placeholder (its body checksum covers all), and fsyncs. The bytes
// are write_index's. An output that cannot go back (stdout, a fifo) gets
// everything in order from finish().
class IndexWriter {
 public:
  explicit IndexWriter(AtomicFile& out) : out_(out) {}
  void entries(const DataTree& tree);
  void finish(const CommitResult& c);

 private:
  AtomicFile& out_;
  bool early_ = false;  // entries() wrote the leaves and first occurrences
};
// Writes the index of a commit atomically to `path`.
void write_index(const std::string& path, const CommitResult& c);
// The index bytes (what write_index writes), for tests and fuzzing.
Bytes encode_index(const CommitResult& c);

// A commitment and its index are one pair: wit-commit renames both into
// place while it holds this lock exclusively (the directory of the
// commitment), and a reader that loads both holds it shared, so two
// wit-commit runs to one output never leave, and a reader never sees, the
// commitment of one run with the index of another. Readers go on without
// the lock where the directory cannot be locked (nullopt); a writer cannot.
std::optional<FileLock> lock_commit_pair(const std::string& commit_path, bool exclusive);

class Index {
 public:
  // Maps and validates the file: magic, version, header checksum, sizes, body
  // checksum, and that the cached levels reproduce the root. Throws wit::Error.
  explicit Index(const std::string& path);
  // Validates an in-memory image (the bytes must outlive the Index).
  Index(ByteView bytes, const std::string& where);

  uint64_t n() const { return n_; }              // distinct records: the tree's leaves
  uint64_t records() const { return records_; }  // records the files held
  const Hash32& root() const { return root_; }
  const std::string& where() const { return where_; }  // the file, for messages
  const MerkleTree& tree() const { return *tree_; }
  // The commitment version whose tree this is (3, or 2: read only).
  int version() const { return version_; }
  // Position of `leaf` in the tree, if present (binary search).
  std::optional<uint64_t> find(const Hash32& leaf) const;
  // Global record number (file order) of the first occurrence of leaf `pos`.
  uint64_t first_record(uint64_t pos) const { return get_le64(first_ + 8 * pos); }
  // Throws wit::Error unless this index is the tree of `c`: the same counts
  // and root in the header, and then the audit below. So whoever also rebuilds
  // the tree from the files (Dataset) and finds the commitment's root knows
  // the index holds exactly the files' leaves.
  void check_matches(const Commitment& c, const std::string& commit_path, unsigned threads = 0) const;
  // The full check an exclusion or usage claim rests on, O(n): the leaves are
  // strictly increasing (so distinct, and a gap between two is a true absence),
  // they hash to the root by themselves (not only through the cached levels),
  // and every first occurrence is a record of the files. Throws wit::Error
  // naming the first failure.
  void audit(unsigned threads = 0) const;

 private:
  void parse(ByteView b);
  std::string where_;
  std::unique_ptr<MappedFile> file_;
  uint64_t n_ = 0, records_ = 0;
  int version_ = 0;
  Hash32 root_;
  const uint8_t* first_ = nullptr;
  std::unique_ptr<MerkleTree> tree_;
};

// A commitment and its index, loaded under the pair's shared lock (never
// while wit-commit replaces the pair) and checked against each other in
// full (Index::check_matches). Without an index path `index` is null, or,
// where the caller needs the index (kIndexNeeded), an error.
struct CommitPair {
  Commitment commit;
  std::unique_ptr<Index> index;
};
enum class IndexUse { kIndexNeeded, kIndexOptional };
CommitPair load_commit_pair(const std::string& commit_path, const std::string& index_path, IndexUse use,
                            unsigned threads = 0);

}  // namespace wit
