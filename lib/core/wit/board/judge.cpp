// The board's checks of a run bundle: judge's table, the 18 rows of
// docs/board.md ("Status rules"), in order, the first "no" being the reason a
// run is rejected; a board folder's runs judged against its definition.
#include "wit/board/board.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>
#include <sstream>

#include "wit/board/gap.h"
#include "wit/base/cli_base.h"
#include "wit/run/challenge.h"
#include "wit/base/check.h"
#include "wit/base/json_fields.h"
#include "wit/run/report.h"
#include "wit/data/commitment.h"
#include "wit/proofs/contamination.h"
#include "wit/base/error.h"
#include "wit/eval/eval.h"
#include "wit/run/fingerprint_doc.h"
#include "wit/hash/hash.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/run/manifest.h"
#include "wit/hash/merkle.h"
#include "wit/run/model_spec.h"
#include "wit/proofs/proofs.h"
#include "wit/eval/release.h"
#include "wit/run/runlog.h"
#include "wit/run/sketch.h"
#include "wit/run/state_root.h"

namespace wit {

using nlohmann::json;

namespace {

json parse_member(const RunBundle& b, const std::string& name) {
  const json j = json::parse(b.get(name), nullptr, false);
  if (j.is_discarded()) reject(name + " is not valid json");
  return j;
}

// heads.jsonl from memory, line by line (read_heads reads a file).
std::vector<TreeHead> parse_heads(const std::string& text) {
  std::vector<TreeHead> heads;
  size_t pos = 0;
  uint64_t line = 0;
  while (pos < text.size()) {
    line++;
    const std::string where = std::string(member::kHeads) + ":" + std::to_string(line);
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) reject(where + ": torn last line (no newline)");
    const std::string s = text.substr(pos, nl - pos);
    pos = nl + 1;
    const json j = json::parse(s, nullptr, false);
    if (j.is_discarded()) reject(where + ": not valid json");
    heads.push_back(TreeHead::from_json(j, where));
  }
  return heads;
}

uint64_t uint_field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_unsigned())
    reject(where + ": field '" + key + "' is not a non-negative integer");
  return j[key].get<uint64_t>();
}

std::string path_name(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  std::string base = std::filesystem::path(p).filename().string();
  if (base.empty()) base = p;
  return base;
}

