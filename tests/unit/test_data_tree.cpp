// The one data tree: commitments over sorted distinct record leaves, the
// checks of files and indexes against a commitment, and the version gates.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "wit/commitment.h"
#include "wit/error.h"
#include "wit/hash.h"
#include "wit/index.h"
#include "wit/manifest.h"
#include "wit/merkle.h"
#include "wit/proofs.h"

using namespace wit;
namespace fs = std::filesystem;

namespace {

struct TmpDir {
  fs::path p;
  TmpDir() : p(fs::temp_directory_path() / ("wit-tree-" + std::to_string(getpid()) + "-" + std::to_string(rand()))) {
    fs::create_directories(p);
  }
  ~TmpDir() { fs::remove_all(p); }
  std::string file(const std::string& name, const std::string& content) const {
    std::ofstream f(p / name, std::ios::binary);
    f << content;
    return (p / name).string();
  }
};

ReaderSpec lines() {
  ReaderSpec s;
  s.kind = ReaderKind::kLines;
  return s;
}

using Catch::Matchers::Contains;

}  // namespace

TEST_CASE("the commitment's root is the tree over the sorted distinct record leaves", "[commit]") {
  TmpDir d;
  const std::string f = d.file("a.txt", "gamma\nalpha\nbeta\nalpha\ngamma\ndelta\n");
  const CommitResult r = commit_dataset(lines(), {f}, 2);
  CHECK(r.commitment.records == 6);
  CHECK(r.commitment.n == 4);
  std::vector<Hash32> want;
  for (const char* s : {"alpha", "beta", "delta", "gamma"}) want.push_back(record_leaf(ByteView(std::string_view(s))));
  std::sort(want.begin(), want.end());
  CHECK(r.commitment.root == merkle_root(kBlake2bTree, want));
  REQUIRE(r.tree.size() == 4);
  for (uint64_t i = 0; i < 4; i++) CHECK(r.tree.leaf(i) == want[i]);
  // First occurrences: "alpha" is record 1 (0-based), "gamma" record 0.
  CHECK(r.tree.first(*r.tree.find(record_leaf(ByteView(std::string_view("alpha"))))) == 1);
  CHECK(r.tree.first(*r.tree.find(record_leaf(ByteView(std::string_view("gamma"))))) == 0);
  // Order of the files changes nothing but provenance.
  const std::string g = d.file("b.txt", "delta\nbeta\nalpha\ngamma\n");
  const CommitResult r2 = commit_dataset(lines(), {g}, 1);
  CHECK(r2.commitment.root == r.commitment.root);
  CHECK(r2.commitment.records == 4);
  // The JSON round trip, and the plain statement of the counts.
  CHECK(Commitment::from_json(nlohmann::json::parse(r.commitment.dump()), "x").dump() == r.commitment.dump());
  CHECK(r.commitment.describe().find("6 in the files, 4 distinct") != std::string::npos);
  CHECK(r.commitment.describe().find("2 repeats: a record is one leaf") != std::string::npos);
  CHECK(r.commitment.place_of(5) == f + ", record 6");
}

TEST_CASE("sorting in parallel gives the same tree as one thread", "[commit]") {
  TmpDir d;
  std::string text;
  for (int i = 0; i < 200000; i++) text += "record " + std::to_string((i * 7919) % 150000) + "\n";
  const std::string f = d.file("big.txt", text);
  const CommitResult one = commit_dataset(lines(), {f}, 1);
  const CommitResult two = commit_dataset(lines(), {f}, 4);
  CHECK(one.commitment.dump() == two.commitment.dump());
  CHECK(encode_index(one) == encode_index(two));
  CHECK(one.commitment.n == 150000);
  for (uint64_t i = 1; i < one.tree.size(); i++) REQUIRE(one.tree.leaf(i - 1) < one.tree.leaf(i));
}

TEST_CASE("Dataset serves records by tree position and refuses a commitment that leaves records out", "[commit]") {
  TmpDir d;
  const std::string train = d.file("train.txt", "one\ntwo\nthree\nfour\ntwo\nfive\n");
  const CommitResult honest = commit_dataset(lines(), {train}, 1);
  const Dataset ds(honest.commitment, {train}, 1);
  REQUIRE(ds.size() == 5);
  for (uint64_t i = 0; i < ds.size(); i++) CHECK(record_leaf(ByteView(ds.record(i))) == ds.leaf(i));

  // The attack: commit the data without some records, then claim the full
  // file's sources, so the tree leaves out records the file holds.
  const std::string without = d.file("without.txt", "one\ntwo\nfour\ntwo\nfive\n");
  Commitment forged = commit_dataset(lines(), {without}, 1).commitment;
  forged.sources = honest.commitment.sources;
  forged.records = honest.commitment.records;
  forged.inputs = honest.commitment.inputs;
  CHECK_THROWS_WITH(Dataset(forged, {train}, 1),
                    Contains("do not match the commitment") &&
                        Contains("5 distinct records, the commitment's tree has 4") && Contains("train.txt"));

  // Another file: named by its digest.
  const std::string other = d.file("other.txt", "one\ntwo\nthree\nfour\ntwo\nsix\n");
  CHECK_THROWS_WITH(Dataset(honest.commitment, {other}, 1), Contains("not the committed file") && Contains("other.txt"));
  // Fewer files than sources.
  CHECK_THROWS_WITH(Dataset(honest.commitment, {}, 1), Contains("0 source(s), the commitment has 1"));
  // The same records in other files, in another order: the same tree, so the
  // same positions (only where a record first occurs differs).
  const std::string a = d.file("part_a.txt", "five\nfour\n"), b = d.file("part_b.txt", "two\none\nthree\ntwo\n");
  const Dataset split(honest.commitment, {a, b}, 1);
  for (uint64_t i = 0; i < ds.size(); i++) CHECK(split.record(i) == ds.record(i));
}

