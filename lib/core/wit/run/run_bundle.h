// Run bundles: everything a leaderboard needs to judge one training run
// (manifest, heads, final-entry proof, commitments, challenges and replay
// reports, eval commitment, scores and spot checks, contamination
// certificate, released-model fingerprint), as a directory or as one .wbundle
// file, indexed by bundle.json with a BLAKE2b-256 per member.
// Format: docs/run-bundle.md.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "wit/base/bytes.h"
#include "wit/base/check.h"
#include "wit/base/io.h"

namespace wit {

inline constexpr const char* kRunBundleFormat = "wit.run-bundle";
inline constexpr int kRunBundleVersion = 1;
inline constexpr const char* kRunBundleIndex = "bundle.json";
// Refuse to read more than this much or this many members into memory.
inline constexpr uint64_t kRunBundleMaxBytes = uint64_t(4) << 30;
inline constexpr size_t kRunBundleMaxMembers = 100000;

// Member names (docs/run-bundle.md, "Members").
namespace member {
inline constexpr const char* kManifest = "manifest.json";
inline constexpr const char* kHeads = "heads.jsonl";
inline constexpr const char* kFinal = "final.json";
inline constexpr const char* kDataCommit = "data.commit.json";
inline constexpr const char* kLog = "run.wlog";
inline constexpr const char* kEvalCommit = "eval.commit.json";
inline constexpr const char* kEval = "eval.json";
inline constexpr const char* kEvalScores = "eval.scores.json";
inline constexpr const char* kContamination = "contamination.json";
inline constexpr const char* kModelFingerprint = "model.fingerprint.json";
// The released weights file bound exactly to the final state (wit-sketch match --json).
inline constexpr const char* kModelBinding = "model.binding.json";
inline constexpr const char* kChallenges = "challenges/";
inline constexpr const char* kReports = "reports/";
inline constexpr const char* kEvalChecks = "eval-checks/";
// Fresh-probe checks of a model behind an API (wit-sketch probe-check -o), named by nonce.
inline constexpr const char* kProbeChecks = "probe-checks/";
// The board key's draw of a challenge (docs/board.md), named as the challenge.
inline constexpr const char* kDraws = "draws/";
// The board's own signed report on the response it verified, named as the challenge.
inline constexpr const char* kBoardReports = "board-reports/";
// The board's own signed evaluation of the released weights on its benchmark.
inline constexpr const char* kBoardEval = "board-eval.json";
// The board's signed audit of the training tree's sorted leaves.
inline constexpr const char* kBoardLeaves = "board-leaves.json";
// On a board with an evidence store: where the run's log went (board/def.h, StoredLog), in run.wlog's place.
inline constexpr const char* kStoredLog = "log.stored.json";
}  // namespace member

// The members every bundle must have (bundle.json aside): the run and its
// data commitment, what a board checks itself.
const std::vector<std::string>& required_members();
// The trainer's own evaluation (eval.commit.json, eval.json, eval.scores.json,
// contamination.json): optional; checked when present (docs/run-bundle.md).
const std::vector<std::string>& trainer_eval_members();
// True for a name a run bundle may hold: a fixed member, or DIR/NAME.json in
// challenges/, reports/, eval-checks/, probe-checks/, draws/ or board-reports/ with NAME of [A-Za-z0-9._-] (1..64
// bytes, not starting with '.').
bool run_bundle_member_allowed(const std::string& name);
// True for a bundle (or challenge/report) name: 1..64 bytes of [A-Za-z0-9._-], not starting with '.'.
bool run_bundle_name_ok(const std::string& name);
// What a member of this name can hold at most (Bundle::decode's limit): a
// JSON member 256 MiB, the log the whole bundle's limit.
uint64_t run_bundle_member_limit(const std::string& name);
inline constexpr uint64_t kRunBundleMaxJsonBytes = uint64_t(256) << 20;
// A member's hash in bundle.json: BLAKE2b-256 of the file's bytes, untagged,
// so that `b2sum -l 256 FILE` shows the same digest.
std::string member_digest(const std::string& bytes);

struct RunBundle {
  std::string path;     // the directory or .wbundle file it was loaded from / is saved to
  bool archive = false;  // a .wbundle file rather than a directory
  std::map<std::string, std::string> files;  // every member by name, bundle.json included

  bool has(const std::string& name) const { return files.count(name) != 0; }
  // Throws wit::Error("bundle lacks member NAME", path) when absent.
  const std::string& get(const std::string& name) const;
  // Names of the members under a directory prefix ("challenges/"), sorted;
  // the part after the prefix, without ".json".
  std::vector<std::string> names_under(const std::string& prefix) const;

  // Reads a bundle directory (every regular file under it; links and other
  // kinds are refused) or a .wbundle file (any path that is a file). Throws
  // wit::Error on I/O errors and a damaged container; says nothing yet about
  // whether the members are the right ones (index_problem does).
  static RunBundle load(const std::string& path);
  // A .wbundle file's bytes (the Bundle container, docs/bundle.md).
  static RunBundle decode(ByteView data, const std::string& where);

  // bundle.json for the current members (all but bundle.json), canonical:
  // keys sorted, two-space indentation, final newline.
  std::string index_json(const std::string& name) const;
  // Checks bundle.json: valid JSON, format, version, name, only allowed
  // member names, every listed member present with its digest and every
  // present member listed, the required members present. Nothing when the
  // index is right (declared_name() is then a valid name), else the first reason.
  Problem index_problem() const;
  // Throws wit::Error("the bundle is damaged: REASON", where) when index_problem finds one.
  void require_whole(const std::string& where) const;
  // The name bundle.json gives, or "" when it cannot be read.
  std::string declared_name() const;

  // Every member is what its name says: a *.json member one JSON object, heads.jsonl
  // one JSON object per line. Throws wit::Error naming the first that is not.
  void check_member_syntax() const;

  // Sets `name` to `bytes` and rewrites bundle.json (keeping the bundle's
  // name), then writes the bundle back to `path`: for a directory the member
  // and then bundle.json, each atomically; for a .wbundle the whole file,
  // atomically.
  void put_and_save(const std::string& name, const std::string& bytes);
  // Writes a new bundle at `path` (which must not exist): a directory built
  // beside it and renamed into place, or a .wbundle file written atomically.
  void save_new() const;
};

// True when `path` names a .wbundle file by its extension.
bool is_wbundle_path(const std::string& path);

// The exclusive lock every read-modify-write of a bundle holds from before it
// reads until after it writes (waiting for another writer to finish), on the
// bundle directory or .wbundle file itself (FileLock::wait_existing).
FileLock lock_run_bundle(const std::string& path);

// Rebuilds a damaged bundle's bundle.json from the members present (under
// the bundle's lock): stale temporaries of killed writers are removed, every
// member present is listed with its digest, and the name kept (or `name`
// when given, as it must be when bundle.json gives none). Refuses a member
// that no run bundle may hold. `changes` says what was done, one line each;
// empty when the index was already right.
struct RepairResult {
  std::vector<std::string> changes;
  Problem problem;  // what index_problem still finds afterwards (nothing: whole)
};
RepairResult repair_run_bundle(const std::string& path, const std::string& name = "");

}  // namespace wit
