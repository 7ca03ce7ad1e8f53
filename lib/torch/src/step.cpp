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

StepOutput train_step_split(const Manifest& mf, TrainState& state, const BatchRecords& batch, const StepSplit* split) {
  TrainState::Impl& s = state.impl();
  if (batch.empty()) throw Error("empty batch", "train step");
  const int64_t t = s.step + 1;
  const int64_t B = int64_t(batch.size());
  // This rank's rows (all of them in a single process).
  if (split && (split->lo < 0 || split->hi > B || split->lo >= split->hi))
    throw Error("empty share of the batch", "train step");
  BatchRecords share;
  if (split) share.assign(batch.begin() + split->lo, batch.begin() + split->hi);
  Rows rows = make_rows(split ? share : batch, s.cfg.context, s.device);

  // Forward: per-example losses of the weights before the step. A rank's
  // part of the batch loss is sum(loss_b) / B over its rows, so the ranks'
  // gradients sum to the gradient of the mean over the whole batch.
  auto nll = -target_logp(s, rows);
  auto per_example = (nll * rows.mask).sum(1) / rows.mask.sum(1);
  auto loss = split ? per_example.sum() / double(B) : per_example.mean();
  auto grads = torch::autograd::grad({loss}, s.params);

  StepOutput out;
  out.losses = to_vector(per_example);
  if (split) {
    split->reduce_grads(grads);
    out.losses = split->gather_losses(out.losses);
    if (int64_t(out.losses.size()) != B) throw Error("gathered losses do not cover the batch", "train step");
    // The batch loss as the single process computes it: the mean of the B losses.
    out.mean_loss = torch::tensor(out.losses, torch::kFloat32).mean().item<float>();
  } else {
    out.mean_loss = loss.item<float>();
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

std::vector<float> probe_fingerprint(const Manifest& mf, const TrainState& state, const BatchRecords& probe) {
  const TrainState::Impl& s = state.impl();
  torch::NoGradGuard no_grad;
  Rows rows = make_rows(probe, s.cfg.context, s.device);
  auto lp = (target_logp(s, rows) * rows.mask).contiguous();
  std::vector<float> flat = to_vector(lp);
  SketchSpec spec{uint64_t(mf.fp.probe_dim), sketch_seed(mf.fp.sketch_seed, "probe")};
  return sketch_of(spec, flat.data(), flat.size());
}

}  // namespace wit
