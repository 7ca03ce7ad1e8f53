// A defined board (docs/board.md, "A defined board"): a folder with the
// board's definition (name, benchmark, policy, the board's Ed25519 public
// key), its benchmark records, one run bundle per run and the response
// bundles it verified, stored by digest. Also the board's two signed
// documents: the draw of a challenge (the nonce the trainer cannot choose)
// and the board's own report on a response it replayed.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/check.h"
#include "wit/run/bundle.h"
#include "wit/base/bytes.h"
#include "wit/run/challenge.h"
#include "wit/data/commitment.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/run/report.h"
#include "wit/run/run_bundle.h"
#include "wit/hash/sign.h"
#include "wit/hash/tags.h"
#include "wit/run/wlog.h"

namespace wit {

inline constexpr const char* kBoardDefinitionFormat = "wit.board-definition";
inline constexpr int kBoardDefinitionVersion = 1;
inline constexpr const char* kBoardDrawFormat = "wit.board-draw";
inline constexpr const char* kBoardReportFormat = "wit.board-report";
inline constexpr int kBoardDocVersion = 1;

// The board folder's layout (the same shape as run_bundle.h's member names, on purpose).
namespace board_path {
inline constexpr const char* kDefinition = "board.def.json";
inline constexpr const char* kBenchmarkCommit = "benchmark/eval.commit.json";
inline constexpr const char* kBenchmarkRecords = "benchmark/records/";
inline constexpr const char* kRuns = "runs/";
inline constexpr const char* kResponses = "responses/";
inline constexpr const char* kLeaves = "leaves/";
inline constexpr const char* kWeights = "weights/";
// The states of the stored responses, one file per state (raw safetensors), by digest.
inline constexpr const char* kStates = "states/";
// The runs' witness logs, on a board with an evidence store (submit puts them there).
inline constexpr const char* kLogs = "logs/";
inline constexpr const char* kRevealed = "benchmark/sealed/";
// What `wit-board prune` dropped from the evidence store, and when.
inline constexpr const char* kPruned = "pruned.json";
}  // namespace board_path
// Where `wit-board reveal` publishes epoch E's sealed set: benchmark/sealed/epoch-E.json.
std::string revealed_file(uint64_t epoch);

struct BoardPolicy {
  double fraction = 0.05;    // the tampering fraction confidence is stated for
  double confidence = 0.99;  // a run below it shows as pending, not certified
  int64_t k = 0;             // steps per board challenge (0: the smallest k reaching `confidence` in one challenge)
  // The gap test's level: a run whose Bonferroni-corrected p-value is below
  // it is flagged and not ranked among certified runs (docs/board.md).
  double gap_threshold = 0.01;
  // Which models the board takes (policy.models): "any" module (the
  // default), "builtin" (the built-in GPT only), or the listed TorchScript
  // module-file digests (hex of the manifest's model.file) the board reviewed.
  std::string models = "any";
  std::vector<std::string> model_digests;
  // The overlap test of replayed batches against benchmark records (docs/board.md,
  // "Overlap"): spans of at least `overlap_window` tokens a training record
  // shares with a benchmark record; when they cover at least `overlap_share`
  // of the benchmark record's text, `overlap_action` "reject" rejects the run
  // (the default) and "flag" shows it and keeps it out of the certified ranking.
  uint64_t overlap_window = 50;
  double overlap_share = 0.5;
  std::string overlap_action = "reject";
  // Why a run with model-file digest `file_hex` ("" for the built-in GPT) is not
  // taken, or nullopt.
  Problem model_problem(const std::string& file_hex) const;
  // Why the overlap settings are out of range ("overlap window must be ..."), or nullopt.
  Problem overlap_problem() const;
};

// The sealed split: benchmark records kept outside the board folder, whose
// salted commitment (leaf = H(kBoardSealedLeaf || salt || record), sorted,
// RFC 6962 root) and count are published in board.def.json. What the board
// ranks on.
struct SealedCommit {
  uint64_t epoch = 0;  // 0 for init's set, then one more per `seal`
  uint64_t n = 0;
  Hash32 root;
};
inline constexpr const char* kBoardSealedFormat = "wit.board-sealed";
Hash32 sealed_leaf(const Hash32& salt, ByteView record);
struct SealedRecord {
  Hash32 salt;
  std::string record;  // the record's canonical bytes (what the reader gives)
  Hash32 leaf;         // sealed_leaf(salt, record)
};
// The sealed records with their salts: a file the board keeps outside its
// folder (like its key) until `reveal` publishes it. Records in leaf order.
struct SealedSet {
  std::string board;
  uint64_t epoch = 0;
  std::vector<SealedRecord> records;

