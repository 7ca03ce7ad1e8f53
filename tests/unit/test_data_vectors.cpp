// Replays tests/vectors/data_proofs_blake2b.json (written by
// tests/vectors/gen_vectors.cpp): each set's records, committed by
// commit_dataset, give the set's commitment and tree; every proof document
// gets exactly its expected verdict against that commitment; and every valid
// document is the one wit-query would write from the set's index (of
// version 3, or of version 2 for the sets of that version).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/data/index.h"
#include "wit/proofs/proofs.h"

using namespace wit;
using nlohmann::json;

namespace {

const json& vectors() {
  static const json j = [] {
    std::ifstream in(WIT_TEST_DATA "/vectors/data_proofs_blake2b.json");
    REQUIRE(in.good());
    return json::parse(in);
  }();
  return j;
}

// A set's commitment as its JSON gives it (version, counts, root).
Commitment set_commitment(const json& s) {
  Commitment c;
  c.version = s["commitment"]["version"].get<int>();
  c.reader.kind = ReaderKind::kLines;
  c.records = s["commitment"]["records"].get<uint64_t>();
  c.n = s["commitment"]["n"].get<uint64_t>();
  REQUIRE(Hash32::from_hex(s["commitment"]["root"].get<std::string>(), c.root));
  return c;
}

struct Committed {
  CommitResult r;
  Bytes index_bytes;
};

// A version-2 commitment and index of the same files: the RFC 6962 tree
// over the same leaves (what an older wit-commit wrote; still read).
void to_version2(Committed& c) {
  CommitResult& r = c.r;
  const MerkleTree t(kBlake2bTree, r.tree.leaves(), r.tree.size(), kIndexCacheLevel, 1);
  r.commitment.version = kCommitVersionUnranged;
  r.commitment.root = t.root();
  r.levels.assign(t.levels(), t.levels() + MerkleTree::level_entries(r.tree.size(), kIndexCacheLevel));
  c.index_bytes = encode_index(r);
}

// The set's records as a lines file, committed as wit-commit would (of the
// set's version).
Committed commit_set(const json& set, size_t i) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("wit-vectors-" + std::to_string(getpid()) + "-" + std::to_string(i) + ".txt"))
                               .string();
  {
    std::ofstream f(path, std::ios::binary);
    for (const auto& r : set["records"]) f << r.get<std::string>() << "\n";
  }
  ReaderSpec spec;
  spec.kind = ReaderKind::kLines;
  Committed c{commit_dataset(spec, {path}, 1), {}};
  std::filesystem::remove(path);
  c.index_bytes = encode_index(c.r);
  if (set["commitment"]["version"] == kCommitVersionUnranged) to_version2(c);
  return c;
}

}  // namespace

TEST_CASE("data vectors: commit_dataset gives every set's commitment and tree", "[vectors][commit]") {
  const json& sets = vectors()["sets"];
  REQUIRE(sets.size() >= 11);
  for (size_t i = 0; i < sets.size(); i++) {
    const json& s = sets[i];
    INFO("set " << i << " (n = " << s["n"] << ")");
    const Committed c = commit_set(s, i);
    if (s.value("unsorted", false)) {
      // The trainer's own tree: the files' leaves, out of order; wit-commit
      // sorts them, so its root is another.
      std::vector<std::string> given = s["tree_leaves"], sorted;
      for (uint64_t k = 0; k < c.r.tree.size(); k++) sorted.push_back(c.r.tree.leaf(k).hex());
      CHECK(given != sorted);
      std::sort(given.begin(), given.end());
      CHECK(given == sorted);
      CHECK(c.r.commitment.root.hex() != s["commitment"]["root"]);
      continue;
    }
    CHECK(c.r.commitment.version == s["commitment"]["version"].get<int>());
    CHECK(c.r.commitment.root.hex() == s["commitment"]["root"]);
    CHECK(c.r.commitment.n == s["commitment"]["n"].get<uint64_t>());
    CHECK(c.r.commitment.records == s["commitment"]["records"].get<uint64_t>());
    REQUIRE(c.r.tree.size() == s["tree_leaves"].size());
    for (uint64_t k = 0; k < c.r.tree.size(); k++) CHECK(c.r.tree.leaf(k).hex() == s["tree_leaves"][k]);
  }
}

TEST_CASE("data vectors: every document gets its expected verdict", "[vectors][proofs]") {
  const json& v = vectors();
  std::vector<Commitment> commits;
  for (const json& s : v["sets"]) commits.push_back(set_commitment(s));
  size_t valid = 0, invalid = 0, errors = 0;
  for (const json& k : v["cases"]) {
    INFO(k["description"].get<std::string>());
    const Commitment& c = commits.at(k["set"].get<size_t>());
    std::string got;
    try {
      const Verdict vd = verify_document(k["document"], c, "vector");
      got = vd.ok ? "valid" : "invalid: " + vd.reason;
    } catch (const Error& e) {
      got = std::string("error: ") + e.what();
    }
    CHECK(got == k["expected"].get<std::string>());
    valid += got == "valid";
    invalid += got.rfind("invalid: ", 0) == 0;
    errors += got.rfind("error: ", 0) == 0;
  }
  // Broken vectors outnumber the valid ones, and both kinds exist.
  CHECK(valid >= 20);
  CHECK(invalid > valid);
  CHECK(errors >= 2);
}

