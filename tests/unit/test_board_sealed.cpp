// The board's sealed split without LibTorch: the gap test (a permutation test
// whose p-value is what its definition says, deterministic from its seed),
// Bonferroni and the smallest detectable gap; the salted sealed commitment
// (a record cannot be tested against it without its salt; an edited record
// or leaf is refused); the overlap test of near-copies; the model policy;
// the signed definition.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "wit/board/def.h"
#include "wit/board/gap.h"
#include "wit/board/overlap.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/hash/rng.h"
#include "wit/hash/sign.h"

using namespace wit;
using json = nlohmann::json;

namespace {

// n losses around `mean` from a deterministic stream (uniform, width 2).
std::vector<double> losses(uint64_t n, double mean, uint8_t key) {
  Hash32 k;
  k.data()[0] = key;
  ChaChaStream rng(k);
  std::vector<double> out;
  for (uint64_t i = 0; i < n; i++) out.push_back(mean - 1 + 2 * double(rng.next_u32()) / 4294967296.0);
  return out;
}

}  // namespace

TEST_CASE("board gap: the p-value of exchangeable scores is not small, of a real gap is the smallest", "[board][gap]") {
  Hash32 seed;
  seed.data()[1] = 7;
  // One pool, split at random: no gap.
  const GapTest same = gap_test(losses(60, 3.0, 1), losses(60, 3.0, 2), seed, 9999);
  CHECK(same.p > 0.05);
  CHECK(same.p == double(1 + same.at_least) / 10000.0);
  // The model does much better on what it could read.
  const GapTest gap = gap_test(losses(60, 2.0, 1), losses(60, 3.0, 2), seed, 9999);
  CHECK(gap.observed > 0.8);
  CHECK(gap.at_least == 0);
  CHECK(gap.p == 1.0 / 10000.0);
  // Better on the sealed side: one-sided, so nothing to flag.
  const GapTest other = gap_test(losses(60, 3.0, 1), losses(60, 2.0, 2), seed, 9999);
  CHECK(other.p > 0.99);
  // Deterministic from the seed; another seed gives another count.
  const GapTest again = gap_test(losses(60, 3.0, 1), losses(60, 3.0, 2), seed, 9999);
  CHECK(again.at_least == same.at_least);
  CHECK(gap_seed(Hash32{}, seed) != gap_seed(seed, Hash32{}));
  CHECK_THROWS_AS(gap_test({}, {1.0}, seed, 10), Error);
  // The document round-trips and refuses a p that is not its count's.
  CHECK(GapTest::from_json(same.to_json(), "t").to_json() == same.to_json());
  json bad = same.to_json();
  bad["p"] = 0.0001;
  CHECK_THROWS_AS(GapTest::from_json(bad, "t"), Error);
}

TEST_CASE("board gap: Bonferroni, the normal quantile and the smallest detectable gap", "[board][gap]") {
  CHECK(bonferroni(0.001, 5) == Approx(0.005));
  CHECK(bonferroni(0.5, 5) == 1.0);
  CHECK(normal_quantile(0.975) == Approx(1.959964).margin(1e-6));
  CHECK(normal_quantile(0.99) == Approx(2.326348).margin(1e-6));
  // Uniform width 2: standard deviation 1/sqrt(3); n = 100 a side.
  const double d = detectable_gap(losses(100, 3, 3), losses(100, 3, 4), 0.01);
  CHECK(d == Approx(2.326348 / std::sqrt(3.0) * std::sqrt(0.02)).epsilon(0.1));
}

TEST_CASE("board sealed: a salted commitment, checked leaf by leaf", "[board][sealed]") {
  const SealedSet s = SealedSet::seal("tiny", 0, {"alpha beta", "gamma", "alpha beta", "delta epsilon"});
  REQUIRE(s.records.size() == 3);  // duplicates dropped
  for (size_t i = 1; i < s.records.size(); i++) CHECK(s.records[i - 1].leaf < s.records[i].leaf);
  // The leaf is the salted hash: the plain record leaf does not find it.
  for (const auto& r : s.records) {
    CHECK(r.leaf == sealed_leaf(r.salt, ByteView(r.record)));
    CHECK(r.leaf != record_leaf(ByteView(r.record)));
  }
  // Two seals of the same records differ (fresh salts).
  CHECK(SealedSet::seal("tiny", 0, {"gamma"}).root() != SealedSet::seal("tiny", 0, {"gamma"}).root());
  const SealedSet back = SealedSet::from_json(json::parse(s.dump()), "t");
  CHECK(back.root() == s.root());
  CHECK(!back.problem("tiny", s.commit()));
  CHECK(back.problem("other", s.commit()));
  SealedCommit c = s.commit();
  c.epoch = 1;
  CHECK(back.problem("tiny", c));
  // An edited record no longer hashes to its leaf.
  json j = json::parse(s.dump());
  j["records"][0]["record_hex"] = "00";
  CHECK_THROWS_AS(SealedSet::from_json(j, "t"), Error);
}