  // Salts drawn at random (libsodium), duplicates dropped, sorted by leaf.
  static SealedSet seal(const std::string& board, uint64_t epoch, const std::vector<std::string>& records);
  Hash32 root() const;  // RFC 6962 root of the leaves in order
  SealedCommit commit() const { return {epoch, uint64_t(records.size()), root()}; }
  std::vector<Hash32> leaves() const;
  nlohmann::json to_json() const;
  std::string dump() const;
  // Checks every leaf is its salt and record's and the order is strict.
  static SealedSet from_json(const nlohmann::json& j, const std::string& where);
  static SealedSet load(const std::string& path);
  // Why this is not the sealed set `c` of board `def_name`, or nullopt.
  Problem problem(const std::string& def_name, const SealedCommit& c) const;
};

struct BenchmarkRecordFile {
  std::string file;    // relative to the board folder: benchmark/records/NAME
  std::string digest;  // member_digest of its bytes (b2sum -l 256)
};

struct BoardDefinition {
  std::string name;
  PublicKey key;
  // The benchmark: the eval set the board keeps (its commitment and records),
  // read with the commitment's reader, scored with the eval metric.
  Commitment benchmark;
  std::string benchmark_digest;  // member_digest of benchmark/eval.commit.json
  std::vector<BenchmarkRecordFile> records;
  std::string metric;
  BoardPolicy policy;
  // The current epoch's sealed split; nullopt on a board without one.
  std::optional<SealedCommit> sealed;
  // Epochs whose sealed set the board has revealed (benchmark/sealed/epoch-E.json,
  // with its digest): their records join the public split.
  struct Revealed {
    SealedCommit commit;
    std::string file, digest;
  };
  std::vector<Revealed> revealed;
  // The evidence store (docs/board.md, "The evidence store"): where the bytes
  // the board's documents name by digest (responses/D.wbundle, weights/D.*,
  // leaves/D.wleaves) live, a path relative to DIR or absolute, outside DIR.
  // "" on boards defined before the store: their bytes are in DIR itself.
  std::string store;
  // The board key's signature over the definition (kBoardDefinition); every
  // definition this wit writes has one, and a definition that has one must verify.
  std::optional<std::array<uint8_t, 64>> signature;

