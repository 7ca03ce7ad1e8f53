// The typed replay report and calibration file (report.h, docs/replay.md).
#include "wit/run/report.h"

#include <cmath>

#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"

namespace wit {

using nlohmann::json;

namespace {

constexpr const char* kCal = "invalid calibration";
constexpr const char* kRep = "invalid replay report";

// A number or "inf" (the reports' spelling of an infinite distance).
double number_or_inf(const json& v, const std::string& what, const std::string& where) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string() && v.get<std::string>() == "inf") return INFINITY;
  jsonf::bad(kRep, what + " is not a number", where);
}

std::map<std::string, double> number_map(const json& j, const char* key, const std::string& where) {
  std::map<std::string, double> m;
  if (!j.contains(key)) return m;
  const json& o = j[key];
  if (!o.is_object()) jsonf::bad(kRep, std::string("field 'checks[].") + key + "' is not an object", where);
  for (const auto& [k, v] : o.items()) m[k] = number_or_inf(v, std::string(key) + "." + k, where);
  return m;
}

int64_t int_field(const json& j, const char* key, const char* kind, const std::string& where) {
  const json& v = jsonf::need(j, key, kind, where);
  if (!v.is_number_integer()) jsonf::bad(kind, std::string("field '") + key + "' is not an integer", where);
  return v.get<int64_t>();
}

double number_field(const json& j, const char* key, const char* kind, const std::string& where) {
  const json& v = jsonf::need(j, key, kind, where);
  if (!v.is_number()) jsonf::bad(kind, std::string("field '") + key + "' is not a number", where);
  return v.get<double>();
}

std::string string_field(const json& j, const char* key, const char* kind, const std::string& where) {
  const json& v = jsonf::need(j, key, kind, where);
  if (!v.is_string()) jsonf::bad(kind, std::string("field '") + key + "' is not a string", where);
  return v.get<std::string>();
}

// "" for null or absent; the string otherwise.
std::string optional_string(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return "";
  if (!j[key].is_string()) jsonf::bad(kRep, std::string("field '") + key + "' is not a string or null", where);
  return j[key].get<std::string>();
}

json number_map_json(const std::map<std::string, double>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[k] = report_number(v);
  return o;
}

json check_json(const ReportCheck& k) {
  json c = {{"kind", check_kind_name(k.kind)},
            {"step", k.step},
            {"pass", k.pass},
            {"failed", k.pass ? json(nullptr) : json(k.failed)},
            {"distances", number_map_json(k.distances)},
            {"thresholds", number_map_json(k.thresholds)},
            {"seconds", k.seconds}};
  if (k.kind == CheckKind::kSegment) c["segment"] = {{"from", k.segment_from}, {"to", k.segment_to}};
  if (!k.pass) c["reason"] = k.reason;
  if (!k.worst_tensors.empty()) {
    json w = json::object();
    for (const auto& [f, t] : k.worst_tensors)
      w[f] = {{"tensor", t.tensor}, {"floors", report_number(t.floors)}, {"threshold_floors", report_number(t.threshold_floors)}};
    c["worst_tensors"] = w;
  }
  if (!k.slack.empty()) {
    json w = json::object();
    for (const auto& [f, t] : k.slack)
      w[f] = {{"tensor", t.tensor}, {"floors", report_number(t.floors)}, {"threshold_floors", report_number(t.threshold_floors)}};
    c["slack"] = w;
  }
  return c;
}

// "worst_tensors" or "slack": field -> {tensor, floors, threshold_floors}.
std::map<std::string, WorstTensor> tensor_map(const json& j, const char* key, const std::string& where) {
  std::map<std::string, WorstTensor> out;
  if (!j.contains(key)) return out;
  const json& w = j[key];
  if (!w.is_object()) jsonf::bad(kRep, std::string("field '") + key + "' is not an object", where);
  for (const auto& [f, t] : w.items()) {
    if (!t.is_object()) jsonf::bad(kRep, std::string(key) + "." + f + " is not an object", where);
    WorstTensor x;
    x.tensor = string_field(t, "tensor", kRep, where);
    x.floors = number_or_inf(jsonf::need(t, "floors", kRep, where), std::string(key) + "." + f + ".floors", where);
    x.threshold_floors = number_or_inf(jsonf::need(t, "threshold_floors", kRep, where),
                                       std::string(key) + "." + f + ".threshold_floors", where);
    out[f] = x;
  }
  return out;
}

