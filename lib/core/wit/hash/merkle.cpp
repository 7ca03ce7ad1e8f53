// RFC 6962 Merkle trees: proof shapes (ranges), hashing via NodeSource, and the
// RFC 9162 verification algorithms.
#include "wit/hash/merkle.h"


#include <algorithm>
#include <cstring>

#include <sodium.h>

#include "wit/hash/blake2b_x4.h"
#include "wit/hash/hash.h"
#include "wit/base/parallel.h"
#include "wit/hash/tags.h"

namespace wit {

namespace {

// RFC 6962's three shapes for each hash, BLAKE2b and SHA-256: alike on purpose (each a one-line recipe).
Hash32 b2_leaf(ByteView d) {
  const uint8_t p = tags::kRfc6962LeafHashPrefix;
  return blake2b_256(ByteView(&p, 1), d);
}
Hash32 b2_node(const Hash32& l, const Hash32& r) {
  const uint8_t p = tags::kRfc6962NodeHashPrefix;
  return blake2b_256(ByteView(&p, 1), ByteView(l.data(), 32), ByteView(r.data(), 32));
}
Hash32 b2_empty() { return blake2b_256(ByteView()); }
Hash32 sha_leaf(ByteView d) {
  const uint8_t p = tags::kRfc6962LeafHashPrefix;
  return sha256(ByteView(&p, 1), d);
}
Hash32 sha_node(const Hash32& l, const Hash32& r) {
  const uint8_t p = tags::kRfc6962NodeHashPrefix;
  return sha256(ByteView(&p, 1), ByteView(l.data(), 32), ByteView(r.data(), 32));
}
Hash32 sha_empty() { return sha256(ByteView()); }
Hash32 ranged_node(const Hash32& l, const Hash32& r, const Hash32& l_last, const Hash32& r_first) {
  uint8_t m[128];
  std::memcpy(m, l.data(), 32);
  std::memcpy(m + 32, r.data(), 32);
  std::memcpy(m + 64, l_last.data(), 32);
  std::memcpy(m + 96, r_first.data(), 32);
  Hash32 out;
  crypto_generichash_blake2b_salt_personal(out.data(), 32, m, sizeof m, nullptr, 0, nullptr,
                                           reinterpret_cast<const unsigned char*>(kRangedNodePersonal));
  return out;
}

bool is_pow2(uint64_t n) { return n && !(n & (n - 1)); }
unsigned log2_exact(uint64_t n) { return unsigned(__builtin_ctzll(n)); }

void path_rec(uint64_t m, uint64_t begin, uint64_t end, std::vector<Range>& out) {
  uint64_t n = end - begin;
  if (n <= 1) return;
  uint64_t k = split_point(n);
  if (m < k) {
    path_rec(m, begin, begin + k, out);
    out.push_back({begin + k, end});
  } else {
    path_rec(m - k, begin + k, end, out);
    out.push_back({begin, begin + k});
  }
}

void subproof_rec(uint64_t m, uint64_t begin, uint64_t end, bool b, std::vector<Range>& out) {
  uint64_t n = end - begin;
  if (m == n) {
    if (!b) out.push_back({begin, end});
    return;
  }
  uint64_t k = split_point(n);
  if (m <= k) {
    subproof_rec(m, begin, begin + k, b, out);
    out.push_back({begin + k, end});
  } else {
    subproof_rec(m - k, begin + k, end, false, out);
    out.push_back({begin, begin + k});
  }
}

}  // namespace

const TreeHash kBlake2bTree{"blake2b-256", b2_leaf, b2_node, b2_empty};
const TreeHash kSha256Tree{"sha-256", sha_leaf, sha_node, sha_empty};
const TreeHash kDataTree{"blake2b-256", b2_leaf, nullptr, b2_empty, ranged_node};

namespace {

// out[k] = node(in[2k], in[2k+1]) for k < pairs; out may be in. wit's own
// trees hash several nodes at once (node_pairs, ranged_node_pairs: one per
// SIMD lane): building a tree is mostly these. A ranged pair's split leaves
// are keys[k * key_stride] and the one after it.
void hash_pairs(const TreeHash& th, const Hash32* in, uint64_t pairs, Hash32* out, const Hash32* keys,
                uint64_t key_stride) {
  if (&th == &kDataTree) return ranged_node_pairs(in, pairs, keys, key_stride, out);
  if (&th == &kBlake2bTree) return node_pairs(in, pairs, out);
  if (th.ranged()) {
    for (uint64_t k = 0; k < pairs; k++)
      out[k] = th.ranged_node(in[2 * k], in[2 * k + 1], keys[k * key_stride], keys[k * key_stride + 1]);
    return;
  }
  for (uint64_t k = 0; k < pairs; k++) out[k] = th.node(in[2 * k], in[2 * k + 1]);
}

}  // namespace

uint64_t split_point(uint64_t n) {
  uint64_t k = 1;
  while (k < n - k) k <<= 1;  // largest power of two < n, without overflow
  return k;
}

std::vector<Range> inclusion_ranges(uint64_t index, uint64_t size) {
  std::vector<Range> out;
  if (index < size) path_rec(index, 0, size, out);
  return out;
}

std::vector<Range> consistency_ranges(uint64_t old_size, uint64_t new_size) {
  std::vector<Range> out;
  if (old_size > 0 && old_size < new_size) subproof_rec(old_size, 0, new_size, true, out);
  return out;
}

Hash32 NodeSource::root() const { return range_hash({0, size()}); }

std::vector<Hash32> NodeSource::hashes(const std::vector<Range>& ranges) const {
  std::vector<Hash32> out;
  out.reserve(ranges.size());
  for (const Range& r : ranges) out.push_back(range_hash(r));
  return out;
}

uint64_t MerkleTree::level_entries(uint64_t n, unsigned cache_level) {
  uint64_t total = 0;
  for (unsigned j = std::max(1u, cache_level); j < 64 && (n >> j); j++) total += n >> j;
  return total;
}

MerkleTree::MerkleTree(const TreeHash& th, const Hash32* leaves, uint64_t n, unsigned cache_level,
                       const Hash32* levels)
    : th_(th), leaves_(leaves), n_(n), cache_level_(std::max(1u, cache_level)), levels_(levels) {
  uint64_t off = 0;
  for (unsigned j = cache_level_; j < 64 && (n >> j); j++) {
    level_offset_.push_back(off);
    off += n >> j;
  }
}

MerkleTree::MerkleTree(const TreeHash& th, const Hash32* leaves, uint64_t n, unsigned cache_level,
                       unsigned threads)
    : MerkleTree(th, leaves, n, cache_level, nullptr) {
  owned_levels_.resize(level_entries(n, cache_level_));
  levels_ = owned_levels_.data();
  build_levels(threads);
}

void MerkleTree::build_levels(unsigned threads) {
  if (level_offset_.empty()) return;
  const Hash32* leaves = leaves_;
  // Lowest cached level: each entry is a perfect subtree of 2^L leaves. A
  // pair of children of 2^s leaves each, the pair starting at leaf p, splits
  // at p + 2^s: its split leaves are leaves[p + 2^s - 1] and the next.
  const uint64_t width = uint64_t(1) << cache_level_;
  Hash32* lvl = owned_levels_.data();
  parallel_for(n_ >> cache_level_, threads, std::max<uint64_t>(1, 4096 >> cache_level_),
               [&](uint64_t b, uint64_t e) {
                 if (width == 2) return hash_pairs(th_, leaves + 2 * b, e - b, lvl + b, leaves + 2 * b, 2);
                 std::vector<Hash32> buf(width / 2);
                 for (uint64_t i = b; i < e; i++) {
                   const Hash32* base = leaves + i * width;
                   hash_pairs(th_, base, width / 2, buf.data(), base, 2);
                   for (uint64_t w = width / 4, child = 2; w >= 1; w /= 2, child *= 2)
                     hash_pairs(th_, buf.data(), w, buf.data(), base + child - 1, 2 * child);
                   lvl[i] = buf[0];
                 }
               });
  for (size_t j = 1; j < level_offset_.size(); j++) {
    const Hash32* below = owned_levels_.data() + level_offset_[j - 1];
    Hash32* here = owned_levels_.data() + level_offset_[j];
    const uint64_t child = uint64_t(1) << (cache_level_ + j - 1);
    parallel_for(n_ >> (cache_level_ + j), threads, 4096, [&](uint64_t b, uint64_t e) {
      hash_pairs(th_, below + 2 * b, e - b, here + b, leaves + (2 * b + 1) * child - 1, 2 * child);
    });
  }
}

std::vector<KeyRange> MerkleTree::key_ranges(const std::vector<Range>& ranges) const {
  std::vector<KeyRange> out;
  out.reserve(ranges.size());
  for (const Range& r : ranges) out.push_back(key_range(r));
  return out;
}

Hash32 MerkleTree::range_hash(Range r) const {
  const uint64_t n = r.size();
  if (n == 0) return th_.empty();
  if (n == 1) return leaves_[r.begin];
  if (is_pow2(n) && r.begin % n == 0) {
    unsigned j = log2_exact(n);
    if (j >= cache_level_ && j - cache_level_ < level_offset_.size())
      return levels_[level_offset_[j - cache_level_] + (r.begin >> j)];
  }
  uint64_t k = split_point(n);
  const Hash32 l = range_hash({r.begin, r.begin + k}), rh = range_hash({r.begin + k, r.end});
  if (th_.ranged()) return th_.ranged_node(l, rh, leaves_[r.begin + k - 1], leaves_[r.begin + k]);
  return th_.node(l, rh);
}

Hash32 merkle_root(const TreeHash& th, const std::vector<Hash32>& leaves, unsigned threads) {
  // Cached from level 8: 1/256 of the leaves' memory, the same hashing.
  return MerkleTree(th, leaves.data(), leaves.size(), MerkleTree::kDefaultCacheLevel, threads).root();
}

const char* to_string(ProofError e) {
  switch (e) {
    case ProofError::kOk: return "ok";
    case ProofError::kIndexOutOfRange: return "index out of range";
    case ProofError::kWrongProofLength: return "wrong number of hashes in proof";
    case ProofError::kRootMismatch: return "proof does not lead to the root";
    case ProofError::kOldRootMismatch: return "proof does not lead to the old root";
    case ProofError::kNotAdjacent: return "bracketing leaves are not adjacent";
    case ProofError::kNotBracketed: return "value is not strictly between its bracketing leaves";
    case ProofError::kMissingBracket: return "a bracketing leaf is missing";
    case ProofError::kBadRange: return "a sibling's stated key range is not a range of its leaves";
    case ProofError::kRangeOrder: return "key ranges out of order on the path (a left child's last leaf is not below the right child's first)";
    case ProofError::kWrongRangeCount: return "wrong number of key ranges in proof";
  }
  return "unknown proof error";
}

PathResult root_from_inclusion(const TreeHash& th, const InclusionProof& p) {
  PathResult res;
  auto fail = [&](ProofError e) {
    res.error = e;
    return res;
  };
  if (p.index >= p.size) return fail(ProofError::kIndexOutOfRange);
  const std::vector<Range> sib = inclusion_ranges(p.index, p.size);
  if (p.path.size() != sib.size()) return fail(ProofError::kWrongProofLength);
  if (th.ranged() ? p.ranges.size() != p.path.size() : !p.ranges.empty()) return fail(ProofError::kWrongRangeCount);
  Hash32 h = p.leaf;
  KeyRange cur{p.leaf, p.leaf};  // the range of the node on the path: the leaf's, then its ancestors'
  for (size_t i = 0; i < sib.size(); i++) {
    const bool right = sib[i].begin > p.index;  // the sibling is the right child
    const Hash32& s = p.path[i];
    if (!th.ranged()) {
      h = right ? th.node(h, s) : th.node(s, h);
      continue;
    }
    // The sibling's stated range: the verifier cannot open its hash, but the
    // parent binds the split leaf on its side, and a range above binds the other.
    const KeyRange& sr = p.ranges[i];
    if (sib[i].size() == 1 ? !(sr.first == s && sr.last == s) : !(sr.first < sr.last))
      return fail(ProofError::kBadRange);
    if (right) {
      if (!(cur.last < sr.first)) return fail(ProofError::kRangeOrder);
      h = th.ranged_node(h, s, cur.last, sr.first);
      cur.last = sr.last;
    } else {
      if (!(sr.last < cur.first)) return fail(ProofError::kRangeOrder);
      h = th.ranged_node(s, h, sr.last, cur.first);
      cur.first = sr.first;
    }
  }
  res.root = h;
  res.range = cur;
  return res;
}

ProofError verify_inclusion(const TreeHash& th, const InclusionProof& p, const Hash32& root) {
  const PathResult r = root_from_inclusion(th, p);
  if (r.error != ProofError::kOk) return r.error;
  return r.root == root ? ProofError::kOk : ProofError::kRootMismatch;
}

ProofError verify_inclusion(const TreeHash& th, uint64_t index, uint64_t size, const Hash32& leaf,
                            const std::vector<Hash32>& path, const Hash32& root) {
  return verify_inclusion(th, InclusionProof{leaf, index, size, path, {}}, root);
}

InclusionProof prove_inclusion(const MerkleTree& tree, uint64_t index) {
  InclusionProof p;
  p.leaf = tree.leaves()[index];
  p.index = index;
  p.size = tree.size();
  const std::vector<Range> rs = inclusion_ranges(index, tree.size());
  p.path = tree.hashes(rs);
  if (tree.hash().ranged()) p.ranges = tree.key_ranges(rs);
  return p;
}

ProofError verify_consistency(const TreeHash& th, uint64_t old_size, uint64_t new_size,
                              const Hash32& old_root, const Hash32& new_root,
                              const std::vector<Hash32>& proof) {
  if (old_size > new_size) return ProofError::kIndexOutOfRange;
  if (proof.size() != consistency_ranges(old_size, new_size).size())
    return ProofError::kWrongProofLength;
  if (old_size == 0) return old_root == th.empty() ? ProofError::kOk : ProofError::kOldRootMismatch;
  if (old_size == new_size) return old_root == new_root ? ProofError::kOk : ProofError::kRootMismatch;
  // RFC 9162 section 2.1.4.2.
  std::vector<Hash32> path;
  if (is_pow2(old_size)) path.push_back(old_root);
  path.insert(path.end(), proof.begin(), proof.end());
  uint64_t fn = old_size - 1, sn = new_size - 1;
  while (fn & 1) {
    fn >>= 1;
    sn >>= 1;
  }
  Hash32 fr = path[0], sr = path[0];
  for (size_t i = 1; i < path.size(); i++) {
    const Hash32& c = path[i];
    if (sn == 0) return ProofError::kWrongProofLength;
    if ((fn & 1) || fn == sn) {
      fr = th.node(c, fr);
      sr = th.node(c, sr);
      while (!(fn & 1) && fn != 0) {
        fn >>= 1;
        sn >>= 1;
      }
    } else {
      sr = th.node(sr, c);
    }
    fn >>= 1;
    sn >>= 1;
  }
  if (sn != 0) return ProofError::kWrongProofLength;
  if (fr != old_root) return ProofError::kOldRootMismatch;
  return sr == new_root ? ProofError::kOk : ProofError::kRootMismatch;
}

uint64_t lower_bound(const Hash32* sorted, uint64_t n, const Hash32& value) {
  return uint64_t(std::lower_bound(sorted, sorted + n, value) - sorted);
}

bool prove_exclusion(const MerkleTree& tree, const Hash32& value, ExclusionProof& out) {
  const uint64_t n = tree.size();
  const uint64_t i = lower_bound(tree.leaves(), n, value);
  if (i < n && tree.leaves()[i] == value) return false;
  out = ExclusionProof{};
  out.value = value;
  out.size = n;
  auto bracket = [&](uint64_t at, Bracket& b) {
    InclusionProof q = prove_inclusion(tree, at);
    b = Bracket{at, q.leaf, std::move(q.path), std::move(q.ranges)};
  };
  if (i > 0) {
    out.has_left = true;
    bracket(i - 1, out.left);
  }
  if (i < n) {
    out.has_right = true;
    bracket(i, out.right);
  }
  return true;
}

ProofError verify_exclusion(const TreeHash& th, const ExclusionProof& p, const Hash32& root) {
  if (p.size == 0) {
    if (p.has_left || p.has_right) return ProofError::kIndexOutOfRange;
    return root == th.empty() ? ProofError::kOk : ProofError::kRootMismatch;
  }
  if (!p.has_left && !p.has_right) return ProofError::kMissingBracket;
  if (p.has_left && !p.has_right && p.left.index != p.size - 1) return ProofError::kMissingBracket;
  if (!p.has_left && p.has_right && p.right.index != 0) return ProofError::kMissingBracket;
  if (p.has_left && p.has_right && p.right.index != p.left.index + 1) return ProofError::kNotAdjacent;
  if (p.has_left && !(p.left.leaf < p.value)) return ProofError::kNotBracketed;
  if (p.has_right && !(p.value < p.right.leaf)) return ProofError::kNotBracketed;
  for (const Bracket* b : {p.has_left ? &p.left : nullptr, p.has_right ? &p.right : nullptr}) {
    if (!b) continue;
    ProofError e = verify_inclusion(th, InclusionProof{b->leaf, b->index, p.size, b->path, b->ranges}, root);
    if (e != ProofError::kOk) return e;
  }
  return ProofError::kOk;
}

}  // namespace wit