// A page name from a path: its file name without ".wbundle", restricted to [A-Za-z0-9._-].
std::string name_from_path(const std::string& path) {
  std::string n = path_name(path);
  if (n.size() > 8 && n.compare(n.size() - 8, 8, ".wbundle") == 0) n.resize(n.size() - 8);
  for (char& c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      c = '_';
  if (!n.empty() && n[0] == '.') n[0] = '_';
  if (n.size() > 64) n.resize(64);
  if (n.empty()) n = "bundle";
  return n;
}

double detection(int64_t T, int64_t bad, int64_t k) {
  if (T < 1 || k < 1) return 0;
  return 1.0 - miss_probability(T, std::min(bad, T), std::min(k, T));
}

// Everything the checks carry from one to the next.
struct Ctx {
  Ctx(const RunBundle& b, RunEntry& e, const BoardDefinition* board) : bundle(b), entry(e), def(board) {}
  const RunBundle& bundle;
  RunEntry& entry;  // what the checks find, for board.json
  const BoardDefinition* def;  // the board judged against; null: none
  std::string at = "bundle.json";  // the member being checked: judge's Reading, for the JSON library's messages
  Manifest mf;
  int64_t T = 0;  // the manifest's steps
  Hash32 run_id;
  std::vector<TreeHead> heads;
  TreeHead newest;
  StepEntry final_entry;
  Commitment data;
  std::vector<Challenge> challenges;  // parallel to entry.challenges
  std::optional<Commitment> eval_set;  // eval.commit.json, when the bundle has it
  bool has_eval = false;               // eval.json (with its set and scores) is in the bundle
  EvalCommitment eval;
  EvalScores scores;
  const std::string* given_log = nullptr;  // derive_stored_log's log bytes
};

// The board's own error in a run's folder, naming the file (a document in a
// board member's place its key did not sign, a log.stored.json the board
// wrote wrong, a folder that does not match its index): never a verdict on
// the run, it passes the engine (a NotEvidenceError) and ends the command.
[[noreturn]] void throw_folder_error(const RunBundle& b, const std::string& what, const std::string& member) {
  throw BoardFolderError(what, b.path + "/" + member, kBoardFolderHint);
}

// 1. bundle.json
void check_bundle_index(Ctx& c) {
  reject_if(c.bundle.index_problem());
}

// 2. manifest.json
void check_manifest(Ctx& c) {
  c.at = member::kManifest;
  {
    const std::string& text = c.bundle.get(member::kManifest);
    const json j = parse_member(c.bundle, member::kManifest);
    c.mf = Manifest::from_json(j, member::kManifest);
    if (const Problem p = manifest_form_problem(c.mf, text)) reject(*p + ": manifest.json");
    c.run_id = c.mf.run_id();
    c.entry.run_id = c.run_id.hex();
    c.entry.steps = c.mf.steps;
    c.entry.batch_size = c.mf.batch_size;
    c.entry.context = c.mf.model.context;
    c.entry.params = param_count(c.mf.model);
    c.entry.tokens = uint64_t(std::max<int64_t>(0, c.entry.steps)) * uint64_t(std::max<int64_t>(0, c.entry.batch_size)) *
               uint64_t(std::max<int64_t>(0, c.entry.context));
    c.entry.flops = 6.0 * double(c.entry.params) * double(c.entry.tokens);
    c.entry.model_config = c.mf.model.scripted()
                         ? "torchscript " + c.mf.model.file.hex().substr(0, 16) + " vocab=" +
                               std::to_string(c.mf.model.vocab) + " context=" + std::to_string(c.mf.model.context)
                         : "n_layer=" + std::to_string(c.mf.model.n_layer) + " n_head=" + std::to_string(c.mf.model.n_head) +
                               " d_model=" + std::to_string(c.mf.model.d_model) + " context=" + std::to_string(c.mf.model.context);
  }
  c.T = c.mf.steps;
  if (c.T < 1) reject("manifest.json: the run has no steps");
  if (c.def)
    if (auto p = c.def->policy.model_problem(c.mf.model.scripted() ? c.mf.model.file.hex() : "")) reject(*p);
}

// 3. heads.jsonl
void read_heads(Ctx& c) {
  c.at = member::kHeads;
  c.heads = parse_heads(c.bundle.get(member::kHeads));
}
void check_heads(Ctx& c) {
  read_heads(c);
  if (c.heads.empty()) reject("heads.jsonl holds no signed head");
  for (size_t i = 0; i < c.heads.size(); i++) {
    const TreeHead& h = c.heads[i];
    const std::string where = std::string(member::kHeads) + ":" + std::to_string(i + 1);
    if (auto p = head_problem(h, c.run_id, c.mf.trainer_key, where + ": the head")) reject(*p);
    if (i > 0 && h.size < c.heads[i - 1].size) reject(where + ": the head is smaller than the one before it");
    for (size_t j = 0; j < i; j++)
      if (c.heads[j].size == h.size && c.heads[j].root != h.root)
        reject(where + ": two signed heads of size " + std::to_string(h.size) + " with different roots");
  }
  c.newest = c.heads.back();
  if (c.newest.size != uint64_t(c.T) + 1)
    reject("the newest signed head covers " + std::to_string(c.newest.size) + " entries, not the " +
           std::to_string(uint64_t(c.T) + 1) + " of the whole run");
}

// Check 4's rule on a log's bytes: whole frames, as many entries as the
// newest head covers, every head's root the root of its prefix, entry i the
// entry of step i of this run. Returns the loss curve (step, mean loss), steps 1..T.
std::vector<std::pair<int64_t, double>> log_curve(const Ctx& c, const std::string& log) {
  const LogFrames scanned = scan_log_frames(ByteView(log), member::kLog);
  if (scanned.torn) throw torn_log_error(scanned, log.size(), member::kLog);
  const std::vector<ByteView>& frames = scanned.payloads;
  if (frames.size() != c.newest.size)
    reject("run.wlog has " + cli::count_of(frames.size(), "entry", "entries") + ", the newest signed head covers " +
           std::to_string(c.newest.size));
  std::vector<std::pair<int64_t, double>> curve;
  std::vector<Hash32> leaves;
  leaves.reserve(frames.size());
  for (size_t i = 0; i < frames.size(); i++) {
    const std::string where = "run.wlog entry " + std::to_string(i);
    const LogEntry le = decode_entry(frames[i], where);
    if (auto p = entry_problem(le, i, c.run_id)) reject("run.wlog " + *p);
    if (i > 0) curve.emplace_back(int64_t(i), double(le.s.mean_loss));
    leaves.push_back(entry_leaf(frames[i]));
  }
  const MerkleTree tree(kBlake2bTree, leaves.data(), leaves.size(), MerkleTree::kDefaultCacheLevel, 1);
  for (size_t i = 0; i < c.heads.size(); i++)
    if (c.heads[i].size < 1 || tree.range_hash(Range{0, c.heads[i].size}) != c.heads[i].root)
      reject("heads.jsonl:" + std::to_string(i + 1) + ": the head's root is not the root of run.wlog");
  return curve;
}

// derive_stored_log's check 4: on the log bytes it is given.
void curve_of_given_log(Ctx& c) { c.entry.loss_curve = log_curve(c, *c.given_log); }

// 4. run.wlog, when present; on a board with an evidence store, the log went
// to the store and the run is judged as a run without a log (build never
// reads the store): log.stored.json gives the curve only, and audit checks it.
void check_log(Ctx& c) {
  c.at = member::kLog;
  if (c.bundle.has(member::kLog)) {
    c.entry.loss_curve = log_curve(c, c.bundle.get(member::kLog));
  } else if (c.bundle.has(member::kStoredLog)) {
    c.at = member::kStoredLog;
    const std::string m = member::kStoredLog;
    StoredLog d;
    try {
      d = StoredLog::from_json(json::parse(c.bundle.get(m)), m);
      if (d.entries != c.newest.size)
        throw Error("invalid stored log: it counts " + std::to_string(d.entries) + " entries, the newest signed head covers " +
                    std::to_string(c.newest.size));
    } catch (const std::exception& x) {
      // The board wrote it: a wrong one is the folder's error, not the run's
      // (as a board draw's); off a board, the error names the member (the
      // JSON library's does not) and the engine makes it this row's "no".
      const std::string why = std::string(x.what()).substr(0, std::string(x.what()).find('\n'));
      if (c.def) throw_folder_error(c.bundle, m + ": " + why, m);
      throw Error(m + ": " + why);
    }
    c.entry.loss_curve = d.curve;
    c.entry.log_stored = d.path();
  }
}

// 5. final.json
void check_final_entry(Ctx& c) {
  c.at = member::kFinal;
  {
    const json doc = parse_member(c.bundle, member::kFinal);
    LogProofPins pins;
    pins.key = c.mf.trainer_key;
    pins.run_id = c.run_id;
    const Verdict v = verify_log_proof(doc, pins, member::kFinal);
    if (!v.ok) reject("final.json: " + v.reason);
    if (!doc.contains("type") || doc["type"] != "inclusion") reject("final.json is not an inclusion proof");
    if (uint_field(doc, "index", member::kFinal) != uint64_t(c.T))
      reject("final.json proves entry " + doc["index"].dump() + ", not the final step " + std::to_string(c.T));
    const TreeHead h = TreeHead::from_json(doc["head"], member::kFinal);
    bool found = false;
    for (const auto& x : c.heads) found = found || x == h;
    if (!found) reject("final.json is not under a head in heads.jsonl");
    Bytes entry;
    if (!doc.contains("entry") || !doc["entry"].is_string() || !from_hex(doc["entry"].get<std::string>(), entry))
      reject("final.json: field 'entry' is not hex");
    // verify_log_proof has checked that entry `index` (= T) is step T's.
    c.final_entry = decode_entry(ByteView(entry), member::kFinal).s;
  }
}

// 6. data.commit.json
void check_data_commitment(Ctx& c) {
  c.at = member::kDataCommit;
  {
    c.data = Commitment::from_json(parse_member(c.bundle, member::kDataCommit), member::kDataCommit);
    // The manifest's root is the one tree the run trained on; every proof and
    // certificate below is checked against this commitment, so against it.
    const char* differs = c.data.root != c.mf.data_root ? "root" : c.data.n != c.mf.data_n ? "n" : nullptr;
    if (differs)
      reject(std::string("data.commit.json is not the data commitment the manifest names (") + differs + " differs)");
    c.entry.tree_ranged = c.data.ranged();
  }
}

// 7b. draws/NAME.json: the board key's draw of challenge NAME. On a defined
// board it must be the board key's, over this run, the challenge's head and
// its number, and give the challenge's nonce; a challenge without a draw
// is a caller's (its passes add nothing to the confidence).
void check_draw(Ctx& c, const std::string& name, const Challenge& ch, ChallengeState& s) {
  const std::string m = std::string(member::kDraws) + name + ".json";
  if (!c.bundle.has(m)) return;
  c.at = m;
  const BoardDraw d = BoardDraw::from_json(parse_member(c.bundle, m), m);
  if (!c.def) return;  // no board to check it against: it stays a caller's challenge
  if (auto p = d.problem(c.def->key)) throw_folder_error(c.bundle, m + " " + *p, m);
  if (d.run_id != c.run_id) reject(m + " is a draw for another run");
  if (d.head != ch.head) reject(m + " draws for another head than its challenge's");
  if (d.nonce != ch.nonce)
    reject(std::string(member::kChallenges) + name + ".json: its nonce is not the one the board's draw derives");
  s.drawn_by = "board";
  s.number = d.number;
  s.drawn_at = d.drawn_at;
}

// 7. challenges
void check_challenges(Ctx& c) {
  for (const std::string& name : c.bundle.names_under(member::kChallenges)) {
    const std::string where = std::string(member::kChallenges) + name + ".json";
    c.at = where;
    const Challenge ch = Challenge::from_json(parse_member(c.bundle, where), where);
    if (ch.head.run_id != c.run_id) reject(where + " is a challenge of another run");
    bool found = false;
    for (const auto& x : c.heads) found = found || x == ch.head;
    if (!found) reject(where + ": its head is not among the run's signed heads");
    if (challenge_member_name(ch.seed) != name)
      reject(where + " is not named after its seed (challenges/" + challenge_member_name(ch.seed) + ".json)");
    ChallengeState s;
    s.name = name;
    s.head_size = ch.head.size;
    s.k = int64_t(ch.steps.size());
    s.steps = ch.steps;
    check_draw(c, name, ch, s);
    c.entry.challenges.push_back(s);
    c.challenges.push_back(ch);
  }
  // Every draw answers a challenge, and the board's numbers run 0, 1, ... without a gap
  // (a draw the board withheld would show as one).
  std::set<uint64_t> numbers;
  for (const std::string& name : c.bundle.names_under(member::kDraws)) {
    bool found = false;
    for (const auto& s : c.entry.challenges) found = found || s.name == name;
    if (!found) reject(std::string(member::kDraws) + name + ".json draws no challenge in the bundle");
  }
  for (const auto& s : c.entry.challenges)
    if (s.drawn_by == "board" && !numbers.insert(s.number).second)
      reject(std::string(member::kDraws) + s.name + ".json: a second board draw numbered " + std::to_string(s.number));
  uint64_t expect = 0;
  for (uint64_t n : numbers)
    if (n != expect++) reject("the board's draws skip challenge number " + std::to_string(expect - 1));
}

// The challenge (its index in c.challenges) that the report `where`, named
// NAME, answers: the one of challenges/NAME.json, or no.
size_t answered_challenge(const Ctx& c, const std::string& name, const std::string& where) {
  size_t ci = 0;
  while (ci < c.entry.challenges.size() && c.entry.challenges[ci].name != name) ci++;
  if (ci == c.entry.challenges.size()) reject(where + " answers no challenge in the bundle (no challenges/" + name + ".json)");
  return ci;
}

// 8. reports
void check_reports(Ctx& c) {
  for (const std::string& name : c.bundle.names_under(member::kReports)) {
    const std::string where = std::string(member::kReports) + name + ".json";
    c.at = where;
    const Challenge& ch = c.challenges[answered_challenge(c, name, where)];
    const ReplayReport r = ReplayReport::from_json(parse_member(c.bundle, where), where);
    // Check 7 made every challenge one of this run's. The report is a claim
    // anyone can type: its form is checked, its verdict counts for nothing
    // (the board's own reports, board-reports/, do).
    if (auto why = r.answer_problem(ch)) reject(where + " " + *why);
  }
}

// 8b. board-reports/NAME.json: the board's signed report on the response it
// verified for challenge NAME. Counted only on a defined board, signed by its key.
void check_board_reports(Ctx& c) {
  for (const std::string& name : c.bundle.names_under(member::kBoardReports)) {
    const std::string where = std::string(member::kBoardReports) + name + ".json";
    c.at = where;
    const size_t ci = answered_challenge(c, name, where);
    const BoardReport br = BoardReport::from_json(parse_member(c.bundle, where), where);
    if (!c.def) continue;  // no board key to check it with: it counts for nothing
    // On a board, a board report the board's key did not sign is not evidence
    // at all: the folder is inconsistent (the board's error, not the run's).
    if (auto p = br.problem(c.def->key)) throw_folder_error(c.bundle, where + " " + *p, where);
    if (br.challenge != name) reject(where + " is the board's report on another challenge (" + br.challenge + ")");
    const Challenge& ch = c.challenges[ci];
    ChallengeState& s = c.entry.challenges[ci];
    const ReplayReport r = ReplayReport::from_json(br.report, where);
    if (auto why = r.answer_problem(ch)) reject(where + " " + *why);
    if (r.certified() && r.step_checks() != ch.steps)
      reject(where + ": a certified report that does not check exactly its challenge's steps");
    s.verdict = status_of(r.verdict);
    s.reason = r.reason;
    s.checks = r.checks;
    s.response = br.response_digest;
    if (br.overlap.is_object() && r.certified() && c.entry.overlap.empty()) {
      const json& f = br.overlap;
      char share[32];
      std::snprintf(share, sizeof share, "%.0f%%", 100 * f.value("share", 0.0));
      c.entry.overlap = "step " + f.value("step", json(-1)).dump() + " trained on a near-copy of " +
                        f.value("benchmark", std::string("a benchmark record")) + " (" + share + " of its text shared)";
    }
  }
}

// After 8: the counts and the training confidence (the union of the steps replayed under the newest head).
void training_confidence(Ctx& c) {
  std::set<int64_t> union_steps;
  for (const auto& s : c.entry.challenges) {
    if (s.verdict == BoardStatus::kCertified) c.entry.survived++;
    else if (s.verdict == BoardStatus::kRejected) c.entry.failed++;
    else c.entry.pending++;
    // Only the board's draws count toward the confidence: a caller's nonce may have been ground.
    if (s.verdict == BoardStatus::kCertified && s.drawn_by == "board" && s.head_size == c.newest.size)
      union_steps.insert(s.steps.begin(), s.steps.end());
  }
  c.entry.steps_checked.assign(union_steps.begin(), union_steps.end());
  c.entry.bad_steps = bad_steps_for(c.T, c.entry.fraction);
  c.entry.confidence = detection(c.T, c.entry.bad_steps, int64_t(c.entry.steps_checked.size()));
}

// 9. no rejected report
void check_no_rejected_report(Ctx& c) {
  for (const auto& s : c.entry.challenges)
    if (s.verdict == BoardStatus::kRejected)
      reject(std::string(member::kBoardReports) + s.name + ".json: the board replayed the response and rejected the run: " +
             (s.reason.empty() ? "no reason given" : s.reason));
}

// 10. eval.commit.json and eval.json: the trainer's own evaluation,
// optional (a board scores the released weights itself, board-eval.json);
// checked when present. eval.json comes with its eval set and its scores.
void check_eval(Ctx& c) {
  const bool has_set = c.bundle.has(member::kEvalCommit), has_eval = c.bundle.has(member::kEval);
  if (has_set) {
    c.at = member::kEvalCommit;
    c.eval_set = Commitment::from_json(parse_member(c.bundle, member::kEvalCommit), member::kEvalCommit);
    if (c.def)
      if (auto p = c.def->benchmark_problem(c.eval_set->root, c.eval_set->n)) reject("the run is " + *p);
  }
  if (!has_eval) {
    if (c.bundle.has(member::kEvalScores)) reject("eval.scores.json without eval.json (the scores of which evaluation?)");
    if (!c.bundle.names_under(member::kEvalChecks).empty())
      reject("eval-checks/" + c.bundle.names_under(member::kEvalChecks).front() + ".json without eval.json (a spot check of which evaluation?)");
    return;
  }
  if (!has_set) reject("eval.json without eval.commit.json (its eval set)");
  if (!c.bundle.has(member::kEvalScores)) reject("eval.json without eval.scores.json (its per-example scores)");
  const Commitment& eval_set = *c.eval_set;
  c.at = member::kEval;
  c.eval = EvalCommitment::from_json(parse_member(c.bundle, member::kEval), member::kEval);
  c.has_eval = true;
  if (c.eval.run_id != c.run_id) reject("eval.json evaluates another run");
  if (c.eval.step != c.T)
    reject("eval.json evaluates the checkpoint of step " + std::to_string(c.eval.step) + ", not the final step " +
           std::to_string(c.T));
  if (c.eval.checkpoint_root != c.final_entry.state_root)
    reject("eval.json evaluates another checkpoint than the one the final entry logs (state root differs)");
  if (c.eval.eval_root != eval_set.root) reject("eval.json is not on the eval set of eval.commit.json (root differs)");
  if (c.eval.n != eval_set.n) reject("eval.json is not on the eval set of eval.commit.json (n differs)");
  c.entry.eval_metric = c.eval.metric;
  c.entry.eval_root = eval_set.root.hex();
  c.entry.eval_n = c.eval.n;
}

// 11. eval.scores.json (with eval.json)
void check_eval_scores(Ctx& c) {
  if (!c.has_eval) return;
  c.at = member::kEvalScores;
  c.scores = EvalScores::from_json(parse_member(c.bundle, member::kEvalScores), member::kEvalScores);
  if (auto bad = check_scores(c.eval, c.scores)) reject("eval.scores.json: " + *bad);
  c.entry.eval_known = true;
  c.entry.eval_loss = c.eval.loss;
  c.entry.eval_accuracy = c.eval.accuracy;
}

// 12. eval spot checks (with eval.json)
void check_eval_spot_checks(Ctx& c) {
  if (!c.has_eval) return;
  std::set<uint64_t> union_idx;
  for (const std::string& name : c.bundle.names_under(member::kEvalChecks)) {
    const std::string where = std::string(member::kEvalChecks) + name + ".json";
    c.at = where;
    const EvalCheckReport r = EvalCheckReport::from_json(parse_member(c.bundle, where), where);
    if (challenge_member_name(r.seed) != name)
      reject(where + " is not named after its seed (eval-checks/" + challenge_member_name(r.seed) + ".json)");
    // Of this eval, and its verdict the one its items give (check_eval_report owns both).
    if (auto bad = check_eval_report(r, c.eval, &c.scores)) reject(where + ": " + *bad);
    if (r.verdict != ReportVerdict::kCertified) reject(where + ": the spot check failed: " + r.reason);
    EvalCheckState s;
    s.name = name;
    s.k = r.k;
    s.verdict = r.verdict;
    s.indices = r.indices;
    union_idx.insert(r.indices.begin(), r.indices.end());
    c.entry.eval_checks.push_back(std::move(s));
  }
  c.entry.eval_indices_checked.assign(union_idx.begin(), union_idx.end());
  if (c.eval.n >= 1 && c.eval.n <= uint64_t(INT64_MAX)) {
    c.entry.eval_bad = bad_steps_for(int64_t(c.eval.n), c.entry.fraction);
    c.entry.eval_confidence = detection(int64_t(c.eval.n), c.entry.eval_bad, int64_t(c.entry.eval_indices_checked.size()));
  }
}

// 12b. board-eval.json: the board's own evaluation of the released weights on
// its benchmark (wit-board evaluate), signed by its key: of this run, at the
// final step, bound to the final logged state root, on the benchmark. Its
// score replaces the trainer's on the board.
void check_board_eval(Ctx& c) {
  if (!c.bundle.has(member::kBoardEval)) return;
  c.at = member::kBoardEval;
  const std::string where = member::kBoardEval;
  const BoardEval be = BoardEval::from_json(parse_member(c.bundle, where), where);
  if (!c.def) return;  // no board key to check it with
  if (auto p = be.problem(c.def->key)) throw_folder_error(c.bundle, where + " " + *p, where);
  if (!be.refused.empty()) reject("the board refused the released model: " + be.refused);
  const EvalCommitment ev = EvalCommitment::from_json(be.eval, where);
  if (ev.run_id != c.run_id) reject(where + " evaluates another run");
  if (ev.step != c.T || ev.checkpoint_root != c.final_entry.state_root)
    reject(where + " evaluates another state than the run's final one");
  // The public split: the benchmark, plus every epoch revealed before the
  // run's sealed epoch (their records joined it); a run keeps the split it was scored on.
  const std::vector<uint64_t> joined = be.has_sealed ? c.def->public_epochs_before(be.sealed_epoch) : std::vector<uint64_t>{};
  if (be.public_revealed != joined)
    reject(where + " is not scored on the public split of its epoch (the benchmark and " +
           std::to_string(joined.size()) + " revealed epochs, not " + std::to_string(be.public_revealed.size()) + ")");
  if (auto p = c.def->public_split_problem(joined, ev.eval_root, ev.n)) reject(where + " is " + *p);
  if (be.has_sealed) {
    // The sealed split's scores: of this run's final state, on a sealed set
    // the definition commits to (the current epoch's or a revealed one's).
    const EvalCommitment se = EvalCommitment::from_json(be.sealed_eval, where);
    std::optional<SealedCommit> sc;
    if (c.def->sealed && c.def->sealed->epoch == be.sealed_epoch) sc = c.def->sealed;
    for (const auto& r : c.def->revealed)
      if (r.commit.epoch == be.sealed_epoch) sc = r.commit;
    if (!sc) reject(where + " scores a sealed set of epoch " + std::to_string(be.sealed_epoch) + " the board never sealed");
    if (se.run_id != c.run_id || se.step != c.T || se.checkpoint_root != c.final_entry.state_root)
      reject(where + ": its sealed score is of another state than the run's final one");
    if (se.eval_root != sc->root || se.n != sc->n)
      reject(where + ": its sealed score is not on the sealed set of epoch " + std::to_string(sc->epoch));
    const GapTest g = GapTest::from_json(be.gap, where);
    if (g.seed != gap_seed(ev.scores_root, se.scores_root) || g.n_public != ev.n || g.n_sealed != se.n)
      reject(where + ": its gap test is not of the two scores it names");
    c.entry.sealed_known = true;
    c.entry.sealed_epoch = be.sealed_epoch;
    c.entry.sealed_n = se.n;
    c.entry.sealed_loss = se.loss;
    c.entry.sealed_accuracy = se.accuracy;
    c.entry.gap_observed = g.observed;
    c.entry.gap_p = c.entry.gap_adjusted = g.p;
    c.entry.gap_permutations = g.permutations;
    c.entry.gap_detectable = g.detectable;
  }
  c.entry.eval_by = "board";
  c.entry.eval_known = true;
  c.entry.eval_loss = ev.loss;
  c.entry.eval_accuracy = ev.accuracy;
  c.entry.eval_n = ev.n;
  c.entry.eval_metric = ev.metric;
  c.entry.weights_digest = be.weights_digest;
}

// 13b. board-leaves.json: the board's audit of the training tree's sorted
// leaves (wit-board leaves), signed: of the run's data commitment (n, root).
// Exclusion proofs, and so the contamination certificate, mean absence only
// in a sorted tree: on a board a run is certified only once it is audited.
void check_board_leaves(Ctx& c) {
  if (!c.bundle.has(member::kBoardLeaves)) return;
  const std::string where = member::kBoardLeaves;
  c.at = where;
  const BoardLeaves bl = BoardLeaves::from_json(parse_member(c.bundle, where), where);
  if (!c.def) return;
  if (auto p = bl.problem(c.def->key)) throw_folder_error(c.bundle, where + " " + *p, where);
  if (bl.n != c.data.n || bl.root != c.data.root) reject(where + " audits another tree than the run's data commitment");
  if (!bl.refused.empty()) reject("the board's audit of the training tree failed: " + bl.refused);
  c.entry.leaves_audited = true;
}

// 13. contamination.json, when present: of the eval set of eval.commit.json
// (on a board without one, of the benchmark)
void check_contamination(Ctx& c) {
  if (!c.bundle.has(member::kContamination)) return;
  c.at = member::kContamination;
  {
    const json given = parse_member(c.bundle, member::kContamination);
    if (!given.is_object() || !given.contains("format") || given["format"] != kContaminationFormat)
      reject("contamination.json is not a contamination certificate");
    const json cert = expand_certificate(given, member::kContamination);  // the compact form pack writes
    const Verdict v = verify_document(cert, c.data, member::kContamination);
    if (!v.ok) reject("contamination certificate does not verify: " + v.reason);
    Verdict cov = Verdict::pass("");
    if (c.has_eval) {
      cov = certificate_covers(cert, c.scores.record_leaves, member::kContamination);
    } else {
      // Without per-example scores the eval set is its commitment: the proved
      // leaves, sorted and distinct, must be exactly its tree.
      if (!c.eval_set && !c.def) reject("contamination.json without eval.commit.json (the eval set it is about)");
      const Hash32 root = c.eval_set ? c.eval_set->root : c.def->benchmark.root;
      const uint64_t n = c.eval_set ? c.eval_set->n : c.def->benchmark.n;
      std::vector<Hash32> proved;
      for (const char* list : {"absent", "present"})
        if (cert.contains(list) && cert[list].is_array())
          for (const auto& p : cert[list])
            if (Hash32 h; p.is_object() && p.contains("leaf") && p["leaf"].is_string() &&
                              Hash32::from_hex(p["leaf"].get<std::string>(), h))
              proved.push_back(h);
      std::sort(proved.begin(), proved.end());
      proved.erase(std::unique(proved.begin(), proved.end()), proved.end());
      if (proved.size() != n || !is_data_tree_root(proved, root))
        cov = Verdict::fail("its " + std::to_string(proved.size()) + " proved records are not the " + std::to_string(n) +
                            " of the eval set (root " + root.hex().substr(0, 16) + ")");
      if (c.entry.eval_root.empty()) c.entry.eval_root = root.hex();
    }
    if (!cov.ok) reject("contamination certificate does not cover the eval set: " + cov.reason);
    if (!cert.contains("clean") || !cert["clean"].is_boolean()) reject("contamination.json: field 'clean' is not a boolean");
    const uint64_t present = cert["present"].size(), absent = cert["absent"].size();
    c.entry.eval_distinct = present + absent;
    c.entry.clean = cert["clean"].get<bool>();
    if (!*c.entry.clean)
      reject("the eval set is contaminated: " + std::to_string(present) + " of " + std::to_string(c.entry.eval_distinct) +
             " distinct eval records are in the training data");
  }
}

// 14. the released model: model.binding.json (exact), model.fingerprint.json
// (the public probe, for information), probe-checks/ (a model behind an API)
void check_model(Ctx& c) {
  c.entry.model = ModelVerdict::kNotGiven;
  std::optional<bool> probe_within;  // the fingerprint's public probe, within tolerance
  if (c.bundle.has(member::kModelFingerprint)) {
    c.at = member::kModelFingerprint;
    const Fingerprint fp = Fingerprint::from_json(parse_member(c.bundle, member::kModelFingerprint), member::kModelFingerprint);
    probe_within = false;
    if (fp.run_id != c.run_id) {
      c.entry.model_note = "a fingerprint of another run";
    } else if (!fp.probe || !c.final_entry.probe) {
      c.entry.model_note = !fp.probe ? "the fingerprint has no probe" : "the final entry logs no probe";
    } else if (fp.probe->size() != c.final_entry.probe->size()) {
      c.entry.model_note = "probe sizes differ";
    } else {
      const double d = l2_distance(*fp.probe, *c.final_entry.probe);
      const double rel = d / std::max({l2_norm(*fp.probe), l2_norm(*c.final_entry.probe), 1e-30});
      c.entry.model_probe_rel = rel;
      probe_within = rel <= kProbeMatchTolerance;
    }
    c.entry.model = *probe_within ? ModelVerdict::kProbeOnly : ModelVerdict::kDiffers;
    if (*probe_within) c.entry.model_note = "no exact binding: the public probe alone proves nothing";
  }
  // The verdict: the weights file's parameters root joined with the final
  // optimizer root is the final logged state root, or no match.
  if (c.bundle.has(member::kModelBinding)) {
    c.at = member::kModelBinding;
    const ReleaseBinding rb = ReleaseBinding::from_json(parse_member(c.bundle, member::kModelBinding), member::kModelBinding);
    const Problem why = binding_problem(rb, LoggedFinal{uint64_t(c.T), c.final_entry.state_root});
    c.entry.model = why ? ModelVerdict::kDiffers : ModelVerdict::kMatches;
    c.entry.model_note = why ? *why : "exactly: parameters root " + rb.params_root.hex();
  }
  // Fresh probes of a model behind an API: shown, never a rejection of the
  // run, but each must be a check of this run's final state.
  for (const std::string& name : c.bundle.names_under(member::kProbeChecks)) {
    const std::string where = std::string(member::kProbeChecks) + name + ".json";
    c.at = where;
    const ProbeCheckReport r = ProbeCheckReport::from_json(parse_member(c.bundle, where), where);
    if (r.run_id != c.run_id) reject(where + " is a probe check of another run");
    if (r.step != uint64_t(c.T) || r.state_root != c.final_entry.state_root)
      reject(where + " checks another state than the run's final one");
    if (challenge_member_name(r.nonce) != name)
      reject(where + " is not named after its nonce (probe-checks/" + challenge_member_name(r.nonce) + ".json)");
    ProbeCheckState s;
    s.name = name;
    s.pass = r.pass();
    for (double w : r.worst) s.worst = std::max(s.worst, w);
    s.tolerance = r.tolerance;
    s.records = r.records;
    s.random = r.random;
    s.guarantee = r.guarantee();
    c.entry.probe_checks.push_back(std::move(s));
  }
}

// The checks of docs/board.md ("Checks"), row for row (cli_test_check_tables
// compares them), in order; the first "no" rejects the run. Every row reads
// the bundle under judgement: what is malformed there is evidence against the
// run (OnError::kNo), a "no" with the error's message (the JSON library's
// prefixed with the member being read, c.at; running out of memory "out of
// memory while reading the bundle"). The board's own error found on the way
// (BoardFolderError) passes, never a verdict.
std::optional<Rejection> judge(Ctx& c) {
  return run_checks<Ctx>(c, {
      {check_bundle_index, OnError::kNo},        // 1
      {check_manifest, OnError::kNo},            // 2
      {check_heads, OnError::kNo},               // 3
      {check_log, OnError::kNo},                 // 4
      {check_final_entry, OnError::kNo},         // 5
      {check_data_commitment, OnError::kNo},     // 6
      {check_challenges, OnError::kNo},          // 7
      {check_reports, OnError::kNo},             // 8
      {check_board_reports, OnError::kNo},       // 8b
      training_confidence,                       // 8c
      {check_no_rejected_report, OnError::kNo},  // 9
      {check_eval, OnError::kNo},                // 10
      {check_eval_scores, OnError::kNo},         // 11
      {check_eval_spot_checks, OnError::kNo},    // 12
      {check_board_eval, OnError::kNo},          // 12b
      {check_contamination, OnError::kNo},       // 13
      {check_board_leaves, OnError::kNo},        // 13b
      {check_model, OnError::kNo},               // 14
  }, Reading{&c.at, "the bundle"});
}

}  // namespace

