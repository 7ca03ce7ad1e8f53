// The one data tree: commitments over sorted distinct record leaves, the
// checks of files and indexes against a commitment, and the version gates.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/data/index.h"
#include "wit/run/manifest.h"
#include "wit/hash/merkle.h"
#include "wit/proofs/proofs.h"

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
  CHECK(r.commitment.root == merkle_root(kDataTree, want));
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

TEST_CASE("the bounded Dataset checks by the spilling commit and serves the whole way's records", "[commit]") {
  TmpDir d;
  // 700 lines, 500 distinct: a budget of 1 byte spills a run every 16 records.
  std::string text;
  for (int i = 0; i < 700; i++) text += "line " + std::to_string(i % 500 * 7919 % 1000) + "\n";
  const size_t cut = text.find('\n', text.size() / 2) + 1;
  const std::string a = d.file("a.txt", text.substr(0, cut)), rest = text.substr(cut);
  const std::string b = d.file("b.txt", rest);
  const uint64_t in_b = uint64_t(std::count(rest.begin(), rest.end(), '\n'));
  const CommitResult honest = commit_dataset(lines(), {a, b}, 2);
  REQUIRE(honest.commitment.n == 500);
  const Bytes ib = encode_index(honest);
  const Index idx(ByteView(ib), "ab.widx");
  CommitLimits tiny;
  tiny.memory = 1;
  const Dataset whole(honest.commitment, {a, b}, 2);
  const Dataset bounded(honest.commitment, idx, {a, b}, 2, tiny);
  CHECK_FALSE(whole.bounded());
  REQUIRE(bounded.bounded());
  CHECK_THROWS_WITH(bounded.tree(), Contains("not held"));
  REQUIRE(bounded.size() == whole.size());
  for (uint64_t i = 0; i < whole.size(); i++) {
    REQUIRE(bounded.leaf(i) == whole.leaf(i));
    REQUIRE(bounded.first(i) == whole.first(i));
    REQUIRE(bounded.record(i) == whole.record(i));
  }
  // Under the default budget these small files take the whole way.
  CHECK_FALSE(Dataset(honest.commitment, idx, {a, b}, 2).bounded());

  // Every refusal in first_mismatch's words, whichever way checked: the
  // bounded way's message must be the whole way's, word for word.
  const auto same_words = [&](const Commitment& c, const std::vector<std::string>& paths, const std::string& part) {
    std::string whole_words = "no error";
    try {
      Dataset(c, paths, 1);
    } catch (const Error& e) {
      whole_words = e.what();
    }
    CHECK_THAT(whole_words, Contains("do not match the commitment") && Contains(part));
    CHECK_THROWS_WITH(Dataset(c, idx, paths, 1, tiny), whole_words);
  };
  const std::string other = d.file("other.txt", rest + "extra\n");
  same_words(honest.commitment, {a, other},
             "it holds " + std::to_string(in_b + 1) + " records, the commitment's source 2");
  const std::string changed = d.file("changed.txt", "X" + rest.substr(1));
  same_words(honest.commitment, {a, changed}, "not the committed file");
  same_words(honest.commitment, {a}, "1 source(s), the commitment has 2");
  // A commitment that leaves records out, claiming the files' sources.
  const std::string without = d.file("without.txt", "line 1\n");
  Commitment forged = commit_dataset(lines(), {without}, 1).commitment;
  forged.sources = honest.commitment.sources;
  forged.records = honest.commitment.records;
  forged.inputs = honest.commitment.inputs;
  CHECK_THROWS_WITH(Dataset(forged, {a, b}, 1), Contains("500 distinct records, the commitment's tree has 1"));
  // The bounded way refuses an index that is not its commitment's first.
  CHECK_THROWS_WITH(Dataset(forged, idx, {a, b}, 1, tiny), Contains("not the commitment's"));
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
  const Hash32 root = merkle_root(kDataTree, leaves);
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
        "unsupported commitment version 1 (this wit reads versions 2 and 3): c.json");
  Bytes b = encode_index(r);
  put_le32(b.data() + 8, 1);
  CHECK_THROWS_WITH(Index(ByteView(b), "i.widx"), "unsupported index version 1 (this wit reads versions 2 and 3): i.widx");
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

