// Fingerprint documents (wit-sketch fingerprint's JSON) and the distance
// between two, without LibTorch: what a board needs to tell whether a released
// model matches a run's final probe fingerprint. Computing a fingerprint from
// a checkpoint needs the model: lib/torch, wit/model/fingerprint.h.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wit/base/bytes.h"

namespace wit {

inline constexpr const char* kFingerprintFormat = "wit.fingerprint";
// Largest relative probe distance at which a released model counts as the
// run's final model (wit-sketch match's default --tolerance).
inline constexpr double kProbeMatchTolerance = 1e-3;

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

struct FingerprintDistance {
  double sketch = 0, sketch_rel = 0;  // L2 and L2 / max(|a|, |b|)
  std::optional<double> probe, probe_rel;
  nlohmann::json to_json() const;
};
FingerprintDistance fingerprint_distance(const Fingerprint& a, const Fingerprint& b);

}  // namespace wit
