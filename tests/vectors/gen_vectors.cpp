// Writes tests/vectors/merkle_blake2b.json: Merkle tree vectors for wit's own
// hash (kBlake2bTree), valid and deliberately broken, each with its expected
// result; given a second path, tests/vectors/data_proofs_blake2b.json:
// wit.proof documents against data commitments (the one sorted distinct
// ranged tree, version 3, and a few of version 2) at sizes 0, 1, 2^k - 1, 2^k
// and 2^k + 1, valid and broken, each with the verdict `wit-query verify` must
// give; given a third, tests/vectors/ranged_blake2b.json: the ranged data tree
// (kDataTree) of 0..17 leaves, a proof at every position, and broken ones.
// Usage: wit_gen_vectors MERKLE.json [DATA.json [RANGED.json]]
//
// Roots and proofs come from a direct transcription of the RFC 6962 section 2.1
// definitions below, not from MerkleTree; the generator refuses to write
// anything if wit_core disagrees with them or if a case's result is not the
// one intended here.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/hash/merkle.h"
#include "wit/proofs/proofs.h"

using namespace wit;
using json = nlohmann::ordered_json;  // keeps fields in the order written, for readable diffs

namespace {

const TreeHash& th = kBlake2bTree;
// One more than the largest tree, so that every case can name the root of "the tree one leaf larger".
constexpr uint64_t kMaxLeaves = 18;
const char* const kLeafFormula = "leaf i (from 0) is the ASCII text \"leaf-\" followed by i in decimal";

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "wit_gen_vectors: %s\n", msg.c_str());
  std::exit(1);
}

Bytes leaf_data(uint64_t i) {
  std::string s = "leaf-" + std::to_string(i);
  return Bytes(s.begin(), s.end());
}

// --- RFC 6962 section 2.1, recursively over leaf hashes [b, e) ---

uint64_t largest_pow2_below(uint64_t n) {
  uint64_t k = 1;
  while (2 * k < n) k *= 2;
  return k;
}

Hash32 mth(const std::vector<Hash32>& l, uint64_t b, uint64_t e) {
  if (e == b) return th.empty();
  if (e - b == 1) return l[b];
  uint64_t k = largest_pow2_below(e - b);
  return th.node(mth(l, b, b + k), mth(l, b + k, e));
}

// PATH(m, D[b:e]).
std::vector<Hash32> path(const std::vector<Hash32>& l, uint64_t m, uint64_t b, uint64_t e) {
  if (e - b <= 1) return {};
  uint64_t k = largest_pow2_below(e - b);
  std::vector<Hash32> p;
  if (m < k) {
    p = path(l, m, b, b + k);
    p.push_back(mth(l, b + k, e));
  } else {
    p = path(l, m - k, b + k, e);
    p.push_back(mth(l, b, b + k));
  }
  return p;
}

// SUBPROOF(m, D[b:e], complete).
std::vector<Hash32> subproof(const std::vector<Hash32>& l, uint64_t m, uint64_t b, uint64_t e,
                             bool complete) {
  if (m == e - b) return complete ? std::vector<Hash32>{} : std::vector<Hash32>{mth(l, b, e)};
  uint64_t k = largest_pow2_below(e - b);
  std::vector<Hash32> p;
  if (m <= k) {
    p = subproof(l, m, b, b + k, complete);
    p.push_back(mth(l, b + k, e));
  } else {
    p = subproof(l, m - k, b + k, e, false);
    p.push_back(mth(l, b, b + k));
  }
  return p;
}

// PROOF(m, D[0:n]); empty for m == 0 (any tree extends the empty one) and m == n.
std::vector<Hash32> proof(const std::vector<Hash32>& l, uint64_t m, uint64_t n) {
  return m == 0 ? std::vector<Hash32>{} : subproof(l, m, 0, n, true);
}

// --- The ranged data tree (docs/proofs.md), recursively over sorted leaves [b, e) ---
// RMTH: leaves are not hashed again; a node binds the last leaf of its left
// part and the first of its right part.

Hash32 rmth(const std::vector<Hash32>& l, uint64_t b, uint64_t e) {
  if (e == b) return kDataTree.empty();
  if (e - b == 1) return l[b];
  uint64_t k = largest_pow2_below(e - b);
  return kDataTree.ranged_node(rmth(l, b, b + k), rmth(l, b + k, e), l[b + k - 1], l[b + k]);
}

// RPATH(m, D[b:e]): PATH's siblings, each with its range (its first and last leaf).
struct RPath {
  std::vector<Hash32> hashes;
  std::vector<KeyRange> ranges;
};
RPath rpath(const std::vector<Hash32>& l, uint64_t m, uint64_t b, uint64_t e) {
  if (e - b <= 1) return {};
  uint64_t k = largest_pow2_below(e - b);
  RPath p;
  if (m < k) {
    p = rpath(l, m, b, b + k);
    p.hashes.push_back(rmth(l, b + k, e));
    p.ranges.push_back({l[b + k], l[e - 1]});
  } else {
    p = rpath(l, m - k, b + k, e);
    p.hashes.push_back(rmth(l, b, b + k));
    p.ranges.push_back({l[b], l[b + k - 1]});
  }
  return p;
}

// --- JSON helpers ---

json hex_list(const std::vector<Hash32>& v) {
  json a = json::array();
  for (const Hash32& h : v) a.push_back(h.hex());
  return a;
}

json range_list(const std::vector<KeyRange>& v) {
  json a = json::array();
  for (const KeyRange& r : v) a.push_back(json::array({r.first.hex(), r.last.hex()}));
  return a;
}

// One side of an exclusion proof as a vector case writes it (null where the
// proof has none); `ranges` for the ranged tree's cases.
json bracket_case(bool has, const Bracket& b, bool ranges) {
  if (!has) return json(nullptr);
  json j;
  j["index"] = b.index;
  j["leaf"] = b.leaf.hex();
  j["path"] = hex_list(b.path);
  if (ranges) j["ranges"] = range_list(b.ranges);
  return j;
}

Hash32 flip(Hash32 h, unsigned bit) {
  h.b[bit / 8 % 32] ^= uint8_t(1u << (bit % 8));
  return h;
}

std::vector<Hash32> flip_at(std::vector<Hash32> v, size_t k) {
  v[k] = flip(v[k], unsigned(8 * k + 3));
  return v;
}

std::vector<Hash32> truncated(std::vector<Hash32> v) {
  v.pop_back();
  return v;
}

std::vector<Hash32> with_trailing(std::vector<Hash32> v, const Hash32& h) {
  v.push_back(h);
  return v;
}

// The result a case is meant to have: one error, or (nullopt) any error but kOk.
using Intent = std::optional<ProofError>;