// Known answer for the jsonl reader: escapes (\uXXXX, a surrogate pair, \", \\,
// \/, \b, \f, \t), raw UTF-8, CRLF lines, a blank line, an empty record, a
// nested field of the same name, repeats, records of 1 to 7 BLAKE2b blocks
// (so every lane grouping of the leaf hashing runs), and a file of three
// source-digest pieces (2.8 MB, so the reader splits its lines in two
// pieces on two cores). The expected values were computed with Python's
// hashlib and json from docs/commitment.md's recipe, not by wit:
//
//   head = (b'{"text":"caf\\u00e9 \\ud83d\\ude00 tab\\there \\"q\\" back\\\\slash \\/ \\b\\f"}\n'
//           b'{"text":"na\xc3\xafve \xe2\x80\x93 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xe2\x9c\x93"}\r\n'
//           b'{"id":{"text":"nested"},"text":"outer \\u0041"}\n'
//           b'   \t  \n'
//           b'{"text":""}\n')
//   data = bytearray(head)
//   for i in range(6000):
//       j = i % 5800
//       body = (b"r%d " % j + b"caf\\u00e9 " * (j % 5) + b"na\xc3\xafve " * (j % 3) + b'q\\"t\\\\ ' * (j % 4)
//               + b"x" * ((j * 37) % 800))
//       data += b'{"id":%d,"text":"' % i + body + b'"}' + (b"\r\n" if i % 10 == 0 else b"\n")
//       if i % 997 == 0: data += b" \t\r\n"
//   records = [json.loads(l)["text"].encode("utf-8") for l in data.split(b"\n") if l.strip(b" \t\r")]
//   ... then root, n and digest exactly as in docs/commitment.md ("Checking it by hand").
TEST_CASE("jsonl with escapes and non-ASCII text: known root and source digest", "[commit]") {
  std::string data =
      "{\"text\":\"caf\\u00e9 \\ud83d\\ude00 tab\\there \\\"q\\\" back\\\\slash \\/ \\b\\f\"}\n"
      "{\"text\":\"na\xc3\xafve \xe2\x80\x93 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xe2\x9c\x93\"}\r\n"
      "{\"id\":{\"text\":\"nested\"},\"text\":\"outer \\u0041\"}\n"
      "   \t  \n"
      "{\"text\":\"\"}\n";
  auto rep = [](const std::string& s, int k) {
    std::string o;
    for (int i = 0; i < k; i++) o += s;
    return o;
  };
  for (int i = 0; i < 6000; i++) {
    const int j = i % 5800;
    const std::string body = "r" + std::to_string(j) + " " + rep("caf\\u00e9 ", j % 5) + rep("na\xc3\xafve ", j % 3) +
                             rep("q\\\"t\\\\ ", j % 4) + std::string(size_t((j * 37) % 800), 'x');
    data += "{\"id\":" + std::to_string(i) + ",\"text\":\"" + body + "\"}" + (i % 10 == 0 ? "\r\n" : "\n");
    if (i % 997 == 0) data += " \t\r\n";
  }
  REQUIRE(data.size() == 2784257);
  TmpDir d;
  const std::string f = d.file("kat.jsonl", data);
  ReaderSpec spec;
  spec.kind = ReaderKind::kJsonl;
  for (unsigned threads : {1u, 2u, 3u}) {
    INFO("threads " << threads);
    const CommitResult r = commit_dataset(spec, {f}, threads);
    CHECK(r.commitment.records == 6004);
    CHECK(r.commitment.n == 5804);
    CHECK(r.commitment.root.hex() == "670077806d470882fb6b0bc50aba06390fc527c3ba62c6dc984d6da2c337653d");
    REQUIRE(r.commitment.sources.size() == 1);
    CHECK(r.commitment.sources[0].digest.hex() == "206cc597e60699dc98cf7f1370c3ff9edf08a8a8dbebd4c23d4b1f3d2ba9da39");
  }
}

