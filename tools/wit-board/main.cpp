// wit-board: pack a run's evidence into a run bundle, judge bundles and build
// the static leaderboard, and let anyone challenge a run on the board and
// file the verified answer. Rules: docs/board.md; bundles: docs/run-bundle.md.
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "wit/board.h"
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
  std::string why;
  if (!b.check_index(why)) throw wit::Error("the bundle is damaged: " + why, path);
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

std::string first_line(const wit::RunEntry& e) {
  const std::string d = e.describe();
  return d.substr(0, d.find('\n'));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Judge run bundles and build a self-regulating leaderboard (static HTML and JSON)"};
  wit::cli::setup(app, "wit-board");
  app.require_subcommand(1);
  bool quiet = false;
  double fraction = wit::kDefaultBoardFraction;

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
  auto* build = app.add_subcommand("build", "Judge bundles and write the static site (index.html, runs/, board.json)");
  build->add_option("bundles", b_paths, "Bundle directories, .wbundle files or folders of bundles")->required()->type_name("BUNDLE");
  build->add_option("-o,--output", b_site, "The site folder")->required()->type_name("SITE");
  build->add_option("--fraction", fraction, "Tampering fraction the confidence is stated for, 0 < F <= 1 (default 0.05)")->type_name("F");
  build->add_flag("-q,--quiet", quiet, "No summary on stderr");

  // challenge
  std::string c_bundle, c_nonce, c_out;
  std::optional<int64_t> c_k;
  std::optional<double> c_conf, c_frac;
  auto* chal = app.add_subcommand("challenge", "Issue a new challenge against a bundle's newest signed head and add it");
  chal->add_option("bundle", c_bundle, "The run bundle")->required()->type_name("BUNDLE");
  chal->add_option("--nonce", c_nonce, "Nonce the trainer does not control: 64 hex digits")->required()->type_name("HEX");
  auto* ck = chal->add_option("-k", c_k, "Number of steps to challenge")->type_name("N");
  auto* cc = chal->add_option("--confidence", c_conf, "Smallest k catching --fraction with this probability")->type_name("P");
  chal->add_option("--fraction", c_frac, "Tampering fraction for --confidence, 0 < F <= 1")->type_name("F");
  chal->add_option("-o,--output", c_out, "Also write the challenge to this file (- = stdout)")->type_name("FILE");
  chal->add_flag("-q,--quiet", quiet, "No guarantee on stderr");
  ck->excludes(cc);

  // add
  std::string a_bundle, a_report;
  auto* add = app.add_subcommand("add", "Add a replay report answering one of the bundle's challenges");
  add->add_option("bundle", a_bundle, "The run bundle")->required()->type_name("BUNDLE");
  add->add_option("report", a_report, "The replay report (wit-replay verify -o)")->required()->type_name("REPORT");
  add->add_flag("-q,--quiet", quiet, "No note on stderr");

  // repair
  std::string r_bundle, r_name;
  auto* rep = app.add_subcommand("repair", "Rebuild a damaged bundle's index (bundle.json) from the members it holds");
  rep->add_option("bundle", r_bundle, "The run bundle")->required()->type_name("BUNDLE");
  rep->add_option("--name", r_name, "The run's name, when bundle.json no longer gives it")->type_name("NAME");
  rep->add_flag("-q,--quiet", quiet, "No list of changes on stderr");

  // show
  std::string s_bundle;
  bool s_json = false;
  auto* show = app.add_subcommand("show", "Print the verdict on one bundle (exit 1 if rejected)");
  show->add_option("bundle", s_bundle, "The run bundle")->required()->type_name("BUNDLE");
  show->add_option("--fraction", fraction, "Tampering fraction the confidence is stated for (default 0.05)")->type_name("F");
  show->add_flag("--json", s_json, "The verdict as JSON (one run of board.json)");

  return wit::cli::run(app, argc, argv, [&]() -> int {
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
      const std::vector<std::string> paths = expand_bundles(b_paths);
      std::vector<wit::RunEntry> runs;
      for (const auto& p : paths) runs.push_back(wit::evaluate_bundle_path(p, fraction));
      runs = wit::order_board(std::move(runs));
      wit::write_site(b_site, runs, fraction);
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
      const wit::Hash32 nonce = wit::nonce_from_args(c_nonce, "");
      if (!c_k && !c_conf) throw wit::Error("missing -k N or --confidence P --fraction F", "", "run 'wit-board challenge --help' for usage");
      wit::check_outputs_apart({c_bundle, c_bundle + "/" + wit::kRunBundleIndex}, {c_out});
      // Opened before the bundle changes, so an output that cannot be written leaves the bundle as it was.
      std::optional<wit::AtomicFile> out_file;
      if (!c_out.empty()) out_file.emplace(c_out);
      const wit::FileLock lock = wit::lock_run_bundle(c_bundle);
      wit::RunBundle b = load_whole(c_bundle);
      const wit::TreeHead head = wit::newest_signed_head(b);
      const wit::Challenge c =
          wit::issue_challenge(head, wit::member::kHeads, nonce, wit::ChallengeRequest{c_k, c_conf, c_frac, 0, std::nullopt});
      const std::string text = c.to_json().dump(2) + "\n";
      const std::string m = std::string(wit::member::kChallenges) + wit::challenge_member_name(c.seed) + ".json";
      if (b.has(m) && b.get(m) != text)
        throw wit::Error("the bundle holds a different challenge with this name", member_path(b, m));
      if (out_file) out_file->write(text);  // a device such as /dev/full fails here, before the bundle changes
      if (!b.has(m)) b.put_and_save(m, text);
      if (out_file) out_file->commit();
      if (c_out != "-") std::cout << member_path(b, m) << "\n";
      if (!quiet) wit::cli::note(c.guarantee.words());
      return wit::cli::kOk;
    }

    if (add->parsed()) {
      const wit::FileLock lock = wit::lock_run_bundle(a_bundle);
      wit::RunBundle b = load_whole(a_bundle);
      const std::string text = wit::read_file(a_report);
      std::string why;
      const std::string name = wit::match_report(b, text, a_report, why);
      if (name.empty()) {
        std::cerr << "wit-board: refused: " << why << "\n";
        return wit::cli::kNegative;
      }
      const std::string m = std::string(wit::member::kReports) + name + ".json";
      if (b.has(m) && b.get(m) != text) {
        std::cerr << "wit-board: refused: a different report is already filed for challenge " << name << ": "
                  << member_path(b, m) << "\n";
        return wit::cli::kNegative;
      }
      if (!b.has(m)) b.put_and_save(m, text);
      std::cout << member_path(b, m) << "\n";
      if (!quiet) wit::cli::note("the report answers challenge " + name + "; run 'wit-board show " + a_bundle + "' for the verdict");
      return wit::cli::kOk;
    }

    if (rep->parsed()) {
      const wit::RepairResult r = wit::repair_run_bundle(r_bundle, r_name);
      if (!quiet)
        for (const auto& c : r.changes) wit::cli::note(c);
      if (!r.problem.empty()) throw wit::Error("the bundle is still not whole: " + r.problem, r_bundle);
      if (!quiet) wit::cli::note(r.changes.empty() ? "nothing to repair: " + r_bundle + " is whole"
                                                   : "repaired " + r_bundle + "; run 'wit-board show " + r_bundle + "' for the verdict");
      return wit::cli::kOk;
    }

    // show: something that is not a bundle at all is an error (2); a bundle
    // whose contents do not check out is a verdict (1).
    check_fraction(fraction);
    if (!exists(s_bundle)) throw wit::Error("no such bundle", s_bundle);
    if (is_dir(s_bundle) && !exists((fs::path(s_bundle) / wit::kRunBundleIndex).string()))
      throw wit::Error("not a run bundle (no bundle.json)", s_bundle);
    const wit::RunEntry e = wit::evaluate_run_bundle(wit::RunBundle::load(s_bundle), fraction);
    if (s_json) std::cout << e.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else std::cout << e.describe();
    return e.status == wit::BoardStatus::kRejected ? wit::cli::kNegative : wit::cli::kOk;
  });
}
