// Merkle tree properties: roots against a naive RFC 6962 recursion, every
// inclusion and consistency proof up to 64 leaves, and each proof broken by a
// flipped bit, truncation, an extra hash, or swapped roots.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include "skip.h"

#include "wit/hash/blake2b_x4.h"
#include "wit/hash/hash.h"
#include "wit/hash/merkle.h"

using namespace wit;

namespace {

std::vector<Hash32> make_leaves(uint64_t n) {
  std::vector<Hash32> v;
  for (uint64_t i = 0; i < n; i++) {
    uint8_t b[8];
    put_le64(b, i);
    v.push_back(kBlake2bTree.leaf(ByteView(b, 8)));
  }
  return v;
}

// MTH straight from RFC 6962 section 2.1, as an independent reference.
Hash32 naive_root(const std::vector<Hash32>& l, uint64_t b, uint64_t e) {
  if (e == b) return kBlake2bTree.empty();
  if (e - b == 1) return l[b];
  uint64_t k = 1;
  while (k * 2 < e - b) k *= 2;
  return kBlake2bTree.node(naive_root(l, b, b + k), naive_root(l, b + k, e));
}

std::vector<std::vector<Hash32>> mutations(const std::vector<Hash32>& p) {
  std::vector<std::vector<Hash32>> out;
  for (size_t i = 0; i < p.size(); i++)
    for (int bit : {0, 7, 100, 255}) {
      auto q = p;
      q[i].b[bit / 8] ^= uint8_t(1 << (bit % 8));
      out.push_back(q);
    }
  if (!p.empty()) out.emplace_back(p.begin(), p.end() - 1);  // truncated
  auto extra = p;
  extra.push_back(Hash32{});
  out.push_back(extra);  // trailing garbage
  return out;
}

}  // namespace

TEST_CASE("split point is the largest power of two below n", "[merkle]") {
  CHECK(split_point(2) == 1);
  CHECK(split_point(3) == 2);
  CHECK(split_point(4) == 2);
  CHECK(split_point(5) == 4);
  CHECK(split_point(1025) == 1024);
  CHECK(split_point(uint64_t(1) << 63) == uint64_t(1) << 62);
  CHECK(split_point(~uint64_t(0)) == uint64_t(1) << 63);
}

TEST_CASE("roots match the RFC 6962 recursion at edge sizes", "[merkle]") {
  std::vector<uint64_t> sizes = {0, 1, 2, 3};
  for (uint64_t k = 2; (uint64_t(1) << k) <= 1024; k++) {
    uint64_t p = uint64_t(1) << k;
    sizes.insert(sizes.end(), {p - 1, p, p + 1});
  }
  auto leaves = make_leaves(1025);
  for (uint64_t n : sizes) {
    std::vector<Hash32> l(leaves.begin(), leaves.begin() + n);
    Hash32 want = naive_root(l, 0, n);
    for (unsigned level : {1u, 2u, 3u, 8u, 20u}) {
      MerkleTree t(kBlake2bTree, l.data(), n, level, 2u);
      INFO("n=" << n << " cache level=" << level);
      CHECK(t.root() == want);
    }
    CHECK(merkle_root(kBlake2bTree, l, 2) == want);
  }
}

TEST_CASE("every inclusion proof up to 64 leaves verifies and breaks when tampered", "[merkle]") {
  auto leaves = make_leaves(64);
  for (uint64_t n = 1; n <= 64; n++) {
    MerkleTree t(kBlake2bTree, leaves.data(), n, 2, 1u);
    Hash32 root = t.root();
    Hash32 other = naive_root(leaves, 0, n == 64 ? 63 : n + 1);
    for (uint64_t i = 0; i < n; i++) {
      auto path = t.hashes(inclusion_ranges(i, n));
      INFO("index=" << i << " size=" << n);
      REQUIRE(verify_inclusion(kBlake2bTree, i, n, leaves[i], path, root) == ProofError::kOk);
      for (auto& bad : mutations(path))
        CHECK(verify_inclusion(kBlake2bTree, i, n, leaves[i], bad, root) != ProofError::kOk);
      CHECK(verify_inclusion(kBlake2bTree, i, n, leaves[i], path, other) == ProofError::kRootMismatch);
      Hash32 flipped = leaves[i];
      flipped.b[31] ^= 1;
      CHECK(verify_inclusion(kBlake2bTree, i, n, flipped, path, root) != ProofError::kOk);
      if (n > 1) {
        uint64_t j = (i + 1) % n;
        CHECK(verify_inclusion(kBlake2bTree, j, n, leaves[i], path, root) != ProofError::kOk);
      }
      CHECK(verify_inclusion(kBlake2bTree, n, n, leaves[i], path, root) == ProofError::kIndexOutOfRange);
    }
  }
}

