// wit-board: define a board, pack a run's evidence into a run bundle and put
// it on the board, draw challenges with the board key (or take anyone's),
// judge bundles and build the static leaderboard. `add` and `audit` replay
// responses: they are run by wit-board-check (LibTorch), so this tool never
// links it. Rules: docs/board.md; bundles: docs/run-bundle.md.
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "wit/board.h"
#include "wit/bundle.h"
#include "wit/board_def.h"
#include "wit/challenge.h"
#include "wit/cli.h"
#include "wit/error.h"
#include "wit/io.h"
#include "wit/run_bundle.h"
#include "wit/wlog.h"

namespace fs = std::filesystem;

namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void check_fraction(double f) {
  if (!(f > 0 && f <= 1)) throw wit::Error("--fraction must be in (0, 1]", std::to_string(f));
}

// A bundle given to challenge or add must be whole: its index checks out.
wit::RunBundle load_whole(const std::string& path) {
  if (!exists(path)) throw wit::Error("no such bundle", path);
  wit::RunBundle b = wit::RunBundle::load(path);
  b.require_whole(path);
  return b;
}

std::string member_path(const wit::RunBundle& b, const std::string& name) {
  return b.archive ? b.path + ":" + name : (fs::path(b.path) / name).string();
}

// The bundles named by the arguments: a directory with bundle.json is a
// bundle, any other directory a folder of bundles (its subdirectories and
// *.wbundle files), a file a .wbundle.
std::vector<std::string> expand_bundles(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (!exists(a)) throw wit::Error("no such bundle or folder", a);
    if (!is_dir(a) || exists((fs::path(a) / wit::kRunBundleIndex).string())) {
      out.push_back(a);
      continue;
    }
    std::vector<std::string> inner;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(a, ec)) {
      const std::string p = e.path().string();
      if (e.is_directory() || (e.is_regular_file() && wit::is_wbundle_path(p))) inner.push_back(p);
    }
    if (ec) throw wit::Error("cannot read folder: " + ec.message(), a);
    std::sort(inner.begin(), inner.end());
    out.insert(out.end(), inner.begin(), inner.end());
  }
  return out;
}

// `wit-board add`, `evaluate` and `audit` run the model: they are wit-board-check's,
// beside this binary (the same folder), which takes the same arguments.
void hand_over_replaying_steps(int argc, char** argv) {
  if (argc < 2) return;
  const std::string sub = argv[1];
  if (sub != "add" && sub != "audit" && sub != "evaluate") return;
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = 0;
  const std::string exe = (fs::path(self).parent_path() / "wit-board-check").string();
  if (::access(exe.c_str(), X_OK) != 0) return;  // the subcommand below says what is missing
  std::vector<char*> args(argv, argv + argc);
  args[0] = const_cast<char*>(exe.c_str());
  args.push_back(nullptr);
  ::execv(exe.c_str(), args.data());
}

std::string first_line(const wit::RunEntry& e) {
  const std::string d = e.describe();
  return d.substr(0, d.find('\n'));
}

}  // namespace

