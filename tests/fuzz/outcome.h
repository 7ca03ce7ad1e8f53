// What a fuzz target decided about one input, for the corpus replay
// (replay_main.cpp): every parse a target attempts notes one letter, so an
// input's verdict is a short word the replay compares with the one the
// corpus manifest (corpus/fuzz_NAME.expect) names. The letters:
//   a  accepted (and every check on what was accepted held)
//   r  rejected with a wit::Error
//   j  not JSON: the wit parser was never reached (JSON targets)
// and a few a target's header names (fuzz_proof, fuzz_run_bundle). A target
// that attempts several parses (several readers, a patched second pass)
// notes one letter for each, in order. Under libFuzzer nothing reads them.
#pragma once
#include <string>

namespace wit_fuzz {

inline std::string verdict;

inline void note(char c) {
  if (verdict.size() < 16) verdict += c;  // bounded: libFuzzer never clears it
}

}  // namespace wit_fuzz
