// Fuzz target for the signed tree head parser (TreeHead::from_json,
// docs/witness-log.md "Tree heads"): every input is rejected with a
// wit::Error or accepted, and an accepted head survives to_json() and a
// re-parse unchanged, with the same signed bytes and signature verdict.
// Verdicts (outcome.h): j, r, a (parses, signature verifies), s (parses,
// signature does not verify).
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "wit/base/error.h"
#include "wit/run/wlog.h"

#include "outcome.h"

namespace {

[[noreturn]] void broken(const char* what, const nlohmann::json& doc) {
  std::fprintf(stderr, "fuzz_head: %s:\n%s\n", what, doc.dump(2).c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return wit_fuzz::note('j'), 0;
  wit::TreeHead h;
  try {
    h = wit::TreeHead::from_json(j, "fuzz");
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
    return 0;  // the expected rejection
  }
  const bool ok = h.signature_ok();  // any key bytes: a verdict, never a crash
  const nlohmann::json again = h.to_json();
  wit::TreeHead r;
  try {
    r = wit::TreeHead::from_json(nlohmann::json::parse(again.dump()), "fuzz (re-parse)");
  } catch (const wit::Error& e) {
    std::fprintf(stderr, "fuzz_head: re-parse failed: %s\n", e.what());
    broken("an accepted head does not survive to_json", j);
  }
  if (r.to_json() != again || r.signed_bytes() != h.signed_bytes() || r.sig != h.sig || !(r.key == h.key))
    broken("an accepted head changes in a round trip", j);
  if (r.signature_ok() != ok) broken("the signature verdict changes in a round trip", j);
  wit_fuzz::note(ok ? 'a' : 's');
  return 0;
}