int main(int argc, char** argv) {
  hand_over_replaying_steps(argc, argv);
  CLI::App app{"Define a board, judge run bundles against it and build the leaderboard (static HTML and JSON)"};
  wit::cli::setup(app, "wit-board");
  app.require_subcommand(1);
  bool quiet = false;
  double fraction = wit::kDefaultBoardFraction;

  // init
  std::string i_dir, i_name, i_key, i_commit;
  std::vector<std::string> i_files;
  wit::BoardPolicy i_policy;
  auto* init = app.add_subcommand("init", "Define a new board: its benchmark, policy and key (writes DIR/board.def.json)");
  init->add_option("board", i_dir, "The board folder to create (empty or new)")->required()->type_name("DIR");
  init->add_option("--name", i_name, "The board's name (1 to 64 of A-Z a-z 0-9 . _ -)")->required()->type_name("NAME");
  init->add_option("--key", i_key, "The board's secret key file, outside DIR (made when it does not exist)")->required()->type_name("KEY");
  init->add_option("--benchmark", i_commit, "The benchmark's eval set commitment (wit-commit -o)")->required()->type_name("C");
  init->add_option("files", i_files, "The benchmark's record files (the board keeps a copy)")->required()->type_name("FILE");
  init->add_option("--fraction", i_policy.fraction, "Tampering fraction the confidence is stated for, 0 < F <= 1")->default_str("0.05")->type_name("F");
  init->add_option("--confidence", i_policy.confidence, "Confidence a run must reach to show as certified, 0 < P < 1")->default_str("0.99")->type_name("P");
  init->add_option("-k", i_policy.k, "Steps per board challenge (default: the smallest k reaching --confidence at once)")->type_name("N");

  // submit
  std::string u_dir, u_bundle;
  auto* submit = app.add_subcommand("submit", "Put a run bundle on a board (DIR/runs/NAME), checked against its definition");
  submit->add_option("board", u_dir, "The board folder")->required()->type_name("DIR");
  submit->add_option("bundle", u_bundle, "The run bundle (wit-board pack -o)")->required()->type_name("BUNDLE");

  // leaves
  std::string l_bundle, l_file, l_key;
  unsigned l_threads = 1;
  auto* leaves = app.add_subcommand("leaves", "Audit the training tree's sorted leaves (wit-commit leaves) against the run's data commitment");
  leaves->add_option("bundle", l_bundle, "The run bundle on the board (DIR/runs/NAME)")->required()->type_name("BUNDLE");
  leaves->add_option("leaves", l_file, "The sorted leaves file of the run's data commitment")->required()->type_name("LEAVES");
  leaves->add_option("--key", l_key, "The board's secret key file (kept outside the board folder)")->required()->type_name("KEY");
  leaves->add_option("-j,--threads", l_threads, "Hashing threads (default 1; 0 = all cores)")->type_name("N");
  leaves->add_flag("-q,--quiet", quiet, "No note on stderr");

  // pack
  std::string p_out, p_name, p_run, p_data, p_evalc, p_eval, p_scores, p_cont, p_fp, p_binding;
  std::vector<std::string> p_checks, p_challenges, p_reports, p_probe_checks;
  bool p_nolog = false;
  auto* pack = app.add_subcommand("pack", "Pack a finished run and its evidence into a new run bundle");
  pack->add_option("-o,--output", p_out, "Bundle to create: a directory, or a file ending in .wbundle")->required()->type_name("BUNDLE");
  pack->add_option("--name", p_name, "The run's name on the board (1 to 64 of A-Z a-z 0-9 . _ -)")->required()->type_name("NAME");
  pack->add_option("--run", p_run, "The finished run directory")->required()->type_name("RUN");
  pack->add_option("--data-commit", p_data, "The training data commitment")->required()->type_name("F");
  pack->add_option("--eval-commit", p_evalc, "The eval set commitment")->required()->type_name("F");
  pack->add_option("--eval", p_eval, "The eval commitment (wit-eval run -o)")->required()->type_name("F");
  pack->add_option("--eval-scores", p_scores, "Its per-example scores (wit-eval run --scores)")->required()->type_name("F");
  pack->add_option("--contamination", p_cont, "The eval set's contamination certificate (wit-query contamination)")->required()->type_name("F");
  pack->add_option("--eval-check", p_checks, "An eval spot-check report (wit-eval check); repeat for more")->type_name("F");
  pack->add_option("--challenge", p_challenges, "A challenge (wit-challenge); repeat for more")->type_name("F");
  pack->add_option("--report", p_reports, "A replay report answering one of the challenges (wit-replay verify)")->type_name("F");
  pack->add_option("--model-fingerprint", p_fp, "The released model's fingerprint (wit-sketch fingerprint; information only)")->type_name("F");
  pack->add_option("--model-binding", p_binding, "The released weights file bound to the final state (wit-sketch match --json)")->type_name("F");
  pack->add_option("--probe-check", p_probe_checks, "A fresh-probe check of a model behind an API (wit-sketch probe-check -o); repeat for more")->type_name("F");
  pack->add_flag("--no-log", p_nolog, "Leave run.wlog out (smaller; no loss curve)");
  pack->add_flag("-q,--quiet", quiet, "No status on stderr");

  // build
  std::vector<std::string> b_paths;
  std::string b_site;
  auto* build = app.add_subcommand("build", "Judge a board's runs (or bundles) and write the static site (index.html, runs/, board.json)");
  build->add_option("bundles", b_paths, "A board folder; or bundle directories, .wbundle files or folders of bundles")->required()->type_name("DIR");
  build->add_option("-o,--output", b_site, "The site folder")->required()->type_name("SITE");
  build->add_option("--fraction", fraction, "Tampering fraction the confidence is stated for, 0 < F <= 1 (default 0.05)")->type_name("F");
  build->add_flag("-q,--quiet", quiet, "No summary on stderr");

  // challenge
  std::string c_bundle, c_nonce, c_out, c_key;
  std::optional<int64_t> c_k;
  std::optional<double> c_conf, c_frac;
  auto* chal = app.add_subcommand("challenge", "Draw a board challenge (--key) or add a caller's (--nonce) against a bundle's newest signed head");
  chal->add_option("bundle", c_bundle, "The run bundle (on a board: DIR/runs/NAME)")->required()->type_name("BUNDLE");
  auto* cn = chal->add_option("--nonce", c_nonce, "A caller's nonce, 64 hex digits (its passes add no confidence)")->type_name("HEX");
  auto* ckey = chal->add_option("--key", c_key, "The board's secret key: the board draws the nonce (counts toward confidence)")->type_name("KEY");
  auto* ck = chal->add_option("-k", c_k, "Number of steps to challenge")->type_name("N");
  auto* cc = chal->add_option("--confidence", c_conf, "Smallest k catching --fraction with this probability")->type_name("P");
  chal->add_option("--fraction", c_frac, "Tampering fraction for --confidence, 0 < F <= 1")->type_name("F");
  chal->add_option("-o,--output", c_out, "Also write the challenge to this file (- = stdout)")->type_name("FILE");
  chal->add_flag("-q,--quiet", quiet, "No guarantee on stderr");
  ck->excludes(cc);
  cn->excludes(ckey);

  // add, audit: wit-board-check's (LibTorch); reached here only when it is not installed
  auto* add = app.add_subcommand("add", "Verify a trainer's response bundle by replaying it and file the board's signed report");
  auto* evaluate = app.add_subcommand("evaluate", "Score the released weights on the board's benchmark and file the board's signed evaluation");
  auto* audit = app.add_subcommand("audit", "Re-verify every stored response and re-score stored weights; exit 1 naming any that does not reproduce");
  for (auto* s : {add, evaluate, audit}) s->allow_extras();

  // repair
  std::string r_bundle, r_name;
  auto* rep = app.add_subcommand("repair", "Rebuild a damaged bundle's index (bundle.json) from the members it holds");
  rep->add_option("bundle", r_bundle, "The run bundle")->required()->type_name("BUNDLE");
  rep->add_option("--name", r_name, "The run's name, when bundle.json no longer gives it")->type_name("NAME");
  rep->add_flag("-q,--quiet", quiet, "No list of changes on stderr");

  // show
  std::string s_bundle, s_board;
  bool s_json = false;
  auto* show = app.add_subcommand("show", "Print the verdict on one bundle (exit 1 if rejected)");
  show->add_option("bundle", s_bundle, "The run bundle")->required()->type_name("BUNDLE");
  show->add_option("--board", s_board, "Judge it against this board (default: the board it sits on, DIR/runs/NAME)")->type_name("DIR");
  show->add_option("--fraction", fraction, "Tampering fraction the confidence is stated for (default 0.05)")->type_name("F");
  show->add_flag("--json", s_json, "The verdict as JSON (one run of board.json)");

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (add->parsed() || evaluate->parsed() || audit->parsed())
      throw wit::Error(std::string(add->parsed() ? "add" : evaluate->parsed() ? "evaluate" : "audit") +
                           " runs the model: it is wit-board-check's (built with LibTorch), which is not beside wit-board",
                       "", "build wit with LibTorch (WIT_TORCH=ON)");

    if (init->parsed()) {
      wit::BoardInit in;
      in.dir = i_dir;
      in.name = i_name;
      in.key_path = i_key;
      in.commit_path = i_commit;
      in.record_files = i_files;
      in.policy = i_policy;
      const wit::BoardDefinition d = wit::init_board(in);
      std::cout << (fs::path(i_dir) / wit::board_path::kDefinition).string() << "\n";
      if (!quiet)
        wit::cli::note("board " + d.name + ": benchmark of " + std::to_string(d.benchmark.n) + " records, certified from " +
                       wit::percent(d.policy.confidence) + " against tampering with " + wit::fraction_percent(d.policy.fraction) +
                       " of the steps; board key " + d.key.hex() + " (secret half in " + i_key + ")");
      return wit::cli::kOk;
    }

    if (submit->parsed()) {
      if (!wit::is_board_dir(u_dir)) throw wit::Error("not a board (no board.def.json)", u_dir, "make one with 'wit-board init'");
      const wit::BoardDefinition def = wit::BoardDefinition::load(u_dir);
      const wit::FileLock lock = wit::lock_board(u_dir);
      wit::RunBundle b = load_whole(u_bundle);
      const std::string name = b.declared_name();
      // The board's own members are the board's to write.
      for (const auto& [m, bytes] : b.files)
        if (m.rfind(wit::member::kDraws, 0) == 0 || m.rfind(wit::member::kBoardReports, 0) == 0)
          throw wit::Error("the bundle holds " + m + ": only the board writes draws and board reports", u_bundle);
      const wit::Commitment ec = wit::Commitment::from_json(
          nlohmann::json::parse(b.get(wit::member::kEvalCommit), nullptr, false), wit::member::kEvalCommit);
      if (auto p = def.benchmark_problem(ec.root, ec.n)) throw wit::Error("the run is " + *p, u_bundle);
      const std::string to = (fs::path(u_dir) / wit::board_path::kRuns / name).string();
      if (exists(to)) throw wit::Error("a run named " + name + " is already on the board", to);
      b.path = to;
      b.archive = false;
      b.save_new();
      std::cout << to << "\n";
      if (!quiet) {
        const wit::RunEntry e = wit::evaluate_run_bundle(b, def.policy.fraction, &def);
        wit::cli::note("submitted " + name + " to board " + def.name + "; the board says: " + first_line(e));
      }
      return wit::cli::kOk;
    }

    if (leaves->parsed()) {
      const wit::BoardLeavesResult r = wit::board_leaves(l_bundle, l_file, wit::load_key(l_key), l_threads);
      std::cout << member_path(wit::RunBundle{l_bundle, false, {}}, r.member) << "\n";
      if (!r.doc.refused.empty()) {
        std::cerr << "wit-board: the training tree failed the board's audit: " << r.doc.refused << "\n";
        return wit::cli::kNegative;
      }
      if (!quiet)
        wit::cli::note("the board audited " + std::to_string(r.doc.n) + " sorted leaves against the data commitment; stored as " +
                       r.stored);
      return wit::cli::kOk;
    }

    if (pack->parsed()) {
      if (exists(p_out)) throw wit::Error("output exists", p_out, "pick a new path; a bundle is never overwritten");
      wit::PackInput in;
      in.name = p_name;
      in.run_dir = p_run;
      in.data_commit = p_data;
      in.eval_commit = p_evalc;
      in.eval = p_eval;
      in.eval_scores = p_scores;
      in.contamination = p_cont;
      in.model_fingerprint = p_fp;
      in.model_binding = p_binding;
      in.probe_checks = p_probe_checks;
      in.challenges = p_challenges;
      in.reports = p_reports;
      in.eval_checks = p_checks;
      in.include_log = !p_nolog;
      wit::RunBundle b = wit::pack_run_bundle(in);
      b.path = p_out;
      b.archive = wit::is_wbundle_path(p_out);
      b.save_new();
      if (!quiet) {
        const wit::RunEntry e = wit::evaluate_run_bundle(b);
        wit::cli::note("packed " + std::to_string(b.files.size()) + " members into " + p_out + "; the board says: " +
                       first_line(e));
      }
      return wit::cli::kOk;
    }

    if (build->parsed()) {
      check_fraction(fraction);
      std::vector<wit::RunEntry> runs;
      std::optional<wit::BoardDefinition> def;
      if (b_paths.size() == 1 && wit::is_board_dir(b_paths[0])) {
        def = wit::BoardDefinition::load(b_paths[0]);
        fraction = def->policy.fraction;
        runs = wit::evaluate_board(b_paths[0], *def);
      } else {
        for (const auto& p : b_paths)
          if (wit::is_board_dir(p)) throw wit::Error("a board folder is built on its own", p, "wit-board build DIR -o SITE");
        const std::vector<std::string> paths = expand_bundles(b_paths);
        for (const auto& p : paths) runs.push_back(wit::evaluate_bundle_path(p, fraction));
        runs = wit::order_board(std::move(runs));
      }
      wit::write_site(b_site, runs, fraction, def ? &*def : nullptr);
      if (!quiet) {
        size_t cert = 0, pend = 0, rej = 0;
        for (const auto& r : runs)
          (r.status == wit::BoardStatus::kCertified ? cert : r.status == wit::BoardStatus::kPending ? pend : rej)++;
        wit::cli::note(std::to_string(runs.size()) + (runs.size() == 1 ? " run: " : " runs: ") + std::to_string(cert) + " certified, " +
                       std::to_string(pend) + " pending, " + std::to_string(rej) + " rejected; open " + b_site +
                       "/index.html");
      }
      return wit::cli::kOk;
    }

    if (chal->parsed()) {
      if (c_nonce.empty() == c_key.empty())
        throw wit::Error("give --key KEY (the board draws the challenge) or --nonce HEX (a caller's challenge)", "",
                         "run 'wit-board challenge --help' for usage");
      const std::string board_dir = wit::board_of_bundle(c_bundle);
      std::optional<wit::BoardDefinition> def;
      if (!board_dir.empty()) def = wit::BoardDefinition::load(board_dir);
      std::optional<wit::SecretKey> key;
      if (!c_key.empty()) {
        key = wit::load_key(c_key);
        def.emplace();
        (void)wit::board_for_key(c_bundle, *key, *def);
      } else {
        (void)wit::nonce_from_args(c_nonce, "");  // a bad nonce is refused before anything is read
      }
      if (!c_k && !c_conf && !def) throw wit::Error("missing -k N or --confidence P --fraction F", "", "run 'wit-board challenge --help' for usage");
      wit::check_outputs_apart({c_bundle, c_bundle + "/" + wit::kRunBundleIndex}, {c_out});
      // Opened before the bundle changes, so an output that cannot be written leaves the bundle as it was.
      std::optional<wit::AtomicFile> out_file;
      if (!c_out.empty()) out_file.emplace(c_out);
      const wit::FileLock lock = wit::lock_run_bundle(c_bundle);
      wit::RunBundle b = load_whole(c_bundle);
      const wit::TreeHead head = wit::newest_signed_head(b);
      std::optional<wit::BoardDraw> draw;
      wit::Hash32 nonce;
      if (key) {
        draw = wit::BoardDraw::make(*key, head.run_id, head, wit::next_draw_number(b), uint64_t(std::time(nullptr)));
        nonce = draw->nonce;
      } else {
        nonce = wit::nonce_from_args(c_nonce, "");
      }
      wit::ChallengeRequest req{c_k, c_conf, c_frac, 0, std::nullopt};
      if (!c_k && !c_conf) req.k = def->draw_k(int64_t(head.size) - 1);  // the board's policy
      const wit::Challenge c = wit::issue_challenge(head, wit::member::kHeads, nonce, req);
      const std::string text = c.to_json().dump(2) + "\n";
      const std::string name = wit::challenge_member_name(c.seed);
      const std::string m = std::string(wit::member::kChallenges) + name + ".json";
      if (b.has(m) && b.get(m) != text)
        throw wit::Error("the bundle holds a different challenge with this name", member_path(b, m));
      if (out_file) out_file->write(text);  // a device such as /dev/full fails here, before the bundle changes
      if (!b.has(m)) b.put_and_save(m, text);
      const std::string dm = std::string(wit::member::kDraws) + name + ".json";
      if (draw && !b.has(dm)) b.put_and_save(dm, draw->to_json().dump(2) + "\n");
      if (out_file) out_file->commit();
      if (c_out != "-") std::cout << member_path(b, m) << "\n";
      if (!quiet)
        wit::cli::note((draw ? "board challenge " + std::to_string(draw->number) + " drawn with the board key: "
                             : std::string("a caller's challenge (its passes add no confidence on a board): ")) +
                       c.guarantee.words());
      return wit::cli::kOk;
    }

    if (rep->parsed()) {
      const wit::RepairResult r = wit::repair_run_bundle(r_bundle, r_name);
      if (!quiet)
        for (const auto& c : r.changes) wit::cli::note(c);
      if (r.problem) throw wit::Error("the bundle is still not whole: " + *r.problem, r_bundle);
      if (!quiet) wit::cli::note(r.changes.empty() ? "nothing to repair: " + r_bundle + " is whole"
                                                   : "repaired " + r_bundle + "; run 'wit-board show " + r_bundle + "' for the verdict");
      return wit::cli::kOk;
    }

    // show: something that is not a bundle at all is an error (2); a bundle
    // whose contents do not check out, or that cannot be read (a link inside
    // it), is a verdict (1), as on the board.
    check_fraction(fraction);
    if (!exists(s_bundle)) throw wit::Error("no such bundle", s_bundle);
    if (is_dir(s_bundle) && !exists((fs::path(s_bundle) / wit::kRunBundleIndex).string()))
      throw wit::Error("not a run bundle (no bundle.json)", s_bundle);
    if (!is_dir(s_bundle)) {
      char head[sizeof wit::kBundleMagic] = {};
      std::ifstream f(s_bundle, std::ios::binary);
      f.read(head, sizeof head);
      if (std::memcmp(head, wit::kBundleMagic, std::min<size_t>(sizeof head, size_t(f.gcount()))) != 0 || f.gcount() == 0)
        throw wit::Error("not a wit bundle (wrong magic)", s_bundle);
    }
    if (s_board.empty()) s_board = wit::board_of_bundle(s_bundle);
    std::optional<wit::BoardDefinition> def;
    if (!s_board.empty()) {
      if (!wit::is_board_dir(s_board)) throw wit::Error("not a board (no board.def.json)", s_board);
      def = wit::BoardDefinition::load(s_board);
    }
    const wit::RunEntry e = wit::evaluate_bundle_path(s_bundle, fraction, def ? &*def : nullptr);
    if (s_json) std::cout << e.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else std::cout << e.describe();
    std::cout.flush();
    if (!std::cout) throw wit::Error("cannot write to stdout");
    return e.status == wit::BoardStatus::kRejected ? wit::cli::kNegative : wit::cli::kOk;
  });
}
