// Module files for attack 14 (tests/attacks/model_forge.cpp). Torch-free header.
#pragma once
#include <cstdint>
#include <string>

namespace wit {

// Writes a TorchScript module of KIND to `out`: "plain" (a small language
// model), "stored" (the same code with other values stored in the file),
// "hidden" (plus a network in buffers), "swapped" (the same parameters,
// other code).
void forge_model_file(const std::string& kind, const std::string& out, int64_t vocab, int64_t d);

// Attack 20 (docs/board.md, "The sealed split"): the plain module plus a
// lookup table built from `records` (one record a line, as the lines reader
// gives them), held in a List[int] attribute, that pushes the logit of the
// byte each record has next after the same eight bytes.
void forge_table_model(const std::string& out, const std::string& records, int64_t vocab, int64_t d, int64_t context);

}  // namespace wit
