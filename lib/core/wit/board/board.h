// The leaderboard's judgement of one run bundle: re-checks what is cheap
// (bundle digests, signatures, proofs, that reports answer their challenges
// under the run's signed heads, that the eval is of the final checkpoint and
// its scores reproduce, the contamination certificate) and assigns a status:
// certified (with the confidence reached), rejected (with the first reason),
// or pending. Rules: docs/board.md.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/board/def.h"
#include "wit/run/safetensors.h"
#include "wit/base/check.h"
#include "wit/run/manifest.h"
#include "wit/run/report.h"
#include "wit/run/run_bundle.h"
#include "wit/base/verdict.h"
#include "wit/run/wlog.h"

namespace wit {

// A board's folder that does not match its own index: a listed member
// missing or edited, an index that cannot be read, a document in a board
// member's place that the board key did not sign, one run on the board under
// two names. The board's error, never a verdict on a run: build and show
// exit 2 naming the file (docs/board.md, "Only evidence rejects"); the check
// engine lets it pass from the rows that read the run's evidence.
class BoardFolderError : public NotEvidenceError {
 public:
  using NotEvidenceError::NotEvidenceError;
};
// The hint every BoardFolderError carries: how to mend the folder.
inline constexpr const char* kBoardFolderHint =
    "restore the file from the board's history (git checkout -- FILE); 'wit-board audit DIR' re-verifies every "
    "signed document; no verdict was changed";

inline constexpr const char* kBoardFormat = "wit.board";
inline constexpr int kBoardVersion = 1;
inline constexpr double kDefaultBoardFraction = 0.05;

// The released weights file against the final state (docs/board.md,
// "Released model"); the probe distance is for information only.
enum class ModelVerdict {
  kNotChecked,  // an earlier check rejected the run
  kNotGiven,    // neither model.binding.json nor model.fingerprint.json
  kMatches,     // bound exactly by model.binding.json
  kDiffers,
  kProbeOnly,   // a fingerprint whose public probe is within tolerance, no exact binding: not a proof
};
// Its name in board.json, the site and wit-board show: "not checked", "not
// given", "matches", "differs", "probe only".
const char* model_verdict_name(ModelVerdict v);

struct ChallengeState {
  std::string name;          // challenges/NAME.json (draws/, board-reports/ and reports/ NAME.json)
  uint64_t head_size = 0;    // the challenged head's size
  int64_t k = 0;
  std::vector<int64_t> steps;
  // Who drew it: "board" (draws/NAME.json, the board key's draw) or "caller"
  // (a nonce someone gave: its failures count, its passes add nothing).
  std::string drawn_by = "caller";
  uint64_t number = 0;       // the board's challenge number (drawn_by "board")
  uint64_t drawn_at = 0;     // when the board drew it, seconds since the epoch (0: unknown)
  // The board's signed report's verdict (board-reports/NAME.json); pending
  // while the board has verified no response. Unsigned reports/ count for nothing.
  BoardStatus verdict = BoardStatus::kPending;
  std::string reason;        // the report's reason when rejected
  std::string response;      // the verified response's digest (responses/DIGEST.wbundle), "" when none
  std::vector<ReportCheck> checks;  // the report's
};

struct ProbeCheckState {
  std::string name;        // probe-checks/NAME.json: the first 16 hex digits of its nonce
  bool pass = false;
  double worst = 0, tolerance = 0;
  uint64_t records = 0, random = 0;
  std::string guarantee;   // the report's sentence
};

struct EvalCheckState {
  std::string name;
  uint64_t k = 0;
  ReportVerdict verdict = ReportVerdict::kRejected;
  std::vector<uint64_t> indices;
};

struct RunEntry {
  std::string name, source;  // source: the bundle's file or directory name
  BoardStatus status = BoardStatus::kPending;
  std::string reason;        // why rejected or pending; "" when certified
  std::string run_id;        // hex, "" when unknown
  std::string board;         // the board's name; "" when judged without a board definition
  double required = 0;       // the policy's confidence a certified run must reach (0 without a board)
  // Compute, from the manifest.
  int64_t steps = 0, batch_size = 0, context = 0;
  uint64_t params = 0, tokens = 0;  // tokens: steps x batch_size x context (positions trained on, at most)
  double flops = 0;                 // 6 x params x tokens
  std::string model_config;         // "n_layer=.. n_head=.. d_model=.. context=.."
  // Challenges.
  std::vector<ChallengeState> challenges;
  int64_t survived = 0, pending = 0, failed = 0;  // reports certified / missing / rejected
  std::vector<int64_t> steps_checked;             // union over certified reports under the final head
  double fraction = kDefaultBoardFraction;
  int64_t bad_steps = 0;
  double confidence = 0;  // exact hypergeometric detection over steps_checked
  // Eval.
  bool eval_known = false;
  double eval_loss = 0, eval_accuracy = 0;
  uint64_t eval_n = 0;
  std::string eval_metric;
  std::string eval_root;       // the eval set's root (hex): the board's benchmark on a defined board
  std::string eval_by = "trainer";  // "board" when the score is the board's own (board-eval.json)
  std::string weights_digest;  // the released weights the board scored (weights/DIGEST.safetensors)
  // The sealed split (a board with one): the board's score on the records
  // nobody outside it has read, what the board ranks on; the gap test of
  // public against sealed per-record losses, Bonferroni-corrected over the
  // board's runs with a sealed score (evaluate_board).
  bool sealed_known = false;
  uint64_t sealed_epoch = 0, sealed_n = 0;
  double sealed_loss = 0, sealed_accuracy = 0;
  double gap_observed = 0, gap_p = 1, gap_adjusted = 1;
  double gap_detectable = 0;  // the smallest gap the test finds half the time at these sizes (GapTest::detectable)
  uint64_t gap_permutations = 0;
  size_t gap_runs = 1;     // the Bonferroni factor
  bool flagged = false;    // adjusted p below the policy's gap_threshold, or an overlap flagged: not ranked among certified runs
  std::string overlap;     // the board's overlap finding on a replayed batch (policy action "flag"), in words; "" when none
  // Files in the bundle's folder its index does not list: they count for nothing.
  std::vector<std::string> ignored;
  // Of the stored files its board documents name (evidence_files), how many
  // DIR/pruned.json records as pruned from the store, and when the newest was
  // (evaluate_board): the verdict stands, audit can no longer replay them.
  size_t pruned_files = 0, evidence_files = 0;
  uint64_t pruned_at = 0;
  // "evidence pruned from the store on DATE (N of M stored files): ...", "" when none.
  std::string pruned_note() const;
  std::vector<EvalCheckState> eval_checks;
  std::vector<uint64_t> eval_indices_checked;  // union over certified spot checks
  int64_t eval_bad = 0;
  double eval_confidence = 0;
  // Contamination.
  std::optional<bool> clean;
  uint64_t eval_distinct = 0;
  bool leaves_audited = false;  // board-leaves.json: the board audited the training tree's sorted leaves
  bool tree_ranged = false;     // data commitment version 3: its exclusions stand alone, no leaves audit needed
  // The released weights file against the final state.
  ModelVerdict model = ModelVerdict::kNotChecked;
  std::optional<double> model_probe_rel;
  std::string model_note;
  // Fresh-probe checks of a model behind an API (probe-checks/).
  std::vector<ProbeCheckState> probe_checks;
  // Loss curve: (step, mean loss) from run.wlog, or on a board with an
  // evidence store from log.stored.json (the trainer's values, which audit
  // re-derives from the stored log; `log_stored` is then its store path).
  // Empty when neither, or when prune dropped the stored log (`log_pruned`):
  // the site never draws a curve nobody can check.
  std::vector<std::pair<int64_t, double>> loss_curve;
  std::string log_stored;
  bool log_pruned = false;