  nlohmann::json to_json() const;
  std::string dump() const;  // keys sorted, two-space indentation, final newline
  void sign_with(const SecretKey& key);
  static BoardDefinition from_json(const nlohmann::json& j, const std::string& where);
  // DIR/board.def.json, with every benchmark file's digest checked.
  static BoardDefinition load(const std::string& dir);
  // The k a board challenge draws over T steps: policy.k (at most T), or the
  // smallest k reaching the policy's confidence in one challenge.
  int64_t draw_k(int64_t T) const;
  // Why a run evaluated on eval set `eval_root`/`eval_n` is not on this
  // board's benchmark, or nullopt.
  Problem benchmark_problem(const Hash32& eval_root, uint64_t eval_n) const;
  // The public split of a run scored on sealed epoch `epoch`: the benchmark,
  // then the records of every revealed epoch before it, in epoch order
  // (docs/board.md, "Epochs: reveal and seal"). Its revealed epochs; its id
  // (the benchmark's root when there are none, else H(kBoardPublicSplit ...))
  // and record count, for epochs that are all revealed (throws otherwise).
  std::vector<uint64_t> public_epochs_before(uint64_t epoch) const;
  Hash32 public_split_root(const std::vector<uint64_t>& epochs) const;
  uint64_t public_split_n(const std::vector<uint64_t>& epochs) const;
  // Why an eval on `eval_root`/`eval_n` is not on the public split of
  // `epochs`, or nullopt.
  Problem public_split_problem(const std::vector<uint64_t>& epochs, const Hash32& eval_root, uint64_t eval_n) const;
};

// The evidence store of the board at `dir`: `given` (--store) when not
// empty, else the definition's `store` (relative to DIR), else DIR itself.
std::string board_store(const std::string& dir, const BoardDefinition& def, const std::string& given = "");

// Files in the board folder DIR that it does not expect (relative paths):
// anything but the definition, the benchmark's files, revealed epochs, the
// runs' folders (a bundle names its own ignored files), pruned.json, .git*
// and, on a board whose store is DIR, stored evidence named by digest. A
// temporary of an interrupted command is among them. Sorted.
std::vector<std::string> unexpected_board_files(const std::string& dir, const BoardDefinition& def);
// Files in evidence store `store` that are not stored evidence
// (SUB/DIGEST.EXT): a temporary of an interrupted command, a stray file. Sorted.
std::vector<std::string> unexpected_store_files(const std::string& store);
// Removes the temporaries board commands that are gone left in the folder
// (responses/.incoming-PID… of older versions) and in the store (trees
// SUB/.incoming.tmp.PID.XXXXXX): a later board command cleans up after a
// kill. Returns what it removed. The caller holds the board's lock.
std::vector<std::string> remove_stale_board_temporaries(const std::string& dir, const std::string& store);

// `wit-board prune`: drops from the store the stored bytes (responses,
// weights, model files, leaves) of the runs chosen (`runs` by name, and with
// `before` > 0 every run whose newest board draw is older than that Unix
// time), keeping any digest a run not chosen still names; records each in
// DIR/pruned.json with the runs and the time. The signed documents stay:
// verdicts never change; audit says which reports can no longer be replayed.
struct PruneResult {
  std::vector<std::string> pruned;  // store paths removed (or already absent) and recorded
  uint64_t bytes = 0;               // bytes freed
};
PruneResult prune_board(const std::string& dir, const std::string& store_given, const std::vector<std::string>& runs,
                        uint64_t before, uint64_t now);
// DIR/pruned.json (wit.board-pruned, version 1): what prune dropped, each
// store path with the Unix time and the runs it was pruned for.
inline constexpr const char* kBoardPrunedFormat = "wit.board-pruned";
struct PruneRecord {
  struct Entry {
    std::string path;  // a store path a board document names (responses/D.wbundle, ...)
    uint64_t at = 0;
    std::vector<std::string> runs;
  };
  std::vector<Entry> pruned;
  nlohmann::json to_json() const;
  static PruneRecord from_json(const nlohmann::json& j, const std::string& where);
};
// runs/NAME/log.stored.json (wit.board-log, version 1): on a board with an
// evidence store, submit keeps the run's witness log in the store at
// logs/DIGEST.wlog and this document in the run's folder instead of run.wlog:
// the log's digest (member_digest), size, entry count and its loss curve
// (the mean loss of at most kStoredLogCurvePoints steps, curve_steps), the
// trainer's logged values, which audit re-derives from the stored log.
inline constexpr const char* kBoardLogFormat = "wit.board-log";
inline constexpr size_t kStoredLogCurvePoints = 1000;
struct StoredLog {
  std::string digest;  // hex
  uint64_t size = 0, entries = 0;
  std::vector<std::pair<int64_t, double>> curve;  // (step, mean loss) at curve_steps(entries - 1)
  std::string path() const;                       // logs/DIGEST.wlog
  nlohmann::json to_json() const;
  std::string dump() const;  // to_json, two-space indentation, final newline
  static StoredLog from_json(const nlohmann::json& j, const std::string& where);
};
// The steps of a T-step run a stored log's curve keeps: 1..T when T <= points,
// else `points` steps from 1 to T, evenly spread (1 + floor(i (T-1) / (points-1))).
std::vector<int64_t> curve_steps(int64_t T, size_t points = kStoredLogCurvePoints);

// DIR/pruned.json read back: store path -> "pruned from the store on DATE (runs …)", empty when none.
std::map<std::string, std::string> pruned_evidence(const std::string& dir);
// What DIR/pruned.json says prune dropped of one run's evidence: of the store
// paths its board documents name, how many are recorded as pruned, and the
// newest time (Unix) one was. files 0: nothing of it was pruned.
struct RunPruned {
  size_t files = 0, of = 0;
  uint64_t at = 0;
  bool log = false;  // its stored log (log.stored.json) is among them
};
RunPruned run_pruned(const std::string& dir, const RunBundle& b);
// "YYYY-MM-DD HH:MM UTC" of a Unix time.
std::string utc_date(uint64_t t);

// True when DIR holds a board definition.
bool is_board_dir(const std::string& dir);
// Throws wit::Error("not a board (no board.def.json)", dir) unless it is one.
void require_board_dir(const std::string& dir);
// The board a bundle at `bundle_path` sits on (DIR/runs/NAME), or "".
std::string board_of_bundle(const std::string& bundle_path);

// wit-board init: writes DIR/board.def.json, copies the benchmark commitment
// and records into DIR/benchmark (checked against the commitment first), and
// creates the key at `key_path` when it does not exist (it must lie outside
// DIR). Throws wit::Error; nothing is left in DIR on failure.
struct BoardInit {
  std::string dir, name, key_path, commit_path;
  // The evidence store (outside DIR; made when missing), recorded relative to
  // DIR; "" for the default, DIR's sibling BASENAME.store.
  std::string store;
  std::vector<std::string> record_files;
  BoardPolicy policy;
  // The sealed split: `sealed_path` (outside DIR, new) receives the sealed
  // records of `sealed_files` (read with the benchmark's reader; none of
  // them a record of the published benchmark) with a random salt each.
  std::string sealed_path;
  std::vector<std::string> sealed_files;
  // Or, with `split` > 0, that many of the given benchmark's distinct records
  // drawn at random (libsodium) are sealed, and only the rest is published:
  // written as benchmark/records/public.EXT in the reader's format and
  // committed anew (benchmark/eval.commit.json is that commitment; trainers
  // evaluate on it). Not for the files reader.
  uint64_t split = 0;
};
BoardDefinition init_board(const BoardInit& in);
// `wit-board reveal`: ends the current epoch. Publishes its sealed set (the
// records and salts, checked against the definition's commitment) as
// benchmark/sealed/epoch-E.json, moves the commitment to `revealed` and
// re-signs the definition; the board then has no sealed split until `seal`.
// Holds the board's lock. Throws wit::Error (nothing written).
BoardDefinition reveal_sealed(const std::string& dir, const SecretKey& key, const std::string& sealed_path);
// `wit-board seal`: a new sealed set for the next epoch (one more than any
// before) from `files` (the benchmark's reader; none a published or
// revealed record), written to `sealed_path` (outside DIR, new) and
// committed in the re-signed definition. Refused while an epoch is sealed.
BoardDefinition seal_board(const std::string& dir, const SecretKey& key, const std::string& sealed_path,
                           const std::vector<std::string>& files);
// --models WHICH: "any", "builtin" or comma-separated module digests (64 hex
// digits each) into `policy`; throws wit::Error naming a bad one.
void parse_models_policy(const std::string& which, BoardPolicy& policy);

// The lock every write to a board holds (on DIR itself).
FileLock lock_board(const std::string& dir);

// A board-drawn challenge's derivation: the board key's Ed25519 signature over
// (kBoardDraw, run id, the signed head with its signature, the challenge number).
Bytes draw_message(const Hash32& run_id, const TreeHead& head, uint64_t number);
Hash32 draw_nonce(const std::array<uint8_t, 64>& signature);

struct BoardDraw {
  PublicKey board_key;
  Hash32 run_id;
  TreeHead head;
  uint64_t number = 0;
  std::array<uint8_t, 64> signature{};
  Hash32 nonce;           // draw_nonce(signature)
  uint64_t drawn_at = 0;  // seconds since the epoch (information: when the board drew it)

