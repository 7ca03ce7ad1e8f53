// The subcommands of wit-eval (eval_cmd.h): what main used to decide.
#include "wit/cmd/eval_cmd.h"

#include <cstdio>
#include <iostream>

#include "wit/run/challenge.h"
#include "wit/cmd/cli.h"
#include "wit/model/device.h"
#include "wit/base/error.h"
#include "wit/eval/eval.h"
#include "wit/base/io.h"

namespace wit {

namespace {

std::string fmt(double d, int digits) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*f", digits, d);
  return buf;
}

std::string causal_words(const EvalCommitment& e) {
  if (!e.causal) return "no causal check recorded";
  return "causal check passed on " + std::to_string(e.causal->records) + " of " + std::to_string(e.n) + " records, " +
         std::to_string(e.causal->cuts) + (e.causal->cuts == 1 ? " cut" : " cuts") + " each";
}

std::string summary(const EvalCommitment& e) {
  return "eval of step " + std::to_string(e.step) + ": loss " + fmt(e.loss, 4) + ", accuracy " + fmt(e.accuracy, 4) +
         " over " + std::to_string(e.n) + " examples; " + causal_words(e);
}

}  // namespace

int eval_run_cmd(EvalArgs a) {
  EvalOptions& o = a.o;
  check_device(o.device);
  o.quiet = a.quiet;
  // Both outputs are opened before the work and renamed into place only
  // when both are written: all of them or none.
  if (!a.cut_nonce_hex.empty() || !a.cut_nonce_file.empty()) {
    const Hash32 cn = nonce_from_args(a.cut_nonce_hex, a.cut_nonce_file);  // the one rule for nonces
    o.causal_nonce.assign(cn.data(), cn.data() + 32);
  }
  AtomicFile scores_file(a.scores_path), eval_file(a.out);
  const EvalRun r = run_eval(o);
  if (r.refused) {
    // A verdict on the model, not bad input: exit 1, and nothing is written.
    cli::note("rejected: " + r.refused->message());
    return cli::kNegative;
  }
  scores_file.write(dump_eval_scores(r.scores));
  eval_file.write(r.eval.to_json().dump(2) + "\n");
  // Scores first: the eval names them, and a reader who finds eval.json expects its scores beside it.
  scores_file.commit();
  eval_file.commit();
  if (!a.quiet) cli::note(summary(r.eval));
  return cli::kOk;
}

int eval_check_cmd(EvalArgs a) {
  check_device(a.o.device);
  a.o.quiet = a.quiet;
  if (a.nonce_hex.empty() && a.nonce_file.empty())
    throw Error("missing --nonce HEX or --nonce-file F", "", "the nonce must come after the eval, from someone other than the evaluator");
  EvalCheckOptions co;
  co.data = a.o;
  const Hash32 nonce = nonce_from_args(a.nonce_hex, a.nonce_file);  // the one rule for nonces
  co.nonce.assign(nonce.data(), nonce.data() + 32);
  co.k = a.k;
  co.confidence = a.confidence;
  co.fraction = a.fraction;
  const EvalCommitment e = EvalCommitment::load(a.eval_path);
  const EvalScores s = EvalScores::load(a.scores_path);
  const EvalCheck c = check_eval(e, s, co);
  if (!c.report) {
    cli::note("rejected: " + c.rejected);
    return cli::kNegative;
  }
  const EvalCheckReport& r = *c.report;
  write_file_atomic(a.out, r.to_json().dump(2) + "\n");
  if (!a.quiet) {
    if (r.verdict == ReportVerdict::kCertified)
      cli::note("certified: " + std::to_string(r.k) + " of " + std::to_string(r.n) +
                " examples re-evaluated within tolerance; " + eval_guarantee_words(r.guarantee));
    else
      cli::note("rejected: " + r.reason);
  }
  return r.verdict == ReportVerdict::kCertified ? cli::kOk : cli::kNegative;
}

int eval_show_cmd(const std::string& path) {
  const std::string where = path == "-" ? "stdin" : path;
  const nlohmann::json j = nlohmann::json::parse(read_file(path), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("format") || !j["format"].is_string())
    throw Error("not a wit eval document", where);
  const std::string f = j["format"].get<std::string>();
  if (f == kEvalFormat) {
    const EvalCommitment e = EvalCommitment::from_json(j, where);
    std::cout << summary(e) << "\n"
              << "  eval id          " << e.id().hex() << "\n"
              << "  run              " << e.run_id.hex() << "\n"
              << "  checkpoint root  " << e.checkpoint_root.hex() << " (the run's log has it at step " << e.step << ")\n"
              << "  eval set root    " << e.eval_root.hex() << " (the eval commitment's root)\n"
              << "  scores root      " << e.scores_root.hex() << " (RFC 6962 tree of (record leaf, score) pairs)\n"
              << "  metric           " << e.metric << ": mean next-byte loss in nats, top-1 accuracy\n"
              << "  causal           "
              << (e.causal ? causal_words(e) + " (cut nonce " + to_hex(ByteView(e.causal->nonce)) + ")"
                           : causal_words(e))
              << "\n";
    return cli::kOk;
  }
  if (f == kEvalCheckFormat) {
    const EvalCheckReport r = EvalCheckReport::from_json(j, where);
    std::cout << verdict_name(r.verdict) << (r.reason.empty() ? "" : ": " + r.reason) << "\n"
              << "  eval id  " << r.eval_id.hex() << "\n"
              << "  run      " << r.run_id.hex() << "\n"
              << "  nonce    " << to_hex(ByteView(r.nonce)) << "\n"
              << "  checked  " << r.k << " of " << r.n << " examples\n";
    for (const auto& it : r.items)
      std::cout << "    example " << it.index << ": claimed loss " << fmt(it.claimed.loss, 6) << ", recomputed "
                << fmt(it.recomputed.loss, 6) << ", accuracy " << fmt(it.claimed.accuracy, 4) << " / "
                << fmt(it.recomputed.accuracy, 4) << (it.pass ? "  ok" : "  FAILED (" + it.failed + ")") << "\n";
    std::cout << "  " << eval_guarantee_words(r.guarantee) << "\n";
    return r.verdict == ReportVerdict::kCertified ? cli::kOk : cli::kNegative;
  }
  if (f == kEvalScoresFormat) {
    const EvalScores s = EvalScores::from_json(j, where);
    std::cout << s.scores.size() << " scores of eval " << s.eval_id.hex() << "\n";
    return cli::kOk;
  }
  throw Error("not a wit eval document (format '" + f + "')", where);
}

}  // namespace wit
