// Fingerprints, their JSON form and distances; the run's probe set.
#include "wit/model/fingerprint.h"

#include <algorithm>

#include "wit/base/error.h"
#include "wit/base/io.h"
#include "wit/base/json_fields.h"
#include "wit/run/order.h"
#include "wit/run/sketch.h"

namespace wit {

using nlohmann::json;

json ProbeSet::to_json(const Manifest& mf) const {
  json recs = json::array();
  for (size_t i = 0; i < indices.size(); i++)
    recs.push_back({{"index", indices[i]}, {"record_hex", to_hex(ByteView(records[i]))}, {"proof", inclusion_body(proofs[i])}});
  return {{"format", kProbeSetFormat}, {"version", 1}, {"data_root", mf.data_root.hex()}, {"records", recs}};
}

ProbeSet ProbeSet::load(const std::string& path, const Manifest& mf, const std::optional<Bytes>& seed) {
  const json j = jsonf::parse(read_file(path), "invalid probe set", path);
  return from_json(j, mf, seed, path);
}

ProbeSet ProbeSet::from_json(const json& j, const Manifest& mf, const std::optional<Bytes>& seed,
                             const std::string& path) {
  if (!j.is_object() || j.value("format", std::string()) != kProbeSetFormat)
    throw Error("not a wit probe set", path);
  if (j.value("version", 0) != 1) throw Error("unsupported probe set version", path);
  if (!j.contains("data_root") || !j["data_root"].is_string()) throw Error("invalid probe set: missing data_root", path);
  if (j["data_root"].get<std::string>() != mf.data_root.hex())
    throw Error("probe set is for another data commitment (its data_root is not the run's)", path);
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
        verify_data_inclusion(p, mf.data_root) != ProofError::kOk)
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

}  // namespace wit
