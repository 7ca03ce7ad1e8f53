// The exact root of a training state (parameters, AdamW moments, step), logged
// at every step and used for checkpoints: tensors are cut into fixed-size
// chunks hashed in parallel (four equal chunks at a time on AVX2), each tensor
// is a leaf over its chunk tree, and the root joins a parameters root and an
// optimizer root so a parameters-only release can be bound exactly. Spec:
// docs/state-root.md.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "wit/base/bytes.h"
#include "wit/run/safetensors.h"

namespace wit {

// Chunk size of a tensor's byte tree (the last chunk of a tensor may be shorter).
inline constexpr uint64_t kStateChunkBytes = uint64_t(1) << 16;

// Whether a state tensor is a model parameter (not "adam.*", not "wit.step"):
// the parameters form the parameters root, everything else the optimizer root.
bool is_param_tensor(const std::string& name);

// MTH over the chunk leaves H(0x00 || chunk) of `data` (MTH({}) for no bytes).
Hash32 chunk_root(ByteView data);

// H(kTensorLeaf || name || dtype || le64 rank || le64 dims... || le64 nbytes || chunk root),
// the name and dtype length-prefixed.
Hash32 tensor_leaf(const TensorView& t);

// Tensor leaves of `tensors`, sorted by name, computed on `threads` threads
// (0 = all cores). Throws wit::Error on a duplicate name.
using NamedLeaves = std::vector<std::pair<std::string, Hash32>>;
NamedLeaves tensor_leaves(const std::vector<TensorView>& tensors, unsigned threads = 0);

struct StateRoot {
  Hash32 params;  // MTH over the parameter tensors' leaves, in name order
  Hash32 optim;   // MTH over the other tensors' leaves (moments, step), in name order
  Hash32 root;    // H(kStateRoot || params || optim)
};
// From leaves in any order (sorted here; names must be unique): what rank 0
// combines from the ranks' leaves in a distributed run.
StateRoot state_root_of_leaves(NamedLeaves leaves);
StateRoot state_root_parts(const std::vector<TensorView>& tensors, unsigned threads = 0);
inline Hash32 state_root(const std::vector<TensorView>& tensors, unsigned threads = 0) {
  return state_root_parts(tensors, threads).root;
}
// The state root from its two halves (an opening checks params || optim against a logged root).
Hash32 join_state_root(const Hash32& params, const Hash32& optim);

}  // namespace wit
