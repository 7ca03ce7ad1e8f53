// Shared by the JSON fuzz targets: abort with the offending document, and
// check that an accepted document survives to_json() and a re-parse unchanged.
#pragma once
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"

namespace wit_fuzz {

[[noreturn]] inline void broken(const char* target, const char* what, const nlohmann::json& doc) {
  std::fprintf(stderr, "%s: %s:\n%s\n", target, what, doc.dump(2).c_str());
  std::abort();
}

template <class T>
void round_trip(const char* target, const nlohmann::json& j, const T& parsed) {
  const nlohmann::json again = parsed.to_json();
  try {
    const T r = T::from_json(nlohmann::json::parse(again.dump()), "fuzz (re-parse)");
    if (r.to_json() != again) broken(target, "an accepted document changes in a round trip", j);
  } catch (const wit::Error& e) {
    std::fprintf(stderr, "%s: re-parse failed: %s\n", target, e.what());
    broken(target, "an accepted document does not survive to_json", j);
  }
}

}  // namespace wit_fuzz
