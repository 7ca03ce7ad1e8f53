// wit-board: define a board, pack a run's evidence into a run bundle and put
// it on the board, draw challenges with the board key (or take anyone's),
// judge bundles and build the static leaderboard. `add` and `audit` replay
// responses: they are run by wit-board-check (LibTorch), so this tool never
// links it. Rules: docs/board.md; bundles: docs/run-bundle.md.
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <optional>

#include "wit/cmd/board_cmd.h"
#include "wit/cmd/cli.h"
#include "wit/base/error.h"
#include "wit/base/io.h"

namespace fs = std::filesystem;

namespace {

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
  wit::exec_holding_signals(exe.c_str(), args.data());
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
  std::string i_sealed, i_models;
  uint64_t i_split = 0;
  std::vector<std::string> i_sealed_files;
  init->add_option("--sealed", i_sealed, "Where the board keeps its sealed records and salts: a new file outside DIR")->type_name("PATH");
  init->add_option("--sealed-records", i_sealed_files, "The sealed records (read with the benchmark's reader; never published before reveal)")->type_name("FILE");
  init->add_option("--split", i_split, "Seal N of the benchmark's records drawn at random and publish only the rest")->type_name("N");
  init->add_option("--gap-threshold", i_policy.gap_threshold, "Flag a run whose corrected gap-test p-value is below this, 0 < A < 1")->default_str("0.01")->type_name("A");
  init->add_option("--models", i_models, "Models the board takes: any (default), builtin, or digests of reviewed modules, comma-separated")->type_name("WHICH");
  init->add_option("--overlap-window", i_policy.overlap_window, "Tokens a shared span must have to count as overlap (8 to 4096)")->default_str("50")->type_name("N");
  init->add_option("--overlap-share", i_policy.overlap_share, "Share of a benchmark record's text a training record must cover to count, 0 < S <= 1")->default_str("0.5")->type_name("S");
  std::string i_store;
  init->add_option("--store", i_store, "The evidence store, a folder outside DIR (default: DIR's sibling DIR.store)")->type_name("STORE");
  init->add_option("--overlap-action", i_policy.overlap_action, "What such a training record does: reject (default) or flag")->type_name("ACTION");

  // reveal, seal: an epoch's sealed set
  std::string v_dir, v_key, v_sealed;
  std::vector<std::string> v_files;
  auto* reveal = app.add_subcommand("reveal", "End the epoch: publish its sealed records and salts in the folder");
  auto* seal = app.add_subcommand("seal", "Seal the next epoch's records (kept outside the folder; their commitment signed)");
  for (auto* s : {reveal, seal}) {
    s->add_option("board", v_dir, "The board folder")->required()->type_name("DIR");
    s->add_option("--key", v_key, "The board's secret key file")->required()->type_name("KEY");
    s->add_option("--sealed", v_sealed, "The sealed set file (outside DIR)")->required()->type_name("PATH");
    s->add_flag("-q,--quiet", quiet, "No note on stderr");
  }
  seal->add_option("--sealed-records", v_files, "The next epoch's records (the benchmark's reader)")->required()->type_name("FILE");

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
  std::string l_store;
  leaves->add_option("--store", l_store, "The evidence store (default: the definition's)")->type_name("STORE");

  // prune
  std::string n_dir, n_store, n_before;
  std::vector<std::string> n_runs;
  auto* prune = app.add_subcommand("prune", "Drop stored evidence bytes the board no longer keeps (recorded in DIR/pruned.json)");
  prune->add_option("board", n_dir, "The board folder")->required()->type_name("DIR");
  prune->add_option("--run", n_runs, "A run whose stored bytes go; repeat for more")->type_name("NAME");
  prune->add_option("--before", n_before, "Every run whose newest board draw is older than this date (UTC)")->type_name("YYYY-MM-DD");
  prune->add_option("--store", n_store, "The evidence store (default: the definition's)")->type_name("STORE");
  prune->add_flag("-q,--quiet", quiet, "No summary on stderr");