std::string challenge_member_name(const Hash32& seed) { return seed.hex().substr(0, 16); }

RunEntry evaluate_run_bundle(const RunBundle& b, double fraction, const BoardDefinition* board) {
  RunEntry e;
  if (board) {
    fraction = board->policy.fraction;
    e.board = board->name;
    e.required = board->policy.confidence;
  }
  e.fraction = fraction;
  e.source = path_name(b.path);
  e.name = b.index_problem() ? name_from_path(b.path) : b.declared_name();
  Ctx c(b, e, board);
  if (const std::optional<Rejection> no = judge(c)) {
    e.status = BoardStatus::kRejected;
    e.reason = no->reason.substr(0, no->reason.find('\n'));
    return e;
  }
  assign_status(e, board);
  return e;
}

uint64_t next_draw_number(const RunBundle& b) { return b.names_under(member::kDraws).size(); }

StoredLog derive_stored_log(const RunBundle& b, const std::string& log) {
  RunEntry e;
  Ctx c(b, e, nullptr);
  c.given_log = &log;
  // Checks 2 to 4 on the given bytes; an error in them stays an error.
  if (const auto r = run_checks<Ctx>(c, {check_manifest, check_heads, curve_of_given_log}))
    throw Error(r->reason, b.path);
  const std::vector<std::pair<int64_t, double>>& curve = e.loss_curve;
  StoredLog d;
  d.digest = member_digest(log);
  d.size = log.size();
  d.entries = curve.size() + 1;
  for (int64_t s : curve_steps(int64_t(curve.size()))) d.curve.push_back(curve[size_t(s - 1)]);
  return d;
}

