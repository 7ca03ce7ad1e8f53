// Private to wit_torch: THE training step with its data-parallel seam. The
// public train_step (state.h) is the world-size-1 case of train_step_split:
// no split, no reduction. dist.cpp passes a split for data-parallel ranks.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <utility>
#include <vector>

#include "wit/run/shards.h"
#include "wit/model/state.h"

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

// One process's part of a fully sharded step (--shard=full, the manifest's
// "sharding"; docs/distributed.md). `ranks` are the ranks this process
// computes, in rank order: its own rank when training, all of them when a
// replay emulates the world in one process (then the callbacks below are
// local and every parameter is present throughout).
struct FullShardComm {
  std::vector<int> ranks;
  // Unit u's parameters present here before its compute (the owners send
  // them), the ones this rank does not own freed after it.
  std::function<void(size_t u)> gather, release;
  // contributions[k][j]: ranks[k]'s gradient of unit u's parameter j (of
  // its rows' loss / B). Returns, for each j this process owns, the sum over
  // all ranks in rank order, ((g_0 + g_1) + g_2) + ...; undefined elsewhere.
  std::function<std::vector<torch::Tensor>(size_t u, std::vector<std::vector<torch::Tensor>>& contributions)>
      reduce_scatter;
  // This process's ranks' partial sums of squares -> all W, in rank order.
  std::function<std::vector<double>(const std::vector<double>& mine)> gather_partials;
  // This process's ranks' per-example losses -> all B, in batch order.
  std::function<std::vector<float>(const std::vector<float>& mine)> gather_losses;
  // Attack 24 only (the forging tool, through TrainOptions::shard_rows_fn):
  // the batch whose rows give this process's ranks the gradients of the
  // parameters they own; the gradients they send other owners stay those of
  // `batch`. Null in every honest step.
  const BatchRecords* own_batch = nullptr;
};

// THE fully sharded step. Its sums, all fixed by the plan: each rank's rows
// (share_rows) in rounds of micro_batch rows (or ceil(B / W) without
// accumulation; a rank with no rows left in a round adds zeros), each round
// forward unit by unit without autograd, then backward unit by unit in
// reverse, each unit recomputed from its saved input (the dropout
// generator's state restored); a unit's gradients summed over the ranks in
// rank order and added to the owner's accumulator in backward order, round
// after round; the norm is sqrt of the sum in rank order of each owner's sum
// of squares over its range (name order). Then clip and AdamW on the owned
// parameters, as in train_step_split.
StepOutput train_step_full(const Manifest& mf, TrainState& state, const BatchRecords& batch,
                           const FullShardComm& comm, ByteView seed);

// The step on `batch` (all B records, in batch order); with a split, this
// rank computes the rows [lo, hi) only, and the gradient and the losses are
// completed across ranks before clipping and AdamW. split == nullptr is the
// single-process step, bit for bit.
// `seed` is the run's seed: a run with dropout (Manifest::random_step) keys
// its generator by it, the step and each forward's first row (dropout_seed);
// other runs ignore it (it may be empty).
StepOutput train_step_split(const Manifest& mf, TrainState& state, const BatchRecords& batch, const StepSplit* split,
                            ByteView seed);

// The probe fingerprint (state.h), its forward run unit by unit with
// gather(u) / release(u) around each unit (fully sharded training gathers
// the parameters for it); with compute false this rank only takes part in
// the gathers. forward() runs the same units, so the result is
// probe_fingerprint's, bit for bit.
void probe_fingerprint_units(const Manifest& mf, const TrainState& state, const BatchRecords& probe, bool compute,
                             const std::function<void(size_t)>& gather, const std::function<void(size_t)>& release,
                             std::vector<float>& out);

// The dropout generator's seed for the forward of rows [first_row, ...) of
// step `step`: the first 8 bytes (little endian) of
// derive_key("wit/dropout/v1", {seed, le64(step), le64(first_row)}).
uint64_t dropout_seed(ByteView seed, int64_t step, int64_t first_row);

// Rank r's rows [lo, hi) of a batch of B records over W ranks: contiguous, in
// rank order, the first B mod W ranks one row more.
std::pair<int64_t, int64_t> share_rows(int64_t B, int64_t W, int64_t r);



}  // namespace wit
