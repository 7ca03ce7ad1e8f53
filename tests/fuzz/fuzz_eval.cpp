// Fuzz target for the certified-evaluation parsers (docs/eval.md): eval.json
// (EvalCommitment), the scores file (EvalScores) and spot-check reports
// (EvalCheckReport). Every input is rejected with a wit::Error or accepted;
// an accepted document survives to_json() and a re-parse unchanged, and an
// accepted report's seed, indices and verdict are the ones its nonce and items give.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/eval/eval.h"

#include "json_round_trip.h"
#include "outcome.h"

namespace {

constexpr const char* kTarget = "fuzz_eval";
[[noreturn]] void broken(const char* what, const nlohmann::json& doc) { wit_fuzz::broken(kTarget, what, doc); }
template <class T>
void round_trip(const nlohmann::json& j, const T& parsed) {
  wit_fuzz::round_trip(kTarget, j, parsed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return wit_fuzz::note('j'), 0;
  // Every parser sees every input: each must refuse the others' documents.
  try {
    const wit::EvalCommitment e = wit::EvalCommitment::from_json(j, "fuzz");
    if (e.n < 1 || e.metric != wit::kEvalMetric) broken("accepted an eval without examples or of another metric", j);
    if (e.id() != wit::EvalCommitment::from_json(e.to_json(), "fuzz").id()) broken("the eval id is not stable", j);
    round_trip(j, e);
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
  try {
    const wit::EvalScores s = wit::EvalScores::from_json(j, "fuzz");
    if (s.scores.empty() || s.scores.size() != s.record_leaves.size()) broken("accepted scores without examples", j);
    round_trip(j, s);
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
  try {
    const wit::EvalCheckReport r = wit::EvalCheckReport::from_json(j, "fuzz");
    if (r.seed != wit::eval_check_seed(r.eval_id, wit::ByteView(r.nonce)) ||
        r.indices != wit::eval_check_indices(r.seed, r.n, r.k) || r.items.size() != r.k)
      broken("accepted a report whose seed or indices are not its nonce's", j);
    bool all_pass = true;
    for (const auto& it : r.items) all_pass = all_pass && it.pass;
    if ((r.verdict == wit::ReportVerdict::kCertified) != all_pass) broken("accepted a verdict its items do not give", j);
    round_trip(j, r);
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
  return 0;
}