// The cases of a vector file: each checked to give the result it is meant
// to (else the generator writes nothing), descriptions unique.
class CaseList {
 protected:
  static std::string check(const std::string& desc, ProofError got, Intent want) {
    bool as_meant = want ? got == *want : got != ProofError::kOk;
    if (!as_meant)
      die("case \"" + desc + "\" gives \"" + to_string(got) + "\", not " +
          (want ? "\"" + std::string(to_string(*want)) + "\"" : std::string("an error")));
    return to_string(got);
  }
  void add(json c) {
    if (!descriptions_.insert(c["description"].get<std::string>()).second)
      die("duplicate description: " + c["description"].get<std::string>());
    cases_.push_back(std::move(c));
  }
  json cases_ = json::array();
  std::set<std::string> descriptions_;
};

class Writer : public CaseList {
 public:
  Writer() {
    for (uint64_t i = 0; i < kMaxLeaves; i++) {
      data_.push_back(leaf_data(i));
      leaves_.push_back(th.leaf(data_.back()));
    }
  }

  json document() const {
    json leaves = json::array();
    for (const Bytes& d : data_) leaves.push_back(to_hex(d));
    json doc;
    doc["description"] =
        "Merkle tree test vectors for wit's tree hash (RFC 6962 shapes over BLAKE2b-256), valid and "
        "deliberately broken. Inclusion and consistency cases use the tree over the first \"size\" "
        "(\"new_size\") entries of \"leaves\"; exclusion cases carry their own sorted tree. "
        "\"expected\" is \"ok\" or the error as named by to_string(ProofError).";
    doc["generator"] = "tests/vectors/gen_vectors.cpp (regenerate: see tests/vectors/README.md)";
    doc["tree_hash"] = th.name;
    doc["leaf_formula"] = kLeafFormula;
    doc["leaves"] = leaves;
    doc["cases"] = cases_;
    return doc;
  }

  std::vector<Hash32> tree(uint64_t n) const { return {leaves_.begin(), leaves_.begin() + n}; }
  const std::vector<Hash32>& leaves() const { return leaves_; }
  const Bytes& data(uint64_t i) const { return data_[i]; }

  // A root case: the root of `data` (hashed as leaves) is claimed to be `root`.
  void root_case(const std::string& desc, const std::vector<Bytes>& data, const Hash32& root,
                 Intent want) {
    std::vector<Hash32> l;
    json hexes = json::array();
    for (const Bytes& d : data) {
      l.push_back(th.leaf(d));
      hexes.push_back(to_hex(d));
    }
    MerkleTree t(th, l.data(), l.size(), 1, 1u);
    ProofError got = t.root() == root ? ProofError::kOk : ProofError::kRootMismatch;
    json c;
    c["type"] = "root";
    c["description"] = desc;
    c["leaves"] = hexes;
    c["root"] = root.hex();
    c["expected"] = check(desc, got, want);
    add(std::move(c));
  }

  void inclusion_case(const std::string& desc, uint64_t index, uint64_t size, const Bytes& leaf,
                      const std::vector<Hash32>& p, const Hash32& root, Intent want) {
    ProofError got = verify_inclusion(th, index, size, th.leaf(leaf), p, root);
    json c;
    c["type"] = "inclusion";
    c["description"] = desc;
    c["index"] = index;
    c["size"] = size;
    c["leaf"] = to_hex(leaf);
    c["path"] = hex_list(p);
    c["root"] = root.hex();
    c["expected"] = check(desc, got, want);
    add(std::move(c));
  }

  void consistency_case(const std::string& desc, uint64_t old_size, uint64_t new_size,
                        const Hash32& old_root, const Hash32& new_root,
                        const std::vector<Hash32>& p, Intent want) {
    ProofError got = verify_consistency(th, old_size, new_size, old_root, new_root, p);
    json c;
    c["type"] = "consistency";
    c["description"] = desc;
    c["old_size"] = old_size;
    c["new_size"] = new_size;
    c["old_root"] = old_root.hex();
    c["new_root"] = new_root.hex();
    c["proof"] = hex_list(p);
    c["expected"] = check(desc, got, want);
    add(std::move(c));
  }

  void exclusion_case(const std::string& desc, const std::vector<Hash32>& sorted,
                      const ExclusionProof& p, const Hash32& root, Intent want) {
    auto bracket = [](bool has, const Bracket& b) { return bracket_case(has, b, false); };
    ProofError got = verify_exclusion(th, p, root);
    json c;
    c["type"] = "exclusion";
    c["description"] = desc;
    c["leaves"] = hex_list(sorted);
    c["value"] = p.value.hex();
    c["size"] = p.size;
    c["left"] = bracket(p.has_left, p.left);
    c["right"] = bracket(p.has_right, p.right);
    c["root"] = root.hex();
    c["expected"] = check(desc, got, want);
    add(std::move(c));
  }

 private:
  std::vector<Bytes> data_;
  std::vector<Hash32> leaves_;
};

// Sizes around powers of two, where RFC 6962's unbalanced right edge changes shape.
const std::vector<uint64_t> kSizes = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17};

void roots(Writer& w) {
  for (uint64_t n : kSizes) {
    std::vector<Hash32> l = w.tree(n);
    Hash32 want = mth(l, 0, n);
    if (merkle_root(th, l) != want) die("merkle_root disagrees with MTH at size " + std::to_string(n));
    std::vector<Bytes> data;
    for (uint64_t i = 0; i < n; i++) data.push_back(w.data(i));
    w.root_case("root of " + std::to_string(n) + (n == 1 ? " leaf" : " leaves"), data, want,
                ProofError::kOk);
  }
  std::vector<Bytes> five;
  for (uint64_t i = 0; i < 5; i++) five.push_back(w.data(i));
  Hash32 root5 = mth(w.tree(5), 0, 5);
  w.root_case("root of 5 leaves with bit 100 flipped", five, flip(root5, 100), ProofError::kRootMismatch);
  std::vector<Bytes> swapped = five;
  std::swap(swapped[1], swapped[2]);
  w.root_case("5 leaves with leaves 1 and 2 swapped", swapped, root5, ProofError::kRootMismatch);
  w.root_case("empty tree claimed to have the root of 1 leaf", {}, mth(w.tree(1), 0, 1),
              ProofError::kRootMismatch);
}

