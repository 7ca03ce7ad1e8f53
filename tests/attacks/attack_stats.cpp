// attack_stats (test-only): from a report that replayed every step of a run,
// checks that exactly the tampered steps fail (detection per tampered step is
// 100%, no honest step is rejected), then draws many challenges with
// different nonces and checks the measured detection rate against the exact
// hypergeometric prediction with a binomial confidence interval.
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <set>
#include <string>

#include "wit/challenge.h"
#include "wit/error.h"
#include "wit/io.h"

using namespace wit;
using nlohmann::json;

// --fields REPORT TAMPERED: how the tampered steps failed. Prints
// "tampered weights-or-adam_m N/M" (failed on the full comparison of W or m)
// and "tampered sketch-blind N/M" (the fingerprint-only distance, sketch_replay,
// no larger than 10 x the largest of the honest steps: the sketches alone
// would have passed them).
int fields(const char* report_path, const char* tampered_path) {
  json report = json::parse(read_file(report_path));
  json tj = json::parse(read_file(tampered_path));
  std::set<int64_t> tampered;
  for (const auto& s : tj["steps"]) tampered.insert(s.get<int64_t>());
  auto value = [](const json& d, const char* f) {
    if (!d.contains(f)) return -1.0;
    return d[f].is_number() ? d[f].get<double>() : INFINITY;
  };
  double honest_max = 0;
  for (const auto& c : report["checks"])
    if (!tampered.count(c["step"].get<int64_t>())) honest_max = std::max(honest_max, value(c["distances"], "sketch_replay"));
  int wm = 0, blind = 0, n = 0;
  for (const auto& c : report["checks"]) {
    if (!tampered.count(c["step"].get<int64_t>())) continue;
    n++;
    const std::string f = c["failed"].is_string() ? c["failed"].get<std::string>() : "";
    wm += f == "weights" || f == "adam_m";
    const double sr = value(c["distances"], "sketch_replay");
    blind += sr >= 0 && sr <= 10 * honest_max;
  }
  std::printf("honest sketch_replay max %.3g\n", honest_max);
  std::printf("tampered weights-or-adam_m %d/%d\n", wm, n);
  std::printf("tampered sketch-blind %d/%d\n", blind, n);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--fields") {
    try {
      return fields(argv[2], argv[3]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "attack_stats: error: %s\n", e.what());
      return 2;
    }
  }
  if (argc != 6) {
    std::fprintf(stderr, "usage: attack_stats REPORT HEAD TAMPERED K NONCES\n");
    return 2;
  }
  try {
    json report = json::parse(read_file(argv[1]));
    TreeHead head = TreeHead::from_json(json::parse(read_file(argv[2])), argv[2]);
    json tj = json::parse(read_file(argv[3]));
    const int64_t k = std::atoll(argv[4]), nonces = std::atoll(argv[5]);
    std::set<int64_t> tampered, failed;
    for (const auto& s : tj["steps"]) tampered.insert(s.get<int64_t>());
    int64_t replayed = 0;
    for (const auto& c : report["checks"]) {
      replayed++;
      if (!c["pass"].get<bool>()) failed.insert(c["step"].get<int64_t>());
    }
    const int64_t T = int64_t(head.size) - 1;
    int bad = 0;
    if (replayed != T) {
      std::printf("FAIL: the report replayed %lld of %lld steps\n", (long long)replayed, (long long)T);
      return 1;
    }
    for (int64_t s : tampered)
      if (!failed.count(s)) {
        std::printf("FAIL: tampered step %lld passed its replay\n", (long long)s);
        bad++;
      }
    for (int64_t s : failed)
      if (!tampered.count(s)) {
        std::printf("FAIL: honest step %lld was rejected\n", (long long)s);
        bad++;
      }
    int64_t caught = 0;
    for (int64_t i = 0; i < nonces; i++) {
      Hash32 nonce;
      put_le64(nonce.data(), uint64_t(i) * 0x9E3779B97F4A7C15ull + 1);
      Challenge c = derive_challenge(head, nonce, k, 0, 0, 0.05);
      bool hit = false;
      for (int64_t s : c.steps) hit |= failed.count(s) > 0;
      caught += hit;
    }
    const double p = 1.0 - miss_probability(T, int64_t(tampered.size()), k);
    const double rate = double(caught) / double(nonces);
    const double sigma = std::sqrt(std::max(p * (1 - p), 1e-12) / double(nonces));
    const bool within = std::fabs(rate - p) <= 4 * sigma + 1e-9;
    size_t detected = 0;
    for (int64_t s : tampered) detected += failed.count(s);
    std::printf("attack %s: %zu of %lld steps tampered, per-step detection %zu/%zu, k=%lld, "
                "detected %lld of %lld challenges (%.3f), predicted %.3f (1-(1-f)^k %.3f), 4-sigma %s\n",
                tj.value("attack", std::string("?")).c_str(), tampered.size(), (long long)T,
                detected, tampered.size(), (long long)k, (long long)caught,
                (long long)nonces, rate, p, 1 - std::pow(1 - double(tampered.size()) / double(T), double(k)),
                within ? "ok" : "OUT OF RANGE");
    if (!within) bad++;
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attack_stats: error: %s\n", e.what());
    return 2;
  }
}