// Known answer for the tokens reader, which streams its files with pread and
// takes each file's digest from the leaves where they lie: two files (the
// second repeating five windows), a partial window at the end of the first
// (one more digest piece), more than 256 windows (the digest's perfect
// subtrees), and windows of 400,000 bytes (hashed one at a time, streamed in
// pieces). Expected values from Python's hashlib (docs/commitment.md's
// recipe; pieces = the windows' leaves, then the tail's):
//
//   def gen(n, seed): return bytes(((i * 2654435761 + seed) >> 13) & 0xff for i in range(n))
//   a = gen(600 * 32 + 6, 1 << 20); b = gen(300 * 32, 7 << 30) + gen(300 * 32, 7 << 30)[:32 * 5]
//   c = gen(2 * 400000 + 1000, 5 << 25)   # committed alone, --seq-len 200000
TEST_CASE("tokens: known root and source digests, streamed", "[commit]") {
  auto gen = [](size_t n, uint64_t seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; i++) s[i] = char(((uint64_t(i) * 2654435761ULL + seed) >> 13) & 0xff);
    return s;
  };
  TmpDir d;
  const std::string b0 = gen(300 * 32, uint64_t(7) << 30);
  const std::string a = d.file("a.bin", gen(600 * 32 + 6, uint64_t(1) << 20));
  const std::string b = d.file("b.bin", b0 + b0.substr(0, 32 * 5));
  ReaderSpec spec;
  spec.kind = ReaderKind::kTokens;
  spec.seq_len = 16;
  for (unsigned threads : {1u, 2u, 5u}) {
    INFO("threads " << threads);
    const CommitResult r = commit_dataset(spec, {a, b}, threads);
    CHECK(r.commitment.records == 905);
    CHECK(r.commitment.n == 900);
    CHECK(r.commitment.root.hex() == "2083dc588f959a15e2c41122fa245233d51a7f8e04c0405d31003218e36e8191");
    REQUIRE(r.commitment.sources.size() == 2);
    CHECK(r.commitment.sources[0].digest.hex() == "fcc9489239e7ed374dd952d614d626263b2b00f12b5671c816b11071a0174044");
    CHECK(r.commitment.sources[1].digest.hex() == "e9e83e4c3077fef46c1f782c7d2e82a59441df1e40ad25498e035459832e5367");
    // The digests of a check (no leaves at hand) are the same.
    const RecordFiles files = RecordFiles::open(spec, {a, b});
    const auto again = source_digests(spec, files, threads);
    REQUIRE(again.size() == 2);
    CHECK(again[0].digest == r.commitment.sources[0].digest);
    CHECK(again[1].digest == r.commitment.sources[1].digest);
    // Training reads records by tree position (pread, no mapping): each is
    // the window whose leaf sits there.
    const Dataset ds(r.commitment, {a, b}, threads);
    REQUIRE(ds.size() == 900);
    for (uint64_t i : {uint64_t(0), uint64_t(1), uint64_t(450), uint64_t(899)}) {
      const std::string rec = ds.record(i);
      CHECK(rec.size() == 32);
      CHECK(record_leaf(ByteView(rec)) == ds.leaf(i));
    }
  }
  const std::string c = d.file("c.bin", gen(2 * 400000 + 1000, uint64_t(5) << 25));
  spec.seq_len = 200000;
  const CommitResult big = commit_dataset(spec, {c}, 2);
  CHECK(big.commitment.records == 2);
  CHECK(big.commitment.root.hex() == "766888a0f27e9a7b6aa7c99876f0e29dc6778338810c0e24ac8041ad91e9b9d3");
  CHECK(big.commitment.sources.at(0).digest.hex() == "f8b4bd00b2bbc87ef403e2eeca942363f0c2c61c320b81ca69c6ab549f0efe61");
}

