// A run's model as plain data, with no LibTorch: the architecture (wit's
// built-in GPT, or a TorchScript file bound by its digest), the parameters'
// names and shapes, and their initial values generated from the run seed by
// declared rules, so any tool (and a verifier without LibTorch) can
// regenerate the initial state and its root. Format: docs/model.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"
#include "wit/base/check.h"
#include "wit/run/safetensors.h"

namespace wit {

enum class Arch { kGpt, kTorchScript };
// How record bytes become token ids: bytes (0..255), or the `tokens`
// reader's little-endian uint16 or uint32 ids passed through (decoded by
// wit::token_id, readers.h).
enum class TokenMode { kBytes, kU16, kU32 };

// The first error on a trainer's path to token data: the built-in GPT reads
// bytes (vocab 257: bytes 0..255 and the start/end token); a vocabulary of
// token ids is a TorchScript module's (issue 37 item 5).
inline constexpr const char* kBuiltinByteLevel =
    "the built-in GPT is byte-level (vocab 257: bytes 0..255 and the start/end token); for token ids train a "
    "TorchScript module: /usr/bin/python3 examples/gpt2_module.py --vocab V ... -o model.pt, then wit-train --model "
    "model.pt (docs/model.md)";
struct ReaderSpec;
// Bytes per token id: 0 for bytes (each byte is a token), 2 or 4.
unsigned token_mode_bytes(TokenMode m);
// "bytes", "u16", "u32": the manifest's model.tokens.
const char* token_mode_name(TokenMode m);
// The mode for data read by `reader`: kU16/kU32 for the tokens reader (by its
// token_bytes), else kBytes.
TokenMode token_mode_for(const ReaderSpec& reader);

enum class InitKind { kUniform, kNormal, kOnes, kZeros };

// A tensor a TorchScript module declares: parameter or buffer.
struct TensorDecl {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  uint64_t numel() const;
  bool operator==(const TensorDecl& o) const { return name == o.name && shape == o.shape && dtype == o.dtype; }
};

// Which parameters a rule covers: names matching a glob (`*` any run of
// characters, `?` one), and, when ndim >= 0, exactly that many dimensions.
struct ParamMatch {
  std::string match = "*";
  int ndim = -1;
  bool covers(const std::string& name, size_t dims) const;
};
struct InitRule {
  ParamMatch on;
  InitKind kind = InitKind::kZeros;
  double scale = 0;  // kUniform: the bound; kNormal: the standard deviation
};
struct DecayRule {
  ParamMatch on;
  bool decay = true;
};

// Rule defaults for PyTorch's usual parameter names (docs/model.md): biases
// (*bias, RNN gate biases bias_ih_l0 ..., b_ih ...) zero, norm scales
// (1-D *weight) one, tensors of 2 to 5 dimensions (matrices, embeddings, RNN
// gate weights, convolutions) normal(0, 0.02); no rule for any other vector
// or scalar, so such a parameter is refused by name. Weight decay on tensors
// of two or more dimensions.
std::vector<InitRule> default_init_rules();
std::vector<DecayRule> default_decay_rules();

struct ModelConfig {
  Arch arch = Arch::kGpt;
  // The built-in GPT.
  int64_t n_layer = 2, n_head = 4, d_model = 128;
  // Both: the context (tokens per row) and the vocabulary.
  int64_t context = 128;
  int64_t vocab = 257;  // gpt: bytes 0..255, and 256 = PAD (also the start token)
  static constexpr int64_t kPad = 256;
  // TorchScript: the file's digest H(kModelFile || bytes), its parameters and
  // buffers (sorted by name), the init and decay rules, the token mapping and
  // the start/end token.
  Hash32 file;
  std::vector<TensorDecl> params, buffers;
  std::vector<InitRule> init;
  std::vector<DecayRule> decay;
  TokenMode tokens = TokenMode::kBytes;
  int64_t pad = kPad;
  // Where the bound module file is on this machine (run directory, bundle
  // member): never serialised, set by whoever loads the manifest.
  std::string module_path;

  bool scripted() const { return arch == Arch::kTorchScript; }
  nlohmann::json to_json() const;
  static ModelConfig from_json(const nlohmann::json& j, const std::string& where);  // validates
};

// The most elements a TorchScript module's non-parameter tensors (buffers,
// tensor attributes, tensor constants) may hold together: a network hidden
// there would be an initial state the seed did not generate.
inline constexpr uint64_t kMaxBufferElements = uint64_t(1) << 16;

// Why a module's tensors cannot be trained by wit (nothing when they can):
// parameters that are not float32, buffers and constants past kMaxBufferElements.
Problem tensors_problem(const std::vector<TensorDecl>& params, const std::vector<TensorDecl>& buffers);

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  InitKind init = InitKind::kZeros;
  float bound = 0;    // kUniform: values in [-bound, bound); kNormal: the standard deviation
  bool decay = false; // AdamW weight decay applies
  uint64_t numel() const;
};

// All parameters, sorted by name: the order of the sketch's global index and
// of checkpoints. For the GPT, wte is tied to the output head; for a
// TorchScript model, each parameter's init and decay come from the first rule
// that covers it.
std::vector<ParamSpec> model_params(const ModelConfig& c);
uint64_t param_count(const ModelConfig& c);

// A table, one line per parameter: its name, shape, init and weight decay,
// and for a TorchScript model the rule each came from (wit-train --describe).
std::string describe_params(const ModelConfig& c);

// Initial values of one parameter: uniform or normal values from a ChaCha20
// stream keyed by H(kInitWeights || seed || name) with exact integer-to-float
// arithmetic, so the result is bit-identical on every machine; or ones / zeros.
void init_param(const ParamSpec& p, ByteView seed, float* out);

// Names of the full training state in a checkpoint: parameters under their own
// names, AdamW moments as "adam.m.<name>" / "adam.v.<name>", and "wit.step" (I64[1]).
std::string moment_name(char which, const std::string& param);
inline constexpr const char* kStepTensor = "wit.step";

// Root of the initial state (parameters from the seed, zero moments, step 0):
// what the genesis entry must hold.
Hash32 initial_state_root(const ModelConfig& c, ByteView seed);

// H(kModelFile || the file's bytes), read in pieces.
Hash32 model_file_digest(const std::string& path);

}  // namespace wit