void audit_stored_log(const RunBundle& b, const std::string& store, const std::map<std::string, std::string>& pruned,
                      const std::string& where) {
  const StoredLog doc = StoredLog::from_json(jsonf::parse(b.get(member::kStoredLog), "invalid stored log", where), where);
  const StoredCopy copy(store, doc.path(), doc.digest, "log", pruned);  // read once
  StoredLog now;
  try {
    now = derive_stored_log(b, read_file(copy.path()));
  } catch (const Error& x) {
    const std::string m = x.what();
    throw Error("the stored log " + doc.path() + " is not the run's signed log: " + m.substr(0, m.find('\n')));
  }
  if (now.size != doc.size || now.entries != doc.entries)
    throw Error("its size and entry count (" + std::to_string(doc.size) + " bytes, " + std::to_string(doc.entries) +
                ") are not the stored log's (" + std::to_string(now.size) + ", " + std::to_string(now.entries) + ")");
  for (size_t i = 0; i < now.curve.size(); i++)
    // from_json checked the steps (the same count, the same steps); a loss as JSON has it (not finite: null).
    if (json(now.curve[i].second) != json(doc.curve[i].second))
      throw Error("its loss curve is not the stored log's (step " + std::to_string(now.curve[i].first) + ": " +
                  json(doc.curve[i].second).dump() + " in the document, " + json(now.curve[i].second).dump() + " in the log)");
}

