// Fuzz target for the defined board's documents (board/def.h,
// docs/board.md): the board definition, a board draw, a board report and
// the board's evaluation and its audit of a training tree, a sealed set (the
// records and salts kept outside the folder, published at a reveal), a
// gap test, the prune record (pruned.json) and a stored log's document
// (log.stored.json).
// Every input is rejected with a wit::Error or accepted; an accepted document
// survives to_json() and a re-parse unchanged. Verdict letters (outcome.h):
// one each for the definition, draw, report, evaluation, tree-audit, sealed-set,
// gap-test, prune-record and stored-log parsers.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "wit/board/def.h"
#include "wit/board/gap.h"
#include "wit/base/error.h"
#include "json_round_trip.h"
#include "outcome.h"

namespace {

constexpr const char* kTarget = "fuzz_board";

template <class T>
void parse(const nlohmann::json& j) {
  try {
    wit_fuzz::round_trip(kTarget, j, T::from_json(j, "fuzz"));
    wit_fuzz::note('a');
  } catch (const wit::Error&) {
    wit_fuzz::note('r');
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return wit_fuzz::note('j'), 0;
  parse<wit::BoardDefinition>(j);
  parse<wit::BoardDraw>(j);
  parse<wit::BoardReport>(j);
  parse<wit::BoardEval>(j);
  parse<wit::BoardLeaves>(j);
  parse<wit::SealedSet>(j);
  parse<wit::GapTest>(j);
  parse<wit::PruneRecord>(j);
  parse<wit::StoredLog>(j);
  return 0;
}