TEST_CASE("every consistency proof up to 64 leaves verifies and breaks when tampered", "[merkle]") {
  auto leaves = make_leaves(64);
  MerkleTree full(kBlake2bTree, leaves.data(), 64, 1, 1u);
  for (uint64_t n = 1; n <= 64; n++) {
    Hash32 new_root = full.range_hash({0, n});
    for (uint64_t m = 1; m <= n; m++) {
      Hash32 old_root = full.range_hash({0, m});
      MerkleTree t(kBlake2bTree, leaves.data(), n, 3, 1u);
      auto proof = t.hashes(consistency_ranges(m, n));
      INFO("old=" << m << " new=" << n);
      REQUIRE(verify_consistency(kBlake2bTree, m, n, old_root, new_root, proof) == ProofError::kOk);
      for (auto& bad : mutations(proof))
        CHECK(verify_consistency(kBlake2bTree, m, n, old_root, new_root, bad) != ProofError::kOk);
      if (m != n) {
        CHECK(verify_consistency(kBlake2bTree, m, n, new_root, old_root, proof) != ProofError::kOk);
        CHECK(verify_consistency(kBlake2bTree, n, m, old_root, new_root, proof) != ProofError::kOk);
      }
      if (m > 1) CHECK(verify_consistency(kBlake2bTree, m - 1, n, old_root, new_root, proof) != ProofError::kOk);
    }
  }
}

TEST_CASE("consistency from the empty tree", "[merkle]") {
  auto leaves = make_leaves(5);
  Hash32 root = naive_root(leaves, 0, 5);
  CHECK(verify_consistency(kBlake2bTree, 0, 5, kBlake2bTree.empty(), root, {}) == ProofError::kOk);
  CHECK(verify_consistency(kBlake2bTree, 0, 5, root, root, {}) == ProofError::kOldRootMismatch);
  CHECK(verify_consistency(kBlake2bTree, 0, 5, kBlake2bTree.empty(), root, {root}) ==
        ProofError::kWrongProofLength);
}

TEST_CASE("exclusion proofs in a sorted tree", "[merkle][exclusion]") {
  // Values spaced by two in the first byte, so every gap has a value inside it.
  for (uint64_t n : {0, 1, 2, 3, 7, 8, 9, 31, 64, 65}) {
    std::vector<Hash32> sorted(n);
    for (uint64_t i = 0; i < n; i++) {
      sorted[i].b[0] = uint8_t(2 * i + 2);
      sorted[i].b[31] = 0x55;
    }
    MerkleTree t(kBlake2bTree, sorted.data(), n, 2, 1u);
    Hash32 root = t.root();
    INFO("n=" << n);
    std::vector<Hash32> probes;
    Hash32 below;  // all zero: below the minimum
    probes.push_back(below);
    for (uint64_t i = 0; i < n; i++) {
      Hash32 v = sorted[i];
      v.b[0] = uint8_t(2 * i + 3);  // between i and i+1, or above the maximum
      probes.push_back(v);
    }
    for (const Hash32& v : probes) {
      ExclusionProof p;
      REQUIRE(prove_exclusion(t, v, p));
      REQUIRE(verify_exclusion(kBlake2bTree, p, root) == ProofError::kOk);
      // Tampering with either bracket, its path or the value breaks it.
      for (Bracket* b : {&p.left, &p.right}) {
        if ((b == &p.left && !p.has_left) || (b == &p.right && !p.has_right)) continue;
        for (auto& bad : mutations(b->path)) {
          ExclusionProof q = p;
          (b == &p.left ? q.left : q.right).path = bad;
          CHECK(verify_exclusion(kBlake2bTree, q, root) != ProofError::kOk);
        }
        ExclusionProof q = p;
        (b == &p.left ? q.left : q.right).leaf.b[5] ^= 4;
        CHECK(verify_exclusion(kBlake2bTree, q, root) != ProofError::kOk);
      }
      if (n > 0) {
        ExclusionProof q = p;
        q.has_left = q.has_right = false;
        CHECK(verify_exclusion(kBlake2bTree, q, root) == ProofError::kMissingBracket);
      }
    }
    // A present value is refused, and a proof for a neighbour cannot be reused for it.
    for (uint64_t i = 0; i < n; i++) {
      ExclusionProof p;
      CHECK_FALSE(prove_exclusion(t, sorted[i], p));
      REQUIRE(prove_exclusion(t, probes[i], p));
      p.value = sorted[i];
      CHECK(verify_exclusion(kBlake2bTree, p, root) == ProofError::kNotBracketed);
    }
    // Skipping a leaf: brackets two apart are not adjacent.
    if (n >= 3) {
      ExclusionProof p;
      REQUIRE(prove_exclusion(t, probes[1], p));  // between leaves 0 and 1
      p.right.index = 2;
      p.right.leaf = sorted[2];
      p.right.path = t.hashes(inclusion_ranges(2, n));
      CHECK(verify_exclusion(kBlake2bTree, p, root) == ProofError::kNotAdjacent);
    }
  }
}

