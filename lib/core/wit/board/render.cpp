// The board's JSON (board.json, show --json) and text (wit-board show); the
// site's HTML is board/html.cpp's.
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

std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {  // whole numbers as such: "200", not "2e+02"
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int prec = 1; prec <= 17; prec++) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

const char* model_verdict_name(ModelVerdict v) {
  switch (v) {
    case ModelVerdict::kNotChecked: return "not checked";
    case ModelVerdict::kNotGiven: return "not given";
    case ModelVerdict::kMatches: return "matches";
    case ModelVerdict::kDiffers: return "differs";
    case ModelVerdict::kProbeOnly: return "probe only";
  }
  return "not checked";  // not reached: every enumerator is named above
}

json RunEntry::to_json() const {
  auto num = [](double v) -> json { return std::isfinite(v) ? json(v) : json(number_text(v)); };
  json j;
  j["name"] = name;
  j["source"] = source;
  j["status"] = status_name(status);
  j["reason"] = reason;
  j["run_id"] = run_id;
  j["board"] = board;
  j["badge"] = badge_text(*this);
  j["compute"] = {{"steps", steps},   {"batch_size", batch_size}, {"context", context}, {"params", params},
                  {"tokens", tokens}, {"flops", num(flops)},      {"model", model_config}};
  json list = json::array();
  for (const auto& c : challenges) {
    json checks = json::array();
    for (const auto& p : c.checks) {
      json d = json::object(), t = json::object();
      for (const auto& [k, v] : p.distances) d[k] = num(v);
      for (const auto& [k, v] : p.thresholds) t[k] = num(v);
      checks.push_back({{"kind", check_kind_name(p.kind)},
                        {"step", p.step},
                        {"pass", p.pass},
                        {"failed", p.failed},
                        {"distances", d},
                        {"thresholds", t}});
    }
    list.push_back({{"name", c.name},
                    {"drawn_by", c.drawn_by},
                    {"number", c.drawn_by == "board" ? json(c.number) : json(nullptr)},
                    {"drawn_at", c.drawn_at},
                    {"response", c.response},
                    {"head_size", c.head_size},
                    {"k", c.k},
                    {"steps", c.steps},
                    {"verdict", status_name(c.verdict)},
                    {"reason", c.reason},
                    {"checks", checks}});
  }
  j["challenges"] = {{"issued", challenges.size()}, {"survived", survived}, {"pending", pending},
                     {"failed", failed},            {"list", list}};
  j["confidence"] = {{"fraction", num(fraction)},
                     {"required", num(required)},
                     {"steps", steps},
                     {"bad_steps", bad_steps},
                     {"steps_checked", steps_checked},
                     {"detection", num(confidence)}};
  if (eval_known) {
    json checks = json::array();
    for (const auto& c : eval_checks)
      checks.push_back({{"name", c.name}, {"k", c.k}, {"verdict", verdict_name(c.verdict)}, {"indices", c.indices}});
    j["eval"] = {{"metric", eval_metric},
                 {"by", eval_by},
                 {"weights", weights_digest},
                 {"eval_root", eval_root},
                 {"loss", num(eval_loss)},
                 {"accuracy", num(eval_accuracy)},
                 {"n", eval_n},
                 {"checks", checks},
                 {"examples_checked", eval_indices_checked.size()},
                 {"bad_examples", eval_bad},
                 {"detection", num(eval_confidence)}};
  } else {
    j["eval"] = nullptr;
  }
  j["sealed"] = sealed_known ? json{{"epoch", sealed_epoch},
                                    {"n", sealed_n},
                                    {"loss", num(sealed_loss)},
                                    {"accuracy", num(sealed_accuracy)},
                                    {"gap", {{"observed", num(gap_observed)},
                                             {"permutations", gap_permutations},
                                             {"p", num(gap_p)},
                                             {"runs", gap_runs},
                                             {"adjusted", num(gap_adjusted)},
                                             {"detectable", num(gap_detectable)},
                                             {"flagged", flagged}}}}
                             : json(nullptr);
  j["ignored"] = ignored;
  j["pruned"] = pruned_files ? json{{"files", pruned_files}, {"of", evidence_files}, {"at", pruned_at}, {"date", utc_date(pruned_at)}}
                             : json(nullptr);
  j["overlap"] = overlap;
  j["contamination"] = clean ? json{{"clean", *clean}, {"distinct", eval_distinct}, {"tree_audited", leaves_audited}, {"tree_ranged", tree_ranged}}
                             : json(nullptr);
  json pcs = json::array();
  for (const auto& p : probe_checks)
    pcs.push_back({{"name", p.name}, {"verdict", match_name(p.pass)}, {"worst", num(p.worst)},
                   {"tolerance", num(p.tolerance)}, {"records", p.records}, {"random", p.random},
                   {"guarantee", p.guarantee}});
  // "fingerprint" is the verdict's old key, kept for scripts that read it.
  j["model"] = {{"verdict", model_verdict_name(model)},
                {"fingerprint", model_verdict_name(model)},
                {"probe_rel", model_probe_rel ? num(*model_probe_rel) : json(nullptr)},
                {"note", model_note},
                {"probe_checks", pcs}};
  json curve = json::array();
  for (const auto& [s, l] : loss_curve) curve.push_back({s, num(l)});
  j["loss_curve"] = curve;
  // Where the curve's log is: null (run.wlog in the folder, or none), or its store path (log.stored.json).
  j["log_stored"] = log_stored.empty() ? json(nullptr) : json({{"path", log_stored}, {"pruned", log_pruned}});
  return j;
}

