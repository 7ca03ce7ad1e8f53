// The plan of fully sharded training (wit/run/shards.h, docs/distributed.md):
// the ranges rule, the GPT's units, and the manifest's "sharding" checked
// against the model, without LibTorch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "wit/base/error.h"
#include "wit/run/model_spec.h"
#include "wit/run/shards.h"

using namespace wit;
using nlohmann::json;

namespace {

std::string refusal(const json& j, const ModelConfig& c) {
  try {
    ShardPlan::from_json(j, c, "run.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("shard ranges are contiguous, cover every tensor and balance by elements", "[shards]") {
  // Midpoint rule: 10 | 10 | 1 | 1 | 10 over 2 ranks (total 32, cut at 16):
  // midpoints 5, 15 go to rank 0; 20.5, 21.5, 27 to rank 1.
  CHECK(shard_owners({10, 10, 1, 1, 10}, 2) == std::vector<int>{0, 0, 1, 1, 1});
  CHECK(shard_owners({5, 5, 5, 5}, 4) == std::vector<int>{0, 1, 2, 3});
  // More ranks than tensors: some ranks own nothing, still contiguous.
  const std::vector<int> o = shard_owners({1, 1}, 5);
  CHECK(std::is_sorted(o.begin(), o.end()));
  ModelConfig c;  // the built-in GPT, 2 layers
  for (int W : {2, 3, 8}) {
    const ShardPlan p = plan_shards(c, W);
    REQUIRE(p.bounds.size() == size_t(W) + 1);
    CHECK(p.bounds.front() == 0);
    CHECK(p.bounds.back() == model_params(c).size());
    CHECK(std::is_sorted(p.bounds.begin(), p.bounds.end()));
    // Round trip through the manifest's JSON.
    CHECK(ShardPlan::from_json(p.to_json(), c, "run.json") == p);
  }
  // Balanced within the largest tensor: no rank holds more than P / W + the largest tensor.
  const auto specs = model_params(c);
  uint64_t total = 0, largest = 0;
  for (const auto& s : specs) total += s.numel(), largest = std::max(largest, s.numel());
  const ShardPlan p = plan_shards(c, 2);
  for (int r = 0; r < 2; r++) {
    uint64_t mine = 0;
    for (size_t i = p.bounds[size_t(r)]; i < p.bounds[size_t(r) + 1]; i++) mine += specs[i].numel();
    CHECK(mine <= total / 2 + largest);
  }
}

TEST_CASE("the GPT's units: embeddings, one per block, the tied head", "[shards]") {
  ModelConfig c;
  c.n_layer = 3;
  const auto units = model_units(c);
  REQUIRE(units.size() == 5);
  CHECK(units.front() == std::vector<std::string>{"wpe", "wte"});
  CHECK(units.back() == std::vector<std::string>{"lnf.bias", "lnf.weight", "wte"});
  std::set<std::string> seen;
  for (const auto& u : units) seen.insert(u.begin(), u.end());
  CHECK(seen.size() == model_params(c).size());  // every parameter is in a unit
  for (const auto& n : units[2]) CHECK(n.rfind("h.1.", 0) == 0);
}

TEST_CASE("a manifest's sharding is refused unless it is a plan for this model", "[shards]") {
  ModelConfig c;
  const json good = plan_shards(c, 2).to_json();
  CHECK(refusal(good, c).empty());
  json j = good;
  j["mode"] = "zero1";
  CHECK(refusal(j, c).find("'mode' must be \"full\"") != std::string::npos);
  j = good;
  j["world"] = 1;
  CHECK(refusal(j, c).find("'world'") != std::string::npos);
  j = good;
  j["bounds"] = json::array({0, 3});  // too few for 2 ranks
  CHECK(refusal(j, c).find("world + 1") != std::string::npos);
  j = good;
  j["bounds"][1] = j["bounds"][2].get<int>() + 0;
  j["bounds"][2] = 3;  // falls
  CHECK(refusal(j, c).find("must rise") != std::string::npos);
  j = good;
  std::swap(j["units"][0], j["units"][1]);  // units in another order than the forward runs them
  CHECK(refusal(j, c).find("not the model's units") != std::string::npos);
  j = good;
  j["extra"] = 1;
  CHECK(!refusal(j, c).empty());
  // Another model (3 layers) does not take a 2-layer plan.
  ModelConfig c3;
  c3.n_layer = 3;
  CHECK(!refusal(good, c3).empty());
}
