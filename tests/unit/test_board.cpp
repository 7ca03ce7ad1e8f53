// The leaderboard without LibTorch: a complete run bundle built in memory from
// real parts (a real data and eval commitment, witness log, signed heads,
// final-entry proof, challenge, eval commitment with scores and a spot check,
// contamination certificate, fingerprint; only the replay report's numbers
// are written by hand, as wit-replay verify would), judged certified; then
// each way a bundle can be wrong, judged rejected with its reason and never a
// crash; a report of another head; the duplicate-name rule; two builds of a
// board byte-identical; a .wbundle giving the same verdict.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "wit/board/board.h"
#include "wit/board/def.h"
#include "wit/data/tree_audit.h"
#include "wit/run/challenge.h"
#include "wit/data/commitment.h"
#include "wit/run/report.h"
#include "wit/proofs/contamination.h"
#include "wit/base/error.h"
#include "wit/eval/eval.h"
#include "wit/run/fingerprint_doc.h"
#include "wit/hash/hash.h"
#include "wit/data/index.h"
#include "wit/base/io.h"
#include "wit/run/manifest.h"
#include "wit/run/model_spec.h"
#include "wit/eval/release.h"
#include "wit/run/run_bundle.h"
#include "wit/run/runlog.h"
#include "wit/hash/sign.h"
#include "wit/run/wlog.h"

