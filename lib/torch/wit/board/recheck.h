// The board's expensive steps (docs/board.md, "What each command costs"):
// `wit-board add` verifies a trainer's response bundle by replaying it
// (verify_response, the same verification as wit-replay verify), checks every
// replayed batch against the board's benchmark records, stores the response
// by digest and files the board's own signed report; `wit-board audit`
// re-verifies every stored response. Torch-free header; wit_torch code.
#pragma once
#include <string>
#include <vector>

#include <optional>

#include "wit/board/def.h"
#include "wit/board/gap.h"
#include "wit/board/overlap.h"
#include "wit/base/check.h"
#include "wit/eval/eval.h"
#include "wit/replay/replay.h"

namespace wit {

struct BoardAddResult {
  std::string member;       // board-reports/NAME.json in the bundle
  std::string stored;       // the response's path in the board folder
  ReplayReport report;      // the board's verdict
  nlohmann::json overlap;   // the overlap test's finding (null: none)
};
// Verifies `response_path` against the challenge of the bundle it answers
// and files the board's signed report. A response for another run, or for no
// challenge of this run, is a usage error (wit::Error, nothing written); so
// is a key that is not the board's, a bundle not on a board, or one whose
// manifest no longer matches its heads. Holds the board's and the bundle's locks.
// `sealed_path`: the current sealed set (needed on a board with a sealed
// split: its records are checked for overlap too, without being published).
// `response`: the response as the caller decoded it from `response_path`
// (open_response; it pinned the kernels with it), verified and stored as
// decoded: no second decode. The stored bytes are written from it (the
// response in parts), or, for a response with no part, are a copy of the file
// whose digest is the decoding's (open_response hashes the bytes it decodes;
// other bytes, the file changed meanwhile: a usage error, nothing filed).
// Null: board_add decodes (and hashes) the file itself.
BoardAddResult board_add(const std::string& bundle_path, const std::string& response_path, const SecretKey& key,
                         const VerifyOptions& opt, const std::string& sealed_path = "", const std::string& store = "",
                         const OpenedResponse* response = nullptr);

// The response at `response_path`, decoded once for the whole command and its
// manifest parsed once (OpenedResponse; hashed in the same pass,
// SpooledBundle::open_hashed): std::nullopt when no regular file is there
// (board_add says what is wrong then).
std::optional<OpenedResponse> open_response(const std::string& response_path);

// The overlap test (docs/board.md, "Overlap") of the batches the replay
// proved (verify_response's VerifiedBatch: only those, each at the position
// the verifier's data order gives): the first record (batches in name order,
// records in batch order) covering at least `share` of a benchmark record's
// text in shared windows: {"step", "record", "leaf", "benchmark_index",
// "share", "window"}, or nullopt.
std::optional<nlohmann::json> overlap_finding(const std::vector<VerifiedBatch>& batches, const OverlapIndex& index,
                                              double share);
// The rejection reason for a finding (with "benchmark" naming the record).
std::string overlap_reason(const nlohmann::json& finding);

// The first proved record that is one of the benchmark's (by record leaf):
// "step S trained on a record of the board's benchmark (record N of the
// data tree, leaf X)", N its position by the verifier's data order; or nothing.
Problem benchmark_hit(const std::vector<VerifiedBatch>& batches, const std::vector<Hash32>& benchmark_leaves);

// `wit-board evaluate`: the board scores the released weights itself on its
// benchmark. The weights (a parameters-only file, wit-sketch export; given a
// checkpoint, the board exports its parameters itself and never keeps the
// optimizer's moments) must be bound exactly to the run's final logged state
// (with the final optimizer root from the bundle's model.binding.json); they
// are stored as weights/DIGEST.safetensors in the evidence store
// (`store`: --store, else the definition's) and the board's signed evaluation
// (board-eval.json: the eval commitment of the scores) is added to the
// bundle. Throws wit::Error on bad input (nothing written); `why_not` is set
// (and nothing written) when the weights are not the run's final state.
struct BoardEvalResult {
  std::string member, stored;
  EvalCommitment eval;
  std::string why_not;  // "" when scored
  std::string refused;  // the model reads the future (filed: the run is rejected); "" when it passed
  std::optional<EvalCommitment> sealed;  // the sealed split's scores (a board with one)
  std::optional<GapTest> gap;            // public against sealed
};
// `model_path`: a TorchScript run's model file (its digest must be the manifest's); "" for the built-in GPT.
// `sealed_path`: the current epoch's sealed set (needed on a board with a sealed split, refused on one without).
BoardEvalResult board_evaluate(const std::string& bundle_path, const std::string& weights_path, const std::string& model_path,
                               const SecretKey& key, unsigned threads, const std::string& device,
                               const std::string& sealed_path = "", const std::string& store = "");

struct AuditResult {
  size_t checked = 0;                 // board reports re-verified
  std::vector<std::string> failures;  // one line each: the report and why it does not reproduce
  // Board evaluations whose sealed half could not be re-scored: their epoch
  // is not revealed yet and no --sealed set was given (the public half was).
  size_t sealed_unverified = 0;
  // Documents whose evidence the store does not give (missing, pruned, or
  // other bytes than their digest): "WHERE: why", one line each. Never a pass.
  std::vector<std::string> unverifiable;
  // Files in the folder and the store it does not expect (unexpected_board_files, unexpected_store_files), as paths.
  std::vector<std::string> unexpected;
};
// A stored response as pin_board_kernels decoded it: its path in the store
// and its decoding, hashed in the same pass (SpooledBundle::open_hashed; its
// digest() is the file's), so audit_board need not read the file again.
struct DecodedResponse {
  std::string path;
  OpenedResponse response;
};
// Re-verifies every stored response of every run on the board at `dir`,
// re-scores every stored released weights file the board evaluated (on the
// sealed split too, for every revealed epoch and for the current one when
// `sealed_path` gives it) and re-audits every stored leaves file.
// The bytes come from the evidence store (`store`: --store, else the
// definition's), each checked against its digest in the signed document before use.
// `def`: the board's definition when the caller read it already (it is not
// read again); null: read here.
// `pinned`: the stored response pin_board_kernels decoded, when it did; the
// report that names that file, with the digest its decoding hashed, is
// audited from it (taken out: moved), the others decode their own.
AuditResult audit_board(const std::string& dir, const VerifyOptions& opt, const std::string& sealed_path = "",
                        const std::string& store = "", const BoardDefinition* def = nullptr,
                        std::optional<DecodedResponse>* pinned = nullptr);

// The definition of the board at `dir`, or nothing where none reads (not a
// board: the command that needs one says why).
std::optional<BoardDefinition> board_definition_if_any(const std::string& dir);

// The board replays exactly (docs/replay.md), so it must compute under the
// run's recorded kernels, which are read by LibTorch and OpenBLAS when they
// start: these re-execute the program (`argv`) under the configuration that
// the response at `response_path` records (add), or that the first stored
// response of the board at `dir` records (audit; a stored response recorded
// under another configuration then fails its audit as not reproducible
// here). They return when the environment already matches or nothing is
// recorded, and do not return otherwise.
// `response`: the decoded response (open_response; nothing happens for none).
void pin_response_kernels(const std::optional<OpenedResponse>& response, char** argv);
// The board's: the stored response it pinned from, decoded (nothing when no
// stored response records a configuration).
std::optional<DecodedResponse> pin_board_kernels(const std::string& dir, char** argv, const std::string& store = "");
// The same with the board's definition read already (board_definition_if_any).
std::optional<DecodedResponse> pin_board_kernels(const std::string& dir, const std::optional<BoardDefinition>& def,
                                                 char** argv, const std::string& store = "");

}  // namespace wit
