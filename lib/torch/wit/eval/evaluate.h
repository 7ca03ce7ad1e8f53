// Certified evaluation with the model: the per-example scores of a checkpoint
// (bound by its root in the run's log) on a committed eval set, the eval
// commitment built from them (wit-eval run), and the spot check that
// re-evaluates k examples a nonce picks (wit-eval check). Torch-free header;
// the documents are in wit/eval/eval.h, the format in docs/eval.md.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "wit/eval/eval.h"
#include "wit/run/manifest.h"
#include "wit/model/state.h"

namespace wit {

// The score of one record under the state's weights: make_rows for the record
// alone (a batch of one row, so a score never depends on batch neighbours),
// target_logp; loss = -(mean over the mask's positions of the log-probability,
// summed in position order as double), accuracy = the fraction of those
// positions whose argmax logit is the target.
Score score_record(const TrainState& state, const std::string& record);
// A causal check that failed: at cut `cut` of example `example` (its index in
// the eval set), the output at `position` (<= cut; the prediction of the
// record's token `position`, the end of record after its last) changed when
// the tokens after the cut were replaced.
struct CausalFailure {
  uint64_t example = 0;
  Hash32 record_leaf;
  int64_t cut = 0, position = 0;
  // "the model reads the future: example 3 (record leaf ab12…): its output at
  // position 17 changed when the tokens after position 20 were replaced"
  std::string message() const;
};
// score_record and, in the same pass, the causal check of the record at the
// cuts causal_cuts(nonce, record_leaf, ...) draws (`cuts` per record, nonce
// not empty): one more forward pass per cut, whose logits at positions
// 0..cut must equal the score's bit for bit. `failure` is set (example 0;
// the caller numbers it) on the first position that differs.
struct CausalScore {
  Score score;
  std::optional<CausalFailure> failure;
};
CausalScore score_record_causal(const TrainState& state, const std::string& record, const Hash32& record_leaf,
                                ByteView nonce, uint64_t cuts);
// Scores of `records` in order; `threads` LibTorch threads (0 = leave as is).
// `on_done` (may be empty) is called after each record.
std::vector<Score> score_records(const Manifest& mf, const TrainState& state, const std::vector<std::string>& records,
                                 unsigned threads, const std::function<void()>& on_done = {});

// A checkpoint of a run, bound by its root in the run's log.
struct EvalTarget {
  Manifest mf;
  Hash32 run_id;
  int64_t step = 0;
  Hash32 root;  // the checkpoint root the log has at `step`
  TrainState state;
};
// Loads the checkpoint `checkpoint` (a file; "" = RUN's checkpoint at `step`,
// or, with no step, at the log's final entry) and checks that the run's log
// has its root at its step (the genesis' init root at step 0). With no step,
// a parameters-only file (a released model, no "wit.step") is accepted when
// it is bound exactly to the final logged state (release_model.h), and is
// evaluated as that state. Throws wit::Error.
EvalTarget load_eval_target(const std::string& run, const std::string& checkpoint, std::optional<int64_t> step,
                            const std::string& device = "cpu");

struct EvalOptions {
  std::string run;                   // RUN directory
  std::string checkpoint;            // "" = the run's final checkpoint
  std::string commit_path;           // the eval set's commitment (wit-commit)
  std::string index_path;            // its index; "" = not checked
  std::vector<std::string> files;    // the eval set's files
  unsigned threads = 0;
  std::string device = "cpu";
  bool quiet = false;                // no progress bar
  // The causal check (docs/eval.md): cut points drawn from this nonce (empty
  // = wit-eval run's default, the checkpoint root's 32 bytes; check: the spot
  // check's nonce), `causal_cuts` per record, 1..kMaxCausalCuts.
  Bytes causal_nonce;
  uint64_t causal_cuts = 1;
};

struct EvalRun {
  EvalCommitment eval;  // with eval.causal, the coverage of the check that passed
  EvalScores scores;
  // Set when the model reads the future: the first failing record and
  // position; `eval` and `scores` are then empty (nothing is committed).
  std::optional<CausalFailure> refused;
};
// wit-eval run: scores every record of the eval set, causal check included
// (every record, causal_cuts cuts each), and commits to them.
EvalRun run_eval(const EvalOptions& opt);

// The eval scores file as wit writes it: the document of EvalScores::to_json,
// one score per line.
std::string dump_eval_scores(const EvalScores& s);

struct EvalCheckOptions {
  EvalOptions data;        // run, checkpoint (default: RUN's at the eval's step), eval set
  Bytes nonce;
  std::optional<uint64_t> k;
  std::optional<double> confidence, fraction;  // k from confidence needs fraction; fraction 0.05 with k alone
};
struct EvalCheck {
  // The report, when the commitment is consistent enough to spot-check.
  std::optional<EvalCheckReport> report;
  // Why the eval is rejected without spot checks ("" when there is a report):
  // its scores do not reproduce it, or its checkpoint is not the one the run's
  // log has at its step; or, after them, the model failed the causal check
  // on a re-evaluated example (cuts from the spot check's nonce).
  std::string rejected;
};
// wit-eval check. Throws wit::Error on bad input (files that do not match,
// the eval of another run, a bad request).
EvalCheck check_eval(const EvalCommitment& e, const EvalScores& s, const EvalCheckOptions& opt);

}  // namespace wit
