// GPT parameter names, shapes and seeded initial values, without LibTorch.
#include "wit/run/model_spec.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cmath>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/base/io.h"
#include "wit/hash/merkle.h"
#include "wit/data/readers.h"
#include "wit/hash/rng.h"
#include "wit/run/safetensors.h"
#include "wit/run/state_root.h"
#include "wit/hash/tags.h"

namespace wit {

unsigned token_mode_bytes(TokenMode m) { return m == TokenMode::kU16 ? 2 : m == TokenMode::kU32 ? 4 : 0; }

const char* token_mode_name(TokenMode m) {
  return m == TokenMode::kU16 ? "u16" : m == TokenMode::kU32 ? "u32" : "bytes";
}

TokenMode token_mode_for(const ReaderSpec& reader) {
  if (reader.kind != ReaderKind::kTokens) return TokenMode::kBytes;
  return reader.token_bytes == 4 ? TokenMode::kU32 : TokenMode::kU16;
}


using nlohmann::json;

namespace {

const char* init_kind_name(InitKind k) {
  switch (k) {
    case InitKind::kUniform: return "uniform";
    case InitKind::kNormal: return "normal";
    case InitKind::kOnes: return "ones";
    case InitKind::kZeros: return "zeros";
  }
  return "?";
}

json match_json(const ParamMatch& m) {
  json j = {{"match", m.match}};
  if (m.ndim >= 0) j["ndim"] = m.ndim;
  return j;
}

json decls_json(const std::vector<TensorDecl>& ds) {
  json a = json::array();
  for (const auto& d : ds) a.push_back({{"name", d.name}, {"shape", d.shape}, {"dtype", dtype_name(d.dtype)}});
  return a;
}

// Reads the "model" object; every failure names the field.
struct ModelReader {
  const json& j;
  std::string where;
  [[noreturn]] void bad(const std::string& why) const { throw Error("invalid model config: " + why, where); }
  void get(const json& o, const char* k, int64_t& v, int64_t lo, int64_t hi, const std::string& at = "") const {
    if (!o.contains(k)) return;
    if (!o[k].is_number_integer()) bad(at + k + " is not an integer");
    v = o[k].get<int64_t>();
    if (v < lo || v > hi) bad(at + k + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  const json& need(const json& o, const char* k, const std::string& at = "") const {
    if (!o.contains(k)) bad("missing " + at + k);
    return o[k];
  }
  void only(const json& o, std::initializer_list<const char*> keys, const std::string& at) const {
    for (auto it = o.begin(); it != o.end(); ++it)
      if (std::find_if(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }) == keys.end())
        bad("unknown key '" + at + it.key() + "'");
  }
  ParamMatch match(const json& o, const std::string& at) const {
    ParamMatch m;
    if (o.contains("match")) {
      if (!o["match"].is_string() || o["match"].get<std::string>().empty()) bad(at + "match must be a non-empty string");
      m.match = o["match"].get<std::string>();
    }
    int64_t nd = -1;
    get(o, "ndim", nd, 0, 8, at);
    m.ndim = int(nd);
    return m;
  }
  std::vector<TensorDecl> decls(const char* k) const {
    const json& a = need(j, k);
    if (!a.is_array()) bad(std::string(k) + " must be an array");
    std::vector<TensorDecl> out;
    for (size_t i = 0; i < a.size(); i++) {
      const std::string at = std::string(k) + "[" + std::to_string(i) + "].";
      const json& o = a[i];
      if (!o.is_object()) bad(at.substr(0, at.size() - 1) + " is not an object");
      only(o, {"name", "shape", "dtype"}, at);
      TensorDecl d;
      if (!need(o, "name", at).is_string() || o["name"].get<std::string>().empty()) bad(at + "name must be a non-empty string");
      d.name = o["name"].get<std::string>();
      const json& sh = need(o, "shape", at);
      if (!sh.is_array() || sh.size() > 8) bad(at + "shape must be an array of at most 8 sizes");
      for (const auto& x : sh) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > (int64_t(1) << 40))
          bad(at + "shape holds a size that is not an integer in [0, 2^40]");
        d.shape.push_back(x.get<int64_t>());
      }
      if (!need(o, "dtype", at).is_string()) bad(at + "dtype must be a string");
      d.dtype = parse_dtype(o["dtype"].get<std::string>(), where);
      if (!out.empty() && !(out.back().name < d.name)) bad(std::string(k) + " are not sorted by name without repeats at '" + d.name + "'");
      out.push_back(std::move(d));
    }
    return out;
  }
};

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// A parameter no rule covers, and what to do about it.
std::string uncovered(const char* rules, const TensorDecl& p) {
  return std::string("no ") + rules + " rule covers parameter '" + p.name + "' " + shape_text(p.shape) +
         " (the default rules cover PyTorch's usual names: docs/model.md); add a rule for it to the config's model." +
         rules + " (its rules come before the defaults), e.g. {\"match\": \"" + p.name + "\", " +
         (std::string(rules) == "init" ? "\"init\": \"normal\", \"std\": 0.02" : "\"decay\": false") + "}";
}

}  // namespace

