// The reference trainer: trains the GPT with witnesses into a run directory
// (manifest, witness log, signed heads, checkpoints), resumable after a crash.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "wit/model/state.h"

namespace wit {

struct TrainOptions {
  std::string config_path;   // the user's training config
  std::string model_path;    // a TorchScript model (docs/model.md); empty = the built-in GPT
  std::string commit_path, index_path;
  std::vector<std::string> files;  // the committed data files, in order
  // --memory: the data's budget (wit-commit's SIZE; the check spills past it,
  // files past an eighth of it are read on demand: docs/commitment.md).
  std::string data_memory = "1G";
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

  // Data parallel (docs/distributed.md): with WORLD_SIZE > 1 in the
  // environment (and RANK, MASTER_ADDR, MASTER_PORT, as torchrun sets them)
  // this process is one rank of a c10d (Gloo) group; rank 0 writes the run.
  double dist_timeout = 60;  // seconds: rendezvous and every collective
  // Sharded optimizer state (ZeRO-1): each rank keeps, updates, sketches and
  // checkpoints its own range of the parameters' AdamW moments.
  bool shard = false;
  // Fully sharded state (--shard=full, FSDP's FULL_SHARD): each rank keeps
  // only its range of parameters, gradients and moments; the plan (ranges,
  // units) goes into the manifest. docs/distributed.md.
  bool shard_full = false;
  // Test-only: changes the records this rank trains on at `step` (its rows
  // are [lo, hi) of `batch`); the log still declares the committed batch.
  std::function<void(int64_t step, int rank, int64_t lo, int64_t hi, BatchRecords& batch)> rows_fn;
  // Test-only (attack 24, --shard=full): the batch whose rows give this rank
  // the gradients of the parameters it owns at `step` (the ones it sends the
  // other owners stay those of the declared rows), and a change to the
  // parameter values it serves the others in a gather (its own copy stays).
  std::function<void(int64_t step, int rank, int64_t lo, int64_t hi, BatchRecords& batch)> shard_rows_fn;
  std::function<void(int64_t step, int rank, float* data, size_t n)> serve_fn;
  std::string stats_path;  // when set, rank 0 writes timing and traffic as JSON here
  // Benchmarks only: false trains the same steps without witnesses (no log
  // entries, heads, checkpoints or seed reveal after the genesis), so the
  // cost of witnessing can be measured against the same run without it.
  bool witnesses = true;
};

struct TrainSummary {
  int64_t first_step = 0, last_step = 0, steps = 0;
  bool resumed = false, finished = false;
  float final_loss = 0;
  double seconds = 0;
  int rank = 0, world = 1;  // this process's rank, and the number of ranks
  // Over the steps run: seconds in the whole loop (loop_seconds, in all),
  // per step in the step itself and in the witnesses (sketches, batch root,
  // entry, probe, checkpoint, head); bytes per step this rank sent for the
  // gradient all-reduce and for witnesses.
  double step_seconds = 0, witness_seconds = 0, loop_seconds = 0;
  double grad_bytes = 0, witness_bytes = 0;
  double param_bytes = 0;     // fully sharded: parameter gathers, per rank per step
  uint64_t loop_peak_rss = 0; // bytes: this rank's peak resident memory during the training loop
};

// Throws wit::Error on bad input; see man/wit-train.1 for the run directory.
TrainSummary train(const TrainOptions& opt);

// --nproc N: unless RANK is already set, re-executes this program (same
// argv) as N local ranks with RANK, WORLD_SIZE, MASTER_ADDR (default
// 127.0.0.1) and MASTER_PORT (default: a free port) set, waits for them, and
// returns the exit status: 0, or the first failing rank's (a rank killed by a
// signal is reported on stderr and gives 2); the other ranks are then
// stopped. Returns nothing when N <= 1 or this process is a rank: train here.
std::optional<int> launch_local_ranks(unsigned nproc, char** argv);

}  // namespace wit