BundleFinal bundle_final_state(const RunBundle& b) {
  RunEntry e;
  Ctx c(b, e, nullptr);
  // Checks 1 to 5 on a bundle already judged: an error in them stays an error.
  if (const auto r = run_checks<Ctx>(c, {check_bundle_index, check_manifest, check_heads, check_log, check_final_entry}))
    throw Error(r->reason, b.path);
  return BundleFinal{c.mf, c.run_id, c.T, c.final_entry.state_root};
}

RunEntry evaluate_bundle_path(const std::string& path, double fraction, const BoardDefinition* board) {
  RunBundle b;
  try {
    b = RunBundle::load(path);
  } catch (const std::exception& x) {
    RunEntry e;
    e.fraction = board ? board->policy.fraction : fraction;
    if (board) {
      e.board = board->name;
      e.required = board->policy.confidence;
    }
    e.source = path_name(path);
    e.name = name_from_path(path);
    e.status = BoardStatus::kRejected;
    e.reason = std::string(x.what()).substr(0, std::string(x.what()).find('\n'));
    return e;
  }
  return evaluate_run_bundle(b, fraction, board);
}

namespace {

// A run bundle in a board's folder as its index lists it. Files its index
// does not list count for nothing (named in `ignored`); a listed member that
// is missing or edited, or an index that cannot be read, is the folder's
// inconsistency (BoardFolderError naming the file). Every bundle on a board
// was whole when it was submitted, and only the board writes to it since.
RunBundle listed_members(const RunBundle& b, std::vector<std::string>& ignored) {
  auto index_error = [&](const std::string& what, const std::string& member) {
    throw_folder_error(b, "the board's folder does not match its own index: " + what, member);
  };
  auto it = b.files.find(kRunBundleIndex);
  if (it == b.files.end()) index_error("the run has no bundle.json", kRunBundleIndex);
  const json j = json::parse(it->second, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("members") || !j["members"].is_object())
    index_error("bundle.json cannot be read", kRunBundleIndex);
  RunBundle out = b;
  for (const auto& [name, bytes] : b.files)
    if (name != kRunBundleIndex && !j["members"].contains(name)) {
      ignored.push_back(name);
      out.files.erase(name);
    }
  if (Problem p = out.index_problem()) {
    // Name the member when the problem is one's.
    std::string member = kRunBundleIndex;
    for (const auto& [name, digest] : j["members"].items()) {
      const std::string says = "member " + name;
      const size_t at = p->find(says);
      if (at != std::string::npos && (at + says.size() == p->size() || (*p)[at + says.size()] == ' ')) member = name;
    }
    index_error(*p, member);
  }
  return out;
}

}  // namespace

