// Fuzz target for the challenge parser (Challenge::from_json, docs/challenge.md):
// every input is rejected with a wit::Error or accepted, and an accepted
// challenge is exactly the one its head and nonce derive, and survives
// to_json() and a re-parse unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "wit/run/challenge.h"
#include "wit/base/error.h"

#include "outcome.h"

namespace {

[[noreturn]] void broken(const char* what, const nlohmann::json& doc) {
  std::fprintf(stderr, "fuzz_challenge: %s:\n%s\n", what, doc.dump(2).c_str());
  std::abort();
}

bool same_steps(const wit::Challenge& a, const wit::Challenge& b) {
  if (a.steps != b.steps || a.segments.size() != b.segments.size()) return false;
  for (size_t i = 0; i < a.segments.size(); i++)
    if (a.segments[i].from != b.segments[i].from || a.segments[i].to != b.segments[i].to) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return wit_fuzz::note('j'), 0;
  wit::Challenge c;
  try {
    c = wit::Challenge::from_json(j, "fuzz");
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
    return 0;  // the expected rejection
  }
  // Accepted: the head verifies and the draws are the derived ones, so an
  // edited challenge can never get through.
  if (!c.head.signature_ok()) broken("accepted a head whose signature does not verify", j);
  const wit::Challenge d = wit::derive_challenge(c.head, c.nonce, int64_t(c.steps.size()),
                                                 int64_t(c.segments.size()), c.checkpoint_every,
                                                 c.guarantee.fraction);
  if (d.seed != c.seed || !same_steps(c, d)) broken("accepted steps the head and nonce do not give", j);
  const nlohmann::json again = c.to_json();
  wit::Challenge r;
  try {
    r = wit::Challenge::from_json(nlohmann::json::parse(again.dump()), "fuzz (re-parse)");
  } catch (const wit::Error& e) {
    std::fprintf(stderr, "fuzz_challenge: re-parse failed: %s\n", e.what());
    broken("an accepted challenge does not survive to_json", j);
  }
  if (r.to_json() != again) broken("an accepted challenge changes in a round trip", j);
  wit_fuzz::note('a');
  return 0;
}