void inclusion(Writer& w) {
  for (uint64_t n : kSizes) {
    if (n == 0) continue;
    std::vector<Hash32> l = w.tree(n);
    MerkleTree t(th, l.data(), n, 1, 1u);
    std::set<uint64_t> indices = {0, n / 2, n - 1};
    for (uint64_t i : indices) {
      std::vector<Hash32> p = path(l, i, 0, n);
      if (t.hashes(inclusion_ranges(i, n)) != p)
        die("inclusion_ranges disagrees with PATH at " + std::to_string(i) + "/" + std::to_string(n));
      w.inclusion_case("leaf " + std::to_string(i) + " of " + std::to_string(n), i, n, w.data(i), p,
                       mth(l, 0, n), ProofError::kOk);
    }
  }
  // Broken proofs, each from a valid one: (index, size).
  for (auto [i, n] : std::vector<std::pair<uint64_t, uint64_t>>{{0, 1}, {2, 3}, {5, 8}, {8, 9}, {10, 17}}) {
    std::vector<Hash32> l = w.tree(n), p = path(l, i, 0, n);
    Hash32 root = mth(l, 0, n);
    std::string at = "leaf " + std::to_string(i) + " of " + std::to_string(n) + ": ";
    for (size_t k = 0; k < p.size(); k++)
      w.inclusion_case(at + "bit flipped in path[" + std::to_string(k) + "]", i, n, w.data(i),
                       flip_at(p, k), root, ProofError::kRootMismatch);
    if (!p.empty())
      w.inclusion_case(at + "truncated path", i, n, w.data(i), truncated(p), root,
                       ProofError::kWrongProofLength);
    w.inclusion_case(at + "trailing extra hash", i, n, w.data(i), with_trailing(p, root), root,
                     ProofError::kWrongProofLength);
    w.inclusion_case(at + "root of the tree one leaf larger", i, n, w.data(i), p,
                     mth(w.tree(n + 1), 0, n + 1), ProofError::kRootMismatch);
    if (n > 1)
      w.inclusion_case(at + "claimed for the next index", (i + 1) % n, n, w.data(i), p, root, std::nullopt);
    w.inclusion_case(at + "index equal to size", n, n, w.data(i), p, root, ProofError::kIndexOutOfRange);
    w.inclusion_case(at + "another leaf's data", i, n, w.data((i + 1) % kMaxLeaves), p, root,
                     ProofError::kRootMismatch);
    w.inclusion_case(at + "claimed for a tree one leaf larger", i, n + 1, w.data(i), p,
                     mth(w.tree(n + 1), 0, n + 1), std::nullopt);
  }
}

void consistency(Writer& w) {
  const std::vector<std::pair<uint64_t, uint64_t>> valid = {
      {0, 0}, {0, 5}, {1, 1}, {1, 2}, {1, 8}, {2, 5}, {3, 7}, {4, 8}, {5, 9}, {7, 8},
      {8, 9}, {8, 16}, {9, 17}, {15, 16}, {16, 17}, {3, 17}, {17, 17}};
  MerkleTree full(th, w.leaves().data(), kMaxLeaves, 1, 1u);
  for (auto [m, n] : valid) {
    std::vector<Hash32> l = w.tree(n), p = proof(l, m, n);
    if (full.hashes(consistency_ranges(m, n)) != p)
      die("consistency_ranges disagrees with PROOF at " + std::to_string(m) + "->" + std::to_string(n));
    w.consistency_case(std::to_string(m) + " -> " + std::to_string(n), m, n, mth(l, 0, m), mth(l, 0, n),
                       p, ProofError::kOk);
  }
  Hash32 root5 = mth(w.tree(5), 0, 5);
  w.consistency_case("0 -> 5: old root not the empty root", 0, 5, root5, root5, {},
                     ProofError::kOldRootMismatch);
  w.consistency_case("0 -> 5: a hash where none belongs", 0, 5, th.empty(), root5, {root5},
                     ProofError::kWrongProofLength);
  // Broken proofs, each from a valid one: (old, new). 4 -> 8 is the case where
  // the old root is a complete subtree and so is left out of the proof.
  for (auto [m, n] : std::vector<std::pair<uint64_t, uint64_t>>{{1, 2}, {3, 7}, {4, 8}, {9, 17}}) {
    std::vector<Hash32> l = w.tree(n), p = proof(l, m, n);
    Hash32 r1 = mth(l, 0, m), r2 = mth(l, 0, n);
    std::string at = std::to_string(m) + " -> " + std::to_string(n) + ": ";
    for (size_t k = 0; k < p.size(); k++)
      w.consistency_case(at + "bit flipped in proof[" + std::to_string(k) + "]", m, n, r1, r2, flip_at(p, k),
                         std::nullopt);
    w.consistency_case(at + "truncated proof", m, n, r1, r2, truncated(p), ProofError::kWrongProofLength);
    w.consistency_case(at + "trailing extra hash", m, n, r1, r2, with_trailing(p, r2),
                       ProofError::kWrongProofLength);
    w.consistency_case(at + "swapped roots", m, n, r2, r1, p, std::nullopt);
    w.consistency_case(at + "sizes out of order", n, m, r1, r2, p, ProofError::kIndexOutOfRange);
    // When the old tree is complete its root is the proof's first node, so a
    // wrong old root surfaces as a wrong new root.
    bool old_complete = (m & (m - 1)) == 0;
    w.consistency_case(at + "old root of the tree one leaf smaller", m, n, mth(l, 0, m - 1), r2, p,
                       old_complete ? ProofError::kRootMismatch : ProofError::kOldRootMismatch);
    w.consistency_case(at + "new root of the tree one leaf larger", m, n, r1, mth(w.tree(n + 1), 0, n + 1),
                       p, ProofError::kRootMismatch);
    w.consistency_case(at + "claimed from one leaf more", m + 1, n, mth(l, 0, m + 1), r2, p, std::nullopt);
  }
}

// A value just above h in byte order (h + 1 as a big-endian number).
Hash32 next_value(Hash32 h) {
  for (int i = 31; i >= 0 && ++h.b[size_t(i)] == 0; i--) {
  }
  return h;
}