using namespace wit;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& what) {
  static int counter = 0;
  const fs::path d = fs::temp_directory_path() /
                     ("wit-board-test-" + std::to_string(::getpid()) + "-" + what + "-" + std::to_string(counter++));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

Hash32 made_up(uint64_t i) {
  Hash32 h;
  for (size_t j = 0; j < 32; j += 8) put_le64(h.data() + j, i * 0x9e3779b97f4a7c15ull + j);
  return h;
}

std::vector<float> floats(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = base + 0.01f * float(i);
  return v;
}

// Everything a bundle is made of, kept so that tests can make variants.
struct Fixture {
  fs::path dir;
  SecretKey key = (init_crypto(), generate_key());
  SecretKey board_key = generate_key();
  BoardDefinition def;  // the board it is judged on: its benchmark is the eval set
  BoardDraw draw;       // the board's draw of `challenge` (number 0)
  Manifest mf;
  Hash32 run_id;
  std::vector<TreeHead> heads;  // sizes 5 and 9
  Challenge challenge;          // k = 3 under the newest head
  EvalCommitment eval;
  EvalScores scores;
  std::map<std::string, std::string> files;

  static constexpr int64_t kSteps = 8;

  Fixture() {
    dir = temp_dir("run");
    // Data: 30 training lines, 10 eval lines (disjoint), 10 dirty ones (5 in training).
    std::string train, ev, dirty;
    for (int i = 0; i < 30; i++) train += "training record " + std::to_string(i) + "\n";
    for (int i = 0; i < 10; i++) ev += "held-out record " + std::to_string(i) + "\n";
    for (int i = 25; i < 35; i++) dirty += "training record " + std::to_string(i) + "\n";
    write_text(dir / "train.txt", train);
    write_text(dir / "eval.txt", ev);
    write_text(dir / "dirty.txt", dirty);
    ReaderSpec spec;
    spec.kind = ReaderKind::kLines;
    const CommitResult data = commit_dataset(spec, {(dir / "train.txt").string()}, 1);
    const CommitResult evset = commit_dataset(spec, {(dir / "eval.txt").string()}, 1);
    write_text(dir / "data.commit.json", data.commitment.dump());

    mf.model.n_layer = 1;
    mf.model.n_head = 2;
    mf.model.d_model = 16;
    mf.model.context = 16;
    mf.batch_size = 4;
    mf.steps = kSteps;
    mf.checkpoint_every = 4;
    mf.head_every = 4;
    mf.fp.sketch_k = 64;
    mf.fp.sketch_seed = made_up(1);
    mf.fp.probe_every = 4;
    mf.fp.probe_dim = 8;
    mf.data_root = data.commitment.root;
    mf.data_n = data.commitment.n;
    mf.data_reader = spec;
    mf.seed_commitment = made_up(2);
    mf.trainer_key = key.pub();
    mf.software = {{"wit", "test_board"}};
    run_id = mf.run_id();

    // The log: genesis and 8 steps, checkpoint roots at 4 and 8, probes at 4 and 8.
    WitnessLog log = WitnessLog::open((dir / "run.wlog").string(), TornTail::kRefuse, IfMissing::kCreate);
    LogEntry g;
    g.genesis = true;
    g.g.run_id = run_id;
    g.g.init_root = made_up(3);
    g.g.n_params = param_count(mf.model);
    log.append(encode_entry(g));
    for (int64_t s = 1; s <= kSteps; s++) {
      LogEntry e;
      e.s.step = uint64_t(s);
      e.s.lr = 0.001f;
      e.s.mean_loss = 5.5f - 0.25f * float(s);
      e.s.grad_norm = 1.0f;
      e.s.batch_root = made_up(100 + uint64_t(s));
      e.s.losses = floats(4, 5.0f);
      e.s.sketch = floats(64, float(s));
      e.s.sketch_m = floats(64, 0.01f);
      e.s.sketch_v = floats(64, 0.001f);
      e.s.state_root = s == kSteps ? final_root() : made_up(200 + uint64_t(s));
      if (s % 4 == 0) {
        e.s.probe = floats(8, -3.0f + float(s));
        e.s.checkpoint = true;
      }
      log.append(encode_entry(e));
    }
    log.sync();
    std::string heads_text;
    for (uint64_t size : {uint64_t(5), uint64_t(9)}) {
      heads.push_back(sign_head(key, run_id, size, log.root(size), 1700000000 + size));
      heads_text += heads.back().to_json().dump() + "\n";
    }
    draw = BoardDraw::make(board_key, run_id, heads.back(), 0, 1700000100);
    challenge = issue_challenge(heads.back(), "heads", draw.nonce, ChallengeRequest{3, {}, {}, 0, {}});
    def.name = "test-board";
    def.key = board_key.pub();
    def.benchmark = evset.commitment;
    def.metric = kEvalMetric;
    def.policy.fraction = 0.05;
    def.policy.confidence = 0.3;  // one challenge of 3 of 8 steps gives 37.5%

    // The eval: made-up scores of the eval set's records, committed; a spot check of 4.
    scores.record_leaves.assign(evset.tree.leaves(), evset.tree.leaves() + evset.tree.size());
    for (size_t i = 0; i < scores.record_leaves.size(); i++) scores.scores.push_back({2.0 + 0.125 * double(i), 0.5});
    eval = commit_scores(run_id, kSteps, final_root(), evset.commitment.root, scores);
    const std::string nonce = "spot check nonce";
    const EvalCheckReport check = make_eval_check_report(eval, scores, ByteView(nonce), 4, 0.05, [&](uint64_t i) {
      return std::make_pair(scores.record_leaves[i], scores.scores[i]);
    });
    REQUIRE(check.verdict == ReportVerdict::kCertified);

    // The certificate of the eval set against the training data.
    const Bytes idx_bytes = encode_index(data);
    const Index idx(ByteView(idx_bytes), "train.widx");
    ContaminationInput in;
    in.commitment = &data.commitment;
    in.commit_path = (dir / "data.commit.json").string();
    in.index = &idx;
    in.eval_reader = spec;
    in.eval_paths = {(dir / "eval.txt").string()};
    in.ngrams = false;
    in.threads = 1;
    const json cert = contamination_certificate(in);
    REQUIRE(cert["clean"] == true);

    Fingerprint fp;
    fp.run_id = run_id;
    fp.state_root = final_root();
    fp.step = kSteps;
    fp.w = floats(64, float(kSteps));
    fp.m = floats(64, 0.01f);
    fp.v = floats(64, 0.001f);
    fp.probe = floats(8, -3.0f + float(kSteps));

    files[member::kManifest] = mf.dump();
    files[member::kHeads] = heads_text;
    files[member::kFinal] = log_inclusion_document(log, heads.back(), kSteps).dump(2) + "\n";
    files[member::kLog] = read_file((dir / "run.wlog").string());
    files[member::kDataCommit] = data.commitment.dump();
    files[member::kEvalCommit] = evset.commitment.dump();
    files[member::kEval] = eval.to_json().dump(2) + "\n";
    files[member::kEvalScores] = scores.to_json().dump(2) + "\n";
    files[member::kContamination] = cert.dump(2) + "\n";
    files[member::kModelFingerprint] = fp.to_json().dump(2) + "\n";
    files[member::kModelBinding] = binding().to_json().dump(2) + "\n";
    files[challenge_path(challenge)] = challenge.to_json().dump(2) + "\n";
    files["reports/" + challenge_member_name(challenge.seed) + ".json"] = report(challenge).dump(2) + "\n";
    files["draws/" + challenge_member_name(challenge.seed) + ".json"] = draw.to_json().dump(2) + "\n";
    files[board_report_path(challenge)] = board_report(challenge, report(challenge)) + "\n";
    files[member::kBoardEval] = board_eval(eval.to_json()) + "\n";
    data_n = data.commitment.n;
    data_root = data.commitment.root;
    data_leaves.assign(data.tree.leaves(), data.tree.leaves() + data.tree.size());
    files[member::kBoardLeaves] = board_leaves_doc(data_n, data_root, "") + "\n";
    files["eval-checks/" + challenge_member_name(check.seed) + ".json"] = check.to_json().dump(2) + "\n";

    // A contaminated variant's parts.
    const CommitResult dirtyset = commit_dataset(spec, {(dir / "dirty.txt").string()}, 1);
    dirty_commit = dirtyset.commitment.dump();
    dirty_scores.record_leaves.assign(dirtyset.tree.leaves(), dirtyset.tree.leaves() + dirtyset.tree.size());
    for (size_t i = 0; i < dirty_scores.record_leaves.size(); i++) dirty_scores.scores.push_back({3.0, 0.25});
    dirty_eval = commit_scores(run_id, kSteps, final_root(), dirtyset.commitment.root, dirty_scores);
    dirty_check = make_eval_check_report(dirty_eval, dirty_scores, ByteView(nonce), 3, 0.05, [&](uint64_t i) {
      return std::make_pair(dirty_scores.record_leaves[i], dirty_scores.scores[i]);
    });
    in.eval_paths = {(dir / "dirty.txt").string()};
    dirty_cert = contamination_certificate(in);
  }
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  std::string dirty_commit;
  EvalScores dirty_scores;
  EvalCommitment dirty_eval;
  EvalCheckReport dirty_check;
  json dirty_cert;

  // The final state's root: a parameters root joined with an optimizer root,
  // so that a released weights file can be bound to it exactly.
  static Hash32 final_root() { return join_state_root(made_up(300), made_up(301)); }
  // What wit-sketch match --json writes for the final parameters.
  static ReleaseBinding binding() {
    ReleaseBinding b;
    b.match = true;
    b.step = kSteps;
    b.state_root = final_root();
    b.params_root = made_up(300);
    b.optim_root = made_up(301);
    return b;
  }

  static std::string challenge_path(const Challenge& c) { return "challenges/" + challenge_member_name(c.seed) + ".json"; }
  uint64_t data_n = 0;
  Hash32 data_root;
  std::vector<Hash32> data_leaves;  // the training tree's sorted leaves
  // The board's signed audit of a tree of n leaves and root `root` ("" refused: audited sorted).
  std::string board_leaves_doc(uint64_t n, const Hash32& root, const std::string& refused, const SecretKey* by = nullptr) const {
    BoardLeaves bl;
    bl.leaves_digest = made_up(602).hex();
    bl.leaves_bytes = 64 + 32 * n;
    bl.n = n;
    bl.root = root;
    bl.refused = refused;
    bl.sign_with(by ? *by : board_key);
    return bl.to_json().dump(2);
  }
  // The board's signed evaluation holding eval commitment `ev` (signed by `by`, default the board key).
  std::string board_eval(const json& ev, const SecretKey* by = nullptr) const {
    BoardEval be;
    be.weights_digest = made_up(601).hex();
    be.weights_bytes = 4321;
    be.eval = ev;
    be.sign_with(by ? *by : board_key);
    return be.to_json().dump(2);
  }
  static std::string board_report_path(const Challenge& c) { return "board-reports/" + challenge_member_name(c.seed) + ".json"; }
  // The board's signed report on challenge `c` holding replay report `r` (signed by `by`, default the board key).
  std::string board_report(const Challenge& c, const json& r, const SecretKey* by = nullptr) const {
    BoardReport br;
    br.challenge = challenge_member_name(c.seed);
    br.response_digest = made_up(600).hex();
    br.response_bytes = 1234;
    br.report = r;
    br.sign_with(by ? *by : board_key);
    return br.to_json().dump(2);
  }

  // A replay report as wit-replay verify writes it (the typed report's to_json).
  static json report(const Challenge& c, bool certified = true) {
    ReplayReport r = ReplayReport::answering(c);
    r.mode = "tolerant";  // a margin and distances: what a tolerant verifier writes
    r.margin = 10;
    r.verdict = certified ? ReportVerdict::kCertified : ReportVerdict::kRejected;
    if (!certified) r.reason = "step 3: weights differ";
    for (int64_t s : c.steps) {
      ReportCheck k;
      k.step = s;
      k.pass = certified;
      if (!certified) {
        k.failed = "weights";
        k.reason = "step 3: weights differ";
      }
      k.distances = {{"weights", certified ? 1e-8 : 1.0}, {"adam_m", 0.0}, {"losses", INFINITY}};
      k.thresholds = {{"weights", 1e-6}, {"adam_m", 1e-4}, {"losses", 1e-6}};
      k.seconds = 0.5;
      r.checks.push_back(k);
    }
    return r.to_json();
  }

  RunBundle bundle(const std::string& name = "honest") const {
    RunBundle b;
    b.path = (dir / name).string();
    b.files = files;
    b.files[kRunBundleIndex] = b.index_json(name);
    return b;
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// A board definition request in `d` on the fixture's eval set (a lines commitment
// written to d/eval.commit.json), the key at d/board.key, the folder d/board.
BoardInit board_init_in(const fs::path& d, const std::string& name) {
  const Fixture& f = fixture();
  ReaderSpec spec;
  spec.kind = ReaderKind::kLines;
  write_file_atomic((d / "eval.commit.json").string(), commit_dataset(spec, {(f.dir / "eval.txt").string()}, 1).commitment.dump());
  BoardInit in;
  in.dir = (d / "board").string();
  in.name = name;
  in.key_path = (d / "board.key").string();
  in.commit_path = (d / "eval.commit.json").string();
  in.record_files = {(f.dir / "eval.txt").string()};
  return in;
}

// The bundle with `member` replaced (or removed when `bytes` is null) and re-indexed.
RunBundle variant(const std::string& member, const std::optional<std::string>& bytes, const std::string& name = "v") {
  RunBundle b = fixture().bundle(name);
  if (bytes) b.files[member] = *bytes;
  else b.files.erase(member);
  b.files[kRunBundleIndex] = b.index_json(name);
  return b;
}

// Judged on the fixture's board.
RunEntry judge(const RunBundle& b) { return evaluate_run_bundle(b, 0.05, &fixture().def); }
RunEntry judge_path(const std::string& p) { return evaluate_bundle_path(p, 0.05, &fixture().def); }

// The board's folder error (a board document not signed by the board) for a bundle, or "".
std::string folder_error_of(const RunBundle& b) {
  try {
    (void)judge(b);
  } catch (const BoardFolderError& x) {
    return x.what();
  }
  return "";
}

std::string reason_of(const RunBundle& b) {
  const RunEntry e = judge(b);
  CHECK(e.status == BoardStatus::kRejected);
  return e.reason;
}

std::string report_member() { return Fixture::board_report_path(fixture().challenge); }
// The bundle with the board's report on its challenge holding replay report `r` (signed by the board).
RunBundle variant_report(const json& r, const std::string& name = "v") {
  return variant(report_member(), fixture().board_report(fixture().challenge, r), name);
}

}  // namespace

TEST_CASE("board: an honest bundle is certified with the exact confidence", "[board]") {
  init_crypto();
  const RunEntry e = judge(fixture().bundle());
  INFO(e.reason);
  REQUIRE(e.status == BoardStatus::kCertified);
  CHECK(e.name == "honest");
  CHECK(e.run_id == fixture().run_id.hex());
  CHECK(e.survived == 1);
  CHECK(e.pending == 0);
  CHECK(e.failed == 0);
  CHECK(e.steps_checked.size() == 3);
  CHECK(e.bad_steps == 1);  // ceil(0.05 * 8)
  CHECK(e.confidence == Approx(1.0 - 35.0 / 56.0));  // 1 - C(7,3)/C(8,3)
  CHECK(e.eval_known);
  CHECK(e.eval_n == 10);
  CHECK(e.eval_indices_checked.size() == 4);
  CHECK(e.eval_bad == 1);
  CHECK(e.eval_confidence == Approx(0.4));  // 1 - C(9,4)/C(10,4)
  CHECK(e.clean == std::optional<bool>(true));
  CHECK(e.model == ModelVerdict::kMatches);
  CHECK(e.loss_curve.size() == 8);
  CHECK(e.params == param_count(fixture().mf.model));
  CHECK(e.tokens == 8 * 4 * 16);
  CHECK(e.describe().rfind("honest: certified\n", 0) == 0);
  CHECK(e.describe().find("challenges: 1 issued (1 drawn by the board), 1 survived, 0 pending, 0 failed") != std::string::npos);
  CHECK(e.challenges[0].drawn_by == "board");
  CHECK(e.board == "test-board");
  CHECK(e.flops == Approx(6.0 * double(e.params) * double(e.tokens)));
  CHECK(badge_text(e) == "certified 37.50%");
}

TEST_CASE("board: segment transitions in a report are checked, not counted as uniform draws", "[board]") {
  init_crypto();
  const Fixture& f = fixture();
  json r = Fixture::report(f.challenge);
  for (int64_t s : {5, 6})
    r["checks"].push_back({{"kind", "segment"}, {"step", s}, {"segment", {{"from", 4}, {"to", 6}}}, {"pass", true},
                           {"failed", nullptr}, {"distances", {{"weights", 1e-8}}}, {"thresholds", {{"weights", 1e-6}}}});
  const RunEntry e = judge(variant_report(r));
  INFO(e.reason);
  REQUIRE(e.status == BoardStatus::kCertified);
  CHECK(e.steps_checked.size() == 3);  // the step challenges only
  CHECK(e.confidence == Approx(1.0 - 35.0 / 56.0));
  // A failed segment transition in a report that claims "certified" is refused.
  r["checks"].back()["pass"] = false;
  CHECK(judge(variant_report(r)).status == BoardStatus::kRejected);
}

TEST_CASE("board: a report of another head is rejected", "[board]") {
  const Fixture& f = fixture();
  // The same challenge's report, but for the older head (size 5).
  json r = Fixture::report(f.challenge);
  r["head"] = {{"size", f.heads[0].size}, {"root", f.heads[0].root.hex()}};
  CHECK(reason_of(variant_report(r)).find("is for another head than its challenge's") != std::string::npos);
  // A challenge (and its honest report) under a head the bundle's heads.jsonl does not hold.
  const TreeHead resigned = sign_head(f.key, f.run_id, f.heads[1].size, f.heads[1].root, 1800000000);
  const Challenge c2 = issue_challenge(resigned, "h", made_up(9), ChallengeRequest{2, {}, {}, 0, {}});
  RunBundle b = f.bundle("resigned");
  b.files[Fixture::challenge_path(c2)] = c2.to_json().dump(2) + "\n";
  b.files["reports/" + challenge_member_name(c2.seed) + ".json"] = Fixture::report(c2).dump(2) + "\n";
  b.files[kRunBundleIndex] = b.index_json("resigned");
  CHECK(reason_of(b).find("its head is not among the run's signed heads") != std::string::npos);
  // A report of another run.
  r = Fixture::report(f.challenge);
  r["run_id"] = made_up(42).hex();
  CHECK(reason_of(variant_report(r)).find("is a report on another run") != std::string::npos);
  // A report of another challenge of the same head.
  const Challenge c3 = issue_challenge(f.heads[1], "h", made_up(10), ChallengeRequest{3, {}, {}, 0, {}});
  CHECK(reason_of(variant_report(Fixture::report(c3))) ==
        report_member() + " answers another challenge (challenge seed differs)");
  // A certified report that skipped a step.
  r = Fixture::report(f.challenge);
  r["checks"].erase(r["checks"].begin());
  CHECK(reason_of(variant_report(r)).find("does not check exactly its challenge's steps") != std::string::npos);
}

TEST_CASE("board: one rejected report or spot check rejects the run - missing ones leave it pending", "[board]") {
  const Fixture& f = fixture();
  CHECK(reason_of(variant_report(Fixture::report(f.challenge, false))) ==
        report_member() + ": the board replayed the response and rejected the run: step 3: weights differ");
  const RunEntry failed = judge(variant_report(Fixture::report(f.challenge, false)));
  CHECK(failed.failed == 1);  // the board shows the failed challenge
  CHECK(failed.survived == 0);
  CHECK(failed.model == ModelVerdict::kNotChecked);  // the checks stopped before the released model
  const RunEntry waiting = judge(variant(report_member(), std::nullopt));
  CHECK(waiting.status == BoardStatus::kPending);
  CHECK(waiting.pending == 1);
  CHECK(waiting.reason.find("is below the board's 30.00%; waiting for the response to 1 board challenge") != std::string::npos);
  CHECK(waiting.model == ModelVerdict::kMatches);  // a pending run is checked to the end
  RunBundle nocheck = f.bundle("nocheck");
  for (const auto& n : nocheck.names_under("eval-checks/")) nocheck.files.erase("eval-checks/" + n + ".json");
  nocheck.files[kRunBundleIndex] = nocheck.index_json("nocheck");
  const RunEntry e = judge(nocheck);
  CHECK(e.status == BoardStatus::kCertified);  // on a board the board's own score replaces the trainer's spot checks
  CHECK(e.eval_by == "board");
  // An inflated score: the scores no longer reproduce the commitment.
  EvalScores s = f.scores;
  s.scores[3].loss = 0.001;
  CHECK(reason_of(variant(member::kEvalScores, s.to_json().dump(2))).rfind("eval.scores.json: ", 0) == 0);
}

TEST_CASE("board: the eval must be of the final checkpoint, and the eval set clean", "[board]") {
  const Fixture& f = fixture();
  EvalScores s = f.scores;
  const EvalCommitment early = commit_scores(f.run_id, 4, made_up(204), f.eval.eval_root, s);
  CHECK(reason_of(variant(member::kEval, early.to_json().dump(2))) ==
        "eval.json evaluates the checkpoint of step 4, not the final step 8");
  s = f.scores;
  const EvalCommitment other = commit_scores(made_up(5), 8, made_up(208), f.eval.eval_root, s);
  CHECK(reason_of(variant(member::kEval, other.to_json().dump(2))) == "eval.json evaluates another run");
  // A contaminated eval set, with everything else consistent.
  RunBundle b = f.bundle("dirty");
  for (const auto& n : b.names_under("eval-checks/")) b.files.erase("eval-checks/" + n + ".json");
  b.files[member::kEvalCommit] = f.dirty_commit;
  b.files[member::kEval] = f.dirty_eval.to_json().dump(2);
  b.files[member::kEvalScores] = f.dirty_scores.to_json().dump(2);
  b.files["eval-checks/" + challenge_member_name(f.dirty_check.seed) + ".json"] = f.dirty_check.to_json().dump(2);
  b.files[member::kContamination] = f.dirty_cert.dump(2);
  b.files[kRunBundleIndex] = b.index_json("dirty");
  // (judged without a board: on the fixture's board another eval set is refused first)
  CHECK(reason_of(b).rfind("the run is evaluated on another eval set", 0) == 0);
  CHECK(evaluate_run_bundle(b).reason == "the eval set is contaminated: 5 of 10 distinct eval records are in the training data");
  // The dirty set's certificate does not cover the clean eval set.
  CHECK(reason_of(variant(member::kContamination, f.dirty_cert.dump(2))).rfind("contamination certificate does not cover the eval set", 0) == 0);
  // A spot check of another eval, named after its seed: check_eval_report's words.
  const std::string other_check = "eval-checks/" + challenge_member_name(f.dirty_check.seed) + ".json";
  CHECK(reason_of(variant(other_check, f.dirty_check.to_json().dump(2))) ==
        other_check + ": the report checks another eval (eval id)");
}

TEST_CASE("board: bad bundles are rejected with a reason, never a crash", "[board]") {
  const Fixture& f = fixture();
  RunBundle b = f.bundle();
  b.files.erase(member::kEval);
  CHECK(reason_of(b) == "missing member eval.json");
  b = f.bundle();
  b.files[kRunBundleIndex] = std::string(b.files[kRunBundleIndex]).replace(b.files[kRunBundleIndex].find("\"version\": 1"), 12, "\"version\": 2");
  CHECK(reason_of(b).rfind("unsupported run bundle version 2", 0) == 0);
  b = f.bundle();
  b.files[member::kManifest] += " ";
  CHECK(reason_of(b) == "member manifest.json does not match its hash in bundle.json");
  b = f.bundle();
  b.files["reports/extra.json"] = "{}";
  CHECK(reason_of(b) == "member reports/extra.json is not listed in bundle.json");
  CHECK(reason_of(variant(member::kManifest, f.files.at(member::kManifest) + "\n")) == "manifest is not in canonical form: manifest.json");
  json r = Fixture::report(f.challenge);
  r["version"] = 1;  // a report of the sketch-only verifier: refused, saying which version is read
  CHECK(reason_of(variant_report(r)).rfind("unsupported report version 1 (this wit reads version 3", 0) == 0);
  CHECK(reason_of(variant(member::kFinal, std::nullopt)) == "missing member final.json");
  // Heads of another run, a head that is not the whole run, a log that is not the heads'.
  std::string heads = f.files.at(member::kHeads);
  const TreeHead h = sign_head(f.key, made_up(77), 9, f.heads[1].root, 1);
  CHECK(reason_of(variant(member::kHeads, heads + h.to_json().dump() + "\n")) ==
        "heads.jsonl:3: the head names another run");
  CHECK(reason_of(variant(member::kHeads, heads.substr(0, heads.find('\n') + 1))) ==
        "the newest signed head covers 5 entries, not the 9 of the whole run");
  std::string log = f.files.at(member::kLog);
  CHECK(reason_of(variant(member::kLog, log.substr(0, log.size() - 3))).rfind("witness log ends in a torn frame (", 0) == 0);
  // A damaged frame before the end: the log reader's own words, naming the member and the byte.
  std::string bad = log;
  bad[8] ^= 1;
  CHECK(reason_of(variant(member::kLog, bad)) == "witness log is corrupt (frame checksum mismatch): run.wlog at byte 0");
  // An impossible frame length is refused before anything is read (the old board copy had no bound).
  bad = log;
  bad[3] = char(0x7f);
  CHECK(reason_of(variant(member::kLog, bad)).rfind("witness log is corrupt (frame length ", 0) == 0);
  // Without run.wlog the run is judged by its signatures and proofs alone.
  const RunEntry nolog = judge(variant(member::kLog, std::nullopt));
  CHECK(nolog.status == BoardStatus::kCertified);
  CHECK(nolog.loss_curve.empty());
  // A released model that is not the final one differs, without rejecting.
  Fingerprint fp = Fingerprint::from_json(json::parse(f.files.at(member::kModelFingerprint)), "fp");
  (*fp.probe)[0] += 1.0f;
  const RunEntry differs = judge(variant(member::kModelFingerprint, fp.to_json().dump()));
  CHECK(differs.status == BoardStatus::kCertified);
  CHECK(differs.model == ModelVerdict::kMatches);  // the fingerprint is information: the exact binding decides
  CHECK(differs.model_probe_rel > 0.0);
  RunBundle nobind = variant(member::kModelFingerprint, fp.to_json().dump());
  nobind.files.erase(member::kModelBinding);
  nobind.files[kRunBundleIndex] = nobind.index_json("v");
  CHECK(judge(nobind).model == ModelVerdict::kDiffers);  // a probe beyond tolerance is a real difference
  CHECK(judge(variant(member::kModelBinding, std::nullopt)).model == ModelVerdict::kProbeOnly);
  // Unreadable bundles and paths.
  const RunEntry gone = judge_path("/nonexistent/garbage.wbundle");
  CHECK(gone.status == BoardStatus::kRejected);
  CHECK(gone.name == "garbage");
  CHECK_THROWS_AS(RunBundle::decode(ByteView(std::string("not a bundle")), "x.wbundle"), Error);
}

TEST_CASE("board: every mutation of every member is judged without throwing", "[board]") {
  const Fixture& f = fixture();
  size_t judged = 0;
  for (const auto& [name, bytes] : f.files) {
    for (int kind = 0; kind < 5; kind++) {
      std::string m = bytes;
      if (kind == 0) m = m.substr(0, m.size() / 2);
      else if (kind == 1) m[m.size() / 3] ^= 0x01;
      else if (kind == 2) m[m.size() - 2] = '9';
      else if (kind == 3) m = "[]";
      else m = "{\"format\": 1}";
      RunEntry e;
      // A board document that no longer verifies is the folder's error (exit 2), never a verdict on the run.
      const bool board_doc = name.rfind("draws/", 0) == 0 || name.rfind("board-reports/", 0) == 0 ||
                             name == member::kBoardEval || name == member::kBoardLeaves;
      try {
        e = judge(variant(name, m));
      } catch (const BoardFolderError& x) {
        INFO(name << " kind " << kind << ": " << x.what());
        CHECK(board_doc);
        judged++;
        continue;
      }
      INFO(name << " kind " << kind << ": " << status_name(e.status) << " (" << e.reason << ")");
      judged++;
      // A report's timings and tolerant distances are information nobody can
      // check: a flipped digit there may stay certified, but only if the
      // mutated report still parses as the same verdict on the same steps of
      // the same challenge.
      if (name.rfind("reports/", 0) == 0 && e.status == BoardStatus::kCertified) {
        const ReplayReport was = ReplayReport::parse(bytes, name), now = ReplayReport::parse(m, name);
        CHECK(now.verdict == was.verdict);
        CHECK(now.step_checks() == was.step_checks());
        CHECK_FALSE(now.answer_problem(f.challenge));
        continue;
      }
      CHECK(e.status == BoardStatus::kRejected);  // every member is checked: no mutation is certified
      CHECK(!e.reason.empty());
    }
  }
  CHECK(judged == f.files.size() * 5);
}

TEST_CASE("board: a board is byte-identical when built twice - duplicate names are rejected", "[board]") {
  const Fixture& f = fixture();
  std::vector<RunEntry> runs = {judge(f.bundle("zeta")), judge(f.bundle("alpha")),
                                judge(variant(report_member(), std::nullopt, "alpha")),
                                judge_path("/nonexistent/broken.wbundle")};
  runs[1].source = "a";
  runs[2].source = "b";
  runs = order_board(runs);
  REQUIRE(runs.size() == 4);
  CHECK(runs[0].name == "alpha");
  CHECK(runs[0].status == BoardStatus::kCertified);
  CHECK(runs[1].name == "alpha-2");
  CHECK(runs[1].status == BoardStatus::kRejected);
  CHECK(runs[1].reason == "another bundle on the board has the name alpha");
  CHECK(runs[2].name == "broken");
  CHECK(runs[3].name == "zeta");
  const fs::path d1 = temp_dir("site"), d2 = temp_dir("site");
  write_file_atomic((d2 / "runs-stale.txt").string(), "x");
  fs::create_directories(d2 / "runs");
  write_file_atomic((d2 / "runs" / "gone.html").string(), "stale");
  write_site(d1.string(), runs, 0.05);
  write_site(d2.string(), runs, 0.05);
  CHECK_FALSE(fs::exists(d2 / "runs" / "gone.html"));
  for (const char* p : {"index.html", "board.json", "runs/alpha.html", "runs/alpha-2.html", "runs/zeta.html", "runs/broken.html"}) {
    INFO(p);
    REQUIRE(fs::exists(d1 / p));
    CHECK(read_file((d1 / p).string()) == read_file((d2 / p).string()));
  }
  const std::string page = read_file((d1 / "runs/alpha.html").string());
  CHECK(page.find("<path class=\"curve\" d=\"M") != std::string::npos);
  CHECK(page.find("<svg id=\"replay-") != std::string::npos);
  const json board = json::parse(read_file((d1 / "board.json").string()));
  CHECK(board["format"] == "wit.board");
  CHECK(board["runs"].size() == 4);
  CHECK(board["runs"][0]["challenges"]["list"][0]["checks"][0]["distances"]["losses"] == "inf");
  CHECK(board["runs"][0]["badge"] == "certified 37.50%");
  CHECK(board["runs"][0]["challenges"]["list"][0]["drawn_by"] == "board");
  const std::string index = read_file((d1 / "index.html").string());
  CHECK(index.find("<svg id=\"compute\"") != std::string::npos);  // score against compute, with the frontier
  CHECK(index.find("<path class=\"frontier\"") != std::string::npos);
  CHECK(index.find(">certified 37.50%</span>") != std::string::npos);
  fs::remove_all(d1);
  fs::remove_all(d2);
}

// Issue 37 item 7: the site says what it ranks.
TEST_CASE("board: the site ranks explicitly - rank column, unit and direction, benchmark, ties legible", "[board]") {
  const Fixture& f = fixture();
  RunEntry a = judge(f.bundle("alpha")), b = judge(f.bundle("beta")), c = judge(f.bundle("gamma")), p = judge(f.bundle("pend"));
  REQUIRE(a.status == BoardStatus::kCertified);
  c.eval_loss += 0.5;  // worse
  p.status = BoardStatus::kPending;
  p.reason = "no board challenge drawn yet";
  const std::vector<RunEntry> runs = order_board({a, b, c, p});
  const std::string index = render_index_html(runs, 0.05, &f.def);
  // Competition ranks: alpha and beta tie (the same score), gamma is third; the pending run is not ranked.
  CHECK(index.find("<td class=\"num rank\" data-v=\"0\">1=</td><td data-v=\"alpha\">") != std::string::npos);
  CHECK(index.find("<td class=\"num rank\" data-v=\"1\">1=</td><td data-v=\"beta\">") != std::string::npos);
  CHECK(index.find("<td class=\"num rank\" data-v=\"2\">3</td><td data-v=\"gamma\">") != std::string::npos);
  CHECK(index.find("<td class=\"num rank\" data-v=\"3\">&#8212;</td><td data-v=\"pend\">") != std::string::npos);
  CHECK(index.find(">rank</th>") != std::string::npos);
  // What is ranked, its unit and direction; the benchmark by name and size.
  CHECK(index.find("Ranked by <b>eval loss</b>: the mean next-byte loss in nats/byte") != std::string::npos);
  CHECK(index.find("<b>lower is better</b>") != std::string::npos);
  CHECK(index.find("eval loss<br><small>nats/byte, lower is better</small>") != std::string::npos);
  CHECK(index.find("(" + std::to_string(f.def.benchmark.n) + " published records, root <code>") != std::string::npos);
  // The status rules as docs/board.md states them.
  for (const auto& [name, rule] : board_status_rules()) CHECK(index.find("<li><b>" + name + "</b>: " + html_escape(rule) + "</li>") != std::string::npos);
  // The badge shows the confidence the confidence column shows.
  CHECK(index.find(">certified " + percent(a.confidence) + "</span>") != std::string::npos);
  CHECK(index.find(">" + percent(a.confidence) + "</td>") != std::string::npos);
  // The plot: titled axes, loss increasing upwards, and the tied runs' labels apart.
  CHECK(index.find("class=\"ylabel\"") != std::string::npos);
  CHECK(index.find("(lower is better &#8595;)") != std::string::npos);
  auto attr = [&](const std::string& tag, const std::string& name, const char* key) {
    const size_t at = index.find("<" + tag + " class=\"" + (tag == "text" ? "label" : "run certified") + "\" data-name=\"" + name + "\"");
    REQUIRE(at != std::string::npos);
    const size_t k = index.find(std::string(" ") + key + "=\"", at) + std::strlen(key) + 3;
    return std::stod(index.substr(k, index.find('"', k) - k));
  };
  CHECK(attr("circle", "alpha", "cy") == attr("circle", "beta", "cy"));  // tied: one point
  CHECK(std::fabs(attr("text", "alpha", "y") - attr("text", "beta", "y")) >= 12);  // two labels, one under the other
  CHECK(attr("circle", "gamma", "cy") < attr("circle", "alpha", "cy"));  // a higher loss is higher up
}

TEST_CASE("board: a .wbundle and a directory give the same verdict - add and match reports", "[board]") {
  const Fixture& f = fixture();
  const fs::path d = temp_dir("wb");
  RunBundle b = f.bundle();
  b.path = (d / "honest.wbundle").string();
  b.archive = true;
  b.save_new();
  CHECK_THROWS_AS(b.save_new(), Error);  // never overwritten
  RunBundle dirb = f.bundle();
  dirb.path = (d / "honest").string();
  dirb.save_new();
  const RunEntry a = judge_path((d / "honest.wbundle").string());
  const RunEntry c = judge_path((d / "honest").string());
  CHECK(a.status == BoardStatus::kCertified);
  CHECK(a.to_json().at("status") == "certified");
  CHECK(a.to_json().at("run_id") == a.run_id);
  RunEntry a2 = a, c2 = c;
  a2.source = c2.source = "";
  CHECK(a2.to_json() == c2.to_json());
  // A report answers the bundle's challenge; another one does not.
  const Verdict answers = match_report(b, Fixture::report(f.challenge).dump(), "r.json");
  CHECK(answers.ok);
  CHECK(answers.summary == challenge_member_name(f.challenge.seed));
  const Challenge other = issue_challenge(f.heads[1], "h", made_up(11), ChallengeRequest{2, {}, {}, 0, {}});
  const Verdict none = match_report(b, Fixture::report(other).dump(), "r.json");
  CHECK(!none.ok);
  CHECK(none.reason.find("answers no challenge") != std::string::npos);
  CHECK_THROWS_AS(match_report(b, "{\"format\": \"wit.report\", \"version\": 1}", "r.json"), Error);
  CHECK_THROWS_AS(match_report(b, "{\"format\": \"wit.report\", \"version\": 3}", "r.json"), Error);
  CHECK(newest_signed_head(b).size == 9);
  // Adding a member to a directory bundle keeps it whole.
  RunBundle loaded = RunBundle::load((d / "honest").string());
  const Challenge c3 = issue_challenge(newest_signed_head(loaded), "h", made_up(12), ChallengeRequest{2, {}, {}, 0, {}});
  loaded.put_and_save(Fixture::challenge_path(c3), c3.to_json().dump(2) + "\n");
  const RunEntry grown = judge_path((d / "honest").string());
  CHECK(grown.status == BoardStatus::kCertified);
  CHECK(grown.challenges.size() == 2);
  CHECK(grown.pending == 1);
  // Links inside a bundle directory make it unreadable.
  fs::create_symlink("/etc/passwd", d / "honest" / "reports" / "x.json");
  const RunEntry linked = judge_path((d / "honest").string());
  CHECK(linked.status == BoardStatus::kRejected);
  CHECK(linked.reason.find("symbolic link") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("board: text helpers", "[board]") {
  CHECK(html_escape("<a href=\"x\">'&'</a>") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  CHECK(number_text(0.1) == "0.1");
  CHECK(number_text(1.0 / 3) == "0.3333333333333333");
  CHECK(number_text(INFINITY) == "inf");
  CHECK(number_text(12345) == "12345");
  CHECK(number_text(200) == "200");  // not "2e+02"
  CHECK(run_bundle_name_ok("a-b_c.1"));
  CHECK_FALSE(run_bundle_name_ok(".hidden"));
  CHECK_FALSE(run_bundle_name_ok("a/b"));
  CHECK(run_bundle_member_allowed("reports/abc.json"));
  CHECK_FALSE(run_bundle_member_allowed("reports/../x.json"));
  CHECK_FALSE(run_bundle_member_allowed("other.json"));
}

namespace {

// The wit-board binary beside this test binary (BUILD/tests/.. /bin).
std::string tool_path(const std::string& tool) {
  return (fs::canonical("/proc/self/exe").parent_path().parent_path() / "bin" / tool).string();
}

// Runs `body` in `n` forked children at once, released together; returns how many exited 0.
int in_parallel(int n, const std::function<int(int)>& body) {
  int go[2];
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> kids;
  for (int i = 0; i < n; i++) {
    const pid_t p = ::fork();
    REQUIRE(p >= 0);
    if (p == 0) {
      ::close(go[1]);
      char c;
      [[maybe_unused]] ssize_t r = ::read(go[0], &c, 1);  // EOF when the parent closes: all start together
      ::_exit(body(i));
    }
    kids.push_back(p);
  }
  ::close(go[0]);
  ::close(go[1]);
  int ok = 0;
  for (pid_t p : kids) {
    int st = 0;
    ::waitpid(p, &st, 0);
    ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  return ok;
}

}  // namespace

TEST_CASE("board: concurrent challenges and adds on one bundle all land (the bundle lock)", "[board][lock]") {
  const Fixture& f = fixture();
  const fs::path d = temp_dir("lock");
  for (const bool archive : {false, true}) {
    RunBundle b = f.bundle();
    b.path = (d / (archive ? "mine.wbundle" : "mine")).string();
    b.archive = archive;
    b.save_new();
    // The library path: lock, load, put, save.
    const int n = 8;
    CHECK(in_parallel(n, [&](int i) {
            try {
              const FileLock lock = lock_run_bundle(b.path);
              RunBundle mine = RunBundle::load(b.path);
              const Challenge c = issue_challenge(newest_signed_head(mine), "h", made_up(500 + uint64_t(i)),
                                                  ChallengeRequest{2, {}, {}, 0, {}});
              mine.put_and_save(Fixture::challenge_path(c), c.to_json().dump(2) + "\n");
              return 0;
            } catch (...) {
              return 1;
            }
          }) == n);
    // The tool: wit-board challenge, many at once.
    const std::string tool = tool_path("wit-board");
    REQUIRE(fs::exists(tool));
    CHECK(in_parallel(n, [&](int i) {
            const int null = ::open("/dev/null", O_WRONLY);
            ::dup2(null, 1);
            ::dup2(null, 2);
            const std::string nonce = made_up(900 + uint64_t(i)).hex();
            ::execl(tool.c_str(), tool.c_str(), "challenge", b.path.c_str(), "--nonce", nonce.c_str(), "-k", "2",
                    (char*)nullptr);
            return 127;
          }) == n);
    const RunBundle after = RunBundle::load(b.path);
    CHECK(after.index_problem() == std::nullopt);
    CHECK(after.names_under(member::kChallenges).size() == size_t(1 + 2 * n));
    CHECK(judge(after).status == BoardStatus::kCertified);
    // An output that cannot be written (-o /dev/full) leaves the bundle as it was.
    const int refused = in_parallel(1, [&](int) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      const std::string nonce = made_up(4242).hex();
      ::execl(tool.c_str(), tool.c_str(), "challenge", b.path.c_str(), "--nonce", nonce.c_str(), "-k", "2", "-o",
              "/dev/full", (char*)nullptr);
      return 127;
    });
    CHECK(refused == 0);
    CHECK(RunBundle::load(b.path).files == after.files);
  }
  fs::remove_all(d);
}

TEST_CASE("board: a damaged bundle is repaired from its members", "[board][repair]") {
  const Fixture& f = fixture();
  const fs::path d = temp_dir("repair");
  RunBundle b = f.bundle();
  b.path = (d / "mine").string();
  b.save_new();
  RepairResult r = repair_run_bundle(b.path);
  CHECK(r.changes.empty());
  CHECK(!r.problem);
  // What a lost update leaves: a member on disk that bundle.json does not list,
  // and a killed writer's temporary.
  const Challenge c = issue_challenge(newest_signed_head(b), "h", made_up(77), ChallengeRequest{2, {}, {}, 0, {}});
  { std::ofstream(fs::path(b.path) / Fixture::challenge_path(c)) << c.to_json().dump(2) << "\n"; }
  const fs::path tmp = fs::path(b.path) / "reports" / "abc.json.tmp.Zx81Qa";
  fs::create_directories(tmp.parent_path());
  { std::ofstream(tmp) << "{"; }
  fs::last_write_time(tmp, fs::file_time_type::clock::now() - std::chrono::minutes(5));
  CHECK(RunBundle::load(b.path).index_problem());
  r = repair_run_bundle(b.path);
  CHECK(!r.problem);
  CHECK(r.changes.size() == 2);
  CHECK_FALSE(fs::exists(tmp));
  const RunBundle after = RunBundle::load(b.path);
  CHECK(!after.index_problem());
  CHECK(after.names_under(member::kChallenges).size() == 2);
  // A member no bundle may hold is not blessed by a repair.
  { std::ofstream(fs::path(b.path) / "other.json") << "{}"; }
  CHECK_THROWS_WITH(repair_run_bundle(b.path), Catch::Contains("which no run bundle may hold"));
  fs::remove(fs::path(b.path) / "other.json");
  // bundle.json lost: the name must be given.
  fs::remove(fs::path(b.path) / kRunBundleIndex);
  CHECK_THROWS_WITH(repair_run_bundle(b.path), Catch::Contains("gives no valid name"));
  r = repair_run_bundle(b.path, "mine");
  CHECK(!r.problem);
  CHECK(!RunBundle::load(b.path).index_problem());
  fs::remove_all(d);
}

TEST_CASE("board: a bundle's JSON members must be JSON before it is written", "[board]") {
  const Fixture& f = fixture();
  const fs::path d = temp_dir("syntax");
  RunBundle b = f.bundle();
  b.path = (d / "cut").string();
  std::string& cont = b.files[member::kContamination];
  cont.resize(cont.size() / 2);
  b.files[kRunBundleIndex] = b.index_json("cut");
  CHECK_THROWS_WITH(b.save_new(), Catch::Contains("member contamination.json is not a json object"));
  CHECK_FALSE(fs::exists(b.path));
  RunBundle h = f.bundle();
  h.files[member::kHeads] += "{\"size\": 3\n";
  h.path = (d / "heads").string();
  CHECK_THROWS_WITH(h.save_new(), Catch::Contains("heads.jsonl is not one json object per line"));
  fs::remove_all(d);
}

TEST_CASE("board: the released model is bound exactly; fresh-probe checks of a model behind an API are shown", "[board]") {
  init_crypto();
  const Fixture& f = fixture();
  const RunEntry honest = judge(f.bundle());
  CHECK(honest.model == ModelVerdict::kMatches);
  CHECK(honest.model_note == "exactly: parameters root " + made_up(300).hex());
  CHECK(honest.describe().find("released model: matches") != std::string::npos);
  // A file with other parameters: a well-formed "no match", the run stays certified.
  ReleaseBinding other = Fixture::binding();
  other.params_root = made_up(302);
  other.match = false;
  other.reason = "the parameters root joined with the optimizer root is not the final state root";
  RunEntry e = judge(variant(member::kModelBinding, other.to_json().dump()));
  CHECK(e.status == BoardStatus::kCertified);
  CHECK(e.model == ModelVerdict::kDiffers);
  CHECK(e.model_note == other.reason);
  // A binding to an earlier state (consistent in itself) is not the final model.
  ReleaseBinding early;
  early.step = 4;
  early.params_root = made_up(303);
  early.optim_root = made_up(304);
  early.state_root = join_state_root(early.params_root, early.optim_root);
  early.match = true;
  e = judge(variant(member::kModelBinding, early.to_json().dump()));
  CHECK(e.model == ModelVerdict::kDiffers);
  CHECK(e.model_note == "the binding is not to the run's final state");
  // A binding that claims a match its roots do not give is a forged member: the run is rejected.
  json forged = other.to_json();
  forged["match"] = true;
  forged["reason"] = "";
  CHECK(reason_of(variant(member::kModelBinding, forged.dump())).rfind("invalid model binding", 0) == 0);

  // Probe checks: one that matched, one that did not; neither rejects the run.
  auto check = [&](uint8_t nonce, double worst) {
    ProbeCheckReport r;
    r.run_id = f.run_id;
    r.nonce = made_up(400 + nonce);
    r.state_root = Fixture::final_root();
    r.step = Fixture::kSteps;
    r.records = 2;
    r.random = 1;
    r.noise = 1e-6;
    r.floor = 1e-3;
    r.margin = 10;
    r.tolerance = 1e-3;
    r.fraction = 0.05;
    r.worst = {1e-5, worst, 2e-5};
    r.model_cmd = "wit-sketch serve";
    return r;
  };
  RunBundle b = f.bundle("api");
  const ProbeCheckReport good = check(1, 3e-5), bad = check(2, 7.0);
  b.files["probe-checks/" + challenge_member_name(good.nonce) + ".json"] = good.to_json().dump(2) + "\n";
  b.files["probe-checks/" + challenge_member_name(bad.nonce) + ".json"] = bad.to_json().dump(2) + "\n";
  b.files[kRunBundleIndex] = b.index_json("api");
  e = judge(b);
  INFO(e.reason);
  CHECK(e.status == BoardStatus::kCertified);
  REQUIRE(e.probe_checks.size() == 2);
  size_t passed = 0;
  for (const auto& p : e.probe_checks) passed += p.pass;
  CHECK(passed == 1);
  CHECK(e.describe().find("model behind an API: 1 of 2 fresh-probe checks matched the final state") != std::string::npos);
  CHECK(e.to_json()["model"]["probe_checks"].size() == 2);
  // A probe check of another state, or under another name, is refused.
  ProbeCheckReport stale = check(3, 1e-5);
  stale.state_root = made_up(204);
  RunBundle s = f.bundle("stale");
  s.files["probe-checks/" + challenge_member_name(stale.nonce) + ".json"] = stale.to_json().dump(2) + "\n";
  s.files[kRunBundleIndex] = s.index_json("stale");
  CHECK(reason_of(s) == "probe-checks/" + challenge_member_name(stale.nonce) + ".json checks another state than the run's final one");
  RunBundle misnamed = f.bundle("misnamed");
  misnamed.files["probe-checks/0000000000000000.json"] = good.to_json().dump(2) + "\n";
  misnamed.files[kRunBundleIndex] = misnamed.index_json("misnamed");
  CHECK(reason_of(misnamed).find("is not named after its nonce") != std::string::npos);
}

// --- issue 23: the board checks evidence, never claims

TEST_CASE("board: unsigned reports are claims - a hand-written one neither certifies nor rejects", "[board][evidence]") {
  const Fixture& f = fixture();
  // The tampered-run attack: a hand-written "certified" report, no board report.
  RunBundle b = variant(report_member(), std::nullopt, "claims");
  const std::string unsigned_member = "reports/" + challenge_member_name(f.challenge.seed) + ".json";
  REQUIRE(b.has(unsigned_member));
  RunEntry e = judge(b);
  CHECK(e.status == BoardStatus::kPending);
  CHECK(e.survived == 0);
  CHECK(e.confidence == 0);
  // The honest-run attack: a hand-written "rejected" report rejects nothing.
  b.files[unsigned_member] = Fixture::report(f.challenge, false).dump(2);
  b.files[kRunBundleIndex] = b.index_json("claims");
  e = judge(b);
  CHECK(e.status == BoardStatus::kPending);
  CHECK(e.failed == 0);
  // ...and beside the board's certified report it changes nothing.
  b = variant(unsigned_member, Fixture::report(f.challenge, false).dump(2));
  CHECK(judge(b).status == BoardStatus::kCertified);
  // Without a board definition nothing is certified, whatever the bundle holds.
  e = evaluate_run_bundle(f.bundle());
  CHECK(e.status == BoardStatus::kPending);
  CHECK(e.reason.rfind("not on a defined board", 0) == 0);
}

TEST_CASE("board: a board report with a forged signature is the folder's error, never a verdict", "[board][evidence]") {
  const Fixture& f = fixture();
  const SecretKey other = generate_key();
  CHECK_THAT(folder_error_of(variant(report_member(), f.board_report(f.challenge, Fixture::report(f.challenge), &other))),
             Catch::StartsWith(report_member() + " is signed by another key than the board's"));
  // The board's own report with its verdict edited afterwards (to reject an honest run, or certify a forged one).
  json doc = json::parse(f.board_report(f.challenge, Fixture::report(f.challenge, false)));
  doc["report"] = Fixture::report(f.challenge);
  CHECK_THAT(folder_error_of(variant(report_member(), doc.dump(2))),
             Catch::StartsWith(report_member() + " has a bad signature (not the board key's)"));
  doc = json::parse(f.board_report(f.challenge, Fixture::report(f.challenge)));
  doc["report"] = Fixture::report(f.challenge, false);
  CHECK_THAT(folder_error_of(variant(report_member(), doc.dump(2))), Catch::Contains("has a bad signature"));
  // Its key field swapped for another key's, signature kept.
  doc = json::parse(f.board_report(f.challenge, Fixture::report(f.challenge)));
  doc["board_key"] = other.pub().hex();
  CHECK_THAT(folder_error_of(variant(report_member(), doc.dump(2))),
             Catch::StartsWith(report_member() + " is signed by another key than the board's"));
  // A signed report moved to another challenge's name.
  doc = json::parse(f.board_report(f.challenge, Fixture::report(f.challenge)));
  BoardReport br = BoardReport::from_json(doc, "x");
  CHECK(!br.problem(f.board_key.pub()));
  br.challenge = "0000000000000000";
  CHECK(br.problem(f.board_key.pub()) == std::optional<std::string>("has a bad signature (not the board key's)"));
}

TEST_CASE("board: only board-drawn challenges count - a nonce not derived from the board key", "[board][evidence]") {
  const Fixture& f = fixture();
  // The derivation: deterministic (the board cannot grind), checkable with the public key.
  const BoardDraw again = BoardDraw::make(f.board_key, f.run_id, f.heads.back(), 0, 1);
  CHECK(again.signature == f.draw.signature);
  CHECK(again.nonce == f.challenge.nonce);
  CHECK(!f.draw.problem(f.board_key.pub()));
  CHECK(BoardDraw::make(f.board_key, f.run_id, f.heads.back(), 1, 1).nonce != f.draw.nonce);  // the number counts
  const SecretKey other = generate_key();
  const std::string draw_member = "draws/" + challenge_member_name(f.challenge.seed) + ".json";
  // A draw by another key (the trainer's own "board").
  const BoardDraw forged = BoardDraw::make(other, f.run_id, f.heads.back(), 0, 1);
  CHECK_THAT(folder_error_of(variant(draw_member, forged.to_json().dump(2))),
             Catch::StartsWith(draw_member + " is drawn by another key than the board's"));
  // The board key named, but the signature someone else's.
  json dj = forged.to_json();
  dj["board_key"] = f.board_key.pub().hex();
  CHECK_THAT(folder_error_of(variant(draw_member, dj.dump(2))),
             Catch::StartsWith(draw_member + " has a bad signature (not the board key's)"));
  // A real draw whose nonce is not the challenge's (a ground nonce dressed as a board draw).
  const Challenge ground = issue_challenge(f.heads.back(), "h", made_up(31), ChallengeRequest{3, {}, {}, 0, {}});
  RunBundle b = f.bundle("ground");
  for (const std::string dir : {"challenges/", "draws/", "board-reports/", "reports/"})
    b.files.erase(dir + challenge_member_name(f.challenge.seed) + ".json");
  b.files[Fixture::challenge_path(ground)] = ground.to_json().dump(2) + "\n";
  b.files["draws/" + challenge_member_name(ground.seed) + ".json"] = f.draw.to_json().dump(2) + "\n";
  b.files[kRunBundleIndex] = b.index_json("ground");
  CHECK(reason_of(b) == Fixture::challenge_path(ground) + ": its nonce is not the one the board's draw derives");
  // Without a draw it is a caller's challenge: its certified board report adds nothing to the confidence.
  b.files.erase("draws/" + challenge_member_name(ground.seed) + ".json");
  b.files[Fixture::board_report_path(ground)] = f.board_report(ground, Fixture::report(ground));
  b.files[kRunBundleIndex] = b.index_json("ground");
  RunEntry e = judge(b);
  CHECK(e.status == BoardStatus::kPending);
  CHECK(e.survived == 1);
  CHECK(e.confidence == 0);
  CHECK(e.challenges[0].drawn_by == "caller");
  CHECK(e.reason == "no board challenge drawn yet");
  // ...but its failure, backed by the board's report, rejects.
  b.files[Fixture::board_report_path(ground)] = f.board_report(ground, Fixture::report(ground, false));
  b.files[kRunBundleIndex] = b.index_json("ground");
  CHECK(reason_of(b).find("the board replayed the response and rejected the run") != std::string::npos);
  // The board's numbers have no gap.
  const BoardDraw second = BoardDraw::make(f.board_key, f.run_id, f.heads.back(), 2, 1);
  const Challenge c2 = issue_challenge(f.heads.back(), "h", second.nonce, ChallengeRequest{2, {}, {}, 0, {}});
  b = f.bundle("gap");
  b.files[Fixture::challenge_path(c2)] = c2.to_json().dump(2) + "\n";
  b.files["draws/" + challenge_member_name(c2.seed) + ".json"] = second.to_json().dump(2) + "\n";
  b.files[kRunBundleIndex] = b.index_json("gap");
  CHECK(reason_of(b) == "the board's draws skip challenge number 1");
}

TEST_CASE("board: a run evaluated on another eval set than the benchmark is rejected", "[board][evidence]") {
  const Fixture& f = fixture();
  BoardDefinition other = f.def;
  other.benchmark.root = made_up(77);
  const RunEntry e = evaluate_run_bundle(f.bundle(), 0.05, &other);
  CHECK(e.status == BoardStatus::kRejected);
  CHECK(e.reason.rfind("the run is evaluated on another eval set", 0) == 0);
  CHECK(e.reason.find("than board test-board's benchmark") != std::string::npos);
}

// Issue 37 item 5: on a board a bundle needs only what the board checks
// itself; the trainer's own evaluation is optional and checked when present.
TEST_CASE("board: the trainer's eval files are optional on a board - checked when present", "[board][evidence]") {
  const Fixture& f = fixture();
  auto without = [&](std::initializer_list<std::string> gone) {
    RunBundle b = f.bundle("lean");
    for (const auto& m : gone) b.files.erase(m);
    for (const auto& m : b.names_under(member::kEvalChecks)) b.files.erase(std::string(member::kEvalChecks) + m + ".json");
    b.files[kRunBundleIndex] = b.index_json("lean");
    return b;
  };
  // The run, its data commitment, the board's reports and evaluation: certified
  // with the board's own score, on a board with a sealed split.
  BoardDefinition sealed = f.def;
  sealed.sealed = SealedCommit{0, 1, made_up(5)};
  const RunBundle lean = without({member::kEvalCommit, member::kEval, member::kEvalScores, member::kContamination});
  CHECK_FALSE(lean.index_problem());
  RunEntry e = evaluate_run_bundle(lean, 0.05, &sealed);
  CHECK(e.status == BoardStatus::kCertified);
  CHECK(e.eval_by == "board");
  CHECK_FALSE(e.clean.has_value());
  // On a board without a sealed split the ranked score is on published
  // records: the contamination certificate is needed (pending without it).
  e = judge(lean);
  CHECK(e.status == BoardStatus::kPending);
  CHECK(e.reason == *contamination_problem(f.def, false));
  CHECK(e.reason.find("has no sealed split") != std::string::npos);
  // The certificate alone is checked against the eval set's commitment: its
  // proved records must be exactly the benchmark's (no per-example scores needed).
  const RunBundle with_cert = without({member::kEval, member::kEvalScores});
  e = judge(with_cert);
  CHECK(e.status == BoardStatus::kCertified);
  REQUIRE(e.clean.has_value());
  CHECK(*e.clean);
  // ... and, without eval.commit.json, against the board's benchmark.
  CHECK(judge(without({member::kEval, member::kEvalScores, member::kEvalCommit})).status == BoardStatus::kCertified);
  RunBundle other = without({member::kEval, member::kEvalScores, member::kEvalCommit});
  other.files[member::kContamination] = f.dirty_cert.dump(2);
  other.files[kRunBundleIndex] = other.index_json("lean");
  CHECK(reason_of(other).rfind("contamination certificate does not cover the eval set: its ", 0) == 0);
  // The trainer's eval comes whole: the eval with its set and its scores.
  CHECK(reason_of(without({member::kEvalScores})) == "eval.json without eval.scores.json (its per-example scores)");
  CHECK(reason_of(without({member::kEvalCommit})) == "eval.json without eval.commit.json (its eval set)");
  CHECK(reason_of(without({member::kEval})) == "eval.scores.json without eval.json (the scores of which evaluation?)");
  // What is there is still checked: an eval set that is not the benchmark rejects.
  RunBundle off = without({member::kEval, member::kEvalScores, member::kContamination});
  off.files[member::kEvalCommit] = f.dirty_commit;
  off.files[kRunBundleIndex] = off.index_json("lean");
  CHECK(reason_of(off).rfind("the run is evaluated on another eval set", 0) == 0);
  // Without a board, a lean bundle is judged too (pending: nothing is certified without a board).
  e = evaluate_run_bundle(lean);
  CHECK(e.status == BoardStatus::kPending);
  CHECK_FALSE(e.eval_known);
}

TEST_CASE("board: the board's confidence policy - pending below it, certified at it", "[board][evidence]") {
  const Fixture& f = fixture();
  BoardDefinition strict = f.def;
  strict.policy.confidence = 0.99;
  const RunEntry e = evaluate_run_bundle(f.bundle(), 0.05, &strict);
  CHECK(e.status == BoardStatus::kPending);
  CHECK(e.reason.find("is below the board's 99.00%; the board draws more challenges") != std::string::npos);
  CHECK(badge_text(e) == "pending");
  CHECK(strict.draw_k(8) == 8);  // 99% against 1 bad step of 8 needs every step
  strict.policy.k = 3;
  CHECK(strict.draw_k(8) == 3);
}

TEST_CASE("board: a damaged bundle with an intact one's name does not knock it off", "[board]") {
  const Fixture& f = fixture();
  RunEntry intact = judge(f.bundle("same")), damaged = judge_path("/nonexistent/same.wbundle");
  intact.source = "z-intact";
  damaged.source = "a-damaged";
  const std::vector<RunEntry> runs = order_board({damaged, intact});
  CHECK(runs[0].name == "same");
  CHECK(runs[0].status == BoardStatus::kCertified);
  CHECK(runs[1].name == "same-2");
  CHECK(runs[1].status == BoardStatus::kRejected);
}

TEST_CASE("board: the evidence store - outside the folder, by digest, nothing unexpected left unnamed", "[board][definition]") {
  const fs::path d = temp_dir("store");
  BoardInit in = board_init_in(d, "b1");
  in.store = (d / "board" / "store").string();
  CHECK_THROWS_WITH(init_board(in), Catch::Contains("evidence store must be kept outside the board folder"));
  CHECK_FALSE(fs::exists(d / "board"));
  in.store = "";  // the default: DIR's sibling DIR.store, recorded relative to DIR
  in.dir += "/";  // "board/" is "board"
  const BoardDefinition def = init_board(in);
  CHECK(def.store == "../board.store");
  CHECK(fs::is_directory(d / "board.store"));
  CHECK(fs::equivalent(board_store(in.dir, def), d / "board.store"));
  CHECK(board_store(in.dir, def, "/elsewhere") == "/elsewhere");
  BoardDefinition old = def;
  old.store.clear();  // a board defined before the store keeps its bytes in DIR
  CHECK(board_store(in.dir, old) == in.dir);
  CHECK(unexpected_board_files(in.dir, def).empty());

  // Staged in a temporary tree of the store; kept once per digest; wrong bytes under a digest's name are replaced.
  write_file_atomic((d / "w.bin").string(), "weights");
  const std::string digest = file_digest((d / "w.bin").string());
  const std::string to = (d / "board.store" / board_path::kWeights / (digest + ".safetensors")).string();
  {
    StagedFile s((d / "board.store").string(), board_path::kWeights, (d / "w.bin").string());
    CHECK(s.path().find("/weights/.incoming.tmp.") != std::string::npos);
    s.keep(to, digest);
  }
  CHECK(read_file(to) == "weights");
  write_file_atomic(to, "forged");  // a store serving other bytes under the name
  {
    StagedFile s((d / "board.store").string(), board_path::kWeights, (d / "w.bin").string());
    s.keep(to, digest);
  }
  CHECK(read_file(to) == "weights");
  { StagedFile dropped((d / "board.store").string(), board_path::kWeights, (d / "w.bin").string()); }
  for (const auto& x : fs::directory_iterator(d / "board.store" / board_path::kWeights))
    CHECK(x.path().filename().string().rfind(".incoming", 0) != 0);

  // Stale temporaries of gone processes are removed; live ones' stay. Unexpected files are named.
  fs::create_directories(d / "board.store" / board_path::kResponses / ".incoming.tmp.999999999.AbCdEf");
  fs::create_directories(d / "board" / board_path::kResponses);
  write_file_atomic((d / "board" / board_path::kResponses / ".incoming-999999999").string(), "x");
  write_file_atomic((d / "board" / "NOTES.txt").string(), "x");
  write_file_atomic((d / "board" / board_path::kRuns / "stray.json").string(), "x");
  CHECK(unexpected_board_files(in.dir, def) ==
        std::vector<std::string>{"NOTES.txt", "responses/.incoming-999999999", "runs/stray.json"});
  StagedFile live((d / "board.store").string(), board_path::kLeaves, (d / "w.bin").string());
  // In the store: what is not SUB/DIGEST.EXT is named (here the temporaries, live and stale).
  CHECK(unexpected_store_files((d / "board.store").string()).size() == 2);
  CHECK(remove_stale_board_temporaries(in.dir, (d / "board.store").string()).size() == 2);
  CHECK(fs::exists(live.path()));
  CHECK_FALSE(fs::exists(d / "board" / board_path::kResponses / ".incoming-999999999"));
  CHECK_FALSE(fs::exists(d / "board.store" / board_path::kResponses / ".incoming.tmp.999999999.AbCdEf"));
  CHECK(unexpected_store_files((d / "board.store").string()).size() == 1);  // the live one
  // Evidence by digest in the folder is expected only on a board whose store is the folder.
  fs::create_directories(d / "board" / board_path::kWeights);
  write_file_atomic(in.dir + "/" + board_path::kWeights + digest + ".safetensors", "weights");
  CHECK(unexpected_board_files(in.dir, old).size() == 2);  // NOTES.txt, runs/stray.json
  CHECK(unexpected_board_files(in.dir, def).size() == 3);  // and the weights: not this board's place for them
  fs::remove_all(d);
}

TEST_CASE("board: the definition - init keeps the benchmark and the key apart, load checks digests", "[board][definition]") {
  const Fixture& f = fixture();
  const fs::path d = temp_dir("def");
  ReaderSpec spec;
  spec.kind = ReaderKind::kLines;
  write_file_atomic((d / "eval.commit.json").string(), commit_dataset(spec, {(f.dir / "eval.txt").string()}, 1).commitment.dump());
  BoardInit in;
  in.dir = (d / "board").string();
  in.name = "b1";
  in.key_path = (d / "board" / "key").string();
  in.commit_path = (d / "eval.commit.json").string();
  in.record_files = {(f.dir / "eval.txt").string()};
  CHECK_THROWS_WITH(init_board(in), Catch::Contains("outside the board folder"));
  in.key_path = (d / "board.key").string();
  in.record_files = {(f.dir / "dirty.txt").string()};  // not the commitment's records
  CHECK_THROWS_AS(init_board(in), Error);
  CHECK_FALSE(fs::exists(d / "board" / board_path::kDefinition));
  in.record_files = {(f.dir / "eval.txt").string()};
  const BoardDefinition made = init_board(in);
  CHECK(fs::exists(d / "board.key"));
  const BoardDefinition loaded = BoardDefinition::load(in.dir);
  CHECK(loaded.dump() == made.dump());
  CHECK(loaded.key == load_key((d / "board.key").string()).pub());
  CHECK(loaded.benchmark.root == f.def.benchmark.root);
  CHECK(is_board_dir(in.dir));
  CHECK(board_of_bundle(in.dir + "/runs/x") == in.dir);
  CHECK(board_of_bundle((d / "x").string()).empty());
  CHECK_THROWS_WITH(init_board(in), Catch::Contains("exists and is not empty"));
  // An edited benchmark commitment is refused when the board is loaded.
  write_file_atomic(in.dir + "/" + board_path::kBenchmarkCommit, read_file(in.commit_path) + " ");
  CHECK_THROWS_WITH(BoardDefinition::load(in.dir), Catch::Contains("does not match its digest"));
  fs::remove_all(d);
}

TEST_CASE("board: the board scores the released weights itself - its signed evaluation", "[board][evidence]") {
  const Fixture& f = fixture();
  // Without the board's evaluation a run is not certified on a board.
  RunEntry e = judge(variant(member::kBoardEval, std::nullopt));
  CHECK(e.status == BoardStatus::kPending);
  CHECK(e.reason.rfind("the board has not scored the released weights on its benchmark yet", 0) == 0);
  CHECK(e.eval_by == "trainer");
  e = judge(f.bundle());
  CHECK(e.eval_by == "board");
  CHECK(e.weights_digest == made_up(601).hex());
  // Signed by another key, or edited after signing.
  const SecretKey other = generate_key();
  CHECK_THAT(folder_error_of(variant(member::kBoardEval, f.board_eval(f.eval.to_json(), &other))),
             Catch::StartsWith(std::string(member::kBoardEval) + " is signed by another key than the board's"));
  json doc = json::parse(f.board_eval(f.eval.to_json()));
  doc["eval"]["loss"] = 0.0001;
  CHECK_THAT(folder_error_of(variant(member::kBoardEval, doc.dump(2))),
             Catch::StartsWith(std::string(member::kBoardEval) + " has a bad signature (not the board key's)"));
  // The board's evaluation of another state than the final one.
  EvalScores s = f.scores;
  const EvalCommitment early = commit_scores(f.run_id, 4, made_up(204), f.eval.eval_root, s);
  CHECK(reason_of(variant(member::kBoardEval, f.board_eval(early.to_json()))) ==
        std::string(member::kBoardEval) + " evaluates another state than the run's final one");
}

TEST_CASE("board: the training tree must be audited sorted - an unsorted tree is rejected", "[board][evidence]") {
  const Fixture& f = fixture();
  // A version-3 (ranged) data commitment needs no audit of its tree: its
  // certificate's exclusions stand alone (docs/proofs.md). Only a version-2
  // commitment's run waits for the board's audit (board.cpp, judge).
  RunEntry e = judge(variant(member::kBoardLeaves, std::nullopt));
  CHECK(e.tree_ranged);
  CHECK_FALSE(e.leaves_audited);
  CHECK(e.reason.find("not audited") == std::string::npos);
  CHECK(e.status == judge(f.bundle()).status);
  CHECK(judge(f.bundle()).leaves_audited);
  // Signed by another key; of another tree; a failed audit.
  const SecretKey other = generate_key();
  CHECK_THAT(folder_error_of(variant(member::kBoardLeaves, f.board_leaves_doc(f.data_n, f.data_root, "", &other))),
             Catch::StartsWith(std::string(member::kBoardLeaves) + " is signed by another key than the board's"));
  CHECK(reason_of(variant(member::kBoardLeaves, f.board_leaves_doc(f.data_n, made_up(3), ""))) ==
        std::string(member::kBoardLeaves) + " audits another tree than the run's data commitment");
  CHECK(reason_of(variant(member::kBoardLeaves, f.board_leaves_doc(f.data_n, f.data_root, "leaf 2 is not above leaf 1"))) ==
        "the board's audit of the training tree failed: leaf 2 is not above leaf 1");

  // For real (attack 19 on the board): a board, the run on it, and the tree's leaves out of order.
  const fs::path d = temp_dir("leaves");
  const BoardInit in = board_init_in(d, "b");
  const BoardDefinition def = init_board(in);
  const SecretKey key = load_key(in.key_path);
  RunBundle b = f.bundle("run");
  // The fixture's board documents are another board's: only this board's count here.
  for (auto it = b.files.begin(); it != b.files.end();)
    it = it->first.rfind("draws/", 0) == 0 || it->first.rfind("board-reports/", 0) == 0 || it->first == member::kBoardEval ||
                 it->first == member::kBoardLeaves
             ? b.files.erase(it)
             : std::next(it);
  b.files[kRunBundleIndex] = b.index_json("run");
  b.path = in.dir + "/runs/run";
  b.save_new();
  auto leaves_file = [&](const std::vector<Hash32>& leaves, const Hash32& root, const std::string& name) {
    std::string bytes;
    const Bytes h = encode_leaves_header(LeavesHeader{uint64_t(leaves.size()), root});
    bytes.assign(h.begin(), h.end());
    for (const auto& l : leaves) bytes.append(reinterpret_cast<const char*>(l.data()), 32);
    write_file_atomic((d / name).string(), bytes, true);
    return (d / name).string();
  };
  // Another commitment's leaves: a usage error, nothing filed.
  std::vector<Hash32> sorted = f.data_leaves;
  CHECK_THROWS_WITH(board_leaves(b.path, leaves_file(sorted, made_up(9), "other.wleaves"), key, 1),
                    Catch::Contains("of another commitment"));
  CHECK_FALSE(RunBundle::load(b.path).has(member::kBoardLeaves));
  // The wrong key.
  CHECK_THROWS_WITH(board_leaves(b.path, leaves_file(sorted, f.data_root, "sorted.wleaves"), other, 1),
                    Catch::Contains("not the board's"));
  // Two leaves swapped: the header claims the commitment, the order is wrong: filed as refused.
  std::vector<Hash32> unsorted = sorted;
  std::swap(unsorted[3], unsorted[4]);
  const BoardLeavesResult r = board_leaves(b.path, leaves_file(unsorted, f.data_root, "unsorted.wleaves"), key, 1);
  CHECK_FALSE(r.doc.refused.empty());
  CHECK(fs::exists(r.stored));
  const RunEntry judged = evaluate_bundle_path(b.path, 0.05, &def);
  CHECK(judged.status == BoardStatus::kRejected);
  CHECK_THAT(judged.reason, Catch::StartsWith("the board's audit of the training tree failed"));
  const BoardLeaves stored = BoardLeaves::from_json(json::parse(RunBundle::load(b.path).get(member::kBoardLeaves)), "x");
  CHECK(!stored.problem(def.key));
  CHECK(stored.refused == r.doc.refused);
  CHECK_THROWS_WITH(board_leaves(b.path, leaves_file(sorted, f.data_root, "sorted2.wleaves"), key, 1),
                    Catch::Contains("already audited"));
  fs::remove_all(d);
}

// Issue 37: on a board with an evidence store the log goes to the store and
// log.stored.json stays in the folder (docs/board.md, "The evidence store").
TEST_CASE("board: a stored log is judged as no log, and audit re-derives its document from the stored bytes", "[board][store]") {
  init_crypto();
  const Fixture& f = fixture();
  const std::string log = f.files.at(member::kLog);
  const StoredLog doc = derive_stored_log(f.bundle("v"), log);
  CHECK(doc.entries == 9);
  CHECK(doc.size == log.size());
  CHECK(doc.digest == member_digest(log));
  CHECK(doc.path() == "logs/" + doc.digest + ".wlog");
  REQUIRE(doc.curve.size() == 8);
  CHECK(doc.curve[0] == std::make_pair(int64_t(1), double(5.5f - 0.25f)));
  CHECK(StoredLog::from_json(json::parse(doc.dump()), "d").dump() == doc.dump());

  // The bundle as submit leaves it: the same verdict as with run.wlog, the same curve, the store never read.
  RunBundle stored = f.bundle("v");
  stored.files.erase(member::kLog);
  stored.files[member::kStoredLog] = doc.dump();
  stored.files[kRunBundleIndex] = stored.index_json("v");
  const RunEntry with_log = judge(f.bundle("v")), in_store = judge(stored);
  CHECK(in_store.status == with_log.status);
  CHECK(in_store.reason == with_log.reason);
  CHECK(in_store.confidence == with_log.confidence);
  CHECK(in_store.loss_curve == with_log.loss_curve);
  CHECK(in_store.log_stored == doc.path());
  // A log that fails check 4 is not stored: submit keeps it in the folder for build to reject.
  std::string bad = log;
  bad[8] ^= 1;
  CHECK_THROWS_AS(derive_stored_log(f.bundle("v"), bad), Error);
  // A document the board could not have written is the folder's error, never a verdict on the run.
  json edited = json::parse(doc.dump());
  edited["entries"] = 5;
  RunBundle wrong = stored;
  wrong.files[member::kStoredLog] = edited.dump();
  wrong.files[kRunBundleIndex] = wrong.index_json("v");
  CHECK(folder_error_of(wrong).find("log.stored.json: invalid stored log: the curve is not 4 steps") != std::string::npos);

  TempDir t("wit-test-logstore");
  const std::string store = t.path();
  fs::create_directories(fs::path(store) / "logs");
  write_file_atomic(store + "/" + doc.path(), log);
  const std::string where = "runs/v/log.stored.json";
  CHECK_NOTHROW(audit_stored_log(stored, store, {}, where));
  // audit's words on `b`'s document when it does not reproduce (a verdict on the document, never the store's fault).
  auto does_not_reproduce = [&](const RunBundle& b) -> std::string {
    try {
      audit_stored_log(b, store, {}, where);
    } catch (const NotReVerifiable& x) {
      FAIL("read as the store's fault: " << x.what());
    } catch (const Error& x) {
      return x.what();
    }
    return "it passed";
  };
  SECTION("an edited curve does not reproduce (a verdict on the document, not the store's fault)") {
    json j = json::parse(doc.dump());
    j["curve"]["mean_loss"][3] = 1.0;
    RunBundle b = stored;
    b.files[member::kStoredLog] = j.dump(2) + "\n";
    CHECK(does_not_reproduce(b).find("its loss curve is not the stored log's (step 4: 1.0 in the document") != std::string::npos);
  }
  SECTION("a stored log with other bytes is not re-verifiable") {
    write_file_atomic(store + "/" + doc.path(), bad);
    CHECK_THROWS_AS(audit_stored_log(stored, store, {}, where), NotReVerifiable);
  }
  SECTION("a pruned log is not re-verifiable, saying when") {
    fs::remove(store + "/" + doc.path());
    try {
      audit_stored_log(stored, store, {{doc.path(), "pruned from the store on X (runs v)"}}, where);
      FAIL("a missing log passed");
    } catch (const NotReVerifiable& x) {
      CHECK(std::string(x.what()).find("its log " + doc.path() + " is not in the store") != std::string::npos);
      CHECK(std::string(x.what()).find("pruned from the store on X") != std::string::npos);
    }
  }
  SECTION("another log of the same length under a digest the document names is not the run's") {
    // The forger edits the document to name bytes it stored itself: check 4 on them fails.
    StoredLog other = doc;
    other.digest = member_digest(bad);
    write_file_atomic(store + "/" + other.path(), bad);
    RunBundle b = stored;
    b.files[member::kStoredLog] = other.dump();
    CHECK(does_not_reproduce(b).find("is not the run's signed log") != std::string::npos);
  }
}

TEST_CASE("board: a stored log's curve keeps at most 1000 steps, the first and the last", "[board][store]") {
  CHECK(curve_steps(0).empty());
  CHECK(curve_steps(3) == std::vector<int64_t>{1, 2, 3});
  CHECK(curve_steps(1000).size() == 1000);
  const std::vector<int64_t> s = curve_steps(10000);
  REQUIRE(s.size() == kStoredLogCurvePoints);
  CHECK(s.front() == 1);
  CHECK(s.back() == 10000);
  CHECK(std::adjacent_find(s.begin(), s.end(), [](int64_t a, int64_t b) { return b <= a; }) == s.end());
  CHECK(curve_steps(1001).back() == 1001);
}

TEST_CASE("board: a stored log's curve keeps a loss that is not finite (null in JSON)", "[board][store]") {
  StoredLog d;
  d.digest = std::string(64, 'a');
  d.size = 100;
  d.entries = 3;
  d.curve = {{1, 5.5}, {2, std::numeric_limits<double>::infinity()}};
  const json j = json::parse(d.dump());
  CHECK(j["curve"]["mean_loss"][1].is_null());
  const StoredLog back = StoredLog::from_json(j, "d");
  CHECK(std::isnan(back.curve[1].second));
  CHECK(back.dump() == d.dump());
  json bad = j;
  bad["curve"]["mean_loss"][1] = "inf";
  CHECK_THROWS_AS(StoredLog::from_json(bad, "d"), Error);
}

TEST_CASE("board: a response stored in parts - the report names each, prune keeps a part a kept run names", "[board][store]") {
  init_crypto();
  const Fixture& f = fixture();
  const fs::path d = temp_dir("parts");
  const BoardInit in = board_init_in(d, "b");
  const BoardDefinition def = init_board(in);
  const SecretKey key = load_key(in.key_path);
  const std::string store = board_store(in.dir, def);
  // Stored files by digest: a state both runs' responses hold, one only run a's, each run's small bundle.
  auto stored = [&](const char* sub, const std::string& bytes, const std::string& ext) {
    const std::string digest = member_digest(bytes);
    fs::create_directories(fs::path(store) / sub);
    write_file_atomic((fs::path(store) / sub / (digest + ext)).string(), bytes, true);
    return digest;
  };
  const std::string shared = stored(board_path::kStates, "shared state", ".safetensors");
  const std::string own = stored(board_path::kStates, "run a's own state", ".safetensors");
  auto report = [&](const std::string& resp, const std::vector<std::pair<std::string, std::string>>& parts) {
    BoardReport br;
    br.challenge = "c0";
    br.response_digest = stored(board_path::kResponses, resp, ".wbundle");
    br.response_bytes = resp.size();
    for (const auto& [name, digest] : parts) br.parts.push_back({name, digest, 12});
    br.report = Fixture::report(f.challenge);
    br.sign_with(key);
    return br;
  };
  const BoardReport ra = report("a's small bundle", {{"state/00000001.safetensors", shared}, {"state/00000005.safetensors", own}});
  const BoardReport rb = report("b's small bundle", {{"state/00000001.safetensors", shared}});

  // The report: `parts` beside `response`, round-tripped; a report without parts keeps its old bytes.
  const json j = json::parse(ra.to_json().dump());  // as read from the folder
  REQUIRE(j.contains("parts"));
  CHECK(j["parts"][0] == json({{"name", "state/00000001.safetensors"}, {"path", "states/" + shared + ".safetensors"},
                               {"digest", shared}, {"bytes", 12}}));
  CHECK(BoardReport::from_json(j, "r").to_json() == j);
  CHECK(BoardReport::from_json(j, "r").problem(key.pub()) == std::nullopt);
  BoardReport whole = ra;
  whole.parts.clear();
  CHECK_FALSE(whole.to_json().contains("parts"));
  CHECK(ResponsePart{"model.pt", shared, 1}.path() == "weights/" + shared + ".pt");  // the evaluated module's path
  // What the board cannot have written is refused: another member, another path, out of order, empty.
  auto refused = [&](json edited, const std::string& why) {
    CHECK_THROWS_WITH(BoardReport::from_json(edited, "r"), Catch::Contains(why));
  };
  json e = j;
  e["parts"][0]["name"] = "manifest.json";
  refused(e, "is not a state/ member or model.pt");
  e = j;
  e["parts"][0]["name"] = "state/../x";
  refused(e, "is not a state/ member or model.pt");
  e = j;
  e["parts"][0]["path"] = "responses/" + shared + ".wbundle";
  refused(e, "'s path is not states/");
  e = j;
  std::swap(e["parts"][0], e["parts"][1]);
  refused(e, "not in strictly increasing name order");
  e = j;
  e["parts"] = json::array();
  refused(e, "is not a non-empty array");
  e = j;
  e["parts"][0]["digest"] = own;  // a signed field: the signature no longer holds
  e["parts"][0]["path"] = "states/" + own + ".safetensors";
  CHECK(BoardReport::from_json(e, "r").problem(key.pub()) != std::nullopt);

  // The store's listing expects states/DIGEST.safetensors and names anything else there.
  CHECK(unexpected_store_files(store).empty());
  write_file_atomic((fs::path(store) / board_path::kStates / "stray").string(), "x");
  CHECK(unexpected_store_files(store) == std::vector<std::string>{"states/stray"});
  fs::remove(fs::path(store) / board_path::kStates / "stray");

  // Two runs on the board, each with its report; pruning run a drops its own state and its bundle, never the shared state.
  for (const auto& [name, br] : {std::make_pair(std::string("a"), ra), std::make_pair(std::string("b"), rb)}) {
    RunBundle b = f.bundle(name);
    for (auto it = b.files.begin(); it != b.files.end();)
      it = it->first.rfind("board-reports/", 0) == 0 ? b.files.erase(it) : std::next(it);
    b.files["board-reports/c0.json"] = br.to_json().dump(2) + "\n";
    b.files[kRunBundleIndex] = b.index_json(name);
    b.path = in.dir + "/runs/" + name;
    b.save_new();
  }
  const PruneResult p = prune_board(in.dir, "", {"a"}, 0, 1000);
  std::vector<std::string> dropped = p.pruned;
  std::sort(dropped.begin(), dropped.end());
  CHECK(std::count(dropped.begin(), dropped.end(), "states/" + own + ".safetensors") == 1);
  CHECK(std::count(dropped.begin(), dropped.end(), ra.response_path()) == 1);
  CHECK(std::count(dropped.begin(), dropped.end(), "states/" + shared + ".safetensors") == 0);
  CHECK(fs::exists(fs::path(store) / ("states/" + shared + ".safetensors")));
  CHECK_FALSE(fs::exists(fs::path(store) / ("states/" + own + ".safetensors")));
  CHECK(fs::exists(fs::path(store) / rb.response_path()));
  // Both runs at once: no kept run names the shared state any more, so it goes.
  const PruneResult q = prune_board(in.dir, "", {"a", "b"}, 0, 2000);
  CHECK(std::count(q.pruned.begin(), q.pruned.end(), "states/" + shared + ".safetensors") == 1);
  CHECK_FALSE(fs::exists(fs::path(store) / ("states/" + shared + ".safetensors")));
  fs::remove_all(d);
}
