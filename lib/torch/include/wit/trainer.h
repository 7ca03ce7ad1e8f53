// The reference trainer: trains the GPT with witnesses into a run directory
// (manifest, witness log, signed heads, checkpoints), resumable after a crash.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "wit/state.h"

namespace wit {

struct TrainOptions {
  std::string config_path;   // the user's training config
  std::string commit_path, index_path;
  std::vector<std::string> files;  // the committed data files, in order
  std::string out_dir;       // RUN
  std::string key_path;      // trainer's Ed25519 key; generated as RUN/trainer.key when empty
  std::string device = "cpu";
  unsigned threads = 0;      // LibTorch intra-op threads (0 = all cores)
  bool quiet = false;
  int64_t stop_after = 0;    // stop after this step without finishing (0 = run to the end)

  // The training step and the initial state, replaceable: a trainer with its
  // own step still gets witnessed by this loop. Empty = wit's own (train_step,
  // TrainState::initial). The attack suite's forging tool uses these to build
  // dishonest runs that log as if they were honest.
  std::function<StepOutput(const Manifest&, TrainState&, const BatchRecords& declared, int64_t step)> step_fn;
  std::function<TrainState(const Manifest&, ByteView seed)> init_fn;
};

struct TrainSummary {
  int64_t first_step = 0, last_step = 0, steps = 0;
  bool resumed = false, finished = false;
  float final_loss = 0;
  double seconds = 0;
};

// Throws wit::Error on bad input; see man/wit-train.1 for the run directory.
TrainSummary train(const TrainOptions& opt);

}  // namespace wit
