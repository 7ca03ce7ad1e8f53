// The full training state (parameters, AdamW moments, step) behind a
// torch-free interface, with its checkpoint form and its witnesses.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "wit/base/bytes.h"
#include "wit/run/manifest.h"
#include "wit/run/safetensors.h"

namespace wit {

class TrainState {
 public:
  TrainState();
  ~TrainState();
  TrainState(TrainState&&) noexcept;
  TrainState& operator=(TrainState&&) noexcept;

  // Parameters from the seed (model_spec.h), zero moments, step 0.
  static TrainState initial(const ModelConfig& c, ByteView seed, const std::string& device = "cpu");
  // From checkpoint tensors: exactly the expected names, dtypes and shapes, or
  // wit::Error. With `params_only`, a released model (parameters alone) is
  // accepted too, with zero moments and step 0.
  static TrainState from_tensors(const ModelConfig& c, const std::vector<TensorView>& tensors,
                                 const std::string& where, const std::string& device = "cpu",
                                 bool params_only = false);
  static TrainState load(const ModelConfig& c, const std::string& path, const std::string& device = "cpu",
                         bool params_only = false);
  // Whether the state came from parameters alone (no optimizer state).
  bool params_only() const;
  TrainState clone() const;

  int64_t step() const;
  // Views of every tensor in checkpoint naming (on the CPU; valid until the state changes).
  std::vector<TensorView> tensors() const;
  Hash32 root() const;
  void save(const std::string& path) const;

  // Sketches of W (params), m and v, each k floats, global index over params in name order.
  struct Sketches {
    std::vector<float> w, m, v;
  };
  Sketches sketches(const Manifest& mf) const;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// Record bytes of one batch, in batch order.
using BatchRecords = std::vector<std::string>;

struct StepOutput {
  float lr = 0, mean_loss = 0, grad_norm = 0;
  std::vector<float> losses;  // per example, of the weights before the step
};

// THE training step, shared by wit-train and wit-replay: forward on the batch,
// per-example losses, backward, grad norm and clipping, AdamW with the
// manifest's schedule at `state.step() + 1`. Advances the state by one step.
// With the manifest's micro_batch, the batch goes forward and backward in
// micro-batches whose gradients are summed before the one update. `seed` is
// the run's seed (32 bytes), needed by a run with dropout, which draws its
// masks from it, the step and the micro-batch (wit::Error without it);
// other runs ignore it. docs/training.md.
StepOutput train_step(const Manifest& mf, TrainState& state, const BatchRecords& batch, ByteView seed = {});

// A data-parallel step of `world` ranks computed in one process, bit for bit
// what the ranks compute for world <= 2: each rank's share forward and
// backward on its own (the same shapes and operations as on that rank), the
// gradients summed in rank order (for two ranks a + b, which is what the
// all-reduce gives), then the one update. Lets a trainer regenerate the states
// of a distributed run without its cluster. For more ranks the all-reduce's
// ring order is not reproduced, and the result may differ by rounding.
StepOutput train_step_emulating(const Manifest& mf, TrainState& state, const BatchRecords& batch, int world,
                                ByteView seed = {});

// The probe fingerprint: per-token log-probabilities of the probe records
// under the state's weights, count-sketched to probe_dim floats.
std::vector<float> probe_fingerprint(const Manifest& mf, const TrainState& state, const BatchRecords& probe);

// Sets LibTorch's intra-op threads (0 = leave as is).
void set_torch_threads(unsigned n);
std::string torch_version();
bool cuda_available();

}  // namespace wit
