// Binding a released model to a run: the exact binding of a weights file and
// the probe check's draw, model-command format and report (docs/release.md).
#include "wit/eval/release.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "wit/run/challenge.h"
#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/hash/rng.h"
#include "wit/hash/tags.h"

namespace wit {

using nlohmann::json;

LoggedFinal final_logged_state(const WitnessLog& log, const std::string& where) {
  for (uint64_t i = log.size(); i-- > 1;) {
    const LogEntry e = log.entry(i);
    if (!e.genesis) return {e.s.step, e.s.state_root};
  }
  throw Error("the run's log has no training steps", where);
}

json ReleaseBinding::to_json() const {
  return {{"match", match},
          {"step", step},
          {"state_root", state_root.hex()},
          {"params_root", params_root.hex()},
          {"optim_root", optim_root.hex()},
          {"reason", reason}};
}

ReleaseBinding ReleaseBinding::from_json(const json& j, const std::string& where) {
  static const char* kKind = "invalid model binding";
  jsonf::only_keys(j, {"match", "step", "state_root", "params_root", "optim_root", "reason", "probe"}, kKind, where);
  ReleaseBinding b;
  const json& m = jsonf::need(j, "match", kKind, where);
  if (!m.is_boolean()) jsonf::bad(kKind, "match is not a boolean", where);
  b.match = m.get<bool>();
  b.step = jsonf::u64(j, "step", kKind, where);
  b.state_root = jsonf::hash(j, "state_root", kKind, where);
  b.params_root = jsonf::hash(j, "params_root", kKind, where);
  b.optim_root = jsonf::hash(j, "optim_root", kKind, where);
  const json& r = jsonf::need(j, "reason", kKind, where);
  if (!r.is_string()) jsonf::bad(kKind, "reason is not a string", where);
  b.reason = r.get<std::string>();
  if (b.match != (join_state_root(b.params_root, b.optim_root) == b.state_root))
    jsonf::bad(kKind, "match is not whether H(params_root || optim_root) is state_root", where);
  if (b.match != b.reason.empty()) jsonf::bad(kKind, "a reason is given iff it does not match", where);
  // The probe distance wit-sketch match --json adds (information only): null, or a step and two finite, non-negative numbers.
  if (j.contains("probe") && !j["probe"].is_null()) {
    const json& p = j["probe"];
    if (!p.is_object()) jsonf::bad(kKind, "probe is not an object", where);
    jsonf::only_keys(p, {"step", "probe_rel", "tolerance"}, kKind, where);
    const uint64_t ps = jsonf::u64(p, "step", kKind, where);
    if (ps > b.step) jsonf::bad(kKind, "probe.step is after the binding's step", where);
    for (const char* k : {"probe_rel", "tolerance"}) {
      const json& v = jsonf::need(p, k, kKind, where);
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
        jsonf::bad(kKind, std::string("probe.") + k + " is not a finite number >= 0", where);
    }
  }
  return b;
}

Problem binding_problem(const ReleaseBinding& b, const LoggedFinal& fin) {
  if (b.step != fin.step || b.state_root != fin.root) return "the binding is not to the run's final state";
  if (!b.match) return b.reason;
  return std::nullopt;
}

ReleaseBinding bind_release(const std::vector<TensorView>& file, const LoggedFinal& fin, const Hash32& optim_root,
                            const NamedLeaves* final_params) {
  std::vector<TensorView> params;
  for (const auto& t : file)
    if (is_param_tensor(t.name)) params.push_back(t);
  NamedLeaves leaves = tensor_leaves(params);
  ReleaseBinding b;
  b.step = fin.step;
  b.state_root = fin.root;
  b.optim_root = optim_root;
  b.params_root = state_root_of_leaves(leaves).params;
  b.match = join_state_root(b.params_root, optim_root) == fin.root;
  if (b.match) return b;
  const std::string at = " (step " + std::to_string(fin.step) + ")";
  if (final_params) {
    std::map<std::string, Hash32> want(final_params->begin(), final_params->end());
    for (const auto& [name, leaf] : leaves) {  // tensor_leaves sorts by name
      auto it = want.find(name);
      if (it == want.end()) {
        b.reason = "the final state has no tensor '" + name + "'";
        return b;
      }
      if (it->second != leaf) {
        b.reason = "tensor '" + name + "' is not the final state's" + at;
        return b;
      }
      want.erase(it);
    }
    if (!want.empty()) {
      b.reason = "the file lacks the final state's tensor '" + want.begin()->first + "'";
      return b;
    }
  }
  b.reason = "H(parameters root || optimizer root) is not the state root the log has at its final step" + at;
  return b;
}

// ---------------------------------------------------------------- probe check

ProbeDraw draw_probe_inputs(const Hash32& run_id, const Hash32& nonce, uint64_t data_n, uint64_t records,
                            uint64_t random, uint64_t max_len) {
  if (records + random < 1 || records + random > kMaxProbeInputs)
    throw Error("the probe check needs 1 to " + std::to_string(kMaxProbeInputs) + " inputs",
                std::to_string(records + random));
  if (records > 0 && data_n < 1) throw Error("the run's data is empty", "probe check");
  if (max_len < 1) throw Error("the model's context is too short for a probe check", "probe check");
  ChaChaStream s(derive_key(tags::kProbeCheck, {ByteView(run_id.data(), 32), ByteView(nonce.data(), 32)}));
  ProbeDraw d;
  for (uint64_t i = 0; i < records; i++) d.indices.push_back(s.uniform(data_n));
  d.random = random;
  for (uint64_t i = 0; i < random; i++) {
    std::string t(size_t(1 + s.uniform(max_len)), '\0');
    s.fill(reinterpret_cast<uint8_t*>(t.data()), t.size());
    d.random_texts.push_back(std::move(t));
  }
  return d;
}

std::string model_requests(const std::vector<std::string>& texts) {
  std::string out;
  for (size_t i = 0; i < texts.size(); i++)
    out += json{{"id", i}, {"text_hex", to_hex(ByteView(texts[i]))}}.dump() + "\n";
  return out;
}

namespace {

// Calls f(line_number, parsed object) for every non-empty line.
template <class F>
void each_json_line(std::string_view text, const std::string& where, const char* what, F&& f) {
  size_t pos = 0, line = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(pos, end - pos);
    pos = end + 1;
    line++;
    if (l.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    json j = json::parse(l.begin(), l.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw Error(std::string(what) + " line " + std::to_string(line) + " is not a JSON object", where);
    if (!j.contains("id") || !j["id"].is_number_unsigned())
      throw Error(std::string(what) + " line " + std::to_string(line) + " has no unsigned \"id\"", where);
    f(line, j);
  }
}

}  // namespace

std::vector<std::string> parse_model_requests(std::string_view text, const std::string& where) {
  std::vector<std::string> out;
  each_json_line(text, where, "request", [&](size_t line, const json& j) {
    if (j["id"].get<uint64_t>() != out.size())
      throw Error("request line " + std::to_string(line) + " has id " + j["id"].dump() + ", expected " +
                      std::to_string(out.size()),
                  where);
    Bytes b;
    if (!j.contains("text_hex") || !j["text_hex"].is_string() || !from_hex(j["text_hex"].get<std::string>(), b))
      throw Error("request line " + std::to_string(line) + " has no hex \"text_hex\"", where);
    if (out.size() >= kMaxProbeInputs) throw Error("more than " + std::to_string(kMaxProbeInputs) + " requests", where);
    out.emplace_back(b.begin(), b.end());
  });
  return out;
}

std::vector<std::vector<double>> parse_model_answers(std::string_view text, const std::vector<size_t>& lengths,
                                                     const std::string& where) {
  std::vector<std::vector<double>> out(lengths.size());
  std::vector<bool> seen(lengths.size(), false);
  each_json_line(text, where, "answer", [&](size_t line, const json& j) {
    const std::string at = "answer line " + std::to_string(line);
    const uint64_t id = j["id"].get<uint64_t>();
    if (id >= lengths.size()) throw Error(at + " has id " + std::to_string(id) + ", not one of the requests'", where);
    if (seen[id]) throw Error(at + " repeats id " + std::to_string(id), where);
    if (!j.contains("logp") || !j["logp"].is_array()) throw Error(at + " has no \"logp\" array", where);
    const json& a = j["logp"];
    if (a.size() != lengths[id] + 1)
      throw Error(at + " has " + std::to_string(a.size()) + " log-probabilities, expected " +
                      std::to_string(lengths[id] + 1) + " (each byte, then the end of text)",
                  where);
    std::vector<double> v;
    v.reserve(a.size());
    for (const auto& x : a) {
      if (!x.is_number()) throw Error(at + " has a log-probability that is not a number", where);
      const double d = x.get<double>();
      if (!std::isfinite(d) || d > 0) throw Error(at + " has a log-probability that is not finite and <= 0", where);
      v.push_back(d);
    }
    seen[id] = true;
    out[id] = std::move(v);
  });
  for (size_t i = 0; i < seen.size(); i++)
    if (!seen[i]) throw Error("no answer for id " + std::to_string(i), where);
  return out;
}

std::string model_answer(uint64_t id, const std::vector<float>& logp) {
  return json{{"id", id}, {"logp", logp}}.dump() + "\n";
}

double max_abs_difference(const std::vector<double>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); i++) m = std::max(m, std::fabs(a[i] - double(b[i])));
  if (a.size() != b.size()) m = INFINITY;
  return m;
}

