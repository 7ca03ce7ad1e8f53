// Private to wit_torch: THE training step with its data-parallel seam. The
// public train_step (state.h) is the world-size-1 case of train_step_split:
// no split, no reduction. dist.cpp passes a split for data-parallel ranks.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <utility>
#include <vector>

#include "wit/state.h"

namespace wit {

// One rank's part of a data-parallel step.
struct StepSplit {
  int64_t lo = 0, hi = 0;  // this rank's rows [lo, hi) of the batch
  // Sums the ranks' gradients in place (each rank's are of its rows' loss / B).
  std::function<void(std::vector<torch::Tensor>& grads)> reduce_grads;
  // Every rank's per-example losses, concatenated in rank (= batch) order.
  std::function<std::vector<float>(const std::vector<float>& mine)> gather_losses;
  // Sharded optimizer state (ZeRO-1): the parameters (name order) whose
  // AdamW update this rank computes (empty = all), and the exchange that
  // gives every rank the updated parameters afterwards.
  std::vector<bool> owned;
  std::function<void()> after_update;
};

// The step on `batch` (all B records, in batch order); with a split, this
// rank computes the rows [lo, hi) only, and the gradient and the losses are
// completed across ranks before clipping and AdamW. split == nullptr is the
// single-process step, bit for bit.
// `seed` is the run's seed: a run with dropout (Manifest::random_step) keys
// its generator by it, the step and each forward's first row (dropout_seed);
// other runs ignore it (it may be empty).
StepOutput train_step_split(const Manifest& mf, TrainState& state, const BatchRecords& batch, const StepSplit* split,
                            ByteView seed);

// The dropout generator's seed for the forward of rows [first_row, ...) of
// step `step`: the first 8 bytes (little endian) of
// derive_key("wit/dropout/v1", {seed, le64(step), le64(first_row)}).
uint64_t dropout_seed(ByteView seed, int64_t step, int64_t first_row);

// Rank r's rows [lo, hi) of a batch of B records over W ranks: contiguous, in
// rank order, the first B mod W ranks one row more.
std::pair<int64_t, int64_t> share_rows(int64_t B, int64_t W, int64_t r);



}  // namespace wit
