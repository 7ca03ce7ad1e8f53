// Sharded checkpoints (docs/distributed.md): the per-rank safetensors files
// of one checkpoint and the index (RUN/ckpt/step-NNNNNN.index.json) that binds
// them to one checkpoint root. Reading them needs no LibTorch, so wit-log
// verify checks them like whole checkpoints.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"
#include "wit/run/model_spec.h"
#include "wit/run/safetensors.h"
#include "wit/run/state_root.h"

namespace wit {

inline constexpr const char* kShardIndexFormat = "wit.checkpoint-shards";

// Which rank owns each of `sizes` (element counts of the parameters in name
// order) among `world` ranks: contiguous ranges in name order, cut where a
// tensor's midpoint crosses r * total / world (a tensor is never split, since
// the state root has one leaf per tensor). The one rule for --shard (ZeRO-1),
// data-parallel sketching and --shard=full.
std::vector<int> shard_owners(const std::vector<uint64_t>& sizes, int world);

// The compute units of a model for fully sharded training: the groups of
// parameters gathered together, in forward order. The built-in GPT: the
// embeddings {wpe, wte}, each block's tensors, the head {lnf.bias,
// lnf.weight, wte} (wte is tied, so it is in two units); a TorchScript
// model: one unit of all its parameters (wit cannot cut a module's forward).
std::vector<std::vector<std::string>> model_units(const ModelConfig& c);

// Fully sharded training's plan (--shard=full; the manifest's "sharding",
// docs/distributed.md): the world size, rank r's parameters [bounds[r],
// bounds[r+1]) in name order, and the units. It fixes the order of every
// floating-point sum of the sharded step, so it is part of the run id.
struct ShardPlan {
  int world = 1;
  std::vector<size_t> bounds;                    // world + 1 indices into model_params order
  std::vector<std::vector<std::string>> units;   // as model_units
  std::vector<int> owners() const;               // per parameter, name order
  nlohmann::json to_json() const;
  // Checked against the model: contiguous ranges covering every parameter
  // once, and exactly the model's units. Throws wit::Error at `where`.
  static ShardPlan from_json(const nlohmann::json& j, const ModelConfig& c, const std::string& where);
  bool operator==(const ShardPlan& o) const { return world == o.world && bounds == o.bounds && units == o.units; }
};
// The plan wit-train makes for `world` ranks (shard_owners, model_units).
ShardPlan plan_shards(const ModelConfig& c, int world);

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