void exclusion(Writer& w) {
  // A sorted tree's leaves are distinct values in byte order; here the sorted
  // leaf hashes of the first n vector leaves.
  auto sorted_tree = [&](uint64_t n) {
    std::vector<Hash32> s = w.tree(n);
    std::sort(s.begin(), s.end());
    return s;
  };
  // Proves with wit_core and checks the brackets against a plain search and PATH.
  auto prove = [&](const std::vector<Hash32>& s, const Hash32& v) {
    MerkleTree t(th, s.data(), s.size(), 1, 1u);
    ExclusionProof p;
    if (!prove_exclusion(t, v, p)) die("prove_exclusion refused an absent value");
    uint64_t i = uint64_t(std::upper_bound(s.begin(), s.end(), v) - s.begin());
    bool ok = p.size == s.size() && p.has_left == (i > 0) && p.has_right == (i < s.size()) &&
              (!p.has_left || (p.left.index == i - 1 && p.left.path == path(s, i - 1, 0, s.size()))) &&
              (!p.has_right || (p.right.index == i && p.right.path == path(s, i, 0, s.size())));
    if (!ok) die("prove_exclusion disagrees with the reference brackets");
    return p;
  };
  Hash32 zero, ones;
  ones.b.fill(0xff);

  for (uint64_t n : {0, 1, 8, 9}) {
    std::vector<Hash32> s = sorted_tree(n);
    Hash32 root = mth(s, 0, n);
    std::string of = " (" + std::to_string(n) + " sorted leaves)";
    if (n == 0) {
      w.exclusion_case("any value is absent from the empty tree", s, prove(s, zero), root, ProofError::kOk);
      w.exclusion_case("empty tree with a non-empty root", s, prove(s, zero), mth(w.tree(1), 0, 1),
                       ProofError::kRootMismatch);
      continue;
    }
    if (zero < s.front() && s.back() < ones) {
      w.exclusion_case("value below the minimum" + of, s, prove(s, zero), root, ProofError::kOk);
      w.exclusion_case("value above the maximum" + of, s, prove(s, ones), root, ProofError::kOk);
    } else {
      die("a leaf hash is all zero or all one bits");
    }
  }

  std::vector<Hash32> s = sorted_tree(9);
  const uint64_t n = s.size();
  Hash32 root = mth(s, 0, n);
  MerkleTree t(th, s.data(), n, 1, 1u);
  auto between = [&](uint64_t i) {  // a value strictly between sorted leaves i and i + 1
    Hash32 v = next_value(s[i]);
    if (!(v < s[i + 1])) die("adjacent sorted leaves leave no gap");
    return v;
  };
  w.exclusion_case("value between leaves 3 and 4 (9 sorted leaves)", s, prove(s, between(3)), root,
                   ProofError::kOk);
  w.exclusion_case("value between leaves 7 and 8, across the split (9 sorted leaves)", s,
                   prove(s, between(7)), root, ProofError::kOk);

  // A present value: the prover refuses it, and a neighbour's proof does not carry over.
  ExclusionProof none;
  if (prove_exclusion(t, s[4], none)) die("prove_exclusion accepted a present value");
  ExclusionProof p = prove(s, between(3));
  p.value = s[4];
  w.exclusion_case("present value (leaf 4) with the proof for the gap below it", s, p, root,
                   ProofError::kNotBracketed);
  p = prove(s, between(3));
  p.value = s[3];
  w.exclusion_case("present value (leaf 3) with the proof for the gap above it", s, p, root,
                   ProofError::kNotBracketed);

  p = prove(s, between(2));
  p.right = {4, s[4], t.hashes(inclusion_ranges(4, n))};
  w.exclusion_case("brackets at leaves 2 and 4 are not adjacent", s, p, root, ProofError::kNotAdjacent);

  p = prove(s, between(3));
  p.has_right = false;
  w.exclusion_case("right bracket left out where the tree has a leaf", s, p, root,
                   ProofError::kMissingBracket);
  p = prove(s, zero);
  p.right = {1, s[1], t.hashes(inclusion_ranges(1, n))};
  w.exclusion_case("below the minimum, bracketed by leaf 1 instead of leaf 0", s, p, root,
                   ProofError::kMissingBracket);
  p = prove(s, ones);
  p.size = n + 1;
  w.exclusion_case("above the maximum, claimed for a tree one leaf larger", s, p, root,
                   ProofError::kMissingBracket);

  p = prove(s, between(3));
  p.left.path = flip_at(p.left.path, 1);
  w.exclusion_case("bit flipped in the left bracket's path", s, p, root, ProofError::kRootMismatch);
  p = prove(s, between(3));
  p.right.path = truncated(p.right.path);
  w.exclusion_case("right bracket's path truncated", s, p, root, ProofError::kWrongProofLength);
  w.exclusion_case("valid proof against another tree's root", s, prove(s, between(3)), mth(s, 0, n - 1),
                   ProofError::kRootMismatch);
}


// --- data commitments: proof documents against the one tree ---

// Record i of a set is "record-<i>"; a set of n distinct records lists them in
// reverse order and repeats every third one, so the files hold more records
// than the tree has leaves and file order is not tree order.
std::vector<std::string> set_records(uint64_t n) {
  std::vector<std::string> r;
  for (uint64_t i = n; i-- > 0;) {
    r.push_back("record-" + std::to_string(i));
    if (i % 3 == 0) r.push_back("record-" + std::to_string(i));
  }
  return r;
}

struct DataSet {
  std::vector<std::string> records;
  std::vector<Hash32> tree;  // sorted distinct leaves
  Commitment c;
};

// The path of position i in a set's tree of n leaves: ranged (version 3) or RFC 6962 (version 2).
RPath dpath(const DataSet& d, uint64_t i, uint64_t n) {
  if (d.c.ranged()) return rpath(d.tree, i, 0, n);
  return {path(d.tree, i, 0, n), {}};
}
Hash32 droot(const DataSet& d, uint64_t n) { return d.c.ranged() ? rmth(d.tree, 0, n) : mth(d.tree, 0, n); }

DataSet data_set(uint64_t n, int version = kCommitVersion) {
  DataSet d;
  d.records = set_records(n);
  for (const auto& r : d.records) d.tree.push_back(th.leaf(ByteView(r)));
  std::sort(d.tree.begin(), d.tree.end());
  d.tree.erase(std::unique(d.tree.begin(), d.tree.end()), d.tree.end());
  d.c.version = version;
  d.c.reader.kind = ReaderKind::kLines;
  d.c.records = d.records.size();
  d.c.n = d.tree.size();
  d.c.root = droot(d, d.tree.size());
  return d;
}

json commit_ref(const Hash32& root, uint64_t n) {
  json r;
  r["n"] = n;
  r["root"] = root.hex();
  return r;
}

json envelope(const DataSet& d, const char* type) {
  json doc;
  doc["format"] = "wit.proof";
  doc["version"] = d.c.version;
  doc["type"] = type;
  doc["hash"] = th.name;
  doc["commitment"] = commit_ref(d.c.root, d.c.n);
  return doc;
}

void put_path(json& j, const RPath& p) {
  j["path"] = hex_list(p.hashes);
  if (!p.ranges.empty()) j["ranges"] = range_list(p.ranges);
}

json inclusion_doc(const DataSet& d, uint64_t index, const Hash32& leaf, const RPath& p) {
  json doc = envelope(d, "inclusion");
  doc["leaf"] = leaf.hex();
  doc["index"] = index;
  doc["size"] = d.c.n;
  put_path(doc, p);
  return doc;
}

json bracket(const DataSet& d, uint64_t i) {
  json b;
  b["index"] = i;
  b["leaf"] = d.tree[i].hex();
  put_path(b, dpath(d, i, d.tree.size()));
  return b;
}

// The exclusion document for value v by plain search: the sorted leaves just
// below and just above it.
json exclusion_doc(const DataSet& d, const Hash32& v) {
  json doc = envelope(d, "exclusion");
  const uint64_t i = uint64_t(std::lower_bound(d.tree.begin(), d.tree.end(), v) - d.tree.begin());
  doc["leaf"] = v.hex();
  doc["size"] = d.c.n;
  doc["left"] = i > 0 ? bracket(d, i - 1) : json(nullptr);
  doc["right"] = i < d.tree.size() ? bracket(d, i) : json(nullptr);
  return doc;
}

RPath flip_hash(RPath p, size_t k) {
  p.hashes = flip_at(p.hashes, k);
  return p;
}
RPath cut(RPath p) {
  p.hashes = truncated(p.hashes);
  return p;
}
RPath extra(RPath p, const Hash32& h) {
  p.hashes = with_trailing(p.hashes, h);
  return p;
}

