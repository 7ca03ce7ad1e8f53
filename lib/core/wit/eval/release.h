// What binds a released model to a run (docs/release.md): a parameters-only
// weights file is bound exactly through the parameters half of the final
// logged state root; a model behind an API is probed with fresh inputs drawn
// from a nonce the trainer does not control (the probe check), its per-token
// log-probabilities compared with the final checkpoint's. Torch-free: the
// documents, the draw, the model command's format and the comparison; the
// model side is wit/eval/release_model.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"
#include "wit/base/check.h"
#include "wit/run/safetensors.h"
#include "wit/run/state_root.h"
#include "wit/run/wlog.h"

namespace wit {

// The final state the run's log binds: its last step entry. Throws wit::Error
// when the log has no training steps.
struct LoggedFinal {
  uint64_t step = 0;
  Hash32 root;
};
LoggedFinal final_logged_state(const WitnessLog& log, const std::string& where);

// ---- exact binding of a weights file ----------------------------------------

struct ReleaseBinding {
  bool match = false;
  uint64_t step = 0;   // the final step
  Hash32 state_root;   // logged at `step`
  Hash32 params_root;  // P of the file's parameter tensors
  Hash32 optim_root;   // O of the final state (from its checkpoint, or given)
  // Why not, one line ("" on a match): the first differing tensor when the
  // final state's parameter leaves are known, else that H(P || O) is not the root.
  std::string reason;
  // {"match","step","state_root","params_root","optim_root","reason"} (what
  // `wit-sketch match --json` prints, plus "probe", which from_json ignores)
  nlohmann::json to_json() const;
  // Parses a binding and checks it is consistent: match iff
  // join_state_root(params_root, optim_root) == state_root, reason empty iff
  // match. Throws wit::Error ("invalid model binding: ...").
  static ReleaseBinding from_json(const nlohmann::json& j, const std::string& where);
};
// The verdict word of a release check, an exact binding or fresh probes:
// "match" or "no match" (probe-check reports, board.json, the site, wit-sketch).
const char* match_name(bool match);

// What a binding proves about a run, for one who has the final entry but not
// the file (the board): nothing when it binds parameters root P to the final
// state (its step and root are the final entry's and it matches), else why not.
Problem binding_problem(const ReleaseBinding& b, const LoggedFinal& fin);

// The parameter tensors of `file` (its other tensors are ignored: a full
// checkpoint is bound by its parameters too) against the final logged state:
// match iff join_state_root(P(file), optim_root) == fin.root. `final_params`
// (the final state's parameter leaves, when its checkpoint is at hand) names
// the first tensor, in name order, whose leaf differs. The caller has checked
// the file's names, dtypes and shapes against the model (bad input).
ReleaseBinding bind_release(const std::vector<TensorView>& file, const LoggedFinal& fin, const Hash32& optim_root,
                            const NamedLeaves* final_params);

// ---- fresh probes for a black-box model --------------------------------------

inline constexpr const char* kProbeCheckFormat = "wit.probe-check";
inline constexpr uint64_t kMaxProbeInputs = 4096;

// The inputs a nonce draws: `records` committed records (tree positions
// uniform over the run's data, with repetition) and `random` byte strings
// (lengths uniform in 1..max_len, bytes uniform), from a ChaCha20 stream keyed
// by H("wit/probe-check/v1" || run id || nonce). Records longer than max_len
// are cut to their first max_len bytes (the caller: context - 1, so every
// byte and the end of text are scored).
struct ProbeDraw {
  std::vector<uint64_t> indices;  // tree positions of the record inputs
  uint64_t random = 0;            // how many random strings follow them
  std::vector<std::string> random_texts;
};
ProbeDraw draw_probe_inputs(const Hash32& run_id, const Hash32& nonce, uint64_t data_n, uint64_t records,
                            uint64_t random, uint64_t max_len);

// The model command's protocol (docs/release.md, "The model command"): one
// request per line on its stdin, {"id": I, "text_hex": HEX}; one answer per
// line on its stdout, {"id": I, "logp": [L_0, ..., L_n]} with n = the text's
// length: L_t is ln p(byte t | bytes before it) for t < n, L_n ln p(end of
// text | the whole text), natural log, in any order of ids, each id once.
std::string model_requests(const std::vector<std::string>& texts);
// Parses requests (what `wit-sketch serve` reads); throws wit::Error.
std::vector<std::string> parse_model_requests(std::string_view text, const std::string& where);
// Parses the answers for texts of these lengths; throws wit::Error naming
// the first problem (not JSON lines, a missing or repeated id, a wrong count,
// a value that is not a finite number <= 0).
std::vector<std::vector<double>> parse_model_answers(std::string_view text, const std::vector<size_t>& lengths,
                                                     const std::string& where);
// One answer line, as `wit-sketch serve` writes it.
std::string model_answer(uint64_t id, const std::vector<float>& logp);

// The comparison: per input, the largest |model - reference| over its
// tokens; the check passes when every input's is within the tolerance,
// max(floor, margin x noise), noise being the largest difference between the
// checker's own two scorings of the inputs (two LibTorch thread counts).
struct ProbeCheckReport {
  Hash32 run_id, nonce, state_root;
  uint64_t step = 0;
  uint64_t records = 0, random = 0;
  double noise = 0, floor = 0, margin = 0, tolerance = 0, fraction = 0;
  std::vector<double> worst;  // per input, records first
  std::string model_cmd;
  bool pass() const;
  // The first input over the tolerance, or -1.
  int64_t first_failure() const;
  std::string guarantee() const;  // one sentence
  // The report (docs/release.md): the fields above, "differences" (worst,
  // per input), and what they give: worst (the largest), first_failure,
  // failures, verdict, guarantee.
  nlohmann::json to_json() const;
  // Parses and checks a report: every field, the tolerance is
  // max(floor, margin x noise), and the derived fields are what the
  // differences give. Throws wit::Error ("invalid probe check: ...").
  static ProbeCheckReport from_json(const nlohmann::json& j, const std::string& where);
  static ProbeCheckReport load(const std::string& path);
};
// The largest |a - b| over the tokens of one input.
double max_abs_difference(const std::vector<double>& a, const std::vector<float>& b);

}  // namespace wit
