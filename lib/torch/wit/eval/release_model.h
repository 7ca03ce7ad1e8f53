// The model side of binding a released model to a run (docs/release.md): a
// weights file loaded and bound exactly to the final logged state, the
// per-token log-probabilities of a text (what a black-box model is asked
// for), and the probe check of a model behind a command. Torch-free header;
// the documents and the comparison are in wit/eval/release.h.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "wit/base/bytes.h"
#include "wit/run/manifest.h"
#include "wit/eval/release.h"
#include "wit/run/runlog.h"
#include "wit/model/state.h"

namespace wit {

struct ReleasedModel {
  TrainState state;        // the file's parameters (zero moments, step 0)
  ReleaseBinding binding;  // against the final logged state
};
// Loads a released parameters-only file (or a full checkpoint: its
// parameters are what is bound) with the run's model: the names, dtypes and
// shapes must be the model's (else wit::Error, bad input). The optimizer
// root of the final state is `optim_root` when given (from an earlier match
// report; an auditor without the checkpoint), else from the run's final
// checkpoint, which must carry the logged root (it also names the first
// differing tensor).
ReleasedModel load_released_model(const std::string& run, const std::string& path,
                                  const std::optional<Hash32>& optim_root, const std::string& device = "cpu");

// Natural-log probabilities of each byte of `text` given the bytes before it,
// then of the end of text: text.size() + 1 values. One row, so a text's
// values never depend on others'. wit::Error if the text does not fit the
// context with its end (size > context - 1).
std::vector<float> text_logps(const TrainState& state, const std::string& text);

struct ProbeCheckOptions {
  std::string run;
  Hash32 nonce;
  uint64_t records = 48, random = 16;
  std::string model_cmd;        // /bin/sh -c; requests on stdin, answers on stdout
  double timeout_s = 300;
  double floor = 1e-3;          // nats per token
  double margin = 10;
  double fraction = 0.05;       // the guarantee's fraction of deviating inputs
  unsigned threads = 0, threads_b = 0;  // the checker's two scorings (0: 1 and all cores)
  std::string device = "cpu";
  RunDataFiles data;            // default: RUN/data.json
};
// Draws the inputs, asks the command, scores them with the run's final
// checkpoint (bound by the logged root) twice for the noise, compares.
// Throws wit::Error on bad input, including a command that fails, times out
// or answers malformed lines.
ProbeCheckReport probe_check(const ProbeCheckOptions& o);

}  // namespace wit
