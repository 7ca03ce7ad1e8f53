// Sharded checkpoints (docs/distributed.md): the per-rank safetensors files
// of one checkpoint and the index (RUN/ckpt/step-NNNNNN.index.json) that binds
// them to one checkpoint root. Reading them needs no LibTorch, so wit-log
// verify checks them like whole checkpoints.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "wit/bytes.h"
#include "wit/safetensors.h"
#include "wit/state_root.h"

namespace wit {

inline constexpr const char* kShardIndexFormat = "wit.checkpoint-shards";

// step-000008.safetensors -> step-000008.index.json (beside it).
std::string shard_index_path(const std::string& checkpoint_path);
// step-000008.safetensors -> step-000008.shard-R-of-W.safetensors.
std::string shard_file_path(const std::string& checkpoint_path, int rank, int world);

// The index alone: its root and step, and per shard its file name (plain,
// beside the index) and the tensor names it holds. parse throws wit::Error.
struct ShardIndex {
  Hash32 root;
  int64_t step = -1;
  std::vector<std::pair<std::string, std::vector<std::string>>> shards;
  static ShardIndex parse(const std::string& text, const std::string& where);
};

struct ShardedCheckpoint {
  std::string index_path;
  Hash32 root;    // the root the index states
  int64_t step = -1;
  std::vector<Safetensors> files;    // one per shard, mapped
  std::vector<TensorView> tensors;   // every shard's tensors, in name order

  // Reads the index and its shards: format and version, shard files named
  // plainly beside the index, each holding exactly the tensors the index
  // lists for it, no tensor twice. Throws wit::Error naming the file. It does
  // not check the root: root_of_tensors() is the root the shards add up to.
  static ShardedCheckpoint open(const std::string& index_path);
  Hash32 root_of_tensors() const { return state_root(tensors); }
};

}  // namespace wit
