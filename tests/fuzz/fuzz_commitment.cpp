// Fuzz target for the commitment JSON parser (Commitment::from_json): any
// input is rejected with wit::Error or accepted, and an accepted commitment
// survives dump() and a re-parse unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "wit/data/commitment.h"
#include "wit/base/error.h"

#include "outcome.h"

namespace {

bool same(const wit::Commitment& a, const wit::Commitment& b) {
  if (a.reader.kind != b.reader.kind || a.reader.field != b.reader.field ||
      a.reader.seq_len != b.reader.seq_len || a.reader.token_bytes != b.reader.token_bytes || a.n != b.n || a.records != b.records || a.root != b.root ||
      a.inputs != b.inputs || a.sources.size() != b.sources.size())
    return false;
  for (size_t i = 0; i < a.sources.size(); i++) {
    const auto &x = a.sources[i], &y = b.sources[i];
    if (x.path != y.path || x.size != y.size || x.piece_size != y.piece_size ||
        x.records != y.records || x.digest != y.digest)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return wit_fuzz::note('j'), 0;
  wit::Commitment c;
  try {
    c = wit::Commitment::from_json(j, "fuzz");
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
    return 0;  // the expected rejection
  }
  // Accepted: the canonical dump must parse back to the same commitment, and
  // dumping that must give the same bytes (determinism).
  const std::string text = c.dump();
  nlohmann::json j2 = nlohmann::json::parse(text, nullptr, false);
  if (j2.is_discarded()) {
    std::fprintf(stderr, "fuzz_commitment: dump() is not valid json:\n%s", text.c_str());
    std::abort();
  }
  wit::Commitment c2;
  try {
    c2 = wit::Commitment::from_json(j2, "fuzz (re-parsed)");
  } catch (const wit::Error& e) {
    std::fprintf(stderr, "fuzz_commitment: dump() of an accepted commitment is rejected: %s\n%s",
                 e.what(), text.c_str());
    std::abort();
  }
  if (!same(c, c2) || c2.dump() != text) {
    std::fprintf(stderr, "fuzz_commitment: round trip changed the commitment:\n%s---\n%s", text.c_str(),
                 c2.dump().c_str());
    std::abort();
  }
  wit_fuzz::note('a');
  return 0;
}
