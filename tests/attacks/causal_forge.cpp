// causal_forge: writes the TorchScript modules of attack 18 (a model that
// reads the tokens it is scored on) and their honest twins, built in C++
// with torch::jit::Module::define (tests/torch/script_modules.cpp):
//   causal_forge KIND OUT.pt [VOCAB [D]]
// KIND: plain (position-wise), attention (causal self-attention): honest;
// peek (adds the next token's embedding), peek-small (adds 1e-4 to the
// next token's logit), leaky (attention mask one token too wide): peekers.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "script_modules.h"

int main(int argc, char** argv) {
  const std::map<std::string, const char*> kinds{{"plain", wit::kTinyLmForward},
                                                 {"attention", wit::kCausalAttentionForward},
                                                 {"peek", wit::kPeekNextForward},
                                                 {"peek-small", wit::kPeekSmallForward},
                                                 {"leaky", wit::kLeakyAttentionForward}};
  if (argc < 3 || argc > 5 || !kinds.count(argv[1])) {
    std::fprintf(stderr, "usage: causal_forge plain|attention|peek|peek-small|leaky OUT.pt [VOCAB [D]]\n");
    return 2;
  }
  const int64_t vocab = argc > 3 ? std::atoll(argv[3]) : 257, d = argc > 4 ? std::atoll(argv[4]) : 16;
  wit::save_tiny_lm(argv[2], vocab, d, kinds.at(argv[1]));
  return 0;
}
