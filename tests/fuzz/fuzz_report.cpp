// Fuzz target for the replay report and calibration parsers (report.h,
// docs/replay.md): every input is rejected with a wit::Error or accepted; an
// accepted document survives to_json() and a re-parse unchanged, and an
// accepted certified report has every check passed. Verdict letters
// (outcome.h): one for the report parser, then one for the calibration parser.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/run/report.h"
#include "json_round_trip.h"
#include "outcome.h"

namespace {

constexpr const char* kTarget = "fuzz_report";
[[noreturn]] void broken(const char* what, const nlohmann::json& doc) { wit_fuzz::broken(kTarget, what, doc); }
template <class T>
void round_trip(const nlohmann::json& j, const T& parsed) {
  wit_fuzz::round_trip(kTarget, j, parsed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return wit_fuzz::note('j'), 0;
  try {
    const wit::ReplayReport r = wit::ReplayReport::from_json(j, "fuzz");
    if (r.certified())
      for (const auto& k : r.checks)
        if (!k.pass) broken("accepted a certified report with a failed check", j);
    round_trip(j, r);
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
  try {
    round_trip(j, wit::Calibration::from_json(j, "fuzz"));
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
  return 0;
}
