// THE training step (shared by training and replay) and the probe
// fingerprint, over the GPT in model.h.
#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <optional>

#include "wit/model/model.h"
#include "wit/train/step.h"
#include "wit/base/error.h"
#include "wit/hash/rng.h"
#include "wit/run/sketch.h"
#include "wit/hash/tags.h"

namespace wit {

namespace {


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
  // The step the manifest declares: a fully sharded run's, in one process, emulates its ranks.
  if (mf.sharding) return train_step_emulating(mf, state, batch, mf.sharding->world, seed);
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
  const Hash32 k = derive_key(tags::kDropout, {seed, ByteView(t, 8), ByteView(r, 8)});
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

void update(const Manifest& mf, TrainState::Impl& s, std::vector<torch::Tensor>& grads, double sq,
            const std::function<bool(size_t)>& mine, StepOutput& out);

// The step's forward keys dropout by the run's seed, the step and the first
// row of the forward's rows; a step without randomness needs no seed.
void check_seed(const Manifest& mf, ByteView seed) {
  if (mf.random_step() && seed.size != 32)
    throw Error("the run's step draws dropout from its seed, which this step was not given", "train step");
}

}  // namespace

StepOutput train_step_emulating(const Manifest& mf, TrainState& state, const BatchRecords& batch, int world,
                                ByteView seed) {
  if (mf.sharding) {
    // The manifest fixes the world of a fully sharded run: every rank emulated here.
    const int W = mf.sharding->world;
    FullShardComm comm;
    for (int r = 0; r < W; r++) comm.ranks.push_back(r);
    comm.gather = comm.release = [](size_t) {};
    comm.reduce_scatter = [](size_t, std::vector<std::vector<torch::Tensor>>& c) {
      std::vector<torch::Tensor> sum = c[0];
      for (size_t k = 1; k < c.size(); k++)
        for (size_t j = 0; j < sum.size(); j++) sum[j] = sum[j] + c[k][j];
      return sum;
    };
    comm.gather_partials = [](const std::vector<double>& mine) { return mine; };
    comm.gather_losses = [](const std::vector<float>& mine) { return mine; };
    return train_step_full(mf, state, batch, comm, seed);
  }
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

StepOutput train_step_full(const Manifest& mf, TrainState& state, const BatchRecords& batch,
                           const FullShardComm& comm, ByteView seed) {
  TrainState::Impl& s = state.impl();
  if (!mf.sharding) throw Error("a fully sharded step of a run without a sharding plan", "train step");
  if (batch.empty()) throw Error("empty batch", "train step");
  check_seed(mf, seed);
  const ShardPlan& plan = *mf.sharding;
  const int W = plan.world;
  const int64_t t = s.step + 1, B = int64_t(batch.size());
  if (B < W)
    throw Error("a batch of " + std::to_string(B) + " records cannot be split over " + std::to_string(W) + " ranks",
                "batch_size");
  const size_t U = plan.units.size(), K = comm.ranks.size();
  if (U != unit_count(s)) throw Error("the sharding plan's units are not the model's", "train step");
  std::vector<std::vector<size_t>> unit_params(U);
  for (size_t u = 0; u < U; u++)
    for (const auto& name : plan.units[u]) unit_params[u].push_back(s.index.at(name));
  const std::vector<int> owner = plan.owners();
  auto mine = [&](size_t i) { return std::find(comm.ranks.begin(), comm.ranks.end(), owner[i]) != comm.ranks.end(); };

  // Rounds of at most m rows per rank; every rank runs the same number.
  const int64_t most = (B + W - 1) / W;
  const int64_t m = mf.micro_batch > 0 ? std::min(mf.micro_batch, most) : most;
  const int64_t rounds = (most + m - 1) / m;
  const bool random = mf.random_step();
  // The recompute restores the CPU generator's state; a CUDA forward draws from another one.
  if (random && s.device.is_cuda())
    throw Error("a fully sharded step with dropout runs on the CPU only", "--device",
                "train it on the CPU, or without dropout");
  std::optional<std::lock_guard<std::mutex>> lock;
  if (random) lock.emplace(g_generator);
  std::optional<Dropout> drop;
  if (random) drop = Dropout{mf.dropout, mf.train_mode};
  auto generator = at::detail::getDefaultCPUGenerator();

  std::vector<torch::Tensor> acc(s.params.size());
  std::vector<std::vector<float>> losses(K);
  for (int64_t j = 0; j < rounds; j++) {
    struct Part {
      int64_t a = 0, b = 0;  // rows [a, b) of the batch; empty when a == b
      Rows rows;
      std::vector<torch::Tensor> in;        // each unit's input
      std::vector<torch::Tensor> gen;       // the generator's state at each unit's start
      torch::Tensor next;                   // ... and after the last unit run
      torch::Tensor per_example, grad_out;
    };
    std::vector<Part> parts(K);
    std::vector<size_t> shadow;  // attack 24 only: parts[K + x] stands in for parts[shadow[x]] in its own range
    for (size_t k = 0; k < K; k++) {
      const auto [lo, hi] = share_rows(B, W, comm.ranks[k]);
      parts[k].a = std::min(hi, lo + j * m);
      parts[k].b = std::min(hi, lo + (j + 1) * m);
      if (parts[k].a == parts[k].b) continue;
      const BatchRecords rows(batch.begin() + parts[k].a, batch.begin() + parts[k].b);
      parts[k].rows = make_rows(rows, s.cfg, s.device);
      if (!comm.own_batch) continue;
      const BatchRecords own(comm.own_batch->begin() + parts[k].a, comm.own_batch->begin() + parts[k].b);
      if (own == rows) continue;
      Part x;
      x.a = parts[k].a;
      x.b = parts[k].b;
      x.rows = make_rows(own, s.cfg, s.device);
      parts.push_back(std::move(x));
      shadow.push_back(k);
    }
    // Forward, unit by unit, keeping only each unit's input.
    {
      torch::NoGradGuard no_grad;
      for (size_t u = 0; u < U; u++) {
        comm.gather(u);
        for (auto& P : parts) {
          if (P.a == P.b) continue;
          // Each rank's draws are one stream, from its first row's seed, unit after unit
          // (several ranks emulated here take turns: each one's stream resumes where it stopped).
          if (u == 0 && random) torch::manual_seed(dropout_seed(seed, t, P.a));
          if (u > 0 && random) generator.set_state(P.next);
          if (random) P.gen.push_back(generator.get_state());
          P.in.push_back(u == 0 ? P.rows.idx : P.grad_out);
          P.grad_out = unit_forward(s, u, P.in.back(), drop ? &*drop : nullptr);  // (the output, for now)
          if (random) P.next = generator.get_state();
        }
        comm.release(u);
      }
      for (size_t k = 0; k < K; k++) {
        auto& P = parts[k];
        if (P.a == P.b) continue;
        auto nll = -target_logp_of(P.grad_out, P.rows);
        const std::vector<float> l = to_vector((nll * P.rows.mask).sum(1) / P.rows.mask.sum(1));
        losses[k].insert(losses[k].end(), l.begin(), l.end());
        P.grad_out = torch::Tensor();
      }
    }
    // Backward, unit by unit in reverse: recompute, differentiate, reduce-scatter.
    for (size_t u = U; u-- > 0;) {
      comm.gather(u);
      std::vector<std::vector<torch::Tensor>> contrib(parts.size());
      for (size_t k = 0; k < parts.size(); k++) {
        auto& P = parts[k];
        std::vector<torch::Tensor> wrt;
        for (size_t i : unit_params[u]) wrt.push_back(s.params[i]);
        if (P.a == P.b) {
          torch::NoGradGuard no_grad;
          for (const auto& p : wrt) contrib[k].push_back(torch::zeros_like(p));
          continue;
        }
        if (random) generator.set_state(P.gen[u]);
        torch::Tensor in = u == 0 ? P.in[0] : P.in[u].detach().set_requires_grad(true);
        if (u > 0) wrt.push_back(in);
        torch::Tensor out = unit_forward(s, u, in, drop ? &*drop : nullptr);
        std::vector<torch::Tensor> g;
        if (u == U - 1) {
          auto nll = -target_logp_of(out, P.rows);
          auto loss = ((nll * P.rows.mask).sum(1) / P.rows.mask.sum(1)).sum() / double(B);
          g = torch::autograd::grad({loss}, wrt, {}, false, false, true);
        } else {
          g = torch::autograd::grad({out}, wrt, {P.grad_out}, false, false, true);
        }
        for (size_t q = 0; q < unit_params[u].size(); q++)
          contrib[k].push_back(g[q].defined() ? g[q] : torch::zeros_like(wrt[q]));
        P.grad_out = u > 0 ? g.back() : torch::Tensor();
        P.in[u] = torch::Tensor();
      }
      comm.release(u);
      for (size_t x = 0; x < shadow.size(); x++) {
        const size_t k = shadow[x];
        for (size_t q = 0; q < unit_params[u].size(); q++)
          if (owner[unit_params[u][q]] == comm.ranks[k]) contrib[k][q] = contrib[K + x][q];
      }
      contrib.resize(K);
      std::vector<torch::Tensor> sum = comm.reduce_scatter(u, contrib);
      contrib.clear();
      torch::NoGradGuard no_grad;
      for (size_t q = 0; q < unit_params[u].size(); q++) {
        const size_t i = unit_params[u][q];
        if (!sum[q].defined()) continue;
        acc[i] = acc[i].defined() ? acc[i] + sum[q] : sum[q];
      }
    }
  }
  lock.reset();

  StepOutput out;
  std::vector<float> mine_losses;
  for (const auto& l : losses) mine_losses.insert(mine_losses.end(), l.begin(), l.end());
  out.losses = comm.gather_losses(mine_losses);
  if (int64_t(out.losses.size()) != B) throw Error("gathered losses do not cover the batch", "train step");
  out.mean_loss = torch::tensor(out.losses, torch::kFloat32).mean().item<float>();
  // Each owner's sum of squares over its range (name order); their sum in rank order.
  std::vector<double> partial;
  for (int r : comm.ranks) {
    double sq = 0;
    for (size_t i = plan.bounds[size_t(r)]; i < plan.bounds[size_t(r) + 1]; i++)
      sq += acc[i].to(torch::kDouble).square().sum().item<double>();
    partial.push_back(sq);
  }
  const std::vector<double> all = comm.gather_partials(partial);
  if (all.size() != size_t(W)) throw Error("gathered gradient norms do not cover the ranks", "train step");
  double sq = 0;
  for (double x : all) sq += x;
  update(mf, s, acc, sq, mine, out);
  return out;
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
  const bool zero1 = split && !split->owned.empty();
  update(mf, s, grads, sq, [&](size_t i) { return !zero1 || split->owned[i]; }, out);
  if (split && split->after_update) split->after_update();
  return out;
}

namespace {

// Clipping by the gradient norm sqrt(sq), then AdamW (decoupled weight
// decay, as torch.optim.AdamW computes it) on the parameters `mine` picks
// (grads[i] is read only for those); the step counter moves to t.
void update(const Manifest& mf, TrainState::Impl& s, std::vector<torch::Tensor>& grads, double sq,
            const std::function<bool(size_t)>& mine, StepOutput& out) {
  torch::NoGradGuard no_grad;
  const int64_t t = s.step + 1;
  const double norm = std::sqrt(sq);
  out.grad_norm = float(norm);
  const double coef = mf.opt.grad_clip > 0 && norm > mf.opt.grad_clip ? mf.opt.grad_clip / (norm + 1e-6) : 1.0;
  const double lr = mf.lr_at(t);
  out.lr = float(lr);
  const double b1 = mf.opt.beta1, b2 = mf.opt.beta2;
  const double bc1 = 1.0 - std::pow(b1, double(t)), bc2 = 1.0 - std::pow(b2, double(t));
  for (size_t i = 0; i < s.params.size(); i++) {
    if (!mine(i)) continue;  // another rank's shard
    auto& p = s.params[i];
    auto& g = grads[i];
    if (coef != 1.0) g.mul_(coef);
    s.m[i].mul_(b1).add_(g, 1.0 - b1);
    s.v[i].mul_(b2).addcmul_(g, g, 1.0 - b2);
    if (s.specs[i].decay && mf.opt.weight_decay > 0) p.mul_(1.0 - lr * mf.opt.weight_decay);
    auto denom = (s.v[i].sqrt() / std::sqrt(bc2)).add_(mf.opt.eps);
    p.addcdiv_(s.m[i], denom, -lr / bc1);
  }
  s.step = t;
}

}  // namespace

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
  std::vector<float> out;
  auto none = [](size_t) {};
  probe_fingerprint_units(mf, state, probe, true, none, none, out);
  return out;
}

void probe_fingerprint_units(const Manifest& mf, const TrainState& state, const BatchRecords& probe, bool compute,
                             const std::function<void(size_t)>& gather, const std::function<void(size_t)>& release,
                             std::vector<float>& out) {
  const TrainState::Impl& s = state.impl();
  torch::NoGradGuard no_grad;
  Rows rows;
  torch::Tensor x;
  if (compute) {
    rows = make_rows(probe, s.cfg, s.device);
    x = rows.idx;
  }
  // The forward, unit by unit (forward() is the same loop).
  for (size_t u = 0; u < unit_count(s); u++) {
    gather(u);
    if (compute) x = unit_forward(s, u, x, nullptr);
    release(u);
  }
  if (!compute) return;
  auto lp = (target_logp_of(x, rows) * rows.mask).contiguous();
  std::vector<float> flat = to_vector(lp);
  SketchSpec spec{uint64_t(mf.fp.probe_dim), sketch_seed(mf.fp.sketch_seed, "probe")};
  out = sketch_of(spec, flat.data(), flat.size());
}

}  // namespace wit
