// Certified evaluation without the model: the score leaf (against its
// definition in docs/eval.md), commit_scores / check_scores round trip and
// tampering, the spot-check seed and indices (determinism, uniformity of
// coverage), and the documents' parsers, which refuse edits and unknown fields.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "wit/base/error.h"
#include "wit/eval/eval.h"
#include "wit/hash/hash.h"
#include "wit/hash/merkle.h"
#include "wit/hash/rng.h"
#include "wit/hash/tags.h"

using namespace wit;
using json = nlohmann::json;

namespace {

Hash32 hash_of(uint64_t i) {
  uint8_t b[8];
  put_le64(b, i);
  return hash_tagged("test", ByteView(b, 8));
}

// n examples with made-up but valid scores.
EvalScores scores_of(size_t n) {
  EvalScores s;
  for (size_t i = 0; i < n; i++) {
    s.record_leaves.push_back(hash_of(i));
    s.scores.push_back({1.0 + 0.37 * double(i % 7) + 1e-3 * double(i), double(i % 5) / 4.0});
  }
  return s;
}

struct Fixture {
  EvalScores s;
  EvalCommitment e;
  explicit Fixture(size_t n) : s(scores_of(n)) {
    e = commit_scores(hash_of(100), 24, hash_of(101), merkle_root(kBlake2bTree, s.record_leaves), s);
  }
};

Bytes nonce_of(uint64_t i) {
  Bytes b(32, 0);
  put_le64(b.data(), i);
  return b;
}

// A report whose re-evaluation gives back the claimed scores, except at `wrong`.
EvalCheckReport report_of(const Fixture& f, uint64_t nonce, uint64_t k, std::set<uint64_t> wrong = {}) {
  return make_eval_check_report(f.e, f.s, ByteView(nonce_of(nonce)), k, 0.1, [&](uint64_t i) {
    Score sc = f.s.scores[i];
    if (wrong.count(i)) sc.loss += 0.5;
    return std::make_pair(f.s.record_leaves[i], sc);
  });
}

bool parse_refused(const json& j) {
  try {
    EvalCheckReport::from_json(j, "test");
    return false;
  } catch (const Error&) {
    return true;
  }
}

}  // namespace

TEST_CASE("eval: score leaf is the documented RFC 6962 leaf") {
  const Hash32 rec = hash_of(7);
  const Score s{2.5, 0.25};
  Bytes data;
  data.push_back(0x00);
  append_le64(data, tags::kEvalScoreLeaf.size());
  data.insert(data.end(), tags::kEvalScoreLeaf.begin(), tags::kEvalScoreLeaf.end());
  for (uint8_t c : rec.b) data.push_back(c);
  uint64_t u;
  std::memcpy(&u, &s.loss, 8);
  append_le64(data, u);
  std::memcpy(&u, &s.accuracy, 8);
  append_le64(data, u);
  CHECK(eval_score_leaf(rec, s) == blake2b_256(ByteView(data)));
  // Every field counts, down to the last bit of the loss.
  CHECK(eval_score_leaf(rec, {std::nextafter(2.5, 3.0), 0.25}) != eval_score_leaf(rec, s));
  CHECK(eval_score_leaf(rec, {2.5, 0.5}) != eval_score_leaf(rec, s));
  CHECK(eval_score_leaf(hash_of(8), s) != eval_score_leaf(rec, s));
}

TEST_CASE("eval: commit_scores and check_scores round trip through JSON") {
  for (size_t n : {1, 2, 3, 7, 8, 9, 100}) {
    Fixture f(n);
    CHECK(f.e.n == n);
    CHECK(f.s.eval_id == f.e.id());
    double l = 0;
    for (const auto& sc : f.s.scores) l += sc.loss;
    CHECK(f.e.loss == l / double(n));
    CHECK_FALSE(check_scores(f.e, f.s));
    const EvalCommitment e2 = EvalCommitment::from_json(json::parse(f.e.to_json().dump(2)), "test");
    const EvalScores s2 = EvalScores::from_json(json::parse(f.s.to_json().dump()), "test");
    CHECK(e2.id() == f.e.id());
    CHECK(e2.to_json() == f.e.to_json());
    CHECK_FALSE(check_scores(e2, s2));
  }
}

