// Fuzz target for the recorded-configuration parser (run_config.h,
// docs/manifest.md "The recorded configuration"): every input is rejected
// with a wit::Error or accepted; an accepted configuration survives
// to_json() and a re-parse unchanged, and what goes into an environment
// variable holds no '=' or control character. Verdict letter (outcome.h): one.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/run/run_config.h"
#include "json_round_trip.h"
#include "outcome.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return wit_fuzz::note('j'), 0;
  try {
    const wit::RunConfig c = wit::RunConfig::from_json(j, "fuzz");
    wit_fuzz::round_trip("fuzz_run_config", j, c);
    for (const std::string* s : {&c.blas_core, &c.onednn_isa, &c.cpu_capability})
      for (char ch : *s)
        if (ch == '=' || static_cast<unsigned char>(ch) < 0x20) wit_fuzz::broken("fuzz_run_config", "accepted '=' or a control character", j);
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
  return 0;
}