TEST_CASE("board overlap: a near-copy is found, an unrelated record is not", "[board][overlap]") {
  const std::string bench =
      "The quick brown fox jumps over the lazy dog while the cat watches from the warm windowsill of the old house.";
  const OverlapIndex idx({"something else entirely, and long enough to have windows of its own.....", bench}, 32);
  // A few characters added every 40 bytes: most of the text is still in shared spans.
  std::string near;
  for (size_t i = 0; i < bench.size(); i += 40) near += bench.substr(i, 40) + "#!";
  const auto hit = idx.best(ByteView(near));
  REQUIRE(hit);
  CHECK(hit->record == 1);
  CHECK(hit->share() > 0.5);
  // A span shorter than the window shares nothing.
  CHECK(!idx.best(ByteView(bench.substr(0, 31) + "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz")));
  // A short benchmark record counts when it occurs whole.
  const OverlapIndex shorts({"tiny"}, 32);
  CHECK(shorts.best(ByteView(std::string("a tiny one")))->share() == 1.0);
  CHECK(!shorts.best(ByteView(std::string("a tin one"))));
}

TEST_CASE("board policy: models, overlap settings and the signed definition", "[board][sealed]") {
  BoardPolicy p;
  CHECK(!p.model_problem(""));
  CHECK(!p.model_problem(std::string(64, 'a')));
  parse_models_policy("builtin", p);
  CHECK(!p.model_problem(""));
  CHECK(p.model_problem(std::string(64, 'a')));
  parse_models_policy(std::string(64, 'a') + "," + std::string(64, 'b'), p);
  CHECK(p.model_problem(""));
  CHECK(!p.model_problem(std::string(64, 'b')));
  const Problem why = p.model_problem(std::string(64, 'c'));
  REQUIRE(why);
  CHECK(why->find(std::string(64, 'c')) != std::string::npos);
  CHECK_THROWS_AS(parse_models_policy("abc", p), Error);
  BoardPolicy o;
  o.overlap_action = "ignore";
  CHECK(o.overlap_problem());

  BoardDefinition d;
  d.name = "tiny";
  const SecretKey key = generate_key();
  d.key = key.pub();
  d.metric = "next-byte";
  d.policy = p;
  d.sealed = SealedSet::seal("tiny", 0, {"x", "y"}).commit();
  d.sign_with(key);
  const json j = json::parse(d.dump());
  const BoardDefinition back = BoardDefinition::from_json(j, "t");
  REQUIRE(back.sealed);
  CHECK(back.sealed->root == d.sealed->root);
  CHECK(back.policy.model_digests == p.model_digests);
  CHECK(back.to_json() == j);
  CHECK(verify_signature(d.key, board_signed_message(tags::kBoardDefinition, j), *back.signature));
  json edited = j;
  edited["sealed"]["n"] = 3;
  CHECK(!verify_signature(d.key, board_signed_message(tags::kBoardDefinition, edited), *back.signature));
}