ReportCheck check_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) jsonf::bad(kRep, "a check is not an object", where);
  ReportCheck k;
  const std::string kind = j.contains("kind") ? string_field(j, "kind", kRep, where) : check_kind_name(CheckKind::kStep);
  if (kind == check_kind_name(CheckKind::kSegment)) k.kind = CheckKind::kSegment;
  else if (kind != check_kind_name(CheckKind::kStep)) jsonf::bad(kRep, "a check's kind is not \"step\" or \"segment\"", where);
  k.step = int_field(j, "step", kRep, where);
  if (k.kind == CheckKind::kSegment) {
    const json& g = jsonf::need(j, "segment", kRep, where);
    k.segment_from = int_field(g, "from", kRep, where);
    k.segment_to = int_field(g, "to", kRep, where);
    if (!(k.segment_from < k.step && k.step <= k.segment_to))
      jsonf::bad(kRep, "a segment check's step is not within its segment", where);
  }
  const json& pass = jsonf::need(j, "pass", kRep, where);
  if (!pass.is_boolean()) jsonf::bad(kRep, "field 'pass' is not a boolean", where);
  k.pass = pass.get<bool>();
  k.failed = optional_string(j, "failed", where);
  k.reason = optional_string(j, "reason", where);
  if (!k.pass && k.failed.empty()) jsonf::bad(kRep, "a failed check names no failed field", where);
  if (k.pass && !k.failed.empty()) jsonf::bad(kRep, "a passed check names a failed field", where);
  k.distances = number_map(j, "distances", where);
  k.thresholds = number_map(j, "thresholds", where);
  k.worst_tensors = tensor_map(j, "worst_tensors", where);
  k.slack = tensor_map(j, "slack", where);
  if (j.contains("seconds")) k.seconds = number_field(j, "seconds", kRep, where);
  return k;
}

}  // namespace

const char* check_kind_name(CheckKind k) { return k == CheckKind::kSegment ? "segment" : "step"; }

json report_number(double x) { return std::isfinite(x) ? json(x) : json("inf"); }

double Calibration::noise_of(const std::string& field) const {
  auto it = noise.find(field);
  return it == noise.end() ? 0.0 : it->second;
}

json Calibration::to_json() const {
  return {{"format", kCalibrationFormat}, {"version", kCalibrationVersion}, {"run_id", run_id}, {"threads", threads},
          {"steps", steps}, {"noise", noise}};
}

Calibration Calibration::from_json(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("format") || j["format"] != kCalibrationFormat)
    throw Error("not a wit calibration", where);
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int64_t>() != kCalibrationVersion)
    throw Error("unsupported calibration version " + (j.contains("version") ? j["version"].dump() : std::string("(none)")),
                where,
                "this wit reads version " + std::to_string(kCalibrationVersion) +
                    " (noise of whole states, in rounding floors): replay the challenge again with this wit");
  Calibration c;
  if (j.contains("run_id")) {
    c.run_id = string_field(j, "run_id", kCal, where);
    Hash32 h;  // "" (a placeholder) or a run id: 64 lowercase hex digits
    if (!c.run_id.empty() && (!Hash32::from_hex(c.run_id, h) || h.hex() != c.run_id))
      jsonf::bad(kCal, "field 'run_id' is not 64 lowercase hex digits", where);
  }
  if (j.contains("threads")) {
    for (const json& t : jsonf::array(j, "threads", kCal, where)) {
      if (!t.is_number_unsigned() || t.get<uint64_t>() > 1u << 16) jsonf::bad(kCal, "a thread count is not a small non-negative integer", where);
      c.threads.push_back(t.get<unsigned>());
    }
  }
  if (j.contains("steps")) {
    for (const json& s : jsonf::array(j, "steps", kCal, where)) {
      if (!s.is_number_integer()) jsonf::bad(kCal, "a step is not an integer", where);
      c.steps.push_back(s.get<int64_t>());
    }
  }
  if (!j.contains("noise") || !j["noise"].is_object()) throw Error("invalid calibration: missing noise", where);
  for (const char* f : kReplayFields) {
    if (j["noise"].contains(f) && !(j["noise"][f].is_number() && j["noise"][f].get<double>() >= 0))
      throw Error(std::string("invalid calibration: noise.") + f + " is not a non-negative number", where);
    c.noise[f] = j["noise"].contains(f) ? j["noise"][f].get<double>() : 0.0;
  }
  return c;
}

Calibration Calibration::load(const std::string& path) {
  const json j = jsonf::parse(read_file(path), kCal, path);
  return from_json(j, path);
}

bool WorstTensor::operator==(const WorstTensor& o) const {
  auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  return tensor == o.tensor && same(floors, o.floors) && same(threshold_floors, o.threshold_floors);
}

bool ReportCheck::operator==(const ReportCheck& o) const {
  return kind == o.kind && step == o.step && segment_from == o.segment_from && segment_to == o.segment_to &&
         pass == o.pass && failed == o.failed && reason == o.reason && distances == o.distances &&
         thresholds == o.thresholds && worst_tensors == o.worst_tensors && slack == o.slack && seconds == o.seconds;
}

ReplayReport ReplayReport::answering(const Challenge& c) {
  ReplayReport r;
  r.run_id = c.head.run_id;
  r.head_size = c.head.size;
  r.head_root = c.head.root;
  r.challenge_seed = c.seed;
  r.guarantee = c.guarantee;
  return r;
}

std::vector<int64_t> ReplayReport::step_checks() const {
  std::vector<int64_t> s;
  for (const ReportCheck& k : checks)
    if (k.kind == CheckKind::kStep) s.push_back(k.step);
  return s;
}