bool ParamMatch::covers(const std::string& name, size_t dims) const {
  if (ndim >= 0 && size_t(ndim) != dims) return false;
  // Glob: '*' any run of characters, '?' one character (iterative, with backtracking to the last '*').
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < match.size() && (match[p] == '?' || match[p] == name[n])) {
      p++;
      n++;
    } else if (p < match.size() && match[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < match.size() && match[p] == '*') p++;
  return p == match.size();
}

uint64_t TensorDecl::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

Problem tensors_problem(const std::vector<TensorDecl>& params, const std::vector<TensorDecl>& buffers) {
  for (const auto& p : params)
    if (p.dtype != DType::kF32)
      return "parameter '" + p.name + "' is " + dtype_name(p.dtype) + "; wit trains float32 (F32) parameters";
  uint64_t held = 0;
  for (const auto& b : buffers) held += b.numel();
  if (held > kMaxBufferElements)
    return "the model's buffers and tensor constants hold " + std::to_string(held) + " elements, more than " +
           std::to_string(kMaxBufferElements) +
           " (a trained network could hide there; compute masks and tables in forward)";
  return std::nullopt;
}

std::vector<InitRule> default_init_rules() {
  const InitRule normal{{"*", 2}, InitKind::kNormal, 0.02};
  auto with_ndim = [&](int nd) {
    InitRule r = normal;
    r.on.ndim = nd;
    return r;
  };
  return {{{"*bias", -1}, InitKind::kZeros, 0},    // Linear, convolutions, norms, in_proj_bias
          {{"*weight", 1}, InitKind::kOnes, 0},    // norm scales (LayerNorm, BatchNorm, GroupNorm)
          {{"*bias_*", 1}, InitKind::kZeros, 0},   // RNN gate biases: bias_ih_l0, bias_hh_l0_reverse
          {{"b_*", 1}, InitKind::kZeros, 0},       // hand-written gate biases: b_ih, b_hh
          {{"*.b_*", 1}, InitKind::kZeros, 0},
          normal,                                  // matrices, embeddings, RNN gate weights (weight_ih_l0)
          with_ndim(3), with_ndim(4), with_ndim(5)};  // convolutions 1d, 2d, 3d
}

std::vector<DecayRule> default_decay_rules() { return {{{"*", 0}, false}, {{"*", 1}, false}, {{"*", -1}, true}}; }

nlohmann::json ModelConfig::to_json() const {
  if (!scripted())
    return {{"arch", "gpt"}, {"n_layer", n_layer}, {"n_head", n_head}, {"d_model", d_model},
            {"context", context}, {"vocab", vocab}};
  json init_j = json::array(), decay_j = json::array();
  for (const auto& r : init) {
    json o = match_json(r.on);
    o["init"] = init_kind_name(r.kind);
    if (r.kind == InitKind::kUniform) o["bound"] = r.scale;
    if (r.kind == InitKind::kNormal) o["std"] = r.scale;
    init_j.push_back(std::move(o));
  }
  for (const auto& r : decay) {
    json o = match_json(r.on);
    o["decay"] = r.decay;
    decay_j.push_back(std::move(o));
  }
  return {{"arch", "torchscript"},
          {"file", file.hex()},
          {"context", context},
          {"vocab", vocab},
          {"tokens", token_mode_name(tokens)},
          {"pad", pad},
          {"params", decls_json(params)},
          {"buffers", decls_json(buffers)},
          {"init", init_j},
          {"decay", decay_j}};
}