TEST_CASE("four-lane leaf hashing equals the one-at-a-time leaf", "[merkle][blake2b]") {
  if (!leaves_x4_available()) {
    WIT_SKIP("no AVX2 on this CPU: the four-lane kernel is not used here");
  }
  for (size_t len : {0u, 1u, 2u, 126u, 127u, 128u, 129u, 255u, 256u, 257u, 1000u, 2047u, 2048u, 2049u, 4096u, 5000u}) {
    std::vector<std::vector<uint8_t>> msgs(4, std::vector<uint8_t>(len + 1));
    for (int j = 0; j < 4; j++)
      for (size_t i = 0; i < len; i++) msgs[size_t(j)][i] = uint8_t((i * 31 + size_t(j) * 7 + len) & 0xff);
    const uint8_t* ptrs[4] = {msgs[0].data(), msgs[1].data(), msgs[2].data(), msgs[3].data()};
    Hash32 got[4];
    leaves_x4(ptrs, len, got);
    for (int j = 0; j < 4; j++) {
      INFO("len=" << len << " lane=" << j);
      CHECK(got[j] == kBlake2bTree.leaf(ByteView(msgs[size_t(j)].data(), len)));
    }
  }
}

TEST_CASE("four-lane hashing of unequal lengths and of tree nodes equals one at a time", "[merkle][blake2b]") {
  if (!leaves_x4_available()) {
    WIT_SKIP("no AVX2 on this CPU: the four-lane kernel is not used here");
  }
  // Lengths that fill the same number of blocks but differ: every lane's own
  // byte counter must go into its compression.
  const std::vector<std::vector<size_t>> groups = {{0, 1, 50, 127}, {128, 200, 254, 255}, {256, 300, 381, 382},
                                                   {1000, 1001, 1020, 1023}};
  for (const auto& lens : groups) {
    std::vector<std::vector<uint8_t>> msgs(4);
    for (int j = 0; j < 4; j++) {
      REQUIRE(x4_blocks(lens[size_t(j)]) == x4_blocks(lens[0]));
      msgs[size_t(j)].resize(lens[size_t(j)] + 1);
      for (size_t i = 0; i < lens[size_t(j)]; i++) msgs[size_t(j)][i] = uint8_t((i * 13 + size_t(j) * 101) & 0xff);
    }
    const uint8_t* ptrs[4] = {msgs[0].data(), msgs[1].data(), msgs[2].data(), msgs[3].data()};
    const size_t l[4] = {lens[0], lens[1], lens[2], lens[3]};
    Hash32 got[4];
    leaves_x4(ptrs, l, got);
    for (int j = 0; j < 4; j++) {
      INFO("len=" << lens[size_t(j)] << " lane=" << j);
      CHECK(got[j] == kBlake2bTree.leaf(ByteView(msgs[size_t(j)].data(), lens[size_t(j)])));
    }
  }
  Hash32 a[4], b[4], got[4];
  for (int j = 0; j < 4; j++) {
    a[j] = kBlake2bTree.leaf(ByteView(std::string(size_t(j) + 1, 'a')));
    b[j] = kBlake2bTree.leaf(ByteView(std::string(size_t(j) + 1, 'b')));
  }
  const Hash32* l[4] = {&a[0], &a[1], &a[2], &a[3]};
  const Hash32* r[4] = {&b[0], &b[1], &b[2], &b[3]};
  nodes_x4(l, r, got);
  for (int j = 0; j < 4; j++) CHECK(got[j] == kBlake2bTree.node(a[j], b[j]));
}