const char* match_name(bool match) { return match ? "match" : "no match"; }

bool ProbeCheckReport::pass() const { return first_failure() < 0 && !worst.empty(); }

int64_t ProbeCheckReport::first_failure() const {
  for (size_t i = 0; i < worst.size(); i++)
    if (!(worst[i] <= tolerance)) return int64_t(i);
  return -1;
}

std::string ProbeCheckReport::guarantee() const {
  const uint64_t n = records + random;
  char tol[32];
  std::snprintf(tol, sizeof tol, "%.3g", tolerance);
  const double p = 1 - std::pow(1 - fraction, double(n));
  return "a model whose per-token log-probabilities differ from the run's final model (step " + std::to_string(step) +
         ") by more than " + tol + " nats on at least " + fraction_percent(fraction) +
         " of such inputs (committed records and random byte strings drawn by the nonce) fails these " +
         std::to_string(n) + " fresh probes with probability at least " + percent(p) +
         "; this binds the answers given during the check, not what the service answers at other times";
}

json ProbeCheckReport::to_json() const {
  const int64_t f = first_failure();
  return {{"format", kProbeCheckFormat},
          {"version", 1},
          {"run_id", run_id.hex()},
          {"nonce", nonce.hex()},
          {"step", step},
          {"state_root", state_root.hex()},
          {"records", records},
          {"random", random},
          {"model_cmd", model_cmd},
          {"noise", noise},
          {"floor", floor},
          {"margin", margin},
          {"tolerance", tolerance},
          {"differences", worst},
          {"worst", worst.empty() ? 0.0 : *std::max_element(worst.begin(), worst.end())},
          {"first_failure", f},
          {"failures", std::count_if(worst.begin(), worst.end(), [&](double w) { return !(w <= tolerance); })},
          {"verdict", match_name(pass())},
          {"fraction", fraction},
          {"guarantee", guarantee()}};
}

