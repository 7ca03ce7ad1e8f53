// Fingerprint documents and distances (no LibTorch); computing one is lib/torch's.
#include "wit/run/fingerprint_doc.h"

#include <algorithm>

#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/run/sketch.h"

namespace wit {

using nlohmann::json;

namespace {

std::vector<float> floats(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_array()) throw Error(std::string("invalid fingerprint: missing '") + key + "'", where);
  std::vector<float> out;
  for (const auto& x : j[key]) {
    if (!x.is_number()) throw Error(std::string("invalid fingerprint: '") + key + "' holds a non-number", where);
    out.push_back(x.get<float>());
  }
  return out;
}

Hash32 hash_of(const json& j, const char* key, const std::string& where) {
  Hash32 h;
  if (!j.contains(key) || !j[key].is_string() || !Hash32::from_hex(j[key].get<std::string>(), h))
    throw Error(std::string("invalid fingerprint: '") + key + "' is not 64 hex digits", where);
  return h;
}

}  // namespace

json Fingerprint::to_json() const {
  json j = {{"format", kFingerprintFormat}, {"version", 1}, {"run_id", run_id.hex()},
            {"state_root", state_root ? json(state_root->hex()) : json(nullptr)},
            {"step", step}, {"sketch", {{"w", w}, {"m", m}, {"v", v}}},
            {"probe", probe ? json(*probe) : json(nullptr)}};
  return j;
}

Fingerprint Fingerprint::from_json(const json& j, const std::string& where) {
  if (!j.is_object() || j.value("format", std::string()) != kFingerprintFormat)
    throw Error("not a wit fingerprint", where);
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int64_t>() != 1)
    throw Error("unsupported fingerprint version " + (j.contains("version") ? j["version"].dump() : std::string("(none)")), where);
  Fingerprint f;
  f.run_id = hash_of(j, "run_id", where);
  if (j.contains("state_root") && !j["state_root"].is_null()) f.state_root = hash_of(j, "state_root", where);
  if (j.contains("step")) {
    if (!j["step"].is_number_integer()) throw Error("invalid fingerprint: 'step' is not an integer", where);
    f.step = j["step"].get<int64_t>();
  }
  if (!j.contains("sketch") || !j["sketch"].is_object()) throw Error("invalid fingerprint: missing 'sketch'", where);
  f.w = floats(j["sketch"], "w", where);
  f.m = floats(j["sketch"], "m", where);
  f.v = floats(j["sketch"], "v", where);
  if (j.contains("probe") && !j["probe"].is_null()) f.probe = floats(j, "probe", where);
  return f;
}

Fingerprint Fingerprint::load(const std::string& path) {
  const json j = jsonf::parse(read_file(path), "invalid fingerprint", path);
  return from_json(j, path);
}

json FingerprintDistance::to_json() const {
  json j = {{"sketch_l2", sketch}, {"sketch_rel", sketch_rel}};
  j["probe_l2"] = probe ? json(*probe) : json(nullptr);
  j["probe_rel"] = probe_rel ? json(*probe_rel) : json(nullptr);
  return j;
}

FingerprintDistance fingerprint_distance(const Fingerprint& a, const Fingerprint& b) {
  if (a.w.size() != b.w.size()) throw Error("fingerprints have different sketch sizes", "distance");
  FingerprintDistance d;
  d.sketch = l2_distance(a.w, b.w);
  d.sketch_rel = d.sketch / std::max({l2_norm(a.w), l2_norm(b.w), 1e-30});
  if (a.probe && b.probe) {
    if (a.probe->size() != b.probe->size()) throw Error("fingerprints have different probe sizes", "distance");
    d.probe = l2_distance(*a.probe, *b.probe);
    d.probe_rel = *d.probe / std::max({l2_norm(*a.probe), l2_norm(*b.probe), 1e-30});
  }
  return d;
}

}  // namespace wit