  static BoardDraw make(const SecretKey& key, const Hash32& run_id, const TreeHead& head, uint64_t number,
                        uint64_t drawn_at);
  // Why this is not a draw of `key` (its signature, its nonce), or nullopt.
  Problem problem(const PublicKey& key) const;
  nlohmann::json to_json() const;
  static BoardDraw from_json(const nlohmann::json& j, const std::string& where);
};

// What the board key signs for one of its documents: len(tag) || tag || the
// document without "signature", as compact JSON with sorted keys.
Bytes board_signed_message(std::string_view tag, nlohmann::json doc);
// Why `signature` over `msg` is not the board's (`claimed` names another key,
// or the signature does not verify under `board`), or nullopt.
Problem board_signature_problem(const PublicKey& claimed, const PublicKey& board, const Bytes& msg,
                                                   const std::array<uint8_t, 64>& signature);

// A document the board key signs (its report, evaluation, tree audit): the
// key it names and the signature over board_signed_message(Tag, the
// document's to_json()).
template <class Doc, const std::string_view& Tag>
struct SignedByBoard {
  PublicKey board_key;
  std::array<uint8_t, 64> signature{};

  Bytes signed_bytes() const { return board_signed_message(Tag, static_cast<const Doc&>(*this).to_json()); }
  void sign_with(const SecretKey& key) {
    board_key = key.pub();
    signature = sign(key, signed_bytes());
  }
  // Why this is not signed by `key` ("is signed by another key than the
  // board's", "has a bad signature (not the board key's)"), or nullopt.
  Problem problem(const PublicKey& key) const {
    return board_signature_problem(board_key, key, signed_bytes(), signature);
  }
};

// A member of a response the board stores as its own file (docs/board.md,
// "The evidence store"): a state (state/...: states/DIGEST.safetensors) or a
// TorchScript module (model.pt: weights/DIGEST.pt), its member bytes as they
// are, named by their member_digest.
struct ResponsePart {
  std::string name;  // the response member's name
  std::string digest;
  uint64_t bytes = 0;
  // Whether a response member of this name is stored as a part.
  static bool is_part(const std::string& name);
  std::string path() const;  // states/DIGEST.safetensors or weights/DIGEST.pt
};

// The board's own report on a response bundle it replayed: the replay
// report, the response's digest and size, signed by the board key.
struct BoardReport : SignedByBoard<BoardReport, tags::kBoardReport> {
  std::string challenge;      // the challenge's member name
  std::string response_digest;  // member_digest of the (small) response bundle file
  uint64_t response_bytes = 0;
  // The members the stored response omits, each its own stored file (in
  // name order); empty (the field absent) in reports that name the whole
  // response file, every report before the parts.
  std::vector<ResponsePart> parts;
  nlohmann::json report;      // the replay report (ReplayReport::to_json)
  // The overlap test's finding on the replayed batches (docs/board.md,
  // "Overlap"): null, or {"step", "record", "leaf", "benchmark", "share",
  // "action"}; with action "reject" the report's verdict is rejected for it.
  nlohmann::json overlap;