TEST_CASE("lane hashing (16, 8, 4 or 1 at a time) equals one at a time, at the edges of a mapping", "[merkle][blake2b]") {
  // Records placed against inaccessible pages on both sides: the lane
  // kernels (masked loads with AVX-512) must neither read nor fault outside a
  // record, and every lane count and block count must hash exactly.
  const size_t pg = size_t(sysconf(_SC_PAGESIZE));
  uint8_t* m = static_cast<uint8_t*>(mmap(nullptr, pg * 6, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(m != MAP_FAILED);
  REQUIRE(mprotect(m, pg, PROT_NONE) == 0);
  REQUIRE(mprotect(m + 5 * pg, pg, PROT_NONE) == 0);
  uint8_t* area = m + pg;
  const size_t size = 4 * pg;
  uint64_t x = 88172645463325252ULL;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (size_t i = 0; i < size; i++) area[i] = uint8_t(next());
  INFO("hash_lanes() = " << hash_lanes());
  int bad = 0;
  for (int it = 0; it < 3000; it++) {
    const size_t count = 1 + next() % 16;
    const uint64_t blocks = 1 + next() % 6;
    const uint8_t* data[16];
    size_t len[16];
    Hash32 out[16];
    Hash32* outp[16];
    for (size_t j = 0; j < count; j++) {
      const size_t lo = blocks == 1 ? 0 : 128 * (blocks - 1), hi = 128 * blocks - 1;
      len[j] = lo + next() % (hi - lo + 1);
      REQUIRE(x4_blocks(len[j]) == blocks);
      const uint64_t where = next() % 3;  // against the front guard, the back guard, or anywhere
      const size_t off = where == 0 ? 0 : where == 1 ? size - len[j] : next() % (size - len[j] + 1);
      data[j] = area + off;
      outp[j] = &out[j];
    }
    leaves_lanes(data, len, count, outp);
    for (size_t j = 0; j < count; j++) bad += out[j] != kBlake2bTree.leaf(ByteView(data[j], len[j]));
  }
  CHECK(bad == 0);
  // Equal-length records at a stride, as token windows and source pieces are hashed.
  for (size_t count : {1u, 3u, 4u, 5u, 8u, 9u, 16u, 17u, 33u}) {
    const size_t len = 100 + count;
    std::vector<Hash32> got(count);
    leaves_lanes(area + size - count * len, len, len, count, got.data());
    for (size_t j = 0; j < count; j++)
      CHECK(got[j] == kBlake2bTree.leaf(ByteView(area + size - count * len + j * len, len)));
  }
  // Tree levels: adjacent pairs, against both guards, in place too.
  for (uint64_t pairs : {1u, 3u, 4u, 7u, 8u, 9u, 15u, 16u, 17u, 40u}) {
    for (int front = 0; front < 2; front++) {
      const Hash32* in = reinterpret_cast<const Hash32*>(front ? area : area + size - 64 * pairs);
      std::vector<Hash32> want(pairs), got(pairs);
      for (uint64_t k = 0; k < pairs; k++) want[k] = kBlake2bTree.node(in[2 * k], in[2 * k + 1]);
      node_pairs(in, pairs, got.data());
      CHECK(got == want);
      std::vector<Hash32> inplace(in, in + 2 * pairs);
      node_pairs(inplace.data(), pairs, inplace.data());
      CHECK(std::vector<Hash32>(inplace.begin(), inplace.begin() + long(pairs)) == want);
    }
  }
  munmap(m, pg * 6);
}