std::string RunEntry::pruned_note() const {
  if (!pruned_files) return "";
  return "evidence pruned from the store on " + utc_date(pruned_at) + " (" + std::to_string(pruned_files) + " of " +
         cli::count_of(evidence_files, "stored file") +
         "): the board's signed documents stand, but 'wit-board audit' can no longer replay them from the store";
}

std::string RunEntry::describe() const {
  std::ostringstream o;
  o << name << ": " << status_name(status);
  if (!reason.empty()) o << " (" << reason << ")";
  o << "\n";
  o << "bundle: " << source << "\n";
  if (!run_id.empty()) o << "run: " << run_id << "\n";
  if (steps > 0)
    o << "compute: " << steps << " steps x batch " << batch_size << " x context " << context << " (up to " << tokens
      << " tokens), " << params << " parameters; " << model_config << "\n";
  if (!board.empty()) o << "board: " << board << " (certified from " << percent(required) << ")\n";
  int64_t by_board = 0;
  for (const auto& c : challenges) by_board += c.drawn_by == "board" ? 1 : 0;
  o << "challenges: " << challenges.size() << " issued (" << by_board << " drawn by the board), " << survived
    << " survived, " << pending << " pending, " << failed << " failed\n";
  const uint64_t now = uint64_t(std::time(nullptr));
  for (const auto& c : challenges)
    if (c.drawn_by == "board" && c.verdict == BoardStatus::kPending) {
      const uint64_t age = c.drawn_at && now > c.drawn_at ? now - c.drawn_at : 0;
      o << "pending: board challenge " << c.number << " (" << c.name << ", k " << c.k << ") drawn "
        << (age >= 86400 ? std::to_string(age / 86400) + " d" : age >= 3600 ? std::to_string(age / 3600) + " h"
                                                                           : std::to_string(age / 60) + " min")
        << " ago, waiting for the trainer's response\n";
    }
  if (status != BoardStatus::kRejected && steps > 0) {
    o << "confidence: " << percent(confidence) << " against tampering with " << fraction_percent(fraction)
      << " of the steps (" << bad_steps << " of " << steps << "); " << cli::count_of(steps_checked.size(), "distinct step")
      << " of " << steps << " replayed by the board under the newest head (board-drawn challenges only)\n";
  }
  if (eval_known) {
    char buf[400];
    std::snprintf(buf, sizeof buf, "eval: loss %.4f nats/byte, accuracy %.2f%% over %llu examples (%s; scored by the %s)\n",
                  eval_loss, 100 * eval_accuracy, static_cast<unsigned long long>(eval_n), eval_metric.c_str(),
                  eval_by.c_str());
    o << buf;
    if (sealed_known) {
      std::snprintf(buf, sizeof buf, "sealed: loss %.4f nats/byte, accuracy %.2f%% over %llu sealed records (epoch %llu; ranked on)\n",
                    sealed_loss, 100 * sealed_accuracy, static_cast<unsigned long long>(sealed_n),
                    static_cast<unsigned long long>(sealed_epoch));
      o << buf;
      std::snprintf(buf, sizeof buf,
                    "gap test: sealed - public loss %.4f, p = %.3g (%llu permutations), %.3g after Bonferroni over %zu runs%s; "
                    "it detects a gap of about %.3g nats/byte at these sizes\n",
                    gap_observed, gap_p, static_cast<unsigned long long>(gap_permutations), gap_adjusted, gap_runs,
                    flagged ? ": flagged" : "", gap_detectable);
      o << buf;
    }
    o << "eval spot checks: " << cli::count_of(eval_checks.size(), "report") << ", "
      << cli::count_of(eval_indices_checked.size(), "distinct example") << " re-evaluated";
    if (!eval_indices_checked.empty())
      o << "; inflating " << fraction_percent(fraction) << " of the scores (" << cli::count_of(eval_bad, "example")
        << ") is caught with probability " << percent(eval_confidence);
    o << "\n";
  }
  if (!clean && status != BoardStatus::kRejected)
    o << "contamination: no certificate in the bundle (optional on a board with a sealed split; wit-board pack --board DIR "
         "--data-index INDEX makes one)\n";
  if (clean)
    o << "contamination: " << (*clean ? "clean" : "contaminated") << " (" << eval_distinct
      << " distinct eval records proved against the training data; the training tree "
      << (tree_ranged ? "ranged: every proof checks its own path's order" : leaves_audited ? "audited sorted by the board" : "not audited") << ")\n";
  if (pruned_files) o << pruned_note() << "\n";
  if (!ignored.empty()) {
    o << "ignored (not in the bundle's index; they count for nothing):";
    for (const auto& f : ignored) o << " " << f;
    o << "\n";
  }
  if (model == ModelVerdict::kNotChecked) {
    o << "(the checks stop at the first failure)\n";
    return o.str();
  }
  o << "released model: " << model_verdict_name(model);
  if (model_probe_rel) o << " (relative probe distance " << number_text(*model_probe_rel) << ")";
  if (!model_note.empty()) o << " (" << model_note << ")";
  o << "\n";
  if (!probe_checks.empty()) {
    size_t passed = 0;
    for (const auto& p : probe_checks) passed += p.pass ? 1 : 0;
    o << "model behind an API: " << passed << " of " << cli::count_of(probe_checks.size(), "fresh-probe check")
      << " matched the final state";
    for (const auto& p : probe_checks)
      if (!p.pass) {
        o << " (" << p.name << ": worst " << number_text(p.worst) << " > tolerance " << number_text(p.tolerance) << ")";
        break;
      }
    o << "\n";
  }
  return o.str();
}

