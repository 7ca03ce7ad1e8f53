// Replay challenges: the trainer's response bundle (the state before each run
// of consecutive challenged steps, log entries with inclusion proofs, batch records with
// proofs into the data commitment), the verifier's check of it by replaying
// each step with the shared training step, and the measurement of replay
// noise that the verifier's thresholds come from. Formats: docs/replay.md.
#pragma once
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/run/bundle.h"
#include "wit/data/commitment.h"
#include "wit/run/challenge.h"
#include "wit/base/error.h"
#include "wit/run/report.h"
#include "wit/run/run_config.h"
#include "wit/model/state.h"

namespace wit {

struct ResponseOptions {
  std::string run;                  // RUN directory
  std::vector<std::string> files;   // data files (default: RUN/data.json)
  std::string commit_path, index_path;
  unsigned threads = 0;             // 0 = all cores (as training used by default)
  std::string device = "cpu";
  bool quiet = false;
  // The data's budget (wit-replay --memory; Dataset, the bounded way).
  uint64_t data_memory = kDefaultCommitMemory;
  // The step the trainer regenerates states with (default: THE training
  // step). A trainer answers with the states it logged; one that trained
  // with another step must regenerate with it, or its states miss their
  // logged roots. The attack suite's forger uses this.
  std::function<StepOutput(const Manifest&, TrainState&, const BatchRecords&, int64_t step)> step_fn;
  // Likewise the initial state it started from (default: generated from the seed).
  std::function<TrainState(const Manifest&, ByteView seed)> init_fn;
  // The start and end states of every transition (a response for a tolerant
  // verifier); by default one start state per run of consecutive replayed
  // transitions, since an exact verifier checks the end by its root and a
  // replay that reproduced it starts the next transition.
  bool end_states = false;
};

// A response's manifest.json parsed once (issue 39 item 4): the manifest, or
// why the member is none (`error`: check 1's reason, "manifest is not valid
// json" or Manifest::from_json's error, rethrown where it is needed); neither
// when the bundle has no manifest.json (it answers no challenge then).
struct ResponseManifest {
  std::optional<Manifest> manifest;
  std::exception_ptr error;
  static ResponseManifest parse(const std::string& text);
  // The manifest, or throws its error.
  const Manifest& get() const;
};

// A response bundle as wit-replay verify and the board read it: decoded once
// and its manifest parsed once, by the decode's member limit (what each
// member may hold, so a bundle declaring a huge member is refused before
// anything is allocated: a state by the manifest's parameter count, 12 bytes
// each plus its header; a log entry by its format; anything else a fixed
// cap) or, where no member asked, right after; handed to bundle_config,
// pin_recorded_kernels and verify_response.
// `hashed`: decoded with SpooledBundle::open_hashed (the board files, and
// audits, the bytes it verified by the digest of that one pass; `seen`: what
// a refused decode hashed, as open_hashed's).
struct OpenedResponse {
  SpooledBundle bundle;
  ResponseManifest manifest;
  static OpenedResponse open(const std::string& path, bool hashed = false, FileDigest* seen = nullptr);
};

// Writes the response to `c` from a run directory to the bundle `path` ("-":
// stdout), member by member: one regenerated state in memory at a time,
// streamed into the bundle from its tensors. Throws wit::Error when the run
// cannot answer (head not in RUN/run.heads, data missing, ...); nothing is
// left at `path` then.
void write_response(const Challenge& c, const ResponseOptions& opt, const std::string& path);

// How a verifier judges a replayed transition (docs/replay.md, "Modes").
//  kExact (the default): the replay runs under the run's recorded configuration
//    and its state root must be the logged root of the state after the step.
//    One replay per transition, in step order; the response needs only the
//    start of each run of consecutive replayed transitions.
//  kTolerant: each tensor's distance from the logged state after the step, in
//    rounding floors, within margin x max(1, that tensor's own noise measured
//    on that same transition); the response carries the end states too.
enum class ReplayMode { kExact, kTolerant };
const char* replay_mode_name(ReplayMode m);  // "exact", "tolerant"

struct VerifyOptions {
  ReplayMode mode = ReplayMode::kExact;
  unsigned threads = 0;     // tolerant: the replay's thread count; exact: the recorded count runs
  std::string device = "cpu";
  double margin = 10;       // tolerant: threshold = margin x max(1, the tensor's noise) rounding floors
  bool quiet = false;
};

// The bundle does not answer this challenge at all, so no verdict on the run
// can come from it: it is another run's (run id differs from the challenged
// head's), another challenge's (its challenge.json has another seed or head),
// or lacks its manifest, seed or challenge. wit-replay verify and the board
// exit 2 with it and write no report (docs/replay.md).
class NotAnAnswer : public Error {
 public:
  using Error::Error;
};

// The configuration a bundle records (its config.json member, bound to the
// run by its run id): std::nullopt when it has none. Throws NotAnAnswer
// when the member is invalid or another run's.
std::optional<RunConfig> bundle_config(const OpenedResponse& r);

// Before an exact verify_response in a program that has not yet touched
// LibTorch: makes this process run under the bundle's recorded kernels
// (re-executing it with argv if the environment differs: run_config.h).
// Nothing happens when the bundle records no configuration.
void pin_recorded_kernels(const OpenedResponse& r, char** argv);

// A batch the verifier proved (check 8) for a transition it checked: the
// step it replays, and per record the position in the data tree that the
// verifier's data order gives and the record's bytes, proved to be the
// committed record there. Each step once, in the order of the batch/
// members' names; only batches some transition was checked with (a batch/
// member no transition asked for is not in it). What the board checks
// against its benchmark (docs/board.md, "Overlap").
struct VerifiedBatch {
  int64_t step = 0;
  std::vector<uint64_t> positions;
  BatchRecords records;
};

// Verifies a response against a challenge. The response is an
// OpenedResponse (its container already checked whole, its manifest parsed
// once): states are read from it one at a time as the replay walks the
// challenged steps. Everything the trainer answered wrongly (missing
// members, bad proofs, states or replays that do not match) rejects the run
// with the reason in the report. Throws NotAnAnswer (above); in exact mode
// throws wit::Error when the bundle records no configuration or this process
// does not run under it (another kernel set, BLAS kernel, LibTorch version or
// device: verify with kTolerant there). Check 1 takes the manifest's one
// parse and still checks its canonical form against the member's text.
// `batches`: when given, filled with the batches check 8 proved (above).
ReplayReport verify_response(const OpenedResponse& r, const Challenge& c, const VerifyOptions& opt,
                             std::vector<VerifiedBatch>* batches = nullptr);

// The replay noise of one transition, tensor by tensor: the step replayed
// from `before` with threads_a (A), then with threads_b and with the batch's
// gradient summed from two shares, each compared with A; per tensor (and per
// scalar field: losses, grad_norm, probe) the largest difference in rounding
// floors. Returns replay A's state and outputs with it. `seed` is the run's
// (a run with dropout needs it); such a run's noise has no two-share replay.
struct TransitionNoise {
  std::map<std::string, double> floors;  // tensor name or scalar field -> noise in rounding floors
};
TransitionNoise measure_transition_noise(const Manifest& mf, const TrainState& before, const BatchRecords& batch,
                                         unsigned threads_a, unsigned threads_b, const std::optional<BatchRecords>& probe,
                                         TrainState* replay_a = nullptr, StepOutput* out_a = nullptr,
                                         std::optional<std::vector<float>>* probe_a = nullptr, ByteView seed = {});

}  // namespace wit
