// The audited data tree (docs/leaves.md): leaves files exported from an index,
// and the streaming audit against a commitment at every size around the chunk
// boundaries, with every way a file can be wrong or malformed.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/data/index.h"
#include "wit/hash/merkle.h"
#include "wit/data/tree_audit.h"

using namespace wit;
namespace fs = std::filesystem;

namespace {

struct TmpDir {
  fs::path p;
  TmpDir() : p(fs::temp_directory_path() / ("wit-leaves-" + std::to_string(getpid()) + "-" + std::to_string(rand()))) {
    fs::create_directories(p);
  }
  ~TmpDir() { fs::remove_all(p); }
  std::string operator/(const std::string& name) const { return (p / name).string(); }
};

// n distinct leaves, sorted.
std::vector<Hash32> sorted_leaves(uint64_t n) {
  std::vector<Hash32> v;
  for (uint64_t i = 0; i < n; i++) v.push_back(record_leaf(ByteView(std::string_view("record " + std::to_string(i)))));
  std::sort(v.begin(), v.end());
  return v;
}

Bytes leaves_file(const std::vector<Hash32>& leaves, const Hash32& root) {
  Bytes b = encode_leaves_header({leaves.size(), root});
  for (const Hash32& h : leaves) b.insert(b.end(), h.data(), h.data() + 32);
  return b;
}

// A reader over bytes that hands out at most `step` bytes a call (short reads).
ReadFn reader_of(const Bytes& b, size_t step = 1000) {
  auto pos = std::make_shared<size_t>(0);
  return [&b, pos, step](uint8_t* out, size_t len) {
    const size_t n = std::min({len, step, b.size() - *pos});
    std::memcpy(out, b.data() + *pos, n);
    *pos += n;
    return n;
  };
}

LeavesAudit audit(const Bytes& b, uint64_t n, const Hash32& root, uint64_t chunk = kLeavesChunk,
                  const TreeHash& th = kBlake2bTree) {
  return audit_leaves(reader_of(b), "mem", n, root, th, 2, chunk);
}

using Catch::Matchers::Contains;

}  // namespace

TEST_CASE("the streaming audit gives the root (RFC 6962 of version 2, ranged of version 3) at every size and chunk",
          "[leaves]") {
  for (const TreeHash* th : {&kBlake2bTree, &kDataTree})
  for (uint64_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100}) {
    const std::vector<Hash32> leaves = sorted_leaves(n);
    const Hash32 root = merkle_root(*th, leaves);
    const Bytes file = leaves_file(leaves, root);
    for (uint64_t chunk : {uint64_t(1), uint64_t(2), uint64_t(4), uint64_t(8), kLeavesChunk}) {
      INFO("n " << n << ", chunk " << chunk << ", ranged " << th->ranged());
      const LeavesAudit a = audit(file, n, root, chunk, *th);
      CHECK(a.ok);
      CHECK(a.reason.empty());
      CHECK(a.n == n);
      CHECK(a.root == root);
    }
  }
}