std::vector<RunEntry> evaluate_board(const std::string& dir, const BoardDefinition& def) {
  const std::filesystem::path runs = std::filesystem::path(dir) / board_path::kRuns;
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& x : std::filesystem::directory_iterator(runs, ec))
    if (x.path().filename().string()[0] != '.') paths.push_back(x.path().string());  // not a writer's temporary
  if (ec) throw Error("cannot read the board's runs: " + ec.message(), runs.string());
  std::sort(paths.begin(), paths.end());
  std::vector<RunEntry> out;
  for (const auto& p : paths) {
    RunBundle b;
    try {
      b = RunBundle::load(p);
    } catch (const std::exception& x) {
      const std::string m = x.what();
      throw BoardFolderError("the board's folder holds a run that cannot be read: " + m.substr(0, m.find('\n')), p,
                             kBoardFolderHint);
    }
    std::vector<std::string> ignored;
    const RunBundle listed = listed_members(b, ignored);
    RunEntry e = evaluate_run_bundle(listed, def.policy.fraction, &def);
    e.ignored = ignored;
    const RunPruned pr = run_pruned(dir, listed);
    e.pruned_files = pr.files;
    e.evidence_files = pr.of;
    e.pruned_at = pr.at;
    if (pr.log) {  // nobody can check its curve any more: not drawn
      e.loss_curve.clear();
      e.log_pruned = true;
    }
    out.push_back(std::move(e));
  }
  out = order_board(std::move(out));
  // One run, one entry: the same run id under a second name is shown once.
  // The entry that keeps it is the furthest along (certified before pending,
  // then the first in board order), so a copy cannot push the run it copies
  // off the board; the others count for nothing.
  std::map<std::string, size_t> keeper;
  for (size_t i = 0; i < out.size(); i++) {
    const RunEntry& e = out[i];
    if (e.run_id.empty() || e.status == BoardStatus::kRejected) continue;
    auto [at, fresh] = keeper.emplace(e.run_id, i);
    if (!fresh && e.status == BoardStatus::kCertified && out[at->second].status != BoardStatus::kCertified) at->second = i;
  }
  for (size_t i = 0; i < out.size(); i++) {
    RunEntry& e = out[i];
    if (e.run_id.empty() || e.status == BoardStatus::kRejected || keeper.at(e.run_id) == i) continue;
    e.status = BoardStatus::kRejected;
    e.reason = "the same run (run id " + e.run_id.substr(0, 16) + ") is on the board as " + out[keeper.at(e.run_id)].name +
               ": one run, one entry";
  }
  apply_gap_test(out, def);
  return out;
}