// uint32 ids: a window is 4 * seq_len bytes, so 8 uint32 ids hash the same 32
// bytes as 16 uint16 ids: the same leaves, root and source digests (the
// window is the digest's piece either way). Only the reader spec tells the
// two commitments apart, and it is what a run binds (its data section).
TEST_CASE("tokens: uint32 ids, windows of 4 * seq_len bytes, told apart by the reader spec", "[commit]") {
  std::string data(305 * 32, '\0');
  for (size_t i = 0; i < data.size(); i++) data[i] = char(((uint64_t(i) * 2654435761ULL) >> 13) & 0xff);
  TmpDir d;
  const std::string f = d.file("t.bin", data);
  ReaderSpec u16;
  u16.kind = ReaderKind::kTokens;
  u16.seq_len = 16;
  ReaderSpec u32 = u16;
  u32.seq_len = 8;
  u32.token_bytes = 4;
  const CommitResult a = commit_dataset(u16, {f}, 2), b = commit_dataset(u32, {f}, 2);
  CHECK(b.commitment.records == 305);
  CHECK(b.commitment.root == a.commitment.root);
  REQUIRE(b.commitment.sources.size() == 1);
  CHECK(b.commitment.sources[0].piece_size == 32);
  CHECK(b.commitment.sources[0].digest == a.commitment.sources[0].digest);
  CHECK(a.commitment.to_json()["reader"].dump() == R"({"kind":"tokens","seq_len":16})");
  CHECK(b.commitment.to_json()["reader"].dump() == R"({"kind":"tokens","seq_len":8,"token_bytes":4})");
  const Commitment back = Commitment::from_json(b.commitment.to_json(), "c.json");
  CHECK(back.reader.token_bytes == 4);
  // 2 bytes past a multiple of 4: refused as uint32 ids, fine as uint16 ones.
  const std::string g = d.file("g.bin", data + "ab");
  CHECK_THROWS_WITH(commit_dataset(u32, {g}, 2), Catch::Contains("is not a multiple of 4"));
  CHECK(commit_dataset(u16, {g}, 2).commitment.records == 305);
}

TEST_CASE("a streamed commit of text files equals the tree and digests of the opened files", "[commit]") {
  // Several MiB, so the files are cut into parts of whole 1 MiB pieces on
  // every thread count; records repeat across parts (first occurrences), some
  // have escapes, and the second file has no final newline.
  TmpDir t;
  std::string a, b;
  for (int i = 0; i < 60000; i++) {
    const std::string text = i % 7 == 0 ? "repeat " + std::to_string(i % 50) : "record " + std::to_string(i) +
                                                                                   std::string(size_t(i % 131), 'x');
    a += "{\"id\":" + std::to_string(i) + ",\"text\":\"" + text + (i % 11 == 0 ? "\\u00e9\\n" : "") + "\"}" +
         (i % 5 == 0 ? "\r\n" : "\n");
    if (i % 3 == 0) b += "{\"text\":\"" + text + "\"}\n";
  }
  b += "{\"text\":\"the end\"}";
  const std::string fa = t.file("a.jsonl", a), fb = t.file("b.jsonl", b);
  for (ReaderKind kind : {ReaderKind::kJsonl, ReaderKind::kLines}) {
    ReaderSpec spec;
    spec.kind = kind;
    const RecordFiles files = RecordFiles::open(spec, {fa, fb});
    const DataTree want(files, 1);
    const auto want_sources = source_digests(spec, files, 1);
    const MerkleTree want_tree(kDataTree, want.leaves(), want.size(), kIndexCacheLevel, 1);
    for (unsigned threads : {1u, 2u, 3u}) {
      INFO("reader " << ReaderSpec::kind_name(kind) << ", threads " << threads);
      const CommitResult r = commit_dataset(spec, {fa, fb}, threads);
      CHECK(r.commitment.records == files.records);
      CHECK(r.commitment.n == want.size());
      CHECK(r.commitment.root == want_tree.root());
      REQUIRE(r.tree.size() == want.size());
      CHECK(std::equal(want.firsts().begin(), want.firsts().end(), r.tree.firsts().begin()));
      CHECK(std::memcmp(r.tree.leaves(), want.leaves(), 32 * want.size()) == 0);
      REQUIRE(r.commitment.sources.size() == 2);
      for (size_t k = 0; k < 2; k++) {
        CHECK(r.commitment.sources[k].digest == want_sources[k].digest);
        CHECK(r.commitment.sources[k].records == want_sources[k].records);
        CHECK(r.commitment.sources[k].size == want_sources[k].size);
        CHECK(r.commitment.sources[k].piece_size == want_sources[k].piece_size);
      }
    }
  }
}