TEST_CASE("eval: check_scores catches one tampered score, aggregate or leaf") {
  Fixture f(24);
  SECTION("one loss lowered, commitment unchanged") {
    EvalScores s = f.s;
    s.scores[5].loss -= 0.25;
    REQUIRE(check_scores(f.e, s));
    CHECK(check_scores(f.e, s)->find("scores_root") != std::string::npos);
  }
  SECTION("one bit of one accuracy") {
    EvalScores s = f.s;
    s.scores[23].accuracy = std::nextafter(s.scores[23].accuracy, 2.0);
    CHECK(check_scores(f.e, s));
  }
  SECTION("the aggregate loss inflated") {
    EvalCommitment e = f.e;
    e.loss -= 1e-12;
    EvalScores s = f.s;
    s.eval_id = e.id();  // the scores even name the edited eval
    REQUIRE(check_scores(e, s));
    CHECK(check_scores(e, s)->find("mean of its scores") != std::string::npos);
  }
  SECTION("a record swapped for another") {
    EvalScores s = f.s;
    s.record_leaves[3] = hash_of(999);
    CHECK(check_scores(f.e, s));
  }
  SECTION("a score dropped") {
    EvalScores s = f.s;
    s.scores.pop_back();
    s.record_leaves.pop_back();
    CHECK(check_scores(f.e, s));
  }
  SECTION("a consistent recommit with one inflated score passes check_scores (only spot checks catch it)") {
    EvalScores s = f.s;
    s.scores[5].loss -= 0.25;
    const EvalCommitment e = commit_scores(f.e.run_id, f.e.step, f.e.checkpoint_root, f.e.eval_root, s);
    CHECK_FALSE(check_scores(e, s));
    CHECK(e.loss < f.e.loss);
  }
  SECTION("invalid scores are refused") {
    EvalScores s = f.s;
    s.scores[0].loss = NAN;
    CHECK_THROWS_AS(commit_scores(f.e.run_id, 1, f.e.checkpoint_root, f.e.eval_root, s), Error);
    EvalScores empty;
    CHECK_THROWS_AS(commit_scores(f.e.run_id, 1, f.e.checkpoint_root, f.e.eval_root, empty), Error);
  }
}

TEST_CASE("eval: spot-check seed and indices are deterministic and cover examples uniformly") {
  const Hash32 id = hash_of(42);
  const Bytes n1 = nonce_of(1);
  const Hash32 seed = eval_check_seed(id, ByteView(n1));
  // The documented definition.
  Blake2b h;
  h.update_field(ByteView(tags::kEvalCheck));
  h.update(ByteView(id.data(), 32));
  h.update_field(ByteView(n1));
  CHECK(seed == h.final());
  CHECK(eval_check_seed(id, ByteView(nonce_of(2))) != seed);
  CHECK(eval_check_seed(hash_of(43), ByteView(n1)) != seed);
  const Bytes shorter(n1.begin(), n1.end() - 1);
  CHECK(eval_check_seed(id, ByteView(shorter)) != seed);

  const auto idx = eval_check_indices(seed, 24, 6);
  CHECK(idx == eval_check_indices(seed, 24, 6));
  REQUIRE(idx.size() == 6);
  CHECK(std::is_sorted(idx.begin(), idx.end()));
  CHECK(std::set<uint64_t>(idx.begin(), idx.end()).size() == 6);
  for (uint64_t i : idx) CHECK(i < 24);
  CHECK(eval_check_indices(seed, 5, 5) == std::vector<uint64_t>{0, 1, 2, 3, 4});
  CHECK(eval_check_indices(seed, 1, 1) == std::vector<uint64_t>{0});
  CHECK_THROWS_AS(eval_check_indices(seed, 5, 6), Error);
  CHECK_THROWS_AS(eval_check_indices(seed, 5, 0), Error);

  // Each example is picked with probability k/n: 4000 seeds, n = 10, k = 3
  // (expected 1200 per example, sd ~29; allow 6 sd).
  std::map<uint64_t, int> hits;
  for (uint64_t t = 0; t < 4000; t++)
    for (uint64_t i : eval_check_indices(eval_check_seed(id, ByteView(nonce_of(t))), 10, 3)) hits[i]++;
  REQUIRE(hits.size() == 10);
  for (const auto& [i, c] : hits) CHECK(std::abs(c - 1200) < 175);
}

