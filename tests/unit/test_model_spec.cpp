// The manifest's model section for TorchScript runs (docs/model.md), without
// LibTorch: rule globs, rule order, validation with the field named, and the
// Irwin-Hall normal init against a hand-computed element.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/run/model_spec.h"
#include "wit/hash/rng.h"
#include "wit/hash/tags.h"

using namespace wit;
using nlohmann::json;

namespace {

ModelConfig scripted() {
  ModelConfig c;
  c.arch = Arch::kTorchScript;
  c.file.b[0] = 1;
  c.context = 8;
  c.vocab = 257;
  c.params = {{"blocks.0.c_proj.weight", {4, 4}, DType::kF32}, {"ln.bias", {4}, DType::kF32},
              {"ln.weight", {4}, DType::kF32}, {"wte", {257, 4}, DType::kF32}};
  c.init = default_init_rules();
  c.decay = default_decay_rules();
  return c;
}

std::string refusal(const json& j) {
  try {
    ModelConfig::from_json(j, "cfg");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("rule globs", "[model_spec]") {
  CHECK(ParamMatch{"*", -1}.covers("anything.at.all", 3));
  CHECK(ParamMatch{"*bias", -1}.covers("h.0.ln_1.bias", 1));
  CHECK_FALSE(ParamMatch{"*bias", -1}.covers("h.0.ln_1.weight", 1));
  CHECK(ParamMatch{"h.?.attn.*", -1}.covers("h.3.attn.c_attn.weight", 2));
  CHECK_FALSE(ParamMatch{"h.?.attn.*", -1}.covers("h.10.attn.c_attn.weight", 2));
  CHECK(ParamMatch{"*c_proj*", -1}.covers("blocks.11.mlp.c_proj.weight", 2));
  CHECK(ParamMatch{"*", 1}.covers("x", 1));
  CHECK_FALSE(ParamMatch{"*", 1}.covers("x", 2));
  CHECK(ParamMatch{"a*b*c", -1}.covers("aXbYbZc", 1));
  CHECK_FALSE(ParamMatch{"a*b*c", -1}.covers("aXbYbZ", 1));
}

TEST_CASE("the first covering rule decides a parameter's init and decay", "[model_spec]") {
  ModelConfig c = scripted();
  c.init.insert(c.init.begin(), InitRule{{"*c_proj.weight", -1}, InitKind::kNormal, 0.002});
  const auto ps = model_params(c);
  REQUIRE(ps.size() == 4);
  CHECK(ps[0].init == InitKind::kNormal);
  CHECK(ps[0].bound == Approx(0.002));
  CHECK(ps[0].decay);
  CHECK(ps[1].init == InitKind::kZeros);
  CHECK_FALSE(ps[1].decay);
  CHECK(ps[2].init == InitKind::kOnes);
  CHECK(ps[3].bound == Approx(0.02));
  CHECK(param_count(c) == 16 + 4 + 4 + 257 * 4);
  // Round trip of the canonical section.
  CHECK(ModelConfig::from_json(c.to_json(), "x").to_json() == c.to_json());
  // The built-in GPT's section is as it always was.
  CHECK(ModelConfig().to_json().dump() ==
        R"({"arch":"gpt","context":128,"d_model":128,"n_head":4,"n_layer":2,"vocab":257})");
}

TEST_CASE("the default rules cover PyTorch's usual names, and refuse others by name", "[model_spec]") {
  ModelConfig c = scripted();
  c.params = {{"b_hh", {12}, DType::kF32},
              {"cell.b_ih", {12}, DType::kF32},
              {"conv.bias", {8}, DType::kF32},
              {"conv.weight", {8, 3, 3, 3}, DType::kF32},
              {"emb.weight", {10, 4}, DType::kF32},
              {"enc.layers.0.self_attn.in_proj_bias", {12}, DType::kF32},
              {"enc.layers.0.self_attn.in_proj_weight", {12, 4}, DType::kF32},
              {"norm.weight", {4}, DType::kF32},
              {"rnn.bias_hh_l0_reverse", {96}, DType::kF32},
              {"rnn.bias_ih_l0", {96}, DType::kF32},
              {"rnn.weight_hh_l0", {96, 32}, DType::kF32},
              {"tcn.weight", {4, 4, 3}, DType::kF32}};
  const auto ps = model_params(ModelConfig::from_json(c.to_json(), "x"));
  const std::vector<InitKind> want = {InitKind::kZeros,  InitKind::kZeros,  InitKind::kZeros,  InitKind::kNormal,
                                      InitKind::kNormal, InitKind::kZeros,  InitKind::kNormal, InitKind::kOnes,
                                      InitKind::kZeros,  InitKind::kZeros,  InitKind::kNormal, InitKind::kNormal};
  REQUIRE(ps.size() == want.size());
  for (size_t i = 0; i < ps.size(); i++) {
    INFO(ps[i].name);
    CHECK(ps[i].init == want[i]);
    CHECK(ps[i].decay == (ps[i].shape.size() >= 2));
  }
  // Each parameter's rule, readable (wit-train --describe).
  const std::string text = describe_params(c);
  const size_t at = text.find("\nrnn.bias_ih_l0 ");
  REQUIRE(at != std::string::npos);
  const std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  CHECK_THAT(line, Catch::Contains(" [96] ") && Catch::Contains(" zeros  init[2] {\"match\":\"*bias_*\",\"ndim\":1} ") &&
                       Catch::EndsWith(" no  decay[1] {\"match\":\"*\",\"ndim\":1}"));
  CHECK_THAT(text, Catch::Contains("12 parameters"));
  // A vector or scalar with another name: no rule, refused by name with what to do.
  for (const TensorDecl& odd : {TensorDecl{"gain", {8}, DType::kF32}, TensorDecl{"temperature", {}, DType::kF32}}) {
    ModelConfig d = scripted();
    d.params.insert(std::find_if(d.params.begin(), d.params.end(), [&](const TensorDecl& p) { return odd.name < p.name; }), odd);
    CHECK_THAT(refusal(d.to_json()), Catch::Contains("no init rule covers parameter '" + odd.name + "'") &&
                                         Catch::Contains("add a rule for it to the config's model.init"));
  }
}

TEST_CASE("GPT-2-named parameters start where they started before the new default rules", "[model_spec]") {
  // docs/model.md "Changed defaults": the catch-all rules of before issue 25
  // and today's defaults give a GPT-2-style module (examples/gpt2_module.py's
  // names, and the bare wte/wpe of --names wit) the same initial state.
  ModelConfig now = scripted();
  now.params = {{"h.0.attn.c_attn.bias", {12}, DType::kF32}, {"h.0.attn.c_attn.weight", {12, 4}, DType::kF32},
                {"h.0.attn.c_proj.bias", {4}, DType::kF32},  {"h.0.attn.c_proj.weight", {4, 4}, DType::kF32},
                {"h.0.ln_1.bias", {4}, DType::kF32},         {"h.0.ln_1.weight", {4}, DType::kF32},
                {"h.0.mlp.c_fc.weight", {16, 4}, DType::kF32}, {"ln_f.bias", {4}, DType::kF32},
                {"ln_f.weight", {4}, DType::kF32},           {"wpe", {8, 4}, DType::kF32},
                {"wte.weight", {257, 4}, DType::kF32}};
  ModelConfig before = now;
  before.init = {{{"*bias", -1}, InitKind::kZeros, 0},
                 {{"*", 0}, InitKind::kOnes, 0},
                 {{"*", 1}, InitKind::kOnes, 0},
                 {{"*", -1}, InitKind::kNormal, 0.02}};
  const Bytes seed(32, 3);
  CHECK(initial_state_root(now, ByteView(seed)) == initial_state_root(before, ByteView(seed)));
  CHECK(now.to_json()["init"] != before.to_json()["init"]);  // the manifest's list, and so the run id, differ
}

TEST_CASE("the built-in GPT's vocabulary is bytes - another says so and names the module for token ids", "[model_spec]") {
  json gpt = {{"arch", "gpt"}, {"n_layer", 1}, {"n_head", 1}, {"d_model", 8}, {"context", 16}, {"vocab", 257}};
  REQUIRE(refusal(gpt).empty());
  gpt["vocab"] = 50257;
  CHECK_THAT(refusal(gpt), Catch::Contains("vocab 50257: the built-in GPT is byte-level (vocab 257") &&
                               Catch::Contains("examples/gpt2_module.py --vocab V"));
}

TEST_CASE("an invalid TorchScript model section names its field", "[model_spec]") {
  const json good = scripted().to_json();
  REQUIRE(refusal(good).empty());
  auto with = [&](const std::string& ptr, const json& v) {
    json j = good;
    j[json::json_pointer(ptr)] = v;
    return refusal(j);
  };
  CHECK_THAT(with("/vocab", 200), Catch::Contains("vocab 200 is smaller than byte data needs"));
  CHECK_THAT(with("/pad", 7), Catch::Contains("pad must be 256"));
  CHECK_THAT(with("/tokens", "words"), Catch::Contains("tokens must be"));
  CHECK_THAT(with("/params/3/dtype", "F64"), Catch::Contains("parameter 'wte' is F64"));
  CHECK_THAT(with("/params/0/name", "zzz"), Catch::Contains("not sorted by name"));
  CHECK_THAT(with("/init", json::array({{{"match", "*bias"}, {"init", "zeros"}}})),
             Catch::Contains("no init rule covers parameter 'blocks.0.c_proj.weight'"));
  CHECK_THAT(with("/init/3/init", "gaussian"), Catch::Contains("init[3].init must be"));
  CHECK_THAT(with("/init/5/std", -1), Catch::Contains("init[5].std must be a number"));
  CHECK_THAT(with("/init/0/std", 1), Catch::Contains("init[0].std does not apply to zeros"));
  CHECK_THAT(with("/decay/2/decay", "yes"), Catch::Contains("decay[2].decay must be true or false"));
  CHECK_THAT(with("/buffers", json::array({{{"name", "mask"}, {"shape", {300, 300}}, {"dtype", "BOOL"}}})),
             Catch::Contains("hold 90000 elements"));
  CHECK_THAT(with("/file", "12"), Catch::Contains("file must be 64 hex digits"));
  CHECK_THAT(with("/extra", 1), Catch::Contains("unknown key 'extra'"));
  json u16 = good;
  u16["tokens"] = "u16";
  u16["vocab"] = 70000;
  CHECK_THAT(refusal(u16), Catch::Contains("larger than uint16 token ids"));
  // uint32 ids (the tokens reader's --token-bytes 4): vocabularies up to 2^32.
  json u32 = u16;
  u32["tokens"] = "u32";
  CHECK(refusal(u32).empty());
  CHECK(ModelConfig::from_json(u32, "m").tokens == TokenMode::kU32);
  CHECK(ModelConfig::from_json(u32, "m").to_json()["tokens"] == "u32");
  u32["vocab"] = int64_t(1) << 32;
  CHECK(refusal(u32).empty());
  u32["vocab"] = (int64_t(1) << 32) + 1;
  CHECK_THAT(refusal(u32), Catch::Contains("vocab"));
  CHECK(token_mode_bytes(TokenMode::kBytes) == 0);
  CHECK(token_mode_bytes(TokenMode::kU16) == 2);
  CHECK(token_mode_bytes(TokenMode::kU32) == 4);
}

TEST_CASE("normal init is Irwin-Hall over the parameter's ChaCha20 stream", "[model_spec]") {
  ParamSpec p{"w", {3}, InitKind::kNormal, 0.02f, true};
  Bytes seed(32, 5);
  float got[3];
  init_param(p, ByteView(seed), got);
  // By hand from the stream: element i sums the top 24 bits of words 12i .. 12i + 11.
  ChaChaStream s(derive_key(tags::kInitWeights, {ByteView(seed), ByteView(std::string("w"))}));
  for (int i = 0; i < 3; i++) {
    int64_t sum = 0;
    for (int j = 0; j < 12; j++) sum += int64_t(s.next_u32() >> 8);
    const float want = float(int32_t(sum - 6 * 16777216)) * (0.02f / 16777216.0f);
    CHECK(std::memcmp(&got[i], &want, 4) == 0);
  }
}
