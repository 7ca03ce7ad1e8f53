// wit-eval: certified evaluation. `run` scores a run's checkpoint on a
// committed eval set and commits to the per-example scores; `check`
// re-evaluates the examples a nonce picks and checks their openings; `show`
// prints an eval or a spot-check report for a person.
#include <cstdio>
#include <iostream>
#include <optional>

#include "wit/challenge.h"
#include "wit/cli.h"
#include "wit/device.h"
#include "wit/error.h"
#include "wit/eval.h"
#include "wit/evaluate.h"
#include "wit/io.h"
#include "wit/state.h"

namespace {

std::string fmt(double d, int digits) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*f", digits, d);
  return buf;
}

std::string causal_words(const wit::EvalCommitment& e) {
  if (!e.causal) return "no causal check recorded";
  return "causal check passed on " + std::to_string(e.causal->records) + " of " + std::to_string(e.n) + " records, " +
         std::to_string(e.causal->cuts) + (e.causal->cuts == 1 ? " cut" : " cuts") + " each";
}

std::string summary(const wit::EvalCommitment& e) {
  return "eval of step " + std::to_string(e.step) + ": loss " + fmt(e.loss, 4) + ", accuracy " + fmt(e.accuracy, 4) +
         " over " + std::to_string(e.n) + " examples; " + causal_words(e);
}