  nlohmann::json to_json() const;
  // A person-readable verdict, several lines (wit-board show).
  std::string describe() const;
};

// Judges one loaded bundle. Never throws for anything in the bundle: every
// problem becomes status rejected with its reason. With a board definition
// the bundle is judged against it (benchmark, board key, policy: the
// policy's fraction replaces `fraction`); without one no run is certified
// (status pending: "not on a defined board").
RunEntry evaluate_run_bundle(const RunBundle& b, double fraction = kDefaultBoardFraction,
                             const BoardDefinition* board = nullptr);
// Loads and judges: a bundle that cannot even be read is a rejected entry
// named after its path.
RunEntry evaluate_bundle_path(const std::string& path, double fraction = kDefaultBoardFraction,
                              const BoardDefinition* board = nullptr);
// The run bundles of a board folder (DIR/runs/*), judged against its
// definition, in board order, with the gap test corrected over the runs.
// Throws BoardFolderError when the folder does not match its own index.
std::vector<RunEntry> evaluate_board(const std::string& dir, const BoardDefinition& def);
// The status of a run whose checks all passed (docs/board.md, "Status
// rules"): pending with the first rule it does not meet yet (always, without
// a board), flagged (and pending) on an overlap the board found, else certified.
void assign_status(RunEntry& e, const BoardDefinition* board);
// Bonferroni over the entries with a sealed score, and the flag: a certified
// run whose corrected p is below the policy's threshold becomes pending
// ("does better on the published records than on sealed ones").
void apply_gap_test(std::vector<RunEntry>& entries, const BoardDefinition& def);
// The rank order of a board: certified runs by sealed loss (public loss on a
// board without a sealed split, and for bundles judged alone), then pending, then rejected.
bool ranks_before(const RunEntry& a, const RunEntry& b);

// The entries of a board in their canonical order (name, then source), with
// a second bundle of the same name rejected as a duplicate and given a unique
// page name.
std::vector<RunEntry> order_board(std::vector<RunEntry> entries);

// The run's final logged state, from a bundle's checks 1 to 5 (index,
// manifest, heads, log, final entry); throws wit::Error with the first reason.
struct BundleFinal {
  Manifest manifest;
  Hash32 run_id;
  int64_t steps = 0;
  Hash32 state_root;
};
BundleFinal bundle_final_state(const RunBundle& b);

// Check 4 on a run's log bytes (after checks 1 to 3 of the bundle `b`): the
// stored-log document for them (digest, size, entries, the curve at
// curve_steps). Throws wit::Error with the first reason the log fails.
// submit stores a log that passes (a board with a store); audit re-derives
// the folder's document from the stored log.
StoredLog derive_stored_log(const RunBundle& b, const std::string& log);

// audit's check of a run's log.stored.json (`where` names it): the stored log
// read from `store` once (StoredCopy: NotReVerifiable when the store lacks
// it, saying when `pruned` dropped it, or serves other bytes than its
// digest), check 4 on it against the run's signed heads, and the document
// re-derived from it (size, entries, curve). Throws wit::Error saying what
// does not reproduce.
void audit_stored_log(const RunBundle& b, const std::string& store, const std::map<std::string, std::string>& pruned,
                      const std::string& where);

// The name of the next board draw's member and its number (the count of draws already in the bundle).
uint64_t next_draw_number(const RunBundle& b);

// The member name of a challenge in a bundle: the first 16 hex digits of its
// seed (reports/NAME.json answers challenges/NAME.json).
std::string challenge_member_name(const Hash32& challenge_seed);
// Which of the bundle's challenges a replay report answers (same run, same
// head, same challenge seed): passes with the challenge's member name as its
// summary, or fails with the reason. Throws wit::Error when the report is not
// a report at all.
Verdict match_report(const RunBundle& b, const std::string& report_text, const std::string& where);
// The bundle's newest signed head, checked (signature, the manifest's run and
// key); throws wit::Error naming the member on any problem.
TreeHead newest_signed_head(const RunBundle& b);

// On a board without a sealed split the ranked score is on published
// records, so a run needs the trainer's contamination certificate of them
// (contamination.json): why a run without one (`has_certificate` false) is
// not certified there, or nothing (a board with a sealed split ranks on
// records nobody outside it has read; docs/board.md, "Status rules").
Problem contamination_problem(const BoardDefinition& board, bool has_certificate);

// What `wit-board pack` puts in a new bundle: a finished run's directory
// (manifest, heads, final entry's proof under the newest head, and the log
// unless include_log is false) and the files named, byte for byte;
// challenges, reports and eval checks are parsed only to name them (a report
// must answer one of the challenges).
// pack --released: the released weights exported from a finished run's final
// checkpoint (RUN/ckpt/step-T.safetensors, checked to be the state the run
// logged at its final step T): its parameter tensors, as `wit-sketch export`
// writes them (the same bytes), and their exact binding to that state (what
// `wit-sketch match --json` gives, without the probe). Throws wit::Error when
// the run has no single-file final checkpoint (a run trained across ranks
// keeps it in shards: export it with wit-sketch) or it is not the logged one.
struct ReleasedWeights {
  Safetensors checkpoint;          // mapped: the parameters are views into it
  std::vector<TensorView> params;  // in name order
  std::string binding;             // model.binding.json's text
};
ReleasedWeights export_released(const std::string& run_dir);

struct PackInput {
  std::string name, run_dir, data_commit;
  // The trainer's own evaluation: each optional ("" = none; docs/run-bundle.md).
  std::string eval_commit, eval, eval_scores, contamination;
  // --board DIR: the board the bundle is for (its benchmark commitment goes in
  // as eval.commit.json, and with data_index the contamination certificate of
  // its records is made); "" = none.
  std::string board_dir, data_index;
  std::string model_fingerprint;  // "" = none
  std::string model_binding;      // "" = none (wit-sketch match --json)
  std::string model_binding_text;  // the binding itself, made by pack --released (export_released); "" = none
  std::vector<std::string> challenges, reports, eval_checks, probe_checks;
  bool include_log = true;
};
// The bundle's members and bundle.json (path and form are the caller's, then
// save_new()); throws wit::Error naming the file on any problem.
RunBundle pack_run_bundle(const PackInput& in, const BoardDefinition* board = nullptr);

// board.json: {"format":"wit.board","version":1,"fraction":f,"runs":[...]}.
// With a board definition, "board" names it (name, key, benchmark, policy).
std::string board_json(const std::vector<RunEntry>& runs, double fraction, const BoardDefinition* board = nullptr);
// The static site: index.html and one page per run (inline CSS, JS and SVG; no network).
std::string render_index_html(const std::vector<RunEntry>& runs, double fraction, const BoardDefinition* board = nullptr);
std::string render_run_html(const RunEntry& run);
// The status rules in short, as the site's intro lists them: (status, rule)
// in the order certified, flagged, pending, rejected (docs/board.md, "Status rules").
const std::vector<std::pair<std::string, std::string>>& board_status_rules();
// Writes SITE/index.html, SITE/runs/NAME.html and SITE/board.json (each atomically).
void write_site(const std::string& site_dir, const std::vector<RunEntry>& runs, double fraction,
                const BoardDefinition* board = nullptr);
// The badge of a run: "certified 99.98%" (the confidence reached, rounded
// down as percent() prints it, so the badge and the confidence column agree),
// "flagged", "pending" or "rejected".
std::string badge_text(const RunEntry& run);
// The certified frontier of score against compute: the indices of certified
// runs (with an eval) that no other certified run beats with no more FLOPs,
// in order of FLOPs.
std::vector<size_t> certified_frontier(const std::vector<RunEntry>& runs);

// Text helpers shared with the renderer, exposed for tests.
std::string html_escape(const std::string& s);
// Shortest round-trip-safe decimal for a double, fixed across platforms ("%.17g" trimmed).
std::string number_text(double v);

}  // namespace wit
