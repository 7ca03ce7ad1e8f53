// The reference GPT's parameters as plain data, with no LibTorch: names,
// shapes and initial values generated from the run seed, so any tool (and a
// verifier without LibTorch) can regenerate the initial state and its root.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/bytes.h"

namespace wit {

struct ModelConfig {
  int64_t n_layer = 2, n_head = 4, d_model = 128, context = 128;
  int64_t vocab = 257;  // bytes 0..255, and 256 = PAD (also the start token)
  static constexpr int64_t kPad = 256;

  nlohmann::json to_json() const;
  static ModelConfig from_json(const nlohmann::json& j, const std::string& where);  // validates
};

enum class InitKind { kUniform, kOnes, kZeros };

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  InitKind init = InitKind::kZeros;
  float bound = 0;    // kUniform: values in [-bound, bound)
  bool decay = false; // AdamW weight decay applies (matrices and embeddings, not biases/norms)
  uint64_t numel() const;
};

// All parameters, sorted by name: the order of the sketch's global index and of
// checkpoints. wte is tied to the output head.
std::vector<ParamSpec> gpt_params(const ModelConfig& c);
uint64_t param_count(const ModelConfig& c);

// Initial values of one parameter: uniform values from a ChaCha20 stream keyed
// by H(kInitWeights || seed || name) (exact integer-to-float arithmetic, so the
// result is bit-identical on every machine), or ones / zeros.
void init_param(const ParamSpec& p, ByteView seed, float* out);

// Names of the full training state in a checkpoint: parameters under their own
// names, AdamW moments as "adam.m.<name>" / "adam.v.<name>", and "wit.step" (I64[1]).
std::string moment_name(char which, const std::string& param);
inline constexpr const char* kStepTensor = "wit.step";

// Root of the initial state (parameters from the seed, zero moments, step 0):
// what the genesis entry must hold.
Hash32 initial_state_root(const ModelConfig& c, ByteView seed);

}  // namespace wit