  // pack
  std::string p_out, p_name, p_run, p_data, p_evalc, p_eval, p_scores, p_cont, p_fp, p_binding, p_board, p_index, p_released;
  std::vector<std::string> p_checks, p_challenges, p_reports, p_probe_checks;
  bool p_nolog = false;
  auto* pack = app.add_subcommand("pack", "Pack a finished run and its evidence into a new run bundle");
  pack->add_option("-o,--output", p_out, "Bundle to create: a directory, or a file ending in .wbundle")->required()->type_name("BUNDLE");
  pack->add_option("--name", p_name, "The run's name on the board (1 to 64 of A-Z a-z 0-9 . _ -)")->required()->type_name("NAME");
  pack->add_option("--run", p_run, "The finished run directory")->required()->type_name("RUN");
  pack->add_option("--data-commit", p_data, "The training data commitment")->required()->type_name("FILE");
  pack->add_option("--board", p_board, "The board the run is for: check everything it will check before submitting")->type_name("DIR");
  pack->add_option("--data-index", p_index, "With --board: the data index, to certify the benchmark absent from the training data")->type_name("FILE");
  pack->add_option("--eval-commit", p_evalc, "The eval set commitment (optional; with --board, the board's benchmark)")->type_name("FILE");
  pack->add_option("--eval", p_eval, "The trainer's eval commitment (wit-eval run -o; optional)")->type_name("FILE");
  pack->add_option("--eval-scores", p_scores, "Its per-example scores (wit-eval run --scores; with --eval)")->type_name("FILE");
  pack->add_option("--contamination", p_cont, "The eval set's contamination certificate (wit-query contamination; optional)")->type_name("FILE");
  pack->add_option("--eval-check", p_checks, "An eval spot-check report (wit-eval check); repeat for more")->type_name("FILE");
  pack->add_option("--challenge", p_challenges, "A challenge (wit-challenge); repeat for more")->type_name("FILE");
  pack->add_option("--report", p_reports, "A replay report answering one of the challenges (wit-replay verify)")->type_name("FILE");
  pack->add_option("--model-fingerprint", p_fp, "The released model's fingerprint (wit-sketch fingerprint; information only)")->type_name("FILE");
  auto* pbind = pack->add_option("--model-binding", p_binding, "The released weights file bound to the final state (wit-sketch match --json)")->type_name("FILE");
  pack->add_option("--released", p_released, "Export the released weights (parameters only) from the run's final checkpoint to FILE and pack their binding")->type_name("FILE")->excludes(pbind);
  pack->add_option("--probe-check", p_probe_checks, "A fresh-probe check of a model behind an API (wit-sketch probe-check -o); repeat for more")->type_name("FILE");
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
      in.sealed_path = i_sealed;
      in.sealed_files = i_sealed_files;
      in.split = i_split;
      in.store = i_store;
      if (!i_models.empty()) wit::parse_models_policy(i_models, in.policy);
      return wit::board_init_cmd(in, quiet);
    }
    if (submit->parsed()) return wit::board_submit_cmd(u_dir, u_bundle, quiet);
    if (reveal->parsed()) return wit::board_reveal_cmd(v_dir, v_key, v_sealed, quiet);
    if (seal->parsed()) return wit::board_seal_cmd(v_dir, v_key, v_sealed, v_files, quiet);
    if (leaves->parsed()) return wit::board_leaves_cmd(l_bundle, l_file, l_key, l_threads, quiet, l_store);
    if (prune->parsed()) return wit::board_prune_cmd(n_dir, n_store, n_runs, n_before, quiet);
    if (pack->parsed()) {
      wit::PackInput in;
      in.name = p_name;
      in.run_dir = p_run;
      in.data_commit = p_data;
      in.eval_commit = p_evalc;
      in.eval = p_eval;
      in.eval_scores = p_scores;
      in.contamination = p_cont;
      in.board_dir = p_board;
      in.data_index = p_index;
      in.model_fingerprint = p_fp;
      in.model_binding = p_binding;
      in.probe_checks = p_probe_checks;
      in.challenges = p_challenges;
      in.reports = p_reports;
      in.eval_checks = p_checks;
      in.include_log = !p_nolog;
      return wit::board_pack_cmd(in, p_out, p_released, quiet);
    }
    if (build->parsed()) return wit::board_build_cmd(b_paths, b_site, fraction, quiet);
    if (chal->parsed()) return wit::board_challenge_cmd({c_bundle, c_nonce, c_key, c_out, c_k, c_conf, c_frac}, quiet);
    if (rep->parsed()) return wit::board_repair_cmd(r_bundle, r_name, quiet);
    return wit::board_show_cmd(s_bundle, s_board, fraction, s_json);
  });
}