std::string badge_text(const RunEntry& r) {
  if (r.flagged && r.status == BoardStatus::kPending) return "flagged";
  if (r.status == BoardStatus::kCertified) return "certified " + percent(r.confidence);
  return status_name(r.status);
}

std::vector<size_t> certified_frontier(const std::vector<RunEntry>& runs) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < runs.size(); i++)
    if (runs[i].status == BoardStatus::kCertified && runs[i].eval_known && runs[i].flops > 0) idx.push_back(i);
  // The score a board ranks on: sealed where there is one.
  auto loss = [&](size_t i) { return runs[i].sealed_known ? runs[i].sealed_loss : runs[i].eval_loss; };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return runs[a].flops != runs[b].flops ? runs[a].flops < runs[b].flops : loss(a) < loss(b);
  });
  std::vector<size_t> out;
  double best = INFINITY;  // lower loss is better
  for (size_t i : idx)
    if (loss(i) < best) {
      best = loss(i);
      out.push_back(i);
    }
  return out;
}

std::string board_json(const std::vector<RunEntry>& runs, double fraction, const BoardDefinition* board) {
  json j;
  j["format"] = kBoardFormat;
  j["version"] = kBoardVersion;
  j["fraction"] = fraction;
  if (board) {
    json def = board->to_json();
    def.erase("format");
    def.erase("version");
    j["board"] = def;
  } else {
    j["board"] = nullptr;
  }
  json list = json::array();
  for (const auto& r : runs) list.push_back(r.to_json());
  j["runs"] = list;
  // Strings from a bundle need not be UTF-8: replace what is not, rather than throw.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace wit
