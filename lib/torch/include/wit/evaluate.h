// Certified evaluation with the model: the per-example scores of a checkpoint
// (bound by its root in the run's log) on a committed eval set, the eval
// commitment built from them (wit-eval run), and the spot check that
// re-evaluates k examples a nonce picks (wit-eval check). Torch-free header;
// the documents are in wit/eval.h, the format in docs/eval.md.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "wit/eval.h"
#include "wit/manifest.h"
#include "wit/state.h"

namespace wit {

// The score of one record under the state's weights: make_rows for the record
// alone (a batch of one row, so a score never depends on batch neighbours),
// target_logp; loss = -(mean over the mask's positions of the log-probability,
// summed in position order as double), accuracy = the fraction of those
// positions whose argmax logit is the target.
Score score_record(const TrainState& state, const std::string& record);
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
};

struct EvalRun {
  EvalCommitment eval;
  EvalScores scores;
};
// wit-eval run: scores every record of the eval set and commits to them.
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
  // log has at its step.
  std::string rejected;
};
// wit-eval check. Throws wit::Error on bad input (files that do not match,
// the eval of another run, a bad request).
EvalCheck check_eval(const EvalCommitment& e, const EvalScores& s, const EvalCheckOptions& opt);

}  // namespace wit