TEST_CASE("the audit refuses unsorted, repeated and foreign leaves", "[leaves]") {
  std::vector<Hash32> leaves = sorted_leaves(20);
  SECTION("two leaves swapped: the same multiset, not a sorted tree") {
    std::swap(leaves[11], leaves[12]);
    const Hash32 root = merkle_root(kBlake2bTree, leaves);  // the root of the unsorted tree itself
    for (uint64_t chunk : {uint64_t(4), kLeavesChunk}) {
      const LeavesAudit a = audit(leaves_file(leaves, root), 20, root, chunk);
      CHECK_FALSE(a.ok);
      CHECK(a.reason == "leaves 11 and 12 are out of order or equal: not a sorted distinct tree");
    }
  }
  SECTION("a repeated leaf") {
    leaves[5] = leaves[4];
    const Hash32 root = merkle_root(kBlake2bTree, leaves);
    const LeavesAudit a = audit(leaves_file(leaves, root), 20, root, 8);
    CHECK_FALSE(a.ok);
    CHECK_THAT(a.reason, Contains("leaves 4 and 5 are out of order or equal"));
  }
  SECTION("sorted leaves of another tree under a header that names this root") {
    const Hash32 root = merkle_root(kBlake2bTree, leaves);
    std::vector<Hash32> other = leaves;
    other[7].b[31] ^= 1;  // still sorted: the last byte breaks no order with these neighbours
    REQUIRE(std::is_sorted(other.begin(), other.end()));
    const LeavesAudit a = audit(leaves_file(other, root), 20, root, 4);
    CHECK_FALSE(a.ok);
    CHECK_THAT(a.reason, Contains("the leaves do not give the commitment's root"));
  }
  SECTION("a header of another tree, or of another size") {
    const Hash32 root = merkle_root(kBlake2bTree, leaves);
    Hash32 wrong = root;
    wrong.b[0] ^= 1;
    CHECK_THAT(audit(leaves_file(leaves, root), 20, wrong).reason, Contains("of another tree"));
    CHECK_THAT(audit(leaves_file(leaves, root), 21, root).reason, Contains("holds 20 leaves, the commitment has 21"));
  }
}

TEST_CASE("a malformed leaves file is a format error", "[leaves]") {
  const std::vector<Hash32> leaves = sorted_leaves(9);
  const Hash32 root = merkle_root(kBlake2bTree, leaves);
  const Bytes good = leaves_file(leaves, root);
  auto refused = [&](Bytes b, const std::string& what) {
    INFO(what);
    CHECK_THROWS_WITH(audit(b, 9, root, 4), Contains(what));
  };
  Bytes b = good;
  b[0] = 'X';
  refused(b, "not a wit leaves file (wrong magic)");
  refused(Bytes(good.begin(), good.begin() + 40), "leaves file is truncated (header needs 64 bytes, file has 40)");
  b = good;
  put_le32(b.data() + 8, 2);
  refused(b, "unsupported leaves file version 2 (this wit reads version 1)");
  b = good;
  b[20] ^= 1;  // n, under the checksum
  refused(b, "leaves file header is corrupt (checksum mismatch)");
  refused(Bytes(good.begin(), good.end() - 1), "leaves file is truncated (its header says 9 leaves, the file has 8)");
  b = good;
  b.push_back(0);
  refused(b, "leaves file has bytes after its 9 leaves");
  CHECK_THROWS_WITH(audit_leaves(reader_of(good), "mem", 9, root, kBlake2bTree, 1, 3), Contains("power of two"));
}

TEST_CASE("wit-commit leaves: an index's leaves audit against its commitment", "[leaves]") {
  TmpDir d;
  {
    std::ofstream f(d / "a.txt");
    for (int i = 0; i < 300; i++) f << "line " << (i * 7919) % 1000 << "\n";  // duplicates too
  }
  ReaderSpec spec;
  spec.kind = ReaderKind::kLines;
  const CommitResult r = commit_dataset(spec, {d / "a.txt"}, 2);
  write_index(d / "a.widx", r);
  const Index idx(d / "a.widx");
  write_leaves(idx, d / "a.wleaves");
  CHECK(fs::file_size(d / "a.wleaves") == kLeavesHeaderSize + 32 * r.commitment.n);
  const LeavesAudit a = audit_leaves_file(d / "a.wleaves", r.commitment, 1);
  CHECK(a.ok);
  CHECK(a.n == r.commitment.n);
  CHECK(a.root == r.commitment.root);
  Commitment other = r.commitment;
  other.root.b[3] ^= 1;
  CHECK_FALSE(audit_leaves_file(d / "a.wleaves", other, 1).ok);
  CHECK_THROWS_WITH(audit_leaves_file(d / "missing", r.commitment), Contains("cannot open"));
}