TEST_CASE("eval: score tolerance") {
  CHECK(score_matches({2.0, 0.5}, {2.0, 0.5}));
  CHECK(score_matches({2.0001, 0.5}, {2.0, 0.5}));
  CHECK_FALSE(score_matches({2.0003, 0.5}, {2.0, 0.5}));
  CHECK(score_matches({0.00005, 0.5}, {0.0, 0.5}));  // absolute below 1
  CHECK_FALSE(score_matches({2.0, 0.5 + 1e-5}, {2.0, 0.5}));
  CHECK_FALSE(score_matches({NAN, 0.5}, {2.0, 0.5}));
}

TEST_CASE("eval: spot-check reports: honest, caught, and consistent with the eval") {
  Fixture f(24);
  const EvalCheckReport r = report_of(f, 7, 6);
  CHECK(r.verdict == ReportVerdict::kCertified);
  CHECK(r.reason.empty());
  CHECK(r.guarantee.k == 6);
  CHECK(r.guarantee.steps == 24);
  CHECK_FALSE(check_eval_report(r, f.e, &f.s));
  CHECK_FALSE(check_eval_report(r, f.e, nullptr));
  const EvalCheckReport back = EvalCheckReport::from_json(json::parse(r.to_json().dump()), "test");
  CHECK(back.to_json() == r.to_json());
  CHECK_FALSE(check_eval_report(back, f.e, &f.s));

  // A re-evaluation that disagrees at a checked index rejects with that example.
  const uint64_t bad = r.indices[2];
  const EvalCheckReport caught = report_of(f, 7, 6, {bad});
  CHECK(caught.verdict == ReportVerdict::kRejected);
  CHECK(caught.items[2].failed == "loss");
  CHECK(caught.reason.find("example " + std::to_string(bad) + ":") == 0);
  CHECK_FALSE(check_eval_report(caught, f.e, &f.s));
  CHECK(EvalCheckReport::from_json(json::parse(caught.to_json().dump()), "test").verdict == ReportVerdict::kRejected);

  // A report of another eval, or with a forged opening, is inconsistent.
  Fixture g(25);
  CHECK(check_eval_report(r, g.e, nullptr));
  EvalCheckReport forged = r;
  forged.items[0].claimed.loss -= 0.5;
  forged.items[0].recomputed.loss -= 0.5;
  CHECK(check_eval_report(forged, f.e, nullptr));

  // Scores that do not reproduce the eval are refused before any check.
  EvalScores tampered = f.s;
  tampered.scores[0].loss -= 0.5;
  CHECK_THROWS_AS(make_eval_check_report(f.e, tampered, ByteView(nonce_of(1)), 3, 0.1,
                                         [&](uint64_t i) { return std::make_pair(f.s.record_leaves[i], f.s.scores[i]); }),
                  Error);
}