int show(const std::string& path) {
  const std::string where = path == "-" ? "stdin" : path;
  const nlohmann::json j = nlohmann::json::parse(wit::read_file(path), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("format") || !j["format"].is_string())
    throw wit::Error("not a wit eval document", where);
  const std::string f = j["format"].get<std::string>();
  if (f == wit::kEvalFormat) {
    const wit::EvalCommitment e = wit::EvalCommitment::from_json(j, where);
    std::cout << summary(e) << "\n"
              << "  eval id          " << e.id().hex() << "\n"
              << "  run              " << e.run_id.hex() << "\n"
              << "  checkpoint root  " << e.checkpoint_root.hex() << " (the run's log has it at step " << e.step << ")\n"
              << "  eval set root    " << e.eval_root.hex() << " (the eval commitment's root)\n"
              << "  scores root      " << e.scores_root.hex() << " (RFC 6962 tree of (record leaf, score) pairs)\n"
              << "  metric           " << e.metric << ": mean next-byte loss in nats, top-1 accuracy\n"
              << "  causal           "
              << (e.causal ? causal_words(e) + " (cut nonce " + wit::to_hex(wit::ByteView(e.causal->nonce)) + ")"
                           : causal_words(e))
              << "\n";
    return wit::cli::kOk;
  }
  if (f == wit::kEvalCheckFormat) {
    const wit::EvalCheckReport r = wit::EvalCheckReport::from_json(j, where);
    std::cout << wit::verdict_name(r.verdict) << (r.reason.empty() ? "" : ": " + r.reason) << "\n"
              << "  eval id  " << r.eval_id.hex() << "\n"
              << "  run      " << r.run_id.hex() << "\n"
              << "  nonce    " << wit::to_hex(wit::ByteView(r.nonce)) << "\n"
              << "  checked  " << r.k << " of " << r.n << " examples\n";
    for (const auto& it : r.items)
      std::cout << "    example " << it.index << ": claimed loss " << fmt(it.claimed.loss, 6) << ", recomputed "
                << fmt(it.recomputed.loss, 6) << ", accuracy " << fmt(it.claimed.accuracy, 4) << " / "
                << fmt(it.recomputed.accuracy, 4) << (it.pass ? "  ok" : "  FAILED (" + it.failed + ")") << "\n";
    std::cout << "  " << wit::eval_guarantee_words(r.guarantee) << "\n";
    return r.verdict == wit::ReportVerdict::kCertified ? wit::cli::kOk : wit::cli::kNegative;
  }
  if (f == wit::kEvalScoresFormat) {
    const wit::EvalScores s = wit::EvalScores::from_json(j, where);
    std::cout << s.scores.size() << " scores of eval " << s.eval_id.hex() << "\n";
    return wit::cli::kOk;
  }
  throw wit::Error("not a wit eval document (format '" + f + "')", where);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Certified evaluation: score a run's checkpoint on a committed eval set; spot-check a claimed eval"};
  wit::cli::setup(app, "wit-eval");
  app.require_subcommand(1);
  wit::EvalOptions o;
  std::string out, scores_path, eval_path, nonce_hex, nonce_file, show_path;
  std::optional<uint64_t> k;
  std::optional<double> confidence, fraction;
  bool quiet = false;

  auto* run = app.add_subcommand("run", "Score the run's final checkpoint on the eval set, causal check included; write eval.json and the scores (exit 1: the model reads the future)");
  auto* check = app.add_subcommand("check", "Re-evaluate the examples a nonce picks; exit 0 certified, 1 rejected");
  for (auto* s : {run, check}) {
    s->add_option("--run", o.run, "Run directory")->required()->type_name("RUN");
    s->add_option("--commit", o.commit_path, "The eval set's commitment (wit-commit)")->required()->type_name("EVAL.commit.json");
    s->add_option("--index", o.index_path, "The eval set's index, checked against the commitment")->type_name("EVAL.widx");
    s->add_option("--checkpoint", o.checkpoint, "Checkpoint file, or (run) the released parameters-only file of the final state (default: the run's final checkpoint; check: the one at the eval's step)")
        ->type_name("FILE");
    s->add_option("-j,--threads", o.threads, "LibTorch threads (0 = all cores)")->type_name("N");
    s->add_option("--device", o.device, "cpu or cuda")->default_str("cpu");
    s->add_option("FILE", o.files, "The eval set's files (any order)")->required();
    s->add_flag("-q,--quiet", quiet, "No summary or progress on stderr");
    s->add_option("--causal-cuts", o.causal_cuts, "Cut points of the causal check per record, 1..64")->default_str("1")->type_name("N");
  }
  std::string cut_nonce_hex, cut_nonce_file;
  auto* o_cnonce = run->add_option("--nonce", cut_nonce_hex, "Nonce the causal check's cut points are drawn from: 64 hex digits (default: the checkpoint root)")->type_name("HEX");
  auto* o_cnfile = run->add_option("--nonce-file", cut_nonce_file, "File holding that nonce as 64 hex digits (- = stdin)")->type_name("F");
  o_cnonce->excludes(o_cnfile);
  run->add_option("-o,--output", out, "Eval commitment to write (eval.json)")->required()->type_name("FILE");
  wit::cli::mark_output(run->add_option("--scores", scores_path, "Per-example scores to write (eval.scores.json)"))->required()->type_name("FILE");

  check->add_option("--eval", eval_path, "The eval commitment checked (eval.json)")->required()->type_name("EVAL.json");
  check->add_option("--scores", scores_path, "Its per-example scores")->required()->type_name("SCORES.json");
  auto* o_nonce = check->add_option("--nonce", nonce_hex, "Nonce the evaluator does not control: 64 hex digits")->type_name("HEX");
  auto* o_nfile = check->add_option("--nonce-file", nonce_file, "File holding the nonce as 64 hex digits (- = stdin)")->type_name("F");
  auto* o_k = check->add_option("-k", k, "Number of examples to re-evaluate, 1..n")->type_name("N");
  auto* o_conf = check->add_option("--confidence", confidence, "Pick the smallest k that catches --fraction with this probability")->type_name("P");
  check->add_option("--fraction", fraction, "Fraction of inflated scores the guarantee is for, 0 < F <= 1 (with -k only: 0.05)")->type_name("F");
  check->add_option("-o,--output", out, "Spot-check report to write (- = stdout)")->required()->type_name("FILE");
  o_nonce->excludes(o_nfile);
  o_k->excludes(o_conf);

  auto* show_cmd = app.add_subcommand("show", "Print an eval, its scores or a spot-check report for a person");
  show_cmd->add_option("FILE", show_path, "eval.json, eval.scores.json or a check report (- = stdin)")->required();

  return wit::cli::run(app, argc, argv, [&]() -> int {
    if (*show_cmd) return show(show_path);
    wit::check_device(o.device);
    o.quiet = quiet;
    if (*run) {
      // Both outputs are opened before the work and renamed into place only
      // when both are written: all of them or none.
      if (!cut_nonce_hex.empty() || !cut_nonce_file.empty()) {
        const wit::Hash32 cn = wit::nonce_from_args(cut_nonce_hex, cut_nonce_file);  // the one rule for nonces
        o.causal_nonce.assign(cn.data(), cn.data() + 32);
      }
      wit::AtomicFile scores_file(scores_path), eval_file(out);
      const wit::EvalRun r = wit::run_eval(o);
      if (r.refused) {
        // A verdict on the model, not bad input: exit 1, and nothing is written.
        wit::cli::note("rejected: " + r.refused->message());
        return wit::cli::kNegative;
      }
      scores_file.write(wit::dump_eval_scores(r.scores));
      eval_file.write(r.eval.to_json().dump(2) + "\n");
      // Scores first: the eval names them, and a reader who finds eval.json expects its scores beside it.
      scores_file.commit();
      eval_file.commit();
      if (!quiet) wit::cli::note(summary(r.eval));
      return wit::cli::kOk;
    }
    if (nonce_hex.empty() && nonce_file.empty())
      throw wit::Error("missing --nonce HEX or --nonce-file F", "", "the nonce must come after the eval, from someone other than the evaluator");
    wit::EvalCheckOptions co;
    co.data = o;
    const wit::Hash32 nonce = wit::nonce_from_args(nonce_hex, nonce_file);  // the one rule for nonces
    co.nonce.assign(nonce.data(), nonce.data() + 32);
    co.k = k;
    co.confidence = confidence;
    co.fraction = fraction;
    const wit::EvalCommitment e = wit::EvalCommitment::load(eval_path);
    const wit::EvalScores s = wit::EvalScores::load(scores_path);
    const wit::EvalCheck c = wit::check_eval(e, s, co);
    if (!c.report) {
      wit::cli::note("rejected: " + c.rejected);
      return wit::cli::kNegative;
    }
    const wit::EvalCheckReport& r = *c.report;
    wit::write_file_atomic(out, r.to_json().dump(2) + "\n");
    if (!quiet) {
      if (r.verdict == wit::ReportVerdict::kCertified)
        wit::cli::note("certified: " + std::to_string(r.k) + " of " + std::to_string(r.n) +
                       " examples re-evaluated within tolerance; " + wit::eval_guarantee_words(r.guarantee));
      else
        wit::cli::note("rejected: " + r.reason);
    }
    return r.verdict == wit::ReportVerdict::kCertified ? wit::cli::kOk : wit::cli::kNegative;
  });
}
