// kSha256Tree against the published RFC 6962 reference tree
// (tests/vectors/rfc6962_sha256.json): roots, subtree hashes, audit paths and
// consistency proofs must match hash for hash, and the reference proofs must
// verify and stop verifying when corrupted as the reference verifier tests do.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "wit/hash/hash.h"
#include "wit/hash/merkle.h"

using namespace wit;
using nlohmann::json;

namespace {

const json& reference() {
  static const json j = [] {
    std::ifstream in(WIT_TEST_DATA "/vectors/rfc6962_sha256.json");
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

// Leaf hashes of the reference inputs, computed with the code under test.
std::vector<Hash32> leaf_hashes() {
  std::vector<Hash32> out;
  for (const json& e : reference()["leaf_inputs"]) {
    Bytes data;
    REQUIRE(from_hex(e.get<std::string>(), data));
    out.push_back(kSha256Tree.leaf(data));
  }
  return out;
}

// The reference root of the first `size` leaves (size 0: the empty tree).
Hash32 reference_root(uint64_t size) {
  if (size == 0) return h32(reference()["empty_root"]);
  for (const json& r : reference()["roots"])
    if (r["size"].get<uint64_t>() == size) return h32(r["root"]);
  FAIL("no reference root for size " << size);
  return {};
}

template <class... T>
std::vector<Hash32> cat(T&&... parts) {
  std::vector<Hash32> out;
  (out.insert(out.end(), parts.begin(), parts.end()), ...);
  return out;
}

// Arbitrary hashes the corruption probes substitute, as in transparency-dev/merkle's verify_test.go.
const Hash32& some_hash() {
  static const Hash32 h = [] {
    Hash32 v;
    Hash32::from_hex("abacaba000000000000000000000000000000000000000000060061e00123456", v);
    return v;
  }();
  return h;
}

}  // namespace

TEST_CASE("RFC 6962 SHA-256 leaf hashes and the empty root", "[merkle][rfc6962]") {
  for (const json& v : reference()["leaf_hashes"]) {
    Bytes data;
    REQUIRE(from_hex(v["data"].get<std::string>(), data));
    INFO("leaf data " << v["data"]);
    CHECK(kSha256Tree.leaf(data) == h32(v["hash"]));
  }
  Hash32 empty = h32(reference()["empty_root"]);
  CHECK(kSha256Tree.empty() == empty);
  MerkleTree t(kSha256Tree, nullptr, 0, 1, 1u);
  CHECK(t.root() == empty);
}

TEST_CASE("RFC 6962 SHA-256 roots for every size of the reference tree", "[merkle][rfc6962]") {
  auto leaves = leaf_hashes();
  REQUIRE(leaves.size() == 8);
  REQUIRE(reference()["roots"].size() == 8);
  for (const json& r : reference()["roots"]) {
    uint64_t n = r["size"];
    Hash32 want = h32(r["root"]);
    INFO("size=" << n);
    // Small and large cache levels take different paths through range_hash.
    for (unsigned level : {1u, 2u, 8u}) {
      MerkleTree t(kSha256Tree, leaves.data(), n, level, 1u);
      CHECK(t.root() == want);
    }
    CHECK(merkle_root(kSha256Tree, std::vector<Hash32>(leaves.begin(), leaves.begin() + n)) == want);
  }
}

TEST_CASE("RFC 6962 SHA-256 subtree hashes of the 8-leaf tree", "[merkle][rfc6962]") {
  auto leaves = leaf_hashes();
  MerkleTree t(kSha256Tree, leaves.data(), leaves.size(), 1, 1u);
  const json& levels = reference()["node_hashes"];
  REQUIRE(levels.size() == 4);
  for (uint64_t j = 0; j < levels.size(); j++)
    for (uint64_t i = 0; i < levels[j].size(); i++) {
      INFO("level=" << j << " index=" << i);
      CHECK(t.range_hash({i << j, (i + 1) << j}) == h32(levels[j][i]));
    }
}

TEST_CASE("RFC 6962 SHA-256 inclusion proofs", "[merkle][rfc6962]") {
  auto leaves = leaf_hashes();
  REQUIRE(reference()["inclusion_proofs"].size() >= 6);
  for (const json& v : reference()["inclusion_proofs"]) {
    uint64_t index = v["index"], size = v["size"];
    auto want = hashes(v["path"]);
    Hash32 root = reference_root(size);
    const Hash32& leaf = leaves[index];
    INFO("index=" << index << " size=" << size);

    MerkleTree t(kSha256Tree, leaves.data(), size, 1, 1u);
    auto got = t.hashes(inclusion_ranges(index, size));
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < want.size(); k++) {
      INFO("path[" << k << "]");
      CHECK(got[k].hex() == want[k].hex());
    }
    REQUIRE(verify_inclusion(kSha256Tree, index, size, leaf, want, root) == ProofError::kOk);

    // The probes of the reference verifier tests (CT's VerifierCheck,
    // transparency-dev/merkle's corruptInclusionProof): each must be refused.
    auto refused = [&](const char* what, uint64_t i, uint64_t n, const Hash32& l,
                       const std::vector<Hash32>& p, const Hash32& r) {
      INFO(what);
      CHECK(verify_inclusion(kSha256Tree, i, n, l, p, r) != ProofError::kOk);
    };
    refused("index - 1", index - 1, size, leaf, want, root);  // wraps at 0: out of range
    refused("index + 1", index + 1, size, leaf, want, root);
    refused("index ^ 2", index ^ 2, size, leaf, want, root);
    refused("size * 2", index, size * 2, leaf, want, root);
    refused("size / 2", index, size / 2, leaf, want, root);
    refused("wrong leaf", index, size, kSha256Tree.leaf(ByteView(std::string_view("WrongLeaf"))), want, root);
    refused("empty root", index, size, leaf, want, kSha256Tree.empty());
    refused("some root", index, size, leaf, want, some_hash());
    refused("trailing zero hash", index, size, leaf, cat(want, std::vector<Hash32>{Hash32{}}), root);
    refused("trailing root", index, size, leaf, cat(want, std::vector<Hash32>{root}), root);
    refused("preceding zero hash", index, size, leaf, cat(std::vector<Hash32>{Hash32{}}, want), root);
    refused("preceding root", index, size, leaf, cat(std::vector<Hash32>{root}, want), root);
    for (size_t k = 0; k < want.size(); k++) {
      auto bad = want;
      bad[k].b[0] ^= 8;
      refused("flipped bit 3 of one hash", index, size, leaf, bad, root);
    }
    if (!want.empty()) {
      refused("removed last hash", index, size, leaf, std::vector<Hash32>(want.begin(), want.end() - 1), root);
    }
    if (want.size() > 1) {
      auto bad = want;
      bad.insert(bad.begin() + 1, some_hash());
      refused("inserted hash", index, size, leaf, bad, root);
    }
  }
}

TEST_CASE("RFC 6962 SHA-256 consistency proofs", "[merkle][rfc6962]") {
  auto leaves = leaf_hashes();
  REQUIRE(reference()["consistency_proofs"].size() >= 4);
  for (const json& v : reference()["consistency_proofs"]) {
    uint64_t m = v["old_size"], n = v["new_size"];
    auto want = hashes(v["proof"]);
    Hash32 r1 = reference_root(m), r2 = reference_root(n);
    INFO("old=" << m << " new=" << n);

    MerkleTree t(kSha256Tree, leaves.data(), n, 1, 1u);
    auto got = t.hashes(consistency_ranges(m, n));
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < want.size(); k++) {
      INFO("proof[" << k << "]");
      CHECK(got[k].hex() == want[k].hex());
    }
    REQUIRE(verify_consistency(kSha256Tree, m, n, r1, r2, want) == ProofError::kOk);
    // Like the reference tests, corrupt only proofs that carry hashes.
    if (want.empty()) continue;

    auto refused = [&](const char* what, uint64_t a, uint64_t b, const Hash32& ra, const Hash32& rb,
                       const std::vector<Hash32>& p) {
      INFO(what);
      CHECK(verify_consistency(kSha256Tree, a, b, ra, rb, p) != ProofError::kOk);
    };
    const std::vector<Hash32> zero{Hash32{}}, root1{r1}, root2{r2}, first{want[0]};
    refused("old size - 1", m - 1, n, r1, r2, want);
    refused("old size + 1", m + 1, n, r1, r2, want);
    refused("old size ^ 2", m ^ 2, n, r1, r2, want);
    refused("new size * 2", m, n * 2, r1, r2, want);
    refused("new size / 2", m, n / 2, r1, r2, want);
    refused("wrong old root", m, n, some_hash(), r2, want);
    refused("wrong new root", m, n, r1, some_hash(), want);
    refused("swapped roots", m, n, r2, r1, want);
    refused("empty proof", m, n, r1, r2, {});
    refused("trailing zero hash", m, n, r1, r2, cat(want, zero));
    refused("trailing old root", m, n, r1, r2, cat(want, root1));
    refused("trailing new root", m, n, r1, r2, cat(want, root2));
    refused("preceding zero hash", m, n, r1, r2, cat(zero, want));
    refused("preceding old root", m, n, r1, r2, cat(root1, want));
    refused("preceding new root", m, n, r1, r2, cat(root2, want));
    refused("preceding proof[0]", m, n, r1, r2, cat(first, want));
    refused("truncated proof", m, n, r1, r2, std::vector<Hash32>(want.begin(), want.end() - 1));
    for (size_t k = 0; k < want.size(); k++) {
      auto bad = want;
      bad[k].b[0] ^= 16;
      refused("flipped bit 4 of one hash", m, n, r1, r2, bad);
    }
  }
}