ProbeCheckReport ProbeCheckReport::from_json(const json& j, const std::string& where) {
  // Reads its fields as ReleaseBinding::from_json does theirs: alike by shape (field readers), on purpose.
  static const char* kKind = "invalid probe check";
  jsonf::only_keys(j, {"format", "version", "run_id", "nonce", "step", "state_root", "records", "random", "model_cmd",
                       "noise", "floor", "margin", "tolerance", "differences", "worst", "first_failure", "failures",
                       "verdict", "fraction", "guarantee"},
                   kKind, where);
  if (jsonf::need(j, "format", kKind, where) != kProbeCheckFormat) jsonf::bad(kKind, "not a wit probe check", where);
  if (jsonf::need(j, "version", kKind, where) != 1) jsonf::bad(kKind, "unsupported version", where);
  ProbeCheckReport r;
  r.run_id = jsonf::hash(j, "run_id", kKind, where);
  r.nonce = jsonf::hash(j, "nonce", kKind, where);
  r.state_root = jsonf::hash(j, "state_root", kKind, where);
  r.step = jsonf::u64(j, "step", kKind, where);
  r.records = jsonf::u64(j, "records", kKind, where);
  r.random = jsonf::u64(j, "random", kKind, where);
  const json& cmd = jsonf::need(j, "model_cmd", kKind, where);
  if (!cmd.is_string()) jsonf::bad(kKind, "model_cmd is not a string", where);
  r.model_cmd = cmd.get<std::string>();
  auto num = [&](const char* key) {
    const json& x = jsonf::need(j, key, kKind, where);
    if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < 0)
      jsonf::bad(kKind, std::string(key) + " is not a finite number >= 0", where);
    return x.get<double>();
  };
  r.noise = num("noise");
  r.floor = num("floor");
  r.margin = num("margin");
  r.tolerance = num("tolerance");
  r.fraction = num("fraction");
  if (r.records + r.random < 1 || r.records + r.random > kMaxProbeInputs)
    jsonf::bad(kKind, "records + random is not 1 to " + std::to_string(kMaxProbeInputs), where);
  if (!(r.floor > 0) || !(r.margin >= 1) || !(r.fraction > 0 && r.fraction <= 1))
    jsonf::bad(kKind, "floor, margin or fraction out of range", where);
  if (r.tolerance != std::max(r.floor, r.margin * r.noise))
    jsonf::bad(kKind, "the tolerance is not max(floor, margin x noise)", where);
  const json& d = jsonf::need(j, "differences", kKind, where);
  if (!d.is_array() || d.size() != r.records + r.random)
    jsonf::bad(kKind, "differences is not an array of records + random numbers", where);
  for (const auto& x : d) {
    if (!x.is_number() || !(x.get<double>() >= 0)) jsonf::bad(kKind, "a difference is not a number >= 0", where);
    r.worst.push_back(x.get<double>());
  }
  const json again = r.to_json();
  for (const char* key : {"worst", "first_failure", "failures", "verdict", "guarantee"})
    if (jsonf::need(j, key, kKind, where) != again[key])
      jsonf::bad(kKind, std::string("'") + key + "' is not what the differences give", where);
  return r;
}

ProbeCheckReport ProbeCheckReport::load(const std::string& path) {
  const std::string text = read_file(path);
  const std::string where = path == "-" ? "stdin" : path;
  const json j = jsonf::parse(text, "invalid probe check", where);
  return from_json(j, where);
}

}  // namespace wit