TEST_CASE("eval: the report parser refuses every edit and unknown field") {
  Fixture f(24);
  const json good = report_of(f, 3, 6).to_json();
  REQUIRE_FALSE(parse_refused(good));
  auto edited = [&](const std::function<void(json&)>& edit) {
    json j = good;
    edit(j);
    return parse_refused(j);
  };
  CHECK(edited([](json& j) { j["extra"] = 1; }));
  CHECK(edited([](json& j) { j["items"][0]["extra"] = 1; }));
  CHECK(edited([](json& j) { j["guarantee"]["extra"] = 1; }));
  CHECK(edited([](json& j) { j["items"][0]["claimed"]["extra"] = 1; }));
  CHECK(edited([](json& j) { j["version"] = 2; }));
  CHECK(edited([](json& j) { j["format"] = "wit.eval"; }));
  CHECK(edited([](json& j) { j.erase("seed"); }));
  CHECK(edited([](json& j) { j["nonce"] = "00"; }));
  CHECK(edited([](json& j) { j["indices"][0] = j["indices"][0].get<uint64_t>() == 0 ? 1 : 0; }));
  CHECK(edited([](json& j) { j["items"][1]["index"] = 23; }));
  CHECK(edited([](json& j) { j["k"] = 5; }));
  CHECK(edited([](json& j) { j["n"] = 25; }));
  CHECK(edited([](json& j) { j["verdict"] = "rejected"; }));
  {
    json j = good;
    j["verdict"] = "pending";  // a board status, not a report's verdict
    CHECK_THROWS_WITH(EvalCheckReport::from_json(j, "c.json"),
                      "invalid eval check: field 'verdict' is not \"certified\" or \"rejected\": c.json");
  }
  CHECK(edited([](json& j) { j["reason"] = "because"; }));
  CHECK(edited([](json& j) { j["items"][0]["pass"] = false; }));
  CHECK(edited([](json& j) { j["items"][0]["recomputed"]["loss"] = 9.0; }));
  CHECK(edited([](json& j) { j["items"][0]["failed"] = "loss"; }));
  CHECK(edited([](json& j) { j["guarantee"]["k"] = 7; }));
  CHECK(edited([](json& j) { j["guarantee"]["detection"] = 0.999; }));
  CHECK(edited([](json& j) { j["guarantee"]["statement"] = "trust me"; }));
  CHECK(edited([](json& j) { j["guarantee"]["fraction"] = 0.0; }));

  // eval.json and the scores file refuse unknown fields, wrong versions and bad values.
  const json e = f.e.to_json();
  auto eval_refused = [&](const std::function<void(json&)>& edit) {
    json j = e;
    edit(j);
    try {
      EvalCommitment::from_json(j, "test");
      return false;
    } catch (const Error&) {
      return true;
    }
  };
  CHECK_FALSE(eval_refused([](json&) {}));
  CHECK(eval_refused([](json& j) { j["extra"] = 1; }));
  CHECK(eval_refused([](json& j) { j["version"] = 2; }));
  CHECK(eval_refused([](json& j) { j["metric"] = "bleu"; }));
  CHECK(eval_refused([](json& j) { j["n"] = 0; }));
  CHECK(eval_refused([](json& j) { j["loss"] = -1.0; }));
  CHECK(eval_refused([](json& j) { j["accuracy"] = 1.5; }));
  CHECK(eval_refused([](json& j) { j["scores_root"] = "zz"; }));
  try {
    json j = e;
    j["version"] = 7;
    EvalCommitment::from_json(j, "e.json");
    FAIL("accepted version 7");
  } catch (const Error& x) {
    CHECK(std::string(x.what()) == "unsupported wit.eval version 7 (this wit reads 1): e.json");
  }
  const json s = f.s.to_json();
  auto scores_refused = [&](const std::function<void(json&)>& edit) {
    json j = s;
    edit(j);
    try {
      EvalScores::from_json(j, "test");
      return false;
    } catch (const Error&) {
      return true;
    }
  };
  CHECK_FALSE(scores_refused([](json&) {}));
  CHECK(scores_refused([](json& j) { j["extra"] = 1; }));
  CHECK(scores_refused([](json& j) { j["scores"][0].push_back(1); }));
  CHECK(scores_refused([](json& j) { j["scores"][0][1] = "1.0"; }));
  CHECK(scores_refused([](json& j) { j["scores"][0][2] = -0.5; }));
  CHECK(scores_refused([](json& j) { j["scores"] = json::array(); }));
  CHECK(scores_refused([](json& j) { j["format"] = "wit.eval"; }));
}

TEST_CASE("eval: the guarantee sentence speaks of scores") {
  const Guarantee g = make_guarantee(24, 6, 1.0 / 24);
  CHECK(g.bad_steps == 1);
  CHECK(std::fabs(g.detection - 0.25) < 1e-12);
  CHECK(eval_guarantee_words(g) ==
        "an eval that inflated at least 4.16667% of its 24 scores (1 example) is caught by these 6 spot checks with "
        "probability at least 25.00% (hypergeometric; 1-(1-f)^k = 22.53%)");
}