  nlohmann::json to_json() const;
  static BoardReport from_json(const nlohmann::json& j, const std::string& where);
  // Where the response is stored in the board folder: responses/DIGEST.wbundle.
  std::string response_path() const;
};

// The board's own evaluation of a run's released weights on its benchmark:
// the eval commitment it computed (wit.eval: of the run, at its final step,
// bound to the final logged state root, on the benchmark), the weights file's
// digest and size (kept at weights/DIGEST.safetensors), signed by the board key.
inline constexpr const char* kBoardEvalFormat = "wit.board-eval";
struct BoardEval : SignedByBoard<BoardEval, tags::kBoardEval> {
  std::string weights_digest;
  uint64_t weights_bytes = 0;
  std::string model_digest;  // a TorchScript run's model file (weights/DIGEST.pt); "" for the built-in GPT
  nlohmann::json eval;  // EvalCommitment::to_json; null when refused
  std::string refused;  // why the board refused the model (it reads the future: the causal check); "" when scored
  // On a board with a sealed split: the epoch, the eval commitment of the
  // sealed records' scores (eval_root: the sealed root; record leaves: the
  // salted leaves; its scores_root commits to every per-record score, opened
  // at the reveal) and the gap test of public against sealed losses. Null
  // (has_sealed false) on a board without one, and when refused.
  bool has_sealed = false;
  uint64_t sealed_epoch = 0;
  nlohmann::json sealed_eval;  // EvalCommitment::to_json
  nlohmann::json gap;          // GapTest::to_json
  // The revealed epochs whose records joined the public split this run was
  // scored on (eval's eval_root is that split's id, BoardDefinition::
  // public_split_root); empty: the benchmark alone (and the field absent).
  std::vector<uint64_t> public_revealed;

