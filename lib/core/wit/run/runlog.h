// What wit-log does with a run directory: its paths, entries as JSON, log
// proofs (inclusion of an entry, consistency of two heads) as self-contained
// documents and their verification, signing heads, and the verification of a
// whole run. Formats and layout: docs/witness-log.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"
#include "wit/base/check.h"
#include "wit/run/manifest.h"
#include "wit/hash/sign.h"
#include "wit/run/wlog.h"

namespace wit {

// The files of a run directory (docs/witness-log.md, "Run directory").
struct RunPaths {
  std::string dir;
  explicit RunPaths(std::string d);
  std::string manifest() const { return dir + "/run.json"; }
  std::string model() const { return dir + "/" + kModelFileName; }  // TorchScript runs: the bound model file
  std::string log() const { return dir + "/run.wlog"; }
  std::string heads() const { return dir + "/run.heads"; }
  std::string ckpt_dir() const { return dir + "/ckpt"; }
  std::string checkpoint(uint64_t step) const;  // RUN/ckpt/step-%06d.safetensors
  std::string seed() const { return dir + "/seed"; }                // hex, revealed after training
  std::string seed_secret() const { return dir + "/seed.secret"; }  // trainer only, before the reveal
};

// A seed file's 32 bytes (64 hex digits, surrounding white space allowed);
// throws wit::Error naming `where` otherwise.
Bytes parse_seed_hex(std::string text, const std::string& where);
// RUN/seed if the seed has been revealed.
std::optional<Bytes> read_revealed_seed(const RunPaths& rp);

// Where a run's training data is: the data commitment, its index and the
// files; what is not given is taken from RUN/data.json (which wit-train
// writes). Throws wit::Error when RUN/data.json is needed and is not valid.
struct RunDataFiles {
  std::string commit, index;
  std::vector<std::string> files;
};
RunDataFiles run_data_files(const std::string& run, RunDataFiles given);
// How the trainer ran, from RUN/data.json: its LibTorch thread count (0 =
// all cores; at most cli::kMaxThreads) and its ranks (1..256). A missing or
// unreadable data.json gives {0, 1}; a field out of range is a wit::Error.
struct RunSettings {
  unsigned threads = 0;
  int world = 1;
};
RunSettings run_data_settings(const std::string& run);

// One entry as a JSON object (wit-log show). Per-example losses are always
// printed; the sketches and the probe are {"n","l2"} summaries unless `full`.
nlohmann::json entry_json(const LogEntry& e, uint64_t index, const Hash32& leaf, bool full);

// The last head of `heads` (with size `size`, when given); nullptr if none.
const TreeHead* find_head(const std::vector<TreeHead>& heads, std::optional<uint64_t> size = std::nullopt);

// ---- log proofs ------------------------------------------------------------

inline constexpr const char* kLogProofFormat = "wit.log-proof";
inline constexpr int kLogProofVersion = 1;

// Inclusion of entry `index` in the tree of `head`. Preconditions: index <
// head.size <= log.size() and log.root(head.size) == head.root.
nlohmann::json log_inclusion_document(const WitnessLog& log, const TreeHead& head, uint64_t index);
// Consistency of the log at old_size with the log at new_size. Each end is
// the signed head given, or (nullptr) the log's own unsigned root at that size.
nlohmann::json log_consistency_document(const WitnessLog& log, const Hash32& run_id, uint64_t old_size,
                                        uint64_t new_size, const TreeHead* old_head, const TreeHead* new_head);

// What a proof must additionally match: the trainer's key and the run id.
struct LogProofPins {
  std::optional<PublicKey> key;
  std::optional<Hash32> run_id;
};
// Verifies a log proof document with nothing else. Throws wit::Error (naming
// `where`) when the document is malformed; returns !ok when it is well formed
// but does not prove what it claims.
Verdict verify_log_proof(const nlohmann::json& doc, const LogProofPins& pins, const std::string& where);

// ---- heads -----------------------------------------------------------------

// Signs a head over the whole log of RUN and appends it to RUN/run.heads.
// Checks first that the key is the manifest's trainer key and that entry 0
// names the manifest's run. `time` 0 means now. With TornTail::kCut, a torn tail of
// the log and a torn last line of the heads (a crashed writer's) are cut
// first; without it they are errors.
TreeHead sign_run_head(const std::string& run_dir, const SecretKey& key, uint64_t time = 0,
                       TornTail torn = TornTail::kRefuse);

// ---- a run's rules on plain values ------------------------------------------
// One owner each: every verifier of a run's files (verify_run here, the
// replay verifier's bundle, the board's run bundle) asks these and says the
// "no" in its own words where it names its file. A seed is parse_seed_hex
// and seed_problem, a manifest's canonical form manifest_form_problem
// (manifest.h); a signed head is head_problem (wlog.h).

// Whether the file at `path` is the TorchScript module a scripted run's
// manifest binds, by its digest (nothing for a run of the built-in model):
// "the run's TorchScript model file is missing", or "the model file is not
// the one the manifest binds (digest HEX)". An unreadable file is a
// wit::Error.
Problem model_file_problem(const Manifest& m, const std::string& path);

// ---- verifying a run -------------------------------------------------------

struct RunCheckOptions {
  bool checkpoints = true;  // hash RUN/ckpt/*.safetensors against their entries
  bool init = true;         // regenerate the initial state when the seed is revealed
};

// The verdict on a run (reason: the first failure, naming the entry index,
// head line or file; summary: one line for people), with what was checked.
struct RunVerdict : Verdict {
  std::vector<std::string> warnings;
  Hash32 run_id;
  uint64_t entries = 0, heads = 0, checkpoints = 0;
  uint64_t sharded = 0;  // of the checkpoints, those stored as shards with an index
  bool seed_revealed = false;
  // The figures wit-log verify --json prints beside the verdict.
  nlohmann::json details() const;
};

// Checks everything a run directory holds (docs/witness-log.md, "Verifying a
// run"). Throws wit::Error when the run cannot be read at all (no manifest, an
// invalid manifest, no log file); every other failure is a negative verdict.
RunVerdict verify_run(const std::string& run_dir, const RunCheckOptions& opt = {});

}  // namespace wit
