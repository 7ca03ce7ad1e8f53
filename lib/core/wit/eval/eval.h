// Certified evaluation without LibTorch: the eval commitment (eval.json) of a
// checkpoint on a committed eval set, the per-example scores it is computed
// from (eval.scores.json), and spot-check reports (wit.eval-check) that
// re-evaluate k random examples chosen by a nonce. Computing scores needs the
// model: lib/torch, wit/eval/evaluate.h. Format: docs/eval.md.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/check.h"
#include "wit/base/bytes.h"
#include "wit/run/challenge.h"
#include "wit/base/verdict.h"

namespace wit {

inline constexpr const char* kEvalFormat = "wit.eval";
inline constexpr const char* kEvalScoresFormat = "wit.eval-scores";
inline constexpr const char* kEvalCheckFormat = "wit.eval-check";
inline constexpr int kEvalVersion = 1;
// The one metric of version 1: per-example mean next-byte negative
// log-likelihood in nats ("loss") and next-byte top-1 accuracy, over the
// positions the training loss counts (make_rows' mask).
inline constexpr const char* kEvalMetric = "next-byte";
// A re-evaluated score passes when |claimed - recomputed| <= tolerance:
// loss: kEvalLossTolerance * max(1, |recomputed|); accuracy: kEvalAccuracyTolerance.
inline constexpr double kEvalLossTolerance = 1e-4;
inline constexpr double kEvalAccuracyTolerance = 1e-6;
// Most examples one spot check may re-evaluate.
inline constexpr uint64_t kMaxEvalCheck = uint64_t(1) << 20;
// Most examples one eval may hold, and the longest nonce a spot check takes.
inline constexpr uint64_t kMaxEvalExamples = uint64_t(1) << 32;
inline constexpr size_t kMaxEvalNonceBytes = 1024;

struct Score {
  double loss = 0, accuracy = 0;
};

// ---------------------------------------------------------------- causal evaluation
// A model scored on the next token must not read it. The causal check
// (docs/eval.md, "Causal evaluation"): at cut points drawn from a nonce, every
// token of the record's row after the cut is replaced by another token, and
// the model's outputs (logits) at positions 0..cut must stay bit for bit the
// same. The draws are torch-free (here); running the model is wit/eval/evaluate.h.

// Most cut points one record may be checked at.
inline constexpr uint64_t kMaxCausalCuts = 64;

// What an evaluation's causal check covered: eval.json's optional "causal".
struct CausalCoverage {
  Bytes nonce;           // the cut points' nonce (wit-eval run's default: the checkpoint root's 32 bytes)
  uint64_t records = 0;  // records checked
  uint64_t cuts = 1;     // cut points per record (fewer where a row has fewer eligible positions)

  nlohmann::json to_json() const;  // {"cuts": C, "nonce": HEX, "records": R}
  static CausalCoverage from_json(const nlohmann::json& j, const std::string& where);  // throws wit::Error
  bool operator==(const CausalCoverage& o) const { return nonce == o.nonce && records == o.records && cuts == o.cuts; }
};

// One cut of one row: the tokens of positions cut+1 .. T-1 are replaced by
// `tokens` (each differs from the one it replaces); outputs 0..cut are compared.
struct CausalCut {
  int64_t cut = 0;
  std::vector<int64_t> tokens;  // T - 1 - cut replacement tokens
};

// The cuts of one row: `row` is the model's input row (T tokens), positions
// 0..last_scored are scored. Eligible cuts: 0 .. min(last_scored, T - 2) (a
// cut needs a token after it). min(cuts, eligible) distinct cuts, sorted,
// drawn by floyd_sample from the ChaCha20 stream keyed by
// derive_key(tags::kEvalCausal, {nonce, record_leaf}); then, cut by cut, each
// replacement token = (original + 1 + uniform(vocab - 1)) mod vocab.
// Preconditions: vocab >= 2, every row token in [0, vocab); throws wit::Error otherwise.
std::vector<CausalCut> causal_cuts(ByteView nonce, const Hash32& record_leaf, const std::vector<int64_t>& row,
                                   int64_t last_scored, int64_t vocab, uint64_t cuts);

// RFC 6962 leaf of one (record, score) pair:
// H(0x00 || tags::kEvalScoreLeaf || record_leaf || le64 bits(loss) || le64 bits(accuracy)).
Hash32 eval_score_leaf(const Hash32& record_leaf, const Score& s);

// eval.json: what a trainer claims about a checkpoint on an eval set.
struct EvalCommitment {
  Hash32 run_id;
  int64_t step = 0;          // the checkpoint's step in the run
  Hash32 checkpoint_root;    // the state root the run's log has at `step`
  Hash32 eval_root;          // the eval set commitment's root (dataset order)
  uint64_t n = 0;            // examples: the eval set's records, in order
  std::string metric = kEvalMetric;
  double loss = 0, accuracy = 0;  // aggregates: means over the n examples, summed in index order as double
  Hash32 scores_root;        // RFC 6962 root (wit's H) of the n score leaves in index order
  // What the evaluation's causal check covered; absent in evals written
  // before the check existed (and then not part of the id).
  std::optional<CausalCoverage> causal;

