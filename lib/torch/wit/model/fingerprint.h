// Fingerprints of a checkpoint or released model: the weight sketch (and the
// optimizer-moment sketches when the state has them) and the probe
// fingerprint, computed with a run's manifest (the document and distances are
// in fingerprint_doc.h); and the run's probe set (RUN/probe.json), which binds
// probe records to the data.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/run/fingerprint_doc.h"
#include "wit/run/manifest.h"
#include "wit/proofs/proofs.h"
#include "wit/model/state.h"

namespace wit {

inline constexpr const char* kProbeSetFormat = "wit.probe-set";

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

}  // namespace wit