TEST_CASE("board documents: every parser's error says \"invalid KIND: \", the shared readers' too", "[board][definition]") {
  // Each parser's own words and those of json_fields' readers (missing field,
  // not an array, unknown field) carry the one prefix.
  BoardDefinition d;
  d.name = "tiny";
  const SecretKey key = generate_key();
  d.key = key.pub();
  d.metric = "next-byte";
  d.sealed = SealedSet::seal("tiny", 0, {"x", "y"}).commit();
  d.sign_with(key);
  const json def = json::parse(d.dump());
  json j = def;
  j.erase("policy");
  CHECK_THROWS_WITH(BoardDefinition::from_json(j, "b.json"), "invalid board definition: missing field 'policy': b.json");
  j = def;
  j["benchmark"]["records"] = "all";
  CHECK_THROWS_WITH(BoardDefinition::from_json(j, "b.json"),
                    "invalid board definition: field 'records' is not an array: b.json");
  j = def;
  j["revealed"] = json::object();
  CHECK_THROWS_WITH(BoardDefinition::from_json(j, "b.json"),
                    "invalid board definition: field 'revealed' is not an array: b.json");
  j = def;
  j["name"] = 7;
  CHECK_THROWS_WITH(BoardDefinition::from_json(j, "b.json"), "invalid board definition: field 'name' is not a string: b.json");
  j = def;
  j["extra"] = 1;
  CHECK_THROWS_WITH(BoardDefinition::from_json(j, "b.json"), "invalid board definition: unknown field 'extra': b.json");
  // The envelope names the document without the prefix.
  j = def;
  j["format"] = "wit.other";
  CHECK_THROWS_WITH(BoardDefinition::from_json(j, "b.json"),
                    Catch::Matchers::StartsWith("not a board definition (format is not "));

  const json sealed = json::parse(SealedSet::seal("tiny", 0, {"x", "y"}).dump());  // as a file holds it
  j = sealed;
  j["records"] = 3;
  CHECK_THROWS_WITH(SealedSet::from_json(j, "s.json"), "invalid sealed set: field 'records' is not an array: s.json");
  j = sealed;
  j.erase("records");
  CHECK_THROWS_WITH(SealedSet::from_json(j, "s.json"), "invalid sealed set: missing field 'records': s.json");

  PruneRecord pr;
  pr.pruned.push_back({"runs/a/run.wlog", 3, {"a"}});
  const json prune = json::parse(pr.to_json().dump());
  j = prune;
  j["pruned"] = "none";
  CHECK_THROWS_WITH(PruneRecord::from_json(j, "p.json"), "invalid prune record: field 'pruned' is not an array: p.json");
  j = prune;
  j["pruned"][0]["runs"] = "a";
  CHECK_THROWS_WITH(PruneRecord::from_json(j, "p.json"), "invalid prune record: field 'runs' is not an array: p.json");
  j = prune;
  j["pruned"][0].erase("at");
  CHECK_THROWS_WITH(PruneRecord::from_json(j, "p.json"), "invalid prune record: missing field 'at': p.json");
  CHECK(PruneRecord::from_json(prune, "p.json").to_json() == prune);

  json gap = {{"bogus", 1}};
  CHECK_THROWS_WITH(GapTest::from_json(gap, "g.json"), "invalid gap test: unknown field 'bogus': g.json");
  gap = json::object();
  CHECK_THROWS_WITH(GapTest::from_json(gap, "g.json"), "invalid gap test: missing field 'observed': g.json");
  gap["observed"] = "big";
  CHECK_THROWS_WITH(GapTest::from_json(gap, "g.json"), "invalid gap test: field 'observed' is not a number: g.json");
}

TEST_CASE("board sealed: revealed epochs join the public split, which board-eval.json names", "[board][sealed]") {
  BoardDefinition d;
  d.name = "tiny";
  d.benchmark.root.data()[0] = 1;
  d.benchmark.n = 30;
  const SealedSet e0 = SealedSet::seal("tiny", 0, {"alpha", "beta"});
  const SealedSet e1 = SealedSet::seal("tiny", 1, {"gamma"});
  d.revealed.push_back({e0.commit(), revealed_file(0), ""});
  d.revealed.push_back({e1.commit(), revealed_file(1), ""});
  // Epoch 0's runs: the benchmark alone (its root, as before the sealed split existed).
  CHECK(d.public_epochs_before(0).empty());
  CHECK(d.public_split_root({}) == d.benchmark.root);
  CHECK(!d.public_split_problem({}, d.benchmark.root, 30));
  // Epoch 2's: the benchmark and both revealed epochs, a root of its own that names each.
  const std::vector<uint64_t> both = d.public_epochs_before(2);
  CHECK(both == std::vector<uint64_t>{0, 1});
  CHECK(d.public_epochs_before(1) == std::vector<uint64_t>{0});
  CHECK(d.public_split_n(both) == 33);
  const Hash32 r = d.public_split_root(both);
  CHECK(r != d.benchmark.root);
  CHECK(r != d.public_split_root({0}));
  CHECK(!d.public_split_problem(both, r, 33));
  CHECK(d.public_split_problem(both, r, 32));
  CHECK(d.public_split_problem(both, d.benchmark.root, 33));
  CHECK(d.public_split_problem({0}, r, 33));
  CHECK(d.public_split_problem({5}, r, 33));  // an epoch never revealed
  CHECK_THROWS_AS(d.public_split_root({5}), Error);
  // board-eval.json: the field round-trips, is absent when empty and refuses a list out of order.
  BoardEval be;
  be.weights_digest = std::string(64, 'a');
  be.eval = json::object();
  json j = be.to_json();
  CHECK(!j.contains("public_revealed"));
  be.public_revealed = both;
  j = json::parse(be.to_json().dump());  // as read from the file
  CHECK(j["public_revealed"] == json::array({0, 1}));
  CHECK(BoardEval::from_json(j, "t").public_revealed == both);
  j["public_revealed"] = json::array({1, 0});
  CHECK_THROWS_AS(BoardEval::from_json(j, "t"), Error);
  j["public_revealed"] = json::array();
  CHECK_THROWS_AS(BoardEval::from_json(j, "t"), Error);
}
