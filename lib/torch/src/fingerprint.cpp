// Fingerprints, their JSON form and distances; the run's probe set.
#include "wit/fingerprint.h"

#include <algorithm>

#include "wit/error.h"
#include "wit/io.h"
#include "wit/order.h"
#include "wit/sketch.h"

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
  if (j.value("version", 0) != 1) throw Error("unsupported fingerprint version " + j.value("version", json(0)).dump(), where);
  Fingerprint f;
  f.run_id = hash_of(j, "run_id", where);
  if (j.contains("state_root") && !j["state_root"].is_null()) f.state_root = hash_of(j, "state_root", where);
  f.step = j.value("step", int64_t(-1));
  if (!j.contains("sketch") || !j["sketch"].is_object()) throw Error("invalid fingerprint: missing 'sketch'", where);
  f.w = floats(j["sketch"], "w", where);
  f.m = floats(j["sketch"], "m", where);
  f.v = floats(j["sketch"], "v", where);
  if (j.contains("probe") && !j["probe"].is_null()) f.probe = floats(j, "probe", where);
  return f;
}

Fingerprint Fingerprint::load(const std::string& path) {
  json j = json::parse(read_file(path), nullptr, false);
  if (j.is_discarded()) throw Error("invalid fingerprint: not valid json", path);
  return from_json(j, path);
}

json ProbeSet::to_json(const Manifest& mf) const {
  json recs = json::array();
  for (size_t i = 0; i < indices.size(); i++)
    recs.push_back({{"index", indices[i]}, {"record_hex", to_hex(ByteView(records[i]))}, {"proof", inclusion_body(proofs[i])}});
  return {{"format", kProbeSetFormat}, {"version", 1}, {"data_root", mf.data_root.hex()}, {"records", recs}};
}

ProbeSet ProbeSet::load(const std::string& path, const Manifest& mf, const std::optional<Bytes>& seed) {
  json j = json::parse(read_file(path), nullptr, false);
  if (j.is_discarded()) throw Error("invalid probe set: not valid json", path);
  return from_json(j, mf, seed, path);
}

ProbeSet ProbeSet::from_json(const json& j, const Manifest& mf, const std::optional<Bytes>& seed,
                             const std::string& path) {
  if (!j.is_object() || j.value("format", std::string()) != kProbeSetFormat)
    throw Error("not a wit probe set", path);
  if (j.value("version", 0) != 1) throw Error("unsupported probe set version", path);
  if (!j.contains("records") || !j["records"].is_array()) throw Error("invalid probe set: missing records", path);
  ProbeSet ps;
  for (const auto& r : j["records"]) {
    if (!r.is_object() || !r.contains("index") || !r["index"].is_number_unsigned() || !r.contains("record_hex") ||
        !r["record_hex"].is_string() || !r.contains("proof"))
      throw Error("invalid probe set: bad record entry", path);
    Bytes b;
    if (!from_hex(r["record_hex"].get<std::string>(), b)) throw Error("invalid probe set: record_hex is not hex", path);
    InclusionProof p = parse_inclusion_body(r["proof"], path);
    const uint64_t index = r["index"].get<uint64_t>();
    if (p.index != index || p.size != mf.data_n || p.leaf != record_leaf(ByteView(b)) ||
        verify_inclusion(kBlake2bTree, p.index, p.size, p.leaf, p.path, mf.data_root) != ProofError::kOk)
      throw Error("probe record " + std::to_string(index) + " is not in the run's data commitment", path);
    ps.indices.push_back(index);
    ps.records.emplace_back(b.begin(), b.end());
    ps.proofs.push_back(std::move(p));
  }
  if (seed && ps.indices != probe_indices(mf.run_id(), ByteView(*seed), mf.data_n, uint64_t(mf.fp.probe_records)))
    throw Error("probe records are not the ones the revealed seed chooses", path);
  return ps;
}

Fingerprint fingerprint_state(const Manifest& mf, const TrainState& st, const ProbeSet* probe) {
  Fingerprint f;
  f.run_id = mf.run_id();
  TrainState::Sketches sk = st.sketches(mf);
  f.w = std::move(sk.w);
  if (!st.params_only()) {
    f.m = std::move(sk.m);
    f.v = std::move(sk.v);
    f.step = st.step();
    f.state_root = st.root();
  }
  if (probe) f.probe = probe_fingerprint(mf, st, probe->records);
  return f;
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
