// Challenges: which steps of a run must be replayed, derived from a signed
// head and a nonce the trainer does not control, with the detection guarantee
// (exact hypergeometric over the T logged steps). Format: docs/challenge.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"
#include "wit/run/wlog.h"

namespace wit {

inline constexpr const char* kChallengeFormat = "wit.challenge";
inline constexpr int kChallengeVersion = 1;

// A checkpoint interval (from, to]: replay steps from+1..to starting at the
// exact state of checkpoint `from` and ending at checkpoint `to`.
struct Segment {
  int64_t from = 0, to = 0;
};

struct Guarantee {
  int64_t steps = 0;        // T: steps covered by the head (head.size - 1)
  int64_t k = 0;            // step challenges
  double fraction = 0;      // f: the tampering fraction the guarantee is stated for
  int64_t bad_steps = 0;    // ceil(f * T)
  double detection = 0;     // exact: 1 - C(T - bad, k) / C(T, k)
  double detection_binomial = 0;  // 1 - (1 - f)^k, the bound of docs/design.md section 5
  std::string words() const;       // the guarantee as one English sentence
  // {"steps","k","fraction","bad_steps","detection","detection_binomial","statement"}.
  nlohmann::json to_json(const std::string& statement) const;
};

struct Challenge {
  TreeHead head;            // the signed head challenged
  Hash32 nonce;             // from the verifier or a public beacon, after the head
  Hash32 seed;              // H(kChallenge || head.signed_bytes() || nonce)
  int64_t checkpoint_every = 0;     // C the segments were drawn with; 0 when there are none
  std::vector<int64_t> steps;       // distinct, sorted, in [1, T]
  std::vector<Segment> segments;    // distinct checkpoint intervals, sorted
  Guarantee guarantee;

  nlohmann::json to_json() const;
  // Parses and re-derives: throws wit::Error if the steps or segments are not
  // the ones the head and nonce give (a hand-edited challenge is refused).
  static Challenge from_json(const nlohmann::json& j, const std::string& where);
  static Challenge load(const std::string& path);
};

// Most step challenges one challenge may hold (it is a JSON artifact, not a replay plan).
inline constexpr int64_t kMaxChallengeSteps = int64_t(1) << 24;

// Probability that k distinct uniform draws from T steps all miss `bad` bad
// steps: C(T - bad, k) / C(T, k). Needs 0 <= bad <= T and 0 <= k <= T.
double miss_probability(int64_t T, int64_t bad, int64_t k);
// The bad steps a fraction f of T stands for: ceil(f * T), at least 1, with
// f * T within 1e-9 (relative) of an integer taken as that integer.
int64_t bad_steps_for(int64_t T, double fraction);
// The guarantee of k step challenges over T steps against a fraction f.
Guarantee make_guarantee(int64_t T, int64_t k, double fraction);
// Smallest k with detection >= confidence against a fraction f of bad steps
// (at least one bad step); k <= T.
int64_t k_for_confidence(int64_t T, double fraction, double confidence);

// Floyd's algorithm: k distinct values uniformly from [1, n] (every k-subset
// equally likely), consuming exactly k uniform() draws from the stream; sorted.
// Preconditions: 0 <= k <= n. Shared by challenges and eval spot checks.
class ChaChaStream;
std::vector<int64_t> floyd_sample(ChaChaStream& s, int64_t n, int64_t k);
// A probability as "at least" percent text: rounded down to hundredths,
// "100%" only for exactly 1 ("12.34%").
std::string percent(double p);
// A fraction as percent text with up to 6 significant digits ("5%", "0.1%").
std::string fraction_percent(double f);

// Derives a challenge: k distinct steps uniformly from [1, T] (T = head.size - 1)
// and `n_segments` distinct intervals among the checkpoint intervals of width
// `checkpoint_every` (the last one may be shorter) by a ChaCha20 stream keyed
// by the challenge seed. `fraction` is recorded in the guarantee.
Challenge derive_challenge(const TreeHead& head, const Hash32& nonce, int64_t k, int64_t n_segments,
                           int64_t checkpoint_every, double fraction);

// What a challenger asks for (wit-challenge's and wit-board challenge's options).
struct ChallengeRequest {
  std::optional<int64_t> k;             // k steps, or
  std::optional<double> confidence;     // the smallest k reaching this detection against `fraction`
  std::optional<double> fraction;       // needed with `confidence`; 0.05 with k alone
  int64_t segments = 0;
  std::optional<int64_t> checkpoint_every;  // needed with segments > 0
};
// How many to draw from a population of n (steps, or eval examples): checks
// -k / --confidence / --fraction (-k alone states the guarantee for 0.05)
// and returns k in [1, min(n, max)]; throws wit::Error with a one-line
// reason naming `population` ("steps the head covers").
int64_t request_count(const ChallengeRequest& req, int64_t n, const std::string& population, int64_t max);
// Checks the request and the head (signature, at least one step) and derives
// the challenge; throws wit::Error with a one-line reason (`head_where` names
// the head's file) on a bad request or head.
Challenge issue_challenge(const TreeHead& head, const std::string& head_where, const Hash32& nonce,
                          const ChallengeRequest& req);

// The one rule for every nonce a verifier gives a wit tool (wit-challenge,
// wit-board challenge, wit-eval check; docs/challenge.md, "Nonces"): 32
// bytes written as 64 hex digits, either as --nonce HEX or in a
// --nonce-file F (- = stdin; whitespace around the digits ignored). Exactly
// one of `hex` and `file` is non-empty; throws wit::Error
// ("--nonce is not 64 hex digits: X", "nonce file is not 64 hex digits: F").
Hash32 nonce_from_args(const std::string& hex, const std::string& file);

}  // namespace wit