class DataWriter {
 public:
  void add_set(uint64_t n, int version = kCommitVersion) {
    DataSet d = data_set(n, version);
    json s;
    s["n"] = d.c.n;
    s["records"] = d.records;
    s["commitment"] = {{"version", d.c.version}, {"records", d.c.records}, {"n", d.c.n}, {"root", d.c.root.hex()}};
    s["tree_leaves"] = hex_list(d.tree);
    sets_.push_back(s);
    data_.push_back(std::move(d));
  }
  // A set whose tree is given (the unsorted-tree attack): its records are
  // those of the tree, in tree order.
  void add_raw_set(const DataSet& d) {
    json s;
    s["n"] = d.c.n;
    s["records"] = d.records;
    s["commitment"] = {{"version", d.c.version}, {"records", d.c.records}, {"n", d.c.n}, {"root", d.c.root.hex()}};
    s["tree_leaves"] = hex_list(d.tree);
    s["unsorted"] = true;
    sets_.push_back(s);
    data_.push_back(d);
  }
  const DataSet& set(size_t i) const { return data_[i]; }
  size_t sets() const { return data_.size(); }

  // `want`: "valid", "invalid: REASON" or "error: MESSAGE", the result
  // verify_document gives (checked here; the generator refuses to disagree).
  void add(size_t set, const std::string& desc, const json& doc, const std::string& want) {
    std::string got;
    try {
      const Verdict v = verify_document(nlohmann::json::parse(doc.dump()), data_[set].c, "vector");
      got = v.ok ? "valid" : "invalid: " + v.reason;
    } catch (const Error& e) {
      got = std::string("error: ") + e.what();
    }
    if (got != want) die("data case '" + desc + "' gives '" + got + "', meant '" + want + "'");
    json c;
    c["set"] = set;
    c["description"] = desc;
    c["document"] = doc;
    c["expected"] = want;
    cases_.push_back(std::move(c));
  }

  json document() const {
    json doc;
    doc["description"] =
        "wit.proof documents (docs/proofs.md) against data commitments (docs/commitment.md): one tree over the "
        "sorted distinct record leaves H(0x00 || record), ranged (version 3: every node binds the leaves around "
        "its split) or RFC 6962 (version 2, read only). Each set lists its records in file order "
        "(lines reader) and the commitment wit-commit gives for them; each case is a document and the verdict "
        "of verify_document with the set's commitment: \"valid\", \"invalid: REASON\" (wit-query verify exit "
        "1) or \"error: MESSAGE\" (exit 2).";
    doc["generator"] = "tests/vectors/gen_vectors.cpp (regenerate: see tests/vectors/README.md)";
    doc["tree_hash"] = th.name;
    doc["sets"] = sets_;
    doc["cases"] = cases_;
    return doc;
  }

 private:
  std::vector<DataSet> data_;
  json sets_ = json::array(), cases_ = json::array();
};

