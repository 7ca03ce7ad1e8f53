// RFC 6962 Merkle trees, generic over the hash function. Which nodes a proof
// needs (ranges) is computed apart from hashing them (NodeSource), and
// verification is a pure function that returns a typed error.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "wit/bytes.h"

namespace wit {

// The longest inclusion path of a tree of up to 2^64 leaves: one hash a level.
inline constexpr size_t kMaxInclusionPath = 64;
// The longest consistency proof: at most two hashes a level.
inline constexpr size_t kMaxConsistencyPath = 128;

// The two hash shapes of RFC 6962 (section 2.1) for one hash function.
struct TreeHash {
  const char* name;
  Hash32 (*leaf)(ByteView data);                          // H(0x00 || data)
  Hash32 (*node)(const Hash32& left, const Hash32& right);  // H(0x01 || left || right)
  Hash32 (*empty)();                                       // MTH({}) = H()
};
extern const TreeHash kBlake2bTree;  // wit's H
extern const TreeHash kSha256Tree;   // RFC 6962 / Certificate Transparency

// The subtree over leaves [begin, end). Every node of an RFC 6962 tree is one.
struct Range {
  uint64_t begin = 0, end = 0;
  uint64_t size() const { return end - begin; }
  bool operator==(const Range& o) const { return begin == o.begin && end == o.end; }
};

// Largest power of two strictly less than n (n >= 2): RFC 6962's split point.
uint64_t split_point(uint64_t n);

// The nodes of the audit path for leaf `index` in a tree of `size` leaves,
// bottom-up (RFC 6962 PATH order). Precondition: index < size.
std::vector<Range> inclusion_ranges(uint64_t index, uint64_t size);
// The nodes of the consistency proof from `old_size` to `new_size` (RFC 6962
// PROOF order). Precondition: 0 < old_size <= new_size; empty if equal.
std::vector<Range> consistency_ranges(uint64_t old_size, uint64_t new_size);

// Supplies the hash of any subtree [begin, end) of one tree.
class NodeSource {
 public:
  virtual ~NodeSource() = default;
  virtual uint64_t size() const = 0;
  virtual Hash32 range_hash(Range r) const = 0;
  Hash32 root() const;
  std::vector<Hash32> hashes(const std::vector<Range>& ranges) const;
};

// A tree over leaf hashes held in memory or in a mapped file, with the roots of
// the aligned perfect subtrees at levels >= cache_level kept so that any
// range_hash costs at most about 2^cache_level hashes. Level j holds
// floor(size / 2^j) entries; entry i is the root of leaves [i*2^j, (i+1)*2^j).
class MerkleTree : public NodeSource {
 public:
  static constexpr unsigned kDefaultCacheLevel = 8;

  // Builds the level cache from `leaves` (hashing with up to `threads` threads;
  // 0 means all cores). The leaves are borrowed and must outlive the tree.
  MerkleTree(const TreeHash& th, const Hash32* leaves, uint64_t n,
             unsigned cache_level = kDefaultCacheLevel, unsigned threads = 0);
  // Borrows leaves and an already built level cache (layout of levels_bytes()).
  MerkleTree(const TreeHash& th, const Hash32* leaves, uint64_t n, unsigned cache_level,
             const Hash32* levels);

  uint64_t size() const override { return n_; }
  Hash32 range_hash(Range r) const override;
  const Hash32* leaves() const { return leaves_; }
  unsigned cache_level() const { return cache_level_; }
  // The concatenated cached levels, lowest first, and their entry count.
  const Hash32* levels() const { return levels_; }
  static uint64_t level_entries(uint64_t n, unsigned cache_level);

 private:
  const TreeHash& th_;
  const Hash32* leaves_;
  uint64_t n_;
  unsigned cache_level_;
  std::vector<Hash32> owned_levels_;
  const Hash32* levels_ = nullptr;
  std::vector<uint64_t> level_offset_;  // index into levels_ of level cache_level_ + i
};

// Root of the tree over `leaves` (hashing with up to `threads` threads).
Hash32 merkle_root(const TreeHash& th, const std::vector<Hash32>& leaves, unsigned threads = 1);

enum class ProofError {
  kOk = 0,
  kIndexOutOfRange,    // index >= size, or sizes out of order
  kWrongProofLength,   // too few or too many hashes for (index, size)
  kRootMismatch,       // the hashes do not lead to the claimed root
  kOldRootMismatch,    // consistency: the proof does not lead to the old root
  kNotAdjacent,        // exclusion: bracketing leaves are not neighbours
  kNotBracketed,       // exclusion: the value is not strictly between its brackets
  kMissingBracket,     // exclusion: a bracket is absent where the tree has a leaf
};
const char* to_string(ProofError e);

ProofError verify_inclusion(const TreeHash& th, uint64_t index, uint64_t size, const Hash32& leaf,
                            const std::vector<Hash32>& path, const Hash32& root);
ProofError verify_consistency(const TreeHash& th, uint64_t old_size, uint64_t new_size,
                              const Hash32& old_root, const Hash32& new_root,
                              const std::vector<Hash32>& proof);

// Non-membership in a sorted tree: the leaves of the tree are distinct values
// in increasing byte order (they are themselves leaf hashes; they are not
// hashed again). A value is absent when its neighbours are adjacent leaves that
// bracket it, or the first (last) leaf is above (below) it, or the tree is empty.
struct Bracket {
  uint64_t index = 0;
  Hash32 leaf;
  std::vector<Hash32> path;
};
struct ExclusionProof {
  Hash32 value;
  uint64_t size = 0;
  bool has_left = false, has_right = false;
  Bracket left, right;
};

// Builds the proof; returns false (and leaves `out` unspecified) when `value`
// is present. `tree` must be a sorted tree.
bool prove_exclusion(const MerkleTree& tree, const Hash32& value, ExclusionProof& out);
ProofError verify_exclusion(const TreeHash& th, const ExclusionProof& p, const Hash32& root);

// Position of `value` among sorted distinct leaves: the first index whose leaf
// is >= value (binary search).
uint64_t lower_bound(const Hash32* sorted, uint64_t n, const Hash32& value);

}  // namespace wit