Problem ReplayReport::answer_problem(const Challenge& c) const {
  if (run_id != c.head.run_id) return std::string("is a report on another run");
  if (head_size != c.head.size || head_root != c.head.root) return std::string("is for another head than its challenge's");
  if (challenge_seed != c.seed) return std::string("answers another challenge (challenge seed differs)");
  return std::nullopt;
}

json ReplayReport::to_json() const {
  json checks_j = json::array();
  for (const ReportCheck& k : checks) checks_j.push_back(check_json(k));
  return {{"format", kReportFormat},
          {"version", kReportVersion},
          {"run_id", run_id.hex()},
          {"head", {{"size", head_size}, {"root", head_root.hex()}}},
          {"challenge_seed", challenge_seed.hex()},
          {"verdict", verdict_name(verdict)},
          {"reason", certified() ? json(nullptr) : json(reason)},
          {"guarantee",
           {{"words", guarantee.words()}, {"k", guarantee.k}, {"steps", guarantee.steps},
            {"fraction", guarantee.fraction}, {"detection", guarantee.detection}}},
          {"mode", mode},
          {"configuration", configuration},
          {"calibration", calibration.to_json()},
          {"margin", margin},
          {"checks", checks_j},
          {"cost", {{"replay_seconds", replay_seconds}, {"total_seconds", total_seconds}}}};
}

ReplayReport ReplayReport::from_json(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("format") || j["format"] != kReportFormat) throw Error("not a replay report", where);
  if (!j.contains("version") || !j["version"].is_number_integer()) throw Error("not a replay report (no version)", where);
  const int64_t version = j["version"].get<int64_t>();
  if (version != kReportVersion && version != 2)
    throw Error("unsupported report version " + j["version"].dump() + " (this wit reads version " +
                    std::to_string(kReportVersion) + ": replay the challenge again with this wit)",
                where);
  ReplayReport r;
  r.run_id = jsonf::hash(j, "run_id", kRep, where);
  const json& head = jsonf::need(j, "head", kRep, where);
  if (!head.is_object()) jsonf::bad(kRep, "field 'head' is not an object", where);
  r.head_size = jsonf::u64(head, "size", kRep, where);
  r.head_root = jsonf::hash(head, "root", kRep, where);
  r.challenge_seed = jsonf::hash(j, "challenge_seed", kRep, where);
  r.verdict = parse_verdict(string_field(j, "verdict", kRep, where), kRep, where);
  r.reason = optional_string(j, "reason", where);
  if (!r.certified() && r.reason.empty()) jsonf::bad(kRep, "a rejected report gives no reason", where);
  if (j.contains("guarantee")) {
    const json& g = j["guarantee"];
    const int64_t steps = int_field(g, "steps", kRep, where), k = int_field(g, "k", kRep, where);
    const double f = number_field(g, "fraction", kRep, where);
    if (!(steps >= 1 && k >= 1 && k <= steps && f > 0 && f <= 1))
      jsonf::bad(kRep, "field 'guarantee' is not a guarantee (1 <= k <= steps, 0 < fraction <= 1)", where);
    r.guarantee = make_guarantee(steps, k, f);
  }
  if (j.contains("calibration")) {
    // The placeholder of a bundle rejected before calibrating is a valid calibration too.
    r.calibration = Calibration::from_json(j["calibration"], where);
  }
  if (j.contains("margin")) r.margin = number_field(j, "margin", kRep, where);
  if (version == 2) {
    r.mode = "tolerant";  // before modes, every verifier was tolerant
  } else {
    r.mode = string_field(j, "mode", kRep, where);
    if (r.mode != "exact" && r.mode != "tolerant") jsonf::bad(kRep, "field 'mode' is not \"exact\" or \"tolerant\"", where);
    const json& cfg = jsonf::need(j, "configuration", kRep, where);
    if (!cfg.is_null() && !cfg.is_object()) jsonf::bad(kRep, "field 'configuration' is not an object or null", where);
    r.configuration = cfg;
  }
  const json& checks = jsonf::array(j, "checks", kRep, where);
  if (checks.size() > kMaxReportChecks) jsonf::bad(kRep, "too many checks", where);
  for (const json& k : checks) r.checks.push_back(check_from_json(k, where));
  if (r.certified())
    for (const ReportCheck& k : r.checks)
      if (!k.pass) jsonf::bad(kRep, "a certified report with a failed check (step " + std::to_string(k.step) + ")", where);
  if (j.contains("cost")) {
    const json& cost = j["cost"];
    if (!cost.is_object()) jsonf::bad(kRep, "field 'cost' is not an object", where);
    if (cost.contains("replay_seconds")) r.replay_seconds = number_field(cost, "replay_seconds", kRep, where);
    if (cost.contains("total_seconds")) r.total_seconds = number_field(cost, "total_seconds", kRep, where);
  }
  return r;
}

ReplayReport ReplayReport::parse(const std::string& text, const std::string& where) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw Error("not a replay report (not valid json)", where);
  return from_json(j, where);
}

}  // namespace wit
