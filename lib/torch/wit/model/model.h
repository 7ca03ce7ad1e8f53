// Private to wit_torch: the byte-level GPT's rows, forward pass and
// per-token log-probabilities (LibTorch types; never include from a public header).
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "wit/model/state_impl.h"

namespace wit {

struct Rows {
  torch::Tensor idx, targets, mask;  // [B, T] long, long, float
};

// One record per row: a start token (PAD), the record's tokens truncated to
// the context, then PAD. Targets are the next tokens; the first PAD after the
// record is a real target (end of record), the rest are masked out. Tokens
// are the record's bytes, or for a TorchScript model over the `tokens`
// reader its uint16 ids (each below the vocab, or wit::Error); PAD is 256,
// or the model's declared pad.
Rows make_rows(const BatchRecords& recs, const ModelConfig& c, torch::Device dev);

// A training-mode forward: the built-in GPT's dropout rate `p` (on the
// embeddings, the attention probabilities and both residual branches, as
// GPT-2), or a TorchScript module run in training mode (`train_mode`). Both
// draw from LibTorch's default generator, which the step seeds (step.cpp).
struct Dropout {
  double p = 0;
  bool train_mode = false;
};

// Logits [B, T, vocab] of the state's weights: the built-in GPT, or the
// run's TorchScript module with the state's parameters in its slots; in eval
// mode unless `drop` is given.
torch::Tensor forward(const TrainState::Impl& s, const torch::Tensor& idx, const Dropout* drop = nullptr);

// The same forward as a sequence of units (shards.h model_units, in that
// order): unit 0 takes the token ids, the last gives the logits, each one
// reads only its unit's parameters. forward() runs them all, so a fully
// sharded step (step.cpp), which runs them one at a time, computes the same
// forward.
size_t unit_count(const TrainState::Impl& s);
torch::Tensor unit_forward(const TrainState::Impl& s, size_t unit, const torch::Tensor& in, const Dropout* drop);

// Log-probability of each target token, [B, T].
torch::Tensor target_logp(const TrainState::Impl& s, const Rows& r, const Dropout* drop = nullptr);
// The same from logits already computed (evaluation also needs their argmax).
torch::Tensor target_logp_of(const torch::Tensor& logits, const Rows& r);

// A float tensor's values on the CPU, as float32.
std::vector<float> to_vector(const torch::Tensor& t);

}  // namespace wit