Verdict match_report(const RunBundle& b, const std::string& report_text, const std::string& where) {
  const ReplayReport r = ReplayReport::parse(report_text, where);
  for (const std::string& name : b.names_under(member::kChallenges)) {
    const std::string m = std::string(member::kChallenges) + name + ".json";
    const json j = json::parse(b.get(m), nullptr, false);
    if (j.is_discarded()) continue;
    try {
      const Challenge c = Challenge::from_json(j, m);
      if (!r.answer_problem(c)) return Verdict::pass(name);
    } catch (const Error&) {
      continue;
    }
  }
  return Verdict::fail(where + " answers no challenge of the bundle (run id, head size and root, and challenge seed must all be a challenge's)");
}

TreeHead newest_signed_head(const RunBundle& b) {
  const json j = jsonf::parse(b.get(member::kManifest), "invalid manifest", member::kManifest);
  const Manifest mf = Manifest::from_json(j, member::kManifest);
  RunEntry e;
  Ctx c(b, e, nullptr);
  if (const auto r = run_checks<Ctx>(c, {read_heads})) throw Error(r->reason);
  const std::vector<TreeHead>& heads = c.heads;
  if (heads.empty()) throw Error("no signed heads", member::kHeads);
  const TreeHead h = heads.back();
  const std::string where = std::string(member::kHeads) + ":" + std::to_string(heads.size());
  if (auto p = head_problem(h, mf.run_id(), mf.trainer_key, "the newest head")) throw Error(*p, where);
  return h;
}

}  // namespace wit