void data_proofs(DataWriter& w) {
  for (uint64_t n : {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17}) w.add_set(n);
  Hash32 zero, ones;
  ones.b.fill(0xff);
  const std::string kRoot = "invalid: proof does not lead to the root";
  const std::string kLength = "invalid: wrong number of hashes in proof";
  const std::string kBadRange = "invalid: a sibling's stated key range is not a range of its leaves";
  const std::string kOrder =
      "invalid: key ranges out of order on the path (a left child's last leaf is not below the right child's first)";
  const std::string kRangeCount = "invalid: wrong number of key ranges in proof";
  // What a broken path gives: a one-leaf sibling's range is its hash, so a
  // flipped hash there is a bad range; higher up it misses the root.
  auto flipped_result = [&](uint64_t i, uint64_t n, size_t k) {
    return inclusion_ranges(i, n)[k].size() == 1 ? kBadRange : kRoot;
  };
  for (size_t si = 0; si < w.sets(); si++) {
    const DataSet& d = w.set(si);
    const uint64_t n = d.c.n;
    const std::string of = " (" + std::to_string(n) + " distinct of " + std::to_string(d.c.records) + " records)";
    if (n == 0) {
      w.add(si, "any record is absent from the empty tree" + of, exclusion_doc(d, th.leaf(ByteView("anything"))),
            "valid");
      json bad = inclusion_doc(d, 0, th.leaf(ByteView("anything")), {});
      w.add(si, "inclusion in the empty tree" + of, bad, "invalid: index out of range");
      continue;
    }
    // Inclusion at every position.
    for (uint64_t i = 0; i < n; i++)
      w.add(si, "record at position " + std::to_string(i) + of, inclusion_doc(d, i, d.tree[i], dpath(d, i, n)),
            "valid");
    const uint64_t m = n / 2;
    const RPath p = dpath(d, m, n);
    if (!p.hashes.empty()) {
      w.add(si, "bit flipped in the path" + of, inclusion_doc(d, m, d.tree[m], flip_hash(p, 0)),
            flipped_result(m, n, 0));
      w.add(si, "path truncated" + of, inclusion_doc(d, m, d.tree[m], cut(p)), kLength);
      // The ranges: each bit of a stated range matters, and they must be there.
      for (size_t k = 0; k < p.ranges.size(); k++) {
        RPath q = p;
        q.ranges[k].first = flip(q.ranges[k].first, 7);
        const bool leaf = inclusion_ranges(m, n)[k].size() == 1;
        const bool right = inclusion_ranges(m, n)[k].begin > m;
        // A range's near end is bound by its parent (root missed); its far end
        // only by a node above, if any (or it breaks the order first).
        json doc = inclusion_doc(d, m, d.tree[m], q);
        std::string got;
        try {
          const Verdict v = verify_document(nlohmann::json::parse(doc.dump()), d.c, "vector");
          got = v.ok ? "valid" : "invalid: " + v.reason;
        } catch (const Error& e) {
          got = std::string("error: ") + e.what();
        }
        if (leaf && got != kBadRange) die("a one-leaf sibling's flipped range is not refused as a bad range");
        if (got == "valid" && right) die("a right sibling's flipped first leaf (bound by its parent) verified");
        w.add(si,
              "bit flipped in the first leaf of range[" + std::to_string(k) + "]" +
                  (got == "valid" ? " (a far end no node binds: unused)" : "") + of,
              doc, got);
      }
      RPath none = p;
      none.ranges.clear();
      w.add(si, "the ranges left out (a version 2 path for a version 3 commitment)" + of,
            inclusion_doc(d, m, d.tree[m], none), kRangeCount);
      RPath lie = p;  // the top sibling's range moved past the record: the order check refuses it
      const bool top_right = inclusion_ranges(m, n).back().begin > m;
      if (top_right) lie.ranges.back().first = d.tree[m];
      else lie.ranges.back().last = d.tree[m];
      w.add(si, "the top sibling's range claimed to reach the record itself" + of, inclusion_doc(d, m, d.tree[m], lie),
            inclusion_ranges(m, n).back().size() == 1 ? kBadRange : kOrder);
    }
    w.add(si, "trailing extra hash" + of, inclusion_doc(d, m, d.tree[m], extra(p, d.c.root)), kLength);
    const uint64_t other = m + 1 < n ? m + 1 : (m > 0 ? m - 1 : 1);
    {
      json doc = inclusion_doc(d, other, d.tree[m], p);
      std::string got;
      const Verdict v = verify_document(nlohmann::json::parse(doc.dump()), d.c, "vector");
      got = v.ok ? "valid" : "invalid: " + v.reason;
      if (v.ok) die("another position's index verified");
      w.add(si, "another position's index" + of, doc, got);
    }
    // The position a record had in file order (version 1's tree) is not its position now.
    const auto first_in_file = std::find(d.records.begin(), d.records.end(), "record-0") - d.records.begin();
    const Hash32 r0 = th.leaf(ByteView("record-0"));
    const uint64_t pos0 = uint64_t(std::lower_bound(d.tree.begin(), d.tree.end(), r0) - d.tree.begin());
    if (uint64_t(first_in_file) != pos0 && uint64_t(first_in_file) < n) {
      json doc = inclusion_doc(d, uint64_t(first_in_file), r0, dpath(d, pos0, n));
      const Verdict v = verify_document(nlohmann::json::parse(doc.dump()), d.c, "vector");
      if (v.ok) die("a file-order position verified");
      w.add(si, "record-0 at its file-order position " + std::to_string(first_in_file) + " instead of " +
                    std::to_string(pos0) + of,
            doc, "invalid: " + v.reason);
    }
    json big = inclusion_doc(d, m, d.tree[m], p);
    big["size"] = n + 1;
    w.add(si, "size one larger" + of, big,
          "invalid: proof is for a tree of " + std::to_string(n + 1) + " records, the commitment has " +
              std::to_string(n));
    json other_c = inclusion_doc(d, m, d.tree[m], p);
    other_c["commitment"] = commit_ref(droot(d, n - 1), n - 1);
    w.add(si, "names the commitment of the tree one leaf smaller" + of, other_c,
          "invalid: proof is for another commitment");
    json absent_leaf = inclusion_doc(d, m, th.leaf(ByteView("never-committed")), p);
    {
      const Verdict v = verify_document(nlohmann::json::parse(absent_leaf.dump()), d.c, "vector");
      if (v.ok) die("an absent record verified on a committed record's path");
      w.add(si, "an absent record given a committed record's path" + of, absent_leaf, "invalid: " + v.reason);
    }
    json emb = inclusion_doc(d, m, d.tree[m], p);
    emb["record"] = "not the record";
    w.add(si, "embedded record that does not hash to the leaf" + of, emb,
          "invalid: embedded record does not hash to the proved leaf");

    // Exclusion: below the first leaf, above the last, and between two.
    w.add(si, "value below every leaf" + of, exclusion_doc(d, zero), "valid");
    w.add(si, "value above every leaf" + of, exclusion_doc(d, ones), "valid");
    for (uint64_t k = 0; k < 64; k++) {
      const std::string rec = "absent-" + std::to_string(k);
      const Hash32 v = th.leaf(ByteView(rec));
      if (!(d.tree.front() < v && v < d.tree.back())) continue;
      json e = exclusion_doc(d, v);
      e["record"] = rec;
      w.add(si, "absent record '" + rec + "' between two leaves" + of, e, "valid");
      json flipped = e;
      const uint64_t li = flipped["left"]["index"].get<uint64_t>();
      flipped["left"]["path"] = hex_list(flip_at(dpath(d, li, n).hashes, 0));
      if (!flipped["left"]["path"].empty()) w.add(si, "bit flipped in the left bracket's path" + of, flipped, flipped_result(li, n, 0));
      json missing = e;
      missing["right"] = nullptr;
      w.add(si, "right bracket left out" + of, missing, "invalid: a bracketing leaf is missing");
      break;
    }
    // A committed record "proved absent": the proofs a cheating prover could try.
    const Hash32 present = d.tree[m];
    json self = exclusion_doc(d, present);  // brackets m-1 and m: m is the value itself
    w.add(si, "present record with itself as a bracket" + of, self,
          "invalid: value is not strictly between its bracketing leaves");
    if (m > 0 && m + 1 < n) {
      json skip = envelope(d, "exclusion");
      skip["leaf"] = present.hex();
      skip["size"] = n;
      skip["left"] = bracket(d, m - 1);
      skip["right"] = bracket(d, m + 1);
      w.add(si, "present record between its two neighbours (it is skipped)" + of, skip,
            "invalid: bracketing leaves are not adjacent");
      // The tree without the record: its exclusion proof there, offered for the real tree.
      DataSet forged = d;
      forged.tree.erase(forged.tree.begin() + int64_t(m));
      forged.c.n = forged.tree.size();
      forged.c.root = droot(forged, forged.tree.size());
      json lie = exclusion_doc(forged, present);
      w.add(si, "exclusion from a tree that leaves the record out" + of, lie,
            "invalid: proof is for another commitment");
      lie["commitment"] = commit_ref(d.c.root, n);
      lie["size"] = n;
      const Verdict v = verify_document(nlohmann::json::parse(lie.dump()), d.c, "vector");
      if (v.ok) die("an exclusion from another tree verified");
      w.add(si, "the same, relabelled with this commitment" + of, lie, "invalid: " + v.reason);
    }
  }
  // The unsorted-tree attack (attack 19) in small: the trainer's own code
  // commits a tree with record x moved from its sorted place to the end.
  // Version 3: x's inclusion is refused (its path is out of order), and so is
  // the exclusion from the gap where x belongs (the root's split is out of
  // order too): one root never gives both.
  {
    DataSet d = data_set(9);
    const uint64_t n = d.c.n, from = 3;
    const Hash32 x = d.tree[from];
    d.tree.erase(d.tree.begin() + int64_t(from));
    d.tree.push_back(x);
    d.c.root = droot(d, n);
    w.add_raw_set(d);
    const size_t si = w.sets() - 1;
    w.add(si, "unsorted tree: record moved to the end, its inclusion", inclusion_doc(d, n - 1, x, dpath(d, n - 1, n)),
          kOrder);
    json ex = envelope(d, "exclusion");
    ex["leaf"] = x.hex();
    ex["size"] = n;
    ex["left"] = bracket(d, from - 1);
    ex["right"] = bracket(d, from);
    w.add(si, "unsorted tree: the same record's exclusion from the gap it left", ex, kOrder);
  }
  // Version 2 (read only): RFC 6962 paths, no ranges; an exclusion verifies
  // but says what it rests on.
  w.add_set(9, kCommitVersionUnranged);
  {
    const size_t si = w.sets() - 1;
    const DataSet& d = w.set(si);
    const std::string of = " (version 2, 9 records)";
    w.add(si, "record at position 4" + of, inclusion_doc(d, 4, d.tree[4], dpath(d, 4, d.c.n)), "valid");
    json e = exclusion_doc(d, zero);
    const Verdict v = verify_document(nlohmann::json::parse(e.dump()), d.c, "vector");
    if (!v.ok || v.summary.find(kUnrangedExclusionCaveat) == std::string::npos)
      die("a version 2 exclusion does not say what it rests on");
    w.add(si, "value below every leaf" + of, e, "valid");
    json ranged = inclusion_doc(d, 4, d.tree[4], rpath(d.tree, 4, 0, d.c.n));
    w.add(si, "a ranged path against a version 2 commitment" + of, ranged, kRangeCount);
    json v3 = inclusion_doc(d, 4, d.tree[4], dpath(d, 4, d.c.n));
    v3["version"] = 3;
    w.add(si, "a version 3 document naming a version 2 commitment" + of, v3,
          "invalid: proof is of version 3, its commitment of version 2 (a proof is of its commitment's version)");
  }
  // Format errors (exit 2).
  const DataSet& d = w.set(4);
  json v1 = inclusion_doc(d, 0, d.tree[0], dpath(d, 0, d.c.n));
  v1["version"] = 1;
  w.add(4, "a version 1 document", v1,
        "error: unsupported proof version 1 (this wit reads versions 2 and 3): vector");
  json two = inclusion_doc(d, 0, d.tree[0], dpath(d, 0, d.c.n));
  two["commitment"]["sorted_root"] = d.c.root.hex();
  w.add(4, "a commitment reference with version 1's sorted_root", two,
        "error: invalid proof: unknown field 'sorted_root': vector");
  json badr = inclusion_doc(d, 0, d.tree[0], dpath(d, 0, d.c.n));
  badr["ranges"][0] = json::array({d.tree[0].hex()});
  w.add(4, "a range that is not a pair", badr,
        "error: invalid proof: field 'ranges' holds something other than [first, last] pairs of hex hashes: vector");
}