TEST_CASE("eval: causal cuts are the documented draws") {
  const Hash32 leaf = hash_of(7);
  const Bytes nonce = nonce_of(3);
  // A row of T = 12 tokens, positions 0..5 scored (a record of 5 tokens).
  const std::vector<int64_t> row{256, 104, 101, 108, 108, 111, 256, 256, 256, 256, 256, 256};
  const std::vector<CausalCut> cuts = causal_cuts(ByteView(nonce), leaf, row, 5, 257, 3);
  REQUIRE(cuts.size() == 3);
  // The definition: floyd_sample over [1, 6] on the stream keyed by
  // derive_key(kEvalCausal, {nonce, leaf}), then the replacement tokens.
  ChaChaStream st(derive_key(tags::kEvalCausal, {ByteView(nonce), ByteView(leaf.data(), 32)}));
  const std::vector<int64_t> picks = floyd_sample(st, 6, 3);
  for (size_t i = 0; i < cuts.size(); i++) {
    CHECK(cuts[i].cut == picks[i] - 1);
    REQUIRE(cuts[i].tokens.size() == size_t(12 - 1 - cuts[i].cut));
    for (size_t j = 0; j < cuts[i].tokens.size(); j++) {
      const int64_t orig = row[size_t(cuts[i].cut + 1) + j];
      CHECK(cuts[i].tokens[j] == (orig + 1 + int64_t(st.uniform(256))) % 257);
      CHECK(cuts[i].tokens[j] != orig);
      CHECK(cuts[i].tokens[j] >= 0);
      CHECK(cuts[i].tokens[j] < 257);
    }
  }
  // Deterministic, and another nonce or record draws otherwise.
  CHECK(causal_cuts(ByteView(nonce), leaf, row, 5, 257, 3)[0].tokens == cuts[0].tokens);
  bool differs = false;
  for (uint64_t n = 4; n < 12 && !differs; n++) {
    const auto other = causal_cuts(ByteView(nonce_of(n)), leaf, row, 5, 257, 3);
    differs = other[0].cut != cuts[0].cut || other[0].tokens != cuts[0].tokens;
  }
  CHECK(differs);
  // At most the eligible cuts: a full row's last position has nothing after it.
  CHECK(causal_cuts(ByteView(nonce), leaf, row, 5, 257, 64).size() == 6);
  const std::vector<int64_t> full(12, 65);
  const auto all = causal_cuts(ByteView(nonce), leaf, full, 11, 257, 64);
  REQUIRE(all.size() == 11);
  CHECK(all.back().cut == 10);
  CHECK(causal_cuts(ByteView(nonce), leaf, {256}, 0, 257, 1).empty());
  // Two tokens are the smallest vocabulary with another token to put.
  for (const CausalCut& c : causal_cuts(ByteView(nonce), leaf, {0, 1, 0, 1}, 3, 2, 2))
    for (size_t j = 0; j < c.tokens.size(); j++) CHECK(c.tokens[j] == 1 - std::vector<int64_t>{0, 1, 0, 1}[size_t(c.cut + 1) + j]);
  CHECK_THROWS_AS(causal_cuts(ByteView(nonce), leaf, row, 5, 1, 1), Error);
  CHECK_THROWS_AS(causal_cuts(ByteView(nonce), leaf, row, 5, 200, 1), Error);  // token 256 is not below 200
}

TEST_CASE("eval: the causal coverage is part of the eval document and its id") {
  Fixture f(6);
  EvalScores s = scores_of(6);
  CausalCoverage cov;
  cov.nonce = nonce_of(9);
  cov.records = 6;
  cov.cuts = 2;
  const EvalCommitment e = commit_scores(hash_of(100), 24, hash_of(101), f.e.eval_root, s, cov);
  REQUIRE(e.causal);
  CHECK(e.id() != f.e.id());
  CHECK(s.eval_id == e.id());
  CHECK_FALSE(check_scores(e, s));
  const json j = e.to_json();
  CHECK(j["causal"] == json{{"nonce", to_hex(ByteView(cov.nonce))}, {"records", 6}, {"cuts", 2}});
  const EvalCommitment back = EvalCommitment::from_json(j, "mem");
  REQUIRE(back.causal);
  CHECK(*back.causal == cov);
  CHECK(back.id() == e.id());
  // Without it (an eval written before the check), the document is as it was.
  CHECK_FALSE(f.e.to_json().contains("causal"));
  CHECK_FALSE(EvalCommitment::from_json(f.e.to_json(), "mem").causal);
  for (auto [key, value] : std::vector<std::pair<std::string, json>>{
           {"cuts", 0}, {"cuts", 65}, {"records", 7}, {"nonce", ""}, {"nonce", "xyz"}, {"extra", 1}}) {
    json bad = j;
    bad["causal"][key] = value;
    INFO(key << " = " << value.dump());
    CHECK_THROWS_AS(EvalCommitment::from_json(bad, "mem"), Error);
  }
  cov.cuts = 0;
  CHECK_THROWS_AS(commit_scores(hash_of(100), 24, hash_of(101), f.e.eval_root, s, cov), Error);
}
