// THE training step (shared by training and replay) and the probe
// fingerprint, over the GPT in model.h.
#include <cmath>
#include <mutex>
#include <optional>

#include "model.h"
#include "step.h"
#include "wit/error.h"
#include "wit/rng.h"
#include "wit/sketch.h"

namespace wit {

namespace {

// The dropout generator's seed of one training forward (docs/hashing.md; kept
// here, beside its only use, rather than in tags.h).
constexpr std::string_view kDropoutTag = "wit/dropout/v1";

// A forward of a run with dropout holds LibTorch's default generator, seeded
// for it, from the seeding to its end: no other forward of this process draws
// in between (replays may run on several threads).
std::mutex g_generator;

class DropoutScope {
 public:
  DropoutScope(const Manifest& mf, ByteView seed, int64_t step, int64_t first_row) {
    if (!mf.random_step()) return;
    drop_ = Dropout{mf.dropout, mf.train_mode};
    lock_.emplace(g_generator);
    torch::manual_seed(dropout_seed(seed, step, first_row));
  }
  const Dropout* forward() const { return drop_ ? &*drop_ : nullptr; }

 private:
  std::optional<Dropout> drop_;
  std::optional<std::lock_guard<std::mutex>> lock_;
};

}  // namespace

StepOutput train_step(const Manifest& mf, TrainState& state, const BatchRecords& batch, ByteView seed) {
  return train_step_split(mf, state, batch, nullptr, seed);
}

std::pair<int64_t, int64_t> share_rows(int64_t B, int64_t W, int64_t r) {
  const int64_t q = B / W, extra = B % W;
  const int64_t lo = r * q + std::min(r, extra);
  return {lo, lo + q + (r < extra ? 1 : 0)};
}

uint64_t dropout_seed(ByteView seed, int64_t step, int64_t first_row) {
  uint8_t t[8], r[8];
  put_le64(t, uint64_t(step));
  put_le64(r, uint64_t(first_row));
  const Hash32 k = derive_key(kDropoutTag, {seed, ByteView(t, 8), ByteView(r, 8)});
  return get_le64(k.data());
}

namespace {

// One share's per-example losses and gradient of sum(loss_b) / B: what rank r computes.
struct Share {
  std::vector<float> losses;
  std::vector<torch::Tensor> grads;
};
Share share_step(const Manifest& mf, TrainState::Impl& s, const BatchRecords& batch, int64_t lo, int64_t hi,
                 ByteView seed);

// The step's forward keys dropout by the run's seed, the step and the first
// row of the forward's rows; a step without randomness needs no seed.
void check_seed(const Manifest& mf, ByteView seed) {
  if (mf.random_step() && seed.size != 32)
    throw Error("the run's step draws dropout from its seed, which this step was not given", "train step");
}

}  // namespace

StepOutput train_step_emulating(const Manifest& mf, TrainState& state, const BatchRecords& batch, int world,
                                ByteView seed) {
  if (world <= 1) return train_step_split(mf, state, batch, nullptr, seed);
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
      Share sh = share_step(mf, state.impl(), batch, lo, hi, seed);
      for (size_t i = 0; i < grads.size(); i++) grads[i] = grads[i] + sh.grads[i];
      losses[size_t(r)] = std::move(sh.losses);
    }
  };
  split.gather_losses = [&](const std::vector<float>& mine) {
    std::vector<float> all = mine;
    for (int64_t r = 1; r < world; r++) all.insert(all.end(), losses[size_t(r)].begin(), losses[size_t(r)].end());
    return all;
  };
  return train_step_split(mf, state, batch, &split, seed);
}

StepOutput train_step_split(const Manifest& mf, TrainState& state, const BatchRecords& batch, const StepSplit* split,
                            ByteView seed) {
  TrainState::Impl& s = state.impl();
  if (batch.empty()) throw Error("empty batch", "train step");
  check_seed(mf, seed);
  const int64_t t = s.step + 1;
  const int64_t B = int64_t(batch.size());
  // This rank's rows (all of them in a single process).
  if (split && (split->lo < 0 || split->hi > B || split->lo >= split->hi))
    throw Error("empty share of the batch", "train step");
  std::vector<torch::Tensor> grads;
  StepOutput out;
  if (split || mf.micro_batch > 0) {
    // The rows in shares (ranks, micro-batches): each a gradient of its
    // rows' loss / B, summed; the batch loss is the mean of the B losses.
    const auto [lo, hi] = split ? std::pair<int64_t, int64_t>{split->lo, split->hi} : std::pair<int64_t, int64_t>{0, B};
    Share sh = share_step(mf, s, batch, lo, hi, seed);
    grads = std::move(sh.grads);
    out.losses = std::move(sh.losses);
    if (split) {
      split->reduce_grads(grads);
      out.losses = split->gather_losses(out.losses);
    }
    if (int64_t(out.losses.size()) != B) throw Error("gathered losses do not cover the batch", "train step");
    out.mean_loss = torch::tensor(out.losses, torch::kFloat32).mean().item<float>();
  } else {
    // The whole batch in one forward (the step of runs without accumulation, bit for bit).
    Rows rows = make_rows(batch, s.cfg, s.device);
    DropoutScope drop(mf, seed, t, 0);
    auto nll = -target_logp(s, rows, drop.forward());
    auto per_example = (nll * rows.mask).sum(1) / rows.mask.sum(1);
    auto loss = per_example.mean();
    grads = torch::autograd::grad({loss}, s.params);
    out.losses = to_vector(per_example);
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

namespace {

// A rank's part of the batch loss is sum(loss_b) / B over its rows, so the
// ranks' gradients sum to the gradient of the mean over the whole batch. With
// micro_batch, the rows [lo, hi) go forward and backward in consecutive
// micro-batches of micro_batch rows (the last may be smaller), each one's
// gradient of its own sum(loss_b) / B, added in row order: g = g1 + g2 + ...
Share share_step(const Manifest& mf, TrainState::Impl& s, const BatchRecords& batch, int64_t lo, int64_t hi,
                 ByteView seed) {
  const int64_t t = s.step + 1, B = int64_t(batch.size());
  const int64_t m = mf.micro_batch > 0 ? mf.micro_batch : hi - lo;
  Share out;
  for (int64_t a = lo; a < hi; a += m) {
    const int64_t b = std::min(hi, a + m);
    const BatchRecords share(batch.begin() + a, batch.begin() + b);
    Rows rows = make_rows(share, s.cfg, s.device);
    DropoutScope drop(mf, seed, t, a);
    auto nll = -target_logp(s, rows, drop.forward());
    auto per_example = (nll * rows.mask).sum(1) / rows.mask.sum(1);
    auto loss = per_example.sum() / double(B);
    std::vector<torch::Tensor> g = torch::autograd::grad({loss}, s.params);
    if (out.grads.empty()) {
      out.grads = std::move(g);
    } else {
      for (size_t i = 0; i < g.size(); i++) out.grads[i] = out.grads[i] + g[i];
    }
    const std::vector<float> l = to_vector(per_example);
    out.losses.insert(out.losses.end(), l.begin(), l.end());
  }
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
