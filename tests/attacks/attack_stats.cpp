// attack_stats (test-only): from a report that replayed every step of a run,
// checks that exactly the tampered steps fail (detection per tampered step is
// 100%, no honest step is rejected), then draws many challenges with
// different nonces and checks the measured detection rate against the exact
// hypergeometric prediction with a binomial confidence interval.
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <sstream>
#include <set>
#include <string>

#include "wit/run/challenge.h"
#include "wit/base/error.h"
#include "wit/base/io.h"

using namespace wit;
using nlohmann::json;

// --fields REPORT TAMPERED: how the tampered steps failed. Prints
// "tampered weights-or-adam_m N/M" (failed on the full comparison of W or m)
// and "tampered sketch-blind N/M" (the fingerprint-only distance, sketch_replay,
// at most 10^-4 of the logged sketch update: below the thresholds the old
// sketch-only verifier used, about 10^-5 at the default margin, within a
// factor of 10, while a step on other data that is not hidden moves it by
// 10^-2 to 1).
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
  double tampered_max = 0;
  for (const auto& c : report["checks"]) {
    if (!tampered.count(c["step"].get<int64_t>())) continue;
    n++;
    const std::string f = c["failed"].is_string() ? c["failed"].get<std::string>() : "";
    wm += f == "weights" || f == "adam_m";
    const double sr = value(c["distances"], "sketch_replay");
    blind += sr >= 0 && sr <= 1e-4;
    tampered_max = std::max(tampered_max, sr);
  }
  std::printf("sketch_replay max: honest steps %.3g, tampered steps %.3g\n", honest_max, tampered_max);
  std::printf("tampered weights-or-adam_m %d/%d\n", wm, n);
  std::printf("tampered sketch-blind %d/%d\n", blind, n);
  return 0;
}

// P(X <= x) for X ~ Binomial(n, p), exactly (log-space terms).
double binom_cdf(int64_t x, int64_t n, double p) {
  if (x < 0) return 0;
  if (x >= n) return 1;
  double s = 0;
  for (int64_t i = 0; i <= x; i++) {
    const double lg = std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1);
    const double lp = (p > 0 ? double(i) * std::log(p) : (i ? -INFINITY : 0)) +
                      (p < 1 ? double(n - i) * std::log1p(-p) : (n - i ? -INFINITY : 0));
    s += std::exp(lg + lp);
  }
  return std::min(1.0, s);
}

// --verdicts HEAD TAMPERED K FILE: FILE has one line "NONCE_HEX EXIT" per real
// verification (wit-challenge -k K with that nonce, respond, verify). Every
// verdict must be exactly right: rejected (1) iff the challenge drew a tampered
// step, certified (0) otherwise. Then the measured detection rate is checked
// against the exact hypergeometric prediction with an exact two-sided binomial
// test at 10^-4 (for an honest run: no rejection at all).
int verdicts(const char* head_path, const char* tampered_path, int64_t k, const char* file) {
  TreeHead head = TreeHead::from_json(json::parse(read_file(head_path)), head_path);
  json tj = json::parse(read_file(tampered_path));
  std::set<int64_t> tampered;
  for (const auto& s : tj["steps"]) tampered.insert(s.get<int64_t>());
  const int64_t T = int64_t(head.size) - 1;
  int64_t n = 0, caught = 0, wrong = 0;
  std::istringstream in(read_file(file));
  std::string hex;
  int rc;
  while (in >> hex >> rc) {
    Bytes nb;
    if (!from_hex(hex, nb) || nb.size() != 32) throw Error("bad nonce", hex);
    Hash32 nonce;
    std::memcpy(nonce.data(), nb.data(), 32);
    const Challenge c = derive_challenge(head, nonce, k, 0, 0, 0.05);
    bool hit = false;
    for (int64_t s : c.steps) hit |= tampered.count(s) > 0;
    n++;
    caught += rc == 1;
    if (rc != (hit ? 1 : 0)) {
      wrong++;
      std::printf("FAIL: nonce %s: exit %d, but the challenge %s a tampered step\n", hex.c_str(), rc,
                  hit ? "drew" : "drew no");
    }
  }
  const double p = tampered.empty() ? 0.0 : 1.0 - miss_probability(T, int64_t(tampered.size()), k);
  const double lo = binom_cdf(caught, n, p), hi = 1 - binom_cdf(caught - 1, n, p);
  const bool ok = std::min(lo, hi) > 5e-5;
  std::printf("%s: %lld real verifications, k=%lld, %zu of %lld steps tampered: rejected %lld (%.3f), "
              "predicted %.3f; exact binomial tails %.3g / %.3g %s; wrong verdicts %lld\n",
              tj.value("attack", std::string("?")).c_str(), (long long)n, (long long)k, tampered.size(), (long long)T,
              (long long)caught, n ? double(caught) / double(n) : 0.0, p, lo, hi, ok ? "ok" : "OUT OF RANGE",
              (long long)wrong);
  return (wrong || !ok || n == 0) ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "--verdicts") {
    try {
      return verdicts(argv[2], argv[3], std::atoll(argv[4]), argv[5]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "attack_stats: error: %s\n", e.what());
      return 2;
    }
  }
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
