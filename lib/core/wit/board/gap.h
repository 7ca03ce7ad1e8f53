// The board's gap test (docs/board.md, "The gap test"): does a model do
// better on the benchmark's published records than on its sealed ones? The
// split is random from one pool, so an honest model's per-record losses on
// the two sides are exchangeable; a model that memorised (or carries) the
// published records is not. A one-sided permutation test of the difference
// of mean losses, with its seed derived from the two score commitments so
// anyone holding the scores re-derives the p-value. Torch-free.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"

namespace wit {

// The permutations the board draws: p is at least 1 / (1 + 99999) = 1e-5,
// so a board of up to 999 runs can still flag a run at the default 0.01
// after Bonferroni (p x runs).
inline constexpr uint64_t kGapPermutations = 99999;
inline constexpr double kDefaultGapThreshold = 0.01;

struct GapTest {
  // mean sealed loss - mean public loss (nats per byte): positive when the
  // model does better on what it could read.
  double observed = 0;
  uint64_t n_public = 0, n_sealed = 0;
  uint64_t permutations = 0;
  uint64_t at_least = 0;  // relabellings whose statistic is >= observed
  double p = 1;           // (1 + at_least) / (1 + permutations)
  Hash32 seed;            // gap_seed(public scores root, sealed scores root)
  // detectable_gap at the board's threshold (before Bonferroni): the gap
  // this test finds half the time at these sizes and this spread (information).
  double detectable = 0;

  nlohmann::json to_json() const;
  static GapTest from_json(const nlohmann::json& j, const std::string& where);
};

// H("wit/board-gap/v1" || public scores root || sealed scores root): fixed by
// the scores themselves, so neither the board nor the trainer chooses it.
Hash32 gap_seed(const Hash32& public_scores_root, const Hash32& sealed_scores_root);

// The test on per-record losses: each permutation relabels the pooled losses
// at random (n_sealed of them "sealed", drawn without replacement by a
// partial Fisher-Yates from the ChaCha20 stream keyed by `seed`) and counts
// those whose difference of means reaches the observed one. Both sides need
// at least one record; throws wit::Error otherwise.
GapTest gap_test(const std::vector<double>& public_losses, const std::vector<double>& sealed_losses, const Hash32& seed,
                 uint64_t permutations = kGapPermutations);

// Bonferroni over `runs` tests: min(1, p x runs).
double bonferroni(double p, size_t runs);

// The smallest gap (nats per byte, mean sealed - mean public) the test finds
// at level `alpha` with probability 1/2, by the normal approximation of the
// permutation distribution: z(1 - alpha) x s x sqrt(1/n1 + 1/n2), s the pooled
// standard deviation of the losses.
double detectable_gap(const std::vector<double>& public_losses, const std::vector<double>& sealed_losses, double alpha);

// The standard normal's quantile (bisection on erfc; |error| < 1e-9 for p in (1e-12, 1 - 1e-12)).
double normal_quantile(double p);

}  // namespace wit