TEST_CASE("the index written in two steps while committing is write_index's bytes; a writer's error is rethrown",
          "[index]") {
  TmpDir d;
  std::string text;
  for (int i = 0; i < 70000; i++) text += "record " + std::to_string(i % 50000) + "\n";  // > one 2^16-entry piece
  const std::string f = d.file("a.txt", text);
  for (unsigned threads : {1u, 2u}) {
    const std::string path = (d.p / ("a" + std::to_string(threads) + ".widx")).string();
    AtomicFile out(path, true);
    IndexWriter w(out);
    IndexSink sink;
    bool entries_first = false, finished = false;
    sink.entries = [&](const DataTree& t) {
      entries_first = !finished;
      w.entries(t);
    };
    sink.finish = [&](const CommitResult& c) {
      w.finish(c);
      finished = true;
    };
    const CommitResult r = commit_dataset(lines(), {f}, threads, {}, sink);
    CHECK(entries_first);
    CHECK(finished);
    out.commit();
    std::ifstream in(path, std::ios::binary);
    const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const Bytes want = encode_index(r);
    CHECK(r.tree.size() == 50000);
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), want.size()) == 0);
    Index(path).check_matches(r.commitment, "a.commit.json", threads);
  }
  // A sink that fails at either step: commit_dataset rethrows its error (and does not hang).
  IndexSink bad_entries;
  bad_entries.entries = [](const DataTree&) { throw Error("disk full (entries)"); };
  bad_entries.finish = [](const CommitResult&) { FAIL("finish after a failed entries step"); };
  CHECK_THROWS_WITH(commit_dataset(lines(), {f}, 2, {}, bad_entries), Contains("disk full (entries)"));
  IndexSink bad_finish;
  bad_finish.finish = [](const CommitResult&) { throw Error("disk full (finish)"); };
  CHECK_THROWS_WITH(commit_dataset(lines(), {f}, 2, {}, bad_finish), Contains("disk full (finish)"));
}

TEST_CASE("a commit's byte count never passes its total, also when the one pass gives up on a file", "[commit]") {
  // b.txt has a line of 34 MiB: the one pass streams a.txt, reads into b.txt
  // (reporting those bytes), cannot carry the line (over 16 MiB left at the
  // end of a 16 MiB chunk), and gives up; the
  // ordinary path then reads both files again. The progress count must not
  // count the bytes twice: each file counts twice (records, source digest).
  TmpDir t;
  std::string a;
  for (int i = 0; i < 20000; i++) a += "line " + std::to_string(i) + "\n";
  const std::string fa = t.file("a.txt", a), fb = t.file("b.txt", "short\n" + std::string(34u << 20, 'x') + "\nend\n");
  const uint64_t total = 2 * (fs::file_size(fa) + fs::file_size(fb));
  for (unsigned threads : {1u, 2u}) {
    std::atomic<uint64_t> seen{0};
    const CommitResult r = commit_dataset(lines(), {fa, fb}, threads, [&](uint64_t b) { seen += b; });
    CHECK(r.commitment.records == 20003);
    // The ordinary path counts a record's bytes without its newline.
    CHECK(seen.load() <= total);
    CHECK(seen.load() + 20003 >= total);
  }
  // A file the one pass takes whole: counted twice, once each.
  std::atomic<uint64_t> seen{0};
  commit_dataset(lines(), {fa}, 2, [&](uint64_t b) { seen += b; });
  CHECK(seen.load() == 2 * fs::file_size(fa));
}

namespace {
// Every position's record, leaf and first occurrence the same both ways.
void same_records(const Dataset& whole, const Dataset& other) {
  REQUIRE(other.size() == whole.size());
  for (uint64_t i = 0; i < whole.size(); i++) {
    REQUIRE(other.leaf(i) == whole.leaf(i));
    REQUIRE(other.first(i) == whole.first(i));
    REQUIRE(other.record(i) == whole.record(i));
  }
}
// Overwrites bytes of `path` at `offset` in place (the size stays).
void overwrite(const std::string& path, uint64_t offset, const std::string& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(std::streamoff(offset));
  f.write(bytes.data(), std::streamsize(bytes.size()));
}
}  // namespace

