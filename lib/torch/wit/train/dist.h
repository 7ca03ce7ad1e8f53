// Private to wit_torch: data-parallel training over a c10d process group
// (ProcessGroupGloo, TCPStore rendezvous), behind a torch-free interface so
// the trainer loop stays torch-free. See docs/distributed.md.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wit/run/shards.h"
#include "wit/model/state.h"
#include "wit/run/state_root.h"

namespace wit {

// torchrun's environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
struct DistEnv {
  int rank = 0, world = 1;
  std::string addr = "127.0.0.1";
  int port = 0;
  double timeout_s = 60;  // rendezvous and every collective
};
// World size 1 when WORLD_SIZE is unset; wit::Error on malformed values.
DistEnv dist_env_from_environment(double timeout_s);

class Dist {
 public:
  // Rendezvous through the TCPStore at addr:port (rank 0 serves it).
  static std::unique_ptr<Dist> connect(const DistEnv& env);
  ~Dist();
  int rank() const;
  int world() const;
  // This rank's rows [lo, hi) of a batch of B: contiguous, in rank order,
  // sizes differing by at most one (the first B mod W ranks get one more).
  std::pair<int64_t, int64_t> rows(int64_t B) const;
  // Every rank's value, in rank order (collective).
  std::vector<uint64_t> gather_u64(uint64_t mine);
  // Rank 0's bytes on every rank.
  void broadcast(std::string& bytes);
  // THE training step, data parallel: this rank's rows, gradients summed
  // over the ranks, per-example losses gathered in batch order; `seed` keys
  // the dropout of a run that has it (train_step_split).
  // Fully sharded, `own_batch` (attack 24 only) is FullShardComm::own_batch.
  StepOutput step(const Manifest& mf, TrainState& state, const BatchRecords& batch, ByteView seed,
                  const BatchRecords* own_batch = nullptr);
  // Attack 24 only: a change to the parameters this rank serves in gathers at a step.
  void set_serve_fn(std::function<void(int64_t step, int rank, float* data, size_t n)> fn);

  // Sharded optimizer state (ZeRO-1): the parameters, in name order, are cut
  // into W contiguous ranges balanced by element count; rank r keeps AdamW's
  // m and v for range r only (the others' moments are freed here), updates
  // those parameters and sends them to the other ranks after each step.
  void shard(TrainState& state);
  bool sharded() const;
  // Fully sharded state (--shard=full): the plan of the run's manifest. Every
  // rank checks it makes the same plan itself (else all stop, before step 1),
  // then keeps only its range: parameters, moments (and, in the step,
  // gradients). step() then gathers each unit's parameters from their owners
  // for its compute and frees them after, and reduce-scatters gradients to
  // their owners (step.h, train_step_full). Checkpoints are sharded.
  void full_shard(TrainState& state, const ShardPlan& plan);
  bool full() const;
  // The probe fingerprint of the state, on rank 0 (the others return nothing):
  // collective when fully sharded (the units are gathered for it).
  std::vector<float> probe(const Manifest& mf, TrainState& state, const BatchRecords& probe);
  // Only the ranges, for the sketches (data parallel keeps every moment).
  void partition(const TrainState& state);
  // The sketches of the state, data parallel or sharded: each rank sketches
  // its range (global indices), then one all-reduce of the 3k double
  // accumulators, rounded once to binary32. Collective; after partition().
  TrainState::Sketches sketches(const Manifest& mf, const TrainState& state);
  // A sharded checkpoint for `path` (RUN/ckpt/step-NNNNNN.safetensors): each
  // rank writes its shard (its parameters, their moments; rank 0 also
  // wit.step) as step-NNNNNN.shard-R-of-W.safetensors, the tensor leaf
  // hashes are gathered, and rank 0 writes step-NNNNNN.index.json binding
  // the shards to the checkpoint root, which it returns (the others return
  // an all-zero hash). Collective.
  Hash32 checkpoint(const TrainState& state, const std::string& path);
  // The state root (state_root.h) of the whole state: each rank hashes the
  // tensors it owns, rank 0 combines the gathered tensor leaves into the root
  // a single process computes for the same state (the others return an
  // all-zero hash). Collective; after partition() or shard().
  Hash32 state_root(const TrainState& state);

  // What this rank sent, for the bench: gradient all-reduce vs witnesses
  // (the per-example losses for the log), in bytes; time in collectives.
  struct Traffic {
    uint64_t grad_bytes = 0, witness_bytes = 0, steps = 0;
    uint64_t param_bytes = 0;  // fully sharded: the parameter gathers
    double comm_seconds = 0;
  };
  const Traffic& traffic() const;

  struct Impl;

 private:
  struct Owned;
  void owned(const TrainState& state, Owned& o) const;
  NamedLeaves gather_leaves(const Owned& o);
  explicit Dist(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The state of a sharded checkpoint: for RUN/ckpt/step-NNNNNN.safetensors,
// step-NNNNNN.index.json and the shards it names, assembled; nothing when
// there is no index; wit::Error when a shard is missing, holds other
// tensors than the index says, or the assembled root is not the index's.
std::optional<TrainState> load_sharded_checkpoint(const ModelConfig& c, const std::string& path,
                                                  const std::string& device);
// A run's checkpoint RUN/ckpt/step-NNNNNN.safetensors as training wrote it:
// that file, or (a sharded run) the state its shards add up to; nothing when
// neither is there. Resume, replay and evaluation read checkpoints through it.
std::optional<TrainState> load_run_checkpoint(const ModelConfig& c, const std::string& path,
                                              const std::string& device);
// The checkpoint of `step` exactly as the log binds it: present, readable, of
// that step and with the logged state root; nothing otherwise (missing,
// truncated, overwritten), so callers fall back to an older checkpoint.
std::optional<TrainState> logged_checkpoint(const ModelConfig& c, const std::string& path, int64_t step,
                                            const Hash32& state_root, const std::string& device);

}  // namespace wit
