// GPT parameter names, shapes and seeded initial values, without LibTorch.
#include "wit/model_spec.h"

#include <algorithm>
#include <cmath>

#include "wit/error.h"
#include "wit/merkle.h"
#include "wit/rng.h"
#include "wit/safetensors.h"
#include "wit/state_root.h"
#include "wit/tags.h"

namespace wit {

using nlohmann::json;

nlohmann::json ModelConfig::to_json() const {
  return {{"arch", "gpt"}, {"n_layer", n_layer}, {"n_head", n_head}, {"d_model", d_model},
          {"context", context}, {"vocab", vocab}};
}

ModelConfig ModelConfig::from_json(const json& j, const std::string& where) {
  auto bad = [&](const std::string& why) { throw Error("invalid model config: " + why, where); };
  if (!j.is_object()) bad("not an object");
  if (j.value("arch", std::string("gpt")) != "gpt") bad("arch must be \"gpt\"");
  ModelConfig c;
  auto get = [&](const char* k, int64_t& v, int64_t lo, int64_t hi) {
    if (!j.contains(k)) return;
    if (!j[k].is_number_integer()) bad(std::string(k) + " is not an integer");
    v = j[k].get<int64_t>();
    if (v < lo || v > hi) bad(std::string(k) + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  };
  get("n_layer", c.n_layer, 1, 256);
  get("n_head", c.n_head, 1, 256);
  get("d_model", c.d_model, 1, 65536);
  get("context", c.context, 1, 1 << 20);
  get("vocab", c.vocab, 257, 257);
  if (c.d_model % c.n_head) bad("d_model must be a multiple of n_head");
  return c;
}

uint64_t ParamSpec::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

std::vector<ParamSpec> gpt_params(const ModelConfig& c) {
  const int64_t D = c.d_model;
  // GPT-2 style: weights with std 0.02 (here uniform with that std, so values
  // are exact on every machine), residual projections scaled by 1/sqrt(2L).
  const float bound = float(0.02 * std::sqrt(3.0));
  const float proj_bound = float(0.02 * std::sqrt(3.0) / std::sqrt(2.0 * double(c.n_layer)));
  std::vector<ParamSpec> ps;
  auto mat = [&](std::string name, std::vector<int64_t> shape, float b) {
    ps.push_back({std::move(name), std::move(shape), InitKind::kUniform, b, true});
  };
  auto vec = [&](std::string name, int64_t n, InitKind k) { ps.push_back({std::move(name), {n}, k, 0, false}); };
  mat("wte", {c.vocab, D}, bound);
  mat("wpe", {c.context, D}, bound);
  for (int64_t l = 0; l < c.n_layer; l++) {
    std::string p = "h." + std::to_string(l) + ".";
    vec(p + "ln1.weight", D, InitKind::kOnes);
    vec(p + "ln1.bias", D, InitKind::kZeros);
    mat(p + "attn.qkv.weight", {3 * D, D}, bound);
    vec(p + "attn.qkv.bias", 3 * D, InitKind::kZeros);
    mat(p + "attn.proj.weight", {D, D}, proj_bound);
    vec(p + "attn.proj.bias", D, InitKind::kZeros);
    vec(p + "ln2.weight", D, InitKind::kOnes);
    vec(p + "ln2.bias", D, InitKind::kZeros);
    mat(p + "mlp.fc.weight", {4 * D, D}, bound);
    vec(p + "mlp.fc.bias", 4 * D, InitKind::kZeros);
    mat(p + "mlp.proj.weight", {D, 4 * D}, proj_bound);
    vec(p + "mlp.proj.bias", D, InitKind::kZeros);
  }
  vec("lnf.weight", D, InitKind::kOnes);
  vec("lnf.bias", D, InitKind::kZeros);
  std::sort(ps.begin(), ps.end(), [](const ParamSpec& a, const ParamSpec& b) { return a.name < b.name; });
  return ps;
}

uint64_t param_count(const ModelConfig& c) {
  uint64_t n = 0;
  for (const auto& p : gpt_params(c)) n += p.numel();
  return n;
}

void init_param(const ParamSpec& p, ByteView seed, float* out) {
  const uint64_t n = p.numel();
  if (p.init == InitKind::kOnes) {
    std::fill(out, out + n, 1.0f);
    return;
  }
  if (p.init == InitKind::kZeros) {
    std::fill(out, out + n, 0.0f);
    return;
  }
  ChaChaStream s(derive_key(tags::kInitWeights, {seed, ByteView(p.name)}));
  // 24 random bits -> an integer in [-2^23, 2^23) -> one float multiply: exact
  // integer conversion and a single IEEE rounding, identical everywhere.
  const float scale = p.bound / 8388608.0f;
  std::vector<uint8_t> buf(4 * 4096);
  for (uint64_t i = 0; i < n;) {
    uint64_t take = std::min<uint64_t>(4096, n - i);
    s.fill(buf.data(), 4 * take);
    for (uint64_t j = 0; j < take; j++) {
      int32_t v = int32_t(get_le32(&buf[4 * j]) >> 8) - 8388608;
      out[i + j] = float(v) * scale;
    }
    i += take;
  }
}

std::string moment_name(char which, const std::string& param) {
  return std::string("adam.") + which + "." + param;
}

Hash32 initial_state_root(const ModelConfig& c, ByteView seed) {
  auto ps = gpt_params(c);
  std::vector<std::vector<float>> values, zeros;
  std::vector<TensorView> tensors;
  values.reserve(ps.size());
  zeros.reserve(ps.size());
  for (const auto& p : ps) {
    values.emplace_back(p.numel());
    init_param(p, seed, values.back().data());
    zeros.emplace_back(p.numel(), 0.0f);
  }
  for (size_t i = 0; i < ps.size(); i++) {
    ByteView v(reinterpret_cast<const uint8_t*>(values[i].data()), 4 * values[i].size());
    ByteView z(reinterpret_cast<const uint8_t*>(zeros[i].data()), 4 * zeros[i].size());
    tensors.push_back({ps[i].name, DType::kF32, ps[i].shape, v});
    tensors.push_back({moment_name('m', ps[i].name), DType::kF32, ps[i].shape, z});
    tensors.push_back({moment_name('v', ps[i].name), DType::kF32, ps[i].shape, z});
  }
  static const uint8_t step0[8] = {0};
  tensors.push_back({kStepTensor, DType::kI64, {1}, ByteView(step0, 8)});
  return state_root(tensors);
}

}  // namespace wit
