// THE training step (shared by training and replay) and the probe
// fingerprint, over the GPT in model.h.
#include <cmath>

#include "model.h"
#include "step.h"
#include "wit/error.h"
#include "wit/sketch.h"

namespace wit {

StepOutput train_step(const Manifest& mf, TrainState& state, const BatchRecords& batch) {
  return train_step_split(mf, state, batch, nullptr);
}

std::pair<int64_t, int64_t> share_rows(int64_t B, int64_t W, int64_t r) {
  const int64_t q = B / W, extra = B % W;
  const int64_t lo = r * q + std::min(r, extra);
  return {lo, lo + q + (r < extra ? 1 : 0)};
}

namespace {

// One share's per-example losses and gradient of sum(loss_b) / B: what rank r computes.
struct Share {
  std::vector<float> losses;
  std::vector<torch::Tensor> grads;
};
Share share_step(TrainState::Impl& s, const BatchRecords& batch, int64_t lo, int64_t hi);

}  // namespace

StepOutput train_step_emulating(const Manifest& mf, TrainState& state, const BatchRecords& batch, int world) {
  if (world <= 1) return train_step_split(mf, state, batch, nullptr);
  const int64_t B = int64_t(batch.size());
  if (B < world)
    throw Error("a batch of " + std::to_string(B) + " records cannot be split over " + std::to_string(world) + " ranks",
                "batch_size");
  StepSplit split;
  std::tie(split.lo, split.hi) = share_rows(B, world, 0);
  std::vector<std::vector<float>> losses(static_cast<size_t>(world));
  // Rank 0's share is computed by the step itself; the others' here, from the
  // same weights (reduce_grads runs before any update).
  split.reduce_grads = [&](std::vector<torch::Tensor>& grads) {
    for (int64_t r = 1; r < world; r++) {
      const auto [lo, hi] = share_rows(B, world, r);
      Share sh = share_step(state.impl(), batch, lo, hi);
      for (size_t i = 0; i < grads.size(); i++) grads[i] = grads[i] + sh.grads[i];
      losses[size_t(r)] = std::move(sh.losses);
    }
  };
  split.gather_losses = [&](const std::vector<float>& mine) {
    std::vector<float> all = mine;
    for (int64_t r = 1; r < world; r++) all.insert(all.end(), losses[size_t(r)].begin(), losses[size_t(r)].end());
    return all;
  };
  return train_step_split(mf, state, batch, &split);
}

StepOutput train_step_split(const Manifest& mf, TrainState& state, const BatchRecords& batch, const StepSplit* split) {
  TrainState::Impl& s = state.impl();
  if (batch.empty()) throw Error("empty batch", "train step");
  const int64_t t = s.step + 1;
  const int64_t B = int64_t(batch.size());
  // This rank's rows (all of them in a single process).
  if (split && (split->lo < 0 || split->hi > B || split->lo >= split->hi))
    throw Error("empty share of the batch", "train step");
  std::vector<torch::Tensor> grads;
  StepOutput out;
  if (split) {
    Share sh = share_step(s, batch, split->lo, split->hi);
    grads = std::move(sh.grads);
    out.losses = std::move(sh.losses);
  } else {
    Rows rows = make_rows(batch, s.cfg, s.device);
    // Forward: per-example losses of the weights before the step.
    auto nll = -target_logp(s, rows);
    auto per_example = (nll * rows.mask).sum(1) / rows.mask.sum(1);
    auto loss = per_example.mean();
    grads = torch::autograd::grad({loss}, s.params);
    out.losses = to_vector(per_example);
    out.mean_loss = loss.item<float>();
  }
  if (split) {
    split->reduce_grads(grads);
    out.losses = split->gather_losses(out.losses);
    if (int64_t(out.losses.size()) != B) throw Error("gathered losses do not cover the batch", "train step");
    // The batch loss as the single process computes it: the mean of the B losses.
    out.mean_loss = torch::tensor(out.losses, torch::kFloat32).mean().item<float>();
  }

  torch::NoGradGuard no_grad;
  double sq = 0;
  for (const auto& g : grads) sq += g.to(torch::kDouble).square().sum().item<double>();
  const double norm = std::sqrt(sq);
  out.grad_norm = float(norm);
  if (mf.opt.grad_clip > 0 && norm > mf.opt.grad_clip) {
    const double coef = mf.opt.grad_clip / (norm + 1e-6);
    for (auto& g : grads) g.mul_(coef);
  }

  // AdamW (decoupled weight decay), as torch.optim.AdamW computes it.
  const double lr = mf.lr_at(t);
  out.lr = float(lr);
  const double b1 = mf.opt.beta1, b2 = mf.opt.beta2;
  const double bc1 = 1.0 - std::pow(b1, double(t)), bc2 = 1.0 - std::pow(b2, double(t));
  for (size_t i = 0; i < s.params.size(); i++) {
    if (split && !split->owned.empty() && !split->owned[i]) continue;  // another rank's shard
    auto& p = s.params[i];
    const auto& g = grads[i];
    s.m[i].mul_(b1).add_(g, 1.0 - b1);
    s.v[i].mul_(b2).addcmul_(g, g, 1.0 - b2);
    if (s.specs[i].decay && mf.opt.weight_decay > 0) p.mul_(1.0 - lr * mf.opt.weight_decay);
    auto denom = (s.v[i].sqrt() / std::sqrt(bc2)).add_(mf.opt.eps);
    p.addcdiv_(s.m[i], denom, -lr / bc1);
  }
  if (split && split->after_update) split->after_update();
  s.step = t;
  return out;
}

namespace {

// A rank's part of the batch loss is sum(loss_b) / B over its rows, so the
// ranks' gradients sum to the gradient of the mean over the whole batch.
Share share_step(TrainState::Impl& s, const BatchRecords& batch, int64_t lo, int64_t hi) {
  const BatchRecords share(batch.begin() + lo, batch.begin() + hi);
  Rows rows = make_rows(share, s.cfg, s.device);
  auto nll = -target_logp(s, rows);
  auto per_example = (nll * rows.mask).sum(1) / rows.mask.sum(1);
  auto loss = per_example.sum() / double(batch.size());
  Share out;
  out.grads = torch::autograd::grad({loss}, s.params);
  out.losses = to_vector(per_example);
  return out;
}

}  // namespace

std::vector<float> probe_fingerprint(const Manifest& mf, const TrainState& state, const BatchRecords& probe) {
  const TrainState::Impl& s = state.impl();
  torch::NoGradGuard no_grad;
  Rows rows = make_rows(probe, s.cfg, s.device);
  auto lp = (target_logp(s, rows) * rows.mask).contiguous();
  std::vector<float> flat = to_vector(lp);
  SketchSpec spec{uint64_t(mf.fp.probe_dim), sketch_seed(mf.fp.sketch_seed, "probe")};
  return sketch_of(spec, flat.data(), flat.size());
}

}  // namespace wit