ModelConfig ModelConfig::from_json(const json& j, const std::string& where) {
  ModelReader r{j, where};
  if (!j.is_object()) r.bad("not an object");
  const std::string arch = j.value("arch", std::string("gpt"));
  ModelConfig c;
  if (arch == "gpt") {
    r.only(j, {"arch", "n_layer", "n_head", "d_model", "context", "vocab"}, "");
    r.get(j, "n_layer", c.n_layer, 1, 256);
    r.get(j, "n_head", c.n_head, 1, 256);
    r.get(j, "d_model", c.d_model, 1, 65536);
    r.get(j, "context", c.context, 1, 1 << 20);
    if (j.contains("vocab") && j["vocab"].is_number_integer() && j["vocab"] != 257)
      r.bad("vocab " + j["vocab"].dump() + ": " + kBuiltinByteLevel);
    r.get(j, "vocab", c.vocab, 257, 257);
    if (c.d_model % c.n_head) r.bad("d_model must be a multiple of n_head");
    return c;
  }
  if (arch != "torchscript") r.bad("arch must be \"gpt\" or \"torchscript\"");
  c.arch = Arch::kTorchScript;
  r.only(j, {"arch", "file", "context", "vocab", "tokens", "pad", "params", "buffers", "init", "decay"}, "");
  if (!r.need(j, "file").is_string() || !Hash32::from_hex(j["file"].get<std::string>(), c.file))
    r.bad("file must be 64 hex digits (the model file's digest)");
  r.need(j, "context");
  r.get(j, "context", c.context, 1, 1 << 20);
  r.need(j, "vocab");
  r.get(j, "vocab", c.vocab, 2, int64_t(1) << 32);
  const std::string tok = r.need(j, "tokens").is_string() ? j["tokens"].get<std::string>() : "";
  if (tok != "bytes" && tok != "u16" && tok != "u32") r.bad("tokens must be \"bytes\", \"u16\" or \"u32\"");
  c.tokens = tok == "u16" ? TokenMode::kU16 : tok == "u32" ? TokenMode::kU32 : TokenMode::kBytes;
  if (c.tokens == TokenMode::kBytes && c.vocab < 257)
    r.bad("vocab " + std::to_string(c.vocab) + " is smaller than byte data needs (257: bytes 0..255 and the start/end token 256)");
  if (c.tokens == TokenMode::kU16 && c.vocab > 65536)
    r.bad("vocab " + std::to_string(c.vocab) + " is larger than uint16 token ids can address (65536)");
  r.need(j, "pad");
  r.get(j, "pad", c.pad, 0, c.vocab - 1);
  if (c.tokens == TokenMode::kBytes && c.pad != kPad) r.bad("pad must be 256 for byte data (the byte-level start/end token)");
  c.params = r.decls("params");
  c.buffers = r.decls("buffers");
  if (c.params.empty()) r.bad("the model has no parameters");
  if (const Problem why = tensors_problem(c.params, c.buffers)) r.bad(*why);
  const json& ij = r.need(j, "init");
  if (!ij.is_array() || ij.empty() || ij.size() > 1024) r.bad("init must be an array of 1 to 1024 rules");
  for (size_t i = 0; i < ij.size(); i++) {
    const std::string at = "init[" + std::to_string(i) + "].";
    if (!ij[i].is_object()) r.bad("init[" + std::to_string(i) + "] is not an object");
    r.only(ij[i], {"match", "ndim", "init", "std", "bound"}, at);
    InitRule rule;
    rule.on = r.match(ij[i], at);
    const std::string k = r.need(ij[i], "init", at).is_string() ? ij[i]["init"].get<std::string>() : "";
    const char* scale_key = nullptr;
    if (k == "normal") rule.kind = InitKind::kNormal, scale_key = "std";
    else if (k == "uniform") rule.kind = InitKind::kUniform, scale_key = "bound";
    else if (k == "ones") rule.kind = InitKind::kOnes;
    else if (k == "zeros") rule.kind = InitKind::kZeros;
    else r.bad(at + "init must be \"normal\", \"uniform\", \"ones\" or \"zeros\"");
    for (const char* s : {"std", "bound"})
      if (ij[i].contains(s) && (!scale_key || std::string(s) != scale_key)) r.bad(at + s + " does not apply to " + k);
    if (scale_key) {
      const json& v = r.need(ij[i], scale_key, at);
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1e6))
        r.bad(at + scale_key + " must be a number in (0, 1e6]");
      rule.scale = v.get<double>();
    }
    c.init.push_back(rule);
  }
  const json& dj = r.need(j, "decay");
  if (!dj.is_array() || dj.empty() || dj.size() > 1024) r.bad("decay must be an array of 1 to 1024 rules");
  for (size_t i = 0; i < dj.size(); i++) {
    const std::string at = "decay[" + std::to_string(i) + "].";
    if (!dj[i].is_object()) r.bad("decay[" + std::to_string(i) + "] is not an object");
    r.only(dj[i], {"match", "ndim", "decay"}, at);
    DecayRule rule;
    rule.on = r.match(dj[i], at);
    if (!r.need(dj[i], "decay", at).is_boolean()) r.bad(at + "decay must be true or false");
    rule.decay = dj[i]["decay"].get<bool>();
    c.decay.push_back(rule);
  }
  // Every parameter covered by an init rule and a decay rule.
  for (const auto& p : c.params) {
    if (std::none_of(c.init.begin(), c.init.end(), [&](const InitRule& x) { return x.on.covers(p.name, p.shape.size()); }))
      r.bad(uncovered("init", p));
    if (std::none_of(c.decay.begin(), c.decay.end(), [&](const DecayRule& x) { return x.on.covers(p.name, p.shape.size()); }))
      r.bad(uncovered("decay", p));
  }
  return c;
}

uint64_t ParamSpec::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