  nlohmann::json to_json() const;
  static BoardEval from_json(const nlohmann::json& j, const std::string& where);
  // weights/DIGEST.safetensors and weights/DIGEST.pt in the board folder.
  std::string weights_path() const;
  std::string model_path() const;
};

// The board's audit of a run's training tree (docs/board.md, "The audited
// tree"): the sorted leaves file (wit-commit leaves) it audited against the
// run's data commitment, kept at leaves/DIGEST.wleaves, with the verdict
// (strictly increasing and giving the commitment's root, or why not), signed.
inline constexpr const char* kBoardLeavesFormat = "wit.board-leaves";
struct BoardLeaves : SignedByBoard<BoardLeaves, tags::kBoardLeaves> {
  std::string leaves_digest;
  uint64_t leaves_bytes = 0;
  uint64_t n = 0;
  Hash32 root;          // the data commitment's
  std::string refused;  // why the tree is not sorted or not the commitment's; "" when audited

  nlohmann::json to_json() const;
  static BoardLeaves from_json(const nlohmann::json& j, const std::string& where);
  std::string leaves_path() const;  // leaves/DIGEST.wleaves
};

// `wit-board leaves`: audits a run's sorted leaves file against the data
// commitment of the bundle at `bundle_path` (on a board), stores it by
// digest and adds the board's signed board-leaves.json. A file of another
// commitment (its header's n or root) or a malformed one is a usage error
// (wit::Error, nothing written); a tree that fails the audit (leaves out of
// order) is filed as refused, and rejects the run.
struct BoardLeavesResult {
  std::string member, stored;
  BoardLeaves doc;
};
BoardLeavesResult board_leaves(const std::string& bundle_path, const std::string& leaves_path, const SecretKey& key,
                               unsigned threads, const std::string& store_given = "");

// The board folder DIR of the bundle at DIR/runs/NAME; throws wit::Error
// when the bundle is not on a defined board.
std::string board_of_bundle_or_throw(const std::string& bundle_path);
// Throws wit::Error (naming `where`) when `key` is not the board's.
void check_board_key(const BoardDefinition& def, const SecretKey& key, const std::string& where);

// A run's bundle opened for the board to file into, the one sequence of every
// board writer: the board folder found, the board locked, then its definition
// read (under the lock, so a seal or reveal that ran while this one waited is
// the definition it files under, never the one before), `key` checked to be
// the board's, the submitted file `input` checked to exist (else
// wit::Error(`no_input`, input)), then the bundle locked (the one lock order:
// board before bundle), loaded and whole.
struct BoardFiling {
  // `store_given`: --store (else the definition's). Stale temporaries of
  // interrupted board commands are removed once the board is locked.
  BoardFiling(const std::string& bundle_path, const SecretKey& key, const std::string& input, const char* no_input,
              const std::string& store_given = "");
  std::string dir;
  FileLock board_lock;
  BoardDefinition def;
  std::string store;  // the evidence store the bytes go to
  FileLock bundle_lock;
  RunBundle bundle;
};

// A copy of a submitted file (a response, weights, leaves) in the evidence
// store while it is checked, inside a TemporaryTree STORE/SUB/.incoming.tmp.PID.X
// (known to the signal path: Ctrl-C removes it; one a kill left goes with the
// next StagedFile or remove_stale_board_temporaries): what is checked is what
// is kept. `from` empty: an empty file to write into. Removed unless kept.
class StagedFile {
 public:
  StagedFile(const std::string& store, const char* sub, const std::string& from, const std::string& suffix = "");
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  const std::string& path() const { return path_; }
  // Renames it to `to`, its name by `digest` (content-addressed: when `to`
  // already holds bytes of that digest the copy goes; other bytes there, a
  // store that served wrong ones, are replaced).
  void keep(const std::string& to, const std::string& digest);

