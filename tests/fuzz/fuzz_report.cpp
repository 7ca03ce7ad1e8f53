// Fuzz target for the replay report and calibration parsers (report.h,
// docs/replay.md): every input is rejected with a wit::Error or accepted; an
// accepted document survives to_json() and a re-parse unchanged, and an
// accepted certified report has every check passed.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "wit/error.h"
#include "wit/report.h"

namespace {

[[noreturn]] void broken(const char* what, const nlohmann::json& doc) {
  std::fprintf(stderr, "fuzz_report: %s:\n%s\n", what, doc.dump(2).c_str());
  std::abort();
}

template <class T>
void round_trip(const nlohmann::json& j, const T& parsed) {
  const nlohmann::json again = parsed.to_json();
  try {
    const T r = T::from_json(nlohmann::json::parse(again.dump()), "fuzz (re-parse)");
    if (r.to_json() != again) broken("an accepted document changes in a round trip", j);
  } catch (const wit::Error& e) {
    std::fprintf(stderr, "fuzz_report: re-parse failed: %s\n", e.what());
    broken("an accepted document does not survive to_json", j);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    const wit::ReplayReport r = wit::ReplayReport::from_json(j, "fuzz");
    if (r.certified())
      for (const auto& k : r.checks)
        if (!k.pass) broken("accepted a certified report with a failed check", j);
    round_trip(j, r);
  } catch (const wit::Error&) {
  }
  try {
    round_trip(j, wit::Calibration::from_json(j, "fuzz"));
  } catch (const wit::Error&) {
  }
  return 0;
}
