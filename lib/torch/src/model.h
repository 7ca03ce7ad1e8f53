// Private to wit_torch: the byte-level GPT's rows, forward pass and
// per-token log-probabilities (LibTorch types; never include from a public header).
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "state_impl.h"

namespace wit {

struct Rows {
  torch::Tensor idx, targets, mask;  // [B, T] long, long, float
};

// One record per row: a start token (PAD), the record bytes truncated to the
// context, then PAD. Targets are the next tokens; the first PAD after the
// record is a real target (end of record), the rest are masked out.
Rows make_rows(const BatchRecords& recs, int64_t T, torch::Device dev);

// Logits [B, T, vocab] of the state's weights.
torch::Tensor forward(const TrainState::Impl& s, const torch::Tensor& idx);

// Log-probability of each target token, [B, T].
torch::Tensor target_logp(const TrainState::Impl& s, const Rows& r);
// The same from logits already computed (evaluation also needs their argmax).
torch::Tensor target_logp_of(const torch::Tensor& logits, const Rows& r);

// A float tensor's values on the CPU, as float32.
std::vector<float> to_vector(const torch::Tensor& t);

}  // namespace wit
