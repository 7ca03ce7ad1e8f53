// The probe-preserving fine-tune: see probe_preserving.h.
#include "probe_preserving.h"

#include <torch/torch.h>

#include "wit/model/model.h"
#include "wit/model/state_impl.h"
#include "wit/base/error.h"
#include "wit/model/fingerprint.h"
#include "wit/run/runlog.h"
#include "wit/eval/release.h"
#include "wit/run/sketch.h"
#include "wit/run/state_root.h"

namespace wit {

ProbePreservingResult probe_preserving_finetune(const std::string& run, const std::vector<std::string>& heldout,
                                                int steps, double lr, const std::string& out) {
  const RunPaths rp(run);
  const Manifest mf = Manifest::load(rp.manifest());
  const ProbeSet probe = ProbeSet::load(run + "/probe.json", mf, read_revealed_seed(rp));
  const LoggedFinal fin = final_logged_state(WitnessLog::open(rp.log(), TornTail::kRefuse), rp.log());
  TrainState st = TrainState::load(mf.model, rp.checkpoint(fin.step));
  TrainState::Impl& s = st.impl();
  std::vector<torch::Tensor>& P = s.params;

  // The probe fingerprint as a differentiable function of the parameters:
  // the public count sketch of the masked per-token log-probabilities.
  const Rows prow = make_rows(probe.records, s.cfg, s.device);
  const int64_t n = prow.mask.numel(), d = int64_t(mf.fp.probe_dim);
  const SketchSpec spec{uint64_t(d), sketch_seed(mf.fp.sketch_seed, "probe")};
  std::vector<int64_t> bucket(static_cast<size_t>(n));
  std::vector<float> sign(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) {
    uint64_t b;
    int sg;
    sketch_slot(spec, uint64_t(i), b, sg);
    bucket[size_t(i)] = int64_t(b);
    sign[size_t(i)] = float(sg);
  }
  const torch::Tensor B = torch::tensor(bucket, torch::kLong), S = torch::tensor(sign);
  auto fp = [&] {
    auto lp = (target_logp(s, prow) * prow.mask).reshape({-1});
    return torch::zeros({d}, lp.options()).index_add(0, B, lp * S);
  };
  auto flat = [](const std::vector<torch::Tensor>& g) {
    std::vector<torch::Tensor> f;
    for (const auto& t : g) f.push_back(t.reshape({-1}).to(torch::kDouble));
    return torch::cat(f);
  };
  auto jacobian = [&] {  // [d, N], one backward pass per row
    auto f = fp();
    std::vector<torch::Tensor> rows;
    for (int64_t i = 0; i < d; i++) rows.push_back(flat(torch::autograd::grad({f[i]}, P, {}, true)));
    return torch::stack(rows);
  };
  // u - J^T (J J^T)^-1 J u, and J^T (J J^T)^-1 r
  auto solve = [](const torch::Tensor& J, const torch::Tensor& r) {
    auto G = J.matmul(J.t()) + 1e-12 * torch::eye(J.size(0), J.options());
    return J.t().matmul(torch::linalg::solve(G, r.unsqueeze(1), true).squeeze(1));
  };
  auto apply = [&](const torch::Tensor& delta) {  // theta -= delta
    torch::NoGradGuard ng;
    int64_t off = 0;
    for (auto& p : P) {
      const int64_t k = p.numel();
      p.sub_(delta.slice(0, off, off + k).view(p.sizes()).to(torch::kFloat32));
      off += k;
    }
  };
  const Rows hrow = make_rows(heldout, s.cfg, s.device);
  auto heldout_loss = [&] { return -(target_logp(s, hrow) * hrow.mask).sum() / hrow.mask.sum(); };

  const torch::Tensor f0 = fp().detach().to(torch::kDouble);
  ProbePreservingResult r;
  r.heldout_before = heldout_loss().item<double>();
  torch::Tensor m, v;
  const double b1 = 0.9, b2 = 0.999;
  for (int t = 1; t <= steps; t++) {
    torch::Tensor J = jacobian();
    torch::Tensor g = flat(torch::autograd::grad({heldout_loss()}, P));
    g = g - solve(J, J.matmul(g));
    if (!m.defined()) m = torch::zeros_like(g), v = torch::zeros_like(g);
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    torch::Tensor u = lr * (m / (1 - std::pow(b1, t))) / ((v / (1 - std::pow(b2, t))).sqrt() + 1e-8);
    apply(u - solve(J, J.matmul(u)));
    for (int k = 0; k < 2; k++) {  // Gauss-Newton pull-back onto fp = fp0
      J = jacobian();
      apply(solve(J, fp().detach().to(torch::kDouble) - f0));
    }
  }
  r.heldout_after = heldout_loss().item<double>();
  const torch::Tensor f1 = fp().detach().to(torch::kDouble);
  r.probe_rel = (f1 - f0).norm().item<double>() / std::max(f0.norm().item<double>(), 1e-30);
  std::vector<TensorView> params;
  for (const auto& tv : st.tensors())
    if (is_param_tensor(tv.name)) params.push_back(tv);
  write_safetensors(out, params);
  return r;
}

}  // namespace wit