TEST_CASE("records on demand: each reader's records as the whole way's, at budgets forcing each way", "[commit][dataset]") {
  TmpDir d;
  struct Case {
    const char* name;
    ReaderSpec spec;
    std::string a, b;
  };
  ReaderSpec jsonl;
  jsonl.kind = ReaderKind::kJsonl;
  ReaderSpec fortune;
  fortune.kind = ReaderKind::kFortune;
  ReaderSpec tokens;
  tokens.kind = ReaderKind::kTokens;
  tokens.seq_len = 3;
  std::string ja, jb, fa, fb, ta, tb;
  for (int i = 0; i < 300; i++) {
    // Escaped values (copied at the check) among plain ones (read from the file).
    ja += i % 3 ? "{\"text\": \"doc " + std::to_string(i % 250) + "\"}\n"
                : "{\"id\": " + std::to_string(i) + ", \"text\": \"a\\nb \\u00e9 " + std::to_string(i % 250) + "\"}\n";
    fa += "fortune " + std::to_string(i % 200) + (i % 4 ? "\nsecond line\n%\n" : "\r\nwith CRLF\r\n%\r\n");
    for (int t = 0; t < 3; t++) ta += std::string(1, char(i % 211)) + char(t);
  }
  jb = "{\"text\": \"last\"}\n";
  fb = "last fortune\n";
  tb = std::string(6, 'z');
  std::vector<Case> cases = {{"lines", lines(), "one\ntwo\n\nthree\r\none\n", "four\nfive"},
                             {"jsonl", jsonl, ja, jb},
                             {"fortune", fortune, fa, fb},
                             {"tokens", tokens, ta, tb}};
  for (const Case& c : cases) {
    SECTION(c.name) {
      const std::string a = d.file(std::string(c.name) + ".a", c.a), b = d.file(std::string(c.name) + ".b", c.b);
      const CommitResult r = commit_dataset(c.spec, {a, b}, 2);
      const Bytes ib = encode_index(r);
      const Index idx(ByteView(ib), "x.widx");
      CommitLimits tiny;
      tiny.memory = 1;  // spills, and files past 1/8 of it: on demand
      const Dataset whole(r.commitment, {a, b}, 2);
      const Dataset held(r.commitment, idx, {a, b}, 2);  // the default budget: the whole way
      const Dataset demand(r.commitment, idx, {a, b}, 2, tiny);
      CHECK_FALSE(held.on_demand());
      REQUIRE(demand.on_demand());
      same_records(whole, held);
      same_records(whole, demand);
    }
  }
}

TEST_CASE("records on demand: a file changed after the check is refused at the read, never served", "[commit][dataset]") {
  TmpDir d;
  std::string text;
  for (int i = 0; i < 100; i++) text += "record number " + std::to_string(1000 + i) + "\n";
  const std::string a = d.file("a.txt", text);
  const CommitResult r = commit_dataset(lines(), {a}, 1);
  const Bytes ib = encode_index(r);
  const Index idx(ByteView(ib), "a.widx");
  CommitLimits tiny;
  tiny.memory = 1;
  const Dataset ds(r.commitment, idx, {a}, 1, tiny);
  REQUIRE(ds.on_demand());
  // The position of record 40 ("record number 1040", at byte 40 * 19).
  uint64_t pos = ds.size();
  for (uint64_t i = 0; i < ds.size(); i++)
    if (ds.first(i) == 40) pos = i;
  REQUIRE(pos < ds.size());
  CHECK(ds.record(pos) == "record number 1040");
  // The same length, another record: what a swapped batch would be.
  overwrite(a, 40 * 19, "record number 9999");
  CHECK_THROWS_WITH(ds.record(pos), Contains("is not the committed one: the file changed after it was checked") &&
                                        Contains("a.txt at byte 760"));
  // Records elsewhere in the file are still the committed ones.
  for (uint64_t i = 0; i < ds.size(); i++)
    if (ds.first(i) != 40) REQUIRE(ds.record(i) == "record number " + std::to_string(1000 + ds.first(i)));
  // A file cut short after the check: a clear error, not a short record.
  fs::resize_file(a, 10 * 19);
  CHECK_THROWS_WITH(ds.record(pos), Contains("changed after it was checked"));

  // A file changed between the check and the notes of the records' places
  // (here: before the Dataset, so the check refuses it in its words).
  const std::string b = d.file("b.txt", text);
  overwrite(b, 0, "X");
  CHECK_THROWS_WITH(Dataset(r.commitment, idx, {b}, 1, tiny), Contains("do not match the commitment"));
}

