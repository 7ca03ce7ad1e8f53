// Small TorchScript modules built in C++ (torch::jit::Module::define), for the
// tests and the attack suite: no Python needed. Torch-free header, so a test
// that includes Catch never sees LibTorch's own CHECK macro.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wit {

// The forward of the plain module: embedding, one tanh layer, layer norm, tied head.
extern const char* const kTinyLmForward;

// Forwards for the causal check (docs/eval.md, "Causal evaluation"), all over
// the plain module's parameters: an honest one with causal self-attention,
// and three that read the future: the next token's embedding added to the
// input (kPeekNextForward), 1e-4 added to the logit of the next token
// (kPeekSmallForward), and self-attention whose mask lets each position see
// one token ahead (kLeakyAttentionForward).
extern const char* const kCausalAttentionForward;
extern const char* const kPeekNextForward;
extern const char* const kPeekSmallForward;
extern const char* const kLeakyAttentionForward;

enum class TinyExtra {
  kNone,
  kFloat64Param,  // a float64 parameter "scale"
  kTiedParam,     // a parameter "head" sharing wte's storage
  kBigBuffer,     // a 300 x 300 buffer "memory"
  kStoredValues,  // other values stored in the file ("pretrained")
  kHiddenNetwork, // buffers memory [V, 300] and memory_out [300, V] added to the logits
  kCounter,       // an int attribute "calls" that forward increments
  kTrainCounter,  // the same, in training mode only (as BatchNorm's running statistics)
  kListParams,    // wte and proj also held in a List[Tensor] "ws" that forward uses (as nn.GRU's _flat_weights)
  kTupleParams,   // wte and proj also held in a tuple "pair" that forward uses
  kViewBuffer,    // a buffer "proj_t" made from proj before saving (shares its storage)
  kUnusedParam,   // a parameter "spare" [d, d] that forward never uses
};

// Saves a module with parameters ln.weight, ln.bias [d], wte [vocab, d] and
// proj [d, d], forward `body` (default kTinyLmForward) and `extra`, and, when
// `table` is not empty, a List[int] attribute "table" holding it; returns path.
std::string save_tiny_lm(const std::string& path, int64_t vocab, int64_t d, const std::string& body = "",
                         TinyExtra extra = TinyExtra::kNone, const std::vector<int64_t>& table = {});

// The address of a fresh float32 CPU tensor of `bytes` bytes, from LibTorch's
// current CPU allocator (for the test of wit's huge-page allocator).
uintptr_t fresh_tensor_address(size_t bytes);

}  // namespace wit
