// Building the data tree and its index from sorted leaves that need not fit
// in memory (docs/commitment.md, "Bounded memory" and "Shards"): sorted runs
// spilled to a scratch file, a k-way merge of sorted sources, and a writer
// that builds the tree, its cached levels and the index in one pass over the
// merged leaves, holding one chunk and O(log n) hashes (plus the cached
// levels, 1/128 of the leaves).
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "wit/base/bytes.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"

namespace wit {

// A record leaf and an order key of its record (the global record number, or
// any number in the same order): the unit the tree is sorted in.
struct SortEntry {
  Hash32 leaf;
  uint64_t rec;
};
static_assert(sizeof(SortEntry) == 40, "SortEntry is packed into 40 bytes");

inline uint64_t be64_prefix(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

// Bytewise (memcmp) order of two leaves, the first 8 bytes as one integer.
inline bool leaf_less(const Hash32& a, const Hash32& b) {
  const uint64_t x = be64_prefix(a.data()), y = be64_prefix(b.data());
  return x != y ? x < y : std::memcmp(a.data() + 8, b.data() + 8, 24) < 0;
}

// Bytewise order of leaves (the first 8 bytes as one integer), ties broken by
// record number so that de-duplication keeps the first occurrence.
inline bool entry_less(const SortEntry& a, const SortEntry& b) {
  const uint64_t x = be64_prefix(a.leaf.data()), y = be64_prefix(b.leaf.data());
  if (x != y) return x < y;
  const int c = std::memcmp(a.leaf.data() + 8, b.leaf.data() + 8, 24);
  return c < 0 || (c == 0 && a.rec < b.rec);
}

// The RFC 6962 root of a stream of aligned perfect subtrees (all of one size
// but the last) as they arrive: a stack of perfect subtree roots, merged while
// the top two have equal sizes; the root folds the stack from the right.
// A ranged tree's node also binds the left child's last leaf and the right
// child's first, so each subtree keeps its first and last leaf. With
// `perfect`, every subtree a push makes by joining two (aligned and perfect,
// of 2^j leaves) is appended to (*perfect)[j]: the index's cached levels.
class RootFolder {
 public:
  explicit RootFolder(const TreeHash& th, std::vector<std::vector<Hash32>>* perfect = nullptr)
      : th_(th), perfect_(perfect) {}
  struct Node {
    uint64_t size;
    Hash32 hash, first, last;
  };
  void push(const Node& n);
  // `tail` (if any) is the root of the last, smaller subtree.
  Hash32 root(const Node* tail) const;

 private:
  Node join(const Node& l, const Node& r) const;
  const TreeHash& th_;
  std::vector<std::vector<Hash32>>* perfect_;
  std::vector<Node> stack_;  // sizes strictly decreasing, powers of two: O(log n)
};

// The data tree and index of sorted distinct leaves given one at a time. The
// leaves are written to `out` (the index's file, which must be seekable;
// null: no index) as each chunk of 2^16 is hashed, the first occurrences to
// an unnamed scratch file in `scratch_dir` (nothing left behind however the
// process ends), and finish() appends them, then the cached levels, then
// writes the header over the placeholder: the bytes write_index writes for
// the same tree.
class StreamIndex {
 public:
  StreamIndex(AtomicFile* out, const std::string& scratch_dir, const TreeHash& th, uint32_t version,
              unsigned threads);
  ~StreamIndex();
  StreamIndex(const StreamIndex&) = delete;
  StreamIndex& operator=(const StreamIndex&) = delete;
  // Precondition: leaf > every leaf added before (the caller's merge checks).
  void add(const Hash32& leaf, uint64_t first) {
    leaves_.push_back(leaf);
    firsts_.push_back(first);
    if (leaves_.size() == kChunk) hand_off();
  }
  // Ends the tree (root(), size()) and writes the rest of the index.
  void finish(uint64_t records);
  const Hash32& root() const { return root_; }
  uint64_t size() const { return n_; }
  static constexpr size_t kChunk = size_t(1) << 16;

 private:
  // The full chunk to the hashing thread (after the one before it is done),
  // so the caller's merge goes on while it is hashed and written.
  void hand_off();
  // Hashes and writes work_leaves_ / work_firsts_ (one chunk at a time).
  void flush();
  AtomicFile* out_;
  const TreeHash& th_;
  uint32_t version_;
  unsigned threads_;
  std::vector<Hash32> leaves_, work_leaves_;
  std::vector<uint64_t> firsts_, work_firsts_;
  std::future<void> pending_;  // flush of work_*, on its own thread
  std::unique_ptr<ScratchFile> first_file_;
  Bytes first_bytes_;  // a chunk's first occurrences, encoded
  std::vector<std::vector<Hash32>> levels_;  // levels_[j]: the cached level j
  RootFolder folder_;
  struct State;
  std::unique_ptr<State> xxh_;  // the body checksum, over the leaves as written
  uint64_t n_ = 0;
  Hash32 root_;
};

// A source of sorted entries for merge_sorted: `cur` .. `end` is what is
// buffered; refill() buffers more (false at the end of the source).
class SortedCursor {
 public:
  virtual ~SortedCursor() = default;
  virtual bool refill() = 0;
  const SortEntry* cur = nullptr;
  const SortEntry* end = nullptr;
};

// Merges sorted sources (k-way, a heap of cursors) and gives each distinct
// leaf once, with the smallest order key among its entries, in ascending
// leaf order: emit(leaf, key).
void merge_sorted(const std::vector<SortedCursor*>& sources,
                  const std::function<void(const Hash32& leaf, uint64_t key)>& emit);

// Sorted runs of entries in one unnamed scratch file in `dir` (removed however
// the process ends). add_run sorts the entries, keeps the first of equal
// leaves and appends them as one run; thread-safe.
class SpilledRuns {
 public:
  explicit SpilledRuns(const std::string& dir);
  void add_run(std::vector<SortEntry>& entries);
  size_t runs() const { return runs_.size(); }
  uint64_t bytes() const { return file_.size(); }
  const std::string& dir() const { return dir_; }
  // One cursor per run, each reading through a buffer of `buffer_bytes`.
  std::vector<std::unique_ptr<SortedCursor>> cursors(size_t buffer_bytes) const;

 private:
  std::string dir_;
  ScratchFile file_;
  std::mutex mu_;
  struct Run {
    uint64_t offset, count;
  };
  std::vector<Run> runs_;
};

// Free bytes for an unprivileged writer in the file system holding `dir`;
// throws wit::Error when statvfs fails.
uint64_t free_disk(const std::string& dir);
// Throws wit::Error("not enough free disk for WHAT (needs about X, Y free)",
// dir) unless `need` bytes are free there.
void check_free_disk(const std::string& dir, uint64_t need, const std::string& what);

// The directory holding `path` ("." for a bare name).
std::string parent_dir(const std::string& path);

}  // namespace wit
