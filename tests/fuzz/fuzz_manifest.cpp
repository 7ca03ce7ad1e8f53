// Fuzz target for the run manifest parser (Manifest::from_json,
// docs/manifest.md, and its model section, docs/model.md: the built-in GPT or
// a TorchScript model with its parameters, buffers, init and decay rules):
// every input is rejected with a wit::Error or accepted, an accepted manifest
// survives to_json() and a re-parse unchanged, and its model's parameters
// (each covered by the rules) and their count can be listed.
// Verdicts (outcome.h): j, r, a.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/run/manifest.h"
#include "wit/run/model_spec.h"

#include "json_round_trip.h"
#include "outcome.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return wit_fuzz::note('j'), 0;
  wit::Manifest m;
  try {
    m = wit::Manifest::from_json(j, "fuzz");
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
    return 0;  // the expected rejection
  }
  wit_fuzz::round_trip("fuzz_manifest", j, m);
  uint64_t n = 0;
  for (const auto& p : wit::model_params(m.model)) n += p.numel();
  if (n != wit::param_count(m.model)) wit_fuzz::broken("fuzz_manifest", "param_count disagrees with model_params", j);
  wit_fuzz::note('a');
  return 0;
}