namespace {

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

std::vector<ParamSpec> script_params(const ModelConfig& c) {
  std::vector<ParamSpec> ps;
  for (const auto& d : c.params) {
    ParamSpec p{d.name, d.shape, InitKind::kZeros, 0, false};
    auto init = std::find_if(c.init.begin(), c.init.end(), [&](const InitRule& r) { return r.on.covers(d.name, d.shape.size()); });
    if (init == c.init.end()) throw Error("no init rule covers parameter '" + d.name + "'", "model config");
    p.init = init->kind;
    p.bound = float(init->scale);
    auto dec = std::find_if(c.decay.begin(), c.decay.end(), [&](const DecayRule& r) { return r.on.covers(d.name, d.shape.size()); });
    if (dec == c.decay.end()) throw Error("no decay rule covers parameter '" + d.name + "'", "model config");
    p.decay = dec->decay;
    ps.push_back(std::move(p));
  }
  return ps;  // c.params is sorted by name
}

}  // namespace

std::vector<ParamSpec> model_params(const ModelConfig& c) { return c.scripted() ? script_params(c) : gpt_params(c); }

uint64_t param_count(const ModelConfig& c) {
  uint64_t n = 0;
  for (const auto& p : model_params(c)) n += p.numel();
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
  // The two draws below share their chunked loop on purpose: each is its own bit-exact recipe.
  if (p.init == InitKind::kNormal) {
    // Irwin-Hall: the sum of 12 uniform 24-bit integers, centred, is an exact
    // integer of mean 0 and standard deviation 2^24 (tails bounded at 6
    // sigma); one rounding to float and one multiply by std / 2^24.
    const float scale = p.bound / 16777216.0f;
    std::vector<uint8_t> buf(48 * 1024);
    for (uint64_t i = 0; i < n;) {
      uint64_t take = std::min<uint64_t>(1024, n - i);
      s.fill(buf.data(), 48 * take);
      for (uint64_t j = 0; j < take; j++) {
        int64_t sum = 0;
        for (int u = 0; u < 12; u++) sum += int64_t(get_le32(&buf[48 * j + 4 * u]) >> 8);
        out[i + j] = float(int32_t(sum - 6 * 16777216)) * scale;
      }
      i += take;
    }
    return;
  }
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
  auto ps = model_params(c);
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

std::string describe_params(const ModelConfig& c) {
  const std::vector<ParamSpec> ps = model_params(c);
  auto kind_text = [](InitKind k, double scale) {
    char buf[64];
    if (k == InitKind::kNormal) std::snprintf(buf, sizeof buf, "normal std %g", scale);
    else if (k == InitKind::kUniform) std::snprintf(buf, sizeof buf, "uniform bound %g", scale);
    else return std::string(init_kind_name(k));
    return std::string(buf);
  };
  std::vector<std::array<std::string, 4>> rows = {{"parameter", "shape", "init", "weight decay"}};
  uint64_t values = 0;
  for (const auto& p : ps) {
    values += p.numel();
    std::string init = kind_text(p.init, p.bound), decay = p.decay ? "yes" : "no";
    if (c.scripted()) {  // the rule that gave it: the first that covers the parameter
      for (size_t i = 0; i < c.init.size(); i++)
        if (c.init[i].on.covers(p.name, p.shape.size())) {
          init = kind_text(c.init[i].kind, c.init[i].scale) + "  init[" + std::to_string(i) + "] " + match_json(c.init[i].on).dump();
          break;
        }
      for (size_t i = 0; i < c.decay.size(); i++)
        if (c.decay[i].on.covers(p.name, p.shape.size())) {
          decay += "  decay[" + std::to_string(i) + "] " + match_json(c.decay[i].on).dump();
          break;
        }
    }
    rows.push_back({p.name, shape_text(p.shape), init, decay});
  }
  size_t w[3] = {0, 0, 0};
  for (const auto& r : rows)
    for (size_t k = 0; k < 3; k++) w[k] = std::max(w[k], r[k].size());
  std::string out = (c.scripted() ? "TorchScript model (init and decay: the first rule that covers each parameter; docs/model.md)"
                                  : "built-in GPT (init and decay: docs/training.md)") +
                    std::string(", vocab ") + std::to_string(c.vocab) + ", context " + std::to_string(c.context) + ": " +
                    std::to_string(ps.size()) + " parameters, " + std::to_string(values) + " values\n";
  for (const auto& r : rows) {
    std::string line;
    for (size_t k = 0; k < 3; k++) line += r[k] + std::string(w[k] - r[k].size() + 2, ' ');
    out += line + r[3] + "\n";
  }
  return out;
}

Hash32 model_file_digest(const std::string& path) {
  MappedFile f(path);
  return hash_tagged(tags::kModelFile, f.view());
}

}  // namespace wit