 private:
  std::unique_ptr<TemporaryTree> tree_;
  std::string path_;
};

// A verified response staged in the store's parts (docs/board.md, "The
// evidence store"): every member ResponsePart::is_part names (each state,
// model.pt) in its own StagedFile, the rest as a small response bundle
// (`digest`, `bytes`). No parts (a response without states): nothing staged,
// the whole file is stored as before. `keep` renames the parts, then the bundle.
struct StagedResponse {
  std::string digest;
  uint64_t bytes = 0;
  std::vector<ResponsePart> parts;
  void keep(const std::string& store);

 private:
  friend StagedResponse stage_response(const std::string&, const SpooledBundle&);
  struct File {
    std::unique_ptr<StagedFile> staged;
    std::string rel, digest;
  };
  std::vector<File> files_;
};
StagedResponse stage_response(const std::string& store, const SpooledBundle& resp);

// A file's member_digest, read in pieces (a response bundle can be large).
std::string file_digest(const std::string& path, uint64_t* bytes = nullptr);

// Evidence the store could not give: missing (pruned, or never there) or not
// the bytes its signed document names. Not a verdict either way.
struct NotReVerifiable : Error {
  using Error::Error;
};

// The NotReVerifiable errors StoredCopy throws, also for a reader that checks
// a stored file's digest as it decodes it (SpooledBundle::open_hashed): the
// store does not hold STORE/rel (saying when `pruned` dropped it), or serves
// other bytes for it than its digest. `what` names it ("response", "weights").
NotReVerifiable not_in_store(const std::string& store, const std::string& rel, const char* what,
                             const std::map<std::string, std::string>& pruned);
NotReVerifiable other_bytes_in_store(const std::string& rel, const char* what);

// Opens a stored file for reading (open(2) by default; a test gives one that
// serves other bytes on a second open, as a changing store would).
using StoreOpen = std::function<Fd(const std::string& path)>;

// STORE/rel opened for reading, a regular file (`open`: open(2) by default);
// else throws not_in_store. What StoredCopy and a reader that hashes a stored
// part as it takes it in (the board's audit) both start with.
Fd open_stored(const std::string& store, const std::string& rel, const char* what,
               const std::map<std::string, std::string>& pruned, const StoreOpen& open = {});

// One stored file as audit uses it, read from the store once: STORE/rel is
// copied into a private temporary directory (mode 0700 under $TMPDIR, removed
// with the object; the copy also on Ctrl-C) while its digest is computed from the same bytes, so what
// the audit then reads is exactly what it hashed, whatever the store serves
// later. Throws NotReVerifiable when the store does not hold it (saying when
// `pruned`, rel -> "pruned from the store on DATE (runs ...)", dropped it) or
// serves other bytes than `digest`.
class StoredCopy {
 public:
  StoredCopy(const std::string& store, const std::string& rel, const std::string& digest, const char* what,
             const std::map<std::string, std::string>& pruned, const StoreOpen& open = {});
  // The private copy, named as in the store (its extension kept).
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<TempDir> dir_;        // private (0700)
  std::unique_ptr<TemporaryTree> tree_;  // inside it: removed by the signal handler too (Ctrl-C)
  std::string path_;
};

}  // namespace wit
