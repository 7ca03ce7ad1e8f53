// Fingerprints of a checkpoint or released model: the weight sketch (and the
// optimizer-moment sketches when the state has them) and the probe
// fingerprint, computed with a run's manifest; distances between two; and the
// run's probe set (RUN/probe.json), which binds probe records to the data.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/manifest.h"
#include "wit/proofs.h"
#include "wit/state.h"

namespace wit {

inline constexpr const char* kFingerprintFormat = "wit.fingerprint";
inline constexpr const char* kProbeSetFormat = "wit.probe-set";

struct Fingerprint {
  Hash32 run_id;
  std::optional<Hash32> state_root;  // checkpoint root, when the file is a full state
  int64_t step = -1;                 // -1 for a released model without a step
  std::vector<float> w, m, v;        // m and v empty for a released model
  std::optional<std::vector<float>> probe;

  nlohmann::json to_json() const;
  static Fingerprint from_json(const nlohmann::json& j, const std::string& where);
  static Fingerprint load(const std::string& path);
};

// The probe records of a run, each with its inclusion proof in the data commitment.
struct ProbeSet {
  std::vector<uint64_t> indices;
  BatchRecords records;
  std::vector<InclusionProof> proofs;
  nlohmann::json to_json(const Manifest& mf) const;
  // Parses and checks every record against the manifest's data root (and,
  // given the revealed seed, that the indices are the ones the seed chooses).
  static ProbeSet load(const std::string& path, const Manifest& mf, const std::optional<Bytes>& seed);
  static ProbeSet from_json(const nlohmann::json& j, const Manifest& mf, const std::optional<Bytes>& seed,
                            const std::string& where);
};

Fingerprint fingerprint_state(const Manifest& mf, const TrainState& st, const ProbeSet* probe);

struct FingerprintDistance {
  double sketch = 0, sketch_rel = 0;  // L2 and L2 / max(|a|, |b|)
  std::optional<double> probe, probe_rel;
  nlohmann::json to_json() const;
};
FingerprintDistance fingerprint_distance(const Fingerprint& a, const Fingerprint& b);

}  // namespace wit
