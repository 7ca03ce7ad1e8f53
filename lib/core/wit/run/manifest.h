// The run manifest (run.json): everything a replay needs, fixed before
// training; its hash is the run id. Format: docs/manifest.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"
#include "wit/base/check.h"
#include "wit/data/commitment.h"
#include "wit/run/model_spec.h"
#include "wit/run/shards.h"
#include "wit/hash/sign.h"

namespace wit {

// The most steps a run may declare (and so any step interval).
inline constexpr int64_t kMaxSteps = 1000000000;

inline constexpr const char* kManifestFormat = "wit.run";
inline constexpr int kManifestVersion = 2;
// A TorchScript run's model file, beside run.json in the run directory and a
// member of the same name in response bundles.
inline constexpr const char* kModelFileName = "model.pt";

struct OptimizerConfig {
  double lr = 3e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  double grad_clip = 1.0;  // 0 = no clipping
};

struct ScheduleConfig {
  int64_t warmup = 10;        // linear warmup steps
  double min_lr_ratio = 0.1;  // cosine decays to lr * min_lr_ratio at the last step
};

struct FingerprintConfig {
  int64_t sketch_k = 512;     // weight-sketch buckets (power of two, >= 64)
  Hash32 sketch_seed;         // public, fixed in the manifest
  int64_t probe_every = 50;   // M: probe fingerprint every M steps and at the end
  int64_t probe_records = 8;  // probe set: records chosen from the committed data by the seed
  int64_t probe_dim = 64;     // m: projected dimensions
};

struct Manifest {
  ModelConfig model;
  OptimizerConfig opt;
  ScheduleConfig schedule;
  FingerprintConfig fp;
  int64_t batch_size = 16, steps = 100;
  // Gradient accumulation: each step's batch (each rank's share of it) is
  // run forward and backward in micro-batches of at most this many rows,
  // their gradients summed before the one clip + AdamW update. 0 = off (the
  // manifest then has no "micro_batch" field). docs/training.md.
  int64_t micro_batch = 0;
  // Dropout drawn from a generator keyed by the run's seed, the step and the
  // micro-batch (docs/training.md#dropout): for the built-in GPT its rate
  // (0 = off, no "dropout" field); for a TorchScript model `train_mode` runs
  // its forward in training mode (its own nn.Dropout rates). Evaluation,
  // probes and fingerprints always run in eval mode.
  double dropout = 0;
  bool train_mode = false;
  // Whether the step draws random numbers (and so needs the run's seed).
  bool random_step() const { return dropout > 0 || train_mode; }
  // Fully sharded training (wit-train --shard=full; docs/distributed.md):
  // the world size, each rank's range of parameters and the compute units,
  // which fix the order of the sharded step's sums. Absent (no "sharding"
  // field) for every other run, data parallel and ZeRO-1 included.
  std::optional<ShardPlan> sharding;
  int64_t checkpoint_every = 50;  // C
  int64_t head_every = 10;        // N: sign a tree head every N entries (and at the end)
  // The data, copied from the commitment: the root of its one tree, the
  // number of positions in it (distinct records; the data order permutes
  // 0 .. data_n - 1), and the reader.
  Hash32 data_root;
  uint64_t data_n = 0;
  ReaderSpec data_reader;
  Hash32 seed_commitment;         // H(kSeedCommit || seed)
  std::optional<Hash32> nonce;    // public registration nonce, if any
  PublicKey trainer_key;
  nlohmann::json software;        // {"wit": ..., "libtorch": ..., "blas": ...}: informational

  nlohmann::json to_json() const;
  std::string dump() const;  // canonical text written to RUN/run.json (and hashed)
  Hash32 run_id() const;     // H(kManifest || dump())
  static Manifest from_json(const nlohmann::json& j, const std::string& where);
  static Manifest load(const std::string& path);

  // Learning rate of step s (1-based): linear warmup, then cosine to min_lr_ratio.
  double lr_at(int64_t step) const;
};

// Whether `text` is the canonical form of the manifest `m` it parses to (the
// run id is the hash of that text, so a manifest in another form names
// another run): nothing, or "manifest is not in canonical form". The one
// rule: Manifest::load, the run's verifier, the replay verifier and the
// board's check of a run bundle all ask it.
Problem manifest_form_problem(const Manifest& m, std::string_view text);

Hash32 seed_commitment(ByteView seed);
// Whether a revealed seed opens the manifest's seed commitment: nothing, or
// "the revealed seed does not match the manifest's seed commitment".
Problem seed_problem(const Manifest& mf, ByteView seed);

// The user's training config (--config run.json): any of "model", "optimizer",
// "schedule", "batch_size", "steps", "checkpoint_every", "head_every",
// "fingerprint", "micro_batch", "dropout", "train_mode" (as in the manifest;
// missing fields take defaults), plus an
// optional "seed" (64 hex digits; secret, never copied into the manifest) and
// "nonce" (a public registration nonce). Unknown keys are errors.
struct TrainConfig {
  nlohmann::json overrides;    // the manifest fields given
  std::optional<Bytes> seed;   // 32 bytes when given
  std::optional<Hash32> nonce;
  static TrainConfig load(const std::string& path);
};

// The manifest of a new run: config over the defaults, with the data
// commitment, trainer key, seed commitment and software filled in. With
// `scripted` (a TorchScript model's file digest, parameters and buffers, as
// describe_module gives them), the model is that module: the config's
// "model" section must declare "vocab" and "context" and may set "init",
// "decay" and "pad"; the token mapping follows the data's reader.
Manifest make_manifest(const TrainConfig& cfg, const Commitment& data, const PublicKey& key,
                       const Hash32& seed_commit, const nlohmann::json& software, const std::string& where,
                       const ModelConfig* scripted = nullptr);

}  // namespace wit
