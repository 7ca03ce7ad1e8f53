// The state root (docs/state-root.md): chunk trees per tensor, tensor leaves,
// parameters and optimizer roots, hashed on all cores.
#include "wit/run/state_root.h"

#include <algorithm>

#include "wit/hash/blake2b_x4.h"
#include "wit/base/error.h"
#include "wit/hash/hash.h"
#include "wit/hash/merkle.h"
#include "wit/run/model_spec.h"
#include "wit/base/parallel.h"
#include "wit/hash/tags.h"

namespace wit {

bool is_param_tensor(const std::string& name) { return name.rfind("adam.", 0) != 0 && name != kStepTensor; }

namespace {

uint64_t chunk_count(uint64_t bytes) { return bytes == 0 ? 0 : (bytes + kStateChunkBytes - 1) / kStateChunkBytes; }

Hash32 leaf_of(const Hash32& chunks_root, const TensorView& t) {
  Blake2b h;
  h.update_field(ByteView(tags::kTensorLeaf));
  h.update_field(ByteView(t.name));
  h.update_field(ByteView(std::string_view(dtype_name(t.dtype))));
  h.update_le64(t.shape.size());
  for (int64_t d : t.shape) h.update_le64(uint64_t(d));
  h.update_le64(t.data.size);
  h.update(ByteView(chunks_root.data(), chunks_root.size()));
  return h.final();
}

// Chunk leaves [b, e) of `data` into out[b..e): full chunks four at a time where AVX2 allows.
void chunk_leaves(ByteView data, uint64_t b, uint64_t e, Hash32* out) {
  const uint64_t full = data.size / kStateChunkBytes;  // chunks of exactly kStateChunkBytes
  uint64_t i = b;
  if (leaves_x4_available())
    for (; i + 4 <= std::min(e, full); i += 4) {
      const uint8_t* p[4];
      for (int j = 0; j < 4; j++) p[j] = data.data + (i + uint64_t(j)) * kStateChunkBytes;
      leaves_x4(p, kStateChunkBytes, out + i);
    }
  for (; i < e; i++) {
    const uint64_t off = i * kStateChunkBytes;
    out[i] = kBlake2bTree.leaf(data.sub(off, std::min(kStateChunkBytes, data.size - off)));
  }
}

}  // namespace

Hash32 chunk_root(ByteView data) {
  std::vector<Hash32> leaves(chunk_count(data.size));
  chunk_leaves(data, 0, leaves.size(), leaves.data());
  return merkle_root(kBlake2bTree, leaves, 1);
}

Hash32 tensor_leaf(const TensorView& t) { return leaf_of(chunk_root(t.data), t); }

NamedLeaves tensor_leaves(const std::vector<TensorView>& tensors, unsigned threads) {
  // Every chunk of every tensor is one work item, so a few large tensors still
  // spread over all cores; work items of a thread are contiguous, and runs of
  // four full chunks of one tensor go through the four-lane kernel.
  std::vector<uint64_t> first(tensors.size() + 1, 0);
  for (size_t j = 0; j < tensors.size(); j++) first[j + 1] = first[j] + chunk_count(tensors[j].data.size);
  std::vector<Hash32> leaves(first.back());
  parallel_for(first.back(), threads, 16, [&](uint64_t b, uint64_t e) {
    size_t j = size_t(std::upper_bound(first.begin(), first.end(), b) - first.begin()) - 1;
    for (uint64_t i = b; i < e; j++) {
      const uint64_t hi = std::min(e, first[j + 1]);
      if (hi > i) chunk_leaves(tensors[j].data, i - first[j], hi - first[j], leaves.data() + first[j]);
      i = std::max(i, hi);
    }
  });
  NamedLeaves out;
  out.reserve(tensors.size());
  for (size_t j = 0; j < tensors.size(); j++) {
    std::vector<Hash32> mine(leaves.begin() + int64_t(first[j]), leaves.begin() + int64_t(first[j + 1]));
    out.emplace_back(tensors[j].name, leaf_of(merkle_root(kBlake2bTree, mine, 1), tensors[j]));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < out.size(); i++)
    // Two tensors of one name would make the root depend on the caller's order.
    if (out[i - 1].first == out[i].first) throw Error(std::string("duplicate tensor name '") + out[i].first + "'", "state root");
  return out;
}

Hash32 join_state_root(const Hash32& params, const Hash32& optim) {
  Blake2b h;
  h.update_field(ByteView(tags::kStateRoot));
  h.update(ByteView(params.data(), params.size()));
  h.update(ByteView(optim.data(), optim.size()));
  return h.final();
}

StateRoot state_root_of_leaves(NamedLeaves leaves) {
  std::sort(leaves.begin(), leaves.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Hash32> p, o;
  for (size_t i = 0; i < leaves.size(); i++) {
    if (i > 0 && leaves[i - 1].first == leaves[i].first)
      throw Error(std::string("duplicate tensor name '") + leaves[i].first + "'", "state root");
    (is_param_tensor(leaves[i].first) ? p : o).push_back(leaves[i].second);
  }
  StateRoot r;
  r.params = merkle_root(kBlake2bTree, p, 1);
  r.optim = merkle_root(kBlake2bTree, o, 1);
  r.root = join_state_root(r.params, r.optim);
  return r;
}

StateRoot state_root_parts(const std::vector<TensorView>& tensors, unsigned threads) {
  return state_root_of_leaves(tensor_leaves(tensors, threads));
}

}  // namespace wit
