// RFC 6962 Merkle trees, generic over the hash function. Which nodes a proof
// needs (ranges) is computed apart from hashing them (NodeSource), and
// verification is a pure function that returns a typed error.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "wit/base/bytes.h"
#include "wit/hash/tags.h"

namespace wit {

// The longest inclusion path of a tree of up to 2^64 leaves: one hash a level.
inline constexpr size_t kMaxInclusionPath = 64;
// The longest consistency proof: at most two hashes a level.
inline constexpr size_t kMaxConsistencyPath = 128;

// The two hash shapes of RFC 6962 (section 2.1) for one hash function, or,
// for the ranged data tree, the node that also binds the two leaves around
// its split (ranged_node; node is then null).
struct TreeHash {
  const char* name;
  Hash32 (*leaf)(ByteView data);                          // H(0x00 || data)
  Hash32 (*node)(const Hash32& left, const Hash32& right);  // H(0x01 || left || right)
  Hash32 (*empty)();                                       // MTH({}) = H()
  // BLAKE2b-256 personalised kRangedNodePersonal of left || right || left_last
  // || right_first: 128 bytes, one compression (docs/proofs.md).
  Hash32 (*ranged_node)(const Hash32& left, const Hash32& right, const Hash32& left_last,
                        const Hash32& right_first) = nullptr;
  bool ranged() const { return ranged_node != nullptr; }
};
extern const TreeHash kBlake2bTree;  // wit's H: logs, batches, eval sets, and the data tree of version-2 commitments
extern const TreeHash kSha256Tree;   // RFC 6962 / Certificate Transparency
// The data tree from commitment version 3: RFC 6962's shape over the sorted
// distinct record leaves (leaves are not hashed again), every node binding the
// last leaf of its left child and the first leaf of its right child.
extern const TreeHash kDataTree;
// BLAKE2b's 16-byte personalisation of a ranged node: its domain tag, kept
// with the others in tags.h.
using tags::kRangedNodePersonal;

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

// The first and last leaf under a node of a ranged tree.
struct KeyRange {
  Hash32 first, last;
  bool operator==(const KeyRange& o) const { return first == o.first && last == o.last; }
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
  // The key range of a subtree: its first and last leaf (a ranged tree's
  // proofs carry these beside the hashes).
  KeyRange key_range(Range r) const { return {leaves_[r.begin], leaves_[r.end - 1]}; }
  std::vector<KeyRange> key_ranges(const std::vector<Range>& ranges) const;
  const Hash32* leaves() const { return leaves_; }
  const TreeHash& hash() const { return th_; }
  unsigned cache_level() const { return cache_level_; }
  // The concatenated cached levels, lowest first, and their entry count.
  const Hash32* levels() const { return levels_; }
  static uint64_t level_entries(uint64_t n, unsigned cache_level);

 private:
  void build_levels(unsigned threads);
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
  kBadRange,           // ranged tree: a sibling's stated range is not its own (first > last, or a leaf's range not itself)
  kRangeOrder,         // ranged tree: along the path a left child's last leaf is not below the right child's first
  kWrongRangeCount,    // ranged tree: not one range per hash (or ranges given for an RFC 6962 tree)
};
const char* to_string(ProofError e);

ProofError verify_inclusion(const TreeHash& th, uint64_t index, uint64_t size, const Hash32& leaf,
                            const std::vector<Hash32>& path, const Hash32& root);

// An inclusion proof in a data tree: the leaf at `index` of a tree of `size`
// leaves, the audit path bottom-up (RFC 6962 PATH order) and, for a ranged
// tree, each sibling's key range (ranges[i] belongs to path[i]).
struct InclusionProof {
  Hash32 leaf;
  uint64_t index = 0, size = 0;
  std::vector<Hash32> path;
  std::vector<KeyRange> ranges;
};

// The one verification of a data-tree path, in two steps as in
// transparency-dev/merkle's proof/verify.go: compute, then compare.
// root_from_inclusion computes the root (and, for a ranged tree, the key range
// under it) that the proof leads to. For a ranged tree it checks at every
// level that the sibling's range is a range (first <= last; a one-leaf
// sibling's range is its own hash), that the left child's last leaf is below
// the right child's first, and sets the parent's range to their union; so the
// leaf lies inside the computed range of every node on its path. For an RFC
// 6962 tree (kBlake2bTree: logs, and data trees before version 3) `ranges`
// must be empty and only the root is computed.
struct PathResult {
  ProofError error = ProofError::kOk;
  Hash32 root;
  KeyRange range;  // ranged trees only
};
PathResult root_from_inclusion(const TreeHash& th, const InclusionProof& p);
// root_from_inclusion, then the computed root compared with `root`.
ProofError verify_inclusion(const TreeHash& th, const InclusionProof& p, const Hash32& root);
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
  std::vector<KeyRange> ranges;  // ranged trees only
};
struct ExclusionProof {
  Hash32 value;
  uint64_t size = 0;
  bool has_left = false, has_right = false;
  Bracket left, right;
};

// Builds the proof (with ranges when `tree` is ranged); returns false (and
// leaves `out` unspecified) when `value` is present. `tree` must be a sorted tree.
bool prove_exclusion(const MerkleTree& tree, const Hash32& value, ExclusionProof& out);
// Each bracket's path is checked with verify_inclusion. With a ranged tree
// (kDataTree) absence follows from the proof and the root alone; with an RFC
// 6962 tree only if the committed tree is sorted (docs/proofs.md).
ProofError verify_exclusion(const TreeHash& th, const ExclusionProof& p, const Hash32& root);
// Builds an inclusion proof from a tree (ranges included when it is ranged).
InclusionProof prove_inclusion(const MerkleTree& tree, uint64_t index);

// Position of `value` among sorted distinct leaves: the first index whose leaf
// is >= value (binary search).
uint64_t lower_bound(const Hash32* sorted, uint64_t n, const Hash32& value);

}  // namespace wit
