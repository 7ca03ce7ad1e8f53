// The board's gap test: a one-sided permutation test of public against
// sealed per-record losses (docs/board.md, "The gap test").
#include "wit/board/gap.h"

#include <algorithm>
#include <cmath>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/base/json_fields.h"
#include "wit/hash/rng.h"
#include "wit/hash/tags.h"

namespace wit {

using nlohmann::json;

Hash32 gap_seed(const Hash32& public_scores_root, const Hash32& sealed_scores_root) {
  Bytes b(public_scores_root.data(), public_scores_root.data() + 32);
  b.insert(b.end(), sealed_scores_root.data(), sealed_scores_root.data() + 32);
  return hash_tagged(tags::kBoardGap, ByteView(b));
}

namespace {
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}
}  // namespace

GapTest gap_test(const std::vector<double>& pub, const std::vector<double>& sealed, const Hash32& seed,
                 uint64_t permutations) {
  if (pub.empty() || sealed.empty()) throw Error("the gap test needs at least one public and one sealed record");
  GapTest g;
  g.n_public = pub.size();
  g.n_sealed = sealed.size();
  g.permutations = permutations;
  g.seed = seed;
  g.observed = mean(sealed) - mean(pub);
  std::vector<double> pool(pub);
  pool.insert(pool.end(), sealed.begin(), sealed.end());
  double total = 0;
  for (double x : pool) total += x;
  const size_t n = pool.size(), k = sealed.size();
  // Ties of the statistic with the observed one count as reaching it: sums in
  // another order differ in the last bits, so allow for rounding.
  const double slack = 1e-12 * (1 + std::fabs(total));
  ChaChaStream rng(seed);
  std::vector<double> work(pool);
  for (uint64_t p = 0; p < permutations; p++) {
    // The first k places of a partial Fisher-Yates are a uniform k-subset: the "sealed" side.
    double s = 0;
    for (size_t i = 0; i < k; i++) {
      const size_t j = i + size_t(rng.uniform(uint64_t(n - i)));
      std::swap(work[i], work[j]);
      s += work[i];
    }
    const double d = s / double(k) - (total - s) / double(n - k);
    if (d >= g.observed - slack) g.at_least++;
  }
  g.p = double(1 + g.at_least) / double(1 + permutations);
  return g;
}

double bonferroni(double p, size_t runs) { return std::min(1.0, p * double(std::max<size_t>(runs, 1))); }

double normal_quantile(double p) {
  // Phi(x) = erfc(-x / sqrt 2) / 2 is increasing: bisect on [-40, 40].
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; i++) {
    const double mid = (lo + hi) / 2;
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

double detectable_gap(const std::vector<double>& pub, const std::vector<double>& sealed, double alpha) {
  if (pub.size() < 2 || sealed.size() < 2) return INFINITY;
  const double m1 = mean(pub), m2 = mean(sealed);
  double ss = 0;
  for (double x : pub) ss += (x - m1) * (x - m1);
  for (double x : sealed) ss += (x - m2) * (x - m2);
  const double s = std::sqrt(ss / double(pub.size() + sealed.size() - 2));
  return normal_quantile(1 - alpha) * s * std::sqrt(1.0 / double(pub.size()) + 1.0 / double(sealed.size()));
}

json GapTest::to_json() const {
  return {{"test", "one-sided permutation test of mean sealed loss - mean public loss"},
          {"observed", observed},
          {"n_public", n_public},
          {"n_sealed", n_sealed},
          {"permutations", permutations},
          {"at_least", at_least},
          {"p", p},
          {"detectable", std::isfinite(detectable) ? json(detectable) : json(nullptr)},
          {"seed", seed.hex()}};
}

GapTest GapTest::from_json(const json& j, const std::string& where) {
  // Field by field through jsonf, as every document's parser reads its own (release.cpp's): alike by shape, on purpose.
  const char* kind = "invalid gap test";
  if (!j.is_object()) throw Error("invalid gap test: not an object", where);
  jsonf::only_keys(j, {"test", "observed", "n_public", "n_sealed", "permutations", "at_least", "p", "detectable", "seed"}, kind, where);
  GapTest g;
  g.observed = jsonf::number(j, "observed", kind, where);
  g.n_public = jsonf::u64(j, "n_public", kind, where);
  g.n_sealed = jsonf::u64(j, "n_sealed", kind, where);
  g.permutations = jsonf::u64(j, "permutations", kind, where);
  g.at_least = jsonf::u64(j, "at_least", kind, where);
  g.p = jsonf::number(j, "p", kind, where);
  g.detectable = j.contains("detectable") && j["detectable"].is_number() ? j["detectable"].get<double>() : INFINITY;
  g.seed = jsonf::hash(j, "seed", kind, where);
  if (g.at_least > g.permutations || g.p != double(1 + g.at_least) / double(1 + g.permutations))
    throw Error("invalid gap test: p is not (1 + at_least) / (1 + permutations)", where);
  return g;
}

}  // namespace wit
