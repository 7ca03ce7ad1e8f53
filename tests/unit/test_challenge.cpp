// Challenges: the seed, the draws (against an independent implementation of
// the algorithm docs/challenge.md describes, and for uniformity), the exact
// miss probability against enumeration, k from a confidence, segments, and a
// challenge JSON that refuses every edit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "wit/run/challenge.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/hash/rng.h"
#include "wit/hash/sign.h"
#include "wit/hash/tags.h"
#include "wit/run/wlog.h"

using namespace wit;
using json = nlohmann::json;

namespace {

const SecretKey& test_key() {
  static const SecretKey k = generate_key();
  return k;
}

Hash32 hash_of(uint64_t i) {
  uint8_t b[8];
  put_le64(b, i);
  return hash_tagged("test", ByteView(b, 8));
}

TreeHead head_of(uint64_t size, uint64_t root_seed = 1, uint64_t time = 1700000000) {
  return sign_head(test_key(), hash_of(1000), size, hash_of(root_seed), time);
}

Hash32 nonce_of(uint64_t i) { return hash_of(1u << 20 | i); }

// The draw as docs/challenge.md states it, written again from the text.
std::vector<int64_t> reference_floyd(ChaChaStream& s, int64_t n, int64_t k) {
  std::set<int64_t> chosen;
  for (int64_t j = n - k + 1; j <= n; j++) {
    int64_t t = int64_t(s.uniform(uint64_t(j))) + 1;
    chosen.insert(chosen.count(t) ? j : t);
  }
  return {chosen.begin(), chosen.end()};
}

Hash32 flip_bit(Hash32 h, int bit) {
  h.b[size_t(bit / 8)] ^= uint8_t(1u << (bit % 8));
  return h;
}

// C(n, r) as a double, exactly for the small n used here.
double choose(int n, int r) {
  if (r < 0 || r > n) return 0;
  double c = 1;
  for (int i = 1; i <= r; i++) c = c * (n - r + i) / i;
  return c;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("challenge seed is H(tag || head bytes || nonce) and the draws follow the documented algorithm",
          "[challenge]") {
  const TreeHead h = head_of(2001);
  const Hash32 nonce = nonce_of(1);
  const Challenge c = derive_challenge(h, nonce, 90, 3, 100, 0.05);

  Blake2b b;
  b.update_field(ByteView(tags::kChallenge));
  const Bytes hb = h.signed_bytes();
  b.update_field(ByteView(hb));
  b.update(ByteView(nonce.data(), 32));
  CHECK(c.seed == b.final());

  ChaChaStream s(c.seed);
  CHECK(c.steps == reference_floyd(s, 2000, 90));
  const std::vector<int64_t> iv = reference_floyd(s, 20, 3);
  REQUIRE(c.segments.size() == 3);
  for (size_t i = 0; i < 3; i++) {
    CHECK(c.segments[i].from == (iv[i] - 1) * 100);
    CHECK(c.segments[i].to == iv[i] * 100);
  }
  CHECK(c.checkpoint_every == 100);
  CHECK(c.head.size == 2001);
  CHECK(c.nonce == nonce);
}

TEST_CASE("challenge draws are deterministic, distinct, sorted and in range", "[challenge]") {
  for (auto [size, k] : std::vector<std::pair<uint64_t, int64_t>>{{2, 1}, {3, 2}, {11, 10}, {101, 1}, {101, 50},
                                                                   {101, 100}, {100001, 1000}}) {
    const TreeHead h = head_of(size);
    const Challenge a = derive_challenge(h, nonce_of(size), k, 0, 0, 0.05);
    const Challenge b = derive_challenge(h, nonce_of(size), k, 0, 0, 0.05);
    CHECK(a.to_json() == b.to_json());
    REQUIRE(a.steps.size() == size_t(k));
    CHECK(std::is_sorted(a.steps.begin(), a.steps.end()));
    CHECK(std::adjacent_find(a.steps.begin(), a.steps.end()) == a.steps.end());
    CHECK(a.steps.front() >= 1);
    CHECK(a.steps.back() <= int64_t(size) - 1);
    CHECK(a.segments.empty());
    CHECK(a.checkpoint_every == 0);
  }
  // k = T takes every step.
  const Challenge all = derive_challenge(head_of(51), nonce_of(0), 50, 0, 0, 0.1);
  for (int64_t i = 0; i < 50; i++) CHECK(all.steps[size_t(i)] == i + 1);
  CHECK(all.guarantee.detection == 1.0);
}

TEST_CASE("one bit of the nonce or the head changes the draw", "[challenge]") {
  const TreeHead h = head_of(100001, 5, 1700000123);
  const Hash32 nonce = nonce_of(9);
  const Challenge base = derive_challenge(h, nonce, 20, 0, 0, 0.05);
  for (int bit : {0, 1, 7, 100, 255}) {
    const Challenge c = derive_challenge(h, flip_bit(nonce, bit), 20, 0, 0, 0.05);
    CHECK(c.seed != base.seed);
    CHECK(c.steps != base.steps);
  }
  const std::vector<TreeHead> heads = {
      sign_head(test_key(), flip_bit(h.run_id, 3), h.size, h.root, h.time),
      sign_head(test_key(), h.run_id, h.size, flip_bit(h.root, 200), h.time),
      sign_head(test_key(), h.run_id, h.size, h.root, h.time ^ 1),
      sign_head(test_key(), h.run_id, h.size ^ 1, h.root, h.time),
  };
  for (const TreeHead& o : heads) {
    const Challenge c = derive_challenge(o, nonce, 20, 0, 0, 0.05);
    CHECK(c.seed != base.seed);
    CHECK(c.steps != base.steps);
  }
  // The signer is not part of the seed: the same head signed by another key draws the same steps.
  const TreeHead other = sign_head(generate_key(), h.run_id, h.size, h.root, h.time);
  CHECK(derive_challenge(other, nonce, 20, 0, 0, 0.05).steps == base.steps);
}

TEST_CASE("challenge steps are uniform over steps and over subsets", "[challenge]") {
  // Per step: T = 20, k = 5, 20000 nonces. Each step is drawn with probability
  // 1/4, so its count is 5000 with standard deviation sqrt(20000 * 3/16) = 61.
  {
    const TreeHead h = head_of(21);
    std::vector<int> count(21, 0);
    const int n = 20000;
    for (int i = 0; i < n; i++)
      for (int64_t s : derive_challenge(h, nonce_of(uint64_t(i)), 5, 0, 0, 0.05).steps) count[size_t(s)]++;
    CHECK(count[0] == 0);
    double chi2 = 0;
    for (int s = 1; s <= 20; s++) {
      INFO("step " << s << " drawn " << count[size_t(s)] << " times");
      CHECK(std::abs(count[size_t(s)] - 5000) < 5 * 61);
      chi2 += std::pow(count[size_t(s)] - 5000.0, 2) / 5000.0;
    }
    // Under uniformity chi2 is about 0.75 * chi-square(19) (mean ~14); 45 is far in its tail.
    INFO("chi-square over steps " << chi2);
    CHECK(chi2 < 45);
  }
  // Per subset: T = 6, k = 3 has 20 subsets, each expected 1000 times in 20000.
  {
    const TreeHead h = head_of(7);
    std::map<std::vector<int64_t>, int> count;
    const int n = 20000;
    for (int i = 0; i < n; i++) count[derive_challenge(h, nonce_of(uint64_t(i) + 99999), 3, 0, 0, 0.05).steps]++;
    CHECK(count.size() == 20);
    double chi2 = 0;
    for (const auto& kv : count) chi2 += std::pow(kv.second - 1000.0, 2) / 1000.0;
    // chi-square(19): P(> 50) is about 1e-4.
    INFO("chi-square over subsets " << chi2);
    CHECK(chi2 < 50);
  }
}

TEST_CASE("miss probability is exact against enumeration", "[challenge]") {
  for (int T = 0; T <= 10; T++)
    for (int bad = 0; bad <= T; bad++)
      for (int k = 0; k <= T; k++) {
        // Bad steps are {0..bad-1}; count the k-subsets of T that avoid them.
        int miss = 0, all = 0;
        for (uint32_t m = 0; m < (1u << T); m++) {
          if (__builtin_popcount(m) != k) continue;
          all++;
          if ((m & ((1u << bad) - 1)) == 0) miss++;
        }
        INFO("T=" << T << " bad=" << bad << " k=" << k);
        CHECK(miss_probability(T, bad, k) == Approx(double(miss) / all).margin(1e-15));
      }
  // Closed forms at scale.
  CHECK(miss_probability(60, 6, 10) == Approx(choose(54, 10) / choose(60, 10)).epsilon(1e-13));
  const int64_t G = 1000000000;
  CHECK(miss_probability(G, 1, 250000000) == Approx(0.75).epsilon(1e-13));
  CHECK(miss_probability(G, 1, G) == 0.0);
  CHECK(miss_probability(G, G, 1) == 0.0);
  CHECK(miss_probability(G, G / 2, G / 2) == 0.0);  // underflows fast, no 1e9-long loop
  CHECK(miss_probability(G, 0, G) == 1.0);
  // bad = 5% of 1e9, k = 90: close to 0.95^90 and a little below it.
  const double m = miss_probability(G, G / 20, 90);
  CHECK(m < std::pow(0.95, 90));
  CHECK(m == Approx(std::pow(0.95, 90)).epsilon(1e-6));
  CHECK_THROWS_AS(miss_probability(10, 11, 1), Error);
  CHECK_THROWS_AS(miss_probability(10, 1, 11), Error);
  CHECK_THROWS_AS(miss_probability(10, -1, 1), Error);
}

TEST_CASE("k for a confidence is the smallest k that reaches it", "[challenge]") {
  auto detection = [](int64_t T, double f, int64_t k) { return 1.0 - miss_probability(T, bad_steps_for(T, f), k); };
  struct Case {
    int64_t T;
    double f, P;
  };
  for (const Case& c : std::vector<Case>{{2000, 0.05, 0.99}, {2000, 0.01, 0.9}, {40, 0.1, 0.9}, {100, 0.07, 0.999},
                                         {1000000000, 0.05, 0.99}, {1000000000, 1e-6, 0.95}, {10, 1.0, 0.5}}) {
    const int64_t k = k_for_confidence(c.T, c.f, c.P);
    INFO("T=" << c.T << " f=" << c.f << " P=" << c.P << " k=" << k);
    CHECK(detection(c.T, c.f, k) >= c.P);
    if (k > 1) CHECK(detection(c.T, c.f, k - 1) < c.P);
  }
  const int64_t k = k_for_confidence(2000, 0.05, 0.99);
  // Exact (hypergeometric) detection needs 88; the binomial bound 1 - 0.95^k would need 90.
  CHECK(k == 88);
  CHECK(1 - std::pow(0.95, 89) < 0.99);
  CHECK(1 - std::pow(0.95, 90) >= 0.99);
  CHECK(k_for_confidence(10, 1.0, 0.999) == 1);
  // One bad step: detection is k/T, so k = ceil(P T).
  CHECK(k_for_confidence(1000, 1e-9, 0.5) == 500);
  CHECK(k_for_confidence(1000, 1e-9, 0.5001) == 501);
  CHECK_THROWS_AS(k_for_confidence(100, 0.0, 0.9), Error);
  CHECK_THROWS_AS(k_for_confidence(100, 0.1, 1.0), Error);
  CHECK_THROWS_AS(k_for_confidence(100, 0.1, 0.0), Error);
  CHECK_THROWS_AS(k_for_confidence(100, std::nan(""), 0.9), Error);
}

TEST_CASE("bad steps and the guarantee in words", "[challenge]") {
  CHECK(bad_steps_for(2000, 0.05) == 100);
  CHECK(bad_steps_for(100, 0.07) == 7);  // 0.07 * 100 is 7.000000000000001 in doubles
  CHECK(bad_steps_for(40, 0.05) == 2);
  CHECK(bad_steps_for(41, 0.05) == 3);
  CHECK(bad_steps_for(10, 0.01) == 1);
  CHECK(bad_steps_for(10, 1.0) == 10);

  const Guarantee g = make_guarantee(2000, 90, 0.05);
  CHECK(g.steps == 2000);
  CHECK(g.k == 90);
  CHECK(g.bad_steps == 100);
  CHECK(g.detection == Approx(1 - choose(1900, 90) / choose(2000, 90)).epsilon(1e-12));
  CHECK(g.detection_binomial == Approx(1 - std::pow(0.95, 90)).epsilon(1e-12));
  CHECK(g.detection > g.detection_binomial);
  const std::string w = g.words();
  CHECK(w.find("a run that tampered with at least 5% of its 2000 steps (100 steps) is caught by these 90 challenges "
               "with probability at least 99.") == 0);
  CHECK(w.find("(hypergeometric; 1-(1-f)^k = 99.0") != std::string::npos);
  CHECK(make_guarantee(10, 10, 0.1).words().find("with certainty") != std::string::npos);
  CHECK(make_guarantee(10, 1, 0.1).words().find("this 1 challenge with probability at least 10.00%") !=
        std::string::npos);
  CHECK(make_guarantee(10, 1, 1.0).words() ==
        "a run that tampered with at least 100% of its 10 steps (10 steps) is caught by this 1 challenge with certainty "
        "(hypergeometric; 1-(1-f)^k = 100%)");
  // "At least": rounded down, never up to 100% short of certainty.
  CHECK(make_guarantee(1000000, 1000, 0.5).words().find("at least 99.99%") != std::string::npos);
}

TEST_CASE("segments are distinct checkpoint intervals, the last one ending at T", "[challenge]") {
  const TreeHead h = head_of(46);  // T = 45, C = 20: (0,20], (20,40], (40,45]
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int i = 0; i < 200; i++) {
    const Challenge c = derive_challenge(h, nonce_of(uint64_t(i)), 3, 2, 20, 0.05);
    REQUIRE(c.segments.size() == 2);
    CHECK(c.segments[0].from < c.segments[1].from);
    for (const Segment& s : c.segments) {
      CHECK(s.from % 20 == 0);
      CHECK(s.to == std::min<int64_t>(s.from + 20, 45));
      seen.insert({s.from, s.to});
    }
  }
  CHECK(seen == std::set<std::pair<int64_t, int64_t>>{{0, 20}, {20, 40}, {40, 45}});
  const Challenge all = derive_challenge(h, nonce_of(1), 1, 3, 20, 0.05);
  CHECK(all.segments.size() == 3);
  // Segments do not change the steps: they come after them in the stream.
  CHECK(derive_challenge(h, nonce_of(1), 3, 0, 0, 0.05).steps == derive_challenge(h, nonce_of(1), 3, 2, 20, 0.05).steps);
  CHECK(error_of([&] { derive_challenge(h, nonce_of(1), 3, 4, 20, 0.05); }).find("more segments") != std::string::npos);
  CHECK(error_of([&] { derive_challenge(h, nonce_of(1), 3, 1, 0, 0.05); }).find("checkpoint interval") !=
        std::string::npos);
  CHECK(error_of([&] { derive_challenge(h, nonce_of(1), 3, -1, 20, 0.05); }).find("negative segment count") !=
        std::string::npos);
}

TEST_CASE("derive_challenge refuses what it cannot challenge", "[challenge]") {
  const Hash32 n = nonce_of(1);
  CHECK(error_of([&] { derive_challenge(head_of(1), n, 1, 0, 0, 0.05); }).find("no training steps") !=
        std::string::npos);
  CHECK(error_of([&] { derive_challenge(head_of(0), n, 1, 0, 0, 0.05); }).find("no training steps") !=
        std::string::npos);
  CHECK(error_of([&] { derive_challenge(head_of(41), n, 0, 0, 0, 0.05); }).find("between 1 and the 40") !=
        std::string::npos);
  CHECK(error_of([&] { derive_challenge(head_of(41), n, 41, 0, 0, 0.05); }).find("between 1 and the 40") !=
        std::string::npos);
  CHECK(error_of([&] { derive_challenge(head_of(41), n, 5, 0, 0, 0.0); }).find("fraction") != std::string::npos);
  CHECK(error_of([&] { derive_challenge(head_of(41), n, 5, 0, 0, 1.5); }).find("fraction") != std::string::npos);
  TreeHead bad = head_of(41);
  bad.sig[0] ^= 1;
  CHECK(error_of([&] { derive_challenge(bad, n, 5, 0, 0, 0.05); }).find("signature") != std::string::npos);
}

TEST_CASE("a challenge round-trips through JSON and refuses every edit", "[challenge]") {
  const Challenge c = derive_challenge(head_of(2001), nonce_of(3), 90, 2, 100, 0.05);
  const json j = c.to_json();
  CHECK(j["format"] == "wit.challenge");
  CHECK(j["version"] == 1);
  CHECK(j["run_id"] == c.head.run_id.hex());
  CHECK(j["head"] == c.head.to_json());
  CHECK(j["guarantee"]["statement"] == c.guarantee.words());
  // Through text, as a file would carry it.
  const Challenge back = Challenge::from_json(json::parse(j.dump(2)), "c.json");
  CHECK(back.to_json() == j);
  CHECK(back.steps == c.steps);
  CHECK(back.guarantee.detection == c.guarantee.detection);

  auto refused = [&](const std::function<void(json&)>& edit, const std::string& why) {
    json e = json::parse(j.dump());
    edit(e);
    const std::string msg = error_of([&] { Challenge::from_json(e, "c.json"); });
    INFO("edit expected to fail with '" << why << "', got '" << msg << "'");
    CHECK(msg.find(why) != std::string::npos);
    CHECK(msg.find("c.json") != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  };
  auto unused_step = [&] {
    for (int64_t s = 1;; s++)
      if (!std::binary_search(c.steps.begin(), c.steps.end(), s)) return s;
  };
  refused([&](json& e) { e["steps"][5] = unused_step(); }, "steps are not the ones");
  refused([&](json& e) { e["steps"].erase(e["steps"].begin()); }, "are not the ones");  // k - 1 draws differ
  refused([&](json& e) { e["steps"].push_back(unused_step()); }, "are not the ones");
  refused([&](json& e) { e["steps"][0] = "1"; }, "not a non-negative integer");
  refused([&](json& e) { e["steps"] = json::array(); }, "0 steps");
  refused([&](json& e) { e["segments"][0]["from"] = e["segments"][0]["from"].get<int64_t>() + 100; },
          "segments are not the ones");
  refused([&](json& e) { e["segments"].erase(e["segments"].begin()); }, "are not the ones");
  refused([&](json& e) { e["checkpoint_every"] = 50; }, "not the ones");
  refused([&](json& e) { e["head"]["sig"] = std::string(128, '0'); }, "has a bad signature");
  refused([&](json& e) { e["head"]["time"] = e["head"]["time"].get<uint64_t>() + 1; }, "has a bad signature");
  refused([&](json& e) { e["head"]["size"] = "x"; }, "invalid tree head");
  refused([&](json& e) { e["nonce"] = nonce_of(4).hex(); }, "seed is not");
  refused([&](json& e) { e["seed"] = nonce_of(4).hex(); }, "seed is not");
  refused([&](json& e) { e["run_id"] = nonce_of(4).hex(); }, "run id");
  refused([&](json& e) { e["format"] = "wit.proof"; }, "not a challenge");
  refused([&](json& e) { e.erase("format"); }, "missing field 'format'");
  refused([&](json& e) { e["version"] = 2; }, "unsupported challenge version 2");
  refused([&](json& e) { e["extra"] = 1; }, "unknown field 'extra'");
  refused([&](json& e) { e.erase("nonce"); }, "missing field 'nonce'");
  refused([&](json& e) { e["guarantee"]["fraction"] = 0.5; }, "guarantee");
  refused([&](json& e) { e["guarantee"]["fraction"] = 0.0; }, "guarantee.fraction");
  refused([&](json& e) { e["guarantee"]["detection"] = 0.999999; }, "probabilities");
  refused([&](json& e) { e["guarantee"]["k"] = 89; }, "guarantee does not match");
  refused([&](json& e) { e["guarantee"]["statement"] = "caught with certainty"; }, "statement");
  refused([&](json& e) { e["guarantee"]["extra"] = 1; }, "unknown field 'guarantee.extra'");
  CHECK(error_of([&] { Challenge::from_json(json::array(), "c.json"); }).find("not a json object") !=
        std::string::npos);
}

TEST_CASE("a challenge without segments records no checkpoint interval", "[challenge]") {
  const Challenge a = derive_challenge(head_of(41), nonce_of(2), 5, 0, 20, 0.05);
  const Challenge b = derive_challenge(head_of(41), nonce_of(2), 5, 0, 0, 0.05);
  CHECK(a.to_json() == b.to_json());
  CHECK(a.to_json()["checkpoint_every"] == 0);
  json e = a.to_json();
  e["checkpoint_every"] = 20;
  CHECK(error_of([&] { Challenge::from_json(e, "c.json"); }).find("without segments") != std::string::npos);
}
