// Writes tests/vectors/merkle_blake2b.json: Merkle tree vectors for wit's own
// hash (kBlake2bTree), valid and deliberately broken, each with its expected result.
// Usage: wit_gen_vectors OUT.json
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

#include "wit/hash.h"
#include "wit/merkle.h"

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

// --- JSON helpers ---

json hex_list(const std::vector<Hash32>& v) {
  json a = json::array();
  for (const Hash32& h : v) a.push_back(h.hex());
  return a;
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

class Writer {
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
    auto bracket = [](bool has, const Bracket& b) {
      if (!has) return json(nullptr);
      json j;
      j["index"] = b.index;
      j["leaf"] = b.leaf.hex();
      j["path"] = hex_list(b.path);
      return j;
    };
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

  std::vector<Bytes> data_;
  std::vector<Hash32> leaves_;
  json cases_ = json::array();
  std::set<std::string> descriptions_;
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

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: wit_gen_vectors OUT.json\n");
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
  return 0;
}