// --- the ranged data tree: every size 0..17, a proof at every position, broken ones ---

class RangedWriter : public CaseList {
 public:
  // The tree of size n: the sorted leaf hashes of "leaf-0" .. "leaf-(n-1)".
  static std::vector<Hash32> tree(uint64_t n) {
    std::vector<Hash32> l;
    for (uint64_t i = 0; i < n; i++) l.push_back(th.leaf(leaf_data(i)));
    std::sort(l.begin(), l.end());
    return l;
  }
  void root_case(uint64_t n) {
    const auto l = tree(n);
    const Hash32 want = rmth(l, 0, n);
    if (merkle_root(kDataTree, l) != want) die("merkle_root(kDataTree) disagrees with RMTH at size " + std::to_string(n));
    json c;
    c["type"] = "root";
    c["description"] = "root of " + std::to_string(n) + " sorted leaves";
    c["size"] = n;
    c["root"] = want.hex();
    add(std::move(c));
  }
  void inclusion_case(const std::string& desc, uint64_t n, const InclusionProof& p, const Hash32& root, Intent want) {
    json c;
    c["type"] = "inclusion";
    c["description"] = desc;
    c["size"] = n;  // the tree; the proof's own size is "proof_size"
    c["index"] = p.index;
    c["proof_size"] = p.size;
    c["leaf"] = p.leaf.hex();
    c["path"] = hex_list(p.path);
    c["ranges"] = range_list(p.ranges);
    c["root"] = root.hex();
    c["expected"] = check(desc, verify_inclusion(kDataTree, p, root), want);
    add(std::move(c));
  }
  void exclusion_case(const std::string& desc, uint64_t n, const ExclusionProof& p, const Hash32& root, Intent want,
                      const std::vector<Hash32>* leaves = nullptr) {
    auto bracket = [](bool has, const Bracket& b) { return bracket_case(has, b, true); };
    json c;
    c["type"] = "exclusion";
    c["description"] = desc;
    c["size"] = n;
    if (leaves) c["leaves"] = hex_list(*leaves);  // a tree of its own (not sorted)
    c["value"] = p.value.hex();
    c["proof_size"] = p.size;
    c["left"] = bracket(p.has_left, p.left);
    c["right"] = bracket(p.has_right, p.right);
    c["root"] = root.hex();
    c["expected"] = check(desc, verify_exclusion(kDataTree, p, root), want);
    add(std::move(c));
  }
  json document() const {
    json doc;
    doc["description"] =
        "The ranged data tree (docs/proofs.md, kDataTree): RFC 6962's shape over sorted distinct leaves, leaves "
        "not hashed again, node = BLAKE2b-256(personal \"wit/rangenode/v1\"; left || right || last leaf of left "
        "|| first leaf of right), empty tree = BLAKE2b-256(\"\"). The tree of \"size\" n is the sorted leaf "
        "hashes H(0x00 || \"leaf-i\") for i < n (unless the case lists its own \"leaves\"). Proofs give each "
        "sibling's hash (\"path\", bottom-up) and its [first, last] leaf (\"ranges\"). \"expected\" is \"ok\" "
        "or the error as named by to_string(ProofError); an independent verifier only needs ok / not ok.";
    doc["generator"] = "tests/vectors/gen_vectors.cpp (regenerate: see tests/vectors/README.md)";
    doc["node_personal"] = kRangedNodePersonal;
    doc["leaf_formula"] = kLeafFormula;
    doc["cases"] = cases_;
    return doc;
  }

};

InclusionProof ref_proof(const std::vector<Hash32>& l, uint64_t i) {
  const RPath p = rpath(l, i, 0, l.size());
  return InclusionProof{l[i], i, l.size(), p.hashes, p.ranges};
}