// Descriptors this process holds open now.
size_t open_descriptors() {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) n += e.path().filename() != "." ? 1 : 0;
  return n;
}

TEST_CASE("records on demand: a corpus of many files keeps a few open; a file replaced is refused by its leaves",
          "[commit][dataset]") {
  // 80 files, more than the Dataset keeps open (16): read in an order that
  // goes round the files, so each is closed and opened again.
  TmpDir d;
  std::vector<std::string> paths;
  for (int k = 0; k < 80; k++) {
    std::string text;
    for (int i = 0; i < 5; i++) text += "file " + std::to_string(100 + k) + " line " + std::to_string(i) + "\n";
    paths.push_back(d.file("f" + std::to_string(100 + k) + ".txt", text));
  }
  const CommitResult r = commit_dataset(lines(), paths, 1);
  const Bytes ib = encode_index(r);
  const Index idx(ByteView(ib), "many.widx");
  CommitLimits tiny;
  tiny.memory = 1;
  const size_t before = open_descriptors();
  const Dataset whole(r.commitment, paths, 1);
  const Dataset demand(r.commitment, idx, paths, 1, tiny);
  REQUIRE(demand.on_demand());
  // Records by file order of their first occurrence, round the files twice.
  std::vector<uint64_t> by_record(r.commitment.records, demand.size());
  for (uint64_t i = 0; i < demand.size(); i++) by_record[demand.first(i)] = i;
  size_t most = 0;
  for (int round = 0; round < 2; round++)
    for (uint64_t rec = 0; rec < by_record.size(); rec++) {
      REQUIRE(demand.record(by_record[rec]) == whole.record(by_record[rec]));
      most = std::max(most, open_descriptors());
    }
  // The whole way holds its files as memory, not descriptors; the bounded
  // way at most its 16 and its two scratch files.
  CHECK(most <= before + 16 + 2 + 1);
  same_records(whole, demand);

  // File 0 replaced (a new file renamed over it) by one with other bytes of
  // the same lengths: once its descriptor is closed and it is opened again,
  // its records are refused by their leaves, naming the file.
  const uint64_t pos = by_record[2];  // "file 100 line 2", at byte 2 * 16
  REQUIRE(demand.record(pos) == "file 100 line 2");
  std::string other;
  for (int i = 0; i < 5; i++) other += "file 999 line " + std::to_string(i) + "\n";
  const std::string repl = d.file("replacement.txt", other);
  fs::rename(repl, paths[0]);
  for (uint64_t rec = 5; rec < by_record.size(); rec++) demand.record(by_record[rec]);  // the others: file 0 closed
  CHECK_THROWS_WITH(demand.record(pos), Contains("is not the committed one: the file changed after it was checked") &&
                                            Contains("f100.txt at byte 32"));
}

TEST_CASE("records on demand: records in a line carried from one read to the next", "[commit][dataset]") {
  // Past 16 MiB the in-order pass reads more than once: the record cut by
  // the first read is copied at the check; the rest are read from the file.
  TmpDir d;
  std::string text;
  text.reserve(size_t(18) << 20);
  for (uint64_t i = 0; text.size() < (uint64_t(17) << 20); i++)
    text += "a somewhat long line of the corpus, number " + std::to_string(i * 7 % 300000) + "\n";
  const std::string a = d.file("big.txt", text);
  const CommitResult r = commit_dataset(lines(), {a}, 2);
  const Bytes ib = encode_index(r);
  const Index idx(ByteView(ib), "big.widx");
  CommitLimits small;
  small.memory = uint64_t(64) << 20;  // 17 MiB > 64 MiB / 8: on demand
  const Dataset whole(r.commitment, {a}, 2);
  const Dataset demand(r.commitment, idx, {a}, 2, small);
  REQUIRE(demand.on_demand());
  same_records(whole, demand);
}