  nlohmann::json to_json() const;  // canonical: the bytes `id()` hashes are to_json().dump()
  static EvalCommitment from_json(const nlohmann::json& j, const std::string& where);  // throws wit::Error
  static EvalCommitment load(const std::string& path);
  // H(tags::kEvalCommitment || to_json().dump()): names the eval in scores and checks.
  Hash32 id() const;
};

// eval.scores.json: every example's record leaf and score, in index order.
struct EvalScores {
  Hash32 eval_id;
  std::vector<Hash32> record_leaves;
  std::vector<Score> scores;

  nlohmann::json to_json() const;
  static EvalScores from_json(const nlohmann::json& j, const std::string& where);
  static EvalScores load(const std::string& path);
};

// The commitment of `scores` (record leaves and scores in index order) for
// the given checkpoint and eval set; fills scores_root, aggregates and n, and
// sets `scores.eval_id` to the result's id. `causal`: the coverage of the
// causal check that passed (part of the document, so of the id).
EvalCommitment commit_scores(const Hash32& run_id, int64_t step, const Hash32& checkpoint_root,
                             const Hash32& eval_root, EvalScores& scores,
                             const std::optional<CausalCoverage>& causal = std::nullopt);

// Whether `s` reproduces `e` exactly: same eval id, n examples, scores_root,
// aggregates (bit-exact, index-order double sums), and the record leaves'
// RFC 6962 root is eval_root. std::nullopt when it does; else the first reason.
Problem check_scores(const EvalCommitment& e, const EvalScores& s);

// Spot checks: seed = H(tags::kEvalCheck || eval id || le64 len(nonce) || nonce);
// indices: k distinct 0-based example indices, sorted, by floyd_sample over
// [1, n] on a ChaCha20 stream keyed by the seed, minus one.
Hash32 eval_check_seed(const Hash32& eval_id, ByteView nonce);
std::vector<uint64_t> eval_check_indices(const Hash32& seed, uint64_t n, uint64_t k);

// True when a recomputed score is within tolerance of a claimed one.
bool score_matches(const Score& claimed, const Score& recomputed);

// The guarantee of a spot check as one English sentence: "an eval that
// inflated at least F of its N scores (B examples) is caught by these k spot
// checks with probability at least P ..." (Guarantee::words() speaks of steps).
std::string eval_guarantee_words(const Guarantee& g);

struct EvalCheckItem {
  uint64_t index = 0;
  Hash32 record_leaf;              // of the record re-evaluated (read from the eval data)
  Score claimed, recomputed;
  std::vector<Hash32> score_path;  // the claimed score leaf's audit path under scores_root (the opening)
  bool pass = false;
  std::string failed;              // "" | "loss" | "accuracy" | "record" | "opening"
};

// A spot-check report (wit-eval check -o FILE).
struct EvalCheckReport {
  Hash32 eval_id, run_id, checkpoint_root;
  Bytes nonce;
  Hash32 seed;
  uint64_t n = 0, k = 0;
  std::vector<uint64_t> indices;
  std::vector<EvalCheckItem> items;  // one per index, in order
  ReportVerdict verdict = ReportVerdict::kRejected;  // certified when every item passed
  std::string reason;                // first failure, "" when certified
  Guarantee guarantee;               // make_guarantee(n, k, fraction): detection of ceil(f n) inflated scores

  nlohmann::json to_json() const;
  // Parses and re-derives the seed and the indices from the nonce (an edited
  // report is refused); checks each item's opening against `e.scores_root`
  // when `e` is given. Throws wit::Error.
  static EvalCheckReport from_json(const nlohmann::json& j, const std::string& where);
  static EvalCheckReport load(const std::string& path);
};

// Builds the report of a spot check: the indices the nonce picks among e.n,
// and for each, `reevaluate(index)` gives the record leaf read from the eval
// data and the recomputed score; the claimed score and its opening come from
// `s`. Preconditions: check_scores(e, s) passes (a commitment whose scores do
// not reproduce it is rejected before any spot check), 1 <= k <= min(n,
// kMaxEvalCheck), fraction in (0, 1], nonce of 1..kMaxEvalNonceBytes bytes;
// throws wit::Error otherwise. Items fail in the order record, opening, loss,
// accuracy; the reason is the first failing item's (eval_item_reason).
EvalCheckReport make_eval_check_report(
    const EvalCommitment& e, const EvalScores& s, ByteView nonce, uint64_t k, double fraction,
    const std::function<std::pair<Hash32, Score>(uint64_t index)>& reevaluate);
// One line for a failed item ("example 7: claimed loss 1.2 but re-evaluation
// gives 2.3"); nothing for an item that passes.
Problem eval_item_reason(const EvalCheckItem& it);

// Checks a report against the eval it claims to check: same eval id, n, seed
// and indices from its nonce, every opening verifies under scores_root, the
// claimed scores are those of `scores` (when given), verdict consistent with
// the items. Nothing when consistent; else a "no" with the first reason.
Problem check_eval_report(const EvalCheckReport& r, const EvalCommitment& e, const EvalScores* scores);

}  // namespace wit