TEST_CASE("the index holds the one tree and its audit refuses an unsorted one", "[index]") {
  TmpDir d;
  const std::string f = d.file("a.txt", "b\na\nc\nd\ne\na\n");
  const CommitResult r = commit_dataset(lines(), {f}, 1);
  const Bytes b = encode_index(r);
  const Index idx(ByteView(b), "a.widx");
  CHECK(idx.n() == 5);
  CHECK(idx.records() == 6);
  CHECK(idx.root() == r.commitment.root);
  idx.check_matches(r.commitment, "a.commit.json");
  idx.audit(1);
  const auto pos = idx.find(record_leaf(ByteView(std::string_view("a"))));
  REQUIRE(pos);
  CHECK(idx.first_record(*pos) == 1);
  CHECK(verify_document(inclusion_document(r.commitment, prove_inclusion(idx, r.tree.leaf(*pos), *pos)),
                        r.commitment, "x")
            .ok);

  // An index whose tree is not sorted (two leaves swapped, levels, root and
  // checksums made consistent): it loads, and the audit refuses it.
  std::vector<Hash32> leaves(r.tree.leaves(), r.tree.leaves() + r.tree.size());
  std::swap(leaves[1], leaves[3]);
  Bytes bad = b;
  std::memcpy(bad.data() + kIndexHeaderSize, leaves.data(), 32 * leaves.size());
  const Hash32 root = merkle_root(kBlake2bTree, leaves);
  std::memcpy(bad.data() + 32, root.data(), 32);
  put_le64(bad.data() + 96, xxh3_64(ByteView(bad.data() + kIndexHeaderSize, bad.size() - kIndexHeaderSize)));
  put_le64(bad.data() + 104, xxh3_64(ByteView(bad.data(), 104)));
  const Index unsorted(ByteView(bad), "bad.widx");
  CHECK_THROWS_WITH(unsorted.audit(1), Contains("not the commitment's sorted tree"));
  // A commitment naming another root: the index does not belong to it.
  CHECK_THROWS_WITH(unsorted.check_matches(r.commitment, "a.commit.json"), Contains("does not belong"));

  // Leaves doctored under an honest header and cached levels (600 leaves, so
  // the tree's root comes from level 8 and still reproduces): the header
  // matches the commitment and the leaves are still sorted; the audit in
  // check_matches refuses them, as the trainer and wit-query rely on.
  std::string text;
  for (int i = 0; i < 600; i++) text += "line " + std::to_string(i) + "\n";
  const CommitResult big = commit_dataset(lines(), {d.file("big.txt", text)}, 1);
  Bytes doctored = encode_index(big);
  Hash32 x = big.tree.leaf(1);
  x.b[31] ^= 1;
  REQUIRE(big.tree.leaf(0) < x);
  REQUIRE(x < big.tree.leaf(2));
  std::memcpy(doctored.data() + kIndexHeaderSize + 32, x.data(), 32);
  put_le64(doctored.data() + 96,
           xxh3_64(ByteView(doctored.data() + kIndexHeaderSize, doctored.size() - kIndexHeaderSize)));
  put_le64(doctored.data() + 104, xxh3_64(ByteView(doctored.data(), 104)));
  const Index loaded(ByteView(doctored), "doctored.widx");
  CHECK_THROWS_WITH(loaded.check_matches(big.commitment, "big.commit.json"),
                    "index is corrupt (its leaves do not give its root): doctored.widx");
}

TEST_CASE("older commitments, indexes and manifests are refused with the version needed", "[versions]") {
  TmpDir d;
  const CommitResult r = commit_dataset(lines(), {d.file("a.txt", "x\ny\n")}, 1);
  nlohmann::json j = nlohmann::json::parse(r.commitment.dump());
  j["version"] = 1;
  CHECK_THROWS_WITH(Commitment::from_json(j, "c.json"),
        "unsupported commitment version 1 (this wit reads version 2): c.json");
  Bytes b = encode_index(r);
  put_le32(b.data() + 8, 1);
  CHECK_THROWS_WITH(Index(ByteView(b), "i.widx"), "unsupported index version 1 (this wit reads version 2): i.widx");
  Manifest m;
  m.data_root = r.commitment.root;
  m.data_n = r.commitment.n;
  m.batch_size = 1;
  nlohmann::json mj = m.to_json();
  CHECK(mj["version"] == 2);
  CHECK(mj["data"].size() == 3);  // root, n, reader
  mj["version"] = 1;
  CHECK_THROWS_WITH(Manifest::from_json(mj, "run.json"),
        "unsupported manifest version 1 (this wit reads version 2): run.json");
  // A v2 commitment whose sources do not add up to its record count.
  nlohmann::json k = nlohmann::json::parse(r.commitment.dump());
  k["records"] = uint64_t(3);
  CHECK_THROWS_WITH(Commitment::from_json(k, "c.json"), Contains("the sources hold 2 records"));
}