TEST_CASE("data vectors: valid documents are the ones the index proves", "[vectors][proofs]") {
  const json& v = vectors();
  std::vector<Committed> committed;
  for (size_t i = 0; i < v["sets"].size(); i++) committed.push_back(commit_set(v["sets"][i], i));
  for (const json& k : v["cases"]) {
    if (k["expected"] != "valid") continue;
    INFO(k["description"].get<std::string>());
    const Committed& c = committed.at(k["set"].get<size_t>());
    const Index idx(ByteView(c.index_bytes), "vector index");
    CHECK(idx.version() == c.r.commitment.version);
    json doc = k["document"];
    std::optional<std::string> record;
    if (doc.contains("record")) record = doc["record"].get<std::string>();
    Hash32 leaf;
    REQUIRE(Hash32::from_hex(doc["leaf"].get<std::string>(), leaf));
    if (doc["type"] == "inclusion") {
      const auto pos = idx.find(leaf);
      REQUIRE(pos);
      CHECK(*pos == doc["index"].get<uint64_t>());
      CHECK(inclusion_document(c.r.commitment, prove_inclusion(idx, leaf, *pos), record) == doc);
    } else {
      REQUIRE_FALSE(idx.find(leaf));
      CHECK(exclusion_document(c.r.commitment, prove_exclusion(idx, leaf), record) == doc);
    }
  }
}

TEST_CASE("data vectors: a version 2 exclusion says what it rests on, and strict refuses it", "[vectors][proofs]") {
  const json& v = vectors();
  size_t seen = 0;
  for (const json& k : v["cases"]) {
    const json& s = v["sets"][k["set"].get<size_t>()];
    if (k["expected"] != "valid") continue;
    const Commitment c = set_commitment(s);
    INFO(k["description"].get<std::string>());
    const Verdict lax = verify_document(k["document"], c, "vector");
    const Verdict strict = verify_document(k["document"], c, "vector", true);
    REQUIRE(lax.ok);
    const bool rests_on_order = c.version == kCommitVersionUnranged && k["document"]["type"] == "exclusion";
    CHECK((lax.summary.find(kUnrangedExclusionCaveat) != std::string::npos) == rests_on_order);
    CHECK(strict.ok == !rests_on_order);
    if (rests_on_order) {
      CHECK(strict.reason.rfind("version 2 exclusion refused (--strict)", 0) == 0);
      seen++;
    }
  }
  CHECK(seen >= 1);
}

TEST_CASE("a path's fields parse alone: parse_proof_path reads what the proof bodies read", "[vectors][proofs]") {
  const json& v = vectors();
  size_t seen = 0;
  for (const json& k : v["cases"]) {
    if (k["expected"] != "valid" || k["document"]["type"] != "inclusion") continue;
    INFO(k["description"].get<std::string>());
    const json& doc = k["document"];
    const InclusionProof p = parse_inclusion_body(doc, "doc");
    const ProofPath pp = parse_proof_path(doc, "doc");
    CHECK(pp.path == p.path);
    REQUIRE(pp.ranges.size() == p.ranges.size());
    for (size_t i = 0; i < pp.ranges.size(); i++) {
      CHECK(pp.ranges[i].first == p.ranges[i].first);
      CHECK(pp.ranges[i].last == p.ranges[i].last);
    }
    // What path_fields writes reads back.
    CHECK(parse_proof_path(path_fields(p), "doc").path == p.path);
    // Without its path: required, the body's own words; optional (a batch
    // record), the empty path, its ranges still read and still checked.
    json nopath = doc;
    nopath.erase("path");
    std::string body_words, path_words;
    try {
      parse_inclusion_body(nopath, "doc");
    } catch (const Error& e) {
      body_words = e.what();
    }
    try {
      parse_proof_path(nopath, "doc");
    } catch (const Error& e) {
      path_words = e.what();
    }
    CHECK_FALSE(path_words.empty());
    CHECK(path_words == body_words);
    const ProofPath opt = parse_proof_path(nopath, "doc", PathField::kOptional);
    CHECK(opt.path.empty());
    CHECK(opt.ranges.size() == p.ranges.size());
    if (nopath.contains("ranges")) {
      nopath["ranges"] = json::array({json::array({"zz", "zz"})});
      CHECK_THROWS_WITH(parse_proof_path(nopath, "doc", PathField::kOptional),
                        Catch::Matchers::Contains("field 'ranges' holds a hash that is not 64 hex digits"));
    }
    seen++;
  }
  CHECK(seen > 0);
}
