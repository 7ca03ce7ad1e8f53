// Replay challenges: the trainer's response bundle (states before the
// challenged steps, log entries with inclusion proofs, batch records with
// proofs into the data commitment), the verifier's check of it by replaying
// each step with the shared training step, and the measurement of replay
// noise that the verifier's thresholds come from. Formats: docs/replay.md.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/bundle.h"
#include "wit/challenge.h"
#include "wit/report.h"
#include "wit/state.h"

namespace wit {

struct ResponseOptions {
  std::string run;                  // RUN directory
  std::vector<std::string> files;   // data files (default: RUN/data.json)
  std::string commit_path, index_path;
  unsigned threads = 0;             // 0 = all cores (as training used by default)
  std::string device = "cpu";
  bool quiet = false;
  // The step the trainer regenerates states with (default: THE training
  // step). A trainer answers with the states it logged; one that trained
  // with another step must regenerate with it, or its states miss their
  // logged roots. The attack suite's forger uses this.
  std::function<StepOutput(const Manifest&, TrainState&, const BatchRecords&, int64_t step)> step_fn;
  // Likewise the initial state it started from (default: generated from the seed).
  std::function<TrainState(const Manifest&, ByteView seed)> init_fn;
};

// What each member of a response bundle can hold, so a bundle declaring a
// huge member is refused before anything is allocated: a state by the
// manifest's parameter count (12 bytes each, plus its header), a log entry by
// its format, anything else by a fixed cap.
MemberLimit response_member_limit();

// Writes the response to `c` from a run directory to the bundle `path` ("-":
// stdout), member by member: one regenerated state in memory at a time,
// streamed into the bundle from its tensors. Throws wit::Error when the run
// cannot answer (head not in RUN/run.heads, data missing, ...); nothing is
// left at `path` then.
void write_response(const Challenge& c, const ResponseOptions& opt, const std::string& path);

struct VerifyOptions {
  unsigned threads = 0;
  std::string device = "cpu";
  std::optional<Calibration> calibration;  // none: calibrate on the bundle's first steps
  int calibration_steps = 0;                // 0: measure the noise of every transition on itself
  double margin = 10;                       // threshold = margin x max(1, noise) rounding floors
  bool quiet = false;
};


// Verifies a response bundle against a challenge. The bundle is read as a
// SpooledBundle (opened with response_member_limit(); its container already
// checked whole): states are read from it one at a time as the replay walks
// the challenged steps, so at most four are in memory (the two a transition
// joins, and two replays of it while its noise is measured). Everything the
// trainer answered wrongly (missing members, bad proofs, states or replays
// outside the thresholds) rejects the run with the reason in the report.
ReplayReport verify_response(const SpooledBundle& b, const Challenge& c, const VerifyOptions& opt);

// Replays the bundle's challenged steps under two thread counts and records
// the differences (the noise honest replays on other hardware must stay within).
Calibration calibrate(const SpooledBundle& b, const Challenge& c, unsigned threads_a, unsigned threads_b,
                      int max_steps, const std::string& device);

}  // namespace wit
