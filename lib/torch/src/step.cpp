// THE training step (shared by training and replay) and the probe
// fingerprint, over the GPT in model.h.
#include <cmath>

#include "model.h"
#include "wit/error.h"
#include "wit/sketch.h"

namespace wit {

StepOutput train_step(const Manifest& mf, TrainState& state, const BatchRecords& batch) {
  TrainState::Impl& s = state.impl();
  if (batch.empty()) throw Error("empty batch", "train step");
  const int64_t t = s.step + 1;
  Rows rows = make_rows(batch, s.cfg.context, s.device);

  // Forward: per-example losses of the weights before the step.
  auto nll = -target_logp(s, rows);
  auto per_example = (nll * rows.mask).sum(1) / rows.mask.sum(1);
  auto loss = per_example.mean();
  auto grads = torch::autograd::grad({loss}, s.params);

  StepOutput out;
  out.losses = to_vector(per_example);
  out.mean_loss = loss.item<float>();

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
    auto& p = s.params[i];
    const auto& g = grads[i];
    s.m[i].mul_(b1).add_(g, 1.0 - b1);
    s.v[i].mul_(b2).addcmul_(g, g, 1.0 - b2);
    if (s.specs[i].decay && mf.opt.weight_decay > 0) p.mul_(1.0 - lr * mf.opt.weight_decay);
    auto denom = (s.v[i].sqrt() / std::sqrt(bc2)).add_(mf.opt.eps);
    p.addcdiv_(s.m[i], denom, -lr / bc1);
  }
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
