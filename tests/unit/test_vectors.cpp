// Replays tests/vectors/merkle_blake2b.json (written by tests/vectors/gen_vectors.cpp):
// every root, inclusion, consistency and exclusion case must give exactly its
// expected result, and every valid proof must be the one wit_core generates.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "wit/hash/hash.h"
#include "wit/hash/merkle.h"

using namespace wit;
using nlohmann::json;

namespace {

const TreeHash& th = kBlake2bTree;

const json& vectors() {
  static const json j = [] {
    std::ifstream in(WIT_TEST_DATA "/vectors/merkle_blake2b.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return j;
}

Hash32 h32(const json& v) {
  Hash32 h;
  REQUIRE(Hash32::from_hex(v.get<std::string>(), h));
  return h;
}

std::vector<Hash32> hashes(const json& v) {
  std::vector<Hash32> out;
  for (const json& e : v) out.push_back(h32(e));
  return out;
}

Bytes bytes(const json& v) {
  Bytes b;
  REQUIRE(from_hex(v.get<std::string>(), b));
  return b;
}

// Leaf hashes of the shared "leaves"; inclusion and consistency cases use a prefix.
const std::vector<Hash32>& shared_leaves() {
  static const std::vector<Hash32> l = [] {
    std::vector<Hash32> out;
    for (const json& d : vectors()["leaves"]) out.push_back(th.leaf(bytes(d)));
    return out;
  }();
  return l;
}

std::vector<const json*> cases_of(const std::string& type) {
  std::vector<const json*> out;
  for (const json& c : vectors()["cases"])
    if (c["type"] == type) out.push_back(&c);
  return out;
}

std::vector<KeyRange> ranges_of(const json& v) {
  std::vector<KeyRange> out;
  for (const json& r : v) out.push_back({h32(r[0]), h32(r[1])});
  return out;
}

// The brackets of an exclusion case, as the verifier takes them (of size
// field `size_key`; with ranges when the case has them).
ExclusionProof exclusion_proof(const json& c, const char* size_key = "size") {
  ExclusionProof p;
  p.value = h32(c["value"]);
  p.size = c[size_key].get<uint64_t>();
  for (auto [key, has, b] : {std::make_tuple("left", &p.has_left, &p.left),
                             std::make_tuple("right", &p.has_right, &p.right)}) {
    *has = !c[key].is_null();
    if (!*has) continue;
    b->index = c[key]["index"].get<uint64_t>();
    b->leaf = h32(c[key]["leaf"]);
    b->path = hashes(c[key]["path"]);
    if (c[key].contains("ranges")) b->ranges = ranges_of(c[key]["ranges"]);
  }
  return p;
}

}  // namespace

TEST_CASE("BLAKE2b vectors cover every kind of case", "[merkle][vectors]") {
  std::set<std::string> types, expected;
  std::set<uint64_t> root_sizes;
  for (const json& c : vectors()["cases"]) {
    types.insert(c["type"].get<std::string>());
    expected.insert(c["expected"].get<std::string>());
    if (c["type"] == "root" && c["expected"] == "ok") root_sizes.insert(c["leaves"].size());
  }
  CHECK(types == std::set<std::string>{"root", "inclusion", "consistency", "exclusion"});
  // Every ProofError is expected somewhere, and nothing else is.
  std::set<std::string> names;
  for (ProofError e : {ProofError::kOk, ProofError::kIndexOutOfRange, ProofError::kWrongProofLength,
                       ProofError::kRootMismatch, ProofError::kOldRootMismatch, ProofError::kNotAdjacent,
                       ProofError::kNotBracketed, ProofError::kMissingBracket})
    names.insert(to_string(e));
  CHECK(expected == names);
  CHECK(root_sizes == std::set<uint64_t>{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17});
}

TEST_CASE("BLAKE2b vectors: roots", "[merkle][vectors]") {
  for (const json* c : cases_of("root")) {
    INFO((*c)["description"]);
    std::vector<Hash32> l;
    for (const json& d : (*c)["leaves"]) l.push_back(th.leaf(bytes(d)));
    Hash32 claimed = h32((*c)["root"]);
    MerkleTree t(th, l.data(), l.size(), 2, 1u);
    REQUIRE(merkle_root(th, l) == t.root());
    ProofError got = t.root() == claimed ? ProofError::kOk : ProofError::kRootMismatch;
    CHECK(to_string(got) == (*c)["expected"].get<std::string>());
  }
}

TEST_CASE("BLAKE2b vectors: inclusion proofs", "[merkle][vectors]") {
  const auto& leaves = shared_leaves();
  for (const json* c : cases_of("inclusion")) {
    INFO((*c)["description"]);
    uint64_t index = (*c)["index"], size = (*c)["size"];
    std::vector<Hash32> path = hashes((*c)["path"]);
    Hash32 root = h32((*c)["root"]);
    ProofError got = verify_inclusion(th, index, size, th.leaf(bytes((*c)["leaf"])), path, root);
    CHECK(to_string(got) == (*c)["expected"].get<std::string>());
    if ((*c)["expected"] == "ok") {
      REQUIRE(size <= leaves.size());
      MerkleTree t(th, leaves.data(), size, 1, 1u);
      CHECK(t.root() == root);
      CHECK(t.hashes(inclusion_ranges(index, size)) == path);
    }
  }
}

TEST_CASE("BLAKE2b vectors: consistency proofs", "[merkle][vectors]") {
  const auto& leaves = shared_leaves();
  for (const json* c : cases_of("consistency")) {
    INFO((*c)["description"]);
    uint64_t m = (*c)["old_size"], n = (*c)["new_size"];
    std::vector<Hash32> proof = hashes((*c)["proof"]);
    Hash32 r1 = h32((*c)["old_root"]), r2 = h32((*c)["new_root"]);
    ProofError got = verify_consistency(th, m, n, r1, r2, proof);
    CHECK(to_string(got) == (*c)["expected"].get<std::string>());
    if ((*c)["expected"] == "ok") {
      REQUIRE(n <= leaves.size());
      MerkleTree t(th, leaves.data(), n, 1, 1u);
      CHECK(t.range_hash({0, m}) == r1);
      CHECK(t.root() == r2);
      CHECK(t.hashes(consistency_ranges(m, n)) == proof);
    }
  }
}

TEST_CASE("BLAKE2b vectors: exclusion proofs", "[merkle][vectors][exclusion]") {
  for (const json* c : cases_of("exclusion")) {
    INFO((*c)["description"]);
    std::vector<Hash32> sorted = hashes((*c)["leaves"]);
    REQUIRE(std::is_sorted(sorted.begin(), sorted.end()));
    ExclusionProof p = exclusion_proof(*c);
    Hash32 root = h32((*c)["root"]);
    CHECK(to_string(verify_exclusion(th, p, root)) == (*c)["expected"].get<std::string>());

    // The prover refuses a present value, and reproduces every valid proof.
    MerkleTree t(th, sorted.data(), sorted.size(), 1, 1u);
    ExclusionProof q;
    if (std::binary_search(sorted.begin(), sorted.end(), p.value)) {
      CHECK_FALSE(prove_exclusion(t, p.value, q));
    } else if ((*c)["expected"] == "ok") {
      REQUIRE(prove_exclusion(t, p.value, q));
      CHECK(t.root() == root);
      CHECK(q.size == p.size);
      REQUIRE(q.has_left == p.has_left);
      REQUIRE(q.has_right == p.has_right);
      if (p.has_left) {
        CHECK(q.left.index == p.left.index);
        CHECK(q.left.leaf == p.left.leaf);
        CHECK(q.left.path == p.left.path);
      }
      if (p.has_right) {
        CHECK(q.right.index == p.right.index);
        CHECK(q.right.leaf == p.right.leaf);
        CHECK(q.right.path == p.right.path);
      }
    }
  }
}

// tests/vectors/ranged_blake2b.json: the ranged data tree (kDataTree) of 0..17
// leaves. Every case gives exactly its expected result, and every valid proof
// is the one MerkleTree / prove_exclusion build (tests/vectors/check_ranged.py
// checks the same file with an independent verifier in Python).
namespace {

const json& ranged_vectors() {
  static const json j = [] {
    std::ifstream in(WIT_TEST_DATA "/vectors/ranged_blake2b.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return j;
}

std::vector<Hash32> ranged_tree(uint64_t n) {
  std::vector<Hash32> l;
  for (uint64_t i = 0; i < n; i++) {
    const std::string d = "leaf-" + std::to_string(i);
    l.push_back(kBlake2bTree.leaf(ByteView(d)));
  }
  std::sort(l.begin(), l.end());
  return l;
}

}  // namespace

TEST_CASE("ranged vectors: every case gives its expected result, valid proofs are wit_core's", "[vectors][ranged]") {
  size_t ok = 0, broken = 0;
  for (const json& c : ranged_vectors()["cases"]) {
    INFO(c["description"].get<std::string>());
    const uint64_t n = c["size"].get<uint64_t>();
    std::vector<Hash32> tree = c.contains("leaves") ? hashes(c["leaves"]) : ranged_tree(n);
    const Hash32 root = h32(c["root"]);
    std::string got;
    if (c["type"] == "root") {
      CHECK(merkle_root(kDataTree, tree) == root);
      continue;
    }
    const MerkleTree t(kDataTree, tree.data(), tree.size(), 2, 1);
    if (c["type"] == "inclusion") {
      const InclusionProof p{h32(c["leaf"]), c["index"].get<uint64_t>(), c["proof_size"].get<uint64_t>(),
                             hashes(c["path"]), ranges_of(c["ranges"])};
      got = to_string(verify_inclusion(kDataTree, p, root));
      // (a case that changes a far end no node binds verifies, and is not wit_core's proof)
      const bool unbound = c["description"].get<std::string>().find("no node binds") != std::string::npos;
      if (got == std::string("ok") && !c.contains("leaves") && !unbound) {
        const InclusionProof q = prove_inclusion(t, p.index);
        CHECK(q.path == p.path);
        CHECK(q.ranges == p.ranges);
      }
    } else {
      const ExclusionProof p = exclusion_proof(c, "proof_size");
      got = to_string(verify_exclusion(kDataTree, p, root));
      if (got == std::string("ok") && !c.contains("leaves")) {
        ExclusionProof q;
        REQUIRE(prove_exclusion(t, p.value, q));
        CHECK(q.has_left == p.has_left);
        CHECK(q.has_right == p.has_right);
        if (q.has_left) CHECK(q.left.ranges == p.left.ranges);
        if (q.has_right) CHECK(q.right.ranges == p.right.ranges);
      }
    }
    CHECK(got == c["expected"].get<std::string>());
    (got == std::string("ok") ? ok : broken)++;
  }
  CHECK(ok >= 17 * 9);  // a proof at every position of every size
  CHECK(broken > 200);
}
