// The byte-level GPT: rows of records, the forward pass, per-token
// log-probabilities. Used by the training step, the probe fingerprint and
// evaluation; see model.h.
#include "wit/model/model.h"

#include "wit/model/script_model.h"
#include "wit/base/error.h"
#include "wit/data/readers.h"

#include <cmath>

namespace wit {

Rows make_rows(const BatchRecords& recs, const ModelConfig& c, torch::Device dev) {
  const int64_t B = int64_t(recs.size()), T = c.context;
  const unsigned width = c.scripted() ? token_mode_bytes(c.tokens) : 0;  // 0: each byte is a token
  const bool ids = width > 0;
  const int64_t pad = c.scripted() ? c.pad : ModelConfig::kPad;
  auto idx = torch::full({B, T}, pad, torch::kLong);
  auto tgt = torch::full({B, T}, pad, torch::kLong);
  auto mask = torch::zeros({B, T}, torch::kFloat32);
  auto I = idx.accessor<int64_t, 2>();
  auto Y = tgt.accessor<int64_t, 2>();
  auto M = mask.accessor<float, 2>();
  for (int64_t b = 0; b < B; b++) {
    const std::string& r = recs[size_t(b)];
    if (ids && r.size() % width)
      throw Error("a token record of " + std::to_string(r.size()) + " bytes, not a multiple of " +
                      std::to_string(width),
                  "batch");
    const int64_t n = ids ? int64_t(token_count(ByteView(r), width)) : int64_t(r.size());
    auto token = [&](int64_t i) -> int64_t {
      if (!ids) return uint8_t(r[size_t(i)]);
      return int64_t(token_id(ByteView(r), width, uint64_t(i)));
    };
    const int64_t L = std::min<int64_t>(n, T);
    for (int64_t t = 0; t < T; t++) {
      if (t >= 1 && t - 1 < L) I[b][t] = token(t - 1);
      if (t < L) Y[b][t] = token(t);
      M[b][t] = t <= L && t < T ? 1.0f : 0.0f;
    }
  }
  if (ids && B > 0) {
    const int64_t top = std::max(idx.max().item<int64_t>(), tgt.max().item<int64_t>());
    if (top >= c.vocab)
      throw Error("token " + std::to_string(top) + " is not below the model's vocab " + std::to_string(c.vocab), "batch");
  }
  return {idx.to(dev), tgt.to(dev), mask.to(dev)};
}

size_t unit_count(const TrainState::Impl& s) { return s.script ? 1 : size_t(s.cfg.n_layer) + 2; }

torch::Tensor unit_forward(const TrainState::Impl& s, size_t u, const torch::Tensor& in, const Dropout* drop) {
  if (s.script) {
    if (drop && drop->train_mode) return script_forward(*load_script_model(s.cfg, s.device, true), s.params, in);
    return script_forward(*s.script, s.params, in);
  }
  const double rate = drop ? drop->p : 0;
  auto dropout = [rate](const torch::Tensor& x) { return rate > 0 ? torch::dropout(x, rate, true) : x; };
  const ModelConfig& c = s.cfg;
  const int64_t D = c.d_model;
  if (u == 0) {  // the embeddings: token ids [B, T] -> the residual stream [B, T, D]
    const int64_t T = in.size(1);
    return dropout(torch::embedding(s.p("wte"), in) + s.p("wpe").slice(0, 0, T));
  }
  if (u == size_t(c.n_layer) + 1) {  // the head: residual stream -> logits
    auto x = torch::layer_norm(in, {D}, s.p("lnf.weight"), s.p("lnf.bias"), 1e-5);
    return torch::matmul(x, s.p("wte").t());  // tied output head
  }
  // Block u - 1.
  auto x = in;
  const int64_t B = x.size(0), T = x.size(1), H = c.n_head, hd = D / H;
  auto causal = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).triu(1);
  const double scale = 1.0 / std::sqrt(double(hd));
  const std::string p = "h." + std::to_string(u - 1) + ".";
  auto h = torch::layer_norm(x, {D}, s.p(p + "ln1.weight"), s.p(p + "ln1.bias"), 1e-5);
  auto qkv = torch::linear(h, s.p(p + "attn.qkv.weight"), s.p(p + "attn.qkv.bias")).chunk(3, -1);
  auto q = qkv[0].view({B, T, H, hd}).transpose(1, 2);
  auto k = qkv[1].view({B, T, H, hd}).transpose(1, 2);
  auto v = qkv[2].view({B, T, H, hd}).transpose(1, 2);
  auto att = torch::matmul(q, k.transpose(-2, -1)).mul(scale).masked_fill(causal, -INFINITY).softmax(-1);
  att = dropout(att);
  auto y = torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, D});
  x = x + dropout(torch::linear(y, s.p(p + "attn.proj.weight"), s.p(p + "attn.proj.bias")));
  h = torch::layer_norm(x, {D}, s.p(p + "ln2.weight"), s.p(p + "ln2.bias"), 1e-5);
  h = torch::gelu(torch::linear(h, s.p(p + "mlp.fc.weight"), s.p(p + "mlp.fc.bias")));
  return x + dropout(torch::linear(h, s.p(p + "mlp.proj.weight"), s.p(p + "mlp.proj.bias")));
}

torch::Tensor forward(const TrainState::Impl& s, const torch::Tensor& idx, const Dropout* drop) {
  torch::Tensor x = idx;
  for (size_t u = 0; u < unit_count(s); u++) x = unit_forward(s, u, x, drop);
  return x;
}

// Log-probability of each target token, [B, T].
torch::Tensor target_logp(const TrainState::Impl& s, const Rows& r, const Dropout* drop) {
  return target_logp_of(forward(s, r.idx, drop), r);
}

torch::Tensor target_logp_of(const torch::Tensor& logits, const Rows& r) {
  auto logp = torch::log_softmax(logits, -1);
  return logp.gather(2, r.targets.unsqueeze(2)).squeeze(2);
}

std::vector<float> to_vector(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU).to(torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}


}  // namespace wit