void ranged_vectors(RangedWriter& w) {
  for (uint64_t n = 0; n <= 17; n++) w.root_case(n);
  for (uint64_t n = 1; n <= 17; n++) {
    const auto l = RangedWriter::tree(n);
    const Hash32 root = rmth(l, 0, n);
    MerkleTree t(kDataTree, l.data(), n, 1, 1u);
    for (uint64_t i = 0; i < n; i++) {
      const InclusionProof p = ref_proof(l, i);
      const InclusionProof q = prove_inclusion(t, i);
      if (q.path != p.path || q.ranges != p.ranges) die("prove_inclusion disagrees with RPATH");
      w.inclusion_case("leaf " + std::to_string(i) + " of " + std::to_string(n), n, p, root, ProofError::kOk);
    }
  }
  // Broken proofs, each from a valid one.
  for (uint64_t n : {1, 2, 3, 5, 8, 9, 16, 17}) {
    const auto l = RangedWriter::tree(n);
    const Hash32 root = rmth(l, 0, n);
    for (uint64_t i : std::set<uint64_t>{0, n / 2, n - 1}) {
      const InclusionProof p = ref_proof(l, i);
      const std::string at = "leaf " + std::to_string(i) + " of " + std::to_string(n) + ": ";
      const std::vector<Range> sib = inclusion_ranges(i, n);
      for (size_t k = 0; k < p.path.size(); k++) {
        InclusionProof q = p;
        q.path[k] = flip(q.path[k], unsigned(8 * k + 3));
        w.inclusion_case(at + "bit flipped in path[" + std::to_string(k) + "]", n, q, root, std::nullopt);
        // A sibling's far end is bound by the first node above whose split
        // is on the same side; on the tree's first (last) leaf spine none is,
        // and nothing uses it but the range it gives the root.
        const bool right = sib[k].begin > i;
        bool far_bound = sib[k].size() == 1;
        for (size_t u = k + 1; u < sib.size(); u++) far_bound |= (sib[u].begin > i) == right;
        const Intent far = far_bound ? Intent() : Intent(ProofError::kOk);
        const std::string unbound = far_bound ? "" : " (a far end no node binds: unused)";
        q = p;
        q.ranges[k].first = flip(q.ranges[k].first, 5);
        w.inclusion_case(at + "bit flipped in ranges[" + std::to_string(k) + "].first" + (right ? "" : unbound), n, q,
                         root, right ? Intent() : far);
        q = p;
        q.ranges[k].last = flip(q.ranges[k].last, 250);
        w.inclusion_case(at + "bit flipped in ranges[" + std::to_string(k) + "].last" + (right ? unbound : ""), n, q,
                         root, right ? far : Intent());
        q = p;
        std::swap(q.ranges[k].first, q.ranges[k].last);
        if (!(q.ranges[k] == p.ranges[k]))
          w.inclusion_case(at + "ranges[" + std::to_string(k) + "] reversed", n, q, root, std::nullopt);
      }
      if (!p.path.empty()) {
        InclusionProof q = p;
        q.ranges.clear();
        w.inclusion_case(at + "ranges left out", n, q, root, ProofError::kWrongRangeCount);
        q = p;
        q.ranges.pop_back();
        w.inclusion_case(at + "last range left out", n, q, root, ProofError::kWrongRangeCount);
        q = p;
        q.path.pop_back();
        q.ranges.pop_back();
        w.inclusion_case(at + "path and ranges truncated", n, q, root, ProofError::kWrongProofLength);
      }
      InclusionProof q = p;
      q.path.push_back(root);
      q.ranges.push_back({l.front(), l.back()});
      w.inclusion_case(at + "trailing extra level", n, q, root, ProofError::kWrongProofLength);
      if (n > 1) {
        q = p;
        q.index = (i + 1) % n;
        w.inclusion_case(at + "claimed for the next index", n, q, root, std::nullopt);
        q = p;
        q.leaf = l[(i + 1) % n];
        w.inclusion_case(at + "another leaf", n, q, root, std::nullopt);
      }
      q = p;
      q.index = n;
      w.inclusion_case(at + "index equal to size", n, q, root, ProofError::kIndexOutOfRange);
      w.inclusion_case(at + "the RFC 6962 root of the same leaves", n, p, mth(l, 0, n),
                       n == 1 ? Intent(ProofError::kOk) : Intent(ProofError::kRootMismatch));
    }
  }
  // Exclusion at every gap of every size, and below and above.
  Hash32 zero, ones;
  ones.b.fill(0xff);
  for (uint64_t n = 0; n <= 17; n++) {
    const auto l = RangedWriter::tree(n);
    const Hash32 root = rmth(l, 0, n);
    MerkleTree t(kDataTree, l.data(), n, 1, 1u);
    std::vector<std::pair<std::string, Hash32>> values = {{"below the minimum", zero}, {"above the maximum", ones}};
    for (uint64_t i = 0; i + 1 < n; i++) {
      const Hash32 v = next_value(l[i]);
      if (!(v < l[i + 1])) die("adjacent sorted leaves leave no gap");
      values.push_back({"between leaves " + std::to_string(i) + " and " + std::to_string(i + 1), v});
    }
    for (const auto& [what, v] : values) {
      ExclusionProof p;
      if (!prove_exclusion(t, v, p)) die("prove_exclusion refused an absent value");
      w.exclusion_case("value " + what + " (" + std::to_string(n) + " leaves)", n, p, root, ProofError::kOk);
      if (n == 0) break;
    }
  }
  {
    const uint64_t n = 9;
    const auto l = RangedWriter::tree(n);
    const Hash32 root = rmth(l, 0, n);
    MerkleTree t(kDataTree, l.data(), n, 1, 1u);
    ExclusionProof p;
    if (!prove_exclusion(t, next_value(l[3]), p)) die("no gap");
    ExclusionProof q = p;
    q.value = l[4];
    w.exclusion_case("present value (leaf 4) with the proof for the gap below it", n, q, root, ProofError::kNotBracketed);
    q = p;
    q.left.ranges[1].last = flip(q.left.ranges[1].last, 9);
    w.exclusion_case("bit flipped in the left bracket's ranges[1].last", n, q, root, std::nullopt);
    q = p;
    q.right.ranges.back().last = flip(q.right.ranges.back().last, 9);
    w.exclusion_case("bit flipped in the right bracket's top range's last leaf", n, q, root, std::nullopt);
    q = p;
    q.right = Bracket{5, l[5], ref_proof(l, 5).path, ref_proof(l, 5).ranges};
    w.exclusion_case("brackets at leaves 3 and 5 are not adjacent", n, q, root, ProofError::kNotAdjacent);
  }
  // The unsorted-tree attack: a tree of 9 leaves with leaf 3 moved to the end,
  // committed with honest split keys by the trainer's own code.
  {
    auto l = RangedWriter::tree(9);
    const Hash32 x = l[3];
    l.erase(l.begin() + 3);
    l.push_back(x);
    const Hash32 root = rmth(l, 0, 9);
    w.inclusion_case("unsorted tree (leaf moved to the end): its inclusion there", 9, ref_proof(l, 8), root,
                     ProofError::kRangeOrder);
    ExclusionProof p;
    p.value = x;
    p.size = 9;
    p.has_left = p.has_right = true;
    const InclusionProof a = ref_proof(l, 2), b = ref_proof(l, 3);
    p.left = Bracket{2, a.leaf, a.path, a.ranges};
    p.right = Bracket{3, b.leaf, b.path, b.ranges};
    // The root binds (last leaf of the sorted 8, x) out of order: every path
    // through it fails, the brackets' too.
    w.exclusion_case("unsorted tree (leaf moved to the end): its exclusion from the gap it left", 9, p, root,
                     ProofError::kRangeOrder, &l);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: wit_gen_vectors MERKLE.json [DATA.json [RANGED.json]]\n");
    return 2;
  }
  init_crypto();
  Writer w;
  roots(w);
  inclusion(w);
  consistency(w);
  exclusion(w);
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << w.document().dump(1) << '\n';
  out.close();
  if (!out) die(std::string("cannot write ") + argv[1]);
  if (argc == 4) {
    RangedWriter rw;
    ranged_vectors(rw);
    std::ofstream rout(argv[3], std::ios::binary | std::ios::trunc);
    rout << rw.document().dump(1) << '\n';
    rout.close();
    if (!rout) die(std::string("cannot write ") + argv[3]);
  }
  if (argc >= 3) {
    DataWriter dw;
    data_proofs(dw);
    std::ofstream dout(argv[2], std::ios::binary | std::ios::trunc);
    dout << dw.document().dump(1) << '\n';
    dout.close();
    if (!dout) die(std::string("cannot write ") + argv[2]);
  }
  return 0;
}
